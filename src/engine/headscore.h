/* headscore: the pattern scores interpretability work names heads by.
 *
 * Computed from a head's attention weights A (n x n, the softmax stage, before dropout). Every
 * score averages the rows i = 1 .. n-1: under a causal mask row 0 has a single choice.
 *   previous   mean A[i][i-1]                     a previous-token head
 *   induction  mean A[i][j+1] over the rows whose token occurred before, j its most recent
 *              earlier position: attending to what followed it last time (undefined without
 *              repeats)
 *   first      mean A[i][0]                       an attention sink on the first token
 *   self       mean A[i][i]
 *   entropy    mean of -sum_j A[i][j] ln A[i][j]  nats; low = focused
 */
#ifndef ATTNSCOPE_HEADSCORE_H
#define ATTNSCOPE_HEADSCORE_H

#include <stdbool.h>

#include "engine/attention.h"

enum head_score {
    SCORE_PREVIOUS,
    SCORE_INDUCTION,
    SCORE_FIRST,
    SCORE_SELF,
    SCORE_ENTROPY,
    SCORE_COUNT
};

struct head_scores {
    double value[SCORE_COUNT];
    bool defined[SCORE_COUNT]; /* false: no row to average (n = 1, or no repeated token) */
};

/* Scores of the weights w (n x n) of a sequence whose token identities are ids (n). */
void attn_head_scores(struct head_scores *out, struct attn_mat_view w, const int *ids);
/* "previous", "induction", "first", "self", "entropy". */
const char *attn_head_score_name(enum head_score s);
/* Parses a name above; -1 when unknown. */
int attn_head_score_parse(const char *name);

#endif
