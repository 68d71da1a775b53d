#!/usr/bin/python3
"""Compares attnscope's forward pass with train.py's on one scene:

    build/src/cli/attnscope export scenes/32-english-repeat.yaml -o /tmp/as --format npy
    /usr/bin/python3 models/english/eval.py --scene scenes/32-english-repeat.yaml --dump /tmp/py
    /usr/bin/python3 models/english/compare.py /tmp/as /tmp/py scenes/32-english-repeat.yaml

Prints whether the token ids agree (attnscope's tokens.csv against eval.py's tokenizer) and the
largest |difference| of every layer's attention weights (all heads) and of the final
LayerNorm's output."""
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval as ev  # noqa: E402
import train  # noqa: E402

ours, theirs, scene = sys.argv[1], sys.argv[2], sys.argv[3]
tok = train.load_tokenizer(os.path.dirname(os.path.abspath(__file__)))  # the shipped tokenizer
ids = tok.encode(ev.scene_text(scene))
got = [int(r["id"]) for r in csv.DictReader(open(os.path.join(ours, "tokens.csv")))]
print("tokens: %d, ids %s" % (len(ids), "agree" if ids == got else "DIFFER"))
L = 0
while os.path.exists(os.path.join(theirs, "L%d.npy" % L)):
    py = np.load(os.path.join(theirs, "L%d.npy" % L))
    d = max(np.abs(np.load(os.path.join(ours, "layer%d" % L, "head%d" % H, "weights.npy")) -
                   py[H]).max() for H in range(py.shape[0]))
    print("layer %d attention weights, %d heads: max |attnscope - torch| %.2e" % (L, py.shape[0], d))
    L += 1
d = np.abs(np.load(os.path.join(ours, "final_norm.npy")) -
           np.load(os.path.join(theirs, "final_norm.npy"))).max()
print("final_norm: max |attnscope - torch| %.2e" % d)
