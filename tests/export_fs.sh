#!/usr/bin/env bash
# export_fs: the real binary's export on real file systems. A re-export that fails half-way
# (a full disk, a kill -9, a folder it may not write) must leave the previous export exactly as
# it was, and never a mix of two scenes; a temporary folder a kill -9 left is removed by the
# next export. The full disk is a 256 KiB tmpfs in a user+mount namespace; as root the permission
# checks run as nobody (setpriv). Where the kernel refuses either, that part is skipped, said so,
# and the test exits 77 (skip), not 0.
# Usage: export_fs.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
WORK=$(mktemp -d)
chmod 755 "$WORK" # nobody must reach it for the permission checks
trap 'chmod -R u+rwX "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
pass=0
fail=0
skipped=0
ok() {
  pass=$((pass + 1))
  echo "ok - $1"
}
not_ok() {
  fail=$((fail + 1))
  echo "not ok - $1"
}
skip() {
  skipped=$((skipped + 1))
  echo "ok - $1 # SKIP $2"
}
check() { # name command...
  local name=$1
  shift
  if "$@"; then ok "$name"; else not_ok "$name"; fi
}
# Every file below a folder with its checksum: equal output means equal folders.
snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
hidden_beside() { find "$(dirname "$1")" -maxdepth 1 -name ".$(basename "$1").attnscope-*"; }

# A scene whose export is a few MB (and takes a moment): 256 tokens, 4 heads.
big="$WORK/big.yaml"
printf 'text: %s\nembeddings: {dim: 16}\nattention: {heads: 4, causal: true}\n' \
  "$(for i in $(seq 1 256); do printf 'w%d ' "$i"; done)" >"$big"

# 1. A full disk half-way through.
if unshare --user --map-root-user --mount true 2>/dev/null; then
  mkdir -p "$WORK/small"
  unshare --user --map-root-user --mount bash -c '
    set -u
    mount -t tmpfs -o size=256k tmpfs "$1/small" || exit 3
    "$2" export -o "$1/small/out" >/dev/null || exit 4
    (cd "$1/small/out" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$1/before"
    "$2" export "$3" -o "$1/small/out" >"$1/full.out" 2>"$1/full.err"
    echo $? >"$1/full.status"
    (cd "$1/small/out" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$1/after"
    find "$1/small" -maxdepth 1 -name ".out.attnscope-*" >"$1/hidden"
  ' _ "$WORK" "$BIN" "$big"
  rc=$?
  if [ "$rc" -eq 3 ]; then
    skip "full disk: the previous export is kept" "no tmpfs in a user namespace here"
  else
    check "full disk: the export fails with exit 1" grep -qx 1 "$WORK/full.status"
    check "full disk: the message names the disk being full" grep -q "No space left on device" "$WORK/full.err"
    check "full disk: the previous export is exactly as it was" cmp -s "$WORK/before" "$WORK/after"
    check "full disk: no temporary folder is left" test ! -s "$WORK/hidden"
  fi
else
  skip "full disk: the previous export is kept" "unshare --user --mount is not permitted here"
fi

# 2. kill -9 half-way: the previous export or the complete new one, never a mix; the next
# export removes the temporary folder.
out="$WORK/k/out"
"$BIN" export -o "$out" >/dev/null
before=$(snapshot "$out")
"$BIN" export "$big" -o "$out" >/dev/null 2>&1 &
pid=$!
seen=""
for _ in $(seq 1 500); do
  if [ -n "$(hidden_beside "$out")" ]; then
    kill -9 "$pid" 2>/dev/null
    seen=yes
    break
  fi
  sleep 0.01
done
wait "$pid" 2>/dev/null
check "kill -9: caught while the export was being written" test -n "$seen"
after=$(snapshot "$out")
check "kill -9: the previous export is exactly as it was" test "$before" = "$after"
check "kill -9: its temporary folder is still there" test -n "$(hidden_beside "$out")"
"$BIN" export "$big" -o "$out" >/dev/null
check "next export: the stale temporary folder is removed" test -z "$(hidden_beside "$out")"
check "next export: a complete export of the new scene" \
  sh -c "'$BIN' check '$out/scene.yaml' >/dev/null && test -f '$out/head3/weights.csv'"

# 3. Folders it may not write. As root every permission is granted, so run these as nobody.
as_user() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
  if setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
    as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
  else
    as_user() { return 99; }
  fi
fi
mkdir -p "$WORK/ro"
chmod 755 "$WORK/ro" # owned by whoever runs the test: nobody cannot write in it
if [ "$(id -u)" -ne 0 ]; then chmod 555 "$WORK/ro"; fi
as_user "$BIN" export -o "$WORK/ro/out" >/dev/null 2>"$WORK/ro.err"
rc=$?
if [ "$rc" -eq 99 ]; then
  skip "read-only folder" "cannot drop root here"
else
  check "read-only parent: exit 1" test "$rc" -eq 1
  check "read-only parent: says it cannot create the folder" grep -q "Permission denied" "$WORK/ro.err"
  check "read-only parent: nothing written" test -z "$(ls -A "$WORK/ro")"
  # An earlier export with a read-only head1/ (chmod by its owner) is still replaced whole.
  mkdir -p "$WORK/rw"
  [ "$(id -u)" -eq 0 ] && chown nobody "$WORK/rw"
  as_user "$BIN" export -o "$WORK/rw/out" >/dev/null
  as_user chmod 555 "$WORK/rw/out/head1"
  as_user "$BIN" export "$big" -o "$WORK/rw/out" >/dev/null 2>"$WORK/rw.err"
  rc=$?
  check "read-only subfolder of the old export: the new export succeeds" test "$rc" -eq 0
  check "read-only subfolder: the new export is complete" test -f "$WORK/rw/out/head3/weights.csv"
  check "read-only subfolder: the old export is gone, nothing hidden left" \
    test -z "$(hidden_beside "$WORK/rw/out")"
fi

echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ] || exit 1
# A part that could not run makes the whole test a skip (77), never a pass: scripts/test then
# fails unless tests/skips.allow names it.
[ "$skipped" -eq 0 ] || exit 77
