#!/usr/bin/python3
"""Random-weight encoder-decoder checkpoints in Hugging Face's naming - T5
(T5ForConditionalGeneration: t5, flan-t5), BART (BartForConditionalGeneration: bart) and Marian
(MarianMTModel: marian) - each with a small tokenizer in its family's layout, and the numbers
PyTorch computes for them, stage by stage: the encoder's layers, the decoder's self-attention and
cross-attention, T5's final norms and the top 10 at every target position.

Run with Debian's python3 (torch, numpy, regex; gen_gpt2.py's and gen_families.py's helpers),
with node and Hugging Face's `tokenizers` for the oracle (below):

    nice /usr/bin/python3 tests/golden/gen_seq2seq.py

It rewrites tests/golden/seq2seq/ byte for byte the same on every run (fixed seeds):

  <case>/config.json, <case>/model.safetensors   a checkpoint as save_pretrained writes it
                                                  (torch's Linear weights (out, in); shared.weight
                                                  and no tied copy; lm_head.weight when untied)
  <case>/tokenizer.json                           the family's tokenizer (t5 and flan-t5 share
                                                  theirs); marian's as opus-mt's folders hold
                                                  it: source.spm and target.spm (SentencePiece
                                                  models, checked against Debian's
                                                  python3-sentencepiece), vocab.json and
                                                  tokenizer_config.json
  scenes/<case>.yaml                              the scene that opens it (source and target)
  goldens/<case>/tokens.csv, encoder/tokens.csv  the target's tokens (the decoder's, after its
                                                  start token) and the source's, as export writes
  goldens/<case>/encoder/layer<L>/...             inputs, norm1, context, output, residual1,
                                                  norm2, ffn_hidden (gated: ffn_gate, ffn_up),
                                                  ffn_activated, ffn_out, residual2,
                                                  block_output; head<H>/ queries, keys, values,
                                                  scores, scaled, masked, weights, weighted_norm,
                                                  context, and T5's position_bias, biased
  goldens/<case>/encoder/final_norm.csv           T5 only
  goldens/<case>/decoder/layer<L>/self/...        inputs, norm1, context, output, residual1,
                                                  block_output (T5: = residual1; BART, Marian:
                                                  = norm1); head<H>/ as the encoder's, masked
                                                  with -inf above the diagonal
  goldens/<case>/decoder/layer<L>/cross/...       inputs (= self's block_output), norm1, context,
                                                  output, residual1, norm2, ffn_*, ffn_out,
                                                  residual2, block_output; head<H>/ queries, keys,
                                                  values, scores, scaled, masked, weights,
                                                  weighted_norm, context (keys and values: the
                                                  source's rows; scores ... weighted_norm: target
                                                  rows x source columns)
  goldens/<case>/decoder/final_norm.csv           T5 only
  goldens/<case>/predictions.csv                  position, rank, id, logit: the top 10 at every
                                                  target position (ties to the lower id)
  goldens/<case>/.../params/                      each sublayer's parameters as the export names
                                                  them (x @ W: W_query, W_key, W_value, out; BART
                                                  and Marian also b_query, b_key, b_value,
                                                  out_bias, ffn_b1, ffn_b2; ffn_W1, ffn_W2;
                                                  norm{1,2}_weight and _bias unless all 1 and 0)

T5's forward pass is written from the semantics of Hugging Face's modeling_t5.py (eval mode, no
cache), in float32 torch: T5LayerNorm (weight * x * rsqrt(mean(x^2) + eps), no mean, no bias);
q, k, v, o without bias, inner = num_heads * d_kv; no 1/sqrt(d_kv); the relative position bias
of each stack's layer 0 (relative_attention_bias, num_buckets x heads) looked up by the
mesh-tensorflow bucket of key - query (bidirectional in the encoder, only the past in the
decoder) and added to q k^T in every layer of that stack; the decoder's causal mask; softmax in
float32; o; pre-norm residuals; the FFN wo(relu(wi x)) or wo(gelu_new(wi_0 x) * wi_1 x);
final_layer_norm; the encoder's final output as every cross-attention's keys' and values' input
(no position bias, no mask there); logits decoder_out * d_model^-0.5 @ shared^T (tied) or
decoder_out @ lm_head^T. Decoder input ids: decoder_start_token_id (0, <pad>) and the target's
ids. A float64 numpy recomputation (loops over heads by column index, the buckets from Python's
math) must agree with every stage within 1e-5 relative. Nothing here looks at the C code.

BART's and Marian's are written from modeling_bart.py and modeling_marian.py (eval mode, no
cache, no padding, eager attention), in float32 torch: embeddings shared[ids] * embed_scale
(1 for BART; sqrt(d_model) for Marian, scale_embedding) + the positions of arange(n) (BART: its
learned table of max_position_embeddings + 2 rows, looked up at position + 2; Marian: the
sinusoidal table MarianSinusoidalPositionalEmbedding makes, sines of pos / 10000^(2c/d) in the
first half of the columns and cosines in the second, float64 then float32, stored in the
checkpoint like every other weight); BART then layernorm_embedding. Post-norm layers
(nn.LayerNorm, eps 1e-5): h = self_attn_layer_norm(h + self_attn(h)), in the decoder
h = encoder_attn_layer_norm(h + encoder_attn(h, encoder output)), then h = final_layer_norm(h +
fc2(act(fc1(h)))) with act the erf GELU (BART) or SiLU ("swish", Marian). Attention: q, k, v,
out_proj with biases; eager_attention_forward's (q k^T) * head_dim^-0.5 (scores, then scaled:
the product first, as transformers does since the attention refactor; older versions scaled q
before the product, which moves the logits here by about 2e-6); the decoder's causal mask;
softmax in float32. No final norm in either stack. Logits: decoder_out @ shared^T (the tied
lm_head) + final_logits_bias (random here). Decoder input ids: decoder_start_token_id (BART
</s>; Marian <pad>, its last id) and the target's ids. A float64 recomputation (heads by column
index, the layer norm's mean and variance and the causal mask written out, GELU from math.erf)
must agree with the embeddings, every block output and the logits within 1e-5 relative, and
Marian's sinusoidal tables must match Python's math.sin and math.cos cell by cell.

The tokenizers. T5's: a Unigram model of PIECES below behind T5's normalizer (NFKC and runs of
spaces made one; the real file's Precompiled charsmap cannot be written here), WhitespaceSplit +
Metaspace(always, split), the "$A </s>" template and the Metaspace decoder; its ids come from a
Viterbi search here (each word's best segmentation must beat the next by a margin). Marian's: the
same pieces in Marian's SentencePiece order (</s> 0, <unk> 1, the pieces, <pad> last), NFKC,
Metaspace(always, split) alone, the "$A </s>" template. BART's: RoBERTa's layout, byte-level BPE
(<s> <pad> </s> <unk>, the 256 byte symbols, BART_MERGES below), ByteLevel without a prefix space,
RobertaProcessing (<s> A </s>), the ByteLevel decoder; its ids from OpenAI's BPE (gen_gpt2's
port). The source is encoded with the special tokens, the target without. Every id and token is
checked against Hugging Face's own `tokenizers` (the Node binding, the version regen.sh of
tests/tokenizers pins): with NODE_PATH naming a node_modules that has it, or else it is installed
into a scratch folder with npm. `--no-oracle` skips that check (and says so).
"""

import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unicodedata

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_gpt2 as g2  # noqa: E402  (write_csv, write_rows, write_safetensors, fmt)
import gen_families as gf  # noqa: E402  (draws, round_to, check64, write_json, GenError)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "seq2seq")
REGEN = os.path.join(ROOT, "tests", "tokenizers", "regen.sh")

GenError = gf.GenError

SOURCE = "The small dog sees the red ball in the green garden ."
TARGET = "Lo dovi sena balo ."  # the same in a made-up language

# ---- the tokenizer -------------------------------------------------------------------------

MS = "\u2581"  # Metaspace's replacement
SPECIALS = ["<pad>", "</s>", "<unk>"]  # T5's ids 0, 1, 2
PAD, EOS, UNK = 0, 1, 2

# The pieces after the specials, with their log-probabilities (distinct; whole words likelier
# than their parts, so "▁green" stays whole while "▁garden" is "▁gard" + "en"): the sentences'
# words, a few other words and subwords, and every letter alone, so nothing is <unk>.
PIECES = [
    # whole words
    (MS + "the", -3.1021), (MS + "The", -4.0137), (MS + "in", -4.2315), (MS + "a", -4.3712),
    (MS + "and", -4.5128), (MS + "to", -4.6033), (MS + "of", -4.6809), (MS + "is", -4.7714),
    (MS + "small", -5.3419), (MS + "dog", -5.4026), (MS + "red", -5.5131), (MS + "ball", -5.6247),
    (MS + "green", -5.7352), (MS + "river", -5.8468), (MS + "water", -5.9573),
    (MS + "sea", -6.0189), (MS + "cat", -6.1294), (MS + "sun", -6.2401), (MS + "runs", -6.3517),
    (MS + "Lo", -6.4622), (MS + "sena", -6.5738), (MS + "ka", -6.6843), (MS + "mira", -6.7959),
    # word starts
    (MS, -5.1206), (MS + "see", -6.9064), (MS + "gard", -7.0172), (MS + "dov", -7.1287),
    (MS + "bal", -7.2393), (MS + "wat", -7.3508), (MS + "gar", -7.8614), (MS + "se", -7.5729),
    (MS + "do", -7.6835), (MS + "gre", -8.1941), (MS + "sm", -8.3056), (MS + "ba", -7.9162),
    (MS + "re", -8.0277), (MS + "ri", -8.4383), (MS + "lu", -8.5498), (MS + "L", -9.1604),
    (MS + "T", -9.2719),
    # word pieces
    ("s", -5.2825), ("en", -5.8931), ("er", -6.0046), ("i", -6.7152), ("o", -6.8267),
    (".", -5.0373), (",", -5.1488), ("es", -7.2594), ("den", -7.8709), ("ing", -6.5815),
    ("ed", -6.6921), ("ll", -7.4036), ("al", -7.5142), ("ar", -7.6257), ("ver", -7.9363),
    ("na", -8.0478), ("ra", -8.1584), ("mi", -8.2699), ("ov", -8.3805), ("ee", -8.4911),
    ("een", -8.6026),
]
PIECES += [(ch, -(9.5 + 0.0613 * i)) for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz")
           if ch not in ("s", "i", "o")]
PIECES += [("T", -11.3117), ("L", -11.4222)]
PIECES = [(p, round(s, 4)) for p, s in PIECES]
VOCAB = SPECIALS + [p for p, _ in PIECES]
MARGIN = 0.01  # the best segmentation of a word must beat the next by this much


def tokenizer_json():
    """T5's tokenizer.json layout (google-t5/t5-small's), on PIECES."""
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(SPECIALS)]
    ms = {"type": "Metaspace", "replacement": MS, "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                                                 ms]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [EOS], "tokens": ["</s>"]}}},
        "decoder": ms,
        "model": {"type": "Unigram", "unk_id": UNK,
                  "vocab": [[t, 0.0] for t in SPECIALS] + [[p, s] for p, s in PIECES],
                  "byte_fallback": False},
    }


def write_tokenizer(path, tok=None):
    """tokenizer.json (T5's unless tok) as the tokenizers library writes it: indented by 2,
    UTF-8 ("▁" and "Ġ" themselves, not escaped)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_json() if tok is None else tok, f, indent=2, ensure_ascii=False)
        f.write("\n")


def segmentations(word, scores):
    """Every way to cut word into pieces of scores: (total score, pieces), best first."""
    if not word:
        return [(0.0, [])]
    out = []
    for end in range(1, len(word) + 1):
        head = word[:end]
        if head in scores:
            out += [(scores[head] + s, [head] + rest)
                    for s, rest in segmentations(word[end:], scores)]
    return sorted(out, key=lambda t: -t[0])


def encode(text, special):
    """The normalizer, the pre-tokenizer, the Unigram model's best path (Viterbi: the most
    likely segmentation of each word), the template: (ids, pieces)."""
    scores = dict(PIECES)
    if len(scores) != len(PIECES) or len(set(VOCAB)) != len(VOCAB):
        raise GenError("a piece twice in the vocabulary")
    text = re.sub(" {2,}", " ", unicodedata.normalize("NFKC", text))
    pieces = []
    for word in text.split():
        pieces += best_segmentation(MS + word, scores)
    if special:
        pieces.append("</s>")
    return [VOCAB.index(p) for p in pieces], pieces


def best_segmentation(word, scores):
    """The Unigram model's best path through one pre-tokenized word (it starts with "▁"); it
    must beat the next best by MARGIN."""
    segs = segmentations(word, scores)
    if not segs:
        raise GenError("%r: no segmentation (it would be <unk>)" % word)
    if len(segs) > 1 and segs[0][0] - segs[1][0] < MARGIN:
        raise GenError("%r: %s and %s score within %g" % (word, segs[0][1], segs[1][1],
                                                         MARGIN))
    return segs[0][1]


def label(piece):
    """What the token stands for in the text (the Metaspace decoder's per-token step: "▁" is a
    space), as attnscope labels a token of a tokenizer.json; an added token is its content."""
    return piece if piece in SPECIALS else piece.replace(MS, " ")


# ---- BART's tokenizer: byte-level BPE in RoBERTa's layout -----------------------------------

BART_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # RoBERTa's (and BART's) ids 0..3
BART_BOS, BART_PAD, BART_EOS = 0, 1, 2
G = "\u0120"  # "Ġ": bytes_to_unicode's symbol for the space byte
# The merges in rank order (the vocabulary: the specials, the 256 byte symbols in
# bytes_to_unicode's order, one token per merge). Chosen so that the sentences come out as a mix
# of whole words ("The", "Ġsmall", "Ġsena") and pieces ("Ġsee" "s", "Ġgr" "een", "Ġgar" "den",
# "Ġdo" "vi", "Ġbal" "o"); the order matters where two merges compete ("o g" before "Ġd o", so
# "Ġdog" stays whole while "Ġdovi" is "Ġdo" + "vi"; "al l" before "Ġb al", so "Ġball" is whole
# and "Ġbalo" is "Ġbal" + "o"); the last ones only make the vocabulary less bare.
BART_MERGES = [
    (G, "t"), ("h", "e"), (G + "t", "he"), ("T", "he"), (G, "s"), (G, "d"), (G, "b"),
    ("e", "e"), ("e", "n"), ("a", "l"), ("al", "l"), (G + "s", "m"), (G + "sm", "all"),
    ("o", "g"), (G + "d", "og"), (G + "s", "ee"), (G, "r"), ("e", "d"), (G + "r", "ed"),
    (G + "b", "all"), (G, "i"), (G + "i", "n"), (G, "g"), (G + "g", "r"), ("ee", "n"),
    ("a", "r"), (G + "g", "ar"), ("d", "en"), (G, "."), ("L", "o"), (G + "d", "o"), ("v", "i"),
    (G + "s", "en"), (G + "sen", "a"), (G + "b", "al"),
    (G, "a"), ("n", "d"), (G + "a", "nd"), (G, "c"), ("a", "t"), (G + "c", "at"), (G, "w"),
    ("e", "r"), (G + "w", "at"), (G + "wat", "er"), ("i", "n"), ("in", "g"), (G, "o"),
    (G + "o", "f"), (G, ","),
]


def bart_vocab():
    """token -> id: the specials, the byte symbols, the merges' results."""
    vocab = {t: i for i, t in enumerate(BART_SPECIALS)}
    for ch in g2.bytes_to_unicode().values():
        vocab[ch] = len(vocab)
    for a, b in BART_MERGES:
        if a not in vocab or b not in vocab:
            raise GenError("merge %s %s: a part that is not yet a token" % (a, b))
        if a + b in vocab:
            raise GenError("merge %s %s makes a token that already exists" % (a, b))
        vocab[a + b] = len(vocab)
    return vocab


def bart_tokenizer_json():
    """facebook/bart-base's tokenizer.json layout (RoBERTa's), on BART_MERGES: no normalizer,
    ByteLevel (no prefix space, GPT-2's regex), BPE, RobertaProcessing <s> A </s>, the
    ByteLevel decoder. Merges as pairs, as the library writes them now."""
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(BART_SPECIALS)]
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
          "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": None, "pre_tokenizer": bl,
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", BART_EOS],
                           "cls": ["<s>", BART_BOS], "trim_offsets": True,
                           "add_prefix_space": False},
        "decoder": dict(bl, add_prefix_space=True),
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False, "vocab": bart_vocab(),
                  "merges": [[a, b] for a, b in BART_MERGES]},
    }


def bart_encode(text, special):
    """GPT-2's regex, the bytes as symbols, BPE by rank (OpenAI's encoder.py, gen_gpt2's port),
    and with special <s> ... </s>: (ids, tokens)."""
    vocab = bart_vocab()
    enc = g2.Encoder(vocab, BART_MERGES)
    pieces = []
    for word in enc.pat.findall(text):
        pieces += enc.bpe("".join(enc.byte_encoder[b] for b in word.encode("utf-8"))).split(" ")
    if special:
        pieces = ["<s>"] + pieces + ["</s>"]
    return [vocab[p] for p in pieces], pieces


def bart_label(tok):
    """A byte-level token's bytes as UTF-8 text ("Ġsmall" is " small"); a special its content."""
    return tok if tok in BART_SPECIALS else g2.token_label(tok)


# ---- Marian's tokenizer: its own files, two SentencePiece models and vocab.json ---------------

# opus-mt's folders have no tokenizer.json: source.spm reads the source language, target.spm the
# target, and vocab.json numbers the pieces of both. Here the source's model has PIECES and the
# target's one more, "▁dovi", so the target reads "dovi" whole where the source's model would cut
# it "▁dov" + "i": a target read with the wrong model has other ids.
MARIAN_TARGET_ONLY = [(MS + "dovi", -6.3)]
# </s> 0 and <unk> 1 first, <pad> last (Marian's vocab.json: the pad token appended after the
# SentencePiece models' pieces); between them the pieces, the source's first.
MARIAN_VOCAB = (["</s>", "<unk>"] + [p for p, _ in PIECES] + [p for p, _ in MARIAN_TARGET_ONLY] +
                ["<pad>"])
MARIAN_EOS, MARIAN_UNK, MARIAN_PAD = 0, 1, len(MARIAN_VOCAB) - 1


def protobuf(fields):
    """A protobuf message from (field, value): an int is a varint, a float a fixed32, bytes or a
    str length-delimited."""
    def varint(x):
        out = bytearray()
        while True:
            out.append((x & 0x7F) | (0x80 if x > 0x7F else 0))
            x >>= 7
            if not x:
                return bytes(out)
    out = bytearray()
    for f, v in fields:
        if isinstance(v, float):
            out += varint(f << 3 | 5) + struct.pack("<f", v)
        elif isinstance(v, int):
            out += varint(f << 3 | 0) + varint(v)
        else:
            v = v.encode("utf-8") if isinstance(v, str) else v
            out += varint(f << 3 | 2) + varint(len(v)) + v
    return bytes(out)


def marian_spm(pieces):
    """A SentencePiece ModelProto as spm_train writes a Unigram model: <unk> (UNKNOWN), <s> and
    </s> (CONTROL), then the pieces; the identity normalizer with SentencePiece's whitespace
    handling (a dummy prefix, extra spaces dropped, spaces as "▁")."""
    body = [(1, protobuf([(1, "<unk>"), (2, 0.0), (3, 2)])),
            (1, protobuf([(1, "<s>"), (2, 0.0), (3, 3)])),
            (1, protobuf([(1, "</s>"), (2, 0.0), (3, 3)]))]
    body += [(1, protobuf([(1, p), (2, float(sc))])) for p, sc in pieces]
    body += [(2, protobuf([(3, 1), (40, 0), (41, 1), (42, 2)])),
             (3, protobuf([(1, "identity"), (3, 1), (4, 1), (5, 1)]))]
    return protobuf(body)


def marian_pieces(side):
    return PIECES + (MARIAN_TARGET_ONLY if side == "target" else [])


def write_marian_tokenizer(folder):
    """opus-mt's tokenizer files: source.spm, target.spm, vocab.json, tokenizer_config.json."""
    for side in ("source", "target"):
        with open(os.path.join(folder, side + ".spm"), "wb") as f:
            f.write(marian_spm(marian_pieces(side)))
    gf.write_json(os.path.join(folder, "vocab.json"), {p: i for i, p in enumerate(MARIAN_VOCAB)})
    gf.write_json(os.path.join(folder, "tokenizer_config.json"),
                  {"source_lang": "en", "target_lang": "xx", "separate_vocabs": False})


def marian_encode(text, special, side):
    """SentencePiece: extra spaces dropped, every space "▁", one "▁" put in front; the best
    path (no piece has a "▁" inside, so each word's own); with special </s>: (ids, pieces)."""
    text = MS + re.sub(" +", " ", text.strip(" ")).replace(" ", MS)
    scores = dict(marian_pieces(side))
    pieces = []
    for word in re.findall(MS + "[^" + MS + "]*", text):
        pieces += best_segmentation(word, scores)
    if special:
        pieces.append("</s>")
    return [MARIAN_VOCAB.index(p) for p in pieces], pieces


def check_marian_oracle(folder, src_pieces, tgt_pieces):
    """SentencePiece itself (Debian's python3-sentencepiece) must cut the source and the
    target as marian_encode does, and the source's model the target otherwise. Returns its
    version."""
    import sentencepiece
    sp = {side: sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(folder, side + ".spm")) for side in ("source", "target")}
    for what, text, side, want in (("source", SOURCE, "source", src_pieces[:-1]),
                                   ("target", TARGET, "target", tgt_pieces)):
        got = sp[side].encode(text, out_type=str)
        if got != want:
            raise GenError("marian %s: SentencePiece %s gives %s, the model here %s" % (
                what, sentencepiece.__version__, got, want))
    if sp["source"].encode(TARGET, out_type=str) == tgt_pieces:
        raise GenError("marian: the source's model cuts the target as the target's does")
    return sentencepiece.__version__


ORACLE_JS = r"""
'use strict';
const tk = require('tokenizers');
const [file, source, target] = process.argv.slice(2);
(async () => {
  const tok = tk.Tokenizer.fromFile(file);
  const a = await tok.encode(source, null, {addSpecialTokens: true});
  const b = await tok.encode(target, null, {addSpecialTokens: false});
  const version = require(require.resolve('tokenizers/package.json')).version;
  console.log(JSON.stringify({version, source: {ids: a.getIds(), tokens: a.getTokens()},
                              target: {ids: b.getIds(), tokens: b.getTokens()}}));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def oracle_version():
    """The tokenizers version tests/tokenizers/regen.sh pins (its oracle= line)."""
    with open(REGEN, encoding="utf-8") as f:
        m = re.search(r"^oracle=(tokenizers@[0-9.]+)$", f.read(), re.M)
    if not m:
        raise GenError("%s: no oracle=tokenizers@VERSION line" % REGEN)
    return m.group(1)


def oracle(toks, source, target):
    """Hugging Face's tokenizers (Node binding) on each tokenizer.json of toks (name -> the
    JSON, written to a scratch folder as into the cases'): NODE_PATH's, or the pinned version
    installed there once. name -> what ORACLE_JS prints."""
    with tempfile.TemporaryDirectory(prefix="gen_seq2seq.") as tmp:
        js = os.path.join(tmp, "oracle.js")
        with open(js, "w", encoding="utf-8") as f:
            f.write(ORACLE_JS)
        env = dict(os.environ)

        def run(path):
            return subprocess.run(["node", js, path, source, target], env=env, cwd=tmp,
                                  capture_output=True, text=True)

        got = {}
        for name, tok in toks:
            path = os.path.join(tmp, name, "tokenizer.json")
            write_tokenizer(path, tok)
            try:
                r = run(path)
            except FileNotFoundError:
                raise GenError("node is not installed (scripts/bootstrap --tests), or run with "
                               "--no-oracle")
            if r.returncode != 0 and "Cannot find module 'tokenizers'" in r.stderr:
                pkg = oracle_version()
                print("seq2seq: installing %s into a scratch folder" % pkg)
                inst = subprocess.run(["npm", "install", "--silent", "--no-save",
                                       "--no-package-lock", pkg], cwd=tmp, capture_output=True,
                                      text=True)
                if inst.returncode != 0:
                    raise GenError("npm install %s failed:\n%s" % (pkg, inst.stderr))
                env["NODE_PATH"] = os.path.join(tmp, "node_modules")
                r = run(path)
            if r.returncode != 0:
                raise GenError("the tokenizers oracle failed on %s's tokenizer:\n%s" % (
                    name, r.stderr))
            got[name] = json.loads(r.stdout)
        return got


def check_oracle(cases):
    """cases: (name, tokenizer JSON, (source ids, pieces), (target ids, pieces)); every id and
    piece must be the library's. Returns its version."""
    got = oracle([(name, tok) for name, tok, _, _ in cases], SOURCE, TARGET)
    for name, _, src, tgt in cases:
        g = got[name]
        for what, (ids, pieces) in (("source", src), ("target", tgt)):
            if g[what]["ids"] != ids or g[what]["tokens"] != pieces:
                raise GenError("%s %s: tokenizers@%s gives %s %s, the model here %s %s" % (
                    name, what, g["version"], g[what]["ids"], g[what]["tokens"], ids, pieces))
    return got[cases[0][0]]["version"]


# ---- the cases -----------------------------------------------------------------------------

T5 = dict(relative_attention_num_buckets=8, relative_attention_max_distance=16,
          dropout_rate=0.1, layer_norm_epsilon=1e-6, initializer_factor=1.0)
CASES = [
    # T5 v1.0: ReLU FFN, tied embeddings (the logits scaled by d_model^-0.5), F32
    dict(name="t5", dtype="F32",
         cfg=dict(T5, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=2,
                  num_decoder_layers=2, feed_forward_proj="relu", tie_word_embeddings=True)),
    # FLAN-T5 (T5 v1.1): gated-gelu FFN, an untied lm_head, heads x d_kv 48 != d_model 32, one
    # more decoder layer than encoder layers, BF16
    dict(name="flan-t5", dtype="BF16",
         cfg=dict(T5, d_model=32, d_kv=12, num_heads=4, d_ff=40, num_layers=2,
                  num_decoder_layers=3, feed_forward_proj="gated-gelu",
                  tie_word_embeddings=False)),
]


def config_json(c):
    """config.json as save_pretrained writes a T5Config (keys sorted; dense_act_fn and
    is_gated_act as T5Config derives them from feed_forward_proj)."""
    cfg = c["cfg"]
    gated = cfg["feed_forward_proj"].startswith("gated-")
    act = cfg["feed_forward_proj"].split("-")[-1]
    out = dict(cfg, architectures=["T5ForConditionalGeneration"], model_type="t5",
               is_encoder_decoder=True, use_cache=True, pad_token_id=PAD, eos_token_id=EOS,
               decoder_start_token_id=PAD, vocab_size=len(VOCAB), is_gated_act=gated,
               dense_act_fn="gelu_new" if act == "gelu" else act,
               torch_dtype={"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[c["dtype"]])
    return dict(sorted(out.items()))


def t5_weights(cfg, vocab, seed):
    """name -> float32 numpy, T5ForConditionalGeneration's names and torch's Linear layout (out,
    in), drawn in the order of the modules; the relative attention biases larger (scale 1) so
    that they matter."""
    gen = torch.Generator().manual_seed(seed)
    rnd, norm_w = gf.draws(gen)
    d, H, dk, ff = cfg["d_model"], cfg["num_heads"], cfg["d_kv"], cfg["d_ff"]
    gated = cfg["feed_forward_proj"].startswith("gated-")

    W = {"shared.weight": rnd(vocab, d, scale=1.0)}

    def attention(p, relative):
        # q at d_kv^-0.5 of k's scale, as T5's Mesh TensorFlow init folds the scaling it
        # leaves out of the attention into q
        W[p + "q.weight"] = rnd(H * dk, d, scale=0.2 * dk ** -0.5)
        W[p + "k.weight"] = rnd(H * dk, d)
        W[p + "v.weight"] = rnd(H * dk, d)
        W[p + "o.weight"] = rnd(d, H * dk)
        if relative:
            W[p + "relative_attention_bias.weight"] = rnd(cfg["relative_attention_num_buckets"],
                                                          H, scale=1.0)

    for stack, layers in (("encoder", cfg["num_layers"]), ("decoder", cfg["num_decoder_layers"])):
        for i in range(layers):
            b = "%s.block.%d.layer." % (stack, i)
            attention(b + "0.SelfAttention.", i == 0)
            W[b + "0.layer_norm.weight"] = norm_w(d)
            f = 1
            if stack == "decoder":
                attention(b + "1.EncDecAttention.", False)
                W[b + "1.layer_norm.weight"] = norm_w(d)
                f = 2
            p = b + "%d.DenseReluDense." % f
            if gated:
                W[p + "wi_0.weight"] = rnd(ff, d)
                W[p + "wi_1.weight"] = rnd(ff, d)
            else:
                W[p + "wi.weight"] = rnd(ff, d)
            W[p + "wo.weight"] = rnd(d, ff)
            W[b + "%d.layer_norm.weight" % f] = norm_w(d)
        W[stack + ".final_layer_norm.weight"] = norm_w(d)
    if not cfg["tie_word_embeddings"]:
        W["lm_head.weight"] = rnd(vocab, d)
    return W


# ---- the forward pass (Hugging Face's semantics) -------------------------------------------


def t5_norm(x, w, eps):
    """T5LayerNorm: the mean square in float32, no mean subtracted, no bias."""
    var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def gelu_new(x):
    """NewGELUActivation: GPT-2's tanh approximation, written out."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


def buckets(nq, nk, bidirectional, num_buckets, max_distance):
    """The bucket of each (query i, key j), of the relative position j - i (mesh tensorflow's
    scheme, in torch as T5Attention computes it): half the buckets (of each direction, when
    bidirectional; the decoder sees only the past) exact, the rest logarithmic up to
    max_distance, the last one beyond it."""
    rel = torch.arange(nk, dtype=torch.long)[None, :] - torch.arange(nq, dtype=torch.long)[:, None]
    out = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        out = out + (rel > 0).to(torch.long) * num_buckets
        dist = rel.abs()
    else:
        dist = -torch.min(rel, torch.zeros_like(rel))
    exact = num_buckets // 2
    far = exact + (torch.log(dist.float() / exact) / math.log(max_distance / exact) *
                   (num_buckets - exact)).to(torch.long)
    far = torch.min(far, torch.full_like(far, num_buckets - 1))
    return out + torch.where(dist < exact, dist, far)


def position_bias(T, cfg, stack, n):
    """(H, n, n): layer 0's relative_attention_bias at each bucket, every layer's bias."""
    table = T["%s.block.0.layer.0.SelfAttention.relative_attention_bias.weight" % stack]
    b = buckets(n, n, stack == "encoder", cfg["relative_attention_num_buckets"],
                cfg["relative_attention_max_distance"])
    return table[b].permute(2, 0, 1), b


def attend(T, cfg, p, xq, xkv, bias=None, causal=False):
    """T5Attention: q from xq, k and v from xkv, heads by view/transpose, q k^T (no scaling),
    + bias, the causal mask, softmax in float32, weights @ v, o. Returns (concat, out, heads)."""
    H, dk = cfg["num_heads"], cfg["d_kv"]
    nq, nk = xq.shape[0], xkv.shape[0]
    q = (xq @ T[p + "q.weight"].t()).view(nq, H, dk).transpose(0, 1)  # (H, nq, dk)
    k = (xkv @ T[p + "k.weight"].t()).view(nk, H, dk).transpose(0, 1)
    v = (xkv @ T[p + "v.weight"].t()).view(nk, H, dk).transpose(0, 1)
    scores = q @ k.transpose(1, 2)
    # scaled: T5 divides by nothing, so attnscope's scaled stage (scores / 1) is the scores
    heads = [dict(queries=q[h], keys=k[h], values=v[h], scores=scores[h], scaled=scores[h])
             for h in range(H)]
    biased = scores
    if bias is not None:
        biased = scores + bias
        for h in range(H):
            heads[h].update(position_bias=bias[h], biased=biased[h])
    masked = biased  # without a mask, what the softmax reads: attnscope's masked stage
    if causal:
        masked = biased.masked_fill(torch.triu(torch.ones(nq, nk, dtype=torch.bool), 1),
                                    float("-inf"))
    for h in range(H):
        heads[h]["masked"] = masked[h]
    weights = torch.softmax(masked.float(), dim=-1)
    ctx = weights @ v  # (H, nq, dk)
    wo = T[p + "o.weight"]  # (d, H dk)
    for h in range(H):
        vw = v[h] @ wo[:, h * dk:(h + 1) * dk].t()  # v_j W_O^h: (nk, d)
        heads[h].update(weights=weights[h], context=ctx[h],
                        weighted_norm=(weights[h].unsqueeze(-1) * vw.unsqueeze(0)).norm(dim=-1))
    concat = ctx.transpose(0, 1).reshape(nq, H * dk)
    return concat, concat @ wo.t(), heads


def ffn(T, cfg, p, x, rec):
    """T5DenseActDense (wo(relu(wi x))) or T5DenseGatedActDense (wo(gelu_new(wi_0 x) * wi_1 x)),
    its stages into rec; returns its output."""
    if cfg["feed_forward_proj"].startswith("gated-"):
        gate, up = x @ T[p + "wi_0.weight"].t(), x @ T[p + "wi_1.weight"].t()
        act = gelu_new(gate) * up
        rec.update(ffn_gate=gate, ffn_up=up, ffn_activated=act)
    else:
        hidden = x @ T[p + "wi.weight"].t()
        act = torch.relu(hidden)
        rec.update(ffn_hidden=hidden, ffn_activated=act)
    out = act @ T[p + "wo.weight"].t()
    rec["ffn_out"] = out
    return out


def t5_forward(cfg, W, src, tgt):
    """Every stage of T5ForConditionalGeneration in eval mode on source ids src and decoder
    input ids tgt: (encoder records, encoder final norm, decoder records (self, cross), decoder
    final norm, logits (len(tgt), vocab), the two stacks' bucket tables)."""
    T = {k: torch.from_numpy(v.copy()) for k, v in W.items()}
    eps = cfg["layer_norm_epsilon"]
    x = T["shared.weight"][torch.tensor(src)]
    bias, enc_b = position_bias(T, cfg, "encoder", len(src))
    enc = []
    for L in range(cfg["num_layers"]):
        b = "encoder.block.%d.layer." % L
        rec = {"inputs": x}
        n1 = t5_norm(x, T[b + "0.layer_norm.weight"], eps)
        concat, out, heads = attend(T, cfg, b + "0.SelfAttention.", n1, n1, bias=bias)
        res1 = x + out
        n2 = t5_norm(res1, T[b + "1.layer_norm.weight"], eps)
        rec.update(norm1=n1, context=concat, output=out, residual1=res1, norm2=n2, heads=heads)
        res2 = res1 + ffn(T, cfg, b + "1.DenseReluDense.", n2, rec)
        rec.update(residual2=res2, block_output=res2,
                   params=sublayer_params(W, b + "0.SelfAttention.", b + "0.layer_norm.weight",
                                          b + "1.DenseReluDense.", b + "1.layer_norm.weight"))
        enc.append(rec)
        x = res2
    enc_final = t5_norm(x, T["encoder.final_layer_norm.weight"], eps)

    y = T["shared.weight"][torch.tensor(tgt)]
    bias, dec_b = position_bias(T, cfg, "decoder", len(tgt))
    dec = []
    for L in range(cfg["num_decoder_layers"]):
        b = "decoder.block.%d.layer." % L
        s = {"inputs": y}
        n1 = t5_norm(y, T[b + "0.layer_norm.weight"], eps)
        concat, out, heads = attend(T, cfg, b + "0.SelfAttention.", n1, n1, bias=bias,
                                    causal=True)
        res1 = y + out
        s.update(norm1=n1, context=concat, output=out, residual1=res1, block_output=res1,
                 heads=heads,
                 params=sublayer_params(W, b + "0.SelfAttention.", b + "0.layer_norm.weight"))
        c = {"inputs": res1}
        n1 = t5_norm(res1, T[b + "1.layer_norm.weight"], eps)
        concat, out, heads = attend(T, cfg, b + "1.EncDecAttention.", n1, enc_final)
        res2 = res1 + out
        n2 = t5_norm(res2, T[b + "2.layer_norm.weight"], eps)
        c.update(norm1=n1, context=concat, output=out, residual1=res2, norm2=n2, heads=heads)
        res3 = res2 + ffn(T, cfg, b + "2.DenseReluDense.", n2, c)
        c.update(residual2=res3, block_output=res3,
                 params=sublayer_params(W, b + "1.EncDecAttention.", b + "1.layer_norm.weight",
                                        b + "2.DenseReluDense.", b + "2.layer_norm.weight"))
        dec.append((s, c))
        y = res3
    dec_final = t5_norm(y, T["decoder.final_layer_norm.weight"], eps)
    if cfg["tie_word_embeddings"]:  # mesh tensorflow's rescaling before the tied projection
        logits = (dec_final * (cfg["d_model"] ** -0.5)) @ T["shared.weight"].t()
    else:
        logits = dec_final @ T["lm_head.weight"].t()
    return enc, enc_final, dec, dec_final, logits, (enc_b, dec_b)


# ---- float64 cross-check -------------------------------------------------------------------


def bucket64(rel, bidirectional, num_buckets, max_distance):
    """The same bucket of one relative position, in Python's float64 math."""
    out = 0
    if bidirectional:
        num_buckets //= 2
        out += num_buckets if rel > 0 else 0
        dist = abs(rel)
    else:
        dist = max(-rel, 0)
    exact = num_buckets // 2
    if dist < exact:
        return out + dist
    far = exact + int(math.log(dist / exact) / math.log(max_distance / exact) *
                      (num_buckets - exact))
    return out + min(far, num_buckets - 1)


def t5_forward64(cfg, W, src, tgt):
    """The same in float64 numpy, heads by column index and the biases cell by cell: each
    stack's block outputs, final norms, logits and bucket tables."""
    A = {k: v.astype(np.float64) for k, v in W.items()}
    eps, H, dk = cfg["layer_norm_epsilon"], cfg["num_heads"], cfg["d_kv"]
    nb, md = cfg["relative_attention_num_buckets"], cfg["relative_attention_max_distance"]

    def norm(x, w):
        return w * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)

    def table(n, bidirectional):
        return np.array([[bucket64(j - i, bidirectional, nb, md) for j in range(n)]
                         for i in range(n)])

    def attention(p, xq, xkv, bt=None, rel=None, causal=False):
        q, k, v = xq @ A[p + "q.weight"].T, xkv @ A[p + "k.weight"].T, xkv @ A[p + "v.weight"].T
        concat = np.zeros((xq.shape[0], H * dk))
        for h in range(H):
            cols = slice(h * dk, (h + 1) * dk)
            s = q[:, cols] @ k[:, cols].T
            for i in range(s.shape[0]):
                for j in range(s.shape[1]):
                    if bt is not None:
                        s[i, j] += rel[bt[i, j], h]
                    if causal and j > i:
                        s[i, j] = -np.inf
            e = np.exp(s - s.max(-1, keepdims=True))
            concat[:, cols] = (e / e.sum(-1, keepdims=True)) @ v[:, cols]
        return concat @ A[p + "o.weight"].T

    def feed(p, x):
        if cfg["feed_forward_proj"].startswith("gated-"):
            g = x @ A[p + "wi_0.weight"].T
            act = 0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))
            act = act * (x @ A[p + "wi_1.weight"].T)
        else:
            act = np.maximum(x @ A[p + "wi.weight"].T, 0.0)
        return act @ A[p + "wo.weight"].T

    x = A["shared.weight"][src]
    enc_b = table(len(src), True)
    rel = A["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    enc = []
    for L in range(cfg["num_layers"]):
        b = "encoder.block.%d.layer." % L
        x = x + attention(b + "0.SelfAttention.", norm(x, A[b + "0.layer_norm.weight"]),
                          norm(x, A[b + "0.layer_norm.weight"]), enc_b, rel)
        x = x + feed(b + "1.DenseReluDense.", norm(x, A[b + "1.layer_norm.weight"]))
        enc.append(x)
    enc_final = norm(x, A["encoder.final_layer_norm.weight"])
    y = A["shared.weight"][tgt]
    dec_b = table(len(tgt), False)
    rel = A["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    dec = []
    for L in range(cfg["num_decoder_layers"]):
        b = "decoder.block.%d.layer." % L
        h = norm(y, A[b + "0.layer_norm.weight"])
        y = y + attention(b + "0.SelfAttention.", h, h, dec_b, rel, causal=True)
        s = y
        y = y + attention(b + "1.EncDecAttention.", norm(y, A[b + "1.layer_norm.weight"]),
                          enc_final)
        y = y + feed(b + "2.DenseReluDense.", norm(y, A[b + "2.layer_norm.weight"]))
        dec.append((s, y))
    dec_final = norm(y, A["decoder.final_layer_norm.weight"])
    if cfg["tie_word_embeddings"]:
        logits = dec_final * cfg["d_model"] ** -0.5 @ A["shared.weight"].T
    else:
        logits = dec_final @ A["lm_head.weight"].T
    return enc, enc_final, dec, dec_final, logits, (enc_b, dec_b)


BOUND = 1e-5  # gen_families' check64: |torch - float64| / (1 + |float64|)


def cross_check(name, got, ref):
    """Every stack's block outputs (gen_families' check64), the self-attention's residual, the
    final norms and the logits within BOUND, the bucket tables equal; the largest difference."""
    enc, enc_final, dec, dec_final, logits, tables = got
    enc64, enc_final64, dec64, dec_final64, logits64, tables64 = ref
    for t, t64, stack in zip(tables, tables64, ("encoder", "decoder")):
        if not np.array_equal(t.numpy(), t64):
            raise GenError("%s %s: float32 and float64 buckets differ:\n%s\n%s" % (
                name, stack, t.numpy(), t64))
    gf.check64(name + " encoder", enc, enc64)
    gf.check64(name + " decoder", [c for _, c in dec], [y for _, y in dec64])
    pairs = [(enc_final, enc_final64), (dec_final, dec_final64), (logits, logits64)]
    return within_bound(name, block_pairs(enc, dec, enc64, dec64) + pairs)


def block_pairs(enc, dec, enc64, dec64):
    """Every block output of both stacks (a decoder layer's two) beside its float64 twin."""
    pairs = [(r["block_output"], o) for r, o in zip(enc, enc64)]
    pairs += [(s["block_output"], o) for (s, _), (o, _) in zip(dec, dec64)]
    pairs += [(c["block_output"], o) for (_, c), (_, o) in zip(dec, dec64)]
    return pairs


def within_bound(name, pairs):
    """The largest relative difference of the (torch, float64) pairs; it stops past BOUND."""
    worst = 0.0
    for a, b in pairs:
        err = (np.abs(a.double().numpy() - b) / (1 + np.abs(b))).max()
        if err > BOUND:
            raise GenError("%s: torch and float64 differ by %g" % (name, err))
        worst = max(worst, err)
    return worst


# ---- writing -------------------------------------------------------------------------------

LAYER = ("inputs", "norm1", "context", "output", "residual1", "norm2", "ffn_hidden", "ffn_gate",
         "ffn_up", "ffn_activated", "ffn_out", "residual2", "block_output")
HEAD_Q = ("queries", "context")  # rows: the queries' tokens
HEAD_KV = ("keys", "values")  # rows: the keys' tokens
HEAD_SQ = ("scores", "scaled", "position_bias", "biased", "masked", "weights", "weighted_norm")


def sublayer_params(W, attn, norm1, ffn=None, norm2=None):
    """A sublayer's parameters as attnscope's export names them (x @ W orientation): the
    attention at prefix attn, its norm, and the FFN and its norm after it; a norm of all ones is
    left out, as the export leaves out a default."""
    out = {"W_query": W[attn + "q.weight"].T, "W_key": W[attn + "k.weight"].T,
           "W_value": W[attn + "v.weight"].T, "out": W[attn + "o.weight"].T}
    if ffn:
        if ffn + "wi_0.weight" in W:
            out.update(ffn_Wgate=W[ffn + "wi_0.weight"].T, ffn_W1=W[ffn + "wi_1.weight"].T)
        else:
            out["ffn_W1"] = W[ffn + "wi.weight"].T
        out["ffn_W2"] = W[ffn + "wo.weight"].T
    for name, key in (("norm1_weight", norm1), ("norm2_weight", norm2)):
        if key and not np.all(W[key] == 1.0):
            out[name] = W[key]
    return out


def write_layer(d, rec, qlab, klab):
    for name, a in rec.get("params", {}).items():
        rl = ["b"] if a.ndim == 1 else ["d%d" % i for i in range(a.shape[0])]
        g2.write_csv(os.path.join(d, "params", name + ".csv"), a, rl)
    for name in LAYER:
        if name in rec:
            g2.write_csv(os.path.join(d, name + ".csv"), rec[name], qlab)
    for h, hrec in enumerate(rec["heads"]):
        hd = os.path.join(d, "head%d" % h)
        for names, rows, cols in ((HEAD_Q, qlab, None), (HEAD_KV, klab, None),
                                  (HEAD_SQ, qlab, klab)):
            for name in names:
                if name in hrec:
                    g2.write_csv(os.path.join(hd, name + ".csv"), hrec[name], rows, cols)


def top10(row, what):
    """The top 10 ids (ties to the lower id); stops at a near-tie among the first 11."""
    order = sorted(range(len(row)), key=lambda i: (-float(row[i]), i))[:11]
    for a, b in zip(order, order[1:]):
        if abs(float(row[a]) - float(row[b])) < gf.TIE * max(1.0, abs(float(row[a]))):
            raise GenError("%s: ids %d and %d nearly tie" % (what, a, b))
    return order[:10]


def write_goldens(out, src, tgt, slab, tlab, run):
    enc, enc_final, dec, dec_final, logits, _ = run
    for fname, ids, labs in (("encoder/tokens.csv", src, slab), ("tokens.csv", tgt, tlab)):
        g2.write_rows(os.path.join(out, fname), ["position", "id", "token"],
                      [[str(i), str(t), lab] for i, (t, lab) in enumerate(zip(ids, labs))])
    for L, rec in enumerate(enc):
        write_layer(os.path.join(out, "encoder", "layer%d" % L), rec, slab, slab)
    if enc_final is not None:  # BART and Marian have none
        g2.write_csv(os.path.join(out, "encoder", "final_norm.csv"), enc_final, slab)
    for L, (s, c) in enumerate(dec):
        write_layer(os.path.join(out, "decoder", "layer%d" % L, "self"), s, tlab, tlab)
        write_layer(os.path.join(out, "decoder", "layer%d" % L, "cross"), c, tlab, slab)
    if dec_final is not None:
        g2.write_csv(os.path.join(out, "decoder", "final_norm.csv"), dec_final, tlab)
    rows = []
    for pos in range(len(tgt)):
        row = logits[pos].numpy()
        for rank, i in enumerate(top10(row, "%s position %d" % (out, pos))):
            rows.append([str(pos), str(rank + 1), str(i), g2.fmt(row[i])])
    g2.write_rows(os.path.join(out, "predictions.csv"), ["position", "rank", "id", "logit"], rows)


def write_scene(name):
    scene = ("# %s: random weights in Hugging Face's naming, written by gen_seq2seq.py.\n"
             "version: 1\ntitle: \"%s\"\n"
             "text: {source: \"%s\", target: \"%s\"}\n"
             "tokenizer: {kind: hf, file: ../%s%s}\n"
             "model: {file: ../%s/model.safetensors, arch: auto}\n"
             % (name, name, SOURCE, TARGET, name, "" if name == "marian" else "/tokenizer.json",
                name))
    os.makedirs(os.path.join(OUT, "scenes"), exist_ok=True)
    with open(os.path.join(OUT, "scenes", name + ".yaml"), "w", encoding="utf-8") as f:
        f.write(scene)


def t5_case(c, src, tgt, slab, tlab):
    cfg = c["cfg"]
    seed = 20250901 + sum(ord(ch) for ch in c["name"])
    W32 = t5_weights(cfg, len(VOCAB), seed)
    stored, W = gf.round_to(W32, c["dtype"])
    folder = os.path.join(OUT, c["name"])
    g2.write_safetensors(os.path.join(folder, "model.safetensors"), stored, {"format": "pt"})
    back, _ = g2.read_safetensors(os.path.join(folder, "model.safetensors"))
    for k in W:
        if not np.array_equal(back[k], W[k]):
            raise GenError("%s: %s does not read back" % (c["name"], k))
    gf.write_json(os.path.join(folder, "config.json"), config_json(c))
    write_tokenizer(os.path.join(folder, "tokenizer.json"))
    with torch.no_grad():
        run = t5_forward(cfg, W, src, tgt)
    worst = cross_check(c["name"], run, t5_forward64(cfg, W, src, tgt))
    write_goldens(os.path.join(OUT, "goldens", c["name"]), src, tgt, slab, tlab, run)
    write_scene(c["name"])
    top = [int(torch.argmax(run[4][i])) for i in range(len(tgt))]
    print("seq2seq: %s (%s): float64 within %.3g; top-1 at each target position %s" % (
        c["name"], c["dtype"], worst, top))


# ---- BART and Marian ------------------------------------------------------------------------

BART_SHAPE = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48,
                  max_position_embeddings=64, dropout=0.1, attention_dropout=0.0,
                  activation_dropout=0.0, init_std=0.02, encoder_layerdrop=0.0,
                  decoder_layerdrop=0.0, use_cache=True, is_encoder_decoder=True,
                  tie_word_embeddings=True)
SEQ_CASES = [
    # BART: learned positions (offset 2), layernorm_embedding, gelu, no embedding scale, F32
    dict(name="bart", kind="bart", dtype="F32", arch="BartForConditionalGeneration",
         cfg=dict(BART_SHAPE, activation_function="gelu", scale_embedding=False,
                  classifier_dropout=0.0, pad_token_id=BART_PAD, bos_token_id=BART_BOS,
                  eos_token_id=BART_EOS, decoder_start_token_id=BART_EOS,
                  forced_eos_token_id=BART_EOS)),
    # Marian: sinusoidal positions (no offset), no embedding norm, embeddings times sqrt(d_model),
    # swish, <pad> (the last id) as the decoder's start, BF16
    dict(name="marian", kind="marian", dtype="BF16", arch="MarianMTModel",
         cfg=dict(BART_SHAPE, activation_function="swish", scale_embedding=True,
                  share_encoder_decoder_embeddings=True, decoder_vocab_size=len(MARIAN_VOCAB),
                  pad_token_id=MARIAN_PAD, eos_token_id=MARIAN_EOS,
                  decoder_start_token_id=MARIAN_PAD, forced_eos_token_id=MARIAN_EOS)),
]
LN_EPS = 1e-5  # nn.LayerNorm's default, which BART's and Marian's layer norms keep


def bart_config_json(c, vocab):
    """config.json as save_pretrained writes a BartConfig / MarianConfig (keys sorted; no label
    keys; num_hidden_layers as both configs set it, = encoder_layers). MarianConfig has no
    static_position_embeddings (only the checkpoints converted by early versions carry it)."""
    cfg = c["cfg"]
    out = dict(cfg, architectures=[c["arch"]], model_type=c["kind"], vocab_size=vocab,
               num_hidden_layers=cfg["encoder_layers"],
               torch_dtype={"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[c["dtype"]])
    return dict(sorted(out.items()))


def marian_positions(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding's table (n_pos, dim): position p, column c < dim/2
    sin(p / 10000^(2c/dim)), column dim/2 + c cos of the same angle (not interleaved), the
    angles and their sines in float64, the table stored as float32."""
    if dim % 2:
        raise GenError("an odd d_model: the sine half would be one column wider")
    angle = (np.arange(n_pos, dtype=np.float64)[:, None] /
             np.power(10000.0, 2.0 * np.arange(dim // 2, dtype=np.float64) / dim)[None, :])
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(np.float32)


def check_positions(table):
    """The table against Python's math, cell by cell (float32 rounding only)."""
    n_pos, dim = table.shape
    for p in range(n_pos):
        for col in range(dim):
            c = col % (dim // 2)
            a = p / 10000.0 ** (2.0 * c / dim)
            want = math.sin(a) if col < dim // 2 else math.cos(a)
            if abs(float(table[p, col]) - want) > 1e-7:
                raise GenError("sinusoidal position %d column %d: %r, not %r" % (
                    p, col, float(table[p, col]), want))


def bart_weights(c, vocab, seed):
    """name -> float32 numpy in BartForConditionalGeneration's / MarianMTModel's names, torch's
    Linear layout (out, in): normal(0, 0.2) weights, normal(0, 0.1) biases, layer norms
    1 +- 0.1 and +- 0.1 (so that they are written), BART's learned positions normal(0, 0.2)
    with its 2 extra rows, Marian's sinusoidal tables, a random final_logits_bias; no
    lm_head.weight and no embed_tokens (tied to model.shared)."""
    cfg = c["cfg"]
    gen = torch.Generator().manual_seed(seed)
    rnd, norm_w = gf.draws(gen)
    d = cfg["d_model"]
    bart = c["kind"] == "bart"
    W = {"model.shared.weight": rnd(vocab, d)}

    def linear(p, n_out, n_in):
        W[p + "weight"] = rnd(n_out, n_in)
        W[p + "bias"] = rnd(n_out, scale=0.1)

    def norm(p):
        W[p + "weight"] = norm_w(d)
        W[p + "bias"] = rnd(d, scale=0.1)

    for stack in ("encoder", "decoder"):
        s = "model.%s." % stack
        if bart:
            W[s + "embed_positions.weight"] = rnd(cfg["max_position_embeddings"] + 2, d)
            norm(s + "layernorm_embedding.")
        else:
            W[s + "embed_positions.weight"] = marian_positions(cfg["max_position_embeddings"], d)
        for i in range(cfg[stack + "_layers"]):
            b = s + "layers.%d." % i
            attns = ["self_attn"] + (["encoder_attn"] if stack == "decoder" else [])
            for a in attns:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    linear(b + a + "." + proj + ".", d, d)
                norm(b + a + "_layer_norm.")
            ff = cfg[stack + "_ffn_dim"]
            linear(b + "fc1.", ff, d)
            linear(b + "fc2.", d, ff)
            norm(b + "final_layer_norm.")
    W["final_logits_bias"] = rnd(1, vocab)
    return W


def bart_act(cfg, x):
    """ACT2FN: "gelu" is the exact (erf) GELU, "swish" is SiLU."""
    if cfg["activation_function"] == "gelu":
        return F.gelu(x)
    if cfg["activation_function"] == "swish":
        return F.silu(x)
    raise GenError("activation %s" % cfg["activation_function"])


def bart_attend(T, H, p, xq, xkv, causal=False):
    """BartAttention (MarianAttention: the same) with eager_attention_forward: q, k, v with
    biases, heads by view/transpose, (q k^T) * head_dim^-0.5 (the scaling after the product, as
    now; before the attention-interface refactor q was scaled first), the causal mask, softmax
    in float32, weights @ v, out_proj with bias. Returns (concat, out, heads)."""
    nq, nk, d = xq.shape[0], xkv.shape[0], xq.shape[1]
    hd = d // H
    scaling = hd ** -0.5

    def proj(x, n, name):
        return F.linear(x, T[p + name + ".weight"], T[p + name + ".bias"]).view(
            n, H, hd).transpose(0, 1)  # (H, n, hd)

    q, k, v = proj(xq, nq, "q_proj"), proj(xkv, nk, "k_proj"), proj(xkv, nk, "v_proj")
    scores = torch.matmul(q, k.transpose(1, 2))
    scaled = scores * scaling
    masked = scaled  # what the softmax reads
    if causal:
        masked = scaled.masked_fill(torch.triu(torch.ones(nq, nk, dtype=torch.bool), 1),
                                    float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    ctx = torch.matmul(weights, v)  # (H, nq, hd)
    wo = T[p + "out_proj.weight"]  # (d, d): columns h*hd.. are head h's
    heads = []
    for h in range(H):
        vw = v[h] @ wo[:, h * hd:(h + 1) * hd].t()  # v_j W_O^h, no bias: (nk, d)
        heads.append(dict(queries=q[h], keys=k[h], values=v[h], scores=scores[h],
                          scaled=scaled[h], masked=masked[h], weights=weights[h], context=ctx[h],
                          weighted_norm=(weights[h].unsqueeze(-1) * vw.unsqueeze(0)).norm(dim=-1)))
    concat = ctx.transpose(0, 1).reshape(nq, d)
    return concat, F.linear(concat, wo, T[p + "out_proj.bias"]), heads


def bart_params(W, attn, norm1, ffn=None, norm2=None):
    """A sublayer's parameters as attnscope's export names them (x @ W orientation): the
    attention at prefix attn with its biases, its LayerNorm, and the FFN (fc1, fc2 at prefix
    ffn) and final_layer_norm; a norm's weight of all ones or bias of all zeros left out."""
    out = {}
    for name, proj in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
        out["W_" + name] = W[attn + proj + ".weight"].T
        out["b_" + name] = W[attn + proj + ".bias"]
    out["out"] = W[attn + "out_proj.weight"].T
    out["out_bias"] = W[attn + "out_proj.bias"]
    if ffn:
        out.update(ffn_W1=W[ffn + "fc1.weight"].T, ffn_b1=W[ffn + "fc1.bias"],
                   ffn_W2=W[ffn + "fc2.weight"].T, ffn_b2=W[ffn + "fc2.bias"])
    for name, key in (("norm1", norm1), ("norm2", norm2)):
        if key:
            if not np.all(W[key + "weight"] == 1.0):
                out[name + "_weight"] = W[key + "weight"]
            if not np.all(W[key + "bias"] == 0.0):
                out[name + "_bias"] = W[key + "bias"]
    return out


def bart_forward(c, W, src, tgt):
    """Every stage of BartForConditionalGeneration / MarianMTModel in eval mode (no cache, no
    padding mask) on source ids src and decoder input ids tgt: (encoder records, None, decoder
    records (self, cross), None, logits) - no final norms."""
    cfg = c["cfg"]
    bart = c["kind"] == "bart"
    T = {k: torch.from_numpy(v.copy()) for k, v in W.items()}
    d = cfg["d_model"]
    scale = math.sqrt(d) if cfg["scale_embedding"] else 1.0
    offset = 2 if bart else 0  # BartLearnedPositionalEmbedding's offset

    def embed(stack, ids):
        s = "model.%s." % stack
        x = F.embedding(torch.tensor(ids), T["model.shared.weight"]) * scale
        x = x + T[s + "embed_positions.weight"][torch.arange(len(ids)) + offset]
        if bart:
            x = F.layer_norm(x, (d,), T[s + "layernorm_embedding.weight"],
                             T[s + "layernorm_embedding.bias"], LN_EPS)
        return x

    def ln(x, p):
        return F.layer_norm(x, (d,), T[p + "weight"], T[p + "bias"], LN_EPS)

    def ffn(b, x, rec):
        hidden = F.linear(x, T[b + "fc1.weight"], T[b + "fc1.bias"])
        act = bart_act(cfg, hidden)
        out = F.linear(act, T[b + "fc2.weight"], T[b + "fc2.bias"])
        rec.update(ffn_hidden=hidden, ffn_activated=act, ffn_out=out)
        return out

    def post_block(b, attn, H, xq, xkv):
        """A post-norm layer with its FFN, attention attn (self_attn, encoder_attn) of xq on
        xkv: x = attn_layer_norm(xq + attn); final_layer_norm(x + fc2(act(fc1(x))))."""
        rec = {"inputs": xq}
        concat, out, heads = bart_attend(T, H, b + attn + ".", xq, xkv)
        res1 = xq + out
        n1 = ln(res1, b + attn + "_layer_norm.")
        res2 = n1 + ffn(b, n1, rec)
        n2 = ln(res2, b + "final_layer_norm.")
        rec.update(context=concat, output=out, residual1=res1, norm1=n1, residual2=res2,
                   norm2=n2, block_output=n2, heads=heads,
                   params=bart_params(W, b + attn + ".", b + attn + "_layer_norm.", b,
                                      b + "final_layer_norm."))
        return rec

    x = embed("encoder", src)
    enc = []
    for L in range(cfg["encoder_layers"]):
        b = "model.encoder.layers.%d." % L
        rec = post_block(b, "self_attn", cfg["encoder_attention_heads"], x, x)
        enc.append(rec)
        x = rec["block_output"]

    y = embed("decoder", tgt)
    dec = []
    for L in range(cfg["decoder_layers"]):
        b = "model.decoder.layers.%d." % L
        H = cfg["decoder_attention_heads"]
        s = {"inputs": y}
        concat, out, heads = bart_attend(T, H, b + "self_attn.", y, y, causal=True)
        res1 = y + out
        n1 = ln(res1, b + "self_attn_layer_norm.")
        s.update(context=concat, output=out, residual1=res1, norm1=n1, block_output=n1,
                 heads=heads,
                 params=bart_params(W, b + "self_attn.", b + "self_attn_layer_norm."))
        cr = post_block(b, "encoder_attn", H, n1, x)
        dec.append((s, cr))
        y = cr["block_output"]
    # lm_head (tied to shared, no bias), then final_logits_bias
    logits = F.linear(y, T["model.shared.weight"]) + T["final_logits_bias"]
    return enc, None, dec, None, logits


def bart_forward64(c, W, src, tgt):
    """The same in float64 numpy, heads by column index, the mask and the layer norm's
    statistics written out, GELU from math.erf: the two embeddings, every block's output (the
    decoder's self-attention's and cross-attention's) and the logits."""
    cfg = c["cfg"]
    bart = c["kind"] == "bart"
    A = {k: v.astype(np.float64) for k, v in W.items()}
    d = cfg["d_model"]
    erf = np.vectorize(math.erf)

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + LN_EPS) * A[p + "weight"] + A[p + "bias"]

    def lin(x, p):
        return x @ A[p + "weight"].T + A[p + "bias"]

    def act(x):
        if cfg["activation_function"] == "gelu":
            return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
        return x / (1.0 + np.exp(-x))

    def attention(p, H, xq, xkv, causal=False):
        q, k, v = lin(xq, p + "q_proj."), lin(xkv, p + "k_proj."), lin(xkv, p + "v_proj.")
        hd = d // H
        concat = np.zeros((xq.shape[0], d))
        for h in range(H):
            cols = slice(h * hd, (h + 1) * hd)
            s = q[:, cols] @ k[:, cols].T / math.sqrt(hd)
            for i in range(s.shape[0]):
                for j in range(s.shape[1]):
                    if causal and j > i:
                        s[i, j] = -np.inf
            e = np.exp(s - s.max(-1, keepdims=True))
            concat[:, cols] = (e / e.sum(-1, keepdims=True)) @ v[:, cols]
        return lin(concat, p + "out_proj.")

    def embed(stack, ids):
        s = "model.%s." % stack
        x = A["model.shared.weight"][ids] * (math.sqrt(d) if cfg["scale_embedding"] else 1.0)
        x = x + A[s + "embed_positions.weight"][[i + (2 if bart else 0)
                                                  for i in range(len(ids))]]
        return ln(x, s + "layernorm_embedding.") if bart else x

    x = x_emb = embed("encoder", src)
    enc = []
    for L in range(cfg["encoder_layers"]):
        b = "model.encoder.layers.%d." % L
        x = ln(x + attention(b + "self_attn.", cfg["encoder_attention_heads"], x, x),
               b + "self_attn_layer_norm.")
        x = ln(x + lin(act(lin(x, b + "fc1.")), b + "fc2."), b + "final_layer_norm.")
        enc.append(x)
    y = y_emb = embed("decoder", tgt)
    dec = []
    for L in range(cfg["decoder_layers"]):
        b = "model.decoder.layers.%d." % L
        H = cfg["decoder_attention_heads"]
        y = ln(y + attention(b + "self_attn.", H, y, y, causal=True), b + "self_attn_layer_norm.")
        s = y
        y = ln(y + attention(b + "encoder_attn.", H, y, x), b + "encoder_attn_layer_norm.")
        y = ln(y + lin(act(lin(y, b + "fc1.")), b + "fc2."), b + "final_layer_norm.")
        dec.append((s, y))
    logits = y @ A["model.shared.weight"].T + A["final_logits_bias"]
    return x_emb, y_emb, enc, dec, logits


def bart_cross_check(name, got, ref):
    """The embeddings, every block output and the logits within BOUND; the largest difference."""
    enc, _, dec, _, logits = got
    x_emb, y_emb, enc64, dec64, logits64 = ref
    gf.check64(name + " encoder", enc, enc64)
    gf.check64(name + " decoder self", [s for s, _ in dec], [s for s, _ in dec64])
    gf.check64(name + " decoder", [c for _, c in dec], [y for _, y in dec64])
    pairs = [(enc[0]["inputs"], x_emb), (dec[0][0]["inputs"], y_emb), (logits, logits64)]
    return within_bound(name, pairs + block_pairs(enc, dec, enc64, dec64))


def bart_case(c, tok, src, tgt, slab, tlab, vocab):
    """One BART-family case: checkpoint, config, tokenizer, goldens, scene."""
    seed = 20250901 + sum(ord(ch) for ch in c["name"])
    W32 = bart_weights(c, vocab, seed)
    if c["kind"] == "marian":
        for stack in ("encoder", "decoder"):
            check_positions(W32["model.%s.embed_positions.weight" % stack])
    stored, W = gf.round_to(W32, c["dtype"])
    folder = os.path.join(OUT, c["name"])
    g2.write_safetensors(os.path.join(folder, "model.safetensors"), stored, {"format": "pt"})
    back, _ = g2.read_safetensors(os.path.join(folder, "model.safetensors"))
    for k in W:
        if not np.array_equal(back[k], W[k]):
            raise GenError("%s: %s does not read back" % (c["name"], k))
    gf.write_json(os.path.join(folder, "config.json"), bart_config_json(c, vocab))
    if c["kind"] == "marian":
        write_marian_tokenizer(folder)
    else:
        write_tokenizer(os.path.join(folder, "tokenizer.json"), tok)
    with torch.no_grad():
        run = bart_forward(c, W, src, tgt)
    worst = bart_cross_check(c["name"], run, bart_forward64(c, W, src, tgt))
    write_goldens(os.path.join(OUT, "goldens", c["name"]), src, tgt, slab, tlab, run + (None,))
    write_scene(c["name"])
    top = [int(torch.argmax(run[4][i])) for i in range(len(tgt))]
    print("seq2seq: %s (%s): float64 within %.3g; top-1 at each target position %s" % (
        c["name"], c["dtype"], worst, top))


def main():
    use_oracle = "--no-oracle" not in sys.argv[1:]
    src, src_pieces = encode(SOURCE, special=True)
    tgt, tgt_pieces = encode(TARGET, special=False)
    dec_ids, dec_pieces = [PAD] + tgt, ["<pad>"] + tgt_pieces  # decoder_start_token_id first
    slab, tlab = [label(p) for p in src_pieces], [label(p) for p in dec_pieces]
    print("seq2seq: %d pieces; source %s %s; target %s %s" % (
        len(VOCAB), src, src_pieces, dec_ids, dec_pieces))
    b_src, b_src_pieces = bart_encode(SOURCE, special=True)
    b_tgt, b_tgt_pieces = bart_encode(TARGET, special=False)
    b_dec, b_dec_pieces = [BART_EOS] + b_tgt, ["</s>"] + b_tgt_pieces  # decoder_start_token_id
    print("seq2seq: bart: %d tokens; source %s %s; target %s %s" % (
        len(bart_vocab()), b_src, b_src_pieces, b_dec, b_dec_pieces))
    m_src, m_src_pieces = marian_encode(SOURCE, special=True, side="source")
    m_tgt, m_tgt_pieces = marian_encode(TARGET, special=False, side="target")
    m_dec, m_dec_pieces = [MARIAN_PAD] + m_tgt, ["<pad>"] + m_tgt_pieces  # <pad> starts
    print("seq2seq: marian: %d pieces; source %s %s; target %s %s" % (
        len(MARIAN_VOCAB), m_src, m_src_pieces, m_dec, m_dec_pieces))
    if use_oracle:
        version = check_oracle([
            ("t5", tokenizer_json(), (src, src_pieces), (tgt, tgt_pieces)),
            ("bart", bart_tokenizer_json(), (b_src, b_src_pieces), (b_tgt, b_tgt_pieces))])
        print("seq2seq: tokenizers@%s (Node) gives the same ids and pieces (t5, bart)" % version)
    else:
        print("seq2seq: WARNING: --no-oracle: the ids were not checked against tokenizers")
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for c in CASES:
        t5_case(c, src, dec_ids, slab, tlab)
    by_kind = {
        "bart": (bart_tokenizer_json(), b_src, b_dec, [bart_label(p) for p in b_src_pieces],
                 [bart_label(p) for p in b_dec_pieces], len(bart_vocab())),
        "marian": (None, m_src, m_dec, [label(p) for p in m_src_pieces],
                   [label(p) for p in m_dec_pieces], len(MARIAN_VOCAB)),
    }
    for c in SEQ_CASES:
        bart_case(c, *by_kind[c["kind"]])
    if use_oracle:
        print("seq2seq: SentencePiece %s cuts marian's source and target the same" %
              check_marian_oracle(os.path.join(OUT, "marian"), m_src_pieces, m_tgt_pieces))


if __name__ == "__main__":
    main()
