/* stage: the steps of the pipeline.
 *
 * The enum lists every stage any scene can have; a scene has the ones its systems use, in an
 * order that can differ (a pre-norm block normalises before attention). attn_stage_order (in
 * attention.h) gives a computed scene's own list, which print, export and the explorer walk.
 */
#ifndef ATTNSCOPE_STAGE_H
#define ATTNSCOPE_STAGE_H

#include <stdbool.h>

enum attn_stage {
    STAGE_INPUTS,          /* X after positional encoding      (n, d_in)  shared */
    STAGE_LATENT,          /* MLA: c = X W_down                (n, r)     shared */
    STAGE_QUERIES,         /* X Wq + bq, this head's columns    (n, hd)    per head */
    STAGE_KEYS,            /* its KV head's columns            (n, hd)    per head */
    STAGE_VALUES,          /*                                   (n, hd)    per head */
    STAGE_QUERIES_NORMED,  /* qk_norm: q RMS-normalised over hd  (n, hd)    per head */
    STAGE_KEYS_NORMED,     /*                                   (n, hd)    per head */
    STAGE_QUERIES_ROTATED, /* RoPE: q rotated by position       (n, hd)    per head */
    STAGE_KEYS_ROTATED,    /*                                   (n, hd)    per head */
    STAGE_SCORES,          /* Q K^T                             (n, n)     per head */
    STAGE_SCALED,          /* scores / sqrt(d_k) (or divisor)    (n, n)     per head */
    STAGE_MASKED,          /* -inf above the diagonal; for mask_mode after_softmax: softmax with
                              the future zeroed (the book's masked_simple) */
    STAGE_WEIGHTS,         /* normalised rows (sum to 1)         (n, n)     per head */
    STAGE_DROPOUT,         /* weights * keep / (1 - p)           (n, n)     per head */
    STAGE_WEIGHTED_NORM,   /* |a_ij| * ||v_j W_O^h||_2 (Kobayashi et al. 2020): how far key j
                              moves query i's output; ||a_ij v_j|| without out_proj (n, n) per head */
    STAGE_CONTEXT,         /* dropout @ V                        (n, hd)    per head */
    STAGE_CONCAT,          /* all heads' context side by side   (n, D)     shared */
    STAGE_OUTPUT,          /* concat Wo + bo (= concat without out_proj) (n, E) shared */
    STAGE_RESIDUAL1,       /* block: X + output                  (n, d_in)  shared */
    STAGE_NORM1,           /* post: norm(residual1); pre: norm(X), attention's input */
    STAGE_FFN_HIDDEN,      /* the FFN's first Linear             (n, hidden) shared */
    STAGE_FFN_GATE,        /* swiglu: x W_gate                   (n, hidden) shared */
    STAGE_FFN_UP,          /* swiglu: x W1 ("up")                (n, hidden) shared */
    STAGE_FFN_ACTIVATED,   /* relu or gelu of it; swiglu: silu(gate) * up     shared */
    STAGE_FFN_OUT,         /* its second Linear                  (n, d_in)  shared */
    STAGE_RESIDUAL2,       /* post: norm1 + ffn_out; pre: residual1 + ffn_out */
    STAGE_NORM2,           /* post: norm(residual2); pre: norm(residual1), the FFN's input */
    STAGE_FINAL_NORM,      /* the last layer's final norm of the block output (GPT-2's ln_f) */
    STAGE_COUNT
};

/* The stage's one name: "inputs", "queries", ..., "weights", "context", "concat", "output". The
 * stage bar, the map heading, --stage, the inspector, file names and the README all use it. */
const char *attn_stage_name(enum attn_stage s);
/* The name for a narrow stage bar (80 columns): readable words, Q K V for the projections
 * ("Q", "scores", "weights", "concat", "res1"). */
const char *attn_stage_short_name(enum attn_stage s);
/* The stage as a heading or a picture's title calls it (UTF-8): its name, then what it is where
 * that helps: "scores (Q·Kᵀ)", "weights", "context (dropout · V)". */
const char *attn_stage_title(enum attn_stage s);
/* Parses a attn_stage_name (also accepts "q", "k", "v", "softmax"); returns -1 when unknown. */
int attn_stage_parse(const char *name);
/* True for the (n, n) token-by-token stages. */
bool attn_stage_is_square(enum attn_stage s);
/* True for stages that have one matrix per head. */
bool attn_stage_is_per_head(enum attn_stage s);
/* True for the block's stages after attention (residual1 .. final_norm). */
bool attn_stage_is_block(enum attn_stage s);

#endif
