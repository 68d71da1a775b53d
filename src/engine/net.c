/* net: the layers of a scene, each fed by the one before (see net.h). */
#include "engine/net.h"

#include <stdlib.h>
#include <string.h>

void attn_net_free(struct attn_net *net)
{
    for (int L = 0; L < net->layers; L++) {
        attn_model_free(&net->model[L]);
        attn_run_free(&net->run[L]);
    }
    free(net->model);
    free(net->run);
    memset(net, 0, sizeof(*net));
}

void attn_net_forward(struct attn_net *net)
{
    for (int L = 0; L < net->layers; L++) {
        struct attn_model *m = &net->model[L];
        if (L > 0) { /* layer L's input is what layer L - 1 hands on: (n, d_in) */
            const struct attn_model *prev = &net->model[L - 1];
            struct attn_mat_view v =
                attn_view(&net->run[L - 1], prev, attn_stage_block_output(prev), 0);
            for (int i = 0; i < v.rows; i++)
                memcpy(m->x + (size_t)i * m->d_in, v.data + (size_t)i * v.stride,
                       (size_t)m->d_in * sizeof(float));
        }
        attn_forward(&net->run[L], m);
    }
}

int attn_net_compute(struct attn_net *net, const struct attn_scene *s, struct diag *err)
{
    int layers = s->layers > 1 ? s->layers : 1;
    struct attn_net fresh = {layers, calloc((size_t)layers, sizeof(struct attn_model)),
                             calloc((size_t)layers, sizeof(struct attn_run))};
    if (!fresh.model || !fresh.run) {
        free(fresh.model);
        free(fresh.run);
        return diag_set(err, "", "out of memory for %d layers", layers);
    }
    if (attn_model_resolve_layers(fresh.model, layers, s, err)) {
        free(fresh.model);
        free(fresh.run);
        return -1;
    }
    /* Buffers of an unchanged shape move over (a live edit reallocates nothing); a failure
     * moves them back, so the old result stays intact. */
    for (int L = 0; L < layers; L++) {
        if (L < net->layers && attn_run_fits(&net->run[L], &fresh.model[L])) {
            fresh.run[L] = net->run[L];
            memset(&net->run[L], 0, sizeof(net->run[L]));
        } else if (attn_run_init(&fresh.run[L], &fresh.model[L], err)) {
            for (int k = 0; k < L && k < net->layers; k++)
                if (!net->run[k].q) {
                    net->run[k] = fresh.run[k];
                    memset(&fresh.run[k], 0, sizeof(fresh.run[k]));
                }
            attn_net_free(&fresh);
            return -1;
        }
    }
    attn_net_forward(&fresh);
    attn_net_free(net);
    *net = fresh;
    return 0;
}
