/* model: draw or copy every number of a scene, in PyTorch's construction order (see model.h). */
#include "engine/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "engine/tokenize.h"

static float *falloc(size_t count)
{
    return calloc(count ? count : 1, sizeof(float));
}

static float *fdup(const float *src, size_t count)
{
    float *p = falloc(count);
    if (p && src)
        memcpy(p, src, count * sizeof(float));
    return p;
}

void attn_model_free(struct attn_model *m)
{
    attn_tokens_free(m->tokens, m->n);
    free(m->embed);
    free(m->pos);
    free(m->x);
    free(m->wq);
    free(m->wk);
    free(m->wv);
    free(m->bq);
    free(m->bk);
    free(m->bv);
    free(m->wo);
    free(m->bo);
    free(m->keep);
    memset(m, 0, sizeof(*m));
}

/* nn.Embedding(vocab, dim) over the distinct tokens in order of first appearance, then one row
 * per token. embed: (n, dim) */
static int draw_learned_embeddings(float *embed, const struct attn_scene *s, int dim,
                                   struct attn_rng *r)
{
    int n = s->n_tokens;
    int *ids = malloc((size_t)n * sizeof(int));
    if (!ids)
        return -1;
    int vocab = 0;
    for (int i = 0; i < n; i++) {
        ids[i] = -1;
        for (int j = 0; j < i; j++)
            if (strcmp(s->tokens[i], s->tokens[j]) == 0) {
                ids[i] = ids[j];
                break;
            }
        if (ids[i] < 0)
            ids[i] = vocab++;
    }
    float *table = falloc((size_t)vocab * (size_t)dim);
    if (!table) {
        free(ids);
        return -1;
    }
    attn_rng_normal(table, (size_t)vocab * (size_t)dim, 0.0f, 1.0f, r);
    for (int i = 0; i < n; i++)
        memcpy(embed + (size_t)i * dim, table + (size_t)ids[i] * dim, (size_t)dim * sizeof(float));
    free(table);
    free(ids);
    return 0;
}

/* One projection matrix as its module would draw it: nn.Linear(in, out) (weight, then bias) or
 * torch.rand(in, out). w: (in, out); bias: (out) or NULL */
static void draw_projection(float *w, float *bias, int in, int out, enum attn_projection p,
                            struct attn_rng *r)
{
    if (p == PROJ_RAND)
        attn_rng_rand(w, in, out, r);
    else
        attn_rng_linear_init(w, bias, in, out, r);
}

/* Copies block (rows, cols) into column offset col0 of dst (rows, ld). */
static void put_block(float *dst, int ld, int col0, const float *src, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        memcpy(dst + (size_t)i * ld + col0, src + (size_t)i * cols, (size_t)cols * sizeof(float));
}

static int draw_attention(struct attn_model *m, const struct attn_scene *s, struct attn_rng *r)
{
    enum attn_projection proj = attn_scene_eff_projection(s);
    int d_in = m->d_in, D = m->D;
    float *w[3] = {m->wq, m->wk, m->wv};
    float *b[3] = {m->bq, m->bk, m->bv};
    if (s->attn.seed.set)
        attn_rng_seed(r, s->attn.seed.value);
    if (s->attn.layout == LAYOUT_SPLIT) {
        for (int i = 0; i < 3; i++)
            draw_projection(w[i], b[i], d_in, D, proj, r);
    } else {
        /* MultiHeadAttentionWrapper: head 0's W_query, W_key, W_value, then head 1's, ... */
        int d_out = m->head_dim;
        float *tw = falloc((size_t)d_in * d_out), *tb = falloc((size_t)d_out);
        if (!tw || !tb) {
            free(tw);
            free(tb);
            return -1;
        }
        for (int h = 0; h < m->heads; h++)
            for (int i = 0; i < 3; i++) {
                draw_projection(tw, b[i] ? tb : NULL, d_in, d_out, proj, r);
                put_block(w[i], D, h * d_out, tw, d_in, d_out);
                if (b[i])
                    memcpy(b[i] + h * d_out, tb, (size_t)d_out * sizeof(float));
            }
        free(tw);
        free(tb);
    }
    if (m->wo)
        attn_rng_linear_init(m->wo, m->bo, D, D, r);
    return 0;
}

int attn_model_resolve(struct attn_model *m, const struct attn_scene *s, struct diag *err)
{
    memset(m, 0, sizeof(*m));
    const struct attn_config *a = &s->attn;
    const struct attn_scene_weights *sw = &s->weights;
    int n = s->n_tokens, d_in = attn_scene_d_in(s);
    m->d_in = d_in;
    m->heads = a->heads;
    m->head_dim = attn_scene_head_dim(s);
    m->D = attn_scene_concat_dim(s);
    m->project = attn_scene_eff_projection(s) != PROJ_NONE;
    m->dropout = a->dropout;
    m->causal = a->causal;
    m->mask_mode = a->mask_mode;
    m->normalize = a->normalize;
    m->scale = attn_scene_eff_scale(s);
    /* torch divides by the Python float d_k ** 0.5 (or the given number), cast to float32. */
    m->scale_divisor = m->scale == SCALE_SQRT_DK   ? (float)sqrt((double)m->head_dim)
                       : m->scale == SCALE_DIVISOR ? (float)a->scale_divisor
                                                   : 1.0f;

    m->tokens = attn_tokens_dup(s->tokens, n);
    if (!m->tokens)
        goto oom;
    m->n = n;

    struct attn_rng r;
    attn_rng_seed(&r, s->seed);

    size_t nx = (size_t)n * (size_t)d_in;
    if (!(m->embed = falloc(nx)) || !(m->x = falloc(nx)))
        goto oom;
    if (s->embed.kind == EMBED_EXPLICIT) {
        memcpy(m->embed, s->embed.rows.data, nx * sizeof(float));
    } else {
        if (s->embed.seed.set)
            attn_rng_seed(&r, s->embed.seed.value);
        if (draw_learned_embeddings(m->embed, s, d_in, &r))
            goto oom;
    }

    memcpy(m->x, m->embed, nx * sizeof(float));
    if (s->pos.kind == POS_LEARNED) {
        m->pos_rows = s->pos.max_len;
        size_t np = (size_t)m->pos_rows * (size_t)d_in;
        if (s->pos.table.data) {
            m->pos = fdup(s->pos.table.data, np);
        } else if ((m->pos = falloc(np))) {
            if (s->pos.seed.set)
                attn_rng_seed(&r, s->pos.seed.value);
            attn_rng_normal(m->pos, np, 0.0f, 1.0f, &r);
        }
        if (!m->pos)
            goto oom;
        for (size_t i = 0; i < nx; i++)
            m->x[i] = m->embed[i] + m->pos[i];
    }

    size_t nw = (size_t)d_in * (size_t)m->D, D = (size_t)m->D;
    if (m->project) {
        if (!(m->wq = falloc(nw)) || !(m->wk = falloc(nw)) || !(m->wv = falloc(nw)))
            goto oom;
        if (a->qkv_bias && (!(m->bq = falloc(D)) || !(m->bk = falloc(D)) || !(m->bv = falloc(D))))
            goto oom;
    }
    if (attn_scene_eff_out_proj(s)) {
        if (!(m->wo = falloc(D * D)) || (a->out_bias && !(m->bo = falloc(D))))
            goto oom;
    }
    if (sw->set) {
        if (m->project) {
            memcpy(m->wq, sw->query.data, nw * sizeof(float));
            memcpy(m->wk, sw->key.data, nw * sizeof(float));
            memcpy(m->wv, sw->value.data, nw * sizeof(float));
            if (m->bq) {
                memcpy(m->bq, sw->query_bias.data, D * sizeof(float));
                memcpy(m->bk, sw->key_bias.data, D * sizeof(float));
                memcpy(m->bv, sw->value_bias.data, D * sizeof(float));
            }
        }
        if (m->wo)
            memcpy(m->wo, sw->out.data, D * D * sizeof(float));
        if (m->bo)
            memcpy(m->bo, sw->out_bias.data, D * sizeof(float));
    } else if (m->project) {
        if (draw_attention(m, s, &r))
            goto oom;
    } else if (m->wo) {
        if (a->seed.set)
            attn_rng_seed(&r, a->seed.value);
        attn_rng_linear_init(m->wo, m->bo, m->D, m->D, &r);
    }

    if (a->dropout > 0.0) {
        size_t nk = (size_t)m->heads * (size_t)n * (size_t)n;
        if (!(m->keep = calloc(nk ? nk : 1, 1)))
            goto oom;
        if (sw->dropout_mask) {
            memcpy(m->keep, sw->dropout_mask, nk);
        } else if (a->dropout < 1.0) { /* torch's dropout(p=1) returns zeros without drawing */
            if (a->dropout_seed.set)
                attn_rng_seed(&r, a->dropout_seed.value);
            attn_rng_bernoulli(m->keep, nk, 1.0 - a->dropout, &r);
        }
    }
    return 0;

oom:
    attn_model_free(m);
    return diag_set(err, "", "out of memory while building the scene's parameters");
}

static int set_matrix(struct attn_matrix *dst, const float *src, int rows, int cols)
{
    if (!src)
        return 0;
    if (attn_matrix_alloc(dst, rows, cols))
        return -1;
    memcpy(dst->data, src, (size_t)rows * (size_t)cols * sizeof(float));
    return 0;
}

int attn_scene_from_model(struct attn_scene *out, const struct attn_scene *s,
                          const struct attn_model *m)
{
    if (attn_scene_copy(out, s))
        return -1;
    struct attn_config *a = &out->attn;
    /* Defaults made explicit; the part seeds are consumed, the global one is kept as a note. */
    a->projection = attn_scene_eff_projection(s);
    a->d_out = attn_scene_eff_d_out(s);
    a->out_proj = attn_scene_eff_out_proj(s) ? TRI_TRUE : TRI_FALSE;
    a->scale = attn_scene_eff_scale(s);
    if (a->scale == SCALE_DIVISOR)
        a->scale_divisor = s->attn.scale_divisor;
    a->seed.set = false;
    a->dropout_seed.set = false;

    attn_matrix_free(&out->embed.rows);
    out->embed.kind = EMBED_EXPLICIT;
    out->embed.seed.set = false;
    out->embed.dim = m->d_in;
    int rc = set_matrix(&out->embed.rows, m->embed, m->n, m->d_in);
    if (out->pos.kind == POS_LEARNED) {
        attn_matrix_free(&out->pos.table);
        out->pos.seed.set = false;
        rc |= set_matrix(&out->pos.table, m->pos, m->pos_rows, m->d_in);
    }

    struct attn_scene_weights *w = &out->weights;
    attn_scene_weights_free(w); /* m holds the authoritative numbers */
    w->set = m->project || m->wo;
    rc |= set_matrix(&w->query, m->wq, m->d_in, m->D) | set_matrix(&w->key, m->wk, m->d_in, m->D) |
          set_matrix(&w->value, m->wv, m->d_in, m->D) | set_matrix(&w->query_bias, m->bq, 1, m->D) |
          set_matrix(&w->key_bias, m->bk, 1, m->D) | set_matrix(&w->value_bias, m->bv, 1, m->D) |
          set_matrix(&w->out, m->wo, m->D, m->D) | set_matrix(&w->out_bias, m->bo, 1, m->D);
    /* p = 1 drops everything without a draw: the mask follows from p, and attn_scene_check refuses
     * one outside 0 < p < 1, so writing it would make an export that cannot be loaded. */
    if (m->keep && m->dropout < 1.0) {
        size_t nk = (size_t)m->heads * (size_t)m->n * (size_t)m->n;
        if ((w->dropout_mask = malloc(nk ? nk : 1))) {
            memcpy(w->dropout_mask, m->keep, nk);
            w->dropout_mask_n = m->n;
            w->dropout_mask_heads = m->heads;
        } else {
            rc = -1;
        }
    }
    if (rc) {
        attn_scene_free(out);
        return -1;
    }
    return 0;
}
