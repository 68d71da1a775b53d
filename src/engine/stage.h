/* stage: the steps of the pipeline.
 *
 * Every stage any scene can have is declared once, in ATTN_STAGES: the enum, each stage's one
 * name, its heading, kind, width, export file and inspector text all come from that table. A scene
 * has the ones its systems use, in an order that can differ (a pre-norm block normalises before
 * attention): attn_stage_order (in attention.h) gives a computed scene's own list, which print,
 * export and the explorer walk.
 */
#ifndef ATTNSCOPE_STAGE_H
#define ATTNSCOPE_STAGE_H

#include <stdbool.h>

/* The kinds of stage, by what one matrix of it is. */
enum attn_stage_kind {
    STAGE_KIND_SHARED, /* one matrix for all heads, (n, width) */
    STAGE_KIND_HEAD,   /* one per head, (n, head_dim) */
    STAGE_KIND_SQUARE, /* one per head, token by token (n, n) */
    STAGE_KIND_BLOCK,  /* the block's, after attention: shared, (n, width) */
};

/* The sizes a stage's columns follow (attn_stage_cols, attn_scene_stage_cols). */
enum attn_stage_width {
    STAGE_WIDTH_D_IN,     /* the residual stream's width, d_in */
    STAGE_WIDTH_LATENT,   /* MLA's latent, r */
    STAGE_WIDTH_HEAD_DIM, /* a head's, hd */
    STAGE_WIDTH_TOKENS,   /* one a token, n: the square stages */
    STAGE_WIDTH_CONCAT,   /* every head's side by side, D */
    STAGE_WIDTH_OUT,      /* out_proj's, E (D without it) */
    STAGE_WIDTH_HIDDEN,   /* the FFN's, hidden */
    STAGE_WIDTH_EXPERTS,  /* a mixture of experts' router: one an expert */
};

/* X(ID, name, heading, kind, width, file, explain): everything that is a property of a stage, and
 * nothing else lists stages (tables elsewhere are made from these rows with designated
 * initialisers, never by the enum's order):
 * - name: the stage's one name, everywhere: the stage bar, the map's heading, --stage, `stage:`
 *   in scenes and lessons, the scene schema's values and the docs;
 * - heading: the name and what the stage is where a few words help (UTF-8);
 * - kind: what one matrix of it is (above);
 * - width: the model's size its columns follow (above; every stage has a row a token);
 * - file: the stem of export's file of it (a head's in headN/, a shared one in the layer's);
 * - explain: the inspector's explanation of a cell, explore/inspect.c's explain_<explain>.
 * A scene's own order is attn_stage_order's (view.c); the rows' order is the enum's, and the
 * order help texts list them in. */
#define ATTN_STAGES(X)                                                                             \
    /* X after positional encoding (n, d_in) */                                                    \
    X(INPUTS, "inputs", "inputs", SHARED, D_IN, "inputs", inputs)                                  \
    /* MLA: c = X W_down (n, r) */                                                                 \
    X(LATENT, "latent", "latent (MLA's c = x \u00b7 W_down)", SHARED, LATENT, "latent", latent)    \
    /* X Wq + bq, this head's columns; K and V its KV head's (n, hd) */                            \
    X(QUERIES, "queries", "queries (Q)", HEAD, HEAD_DIM, "queries", queries)                       \
    X(KEYS, "keys", "keys (K)", HEAD, HEAD_DIM, "keys", keys)                                      \
    X(VALUES, "values", "values (V)", HEAD, HEAD_DIM, "values", values)                            \
    /* qk_norm: q and k RMS-normalised over hd (n, hd) */                                          \
    X(QUERIES_NORMED, "queries_normed", "queries_normed (q_norm, RMS over a head)", HEAD,          \
      HEAD_DIM, "queries_normed", normed)                                                          \
    X(KEYS_NORMED, "keys_normed", "keys_normed (k_norm, RMS over a head)", HEAD, HEAD_DIM,         \
      "keys_normed", normed)                                                                       \
    /* RoPE: q and k rotated by position (n, hd) */                                                \
    X(QUERIES_ROTATED, "queries_rotated", "queries_rotated (RoPE)", HEAD, HEAD_DIM,                \
      "queries_rotated", rotated)                                                                  \
    X(KEYS_ROTATED, "keys_rotated", "keys_rotated (RoPE)", HEAD, HEAD_DIM, "keys_rotated",         \
      rotated)                                                                                     \
    /* Q K^T (n, n) */                                                                             \
    X(SCORES, "scores", "scores (Q\u00b7K\u1d40)", SQUARE, TOKENS, "scores", scores)               \
    /* scores / sqrt(d_k) (or the divisor) */                                                      \
    X(SCALED, "scaled", "scaled", SQUARE, TOKENS, "scaled", scaled)                                \
    /* a relative position bias (T5's): the bias of each query and key, by their distance's        \
       bucket; then scaled + it, what the softmax reads */                                         \
    X(POSITION_BIAS, "position_bias", "position_bias (T5's, by the distance's bucket)", SQUARE,    \
      TOKENS, "position_bias", position_bias)                                                      \
    X(BIASED, "biased", "biased (scaled + position_bias)", SQUARE, TOKENS, "biased", biased)       \
    /* attention logit soft-capping (Gemma 2): cap * tanh(scaled / cap) */                         \
    X(CAPPED, "capped", "capped (cap \u00b7 tanh(s \u00f7 cap))", SQUARE, TOKENS, "capped",        \
      capped)                                                                                      \
    /* -inf above the diagonal; mask_mode after_softmax: the softmax with the future zeroed (the   \
       book's masked_simple) */                                                                    \
    X(MASKED, "masked", "masked", SQUARE, TOKENS, "masked", masked)                                \
    /* normalised rows, summing to 1 */                                                            \
    X(WEIGHTS, "weights", "weights", SQUARE, TOKENS, "weights", softmax)                           \
    /* weights * keep / (1 - p) */                                                                 \
    X(DROPOUT, "dropout", "dropout", SQUARE, TOKENS, "dropout", dropout)                           \
    /* |a_ij| * ||v_j W_O^h||_2 (Kobayashi et al. 2020): how far key j moves query i's output;     \
       ||a_ij v_j|| without out_proj */                                                            \
    X(WEIGHTED_NORM, "weighted_norm", "weighted_norm (\u2016\u03b1\u00b7v\u00b7W_O\u2016)",        \
      SQUARE, TOKENS, "weighted_norm", weighted_norm)                                              \
    /* dropout @ V (n, hd) */                                                                      \
    X(CONTEXT, "context", "context (weights \u00b7 V)", HEAD, HEAD_DIM, "context", context)        \
    /* every head's context side by side (n, D) */                                                 \
    X(CONCAT, "concat", "concat (every head's context)", SHARED, CONCAT, "context", concat)        \
    /* concat Wo + bo (= concat without out_proj) (n, E) */                                        \
    X(OUTPUT, "output", "output", SHARED, OUT, "output", output)                                   \
    /* sandwich (Gemma's): the output normalised before it is added (post_attention_layernorm) */  \
    X(OUTPUT_NORMED, "output_normed", "output_normed (the output's post-norm)", BLOCK, D_IN,       \
      "output_normed", post_norm)                                                                  \
    /* block: X + output (n, d_in); none in a parallel block */                                    \
    X(RESIDUAL1, "residual1", "residual1 (inputs + output)", BLOCK, D_IN, "residual1", residual1)  \
    /* post: norm(residual1); pre and parallel: norm(X), attention's input */                      \
    X(NORM1, "norm1", "norm1", BLOCK, D_IN, "norm1", norm1)                                        \
    /* the FFN's first Linear (n, hidden) */                                                       \
    X(FFN_HIDDEN, "ffn_hidden", "ffn_hidden (x \u00b7 W1 + b1)", BLOCK, HIDDEN, "ffn_hidden",      \
      ffn_hidden)                                                                                  \
    /* swiglu: x W_gate and x W1 ("up") (n, hidden) */                                             \
    X(FFN_GATE, "ffn_gate", "ffn_gate (x \u00b7 W_gate)", BLOCK, HIDDEN, "ffn_gate", ffn_gate)     \
    X(FFN_UP, "ffn_up", "ffn_up (x \u00b7 W1)", BLOCK, HIDDEN, "ffn_up", ffn_up)                   \
    /* relu or gelu of it; swiglu: silu(gate) * up */                                              \
    X(FFN_ACTIVATED, "ffn_activated", "ffn_activated", BLOCK, HIDDEN, "ffn_activated",             \
      ffn_activated)                                                                               \
    /* a mixture of experts (Mixtral, Qwen-MoE): the router's logits, and the weight each token    \
       gives each expert (its top k's softmax, 0 for the rest) (n, experts) */                     \
    X(ROUTER_LOGITS, "router_logits", "router_logits (x \u00b7 W_router)", BLOCK, EXPERTS,         \
      "router_logits", router)                                                                     \
    X(ROUTED, "routed", "routed (each expert's weight: the top k)", BLOCK, EXPERTS, "routed",      \
      routed)                                                                                      \
    /* its second Linear (n, d_in); a mixture: the chosen experts' outputs, weighted, summed */    \
    X(FFN_OUT, "ffn_out", "ffn_out (\u00b7 W2 + b2)", BLOCK, D_IN, "ffn_out", ffn_out)             \
    /* sandwich: ffn_out normalised before it is added (post_feedforward_layernorm) */             \
    X(FFN_OUT_NORMED, "ffn_out_normed", "ffn_out_normed (the FFN's post-norm)", BLOCK, D_IN,       \
      "ffn_out_normed", post_norm)                                                                 \
    /* post: norm1 + ffn_out; pre: residual1 + ffn_out; parallel: ffn_out + output + X */          \
    X(RESIDUAL2, "residual2", "residual2 (+ ffn_out)", BLOCK, D_IN, "residual2", residual2)        \
    /* post: norm(residual2); pre: norm(residual1), the FFN's input; parallel: norm(X), the FFN's  \
     */                                                                                            \
    X(NORM2, "norm2", "norm2", BLOCK, D_IN, "norm2", norm2)                                        \
    /* the last layer's final norm of the block output (GPT-2's ln_f) */                           \
    X(FINAL_NORM, "final_norm", "final_norm (ln_f)", BLOCK, D_IN, "final_norm", final_norm)

enum attn_stage {
#define X(id, ...) STAGE_##id,
    ATTN_STAGES(X)
#undef X
        STAGE_COUNT
};

/* The derived stages: computed from kept ones when they are shown (view.c's derive), never by the
 * forward pass, so no buffer holds them and the pass's finite check does not read them. Every
 * other stage is kept: the pass writes it to a buffer of struct attn_run (or the model's inputs).
 * attn_stage_is_on_demand, the finite check and view.c's kept_buffer all read this list. */
#define ATTN_DERIVED_STAGES(X) X(SCALED) X(BIASED) X(CAPPED) X(MASKED) X(DROPOUT) X(WEIGHTED_NORM)

/* The stage's one name: "inputs", "queries", ..., "weights", "context", "concat", "output". The
 * stage bar, the map heading, --stage, the inspector, file names and the docs all use it, and
 * nothing shortens it: where the stage bar has no room for every name, it shows the stages
 * around the current one. */
const char *attn_stage_name(enum attn_stage s);
/* The stage as a heading or a picture's title calls it (UTF-8): its name, then what it is where
 * that helps: "scores (Q·Kᵀ)", "weights", "context (weights · V)". */
const char *attn_stage_title(enum attn_stage s);
/* Parses a stage's name, in any case; also the aliases q, k, v, mask, softmax and out, which
 * nothing writes (they read as the book and PyTorch say them). Returns -1 when unknown. */
int attn_stage_parse(const char *name);
/* The stem of export's file of the stage: its name, but "context" for concat (the name the
 * book's readers look for). */
const char *attn_stage_file(enum attn_stage s);
/* What the stage's columns follow (above). */
enum attn_stage_width attn_stage_width(enum attn_stage s);
/* The stage's kind (above). */
enum attn_stage_kind attn_stage_kind(enum attn_stage s);
/* True for the (n, n) token-by-token stages. */
bool attn_stage_is_square(enum attn_stage s);
/* True for stages that have one matrix per head. */
bool attn_stage_is_per_head(enum attn_stage s);
/* True for the stages with a row a key rather than a query (K, V and what is made of them): the
 * source's tokens in a cross-attention layer. */
bool attn_stage_is_key_side(enum attn_stage s);
/* True for the block's stages after attention (residual1 .. final_norm). */
bool attn_stage_is_block(enum attn_stage s);
/* True for a derived stage (ATTN_DERIVED_STAGES). In a model, one may equal a kept stage (scaled
 * with a divisor of 1 is the scores): attention.h's attn_stage_is_derived says which are made. */
bool attn_stage_is_on_demand(enum attn_stage s);

#endif
