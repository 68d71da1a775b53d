/* run: the buffers of struct attn_run, allocated for a shape and reused by every forward pass
 * of it; grown, moved and copied row by row for sentence edits (attention.h). */
#include "engine/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "engine/pool.h"
#include "engine/scores.h"

/* Every buffer of a run, for allocation, freeing, growing and copying in one place, in the order
 * they are allocated: X(name, shared, width, needed, lent).
 * - shared: 1 when the layers of a lean net share it (attn_run_init_sharing); 0 when each layer
 *   keeps its own, as what is read after the layer is computed: what it hands on (output, res2,
 *   norm2, final) and the concatenated heads that patching takes from a clean run;
 * - width: the floats a token's row holds (the stage's columns, every head side by side), of the
 *   shape sh (struct run_shape); RUN_SQUARE for the (heads, n, n) stages, RUN_WORK for the
 *   forward pass's scratch, which are not row by row;
 * - needed: whether the scene has it (every run has the attention stages);
 * - lent: 1 when it belongs to a layer's stage set (a net in stream mode, net.h's stage_budget:
 *   only a few layers hold one at a time), 2 when it does unless it is what the layer hands on
 *   (attn_stage_block_output), 0 when every layer keeps its own: the keys and values the row path
 *   of a sentence edit reads (a KV cache), and what the next layer and the predictions read. */
#define RUN_BUFFERS(X)                                                                             \
    X(q, 1, sh.D, true, 1)                                                                         \
    X(k, 1, sh.Dkv, true, 0)                                                                       \
    X(v, 1, sh.Dkv, true, 0)                                                                       \
    X(qn, 1, sh.D, sh.qk, 1)                                                                       \
    X(kn, 1, sh.Dkv, sh.qk, 0)                                                                     \
    X(qr, 1, sh.D, sh.rope, 1)                                                                     \
    X(kr, 1, sh.Dkv, sh.rope, 0)                                                                   \
    X(latent, 1, sh.latent, sh.latent > 0, 0)                                                      \
    X(scores, 1, RUN_SQUARE, true, 1)                                                              \
    X(weights, 1, RUN_SQUARE, true, 1)                                                             \
    X(work, 1, RUN_WORK, true, 1)                                                                  \
    X(concat, 0, sh.D, true, 1)                                                                    \
    X(output, 0, sh.E, true, 2)                                                                    \
    X(res1, 1, sh.d, sh.block, 1)                                                                  \
    X(norm1, 1, sh.d, sh.block, 1)                                                                 \
    X(ffn_hidden, 1, sh.h, sh.block && !sh.gated, 1)                                               \
    X(ffn_gate, 1, sh.h, sh.gated &&sh.ne == 0, 1)                                                 \
    X(ffn_up, 1, sh.h, sh.gated &&sh.ne == 0, 1)                                                   \
    X(ffn_act, 1, sh.h, sh.block &&sh.ne == 0, 1)                                                  \
    X(ffn_out, 1, sh.d, sh.block, 1)                                                               \
    X(out_normed, 1, sh.d, sh.post, 1)                                                             \
    X(router, 1, sh.ne, sh.ne > 0, 1)                                                              \
    X(routed, 1, sh.ne, sh.ne > 0, 1)                                                              \
    X(moe_in, 1, sh.d, sh.ne > 0, 1)                                                               \
    X(moe_mid, 1, sh.hm * 3, sh.ne > 0, 1)                                                         \
    X(moe_y, 1, sh.d, sh.ne > 0, 1)                                                                \
    X(moe_take, 1, 1, sh.ne > 0, 1)                                                                \
    X(ffn_out_normed, 1, sh.d, sh.post, 1)                                                         \
    X(res2, 0, sh.d, sh.block, 2)                                                                  \
    X(norm2, 0, sh.d, sh.block, 2)                                                                 \
    X(final, 0, sh.d, sh.final, 0)

enum { RUN_SQUARE = -1, RUN_WORK = -2 };

/* The sizes RUN_BUFFERS' widths and needs read: a model's, or a run's as it was sized. */
struct run_shape {
    long D, Dkv, d, h, latent, E; /* h: the FFN's hidden width, 0 without a block */
    long ne, hm; /* a mixture's experts, and the wider of an expert and the shared expert */
    bool qk, rope, block, gated, final, post; /* post: a sandwich block's post-norms */
};

static struct run_shape shape_of_model(const struct attn_model *m)
{
    return (struct run_shape){.D = m->D,
                              .Dkv = m->Dkv,
                              .d = m->d_in,
                              .h = m->block ? m->hidden : 0,
                              .latent = m->latent,
                              .E = m->out_dim,
                              .qk = m->qnw != NULL,
                              .rope = m->rope,
                              .block = m->block,
                              .gated = m->block && attn_activation_gated(m->activation),
                              .final = m->final_norm,
                              .post = m->pn1w != NULL,
                              .ne = m->block ? m->n_experts : 0,
                              .hm = m->block && m->shared_hidden > m->hidden ? m->shared_hidden
                                                                             : m->hidden};
}

/* A run's widths (what a row holds); which buffers it has are those that are not NULL. */
static struct run_shape shape_of_run(const struct attn_run *r)
{
    return (struct run_shape){.D = r->D,
                              .Dkv = r->Dkv,
                              .d = r->d_in,
                              .h = r->hidden,
                              .latent = r->latent_dim,
                              .E = r->out_dim,
                              .ne = r->n_experts,
                              .hm = r->moe_hidden};
}

static size_t work_floats(size_t n);

/* The rows a run of m is sized by: its tokens, or a cross-attention layer's encoder tokens when
 * they are more (its K and V have n_kv rows, its square stages n_kv columns: a (n, n_kv) stage
 * fits the (rows, rows) room at stride n_kv). */
static size_t run_rows(const struct attn_model *m)
{
    return (size_t)(m->n_kv > m->n ? m->n_kv : m->n);
}

/* The floats a buffer of width (RUN_BUFFERS) holds for n tokens and heads heads. */
static size_t buffer_floats(long width, size_t n, size_t heads)
{
    if (width == RUN_SQUARE)
        return heads * n * n;
    if (width == RUN_WORK)
        return work_floats(n);
    return n * (size_t)width;
}

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
#define X(name, shared, width, needed, lent)                                                       \
    if (!(shared && r->borrows)) /* else another run's: it frees it */                             \
        free(r->name);
    RUN_BUFFERS(X)
#undef X
    memo_free(r->memo);
    memset(r, 0, sizeof(*r));
}

void attn_run_zero(struct attn_run *r)
{
    if (!r->unzeroed)
        return;
    struct run_shape sh = shape_of_run(r);
    size_t n = (size_t)r->cap_n, hs = (size_t)r->heads;
#define X(name, shared, width, needed, lent)                                                       \
    if (r->name && !(shared && r->borrows))                                                        \
        memset(r->name, 0, buffer_floats(width, n, hs) * sizeof(float));
    RUN_BUFFERS(X)
#undef X
    r->unzeroed = false;
}

/* True when r's buffers are sized for m's shape, the final norm aside. */
static bool same_shape(const struct attn_run *r, const struct attn_model *m)
{
    struct run_shape sh = shape_of_model(m);
    return r->k && r->n == m->n && r->n_kv == m->n_kv && r->d_in == m->d_in &&
           r->heads == m->heads && r->head_dim == m->head_dim && r->D == m->D && r->Dkv == m->Dkv &&
           r->latent_dim == m->latent && r->rope == m->rope && r->hidden == sh.h &&
           r->out_dim == m->out_dim && r->qk_norm == sh.qk && r->gated == sh.gated &&
           r->post_norms == sh.post && r->n_experts == sh.ne && r->moe_hidden == sh.hm;
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

static int run_init(struct attn_run *r, const struct attn_model *m, const struct attn_run *owner,
                    bool stages, struct diag *err);

int attn_run_init(struct attn_run *r, const struct attn_model *m, struct diag *err)
{
    return attn_run_init_sharing(r, m, NULL, err);
}

/* Which buffers alloc_buffers makes: every one, those every layer keeps, those of a stage set. */
enum lend_which { LEND_ALL, LEND_KEPT, LEND_STAGES };

/* Buffer `name`, of lent kind `lent` (RUN_BUFFERS), belongs to a stage set of a run for m. */
static bool lent_buffer(const char *name, int lent, const struct attn_model *m)
{
    /* the buffer of what the layer hands on (attn_stage_block_output) */
    enum attn_stage out = attn_stage_block_output(m);
    const char *handed = out == STAGE_RESIDUAL1   ? "res1"
                         : out == STAGE_NORM1     ? "norm1"
                         : out == STAGE_RESIDUAL2 ? "res2"
                         : out == STAGE_NORM2     ? "norm2"
                                                  : "output";
    return lent != 0 && strcmp(name, handed) != 0;
}

/* r's missing buffers of those `which` names, for m's shape and n tokens, unzeroed. Returns 0, or
 * -1 on out-of-memory (what it made stays r's). */
static int alloc_buffers(struct attn_run *r, const struct attn_model *m, size_t n,
                         enum lend_which which)
{
    struct run_shape sh = shape_of_model(m);
#define X(name, shared, width, needed, lent)                                                       \
    if ((needed) && !r->name &&                                                                    \
        (which == LEND_ALL || (which == LEND_STAGES) == lent_buffer(#name, lent, m)) &&            \
        !(r->name = attn_alloc_stage_unzeroed(buffer_floats(width, n, (size_t)m->heads))))         \
        return -1;
    RUN_BUFFERS(X)
#undef X
    return 0;
}

int attn_run_init_sharing(struct attn_run *r, const struct attn_model *m,
                          const struct attn_run *owner, struct diag *err)
{
    return run_init(r, m, owner, true, err);
}

int attn_run_init_stream(struct attn_run *r, const struct attn_model *m, bool stages,
                         struct diag *err)
{
    return run_init(r, m, NULL, stages, err);
}

static int run_init(struct attn_run *r, const struct attn_model *m, const struct attn_run *owner,
                    bool stages, struct diag *err)
{
    if (!owner && attn_run_fits(r, m)) { /* same shape: reuse every buffer */
        if (!stages || r->scores)
            return 0;
        return attn_run_alloc_stages(r, m, err);
    }
    attn_run_free(r);
    /* a decoder's self-attention hands on residual1, which lean layers would share */
    bool share = owner && !owner->borrows && !m->no_ffn && same_shape(owner, m);
    /* Stream mode (a run without its stages, a large model shown in the explorer): room up to
       the next panel boundary at once, as attn_run_reserve gives, so that a word typed at the
       end moves rows instead of copying every buffer into a larger one. */
    size_t rows = run_rows(m);
    size_t n = stages ? rows : (rows + PANEL - 1) / PANEL * PANEL;
    size_t D = (size_t)m->D, hnn = (size_t)m->heads * n * n;
    struct run_shape sh = shape_of_model(m);
    size_t E = (size_t)m->out_dim;
    if (share) { /* owner has the same shape: the same buffers are needed */
#define X(name, shared, width, needed, lent)                                                       \
    if (shared)                                                                                    \
        r->name = owner->name;
        RUN_BUFFERS(X)
#undef X
        r->borrows = true;
    }
    if (alloc_buffers(r, m, n, stages ? LEND_ALL : LEND_KEPT) != 0)
        goto oom;
    r->unzeroed = true;
    struct attn_memo *memo = calloc(1, sizeof(*memo));
    r->memo = memo;
    if (!memo || !(memo->filled = calloc((size_t)m->heads + 1, 1)) ||
        /* written before read (a head's derived matrix whole, one head's v W_O): unzeroed, so
           a memo never shown costs no pages, wherever the allocator takes it from */
        !(memo->data = attn_alloc_stage_unzeroed(hnn)) ||
        !(memo->vnorm_filled = calloc((size_t)m->heads + 1, 1)) ||
        !(memo->vnorm = calloc((size_t)m->heads * n + 1, sizeof(float))) ||
        !(memo->vw = attn_alloc_stage_unzeroed(n * (D > E ? D : E) + 1)) ||
        !(memo->future_filled = calloc((size_t)m->heads + 1, 1)))
        goto oom;
    memo->stage = -1;
    r->n = m->n;
    r->n_kv = m->n_kv;
    r->cap_n = (int)n;
    r->d_in = m->d_in;
    r->heads = m->heads;
    r->head_dim = m->head_dim;
    r->D = m->D;
    r->Dkv = m->Dkv;
    r->latent_dim = m->latent;
    r->rope = m->rope;
    r->hidden = (int)sh.h;
    r->final_norm = m->final_norm;
    r->out_dim = m->out_dim;
    r->qk_norm = sh.qk;
    r->gated = sh.gated;
    r->post_norms = sh.post;
    r->n_experts = (int)sh.ne;
    r->moe_hidden = (int)sh.hm;
    r->work_slots = (int)(work_floats(n) / (PANEL * (n ? n : 1)));
    return 0;
oom:
    attn_run_free(r);
    return attn_diag_set(err, "", "out of memory for the attention stages");
}

size_t attn_run_stage_bytes(const struct attn_model *m)
{
    size_t n = run_rows(m), floats = 0;
    struct run_shape sh = shape_of_model(m);
#define X(name, shared, width, needed, lent)                                                       \
    if ((needed) && lent_buffer(#name, lent, m))                                                   \
        floats += buffer_floats(width, n, (size_t)m->heads);
    RUN_BUFFERS(X)
#undef X
    return floats * sizeof(float);
}

bool attn_run_holds_stages(const struct attn_run *r)
{
    return r->scores != NULL;
}

/* What the memo held was of the stages r held before; its derived stage (heads x n x n, 48 MB
 * at 1,016 tokens of 12 heads) is freed with the set's pages and made again, unzeroed, so that
 * a memo not shown since costs no pages. */
static void memo_forget(struct attn_run *r)
{
    struct attn_memo *memo = r->memo;
    if (!memo)
        return;
    memo->stage = -1;
    memset(memo->filled, 0, (size_t)r->heads);
    memset(memo->vnorm_filled, 0, (size_t)r->heads);
    memset(memo->future_filled, 0, (size_t)r->heads);
    size_t hnn = (size_t)r->heads * (size_t)r->cap_n * (size_t)r->cap_n;
    float *fresh = attn_alloc_stage_unzeroed(hnn);
    if (fresh) { /* else the old pages stay: only memory is lost */
        free(memo->data);
        memo->data = fresh;
    }
}

int attn_run_alloc_stages(struct attn_run *r, const struct attn_model *m, struct diag *err)
{
    if (r->scores)
        return 0;
    if (alloc_buffers(r, m, (size_t)r->cap_n, LEND_STAGES) != 0) {
        attn_run_drop_stages(r, m);
        return attn_diag_set(err, "", "out of memory for the attention stages");
    }
    /* Not zeroed: a set is lent to a layer for a pass that writes every cell it or a view later
       reads (the scores' future is computed when shown, the weights' is written by the
       softmax), and rows a pass does not write (a sentence edit's, in a set just taken) leave
       the layer unheld. With 141 MB of fresh pages zeroed at 1,016 tokens, the first layer's
       frame took 150 to 430 ms; without, 148 to 183. test_stream holds every view of a set to
       a zeroed full net's bits. The memo was forgotten when the run gave its last set away. */
    return 0;
}

void attn_run_move_stages(struct attn_run *to, struct attn_run *from, const struct attn_model *m)
{
#define X(name, shared, width, needed, lent)                                                       \
    if (lent_buffer(#name, lent, m)) {                                                             \
        free(to->name);                                                                            \
        to->name = from->name;                                                                     \
        from->name = NULL;                                                                         \
    }
    RUN_BUFFERS(X)
#undef X
    memo_forget(to);
    memo_forget(from);
}

void attn_run_drop_stages(struct attn_run *r, const struct attn_model *m)
{
#define X(name, shared, width, needed, lent)                                                       \
    if (lent_buffer(#name, lent, m)) {                                                             \
        free(r->name);                                                                             \
        r->name = NULL;                                                                            \
    }
    RUN_BUFFERS(X)
#undef X
    memo_forget(r);
}

void attn_run_kept_from(struct attn_run *r, const struct attn_run *scratch,
                        const struct attn_model *m)
{
#define X(name, shared, width, needed, lent)                                                       \
    if (!lent_buffer(#name, lent, m))                                                              \
        r->name = scratch->name;
    RUN_BUFFERS(X)
#undef X
}

bool attn_run_fits_but_n(const struct attn_run *r, const struct attn_model *m)
{
    struct attn_model same_n = *m;
    same_n.n = r->n;
    if (!m->cross)
        same_n.n_kv = r->n_kv;
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

/* *buf, scratch whose contents are not kept, made count floats when it holds fewer (old). */
static int regrow_scratch(float **buf, size_t count, size_t old)
{
    if (!*buf || count <= old)
        return 0;
    float *p = attn_alloc_stage_unzeroed(count);
    if (!p)
        return -1;
    free(*buf);
    *buf = p;
    return 0;
}

int attn_run_reserve(struct attn_run *r, const struct attn_model *m, struct diag *err)
{
    if (m->n <= r->cap_n)
        return 0;
    /* room up to the next panel boundary: typing on at the end grows them once a panel */
    int cap = (m->n + PANEL - 1) / PANEL * PANEL;
    size_t n0 = (size_t)r->cap_n, n1 = (size_t)cap, hs = (size_t)r->heads;
    struct run_shape sh = shape_of_run(r);
    int rc = 0;
#define X(name, shared, width, needed, lent)                                                       \
    rc |= grow(&r->name, buffer_floats(width, n1, hs), buffer_floats(width, n0, hs));
    RUN_BUFFERS(X)
#undef X
    size_t E = (size_t)(r->D > r->out_dim ? r->D : r->out_dim);
    struct attn_memo *memo = r->memo;
    /* the memo's scratch is made again, not copied: a copy would touch (make resident) the
       pages of a memo never shown, 50 MB a layer at 1,016 tokens */
    rc |= regrow_scratch(&memo->data, hs * n1 * n1, hs * n0 * n0);
    rc |= grow(&memo->vnorm, hs * n1 + 1, hs * n0 + 1);
    rc |= regrow_scratch(&memo->vw, n1 * E + 1, n0 * E + 1);
    if (rc)
        return attn_diag_set(err, "", "out of memory for the attention stages");
    r->cap_n = cap;
    return 0;
}

void attn_run_relayout(struct attn_run *r, const struct attn_model *m, int keep)
{
    int n0 = r->n, n1 = m->n, heads = r->heads;
    float *sq[2] = {r->scores, r->weights};
    /* Growing, only what a row holds is moved (at 1,024 tokens every layer's two stages are
       100 MB): a causal row's weights up to its query (the rest is the softmax's future,
       written), its scores up to its panel's end (the rest is computed when shown, view.c): a
       token appended to 1,016 took 78 ms instead of 96. Shrinking, whole rows: the part and a
       fill measured slower there (60 ms against 44). */
    int panel = r->memo->tiled && n1 > n0 ? r->memo->panel : 0;
    for (int b = 0; b < 2 && sq[b]; b++) { /* a stream net's layer may hold no stages */
        float *a = sq[b];
        int both = n0 < n1 ? n0 : n1;
        for (int t = 0; t < heads * keep; t++) {
            /* growing: the last row first (every row moves up); shrinking: the first first */
            int u = n1 > n0 ? heads * keep - 1 - t : t;
            int h = u / keep, i = u % keep;
            float *y = a + ((size_t)h * n1 + i) * n1;
            const float *x = a + ((size_t)h * n0 + i) * n0;
            int held = !panel ? both : b == 1 ? i + 1 : (i / panel + 1) * panel;
            held = held < both ? held : both;
            if (y != x)
                memmove(y, x, (size_t)held * sizeof(float));
            float future = 0.0f * y[0]; /* copy_square_rows' */
            int from = panel ? held : both;
            if (b == 0 || from >= n1)
                continue;
            if (future == 0.0f && !signbit(future)) /* +0: the bits memset writes */
                memset(y + from, 0, (size_t)(n1 - from) * sizeof(float));
            else
                for (int j = from; j < n1; j++)
                    y[j] = future;
        }
    }
    r->n = m->n;
    r->n_kv = m->cross ? m->n_kv : m->n;
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
    attn_run_zero(to); /* the rows kept go into zeroed buffers, as a fresh pass's would */
    size_t k = (size_t)rows;
    struct run_shape sh = shape_of_run(to);
#define X(name, shared, width, needed, lent)                                                       \
    if ((width) >= 0 && to->name && from->name && to->name != from->name)                          \
        memcpy(to->name, from->name, k *(size_t)(width) * sizeof(float));
    RUN_BUFFERS(X)
#undef X
    to->nonfinite = from->nonfinite; /* found: the next pass reads every row again */
    if (to->scores == from->scores || !to->scores || !from->scores)
        return;
    copy_square_rows(to->scores, to->n, from->scores, from->n, to->heads, rows, false);
    copy_square_rows(to->weights, to->n, from->weights, from->n, to->heads, rows, true);
}
