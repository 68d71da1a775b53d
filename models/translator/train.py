#!/usr/bin/python3
"""Trains attnscope's shipped toy translator: a tiny BART that turns English clauses into Kalo,
a made-up language with the verb at the end and adjectives after their nouns.

Run with Debian's python3-torch (CPU, a few minutes), node and Hugging Face's `tokenizers` for
the tokenizer check (below):

    nice /usr/bin/python3 models/translator/train.py

It rewrites, beside itself: model.safetensors, config.json, tokenizer.json, scene.yaml,
heldout.tsv and train.log. README.md explains the language, the recipe and the result.

The model is BartForConditionalGeneration as Hugging Face's modeling_bart.py computes it (eval
mode; written out here, transformers is not needed): shared embeddings tied to the lm_head,
learned positions with BART's offset of 2, layernorm_embedding, post-norm layers, the erf GELU,
no final norm, final_logits_bias (a zero buffer, as in BART). The weights are saved under
Hugging Face's names, so attnscope's `arch: auto` (and BartForConditionalGeneration) load them.
After training, tests/golden/gen_seq2seq.py's own BART forward pass (written from the same
semantics, independently) and its float64 recomputation must give the same logits.

The tokenizer is word-level: a Unigram model whose pieces are "▁word" for every word of both
languages, behind a Metaspace pre-tokenizer, with single letters as a fallback. Its encoding of
several sentences is checked against Hugging Face's `tokenizers` (the Node binding, the version
tests/tokenizers/regen.sh pins: NODE_PATH's, or installed once into a scratch folder with npm);
`--no-oracle` skips that check (and says so).
"""

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import unicodedata

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
import gen_gpt2 as g2  # noqa: E402  (write_safetensors, read_safetensors)
import gen_seq2seq as gs  # noqa: E402  (bart_forward, bart_forward64, oracle_version)

SEED = 20261201  # torch: the initial weights and the batches
DATA_SEED = 20261202  # the sentences
THREADS = 1  # small matrices: a second thread only adds waiting (and changes the sums)

D_MODEL, LAYERS, HEADS, FFN, MAX_POS = 64, 2, 4, 128, 32
LN_EPS = 1e-5
INIT_STD = 0.02
STEPS, BATCH, LR, WARMUP = 4000, 64, 2e-3, 200
N_SENTENCES, N_HELDOUT, N_UNSEEN = 10000, 1000, 250

# ---- the two languages ---------------------------------------------------------------------

# (class, English, Kalo): one Kalo word for each English word, none spelled like an English one.
LEXICON = [
    ("DET", "the", "ka"), ("DET", "a", "na"), ("DET", "every", "sil"),
    ("ADJ", "big", "molo"), ("ADJ", "small", "piti"), ("ADJ", "red", "rusa"),
    ("ADJ", "green", "vera"), ("ADJ", "old", "seno"), ("ADJ", "young", "jua"),
    ("ADJ", "happy", "felu"), ("ADJ", "black", "nigo"),
    ("NOUN", "dog", "dogu"), ("NOUN", "cat", "katu"), ("NOUN", "bird", "pipa"),
    ("NOUN", "man", "varo"), ("NOUN", "woman", "fema"), ("NOUN", "child", "kindo"),
    ("NOUN", "fish", "piso"), ("NOUN", "horse", "kavo"), ("NOUN", "fruit", "frutu"),
    ("NOUN", "ball", "bolu"), ("NOUN", "house", "domo"), ("NOUN", "tree", "arbo"),
    ("VERB", "sees", "vidi"), ("VERB", "eats", "mangi"), ("VERB", "likes", "ami"),
    ("VERB", "finds", "trova"), ("VERB", "takes", "prendi"), ("VERB", "chases", "kasi"),
    ("VERB", "helps", "ajuti"), ("VERB", "follows", "segi"),
    ("ADV", "quickly", "rapi"), ("ADV", "slowly", "lenti"), ("ADV", "often", "sepe"),
    ("ADV", "today", "hodi"),
    ("PREP", "near", "apu"), ("PREP", "under", "suba"), ("PREP", "behind", "dorsa"),
]
WORDS = {c: [e for cc, e, _ in LEXICON if cc == c] for c in ("DET", "ADJ", "NOUN", "VERB",
                                                             "ADV", "PREP")}
KALO = {e: k for _, e, k in LEXICON}

P_ADJ = 0.5  # each noun phrase has an adjective with this chance
P_TAIL = (("none", 0.4), ("adv", 0.3), ("pp", 0.3))  # what follows the object

# Adjective + noun pairs that no training sentence has, anywhere: held-out sentences with them
# are word combinations the model has never seen.
UNSEEN_PAIRS = {("green", "dog"), ("old", "ball"), ("happy", "tree"), ("red", "horse"),
                ("young", "fruit"), ("black", "bird")}
SHOWCASE = "the old man finds a red ball under the green tree"  # held out; scene.yaml's source


def draw_np(rng):
    return (rng.choice(WORDS["DET"]), rng.choice(WORDS["ADJ"]) if rng.random() < P_ADJ else None,
            rng.choice(WORDS["NOUN"]))


def draw_clause(rng):
    """(subject NP, verb, object NP, tail): an NP is (det, adj or None, noun); the tail is None,
    ("adv", adverb) or ("pp", preposition, NP)."""
    subj, verb, obj = draw_np(rng), rng.choice(WORDS["VERB"]), draw_np(rng)
    r, tail = rng.random(), None
    if r >= P_TAIL[0][1]:
        tail = (("adv", rng.choice(WORDS["ADV"])) if r < P_TAIL[0][1] + P_TAIL[1][1] else
                ("pp", rng.choice(WORDS["PREP"]), draw_np(rng)))
    return subj, verb, obj, tail


def realize(clause):
    """English words, Kalo words, and each Kalo word's English word (its index in the English
    words). English: DET ADJ? NOUN VERB DET ADJ? NOUN (ADV | PREP DET ADJ? NOUN)?. Kalo: the
    same noun phrases as DET NOUN ADJ?, the preposition after its phrase (a postposition), the
    adverb, and the verb last."""
    subj, verb, obj, tail = clause
    en = []

    def put(word):
        en.append(word)
        return len(en) - 1

    def np_en(np_):
        return [put(w) for w in np_ if w is not None]  # det, adj, noun in English order

    def np_kalo(idx, np_):
        det, adj, noun = idx[0], (idx[1] if np_[1] else None), idx[-1]
        return [det, noun] + ([adj] if adj is not None else [])

    s = np_en(subj)
    v = put(verb)
    o = np_en(obj)
    order = np_kalo(s, subj) + np_kalo(o, obj)
    if tail and tail[0] == "adv":
        order += [put(tail[1])]
    elif tail:
        p = put(tail[1])
        order += np_kalo(np_en(tail[2]), tail[2]) + [p]
    order.append(v)
    return en, [KALO[en[i]] for i in order], order


def pairs_in(en):
    return {(a, b) for a, b in zip(en, en[1:]) if a in WORDS["ADJ"]}


def make_data():
    """N_SENTENCES distinct clauses (fixed seed): N_UNSEEN that hold an UNSEEN_PAIRS pair, all
    held out; SHOWCASE; the rest of the N_HELDOUT held-out clauses drawn at random from the
    others; the training set is what remains. Each: (english words, kalo words, alignment)."""
    rng = random.Random(DATA_SEED)
    seen, unseen, plain = set(), [], []
    show = None
    while len(unseen) < N_UNSEEN or len(plain) < N_SENTENCES - N_UNSEEN:
        ex = realize(draw_clause(rng))
        key = " ".join(ex[0])
        if key in seen:
            continue
        seen.add(key)
        if pairs_in(ex[0]) & UNSEEN_PAIRS:
            if len(unseen) < N_UNSEEN:
                unseen.append(ex)
        elif len(plain) < N_SENTENCES - N_UNSEEN:
            plain.append(ex)
    for ex in plain:
        if " ".join(ex[0]) == SHOWCASE:
            show = ex
    if show is None:  # make it a member: it replaces the last plain clause
        show = realize((("the", "old", "man"), "finds", ("a", "red", "ball"),
                        ("pp", "under", ("the", "green", "tree"))))
        if " ".join(show[0]) != SHOWCASE:
            raise SystemExit("SHOWCASE does not match its clause")
        plain[-1] = show
    rest = [ex for ex in plain if ex is not show]
    rng.shuffle(rest)
    n_plain = N_HELDOUT - N_UNSEEN - 1
    heldout = [show] + rest[:n_plain] + unseen
    train = rest[n_plain:]
    for ex in train:
        if pairs_in(ex[0]) & UNSEEN_PAIRS:
            raise SystemExit("an unseen pair in training")
    return train, heldout, n_plain + 1


# ---- the tokenizer: word-level Unigram ------------------------------------------------------

MS = "\u2581"  # Metaspace's replacement
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # BART's ids 0..3
BOS, PAD, EOS, UNK = 0, 1, 2, 3
DEC_START = EOS  # BART's decoder_start_token_id
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORD_SCORE = round(-math.log(2 * len(LEXICON)), 4)  # every word alike
MS_SCORE, LETTER_SCORE = -10.0, -12.0  # the fallback: far below any whole word


def pieces():
    """(piece, score) after the specials: "▁word" for every English and every Kalo word, then
    "▁" and the letters, so an unknown lower-case word is spelled, not <unk>."""
    out = [(MS + e, WORD_SCORE) for _, e, _ in LEXICON] + [(MS + k, WORD_SCORE)
                                                           for _, _, k in LEXICON]
    out += [(MS, MS_SCORE)] + [(ch, LETTER_SCORE) for ch in LETTERS]
    names = SPECIALS + [p for p, _ in out]
    if len(set(names)) != len(names):
        raise SystemExit("a word in both languages, or twice")
    return out


PIECES = pieces()
VOCAB = SPECIALS + [p for p, _ in PIECES]
ID = {p: i for i, p in enumerate(VOCAB)}


def tokenizer_json():
    """Marian's / T5's tokenizer.json layout (tests/golden/seq2seq/marian): NFKC, Metaspace
    (always, split), Unigram, BART's templates <s> $A </s> and <s> $A </s> </s> $B </s>, the
    Metaspace decoder."""
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(SPECIALS)]
    ms = {"type": "Metaspace", "replacement": MS, "prepend_scheme": "always", "split": True}

    def seq(x, t):
        return {"Sequence": {"id": x, "type_id": t}}

    def sp(x, t):
        return {"SpecialToken": {"id": x, "type_id": t}}

    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": ms,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [sp("<s>", 0), seq("A", 0), sp("</s>", 0)],
            "pair": [sp("<s>", 0), seq("A", 0), sp("</s>", 0), sp("</s>", 1), seq("B", 1),
                     sp("</s>", 1)],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [BOS], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [EOS], "tokens": ["</s>"]}}},
        "decoder": ms,
        "model": {"type": "Unigram", "unk_id": UNK,
                  "vocab": [[t, 0.0] for t in SPECIALS] + [[p, s] for p, s in PIECES],
                  "byte_fallback": False},
    }


def best_path(word, scores):
    """The Unigram model's best segmentation of one pre-token (Viterbi); no path: an error."""
    best = [(0.0, [])] + [None] * len(word)
    for end in range(1, len(word) + 1):
        for start in range(end):
            p = word[start:end]
            if p in scores and best[start] is not None:
                cand = (best[start][0] + scores[p], best[start][1] + [p])
                if best[end] is None or cand[0] > best[end][0]:
                    best[end] = cand
    if best[-1] is None:
        raise SystemExit("%r: no segmentation (it would be <unk>)" % word)
    return best[-1][1]


def encode(text, special, pair=None):
    """NFKC; Metaspace: spaces become "▁", one "▁" in front, a pre-token at each "▁"; each
    pre-token's best path; with special, <s> ... </s> (a pair: <s> A </s> </s> B </s>).
    Returns (ids, pieces)."""
    def model(t):
        t = unicodedata.normalize("NFKC", t).replace(" ", MS)
        if not t.startswith(MS):
            t = MS + t
        scores = dict(PIECES)
        out = []
        for word in t.split(MS)[1:]:
            out += best_path(MS + word, scores)
        return out

    out = model(text)
    if special:
        out = ["<s>"] + out + ["</s>"]
    if pair is not None:
        out += (["</s>"] if special else []) + model(pair) + (["</s>"] if special else [])
    return [ID[p] for p in out], out


ORACLE_JS = r"""
'use strict';
const tk = require('tokenizers');
const [file, listFile] = process.argv.slice(2);
const list = JSON.parse(require('fs').readFileSync(listFile, 'utf8'));
(async () => {
  const tok = tk.Tokenizer.fromFile(file);
  const out = [];
  for (const [text, special, pair] of list) {
    const e = await tok.encode(text, pair, {addSpecialTokens: special});
    out.push({ids: e.getIds(), tokens: e.getTokens()});
  }
  const version = require(require.resolve('tokenizers/package.json')).version;
  console.log(JSON.stringify({version, out}));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def check_oracle(tok, texts):
    """Hugging Face's tokenizers (Node) on tok and each (text, with specials, pair text or None)
    of texts: every id and piece must be encode()'s. Returns the library's version."""
    with tempfile.TemporaryDirectory(prefix="translator.") as tmp:
        for name, body in (("oracle.js", ORACLE_JS),
                           ("tokenizer.json", json.dumps(tok, ensure_ascii=False)),
                           ("texts.json", json.dumps(texts))):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(body)
        env = dict(os.environ)

        def run():
            return subprocess.run(["node", "oracle.js", "tokenizer.json", "texts.json"],
                                  env=env, cwd=tmp, capture_output=True, text=True)

        try:
            r = run()
        except FileNotFoundError:
            raise SystemExit("node is not installed (scripts/bootstrap --tests), or run with "
                             "--no-oracle")
        if r.returncode != 0 and "Cannot find module 'tokenizers'" in r.stderr:
            pkg = gs.oracle_version()
            print("translator: installing %s into a scratch folder" % pkg, flush=True)
            inst = subprocess.run(["npm", "install", "--silent", "--no-save",
                                   "--no-package-lock", pkg], cwd=tmp, capture_output=True,
                                  text=True)
            if inst.returncode != 0:
                raise SystemExit("npm install %s failed:\n%s" % (pkg, inst.stderr))
            env["NODE_PATH"] = os.path.join(tmp, "node_modules")
            r = run()
        if r.returncode != 0:
            raise SystemExit("the tokenizers oracle failed:\n%s" % r.stderr)
        got = json.loads(r.stdout)
    for (text, special, pair), g in zip(texts, got["out"]):
        ids, toks = encode(text, special, pair)
        if g["ids"] != ids or g["tokens"] != toks:
            raise SystemExit("%r: tokenizers@%s gives %s %s, encode() here %s %s" % (
                text, got["version"], g["ids"], g["tokens"], ids, toks))
    return got["version"]


# ---- the model: BartForConditionalGeneration ----------------------------------------------


def linear(n_in, n_out):
    m = nn.Linear(n_in, n_out)
    nn.init.normal_(m.weight, std=INIT_STD)  # BartPretrainedModel._init_weights
    nn.init.zeros_(m.bias)
    return m


class Attention(nn.Module):
    """BartAttention, eager: q, k, v, out with biases; (q k^T) * head_dim^-0.5; masked keys get
    -inf; softmax; the weights are kept in self.weights (batch, heads, queries, keys)."""

    def __init__(self):
        super().__init__()
        self.q_proj, self.k_proj = linear(D_MODEL, D_MODEL), linear(D_MODEL, D_MODEL)
        self.v_proj, self.out_proj = linear(D_MODEL, D_MODEL), linear(D_MODEL, D_MODEL)
        self.weights = None

    def forward(self, xq, xkv, mask):  # mask: True where a key may not be read, broadcastable
        B, nq, _ = xq.shape
        nk, hd = xkv.shape[1], D_MODEL // HEADS

        def heads(x, n):
            return x.view(B, n, HEADS, hd).transpose(1, 2)

        q = heads(self.q_proj(xq), nq)
        k, v = heads(self.k_proj(xkv), nk), heads(self.v_proj(xkv), nk)
        scores = torch.matmul(q, k.transpose(-1, -2)) * hd ** -0.5
        self.weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
        ctx = torch.matmul(self.weights, v).transpose(1, 2).reshape(B, nq, D_MODEL)
        return self.out_proj(ctx)


class Layer(nn.Module):
    """BartEncoderLayer, or BartDecoderLayer with cross: post-norm."""

    def __init__(self, cross):
        super().__init__()
        self.self_attn = Attention()
        self.self_attn_layer_norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        if cross:
            self.encoder_attn = Attention()
            self.encoder_attn_layer_norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        self.fc1, self.fc2 = linear(D_MODEL, FFN), linear(FFN, D_MODEL)
        self.final_layer_norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)

    def forward(self, h, self_mask, enc=None, cross_mask=None):
        h = self.self_attn_layer_norm(h + self.self_attn(h, h, self_mask))
        if enc is not None:
            h = self.encoder_attn_layer_norm(h + self.encoder_attn(h, enc, cross_mask))
        return self.final_layer_norm(h + self.fc2(F.gelu(self.fc1(h))))


class Stack(nn.Module):
    def __init__(self, cross):
        super().__init__()
        self.embed_positions = nn.Embedding(MAX_POS + 2, D_MODEL)  # BART's offset of 2
        nn.init.normal_(self.embed_positions.weight, std=INIT_STD)
        self.layernorm_embedding = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        self.layers = nn.ModuleList(Layer(cross) for _ in range(LAYERS))


class Bart(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.shared = nn.Embedding(vocab, D_MODEL, padding_idx=PAD)
        nn.init.normal_(self.shared.weight, std=INIT_STD)
        with torch.no_grad():
            self.shared.weight[PAD].zero_()
        self.encoder, self.decoder = Stack(False), Stack(True)
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab))

    def embed(self, stack, ids):  # scale_embedding false: no sqrt(d_model)
        pos = torch.arange(ids.shape[1]) + 2
        return stack.layernorm_embedding(self.shared(ids) + stack.embed_positions(pos))

    def forward(self, src, dec):
        """src (B, ns) source ids, padded with <pad>; dec (B, nt) decoder input ids -> logits
        (B, nt, vocab). Padded source keys are masked (the attention_mask); the decoder's pads
        come after its real tokens, so the causal mask keeps them out of every row that counts."""
        pad = (src == PAD)[:, None, None, :]
        h = self.embed(self.encoder, src)
        for layer in self.encoder.layers:
            h = layer(h, pad)
        nt = dec.shape[1]
        causal = torch.triu(torch.ones(nt, nt, dtype=torch.bool), 1)
        y = self.embed(self.decoder, dec)
        for layer in self.decoder.layers:
            y = layer(y, causal, h, pad)
        return F.linear(y, self.shared.weight) + self.final_logits_bias  # the tied lm_head

    def cross_weights(self):
        """Each decoder layer's cross-attention weights of the last forward pass."""
        return [layer.encoder_attn.weights for layer in self.decoder.layers]


def hf_tensors(model):
    """name -> float32 numpy, as save_pretrained names BartForConditionalGeneration's weights
    (shared once: the encoder's and decoder's embed_tokens and lm_head are tied to it)."""
    out = {}
    for name, t in model.state_dict().items():
        out[name if name == "final_logits_bias" else "model." + name] = \
            t.detach().float().numpy().copy()
    return out


def config_json(vocab):
    """A BartConfig as save_pretrained writes it (tests/golden/seq2seq/bart's keys), sorted."""
    cfg = {
        "activation_dropout": 0.0, "activation_function": "gelu",
        "architectures": ["BartForConditionalGeneration"], "attention_dropout": 0.0,
        "bos_token_id": BOS, "classifier_dropout": 0.0, "d_model": D_MODEL,
        "decoder_attention_heads": HEADS, "decoder_ffn_dim": FFN, "decoder_layerdrop": 0.0,
        "decoder_layers": LAYERS, "decoder_start_token_id": DEC_START, "dropout": 0.0,
        "encoder_attention_heads": HEADS, "encoder_ffn_dim": FFN, "encoder_layerdrop": 0.0,
        "encoder_layers": LAYERS, "eos_token_id": EOS, "forced_eos_token_id": EOS,
        "init_std": INIT_STD, "is_encoder_decoder": True, "max_position_embeddings": MAX_POS,
        "model_type": "bart", "num_hidden_layers": LAYERS, "pad_token_id": PAD,
        "scale_embedding": False, "tie_word_embeddings": True, "torch_dtype": "float32",
        "use_cache": True, "vocab_size": vocab}
    return dict(sorted(cfg.items()))


# ---- batches and measurements --------------------------------------------------------------


def tensors(data):
    """Padded source ids (<s> words </s>), decoder inputs ([start] + target), labels (target +
    </s>, -100 at pads), and each label's gold source position (-1: </s> or a pad)."""
    n = len(data)
    ns = max(len(en) for en, _, _ in data) + 2
    nt = max(len(ka) for _, ka, _ in data) + 1
    src = torch.full((n, ns), PAD, dtype=torch.long)
    dec = torch.full((n, nt), PAD, dtype=torch.long)
    lab = torch.full((n, nt), -100, dtype=torch.long)
    gold = torch.full((n, nt), -1, dtype=torch.long)
    for i, (en, ka, al) in enumerate(data):
        s = encode(" ".join(en), True)[0]
        t = encode(" ".join(ka), False)[0]
        if len(s) != len(en) + 2 or len(t) != len(ka):
            raise SystemExit("%r: not one token a word" % " ".join(en))
        src[i, :len(s)] = torch.tensor(s)
        dec[i, :len(t) + 1] = torch.tensor([DEC_START] + t)
        lab[i, :len(t) + 1] = torch.tensor(t + [EOS])
        gold[i, :len(t)] = torch.tensor(al) + 1  # + 1: <s> is source position 0
    return src, dec, lab, gold


def greedy(model, src, max_new=MAX_POS - 1):
    """Greedy decoding from the decoder start, a full forward pass a step; (B, <= max_new)."""
    dec = torch.full((src.shape[0], 1), DEC_START, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_new):
        nxt = model(src, dec)[:, -1].argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
        dec = torch.cat([dec, nxt[:, None]], 1)
        done |= nxt == EOS
        if done.all():
            break
    return dec[:, 1:]


def evaluate(model, data, rows=None):
    """Teacher-forced token accuracy (every label, </s> too) and loss; greedy exact match (the
    words and then </s>); per cross-attention head (layer, head): the share of target words whose
    largest weight, in the row that writes them, is on their gold source word ("next"), the mean
    weight there, the same for the word the row reads ("read": rows 1 ..), and whether the row
    that writes the verb looks at the source verb ("verb"). Shares are per sentence, then
    averaged over sentences. rows: only these sentences (indices)."""
    src, dec, lab, gold = tensors(data)
    if rows is not None:
        src, dec, lab, gold = src[rows], dec[rows], lab[rows], gold[rows]
    with torch.no_grad():
        logits = model(src, dec)
        cross = model.cross_weights()
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1),
                               ignore_index=-100).item()
        ok = (logits.argmax(-1) == lab) & (lab != -100)
        tok_acc = ok.sum().item() / (lab != -100).sum().item()
        out = greedy(model, src)
    exact = 0
    for i in range(src.shape[0]):
        want = lab[i][lab[i] != -100].tolist()
        got = out[i].tolist()
        exact += got[:len(want)] == want
    words = gold >= 0
    n_words = words.sum(1).float()
    last = n_words.long() - 1  # the verb's row
    B = src.shape[0]
    heads = {}
    for L, w in enumerate(cross):  # (B, H, nt, ns)
        top = w.argmax(-1)  # (B, H, nt)
        g = gold.clamp(min=0)[:, None, :].expand(-1, w.shape[1], -1)
        hit_next = (top == g) & words[:, None, :]
        on_gold = w.gather(-1, g[..., None]).squeeze(-1) * words[:, None, :]
        # the row that reads word t-1 is row t (its input); its gold is gold[t-1]
        read_gold = torch.full_like(gold, -1)
        read_gold[:, 1:] = gold[:, :-1]
        rw = read_gold >= 0
        hit_read = (top == read_gold.clamp(min=0)[:, None, :]) & rw[:, None, :]
        verb_row = top[torch.arange(B), :, last]  # (B, H)
        verb_gold = gold[torch.arange(B), last]
        for H in range(w.shape[1]):
            heads[(L, H)] = dict(
                next=(hit_next[:, H].sum(1) / n_words).mean().item(),
                weight=(on_gold[:, H].sum(1) / n_words).mean().item(),
                read=(hit_read[:, H].sum(1) / rw.sum(1)).mean().item(),
                verb=(verb_row[:, H] == verb_gold).float().mean().item())
    # a monotone (diagonal) head: row t on source word t (position t + 1, after <s>)
    diag = ((gold == torch.arange(gold.shape[1])[None, :] + 1) & words).sum(1) / n_words
    return dict(loss=loss, tok_acc=tok_acc, exact=exact / B, n=B, heads=heads, greedy=out,
                diagonal=diag.mean().item())


def decode(ids):
    words = []
    for i in ids:
        if i == EOS:
            break
        words.append(VOCAB[i][1:] if VOCAB[i].startswith(MS) else VOCAB[i])
    return " ".join(words)


def write(name, text):
    with open(os.path.join(HERE, name) + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(os.path.join(HERE, name) + ".tmp", os.path.join(HERE, name))


def cross_check(model, ex):
    """gen_seq2seq's BART forward pass (float32) and its float64 recomputation on the saved
    file, against this model: the logits and every cross-attention weight. The worst gap."""
    W, _ = g2.read_safetensors(os.path.join(HERE, "model.safetensors"))
    cfg = config_json(len(VOCAB))
    c = {"cfg": cfg, "kind": "bart"}
    src = encode(" ".join(ex[0]), True)[0]
    dec = [DEC_START] + encode(" ".join(ex[1]), False)[0]
    with torch.no_grad():
        mine = model(torch.tensor([src]), torch.tensor([dec]))[0]
        cross = [w[0] for w in model.cross_weights()]
        enc, _, dlay, _, logits = gs.bart_forward(c, W, src, dec)
    _, _, _, _, logits64 = gs.bart_forward64(c, W, src, dec)
    worst = max((mine - logits).abs().max().item(),
                float(np.abs(mine.double().numpy() - logits64).max()))
    for L, (_, cr) in enumerate(dlay):
        for H, hd in enumerate(cr["heads"]):
            worst = max(worst, (hd["weights"] - cross[L][H]).abs().max().item())
    if worst > 1e-4:
        raise SystemExit("gen_seq2seq's BART and this model differ by %g" % worst)
    return worst


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)
    train, heldout, n_plain = make_data()
    show = heldout[0]
    tok = tokenizer_json()
    if "--no-oracle" in sys.argv[1:]:
        print("translator: WARNING: --no-oracle: the ids were not checked against tokenizers")
    else:
        texts = [(" ".join(ex[0]), True, None) for ex in heldout[:4] + heldout[-2:]]
        texts += [(" ".join(ex[1]), False, None) for ex in heldout[:4] + heldout[-2:]]
        texts += [("the zebra sees a cat", True, None), ("the dogs see cats", True, None),
                  ("ka  dogu vidi ", False, None),
                  ("the big dog sees a small cat", True, "ka molo dogu")]
        version = check_oracle(tok, texts)
        print("translator: tokenizers@%s (Node) gives the same ids and pieces (%d texts)" % (
            version, len(texts)), flush=True)

    model = Bart(len(VOCAB))
    n_params = sum(p.numel() for p in model.parameters())
    src, dec, lab, _ = tensors(train)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / WARMUP) * 0.5 * (1 + math.cos(math.pi * s / STEPS)))
    log, t0 = [], time.time()
    head = ("translator: %d training / %d held-out clauses (%d with an unseen adjective-noun "
            "pair); %d tokens; %d parameters" % (len(train), len(heldout), len(heldout) - n_plain,
                                                 len(VOCAB), n_params))
    print(head, flush=True)
    log.append(head)
    gen = torch.Generator().manual_seed(SEED + 1)
    order, at = torch.randperm(len(train), generator=gen), 0
    running = []
    for step in range(1, STEPS + 1):
        if at + BATCH > len(train):
            order, at = torch.randperm(len(train), generator=gen), 0
        idx = order[at:at + BATCH]
        at += BATCH
        d, l = dec[idx], lab[idx]
        keep = int((l != -100).sum(0).nonzero().max()) + 1  # drop all-pad columns
        s = src[idx]
        s = s[:, :int((s != PAD).sum(0).nonzero().max()) + 1]
        logits = model(s, d[:, :keep])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), l[:, :keep].reshape(-1),
                               ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        running.append(loss.item())
        if step % 250 == 0 or step == 1:
            model.eval()
            ev = evaluate(model, heldout)
            model.train()
            best = max(ev["heads"].items(), key=lambda kv: kv[1]["next"])
            line = ("step %5d  loss %.3e  held-out loss %.3e  token acc %.4f  exact %.4f  "
                    "best head L%dH%d next %.3f" % (
                        step, sum(running) / len(running), ev["loss"], ev["tok_acc"],
                        ev["exact"], best[0][0], best[0][1], best[1]["next"]))
            running = []
            print("%s  %.0f s" % (line, time.time() - t0), flush=True)
            log.append(line)
    seconds = time.time() - t0
    model.eval()

    g2.write_safetensors(os.path.join(HERE, "model.safetensors"),
                         {k: ("F32", v) for k, v in hf_tensors(model).items()}, {"format": "pt"})
    write("config.json", json.dumps(config_json(len(VOCAB)), indent=2) + "\n")
    write("tokenizer.json", json.dumps(tok, indent=2, ensure_ascii=False) + "\n")
    write("heldout.tsv", "".join("%s\t%s\n" % (" ".join(en), " ".join(ka))
                                 for en, ka, _ in heldout))
    write("scene.yaml", (
        "# The toy translator (models/translator): a held-out English clause and its Kalo\n"
        "# translation, the verb moved to the end and each adjective after its noun. The\n"
        "# decoder's cross-attention (engine layers 1 and 3) holds the alignment.\n"
        "version: 1\n"
        "title: \"translator: English to Kalo, cross-attention\"\n"
        "text: {source: \"%s\", target: \"%s\"}\n"
        "tokenizer: {kind: hf, file: tokenizer.json}\n"
        "model: {file: model.safetensors, arch: auto}\n") % (" ".join(show[0]),
                                                            " ".join(show[1])))

    worst = cross_check(model, show)
    ev = evaluate(model, heldout)
    ev_plain = evaluate(model, heldout, list(range(n_plain)))
    ev_unseen = evaluate(model, heldout, list(range(n_plain, len(heldout))))
    ev_train = evaluate(model, train[:1000])
    log.append("gen_seq2seq's BART forward pass on model.safetensors (float32 and float64): "
               "within %.2g of this model" % worst)
    for name, e in (("held-out, all", ev), ("held-out, new sentences", ev_plain),
                    ("held-out, unseen adjective-noun pairs", ev_unseen),
                    ("training (first 1000)", ev_train)):
        log.append("%s (%d): loss %.2e  token accuracy %.4f  greedy exact match %.4f" % (
            name, e["n"], e["loss"], e["tok_acc"], e["exact"]))
    log.append("cross-attention heads on the held-out clauses (share of target words whose "
               "largest weight is on the gold source word):")
    log.append("(a diagonal head, row t on source word t, would score %.3f on next)" %
               ev["diagonal"])
    log.append("layer head   next  weight   read   verb")
    for (L, H), s in sorted(ev["heads"].items()):
        log.append("%5d %4d  %.3f   %.3f  %.3f  %.3f" % (L, H, s["next"], s["weight"],
                                                        s["read"], s["verb"]))
    got = decode(ev["greedy"][0].tolist())
    log.append("showcase: %s -> %s (%s)" % (" ".join(show[0]), got,
                                          "exact" if got == " ".join(show[1]) else
                                          "WRONG, gold: " + " ".join(show[1])))
    for line in log[-14:]:
        print(line)
    print("trained %d steps in %.0f s" % (STEPS, seconds))
    write("train.log", "\n".join(log) + "\n")


if __name__ == "__main__":
    main()
