/* net: a scene's whole computation, layer after layer.
 *
 * A scene with `layers: N` stacks N layers of attention (and block); layer L + 1 reads what
 * layer L hands on (attn_stage_block_output). struct attn_net owns one model and one run per
 * layer; everything that shows one layer (print, export, the explorer) works on
 * net->model[L] and net->run[L] with the single-layer API of attention.h.
 */
#ifndef ATTNSCOPE_NET_H
#define ATTNSCOPE_NET_H

#include "engine/attention.h"
#include "engine/model.h"

struct attn_net {
    int layers;
    struct attn_model *model; /* (layers) */
    struct attn_run *run;     /* (layers) */
    /* What the models were made from, so an edit that changes only options that draw nothing
     * (dropout, the mask, the scale) copies their numbers instead of drawing them again. */
    struct attn_scene *from;
    struct attn_rng after_params; /* the generator before the dropout draws */
    /* Told of every head the forward pass finishes (every layer's, in order); kept by
     * attn_net_compute. step NULL: no feedback. */
    struct progress_sink progress;
};

/* Resolves every layer of s, sizes the runs (keeping buffers whose shape is unchanged) and
 * runs the forward pass. net must be zeroed or valid; on failure it is left as it was. */
int attn_net_compute(struct attn_net *net, const struct attn_scene *s, struct diag *err);
/* The forward pass of every layer, in order. Never allocates. */
void attn_net_forward(struct attn_net *net);
void attn_net_free(struct attn_net *net);

#endif
