#!/usr/bin/python3
"""The PyTorch peer of `attnscope heads`, `export --format npy` and `predict` on a GPT-2 scene:
the same work end to end (import, load, tokenize, forward, output), for bench/side_by_side.

    /usr/bin/python3 bench/gpt2_peer.py heads|npy|predict --checkpoint DIR --text TEXT [-o OUT]

DIR holds model.safetensors (F32, GPT-2's names), vocab.json and merges.txt, as the scenes
bench/side_by_side writes. The checkpoint is mapped with NumPy (Debian has no python3-safetensors)
and read into torch without a copy; the tokenizer is OpenAI's encoder.py as tests/golden/gen_gpt2.py
ports it. The forward pass is GPT-2 small's (pre-norm blocks, fused c_attn, gelu_new) in eval
mode under torch.no_grad(), on torch's own threads (torch.set_num_threads, default 2).

  heads    every head's attention weights, then the five pattern scores of engine/headscore.h
           (previous, induction, first, self, entropy), printed as CSV: 144 rows.
  npy      every file `attnscope export --format npy` writes for the scene, as np.save writes it,
           into OUT (a fresh folder, renamed into place at the end as attnscope's is; no fsync,
           which attnscope does): per head queries, keys, values, scores, scaled, masked, weights,
           weighted_norm and context; per layer inputs, norm1, context, output, residual1, norm2,
           ffn_hidden, ffn_activated, ffn_out, residual2, block_output and the rollout; final_norm;
           tokens.csv, predictions.csv (top 10 per position), loss.csv and lens.csv (the top token
           of every layer's output through ln_f and wte).
  predict  the top 10 next tokens at every position with their logits and probabilities, and the
           mean loss, printed.
"""

import argparse
import json
import mmap
import os
import shutil
import sys
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "golden"))
import gen_gpt2  # noqa: E402  (OpenAI's encoder.py, ported)

DTYPES = {"F32": np.float32}


def load_safetensors(path):
    """name -> torch tensor viewing the mapped file (F32 only)."""
    f = open(path, "rb")
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    n = int.from_bytes(mm[:8], "little")
    header = json.loads(mm[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        arr = np.frombuffer(mm, dtype=DTYPES[t["dtype"]], count=(b - a) // 4, offset=base + a)
        with warnings.catch_warnings():  # a read-only view, never written
            warnings.simplefilter("ignore")
            out[name] = torch.from_numpy(arr.reshape(t["shape"]))
    return out


def layer_norm(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def gelu_new(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def forward(W, ids, n_layer, n_head, keep):
    """keep: 'weights' (heads), 'all' (npy) or None (predict). Returns final norm and records."""
    n = len(ids)
    x = W["wte.weight"][ids] + W["wpe.weight"][:n]
    d = x.shape[1]
    hd = d // n_head
    mask = torch.full((n, n), float("-inf")).triu(1)
    recs = []
    for L in range(n_layer):
        p = "h.%d." % L
        rec = {}
        if keep == "all":
            rec["inputs"] = x
        h1 = layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"])
        qkv = torch.addmm(W[p + "attn.c_attn.bias"], h1, W[p + "attn.c_attn.weight"])
        q, k, v = (t.view(n, n_head, hd).transpose(0, 1) for t in qkv.split(d, dim=1))
        scores = q @ k.transpose(1, 2)
        scaled = scores / (hd ** 0.5)
        masked = scaled + mask
        weights = torch.softmax(masked, dim=-1)
        ctx_h = weights @ v
        ctx = ctx_h.transpose(0, 1).reshape(n, d)
        out = torch.addmm(W[p + "attn.c_proj.bias"], ctx, W[p + "attn.c_proj.weight"])
        r1 = x + out
        h2 = layer_norm(r1, W[p + "ln_2.weight"], W[p + "ln_2.bias"])
        hid = torch.addmm(W[p + "mlp.c_fc.bias"], h2, W[p + "mlp.c_fc.weight"])
        act = gelu_new(hid)
        fo = torch.addmm(W[p + "mlp.c_proj.bias"], act, W[p + "mlp.c_proj.weight"])
        x = r1 + fo
        if keep == "weights":
            rec["weights"] = weights
        elif keep == "all":
            wo = W[p + "attn.c_proj.weight"].view(n_head, hd, d)
            vnorm = torch.linalg.vector_norm(v @ wo, dim=-1)  # ||v_j W_O^h|| (heads, n)
            rec.update(queries=q, keys=k, values=v, scores=scores, scaled=scaled, masked=masked,
                       weights=weights, weighted_norm=weights * vnorm[:, None, :], hcontext=ctx_h,
                       norm1=h1, context=ctx, output=out, residual1=r1, norm2=h2, ffn_hidden=hid,
                       ffn_activated=act, ffn_out=fo, residual2=x, block_output=x)
        recs.append(rec)
    final = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"])
    return final, recs


def head_scores(w, ids):
    """engine/headscore.h's five scores of one head's weights w (n x n)."""
    n = w.shape[0]
    rows = torch.arange(1, n)
    prev = w[rows, rows - 1].mean().item() if n > 1 else None
    first = w[rows, 0].mean().item() if n > 1 else None
    self_ = w[rows, rows].mean().item() if n > 1 else None
    ent = (-(w[1:] * torch.log(torch.where(w[1:] > 0, w[1:], torch.ones(())))).sum(1)).mean()
    last, acc = {}, []
    for i, t in enumerate(ids):
        if i > 0 and t in last and last[t] + 1 <= i:
            acc.append(w[i, last[t] + 1].item())
        last[t] = i
    ind = sum(acc) / len(acc) if acc else None
    return prev, ind, first, self_, ent.item() if n > 1 else None


def fmt(x):
    return "" if x is None else "%.6g" % x


def rollout(recs):
    """Abnar & Zuidema: 0.5 (mean over heads) + 0.5 I, rows normalised, through every layer."""
    out, r = [], None
    for rec in recs:
        a = rec["weights"].mean(0)
        a = 0.5 * a + 0.5 * torch.eye(a.shape[0])
        a = a / a.sum(-1, keepdim=True)
        r = a if r is None else a @ r
        out.append(r)
    return out


def top10(logits):
    p = torch.softmax(logits, dim=-1)
    v, i = torch.topk(logits, 10, dim=-1)
    return v, i, torch.gather(p, -1, i), p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", choices=["heads", "npy", "predict"])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("-o", "--out")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = json.load(open(os.path.join(a.checkpoint, "config.json")))
    n_layer, n_head = cfg["n_layer"], cfg["n_head"]
    W = load_safetensors(os.path.join(a.checkpoint, "model.safetensors"))
    enc = gen_gpt2.get_encoder(a.checkpoint)
    ids = enc.encode(a.text)
    labels = [enc.decode([t]) for t in ids]
    wte = W["wte.weight"]
    with torch.no_grad():
        keep = {"heads": "weights", "npy": "all", "predict": None}[a.task]
        final, recs = forward(W, ids, n_layer, n_head, keep)
        if a.task == "heads":
            print("layer,head,previous,induction,first,self,entropy")
            for L, rec in enumerate(recs):
                for h in range(n_head):
                    print("%d,%d,%s" % (L, h, ",".join(fmt(s) for s in
                                                      head_scores(rec["weights"][h], ids))))
            return 0
        logits = final @ wte.t()
        v, i, p, probs = top10(logits)
        nxt = torch.tensor(ids[1:])
        loss = -torch.log(probs[:-1].gather(-1, nxt[:, None]))[:, 0]
        if a.task == "predict":
            for pos in range(len(ids)):
                print("position %d %r" % (pos, labels[pos]))
                for r in range(10):
                    print("  %2d %-16r %10.4f %.4f" % (r + 1, enc.decode([int(i[pos, r])]),
                                                        v[pos, r], p[pos, r]))
            print("mean loss %.4f" % loss.mean().item())
            return 0
        tmp = a.out.rstrip("/") + ".peer-tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)

        def save(rel, t):
            path = os.path.join(tmp, rel + ".npy")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            np.save(path, t.contiguous().numpy())

        ro = rollout(recs)
        for L, rec in enumerate(recs):
            for name in ("inputs", "norm1", "context", "output", "residual1", "norm2",
                         "ffn_hidden", "ffn_activated", "ffn_out", "residual2", "block_output"):
                save("layer%d/%s" % (L, name), rec[name])
            save("layer%d/rollout" % L, ro[L])
            for h in range(n_head):
                for name in ("queries", "keys", "values", "scores", "scaled", "masked",
                             "weights", "weighted_norm"):
                    save("layer%d/head%d/%s" % (L, h, name), rec[name][h])
                save("layer%d/head%d/context" % (L, h), rec["hcontext"][h])
        save("final_norm", final)
        save("rollout", ro[-1])
        with open(os.path.join(tmp, "tokens.csv"), "w") as f:
            f.write("position,id,token\r\n")
            for pos, (t, lab) in enumerate(zip(ids, labels)):
                f.write("%d,%d,%s\r\n" % (pos, t, lab))
        with open(os.path.join(tmp, "predictions.csv"), "w") as f:
            f.write("position,rank,id,token,logit,prob\r\n")
            for pos in range(len(ids)):
                for r in range(10):
                    t = int(i[pos, r])
                    f.write("%d,%d,%d,%s,%.8g,%.8g\r\n" % (pos, r + 1, t, enc.decode([t]),
                                                           v[pos, r], p[pos, r]))
        with open(os.path.join(tmp, "loss.csv"), "w") as f:
            f.write("position,next_id,next_token,prob,loss\r\n")
            for pos in range(len(ids) - 1):
                f.write("%d,%d,%s,%.8g,%.8g\r\n" % (pos, ids[pos + 1], labels[pos + 1],
                                                    probs[pos, ids[pos + 1]], loss[pos]))
        with open(os.path.join(tmp, "lens.csv"), "w") as f:
            f.write("layer,position,id,token,prob\r\n")
            for L, rec in enumerate(recs):
                lp = torch.softmax(layer_norm(rec["block_output"], W["ln_f.weight"],
                                              W["ln_f.bias"]) @ wte.t(), dim=-1)
                pv, pi = lp.max(dim=-1)
                for pos in range(len(ids)):
                    t = int(pi[pos])
                    f.write("%d,%d,%d,%s,%.8g\r\n" % (L, pos, t, enc.decode([t]), pv[pos]))
        shutil.rmtree(a.out, ignore_errors=True)
        os.rename(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
