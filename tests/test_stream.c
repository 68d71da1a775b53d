/* test_stream: a net in stream mode (net.h's stage_budget) keeps the stages of two layers at a
 * time and recomputes a layer shown again from its input (attn_net_materialise). Every stage of
 * every head of every layer it shows must be the bits a net that keeps every layer holds: after
 * the first compute, after sentence edits that keep rows (the panels' path, appended, changed
 * mid-sentence, shortened), and with the layers visited in any order; and at no time may more
 * than stage_layers layers hold a set. Cases: GPT-2's pre-norm block, a Llama-like one (RoPE,
 * GQA, RMSNorm), a post-norm block, MLA. (SwiGLU comes from checkpoints only: test_app_async
 * runs a stream net of one.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/attention.h"
#include "engine/net.h"
#include "scenefile/scenefile.h"

struct scase {
    const char *name, *positional, *attention, *block;
};

static const struct scase cases[] = {
    {"gpt2-like", "{kind: learned, max_len: 400}", "  heads: 4\n",
     "block:\n  order: pre\n  norm: layer\n  ffn_hidden: 64\n  activation: gelu\n"
     "  final_norm: true\n"},
    {"llama-like", "{kind: rope}", "  heads: 4\n  kv_heads: 2\n",
     "block:\n  order: pre\n  norm: rms\n  ffn_hidden: 96\n  activation: gelu_tanh\n"},
    {"post-norm", "{kind: learned, max_len: 400}", "  heads: 2\n",
     "block:\n  order: post\n  norm: layer\n  ffn_hidden: 48\n  activation: relu\n"},
    {"mla", "{kind: sinusoidal}", "  heads: 4\n  kv_latent: 8\n", ""},
};

enum { LAYERS = 5 };

/* The tokens w<ids[i] % 7>, i < n, of case c's net. */
static void scene(struct attn_scene *s, const struct scase *c, const int *ids, int n)
{
    size_t cap = (size_t)n * 8 + 2048;
    char *t = malloc(cap);
    assert_non_null(t);
    int k = snprintf(t, cap,
                     "version: 1\ntitle: stream\ntokenizer: whitespace\nseed: 4\nlayers: %d\n"
                     "text:",
                     LAYERS);
    for (int i = 0; i < n; i++)
        k += snprintf(t + k, cap - (size_t)k, " w%d", ids[i] % 7);
    snprintf(t + k, cap - (size_t)k,
             "\nembeddings: {dim: 32}\npositional: %s\nattention:\n  d_out: 32\n  causal: true\n"
             "  out_proj: true\n%s%s",
             c->positional, c->attention, c->block);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_parse(s, "stream.yaml", t, strlen(t), &errs))
        fail_msg("%s: %s", c->name, errs.n ? errs.items[0].msg : "?");
    attn_diag_list_free(&errs);
    free(t);
}

static void compute(struct attn_net *net, const struct attn_scene *s, const char *what)
{
    struct diag err = {0};
    if (attn_net_compute(net, s, &err))
        fail_msg("%s: compute: %s", what, err.msg);
}

/* The layers of net holding a stage set. */
static int sets_held(const struct attn_net *net)
{
    int k = 0;
    for (int L = 0; L < net->layers; L++)
        k += attn_run_holds_stages(&net->run[L]);
    return k;
}

/* Layer L of the stream net b shown (materialised): every stage of every head the bits of the
 * full net a's. Returns the cells compared. */
static long same_layer(const struct attn_net *a, struct attn_net *b, int L, const char *what)
{
    struct diag err = {0};
    if (attn_net_materialise(b, L, &err))
        fail_msg("%s: materialise layer %d: %s", what, L, err.msg);
    assert_true(attn_net_layer_held(b, L));
    assert_true(sets_held(b) <= b->stage_layers);
    const struct attn_model *m = &a->model[L];
    enum attn_stage order[STAGE_COUNT];
    int ns = attn_stage_order(order, m);
    long cells = 0;
    for (int si = 0; si < ns; si++)
        for (int h = 0; h < (attn_stage_is_per_head(order[si]) ? m->heads : 1); h++) {
            struct attn_mat_view x = attn_view(&a->run[L], m, order[si], h);
            struct attn_mat_view y = attn_view(&b->run[L], &b->model[L], order[si], h);
            assert_int_equal(x.rows, y.rows);
            assert_int_equal(x.cols, y.cols);
            for (int i = 0; i < x.rows; i++)
                if (memcmp(x.data + (size_t)i * x.stride, y.data + (size_t)i * y.stride,
                           (size_t)x.cols * sizeof(float)) != 0)
                    for (int j = 0; j < x.cols; j++) {
                        float u = x.data[(size_t)i * x.stride + j];
                        float v = y.data[(size_t)i * y.stride + j];
                        if (memcmp(&u, &v, sizeof(u)) != 0)
                            fail_msg("%s: layer %d head %d %s [%d][%d]: kept %.9g, shown "
                                     "again %.9g",
                                     what, L, h, attn_stage_name(order[si]), i, j, (double)u,
                                     (double)v);
                    }
            cells += (long)x.rows * x.cols;
        }
    return cells;
}

static void test_stream_same_bits(void **state)
{
    (void)state;
    /* the layers shown, in this order: back and forth, the pinned one among them */
    static const int visit[] = {3, 0, 4, 4, 1, 3, 2, 0};
    int ids[300];
    for (int i = 0; i < 300; i++)
        ids[i] = (i * 5 + i / 3) % 7;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        /* the sentence edits after the first compute: n tokens, the token changed at `at` */
        static const struct {
            int n, at;
        } edits[] = {{150, -1}, {151, 150}, {151, 149}, {230, 200}, {230, 70}, {140, -1}};
        struct attn_net a = {0}, b = {0};
        long cells = 0;
        for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
            if (edits[e].at >= 0)
                ids[edits[e].at] += 1;
            struct attn_scene s;
            scene(&s, &cases[c], ids, edits[e].n);
            char what[96];
            snprintf(what, sizeof(what), "%s, edit %zu (%d tokens)", cases[c].name, e, edits[e].n);
            if (e == 0) { /* room for two sets of this size, not three */
                struct attn_net probe = {0};
                compute(&probe, &s, what);
                b.stage_budget = attn_run_stage_bytes(&probe.model[LAYERS - 1]) * 2 + 1;
                attn_net_free(&probe);
            }
            /* the explorer pins the layer in view, which it showed (materialised) */
            b.stage_pin = visit[e];
            struct diag err = {0};
            if (e > 0 && attn_net_materialise(&b, visit[e], &err))
                fail_msg("%s: %s", what, err.msg);
            compute(&a, &s, what);
            compute(&b, &s, what);
            assert_int_equal(b.stage_layers, 2);
            assert_true(sets_held(&b) <= 2);
            if (!attn_net_layer_held(&b, visit[e])) /* the pass kept the pinned one */
                fail_msg("%s: layer %d not held", what, visit[e]);
            for (size_t v = 0; v < sizeof(visit) / sizeof(visit[0]); v++)
                cells += same_layer(&a, &b, visit[v], what);
            attn_scene_free(&s);
        }
        printf("stream: %-10s %zu edits, every layer shown again in %zu visits: %ld cells, the "
               "same bits\n",
               cases[c].name, sizeof(edits) / sizeof(edits[0]), sizeof(visit) / sizeof(visit[0]),
               cells);
        attn_net_free(&a);
        attn_net_free(&b);
    }
}

/* A budget that holds every layer's set is full mode: nothing changes. */
static void test_stream_off_when_it_fits(void **state)
{
    (void)state;
    int ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = i;
    struct attn_scene s;
    scene(&s, &cases[0], ids, 40);
    struct attn_net b = {0};
    b.stage_budget = (size_t)1 << 30;
    compute(&b, &s, "fits");
    assert_int_equal(b.stage_layers, 0);
    assert_int_equal(sets_held(&b), LAYERS);
    attn_net_free(&b);
    attn_scene_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_same_bits),
        cmocka_unit_test(test_stream_off_when_it_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
