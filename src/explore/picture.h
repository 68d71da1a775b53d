/* picture: a view of the explorer as an SVG picture (export/svg).
 *
 * `attnscope render` and the explorer's R key describe the same thing: a layer, a stage, one
 * head, the mean over the heads or every head of the layer, a colour scale. picture_write
 * turns that into a picture with the scene's title, the tokens as labels and one tile per
 * head, in the explorer's colours, and writes it all or nothing.
 */
#ifndef ATTNSCOPE_EXPLORE_PICTURE_H
#define ATTNSCOPE_EXPLORE_PICTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/attention.h"
#include "engine/net.h"
#include "palette/palette.h"

/* picture_view.head besides a head's index (range_cache's numbering). */
enum { PICTURE_ALL_HEADS = -1, PICTURE_HEAD_MEAN = -3 };

struct picture_view {
    int layer;
    enum attn_stage stage; /* must be present in that layer */
    int head;              /* 0 .. heads - 1, PICTURE_ALL_HEADS or PICTURE_HEAD_MEAN */
    enum color_scale scale;
    bool values;              /* each cell's value in it */
    int seq_scale, div_scale; /* the colour scales colors.yaml chose (0: viridis, blue-red) */
};

/* The stage as the heatmap's title names it in model m ("attention weights", "inputs:
 * embeddings + positions", "softmax, future zeroed"). */
const char *picture_stage_title(const struct attn_model *m, enum attn_stage s);

/* Writes view v of net (computed) to path as SVG, titled `title` (the scene's name). With
 * overwrite false an existing path is refused. Returns 0, or -1 with err naming the file. */
int picture_write(const char *path, bool overwrite, const struct attn_net *net, const char *title,
                  const struct picture_view *v, struct diag *err);

/* The file name of a view without its folder: "<stem>-<stage>-<head0|all-heads|mean>[-layerL]
 * [-row|-log].svg", stem the scene file's name without ".yaml" ("default" without a file). */
void picture_file_name(char *out, size_t size, const char *stem, const struct attn_net *net,
                       const struct picture_view *v);

#endif
