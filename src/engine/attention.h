/* attention: the forward pass, and a view of every stage of every head.
 *
 * struct attn_run owns the stage buffers for one shape (n, d_in, heads, head_dim). They are
 * allocated by attn_run_init and reused by every attn_forward until the shape changes, so a
 * live edit of the seed or dropout recomputes without touching the allocator.
 * All buffers are row-major float32; all products go through OpenBLAS (kernels.h).
 *
 * Of the (heads, n, n) stages only the scores and the weights are kept: scaled, masked,
 * dropout and weighted_norm are each a cheap function of one of them (a division, a mask, a
 * keep-mask, a column of value norms), and at 1024 tokens x 12 heads each would hold 48 MB.
 * attn_view computes them when asked (see there).
 *
 * A head may hand out_proj something else than its context (model.h's head_mode: ablated to
 * zeros or its mean, or patched from another run): the context stage then shows what it
 * handed on, and everything after it follows.
 *
 * The calls below are defined by job: run.c (the buffers), forward.c (the pass, its finite
 * check, attn_compute), view.c (the views, the stages a scene has, their order and shapes),
 * norm.c (the norms and activations); scores.c holds the (n, n) arithmetic the pass and the
 * views share.
 */
#ifndef ATTNSCOPE_ATTENTION_H
#define ATTNSCOPE_ATTENTION_H

#include <stddef.h>

#include "common/progress.h"
#include "engine/model.h"
#include "engine/stage.h"

struct attn_memo;

#ifdef ATTNSCOPE_TEST_HOOKS
/* Tests: causal scenes by the full path (every score, then the mask), to compare the tiled one
 * with. */
extern bool attn_causal_untiled;
#endif

/* Where a forward pass first made a value that is not a number: nan, inf, or -inf where no mask
 * put one (a masked score is -inf by design, and a weight of 0 after a causal softmax is a
 * number). The stage, the first in the pipeline's order (attn_stage_order) holding one, its
 * head (-1 for a stage the heads share), and the row and column of that value in attn_view's
 * matrix of it, the first in head, row, column order. Only kept stages are read: a derived one
 * (scaled aside, read from the scores and the divisor) is named by the kept stage it goes into,
 * and a score the mask hides (the future) by nothing: it reaches nothing. */
struct attn_nonfinite {
    bool found;
    enum attn_stage stage;
    int head, row, col;
    float value;
};

struct attn_run {
    /* Feedback while attn_forward runs, one step a head (attn_net_forward sets it; NULL for
     * none): step progress_base + h + 1 of progress_total. */
    const struct progress_sink *progress;
    long progress_base, progress_total;
    /* attn_forward ended early: the sink's stop flag was set (its stages are incomplete). */
    bool stopped;
    /* The first value the last complete attn_forward made that is not a number (found false:
     * every value is one). Read with one vectorised scan of each kept stage as it is made
     * (vecmath's attn_any_nonfinite), a cell at a time only in a stage that has one. */
    struct attn_nonfinite nonfinite;
    bool seen_nonfinite; /* the pass saw a value that is not a number (forward.c's seen_at) */
    /* The shape the buffers were sized for. */
    int n, n_kv, d_in, heads, head_dim, D, Dkv, latent_dim, hidden, out_dim;
    int cap_n; /* the tokens the buffers have room for (attn_run_reserve), at least n */
    bool rope, qk_norm, gated;
    float *q;       /* (n, D) all query heads side by side */
    float *k, *v;   /* (n_kv, Dkv) all KV heads side by side */
    float *qn, *kn; /* qk_norm: q and k normalised per head, or NULL */
    float *qr, *kr; /* RoPE: q and k rotated, or NULL */
    float *latent;  /* MLA: (n, r), or NULL */
    float *scores;  /* (heads, n, n_kv) Q_h K_kv(h)^T */
    float *weights; /* (heads, n, n_kv) */
    bool borrows;   /* its shared buffers are another run's (attn_run_init_sharing) */
    bool unzeroed;  /* its own buffers are not zeroed yet: the forward pass zeroes them first */
    float *work;    /* (n, n) the forward pass's masked, then dropout, of a head; or a causal
                       panel's dropout (64, n) for each of work_slots threads */
    int work_slots; /* the threads a causal forward pass may use */
    struct attn_memo *memo;             /* the derived stage attn_view last computed (run.h) */
    float *concat;                      /* (n, D) per-head contexts side by side */
    float *output;                      /* (n, E) */
    float *res1, *norm1;                /* block: (n, d_in) each, or NULL */
    float *ffn_hidden, *ffn_act;        /* (n, hidden); swiglu: ffn_hidden NULL */
    float *ffn_gate, *ffn_up;           /* swiglu: (n, hidden) each, or NULL */
    float *ffn_out, *res2, *norm2;      /* (n, d_in) */
    float *out_normed, *ffn_out_normed; /* sandwich: the branches' post-norms, (n, d_in) each */
    bool post_norms;
    /* a mixture of experts: the router's logits and the routed weights (n, n_experts); the
       forward pass's scratch: the rows an expert takes, gathered (n, d_in), its gate, up and
       activation (n, 3 * moe_hidden), its output (n, d_in) */
    float *router, *routed, *moe_in, *moe_mid, *moe_y, *moe_take; /* moe_take: n ints */
    int n_experts, moe_hidden;
    float *final; /* (n, d_in) the final norm, last layer only */
    bool final_norm;
};

/* A read-only window on a stage: element (i, j) is data[i * stride + j]. */
struct attn_mat_view {
    const float *data;
    int rows, cols, stride;
};

/* One cell's change from base to cur, cur - base; two equal values (two masked -inf cells
 * included) change by 0, where IEEE would give nan. The explorer's baseline and `diff` use it. */
static inline float attn_cell_delta(float cur, float base)
{
    return cur == base ? 0.0f : cur - base;
}

/* |Δ| over a view's cells (each an attn_cell_delta): the mean over the finite ones, the largest
 * and where. `diff` ranks heads by it; the explorer's baseline labels each tile with its mean. */
struct attn_delta_stats {
    double sum;
    long finite;
    float max_abs;
    int max_at; /* row * cols + col */
};
void attn_delta_stats_add(struct attn_delta_stats *st, float d, int at);
/* The mean |Δ| over the finite cells; 0 when none is. */
float attn_delta_stats_mean(const struct attn_delta_stats *st);

/* Sizes r for m's shape; keeps the existing buffers when the shape is unchanged.
 * r must be zeroed (or previously initialised). Returns 0, or -1 with err on out-of-memory. */
int attn_run_init(struct attn_run *r, const struct attn_model *m, struct diag *err);
/* attn_run_init with owner's buffers for every stage that is only read while its layer is
 * current (the projections, the n x n stages, the FFN's: run.c's RUN_BUFFERS says which),
 * when owner has m's shape (else all its own): the layers of a net computed one at a time for a
 * caller that reads each once share them (attn_net_compute_lean). Their numbers are those of
 * whichever sharing run was computed last; what a layer hands on, its concatenated heads and
 * the final norm stay its own. r never frees owner's buffers, and never fits: a later
 * attn_run_init gives it its own. */
int attn_run_init_sharing(struct attn_run *r, const struct attn_model *m,
                          const struct attn_run *owner, struct diag *err);
void attn_run_free(struct attn_run *r);
/* Zeroes r's own buffers if they are not yet (r->unzeroed): attn_run_init leaves that to the
 * forward pass, on the thread that computes. */
void attn_run_zero(struct attn_run *r);
/* Stream mode (net.h's stage_budget): a layer's stage set is the buffers it needs only while it
 * is computed or shown (run.c's RUN_BUFFERS says which: the queries, the n x n stages, the
 * FFN's, all but the keys and values and what the layer hands on). attn_run_init_stream sizes r
 * as attn_run_init does, its stage set only when `stages`; attn_run_holds_stages says whether r
 * has one; attn_run_alloc_stages gives r a zeroed one (0, or -1 with err); attn_run_move_stages
 * moves from's into to (runs of m's shape; to's freed first, from left without); and
 * attn_run_drop_stages frees r's. Each forgets the memo of the runs it changes. */
int attn_run_init_stream(struct attn_run *r, const struct attn_model *m, bool stages,
                         struct diag *err);
bool attn_run_holds_stages(const struct attn_run *r);
size_t attn_run_stage_bytes(const struct attn_model *m); /* a stage set's, for m's n tokens */
int attn_run_alloc_stages(struct attn_run *r, const struct attn_model *m, struct diag *err);
void attn_run_move_stages(struct attn_run *to, struct attn_run *from, const struct attn_model *m);
void attn_run_drop_stages(struct attn_run *r, const struct attn_model *m);
/* r's buffers outside the stage set pointed at scratch's (a run of the same shape): a pass of r
 * then writes those there, and the layer's own are left as they were (attn_net_materialise). */
void attn_run_kept_from(struct attn_run *r, const struct attn_run *scratch,
                        const struct attn_model *m);
/* True when r's buffers have m's shape (attn_run_init would keep them). */
bool attn_run_fits(const struct attn_run *r, const struct attn_model *m);
/* Computes every kept stage and forgets the memo. Never allocates. r must be initialised for
 * m's shape. */
void attn_forward(struct attn_run *r, const struct attn_model *m);
/* The forward pass of rows first .. n - 1 only (first rounded down to a panel boundary,
 * attn_row_panel()): the rows before it are r's as they are. For a model whose pass is
 * row-wise in panels (attn_rows_reusable; any other computes every row) and whose inputs,
 * parameters and rows before first are those r was computed for: every row-wise step runs on
 * the same panels whatever first is, so the result is the full pass's bit for bit. A KV cache
 * for sentence edits (attn_net_compute). Never allocates. */
void attn_forward_rows(struct attn_run *r, const struct attn_model *m, int first);
/* The same for the last rows of a sentence edit, first not rounded: rows first .. n - 1 as one
 * block (net.h's ATTN_NEAR_ROWS at most): every row-wise product on row panels that start at
 * first (one call for a few rows), each head's scores, softmax and context one product of them
 * against the keys they see. The KV
 * cache's path: the cost of n - first rows, not of a panel. The block's products have another
 * height than the panel a fresh computation puts those rows in, so their bits may differ from
 * it in the last place (attn_net_compute's near path says how far; attn_net_forward_exact makes
 * them the panels' again). A first on a panel boundary, or a model that keeps no rows, runs
 * attn_forward_rows. Never allocates. */
void attn_forward_rows_near(struct attn_run *r, const struct attn_model *m, int first);
/* True when m's forward pass can keep a prefix of rows: a causal head computed panel by panel
 * (a mask before the softmax, no sliding window), no dropout, no head ablated or patched. */
bool attn_rows_reusable(const struct attn_model *m);
/* Rows 0 .. rows - 1 of every kept stage of to copied from from, a run of the same widths whose
 * token count may differ: the row-wise buffers' rows, and those rows of every head's scores and
 * weights (their columns both have; a weights row's new columns get the causal future, the
 * scores' future is computed when shown). rows <= both counts. */
void attn_run_copy_rows(struct attn_run *to, const struct attn_run *from, int rows);
/* True when r's buffers have m's widths, whatever its token count. */
bool attn_run_fits_but_n(const struct attn_run *r, const struct attn_model *m);
/* r's buffers grown for m's token count (attn_run_fits_but_n), their contents and r's result
 * left as they are (a failure leaves r valid for its own count). Then attn_run_relayout moves
 * rows 0 .. keep - 1 of every stage to where m's count puts them, in place, and never fails:
 * a sentence edit that changes the token count reallocates, but neither zeroes nor copies
 * the stages of every layer. Returns 0, or -1 with err on out-of-memory. */
int attn_run_reserve(struct attn_run *r, const struct attn_model *m, struct diag *err);
void attn_run_relayout(struct attn_run *r, const struct attn_model *m, int keep);
/* Resolves s into a fresh model, sizes r for it and runs the forward pass; on success the old
 * *m is freed and replaced (m must be zeroed or a valid model), on failure m and r are kept.
 * The one call the CLI, the explorer and the benchmarks need after a scene changes. */
int attn_compute(struct attn_model *m, struct attn_run *r, const struct attn_scene *s,
                 struct diag *err);
/* True when stage s changes nothing for this model: no scaling, no mask, no dropout or no
 * out_proj. The explorer dims such stages and auto-play skips them. */
bool attn_stage_is_off(const struct attn_model *m, enum attn_stage s);
/* The matrix of stage s for head h (h is ignored for shared stages). With GQA the keys and
 * values of head h are those of the KV head it reads. s must be present in m.
 * A derived stage (attn_stage_is_derived) is computed into the run's memo the first time a head
 * of it is asked for, and read from there after: redraws and cursor moves never recompute. The
 * memo holds one derived stage (every head of it): such a view stays valid until the next
 * attn_forward on r or a view of another derived stage of r. Only the memo changes, so r stays
 * const to its callers: the result itself is untouched. */
struct attn_mat_view attn_view(const struct attn_run *r, const struct attn_model *m,
                               enum attn_stage s, int h);
/* The mean over every head of per-head stage s, in head order (what the explorer's A shows and
 * a picture of it draws): out is (rows, cols) of attn_view's matrix, row-major. */
void attn_head_mean(float *out /*(rows, cols)*/, const struct attn_run *r,
                    const struct attn_model *m, enum attn_stage s);
/* The same view, but a derived stage is computed into buf (cap floats, at least n * n) instead
 * of the memo, which stays as it was: for a caller that walks every head once (print, export)
 * and so needs one matrix, not one per head. Any other stage is returned in place. */
struct attn_mat_view attn_view_buf(float *buf, size_t cap, const struct attn_run *r,
                                   const struct attn_model *m, enum attn_stage s, int h);
/* True when stage s is not kept by the forward pass but computed from scores or weights:
 * scaled (unless the divisor is 1), masked (with a causal mask, or when scaled is derived),
 * dropout (with a keep-mask), weighted_norm. The others, and these when they equal a kept
 * stage, are views. */
bool attn_stage_is_derived(const struct attn_model *m, enum attn_stage s);
/* The stages this scene has, in its order (at most STAGE_COUNT); returns how many. */
int attn_stage_order(enum attn_stage *out, const struct attn_model *m);
bool attn_stage_present(const struct attn_model *m, enum attn_stage s);
/* The same for scene s before anything is computed (a scene file's lesson is checked so): whether
 * layer L of s has stage st, and how many rows and columns its matrix has (a row a token; a
 * cross-attention layer's K and V a row, and its square stages a column, a source token). */
bool attn_scene_stage_present(const struct attn_scene *s, int layer, enum attn_stage st);
int attn_scene_stage_rows(const struct attn_scene *s, int layer, enum attn_stage st);
int attn_scene_stage_cols(const struct attn_scene *s, int layer, enum attn_stage st);
/* The columns of stage s's matrix in model m, by its width (stage.h): what attn_view's has. */
int attn_stage_cols(const struct attn_model *m, enum attn_stage s);
/* Its rows: a token's each, the queries' (n) but for K and V in a cross-attention layer, whose
 * rows are the source's (n_kv). */
int attn_stage_rows(const struct attn_model *m, enum attn_stage s);
/* The tokens the keys are: the source's in a cross-attention layer (n_kv of them), else m's. */
char *const *attn_model_key_tokens(const struct attn_model *m);
/* The labels of stage s's rows (attn_stage_rows of them) and, for a square stage, of its
 * columns (attn_model_key_tokens). */
char *const *attn_stage_row_tokens(const struct attn_model *m, enum attn_stage s);
/* ||v_j W_O^h||_2 for every key j of head h (||v_j|| without out_proj): weighted_norm's
 * factor, computed for the head the first time it is asked for (memo). (n) floats, valid until
 * the next attn_forward on r. */
const float *attn_value_norms(const struct attn_run *r, const struct attn_model *m, int h);
/* out (rows, d_in) = LayerNorm or RMSNorm (m->norm, m->norm_eps) of every row of in, times w
 * (plus b for LayerNorm). The moments are summed in double; torch's float kernel agrees to the
 * last bit or two. out may equal in. */
void attn_norm_rows(float *out, const float *in, int rows, const struct attn_model *m,
                    const float *w, const float *b);
/* out (count) = act(in): ReLU; GELU exact (erf, nn.GELU()); GELU's tanh approximation (GPT-2's
 * gelu_new). Not ACT_SWIGLU, which takes two inputs. out may equal in. */
void attn_activate(float *out, const float *in, size_t count, enum attn_activation act);
/* out (rows, d_in) = the final norm of rows of a residual stream in (rows, d_in), with the
 * last layer's parameters, exactly as the forward pass computes the final_norm stage; a copy
 * when the scene has no final norm. out may equal in. The logit lens runs every layer through
 * it. */
void attn_final_norm_rows(float *out, const float *in, int rows, const struct attn_model *last);
/* The last stage: the final norm, the block's output, or the attention's. */
enum attn_stage attn_stage_last(const struct attn_model *m);
/* What the layer hands to the next: norm2 (post), residual2 (pre), or the attention output. */
enum attn_stage attn_stage_block_output(const struct attn_model *m);

#endif
