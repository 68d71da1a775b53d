/* interp: predictions, the lens and the rollout, kept between frames (see interp.h). */
#include "explore/interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void interp_cache_free(struct interp_cache *c)
{
    for (int i = 0; i < INTERP_ROWS; i++)
        attn_predictions_free(&c->rows[i].p);
    free(c->lens_top);
    free(c->lens_next);
    free(c->lens_done);
    free(c->rollout);
    free(c->rollout_prev);
    free(c->clean);
    memset(c, 0, sizeof(*c));
}

/* The kept row for (gen, layer, pos, T), or NULL. */
static struct interp_row *find_row(struct interp_cache *c, unsigned long gen, int layer, int pos,
                                   double T)
{
    for (int i = 0; i < INTERP_ROWS; i++) {
        struct interp_row *r = &c->rows[i];
        if (r->valid && r->generation == gen && r->layer == layer && r->pos == pos &&
            r->temperature == T)
            return r;
    }
    return NULL;
}

const struct attn_predictions *interp_predict(struct interp_cache *c, const struct attn_net *net,
                                              unsigned long gen, int layer, int pos, double T,
                                              struct diag *err)
{
    struct interp_row *r = find_row(c, gen, layer, pos, T);
    if (!r) { /* the one asked for longest ago makes room */
        r = &c->rows[0];
        for (int i = 1; i < INTERP_ROWS; i++)
            if (!c->rows[i].valid || (r->valid && c->rows[i].used < r->used))
                r = &c->rows[i];
        attn_predictions_free(&r->p);
        memset(r, 0, sizeof(*r));
        if (attn_predict(&r->p, net, layer, pos, 1, INTERP_TOP, T, NULL, err))
            return NULL;
        c->computed++;
        struct attn_predictions kept = r->p;
        *r = (struct interp_row){.valid = true,
                                 .generation = gen,
                                 .layer = layer,
                                 .pos = pos,
                                 .temperature = T,
                                 .p = kept};
    }
    r->used = ++c->clock;
    return &r->p;
}

/* True when layer m ablates a head. */
static bool layer_ablated(const struct attn_model *m)
{
    for (int h = 0; h < m->heads; h++)
        if (m->head_mode[h] == HEAD_ZERO || m->head_mode[h] == HEAD_MEAN)
            return true;
    return false;
}

bool interp_any_ablated(const struct attn_net *net)
{
    for (int L = 0; L < net->layers; L++)
        for (int h = 0; h < net->model[L].heads; h++)
            if (net->model[L].head_mode[h] != HEAD_KEEP)
                return true;
    return false;
}

int interp_keep_clean(struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                      struct diag *err)
{
    c->clean_valid = false;
    if (!attn_net_has_vocab(net) || !interp_any_ablated(net))
        return 0;
    int last = net->layers - 1, n = net->model[last].n, d = net->model[last].d_in, first = 0;
    while (first < last && !layer_ablated(&net->model[first]))
        first++;
    size_t need = (size_t)n * (size_t)d;
    if (need > c->clean_cap) {
        float *grown = realloc(c->clean, need * sizeof(float));
        if (!grown)
            return attn_diag_set(err, "", "out of memory for the run without ablations");
        c->clean = grown;
        c->clean_cap = need;
    }
    /* Layers first .. last again with every head kept, in a run of their own (one layer's
       buffers, reused layer after layer) fed by layer first's own input: the calls of the
       net's own pass, so its bits, and the net itself untouched (a compute thread may run this
       while the explorer reads the result). */
    float *x = malloc(need * sizeof(float) + 1);
    struct attn_run run;
    memset(&run, 0, sizeof(run));
    if (!x)
        return attn_diag_set(err, "", "out of memory for the run without ablations");
    for (int L = first; L <= last; L++) {
        struct attn_model m = net->model[L]; /* its parameters borrowed, never freed here */
        for (int h = 0; h < m.heads; h++)
            if (m.head_mode[h] == HEAD_ZERO || m.head_mode[h] == HEAD_MEAN)
                m.head_mode[h] = HEAD_KEEP;
        if (L > first) { /* its input: the clean output of the layer before */
            attn_net_handed_on(x, m.d_in, &run, &net->model[L - 1], 0);
            m.x = x;
        }
        if (attn_run_init(&run, &m, err)) {
            free(x);
            attn_run_free(&run);
            return -1;
        }
        attn_forward_rows(&run, &m, 0);
    }
    const struct attn_model *lm = &net->model[last];
    struct attn_mat_view v = attn_view(&run, lm, attn_stage_block_output(lm), 0);
    for (int i = 0; i < n; i++)
        memcpy(c->clean + (size_t)i * d, v.data + (size_t)i * v.stride, (size_t)d * sizeof(float));
    attn_run_free(&run);
    free(x);
    c->clean_valid = true;
    c->clean_generation = gen;
    return 0;
}

/* The probability and rank of token id at pos in the net's own output, at T: a row of logits,
 * its log-sum-exp in double, ranks by logit then id (as attn_predict orders them). */
static int token_in_row(double *prob, int *rank, const struct attn_net *net, int pos, int id,
                        double T, struct diag *err)
{
    int vocab = net->model[net->layers - 1].vocab;
    float *row = malloc((size_t)vocab * sizeof(float));
    if (!row)
        return attn_diag_set(err, "", "out of memory for a row of %d logits", vocab);
    if (attn_logits(row, net, net->layers - 1, pos, 1, err)) {
        free(row);
        return -1;
    }
    double max = -INFINITY, sum = 0;
    for (int j = 0; j < vocab; j++)
        max = row[j] / T > max ? row[j] / T : max;
    for (int j = 0; j < vocab; j++)
        sum += exp(row[j] / T - max);
    *prob = exp(row[id] / T - max) / sum;
    *rank = 1;
    for (int j = 0; j < vocab; j++)
        *rank += row[j] > row[id] || (row[j] == row[id] && j < id);
    free(row);
    return 0;
}

int interp_compare(struct interp_cache *c, const struct attn_net *net, unsigned long gen, int pos,
                   double T, struct interp_compare *out, struct diag *err)
{
    if (!c->clean_valid || c->clean_generation != gen)
        return attn_diag_set(err, "", "no head is ablated");
    int last = net->layers - 1;
    if (!interp_predict(c, net, gen, last, pos, T, err))
        return -1;
    struct interp_row *r = find_row(c, gen, last, pos, T);
    if (!r->compared) {
        struct attn_predictions clean;
        if (attn_predict_stream(&clean, net, c->clean, pos, 1, 1, T, NULL, err))
            return -1;
        c->computed++;
        struct interp_compare *x = &r->compare;
        x->is_next = r->p.next_id[0] >= 0;
        if (x->is_next) { /* the actual next token, in both runs */
            x->id = r->p.next_id[0];
            x->before = clean.next_prob[0];
            x->before_rank = clean.next_rank[0];
            x->after = r->p.next_prob[0];
            x->after_rank = r->p.next_rank[0];
        } else { /* the last position, or a masked LM's [MASK]: what the run without
                    ablations put first (its answer, as ablate's loss scores it) */
            x->id = clean.top[0].id;
            x->before = clean.top[0].prob;
            x->before_rank = 1;
            if (token_in_row(&x->after, &x->after_rank, net, pos, x->id, T, err)) {
                attn_predictions_free(&clean);
                return -1;
            }
            c->computed++;
        }
        attn_predictions_free(&clean);
        r->compared = true;
    }
    *out = r->compare;
    return 0;
}

/* Sizes the lens grid for net and forgets it when the result or the temperature moved on. */
static int lens_reset(struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                      double T, struct diag *err)
{
    int layers = net->layers, n = net->model[0].n;
    if (c->lens_top && c->lens_generation == gen && c->lens_temperature == T &&
        c->lens_layers == layers && c->lens_n == n)
        return 0;
    size_t cells = (size_t)layers * (size_t)n;
    if (!c->lens_top || c->lens_layers != layers || c->lens_n != n) {
        free(c->lens_top);
        free(c->lens_next);
        free(c->lens_done);
        c->lens_top = calloc(cells, sizeof(*c->lens_top));
        c->lens_next = calloc(cells, 1);
        c->lens_done = calloc((size_t)n, 1);
        if (!c->lens_top || !c->lens_next || !c->lens_done) {
            free(c->lens_top);
            free(c->lens_next);
            free(c->lens_done);
            c->lens_top = NULL;
            c->lens_next = c->lens_done = NULL;
            return attn_diag_set(err, "", "out of memory for the lens of %d tokens", n);
        }
    }
    memset(c->lens_done, 0, (size_t)n);
    c->lens_generation = gen;
    c->lens_temperature = T;
    c->lens_layers = layers;
    c->lens_n = n;
    return 0;
}

int interp_lens_fill(struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                     double T, int pos0, int count, struct diag *err)
{
    if (lens_reset(c, net, gen, T, err))
        return -1;
    int n = c->lens_n;
    if (pos0 < 0)
        pos0 = 0;
    if (pos0 + count > n)
        count = n - pos0;
    /* Whole blocks of LENS_BLOCK positions from 0, each one call: a position's numbers are then
       the same bits whatever was shown before it (OpenBLAS may round a product of other rows
       otherwise in the last bit). */
    int last = pos0 + count;
    pos0 -= pos0 % LENS_BLOCK;
    last = last % LENS_BLOCK ? last + LENS_BLOCK - last % LENS_BLOCK : last;
    count = (last < n ? last : n) - pos0;
    for (int i = pos0; i < pos0 + count; i += LENS_BLOCK) {
        int end = i + LENS_BLOCK < pos0 + count ? i + LENS_BLOCK : pos0 + count;
        if (c->lens_done[i])
            continue; /* a block is filled whole */
        for (int L = 0; L < net->layers; L++) {
            struct attn_predictions p;
            if (attn_predict(&p, net, L, i, end - i, 1, T, NULL, err))
                return -1;
            c->computed += (unsigned long)(end - i);
            for (int k = 0; k < end - i; k++) {
                size_t at = (size_t)L * (size_t)n + (size_t)(i + k);
                c->lens_top[at] = p.top[k];
                c->lens_next[at] = p.next_id[k] >= 0 && p.top[k].id == p.next_id[k];
            }
            attn_predictions_free(&p);
        }
        memset(c->lens_done + i, 1, (size_t)(end - i));
    }
    return 0;
}

bool interp_lens_filled(const struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                        double T, int pos0, int count)
{
    int n = net->model[0].n;
    if (!(c->lens_top && c->lens_generation == gen && c->lens_temperature == T &&
          c->lens_layers == net->layers && c->lens_n == n))
        return false;
    for (int i = pos0 < 0 ? 0 : pos0; i < pos0 + count && i < n; i++)
        if (!c->lens_done[i])
            return false;
    return true;
}

const struct attn_token_score *interp_lens_top(const struct interp_cache *c, int layer, int pos,
                                               bool *is_next)
{
    if (!c->lens_top || layer < 0 || layer >= c->lens_layers || pos < 0 || pos >= c->lens_n ||
        !c->lens_done[pos])
        return NULL;
    size_t at = (size_t)layer * (size_t)c->lens_n + (size_t)pos;
    if (is_next)
        *is_next = c->lens_next[at] != 0;
    return &c->lens_top[at];
}

struct attn_mat_view interp_rollout(struct interp_cache *c, struct attn_net *net, unsigned long gen,
                                    int layer, struct diag *err)
{
    int n = net->model[0].n;
    struct attn_mat_view none = {0};
    if (c->rollout_valid && c->rollout_generation == gen && c->rollout_n == n &&
        c->rollout_layer == layer)
        return (struct attn_mat_view){c->rollout, n, n, n};
    size_t nn = (size_t)n * (size_t)n;
    if (!c->rollout_valid || c->rollout_n != n) {
        free(c->rollout);
        free(c->rollout_prev);
        c->rollout = malloc(nn * sizeof(float));
        c->rollout_prev = malloc(nn * sizeof(float));
        c->rollout_n = n;
        if (!c->rollout || !c->rollout_prev) {
            free(c->rollout);
            free(c->rollout_prev);
            c->rollout = c->rollout_prev = NULL;
            c->rollout_valid = false;
            attn_diag_set(err, "", "out of memory for the rollout of %d tokens", n);
            return none;
        }
    }
    /* One layer on from the one kept, else from layer 0. */
    int from = 0;
    if (c->rollout_valid && c->rollout_generation == gen && c->rollout_layer == layer - 1)
        from = layer;
    c->rollout_valid = false;
    for (int L = from; L <= layer; L++) {
        if (L > 0) { /* what was through L - 1 becomes prev */
            float *t = c->rollout_prev;
            c->rollout_prev = c->rollout;
            c->rollout = t;
        }
        if (attn_net_materialise(net, L, err) != 0 || /* stream mode: each layer shown again */
            attn_net_rollout_step(c->rollout, L > 0 ? c->rollout_prev : NULL, net, L, err))
            return none;
    }
    c->rollout_valid = true;
    c->rollout_generation = gen;
    c->rollout_layer = layer;
    return (struct attn_mat_view){c->rollout, n, n, n};
}

struct attn_mat_view interp_rollout_kept(const struct interp_cache *c, unsigned long gen, int layer)
{
    if (!c->rollout_valid || c->rollout_generation != gen || c->rollout_layer != layer)
        return (struct attn_mat_view){0};
    return (struct attn_mat_view){c->rollout, c->rollout_n, c->rollout_n, c->rollout_n};
}

struct attn_mat_view interp_rollout_prev(const struct interp_cache *c, unsigned long gen)
{
    if (!c->rollout_valid || c->rollout_generation != gen || c->rollout_layer == 0)
        return (struct attn_mat_view){0};
    return (struct attn_mat_view){c->rollout_prev, c->rollout_n, c->rollout_n, c->rollout_n};
}
