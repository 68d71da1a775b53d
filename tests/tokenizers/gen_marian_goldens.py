#!/usr/bin/python3
"""The golden ids of Marian's tokenizer (goldens/marian*.tsv; README.md): SentencePiece itself
(Debian's python3-sentencepiece, the C++ library) makes the pieces, and MarianTokenizer's few
lines around it (transformers' tokenization_marian.py and the slow tokenizer's tokenize) are
written out below. Never run by the test suite: regen.sh runs it after fetch.sh.
    /usr/bin/python3 gen_marian_goldens.py DATA_DIR

For every folder of DATA_DIR named marian*, each string of strings.json is encoded as the source
(kind s) and as the target (kind t, text_target), with and without special tokens, and each pair
as the source (kind p)."""
import json
import os
import re
import sys

import sentencepiece

HERE = os.path.dirname(os.path.abspath(__file__))


class Marian:
    """MarianTokenizer (separate_vocabs false): the special tokens cut out first (the added
    tokens' trie: the leftmost, longest), a language code at a piece's start kept whole, the rest
    the side's SentencePiece pieces, each vocab.json's id or <unk>'s (transformers 4; see
    hftok.c's marian_piece), </s> added."""

    def __init__(self, folder):
        self.vocab = json.load(open(os.path.join(folder, "vocab.json"), encoding="utf-8"))
        cfg = json.load(open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8"))
        content = lambda t, d: (t["content"] if isinstance(t, dict) else t) if t else d
        self.unk = content(cfg.get("unk_token"), "<unk>")
        self.eos = content(cfg.get("eos_token"), "</s>")
        pad = content(cfg.get("pad_token"), "<pad>")
        extra = [content(t, None) for t in cfg.get("additional_special_tokens") or []]
        specials = sorted({self.eos, self.unk, pad, *extra}, key=len, reverse=True)
        self.split = re.compile("(" + "|".join(re.escape(s) for s in specials) + ")")
        self.specials = set(specials)
        self.spm = [sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, f))
                    for f in ("source.spm", "target.spm")]

    def tokens(self, text, side):
        out = []
        for chunk in self.split.split(text):
            if not chunk:
                continue
            if chunk in self.specials:
                out.append(chunk)
                continue
            if chunk.startswith(">>") and chunk.find("<<") != -1:
                end = chunk.find("<<") + 2
                out.append(chunk[:end])
                chunk = chunk[end:]
            out += self.spm[side].encode(chunk, out_type=str)
        return out

    def ids(self, text, side, special, pair=None):
        toks = self.tokens(text, side) + (self.tokens(pair, side) if pair is not None else [])
        ids = [self.vocab.get(t, self.vocab[self.unk]) for t in toks]
        return ids + [self.vocab[self.eos]] if special else ids


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_marian_goldens.py DATA_DIR")
    data = sys.argv[1]
    strings = json.load(open(os.path.join(HERE, "strings.json"), encoding="utf-8"))
    for name in sorted(n for n in os.listdir(data) if n.startswith("marian")):
        tok = Marian(os.path.join(data, name))
        lines = ["# %s: ids from SentencePiece %s (python3-sentencepiece) and MarianTokenizer's "
                 "steps, written by gen_marian_goldens.py" % (name, sentencepiece.__version__),
                 '# kind\tindex\tspecial\tids\ttype ids ("-": all 0)']
        for kind, side in (("s", 0), ("t", 1)):
            for i, s in enumerate(strings["strings"]):
                for sp in (0, 1):
                    lines.append("%s\t%d\t%d\t%s\t-" % (kind, i, sp,
                                                        " ".join(map(str, tok.ids(s, side, sp)))))
        for i, (a, b) in enumerate(strings["pairs"]):
            for sp in (0, 1):
                lines.append("p\t%d\t%d\t%s\t-" % (i, sp, " ".join(map(str, tok.ids(a, 0, sp, b)))))
        with open(os.path.join(HERE, "goldens", name + ".tsv"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print("%s: %d strings on both sides, %d pairs" % (name, len(strings["strings"]),
                                                         len(strings["pairs"])))


if __name__ == "__main__":
    main()
