#!/usr/bin/python3
"""The PyTorch peer of `attnscope bench --tokens N --dim D --heads H`: the same shape, measured
the same way, so bench/vs_torch can put the two side by side.

Run with Debian's python3 (it has torch 1.13):

    /usr/bin/python3 bench/torch_peer.py --tokens 1024 --dim 768 --heads 12 [--repeat R]
        [--threads T] [--json]

The forward pass is nn.MultiheadAttention(D, H, bias=False, batch_first=True) in eval mode under
torch.no_grad(), called with need_weights=True and average_attn_weights=False (every head's
weights, as attnscope keeps them) and a causal attn_mask, on one sequence of N random D-wide
inputs. bias=False matches attnscope's default qkv_bias: false; attnscope's out_proj has a bias
(out_bias: true), so a zero one is given to this out_proj too. Both time the median of R passes
after one warm-up pass.

Threads: both run their products on OpenBLAS (Debian's torch calls libblas.so.3, which is
OpenBLAS's). --threads T sets OpenBLAS's threads (openblas_set_num_threads, as attnscope does)
and torch's own (torch.set_num_threads, for its softmax and the rest) to T; without it both take
OpenBLAS's default, OPENBLAS_NUM_THREADS or one per core, as attnscope does.

The JSON line has attnscope's keys: sgemm_gflops times torch.mm on a D x D by D x D product (the
problem attnscope times with cblas_sgemm), each of the R samples running enough products for
about 10 Mflop; peak_rss_mb is getrusage's ru_maxrss in MiB, read after the forward passes and
before the sgemm's matrices.
"""

import argparse
import ctypes
import json
import os
import resource
import statistics
import sys
import time

BENCH_MAX_TOKENS = 8192  # as attnscope bench
SCENE_MAX_DIM = 4096
SCENE_MAX_HEADS = 256
BENCH_MAX_REPEAT = 100000


def usage_error(parser, message):
    parser.print_usage(sys.stderr)
    print(f"torch_peer.py: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, required=True)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--threads", type=int)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)  # exits 2 on a missing or malformed value, as attnscope does
    limits = [("tokens", 1, BENCH_MAX_TOKENS), ("dim", 1, SCENE_MAX_DIM),
              ("heads", 1, SCENE_MAX_HEADS), ("repeat", 1, BENCH_MAX_REPEAT)]
    for name, lo, hi in limits:
        v = getattr(a, name)
        if not lo <= v <= hi:
            usage_error(p, f"invalid --{name} '{v}' (a whole number from {lo} to {hi})")
    if a.threads is not None and not 1 <= a.threads <= 256:
        usage_error(p, f"invalid --threads '{a.threads}' (a whole number from 1 to 256)")
    if a.dim % a.heads:
        usage_error(p, f"--dim {a.dim} is not divisible by --heads {a.heads}")
    return a


def openblas():
    """The OpenBLAS torch's products run on (already loaded by `import torch`)."""
    try:
        lib = ctypes.CDLL("libblas.so.3")
        lib.openblas_get_num_threads.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError):
        return None


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def forward_flops(n, d):
    """As attnscope bench: Q, K, V and the output projection (8 n d d), the scores and the
    weights times V over every head (4 n n d); softmax and elementwise steps not counted."""
    return 8.0 * n * d * d + 4.0 * n * n * d


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main(argv):
    a = parse_args(argv)
    import torch  # after the checks: a usage error costs no import
    import torch.nn as nn

    blas = openblas()
    threads = a.threads or (blas.openblas_get_num_threads() if blas else torch.get_num_threads())
    if blas:
        blas.openblas_set_num_threads(threads)
    torch.set_num_threads(threads)  # its own default can differ from OpenBLAS's (1 here)

    torch.manual_seed(123)
    n, d = a.tokens, a.dim
    with torch.no_grad():
        mha = nn.MultiheadAttention(d, a.heads, bias=False, batch_first=True).eval()
        mha.out_proj.bias = nn.Parameter(torch.zeros(d))  # attnscope's out_bias: true
        x = torch.randn(1, n, d)
        # -inf above the diagonal, made once: a float mask is added as it is, where a bool one
        # would be turned into this on every call
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)

        def forward():
            return mha(x, x, x, need_weights=True, average_attn_weights=False, attn_mask=causal)

        out, weights = forward()  # the first pass
        assert weights.shape == (1, a.heads, n, n)
        del out, weights
        forward()  # warm-up, as attnscope
        forward_ms = median_ms(forward, a.repeat)
        rss = peak_rss_mb()
        del mha, x

        # sgemm: D x D by D x D, enough products per sample for about 10 Mflop
        m1, m2 = torch.rand(d, d) - 0.5, torch.rand(d, d) - 0.5
        flop = 2.0 * d * d * d
        calls = 1 if flop >= 1e7 else int(1e7 / flop) + 1

        def products():
            for _ in range(calls):
                torch.mm(m1, m2)

        torch.mm(m1, m2)  # warm-up
        sgemm_ms = median_ms(products, a.repeat) / calls

    result = {
        "impl": "torch",
        "tokens": n,
        "dim": d,
        "heads": a.heads,
        "repeat": a.repeat,
        "threads": threads,
        "forward_ms": round(forward_ms, 6),
        "gflops": round(forward_flops(n, d) / (forward_ms * 1e6), 4) if forward_ms > 0 else 0,
        "sgemm_n": d,
        "sgemm_gflops": round(flop / (sgemm_ms * 1e6), 4) if sgemm_ms > 0 else 0,
        "peak_rss_mb": round(rss, 1),
        "torch": torch.__version__,
    }
    if a.json:
        print(json.dumps(result))
    else:
        print(f"torch {torch.__version__}: {n} tokens, dim {d}, {a.heads} heads, {threads} "
              f"threads: forward {forward_ms:.4g} ms (median of {a.repeat}), "
              f"{result['gflops']:.2f} GFLOP/s; sgemm {d}x{d}x{d} "
              f"{result['sgemm_gflops']:.2f} GFLOP/s; peak RSS {rss:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
