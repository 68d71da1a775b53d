#!/usr/bin/python3
"""Trains attnscope's small English model: a GPT-2 (4 layers, 8 heads, d 128, 128 positions)
on English prose that Debian packages ship. README.md beside this file explains the recipe.

Run with Debian's python3-torch (CPU, two threads):

    /usr/bin/python3 models/english/train.py            # the shipped files, from nothing
    /usr/bin/python3 models/english/train.py --steps 50 --out /tmp/e1   # a short run

From nothing means: it installs the Debian packages the corpus comes from (apt-get, only the
missing ones), builds the corpus into corpus/ beside itself (not committed), holds out 5% of
the documents, trains a byte-level BPE tokenizer on the rest, trains the model and writes
model.safetensors, config.json, vocab.json, merges.txt and train.log into --out (default: this
folder). Fixed seeds and two threads: a second run writes the same files.
"""

import argparse
import hashlib
import heapq
import html.parser
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import time
import unicodedata

# Idle OpenMP threads sleep instead of spinning: on a shared, busy 2-core machine a spinning
# thread steals the core its partner needs. (Set before torch loads libgomp; no effect on results.)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

PACKAGES = ["fortunes", "wordnet-base", "python3-doc", "python3-regex", "python3-torch"]
FORTUNES = "/usr/share/games/fortunes"
WORDNET = "/usr/share/wordnet"
PYDOC = "/usr/share/doc/python3-doc/html"

SEED = 20261126
THREADS = 2
HELDOUT = 0.05
VOCAB_SIZE = 1024            # 256 bytes + 767 merges + <|endoftext|>; why not 2,048: README, attempt 9
EOT = "<|endoftext|>"
N_LAYER, N_HEAD, N_EMBD, N_CTX = 4, 8, 128, 128
LN_EPS = 1e-5
BATCH = 16
STEPS = 8000
LR, WARMUP = 5e-3, 100
WEIGHT_DECAY = 0.1
REPEAT_P = 0.5               # share of training sequences given a repeated span
REPEAT_LEN = (16, 64)        # its length in tokens
EVAL_EVERY = 100

GPT2_PATTERN = (r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


# ---- packages ----------------------------------------------------------------------------------

def ensure_packages():
    missing = []
    for p in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    if missing:
        print("installing", " ".join(missing), flush=True)
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + missing,
                       check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


# ---- the corpus --------------------------------------------------------------------------------

def clean(text):
    """One cleaning for every source: NFC, overstrikes (x\\bx) removed, tabs to spaces, other
    control characters dropped, trailing spaces cut, runs of spaces inside a line to one (the
    indentation at a line's start is kept to at most 4), at most one blank line in a row."""
    text = unicodedata.normalize("NFC", text)
    text = re.sub(r".\x08", "", text)
    text = text.replace("\t", " ").replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(c for c in text if c == "\n" or unicodedata.category(c)[0] != "C")
    lines = []
    for line in text.split("\n"):
        line = line.rstrip()
        body = line.lstrip(" ")
        indent = min(len(line) - len(body), 4)
        lines.append(" " * indent + re.sub(r" {2,}", " ", body))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return text.strip("\n")


def letters_share(text):
    return sum(c.isalpha() for c in text) / max(1, sum(not c.isspace() for c in text))


def fortune_docs():
    """Every fortune of the fortunes package but ascii-art (pictures, not prose); a document is
    one fortune. Fortunes with fewer than 60% letters among their visible characters (drawings,
    tables) are dropped."""
    docs = []
    for name in sorted(os.listdir(FORTUNES)):
        path = os.path.join(FORTUNES, name)
        if "." in name or name == "ascii-art" or not os.path.isfile(path):
            continue
        raw = open(path, "rb").read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        for i, f in enumerate(re.split(r"\n%\n", text.replace("\r\n", "\n"))):
            f = clean(f.strip("%\n"))
            if len(f) >= 20 and letters_share(f) >= 0.6:
                docs.append(("fortunes", "%s#%d" % (name, i), f))
    return docs


def wordnet_docs():
    """Every synset of WordNet 3.0 (data.noun, .verb, .adj, .adv); a document is one gloss
    entry: 'lemma, lemma: definition; "example"'. Underscores become spaces, the (a)/(p)/(ip)
    position markers of adjectives are dropped."""
    docs = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(WORDNET, "data." + pos), encoding="utf-8") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue
                head, gloss = line.split("|", 1)
                fields = head.split()
                count = int(fields[3], 16)
                lemmas = []
                for k in range(count):
                    w = re.sub(r"\((a|p|ip)\)$", "", fields[4 + 2 * k]).replace("_", " ")
                    if w not in lemmas:
                        lemmas.append(w)
                text = clean("%s: %s" % (", ".join(lemmas), gloss.strip()))
                docs.append(("wordnet", "%s/%s" % (pos, fields[0]), text))
    return docs


class Paragraphs(html.parser.HTMLParser):
    """The prose of a Sphinx page: the text of every <p> inside the body (not code, which is in
    <pre>, nor navigation, headers or tables of contents outside <p>)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth_body, self.in_p, self.skip, self.out, self.cur = 0, 0, 0, [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div" and a.get("role") == "main":
            self.depth_body = 1
        elif tag == "div" and self.depth_body:
            self.depth_body += 1
        if tag == "p" and self.depth_body:
            self.in_p, self.cur = 1, []
        if tag in ("pre", "script", "style"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth_body:
            self.depth_body -= 1
        if tag in ("pre", "script", "style"):
            self.skip = max(0, self.skip - 1)
        if tag == "p" and self.in_p:
            self.in_p = 0
            p = re.sub(r"\s+", " ", "".join(self.cur)).strip()
            if p:
                self.out.append(p)

    def handle_data(self, data):
        if self.in_p and not self.skip:
            self.cur.append(data)


def pydoc_docs():
    """Python's documentation (python3-doc's HTML); a document is one page, its paragraphs
    (only <p> text: no code blocks, tables or navigation) joined by blank lines. Paragraphs of
    under 40 characters or under 60% letters are dropped; pages with no prose left too."""
    docs = []
    for root, dirs, files in os.walk(PYDOC, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("_"))
        for name in sorted(files):
            if not name.endswith(".html") or name in ("genindex.html", "search.html",
                                                      "py-modindex.html") \
                    or name.startswith("genindex-"):
                continue
            path = os.path.join(root, name)
            p = Paragraphs()
            p.feed(open(path, encoding="utf-8").read())
            paras = [clean(x) for x in p.out]
            paras = [x for x in paras if len(x) >= 40 and letters_share(x) >= 0.6]
            if paras:
                docs.append(("pydoc", os.path.relpath(path, PYDOC), "\n\n".join(paras)))
    return docs


def build_corpus():
    """The documents of the three sources, split by document: per source, a seeded shuffle
    puts 5% of the documents in held-out. Writes corpus/{train,heldout}.jsonl and returns
    (train, heldout), lists of (source, name, text)."""
    os.makedirs(CORPUS, exist_ok=True)
    train, held = [], []
    for docs in (fortune_docs(), wordnet_docs(), pydoc_docs()):
        order = list(range(len(docs)))
        random.Random(SEED).shuffle(order)
        cut = round(len(docs) * HELDOUT)
        hold = set(order[:cut])
        for i, d in enumerate(docs):
            (held if i in hold else train).append(d)
    for name, docs in (("train", train), ("heldout", held)):
        with open(os.path.join(CORPUS, name + ".jsonl"), "w", encoding="utf-8") as f:
            for s, n, t in docs:
                f.write(json.dumps({"source": s, "name": n, "text": t}, ensure_ascii=False) + "\n")
    return train, held


def load_corpus(which):
    with open(os.path.join(CORPUS, which + ".jsonl"), encoding="utf-8") as f:
        return [(d["source"], d["name"], d["text"]) for d in map(json.loads, f)]


# ---- the tokenizer: byte-level BPE in GPT-2's files ----------------------------------------------

def bytes_to_unicode():
    """GPT-2's byte -> printable character table (a space is 'Ġ'), in GPT-2's order."""
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


def pretokenizer():
    import regex
    return regex.compile(GPT2_PATTERN)


def train_bpe(texts, n_merges):
    """Byte-level BPE: pieces from GPT-2's regex, then repeatedly the most frequent adjacent
    pair (ties: the smaller pair of byte strings) merged, n_merges times. Returns the merges as
    pairs of byte strings, in order."""
    pat = pretokenizer()
    counts = {}
    for t in texts:
        for piece in pat.findall(t):
            counts[piece] = counts.get(piece, 0) + 1
    words = [list(w.encode("utf-8")) for w in sorted(counts)]
    freq = [counts[w] for w in sorted(counts)]
    sym = [bytes([b]) for b in range(256)]
    pair_count, where = {}, {}

    def add(i, sign):
        w, f = words[i], freq[i]
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] = pair_count.get((a, b), 0) + sign * f
            if sign > 0:
                where.setdefault((a, b), set()).add(i)

    for i in range(len(words)):
        add(i, 1)
    heap = [(-c, sym[a], sym[b], a, b) for (a, b), c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        negc, _, _, a, b = heapq.heappop(heap)
        if pair_count.get((a, b), 0) != -negc or negc == 0:
            continue  # stale
        new = len(sym)
        sym.append(sym[a] + sym[b])
        merges.append((sym[a], sym[b]))
        touched = set()
        for i in sorted(where.pop((a, b), ())):
            w = words[i]
            if not any(w[k] == a and w[k + 1] == b for k in range(len(w) - 1)):
                continue
            add(i, -1)
            out, k = [], 0
            while k < len(w):
                if k < len(w) - 1 and w[k] == a and w[k + 1] == b:
                    out.append(new)
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            words[i] = out
            add(i, 1)
            touched.update(zip(out, out[1:]))
        pair_count.pop((a, b), None)
        for p in touched:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, sym[p[0]], sym[p[1]], p[0], p[1]))
    return merges


class Tokenizer:
    """GPT-2's encoder over our vocab.json/merges.txt: each regex piece's bytes merged by lowest
    rank first, as encoder.py and attnscope's bpe.c do."""

    def __init__(self, vocab, merges):
        b2u = bytes_to_unicode()
        self.u2b = {c: b for b, c in b2u.items()}
        self.vocab = vocab
        self.eot = vocab[EOT]
        self.inv = {i: t for t, i in vocab.items()}
        self.byte_id = [vocab[b2u[b]] for b in range(256)]
        self.rank = {}
        for r, (a, b) in enumerate(merges):
            self.rank[(vocab[a], vocab[b])] = (r, vocab[a + b])
        self.pat = pretokenizer()
        self.cache = {}

    def encode_piece(self, piece):
        ids = self.cache.get(piece)
        if ids is not None:
            return ids
        ids = [self.byte_id[b] for b in piece.encode("utf-8")]
        while len(ids) > 1:
            best = None
            for k in range(len(ids) - 1):
                r = self.rank.get((ids[k], ids[k + 1]))
                if r is not None and (best is None or r[0] < best[0]):
                    best = r
            if best is None:
                break
            out, k = [], 0
            while k < len(ids):
                if k < len(ids) - 1 and self.rank.get((ids[k], ids[k + 1])) == best:
                    out.append(best[1])
                    k += 2
                else:
                    out.append(ids[k])
                    k += 1
            ids = out
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        out = []
        for piece in self.pat.findall(text):
            out.extend(self.encode_piece(piece))
        return out

    def decode(self, ids):
        return bytes(self.u2b[c] for i in ids if i != self.eot for c in self.inv[i]).decode(
            "utf-8", errors="replace")

    def stream(self, docs):
        """The documents' tokens, each followed by <|endoftext|>."""
        out = []
        for _, _, t in docs:
            out.extend(self.encode(t))
            out.append(self.eot)
        return out


def make_tokenizer_files(merges):
    b2u = bytes_to_unicode()
    spell = lambda bs: "".join(b2u[b] for b in bs)
    vocab = {}
    for c in b2u.values():
        vocab[c] = len(vocab)
    sm = [(spell(a), spell(b)) for a, b in merges]
    for a, b in sm:
        vocab[a + b] = len(vocab)
    vocab[EOT] = len(vocab)
    return vocab, sm


def load_tokenizer(folder):
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(l.split(" ")) for l in f.read().split("\n")[1:] if l]
    return Tokenizer(vocab, merges)


# ---- the model: GPT-2 ---------------------------------------------------------------------------

def build_model(vocab_size, q_first=False, sinusoidal=False):
    """GPT-2 of the sizes above. models/english-small's two choices: q_first divides the query
    by sqrt(head_dim) before its product with the keys (one division of n x head_dim, not of
    n x n); sinusoidal starts the learned positions as the sinusoidal table x 0.02 (a head that
    looks a fixed distance back has that offset as one linear map from the start)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d, std, proj_std = N_EMBD, 0.02, 0.02 / math.sqrt(2 * N_LAYER)
            self.ln_1 = nn.LayerNorm(d, eps=LN_EPS)
            self.c_attn_w = nn.Parameter(torch.randn(d, 3 * d) * std)   # Conv1D: (in, out)
            self.c_attn_b = nn.Parameter(torch.zeros(3 * d))
            self.c_proj_w = nn.Parameter(torch.randn(d, d) * proj_std)
            self.c_proj_b = nn.Parameter(torch.zeros(d))
            self.ln_2 = nn.LayerNorm(d, eps=LN_EPS)
            self.c_fc_w = nn.Parameter(torch.randn(d, 4 * d) * std)
            self.c_fc_b = nn.Parameter(torch.zeros(4 * d))
            self.mlp_proj_w = nn.Parameter(torch.randn(4 * d, d) * proj_std)
            self.mlp_proj_b = nn.Parameter(torch.zeros(d))
            self.keep = False
            self.att = None

        def forward(self, x):
            B, n, d = x.shape
            hd = d // N_HEAD
            q, k, v = (self.ln_1(x) @ self.c_attn_w + self.c_attn_b).split(d, dim=2)
            q, k, v = (t.view(B, n, N_HEAD, hd).transpose(1, 2) for t in (q, k, v))
            if q_first:
                scores = (q / math.sqrt(hd)) @ k.transpose(-1, -2)
            else:
                scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
            att = scores.masked_fill(causal, float("-inf")).softmax(-1)
            if self.keep:
                self.att = att
            y = (att @ v).transpose(1, 2).reshape(B, n, d)
            x = x + y @ self.c_proj_w + self.c_proj_b
            h = F.gelu(self.ln_2(x) @ self.c_fc_w + self.c_fc_b, approximate="tanh")
            return x + h @ self.mlp_proj_w + self.mlp_proj_b

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Parameter(torch.randn(vocab_size, N_EMBD) * 0.02)
            if sinusoidal:
                pos = torch.arange(N_CTX, dtype=torch.float32)[:, None]
                freq = torch.exp(torch.arange(0, N_EMBD, 2, dtype=torch.float32) *
                                 (-math.log(10000.0) / N_EMBD))
                table = torch.zeros(N_CTX, N_EMBD)
                table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
                self.wpe = nn.Parameter(table * 0.02)
            else:
                self.wpe = nn.Parameter(torch.randn(N_CTX, N_EMBD) * 0.01)
            self.h = nn.ModuleList(Block() for _ in range(N_LAYER))
            self.ln_f = nn.LayerNorm(N_EMBD, eps=LN_EPS)

        def keep_attention(self, on):
            for b in self.h:
                b.keep, b.att = on, None

        def forward(self, ids):  # (B, n) -> logits (B, n, vocab); the LM head is wte (tied)
            x = F.embedding(ids, self.wte) + self.wpe[: ids.shape[1]]
            for b in self.h:
                x = b(x)
            return self.ln_f(x) @ self.wte.T

    return GPT2()


def gpt2_tensors(model):
    out = {"wte.weight": model.wte, "wpe.weight": model.wpe,
           "ln_f.weight": model.ln_f.weight, "ln_f.bias": model.ln_f.bias}
    for L, b in enumerate(model.h):
        p = "h.%d." % L
        out.update({p + "ln_1.weight": b.ln_1.weight, p + "ln_1.bias": b.ln_1.bias,
                    p + "attn.c_attn.weight": b.c_attn_w, p + "attn.c_attn.bias": b.c_attn_b,
                    p + "attn.c_proj.weight": b.c_proj_w, p + "attn.c_proj.bias": b.c_proj_b,
                    p + "ln_2.weight": b.ln_2.weight, p + "ln_2.bias": b.ln_2.bias,
                    p + "mlp.c_fc.weight": b.c_fc_w, p + "mlp.c_fc.bias": b.c_fc_b,
                    p + "mlp.c_proj.weight": b.mlp_proj_w, p + "mlp.c_proj.bias": b.mlp_proj_b})
    return out


def load_model(folder):
    """The shipped model: config.json and model.safetensors (F16 widened to F32)."""
    import numpy as np
    import torch
    global N_LAYER, N_HEAD, N_EMBD, N_CTX
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    N_LAYER, N_HEAD, N_EMBD, N_CTX = c["n_layer"], c["n_head"], c["n_embd"], c["n_positions"]
    raw = open(os.path.join(folder, "model.safetensors"), "rb").read()
    hlen = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + hlen])
    data = raw[8 + hlen:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dt = {"F16": np.float16, "F32": np.float32}[info["dtype"]]
        tensors[name] = torch.from_numpy(
            np.frombuffer(data[a:b], dtype=dt).astype(np.float32).reshape(info["shape"]))
    model = build_model(c["vocab_size"])
    with torch.no_grad():
        for name, p in gpt2_tensors(model).items():
            p.copy_(tensors[name])
    return model


def save_safetensors(path, tensors, dtype="F32"):
    """Tensors in F32 (or F16, which the loader widens), names sorted, header padded to 8 bytes."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        t = t.half() if dtype == "F16" else t.float()
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(path + ".tmp", path)


# ---- head scores, as attnscope's src/engine/headscore.c defines them ----------------------------

def head_scores(att, ids):
    """att: (B, H, n, n) softmax weights, ids: (B, n). Over rows 1..n-1, averaged over the batch:
    previous = mean A[i, i-1]; first = mean A[i, 0]; induction = mean A[i, j+1] over the rows
    whose token occurred before, j its most recent earlier position. Returns three (H,) lists."""
    import torch
    B, H, n, _ = att.shape
    rows = torch.arange(1, n)
    prev = att[:, :, rows, rows - 1].mean((0, 2))
    first = att[:, :, rows, 0].mean((0, 2))
    ind = torch.zeros(H)
    for b in range(B):
        last, total, count = {}, torch.zeros(H), 0
        for i in range(n):
            t = int(ids[b, i])
            if t in last and i >= 1:
                total += att[b, :, i, last[t] + 1]
                count += 1
            last[t] = i
        ind += total / max(count, 1)
    return prev.tolist(), (ind / B).tolist(), first.tolist()


def fmt(v):
    return " ".join("%.2f" % x for x in v)


def probes(held_ids, gen_seed):
    """Fixed held-out probes: 16 windows of N_CTX tokens spread over the held-out stream, and 16
    repeated passages: 40 held-out tokens, then the same 40 again."""
    import torch
    held = torch.tensor(held_ids, dtype=torch.long)
    starts = torch.linspace(0, len(held) - N_CTX - 1, 16).long()
    windows = torch.stack([held[s:s + N_CTX + 1] for s in starts])
    rng = random.Random(gen_seed)
    reps = []
    for _ in range(16):
        s = rng.randrange(0, len(held) - 40)
        reps.append(torch.cat([held[s:s + 40], held[s:s + 40]]))
    return windows, torch.stack(reps)


def evaluate(model, windows, reps):
    import torch
    import torch.nn.functional as F
    model.eval()
    with torch.no_grad():
        logits = model(windows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))
        model.keep_attention(True)
        model(windows[:, :128])
        per_layer = []
        for b in model.h:
            prev, _, first = head_scores(b.att, windows[:, :128])
            per_layer.append((prev, first))
        logits = model(reps)
        again = F.cross_entropy(logits[:, 40:-1].reshape(-1, logits.shape[-1]),
                                reps[:, 41:].reshape(-1))
        for L, b in enumerate(model.h):
            _, ind, _ = head_scores(b.att, reps)
            per_layer[L] = per_layer[L] + (ind,)
        model.keep_attention(False)
    model.train()
    return loss.item(), again.item(), per_layer


# ---- training -----------------------------------------------------------------------------------

def batch(gen, train_ids, size):
    """size windows of N_CTX + 1 tokens at random places of the training stream. A share
    REPEAT_P of them get a repeated span: L tokens (16..64) from position s are copied over
    positions t.. t+L-1, t >= s + L, so the window holds a passage and, later, the passage
    again; predicting the copy rewards finding the earlier occurrence and reading what followed
    (an induction head)."""
    import torch
    n = N_CTX + 1
    starts = torch.randint(0, len(train_ids) - n, (size,), generator=gen)
    x = torch.stack([train_ids[s:s + n] for s in starts.tolist()]).long()
    rep = torch.rand(size, generator=gen) < REPEAT_P
    L = torch.randint(REPEAT_LEN[0], REPEAT_LEN[1] + 1, (size,), generator=gen)
    u = torch.rand(size, 2, generator=gen)
    for i in range(size):
        if not rep[i]:
            continue
        l = int(L[i])
        s = int(u[i, 0] * (n - 2 * l + 1))             # 0 .. n - 2l
        t = s + l + int(u[i, 1] * (n - s - 2 * l + 1))  # s + l .. n - l
        x[i, t:t + l] = x[i, s:s + l].clone()
    return x


def lr_at(step):
    """Linear warmup, then inverse square root: the rate never depends on the number of steps,
    so the files saved at step k of a long run are those of a run with --steps k."""
    return LR * min((step + 1) / WARMUP, math.sqrt(WARMUP / (step + 1)))


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]


def write(folder, name, text):
    with open(os.path.join(folder, name) + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(os.path.join(folder, name) + ".tmp", os.path.join(folder, name))


def corpus_line(name, docs):
    """train.log's line of one split: each source's documents and megabytes (a document's bytes
    and its separator), and the total."""
    by = {}
    for s, _, t in docs:
        n, b = by.get(s, (0, 0))
        by[s] = (n + 1, b + len(t.encode("utf-8")) + 1)
    return ("corpus %-8s " % name + "  ".join("%s %d docs %.2f MB" % (s, n, b / 1e6)
                                              for s, (n, b) in sorted(by.items())) +
            "  total %.2f MB" % (sum(b for _, b in by.values()) / 1e6))


def say_probes(say, step, ema, probes, t1):
    """train.log's lines of one evaluation: the losses, then each layer's head scores."""
    hl, again, heads = probes
    say("step %5d  train %.4f  held-out %.4f  repeat-2nd %.4f" % (
        step, ema if ema is not None else float("nan"), hl, again),
        "%.0f s, %.3f steps/s" % (time.time() - t1, step / max(1e-9, time.time() - t1)))
    for L, (prev, first, ind) in enumerate(heads):
        say("  L%d previous %s | induction %s | first %s" % (L, fmt(prev), fmt(ind), fmt(first)))


def write_tokenizer(out, merges):
    """vocab.json and merges.txt of merges, written to out; returns (vocab, merges as spelt,
    the Tokenizer)."""
    vocab, smerges = make_tokenizer_files(merges)
    write(out, "vocab.json", json.dumps(vocab, ensure_ascii=False) + "\n")
    write(out, "merges.txt", "#version: 0.2\n" + "".join("%s %s\n" % m for m in smerges))
    return vocab, smerges, Tokenizer(vocab, smerges)


def token_streams(tok, train_docs, held_docs, seed, say, t0):
    """The training stream (int16; the documents shuffled with seed, so the sources interleave)
    and the held-out one (a list), with train.log's line of their sizes."""
    import torch
    order = list(range(len(train_docs)))
    random.Random(seed).shuffle(order)
    train_ids = torch.tensor(tok.stream([train_docs[i] for i in order]), dtype=torch.int16)
    held_ids = tok.stream(held_docs)
    n_bytes = sum(len(t.encode("utf-8")) for _, _, t in train_docs)
    say("tokens: train %d (%.2f bytes/token), held-out %d" % (
        len(train_ids), n_bytes / (len(train_ids) - len(train_docs)), len(held_ids)),
        "%.0f s" % (time.time() - t0))
    return train_ids, held_ids


def optimizer(model, lr, weight_decay):
    """AdamW (0.9, 0.95). Matrices decay, except the position table: decayed, it shrinks against
    the token embeddings, and a head that attends by position (the previous token) stays
    blurred."""
    import torch
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and n != "wpe"]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or n == "wpe"]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--out", default=HERE, help="folder for the model files (default: here)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ensure_packages()
    import torch
    import torch.nn.functional as F
    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)

    log = []

    def say(line, clock=""):
        print(line + ("  " + clock if clock else ""), flush=True)
        log.append(line)  # the log without clocks: a second run writes the same file

    t0 = time.time()
    train_docs, held_docs = build_corpus()
    for name, docs in (("train", train_docs), ("held-out", held_docs)):
        say(corpus_line(name, docs))
    say("corpus built", "%.0f s" % (time.time() - t0))

    merges = train_bpe([t for _, _, t in train_docs], VOCAB_SIZE - 257)
    vocab, smerges, tok = write_tokenizer(args.out, merges)
    assert len(vocab) == VOCAB_SIZE
    say("tokenizer: %d merges, vocab %d" % (len(smerges), len(vocab)),
        "%.0f s" % (time.time() - t0))
    train_ids, held_ids = token_streams(tok, train_docs, held_docs, SEED + 1, say, t0)

    model = build_model(len(vocab))
    opt = optimizer(model, LR, WEIGHT_DECAY)
    say("model: %d layers, %d heads, d %d, %d positions, %d parameters (LM head tied to wte)" % (
        N_LAYER, N_HEAD, N_EMBD, N_CTX, sum(p.numel() for p in model.parameters())))
    say("training: steps of %d x %d tokens, AdamW lr %g (warmup %d, then 1/sqrt), "
        "wd %g, repeated spans in %.0f%% of windows" % (
            BATCH, N_CTX, LR, WARMUP, WEIGHT_DECAY, 100 * REPEAT_P))
    windows, reps = probes(held_ids, SEED + 2)
    gen = torch.Generator().manual_seed(SEED + 3)
    t1, ema = time.time(), None
    for step in range(args.steps + 1):
        if step % EVAL_EVERY == 0 or step == args.steps:
            say_probes(say, step, ema, evaluate(model, windows, reps), t1)
            if step > 0:
                save(args.out, model, list(log))
        if step == args.steps:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x = batch(gen, train_ids, BATCH)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
    wall = time.time() - t1
    print("training wall %.0f s, %.3f steps/s" % (wall, args.steps / wall), flush=True)



def save(out, model, log):
    """The model files as of now, and train.log up to here (written at every evaluation, so a
    run stopped early leaves the files of its last evaluation)."""
    save_safetensors(os.path.join(out, "model.safetensors"), gpt2_tensors(model))
    write(out, "config.json", json.dumps({
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "bos_token_id": VOCAB_SIZE - 1, "eos_token_id": VOCAB_SIZE - 1,
        "layer_norm_epsilon": LN_EPS, "model_type": "gpt2", "n_ctx": N_CTX, "n_embd": N_EMBD,
        "n_head": N_HEAD, "n_inner": None, "n_layer": N_LAYER, "n_positions": N_CTX,
        "tie_word_embeddings": True, "torch_dtype": "float32", "vocab_size": VOCAB_SIZE},
        indent=2) + "\n")
    for f in ("model.safetensors", "vocab.json", "merges.txt"):
        log.append("sha256 %s %s" % (f, sha(os.path.join(out, f))))
    write(out, "train.log", "\n".join(log) + "\n")


if __name__ == "__main__":
    main()
