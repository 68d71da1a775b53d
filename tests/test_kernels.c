/* test_kernels: every OpenBLAS call against its naive twin, and the row normalisations.
 * Reports the largest difference seen for each product. */
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/kernels.h"

/* A tiny deterministic generator, so the test needs nothing but itself. */
static float next_value(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static float *random_matrix(int rows, int cols, uint32_t *state)
{
    float *m = malloc((size_t)rows * cols * sizeof(float));
    assert_non_null(m);
    for (int i = 0; i < rows * cols; i++)
        m[i] = next_value(state);
    return m;
}

/* How far two float32 evaluations of a k-term dot product (plus a bias) can be apart, in any
 * order of additions: each is within gamma = (k + 1) u / (1 - (k + 1) u) of the exact value,
 * relative to the sum of the terms' magnitudes (Higham, Accuracy and Stability of Numerical
 * Algorithms, 3.1). A bound for every BLAS kernel, not the largest difference one showed. */
#define U32 5.9604644775390625e-8 /* 2^-24 */
static double twin_bound(int k, double magnitude)
{
    double ku = (k + 1) * U32;
    return 2 * ku / (1 - ku) * magnitude;
}

/* The largest share of twin_bound that c (rows, cols) and ref differ by, where c = a b (bt:
 * a b^T) + bias: a (rows, k), b (k, cols) or (cols, k). */
static double share_of_bound(const float *c, const float *ref, const float *a, const float *b,
                             const float *bias, int rows, int cols, int k, bool bt, int lda,
                             int ldb, int ldc)
{
    double worst = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double mag = bias ? fabs(bias[j]) : 0;
            for (int p = 0; p < k; p++)
                mag += fabs((double)a[(size_t)i * lda + p] *
                            (bt ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]));
            double d = fabs((double)c[(size_t)i * ldc + j] - ref[(size_t)i * ldc + j]);
            double share = d == 0 ? 0 : d / twin_bound(k, mag);
            worst = share > worst ? share : worst;
        }
    return worst;
}

static double max_diff(const float *a, const float *b, int rows, int cols, int ld)
{
    double worst = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double d = fabs((double)a[i * ld + j] - (double)b[i * ld + j]);
            if (d > worst)
                worst = d;
        }
    return worst;
}

/* Shapes from the book (6x3 @ 3x2) up to a real layer (128 tokens, 768 wide). */
static const int shapes[][3] = {{6, 2, 3},   {6, 6, 2},    {8, 4, 4},     {1, 1, 1},
                                {17, 13, 5}, {64, 64, 64}, {128, 64, 768}};

static void test_mm_ab_matches_naive(void **state)
{
    (void)state;
    uint32_t seed = 1;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = random_matrix(m, k, &seed), *b = random_matrix(k, n, &seed);
        float *bias = random_matrix(1, n, &seed);
        float *c = calloc((size_t)m * n, sizeof(float)),
              *ref = calloc((size_t)m * n, sizeof(float));
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            attn_mm_ab(c, n, a, k, b, n, with_bias ? bias : NULL, m, n, k);
            attn_mm_ab_ref(ref, n, a, k, b, n, with_bias ? bias : NULL, m, n, k);
            double d = max_diff(c, ref, m, n, n);
            double share =
                share_of_bound(c, ref, a, b, with_bias ? bias : NULL, m, n, k, false, k, n, n);
            printf("mm_ab  %4dx%-4d @ %4dx%-4d bias=%d  max |blas - naive| = %.3g (%.1f%% of "
                   "the bound)\n",
                   m, k, k, n, with_bias, d, 100 * share);
            assert_true(share <= 1);
        }
        free(a), free(b), free(bias), free(c), free(ref);
    }
}

static void test_mm_abt_matches_naive_on_column_slices(void **state)
{
    (void)state;
    uint32_t seed = 7;
    /* Heads are column slices of a wider matrix: lda/ldb larger than k. */
    int n = 9, D = 12, hd = 4;
    float *q = random_matrix(n, D, &seed), *k = random_matrix(n, D, &seed);
    float c[81], ref[81];
    for (int h = 0; h < D / hd; h++) {
        attn_mm_abt(c, n, q + h * hd, D, k + h * hd, D, n, n, hd);
        attn_mm_abt_ref(ref, n, q + h * hd, D, k + h * hd, D, n, n, hd);
        double d = max_diff(c, ref, n, n, n);
        double share =
            share_of_bound(c, ref, q + h * hd, k + h * hd, NULL, n, n, hd, true, D, D, n);
        printf("mm_abt head %d (%dx%d, ld %d)  max |blas - naive| = %.3g (%.1f%% of the bound)\n",
               h, n, hd, D, d, 100 * share);
        assert_true(share <= 1);
    }
    free(q), free(k);
}

static void test_softmax_rows(void **state)
{
    (void)state;
    /* The book's attn_scores_2 row and its printed softmax. */
    const float row[6] = {0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f};
    const float expect[6] = {0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f};
    float out[6];
    attn_softmax_rows(out, row, 1, 6);
    float sum = 0;
    for (int j = 0; j < 6; j++) {
        assert_float_equal(out[j], expect[j], 6e-5);
        sum += out[j];
    }
    assert_float_equal(sum, 1.0f, 1e-6);

    /* Masked cells become exact zeros; a fully masked row becomes zeros, not NaN. */
    const float masked[2][3] = {{0.5f, -INFINITY, -INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
    float m_out[6];
    attn_softmax_rows(m_out, &masked[0][0], 2, 3);
    assert_true(m_out[0] == 1.0f && m_out[1] == 0.0f && m_out[2] == 0.0f);
    for (int j = 3; j < 6; j++)
        assert_true(m_out[j] == 0.0f);

    /* A NaN is not a mask: a row of NaN, or of NaN and -inf, is NaN in every cell, as torch's
       softmax gives (its max is NaN), never the zeros of a fully masked row; so is a row with
       one NaN among numbers, and one with +inf (inf - inf). The causal prefix agrees, its
       future included. */
    const float bad[4][3] = {
        {NAN, NAN, NAN}, {-INFINITY, NAN, -INFINITY}, {0.5f, NAN, 0.25f}, {0.5f, INFINITY, 0.25f}};
    float b_out[12];
    attn_softmax_rows(b_out, &bad[0][0], 4, 3);
    for (int j = 0; j < 12; j++)
        assert_true(isnan(b_out[j]));
    float prefix[3];
    attn_softmax_row_prefix(prefix, bad[1], 2, 3); /* [-inf, nan] visible, the future after */
    for (int j = 0; j < 3; j++)
        assert_true(isnan(prefix[j]));
    attn_softmax_row_prefix(prefix, bad[1], 1, 3); /* [-inf] only: masked, zeros */
    for (int j = 0; j < 3; j++)
        assert_true(prefix[j] == 0.0f);

    /* Large scores do not overflow: the row maximum is subtracted first. */
    const float big[3] = {1000.0f, 1000.0f, 999.0f};
    attn_softmax_rows(m_out, big, 1, 3);
    assert_false(isnan(m_out[0]));
    assert_float_equal(m_out[0], m_out[1], 1e-7);
}

/* The causal softmax skips the future but must be the full row's softmax bit for bit, also
 * for rows with an infinite score (NaN rows), a fully masked row and n = 1. */
static void test_softmax_causal_rows(void **state)
{
    (void)state;
    uint32_t seed = 11;
    static const int sizes[] = {1, 2, 7, 64, 130};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int n = sizes[k];
        float *in = random_matrix(n, n, &seed);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (j > i)
                    in[i * n + j] = -INFINITY;
                else if (i == 3 && j == 1)
                    in[i * n + j] = INFINITY; /* overflowed score: the row is NaN */
                else if (i == 4 || (i == 5 && j < 3))
                    in[i * n + j] = -INFINITY; /* row 4 fully masked, row 5 partly */
                else
                    in[i * n + j] *= 30.0f;
        float *full = malloc((size_t)n * n * sizeof(float));
        float *causal = malloc((size_t)n * n * sizeof(float));
        assert_non_null(full);
        assert_non_null(causal);
        attn_softmax_rows(full, in, n, n);
        attn_softmax_causal_rows(causal, in, n);
        for (int i = 0; i < n * n; i++)
            if (!(isnan(full[i]) && isnan(causal[i])) &&
                memcmp(&full[i], &causal[i], sizeof(float)) != 0)
                fail_msg("n %d [%d][%d]: causal %.9g, full row %.9g", n, i / n, i % n,
                         (double)causal[i], (double)full[i]);
        attn_softmax_causal_rows(in, in, n); /* in place */
        for (int i = 0; i < n * n; i++)
            assert_true((isnan(full[i]) && isnan(in[i])) || memcmp(&full[i], &in[i], 4) == 0);
        free(in), free(full), free(causal);
    }
}

static void test_sumnorm_rows(void **state)
{
    (void)state;
    /* The book's naive normalisation: attn_scores_2 / attn_scores_2.sum(). */
    const float row[6] = {0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f};
    const float expect[6] = {0.1455f, 0.2278f, 0.2249f, 0.1285f, 0.1077f, 0.1656f};
    float out[6];
    attn_sumnorm_rows(out, row, 1, 6);
    for (int j = 0; j < 6; j++)
        assert_float_equal(out[j], expect[j], 6e-5);
    const float masked[3] = {1.0f, 3.0f, -INFINITY};
    attn_sumnorm_rows(out, masked, 1, 3);
    assert_float_equal(out[0], 0.25f, 1e-7);
    assert_float_equal(out[1], 0.75f, 1e-7);
    assert_true(out[2] == 0.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mm_ab_matches_naive),
        cmocka_unit_test(test_mm_abt_matches_naive_on_column_slices),
        cmocka_unit_test(test_softmax_rows),
        cmocka_unit_test(test_softmax_causal_rows),
        cmocka_unit_test(test_sumnorm_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
