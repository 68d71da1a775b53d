#!/usr/bin/env bash
# export_hostile: export never deletes a user's files. A folder is replaced only when it holds an
# earlier export and nothing else: the export's marker (.attnscope-export) lists every path it
# wrote, and any other path (a file added, a folder where a file was, a link, no marker at all)
# makes the folder the user's. Each case below must exit 1, say which path is the user's, and
# leave every file byte for byte; a symbolic link named as the target is refused with or without
# a trailing slash, and the folder it points to is left alone. An export names the files it read
# relative to itself.
# Usage: export_hostile.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
WORK=$(mktemp -d)
trap 'chmod -R u+rwX "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
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
# Every path below a folder, with a checksum for files and the target for links: equal output
# means equal folders.
snapshot() {
  (cd "$1" && find . -mindepth 1 -printf '%y %p %l\n' | sort && find . -type f -print0 | sort -z |
    xargs -0 -r sha256sum)
}
# refused NAME DIR PATTERN [export arguments...]: the export exits 1, says PATTERN, and DIR is
# exactly as it was.
refused() {
  local name=$1 dir=$2 pattern=$3
  shift 3
  local before after rc
  before=$(snapshot "$dir")
  "$BIN" export "$@" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  after=$(snapshot "$dir")
  check "$name: exit 1" test "$rc" -eq 1
  check "$name: the message says '$pattern'" grep -qF -- "$pattern" "$WORK/err"
  check "$name: every file is kept, byte for byte" test "$before" = "$after"
  check "$name: no temporary folder is left" \
    test -z "$(find "$(dirname "$dir")" -maxdepth 1 -name ".$(basename "$dir").attnscope-*")"
  if [ "$rc" -ne 1 ] || ! grep -qF -- "$pattern" "$WORK/err"; then
    echo "# exit $rc; stderr:"
    sed 's/^/#   /' "$WORK/err"
  fi
}

scene='text: "the cat sat on the mat"
embeddings: {dim: 4}
attention: {heads: 2, d_out: 4, causal: true}
'

# 1. The issue's folder: the user's scene, results, weights, a file named head3 and a folder
# named layer7, exported into itself.
w="$WORK/work"
mkdir -p "$w/layer7"
printf '%s' "$scene" >"$w/scene.yaml"
printf 'step,loss\n1,0.5\n' >"$w/results.csv"
printf '\x93NUMPY not really\n' >"$w/wq.npy"
printf 'my notes on head 3\n' >"$w/head3"
printf 'layer 7 looks at commas\n' >"$w/layer7/notes.txt"
refused "the user's folder" "$w" "is not an attnscope export: it holds head3 and more but no .attnscope-export marker" \
  "$w/scene.yaml" -o "$w"
refused "the user's folder, named with a slash" "$w" "no .attnscope-export marker" "$w/scene.yaml" -o "$w/"
refused "the user's folder as npy" "$w" "no .attnscope-export marker" "$w/scene.yaml" -o "$w" --format npy
# Only export names, but no marker: an export made before the marker, or the user's own.
m="$WORK/names-only"
mkdir -p "$m/head0" "$m/params"
printf '%s' "$scene" >"$m/scene.yaml"
printf 'token,d0\n' >"$m/head0/weights.csv"
printf 'row,d0\n' >"$m/params/W_query.csv"
refused "export names without a marker" "$m" "remove it yourself" -o "$m"

# 2. Nested: an export the user added to, or changed.
fresh() { # a fresh export at $1 (of $2 when given)
  rm -rf "$1"
  "$BIN" export ${2:+"$2"} -o "$1" >/dev/null 2>&1 || not_ok "export into $1"
}
e="$WORK/e"
fresh "$e"
check "an export writes its marker" grep -qx 'f head0/weights.csv' "$e/.attnscope-export"
check "a clean export is replaced" sh -c "'$BIN' export -o '$e' --format npy >/dev/null 2>&1"
check "the new export is the npy one" test -f "$e/head0/weights.npy" -a ! -e "$e/head0/weights.csv"
fresh "$e"
printf 'mine\n' >"$e/head0/notes.txt"
refused "a file added in head0/" "$e" "holds head0/notes.txt, which the attnscope export there did not write" -o "$e"
fresh "$e"
printf 'mine\n' >"$e/params/my_weights.csv"
refused "a .csv added in params/" "$e" "holds params/my_weights.csv" -o "$e"
fresh "$e"
printf 'mine\n' >"$e/results.csv"
refused "a .csv added at the top" "$e" "holds results.csv" -o "$e"
fresh "$e"
mkdir "$e/head7"
refused "an empty folder added" "$e" "holds head7/" -o "$e"
fresh "$e"
rm "$e/head0/weights.csv"
mkdir "$e/head0/weights.csv"
printf 'mine\n' >"$e/head0/weights.csv/inside.txt"
refused "a folder where the export wrote a file" "$e" "holds head0/weights.csv as a folder where the attnscope export there wrote a file" -o "$e"
fresh "$e"
ln -s /etc/hostname "$e/head0/link"
refused "a symbolic link added" "$e" "holds head0/link" -o "$e"
fresh "$e"
rm "$e/.attnscope-export"
refused "an export without its marker" "$e" "no .attnscope-export marker" -o "$e"
fresh "$e"
printf 'not a marker\n' >"$e/.attnscope-export"
refused "a marker it did not write" "$e" "an .attnscope-export it did not write" -o "$e"
fresh "$e"
rm "$e/.attnscope-export"
mkdir "$e/.attnscope-export"
refused "a folder named as the marker" "$e" "an .attnscope-export it did not write" -o "$e"
# Several layers: layer<L>/ folders, a user's file deep inside one.
deep="$WORK/deep.yaml"
printf 'text: "a b c d"\nembeddings: {dim: 4}\nlayers: 3\nblock: {norm: layer}\nattention: {heads: 2, d_out: 4}\n' >"$deep"
l="$WORK/layers"
fresh "$l" "$deep"
check "a layered export has layer2/head1/" test -f "$l/layer2/head1/weights.csv"
printf 'mine\n' >"$l/layer1/head1/notes.txt"
refused "a file deep in layer1/head1/" "$l" "holds layer1/head1/notes.txt" "$deep" -o "$l"
fresh "$l" "$deep"
mkdir "$l/layer7"
printf 'mine\n' >"$l/layer7/notes.txt"
refused "a layer7/ the export did not write" "$l" "holds layer7/" "$deep" -o "$l"
# The explorer's export goes through the same check: an earlier export with a user's file is
# refused whatever the scene (the one-layer export over the three-layer one).
fresh "$l" "$deep"
check "a one-layer export replaces a three-layer one" sh -c "'$BIN' export -o '$l' >/dev/null 2>&1"
check "no layer folder is left" test ! -e "$l/layer0"

# 3. A symbolic link named as the target: refused with and without a slash; the link and the
# folder it points to are left alone.
t="$WORK/target"
fresh "$t"
ln -s "$t" "$WORK/link"
before=$(snapshot "$t")
refused "a link to an export" "$t" "is a symbolic link (to $t); export replaces a folder, never a link: name the folder it points to" -o "$WORK/link"
refused "a link to an export, with a slash" "$t" "is a symbolic link" -o "$WORK/link/"
check "the link is still a link" test -L "$WORK/link"
ln -s "$w" "$WORK/link-to-mine"
refused "a link to the user's folder, with a slash" "$w" "is a symbolic link" -o "$WORK/link-to-mine/"
check "that link is still a link" test -L "$WORK/link-to-mine"
# A file is not a folder.
printf 'keep\n' >"$WORK/plain"
"$BIN" export -o "$WORK/plain" >/dev/null 2>"$WORK/err"
rc=$?
check "a file as the target: exit 1" test "$rc" -eq 1
check "a file as the target: says so" grep -qF "is a file; export writes a folder" "$WORK/err"
check "a file as the target: kept" grep -qx keep "$WORK/plain"
mkfifo "$WORK/fifo"
timeout 10 "$BIN" export -o "$WORK/fifo" >/dev/null 2>"$WORK/err"
rc=$?
check "a FIFO as the target: exit 1" test "$rc" -eq 1
check "a FIFO as the target: says it is not a folder" grep -qF "is not a folder" "$WORK/err"
check "a FIFO as the target: still a FIFO" test -p "$WORK/fifo"

# 5. Deep and large folders: export decides from the marker before it reads anything below the
# top, and never recurses. A folder nested 700 deep (the old walk's stack frames of 12 KB a level
# crashed it) is refused under a 256 KB stack and 64 descriptors (the old walk held one a level),
# without a marker and inside an export; a marker that lists a tree deeper than an export nests is
# not believed.
nest() { # nest DIR LEVELS: DIR/d/d/.../d
  local p=$1
  for _ in $(seq 1 "$2"); do p=$p/d; done
  mkdir -p "$p"
}
bounded() { (ulimit -s 256 -n 64 && "$@"); }
n="$WORK/nested"
nest "$n" 700
before=$(snapshot "$n")
bounded "$BIN" export -o "$n" >/dev/null 2>"$WORK/err"
rc=$?
check "700 deep, no marker: exit 1 under a 256 KB stack and 64 descriptors" test "$rc" -eq 1
check "700 deep, no marker: refused from its top" \
  grep -qF "is not an attnscope export: it holds d/ and more but no .attnscope-export marker" "$WORK/err"
check "700 deep, no marker: kept" test "$before" = "$(snapshot "$n")"
fresh "$e"
nest "$e/head0" 700
before=$(snapshot "$e")
bounded "$BIN" export -o "$e" >/dev/null 2>"$WORK/err"
rc=$?
check "700 deep inside an export: exit 1 under the same limits" test "$rc" -eq 1
check "700 deep inside an export: names the folder added" \
  grep -qF "holds head0/d/, which the attnscope export there did not write" "$WORK/err"
check "700 deep inside an export: kept" test "$before" = "$(snapshot "$e")"
f="$WORK/forged"
mkdir -p "$f"
{
  printf 'attnscope-export 1\nversion 0\nf .attnscope-export\n'
  p=""
  for _ in $(seq 1 40); do
    p=${p:+$p/}d
    printf 'd %s\n' "$p"
  done
} >"$f/.attnscope-export"
nest "$f" 40
refused "a marker listing a tree 40 deep" "$f" "holds d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/, which the attnscope export there did not write" -o "$f"

# 4. Paths: an export names the checkpoint and tokenizer it read relative to itself, so it
# travels with its folder and shows no path of this machine; it loads from where it is.
mkdir -p "$WORK/p/m" "$WORK/p/a" "$WORK/p/b/c"
cp "$(dirname "$0")/../models/induction/"{config.json,vocab.json,merges.txt,model.safetensors} "$WORK/p/m/"
printf 'text: fish moon king\ntokenizer: {kind: gpt2, vocab: ../m/vocab.json, merges: ../m/merges.txt}\nmodel: {file: ../m/model.safetensors, arch: gpt2}\n' >"$WORK/p/a/scene.yaml"
"$BIN" export "$WORK/p/a/scene.yaml" -o "$WORK/p/b/c/out" >/dev/null 2>&1
check "paths: the export names the checkpoint relative to itself" \
  grep -qF 'model: {file: "../../../m/model.safetensors", arch: gpt2}' "$WORK/p/b/c/out/scene.yaml"
check "paths: and the tokenizer" \
  grep -qF 'tokenizer: {kind: gpt2, vocab: "../../../m/vocab.json", merges: "../../../m/merges.txt"}' "$WORK/p/b/c/out/scene.yaml"
check "paths: no absolute path of this machine in it" sh -c "! grep -qF '$WORK' '$WORK/p/b/c/out/scene.yaml'"
check "paths: the export's scene loads from where it is" sh -c "'$BIN' check '$WORK/p/b/c/out/scene.yaml' >/dev/null"
mv "$WORK/p" "$WORK/moved"
check "paths: and after its folder moved with the model" sh -c "'$BIN' check '$WORK/moved/b/c/out/scene.yaml' >/dev/null"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
