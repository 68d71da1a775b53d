#!/usr/bin/env python3
"""terminal_gone: the explorer ends when its terminal goes away without a SIGHUP.

A terminal that is not the process's controlling one (a pane whose process was started in a
session of its own, a terminal handed over by a wrapper) sends no SIGHUP when it closes: every
read then fails at once. The explorer spun on those reads at full speed for hours; it must end
as SIGHUP ends it (status 129), at rest and with a prompt open.

Usage: terminal_gone.py ATTNSCOPE_BINARY SOURCE_ROOT
"""
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

binary, root = os.path.abspath(sys.argv[1]), sys.argv[2]
failures = 0


def case(name, keys):
    global failures
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", XDG_CONFIG_HOME="/nonexistent")
    p = subprocess.Popen([binary, "10-mha"], stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True, env=env, cwd=root)
    os.close(slave)
    shown, deadline = 0, time.time() + 20
    while time.time() < deadline:  # the first frame: output, then a second of quiet
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if shown:
                break
            continue
        try:
            shown += len(os.read(master, 65536))
        except OSError:
            break
    os.write(master, keys)
    time.sleep(0.3)
    os.close(master)  # the terminal goes away: no SIGHUP, reads fail
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        print(f"not ok - {name}: still running 10 s after its terminal closed")
        failures += 1
        return
    if rc != 129:
        print(f"not ok - {name}: exit status {rc}, expected 129 (as SIGHUP)")
        failures += 1
    else:
        print(f"ok - {name}: ended with status 129 when its terminal closed")


case("at rest", b"")
case("with the sentence editor open", b"t")
sys.exit(1 if failures else 0)
