/* test_headscore: the head scores on patterns whose scores are known by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/headscore.h"

#define W 10      /* distinct tokens, then the same again */
#define N (2 * W) /* rows W .. N-1 repeat tokens seen at 0 .. W-1: W rows, the minimum or more */

/* "a b c ... a b c ...": a causal previous-token head, an induction head, a sink and a uniform
 * head. */
static int ids[N];

static int setup(void **state)
{
    (void)state;
    for (int i = 0; i < N; i++)
        ids[i] = i % W;
    return 0;
}

static struct head_scores score(float a[N][N])
{
    struct head_scores s;
    attn_head_scores(&s, (struct attn_mat_view){&a[0][0], N, N, N}, ids);
    return s;
}

static void test_previous_token_head(void **state)
{
    (void)state;
    float a[N][N] = {{1}};
    for (int i = 1; i < N; i++)
        a[i][i - 1] = 1;
    struct head_scores s = score(a);
    assert_float_equal(s.value[SCORE_PREVIOUS], 1.0, 1e-12);
    assert_float_equal(s.value[SCORE_SELF], 0.0, 1e-12);
    /* row 1 looks at 0: 1 of N-1 rows */
    assert_float_equal(s.value[SCORE_FIRST], 1.0 / (N - 1), 1e-12);
    assert_float_equal(s.value[SCORE_ENTROPY], 0.0, 1e-12);
    /* rows W .. N-1 repeat tokens seen at 0 .. W-1: induction reads columns 1 .. W */
    assert_true(s.defined[SCORE_INDUCTION]);
    assert_float_equal(s.value[SCORE_INDUCTION], 0.0, 1e-12);
    assert_int_equal(s.rows[SCORE_PREVIOUS], N - 1);
    assert_int_equal(s.rows[SCORE_INDUCTION], W);
}

static void test_induction_head(void **state)
{
    (void)state;
    float a[N][N] = {{0}};
    for (int i = 0; i < W; i++)
        a[i][0] = 1;
    for (int i = W; i < N; i++)
        a[i][i - W + 1] = 1; /* the token after the last occurrence */
    struct head_scores s = score(a);
    assert_float_equal(s.value[SCORE_INDUCTION], 1.0, 1e-12);
    assert_float_equal(s.value[SCORE_PREVIOUS], 1.0 / (N - 1), 1e-12); /* row 1 -> 0 */
    char why[200];
    attn_head_score_why(why, sizeof(why), &s, SCORE_INDUCTION);
    assert_string_equal(why, "");
}

/* A few repeats measure something else (a head that looks a few tokens back meets them): below
 * ATTN_INDUCTION_MIN_ROWS rows the score is not given, and the rows are still counted. */
static void test_induction_needs_repeats(void **state)
{
    (void)state;
    enum { M = 12 };
    int few[M];
    for (int i = 0; i < M; i++)
        few[i] = i;
    few[5] = 1; /* two rows repeat: 5 (token 1, seen at 1) and 9 (token 3) */
    few[9] = 3;
    float a[M][M] = {{0}};
    for (int i = 0; i < M; i++)
        a[i][i > 3 ? i - 3 : 0] = 1; /* three back: row 5 meets column 2, "induction" */
    struct head_scores s;
    attn_head_scores(&s, (struct attn_mat_view){&a[0][0], M, M, M}, few);
    assert_int_equal(s.rows[SCORE_INDUCTION], 2);
    assert_false(s.defined[SCORE_INDUCTION]);
    assert_float_equal(s.value[SCORE_INDUCTION], 0.0, 0);
    assert_true(s.defined[SCORE_PREVIOUS]);
    assert_int_equal(s.rows[SCORE_PREVIOUS], M - 1);
    char why[200];
    attn_head_score_why(why, sizeof(why), &s, SCORE_INDUCTION);
    assert_string_equal(why, "induction: 2 rows repeat an earlier token, fewer than the 8 the "
                             "score needs");
    attn_head_score_why(why, sizeof(why), &s, SCORE_PREVIOUS);
    assert_string_equal(why, "");
    /* eight such rows: given */
    int eight[16];
    for (int i = 0; i < 16; i++)
        eight[i] = i % 8;
    float b[16][16] = {{0}};
    for (int i = 0; i < 16; i++)
        b[i][0] = 1;
    attn_head_scores(&s, (struct attn_mat_view){&b[0][0], 16, 16, 16}, eight);
    assert_int_equal(s.rows[SCORE_INDUCTION], 8);
    assert_true(s.defined[SCORE_INDUCTION]);
    assert_int_equal(attn_head_score_min_rows(SCORE_INDUCTION), 8);
    assert_int_equal(attn_head_score_min_rows(SCORE_FIRST), 1);
}

static void test_uniform_head_entropy(void **state)
{
    (void)state;
    float a[N][N] = {{0}};
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= i; j++)
            a[i][j] = 1.0f / (float)(i + 1);
    struct head_scores s = score(a);
    double h = 0;
    for (int i = 1; i < N; i++)
        h += log((double)(i + 1));
    assert_float_equal(s.value[SCORE_ENTROPY], h / (N - 1), 1e-6);
    double first = 0;
    for (int i = 1; i < N; i++)
        first += 1.0 / (i + 1);
    assert_float_equal(s.value[SCORE_FIRST], first / (N - 1), 1e-6);
}

/* Cross-attention (2 target rows over 4 source keys): only the entropy, over every row (none is
 * masked to one choice): row 0 on one key (0 nats), row 1 even over 4 (ln 4); the mean ln 2. */
static void test_cross_attention_entropy(void **state)
{
    (void)state;
    float a[2][4] = {{0, 1, 0, 0}, {0.25f, 0.25f, 0.25f, 0.25f}};
    struct head_scores s;
    attn_head_scores(&s, (struct attn_mat_view){&a[0][0], 2, 4, 4}, ids);
    assert_true(s.cross);
    assert_true(s.defined[SCORE_ENTROPY]);
    assert_int_equal(s.rows[SCORE_ENTROPY], 2);
    assert_true(fabs(s.value[SCORE_ENTROPY] - log(2.0)) < 1e-6);
    for (int k = 0; k < SCORE_COUNT; k++)
        if (k != SCORE_ENTROPY) {
            char why[200];
            assert_false(s.defined[k]);
            attn_head_score_why(why, sizeof(why), &s, (enum head_score)k);
            assert_non_null(strstr(why, "cross-attention's keys are the source's"));
        }
}

static void test_no_repeats(void **state)
{
    (void)state;
    static const int distinct[3] = {0, 1, 2};
    float a[3][3] = {{1, 0, 0}, {0.5f, 0.5f, 0}, {0.25f, 0.25f, 0.5f}};
    struct head_scores s;
    attn_head_scores(&s, (struct attn_mat_view){&a[0][0], 3, 3, 3}, distinct);
    assert_false(s.defined[SCORE_INDUCTION]);
    assert_int_equal(s.rows[SCORE_INDUCTION], 0);
    assert_true(s.defined[SCORE_PREVIOUS]);
    char why[200];
    attn_head_score_why(why, sizeof(why), &s, SCORE_INDUCTION);
    assert_string_equal(why, "induction: no token repeats an earlier one (a text that repeats "
                             "itself gives the score)");
    assert_int_equal(attn_head_score_parse("induction"), SCORE_INDUCTION);
    assert_int_equal(attn_head_score_parse("bogus"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_previous_token_head),
        cmocka_unit_test(test_induction_head),
        cmocka_unit_test(test_induction_needs_repeats),
        cmocka_unit_test(test_uniform_head_entropy),
        cmocka_unit_test(test_no_repeats),
        cmocka_unit_test(test_cross_attention_entropy),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
