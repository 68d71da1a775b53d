/* test_headscore: the head scores on patterns whose scores are known by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/headscore.h"

#define N 6

/* "a b c a b c": a causal previous-token head, an induction head, a sink and a uniform head. */
static const int ids[N] = {0, 1, 2, 0, 1, 2};

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
    assert_float_equal(s.value[SCORE_FIRST], 0.2, 1e-12); /* row 1 looks at 0: 1 of 5 rows */
    assert_float_equal(s.value[SCORE_ENTROPY], 0.0, 1e-12);
    /* rows 3, 4, 5 repeat tokens 0, 1, 2 seen at 0, 1, 2: induction reads columns 1, 2, 3 */
    assert_true(s.defined[SCORE_INDUCTION]);
    assert_float_equal(s.value[SCORE_INDUCTION], 0.0, 1e-12);
}

static void test_induction_head(void **state)
{
    (void)state;
    float a[N][N] = {{1}, {1}, {1}};
    a[3][1] = a[4][2] = a[5][3] = 1; /* the token after the last occurrence */
    struct head_scores s = score(a);
    assert_float_equal(s.value[SCORE_INDUCTION], 1.0, 1e-12);
    assert_float_equal(s.value[SCORE_PREVIOUS], 0.2, 1e-12); /* row 1 -> 0 */
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
    assert_float_equal(s.value[SCORE_FIRST], (1 / 2. + 1 / 3. + 1 / 4. + 1 / 5. + 1 / 6.) / 5,
                       1e-6);
}

static void test_no_repeats(void **state)
{
    (void)state;
    static const int distinct[3] = {0, 1, 2};
    float a[3][3] = {{1, 0, 0}, {0.5f, 0.5f, 0}, {0.25f, 0.25f, 0.5f}};
    struct head_scores s;
    attn_head_scores(&s, (struct attn_mat_view){&a[0][0], 3, 3, 3}, distinct);
    assert_false(s.defined[SCORE_INDUCTION]);
    assert_true(s.defined[SCORE_PREVIOUS]);
    assert_int_equal(attn_head_score_parse("induction"), SCORE_INDUCTION);
    assert_int_equal(attn_head_score_parse("bogus"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_previous_token_head),
        cmocka_unit_test(test_induction_head),
        cmocka_unit_test(test_uniform_head_entropy),
        cmocka_unit_test(test_no_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
