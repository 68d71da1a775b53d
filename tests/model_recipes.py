#!/usr/bin/env python3
"""A shipped model must be the one its train.py makes: a stale file fails here.

For each models/<name>/ with a train.py, this checks, without training (and without torch)
(a GPT-2; an encoder-decoder in BART's layout, models/translator, by its own sizes and
tensors, check_bart):
  - the architecture constants of train.py (layers, heads, width, positions, norm epsilon, and
    the vocabulary size where train.py fixes it) equal config.json's;
  - model.safetensors's header has the shapes that architecture gives (wte, wpe, each layer's
    c_attn, c_fc, the layer count), and vocab.json has vocab_size entries;
  - where train.log records the files' sha256 (train.py writes them when it saves), the files
    on disk are those files.
Usage: model_recipes.py ROOT. Exit 0 when every model agrees, 1 with one line per disagreement.
"""

import ast
import hashlib
import json
import os
import struct
import sys
import types


def load_recipe(path):
    """train.py's top-level constants (NAME = literal, or A, B = literal, literal), read with ast:
    nothing of train.py runs, so neither torch nor its corpus is needed."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    consts = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            continue
        if isinstance(target, ast.Name):
            consts[target.id] = value
        elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts):
            for t, v in zip(target.elts, value):
                if isinstance(t, ast.Name):
                    consts[t.id] = v
    return types.SimpleNamespace(**consts)


def safetensors_shapes(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def check_bart(folder, name, recipe, cfg):
    """An encoder-decoder in BART's layout (models/translator): train.py's D_MODEL, LAYERS, HEADS,
    FFN, MAX_POS and LN_EPS against config.json, every tensor's shape against them, and
    tokenizer.json's vocabulary against vocab_size."""
    errs = []
    want = {"d_model": recipe.D_MODEL, "encoder_layers": recipe.LAYERS,
            "decoder_layers": recipe.LAYERS, "encoder_attention_heads": recipe.HEADS,
            "decoder_attention_heads": recipe.HEADS, "encoder_ffn_dim": recipe.FFN,
            "decoder_ffn_dim": recipe.FFN, "max_position_embeddings": recipe.MAX_POS}
    for key, value in want.items():
        if cfg.get(key) != value:
            errs.append("%s: train.py says %s = %r, config.json %r" % (name, key, value, cfg.get(key)))
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        vocab = len(json.load(f)["model"]["vocab"])
    if cfg.get("vocab_size") != vocab:
        errs.append("%s: config.json vocab_size %r, tokenizer.json has %d" % (name, cfg.get("vocab_size"), vocab))
    shapes = safetensors_shapes(os.path.join(folder, "model.safetensors"))
    d, f_ = cfg["d_model"], cfg["encoder_ffn_dim"]
    expect = {"model.shared.weight": [cfg["vocab_size"], d], "final_logits_bias": [1, cfg["vocab_size"]]}
    for stack, layers in (("encoder", cfg["encoder_layers"]), ("decoder", cfg["decoder_layers"])):
        expect["model.%s.embed_positions.weight" % stack] = [cfg["max_position_embeddings"] + 2, d]
        for i in range(layers):
            p = "model.%s.layers.%d." % (stack, i)
            for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                expect[p + "self_attn.%s.weight" % proj] = [d, d]
                if stack == "decoder":
                    expect[p + "encoder_attn.%s.weight" % proj] = [d, d]
            expect[p + "fc1.weight"] = [f_, d]
            expect[p + "fc2.weight"] = [d, f_]
    for key, shape in expect.items():
        if shapes.get(key) != shape:
            errs.append("%s: model.safetensors %s is %r, the recipe gives %r" % (name, key, shapes.get(key), shape))
    extra = sorted(k for k in shapes if ".layers." in k and
                   int(k.split(".layers.")[1].split(".")[0]) >= cfg["decoder_layers"])
    if extra:
        errs.append("%s: model.safetensors has layers past config.json's: %s" % (name, extra[0]))
    return errs


def check(folder):
    errs = []
    name = os.path.basename(folder)
    recipe = load_recipe(os.path.join(folder, "train.py"))
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("model_type") == "bart":
        return check_bart(folder, name, recipe, cfg), 0
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        vocab = len(json.load(f))
    positions = getattr(recipe, "N_CTX", getattr(recipe, "N_POSITIONS", None))
    want = {"n_layer": recipe.N_LAYER, "n_head": recipe.N_HEAD, "n_embd": recipe.N_EMBD,
            "n_positions": positions, "layer_norm_epsilon": recipe.LN_EPS}
    if hasattr(recipe, "VOCAB_SIZE"):
        want["vocab_size"] = recipe.VOCAB_SIZE
    for key, value in want.items():
        if cfg.get(key) != value:
            errs.append("%s: train.py says %s = %r, config.json %r" % (name, key, value, cfg.get(key)))
    if cfg.get("vocab_size") != vocab:
        errs.append("%s: config.json vocab_size %r, vocab.json has %d" % (name, cfg.get("vocab_size"), vocab))

    shapes = safetensors_shapes(os.path.join(folder, "model.safetensors"))
    d, L = cfg["n_embd"], cfg["n_layer"]
    expect = {"wte.weight": [cfg["vocab_size"], d], "wpe.weight": [cfg["n_positions"], d]}
    for i in range(L):
        expect["h.%d.attn.c_attn.weight" % i] = [d, 3 * d]
        expect["h.%d.mlp.c_fc.weight" % i] = [d, cfg.get("n_inner") or 4 * d]
    for key, shape in expect.items():
        if shapes.get(key) != shape:
            errs.append("%s: model.safetensors %s is %r, the recipe gives %r" % (name, key, shapes.get(key), shape))
    layers = {k.split(".")[1] for k in shapes if k.startswith("h.")}
    if len(layers) != L:
        errs.append("%s: model.safetensors has %d layers, config.json %d" % (name, len(layers), L))

    log = os.path.join(folder, "train.log")
    recorded = {}
    if os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "sha256":
                    recorded[parts[1]] = parts[2]
    for file, digest in recorded.items():
        with open(os.path.join(folder, file), "rb") as f:
            actual = hashlib.sha256(f.read()).hexdigest()[: len(digest)]
        if actual != digest:
            errs.append("%s: %s is not the file train.log records (sha256 %s, on disk %s)" % (name, file, digest, actual))
    return errs, len(recorded)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    models = os.path.join(root, "models")
    folders = sorted(os.path.join(models, d) for d in os.listdir(models)
                     if os.path.exists(os.path.join(models, d, "train.py")))
    if not folders:
        print("model_recipes: no models/*/train.py under %s" % root)
        return 1
    errs = []
    for folder in folders:
        e, hashed = check(folder)
        errs += e
        print("%-10s %s (%d files checked by hash)" % (os.path.basename(folder), "FAILED" if e else "ok", hashed))
    for e in errs:
        print("model_recipes: " + e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
