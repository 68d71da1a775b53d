/* test_interp: what a head does, against PyTorch (tests/golden/gen_interp.py).
 *
 * For every scene of tests/golden/gpt2/interp/ (the tiny GPT-2 checkpoints: F32, F16, BF16,
 * tied and untied lm_head, and the shipped induction model) the engine's logits, top-10 at
 * temperatures 1 and 0.7, per-position loss, logit lens, zero and mean ablation, and for every
 * clean/corrupted pair the patching tables of the three metric kinds, each compared with the
 * golden, within tolerances that follow from the logits' (docs/exactness.md, "Tolerances"):
 *   logits                |a - b| <= e * max(1, |b|), e = 1e-5 from torch's residual stream,
 *                         3e-5 through every layer
 *   probabilities         |a - b| <= 2 p e Z: the softmax passes an error of e Z in every logit
 *                         on as at most 2 p e Z, Z the largest |logit / T| of the row
 *   loss, delta_loss      2 e Z and 4 e Z (-ln p, and the difference of two); Z of the scene
 *   patched metrics       a probability as above, a logit difference or a loss 2 e Z
 *   recovered             |a - b| <= 1e-4 (a ratio: the metric's error over its span)
 *   ids, ranks            exactly (the generator refuses near-ties)
 * The largest share of its tolerance each kind reaches is printed, with the difference there. Then
 * the engine against itself: the naive twin of the unembedding, the scene's ablate: key against the
 * sweep, windows of positions, and the errors.
 *
 * Environment: ATTNSCOPE_GOLDEN_DIR (tests/golden), ATTNSCOPE_SCENES_DIR (scenes).
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

#include "engine/kernels.h"
#include "engine/logits.h"
#include "engine/net.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

#define PATH_LEN 4096

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return (v && *v) ? v : fallback;
}

/* What is compared, each kind with its tolerance (see the top of the file). */
enum kind {
    K_LOGIT,
    K_PROB,
    K_LOSS,
    K_RECOVERED,
    K_CHAIN,
    K_CHAIN_PROB,
    K_CHAIN_LOSS,
    K_METRIC,
    K_COUNT
};
static const char *const kind_names[K_COUNT] = {"logits",
                                                "probabilities",
                                                "loss",
                                                "recovered",
                                                "logits through every layer",
                                                "probabilities through every layer",
                                                "loss and delta_loss through every layer",
                                                "patched metrics through every layer"};
/* A logit's relative tolerance from torch's residual stream, and through every layer. */
#define EPS_LOGIT 1e-5
#define EPS_CHAIN 3e-5
static double worst[K_COUNT], worst_diff[K_COUNT], worst_tol[K_COUNT];
static char worst_at[K_COUNT][256];

static double eps_of(enum kind k)
{
    return k == K_LOGIT || k == K_PROB || k == K_LOSS ? EPS_LOGIT : EPS_CHAIN;
}

/* The tolerance of a value of kind k whose golden is want: terms is 2 for a difference of two
 * losses (delta_loss), else 1; Z is the largest |logit / T| the value depends on. */
static double tolerance_of(enum kind k, double want, double Z, int terms)
{
    switch (k) {
    case K_LOGIT:
    case K_CHAIN:
        return eps_of(k) * (fabs(want) > 1 ? fabs(want) : 1);
    case K_PROB:
    case K_CHAIN_PROB:
        return 2 * fabs(want) * eps_of(k) * Z;
    case K_RECOVERED:
        return 1e-4;
    default: /* a loss, a logit difference: two logits' errors */
        return 2 * terms * eps_of(k) * Z;
    }
}

/* Whether got is within the tolerance of want (tolerance_of); records the largest share. */
static bool near_z(enum kind k, double got, double want, double Z, int terms, const char *what)
{
    double d = fabs(got - want), tol = tolerance_of(k, want, Z, terms);
    if (d / tol > worst[k] || !(d == d)) {
        worst[k] = d / tol;
        worst_diff[k] = d;
        worst_tol[k] = tol;
        snprintf(worst_at[k], sizeof(worst_at[k]), "%.200s", what);
    }
    return d <= tol;
}

static bool near(enum kind k, double got, double want, const char *what)
{
    return near_z(k, got, want, 1, 1, what);
}

/* Z of row pos of layer's logits: the largest |logit|, at least 1. */
static double logit_scale(const struct attn_net *net, int layer, int pos)
{
    int vocab = net->model[net->layers - 1].vocab;
    float *z = malloc((size_t)vocab * sizeof(float));
    assert_non_null(z);
    struct diag err;
    assert_int_equal(attn_logits(z, net, layer, pos, 1, &err), 0);
    double Z = 1;
    for (int j = 0; j < vocab; j++)
        Z = fabs(z[j]) > Z ? fabs(z[j]) : Z;
    free(z);
    return Z;
}

/* Z of a whole scene: every layer's logits at every position. */
static double scene_logit_scale(const struct attn_net *net)
{
    double Z = 1;
    for (int L = 0; L < net->layers; L++)
        for (int i = 0; i < net->model[0].n; i++) {
            double z = logit_scale(net, L, i);
            Z = z > Z ? z : Z;
        }
    return Z;
}

struct scene_case {
    char stem[128];
    char scene[PATH_LEN];  /* the scene file */
    char golden[PATH_LEN]; /* its interp/<stem> folder */
    char stages[PATH_LEN]; /* its stage goldens (layer<L>/inputs.csv) */
    char family[PATH_LEN]; /* a family's case (BERT, Llama): tests/golden/families/scenes */
};

/* Loads and computes a scene; fails the test when it cannot. */
static void open_scene(struct attn_scene *s, struct attn_net *net, const char *path)
{
    memset(net, 0, sizeof(*net));
    if (attn_scenefile_load_report(s, path, stderr) != 0)
        fail_msg("%s: the loader refused the scene", path);
    struct diag err;
    attn_diag_clear(&err);
    if (attn_net_compute(net, s, &err) != 0)
        fail_msg("%s: %s", path, err.msg);
}

static void read_golden(struct tu_csv *c, const char *dir, const char *name, int cols)
{
    char path[PATH_LEN + 64], why[PATH_LEN + 128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (tu_csv_read(c, path, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    for (int i = 0; i < c->rows; i++)
        if (c->ncols[i] != cols)
            fail_msg("%s: row %d has %d fields, expected %d", path, i, c->ncols[i], cols);
}

static double num(const struct tu_csv *c, int row, int col)
{
    char *end;
    double v = strtod(c->cells[row][col], &end);
    if (*end != '\0' || end == c->cells[row][col])
        fail_msg("golden cell [%d][%d] '%s' is not a number", row, col, c->cells[row][col]);
    return v;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (bad++ < 20)                                                                        \
                print_error(__VA_ARGS__);                                                          \
        }                                                                                          \
    } while (0)

/* Every layer's block output replaced by torch's (the stage goldens' layer<L>/block_output.csv):
 * what follows, the final norm, the unembedding, the softmax and the top k, is then compared to
 * the digit, as test_goldens compares each stage from torch's input to it. Through every layer
 * float32 rounding compounds (the induction model's attention scores reach 210, and its sharp
 * softmax passes a last-digit difference of a score on): check_logits and check_predictions
 * measure that chain first, at the chain's tolerances. */
static void use_torch_block_outputs(struct attn_net *net, const struct scene_case *sc)
{
    for (int L = 0; L < net->layers; L++) {
        const struct attn_model *m = &net->model[L];
        struct attn_mat_view v = attn_view(&net->run[L], m, attn_stage_block_output(m), 0);
        float *out = (float *)(uintptr_t)v.data; /* the run's own buffer */
        char name[64];
        snprintf(name, sizeof(name), "layer%d/block_output.csv", L);
        struct tu_csv c;
        read_golden(&c, sc->stages, name, v.cols + 1);
        assert_int_equal(c.rows, v.rows + 1);
        for (int i = 0; i < v.rows; i++)
            for (int j = 0; j < v.cols; j++)
                out[(size_t)i * v.stride + j] = (float)num(&c, i + 1, j + 1);
        tu_csv_free(&c);
    }
}

/* logits.csv: n x vocab, k: K_CHAIN through every layer, K_LOGIT from torch's inputs. */
static int check_logits(const struct attn_net *net, const struct scene_case *sc, enum kind k)
{
    int bad = 0, n = net->model[0].n, vocab = net->model[net->layers - 1].vocab;
    struct tu_csv c;
    read_golden(&c, sc->golden, "logits.csv", vocab + 1);
    assert_int_equal(c.rows, n + 1);
    float *logits = malloc((size_t)n * (size_t)vocab * sizeof(float));
    assert_non_null(logits);
    struct diag err;
    assert_int_equal(attn_logits(logits, net, net->layers - 1, 0, n, &err), 0);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < vocab; j++) {
            char what[256];
            snprintf(what, sizeof(what), "%s logits[%d][%d]", sc->stem, i, j);
            double want = num(&c, i + 1, j + 1), got = logits[(size_t)i * vocab + j];
            CHECK(near(k, got, want, what), "%s: engine %.9g, torch %.9g\n", what, got, want);
        }
    free(logits);
    tu_csv_free(&c);
    return bad;
}

/* predictions<suffix>.csv and loss<suffix>.csv at temperature T; logits and probabilities
 * within the tolerances of kl and kp. */
static int check_predictions(const struct attn_net *net, const struct scene_case *sc, double T,
                             const char *suffix, enum kind kl, enum kind kp)
{
    int bad = 0, n = net->model[0].n;
    struct attn_predictions p;
    struct diag err;
    if (attn_predict(&p, net, net->layers - 1, 0, n, 10, T, NULL, &err) != 0)
        fail_msg("%s: attn_predict: %s", sc->stem, err.msg);
    double *Z = malloc((size_t)n * sizeof(double));
    assert_non_null(Z);
    for (int i = 0; i < n; i++)
        Z[i] = logit_scale(net, net->layers - 1, i) / T;
    char name[64];
    snprintf(name, sizeof(name), "predictions%s.csv", suffix);
    struct tu_csv c;
    read_golden(&c, sc->golden, name, 6);
    assert_int_equal(c.rows, 1 + n * 10);
    for (int r = 1; r < c.rows; r++) {
        int i = (int)num(&c, r, 0), rank = (int)num(&c, r, 1), id = (int)num(&c, r, 2);
        const struct attn_token_score *t = &attn_predictions_top(&p, i)[rank - 1];
        char what[256];
        snprintf(what, sizeof(what), "%s %s position %d rank %d", sc->stem, name, i, rank);
        CHECK(t->id == id, "%s: engine id %d, torch %d\n", what, t->id, id);
        CHECK(near(kl, t->logit, num(&c, r, 4), what), "%s: logit %.9g, torch %s\n", what,
              (double)t->logit, c.cells[r][4]);
        CHECK(near_z(kp, t->prob, num(&c, r, 5), Z[i], 1, what), "%s: prob %.9g, torch %s\n", what,
              (double)t->prob, c.cells[r][5]);
    }
    tu_csv_free(&c);
    snprintf(name, sizeof(name), "loss%s.csv", suffix);
    read_golden(&c, sc->golden, name, 5);
    assert_int_equal(c.rows, n); /* positions 0 .. n - 2 */
    for (int r = 1; r < c.rows; r++) {
        int i = (int)num(&c, r, 0);
        char what[256];
        snprintf(what, sizeof(what), "%s %s position %d", sc->stem, name, i);
        CHECK(p.next_id[i] == (int)num(&c, r, 1), "%s: next id %d, torch %s\n", what, p.next_id[i],
              c.cells[r][1]);
        CHECK(near_z(kp, p.next_prob[i], num(&c, r, 3), Z[i], 1, what), "%s: prob %.9g, torch %s\n",
              what, p.next_prob[i], c.cells[r][3]);
        CHECK(near_z(kp == K_PROB ? K_LOSS : K_CHAIN_LOSS, p.next_loss[i], num(&c, r, 4), Z[i], 1,
                     what),
              "%s: loss %.9g, torch %s\n", what, p.next_loss[i], c.cells[r][4]);
        /* the rank agrees with the top's order wherever the next token is in it */
        for (int k = 0; k < p.k; k++)
            if (attn_predictions_top(&p, i)[k].id == p.next_id[i])
                CHECK(p.next_rank[i] == k + 1, "%s: next token at top %d, rank %d\n", what, k + 1,
                      p.next_rank[i]);
    }
    tu_csv_free(&c);
    attn_predictions_free(&p);
    free(Z);
    return bad;
}

/* lens.csv: every layer's top-1 and its probability. */
static int check_lens(const struct attn_net *net, const struct scene_case *sc)
{
    int bad = 0, n = net->model[0].n;
    struct tu_csv c;
    read_golden(&c, sc->golden, "lens.csv", 5);
    assert_int_equal(c.rows, 1 + net->layers * n);
    for (int L = 0; L < net->layers; L++) {
        struct attn_predictions p;
        struct diag err;
        assert_int_equal(attn_predict(&p, net, L, 0, n, 1, 1.0, NULL, &err), 0);
        for (int i = 0; i < n; i++) {
            int r = 1 + L * n + i;
            char what[256];
            snprintf(what, sizeof(what), "%s lens layer %d position %d", sc->stem, L, i);
            assert_int_equal((int)num(&c, r, 0), L);
            assert_int_equal((int)num(&c, r, 1), i);
            CHECK(p.top[i].id == (int)num(&c, r, 2), "%s: engine id %d, torch %s\n", what,
                  p.top[i].id, c.cells[r][2]);
            CHECK(near_z(K_PROB, p.top[i].prob, num(&c, r, 4), logit_scale(net, L, i), 1, what),
                  "%s: prob %.9g, torch %s\n", what, (double)p.top[i].prob, c.cells[r][4]);
        }
        attn_predictions_free(&p);
    }
    tu_csv_free(&c);
    return bad;
}

/* ablate_<mode>[_A_B].csv: every head ablated alone. */
static int check_ablate(struct attn_net *net, const struct scene_case *sc, const char *name)
{
    /* every position: those that score nothing (the last one of a next-token model, a masked
     * LM's non-[MASK]s) count for nothing */
    int bad = 0, n = net->model[0].n, a = 0, b = n;
    enum attn_head_mode mode = strncmp(name, "ablate_zero", 11) == 0 ? HEAD_ZERO : HEAD_MEAN;
    const char *range = name + strlen("ablate_zero");
    if (*range == '_' && sscanf(range, "_%d_%d.csv", &a, &b) != 2)
        fail_msg("%s: cannot read the range of %s", sc->stem, name);
    struct tu_csv c;
    read_golden(&c, sc->golden, name, 5);
    int heads = net->model[0].heads, count = net->layers * heads;
    assert_int_equal(c.rows, 1 + count);
    double clean, *loss = calloc((size_t)count, sizeof(double));
    assert_non_null(loss);
    struct diag err;
    if (attn_ablate_sweep(loss, &clean, net, mode, NULL, a, b, &err) != 0)
        fail_msg("%s: attn_ablate_sweep: %s", sc->stem, err.msg);
    double Z = scene_logit_scale(net);
    for (int r = 1; r < c.rows; r++) {
        int L = (int)num(&c, r, 0), h = (int)num(&c, r, 1);
        assert_string_equal(c.cells[r][2], attn_head_mode_name(mode));
        char what[256];
        snprintf(what, sizeof(what), "%s %s layer %d head %d", sc->stem, name, L, h);
        double got = loss[L * heads + h];
        CHECK(near_z(K_CHAIN_LOSS, got, num(&c, r, 3), Z, 1, what), "%s: loss %.9g, torch %s\n",
              what, got, c.cells[r][3]);
        CHECK(near_z(K_CHAIN_LOSS, got - clean, num(&c, r, 4), Z, 2, what),
              "%s: delta %.9g, torch %s\n", what, got - clean, c.cells[r][4]);
    }
    /* the sweep leaves the net as it was: the clean loss again, bit for bit */
    double again;
    assert_int_equal(attn_mean_loss(&again, net, NULL, a, b, &err), 0);
    CHECK(again == clean, "%s: the loss after the sweep is %.17g, before %.17g\n", sc->stem, again,
          clean);
    free(loss);
    tu_csv_free(&c);
    return bad;
}

static void test_scene(void **state)
{
    const struct scene_case *sc = *state;
    struct attn_scene s;
    struct attn_net net;
    open_scene(&s, &net, sc->scene);
    assert_true(attn_net_has_vocab(&net));
    /* Through every layer: the logits, the predictions, and the ablations, which recompute
     * from a head on. */
    int bad = check_logits(&net, sc, K_CHAIN) +
              check_predictions(&net, sc, 1.0, "", K_CHAIN, K_CHAIN_PROB);
    int count;
    char **names = tu_list_names(sc->golden, ".csv", &count);
    int ablations = 0;
    for (int i = 0; i < count; i++)
        if (strncmp(names[i], "ablate_", 7) == 0) {
            bad += check_ablate(&net, sc, names[i]);
            ablations++;
        }
    tu_free_names(names, count);
    /* From torch's residual streams: the logits, predictions, loss and lens to the digit. */
    use_torch_block_outputs(&net, sc);
    bad += check_logits(&net, sc, K_LOGIT) + check_predictions(&net, sc, 1.0, "", K_LOGIT, K_PROB) +
           check_predictions(&net, sc, 0.7, "_t0.7", K_LOGIT, K_PROB) + check_lens(&net, sc);
    assert_true(ablations >= 2); /* zero and mean */
    printf("interp: %-18s %d layers x %d heads, vocab %d, %d ablation tables\n", sc->stem,
           net.layers, net.model[0].heads, net.model[net.layers - 1].vocab, ablations);
    attn_net_free(&net);
    attn_scene_free(&s);
    if (bad)
        fail_msg("%s: %d differences from PyTorch", sc->stem, bad);
}

/* patch-<pair>/: metrics.csv and patch_<kind>.csv. */
static void test_patch(void **state)
{
    const struct scene_case *sc = *state;
    char clean_path[PATH_LEN + 256], corrupt_path[PATH_LEN + 256];
    snprintf(clean_path, sizeof(clean_path), "%s-clean.yaml", sc->scene);
    snprintf(corrupt_path, sizeof(corrupt_path), "%s-corrupt.yaml", sc->scene);
    /* a family's pair names its scenes, tokens and position (gen_families.py's pair.csv) */
    struct tu_csv pair = {0};
    int position = -1;
    if (sc->family[0]) {
        read_golden(&pair, sc->golden, "pair.csv", 5);
        snprintf(clean_path, sizeof(clean_path), "%s/%.120s.yaml", sc->family, pair.cells[1][0]);
        snprintf(corrupt_path, sizeof(corrupt_path), "%s/%.120s.yaml", sc->family,
                 pair.cells[1][1]);
        position = (int)num(&pair, 1, 4);
    }
    struct attn_scene cs, xs;
    struct attn_net clean, corrupt;
    open_scene(&cs, &clean, clean_path);
    open_scene(&xs, &corrupt, corrupt_path);
    struct tu_csv meta;
    read_golden(&meta, sc->golden, "metrics.csv", 3);
    assert_int_equal(meta.rows, 4);
    /* the tokens the generator's metrics read (gen_interp.py's PAIRS) */
    const char *tokens[2];
    if (sc->family[0]) {
        tokens[0] = pair.cells[1][2];
        tokens[1] = pair.cells[1][3];
    } else if (strcmp(sc->stem, "patch-tiny") == 0) {
        tokens[0] = " cat";
        tokens[1] = " man";
    } else {
        tokens[0] = " tree";
        tokens[1] = " bird";
    }
    struct attn_metric metric = {.kind = METRIC_LOGIT_DIFF, .a = -1, .b = -1, .position = -1};
    struct diag err;
    for (int i = 0; i < 2; i++)
        if (attn_scene_single_token(i ? &metric.b : &metric.a, &cs, tokens[i], &err) != 0)
            fail_msg("%s: %s", sc->stem, err.msg);
    /* where the metrics read by default: the golden's position (BERT: the first [MASK]) */
    if (position >= 0)
        assert_int_equal(attn_metric_position(&clean), position);
    int bad = 0, heads = corrupt.model[0].heads, count = corrupt.layers * heads;
    double Z = scene_logit_scale(&clean), Zx = scene_logit_scale(&corrupt);
    Z = Zx > Z ? Zx : Z;
    double *rec = calloc((size_t)count, sizeof(double));
    assert_non_null(rec);
    for (int r = 1; r < meta.rows; r++) {
        const char *kind = meta.cells[r][0];
        metric.kind = strcmp(kind, "logit_diff") == 0 ? METRIC_LOGIT_DIFF
                      : strcmp(kind, "prob") == 0     ? METRIC_PROB
                                                      : METRIC_LOSS;
        assert_string_equal(kind, attn_metric_name(metric.kind));
        double mc, mx;
        if (attn_patch_sweep(rec, &mc, &mx, &corrupt, &clean, &metric, &err) != 0)
            fail_msg("%s: attn_patch_sweep %s: %s", sc->stem, kind, err.msg);
        char what[256];
        snprintf(what, sizeof(what), "%s %s clean", sc->stem, kind);
        /* every layer computed: a probability as through every layer, a logit difference or
           a loss within two logits' errors */
        enum kind k = metric.kind == METRIC_PROB ? K_CHAIN_PROB : K_METRIC;
        CHECK(near_z(k, mc, num(&meta, r, 1), Z, 1, what), "%s: %.9g, torch %s\n", what, mc,
              meta.cells[r][1]);
        snprintf(what, sizeof(what), "%s %s corrupted", sc->stem, kind);
        CHECK(near_z(k, mx, num(&meta, r, 2), Z, 1, what), "%s: %.9g, torch %s\n", what, mx,
              meta.cells[r][2]);
        char name[64];
        snprintf(name, sizeof(name), "patch_%s.csv", kind);
        struct tu_csv c;
        read_golden(&c, sc->golden, name, 4);
        assert_int_equal(c.rows, 1 + count);
        for (int i = 1; i < c.rows; i++) {
            int L = (int)num(&c, i, 0), h = (int)num(&c, i, 1);
            double got = rec[L * heads + h];
            snprintf(what, sizeof(what), "%s %s layer %d head %d", sc->stem, name, L, h);
            CHECK(near_z(k, mx + got * (mc - mx), num(&c, i, 2), Z, 1, what),
                  "%s: metric %.9g, torch %s\n", what, mx + got * (mc - mx), c.cells[i][2]);
            CHECK(near(K_RECOVERED, got, num(&c, i, 3), what), "%s: recovered %.9g, torch %s\n",
                  what, got, c.cells[i][3]);
        }
        tu_csv_free(&c);
    }
    printf("interp: %-18s %d layers x %d heads, 3 metrics\n", sc->stem, corrupt.layers, heads);
    tu_csv_free(&pair);
    free(rec);
    tu_csv_free(&meta);
    attn_net_free(&clean);
    attn_net_free(&corrupt);
    attn_scene_free(&cs);
    attn_scene_free(&xs);
    if (bad)
        fail_msg("%s: %d differences from PyTorch", sc->stem, bad);
}

/* scored.csv: what the loss scores at each position, exactly (logits.h, attn_loss_targets). */
static int check_scored(const struct attn_net *net, const struct scene_case *sc)
{
    int bad = 0, n = net->model[0].n;
    struct tu_csv c;
    read_golden(&c, sc->golden, "scored.csv", 2);
    assert_int_equal(c.rows, n + 1);
    int *scored = calloc((size_t)n, sizeof(int));
    assert_non_null(scored);
    struct diag err;
    if (attn_loss_targets(scored, net, NULL, 0, &err) != 0)
        fail_msg("%s: attn_loss_targets: %s", sc->stem, err.msg);
    for (int i = 0; i < n; i++)
        CHECK(scored[i] == (int)num(&c, i + 1, 1), "%s: position %d scores %d, torch %s\n",
              sc->stem, i, scored[i], c.cells[i + 1][1]);
    free(scored);
    tu_csv_free(&c);
    return bad;
}

/* A family's case (tests/golden/families/interp/<case>): what the loss scores, zero and mean
 * ablation through every layer, then the lens from torch's residual streams. */
static void test_family(void **state)
{
    const struct scene_case *sc = *state;
    struct attn_scene s;
    struct attn_net net;
    open_scene(&s, &net, sc->scene);
    assert_true(attn_net_has_vocab(&net));
    int bad = check_scored(&net, sc) + check_ablate(&net, sc, "ablate_zero.csv") +
              check_ablate(&net, sc, "ablate_mean.csv");
    use_torch_block_outputs(&net, sc);
    bad += check_lens(&net, sc);
    printf("interp: %-18s %d layers x %d heads, vocab %d%s: lens, scored, 2 ablation tables\n",
           sc->stem, net.layers, net.model[0].heads, net.model[net.layers - 1].vocab,
           net.model[net.layers - 1].masked_lm ? " (masked LM)" : "");
    attn_net_free(&net);
    attn_scene_free(&s);
    if (bad)
        fail_msg("%s: %d differences from PyTorch", sc->stem, bad);
}

/* ---- the engine against itself ---------------------------------------------------------- */

static char induction_scene[PATH_LEN];
static char family_scenes[PATH_LEN];

/* The unembedding's product against its naive twin, from the final_norm stage. */
static void test_logits_naive_twin(void **state)
{
    (void)state;
    struct attn_scene s;
    struct attn_net net;
    open_scene(&s, &net, induction_scene);
    const struct attn_model *last = &net.model[net.layers - 1];
    int n = last->n, V = last->vocab, d = last->d_in;
    float *blas = malloc((size_t)n * V * sizeof(float)),
          *ref = malloc((size_t)n * V * sizeof(float));
    assert_non_null(blas);
    assert_non_null(ref);
    struct diag err;
    assert_int_equal(attn_logits(blas, &net, net.layers - 1, 0, n, &err), 0);
    struct attn_mat_view fin = attn_view(&net.run[net.layers - 1], last, STAGE_FINAL_NORM, 0);
    attn_mm_abt_ref(ref, V, fin.data, fin.stride, last->unembed, d, n, V, d);
    /* Two float32 evaluations of a d-term dot product, in any order, are within
       2 (d + 1) u / (1 - (d + 1) u) of the sum of the terms' magnitudes (Higham 3.1): a bound
       for every BLAS kernel (test_kernels' twin_bound). */
    double largest = 0, twin_share = 0, ku = (d + 1) * 5.9604644775390625e-8;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < V; j++) {
            double mag = 0;
            for (int p = 0; p < d; p++)
                mag += fabs((double)fin.data[(size_t)i * fin.stride + p] *
                            last->unembed[(size_t)j * d + p]);
            size_t at = (size_t)i * V + (size_t)j;
            double diff = fabs((double)blas[at] - ref[at]),
                   share = diff / (2 * ku / (1 - ku) * mag);
            largest = diff > largest ? diff : largest;
            twin_share = diff > 0 && share > twin_share ? share : twin_share;
        }
    printf("interp: logits, OpenBLAS against the naive twin: largest difference %.3g, %.1f%% of "
           "the bound at most\n",
           largest, 100 * twin_share);
    assert_true(twin_share <= 1);
    /* a window of positions is the same rows of the whole, and the lens of the last layer is
     * the model's own prediction */
    struct attn_predictions all, win;
    assert_int_equal(attn_predict(&all, &net, net.layers - 1, 0, n, 5, 1.0, NULL, &err), 0);
    assert_int_equal(attn_predict(&win, &net, net.layers - 1, 20, 3, 5, 1.0, NULL, &err), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(win.next_id[i], all.next_id[20 + i]);
        assert_int_equal(win.next_rank[i], all.next_rank[20 + i]);
        assert_true(fabs(win.next_loss[i] - all.next_loss[20 + i]) < 1e-6);
        for (int k = 0; k < 5; k++)
            assert_int_equal(attn_predictions_top(&win, i)[k].id,
                             attn_predictions_top(&all, 20 + i)[k].id);
    }
    /* the induction head at work: position 20 (' gold', repeated) predicts ' rain' first */
    assert_int_equal(all.next_rank[20], 1);
    assert_true(all.next_prob[20] > 0.9);
    attn_predictions_free(&all);
    attn_predictions_free(&win);
    free(blas);
    free(ref);
    attn_net_free(&net);
    attn_scene_free(&s);
}

/* ablate: in the scene gives what the sweep measures for that head, bit for bit; an edit of
 * ablate: alone reuses the net's numbers (attn_net_compute's shortcut) and agrees with a fresh
 * computation; predicting from the clean run's kept stream (attn_predict_stream) gives the clean
 * loss on the ablated net; removing the ablation restores it. */
static void test_scene_ablation_matches_the_sweep(void **state)
{
    (void)state;
    struct attn_scene s;
    struct attn_net net;
    open_scene(&s, &net, induction_scene);
    int n = net.model[0].n;
    double clean, loss[2];
    struct diag err;
    assert_int_equal(attn_ablate_sweep(loss, &clean, &net, HEAD_MEAN, NULL, 16, n - 1, &err), 0);
    assert_true(loss[1] > clean + 1.0); /* the induction head matters on the repeated half */
    /* The clean run's last residual stream, kept to predict from later (the explorer's
       "before"): copied out of the net's block output. */
    int d = net.model[1].d_in;
    struct attn_mat_view out1 =
        attn_view(&net.run[1], &net.model[1], attn_stage_block_output(&net.model[1]), 0);
    float *stream = malloc((size_t)n * (size_t)d * sizeof(float));
    assert_non_null(stream);
    for (int i = 0; i < n; i++)
        memcpy(stream + (size_t)i * d, out1.data + (size_t)i * out1.stride, (size_t)d * 4);

    assert_int_equal(attn_scene_set_ablation(&s, 1, 0, HEAD_MEAN), 0);
    assert_int_equal(attn_scene_ablation(&s, 1, 0), HEAD_MEAN);
    struct diag_list problems;
    attn_diag_list_init(&problems);
    assert_int_equal(attn_scene_check(&s, &problems), 0);
    attn_diag_list_free(&problems);
    assert_int_equal(attn_net_compute(&net, &s, &err), 0); /* the shortcut: params kept */
    struct attn_net fresh = {0};
    assert_int_equal(attn_net_compute(&fresh, &s, &err), 0);
    double a, b;
    assert_int_equal(attn_mean_loss(&a, &net, NULL, 16, n - 1, &err), 0);
    assert_int_equal(attn_mean_loss(&b, &fresh, NULL, 16, n - 1, &err), 0);
    assert_true(a == loss[1]);
    assert_true(b == loss[1]);
    /* the ablated head hands on its mean: every row of its context the same */
    struct attn_mat_view ctx = attn_view(&net.run[1], &net.model[1], STAGE_CONTEXT, 0);
    for (int i = 1; i < ctx.rows; i++)
        assert_memory_equal(ctx.data + (size_t)i * ctx.stride, ctx.data, ctx.cols * sizeof(float));
    attn_net_free(&fresh);
    /* attn_predict_stream on the ablated net, from the clean stream: the clean numbers. */
    struct attn_predictions p, q;
    assert_int_equal(attn_predict_stream(&p, &net, stream, 16, n - 17, 3, 1.0, NULL, &err), 0);
    double sum = 0;
    for (int i = 0; i < p.count; i++)
        sum += p.next_loss[i];
    assert_true(sum / p.count == clean);
    assert_int_equal(attn_predict(&q, &net, 1, 16, n - 17, 3, 1.0, NULL, &err), 0);
    assert_true(q.next_prob[4] < p.next_prob[4]); /* ablated: " rain" after " gold" gone */
    attn_predictions_free(&p);
    attn_predictions_free(&q);
    assert_int_equal(attn_predict_stream(&p, &net, stream, n - 1, 2, 3, 1.0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "positions"));
    free(stream);

    assert_int_equal(attn_scene_set_ablation(&s, 1, 0, HEAD_KEEP), 0);
    assert_int_equal(s.n_ablate, 0);
    assert_int_equal(attn_net_compute(&net, &s, &err), 0);
    assert_int_equal(attn_mean_loss(&a, &net, NULL, 16, n - 1, &err), 0);
    assert_true(a == clean);
    attn_net_free(&net);
    attn_scene_free(&s);
}

/* Every stage of layer L of two nets, bit for bit (every head of the per-head ones). */
static void assert_same_layer(const struct attn_net *a, const struct attn_net *b, int L)
{
    const struct attn_model *ma = &a->model[L], *mb = &b->model[L];
    enum attn_stage order[STAGE_COUNT];
    int count = attn_stage_order(order, ma);
    for (int i = 0; i < count; i++)
        for (int h = 0; h < (attn_stage_is_per_head(order[i]) ? ma->heads : 1); h++) {
            struct attn_mat_view x = attn_view(&a->run[L], ma, order[i], h);
            struct attn_mat_view y = attn_view(&b->run[L], mb, order[i], h);
            assert_int_equal(x.rows, y.rows);
            assert_int_equal(x.cols, y.cols);
            for (int r = 0; r < x.rows; r++)
                if (memcmp(x.data + (size_t)r * x.stride, y.data + (size_t)r * y.stride,
                           (size_t)x.cols * sizeof(float)) != 0)
                    fail_msg("layer %d, %s, head %d, row %d: the lean compute differs", L,
                             attn_stage_name(order[i]), h, r);
        }
}

/* What a lean compute's visit checks: layer L against the full compute, while it is current. */
struct lean_job {
    const struct attn_net *full;
    int visited;
};

static int check_lean_layer(void *ctx, const struct attn_net *net, int L, struct diag *err)
{
    (void)err;
    struct lean_job *job = ctx;
    assert_int_equal(L, job->visited++);
    assert_same_layer(net, job->full, L);
    return 0;
}

/* The lean compute (heads, export, predict: the layers share their n x n and FFN buffers) gives
 * the full compute's every stage of every layer while the layer is current, then every layer's
 * block output and concatenated heads, and the same predictions, lens and ablation sweep, bit
 * for bit. On the shipped english model (4 blocks of 8 heads) and the induction model (2
 * attention-only layers). */
static void test_lean_compute_matches_full(void **state)
{
    (void)state;
    const char *scenes = env_or("ATTNSCOPE_SCENES_DIR", "scenes");
    char english[PATH_LEN];
    snprintf(english, sizeof(english), "%.3000s/31-english-passage.yaml", scenes);
    const char *paths[] = {english, induction_scene};
    for (int k = 0; k < 2; k++) {
        struct attn_scene s;
        struct attn_net full, lean = {0};
        open_scene(&s, &full, paths[k]);
        struct diag err;
        attn_diag_clear(&err);
        struct lean_job job = {&full, 0};
        assert_int_equal(attn_net_compute_lean(&lean, &s, check_lean_layer, &job, &err), 0);
        assert_int_equal(job.visited, full.layers);
        assert_true(full.layers > 1 && lean.run[1].borrows);
        int n = full.model[0].n, last = full.layers - 1;
        assert_same_layer(&lean, &full, last);
        for (int L = 0; L < full.layers; L++) {
            const struct attn_model *m = &full.model[L];
            enum attn_stage kept[] = {attn_stage_block_output(m), STAGE_CONCAT};
            for (int i = 0; i < 2; i++) {
                struct attn_mat_view x = attn_view(&lean.run[L], m, kept[i], 0);
                struct attn_mat_view y = attn_view(&full.run[L], m, kept[i], 0);
                for (int r = 0; r < x.rows; r++)
                    assert_memory_equal(x.data + (size_t)r * x.stride,
                                        y.data + (size_t)r * y.stride,
                                        (size_t)x.cols * sizeof(float));
            }
            struct attn_predictions p, q; /* the lens at layer L; the predictions at the last */
            assert_int_equal(attn_predict(&p, &lean, L, 0, n, 3, 1.0, NULL, &err), 0);
            assert_int_equal(attn_predict(&q, &full, L, 0, n, 3, 1.0, NULL, &err), 0);
            assert_memory_equal(p.top, q.top, (size_t)n * 3 * sizeof(*p.top));
            assert_memory_equal(p.next_loss, q.next_loss, (size_t)n * sizeof(double));
            attn_predictions_free(&p);
            attn_predictions_free(&q);
        }
        int heads = full.layers * full.model[0].heads;
        double *a = calloc((size_t)heads, sizeof(double));
        double *b = calloc((size_t)heads, sizeof(double));
        double ca, cb;
        assert_int_equal(attn_ablate_sweep(a, &ca, &lean, HEAD_ZERO, NULL, 0, n - 1, &err), 0);
        assert_int_equal(attn_ablate_sweep(b, &cb, &full, HEAD_ZERO, NULL, 0, n - 1, &err), 0);
        assert_true(ca == cb);
        assert_memory_equal(a, b, (size_t)heads * sizeof(double));
        free(a);
        free(b);
        attn_net_free(&lean);
        attn_net_free(&full);
        attn_scene_free(&s);
    }
}

static int refuse_layer_1(void *ctx, const struct attn_net *net, int L, struct diag *err)
{
    (void)ctx;
    (void)net;
    return L == 1 ? attn_diag_set(err, "", "refused at layer %d", L) : 0;
}

/* A visit's error ends the lean compute with that error, and the net is left as it was. */
static void test_lean_compute_stops_at_a_visit_error(void **state)
{
    (void)state;
    struct attn_scene s;
    struct attn_net net;
    open_scene(&s, &net, induction_scene);
    struct attn_model *before = net.model;
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_net_compute_lean(&net, &s, refuse_layer_1, NULL, &err), -1);
    assert_string_equal(err.msg, "refused at layer 1");
    assert_ptr_equal(net.model, before);
    assert_false(net.run[1].borrows);
    attn_net_free(&net);
    attn_scene_free(&s);
}

/* What the engine refuses, as values. */
static void test_errors(void **state)
{
    (void)state;
    struct attn_scene s;
    struct attn_net net;
    open_scene(&s, &net, induction_scene);
    struct attn_predictions p;
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_predict(&p, &net, 1, 0, 1, 5, 0.0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "temperature"));
    assert_int_equal(attn_predict(&p, &net, 1, 30, 5, 5, 1.0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "positions 30 to 34"));
    assert_int_equal(attn_predict(&p, &net, 2, 0, 1, 5, 1.0, NULL, &err), -1);
    double x;
    assert_int_equal(attn_mean_loss(&x, &net, NULL, 5, 5, &err), -1);
    int id;
    assert_int_equal(attn_scene_single_token(&id, &s, " moon", &err), 0);
    char label[64];
    attn_scene_token_label(label, sizeof(label), &s, id);
    assert_string_equal(label, " moon");
    assert_int_equal(attn_scene_single_token(&id, &s, " moonx", &err), -1);
    assert_non_null(strstr(err.msg, "is not a single token"));

    /* answers are a masked LM's */
    int scored[64];
    assert_int_equal(attn_loss_targets(scored, &net, &id, 1, &err), -1);
    assert_non_null(strstr(err.msg, "masked language model"));
    assert_int_equal(attn_net_masks(&net, NULL), 0);
    assert_int_equal(attn_metric_position(&net), net.model[0].n - 1);
    attn_net_free(&net);
    attn_scene_free(&s);

    /* BERT: answers one for all or one each, ids in the vocabulary, words without [CLS] */
    char path[PATH_LEN + 64];
    snprintf(path, sizeof(path), "%s/bert-pair.yaml", family_scenes);
    open_scene(&s, &net, path);
    int first, mat, day, two[3];
    assert_int_equal(attn_net_masks(&net, &first), 2);
    assert_int_equal(first, 6);
    assert_int_equal(attn_metric_position(&net), 6);
    assert_int_equal(attn_scene_single_token(&mat, &s, "mat", &err), 0);
    assert_int_equal(attn_scene_single_token(&day, &s, "day", &err), 0);
    two[0] = mat;
    two[1] = day;
    two[2] = mat;
    assert_int_equal(attn_loss_targets(scored, &net, two, 2, &err), 0);
    assert_int_equal(scored[6], mat);
    assert_int_equal(scored[13], day);
    assert_int_equal(scored[7], -1);
    assert_int_equal(attn_loss_targets(scored, &net, two, 3, &err), -1);
    assert_non_null(strstr(err.msg, "3 answers for 2 [MASK]s"));
    two[0] = 30;
    assert_int_equal(attn_loss_targets(scored, &net, two, 1, &err), -1);
    assert_non_null(strstr(err.msg, "outside the vocabulary"));
    /* the loss counts only the [MASK]s: positions 0 to 5 score nothing */
    assert_int_equal(attn_mean_loss(&x, &net, NULL, 0, 6, &err), -1);
    assert_non_null(strstr(err.msg, "score no token"));
    double one, both;
    assert_int_equal(attn_mean_loss(&one, &net, NULL, 0, 7, &err), 0);
    assert_int_equal(attn_mean_loss(&both, &net, NULL, 0, 16, &err), 0);
    assert_true(one != both);
    attn_net_free(&net);
    attn_scene_free(&s);
    snprintf(path, sizeof(path), "%s/bert-nomask.yaml", family_scenes);
    open_scene(&s, &net, path);
    assert_int_equal(attn_metric_position(&net), -1);
    struct attn_metric metric = {.kind = METRIC_PROB, .a = mat, .position = -1};
    assert_int_equal(attn_metric_eval(&x, &net, &metric, &err), -1);
    assert_non_null(strstr(err.msg, "no [MASK]"));
    assert_int_equal(attn_loss_targets(scored, &net, &mat, 1, &err), -1);
    assert_non_null(strstr(err.msg, "no [MASK] to answer"));
    attn_net_free(&net);
    attn_scene_free(&s);

    /* a scene of drawn embeddings has no vocabulary model */
    attn_scene_init_default(&s);
    memset(&net, 0, sizeof(net));
    assert_int_equal(attn_net_compute(&net, &s, &err), 0);
    assert_false(attn_scene_has_vocab(&s));
    assert_false(attn_net_has_vocab(&net));
    assert_int_equal(attn_predict(&p, &net, 0, 0, 1, 5, 1.0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no vocabulary model"));
    assert_non_null(strstr(attn_scene_why_no_vocab(&s), "no unembedding"));
    attn_net_free(&net);
    attn_scene_free(&s);
}

int main(void)
{
    const char *golden = env_or("ATTNSCOPE_GOLDEN_DIR", "tests/golden");
    const char *scenes = env_or("ATTNSCOPE_SCENES_DIR", "scenes");
    snprintf(induction_scene, sizeof(induction_scene), "%.3000s/29-induction-head.yaml", scenes);
    snprintf(family_scenes, sizeof(family_scenes), "%.3000s/families/scenes", golden);
    char interp[PATH_LEN];
    snprintf(interp, sizeof(interp), "%.3000s/gpt2/interp", golden);
    int count;
    char **names = tu_list_names(interp, "", &count);
    if (!names || count < 8) {
        fprintf(stderr, "interp: %s holds %d goldens; run tests/golden/gen_interp.py\n", interp,
                count);
        return 1;
    }
    char fam_interp[PATH_LEN];
    snprintf(fam_interp, sizeof(fam_interp), "%.3000s/families/interp", golden);
    int fam_count;
    char **fam_names = tu_list_names(fam_interp, "", &fam_count);
    if (!fam_names || fam_count < 4) {
        fprintf(stderr, "interp: %s holds %d goldens; run tests/golden/gen_families.py\n",
                fam_interp, fam_count);
        return 1;
    }
    struct scene_case *cases = calloc((size_t)(count + fam_count), sizeof(*cases));
    struct CMUnitTest *tests = calloc((size_t)(count + fam_count) + 5, sizeof(*tests));
    if (!cases || !tests)
        return 1;
    int n = 0, pairs = 0;
    for (int i = 0; i < count; i++) {
        struct scene_case *c = &cases[n];
        snprintf(c->stem, sizeof(c->stem), "%.120s", names[i]);
        snprintf(c->golden, sizeof(c->golden), "%.3000s/%.120s", interp, names[i]);
        bool patch = strncmp(names[i], "patch-", 6) == 0;
        if (patch) {
            snprintf(c->scene, sizeof(c->scene), "%.3000s/gpt2/patch/%.120s", golden, names[i] + 6);
            pairs++;
        } else {
            snprintf(c->scene, sizeof(c->scene), "%.3000s/gpt2/scenes/%.120s.yaml", golden,
                     names[i]);
            snprintf(c->stages, sizeof(c->stages), "%.3000s/gpt2/goldens/%.120s", golden, names[i]);
            FILE *f = fopen(c->scene, "r");
            if (f) {
                fclose(f);
            } else { /* a shipped scene: its stage goldens are with the book's */
                snprintf(c->scene, sizeof(c->scene), "%.3000s/%.120s.yaml", scenes, names[i]);
                snprintf(c->stages, sizeof(c->stages), "%.3000s/scenes/%.120s", golden, names[i]);
            }
        }
        tests[n] = (struct CMUnitTest){c->stem, patch ? test_patch : test_scene, NULL, NULL, c};
        n++;
    }
    tu_free_names(names, count);
    /* the families: BERT (a masked LM, with [MASK]s and without) and Llama with GQA */
    for (int i = 0; i < fam_count; i++) {
        struct scene_case *c = &cases[n];
        bool patch = strncmp(fam_names[i], "patch-", 6) == 0;
        snprintf(c->stem, sizeof(c->stem), "%.120s", fam_names[i]);
        snprintf(c->golden, sizeof(c->golden), "%.3000s/%.120s", fam_interp, fam_names[i]);
        snprintf(c->family, sizeof(c->family), "%.3000s/families/scenes", golden);
        snprintf(c->scene, sizeof(c->scene), "%.3000s/families/scenes/%.120s.yaml", golden,
                 fam_names[i]);
        snprintf(c->stages, sizeof(c->stages), "%.3000s/families/goldens/%.120s", golden,
                 fam_names[i]);
        pairs += patch;
        tests[n] = (struct CMUnitTest){c->stem, patch ? test_patch : test_family, NULL, NULL, c};
        n++;
    }
    tu_free_names(fam_names, fam_count);
    if (pairs < 3) {
        fprintf(stderr, "interp: %d patching pairs in %s and %s, expected 3\n", pairs, interp,
                fam_interp);
        return 1;
    }
    tests[n++] = (struct CMUnitTest){"logits_naive_twin", test_logits_naive_twin, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"scene_ablation_matches_the_sweep",
                                     test_scene_ablation_matches_the_sweep, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"errors", test_errors, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"lean_compute_matches_full", test_lean_compute_matches_full,
                                     NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"lean_compute_stops_at_a_visit_error",
                                     test_lean_compute_stops_at_a_visit_error, NULL, NULL, NULL};
    int rc = _cmocka_run_group_tests("interp", tests, (size_t)n, NULL, NULL);
    for (int k = 0; k < K_COUNT; k++)
        printf("interp: %s: largest difference %.3g (%.1f%% of its tolerance %.3g) at %s\n",
               kind_names[k], worst_diff[k], 100 * worst[k], worst_tol[k],
               worst_at[k][0] ? worst_at[k] : "-");
    free(cases);
    free(tests);
    return rc;
}
