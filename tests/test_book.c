/* test_book: the numbers the book and its study notes print, digit for digit.
 *
 * Each test loads a scene of scenes/ with the C loader, runs the engine and formats the stage
 * values with "%.4f", the precision torch prints with; the strings must equal the printed ones
 * (shared/seeds 000 and 003: Raschka ch. 3 study notes; 002: the self-attention notebook; 004:
 * the SimpleLLaMA causal-mask table, which is compared with a tolerance because its printed
 * weights came from unrounded scores). Also: the stages computed on demand (scaled, masked,
 * dropout) are their definitions, however they are asked for.
 *
 * Environment: ATTNSCOPE_SCENES_DIR (the repository's scenes/ folder).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "engine/model.h"
#include "engine/scene.h"
#include "engine/stage.h"
#include "scenefile/scenefile.h"

struct fx {
    struct attn_scene s;
    struct attn_model m;
    struct attn_run r;
    const char *name;
    int failures;
};

static void fx_load(struct fx *f, const char *name)
{
    memset(f, 0, sizeof(*f));
    f->name = name;
    const char *dir = getenv("ATTNSCOPE_SCENES_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%.3000s/%.255s", (dir && *dir) ? dir : "scenes", name);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    char *source = NULL;
    size_t source_len = 0;
    if (attn_scenefile_load(&f->s, path, &errs, &source, &source_len) != 0) {
        for (int i = 0; i < errs.n; i++)
            attn_diag_print(stderr, &errs.items[i], source, source_len);
        free(source);
        attn_diag_list_free(&errs);
        fail_msg("%s: the loader refused the scene", path);
    }
    free(source);
    attn_diag_list_free(&errs);
    struct diag err;
    attn_diag_clear(&err);
    if (attn_model_resolve(&f->m, &f->s, &err) != 0)
        fail_msg("%s: model_resolve: %s", path, err.msg);
    if (attn_run_init(&f->r, &f->m, &err) != 0)
        fail_msg("%s: attn_run_init: %s", path, err.msg);
    attn_forward(&f->r, &f->m);
}

static void fx_done(struct fx *f)
{
    int failures = f->failures;
    attn_run_free(&f->r);
    attn_model_free(&f->m);
    attn_scene_free(&f->s);
    if (failures)
        fail_msg("%s: %d printed numbers differ", f->name, failures);
}

/* Splits a printed tensor ("[[0.9995, 0.9544], [-inf, ...]]") into its numbers. */
static int printed_numbers(const char *text, char out[][32], int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        while (*p && strchr("[](), \n\t", *p))
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, "[](), \n\t");
        assert_true(n < max && len < 32);
        memcpy(out[n], p, len);
        out[n][len] = '\0';
        n++;
        p += len;
    }
    return n;
}

static const char *what_name(enum attn_stage st)
{
    return attn_stage_name(st);
}

/* Compares the block of v starting at (r0, c0), `cols` wide, with the printed numbers in
 * reading order; "*" in the printed text skips a cell. tol == 0: "%.4f" strings must be equal;
 * tol > 0: |value - printed| <= tol. */
static void expect_block(struct fx *f, const char *what, struct attn_mat_view v, int r0, int c0,
                         int cols, const char *printed, double tol)
{
    static char nums[1024][32];
    int count = printed_numbers(printed, nums, 1024);
    assert_true(cols > 0 && count % cols == 0);
    int rows = count / cols;
    if (r0 + rows > v.rows || c0 + cols > v.cols) {
        print_error("%s %s: block %dx%d at (%d,%d) is outside the %dx%d matrix\n", f->name, what,
                    rows, cols, r0, c0, v.rows, v.cols);
        f->failures++;
        return;
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            const char *want = nums[i * cols + j];
            if (strcmp(want, "*") == 0)
                continue;
            float x = v.data[(size_t)(r0 + i) * v.stride + (c0 + j)];
            char got[64];
            if (isinf(x))
                snprintf(got, sizeof(got), "%s", x < 0 ? "-inf" : "inf");
            else
                snprintf(got, sizeof(got), "%.4f", (double)x);
            bool ok;
            if (tol > 0 && strcmp(want, "-inf") != 0)
                ok = !isinf(x) && fabs((double)x - strtod(want, NULL)) <= tol;
            else
                ok = strcmp(got, want) == 0;
            if (!ok) {
                print_error("%s %s[%d][%d]: engine %s (%.9g), printed %s\n", f->name, what, r0 + i,
                            c0 + j, got, (double)x, want);
                f->failures++;
            }
        }
}

static void expect_stage(struct fx *f, enum attn_stage st, int head, int r0, int c0, int cols,
                         const char *printed)
{
    char what[64];
    snprintf(what, sizeof(what), "head%d/%s", head, what_name(st));
    expect_block(f, what, attn_view(&f->r, &f->m, st, head), r0, c0, cols, printed, 0);
}

static void expect_shape(struct fx *f, enum attn_stage st, int head, int rows, int cols)
{
    struct attn_mat_view v = attn_view(&f->r, &f->m, st, head);
    if (v.rows != rows || v.cols != cols) {
        print_error("%s %s: shape %dx%d, printed torch.Size([%d, %d])\n", f->name, what_name(st),
                    v.rows, v.cols, rows, cols);
        f->failures++;
    }
}

/* The printed cells above the diagonal are -inf in `masked`; the others equal `scores` (the
 * notes print the masked tensor before scaling). */
static void expect_causal_masked(struct fx *f, int head, const char *printed_before_scaling)
{
    expect_stage(f, STAGE_SCORES, head, 0, 0, f->m.n, printed_before_scaling);
    struct attn_mat_view v = attn_view(&f->r, &f->m, STAGE_MASKED, head);
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < v.cols; j++) {
            float x = v.data[(size_t)i * v.stride + j];
            bool want_inf = j > i;
            if (want_inf != (isinf(x) && x < 0)) {
                print_error("%s masked[%d][%d] = %g, expected %s\n", f->name, i, j, (double)x,
                            want_inf ? "-inf" : "a finite score");
                f->failures++;
            }
        }
}

/* ---- seed 000 / 003: simplified attention ------------------------------------------------- */

static const char *const SIMPLE_SCORES = "[[0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],"
                                         " [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],"
                                         " [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],"
                                         " [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],"
                                         " [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],"
                                         " [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450]]";

static void test_simplified(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "01-simplified.yaml");
    /* attn_scores_2 = dot products of the query "journey" with every input */
    expect_stage(&f, STAGE_SCORES, 0, 1, 0, 6, "[0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]");
    expect_stage(&f, STAGE_SCORES, 0, 1, 0, 1, "0.9544"); /* res of the element-wise loop */
    expect_stage(&f, STAGE_SCORES, 0, 0, 0, 6, SIMPLE_SCORES);
    expect_stage(&f, STAGE_SCALED, 0, 0, 0, 6, SIMPLE_SCORES); /* no scaling yet */
    /* attn_weights_2 (softmax and softmax_naive), then all weights */
    expect_stage(&f, STAGE_WEIGHTS, 0, 1, 0, 6, "[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]");
    expect_stage(&f, STAGE_WEIGHTS, 0, 0, 0, 6,
                 "[[0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],"
                 " [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],"
                 " [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],"
                 " [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],"
                 " [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],"
                 " [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896]]");
    /* row sums: tensor([1.0000, 1.0000, ...]) */
    struct attn_mat_view w = attn_view(&f.r, &f.m, STAGE_WEIGHTS, 0);
    for (int i = 0; i < w.rows; i++) {
        float sum = 0;
        for (int j = 0; j < w.cols; j++)
            sum += w.data[(size_t)i * w.stride + j];
        char got[32];
        snprintf(got, sizeof(got), "%.4f", (double)sum);
        if (strcmp(got, "1.0000") != 0) {
            print_error("row %d of the weights sums to %s\n", i, got);
            f.failures++;
        }
    }
    /* context_vec_2, then all_context_vecs */
    expect_stage(&f, STAGE_CONTEXT, 0, 1, 0, 3, "[0.4419, 0.6515, 0.5683]");
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 3,
                 "[[0.4421, 0.5931, 0.5790],"
                 " [0.4419, 0.6515, 0.5683],"
                 " [0.4431, 0.6496, 0.5671],"
                 " [0.4304, 0.6298, 0.5510],"
                 " [0.4671, 0.5910, 0.5266],"
                 " [0.4177, 0.6503, 0.5645]]");
    fx_done(&f);
}

static void test_simplified_sum(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "02-simplified-sum.yaml");
    /* attn_weights_2_tmp = attn_scores_2 / attn_scores_2.sum() */
    expect_stage(&f, STAGE_WEIGHTS, 0, 1, 0, 6, "[0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]");
    struct attn_mat_view w = attn_view(&f.r, &f.m, STAGE_WEIGHTS, 0);
    float sum = 0;
    for (int j = 0; j < w.cols; j++)
        sum += w.data[(size_t)1 * w.stride + j];
    char got[32];
    snprintf(got, sizeof(got), "%.4f", (double)sum);
    if (strcmp(got, "1.0000") != 0) { /* Sum: tensor(1.0000) */
        print_error("the naive weights of row 2 sum to %s\n", got);
        f.failures++;
    }
    fx_done(&f);
}

/* ---- seed 000 / 003: SelfAttention_v1 and v2 ---------------------------------------------- */

static void test_self_attention_v1(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "03-self-attention-v1.yaml");
    expect_stage(&f, STAGE_QUERIES, 0, 1, 0, 2, "[0.4306, 1.4551]"); /* query_2 */
    expect_shape(&f, STAGE_KEYS, 0, 6, 2);                           /* keys.shape */
    expect_shape(&f, STAGE_VALUES, 0, 6, 2);                         /* values.shape */
    expect_stage(&f, STAGE_SCORES, 0, 1, 1, 1, "1.8524");            /* attn_score_22 */
    expect_stage(&f, STAGE_SCORES, 0, 1, 0, 6, "[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]");
    expect_stage(&f, STAGE_WEIGHTS, 0, 1, 0, 6, "[0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]");
    expect_stage(&f, STAGE_CONTEXT, 0, 1, 0, 2, "[0.3061, 0.8210]"); /* context_vec_2 */
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 2,                       /* sa_v1(inputs) */
                 "[[0.2996, 0.8053],"
                 " [0.3061, 0.8210],"
                 " [0.3058, 0.8203],"
                 " [0.2948, 0.7939],"
                 " [0.2927, 0.7891],"
                 " [0.2990, 0.8040]]");
    fx_done(&f);
}

static const char *const V2_WEIGHTS = "[[0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],"
                                      " [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],"
                                      " [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],"
                                      " [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],"
                                      " [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],"
                                      " [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]";

static const char *const CAUSAL_WEIGHTS = "[[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],"
                                          " [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],"
                                          " [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],"
                                          " [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],"
                                          " [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],"
                                          " [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]";

static void test_self_attention_v2(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "04-self-attention-v2.yaml");
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 2, /* sa_v2(inputs) */
                 "[[-0.0739, 0.0713],"
                 " [-0.0748, 0.0703],"
                 " [-0.0749, 0.0702],"
                 " [-0.0760, 0.0685],"
                 " [-0.0763, 0.0679],"
                 " [-0.0754, 0.0693]]");
    /* the causal section starts from sa_v2's unmasked weights */
    expect_stage(&f, STAGE_WEIGHTS, 0, 0, 0, 6, V2_WEIGHTS);
    fx_done(&f);
}

/* ---- seed 000: causal attention, dropout ---------------------------------------------------- */

static void test_causal(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "05-causal.yaml");
    /* masked = attn_scores.masked_fill(mask.bool(), -torch.inf), printed before scaling */
    expect_causal_masked(&f, 0,
                         "[[0.2899, *, *, *, *, *],"
                         " [0.4656, 0.1723, *, *, *, *],"
                         " [0.4594, 0.1703, 0.1731, *, *, *],"
                         " [0.2642, 0.1024, 0.1036, 0.0186, *, *],"
                         " [0.2183, 0.0874, 0.0882, 0.0177, 0.0786, *],"
                         " [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]]");
    expect_stage(&f, STAGE_WEIGHTS, 0, 0, 0, 6, CAUSAL_WEIGHTS);
    fx_done(&f);
}

static void test_causal_after_softmax(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "06-causal-after-softmax.yaml");
    /* masked_simple = attn_weights * tril(ones) */
    expect_stage(&f, STAGE_MASKED, 0, 0, 0, 6,
                 "[[0.1921, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],"
                 " [0.2041, 0.1659, 0.0000, 0.0000, 0.0000, 0.0000],"
                 " [0.2036, 0.1659, 0.1662, 0.0000, 0.0000, 0.0000],"
                 " [0.1869, 0.1667, 0.1668, 0.1571, 0.0000, 0.0000],"
                 " [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.0000],"
                 " [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]");
    /* masked_simple_norm = masked_simple / row_sums */
    expect_stage(&f, STAGE_WEIGHTS, 0, 0, 0, 6, CAUSAL_WEIGHTS);
    fx_done(&f);
}

static void test_dropout(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "07-dropout.yaml");
    expect_stage(&f, STAGE_WEIGHTS, 0, 0, 0, 6, V2_WEIGHTS);
    /* torch.manual_seed(123); dropout(attn_weights) */
    expect_stage(&f, STAGE_DROPOUT, 0, 0, 0, 6,
                 "[[0.3843, 0.3293, 0.0000, 0.3100, 0.3442, 0.0000],"
                 " [0.0000, 0.0000, 0.0000, 0.2992, 0.0000, 0.2955],"
                 " [0.4071, 0.3318, 0.3325, 0.2996, 0.0000, 0.2961],"
                 " [0.0000, 0.3334, 0.3337, 0.0000, 0.0000, 0.3128],"
                 " [0.0000, 0.3337, 0.0000, 0.3177, 0.0000, 0.3169],"
                 " [0.0000, 0.3327, 0.3331, 0.3084, 0.3331, 0.0000]]");
    /* torch.manual_seed(123); dropout(torch.ones(6, 6)): the same keep pattern, times 2 */
    static const char ones[6][7] = {"220220", "000202", "222202", "022002", "020202", "022220"};
    struct attn_mat_view d = attn_view(&f.r, &f.m, STAGE_DROPOUT, 0);
    if (!f.m.keep) {
        print_error("07-dropout: the model has no keep mask\n");
        f.failures++;
    }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            float ones_out = f.m.keep ? (float)f.m.keep[i * 6 + j] * 2.0f : -1.0f;
            char got[16];
            snprintf(got, sizeof(got), "%.0f", (double)ones_out);
            bool kept = d.data[(size_t)i * d.stride + j] != 0.0f;
            if (got[0] != ones[i][j] || kept != (ones[i][j] == '2')) {
                print_error("07-dropout keep[%d][%d]: dropout(ones) would be %s, printed %c.\n", i,
                            j, got, ones[i][j]);
                f.failures++;
            }
        }
    fx_done(&f);
}

/* ---- seed 000: the classes ------------------------------------------------------------------ */

static const char *const CA_CONTEXT = "[[-0.4519, 0.2216],"
                                      " [-0.5874, 0.0058],"
                                      " [-0.6300, -0.0632],"
                                      " [-0.5675, -0.0843],"
                                      " [-0.5526, -0.0981],"
                                      " [-0.5299, -0.1081]]";

static void test_causal_attention_class(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "08-causal-attention.yaml");
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 2, CA_CONTEXT);
    fx_done(&f);
}

static void test_mha_wrapper(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "09-mha-wrapper.yaml");
    const char *printed = "[[-0.4519, 0.2216, 0.4772, 0.1063],"
                          " [-0.5874, 0.0058, 0.5891, 0.3257],"
                          " [-0.6300, -0.0632, 0.6202, 0.3860],"
                          " [-0.5675, -0.0843, 0.5478, 0.3589],"
                          " [-0.5526, -0.0981, 0.5321, 0.3428],"
                          " [-0.5299, -0.1081, 0.5077, 0.3493]]";
    expect_stage(&f, STAGE_CONCAT, 0, 0, 0, 4, printed);
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 4, printed);
    expect_stage(&f, STAGE_CONTEXT, 0, 0, 0, 2, CA_CONTEXT); /* head 0 is the CausalAttention */
    fx_done(&f);
}

static void test_mha(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "10-mha.yaml");
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 2,
                 "[[0.3190, 0.4858],"
                 " [0.2943, 0.3897],"
                 " [0.2856, 0.3593],"
                 " [0.2693, 0.3873],"
                 " [0.2639, 0.3928],"
                 " [0.2575, 0.4028]]");
    fx_done(&f);
}

/* ---- seed 003: the d_k*0.5 slip ---------------------------------------------------------------
 */

static void test_dk_half_slip(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "11-dk-half-slip.yaml");
    /* torch.softmax(attn_scores_2 / d_k*0.5, dim=-1) */
    expect_stage(&f, STAGE_WEIGHTS, 0, 1, 0, 6, "[0.1623, 0.1877, 0.1858, 0.1547, 0.1358, 0.1738]");
    expect_stage(&f, STAGE_SCORES, 0, 1, 0, 6, "[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]");
    fx_done(&f);
}

/* ---- seed 002: "my shoes are small, my feet are big." ------------------------------------ */

static void test_shoes_single_head(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "12-shoes-single-head.yaml");
    if (f.m.n != 8 || f.m.d_in != 4)
        fail_msg("12-shoes: %d tokens of width %d, expected 8 of 4", f.m.n, f.m.d_in);
    /* embedded_tokens = embed(token_ids_tensor), before the positions */
    expect_block(&f, "embed", (struct attn_mat_view){f.m.embed, 8, 4, 4}, 0, 0, 4,
                 "[[ 0.3374, -0.1778, -0.3035, -0.5880],"
                 "  [ 0.3486,  0.6603, -0.2196, -0.3792],"
                 "  [-0.1606, -0.4015,  0.6957, -1.8061],"
                 "  [ 1.8960, -0.1750,  1.3689, -1.6033],"
                 "  [ 0.3374, -0.1778, -0.3035, -0.5880],"
                 "  [-0.7849, -1.4096, -0.4076,  0.7953],"
                 "  [-0.1606, -0.4015,  0.6957, -1.8061],"
                 "  [ 0.9985,  0.2212,  1.8319, -0.3378]]",
                 0);
    /* x_with_pe */
    expect_stage(&f, STAGE_INPUTS, 0, 0, 0, 4,
                 "[[ 0.6747, -0.3556, -0.6071, -1.1760],"
                 "  [ 0.6972,  1.3207, -0.4393, -0.7583],"
                 "  [ 0.6065, -1.5940,  1.3941, -3.2158],"
                 "  [ 2.0753,  1.7201,  1.8644, -1.3341],"
                 "  [ 0.2603, -1.1982, -0.4725,  0.3298],"
                 "  [ 0.7961, -0.1085,  0.8677,  0.5944],"
                 "  [ 0.8019, -0.1523,  0.2112, -3.8990],"
                 "  [ 0.1786, -0.1998,  0.8699,  0.9446]]");
    /* Q = W_Q(embedded_tokens) */
    expect_stage(&f, STAGE_QUERIES, 0, 0, 0, 4,
                 "[[-0.2145,  0.2703, -0.4016,  0.0485],"
                 "  [-0.1542,  0.6481,  0.0180, -0.5414],"
                 "  [-1.1026, -0.0709, -1.4118,  0.2862],"
                 "  [-1.1092, -0.4009, -0.8602, -1.6137],"
                 "  [ 0.1066, -0.5095, -0.2046,  0.3074],"
                 "  [-0.2675, -0.9306, -0.3252, -0.5226],"
                 "  [-0.9536,  1.0757, -1.0564,  0.0503],"
                 "  [-0.0776, -0.8410, -0.0856, -0.2677]]");
    /* shoes_query, its scaled scores, weights and context */
    expect_stage(&f, STAGE_QUERIES, 0, 1, 0, 4, "[[-0.1542,  0.6481,  0.0180, -0.5414]]");
    expect_stage(&f, STAGE_SCALED, 0, 1, 0, 8,
                 "[[-0.0820,  0.1623, -0.5437,  0.0661, -0.0908,  0.0062, -0.3285,  0.0021]]");
    expect_stage(&f, STAGE_WEIGHTS, 0, 1, 0, 8,
                 "[[0.1247, 0.1592, 0.0786, 0.1446, 0.1236, 0.1362, 0.0975, 0.1356]]");
    expect_stage(&f, STAGE_CONTEXT, 0, 1, 0, 4, "[[ 0.4238, -0.5244, -0.5151, -0.1296]]");
    fx_done(&f);
}

/* 002's "MHA Output": the encoder block's attention prints it too. */
static const char *const SHOES_MHA_OUT = "[[-0.1172,  0.0805, -0.3105,  0.2153],"
                                         "  [-0.1017,  0.0579, -0.3384,  0.1675],"
                                         "  [-0.1759,  0.1428, -0.3050,  0.3935],"
                                         "  [-0.1817,  0.1242, -0.3209,  0.4163],"
                                         "  [-0.0974,  0.0706, -0.2787,  0.1747],"
                                         "  [-0.1218,  0.0870, -0.2922,  0.2572],"
                                         "  [-0.1558,  0.1144, -0.3671,  0.3140],"
                                         "  [-0.0999,  0.0696, -0.2889,  0.1924]]";

static void test_shoes_mha(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "13-shoes-mha.yaml");
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 4, SHOES_MHA_OUT);
    /* "Attention Weights per head": head 0, as far as the notebook's output goes */
    expect_stage(&f, STAGE_WEIGHTS, 0, 0, 0, 8,
                 "[[0.1174, 0.1157, 0.1151, 0.1445, 0.1276, 0.1423, 0.1021, 0.1353],"
                 " [0.1049, 0.1176, 0.0787, 0.1652, 0.1316, 0.1727, 0.0659, 0.1635],"
                 " [0.1124, 0.0697, 0.2446, 0.1225, 0.1006, 0.0949, 0.1778, 0.0776],"
                 " [0.1093, 0.0617, 0.2912, 0.0955, 0.0866, 0.0709, 0.2260, 0.0587],"
                 " [0.1327, 0.1206, 0.1679, 0.0930, 0.1109, 0.0895, 0.1923, 0.0932],"
                 " [0.1206, 0.0836, 0.2523, 0.0667, 0.0839, 0.0561, 0.2813, 0.0554]]");
    expect_stage(&f, STAGE_WEIGHTS, 0, 6, 0, 5, "[0.0907, 0.0821, 0.0897, 0.2099, 0.1253]");
    fx_done(&f);
}

/* 002's "Add & Norm", "Feed Forward Network" and "Add & Norm (again)": the encoder block. */
static void test_shoes_encoder_block(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "15-shoes-encoder-block.yaml");
    expect_stage(&f, STAGE_OUTPUT, 0, 0, 0, 4, SHOES_MHA_OUT);
    /* normed_1 */
    expect_stage(&f, STAGE_NORM1, 0, 0, 0, 4,
                 "[[ 1.5543,  0.2013, -0.8427, -0.9129],"
                 "  [ 0.5031,  1.3901, -1.0524, -0.8408],"
                 "  [ 0.7244, -0.4937,  1.1506, -1.3812],"
                 "  [ 0.6876,  0.6453,  0.3876, -1.7206],"
                 "  [ 0.7042, -1.2470, -0.6777,  1.2205],"
                 "  [ 0.4706, -1.6513,  0.1694,  1.0113],"
                 "  [ 0.8681,  0.4527,  0.3810, -1.7018],"
                 "  [-0.6900, -1.1166,  0.3356,  1.4711]]");
    /* ffn_out = ffn(normed_1) */
    expect_stage(&f, STAGE_FFN_OUT, 0, 0, 0, 4,
                 "[[ 0.1996, -0.7154, -0.0501, -0.1783],"
                 "  [ 0.1308, -0.4855,  0.0238, -0.0576],"
                 "  [ 0.2613, -0.3266,  0.0152, -0.0999],"
                 "  [ 0.3176, -0.4831, -0.0302, -0.1423],"
                 "  [-0.0124, -0.4780,  0.0971, -0.3309],"
                 "  [ 0.0464, -0.3165,  0.1180, -0.3305],"
                 "  [ 0.3129, -0.4818, -0.0272, -0.1422],"
                 "  [ 0.0503, -0.1795,  0.1856, -0.3700]]");
    /* encoder_out = layer_norm_2(normed_1 + ffn_out): the block's last stage */
    if (attn_stage_last(&f.m) != STAGE_NORM2)
        fail_msg("15: the post-norm block ends with %s, not norm2",
                 attn_stage_name(attn_stage_last(&f.m)));
    expect_stage(&f, STAGE_NORM2, 0, 0, 0, 4,
                 "[[ 1.7031, -0.2881, -0.6204, -0.7946],"
                 "  [ 0.8375,  1.1476, -1.0672, -0.9180],"
                 "  [ 0.8981, -0.6871,  1.0562, -1.2672],"
                 "  [ 1.0155,  0.2299,  0.4118, -1.6572],"
                 "  [ 0.8274, -1.4635, -0.3788,  1.0149],"
                 "  [ 0.5928, -1.7174,  0.3793,  0.7452],"
                 "  [ 1.1443,  0.0501,  0.3964, -1.5908],"
                 "  [-0.5959, -1.2929,  0.6365,  1.2523]]");
    fx_done(&f);
}

/* 002's In[69]: LayerNorm over two features prints nothing but -1.0000 and 1.0000. */
static void test_layernorm_two_slip(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "16-layernorm-two-slip.yaml");
    static const enum attn_stage norms[2] = {STAGE_NORM1, STAGE_NORM2};
    for (int k = 0; k < 2; k++) {
        struct attn_mat_view v = attn_view(&f.r, &f.m, norms[k], 0);
        assert_int_equal(v.cols, 2);
        for (int i = 0; i < v.rows; i++) {
            char a[32], b[32];
            snprintf(a, sizeof(a), "%.4f", (double)v.data[(size_t)i * v.stride]);
            snprintf(b, sizeof(b), "%.4f", (double)v.data[(size_t)i * v.stride + 1]);
            bool ok = (strcmp(a, "1.0000") == 0 && strcmp(b, "-1.0000") == 0) ||
                      (strcmp(a, "-1.0000") == 0 && strcmp(b, "1.0000") == 0);
            if (!ok) {
                print_error("16 %s row %d prints [%s, %s], not +-1\n", attn_stage_name(norms[k]), i,
                            a, b);
                f.failures++;
            }
        }
    }
    fx_done(&f);
}

/* Two scenes that must agree stage by stage: within tol, or bit for bit when tol is 0. */
static void expect_same_stages(const char *a_name, const char *b_name,
                               const enum attn_stage *stages, int n_stages, double tol)
{
    struct fx a, b;
    fx_load(&a, a_name);
    fx_load(&b, b_name);
    int bad = 0;
    for (int k = 0; k < n_stages; k++)
        for (int h = 0; h < (attn_stage_is_per_head(stages[k]) ? a.m.heads : 1); h++) {
            struct attn_mat_view x = attn_view(&a.r, &a.m, stages[k], h);
            struct attn_mat_view y = attn_view(&b.r, &b.m, stages[k], h);
            assert_int_equal(x.rows, y.rows);
            assert_int_equal(x.cols, y.cols);
            for (int i = 0; i < x.rows; i++)
                for (int j = 0; j < x.cols; j++) {
                    float p = x.data[(size_t)i * x.stride + j];
                    float q = y.data[(size_t)i * y.stride + j];
                    bool same = tol == 0 ? memcmp(&p, &q, sizeof(p)) == 0
                                         : (isinf(p) && isinf(q)) || fabs(p - q) <= tol;
                    if (!same && bad++ < 10)
                        print_error("%s vs %s: head%d/%s[%d][%d]: %.9g vs %.9g\n", a_name, b_name,
                                    h, attn_stage_name(stages[k]), i, j, (double)p, (double)q);
                }
        }
    fx_done(&a);
    fx_done(&b);
    if (bad)
        fail_msg("%s and %s differ in %d cells", a_name, b_name, bad);
}

/* 004: one fused Linear chunked in three is three Linears, bit for bit. The fused scene's
 * W_query, W_key and W_value are views into W_qkv (never copied), read with its row stride. */
static void test_fused_equals_separate(void **state)
{
    (void)state;
    enum attn_stage all[STAGE_COUNT];
    struct fx f;
    fx_load(&f, "21-fused-qkv.yaml");
    int n = attn_stage_order(all, &f.m), W = f.m.D + 2 * f.m.Dkv;
    assert_int_equal(f.m.qkv_ld, W);
    assert_ptr_equal(f.m.wq, f.m.wqkv);
    assert_ptr_equal(f.m.wk, f.m.wqkv + f.m.D);
    assert_ptr_equal(f.m.wv, f.m.wqkv + f.m.D + f.m.Dkv);
    assert_null(f.m.owned[ATTN_BUF_wq]);
    assert_int_equal(attn_model_param_ld(&f.m, ATTN_MEMBER(wk), f.m.Dkv), W);
    fx_done(&f);
    expect_same_stages("21-fused-qkv.yaml", "22-separate-qkv.yaml", all, n, 0);
}

/* RoPE's point: scores depend on relative positions only, so shifting every token by 7
 * positions changes the rotated queries and keys but not what attention computes. */
static void test_rope_shift_invariant(void **state)
{
    (void)state;
    static const enum attn_stage after[] = {STAGE_SCORES, STAGE_WEIGHTS, STAGE_CONTEXT,
                                            STAGE_OUTPUT};
    expect_same_stages("18-rope.yaml", "19-rope-shifted.yaml", after, 4, 1e-5);
}

/* ---- seed 004: "That is a blue dog" -------------------------------------------------------- */

static void test_blue_dog_causal(void **state)
{
    (void)state;
    struct fx f;
    fx_load(&f, "14-blue-dog-causal.yaml");
    /* the score table, exactly as given (2 decimals) */
    struct attn_mat_view s = attn_view(&f.r, &f.m, STAGE_SCORES, 0);
    expect_block(&f, "head0/scores", s, 0, 0, 5,
                 "[[ 1.93,  1.49,  0.90, -2.11,  0.68],"
                 " [-1.23, -0.04, -1.60, -0.75, -0.69],"
                 " [-0.49,  0.24, -1.11,  0.09, -2.32],"
                 " [-0.22, -1.38, -0.40,  0.80, -0.62],"
                 " [-0.59, -0.06, -0.83,  0.33, -1.56]]",
                 1e-6);
    expect_causal_masked(&f, 0,
                         "[[ 1.9300, *, *, *, *],"
                         " [-1.2300, -0.0400, *, *, *],"
                         " [-0.4900,  0.2400, -1.1100, *, *],"
                         " [-0.2200, -1.3800, -0.4000,  0.8000, *],"
                         " [-0.5900, -0.0600, -0.8300,  0.3300, -1.5600]]");
    /* printed from unrounded scores: equal to about 3 decimals */
    expect_block(&f, "head0/weights", attn_view(&f.r, &f.m, STAGE_WEIGHTS, 0), 0, 0, 5,
                 "[1.0000 0.0000 0.0000 0.0000 0.0000 ]"
                 "[0.2330 0.7670 0.0000 0.0000 0.0000 ]"
                 "[0.2759 0.5753 0.1488 0.0000 0.0000 ]"
                 "[0.2032 0.0632 0.1699 0.5637 0.0000 ]"
                 "[0.1566 0.2658 0.1236 0.3942 0.0596 ]",
                 2e-3);
    fx_done(&f);
}

/* ---- the stages computed on demand ------------------------------------------------------ */

/* Re-resolves f's scene after an edit of its options. */
static void fx_recompute(struct fx *f)
{
    struct diag err;
    attn_diag_clear(&err);
    attn_model_free(&f->m);
    if (attn_model_resolve(&f->m, &f->s, &err) != 0 || attn_run_init(&f->r, &f->m, &err) != 0)
        fail_msg("%s: %s", f->name, err.msg);
    attn_forward(&f->r, &f->m);
}

/* Stage st of head h by its definition, from the kept scores and weights. ref: (n, n) */
static void derived_ref(float *ref, const struct fx *f, enum attn_stage st, int h)
{
    const struct attn_model *m = &f->m;
    int n = m->n;
    size_t nn = (size_t)n * (size_t)n;
    const float *sc = f->r.scores + h * nn, *w = f->r.weights + h * nn;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            size_t k = (size_t)i * n + j;
            float scaled = sc[k] / m->scale_divisor;
            if (st == STAGE_SCALED || (st == STAGE_MASKED && !m->causal))
                ref[k] = scaled;
            else if (st == STAGE_MASKED && m->mask_mode == MASK_BEFORE_SOFTMAX)
                ref[k] = j > i ? -INFINITY : scaled;
            else if (st == STAGE_DROPOUT)
                ref[k] =
                    m->keep ? w[k] * (m->keep[h * nn + k] ? 1.0f / (float)(1.0 - m->dropout) : 0.0f)
                            : w[k];
            else
                ref[k] = NAN; /* after_softmax's masked: checked below by its own rule */
        }
    if (st == STAGE_MASKED && m->causal && m->mask_mode == MASK_AFTER_SOFTMAX)
        for (int i = 0; i < n; i++) { /* the normalised row with the future zeroed */
            float *row = ref + (size_t)i * n;
            for (int j = 0; j < n; j++)
                row[j] = sc[(size_t)i * n + j] / m->scale_divisor;
            if (m->normalize == NORMALIZE_SUM)
                attn_sumnorm_rows(row, row, 1, n);
            else
                attn_softmax_rows(row, row, 1, n);
            for (int j = i + 1; j < n; j++)
                row[j] = 0.0f;
        }
}

/* scaled, masked and dropout are not kept: attn_view computes them into the run's memo and
 * attn_view_buf into the caller's buffer. Both must be their definition bit for bit, in any
 * order of stages and heads; a second view reads the memo, and a forward pass forgets it. */
static void test_derived_views(void **state)
{
    (void)state;
    static const struct {
        bool causal;
        enum attn_mask_mode mode;
        enum attn_normalize norm;
        double divisor, dropout; /* divisor 0: sqrt(d_k) = 1 here, so scaled is the scores */
    } edits[] = {
        {true, MASK_BEFORE_SOFTMAX, NORMALIZE_SOFTMAX, 0, 0.0},
        {true, MASK_BEFORE_SOFTMAX, NORMALIZE_SOFTMAX, 4, 0.5},
        {true, MASK_AFTER_SOFTMAX, NORMALIZE_SOFTMAX, 4, 0.0},
        {true, MASK_AFTER_SOFTMAX, NORMALIZE_SUM, 0, 0.25},
        {false, MASK_BEFORE_SOFTMAX, NORMALIZE_SOFTMAX, 4, 0.5},
    };
    static const enum attn_stage derived[] = {STAGE_SCALED, STAGE_MASKED, STAGE_DROPOUT};
    struct fx f;
    fx_load(&f, "10-mha.yaml"); /* two causal heads of head_dim 1 */
    int n = f.m.n;
    float ref[64], buf[64];
    assert_true(n * n <= 64);
    for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
        f.s.attn.causal = edits[e].causal;
        f.s.attn.mask_mode = edits[e].mode;
        f.s.attn.normalize = edits[e].norm;
        f.s.attn.scale = edits[e].divisor > 0 ? SCALE_DIVISOR : SCALE_SQRT_DK;
        f.s.attn.scale_divisor = edits[e].divisor;
        f.s.attn.dropout = edits[e].dropout;
        fx_recompute(&f);
        assert_int_equal(attn_stage_is_derived(&f.m, STAGE_SCALED), edits[e].divisor > 0);
        assert_int_equal(attn_stage_is_derived(&f.m, STAGE_MASKED),
                         edits[e].causal || edits[e].divisor > 0);
        assert_int_equal(attn_stage_is_derived(&f.m, STAGE_DROPOUT), edits[e].dropout > 0);
        assert_false(attn_stage_is_derived(&f.m, STAGE_SCORES));
        assert_false(attn_stage_is_derived(&f.m, STAGE_WEIGHTS));
        /* stage-major, then head-major: the memo changes stage often in the second pass */
        for (int pass = 0; pass < 2; pass++)
            for (int a = 0; a < 3 * f.m.heads; a++) {
                enum attn_stage st = derived[pass ? a % 3 : a / f.m.heads];
                int h = pass ? a / 3 : a % f.m.heads;
                derived_ref(ref, &f, st, h);
                struct attn_mat_view v = attn_view(&f.r, &f.m, st, h);
                struct attn_mat_view b = attn_view_buf(buf, 64, &f.r, &f.m, st, h);
                assert_int_equal(v.rows, n);
                assert_int_equal(v.cols, n);
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < n; j++) {
                        float x = v.data[(size_t)i * v.stride + j];
                        float y = b.data[(size_t)i * b.stride + j];
                        float want = ref[i * n + j];
                        if (memcmp(&x, &want, sizeof(x)) != 0 || memcmp(&y, &want, sizeof(y)))
                            fail_msg("edit %zu: head%d/%s[%d][%d]: view %.9g, buf %.9g, "
                                     "definition %.9g",
                                     e, h, attn_stage_name(st), i, j, (double)x, (double)y,
                                     (double)want);
                    }
            }
    }

    /* The memo: a second view of scaled is read from it, not from the scores (poked here). */
    assert_true(attn_stage_is_derived(&f.m, STAGE_SCALED));
    struct attn_mat_view v1 = attn_view(&f.r, &f.m, STAGE_SCALED, 1);
    float before = v1.data[0];
    f.r.scores[(size_t)n * n] += 1.0f; /* head 1's first score */
    struct attn_mat_view v2 = attn_view(&f.r, &f.m, STAGE_SCALED, 1);
    assert_ptr_equal(v1.data, v2.data);
    assert_true(v2.data[0] == before);
    /* attn_view_buf leaves the memo alone and computes afresh */
    assert_true(attn_view_buf(buf, 64, &f.r, &f.m, STAGE_SCALED, 1).data[0] != before);
    assert_true(attn_view(&f.r, &f.m, STAGE_SCALED, 1).data[0] == before);
    /* a forward pass forgets the memo: scaled follows the recomputed scores again */
    attn_forward(&f.r, &f.m);
    derived_ref(ref, &f, STAGE_SCALED, 1);
    assert_true(attn_view(&f.r, &f.m, STAGE_SCALED, 1).data[0] == ref[0]);
    assert_true(ref[0] == before);
    fx_done(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simplified),
        cmocka_unit_test(test_simplified_sum),
        cmocka_unit_test(test_self_attention_v1),
        cmocka_unit_test(test_self_attention_v2),
        cmocka_unit_test(test_causal),
        cmocka_unit_test(test_causal_after_softmax),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_causal_attention_class),
        cmocka_unit_test(test_mha_wrapper),
        cmocka_unit_test(test_mha),
        cmocka_unit_test(test_dk_half_slip),
        cmocka_unit_test(test_shoes_single_head),
        cmocka_unit_test(test_shoes_mha),
        cmocka_unit_test(test_blue_dog_causal),
        cmocka_unit_test(test_shoes_encoder_block),
        cmocka_unit_test(test_layernorm_two_slip),
        cmocka_unit_test(test_fused_equals_separate),
        cmocka_unit_test(test_rope_shift_invariant),
        cmocka_unit_test(test_derived_views),
    };
    return cmocka_run_group_tests_name("book", tests, NULL, NULL);
}
