#!/usr/bin/env bash
# hf-scene: a scene with tokenizer: {kind: hf} in the real binary. fixtures/hf/induction.yaml reads
# the shipped induction model with its tokenizer written as Hugging Face's tokenizer.json;
# `attnscope check` accepts it and `attnscope print` gives exactly what scenes/29 gives with
# vocab.json + merges.txt: the same tokens, ids and numbers. A broken tokenizer.json is
# refused with its file, line, column and JSON path, exit 1.
#   tests/hf_scene.sh ATTNSCOPE SOURCE_ROOT
set -euo pipefail
bin=${1:?usage: hf_scene.sh ATTNSCOPE SOURCE_ROOT}
root=${2:?usage: hf_scene.sh ATTNSCOPE SOURCE_ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "hf-scene: FAIL: $*" >&2
  exit 1
}
"$bin" check "$root/tests/fixtures/hf/induction.yaml" >"$tmp/check" 2>&1 || fail "check: $(cat "$tmp/check")"
grep -q ': ok$' "$tmp/check" || fail "check said: $(cat "$tmp/check")"
"$bin" print "$root/tests/fixtures/hf/induction.yaml" >"$tmp/hf.txt"
"$bin" print "$root/scenes/29-induction-head.yaml" >"$tmp/gpt2.txt"
cmp -s "$tmp/hf.txt" "$tmp/gpt2.txt" || fail "print differs: $(diff "$tmp/hf.txt" "$tmp/gpt2.txt" | head -5)"
grep -q '^# tokens: fish  moon  king' "$tmp/hf.txt" || fail "no tokens line: $(head -2 "$tmp/hf.txt")"
[ "$(grep -c 'tensor(' "$tmp/hf.txt")" -gt 10 ] || fail "print computed too little"
# a broken tokenizer.json beside a copy of the scene
mkdir -p "$tmp/induction"
sed 's/"type": "BPE"/"type": "WordLevel"/' "$root/tests/fixtures/hf/induction/tokenizer.json" \
  >"$tmp/induction/tokenizer.json"
sed "s|../../../models/induction/|$root/models/induction/|" "$root/tests/fixtures/hf/induction.yaml" \
  >"$tmp/scene.yaml"
set +e
"$bin" check "$tmp/scene.yaml" >"$tmp/out" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a WordLevel tokenizer.json: exit $rc, expected 1"
grep -q "scene.yaml:7:29: induction/tokenizer.json:[0-9]*:[0-9]*: model.type: 'WordLevel' is not supported" \
  "$tmp/out" || fail "a WordLevel tokenizer.json: $(cat "$tmp/out")"
echo "hf-scene: ok"
