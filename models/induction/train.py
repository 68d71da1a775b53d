#!/usr/bin/python3
"""Trains attnscope's shipped induction model: a 2-layer attention-only GPT-2 on words that repeat.

Run with Debian's python3-torch (CPU, two threads, a few minutes):

    /usr/bin/python3 models/induction/train.py

It rewrites, beside itself: model.safetensors, config.json, vocab.json, merges.txt and
train.log (the loss curve and the head scores). README.md explains the recipe and the result.

The model is GPT-2's architecture (so attnscope's `arch: gpt2` loads it as is) with one head a
layer and every MLP weight zero: each block adds only its attention, the "attention-only"
transformer of the circuits papers. One head a layer makes the circuit exactly the two heads the
papers draw: a previous-token head in layer 0 feeding an induction head in layer 1. (With two or
four heads a layer, every layer-1 head became an induction head, and none stood out.)

The words are GPT-2's own tokens: WORDS below, each a single token with and without its leading
space in GPT-2's vocabulary. vocab.json and merges.txt are the part of GPT-2's tokenizer that
spells them (the 256 byte tokens, then the merges GPT-2 uses on the way to each word, in GPT-2's
order), so attnscope's GPT-2 tokenizer turns "cat dog sun" into the ids the model was trained on.
"""

import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GPT2_TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "gpt2-tokenizer")

SEED = 20261123
THREADS = 1  # small matrices: a second thread only adds waiting
N_LAYER, N_EMBD, N_HEAD, N_POSITIONS = 2, 64, 1, 48
LN_EPS = 1e-5
STEPS, BATCH, LR = 3000, 64, 1e-3
# Token embeddings start loud (std 0.5, not GPT-2's 0.02). With quiet ones, layer 1 learned to
# copy from layer 0's output instead of from the tokens, and attended two after the earlier
# occurrence rather than one: a working circuit, but not the induction head of the papers.
WTE_STD = 0.5
COPY_PREV2 = 0.4  # chance that a filler word repeats the word two back ("cat dog cat")

WORDS = ("cat dog sun red tree book fish bird moon star rain king ship road door rice gold "
         "wind fire lake rock sand leaf seed rose wolf bear frog horse apple bread cake").split()


# ---- the tokenizer: GPT-2's, cut down to WORDS -------------------------------------------------

def bytes_to_unicode():
    """GPT-2's byte -> printable character table (a space is 'Ġ')."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = keep[:]
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, map(chr, chars)))


def merge_path(word, rank):
    """The merges GPT-2's BPE applies to one pre-token, in order, and the final pieces."""
    parts, used = list(word), []
    while len(parts) > 1:
        best = min(range(len(parts) - 1),
                   key=lambda i: rank.get((parts[i], parts[i + 1]), math.inf))
        pair = (parts[best], parts[best + 1])
        if pair not in rank:
            break
        used.append(pair)
        merged, i = [], 0
        while i < len(parts):
            if i < len(parts) - 1 and (parts[i], parts[i + 1]) == pair:
                merged.append(parts[i] + parts[i + 1])
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return parts, used


def build_tokenizer():
    """vocab (token -> id), merges (in GPT-2's rank order), and the ids of each word: bare (the
    first word of a text) and with its space."""
    with open(os.path.join(GPT2_TOKENIZER, "merges.txt"), encoding="utf-8") as f:
        all_merges = [tuple(line.split()) for line in f.read().split("\n")[1:] if line]
    rank = {m: i for i, m in enumerate(all_merges)}
    needed = set()
    for w in WORDS:
        for spelled in (w, "Ġ" + w):
            parts, used = merge_path(spelled, rank)
            if parts != [spelled]:
                sys.exit("%r is not one GPT-2 token" % spelled)
            needed.update(used)
    # A subset of GPT-2's merges in GPT-2's order takes every word down the same path.
    merges = sorted(needed, key=rank.get)
    vocab = {}
    for c in bytes_to_unicode().values():
        vocab[c] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    bare = [vocab[w] for w in WORDS]
    spaced = [vocab["Ġ" + w] for w in WORDS]
    return vocab, merges, bare, spaced


# ---- the model: GPT-2, attention only -----------------------------------------------------------

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        d = N_EMBD
        self.ln_1 = nn.LayerNorm(d, eps=LN_EPS)
        self.c_attn_w = nn.Parameter(torch.randn(d, 3 * d) * 0.02)  # Conv1D: x @ W, (in, out)
        self.c_attn_b = nn.Parameter(torch.zeros(3 * d))
        self.c_proj_w = nn.Parameter(torch.randn(d, d) * 0.02)
        self.c_proj_b = nn.Parameter(torch.zeros(d))
        self.att = None

    def forward(self, x):  # x: (B, n, d)
        B, n, d = x.shape
        hd = d // N_HEAD
        q, k, v = (self.ln_1(x) @ self.c_attn_w + self.c_attn_b).split(d, dim=2)
        q, k, v = (t.view(B, n, N_HEAD, hd).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        self.att = scores.masked_fill(causal, float("-inf")).softmax(-1)  # (B, heads, n, n)
        ctx = (self.att @ v).transpose(1, 2).reshape(B, n, d)
        # + the MLP, whose weights are all zero: gelu(ln_2(x) @ 0 + 0) @ 0 + 0 adds nothing
        return x + ctx @ self.c_proj_w + self.c_proj_b


class Model(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.wte = nn.Parameter(torch.randn(vocab_size, N_EMBD) * WTE_STD)
        self.wpe = nn.Parameter(torch.randn(N_POSITIONS, N_EMBD) * 0.02)
        self.h = nn.ModuleList(Block() for _ in range(N_LAYER))
        self.ln_f = nn.LayerNorm(N_EMBD, eps=LN_EPS)
        # Its own unembedding (config.json says tie_word_embeddings: false): tied to the loud
        # wte, training was several times slower to find the circuit.
        self.lm_head = nn.Parameter(torch.randn(vocab_size, N_EMBD) * 0.02)

    def forward(self, ids):  # ids: (B, n) -> logits (B, n, vocab)
        x = self.wte[ids] + self.wpe[: ids.shape[1]]
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.lm_head.T


# ---- the data -----------------------------------------------------------------------------------

def batch(gen, bare, spaced, size):
    """size texts of N_POSITIONS words. Filler words are random, and each repeats the word two
    back with chance COPY_PREV2; then, from a random point t on, the text copies itself from a
    random earlier start s (t - s between 6 and t): the only way to predict the copy is to find
    the current word earlier and read what followed it. Returns word indices (size, n)."""
    n, W = N_POSITIONS, len(WORDS)
    x = torch.randint(0, W, (size, n), generator=gen)
    again = torch.rand(size, n, generator=gen) < COPY_PREV2
    for i in range(2, n):
        x[:, i] = torch.where(again[:, i], x[:, i - 2], x[:, i])
    t = torch.randint(n // 4, 3 * n // 4 + 1, (size,), generator=gen)
    s = (torch.rand(size, generator=gen) * (t - 6 + 1).float()).long()
    rows = torch.arange(size)
    for i in range(n // 4, n):
        x[:, i] = torch.where(i >= t, x[rows, (s + i - t).clamp(min=0)], x[:, i])
    return x


def repeated(gen, size):
    """The standard induction probe, and the shape of the shipped scene: N_POSITIONS / 2 distinct
    random words, then the same words again. Returns word indices (size, n)."""
    half = N_POSITIONS // 2
    first = torch.stack([torch.randperm(len(WORDS), generator=gen)[:half] for _ in range(size)])
    return torch.cat([first, first], dim=1)


def to_ids(words, bare, spaced):
    ids = spaced[words]
    ids[:, 0] = bare[words[:, 0]]
    return ids


# ---- head scores, as `attnscope heads` defines them ---------------------------------------------

def head_scores(att, ids):
    """att: (B, heads, n, n), ids: (B, n). previous: mean A[i, i-1] over i >= 1; induction: mean
    A[i, j+1] over the i whose token occurred before, j its last earlier occurrence."""
    B, H, n, _ = att.shape
    prev = att[:, :, torch.arange(1, n), torch.arange(0, n - 1)].mean((0, 2))
    ind, count = torch.zeros(H), 0
    for b in range(B):
        last = {}
        for i in range(n):
            tok = int(ids[b, i])
            if tok in last:
                ind += att[b, :, i, last[tok] + 1]
                count += 1
            last[tok] = i
    return prev, ind / max(count, 1)


# ---- files --------------------------------------------------------------------------------------

def save_safetensors(path, tensors):
    """F32 tensors, names sorted, header padded with spaces to a multiple of 8."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(path + ".tmp", path)


def write(name, text):
    with open(os.path.join(HERE, name) + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(os.path.join(HERE, name) + ".tmp", os.path.join(HERE, name))


def gpt2_tensors(model):
    d = N_EMBD
    out = {"wte.weight": model.wte, "wpe.weight": model.wpe,
           "ln_f.weight": model.ln_f.weight, "ln_f.bias": model.ln_f.bias,
           "lm_head.weight": model.lm_head}
    for L, blk in enumerate(model.h):
        p = "h.%d." % L
        out.update({p + "ln_1.weight": blk.ln_1.weight, p + "ln_1.bias": blk.ln_1.bias,
                    p + "attn.c_attn.weight": blk.c_attn_w, p + "attn.c_attn.bias": blk.c_attn_b,
                    p + "attn.c_proj.weight": blk.c_proj_w, p + "attn.c_proj.bias": blk.c_proj_b,
                    p + "ln_2.weight": torch.ones(d), p + "ln_2.bias": torch.zeros(d),
                    p + "mlp.c_fc.weight": torch.zeros(d, 4 * d),
                    p + "mlp.c_fc.bias": torch.zeros(4 * d),
                    p + "mlp.c_proj.weight": torch.zeros(4 * d, d),
                    p + "mlp.c_proj.bias": torch.zeros(d)})
    return out


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)
    gen = torch.Generator().manual_seed(SEED + 1)
    vocab, merges, bare, spaced = build_tokenizer()
    bare, spaced = torch.tensor(bare), torch.tensor(spaced)
    model = Model(len(vocab))
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.98), weight_decay=0.0)
    log, t0 = [], time.time()
    probe = to_ids(repeated(torch.Generator().manual_seed(SEED + 2), 64), bare, spaced)
    for step in range(STEPS + 1):
        ids = to_ids(batch(gen, bare, spaced, BATCH), bare, spaced)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 250 == 0 or step == STEPS:
            with torch.no_grad():
                logits = model(probe)
                half = N_POSITIONS // 2
                # the loss on the second run: in-context learning, or not
                again = F.cross_entropy(logits[:, half:-1].reshape(-1, logits.shape[-1]),
                                        probe[:, half + 1:].reshape(-1))
                prev, _ = head_scores(model.h[0].att, probe)
                _, ind = head_scores(model.h[1].att, probe)
            line = "step %5d  loss %.4f  second run %.4f  L0 previous %s  L1 induction %s" % (
                step, loss.item(), again.item(), " ".join("%.2f" % v for v in prev),
                " ".join("%.2f" % v for v in ind))
            print("%s  %.0f s" % (line, time.time() - t0), flush=True)
            log.append(line)  # the log without the clock: a second run writes the same file

    save_safetensors(os.path.join(HERE, "model.safetensors"), gpt2_tensors(model))
    write("config.json", json.dumps({
        "activation_function": "gelu_new", "layer_norm_epsilon": LN_EPS, "model_type": "gpt2",
        "n_ctx": N_POSITIONS, "n_embd": N_EMBD, "n_head": N_HEAD, "n_inner": None,
        "n_layer": N_LAYER, "n_positions": N_POSITIONS, "tie_word_embeddings": False,
        "vocab_size": len(vocab)}, indent=2) + "\n")
    write("vocab.json", json.dumps(vocab, ensure_ascii=False) + "\n")
    write("merges.txt", "#version: 0.2\n" + "".join("%s %s\n" % m for m in merges))
    write("train.log", "\n".join(log) + "\n")


if __name__ == "__main__":
    main()
