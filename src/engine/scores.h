/* scores: the arithmetic of the (n, n) stages that the forward pass (forward.c) and the views of
 * the derived stages (view.c) share, so that the two agree to the bit; and the causal panels.
 * Internal to the engine. */
#ifndef ATTNSCOPE_SCORES_H
#define ATTNSCOPE_SCORES_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/model.h"

/* Causal work is cut into panels of attn_row_panel() queries (at most PANEL): panel p computes
 * the scores of its queries against keys 0 .. its last query, their softmax, and their context
 * from those keys only. The row-wise products of such a net run on the same panels (kernels.h's
 * attn_mm_ab_rows), so a prefix of panels is reused bit for bit (attn_forward_rows). 128 rows:
 * each panel's products pack the keys and values they read once for all its queries, and at 64
 * that packing cost more than the masked cells a taller panel computes (docs/performance.md). */
enum { PANEL = 128 };

/* True when the row-wise products run on row panels: a causal net computed panel by panel.
 * Every other scene keeps one product over all its rows. */
bool attn_row_panels(const struct attn_model *m);
/* The rows of a causal panel: attn_row_panel(), never above PANEL (the scratch is sized so). */
int attn_panel_rows(void);
/* True when the forward pass computes head h panel by panel, the future skipped: a causal mask
 * before a softmax, no sliding window. Anything else takes the full path. */
bool attn_causal_tiled(const struct attn_model *m);
/* True when query i may not see key j: the future of a causal mask, or a key the sliding
 * window has left behind. */
bool attn_hidden_key(const struct attn_model *m, int i, int j);
/* out (rows, cols) = each row of in normalised by softmax or by its sum. */
void attn_normalize_rows(float *out, const float *in, int rows, int cols, enum attn_normalize how);
/* The square stages are (n, n_kv): n_kv is n but in a cross-attention layer. */
/* out (n, n_kv) = one head's scaled scores: scores / divisor. */
void attn_scale_scores(float *out, const float *scores, const struct attn_model *m);
/* Head h's relative position bias (n, n_kv), or NULL; a row of it added to a row of scores (a
 * NULL row adds nothing). */
const float *attn_head_bias(const struct attn_model *m, int h);
void attn_add_bias_row(float *row, const float *bias_row, int count);
/* out (n, n_kv) = one head's biased stage: scaled + its position bias (NULL: scaled). */
void attn_bias_scores(float *out, const float *scores, const float *bias,
                      const struct attn_model *m);
/* out (n, n_kv) = one head's capped stage: cap * tanh(biased / cap), the scaled (and biased)
 * scores soft-capped (Gemma 2's attn_logit_softcapping). */
void attn_cap_scores(float *out, const float *scores, const float *bias,
                     const struct attn_model *m);
/* x (count) = cap * tanh(x / cap) in place, torch's three steps (/ cap, tanh, * cap): Gemma 2's
 * soft-capping of the scores and of the logits. */
void attn_softcap(float *x, size_t count, float cap);
/* attn_softcap of count scaled scores of a row, when m has a cap. */
void attn_softcap_row(float *row, int count, const struct attn_model *m);
/* -inf in row i's keys the sliding window has left behind (j <= i - window), before a causal
 * softmax of its prefix. */
void attn_hide_window(float *row, int i, const struct attn_model *m);
/* out (n, n_kv) = one head's masked stage from its scores and bias (see scores.c). */
void attn_mask_scores(float *out, const float *scores, const float *bias,
                      const struct attn_model *m);
/* out (count) = weights after dropout; keep: the mask of the same cells. */
void attn_drop_weights(float *out, const float *weights, const unsigned char *keep, size_t count,
                       const struct attn_model *m);
/* The KV head query head h reads. */
int attn_kv_head_of(const struct attn_model *m, int h);
/* The columns j0 .. j1 - 1 of row i a query reads. */
void attn_visible_cols(const struct attn_model *m, int i, int *j0, int *j1);

#endif
