#!/usr/bin/env bash
# gpt2_small: GPT-2 small's scene, name mapping and tokenizer at full size: 12 layers x 12 heads
# of width 768 at 130 tokens load, compute and score; GPT-2's tokenizer gives GPT-2's ids; the
# scene exports and reloads to the same numbers.
#   gpt2_small.sh BIN                 the real GPT-2 small in $ATTNSCOPE_GPT2_DIR (model.safetensors,
#                                     config.json, vocab.json, merges.txt of the `gpt2`
#                                     repository); skipped (77) without it: tests/skips.allow
#   gpt2_small.sh BIN MAKER GOLDEN    a checkpoint of GPT-2 small's exact shape with seeded
#                                     weights, written by MAKER (tests/make_gpt2_shape.c) with
#                                     GPT-2's real tokenizer, checked also against the PyTorch
#                                     rows in GOLDEN (tests/golden/gen_gpt2_small_shape.py)
set -u
BIN=$(realpath "$1")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
SRC=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 3 ]; then
  DIR=$WORK/ckpt
  mkdir -p "$DIR"
  "$2" "$DIR" || { echo "not ok - $2 could not write the checkpoint"; exit 1; }
  cp "$SRC/tests/fixtures/gpt2-tokenizer/vocab.json" "$SRC/tests/fixtures/gpt2-tokenizer/merges.txt" "$DIR/"
  GOLDEN=$3
else
  DIR=${ATTNSCOPE_GPT2_DIR:-}
  GOLDEN=
  if [ -z "$DIR" ] || [ ! -f "$DIR/model.safetensors" ]; then
    echo "skipped: set ATTNSCOPE_GPT2_DIR to a folder with GPT-2's model.safetensors, config.json, vocab.json, merges.txt"
    exit 77
  fi
fi
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
"$BIN" export "$WORK/scene.yaml" -o "$WORK/out" --format npy >/dev/null || not_ok "export"
if grep -q $'^0,15496,Hello\r$' "$WORK/out/tokens.csv" && grep -q $'^1,995, world\r$' "$WORK/out/tokens.csv"; then
  ok "GPT-2's ids for Hello world"
else
  not_ok "GPT-2's ids for Hello world: $(head -3 "$WORK/out/tokens.csv")"
fi
if [ -f "$WORK/out/layer11/head11/weights.npy" ] && "$BIN" print "$WORK/out/scene.yaml" --layer 11 --stage final_norm | cmp -s - <(echo "$out"); then
  ok "export reloads to the same numbers"
else
  not_ok "export reloads to the same numbers"
fi
# 1024 tokens, every position GPT-2 has: the logits (1024 x 50257 floats, 206 MB) are never
# kept whole, so predict stays within a memory limit that holds the forward pass and little more.
# Its peak RSS (the mapped checkpoint's pages included) is measured and must stay under it;
# without meson's MALLOC_PERTURB_, which writes every calloc'ed page (the memo of derived stages
# is calloc'ed so that only the heads viewed cost memory) and so measures what no user runs.
long="Hello world"
for _ in $(seq 1 127); do long="$long and the cat sat on the mat."; done
long="$long and the cat sat on the"
sed "s/^text: .*/text: \"$long\"/" "$WORK/scene.yaml" >"$WORK/long.yaml"
limit=3072
py=python3
python3 -c 'import resource' 2>/dev/null || py=/usr/bin/python3
rss=$(env -u MALLOC_PERTURB_ ATTNSCOPE_MEMORY_MIB=$limit "$py" -c '
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' \
  "$WORK/predict.out" "$BIN" predict "$WORK/long.yaml" --position 1023 --top 5)
read -r rc mib <<<"$rss"
if [ "$rc" = 0 ] && grep -q "^# position 1023 ' the'" "$WORK/predict.out" &&
  grep -q "^# mean loss over positions 0 to 1022: " "$WORK/predict.out" && [ "$mib" -lt "$limit" ]; then
  ok "predict at 1024 tokens: peak RSS $mib MiB, within the $limit MiB limit"
else
  not_ok "predict at 1024 tokens (exit $rc, peak RSS $mib MiB, limit $limit MiB): $(head -c 300 "$WORK/predict.out")"
fi
if [ -n "$GOLDEN" ]; then
  # NumPy reads the export: the python3 on PATH, or Debian's (scripts/bootstrap installs it).
  py=python3
  python3 -c 'import numpy' 2>/dev/null || py=/usr/bin/python3
  if "$py" "$SRC/tests/gpt2_small_golden.py" "$WORK/out" "$GOLDEN"; then
    ok "PyTorch's numbers (ids, layer 5, ln_f, weights of three heads)"
  else
    not_ok "PyTorch's numbers"
  fi
fi
exit $fail
