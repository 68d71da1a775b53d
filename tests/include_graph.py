#!/usr/bin/env python3
"""include_graph: the architecture of src/, checked from its #include lines.

- Every module (a folder of src/) may include only the modules below it in LAYERS: the engine
  never sees the explorer, the explorer never sees curses.
- No include cycle between units (foo.c and foo.h are one unit), inside a module or across.
- curses.h only in src/ui, yaml.h only in src/yaml.
- Project headers are included one way: "module/file.h", never a bare "file.h".
- No call cycle between units either: ui.c calling prompt.c calling back into ui.c is a cycle
  even when one header declares both (callbacks through pointers are how a lower unit calls
  up).
- struct app (the explorer's state) is defined in explore/appstate.h alone, and only .c files
  of src/explore include that header (a header that did would hand the definition on to whoever
  includes it). Everywhere else, src/ui and src/cli included, struct app is the incomplete type
  explore/app.h declares, so the compiler refuses any app->member or app.member there, and a
  struct app can only be held by pointer: the front ends read its parts (the document, the
  result, the caches, the view, ...) through app.h's accessors. A text search for ->member
  could be fooled by a cast or a macro; an incomplete type cannot.

Usage: include_graph.py SRC_DIR. Prints every violation and exits 1 when there is one.
"""
import os
import re
import sys

# module -> the modules it may include (besides itself).
LAYERS = {
    "common": set(),
    "palette": set(),
    "engine": {"common"},
    "pretrained": {"common", "engine"},
    "yaml": {"common"},
    "scenefile": {"common", "engine", "pretrained", "yaml"},
    "api": {"common", "engine", "pretrained", "yaml", "scenefile"},
    "config": {"common", "yaml"},
    "export": {"common", "palette", "engine", "pretrained", "scenefile"},
    "explore": {"common", "palette", "engine", "pretrained", "yaml", "scenefile", "config",
                "export"},
    "ui": {"common", "palette", "engine", "pretrained", "yaml", "scenefile", "config", "export",
           "explore"},
    "cli": {"common", "palette", "engine", "pretrained", "yaml", "scenefile", "config", "export",
            "explore", "ui"},
}
ONLY_IN = {"curses.h": "ui", "ncurses.h": "ui", "yaml.h": "yaml"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# A function definition as clang-format lays it out: the name at the start of a declarator on
# a line of its own at column 0, the body's brace on the next line.
DEFINITION = re.compile(r'^(?!static\b)[A-Za-z_][\w \*]*?\b(\w+)\([^;{]*?\)\s*\n\{', re.M)
# header -> the module whose .c files alone may include it.
PRIVATE = {"explore/appstate.h": "explore"}
# struct name -> the one header that may define it (see PRIVATE).
DEFINED_ONLY_IN = {"app": "explore/appstate.h"}
STRUCT_DEF = re.compile(r'^\s*struct\s+(\w+)\s*\{', re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def main(src):
    problems = []
    units = {}  # "module/name" -> set of "module/name" it includes
    defined = {}  # function name -> the unit whose .c defines it
    bodies = {}  # unit -> its .c text without comments
    for module in sorted(os.listdir(src)):
        mdir = os.path.join(src, module)
        if not os.path.isdir(mdir):
            continue
        if module not in LAYERS:
            problems.append(f"src/{module}: a module the layering does not know")
            continue
        for name in sorted(os.listdir(mdir)):
            if not name.endswith((".c", ".h")):
                continue
            unit = f"{module}/{name[:-2]}"
            path = f"src/{module}/{name}"
            deps = units.setdefault(unit, set())
            with open(os.path.join(mdir, name), encoding="utf-8") as f:
                text = f.read()
            if name.endswith(".c"):
                bodies[unit] = COMMENT.sub("", text)
                for fn in DEFINITION.findall(bodies[unit]):
                    defined[fn] = unit
            for tag in STRUCT_DEF.findall(COMMENT.sub("", text)):
                home = DEFINED_ONLY_IN.get(tag)
                if home and f"{module}/{name}" != home:
                    problems.append(f"{path}: defines struct {tag}, which only src/{home} may")
            for kind, inc in INCLUDE.findall(text):
                if kind == "<":
                    owner = ONLY_IN.get(inc)
                    if owner and owner != module:
                        problems.append(f"{path}: includes <{inc}>, which only src/{owner} may")
                    continue
                if "/" not in inc:
                    problems.append(f'{path}: "{inc}": write project headers as "module/file.h"')
                    continue
                owner = PRIVATE.get(inc)
                if owner and (module != owner or not name.endswith(".c")):
                    problems.append(f'{path}: includes "{inc}", which only the .c files of '
                                    f"src/{owner} may")
                target_module = inc.split("/")[0]
                if target_module not in LAYERS:
                    problems.append(f'{path}: "{inc}" is not a header of src/')
                    continue
                if target_module != module and target_module not in LAYERS[module]:
                    problems.append(f'{path}: "{inc}": src/{module} may not depend on src/{target_module}')
                if not os.path.exists(os.path.join(src, inc)):
                    problems.append(f'{path}: "{inc}" does not exist')
                target = inc[:-2]
                if target != unit:
                    deps.add(target)

    calls = {}  # unit -> units whose functions its .c calls
    word = re.compile(r"\b(\w+)\s*\(")
    for unit, body in bodies.items():
        calls[unit] = {defined[w] for w in word.findall(body) if w in defined and defined[w] != unit}

    # Cycles between units: depth-first search, reporting each cycle once.
    def cycles(graph, what):
        state, stack, seen = {}, [], set()

        def visit(u):
            state[u] = 1
            stack.append(u)
            for v in sorted(graph.get(u, ())):
                if state.get(v) == 1:
                    cycle = stack[stack.index(v):] + [v]
                    if frozenset(cycle) not in seen:
                        seen.add(frozenset(cycle))
                        problems.append(f"{what} cycle: " + " -> ".join(cycle))
                elif state.get(v) is None and v in graph:
                    visit(v)
            stack.pop()
            state[u] = 2

        for u in sorted(graph):
            if state.get(u) is None:
                visit(u)

    cycles(units, "include")
    cycles(calls, "call")

    for p in problems:
        print(p)
    print(f"{len(units)} units in {len(set(u.split('/')[0] for u in units))} modules, "
          f"{sum(len(d) for d in units.values())} includes, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
