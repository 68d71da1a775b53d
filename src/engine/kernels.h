/* kernels: the numeric building blocks of the forward pass.
 *
 * Matrix products go through OpenBLAS (cblas_sgemm). Each has a naive twin (*_ref) that
 * test_kernels uses as the reference, reporting the largest difference. Leading dimensions are
 * explicit so a head can be a column slice of a wider matrix without a copy.
 */
#ifndef ATTNSCOPE_KERNELS_H
#define ATTNSCOPE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

/* The products run on the engine's thread pool (pool.h): each is cut into slices by its shape
 * alone, so the same product gives the same bits on any number of threads. */

#ifdef ATTNSCOPE_TEST_HOOKS
/* Tests: every product below by its naive twin (a fixed order of additions, whatever the
 * shape), so a computation cut into other tiles can be compared with the whole bit for bit. */
extern bool attn_kernels_naive;
#endif

/* c (m, n) = a (m, k) @ b (k, n) [+ bias (n) on every row, when bias != NULL] */
void attn_mm_ab(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                const float *bias, int m, int n, int k);
void attn_mm_ab_ref(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                    const float *bias, int m, int n, int k);

/* c (m, n) = a (m, k) @ b (n, k)^T */
void attn_mm_abt(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m, int n,
                 int k);
void attn_mm_abt_ref(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                     int n, int k);

/* Row panels: the same products for the row-wise work of a causal net (its projections,
 * out_proj, the FFN), rows 0 .. m - 1 of c cut into panels of attn_row_panel() rows from row 0
 * on, each panel its own OpenBLAS calls, their columns cut by (n, k) alone. A row's bits then
 * depend on nothing but its panel's rows: a product over more rows, or one that starts at a
 * panel boundary of a larger product (c and a pointing at that row), gives every full panel the
 * same bits. OpenBLAS rounds a suffix of rows of one large call differently from the same rows
 * of the whole, which is why a prefix of a causal net is reused panel by panel (net.h). */
void attn_mm_ab_rows(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                     const float *bias, int m, int n, int k);
/* c (m, n) = a (m, k) @ b (n, k)^T, in row panels the same way. */
void attn_mm_abt_rows(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                      int n, int k);
/* attn_mm_abt (panels: attn_mm_abt_rows), except that a call (a panel) of ATTN_FEW_ROWS rows or
 * fewer is a matrix-vector product a row, which reads b as it is, where a matrix product first
 * packs it for those few rows (at 2 rows of TinyLlama's shape the packing was half of a
 * last-word edit). A row's bits still depend on its panel's height alone: the same calls for the
 * same rows, fresh or edited. For a checkpoint's stored weights (model.c's attn_model_mm). */
#define ATTN_FEW_ROWS 16
void attn_mm_abt_few(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                     int n, int k, bool panels);
void attn_mm_abt_rows_few(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                          int m, int n, int k, bool few);
/* attn_mm_ab_rows, a panel of ATTN_FEW_ROWS rows or fewer a matrix-vector product a row when few:
 * the near path's rows (net.h), whose weights a matrix product packs whole for one row. */
void attn_mm_ab_rows_few(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                         const float *bias, int m, int n, int k, bool few);
/* The rows of a panel: 128, the causal heads' panel too (scores.h's PANEL), so a sentence edit
 * recomputes from the panel holding its first changed token. Each call packs its whole slice of
 * the weights for the panel's rows alone: at 64 rows that packing was 17 % of a layer of 2048
 * tokens, at 128 half that; taller still, an edit would redo more rows (docs/performance.md). */
int attn_row_panel(void);
#ifdef ATTNSCOPE_TEST_HOOKS
/* Tests: another panel height (0: the default), so short scenes have several panels. */
extern int attn_row_panel_rows;
#endif

/* out (rows, cols) = softmax over each row of in; subtracts the row maximum; -inf cells get 0.
 * A row of only -inf (fully masked) becomes all zeros rather than NaN; a row with a NaN (or a
 * +inf) becomes all NaN, as in torch: never zeros that look like a masked row. out may equal in. */
void attn_softmax_rows(float *out, const float *in, int rows, int cols);

/* The same for a causal (n, n) in, whose row i is -inf after column i: only columns 0 .. i are
 * read and exponentiated, and out is what attn_softmax_rows gives, bit for bit. out may equal in.
 * The forward pass's every causal head: half the exponentials. */
void attn_softmax_causal_rows(float *out, const float *in, int n);

/* One row of either: y (cols) = the softmax of x's first len cells, the rest (-inf: the future)
 * 0 * (1 / sum), as in the full row (NaN, every cell, when the first len hold a NaN). y may equal
 * x. The exponentials are vecmath's (within 1 ulp of exact), summed in 8 lanes, so a row's bits do
 * not depend on the zeros after it. */
void attn_softmax_row_prefix(float *y, const float *x, int len, int cols);

/* out (rows, cols) = in / row sum (the book's naive normalisation); -inf cells count as 0. */
void attn_sumnorm_rows(float *out, const float *in, int rows, int cols);

/* Billions of multiply-adds (counted as 2 operations each) a second this machine runs a
 * forward pass at now: half the median rate of five 5 ms windows of 256 x 256 x 256
 * products, measured once a process. Estimates of a scene's compute divide by it. */
double attn_measured_gflops(void);
/* ATTNSCOPE_GFLOPS, when set, is the speed to assume instead (tests, so an estimate is the same
 * on every machine): a number from 0.001 to 1e9. 0, or -1 when text is not one. */
int attn_gflops_env_parse(const char *text, double *gflops);

/* The threads the engine runs on (attn_pool_threads): ATTNSCOPE_THREADS, else
 * OPENBLAS_NUM_THREADS, else one per core, until set. OpenBLAS itself runs on one, inside. */
int attn_blas_threads(void);
void attn_blas_set_threads(int n);

/* out (size) = the BLAS the products run on, for a bug report and a benchmark's record:
 * "OpenBLAS 0.3.21, Haswell kernels, 2 threads". The kernel is what OpenBLAS picked for this
 * CPU (or OPENBLAS_CORETYPE forced); their last bits differ (docs/exactness.md). */
void attn_blas_describe(char *out, size_t size);
/* The kernel's name alone ("Haswell"). */
const char *attn_blas_kernel(void);

/* count floats, zeroed, for a stage buffer (free() it). From 2 MiB up it is 2 MiB-aligned and
 * asks the kernel for huge pages: an n x n stage of 1024 tokens then costs 2 page faults, not
 * 1024 (on a VM each fault is microseconds; 16 heads' first frame spent a third there). NULL
 * when out of memory. */
float *attn_alloc_stage(size_t count);
/* The same, not zeroed: whoever computes into it zeroes it first (attn_run_zero), on its own
 * thread, so a compute in the background does not spend the explorer's thread writing a
 * result's gigabyte of zeros (GPT-2 small at 1,016 tokens: 4 s before its first frame). */
float *attn_alloc_stage_unzeroed(size_t count);

#endif
