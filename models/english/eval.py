#!/usr/bin/python3
"""Measures the shipped English model (model.safetensors, config.json, vocab.json, merges.txt
beside this file) on the held-out 5% of the corpus train.py builds:

    /usr/bin/python3 models/english/eval.py               # every figure of README.md
    /usr/bin/python3 models/english/eval.py --scene scenes/31-english-passage.yaml
                                                          # head scores on a scene's text
    /usr/bin/python3 models/english/eval.py --scene S --dump DIR
                                                          # + every layer's attention (.npy)

The corpus is rebuilt (and its packages installed) when corpus/ is missing; the tokenizer and
the model are only read, never trained. Figures:
  - loss per token (nats) of the model on held-out and on as many training tokens, in
    non-overlapping windows of n_positions + 1 tokens (each token after a window's first is
    predicted once, from the tokens before it in its window), and its top-1 accuracy;
  - on exactly the same target tokens: a unigram model (add-one) and an interpolated bigram
    model P(b|a) = l c(a,b)/c(a) + (1-l) P_uni(b), both counted on the training tokens, l the
    best of 0.05 .. 0.95 on held-out itself (which flatters the baseline);
  - head scores (attnscope's definitions) on the training-time probes: 16 held-out windows
    (their first 128 tokens) and 16 held-out 40-token passages each followed by itself.
"""

import argparse
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402  (the corpus, the tokenizer, the model and the scores)


def windows_of(ids, n_ctx):
    """Non-overlapping windows of n_ctx + 1 tokens sharing one token: [0, n], [n, 2n], ...;
    the last one shorter."""
    out = []
    for s in range(0, len(ids) - 1, n_ctx):
        out.append(ids[s:s + n_ctx + 1])
    return out


def model_loss(model, ids, n_ctx, batch=16):
    """Summed loss, correct top-1 count and target count over ids, windows as above; also the
    positions of the targets (indices into ids) in order."""
    import torch
    import torch.nn.functional as F
    total, correct, count = 0.0, 0, 0
    ws = windows_of(ids, n_ctx)
    with torch.no_grad():
        for k in range(0, len(ws), batch):
            group = ws[k:k + batch]
            for n in sorted(set(len(w) for w in group)):
                x = torch.tensor([w for w in group if len(w) == n], dtype=torch.long)
                logits = model(x[:, :-1])
                y = x[:, 1:]
                total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                         reduction="sum").item()
                correct += (logits.argmax(-1) == y).sum().item()
                count += y.numel()
    return total, correct, count


def ngram_baselines(train_ids, held_ids, vocab_size):
    """Held-out loss per token of the unigram (add-one) and the interpolated bigram, on the
    targets held_ids[1:] (every target's previous token is in its window too)."""
    import numpy as np
    tr = np.asarray(train_ids, dtype=np.int64)
    uni = np.bincount(tr, minlength=vocab_size).astype(np.float64)
    p_uni = (uni + 1) / (uni.sum() + vocab_size)
    big = np.bincount(tr[:-1] * vocab_size + tr[1:], minlength=vocab_size * vocab_size)
    big = big.reshape(vocab_size, vocab_size).astype(np.float64)
    ctx = big.sum(1)
    h = np.asarray(held_ids, dtype=np.int64)
    a, b = h[:-1], h[1:]
    uni_loss = -np.log(p_uni[b]).mean()
    ml = np.where(ctx[a] > 0, big[a, b] / np.maximum(ctx[a], 1), 0.0)
    best = None
    for lam in [x / 100 for x in range(5, 100, 5)]:
        loss = -np.log(lam * ml + (1 - lam) * p_uni[b]).mean()
        if best is None or loss < best[0]:
            best = (loss, lam)
    return uni_loss, best[0], best[1]


def scores_table(model, ids):
    """Every head's previous / induction / first / self score on one text (ids)."""
    import torch
    x = torch.tensor([ids], dtype=torch.long)
    model.keep_attention(True)
    with torch.no_grad():
        model(x)
    rows = []
    n = len(ids)
    r = torch.arange(1, n)
    for L, b in enumerate(model.h):
        prev, ind, first = train.head_scores(b.att, x)
        self_ = b.att[0, :, r, r].mean(-1).tolist()
        for H in range(b.att.shape[1]):
            rows.append((L, H, prev[H], ind[H], first[H], self_[H]))
    atts = [b.att[0].numpy().copy() for b in model.h]
    model.keep_attention(False)
    with torch.no_grad():  # the final LayerNorm's output, attnscope's final_norm stage
        h = torch.nn.functional.embedding(x, model.wte) + model.wpe[:n]
        for blk in model.h:
            h = blk(h)
        atts.append(model.ln_f(h)[0].numpy().copy())
    return rows, atts


def scene_text(path):
    """The text: of a scene file (one double-quoted line)."""
    for line in open(path, encoding="utf-8"):
        m = re.match(r'^text:\s*"(.*)"\s*$', line)
        if m:
            return json.loads('"' + m.group(1) + '"')  # YAML's escapes here are JSON's
    sys.exit("%s: no text: \"...\" line" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", default=HERE, help="the model's folder (default: here)")
    ap.add_argument("--scene", help="score the heads on this scene's text instead")
    ap.add_argument("--dump", help="with --scene: write L<l>.npy (every head's weights) and "
                    "final_norm.npy, to compare with attnscope export --format npy")
    args = ap.parse_args()
    import numpy as np
    import torch
    torch.set_num_threads(train.THREADS)
    tok = train.load_tokenizer(args.folder)
    model = train.load_model(args.folder)
    model.eval()

    if args.scene:
        ids = tok.encode(scene_text(args.scene))
        rows, atts = scores_table(model, ids)
        print("%d tokens" % len(ids))
        print("| layer | head | previous | induction | first | self |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for L, H, p, i, f, s in rows:
            print("| %d | %d | %.3f | %.3f | %.3f | %.3f |" % (L, H, p, i, f, s))
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            for L, a in enumerate(atts[:-1]):
                np.save(os.path.join(args.dump, "L%d.npy" % L), a)
            np.save(os.path.join(args.dump, "final_norm.npy"), atts[-1])
        return

    if not os.path.exists(os.path.join(train.CORPUS, "heldout.jsonl")):
        train.ensure_packages()
        train.build_corpus()
    train_docs, held_docs = train.load_corpus("train"), train.load_corpus("heldout")
    import random
    order = list(range(len(train_docs)))
    random.Random(train.SEED + 1).shuffle(order)
    train_ids = tok.stream([train_docs[i] for i in order])  # train.py's stream, same order
    held_ids = tok.stream(held_docs)
    V = len(tok.vocab)
    print("tokens: train %d, held-out %d, vocab %d" % (len(train_ids), len(held_ids), V))

    n_ctx = train.N_CTX
    ht, hc, hn = model_loss(model, held_ids, n_ctx)
    print("model held-out: loss %.4f nats/token (%d targets), top-1 accuracy %.2f%%" % (
        ht / hn, hn, 100 * hc / hn), flush=True)
    # as many training tokens, from the middle of the training stream
    s = len(train_ids) // 2
    tt, tc, tn = model_loss(model, train_ids[s:s + len(held_ids)], n_ctx)
    print("model train:    loss %.4f nats/token (%d targets), top-1 accuracy %.2f%%" % (
        tt / tn, tn, 100 * tc / tn), flush=True)
    uni, big, lam = ngram_baselines(train_ids, held_ids, V)
    print("unigram (add-one) held-out: loss %.4f" % uni)
    print("bigram (interpolated, l = %.2f) held-out: loss %.4f" % (lam, big))

    windows, reps = train.probes(held_ids, train.SEED + 2)
    hl, again, heads = train.evaluate(model, windows, reps)
    print("probes: held-out windows loss %.4f, second copy of repeated passages %.4f" % (
        hl, again))
    print("| layer | head | previous (held-out) | induction (repeated) | first (held-out) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for L, (prev, first, ind) in enumerate(heads):
        for H in range(len(prev)):
            print("| %d | %d | %.3f | %.3f | %.3f |" % (L, H, prev[H], ind[H], first[H]))


if __name__ == "__main__":
    main()
