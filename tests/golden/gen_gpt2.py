#!/usr/bin/python3
"""A tiny GPT-2 for attnscope's checkpoint and BPE tests, and PyTorch goldens of every layer.

Run with Debian's python3 (torch 1.13, yaml, and python3-regex for GPT-2's \\p{L} pattern):

    /usr/bin/python3 tests/golden/gen_gpt2.py

It rewrites tests/golden/gpt2/ (except scenes/, which it reads) byte for byte the same on every
run:

  vocab.json, merges.txt   a byte-level BPE vocabulary in Hugging Face GPT-2 format, learned
                           here (150 merges) from the small English CORPUS below
  tiny-ids.tsv             sentences and the ids OpenAI's encoder.py (ported literally below)
                           gives them with that vocabulary
  model.safetensors        a 3-layer GPT-2 (n_embd 32, 4 heads, 32 positions), F32, GPT2Model
  config.json              names without prefix
  prefixed-f16/            the same weights rounded to F16, "transformer." names, the attn.bias /
                           attn.masked_bias buffers and a tied lm_head.weight
  bf16/                    the same weights rounded to BF16, no prefix
  goldens/<scene>/         every stage of every layer for each scenes/*.yaml, in attnscope's
                           multi-layer export layout

The model is written the way GPT-2 / nanoGPT write it (Conv1D = addmm with an (in, out) weight,
c_attn split into Q|K|V, heads by view/transpose, causal masked_fill, softmax, c_proj, gelu_new,
pre-norm residuals, ln_f). Every stage is cross-checked against a float64 numpy recomputation
that uses column indices instead of views. Nothing here looks at the C code. README.md beside the
outputs lists the decisions.
"""

import csv
import fnmatch
import glob
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import regex as re  # the regex module: \p{L} and \p{N}, as OpenAI's encoder.py
import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "gpt2")

torch.set_num_threads(1)

SEED = 20250601
N_MERGES = 150
N_LAYER, N_EMBD, N_HEAD, N_POSITIONS = 3, 32, 4, 32
LN_EPS = 1e-5
# The float64 cross-check: |torch - float64| <= tol * max(1, |float64|). "stage": every stage
# recomputed from the torch value of its own input (float32 rounding of that one stage);
# "chain": the whole model recomputed in float64 from the stored weights (the float32 noise of
# every earlier stage carried through three layers, amplified by the layer norms).
TOL = {"stage": 1e-5, "chain": 1e-4}


class GenError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# OpenAI gpt-2 src/encoder.py, ported literally (only the file reading is ours)


def bytes_to_unicode():
    """
    Returns list of utf-8 byte and a corresponding list of unicode strings.
    The reversible bpe codes work on unicode strings.
    """
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    cs = [chr(n) for n in cs]
    return dict(zip(bs, cs))


def get_pairs(word):
    """Return set of symbol pairs in a word.

    Word is represented as tuple of symbols (symbols being variable-length strings).
    """
    pairs = set()
    prev_char = word[0]
    for char in word[1:]:
        pairs.add((prev_char, char))
        prev_char = char
    return pairs


PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class Encoder:
    def __init__(self, encoder, bpe_merges, errors='replace'):
        self.encoder = encoder
        self.decoder = {v: k for k, v in self.encoder.items()}
        self.errors = errors  # how to handle errors in decoding
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        self.cache = {}

        # Should haved added re.IGNORECASE so BPE merges can happen for capitalized versions
        # of contractions
        self.pat = re.compile(PAT)

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)

        if not pairs:
            return token

        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float('inf')))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break

                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            new_word = tuple(new_word)
            word = new_word
            if len(word) == 1:
                break
            else:
                pairs = get_pairs(word)
        word = ' '.join(word)
        self.cache[token] = word
        return word

    def encode(self, text):
        bpe_tokens = []
        for token in re.findall(self.pat, text):
            token = ''.join(self.byte_encoder[b] for b in token.encode('utf-8'))
            bpe_tokens.extend(self.encoder[bpe_token] for bpe_token in self.bpe(token).split(' '))
        return bpe_tokens

    def decode(self, tokens):
        text = ''.join([self.decoder[token] for token in tokens])
        text = bytearray([self.byte_decoder[c] for c in text]).decode('utf-8', errors=self.errors)
        return text


def get_encoder(folder):
    with open(os.path.join(folder, 'vocab.json'), 'r', encoding='utf-8') as f:
        encoder = json.load(f)
    with open(os.path.join(folder, 'merges.txt'), 'r', encoding="utf-8") as f:
        bpe_data = f.read()
    bpe_merges = [tuple(merge_str.split()) for merge_str in bpe_data.split('\n')[1:-1]]
    return Encoder(encoder=encoder, bpe_merges=bpe_merges)


# ---------------------------------------------------------------------------------------------
# The vocabulary: standard BPE training over GPT-2 pre-tokenised pieces of CORPUS

CORPUS = """\
The cat sat on the mat by the door. The cat was small and grey, and the mat was red. Every
morning the cat waited at the door for the old man who lived in the house at the end of the
street. The man would open the door, and the cat would walk in as if the house were hers.

It's a quiet town. There are two shops, a school, a church and a small station where the
train stops at seven in the morning and at six in the evening. The people of the town don't
hurry. They say that the train will wait for them, and they're right: it has waited for them
for more than 100 years.

In the evening the old man sat in his chair by the window and read the paper. The cat sat on
his knees. She didn't read, but she watched the words as he turned the pages. "You'd make a
good reader," he said to her, "if you could only hold the paper." The cat's answer was to
close her eyes.

We've talked about the weather all week. On Monday it rained, on Tuesday it rained harder,
and on Wednesday the river by the station came up over the road. I'm sure the water will go
down soon, and then we'll walk along the river again, as we always have, to the bridge and
back.

The children of the school learn to read and to write, to count to 1000 and to draw the
map of the town. They learn that the river runs to the sea, that the sea is salt, and that
the sun comes up in the east. At the end of the day they run out of the school and down the
street to the river, where they throw stones into the water and watch the circles grow.

There was a time when the town had a market on the square. Farmers came in from the hills
with eggs and cheese and apples, and the square was full of noise from the morning until
the evening. Now the square is quiet, but on the first Saturday of the month the market
comes back, and the town remembers what it was.
"""


def train_bpe(text, n_merges):
    """The standard loop: count the pieces, then merge the most frequent adjacent pair, n times.
    Ties go to the pair whose (first, second) strings sort first."""
    pat = re.compile(PAT)
    be = bytes_to_unicode()
    freq = {}
    for piece in re.findall(pat, text):
        w = tuple(be[b] for b in piece.encode("utf-8"))
        freq[w] = freq.get(w, 0) + 1
    words = sorted(freq.items())
    merges = []
    for _ in range(n_merges):
        counts = {}
        for w, c in words:
            for p in zip(w, w[1:]):
                counts[p] = counts.get(p, 0) + c
        if not counts:
            raise GenError("the corpus ran out of pairs")
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < 2:
            raise GenError("merge %d would be learned from a single occurrence" % len(merges))
        merges.append(best)
        a, b = best
        new_words = []
        for w, c in words:
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words.append((tuple(out), c))
        words = new_words
    return merges


def build_vocab(merges):
    """GPT-2's order: the 256 byte symbols in bytes_to_unicode's order (printable bytes first),
    then one token per merge in merge order, then <|endoftext|>."""
    vocab = {}
    for ch in bytes_to_unicode().values():
        vocab[ch] = len(vocab)
    for a, b in merges:
        if a + b in vocab:
            raise GenError("merge %s %s makes a token that already exists" % (a, b))
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return vocab


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def write_vocab(vocab, merges):
    # One line in id order, as the original encoder.json; non-ASCII symbols written as UTF-8
    # (ensure_ascii=False, as Hugging Face's save_vocabulary); `"` and `\` escaped by json.
    write_text(os.path.join(OUT, "vocab.json"),
               json.dumps(vocab, ensure_ascii=False, separators=(", ", ": ")) + "\n")
    write_text(os.path.join(OUT, "merges.txt"),
               "#version: 0.2\n" + "".join("%s %s\n" % m for m in merges))


# ---------------------------------------------------------------------------------------------
# Token labels (the C side's rule): a token's bytes as UTF-8 text; when they are not valid UTF-8
# on their own, every byte of the token is written <XX> (uppercase hex).

BYTE_DECODER = {v: k for k, v in bytes_to_unicode().items()}


def token_bytes(tok):
    return bytes(BYTE_DECODER[c] for c in tok)


def token_label(tok):
    b = token_bytes(tok)
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "".join("<%02X>" % x for x in b)


# ---------------------------------------------------------------------------------------------
# The ids table

SENTENCES = [
    "The cat sat on the mat.",
    "the cat sat on the mat",
    "THE CAT SAT ON THE MAT",
    "The cat's hat was red, and the dog's wasn't.",
    "It's here. I'm there. You're late. We've gone. She'll come. He'd know. Don't!",
    "IT'S LOUD. THE CAT'S HAT. I'M HERE. Don'T",
    "'s 't 're 've 'm 'll 'd",
    "rock'n'roll and ''quotes'' and the cats' toys",
    "There are 100 years, 1000 days, 7 trains and 3.14 pies in 2024.",
    "Call 555-0199 at 10:30 or at 6pm; 12345678901234567890.",
    "  two leading spaces",
    "trailing spaces   ",
    "multiple   spaces   between    words",
    "tab\tseparated\tvalues\t",
    "line one\nline two\n\nline four\n",
    " \n leading space then newline",
    "   ",
    " ",
    "x",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 d\u00e9j\u00e0 vu",
    "\u00c9cole \u00fcber Stra\u00dfe \u00f1and\u00fa",
    "\u732b\u304c\u30de\u30c3\u30c8\u306e\u4e0a\u306b\u5ea7\u3063\u305f\u3002",
    "the cat \u732b and the mat \u57ab",
    "The cat \U0001f431 sat on the mat \U0001f9f6 and smiled \U0001f600!",
    "\U0001f44d\U0001f3fd thumbs, \U0001f468\u200d\U0001f469\u200d\U0001f467 family",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0440\u0443\u0441\u0441\u043a\u0438\u0439 "
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "non\u00a0breaking\u00a0space and an ideographic\u3000space",
    "\u00b2\u00b3 \u0663\u0664 \u2167 superscripts, Arabic-Indic digits and a Roman numeral",
    "cafe\u0301 (a combining accent) and caf\u00e9",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "word\u3000\u3000 the end\u00a0 and\u2003the",
    "symbols: @#$%^&*()[]{} <|endoftext|> ~~~ ...!?",
    "back\\slash and \"double quotes\" and a\ttab",
    "Mixed   \t\n  whitespace\n\t end",
    "The old man read the paper by the window in the evening.",
]


def escape_tsv(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def write_ids_table(enc):
    lines = []
    for s in SENTENCES:
        if "\r" in s:
            raise GenError("the table cannot hold a carriage return")
        ids = enc.encode(s)
        if enc.decode(ids) != s:
            raise GenError("encode/decode round trip failed for %r" % s)
        lines.append("%s\t%s\n" % (escape_tsv(s), " ".join(str(i) for i in ids)))
    write_text(os.path.join(OUT, "tiny-ids.tsv"), "".join(lines))


# ---------------------------------------------------------------------------------------------
# The model, as GPT-2 (Hugging Face's modeling_gpt2) / nanoGPT write it


class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a linear layer whose weight is stored (in, out)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class Attention(nn.Module):
    def __init__(self, cfg, rec, layer_idx):
        super().__init__()
        self.n_embd, self.n_head = cfg["n_embd"], cfg["n_head"]
        # GPT2Config's scaling keys, as modeling_gpt2.py's GPT2Attention reads them
        self.scale_attn_weights = cfg.get("scale_attn_weights", True)
        self.by_layer = cfg.get("scale_attn_by_inverse_layer_idx", False)
        self.reorder = cfg.get("reorder_and_upcast_attn", False)
        self.layer_idx = layer_idx
        assert self.n_embd % self.n_head == 0
        self.c_attn = Conv1D(3 * self.n_embd, self.n_embd)
        self.c_proj = Conv1D(self.n_embd, self.n_embd)
        self.attn_dropout = nn.Dropout(0.0)
        n = cfg["n_positions"]
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))
        self.rec = rec
        # TransformerLens's hook_z: a function of the heads' contexts (B, nh, T, hs) that
        # returns what c_proj gets instead (gen_interp.py ablates and patches heads with it)
        self.hook_z = None

    def forward(self, x):
        B, T, C = x.size()
        hd = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        if self.reorder:
            # _upcast_and_reordered_attn: the scale is baddbmm's alpha, one factor in double
            alpha = 1.0
            if self.scale_attn_weights:
                alpha /= float(v.size(-1)) ** 0.5
            if self.by_layer:
                alpha /= float(self.layer_idx + 1)
            out = torch.empty(B * self.n_head, T, T, dtype=torch.float32)
            scaled = torch.baddbmm(out, q.reshape(-1, T, hd).float(),
                                   k.transpose(-1, -2).reshape(-1, hd, T).float(), beta=0,
                                   alpha=alpha).reshape(B, self.n_head, T, T)
        else:
            # _attn (transformers 4's eager path): / sqrt(head_dim), then / (layer_idx + 1)
            scaled = scores / math.sqrt(hd) if self.scale_attn_weights else scores
            if self.by_layer:
                scaled = scaled / float(self.layer_idx + 1)
        masked = scaled.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        weights = F.softmax(masked, dim=-1)
        dropped = self.attn_dropout(weights)
        ctx = dropped @ v  # (B, nh, T, hs)
        if self.hook_z is not None:
            ctx = self.hook_z(ctx)
        y = ctx.transpose(1, 2).contiguous().view(B, T, C)
        out = self.c_proj(y)
        # Kobayashi et al. 2020: || a_ij v_j W_O^h ||, W_O^h the rows of c_proj's (in, out)
        # weight that head h's columns of y meet; the (T, T, C) vectors, then their norms
        vw = [v[0, h] @ self.c_proj.weight[h * hd:(h + 1) * hd, :] for h in range(self.n_head)]
        self.rec["heads"] = [{
            "queries": q[0, h], "keys": k[0, h], "values": v[0, h], "scores": scores[0, h],
            "scaled": scaled[0, h], "masked": masked[0, h], "weights": weights[0, h],
            "dropout": dropped[0, h], "context": ctx[0, h],
            "weighted_norm": (dropped[0, h].unsqueeze(-1) * vw[h].unsqueeze(0)).norm(dim=-1)}
            for h in range(self.n_head)]
        self.rec["context"] = y[0]
        self.rec["output"] = out[0]
        return out


def gelu_new(x):
    """Hugging Face's NewGELUActivation (GPT-2's gelu)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class MLP(nn.Module):
    def __init__(self, cfg, rec):
        super().__init__()
        self.c_fc = Conv1D(4 * cfg["n_embd"], cfg["n_embd"])
        self.c_proj = Conv1D(cfg["n_embd"], 4 * cfg["n_embd"])
        self.dropout = nn.Dropout(0.0)
        self.rec = rec

    def forward(self, x):
        h = self.c_fc(x)
        a = gelu_new(h)
        o = self.dropout(self.c_proj(a))
        self.rec.update(ffn_hidden=h[0], ffn_activated=a[0], ffn_out=o[0])
        return o


class Block(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.rec = {}
        self.ln_1 = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])
        self.attn = Attention(cfg, self.rec, layer_idx)
        self.ln_2 = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])
        self.mlp = MLP(cfg, self.rec)

    def forward(self, x):
        self.rec["inputs"] = x[0]
        n1 = self.ln_1(x)
        x = x + self.attn(n1)
        n2 = self.ln_2(x)
        self.rec.update(norm1=n1[0], residual1=x[0], norm2=n2[0])
        x = x + self.mlp(n2)
        self.rec.update(residual2=x[0], block_output=x[0])
        return x


class GPT2Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([Block(cfg, L) for L in range(cfg["n_layer"])])
        self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])

    def forward(self, ids, layers, offset):
        T = ids.size(1)
        pos = torch.arange(offset, offset + T, dtype=torch.long).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.h[:layers]:
            x = block(x)
        return self.ln_f(x)


def lm_head_weight(vocab_size):
    """The untied unembedding: N(0, 0.2), torch.Generator seeded SEED + 1."""
    g = torch.Generator().manual_seed(SEED + 1)
    return (torch.randn(vocab_size, N_EMBD, generator=g) * 0.2).numpy().astype(np.float32)


def hf_config(vocab_size, extra=False, tied=True):
    cfg = {"activation_function": "gelu_new", "layer_norm_epsilon": LN_EPS, "model_type": "gpt2",
           "n_ctx": N_POSITIONS, "n_embd": N_EMBD, "n_head": N_HEAD, "n_inner": None,
           "n_layer": N_LAYER, "n_positions": N_POSITIONS, "vocab_size": vocab_size}
    if not tied:
        cfg["tie_word_embeddings"] = False
    if extra:  # the other keys a Hugging Face export carries, as in gpt2's own config.json
        cfg.update({
            "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "bos_token_id": vocab_size - 1,
            "embd_pdrop": 0.1, "eos_token_id": vocab_size - 1, "initializer_range": 0.02,
            "reorder_and_upcast_attn": False, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx":
            False, "scale_attn_weights": True, "summary_activation": None,
            "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
            "summary_type": "cls_index", "summary_use_proj": True,
            "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
            "torch_dtype": "float16", "transformers_version": "4.30.2", "use_cache": True})
    return cfg


def hf_config_v5(vocab_size):
    """config.json as transformers 5's save_pretrained writes it (the values that differ from
    GPT2Config's defaults, dtype for torch_dtype, no n_ctx), with the scaling keys changed."""
    return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
            "bos_token_id": vocab_size - 1, "dtype": "bfloat16", "eos_token_id": vocab_size - 1,
            "layer_norm_epsilon": LN_EPS, "model_type": "gpt2", "n_embd": N_EMBD,
            "n_head": N_HEAD, "n_inner": None, "n_layer": N_LAYER, "n_positions": N_POSITIONS,
            "reorder_and_upcast_attn": True, "scale_attn_by_inverse_layer_idx": True,
            "scale_attn_weights": False, "transformers_version": "5.0.0", "use_cache": True,
            "vocab_size": vocab_size}


def init_weights(model):
    """torch.manual_seed(SEED), then in named_parameters() order: LayerNorm weights 1 + N(0, 0.1),
    LayerNorm and Conv1D biases N(0, 0.1), every other weight (wte, wpe, Conv1D) N(0, 0.2)."""
    torch.manual_seed(SEED)
    lns = {name for name, m in model.named_modules() if isinstance(m, nn.LayerNorm)}
    with torch.no_grad():
        for name, p in model.named_parameters():
            owner, kind = name.rsplit(".", 1)
            if owner in lns and kind == "weight":
                p.copy_(1.0 + torch.randn(p.shape) * 0.1)
            elif kind == "bias":
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 0.2)


# ---------------------------------------------------------------------------------------------
# safetensors, written and read by hand

ST_DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2),
             "BOOL": (np.bool_, 1)}


def f32_to_bf16_bits(a):
    """Round to nearest even (no NaN here)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    if not np.isfinite(a).all():
        raise GenError("non-finite weight")
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return r.astype(np.uint16)


def bf16_bits_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> (dtype, numpy array of that dtype's storage). Header: JSON with the names
    sorted, padded with spaces to a multiple of 8 bytes; data in the same order, contiguous."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        dt, arr = tensors[name]
        if arr.dtype != np.dtype(ST_DTYPES[dt][0]):
            raise GenError("%s: %s stored as %s" % (name, arr.dtype, dt))
        raw = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> float32 numpy array (F16 and BF16 widened), plus the raw header."""
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen].decode("utf-8"))
    body = data[8 + hlen:]
    out, end = {}, 0
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        np_dt, size = ST_DTYPES[e["dtype"]]
        count = int(np.prod(e["shape"], dtype=np.int64))
        if b - a != count * size:
            raise GenError("%s: %s has %d bytes for %d values" % (path, name, b - a, count))
        raw = np.frombuffer(body[a:b], dtype=np.dtype(np_dt).newbyteorder("<"))
        if e["dtype"] == "BF16":
            arr = bf16_bits_to_f32(raw)
        else:
            arr = raw.astype(np.float32)
        out[name] = arr.reshape(e["shape"])
        end = max(end, b)
    if end != len(body):
        raise GenError("%s: %d bytes after the last tensor" % (path, len(body) - end))
    return out, header


def hf_state(model):
    """GPT2Model's parameter names (no prefix) -> float32 numpy; the causal buffers dropped."""
    return {name: p.detach().numpy().astype(np.float32) for name, p in model.named_parameters()}


def write_checkpoints(model, vocab_size):
    st = hf_state(model)
    write_safetensors(os.path.join(OUT, "model.safetensors"),
                      {k: ("F32", v) for k, v in st.items()})
    write_config(os.path.join(OUT, "config.json"), hf_config(vocab_size))

    # F16, as model.half() rounds (checked against numpy's round to nearest even), with the
    # "transformer." prefix, the attention buffers and a tied lm_head
    f16 = {}
    for k, v in st.items():
        h = torch.from_numpy(v).half().numpy()
        if not np.array_equal(h.view(np.uint16), v.astype(np.float16).view(np.uint16)):
            raise GenError("torch and numpy round %s to F16 differently" % k)
        f16["transformer." + k] = ("F16", h)
    tril = np.tril(np.ones((N_POSITIONS, N_POSITIONS), dtype=np.float16)).reshape(
        1, 1, N_POSITIONS, N_POSITIONS)
    for L in range(N_LAYER):
        f16["transformer.h.%d.attn.bias" % L] = ("F16", tril)
        f16["transformer.h.%d.attn.masked_bias" % L] = ("F16", np.array(-1e4, dtype=np.float16))
    f16["lm_head.weight"] = f16["transformer.wte.weight"]
    write_safetensors(os.path.join(OUT, "prefixed-f16", "model.safetensors"), f16,
                      metadata={"format": "pt"})
    write_config(os.path.join(OUT, "prefixed-f16", "config.json"), hf_config(vocab_size, True))

    # BF16, round to nearest even (checked against torch's conversion)
    bf = {}
    for k, v in st.items():
        bits = f32_to_bf16_bits(v)
        tb = torch.from_numpy(v).bfloat16().view(torch.int16).numpy().view(np.uint16)
        if not np.array_equal(bits, tb):
            raise GenError("torch and numpy round %s to BF16 differently" % k)
        bf[k] = ("BF16", bits)
    write_safetensors(os.path.join(OUT, "bf16", "model.safetensors"), bf)
    write_config(os.path.join(OUT, "bf16", "config.json"), hf_config(vocab_size))
    # the same BF16 weights under transformers 5's config.json of a GPT-2 scaled as Stanford
    # CRFM's were: no / sqrt(head_dim), layer L's scores / (L + 1), reordered and upcast
    write_safetensors(os.path.join(OUT, "scaled", "model.safetensors"), bf)
    write_config(os.path.join(OUT, "scaled", "config.json"), hf_config_v5(vocab_size))

    # Untied: lm_head.weight a matrix of its own (tie_word_embeddings: false), from a generator
    # of its own so the weights above stay what they were; F32 without prefix, and F16 with the
    # "transformer." prefix as GPT2LMHeadModel saves it (lm_head.weight has none)
    lm_head = lm_head_weight(vocab_size)
    untied = {k: ("F32", v) for k, v in st.items()}
    untied["lm_head.weight"] = ("F32", lm_head)
    write_safetensors(os.path.join(OUT, "untied", "model.safetensors"), untied)
    write_config(os.path.join(OUT, "untied", "config.json"), hf_config(vocab_size, tied=False))
    untied16 = {"transformer." + k: ("F16", torch.from_numpy(v).half().numpy())
                for k, v in st.items()}
    untied16["lm_head.weight"] = ("F16", torch.from_numpy(lm_head).half().numpy())
    write_safetensors(os.path.join(OUT, "untied-f16", "model.safetensors"), untied16,
                      metadata={"format": "pt"})
    write_config(os.path.join(OUT, "untied-f16", "config.json"),
                 hf_config(vocab_size, tied=False))

    # read back: every variant holds the weights it should, as stored
    back, _ = read_safetensors(os.path.join(OUT, "model.safetensors"))
    assert set(back) == set(st) and all(np.array_equal(back[k], st[k]) for k in st)
    back, _ = read_safetensors(os.path.join(OUT, "prefixed-f16", "model.safetensors"))
    assert all(np.array_equal(back["transformer." + k], st[k].astype(np.float16).astype(np.float32))
               for k in st)
    back, _ = read_safetensors(os.path.join(OUT, "bf16", "model.safetensors"))
    assert all(np.array_equal(back[k], bf16_bits_to_f32(f32_to_bf16_bits(st[k]))) for k in st)


def write_config(path, cfg):
    write_text(path, json.dumps(cfg, indent=2, sort_keys=True) + "\n")


# ---------------------------------------------------------------------------------------------
# Scenes and their goldens


def load_checkpoint(path):
    """GPT2Model's names, float32 as stored; the 'transformer.' prefix removed; buffers and
    lm_head ignored (as attnscope does)."""
    tensors, _ = read_safetensors(path)
    out = {}
    for name, a in tensors.items():
        if name.startswith("transformer."):
            name = name[len("transformer."):]
        if name == "lm_head.weight" or name.endswith(".attn.bias") or \
                name.endswith(".attn.masked_bias"):
            continue
        out[name] = a
    return out


class Scene:
    def __init__(self, path):
        self.path = path
        self.stem = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        base = os.path.dirname(path)
        if doc.get("version") != 1:
            raise GenError("%s: version" % path)
        self.text = str(doc["text"])
        tok = doc["tokenizer"]
        if tok.get("kind") != "gpt2":
            raise GenError("%s: tokenizer kind" % path)
        vocab_path = os.path.normpath(os.path.join(base, tok["vocab"]))
        merges_path = os.path.normpath(os.path.join(base, tok["merges"]))
        if os.path.dirname(vocab_path) != os.path.dirname(merges_path):
            raise GenError("%s: vocab and merges in different folders" % path)
        self.encoder = get_encoder(os.path.dirname(vocab_path))
        model = doc["model"]
        if model.get("arch") != "gpt2":
            raise GenError("%s: arch" % path)
        self.model_path = os.path.normpath(os.path.join(base, model["file"]))
        with open(os.path.join(os.path.dirname(self.model_path), "config.json")) as f:
            self.config = json.load(f)
        self.layers = int(doc.get("layers", self.config["n_layer"]))
        self.heads = int((doc.get("attention") or {}).get("heads", self.config["n_head"]))
        self.offset = int((doc.get("positional") or {}).get("offset", 0))
        if not 1 <= self.layers <= self.config["n_layer"]:
            raise GenError("%s: layers" % path)
        if self.config["n_embd"] % self.heads:
            raise GenError("%s: heads" % path)
        self.ids = self.encoder.encode(self.text)
        self.tokens = [self.encoder.decoder[i] for i in self.ids]
        self.labels = [token_label(t) for t in self.tokens]
        self.n = len(self.ids)
        if not 1 <= self.n <= self.config["n_positions"] - self.offset:
            raise GenError("%s: %d tokens at offset %d" % (path, self.n, self.offset))


def run_scene(sc):
    cfg = dict(sc.config, n_head=sc.heads)
    model = GPT2Model(cfg)
    W = load_checkpoint(sc.model_path)
    sd = model.state_dict()
    want = {k for k in sd if not k.endswith(".attn.bias")}
    if set(W) != want:
        raise GenError("%s: checkpoint names %s" % (sc.model_path, sorted(set(W) ^ want)))
    model.load_state_dict({k: (torch.from_numpy(W[k].copy()) if k in W else v)
                           for k, v in sd.items()})
    model.eval()
    with torch.no_grad():
        ids = torch.tensor([sc.ids], dtype=torch.long)
        final = model(ids, sc.layers, sc.offset)[0]
    recs = [dict(model.h[L].rec) for L in range(sc.layers)]
    return W, recs, final


def fmt(v):
    v = np.float32(v)
    if np.isneginf(v):
        return "-inf"
    if not np.isfinite(v):
        raise GenError("non-finite golden value %r" % v)
    return "%.9g" % float(v)


def write_rows(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        wr = csv.writer(f, lineterminator="\r\n")
        wr.writerow(header)
        for r in rows:
            wr.writerow(r)


def write_csv(path, a, row_labels, col_labels=None):
    a = np.asarray(a.detach().numpy() if torch.is_tensor(a) else a, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    rows, cols = a.shape
    if col_labels is None:
        col_labels = ["d%d" % j for j in range(cols)]
    assert len(row_labels) == rows and len(col_labels) == cols, path
    write_rows(path, ["token"] + list(col_labels),
               [[row_labels[i]] + [fmt(a[i, j]) for j in range(cols)] for i in range(rows)])


HEAD_STAGES = ("queries", "keys", "values", "context")
SQUARE_STAGES = ("scores", "scaled", "masked", "weights", "dropout", "weighted_norm")
LAYER_STAGES = ("inputs", "norm1", "context", "output", "residual1", "norm2", "ffn_hidden",
                "ffn_activated", "ffn_out", "residual2", "block_output")


def layer_params(W, L):
    p = "h.%d." % L
    d = W[p + "ln_1.weight"].shape[0]  # n_embd of this checkpoint (a shipped one is wider)
    qkv, bqkv = W[p + "attn.c_attn.weight"], W[p + "attn.c_attn.bias"]
    return {
        "W_qkv": qkv, "b_qkv": bqkv,
        "W_query": qkv[:, :d], "W_key": qkv[:, d:2 * d], "W_value": qkv[:, 2 * d:],
        "b_query": bqkv[:d], "b_key": bqkv[d:2 * d], "b_value": bqkv[2 * d:],
        "out": W[p + "attn.c_proj.weight"], "out_bias": W[p + "attn.c_proj.bias"],
        "ffn_W1": W[p + "mlp.c_fc.weight"], "ffn_b1": W[p + "mlp.c_fc.bias"],
        "ffn_W2": W[p + "mlp.c_proj.weight"], "ffn_b2": W[p + "mlp.c_proj.bias"],
        "norm1_weight": W[p + "ln_1.weight"], "norm1_bias": W[p + "ln_1.bias"],
        "norm2_weight": W[p + "ln_2.weight"], "norm2_bias": W[p + "ln_2.bias"],
    }


# The scenes of a shipped model whose full goldens would be tens of MB (100+ tokens, 32 heads):
# their goldens keep to what models/<name>/README.md promises, listed in scope.txt (test_goldens
# then asks for exactly these): the attention weights of every head of every layer, each
# layer's input and block output, the final norm, and the top 10 at the last position.
SCOPED_MODELS = {"english"}
SCOPE = ["tokens.csv", "layer*/inputs.csv", "layer*/head*/weights.csv", "layer*/block_output.csv",
         "final_norm.csv", "predictions.csv"]
TIE = 1e-5


def in_scope(rel, scope):
    return scope is None or any(fnmatch.fnmatchcase(rel, p) and
                                rel.count("/") == p.count("/") for p in scope)


def write_predictions(sc, W, final):
    """predictions.csv: position, rank, id, logit of the top 10 at the last position (logits =
    final norm . wte^T, the tied unembedding); ties to the lower id, and a near-tie (closer than
    1e-5 relative) in the top 11 is refused, so no golden depends on how a tie breaks."""
    logits = (final[-1:].double() @ torch.from_numpy(W["wte.weight"]).double().T)[0]
    logits32 = (final[-1:] @ torch.from_numpy(W["wte.weight"]).T)[0]
    order = sorted(range(len(logits)), key=lambda i: (-float(logits[i]), i))[:11]
    for a, b in zip(order, order[1:]):
        if abs(float(logits[a]) - float(logits[b])) <= TIE * abs(float(logits[a])):
            raise GenError("%s: near-tie in the top 11 at the last position" % sc.stem)
    write_rows(os.path.join(sc.golden_dir, "predictions.csv"), ["position", "rank", "id", "logit"],
               [[str(sc.n - 1), str(r + 1), str(i), fmt(logits32[i])]
                for r, i in enumerate(order[:10])])


def write_goldens(sc, W, recs, final, scope=None):
    out_dir = sc.golden_dir
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    labels = sc.labels
    if scope is not None:
        os.makedirs(out_dir)
        with open(os.path.join(out_dir, "scope.txt"), "w") as f:
            f.write("# the goldens of this scene (gen_gpt2.py's SCOPE; test_goldens reads it)\n" +
                    "".join(p + "\n" for p in scope))
        write_predictions(sc, W, final)

    def put(path, *args):  # write_csv, for the files in scope
        if in_scope(os.path.relpath(path, out_dir), scope):
            write_csv(path, *args)

    write_rows(os.path.join(out_dir, "tokens.csv"), ["position", "id", "token"],
               [[str(i), str(t), lab] for i, (t, lab) in enumerate(zip(sc.ids, labels))])
    for L, rec in enumerate(recs):
        ld = os.path.join(out_dir, "layer%d" % L)
        for name in LAYER_STAGES:
            put(os.path.join(ld, name + ".csv"), rec[name], labels)
        for h, hrec in enumerate(rec["heads"]):
            hdir = os.path.join(ld, "head%d" % h)
            for name in HEAD_STAGES:
                put(os.path.join(hdir, name + ".csv"), hrec[name], labels)
            for name in SQUARE_STAGES:
                # GPT-2's attention dropout is 0 here: dropout.csv would be a byte copy of
                # weights.csv, and the export leaves it out (docs/export.md)
                if name == "dropout":
                    continue
                put(os.path.join(hdir, name + ".csv"), hrec[name], labels, labels)
        for name, a in layer_params(W, L).items():
            # a norm at its identity (1 and 0, as the induction model's unused ln_2) has no
            # file, the rule of the scene goldens (README.md) and of attnscope's export
            default = 1.0 if name.endswith("_weight") else 0.0
            if name.startswith("norm") and np.all(a == default):
                continue
            rl = ["b"] if a.ndim == 1 else ["d%d" % i for i in range(a.shape[0])]
            put(os.path.join(ld, "params", name + ".csv"), a, rl)
    put(os.path.join(out_dir, "final_norm.csv"), final, labels)
    # the attention rollout (Abnar & Zuidema 2020): through every layer, and through layer L
    for L, r in enumerate(rollout(recs)):
        if len(recs) > 1:
            put(os.path.join(out_dir, "layer%d" % L, "rollout.csv"), r, labels, labels)
        if L == len(recs) - 1:
            put(os.path.join(out_dir, "rollout.csv"), r, labels, labels)


def rollout(recs):
    """Per layer the heads' mean attention weights A, 0.5 A + 0.5 I with its rows renormalised,
    multiplied from the first layer on (later layers on the left); one (n, n) per layer."""
    out, r = [], None
    for rec in recs:
        a = torch.stack([hd["weights"] for hd in rec["heads"]]).mean(dim=0)
        a = 0.5 * a + 0.5 * torch.eye(a.shape[0])
        a = a / a.sum(dim=-1, keepdim=True)
        r = a if r is None else a @ r
        out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# float64 cross-check: loops over heads by column index, layer norm, softmax and gelu by hand

WORST = {"stage": (0.0, ""), "chain": (0.0, "")}


def ln64(x, w, b):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        mu = sum(x[i]) / x.shape[1]
        var = sum((v - mu) ** 2 for v in x[i]) / x.shape[1]
        out[i] = (x[i] - mu) / math.sqrt(var + LN_EPS) * w + b
    return out


def attention64(x, P, H, div):
    """div: what the scores are divided by (sqrt(head_dim), times layer + 1 with
    scale_attn_by_inverse_layer_idx)."""
    n, d = x.shape
    hd = d // H
    A = x @ P["W_qkv"] + P["b_qkv"]
    heads, ctx = [], np.zeros((n, d))
    for h in range(H):
        qc = [h * hd + j for j in range(hd)]
        q, k, v = A[:, qc], A[:, [d + c for c in qc]], A[:, [2 * d + c for c in qc]]
        s = np.array([[sum(q[i, t] * k[j, t] for t in range(hd)) for j in range(n)]
                      for i in range(n)])
        sc = s / div
        m = np.array([[sc[i, j] if j <= i else -math.inf for j in range(n)] for i in range(n)])
        w = np.zeros((n, n))
        for i in range(n):
            mx = max(m[i, :i + 1])
            e = [math.exp(m[i, j] - mx) for j in range(i + 1)]
            tot = sum(e)
            for j in range(i + 1):
                w[i, j] = e[j] / tot
        c = w @ v
        ctx[:, qc] = c
        heads.append({"queries": q, "keys": k, "values": v, "scores": s, "scaled": sc,
                      "masked": m, "weights": w, "dropout": w, "context": c,
                      "weighted_norm": weighted_norm64(w, v, P["out"][qc, :])})
    return heads, ctx


def weighted_norm64(w, v, wo):
    """|| w_ij (v_j W_O^h) || term by term, wo the head's rows of c_proj."""
    vw = v @ wo
    n = w.shape[0]
    return np.array([[math.sqrt(sum((w[i, j] * x) ** 2 for x in vw[j])) for j in range(n)]
                     for i in range(n)])


def gelu64(x):
    return np.vectorize(lambda t: 0.5 * t * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) *
                                                              (t + 0.044715 * t ** 3))))(x)


def layer64(x, P, H, div, stage_from=None):
    """One block in float64. With stage_from (the torch record), every stage is computed from
    the torch value of its input (the stage-wise check); without, from the float64 chain."""
    g = (lambda name, mine: np.asarray(stage_from[name], dtype=np.float64)) if stage_from \
        else (lambda name, mine: mine)
    r = {"inputs": x}
    r["norm1"] = ln64(x, P["norm1_weight"], P["norm1_bias"])
    heads, ctx = attention64(g("norm1", r["norm1"]), P, H, div)
    if stage_from:  # weighted_norm from the torch weights and values it multiplies
        hd = x.shape[1] // H
        for h, head in enumerate(heads):
            t = stage_from["heads"][h]
            head["weighted_norm"] = weighted_norm64(
                t["dropout"].double().numpy(), t["values"].double().numpy(),
                P["out"][h * hd:(h + 1) * hd, :])
    r["heads"], r["context"] = heads, ctx
    r["output"] = g("context", ctx) @ P["out"] + P["out_bias"]
    r["residual1"] = x + g("output", r["output"])
    r["norm2"] = ln64(g("residual1", r["residual1"]), P["norm2_weight"], P["norm2_bias"])
    r["ffn_hidden"] = g("norm2", r["norm2"]) @ P["ffn_W1"] + P["ffn_b1"]
    r["ffn_activated"] = gelu64(g("ffn_hidden", r["ffn_hidden"]))
    r["ffn_out"] = g("ffn_activated", r["ffn_activated"]) @ P["ffn_W2"] + P["ffn_b2"]
    r["residual2"] = g("residual1", r["residual1"]) + g("ffn_out", r["ffn_out"])
    r["block_output"] = r["residual2"]
    return r


def compare(kind, what, got, ref, bound=None):
    """Within TOL of max(1, |ref|), or of bound where given: each entry's own rounding scale
    (for a dot product, the sum of its terms' magnitudes)."""
    got = np.asarray(got.detach().numpy() if torch.is_tensor(got) else got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape or not np.array_equal(np.isneginf(got), np.isneginf(ref)) or \
            not np.isfinite(got[~np.isneginf(got)]).all():
        raise GenError("cross-check (%s) failed: %s: shape or -inf pattern" % (kind, what))
    fin = np.isfinite(ref)
    if not fin.any():
        return
    scale = np.maximum(1.0, np.abs(np.where(fin, ref, 0.0)))
    if bound is not None:
        scale = np.maximum(scale, np.asarray(bound, dtype=np.float64))
    scale = scale[fin]
    diff = np.abs(got[fin] - ref[fin])
    bad = diff > TOL[kind] * scale
    WORST[kind] = max(WORST[kind], (float(diff.max()), what))
    if bad.any():
        i = int(np.argmax(np.where(bad, diff, -1.0)))
        raise GenError("cross-check (%s) failed: %s: |diff| %g (torch %r, float64 %r)" % (
            kind, what, diff[i], got[fin][i], ref[fin][i]))


def cross_check(sc, W, recs, final):
    W64 = {k: v.astype(np.float64) for k, v in W.items()}
    n = sc.n
    x = np.array([W64["wte.weight"][t] + W64["wpe.weight"][sc.offset + i]
                  for i, t in enumerate(sc.ids)])
    # the embedding sum in float32 is exact up to one rounding: compare it bit for bit
    x32 = np.array([W["wte.weight"][t] + W["wpe.weight"][sc.offset + i]
                    for i, t in enumerate(sc.ids)], dtype=np.float32)
    if not np.array_equal(recs[0]["inputs"].numpy(), x32):
        raise GenError("%s: layer 0 inputs are not wte + wpe" % sc.stem)
    chain = x
    d = W["wte.weight"].shape[1]
    for L, rec in enumerate(recs):
        P = {k: v.astype(np.float64) for k, v in layer_params(W, L).items()}
        for name in ("W_query", "W_key", "W_value"):
            j = ("W_query", "W_key", "W_value").index(name)
            assert np.array_equal(P[name], P["W_qkv"][:, j * d:(j + 1) * d])
        if L > 0 and not torch.equal(rec["inputs"], recs[L - 1]["block_output"]):
            raise GenError("%s: layer %d inputs are not the previous block output" % (sc.stem, L))
        div = (math.sqrt(d // sc.heads) if sc.config.get("scale_attn_weights", True) else 1.0) * \
            (L + 1 if sc.config.get("scale_attn_by_inverse_layer_idx", False) else 1)
        for kind, r in (("stage", layer64(rec["inputs"].double().numpy(), P, sc.heads, div, rec)),
                        ("chain", layer64(chain, P, sc.heads, div))):
            for name in LAYER_STAGES:
                compare(kind, "%s layer%d %s" % (sc.stem, L, name), rec[name], r[name])
            for h in range(sc.heads):
                # a score q.k of a trained model can be a small difference of large products:
                # its float32 rounding scales with sum |q_i k_i|, not with its own size
                hq = rec["heads"][h]["queries"].double().abs().numpy()
                hk = rec["heads"][h]["keys"].double().abs().numpy()
                qk = hq @ hk.T
                for name in HEAD_STAGES + SQUARE_STAGES:
                    bound = qk if name == "scores" else \
                        qk / div if name in ("scaled", "masked") else None
                    compare(kind, "%s layer%d head%d %s" % (sc.stem, L, h, name),
                            rec["heads"][h][name], r["heads"][h][name], bound)
            if kind == "chain":
                chain = r["block_output"]
        assert len(rec["heads"]) == sc.heads and rec["heads"][0]["queries"].shape == (
            n, d // sc.heads)
    for kind, x_last in (("stage", recs[-1]["block_output"].double().numpy()), ("chain", chain)):
        compare(kind, "%s final_norm" % sc.stem, final,
                ln64(x_last, W64["ln_f.weight"], W64["ln_f.bias"]))
    r = None
    for L, (rec, got) in enumerate(zip(recs, rollout(recs))):
        a = sum(hd["weights"].double().numpy() for hd in rec["heads"]) / len(rec["heads"])
        a = 0.5 * a + 0.5 * np.eye(n)
        a = np.array([row / sum(row) for row in a])
        r = a if r is None else a @ r
        compare("stage", "%s layer%d rollout" % (sc.stem, L), got, r)


# ---------------------------------------------------------------------------------------------


def main():
    merges = train_bpe(CORPUS, N_MERGES)
    vocab = build_vocab(merges)
    write_vocab(vocab, merges)
    enc = get_encoder(OUT)  # from the files just written
    if enc.encoder != vocab:
        raise GenError("vocab.json does not read back")
    # every merge's result is reachable: the encoder turns the token's own bytes into it
    for a, b in merges:
        if enc.bpe(a + b) != a + b:
            raise GenError("merge %s %s: bpe(%s) = %s" % (a, b, a + b, enc.bpe(a + b)))
    write_ids_table(enc)

    cfg = hf_config(len(vocab))
    model = GPT2Model(cfg)
    init_weights(model)
    write_checkpoints(model, len(vocab))

    scenes = sorted(glob.glob(os.path.join(OUT, "scenes", "*.yaml")))
    if not scenes:
        raise GenError("no scenes in %s" % os.path.join(OUT, "scenes"))
    # The shipped scenes on a checkpoint (models/): their goldens go where test_goldens looks
    # for scenes/ (tests/golden/scenes/<stem>/); gen_goldens.py leaves them to this script.
    shipped = []
    for path in sorted(glob.glob(os.path.join(ROOT, "scenes", "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            if "model" in (yaml.safe_load(f) or {}):
                shipped.append(path)
    gold = os.path.join(OUT, "goldens")
    if os.path.isdir(gold):
        keep = {os.path.splitext(os.path.basename(p))[0] for p in scenes}
        for d in os.listdir(gold):
            if d not in keep:
                shutil.rmtree(os.path.join(gold, d))
    for path in scenes + shipped:
        sc = Scene(path)
        sc.golden_dir = os.path.join(OUT, "goldens", sc.stem) if path in scenes else \
            os.path.join(ROOT, "tests", "golden", "scenes", sc.stem)
        W, recs, final = run_scene(sc)
        cross_check(sc, W, recs, final)
        model_dir = os.path.basename(os.path.dirname(sc.model_path))
        write_goldens(sc, W, recs, final,
                      SCOPE if path in shipped and model_dir in SCOPED_MODELS else None)
        print("%-12s n=%-2d layers=%d heads=%d offset=%d %s" % (
            sc.stem, sc.n, sc.layers, sc.heads, sc.offset,
            os.path.relpath(sc.model_path, ROOT)))
        print("             " + " | ".join(sc.labels))
    print("vocab %d (256 bytes + %d merges + <|endoftext|>), %d sentences in tiny-ids.tsv" % (
        len(vocab), len(merges), len(SENTENCES)))
    print("largest float64 difference: stage-wise %.3g (%s), whole chain %.3g (%s)" % (
        WORST["stage"] + WORST["chain"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
