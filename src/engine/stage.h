/* stage: the steps of the attention pipeline, in order.
 *
 * Every consumer (print, export, the explorer's stage bar and inspector) walks this one list.
 */
#ifndef ATTNSCOPE_STAGE_H
#define ATTNSCOPE_STAGE_H

#include <stdbool.h>

enum attn_stage {
    STAGE_INPUTS,  /* X after positional encoding      (n, d_in)  shared */
    STAGE_QUERIES, /* X Wq + bq, this head's columns    (n, hd)    per head */
    STAGE_KEYS,    /*                                   (n, hd)    per head */
    STAGE_VALUES,  /*                                   (n, hd)    per head */
    STAGE_SCORES,  /* Q K^T                             (n, n)     per head */
    STAGE_SCALED,  /* scores / sqrt(d_k) (or divisor)    (n, n)     per head */
    STAGE_MASKED,  /* -inf above the diagonal; for mask_mode after_softmax: softmax with the
                      future zeroed (the book's masked_simple) */
    STAGE_WEIGHTS, /* normalised rows (sum to 1)         (n, n)     per head */
    STAGE_DROPOUT, /* weights * keep / (1 - p)           (n, n)     per head */
    STAGE_CONTEXT, /* dropout @ V                        (n, hd)    per head */
    STAGE_CONCAT,  /* all heads' context side by side   (n, D)     shared */
    STAGE_OUTPUT,  /* concat Wo + bo (= concat without out_proj) (n, D) shared */
    STAGE_COUNT
};

/* File-name style name: "inputs", "queries", ..., "context", "concat", "output". */
const char *attn_stage_name(enum attn_stage s);
/* Parses a attn_stage_name (also accepts "q", "k", "v", "softmax"); returns -1 when unknown. */
int attn_stage_parse(const char *name);
/* True for the (n, n) token-by-token stages. */
bool attn_stage_is_square(enum attn_stage s);
/* True for stages that have one matrix per head. */
bool attn_stage_is_per_head(enum attn_stage s);

#endif
