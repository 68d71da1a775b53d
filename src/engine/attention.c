/* attention: the forward pass with every stage kept (see attention.h). */
#include "engine/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"

void attn_run_free(struct attn_run *r)
{
    free(r->q);
    free(r->k);
    free(r->v);
    free(r->scores);
    free(r->scaled);
    free(r->masked);
    free(r->weights);
    free(r->dropped);
    free(r->concat);
    free(r->output);
    memset(r, 0, sizeof(*r));
}

int attn_run_init(struct attn_run *r, const struct attn_model *m, struct diag *err)
{
    if (r->q && r->n == m->n && r->d_in == m->d_in && r->heads == m->heads &&
        r->head_dim == m->head_dim && r->D == m->D)
        return 0; /* same shape: reuse every buffer */
    attn_run_free(r);
    size_t nd = (size_t)m->n * (size_t)m->D;
    size_t hnn = (size_t)m->heads * (size_t)m->n * (size_t)m->n;
    float **nd_bufs[] = {&r->q, &r->k, &r->v, &r->concat, &r->output};
    float **nn_bufs[] = {&r->scores, &r->scaled, &r->masked, &r->weights, &r->dropped};
    for (size_t i = 0; i < sizeof(nd_bufs) / sizeof(nd_bufs[0]); i++)
        if (!(*nd_bufs[i] = calloc(nd ? nd : 1, sizeof(float))))
            goto oom;
    for (size_t i = 0; i < sizeof(nn_bufs) / sizeof(nn_bufs[0]); i++)
        if (!(*nn_bufs[i] = calloc(hnn ? hnn : 1, sizeof(float))))
            goto oom;
    r->n = m->n;
    r->d_in = m->d_in;
    r->heads = m->heads;
    r->head_dim = m->head_dim;
    r->D = m->D;
    return 0;
oom:
    attn_run_free(r);
    return diag_set(err, "", "out of memory for the attention stages");
}

/* Q = X Wq + bq (or X itself, once per head, when there is no projection). q: (n, D) */
static void project(float *q, const struct attn_model *m, const float *w, const float *b)
{
    if (m->project) {
        attn_mm_ab(q, m->D, m->x, m->d_in, w, m->D, b, m->n, m->D, m->d_in);
        return;
    }
    for (int h = 0; h < m->D / m->d_in; h++)
        for (int i = 0; i < m->n; i++)
            memcpy(q + (size_t)i * m->D + (size_t)h * m->d_in, m->x + (size_t)i * m->d_in,
                   (size_t)m->d_in * sizeof(float));
}

/* Sets the future (j > i) of a to value: -inf before the softmax, 0 after it. a: (n, n) */
static void fill_future(float *a, int n, float value)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            a[(size_t)i * n + j] = value;
}

/* out (n, n) = each row of in normalised by softmax or by its sum. */
static void normalize_rows(float *out, const float *in, int n, enum attn_normalize how)
{
    if (how == NORM_SUM)
        attn_sumnorm_rows(out, in, n, n);
    else
        attn_softmax_rows(out, in, n, n);
}

void attn_forward(struct attn_run *r, const struct attn_model *m)
{
    int n = m->n, D = m->D, hd = m->head_dim;
    size_t nn = (size_t)n * (size_t)n;
    project(r->q, m, m->wq, m->bq);
    project(r->k, m, m->wk, m->bk);
    project(r->v, m, m->wv, m->bv);

    /* torch's nn.Dropout: noise = keep / (1 - p) in float, then weights * noise. */
    float keep_scale = m->keep ? 1.0f / (float)(1.0 - m->dropout) : 1.0f;
    for (int h = 0; h < m->heads; h++) {
        const float *qh = r->q + (size_t)h * hd, *kh = r->k + (size_t)h * hd;
        const float *vh = r->v + (size_t)h * hd;
        float *scores = r->scores + h * nn, *scaled = r->scaled + h * nn;
        float *masked = r->masked + h * nn, *weights = r->weights + h * nn;
        float *dropped = r->dropped + h * nn;

        attn_mm_abt(scores, n, qh, D, kh, D, n, n, hd);
        for (size_t i = 0; i < nn; i++) /* the divisor is 1 without scaling: x / 1 == x */
            scaled[i] = scores[i] / m->scale_divisor;

        if (!m->causal) {
            memcpy(masked, scaled, nn * sizeof(float));
            normalize_rows(weights, masked, n, m->normalize);
        } else if (m->mask_mode == MASK_BEFORE_SOFTMAX) {
            memcpy(masked, scaled, nn * sizeof(float));
            fill_future(masked, n, -INFINITY);
            normalize_rows(weights, masked, n, m->normalize);
        } else {
            /* The book's first try: normalise, zero the future, renormalise by the row sums. */
            normalize_rows(masked, scaled, n, m->normalize);
            fill_future(masked, n, 0.0f);
            attn_sumnorm_rows(weights, masked, n, n);
        }

        if (m->keep) {
            const unsigned char *keep = m->keep + h * nn;
            for (size_t i = 0; i < nn; i++)
                dropped[i] = weights[i] * (keep[i] ? keep_scale : 0.0f);
        } else {
            memcpy(dropped, weights, nn * sizeof(float));
        }
        /* This head's context goes straight into its column block of the concatenation. */
        attn_mm_ab(r->concat + (size_t)h * hd, D, dropped, n, vh, D, NULL, n, hd, n);
    }

    if (m->wo)
        attn_mm_ab(r->output, D, r->concat, D, m->wo, D, m->bo, n, D, D);
    else
        memcpy(r->output, r->concat, (size_t)n * D * sizeof(float));
}

struct attn_mat_view attn_view(const struct attn_run *r, const struct attn_model *m,
                               enum attn_stage s, int h)
{
    int n = m->n, D = m->D, hd = m->head_dim;
    size_t nn = (size_t)n * (size_t)n, col = (size_t)h * (size_t)hd;
    switch (s) {
    case STAGE_INPUTS:
        return (struct attn_mat_view){m->x, n, m->d_in, m->d_in};
    case STAGE_QUERIES:
        return (struct attn_mat_view){r->q + col, n, hd, D};
    case STAGE_KEYS:
        return (struct attn_mat_view){r->k + col, n, hd, D};
    case STAGE_VALUES:
        return (struct attn_mat_view){r->v + col, n, hd, D};
    case STAGE_SCORES:
        return (struct attn_mat_view){r->scores + h * nn, n, n, n};
    case STAGE_SCALED:
        return (struct attn_mat_view){r->scaled + h * nn, n, n, n};
    case STAGE_MASKED:
        return (struct attn_mat_view){r->masked + h * nn, n, n, n};
    case STAGE_WEIGHTS:
        return (struct attn_mat_view){r->weights + h * nn, n, n, n};
    case STAGE_DROPOUT:
        return (struct attn_mat_view){r->dropped + h * nn, n, n, n};
    case STAGE_CONTEXT:
        return (struct attn_mat_view){r->concat + col, n, hd, D};
    case STAGE_CONCAT:
        return (struct attn_mat_view){r->concat, n, D, D};
    case STAGE_OUTPUT:
    case STAGE_COUNT:
        break;
    }
    return (struct attn_mat_view){r->output, n, D, D};
}

bool attn_stage_is_off(const struct attn_model *m, enum attn_stage s)
{
    return (s == STAGE_SCALED && m->scale == SCALE_NONE) || (s == STAGE_MASKED && !m->causal) ||
           (s == STAGE_DROPOUT && !m->keep) || (s == STAGE_OUTPUT && !m->wo);
}

int attn_compute(struct attn_model *m, struct attn_run *r, const struct attn_scene *s,
                 struct diag *err)
{
    struct attn_model fresh;
    if (attn_model_resolve(&fresh, s, err))
        return -1;
    /* A new shape gets new buffers first, so a failure leaves the old result intact. */
    struct attn_run next = *r;
    bool same = r->q && r->n == fresh.n && r->d_in == fresh.d_in && r->heads == fresh.heads &&
                r->head_dim == fresh.head_dim && r->D == fresh.D;
    if (!same) {
        memset(&next, 0, sizeof(next));
        if (attn_run_init(&next, &fresh, err)) {
            attn_model_free(&fresh);
            return -1;
        }
        attn_run_free(r);
    }
    *r = next;
    attn_forward(r, &fresh);
    attn_model_free(m);
    *m = fresh;
    return 0;
}
