/* kernels: OpenBLAS products and row normalisations (see kernels.h). */
#include "engine/kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/cnum.h"
#include "engine/pool.h"
#include "engine/vecmath.h"

/* A product is cut into parts by the shape alone, never by the number of threads, so its bits
 * are the same on any machine: the longer of its output's sides in 2 x ceil(side / 1024) slices,
 * 16-aligned, each one OpenBLAS call on one thread of the pool. Products under 2M multiply-adds
 * are one call (a thread's wake-up would cost more). */
struct mm_job {
    float *c;
    const float *a, *b, *bias;
    int ldc, lda, ldb, m, n, k;
    bool bt;      /* b is (n, k): c = a b^T */
    bool few;     /* a call of ATTN_FEW_ROWS rows or fewer is a matrix-vector product a row */
    bool by_cols; /* slices of c's columns, else of its rows */
    int parts, step;
};

static void mm_call(const struct mm_job *j, int r0, int r1, int c0, int c1)
{
    float beta = 0.0f;
    float *c = j->c + (size_t)r0 * j->ldc + c0;
    if (j->bias) { /* pre-filled with the bias, beta = 1: what torch's addmm does for nn.Linear */
        for (int i = r0; i < r1; i++)
            memcpy(j->c + (size_t)i * j->ldc + c0, j->bias + c0, (size_t)(c1 - c0) * sizeof(float));
        beta = 1.0f;
    }
    const float *b = j->bt ? j->b + (size_t)c0 * j->ldb : j->b + c0;
    if (j->few && r1 - r0 <= ATTN_FEW_ROWS) { /* b (n, k) as stored, or (k, n) read down */
        for (int i = r0; i < r1; i++)
            if (j->bt)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, c1 - c0, j->k, 1.0f, b, j->ldb,
                            j->a + (size_t)i * j->lda, 1, beta, j->c + (size_t)i * j->ldc + c0, 1);
            else
                cblas_sgemv(CblasRowMajor, CblasTrans, j->k, c1 - c0, 1.0f, b, j->ldb,
                            j->a + (size_t)i * j->lda, 1, beta, j->c + (size_t)i * j->ldc + c0, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, j->bt ? CblasTrans : CblasNoTrans, r1 - r0, c1 - c0,
                j->k, 1.0f, j->a + (size_t)r0 * j->lda, j->lda, b, j->ldb, beta, c, j->ldc);
}

static void mm_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct mm_job *j = ctx;
    int side = j->by_cols ? j->n : j->m;
    int lo = t * j->step, hi = lo + j->step < side ? lo + j->step : side;
    if (lo >= hi)
        return;
    if (j->by_cols)
        mm_call(j, 0, j->m, lo, hi);
    else
        mm_call(j, lo, hi, 0, j->n);
}

static void mm_run(struct mm_job *j)
{
    if (j->m <= 0 || j->n <= 0)
        return;
    attn_pool_threads(); /* sets OpenBLAS to one thread before its first product, whatever size */
    j->by_cols = j->n >= 256 || j->n >= j->m;
    int side = j->by_cols ? j->n : j->m;
    j->parts = (double)j->m * j->n * j->k < (double)(1 << 21) ? 1 : 2 * ((side + 1023) / 1024);
    j->step = ((side + j->parts - 1) / j->parts + 15) / 16 * 16;
    if (j->parts > 1 && j->step >= 32)
        attn_pool_run(j->parts, 0, mm_part, j);
    else
        mm_call(j, 0, j->m, 0, j->n);
}

#ifdef ATTNSCOPE_TEST_HOOKS
bool attn_kernels_naive; /* tests: every product by its _ref twin */
#endif

void attn_mm_ab(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                const float *bias, int m, int n, int k)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_kernels_naive) {
        attn_mm_ab_ref(c, ldc, a, lda, b, ldb, bias, m, n, k);
        return;
    }
#endif
    struct mm_job j = {.c = c,
                       .a = a,
                       .b = b,
                       .bias = bias,
                       .ldc = ldc,
                       .lda = lda,
                       .ldb = ldb,
                       .m = m,
                       .n = n,
                       .k = k};
    mm_run(&j);
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

/* attn_mm_abt, a few rows a matrix-vector product each when few (attn_mm_abt_few). */
static void mm_abt(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                   int n, int k, bool few)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_kernels_naive) {
        attn_mm_abt_ref(c, ldc, a, lda, b, ldb, m, n, k);
        return;
    }
#endif
    struct mm_job j = {.c = c,
                       .a = a,
                       .b = b,
                       .ldc = ldc,
                       .lda = lda,
                       .ldb = ldb,
                       .m = m,
                       .n = n,
                       .k = k,
                       .bt = true,
                       .few = few};
    mm_run(&j);
}

void attn_mm_abt(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m, int n,
                 int k)
{
    mm_abt(c, ldc, a, lda, b, ldb, m, n, k, false);
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

#ifdef ATTNSCOPE_TEST_HOOKS
int attn_row_panel_rows; /* tests: another panel height */
#endif

int attn_row_panel(void)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_row_panel_rows > 0)
        return attn_row_panel_rows;
#endif
    return 128; /* scores.h's PANEL */
}

/* A product in row panels: task t is panel t / col_parts, column slice t % col_parts. The
 * column cut depends on (n, k) and the panel height only, never on m or the threads. */
struct rows_job {
    struct mm_job call; /* c, a, b, bias, strides, n, k and bt; m is the whole height */
    int panel, col_parts, col_step;
};

static void rows_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct rows_job *j = ctx;
    int p = t / j->col_parts, q = t % j->col_parts;
    int r0 = p * j->panel, r1 = r0 + j->panel < j->call.m ? r0 + j->panel : j->call.m;
    int c0 = q * j->col_step, c1 = c0 + j->col_step < j->call.n ? c0 + j->col_step : j->call.n;
    if (c0 < c1)
        mm_call(&j->call, r0, r1, c0, c1);
}

static void rows_run(struct rows_job *j)
{
    const struct mm_job *c = &j->call;
    if (c->m <= 0 || c->n <= 0)
        return;
    attn_pool_threads(); /* OpenBLAS on one thread before its first product */
    j->panel = attn_row_panel();
    /* a panel's columns in 2 x ceil(n / 1024) slices, 16-aligned, when the panel is worth it */
    bool big = (double)j->panel * c->n * c->k >= (double)(1 << 21);
    j->col_parts = big ? 2 * ((c->n + 1023) / 1024) : 1;
    j->col_step = ((c->n + j->col_parts - 1) / j->col_parts + 15) / 16 * 16;
    if (j->col_step < 32) {
        j->col_parts = 1;
        j->col_step = c->n;
    }
    int panels = (c->m + j->panel - 1) / j->panel;
    int tasks = panels * j->col_parts;
    if ((double)c->m * c->n * c->k < (double)(1 << 21)) /* small: one thread, the same calls */
        for (int t = 0; t < tasks; t++)
            rows_part(j, t, 0);
    else
        attn_pool_run(tasks, 0, rows_part, j);
}

void attn_mm_ab_rows(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                     const float *bias, int m, int n, int k)
{
    attn_mm_ab_rows_few(c, ldc, a, lda, b, ldb, bias, m, n, k, false);
}

void attn_mm_ab_rows_few(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                         const float *bias, int m, int n, int k, bool few)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_kernels_naive) {
        attn_mm_ab_ref(c, ldc, a, lda, b, ldb, bias, m, n, k);
        return;
    }
#endif
    struct rows_job j = {.call = {.c = c,
                                  .a = a,
                                  .b = b,
                                  .bias = bias,
                                  .ldc = ldc,
                                  .lda = lda,
                                  .ldb = ldb,
                                  .m = m,
                                  .n = n,
                                  .k = k,
                                  .few = few}};
    rows_run(&j);
}

void attn_mm_abt_rows(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                      int n, int k)
{
    attn_mm_abt_rows_few(c, ldc, a, lda, b, ldb, m, n, k, false);
}

void attn_mm_abt_few(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                     int n, int k, bool panels)
{
    if (panels)
        attn_mm_abt_rows_few(c, ldc, a, lda, b, ldb, m, n, k, true);
    else
        mm_abt(c, ldc, a, lda, b, ldb, m, n, k, true);
}

void attn_mm_abt_rows_few(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                          int m, int n, int k, bool few)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_kernels_naive) {
        attn_mm_abt_ref(c, ldc, a, lda, b, ldb, m, n, k);
        return;
    }
#endif
    struct rows_job j = {.call = {.c = c,
                                  .a = a,
                                  .b = b,
                                  .ldc = ldc,
                                  .lda = lda,
                                  .ldb = ldb,
                                  .m = m,
                                  .n = n,
                                  .k = k,
                                  .bt = true,
                                  .few = few}};
    rows_run(&j);
}

void attn_softmax_row_prefix(float *y, const float *x, int len, int cols)
{
    float max = attn_max_lanes(x, len);
    if (max == -INFINITY) { /* -inf and nan only: a comparison never picks a nan */
        /* Fully masked (only -inf, the mask's): nothing to attend to, weights 0. A nan among
           them makes torch's max nan and so every weight of the row: so here, never a 0 that
           hides it (a NaN row is not a masked one). */
        bool nan = false;
        for (int j = 0; j < len; j++)
            nan |= x[j] != x[j];
        if (!nan) {
            memset(y, 0, (size_t)cols * sizeof(float));
            return;
        }
        for (int j = 0; j < cols; j++)
            y[j] = NAN;
        return;
    }
    attn_exp_shift(y, x, max, len);
    /* torch multiplies by the reciprocal of the sum; so do we */
    float inv = 1.0f / attn_sum_lanes(y, len);
    attn_scale(y, y, inv, len);
    /* NaN when inv is, as in the full row */
    attn_fill(y + len, 0.0f * inv, (size_t)(cols - len > 0 ? cols - len : 0));
}

struct softmax_job {
    float *out;
    const float *in;
    int rows, cols;
    bool causal;
};

enum { ROWS_PER_TASK = 16 };

static void softmax_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct softmax_job *j = ctx;
    for (int i = t * ROWS_PER_TASK; i < j->rows && i < (t + 1) * ROWS_PER_TASK; i++)
        attn_softmax_row_prefix(j->out + (size_t)i * j->cols, j->in + (size_t)i * j->cols,
                                j->causal ? i + 1 : j->cols, j->cols);
}

static void softmax_run(float *out, const float *in, int rows, int cols, bool causal)
{
    struct softmax_job j = {out, in, rows, cols, causal};
    int tasks = (rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    if ((double)rows * cols < 65536) /* small: a thread's wake-up would cost more */
        for (int t = 0; t < tasks; t++)
            softmax_part(&j, t, 0);
    else
        attn_pool_run(tasks, 0, softmax_part, &j);
}

void attn_softmax_rows(float *out, const float *in, int rows, int cols)
{
    softmax_run(out, in, rows, cols, false);
}

void attn_softmax_causal_rows(float *out, const float *in, int n)
{
    softmax_run(out, in, n, n, true);
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
    return attn_pool_threads();
}

void attn_blas_set_threads(int n)
{
    attn_pool_set_threads(n);
}

#define HUGE_PAGE ((size_t)2 << 20)

float *attn_alloc_stage(size_t count)
{
    float *p = attn_alloc_stage_unzeroed(count);
    if (p)
        memset(p, 0, (count ? count : 1) * sizeof(float));
    return p;
}

float *attn_alloc_stage_unzeroed(size_t count)
{
    size_t bytes = (count ? count : 1) * sizeof(float);
    if (bytes < HUGE_PAGE)
        return malloc(bytes);
    /* Aligned to a huge page, but only its whole huge pages asked for as such: a huge page
     * faults in 2 MiB at once, so a tail asked for with them would cost a whole one (a stage of
     * 2.75 MiB, TinyLlama's FFN at 128 tokens, cost 4 MiB, 3.75 MiB more a layer). */
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* advice: else small pages */
#endif
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

const char *attn_blas_kernel(void)
{
    return openblas_get_corename();
}

void attn_blas_describe(char *out, size_t size)
{
    /* openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": its first two words */
    const char *config = openblas_get_config();
    int version = 0, spaces = 0;
    while (config[version] && !(config[version] == ' ' && ++spaces == 2))
        version++;
    snprintf(out, size, "%.*s, %s kernels, %d thread%s", version, config, attn_blas_kernel(),
             attn_blas_threads(), attn_blas_threads() == 1 ? "" : "s");
}
