#!/usr/bin/python3
"""Writes the deterministic random scenes tests/fixtures/random/rNN.yaml.

    /usr/bin/python3 tests/golden/gen_random_scenes.py

Each scene is a hand-picked point of the option space of README.md ("Scene format") (the comment at
its top says what it exercises); the numbers in it (explicit embeddings and weights) come from
a fixed random.Random, so running this again writes the same files byte for byte. Every scene
is valid per the schema. Only the Python standard library is needed.

r01..r41 cover the attention of ch. 3; r42..r72 cover the systems added after it (sinusoidal and
rotary positions, position offsets, fused qkv, GQA/MQA, MLA, the encoder/decoder block); r73 on
stack several layers (layers: N, weights as one mapping per layer, block.final_norm,
gelu_tanh). Each later group draws from its own random.Random (SYSTEMS_SEED, LAYERS_SEED), so
the earlier groups' files stay byte for byte what they were.
"""

import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "random")

rng = random.Random(20240611)
SYSTEMS_SEED = 20250918  # the numbers of r42 on
LAYERS_SEED = 20251104  # the numbers of r73 on


def q(s):
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(s, ensure_ascii=False)


def num(v):
    return repr(v) if isinstance(v, float) else str(v)


def row(vals):
    return "[" + ", ".join(num(v) for v in vals) + "]"


def mat(rows_, cols, lo=-1.0, hi=1.0, nd=2):
    return [[round(rng.uniform(lo, hi), nd) for _ in range(cols)] for _ in range(rows_)]


def emit_matrix(lines, indent, key, m):
    lines.append("%s%s:" % (" " * indent, key))
    for r in m:
        lines.append("%s  - %s" % (" " * indent, row(r)))


def scene_yaml(comment, s):
    """s: an ordered description; returns YAML text."""
    lines = ["# " + c for c in comment.strip().splitlines()]
    lines.append("version: 1")
    if "title" in s:
        lines.append("title: " + q(s["title"]))
    if "text" in s:
        lines.append("text: " + q(s["text"]))
    if "tokens" in s:
        lines.append("tokens: [" + ", ".join(q(t) for t in s["tokens"]) + "]")
    if "tokenizer" in s:
        lines.append("tokenizer: " + s["tokenizer"])
    if "seed" in s:
        lines.append("seed: %d" % s["seed"])
    e = s.get("embeddings")
    if isinstance(e, list):
        emit_matrix(lines, 0, "embeddings", e)
    elif isinstance(e, dict):
        lines.append("embeddings: {" + ", ".join("%s: %d" % kv for kv in e.items()) + "}")
    if "positional" in s:
        p = s["positional"]
        if "table" in p:
            lines.append("positional:")
            lines.append("  kind: learned")
            lines.append("  max_len: %d" % p["max_len"])
            if "offset" in p:
                lines.append("  offset: %d" % p["offset"])
            emit_matrix(lines, 2, "table", p["table"])
        else:
            lines.append("positional: {" + ", ".join(
                "%s: %s" % (k, v) for k, v in p.items()) + "}")
    a = s.get("attention")
    if a:
        lines.append("attention:")
        for k, v in a.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            lines.append("  %s: %s" % (k, num(v)))
    b = s.get("block")
    if b is not None:
        lines.append("block:")
        for k, v in b.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            lines.append("  %s: %s" % (k, num(v)))
    if "layers" in s:
        lines.append("layers: %d" % s["layers"])
    w = s.get("weights")
    if isinstance(w, list):  # one mapping per layer; {} = that layer drawn
        lines.append("weights:")
        for lw in w:
            if not lw:
                lines.append("  - {}")
                continue
            sub = []
            emit_weights(sub, 4, lw)
            sub[0] = "  - " + sub[0].lstrip()
            lines.extend(sub)
    elif w:
        lines.append("weights:")
        emit_weights(lines, 2, w)
    return "\n".join(lines) + "\n"


def emit_weights(lines, ind, w):
    for k, v in w.items():
        if k == "heads":
            lines.append(" " * ind + "heads:")
            for hw in v:
                sub = []
                emit_weights(sub, ind + 4, hw)
                sub[0] = " " * (ind + 2) + "- " + sub[0].lstrip()
                lines.extend(sub)
        elif k == "dropout_mask":
            lines.append(" " * ind + "dropout_mask:")
            for head in v:
                lines.append(" " * ind + "  - " + "[" + ", ".join(row(r) for r in head) + "]")
        elif v and isinstance(v[0], list):
            emit_matrix(lines, ind, k, v)
        else:
            lines.append(" " * ind + "%s: %s" % (k, row(v)))


WORDS = ("the cat sat on a mat while my dog ate blue shoes in one small step "
         "your journey starts with feet that are big").split()


def words(n):
    return [rng.choice(WORDS) for _ in range(n)]


def text(n):
    return " ".join(words(n))


def linear_weights(d_in, d_out, bias, nd=3):
    w = {"query": mat(d_in, d_out, nd=nd), "key": mat(d_in, d_out, nd=nd),
         "value": mat(d_in, d_out, nd=nd)}
    if bias:
        w["query_bias"] = mat(1, d_out, nd=nd)[0]
        w["key_bias"] = mat(1, d_out, nd=nd)[0]
        w["value_bias"] = mat(1, d_out, nd=nd)[0]
    return w


def keep_mask(heads, n, p):
    return [[[0 if rng.random() < p else 1 for _ in range(n)] for _ in range(n)]
            for _ in range(heads)]


def build():
    S = []  # (comment, scene)

    def add(comment, s):
        S.append((comment, s))

    # ---- seeds and the book's defaults ---------------------------------------------------
    add("seed 0, defaults everywhere: learned {dim: 3} embeddings (numel 12 < 16), one linear head",
        {"text": text(4), "seed": 0})
    add("seed 1, learned embeddings numel 20 (>= 16, not a multiple of 16), d_out 2",
        {"text": "the cat saw a dog", "seed": 1, "embeddings": {"dim": 4},
         "attention": {"d_out": 2}})
    add("seed 42, repeated tokens share an embedding row (vocab 4 of 7 tokens), dim 4 -> numel 16",
        {"text": "the cat and the dog and the", "seed": 42, "embeddings": {"dim": 4},
         "attention": {"causal": True}})
    add("seed 123, explicit 3-d embeddings, rand projection (SelfAttention_v1), d_out 4 > d_in",
        {"tokens": words(5), "seed": 123, "embeddings": mat(5, 3, 0, 1),
         "attention": {"projection": "rand", "d_out": 4}})
    add("seed 789, explicit embeddings, linear with qkv_bias, causal, dropout 0.1 with dropout_seed",
        {"text": text(7), "seed": 789, "embeddings": mat(7, 3),
         "attention": {"projection": "linear", "d_out": 2, "qkv_bias": True, "causal": True,
                       "dropout": 0.1, "dropout_seed": 123}})
    add("seed 2**31+7, learned dim 5 embeddings (numel 35), 1 token",
        {"tokens": ["alone"], "seed": 2**31 + 7, "embeddings": {"dim": 5},
         "attention": {"d_out": 3}})
    add("seed 2**32+5 (only the low 32 bits seed torch's generator), dim 6, heads 3 split, causal",
        {"text": text(9), "seed": 2**32 + 5, "embeddings": {"dim": 6},
         "attention": {"heads": 3, "causal": True}})
    add("largest seed 2**64-1, learned dim 8 (numel 40), heads 4 split of d_out 8, out_proj",
        {"text": text(6), "seed": 2**64 - 1, "embeddings": {"dim": 8},
         "attention": {"d_out": 8, "heads": 4}})
    add("seed 2**53+1 at the start and separate embedding / attention seeds",
        {"text": text(5), "seed": 2**53 + 1, "embeddings": {"dim": 4, "seed": 7},
         "attention": {"seed": 99, "d_out": 6, "heads": 2}})

    # ---- tokenizers ------------------------------------------------------------------------
    add("words tokenizer: punctuation tokens, an apostrophe word and a non-ASCII word",
        {"text": "It's a café, isn't it? Yes!", "tokenizer": "words", "seed": 5,
         "embeddings": {"dim": 4}, "attention": {"causal": True, "d_out": 2}})
    add("chars tokenizer: every code point, the space and é included (9 tokens)",
        {"text": "café, ok?", "tokenizer": "chars", "seed": 11, "embeddings": {"dim": 3},
         "attention": {"projection": "rand", "d_out": 2, "causal": True}})
    add("whitespace tokenizer with tabs and runs of spaces; punctuation stays in the token",
        {"text": "  hello,\tworld!   big.  dog  ", "tokenizer": "whitespace", "seed": 3,
         "embeddings": {"dim": 2}, "attention": {"d_out": 2}})
    add("explicit tokens with a comma, a quote and non-ASCII (CSV quoting of the labels)",
        {"tokens": ["a,b", "say \"hi\"", "naïve", "x"], "seed": 8,
         "embeddings": mat(4, 3), "attention": {"d_out": 3, "causal": True}})
    add("words tokenizer, 16 tokens: the token limit of these fixtures",
        {"text": "one, two; three: four - five (six) seven's eight nine!", "tokenizer": "words",
         "seed": 21, "embeddings": {"dim": 3}, "attention": {"heads": 1}})

    # ---- positions -------------------------------------------------------------------------
    add("learned positions, max_len 10, separate seeds (the 002 notebook's pattern), dim 4",
        {"text": text(8), "seed": 123, "embeddings": {"dim": 4, "seed": 123},
         "positional": {"kind": "learned", "max_len": 10, "seed": 123},
         "attention": {"seed": 123, "d_out": 4, "heads": 2, "out_bias": False}})
    add("learned positions without a seed: drawn right after the embeddings, max_len 512 default",
        {"text": text(6), "seed": 17, "embeddings": {"dim": 3},
         "positional": {"kind": "learned"}, "attention": {"d_out": 2}})
    add("small tables (numel < 16): embedding 3x3 then positions 4x3, the normal cache carries over",
        {"text": "red green blue", "seed": 4, "embeddings": {"dim": 3},
         "positional": {"kind": "learned", "max_len": 4}, "attention": {"causal": True}})
    add("odd small embedding (numel 5 < 16), then a re-seeded small position table (numel 5)",
        {"tokens": ["hi"], "seed": 6, "embeddings": {"dim": 5},
         "positional": {"kind": "learned", "max_len": 1, "seed": 6}})
    add("explicit embeddings plus learned positions, max_len == token count (numel 33)",
        {"tokens": words(11), "seed": 31, "embeddings": mat(11, 3),
         "positional": {"kind": "learned", "max_len": 11}, "attention": {"d_out": 3}})
    add("explicit positional table",
        {"text": text(3), "seed": 2, "embeddings": mat(3, 2),
         "positional": {"kind": "learned", "max_len": 4, "table": mat(4, 2)},
         "attention": {"d_out": 2}})

    # ---- projection none, normalisation and scaling ----------------------------------------
    add("projection none (Q = K = V = X), default: no scaling, softmax",
        {"tokens": words(5), "seed": 9, "embeddings": mat(5, 4, 0, 1),
         "attention": {"projection": "none"}})
    add("projection none with the naive sum normalisation, causal (-inf cells count as 0)",
        {"tokens": words(6), "seed": 9, "embeddings": mat(6, 3, 0.05, 1),
         "attention": {"projection": "none", "normalize": "sum", "causal": True}})
    add("projection none split into 2 heads of 2, scale true (sqrt(2)), causal after_softmax",
        {"tokens": words(6), "seed": 10, "embeddings": mat(6, 4),
         "attention": {"projection": "none", "heads": 2, "scale": True, "causal": True,
                       "mask_mode": "after_softmax", "out_proj": False}})
    add("projection none, wrapper of 2 identical heads, out_proj with bias (the only draws)",
        {"tokens": words(4), "seed": 12, "embeddings": mat(4, 3),
         "attention": {"projection": "none", "heads": 2, "head_layout": "wrapper",
                       "out_proj": True}})
    add("rand projection, sum normalisation (positive inputs), scale by a number (2.5)",
        {"tokens": words(5), "seed": 13, "embeddings": mat(5, 3, 0.1, 1),
         "attention": {"projection": "rand", "d_out": 2, "normalize": "sum", "scale": 2.5}})
    add("linear, scale false, d_out 5 > d_in 3",
        {"text": text(6), "seed": 14, "embeddings": mat(6, 3),
         "attention": {"d_out": 5, "scale": False}})
    add("linear, scale 0.5 (multiplies by 2), causal before_softmax, attention.seed",
        {"text": text(7), "seed": 15, "embeddings": {"dim": 4},
         "attention": {"d_out": 2, "scale": 0.5, "causal": True, "seed": 1}})

    # ---- heads and layouts -----------------------------------------------------------------
    add("split, 2 heads, out_proj off (context == output), qkv_bias",
        {"text": text(5), "seed": 16, "embeddings": {"dim": 4},
         "attention": {"d_out": 4, "heads": 2, "out_proj": False, "qkv_bias": True}})
    add("split, 4 heads of 1, causal, out_proj without bias, dropout 0.5 with dropout_seed",
        {"text": text(8), "seed": 18, "embeddings": {"dim": 3},
         "attention": {"d_out": 4, "heads": 4, "causal": True, "out_bias": False,
                       "dropout": 0.5, "dropout_seed": 5}})
    add("split, 1 head with out_proj forced on",
        {"text": text(4), "seed": 19, "embeddings": {"dim": 3},
         "attention": {"d_out": 2, "out_proj": True}})
    add("wrapper, 3 heads of d_out 2, causal, qkv_bias, out_proj, dropout 0.9 without dropout_seed",
        {"text": text(6), "seed": 20, "embeddings": {"dim": 3},
         "attention": {"d_out": 2, "heads": 3, "head_layout": "wrapper", "causal": True,
                       "qkv_bias": True, "out_proj": True, "dropout": 0.9}})
    add("wrapper of torch.rand heads (v1 style), 2 heads, after_softmax mask",
        {"tokens": words(5), "seed": 22, "embeddings": mat(5, 3, 0, 1),
         "attention": {"projection": "rand", "d_out": 3, "heads": 2, "head_layout": "wrapper",
                       "causal": True, "mask_mode": "after_softmax"}})
    add("wrapper, 4 heads, not causal, dropout 1.0 (everything dropped, nothing drawn)",
        {"text": text(5), "seed": 23, "embeddings": {"dim": 4},
         "attention": {"d_out": 1, "heads": 4, "head_layout": "wrapper", "dropout": 1.0}})
    add("split, 2 heads, dropout 1.0 then nothing after it: output is the out_proj bias",
        {"text": text(3), "seed": 24, "embeddings": {"dim": 4},
         "attention": {"heads": 2, "dropout": 1.0, "dropout_seed": 3}})
    add("16 tokens, dim 8, 4 split heads, causal, dropout 0.1 drawn from the running stream",
        {"text": text(16), "seed": 25, "embeddings": {"dim": 8},
         "positional": {"kind": "learned", "max_len": 20},
         "attention": {"d_out": 8, "heads": 4, "causal": True, "dropout": 0.1}})
    add("12 tokens, wrapper 2 heads, dropout 0.5, attention.seed and dropout_seed both set",
        {"text": text(12), "seed": 26, "embeddings": {"dim": 5},
         "attention": {"d_out": 3, "heads": 2, "head_layout": "wrapper", "causal": True,
                       "dropout": 0.5, "seed": 26, "dropout_seed": 26}})

    # ---- explicit weights ------------------------------------------------------------------
    n = 5
    w = linear_weights(4, 4, True)
    w["out"] = mat(4, 4, nd=3)
    w["out_bias"] = mat(1, 4, nd=3)[0]
    w["dropout_mask"] = keep_mask(2, n, 0.5)
    add("explicit weights: split 2 heads, qkv biases, out_proj with bias, explicit dropout mask",
        {"tokens": words(n), "seed": 27, "embeddings": mat(n, 4),
         "attention": {"d_out": 4, "heads": 2, "qkv_bias": True, "causal": True,
                       "dropout": 0.5},
         "weights": w})
    n = 4
    w = {"heads": [linear_weights(3, 2, False), linear_weights(3, 2, False)],
         "out": mat(4, 4, nd=3)}
    add("explicit weights: wrapper 2 heads, out_proj without bias",
        {"tokens": words(n), "seed": 28, "embeddings": mat(n, 3),
         "attention": {"d_out": 2, "heads": 2, "head_layout": "wrapper", "out_proj": True,
                       "out_bias": False, "causal": True},
         "weights": w})
    n = 6
    add("explicit weights draw nothing: attention.seed is ignored, dropout 0.1 comes from the "
        "stream right after the learned embeddings",
        {"text": text(n), "seed": 29, "embeddings": {"dim": 3},
         "attention": {"d_out": 2, "seed": 1000, "dropout": 0.1},
         "weights": linear_weights(3, 2, False)})
    n = 5
    add("explicit weights, scale by 3, causal after_softmax, learned positions",
        {"text": text(n), "seed": 30, "embeddings": mat(n, 3),
         "positional": {"kind": "learned", "max_len": 8, "seed": 30},
         "attention": {"d_out": 3, "scale": 3, "causal": True, "mask_mode": "after_softmax"},
         "weights": linear_weights(3, 3, False)})
    n = 7
    w = {"heads": [linear_weights(4, 3, True) for _ in range(3)],
         "out": mat(9, 9, nd=3), "out_bias": mat(1, 9, nd=3)[0],
         "dropout_mask": keep_mask(3, n, 0.1)}
    add("explicit weights: wrapper 3 heads with biases, out_proj, explicit dropout mask p=0.1",
        {"tokens": words(n), "seed": 31, "embeddings": mat(n, 4),
         "attention": {"d_out": 3, "heads": 3, "head_layout": "wrapper", "qkv_bias": True,
                       "out_proj": True, "dropout": 0.1},
         "weights": w})
    return S


def vec(n, lo=-1.0, hi=1.0, nd=3):
    return mat(1, n, lo, hi, nd)[0]


def build_systems():
    """r42 on: the systems of 004 and 002's block, mixed with causal, dropout and the wrapper
    where the README allows them (rope with either layout; fused, kv_heads and kv_latent with
    the split layout only; MLA without rope or qkv_bias)."""
    global rng
    rng = random.Random(SYSTEMS_SEED)
    S = []

    def add(comment, s):
        S.append((comment, s))

    # ---- sinusoidal and learned positions with an offset -----------------------------------
    add("sinusoidal positions (the PyTorch tutorial's table), d_in 4, split 2 heads, causal",
        {"text": text(6), "seed": 42, "embeddings": {"dim": 4},
         "positional": {"kind": "sinusoidal"},
         "attention": {"heads": 2, "causal": True}})
    add("sinusoidal, base 100, offset 5, explicit embeddings (d 6), rand projection, dropout 0.2 "
        "with dropout_seed",
        {"tokens": words(7), "seed": 43, "embeddings": mat(7, 6),
         "positional": {"kind": "sinusoidal", "base": 100, "offset": 5},
         "attention": {"projection": "rand", "d_out": 3, "dropout": 0.2, "dropout_seed": 9}})
    add("sinusoidal d_in 2 (one frequency), a single token at position 1000",
        {"tokens": ["far"], "seed": 44, "embeddings": {"dim": 2},
         "positional": {"kind": "sinusoidal", "offset": 1000},
         "attention": {"d_out": 2}})
    add("learned positions with offset 3: table rows 3..8 of a seeded max_len 12 table",
        {"text": text(6), "seed": 45, "embeddings": {"dim": 4},
         "positional": {"kind": "learned", "max_len": 12, "seed": 45, "offset": 3},
         "attention": {"d_out": 4, "heads": 2, "causal": True}})
    add("explicit positional table read from row 2 on (offset 2, max_len 7 == offset + tokens)",
        {"text": text(5), "seed": 46, "embeddings": mat(5, 3),
         "positional": {"kind": "learned", "max_len": 7, "offset": 2, "table": mat(7, 3)},
         "attention": {"d_out": 2}})

    # ---- RoPE ------------------------------------------------------------------------------
    add("rope adjacent with the wrapper: 2 heads of d_out 4, causal, qkv_bias",
        {"text": text(7), "seed": 47, "embeddings": {"dim": 3},
         "positional": {"kind": "rope"},
         "attention": {"d_out": 4, "heads": 2, "head_layout": "wrapper", "causal": True,
                       "qkv_bias": True}})
    add("rope halves with the wrapper: 3 torch.rand heads of d_out 2, out_proj, dropout 0.5 from "
        "the running stream",
        {"text": text(6), "seed": 48, "embeddings": {"dim": 4},
         "positional": {"kind": "rope", "rope_pairs": "halves"},
         "attention": {"projection": "rand", "d_out": 2, "heads": 3, "head_layout": "wrapper",
                       "out_proj": True, "dropout": 0.5}})
    n = 6
    w = {"query": mat(4, 4, nd=3), "key": mat(4, 4, nd=3), "value": mat(4, 4, nd=3),
         "query_bias": vec(4), "key_bias": vec(4), "value_bias": vec(4),
         "out": mat(4, 4, nd=3), "out_bias": vec(4), "dropout_mask": keep_mask(2, n, 0.3)}
    add("rope adjacent, base 500, offset 11, split 2 heads of 2, explicit weights with biases and "
        "an explicit dropout mask",
        {"tokens": words(n), "seed": 49, "embeddings": mat(n, 4),
         "positional": {"kind": "rope", "base": 500, "offset": 11},
         "attention": {"d_out": 4, "heads": 2, "qkv_bias": True, "causal": True,
                       "dropout": 0.3},
         "weights": w})
    add("rope halves, offset 3, projection none: q = k = x rotated, scaled by sqrt(4), causal "
        "after_softmax",
        {"tokens": words(5), "seed": 50, "embeddings": mat(5, 4),
         "positional": {"kind": "rope", "rope_pairs": "halves", "offset": 3},
         "attention": {"projection": "none", "scale": True, "causal": True,
                       "mask_mode": "after_softmax"}})
    add("rope adjacent, 4 split heads of head_dim 2 (one complex number each), base 10, "
        "16 tokens",
        {"text": text(16), "seed": 51, "embeddings": {"dim": 8},
         "positional": {"kind": "rope", "base": 10},
         "attention": {"d_out": 8, "heads": 4, "causal": True}})

    # ---- fused projections -----------------------------------------------------------------
    add("fused qkv with qkv_bias (weights, then biases), 3 heads, causal, dropout 0.1 with "
        "dropout_seed",
        {"text": text(6), "seed": 52, "embeddings": {"dim": 6},
         "attention": {"qkv": "fused", "qkv_bias": True, "d_out": 6, "heads": 3, "causal": True,
                       "dropout": 0.1, "dropout_seed": 52}})
    add("fused qkv with MQA (split [Dq | Dkv | Dkv] = [4 | 2 | 2]), rope adjacent, out_proj "
        "without bias",
        {"text": text(5), "seed": 53, "embeddings": {"dim": 4},
         "positional": {"kind": "rope"},
         "attention": {"qkv": "fused", "d_out": 4, "heads": 2, "kv_heads": 1,
                       "out_bias": False}})
    add("fused_heads (view/chunk) with qkv_bias, rope halves at offset 2, dropout 0.3, "
        "attention.seed",
        {"text": text(7), "seed": 54, "embeddings": {"dim": 4},
         "positional": {"kind": "rope", "rope_pairs": "halves", "offset": 2},
         "attention": {"qkv": "fused_heads", "qkv_bias": True, "d_out": 8, "heads": 2,
                       "causal": True, "dropout": 0.3, "seed": 7}})
    n = 5
    add("explicit fused weights with GQA: qkv 4 x (4 + 2 + 2), qkv_bias, 2 heads sharing 1 K/V "
        "head",
        {"tokens": words(n), "seed": 55, "embeddings": mat(n, 4),
         "attention": {"qkv": "fused", "qkv_bias": True, "d_out": 4, "heads": 2, "kv_heads": 1,
                       "causal": True},
         "weights": {"qkv": mat(4, 8, nd=3), "qkv_bias": vec(8), "out": mat(4, 4, nd=3),
                     "out_bias": vec(4)}})
    n = 6
    add("explicit fused_heads weights: qkv 3 x 12 cut per head (2 heads of 2), explicit out "
        "without bias",
        {"tokens": words(n), "seed": 56, "embeddings": mat(n, 3),
         "attention": {"qkv": "fused_heads", "d_out": 4, "heads": 2, "causal": True,
                       "out_bias": False},
         "weights": {"qkv": mat(3, 12, nd=3), "out": mat(4, 4, nd=3)}})

    # ---- grouped-query and multi-query attention -------------------------------------------
    add("GQA with torch.rand projections: 6 heads of 1, 2 K/V heads (W_key 3 x 2), causal",
        {"text": text(6), "seed": 57, "embeddings": {"dim": 3},
         "attention": {"projection": "rand", "d_out": 6, "heads": 6, "kv_heads": 2,
                       "causal": True}})
    add("MQA: 3 heads of 2, 1 K/V head, qkv_bias, learned positions, dropout 0.5 with "
        "dropout_seed",
        {"text": text(7), "seed": 58, "embeddings": {"dim": 4},
         "positional": {"kind": "learned", "max_len": 8},
         "attention": {"d_out": 6, "heads": 3, "kv_heads": 1, "qkv_bias": True,
                       "dropout": 0.5, "dropout_seed": 58}})
    n = 5
    w = {"query": mat(4, 8, nd=3), "key": mat(4, 4, nd=3), "value": mat(4, 4, nd=3),
         "query_bias": vec(8), "key_bias": vec(4), "value_bias": vec(4),
         "out": mat(8, 8, nd=3), "out_bias": vec(8), "dropout_mask": keep_mask(4, n, 0.2)}
    add("explicit GQA weights (query 4 x 8, key and value 4 x 4), 4 heads in 2 groups, rope "
        "halves, explicit dropout mask",
        {"tokens": words(n), "seed": 59, "embeddings": mat(n, 4),
         "positional": {"kind": "rope", "rope_pairs": "halves"},
         "attention": {"d_out": 8, "heads": 4, "kv_heads": 2, "qkv_bias": True, "causal": True,
                       "dropout": 0.2},
         "weights": w})
    add("GQA 8 heads of 1 in 4 groups, attention.seed, not causal, scale false",
        {"text": text(6), "seed": 60, "embeddings": {"dim": 5},
         "attention": {"d_out": 8, "heads": 8, "kv_heads": 4, "scale": False, "seed": 3}})

    # ---- multi-head latent attention -------------------------------------------------------
    add("MLA with a 1-number latent, 2 heads, causal, out_proj without bias",
        {"text": text(6), "seed": 61, "embeddings": {"dim": 4},
         "attention": {"kv_latent": 1, "d_out": 4, "heads": 2, "causal": True,
                       "out_bias": False}})
    add("MLA with r 3 > head_dim, 1 head (no out_proj), dropout 0.2 from the running stream",
        {"text": text(5), "seed": 62, "embeddings": {"dim": 5},
         "attention": {"kv_latent": 3, "d_out": 2, "dropout": 0.2}})
    n = 6
    add("explicit MLA weights: query 4 x 4, down 4 x 2, key_up and value_up 2 x 4, out with bias",
        {"tokens": words(n), "seed": 63, "embeddings": mat(n, 4),
         "attention": {"kv_latent": 2, "d_out": 4, "heads": 2, "causal": True},
         "weights": {"query": mat(4, 4, nd=3), "down": mat(4, 2, nd=3),
                     "key_up": mat(2, 4, nd=3), "value_up": mat(2, 4, nd=3),
                     "out": mat(4, 4, nd=3), "out_bias": vec(4)}})
    add("MLA r 4, 3 heads of 2, learned positions, in a post-norm RMSNorm block",
        {"text": text(7), "seed": 64, "embeddings": {"dim": 6},
         "positional": {"kind": "learned", "max_len": 9, "seed": 64},
         "attention": {"kv_latent": 4, "d_out": 6, "heads": 3, "causal": True},
         "block": {"order": "post", "norm": "rms", "ffn_hidden": 5}})

    # ---- blocks ----------------------------------------------------------------------------
    add("post-norm LayerNorm block, default ffn_hidden (4 x d_in), relu, ffn_seed, causal",
        {"text": text(6), "seed": 65, "embeddings": {"dim": 4},
         "attention": {"d_out": 4, "heads": 2, "causal": True},
         "block": {"order": "post", "norm": "layer", "activation": "relu", "ffn_seed": 5}})
    add("pre-norm RMSNorm block, gelu, norm_eps 1e-3, rope adjacent, MQA, causal",
        {"text": text(7), "seed": 66, "embeddings": {"dim": 8},
         "positional": {"kind": "rope"},
         "attention": {"d_out": 8, "heads": 4, "kv_heads": 1, "causal": True},
         "block": {"order": "pre", "norm": "rms", "norm_eps": 0.001, "ffn_hidden": 12,
                   "activation": "gelu"}})
    add("post-norm block over the wrapper (2 heads of 2 = d_in 4, out_proj), dropout 0.1 with "
        "dropout_seed after the FFN, ffn_skip 5",
        {"text": text(6), "seed": 67, "embeddings": {"dim": 4},
         "attention": {"d_out": 2, "heads": 2, "head_layout": "wrapper", "out_proj": True,
                       "causal": True, "dropout": 0.1, "dropout_seed": 67},
         "block": {"order": "post", "ffn_hidden": 6, "ffn_skip": 5}})
    n = 5
    add("pre-norm LayerNorm block with explicit FFN weights and explicit norm weights and biases; "
        "the attention drawn after attention.seed",
        {"tokens": words(n), "seed": 68, "embeddings": mat(n, 4),
         "attention": {"d_out": 4, "heads": 2, "causal": True, "seed": 68},
         "block": {"order": "pre", "norm": "layer", "ffn_hidden": 3, "activation": "gelu"},
         "weights": {"ffn_W1": mat(4, 3, nd=3), "ffn_b1": vec(3), "ffn_W2": mat(3, 4, nd=3),
                     "ffn_b2": vec(4), "norm1_weight": vec(4, 0.5, 1.5),
                     "norm1_bias": vec(4, -0.5, 0.5), "norm2_weight": vec(4, 0.5, 1.5),
                     "norm2_bias": vec(4, -0.5, 0.5)}})
    n = 6
    add("post-norm RMSNorm block with explicit attention weights and norm weights; the FFN drawn "
        "after ffn_seed and 13 skipped draws",
        {"tokens": words(n), "seed": 69, "embeddings": mat(n, 3),
         "attention": {"d_out": 3, "causal": True, "out_proj": True},
         "block": {"order": "post", "norm": "rms", "ffn_hidden": 4, "ffn_seed": 69,
                   "ffn_skip": 13},
         "weights": {"query": mat(3, 3, nd=3), "key": mat(3, 3, nd=3), "value": mat(3, 3, nd=3),
                     "out": mat(3, 3, nd=3), "out_bias": vec(3),
                     "norm1_weight": vec(3, 0.5, 1.5), "norm2_weight": vec(3, 0.5, 1.5)}})
    add("pre-norm block: fused_heads, rope, causal, dropout 0.1 drawn after the FFN, gelu, "
        "ffn_hidden 3, norm_eps 1e-4, 12 tokens",
        {"text": text(12), "seed": 70, "embeddings": {"dim": 6},
         "positional": {"kind": "rope", "offset": 4},
         "attention": {"qkv": "fused_heads", "d_out": 6, "heads": 3, "causal": True,
                       "dropout": 0.1},
         "block": {"order": "pre", "norm": "layer", "norm_eps": 0.0001, "ffn_hidden": 3,
                   "activation": "gelu"}})
    add("projection none in a post-norm block: the attention draws nothing, the FFN comes right "
        "after the embeddings",
        {"text": text(5), "seed": 71, "embeddings": {"dim": 4},
         "attention": {"projection": "none", "heads": 2, "scale": True, "out_proj": False},
         "block": {"order": "post", "ffn_hidden": 4}})
    add("pre-norm block with dropout 1.0: the attention output is out_proj's bias, sinusoidal "
        "positions",
        {"text": text(5), "seed": 72, "embeddings": {"dim": 4},
         "positional": {"kind": "sinusoidal", "offset": 2},
         "attention": {"heads": 2, "dropout": 1.0, "causal": True},
         "block": {"order": "pre", "ffn_hidden": 4, "activation": "gelu"}})
    return S


def ffn_weights(d, hidden):
    return {"ffn_W1": mat(d, hidden, nd=3), "ffn_b1": vec(hidden), "ffn_W2": mat(hidden, d, nd=3),
            "ffn_b2": vec(d)}


def build_layers():
    """r73 on: layers: N (2 to 4) over the options above. Every layer draws its attention, then
    its FFN; the dropout masks come after all of them, layer after layer. Explicit weights are
    a list of one mapping per layer, with {} for a drawn layer between explicit ones."""
    global rng
    rng = random.Random(LAYERS_SEED)
    S = []

    def add(comment, s):
        S.append((comment, s))

    # ---- stacked blocks --------------------------------------------------------------------
    add("2 post-norm LayerNorm blocks, relu, split 2 heads, causal; ffn_seed re-seeds before "
        "layer 0's FFN only (layer 1's attention continues from there)",
        {"text": text(6), "seed": 73, "embeddings": {"dim": 4},
         "attention": {"d_out": 4, "heads": 2, "causal": True},
         "block": {"order": "post", "norm": "layer", "ffn_hidden": 6, "ffn_seed": 5},
         "layers": 2})
    add("3 pre-norm RMSNorm blocks (LLaMA-like): gelu_tanh, rope adjacent in every layer, GQA "
        "4 heads over 2 K/V heads, causal, final_norm with the default weight",
        {"text": text(7), "seed": 74, "embeddings": {"dim": 8},
         "positional": {"kind": "rope"},
         "attention": {"d_out": 8, "heads": 4, "kv_heads": 2, "causal": True},
         "block": {"order": "pre", "norm": "rms", "ffn_hidden": 10, "activation": "gelu_tanh",
                   "final_norm": True},
         "layers": 3})
    d = 6
    add("4 pre-norm LayerNorm blocks (GPT-2-like): fused qkv with qkv_bias, learned positions "
        "from offset 3, gelu_tanh, final_norm with explicit weight and bias in the last layer's "
        "mapping (the others {})",
        {"text": text(5), "seed": 75, "embeddings": {"dim": d},
         "positional": {"kind": "learned", "max_len": 10, "offset": 3},
         "attention": {"qkv": "fused", "qkv_bias": True, "d_out": d, "heads": 2,
                       "causal": True},
         "block": {"order": "pre", "norm": "layer", "ffn_hidden": 8, "activation": "gelu_tanh",
                   "final_norm": True},
         "layers": 4,
         "weights": [{}, {}, {}, {"final_norm_weight": vec(d, 0.5, 1.5),
                                  "final_norm_bias": vec(d, -0.5, 0.5)}]})
    add("2 post-norm LayerNorm blocks, gelu, dropout 0.2 with dropout_seed: layer 0's masks then "
        "layer 1's, after ffn_skip 7 before layer 0's FFN",
        {"text": text(6), "seed": 76, "embeddings": {"dim": 4},
         "attention": {"d_out": 4, "heads": 2, "causal": True, "dropout": 0.2,
                       "dropout_seed": 76},
         "block": {"order": "post", "ffn_hidden": 5, "activation": "gelu", "ffn_skip": 7},
         "layers": 2})
    add("3 pre-norm RMSNorm blocks over the wrapper (2 heads of 2, out_proj), relu, dropout 0.3 "
        "from the running stream after every layer's parameters",
        {"text": text(5), "seed": 77, "embeddings": {"dim": 4},
         "attention": {"d_out": 2, "heads": 2, "head_layout": "wrapper", "out_proj": True,
                       "dropout": 0.3},
         "block": {"order": "pre", "norm": "rms", "ffn_hidden": 4},
         "layers": 3})

    # ---- attention-only stacks (no block: layer L + 1 reads layer L's output) --------------
    add("3 attention-only layers: split 2 heads with out_proj, causal, dropout 0.1 with "
        "dropout_seed",
        {"text": text(6), "seed": 78, "embeddings": {"dim": 4},
         "attention": {"d_out": 4, "heads": 2, "causal": True, "dropout": 0.1,
                       "dropout_seed": 78},
         "layers": 3})
    add("4 attention-only layers of torch.rand projections (1 head, d_out = d_in 3), scale 2, "
        "causal after_softmax, explicit embeddings",
        {"tokens": words(5), "seed": 79, "embeddings": mat(5, 3, 0, 1),
         "attention": {"projection": "rand", "scale": 2, "causal": True,
                       "mask_mode": "after_softmax"},
         "layers": 4})

    # ---- explicit weights as a list --------------------------------------------------------
    n, d = 5, 3
    l0 = linear_weights(d, d, False)
    l0.update(out=mat(d, d, nd=3), out_bias=vec(d))
    l0.update(ffn_weights(d, 4))
    l0.update(norm1_weight=vec(d, 0.5, 1.5), norm2_weight=vec(d, 0.5, 1.5))
    l2 = linear_weights(d, d, False)
    l2.update(out=mat(d, d, nd=3), out_bias=vec(d))
    add("3 post-norm RMSNorm blocks, weights [explicit, {}, explicit attention]: layer 0 draws "
        "nothing, layer 1 draws right after the embeddings, layer 2 draws only its FFN",
        {"tokens": words(n), "seed": 80, "embeddings": mat(n, d),
         "attention": {"d_out": d, "causal": True, "out_proj": True},
         "block": {"order": "post", "norm": "rms", "ffn_hidden": 4},
         "layers": 3,
         "weights": [l0, {}, l2]})
    n, d = 6, 4
    l1 = linear_weights(d, d, True)
    l1.update(out=mat(d, d, nd=3), out_bias=vec(d))
    l1.update(ffn_weights(d, 5))
    l1.update(norm1_weight=vec(d, 0.5, 1.5), norm1_bias=vec(d, -0.5, 0.5))
    l1["dropout_mask"] = keep_mask(2, n, 0.2)
    add("3 pre-norm LayerNorm blocks, weights [{}, explicit with a dropout mask, {}]: "
        "attention.seed, ffn_seed and ffn_skip act before layer 0 only, layer 2 continues the "
        "stream; dropout 0.2 with dropout_seed draws layer 0's and layer 2's masks",
        {"text": text(n), "seed": 81, "embeddings": {"dim": d},
         "attention": {"d_out": d, "heads": 2, "qkv_bias": True, "causal": True,
                       "dropout": 0.2, "dropout_seed": 81, "seed": 8},
         "block": {"order": "pre", "norm": "layer", "ffn_hidden": 5, "activation": "gelu",
                   "ffn_seed": 9, "ffn_skip": 3},
         "layers": 3,
         "weights": [{}, l1, {}]})
    n, d = 5, 8
    l1 = {"query": mat(d, 8, nd=3), "key": mat(d, 4, nd=3), "value": mat(d, 4, nd=3),
          "out": mat(8, 8, nd=3), "out_bias": vec(8), "dropout_mask": keep_mask(4, n, 0.25)}
    add("3 attention-only GQA layers (4 heads, 2 K/V heads), rope halves at offset 3, dropout "
        "0.25 without dropout_seed: masks [given, given with explicit weights, drawn]",
        {"text": text(n), "seed": 82, "embeddings": {"dim": d},
         "positional": {"kind": "rope", "rope_pairs": "halves", "offset": 3},
         "attention": {"d_out": 8, "heads": 4, "kv_heads": 2, "causal": True,
                       "dropout": 0.25},
         "layers": 3,
         "weights": [{"dropout_mask": keep_mask(4, n, 0.25)}, l1, {}]})
    n, d = 5, 4
    l0 = linear_weights(d, d, True)  # the wrapper's 2 heads of 2 as column blocks
    l0.update(out=mat(d, d, nd=3), out_bias=vec(d))
    add("2 post-norm LayerNorm blocks over the wrapper (2 heads of 2, qkv_bias, out_proj); "
        "layer 0's heads given as column blocks of query/key/value, layer 1 drawn; gelu_tanh; "
        "final_norm with explicit weight and bias",
        {"tokens": words(n), "seed": 83, "embeddings": mat(n, d),
         "attention": {"d_out": 2, "heads": 2, "head_layout": "wrapper", "qkv_bias": True,
                       "out_proj": True, "causal": True},
         "block": {"order": "post", "norm": "layer", "ffn_hidden": 6, "activation": "gelu_tanh",
                   "final_norm": True},
         "layers": 2,
         "weights": [l0, {"final_norm_weight": vec(d, 0.5, 1.5),
                          "final_norm_bias": vec(d, -0.5, 0.5)}]})

    # ---- the systems in a stack ------------------------------------------------------------
    add("2 pre-norm RMSNorm blocks of fused_heads with rope adjacent, dropout 0.1 with "
        "dropout_seed, final_norm (default weight)",
        {"text": text(8), "seed": 84, "embeddings": {"dim": 6},
         "positional": {"kind": "rope", "offset": 1},
         "attention": {"qkv": "fused_heads", "d_out": 6, "heads": 3, "causal": True,
                       "dropout": 0.1, "dropout_seed": 84},
         "block": {"order": "pre", "norm": "rms", "ffn_hidden": 7, "final_norm": True},
         "layers": 2})
    add("2 pre-norm LayerNorm blocks of MLA (r 2, 2 heads), learned positions from offset 2, "
        "gelu",
        {"text": text(6), "seed": 85, "embeddings": {"dim": 4},
         "positional": {"kind": "learned", "max_len": 9, "seed": 85, "offset": 2},
         "attention": {"kv_latent": 2, "d_out": 4, "heads": 2, "causal": True},
         "block": {"order": "pre", "norm": "layer", "ffn_hidden": 6, "activation": "gelu"},
         "layers": 2})
    n, d = 6, 4
    add("4 attention-only layers: fused qkv with qkv_bias and MQA (2 heads, 1 K/V head), an "
        "explicit positional table from offset 1, dropout 0.5 from the running stream",
        {"text": text(n), "seed": 86, "embeddings": {"dim": d},
         "positional": {"kind": "learned", "max_len": 8, "offset": 1, "table": mat(8, d)},
         "attention": {"qkv": "fused", "qkv_bias": True, "d_out": d, "heads": 2, "kv_heads": 1,
                       "causal": True, "dropout": 0.5},
         "layers": 4})
    d = 16
    add("2 post-norm LayerNorm blocks, d_in 16, 4 heads, sinusoidal positions from offset 4, "
        "relu, norm_eps 1e-3, 10 tokens; final_norm with an explicit weight only (bias 0)",
        {"text": text(10), "seed": 87, "embeddings": {"dim": d},
         "positional": {"kind": "sinusoidal", "offset": 4},
         "attention": {"d_out": d, "heads": 4},
         "block": {"order": "post", "norm": "layer", "norm_eps": 0.001, "ffn_hidden": 12,
                   "final_norm": True},
         "layers": 2,
         "weights": [{}, {"final_norm_weight": vec(d, 0.5, 1.5)}]})
    d = 4
    l2 = ffn_weights(d, 3)
    l2["final_norm_weight"] = vec(d, 0.5, 1.5)
    add("3 pre-norm RMSNorm blocks, gelu_tanh, dropout 0.3 with dropout_seed; weights "
        "[{}, {}, explicit FFN and final_norm_weight]: layer 2 draws only its attention",
        {"text": text(7), "seed": 88, "embeddings": {"dim": d},
         "attention": {"d_out": d, "heads": 2, "causal": True, "dropout": 0.3,
                       "dropout_seed": 88},
         "block": {"order": "pre", "norm": "rms", "ffn_hidden": 3, "activation": "gelu_tanh",
                   "final_norm": True},
         "layers": 3,
         "weights": [{}, {}, l2]})
    d = 4
    add("one layer with final_norm (the single-layer layout plus final_norm.csv), weights as a "
        "list of one mapping holding only the final norm's weight and bias; pre LayerNorm, "
        "gelu_tanh",
        {"text": text(5), "seed": 89, "embeddings": {"dim": d},
         "attention": {"d_out": d, "heads": 2, "causal": True},
         "block": {"order": "pre", "norm": "layer", "ffn_hidden": 5, "activation": "gelu_tanh",
                   "final_norm": True},
         "layers": 1,
         "weights": [{"final_norm_weight": vec(d, 0.5, 1.5),
                      "final_norm_bias": vec(d, -0.5, 0.5)}]})
    return S


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.startswith("r") and f.endswith(".yaml"):
            os.remove(os.path.join(OUT, f))
    scenes = build()
    scenes += build_systems()
    scenes += build_layers()
    for i, (comment, s) in enumerate(scenes, 1):
        name = "r%02d" % i
        s = dict(s)
        s.setdefault("title", "random scene %s" % name)
        # keep the keys in reading order
        order = ["title", "text", "tokens", "tokenizer", "seed", "embeddings", "positional",
                 "attention", "block", "layers", "weights"]
        s = {k: s[k] for k in order if k in s}
        body = scene_yaml("Generated by tests/golden/gen_random_scenes.py; do not edit.\n"
                          + comment, s)
        with open(os.path.join(OUT, name + ".yaml"), "w", encoding="utf-8", newline="\n") as f:
            f.write(body)
    print("wrote %d scenes to %s" % (len(scenes), OUT))


if __name__ == "__main__":
    main()
