/* test_causal: the causal forward pass computes only what a query sees (forward.c's panels of
 * 64 queries: scores against the keys up to the panel's last query, their softmax, their
 * context from those keys) and must equal the full computation (every score, the mask, the
 * softmax of whole rows, weights . V over every key) bit for bit.
 *
 * Both are run with the naive products (attn_kernels_naive: a fixed order of additions whatever
 * the tile's shape), so any difference is the tiling's, not OpenBLAS's choice of kernel for a
 * shape; then with OpenBLAS, where the tiles' products may round differently in the last bit,
 * within 1e-5 relative. Cases: several n (not multiples of 64 too), d, heads, GQA, dropout, two
 * pre-norm GPT-2 blocks; every stage of every head, the scores' future included (computed
 * when shown).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "engine/net.h"
#include "scenefile/scenefile.h"

struct tcase {
    int n, d, heads, kv_heads, layers;
    double dropout;
    const char *block; /* YAML of the block, or "" */
};

static char *scene_text(const struct tcase *c)
{
    size_t cap = (size_t)c->n * 8 + 1024;
    char *t = malloc(cap);
    assert_non_null(t);
    int k = snprintf(t, cap,
                     "version: 1\ntitle: causal tiles\ntokenizer: whitespace\nseed: 5\n"
                     "layers: %d\ntext:",
                     c->layers);
    for (int i = 0; i < c->n; i++)
        k += snprintf(t + k, cap - (size_t)k, " w%d", i);
    k += snprintf(t + k, cap - (size_t)k,
                  "\nembeddings: {dim: %d}\npositional: {kind: learned, max_len: %d}\n"
                  "attention:\n  d_out: %d\n  heads: %d\n  causal: true\n  dropout: %g\n"
                  "  out_proj: true\n",
                  c->d, c->n, c->d, c->heads, c->dropout);
    if (c->kv_heads)
        k += snprintf(t + k, cap - (size_t)k, "  kv_heads: %d\n", c->kv_heads);
    snprintf(t + k, cap - (size_t)k, "%s", c->block);
    return t;
}

static void compute(struct attn_net *net, const struct attn_scene *s)
{
    struct diag err = {0};
    memset(net, 0, sizeof(*net));
    if (attn_net_compute(net, s, &err))
        fail_msg("compute: %s", err.msg);
}

/* Every stage of every head of every layer of a against b: returns the largest relative
 * difference; exact demands equal bits. */
static double compare(const struct attn_net *a, const struct attn_net *b, bool exact,
                      const char *what)
{
    double worst = 0;
    for (int L = 0; L < a->layers; L++) {
        const struct attn_model *m = &a->model[L];
        enum attn_stage order[STAGE_COUNT];
        int ns = attn_stage_order(order, m);
        for (int h = 0; h < m->heads; h++)
            for (int si = 0; si < ns; si++) {
                struct attn_mat_view x = attn_view(&a->run[L], m, order[si], h);
                struct attn_mat_view y = attn_view(&b->run[L], &b->model[L], order[si], h);
                assert_int_equal(x.rows, y.rows);
                assert_int_equal(x.cols, y.cols);
                for (int i = 0; i < x.rows; i++)
                    for (int j = 0; j < x.cols; j++) {
                        float u = x.data[(size_t)i * x.stride + j];
                        float v = y.data[(size_t)i * y.stride + j];
                        if (exact) {
                            if (memcmp(&u, &v, sizeof(u)) != 0)
                                fail_msg("%s: layer %d head %d %s [%d][%d]: tiled %.9g, full %.9g",
                                         what, L, h, attn_stage_name(order[si]), i, j, (double)u,
                                         (double)v);
                        } else if (u != v) {
                            double d = fabs((double)u - (double)v) / (1 + fabs((double)v));
                            if (!(d <= 1e-5))
                                fail_msg("%s: layer %d head %d %s [%d][%d]: tiled %.9g, full "
                                         "%.9g",
                                         what, L, h, attn_stage_name(order[si]), i, j, (double)u,
                                         (double)v);
                            if (d > worst)
                                worst = d;
                        }
                    }
            }
    }
    return worst;
}

static void run_case(const struct tcase *c)
{
    char *text = scene_text(c);
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_parse(&s, "causal.yaml", text, strlen(text), &errs))
        fail_msg("scene: %s", errs.n ? errs.items[0].msg : "?");
    attn_diag_list_free(&errs);
    char what[128];
    snprintf(what, sizeof(what), "n %d d %d heads %d/%d layers %d dropout %g%s", c->n, c->d,
             c->heads, c->kv_heads, c->layers, c->dropout, *c->block ? " block" : "");
    for (int naive = 1; naive >= 0; naive--) {
        attn_kernels_naive = naive;
        struct attn_net tiled, full;
        attn_causal_untiled = false;
        compute(&tiled, &s);
        attn_causal_untiled = true;
        compute(&full, &s);
        attn_causal_untiled = false;
        double worst = compare(&tiled, &full, naive, what);
        if (!naive)
            printf("causal: %-48s OpenBLAS tiles vs full: max rel diff %.3g\n", what, worst);
        attn_net_free(&tiled);
        attn_net_free(&full);
    }
    attn_kernels_naive = false;
    attn_scene_free(&s);
    free(text);
}

static const char gpt2_block[] = "block:\n  order: pre\n  norm: layer\n  ffn_hidden: 64\n"
                                 "  activation: gelu_tanh\n";

static void test_causal_tiles_equal_full(void **state)
{
    (void)state;
    const struct tcase cases[] = {
        {1, 4, 1, 0, 1, 0, ""},
        {5, 6, 2, 0, 1, 0, ""},
        {64, 8, 2, 0, 1, 0, ""},
        {65, 8, 1, 0, 1, 0, ""},
        {130, 12, 3, 0, 1, 0, ""},
        {200, 16, 4, 2, 1, 0, ""},
        {129, 8, 2, 0, 1, 0.25, ""},
        {150, 16, 4, 0, 2, 0, gpt2_block},
        {257, 32, 4, 0, 1, 0.1, gpt2_block},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
}

/* ---- row panels at fixed positions ---------------------------------------------------------
 * Every row-wise product of a causal net runs on row panels of 128 from row 0 (kernels.h's
 * attn_mm_ab_rows), each its own calls: a net of n tokens and one of more tokens, whose first n
 * tokens and parameters are the same, agree bit for bit, with OpenBLAS, on every row of the full
 * panels before the smaller net's last panel. A partial last panel is a call of another shape,
 * which is why a sentence edit recomputes from the panel holding its first changed token. */

static void ids_scene(struct attn_scene *s, const int *ids, int n, int layers,
                      const char *positional, const char *attention, const char *block);

/* n tokens from a fixed vocabulary of 7 words (so both nets draw the same embedding table),
 * positions up to 300 (the same table whatever n), and `extra` YAML for the attention and the
 * block. */
static void panel_scene(struct attn_scene *s, int n, int layers, const char *positional,
                        const char *attention, const char *block)
{
    int *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    assert_non_null(ids);
    for (int i = 0; i < n; i++)
        ids[i] = i % 7;
    ids_scene(s, ids, n, layers, positional, attention, block);
    free(ids);
}

/* A scene of layers layers and the tokens w<ids[i]> (i < n), positions and `extra` YAML for the
 * attention and the block as the caller says. */
static void ids_scene(struct attn_scene *s, const int *ids, int n, int layers,
                      const char *positional, const char *attention, const char *block)
{
    size_t cap = (size_t)n * 8 + 2048;
    char *t = malloc(cap);
    assert_non_null(t);
    int k = snprintf(t, cap,
                     "version: 1\ntitle: panels\ntokenizer: whitespace\nseed: 9\nlayers: %d\n"
                     "text:",
                     layers);
    for (int i = 0; i < n; i++)
        k += snprintf(t + k, cap - (size_t)k, " w%d", ids[i]);
    snprintf(t + k, cap - (size_t)k,
             "\nembeddings: {dim: 32}\npositional: %s\nattention:\n  d_out: 32\n  causal: true\n"
             "  out_proj: true\n%s%s",
             positional, attention, block);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_parse(s, "panels.yaml", t, strlen(t), &errs))
        fail_msg("scene: %s", errs.n ? errs.items[0].msg : "?");
    attn_diag_list_free(&errs);
    free(t);
}

/* attn_scene_product_flops, bench --ui's bound: every recomputed row costs the same row-wise
 * products, and a causal row i multiplies against i + 1 keys (a window's at most its width, a
 * bidirectional row's n), Q K^T and weights V over the d_out columns (4 flops a key a column). */
static void test_product_flops(void **state)
{
    (void)state;
    enum { N = 10, LAYERS = 2, D = 32, WINDOW = 3 };
    struct attn_scene s;
    panel_scene(&s, N, LAYERS, "{kind: learned, max_len: 300}", "  heads: 4\n  kv_heads: 2\n",
                gpt2_block);
    double f[N + 1];
    for (int i = 0; i <= N; i++)
        f[i] = attn_scene_product_flops(&s, i);
    assert_true(f[N] == 0 && attn_scene_product_flops(&s, N + 5) == 0);
    assert_true(attn_scene_product_flops(&s, -1) == f[0]);
    double row = (f[0] - f[1]) / LAYERS - 4.0 * 1 * D; /* row 0 sees one key */
    assert_true(row > 0);
    for (int i = 0; i < N; i++) /* row i: its products and its i + 1 keys */
        assert_true(fabs((f[i] - f[i + 1]) / LAYERS - (row + 4.0 * (i + 1) * D)) < 1e-6 * f[0]);
    s.attn.window = WINDOW;
    assert_true(fabs(attn_scene_product_flops(&s, N - 1) / LAYERS - (row + 4.0 * WINDOW * D)) <
                1e-6 * f[0]);
    s.attn.window = 0;
    s.attn.causal = false;
    assert_true(fabs(attn_scene_product_flops(&s, 0) / LAYERS - N * (row + 4.0 * N * D)) <
                1e-6 * f[0]);
    attn_scene_free(&s);
}

/* Rows 0 .. rows - 1 of every stage of every head of every layer of a and b (b may have more
 * tokens): equal bits. Square stages: the keys a row sees (the scores' future past its panel is
 * a product over every key, computed when shown), and every column of a's for the weights. */
static long compare_rows(const struct attn_net *a, const struct attn_net *b, int rows,
                         const char *what)
{
    long cells = 0;
    for (int L = 0; L < a->layers; L++) {
        const struct attn_model *m = &a->model[L];
        enum attn_stage order[STAGE_COUNT];
        int ns = attn_stage_order(order, m);
        for (int h = 0; h < m->heads; h++)
            for (int si = 0; si < ns; si++) {
                enum attn_stage st = order[si];
                struct attn_mat_view x = attn_view(&a->run[L], m, st, h);
                struct attn_mat_view y = attn_view(&b->run[L], &b->model[L], st, h);
                bool square = attn_stage_is_square(st);
                bool future = st == STAGE_WEIGHTS || st == STAGE_DROPOUT || st == STAGE_MASKED;
                for (int i = 0; i < rows; i++)
                    for (int j = 0; j < (square && !future ? i + 1 : x.cols); j++) {
                        float u = x.data[(size_t)i * x.stride + j];
                        float v = y.data[(size_t)i * y.stride + j];
                        if (memcmp(&u, &v, sizeof(u)) != 0)
                            fail_msg("%s: layer %d head %d %s [%d][%d]: %d tokens %.9g, %d tokens "
                                     "%.9g",
                                     what, L, h, attn_stage_name(st), i, j, m->n, (double)u,
                                     b->model[L].n, (double)v);
                        cells++;
                    }
            }
    }
    return cells;
}

static const char llama_block[] = "block:\n  order: pre\n  norm: rms\n  ffn_hidden: 96\n"
                                  "  activation: gelu\n";

static void test_panels_fixed_positions(void **state)
{
    (void)state;
    static const struct {
        int n, more, layers;
        const char *positional, *attention, *block;
    } cases[] = {
        {70, 130, 1, "{kind: learned, max_len: 300}", "  heads: 4\n", ""},
        {128, 129, 2, "{kind: learned, max_len: 300}", "  heads: 4\n", gpt2_block},
        {64, 257, 2, "{kind: learned, max_len: 300}", "  heads: 2\n  qkv_bias: true\n", gpt2_block},
        {200, 256, 2, "{kind: rope}", "  heads: 4\n  kv_heads: 2\n", llama_block},
        {150, 190, 1, "{kind: rope, rope_pairs: halves, offset: 3}", "  heads: 4\n", llama_block},
        {140, 230, 1, "{kind: sinusoidal}", "  heads: 4\n  kv_latent: 8\n", ""},
        {100, 101, 1, "{kind: learned, max_len: 300}", "  heads: 1\n", gpt2_block},
    };
    /* the panels as they are (128 rows), and of 64 */
    int compared = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            attn_row_panel_rows = pass == 0 ? 0 : 64;
            int panel = attn_row_panel();
            int full = cases[c].n / panel * panel; /* the full panels (a partial last one is not) */
            if (full == 0)
                continue;
            compared++;
            struct attn_scene s1, s2;
            panel_scene(&s1, cases[c].n, cases[c].layers, cases[c].positional, cases[c].attention,
                        cases[c].block);
            panel_scene(&s2, cases[c].more, cases[c].layers, cases[c].positional,
                        cases[c].attention, cases[c].block);
            struct attn_net a, b;
            compute(&a, &s1);
            compute(&b, &s2);
            char what[96];
            snprintf(what, sizeof(what), "panels of %d, case %zu (%d and %d tokens)", panel, c,
                     cases[c].n, cases[c].more);
            long cells = compare_rows(&a, &b, full, what);
            assert_true(cells > 0);
            printf("causal: %-40s rows 0..%d of every stage: %ld cells, the same bits\n", what,
                   full - 1, cells);
            attn_net_free(&a);
            attn_net_free(&b);
            attn_scene_free(&s1);
            attn_scene_free(&s2);
        }
    attn_row_panel_rows = 0;
    assert_true(compared >= 10);
}

/* ---- the near path: a sentence edit's last rows as one block --------------------------------
 * A net with near_ok computes an edit whose first changed row r has n - r <= ATTN_NEAR_ROWS as
 * rows r .. n - 1 of every layer in one block (attn_forward_rows_near), where the panels redo
 * r's whole panel. With the naive products (a fixed order of additions whatever the shape) the
 * block is the fresh computation bit for bit: the same arithmetic. With OpenBLAS its products
 * have another height (M) than the panel's, and may round otherwise.
 *
 * The tolerance. One element of a product is a dot product of K terms; two orders of its
 * additions differ by at most 2 gamma_K sum |a_k b_k|, gamma_K ~ K u (u = 2^-24), and a blocked
 * kernel's by far less (sqrt(K) u in practice). Here K is at most the FFN's width (96) or the
 * keys (n), and sum |a||b| is within a few times the stage's largest |value| (no cancellation
 * worth the name in these random nets): 2 x 300 x 6e-8 = 3.6e-5 of that scale, worst case, for
 * one product. The softmax turns a score's error e into a weight's relative error of at most 2e;
 * each later product adds its own and carries the earlier (the norms rescale, the residual adds),
 * a few times over two layers. So every cell is held to NEAR_TOL of its stage's largest |value|
 * (per matrix), 1e-4: above one product's worst case here, and 140 times the worst measured
 * (7.1e-7 under OPENBLAS_CORETYPE=Prescott, 5.0e-7 on Haswell, 0 on Sandybridge and on this
 * CPU's Cooperlake; printed). */
#define NEAR_TOL 1e-4

/* Every stage of every head of every layer of a against the fresh b: equal bits when exact, else
 * within NEAR_TOL of each matrix's largest |value|. Returns the worst share of that scale. */
static double compare_near(const struct attn_net *a, const struct attn_net *b, bool exact,
                           const char *what)
{
    double worst = 0;
    for (int L = 0; L < a->layers; L++) {
        const struct attn_model *m = &a->model[L];
        enum attn_stage order[STAGE_COUNT];
        int ns = attn_stage_order(order, m);
        for (int si = 0; si < ns; si++)
            for (int h = 0; h < (attn_stage_is_per_head(order[si]) ? m->heads : 1); h++) {
                struct attn_mat_view x = attn_view(&a->run[L], m, order[si], h);
                struct attn_mat_view y = attn_view(&b->run[L], &b->model[L], order[si], h);
                assert_int_equal(x.rows, y.rows);
                assert_int_equal(x.cols, y.cols);
                double scale = 0;
                for (int i = 0; i < y.rows; i++)
                    for (int j = 0; j < y.cols; j++) {
                        float v = y.data[(size_t)i * y.stride + j];
                        if (isfinite(v) && fabs((double)v) > scale)
                            scale = fabs((double)v);
                    }
                for (int i = 0; i < x.rows; i++)
                    for (int j = 0; j < x.cols; j++) {
                        float u = x.data[(size_t)i * x.stride + j];
                        float v = y.data[(size_t)i * y.stride + j];
                        if (memcmp(&u, &v, sizeof(u)) == 0)
                            continue;
                        double d = fabs((double)u - (double)v) / (scale > 0 ? scale : 1);
                        if (exact || !(d <= NEAR_TOL))
                            fail_msg("%s: layer %d head %d %s [%d][%d]: %.9g, fresh %.9g (%.3g of "
                                     "the stage's scale)",
                                     what, L, h, attn_stage_name(order[si]), i, j, (double)u,
                                     (double)v, d);
                        if (d > worst)
                            worst = d;
                    }
            }
    }
    return worst;
}

/* One edit of net to the tokens ids (n): computed, its near_from and kept rows as expected,
 * against a fresh computation (within the tolerance; bit for bit with the naive products), then
 * made exact (when exact_after) and compared bit for bit. Returns the worst share. */
struct near_case {
    const char *positional, *attention, *block;
    int window; /* a checkpoint's sliding window (no scene key): 0, none */
};

static double near_edit(struct attn_net *net, const struct near_case *c, const int *ids, int n,
                        int want_near, int want_kept, bool exact_after, const char *what)
{
    struct attn_scene s;
    ids_scene(&s, ids, n, 2, c->positional, c->attention, c->block);
    s.attn.window = c->window;
    struct diag err = {0};
    if (attn_net_compute(net, &s, &err))
        fail_msg("%s: %s", what, err.msg);
    if (net->near_from != want_near || net->kept_rows != want_kept)
        fail_msg("%s: near_from %d, kept %d; expected %d and %d", what, net->near_from,
                 net->kept_rows, want_near, want_kept);
    struct attn_net fresh;
    compute(&fresh, &s);
    assert_int_equal(fresh.near_from, -1);
    double worst = compare_near(net, &fresh, attn_kernels_naive || want_near < 0, what);
    if (exact_after && want_near >= 0) {
        assert_int_equal(attn_net_forward_exact(net), 0);
        assert_int_equal(net->near_from, -1);
        compare_near(net, &fresh, true, what); /* the panels' bits again */
    }
    attn_net_free(&fresh);
    attn_scene_free(&s);
    return worst;
}

static void test_near_last_rows(void **state)
{
    (void)state;
    static const struct near_case cases[] = {
        /* GPT-2-like: learned positions, LayerNorm, gelu_tanh, biases */
        {"{kind: learned, max_len: 300}", "  heads: 4\n  qkv_bias: true\n", gpt2_block, 0},
        /* Llama-like: RoPE, GQA, RMSNorm */
        {"{kind: rope}", "  heads: 4\n  kv_heads: 2\n", llama_block, 0},
        {"{kind: rope, rope_pairs: halves, offset: 3}", "  heads: 2\n", llama_block, 0},
        /* MLA's latent keys and values, no block */
        {"{kind: learned, max_len: 300}", "  heads: 4\n  kv_latent: 8\n", "", 0},
        /* Mistral-like: a sliding window of 8 hides the keys before it in the panels too */
        {"{kind: rope, rope_pairs: halves}", "  heads: 4\n  kv_heads: 2\n", llama_block, 8},
    };
    enum { N0 = 200, MAX = 240 };
    int ids[MAX];
    double worst = 0;
    char what[160];
    for (int naive = 1; naive >= 0; naive--)
        for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
            attn_kernels_naive = naive;
            const struct near_case *c = &cases[ci];
            for (int i = 0; i < MAX; i++)
                ids[i] = i % 7;
            struct attn_scene base;
            ids_scene(&base, ids, N0, 2, c->positional, c->attention, c->block);
            base.attn.window = c->window;
            struct attn_net net;
            compute(&net, &base);
            net.near_ok = true;
            attn_scene_free(&base);
            int n = N0;
#define EDIT(want_near, want_kept, exact_after, ...)                                               \
    do {                                                                                           \
        snprintf(what, sizeof(what), "case %zu%s: " __VA_ARGS__);                                  \
        double w = near_edit(&net, c, ids, n, want_near, want_kept, exact_after, what);            \
        worst = w > worst ? w : worst;                                                             \
    } while (0)
            /* the last token changed, then one appended: the near rows add up (the earliest) */
            ids[n - 1] = (ids[n - 1] + 1) % 7;
            EDIT(n - 1, n - 1, false, "the last token changed", ci, naive ? " naive" : "");
            n++;
            EDIT(n - 2, n - 1, true, "a token appended", ci, naive ? " naive" : "");
            /* three appended; ATTN_NEAR_ROWS changed */
            n += 3;
            EDIT(n - 3, n - 3, true, "three tokens appended", ci, naive ? " naive" : "");
            for (int i = n - ATTN_NEAR_ROWS; i < n; i++)
                ids[i] = (ids[i] + 1) % 7;
            EDIT(n - ATTN_NEAR_ROWS, n - ATTN_NEAR_ROWS, false, "the last 16 changed", ci,
                 naive ? " naive" : "");
            /* one more row back: the panels, which keep no near row (the near rows' panel on
               again) */
            for (int i = n - ATTN_NEAR_ROWS - 1; i < n; i++)
                ids[i] = (ids[i] + 1) % 7;
            EDIT(-1, 128, false, "the last 17 changed", ci, naive ? " naive" : "");
            /* tokens taken away: no row computed, the kept rows of the partial panel are near */
            ids[n - 1] = (ids[n - 1] + 2) % 7;
            EDIT(n - 1, n - 1, false, "the last changed again", ci, naive ? " naive" : "");
            n -= 3;
            EDIT(n, n, true, "three taken away", ci, naive ? " naive" : "");
            /* the panels' exact path when the caller does not accept near rows */
            net.near_ok = false;
            ids[n - 1] = (ids[n - 1] + 1) % 7;
            EDIT(-1, 128, false, "near_ok false", ci, naive ? " naive" : "");
#undef EDIT
            attn_net_free(&net);
        }
    attn_kernels_naive = false;
    printf("causal: near path against fresh computations: worst %.3g of a stage's scale "
           "(tolerance %g)\n",
           worst, NEAR_TOL);

    /* Never with dropout or an ablated head: they keep no rows. */
    static const char gpt2_ablated[] = "block:\n  order: pre\n  norm: layer\n  ffn_hidden: 64\n"
                                       "  activation: gelu_tanh\n"
                                       "ablate:\n  - {layer: 0, head: 1, mode: zero}\n";
    static const struct near_case others[] = {
        {"{kind: learned, max_len: 300}", "  heads: 2\n  dropout: 0.1\n", gpt2_block, 0},
        {"{kind: learned, max_len: 300}", "  heads: 2\n", gpt2_ablated, 0},
    };
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < MAX; i++)
            ids[i] = i % 7;
        struct attn_scene s, e;
        ids_scene(&s, ids, N0, 2, others[k].positional, others[k].attention, others[k].block);
        ids[N0 - 1] = (ids[N0 - 1] + 1) % 7;
        ids_scene(&e, ids, N0, 2, others[k].positional, others[k].attention, others[k].block);
        struct attn_net net;
        compute(&net, &s);
        net.near_ok = true;
        struct diag err = {0};
        if (attn_net_compute(&net, &e, &err))
            fail_msg("other %d: %s", k, err.msg);
        assert_int_equal(net.near_from, -1);
        assert_int_equal(net.kept_rows, 0);
        attn_net_free(&net);
        attn_scene_free(&s);
        attn_scene_free(&e);
    }
}

/* ---- a value that is not a number ----------------------------------------------------------
 * A positional table whose row `bad` is 3e38 in every dimension: row `bad` of a projection (or of
 * the scores) overflows, and the pass must say so at the same place whichever way it is computed
 * (tiles or full, a fresh compute or a sentence edit that keeps the rows before the edit's
 * panel), with the softmax giving nan there, never weights of 0. */
/* n tokens of 7 words (an edit swaps token `changed` for another of them: the same embedding
 * table), the positions' row `bad` of 3e38. */
static void nonfinite_scene(struct attn_scene *s, int n, int bad, int changed)
{
    size_t cap = (size_t)n * 32 * 8 + 4096;
    char *t = malloc(cap);
    assert_non_null(t);
    int k = snprintf(t, cap, "version: 1\ntokenizer: whitespace\nseed: 4\ntext:");
    for (int i = 0; i < n; i++)
        k += snprintf(t + k, cap - (size_t)k, " w%d", (i + (i == changed)) % 7);
    k += snprintf(t + k, cap - (size_t)k,
                  "\nembeddings: {dim: 8}\nattention: {d_out: 8, heads: 2, causal: true}\n"
                  "positional:\n  kind: learned\n  max_len: %d\n  table:\n",
                  n);
    for (int i = 0; i < n; i++)
        k += snprintf(t + k, cap - (size_t)k, "    - [%s]\n",
                      i == bad ? "3e38, 3e38, 3e38, 3e38, 3e38, 3e38, 3e38, 3e38"
                               : "0, 0, 0, 0, 0, 0, 0, 0");
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_parse(s, "nonfinite.yaml", t, strlen(t), &errs))
        fail_msg("scene: %s", errs.n ? errs.items[0].msg : "?");
    attn_diag_list_free(&errs);
    free(t);
}

static void expect_same_place(const struct attn_net *a, const struct attn_net *b, const char *what)
{
    int la = -1, lb = -1;
    const struct attn_nonfinite *x = attn_net_nonfinite(a, &la), *y = attn_net_nonfinite(b, &lb);
    assert_non_null(x);
    assert_non_null(y);
    if (la != lb || x->stage != y->stage || x->head != y->head || x->row != y->row ||
        x->col != y->col)
        fail_msg("%s: layer %d head %d %s [%d][%d] against layer %d head %d %s [%d][%d]", what, la,
                 x->head, attn_stage_name(x->stage), x->row, x->col, lb, y->head,
                 attn_stage_name(y->stage), y->row, y->col);
}

static void test_nonfinite_place(void **state)
{
    (void)state;
    struct attn_scene s, edited;
    nonfinite_scene(&s, 200, 10, -1);
    nonfinite_scene(&edited, 200, 10, 150);
    struct attn_net tiled, full, fresh;
    compute(&tiled, &s);
    attn_causal_untiled = true;
    compute(&full, &s);
    attn_causal_untiled = false;
    int layer = -1;
    const struct attn_nonfinite *f = attn_net_nonfinite(&tiled, &layer);
    assert_non_null(f);
    assert_int_equal(layer, 0);
    assert_int_equal(f->row, 10); /* nothing before the row of 3e38 */
    expect_same_place(&tiled, &full, "tiles against the full pass");
    char text[200];
    assert_true(attn_net_nonfinite_text(text, sizeof(text), &tiled));
    printf("causal: a row of 3e38: %s\n", text);
    /* The softmax of that row is nan, in both: never weights of 0 as for a masked row. */
    for (int h = 0; h < 2; h++) {
        struct attn_mat_view w = attn_view(&tiled.run[0], &tiled.model[0], STAGE_WEIGHTS, h);
        if (f->stage == STAGE_SCORES && h == f->head)
            assert_true(isnan(w.data[(size_t)10 * w.stride]));
        for (int j = 0; j < w.cols; j++) /* the rows before it attend as usual */
            assert_false(isnan(w.data[j]));
    }
    /* A sentence edit at token 150 keeps the rows before its panel, the bad one among them: it
       is found again, where a fresh compute of the edited scene finds it. */
    compute(&fresh, &edited);
    struct diag err = {0};
    if (attn_net_compute(&tiled, &edited, &err))
        fail_msg("edit: %s", err.msg);
    assert_true(tiled.kept_rows > 10);
    expect_same_place(&tiled, &fresh, "an edit keeping the rows against a fresh compute");
    /* And a scene without it has none. */
    struct attn_scene clean;
    nonfinite_scene(&clean, 100, -1, -1);
    if (attn_net_compute(&tiled, &clean, &err))
        fail_msg("clean: %s", err.msg);
    assert_null(attn_net_nonfinite(&tiled, NULL));
    assert_false(attn_net_nonfinite_text(text, sizeof(text), &tiled));
    attn_net_free(&tiled);
    attn_net_free(&full);
    attn_net_free(&fresh);
    attn_scene_free(&s);
    attn_scene_free(&edited);
    attn_scene_free(&clean);
}

/* What hides a value that is not a number on its way to the layer's output: relu (of -inf), the
 * softmax (a -inf score weighs 0), an ablated head (its context replaced). The output of each
 * scene is finite, and the pass must still name the place: a check of the output alone would
 * say every value is a number. */
static void test_nonfinite_hidden(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *want;
    } cases[] = {
        {"text: a b c\nembeddings: [[1, 1], [1, 1], [1, 1]]\nattention: {d_out: 2}\n"
         "block: {order: pre, norm: rms, ffn_hidden: 2, activation: relu}\n"
         "weights:\n  query: [[0, 0], [0, 0]]\n  key: [[0, 0], [0, 0]]\n"
         "  value: [[0, 0], [0, 0]]\n  ffn_W1: [[-3e38, 1], [-3e38, 1]]\n  ffn_b1: [0, 0]\n"
         "  ffn_W2: [[1, 0], [0, 1]]\n  ffn_b2: [0, 0]\n",
         "-inf at layer 0, ffn_hidden, row 0 (\u201ca\u201d), column 0"},
        {"text: a b\nembeddings: [[1e20], [1]]\nattention: {d_out: 1}\n"
         "weights: {query: [[1]], key: [[-1]], value: [[1]]}\n",
         "-inf at layer 0, head 0, scores, row 0 (\u201ca\u201d), column 0"},
        {"text: a b\nembeddings: [[1, 1], [1, 1]]\nattention: {d_out: 2, heads: 2, out_proj: "
         "false}\n"
         "weights:\n  query: [[0, 0], [0, 0]]\n  key: [[0, 0], [0, 0]]\n"
         "  value: [[3e38, 0], [3e38, 0]]\nablate:\n  - {layer: 0, head: 0, mode: zero}\n",
         "inf at layer 0, head 0, values, row 0 (\u201ca\u201d), column 0"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct attn_scene s;
        struct diag_list errs;
        attn_diag_list_init(&errs);
        if (attn_scenefile_parse(&s, "hidden.yaml", cases[c].yaml, strlen(cases[c].yaml), &errs))
            fail_msg("case %zu: %s", c, errs.n ? errs.items[0].msg : "?");
        attn_diag_list_free(&errs);
        struct attn_net net;
        compute(&net, &s);
        const struct attn_model *m = &net.model[0];
        struct attn_mat_view out =
            attn_view(&net.run[0], m, m->block ? attn_stage_block_output(m) : STAGE_OUTPUT, 0);
        for (int i = 0; i < out.rows; i++) /* hidden: the output is all numbers */
            for (int j = 0; j < out.cols; j++)
                assert_true(isfinite(out.data[(size_t)i * out.stride + j]));
        char text[200];
        assert_true(attn_net_nonfinite_text(text, sizeof(text), &net));
        if (strcmp(text, cases[c].want) != 0)
            fail_msg("case %zu: \"%s\", expected \"%s\"", c, text, cases[c].want);
        printf("causal: hidden on its way to the output, found: %s\n", text);
        attn_net_free(&net);
        attn_scene_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_causal_tiles_equal_full),
        cmocka_unit_test(test_panels_fixed_positions),
        cmocka_unit_test(test_nonfinite_place),
        cmocka_unit_test(test_product_flops),
        cmocka_unit_test(test_nonfinite_hidden),
        cmocka_unit_test(test_near_last_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
