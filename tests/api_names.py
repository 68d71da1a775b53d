#!/usr/bin/env python3
"""api_names: the installed headers of libattnscope are its API and nothing else.

- INCLUDE_DIR/attnscope/ holds attnscope.h alone: the engine's own headers are not installed.
- Every name the header declares starts with attnscope_ or ATTNSCOPE_: its functions (as the
  compiler lists them, gcc's -aux-info), variables, types, tags, enum constants and macros (the
  ones it adds to what <stddef.h> defines, cc -dM).

Usage: api_names.py INCLUDE_DIR [CC]. Prints every violation and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys
import tempfile

PREFIX = re.compile(r"^(attnscope_|ATTNSCOPE_)")


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def header_code(cc, inc, source):
    """The header's own lines after preprocessing (its includes' lines left out)."""
    out, mine = [], False
    for line in run([cc, "-std=c11", "-E", "-I", inc, source]).splitlines():
        m = re.match(r'^# \d+ "([^"]*)"', line)
        if m:
            mine = m.group(1).endswith("attnscope/attnscope.h")
        elif mine:
            out.append(line)
    code = "\n".join(out)
    return re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', code)


def declared(code):
    """Tags, typedef names, enum constants and variables declared at file scope."""
    names = set(m.group(2) for m in re.finditer(r"\b(struct|union|enum)\s+(\w+)", code))
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        names.update(re.findall(r"(?:^|,)\s*(\w+)", body))
    # file-scope statements: split at ';' outside braces, skipping extern "C" { }'s own brace
    code = re.sub(r'extern\s*""\s*\{', "", code)
    depth, start, stmts = 0, 0, []
    for i, c in enumerate(code):
        depth += c == "{"
        depth -= c == "}"
        if c == ";" and depth <= 0:
            stmts.append(code[start:i])
            start = i + 1
    for s in stmts:
        flat = re.sub(r"\{[^{}]*\}", " ", s)
        while re.search(r"\{[^{}]*\}", flat):
            flat = re.sub(r"\{[^{}]*\}", " ", flat)
        words = re.findall(r"\w+", flat)
        if not words:
            continue
        pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", flat)  # typedef int (*name)(...)
        if words[0] == "typedef":
            names.add(pointer.group(1) if pointer else re.findall(r"(\w+)\s*(?:\[[^]]*\])*\s*$",
                                                                   flat)[0])
        elif "(" not in flat:  # a variable (functions come from -aux-info)
            last = re.findall(r"(\w+)\s*(?:\[[^]]*\])*\s*$", flat)
            if last and last[0] not in ("struct", "union", "enum"):
                names.add(last[0])
    return names


def main(inc, cc="cc"):
    problems = []
    own = os.path.join(inc, "attnscope")
    files = sorted(os.path.relpath(os.path.join(d, f), own)
                   for d, _, fs in os.walk(own) for f in fs)
    if files != ["attnscope.h"]:
        problems.append(f"{own} holds {', '.join(files) or 'nothing'}, not attnscope.h alone")
    with tempfile.TemporaryDirectory() as tmp:
        base, api, aux = (os.path.join(tmp, n) for n in ("base.c", "api.c", "aux"))
        with open(base, "w") as f:
            f.write("#include <stddef.h>\n")
        with open(api, "w") as f:
            f.write("#include <attnscope/attnscope.h>\n")
        def macros(path):
            lines = run([cc, "-std=c11", "-E", "-dM", "-I", inc, path]).splitlines()
            return {re.match(r"#define (\w+)", line).group(1) for line in lines}
        names = {("macro", m) for m in macros(api) - macros(base)}
        run([cc, "-std=c11", "-fsyntax-only", "-aux-info", aux, "-I", inc, api])
        with open(aux) as f:
            for line in f:
                if "attnscope/attnscope.h:" in line:
                    names.add(("function", re.search(r"(\w+) \(", line).group(1)))
        code = header_code(cc, inc, api)
    names |= {("name", n) for n in declared(code)}
    funcs = sum(kind == "function" for kind, _ in names)
    if funcs == 0:
        problems.append("no function found in attnscope.h: the check itself is broken")
    for kind, name in sorted(names):
        if not PREFIX.match(name):
            problems.append(f"attnscope.h: {kind} {name} has no attnscope_ or ATTNSCOPE_ prefix")
    for p in problems:
        print(f"not ok - {p}")
    if not problems:
        print(f"ok - the installed headers are attnscope.h alone, and its {len(names)} names "
              f"({funcs} functions) are prefixed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
