/* zoom: the heatmap's overview and zoom levels, and blocks of cells, without a terminal.
 *
 * Zoomed fully in (zoom 0) every value has a cell with its number. Zoomed out, a cell is a
 * coloured square standing for a block of values, up to `zoom` a side, shown by their max or
 * their mean (enum block_agg). The levels go 0, 1, 2, 4, 8, ... up to the overview, the block
 * that shows the whole matrix in the cells there are. A block never grows on an axis beyond
 * what that axis needs to fit, so a 1000 x 16 matrix keeps its 16 columns.
 *
 * The cursor stays on an exact value (app->view.row, app->view.col); zoomed out it selects the
 * block that holds it, and a step moves one block, keeping its place inside the block.
 *
 * Blocks are aggregated when the view changes (result, stage, head, zoom), never on a cursor
 * move: struct block_cache holds every block's max and mean until the key changes.
 */
#ifndef ATTNSCOPE_EXPLORE_ZOOM_H
#define ATTNSCOPE_EXPLORE_ZOOM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/attention.h"

/* The overview whatever the area: a zoom that stays the whole matrix across a resize. */
#define ZOOM_OVERVIEW INT_MAX

/* What a block's cell shows. */
enum block_agg { BLOCK_MAX, BLOCK_MEAN, BLOCK_AGG_COUNT };

const char *block_agg_name(enum block_agg agg); /* "max", "mean" */

/* Finite min and max of a matrix (0, 0 when it has no finite value). */
void zoom_range_of(struct attn_mat_view v, float *lo, float *hi);
/* Cell (i, j) of a rows x cols thumbnail of v, as agg asks: the value of largest magnitude in
 * its block (where a head attends strongly stays visible), or the mean of its finite values;
 * -inf only when the whole block is masked. The model view's tiles. */
float zoom_pooled(struct attn_mat_view v, int i, int j, int rows, int cols, enum block_agg agg);
/* out (rows, cols) = every cell of v's thumbnail (zoom_pooled), and v's finite range: a tile of
 * the model view, pooled by the grid or by the explorer's walk of the layers alike. */
void zoom_tile(float *out, float *lo, float *hi, struct attn_mat_view v, int rows, int cols,
               enum block_agg agg);

/* A rows x cols matrix in blocks of br x bc values: nbr x nbc cells (the last ones may be
 * partial). All zero when there is no such view. */
struct zoom_grid {
    int rows, cols; /* the matrix */
    int br, bc;     /* values a cell stands for, down and across */
    int nbr, nbc;   /* cells down and across: ceil(rows / br), ceil(cols / bc) */
};

/* The block side of the overview: the smallest that shows a rows x cols matrix in down x
 * across cells (1 when every value has a cell). */
int zoom_fit(int rows, int cols, int down, int across);
/* The zoom after z going out (dir > 0) or in (dir < 0): 0 (numbers), 1, 2, 4, ..., then the
 * overview `fit`; z itself at either end. A power of two within a factor 2 of fit is skipped
 * (fit 9: ... 2, 4, 9), so every step shows blocks at least twice or half as big. */
int zoom_next(int z, int dir, int fit);
/* The blocks at zoom z >= 1 (taken as the overview's when above it) in down x across cells. */
struct zoom_grid zoom_grid_make(int rows, int cols, int z, int down, int across);
/* The values block (bi, bj) covers: rows [*r0, *r1), columns [*c0, *c1). */
void zoom_block_span(const struct zoom_grid *g, int bi, int bj, int *r0, int *r1, int *c0, int *c1);
/* Moves the cursor (*row, *col) by dbi blocks down and dbj across, keeping its place inside the
 * block where the next one has it; clamped to the matrix. Returns whether it moved. */
bool zoom_step_cursor(const struct zoom_grid *g, int *row, int *col, int dbi, int dbj);

/* What a cell of g stands for, in the one wording the legend, the message line and the
 * all-heads view use: "1 cell = 8×4 tokens, max" (square stages), "1 cell = 8 tokens × 2 dims,
 * mean", "1 cell = 1 value". */
void zoom_cell_text(char *out, size_t size, const struct zoom_grid *g, bool square,
                    enum block_agg agg);
/* "row 3" or "rows 3–5": a span of positions [first, last] in words. */
void zoom_span_text(char *out, size_t size, const char *one, const char *many, int first, int last);

/* A block's values: the largest (and where it is), and the mean, over the finite ones (-inf,
 * a masked cell, counts in neither). max and mean are -inf when none is finite. */
struct block_stats {
    float max, mean;
    int max_row, max_col; /* -1 when none is finite */
    int finite, total;
};

void zoom_block_stats(struct block_stats *out, struct attn_mat_view v, int r0, int r1, int c0,
                      int c1);
static inline float block_stats_value(const struct block_stats *s, enum block_agg agg)
{
    return agg == BLOCK_MEAN ? s->mean : s->max;
}

/* Every block of one view, aggregated both ways, with the range of each. */
struct block_cache {
    /* the key: what was aggregated */
    unsigned long generation;
    int layer, stage, head; /* head as range.h counts it (-3: the mean over the heads) */
    struct zoom_grid grid;
    bool valid;
    /* the blocks, row-major nbr x nbc */
    float *value[BLOCK_AGG_COUNT];
    float lo[BLOCK_AGG_COUNT], hi[BLOCK_AGG_COUNT]; /* finite range (0, 0 when none) */
    size_t cap;
};

/* The blocks of v under grid g, aggregated again only when the key differs from the cached
 * one. Returns 0, or -1 when out of memory (the cache is then empty). */
int block_cache_get(struct block_cache *c, struct attn_mat_view v, const struct zoom_grid *g,
                    unsigned long generation, int layer, int stage, int head);
static inline float block_cache_at(const struct block_cache *c, enum block_agg agg, int bi, int bj)
{
    return c->value[agg][(size_t)bi * (size_t)c->grid.nbc + (size_t)bj];
}
void block_cache_free(struct block_cache *c);

#endif
