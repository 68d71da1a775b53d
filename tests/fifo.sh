#!/usr/bin/env bash
# fifo: a FIFO (or a device) where attnscope expects a file never hangs it. Every file it reads
# (the scene, vocab.json, merges.txt, config.json, the checkpoint, a matrix's .npy or .csv,
# keys.yaml, colors.yaml, --text-file) and every file it writes (render -o, export -o,
# --save-scene) is a real FIFO here, with no writer: each command must exit 1 within the
# timeout, saying "not a regular file (a FIFO)" (or that the export target is not a folder), and
# leave the FIFO a FIFO.
# Usage: fifo.sh ATTNSCOPE_BINARY
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
# refused NAME FIFO PATTERN COMMAND...: exit 1 (not 124: a timeout is a hang), PATTERN on
# stderr, FIFO still a FIFO.
refused() {
  local name=$1 fifo=$2 pattern=$3
  shift 3
  timeout 10 "$@" </dev/null >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  if [ "$rc" -eq 124 ]; then
    not_ok "$name: hangs (killed after 10 s)"
    return
  fi
  if [ "$rc" -eq 1 ]; then ok "$name: exit 1"; else not_ok "$name: exit $rc, not 1"; fi
  if grep -qF -- "$pattern" "$WORK/err"; then
    ok "$name: says '$pattern'"
  else
    not_ok "$name: says '$pattern'"
    sed 's/^/#   /' "$WORK/err"
  fi
  if [ -p "$fifo" ]; then ok "$name: still a FIFO"; else not_ok "$name: no longer a FIFO"; fi
}

# The scene file itself.
mkfifo "$WORK/scene.yaml"
refused "scene file (check)" "$WORK/scene.yaml" "scene.yaml: not a regular file (a FIFO)" \
  "$BIN" check "$WORK/scene.yaml"
refused "scene file (print)" "$WORK/scene.yaml" "scene.yaml: not a regular file (a FIFO)" \
  "$BIN" print "$WORK/scene.yaml"
rm "$WORK/scene.yaml"

# The checkpoint's files, one at a time: a copy of models/induction with one of them a FIFO.
for f in vocab.json merges.txt config.json model.safetensors; do
  rm -rf "$WORK/m"
  cp -r "$SRC/models/induction" "$WORK/m"
  rm "$WORK/m/$f"
  mkfifo "$WORK/m/$f"
  printf 'text: "fish moon king"\ntokenizer: {kind: gpt2, vocab: m/vocab.json, merges: m/merges.txt}\nmodel: {file: m/model.safetensors, arch: gpt2}\n' >"$WORK/ck.yaml"
  refused "$f" "$WORK/m/$f" "$f: not a regular file (a FIFO)" "$BIN" check "$WORK/ck.yaml"
done

# A matrix read from a file.
for ext in npy csv; do
  mkfifo "$WORK/wq.$ext"
  printf 'tokens: [a, b]\nembeddings: [[1, 0], [0, 1]]\nweights: {query: {file: wq.%s}, key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}\nattention: {d_out: 2}\n' "$ext" >"$WORK/mat.yaml"
  refused "a .$ext matrix" "$WORK/wq.$ext" "not a regular file (a FIFO)" "$BIN" check "$WORK/mat.yaml"
  rm "$WORK/wq.$ext"
done

# The explorer's configuration, checked as such.
mkdir -p "$WORK/cfg"
for f in keys.yaml colors.yaml; do
  mkfifo "$WORK/cfg/$f"
  refused "$f" "$WORK/cfg/$f" "$f: not a regular file (a FIFO)" "$BIN" check "$WORK/cfg/$f"
done

# Outputs: a FIFO is never opened, never replaced.
mkfifo "$WORK/x.svg"
refused "render -o FIFO" "$WORK/x.svg" "x.svg: not a regular file (a FIFO): attnscope writes only files" \
  "$BIN" render "$SRC/scenes/10-mha.yaml" -o "$WORK/x.svg"
mkfifo "$WORK/outdir"
refused "export -o FIFO" "$WORK/outdir" "is not a folder (a FIFO, a device...)" \
  "$BIN" export -o "$WORK/outdir"

# The input options: a sentence's file (standard input is "-", a pipe named as such), and the
# scene saved.
mkfifo "$WORK/sentence.txt"
refused "--text-file FIFO" "$WORK/sentence.txt" "sentence.txt: not a regular file (a FIFO)" \
  "$BIN" check "$SRC/models/english" --text-file "$WORK/sentence.txt"
mkfifo "$WORK/saved.yaml"
refused "--save-scene FIFO" "$WORK/saved.yaml" "saved.yaml: not a regular file (a FIFO): attnscope writes only files" \
  "$BIN" check "$SRC/models/english" --save-scene "$WORK/saved.yaml"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
