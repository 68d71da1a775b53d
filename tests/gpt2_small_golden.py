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
# next-token predictions over GPT-2's 50257 tokens, computed a block of positions at a time
with open(os.path.join(out, "predictions.csv"), newline="") as f:
    pred = list(csv.reader(f))[1:]
want_ids = np.load(os.path.join(golden, "top_ids.npy"))
got_ids, got_logits = [], []
for r in (0, 64, 129):
    rows = [row for row in pred if int(row[0]) == r]
    got_ids.append([int(row[2]) for row in rows])
    got_logits.append([float(row[4]) for row in rows])
if got_ids != want_ids.tolist():
    print("top 10 ids at positions 0, 64, 129: %s, PyTorch's %s" % (got_ids, want_ids.tolist()))
    problems += 1
else:
    print("top 10 ids at positions 0, 64, 129: PyTorch's")
close("top 10 logits at positions 0, 64, 129", np.array(got_logits, dtype=np.float32),
      np.load(os.path.join(golden, "top_logits.npy")))
with open(os.path.join(out, "loss.csv"), newline="") as f:
    loss = np.array([float(row[4]) for row in list(csv.reader(f))[1:]], dtype=np.float32)
close("loss at positions 0 .. 128", loss, np.load(os.path.join(golden, "loss.npy")))
with open(os.path.join(out, "lens.csv"), newline="") as f:
    lens = [row for row in list(csv.reader(f))[1:] if row[0] == "5" and row[1] == "64"]
want = np.load(os.path.join(golden, "lens5_row64.npy"))
if len(lens) != 1 or int(lens[0][2]) != int(want[0]):
    print("lens layer 5 position 64: %s, PyTorch's id %d" % (lens, int(want[0])))
    problems += 1
else:
    close("lens layer 5 position 64: its probability", np.array([float(lens[0][4])]), want[1:])
sys.exit(1 if problems else 0)
