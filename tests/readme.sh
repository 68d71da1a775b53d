#!/usr/bin/env bash
# readme: the README shows what the program really does. Its key table is exactly what
# `attnscope keys` generates from src/ui/actions.h, and its example screen is the text of the golden
# screen tests/screens/02-softmax-journey.screen (what comes before its `-- attributes` block, runs
# of blank lines folded to one).
# Usage: readme.sh ATTNSCOPE_BINARY README.md
set -u
pass=0
fail=0
check() { # name want have
  if [ "$2" = "$3" ]; then
    pass=$((pass + 1))
    echo "ok - $1"
  else
    fail=$((fail + 1))
    echo "not ok - $1:"
    diff <(echo "$2") <(echo "$3")
  fi
}
readme=$2
want=$("$1" keys)
have=$(sed -n '/<!-- keys:begin -->/,/<!-- keys:end -->/p' "$readme" | sed '1d;$d')
check "README key table matches attnscope keys" "$want" "$have"

screen="$(dirname "$0")/screens/02-softmax-journey.screen"
want=$(sed '/^-- attributes$/,$d' "$screen" | cat -s | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}')
have=$(sed -n '/inspector writes the softmax out:/,/^The same numbers/p' "$readme" |
  sed -n '/^```$/,/^```$/p' | sed '1d;$d')
check "README example screen is the golden screen 02-softmax-journey" "$want" "$have"

# Screens the README shows between <!-- screen:NAME:begin --> and <!-- screen:NAME:end -->.
for name in $(sed -n 's/^<!-- screen:\(.*\):begin -->$/\1/p' "$readme"); do
  screen="$(dirname "$0")/screens/$name.screen"
  want=$(sed '/^-- attributes$/,$d' "$screen" | cat -s | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}')
  have=$(sed -n "/<!-- screen:$name:begin -->/,/<!-- screen:$name:end -->/p" "$readme" |
    sed -n '/^```$/,/^```$/p' | sed '1d;$d')
  check "README screen $name is the golden screen" "$want" "$have"
done

# The README says why `text` may not hold a NUL, which check refuses at its position.
nul=$(mktemp)
printf 'text: "a\\0b"\n' >"$nul"
msg=$("$1" check "$nul" 2>&1)
rm -f "$nul"
row=$(grep '^| `text` |' "$readme")
said=no
[[ "$msg" == *":1:7: 'text' must not contain NUL characters"* && "$row" == *"may not contain NUL"* ]] &&
  said=yes
check "README says text may not contain NUL, and check refuses it" yes "$said"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
