/* stage: the steps of the pipeline.
 *
 * Every stage any scene can have is declared once, in ATTN_STAGES: the enum, each stage's one
 * name, its heading and its kind all come from that table. A scene has the ones its systems
 * use, in an order that can differ (a pre-norm block normalises before attention):
 * attn_stage_order (in attention.h) gives a computed scene's own list, which print, export and
 * the explorer walk.
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

/* X(ID, name, heading, kind). The name is the stage's one name, everywhere: the stage bar, the
 * map's heading, --stage, `stage:` in scenes and lessons, export's file names and the docs. The
 * heading adds what the stage is where a few words help (UTF-8). The order is the enum's. */
#define ATTN_STAGES(X)                                                                             \
    /* X after positional encoding (n, d_in) */                                                    \
    X(INPUTS, "inputs", "inputs", SHARED)                                                          \
    /* MLA: c = X W_down (n, r) */                                                                 \
    X(LATENT, "latent", "latent (MLA's c = x \u00b7 W_down)", SHARED)                              \
    /* X Wq + bq, this head's columns; K and V its KV head's (n, hd) */                            \
    X(QUERIES, "queries", "queries (Q)", HEAD)                                                     \
    X(KEYS, "keys", "keys (K)", HEAD)                                                              \
    X(VALUES, "values", "values (V)", HEAD)                                                        \
    /* qk_norm: q and k RMS-normalised over hd (n, hd) */                                          \
    X(QUERIES_NORMED, "queries_normed", "queries_normed (q_norm, RMS over a head)", HEAD)          \
    X(KEYS_NORMED, "keys_normed", "keys_normed (k_norm, RMS over a head)", HEAD)                   \
    /* RoPE: q and k rotated by position (n, hd) */                                                \
    X(QUERIES_ROTATED, "queries_rotated", "queries_rotated (RoPE)", HEAD)                          \
    X(KEYS_ROTATED, "keys_rotated", "keys_rotated (RoPE)", HEAD)                                   \
    /* Q K^T (n, n) */                                                                             \
    X(SCORES, "scores", "scores (Q\u00b7K\u1d40)", SQUARE)                                         \
    /* scores / sqrt(d_k) (or the divisor) */                                                      \
    X(SCALED, "scaled", "scaled", SQUARE)                                                          \
    /* -inf above the diagonal; mask_mode after_softmax: the softmax with the future zeroed (the   \
       book's masked_simple) */                                                                    \
    X(MASKED, "masked", "masked", SQUARE)                                                          \
    /* normalised rows, summing to 1 */                                                            \
    X(WEIGHTS, "weights", "weights", SQUARE)                                                       \
    /* weights * keep / (1 - p) */                                                                 \
    X(DROPOUT, "dropout", "dropout", SQUARE)                                                       \
    /* |a_ij| * ||v_j W_O^h||_2 (Kobayashi et al. 2020): how far key j moves query i's output;     \
       ||a_ij v_j|| without out_proj */                                                            \
    X(WEIGHTED_NORM, "weighted_norm", "weighted_norm (\u2016\u03b1\u00b7v\u00b7W_O\u2016)",        \
      SQUARE)                                                                                      \
    /* dropout @ V (n, hd) */                                                                      \
    X(CONTEXT, "context", "context (weights \u00b7 V)", HEAD)                                      \
    /* every head's context side by side (n, D) */                                                 \
    X(CONCAT, "concat", "concat (every head's context)", SHARED)                                   \
    /* concat Wo + bo (= concat without out_proj) (n, E) */                                        \
    X(OUTPUT, "output", "output", SHARED)                                                          \
    /* block: X + output (n, d_in) */                                                              \
    X(RESIDUAL1, "residual1", "residual1 (inputs + output)", BLOCK)                                \
    /* post: norm(residual1); pre: norm(X), attention's input */                                   \
    X(NORM1, "norm1", "norm1", BLOCK)                                                              \
    /* the FFN's first Linear (n, hidden) */                                                       \
    X(FFN_HIDDEN, "ffn_hidden", "ffn_hidden (x \u00b7 W1 + b1)", BLOCK)                            \
    /* swiglu: x W_gate and x W1 ("up") (n, hidden) */                                             \
    X(FFN_GATE, "ffn_gate", "ffn_gate (x \u00b7 W_gate)", BLOCK)                                   \
    X(FFN_UP, "ffn_up", "ffn_up (x \u00b7 W1)", BLOCK)                                             \
    /* relu or gelu of it; swiglu: silu(gate) * up */                                              \
    X(FFN_ACTIVATED, "ffn_activated", "ffn_activated", BLOCK)                                      \
    /* its second Linear (n, d_in) */                                                              \
    X(FFN_OUT, "ffn_out", "ffn_out (\u00b7 W2 + b2)", BLOCK)                                       \
    /* post: norm1 + ffn_out; pre: residual1 + ffn_out */                                          \
    X(RESIDUAL2, "residual2", "residual2 (+ ffn_out)", BLOCK)                                      \
    /* post: norm(residual2); pre: norm(residual1), the FFN's input */                             \
    X(NORM2, "norm2", "norm2", BLOCK)                                                              \
    /* the last layer's final norm of the block output (GPT-2's ln_f) */                           \
    X(FINAL_NORM, "final_norm", "final_norm (ln_f)", BLOCK)

enum attn_stage {
#define X(id, name, heading, kind) STAGE_##id,
    ATTN_STAGES(X)
#undef X
        STAGE_COUNT
};

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
/* The stage's kind (above). */
enum attn_stage_kind attn_stage_kind(enum attn_stage s);
/* True for the (n, n) token-by-token stages. */
bool attn_stage_is_square(enum attn_stage s);
/* True for stages that have one matrix per head. */
bool attn_stage_is_per_head(enum attn_stage s);
/* True for the block's stages after attention (residual1 .. final_norm). */
bool attn_stage_is_block(enum attn_stage s);

#endif
