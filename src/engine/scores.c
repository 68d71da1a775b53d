/* scores: the arithmetic of the (n, n) stages, which the forward pass and the views of the
 * derived stages share so that they agree to the bit: which keys a query sees, scaling, the mask,
 * the rows' normalisation, dropout; and the causal panels the heads are cut into. */
#include "engine/scores.h"

#include <math.h>

#include "engine/attention.h"
#include "engine/kernels.h"

/* True when the row-wise products run on row panels: a causal net computed panel by panel.
 * Every other scene keeps one product over all its rows. */
bool attn_row_panels(const struct attn_model *m)
{
    return attn_causal_tiled(m);
}

/* The rows of a causal panel: attn_row_panel(), never above PANEL (the scratch is sized so). */
int attn_panel_rows(void)
{
    int p = attn_row_panel();
    return p > 0 && p < PANEL ? p : PANEL;
}

#ifdef ATTNSCOPE_TEST_HOOKS
bool attn_causal_untiled; /* tests: causal scenes by the full path, to compare with */
#endif

/* True when the forward pass computes head h panel by panel, the future skipped: a causal mask
 * before a softmax, no sliding window. Anything else takes the full path. */
bool attn_causal_tiled(const struct attn_model *m)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_causal_untiled)
        return false;
#endif
    return m->causal && m->mask_mode == MASK_BEFORE_SOFTMAX && m->normalize == NORMALIZE_SOFTMAX;
}

/* True when query i may not see key j: the future of a causal mask, or a key the sliding
 * window has left behind. */
bool attn_hidden_key(const struct attn_model *m, int i, int j)
{
    return (m->causal && j > i) || (m->window > 0 && i - j >= m->window);
}

/* Sets every hidden cell (attn_hidden_key) of a to value: -inf before the softmax, 0 after it.
 * a: (n, n_kv) */
static void fill_hidden(float *a, const struct attn_model *m, float value)
{
    int n = m->n, nk = m->n_kv;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < nk; j++)
            if (attn_hidden_key(m, i, j))
                a[(size_t)i * nk + j] = value;
}

const float *attn_head_bias(const struct attn_model *m, int h)
{
    return m->pos_bias ? m->pos_bias + (size_t)h * (size_t)m->n * (size_t)m->n_kv : NULL;
}

void attn_add_bias_row(float *row, const float *bias_row, int count)
{
    for (int j = 0; bias_row && j < count; j++)
        row[j] = row[j] + bias_row[j];
}

/* out (rows, cols) = each row of in normalised by softmax or by its sum. */
void attn_normalize_rows(float *out, const float *in, int rows, int cols, enum attn_normalize how)
{
    if (how == NORMALIZE_SUM)
        attn_sumnorm_rows(out, in, rows, cols);
    else
        attn_softmax_rows(out, in, rows, cols);
}

/* out (n, n_kv) = one head's scaled scores: scores / divisor. */
void attn_scale_scores(float *out, const float *scores, const struct attn_model *m)
{
    size_t nn = (size_t)m->n * (size_t)m->n_kv;
    for (size_t i = 0; i < nn; i++)
        out[i] = scores[i] / m->scale_divisor;
}

void attn_bias_scores(float *out, const float *scores, const float *bias,
                      const struct attn_model *m)
{
    attn_scale_scores(out, scores, m);
    attn_add_bias_row(out, bias, m->n * m->n_kv);
}

void attn_softcap(float *x, size_t count, float cap)
{
    for (size_t j = 0; j < count; j++)
        x[j] = tanhf(x[j] / cap) * cap;
}

void attn_softcap_row(float *row, int count, const struct attn_model *m)
{
    if (m->softcap > 0)
        attn_softcap(row, (size_t)count, m->softcap);
}

void attn_hide_window(float *row, int i, const struct attn_model *m)
{
    for (int j = 0; m->window > 0 && j <= i - m->window; j++)
        row[j] = -INFINITY;
}

void attn_cap_scores(float *out, const float *scores, const float *bias, const struct attn_model *m)
{
    attn_bias_scores(out, scores, bias, m);
    for (int i = 0; i < m->n; i++)
        attn_softcap_row(out + (size_t)i * m->n_kv, m->n_kv, m);
}

/* out (n, n_kv) = one head's masked stage from its scores: scaled (plus the position bias, the
 * head's (n, n_kv) or NULL), then -inf where the key is hidden (the future, a key out of the
 * sliding window; before_softmax), or normalised with them zeroed (after_softmax); without a
 * mask, scaled. The forward pass and attn_view both call this, so they agree to the bit. */
void attn_mask_scores(float *out, const float *scores, const float *bias,
                      const struct attn_model *m)
{
    attn_cap_scores(out, scores, bias, m); /* scaled (and biased) when there is no cap */
    if (!m->causal && m->window <= 0)
        return;
    if (m->mask_mode == MASK_BEFORE_SOFTMAX) { /* a hidden key is -inf whatever it scaled to */
        fill_hidden(out, m, -INFINITY);
        return;
    }
    /* the book's first try: normalise, then zero the future */
    attn_normalize_rows(out, out, m->n, m->n_kv, m->normalize);
    fill_hidden(out, m, 0.0f);
}

/* out (count) = weights after dropout: torch's nn.Dropout makes noise = keep / (1 - p) in float,
 * then weights * noise. keep: the mask of the same cells (a head's n * n, or rows of it). */
void attn_drop_weights(float *out, const float *weights, const unsigned char *keep, size_t count,
                       const struct attn_model *m)
{
    float keep_scale = 1.0f / (float)(1.0 - m->dropout);
    for (size_t i = 0; i < count; i++)
        out[i] = weights[i] * (keep[i] ? keep_scale : 0.0f);
}

/* The KV head query head h reads. */
int attn_kv_head_of(const struct attn_model *m, int h)
{
    return h / (m->heads / m->kv_heads);
}

/* The columns of row i a query reads: the visible keys of a mask before the softmax (the rest
 * are -inf by design, and the tiled pass never computes most of them), else the whole row. */
void attn_visible_cols(const struct attn_model *m, int i, int *j0, int *j1)
{
    *j0 = 0;
    *j1 = m->n_kv;
    if (m->mask_mode != MASK_BEFORE_SOFTMAX)
        return;
    if (m->causal)
        *j1 = i + 1;
    if (m->window > 0 && i - m->window + 1 > 0)
        *j0 = i - m->window + 1;
}
