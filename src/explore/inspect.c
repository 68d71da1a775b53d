/* inspect: the selected cell explained with its real numbers, so a learner can connect the
 * picture to the formula. Pure text (no curses): the inspector panel draws it, tests read it.
 * Numbers use 4 decimals, as `attnscope print` and PyTorch do. */
#include "explore/inspect.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/cnum.h"

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
    int n = cnum_vformat(b->p + b->len, b->size - b->len, fmt, ap);
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
    const float *in = m->block && m->order == BLOCK_PRE ? app_run(a)->norm1 : m->x;
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
    int head = p == 0 ? a->head : a->head / (m->heads / m->kv_heads);
    int c = head * m->head_dim + j; /* column in the (n, width) projection */
    float v = at(app_view(a, a->stage, a->head), i, j);
    if (!m->project) {
        put(b, "projection none: %s = x (Q = K = V = X)\n  = ", q);
        num(b, v);
        put(b, "\n");
        return;
    }
    if (p > 0 && m->kv_heads < m->heads)
        put(b, "head %d reads KV head %d (%d query heads share each)\n", a->head, head,
            m->heads / m->kv_heads);
    if (p > 0 && m->latent > 0) {
        /* MLA: K and V come up out of the latent, not from x. */
        const float *up = p == 1 ? m->wkup : m->wvup;
        put(b, "%s[%d] = latent \u00b7 %s[:, %d] (MLA)\n", q, j, p == 1 ? "W_key_up" : "W_value_up",
            c);
        terms(b, app_run(a)->latent + (size_t)i * m->latent, 1, up + c, m->D, m->latent);
    } else {
        /* The wrapper gives each head its own matrix (params/head<H>/ in an export); the split
         * layout one matrix whose columns the heads share. */
        if (a->shown.attn.layout == LAYOUT_WRAPPER)
            put(b, "%s[%d] = x \u00b7 head %d's %s[:, %d]%s\n", q, j, a->head, wname, j,
                bias ? " + b" : "");
        else if (m->wqkv)
            put(b, "%s[%d] = x \u00b7 W_qkv[:, %d]%s (%s)\n", q, j, fused_column(m, p, c),
                bias ? " + b" : "",
                m->qkv == QKV_FUSED ? "chunk [Q | K | V]" : "head's 3\u00b7hd columns");
        else
            put(b, "%s[%d] = x \u00b7 %s[:, %d]%s\n", q, j, wname, c, bias ? " + b" : "");
        terms(b, attn_input(a, i), 1, w + c, width, m->d_in);
    }
    if (bias) {
        put(b, "    + ");
        operand(b, bias[c]);
        put(b, " (bias)\n");
    }
    put(b, "  = ");
    num(b, v);
    put(b, "\n");
    if (m->wqkv && a->shown.attn.layout != LAYOUT_WRAPPER) {
        int c0 = fused_column(m, p, head * m->head_dim);
        put(b, "head %d's %s: W_qkv columns %d\u2013%d%s\n", a->head, q, c0, c0 + m->head_dim - 1,
            m->qkv == QKV_FUSED ? "; one Linear cut in three gives the numbers of three"
                                : "; each head takes its own q, k, v block");
    }
}

/* A rotated q or k: the pair the selected dimension belongs to, turned by its angle. */
static void explain_rotation(struct buf *b, const struct app *a, int i, int j, bool keys)
{
    const struct attn_model *m = app_model(a);
    int hd = m->head_dim, half = hd / 2;
    int pair = m->rope_pairs == ROPE_ADJACENT ? j / 2 : j % half;
    int ja = m->rope_pairs == ROPE_ADJACENT ? 2 * pair : pair;
    int jb = m->rope_pairs == ROPE_ADJACENT ? 2 * pair + 1 : pair + half;
    struct attn_mat_view x = app_view(a, keys ? STAGE_KEYS : STAGE_QUERIES, a->head);
    float xa = at(x, i, ja), xb = at(x, i, jb);
    float c = m->rope_cos[(size_t)i * half + pair], s = m->rope_sin[(size_t)i * half + pair];
    int pos = a->shown.pos.offset + i;
    float theta = 1.0f / powf((float)a->shown.pos.base, (float)(2 * pair) / (float)hd);
    put(b, "RoPE turns dimensions (%d, %d) together, by position \u00d7 \u03b8_%d\n", ja, jb, pair);
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
    num(b, at(app_view(a, a->stage, a->head), i, j));
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
    num(b, at(app_view(a, a->stage, a->head), i, j));
    put(b, "\n");
}

/* A Linear of the FFN: the dot product of the row with W's column, plus the bias. */
static void explain_linear(struct buf *b, const struct app *a, int i, int j, const float *in,
                           int in_w, const float *w, int out_w, const float *bias, const char *what)
{
    put(b, "%s\n", what);
    terms(b, in + (size_t)i * in_w, 1, w + j, out_w, in_w);
    put(b, "    + ");
    operand(b, bias[j]);
    put(b, " (bias)\n  = ");
    num(b, at(app_view(a, a->stage, a->head), i, j));
    put(b, "\n");
}

static void explain_weights(struct buf *b, const struct app *a, int i, int j)
{
    const struct attn_model *m = app_model(a);
    /* The normalisation always reads the masked stage (= scaled when there is no mask). */
    struct attn_mat_view in = app_view(a, STAGE_MASKED, a->head);
    struct attn_mat_view w = app_view(a, STAGE_WEIGHTS, a->head);
    float x = at(in, i, j), y = at(w, i, j);
    float rowsum = 0;
    for (int k = 0; k < w.cols; k++)
        rowsum += at(w, i, k);
    if (m->causal && m->mask_mode == MASK_AFTER_SOFTMAX) {
        float s = 0;
        for (int k = 0; k < in.cols; k++)
            s += at(in, i, k);
        put(b, "renormalise the masked row:\n  weight = masked \u00f7 row sum\n  = ");
        num(b, x);
        put(b, " \u00f7 ");
        num(b, s);
    } else if (m->normalize == NORM_SUM) {
        float s = 0;
        for (int k = 0; k < in.cols; k++)
            if (isfinite(at(in, i, k)))
                s += at(in, i, k);
        put(b, "naive normalisation:\n  weight = s \u00f7 \u03a3 s (row)\n  = ");
        num(b, isinf(x) ? 0.0f : x);
        put(b, " \u00f7 ");
        num(b, s);
    } else if (isinf(x)) {
        put(b, "softmax of a masked cell:\n  exp(-\u221e) = 0, so the weight is 0");
    } else {
        float max = -INFINITY, s = 0;
        for (int k = 0; k < in.cols; k++)
            max = at(in, i, k) > max ? at(in, i, k) : max;
        for (int k = 0; k < in.cols; k++)
            s += isinf(at(in, i, k)) ? 0.0f : expf(at(in, i, k) - max);
        put(b,
            "softmax over the row:\n  weight = exp(s \u2212 max) \u00f7 \u03a3 exp(s \u2212 max)\n"
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
    const struct zoom_grid *g = &a->zoom_shown;
    const struct attn_model *m = app_model(a);
    struct attn_mat_view v = app_view(a, a->stage, a->head);
    if (app_showing_mean(a) && a->mean) /* app_shown_view's, made when the map was drawn */
        v = (struct attn_mat_view){a->mean, v.rows, v.cols, v.cols};
    else if (app_showing_delta(a) && a->delta) /* the Δ the map shows, the same way */
        v = (struct attn_mat_view){a->delta, v.rows, v.cols, v.cols};
    int r0, r1, c0, c1;
    zoom_block_span(g, a->row / g->br, a->col / g->bc, &r0, &r1, &c0, &c1);
    struct block_stats st;
    zoom_block_stats(&st, v, r0, r1, c0, c1);
    bool square = attn_stage_is_square(a->stage);
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
    put(b, "\n  the map shows each block's %s (b: its %s)\n", block_agg_name(a->block_agg),
        block_agg_name(a->block_agg == BLOCK_MAX ? BLOCK_MEAN : BLOCK_MAX));
    put(b, "the cursor's cell, row %d, column %d:\n", a->row, a->col);
}

void inspect_explain(char *out, size_t size, const struct app *a)
{
    struct buf b = {out, size, 0};
    out[0] = '\0';
    const struct attn_model *m = app_model(a);
    const struct attn_run *r = app_run(a);
    int i = a->row, j = a->col, h = a->head, hd = m->head_dim;
    struct attn_mat_view v = app_view(a, a->stage, h);
    if (i >= v.rows || j >= v.cols)
        return;
    const struct zoom_grid *g = &a->zoom_shown;
    if (!a->all_heads && a->zoom > 0 && (g->br > 1 || g->bc > 1) && g->rows == v.rows &&
        g->cols == v.cols)
        explain_block(&b, a);
    float val = at(v, i, j);
    if (attn_stage_is_square(a->stage))
        put(&b, "\u201c%s\u201d looks at \u201c%s\u201d\n", m->tokens[i], m->tokens[j]);
    else
        put(&b, "\u201c%s\u201d, dimension %d\n", m->tokens[i], j);
    if (app_delta_ok(a)) { /* a pinned baseline of this shape: then, now and the change */
        float base = at(app_base_view(a), i, j);
        float d = attn_cell_delta(val, base);
        put(&b, "baseline ");
        num(&b, base);
        put(&b, " \u2192 now ");
        num(&b, val);
        put(&b, "\n  \u0394 = %s", d > 0 ? "+" : "");
        num(&b, d);
        put(&b, "\n");
    }
    if (a->shown.token_ids) { /* a vocabulary's tokens: their ids, as the model sees them */
        const int *ids = a->net.model[0].ids;
        if (attn_stage_is_square(a->stage))
            put(&b, "token ids %d and %d\n", ids[i], ids[j]);
        else
            put(&b, "token id %d\n", ids[i]);
    }

    if (app_showing_mean(a)) { /* the mean over the heads: each head's value, then the mean */
        put(&b, "the mean over the %d heads of their %s\n", m->heads, attn_stage_name(a->stage));
        float sum = 0;
        for (int k = 0; k < m->heads; k++) {
            float x = at(app_view(a, a->stage, k), i, j);
            sum += x;
            if (k < MAX_TERMS) {
                put(&b, "  head %d: ", k);
                num(&b, x);
                put(&b, "\n");
            }
        }
        if (m->heads > MAX_TERMS)
            put(&b, "  \u2026 (%d more)\n", m->heads - MAX_TERMS);
        put(&b, "  mean = ");
        num(&b, sum / (float)m->heads);
        put(&b, "\n");
        return;
    }
    switch (a->stage) {
    case STAGE_INPUTS:
        if (m->layer > 0) {
            put(&b, "input = layer %d's output (its %s)\n  = ", m->layer - 1,
                attn_stage_name(attn_stage_block_output(&a->net.model[m->layer - 1])));
            num(&b, val);
            put(&b, "\n");
            break;
        }
        put(&b, "input = token embedding");
        if (m->pos) {
            int pos = a->shown.pos.offset + i;
            if (m->pos_kind == POS_SINUSOIDAL)
                put(&b, " + %s(position %d \u00b7 div_%d)\n  = ", j % 2 ? "cos" : "sin", pos,
                    j / 2);
            else
                put(&b, " + position %d's row\n  = ", pos);
            num(&b, m->embed[(size_t)i * m->d_in + j]);
            put(&b, " + ");
            num(&b, m->pos[((size_t)m->pos_offset + (size_t)i) * m->d_in + j]);
        }
        put(&b, "\n  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_LATENT:
        put(&b, "latent[%d] = x \u00b7 W_down[:, %d] (MLA: cached per token)\n", j, j);
        terms(&b, attn_input(a, i), 1, m->wdown + j, m->latent, m->d_in);
        put(&b, "  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_QUERIES:
        explain_projection(&b, a, i, j, 0, m->wq, m->bq, "W_query");
        break;
    case STAGE_KEYS:
        explain_projection(&b, a, i, j, 1, m->wk, m->bk, "W_key");
        break;
    case STAGE_VALUES:
        explain_projection(&b, a, i, j, 2, m->wv, m->bv, "W_value");
        break;
    case STAGE_QUERIES_ROTATED:
    case STAGE_KEYS_ROTATED:
        explain_rotation(&b, a, i, j, a->stage == STAGE_KEYS_ROTATED);
        break;
    case STAGE_SCORES: {
        int kvh = h / (m->heads / m->kv_heads);
        const float *q = m->rope ? r->qr : r->q, *k = m->rope ? r->kr : r->k;
        put(&b, "score = q_%d \u00b7 k_%d%s\n", i, j, m->rope ? " (both rotated)" : "");
        terms(&b, q + (size_t)i * m->D + (size_t)h * hd, 1,
              k + (size_t)j * m->Dkv + (size_t)kvh * hd, 1, hd);
        put(&b, "  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    }
    case STAGE_SCALED: {
        float s = at(app_view(a, STAGE_SCORES, h), i, j);
        if (m->scale == SCALE_NONE) {
            put(&b, "no scaling (scale: false)\n  = ");
        } else {
            if (m->scale == SCALE_SQRT_DK)
                put(&b, "scaled = score \u00f7 \u221ad_k, d_k = %d\n  = ", hd);
            else
                put(&b, "scaled = score \u00f7 %g\n  = ", (double)m->scale_divisor);
            num(&b, s);
            put(&b, " \u00f7 %.4f\n  = ", (double)m->scale_divisor);
        }
        num(&b, val);
        put(&b, "\n");
        break;
    }
    case STAGE_MASKED:
        if (!m->causal) {
            put(&b, "no causal mask: unchanged\n  = ");
        } else if (j > i) {
            put(&b, "\u201c%s\u201d comes after \u201c%s\u201d: a token may not look ahead,\n",
                m->tokens[j], m->tokens[i]);
            put(&b, m->mask_mode == MASK_BEFORE_SOFTMAX
                        ? "so the score becomes -\u221e (softmax turns it into 0)\n  = "
                        : "so its softmax weight is zeroed (mask after softmax)\n  = ");
        } else {
            put(&b, "\u201c%s\u201d is at or before \u201c%s\u201d: visible\n", m->tokens[j],
                m->tokens[i]);
            put(&b, m->mask_mode == MASK_BEFORE_SOFTMAX
                        ? "  = "
                        : "softmax first, future zeroed after (the book's first try)\n  = ");
        }
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_WEIGHTS:
        explain_weights(&b, a, i, j);
        break;
    case STAGE_DROPOUT: {
        float w = at(app_view(a, STAGE_WEIGHTS, h), i, j);
        if (!m->keep) {
            put(&b, "dropout p = %g: nothing dropped\n  = ", m->dropout);
        } else if (m->keep[(size_t)h * m->n * m->n + (size_t)i * m->n + j]) {
            float f = 1.0f / (float)(1.0 - m->dropout);
            put(&b, "kept (probability 1 \u2212 p = %g),\nscaled by 1/(1 \u2212 p) = ",
                1.0 - m->dropout);
            num(&b, f);
            put(&b, "\n  = ");
            num(&b, w);
            put(&b, " \u00d7 ");
            num(&b, f);
            put(&b, "\n  = ");
        } else {
            put(&b, "dropped (probability p = %g)\n  = ", m->dropout);
        }
        num(&b, val);
        float rowsum = 0;
        for (int k = 0; k < v.cols; k++)
            rowsum += at(v, i, k);
        put(&b, "\nrow \u03a3 = ");
        num(&b, rowsum);
        put(&b, m->keep ? " (no longer 1)\n" : "\n");
        break;
    }
    case STAGE_WEIGHTED_NORM: { /* Kobayashi et al. 2020, "Attention is not only a weight" */
        float w = at(app_view(a, STAGE_DROPOUT, h), i, j);
        if (m->wo)
            put(&b,
                "norm = |a_%d,%d| \u00b7 \u2016v_%d \u00b7 W_O^%d\u2016: how far key %d moves "
                "the output\n  = |",
                i, j, j, h, j);
        else
            put(&b, "norm = |a_%d,%d| \u00b7 \u2016v_%d\u2016 (no out_proj)\n  = |", i, j, j);
        num(&b, w);
        put(&b, "| \u00d7 ");
        num(&b, attn_value_norms(r, m, h)[j]);
        put(&b, "\n  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    }
    case STAGE_CONTEXT: {
        struct attn_mat_view w = app_view(a, STAGE_DROPOUT, h);
        put(&b, "context = \u03a3_j a_%d,j \u00b7 v_j[%d]\n", i, j);
        int kvh = h / (m->heads / m->kv_heads);
        terms(&b, w.data + (size_t)i * w.stride, 1, r->v + (size_t)kvh * hd + j, m->Dkv, m->n);
        put(&b, "  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    }
    case STAGE_CONCAT:
        put(&b, "column %d = head %d's context, dimension %d\n  = ", j, j / hd, j % hd);
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_RESIDUAL1:
        put(&b, "residual: the input plus what attention adds\n  = ");
        num(&b, m->x[(size_t)i * m->d_in + j]);
        put(&b, " + ");
        operand(&b, r->output[(size_t)i * m->D + j]);
        put(&b, "\n  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_NORM1:
        if (m->order == BLOCK_PRE)
            explain_norm(&b, a, i, j, m->x, m->n1w, m->n1b, "the input (pre-norm)");
        else
            explain_norm(&b, a, i, j, r->res1, m->n1w, m->n1b, "residual1");
        break;
    case STAGE_NORM2:
        if (m->order == BLOCK_PRE)
            explain_norm(&b, a, i, j, r->res1, m->n2w, m->n2b, "residual1 (the FFN's input)");
        else
            explain_norm(&b, a, i, j, r->res2, m->n2w, m->n2b, "residual2");
        break;
    case STAGE_FINAL_NORM:
        explain_norm(&b, a, i, j, m->order == BLOCK_POST ? r->norm2 : r->res2, m->fw, m->fb,
                     "the last layer's output (the final norm, ln_f)");
        break;
    case STAGE_FFN_HIDDEN:
        explain_linear(&b, a, i, j, m->order == BLOCK_POST ? r->norm1 : r->norm2, m->d_in, m->w1,
                       m->hidden, m->b1, "the FFN widens: hidden = x \u00b7 W1 + b1");
        break;
    case STAGE_FFN_ACTIVATED: {
        float x = r->ffn_hidden[(size_t)i * m->hidden + j];
        if (m->activation == ACT_RELU)
            put(&b, "ReLU keeps positives, zeroes the rest\n  = max(0, ");
        else if (m->activation == ACT_GELU_TANH)
            put(&b, "GELU, tanh form (GPT-2's gelu_new)\n"
                    "  = \u00bd x (1 + tanh(\u221a(2/\u03c0) (x + 0.044715 x\u00b3)))\n  = gelu(");
        else
            put(&b, "GELU = x \u00b7 \u03a6(x) = \u00bd x (1 + erf(x \u00f7 \u221a2))\n  = gelu(");
        num(&b, x);
        put(&b, ")\n  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    }
    case STAGE_FFN_OUT:
        explain_linear(&b, a, i, j, r->ffn_act, m->hidden, m->w2, m->d_in, m->b2,
                       "and narrows back: out = activated \u00b7 W2 + b2");
        break;
    case STAGE_RESIDUAL2:
        put(&b, "residual: %s plus the FFN's output\n  = ",
            m->order == BLOCK_POST ? "norm1" : "residual1");
        num(&b, (m->order == BLOCK_POST ? r->norm1 : r->res1)[(size_t)i * m->d_in + j]);
        put(&b, " + ");
        operand(&b, r->ffn_out[(size_t)i * m->d_in + j]);
        put(&b, "\n  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_OUTPUT:
    case STAGE_COUNT:
        if (!m->wo) {
            put(&b, "no out_proj: output = concat\n  = ");
        } else {
            put(&b, "output = concat \u00b7 W_out[:, %d]%s\n", j, m->bo ? " + b" : "");
            terms(&b, r->concat + (size_t)i * m->D, 1, m->wo + j, m->D, m->D);
            if (m->bo) {
                put(&b, "    + ");
                operand(&b, m->bo[j]);
                put(&b, " (bias)\n");
            }
            put(&b, "  = ");
        }
        num(&b, val);
        put(&b, "\n");
        break;
    }
    if (a->stage == STAGE_WEIGHTS) {
        const struct head_scores *sc = app_scores(a, a->layer, h);
        put(&b, "\nthis head's pattern scores:\n ");
        for (int k = 0; k < SCORE_COUNT; k++) {
            put(&b, " %s ", attn_head_score_name((enum head_score)k));
            if (sc->defined[k])
                put(&b, "%.2f", sc->value[k]);
            else
                put(&b, "-");
        }
        put(&b, "\n");
    }
    if (a->stage == STAGE_KEYS || a->stage == STAGE_VALUES || a->stage == STAGE_KEYS_ROTATED ||
        a->stage == STAGE_LATENT) {
        char cache[200];
        inspect_kv_cache(cache, sizeof(cache), a);
        put(&b, "\n%s\n", cache);
    }
}

void inspect_kv_cache(char *out, size_t size, const struct app *a)
{
    const struct attn_model *m = app_model(a);
    long mha = 2L * m->heads * m->head_dim;
    if (m->latent > 0)
        cnum_format(out, size,
                    "KV cache per token: %d floats, the latent (MLA); plain multi-head "
                    "attention needs %ld",
                    m->latent, mha);
    else if (m->kv_heads < m->heads)
        cnum_format(out, size,
                    "KV cache per token: 2\u00d7%d KV head%s\u00d7%d = %ld floats (%s); "
                    "plain multi-head attention needs %ld",
                    m->kv_heads, m->kv_heads == 1 ? "" : "s", m->head_dim,
                    2L * m->kv_heads * m->head_dim, m->kv_heads == 1 ? "MQA" : "GQA", mha);
    else
        cnum_format(out, size, "KV cache per token: 2\u00d7%d heads\u00d7%d = %ld floats", m->heads,
                    m->head_dim, mha);
}

void inspect_kv_sharing(char *out, size_t size, const struct app *a, int head)
{
    const struct attn_model *m = app_model(a);
    out[0] = '\0';
    if (m->latent > 0) {
        cnum_format(out, size, "K, V from the %d-float latent", m->latent);
        return;
    }
    if (m->kv_heads >= m->heads)
        return;
    int group = m->heads / m->kv_heads, kv = head / group;
    if (m->kv_heads == 1)
        cnum_format(out, size, "KV head 0 (all %d heads)", m->heads);
    else
        cnum_format(out, size, "KV head %d (heads %d\u2013%d)", kv, kv * group,
                    kv * group + group - 1);
}
