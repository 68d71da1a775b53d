/* picture: views as SVG pictures (see picture.h). */
#include "explore/picture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "engine/scene.h"
#include "export/svg.h"

const char *picture_stage_title(const struct attn_model *m, enum attn_stage s)
{
    if (s == STAGE_INPUTS)
        return m->pos ? "inputs (embeddings + positions)" : "inputs (token embeddings)";
    if (s == STAGE_MASKED && m->causal && m->mask_mode == MASK_AFTER_SOFTMAX)
        return "masked (softmax, future zeroed)";
    /* what a block's last stages add depends on where its norms sit */
    if (s == STAGE_FFN_OUT && m->n_experts > 0)
        return "ffn_out (the chosen experts, weighted)";
    if (s == STAGE_RESIDUAL2 && m->block)
        switch (m->order) {
        case BLOCK_PARALLEL:
            return "residual2 (inputs + output + ffn_out)";
        case BLOCK_POST_BRANCH:
            return "residual2 (+ norm2)";
        case BLOCK_SANDWICH:
            return "residual2 (+ ffn_out_normed)";
        case BLOCK_POST:
        case BLOCK_PRE:
            break;
        }
    if (s == STAGE_RESIDUAL1 && m->block && m->order == BLOCK_POST_BRANCH)
        return "residual1 (inputs + norm1)";
    if (s == STAGE_RESIDUAL1 && m->block && m->order == BLOCK_SANDWICH)
        return "residual1 (inputs + output_normed)";
    return attn_stage_title(s);
}

void picture_file_name(char *out, size_t size, const char *stem, const struct attn_net *net,
                       const struct picture_view *v)
{
    char head[32], layer[32] = "", scale[16] = "";
    if (!attn_stage_is_per_head(v->stage) || net->model[v->layer].heads == 1)
        snprintf(head, sizeof(head), "%s", attn_stage_is_per_head(v->stage) ? "-head0" : "");
    else if (v->head == PICTURE_ALL_HEADS)
        snprintf(head, sizeof(head), "-all-heads");
    else if (v->head == PICTURE_HEAD_MEAN)
        snprintf(head, sizeof(head), "-mean");
    else
        snprintf(head, sizeof(head), "-head%d", v->head);
    if (net->layers > 1)
        snprintf(layer, sizeof(layer), "-layer%d", v->layer);
    if (v->scale != SCALE_BY_MATRIX)
        snprintf(scale, sizeof(scale), "-%s", palette_scale_name(v->scale));
    snprintf(out, size, "%s-%s%s%s%s.svg", stem, attn_stage_name(v->stage), head, layer, scale);
}

/* Labels of n tokens as the explorer shows them (a blank as a visible glyph); NULL out of
 * memory. */
static char **token_labels(char *const *tokens, int n)
{
    char **labels = calloc((size_t)(n > 0 ? n : 1), sizeof(*labels));
    for (int i = 0; labels && i < n; i++) {
        size_t size = 3 * strlen(tokens[i]) + 5; /* a glyph for every byte, and room */
        labels[i] = malloc(size);
        if (!labels[i])
            return labels; /* the caller frees what there is and reports */
        attn_utf8_visible_token(labels[i], size, tokens[i]);
    }
    return labels;
}

static void free_labels(char **labels, int n)
{
    for (int i = 0; labels && i < n; i++)
        free(labels[i]);
    free(labels);
}

int picture_write(const char *path, bool overwrite, const struct attn_net *net, const char *title,
                  const struct picture_view *v, struct diag *err)
{
    const struct attn_model *m = &net->model[v->layer];
    const struct attn_run *r = &net->run[v->layer];
    bool per_head = attn_stage_is_per_head(v->stage);
    /* A stage the heads share is one matrix, whatever was asked. */
    bool all = per_head && v->head == PICTURE_ALL_HEADS && m->heads > 1;
    bool mean = per_head && v->head == PICTURE_HEAD_MEAN && m->heads > 1;
    int head = per_head && v->head >= 0 ? v->head : 0;
    int n_tiles = all ? m->heads : 1;

    struct attn_mat_view shape = attn_view(r, m, v->stage, 0);
    struct svg_tile *tiles = calloc((size_t)n_tiles, sizeof(*tiles));
    char(*tile_labels)[48] = calloc((size_t)n_tiles, sizeof(*tile_labels));
    float *mean_data =
        mean ? malloc((size_t)shape.rows * (size_t)shape.cols * sizeof(float)) : NULL;
    /* the rows' tokens, and the keys' (a cross-attention's: the source's) */
    int n_rows = attn_stage_rows(m, v->stage);
    char **rows = token_labels(attn_stage_row_tokens(m, v->stage), n_rows);
    char **keys = token_labels(attn_model_key_tokens(m), m->n_kv);
    bool square = attn_stage_is_square(v->stage);
    int rc = -1;
    bool labels_ok = rows && keys;
    for (int i = 0; labels_ok && i < n_rows; i++)
        labels_ok = rows[i] != NULL;
    for (int i = 0; labels_ok && i < m->n_kv; i++)
        labels_ok = keys[i] != NULL;
    if (!tiles || !tile_labels || (mean && !mean_data) || !labels_ok) {
        attn_diag_file(err, path, "out of memory");
        goto done;
    }
    if (mean) {
        attn_head_mean(mean_data, r, m, v->stage);
        tiles[0].v = (struct attn_mat_view){mean_data, shape.rows, shape.cols, shape.cols};
    }
    for (int t = 0; !mean && t < n_tiles; t++) {
        int h = all ? t : head;
        tiles[t].v = attn_view(r, m, v->stage, h);
        if (v->stage == STAGE_DROPOUT && m->keep)
            tiles[t].keep = m->keep + (size_t)h * (size_t)m->n * (size_t)m->n_kv;
        if (!all)
            continue;
        /* Who shares a KV head, as the explorer's tiles say it. */
        if (m->kv_heads < m->heads && v->stage != STAGE_QUERIES)
            snprintf(tile_labels[t], sizeof(tile_labels[t]), "head %d \u00b7 KV %d", h,
                     h / (m->heads / m->kv_heads));
        else
            snprintf(tile_labels[t], sizeof(tile_labels[t]), "head %d", h);
        tiles[t].label = tile_labels[t];
    }

    /* Stage, head(s), layer, shape; a stage the heads share names no head. */
    char who[96] = "", layer[64], subtitle[400];
    if (all)
        snprintf(who, sizeof(who), " \u00b7 all %d heads", m->heads);
    else if (mean)
        snprintf(who, sizeof(who), " \u00b7 mean of the %d heads", m->heads);
    else if (per_head)
        snprintf(who, sizeof(who), " \u00b7 head %d of %d", head, m->heads);
    char
        name[48]; /* "layer 3 of 12"; an encoder-decoder's "decoder layer 1, self-attention of 2" */
    attn_net_layer_name(name, sizeof(name), net, v->layer, false);
    snprintf(layer, sizeof(layer), "%.40s of %d", name,
             net->encoder ? net->layers / 2 : net->layers);
    snprintf(subtitle, sizeof(subtitle), "%s%s \u00b7 %s \u00b7 %d\u00d7%d",
             picture_stage_title(m, v->stage), who, layer, shape.rows, shape.cols);

    struct svg_picture p = {
        .title = title,
        .subtitle = subtitle,
        .row_labels = rows,
        .col_labels = square ? keys : NULL,
        .row_axis = square ? "queries" : "tokens",
        .col_axis = square ? "keys" : "dimensions",
        .tiles = tiles,
        .n_tiles = n_tiles,
        .scale = v->scale,
        .values = v->values,
        .seq_scale = v->seq_scale,
        .div_scale = v->div_scale,
    };
    rc = svg_write_file(path, overwrite, &p, err);
done:
    free_labels(rows, n_rows);
    free_labels(keys, m->n_kv);
    free(mean_data);
    free(tile_labels);
    free(tiles);
    return rc;
}
