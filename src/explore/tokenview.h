/* tokenview: the token view without a terminal (BertViz's head view, in text).
 *
 * The question a class asks first: what does this word look at? For the cursor's row (the
 * query) of an n x n stage, this works out which keys it sees (the causal mask hides the
 * future), the k largest of them in order, and which stretch of the sentence fits the panel
 * around the query when the whole sentence does not. The top k are a partial selection (a heap
 * of k: O(n log k)), kept per result, layer, stage, head and row, so a redraw never redoes it
 * and a cursor move costs one pass over one row. The window is laid out from the query
 * outwards, never from token 0, so it costs what the panel holds, not what the sentence does.
 */
#ifndef ATTNSCOPE_EXPLORE_TOKENVIEW_H
#define ATTNSCOPE_EXPLORE_TOKENVIEW_H

#include <stdbool.h>

#include "engine/attention.h"
#include "explore/app.h"
#include "explore/range.h" /* RANGE_ROLLOUT */

#define TOKENVIEW_MEAN    -3 /* the head of the mean over the heads (A), as range_get names it */
#define TOKENVIEW_ROLLOUT RANGE_ROLLOUT /* the rollout (r), as range_get names it */

/* The matrix the token view reads: the rollout when the map shows it (r), the mean over the
 * heads when the map shows it (A), else the current head at the current stage (in the
 * all-heads and model views, the selected tile's). *head says which: a head, TOKENVIEW_MEAN or
 * TOKENVIEW_ROLLOUT. */
struct attn_mat_view tokenview_matrix(struct app *a, int *head);

/* True when the token view has something to show at stage s: the n x n stages (scores,
 * scaled, masked, weights, dropout), where every key has a value for the query. */
bool tokenview_applies(enum attn_stage s);

/* The keys query `row` sees at stage s of model m, [*start, *end): from the mask stage on (masked,
 * weights, dropout and weighted_norm, which is made of the weights) the causal mask hides the
 * future (keys past row) and a sliding window the keys it has left behind (row - j >= window),
 * as the weights stage does; before it (scores, scaled) every key is there. Non-finite values
 * count as hidden wherever they are. */
void tokenview_visible(const struct attn_model *m, enum attn_stage s, int row, int *start,
                       int *end);

/* The k largest finite values among row[start .. end - 1], their indices into out, largest first
 * (ties: the earlier key first). A bounded heap: O(n log k), no allocation. Returns how many
 * were written: k, or fewer when fewer keys are visible. */
int tokenview_top_k(int *out, int k, const float *row, int start, int end);

/* What a full bar stands for. */
enum tokenview_bars {
    TOKENVIEW_BARS_SHARE,   /* a distribution (weights, dropout): a full bar is 1 */
    TOKENVIEW_BARS_LARGEST, /* values >= 0: a full bar is the largest */
    TOKENVIEW_BARS_RANGE,   /* signed (scores): from the smallest to the largest */
};

/* True when the rows of stage s are distributions over the keys (summing to 1, or to 1 / (1 - p)
 * for dropout): the weights, dropout, and the mask applied after the softmax. */
bool tokenview_is_distribution(const struct attn_model *m, enum attn_stage s);

/* What the view shows for one query, cached: recomputed only when the result, the layer, the
 * stage, the head or the row changed, or more keys are asked for than were kept. */
struct tokenview_focus {
    unsigned long generation; /* app->result.generation it was computed for */
    int layer, stage, head;   /* head TOKENVIEW_MEAN: the mean over the heads */
    int row;
    bool valid;
    int *top;               /* key indices, largest value first */
    int n_top;              /* entries of top (at most the k asked for) */
    int k;                  /* the k it was computed for */
    int cap;                /* room in top */
    int seen;               /* keys the query sees (not masked) */
    int visible_start;      /* keys before it are masked (a sliding window; tokenview_visible) */
    int visible_end;        /* keys from here on are masked (the future) */
    float lo, hi;           /* finite range of the keys it sees */
    bool distribution;      /* tokenview_is_distribution at its stage */
    float row_lo, row_hi;   /* finite range of the whole row: the map's row scale */
    unsigned long computed; /* how many times it was worked out (tests: redraws add nothing) */
};

void tokenview_focus_free(struct tokenview_focus *f);
/* The focus on row `row` of matrix v (stage s, head `head` of the current layer of a), with at
 * least k of its keys in top when it sees that many. Returns 0, or -1 when out of memory (f is
 * then invalid). */
int tokenview_focus_get(struct tokenview_focus *f, const struct app *a, struct attn_mat_view v,
                        int head, int row, int k);

/* What a full bar stands for in a focus: a distribution's bars are shares of 1 (a query that
 * spreads its attention has short bars, one that focuses a long one) unless per_row (the row
 * colour scale, C: each query on its own scale), or past 1 (dropout's 1 / (1 - p)); values
 * >= 0 are shares of the largest; signed ones lie from the smallest to the largest. */
enum tokenview_bars tokenview_bars_kind(const struct tokenview_focus *f, bool per_row);
/* The bar of value v, 0..1, on that scale. */
double tokenview_bar_fraction(const struct tokenview_focus *f, enum tokenview_bars kind, float v);

/* Sentence layout: token i takes widths[i] columns, one blank between tokens, wrapped into rows
 * of `width` columns; a token wider than a row is cut to it. */
#define TOKENVIEW_GAP 1

/* Where the next token of width w goes, given where the last one ended: moves (*row, *x) to
 * its start and returns the columns it takes (w, or width when cut). */
int tokenview_place(int w, int width, int *row, int *x);
/* The last token laid out from `first` into `rows` rows (first - 1 when not even that fits).
 * Stops at the box's end: costs the tokens that fit, not n. */
int tokenview_fill(const int *widths, int n, int first, int rows, int width);

/* The tokens first..last (inclusive) on screen; windowed when they are not all n. */
struct tokenview_window {
    int first, last;
    bool windowed;
};

/* The stretch of the sentence shown in a box of rows x width around token `query`: all of it
 * when it fits; else the window that showed prev_first (-1: none), as long as the query is
 * still in it, or a new one with the query in its middle; a window reaching the last token
 * starts as early as still reaches it, so no rows go unused. */
void tokenview_window(struct tokenview_window *out, const int *widths, int n, int query, int rows,
                      int width, int prev_first);

#endif
