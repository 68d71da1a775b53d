#!/usr/bin/python3
"""Trains english-small, the English GPT-2 attnscope ships for generation: 4 layers, 8 heads,
d 256, 512 positions, a 4,096-piece BPE (plus the merges that make common first names one
token), on 27 MB of English prose from Debian packages. Writes model.safetensors (F16),
config.json, vocab.json, merges.txt and train.log beside this file.

    /usr/bin/python3 models/english-small/train.py              # the shipped recipe
    /usr/bin/python3 models/english-small/train.py --steps 200  # a short run

Runs on CUDA when torch sees a GPU, else on 2 CPU threads: the same seeds and the same data
order either way (the batches are drawn on the CPU), and the log names the device. It shares
the corpus cleaning, the BPE trainer, the tokenizer, the probes and the file writers with
models/english/train.py, which it imports. README.md says why each choice was made.
"""

import argparse
import base64
import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
import time

# Set before torch starts its OpenMP pool: spinning workers fight OpenBLAS's threads for the
# two cores (1.7x slower steps here).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name, path):
    """A module by file: models/english's train.py and eval.py share their names with ours."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


base = load_module("english_train", os.path.join(HERE, "..", "english", "train.py"))

CORPUS = os.path.join(HERE, "corpus")
PACKAGES = base.PACKAGES + ["bible-kjv", "dict-jargon", "dict-devil", "gnu-standards",
                            "debian-reference-en"]
DICTD = "/usr/share/dictd"
DEBREF = "/usr/share/debian-reference"
GNUSTD = "/usr/share/doc/gnu-standards"

SEED = 20261129
BPE_MERGES = 3839            # 256 bytes + 3,839 merges + <|endoftext|> = 4,096, then the names
N_LAYER, N_HEAD, N_EMBD, N_CTX = 4, 8, 256, 512
LN_EPS = 1e-5               # as models/english (GPT-2's)
BATCH = 16
STEPS = 1800
LR, WARMUP, COOLDOWN = 3e-3, 100, 0.25  # linear warmup, flat, linear to 0 over the last 25%
WEIGHT_DECAY = 0.1
# Repeated spans (models/english's batch()) a quarter of the window long, as there: at its 16-64
# tokens in 512, the copies were 4% of the targets, and at step 1,000 of a first run no
# induction head had begun (best 0.06) nor a previous-token head (0.16).
REPEAT_LEN = (64, 256)
EVAL_EVERY = 200

# Common English first names, each made one token (" Mary") so that an IOI-style patch swaps one
# position for another: the 20 most common given names of each sex in the 1990 US census lists,
# which Debian does not ship as prose; their merges are appended after the corpus's own.
NAMES = ("James John Robert Michael William David Richard Charles Joseph Thomas Christopher "
         "Daniel Paul Mark Donald George Kenneth Steven Edward Brian Mary Patricia Linda "
         "Barbara Elizabeth Jennifer Maria Susan Margaret Dorothy Lisa Nancy Karen Betty Helen "
         "Sandra Donna Carol Ruth Sharon").split()


# ---- the corpus: models/english's three sources and five more -----------------------------------

def unwrap(text):
    """Hard-wrapped paragraphs joined into lines: a dictionary entry reads as prose."""
    return "\n\n".join(re.sub(r"\s*\n\s*", " ", p).strip() for p in re.split(r"\n\s*\n", text))


def kjv_docs():
    """The King James Bible (bible-kjv's text, printed by its `bible` program); a document is one
    chapter, its verses joined without their references."""
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, check=True).stdout
    chapters = {}
    for line in out.split("\n"):
        m = re.match(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$", line)
        if m:
            chapters.setdefault(m.group(1) + m.group(2), []).append(m.group(4).strip())
    return [("kjv", k, base.clean(" ".join(v))) for k, v in chapters.items()]


def dictd_entries(name):
    """A dictd database's entries in index order: (headword, text), the database's own
    00-database-* entries left out."""
    def num(s):
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        v = 0
        for c in s:
            v = v * 64 + alphabet.index(c)
        return v
    data = gzip.open(os.path.join(DICTD, name + ".dict.dz")).read()
    out = []
    for line in open(os.path.join(DICTD, name + ".index"), encoding="utf-8"):
        word, off, size = line.rstrip("\n").split("\t")[:3]
        if not word.startswith("00-database"):
            out.append((word, data[num(off):num(off) + num(size)].decode("utf-8", "replace")))
    return out


def dictd_docs(name, source):
    docs = []
    for word, text in dictd_entries(name):
        t = base.clean(unwrap(text))
        if len(t) >= 40 and base.letters_share(t) >= 0.6:
            docs.append((source, word, t))
    return docs


class BodyParagraphs(base.Paragraphs):
    """Every <p> of a page's body: DocBook and Texinfo pages have no Sphinx main div."""

    def __init__(self):
        super().__init__()
        self.depth_body = 1

    def handle_endtag(self, tag):
        super().handle_endtag(tag)
        self.depth_body = max(self.depth_body, 1)


def html_docs(folder, names, source):
    docs = []
    for name in names:
        p = BodyParagraphs()
        p.feed(open(os.path.join(folder, name), encoding="utf-8").read())
        paras = [base.clean(x) for x in p.out]
        paras = [x for x in paras if len(x) >= 40 and base.letters_share(x) >= 0.6]
        # a chapter is long: one document per 20 paragraphs keeps the held-out split fine-grained
        for i in range(0, len(paras), 20):
            docs.append((source, "%s#%d" % (name, i // 20), "\n\n".join(paras[i:i + 20])))
    return docs


def sources():
    return [base.fortune_docs(), base.wordnet_docs(), base.pydoc_docs(), kjv_docs(),
            dictd_docs("jargon", "jargon"),
            html_docs(DEBREF, sorted(n for n in os.listdir(DEBREF) if n.endswith(".en.html")),
                      "debref"),
            html_docs(GNUSTD, ["standards.html", "maintain.html"], "gnu")]


def build_corpus():
    """Per source a seeded 5% of the documents held out (the training-time probes), as
    models/english does; and the Devil's Dictionary, a source never trained on, whole, for
    eval.py's held-out figures."""
    os.makedirs(CORPUS, exist_ok=True)
    train, held = [], []
    for docs in sources():
        order = list(range(len(docs)))
        random.Random(SEED).shuffle(order)
        hold = set(order[:round(len(docs) * base.HELDOUT)])
        for i, d in enumerate(docs):
            (held if i in hold else train).append(d)
    unseen = dictd_docs("devil", "devil")
    for name, docs in (("train", train), ("heldout", held), ("unseen", unseen)):
        with open(os.path.join(CORPUS, name + ".jsonl"), "w", encoding="utf-8") as f:
            for s, n, t in docs:
                f.write(json.dumps({"source": s, "name": n, "text": t}, ensure_ascii=False) + "\n")
    return train, held, unseen


def load_corpus(which):
    with open(os.path.join(CORPUS, which + ".jsonl"), encoding="utf-8") as f:
        return [(d["source"], d["name"], d["text"]) for d in map(json.loads, f)]


# ---- the tokenizer -------------------------------------------------------------------------------

def name_merges(merges, names):
    """The merges that make each " Name" one token, appended after the corpus's: the name is
    encoded with the merges so far, and its pieces are merged left to right. A later merge
    only applies once no earlier one can, so the corpus's own tokens are unchanged."""
    extra = []
    for name in names:
        vocab, sm = base.make_tokenizer_files(merges + extra)
        tok = base.Tokenizer(vocab, sm)
        pieces = [tok.inv[i] for i in tok.encode_piece(" " + name)]
        u2b = tok.u2b
        raw = [bytes(u2b[c] for c in p) for p in pieces]
        while len(raw) > 1:
            extra.append((raw[0], raw[1]))
            raw = [raw[0] + raw[1]] + raw[2:]
    return extra


# ---- the model: models/english's GPT-2, with the query scaled first and sinusoidal positions --

def build_model(vocab_size):
    return base.build_model(vocab_size, q_first=True, sinusoidal=True)


def load_model(folder, device="cpu"):
    """The shipped files (F16 widened to F32), read by models/english's reader into this GPT-2."""
    import torch
    global N_LAYER, N_HEAD, N_EMBD, N_CTX
    ref = base.load_model(folder)  # sets base's sizes from config.json
    N_LAYER, N_HEAD, N_EMBD, N_CTX = base.N_LAYER, base.N_HEAD, base.N_EMBD, base.N_CTX
    model = build_model(ref.wte.shape[0])
    with torch.no_grad():
        theirs = base.gpt2_tensors(ref)
        for name, p in base.gpt2_tensors(model).items():
            p.copy_(theirs[name])
    return model.to(device)


# ---- training -----------------------------------------------------------------------------------

def lr_at(step, steps):
    """Linear warmup, flat, then a linear cooldown to 0 over the last COOLDOWN of the steps."""
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    cool = int(steps * (1 - COOLDOWN))
    return LR if step < cool else LR * max(0.0, (steps - step) / max(1, steps - cool))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--out", default=HERE, help="folder for the model files (default: here)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    base.PACKAGES = PACKAGES
    base.ensure_packages()
    import torch
    import torch.nn.functional as F
    base.N_LAYER, base.N_HEAD, base.N_EMBD, base.N_CTX = N_LAYER, N_HEAD, N_EMBD, N_CTX
    base.REPEAT_LEN = REPEAT_LEN
    torch.manual_seed(SEED)
    torch.set_num_threads(base.THREADS)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    log = []

    def say(line, clock=""):
        print(line + ("  " + clock if clock else ""), flush=True)
        log.append(line)

    t0 = time.time()
    train_docs, held_docs, unseen_docs = build_corpus()
    for name, docs in (("train", train_docs), ("held-out", held_docs), ("unseen", unseen_docs)):
        say(base.corpus_line(name, docs))
    say("corpus built", "%.0f s" % (time.time() - t0))

    merges = base.train_bpe([t for _, _, t in train_docs], BPE_MERGES)
    extra = name_merges(merges, NAMES)
    vocab, smerges, tok = base.write_tokenizer(args.out, merges + extra)
    say("tokenizer: %d merges from the corpus, %d for %d names, vocab %d" % (
        len(merges), len(extra), len(NAMES), len(vocab)), "%.0f s" % (time.time() - t0))
    train_ids, held_ids = base.token_streams(tok, train_docs, held_docs, SEED + 1, say, t0)

    model = build_model(len(vocab)).to(device)
    opt = base.optimizer(model, LR, WEIGHT_DECAY)
    say("device: %s%s" % (device, " (%d threads)" % base.THREADS if device == "cpu" else
                          " (%s)" % torch.cuda.get_device_name(0)))
    say("model: %d layers, %d heads, d %d, %d positions, %d parameters (LM head tied to wte)" % (
        N_LAYER, N_HEAD, N_EMBD, N_CTX, sum(p.numel() for p in model.parameters())))
    say("training: %d steps of %d x %d tokens, bf16 autocast, AdamW lr %g (warmup %d, flat, "
        "cooldown over the last %.0f%%), wd %g, repeated spans of %d-%d tokens in %.0f%% of "
        "windows, positions started sinusoidal" % (
            args.steps, BATCH, N_CTX, LR, WARMUP, 100 * COOLDOWN, WEIGHT_DECAY, REPEAT_LEN[0],
            REPEAT_LEN[1], 100 * base.REPEAT_P))
    windows, reps = base.probes(held_ids, SEED + 2)
    windows, reps = windows.to(device), reps.to(device)
    gen = torch.Generator().manual_seed(SEED + 3)
    t1, ema = time.time(), None
    for step in range(args.steps + 1):
        if step % EVAL_EVERY == 0 or step == args.steps:
            base.say_probes(say, step, ema, base.evaluate(model, windows, reps), t1)
            if step > 0:
                save(args.out, model, list(log), len(vocab), tok.eot)
        if step == args.steps:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps)
        x = base.batch(gen, train_ids, BATCH).to(device)
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
    wall = time.time() - t1
    print("training wall %.0f s, %.3f steps/s" % (wall, args.steps / wall), flush=True)


def save(out, model, log, vocab_size, eot):
    """The model files as of now (F16), and train.log up to here."""
    base.save_safetensors(os.path.join(out, "model.safetensors"),
                          {k: v.cpu() for k, v in base.gpt2_tensors(model).items()}, "F16")
    base.write(out, "config.json", json.dumps({
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "bos_token_id": eot, "eos_token_id": eot,
        "layer_norm_epsilon": LN_EPS, "model_type": "gpt2", "n_ctx": N_CTX,
        "n_embd": N_EMBD, "n_head": N_HEAD, "n_inner": None, "n_layer": N_LAYER,
        "n_positions": N_CTX, "tie_word_embeddings": True, "torch_dtype": "float16",
        "vocab_size": vocab_size}, indent=2) + "\n")
    for f in ("model.safetensors", "vocab.json", "merges.txt"):
        log.append("sha256 %s %s" % (f, base.sha(os.path.join(out, f))))
    base.write(out, "train.log", "\n".join(log) + "\n")


if __name__ == "__main__":
    main()
