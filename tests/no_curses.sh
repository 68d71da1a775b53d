#!/usr/bin/env bash
# no_curses: what must work without a terminal does not link ncurses: the explorer's core
# (src/explore), the commands of the CLI (check, print, export, bench), and the app and config
# tests. Only src/ui and the attnscope binary that opens it do.
# Usage: no_curses.sh BUILD_DIR
set -u
build=$1
fail=0
for exe in tests/test_app tests/test_config; do
  if readelf -d "$build/$exe" | grep -q 'NEEDED.*ncurses'; then
    echo "not ok - $exe links ncurses"
    fail=1
  else
    echo "ok - $exe does not link ncurses"
  fi
done
# Static libraries: no curses function among the symbols they need.
curses='^(initscr|newterm|endwin|set_term|delscreen|wrefresh|wnoutrefresh|doupdate|wgetch|get_wch|wget_wch|keypad|mvwaddnstr|waddnwstr|attrset|wattrset|init_pair|start_color|has_colors|getmouse|mousemask|stdscr|curscr|COLS|LINES|COLORS|COLOR_PAIRS)$'
for lib in src/explore/libexplore.a src/cli/libcli.a libattnscope.a; do
  found=$(nm -u "$build/$lib" 2>/dev/null | awk '{print $2}' | grep -E "$curses" | sort -u | tr '\n' ' ')
  if [ -n "$found" ]; then
    echo "not ok - $lib needs curses: $found"
    fail=1
  else
    echo "ok - $lib needs no curses"
  fi
done
readelf -d "$build/src/cli/attnscope" | grep -q 'NEEDED.*ncurses' &&
  echo "ok - the attnscope binary (the explorer) links ncurses" ||
  { echo "not ok - the attnscope binary lost ncurses"; fail=1; }
exit $fail
