#!/usr/bin/python3
"""Golden values for attnscope, computed by an independent PyTorch implementation.

Run with Debian's python3 (it has torch 1.13 and yaml):

    /usr/bin/python3 tests/golden/gen_goldens.py [SCENE.yaml ...]

Without arguments it reads scenes/*.yaml and tests/fixtures/random/*.yaml and writes
tests/golden/scenes/<scene-file-stem>/ in the export layout of README.md ("Export format").

This file never looks at the C engine. It follows README.md ("Scene format") and the book's classes
(SelfAttention_v1/_v2, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention) as
literally as it can: the parameters come from real torch calls (torch.manual_seed,
nn.Embedding, nn.Linear, torch.rand, nn.Dropout in training mode) in the documented order.
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
        self.pos_max_len = int(pos.get("max_len", 512))
        self.pos_seed = pos.get("seed")
        self.pos_table = pos.get("table")

        a = doc.get("attention") or {}
        w = doc.get("weights")
        self.weights = w
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

        # scale: True -> sqrt(d_k) as the book writes it (keys.shape[-1]**0.5), False -> none,
        # a number -> that divisor.
        if scale is True:
            self.divisor = self.head_dim ** 0.5
        elif scale is False:
            self.divisor = None
        else:
            self.divisor = float(scale)


# ---------------------------------------------------------------------------------------------
# The book's modules


class Projections(nn.Module):
    """W_query, W_key, W_value as SelfAttention_v1 (torch.rand) or _v2 (nn.Linear) makes them."""

    def __init__(self, d_in, d_out, projection, qkv_bias):
        super().__init__()
        self.projection = projection
        if projection == "rand":  # SelfAttention_v1
            self.W_query = nn.Parameter(torch.rand(d_in, d_out))
            self.W_key = nn.Parameter(torch.rand(d_in, d_out))
            self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        elif projection == "linear":  # SelfAttention_v2 / CausalAttention / MultiHeadAttention
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
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
    """The book's MultiHeadAttention (split layout), recording the stages."""

    def __init__(self, sc):
        super().__init__()
        self.sc = sc
        self.proj = Projections(sc.d_in, sc.d_out, sc.projection, sc.qkv_bias)
        self.out_proj = nn.Linear(sc.D, sc.D, bias=sc.out_bias) if sc.out_proj else None

    def forward(self, x, explicit_keep):
        sc = self.sc
        b, n, _ = x.shape
        queries, keys, values = self.proj(x)
        H, hd = sc.heads, sc.head_dim
        # (b, n, d_out) -> (b, n, H, hd) -> (b, H, n, hd)
        q = queries.reshape(b, n, H, hd).transpose(1, 2)
        k = keys.reshape(b, n, H, hd).transpose(1, 2)
        v = values.reshape(b, n, H, hd).transpose(1, 2)
        keep_in = None if explicit_keep is None else explicit_keep.unsqueeze(0)
        stages, ctx, keep = attention_core(sc, q, k, v, keep_in)
        concat = ctx.transpose(1, 2).contiguous().view(b, n, sc.D)
        out = self.out_proj(concat) if self.out_proj is not None else concat
        per_head = []
        for h in range(H):
            d = {name: t[0, h] for name, t in stages.items()}
            d.update(queries=q[0, h], keys=k[0, h], values=v[0, h], context=ctx[0, h])
            per_head.append(d)
        keep = None if keep is None else keep[0]
        return per_head, concat[0], out[0], keep


class CausalAttentionHead(nn.Module):
    """One head of MultiHeadAttentionWrapper: the book's CausalAttention (mask optional)."""

    def __init__(self, sc):
        super().__init__()
        self.sc = sc
        self.proj = Projections(sc.d_in, sc.d_out, sc.projection, sc.qkv_bias)

    def forward(self, x, explicit_keep):
        q, k, v = self.proj(x)
        keep_in = None if explicit_keep is None else explicit_keep.unsqueeze(0)
        stages, ctx, keep = attention_core(self.sc, q, k, v, keep_in)
        d = {name: t[0] for name, t in stages.items()}
        d.update(queries=q[0], keys=k[0], values=v[0], context=ctx[0])
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
        return per_head, concat[0], out[0], keep


# ---------------------------------------------------------------------------------------------
# A scene, run


def run_scene(sc):
    w = sc.weights
    torch.manual_seed(sc.seed)  # 1.

    # 2. embeddings
    if sc.embed_rows is not None:
        embed = f32(sc.embed_rows)
    else:
        if sc.embed_seed is not None:
            torch.manual_seed(int(sc.embed_seed))
        vocab = {}
        for t in sc.tokens:
            vocab.setdefault(t, len(vocab))
        emb = nn.Embedding(num_embeddings=len(vocab), embedding_dim=sc.embed_dim)
        ids = torch.tensor([vocab[t] for t in sc.tokens])
        embed = emb(ids).detach()

    # 3. learned positions
    x = embed
    if sc.pos_kind == "learned":
        if sc.pos_max_len < sc.n:
            raise SceneError("max_len < tokens")
        if sc.pos_table is not None:
            table = f32(sc.pos_table)
        else:
            if sc.pos_seed is not None:
                torch.manual_seed(int(sc.pos_seed))
            table = nn.Embedding(num_embeddings=sc.pos_max_len, embedding_dim=sc.d_in).weight.data
        positions = torch.arange(sc.n)
        x = embed + table[positions]
    elif sc.pos_kind != "none":
        raise SceneError("unknown positional kind")

    # 4. attention parameters
    explicit = w is not None
    if not explicit and sc.attn_seed is not None:
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
    explicit_keep = None
    if explicit:
        torch.set_rng_state(state)
        load_weights(sc, model, w)
        if "dropout_mask" in w:
            explicit_keep = torch.tensor(w["dropout_mask"], dtype=torch.float32)

    # 5. dropout (drawn inside the forward pass, head after head)
    if sc.dropout > 0 and explicit_keep is None and sc.dropout_seed is not None:
        torch.manual_seed(int(sc.dropout_seed))
    with torch.no_grad():
        per_head, concat, out, keep = model(x.unsqueeze(0), explicit_keep)

    # parameters in x @ W orientation
    params = {}
    if sc.layout == "split":
        p = model.proj.params()
        if p is not None:
            params.update(zip(("W_query", "W_key", "W_value", "b_query", "b_key", "b_value"), p))
    else:
        for h, head in enumerate(model.heads):
            p = head.proj.params()
            if p is not None:
                for name, t in zip(("W_query", "W_key", "W_value", "b_query", "b_key",
                                    "b_value"), p):
                    params["head%d/%s" % (h, name)] = t
    if model.out_proj is not None:
        params["out"] = model.out_proj.weight.data.t().contiguous()
        if model.out_proj.bias is not None:
            params["out_bias"] = model.out_proj.bias.data
    params = {k: v for k, v in params.items() if v is not None}
    if keep is not None:
        params["dropout_mask"] = keep.reshape(sc.heads * sc.n, sc.n)
    return dict(inputs=x, embed=embed, per_head=per_head, concat=concat, output=out,
                params=params)


def load_weights(sc, model, w):
    def mat(key, src=w):
        return f32(src[key])

    def vec(key, src=w):
        return f32(src[key]) if key in src else None

    if sc.layout == "split":
        if sc.projection != "none":
            model.proj.load(mat("query"), mat("key"), mat("value"), vec("query_bias"),
                            vec("key_bias"), vec("value_bias"))
    else:
        for head, hw in zip(model.heads, w["heads"]):
            if sc.projection != "none":
                head.proj.load(mat("query", hw), mat("key", hw), mat("value", hw),
                               vec("query_bias", hw), vec("key_bias", hw), vec("value_bias", hw))
    if model.out_proj is not None:
        with torch.no_grad():
            model.out_proj.weight.copy_(mat("out").t())
            if model.out_proj.bias is not None:
                model.out_proj.bias.copy_(f32(w["out_bias"]))


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


def write_export(sc, res, out_dir):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    toks = sc.tokens
    write_csv(os.path.join(out_dir, "inputs.csv"), res["inputs"], toks)
    for h, d in enumerate(res["per_head"]):
        hdir = os.path.join(out_dir, "head%d" % h)
        for name in ("queries", "keys", "values", "context"):
            write_csv(os.path.join(hdir, name + ".csv"), d[name], toks)
        for name in ("scores", "scaled", "masked", "weights", "dropout"):
            write_csv(os.path.join(hdir, name + ".csv"), d[name], toks, toks)
    write_csv(os.path.join(out_dir, "context.csv"), res["concat"], toks)
    write_csv(os.path.join(out_dir, "output.csv"), res["output"], toks)
    for name, t in res["params"].items():
        path = os.path.join(out_dir, "params", name + ".csv")
        if name == "dropout_mask":
            write_csv(path, t, toks * sc.heads, toks)
        elif t.dim() == 1:
            write_csv(path, t, ["b"])
        else:
            write_csv(path, t, ["d%d" % i for i in range(t.shape[0])])


def cross_check(sc, res):
    """Recomputes every stage in float64 numpy from the recorded inputs, parameters and keep
    mask, the plain way (no view/transpose), and checks the torch stages against it. Catches a
    wrong head slice or stage mapping in the module code above."""
    X = res["inputs"].double().numpy()
    P = {k: v.double().numpy() for k, v in res["params"].items()}
    n, H, hd = sc.n, sc.heads, sc.head_dim

    def proj(name, h):
        if sc.projection == "none" and sc.weights is None:
            W = None
        elif sc.layout == "split":
            W = P["W_" + name][:, h * hd:(h + 1) * hd]
            b = P.get("b_" + name)
            b = None if b is None else b[h * hd:(h + 1) * hd]
        else:
            W = P["head%d/W_%s" % (h, name)]
            b = P.get("head%d/b_%s" % (h, name))
        if W is None:
            return X[:, h * hd:(h + 1) * hd] if sc.layout == "split" else X
        return X @ W + (0 if b is None else b)

    def close(a, b, what):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        fin = np.isfinite(b)
        if not (np.array_equal(np.isfinite(a), fin) and
                np.allclose(a[fin], b[fin], rtol=1e-4, atol=1e-5)):
            raise SceneError("cross-check failed: %s\n%s\n%s" % (what, a, b))

    keep = P.get("dropout_mask")
    future = np.triu(np.ones((n, n)), 1).astype(bool)
    ctxs = []
    for h in range(H):
        d = res["per_head"][h]
        q, k, v = proj("query", h), proj("key", h), proj("value", h)
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
        for name, ref in (("queries", q), ("keys", k), ("values", v), ("scores", s),
                          ("scaled", sc_), ("masked", m), ("weights", wts), ("dropout", dr),
                          ("context", ctx)):
            close(d[name].numpy(), ref, "head %d %s" % (h, name))
        ctxs.append(ctx)
    concat = np.concatenate(ctxs, axis=1)
    close(res["concat"].numpy(), concat, "concat")
    out = concat @ P["out"] + P.get("out_bias", 0) if "out" in P else concat
    close(res["output"].numpy(), out, "output")
    if keep is not None:
        assert set(np.unique(keep)) <= {0.0, 1.0}
        if sc.dropout == 1:
            assert not keep.any()


# A spot check of the oracle against the tensors the seeds print (4 decimals, as torch prints):
# scene stem -> (stage, head, row, printed row).
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
}


def book_check(stem, res):
    for stage, h, i, printed in BOOK.get(stem, []):
        if stage in ("inputs", "output"):
            t = res[stage]
        else:
            t = res["per_head"][h][stage]
        got = " ".join("%.4f" % float(v) for v in t[i])
        if got != printed:
            raise SceneError("%s: %s row %d is %s, the seeds print %s" % (stem, stage, i, got,
                                                                          printed))


def generate(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    sc = Scene(doc)
    res = run_scene(sc)
    cross_check(sc, res)
    book_check(os.path.splitext(os.path.basename(path))[0], res)
    stem = os.path.splitext(os.path.basename(path))[0]
    write_export(sc, res, os.path.join(OUT_ROOT, stem))
    return stem, sc, res


def main(argv):
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
    for p in paths:
        stem, sc, _ = generate(p)
        print("%-28s n=%-2d d_in=%-2d heads=%d head_dim=%d %s" % (
            stem, sc.n, sc.d_in, sc.heads, sc.head_dim, sc.layout))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
