/* view: a stage of a computed run as a matrix (attn_view): the kept ones in place, the derived
 * ones computed on demand into the run's memo; which stages a scene has, in its order, and their
 * shapes (attention.h). */
#include "engine/view.h"

#include <math.h>
#include <string.h>

#include "common/fatal.h"
#include "engine/kernels.h"
#include "engine/run.h"
#include "engine/scores.h"

/* The stage whose numbers s has: scaled is the scores when the divisor is 1 (x / 1 == x),
 * masked is scaled without a causal mask, dropout is the weights without a keep-mask. */
static enum attn_stage same_as(const struct attn_model *m, enum attn_stage s)
{
    if (s == STAGE_DROPOUT && !m->keep)
        s = STAGE_WEIGHTS;
    if (s == STAGE_MASKED && !m->causal && m->window <= 0)
        s = m->softcap > 0 ? STAGE_CAPPED : STAGE_BIASED;
    if (s == STAGE_BIASED && !m->pos_bias)
        s = STAGE_SCALED;
    if (s == STAGE_SCALED && m->scale_divisor == 1.0f)
        s = STAGE_SCORES;
    return s;
}

bool attn_stage_is_derived(const struct attn_model *m, enum attn_stage s)
{
    return attn_stage_is_on_demand(same_as(m, s));
}

const float *attn_value_norms(const struct attn_run *r, const struct attn_model *m, int h)
{
    struct attn_memo *memo = r->memo;
    int n = m->n_kv, hd = m->head_dim, E = m->out_dim; /* a norm a key */
    float *out = memo->vnorm + (size_t)h * (size_t)n;
    if (memo->vnorm_filled[h])
        return out;
    const float *v = r->v + (size_t)attn_kv_head_of(m, h) * (size_t)hd;
    const float *rows = v; /* v_j W_O^h, or v_j itself without out_proj */
    int width = hd, ld = m->Dkv;
    if (m->wo) { /* the head's rows of W_O: its hd columns of concat feed them */
        const float *wo = ATTN_PARAM(m, wo);
        (attn_row_panels(m) ? attn_mm_ab_rows : attn_mm_ab)(
            memo->vw, E, v, m->Dkv, wo + (size_t)h * (size_t)hd * (size_t)E, E, NULL, n, E, hd);
        rows = memo->vw;
        width = ld = E;
    }
    for (int j = 0; j < n; j++) {
        double sum = 0;
        for (int c = 0; c < width; c++) {
            double x = rows[(size_t)j * (size_t)ld + c];
            sum += x * x;
        }
        out[j] = (float)sqrt(sum);
    }
    memo->vnorm_filled[h] = 1;
    return out;
}

/* out (n, n_kv) = one head's weighted norms: |a_ij| * ||v_j W_O^h||, a the weights after dropout
 * (what multiplies V), so ||a_ij v_j W_O^h|| exactly as Kobayashi et al. write it. */
static void weighted_norm(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    int n = m->n, nk = m->n_kv;
    size_t nn = (size_t)n * (size_t)nk;
    const float *norms = attn_value_norms(r, m, h);
    const float *w = r->weights + h * nn;
    const unsigned char *keep = m->keep ? m->keep + h * nn : NULL;
    float keep_scale = keep ? 1.0f / (float)(1.0 - m->dropout) : 1.0f;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < nk; j++) {
            size_t c = (size_t)i * (size_t)nk + (size_t)j;
            float a = keep ? w[c] * (keep[c] ? keep_scale : 0.0f) : w[c]; /* drop_weights' */
            out[c] = fabsf(a) * norms[j];
        }
}

/* The queries and keys the scores are made of: after qk_norm and RoPE when the scene has them. */
static void scored_qk(const float **q, const float **k, const struct attn_run *r,
                      const struct attn_model *m)
{
    *q = m->rope ? r->qr : m->qnw ? r->qn : r->q;
    *k = m->rope ? r->kr : m->qnw ? r->kn : r->k;
}

/* The scores of head h the tiled forward pass skipped (row i's keys past its panel's last
 * query), computed when they are first shown: the stage shows what the full product does. */
static void fill_future_scores(const struct attn_run *r, const struct attn_model *m, int h)
{
    struct attn_memo *memo = r->memo;
    if (!memo->tiled || memo->future_filled[h])
        return;
    int n = m->n, D = m->D, Dkv = m->Dkv, hd = m->head_dim;
    const float *q, *k;
    scored_qk(&q, &k, r, m);
    const float *qh = q + (size_t)h * hd, *kh = k + (size_t)attn_kv_head_of(m, h) * hd;
    float *scores = r->scores + (size_t)h * n * n;
    int panel = memo->panel;
    for (int i0 = 0; i0 < n; i0 += panel) {
        int i1 = i0 + panel < n ? i0 + panel : n;
        if (i1 < n)
            attn_mm_abt(scores + (size_t)i0 * n + i1, n, qh + (size_t)i0 * D, D,
                        kh + (size_t)i1 * Dkv, Dkv, i1 - i0, n - i1, hd);
    }
    memo->future_filled[h] = 1;
}

/* Head h's scores: (n, n_kv) of the run's buffer. */
static const float *head_scores(const struct attn_run *r, const struct attn_model *m, int h)
{
    return r->scores + (size_t)h * (size_t)m->n * (size_t)m->n_kv;
}

/* out (n, n_kv) = derived stage s of head h, from the kept scores or weights: one derive_NAME
 * each, named by ATTN_DERIVED_STAGES, so a stage listed there without its function does not
 * compile, and one made by no function cannot be listed. */
static void derive_SCALED(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    fill_future_scores(r, m, h);
    attn_scale_scores(out, head_scores(r, m, h), m);
}

static void derive_BIASED(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    fill_future_scores(r, m, h);
    attn_bias_scores(out, head_scores(r, m, h), attn_head_bias(m, h), m);
}

static void derive_CAPPED(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    fill_future_scores(r, m, h);
    attn_cap_scores(out, head_scores(r, m, h), attn_head_bias(m, h), m);
}

static void derive_MASKED(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    attn_mask_scores(out, head_scores(r, m, h), attn_head_bias(m, h), m);
}

static void derive_DROPOUT(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    size_t nn = (size_t)m->n * (size_t)m->n_kv;
    attn_drop_weights(out, r->weights + h * nn, m->keep + h * nn, nn, m);
}

static void derive_WEIGHTED_NORM(float *out, const struct attn_run *r, const struct attn_model *m,
                                 int h)
{
    weighted_norm(out, r, m, h);
}

static void derive(float *out, const struct attn_run *r, const struct attn_model *m,
                   enum attn_stage s, int h)
{
    switch (s) {
#define X(id)                                                                                      \
    case STAGE_##id:                                                                               \
        derive_##id(out, r, m, h);                                                                 \
        return;
        ATTN_DERIVED_STAGES(X)
#undef X
    default: /* a kept stage: attn_view reads its buffer, never this */
        return;
    }
}

int attn_stage_cols(const struct attn_model *m, enum attn_stage s)
{
    switch (attn_stage_width(s)) {
    case STAGE_WIDTH_LATENT:
        return m->latent;
    case STAGE_WIDTH_HEAD_DIM:
        return m->head_dim;
    case STAGE_WIDTH_TOKENS:
        return m->n_kv;
    case STAGE_WIDTH_CONCAT:
        return m->D;
    case STAGE_WIDTH_OUT:
        return m->out_dim;
    case STAGE_WIDTH_HIDDEN:
        return m->hidden;
    case STAGE_WIDTH_EXPERTS:
        return m->n_experts;
    case STAGE_WIDTH_D_IN:
        break;
    }
    return m->d_in;
}

int attn_stage_rows(const struct attn_model *m, enum attn_stage s)
{
    return attn_stage_is_key_side(s) ? m->n_kv : m->n; /* n_kv is n but in cross-attention */
}

char *const *attn_model_key_tokens(const struct attn_model *m)
{
    return m->cross ? m->kv_tokens : m->tokens;
}

char *const *attn_stage_row_tokens(const struct attn_model *m, enum attn_stage s)
{
    return attn_stage_is_key_side(s) ? attn_model_key_tokens(m) : m->tokens;
}

/* Where kept stage s's numbers start: the buffer the forward pass writes it to (a per-head
 * stage's holds every head side by side; a key side's (attn_stage_is_key_side) by KV head, as K
 * and V are with GQA). */
static const float *kept_buffer(const struct attn_run *r, const struct attn_model *m,
                                enum attn_stage s)
{
    switch (s) {
    case STAGE_INPUTS:
        return m->x;
    case STAGE_LATENT:
        return r->latent;
    case STAGE_QUERIES:
        return r->q;
    case STAGE_KEYS:
        return r->k;
    case STAGE_VALUES:
        return r->v;
    case STAGE_QUERIES_NORMED:
        return r->qn;
    case STAGE_KEYS_NORMED:
        return r->kn;
    case STAGE_QUERIES_ROTATED:
        return r->qr;
    case STAGE_KEYS_ROTATED:
        return r->kr;
    case STAGE_SCORES:
        return r->scores;
    case STAGE_POSITION_BIAS:
        return m->pos_bias;
    case STAGE_WEIGHTS:
        return r->weights;
    case STAGE_CONTEXT:
    case STAGE_CONCAT:
        return r->concat;
    case STAGE_RESIDUAL1:
        return r->res1;
    case STAGE_NORM1:
        return r->norm1;
    case STAGE_FFN_HIDDEN:
        return r->ffn_hidden;
    case STAGE_FFN_GATE:
        return r->ffn_gate;
    case STAGE_FFN_UP:
        return r->ffn_up;
    case STAGE_FFN_ACTIVATED:
        return r->ffn_act;
    case STAGE_FFN_OUT:
        return r->ffn_out;
    case STAGE_OUTPUT_NORMED:
        return r->out_normed;
    case STAGE_ROUTER_LOGITS:
        return r->router;
    case STAGE_ROUTED:
        return r->routed;
    case STAGE_FFN_OUT_NORMED:
        return r->ffn_out_normed;
    case STAGE_RESIDUAL2:
        return r->res2;
    case STAGE_NORM2:
        return r->norm2;
    case STAGE_FINAL_NORM:
        return r->final;
#define X(id) case STAGE_##id: /* derived: attn_view never asks for these here */
        ATTN_DERIVED_STAGES(X)
#undef X
    case STAGE_OUTPUT:
    case STAGE_COUNT:
        break;
    }
    return r->output;
}

/* A kept stage, in place; s after same_as, not derived. Its shape is its kind's and width's
 * (stage.h): a head's columns of a buffer of every head, a head's (n, n) matrix, or the whole
 * buffer of a shared stage. */
struct attn_mat_view attn_kept_view(const struct attn_run *r, const struct attn_model *m,
                                    enum attn_stage s, int h)
{
    bool kv = attn_stage_is_key_side(s); /* a KV head's, and a row a key */
    const float *data = kept_buffer(r, m, s);
    int n = m->n, nk = m->n_kv, cols = attn_stage_cols(m, s);
    switch (attn_stage_kind(s)) {
    case STAGE_KIND_HEAD: { /* K and V: a row a key (the encoder's tokens, cross-attention) */
        int head = kv ? attn_kv_head_of(m, h) : h;
        return (struct attn_mat_view){data + (size_t)head * (size_t)m->head_dim, kv ? nk : n, cols,
                                      kv ? m->Dkv : m->D};
    }
    case STAGE_KIND_SQUARE:
        if (s == STAGE_SCORES)
            fill_future_scores(r, m, h);
        return (struct attn_mat_view){data + h * (size_t)n * (size_t)nk, n, nk, nk};
    case STAGE_KIND_SHARED:
    case STAGE_KIND_BLOCK:
        break;
    }
    return (struct attn_mat_view){data, n, cols, cols};
}

void attn_head_mean(float *out, const struct attn_run *r, const struct attn_model *m,
                    enum attn_stage s)
{
    struct attn_mat_view v = attn_view(r, m, s, 0);
    size_t cells = (size_t)v.rows * (size_t)v.cols;
    memset(out, 0, cells * sizeof(float));
    for (int h = 0; h < m->heads; h++) {
        struct attn_mat_view w = attn_view(r, m, s, h);
        for (int i = 0; i < v.rows; i++)
            for (int j = 0; j < v.cols; j++)
                out[(size_t)i * v.cols + j] += w.data[(size_t)i * w.stride + j] / (float)m->heads;
    }
}

struct attn_mat_view attn_view(const struct attn_run *r, const struct attn_model *m,
                               enum attn_stage s, int h)
{
    enum attn_stage same = same_as(m, s);
    if (!attn_stage_is_derived(m, same))
        return attn_kept_view(r, m, same, h);
    /* The memo is keyed by the stage whose numbers these are: masked without a mask is
     * scaled's entry. */
    struct attn_memo *memo = r->memo;
    size_t nn = (size_t)m->n * (size_t)m->n_kv;
    if (memo->stage != (int)same) {
        memset(memo->filled, 0, (size_t)m->heads);
        memo->stage = (int)same;
    }
    float *out = memo->data + (size_t)h * nn;
    if (!memo->filled[h]) {
        derive(out, r, m, same, h);
        memo->filled[h] = 1;
    }
    return (struct attn_mat_view){out, m->n, m->n_kv, m->n_kv};
}

struct attn_mat_view attn_view_buf(float *buf, size_t cap, const struct attn_run *r,
                                   const struct attn_model *m, enum attn_stage s, int h)
{
    enum attn_stage same = same_as(m, s);
    if (!attn_stage_is_derived(m, same))
        return attn_kept_view(r, m, same, h);
    if (cap < (size_t)m->n * (size_t)m->n_kv)
        attn_fatal_abort("attn_view_buf: %zu floats for a %d x %d stage", cap, m->n, m->n_kv);
    derive(buf, r, m, same, h);
    return (struct attn_mat_view){buf, m->n, m->n_kv, m->n_kv};
}

bool attn_stage_is_off(const struct attn_model *m, enum attn_stage s)
{
    return (s == STAGE_SCALED && m->scale == SCALE_NONE) ||
           (s == STAGE_CAPPED && !(m->softcap > 0)) ||
           ((s == STAGE_POSITION_BIAS || s == STAGE_BIASED) && !m->pos_bias) ||
           (s == STAGE_MASKED && !m->causal && m->window <= 0) ||
           (s == STAGE_DROPOUT && !m->keep) || (s == STAGE_OUTPUT && !m->wo);
}

int attn_stage_order(enum attn_stage *out, const struct attn_model *m)
{
    int k = 0;
    out[k++] = STAGE_INPUTS;
    if (m->block && attn_block_norms_input(m->order))
        out[k++] = STAGE_NORM1;
    if (m->latent > 0)
        out[k++] = STAGE_LATENT;
    out[k++] = STAGE_QUERIES;
    out[k++] = STAGE_KEYS;
    out[k++] = STAGE_VALUES;
    if (m->qnw) {
        out[k++] = STAGE_QUERIES_NORMED;
        out[k++] = STAGE_KEYS_NORMED;
    }
    if (m->rope) {
        out[k++] = STAGE_QUERIES_ROTATED;
        out[k++] = STAGE_KEYS_ROTATED;
    }
    static const enum attn_stage heads[] = {STAGE_SCORES,  STAGE_SCALED,  STAGE_POSITION_BIAS,
                                            STAGE_BIASED,  STAGE_CAPPED,  STAGE_MASKED,
                                            STAGE_WEIGHTS, STAGE_DROPOUT, STAGE_WEIGHTED_NORM,
                                            STAGE_CONTEXT, STAGE_CONCAT,  STAGE_OUTPUT};
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
        if ((heads[i] != STAGE_CAPPED || m->softcap > 0) && /* soft-capping's only */
            ((heads[i] != STAGE_POSITION_BIAS && heads[i] != STAGE_BIASED) || m->pos_bias))
            out[k++] = heads[i];
    if (m->block && m->no_ffn) { /* a decoder's self-attention: the residual, and no FFN */
        out[k++] = STAGE_RESIDUAL1;
        if (m->order == BLOCK_POST)
            out[k++] = STAGE_NORM1;
    } else if (m->block) {
        if (m->order == BLOCK_POST_BRANCH) /* attention's output normalised, then added */
            out[k++] = STAGE_NORM1;
        if (m->order == BLOCK_SANDWICH)
            out[k++] = STAGE_OUTPUT_NORMED;
        if (m->order != BLOCK_PARALLEL) /* parallel: nothing is added before the FFN */
            out[k++] = STAGE_RESIDUAL1;
        if (m->order == BLOCK_POST)
            out[k++] = STAGE_NORM1;
        else if (m->order != BLOCK_POST_BRANCH)
            out[k++] = STAGE_NORM2;
        if (m->n_experts > 0) { /* a mixture: the router, then each token's experts, summed */
            out[k++] = STAGE_ROUTER_LOGITS;
            out[k++] = STAGE_ROUTED;
        } else if (attn_activation_gated(m->activation)) {
            out[k++] = STAGE_FFN_GATE;
            out[k++] = STAGE_FFN_UP;
        } else {
            out[k++] = STAGE_FFN_HIDDEN;
        }
        if (m->n_experts == 0) /* each expert's own: not one matrix of the layer */
            out[k++] = STAGE_FFN_ACTIVATED;
        out[k++] = STAGE_FFN_OUT;
        if (m->order == BLOCK_POST_BRANCH)
            out[k++] = STAGE_NORM2;
        if (m->order == BLOCK_SANDWICH)
            out[k++] = STAGE_FFN_OUT_NORMED;
        out[k++] = STAGE_RESIDUAL2;
        if (m->order == BLOCK_POST)
            out[k++] = STAGE_NORM2;
        if (m->final_norm)
            out[k++] = STAGE_FINAL_NORM;
    }
    return k;
}

bool attn_stage_present(const struct attn_model *m, enum attn_stage s)
{
    enum attn_stage order[STAGE_COUNT];
    int n = attn_stage_order(order, m);
    for (int i = 0; i < n; i++)
        if (order[i] == s)
            return true;
    return false;
}

bool attn_scene_stage_present(const struct attn_scene *s, int layer, enum attn_stage st)
{
    /* attn_stage_order reads only these of a model */
    static float qk_norm_flag; /* only whether qnw (and pos_bias) is set is read */
    struct attn_model m = {
        .latent = s->attn.kv_latent,
        .rope = s->pos.kind == POS_ROPE,
        .qnw = s->attn.qk_norm ? &qk_norm_flag : NULL,
        .block = s->block.on,
        .order = s->block.order,
        .activation = s->block.activation,
        .final_norm = s->block.on && s->block.final_norm && layer == s->layers - 1,
        .softcap = (float)s->attn.softcap,
        .n_experts = s->block.on ? s->block.n_experts : 0,
        .pos_bias = attn_matrix_given(&s->pos.rel.table) && s->sublayer[layer] != SUB_CROSS
                        ? &qk_norm_flag
                        : NULL,
        .no_ffn = s->sublayer[layer] == SUB_SELF,
    };
    return attn_stage_present(&m, st);
}

/* Whether layer L of s is an encoder-decoder's cross-attention. */
static bool scene_cross(const struct attn_scene *s, int layer)
{
    return s->encoder && layer >= 0 && layer < SCENE_MAX_LAYERS && s->sublayer[layer] == SUB_CROSS;
}

int attn_scene_stage_rows(const struct attn_scene *s, int layer, enum attn_stage st)
{
    return scene_cross(s, layer) && attn_stage_is_key_side(st) ? s->encoder->n_tokens : s->n_tokens;
}

int attn_scene_stage_cols(const struct attn_scene *s, int layer, enum attn_stage st)
{
    switch (attn_stage_width(st)) {
    case STAGE_WIDTH_LATENT:
        return s->attn.kv_latent;
    case STAGE_WIDTH_HEAD_DIM:
        return attn_scene_head_dim(s);
    case STAGE_WIDTH_TOKENS:
        return scene_cross(s, layer) ? s->encoder->n_tokens : s->n_tokens;
    case STAGE_WIDTH_CONCAT:
        return attn_scene_concat_dim(s);
    case STAGE_WIDTH_OUT:
        return attn_scene_out_dim(s);
    case STAGE_WIDTH_HIDDEN:
        return attn_scene_ffn_hidden(s);
    case STAGE_WIDTH_EXPERTS:
        return s->block.n_experts;
    case STAGE_WIDTH_D_IN:
        break;
    }
    return attn_scene_d_in(s);
}

enum attn_stage attn_stage_block_output(const struct attn_model *m)
{
    if (!m->block)
        return STAGE_OUTPUT;
    if (m->no_ffn)
        return m->order == BLOCK_POST ? STAGE_NORM1 : STAGE_RESIDUAL1;
    return m->order == BLOCK_POST ? STAGE_NORM2 : STAGE_RESIDUAL2;
}

enum attn_stage attn_stage_last(const struct attn_model *m)
{
    enum attn_stage order[STAGE_COUNT];
    return order[attn_stage_order(order, m) - 1];
}

void attn_delta_stats_add(struct attn_delta_stats *st, float d, int at)
{
    float x = fabsf(d);
    if (isfinite(x)) {
        st->sum += x;
        st->finite++;
    }
    if (x > st->max_abs || (isnan(x) && !isnan(st->max_abs))) {
        st->max_abs = x;
        st->max_at = at;
    }
}

float attn_delta_stats_mean(const struct attn_delta_stats *st)
{
    return st->finite ? (float)(st->sum / (double)st->finite) : 0.0f;
}
