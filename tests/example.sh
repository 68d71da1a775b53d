#!/usr/bin/env bash
# example: examples/print_head prints the same weights as `attnscope print`, head by head.
# Usage: example.sh PRINT_HEAD ATTNSCOPE SCENE
set -u
fail=0
for head in 0 1; do
  have=$("$1" "$3" "$head" | tr -s ' ' '\n' | grep -E '^-?[0-9]+\.[0-9]{4}$')
  "$1" "$3" "$head" >/dev/null || { echo "not ok - head $head: exit status $?"; fail=1; }
  want=$("$2" print "$3" --stage weights --head "$head" | grep -oE -- '-?[0-9]+\.[0-9]{4}')
  if [ -n "$have" ] && [ "$have" = "$want" ]; then
    echo "ok - head $head: print_head and attnscope print agree ($(echo "$have" | wc -l) values)"
  else
    echo "not ok - head $head:"
    diff <(echo "$want") <(echo "$have")
    fail=1
  fi
done
"$1" "$3" 7 2>/dev/null && { echo "not ok - a head the scene lacks is refused"; fail=1; }
exit $fail
