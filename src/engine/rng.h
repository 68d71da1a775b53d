/* rng: PyTorch's CPU generator, reproduced bit for bit.
 *
 * torch.manual_seed(s) seeds an MT19937; every tensor the book prints after it is a pure
 * function of that stream. Each function here consumes the stream exactly as the named torch
 * call does (same number of 32/64-bit draws, same transformation), so the explorer shows the
 * book's tensors digit for digit. The generator is always passed in explicitly.
 */
#ifndef ATTNSCOPE_RNG_H
#define ATTNSCOPE_RNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RNG_MT_N 624

struct attn_rng {
    uint32_t mt[RNG_MT_N];
    int next;                    /* index of the next word in mt; RNG_MT_N = twist first */
    bool has_next_double_normal; /* torch caches the second Box-Muller value of normal<double> */
    double next_double_normal;
};

/* torch.manual_seed(seed): MT19937 init from the low 32 bits, normal caches cleared. */
void attn_rng_seed(struct attn_rng *r, uint64_t seed);
/* One 32-bit draw (CPUGeneratorImpl::random). */
uint32_t attn_rng_u32(struct attn_rng *r);
/* One 64-bit draw: (hi << 32) | lo, hi drawn first (CPUGeneratorImpl::random64). */
uint64_t attn_rng_u64(struct attn_rng *r);

/* tensor.uniform_(from, to) / torch.rand on float32: one u32 per element,
 * (u & 0xFFFFFF) * 2^-24, then x * (to - from) + from in float. out: (n) */
void attn_rng_uniform(float *out, size_t n, float from, float to, struct attn_rng *r);

/* tensor.normal_(mean, std) on a contiguous float32 tensor of n elements (nn.Embedding init).
 * n >= 16: fill uniforms, Box-Muller in blocks of 16 as torch's AVX2 kernel does, and redo the
 * last block on fresh uniforms when n % 16 != 0. n < 16: the per-element double path, which
 * uses and refills the cached second sample. out: (n) */
void attn_rng_normal(float *out, size_t n, float mean, float std, struct attn_rng *r);

/* tensor.bernoulli_(p_keep) on float32, the draw nn.Dropout makes: one u64 per element,
 * keep[i] = 1 when the 53-bit uniform is < p_keep. keep: (n) */
void attn_rng_bernoulli(unsigned char *keep, size_t n, double p_keep, struct attn_rng *r);

/* nn.Linear(in_features, out_features) init: weight (out, in) drawn row by row from
 * U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_ with a = sqrt(5)), then, when bias != NULL, the
 * bias from the same range. The weight is stored transposed, in x @ W orientation.
 * w: (in, out) row-major; bias: (out) or NULL */
void attn_rng_linear_init(float *w, float *bias, int in_features, int out_features,
                          struct attn_rng *r);

/* torch.rand(rows, cols): w: (rows, cols) row-major. */
static inline void attn_rng_rand(float *w, int rows, int cols, struct attn_rng *r)
{
    attn_rng_uniform(w, (size_t)rows * (size_t)cols, 0.0f, 1.0f, r);
}

#endif
