/* grid panel: small multiples of every head at the current stage, side by side on one shared
 * colour scale; arrows pick a head. It keeps its own tile layout, scroll and range cache. */
#ifndef ATTNSCOPE_UI_GRID_H
#define ATTNSCOPE_UI_GRID_H

#include "explore/range.h"
#include "ui/panel.h"

struct grid_panel {
    struct panel base;
    int tile_w, tile_h, per_row; /* the tile layout for the current stage and area */
    int shown_rows, shown_cols;  /* cells a tile shows: the matrix's, or fewer, each the
                                    strongest value of its block (a thumbnail) */
    int top;                     /* first row of tiles shown */
    struct range_cache range;    /* the shared scale of every head */
};

void grid_panel_init(struct grid_panel *gp);

#endif
