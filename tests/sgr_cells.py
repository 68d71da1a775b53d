#!/usr/bin/env python3
"""sgr_cells: a tmux capture with colours (capture-pane -e) as one line per screen line of
(character, attributes) cells, so that two captures of the same cells compare equal however the
terminal's escapes were ordered or repeated. Reads stdin, writes stdout."""
import re
import sys

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def apply(state, params):
    codes = [int(c) if c else 0 for c in params.split(";")] if params else [0]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            state.clear()
        elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
            state["fg" if c == 38 else "bg"] = codes[i + 2]
            i += 2
        elif c in (39, 49):
            state.pop("fg" if c == 39 else "bg", None)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            state["fg"] = c
        elif 40 <= c <= 47 or 100 <= c <= 107:
            state["bg"] = c
        elif c in (22, 23, 24, 27):
            state.pop({22: "bold", 23: "italic", 24: "underline", 27: "reverse"}[c], None)
            if c == 22:
                state.pop("dim", None)
        else:
            state[{1: "bold", 2: "dim", 3: "italic", 4: "underline", 7: "reverse"}.get(c, c)] = 1
        i += 1


for line in sys.stdin.read().split("\n"):
    state, out, pos = {}, [], 0
    for m in SGR.finditer(line):
        out += [(ch, tuple(sorted(state.items()))) for ch in line[pos:m.start()]]
        apply(state, m.group(1))
        pos = m.end()
    out += [(ch, tuple(sorted(state.items()))) for ch in line[pos:]]
    while out and out[-1][0] == " " and not dict(out[-1][1]).get("bg"):
        out.pop()  # blank cells on the default background end a line however it was cleared
    # one cell after another, each its character and {attribute=value,...}, split by \x1f
    print("\x1f".join(ch + ("{" + ",".join(f"{k}={v}" for k, v in a) + "}" if a else "")
                      for ch, a in out))
