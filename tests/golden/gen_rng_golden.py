#!/usr/bin/python3
"""Write tests/golden/rng.golden: what PyTorch's CPU generator produces, for tests/test_rng.c.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, AVX2 kernels):

    /usr/bin/python3 tests/golden/gen_rng_golden.py

The file is a list of cases. Each case replays a short torch script from a seed; every line
names one torch call and, after '=', what it produced, so the C test can make the same calls
on one struct rng and compare bit patterns. Format:

    case <name>
    seed <s>                               torch.manual_seed(s)
    u32 <n> = u32 <n> <hex>...             n raw 32-bit draws
    u64 <n> = u64 <n> <hex>...             n raw 64-bit draws
    rand <n> = f32 <n> <hex>...            torch.rand(n)
    uniform <n> <from> <to> = f32 ...      torch.empty(n).uniform_(from, to)
    normal <n> <mean> <std> = f32 ...      torch.empty(n).normal_(mean, std)
    embedding <rows> <cols> = f32 ...      nn.Embedding(rows, cols).weight
    linear <in> <out> <bias> = f32 ...     nn.Linear(in, out, bias): weight (out, in) row-major,
                                           then the bias
    dropout <n> <p> = mask <n> <0/1...>    nn.Dropout(p)(torch.ones(n)) != 0
    end

f32 values are IEEE-754 bit patterns in hex. A large output may be sampled instead:
'= f32sparse <total> <k> <index> <hex> ...' lists k (index, value) pairs. Real-valued arguments
are written with repr(), which round-trips through strtod.
"""
import os
import sys

import numpy as np
import torch

assert torch.__version__.startswith("1.13"), torch.__version__
assert "AVX2" in torch.__config__.show(), "expected torch's AVX2 kernels"

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rng.golden")
SEEDS = [0, 123, 789, 2**32 + 5]


def f32_hex(t):
    bits = t.detach().contiguous().view(-1).numpy().astype(np.float32).view(np.uint32)
    return ["%08x" % b for b in bits.tolist()]


class Golden:
    def __init__(self):
        self.lines = []

    def case(self, name):
        self.lines.append("case " + name)

    def end(self):
        self.lines.append("end")

    def seed(self, s):
        torch.manual_seed(s)
        self.lines.append("seed %d" % s)

    def op(self, call, kind, values):
        self.lines.append("%s = %s %d %s" % (call, kind, len(values), " ".join(values)))

    def u32(self, n):
        # random_(0, 2**32 - 1) is one 32-bit draw modulo 2**32 - 1, i.e. the draw itself
        # unless it is 0xffffffff; main() checks the streams against numpy's MT19937.
        v = torch.empty(n, dtype=torch.int64).random_(0, 2**32 - 1).tolist()
        self.op("u32 %d" % n, "u32", ["%08x" % x for x in v])
        return v

    def u64(self, n):
        v = torch.empty(n, dtype=torch.int64).random_(-2**63, None).tolist()
        self.op("u64 %d" % n, "u64", ["%016x" % (x & (2**64 - 1)) for x in v])
        return v

    def rand(self, *shape):
        n = int(np.prod(shape))
        self.op("rand %d" % n, "f32", f32_hex(torch.rand(*shape)))

    def uniform(self, n, lo, hi):
        self.op("uniform %d %r %r" % (n, lo, hi), "f32", f32_hex(torch.empty(n).uniform_(lo, hi)))

    def normal(self, n, mean, std):
        self.op("normal %d %r %r" % (n, mean, std), "f32",
                f32_hex(torch.empty(n).normal_(mean, std)))

    def embedding(self, rows, cols):
        self.op("embedding %d %d" % (rows, cols), "f32",
                f32_hex(torch.nn.Embedding(rows, cols).weight))

    def linear(self, fin, fout, bias, sample=None):
        lin = torch.nn.Linear(fin, fout, bias=bias)
        vals = f32_hex(lin.weight) + (f32_hex(lin.bias) if bias else [])
        call = "linear %d %d %d" % (fin, fout, 1 if bias else 0)
        if sample is None:
            self.op(call, "f32", vals)
            return
        idx = sorted(set(range(sample)) | set(range(len(vals) - sample, len(vals)))
                     | set(range(0, len(vals), 97)))
        pairs = ["%d %s" % (i, vals[i]) for i in idx]
        self.lines.append("%s = f32sparse %d %d %s" % (call, len(vals), len(idx), " ".join(pairs)))

    def dropout(self, n, p):
        out = torch.nn.Dropout(p)(torch.ones(n))
        mask = "".join("1" if x != 0 else "0" for x in out.tolist())
        self.lines.append("dropout %d %r = mask %d %s" % (n, p, n, mask))


def reference_u32(seed, n):
    """numpy's MT19937 seeded the same way: a cross-check that 'u32' really is the raw draw."""
    return np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, size=n, dtype=np.uint64)


def main():
    g = Golden()

    # Raw streams, long enough to cross two state twists (624 words each).
    for s in SEEDS:
        g.case("raw_u32_seed%d" % s)
        g.seed(s)
        got = g.u32(1300)
        ref = reference_u32(s, 1300).tolist()
        if got != ref:
            sys.exit("u32 stream for seed %d disagrees with numpy's MT19937" % s)
        g.end()
        g.case("raw_u64_seed%d" % s)
        g.seed(s)
        got = g.u64(700)
        ref = reference_u32(s, 1400).tolist()
        if [x & (2**64 - 1) for x in got] != [(ref[2 * i] << 32) | ref[2 * i + 1]
                                               for i in range(700)]:
            sys.exit("u64 stream for seed %d disagrees with numpy's MT19937" % s)
        g.end()

    # torch.rand and uniform_.
    for s in SEEDS:
        g.case("rand_seed%d" % s)
        g.seed(s)
        g.rand(3, 2)
        g.rand(7)
        g.uniform(50, -0.3, 0.7)
        g.uniform(50, -2.5, 1.0 / 3.0)
        g.rand(2)
        g.end()

    # nn.Linear init (kaiming_uniform_(a = sqrt(5)) and the bias).
    for s in SEEDS:
        g.case("linear_seed%d" % s)
        g.seed(s)
        g.linear(3, 2, True)
        g.linear(3, 2, False)
        g.linear(4, 4, False)
        g.linear(16, 24, True)
        g.linear(5, 7, True)
        g.linear(768, 64, True, sample=64)
        g.rand(2)
        g.end()
    for fin in (1, 2, 3, 6, 7, 10, 12, 50, 100, 300, 768, 1000, 3072):
        g.case("linear_fanin%d" % fin)
        g.seed(fin)
        g.linear(fin, 3, True, sample=32 if fin > 100 else None)
        g.end()

    # normal_ through nn.Embedding: the double path (< 16) and the AVX2 path, with its
    # recomputed last block when numel % 16 != 0.
    for s in SEEDS:
        for n in (1, 2, 3, 5, 15, 16, 17, 24, 31, 32, 40, 100, 1000):
            g.case("embedding_n%d_seed%d" % (n, s))
            g.seed(s)
            g.embedding(n, 1)
            g.rand(2)
            g.end()
    for s in SEEDS:
        g.case("embedding_shapes_seed%d" % s)
        g.seed(s)
        g.embedding(6, 4)
        g.embedding(50, 8)
        g.embedding(3, 3)
        g.end()
    # A larger sample of the AVX2 path: many Box-Muller blocks, all octants of sincos.
    g.case("normal_large")
    g.seed(42)
    g.normal(2048, 0.0, 1.0)
    g.end()
    # mean and std other than (0, 1). They are exactly representable as float here: the
    # C API takes float mean/std, and torch's small path uses them as doubles.
    g.case("normal_mean_std")
    g.seed(7)
    g.normal(40, 0.25, 0.5)
    g.normal(16, -1.5, 3.0)
    g.normal(5, 0.25, 0.5)
    g.normal(3, -1.5, 3.0)
    g.normal(100, 0.0, 0.019999999552965164)
    g.end()

    # The cached second Box-Muller sample of normal<double>.
    g.case("normal_cache")
    g.seed(123)
    g.normal(3, 0.0, 1.0)       # leaves one sample cached
    g.normal(5, 0.0, 1.0)       # starts from it; leaves one cached
    g.normal(16, 0.0, 1.0)      # the AVX2 path neither reads nor clears it
    g.normal(1, 0.0, 1.0)       # the cached one
    g.normal(1, 0.0, 1.0)       # fresh pair
    g.rand(4)
    g.normal(2, 0.0, 1.0)       # the cached one, then a fresh pair
    g.end()
    g.case("normal_cache_cleared_by_seed")
    g.seed(5)
    g.normal(1, 0.0, 1.0)
    g.seed(5)
    g.normal(1, 0.0, 1.0)       # the seed dropped the cache: same value again
    g.end()

    # bernoulli_(1 - p) through nn.Dropout.
    for s in (0, 123, 789):
        for n in (36, 100):
            for p in (0.5, 0.1, 0.9):
                g.case("dropout_n%d_p%s_seed%d" % (n, p, s))
                g.seed(s)
                g.dropout(n, p)
                g.rand(2)
                g.end()

    # Mixed sequences after one seed.
    g.case("mixed_embeddings_seed123")
    g.seed(123)
    g.embedding(6, 4)
    g.embedding(10, 4)
    g.end()
    g.case("mixed_linear_dropout_seed123")
    g.seed(123)
    g.linear(4, 4, True)
    g.dropout(16, 0.5)
    g.rand(3)
    g.end()
    g.case("mixed_all_seed789")
    g.seed(789)
    g.embedding(2, 1)
    g.embedding(3, 1)
    g.linear(3, 2, True)
    g.embedding(1, 1)
    g.dropout(36, 0.1)
    g.embedding(6, 4)
    g.u32(5)
    g.u64(3)
    g.rand(3, 2)
    g.end()

    text = "# generated by gen_rng_golden.py with torch %s; do not edit\n" % torch.__version__
    text += "\n".join(g.lines) + "\n"
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote %s (%d bytes)" % (OUT, len(text)))


if __name__ == "__main__":
    main()
