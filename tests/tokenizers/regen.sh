#!/usr/bin/env bash
# Rewrites goldens/ from Hugging Face's tokenizers library (README.md): installs the pinned
# Node binding in a scratch folder, fetches the tokenizer files, runs gen_goldens.js; then
# Marian's from SentencePiece itself (gen_marian_goldens.py: Debian's python3-sentencepiece).
#   tests/tokenizers/regen.sh [DATA_DIR]     (default: a scratch folder)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
oracle=tokenizers@0.23.2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=${1:-$tmp/data}
"$here/fetch.sh" "$data"
(cd "$tmp" && npm install --silent --no-save --no-package-lock "$oracle" >/dev/null)
NODE_PATH="$tmp/node_modules" node "$here/gen_goldens.js" "$data"
/usr/bin/python3 "$here/gen_marian_goldens.py" "$data"
