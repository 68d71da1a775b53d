/* kernels: OpenBLAS products and row normalisations (see kernels.h). */
#include "engine/kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/cnum.h"

/* Without a bias, beta = 0 lets sgemm ignore c's old contents. With one, c is pre-filled with
 * the bias and beta = 1, which is what torch's addmm does for nn.Linear. */
void attn_mm_ab(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                const float *bias, int m, int n, int k)
{
    float beta = 0.0f;
    if (bias) {
        for (int i = 0; i < m; i++)
            memcpy(c + (size_t)i * ldc, bias, (size_t)n * sizeof(float));
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
                ldc);
}

void attn_mm_ab_ref(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                    const float *bias, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int p = 0; p < k; p++)
                acc += a[(size_t)i * lda + p] * b[(size_t)p * ldb + j];
            c[(size_t)i * ldc + j] = bias ? acc + bias[j] : acc;
        }
}

void attn_mm_abt(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m, int n,
                 int k)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                ldc);
}

void attn_mm_abt_ref(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                     int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int p = 0; p < k; p++)
                acc += a[(size_t)i * lda + p] * b[(size_t)j * ldb + p];
            c[(size_t)i * ldc + j] = acc;
        }
}

void attn_softmax_rows(float *out, const float *in, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        const float *x = in + (size_t)i * cols;
        float *y = out + (size_t)i * cols;
        float max = -INFINITY;
        for (int j = 0; j < cols; j++)
            if (x[j] > max)
                max = x[j];
        if (max == -INFINITY) { /* fully masked row: nothing to attend to */
            memset(y, 0, (size_t)cols * sizeof(float));
            continue;
        }
        float sum = 0.0f;
        for (int j = 0; j < cols; j++) {
            y[j] = expf(x[j] - max);
            sum += y[j];
        }
        /* torch multiplies by the reciprocal of the sum; so do we, for the same last bits. */
        float inv = 1.0f / sum;
        for (int j = 0; j < cols; j++)
            y[j] *= inv;
    }
}

void attn_softmax_causal_rows(float *out, const float *in, int n)
{
    for (int i = 0; i < n; i++) {
        const float *x = in + (size_t)i * n;
        float *y = out + (size_t)i * n;
        float max = -INFINITY;
        for (int j = 0; j <= i; j++)
            if (x[j] > max)
                max = x[j];
        if (max == -INFINITY) {
            memset(y, 0, (size_t)n * sizeof(float));
            continue;
        }
        /* The future's exp(-inf - max) is 0: it adds nothing to the sum (s + 0 == s) and
           becomes 0 * inv, which is what it is set to (NaN when inv is, as in the full row). */
        float sum = 0.0f;
        for (int j = 0; j <= i; j++) {
            y[j] = expf(x[j] - max);
            sum += y[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j <= i; j++)
            y[j] *= inv;
        float future = 0.0f * inv;
        for (int j = i + 1; j < n; j++)
            y[j] = future;
    }
}

void attn_sumnorm_rows(float *out, const float *in, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        const float *x = in + (size_t)i * cols;
        float *y = out + (size_t)i * cols;
        float sum = 0.0f;
        for (int j = 0; j < cols; j++)
            if (x[j] != -INFINITY)
                sum += x[j];
        for (int j = 0; j < cols; j++)
            y[j] = x[j] == -INFINITY ? 0.0f : x[j] / sum;
    }
}

int attn_blas_threads(void)
{
    return openblas_get_num_threads();
}

void attn_blas_set_threads(int n)
{
    openblas_set_num_threads(n);
}

#define HUGE_PAGE ((size_t)2 << 20)

float *attn_alloc_stage(size_t count)
{
    size_t bytes = (count ? count : 1) * sizeof(float);
    if (bytes < HUGE_PAGE)
        return calloc(count ? count : 1, sizeof(float));
    /* Aligned to a huge page, but only its whole huge pages asked for as such: a huge page
     * faults in 2 MiB at once, so a tail asked for with them would cost a whole one (a stage of
     * 2.75 MiB, TinyLlama's FFN at 128 tokens, cost 4 MiB, 3.75 MiB more a layer). */
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* advice: else small pages */
#endif
    memset(p, 0, bytes);
    return p;
}

int attn_gflops_env_parse(const char *text, double *gflops)
{
    double v;
    if (attn_cnum_parse_double(text, false, &v) != CNUM_OK || !(v >= 0.001 && v <= 1e9))
        return -1;
    *gflops = v;
    return 0;
}

double attn_measured_gflops(void)
{
    static double measured;
    if (measured > 0)
        return measured;
    const char *env = getenv("ATTNSCOPE_GFLOPS");
    if (env && *env && attn_gflops_env_parse(env, &measured) == 0)
        return measured; /* the speed to assume (tests, benchmarks): estimates then repeat */
    enum { N = 256 };
    float *a = calloc(3 * (size_t)N * N, sizeof(float));
    if (!a)
        return measured = 1.0; /* a pessimist's guess */
    float *b = a + (size_t)N * N, *c = b + (size_t)N * N;
    for (size_t i = 0; i < (size_t)N * N; i++)
        a[i] = b[i] = (float)(i % 7) * 0.25f;
    /* Five windows of 5 ms of products, the median rate: a busy machine (other jobs on the
       cores) is measured as busy, and one unlucky moment does not decide it. */
    double rates[5];
    for (int w = 0; w < 5; w++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double s = 0;
        int runs = 0;
        do {
            attn_mm_ab(c, N, a, N, b, N, NULL, N, N, N);
            runs++;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        } while (s < 0.005 && runs < 200);
        rates[w] = 2.0 * N * N * N * runs / (s > 1e-9 ? s : 1e-9) / 1e9;
        for (int j = w; j > 0 && rates[j] < rates[j - 1]; j--) {
            double t = rates[j];
            rates[j] = rates[j - 1];
            rates[j - 1] = t;
        }
    }
    double best = rates[2];
    free(a);
    /* A product of this size runs near the machine's peak; the forward pass (softmax, the
       stages' copies, first touches of fresh memory) does not: about half of it, measured on
       scenes of 1024 to 2048 tokens at d 1024. */
    return measured = best / 2 > 0.05 ? best / 2 : 0.05;
}
