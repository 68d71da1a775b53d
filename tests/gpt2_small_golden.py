"""Compares an `attnscope export --format npy` of the GPT-2-small-shaped scene with PyTorch's rows
(tests/golden/gen_gpt2_small_shape.py). Usage: gpt2_small_golden.py EXPORT_DIR GOLDEN_DIR"""
import csv
import os
import sys

import numpy as np

out, golden = sys.argv[1], sys.argv[2]
# Twelve layers of float32 on both sides, each rounding its own way: relative 1e-4, as the
# tiny GPT-2's chained goldens (test_goldens' CHAIN_TOL).
TOL = 1e-4
problems = 0


def close(name, got, want):
    global problems
    if got.shape != want.shape:
        print("%s: shape %s, PyTorch's %s" % (name, got.shape, want.shape))
        problems += 1
        return
    err = np.abs(got.astype(np.float64) - want) / (1 + np.abs(want.astype(np.float64)))
    worst = float(err.max())
    print("%s: %d values, largest relative difference %.2e" % (name, want.size, worst))
    if worst > TOL:
        problems += 1


with open(os.path.join(out, "tokens.csv"), newline="") as f:
    ids = [int(r[1]) for r in list(csv.reader(f))[1:]]
want_ids = np.load(os.path.join(golden, "ids.npy"))
if ids != want_ids.tolist():
    print("ids differ: %s... against %s..." % (ids[:6], want_ids[:6].tolist()))
    problems += 1
final = np.load(os.path.join(out, "final_norm.npy"))
close("final_norm rows 0, 1, 64, 129", final[[0, 1, 64, 129]],
      np.load(os.path.join(golden, "final_norm_rows.npy")))
block5 = np.load(os.path.join(out, "layer5", "block_output.npy"))
close("layer 5 block output, row 64", block5[64], np.load(os.path.join(golden, "block5_row64.npy")))
rows = np.stack([np.load(os.path.join(out, "layer%d" % L, "head%d" % h, "weights.npy"))[129]
                 for L, h in [(0, 0), (5, 3), (11, 11)]])
close("weights row 129 of heads 0.0, 5.3, 11.11", rows,
      np.load(os.path.join(golden, "weights_rows.npy")))
sys.exit(1 if problems else 0)
