# tmux_lib.sh: what the tmux tests share. Source it with BIN, SRC and WORK set, then call
# tmux_open NAME once.
#
# The server is told to stay up with no session (exit-empty off). Without it, killing the last
# session makes the server exit while the next new-session may already be talking to it: that
# session dies with the server and every later check reads "no server running". It happened on
# a loaded CI machine; 5 of 200 kill/new pairs lose their session on an idle one.

T() { tmux -L "$SOCK" -f /dev/null "$@"; }

# tmux_open NAME: a private server for this run, removed with WORK at exit.
tmux_open() {
  SOCK="attnscope-$1-$$"
  T start-server \; set-option -s exit-empty off
  trap tmux_close EXIT
}
tmux_close() {
  T kill-server >/dev/null 2>&1
  rm -rf "$WORK"
}

pass=0
fail=0
screen() { T capture-pane -t "$1" -p; }
keys() { T send-keys -t "$@"; }
text() { T send-keys -t "$1" -l "$2"; } # literal text, no key-name lookup

# wait_for NAME TEXT: up to WAIT_S seconds (default 10) for TEXT to appear on the screen.
wait_for() {
  local i
  for ((i = 0; i < ${WAIT_S:-10} * 20; i++)); do
    screen "$1" | grep -qF -- "$2" && return 0
    sleep 0.05
  done
  return 1
}
# wait_gone NAME TEXT: up to GONE_S seconds (default 10) for TEXT to leave the screen.
wait_gone() {
  local i
  for ((i = 0; i < ${GONE_S:-10} * 20; i++)); do
    screen "$1" | grep -qF -- "$2" || return 0
    sleep 0.05
  done
  return 1
}
wait_file() { # PATH: up to 5 s for it to exist with content
  local i
  for ((i = 0; i < 100; i++)); do
    [ -s "$1" ] && return 0
    sleep 0.05
  done
  return 1
}
ok() {
  pass=$((pass + 1))
  echo "ok - $1"
}
not_ok() { # name [session]: the session's screen is shown under the failure
  fail=$((fail + 1))
  echo "not ok - $1"
  [ -n "${2:-}" ] && screen "$2" | sed 's/^/    | /'
  return 0
}
check() { # name session command...
  local name=$1 session=$2
  shift 2
  if "$@"; then ok "$name"; else not_ok "$name" "$session"; fi
}
