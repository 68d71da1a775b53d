#!/usr/bin/env bash
# stream_tmux: the real explorer in stream mode (ATTNSCOPE_STAGE_MIB below two layers' stages:
# net.h's stage_budget) draws what it draws with every layer's stages kept, colour for colour.
#
# The shipped English model (4 layers) on a paragraph, opened twice side by side: once keeping
# two layers' n x n stages (each other layer recomputed from its input when shown, in a job), once
# keeping all. The same keys go to both: layers back and forth, a stage, the model view and its
# moves, the head scores (S), the rollout (r), a last-word edit and its undo. After each step,
# once both screens have settled, they must be the same, escapes for colour included.
# Usage: stream_tmux.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
. "$SRC/tests/tmux_lib.sh"
tmux_open stream
export XDG_CONFIG_HOME="$WORK/config"
TEXT="The cat sat on the mat. The dog sat on the rug, and the cat looked at the dog. Then the \
dog ran to the house, and the cat ran after it. They sat by the door of the house and waited \
for the rain to stop, and the rain did not stop for a long time, so the cat and the dog slept."
printf '%s' "$TEXT" >"$WORK/text"
start() { # NAME STAGE_MIB
  T new-session -d -s "$1" -x 150 -y 44 -e TERM=tmux-256color -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" \
    -e ATTNSCOPE_DATA_DIR="$SRC" -e ATTNSCOPE_STAGE_MIB="$2" \
    "cd $WORK; $BIN $SRC/models/english --text \"\$(cat $WORK/text)\" 2>$WORK/$1.err; echo \$? >$WORK/$1.exit; sleep 600"
  T set-option -t "$1" -g status off >/dev/null
}
# The screen, cell by cell with its colours (tests/sgr_cells.py: the same cells compare equal
# however the escapes that drew them were ordered).
screen() { T capture-pane -t "$1" -p -e -N | python3 "$SRC/tests/sgr_cells.py"; }
# Until the screen stops changing (two captures 200 ms apart alike) and nothing says it computes.
settle() { # NAME
  local a b
  for _ in $(seq 1 300); do
    a=$(screen "$1")
    sleep 0.2
    b=$(screen "$1")
    if [ "$a" = "$b" ] && ! grep -q "computing\|recomputing" <<<"$b"; then
      return 0
    fi
  done
  return 1
}
step() { # NAME KEYS...: the keys to both, then the screens compared
  local name=$1
  shift
  T send-keys -t stream "$@"
  T send-keys -t full "$@"
  # C-l repaints both whole: what is compared is the cells drawn, not how the terminal was
  # brought there (ncurses' optimised updates of a cell after other panels may differ in
  # attributes the terminal merges, as bold after dim)
  if ! settle stream || ! settle full || ! T send-keys -t stream C-l || ! T send-keys -t full C-l ||
    ! settle stream || ! settle full; then
    fail=$((fail + 1))
    echo "not ok - $name: the screens never settled"
    return
  fi
  if [ "$(screen stream)" = "$(screen full)" ]; then
    pass=$((pass + 1))
    echo "ok - $name: the same screen"
  else
    fail=$((fail + 1))
    echo "not ok - $name: the screens differ"
    diff <(T capture-pane -t full -p) <(T capture-pane -t stream -p) | head -8 | sed "s/^/    | /"
    screen full >"$WORK/full.cells"
    screen stream >"$WORK/stream.cells"
    python3 - "$WORK/full.cells" "$WORK/stream.cells" <<'PY' | head -4 | sed "s/^/    | /"
import sys
a, b = (open(p).read().split("\n") for p in sys.argv[1:3])
for i, (x, y) in enumerate(zip(a, b)):
    for j, (p, q) in enumerate(zip(x.split("\x1f"), y.split("\x1f"))):
        if p != q:
            print(f"line {i + 1}, cell {j + 1}: full {p}, stream {q}")
            break
    else:
        if x != y:
            print(f"line {i + 1}: full {len(x.split(chr(31)))} cells, stream {len(y.split(chr(31)))}:"
                  f" full ends {x.split(chr(31))[-3:]}, stream {y.split(chr(31))[-3:]}")
PY
  fi
}

start stream 0.01
start full 0
sleep 1
step "opened" ""
step "layer 1" "}"
step "layer 3" "}" "}"
step "layer 0, back to the start" "}"
step "the scores stage" "," ","
step "layer 2" "}" "}"
step "the model view" "a"
step "the model view, a tile down and across" Down Right Right
step "its head scores" "S"
step "one head again" "a"
step "the rollout" "r"
step "the rollout, a layer on" "}"
step "the weights again" "r"
step "a last word edited" "t" End BSpace BSpace BSpace BSpace BSpace BSpace "sleep" Enter
step "its layer 1" "{"
step "undone" "u"
T send-keys -t stream q
T send-keys -t full q
sleep 1
for s in stream full; do
  if [ "$(cat "$WORK/$s.exit" 2>/dev/null)" = 0 ] && [ ! -s "$WORK/$s.err" ]; then
    pass=$((pass + 1))
    echo "ok - $s: q quits, exit 0, nothing on stderr"
  else
    fail=$((fail + 1))
    echo "not ok - $s: exit $(cat "$WORK/$s.exit" 2>/dev/null), stderr: $(head -3 "$WORK/$s.err")"
  fi
done
echo "stream-tmux: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
