/* rng: PyTorch 1.13's CPU generator, reproduced bit for bit.
 *
 * Why it looks the way it does: the book's tensors are printed by Debian's python3-torch, whose
 * random kernels run in the AVX2 build of ATen (compiled by GCC with -mfma and the default
 * -ffp-contract=fast). Matching them digit for digit therefore means matching that machine code,
 * not the C++ source as written:
 *
 *   - uniform_ computes x * (to - from) + from as ONE fused multiply-add;
 *   - normal_ on >= 16 floats does Box-Muller with the cephes-style log/sincos polynomials of
 *     avx_mathfun.h (not libm), and GCC fused most of their mul+add pairs. The scalar copies
 *     below follow the instruction sequence of libtorch_cpu.so's normal_fill_16_AVX2 exactly:
 *     every fmaf() is a vfmadd/vfmsub/vfnmadd there, every plain * or + a separate instruction;
 *   - normal_ on < 16 elements uses libm's double log/sin/cos (the same glibc torch calls; its
 *     sincos() agrees with sin() and cos()) and the generator's cached second Box-Muller
 *     sample, with the final val * std + mean fused.
 *
 * Only the explicit fma()/fmaf() calls round once. No statement here multiplies and then adds,
 * so even a build that contracts (clang's default, gcc -std=gnu11) cannot add a fusion; the
 * project's -ffp-contract=off is belt and braces.
 */
#include "engine/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MT_M         397
#define MT_MATRIX_A  0x9908b0dfu
#define MT_UPPER     0x80000000u
#define MT_LOWER     0x7fffffffu
#define FLOAT_MASK   0xFFFFFFu                  /* 24 bits: float's digits */
#define DOUBLE_MASK  0x1FFFFFFFFFFFFFull        /* 53 bits: double's digits */
#define FLOAT_SCALE  (1.0f / 16777216.0f)       /* 2^-24 */
#define DOUBLE_SCALE (1.0 / 9007199254740992.0) /* 2^-53 */

void attn_rng_seed(struct attn_rng *r, uint64_t seed)
{
    r->mt[0] = (uint32_t)(seed & 0xffffffffu);
    for (uint32_t i = 1; i < RNG_MT_N; i++) {
        uint32_t prev = r->mt[i - 1];
        r->mt[i] = 1812433253u * (prev ^ (prev >> 30)) + i;
    }
    r->next = RNG_MT_N;
    r->has_next_double_normal = false;
    r->next_double_normal = 0.0;
}

static uint32_t mt_twist(uint32_t u, uint32_t v)
{
    uint32_t mixed = (u & MT_UPPER) | (v & MT_LOWER);
    return (mixed >> 1) ^ ((v & 1u) ? MT_MATRIX_A : 0u);
}

/* The twist in three runs, so no index wraps with a modulo (about twice as fast). */
static void mt_next_state(struct attn_rng *r)
{
    uint32_t *s = r->mt;
    int i = 0;
    for (; i < RNG_MT_N - MT_M; i++)
        s[i] = s[i + MT_M] ^ mt_twist(s[i], s[i + 1]);
    for (; i < RNG_MT_N - 1; i++)
        s[i] = s[i + MT_M - RNG_MT_N] ^ mt_twist(s[i], s[i + 1]);
    s[RNG_MT_N - 1] = s[MT_M - 1] ^ mt_twist(s[RNG_MT_N - 1], s[0]);
    r->next = 0;
}

static inline uint32_t temper(uint32_t y)
{
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint32_t attn_rng_u32(struct attn_rng *r)
{
    if (r->next >= RNG_MT_N) {
        mt_next_state(r);
    }
    return temper(r->mt[r->next++]);
}

/* n draws of attn_rng_u32 at once, a block of the state at a time. out: (n) */
static void fill_u32(uint32_t *out, size_t n, struct attn_rng *r)
{
    while (n > 0) {
        if (r->next >= RNG_MT_N)
            mt_next_state(r);
        size_t k = (size_t)(RNG_MT_N - r->next);
        if (k > n)
            k = n;
        const uint32_t *s = r->mt + r->next;
        for (size_t i = 0; i < k; i++)
            out[i] = temper(s[i]);
        r->next += (int)k;
        out += k;
        n -= k;
    }
}

uint64_t attn_rng_u64(struct attn_rng *r)
{
    uint64_t hi = attn_rng_u32(r);
    uint64_t lo = attn_rng_u32(r);
    return (hi << 32) | lo;
}

/* at::uniform_real_distribution<double>(0, 1): 53 bits of one 64-bit draw; exact. */
static double uniform01_d(struct attn_rng *r)
{
    return (double)(attn_rng_u64(r) & DOUBLE_MASK) * DOUBLE_SCALE;
}

/* fmaf() rounds once on every machine, so a build for CPUs with FMA (the instruction inlined)
 * and one without (libm's exact fmaf, a call per element) give the same bits. FMA_CLONE
 * compiles a hot loop twice and picks the one the CPU runs. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FMA_CLONE 1
static bool cpu_has_fma(void)
{
    static int has = -1;
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return has == 1;
}
#endif
#define INLINE static inline __attribute__((always_inline))

/* u: (n) 32-bit draws -> out: (n) uniforms in [from, to) */
INLINE void uniform_from_u32(float *out, const uint32_t *u, size_t n, float range, float from)
{
    for (size_t i = 0; i < n; i++)
        out[i] = fmaf((float)(u[i] & FLOAT_MASK) * FLOAT_SCALE, range, from);
}

static void uniform_plain(float *out, const uint32_t *u, size_t n, float range, float from)
{
    uniform_from_u32(out, u, n, range, from);
}

#ifdef FMA_CLONE
__attribute__((target("fma"))) static void uniform_fma(float *out, const uint32_t *u, size_t n,
                                                       float range, float from)
{
    uniform_from_u32(out, u, n, range, from);
}
#endif

#define U32_CHUNK 512

void attn_rng_uniform(float *out, size_t n, float from, float to, struct attn_rng *r)
{
    const float range = to - from;
    void (*convert)(float *, const uint32_t *, size_t, float, float) = uniform_plain;
#ifdef FMA_CLONE
    if (cpu_has_fma())
        convert = uniform_fma;
#endif
    uint32_t u[U32_CHUNK];
    for (size_t done = 0; done < n;) {
        size_t k = n - done < U32_CHUNK ? n - done : U32_CHUNK;
        fill_u32(u, k, r);
        convert(out + done, u, k, range, from);
        done += k;
    }
}

/* ---- avx_mathfun.h, one lane at a time ---------------------------------------------------- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* log256_ps for one lane. Returns an all-ones NaN for x <= 0, as the vector code does. */
INLINE float cephes_logf(float x)
{
    static const float p[9] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                               -1.2420140846E-1f, +1.4249322787E-1f, -1.6668057665E-1f,
                               +2.0000714765E-1f, -2.4999993993E-1f, +3.3333331174E-1f};
    const float q1 = -2.12194440e-4f;
    const float q2 = 0.693359375f;
    const float sqrthf = 0.707106781186547524f;
    const float min_norm_pos = u2f(0x00800000u);

    const bool invalid = x <= 0.0f;
    /* _mm256_max_ps(x, m) yields m unless x > m. */
    x = x > min_norm_pos ? x : min_norm_pos;

    /* Split into exponent and a mantissa in [0.5, 1). */
    const uint32_t bits = f2u(x);
    float e = (float)((int32_t)(bits >> 23) - 0x7f);
    x = u2f((bits & ~0x7f800000u) | f2u(0.5f));
    e = e + 1.0f;

    /* if (x < sqrt(1/2)) { e -= 1; x = x + x - 1; } else { x = x - 1; } */
    const bool below = x < sqrthf;
    const float tmp = below ? x : 0.0f;
    x = x - 1.0f;
    e = e - (below ? 1.0f : 0.0f);
    x = x + tmp;

    const float z = x * x;
    float y = fmaf(p[0], x, p[1]);
    for (int k = 2; k <= 8; k++) {
        y = fmaf(y, x, p[k]);
    }
    y = y * x;
    y = fmaf(y, z, e * q1);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    x = fmaf(e, q2, x);
    return invalid ? u2f(0xffffffffu) : x;
}

/* sincos256_ps for one lane: the cephes sinf/cosf range reduction and polynomials. */
INLINE void cephes_sincosf(float x, float *s, float *c)
{
    const float fopi = 1.27323954473516f; /* 4 / pi */
    const float minus_dp1 = -0.78515625f;
    const float minus_dp2 = -2.4187564849853515625e-4f;
    const float minus_dp3 = -3.77489497744594108e-8f;
    const float sincof_p0 = -1.9515295891E-4f;
    const float sincof_p1 = 8.3321608736E-3f;
    const float sincof_p2 = -1.6666654611E-1f;
    const float coscof_p0 = 2.443315711809948E-005f;
    const float coscof_p1 = -1.388731625493765E-003f;
    const float coscof_p2 = 4.166664568298827E-002f;

    uint32_t sign_sin = f2u(x) & 0x80000000u;
    x = u2f(f2u(x) & 0x7fffffffu);

    /* Octant j, rounded up to even, as in cephes. cvttps2dq truncates. */
    const float scaled = x * fopi;
    int32_t j = scaled < 2147483648.0f ? (int32_t)scaled : INT32_MIN;
    j = (int32_t)(((uint32_t)j + 1u) & ~1u);
    const float y = (float)j;

    sign_sin ^= ((uint32_t)j & 4u) << 29;
    const uint32_t sign_cos = (~((uint32_t)j - 2u) & 4u) << 29;
    const bool sin_poly_for_sin = ((uint32_t)j & 2u) == 0;

    /* Extended-precision reduction x - y * pi/4, in three parts. */
    x = fmaf(y, minus_dp1, x);
    x = fmaf(y, minus_dp2, x);
    x = fmaf(y, minus_dp3, x);

    const float z = x * x;

    /* cosine polynomial, good on [0, pi/4] */
    float yc = fmaf(z, coscof_p0, coscof_p1);
    yc = fmaf(yc, z, coscof_p2);
    yc = yc * z;
    yc = fmaf(yc, z, -(z * 0.5f));
    yc = yc + 1.0f;

    /* sine polynomial */
    float ys = fmaf(z, sincof_p0, sincof_p1);
    ys = fmaf(ys, z, sincof_p2);
    ys = ys * z;
    ys = fmaf(ys, x, x);

    /* The vector code selects with masks and add/sub; keep its exact (signed-zero) results. */
    const float ysin2 = sin_poly_for_sin ? ys : 0.0f;
    const float ysin1 = sin_poly_for_sin ? 0.0f : yc;
    const float sin_v = ysin1 + ysin2;
    const float cos_v = (ys - ysin2) + (yc - ysin1);

    *s = u2f(f2u(sin_v) ^ sign_sin);
    *c = u2f(f2u(cos_v) ^ sign_cos);
}

/* normal_fill_16_AVX2: Box-Muller over the pairs (data[j], data[j + 8]), in place. */
INLINE void normal_fill_16(float *data, float mean, float std)
{
    const float two_pi = (float)(2.0 * 3.14159265358979323846);
    for (int j = 0; j < 8; j++) {
        const float u1 = 1.0f - data[j];
        const float u2 = data[j + 8];
        const float radius = sqrtf(cephes_logf(u1) * -2.0f);
        const float theta = two_pi * u2;
        float sin_t, cos_t;
        cephes_sincosf(theta, &sin_t, &cos_t);
        data[j] = fmaf(radius * cos_t, std, mean);
        data[j + 8] = fmaf(radius * sin_t, std, mean);
    }
}

/* at::normal_distribution<double>: Box-Muller in double, second value cached in the generator. */
static double normal_double(double mean, double std, struct attn_rng *r)
{
    double ret;
    if (r->has_next_double_normal) {
        r->has_next_double_normal = false;
        ret = r->next_double_normal;
    } else {
        const double u1 = uniform01_d(r);
        const double u2 = uniform01_d(r);
        const double radius = sqrt(-2.0 * log(1.0 - u2));
        const double theta = 2.0 * 3.14159265358979323846 * u1;
        r->next_double_normal = radius * sin(theta);
        r->has_next_double_normal = true;
        ret = radius * cos(theta);
    }
    return fma(ret, std, mean);
}

/* Box-Muller over every whole block of 16 in data: (n) */
static void normal_blocks_plain(float *data, size_t n, float mean, float std)
{
    for (size_t i = 0; i + 16 <= n; i += 16)
        normal_fill_16(data + i, mean, std);
}

#ifdef FMA_CLONE
__attribute__((target("fma"))) static void normal_blocks_fma(float *data, size_t n, float mean,
                                                             float std)
{
    for (size_t i = 0; i + 16 <= n; i += 16)
        normal_fill_16(data + i, mean, std);
}
#endif

void attn_rng_normal(float *out, size_t n, float mean, float std, struct attn_rng *r)
{
    if (n < 16) {
        for (size_t i = 0; i < n; i++) {
            out[i] = (float)normal_double(mean, std, r);
        }
        return;
    }
    void (*blocks)(float *, size_t, float, float) = normal_blocks_plain;
#ifdef FMA_CLONE
    if (cpu_has_fma())
        blocks = normal_blocks_fma;
#endif
    attn_rng_uniform(out, n, 0.0f, 1.0f, r); /* x * 1 + 0 is exact: the plain uniforms */
    blocks(out, n, mean, std);
    if (n % 16 != 0) {
        float *tail = out + n - 16;
        attn_rng_uniform(tail, 16, 0.0f, 1.0f, r);
        blocks(tail, 16, mean, std);
    }
}

void attn_rng_bernoulli(unsigned char *keep, size_t n, double p_keep, struct attn_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        keep[i] = uniform01_d(r) < p_keep;
    }
}

void attn_rng_linear_init(float *w, float *bias, int in_features, int out_features,
                          struct attn_rng *r)
{
    /* torch.nn.init.kaiming_uniform_(a = sqrt(5)), in Python doubles; uniform_ casts to float. */
    const double a = sqrt(5.0);
    const double gain = sqrt(2.0 / (1.0 + a * a));
    const double w_std = gain / sqrt((double)in_features);
    const double w_bound = sqrt(3.0) * w_std;
    const float wb = (float)w_bound;

    /* torch draws the (out, in) weight row-major; we store its transpose, (in, out). A tile of
     * rows is drawn at once and written out a few columns wide, so the stores stay in cache. */
    enum { TILE = 16 };
    float *tile = malloc((size_t)TILE * (size_t)in_features * sizeof(float));
    for (int o0 = 0; o0 < out_features; o0 += TILE) {
        int rows = out_features - o0 < TILE ? out_features - o0 : TILE;
        for (int k = 0; k < rows; k++) {
            float *row = tile ? tile + (size_t)k * (size_t)in_features : NULL;
            if (!row) { /* no scratch: one value at a time, the same draws */
                for (int i = 0; i < in_features; i++)
                    attn_rng_uniform(&w[(size_t)i * (size_t)out_features + (size_t)(o0 + k)], 1,
                                     -wb, wb, r);
            } else {
                attn_rng_uniform(row, (size_t)in_features, -wb, wb, r);
            }
        }
        if (tile)
            for (int i = 0; i < in_features; i++) {
                float *dst = w + (size_t)i * (size_t)out_features + (size_t)o0;
                for (int k = 0; k < rows; k++)
                    dst[k] = tile[(size_t)k * (size_t)in_features + (size_t)i];
            }
    }
    free(tile);
    if (bias != NULL) {
        const double b_bound = in_features > 0 ? 1.0 / sqrt((double)in_features) : 0.0;
        attn_rng_uniform(bias, (size_t)out_features, -(float)b_bound, (float)b_bound, r);
    }
}
