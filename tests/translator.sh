#!/usr/bin/env bash
# translator: the shipped toy translator (models/translator) translates held-out clauses in the
# real binary exactly as PyTorch's greedy decoding does: `attnscope generate` from the decoder's
# start token (--text SOURCE --text ""), against the Kalo of heldout.tsv, which train.py wrote
# from its own greedy run (100% exact match on all 1,000). The first 50 clauses, the scene's and
# the unseen adjective-noun pairs among them.
# Usage: translator.sh ATTNSCOPE_BINARY SOURCE_ROOT
set -u
bin=$1
dir=$2/models/translator
pass=0
fail=0
while IFS=$'\t' read -r src want; do
  got=$("$bin" generate "$dir/scene.yaml" --text "$src" --text "" 2>/dev/null | tail -1)
  got=${got# } # Metaspace's first space: the decoder writes it, Hugging Face's decoder drops it
  if [ "$got" = "$want" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "not ok - '$src': got '$got', want '$want'"
  fi
done < <(head -50 "$dir/heldout.tsv")
echo "translator: $pass of $((pass + fail)) held-out clauses translated as PyTorch does"
[ "$fail" -eq 0 ] && [ "$pass" -eq 50 ]
