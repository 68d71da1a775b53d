"""doctest: every attnscope command the README and docs/ show runs as shown.

Usage: doctest.py ATTNSCOPE_BINARY SOURCE_ROOT FILE.md...

In each Markdown file:
- A fenced block whose first line starts with "$ " is a transcript: each "$ command" runs (bash,
  attnscope on the PATH) and what it prints (standard output, then standard error) must be the
  lines that follow it, exactly. A line "..." (or "[...]") stands for any lines, and a line that
  ends in "..." for a line that starts with what it shows (a long line cut short).
- A ```sh block lists commands to type: every line that starts with "attnscope" runs and must
  exit 0, except that the explorer (attnscope SCENE ...) is run as `attnscope check SCENE ...`,
  since it needs a terminal. Other lines (scripts/run, meson, apt-get, dpkg-buildpackage) are covered by
  scripts/test and scripts/deb-check; here their program must exist.
- <!-- file: NAME --> right before a fenced block writes the block to NAME first, so a
  transcript can use it (the scene of an example, a bad scene that `check` reports).

Every file's commands run in a scratch folder of their own that holds the source tree's
scenes/, models/, configs/, examples/ and tests/ (links), so paths read as the docs write them.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

TIMING = re.compile(r"^attnscope: [a-z]+: [0-9]+ [a-z]+ in [0-9.]+ s\n?$")

COMMANDS = {"check", "print", "diff", "heads", "export", "render", "bench", "keys", "help",
            "predict", "generate", "lens", "ablate", "patch"}


def blocks(text):
    """(info, lines, file_marker) for each fenced block."""
    lines = text.split("\n")
    out, i, marker = [], 0, None
    while i < len(lines):
        m = re.match(r"^<!-- file: (\S+) -->$", lines[i])
        if m:
            marker = m.group(1)
            i += 1
            continue
        if lines[i].startswith("```"):
            info = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and lines[j] != "```":
                j += 1
            out.append((info, lines[i + 1:j], marker, i + 1))
            marker = None
            i = j + 1
            continue
        if lines[i].strip():
            marker = None
        i += 1
    return out


def matches(want, got):
    """want may hold "[...]" or "..." lines (any indentation), each matching any run of lines,
    and lines ending in "..." or "…", matching a line that starts with what comes before."""
    if not want:
        return not got
    w = want[0]
    if w.strip() in ("[...]", "...", "\u2026"):
        return any(matches(want[1:], got[k:]) for k in range(len(got) + 1))
    if not got:
        return False
    for cut in ("...", "\u2026"):
        if w.endswith(cut) and got[0].startswith(w[:-len(cut)].rstrip()):
            return matches(want[1:], got[1:])
    return w == got[0] and matches(want[1:], got[1:])


def main():
    binary, root, files = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
    bindir = tempfile.mkdtemp(prefix="attnscope-doctest-bin-")
    os.symlink(binary, os.path.join(bindir, "attnscope"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
               ATTNSCOPE_DATA_DIR=os.path.abspath(root), LC_ALL="C.UTF-8", COLUMNS="100")
    env.pop("ATTNSCOPE_CONFIGS_DIR", None)
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        print(("ok - " if ok else "not ok - ") + what)
        if ok:
            passed += 1
        else:
            failed += 1

    for path in files:
        name = os.path.relpath(path, root)
        work = tempfile.mkdtemp(prefix="attnscope-doctest-")
        for d in ("scenes", "models", "configs", "examples", "tests"):
            os.symlink(os.path.abspath(os.path.join(root, d)), os.path.join(work, d))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for info, lines, marker, line_no in blocks(text):
            where = "%s:%d" % (name, line_no)
            if marker:
                with open(os.path.join(work, marker), "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
            if lines and lines[0].startswith("$ "):
                k = 0
                while k < len(lines):
                    cmd = lines[k][2:]
                    k += 1
                    want = []
                    while k < len(lines) and not lines[k].startswith("$ "):
                        want.append(lines[k])
                        k += 1
                    r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env,
                                       capture_output=True, text=True, timeout=600)
                    # A command that ran long under load says so on stderr ("attnscope:
                    # computing: 2 heads in 0.3 s"); how long is the machine's, not the docs'.
                    err = "".join(l for l in r.stderr.splitlines(True) if not TIMING.match(l))
                    got = (r.stdout + err).rstrip("\n").split("\n")
                    while want and not want[-1].strip():
                        want.pop()
                    got = [g.rstrip() for g in got]
                    ok = matches([w.rstrip() for w in want], got if got != [""] else [])
                    report(ok, "%s: $ %s" % (where, cmd))
                    if not ok:
                        print("--- the docs show\n" + "\n".join(want) + "\n--- it prints\n" +
                              "\n".join(got))
            elif info == "sh":
                for line in lines:
                    cmd = line.split("#", 1)[0].strip()
                    if not cmd:
                        continue
                    words = cmd.split()
                    if words[0] == "attnscope":
                        if len(words) > 1 and words[1] not in COMMANDS and not words[1].startswith("-"):
                            cmd = "attnscope check " + cmd.split(None, 1)[1]  # its options too
                        r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env,
                                           capture_output=True, text=True, timeout=600)
                        report(r.returncode == 0, "%s: %s" % (where, cmd))
                        if r.returncode != 0:
                            print(r.stdout[-2000:] + r.stderr[-2000:])
                    else:
                        prog = words[1] if words[0] == "sudo" else words[0]
                        exists = os.path.exists(os.path.join(root, prog)) or shutil.which(prog)
                        report(bool(exists), "%s: %s (its program exists)" % (where, prog))
        shutil.rmtree(work)
    shutil.rmtree(bindir)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
