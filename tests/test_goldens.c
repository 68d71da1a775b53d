/* test_goldens: every scene against the PyTorch goldens of tests/golden/gen_goldens.py.
 *
 * For each scene in scenes/ and tests/fixtures/random/ the scene is loaded with the C loader,
 * resolved and run through the engine, and every CSV under tests/golden/scenes/<stem>/ is
 * compared with the engine's matrix:
 *   - parameters (the CSVs under params/), the dropout keep-mask and the inputs are bit-exact:
 *     they are straight draws of torch's generator (the inputs are one float add of two draws);
 *   - every activation is within |a - b| <= A + 1e-5 * |b| (torch's exp and its BLAS add in
 *     another order), A = max(1e-5, 16 u S): S the largest |scaled score| of the scene (of the
 *     scores themselves, for the scores), u the float32 unit roundoff (docs/exactness.md,
 *     "Tolerances"); -inf must be -inf.
 * The set of golden files must equal the set the engine's model implies (the export's layout:
 * export_writes_stage, so no dropout.csv without dropout), row labels must be the engine's
 * tokens, and the largest difference of each scene is printed.
 *
 * The checkpoint scenes of tests/golden/gpt2 (gen_gpt2.py) run here too; with the argument
 * "families" only those of tests/golden/families (gen_families.py), with their predictions.
 *
 * Environment: ATTNSCOPE_GOLDEN_DIR (tests/golden), ATTNSCOPE_SCENES_DIR (scenes),
 * ATTNSCOPE_FIXTURES (tests/fixtures).
 */
#include <dirent.h>
#include <fnmatch.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "engine/attention.h"
#include "engine/edit.h"
#include "engine/kernels.h"
#include "engine/logits.h"
#include "engine/model.h"
#include "engine/net.h"
#include "engine/scene.h"
#include "engine/stage.h"
#include "export/export.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

#define ABS_TOL   1e-5
#define U32       5.9604644775390625e-8 /* float32's unit roundoff, 2^-24 */
#define CHAIN_TOL 1e-4                  /* |a - b| <= CHAIN_TOL * (1 + |b|), through every layer */
#define REL_TOL   1e-5
#define PATH_LEN  4096
#define MAX_FILES 640

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return (v && *v) ? v : fallback;
}

/* ---- what to compare ----------------------------------------------------------------------- */

enum exactness { TOLERANT, EXACT };

/* One expected golden file: its matrix in the engine, as floats (an owned copy). */
struct expect {
    char rel[256]; /* path relative to the scene's golden folder */
    float *data;   /* rows x cols, owned */
    int rows, cols;
    enum exactness exact;
    /* the tokens its rows are labelled with (repeated per head for the mask), or NULL: the
       queries', or a cross-attention's keys and values the source's */
    char *const *labels;
    int n_labels;
    bool found;
};

struct expect_list {
    struct expect items[MAX_FILES];
    int n;
};

static void add_view(struct expect_list *l, const char *rel, struct attn_mat_view v,
                     enum exactness exact, char *const *labels, int n_labels)
{
    assert_true(l->n < MAX_FILES);
    struct expect *e = &l->items[l->n++];
    memset(e, 0, sizeof(*e));
    snprintf(e->rel, sizeof(e->rel), "%s", rel);
    e->rows = v.rows;
    e->cols = v.cols;
    e->data = malloc((size_t)(v.rows > 0 ? v.rows : 1) * (size_t)(v.cols > 0 ? v.cols : 1) *
                     sizeof(float));
    assert_non_null(e->data);
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < v.cols; j++)
            e->data[i * v.cols + j] = v.data[(size_t)i * v.stride + j];
    e->exact = exact;
    e->labels = labels;
    e->n_labels = n_labels;
}

/* cols [c0, c0 + cols) of a (rows, stride) parameter matrix */
static void add_param(struct expect_list *l, const char *rel, const float *p, int rows, int stride,
                      int c0, int cols)
{
    if (!p)
        return;
    add_view(l, rel, (struct attn_mat_view){p + c0, rows, cols, stride}, EXACT, NULL, 0);
}

/* A norm parameter is written only when it differs from the default (weight 1, bias 0). */
static bool is_default(const float *v, int n, float def)
{
    for (int i = 0; i < n; i++)
        if (v[i] != def)
            return false;
    return true;
}

/* One layer's files, under prefix ("" for a one-layer scene, "layer<L>/" otherwise). */
static void build_layer(struct expect_list *l, const struct attn_scene *s,
                        const struct attn_model *m, const struct attn_run *r, const char *prefix)
{
    char rel[256], pre[256];
#define P(name) (snprintf(pre, sizeof(pre), "%s%s", prefix, name), pre)
    /* BERT's inputs are a LayerNorm of the embeddings: computed, so within the tolerance. */
    /* A sinusoidal table is torch's SLEEF exp/sin/cos (tests/golden/README.md): within 1 ulp of
       the correctly rounded values the engine computes, so compared within the tolerance. */
    add_view(l, P("inputs.csv"), attn_view(r, m, STAGE_INPUTS, 0),
             m->pos_kind == POS_SINUSOIDAL || m->layer > 0 || m->enw ? TOLERANT : EXACT, m->tokens,
             m->n);
    enum attn_stage order[STAGE_COUNT];
    int n_stages = attn_stage_order(order, m);
    for (int h = 0; h < m->heads; h++)
        for (int i = 0; i < n_stages; i++)
            if (attn_stage_is_per_head(order[i]) && export_writes_stage(m, order[i])) {
                snprintf(rel, sizeof(rel), "%shead%d/%s.csv", prefix, h, attn_stage_name(order[i]));
                bool keys = m->cross && attn_stage_is_key_side(order[i]);
                add_view(l, rel, attn_view(r, m, order[i], h), TOLERANT,
                         keys ? m->kv_tokens : m->tokens, keys ? m->n_kv : m->n);
            }
    for (int i = 0; i < n_stages; i++) {
        enum attn_stage st = order[i];
        if (st == STAGE_INPUTS || attn_stage_is_per_head(st) || st == STAGE_FINAL_NORM)
            continue;
        snprintf(rel, sizeof(rel), "%s%s.csv", prefix,
                 st == STAGE_CONCAT ? "context" : attn_stage_name(st));
        add_view(l, rel, attn_view(r, m, st, 0), TOLERANT, m->tokens, m->n);
    }
    if (m->block)
        add_view(l, P("block_output.csv"), attn_view(r, m, attn_stage_block_output(m), 0), TOLERANT,
                 m->tokens, m->n);

    static const char *const names[3] = {"query", "key", "value"};
    /* read at use: a checkpoint's lazy matrices share one widening buffer (model.h) */
    static const size_t w[3] = {offsetof(struct attn_model, wq), offsetof(struct attn_model, wk),
                                offsetof(struct attn_model, wv)};
    const float *b[3] = {m->bq, m->bk, m->bv};
    const int width[3] = {m->D, m->Dkv, m->Dkv};
    if (m->project) {
        if (s->attn.layout == LAYOUT_WRAPPER) {
            for (int h = 0; h < m->heads; h++)
                for (int k = 0; k < 3; k++) {
                    snprintf(rel, sizeof(rel), "%sparams/head%d/W_%s.csv", prefix, h, names[k]);
                    add_param(l, rel, attn_model_param(m, w[k]), m->d_in,
                              attn_model_param_ld(m, w[k], m->D), h * m->head_dim, m->head_dim);
                    snprintf(rel, sizeof(rel), "%sparams/head%d/b_%s.csv", prefix, h, names[k]);
                    add_param(l, rel, b[k], 1, m->D, h * m->head_dim, m->head_dim);
                }
        } else {
            for (int k = 0; k < 3; k++) {
                snprintf(rel, sizeof(rel), "%sparams/W_%s.csv", prefix, names[k]);
                add_param(l, rel, attn_model_param(m, w[k]), m->d_in,
                          attn_model_param_ld(m, w[k], width[k]), 0, width[k]);
                snprintf(rel, sizeof(rel), "%sparams/b_%s.csv", prefix, names[k]);
                add_param(l, rel, b[k], 1, width[k], 0, width[k]);
            }
        }
    }
    int fused = m->D + 2 * m->Dkv;
    add_param(l, P("params/W_qkv.csv"), ATTN_PARAM(m, wqkv), m->d_in, fused, 0, fused);
    add_param(l, P("params/b_qkv.csv"), m->bqkv, 1, fused, 0, fused);
    add_param(l, P("params/W_down.csv"), ATTN_PARAM(m, wdown), m->d_in, m->latent, 0, m->latent);
    add_param(l, P("params/W_key_up.csv"), ATTN_PARAM(m, wkup), m->latent, m->D, 0, m->D);
    add_param(l, P("params/W_value_up.csv"), ATTN_PARAM(m, wvup), m->latent, m->D, 0, m->D);
    add_param(l, P("params/out.csv"), ATTN_PARAM(m, wo), m->D, m->out_dim, 0, m->out_dim);
    add_param(l, P("params/out_bias.csv"), m->bo, 1, m->out_dim, 0, m->out_dim);
    int qw = (int)attn_model_buf_count(m, ATTN_BUF_qnw),
        kw = (int)attn_model_buf_count(m, ATTN_BUF_knw);
    add_param(l, P("params/q_norm_weight.csv"), m->qnw, 1, qw, 0, qw);
    add_param(l, P("params/k_norm_weight.csv"), m->knw, 1, kw, 0, kw);
    if (m->block) {
        add_param(l, P("params/ffn_Wgate.csv"), ATTN_PARAM(m, wg), m->d_in, m->hidden, 0,
                  m->hidden);
        add_param(l, P("params/ffn_bgate.csv"), m->bg, 1, m->hidden, 0, m->hidden);
        add_param(l, P("params/ffn_W1.csv"), ATTN_PARAM(m, w1), m->d_in, m->hidden, 0, m->hidden);
        add_param(l, P("params/ffn_b1.csv"), m->b1, 1, m->hidden, 0, m->hidden);
        add_param(l, P("params/ffn_W2.csv"), ATTN_PARAM(m, w2), m->hidden, m->d_in, 0, m->d_in);
        add_param(l, P("params/ffn_b2.csv"), m->b2, 1, m->d_in, 0, m->d_in);
        const float *norm[6] = {m->n1w, m->n1b, m->n2w, m->n2b, m->pn1w, m->pn2w};
        static const char *const norm_names[6] = {"norm1_weight",      "norm1_bias",
                                                  "norm2_weight",      "norm2_bias",
                                                  "post_norm1_weight", "post_norm2_weight"};
        static const float plain[6] = {1, 0, 1, 0, 1, 1}; /* the defaults: weights 1, biases 0 */
        for (int k = 0; k < 6; k++)
            if (norm[k] && !is_default(norm[k], m->d_in, plain[k])) {
                snprintf(rel, sizeof(rel), "%sparams/%s.csv", prefix, norm_names[k]);
                add_param(l, rel, norm[k], 1, m->d_in, 0, m->d_in);
            }
    }
    if (m->keep) {
        int rows = m->heads * m->n;
        float *mask = malloc((size_t)rows * (size_t)m->n * sizeof(float));
        assert_non_null(mask);
        for (int i = 0; i < rows * m->n; i++)
            mask[i] = m->keep[i] ? 1.0f : 0.0f;
        add_view(l, P("params/dropout_mask.csv"), (struct attn_mat_view){mask, rows, m->n, m->n},
                 EXACT, m->tokens, m->n);
        free(mask);
    }
#undef P
}

/* An encoder-decoder's files, as export writes them: encoder/layer<L>/ and its final norm, each
 * decoder layer's self/ and cross/ (the engine's layers 2L and 2L + 1), the decoder's final
 * norm; no rollout (cross-attention mixes two sequences). */
static void build_encdec(struct expect_list *l, const struct attn_scene *s,
                         const struct attn_net *net)
{
    const struct attn_net *enc = net->encoder;
    char prefix[64];
    for (int L = 0; L < enc->layers; L++) {
        snprintf(prefix, sizeof(prefix), "encoder/layer%d/", L);
        build_layer(l, s->encoder, &enc->model[L], &enc->run[L], prefix);
    }
    const struct attn_model *e0 = &enc->model[0], *last = &net->model[net->layers - 1];
    if (enc->model[enc->layers - 1].final_norm)
        add_view(l, "encoder/final_norm.csv", attn_net_output(enc), TOLERANT, e0->tokens, e0->n);
    for (int L = 0; L < net->layers; L++) {
        snprintf(prefix, sizeof(prefix), "decoder/layer%d/%s/", L / 2,
                 net->model[L].cross ? "cross" : "self");
        build_layer(l, s, &net->model[L], &net->run[L], prefix);
    }
    if (last->final_norm)
        add_view(l, "decoder/final_norm.csv", attn_net_output(net), TOLERANT, last->tokens,
                 last->n);
}

static void build_expectations(struct expect_list *l, const struct attn_scene *s,
                               const struct attn_net *net)
{
    if (net->encoder) {
        build_encdec(l, s, net);
        return;
    }
    for (int L = 0; L < net->layers; L++) {
        char prefix[32] = "";
        if (net->layers > 1)
            snprintf(prefix, sizeof(prefix), "layer%d/", L);
        build_layer(l, s, &net->model[L], &net->run[L], prefix);
    }
    const struct attn_model *last = &net->model[net->layers - 1];
    if (last->final_norm)
        add_view(l, "final_norm.csv",
                 attn_view(&net->run[net->layers - 1], last, STAGE_FINAL_NORM, 0), TOLERANT,
                 last->tokens, last->n);
    /* The attention rollout through every layer, and through layer L in layer<L>/. */
    int n = net->model[0].n;
    float *r = malloc((size_t)n * (size_t)n * sizeof(float));
    assert_non_null(r);
    struct diag err;
    for (int L = 0; L < net->layers; L++) {
        if (attn_net_rollout(r, net, L, &err) != 0)
            fail_msg("attn_net_rollout: %s", err.msg);
        struct attn_mat_view v = {r, n, n, n};
        char rel[64];
        snprintf(rel, sizeof(rel), "layer%d/rollout.csv", L);
        if (net->layers > 1)
            add_view(l, rel, v, TOLERANT, net->model[0].tokens, n);
        if (L == net->layers - 1)
            add_view(l, "rollout.csv", v, TOLERANT, net->model[0].tokens, n);
    }
    free(r);
}

/* Every CSV under dir (relative names), recursively. */
static void list_csv(const char *root, const char *sub, char names[][256], int *count)
{
    char path[PATH_LEN];
    snprintf(path, sizeof(path), "%.3000s%s%.900s", root, *sub ? "/" : "", sub);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char rel[256], full[PATH_LEN];
        snprintf(rel, sizeof(rel), "%.120s%s%.120s", sub, *sub ? "/" : "", de->d_name);
        snprintf(full, sizeof(full), "%.3000s/%.255s", root, rel);
        struct stat st;
        if (stat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            list_csv(root, rel, names, count);
        } else if (strlen(rel) > 4 && strcmp(rel + strlen(rel) - 4, ".csv") == 0 &&
                   *count < MAX_FILES) {
            snprintf(names[*count], 256, "%.255s", rel);
            (*count)++;
        }
    }
    closedir(d);
}

/* ---- predictions --------------------------------------------------------------------------- */

/* predictions.csv (position,rank,id,logit): the top-10 ids at each listed position, in order,
 * and their logits within the activations' tolerance. Returns the number of problems. */
static int check_predictions(const struct attn_net *net, const char *dir, const char *stem)
{
    char path[PATH_LEN], why[PATH_LEN + 64];
    snprintf(path, sizeof(path), "%.3000s/predictions.csv", dir);
    struct tu_csv c;
    if (tu_csv_read(&c, path, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    int bad = 0, checked = 0;
    for (int r = 1; r < c.rows; r++) {
        if (c.ncols[r] != 4) {
            fprintf(stderr, "%s: predictions.csv row %d has %d fields\n", stem, r, c.ncols[r]);
            bad++;
            continue;
        }
        int pos = atoi(c.cells[r][0]), rank = atoi(c.cells[r][1]), id = atoi(c.cells[r][2]);
        float logit = strtof(c.cells[r][3], NULL);
        struct attn_predictions p;
        struct diag err;
        if (attn_predict(&p, net, net->layers - 1, pos, 1, 10, 1.0, NULL, &err) != 0) {
            fprintf(stderr, "%s: attn_predict at %d: %s\n", stem, pos, err.msg);
            bad++;
            continue;
        }
        const struct attn_token_score *t = &p.top[rank - 1];
        double tol = ABS_TOL + REL_TOL * fabs((double)logit);
        if (rank < 1 || rank > p.k || t->id != id || fabs((double)t->logit - logit) > tol) {
            fprintf(stderr,
                    "%s: prediction %d at position %d: engine id %d (%.9g), torch %d (%.9g)\n",
                    stem, rank, pos, rank >= 1 && rank <= p.k ? t->id : -1,
                    rank >= 1 && rank <= p.k ? (double)t->logit : 0.0, id, (double)logit);
            bad++;
        }
        checked++;
        attn_predictions_free(&p);
    }
    tu_csv_free(&c);
    if (checked == 0) {
        fprintf(stderr, "%s: predictions.csv lists nothing\n", stem);
        bad++;
    }
    printf("goldens: %-26s %d predictions checked\n", stem, checked);
    return bad;
}

/* ---- scope ---------------------------------------------------------------------------------- */

/* A golden folder may hold scope.txt: one shell pattern a line (fnmatch, '#' comments), the
 * files it covers. Then only the engine's files matching a pattern need a golden, and every
 * pattern must match at least one of them. The long shipped scenes keep their goldens to what
 * the models/ README promises (attention weights, block outputs, the final norm and the
 * predictions), not 40 MB of every stage. Returns the number of patterns, or -1 if none. */
#define MAX_SCOPE 32
static int read_scope(char pats[MAX_SCOPE][128], const char *dir)
{
    char path[PATH_LEN];
    snprintf(path, sizeof(path), "%.3000s/scope.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        assert_true(n < MAX_SCOPE);
        snprintf(pats[n++], 128, "%.127s", line);
    }
    fclose(f);
    assert_true(n > 0);
    return n;
}

/* ---- one scene ----------------------------------------------------------------------------- */

struct scene_case {
    char path[PATH_LEN];
    char stem[256];
    char golden[PATH_LEN]; /* the folder of its goldens */
    /* results, for the summary */
    double max_abs;   /* largest |engine - torch| over the activations */
    double max_ratio; /* largest |engine - torch| / tolerance: 1 is the limit */
    char worst[320];
    char worst_ratio_at[320]; /* where max_ratio is */
    double scores_max;        /* S: the largest |scaled score| */
    double chain_max;   /* several layers: the last one's output computed through all of them */
    double chain_ratio; /* its largest share of CHAIN_TOL */
    bool predictions;   /* tests/golden/families: predictions.csv must be there */
    int files;
    bool ran;
    int edits_made, edits_kept; /* sentence edits computed, and those that kept rows */
    int edits_kept64;           /* of those, with the engine's own panels (128 rows) */
    int edits_near;             /* of the near passes' edits, those the near path computed */
    double near_worst;          /* their largest share of a stage's scale off a fresh one */
};

static bool same_bits(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

static void fmt_cell(char *out, size_t len, const char *rel, int i, int j)
{
    snprintf(out, len, "%.255s[%d][%d]", rel, i, j);
}

static int nets_differ(struct attn_net *a, struct attn_net *b, const char *stem, const char *edit);

/* An edit of options that draw nothing but the dropout masks reuses the net's numbers
 * (attn_model_resolve_options); it must give every stage of every layer bit for bit what a
 * fresh computation of the edited scene gives. Returns the number of differing matrices. */
static int option_edits_match(struct attn_net *net, const struct attn_scene *s, const char *stem)
{
    bool masks = false;
    for (int L = 0; L <= s->n_more; L++)
        masks |= attn_scene_layer_weights(s, L)->dropout_mask != NULL;
    int bad = 0;
    for (int edit = 0; edit < 8; edit++) {
        struct attn_scene e;
        if (attn_scene_copy(&e, s))
            fail_msg("out of memory");
        /* 6: head 0 of the last layer ablated (zero), 7: and back. With layers, the layers
           before it are kept, not recomputed (net->first_layer): still every stage of every
           layer a fresh computation's. */
        int last = e.layers > 1 ? e.layers - 1 : 0;
        if (edit == 6) {
            struct attn_ablation *ab = realloc(e.ablate, (size_t)(e.n_ablate + 1) * sizeof(*ab));
            if (!ab)
                fail_msg("out of memory");
            ab[e.n_ablate++] = (struct attn_ablation){last, 0, HEAD_ZERO};
            e.ablate = ab;
        }
        if (edit == 0)
            e.attn.causal = !e.attn.causal;
        else if (edit == 1 && !masks)
            e.attn.dropout = e.attn.dropout > 0 ? 0.4 : 0.25;
        else if (edit == 2)
            e.attn.mask_mode =
                e.attn.mask_mode == MASK_BEFORE_SOFTMAX ? MASK_AFTER_SOFTMAX : MASK_BEFORE_SOFTMAX;
        else if (edit == 3)
            e.attn.normalize =
                e.attn.normalize == NORMALIZE_SOFTMAX ? NORMALIZE_SUM : NORMALIZE_SOFTMAX;
        else if (edit == 4) /* split heads cut again: half as many, or twice as many */
            e.attn.heads = e.attn.heads % 2 == 0 ? e.attn.heads / 2 : e.attn.heads * 2;
        else if (edit == 5) /* and back */
            e.attn.heads = s->attn.heads;
        struct diag_list problems;
        attn_diag_list_init(&problems);
        bool valid = attn_scene_check(&e, &problems) == 0;
        attn_diag_list_free(&problems);
        struct attn_net fresh;
        memset(&fresh, 0, sizeof(fresh));
        struct diag err;
        attn_diag_clear(&err);
        if (valid && (attn_net_compute(net, &e, &err) || attn_net_compute(&fresh, &e, &err)))
            fail_msg("%s: edit %d does not compute: %s", stem, edit, err.msg);
        if (valid && edit >= 6 && net->first_layer != last)
            fail_msg("%s: the ablation of layer %d (edit %d) recomputed from layer %d", stem, last,
                     edit, net->first_layer);
        char what[32];
        snprintf(what, sizeof(what), "edit %d", edit);
        if (valid)
            bad += nets_differ(net, &fresh, stem, what);
        attn_net_free(&fresh);
        attn_scene_free(&e);
    }
    return bad;
}

/* Two nets compared matrix by matrix (nets_differ, nets_near): what is off, the first 5 named. */
struct pair_check {
    const char *stem, *edit;
    int bad;      /* matrices off */
    double worst; /* nets_near: the largest share of a stage's scale */
};
typedef void pair_fn(struct pair_check *c, int L, enum attn_stage st, int h, struct attn_mat_view x,
                     struct attn_mat_view y);

/* fn on every stage of every head of every layer of a, with b's matrix of it beside; a matrix of
 * another shape is off. Returns c->bad. */
static int walk_pairs(struct pair_check *c, struct attn_net *a, struct attn_net *b, pair_fn *fn)
{
    for (int L = 0; L < a->layers; L++) {
        enum attn_stage order[STAGE_COUNT];
        int n = attn_stage_order(order, &a->model[L]);
        for (int k = 0; k < n; k++)
            for (int h = 0; h < (attn_stage_is_per_head(order[k]) ? a->model[L].heads : 1); h++) {
                struct attn_mat_view x = attn_view(&a->run[L], &a->model[L], order[k], h);
                struct attn_mat_view y = attn_view(&b->run[L], &b->model[L], order[k], h);
                if (x.rows != y.rows || x.cols != y.cols) {
                    if (c->bad++ < 5)
                        print_error("%s: %s: layer %d %s is %dx%d, fresh %dx%d\n", c->stem, c->edit,
                                    L, attn_stage_name(order[k]), x.rows, x.cols, y.rows, y.cols);
                    continue;
                }
                fn(c, L, order[k], h, x, y);
            }
    }
    return c->bad;
}

static void rows_differ(struct pair_check *c, int L, enum attn_stage st, int h,
                        struct attn_mat_view x, struct attn_mat_view y)
{
    for (int i = 0; i < x.rows; i++)
        if (memcmp(x.data + (size_t)i * x.stride, y.data + (size_t)i * y.stride,
                   (size_t)x.cols * sizeof(float)) != 0) {
            if (c->bad++ < 5)
                print_error("%s: %s: layer %d %s head %d row %d differs from a fresh "
                            "computation\n",
                            c->stem, c->edit, L, attn_stage_name(st), h, i);
            return;
        }
}

/* Every stage of every head of every layer of a and b: the same bits. Returns the number of
 * differing matrices, naming the first few. */
static int nets_differ(struct attn_net *a, struct attn_net *b, const char *stem, const char *edit)
{
    struct pair_check c = {stem, edit, 0, 0};
    return walk_pairs(&c, a, b, rows_differ);
}

/* The near path's tolerance (net.near_ok: an edit's last rows as one block, whose products have
 * other heights than a fresh computation's panels): every cell within NEAR_TOL of its stage's
 * largest |value|, per matrix. One product's element is a dot product of K terms, and two orders
 * of its additions differ by at most 2 gamma_K sum |a_k b_k| ~ 2 K u sum |a||b| (u = 2^-24);
 * sum |a||b| is within a few times the stage's scale for these activations. At K = 64 to 5,632
 * (a head's width to TinyLlama's FFN) the worst case is 8e-6 to 7e-4 of it, a blocked kernel's
 * sqrt(K) u about 5e-7 to 5e-6; the softmax doubles a score's error at most, and each layer adds
 * its own. 1e-4 keeps 25 times the worst measured (4.0e-6 under OPENBLAS_CORETYPE=Prescott,
 * 3.5e-6 on Haswell, SkylakeX and Cooperlake, 0 on Sandybridge; printed below); test_causal
 * derives the same bound for its nets. */
#define NEAR_TOL 1e-4

/* Each cell of x within NEAR_TOL of y's scale (its largest finite |value|). */
static void cells_near(struct pair_check *c, int L, enum attn_stage st, int h,
                       struct attn_mat_view x, struct attn_mat_view y)
{
    double scale = 0;
    for (int i = 0; i < y.rows; i++)
        for (int j = 0; j < y.cols; j++) {
            double v = fabs((double)y.data[(size_t)i * y.stride + j]);
            scale = isfinite(v) && v > scale ? v : scale;
        }
    for (int i = 0; i < x.rows; i++)
        for (int j = 0; j < x.cols; j++) {
            float u = x.data[(size_t)i * x.stride + j];
            float v = y.data[(size_t)i * y.stride + j];
            if (same_bits(u, v))
                continue;
            double d = fabs((double)u - (double)v) / (scale > 0 ? scale : 1);
            if (!(d <= NEAR_TOL) && c->bad++ < 5)
                print_error("%s: %s: layer %d %s head %d [%d][%d]: %.9g, fresh %.9g "
                            "(%.3g of the stage's scale)\n",
                            c->stem, c->edit, L, attn_stage_name(st), h, i, j, (double)u, (double)v,
                            d);
            c->worst = d > c->worst ? d : c->worst;
        }
}

/* Every stage of every head of every layer of a within NEAR_TOL of b's scale (see there).
 * Returns the number of matrices off; *worst: the largest share of the scale. */
static int nets_near(struct attn_net *a, struct attn_net *b, const char *stem, const char *edit,
                     double *worst)
{
    struct pair_check c = {stem, edit, 0, *worst};
    int bad = walk_pairs(&c, a, b, cells_near);
    *worst = c.worst;
    return bad;
}

/* The sentence edits the explorer makes, each from the result of the one before: a letter added
 * to the last word, a word inserted in the middle, the sentence appended to itself until the
 * tokens cross a panel boundary, the last two words deleted (fewer tokens), and back. */
enum { SENTENCE_EDITS = 5 };

/* The text of edit k of text (malloc'ed), or NULL when the sentence is too short for it. */
static char *edited_text(const char *text, int k, int panel, int n_tokens)
{
    size_t len = strlen(text), cap = len * 8 + 64;
    char *t = calloc(1, cap);
    if (!t)
        fail_msg("out of memory");
    if (k == 0) { /* the last word's last byte doubled: "dog" -> "dogg" */
        snprintf(t, cap, "%s%c", text, len ? text[len - 1] : 'a');
    } else if (k == 1) { /* the first word again, after the space nearest the middle */
        const char *mid = strchr(text + len / 2, ' ');
        size_t first = strcspn(text, " ");
        if (!mid || first == 0) {
            free(t);
            return NULL;
        }
        snprintf(t, cap, "%.*s %.*s%s", (int)(mid - text), text, (int)first, text, mid);
    } else if (k == 2) { /* appended to itself: past the next panel boundary (about) */
        int copies = 1 + (panel + 1) / (n_tokens > 0 ? n_tokens : 1);
        if (copies > 7) {
            free(t);
            return NULL;
        }
        int w = snprintf(t, cap, "%s", text);
        for (int c = 0; c < copies; c++)
            w += snprintf(t + w, cap - (size_t)w, " %s", text);
    } else if (k == 3) { /* the last two words deleted */
        snprintf(t, cap, "%s", text);
        for (int c = 0; c < 2; c++) {
            char *sp = strrchr(t, ' ');
            if (!sp || sp == t) {
                free(t);
                return NULL;
            }
            *sp = '\0';
        }
    } else { /* back to the scene's own sentence */
        snprintf(t, cap, "%s", text);
    }
    return t;
}

/* A causal scene's sentence edits keep the rows before the panel of the first changed token
 * (attn_net_compute, attention.h's attn_forward_rows), and any scene's share the parameters when
 * its inputs draw nothing (attn_model_resolve_tokens). Each must give every stage of every layer
 * bit for bit what a fresh computation of the edited scene gives, with the panels at 128 rows and
 * at 4 (so a short sentence has several). Then the same with near_ok (passes 2 and 3): an edit the
 * near path computed (its last rows: the last word changed, the two words deleted and put back)
 * is within NEAR_TOL of the fresh one, and bit for bit once attn_net_forward_exact has run.
 * Returns the number of differing matrices; sc's counters: the edits that kept rows (those with
 * the engine's own panels), those computed, those the near path computed and its worst. */
static int sentence_edits_match(const struct attn_scene *s, const char *stem, struct scene_case *sc)
{
    if (!s->text || s->text_pair) /* a non-causal scene keeps no rows, but shares parameters */
        return 0;
    int bad = 0;
    for (int pass = 0; pass < 4; pass++) {
        attn_row_panel_rows = pass % 2 == 0 ? 4 : 0;
        int panel = attn_row_panel();
        struct attn_net net;
        memset(&net, 0, sizeof(net));
        net.near_ok = pass >= 2;
        struct attn_scene cur;
        struct diag err;
        attn_diag_clear(&err);
        if (attn_scene_copy(&cur, s) || attn_net_compute(&net, &cur, &err))
            fail_msg("%s: does not compute: %s", stem, err.msg);
        for (int k = 0; k < SENTENCE_EDITS; k++) {
            char *text = edited_text(s->text, k, panel, s->n_tokens);
            if (!text)
                continue;
            struct attn_edit ed = {.kind = EDIT_TEXT, .text = text};
            struct attn_scene e;
            struct attn_edit_effects fx;
            if (attn_scene_copy(&e, &cur))
                fail_msg("out of memory");
            struct diag_list problems;
            attn_diag_list_init(&problems);
            bool valid = attn_scene_check_edit(&e, &ed, &err) == 0 &&
                         attn_scene_apply_edit(&e, &ed, &fx, &err) == 0 &&
                         attn_scene_check(&e, &problems) == 0;
            attn_diag_list_free(&problems);
            free(text);
            if (!valid) { /* too long for the checkpoint's positions, ... */
                attn_scene_free(&e);
                continue;
            }
            struct attn_net fresh;
            memset(&fresh, 0, sizeof(fresh));
            /* the explorer's estimate (whether a compute may be stopped) counts the rows kept */
            double est = attn_net_estimate_edit_seconds(&net, &e);
            double whole = attn_net_estimate_seconds(&e);
            if (attn_net_compute(&net, &e, &err) || attn_net_compute(&fresh, &e, &err))
                fail_msg("%s: sentence edit %d does not compute: %s", stem, k, err.msg);
            if (net.kept_rows > 0 && !(est < whole)) {
                print_error("%s: sentence edit %d keeps %d rows of %d, estimated %g s of %g\n",
                            stem, k, net.kept_rows, e.n_tokens, est, whole);
                bad++;
            }
            char what[128];
            snprintf(what, sizeof(what), "sentence edit %d (panels of %d, %d rows of %d kept%s)", k,
                     panel, net.kept_rows, net.model[0].n,
                     net.near_from >= 0 ? ", the near path" : "");
            if (net.near_from >= 0) {
                if (!net.near_ok || net.model[0].n - net.kept_rows > ATTN_NEAR_ROWS) {
                    print_error("%s: %s: near_from %d\n", stem, what, net.near_from);
                    bad++;
                }
                bad += nets_near(&net, &fresh, stem, what, &sc->near_worst);
                sc->edits_near++;
                attn_net_forward_exact(&net);
                bad += net.near_from != -1;
            }
            bad += nets_differ(&net, &fresh, stem, what);
            sc->edits_kept += net.kept_rows > 0 && pass < 2;
            sc->edits_kept64 += net.kept_rows > 0 && pass == 1;
            sc->edits_made += pass < 2;
            attn_net_free(&fresh);
            attn_scene_free(&cur);
            cur = e;
        }
        attn_net_free(&net);
        attn_scene_free(&cur);
    }
    attn_row_panel_rows = 0;
    return bad;
}

/* rows x cols of a golden CSV (its labels aside) into out, as float32; false (why in msg) when it
 * cannot be read or has another shape. */
static bool read_golden(float *out, int rows, int cols, const char *dir, const char *rel, char *msg,
                        size_t size)
{
    char path[PATH_LEN];
    snprintf(path, sizeof(path), "%.3000s/%s", dir, rel);
    struct tu_csv c;
    if (tu_csv_read(&c, path, msg, size) != 0)
        return false;
    bool ok = tu_csv_shape_is(&c, rows, cols);
    for (int i = 0; ok && i < rows; i++)
        for (int j = 0; j < cols; j++)
            out[(size_t)i * cols + j] = strtof(c.cells[i + 1][j + 1], NULL);
    if (!ok)
        snprintf(msg, size, "%s is not %d x %d", rel, rows, cols);
    tu_csv_free(&c);
    return ok;
}

/* The chained result of a stack (v, through every layer) against rel within CHAIN_TOL; the
 * largest difference into sc. Returns the number of problems (printed). */
static int chain_check(struct scene_case *sc, const char *rel, struct attn_mat_view v, int layers)
{
    float *want = malloc((size_t)v.rows * (size_t)v.cols * sizeof(float) + 1);
    char why[PATH_LEN + 64];
    assert_non_null(want);
    int bad = 0;
    if (!read_golden(want, v.rows, v.cols, sc->golden, rel, why, sizeof(why))) {
        print_error("%s: %s\n", sc->stem, why);
        bad++;
    }
    for (int i = 0; !bad && i < v.rows; i++)
        for (int j = 0; j < v.cols; j++) {
            double w = want[(size_t)i * v.cols + j], got = v.data[(size_t)i * v.stride + j];
            double d = fabs(got - w), tol = CHAIN_TOL * (1 + fabs(w));
            sc->chain_max = d > sc->chain_max ? d : sc->chain_max;
            sc->chain_ratio = d / tol > sc->chain_ratio ? d / tol : sc->chain_ratio;
            if (d > tol && bad++ < 10)
                print_error("%s: %s[%d][%d] through %d layers: engine %.9g, torch %.9g\n", sc->stem,
                            rel, i, j, layers, got, w);
        }
    free(want);
    return bad;
}

/* An encoder-decoder: each stack's chained output within CHAIN_TOL, then every layer computed
 * again from torch's input to it, the cross-attention from torch's encoder output, so each
 * layer's stages are held to the one-layer tolerance. Returns the number of problems. */
static int encdec_chain(struct scene_case *sc, struct attn_net *net)
{
    struct attn_net *enc = net->encoder;
    /* each stack's output: its final norm, or (BART, Marian: none) its last block's */
    char enc_out[64], dec_out[64];
    snprintf(enc_out, sizeof(enc_out), "encoder/%s.csv",
             enc->model[enc->layers - 1].final_norm ? "final_norm" : "");
    if (!enc->model[enc->layers - 1].final_norm)
        snprintf(enc_out, sizeof(enc_out), "encoder/layer%d/block_output.csv", enc->layers - 1);
    snprintf(dec_out, sizeof(dec_out), "decoder/final_norm.csv");
    if (!net->model[net->layers - 1].final_norm)
        snprintf(dec_out, sizeof(dec_out), "decoder/layer%d/cross/block_output.csv",
                 (net->layers - 1) / 2);
    int bad = chain_check(sc, enc_out, attn_net_output(enc), enc->layers) +
              chain_check(sc, dec_out, attn_net_output(net), net->layers);
    char rel[128], why[PATH_LEN + 64];
    for (int L = 1; L < enc->layers; L++) {
        struct attn_model *m = &enc->model[L];
        snprintf(rel, sizeof(rel), "encoder/layer%d/inputs.csv", L);
        if (!read_golden(m->x, m->n, m->d_in, sc->golden, rel, why, sizeof(why)) && ++bad)
            print_error("%s: %s\n", sc->stem, why);
        attn_forward(&enc->run[L], m);
    }
    /* the cross-attention layers read it in place: the engine's own buffer, torch's numbers */
    struct attn_mat_view out = attn_net_output(enc);
    if (!read_golden((float *)(uintptr_t)out.data, out.rows, out.cols, sc->golden, enc_out, why,
                     sizeof(why)) &&
        ++bad)
        print_error("%s: %s\n", sc->stem, why);
    for (int L = 0; L < net->layers; L++) {
        struct attn_model *m = &net->model[L];
        snprintf(rel, sizeof(rel), "decoder/layer%d/%s/inputs.csv", L / 2,
                 m->cross ? "cross" : "self");
        if (L > 0 && !read_golden(m->x, m->n, m->d_in, sc->golden, rel, why, sizeof(why)) && ++bad)
            print_error("%s: %s\n", sc->stem, why);
        attn_forward(&net->run[L], m);
    }
    return bad;
}

static void test_scene(void **state)
{
    struct scene_case *sc = *state;
    const char *dir = sc->golden;

    struct attn_scene s;
    struct attn_net net;
    memset(&s, 0, sizeof(s));
    memset(&net, 0, sizeof(net));
    struct diag_list errs;
    attn_diag_list_init(&errs);
    char *source = NULL;
    size_t source_len = 0;
    if (attn_scenefile_load(&s, sc->path, &errs, &source, &source_len) != 0) {
        for (int i = 0; i < errs.n; i++)
            attn_diag_print(stderr, &errs.items[i], source, source_len);
        free(source);
        attn_diag_list_free(&errs);
        fail_msg("%s: the loader refused the scene", sc->path);
    }
    free(source);
    attn_diag_list_free(&errs);
    struct diag err;
    attn_diag_clear(&err);
    if (attn_net_compute(&net, &s, &err) != 0) {
        attn_scene_free(&s);
        fail_msg("%s: attn_net_compute: %s", sc->path, err.msg);
    }
    const struct attn_model *m0 = &net.model[0];
    int problems = 0;
#define PROBLEM(...)                                                                               \
    do {                                                                                           \
        if (problems < 40)                                                                         \
            print_error(__VA_ARGS__);                                                              \
        problems++;                                                                                \
    } while (0)

    /* Several layers: float32 rounding compounds from layer to layer (torch's own float32 run
       is 1.5e-5 from float64 by the third layer), so the chained result, the last layer's
       output, is checked within CHAIN_TOL; then every layer is recomputed from torch's input
       to it (layer<L>/inputs.csv) and checked at the usual tolerance like any scene. */
    if (net.encoder) {
        problems += encdec_chain(sc, &net);
    } else if (net.layers > 1) {
        const struct attn_model *last = &net.model[net.layers - 1];
        char rel[64];
        snprintf(rel, sizeof(rel), "%s", last->final_norm ? "final_norm.csv" : "");
        if (!rel[0])
            snprintf(rel, sizeof(rel), "layer%d/%s.csv", net.layers - 1,
                     last->block ? "block_output" : "output");
        struct attn_mat_view v =
            attn_view(&net.run[net.layers - 1], last,
                      last->final_norm ? STAGE_FINAL_NORM : attn_stage_block_output(last), 0);
        struct tu_csv c;
        char path[PATH_LEN], why[PATH_LEN + 64];
        snprintf(path, sizeof(path), "%.3000s/%s", dir, rel);
        if (tu_csv_read(&c, path, why, sizeof(why)) != 0) {
            PROBLEM("%s\n", why);
        } else if (!tu_csv_shape_is(&c, v.rows, v.cols)) {
            PROBLEM("%s: %s is %d rows, not the engine's %d x %d\n", sc->stem, rel, c.rows - 1,
                    v.rows, v.cols);
            tu_csv_free(&c);
        } else {
            for (int i = 0; i < v.rows; i++)
                for (int j = 0; j < v.cols; j++) {
                    double want = strtod(c.cells[i + 1][j + 1], NULL);
                    double got = v.data[(size_t)i * v.stride + j], d = fabs(got - want);
                    if (d > sc->chain_max)
                        sc->chain_max = d;
                    if (d / (CHAIN_TOL * (1 + fabs(want))) > sc->chain_ratio)
                        sc->chain_ratio = d / (CHAIN_TOL * (1 + fabs(want)));
                    if (d > CHAIN_TOL * (1 + fabs(want)))
                        PROBLEM("%s: %s[%d][%d] through %d layers: engine %.9g, torch %.9g\n",
                                sc->stem, rel, i, j, net.layers, got, want);
                }
            tu_csv_free(&c);
        }
        for (int L = 1; L < net.layers; L++) {
            struct attn_model *m = &net.model[L];
            snprintf(path, sizeof(path), "%.3000s/layer%d/inputs.csv", dir, L);
            if (tu_csv_read(&c, path, why, sizeof(why)) != 0) {
                PROBLEM("%s\n", why);
                continue;
            }
            if (!tu_csv_shape_is(&c, m->n, m->d_in)) {
                PROBLEM("%s: layer%d/inputs.csv is not %d x %d\n", sc->stem, L, m->n, m->d_in);
                tu_csv_free(&c);
                continue;
            }
            for (int i = 0; i < m->n; i++)
                for (int j = 0; j < m->d_in; j++)
                    m->x[(size_t)i * m->d_in + j] = strtof(c.cells[i + 1][j + 1], NULL);
            tu_csv_free(&c);
            attn_forward(&net.run[L], m);
        }
    }

    static struct expect_list l; /* large; one test at a time */
    memset(&l, 0, sizeof(l));
    build_expectations(&l, &s, &net);
    /* A score is a reduction whose absolute error is a few ulp of its terms' magnitudes, about
       those of the largest score of its head; the softmax hands an absolute error of its input
       on to its weights (at most 2 w times it), and every stage after it of the layer sums
       weights times values. So the scores carry an absolute error of a few ulp of the largest
       |score|, R, and what follows the softmax of a few ulp of the largest |scaled score|, S:
       16 u R and 16 u S, at least ABS_TOL. The induction model's sharp heads read scaled scores
       near 30 (R 210); the book's, below 5. */
    double S = 0, R = 0;
    for (int k = 0; k < l.n; k++) {
        const char *base = strrchr(l.items[k].rel, '/');
        base = base ? base + 1 : l.items[k].rel;
        /* what the softmax reads: scaled, or (T5's) scaled + the position bias */
        double *at = strcmp(base, "scaled.csv") == 0 || strcmp(base, "biased.csv") == 0 ? &S
                     : strcmp(base, "scores.csv") == 0                                  ? &R
                                                                                        : NULL;
        for (size_t c = 0; at && c < (size_t)l.items[k].rows * (size_t)l.items[k].cols; c++)
            if (isfinite(l.items[k].data[c]) && fabs(l.items[k].data[c]) > *at)
                *at = fabs(l.items[k].data[c]);
    }
    double abs_tol = 16 * U32 * S > ABS_TOL ? 16 * U32 * S : ABS_TOL;
    double scores_tol = 16 * U32 * R > ABS_TOL ? 16 * U32 * R : ABS_TOL;
    sc->scores_max = S;

    static char names[MAX_FILES][256];
    int n_names = 0;
    list_csv(dir, "", names, &n_names);

    if (n_names == 0)
        PROBLEM("%s: no goldens in %s (run tests/golden/gen_goldens.py)\n", sc->stem, dir);
    bool tokens_seen = false;
    for (int f = 0; f < n_names; f++) {
        bool src = net.encoder && strcmp(names[f], "encoder/tokens.csv") == 0;
        if (strcmp(names[f], "tokens.csv") == 0 || src) { /* position,id,token: ids exactly */
            /* an encoder-decoder's: the target's, and the source's in encoder/ */
            const struct attn_model *tm = src ? &net.encoder->model[0] : m0;
            tokens_seen |= !src;
            char path[PATH_LEN], why[PATH_LEN + 64];
            snprintf(path, sizeof(path), "%.3000s/%s", dir, names[f]);
            struct tu_csv c;
            if (tu_csv_read(&c, path, why, sizeof(why)) != 0) {
                PROBLEM("%s\n", why);
                continue;
            }
            sc->files++;
            if (c.rows != tm->n + 1 || c.ncols[0] != 3 || strcmp(c.cells[0][0], "position") != 0 ||
                strcmp(c.cells[0][1], "id") != 0 || strcmp(c.cells[0][2], "token") != 0)
                PROBLEM("%s: tokens.csv has %d rows (header position,id,token), expected %d\n",
                        sc->stem, c.rows - 1, tm->n);
            for (int i = 0; i + 1 < c.rows && i < tm->n; i++) {
                if (c.ncols[i + 1] != 3) {
                    PROBLEM("%s: tokens.csv row %d has %d fields\n", sc->stem, i, c.ncols[i + 1]);
                    continue;
                }
                if (atoi(c.cells[i + 1][0]) != i || atoi(c.cells[i + 1][1]) != tm->ids[i] ||
                    strcmp(c.cells[i + 1][2], tm->tokens[i]) != 0)
                    PROBLEM("%s: tokens.csv row %d: golden %s,%s,'%s', engine %d,%d,'%s'\n",
                            sc->stem, i, c.cells[i + 1][0], c.cells[i + 1][1], c.cells[i + 1][2], i,
                            tm->ids[i], tm->tokens[i]);
            }
            tu_csv_free(&c);
            continue;
        }
        if (strcmp(names[f], "predictions.csv") == 0) {
            sc->files++;
            problems += check_predictions(&net, dir, sc->stem);
            continue;
        }
        struct expect *e = NULL;
        for (int k = 0; k < l.n; k++)
            if (strcmp(l.items[k].rel, names[f]) == 0)
                e = &l.items[k];
        if (!e) {
            PROBLEM("%s: golden %s has no counterpart in the engine's model\n", sc->stem, names[f]);
            continue;
        }
        e->found = true;
        char path[PATH_LEN], why[PATH_LEN + 64];
        snprintf(path, sizeof(path), "%.3000s/%.255s", dir, names[f]);
        struct tu_csv c;
        if (tu_csv_read(&c, path, why, sizeof(why)) != 0) {
            PROBLEM("%s\n", why);
            continue;
        }
        sc->files++;
        if (c.rows - 1 != e->rows || c.rows < 1 || c.ncols[0] - 1 != e->cols) {
            PROBLEM("%s: %s is %dx%d in the golden, %dx%d in the engine\n", sc->stem, names[f],
                    c.rows - 1, c.rows > 0 ? c.ncols[0] - 1 : 0, e->rows, e->cols);
            tu_csv_free(&c);
            continue;
        }
        if (strcmp(c.cells[0][0], "token") != 0)
            PROBLEM("%s: %s: header starts with '%s', not 'token'\n", sc->stem, names[f],
                    c.cells[0][0]);
        for (int i = 0; i < e->rows; i++) {
            if (c.ncols[i + 1] != e->cols + 1) {
                PROBLEM("%s: %s row %d has %d fields\n", sc->stem, names[f], i, c.ncols[i + 1]);
                continue;
            }
            if (e->labels && strcmp(c.cells[i + 1][0], e->labels[i % e->n_labels]) != 0)
                PROBLEM("%s: %s row %d: golden token '%s', engine token '%s'\n", sc->stem, names[f],
                        i, c.cells[i + 1][0], e->labels[i % e->n_labels]);
            for (int j = 0; j < e->cols; j++) {
                const char *cell = c.cells[i + 1][j + 1];
                char *end;
                float want = strtof(cell, &end);
                float got = e->data[i * e->cols + j];
                char where[320];
                fmt_cell(where, sizeof(where), names[f], i, j);
                if (*cell == '\0' || *end != '\0') {
                    PROBLEM("%s: %s: not a number: '%s'\n", sc->stem, where, cell);
                    continue;
                }
                if (e->exact == EXACT) {
                    if (!same_bits(got, want))
                        PROBLEM("%s: %s: engine %.9g, torch %.9g: must be bit-exact\n", sc->stem,
                                where, (double)got, (double)want);
                    continue;
                }
                if (isinf(want) || isinf(got) || isnan(got)) {
                    if (!(isinf(want) && isinf(got) && signbit(want) == signbit(got)))
                        PROBLEM("%s: %s: engine %.9g, torch %.9g\n", sc->stem, where, (double)got,
                                (double)want);
                    continue;
                }
                double d = fabs((double)got - (double)want);
                const char *file = strrchr(names[f], '/');
                bool scores = strcmp(file ? file + 1 : names[f], "scores.csv") == 0;
                double tol = (scores ? scores_tol : abs_tol) + REL_TOL * fabs((double)want);
                if (d > sc->max_abs) {
                    sc->max_abs = d;
                    snprintf(sc->worst, sizeof(sc->worst), "%.200s (engine %.9g, torch %.9g)",
                             where, (double)got, (double)want);
                }
                if (d / tol > sc->max_ratio) {
                    sc->max_ratio = d / tol;
                    snprintf(sc->worst_ratio_at, sizeof(sc->worst_ratio_at),
                             "%.200s (engine %.9g, torch %.9g)", where, (double)got, (double)want);
                }
                if (d > tol)
                    PROBLEM("%s: %s: engine %.9g, torch %.9g, |diff| %.3g > tolerance\n", sc->stem,
                            where, (double)got, (double)want, d);
            }
        }
        tu_csv_free(&c);
    }
    bool predictions_seen = false;
    for (int f = 0; f < n_names; f++)
        predictions_seen |= strcmp(names[f], "predictions.csv") == 0;
    if (sc->predictions && !predictions_seen)
        PROBLEM("%s: a checkpoint of a family has no predictions.csv golden\n", sc->stem);
    if (!tokens_seen)
        PROBLEM("%s: the engine has tokens.csv but there is no golden for it\n", sc->stem);
    /* last: it recomputes the net for edited scenes (an encoder-decoder's edit computes it
       whole: nothing is kept to compare) */
    if (!net.encoder && option_edits_match(&net, &s, sc->stem) != 0)
        PROBLEM("%s: an edit of dropout, the mask or the heads differs from a fresh "
                "computation\n",
                sc->stem);
    if (!net.encoder && sentence_edits_match(&s, sc->stem, sc) != 0)
        PROBLEM("%s: a sentence edit that kept the rows before it differs from a fresh "
                "computation\n",
                sc->stem);
    /* A causal scene without dropout or ablation keeps rows: its last-word edit at least. */
    bool reusable = s.text && !s.text_pair && s.attn.causal;
    for (int L = 0; L < net.layers; L++)
        reusable &= attn_rows_reusable(&net.model[L]);
    if (reusable && sc->edits_made > 0 && sc->edits_kept == 0 && s.n_tokens >= 8)
        PROBLEM("%s: no sentence edit of this causal scene kept a row\n", sc->stem);
    static char scope[MAX_SCOPE][128];
    int n_scope = read_scope(scope, dir);
    for (int p = 0; p < n_scope; p++) {
        int matched = 0;
        for (int k = 0; k < l.n; k++)
            matched += fnmatch(scope[p], l.items[k].rel, FNM_PATHNAME) == 0;
        if (strcmp(scope[p], "predictions.csv") == 0)
            matched += predictions_seen;
        if (strcmp(scope[p], "tokens.csv") == 0)
            matched += tokens_seen;
        if (matched == 0)
            PROBLEM("%s: scope.txt's %s matches nothing the engine computes\n", sc->stem, scope[p]);
    }
    for (int k = 0; k < l.n; k++) {
        bool in_scope = n_scope < 0;
        for (int p = 0; p < n_scope && !in_scope; p++)
            in_scope = fnmatch(scope[p], l.items[k].rel, FNM_PATHNAME) == 0;
        if (in_scope && !l.items[k].found)
            PROBLEM("%s: the engine has %s but there is no golden for it\n", sc->stem,
                    l.items[k].rel);
        free(l.items[k].data);
    }
    sc->ran = true;
    printf("goldens: %-26s %3d files  max |diff| %.3g (%.1f%% of the tolerance)%s%s\n", sc->stem,
           sc->files, sc->max_abs, 100.0 * sc->max_ratio, sc->max_abs > 0 ? "  at " : "",
           sc->worst);
    if (net.layers > 1 || net.encoder)
        printf("goldens: %-26s through all %d layers: max |diff| %.3g (%.1f%% of the tolerance)\n",
               sc->stem, net.layers, sc->chain_max, 100.0 * sc->chain_ratio);
    fflush(stdout);

    attn_net_free(&net);
    attn_scene_free(&s);
    if (problems)
        fail_msg("%s: %d mismatches with the PyTorch goldens", sc->stem, problems);
#undef PROBLEM
}

/* ---- discovery ----------------------------------------------------------------------------- */

/* Appends the .yaml files of dir (sorted) to the cases. */
static void collect(const char *dir, const char *golden, struct scene_case **cases, int *n,
                    int *cap)
{
    int count;
    char **names = tu_list_names(dir, ".yaml", &count);
    if (!names) {
        fprintf(stderr, "goldens: cannot open %s\n", dir);
        return;
    }
    for (int i = 0; i < count; i++) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *cases = realloc(*cases, (size_t)*cap * sizeof(**cases));
        }
        struct scene_case *c = &(*cases)[(*n)++];
        memset(c, 0, sizeof(*c));
        snprintf(c->path, sizeof(c->path), "%.3000s/%.255s", dir, names[i]);
        snprintf(c->stem, sizeof(c->stem), "%.*s",
                 (int)(strlen(names[i]) - 5) > 250 ? 250 : (int)(strlen(names[i]) - 5), names[i]);
        snprintf(c->golden, sizeof(c->golden), "%.3000s/%.255s", golden, c->stem);
        /* "# goldens: NAME" among the first comments: a twin of NAME (its config.json in the
           other format, the same weights) computes NAME's goldens, and reads those */
        FILE *f = fopen(c->path, "r");
        char line[512], twin[256];
        while (f && fgets(line, sizeof(line), f) && line[0] == '#')
            if (sscanf(line, "# goldens: %255s", twin) == 1)
                snprintf(c->golden, sizeof(c->golden), "%.3000s/%.255s", golden, twin);
        if (f)
            fclose(f);
    }
    tu_free_names(names, count);
}

/* Runs the cases as one cmocka group and prints the largest difference. Frees cases. edits:
 * some sentence edit must keep rows (every group but the encoder-decoders, computed whole). */
static int run_cases(struct scene_case *cases, int n, bool edits)
{
    struct CMUnitTest *tests = calloc((size_t)n, sizeof(*tests));
    if (!tests)
        return 1;
    for (int i = 0; i < n; i++) {
        tests[i].name = cases[i].stem;
        tests[i].test_func = test_scene;
        tests[i].initial_state = &cases[i];
    }
    int rc = _cmocka_run_group_tests("goldens", tests, (size_t)n, NULL, NULL);

    double worst = 0;
    const char *worst_stem = "-";
    for (int i = 0; i < n; i++)
        if (cases[i].ran && cases[i].max_abs > worst) {
            worst = cases[i].max_abs;
            worst_stem = cases[i].stem;
        }
    printf("goldens: %d scenes, largest activation difference %.3g (%s)\n", n, worst, worst_stem);
    /* the shares of their tolerances docs/exactness.md's table records, per BLAS kernel */
    int stage_at = -1, chain_at = -1;
    for (int i = 0; i < n; i++) {
        if (cases[i].ran && (stage_at < 0 || cases[i].max_ratio > cases[stage_at].max_ratio))
            stage_at = i;
        if (cases[i].ran && (chain_at < 0 || cases[i].chain_ratio > cases[chain_at].chain_ratio))
            chain_at = i;
    }
    if (stage_at >= 0)
        printf("goldens: largest share of the stage tolerance %.1f%% (%s %s, S %.3g), through "
               "every layer %.1f%% (%s)\n",
               100.0 * cases[stage_at].max_ratio, cases[stage_at].stem,
               cases[stage_at].worst_ratio_at, cases[stage_at].scores_max,
               100.0 * cases[chain_at].chain_ratio, cases[chain_at].stem);
    int made = 0, kept = 0, kept64 = 0, scenes = 0, near = 0;
    double near_worst = 0;
    for (int i = 0; i < n; i++) {
        near += cases[i].edits_near;
        near_worst = cases[i].near_worst > near_worst ? cases[i].near_worst : near_worst;
        made += cases[i].edits_made;
        kept += cases[i].edits_kept;
        kept64 += cases[i].edits_kept64;
        scenes += cases[i].edits_made > 0;
    }
    printf("goldens: %d sentence edits of %d scenes, %d of them kept rows (%d with panels "
           "of %d), each bit for bit a fresh computation\n",
           made, scenes, kept, kept64, attn_row_panel());
    printf("goldens: %d sentence edits by the near path, within %.3g of a stage's scale of a fresh "
           "computation (tolerance %g), each bit for bit after attn_net_forward_exact\n",
           near, near_worst, NEAR_TOL);
    if (edits && kept == 0)
        rc = 1;
    free(tests);
    free(cases);
    return rc;
}

int main(int argc, char **argv)
{
    /* "families" (goldens-families): only the scenes of tests/golden/families, gen_families.py's
       checkpoints of every family of the registry (pretrained/families.c) but GPT-2, whose
       checkpoints are tests/golden/gpt2's and run below */
    bool families = argc > 1 && strcmp(argv[1], "families") == 0;
    /* "seq2seq" (goldens-seq2seq): the encoder-decoders of tests/golden/seq2seq
       (gen_seq2seq.py) */
    bool seq2seq = argc > 1 && strcmp(argv[1], "seq2seq") == 0;
    const char *scenes = env_or("ATTNSCOPE_SCENES_DIR", "scenes");
    const char *fixtures = env_or("ATTNSCOPE_FIXTURES", "tests/fixtures");
    char random_dir[PATH_LEN];
    snprintf(random_dir, sizeof(random_dir), "%.3000s/random", fixtures);

    const char *golden = env_or("ATTNSCOPE_GOLDEN_DIR", "tests/golden");
    char scene_goldens[PATH_LEN], gpt2_scenes[PATH_LEN], gpt2_goldens[PATH_LEN];
    char fam_scenes[PATH_LEN], fam_goldens[PATH_LEN];
    snprintf(fam_scenes, sizeof(fam_scenes), "%.3000s/families/scenes", golden);
    snprintf(fam_goldens, sizeof(fam_goldens), "%.3000s/families/goldens", golden);
    snprintf(scene_goldens, sizeof(scene_goldens), "%.3000s/scenes", golden);
    snprintf(gpt2_scenes, sizeof(gpt2_scenes), "%.3000s/gpt2/scenes", golden);
    snprintf(gpt2_goldens, sizeof(gpt2_goldens), "%.3000s/gpt2/goldens", golden);

    struct scene_case *cases = NULL;
    int n = 0, cap = 0;
    if (seq2seq) {
        snprintf(fam_scenes, sizeof(fam_scenes), "%.3000s/seq2seq/scenes", golden);
        snprintf(fam_goldens, sizeof(fam_goldens), "%.3000s/seq2seq/goldens", golden);
    }
    if (families || seq2seq) {
        collect(fam_scenes, fam_goldens, &cases, &n, &cap);
        for (int i = 0; i < n; i++)
            cases[i].predictions = true;
        if (n == 0) {
            fprintf(stderr, "goldens: no %s scenes in %s\n", seq2seq ? "seq2seq" : "family",
                    fam_scenes);
            return 1;
        }
        return run_cases(cases, n, !seq2seq);
    }
    collect(scenes, scene_goldens, &cases, &n, &cap);
    int n_book = n;
    collect(random_dir, scene_goldens, &cases, &n, &cap);
    int n_random = n - n_book;
    collect(gpt2_scenes, gpt2_goldens, &cases, &n, &cap); /* checkpoints: tests/golden/gpt2 */
    int n_gpt2 = n - n_book - n_random;
    if (n_book == 0 || n_random == 0 || n_gpt2 == 0) {
        fprintf(stderr, "goldens: found %d scenes in %s, %d in %s and %d in %s; expected all\n",
                n_book, scenes, n_random, random_dir, n_gpt2, gpt2_scenes);
        return 1;
    }

    return run_cases(cases, n, true);
}
