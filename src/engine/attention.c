/* attention: the forward pass, the kept stages and the derived ones on demand (see
 * attention.h). */
#include "engine/attention.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/fatal.h"
#include "engine/kernels.h"
#include "engine/pool.h"
#include "engine/vecmath.h"

/* Every buffer of a run, for allocation and freeing in one place. The second column: 1 when the
 * layers of a lean net share it (attn_run_init_sharing); 0 when each layer keeps its own, as
 * what is read after the layer is computed: what it hands on (output, res2, norm2, final) and
 * the concatenated heads that patching takes from a clean run. */
#define RUN_BUFFERS(X)                                                                             \
    X(q, 1)                                                                                        \
    X(k, 1)                                                                                        \
    X(v, 1)                                                                                        \
    X(qn, 1)                                                                                       \
    X(kn, 1)                                                                                       \
    X(qr, 1)                                                                                       \
    X(kr, 1)                                                                                       \
    X(latent, 1)                                                                                   \
    X(scores, 1)                                                                                   \
    X(weights, 1)                                                                                  \
    X(work, 1)                                                                                     \
    X(concat, 0)                                                                                   \
    X(output, 0)                                                                                   \
    X(res1, 1)                                                                                     \
    X(norm1, 1)                                                                                    \
    X(ffn_hidden, 1)                                                                               \
    X(ffn_gate, 1)                                                                                 \
    X(ffn_up, 1)                                                                                   \
    X(ffn_act, 1)                                                                                  \
    X(ffn_out, 1)                                                                                  \
    X(res2, 0)                                                                                     \
    X(norm2, 0)                                                                                    \
    X(final, 0)

/* The derived stage attn_view computed last, every head of it as it is asked for. data is
 * allocated for every head at once but calloc'ed: its pages cost memory only once a head is
 * written, so viewing one head costs one n x n matrix, the all-heads view one per head. */
struct attn_memo {
    int stage;             /* the derived stage held, or -1 for none */
    unsigned char *filled; /* (heads) 1 when that head's matrix is computed */
    float *data;           /* (heads, n, n) */
    /* weighted_norm's ||v_j W_O^h||, computed for a head the first time it is asked for. */
    unsigned char *vnorm_filled; /* (heads) */
    float *vnorm;                /* (heads, n) */
    float *vw;                   /* (n, D) scratch: one head's v W_O^h */
    /* Causal tiles: the forward pass computed only the scores a query can see; a head's others
     * (the future, above the panels) are computed the first time its scores are shown. */
    bool tiled;
    int panel;                    /* the panels' rows */
    unsigned char *future_filled; /* (heads) */
};

static void memo_free(struct attn_memo *memo)
{
    if (memo) {
        free(memo->filled);
        free(memo->data);
        free(memo->vnorm_filled);
        free(memo->vnorm);
        free(memo->vw);
        free(memo->future_filled);
        free(memo);
    }
}

void attn_run_free(struct attn_run *r)
{
#define X(name, shared)                                                                            \
    if (!(shared && r->borrows)) /* else another run's: it frees it */                             \
        free(r->name);
    RUN_BUFFERS(X)
#undef X
    memo_free(r->memo);
    memset(r, 0, sizeof(*r));
}

/* True when r's buffers are sized for m's shape, the final norm aside. */
static bool same_shape(const struct attn_run *r, const struct attn_model *m)
{
    return r->q && r->n == m->n && r->d_in == m->d_in && r->heads == m->heads &&
           r->head_dim == m->head_dim && r->D == m->D && r->Dkv == m->Dkv &&
           r->latent_dim == m->latent && r->rope == m->rope &&
           r->hidden == (m->block ? m->hidden : 0) && r->out_dim == m->out_dim &&
           r->qk_norm == (m->qnw != NULL) && r->gated == (m->block && m->activation == ACT_SWIGLU);
}

bool attn_run_fits(const struct attn_run *r, const struct attn_model *m)
{
    return !r->borrows && same_shape(r, m) && r->final_norm == m->final_norm;
}

/* Causal work is cut into panels of attn_row_panel() queries (at most PANEL): panel p computes
 * the scores of its queries against keys 0 .. its last query, their softmax, and their context
 * from those keys only. The row-wise products of such a net run on the same panels (kernels.h's
 * attn_mm_ab_rows), so a prefix of panels is reused bit for bit (attn_forward_rows). */
enum { PANEL = 64 };

static bool causal_tiled(const struct attn_model *m);

/* True when the row-wise products run on row panels: a causal net computed panel by panel.
 * Every other scene keeps one product over all its rows. */
static bool row_panels(const struct attn_model *m)
{
    return causal_tiled(m);
}

/* The rows of a causal panel: attn_row_panel(), never above PANEL (the scratch is sized so). */
static int panel_rows(void)
{
    int p = attn_row_panel();
    return p > 0 && p < PANEL ? p : PANEL;
}

/* The forward pass's scratch: one head's (n, n) masked stage, or a panel's (PANEL, n) dropout on
 * each of the pool's threads. */
static size_t work_floats(size_t n)
{
    size_t panels = (size_t)attn_pool_threads() * PANEL * n;
    return n * n > panels ? n * n : panels;
}

int attn_run_init(struct attn_run *r, const struct attn_model *m, struct diag *err)
{
    return attn_run_init_sharing(r, m, NULL, err);
}

int attn_run_init_sharing(struct attn_run *r, const struct attn_model *m,
                          const struct attn_run *owner, struct diag *err)
{
    if (!owner && attn_run_fits(r, m))
        return 0; /* same shape: reuse every buffer */
    attn_run_free(r);
    bool share = owner && !owner->borrows && same_shape(owner, m);
    size_t n = (size_t)m->n, D = (size_t)m->D, Dkv = (size_t)m->Dkv, d = (size_t)m->d_in;
    size_t hnn = (size_t)m->heads * n * n, h = m->block ? (size_t)m->hidden : 0;
    size_t E = (size_t)m->out_dim;
    bool qk = m->qnw != NULL, gated = m->block && m->activation == ACT_SWIGLU;
    /* Every run has the attention stages; the others only when the scene has the system. */
    struct {
        float **buf;
        size_t count;
        bool needed;
    } plan[] = {
        {&r->q, n * D, true},
        {&r->k, n * Dkv, true},
        {&r->v, n * Dkv, true},
        {&r->qn, n * D, qk},
        {&r->kn, n * Dkv, qk},
        {&r->qr, n * D, m->rope},
        {&r->kr, n * Dkv, m->rope},
        {&r->latent, n * (size_t)m->latent, m->latent > 0},
        {&r->scores, hnn, true},
        {&r->weights, hnn, true},
        {&r->work, work_floats(n), true},
        {&r->concat, n * D, true},
        {&r->output, n * E, true},
        {&r->res1, n * d, m->block},
        {&r->norm1, n * d, m->block},
        {&r->ffn_hidden, n * h, m->block && !gated},
        {&r->ffn_gate, n * h, gated},
        {&r->ffn_up, n * h, gated},
        {&r->ffn_act, n * h, m->block},
        {&r->ffn_out, n * d, m->block},
        {&r->res2, n * d, m->block},
        {&r->norm2, n * d, m->block},
        {&r->final, n * d, m->final_norm},
    };
    if (share) { /* owner has the same shape: the same buffers are needed */
#define X(name, shared)                                                                            \
    if (shared)                                                                                    \
        r->name = owner->name;
        RUN_BUFFERS(X)
#undef X
        r->borrows = true;
    }
    for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]); i++)
        if (plan[i].needed && !*plan[i].buf && !(*plan[i].buf = attn_alloc_stage(plan[i].count)))
            goto oom;
    struct attn_memo *memo = calloc(1, sizeof(*memo));
    r->memo = memo;
    if (!memo || !(memo->filled = calloc((size_t)m->heads + 1, 1)) ||
        !(memo->data = calloc(hnn ? hnn : 1, sizeof(float))) ||
        !(memo->vnorm_filled = calloc((size_t)m->heads + 1, 1)) ||
        !(memo->vnorm = calloc((size_t)m->heads * n + 1, sizeof(float))) ||
        !(memo->vw = calloc(n * (D > E ? D : E) + 1, sizeof(float))) ||
        !(memo->future_filled = calloc((size_t)m->heads + 1, 1)))
        goto oom;
    memo->stage = -1;
    r->n = m->n;
    r->cap_n = m->n;
    r->d_in = m->d_in;
    r->heads = m->heads;
    r->head_dim = m->head_dim;
    r->D = m->D;
    r->Dkv = m->Dkv;
    r->latent_dim = m->latent;
    r->rope = m->rope;
    r->hidden = (int)h;
    r->final_norm = m->final_norm;
    r->out_dim = m->out_dim;
    r->qk_norm = qk;
    r->gated = gated;
    r->work_slots = (int)(work_floats(n) / (PANEL * (n ? n : 1)));
    return 0;
oom:
    attn_run_free(r);
    return attn_diag_set(err, "", "out of memory for the attention stages");
}

/* out (n, width) = in W + b, W m's member (wq, wk or wv), or in itself repeated once per head
 * when there is no projection. */
static void project(float *out, int width, const struct attn_model *m, const float *in,
                    size_t member, const float *b, int first)
{
    if (m->project) {
        attn_model_mm(m, &(struct attn_model_mm_params){.out = out + (size_t)first * width,
                                                        .in = in + (size_t)first * m->d_in,
                                                        .member = member,
                                                        .bias = b,
                                                        .rows = m->n - first,
                                                        .cols = width,
                                                        .k = m->d_in,
                                                        .panels = row_panels(m)});
        return;
    }
    for (int h = 0; h < width / m->d_in; h++)
        for (int i = first; i < m->n; i++)
            memcpy(out + (size_t)i * width + (size_t)h * m->d_in, in + (size_t)i * m->d_in,
                   (size_t)m->d_in * sizeof(float));
}

/* RoPE: every head of x (n, width) rotated by its token's angles into out. adjacent pairs
 * (2i, 2i+1) as complex numbers; halves pairs (i, i + hd/2) as rotate_half does. */
static void rotate(float *out, const float *x, int width, const struct attn_model *m, int first)
{
    int hd = m->head_dim, half = hd / 2;
    for (int t = first; t < m->n; t++) {
        const float *c = m->rope_cos + (size_t)t * half, *s = m->rope_sin + (size_t)t * half;
        for (int h = 0; h < width / hd; h++) {
            const float *in = x + (size_t)t * width + (size_t)h * hd;
            float *o = out + (size_t)t * width + (size_t)h * hd;
            for (int i = 0; i < half; i++) {
                int a = m->rope_pairs == ROPE_ADJACENT ? 2 * i : i;
                int b = m->rope_pairs == ROPE_ADJACENT ? 2 * i + 1 : i + half;
                float xa = in[a], xb = in[b];
                o[a] = xa * c[i] - xb * s[i];
                o[b] = xa * s[i] + xb * c[i];
            }
        }
    }
}

/* Rows of a norm: each row's arithmetic is that of one thread, in order, so splitting rows
 * among threads changes no bit. */
struct norm_job {
    float *out;
    const float *in;
    int rows;
    const struct attn_model *m;
    const float *w, *b;
};

enum { NORM_ROWS_PER_TASK = 8 };

static void norm_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct norm_job *job = ctx;
    const struct attn_model *m = job->m;
    int d = m->d_in;
    const float *w = job->w, *b = job->b;
    int end = (t + 1) * NORM_ROWS_PER_TASK < job->rows ? (t + 1) * NORM_ROWS_PER_TASK : job->rows;
    for (int i = t * NORM_ROWS_PER_TASK; i < end; i++) {
        const float *x = job->in + (size_t)i * d;
        float *y = job->out + (size_t)i * d;
        double mean = 0, var = 0;
        if (m->norm == NORM_LAYER) {
            for (int j = 0; j < d; j++)
                mean += x[j];
            mean /= d;
        }
        for (int j = 0; j < d; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= d;
        float inv = (float)(1.0 / sqrt(var + (double)m->norm_eps));
        for (int j = 0; j < d; j++) {
            float v = (float)(x[j] - mean) * inv * w[j];
            y[j] = b ? v + b[j] : v;
        }
    }
}

void attn_norm_rows(float *out, const float *in, int rows, const struct attn_model *m,
                    const float *w, const float *b)
{
    struct norm_job job = {out, in, rows, m, w, b};
    int tasks = (rows + NORM_ROWS_PER_TASK - 1) / NORM_ROWS_PER_TASK;
    if ((size_t)rows * (size_t)m->d_in < 16384) /* small: a thread's wake-up would cost more */
        for (int t = 0; t < tasks; t++)
            norm_part(&job, t, 0);
    else
        attn_pool_run(tasks, 0, norm_part, &job);
}

/* Rows first .. n - 1 of in (n, d). */
static void normalize(float *out, const float *in, const struct attn_model *m, const float *w,
                      const float *b, int first)
{
    size_t skip = (size_t)first * (size_t)m->d_in;
    attn_norm_rows(out + skip, in + skip, m->n - first, m, w, b);
}

void attn_final_norm_rows(float *out, const float *in, int rows, const struct attn_model *last)
{
    if (last->final_norm)
        attn_norm_rows(out, in, rows, last, last->fw, last->fb);
    else if (out != in)
        memcpy(out, in, (size_t)rows * (size_t)last->d_in * sizeof(float));
}

/* qk_norm: every head of x (n, width) RMS-normalised over its head_dim, times w (head_dim), as
 * Qwen3's q_norm and k_norm do. */
static void norm_heads(float *out, const float *x, int width, const struct attn_model *m,
                       const float *w, int first)
{
    int hd = m->head_dim;
    for (int t = first; t < m->n; t++)
        for (int h = 0; h < width / hd; h++) {
            const float *in = x + (size_t)t * width + (size_t)h * hd;
            float *o = out + (size_t)t * width + (size_t)h * hd;
            double var = 0;
            for (int j = 0; j < hd; j++)
                var += (double)in[j] * in[j];
            float inv = (float)(1.0 / sqrt(var / hd + (double)m->norm_eps));
            for (int j = 0; j < hd; j++)
                o[j] = in[j] * inv * w[j];
        }
}

/* Elementwise work in slices of ELEMS_PER_TASK: each element's arithmetic is the same on
 * whichever thread, so the split changes no bit. */
enum { ELEMS_PER_TASK = 16384 };

struct elem_job {
    float *out;
    const float *a, *b;
    size_t count;
    int kind; /* an enum attn_activation, or ELEM_ADD */
};

#define ELEM_ADD (-1)

static void elem_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct elem_job *job = ctx;
    size_t lo = (size_t)t * ELEMS_PER_TASK;
    size_t hi = lo + ELEMS_PER_TASK < job->count ? lo + ELEMS_PER_TASK : job->count;
    float *out = job->out;
    const float *in = job->a, *up = job->b;
    switch (job->kind) {
    case ELEM_ADD:
        attn_add(out + lo, in + lo, up + lo, hi - lo);
        break;
    case ACT_RELU:
        for (size_t i = lo; i < hi; i++)
            out[i] = in[i] > 0.0f ? in[i] : 0.0f;
        break;
    case ACT_GELU: /* double precision, correctly rounded to float: as before, bit for bit */
        for (size_t i = lo; i < hi; i++) {
            double x = in[i];
            out[i] = (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
        }
        break;
    case ACT_GELU_TANH: /* float, vectorised (vecmath.h): within a few ulp of the double value */
        attn_gelu_tanh(out + lo, in + lo, hi - lo);
        break;
    case ACT_SWIGLU: /* SiLU(gate) * up, gate in a, up in b; double, as before */
        for (size_t i = lo; i < hi; i++) {
            double g = in[i];
            out[i] = (float)(g / (1.0 + exp(-g))) * up[i];
        }
        break;
    default:
        break;
    }
}

static void elem_run(float *out, const float *a, const float *b, size_t count, int kind)
{
    struct elem_job job = {out, a, b, count, kind};
    size_t tasks = (count + ELEMS_PER_TASK - 1) / ELEMS_PER_TASK;
    attn_pool_run((int)tasks, 0, elem_part, &job);
}

/* SiLU(gate) * up, element by element: SwiGLU's activation. */
static void swiglu(float *out, const float *gate, const float *up, size_t count)
{
    elem_run(out, gate, up, count, ACT_SWIGLU);
}

void attn_activate(float *out, const float *in, size_t count, enum attn_activation act)
{
    if (act != ACT_SWIGLU)
        elem_run(out, in, NULL, count, (int)act);
}

/* True when query i may not see key j: the future of a causal mask, or a key the sliding
 * window has left behind. */
static bool hidden_key(const struct attn_model *m, int i, int j)
{
    return (m->causal && j > i) || (m->window > 0 && i - j >= m->window);
}

/* Sets every hidden cell (hidden_key) of a to value: -inf before the softmax, 0 after it.
 * a: (n, n) */
static void fill_hidden(float *a, const struct attn_model *m, float value)
{
    int n = m->n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (hidden_key(m, i, j))
                a[(size_t)i * n + j] = value;
}

/* out (n, n) = each row of in normalised by softmax or by its sum. */
static void normalize_rows(float *out, const float *in, int n, enum attn_normalize how)
{
    if (how == NORMALIZE_SUM)
        attn_sumnorm_rows(out, in, n, n);
    else
        attn_softmax_rows(out, in, n, n);
}

/* The stage whose numbers s has: scaled is the scores when the divisor is 1 (x / 1 == x),
 * masked is scaled without a causal mask, dropout is the weights without a keep-mask. */
static enum attn_stage same_as(const struct attn_model *m, enum attn_stage s)
{
    if (s == STAGE_DROPOUT && !m->keep)
        s = STAGE_WEIGHTS;
    if (s == STAGE_MASKED && !m->causal && m->window <= 0)
        s = STAGE_SCALED;
    if (s == STAGE_SCALED && m->scale_divisor == 1.0f)
        s = STAGE_SCORES;
    return s;
}

bool attn_stage_is_derived(const struct attn_model *m, enum attn_stage s)
{
    s = same_as(m, s);
    return s == STAGE_SCALED || s == STAGE_MASKED || s == STAGE_DROPOUT || s == STAGE_WEIGHTED_NORM;
}

/* out (n, n) = one head's scaled scores: scores / divisor. */
static void scale_scores(float *out, const float *scores, const struct attn_model *m)
{
    size_t nn = (size_t)m->n * (size_t)m->n;
    for (size_t i = 0; i < nn; i++)
        out[i] = scores[i] / m->scale_divisor;
}

/* out (n, n) = one head's masked stage from its scores: scaled, then -inf where the key is
 * hidden (the future, a key out of the sliding window; before_softmax), or normalised with them
 * zeroed (after_softmax); without a mask, scaled. The forward pass and attn_view both call this,
 * so they agree to the bit. */
static void mask_scores(float *out, const float *scores, const struct attn_model *m)
{
    int n = m->n;
    bool masked = m->causal || m->window > 0;
    if (masked && m->mask_mode == MASK_BEFORE_SOFTMAX) {
        /* a hidden key is -inf whatever it scaled to: only the visible ones are divided */
        for (int i = 0; i < n; i++) {
            float *o = out + (size_t)i * n;
            const float *x = scores + (size_t)i * n;
            for (int j = 0; j < n; j++)
                o[j] = hidden_key(m, i, j) ? -INFINITY : x[j] / m->scale_divisor;
        }
        return;
    }
    scale_scores(out, scores, m);
    if (masked) { /* the book's first try: normalise, then zero the future */
        normalize_rows(out, out, n, m->normalize);
        fill_hidden(out, m, 0.0f);
    }
}

/* out (count) = weights after dropout: torch's nn.Dropout makes noise = keep / (1 - p) in float,
 * then weights * noise. keep: the mask of the same cells (a head's n * n, or rows of it). */
static void drop_weights(float *out, const float *weights, const unsigned char *keep, size_t count,
                         const struct attn_model *m)
{
    float keep_scale = 1.0f / (float)(1.0 - m->dropout);
    for (size_t i = 0; i < count; i++)
        out[i] = weights[i] * (keep[i] ? keep_scale : 0.0f);
}

/* The KV head query head h reads. */
static int kv_head_of(const struct attn_model *m, int h)
{
    return h / (m->heads / m->kv_heads);
}

const float *attn_value_norms(const struct attn_run *r, const struct attn_model *m, int h)
{
    struct attn_memo *memo = r->memo;
    int n = m->n, hd = m->head_dim, E = m->out_dim;
    float *out = memo->vnorm + (size_t)h * (size_t)n;
    if (memo->vnorm_filled[h])
        return out;
    const float *v = r->v + (size_t)kv_head_of(m, h) * (size_t)hd;
    const float *rows = v; /* v_j W_O^h, or v_j itself without out_proj */
    int width = hd, ld = m->Dkv;
    if (m->wo) { /* the head's rows of W_O: its hd columns of concat feed them */
        const float *wo = ATTN_PARAM(m, wo);
        (row_panels(m) ? attn_mm_ab_rows : attn_mm_ab)(
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

/* out (n, n) = one head's weighted norms: |a_ij| * ||v_j W_O^h||, a the weights after dropout
 * (what multiplies V), so ||a_ij v_j W_O^h|| exactly as Kobayashi et al. write it. */
static void weighted_norm(float *out, const struct attn_run *r, const struct attn_model *m, int h)
{
    int n = m->n;
    size_t nn = (size_t)n * (size_t)n;
    const float *norms = attn_value_norms(r, m, h);
    const float *w = r->weights + h * nn;
    const unsigned char *keep = m->keep ? m->keep + h * nn : NULL;
    float keep_scale = keep ? 1.0f / (float)(1.0 - m->dropout) : 1.0f;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            size_t c = (size_t)i * (size_t)n + (size_t)j;
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

#ifdef ATTNSCOPE_TEST_HOOKS
bool attn_causal_untiled; /* tests: causal scenes by the full path, to compare with */
#endif

/* True when the forward pass computes head h panel by panel, the future skipped: a causal mask
 * before a softmax, no sliding window. Anything else takes the full path. */
static bool causal_tiled(const struct attn_model *m)
{
#ifdef ATTNSCOPE_TEST_HOOKS
    if (attn_causal_untiled)
        return false;
#endif
    return m->causal && m->window <= 0 && m->mask_mode == MASK_BEFORE_SOFTMAX &&
           m->normalize == NORMALIZE_SOFTMAX;
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
    const float *qh = q + (size_t)h * hd, *kh = k + (size_t)kv_head_of(m, h) * hd;
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

/* out (n, n) = derived stage s (after same_as) of head h, from the kept scores or weights. */
static void derive(float *out, const struct attn_run *r, const struct attn_model *m,
                   enum attn_stage s, int h)
{
    size_t nn = (size_t)m->n * (size_t)m->n;
    if (s == STAGE_SCALED) {
        fill_future_scores(r, m, h);
        scale_scores(out, r->scores + h * nn, m);
    } else if (s == STAGE_MASKED)
        mask_scores(out, r->scores + h * nn, m);
    else if (s == STAGE_WEIGHTED_NORM)
        weighted_norm(out, r, m, h);
    else
        drop_weights(out, r->weights + h * nn, m->keep + h * nn, nn, m);
}

/* The pass's finite check as it goes. A nan or an inf made anywhere in a layer reaches its last
 * stage (a product, a sum, a norm, RoPE, gelu and SiLU all keep one: nan * 0 is nan), except
 * through what hides one: the mask (a future score reaches nothing, and is not counted), the
 * softmax of a -inf score (weight 0), relu (of -inf or nan: 0), and an ablated or patched head
 * (its context replaced). So the pass reads those where they happen, while in cache (the visible
 * scaled scores as each panel makes them, relu's input, the context before it is replaced), and
 * the layer's last stages once (seen_at); only when one of them holds a value that is not a
 * number is every stage read to name the first (find_nonfinite). The cost: one read of the
 * layer's output, next to its products (docs/performance.md). */
static void seen_at(struct attn_run *r, const float *buf, int width, int first, int n)
{
    if (buf && !r->seen_nonfinite && first < n)
        r->seen_nonfinite =
            attn_any_nonfinite(buf + (size_t)first * (size_t)width, (size_t)(n - first) * width);
}

/* The FFN and the residuals around it, rows first .. n - 1. */
static void forward_block(struct attn_run *r, const struct attn_model *m, int first)
{
    int rows = m->n - first, d = m->d_in, hid = m->hidden;
    size_t nd = (size_t)rows * d, skip = (size_t)first * d, skip_h = (size_t)first * hid;
    bool panels = row_panels(m);
    elem_run(r->res1 + skip, m->x + skip, r->output + skip, nd, ELEM_ADD);
    const float *ffn_in;
    if (m->order == BLOCK_POST) {
        normalize(r->norm1, r->res1, m, m->n1w, m->n1b, first);
        ffn_in = r->norm1 + skip;
    } else {
        normalize(r->norm2, r->res1, m, m->n2w, m->n2b, first); /* norm1 was attention's input */
        ffn_in = r->norm2 + skip;
    }
    /* The FFN's products, each over the block's rows */
#define MM(...)                                                                                    \
    attn_model_mm(m, &(struct attn_model_mm_params){.rows = rows, .panels = panels, __VA_ARGS__})
    if (m->activation == ACT_SWIGLU) { /* Llama's MLP: down(silu(gate(x)) * up(x)) */
        MM(.out = r->ffn_gate + skip_h, .in = ffn_in, .member = ATTN_MEMBER(wg), .bias = m->bg,
           .cols = hid, .k = d);
        MM(.out = r->ffn_up + skip_h, .in = ffn_in, .member = ATTN_MEMBER(w1), .bias = m->b1,
           .cols = hid, .k = d);
        swiglu(r->ffn_act + skip_h, r->ffn_gate + skip_h, r->ffn_up + skip_h, (size_t)rows * hid);
    } else {
        MM(.out = r->ffn_hidden + skip_h, .in = ffn_in, .member = ATTN_MEMBER(w1), .bias = m->b1,
           .cols = hid, .k = d);
        if (m->activation == ACT_RELU) /* relu makes 0 of -inf and nan: its input is read */
            seen_at(r, r->ffn_hidden, hid, first, m->n);
        attn_activate(r->ffn_act + skip_h, r->ffn_hidden + skip_h, (size_t)rows * hid,
                      m->activation);
    }
    MM(.out = r->ffn_out + skip, .in = r->ffn_act + skip_h, .member = ATTN_MEMBER(w2),
       .bias = m->b2, .cols = d, .k = hid);
#undef MM
    const float *res_in = m->order == BLOCK_POST ? r->norm1 : r->res1;
    elem_run(r->res2 + skip, res_in + skip, r->ffn_out + skip, nd, ELEM_ADD);
    if (m->order == BLOCK_POST)
        normalize(r->norm2, r->res2, m, m->n2w, m->n2b, first);
    if (m->final_norm)
        normalize(r->final, m->order == BLOCK_POST ? r->norm2 : r->res2, m, m->fw, m->fb, first);
}

/* Ablation and patching: the columns of concat of every head whose mode is not HEAD_KEEP
 * replaced before out_proj sees them. */
static void replace_heads(struct attn_run *r, const struct attn_model *m)
{
    int n = m->n, D = m->D, hd = m->head_dim;
    for (int h = 0; h < m->heads; h++) {
        enum attn_head_mode mode = (enum attn_head_mode)m->head_mode[h];
        if (mode == HEAD_KEEP || (mode == HEAD_PATCH && !m->patch))
            continue;
        for (int c = h * hd; c < (h + 1) * hd; c++) {
            float mean = 0.0f;
            if (mode == HEAD_MEAN) { /* TransformerLens's mean ablation, over this text */
                double sum = 0;
                for (int i = 0; i < n; i++)
                    sum += r->concat[(size_t)i * D + c];
                mean = (float)(sum / n);
            }
            for (int i = 0; i < n; i++)
                r->concat[(size_t)i * D + c] = mode == HEAD_ZERO   ? 0.0f
                                               : mode == HEAD_MEAN ? mean
                                                                   : m->patch[(size_t)i * D + c];
        }
    }
}

/* One panel of one head of the causal forward pass (see PANEL): its queries' scores against the
 * keys they see, the masked stage's visible cells (scores / divisor, what mask_scores computes)
 * softmaxed in place in the weights, and its context from those keys only. The weights past a
 * query are 0 * (1 / sum), as the full row's softmax gives. */
struct panel_job {
    struct attn_run *r;
    const struct attn_model *m;
    const float *q, *k;
    int panels;      /* panels a head computes: first_panel .. first_panel + panels - 1 */
    int first_panel; /* the panels before it are kept (attn_forward_rows) */
    int panel;       /* rows of a panel */
    int reported;    /* heads reported so far (the caller's thread only) */
    atomic_int done;
    atomic_bool stop;
    atomic_bool nonfinite; /* a visible scaled score was not a number (find_nonfinite) */
};

/* Reports heads reported + 1 .. heads, each once and in order, and reads the stop flag. */
static void report_heads(struct panel_job *job, int heads)
{
    struct attn_run *r = job->r;
    while (job->reported < heads) {
        job->reported++;
        progress_report(r->progress, r->progress_base + job->reported, r->progress_total);
    }
    if (progress_stopped(r->progress))
        atomic_store(&job->stop, true);
}

static void panel_task(void *ctx, int t, int slot)
{
    struct panel_job *job = ctx;
    struct attn_run *r = job->r;
    const struct attn_model *m = job->m;
    if (atomic_load(&job->stop))
        return;
    int n = m->n, D = m->D, Dkv = m->Dkv, hd = m->head_dim;
    size_t nn = (size_t)n * (size_t)n;
    /* the largest panels first */
    int h = t % m->heads, p = job->first_panel + job->panels - 1 - t / m->heads;
    int i0 = p * job->panel, i1 = i0 + job->panel < n ? i0 + job->panel : n, rows = i1 - i0;
    int kvh = kv_head_of(m, h);
    const float *qh = job->q + (size_t)h * hd, *kh = job->k + (size_t)kvh * hd;
    const float *vh = r->v + (size_t)kvh * hd;
    float *scores = r->scores + h * nn + (size_t)i0 * n, *weights = r->weights + h * nn;
    /* The panel's products read and write the thread's scratch, (rows, i1) packed: their
       leading dimensions follow the panel alone, never the sentence's length, so a panel kept
       by a sentence edit was made by the very calls a fresh computation makes. */
    float *s = r->work + (size_t)slot * job->panel * n;

    attn_mm_abt(s, i1, qh + (size_t)i0 * D, D, kh, Dkv, rows, i1, hd);
    bool bad = false;
    for (int i = i0; i < i1; i++) {
        const float *x = s + (size_t)(i - i0) * i1;
        float *y = weights + (size_t)i * n;
        memcpy(scores + (size_t)(i - i0) * n, x, (size_t)i1 * sizeof(float));
        /* scaled, and its finite check in the same pass: a score that is not a number makes a
           scaled one that is not (the divisor is finite) */
        bad |= attn_div_nonfinite(y, x, m->scale_divisor, i + 1);
        attn_softmax_row_prefix(y, y, i + 1, n);
    }
    if (bad)
        atomic_store(&job->nonfinite, true);
    /* the panel's weights, after dropout when there is one (past i1 they are 0, not read) */
    for (int i = i0; i < i1; i++) {
        size_t at = (size_t)i * n;
        if (m->keep)
            drop_weights(s + (size_t)(i - i0) * i1, weights + at, m->keep + h * nn + at, (size_t)i1,
                         m);
        else
            memcpy(s + (size_t)(i - i0) * i1, weights + at, (size_t)i1 * sizeof(float));
    }
    attn_mm_ab(r->concat + (size_t)i0 * D + (size_t)h * hd, D, s, i1, vh, Dkv, NULL, rows, hd, i1);
    int done = atomic_fetch_add(&job->done, 1) + 1;
    if (slot == 0) /* feedback from the caller's thread only: a head per `panels` panels */
        report_heads(job, done / job->panels);
}

static void forward_heads_tiled(struct attn_run *r, const struct attn_model *m, const float *q,
                                const float *k, int first)
{
    int panel = panel_rows();
    struct panel_job job = {.r = r, .m = m, .q = q, .k = k, .panel = panel};
    job.first_panel = first / panel;
    job.panels = (m->n + panel - 1) / panel - job.first_panel;
    atomic_init(&job.done, 0);
    atomic_init(&job.stop, false);
    atomic_init(&job.nonfinite, false);
    if (job.panels <= 0) { /* every row kept */
        report_heads(&job, m->heads);
        return;
    }
    /* A small scene's heads are not worth a thread's wake-up. */
    double work = (double)(m->n - first) * m->n * m->heads * m->head_dim;
    attn_pool_run(m->heads * job.panels, work < (1 << 20) ? 1 : r->work_slots, panel_task, &job);
    if (atomic_load(&job.stop))
        r->stopped = true;
    else
        report_heads(&job, m->heads);
    r->seen_nonfinite |= atomic_load(&job.nonfinite);
}

/* ---- the finite check: the first value of the pass that is not a number ------------------ */

static struct attn_mat_view kept_view(const struct attn_run *r, const struct attn_model *m,
                                      enum attn_stage s, int h);

/* The columns of row i a query reads: the visible keys of a mask before the softmax (the rest
 * are -inf by design, and the tiled pass never computes most of them), else the whole row. */
static void visible_cols(const struct attn_model *m, int i, int *j0, int *j1)
{
    *j0 = 0;
    *j1 = m->n;
    if (m->mask_mode != MASK_BEFORE_SOFTMAX)
        return;
    if (m->causal)
        *j1 = i + 1;
    if (m->window > 0 && i - m->window + 1 > 0)
        *j0 = i - m->window + 1;
}

static void found_at(struct attn_nonfinite *f, enum attn_stage st, int h, int i, int j, float v)
{
    *f = (struct attn_nonfinite){true, st, h, i, j, v};
}

/* The first cell (rows first .. n - 1) of stage st, head by head, that is not finite: in f.
 * A cell at a time: only for a stage whose scan found one. */
static void locate(struct attn_nonfinite *f, const struct attn_run *r, const struct attn_model *m,
                   enum attn_stage st, int first)
{
    int heads = attn_stage_is_per_head(st) ? m->heads : 1;
    for (int h = 0; h < heads; h++) {
        struct attn_mat_view v = kept_view(r, m, st, h);
        for (int i = first; i < v.rows; i++)
            for (int j = 0; j < v.cols; j++)
                if (!isfinite(v.data[(size_t)i * v.stride + j])) {
                    found_at(f, st, attn_stage_is_per_head(st) ? h : -1, i, j,
                             v.data[(size_t)i * v.stride + j]);
                    return;
                }
    }
}

/* Scores (and scaled, the scores over the divisor): every head's visible cells, rows first ..
 * n - 1. True when f was set. Scaled is a number wherever the score is, unless the divisor is
 * below 1 (a scene's own scale): then each cell is divided to see. */
static bool scores_nonfinite(struct attn_nonfinite *f, const struct attn_run *r,
                             const struct attn_model *m, int first)
{
    int n = m->n;
    size_t nn = (size_t)n * (size_t)n;
    float div = m->scale_divisor;
    bool bad = false;
    for (int h = 0; h < m->heads && !bad; h++)
        for (int i = first; i < n && !bad; i++) {
            int j0, j1;
            visible_cols(m, i, &j0, &j1);
            bad = attn_any_nonfinite(r->scores + h * nn + (size_t)i * n + j0, (size_t)(j1 - j0));
        }
    if (!bad && !(div < 1.0f))
        return false;
    for (int pass = 0; pass < 2; pass++) /* the scores first, then scaled */
        for (int h = 0; h < m->heads; h++)
            for (int i = first; i < n; i++) {
                int j0, j1;
                visible_cols(m, i, &j0, &j1);
                const float *row = r->scores + h * nn + (size_t)i * n;
                for (int j = j0; j < j1; j++) {
                    float x = pass == 0 ? row[j] : row[j] / div;
                    if (!isfinite(x)) {
                        found_at(f, pass == 0 ? STAGE_SCORES : STAGE_SCALED, h, i, j, x);
                        return true;
                    }
                }
            }
    return false;
}

/* Sets r->nonfinite from rows first .. n - 1 of every kept stage, in the pipeline's order: one
 * vectorised read of each stage, a cell at a time only in a stage that has a bad value. Run only
 * when the pass has seen one (seen_at): the rare path. */
static void find_nonfinite(struct attn_run *r, const struct attn_model *m, int first)
{
    struct attn_nonfinite *f = &r->nonfinite;
    *f = (struct attn_nonfinite){.found = false};
    int n = m->n;
    if (first >= n)
        return;
    size_t nn = (size_t)n * (size_t)n;
    /* The weights follow from finite scaled scores without a bad value whenever a softmax makes
       them from a row with a visible key (each weight e^(x - max) / sum, sum >= 1): read them
       only for the other normalisations (a sum can be 0). */
    bool masked = m->causal || m->window > 0;
    bool weights_follow =
        m->normalize == NORMALIZE_SOFTMAX && !(masked && m->mask_mode == MASK_AFTER_SOFTMAX);
    enum attn_stage order[STAGE_COUNT];
    int count = attn_stage_order(order, m);
    for (int k = 0; k < count && !f->found; k++) {
        enum attn_stage st = order[k];
        if (st == STAGE_SCORES) {
            scores_nonfinite(f, r, m, first);
            continue;
        }
        if (st == STAGE_WEIGHTS) {
            if (weights_follow)
                continue;
            bool bad = false;
            for (int h = 0; h < m->heads && !bad; h++)
                bad = attn_any_nonfinite(r->weights + h * nn + (size_t)first * n,
                                         (size_t)(n - first) * (size_t)n);
            if (bad)
                locate(f, r, m, st, first);
            continue;
        }
        /* scaled is read with the scores; masked and dropout follow from what they are made
           of (a mask, a keep-mask); weighted_norm is not the pass's; concat is the contexts,
           read as each head's */
        if (st == STAGE_SCALED || st == STAGE_MASKED || st == STAGE_DROPOUT ||
            st == STAGE_WEIGHTED_NORM || st == STAGE_CONCAT)
            continue;
        /* head 0's view of a per-head stage starts its buffer: every head's columns, a row a
           stride, so rows first .. n - 1 are one run of memory */
        struct attn_mat_view v = kept_view(r, m, st, 0);
        if (!v.data || v.rows <= first)
            continue;
        size_t len = (size_t)(v.rows - first - 1) * (size_t)v.stride +
                     (attn_stage_is_per_head(st) ? (size_t)v.stride : (size_t)v.cols);
        if (attn_any_nonfinite(v.data + (size_t)first * v.stride, len))
            locate(f, r, m, st, first);
    }
}

void attn_forward(struct attn_run *r, const struct attn_model *m)
{
    attn_forward_rows(r, m, 0);
}

bool attn_rows_reusable(const struct attn_model *m)
{
    if (!causal_tiled(m) || m->keep || m->patch)
        return false;
    for (int h = 0; h < m->heads; h++)
        if (m->head_mode[h] != HEAD_KEEP)
            return false;
    return true;
}

void attn_forward_rows(struct attn_run *r, const struct attn_model *m, int first)
{
    int n = m->n, D = m->D, Dkv = m->Dkv, hd = m->head_dim;
    size_t nn = (size_t)n * (size_t)n;
    if (first < 0 || !attn_rows_reusable(m))
        first = 0; /* only a causal panelled pass keeps rows */
    if (first > n)
        first = n;
    first -= first % panel_rows();
    size_t skip = (size_t)first;
    bool panels = row_panels(m);
    /* A pre-norm block normalises before attention: norm1 is attention's input. */
    const float *in = m->x;
    r->stopped = false;
    r->seen_nonfinite = false;
    if (m->block && m->order == BLOCK_PRE) {
        normalize(r->norm1, m->x, m, m->n1w, m->n1b, first);
        in = r->norm1;
    }
    /* Stopped between the large products (each projection, each head): a long sequence's
       projection is seconds of work, and Ctrl-C or q must not wait for the whole layer. */
    if ((r->stopped = progress_stopped(r->progress)))
        return;
    project(r->q, D, m, in, offsetof(struct attn_model, wq), m->bq, first);
    if ((r->stopped = progress_stopped(r->progress)))
        return;
    if (m->latent > 0) {
        int lr = m->latent, rows = n - first;
        void (*mm)(float *, int, const float *, int, const float *, int, const float *, int, int,
                   int) = panels ? attn_mm_ab_rows : attn_mm_ab;
        mm(r->latent + skip * lr, lr, in + skip * m->d_in, m->d_in, m->wdown, lr, NULL, rows, lr,
           m->d_in);
        mm(r->k + skip * D, D, r->latent + skip * lr, lr, m->wkup, D, NULL, rows, D, lr);
        mm(r->v + skip * D, D, r->latent + skip * lr, lr, m->wvup, D, NULL, rows, D, lr);
    } else {
        project(r->k, Dkv, m, in, offsetof(struct attn_model, wk), m->bk, first);
        if ((r->stopped = progress_stopped(r->progress)))
            return;
        project(r->v, Dkv, m, in, offsetof(struct attn_model, wv), m->bv, first);
    }
    if ((r->stopped = progress_stopped(r->progress)))
        return;
    const float *q = r->q, *k = r->k;
    if (m->qnw) { /* qk_norm: each head normalised before RoPE (Qwen3) */
        norm_heads(r->qn, r->q, D, m, m->qnw, first);
        norm_heads(r->kn, r->k, Dkv, m, m->knw, first);
        q = r->qn;
        k = r->kn;
    }
    if (m->rope) {
        rotate(r->qr, q, D, m, first);
        rotate(r->kr, k, Dkv, m, first);
        q = r->qr;
        k = r->kr;
    }

    r->memo->stage = -1; /* what it held belongs to the last result */
    memset(r->memo->vnorm_filled, 0, (size_t)m->heads);
    memset(r->memo->future_filled, 0, (size_t)m->heads);
    r->memo->tiled = causal_tiled(m);
    r->memo->panel = panel_rows();
    if (r->memo->tiled) {
        forward_heads_tiled(r, m, q, k, first);
        if (r->stopped)
            return;
    }
    for (int h = 0; h < m->heads && !r->memo->tiled; h++) {
        int kvh = kv_head_of(m, h);
        const float *qh = q + (size_t)h * hd, *kh = k + (size_t)kvh * hd;
        const float *vh = r->v + (size_t)kvh * hd;
        float *scores = r->scores + h * nn, *weights = r->weights + h * nn;

        attn_mm_abt(scores, n, qh, D, kh, Dkv, n, n, hd);
        /* the finite check of the visible scores, while they are in cache (see seen_at) */
        for (int i = 0; i < n && !r->seen_nonfinite; i++) {
            int j0, j1;
            visible_cols(m, i, &j0, &j1);
            r->seen_nonfinite = attn_any_nonfinite(scores + (size_t)i * n + j0, (size_t)(j1 - j0));
        }
        /* scaled and masked are not kept: one head's masked stage lives in work. */
        mask_scores(r->work, scores, m);
        if ((m->causal || m->window > 0) && m->mask_mode == MASK_AFTER_SOFTMAX)
            attn_sumnorm_rows(weights, r->work, n, n); /* renormalise by the row sums */
        else if (m->causal && m->normalize == NORMALIZE_SOFTMAX)
            attn_softmax_causal_rows(weights, r->work, n); /* the future is -inf: skip it */
        else
            normalize_rows(weights, r->work, n, m->normalize);

        const float *dropped = weights;
        if (m->keep) {
            drop_weights(r->work, weights, m->keep + h * nn, nn, m);
            dropped = r->work;
        }
        /* This head's context goes straight into its column block of the concatenation. */
        attn_mm_ab(r->concat + (size_t)h * hd, D, dropped, n, vh, Dkv, NULL, n, hd, n);
        progress_report(r->progress, r->progress_base + h + 1, r->progress_total);
        if ((r->stopped = progress_stopped(r->progress)))
            return;
    }

    bool replaced = false;
    for (int h = 0; h < m->heads; h++)
        replaced |= m->head_mode[h] != HEAD_KEEP;
    if (replaced) /* what the replaced heads made, before it is gone */
        seen_at(r, r->concat, D, first, n);
    replace_heads(r, m);
    int E = m->out_dim;
    if (m->wo)
        attn_model_mm(m, &(struct attn_model_mm_params){.out = r->output + skip * E,
                                                        .in = r->concat + skip * D,
                                                        .member = ATTN_MEMBER(wo),
                                                        .bias = m->bo,
                                                        .rows = n - first,
                                                        .cols = E,
                                                        .k = D,
                                                        .panels = panels});
    else
        memcpy(r->output + skip * D, r->concat + skip * D, (size_t)(n - first) * D * sizeof(float));
    if (m->block)
        forward_block(r, m, first);
    struct attn_mat_view last =
        kept_view(r, m, m->block ? attn_stage_block_output(m) : STAGE_OUTPUT, 0);
    seen_at(r, last.data, last.stride, first, n);
    if (m->block && m->final_norm)
        seen_at(r, r->final, m->d_in, first, n);
    /* The rows kept were checked with the result they belong to: they need no second look when
       it had no bad value; a result that had one is read whole again. */
    if (r->seen_nonfinite || (first > 0 && r->nonfinite.found))
        find_nonfinite(r, m, r->nonfinite.found ? 0 : first);
    else
        r->nonfinite = (struct attn_nonfinite){.found = false};
}

bool attn_run_fits_but_n(const struct attn_run *r, const struct attn_model *m)
{
    struct attn_model same_n = *m;
    same_n.n = r->n;
    return attn_run_fits(r, &same_n);
}

/* *buf grown to count floats when it holds fewer (old, of them): the contents kept. */
static int grow(float **buf, size_t count, size_t old)
{
    if (!*buf || count <= old)
        return 0;
    float *p = realloc(*buf, count * sizeof(float));
    if (!p)
        return -1;
    *buf = p;
    return 0;
}

/* The row-wise buffers of r with their widths, for a run of r's widths. out: (20) */
static int row_buffers(float ***out, size_t *width, struct attn_run *r)
{
    float **bufs[] = {&r->q,       &r->k,       &r->v,          &r->qn,       &r->kn,
                      &r->qr,      &r->kr,      &r->latent,     &r->concat,   &r->output,
                      &r->res1,    &r->norm1,   &r->ffn_hidden, &r->ffn_gate, &r->ffn_up,
                      &r->ffn_act, &r->ffn_out, &r->res2,       &r->norm2,    &r->final};
    size_t D = (size_t)r->D, Dkv = (size_t)r->Dkv, d = (size_t)r->d_in, h = (size_t)r->hidden;
    size_t w[] = {
        D, Dkv, Dkv, D, Dkv, D, Dkv, (size_t)r->latent_dim, D, (size_t)r->out_dim, d, d, h,
        h, h,   h,   d, d,   d, d};
    int k = (int)(sizeof(bufs) / sizeof(bufs[0]));
    for (int i = 0; i < k; i++) {
        out[i] = bufs[i];
        width[i] = w[i];
    }
    return k;
}

int attn_run_reserve(struct attn_run *r, const struct attn_model *m, struct diag *err)
{
    if (m->n <= r->cap_n)
        return 0;
    /* room up to the next panel boundary: typing on at the end grows them once a panel */
    int cap = (m->n + PANEL - 1) / PANEL * PANEL;
    size_t n0 = (size_t)r->cap_n, n1 = (size_t)cap, hs = (size_t)r->heads;
    float **bufs[20];
    size_t width[20];
    int k = row_buffers(bufs, width, r);
    int rc = 0;
    for (int i = 0; i < k; i++)
        rc |= grow(bufs[i], n1 * width[i], n0 * width[i]);
    size_t E = (size_t)(r->D > r->out_dim ? r->D : r->out_dim);
    struct attn_memo *memo = r->memo;
    rc |= grow(&r->scores, hs * n1 * n1, hs * n0 * n0);
    rc |= grow(&r->weights, hs * n1 * n1, hs * n0 * n0);
    rc |= grow(&r->work, work_floats(n1), work_floats(n0));
    rc |= grow(&memo->data, hs * n1 * n1, hs * n0 * n0);
    rc |= grow(&memo->vnorm, hs * n1 + 1, hs * n0 + 1);
    rc |= grow(&memo->vw, n1 * E + 1, n0 * E + 1);
    if (rc)
        return attn_diag_set(err, "", "out of memory for the attention stages");
    r->cap_n = cap;
    return 0;
}

void attn_run_relayout(struct attn_run *r, const struct attn_model *m, int keep)
{
    int n0 = r->n, n1 = m->n, heads = r->heads;
    float *sq[2] = {r->scores, r->weights};
    for (int b = 0; b < 2; b++) {
        float *a = sq[b];
        int both = n0 < n1 ? n0 : n1;
        for (int t = 0; t < heads * keep; t++) {
            /* growing: the last row first (every row moves up); shrinking: the first first */
            int u = n1 > n0 ? heads * keep - 1 - t : t;
            int h = u / keep, i = u % keep;
            float *y = a + ((size_t)h * n1 + i) * n1;
            const float *x = a + ((size_t)h * n0 + i) * n0;
            if (y != x)
                memmove(y, x, (size_t)both * sizeof(float));
            float future = 0.0f * y[0]; /* copy_square_rows' */
            for (int j = both; b == 1 && j < n1; j++)
                y[j] = future;
        }
    }
    r->n = m->n;
    r->work_slots = (int)(work_floats((size_t)n1) / (PANEL * (size_t)(n1 ? n1 : 1)));
    r->memo->stage = -1;
    memset(r->memo->filled, 0, (size_t)heads);
}

/* Row i of a (heads, n, n) stage, i < rows, copied from a run of another n: the columns both
 * have, and past the old row's end what the causal softmax writes into a row's future. */
static void copy_square_rows(float *to, int n, const float *from, int old_n, int heads, int rows,
                             bool weights)
{
    int both = n < old_n ? n : old_n;
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < rows; i++) {
            float *y = to + ((size_t)h * n + i) * n;
            const float *x = from + ((size_t)h * old_n + i) * old_n;
            memcpy(y, x, (size_t)both * sizeof(float));
            /* attn_softmax_row_prefix's future: 0 * (1 / sum), which is 0 * x[0] (NaN when the
               row is, 0 else); the scores' future is computed when shown */
            float future = 0.0f * x[0];
            for (int j = both; weights && j < n; j++)
                y[j] = future;
        }
}

void attn_run_copy_rows(struct attn_run *to, const struct attn_run *from, int rows)
{
    if (rows <= 0)
        return;
    size_t k = (size_t)rows;
    struct {
        float *dst;
        const float *src;
        size_t width;
    } rowwise[] = {
        {to->q, from->q, (size_t)to->D},
        {to->k, from->k, (size_t)to->Dkv},
        {to->v, from->v, (size_t)to->Dkv},
        {to->qn, from->qn, (size_t)to->D},
        {to->kn, from->kn, (size_t)to->Dkv},
        {to->qr, from->qr, (size_t)to->D},
        {to->kr, from->kr, (size_t)to->Dkv},
        {to->latent, from->latent, (size_t)to->latent_dim},
        {to->concat, from->concat, (size_t)to->D},
        {to->output, from->output, (size_t)to->out_dim},
        {to->res1, from->res1, (size_t)to->d_in},
        {to->norm1, from->norm1, (size_t)to->d_in},
        {to->ffn_hidden, from->ffn_hidden, (size_t)to->hidden},
        {to->ffn_gate, from->ffn_gate, (size_t)to->hidden},
        {to->ffn_up, from->ffn_up, (size_t)to->hidden},
        {to->ffn_act, from->ffn_act, (size_t)to->hidden},
        {to->ffn_out, from->ffn_out, (size_t)to->d_in},
        {to->res2, from->res2, (size_t)to->d_in},
        {to->norm2, from->norm2, (size_t)to->d_in},
        {to->final, from->final, (size_t)to->d_in},
    };
    for (size_t i = 0; i < sizeof(rowwise) / sizeof(rowwise[0]); i++)
        if (rowwise[i].dst && rowwise[i].src && rowwise[i].dst != rowwise[i].src)
            memcpy(rowwise[i].dst, rowwise[i].src, k * rowwise[i].width * sizeof(float));
    to->nonfinite = from->nonfinite; /* found: the next pass reads every row again */
    if (to->scores == from->scores)
        return;
    copy_square_rows(to->scores, to->n, from->scores, from->n, to->heads, rows, false);
    copy_square_rows(to->weights, to->n, from->weights, from->n, to->heads, rows, true);
}

/* A kept stage, in place; s after same_as, not derived. */
static struct attn_mat_view kept_view(const struct attn_run *r, const struct attn_model *m,
                                      enum attn_stage s, int h)
{
    int n = m->n, D = m->D, Dkv = m->Dkv, hd = m->head_dim, d = m->d_in, E = m->out_dim;
    size_t nn = (size_t)n * (size_t)n, col = (size_t)h * (size_t)hd;
    size_t kvcol = (size_t)kv_head_of(m, h) * (size_t)hd;
    switch (s) {
    case STAGE_INPUTS:
        return (struct attn_mat_view){m->x, n, d, d};
    case STAGE_LATENT:
        return (struct attn_mat_view){r->latent, n, m->latent, m->latent};
    case STAGE_QUERIES:
        return (struct attn_mat_view){r->q + col, n, hd, D};
    case STAGE_KEYS:
        return (struct attn_mat_view){r->k + kvcol, n, hd, Dkv};
    case STAGE_VALUES:
        return (struct attn_mat_view){r->v + kvcol, n, hd, Dkv};
    case STAGE_QUERIES_NORMED:
        return (struct attn_mat_view){r->qn + col, n, hd, D};
    case STAGE_KEYS_NORMED:
        return (struct attn_mat_view){r->kn + kvcol, n, hd, Dkv};
    case STAGE_QUERIES_ROTATED:
        return (struct attn_mat_view){r->qr + col, n, hd, D};
    case STAGE_KEYS_ROTATED:
        return (struct attn_mat_view){r->kr + kvcol, n, hd, Dkv};
    case STAGE_SCORES:
        fill_future_scores(r, m, h);
        return (struct attn_mat_view){r->scores + h * nn, n, n, n};
    case STAGE_WEIGHTS:
        return (struct attn_mat_view){r->weights + h * nn, n, n, n};
    case STAGE_CONTEXT:
        return (struct attn_mat_view){r->concat + col, n, hd, D};
    case STAGE_CONCAT:
        return (struct attn_mat_view){r->concat, n, D, D};
    case STAGE_RESIDUAL1:
        return (struct attn_mat_view){r->res1, n, d, d};
    case STAGE_NORM1:
        return (struct attn_mat_view){r->norm1, n, d, d};
    case STAGE_FFN_HIDDEN:
        return (struct attn_mat_view){r->ffn_hidden, n, m->hidden, m->hidden};
    case STAGE_FFN_GATE:
        return (struct attn_mat_view){r->ffn_gate, n, m->hidden, m->hidden};
    case STAGE_FFN_UP:
        return (struct attn_mat_view){r->ffn_up, n, m->hidden, m->hidden};
    case STAGE_FFN_ACTIVATED:
        return (struct attn_mat_view){r->ffn_act, n, m->hidden, m->hidden};
    case STAGE_FFN_OUT:
        return (struct attn_mat_view){r->ffn_out, n, d, d};
    case STAGE_RESIDUAL2:
        return (struct attn_mat_view){r->res2, n, d, d};
    case STAGE_NORM2:
        return (struct attn_mat_view){r->norm2, n, d, d};
    case STAGE_FINAL_NORM:
        return (struct attn_mat_view){r->final, n, d, d};
    case STAGE_SCALED: /* derived: attn_view never asks for these here */
    case STAGE_MASKED:
    case STAGE_DROPOUT:
    case STAGE_WEIGHTED_NORM:
    case STAGE_OUTPUT:
    case STAGE_COUNT:
        break;
    }
    return (struct attn_mat_view){r->output, n, E, E};
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
        return kept_view(r, m, same, h);
    /* The memo is keyed by the stage whose numbers these are: masked without a mask is
     * scaled's entry. */
    struct attn_memo *memo = r->memo;
    size_t nn = (size_t)m->n * (size_t)m->n;
    if (memo->stage != (int)same) {
        memset(memo->filled, 0, (size_t)m->heads);
        memo->stage = (int)same;
    }
    float *out = memo->data + (size_t)h * nn;
    if (!memo->filled[h]) {
        derive(out, r, m, same, h);
        memo->filled[h] = 1;
    }
    return (struct attn_mat_view){out, m->n, m->n, m->n};
}

struct attn_mat_view attn_view_buf(float *buf, size_t cap, const struct attn_run *r,
                                   const struct attn_model *m, enum attn_stage s, int h)
{
    enum attn_stage same = same_as(m, s);
    if (!attn_stage_is_derived(m, same))
        return kept_view(r, m, same, h);
    if (cap < (size_t)m->n * (size_t)m->n)
        attn_fatal_abort("attn_view_buf: %zu floats for a %d x %d stage", cap, m->n, m->n);
    derive(buf, r, m, same, h);
    return (struct attn_mat_view){buf, m->n, m->n, m->n};
}

bool attn_stage_is_off(const struct attn_model *m, enum attn_stage s)
{
    return (s == STAGE_SCALED && m->scale == SCALE_NONE) ||
           (s == STAGE_MASKED && !m->causal && m->window <= 0) ||
           (s == STAGE_DROPOUT && !m->keep) || (s == STAGE_OUTPUT && !m->wo);
}

int attn_stage_order(enum attn_stage *out, const struct attn_model *m)
{
    int k = 0;
    out[k++] = STAGE_INPUTS;
    if (m->block && m->order == BLOCK_PRE)
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
    for (int s = STAGE_SCORES; s <= STAGE_OUTPUT; s++)
        out[k++] = (enum attn_stage)s;
    if (m->block) {
        out[k++] = STAGE_RESIDUAL1;
        if (m->order == BLOCK_POST)
            out[k++] = STAGE_NORM1;
        else
            out[k++] = STAGE_NORM2;
        if (m->activation == ACT_SWIGLU) {
            out[k++] = STAGE_FFN_GATE;
            out[k++] = STAGE_FFN_UP;
        } else {
            out[k++] = STAGE_FFN_HIDDEN;
        }
        out[k++] = STAGE_FFN_ACTIVATED;
        out[k++] = STAGE_FFN_OUT;
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
    static float qk_norm_flag; /* only whether qnw is set is read */
    struct attn_model m = {
        .latent = s->attn.kv_latent,
        .rope = s->pos.kind == POS_ROPE,
        .qnw = s->attn.qk_norm ? &qk_norm_flag : NULL,
        .block = s->block.on,
        .order = s->block.order,
        .activation = s->block.activation,
        .final_norm = s->block.on && s->block.final_norm && layer == s->layers - 1,
    };
    return attn_stage_present(&m, st);
}

int attn_scene_stage_cols(const struct attn_scene *s, enum attn_stage st)
{
    if (attn_stage_is_square(st))
        return s->n_tokens;
    switch (st) {
    case STAGE_LATENT:
        return s->attn.kv_latent;
    case STAGE_QUERIES:
    case STAGE_KEYS:
    case STAGE_VALUES:
    case STAGE_QUERIES_ROTATED:
    case STAGE_KEYS_ROTATED:
    case STAGE_QUERIES_NORMED:
    case STAGE_KEYS_NORMED:
    case STAGE_CONTEXT:
        return attn_scene_head_dim(s);
    case STAGE_CONCAT:
        return attn_scene_concat_dim(s);
    case STAGE_OUTPUT:
        return attn_scene_out_dim(s);
    case STAGE_FFN_HIDDEN:
    case STAGE_FFN_GATE:
    case STAGE_FFN_UP:
    case STAGE_FFN_ACTIVATED:
        return attn_scene_ffn_hidden(s);
    default:
        return attn_scene_d_in(s);
    }
}

enum attn_stage attn_stage_block_output(const struct attn_model *m)
{
    if (!m->block)
        return STAGE_OUTPUT;
    return m->order == BLOCK_POST ? STAGE_NORM2 : STAGE_RESIDUAL2;
}

enum attn_stage attn_stage_last(const struct attn_model *m)
{
    enum attn_stage order[STAGE_COUNT];
    return order[attn_stage_order(order, m) - 1];
}

int attn_compute(struct attn_model *m, struct attn_run *r, const struct attn_scene *s,
                 struct diag *err)
{
    struct attn_model fresh;
    if (attn_model_resolve(&fresh, s, err))
        return -1;
    /* A new shape gets new buffers first, so a failure leaves the old result intact. */
    struct attn_run next = *r;
    if (!attn_run_fits(r, &fresh)) {
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
