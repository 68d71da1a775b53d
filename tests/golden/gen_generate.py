#!/usr/bin/python3
"""Greedy generation as PyTorch computes it: repeated full forward passes, no cache.

Run with Debian's python3 (torch, numpy; gen_gpt2.py's and gen_families.py's helpers):

    /usr/bin/python3 tests/golden/gen_generate.py

It rewrites tests/golden/generate/<case>.csv byte for byte the same on every run:

    step,position,id,prob,margin,zmax

one row per generated token: the token the highest logit names at the last position of the
whole sequence so far (ties: the lower id, as torch.argmax on CPU), its probability
softmax(logits) at temperature 1, the gap between the two highest logits, and the largest
|logit| (the probability's tolerance scales with it: test_interp.c's 2 p e Z). Each step is a
fresh forward pass over every token, so nothing of attnscope's KV-cache path is assumed. A case
stops after MAX_NEW tokens, at the model's context, or at its eos_token_id, as `attnscope
generate` does. A gap under MIN_MARGIN would make the golden hang on the last bits of a logit:
the script refuses to write it.

The cases: GPT-2 (tests/golden/gpt2, random weights, context 32), the Llama family with GQA
(tests/golden/families/llama-gqa, RoPE, an untied lm_head), and the three shipped models
(models/english, models/english-small in F16, models/induction). Their prompts are in CASES; the tokenizers are OpenAI's
encoder.py as gen_gpt2.py ports it.
"""

import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_families as gf  # noqa: E402
import gen_gpt2 as g2  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "golden", "generate")
MAX_NEW = 32
MIN_MARGIN = 1e-3

# name, kind, model folder, tokenizer folder, prompt
CASES = [
    ("gpt2", "gpt2", "tests/golden/gpt2", "tests/golden/gpt2", "The cat sat"),
    ("llama-gqa", "llama", "tests/golden/families/llama-gqa", "tests/golden/gpt2",
     "The river runs to the sea"),
    ("english", "gpt2", "models/english", "models/english", "Once upon a time"),
    ("english-small", "gpt2", "models/english-small", "models/english-small", "Once upon a time"),
    ("induction", "gpt2", "models/induction", "models/induction",
     "fish moon king door gold rain lake tree wolf sand fish moon king"),
]


def gpt2_logits(folder, cfg):
    """f(ids) -> the logits of the last position, GPT-2's pass (gen_gpt2.GPT2Model)."""
    W = g2.load_checkpoint(os.path.join(folder, "model.safetensors"))
    tensors, _ = g2.read_safetensors(os.path.join(folder, "model.safetensors"))
    model = g2.GPT2Model(cfg)
    sd = model.state_dict()
    model.load_state_dict({k: (torch.from_numpy(W[k].copy()) if k in W else v)
                           for k, v in sd.items()})
    model.eval()
    head = tensors.get("lm_head.weight", W["wte.weight"])
    head = torch.from_numpy(np.ascontiguousarray(head, dtype=np.float32))

    def logits(ids):
        with torch.no_grad():
            final = model(torch.tensor([ids], dtype=torch.long), cfg["n_layer"], 0)[0]
            return (final[-1] @ head.t()).double().numpy()
    return logits, cfg["n_positions"]


def llama_logits(folder, cfg):
    W, _ = g2.read_safetensors(os.path.join(folder, "model.safetensors"))
    c = next(c for c in gf.CASES if c["name"] == os.path.basename(folder))
    assert all(cfg[k] == v for k, v in c["cfg"].items())

    def logits(ids):
        with torch.no_grad():
            _, _, lg = gf.llama_forward(c, W, ids)
            return lg[-1].double().numpy()
    return logits, cfg["max_position_embeddings"]


def eos_ids(cfg):
    e = cfg.get("eos_token_id")
    return set() if e is None else set(e if isinstance(e, list) else [e])


def generate(name, kind, folder, tok_folder, prompt):
    with open(os.path.join(ROOT, folder, "config.json")) as f:
        cfg = json.load(f)
    make = gpt2_logits if kind == "gpt2" else llama_logits
    logits, context = make(os.path.join(ROOT, folder), cfg)
    ids = g2.get_encoder(os.path.join(ROOT, tok_folder)).encode(prompt)
    eos = eos_ids(cfg)
    rows = []
    for step in range(1, MAX_NEW + 1):
        lg = logits(ids)
        order = np.lexsort((np.arange(len(lg)), -lg))  # highest first, ties to the lower id
        best, second = int(order[0]), int(order[1])
        margin = float(lg[best] - lg[second])
        if margin < MIN_MARGIN:
            raise SystemExit("%s: step %d: the two highest logits are %.3g apart" %
                             (name, step, margin))
        p = np.exp(lg - lg[best])
        prob = float(p[best] / p.sum())
        rows.append((step, len(ids), best, prob, margin, float(np.abs(lg).max())))
        if best in eos:
            break
        ids.append(best)
        if len(ids) >= context:
            break
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".csv"), "w", encoding="utf-8", newline="") as f:
        f.write("step,position,id,prob,margin,zmax\n")
        for step, pos, i, prob, margin, zmax in rows:
            f.write("%d,%d,%d,%.9g,%.6g,%.6g\n" % (step, pos, i, prob, margin, zmax))
    return prompt, rows


def main():
    torch.set_num_threads(1)
    with open(os.path.join(OUT, "prompts.tsv"), "w", encoding="utf-8") as f:
        f.write("case\tmodel\tprompt\n")
        for name, kind, folder, tok, prompt in CASES:
            _, rows = generate(name, kind, folder, tok, prompt)
            f.write("%s\t%s\t%s\n" % (name, folder, prompt))
            print("%s: %d tokens, the smallest gap %.3g" %
                  (name, len(rows), min(r[4] for r in rows)))


if __name__ == "__main__":
    main()
