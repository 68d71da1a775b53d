/* stage: the steps of the attention pipeline, in order.
 *
 * Every consumer (print, export, the explorer's stage bar and inspector) walks this one list.
 */
#ifndef ATTNSCOPE_STAGE_H
#define ATTNSCOPE_STAGE_H

#include <stdbool.h>

enum stage {
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
const char *stage_name(enum stage s);
/* Parses a stage_name (also accepts "q", "k", "v", "softmax"); returns -1 when unknown. */
int stage_parse(const char *name);
/* True for the (n, n) token-by-token stages. */
bool stage_is_square(enum stage s);
/* True for stages that have one matrix per head. */
bool stage_is_per_head(enum stage s);

#endif
