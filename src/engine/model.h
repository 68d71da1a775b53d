/* model: a scene turned into numbers.
 *
 * attn_model_resolve() tokenises nothing and parses nothing: it takes a checked struct attn_scene
 * and draws (or copies) every parameter in PyTorch's module-construction order: manual_seed(seed);
 * embedding table; positional table; W_query, W_key, W_value (per head for the wrapper layout, with
 * their biases); out_proj; then the dropout keep-masks, head by head. A `seed` inside a part
 * re-seeds right before that part's draws. The result is everything attn_forward() needs, and
 * everything a resolved scene.yaml writes.
 */
#ifndef ATTNSCOPE_MODEL_H
#define ATTNSCOPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/rng.h"
#include "engine/scene.h"

/* Every float buffer of a model, once: each a member that the forward pass reads as it is
 * (m->wq), m's own or borrowed (attn_model.owned says which). model.c sizes each by the model's
 * shape; freeing, sharing, handing over and comparing models walk this list. */
/* clang-format off */
#define ATTN_MODEL_BUFS(X)                                                                         \
    /* the inputs: layer 0's embeddings and positions, every layer's x */                          \
    X(embed) X(types) X(enw) X(enb) X(pos) X(x)                                                    \
    /* attention: Q, K and V (fused, separate or MLA), out_proj, qk_norm, RoPE's tables */         \
    X(wqkv) X(bqkv) X(wq) X(wk) X(wv) X(bq) X(bk) X(bv) X(wdown) X(wkup) X(wvup) X(wo) X(bo)       \
    X(qnw) X(knw) X(rope_inv) X(rope_cos) X(rope_sin) X(pos_bias)                                  \
    /* the block: the FFN and the norms */                                                         \
    X(w1) X(b1) X(w2) X(b2) X(wg) X(bg) X(n1w) X(n1b) X(n2w) X(n2b) X(pn1w) X(pn2w) X(fw) X(fb)    \
    /* a mixture of experts: the router, the shared expert and its gate */                         \
    X(wr) X(wsg) X(wsu) X(wsd) X(wsgate)                                                           \
    /* the last layer's unembedding and the head before it */                                      \
    X(unembed) X(unembed_bias) X(hw) X(hb) X(hnw) X(hnb)
/* clang-format on */

enum attn_model_buf {
#define ATTN_MODEL_BUF_ID(name) ATTN_BUF_##name,
    ATTN_MODEL_BUFS(ATTN_MODEL_BUF_ID)
#undef ATTN_MODEL_BUF_ID
        ATTN_MODEL_NBUFS
};

struct attn_model {
    int n;    /* tokens */
    int n_kv; /* the keys' and values' rows: n, or a cross-attention layer's encoder tokens */
    /* Cross-attention (an encoder-decoder's SUB_CROSS layer): K and V are kv_x's (n_kv, d_in),
     * the encoder's output, borrowed (the net sets it), and kv_tokens their labels; NULL for
     * self-attention. The square stages are (n, n_kv). */
    bool cross;
    const float *kv_x;
    char *const *kv_tokens;
    bool no_ffn;     /* a decoder's SUB_SELF layer: its block ends with residual1 (norm1: post) */
    float *pos_bias; /* (heads, n, n_kv) the relative position bias added to the scaled scores
                        (T5's), or NULL; layer 0's, the others borrow it */
    int rel_buckets, rel_max_distance; /* the bias's buckets (scene.h's pos.rel) */
    bool rel_bidirectional;
    int d_in; /* input width */
    int heads;
    int head_dim;     /* d_k: split d_out/heads, wrapper d_out */
    int D;            /* concatenated width = heads * head_dim (the queries' width) */
    int kv_heads;     /* K: heads of K and V; query head h uses KV head h / (heads / K) */
    int Dkv;          /* K * head_dim: the width of K and V */
    int latent;       /* r of MLA, or 0 */
    int out_dim;      /* E: the output's width, D (or d_in: a checkpoint's out_proj maps D to it) */
    char **tokens;    /* (n) owned copies */
    int *ids;         /* (n) token ids (layer 0 only): the tokenizer's, or first-appearance order */
    float *embed;     /* (n, d_in) token embeddings before positions */
    float *types;     /* (n, d_in) each token's row of the token type table (BERT), or NULL */
    float *enw, *enb; /* (d_in) each: the embeddings' LayerNorm (BERT), or NULL */
    enum attn_pos_kind pos_kind;
    float *pos; /* (pos_rows, d_in) learned or sinusoidal table, or NULL */
    int pos_rows;
    int pos_offset;    /* the first token's position: x[i] = embed[i] + pos[pos_offset + i] */
    float embed_scale; /* every embedding row times it (Gemma's sqrt(d) normalizer); 0: none */
    float *x;          /* (n, d_in) inputs = embed + positions (LayerNorm(embed + types + positions)
                          with enw) */
    bool project;      /* false: projection none, Q = K = V = X (then D == d_in) */
    enum attn_qkv_mode qkv;
    float *wqkv, *bqkv;  /* fused: (d_in, D + 2 Dkv) and (D + 2 Dkv), as drawn; else NULL */
    float *wq, *wk, *wv; /* (d_in, D), (d_in, Dkv), (d_in, Dkv), x @ W; NULL when !project.
                            Fused: the column blocks of wqkv; MLA: wq only */
    int qkv_ld;          /* 0: wq, wk and wv are their own packed matrices. Else the row stride
                            of all three: views into a fused (not lazy) wqkv, never copied, so
                            GPT-2's 85 MB of c_attn are held once (attn_model_param_ld) */
    float *bq, *bk, *bv; /* (D), (Dkv), (Dkv) or NULL */
    float *wdown;        /* MLA: (d_in, r) */
    float *wkup, *wvup;  /* MLA: (r, D) each */
    float *wo;           /* (D, E) or NULL when there is no out_proj */
    float *bo;           /* (E) or NULL */
    float *qnw, *knw;    /* (head_dim) each: qk_norm's weights (Qwen3), or NULL; (D) and (Dkv)
                            with qk_norm_whole (OLMo 2's, over the whole projection) */
    bool qk_norm_whole;
    bool rope;
    enum attn_rope_pairs rope_pairs;
    int rope_dims;              /* the first dims of a head RoPE turns: head_dim, or fewer (partial
                                   rotary, GPT-NeoX's rotary_pct); the rest pass unturned */
    float *rope_inv;            /* (rope_dims / 2): pair i's frequency, after any rope scaling */
    float *rope_cos, *rope_sin; /* (n, rope_dims / 2): the angle of pair i at token t */
    bool rope_local; /* the tables use pos.base_local, unscaled (a Gemma 3 sliding layer) */
    int window;      /* the sliding window: key j visible from query i only when i - j < window */
    unsigned char *keep; /* (heads, n, n) dropout keep-mask, or NULL when p == 0 */
    double dropout;      /* p */
    bool causal;
    enum attn_mask_mode mask_mode;
    enum attn_normalize normalize;
    enum attn_scale_kind scale; /* effective: SCALE_NONE, SCALE_SQRT_DK or SCALE_DIVISOR */
    float scale_divisor; /* the number scores are divided by (1 for none), as torch casts it */
    int scale_layer;     /* layer + 1 when the divisor holds it (scene's scale_by_layer), else 1 */
    float softcap;       /* attention logit soft-capping: cap * tanh(scaled / cap); 0: none */

    /* The block (002), when block is true. */
    bool block;
    enum attn_block_order order;
    enum attn_norm_kind norm;
    float norm_eps;
    enum attn_activation activation;
    int hidden;
    float *w1, *b1;   /* (d_in, hidden), (hidden); swiglu: "up", its bias or NULL */
    float *w2, *b2;   /* (hidden, d_in), (d_in); swiglu: "down", its bias or NULL */
    float *wg, *bg;   /* swiglu: (d_in, hidden) the gate and (hidden) its bias (or NULL), or NULL */
    float *n1w, *n1b; /* (d_in) each; n1b NULL for RMSNorm */
    float *n2w, *n2b;
    bool final_norm;    /* the last layer of a block with block.final_norm (GPT-2's ln_f) */
    float *fw, *fb;     /* (d_in) each; fb NULL for RMSNorm */
    float *pn1w, *pn2w; /* sandwich: the branches' post-norms, (d_in) each; else NULL */
    /* A mixture of experts in place of the FFN (hidden: an expert's width): the router wr
     * (d_in, n_experts); each token's top_k experts by its softmax (norm_topk: renormalised);
     * experts[3e .. 3e + 2] expert e's gate, up (d_in, hidden) and down (hidden, d_in), lazy
     * matrices of the checkpoint's backing, each read only when a token chose it; Qwen2-MoE's
     * shared expert wsg, wsu (d_in, shared_hidden), wsd, gated by sigmoid(x . wsgate (d_in)). */
    int n_experts, top_k, shared_hidden;
    bool norm_topk;
    const struct attn_matrix *experts;
    float *wr, *wsg, *wsu, *wsd, *wsgate;
    /* The last layer of a scene with a vocabulary model: the unembedding (logits.h). */
    float *unembed;           /* (vocab, d_in), or NULL (then maybe lazy: unembed_lazy) */
    const void *unembed_lazy; /* a checkpoint's F16/BF16 unembedding, read a block at a time */
    float *unembed_bias;      /* (vocab), or NULL */
    float logit_softcap;      /* final logit soft-capping: cap * tanh(score / cap); 0: none */
    float unembed_scale;      /* T5's tied unembedding: the hidden state times it first; 0: none */
    int vocab;
    /* The head before the unembedding (BERT's MLM transform), when hw is not NULL:
     * LayerNorm(act(h hw + hb)) with hnw, hnb and norm_eps. */
    float *hw, *hb;   /* (d_in, d_in), (d_in) */
    float *hnw, *hnb; /* (d_in) each */
    enum attn_activation hact;
    bool masked_lm; /* the scores of position i are for the token at i (scene.h) */
    int mask_id;

    /* What each head hands to out_proj (scene key ablate:, or attn_net_set_head): HEAD_KEEP
     * unless ablated or patched. The context stage shows what was handed on. */
    unsigned char head_mode[SCENE_MAX_HEADS]; /* (heads) enum attn_head_mode */
    const float *patch; /* (n, D) contexts HEAD_PATCH heads take their columns from; not owned */

    int layer, layers; /* this layer's index, and how many the scene stacks */

    /* What m allocated, and attn_model_free frees: owned[ATTN_BUF_wq] is wq itself, or NULL when
     * wq is borrowed (a checkpoint's mapping, the lazy widening buffer, or another model's
     * buffer that an edit shares). */
    float *owned[ATTN_MODEL_NBUFS];

    /* A checkpoint's lazy matrices (scene.h): their members point at the backing's one widening
     * buffer, which holds one of them at a time; attn_model_param gives the numbers. */
    struct attn_backing *lazy_from; /* the backing that reads them, or NULL */
    struct attn_lazy_param {
        size_t member; /* offsetof(struct attn_model, the float * member) */
        const void *tensor;
        int rows, cols;       /* as the engine reads it, x @ W */
        bool transposed;      /* stored (cols, rows) */
    } lazy[ATTN_MODEL_NBUFS]; /* at most one a buffer */
    int n_lazy;
};

/* The bucket of the relative position rel = j - i that m's position bias reads (T5's
 * _relative_position_bucket), as the forward pass computes it. */
int attn_model_rel_bucket(const struct attn_model *m, int rel);

/* How many floats buffer b holds, by m's shape. */
size_t attn_model_buf_count(const struct attn_model *m, enum attn_model_buf b);

/* The numbers of m's parameter member (offsetof(struct attn_model, wq), ...): the member itself,
 * or for a checkpoint's lazy matrix, widened (and turned into x @ W orientation) into the
 * backing's one buffer, which keeps them until the next attn_model_param of another lazy matrix
 * of any model of the same checkpoint. Anything that reads a parameter matrix outside the forward
 * pass (the inspector, print, export, the tests) reads it through this; the forward pass does
 * too, one matrix after the other. Never fails: a lazy matrix's buffer exists once m does. */
const float *attn_model_param(const struct attn_model *m, size_t member);
#define ATTN_PARAM(m, member) attn_model_param((m), offsetof(struct attn_model, member))
/* The row stride, in floats, of what attn_model_param returns for member: cols (its own columns)
 * but for the views into a fused matrix (qkv_ld). */
int attn_model_param_ld(const struct attn_model *m, size_t member, int cols);
/* A parameter member as attn_model_param and attn_model_mm name it. */
#define ATTN_MEMBER(member) offsetof(struct attn_model, member)

/* One product of attn_model_mm, its operands named where it is made:
 *   attn_model_mm(m, &(struct attn_model_mm_params){.out = q, .in = x, .member = ATTN_MEMBER(wq),
 *                                                   .rows = n, .cols = D, .k = d_in});
 * What is left out is 0: packed rows (ldc = cols, lda = k), no bias, one product of the whole. */
struct attn_model_mm_params {
    float *out;        /* (rows, cols), rows ldc floats apart */
    int ldc;           /* 0: cols */
    const float *in;   /* (rows, k), rows lda floats apart */
    int lda;           /* 0: k */
    size_t member;     /* W (k, cols): m's parameter, offsetof(struct attn_model, wq), ... */
    const float *bias; /* (cols), or NULL */
    int rows, cols, k;
    bool panels; /* in row panels (kernels.h's attn_mm_ab_rows), as a causal net's row-wise
                    products run */
    bool few;    /* the near path's few rows: a matrix-vector product a row (attn_mm_ab_rows_few) */
};

/* out = in @ W + bias, W = m's parameter member: attn_mm_ab with ATTN_PARAM(m, member), except
 * that a lazy matrix stored transposed (a torch Linear's F16/BF16 weight) is read a block of its
 * stored rows (W's columns) at a time into the backing's small turning buffer and never widened
 * whole, so the forward pass of a TinyLlama-sized checkpoint never holds a 44 MiB widened FFN
 * matrix. Never allocates. */
void attn_model_mm(const struct attn_model *m, const struct attn_model_mm_params *p);
/* out (rows, cols; rows ldc apart) = in (rows, k; lda apart) @ W, W a matrix of the scene (a
 * mixture's expert: in memory, or a torch Linear lazy in the checkpoint, read a block of its
 * stored rows at a time like attn_model_mm's). */
void attn_model_matrix_mm(const struct attn_model *m, const struct attn_matrix *w, float *out,
                          int ldc, const float *in, int lda, int rows, int cols, int k);
/* True when a and b compute alike but for their tokens: the same shapes, options and parameter
 * numbers (the same checkpoint tensors), differing at most in what holds a row per token (the
 * embeddings, the inputs, the positions' angles) and in the token count. A sentence edit of a
 * causal scene so keeps every row before the first token whose inputs changed. */
bool attn_model_same_but_tokens(const struct attn_model *a, const struct attn_model *b);
/* out is fully initialised on success; on failure it is left freed and err says why.
 * The scene must have passed attn_scene_check and have one layer. */
int attn_model_resolve(struct attn_model *out, const struct attn_scene *s, struct diag *err);
/* Every layer of s: out has `layers` (= s->layers) entries. Layer 0 holds the embeddings and
 * positions and its input x; a later layer's x is filled by the forward pass with the output
 * of the layer before it. Draw order: embeddings, positions, each layer's parameters in turn
 * (attention, out_proj, FFN), then each layer's dropout mask. attention.seed, block.ffn_seed,
 * block.ffn_skip and attention.dropout_seed act before layer 0's draws only. */
int attn_model_resolve_layers(struct attn_model *out, int layers, const struct attn_scene *s,
                              struct diag *err);
/* The same; after_params (may be NULL) gets the generator as it is before the dropout draws. */
int attn_model_resolve_layers_rng(struct attn_model *out, int layers, const struct attn_scene *s,
                                  struct attn_rng *after_params, struct diag *err);
/* A scene that differs from old's only in options that draw nothing but dropout masks
 * (causal, mask_mode, normalize, scale, dropout, dropout_seed, dropout_mask), or in the number
 * of split heads (the same d_out columns, cut again): old's numbers shared, not copied, the
 * options and masks new (the masks drawn from after_params). out borrows old's buffers until
 * attn_model_adopt hands them over, so a failure after this leaves old whole. An edit of
 * dropout, the mask or the heads never pays for drawing, or copying, every parameter again. */
int attn_model_resolve_options(struct attn_model *out, const struct attn_model *old, int layers,
                               const struct attn_scene *s, const struct attn_rng *after_params,
                               struct diag *err);
/* A scene that differs from old's only in its sentence (the tokens, their ids and rows): old's
 * parameters shared as attn_model_resolve_options shares them, the tokens, inputs and RoPE's
 * angles made anew. Only for a scene whose inputs draw nothing (a checkpoint's table or given
 * rows; positions given, sinusoidal, RoPE or none; no dropout): -1 with err otherwise, and then
 * the scene is resolved whole. A sentence edit of GPT-2 small so never allocates, zeroes or
 * copies its 85 MB of q, k and v per layer again. */
int attn_model_resolve_tokens(struct attn_model *out, const struct attn_model *old, int layers,
                              const struct attn_scene *s, struct diag *err);
/* m (from attn_model_resolve_options on old) takes over the buffers it shares with old that old
 * owns; old keeps pointing at them, borrowed, and may then be freed. */
void attn_model_adopt(struct attn_model *m, struct attn_model *old);
void attn_model_free(struct attn_model *m);

/* A scene equal to s but with every default and every drawn number written out explicitly
 * (embeddings as rows, positional table, weights, dropout mask), so that loading it gives
 * exactly m again: export's scene.yaml (the explorer's w saves the scene as edited instead). */
int attn_scene_from_model(struct attn_scene *out, const struct attn_scene *s,
                          const struct attn_model *m);
/* The same for every layer: with more than one, weights are listed one mapping per layer. */
int attn_scene_from_layers(struct attn_scene *out, const struct attn_scene *s,
                           const struct attn_model *layers, int n_layers);

#endif
