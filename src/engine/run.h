/* run: struct attn_run's buffers (attention.h declares the calls); here the memo of the derived
 * stages, which the views (view.c) fill and the forward pass (forward.c) forgets. Internal to the
 * engine. */
#ifndef ATTNSCOPE_RUN_H
#define ATTNSCOPE_RUN_H

#include <stdbool.h>

/* The derived stage attn_view computed last, every head of it as it is asked for. data is
 * allocated for every head at once but calloc'ed: its pages cost memory only once a head is
 * written, so viewing one head costs one n x n matrix, the all-heads view one per head. */
struct attn_memo {
    int stage;             /* the derived stage held, or -1 for none */
    unsigned char *filled; /* (heads) 1 when that head's matrix is computed */
    float *data;           /* (heads, n, n) */
    /* weighted_norm's ||v_j W_O^h||, computed for a head the first time it is asked for. */
    unsigned char *vnorm_filled; /* (heads) */
    float *vnorm;                /* (heads, n) */
    float *vw;                   /* (n, D) scratch: one head's v W_O^h */
    /* Causal tiles: the forward pass computed only the scores a query can see; a head's others
     * (the future, above the panels) are computed the first time its scores are shown. */
    bool tiled;
    int panel;                    /* the panels' rows */
    unsigned char *future_filled; /* (heads) */
};

#endif
