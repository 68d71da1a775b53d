/* lens panel: the logit lens (y), in place of the map. A row per position (its token and the
 * actual next one), a column per layer: that layer's residual stream through the final norm
 * and the unembedding, its top-1 token coloured by its probability (nostalgebraist 2020,
 * Ecco). Up and down move through the positions, left and right through the layers (the
 * layer on screen); the predictions panel beside it shows the picked cell's top tokens. Long
 * sequences scroll; only the positions shown are ever computed (explore/interp.h). */
#ifndef ATTNSCOPE_UI_LENS_H
#define ATTNSCOPE_UI_LENS_H

#include "ui/panel.h"

struct lens_panel {
    struct panel base;
    int top_row, left_layer; /* the first position and layer shown */
};

void lens_panel_init(struct lens_panel *lp);
/* Columns the lens needs to show every layer. */
int lens_min_width(const struct app *a);

#endif
