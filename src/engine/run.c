/* run: the buffers of struct attn_run, allocated for a shape and reused by every forward pass
 * of it; grown, moved and copied row by row for sentence edits (attention.h). */
#include "engine/run.h"

#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "engine/pool.h"
#include "engine/scores.h"

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
