/* grid panel: small multiples of every head at the current stage, side by side on one shared
 * colour scale; arrows pick a head. It keeps its own tile layout, scroll and range cache. */
#ifndef ATTNSCOPE_UI_GRID_H
#define ATTNSCOPE_UI_GRID_H

#include "explore/range.h"
#include "explore/zoom.h"
#include "ui/panel.h"

/* What the cells of one layer's heads show. */
enum cell_kind {
    CELLS_NUMBERS, /* every value's number, one format for the view */
    CELLS_COLOUR,  /* every value's colour (shade glyphs without colour) */
    CELLS_BLOCKS,  /* a colour for each block of values: their max or mean */
};

/* The layout of one layer's heads (a model view of several layers uses thumbnails instead). */
struct heads_layout {
    enum cell_kind kind;
    int decimals;          /* numbers: how many, the same for every cell */
    int cw;                /* columns a cell */
    bool half;             /* blocks: two rows of blocks a text row (half blocks) */
    int lw;                /* the row labels' column (tokens, or positions for blocks); 0: none */
    struct zoom_grid grid; /* the cells: blocks of 1 x 1 unless aggregated */
    int per_row;           /* tiles side by side */
    int tile_rows;         /* rows of tiles */
    int tile_w;            /* columns of a tile's cells */
    int lines;             /* text lines of a tile's cells */
    int view;              /* text lines the area shows of them */
};

/* The model view's thumbnails, each tile's pooled cells, made once per result, stage, layout and
 * pooling (b) for every layer as it is ready, and drawn from here: picking another tile redraws
 * from them instead of pooling 144 matrices of a million values again (250-600 ms a key at
 * GPT-2 small's 1,016 tokens). */
struct thumb_cache {
    unsigned long generation;
    int stage, rows, cols, agg, tiles;
    float *cells;        /* (tiles, rows, cols) */
    float *lo, *hi;      /* (tiles) each tile's finite range: the shared scale is their union */
    unsigned char *made; /* (tiles) */
    float *change;       /* (tiles) mean |Δ| against the pinned baseline (NAN: none), once made */
    unsigned char *changed; /* (tiles) change[t] is made */
};

struct grid_panel {
    struct panel base;
    struct thumb_cache thumbs;
    /* Tiles left to pool when the frame's time for them ran out (THUMB_BUDGET_MS, in the
     * background mode): the screen manager draws the panel again on its next tick. */
    bool unfinished;
    /* Stream mode: tiles of layers whose stages are not held wait for the walk (app_thumbs),
     * which the screen manager asks for with walk_want when walk_wanted. */
    struct app_thumb_key walk_want;
    bool walk_wanted;
    int tile_w, tile_h, per_row; /* the tile layout for the current stage and area */
    int shown_rows, shown_cols;  /* cells a tile shows: the matrix's, or fewer, each the
                                    strongest value of its block (a thumbnail) */
    int top;                     /* first row of tiles shown */
    struct range_cache range;    /* the shared scale of every head */
    /* One layer's heads: the first text line shown, and each head's blocks when aggregated. */
    int top_line;
    struct block_cache *blocks;
    int n_blocks;
};

void grid_panel_init(struct grid_panel *gp);
/* The rows the view needs to show every tile at full size in width columns (every layer's in
 * the model view; with the title, the head labels and the footer): the screen manager gives the
 * view up to that many, and the rest to the inspector. *least gets the rows that show every
 * tile at all (the model view's smallest thumbnails), which it gets before the inspector's
 * comfort. */
int grid_rows_wanted(struct grid_panel *gp, struct frame *f, int width, int *least);
/* The rows the view draws in an area of width x height (one layer's heads side by side may
 * need fewer than the area has: the rest is the inspector's). */
int grid_rows_used(struct grid_panel *gp, struct frame *f, int width, int height);
void grid_panel_free(struct grid_panel *gp);

#endif
