#!/usr/bin/python3
"""Golden values for attnscope, computed by an independent PyTorch implementation.

Run with Debian's python3 (it has torch 1.13 and yaml):

    /usr/bin/python3 tests/golden/gen_goldens.py [SCENE.yaml ...]

Without arguments it reads scenes/*.yaml and tests/fixtures/random/*.yaml and writes
tests/golden/scenes/<scene-file-stem>/ in the export layout of README.md ("Export format"):
tokens.csv (and final_norm.csv) at the top, the stages of one layer beside them, or of several in
layer<L>/ each.

This file never looks at the C engine. It follows README.md ("Scene format") and the book's classes
(SelfAttention_v1/_v2, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention) as
literally as it can: the parameters come from real torch calls (torch.manual_seed,
nn.Embedding, nn.Linear, torch.rand, nn.Dropout in training mode) in the documented order.
The later systems follow their sources the same way: 002's Add & Norm and FeedForward
(nn.LayerNorm, nn.Linear -> nn.ReLU/nn.GELU -> nn.Linear), LLaMA's RMSNorm, the PyTorch
tutorial's sinusoidal PositionalEncoding, 004's fused qkv (qkv.chunk(3), or SimpleLLaMA's
qkv.view(..., n_heads, 3 * h_dim).chunk(3)) and complex RoPE (view_as_complex, torch.polar),
Hugging Face's rotate_half, repeat_interleave of the K/V heads for GQA/MQA, and MLA's
W_down / W_key_up / W_value_up. With layers: N every layer's modules are built in order
(attention, then FFN) before the forward pass, which draws each layer's dropout masks in turn;
block.final_norm adds one more norm (GPT-2's ln_f) and gelu_tanh is nn.GELU(approximate='tanh').
tests/golden/README.md lists the decisions taken where the README is silent.
"""

import csv
import math
import os
import re
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_ROOT = os.path.join(ROOT, "tests", "golden", "scenes")

torch.set_num_threads(1)


class SceneError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Scene reading (only what the generator needs; the C loader is the real validator)

ASCII_SPACE = " \t\n\v\f\r"


def tokenize(text, kind):
    if kind == "whitespace":
        return [t for t in re.split("[" + re.escape(ASCII_SPACE) + "]+", text) if t]
    if kind == "words":
        toks, cur = [], ""
        for ch in text:
            o = ord(ch)
            if ch.isascii() and (ch.isalnum() or ch in "_'") or o > 0x7F:
                cur += ch
                continue
            if cur:
                toks.append(cur)
                cur = ""
            if 0x21 <= o <= 0x7E:  # printable ASCII other than a word character
                toks.append(ch)
        if cur:
            toks.append(cur)
        return toks
    if kind == "chars":
        return list(text)
    raise SceneError("unknown tokenizer %r" % kind)


def f32(rows):
    return torch.tensor(rows, dtype=torch.float32)


# The weights keys that make the attention's parameters explicit (README: "Attention parameters
# are explicit when query (or qkv) is given"); the FFN's are explicit when ffn_W1 is.
ATTN_KEYS = ("query", "key", "value", "query_bias", "key_bias", "value_bias", "qkv", "qkv_bias",
             "down", "key_up", "value_up", "heads", "out", "out_bias")
FFN_KEYS = ("ffn_W1", "ffn_b1", "ffn_W2", "ffn_b2")
NORM_KEYS = ("norm1_weight", "norm1_bias", "norm2_weight", "norm2_bias")
FINAL_KEYS = ("final_norm_weight", "final_norm_bias")


def attn_explicit(w):
    return any(k in w for k in ATTN_KEYS)


def ffn_explicit(w):
    return "ffn_W1" in w


class Scene:
    """Every option of README.md ("Scene format") with its default applied."""

    def __init__(self, doc):
        if doc.get("version", 1) != 1:
            raise SceneError("version")
        self.title = doc.get("title")
        self.tokenizer = doc.get("tokenizer", "whitespace")
        if ("text" in doc) == ("tokens" in doc):
            raise SceneError("exactly one of text/tokens")
        if "text" in doc:
            self.tokens = tokenize(str(doc["text"]), self.tokenizer)
        else:
            self.tokens = [str(t) for t in doc["tokens"]]
        self.n = len(self.tokens)
        if self.n < 1:
            raise SceneError("no tokens")
        # the vocabulary of distinct tokens in order of first appearance: the rows of a drawn
        # nn.Embedding, and the ids of tokens.csv
        self.vocab = {}
        for t in self.tokens:
            self.vocab.setdefault(t, len(self.vocab))
        self.ids = [self.vocab[t] for t in self.tokens]
        self.seed = int(doc.get("seed", 123))

        emb = doc.get("embeddings", {"dim": 3})
        if isinstance(emb, list):
            self.embed_rows = emb
            self.embed_dim = len(emb[0])
            self.embed_seed = None
            if len(emb) != self.n:
                raise SceneError("embedding rows != tokens")
        else:
            self.embed_rows = None
            self.embed_dim = int(emb.get("dim", 3))
            self.embed_seed = emb.get("seed")
        self.d_in = self.embed_dim

        pos = doc.get("positional") or {}
        self.pos_kind = pos.get("kind", "none")
        if self.pos_kind not in ("none", "learned", "sinusoidal", "rope"):
            raise SceneError("unknown positional kind %r" % self.pos_kind)
        self.pos_max_len = int(pos.get("max_len", 512))
        self.pos_seed = pos.get("seed")
        self.pos_table = pos.get("table")
        self.pos_base = float(pos.get("base", 10000))
        self.rope_pairs = pos.get("rope_pairs", "adjacent")
        self.pos_offset = int(pos.get("offset", 0))
        if self.pos_base <= 0 or self.pos_offset < 0:
            raise SceneError("positional base > 0, offset >= 0")
        if self.rope_pairs not in ("adjacent", "halves"):
            raise SceneError("unknown rope_pairs %r" % self.rope_pairs)
        if self.pos_kind == "sinusoidal" and self.d_in % 2:
            raise SceneError("sinusoidal needs an even d_in")
        if self.pos_table is not None and self.pos_kind != "learned":
            raise SceneError("positional.table is for learned positions")

        # layers: N layers, each attention (+ block); weights: one mapping, or one per layer.
        self.layers = int(doc.get("layers", 1))
        if not 1 <= self.layers <= 128:
            raise SceneError("layers 1..128")
        w = doc.get("weights")
        self.weights_listed = isinstance(w, list)
        if self.weights_listed:
            if len(w) != self.layers:
                raise SceneError("weights lists %d layers, the scene has %d" % (len(w),
                                                                                self.layers))
            self.layer_weights = [dict(m or {}) for m in w]
        else:
            if w and self.layers > 1:
                # The README gives one mapping per layer as a list; what a single mapping means
                # with several layers it does not say, so these goldens never rely on it.
                raise SceneError("layers > 1: give weights as a list (one mapping per layer)")
            self.layer_weights = [dict(w or {})] + [{} for _ in range(self.layers - 1)]

        a = doc.get("attention") or {}
        self.projection = a.get("projection", "linear")
        self.d_out = int(a.get("d_out", self.d_in))
        self.heads = int(a.get("heads", 1))
        self.layout = a.get("head_layout", "split")
        self.causal = bool(a.get("causal", False))
        self.mask_mode = a.get("mask_mode", "before_softmax")
        self.normalize = a.get("normalize", "softmax")
        scale = a.get("scale", self.projection != "none")
        self.dropout = float(a.get("dropout", 0.0))
        self.dropout_seed = a.get("dropout_seed")
        self.qkv_bias = bool(a.get("qkv_bias", False))
        self.out_proj = bool(a.get("out_proj", self.heads > 1 and self.layout == "split"))
        self.out_bias = bool(a.get("out_bias", True))
        self.attn_seed = a.get("seed")
        self.qkv = a.get("qkv", "separate")
        self.kv_heads = int(a.get("kv_heads", self.heads))
        self.kv_latent = None if a.get("kv_latent") is None else int(a["kv_latent"])

        if self.projection == "none" and self.d_out != self.d_in:
            raise SceneError("projection none needs d_out == d_in")
        if self.layout == "split":
            if self.d_out % self.heads:
                raise SceneError("d_out % heads")
            self.head_dim = self.d_out // self.heads
        else:
            self.head_dim = self.d_out
        self.D = self.head_dim * self.heads
        if self.qkv_bias and self.projection != "linear":
            raise SceneError("qkv_bias only with linear")
        if self.mask_mode == "after_softmax" and self.causal and self.normalize != "softmax":
            raise SceneError("after_softmax masking is defined for softmax only")

        # The systems of 004: fused projections, GQA/MQA, MLA, RoPE.
        if self.qkv not in ("separate", "fused", "fused_heads"):
            raise SceneError("unknown qkv %r" % self.qkv)
        if self.qkv != "separate" and (self.layout != "split" or self.projection != "linear"):
            raise SceneError("fused qkv: split layout and projection linear only")
        if self.kv_heads < 1 or self.heads % self.kv_heads:
            raise SceneError("heads must be a multiple of kv_heads")
        if self.kv_heads != self.heads:
            if self.layout != "split":
                raise SceneError("kv_heads: split layout only")
            if self.projection == "none":
                raise SceneError("kv_heads: K and V cannot be X itself (projection none)")
            if self.qkv == "fused_heads":
                raise SceneError("fused_heads needs kv_heads == heads")
        self.Dkv = self.kv_heads * self.head_dim
        if self.kv_latent is not None:
            if self.kv_latent < 1:
                raise SceneError("kv_latent >= 1")
            if (self.layout != "split" or self.projection != "linear" or self.qkv_bias or
                    self.pos_kind == "rope" or self.qkv != "separate" or
                    self.kv_heads != self.heads):
                raise SceneError("kv_latent: split, linear, separate, no qkv_bias, no rope, "
                                 "no kv_heads")
        if self.pos_kind == "rope" and self.head_dim % 2:
            raise SceneError("rope needs an even head_dim")
        if self.pos_kind == "learned" and self.pos_max_len < self.pos_offset + self.n:
            raise SceneError("learned positions: max_len < offset + tokens")

        # scale: True -> sqrt(d_k) as the book writes it (keys.shape[-1]**0.5), False -> none,
        # a number -> that divisor.
        if scale is True:
            self.divisor = self.head_dim ** 0.5
        elif scale is False:
            self.divisor = None
        else:
            self.divisor = float(scale)

        # The rest of the block (002).
        self.block = "block" in doc
        blk = doc.get("block") or {}
        self.order = blk.get("order", "post")
        self.norm = blk.get("norm", "layer")
        self.norm_eps = float(blk.get("norm_eps", 1e-5))
        self.ffn_hidden = int(blk.get("ffn_hidden", 4 * self.d_in))
        self.activation = blk.get("activation", "relu")
        self.ffn_seed = blk.get("ffn_seed")
        self.ffn_skip = int(blk.get("ffn_skip", 0))
        self.final_norm = bool(blk.get("final_norm", False))
        if self.final_norm and not self.block:
            raise SceneError("final_norm needs the block")
        if self.block:
            if self.order not in ("post", "pre") or self.norm not in ("layer", "rms") or \
                    self.activation not in ("relu", "gelu", "gelu_tanh"):
                raise SceneError("block: order post|pre, norm layer|rms, "
                                 "activation relu|gelu|gelu_tanh")
            if self.D != self.d_in:
                raise SceneError("block: the attention output must be as wide as d_in")
            if self.norm_eps <= 0 or self.ffn_hidden < 1 or self.ffn_skip < 0:
                raise SceneError("block: norm_eps > 0, ffn_hidden >= 1, ffn_skip >= 0")

        if self.layers > 1 and not self.block and self.D != self.d_in:
            raise SceneError("layers without a block: the attention output must be d_in wide")

        for L, w in enumerate(self.layer_weights):
            if ffn_explicit(w) and not all(k in w for k in FFN_KEYS):
                raise SceneError("weights: all four ffn_* or none")
            if not self.block and (any(k in w for k in FFN_KEYS) or
                                   any(k in w for k in NORM_KEYS)):
                raise SceneError("ffn/norm weights without block")
            if self.norm == "rms" and any(k in w for k in ("norm1_bias", "norm2_bias",
                                                           "final_norm_bias")):
                raise SceneError("RMSNorm has no bias")
            if any(k in w for k in FINAL_KEYS) and (not self.final_norm or
                                                    L != self.layers - 1):
                raise SceneError("final_norm_weight/bias: the last layer's, with final_norm")
            if self.weights_listed and "heads" in w:
                raise SceneError("weights as a list: the wrapper's heads are column blocks")
            if "dropout_mask" in w and not 0.0 < self.dropout < 1.0:
                raise SceneError("dropout_mask needs 0 < dropout < 1")
        # dropout_seed re-seeds before layer 0's keep-masks; the README does not say whether it
        # still acts when layer 0's mask is given and a later layer's is drawn: not relied on.
        keeps = ["dropout_mask" in w for w in self.layer_weights]
        if (self.dropout_seed is not None and 0.0 < self.dropout < 1.0 and keeps[0] and
                not all(keeps)):
            raise SceneError("dropout_seed with layer 0's mask given and a later one drawn")


# ---------------------------------------------------------------------------------------------
# Positions that are computed, not drawn


def sinusoidal_table(d_model, positions, base):
    """The PyTorch tutorial's PositionalEncoding (float32 throughout), at the given positions
    (README: p = offset ... offset + n - 1). Every cell is computed on its own, so a table of
    these rows equals those rows of the tutorial's max_len table."""
    position = positions.unsqueeze(1)  # int64, (n, 1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(base) / d_model))
    pe = torch.zeros(positions.shape[0], d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def precompute_theta_pos_frequencies(head_dim, seq_len, theta=10000.0):
    """LLaMA / SimpleLLaMA: freqs_complex[m, i] = exp(i * m * theta_i), complex64."""
    theta_numerator = torch.arange(0, head_dim, 2).float()
    theta = 1.0 / (theta ** (theta_numerator / head_dim))
    m = torch.arange(seq_len)
    freqs = torch.outer(m, theta).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_embeddings(x, freqs_complex):
    """x: (batch, seq_len, heads, head_dim); dimensions (2i, 2i+1) are one complex number."""
    x_complex = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs_complex = freqs_complex.unsqueeze(0).unsqueeze(2)  # (1, seq_len, 1, head_dim / 2)
    x_rotated = x_complex * freqs_complex
    x_out = torch.view_as_real(x_rotated).reshape(*x.shape)
    return x_out.type_as(x)


def rotate_half(x):
    """Hugging Face / GPT-NeoX: (x1, x2) -> (-x2, x1) over the two halves."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(head_dim, seq_len, base):
    """Hugging Face's rotary embedding cache: cos and sin of the angles, repeated over halves."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = torch.arange(seq_len).type_as(inv_freq)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(sc, x):
    """RoPE on x: (batch, seq_len, heads, head_dim), token i at position offset + i."""
    n, hd, off = x.shape[1], x.shape[-1], sc.pos_offset
    if sc.rope_pairs == "adjacent":
        freqs_complex = precompute_theta_pos_frequencies(hd, off + n, sc.pos_base)
        return apply_rotary_embeddings(x, freqs_complex[off:off + n])  # freqs[start_pos:...]
    cos, sin = rope_cos_sin(hd, off + n, sc.pos_base)
    cos = cos[off:off + n].unsqueeze(1)  # (seq_len, 1, head_dim): broadcast over the heads
    sin = sin[off:off + n].unsqueeze(1)
    return (x * cos) + (rotate_half(x) * sin)


# ---------------------------------------------------------------------------------------------
# The book's modules


class Projections(nn.Module):
    """W_query, W_key, W_value as SelfAttention_v1 (torch.rand) or _v2 (nn.Linear) makes them.
    kv_out: the width of W_key and W_value (GQA/MQA: kv_heads * head_dim)."""

    def __init__(self, d_in, d_out, projection, qkv_bias, kv_out=None):
        super().__init__()
        self.projection = projection
        kv_out = d_out if kv_out is None else kv_out
        if projection == "rand":  # SelfAttention_v1
            self.W_query = nn.Parameter(torch.rand(d_in, d_out))
            self.W_key = nn.Parameter(torch.rand(d_in, kv_out))
            self.W_value = nn.Parameter(torch.rand(d_in, kv_out))
        elif projection == "linear":  # SelfAttention_v2 / CausalAttention / MultiHeadAttention
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, kv_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, kv_out, bias=qkv_bias)
        elif projection != "none":
            raise SceneError("unknown projection %r" % projection)

    def forward(self, x):
        if self.projection == "none":
            return x, x, x
        if self.projection == "rand":
            return x @ self.W_query, x @ self.W_key, x @ self.W_value
        return self.W_query(x), self.W_key(x), self.W_value(x)

    def params(self):
        """(Wq, Wk, Wv, bq, bk, bv) in x @ W orientation, or None for projection none."""
        if self.projection == "none":
            return None
        if self.projection == "rand":
            return (self.W_query.data, self.W_key.data, self.W_value.data, None, None, None)
        t = lambda lin: lin.weight.data.t().contiguous()
        b = lambda lin: None if lin.bias is None else lin.bias.data
        return (t(self.W_query), t(self.W_key), t(self.W_value),
                b(self.W_query), b(self.W_key), b(self.W_value))

    def load(self, wq, wk, wv, bq, bk, bv):
        """Explicit weights (x @ W orientation) from the scene file."""
        with torch.no_grad():
            if self.projection == "rand":
                self.W_query.copy_(wq)
                self.W_key.copy_(wk)
                self.W_value.copy_(wv)
                return
            for lin, w, b in ((self.W_query, wq, bq), (self.W_key, wk, bk),
                              (self.W_value, wv, bv)):
                lin.weight.copy_(w.t())
                if lin.bias is not None:
                    lin.bias.copy_(b)


def make_dropout(p):
    d = nn.Dropout(p)
    d.train()
    return d


def apply_dropout(weights, p, explicit_keep):
    """nn.Dropout(p) in training mode on the weights. Returns (dropped, keep mask).

    The keep mask is read the way the notes do it: dropout(torch.ones(...)) from the same
    generator state; then the state is put back and the real dropout runs on the weights."""
    if p == 0.0:
        return weights, None
    if explicit_keep is not None:
        keep = explicit_keep.to(torch.float32)
        if p == 1.0:
            return weights * torch.zeros(()), keep
        noise = keep / (1.0 - p)  # what torch's _dropout_impl builds from its bernoulli draw
        return weights * noise, keep
    drop = make_dropout(p)
    state = torch.get_rng_state()
    keep = (drop(torch.ones_like(weights)) != 0).to(torch.float32)
    torch.set_rng_state(state)
    dropped = drop(weights)
    return dropped, keep


def attention_core(sc, q, k, v, explicit_keep):
    """q, k, v: (..., n, head_dim). Returns every (n, n) stage and the context."""
    n = q.shape[-2]
    scores = q @ k.transpose(-2, -1)
    scaled = scores / sc.divisor if sc.divisor is not None else scores.clone()
    future = torch.triu(torch.ones(n, n), diagonal=1).bool()
    if sc.causal and sc.mask_mode == "after_softmax":
        mask_simple = torch.tril(torch.ones(n, n))
        masked = torch.softmax(scaled, dim=-1) * mask_simple  # masked_simple
        weights = masked / masked.sum(dim=-1, keepdim=True)  # masked_simple_norm
    else:
        masked = scaled.masked_fill(future, -torch.inf) if sc.causal else scaled.clone()
        if sc.normalize == "softmax":
            weights = torch.softmax(masked, dim=-1)
        elif sc.normalize == "sum":
            finite = masked.masked_fill(future, 0.0) if sc.causal else masked
            weights = finite / finite.sum(dim=-1, keepdim=True)  # attn_scores / attn_scores.sum()
        else:
            raise SceneError("unknown normalize %r" % sc.normalize)
    dropped, keep = apply_dropout(weights, sc.dropout, explicit_keep)
    context = dropped @ v
    return dict(scores=scores, scaled=scaled, masked=masked, weights=weights,
                dropout=dropped), context, keep


class MultiHeadAttention(nn.Module):
    """The book's MultiHeadAttention (split layout), recording the stages, with 004's systems:
    a fused qkv projection (qkv.chunk(3), or SimpleLLaMA's per-head view/chunk), RoPE on q and k
    (LLaMA's complex form or rotate_half), grouped-query attention (repeat_interleave of the
    K/V heads) and DeepSeek's multi-head latent attention (K and V up-projected from one
    latent c = x W_down per token)."""

    def __init__(self, sc):
        super().__init__()
        self.sc = sc
        self.proj = self.qkv_linear = None
        self.mla = sc.kv_latent is not None
        if self.mla:
            r = sc.kv_latent
            self.W_query = nn.Linear(sc.d_in, sc.d_out, bias=False)
            self.W_down = nn.Linear(sc.d_in, r, bias=False)
            self.W_key_up = nn.Linear(r, sc.d_out, bias=False)
            self.W_value_up = nn.Linear(r, sc.d_out, bias=False)
        elif sc.qkv != "separate":
            self.qkv_linear = nn.Linear(sc.d_in, sc.d_out + 2 * sc.Dkv, bias=sc.qkv_bias)
        else:
            self.proj = Projections(sc.d_in, sc.d_out, sc.projection, sc.qkv_bias, sc.Dkv)
        self.out_proj = nn.Linear(sc.D, sc.D, bias=sc.out_bias) if sc.out_proj else None

    def forward(self, x, explicit_keep):
        sc = self.sc
        b, n, _ = x.shape
        H, K, hd = sc.heads, sc.kv_heads, sc.head_dim
        latent = None
        if self.mla:
            queries = self.W_query(x)
            latent = self.W_down(x)  # (b, n, r): what an MLA model caches per token
            keys = self.W_key_up(latent)
            values = self.W_value_up(latent)
        elif sc.qkv == "fused":
            qkv = self.qkv_linear(x)
            if K == H:
                queries, keys, values = qkv.chunk(3, dim=-1)  # 004's qkv.chunk(3, dim=-1)
            else:
                queries, keys, values = qkv.split([sc.d_out, sc.Dkv, sc.Dkv], dim=-1)
        elif sc.qkv == "fused_heads":
            qkv = self.qkv_linear(x)
            # SimpleLLaMA: q, k, v = qkv.view(batch, seq_len, n_heads, 3 * h_dim).chunk(3, dim=-1)
            q, k, v = qkv.view(b, n, H, 3 * hd).chunk(3, dim=-1)
        else:
            queries, keys, values = self.proj(x)
        if sc.qkv != "fused_heads":
            # (b, n, d_out) -> (b, n, H, hd); K and V: (b, n, K, hd)
            q = queries.reshape(b, n, H, hd)
            k = keys.reshape(b, n, K, hd)
            v = values.reshape(b, n, K, hd)
        if sc.pos_kind == "rope":
            q_rot, k_rot = apply_rope(sc, q), apply_rope(sc, k)
        else:
            q_rot, k_rot = q, k
        # -> (b, H, n, hd); GQA/MQA: query head h uses KV head h // (H // K) (LLaMA's repeat_kv)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q_rot, k_rot = q_rot.transpose(1, 2), k_rot.transpose(1, 2)
        if K != H:
            k = torch.repeat_interleave(k, H // K, dim=1)
            v = torch.repeat_interleave(v, H // K, dim=1)
            k_rot = torch.repeat_interleave(k_rot, H // K, dim=1)
        keep_in = None if explicit_keep is None else explicit_keep.unsqueeze(0)
        stages, ctx, keep = attention_core(sc, q_rot, k_rot, v, keep_in)
        concat = ctx.transpose(1, 2).contiguous().view(b, n, sc.D)
        out = self.out_proj(concat) if self.out_proj is not None else concat
        per_head = []
        for h in range(H):
            d = {name: t[0, h] for name, t in stages.items()}
            d.update(queries=q[0, h], keys=k[0, h], values=v[0, h], context=ctx[0, h])
            if sc.pos_kind == "rope":
                d.update(queries_rotated=q_rot[0, h], keys_rotated=k_rot[0, h])
            per_head.append(d)
        keep = None if keep is None else keep[0]
        extra = {} if latent is None else {"latent": latent[0]}
        return per_head, concat[0], out[0], keep, extra


class CausalAttentionHead(nn.Module):
    """One head of MultiHeadAttentionWrapper: the book's CausalAttention (mask optional)."""

    def __init__(self, sc):
        super().__init__()
        self.sc = sc
        self.proj = Projections(sc.d_in, sc.d_out, sc.projection, sc.qkv_bias)

    def forward(self, x, explicit_keep):
        q, k, v = self.proj(x)
        q_rot, k_rot = q, k
        if self.sc.pos_kind == "rope":  # one head: (b, n, d_out) seen as (b, n, 1, d_out)
            b, n, hd = q.shape
            q_rot = apply_rope(self.sc, q.reshape(b, n, 1, hd)).reshape(b, n, hd)
            k_rot = apply_rope(self.sc, k.reshape(b, n, 1, hd)).reshape(b, n, hd)
        keep_in = None if explicit_keep is None else explicit_keep.unsqueeze(0)
        stages, ctx, keep = attention_core(self.sc, q_rot, k_rot, v, keep_in)
        d = {name: t[0] for name, t in stages.items()}
        d.update(queries=q[0], keys=k[0], values=v[0], context=ctx[0])
        if self.sc.pos_kind == "rope":
            d.update(queries_rotated=q_rot[0], keys_rotated=k_rot[0])
        return d, ctx, (None if keep is None else keep[0])


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, sc):
        super().__init__()
        self.sc = sc
        self.heads = nn.ModuleList([CausalAttentionHead(sc) for _ in range(sc.heads)])
        self.out_proj = nn.Linear(sc.D, sc.D, bias=sc.out_bias) if sc.out_proj else None

    def forward(self, x, explicit_keep):
        per_head, ctxs, keeps = [], [], []
        for h, head in enumerate(self.heads):
            d, ctx, keep = head(x, None if explicit_keep is None else explicit_keep[h])
            per_head.append(d)
            ctxs.append(ctx)
            keeps.append(keep)
        concat = torch.cat(ctxs, dim=-1)
        out = self.out_proj(concat) if self.out_proj is not None else concat
        keep = None if keeps[0] is None else torch.stack(keeps)
        return per_head, concat[0], out[0], keep, {}


# ---------------------------------------------------------------------------------------------
# The rest of the block (002: Add & Norm, FeedForward, Add & Norm)


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm: x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def gelu_new(x):
    """GPT-2's gelu_new (Hugging Face's NewGELUActivation), written out in float32."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class FeedForward(nn.Module):
    """002's FeedForward: linear1 -> activation -> linear2, recording each. gelu is the exact
    erf form (nn.GELU()), gelu_tanh its tanh approximation (nn.GELU(approximate='tanh'), which
    is F.gelu(x, approximate='tanh')), checked against GPT-2's formula written out."""

    def __init__(self, d_model, hidden_dim, activation):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, hidden_dim)
        self.act = (nn.ReLU() if activation == "relu" else
                    nn.GELU() if activation == "gelu" else nn.GELU(approximate="tanh"))
        self.linear2 = nn.Linear(hidden_dim, d_model)

    def forward(self, x):
        hidden = self.linear1(x)  # expand
        activated = self.act(hidden)  # non-linear
        if self.activation == "gelu_tanh":
            diff = (activated - gelu_new(hidden)).abs().max().item()
            if diff > 1e-6:
                raise SceneError("gelu_tanh: torch's and the formula differ by %g" % diff)
        out = self.linear2(activated)  # back to d_model
        return hidden, activated, out


def make_norm(sc):
    """nn.LayerNorm(d_in, eps) (weight 1, bias 0) or RMSNorm (weight 1); draws nothing."""
    if sc.norm == "layer":
        return nn.LayerNorm(normalized_shape=sc.d_in, eps=sc.norm_eps)
    return RMSNorm(sc.d_in, sc.norm_eps)


class Block(nn.Module):
    """The attention (built before, so its parameters are drawn first), then the FFN; the norms
    draw nothing (nn.LayerNorm: weight 1, bias 0; RMSNorm: weight 1)."""

    def __init__(self, sc, attention):
        super().__init__()
        self.sc = sc
        self.attention = attention
        self.ffn = FeedForward(sc.d_in, sc.ffn_hidden, sc.activation)
        self.norm1 = make_norm(sc)
        self.norm2 = make_norm(sc)

    def forward(self, x, explicit_keep):
        st = {}
        if self.sc.order == "post":  # 002 / the original Transformer
            per_head, concat, out, keep, extra = self.attention(x, explicit_keep)
            st["residual1"] = residual_1 = x + out  # embedded_tokens + mha_out
            st["norm1"] = normed_1 = self.norm1(residual_1)
            st["ffn_hidden"], st["ffn_activated"], st["ffn_out"] = self.ffn(normed_1)
            st["residual2"] = residual_2 = normed_1 + st["ffn_out"]
            st["norm2"] = encoder_out = self.norm2(residual_2)
            st["block_output"] = encoder_out
            attn_in = x
        else:  # GPT-2 / LLaMA: x + attn(norm1(x)), then r + ffn(norm2(r))
            st["norm1"] = attn_in = self.norm1(x)
            per_head, concat, out, keep, extra = self.attention(attn_in, explicit_keep)
            st["residual1"] = r = x + out
            st["norm2"] = self.norm2(r)
            st["ffn_hidden"], st["ffn_activated"], st["ffn_out"] = self.ffn(st["norm2"])
            st["residual2"] = r + st["ffn_out"]
            st["block_output"] = st["residual2"]
        st = {k: t[0] for k, t in st.items()}
        extra = dict(extra)
        extra.update(block=st, attn_in=attn_in[0])
        return per_head, concat, out, keep, extra


# ---------------------------------------------------------------------------------------------
# A scene, run


def skip_uniform_draws(count):
    """Advance the generator by `count` uniform draws: one 32-bit draw per float32 element, as
    nn.Linear's init (kaiming_uniform_ / uniform_) takes them. 002 built FeedForward(4, 8)
    (4*8 + 8 + 8*4 + 4 = 76 parameters) once before the one it printed."""
    if count:
        torch.empty(count).uniform_()


def embed_inputs(sc):
    """Steps 2 and 3: the embeddings and the positions. Returns (embeddings, layer 0's input)."""
    # 2. embeddings
    if sc.embed_rows is not None:
        embed = f32(sc.embed_rows)
    else:
        if sc.embed_seed is not None:
            torch.manual_seed(int(sc.embed_seed))
        emb = nn.Embedding(num_embeddings=len(sc.vocab), embedding_dim=sc.embed_dim)
        embed = emb(torch.tensor(sc.ids)).detach()

    # 3. positions: a learned table is drawn; a sinusoidal one computed; rope acts on q and k
    x = embed
    if sc.pos_kind == "learned":
        if sc.pos_table is not None:
            table = f32(sc.pos_table)
        else:
            if sc.pos_seed is not None:
                torch.manual_seed(int(sc.pos_seed))
            table = nn.Embedding(num_embeddings=sc.pos_max_len, embedding_dim=sc.d_in).weight.data
        positions = torch.arange(sc.pos_offset, sc.pos_offset + sc.n)
        x = embed + table[positions]
    elif sc.pos_kind == "sinusoidal":
        positions = torch.arange(sc.pos_offset, sc.pos_offset + sc.n)
        x = embed + sinusoidal_table(sc.d_in, positions, sc.pos_base)
    return embed, x


def build_layer(sc, L, w):
    """Steps 4 and 5 for layer L (its mapping w): the attention's parameters, then the FFN's.
    attention.seed, block.ffn_seed and block.ffn_skip act before layer 0's draws only; an
    explicit part draws nothing. Returns (attention, block or None, explicit keep mask)."""
    first = L == 0
    # 4. attention parameters
    explicit = attn_explicit(w)
    if not explicit and first and sc.attn_seed is not None:
        torch.manual_seed(int(sc.attn_seed))
    if explicit:
        # draw nothing: build the modules from a throw-away generator state, then load.
        state = torch.get_rng_state()
    if sc.layout == "split":
        model = MultiHeadAttention(sc)
    elif sc.layout == "wrapper":
        model = MultiHeadAttentionWrapper(sc)
    else:
        raise SceneError("unknown head_layout")
    if explicit:
        torch.set_rng_state(state)
        load_weights(sc, model, w)
    explicit_keep = None
    if "dropout_mask" in w:
        explicit_keep = torch.tensor(w["dropout_mask"], dtype=torch.float32)

    # 5. the FFN (the norms draw nothing)
    block = None
    if sc.block:
        if ffn_explicit(w):
            state = torch.get_rng_state()
        elif first:
            if sc.ffn_seed is not None:
                torch.manual_seed(int(sc.ffn_seed))
            skip_uniform_draws(sc.ffn_skip)
        block = Block(sc, model)
        if ffn_explicit(w):
            torch.set_rng_state(state)
        load_block_weights(sc, block, w)
    return model, block, explicit_keep


def run_scene(sc):
    torch.manual_seed(sc.seed)  # 1.
    embed, x = embed_inputs(sc)  # 2., 3.

    # 4., 5. and 6.: every layer's modules, in order, before the forward pass
    built = [build_layer(sc, L, w) for L, w in enumerate(sc.layer_weights)]
    final = None
    if sc.final_norm:  # the last layer's (GPT-2's ln_f): draws nothing
        final = make_norm(sc)
        last = sc.layer_weights[-1]
        with torch.no_grad():
            if "final_norm_weight" in last:
                final.weight.copy_(f32(last["final_norm_weight"]))
            if "final_norm_bias" in last:
                final.bias.copy_(f32(last["final_norm_bias"]))

    # 7. dropout: drawn inside the forward pass, head after head, layer after layer; the
    # dropout_seed re-seeds before layer 0's (Scene refuses a given layer 0 mask with a drawn
    # later one, where the README is silent).
    if sc.dropout > 0 and built[0][2] is None and sc.dropout_seed is not None:
        torch.manual_seed(int(sc.dropout_seed))
    layers = []
    h = x
    for model, block, explicit_keep in built:
        with torch.no_grad():
            runner = block if block is not None else model
            per_head, concat, out, keep, extra = runner(h.unsqueeze(0), explicit_keep)
        res = dict(inputs=h, per_head=per_head, concat=concat, output=out,
                   params=layer_params(sc, model, block, keep), latent=extra.get("latent"),
                   block=extra.get("block"), attn_in=extra.get("attn_in", h))
        add_weighted_norms(res)
        layers.append(res)
        # layer L + 1 reads norm2 (post), residual2 (pre) or the attention output
        h = res["block"]["block_output"] if res["block"] is not None else out
    final_out = None
    final_params = {}
    if final is not None:
        with torch.no_grad():
            final_out = final(h.unsqueeze(0))[0]
        final_params["weight"] = final.weight.data
        if getattr(final, "bias", None) is not None:
            final_params["bias"] = final.bias.data
    return dict(embed=embed, layers=layers, final_norm=final_out, final_params=final_params,
                rollout=rollout(layers))


def add_weighted_norms(res):
    """Kobayashi et al. 2020, "Attention is not only a weight": the norm of what key j adds to
    query i's output, || a_ij v_j W_O^h ||_2, a the weights after dropout (what multiplies V),
    W_O^h the rows of out_proj's weight (x @ W) that head h's columns of concat meet; without
    out_proj || a_ij v_j ||. Written as the product it is: (n, n, D) vectors, then their norms."""
    W_O = res["params"].get("out")
    for h, d in enumerate(res["per_head"]):
        v = d["values"]
        hd = v.shape[1]
        vw = v @ W_O[h * hd:(h + 1) * hd, :] if W_O is not None else v
        d["weighted_norm"] = (d["dropout"].unsqueeze(-1) * vw.unsqueeze(0)).norm(dim=-1)


def rollout(layers):
    """Abnar & Zuidema 2020: per layer the heads' mean attention weights A, 0.5 A + 0.5 I with
    its rows renormalised, multiplied from the first layer on (later layers on the left). One
    (n, n) matrix per layer: the rollout up to it."""
    out, r = [], None
    for res in layers:
        a = torch.stack([d["weights"] for d in res["per_head"]]).mean(dim=0)
        a = 0.5 * a + 0.5 * torch.eye(a.shape[0])
        a = a / a.sum(dim=-1, keepdim=True)
        r = a if r is None else a @ r
        out.append(r)
    return out


def layer_params(sc, model, block, keep):
    """One layer's parameters in x @ W orientation, named as params/ names them."""
    params = {}
    t = lambda lin: lin.weight.data.t().contiguous()
    if sc.layout == "split":
        if model.mla:
            params.update(W_query=t(model.W_query), W_down=t(model.W_down),
                          W_key_up=t(model.W_key_up), W_value_up=t(model.W_value_up))
        elif model.qkv_linear is not None:
            Wqkv = t(model.qkv_linear)
            bqkv = None if model.qkv_linear.bias is None else model.qkv_linear.bias.data
            params.update(W_qkv=Wqkv, b_qkv=bqkv)
            # query/key/value are its column blocks (fused_heads: head h's 3*hd columns)
            if sc.qkv == "fused":
                sizes = [sc.d_out, sc.Dkv, sc.Dkv]
                wb = [Wqkv.split(sizes, dim=-1)]
                if bqkv is not None:
                    wb.append(bqkv.split(sizes, dim=-1))
            else:
                H, hd = sc.heads, sc.head_dim
                wb = [[c.reshape(sc.d_in, sc.D) for c in
                       Wqkv.view(sc.d_in, H, 3 * hd).chunk(3, dim=-1)]]
                if bqkv is not None:
                    wb.append([c.reshape(sc.D) for c in bqkv.view(H, 3 * hd).chunk(3, dim=-1)])
            for prefix, blocks in zip(("W_", "b_"), wb):
                for name, c in zip(("query", "key", "value"), blocks):
                    params[prefix + name] = c.contiguous()
        else:
            p = model.proj.params()
            if p is not None:
                params.update(zip(("W_query", "W_key", "W_value", "b_query", "b_key", "b_value"),
                                  p))
    else:
        for h, head in enumerate(model.heads):
            p = head.proj.params()
            if p is not None:
                for name, tt in zip(("W_query", "W_key", "W_value", "b_query", "b_key",
                                     "b_value"), p):
                    params["head%d/%s" % (h, name)] = tt
    if model.out_proj is not None:
        params["out"] = t(model.out_proj)
        if model.out_proj.bias is not None:
            params["out_bias"] = model.out_proj.bias.data
    if block is not None:
        params.update(ffn_W1=t(block.ffn.linear1), ffn_b1=block.ffn.linear1.bias.data,
                      ffn_W2=t(block.ffn.linear2), ffn_b2=block.ffn.linear2.bias.data)
        # the norms' parameters only when they are not the default 1 and 0
        for i, norm in ((1, block.norm1), (2, block.norm2)):
            if not torch.equal(norm.weight.data, torch.ones(sc.d_in)):
                params["norm%d_weight" % i] = norm.weight.data
            bias = getattr(norm, "bias", None)
            if bias is not None and not torch.equal(bias.data, torch.zeros(sc.d_in)):
                params["norm%d_bias" % i] = bias.data
    params = {k: v for k, v in params.items() if v is not None}
    if keep is not None:
        params["dropout_mask"] = keep.reshape(sc.heads * sc.n, sc.n)
    return params


def load_weights(sc, model, w):
    def mat(key, src=w):
        if key not in src:
            raise SceneError("weights: %s missing" % key)
        return f32(src[key])

    def vec(key, src=w):
        return f32(src[key]) if key in src else None

    def put(lin, m, b=None):
        lin.weight.copy_(m.t())
        if lin.bias is not None:
            if b is None:
                raise SceneError("weights: a bias is missing")
            lin.bias.copy_(b)

    if sc.layout == "split":
        with torch.no_grad():
            if model.mla:
                put(model.W_query, mat("query"))
                put(model.W_down, mat("down"))
                put(model.W_key_up, mat("key_up"))
                put(model.W_value_up, mat("value_up"))
            elif model.qkv_linear is not None:
                put(model.qkv_linear, mat("qkv"), vec("qkv_bias"))
            elif sc.projection != "none":
                model.proj.load(mat("query"), mat("key"), mat("value"), vec("query_bias"),
                                vec("key_bias"), vec("value_bias"))
    else:
        for head, hw in zip(model.heads, wrapper_heads(sc, w)):
            if sc.projection != "none":
                head.proj.load(mat("query", hw), mat("key", hw), mat("value", hw),
                               vec("query_bias", hw), vec("key_bias", hw), vec("value_bias", hw))
    if model.out_proj is not None:
        with torch.no_grad():
            model.out_proj.weight.copy_(mat("out").t())
            if model.out_proj.bias is not None:
                model.out_proj.bias.copy_(f32(w["out_bias"]))


def wrapper_heads(sc, w):
    """The wrapper's per-head mappings: weights.heads, or (weights as a list, README) head h's
    columns h*d_out ... (h+1)*d_out - 1 of query/key/value and their biases."""
    if not sc.weights_listed:
        return w["heads"]
    heads = []
    for h in range(sc.heads):
        lo, hi = h * sc.d_out, (h + 1) * sc.d_out
        hw = {}
        for k in ("query", "key", "value"):
            if k in w:
                hw[k] = [r[lo:hi] for r in w[k]]
            if k + "_bias" in w:
                hw[k + "_bias"] = w[k + "_bias"][lo:hi]
        heads.append(hw)
    return heads


def load_block_weights(sc, block, w):
    with torch.no_grad():
        if ffn_explicit(w):
            block.ffn.linear1.weight.copy_(f32(w["ffn_W1"]).t())
            block.ffn.linear1.bias.copy_(f32(w["ffn_b1"]))
            block.ffn.linear2.weight.copy_(f32(w["ffn_W2"]).t())
            block.ffn.linear2.bias.copy_(f32(w["ffn_b2"]))
        for i, norm in ((1, block.norm1), (2, block.norm2)):
            if "norm%d_weight" % i in w:
                norm.weight.copy_(f32(w["norm%d_weight" % i]))
            if "norm%d_bias" % i in w:
                norm.bias.copy_(f32(w["norm%d_bias" % i]))


# ---------------------------------------------------------------------------------------------
# Export layout


def fmt(v):
    v = np.float32(v)
    if np.isneginf(v):
        return "-inf"
    if np.isposinf(v):
        return "inf"
    if np.isnan(v):
        raise SceneError("NaN in a golden value")
    return "%.9g" % float(v)


def write_csv(path, t, row_labels, col_labels=None):
    t = t.detach().to(torch.float32)
    if t.dim() == 1:
        t = t.unsqueeze(0)
    rows, cols = t.shape
    if col_labels is None:
        col_labels = ["d%d" % j for j in range(cols)]
    assert len(row_labels) == rows and len(col_labels) == cols, path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    a = t.numpy()
    with open(path, "w", newline="", encoding="utf-8") as f:
        wr = csv.writer(f, lineterminator="\r\n")
        wr.writerow(["token"] + list(col_labels))
        for i in range(rows):
            wr.writerow([row_labels[i]] + [fmt(a[i, j]) for j in range(cols)])


HEAD_STAGES = ("queries", "keys", "values", "queries_rotated", "keys_rotated", "context")
SQUARE_STAGES = ("scores", "scaled", "masked", "weights", "dropout", "weighted_norm")
BLOCK_STAGES = ("residual1", "norm1", "ffn_hidden", "ffn_activated", "ffn_out", "residual2",
                "norm2", "block_output")


def write_layer(sc, res, out_dir):
    """One layer in the single-layer export layout (README: "Export format")."""
    toks = sc.tokens
    write_csv(os.path.join(out_dir, "inputs.csv"), res["inputs"], toks)
    for h, d in enumerate(res["per_head"]):
        hdir = os.path.join(out_dir, "head%d" % h)
        for name in HEAD_STAGES:
            if name in d:
                write_csv(os.path.join(hdir, name + ".csv"), d[name], toks)
        for name in SQUARE_STAGES:
            # Without dropout, dropout.csv would be a byte copy of weights.csv: the export
            # leaves it out (README: "Export format").
            if name == "dropout" and sc.dropout == 0:
                continue
            write_csv(os.path.join(hdir, name + ".csv"), d[name], toks, toks)
    write_csv(os.path.join(out_dir, "context.csv"), res["concat"], toks)
    write_csv(os.path.join(out_dir, "output.csv"), res["output"], toks)
    if res["latent"] is not None:
        write_csv(os.path.join(out_dir, "latent.csv"), res["latent"], toks)
    if res["block"] is not None:
        for name in BLOCK_STAGES:
            write_csv(os.path.join(out_dir, name + ".csv"), res["block"][name], toks)
    for name, t in res["params"].items():
        path = os.path.join(out_dir, "params", name + ".csv")
        if name == "dropout_mask":
            write_csv(path, t, toks * sc.heads, toks)
        elif t.dim() == 1:
            write_csv(path, t, ["b"])
        else:
            write_csv(path, t, ["d%d" % i for i in range(t.shape[0])])


def write_tokens(sc, path):
    """tokens.csv: position, id (the index in the vocabulary of distinct tokens in order of
    first appearance), token."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        wr = csv.writer(f, lineterminator="\r\n")
        wr.writerow(["position", "id", "token"])
        for i, (tid, tok) in enumerate(zip(sc.ids, sc.tokens)):
            wr.writerow([str(i), str(tid), tok])


def write_export(sc, res, out_dir):
    """tokens.csv and final_norm.csv at the top; one layer in the top folder itself, several
    in layer<L>/ each."""
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    write_tokens(sc, os.path.join(out_dir, "tokens.csv"))
    if sc.layers == 1:
        write_layer(sc, res["layers"][0], out_dir)
    else:
        for L, lres in enumerate(res["layers"]):
            write_layer(sc, lres, os.path.join(out_dir, "layer%d" % L))
    if res["final_norm"] is not None:
        write_csv(os.path.join(out_dir, "final_norm.csv"), res["final_norm"], sc.tokens)
    # the attention rollout: through every layer at the top, through layer L in layer<L>/
    write_csv(os.path.join(out_dir, "rollout.csv"), res["rollout"][-1], sc.tokens, sc.tokens)
    if sc.layers > 1:
        for L, r in enumerate(res["rollout"]):
            write_csv(os.path.join(out_dir, "layer%d" % L, "rollout.csv"), r, sc.tokens, sc.tokens)


def close(a, b, what):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    fin = np.isfinite(b)
    if not (a.shape == b.shape and np.array_equal(np.isfinite(a), fin) and
            np.allclose(a[fin], b[fin], rtol=1e-4, atol=1e-5)):
        raise SceneError("cross-check failed: %s\n%s\n%s" % (what, a, b))


def rope_ref(sc, x):
    """RoPE in float64 from the float32 angles the README specifies (numpy, the plain way)."""
    n, hd = x.shape
    half = hd // 2
    theta = np.float32(1.0) / np.power(np.float32(sc.pos_base),
                                        np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd))
    p = np.arange(sc.pos_offset, sc.pos_offset + n, dtype=np.float32)
    ang = (p[:, None] * theta[None, :].astype(np.float32)).astype(np.float64)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(x)
    if sc.rope_pairs == "adjacent":
        a, b = x[:, 0::2], x[:, 1::2]
        out[:, 0::2] = a * c - b * s
        out[:, 1::2] = a * s + b * c
    else:
        a, b = x[:, :half], x[:, half:]
        out[:, :half] = a * c - b * s
        out[:, half:] = b * c + a * s
    return out


def cross_check(sc, full):
    """Every layer checked on its own from the float32 input torch gave it; layer L + 1's input
    must be layer L's output (norm2 post, residual2 pre, the attention output without a block)
    bit for bit; the final norm from the torch value of the last layer's output."""
    prev = None
    for L, res in enumerate(full["layers"]):
        if prev is not None and not torch.equal(res["inputs"], prev):
            raise SceneError("layer %d's input is not layer %d's output" % (L, L - 1))
        try:
            cross_check_layer(sc, res, full["embed"] if L == 0 else None)
        except SceneError as e:
            raise SceneError("layer %d: %s" % (L, e))
        prev = res["block"]["block_output"] if res["block"] is not None else res["output"]
    if sc.final_norm:
        fp = {k: v.double().numpy() for k, v in full["final_params"].items()}
        close(full["final_norm"].numpy(),
              norm64(sc, prev.double().numpy(), fp["weight"], fp.get("bias", 0)), "final_norm")
    # the rollout in float64 from the torch weights, row by row
    r = None
    for L, res in enumerate(full["layers"]):
        a = sum(d["weights"].double().numpy() for d in res["per_head"]) / len(res["per_head"])
        a = 0.5 * a + 0.5 * np.eye(sc.n)
        a = np.array([row / sum(row) for row in a])
        r = a if r is None else a @ r
        close(full["rollout"][L].numpy(), r, "rollout through layer %d" % L)


def cross_check_layer(sc, res, embed):
    """Recomputes every stage in float64 numpy from the recorded inputs, parameters and keep
    mask, the plain way (no view/transpose/chunk/repeat_interleave/complex numbers), and checks
    the torch stages against it. Catches a wrong head slice or stage mapping in the module code
    above. The block's stages are each recomputed from the torch value of their input (a norm
    over few features amplifies the float32 noise of what comes before it). embed: layer 0's
    embeddings (the sinusoidal table is checked there), None for the later layers."""
    P = {k: v.double().numpy() for k, v in res["params"].items()}
    n, H, hd, K = sc.n, sc.heads, sc.head_dim, sc.kv_heads

    if sc.pos_kind == "sinusoidal" and embed is not None:
        Xemb = embed.double().numpy()
        p = np.arange(sc.pos_offset, sc.pos_offset + n, dtype=np.float64)[:, None]
        div = np.exp(np.arange(0, sc.d_in, 2) * (-math.log(sc.pos_base) / sc.d_in))
        pe = np.zeros((n, sc.d_in))
        pe[:, 0::2] = np.sin(p * div)
        pe[:, 1::2] = np.cos(p * div)
        close(res["inputs"].numpy(), Xemb + pe, "sinusoidal inputs")
    X = res["attn_in"].double().numpy()
    blk = None if res["block"] is None else {k: v.double().numpy()
                                             for k, v in res["block"].items()}
    if blk is not None and sc.order == "pre":
        close(blk["norm1"], norm_ref(sc, res["inputs"].double().numpy(), P, 1), "norm1")
        X = blk["norm1"]

    # the projections as full matrices, from whatever the scene has
    if sc.kv_latent is not None:
        c = X @ P["W_down"]
        close(res["latent"].numpy(), c, "latent")
        Qf, Kf, Vf = X @ P["W_query"], c @ P["W_key_up"], c @ P["W_value_up"]
    elif sc.qkv != "separate":
        A = X @ P["W_qkv"] + P.get("b_qkv", 0)
        if sc.qkv == "fused":
            Qf, Kf, Vf = (A[:, :sc.d_out], A[:, sc.d_out:sc.d_out + sc.Dkv],
                          A[:, sc.d_out + sc.Dkv:])
            cols = [np.arange(sc.d_out), sc.d_out + np.arange(sc.Dkv),
                    sc.d_out + sc.Dkv + np.arange(sc.Dkv)]
        else:  # head h: columns h*3hd + [0, hd), [hd, 2hd), [2hd, 3hd)
            cols = [np.array([h * 3 * hd + j * hd + i for h in range(H) for i in range(hd)])
                    for j in range(3)]
            Qf, Kf, Vf = (A[:, cc] for cc in cols)
        for name, cc in zip(("query", "key", "value"), cols):
            close(P["W_" + name], P["W_qkv"][:, cc], "W_%s is a block of W_qkv" % name)
            if "b_qkv" in P:
                close(P["b_" + name], P["b_qkv"][cc], "b_%s is a block of b_qkv" % name)
    elif sc.layout == "split":
        if "W_query" not in P:  # projection none: Q = K = V = X
            Qf = Kf = Vf = X
        else:
            Qf = X @ P["W_query"] + P.get("b_query", 0)
            Kf = X @ P["W_key"] + P.get("b_key", 0)
            Vf = X @ P["W_value"] + P.get("b_value", 0)

    def head_qkv(h):
        if sc.layout == "split":
            g = h // (H // K)  # the KV head this query head uses
            return (Qf[:, h * hd:(h + 1) * hd], Kf[:, g * hd:(g + 1) * hd],
                    Vf[:, g * hd:(g + 1) * hd])
        out = []
        for name in ("query", "key", "value"):
            W = P.get("head%d/W_%s" % (h, name))
            b = P.get("head%d/b_%s" % (h, name))
            out.append(X if W is None else X @ W + (0 if b is None else b))
        return out

    keep = P.get("dropout_mask")
    future = np.triu(np.ones((n, n)), 1).astype(bool)
    ctxs = []
    for h in range(H):
        d = res["per_head"][h]
        q, k, v = head_qkv(h)
        checks = [("queries", q), ("keys", k), ("values", v)]
        if sc.pos_kind == "rope":
            q, k = rope_ref(sc, q), rope_ref(sc, k)
            checks += [("queries_rotated", q), ("keys_rotated", k)]
        s = q @ k.T
        sc_ = s / sc.divisor if sc.divisor is not None else s
        if sc.causal and sc.mask_mode == "after_softmax":
            e = np.exp(sc_ - sc_.max(1, keepdims=True))
            m = np.where(future, 0.0, e / e.sum(1, keepdims=True))
            wts = m / m.sum(1, keepdims=True)
        else:
            m = np.where(future, -np.inf, sc_) if sc.causal else sc_
            if sc.normalize == "softmax":
                e = np.exp(m - m.max(1, keepdims=True))
                wts = e / e.sum(1, keepdims=True)
            else:
                f = np.where(np.isinf(m), 0.0, m)
                wts = f / f.sum(1, keepdims=True)
        if sc.dropout == 0:
            dr = wts
        elif sc.dropout == 1:
            dr = wts * 0
        else:
            dr = wts * keep[h * n:(h + 1) * n] / (1 - sc.dropout)
        ctx = dr @ v
        # weighted_norm: the norm of each term a_ij (v_j W_O^h) of the output, one at a time
        vw = v @ P["out"][h * v.shape[1]:(h + 1) * v.shape[1], :] if "out" in P else v
        wn = np.array([[np.sqrt(np.sum((dr[i, j] * vw[j]) ** 2)) for j in range(n)]
                       for i in range(n)])
        checks += [("scores", s), ("scaled", sc_), ("masked", m), ("weights", wts),
                   ("dropout", dr), ("context", ctx), ("weighted_norm", wn)]
        for name, ref in checks:
            close(d[name].numpy(), ref, "head %d %s" % (h, name))
        if set(d) != {name for name, _ in checks}:
            raise SceneError("head %d stages %s" % (h, sorted(d)))
        ctxs.append(ctx)
    concat = np.concatenate(ctxs, axis=1)
    close(res["concat"].numpy(), concat, "concat")
    out = concat @ P["out"] + P.get("out_bias", 0) if "out" in P else concat
    close(res["output"].numpy(), out, "output")
    if keep is not None:
        assert set(np.unique(keep)) <= {0.0, 1.0}
        if sc.dropout == 1:
            assert not keep.any()

    if blk is None:
        return
    Xin = res["inputs"].double().numpy()
    outp = res["output"].double().numpy()
    close(blk["residual1"], Xin + outp, "residual1")
    if sc.order == "post":
        close(blk["norm1"], norm_ref(sc, blk["residual1"], P, 1), "norm1")
        ffn_in = blk["norm1"]
    else:
        close(blk["norm2"], norm_ref(sc, blk["residual1"], P, 2), "norm2")
        ffn_in = blk["norm2"]
    hid = ffn_in @ P["ffn_W1"] + P["ffn_b1"]
    close(blk["ffn_hidden"], hid, "ffn_hidden")
    hid = blk["ffn_hidden"]
    if sc.activation == "relu":
        act = np.maximum(hid, 0.0)
    elif sc.activation == "gelu":
        act = 0.5 * hid * (1.0 + np.vectorize(math.erf)(hid / math.sqrt(2.0)))
    else:  # gelu_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        act = 0.5 * hid * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (hid + 0.044715 * hid ** 3)))
    close(blk["ffn_activated"], act, "ffn_activated")
    close(blk["ffn_out"], blk["ffn_activated"] @ P["ffn_W2"] + P["ffn_b2"], "ffn_out")
    if sc.order == "post":
        close(blk["residual2"], blk["norm1"] + blk["ffn_out"], "residual2")
        close(blk["norm2"], norm_ref(sc, blk["residual2"], P, 2), "norm2")
        close(blk["block_output"], blk["norm2"], "block_output")
    else:
        close(blk["residual2"], blk["residual1"] + blk["ffn_out"], "residual2")
        close(blk["block_output"], blk["residual2"], "block_output")


def norm_ref(sc, x, P, i):
    return norm64(sc, x, P.get("norm%d_weight" % i, np.ones(sc.d_in)),
                  P.get("norm%d_bias" % i, 0))


def norm64(sc, x, w, b):
    if sc.norm == "layer":
        mu = x.mean(1, keepdims=True)
        var = ((x - mu) ** 2).mean(1, keepdims=True)  # biased, as LayerNorm
        return (x - mu) / np.sqrt(var + sc.norm_eps) * w + b
    return x / np.sqrt((x ** 2).mean(1, keepdims=True) + sc.norm_eps) * w


# A spot check of the oracle against the tensors the seeds print (4 decimals, as torch prints):
# scene stem -> (stage, head, row, printed row).
SHOES_NORMED_1 = ["1.5543 0.2013 -0.8427 -0.9129", "0.5031 1.3901 -1.0524 -0.8408",
                  "0.7244 -0.4937 1.1506 -1.3812", "0.6876 0.6453 0.3876 -1.7206",
                  "0.7042 -1.2470 -0.6777 1.2205", "0.4706 -1.6513 0.1694 1.0113",
                  "0.8681 0.4527 0.3810 -1.7018", "-0.6900 -1.1166 0.3356 1.4711"]
SHOES_FFN_OUT = ["0.1996 -0.7154 -0.0501 -0.1783", "0.1308 -0.4855 0.0238 -0.0576",
                 "0.2613 -0.3266 0.0152 -0.0999", "0.3176 -0.4831 -0.0302 -0.1423",
                 "-0.0124 -0.4780 0.0971 -0.3309", "0.0464 -0.3165 0.1180 -0.3305",
                 "0.3129 -0.4818 -0.0272 -0.1422", "0.0503 -0.1795 0.1856 -0.3700"]
SHOES_ENCODER_OUT = ["1.7031 -0.2881 -0.6204 -0.7946", "0.8375 1.1476 -1.0672 -0.9180",
                     "0.8981 -0.6871 1.0562 -1.2672", "1.0155 0.2299 0.4118 -1.6572",
                     "0.8274 -1.4635 -0.3788 1.0149", "0.5928 -1.7174 0.3793 0.7452",
                     "1.1443 0.0501 0.3964 -1.5908", "-0.5959 -1.2929 0.6365 1.2523"]
SHOES_MHA_OUT = ["-0.1172 0.0805 -0.3105 0.2153", "-0.1017 0.0579 -0.3384 0.1675",
                 "-0.1759 0.1428 -0.3050 0.3935", "-0.1817 0.1242 -0.3209 0.4163",
                 "-0.0974 0.0706 -0.2787 0.1747", "-0.1218 0.0870 -0.2922 0.2572",
                 "-0.1558 0.1144 -0.3671 0.3140", "-0.0999 0.0696 -0.2889 0.1924"]

BOOK = {
    "01-simplified": [("scores", 0, 1, "0.9544 1.4950 1.4754 0.8434 0.7070 1.0865"),
                      ("weights", 0, 1, "0.1385 0.2379 0.2333 0.1240 0.1082 0.1581"),
                      ("output", 0, 1, "0.4419 0.6515 0.5683")],
    "02-simplified-sum": [("weights", 0, 1, "0.1455 0.2278 0.2249 0.1285 0.1077 0.1656")],
    "03-self-attention-v1": [("queries", 0, 1, "0.4306 1.4551"),
                             ("scores", 0, 1, "1.2705 1.8524 1.8111 1.0795 0.5577 1.5440"),
                             ("weights", 0, 1, "0.1500 0.2264 0.2199 0.1311 0.0906 0.1820"),
                             ("output", 0, 0, "0.2996 0.8053")],
    "04-self-attention-v2": [("output", 0, 5, "-0.0754 0.0693")],
    "05-causal": [("weights", 0, 1, "0.5517 0.4483 0.0000 0.0000 0.0000 0.0000"),
                  ("scores", 0, 5, "0.3408 0.1270 0.1290 0.0198 0.1290 0.0078")],
    "06-causal-after-softmax": [("masked", 0, 1, "0.2041 0.1659 0.0000 0.0000 0.0000 0.0000"),
                                ("weights", 0, 2, "0.3800 0.3097 0.3103 0.0000 0.0000 0.0000")],
    "07-dropout": [("dropout", 0, 0, "0.3843 0.3293 0.0000 0.3100 0.3442 0.0000")],
    "08-causal-attention": [("output", 0, 2, "-0.6300 -0.0632")],
    "09-mha-wrapper": [("output", 0, 0, "-0.4519 0.2216 0.4772 0.1063")],
    "10-mha": [("output", 0, 0, "0.3190 0.4858")],
    "11-dk-half-slip": [("weights", 0, 1, "0.1623 0.1877 0.1858 0.1547 0.1358 0.1738")],
    "12-shoes-single-head": [("inputs", 0, 0, "0.6747 -0.3556 -0.6071 -1.1760"),
                             ("scaled", 0, 1, "-0.0820 0.1623 -0.5437 0.0661 -0.0908 0.0062 "
                                              "-0.3285 0.0021"),
                             ("context", 0, 1, "0.4238 -0.5244 -0.5151 -0.1296")],
    "13-shoes-mha": [("output", 0, 0, "-0.1172 0.0805 -0.3105 0.2153")],
    # 002's whole encoder block: every printed row of mha_out, normed_1, ffn_out, encoder_out
    "15-shoes-encoder-block":
        [("output", 0, i, r) for i, r in enumerate(SHOES_MHA_OUT)] +
        [("norm1", 0, i, r) for i, r in enumerate(SHOES_NORMED_1)] +
        [("ffn_out", 0, i, r) for i, r in enumerate(SHOES_FFN_OUT)] +
        [("norm2", 0, i, r) for i, r in enumerate(SHOES_ENCODER_OUT)] +
        [("block_output", 0, i, r) for i, r in enumerate(SHOES_ENCODER_OUT)],
}


def book_check(stem, full):
    res = full["layers"][0]
    for stage, h, i, printed in BOOK.get(stem, []):
        if stage in ("inputs", "output"):
            t = res[stage]
        elif stage in BLOCK_STAGES:
            t = res["block"][stage]
        else:
            t = res["per_head"][h][stage]
        got = " ".join("%.4f" % float(v) for v in t[i])
        if got != printed:
            raise SceneError("%s: %s row %d is %s, the seeds print %s" % (stem, stage, i, got,
                                                                          printed))
    if stem == "16-layernorm-two-slip":
        # 002's LayerNorm(normalized_shape=2) cell: every normalised row prints as +-1.0000
        for stage in ("norm1", "norm2"):
            for row in res["block"][stage]:
                got = sorted("%.4f" % float(v) for v in row)
                if got != ["-1.0000", "1.0000"]:
                    raise SceneError("%s: a %s row prints %s" % (stem, stage, got))


# Scene pairs whose numbers must agree: (a, b, stages that must be bit-identical, stages that
# must agree to 1e-5 (the weights of RoPE at another offset: only relative positions count)).
PAIRS = [
    # 004: "Both of those will produce the same result": one fused Linear without bias draws
    # exactly the numbers of three separate ones.
    ("21-fused-qkv", "22-separate-qkv", "all", ()),
    # RoPE: shifting every position by 7 leaves the scores (so the weights) as they were
    ("18-rope", "19-rope-shifted", (), ("scores", "weights", "context", "output")),
]


def pair_check(results):
    for a, b, exact, near in PAIRS:
        if a not in results or b not in results:
            continue
        ra, rb = results[a]["layers"][0], results[b]["layers"][0]
        if exact == "all":
            for h, (da, db) in enumerate(zip(ra["per_head"], rb["per_head"])):
                for name in da:
                    if not torch.equal(da[name], db[name]):
                        raise SceneError("%s and %s differ in head %d %s" % (a, b, h, name))
            for name in ("W_query", "W_key", "W_value", "out", "out_bias"):
                if not torch.equal(ra["params"][name], rb["params"][name]):
                    raise SceneError("%s and %s differ in %s" % (a, b, name))
            if not torch.equal(ra["output"], rb["output"]):
                raise SceneError("%s and %s differ in output" % (a, b))
        for name in near:
            if name == "output":
                pa, pb = [ra["output"]], [rb["output"]]
            else:
                pa = [d[name] for d in ra["per_head"]]
                pb = [d[name] for d in rb["per_head"]]
            for ta, tb in zip(pa, pb):
                if not torch.allclose(ta, tb, rtol=1e-5, atol=1e-5):
                    raise SceneError("%s and %s differ in %s:\n%s\n%s" % (a, b, name, ta, tb))


def stream_check(doc, sc, full):
    """A layer whose parameters are all given draws nothing, so the draws continue across it:
    the scene with those layers left out must draw every other layer's parameters bit for bit
    as this one did (and the same keep-masks when the left-out layers' masks are given). The
    seeds that act before layer 0 only (attention.seed, ffn_seed, ffn_skip) never act when
    layer 0 draws nothing, so they are left out with it."""
    if not sc.weights_listed:
        return
    given = [attn_explicit(w) and (not sc.block or ffn_explicit(w)) for w in sc.layer_weights]
    kept = [L for L in range(sc.layers) if not given[L]]
    if not any(given) or not kept:
        return
    d = dict(doc)
    d["layers"] = len(kept)
    d["weights"] = [{k: v for k, v in sc.layer_weights[L].items() if k not in FINAL_KEYS}
                    for L in kept]
    if given[0]:
        d["attention"] = {k: v for k, v in (doc.get("attention") or {}).items() if k != "seed"}
        if "block" in doc:
            d["block"] = {k: v for k, v in (doc["block"] or {}).items()
                          if k not in ("ffn_seed", "ffn_skip")}
    masks_too = given[0] is False and all("dropout_mask" in sc.layer_weights[L] or
                                          not 0.0 < sc.dropout < 1.0
                                          for L in range(sc.layers) if given[L])
    other = run_scene(Scene(d))
    for i, L in enumerate(kept):
        pa, pb = full["layers"][L]["params"], other["layers"][i]["params"]
        for name in pa:
            if name == "dropout_mask" and not masks_too:
                continue
            if not torch.equal(pa[name], pb[name]):
                raise SceneError("layer %d's %s differs without the given layers" % (L, name))


def self_test():
    """The torch facts the generator relies on."""
    # 002 built FeedForward(4, 8) twice: the first one took exactly 76 uniform draws.
    torch.manual_seed(0)
    FeedForward(4, 8, "relu")
    after_ffn = torch.get_rng_state()
    torch.manual_seed(0)
    skip_uniform_draws(4 * 8 + 8 + 8 * 4 + 4)
    assert torch.equal(after_ffn, torch.get_rng_state())
    # nn.LayerNorm and RMSNorm draw nothing
    torch.manual_seed(0)
    nn.LayerNorm(4)
    RMSNorm(4, 1e-5)
    s = torch.get_rng_state()
    torch.manual_seed(0)
    assert torch.equal(s, torch.get_rng_state())
    # gelu_tanh: torch's tanh GELU and GPT-2's formula written out agree to 1e-6 in float32
    x = torch.linspace(-10.0, 10.0, 200001)
    assert (nn.GELU(approximate="tanh")(x) - gelu_new(x)).abs().max().item() <= 1e-6
    assert torch.equal(nn.GELU(approximate="tanh")(x),
                       torch.nn.functional.gelu(x, approximate="tanh"))


def generate(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    sc = Scene(doc)
    res = run_scene(sc)
    cross_check(sc, res)
    stream_check(doc, sc, res)
    book_check(os.path.splitext(os.path.basename(path))[0], res)
    stem = os.path.splitext(os.path.basename(path))[0]
    write_export(sc, res, os.path.join(OUT_ROOT, stem))
    return stem, sc, res


def on_checkpoint(path):
    with open(path, encoding="utf-8") as f:
        return "model" in (yaml.safe_load(f) or {})


def main(argv):
    self_test()
    paths = argv[1:]
    if not paths:
        import glob
        paths = sorted(glob.glob(os.path.join(ROOT, "scenes", "*.yaml")))
        paths += sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "random", "*.yaml")))
        # A full run owns the folder: drop goldens of scenes that no longer exist.
        if os.path.isdir(OUT_ROOT):
            keep = {os.path.splitext(os.path.basename(p))[0] for p in paths}
            for d in os.listdir(OUT_ROOT):
                if d not in keep:
                    shutil.rmtree(os.path.join(OUT_ROOT, d))
        # Scenes on a checkpoint (model:) are gen_gpt2.py's: it runs them as GPT-2 does.
        paths = [p for p in paths if not on_checkpoint(p)]
    results = {}
    for p in paths:
        stem, sc, res = generate(p)
        results[stem] = res
        print("%-28s n=%-2d d_in=%-2d heads=%d head_dim=%d %s%s" % (
            stem, sc.n, sc.d_in, sc.heads, sc.head_dim, sc.layout,
            " layers=%d" % sc.layers if sc.layers > 1 else ""))
    pair_check(results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
