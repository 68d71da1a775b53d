#!/usr/bin/env bash
# generate_tmux: the real explorer writing (g, G) in tmux, against `attnscope generate`.
#
# On the shipped English model: g writes the greedy token the command writes first, with the
# predictions panel on the row that chose it marking that token; G writes 16 more, ending on the
# command's 17th token; a key stops a long G and does nothing else (x would toggle the scale); u
# takes one token away; at the temperature 0.8 g samples the token `generate -t 0.8` samples (the
# same draw for the same seed and place); the book's MultiHeadAttention refuses g on the message
# line. Usage: generate_tmux.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
. "$SRC/tests/tmux_lib.sh"
tmux_open gen
export XDG_CONFIG_HOME="$WORK/config"
start() { # NAME ARGS...
  local name=$1
  shift
  T new-session -d -s "$name" -x 130 -y 44 -e TERM=tmux-256color -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" \
    -e ATTNSCOPE_DATA_DIR="$SRC" "cd $SRC; $BIN $* 2>$WORK/$name.err; echo \$? >$WORK/$name.exit; sleep 600"
  T set-option -t "$name" -g status off >/dev/null
}
# Until the screen holds PATTERN (grep -E), at most 30 s.
wait_re() { # NAME PATTERN
  for _ in $(seq 1 300); do
    screen "$1" | grep -qE "$2" && return 0
    sleep 0.1
  done
  return 1
}
# q (and y to drop the edits when it asks), then the exit status: an explorer left running when
# the tmux server goes would lose its terminal (under ASan, its exit then spins: issue 29's note)
quit() { # NAME
  T send-keys -t "$1" q
  sleep 0.3
  [ -e "$WORK/$1.exit" ] || T send-keys -t "$1" y
  for _ in $(seq 1 100); do
    [ -e "$WORK/$1.exit" ] && break
    sleep 0.1
  done
  if grep -qx 0 "$WORK/$1.exit" 2>/dev/null; then ok "$1: q quits, exit status 0"; else
    not_ok "$1: q did not quit with status 0"
  fi
}
check_re() { # WHAT NAME PATTERN
  if wait_re "$2" "$3"; then ok "$1"; else
    not_ok "$1: the screen never showed /$3/"
    screen "$2" | sed 's/^/#   /'
  fi
}
# The command's tokens, greedy and at temperature 0.8 from the scene's seed (123)
"$BIN" generate "$SRC/models/english" --text "Once upon a time" -n 17 --csv >"$WORK/greedy.csv" 2>/dev/null
"$BIN" generate "$SRC/models/english" --text "Once upon a time" -n 1 -t 0.8 --seed 123 --csv \
  >"$WORK/sampled.csv" 2>/dev/null
field() { # CSV NAME, STEP, COLUMN of step,position,id,token,prob,rank (the token as CSV quotes it)
  python3 -c 'import csv, sys; print(list(csv.DictReader(open(sys.argv[1])))[int(sys.argv[2]) - 1][sys.argv[3]])' \
    "$WORK/$1.csv" "$2" "$3"
}
# a label as a pattern of grep -E
label() { field "$1" "$2" token | sed 's/[][\.*^$(){}?+|/]/\\&/g'; }
pos() { field "$1" "$2" position; }

start e "models/english --text 'Once upon a time'"
wait_re e "7 tokens" || not_ok "the explorer opened"
T send-keys -t e p
T send-keys -t e g
check_re "g writes the command's first token" e "^ g: '$(label greedy 1)' at position $(pos greedy 1) \(p [0-9.]+, rank 1, greedy\)"
check_re "the header counts it" e " 8 tokens"
check_re "the predictions panel shows the step that chose it, the token marked" e "next $(label greedy 1): rank 1"
T send-keys -t e G
wait_re e "tokens to write" || not_ok "G asks how many"
T send-keys -t e Enter
check_re "G 16 ends on the command's 17th token" e "G 16/16: '$(label greedy 17)' at position $(pos greedy 17)"
check_re "24 tokens after G" e " 24 tokens"
T send-keys -t e G C-u 200 Enter
sleep 0.5
T send-keys -t e x
check_re "a key stops G" e "a key: stopped generating after [0-9]+ of 200 tokens"
n=$(screen e | grep -oE "[0-9]+ tokens" | head -1 | cut -d' ' -f1)
# x toggles the scaling, which the header would then name ("modified: scaling off")
if screen e | grep -q "scaling off"; then not_ok "the key that stopped G acted"; else ok "the key that stopped G did nothing else"; fi
T send-keys -t e u
check_re "u takes one token away" e " $((n - 1)) tokens"
quit e

start s "models/english --text 'Once upon a time'"
wait_re s "7 tokens" || not_ok "the explorer opened (sampled)"
T send-keys -t s Tab Tab Tab Tab Tab
wait_re s "temp" || true
T send-keys -t s "#"
wait_re s "temperature" || not_ok "the temperature knob asks"
T send-keys -t s C-u 0.8 Enter
T send-keys -t s g
check_re "g at temperature 0.8 samples the command's token" s "^ g: '$(label sampled 1)' at position 7 \(p [0-9.]+, rank [0-9]+, sampled at temperature 0.8\)"
quit s

start b "scenes/10-mha.yaml"
wait_re b "10-mha|MultiHead" || true
sleep 0.5
T send-keys -t b g
check_re "a scene without a vocabulary refuses g" b "g: no next token to write"
quit b

echo "generate-tmux: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
