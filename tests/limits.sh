#!/usr/bin/env bash
# limits: bounded before it is spent. ATTNSCOPE_MEMORY_MIB takes a number of MiB or one with a
# unit (M, MiB, G, GiB) and refuses anything else naming the variable; ATTNSCOPE_GFLOPS likewise.
# A compute estimated past 2 s is announced (FLOPs, seconds at the speed assumed), Ctrl-C ends it
# at once (status 130, "interrupted"), and Ctrl-C, SIGTERM or SIGHUP during an export leaves the
# previous export exactly as it was, with no temporary folder.
# Usage: limits.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
pass=0
fail=0
ok() {
  pass=$((pass + 1))
  echo "ok - $1"
}
not_ok() {
  fail=$((fail + 1))
  echo "not ok - $1"
}
check() { # name command...
  local name=$1
  shift
  if "$@"; then ok "$name"; else not_ok "$name"; fi
}
words() { for i in $(seq 1 "$1"); do printf 'w%d ' "$i"; done; }

# 1. ATTNSCOPE_MEMORY_MIB: refused values, each naming the variable, status 2, nothing run.
for v in 0 -5 1e3 99999999999999999999 "2 G" 2T 0x10 " 5"; do
  ATTNSCOPE_MEMORY_MIB="$v" "$BIN" check "$SRC/scenes/10-mha.yaml" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  check "ATTNSCOPE_MEMORY_MIB='$v': status 2" test "$rc" -eq 2
  check "ATTNSCOPE_MEMORY_MIB='$v': the message names the variable" \
    grep -qF "attnscope: ATTNSCOPE_MEMORY_MIB is '$v'" "$WORK/err"
  check "ATTNSCOPE_MEMORY_MIB='$v': nothing checked" test ! -s "$WORK/out"
done
check "ATTNSCOPE_MEMORY_MIB=0 says at least 1 MiB" grep -qF "at least 1 MiB" <(ATTNSCOPE_MEMORY_MIB=0 "$BIN" check "$SRC/scenes/10-mha.yaml" 2>&1)
check "ATTNSCOPE_MEMORY_MIB of 20 digits says out of range" grep -qF "out of range" <(ATTNSCOPE_MEMORY_MIB=99999999999999999999 "$BIN" check "$SRC/scenes/10-mha.yaml" 2>&1)
# ATTNSCOPE_STAGE_MIB (the explorer's stage sets, stream mode): a number of MiB, 0 or more;
# anything else refused as above, never read as the default.
for v in abc -1 "1 0" 32M nan 0x10; do
  ATTNSCOPE_STAGE_MIB="$v" "$BIN" check "$SRC/scenes/10-mha.yaml" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  check "ATTNSCOPE_STAGE_MIB='$v': status 2, named, nothing checked" \
    test "$rc" -eq 2 -a ! -s "$WORK/out"
  check "ATTNSCOPE_STAGE_MIB='$v': the message names the variable" \
    grep -qF "attnscope: ATTNSCOPE_STAGE_MIB is '$v'" "$WORK/err"
done
for v in 0 0.5 32; do
  check "ATTNSCOPE_STAGE_MIB='$v' is taken" env ATTNSCOPE_STAGE_MIB="$v" "$BIN" check "$SRC/scenes/10-mha.yaml"
done
# Units that work: a scene of about 3 GiB is over 2G and 2048 and 2048MiB and 2GiB alike, and
# under 4G; 1M is 1 MiB.
big="$WORK/big.yaml"
printf 'text: "%s"\nembeddings: {dim: 8}\nattention: {heads: 4, d_out: 8}\n' "$(words 8192)" >"$big"
for v in 2G 2GiB 2048 2048M 2048MiB; do
  ATTNSCOPE_MEMORY_MIB="$v" "$BIN" check "$big" >/dev/null 2>"$WORK/err"
  rc=$?
  check "ATTNSCOPE_MEMORY_MIB=$v: the 3 GiB scene is refused (status 1)" test "$rc" -eq 1
  check "ATTNSCOPE_MEMORY_MIB=$v: over the 2048 MiB limit" grep -qF "over the 2048 MiB limit (ATTNSCOPE_MEMORY_MIB)" "$WORK/err"
done
check "ATTNSCOPE_MEMORY_MIB=4G: the 3 GiB scene is accepted" sh -c "ATTNSCOPE_MEMORY_MIB=4G '$BIN' check '$big' >/dev/null"
ATTNSCOPE_MEMORY_MIB=1M "$BIN" check "$SRC/scenes/13-shoes-mha.yaml" >/dev/null 2>&1
check "ATTNSCOPE_MEMORY_MIB=1M: a small scene fits in 1 MiB" test $? -eq 0
for v in 0 -1 abc 1e99; do
  ATTNSCOPE_GFLOPS="$v" "$BIN" check "$SRC/scenes/10-mha.yaml" >/dev/null 2>"$WORK/err"
  rc=$?
  check "ATTNSCOPE_GFLOPS='$v': status 2 naming the variable" sh -c "test $rc -eq 2 && grep -qF \"ATTNSCOPE_GFLOPS is '$v'\" '$WORK/err'"
done

# 2. The estimate, announced before the compute: 512 tokens, d 256, 8 heads, 2 layers is
# 1.107 GFLOP (the projections, Q K^T and weights V, softmax, out_proj), 11 s at 0.1 GFLOP/s.
est="$WORK/est.yaml"
printf 'text: "%s"\nembeddings: {dim: 256}\nlayers: 2\nattention: {heads: 8, d_out: 256}\n' "$(words 512)" >"$est"
ATTNSCOPE_GFLOPS=0.1 "$BIN" heads "$est" >/dev/null 2>"$WORK/err"
check "a long compute is announced with its work and time" \
  grep -qF "attnscope: $est: about 1.1 GFLOP to compute, about 11 s here (Ctrl-C stops)" "$WORK/err"
ATTNSCOPE_GFLOPS=1000 "$BIN" heads "$est" >/dev/null 2>"$WORK/err"
check "a short one is not" sh -c "! grep -q 'GFLOP to compute' '$WORK/err'"

# 3. Ctrl-C during a long compute: out at once, 130, "interrupted". 2048 tokens at d 2048 over
# 4 layers: hundreds of GFLOP, seconds on any machine.
long="$WORK/long.yaml"
printf 'text: "%s"\nembeddings: {dim: 2048}\nlayers: 4\nattention: {heads: 4, d_out: 2048}\n' "$(words 2048)" >"$long"
ATTNSCOPE_GFLOPS=1 "$BIN" heads "$long" >"$WORK/out" 2>"$WORK/err" &
pid=$!
for _ in $(seq 1 200); do grep -q "GFLOP to compute" "$WORK/err" && break; sleep 0.05; done
sleep 0.5
t0=$(date +%s%N)
kill -INT "$pid"
wait "$pid"
rc=$?
t1=$(date +%s%N)
check "Ctrl-C during the compute: status 130" test "$rc" -eq 130
check "Ctrl-C during the compute: says interrupted" grep -qx "attnscope: interrupted" "$WORK/err"
check "Ctrl-C during the compute: out within a second" test $(((t1 - t0) / 1000000)) -lt 1000
check "Ctrl-C during the compute: nothing on stdout" test ! -s "$WORK/out"

# 4. Ctrl-C while an export is written: the previous export exactly as it was, nothing hidden.
snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
out="$WORK/out-dir"
"$BIN" export -o "$out" >/dev/null 2>&1
before=$(snapshot "$out")
wide="$WORK/wide.yaml"
printf 'text: "%s"\nembeddings: {dim: 32}\nattention: {heads: 32, d_out: 32}\n' "$(words 512)" >"$wide"
"$BIN" export "$wide" -o "$out" >/dev/null 2>"$WORK/err" &
pid=$!
seen=""
for _ in $(seq 1 400); do
  if [ -n "$(find "$WORK" -maxdepth 1 -name '.out-dir.attnscope-*')" ]; then
    seen=yes
    break
  fi
  sleep 0.01
done
kill -INT "$pid"
wait "$pid"
rc=$?
check "Ctrl-C during an export: caught while it was written" test -n "$seen"
check "Ctrl-C during an export: status 130" test "$rc" -eq 130
check "Ctrl-C during an export: says interrupted" grep -q "interrupted" "$WORK/err"
check "Ctrl-C during an export: the previous export is exactly as it was" test "$before" = "$(snapshot "$out")"
check "Ctrl-C during an export: no temporary folder is left" \
  test -z "$(find "$WORK" -maxdepth 1 -name '.out-dir.attnscope-*')"

# 5. SIGHUP (the terminal closed, an ssh session dropped) and SIGTERM while the files are written
# (the temporary folder already holds head1/): cleaned up as Ctrl-C is, status 129 and 143. A
# SIGHUP there used to end the process with the folder left behind (48 MB of this scene).
for sig in HUP TERM; do
  "$BIN" export "$wide" -o "$out" >/dev/null 2>"$WORK/err" &
  pid=$!
  seen=""
  for _ in $(seq 1 1000); do
    if [ -n "$(find "$WORK" -mindepth 2 -maxdepth 2 -path '*/.out-dir.attnscope-*/head1')" ]; then
      seen=yes
      break
    fi
    sleep 0.01
  done
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  num=$(kill -l "$sig")
  check "SIG$sig during an export: caught while its files were written" test -n "$seen"
  check "SIG$sig during an export: status $((128 + num))" test "$rc" -eq $((128 + num))
  check "SIG$sig during an export: says interrupted" grep -q "interrupted" "$WORK/err"
  check "SIG$sig during an export: the previous export is exactly as it was" \
    test "$before" = "$(snapshot "$out")"
  check "SIG$sig during an export: no temporary folder is left" \
    test -z "$(find "$WORK" -maxdepth 1 -name '.out-dir.attnscope-*')"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
