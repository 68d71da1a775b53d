/* inspect: the selected cell explained with its real numbers, so a learner can connect the
 * picture to the formula. Pure text (no curses): the inspector panel draws it, tests read it.
 * Numbers use 4 decimals, as `attnscope print` and PyTorch do. */
#include "explore/inspect.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cnum.h"
#include "engine/scores.h"
#include "engine/vecmath.h"
#include "explore/appstate.h"

#define MAX_TERMS 6 /* terms written out before "+ \u2026" */

struct buf {
    char *p;
    size_t size, len;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
    if (b->len >= b->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = attn_cnum_vformat(b->p + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len = b->len + (size_t)n < b->size ? b->len + (size_t)n : b->size - 1;
}

static void num(struct buf *b, float v)
{
    if (isinf(v))
        put(b, v < 0 ? "-\u221e" : "\u221e");
    else
        put(b, "%.4f", (double)v);
}

/* A number inside a formula: negative ones in brackets, so "a\u00d7-b" reads "a\u00d7(-b)". */
static void operand(struct buf *b, float v)
{
    if (v < 0 && !isinf(v)) {
        put(b, "(");
        num(b, v);
        put(b, ")");
    } else {
        num(b, v);
    }
}

/* Writes "a0\u00d7b0 + a1\u00d7b1 + ... = result" for a dot product of n terms. */
static void terms(struct buf *b, const float *a, int as, const float *w, int ws, int n)
{
    put(b, "  = ");
    for (int k = 0; k < n && k < MAX_TERMS; k++) {
        if (k)
            put(b, " + ");
        operand(b, a[(size_t)k * as]);
        put(b, "\u00d7");
        operand(b, w[(size_t)k * ws]);
    }
    if (n > MAX_TERMS)
        put(b, " + \u2026 (%d more)", n - MAX_TERMS);
    put(b, "\n");
}

static float at(struct attn_mat_view v, int i, int j)
{
    return v.data[(size_t)i * v.stride + j];
}

/* The row of the attention's input: X, or norm1(X) in a pre-norm block. */
static const float *attn_input(const struct app *a, int i)
{
    const struct attn_model *m = app_model(a);
    const float *in = m->block && attn_block_norms_input(m->order) ? app_run(a)->norm1 : m->x;
    return in + (size_t)i * m->d_in;
}

/* The column of W_qkv that column c of projection p (0 q, 1 k, 2 v) was cut from. */
static int fused_column(const struct attn_model *m, int p, int c)
{
    int hd = m->head_dim;
    if (m->qkv == QKV_FUSED)
        return p == 0 ? c : p == 1 ? m->D + c : m->D + m->Dkv + c;
    return 3 * hd * (c / hd) + p * hd + c % hd; /* fused_heads: head h's own 3\u00b7hd columns */
}

/* q, k or v of the selected head: which parameters made it, term by term. p: 0 q, 1 k, 2 v. */
static void explain_projection(struct buf *b, const struct app *a, int i, int j, int p,
                               const float *w, const float *bias, const char *wname)
{
    static const char *const qkv[3] = {"q", "k", "v"};
    const struct attn_model *m = app_model(a);
    const char *q = qkv[p];
    int width = p == 0 ? m->D : m->Dkv;
    int head = p == 0 ? a->view.head : a->view.head / (m->heads / m->kv_heads);
    int c = head * m->head_dim + j; /* column in the (n, width) projection */
    float v = at(app_view(a, a->view.stage, a->view.head), i, j);
    if (!m->project) {
        put(b, "projection none: %s = x (Q = K = V = X)\n  = ", q);
        num(b, v);
        put(b, "\n");
        return;
    }
    if (p > 0 && m->kv_heads < m->heads)
        put(b, "head %d reads KV head %d (%d query heads share each)\n", a->view.head, head,
            m->heads / m->kv_heads);
    if (p > 0 && m->latent > 0) {
        /* MLA: K and V come up out of the latent, not from x. */
        const float *up = p == 1 ? ATTN_PARAM(m, wkup) : ATTN_PARAM(m, wvup);
        put(b, "%s[%d] = latent \u00b7 %s[:, %d] (MLA)\n", q, j, p == 1 ? "W_key_up" : "W_value_up",
            c);
        terms(b, app_run(a)->latent + (size_t)i * m->latent, 1, up + c, m->D, m->latent);
    } else {
        /* The wrapper gives each head its own matrix (params/head<H>/ in an export); the split
         * layout one matrix whose columns the heads share. */
        if (a->result.shown.attn.layout == LAYOUT_WRAPPER)
            put(b, "%s[%d] = x \u00b7 head %d's %s[:, %d]%s\n", q, j, a->view.head, wname, j,
                bias ? " + b" : "");
        else if (m->wqkv)
            put(b, "%s[%d] = x \u00b7 W_qkv[:, %d]%s (%s)\n", q, j, fused_column(m, p, c),
                bias ? " + b" : "",
                m->qkv == QKV_FUSED ? "chunk [Q | K | V]" : "head's 3\u00b7hd columns");
        else
            put(b, "%s[%d] = x \u00b7 %s[:, %d]%s\n", q, j, wname, c, bias ? " + b" : "");
        size_t member = p == 0 ? ATTN_MEMBER(wq) : p == 1 ? ATTN_MEMBER(wk) : ATTN_MEMBER(wv);
        terms(b, attn_input(a, i), 1, w + c, attn_model_param_ld(m, member, width), m->d_in);
    }
    if (bias) {
        put(b, "    + ");
        operand(b, bias[c]);
        put(b, " (bias)\n");
    }
    put(b, "  = ");
    num(b, v);
    put(b, "\n");
    if (m->wqkv && a->result.shown.attn.layout != LAYOUT_WRAPPER) {
        int c0 = fused_column(m, p, head * m->head_dim);
        put(b, "head %d's %s: W_qkv columns %d\u2013%d%s\n", a->view.head, q, c0,
            c0 + m->head_dim - 1,
            m->qkv == QKV_FUSED ? "; one Linear cut in three gives the numbers of three"
                                : "; each head takes its own q, k, v block");
    }
}

/* A rotated q or k: the pair the selected dimension belongs to, turned by its angle. */
static void explain_rotation(struct buf *b, const struct app *a, int i, int j, bool keys)
{
    const struct attn_model *m = app_model(a);
    int hd = m->head_dim, rd = m->rope_dims, half = rd / 2;
    /* RoPE turns q and k as they come, or as qk_norm left them (Qwen3) */
    enum attn_stage from = m->qnw ? (keys ? STAGE_KEYS_NORMED : STAGE_QUERIES_NORMED)
                           : keys ? STAGE_KEYS
                                  : STAGE_QUERIES;
    struct attn_mat_view x = app_view(a, from, a->view.head);
    if (j >= rd) { /* partial rotary: the head's last dimensions carry no position */
        put(b,
            "partial rotary: RoPE turns dimensions 0..%d of %d\n  (%d pairs, %s); dimension %d "
            "passes unturned\n  %s[%d] = ",
            rd - 1, hd, half, m->rope_pairs == ROPE_HALVES ? "i with i + rd/2" : "2i with 2i+1", j,
            keys ? "k" : "q", j);
        num(b, at(x, i, j));
        put(b,
            "\nscores mix %d turned dims (relative position) with\n%d unturned ones (content "
            "only)\n",
            rd, hd - rd);
        return;
    }
    int pair = m->rope_pairs == ROPE_ADJACENT ? j / 2 : j % half;
    int ja = m->rope_pairs == ROPE_ADJACENT ? 2 * pair : pair;
    int jb = m->rope_pairs == ROPE_ADJACENT ? 2 * pair + 1 : pair + half;
    float xa = at(x, i, ja), xb = at(x, i, jb);
    float c = m->rope_cos[(size_t)i * half + pair], s = m->rope_sin[(size_t)i * half + pair];
    int pos = a->result.shown.pos.offset + i;
    /* the frequency as the engine uses it: base^(-2i/hd), after any rope_scaling */
    float theta = m->rope_inv
                      ? m->rope_inv[pair]
                      : 1.0f / powf((float)a->result.shown.pos.base, (float)(2 * pair) / (float)rd);
    put(b, "RoPE turns dimensions (%d, %d) together, by position \u00d7 \u03b8_%d%s\n", ja, jb,
        pair, m->rope_pairs == ROPE_HALVES ? " (halves: rotate_half)" : "");
    const struct attn_scene *shown = &a->result.shown;
    bool local = m->rope_local; /* Gemma 3's sliding layer */
    if (local)
        put(b, "  a sliding layer: its own base %g, unscaled (full layers: %g)\n",
            shown->pos.base_local, shown->pos.base);
    if (rd < hd)
        put(b, "  partial rotary: only dims 0..%d of %d turn; \u03b8_i = base^(\u22122i/%d)\n",
            rd - 1, hd, rd);
    static const struct attn_rope_params unscaled = {.kind = ROPE_SCALING_NONE};
    const struct attn_rope_params *sc = local ? &unscaled : &a->result.shown.pos.scaling;
    if (sc->kind == ROPE_SCALING_LONGROPE)
        put(b, "  \u03b8_%d divided by longrope's %s factor\n", pair,
            a->result.shown.pos.offset + m->n > sc->original_max ? "long" : "short");
    else if (sc->kind != ROPE_SCALING_NONE)
        put(b, "  \u03b8_%d scaled by rope type %s (factor %g)\n", pair,
            attn_rope_scaling_name(sc->kind), sc->factor);
    if ((sc->kind == ROPE_SCALING_YARN || sc->kind == ROPE_SCALING_LONGROPE) &&
        sc->attention_factor != 1.0)
        put(b, "  cos and sin \u00d7 %s's attention factor %.4f\n",
            attn_rope_scaling_name(sc->kind), sc->attention_factor);
    put(b, "  angle = %d \u00d7 ", pos);
    num(b, theta);
    put(b, " = ");
    num(b, (float)pos * theta);
    put(b, " rad\n");
    if (j == ja) {
        put(b, "  %s[%d] = x_%d\u00b7cos \u2212 x_%d\u00b7sin\n  = ", keys ? "k" : "q", ja, ja, jb);
        operand(b, xa);
        put(b, "\u00d7");
        operand(b, c);
        put(b, " \u2212 ");
        operand(b, xb);
        put(b, "\u00d7");
        operand(b, s);
    } else {
        put(b, "  %s[%d] = x_%d\u00b7sin + x_%d\u00b7cos\n  = ", keys ? "k" : "q", jb, ja, jb);
        operand(b, xa);
        put(b, "\u00d7");
        operand(b, s);
        put(b, " + ");
        operand(b, xb);
        put(b, "\u00d7");
        operand(b, c);
    }
    put(b, "\n  = ");
    num(b, at(app_view(a, a->view.stage, a->view.head), i, j));
    put(b, "\nscores use the rotated q and k: they depend on the\ndistance between tokens, not on "
           "where they are\n");
}

/* A normalised value: (x - mean) / sqrt(var + eps) * w (+ b), or x / rms * w. */
static void explain_norm(struct buf *b, const struct app *a, int i, int j, const float *in,
                         const float *w, const float *bias, const char *what)
{
    const struct attn_model *m = app_model(a);
    int d = m->d_in;
    const float *x = in + (size_t)i * d;
    double mean = 0, var = 0;
    if (m->norm == NORM_LAYER) {
        for (int k = 0; k < d; k++)
            mean += x[k];
        mean /= d;
    }
    for (int k = 0; k < d; k++)
        var += (x[k] - mean) * (x[k] - mean);
    var /= d;
    if (m->norm == NORM_LAYER) {
        put(b, "LayerNorm of %s over the row's %d values\n", what, d);
        put(b, "  = (x \u2212 mean) \u00f7 \u221a(var + \u03b5) \u00b7 w + b\n  = (");
        num(b, x[j]);
        put(b, " \u2212 ");
        operand(b, (float)mean);
        put(b, ") \u00f7 \u221a(");
        num(b, (float)var);
        put(b, " + %g) \u00b7 ", (double)m->norm_eps);
        num(b, w[j]);
        put(b, " + ");
        num(b, bias[j]);
    } else {
        put(b, "RMSNorm of %s over the row's %d values\n", what, d);
        put(b, "  = x \u00f7 \u221a(mean(x\u00b2) + \u03b5) \u00b7 w\n  = ");
        num(b, x[j]);
        put(b, " \u00f7 \u221a(");
        num(b, (float)var);
        put(b, " + %g) \u00b7 ", (double)m->norm_eps);
        num(b, w[j]);
    }
    put(b, "\n  = ");
    num(b, at(app_view(a, a->view.stage, a->view.head), i, j));
    put(b, "\n");
}

/* A Linear of the FFN: the dot product of the row with W's column, plus the bias. */
static void explain_linear(struct buf *b, const struct app *a, int i, int j, const float *in,
                           int in_w, const float *w, int out_w, const float *bias, const char *what)
{
    put(b, "%s\n", what);
    terms(b, in + (size_t)i * in_w, 1, w + j, out_w, in_w);
    if (bias) {
        put(b, "    + ");
        operand(b, bias[j]);
        put(b, " (bias)\n");
    }
    put(b, "  = ");
    num(b, at(app_view(a, a->view.stage, a->view.head), i, j));
    put(b, "\n");
}

static void explain_weights(struct buf *b, const struct app *a, int i, int j)
{
    const struct attn_model *m = app_model(a);
    /* The normalisation always reads the masked stage (= scaled when there is no mask). */
    struct attn_mat_view in = app_view(a, STAGE_MASKED, a->view.head);
    struct attn_mat_view w = app_view(a, STAGE_WEIGHTS, a->view.head);
    float x = at(in, i, j), y = at(w, i, j);
    float rowsum = 0;
    for (int k = 0; k < w.cols; k++)
        rowsum += at(w, i, k);
    if (m->causal && m->mask_mode == MASK_AFTER_SOFTMAX) {
        float s = 0;
        for (int k = 0; k < in.cols; k++)
            s += at(in, i, k);
        put(b, "weights: the masked row renormalised\n  weight = masked \u00f7 row sum\n  = ");
        num(b, x);
        put(b, " \u00f7 ");
        num(b, s);
    } else if (m->normalize == NORMALIZE_SUM) {
        float s = 0;
        for (int k = 0; k < in.cols; k++)
            if (isfinite(at(in, i, k)))
                s += at(in, i, k);
        put(b, "weights: the row \u00f7 its sum (naive)\n  weight = s \u00f7 \u03a3 s (row)\n  = ");
        num(b, isinf(x) ? 0.0f : x);
        put(b, " \u00f7 ");
        num(b, s);
    } else if (isnan(y)) { /* not a mask: a value the pass made that is not a number */
        put(b, "weights: the softmax of a row that holds a nan or an inf\n  every weight of it is "
               "nan, as in torch (the message line says where it began)");
    } else if (isinf(x)) {
        put(b, "weights: the softmax of a masked cell\n  exp(-\u221e) = 0, so the weight is 0");
    } else {
        float max = -INFINITY, s = 0;
        for (int k = 0; k < in.cols; k++)
            max = at(in, i, k) > max ? at(in, i, k) : max;
        for (int k = 0; k < in.cols; k++)
            s += isinf(at(in, i, k)) ? 0.0f : expf(at(in, i, k) - max);
        put(b, "weights: the softmax of the row\n  weight = exp(s \u2212 max) \u00f7 \u03a3 exp(s "
               "\u2212 max)\n"
               "  = exp(");
        num(b, x);
        put(b, " \u2212 ");
        operand(b, max);
        put(b, ") \u00f7 ");
        num(b, s);
        put(b, "\n  = ");
        num(b, expf(x - max));
        put(b, " \u00f7 ");
        num(b, s);
    }
    put(b, "\n  = ");
    num(b, y);
    put(b, "\nrow \u03a3 = ");
    num(b, rowsum);
    put(b, "\n");
}

/* Zoomed out: the block under the cursor, its range, max (and where) and mean, before the
 * cursor's own cell. */
static void explain_block(struct buf *b, const struct app *a)
{
    const struct zoom_grid *g = &a->cache.zoom;
    const struct attn_model *m = app_model(a);
    struct attn_mat_view v = app_view(a, a->view.stage, a->view.head);
    if (a->view.rollout) /* the rollout the map shows, made when it was drawn */
        v = interp_rollout_kept(&a->cache.interp, a->result.generation, a->view.layer);
    else if (app_showing_mean(a) &&
             a->cache.mean.values) /* app_shown_view's, made when the map was drawn */
        v = (struct attn_mat_view){a->cache.mean.values, v.rows, v.cols, v.cols};
    else if (app_showing_delta(a) && a->cache.delta.values) /* the Δ the map shows, the same way */
        v = (struct attn_mat_view){a->cache.delta.values, v.rows, v.cols, v.cols};
    int r0, r1, c0, c1;
    zoom_block_span(g, a->view.row / g->br, a->view.col / g->bc, &r0, &r1, &c0, &c1);
    struct block_stats st;
    zoom_block_stats(&st, v, r0, r1, c0, c1);
    bool square = attn_stage_is_square(a->view.stage);
    char rows[48], cols[48];
    zoom_span_text(rows, sizeof(rows), "row", "rows", r0, r1 - 1);
    zoom_span_text(cols, sizeof(cols), square ? "column" : "dimension",
                   square ? "columns" : "dimensions", c0, c1 - 1);
    put(b, "block: %s \u00d7 %s, %d values", rows, cols, st.total);
    if (st.finite < st.total)
        put(b, " (%d masked)", st.total - st.finite);
    put(b, "\n  max ");
    num(b, st.max);
    if (st.max_row >= 0) {
        if (square)
            put(b, " at \u201c%s\u201d \u2192 \u201c%s\u201d (row %d, column %d)",
                m->tokens[st.max_row], m->tokens[st.max_col], st.max_row, st.max_col);
        else
            put(b, " at \u201c%s\u201d, dimension %d (row %d)", m->tokens[st.max_row], st.max_col,
                st.max_row);
    }
    put(b, "\n  mean ");
    num(b, st.mean);
    put(b, "\n  the map shows each block's %s (b: its %s)\n", block_agg_name(a->view.block_agg),
        block_agg_name(a->view.block_agg == BLOCK_MAX ? BLOCK_MEAN : BLOCK_MAX));
    put(b, "the cursor's cell, row %d, column %d:\n", a->view.row, a->view.col);
}

/* The cell being explained: cell (i, j) of head h at the stage on screen, its value val in the
 * matrix v, with the model and run it comes from. */
struct cell {
    struct buf *b;
    const struct app *a;
    const struct attn_model *m;
    const struct attn_run *r;
    int i, j, h, hd;
    float val;
    struct attn_mat_view v;
};

/* "\n  = val\n": how every explanation ends. */
static void equals_val(const struct cell *c)
{
    num(c->b, c->val);
    put(c->b, "\n");
}

static void explain_inputs(const struct cell *c)
{
    const struct attn_model *m = c->m;
    struct buf *b = c->b;
    if (m->layer > 0) {
        put(b, "input = layer %d's output (its %s)\n  = ", m->layer - 1,
            attn_stage_name(attn_stage_block_output(&app_net(c->a)->model[m->layer - 1])));
        equals_val(c);
        return;
    }
    put(b, "input = token embedding");
    if (m->pos) {
        int pos = c->a->result.shown.pos.offset + c->i;
        if (m->pos_kind == POS_SINUSOIDAL)
            put(b, " + %s(position %d \u00b7 div_%d)\n  = ", c->j % 2 ? "cos" : "sin", pos,
                c->j / 2);
        else
            put(b, " + position %d's row\n  = ", pos);
        num(b, m->embed[(size_t)c->i * m->d_in + c->j]);
        put(b, " + ");
        num(b, m->pos[((size_t)m->pos_offset + (size_t)c->i) * m->d_in + c->j]);
    }
    put(b, "\n  = ");
    equals_val(c);
}

static void explain_latent(const struct cell *c)
{
    put(c->b, "latent[%d] = x \u00b7 W_down[:, %d] (MLA: cached per token)\n", c->j, c->j);
    terms(c->b, attn_input(c->a, c->i), 1, ATTN_PARAM(c->m, wdown) + c->j, c->m->latent,
          c->m->d_in);
    put(c->b, "  = ");
    equals_val(c);
}

static void explain_queries(const struct cell *c)
{
    explain_projection(c->b, c->a, c->i, c->j, 0, ATTN_PARAM(c->m, wq), c->m->bq, "W_query");
}

static void explain_keys(const struct cell *c)
{
    explain_projection(c->b, c->a, c->i, c->j, 1, ATTN_PARAM(c->m, wk), c->m->bk, "W_key");
}

static void explain_values(const struct cell *c)
{
    explain_projection(c->b, c->a, c->i, c->j, 2, ATTN_PARAM(c->m, wv), c->m->bv, "W_value");
}

static void explain_rotated(const struct cell *c)
{
    explain_rotation(c->b, c->a, c->i, c->j, c->a->view.stage == STAGE_KEYS_ROTATED);
}

static void explain_scores(const struct cell *c)
{
    const struct attn_model *m = c->m;
    int kvh = c->h / (m->heads / m->kv_heads);
    const float *q = m->rope ? c->r->qr : c->r->q, *k = m->rope ? c->r->kr : c->r->k;
    put(c->b, "score = q_%d \u00b7 k_%d%s\n", c->i, c->j, m->rope ? " (both rotated)" : "");
    terms(c->b, q + (size_t)c->i * m->D + (size_t)c->h * c->hd, 1,
          k + (size_t)c->j * m->Dkv + (size_t)kvh * c->hd, 1, c->hd);
    put(c->b, "  = ");
    equals_val(c);
}

static void explain_scaled(const struct cell *c)
{
    const struct attn_model *m = c->m;
    float s = at(app_view(c->a, STAGE_SCORES, c->h), c->i, c->j);
    if (m->scale_layer > 1) { /* GPT-2's scale_attn_by_inverse_layer_idx */
        if (m->scale == SCALE_SQRT_DK)
            put(c->b,
                "scaled = score \u00f7 (\u221ad_k \u00b7 (layer + 1)), d_k = %d, layer %d\n  = ",
                c->hd, m->layer);
        else
            put(c->b, "scaled = score \u00f7 (layer + 1), layer %d\n  = ", m->layer);
        num(c->b, s);
        put(c->b, " \u00f7 %.4f\n  = ", (double)m->scale_divisor);
    } else if (m->scale == SCALE_NONE) {
        put(c->b, "no scaling (scale: false)\n  = ");
    } else {
        if (m->scale == SCALE_SQRT_DK)
            put(c->b, "scaled = score \u00f7 \u221ad_k, d_k = %d\n  = ", c->hd);
        else
            put(c->b, "scaled = score \u00f7 %g\n  = ", (double)m->scale_divisor);
        num(c->b, s);
        put(c->b, " \u00f7 %.4f\n  = ", (double)m->scale_divisor);
    }
    equals_val(c);
}

/* Gemma 2's attention logit soft-capping: cap · tanh(s / cap), which no score passes. */
static void explain_capped(const struct cell *c)
{
    const struct attn_model *m = c->m;
    float s = at(app_view(c->a, STAGE_SCALED, c->h), c->i, c->j), cap = m->softcap;
    put(c->b, "soft-capping: cap \u00b7 tanh(s \u00f7 cap), cap = %g\n  = %g \u00b7 tanh(",
        (double)cap, (double)cap);
    num(c->b, s);
    put(c->b, " \u00f7 %g)\n  = %g \u00b7 ", (double)cap, (double)cap);
    num(c->b, tanhf(s / cap));
    put(c->b, "\n  = ");
    equals_val(c);
    put(c->b,
        "every score stays within \u00b1%g: near 0 it is s itself,\nfar out it flattens ("
        "s = %g would give %.2f)\n",
        (double)cap, (double)(2 * cap), (double)(cap * tanhf(2.0f)));
}

/* T5's relative position bias: the distance, its bucket, the head's learned number for it. */
static void explain_position_bias(const struct cell *c)
{
    const struct attn_model *m = c->m;
    int rel = c->j - c->i, bucket = attn_model_rel_bucket(m, rel), far = rel < 0 ? -rel : rel;
    int exact = (m->rel_bidirectional ? m->rel_buckets / 2 : m->rel_buckets) / 2;
    put(c->b, "key %d is %d token%s %s query %d: distance %d\n", c->j, far, far == 1 ? "" : "s",
        rel < 0   ? "before"
        : rel > 0 ? "after"
                  : "at",
        c->i, rel);
    if (!m->rel_bidirectional && rel > 0)
        put(c->b, "(a decoder's buckets see no future: it reads as 0)\n");
    put(c->b, "bucket %d of %d (%s)\n", bucket, m->rel_buckets,
        far < exact ? "one a distance" : "logarithmic, shared by farther distances");
    put(c->b, "head %d's learned bias for it, the same in every layer\n  = ", c->h);
    equals_val(c);
}

static void explain_biased(const struct cell *c)
{
    float s = at(app_view(c->a, STAGE_SCALED, c->h), c->i, c->j);
    float pb = at(app_view(c->a, STAGE_POSITION_BIAS, c->h), c->i, c->j);
    put(c->b, "biased = scaled + position_bias\n  = ");
    num(c->b, s);
    put(c->b, " + ");
    operand(c->b, pb);
    put(c->b, "\n  = ");
    equals_val(c);
}

static void explain_masked(const struct cell *c)
{
    const struct attn_model *m = c->m;
    struct buf *b = c->b;
    const char *query = m->tokens[c->i], *key = m->tokens[c->j];
    if (m->softcap > 0 && !attn_hidden_key(m, c->i, c->j))
        put(b, "the capped score, cap \u00b7 tanh(scaled \u00f7 cap), cap %g:\n",
            (double)m->softcap);
    if (!m->causal) {
        put(b, "no causal mask: unchanged\n  = ");
    } else if (c->j > c->i) {
        put(b, "\u201c%s\u201d comes after \u201c%s\u201d: a token may not look ahead,\n", key,
            query);
        put(b, m->mask_mode == MASK_BEFORE_SOFTMAX
                   ? "so the score becomes -\u221e (softmax turns it into 0)\n  = "
                   : "so its softmax weight is zeroed (mask after softmax)\n  = ");
    } else if (m->window > 0 && c->i - c->j >= m->window) {
        put(b,
            "\u201c%s\u201d is %d tokens before \u201c%s\u201d, outside the sliding window of "
            "%d\n(a query sees itself and the %d keys before it),\n",
            key, c->i - c->j, query, m->window, m->window - 1);
        put(b, m->mask_mode == MASK_BEFORE_SOFTMAX
                   ? "so the score becomes -\u221e (softmax turns it into 0)\n  = "
                   : "so its softmax weight is zeroed (mask after softmax)\n  = ");
    } else if (m->window > 0) {
        put(b,
            "\u201c%s\u201d is at or before \u201c%s\u201d, within the sliding window of %d: "
            "visible\n",
            key, query, m->window);
        put(b, m->mask_mode == MASK_BEFORE_SOFTMAX ? "  = "
                                                   : "softmax first, hidden zeroed after\n  = ");
    } else {
        put(b, "\u201c%s\u201d is at or before \u201c%s\u201d: visible\n", key, query);
        put(b, m->mask_mode == MASK_BEFORE_SOFTMAX
                   ? "  = "
                   : "softmax first, future zeroed after (the book's first try)\n  = ");
    }
    equals_val(c);
}

static void explain_softmax(const struct cell *c)
{
    explain_weights(c->b, c->a, c->i, c->j);
}

static void explain_dropout(const struct cell *c)
{
    const struct attn_model *m = c->m;
    struct buf *b = c->b;
    float w = at(app_view(c->a, STAGE_WEIGHTS, c->h), c->i, c->j);
    if (!m->keep) {
        put(b, "dropout p = %g: nothing dropped\n  = ", m->dropout);
    } else if (m->keep[(size_t)c->h * m->n * m->n + (size_t)c->i * m->n + c->j]) {
        float f = 1.0f / (float)(1.0 - m->dropout);
        put(b,
            "kept (probability 1 \u2212 p = %g),\nscaled by 1/(1 \u2212 p) = ", 1.0 - m->dropout);
        num(b, f);
        put(b, "\n  = ");
        num(b, w);
        put(b, " \u00d7 ");
        num(b, f);
        put(b, "\n  = ");
    } else {
        put(b, "dropped (probability p = %g)\n  = ", m->dropout);
    }
    num(b, c->val);
    float rowsum = 0;
    for (int k = 0; k < c->v.cols; k++)
        rowsum += at(c->v, c->i, k);
    put(b, "\nrow \u03a3 = ");
    num(b, rowsum);
    put(b, m->keep ? " (no longer 1)\n" : "\n");
}

/* Kobayashi et al. 2020, "Attention is not only a weight": how far key j moves the output. */
static void explain_weighted_norm(const struct cell *c)
{
    const struct attn_model *m = c->m;
    float w = at(app_view(c->a, STAGE_DROPOUT, c->h), c->i, c->j);
    if (m->wo)
        put(c->b,
            "weighted_norm = |a_%d,%d| \u00b7 \u2016v_%d \u00b7 W_O^%d\u2016: how far key %d "
            "moves the output\n  = |",
            c->i, c->j, c->j, c->h, c->j);
    else
        put(c->b, "weighted_norm = |a_%d,%d| \u00b7 \u2016v_%d\u2016 (no out_proj)\n  = |", c->i,
            c->j, c->j);
    num(c->b, w);
    put(c->b, "| \u00d7 ");
    num(c->b, attn_value_norms(c->r, m, c->h)[c->j]);
    put(c->b, "\n  = ");
    equals_val(c);
}

/* Head h's own context at (i, j), Σ_k a_ik v_k[j], whatever it hands on. */
static float own_context(const struct cell *c, int i)
{
    const struct attn_model *m = c->m;
    struct attn_mat_view w = app_view(c->a, STAGE_DROPOUT, c->h);
    int kvh = c->h / (m->heads / m->kv_heads);
    double sum = 0;
    for (int k = 0; k < m->n; k++)
        sum += (double)at(w, i, k) * c->r->v[(size_t)k * m->Dkv + (size_t)kvh * c->hd + c->j];
    return (float)sum;
}

static void explain_context(const struct cell *c)
{
    const struct attn_model *m = c->m;
    struct attn_mat_view w = app_view(c->a, STAGE_DROPOUT, c->h);
    enum attn_head_mode hm = (enum attn_head_mode)m->head_mode[c->h];
    put(c->b, "context = \u03a3_j a_%d,j \u00b7 v_j[%d]\n", c->i, c->j);
    int kvh = c->h / (m->heads / m->kv_heads);
    terms(c->b, w.data + (size_t)c->i * w.stride, 1, c->r->v + (size_t)kvh * c->hd + c->j, m->Dkv,
          m->n);
    if (hm == HEAD_ZERO || hm == HEAD_MEAN) { /* what the head computes, then what it hands on */
        put(c->b, "  = ");
        num(c->b, own_context(c, c->i));
        put(c->b,
            hm == HEAD_ZERO ? "\nablated (zero): out_proj gets 0 instead\n  = "
                            : "\nablated (mean): out_proj gets its mean over the %d "
                              "positions instead\n  = ",
            m->n);
    } else {
        put(c->b, "  = ");
    }
    equals_val(c);
}

static void explain_concat(const struct cell *c)
{
    put(c->b, "column %d = head %d's context, dimension %d\n  = ", c->j, c->j / c->hd,
        c->j % c->hd);
    equals_val(c);
}

static void explain_output(const struct cell *c)
{
    const struct attn_model *m = c->m;
    struct buf *b = c->b;
    if (!m->wo) {
        put(b, "no out_proj: output = concat\n  = ");
    } else {
        put(b, "output = concat \u00b7 W_out[:, %d]%s\n", c->j, m->bo ? " + b" : "");
        terms(b, c->r->concat + (size_t)c->i * m->D, 1, ATTN_PARAM(m, wo) + c->j, m->out_dim, m->D);
        if (m->bo) {
            put(b, "    + ");
            operand(b, m->bo[c->j]);
            put(b, " (bias)\n");
        }
        put(b, "  = ");
    }
    equals_val(c);
}

/* "name = left + right" for the residual connections. */
static void explain_sum(const struct cell *c, const char *what, float left, float right)
{
    put(c->b, "%s\n  = ", what);
    num(c->b, left);
    put(c->b, " + ");
    operand(c->b, right);
    put(c->b, "\n  = ");
    equals_val(c);
}

/* A sandwich block's post-norm of a branch's output (Gemma's post_attention_layernorm and
 * post_feedforward_layernorm), before it is added. */
static void explain_post_norm(const struct cell *c)
{
    const struct attn_model *m = c->m;
    bool ffn = c->a->view.stage == STAGE_FFN_OUT_NORMED;
    explain_norm(c->b, c->a, c->i, c->j, ffn ? c->r->ffn_out : c->r->output,
                 ffn ? m->pn2w : m->pn1w, NULL,
                 ffn ? "ffn_out (sandwich: normalised again before it is added)"
                     : "attention's output (sandwich: normalised again before it is added)");
}

static void explain_residual1(const struct cell *c)
{
    size_t at_ij = (size_t)c->i * c->m->d_in + (size_t)c->j;
    if (c->m->order == BLOCK_SANDWICH) {
        explain_sum(c, "residual1 = inputs + output_normed", c->m->x[at_ij],
                    c->r->out_normed[at_ij]);
        return;
    }
    if (c->m->order == BLOCK_POST_BRANCH) {
        explain_sum(c, "residual1 = inputs + norm1 (attention's output, normalised)",
                    c->m->x[at_ij], c->r->norm1[at_ij]);
        return;
    }
    explain_sum(c, "residual1 = inputs + output (what attention adds)", c->m->x[at_ij],
                c->r->output[(size_t)c->i * c->m->D + (size_t)c->j]);
}

static void explain_residual2(const struct cell *c)
{
    bool post = c->m->order == BLOCK_POST;
    size_t at_ij = (size_t)c->i * c->m->d_in + (size_t)c->j;
    if (c->m->order == BLOCK_SANDWICH) {
        explain_sum(c, "residual2 = residual1 + ffn_out_normed", c->r->res1[at_ij],
                    c->r->ffn_out_normed[at_ij]);
        return;
    }
    if (c->m->order == BLOCK_POST_BRANCH) {
        explain_sum(c, "residual2 = residual1 + norm2 (the FFN's output, normalised)",
                    c->r->res1[at_ij], c->r->norm2[at_ij]);
        return;
    }
    if (c->m->order == BLOCK_PARALLEL) { /* GPT-NeoX: both branches read the same input */
        put(c->b, "parallel residual: attention and the FFN both read\nthe inputs (norm1, norm2), "
                  "and their outputs are\nadded to them at once:\nresidual2 = ffn_out + output + "
                  "inputs\n  = ");
        num(c->b, c->r->ffn_out[at_ij]);
        put(c->b, " + ");
        operand(c->b, c->r->output[at_ij]);
        put(c->b, " + ");
        operand(c->b, c->m->x[at_ij]);
        put(c->b, "\n  = ");
        equals_val(c);
        return;
    }
    explain_sum(c, post ? "residual2 = norm1 + ffn_out" : "residual2 = residual1 + ffn_out",
                (post ? c->r->norm1 : c->r->res1)[at_ij], c->r->ffn_out[at_ij]);
}

static void explain_norm1(const struct cell *c)
{
    const struct attn_model *m = c->m;
    if (m->order == BLOCK_POST_BRANCH)
        explain_norm(c->b, c->a, c->i, c->j, c->r->output, m->n1w, m->n1b,
                     "attention's output (post_branch: normalised, then added)");
    else if (m->order != BLOCK_POST)
        explain_norm(c->b, c->a, c->i, c->j, m->x, m->n1w, m->n1b,
                     m->order == BLOCK_PARALLEL ? "the input (parallel: attention's branch)"
                                                : "the input (pre-norm)");
    else
        explain_norm(c->b, c->a, c->i, c->j, c->r->res1, m->n1w, m->n1b, "residual1");
}

static void explain_norm2(const struct cell *c)
{
    const struct attn_model *m = c->m;
    if (m->order == BLOCK_POST_BRANCH)
        explain_norm(c->b, c->a, c->i, c->j, c->r->ffn_out, m->n2w, m->n2b,
                     "the FFN's output (post_branch: normalised, then added)");
    else if (m->order == BLOCK_PARALLEL)
        explain_norm(c->b, c->a, c->i, c->j, m->x, m->n2w, m->n2b,
                     "the input, not residual1 (parallel: the FFN's branch)");
    else if (m->order == BLOCK_PRE)
        explain_norm(c->b, c->a, c->i, c->j, c->r->res1, m->n2w, m->n2b,
                     "residual1 (the FFN's input)");
    else
        explain_norm(c->b, c->a, c->i, c->j, c->r->res2, m->n2w, m->n2b, "residual2");
}

static void explain_final_norm(const struct cell *c)
{
    const struct attn_model *m = c->m;
    explain_norm(c->b, c->a, c->i, c->j, m->order == BLOCK_POST ? c->r->norm2 : c->r->res2, m->fw,
                 m->fb, "the last layer's output (the final norm, ln_f)");
}

/* What the FFN reads: norm1 (post), norm2 (pre, parallel), residual1 (post_branch). */
static const float *ffn_input(const struct cell *c)
{
    return c->m->order == BLOCK_POST          ? c->r->norm1
           : c->m->order == BLOCK_POST_BRANCH ? c->r->res1
                                              : c->r->norm2;
}

static void explain_ffn_hidden(const struct cell *c)
{
    const struct attn_model *m = c->m;
    explain_linear(c->b, c->a, c->i, c->j, ffn_input(c), m->d_in, ATTN_PARAM(m, w1), m->hidden,
                   m->b1,
                   m->b1 ? "ffn_hidden = x \u00b7 W1 + b1 (the FFN widens)"
                         : "ffn_hidden = x \u00b7 W1 (the FFN widens; no bias)");
}

/* SwiGLU's two Linears of the FFN's input (Llama's gate_proj and up_proj; their biases only
 * with mlp_bias). */
static void explain_ffn_gate(const struct cell *c)
{
    const struct attn_model *m = c->m;
    explain_linear(
        c->b, c->a, c->i, c->j, ffn_input(c), m->d_in, ATTN_PARAM(m, wg), m->hidden, m->bg,
        m->bg ? "ffn_gate = x \u00b7 W_gate + b_gate (gate_proj: how far each unit opens)"
              : "ffn_gate = x \u00b7 W_gate (gate_proj: how far each unit opens)");
}

static void explain_ffn_up(const struct cell *c)
{
    const struct attn_model *m = c->m;
    explain_linear(c->b, c->a, c->i, c->j, ffn_input(c), m->d_in, ATTN_PARAM(m, w1), m->hidden,
                   m->b1,
                   m->b1 ? "ffn_up = x \u00b7 W1 + b1 (up_proj: what passes the gate)"
                         : "ffn_up = x \u00b7 W1 (up_proj: what passes the gate)");
}

/* qk_norm: RMSNorm over one head's hd values of q or k (Qwen3), or over the whole row of them
 * (OLMo 2), before RoPE. */
static void explain_normed(const struct cell *c)
{
    const struct attn_model *m = c->m;
    bool keys = c->a->view.stage == STAGE_KEYS_NORMED;
    const float *w = keys ? m->knw : m->qnw;
    const float *row, *wj;
    int over = c->hd;
    float xj;
    if (m->qk_norm_whole) { /* the row of every head: this head's columns are kv * hd on */
        int width = keys ? m->Dkv : m->D, col = (keys ? attn_kv_head_of(m, c->h) : c->h) * c->hd;
        row = (keys ? c->r->k : c->r->q) + (size_t)c->i * width;
        over = width;
        xj = row[col + c->j];
        wj = w + col + c->j;
    } else {
        struct attn_mat_view x = app_view(c->a, keys ? STAGE_KEYS : STAGE_QUERIES, c->h);
        row = x.data + (size_t)c->i * x.stride;
        xj = row[c->j];
        wj = w + c->j;
    }
    double ms = 0;
    for (int k = 0; k < over; k++)
        ms += (double)row[k] * row[k];
    ms /= over;
    if (m->qk_norm_whole)
        put(c->b, "%s: RMSNorm over all %d values of %s, every head's\n  at once (before RoPE)\n",
            keys ? "k_norm" : "q_norm", over, keys ? "k" : "q");
    else
        put(c->b, "%s: RMSNorm of this head's %d values of %s (before RoPE)\n",
            keys ? "k_norm" : "q_norm", over, keys ? "k" : "q");
    put(c->b, "  = x \u00f7 \u221a(mean(x\u00b2) + \u03b5) \u00b7 w\n  = ");
    num(c->b, xj);
    put(c->b, " \u00f7 \u221a(");
    num(c->b, (float)ms);
    put(c->b, " + %g) \u00b7 ", (double)m->norm_eps);
    num(c->b, *wj);
    put(c->b, "\n  = ");
    equals_val(c);
}

static void explain_ffn_activated(const struct cell *c)
{
    const struct attn_model *m = c->m;
    if (m->activation == ACT_GEGLU_TANH) {
        size_t at_ij = (size_t)c->i * m->hidden + c->j;
        float g = c->r->ffn_gate[at_ij], u = c->r->ffn_up[at_ij], gg;
        attn_gelu_tanh(&gg, &g, 1);
        put(c->b, "GeGLU: gelu(gate) \u00b7 up, gelu's tanh form (Gemma's\n"
                  "gelu_pytorch_tanh)\n  = gelu(");
        num(c->b, g);
        put(c->b, ") \u00d7 ");
        num(c->b, u);
        put(c->b, "\n  = ");
        operand(c->b, gg);
        put(c->b, " \u00d7 ");
        operand(c->b, u);
        put(c->b, "\n  = ");
        equals_val(c);
        return;
    }
    if (m->activation == ACT_SWIGLU) {
        size_t at_ij = (size_t)c->i * m->hidden + c->j;
        float g = c->r->ffn_gate[at_ij], u = c->r->ffn_up[at_ij];
        put(c->b, "SwiGLU: silu(gate) \u00b7 up, silu(g) = g \u00f7 (1 + e^\u2212g)\n  = silu(");
        num(c->b, g);
        put(c->b, ") \u00d7 ");
        num(c->b, u);
        put(c->b, "\n  = ");
        operand(c->b, (float)(g / (1.0 + exp(-(double)g))));
        put(c->b, " \u00d7 ");
        operand(c->b, u);
        put(c->b, "\n  = ");
        equals_val(c);
        return;
    }
    float x = c->r->ffn_hidden[(size_t)c->i * m->hidden + c->j];
    if (m->activation == ACT_RELU)
        put(c->b, "ReLU keeps positives, zeroes the rest\n  = max(0, ");
    else if (m->activation == ACT_SILU)
        put(c->b, "SiLU (swish) = x \u00b7 sigmoid(x) = x \u00f7 (1 + e^-x)\n  = silu(");
    else if (m->activation == ACT_GELU_TANH)
        put(c->b, "GELU, tanh form (GPT-2's gelu_new)\n"
                  "  = \u00bd x (1 + tanh(\u221a(2/\u03c0) (x + 0.044715 x\u00b3)))\n  = gelu(");
    else
        put(c->b, "GELU = x \u00b7 \u03a6(x) = \u00bd x (1 + erf(x \u00f7 \u221a2))\n  = gelu(");
    num(c->b, x);
    put(c->b, ")\n  = ");
    equals_val(c);
}

/* A mixture's token: the experts it chose and their weights, "3 (0.612), 1 (0.388)". */
static void put_chosen(struct buf *b, const struct attn_model *m, const float *routed)
{
    for (int e = 0, k = 0; e < m->n_experts; e++)
        if (routed[e] != 0.0f) {
            put(b, "%sexpert %d (", k++ ? ", " : "", e);
            num(b, routed[e]);
            put(b, ")");
        }
}

static void explain_ffn_out(const struct cell *c)
{
    const struct attn_model *m = c->m;
    if (m->n_experts > 0) {
        const float *routed = c->r->routed + (size_t)c->i * m->n_experts;
        put(c->b,
            "a mixture of experts: each chosen expert's SwiGLU\noutput times its weight, "
            "summed%s\n  ",
            m->wsg ? ", plus the shared expert\n  gated by sigmoid(x \u00b7 W_shared_gate)" : "");
        put_chosen(c->b, m, routed);
        put(c->b, "\n  = ");
        equals_val(c);
        put(c->b, "the other %d experts were not read for this token\n", m->n_experts - m->top_k);
        return;
    }
    explain_linear(c->b, c->a, c->i, c->j, c->r->ffn_act, m->hidden, ATTN_PARAM(m, w2), m->d_in,
                   m->b2,
                   m->b2 ? "ffn_out = ffn_activated \u00b7 W2 + b2 (and narrows back)"
                         : "ffn_out = ffn_activated \u00b7 W2 (and narrows back; no bias)");
}

/* A mixture's router: one logit an expert, a Linear of the FFN's input. */
static void explain_router(const struct cell *c)
{
    const struct attn_model *m = c->m;
    explain_linear(c->b, c->a, c->i, c->j, ffn_input(c), m->d_in, ATTN_PARAM(m, wr), m->n_experts,
                   NULL, "router_logits = x \u00b7 W_router (a score for each expert)");
}

/* Which experts a token goes to: the softmax of its router logits, the top k kept. */
static void explain_routed(const struct cell *c)
{
    const struct attn_model *m = c->m;
    const float *routed = c->r->routed + (size_t)c->i * m->n_experts;
    put(c->b, "the router's softmax over %d experts, the top %d kept%s:\n  ", m->n_experts,
        m->top_k, m->norm_topk ? " and\n  renormalised to sum to 1" : " (not renormalised)");
    put_chosen(c->b, m, routed);
    put(c->b, "\n  expert %d: ", c->j);
    if (routed[c->j] != 0.0f)
        put(c->b, "chosen, its output weighted by\n  = ");
    else
        put(c->b, "not in the top %d: weight 0, never read\n  = ", m->top_k);
    equals_val(c);
}

/* Each stage's explanation of a cell, one function a stage (tig's table of view operations),
 * named by its row of engine/stage.h's ATTN_STAGES: a row without its explain_ function does not
 * compile. test_app explains every stage of scenes with every kind of block. */
static void (*const explainers[STAGE_COUNT])(const struct cell *c) = {
#define X(id, name, heading, kind, width, file, explain) [STAGE_##id] = explain_##explain,
    ATTN_STAGES(X)
#undef X
};

/* Attention rollout (Abnar & Zuidema 2020) through the layer on screen: row i of this layer's
 * A' (the heads' mean weights, + I, halved, renormalised) times column j of the rollout through
 * the layer before; at layer 0 the cell of A' itself. The rollout is the cache's (interp.h),
 * made when the map was drawn (app_shown_view): the inspector reads it, and computes nothing. */
static void explain_rollout(struct buf *b, const struct app *a, int i, int j)
{
    const struct interp_cache *ic = &a->cache.interp;
    struct attn_mat_view r = interp_rollout_kept(ic, a->result.generation, a->view.layer);
    if (!r.data || i >= r.rows || j >= r.cols) {
        put(b, "the rollout is not computed\n");
        return;
    }
    const struct attn_model *m = app_model(a);
    int n = r.rows, L = a->view.layer;
    char *const *tok = m->tokens;
    put(b,
        "\u201c%s\u201d draws on \u201c%s\u201d: of row %d after layer %d, the share that "
        "comes from token %d (Abnar & Zuidema 2020)\n",
        tok[i], tok[j], i, L, j);
    /* Row i of A'_L: 0.5 x the heads' mean weights + 0.5 x I, renormalised. */
    float *row = malloc((size_t)n * sizeof(float));
    if (!row) {
        put(b, "out of memory\n");
        return;
    }
    double sum = 0;
    for (int k = 0; k < n; k++) {
        double w = 0;
        for (int h = 0; h < m->heads; h++)
            w += at(app_view_at(a, L, STAGE_WEIGHTS, h), i, k);
        row[k] = (float)(0.5 * (w / m->heads) + (k == i ? 0.5 : 0.0));
        sum += row[k];
    }
    for (int k = 0; k < n; k++)
        row[k] = (float)(row[k] / sum);
    struct attn_mat_view prev = interp_rollout_prev(ic, a->result.generation);
    if (L > 0 && prev.data) {
        put(b,
            "rollout = A'_%d \u00b7 rollout through layer %d\n  = \u03a3_k A'[%d,k] \u00d7 "
            "r[k,%d]\n",
            L, L - 1, i, j);
        /* Under a causal mask A' is lower triangular: the terms past k = i are 0. */
        terms(b, row, 1, prev.data + j, prev.stride, m->causal ? i + 1 : n);
        put(b, "  = ");
    } else {
        put(b, "rollout through layer 0 = A'_0[%d,%d]\n  = ", i, j);
    }
    num(b, at(r, i, j));
    char heads[48];
    if (m->heads == 1)
        snprintf(heads, sizeof(heads), "the head's weights");
    else
        snprintf(heads, sizeof(heads), "the mean of the %d heads' weights", m->heads);
    put(b, "\nA'_%d = 0.5\u00b7(%s) + 0.5\u00b7I, rows renormalised:\n  A'[%d,%d] = ", L, heads, i,
        j);
    num(b, row[j]);
    float rowsum = 0;
    for (int k = 0; k < r.cols; k++)
        rowsum += at(r, i, k);
    put(b, "\nrow \u03a3 = ");
    num(b, rowsum);
    put(b, " (every share of row %d's sources)\n", i);
    free(row);
}

/* An ablated head: its weights are its own still; what it hands out_proj is not. */
static void note_ablated(struct buf *b, const struct app *a)
{
    enum attn_head_mode hm = app_head_mode(a, a->view.layer, a->view.head);
    if (hm == HEAD_KEEP || !attn_stage_is_per_head(a->view.stage))
        return;
    char layer[32] = "";
    if (a->result.net.layers > 1)
        snprintf(layer, sizeof(layer), " of layer %d", a->view.layer);
    put(b, "head %d%s is ablated (%s): %s\n", a->view.head, layer, attn_head_mode_name(hm),
        hm == HEAD_ZERO ? "it hands out_proj zeros in place of its context"
                        : "it hands out_proj its context's mean over the positions");
}

/* The mean over the heads: each head's value, then the mean. */
static void explain_mean(const struct cell *c)
{
    const struct attn_model *m = c->m;
    struct buf *b = c->b;
    put(b, "the mean over the %d heads of their %s\n", m->heads, attn_stage_name(c->a->view.stage));
    float sum = 0;
    for (int k = 0; k < m->heads; k++) {
        float x = at(app_view(c->a, c->a->view.stage, k), c->i, c->j);
        sum += x;
        if (k < MAX_TERMS) {
            put(b, "  head %d: ", k);
            num(b, x);
            put(b, "\n");
        }
    }
    if (m->heads > MAX_TERMS)
        put(b, "  \u2026 (%d more)\n", m->heads - MAX_TERMS);
    put(b, "  mean = ");
    num(b, sum / (float)m->heads);
    put(b, "\n");
}

/* Where the KV-cache figures are said: beside the pattern scores (a checkpoint, several layers;
 * see inspect_explain) and for the systems that shrink the cache (GQA, MQA, MLA). */
static bool kv_talk(const struct app *a)
{
    const struct attn_model *m = app_model(a);
    return a->doc.scene.model.file || a->result.net.layers > 1 || m->latent > 0 ||
           m->kv_heads < m->heads;
}

void inspect_explain(char *out, size_t size, const struct app *a)
{
    struct buf b = {out, size, 0};
    out[0] = '\0';
    const struct attn_model *m = app_model(a);
    struct cell c = {&b,           a,           m, app_run(a), a->view.row, a->view.col,
                     a->view.head, m->head_dim, 0, {0}};
    c.v = app_view(a, a->view.stage, c.h);
    if (c.i >= c.v.rows || c.j >= c.v.cols)
        return;
    const struct zoom_grid *g = &a->cache.zoom;
    if (!a->view.all_heads && a->view.zoom > 0 && (g->br > 1 || g->bc > 1) && g->rows == c.v.rows &&
        g->cols == c.v.cols)
        explain_block(&b, a);
    if (a->view.rollout) {
        explain_rollout(&b, a, c.i, c.j);
        return;
    }
    c.val = at(c.v, c.i, c.j);
    const char *row_tok = attn_stage_row_tokens(m, a->view.stage)[c.i];
    if (attn_stage_is_square(a->view.stage))
        put(&b, "\u201c%s\u201d looks at \u201c%s\u201d%s\n", row_tok,
            attn_model_key_tokens(m)[c.j], m->cross ? " of the source" : "");
    else
        put(&b, "\u201c%s\u201d%s, dimension %d\n", row_tok,
            m->cross && attn_stage_is_key_side(a->view.stage) ? " of the source" : "", c.j);
    if (m->cross &&
        (attn_stage_is_square(a->view.stage) || attn_stage_is_key_side(a->view.stage))) {
        int key = attn_stage_is_square(a->view.stage) ? c.j : c.i; /* a column, or a K/V row */
        put(&b,
            "cross-attention: key %d is the encoder's output at source token %d (its last "
            "layer's, after its final norm where it has one), the same in every decoder layer\n",
            key, key);
    }
    if (app_delta_ok(a)) { /* a pinned baseline of this shape: then, now and the change */
        float base = at(app_base_view(a), c.i, c.j);
        float d = attn_cell_delta(c.val, base);
        put(&b, "baseline ");
        num(&b, base);
        put(&b, " \u2192 now ");
        num(&b, c.val);
        put(&b, "\n  \u0394 = %s", d > 0 ? "+" : "");
        num(&b, d);
        put(&b, "\n");
    }
    if (a->result.shown.token_ids) { /* a vocabulary's tokens: their ids, as the model sees them */
        const int *ids = app_net(a)->model[0].ids;
        /* cross-attention's keys: the source's ids */
        const int *keys = m->cross ? a->result.net.encoder->model[0].ids : ids;
        if (attn_stage_is_square(a->view.stage))
            put(&b, "token ids %d and %d\n", ids[c.i], keys[c.j]);
        else
            put(&b, "token id %d\n",
                (m->cross && attn_stage_is_key_side(a->view.stage) ? keys : ids)[c.i]);
    }
    if (app_showing_mean(a)) {
        explain_mean(&c);
        return;
    }
    note_ablated(&b, a);
    if (!explainers[a->view.stage]) /* a stage without its explainer: see the table */
        return;
    explainers[a->view.stage](&c);

    /* Head pattern scores and KV-cache figures are about trained models (a checkpoint, several
     * layers) and the systems that shrink the cache (GQA, MQA, MLA). Beside chapter 3's
     * single-layer scenes of drawn weights they would be jargon next to the mechanism, so the
     * inspector leaves them out there; heads, S and print still give them on request. */
    bool model_talk = a->doc.scene.model.file || a->result.net.layers > 1;
    if (a->view.stage == STAGE_WEIGHTS && model_talk && m->cross) {
        const struct head_scores *sc = app_scores(a, a->view.layer, c.h);
        put(&b, "\nthis head reads the source: the pattern scores (previous, induction, ...)\n"
                "compare a sequence with itself and are not given; its rows' entropy ");
        if (sc->defined[SCORE_ENTROPY])
            put(&b, "%.2f", sc->value[SCORE_ENTROPY]);
        else
            put(&b, "-");
        put(&b, "\n(0: each row on one source token)\n");
    } else if (a->view.stage == STAGE_WEIGHTS && model_talk) {
        const struct head_scores *sc = app_scores(a, a->view.layer, c.h);
        put(&b, "\nthis head's pattern scores:\n ");
        for (int k = 0; k < SCORE_COUNT; k++) {
            put(&b, " %s ", attn_head_score_name((enum head_score)k));
            if (sc->defined[k])
                put(&b, "%.2f", sc->value[k]);
            else
                put(&b, "-");
        }
        put(&b, "\n");
        for (int k = 0; k < SCORE_COUNT; k++) { /* a score not given says why */
            char why[200];
            attn_head_score_why(why, sizeof(why), sc, (enum head_score)k);
            if (why[0])
                put(&b, "  %s\n", why);
        }
    }
    if (kv_talk(a) && inspect_is_kv_stage(a->view.stage)) {
        char cache[200], brief[120], rows[640];
        inspect_kv_cache(cache, sizeof(cache), a);
        put(&b, "\n%s\n", cache);
        if (inspect_kv_cache_rows(brief, sizeof(brief), rows, sizeof(rows), a) >= 0)
            put(&b, "%s\n", rows);
    }
}

void inspect_kv_cache(char *out, size_t size, const struct app *a)
{
    const struct attn_model *m = app_model(a);
    long mha = 2L * m->heads * m->head_dim;
    if (m->latent > 0)
        attn_cnum_format(out, size,
                         "KV cache per token: %d floats, the latent (MLA); plain multi-head "
                         "attention needs %ld",
                         m->latent, mha);
    else if (m->kv_heads < m->heads)
        attn_cnum_format(out, size,
                         "KV cache per token: 2\u00d7%d KV head%s\u00d7%d = %ld floats (%s); "
                         "plain multi-head attention needs %ld",
                         m->kv_heads, m->kv_heads == 1 ? "" : "s", m->head_dim,
                         2L * m->kv_heads * m->head_dim, m->kv_heads == 1 ? "MQA" : "GQA", mha);
    else {
        /* what the systems that shrink it would keep for this shape (scenes 24-26's): GQA in
           groups of 4 query heads (Llama 3's 32/8), or of 2 for fewer heads */
        int groups = m->heads >= 8 && m->heads % 4 == 0  ? m->heads / 4
                     : m->heads > 2 && m->heads % 2 == 0 ? m->heads / 2
                                                         : 0;
        attn_cnum_format(out, size, "KV cache per token: 2\u00d7%d heads\u00d7%d = %ld floats",
                         m->heads, m->head_dim, mha);
        size_t o = strlen(out);
        if (m->heads > 1 && o < size)
            attn_cnum_format(out + o, size - o, "; MQA (one K/V head) would keep %ld",
                             2L * m->head_dim);
        o = strlen(out);
        if (groups > 1 && o < size)
            attn_cnum_format(out + o, size - o, ", GQA with %d K/V heads %ld", groups,
                             2L * groups * m->head_dim);
    }
}

bool inspect_is_kv_stage(enum attn_stage st)
{
    return st == STAGE_KEYS || st == STAGE_VALUES || st == STAGE_KEYS_ROTATED || st == STAGE_LATENT;
}

/* v in the largest of units (each step times the one before) that keeps it at least 1: "1.5
 * KiB", "12.7 MFLOP"; the first unit whole, the others to one decimal */
static void unit_text(char *out, size_t size, double v, double step, const char *const *unit,
                      int n_units)
{
    int u = 0;
    while (v >= step && u < n_units - 1) {
        v /= step;
        u++;
    }
    attn_cnum_format(out, size, u == 0 ? "%.0f %s" : "%.1f %s", v, unit[u]);
}
static const char *const BYTE_UNITS[] = {"bytes", "KiB", "MiB", "GiB"};
static const char *const FLOP_UNITS[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"};

int inspect_kv_cache_rows(char *brief, size_t brief_size, char *full, size_t full_size,
                          const struct app *a)
{
    const struct attn_net *net = &a->result.net;
    const struct attn_model *m = app_model(a);
    brief[0] = full[0] = '\0';
    if (!m->causal || !m->project || !kv_talk(a))
        return -1;
    /* what a token adds to each layer's cache: its key and value rows, or MLA's latent */
    long per = m->latent > 0 ? (long)m->latent : 2L * m->Dkv;
    char layer_b[32], all_b[32];
    double layer_bytes = 4.0 * (double)per * m->n, all = layer_bytes * net->layers;
    unit_text(layer_b, sizeof(layer_b), layer_bytes, 1024, BYTE_UNITS, 4);
    unit_text(all_b, sizeof(all_b), all, 1024, BYTE_UNITS, 4);
    int first_new = net->kept_rows > 0 && net->kept_rows < m->n ? net->kept_rows : 0;
    char rows[64] = "";
    if (first_new == m->n - 1)
        attn_cnum_format(rows, sizeof(rows), " \u00b7 row %d new (+)", first_new);
    else if (first_new > 0)
        attn_cnum_format(rows, sizeof(rows), " \u00b7 rows %d\u2013%d new (+)", first_new,
                         m->n - 1);
    attn_cnum_format(brief, brief_size, "KV cache %s a layer%s", layer_b, rows);
    attn_cnum_format(full, full_size,
                     "%d tokens \u00d7 %d layer%s \u00d7 %ld floats = %s (float32). A new token "
                     "computes its own row of every layer and reads the others' keys and values "
                     "here; without the cache it would compute all %d rows again.",
                     m->n, net->layers, net->layers == 1 ? "" : "s", per, all_b, m->n + 1);
    /* what the cache saves, in the matrix products of the last token's step: its row alone
       against every row again (attn_scene_product_flops) */
    double one = attn_scene_product_flops(&a->result.shown, m->n - 1),
           every = attn_scene_product_flops(&a->result.shown, 0);
    if (one > 0 && every > one) {
        char one_b[32], every_b[32];
        unit_text(one_b, sizeof(one_b), one, 1000, FLOP_UNITS, 5);
        unit_text(every_b, sizeof(every_b), every, 1000, FLOP_UNITS, 5);
        size_t o = strlen(full);
        attn_cnum_format(full + o, full_size - o,
                         " Row %d's products: %s with the cache, %s without (%.0f\u00d7).",
                         m->n - 1, one_b, every_b, every / one);
    }
    if (first_new > 0) {
        size_t o = strlen(full);
        if (first_new == m->n - 1)
            attn_cnum_format(full + o, full_size - o,
                             " The last edit kept rows 0\u2013%d and computed row %d (+).",
                             first_new - 1, first_new);
        else
            attn_cnum_format(full + o, full_size - o,
                             " The last edit kept rows 0\u2013%d and computed %d\u2013%d (+).",
                             first_new - 1, first_new, m->n - 1);
    }
    return first_new;
}

void inspect_kv_sharing(char *out, size_t size, const struct app *a, int head)
{
    const struct attn_model *m = app_model(a);
    out[0] = '\0';
    if (m->latent > 0) {
        attn_cnum_format(out, size, "K, V from the %d-float latent", m->latent);
        return;
    }
    if (m->kv_heads >= m->heads)
        return;
    int group = m->heads / m->kv_heads, kv = head / group;
    if (m->kv_heads == 1)
        attn_cnum_format(out, size, "KV head 0 (all %d heads)", m->heads);
    else
        attn_cnum_format(out, size, "KV head %d (heads %d\u2013%d)", kv, kv * group,
                         kv * group + group - 1);
}
