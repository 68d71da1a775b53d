/* vecmath: elementwise float kernels (see vecmath.h). */
#include "engine/vecmath.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Each loop is compiled again for AVX2 and AVX-512 and picked by the CPU at load time (an ifunc):
 * 8 or 16 lanes where the baseline has 4. The operations stay the IEEE ones, one rounding each
 * (FMA contraction is off, meson.build), so every clone gives the same bits. GCC only: clang 14
 * names the ifunc NAME.ifunc, which callers in other files never find. Not under the
 * sanitizers, whose runtime is not up yet when a resolver runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define VEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#ifndef VEC_CLONES
#define VEC_CLONES
#endif

/* a when c, else b, by the bits: GCC turns the plain ?: of exp_body into branches for AVX2 and
 * AVX-512, and then vectorises it for neither. */
static inline float pick(bool c, float a, float b)
{
    uint32_t ua, ub, mask = 0u - (uint32_t)c;
    memcpy(&ua, &a, sizeof(ua));
    memcpy(&ub, &b, sizeof(ub));
    uint32_t u = (ua & mask) | (ub & ~mask);
    float v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

/* exp(x) for x in [-87.3, 88.7], 0 below (Cephes expf: x = n ln 2 + r, |r| <= ln 2 / 2,
 * exp(r) by a degree-7 polynomial, 2^n into the exponent bits). */
static inline float exp_body(float x)
{
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    float c = pick(x > 88.7f, 88.7f, x);
    c = pick(c >= -87.3f, c, -87.3f); /* a NaN too: returned below */
    float fn = c * log2e + 0.5f;
    int n = (int)fn;
    n -= (float)n > fn; /* floor */
    float nf = (float)n;
    float r = c - nf * ln2_hi;
    r = r - nf * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    uint32_t bits = (uint32_t)(n + 127) << 23;
    float two_n;
    memcpy(&two_n, &bits, sizeof(two_n));
    float e = p * two_n;
    return pick(x < -87.3f, 0.0f, pick(x != x, x, e));
}

VEC_CLONES void attn_exp_shift(float *y, const float *x, float shift, int count)
{
#pragma omp simd
    for (int j = 0; j < count; j++)
        y[j] = exp_body(x[j] - shift);
}

VEC_CLONES float attn_sum_lanes(const float *y, int count)
{
    float s[8] = {0};
    int j = 0;
    for (; j + 8 <= count; j += 8)
#pragma omp simd
        for (int l = 0; l < 8; l++)
            s[l] += y[j + l];
    for (int l = 0; j < count; j++, l++)
        s[l] += y[j];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

VEC_CLONES bool attn_any_nonfinite(const float *v, size_t count)
{
    const uint32_t exponent = 0x7f800000u;
    uint32_t lane[8] = {0}, bad = 0;
    size_t j = 0;
    for (; j + 8 <= count; j += 8)
#pragma omp simd
        for (int l = 0; l < 8; l++) {
            uint32_t u;
            memcpy(&u, v + j + l, sizeof(u));
            lane[l] |= (u & exponent) == exponent ? 1u : 0u;
        }
    for (; j < count; j++) {
        uint32_t u;
        memcpy(&u, v + j, sizeof(u));
        bad |= (u & exponent) == exponent ? 1u : 0u;
    }
    for (int l = 0; l < 8; l++)
        bad |= lane[l];
    return bad != 0;
}

VEC_CLONES bool attn_div_nonfinite(float *y, const float *x, float d, int count)
{
    const uint32_t exponent = 0x7f800000u;
    uint32_t lane[8] = {0}, bad = 0;
    int j = 0;
    for (; j + 8 <= count; j += 8)
#pragma omp simd
        for (int l = 0; l < 8; l++) {
            float v = x[j + l] / d;
            uint32_t u;
            memcpy(&u, &v, sizeof(u));
            y[j + l] = v;
            lane[l] |= (u & exponent) == exponent ? 1u : 0u;
        }
    for (; j < count; j++) {
        float v = x[j] / d;
        uint32_t u;
        memcpy(&u, &v, sizeof(u));
        y[j] = v;
        bad |= (u & exponent) == exponent ? 1u : 0u;
    }
    for (int l = 0; l < 8; l++)
        bad |= lane[l];
    return bad != 0;
}

VEC_CLONES void attn_scale(float *y, const float *x, float s, int count)
{
#pragma omp simd
    for (int j = 0; j < count; j++)
        y[j] = x[j] * s;
}

VEC_CLONES void attn_add(float *y, const float *a, const float *b, size_t count)
{
#pragma omp simd
    for (size_t j = 0; j < count; j++)
        y[j] = a[j] + b[j];
}

VEC_CLONES void attn_gelu_tanh(float *y, const float *x, size_t count)
{
    const float c = 0.7978845608028654f, k = 0.044715f;
#pragma omp simd
    for (size_t j = 0; j < count; j++) {
        float v = x[j];
        float u = c * (v + k * v * v * v);
        y[j] = v / (1.0f + exp_body(-2.0f * u));
    }
}

VEC_CLONES float attn_max_lanes(const float *x, int count)
{
    float m[16];
    for (int l = 0; l < 16; l++)
        m[l] = -INFINITY;
    int j = 0;
    for (; j + 16 <= count; j += 16)
#pragma omp simd
        for (int l = 0; l < 16; l++)
            m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
    for (int l = 0; j < count; j++, l++)
        m[l] = x[j] > m[l] ? x[j] : m[l];
    float max = -INFINITY;
    for (int l = 0; l < 16; l++)
        max = m[l] > max ? m[l] : max;
    return max;
}

VEC_CLONES void attn_fill(float *y, float v, size_t count)
{
#pragma omp simd
    for (size_t j = 0; j < count; j++)
        y[j] = v;
}
