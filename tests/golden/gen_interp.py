#!/usr/bin/python3
"""PyTorch goldens of what a head does: next-token predictions, the logit lens, head ablation and
activation patching, on the tiny GPT-2 checkpoints of gen_gpt2.py and the shipped induction model.

Run with Debian's python3 (torch 1.13, yaml, python3-regex), after gen_gpt2.py:

    /usr/bin/python3 tests/golden/gen_interp.py

It reads tests/golden/gpt2/scenes/*.yaml, scenes/29-induction-head.yaml and the clean/corrupted
pairs in tests/golden/gpt2/patch/, and rewrites tests/golden/gpt2/interp/ byte for byte the same
on every run:

  interp/<scene>/logits.csv           the logits, n x vocab: final norm . unembedding^T
  interp/<scene>/predictions.csv      the top 10 of every position at temperature 1
  interp/<scene>/predictions_t0.7.csv                                and at 0.7
  interp/<scene>/loss.csv             each position's next token: probability and -ln p (T 1)
  interp/<scene>/loss_t0.7.csv                                                      (T 0.7)
  interp/<scene>/lens.csv             the logit lens: every layer's top-1 token and probability
  interp/<scene>/ablate_zero.csv      every head zero-ablated alone: the mean loss, delta_loss
  interp/<scene>/ablate_mean.csv      every head mean-ablated alone
  interp/<scene>/ablate_<mode>_<A>_<B>.csv   the same over positions A .. B-1 (the induction
                                             scene's repeated half)
  interp/patch-<pair>/patch_<metric>.csv     activation patching, one table per metric kind
  interp/patch-<pair>/metrics.csv            the metric of the clean and the corrupted run

The model is gen_gpt2.py's GPT2Model (GPT-2 as Hugging Face / nanoGPT write it) with one hook,
TransformerLens's hook_z: a function of the heads' contexts before c_proj. Zero ablation sets a
head's context to 0, mean ablation to its mean over the positions (TransformerLens's mean
ablation computed on the same text), patching to the clean run's context of that head. The
unembedding is lm_head.weight when config.json says tie_word_embeddings: false (Hugging Face's
GPT2LMHeadModel then keeps its own), else wte.weight. Nothing here looks at the C code; the
numbers are float32 torch, and the logits and the lens are cross-checked against float64 numpy.
Top-k order is by logit, then by id; a near-tie (two logits closer than 1e-5 relative) in a
top 11, or between a lens's first and second, is refused, so no golden depends on how a tie
breaks.
"""

import csv
import glob
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_gpt2 as g  # noqa: E402  (the model, the tokenizer, the checkpoint reader)

ROOT = g.ROOT
GPT2 = os.path.join(ROOT, "tests", "golden", "gpt2")
OUT = os.path.join(GPT2, "interp")
TOP = 10
TEMPERATURES = (1.0, 0.7)
TIE = 1e-5
# Positions the induction scene's ablation also averages over: its repeated half (tokens 16 ..
# 31 repeat 0 .. 15; positions 16 .. 30 predict 17 .. 31).
EXTRA_RANGES = {"29-induction-head": [(16, 31)]}
# The clean/corrupted pairs (tests/golden/gpt2/patch/<pair>-clean.yaml, -corrupt.yaml) and the
# tokens their logit_diff and prob metrics read.
PAIRS = {"tiny": (" cat", " man"), "induction": (" tree", " bird")}

torch.set_num_threads(1)


class Run:
    """A scene's model, built as gen_gpt2.py builds it, and its unembedding."""

    def __init__(self, path):
        self.sc = g.Scene(path)
        sc = self.sc
        self.model = g.GPT2Model(dict(sc.config, n_head=sc.heads))
        W = g.load_checkpoint(sc.model_path)
        sd = self.model.state_dict()
        self.model.load_state_dict({k: (torch.from_numpy(W[k].copy()) if k in W else v)
                                    for k, v in sd.items()})
        self.model.eval()
        raw, _ = g.read_safetensors(sc.model_path)
        tied = sc.config.get("tie_word_embeddings", True)
        if not tied and "lm_head.weight" not in raw:
            raise g.GenError("%s: untied without lm_head.weight" % sc.model_path)
        self.untied = not tied
        self.U = torch.from_numpy((W["wte.weight"] if tied else raw["lm_head.weight"]).copy())
        self.ids = torch.tensor([sc.ids], dtype=torch.long)

    def forward(self, hooks=None):
        """hooks: {layer: f(ctx) -> ctx}. Returns the final norm's output (n, d) and each layer's
        record (gen_gpt2's: every stage, block_output among them)."""
        m = self.model
        for L, block in enumerate(m.h):
            block.attn.hook_z = (hooks or {}).get(L)
        with torch.no_grad():
            final = m(self.ids, self.sc.layers, self.sc.offset)[0]
        for block in m.h:
            block.attn.hook_z = None
        return final, [dict(m.h[L].rec) for L in range(self.sc.layers)]

    def logits(self, hooks=None):
        final, recs = self.forward(hooks)
        with torch.no_grad():
            return final @ self.U.t(), final, recs

    def label(self, i):
        return g.token_label(self.sc.encoder.decoder[i])


def mean_loss(logits, targets, a, b):
    """The mean of -ln softmax(logits[i])[targets[i + 1]] over positions a .. b - 1."""
    return F.cross_entropy(logits[a:b], torch.tensor(targets[a + 1:b + 1]),
                           reduction="mean").item()


def ranked(row):
    """Ids of a row of float32 logits by logit (highest first), then by id."""
    return sorted(range(len(row)), key=lambda i: (-float(row[i]), i))


def check_ties(row, order, count, what):
    for r in range(min(count, len(order) - 1)):
        a, b = float(row[order[r]]), float(row[order[r + 1]])
        if abs(a - b) < TIE * max(1.0, abs(a)):
            raise g.GenError("%s: a near-tie at rank %d: ids %d and %d, logits %r and %r" % (
                what, r + 1, order[r], order[r + 1], a, b))


def fmt(x):
    return g.fmt(x)


def write(path, header, rows):
    g.write_rows(path, header, rows)


def predictions(run, logits, T, out_dir, suffix):
    sc = run.sc
    probs = torch.softmax(logits / T, dim=-1)
    rows = []
    for i in range(sc.n):
        row = logits[i].numpy()
        order = ranked(row)
        check_ties(row, order, TOP, "%s position %d" % (sc.stem, i))
        for r, t in enumerate(order[:TOP]):
            rows.append([str(i), str(r + 1), str(t), run.label(t), fmt(row[t]),
                         fmt(probs[i, t].item())])
    write(os.path.join(out_dir, "predictions%s.csv" % suffix),
          ["position", "rank", "id", "token", "logit", "prob"], rows)
    loss = F.cross_entropy(logits[:-1] / T, run.ids[0, 1:], reduction="none")
    rows = [[str(i), str(sc.ids[i + 1]), run.label(sc.ids[i + 1]),
             fmt(probs[i, sc.ids[i + 1]].item()), fmt(loss[i].item())] for i in range(sc.n - 1)]
    write(os.path.join(out_dir, "loss%s.csv" % suffix),
          ["position", "next_id", "next_token", "prob", "loss"], rows)


def lens(run, recs, out_dir):
    """Every layer's block output through ln_f and the unembedding."""
    sc = run.sc
    rows = []
    W64 = run.U.double().numpy()
    lnw = run.model.ln_f.weight.detach().double().numpy()
    lnb = run.model.ln_f.bias.detach().double().numpy()
    for L, rec in enumerate(recs):
        with torch.no_grad():
            lg = run.model.ln_f(rec["block_output"]) @ run.U.t()
        ref = g.ln64(rec["block_output"].double().numpy(), lnw, lnb) @ W64.T
        compare(lg.numpy(), ref, "%s lens layer %d" % (sc.stem, L))
        probs = torch.softmax(lg, dim=-1)
        for i in range(sc.n):
            row = lg[i].numpy()
            order = ranked(row)
            check_ties(row, order, 1, "%s lens layer %d position %d" % (sc.stem, L, i))
            t = order[0]
            rows.append([str(L), str(i), str(t), run.label(t), fmt(probs[i, t].item())])
    write(os.path.join(out_dir, "lens.csv"), ["layer", "position", "id", "token", "prob"], rows)


def ablation_hook(h, mode):
    def hook(ctx):
        ctx = ctx.clone()
        if mode == "zero":
            ctx[:, h] = 0.0
        else:  # the head's context at every position: its mean over the positions
            ctx[:, h] = ctx[:, h].mean(dim=1, keepdim=True)
        return ctx
    return hook


def ablate(run, out_dir):
    sc = run.sc
    ranges = [(0, sc.n - 1)] + EXTRA_RANGES.get(sc.stem, [])
    for a, b in ranges:
        clean = mean_loss(run.logits()[0], sc.ids, a, b)
        for mode in ("zero", "mean"):
            rows = []
            for L in range(sc.layers):
                for h in range(sc.heads):
                    loss = mean_loss(run.logits({L: ablation_hook(h, mode)})[0], sc.ids, a, b)
                    rows.append([str(L), str(h), mode, fmt(loss), fmt(loss - clean)])
            name = "ablate_%s%s.csv" % (mode, "" if (a, b) == (0, sc.n - 1) else
                                        "_%d_%d" % (a, b))
            write(os.path.join(out_dir, name), ["layer", "head", "mode", "loss", "delta_loss"],
                  rows)


def metric(run, logits, kind, a, b, targets):
    if kind == "logit_diff":
        return (logits[-1, a] - logits[-1, b]).item()
    if kind == "prob":
        return torch.softmax(logits[-1], dim=-1)[a].item()
    return mean_loss(logits, targets, 0, run.sc.n - 1)


def patch(pair, tokens):
    clean = Run(os.path.join(GPT2, "patch", pair + "-clean.yaml"))
    corrupt = Run(os.path.join(GPT2, "patch", pair + "-corrupt.yaml"))
    if clean.sc.model_path != corrupt.sc.model_path or clean.sc.n != corrupt.sc.n:
        raise g.GenError("patch pair %s: the scenes differ in model or length" % pair)
    ids = []
    for text in tokens:
        enc = clean.sc.encoder.encode(text)
        if len(enc) != 1:
            raise g.GenError("patch pair %s: %r is not one token" % (pair, text))
        ids.append(enc[0])
    saved = {}

    def keep(L):
        def hook(ctx):
            saved[L] = ctx.clone()
            return ctx
        return hook

    clean_logits = clean.logits({L: keep(L) for L in range(clean.sc.layers)})[0]
    corrupt_logits = corrupt.logits()[0]
    out_dir = os.path.join(OUT, "patch-" + pair)
    meta = []
    for kind in ("logit_diff", "prob", "loss"):
        mc = metric(clean, clean_logits, kind, ids[0], ids[1], clean.sc.ids)
        mx = metric(corrupt, corrupt_logits, kind, ids[0], ids[1], clean.sc.ids)
        meta.append([kind, fmt(mc), fmt(mx)])
        rows = []
        for L in range(corrupt.sc.layers):
            for h in range(corrupt.sc.heads):
                def hook(ctx, L=L, h=h):
                    ctx = ctx.clone()
                    ctx[:, h] = saved[L][:, h]
                    return ctx
                m = metric(corrupt, corrupt.logits({L: hook})[0], kind, ids[0], ids[1],
                           clean.sc.ids)
                rows.append([str(L), str(h), fmt(m), fmt((m - mx) / (mc - mx))])
        write(os.path.join(out_dir, "patch_%s.csv" % kind),
              ["layer", "head", "metric", "recovered"], rows)
    write(os.path.join(out_dir, "metrics.csv"), ["metric", "clean", "corrupt"], meta)
    print("patch-%-10s %s vs %s: %s" % (pair, " ".join(clean.sc.labels[-3:]),
                                         " ".join(corrupt.sc.labels[-3:]),
                                         ", ".join("%s %s -> %s" % tuple(m) for m in meta)))


WORST = [0.0, ""]


def compare(got, ref, what):
    diff = np.abs(got.astype(np.float64) - ref)
    tol = 1e-5 * np.maximum(1.0, np.abs(ref))
    if (diff > tol).any():
        i = np.unravel_index(np.argmax(diff - tol), diff.shape)
        raise g.GenError("%s: float32 %r, float64 %r" % (what, got[i], ref[i]))
    if diff.max() > WORST[0]:
        WORST[:] = [float(diff.max()), what]


def scene(path):
    run = Run(path)
    sc = run.sc
    out_dir = os.path.join(OUT, sc.stem)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    logits, final, recs = run.logits()
    compare(logits.numpy(), final.double().numpy() @ run.U.double().numpy().T,
            "%s logits" % sc.stem)
    vocab = logits.shape[1]
    g.write_csv(os.path.join(out_dir, "logits.csv"), logits, sc.labels,
                [str(i) for i in range(vocab)])
    for T in TEMPERATURES:
        predictions(run, logits, T, out_dir, "" if T == 1.0 else "_t%g" % T)
    lens(run, recs, out_dir)
    ablate(run, out_dir)
    print("%-17s n=%-2d layers=%d heads=%d vocab=%d %s, mean loss %.4f" % (
        sc.stem, sc.n, sc.layers, sc.heads, vocab, "untied" if run.untied else "tied",
        mean_loss(logits, sc.ids, 0, sc.n - 1)))


def main():
    paths = sorted(glob.glob(os.path.join(GPT2, "scenes", "*.yaml")))
    paths.append(os.path.join(ROOT, "scenes", "29-induction-head.yaml"))
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for p in paths:
        scene(p)
    for pair, tokens in PAIRS.items():
        patch(pair, tokens)
    print("largest float64 difference of the logits and the lens: %.3g (%s)" % tuple(WORST))
    return 0


if __name__ == "__main__":
    sys.exit(main())
