#!/usr/bin/env bash
# gpt2_small: GPT-2 small from Hugging Face, when the files are here. ATTNSCOPE_GPT2_DIR names a
# folder with model.safetensors, config.json, vocab.json and merges.txt (the `gpt2`
# repository's); without it the test is skipped (exit 77: meson reports SKIP). The checkpoint
# must load, its 12 layers x 12 heads compute at 128 tokens, the tokenizer give GPT-2's ids,
# and the scene export and reload.
# Usage: gpt2_small.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
DIR=${ATTNSCOPE_GPT2_DIR:-}
if [ -z "$DIR" ] || [ ! -f "$DIR/model.safetensors" ]; then
  echo "skipped: set ATTNSCOPE_GPT2_DIR to a folder with GPT-2's model.safetensors, config.json, vocab.json, merges.txt"
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; fail=1; }

# 130 tokens: "Hello world" then a repeated sentence (GPT-2's ids for "Hello world": 15496 995).
text="Hello world"
for _ in $(seq 1 16); do text="$text and the cat sat on the mat."; done
cat >"$WORK/scene.yaml" <<YAML
version: 1
text: "$text"
tokenizer: {kind: gpt2, vocab: $DIR/vocab.json, merges: $DIR/merges.txt}
model: {file: $DIR/model.safetensors, arch: gpt2}
YAML
if "$BIN" check "$WORK/scene.yaml" >/dev/null; then ok "check"; else not_ok "check"; fi
out=$("$BIN" print "$WORK/scene.yaml" --layer 11 --stage final_norm)
if grep -q "^# layer 11 · final_norm (130×768)$" <<<"$out"; then
  ok "12 layers of width 768 at 130 tokens"
else
  not_ok "12 layers of width 768 at 130 tokens: $(grep '^# layer' <<<"$out")"
fi
heads=$("$BIN" heads "$WORK/scene.yaml" --csv)
if [ "$(grep -c '^[0-9]' <<<"$heads")" -eq 144 ]; then ok "144 heads scored"; else not_ok "144 heads scored"; fi
"$BIN" export "$WORK/scene.yaml" -o "$WORK/out" >/dev/null || not_ok "export"
if grep -q $'^0,15496,Hello\r$' "$WORK/out/tokens.csv" && grep -q $'^1,995, world\r$' "$WORK/out/tokens.csv"; then
  ok "GPT-2's ids for Hello world"
else
  not_ok "GPT-2's ids for Hello world: $(head -3 "$WORK/out/tokens.csv")"
fi
if [ -f "$WORK/out/layer11/head11/weights.csv" ] && "$BIN" print "$WORK/out/scene.yaml" --layer 11 --stage final_norm | cmp -s - <(echo "$out"); then
  ok "export reloads to the same numbers"
else
  not_ok "export reloads to the same numbers"
fi
exit $fail
