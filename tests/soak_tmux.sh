#!/usr/bin/env bash
# soak_tmux: the real attnscope binary (the ASan + UBSan build) under thousands of random keys.
#
# One explorer runs in a private tmux server and gets SOAK_KEYS (default 12000) random keys in
# batches: printable characters (non-ASCII too), key names, xterm mouse reports at random cells,
# every action key that `attnscope keys` lists, and edits that break the scene and restore it
# (heads that do not divide d_out, bad values, then undo). The window shrinks to 10x5 now and
# then and grows back. At the end q (and y) must quit with status 0, the terminal settings must
# be as before, and the sanitizers must have reported nothing. The process dying early fails.
# The keys follow from SOAK_SEED (printed), so a failing run can be replayed with the same seed
# on the same bash (the timing of the batches can still differ).
# Usage: soak_tmux.sh ATTNSCOPE_BINARY [SCENE]   (SCENE relative to the source tree, default
# scenes/10-mha.yaml; the suite also soaks scenes/29-induction-head.yaml, a checkpoint with its
# BPE tokenizer, and a lesson. env: SOAK_SEED, SOAK_KEYS; SOAK_KEEP=1 keeps the scratch folder:
# the files the explorer wrote, the sanitizer logs)
set -u
BIN=$(realpath "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
SEED=${SOAK_SEED:-20240611}
KEYS=${SOAK_KEYS:-12000}
. "$SRC/tests/tmux_lib.sh"
tmux_open soak
tmux_close() {
  T kill-server >/dev/null 2>&1
  if [ -n "${SOAK_KEEP:-}" ]; then echo "soak: scratch folder kept: $WORK"; else rm -rf "$WORK"; fi
}
RANDOM=$SEED # bash's generator: the same seed gives the same keys
echo "soak: seed $SEED (SOAK_SEED=$SEED replays it), $KEYS keys"

# The pane's current folder holds the scene, and the scene is given by a relative path: export
# and save then default to paths in that folder, and '/' is never typed, so nothing the random
# keys confirm can write outside $WORK.
mkdir -p "$WORK/cwd" "$WORK/config" "$WORK/san"
SCENE=${2:-scenes/10-mha.yaml}
cp "$SRC/$SCENE" "$WORK/cwd/scene.yaml" || { echo "not ok - no scene $SCENE"; exit 1; }
# A checkpoint scene reads ../models/ (as scenes/ does): the models beside the pane's folder.
if grep -q '\.\./models/' "$WORK/cwd/scene.yaml"; then cp -r "$SRC/models" "$WORK/models"; fi
echo "soak: $SCENE"

# Sanitizer reports go to files (a report on the tty would be drawn over by curses); the
# options the suite runs with (scripts/test) are kept.
asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$WORK/san/asan"
ubsan="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}:log_path=$WORK/san/ubsan"
pane="stty -g > $WORK/before; $BIN scene.yaml 2>$WORK/stderr; s=\$?; stty -g > $WORK/after; \
echo \$s > $WORK/exit; sleep 600"
T new-session -d -s soak -x 100 -y 30 -c "$WORK/cwd" -e TERM=tmux-256color \
  -e ATTNSCOPE_CONFIGS_DIR="$SRC/configs" -e XDG_CONFIG_HOME="$WORK/config" \
  -e ASAN_OPTIONS="$asan" -e UBSAN_OPTIONS="$ubsan" -e OPENBLAS_NUM_THREADS=1 "$pane"
T set-option -t soak -g status off >/dev/null
started=$(date +%s)

screen() { T capture-pane -t soak -p; }
fail() {
  echo "not ok - $1 (seed $SEED)"
  screen 2>/dev/null | sed 's/^/    | /'
  for f in "$WORK"/san/* "$WORK/stderr"; do
    [ -s "$f" ] && sed 's/^/    ! /' "$f" | head -60
  done
  exit 1
}
wait_for() { # text: up to 10 s for it to appear on the screen
  for _ in $(seq 1 200); do
    screen | grep -qF -- "$1" && return 0
    sleep 0.05
  done
  return 1
}
wait_for "row Σ" || fail "the explorer did not start"

# ---- the keys ---------------------------------------------------------------------------
# Every action key, from the binary's own table; q (quit) is left out of the random phase so
# the soak never ends by accident, and so is every key that would stop or freeze it (C-c, C-z,
# C-\, C-s, C-q are never sent).
actions=()
# shellcheck disable=SC2016 # the backquotes are the table's, not the shell's
while read -r k; do
  case $k in
  q) ;;
  BackTab) actions+=(BTab) ;;
  *) actions+=("$k") ;;
  esac
done < <("$BIN" keys | grep -o '`[^`]*`' | tr -d '`' | sort -u)
[ ${#actions[@]} -ge 30 ] || fail "attnscope keys listed only ${#actions[@]} keys"
names=(Left Right Up Down PgUp PgDn Home End Enter Tab BTab Escape BSpace DC IC Space
  F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11 F12 C-l C-r C-u C-a C-e C-b C-f C-d C-k C-w C-g C-h
  M-a M-x)
# Printable ASCII without q and '/', and a few non-ASCII characters (2, 3 and 4 bytes).
printable=()
for c in $(seq 32 126); do
  case $c in 47 | 113) continue ;; esac
  # shellcheck disable=SC2059 # the format is the character's octal escape
  printable+=("$(printf "\\$(printf %03o "$c")")")
done
printable+=(é ą ß 日 本 – ✓ 🙂)
# Edits that break the scene and restore it, and the file actions (their default paths).
edits=(
  "H C-u 3 Enter" "H C-u 3 Enter u" "H C-u 5 Enter d C-u 10 Enter u u" "d C-u abc Enter"
  "d C-u 0 Enter" "d C-u 99999 Enter Escape" "D C-u 1.5 Enter" "D C-u 0.5 Enter"
  "D C-u 1 Enter u" "D C-u -0.1 Enter" "s C-u 18446744073709551616 Enter" "s C-u 7 Enter"
  "# C-u -3 Enter" "t C-u Enter" "t C-u the_cat_sat Enter" "t C-u é_ą_日_🙂 Enter u"
  "L L" "P P P" "M c M" "u u u u" "C-r C-r C-r" "e Enter" "e Enter y" "w Enter" "w Enter y"
  "a Enter" "a Right Enter" "? PgDn PgDn Escape" "Space" "H C-u 256 Enter u"
)
cols=100 rows=30
args=()   # one tmux invocation: send-keys commands separated by ';'
named=()  # key names waiting to be sent
lit=""    # literal text waiting to be sent
flush_named() {
  [ ${#named[@]} -gt 0 ] && args+=(send-keys -t soak "${named[@]}" ";")
  named=()
}
flush_lit() {
  # tmux reads an argument ending in ';' as the end of a command, unless it ends in '\;'.
  [[ $lit == *";" ]] && lit="${lit%;}\\;"
  [ -n "$lit" ] && args+=(send-keys -t soak -l -- "$lit" ";")
  lit=""
}
sent=0
key() { # a key name
  flush_lit
  named+=("$1")
  sent=$((sent + 1))
}
text() { # literal text: as many keys as characters, or $2
  flush_named
  lit+=$1
  sent=$((sent + ${2:-${#1}}))
}
mouse() { # an xterm SGR report (press, release) or a legacy X10 press at a random cell
  local x=$((RANDOM % cols + 1)) y=$((RANDOM % rows + 1)) b
  case $((RANDOM % 5)) in
  0 | 1) b=0 ;; 2) b=64 ;; 3) b=65 ;; *) b=2 ;;
  esac
  if ((RANDOM % 4)); then
    text $'\e'"[<$b;$x;${y}M"$'\e'"[<$b;$x;${y}m" 1
  elif ((x < 223 && y < 223)); then
    flush_lit
    flush_named
    args+=(send-keys -t soak -H 1b 5b 4d "$(printf %x $((32 + b)))" "$(printf %x $((32 + x)))"
      "$(printf %x $((32 + y)))" ";")
    sent=$((sent + 1))
  fi
}
edit() { # a whole edit script: names, and anything else typed literally
  local w
  for w in $1; do
    case $w in
    Enter | Escape | Space | Right | PgDn | C-?) key "$w" ;;
    *) text "${w//_/ }" ;;
    esac
  done
}

batch=0
while [ "$sent" -lt "$KEYS" ]; do
  args=()
  for _ in $(seq 1 25); do
    r=$((RANDOM % 100))
    if ((r < 35)); then
      k=${actions[RANDOM % ${#actions[@]}]}
      if [ ${#k} -eq 1 ]; then text "$k"; else key "$k"; fi
    elif ((r < 55)); then
      key "${names[RANDOM % ${#names[@]}]}"
    elif ((r < 80)); then
      text "${printable[RANDOM % ${#printable[@]}]}"
    elif ((r < 92)); then
      mouse
    else
      edit "${edits[RANDOM % ${#edits[@]}]}"
    fi
  done
  flush_named
  flush_lit
  T "${args[@]}" || fail "tmux send-keys failed"
  batch=$((batch + 1))
  [ -e "$WORK/exit" ] && fail "attnscope exited early, with status $(cat "$WORK/exit"), after $sent keys"
  # Now and then shrink far below the minimum, then take a random size (too small or not) for
  # a while, then the usual 100x30 again.
  if ((batch % 40 == 0)); then
    T resize-window -t soak -x 10 -y 5
    sleep 0.05
    cols=$((20 + RANDOM % 140)) rows=$((6 + RANDOM % 50))
    T resize-window -t soak -x "$cols" -y "$rows"
  elif ((batch % 40 == 20)); then
    cols=100 rows=30
    T resize-window -t soak -x 100 -y 30
  fi
  sleep 0.01
done
echo "soak: $sent keys in $batch batches, $(($(date +%s) - started)) s"

# ---- the end: q (and y), exit status 0, terminal restored, no sanitizer report ------------
T resize-window -t soak -x 100 -y 30
for _ in $(seq 1 10); do
  [ -e "$WORK/exit" ] && break
  # Escape leaves a prompt or the help; q asks first when there are unsaved edits.
  T send-keys -t soak Escape
  sleep 0.2
  T send-keys -t soak q
  for _ in $(seq 1 40); do
    [ -e "$WORK/exit" ] && break
    if screen | grep -qF "quit without saving your edits?"; then
      T send-keys -t soak y
      sleep 0.2
    fi
    sleep 0.05
  done
done
[ -e "$WORK/exit" ] || fail "q did not quit the explorer"
sleep 0.2 # the pane writes exit after the stty settings
status=$(cat "$WORK/exit")
[ "$status" = 0 ] || fail "exit status $status"
cmp -s "$WORK/before" "$WORK/after" || fail "the terminal settings were not restored"
if compgen -G "$WORK/san/*" >/dev/null; then fail "sanitizer report"; fi
if grep -qE 'Sanitizer|runtime error' "$WORK/stderr"; then fail "sanitizer report on stderr"; fi
echo "ok - $SCENE: $sent random keys, $batch batches, resizes to 10x5 and back, clean exit (seed $SEED)"
echo "soak: $(($(date +%s) - started)) s in all"
echo "1 passed, 0 failed"
