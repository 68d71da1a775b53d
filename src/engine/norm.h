/* norm: the norms and elementwise steps of a layer, split among the pool's threads so that the
 * split changes no bit (attention.h declares attn_norm_rows, attn_final_norm_rows and
 * attn_activate). Internal to the engine. */
#ifndef ATTNSCOPE_NORM_H
#define ATTNSCOPE_NORM_H

#include <stddef.h>

#include "engine/model.h"

/* qk_norm: rows first .. n - 1 of x (n, width) RMS-normalised in groups group wide, times w
 * (group): each head (group head_dim, Qwen3's q_norm and k_norm) or the whole row (group
 * width, OLMo 2's). */
void attn_norm_heads(float *out, const float *x, int width, int group, const struct attn_model *m,
                     const float *w, int first);
/* out (count) = a + b, element by element: a residual sum. */
void attn_elem_add(float *out, const float *a, const float *b, size_t count);
/* out (count) = act(gate) * up, element by element: a gated FFN's activation, SwiGLU's (SiLU)
 * or GeGLU's (gelu_tanh). */
void attn_gated(float *out, const float *gate, const float *up, size_t count,
                enum attn_activation act);

#endif
