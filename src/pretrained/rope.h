/* rope: RoPE's parameters from config.json, in both of transformers' formats.
 *
 * transformers 4 writes rope_theta and rope_scaling ({"rope_type" (or "type"), and the scaling's
 * fields}) at the top level; transformers 5 writes rope_parameters ({"rope_theta", "rope_type"
 * and the scaling's fields}). Both are read, and where both are written every field they share
 * must agree: two versions of transformers would compute two things, and the file is refused.
 */
#ifndef ATTNSCOPE_ROPE_H
#define ATTNSCOPE_ROPE_H

#include "common/diag.h"
#include "engine/scene.h"
#include "pretrained/ckpt.h"

struct ckpt_rope {
    double theta;                  /* rope_theta: the base */
    struct attn_rope_params scale; /* the rope type and its numbers, as the engine reads them */
};

/* Reads RoPE's keys of c (rope_theta, rope_scaling, rope_parameters, partial_rotary_factor and
 * Phi-3's top-level original_max_position_embeddings) for heads head_dim wide and a checkpoint of
 * positions (max_position_embeddings). longrope's factors are copied into b. Every problem is
 * located at config.json on its key; a field a rope type does not take is a warning. */
int attn_ckpt_rope(struct ckpt_rope *out, struct ckpt_config *c, struct ckpt_backing *b,
                   int head_dim, int positions, struct diag *err);

#endif
