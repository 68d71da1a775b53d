#!/usr/bin/python3
"""The NumPy peer of `attnscope export`: the same matrices written with numpy.savetxt and
np.save, timed, for bench/side_by_side.

    /usr/bin/python3 bench/export_peer.py savetxt|savetxt-shortest|save --from NPYDIR -o OUT

NPYDIR is an `attnscope export --format npy` of the scene (so both sides write the same
numbers, the same files). Every .npy there is loaded first (not timed), then written into OUT,
a fresh folder renamed into place at the end (no fsync, which attnscope does):

  savetxt           numpy.savetxt(path, a, delimiter=","): its default "%.18e", 25 bytes a number
                    (round-trips, but not the shortest text)
  savetxt-shortest  numpy.savetxt with fmt="%s" on the float32 array: str(np.float32), NumPy's
                    Dragon4 shortest round-trip text ("0.1", "-inf"), the text attnscope writes
                    (theirs adds ".0" to whole numbers and switches to e-notation elsewhere)
  save              np.save(path, a)

Prints one JSON line: the seconds the writing took and the bytes written.
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("how", choices=["savetxt", "savetxt-shortest", "save"])
    ap.add_argument("--from", dest="src", required=True)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    arrays = []
    for root, _, files in os.walk(a.src):
        for f in sorted(files):
            if f.endswith(".npy"):
                rel = os.path.relpath(os.path.join(root, f), a.src)
                arrays.append((rel[:-4], np.load(os.path.join(root, f))))
    tmp = a.out.rstrip("/") + ".peer-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.perf_counter()
    os.makedirs(tmp)
    for rel, arr in arrays:
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if a.how == "save":
            np.save(path + ".npy", arr)
        elif a.how == "savetxt":
            np.savetxt(path + ".csv", arr, delimiter=",")
        else:
            np.savetxt(path + ".csv", arr, delimiter=",", fmt="%s")
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)
    seconds = time.perf_counter() - t0
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.out) for f in fs)
    print(json.dumps({"seconds": seconds, "bytes": size, "files": len(arrays)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
