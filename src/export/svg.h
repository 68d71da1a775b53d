/* svg: heatmaps as SVG pictures, ready for slides.
 *
 * A picture is one or more matrices of the same shape (a head, or every head of a layer in a
 * grid) drawn cell by cell in the explorer's colour scale: the position a value gets comes from
 * palette/palette (matrix, row or log scaling) and its colour is the scale's true colour there
 * (viridis as matplotlib draws it, not the terminal's 256-colour stand-ins).
 * Rows are labelled with their tokens (queries), columns with theirs (keys, rotated) or d0,
 * d1, ...; a legend shows the colour bar with its ends and the scale's name, and says what
 * masked (-inf), dropped and pooled cells look like.
 *
 * Large matrices stay readable and small: at most SVG_MAX_CELLS cells are drawn (one rect
 * each); above that the matrix is drawn in blocks of b x b cells, each block coloured by its
 * strongest cell (as the explorer's thumbnails), and the legend says so. Labels are left out
 * when cells are too small to carry them (position ticks take their place), values when they
 * cannot fit; the legend says that too.
 */
#ifndef ATTNSCOPE_SVG_H
#define ATTNSCOPE_SVG_H

#include <stdbool.h>
#include <stdio.h>

#include "common/diag.h"
#include "engine/attention.h"
#include "palette/palette.h"

#define SVG_MAX_CELLS    40000 /* rects in one picture: about 2 MB of SVG */
#define SVG_LABEL_MIN_PX 10    /* cells narrower than this carry no labels */
#define SVG_VALUE_MIN_PX 28    /* cells narrower than this carry no values */

struct svg_tile {
    struct attn_mat_view v;    /* rows x cols, like every tile of the picture */
    const unsigned char *keep; /* rows x cols dropout keep-mask (0: dropped), or NULL */
    const char *label;         /* under the tile ("head 1"), or NULL */
};

struct svg_picture {
    const char *title;       /* first line: the scene */
    const char *subtitle;    /* second line: the stage, head, layer and shape */
    char *const *row_labels; /* one per row (the query tokens), shown as given */
    char *const *col_labels; /* one per column (key tokens), or NULL: d0, d1, ... */
    const char *row_axis;    /* "queries" */
    const char *col_axis;    /* "keys", "dimensions" */
    const struct svg_tile *tiles;
    int n_tiles;              /* 1: one matrix; more: a grid on one shared range */
    enum color_scale scale;   /* as asked; a signed matrix has no log scale */
    bool values;              /* each cell's value in the cell (when it fits) */
    int seq_scale, div_scale; /* which sequential and diverging scale (colors.yaml) */
};

#define SVG_NO_MEMORY (-2)

/* Writes the picture as SVG to f. Returns 0, -1 when the stream reports a write error, or
 * SVG_NO_MEMORY. */
int svg_write(FILE *f, const struct svg_picture *p);
/* Writes it to path all or nothing (a temporary file renamed over path); with overwrite
 * false an existing path is refused. Returns 0, or -1 with err naming the file. */
int svg_write_file(const char *path, bool overwrite, const struct svg_picture *p, struct diag *err);

#endif
