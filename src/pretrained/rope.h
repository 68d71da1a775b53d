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
    double base_local;             /* spec.local: the sliding layers' base (default RoPE) */
    int rotary_dims;               /* the first dims of a head that turn (partial rotary) */
    struct attn_rope_params scale; /* the rope type and its numbers, as the engine reads them */
};

/* What a family's config.json calls RoPE's keys, and what its model does with part of a head. */
struct ckpt_rope_spec {
    int head_dim, positions; /* a head's width; max_position_embeddings */
    /* the top-level names of the base and of the rotated share of a head: transformers'
     * "rope_theta" and "partial_rotary_factor" (NULL), or GPT-NeoX's "rotary_emb_base" and
     * "rotary_pct", which transformers 5 moves into rope_parameters */
    const char *theta_key, *partial_key;
    /* partial: the family's model turns a share of a head (partial_rotary_factor below 1), as
     * rotary_dims = int(head_dim * factor); else only 1 is taken (Llama's code would not even
     * broadcast another). partial_default: the share when no key gives it (NeoX's 0.25), 0: 1 */
    bool partial;
    double partial_default;
    /* Phi-3's rules: rope type default or longrope only, "su" and "yarn" its old names of
     * longrope; and original_max_position_embeddings, when no key gives it, is original_max
     * (Phi3Config's 4096) rather than max_position_embeddings */
    bool phi3;
    int original_max;
    /* Gemma 3's: the sliding-window layers have a RoPE of their own, default RoPE on a base of
     * their own: 4's top-level rope_local_base_freq (10000 by default), or 5's rope_parameters
     * {"full_attention": {...}, "sliding_attention": {...}}; the full layers' is the RoPE read */
    bool local;
};

/* Reads RoPE's keys of c (rope_theta, rope_scaling, rope_parameters, partial_rotary_factor and
 * Phi-3's top-level original_max_position_embeddings, or the family's names of them). longrope's
 * factors are copied into b. Every problem is located at config.json on its key; a field a rope
 * type does not take is a warning. */
int attn_ckpt_rope(struct ckpt_rope *out, struct ckpt_config *c, struct ckpt_backing *b,
                   const struct ckpt_rope_spec *spec, struct diag *err);

#endif
