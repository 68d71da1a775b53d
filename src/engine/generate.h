/* generate: a model writing, one token at a time.
 *
 * Each step reads the logits of the last position (logits.h), chooses a token, appends it to
 * the scene (attn_scene_append_id) and computes its row in every layer: the explorer's last-word
 * path (net.h's near path), which reads the keys and values the earlier rows left, the KV cache.
 * A step so costs one row of every layer, not a forward pass.
 *
 * Choosing (docs/interpretability.md, "Generation"):
 *   greedy   the highest logit, ties to the lower id;
 *   sampled  p = softmax(logits / T) in double; the tokens in order of logit (ties: lower id
 *            first); top_k keeps the first k; top_p then keeps the shortest prefix of those whose
 *            probability, renormalised over them, reaches top_p; u, float number p of
 *            torch.rand's stream from the seed for the token at position p
 *            (attn_generation_draw), picks the first token whose running sum of kept
 *            probability passes u times their total.
 */
#ifndef ATTNSCOPE_GENERATE_H
#define ATTNSCOPE_GENERATE_H

#include <stdbool.h>

#include "common/diag.h"
#include "engine/net.h"
#include "engine/rng.h"

struct attn_sampling {
    bool greedy;
    double temperature; /* > 0 (sampled) */
    int top_k;          /* 0: every token */
    double top_p;       /* (0, 1]; 1: every token top_k kept */
};

/* The token a step chose. */
struct attn_choice {
    int id;
    float logit;
    double prob; /* softmax(logits / T) before top_k and top_p (T = 1 when greedy) */
    int rank;    /* 1-based, in the order of logit, ties lower id first */
};

/* out = the next token from logits (vocab floats) as sp says; u in [0, 1) is the draw (read only
 * when sampled). scratch: (2 vocab) ints. A NaN logit comes last in the order (the forward
 * pass's finite check refuses one before a step reads it). */
void attn_choose_token(struct attn_choice *out, const float *logits, int vocab,
                       const struct attn_sampling *sp, double u, int *scratch);

/* The draw u that chooses the token at position (sampled): float number position (from 0) of
 * torch.rand's stream seeded with seed. A token's draw depends on its seed and place alone, so
 * generate and the explorer's g (and an undo and g again) choose the same token. */
double attn_generation_draw(uint64_t seed, int position);

/* One generation's state: the net and scene it extends, and its scratch. */
struct attn_generation {
    struct attn_net *net;
    struct attn_scene *scene;
    struct attn_sampling sampling;
    uint64_t seed;
    float *logits; /* (vocab) */
    int *heap;     /* (2 vocab): attn_choose_token's scratch */
    int vocab;
};

/* Sets net, before its first compute, as generation wants it: stream mode (every layer keeps
 * its input, keys, values and output, and the n x n stages of two layers only; its buffers
 * sized a panel ahead, so most steps move no memory) and the near path (a step's one row). */
void attn_generation_net(struct attn_net *net);
/* Starts a generation on net, computed from scene (a vocabulary model's, causal) after
 * attn_generation_net, and seeds the draws. Returns 0, or -1 with err. */
int attn_generation_begin(struct attn_generation *g, struct attn_net *net, struct attn_scene *scene,
                          const struct attn_sampling *sp, uint64_t seed, struct diag *err);
/* The next token, chosen from the last position's logits, without appending it. */
int attn_generation_choose(struct attn_generation *g, struct attn_choice *out, struct diag *err);
/* Appends id to the scene and computes its row of every layer. Returns 0, or -1 with err (the
 * scene and the net as they were). */
int attn_generation_append(struct attn_generation *g, int id, struct diag *err);
void attn_generation_end(struct attn_generation *g);

/* Appends count tokens to s, each the model's most likely (fewer when it chooses its
 * end-of-text token), computed as the steps above: what a lesson step's generate: makes, here
 * without the explorer. s must pass attn_scene_why_no_next and have room for count more in its
 * context. Returns 0, or -1 with err and s as it was. */
int attn_scene_generate(struct attn_scene *s, int count, struct diag *err);

#endif
