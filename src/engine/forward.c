/* forward: the forward pass of a layer, every kept stage of every head, the causal heads panel by
 * panel; its finite check; attn_compute (attention.h). */
#include "engine/attention.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/kernels.h"
#include "engine/norm.h"
#include "engine/pool.h"
#include "engine/run.h"
#include "engine/scores.h"
#include "engine/vecmath.h"
#include "engine/view.h"

/* out (rows, width) = in W + b, W m's member (wq, wk or wv), or in itself repeated once per head
 * when there is no projection; rows first .. rows - 1 (rows: n, or a cross-attention's n_kv for
 * K and V). few: the near path's rows, a matrix-vector product each. */
static void project(float *out, int width, const struct attn_model *m, const float *in, int rows,
                    size_t member, const float *b, int first, bool few)
{
    if (m->project) {
        attn_model_mm(m, &(struct attn_model_mm_params){.out = out + (size_t)first * width,
                                                        .in = in + (size_t)first * m->d_in,
                                                        .member = member,
                                                        .bias = b,
                                                        .rows = rows - first,
                                                        .cols = width,
                                                        .k = m->d_in,
                                                        .panels = attn_row_panels(m),
                                                        .few = few});
        return;
    }
    for (int h = 0; h < width / m->d_in; h++)
        for (int i = first; i < rows; i++)
            memcpy(out + (size_t)i * width + (size_t)h * m->d_in, in + (size_t)i * m->d_in,
                   (size_t)m->d_in * sizeof(float));
}

/* RoPE: every head of x (n, width) rotated by its token's angles into out, over its first
 * rope_dims (the rest copied: partial rotary). adjacent pairs (2i, 2i+1) as complex numbers;
 * halves pairs (i, i + rope_dims/2) as rotate_half does. */
static void rotate(float *out, const float *x, int width, const struct attn_model *m, int first)
{
    int hd = m->head_dim, rd = m->rope_dims, half = rd / 2;
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
            if (rd < hd)
                memcpy(o + rd, in + rd, (size_t)(hd - rd) * sizeof(float));
        }
    }
}

/* Rows first .. n - 1 of in (n, d). */
static void normalize(float *out, const float *in, const struct attn_model *m, const float *w,
                      const float *b, int first)
{
    size_t skip = (size_t)first * (size_t)m->d_in;
    attn_norm_rows(out + skip, in + skip, m->n - first, m, w, b);
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

/* One row's routing: routed (E) = the softmax of the router's logits (E) at the top_k experts
 * (norm_topk: renormalised to sum to 1), 0 at the others; as transformers routes (softmax in
 * float32, torch.topk's k largest, then their own sum divides them). */
static void route_row(float *routed, const float *logits, const struct attn_model *m)
{
    int E = m->n_experts, K = m->top_k, chosen[SCENE_MAX_EXPERTS];
    float p[SCENE_MAX_EXPERTS], w[SCENE_MAX_EXPERTS];
    attn_softmax_row_prefix(p, logits, E, E);
    for (int k = 0; k < K; k++) { /* the k-th largest; a tie to the lower index */
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int j = 0; j < k; j++)
                taken |= chosen[j] == e;
            if (!taken && (best < 0 || p[e] > p[best] || (isnan(p[e]) && !isnan(p[best]))))
                best = e;
        }
        chosen[k] = best;
        w[k] = p[best];
    }
    if (m->norm_topk) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++)
            sum += w[k];
        for (int k = 0; k < K; k++)
            w[k] = w[k] / sum;
    }
    memset(routed, 0, (size_t)E * sizeof(float));
    for (int k = 0; k < K; k++)
        routed[chosen[k]] = w[k];
}

/* One chunk of rows t0 .. t1 - 1 (relative to in, out, routed) through the experts it chose:
 * for each expert in order, its rows gathered, its SwiGLU, each row's output times its weight
 * added (transformers' index_add_ in expert order). A chosen weight of exactly 0 (a softmax that
 * underflowed) is skipped: it would add 0. */
static void experts_chunk(struct attn_run *r, const struct attn_model *m, const float *in,
                          float *out, const float *routed, int t0, int t1)
{
    int d = m->d_in, E = m->n_experts, h = m->hidden;
    int *take = (int *)(void *)r->moe_take; /* the rows an expert takes: n ints */
    for (int e = 0; e < E; e++) {
        int count = 0;
        for (int t = t0; t < t1; t++)
            if (routed[(size_t)t * E + e] != 0.0f)
                take[count++] = t;
        if (count == 0)
            continue;
        for (int i = 0; i < count; i++)
            memcpy(r->moe_in + (size_t)i * d, in + (size_t)take[i] * d, (size_t)d * sizeof(float));
        float *gate = r->moe_mid, *up = gate + (size_t)count * h, *act = up + (size_t)count * h;
        attn_model_matrix_mm(m, &m->experts[3 * e], gate, h, r->moe_in, d, count, h, d);
        attn_model_matrix_mm(m, &m->experts[3 * e + 1], up, h, r->moe_in, d, count, h, d);
        attn_gated(act, gate, up, (size_t)count * h, ACT_SWIGLU);
        attn_model_matrix_mm(m, &m->experts[3 * e + 2], r->moe_y, d, act, h, count, d, h);
        for (int i = 0; i < count; i++) {
            int t = take[i];
            float w = routed[(size_t)t * E + e], *o = out + (size_t)t * d;
            const float *y = r->moe_y + (size_t)i * d;
            for (int j = 0; j < d; j++)
                o[j] = o[j] + y[j] * w;
        }
    }
}

/* A mixture of experts in place of the FFN, rows first .. n - 1 of in (the FFN's input): the
 * router, each token's experts, and ffn_out = the chosen experts' outputs times their weights,
 * plus Qwen2-MoE's gated shared expert. An expert no row chose is never read. The experts take
 * the rows in the causal panels' chunks (of absolute rows): a panel an edit recomputes gathers
 * the rows a fresh computation gathers, so its products are the same calls, bit for bit. */
static void forward_experts(struct attn_run *r, const struct attn_model *m, const float *in,
                            int first, bool panels, bool few)
{
    int rows = m->n - first, d = m->d_in, E = m->n_experts;
    float *logits = r->router + (size_t)first * E, *routed = r->routed + (size_t)first * E;
    float *out = r->ffn_out + (size_t)first * d;
#define MM(...)                                                                                    \
    attn_model_mm(m, &(struct attn_model_mm_params){                                               \
                         .rows = rows, .panels = panels, .few = few, __VA_ARGS__})
    MM(.out = logits, .in = in, .member = ATTN_MEMBER(wr), .cols = E, .k = d);
    for (int t = 0; t < rows; t++)
        route_row(routed + (size_t)t * E, logits + (size_t)t * E, m);
    memset(out, 0, (size_t)rows * (size_t)d * sizeof(float));
    int panel = attn_row_panel();
    for (int t0 = 0; t0 < rows;) {
        int end = panels ? (first + t0) / panel * panel + panel - first : rows;
        int t1 = end < rows ? end : rows;
        experts_chunk(r, m, in, out, routed, t0, t1);
        t0 = t1;
    }
    if (m->wsg) { /* Qwen2-MoE: sigmoid(x . gate) * shared(x), added last */
        int hs = m->shared_hidden;
        float *gate = r->moe_mid, *up = gate + (size_t)rows * hs, *act = up + (size_t)rows * hs;
        MM(.out = gate, .in = in, .member = ATTN_MEMBER(wsg), .cols = hs, .k = d);
        MM(.out = up, .in = in, .member = ATTN_MEMBER(wsu), .cols = hs, .k = d);
        attn_gated(act, gate, up, (size_t)rows * hs, ACT_SWIGLU);
        MM(.out = r->moe_y, .in = act, .member = ATTN_MEMBER(wsd), .cols = d, .k = hs);
        MM(.out = r->moe_in, .in = in, .member = ATTN_MEMBER(wsgate), .cols = 1, .k = d);
        for (int t = 0; t < rows; t++) {
            float g = 1.0f / (1.0f + expf(-r->moe_in[t]));
            for (int j = 0; j < d; j++)
                out[(size_t)t * d + j] = out[(size_t)t * d + j] + g * r->moe_y[(size_t)t * d + j];
        }
    }
#undef MM
}

/* The FFN and the residuals around it, rows first .. n - 1 (few: as project's). */
static void forward_block(struct attn_run *r, const struct attn_model *m, int first, bool few)
{
    int rows = m->n - first, d = m->d_in, hid = m->hidden;
    size_t nd = (size_t)rows * d, skip = (size_t)first * d, skip_h = (size_t)first * hid;
    bool panels = attn_row_panels(m);
    const float *ffn_in;
    if (m->order == BLOCK_SANDWICH) { /* x + post_norm1(output), then norm2 of that */
        normalize(r->out_normed, r->output, m, m->pn1w, NULL, first);
        attn_elem_add(r->res1 + skip, m->x + skip, r->out_normed + skip, nd);
    } else if (m->order == BLOCK_POST_BRANCH) { /* x + norm1(attention's output) */
        normalize(r->norm1, r->output, m, m->n1w, m->n1b, first);
        attn_elem_add(r->res1 + skip, m->x + skip, r->norm1 + skip, nd);
    } else if (m->order != BLOCK_PARALLEL) {
        attn_elem_add(r->res1 + skip, m->x + skip, r->output + skip, nd);
    }
    if (m->no_ffn) { /* a decoder's self-attention: what it hands on is residual1 (or its norm) */
        if (m->order == BLOCK_POST)
            normalize(r->norm1, r->res1, m, m->n1w, m->n1b, first);
        return;
    }
    if (m->order == BLOCK_POST_BRANCH) {
        ffn_in = r->res1 + skip;
    } else if (m->order == BLOCK_PARALLEL) { /* the FFN reads the block's input, as attention did */
        normalize(r->norm2, m->x, m, m->n2w, m->n2b, first);
        ffn_in = r->norm2 + skip;
    } else if (m->order == BLOCK_POST) {
        normalize(r->norm1, r->res1, m, m->n1w, m->n1b, first);
        ffn_in = r->norm1 + skip;
    } else {
        normalize(r->norm2, r->res1, m, m->n2w, m->n2b, first); /* norm1 was attention's input */
        ffn_in = r->norm2 + skip;
    }
    /* The FFN's products, each over the block's rows */
#define MM(...)                                                                                    \
    attn_model_mm(m, &(struct attn_model_mm_params){                                               \
                         .rows = rows, .panels = panels, .few = few, __VA_ARGS__})
    if (m->n_experts > 0) {
        forward_experts(r, m, ffn_in, first, panels, few);
    } else if (attn_activation_gated(m->activation)) { /* Llama's: down(silu(gate(x)) * up(x)) */
        MM(.out = r->ffn_gate + skip_h, .in = ffn_in, .member = ATTN_MEMBER(wg), .bias = m->bg,
           .cols = hid, .k = d);
        MM(.out = r->ffn_up + skip_h, .in = ffn_in, .member = ATTN_MEMBER(w1), .bias = m->b1,
           .cols = hid, .k = d);
        attn_gated(r->ffn_act + skip_h, r->ffn_gate + skip_h, r->ffn_up + skip_h,
                   (size_t)rows * hid, m->activation);
    } else {
        MM(.out = r->ffn_hidden + skip_h, .in = ffn_in, .member = ATTN_MEMBER(w1), .bias = m->b1,
           .cols = hid, .k = d);
        if (m->activation == ACT_RELU) /* relu makes 0 of -inf and nan: its input is read */
            seen_at(r, r->ffn_hidden, hid, first, m->n);
        attn_activate(r->ffn_act + skip_h, r->ffn_hidden + skip_h, (size_t)rows * hid,
                      m->activation);
    }
    if (m->n_experts == 0)
        MM(.out = r->ffn_out + skip, .in = r->ffn_act + skip_h, .member = ATTN_MEMBER(w2),
           .bias = m->b2, .cols = d, .k = hid);
#undef MM
    if (m->order == BLOCK_SANDWICH) { /* residual1 + post_norm2(the FFN's output) */
        normalize(r->ffn_out_normed, r->ffn_out, m, m->pn2w, NULL, first);
        attn_elem_add(r->res2 + skip, r->res1 + skip, r->ffn_out_normed + skip, nd);
    } else if (m->order == BLOCK_POST_BRANCH) { /* residual1 + norm2(the FFN's output) */
        normalize(r->norm2, r->ffn_out, m, m->n2w, m->n2b, first);
        attn_elem_add(r->res2 + skip, r->res1 + skip, r->norm2 + skip, nd);
    } else if (m->order == BLOCK_PARALLEL) { /* NeoX's mlp_output + attn_output + hidden_states */
        attn_elem_add(r->res2 + skip, r->ffn_out + skip, r->output + skip, nd);
        attn_elem_add(r->res2 + skip, r->res2 + skip, m->x + skip, nd);
    } else {
        const float *res_in = m->order == BLOCK_POST ? r->norm1 : r->res1;
        attn_elem_add(r->res2 + skip, res_in + skip, r->ffn_out + skip, nd);
    }
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
    int kvh = attn_kv_head_of(m, h);
    const float *qh = job->q + (size_t)h * hd, *kh = job->k + (size_t)kvh * hd;
    const float *vh = r->v + (size_t)kvh * hd;
    float *scores = r->scores + h * nn + (size_t)i0 * n, *weights = r->weights + h * nn;
    const float *bias = attn_head_bias(m, h);
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
        attn_add_bias_row(y, bias ? bias + (size_t)i * n : NULL, i + 1);
        attn_softcap_row(y, i + 1, m);
        attn_hide_window(y, i, m);
        attn_softmax_row_prefix(y, y, i + 1, n);
    }
    if (bad)
        atomic_store(&job->nonfinite, true);
    /* the panel's weights, after dropout when there is one (past i1 they are 0, not read) */
    for (int i = i0; i < i1; i++) {
        size_t at = (size_t)i * n;
        if (m->keep)
            attn_drop_weights(s + (size_t)(i - i0) * i1, weights + at, m->keep + h * nn + at,
                              (size_t)i1, m);
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
    int panel = attn_panel_rows();
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

/* The near block (attn_forward_rows_near): head h's rows first .. n - 1, unaligned, in one
 * product each. Its queries' scores against every key (the future past a row is the scores
 * stage's, computed when shown anyway), scaled and softmaxed in place over the keys each row
 * sees, and the context of those weights' rows straight from the weights buffer: no scratch. */
struct near_job {
    struct attn_run *r;
    const struct attn_model *m;
    const float *q, *k;
    int first, panel;
    atomic_bool nonfinite;
};

static void near_task(void *ctx, int h, int slot)
{
    (void)slot;
    struct near_job *job = ctx;
    struct attn_run *r = job->r;
    const struct attn_model *m = job->m;
    int n = m->n, D = m->D, Dkv = m->Dkv, hd = m->head_dim, first = job->first;
    size_t nn = (size_t)n * (size_t)n;
    int kvh = attn_kv_head_of(m, h);
    const float *qh = job->q + (size_t)h * hd, *kh = job->k + (size_t)kvh * hd;
    float *scores = r->scores + h * nn, *weights = r->weights + h * nn;
    attn_mm_abt(scores + (size_t)first * n, n, qh + (size_t)first * D, D, kh, Dkv, n - first, n,
                hd);
    /* The kept rows of first's panel show their scores against the block's keys (their future
       within the panel, which the panel's product made): those keys are new. */
    int p0 = first - first % job->panel;
    if (p0 < first)
        attn_mm_abt(scores + (size_t)p0 * n + first, n, qh + (size_t)p0 * D, D,
                    kh + (size_t)first * Dkv, Dkv, first - p0, n - first, hd);
    bool bad = false;
    const float *bias = attn_head_bias(m, h);
    for (int i = first; i < n; i++) {
        float *y = weights + (size_t)i * n;
        bad |= attn_div_nonfinite(y, scores + (size_t)i * n, m->scale_divisor, i + 1);
        attn_add_bias_row(y, bias ? bias + (size_t)i * n : NULL, i + 1);
        attn_softcap_row(y, i + 1, m);
        attn_hide_window(y, i, m);
        attn_softmax_row_prefix(y, y, i + 1, n);
    }
    if (bad)
        atomic_store(&job->nonfinite, true);
    attn_mm_ab(r->concat + (size_t)first * D + (size_t)h * hd, D, weights + (size_t)first * n, n,
               r->v + (size_t)kvh * hd, Dkv, NULL, n - first, hd, n);
}

/* Every head of the near block, in parallel: at 1,024 tokens a head's rows are a few hundred
 * thousand multiply-adds, and the heads are independent. */
static void forward_heads_near(struct attn_run *r, const struct attn_model *m, const float *q,
                               const float *k, int first)
{
    struct near_job job = {
        .r = r, .m = m, .q = q, .k = k, .first = first, .panel = attn_panel_rows()};
    atomic_init(&job.nonfinite, false);
    if (first < m->n) {
        double work = (double)(m->n - first) * m->n * m->heads * m->head_dim;
        attn_pool_run(m->heads, work < (1 << 18) ? 1 : 0, near_task, &job);
    }
    progress_report(r->progress, r->progress_base + m->heads, r->progress_total);
    r->seen_nonfinite |= atomic_load(&job.nonfinite);
}

/* ---- the finite check: the first value of the pass that is not a number ------------------ */

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
        struct attn_mat_view v = attn_kept_view(r, m, st, h);
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
    int n = m->n, nk = m->n_kv;
    size_t nn = (size_t)n * (size_t)nk;
    float div = m->scale_divisor;
    bool bad = false;
    for (int h = 0; h < m->heads && !bad; h++)
        for (int i = first; i < n && !bad; i++) {
            int j0, j1;
            attn_visible_cols(m, i, &j0, &j1);
            bad = attn_any_nonfinite(r->scores + h * nn + (size_t)i * nk + j0, (size_t)(j1 - j0));
        }
    if (!bad && !(div < 1.0f))
        return false;
    for (int pass = 0; pass < 2; pass++) /* the scores first, then scaled */
        for (int h = 0; h < m->heads; h++)
            for (int i = first; i < n; i++) {
                int j0, j1;
                attn_visible_cols(m, i, &j0, &j1);
                const float *row = r->scores + h * nn + (size_t)i * nk;
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
        /* a derived stage is not the pass's (scaled is read with the scores; masked and dropout
           follow from what they are made of, a mask, a keep-mask); concat is the contexts, read
           as each head's */
        if (attn_stage_is_on_demand(st) || st == STAGE_CONCAT)
            continue;
        /* head 0's view of a per-head stage starts its buffer: every head's columns, a row a
           stride, so rows first .. n - 1 are one run of memory */
        struct attn_mat_view v = attn_kept_view(r, m, st, 0);
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
    if (!attn_causal_tiled(m) || m->keep || m->patch)
        return false;
    for (int h = 0; h < m->heads; h++)
        if (m->head_mode[h] != HEAD_KEEP)
            return false;
    return true;
}

/* attn_forward_rows (near false) and attn_forward_rows_near (near true): the same pass, but
 * for the heads, which the near block computes on its own rows (forward_heads_near) where the
 * panels would redo their panel. */
static void forward_rows(struct attn_run *r, const struct attn_model *m, int first, bool near)
{
    attn_run_zero(r); /* a fresh run's buffers, zeroed on the thread that computes */
    int n = m->n, nk = m->n_kv, D = m->D, Dkv = m->Dkv, hd = m->head_dim;
    size_t nn = (size_t)n * (size_t)nk;
    if (first < 0 || !attn_rows_reusable(m))
        first = 0; /* only a causal panelled pass keeps rows */
    if (first > n)
        first = n;
    /* A block that starts on a panel boundary is the panel path's own last panel. */
    near = near && first % attn_row_panel() != 0;
    if (!near)
        first -= first % attn_row_panel();
    size_t skip = (size_t)first;
    bool panels = attn_row_panels(m);
    /* A pre-norm (or parallel) block normalises before attention: norm1 is attention's input. */
    const float *in = m->x;
    r->stopped = false;
    r->seen_nonfinite = false;
    if (m->block && attn_block_norms_input(m->order)) {
        normalize(r->norm1, m->x, m, m->n1w, m->n1b, first);
        in = r->norm1;
    }
    /* Stopped between the large products (each projection, each head): a long sequence's
       projection is seconds of work, and Ctrl-C or q must not wait for the whole layer. */
    if ((r->stopped = progress_stopped(r->progress)))
        return;
    project(r->q, D, m, in, n, offsetof(struct attn_model, wq), m->bq, first, near);
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
        /* cross-attention: K and V of the encoder's rows, every one (no row is kept) */
        const float *kv_in = m->cross ? m->kv_x : in;
        project(r->k, Dkv, m, kv_in, nk, offsetof(struct attn_model, wk), m->bk, first, near);
        if ((r->stopped = progress_stopped(r->progress)))
            return;
        project(r->v, Dkv, m, kv_in, nk, offsetof(struct attn_model, wv), m->bv, first, near);
    }
    if ((r->stopped = progress_stopped(r->progress)))
        return;
    const float *q = r->q, *k = r->k;
    if (m->qnw) { /* qk_norm: each head (Qwen3), or the whole of q and k (OLMo 2), before RoPE */
        attn_norm_heads(r->qn, r->q, D, (int)attn_model_buf_count(m, ATTN_BUF_qnw), m, m->qnw,
                        first);
        attn_norm_heads(r->kn, r->k, Dkv, (int)attn_model_buf_count(m, ATTN_BUF_knw), m, m->knw,
                        first);
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
    r->memo->tiled = attn_causal_tiled(m);
    r->memo->panel = attn_panel_rows();
    if (near)
        forward_heads_near(r, m, q, k, first);
    else if (r->memo->tiled) {
        forward_heads_tiled(r, m, q, k, first);
        if (r->stopped)
            return;
    }
    for (int h = 0; h < m->heads && !r->memo->tiled; h++) {
        int kvh = attn_kv_head_of(m, h);
        const float *qh = q + (size_t)h * hd, *kh = k + (size_t)kvh * hd;
        const float *vh = r->v + (size_t)kvh * hd;
        float *scores = r->scores + h * nn, *weights = r->weights + h * nn;

        attn_mm_abt(scores, nk, qh, D, kh, Dkv, n, nk, hd);
        /* the finite check of the visible scores, while they are in cache (see seen_at) */
        for (int i = 0; i < n && !r->seen_nonfinite; i++) {
            int j0, j1;
            attn_visible_cols(m, i, &j0, &j1);
            r->seen_nonfinite = attn_any_nonfinite(scores + (size_t)i * nk + j0, (size_t)(j1 - j0));
        }
        /* scaled and masked are not kept: one head's masked stage lives in work. */
        attn_mask_scores(r->work, scores, attn_head_bias(m, h), m);
        if ((m->causal || m->window > 0) && m->mask_mode == MASK_AFTER_SOFTMAX)
            attn_sumnorm_rows(weights, r->work, n, nk); /* renormalise by the row sums */
        else if (m->causal && m->normalize == NORMALIZE_SOFTMAX)
            attn_softmax_causal_rows(weights, r->work, n); /* the future is -inf: skip it */
        else
            attn_normalize_rows(weights, r->work, n, nk, m->normalize);

        const float *dropped = weights;
        if (m->keep) {
            attn_drop_weights(r->work, weights, m->keep + h * nn, nn, m);
            dropped = r->work;
        }
        /* This head's context goes straight into its column block of the concatenation. */
        attn_mm_ab(r->concat + (size_t)h * hd, D, dropped, nk, vh, Dkv, NULL, n, hd, nk);
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
                                                        .panels = panels,
                                                        .few = near});
    else
        memcpy(r->output + skip * D, r->concat + skip * D, (size_t)(n - first) * D * sizeof(float));
    if (m->block)
        forward_block(r, m, first, near);
    struct attn_mat_view last =
        attn_kept_view(r, m, m->block ? attn_stage_block_output(m) : STAGE_OUTPUT, 0);
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

void attn_forward_rows(struct attn_run *r, const struct attn_model *m, int first)
{
    forward_rows(r, m, first, false);
}

void attn_forward_rows_near(struct attn_run *r, const struct attn_model *m, int first)
{
    forward_rows(r, m, first, true);
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
