#!/usr/bin/env bash
# readme: the README and docs/ show what the program really does.
# - docs/explorer.md's key table is exactly what `attnscope keys` generates from
#   src/explore/actions.h;
# - the README's commands table is the command list of `attnscope --help`;
# - the README's example screen is the golden screen tests/screens/02-softmax-journey.screen
#   (what comes before its `-- attributes` block, runs of blank lines folded to one), and every
#   screen between <!-- screen:NAME:begin --> and <!-- screen:NAME:end --> in the README or
#   docs/ is its golden screen;
# - the README's "What ships" names every folder of models/;
# - docs/scene-format.md says why `text` may not hold a NUL, which check refuses.
# Every command the README and docs/ show is run by tests/doctest.py.
# Usage: readme.sh ATTNSCOPE_BINARY SOURCE_ROOT
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
root=$2
readme=$root/README.md
screens="$(dirname "$0")/screens"
golden_screen() { sed '/^-- attributes$/,$d' "$screens/$1.screen" | cat -s | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }

want=$("$1" keys)
have=$(sed -n '/<!-- keys:begin -->/,/<!-- keys:end -->/p' "$root/docs/explorer.md" | sed '1d;$d')
check "docs/explorer.md's key table matches attnscope keys" "$want" "$have"

# "  check    validate ..." -> "| `attnscope check` | validate ... |"
want=$(printf '| command | what it does |\n| --- | --- |\n| `attnscope [SCENE]` | open the explorer on SCENE |\n'
  "$1" --help | sed -n '/^commands:$/,/^$/p' | sed '1d;$d' |
    sed -E 's/^  ([a-z]+) +(.*)$/| `attnscope \1` | \2 |/')
have=$(sed -n '/<!-- commands:begin -->/,/<!-- commands:end -->/p' "$readme" | sed '1d;$d')
check "README's commands table is attnscope --help's list" "$want" "$have"

want=$(golden_screen 02-softmax-journey)
have=$(sed -n '/inspector writes the softmax out:/,/^The same numbers/p' "$readme" |
  sed -n '/^```$/,/^```$/p' | sed '1d;$d')
check "README example screen is the golden screen 02-softmax-journey" "$want" "$have"

for doc in "$readme" "$root"/docs/*.md; do
  for name in $(sed -n 's/^<!-- screen:\(.*\):begin -->$/\1/p' "$doc"); do
    have=$(sed -n "/<!-- screen:$name:begin -->/,/<!-- screen:$name:end -->/p" "$doc" |
      sed -n '/^```$/,/^```$/p' | sed '1d;$d')
    check "$(basename "$doc") screen $name is the golden screen" "$(golden_screen "$name")" "$have"
  done
done

# The README's "What ships" names every model that ships (it left out models/english).
ships=$(sed -n '/^## What ships$/,/^## /p' "$readme")
for model in "$root"/models/*/; do
  name=$(basename "$model")
  named=no
  [[ "$ships" == *"\`$name\`"* ]] && named=yes
  check "README's What ships names models/$name" yes "$named"
done

# docs/scene-format.md says why `text` may not hold a NUL, which check refuses at its position.
nul=$(mktemp)
printf 'text: "a\\0b"\n' >"$nul"
msg=$("$1" check "$nul" 2>&1)
rm -f "$nul"
row=$(grep '^| `text` |' "$root/docs/scene-format.md")
said=no
[[ "$msg" == *":1:7: 'text' must not contain NUL characters"* && "$row" == *"may not contain NUL"* ]] &&
  said=yes
check "docs/scene-format.md says text may not contain NUL, and check refuses it" yes "$said"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
