/* heatmap panel: one head at one stage, every cell with its value and its colour. It keeps its
 * own scroll position and colour-range cache. */
#ifndef ATTNSCOPE_UI_HEATMAP_H
#define ATTNSCOPE_UI_HEATMAP_H

#include <stdbool.h>

#include "explore/range.h"
#include "explore/zoom.h"
#include "ui/panel.h"

struct heatmap_panel {
    struct panel base;
    int top_row, left_col;              /* the first row and column shown (blocks, zoomed out) */
    int shown_zoom, shown_br, shown_bc; /* the zoom and blocks laid out last: a new one
                                           centres the cursor */
    struct range_cache range;
    struct block_cache blocks; /* zoomed out: every block's max and mean */
};

void heatmap_panel_init(struct heatmap_panel *hp);
void heatmap_panel_free(struct heatmap_panel *hp);
/* Whether the map, as last drawn, shows cell (r, c) with its number: in its window, zoomed in. */
bool heatmap_shows_cell(const struct heatmap_panel *hp, const struct frame *f, int r, int c);
/* Columns the map needs to show every token with 4 decimals and the row sums. */
int heatmap_min_width(const struct app *a);
/* "min … [gradient] … max" ending at x_end on line y; returns its width. */
int heatmap_legend(const struct theme *t, int y, int x_end, float lo, float hi, bool diverging);
/* The same with the colour scale's name before it ("row scale", "log scale"; NULL: none). */
int heatmap_legend_named(const struct theme *t, int y, int x_end, float lo, float hi,
                         bool diverging, const char *scale);

#endif
