/* interp: what the explorer shows of a head's part in the prediction, kept between frames.
 *
 * The predictions panel (p), the logit lens (y) and the attention rollout (r) read the result
 * on screen through the engine (engine/logits.h, net.h). Logits are a row of d x vocab
 * multiply-adds each (GPT-2 small: 38.6 M, the unembedding read once), so nothing here is
 * worked out per frame: a position's top k is computed once per result, layer, position and
 * temperature and kept (a few rows, the panel's and the lens's); the lens grid fills only the
 * positions a view has shown, a block of them at once; the rollout is computed once per result
 * and layer. A cursor move costs at most one row of logits, and one more with an ablation on
 * (the run without it). No curses and no struct app: the explorer's state (explore/app.h)
 * holds a struct interp_cache and passes its result and generation.
 */
#ifndef ATTNSCOPE_EXPLORE_INTERP_H
#define ATTNSCOPE_EXPLORE_INTERP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/logits.h"
#include "engine/net.h"

#define INTERP_TOP  10 /* entries a position keeps: the panel shows as many as fit */
#define INTERP_ROWS 4  /* positions kept at once (the panel's, the lens pick's, ...) */

/* The temperature knob: from INTERP_T_MIN to INTERP_T_MAX, + and - step by INTERP_T_STEP. */
#define INTERP_T_MIN  0.01
#define INTERP_T_MAX  100.0
#define INTERP_T_STEP 0.1

/* "Before -> after" at a position with a head ablated: the token compared (the actual next
 * one; at the last position, which has none, the run without ablations' top-1), its
 * probability and rank without the ablations and with them. */
struct interp_compare {
    int id;
    bool is_next;
    double before, after;
    int before_rank, after_rank;
};

/* One position's predictions at one layer and temperature. */
struct interp_row {
    bool valid;
    unsigned long generation;
    int layer, pos;
    double temperature;
    unsigned long used;        /* when it was last asked for: the oldest goes first */
    struct attn_predictions p; /* count 1, k INTERP_TOP (fewer for a small vocabulary) */
    bool compared;             /* compare is set (asked for separately) */
    struct interp_compare compare;
};

struct interp_cache {
    struct interp_row rows[INTERP_ROWS];
    unsigned long clock;
    unsigned long computed; /* rows of logits worked out so far (tests: a redraw adds none) */
    /* The logit lens: every layer's top-1 of the positions shown so far. */
    unsigned long lens_generation;
    double lens_temperature;
    int lens_layers, lens_n;
    struct attn_token_score *lens_top; /* (layers, n) */
    unsigned char *lens_next;          /* (layers, n) 1: the top-1 is the actual next token */
    unsigned char *lens_done;          /* (n) position filled for every layer */
    /* The attention rollout through layer rollout_layer, and through the layer before. */
    unsigned long rollout_generation;
    int rollout_layer, rollout_n;
    bool rollout_valid;
    float *rollout, *rollout_prev; /* (n, n) each; prev only for layer > 0 */
    /* The last layer's residual stream of the run without ablations: "before". */
    unsigned long clean_generation;
    bool clean_valid;
    float *clean; /* (n, d_in) */
    size_t clean_cap;
};

void interp_cache_free(struct interp_cache *c);

/* The predictions of `layer`'s residual stream at position pos (the last layer: the model's;
 * any other: the lens) at temperature T, top INTERP_TOP: computed when not kept for this
 * result (gen), layer, position and T. NULL with err when it cannot be (no vocabulary, out of
 * memory). Valid until the next call. */
const struct attn_predictions *interp_predict(struct interp_cache *c, const struct attn_net *net,
                                              unsigned long gen, int layer, int pos, double T,
                                              struct diag *err);

/* True when some head of net hands out_proj something else than its context (an ablation). */
bool interp_any_ablated(const struct attn_net *net);

/* Keeps the last layer's residual stream of net run without its ablations, for "before": the
 * layers from the first ablated one run again with every zeroed or averaged head kept, in a
 * run of their own fed by that layer's input (the net's own calls, so its bits; one layer's
 * buffers, reused), the net untouched. Nothing to do (and nothing kept) when no head is
 * ablated or there is no vocabulary. Called once per result (gen), on any thread that may read
 * the net. Returns 0, or -1 with err (out of memory: no "before"). */
int interp_keep_clean(struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                      struct diag *err);
/* Before -> after at pos and T (struct interp_compare), from the kept stream: a row of logits
 * of the run without ablations, and at the last position one more of the run itself; kept with
 * the position's row. Returns 0, or -1 when no run without ablations is kept for gen (nothing
 * is ablated) or a computation failed (err). */
int interp_compare(struct interp_cache *c, const struct attn_net *net, unsigned long gen, int pos,
                   double T, struct interp_compare *out, struct diag *err);

/* Fills the lens grid for positions pos0 .. pos0 + count - 1 (every layer, top-1 at T): the
 * blocks of LENS_BLOCK positions from 0 that hold them and are not yet filled for this result
 * and temperature, a block a layer at once. Returns 0, or -1 with err. */
#define LENS_BLOCK 8
int interp_lens_fill(struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                     double T, int pos0, int count, struct diag *err);
/* The lens's top-1 of layer at pos, NULL when not filled; *is_next: it is the actual next
 * token. */
/* True when interp_lens_fill of these would compute nothing: every position's block filled for
 * this result and temperature. */
bool interp_lens_filled(const struct interp_cache *c, const struct attn_net *net, unsigned long gen,
                        double T, int pos0, int count);
const struct attn_token_score *interp_lens_top(const struct interp_cache *c, int layer, int pos,
                                               bool *is_next);

/* The attention rollout through layer (net.h, attn_net_rollout), computed once per result and
 * layer (from the layer before when that one is kept). rows = 0 with err on out-of-memory. */
struct attn_mat_view interp_rollout(struct interp_cache *c, struct attn_net *net, unsigned long gen,
                                    int layer, struct diag *err);
/* The rollout through layer kept for gen (what interp_rollout last made), or rows = 0 when none
 * is: a reader that only shows what is on screen (the inspector) computes nothing. */
struct attn_mat_view interp_rollout_kept(const struct interp_cache *c, unsigned long gen,
                                         int layer);
/* The rollout through the layer before the one interp_rollout last gave (what its layer's
 * A' multiplies), or rows = 0 (layer 0, or none kept for gen). */
struct attn_mat_view interp_rollout_prev(const struct interp_cache *c, unsigned long gen);

#endif
