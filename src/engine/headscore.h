/* headscore: the pattern scores interpretability work names heads by.
 *
 * Computed from a head's attention weights A (n x n, the softmax stage, before dropout). Every
 * score averages the rows i = 1 .. n-1: under a causal mask row 0 has a single choice.
 *   previous   mean A[i][i-1]                     a previous-token head
 *   induction  mean A[i][j+1] over the rows whose token occurred before, j its most recent
 *              earlier position: attending to what followed it last time (not given on fewer
 *              than ATTN_INDUCTION_MIN_ROWS such rows)
 *   first      mean A[i][0]                       an attention sink on the first token
 *   self       mean A[i][i]
 *   entropy    mean of -sum_j A[i][j] ln A[i][j]  nats; low = focused
 */
#ifndef ATTNSCOPE_HEADSCORE_H
#define ATTNSCOPE_HEADSCORE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/attention.h"

enum head_score {
    SCORE_PREVIOUS,
    SCORE_INDUCTION,
    SCORE_FIRST,
    SCORE_SELF,
    SCORE_ENTROPY,
    SCORE_COUNT
};

/* An induction score on a few repeats measures something else: on the book's sentence (two
 * pieces repeat) a layer-0 head that looks a few tokens back scored 0.54, second of 32, from 2
 * rows. Below this many rows whose token occurred before, no induction score is given; a text
 * that repeats itself (a passage read twice) has dozens. */
#define ATTN_INDUCTION_MIN_ROWS 8

struct head_scores {
    double value[SCORE_COUNT];
    bool defined[SCORE_COUNT]; /* false: fewer rows than the score needs (min_rows below) */
    int rows[SCORE_COUNT];     /* the rows it averages: 1 .. n-1, and for induction those whose
                                  token occurred before (the same for every head of a text) */
    bool cross; /* the weights were not square (cross-attention): the entropy alone is given */
};

/* Scores of the weights w (n x n) of a sequence whose token identities are ids (n). */
void attn_head_scores(struct head_scores *out, struct attn_mat_view w, const int *ids);
/* attn_head_scores of count heads' weights w[t] of one text, out[t] the same numbers, on the
 * pool's threads (a layer of GPT-2 small at 1024 tokens: 12 heads, 6 M logarithms). */
void attn_head_scores_many(struct head_scores *out /*(count)*/,
                           const struct attn_mat_view *w /*(count)*/, int count, const int *ids);
/* The rows a score must average to be given: ATTN_INDUCTION_MIN_ROWS for induction, else 1. */
int attn_head_score_min_rows(enum head_score s);
/* Why score s is not given, in the words every front end uses ("induction: 2 rows repeat an
 * earlier token, fewer than the 8 the score needs"); "" when it is given. */
void attn_head_score_why(char *out, size_t size, const struct head_scores *sc, enum head_score s);
/* "previous", "induction", "first", "self", "entropy". */
const char *attn_head_score_name(enum head_score s);
/* Parses a name above; -1 when unknown. */
int attn_head_score_parse(const char *name);

#endif
