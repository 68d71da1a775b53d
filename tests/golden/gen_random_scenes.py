#!/usr/bin/python3
"""Writes the deterministic random scenes tests/fixtures/random/rNN.yaml.

    /usr/bin/python3 tests/golden/gen_random_scenes.py

Each scene is a hand-picked point of the option space of README.md ("Scene format") (the comment at
its top says what it exercises); the numbers in it (explicit embeddings and weights) come from
a fixed random.Random, so running this again writes the same files byte for byte. Every scene
is valid per the schema. Only the Python standard library is needed.
"""

import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "random")

rng = random.Random(20240611)


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
    w = s.get("weights")
    if w:
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


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.startswith("r") and f.endswith(".yaml"):
            os.remove(os.path.join(OUT, f))
    scenes = build()
    for i, (comment, s) in enumerate(scenes, 1):
        name = "r%02d" % i
        s = dict(s)
        s.setdefault("title", "random scene %s" % name)
        # keep the keys in reading order
        order = ["title", "text", "tokens", "tokenizer", "seed", "embeddings", "positional",
                 "attention", "weights"]
        s = {k: s[k] for k in order if k in s}
        body = scene_yaml("Generated by tests/golden/gen_random_scenes.py; do not edit.\n"
                          + comment, s)
        with open(os.path.join(OUT, name + ".yaml"), "w", encoding="utf-8", newline="\n") as f:
            f.write(body)
    print("wrote %d scenes to %s" % (len(scenes), OUT))


if __name__ == "__main__":
    main()
