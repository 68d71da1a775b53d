/* model: draw or copy every number of a scene, in PyTorch's construction order (see model.h). */
#include "engine/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/fatal.h"
#include "engine/kernels.h"
#include "engine/lesson.h"
#include "engine/rng.h"
#include "engine/tokenize.h"

static float *falloc(size_t count)
{
    return calloc(count ? count : 1, sizeof(float));
}

/* ---- the buffers: ATTN_MODEL_BUFS, owned or borrowed ------------------------------------- */

#define BUF_MEMBER_OFFSET(name) ATTN_MEMBER(name),
static const size_t BUF_MEMBER[ATTN_MODEL_NBUFS] = {ATTN_MODEL_BUFS(BUF_MEMBER_OFFSET)};
#undef BUF_MEMBER_OFFSET
#define BUF_IS_FLOATS(name)                                                                        \
    _Static_assert(_Generic(((struct attn_model *)0)->name, float * : 1, default : 0),             \
                   #name " is a buffer of floats");
ATTN_MODEL_BUFS(BUF_IS_FLOATS)
#undef BUF_IS_FLOATS

/* The member buffer b is, in m: to set, and to read (a const model's are as writable as they
 * were). */
static float **buf_at(struct attn_model *m, enum attn_model_buf b)
{
    return (float **)(void *)((char *)m + BUF_MEMBER[b]);
}

static float *buf_of(const struct attn_model *m, enum attn_model_buf b)
{
    return *(float *const *)(const void *)((const char *)m + BUF_MEMBER[b]);
}

/* Which buffer member (&m->wq, ...) is. Anything else is a broken invariant. */
static enum attn_model_buf buf_named(const struct attn_model *m, float *const *member)
{
    size_t off = (size_t)((const char *)member - (const char *)m);
    for (int b = 0; b < ATTN_MODEL_NBUFS; b++)
        if (BUF_MEMBER[b] == off)
            return (enum attn_model_buf)b;
    abort();
}

size_t attn_model_buf_count(const struct attn_model *m, enum attn_model_buf b)
{
    size_t n = (size_t)m->n, d = (size_t)m->d_in, D = (size_t)m->D, Dkv = (size_t)m->Dkv;
    size_t lr = (size_t)m->latent, h = (size_t)m->hidden, E = (size_t)m->out_dim;
    size_t hd = (size_t)m->head_dim, V = (size_t)m->vocab, rd = (size_t)m->rope_dims;
    switch (b) { /* every buffer: -Wswitch names one left out */
    case ATTN_BUF_embed:
    case ATTN_BUF_types:
    case ATTN_BUF_x:
        return n * d;
    case ATTN_BUF_pos:
        return (size_t)m->pos_rows * d;
    case ATTN_BUF_wqkv:
        return d * (D + 2 * Dkv);
    case ATTN_BUF_bqkv:
        return D + 2 * Dkv;
    case ATTN_BUF_wq:
        return d * D;
    case ATTN_BUF_wk:
    case ATTN_BUF_wv:
        return d * Dkv;
    case ATTN_BUF_bq:
        return D;
    case ATTN_BUF_bk:
    case ATTN_BUF_bv:
        return Dkv;
    case ATTN_BUF_wdown:
        return d * lr;
    case ATTN_BUF_wkup:
    case ATTN_BUF_wvup:
        return lr * D;
    case ATTN_BUF_wo:
        return D * E;
    case ATTN_BUF_bo:
        return E;
    case ATTN_BUF_qnw:
        return m->qk_norm_whole ? D : hd;
    case ATTN_BUF_knw:
        return m->qk_norm_whole ? Dkv : hd;
    case ATTN_BUF_rope_inv:
        return rd / 2;
    case ATTN_BUF_rope_cos:
    case ATTN_BUF_rope_sin:
        return n * (rd / 2);
    case ATTN_BUF_pos_bias:
        return (size_t)m->heads * n * (size_t)m->n_kv;
    case ATTN_BUF_w1:
    case ATTN_BUF_w2:
    case ATTN_BUF_wg:
        return d * h;
    case ATTN_BUF_wr:
        return d * (size_t)m->n_experts;
    case ATTN_BUF_wsg:
    case ATTN_BUF_wsu:
    case ATTN_BUF_wsd:
        return d * (size_t)m->shared_hidden;
    case ATTN_BUF_wsgate:
        return d;
    case ATTN_BUF_b1:
    case ATTN_BUF_bg:
        return h;
    case ATTN_BUF_hw:
        return d * d;
    case ATTN_BUF_enw:
    case ATTN_BUF_enb:
    case ATTN_BUF_b2:
    case ATTN_BUF_n1w:
    case ATTN_BUF_n1b:
    case ATTN_BUF_n2w:
    case ATTN_BUF_n2b:
    case ATTN_BUF_pn1w:
    case ATTN_BUF_pn2w:
    case ATTN_BUF_fw:
    case ATTN_BUF_fb:
    case ATTN_BUF_hb:
    case ATTN_BUF_hnw:
    case ATTN_BUF_hnb:
        return d;
    case ATTN_BUF_unembed:
        return V * d;
    case ATTN_BUF_unembed_bias:
        return V;
    case ATTN_MODEL_NBUFS:
        break;
    }
    abort();
}

/* *member = count zeroed floats of m's own (attn_model_free frees them). Returns them, or NULL
 * when out of memory. */
static float *own(struct attn_model *m, float **member, size_t count)
{
    enum attn_model_buf b = buf_named(m, member);
    free(m->owned[b]);
    *member = m->owned[b] = falloc(count);
    return *member;
}

/* *member = p, borrowed: m reads it and never frees it. */
static void borrow(struct attn_model *m, float **member, float *p)
{
    enum attn_model_buf b = buf_named(m, member);
    free(m->owned[b]);
    m->owned[b] = NULL;
    *member = p;
}

/* ---- lazy matrices: one widened at a time ------------------------------------------------ */

/* The widening buffer of the calling thread (attn_param_cache_slot), made on first use. NULL
 * when out of memory. */
static float *cache_buffer(struct attn_backing *b)
{
    struct attn_param_cache *c = attn_param_cache_get(b);
    return c ? c->buf : NULL;
}

/* How many stored rows of row_len floats fit in the turn buffer at once (at least one). */
static size_t turn_block(size_t row_len)
{
    size_t block = ATTN_TURN_BLOCK_FLOATS / (row_len ? row_len : 1);
    return block < 1 ? 1 : block;
}

/* Widens lazy matrix p into the buffer, x @ W: a transposed tensor (cols, rows) is read a block of
 * its rows at a time and written column by column. */
static void widen(struct attn_backing *b, const struct attn_lazy_param *p)
{
    struct attn_param_cache *c = b->cache[attn_param_cache_slot()];
    if (c->tensor == p->tensor)
        return;
    size_t rows = (size_t)p->rows, cols = (size_t)p->cols;
    if (!p->transposed) {
        b->read_rows(b, p->tensor, c->buf, 0, rows);
    } else {
        size_t block = turn_block(rows);
        for (size_t c0 = 0; c0 < cols; c0 += block) {
            size_t nb = cols - c0 < block ? cols - c0 : block;
            b->read_rows(b, p->tensor, c->turn, c0, nb); /* (nb, rows): columns c0 .. of W */
            for (size_t r = 0; r < rows; r++) {
                float *dst = c->buf + r * cols + c0;
                for (size_t k = 0; k < nb; k++)
                    dst[k] = c->turn[k * rows + r];
            }
        }
    }
    c->tensor = p->tensor;
}

/* The lazy (widened on demand) parameter behind member, or NULL if it is an ordinary one. */
static const struct attn_lazy_param *lazy_of(const struct attn_model *m, size_t member)
{
    for (int i = 0; i < m->n_lazy; i++)
        if (m->lazy[i].member == member)
            return &m->lazy[i];
    return NULL;
}

const float *attn_model_param(const struct attn_model *m, size_t member)
{
    const struct attn_lazy_param *lazy = lazy_of(m, member);
    if (lazy) {
        widen(m->lazy_from, lazy);
        return m->lazy_from->cache[attn_param_cache_slot()]->buf;
    }
    return *(float *const *)(const void *)((const char *)m + member);
}

/* True for wq, wk and wv while they are views into wqkv. */
static bool qkv_view(const struct attn_model *m, size_t member)
{
    return m->qkv_ld > 0 &&
           (member == ATTN_MEMBER(wq) || member == ATTN_MEMBER(wk) || member == ATTN_MEMBER(wv));
}

int attn_model_param_ld(const struct attn_model *m, size_t member, int cols)
{
    return qkv_view(m, member) ? m->qkv_ld : cols;
}

/* out (rows, cols) = in (rows, k) @ W (+ bias) for a lazy W stored turned, (cols, k): a block
 * of its rows is a block of W's columns, widened into the backing's turning buffer and multiplied
 * as it is; panels: a few rows (a last-word edit's) as a matrix-vector product a row. */
static void turned_mm(struct attn_backing *b, const void *tensor, float *out, int ldc,
                      const float *in, int lda, const float *bias, int rows, int cols, int k,
                      bool panels)
{
    size_t block = turn_block((size_t)k);
    float *w = b->cache[attn_param_cache_slot()]->turn;
    for (size_t c0 = 0; c0 < (size_t)cols; c0 += block) {
        size_t nb = (size_t)cols - c0 < block ? (size_t)cols - c0 : block;
        b->read_rows(b, tensor, w, c0, nb); /* (nb, k) */
        attn_mm_abt_few(out + c0, ldc, in, lda, w, k, rows, (int)nb, k, panels);
        for (int i = 0; bias && i < rows; i++)
            for (size_t j = 0; j < nb; j++)
                out[(size_t)i * (size_t)ldc + c0 + j] += bias[c0 + j];
    }
}

void attn_model_mm(const struct attn_model *m, const struct attn_model_mm_params *p)
{
    const struct attn_lazy_param *lazy = lazy_of(m, p->member);
    struct attn_backing *b = m->lazy_from;
    int rows = p->rows, cols = p->cols, k = p->k;
    int ldc = p->ldc ? p->ldc : cols, lda = p->lda ? p->lda : k;
    if (rows <= 0) /* an edit that left no row to compute: no weight is read */
        return;
    /* The calls depend on the parameter alone, never on what the widening buffer holds now: an
       edit then runs the products a fresh computation runs, bit for bit on any BLAS kernel. */
    if (!lazy || !lazy->transposed || !b || !cache_buffer(b) || k <= 0) {
        const float *w = attn_model_param(m, p->member);
        int ldb = attn_model_param_ld(m, p->member, cols);
        if (p->panels || p->few)
            attn_mm_ab_rows_few(p->out, ldc, p->in, lda, w, ldb, p->bias, rows, cols, k, p->few);
        else
            attn_mm_ab(p->out, ldc, p->in, lda, w, ldb, p->bias, rows, cols, k);
        return;
    }
    turned_mm(b, lazy->tensor, p->out, ldc, p->in, lda, p->bias, rows, cols, k, p->panels);
}

void attn_model_matrix_mm(const struct attn_model *m, const struct attn_matrix *w, float *out,
                          int ldc, const float *in, int lda, int rows, int cols, int k)
{
    struct attn_backing *b = m->lazy_from;
    if (rows <= 0)
        return;
    if (w->data) { /* in memory, x @ W as it is */
        attn_mm_ab(out, ldc, in, lda, w->data, cols, NULL, rows, cols, k);
        return;
    }
    if (!w->lazy || !w->lazy_t || !b || !cache_buffer(b))
        attn_fatal_abort("attn_model_matrix_mm: a lazy matrix stored as it is read, or no "
                         "backing");
    turned_mm(b, w->lazy, out, ldc, in, lda, NULL, rows, cols, k, false);
}

/* *dst (count floats, allocated) takes src's numbers: a copy, or for a matrix that lives in a
 * checkpoint's mapping its own pointer (GPT-2 small's 500 MB are never copied), or for a lazy one
 * the widening buffer (attn_model_param fills it). Returns 0, or -1 when out of memory. */
static int take(struct attn_model *m, float **dst, const struct attn_matrix *src, size_t count)
{
    if (src->lazy) {
        float *buf = m->lazy_from ? cache_buffer(m->lazy_from) : NULL;
        if (!buf || m->n_lazy == (int)(sizeof(m->lazy) / sizeof(m->lazy[0])) ||
            (size_t)src->rows * (size_t)src->cols > m->lazy_from->lazy_floats)
            return -1;
        borrow(m, dst, buf);
        m->lazy[m->n_lazy++] = (struct attn_lazy_param){
            (size_t)((char *)dst - (char *)m), src->lazy, src->rows, src->cols, src->lazy_t};
        return 0;
    }
    if (src->borrowed) {
        borrow(m, dst, src->data);
        return 0;
    }
    memcpy(*dst, src->data, count * sizeof(float));
    return 0;
}

void attn_model_free(struct attn_model *m)
{
    attn_tokens_free(m->tokens, m->n);
    for (int b = 0; b < ATTN_MODEL_NBUFS; b++)
        free(m->owned[b]);
    free(m->keep);
    free(m->ids);
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

/* The PyTorch tutorial's table for positions offset .. offset + n - 1, in float32 as torch
 * computes it: div = exp(arange(0, d, 2) * (-ln(base) / d)), sin and cos of position * div.
 * pe: (n, d), d even */
static void sinusoidal_table(float *pe, int n, int d, int offset, double base)
{
    float k = (float)(-log(base) / d);
    for (int i = 0; i < d / 2; i++) {
        float div = expf((float)(2 * i) * k);
        for (int p = 0; p < n; p++) {
            float angle = (float)(offset + p) * div;
            pe[(size_t)p * d + 2 * i] = sinf(angle);
            pe[(size_t)p * d + 2 * i + 1] = cosf(angle);
        }
    }
}

/* base^(2i / hd) in float32, as torch's base ** (arange(0, hd, 2).float() / hd). */
static float rope_power(float base, int i, int hd)
{
    return powf(base, (float)(2 * i) / (float)hd);
}

/* YaRN's ramp over the pairs (transformers' _compute_yarn_parameters): the pair where beta
 * rotations fit the original length, from find_correction_dim, in double as Python computes it;
 * the ends rounded out to whole pairs when truncate. */
static double yarn_correction_dim(double rotations, int hd, double base, int original_max)
{
    return (hd * log(original_max / (rotations * 2 * M_PI))) / (2 * log(base));
}

/* RoPE's frequencies as LLaMA and Hugging Face compute them in float32, for the positions
 * 0 .. seq_len - 1 (the last one + 1: what a dynamic rope type looks at): theta_i = 1 /
 * base^(2i / hd), then the scene's rope type (scene.h's pos.scaling, Hugging Face's
 * rope_init_functions, each step in float32 as torch takes it):
 *   linear    theta_i / factor
 *   llama3    the low frequencies (wavelength 2 pi / theta over original_max / low_freq_factor)
 *             divided by factor, the high ones (under original_max / high_freq_factor) kept,
 *             the ones between blended by smooth = (original_max / wavelength - low) / (high -
 *             low)
 *   dynamic   past original_max (max_position_embeddings) a larger base, base * (factor *
 *             seq_len / original_max - (factor - 1))^(hd / (hd - 2)), in float32 as torch
 *             computes it from a tensor seq_len; up to it, theta_i
 *   yarn      interpolation theta_i / factor and extrapolation theta_i mixed by a ramp that is 1
 *             (extrapolate) below beta_fast's pair and 0 above beta_slow's
 *   longrope  1 / (ext_i * base^(2i / hd)), ext the long factors past original_max, else the
 *             short ones
 * inv: (hd / 2) */
static void rope_frequencies(float *inv, int hd, double base_d, const struct attn_rope_params *sc,
                             int seq_len)
{
    const float pi2 = (float)(2.0 * M_PI);
    float factor = (float)sc->factor, low = (float)sc->low_freq_factor,
          high = (float)sc->high_freq_factor, old = (float)sc->original_max;
    float base = (float)base_d;
    if (sc->kind == ROPE_SCALING_DYNAMIC && seq_len > sc->original_max) {
        float grow = factor * (float)seq_len / (float)sc->original_max - (float)(sc->factor - 1.0);
        base = base * powf(grow, (float)((double)hd / (hd - 2)));
    }
    /* yarn's ramp: pairs below lo extrapolate (theta_i), above hi interpolate (theta_i / factor) */
    double lo = 0, hi = 0;
    if (sc->kind == ROPE_SCALING_YARN) {
        lo = yarn_correction_dim(sc->beta_fast, hd, base_d, sc->original_max);
        hi = yarn_correction_dim(sc->beta_slow, hd, base_d, sc->original_max);
        if (sc->truncate) {
            lo = floor(lo);
            hi = ceil(hi);
        }
        lo = lo > 0 ? lo : 0;
        hi = hi < hd - 1 ? hi : hd - 1;
        if (lo == hi)
            hi += 0.001; /* as transformers: no division by 0 */
    }
    const float *ext = sc->kind == ROPE_SCALING_LONGROPE
                           ? (seq_len > sc->original_max ? sc->long_factor : sc->short_factor)
                           : NULL;
    for (int i = 0; i < hd / 2; i++) {
        float theta = 1.0f / rope_power(base, i, hd);
        if (sc->kind == ROPE_SCALING_LINEAR) {
            theta = theta / factor;
        } else if (sc->kind == ROPE_SCALING_LLAMA3) {
            float wavelen = pi2 / theta;
            float scaled = wavelen > old / low ? theta / factor : theta;
            if (!(wavelen < old / high) && !(wavelen > old / low)) { /* medium: blended */
                float smooth = (old / wavelen - low) / (high - low);
                scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
            }
            theta = scaled;
        } else if (sc->kind == ROPE_SCALING_YARN) {
            float power = rope_power(base, i, hd);
            float extrapolated = 1.0f / power, interpolated = 1.0f / (factor * power);
            float ramp = ((float)i - (float)lo) / (float)(hi - lo);
            ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
            float keep = 1.0f - ramp; /* how much of the extrapolated frequency */
            theta = interpolated * (1.0f - keep) + extrapolated * keep;
        } else if (ext) {
            theta = 1.0f / (ext[i] * rope_power(base, i, hd));
        }
        inv[i] = theta;
    }
}

/* RoPE's angles: angle = position * theta_i in float32, then cos and sin, times the rope type's
 * attention factor (yarn's, longrope's) as transformers scales them. cos, sin: (n, hd / 2);
 * inv: (hd / 2) */
static void rope_tables(float *cos_t, float *sin_t, const float *inv, int n, int hd, int offset,
                        float attention_factor)
{
    for (int i = 0; i < hd / 2; i++)
        for (int p = 0; p < n; p++) {
            float angle = (float)(offset + p) * inv[i];
            cos_t[(size_t)p * (hd / 2) + i] = cosf(angle) * attention_factor;
            sin_t[(size_t)p * (hd / 2) + i] = sinf(angle) * attention_factor;
        }
}

/* m's RoPE frequencies and angles for s (head_dim set): over the first pos.rotary_dims of a head
 * (GPT-NeoX's partial rotary), or all of it. Returns 0 or -1. */
static int resolve_rope(struct attn_model *m, const struct attn_scene *s)
{
    int rd = s->pos.rotary_dims;
    m->rope_dims = rd > 0 && rd < m->head_dim ? rd : m->head_dim;
    size_t half = (size_t)m->n * (size_t)(m->rope_dims / 2);
    if (!own(m, &m->rope_inv, (size_t)(m->rope_dims / 2)) || !own(m, &m->rope_cos, half) ||
        !own(m, &m->rope_sin, half))
        return -1;
    /* Gemma 3: a sliding-window layer's own base, without the rope scaling */
    static const struct attn_rope_params none = {.kind = ROPE_SCALING_NONE,
                                                 .attention_factor = 1.0};
    bool local = s->pos.base_local > 0 && attn_scene_layer_window(s, m->layer) > 0;
    m->rope_local = local;
    const struct attn_rope_params *sc = local ? &none : &s->pos.scaling;
    enum attn_rope_scaling kind = sc->kind;
    float att = kind == ROPE_SCALING_YARN || kind == ROPE_SCALING_LONGROPE
                    ? (float)sc->attention_factor
                    : 1.0f;
    rope_frequencies(m->rope_inv, m->rope_dims, local ? s->pos.base_local : s->pos.base, sc,
                     s->pos.offset + m->n);
    rope_tables(m->rope_cos, m->rope_sin, m->rope_inv, m->n, m->rope_dims, s->pos.offset, att);
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

/* Columns [col0, col0 + cols) of src (rows, ld) into dst (rows, cols). */
static void take_block(float *dst, const float *src, int ld, int col0, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        memcpy(dst + (size_t)i * cols, src + (size_t)i * ld + col0, (size_t)cols * sizeof(float));
}

/* The per-projection matrices of a fused one: fused, [Q | K | V] (004's chunk(3)); fused_heads,
 * head h's q, k and v from its own 3 * hd columns (SimpleLLaMA's view + chunk). Fused and not
 * lazy: views into wqkv (qkv_ld), the products reading it with a row stride; the bits are those
 * of packed copies, since a product's order of sums never depends on its operands' strides. */
static void split_fused(struct attn_model *m)
{
    int d_in = m->d_in, D = m->D, Dkv = m->Dkv, hd = m->head_dim, W = D + 2 * Dkv;
    if (m->qkv == QKV_FUSED && !lazy_of(m, ATTN_MEMBER(wqkv))) {
        int col0[3] = {0, D, D + Dkv};
        float **w[3] = {&m->wq, &m->wk, &m->wv}, **b[3] = {&m->bq, &m->bk, &m->bv};
        for (int i = 0; i < 3; i++) {
            borrow(m, w[i], m->wqkv + col0[i]);
            if (*b[i])
                borrow(m, b[i], m->bqkv + col0[i]);
        }
        m->qkv_ld = W;
        return;
    }
    float *w[3] = {m->wq, m->wk, m->wv}, *b[3] = {m->bq, m->bk, m->bv};
    const float *wqkv = ATTN_PARAM(m, wqkv); /* a lazy one widened */
    if (m->qkv == QKV_FUSED) {
        int col0[3] = {0, D, D + Dkv}, width[3] = {D, Dkv, Dkv};
        for (int i = 0; i < 3; i++) {
            take_block(w[i], wqkv, W, col0[i], d_in, width[i]);
            if (b[i])
                memcpy(b[i], m->bqkv + col0[i], (size_t)width[i] * sizeof(float));
        }
        return;
    }
    for (int h = 0; h < m->heads; h++)
        for (int i = 0; i < 3; i++)
            for (int r = 0; r < d_in; r++) {
                memcpy(w[i] + (size_t)r * D + (size_t)h * hd,
                       wqkv + (size_t)r * W + (size_t)(3 * h + i) * hd, (size_t)hd * sizeof(float));
                if (b[i] && r == 0)
                    memcpy(b[i] + (size_t)h * hd, m->bqkv + (size_t)(3 * h + i) * hd,
                           (size_t)hd * sizeof(float));
            }
}

static int draw_attention(struct attn_model *m, const struct attn_scene *s, struct attn_rng *r)
{
    enum attn_projection proj = attn_scene_eff_projection(s);
    int d_in = m->d_in, D = m->D, Dkv = m->Dkv;
    if (s->attn.seed.set && m->layer == 0)
        attn_rng_seed(r, s->attn.seed.value);
    if (m->latent > 0) {
        /* MLA: W_query, W_down, W_key_up, W_value_up, none with a bias. */
        attn_rng_linear_init(m->wq, NULL, d_in, D, r);
        attn_rng_linear_init(m->wdown, NULL, d_in, m->latent, r);
        attn_rng_linear_init(m->wkup, NULL, m->latent, D, r);
        attn_rng_linear_init(m->wvup, NULL, m->latent, D, r);
    } else if (m->wqkv) {
        attn_rng_linear_init(m->wqkv, m->bqkv, d_in, D + 2 * Dkv, r);
        split_fused(m);
    } else if (s->attn.layout == LAYOUT_SPLIT) {
        draw_projection(m->wq, m->bq, d_in, D, proj, r);
        draw_projection(m->wk, m->bk, d_in, Dkv, proj, r);
        draw_projection(m->wv, m->bv, d_in, Dkv, proj, r);
    } else {
        /* MultiHeadAttentionWrapper: head 0's W_query, W_key, W_value, then head 1's, ... */
        float *w[3] = {m->wq, m->wk, m->wv};
        float *b[3] = {m->bq, m->bk, m->bv};
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
        attn_rng_linear_init(m->wo, m->bo, D, m->out_dim, r);
    return 0;
}

/* Takes the explicit attention parameters. Returns 0, or -1 when out of memory. */
static int copy_attention(struct attn_model *m, const struct attn_scene_weights *sw)
{
    size_t d_in = (size_t)m->d_in, D = (size_t)m->D, Dkv = (size_t)m->Dkv;
    int rc = 0;
    if (m->latent > 0) {
        size_t r = (size_t)m->latent;
        rc |= take(m, &m->wq, &sw->query, d_in * D);
        rc |= take(m, &m->wdown, &sw->down, d_in * r);
        rc |= take(m, &m->wkup, &sw->key_up, r * D);
        rc |= take(m, &m->wvup, &sw->value_up, r * D);
    } else if (m->wqkv) {
        size_t W = D + 2 * Dkv;
        rc |= take(m, &m->wqkv, &sw->qkv, d_in * W);
        if (m->bqkv)
            rc |= take(m, &m->bqkv, &sw->qkv_bias, W);
        if (rc == 0)
            split_fused(m);
    } else if (m->project) {
        rc |= take(m, &m->wq, &sw->query, d_in * D);
        rc |= take(m, &m->wk, &sw->key, d_in * Dkv);
        rc |= take(m, &m->wv, &sw->value, d_in * Dkv);
        if (m->bq) {
            rc |= take(m, &m->bq, &sw->query_bias, D);
            rc |= take(m, &m->bk, &sw->key_bias, Dkv);
            rc |= take(m, &m->bv, &sw->value_bias, Dkv);
        }
    }
    if (m->qnw) {
        rc |= take(m, &m->qnw, &sw->q_norm_weight, attn_model_buf_count(m, ATTN_BUF_qnw));
        rc |= take(m, &m->knw, &sw->k_norm_weight, attn_model_buf_count(m, ATTN_BUF_knw));
    }
    if (m->wo)
        rc |= take(m, &m->wo, &sw->out, D * (size_t)m->out_dim);
    if (m->bo)
        rc |= take(m, &m->bo, &sw->out_bias, (size_t)m->out_dim);
    return rc;
}

static int resolve_norms(struct attn_model *m, const struct attn_scene *s,
                         const struct attn_scene_weights *sw);

/* A mixture of experts: the router and the shared expert taken (lazy), the experts' matrices
 * pointed at (the backing's), and the norms. */
static int resolve_experts(struct attn_model *m, const struct attn_scene *s,
                           const struct attn_scene_weights *sw)
{
    const struct attn_block *b = &s->block;
    size_t d = (size_t)m->d_in, E = (size_t)b->n_experts, hs = (size_t)b->shared_hidden;
    m->n_experts = b->n_experts;
    m->top_k = b->top_k;
    m->norm_topk = b->norm_topk;
    m->shared_hidden = b->shared_hidden;
    m->experts = sw->experts;
    if (!m->experts || !own(m, &m->wr, d * E) || take(m, &m->wr, &sw->router, d * E))
        return -1;
    if (hs > 0 &&
        (!own(m, &m->wsg, d * hs) || !own(m, &m->wsu, d * hs) || !own(m, &m->wsd, hs * d) ||
         !own(m, &m->wsgate, d) || take(m, &m->wsg, &sw->shared_Wgate, d * hs) ||
         take(m, &m->wsu, &sw->shared_W1, d * hs) || take(m, &m->wsd, &sw->shared_W2, hs * d) ||
         take(m, &m->wsgate, &sw->shared_gate, d)))
        return -1;
    return resolve_norms(m, s, sw);
}

/* The block's parameters: the FFN (drawn or given) and the norms (given, or 1 and 0). */
static int resolve_block(struct attn_model *m, const struct attn_scene *s,
                         const struct attn_scene_weights *sw, bool first, struct attn_rng *r)
{
    const struct attn_block *b = &s->block;
    size_t d = (size_t)m->d_in, h = (size_t)attn_scene_ffn_hidden(s);
    m->block = true;
    m->order = b->order;
    m->norm = b->norm;
    m->norm_eps = (float)b->norm_eps; /* nn.LayerNorm keeps eps as a double; the kernel a float */
    m->activation = b->activation;
    m->hidden = (int)h;
    if (m->no_ffn) { /* a decoder's self-attention: the FFN is the cross-attention layer's */
        m->hidden = 0;
        return resolve_norms(m, s, sw);
    }
    if (b->n_experts > 0) /* a checkpoint's mixture: its matrices are the backing's */
        return resolve_experts(m, s, sw);
    /* a checkpoint's swiglu (or geglu): always given; its biases only with Llama's mlp_bias. A
       given plain FFN may have none (T5's); a drawn one draws them. */
    bool gated = attn_activation_gated(b->activation);
    bool biased = gated ? attn_matrix_given(&sw->ffn_bgate)
                        : !attn_matrix_given(&sw->ffn_W1) || attn_matrix_given(&sw->ffn_b1);
    if (!own(m, &m->w1, d * h) || !own(m, &m->w2, h * d))
        return -1;
    if ((gated && !own(m, &m->wg, d * h)) ||
        (biased && (!own(m, &m->b1, h) || !own(m, &m->b2, d))) ||
        (gated && biased && !own(m, &m->bg, h)))
        return -1;
    if (gated) {
        if (take(m, &m->wg, &sw->ffn_Wgate, d * h) || take(m, &m->w1, &sw->ffn_W1, d * h) ||
            take(m, &m->w2, &sw->ffn_W2, h * d))
            return -1;
        if (biased && (take(m, &m->bg, &sw->ffn_bgate, h) || take(m, &m->b1, &sw->ffn_b1, h) ||
                       take(m, &m->b2, &sw->ffn_b2, d)))
            return -1;
    } else if (attn_matrix_given(&sw->ffn_W1)) {
        if (take(m, &m->w1, &sw->ffn_W1, d * h) || take(m, &m->w2, &sw->ffn_W2, h * d) ||
            (biased && (take(m, &m->b1, &sw->ffn_b1, h) || take(m, &m->b2, &sw->ffn_b2, d))))
            return -1;
    } else {
        /* ffn_seed and ffn_skip reproduce one notebook's single block: layer 0 only. */
        if (first && b->ffn_seed.set)
            attn_rng_seed(r, b->ffn_seed.value);
        for (int i = 0; first && i < b->ffn_skip; i++) /* a uniform draw takes one 32-bit word */
            attn_rng_u32(r);
        attn_rng_linear_init(m->w1, m->b1, (int)d, (int)h, r);
        attn_rng_linear_init(m->w2, m->b2, (int)h, (int)d, r);
    }
    return resolve_norms(m, s, sw);
}

/* The block's norms: given, or 1 and 0 (norms draw nothing). */
static int resolve_norms(struct attn_model *m, const struct attn_scene *s,
                         const struct attn_scene_weights *sw)
{
    const struct attn_block *b = &s->block;
    size_t d = (size_t)m->d_in;
    if (!own(m, &m->n1w, d) || !own(m, &m->n2w, d) ||
        (b->norm == NORM_LAYER && (!own(m, &m->n1b, d) || !own(m, &m->n2b, d))) ||
        (b->order == BLOCK_SANDWICH && (!own(m, &m->pn1w, d) || !own(m, &m->pn2w, d))))
        return -1;
    const struct attn_matrix *given[6] = {&sw->norm1_weight,      &sw->norm1_bias,
                                          &sw->norm2_weight,      &sw->norm2_bias,
                                          &sw->post_norm1_weight, &sw->post_norm2_weight};
    float *dst[6] = {m->n1w, m->n1b, m->n2w, m->n2b, m->pn1w, m->pn2w};
    /* the weights default to 1, the biases to 0 */
    static const float plain[6] = {1, 0, 1, 0, 1, 1};
    for (int i = 0; i < 6; i++) {
        if (!dst[i])
            continue;
        for (size_t j = 0; j < d; j++)
            dst[i][j] = given[i]->data ? given[i]->data[j] : plain[i];
    }
    if (m->final_norm) { /* the last layer's: given, or 1 and 0 (norms draw nothing) */
        if (!own(m, &m->fw, d) || (b->norm == NORM_LAYER && !own(m, &m->fb, d)))
            return -1;
        for (size_t j = 0; j < d; j++) {
            m->fw[j] = sw->final_norm_weight.data ? sw->final_norm_weight.data[j] : 1.0f;
            if (m->fb)
                m->fb[j] = sw->final_norm_bias.data ? sw->final_norm_bias.data[j] : 0.0f;
        }
    }
    return 0;
}

/* *dst (m's member) = a copy of the vector v (count floats), or NULL when v is not given. */
static int copy_vector(struct attn_model *m, float **dst, const struct attn_matrix *v, size_t count)
{
    if (!v->data)
        return 0;
    if (!own(m, dst, count))
        return -1;
    memcpy(*dst, v->data, count * sizeof(float));
    return 0;
}

/* The last layer's unembedding: a checkpoint's, borrowed (GPT-2's 154 MB stay in the file), or
 * lazy (read a block of rows at a time by logits.c); its bias and the head before it. */
static int resolve_unembed(struct attn_model *m, const struct attn_scene *s)
{
    if (!attn_matrix_given(&s->unembed) || m->layer != m->layers - 1)
        return 0;
    size_t count = (size_t)s->unembed.rows * (size_t)m->d_in, d = (size_t)m->d_in;
    m->vocab = s->unembed.rows;
    m->logit_softcap = (float)s->logit_softcap;
    m->unembed_scale = (float)s->unembed_scale;
    m->masked_lm = s->masked_lm;
    m->mask_id = s->mask_id;
    if (copy_vector(m, &m->unembed_bias, &s->unembed_bias, (size_t)m->vocab))
        return -1;
    if (attn_matrix_given(&s->head.dense)) {
        m->hact = s->head.act;
        if (!own(m, &m->hw, d * d) || take(m, &m->hw, &s->head.dense, d * d) ||
            copy_vector(m, &m->hb, &s->head.dense_bias, d) ||
            copy_vector(m, &m->hnw, &s->head.norm_weight, d) ||
            copy_vector(m, &m->hnb, &s->head.norm_bias, d))
            return -1;
    }
    if (s->unembed.lazy) {
        if (s->unembed.lazy_t) /* a lazy unembedding is read by rows: it must not be turned */
            return -1;
        m->unembed_lazy = s->unembed.lazy;
        return 0;
    }
    if (s->unembed.borrowed)
        return take(m, &m->unembed, &s->unembed, count);
    if (!own(m, &m->unembed, count))
        return -1;
    return take(m, &m->unembed, &s->unembed, count);
}

/* The options that draw nothing: dropout's p, the mask, the normalisation and the scale
 * (m->head_dim set). attn_model_resolve_options changes only these. */
static void set_options(struct attn_model *m, const struct attn_scene *s)
{
    const struct attn_config *a = &s->attn;
    m->dropout = a->dropout;
    m->causal = a->causal;
    m->mask_mode = a->mask_mode;
    m->normalize = a->normalize;
    m->scale = attn_scene_eff_scale(s);
    /* torch divides by the Python float d_k ** 0.5 (or the given number), cast to float32.
     * GPT-2's scale_attn_by_inverse_layer_idx divides layer L's by L + 1 too: one float32
     * divisor, the product taken in double (transformers 5 multiplies by its inverse, 4.x divides
     * twice: within a rounding of each other). */
    double layer_div = a->scale_by_layer ? (double)(m->layer + 1) : 1.0;
    m->scale_layer = a->scale_by_layer ? m->layer + 1 : 1;
    m->softcap = (float)a->softcap;
    m->scale_divisor = m->scale == SCALE_SQRT_DK   ? (float)(sqrt((double)m->head_dim) * layer_div)
                       : m->scale == SCALE_DIVISOR ? (float)(a->scale_divisor * layer_div)
                                                   : (float)layer_div;
    /* ablate: replaces what a head hands on, and draws nothing */
    memset(m->head_mode, HEAD_KEEP, sizeof(m->head_mode));
    m->patch = NULL;
    for (int i = 0; i < s->n_ablate; i++)
        if (s->ablate[i].layer == m->layer && s->ablate[i].head >= 0 &&
            s->ablate[i].head < SCENE_MAX_HEADS)
            m->head_mode[s->ablate[i].head] = (unsigned char)s->ablate[i].mode;
}

/* What every layer shares: the shapes, the options, the tokens, its input buffer and RoPE's
 * angles. */
static int resolve_shape(struct attn_model *m, const struct attn_scene *s, int layer, int layers)
{
    const struct attn_config *a = &s->attn;
    int n = s->n_tokens, d_in = attn_scene_d_in(s);
    m->layer = layer;
    m->layers = layers;
    m->d_in = d_in;
    m->heads = a->heads;
    m->head_dim = attn_scene_head_dim(s);
    m->D = attn_scene_concat_dim(s);
    m->out_dim = attn_scene_out_dim(s);
    m->window = attn_scene_layer_window(s, layer);
    m->lazy_from = s->backing;
    m->kv_heads = a->layout == LAYOUT_SPLIT ? attn_scene_kv_heads(s) : a->heads;
    m->Dkv = attn_scene_kv_dim(s);
    m->latent = a->kv_latent;
    m->qkv = a->qkv;
    m->project = attn_scene_eff_projection(s) != PROJ_NONE;
    set_options(m, s);
    m->pos_kind = s->pos.kind;
    m->final_norm = s->block.on && s->block.final_norm && layer == layers - 1;
    if (!(m->tokens = attn_tokens_dup(s->tokens, n)))
        return -1;
    m->n = n;
    m->n_kv = n;
    m->cross = s->sublayer[layer] == SUB_CROSS && s->encoder;
    m->no_ffn = s->sublayer[layer] == SUB_SELF;
    if (m->cross) { /* the net points kv_x at the encoder's output */
        m->n_kv = s->encoder->n_tokens;
        m->kv_tokens = s->encoder->tokens;
        m->causal = false;
        m->window = 0;
    }
    if (!own(m, &m->x, (size_t)n * (size_t)d_in))
        return -1;
    m->qk_norm_whole = a->qk_norm && a->qk_norm_whole;
    if (s->pos.kind == POS_ROPE) { /* every layer rotates its own q and k */
        m->rope = true;
        m->rope_pairs = s->pos.pairs;
        if (resolve_rope(m, s))
            return -1;
    }
    return 0;
}

/* out (n, d) = every row of in LayerNorm'ed with w and b, as the block's norms compute it: the
 * moments in double. The embeddings' LayerNorm (BERT). */
static void layer_norm_rows(float *out, const float *in, int n, int d, const float *w,
                            const float *b, double eps)
{
    for (int i = 0; i < n; i++) {
        const float *x = in + (size_t)i * d;
        double mean = 0, var = 0;
        for (int j = 0; j < d; j++)
            mean += x[j];
        mean /= d;
        for (int j = 0; j < d; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= d;
        float inv = (float)(1.0 / sqrt(var + eps));
        for (int j = 0; j < d; j++) {
            float v = (float)(x[j] - mean) * inv * w[j];
            out[(size_t)i * d + j] = b ? v + b[j] : v;
        }
    }
}

/* Layer 0's input: the token embeddings plus the positions (learned or sinusoidal). */
static int resolve_inputs(struct attn_model *m, const struct attn_scene *s, struct attn_rng *r)
{
    int n = s->n_tokens, d_in = m->d_in;
    size_t nx = (size_t)n * (size_t)d_in;
    if (!own(m, &m->embed, nx) || !(m->ids = calloc((size_t)(n > 0 ? n : 1), sizeof(int))))
        return -1;
    /* The built-in tokenizers' ids: the index in the vocabulary of distinct tokens, in order
     * of first appearance (the rows of the drawn nn.Embedding). */
    for (int i = 0, vocab = 0; i < n; i++) {
        if (s->token_ids) {
            m->ids[i] = s->token_ids[i];
            continue;
        }
        m->ids[i] = -1;
        for (int j = 0; j < i && m->ids[i] < 0; j++)
            if (strcmp(s->tokens[i], s->tokens[j]) == 0)
                m->ids[i] = m->ids[j];
        if (m->ids[i] < 0)
            m->ids[i] = vocab++;
    }
    if (s->embed.kind == EMBED_EXPLICIT) {
        memcpy(m->embed, s->embed.rows.data, nx * sizeof(float));
    } else if (s->embed.kind == EMBED_TABLE) { /* nn.Embedding's lookup: the rows of the ids */
        for (int i = 0; i < n; i++)
            if (s->embed.rows.lazy) /* a checkpoint's F16/BF16 table: only these rows widened */
                s->backing->read_rows(s->backing, s->embed.rows.lazy, m->embed + (size_t)i * d_in,
                                      (size_t)s->token_ids[i], 1);
            else
                memcpy(m->embed + (size_t)i * d_in,
                       s->embed.rows.data + (size_t)s->token_ids[i] * (size_t)d_in,
                       (size_t)d_in * sizeof(float));
    } else {
        if (s->embed.seed.set)
            attn_rng_seed(r, s->embed.seed.value);
        if (draw_learned_embeddings(m->embed, s, d_in, r))
            return -1;
    }
    memcpy(m->x, m->embed, nx * sizeof(float));
    /* Gemma's normalizer: float32(sqrt(hidden_size)), one product a value as torch's */
    m->embed_scale = s->embed.scale > 0 ? (float)s->embed.scale : 0.0f;
    if (m->embed_scale > 0)
        for (size_t i = 0; i < nx; i++)
            m->x[i] = m->embed[i] * m->embed_scale;
    m->pos_offset = s->pos.offset;
    if (s->pos.kind == POS_LEARNED) {
        m->pos_rows = s->pos.max_len;
        size_t np = (size_t)m->pos_rows * (size_t)d_in;
        if (s->pos.table.data) {
            if (own(m, &m->pos, np))
                take(m, &m->pos, &s->pos.table, np);
        } else if (own(m, &m->pos, np)) {
            if (s->pos.seed.set)
                attn_rng_seed(r, s->pos.seed.value);
            attn_rng_normal(m->pos, np, 0.0f, 1.0f, r);
        }
    } else if (s->pos.kind == POS_SINUSOIDAL) {
        /* Computed for the scene's positions only: row i is position offset + i. */
        m->pos_rows = n;
        m->pos_offset = 0;
        if (own(m, &m->pos, nx))
            sinusoidal_table(m->pos, n, d_in, s->pos.offset, s->pos.base);
    }
    if ((s->pos.kind == POS_LEARNED || s->pos.kind == POS_SINUSOIDAL) && !m->pos)
        return -1;
    if (s->embed.types.data) { /* BERT's token types: (word + type) + position, as it adds them */
        if (!own(m, &m->types, nx))
            return -1;
        for (int i = 0; i < n; i++) {
            int t = s->token_types ? s->token_types[i] : 0;
            memcpy(m->types + (size_t)i * d_in, s->embed.types.data + (size_t)t * (size_t)d_in,
                   (size_t)d_in * sizeof(float));
        }
        for (size_t i = 0; i < nx; i++)
            m->x[i] = m->embed[i] + m->types[i];
    }
    if (m->pos)
        for (size_t i = 0; i < nx; i++)
            m->x[i] = m->x[i] + m->pos[(size_t)m->pos_offset * (size_t)d_in + i];
    if (s->embed.norm_weight.data) {
        if (copy_vector(m, &m->enw, &s->embed.norm_weight, (size_t)d_in) ||
            copy_vector(m, &m->enb, &s->embed.norm_bias, (size_t)d_in))
            return -1;
        layer_norm_rows(m->x, m->x, n, d_in, m->enw, m->enb, (double)(float)s->block.norm_eps);
    }
    return 0;
}

/* One layer's attention and block parameters: given, or drawn in module order. */
static int resolve_params(struct attn_model *m, const struct attn_scene *s,
                          const struct attn_scene_weights *sw, struct attn_rng *r)
{
    const struct attn_config *a = &s->attn;
    size_t d_in = (size_t)m->d_in, D = (size_t)m->D, Dkv = (size_t)m->Dkv, W = D + 2 * Dkv;
    if (m->project) {
        if (!own(m, &m->wq, d_in * D))
            return -1;
        if (m->latent > 0) {
            size_t lr = (size_t)m->latent;
            if (!own(m, &m->wdown, d_in * lr) || !own(m, &m->wkup, lr * D) ||
                !own(m, &m->wvup, lr * D))
                return -1;
        } else {
            if (!own(m, &m->wk, d_in * Dkv) || !own(m, &m->wv, d_in * Dkv))
                return -1;
            if (a->qkv_bias && (!own(m, &m->bq, D) || !own(m, &m->bk, Dkv) || !own(m, &m->bv, Dkv)))
                return -1;
            if (a->qkv != QKV_SEPARATE &&
                (!own(m, &m->wqkv, d_in * W) || (a->qkv_bias && !own(m, &m->bqkv, W))))
                return -1;
        }
    }
    size_t E = (size_t)m->out_dim;
    if (attn_scene_eff_out_proj(s)) {
        if (!own(m, &m->wo, D * E) || (a->out_bias && !own(m, &m->bo, E)))
            return -1;
    }
    size_t qw = attn_model_buf_count(m, ATTN_BUF_qnw), kw = attn_model_buf_count(m, ATTN_BUF_knw);
    if (a->qk_norm && (!own(m, &m->qnw, qw) || !own(m, &m->knw, kw)))
        return -1;
    if (sw->set) {
        if (copy_attention(m, sw))
            return -1;
    } else if (m->project) {
        if (draw_attention(m, s, r))
            return -1;
    } else if (m->wo) {
        if (a->seed.set && m->layer == 0)
            attn_rng_seed(r, a->seed.value);
        attn_rng_linear_init(m->wo, m->bo, m->D, m->out_dim, r);
    }
    if (m->qnw && !sw->set) { /* the norms draw nothing: weight 1 */
        for (size_t j = 0; j < qw; j++)
            m->qnw[j] = 1.0f;
        for (size_t j = 0; j < kw; j++)
            m->knw[j] = 1.0f;
    }
    if (s->block.on && resolve_block(m, s, sw, m->layer == 0, r))
        return -1;
    return resolve_unembed(m, s);
}

/* The keep-mask of one layer's dropout, given or drawn (torch draws it in the forward pass). */
static int resolve_dropout(struct attn_model *m, const struct attn_scene *s,
                           const struct attn_scene_weights *sw, struct attn_rng *r)
{
    const struct attn_config *a = &s->attn;
    if (!(a->dropout > 0.0))
        return 0;
    size_t nk = (size_t)m->heads * (size_t)m->n * (size_t)m->n_kv;
    if (!(m->keep = calloc(nk ? nk : 1, 1)))
        return -1;
    if (sw->dropout_mask) {
        memcpy(m->keep, sw->dropout_mask, nk);
    } else if (a->dropout < 1.0) { /* torch's dropout(p=1) returns zeros without drawing */
        if (a->dropout_seed.set && m->layer == 0)
            attn_rng_seed(r, a->dropout_seed.value);
        attn_rng_bernoulli(m->keep, nk, 1.0 - a->dropout, r);
    }
    return 0;
}

/* T5's bucket of the relative position rel = j - i (_relative_position_bucket): half the
 * buckets for the future when bidirectional; exact below half of what is left, then
 * logarithmic up to max_distance, in float32 as torch computes it. */
int attn_model_rel_bucket(const struct attn_model *m, int rel)
{
    int buckets = m->rel_buckets, max_distance = m->rel_max_distance, bucket = 0;
    if (m->rel_bidirectional) {
        buckets /= 2;
        bucket = rel > 0 ? buckets : 0;
        rel = rel < 0 ? -rel : rel;
    } else {
        rel = rel < 0 ? -rel : 0;
    }
    int exact = buckets / 2;
    if (rel < exact)
        return bucket + rel;
    float t = logf((float)rel / (float)exact) / (float)log((double)max_distance / exact) *
              (float)(buckets - exact);
    int large = exact + (int)t;
    return bucket + (large < buckets - 1 ? large : buckets - 1);
}

/* The relative position bias (scene pos.rel): made in the first self-attention layer, each
 * other self-attention layer borrowing it, as T5 computes it once a stack; none in a
 * cross-attention layer. */
static int resolve_pos_bias(struct attn_model *out, int layers, const struct attn_scene *s)
{
    const struct attn_matrix *t = &s->pos.rel.table;
    if (!attn_matrix_given(t))
        return 0;
    int heads = out[0].heads, nb = t->rows;
    float *table = malloc((size_t)nb * (size_t)heads * sizeof(float));
    if (!table)
        return -1;
    if (t->lazy)
        s->backing->read_rows(s->backing, t->lazy, table, 0, (size_t)nb);
    else
        memcpy(table, t->data, (size_t)nb * (size_t)heads * sizeof(float));
    float *bias = NULL;
    for (int L = 0; L < layers; L++) {
        struct attn_model *m = &out[L];
        if (m->cross)
            continue;
        m->rel_buckets = nb;
        m->rel_max_distance = s->pos.rel.max_distance;
        m->rel_bidirectional = s->pos.rel.bidirectional;
        if (bias) {
            borrow(m, &m->pos_bias, bias);
            continue;
        }
        if (!(bias = own(m, &m->pos_bias, attn_model_buf_count(m, ATTN_BUF_pos_bias)))) {
            free(table);
            return -1;
        }
        size_t nk = (size_t)m->n_kv;
        for (int i = 0; i < m->n; i++)
            for (int j = 0; j < m->n_kv; j++) {
                int b = attn_model_rel_bucket(m, j - i);
                for (int h = 0; h < heads; h++)
                    bias[((size_t)h * m->n + i) * nk + j] = table[(size_t)b * heads + h];
            }
    }
    free(table);
    return 0;
}

/* The failure of a resolve: the layers built so far freed, and the message. Returns -1. */
static int resolve_oom(struct attn_model *out, int layers, struct diag *err)
{
    for (int L = 0; L < layers; L++)
        attn_model_free(&out[L]);
    return attn_diag_set(err, "", "out of memory while building the scene's parameters");
}

int attn_model_resolve_layers(struct attn_model *out, int layers, const struct attn_scene *s,
                              struct diag *err)
{
    return attn_model_resolve_layers_rng(out, layers, s, NULL, err);
}

int attn_model_resolve_layers_rng(struct attn_model *out, int layers, const struct attn_scene *s,
                                  struct attn_rng *after_params, struct diag *err)
{
    memset(out, 0, (size_t)layers * sizeof(*out));
    struct attn_rng r;
    attn_rng_seed(&r, s->seed);
    /* PyTorch's order: the modules are built (embeddings, positions, then every layer's
     * parameters in turn), then the forward pass draws the dropout masks, layer by layer. */
    for (int L = 0; L < layers; L++)
        if (resolve_shape(&out[L], s, L, layers))
            goto oom;
    if (resolve_inputs(&out[0], s, &r))
        goto oom;
    for (int L = 0; L < layers; L++)
        if (resolve_params(&out[L], s, attn_scene_layer_weights(s, L), &r))
            goto oom;
    if (resolve_pos_bias(out, layers, s))
        goto oom;
    if (after_params)
        *after_params = r;
    for (int L = 0; L < layers; L++)
        if (resolve_dropout(&out[L], s, attn_scene_layer_weights(s, L), &r))
            goto oom;
    return 0;
oom:
    return resolve_oom(out, layers, err);
}

/* The split heads cut again: head_dim, the KV sharing and RoPE's angles follow the count. */
static int recut_heads(struct attn_model *m, const struct attn_scene *s)
{
    m->heads = s->attn.heads;
    m->head_dim = attn_scene_head_dim(s);
    m->kv_heads = attn_scene_kv_heads(s);
    m->Dkv = attn_scene_kv_dim(s);
    if (!m->rope)
        return 0;
    return resolve_rope(m, s); /* the old tables stay old's (borrowed here) */
}

/* *m = o's shapes and options, owning nothing yet: what a model made from another starts as. */
static void start_from(struct attn_model *m, const struct attn_model *o)
{
    *m = *o;
    memset(m->owned, 0, sizeof(m->owned)); /* every buffer o's (or borrowed by o) */
    m->keep = NULL;
    m->ids = NULL;
    m->tokens = NULL;
}

int attn_model_resolve_options(struct attn_model *out, const struct attn_model *old, int layers,
                               const struct attn_scene *s, const struct attn_rng *after_params,
                               struct diag *err)
{
    memset(out, 0, (size_t)layers * sizeof(*out));
    struct attn_rng r = *after_params;
    for (int L = 0; L < layers; L++) {
        struct attn_model *m = &out[L];
        const struct attn_model *o = &old[L];
        start_from(m, o); /* the shapes, every option and every buffer, borrowed */
        if (!(m->tokens = attn_tokens_dup(o->tokens, o->n)))
            goto oom;
        if (o->ids) {
            if (!(m->ids = malloc((size_t)o->n * sizeof(int))))
                goto oom;
            memcpy(m->ids, o->ids, (size_t)o->n * sizeof(int));
        }
        if (m->heads != s->attn.heads && recut_heads(m, s))
            goto oom;
        set_options(m, s); /* what may differ: the options that draw nothing */
    }
    for (int L = 0; L < layers; L++)
        if (resolve_dropout(&out[L], s, attn_scene_layer_weights(s, L), &r))
            goto oom;
    return 0;
oom:
    return resolve_oom(out, layers, err);
}

/* The buffers of a model that hold a row per token (or follow the token count): what a sentence
 * edit changes. */
static bool per_token(const struct attn_model *m, enum attn_model_buf b)
{
    return b == ATTN_BUF_embed || b == ATTN_BUF_types || b == ATTN_BUF_x ||
           b == ATTN_BUF_rope_cos || b == ATTN_BUF_rope_sin || b == ATTN_BUF_pos_bias ||
           (b == ATTN_BUF_pos && m->pos_kind == POS_SINUSOIDAL);
}

bool attn_model_same_but_tokens(const struct attn_model *a, const struct attn_model *b)
{
    if (a->d_in != b->d_in || a->heads != b->heads || a->head_dim != b->head_dim || a->D != b->D ||
        a->kv_heads != b->kv_heads || a->Dkv != b->Dkv || a->latent != b->latent ||
        a->out_dim != b->out_dim || a->pos_kind != b->pos_kind || a->pos_rows != b->pos_rows ||
        a->pos_offset != b->pos_offset || a->project != b->project || a->qkv != b->qkv ||
        a->qkv_ld != b->qkv_ld || a->rope != b->rope || a->rope_pairs != b->rope_pairs ||
        a->rope_dims != b->rope_dims || a->qk_norm_whole != b->qk_norm_whole ||
        a->softcap != b->softcap || a->embed_scale != b->embed_scale ||
        a->n_experts != b->n_experts || a->top_k != b->top_k || a->norm_topk != b->norm_topk ||
        a->shared_hidden != b->shared_hidden || a->experts != b->experts ||
        a->logit_softcap != b->logit_softcap || a->window != b->window ||
        a->dropout != b->dropout || a->causal != b->causal || a->mask_mode != b->mask_mode ||
        a->normalize != b->normalize || a->scale != b->scale ||
        memcmp(&a->scale_divisor, &b->scale_divisor, sizeof(float)) != 0 || a->block != b->block ||
        a->order != b->order || a->norm != b->norm ||
        memcmp(&a->norm_eps, &b->norm_eps, sizeof(float)) != 0 || a->activation != b->activation ||
        a->hidden != b->hidden || a->final_norm != b->final_norm || a->vocab != b->vocab ||
        a->hact != b->hact || a->masked_lm != b->masked_lm || a->mask_id != b->mask_id ||
        a->layer != b->layer || a->layers != b->layers || a->lazy_from != b->lazy_from ||
        a->n_lazy != b->n_lazy || a->patch != b->patch || (a->keep != NULL) != (b->keep != NULL) ||
        memcmp(a->head_mode, b->head_mode, sizeof(a->head_mode)) != 0 ||
        a->unembed_lazy != b->unembed_lazy)
        return false;
    for (int i = 0; i < a->n_lazy; i++) {
        const struct attn_lazy_param *x = &a->lazy[i], *y = &b->lazy[i];
        if (x->member != y->member || x->tensor != y->tensor || x->rows != y->rows ||
            x->cols != y->cols || x->transposed != y->transposed)
            return false;
    }
    for (int i = 0; i < ATTN_MODEL_NBUFS; i++) {
        const float *p = buf_of(a, i), *q = buf_of(b, i);
        if (per_token(a, i) || p == q)
            continue;
        /* a lazy matrix's member is the widening buffer: compared by its tensor above; a
           view into wqkv with wqkv */
        if (lazy_of(a, BUF_MEMBER[i]) || qkv_view(a, BUF_MEMBER[i]))
            continue;
        size_t count = attn_model_buf_count(a, i);
        if (!p || !q || count != attn_model_buf_count(b, i) ||
            memcmp(p, q, count * sizeof(float)) != 0)
            return false;
    }
    return true;
}

int attn_model_resolve_tokens(struct attn_model *out, const struct attn_model *old, int layers,
                              const struct attn_scene *s, struct diag *err)
{
    memset(out, 0, (size_t)layers * sizeof(*out));
    if (s->embed.kind == EMBED_LEARNED || (s->pos.kind == POS_LEARNED && !s->pos.table.data) ||
        s->attn.dropout > 0.0 || s->embed.types.data || s->embed.norm_weight.data)
        return attn_diag_set(err, "", "the scene draws its inputs: resolve it whole");
    for (int L = 0; L < layers; L++) {
        struct attn_model *m = &out[L];
        const struct attn_model *o = &old[L];
        start_from(m, o); /* the shapes, the options and the parameters, borrowed */
        for (int i = 0; i < ATTN_MODEL_NBUFS; i++)
            if (per_token(o, i) || i == ATTN_BUF_rope_inv)
                *buf_at(m, i) = NULL; /* made anew below */
        m->rope = false;
        m->patch = NULL; /* ablations as the scene says, as a fresh resolve has them */
        memset(m->head_mode, 0, sizeof(m->head_mode));
        if (resolve_shape(m, s, L, layers)) /* the tokens, x and RoPE's angles, made anew */
            goto oom;
    }
    struct attn_rng unused;
    attn_rng_seed(&unused, s->seed);
    if (resolve_inputs(&out[0], s, &unused) || /* a lookup: nothing is drawn */
        resolve_pos_bias(out, layers, s))
        goto oom;
    return 0;
oom:
    return resolve_oom(out, layers, err);
}

void attn_model_adopt(struct attn_model *m, struct attn_model *old)
{
    for (int i = 0; i < ATTN_MODEL_NBUFS; i++) {
        float *p = buf_of(m, i);
        if (p && !m->owned[i] && old->owned[i] == p) { /* shared, and old's to free */
            m->owned[i] = p;
            old->owned[i] = NULL;
        }
    }
}

int attn_model_resolve(struct attn_model *m, const struct attn_scene *s, struct diag *err)
{
    if (s->layers > 1) {
        memset(m, 0, sizeof(*m));
        return attn_diag_set(err, "", "the scene has %d layers: resolve it with attn_net_compute",
                             s->layers);
    }
    return attn_model_resolve_layers(m, 1, s, err);
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

/* True when v (n values) is all `value`: the norms' defaults are not written out. */
static bool all_equal(const float *v, int n, float value)
{
    for (int i = 0; v && i < n; i++)
        if (v[i] != value)
            return false;
    return true;
}

/* Every number of layer m as explicit weights. */
static int weights_from_model(struct attn_scene_weights *w, const struct attn_model *m)
{
    w->set = m->project || m->wo;
    int d = m->d_in, D = m->D, Dkv = m->Dkv, r = m->latent;
    int rc = 0;
    if (m->wqkv) { /* fused: the one matrix, as drawn */
        rc |= set_matrix(&w->qkv, m->wqkv, d, D + 2 * Dkv) |
              set_matrix(&w->qkv_bias, m->bqkv, 1, D + 2 * Dkv);
    } else {
        rc |= set_matrix(&w->query, m->wq, d, D) | set_matrix(&w->key, m->wk, d, Dkv) |
              set_matrix(&w->value, m->wv, d, Dkv) | set_matrix(&w->query_bias, m->bq, 1, D) |
              set_matrix(&w->key_bias, m->bk, 1, Dkv) | set_matrix(&w->value_bias, m->bv, 1, Dkv);
        rc |= set_matrix(&w->down, m->wdown, d, r) | set_matrix(&w->key_up, m->wkup, r, D) |
              set_matrix(&w->value_up, m->wvup, r, D);
    }
    rc |= set_matrix(&w->out, m->wo, D, D) | set_matrix(&w->out_bias, m->bo, 1, D);
    if (m->block) {
        int h = m->hidden;
        rc |= set_matrix(&w->ffn_W1, m->w1, d, h) | set_matrix(&w->ffn_b1, m->b1, 1, h) |
              set_matrix(&w->ffn_W2, m->w2, h, d) | set_matrix(&w->ffn_b2, m->b2, 1, d);
        const float *norms[8] = {m->n1w, m->n1b, m->n2w, m->n2b, m->fw, m->fb, m->pn1w, m->pn2w};
        struct attn_matrix *dst[8] = {&w->norm1_weight,      &w->norm1_bias,
                                      &w->norm2_weight,      &w->norm2_bias,
                                      &w->final_norm_weight, &w->final_norm_bias,
                                      &w->post_norm1_weight, &w->post_norm2_weight};
        static const float plain[8] = {1, 0, 1, 0, 1, 0, 1, 1};
        for (int i = 0; i < 8; i++)
            if (!all_equal(norms[i], d, plain[i]))
                rc |= set_matrix(dst[i], norms[i], 1, d);
    }
    /* p = 1 drops everything without a draw: the mask follows from p, and attn_scene_check
     * refuses one outside 0 < p < 1, so writing it would make an export that cannot be loaded. */
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
    return rc;
}

int attn_scene_from_layers(struct attn_scene *out, const struct attn_scene *s,
                           const struct attn_model *layers, int n_layers)
{
    if (attn_scene_copy(out, s))
        return -1;
    /* The numbers of this state, not a tour of them: a lesson's edits would start from a
     * scene that already holds the edits of the steps before. */
    attn_lesson_unref(out->lesson);
    out->lesson = NULL;
    /* A checkpoint's numbers stay in its file: the scene already says everything. */
    if (s->model.file)
        return 0;
    const struct attn_model *m = &layers[0];
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
    if (out->block.on) {
        out->block.ffn_hidden = attn_scene_ffn_hidden(s);
        out->block.ffn_seed.set = false;
        out->block.ffn_skip = 0;
    }

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

    /* the models hold the authoritative numbers */
    attn_scene_weights_free_all(out);
    out->layers = n_layers;
    out->weights_listed = n_layers > 1;
    rc |= weights_from_model(&out->weights, m);
    if (n_layers > 1) {
        if ((out->more_weights = calloc((size_t)n_layers - 1, sizeof(*out->more_weights)))) {
            out->n_more = n_layers - 1;
            for (int L = 1; L < n_layers; L++)
                rc |= weights_from_model(&out->more_weights[L - 1], &layers[L]);
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

int attn_scene_from_model(struct attn_scene *out, const struct attn_scene *s,
                          const struct attn_model *m)
{
    return attn_scene_from_layers(out, s, m, 1);
}
