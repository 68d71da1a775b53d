/* net: the layers of a scene, each fed by the one before (see net.h). */
#include "engine/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "engine/kernels.h"
#include "engine/scene_fields.h"

void attn_net_free(struct attn_net *net)
{
    for (int L = 0; L < net->layers; L++) {
        attn_model_free(&net->model[L]);
        attn_run_free(&net->run[L]);
    }
    free(net->model);
    free(net->run);
    free(net->held);
    free(net->used);
    attn_run_free(&net->scratch);
    if (net->encoder) {
        attn_net_free(net->encoder);
        free(net->encoder);
    }
    if (net->from) {
        attn_scene_free(net->from);
        free(net->from);
    }
    memset(net, 0, sizeof(*net));
}

const struct attn_nonfinite *attn_net_nonfinite(const struct attn_net *net, int *layer)
{
    for (int L = 0; L < net->layers; L++)
        if (net->run[L].nonfinite.found) {
            if (layer)
                *layer = L;
            return &net->run[L].nonfinite;
        }
    return NULL;
}

bool attn_net_nonfinite_text(char *out, size_t size, const struct attn_net *net)
{
    int L = 0;
    const struct attn_nonfinite *f = attn_net_nonfinite(net, &L);
    if (size)
        out[0] = '\0';
    if (!f)
        return false;
    char head[32] = "", token[64] = "";
    if (f->head >= 0)
        snprintf(head, sizeof(head), ", head %d", f->head);
    const struct attn_model *m = &net->model[L];
    if (m->tokens && f->row >= 0 && f->row < m->n && m->tokens[f->row])
        attn_utf8_visible_token(token, sizeof(token), m->tokens[f->row]);
    snprintf(out, size, "%s at layer %d%s, %s, row %d (\u201c%s\u201d), column %d",
             isnan(f->value) ? "nan"
             : f->value > 0  ? "inf"
                             : "-inf",
             L, head, attn_stage_name(f->stage), f->row, token, f->col);
    return true;
}

int attn_net_forward(struct attn_net *net)
{
    return attn_net_forward_from(net, 0);
}

void attn_net_set_head(struct attn_net *net, int layer, int head, enum attn_head_mode mode,
                       const float *patch)
{
    struct attn_model *m = &net->model[layer];
    m->head_mode[head] = (unsigned char)mode;
    if (mode == HEAD_PATCH)
        m->patch = patch;
}

int attn_net_rollout_step(float *out, const float *prev, const struct attn_net *net, int layer,
                          struct diag *err)
{
    if (net->encoder)
        return attn_diag_set(err, "",
                             "attention rollout follows one sequence through its "
                             "layers; an encoder-decoder's cross-attention mixes in the "
                             "source");
    int n = net->model[0].n;
    size_t nn = (size_t)n * (size_t)n;
    float *a = prev ? malloc((nn ? nn : 1) * sizeof(float)) : out;
    if (!a)
        return attn_diag_set(err, "", "out of memory for the rollout of %d tokens", n);
    attn_head_mean(a, &net->run[layer], &net->model[layer], STAGE_WEIGHTS);
    for (int i = 0; i < n; i++) { /* 0.5 A + 0.5 I, the rows renormalised */
        float *row = a + (size_t)i * n;
        double sum = 0;
        for (int j = 0; j < n; j++) {
            row[j] = 0.5f * row[j] + (i == j ? 0.5f : 0.0f);
            sum += row[j];
        }
        for (int j = 0; j < n; j++)
            row[j] = (float)(row[j] / sum);
    }
    if (prev) {
        attn_mm_ab(out, n, a, n, prev, n, NULL, n, n, n); /* A'_layer . (rollout so far) */
        free(a);
    }
    return 0;
}

int attn_net_rollout(float *out, const struct attn_net *net, int last, struct diag *err)
{
    int n = net->model[0].n;
    size_t nn = (size_t)n * (size_t)n;
    float *prev = last > 0 ? malloc((nn ? nn : 1) * sizeof(float)) : NULL;
    if (last > 0 && !prev)
        return attn_diag_set(err, "", "out of memory for the rollout of %d tokens", n);
    int rc = attn_net_rollout_step(out, NULL, net, 0, err);
    for (int L = 1; L <= last && rc == 0; L++) {
        memcpy(prev, out, nn * sizeof(float));
        rc = attn_net_rollout_step(out, prev, net, L, err);
    }
    free(prev);
    return rc;
}

/* The heads of layers first .. layers - 1: the forward pass's progress total. */
static long heads_from(const struct attn_net *net, int first)
{
    long total = 0;
    for (int L = first; L < net->layers; L++)
        total += net->model[L].heads;
    return total;
}

static void held_set(struct attn_net *net, int L, bool v)
{
    __atomic_store_n(&net->held[L], (unsigned char)v, __ATOMIC_RELEASE);
}

bool attn_net_layer_held(const struct attn_net *net, int L)
{
    if (!net->stage_layers)
        return true;
    return net->held && __atomic_load_n(&net->held[L], __ATOMIC_ACQUIRE) != 0;
}

/* How many stage sets net's budget allows, 0 when every layer may keep its own. */
static int stage_sets_for(const struct attn_net *net)
{
    if (!net->stage_budget || net->layers < 3)
        return 0;
    size_t set = attn_run_stage_bytes(&net->model[net->layers - 1]);
    size_t k = set ? net->stage_budget / set : (size_t)net->layers;
    if (k >= (size_t)net->layers)
        return 0;
    return k < 2 ? 2 : (int)k;
}

/* The order a pass takes sets back in: a set whose stages are not whole first, then the least
 * recently used. */
static unsigned long stage_rank(const struct attn_net *net, int L)
{
    return attn_net_layer_held(net, L) ? net->used[L] : 0;
}

/* The layer whose stage set goes first (stage_rank), never stage_pin's nor `except`'s, -1 when
 * none may; *bound gets how many layers but `except` hold a set. */
static int stage_victim(const struct attn_net *net, int except, int *bound)
{
    int victim = -1;
    *bound = 0;
    for (int k = 0; k < net->layers; k++) {
        if (k == except || !attn_run_holds_stages(&net->run[k]))
            continue;
        ++*bound;
        if (k != net->stage_pin && (victim < 0 || stage_rank(net, k) < stage_rank(net, victim)))
            victim = k;
    }
    return victim;
}

/* Layer L given a stage set when it has none: a new one while there are fewer than
 * stage_layers, else the one of the layer ranked first (stage_victim). In full mode every layer
 * has its own. Returns 0, or -1 with err on out-of-memory. */
static int stage_bind(struct attn_net *net, int L, struct diag *err)
{
    struct attn_run *r = &net->run[L];
    if (!attn_run_holds_stages(r)) {
        int bound = 0, victim = net->stage_layers ? stage_victim(net, L, &bound) : -1;
        if (victim >= 0 && bound >= net->stage_layers) {
            held_set(net, victim, false);
            if (net->run[victim].cap_n >= r->cap_n) /* else too small: made again below */
                attn_run_move_stages(r, &net->run[victim], &net->model[L]);
            else
                attn_run_drop_stages(&net->run[victim], &net->model[victim]);
        }
        if (!attn_run_holds_stages(r) && attn_run_alloc_stages(r, &net->model[L], err) != 0)
            return -1;
    }
    net->used[L] = ++net->clock;
    return 0;
}

int attn_net_materialise(struct attn_net *net, int L, struct diag *err)
{
    if (!net->stage_layers || L < 0 || L >= net->layers)
        return 0;
    if (attn_net_layer_held(net, L) && attn_run_holds_stages(&net->run[L])) {
        net->used[L] = ++net->clock;
        return 0;
    }
    /* the scratch has the last layer's shape, its final norm too: it fits every layer */
    if (stage_bind(net, L, err) != 0 ||
        attn_run_init_stream(&net->scratch, &net->model[net->layers - 1], false, err) != 0)
        return -1;
    struct attn_run tmp = net->run[L];
    attn_run_kept_from(&tmp, &net->scratch, &net->model[L]);
    tmp.progress = NULL;
    attn_forward(&tmp, &net->model[L]);
    held_set(net, L, true);
    return 0;
}

void attn_net_handed_on(float *x, int d, const struct attn_run *r, const struct attn_model *m,
                        int first_row)
{
    struct attn_mat_view v = attn_view(r, m, attn_stage_block_output(m), 0);
    for (int i = first_row; i < v.rows; i++)
        memcpy(x + (size_t)i * (size_t)d, v.data + (size_t)i * v.stride, (size_t)d * sizeof(float));
}

/* Layer L's forward pass from row first_row on (attn_forward_rows, or attn_forward_rows_near
 * when near), fed by layer L - 1's output; *done heads of total reported before it. Returns 0,
 * or -1 when the sink's stop flag ended it. */
static int forward_layer(struct attn_net *net, int L, int first_row, bool near, long *done,
                         long total)
{
    struct attn_model *m = &net->model[L];
    /* Stream mode: the rows before first_row of a set just taken are another layer's, so the
       layer holds its stages whole only when it held them before or computes every row. */
    bool whole =
        first_row == 0 || (attn_net_layer_held(net, L) && attn_run_holds_stages(&net->run[L]));
    if (net->stage_layers)
        held_set(net, L, false);
    struct diag oom; /* a set not made reads as a stop: the pass is partial, recomputed whole */
    if (stage_bind(net, L, &oom) != 0)
        return -1;
    net->run[L].progress = net->progress.step ? &net->progress : NULL;
    net->run[L].progress_base = *done;
    net->run[L].progress_total = total;
    *done += m->heads;
    if (L > 0) /* layer L's input is what layer L - 1 hands on */
        attn_net_handed_on(m->x, m->d_in, &net->run[L - 1], &net->model[L - 1], first_row);
    (near ? attn_forward_rows_near : attn_forward_rows)(&net->run[L], m, first_row);
    net->run[L].progress = NULL; /* it points into net, which a caller may move */
    if (net->run[L].stopped)
        return -1;
    if (net->stage_layers && whole)
        held_set(net, L, true);
    return 0;
}

int attn_net_forward_from(struct attn_net *net, int first)
{
    return attn_net_forward_layers(net, first, 0);
}

int attn_net_forward_rows(struct attn_net *net, int first_row)
{
    return attn_net_forward_layers(net, 0, first_row);
}

/* attn_net_forward_layers, or with near the near path's block of rows first_row .. n - 1
 * (first_row not rounded; the caller says near_from). */
static int forward_net(struct attn_net *net, int first, int first_row, bool near)
{
    net->partial = true;                      /* until every layer is through */
    for (int L = first; L < net->layers; L++) /* rows are kept in every layer, or in none */
        if (!attn_rows_reusable(&net->model[L]))
            first_row = 0;
    int panel = attn_row_panel();
    if (first_row > 0 && !near)
        first_row -= first_row % panel;
    long total = heads_from(net, first), done = 0;
    /* Stopped half-way, the net keeps layers 0 .. layers_ready - 1 whole and every layer's rows
       before first_row as they were (kept_rows reads it). */
    net->pending_row = first == 0 ? first_row : 0;
    __atomic_store_n(&net->layers_ready, first, __ATOMIC_RELEASE);
    progress_report(&net->progress, 0, total); /* step 0: it starts */
    for (int L = first; L < net->layers; L++) {
        if (forward_layer(net, L, first_row, near, &done, total) != 0)
            return -1;
        __atomic_store_n(&net->layers_ready, L + 1, __ATOMIC_RELEASE);
    }
    net->partial = false;
    /* every layer from the near rows' panel on again: the panels' own bits */
    if (!near && first == 0 && net->near_from >= 0 &&
        first_row <= net->near_from - net->near_from % panel)
        net->near_from = -1;
    return 0;
}

int attn_net_forward_layers(struct attn_net *net, int first, int first_row)
{
    return forward_net(net, first, first_row, false);
}

int attn_net_forward_exact(struct attn_net *net)
{
    if (net->near_from < 0 || net->layers <= 0 || !net->run)
        return 0;
    /* the near rows are rewritten in place: a stop half-way would leave neither result */
    const volatile sig_atomic_t *stop = net->progress.stop;
    net->progress.stop = NULL;
    attn_net_forward_rows(net, net->near_from);
    net->progress.stop = stop;
    return 0;
}

static bool same_seed(struct attn_opt_seed a, struct attn_opt_seed b)
{
    return a.set == b.set && (!a.set || a.value == b.value);
}

/* Split heads cut the same d_out columns whatever their number, so a new count draws nothing.
 * The wrapper's per-head Linears, fused_heads' per-head chunks, GQA's and MLA's widths do, and
 * so does out_proj where its default follows the count (none for one head, as the book's). */
static bool heads_recut(const struct attn_scene *a, const struct attn_scene *b)
{
    const struct attn_config *x = &a->attn, *y = &b->attn;
    return x->heads == y->heads ||
           (x->layout == LAYOUT_SPLIT && y->layout == LAYOUT_SPLIT && x->qkv != QKV_FUSED_HEADS &&
            x->kv_heads == 0 && y->kv_heads == 0 && x->kv_latent == 0 && y->kv_latent == 0 &&
            attn_scene_eff_out_proj(a) == attn_scene_eff_out_proj(b));
}

/* True when a's and b's options make the same parameters, embeddings and positions: they
 * differ at most in options that draw nothing but the dropout masks, or in the number of split
 * heads. The owned fields the parameters are read from (the sentence, matrices, every layer's
 * weights, the backing) are scene_fields.h's rows, which the callers compare. */
static bool same_options(const struct attn_scene *a, const struct attn_scene *b)
{
    const struct attn_config *x = &a->attn, *y = &b->attn;
    const struct attn_block *p = &a->block, *q = &b->block;
    if (a->seed != b->seed || a->layers != b->layers || a->embed.kind != b->embed.kind ||
        a->embed.dim != b->embed.dim || !same_seed(a->embed.seed, b->embed.seed) ||
        a->pos.kind != b->pos.kind || a->pos.max_len != b->pos.max_len ||
        !same_seed(a->pos.seed, b->pos.seed) || a->pos.base != b->pos.base ||
        a->pos.pairs != b->pos.pairs || a->pos.offset != b->pos.offset ||
        a->pos.rotary_dims != b->pos.rotary_dims || x->projection != y->projection ||
        x->d_out != y->d_out || !heads_recut(a, b) || x->layout != y->layout ||
        x->qkv_bias != y->qkv_bias || x->out_proj != y->out_proj || x->out_bias != y->out_bias ||
        !same_seed(x->seed, y->seed) || x->qkv != y->qkv || x->kv_heads != y->kv_heads ||
        x->kv_latent != y->kv_latent || p->on != q->on || p->order != q->order ||
        p->norm != q->norm || p->norm_eps != q->norm_eps || p->ffn_hidden != q->ffn_hidden ||
        p->activation != q->activation || !same_seed(p->ffn_seed, q->ffn_seed) ||
        p->ffn_skip != q->ffn_skip || p->final_norm != q->final_norm || x->window != y->window ||
        x->qk_norm != y->qk_norm || x->qk_norm_whole != y->qk_norm_whole ||
        !attn_rope_scaling_same(a, b) ||
        memcmp(x->window_off, y->window_off, sizeof(x->window_off)) != 0 ||
        x->scale_by_layer != y->scale_by_layer || a->masked_lm != b->masked_lm)
        return false;
    /* the scale's kind decides scaled; the divisor only divides: both are options */
    return true;
}

/* True when a and b make the same parameters, embeddings and positions. */
static bool same_params(const struct attn_scene *a, const struct attn_scene *b)
{
    return same_options(a, b) && attn_scene_same_fields(a, b, FIELDS_PARAMS);
}

/* The rows of every layer a sentence edit from net's result to the fresh models may keep: those
 * before the first token whose inputs changed (layer 0's x, RoPE's angles; the panel path keeps
 * those before its panel). 0 when nothing is kept: not a causal net computed in panels, another
 * shape, other parameters or options, or net's result incomplete. */
static int unchanged_rows(const struct attn_net *net, const struct attn_model *fresh, int layers)
{
    if (!net->from || net->layers != layers)
        return 0;
    for (int L = 0; L < layers; L++)
        if (!net->run[L].k || net->run[L].n != net->model[L].n ||
            !attn_rows_reusable(&net->model[L]) || !attn_rows_reusable(&fresh[L]) ||
            !attn_model_same_but_tokens(&net->model[L], &fresh[L]))
            return 0;
    const struct attn_model *a = &net->model[0], *b = &fresh[0];
    int n = a->n < b->n ? a->n : b->n, d = a->d_in, half = a->rope ? a->rope_dims / 2 : 0;
    /* A pass stopped half-way (an edit typed while it ran) left the rows before the one it
       started at as they were, in every layer. */
    if (net->partial && net->pending_row < n)
        n = net->pending_row;
    int p = 0;
    while (p < n && memcmp(a->x + (size_t)p * d, b->x + (size_t)p * d, (size_t)d * 4) == 0 &&
           (!half || (memcmp(a->rope_cos + (size_t)p * half, b->rope_cos + (size_t)p * half,
                             (size_t)half * 4) == 0 &&
                      memcmp(a->rope_sin + (size_t)p * half, b->rope_sin + (size_t)p * half,
                             (size_t)half * 4) == 0)))
        p++;
    return p;
}

/* What a sentence edit keeps of net's result when rows 0 .. p - 1 are unchanged (n tokens
 * now), and the near_from of the result: -1 on the panel path, which keeps no near row (it
 * keeps the rows before the panel of the earliest, or recomputes from there). The near path
 * (net->near_ok, n - p <= ATTN_NEAR_ROWS) keeps rows 0 .. p - 1; its block is exact when it
 * starts a panel (it is the panel's own last panel), and the earlier near rows stay near. */
static int kept_for_edit(const struct attn_net *net, int p, int n, int *near_from)
{
    int panel = attn_row_panel(), old = p > 0 ? net->near_from : -1;
    if (net->near_ok && p > 0 && n - p <= ATTN_NEAR_ROWS) {
        int block = p % panel != 0 ? p : -1; /* kept rows of a partial panel too (p = n) */
        *near_from = old < 0 ? block : block < 0 || old < block ? old : block;
        return p;
    }
    *near_from = -1;
    int kept = p - p % panel;
    return old >= 0 && old - old % panel < kept ? old - old % panel : kept;
}

/* True when layer L's pass from a is b's, bit for bit, given the same input: the same shape,
 * options, parameters, ablations and dropout masks; for layer 0 the same inputs too. */
static bool same_pass(const struct attn_model *a, const struct attn_model *b)
{
    if (a->n != b->n || !attn_model_same_but_tokens(a, b))
        return false;
    size_t n = (size_t)a->n, half = a->rope ? (size_t)a->rope_dims / 2 : 0;
    if (a->keep && a->keep != b->keep && /* the masks drawn again, maybe alike */
        memcmp(a->keep, b->keep, (size_t)a->heads * n * n) != 0)
        return false;
    if (a->layer > 0) /* its input is the layer before's output */
        return true;
    return (a->x == b->x || memcmp(a->x, b->x, n * (size_t)a->d_in * sizeof(float)) == 0) &&
           (!half || ((a->rope_cos == b->rope_cos ||
                       memcmp(a->rope_cos, b->rope_cos, n * half * sizeof(float)) == 0) &&
                      (a->rope_sin == b->rope_sin ||
                       memcmp(a->rope_sin, b->rope_sin, n * half * sizeof(float)) == 0)));
}

/* The first layer an edit of the options changes (fresh resolved from net's models by
 * attn_model_resolve_options): the layers before it compute what they computed, so an ablation
 * of layer 9 recomputes layers 9 on. At most the layers net has complete; `layers` when none
 * changes. */
static int first_changed_layer(const struct attn_net *net, const struct attn_model *fresh,
                               int layers)
{
    int done = net->partial ? net->layers_ready : layers, L = 0;
    for (int k = 0; k < layers; k++) /* every run of net whole and of its model's shape */
        if (!net->run[k].k || net->run[k].n != net->model[k].n)
            return 0;
    while (L < done && same_pass(&net->model[L], &fresh[L]))
        L++;
    return L;
}

/* True when b is a with another sentence: the tokens, their ids and types, the rows given for
 * them, the text. */
static bool same_but_sentence(const struct attn_scene *a, const struct attn_scene *b)
{
    return same_options(a, b) && attn_scene_same_fields(a, b, FIELDS_PARAMS_BUT_SENTENCE);
}

void attn_net_layer_name(char *out, size_t size, const struct attn_net *net, int L, bool brief)
{
    if (net->is_encoder)
        snprintf(out, size, brief ? "E%d" : "encoder layer %d", L);
    else if (!net->encoder || L < 0 || L >= net->layers)
        snprintf(out, size, brief ? "L%d" : "layer %d", L);
    else
        snprintf(out, size, brief ? "L%d %s" : "decoder layer %d, %s-attention", L / 2,
                 net->model[L].cross ? "cross" : "self");
}

size_t attn_net_square_floats(const struct attn_net *net)
{
    size_t most = 0;
    for (int L = 0; L < net->layers; L++) {
        size_t cells = (size_t)net->model[L].n * (size_t)net->model[L].n_kv;
        most = cells > most ? cells : most;
    }
    return most;
}

struct attn_mat_view attn_net_output(const struct attn_net *net)
{
    const struct attn_model *m = &net->model[net->layers - 1];
    const struct attn_run *r = &net->run[net->layers - 1];
    return attn_view(r, m, m->final_norm ? STAGE_FINAL_NORM : attn_stage_block_output(m), 0);
}

/* An encoder-decoder's source side, computed whole (the decoder's cross-attention reads every
 * row of its output), into fresh->encoder; every cross-attention layer of fresh's models then
 * reads its keys and values from that output. Nothing when s has no encoder. */
static int attach_encoder(struct attn_net *fresh, const struct attn_scene *s, struct diag *err)
{
    if (!s->encoder)
        return 0;
    struct attn_net *enc = calloc(1, sizeof(*enc));
    if (!enc)
        return attn_diag_set(err, "", "out of memory for the encoder");
    if (attn_net_compute(enc, s->encoder, err) != 0) {
        free(enc);
        return -1;
    }
    enc->is_encoder = true;
    struct attn_mat_view out = attn_net_output(enc);
    for (int L = 0; L < fresh->layers; L++)
        if (fresh->model[L].cross) {
            if (out.rows != fresh->model[L].n_kv || out.cols != fresh->model[L].d_in ||
                out.stride != out.cols) {
                attn_net_free(enc);
                free(enc);
                return attn_diag_set(err, "",
                                     "the encoder's output (%d x %d) is not what layer "
                                     "%d's cross-attention reads",
                                     out.rows, out.cols, L);
            }
            fresh->model[L].kv_x = out.data;
        }
    fresh->encoder = enc;
    return 0;
}

/* Undoes net_begin, for a net whose models were never resolved. */
static void net_unbegin(struct attn_net *fresh)
{
    free(fresh->model);
    free(fresh->run);
    free(fresh->held);
    free(fresh->used);
}

/* *fresh = a net of s's layers, their models and runs zeroed, told of progress as net is. */
static int net_begin(struct attn_net *fresh, const struct attn_net *net, const struct attn_scene *s,
                     struct diag *err)
{
    int layers = s->layers > 1 ? s->layers : 1;
    *fresh = (struct attn_net){.layers = layers,
                               .progress = net->progress,
                               .near_ok = net->near_ok,
                               .near_from = -1,
                               .stage_budget = net->stage_budget,
                               .stage_pin = net->stage_pin,
                               .model = calloc((size_t)layers, sizeof(struct attn_model)),
                               .run = calloc((size_t)layers, sizeof(struct attn_run)),
                               .held = calloc((size_t)layers, 1),
                               .used = calloc((size_t)layers, sizeof(unsigned long))};
    if (!fresh->model || !fresh->run || !fresh->held || !fresh->used) {
        net_unbegin(fresh);
        return attn_diag_set(err, "", "out of memory for %d layers", layers);
    }
    return 0;
}

/* Everything of a compute but the forward pass: *fresh holds s's models and runs, sized, with the
 * rows a sentence edit keeps (fresh->kept_rows) moved over or copied. fresh->shares: its models
 * borrow net's parameters until attn_net_commit. On failure net is as it was. */
static int compute_begin(struct attn_net *fresh, struct attn_net *net, const struct attn_scene *s,
                         struct diag *err)
{
    if (net_begin(fresh, net, s, err) != 0)
        return -1;
    int layers = fresh->layers;
    /* An encoder-decoder is computed whole at every edit: its cross-attention reads the encoder's
       new output (docs/scene-format.md says what an edit of it costs). */
    bool whole = s->encoder != NULL || (net->from && net->from->encoder);
    bool reuse = !whole && net->from && net->layers == layers && same_params(net->from, s);
    /* A sentence edit shares the parameters too, when the inputs draw nothing. */
    bool retext = !whole && !reuse && net->from && net->layers == layers &&
                  same_but_sentence(net->from, s) &&
                  attn_model_resolve_tokens(fresh->model, net->model, layers, s, err) == 0;
    attn_diag_clear(err);
    int rc = reuse    ? attn_model_resolve_options(fresh->model, net->model, layers, s,
                                                   &net->after_params, err)
             : retext ? 0
                      : attn_model_resolve_layers_rng(fresh->model, layers, s, &fresh->after_params,
                                                      err);
    if (rc) {
        net_unbegin(fresh);
        return -1;
    }
    if (attach_encoder(fresh, s, err) != 0) {
        for (int L = 0; L < layers; L++)
            attn_model_free(&fresh->model[L]);
        net_unbegin(fresh);
        return -1;
    }
    fresh->shares = reuse || retext;
    fresh->stage_layers = stage_sets_for(fresh);
    if (fresh->shares) /* nothing was drawn: the generator is where it was */
        fresh->after_params = net->after_params;
    /* A sentence edit of a causal net: the rows before the first changed token's panel (on the
       near path, before that token) are the previous result's, moved over with its buffers or
       copied into the new ones. */
    int near_from = -1;
    int kept = reuse || whole ? 0
                              : kept_for_edit(net, unchanged_rows(net, fresh->model, layers),
                                              fresh->model[0].n, &near_from);
    /* An edit of the options (an ablation above all) keeps the layers before the first it
       changes, with their stages, moved over or copied: their near rows too. */
    int first = reuse ? first_changed_layer(net, fresh->model, layers) : 0;
    if (net->stage_layers && !fresh->stage_layers) /* the stages of most layers are not kept */
        kept = first = 0;
    if (first > 0)
        near_from = net->near_from;

    if (!(fresh->from = calloc(1, sizeof(*fresh->from))) || attn_scene_copy(fresh->from, s)) {
        free(fresh->from);
        fresh->from = NULL; /* only the shortcut is lost */
    }
    /* Buffers of an unchanged shape move over (a live edit reallocates nothing); a failure
     * moves them back, so the old result stays intact. With keep_previous nothing moves. */
    bool moved = false;
    /* A new token count with rows kept: every layer's buffers grown first (a failure leaves
       them valid for the old count), then their rows moved in place. */
    /* keep_previous asks for fresh buffers so that a stop leaves the result before whole; a
       compute that keeps rows or layers of it (a sentence edit, an ablation) computes in place
       all the same: copying what it keeps into fresh buffers costs more than what it computes
       (at 1,016 tokens, an ablation of the last layer copied 11 layers, 3.5 s). */
    bool keep = net->keep_previous && kept == 0 && first == 0;
    bool reshape = !keep && kept > 0;
    for (int L = 0; L < layers && reshape; L++)
        reshape = !attn_run_fits(&net->run[L], &fresh->model[L]) &&
                  attn_run_fits_but_n(&net->run[L], &fresh->model[L]);
    /* Stream mode: the stages of the layers not in view are not grown and moved but dropped
       (shown again, they are computed anew): a grown stage is copied, so growing every set at
       once held two of each (150 MB more at 1,016 tokens). */
    for (int L = 0; L < layers && reshape && net->stage_layers; L++)
        if (L != net->stage_pin && attn_run_holds_stages(&net->run[L]) &&
            fresh->model[L].n > net->run[L].cap_n) {
            held_set(net, L, false);
            attn_run_drop_stages(&net->run[L], &net->model[L]);
        }
    for (int L = 0; L < layers && reshape; L++)
        reshape = attn_run_reserve(&net->run[L], &fresh->model[L], err) == 0;
    attn_diag_clear(err);
    for (int L = 0; L < layers && reshape; L++)
        attn_run_relayout(&net->run[L], &fresh->model[L], kept);
    bool stream = fresh->stage_layers > 0;
    for (int L = 0; L < layers; L++) {
        if (!keep && L < net->layers && attn_run_fits(&net->run[L], &fresh->model[L])) {
            /* its stages whole as they were (the rows kept, the layers before first) */
            fresh->held[L] = attn_run_holds_stages(&net->run[L]) && attn_net_layer_held(net, L);
            fresh->used[L] = net->used ? net->used[L] : 0;
            fresh->run[L] = net->run[L];
            memset(&net->run[L], 0, sizeof(net->run[L]));
            moved = true;
            if (!stream && attn_run_alloc_stages(&fresh->run[L], &fresh->model[L], err) != 0) {
                net->run[L] = fresh->run[L];
                memset(&fresh->run[L], 0, sizeof(fresh->run[L]));
                goto undo;
            }
        } else if (attn_run_init_stream(&fresh->run[L], &fresh->model[L], !stream, err) == 0) {
            fresh->held[L] = !stream;
            if (kept > 0) /* another shape: the rows kept are copied over */
                attn_run_copy_rows(&fresh->run[L], &net->run[L], kept);
        } else {
        undo:
            for (int k = 0; k < L && k < net->layers; k++)
                if (!net->run[k].k) {
                    net->run[k] = fresh->run[k];
                    memset(&fresh->run[k], 0, sizeof(fresh->run[k]));
                }
            attn_net_free(fresh);
            return -1;
        }
    }
    fresh->clock = net->clock;
    for (int bound = 0, victim; stream;) { /* at most stage_layers sets: the pinned one and the
                                               most recently used kept */
        victim = stage_victim(fresh, -1, &bound);
        if (victim < 0 || bound <= fresh->stage_layers)
            break;
        attn_run_drop_stages(&fresh->run[victim], &fresh->model[victim]);
        fresh->held[victim] = 0;
    }
    /* Buffers taken over hold the previous result no more once the pass starts: then it runs
       to the end. Otherwise a stop leaves the previous result as it was. */
    fresh->moved = moved;
    if (moved)
        fresh->progress.stop = NULL;
    for (int L = 1; L < layers && kept > 0; L++) /* the inputs of the rows kept */
        memcpy(fresh->model[L].x, net->model[L].x,
               (size_t)kept * (size_t)fresh->model[L].d_in * sizeof(float));
    for (int L = 0; L < first; L++) { /* the layers kept whole, and the inputs of those after */
        if (net->run[L].k)            /* not moved: fresh buffers (another shape) */
            attn_run_copy_rows(&fresh->run[L], &net->run[L], fresh->model[L].n);
        if (L > 0 && fresh->model[L].x != net->model[L].x)
            memcpy(fresh->model[L].x, net->model[L].x,
                   (size_t)fresh->model[L].n * (size_t)fresh->model[L].d_in * sizeof(float));
    }
    /* Stream mode keeps one result: what of the previous one did not move over (another shape)
       is freed now, not at the commit, so a compute never holds two results (a stop computes
       the previous one again: the caller undoes, as after a compute in place). */
    for (int L = 0; L < net->layers && stream && !keep; L++)
        if (net->run[L].k) {
            attn_run_free(&net->run[L]);
            if (net->held)
                net->held[L] = 0;
            fresh->moved = true;
            fresh->progress.stop = NULL;
        }
    fresh->kept_rows = kept;
    fresh->first_layer = first;
    fresh->near_from = near_from;
    return 0;
}

/* Whether fresh's pass is the near path's block (rows kept, a near row among those computed). */
static bool near_pass(const struct attn_net *fresh)
{
    return fresh->kept_rows > 0 && fresh->near_from >= 0 && fresh->first_layer == 0;
}

/* fresh becomes net's result: the parameters it shares handed over, net's old result freed. */
void attn_net_commit(struct attn_net *net, struct attn_net *fresh)
{
    if (fresh->shares) /* committed: the shared buffers become the new model's */
        for (int L = 0; L < fresh->layers; L++)
            attn_model_adopt(&fresh->model[L], &net->model[L]);
    fresh->shares = false;
    fresh->progress.stop = net->progress.stop;
    fresh->keep_previous = net->keep_previous;
    attn_net_free(net);
    *net = *fresh;
}

int attn_net_compute(struct attn_net *net, const struct attn_scene *s, struct diag *err)
{
    struct attn_net fresh;
    if (compute_begin(&fresh, net, s, err) != 0)
        return -1;
    if (forward_net(&fresh, fresh.first_layer, fresh.kept_rows, near_pass(&fresh)) != 0) {
        fresh.progress = (struct progress_sink){0, 0, 0};
        attn_net_free(&fresh); /* its models borrow the previous ones' buffers: not adopted yet */
        return attn_diag_set(err, "", "stopped before the end");
    }
    /* The widening buffer holds the last matrix the pass read; what reads a parameter next
       widens it again, so its pages need not be kept meanwhile (the predictions after this
       need their own). */
    attn_param_cache_drop(s->backing);
    attn_net_commit(net, &fresh);
    return 0;
}

int attn_net_prepare(struct attn_net *fresh, struct attn_net *net, const struct attn_scene *s,
                     struct diag *err)
{
    if (compute_begin(fresh, net, s, err) != 0)
        return -1;
    fresh->progress.stop = net->progress.stop; /* it may stop, buffers moved or not */
    fresh->keep_previous = net->keep_previous;
    fresh->partial = true; /* until the pass is through */
    fresh->pending_row = fresh->kept_rows;
    fresh->layers_ready = fresh->first_layer; /* those before it are kept whole */
    return 0;
}

int attn_net_forward_pending(struct attn_net *fresh)
{
    return forward_net(fresh, fresh->first_layer, fresh->pending_row, near_pass(fresh));
}

void attn_net_discard(struct attn_net *fresh)
{
    fresh->progress = (struct progress_sink){0, 0, 0};
    attn_net_free(fresh); /* its models borrow the kept ones' buffers: never adopted */
}

int attn_net_layers_ready(const struct attn_net *net)
{
    return __atomic_load_n(&net->layers_ready, __ATOMIC_ACQUIRE);
}

int attn_net_compute_lean(struct attn_net *net, const struct attn_scene *s, attn_net_visit visit,
                          void *ctx, struct diag *err)
{
    struct attn_net fresh;
    if (net_begin(&fresh, net, s, err) != 0)
        return -1;
    int layers = fresh.layers;
    fresh.stage_budget = 0; /* each layer is read once: lean shares the sets instead */
    if (attn_model_resolve_layers_rng(fresh.model, layers, s, &fresh.after_params, err)) {
        net_unbegin(&fresh);
        return -1;
    }
    if (attach_encoder(&fresh, s, err) != 0) {
        for (int L = 0; L < layers; L++)
            attn_model_free(&fresh.model[L]);
        net_unbegin(&fresh);
        return -1;
    }
    for (int L = 0; L < layers; L++)
        if (attn_run_init_sharing(&fresh.run[L], &fresh.model[L], L > 0 ? &fresh.run[0] : NULL,
                                  err)) {
            attn_net_free(&fresh);
            return -1;
        }
    long total = heads_from(&fresh, 0), done = 0;
    progress_report(&fresh.progress, 0, total);
    for (int L = 0; L < layers; L++) {
        if (forward_layer(&fresh, L, 0, false, &done, total) != 0) {
            attn_net_free(&fresh);
            return attn_diag_set(err, "", "stopped before the end");
        }
        if (visit && visit(ctx, &fresh, L, err) != 0) {
            attn_net_free(&fresh);
            return -1;
        }
    }
    attn_param_cache_drop(s->backing); /* as attn_net_compute */
    fresh.layers_ready = layers;
    attn_net_free(net);
    *net = fresh;
    return 0;
}

double attn_net_estimate_edit_seconds(const struct attn_net *net, const struct attn_scene *s)
{
    double full = attn_net_estimate_seconds(s);
    int layers = s->layers > 1 ? s->layers : 1;
    /* Only a new sentence keeps rows (attn_net_compute): an edit of the options on the same one
       (heads, the mask, ...) computes every row, however alike its tokens. */
    if (!net->from || net->partial || net->layers != layers || s->n_tokens <= 0 ||
        same_params(net->from, s) || !same_but_sentence(net->from, s))
        return full;
    for (int L = 0; L < layers; L++)
        if (!attn_rows_reusable(&net->model[L]))
            return full;
    const struct attn_scene *a = net->from;
    int n = a->n_tokens < s->n_tokens ? a->n_tokens : s->n_tokens, p = 0;
    while (p < n && strcmp(a->tokens[p], s->tokens[p]) == 0 &&
           (!a->token_ids || !s->token_ids || a->token_ids[p] == s->token_ids[p]))
        p++;
    int near_from;
    p = kept_for_edit(net, p, s->n_tokens, &near_from);
    return full * (double)(s->n_tokens - p) / (double)s->n_tokens;
}

double attn_net_estimate_seconds(const struct attn_scene *s)
{
    double flops = attn_scene_flops(s);
    const char *assumed = getenv("ATTNSCOPE_GFLOPS");
    if (flops < 1e9 && !(assumed && *assumed)) /* under a second even at 1 GFLOP/s */
        return flops / 1e9;
    return flops / (attn_measured_gflops() * 1e9);
}
