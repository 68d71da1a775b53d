#!/usr/bin/env bash
# readme_keys: the README's key table is exactly what `attnscope keys` generates from
# src/ui/actions.h, so the documentation cannot drift from the bindings.
# Usage: readme_keys.sh ATTNSCOPE_BINARY README.md
set -u
want=$("$1" keys)
have=$(sed -n '/<!-- keys:begin -->/,/<!-- keys:end -->/p' "$2" | sed '1d;$d')
if [ "$want" = "$have" ]; then
  echo "ok - README key table matches attnscope keys"
  echo "1 passed, 0 failed"
else
  echo "not ok - README key table differs from attnscope keys:"
  diff <(echo "$want") <(echo "$have")
  echo "0 passed, 1 failed"
  exit 1
fi
