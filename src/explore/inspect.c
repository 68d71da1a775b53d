/* inspect: the selected cell explained with its real numbers, so a learner can connect the
 * picture to the formula. Pure text (no curses): the inspector panel draws it, tests read it.
 * Numbers use 4 decimals, as `attnscope print` and PyTorch do. */
#include "explore/inspect.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/cnum.h"

#define MAX_TERMS 6 /* terms written out before "+ …" */

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

/* A number inside a formula: negative ones in brackets, so "a×-b" reads "a×(-b)". */
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

/* Writes "a0×b0 + a1×b1 + ... = result" for a dot product of n terms. */
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

static void explain_projection(struct buf *b, const struct app *a, int i, int j, const char *q,
                               const float *w, const float *bias, const char *wname)
{
    const struct attn_model *m = &a->model;
    int c = a->head * m->head_dim + j; /* column in the concatenated (n, D) projection */
    float v = at(app_view(a, a->stage, a->head), i, j);
    if (!m->project) {
        put(b, "projection none: %s = x (Q = K = V = X)\n  = ", q);
        num(b, v);
        put(b, "\n");
        return;
    }
    /* The wrapper gives each head its own matrix (params/head<H>/ in an export); the split
     * layout one matrix whose columns the heads share. */
    if (a->shown.attn.layout == LAYOUT_WRAPPER)
        put(b, "%s[%d] = x \u00b7 head %d's %s[:, %d]%s\n", q, j, a->head, wname, j,
            bias ? " + b" : "");
    else
        put(b, "%s[%d] = x \u00b7 %s[:, %d]%s\n", q, j, wname, c, bias ? " + b" : "");
    terms(b, m->x + (size_t)i * m->d_in, 1, w + c, m->D, m->d_in);
    if (bias) {
        put(b, "    + ");
        operand(b, bias[c]);
        put(b, " (bias)\n");
    }
    put(b, "  = ");
    num(b, v);
    put(b, "\n");
}

static void explain_weights(struct buf *b, const struct app *a, int i, int j)
{
    const struct attn_model *m = &a->model;
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

void inspect_explain(char *out, size_t size, const struct app *a)
{
    struct buf b = {out, size, 0};
    out[0] = '\0';
    const struct attn_model *m = &a->model;
    const struct attn_run *r = &a->run;
    int i = a->row, j = a->col, h = a->head, hd = m->head_dim;
    struct attn_mat_view v = app_view(a, a->stage, h);
    if (i >= v.rows || j >= v.cols)
        return;
    float val = at(v, i, j);
    if (attn_stage_is_square(a->stage))
        put(&b, "\u201c%s\u201d looks at \u201c%s\u201d\n", m->tokens[i], m->tokens[j]);
    else
        put(&b, "\u201c%s\u201d, dimension %d\n", m->tokens[i], j);

    switch (a->stage) {
    case STAGE_INPUTS:
        put(&b, "input = token embedding");
        if (m->pos) {
            put(&b, " + position %d\n  = ", i);
            num(&b, m->embed[(size_t)i * m->d_in + j]);
            put(&b, " + ");
            num(&b, m->pos[(size_t)i * m->d_in + j]);
        }
        put(&b, "\n  = ");
        num(&b, val);
        put(&b, "\n");
        break;
    case STAGE_QUERIES:
        explain_projection(&b, a, i, j, "q", m->wq, m->bq, "W_query");
        break;
    case STAGE_KEYS:
        explain_projection(&b, a, i, j, "k", m->wk, m->bk, "W_key");
        break;
    case STAGE_VALUES:
        explain_projection(&b, a, i, j, "v", m->wv, m->bv, "W_value");
        break;
    case STAGE_SCORES:
        put(&b, "score = q_%d \u00b7 k_%d\n", i, j);
        terms(&b, r->q + (size_t)i * m->D + (size_t)h * hd, 1,
              r->k + (size_t)j * m->D + (size_t)h * hd, 1, hd);
        put(&b, "  = ");
        num(&b, val);
        put(&b, "\n");
        break;
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
    case STAGE_CONTEXT: {
        struct attn_mat_view w = app_view(a, STAGE_DROPOUT, h);
        put(&b, "context = \u03a3_j a_%d,j \u00b7 v_j[%d]\n", i, j);
        terms(&b, w.data + (size_t)i * w.stride, 1, r->v + (size_t)h * hd + j, m->D, m->n);
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
}
