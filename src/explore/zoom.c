/* zoom: zoom levels, blocks of cells and their cache (see zoom.h). No curses here. */
#include "explore/zoom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *block_agg_name(enum block_agg agg)
{
    return agg == BLOCK_MEAN ? "mean" : "max";
}

static int ceil_div(int a, int b)
{
    return b > 0 ? (a + b - 1) / b : a;
}

int zoom_fit(int rows, int cols, int down, int across)
{
    int r = ceil_div(rows, down > 0 ? down : 1), c = ceil_div(cols, across > 0 ? across : 1);
    int b = r > c ? r : c;
    return b > 1 ? b : 1;
}

int zoom_next(int z, int dir, int fit)
{
    if (fit < 1)
        fit = 1;
    if (z > fit)
        z = fit;
    /* Every step at least halves or doubles the block: a level within a factor 2 of the
       overview is skipped, so the first z from the overview shows something new. */
    if (dir > 0) {
        if (z == 0)
            return 1;
        int p = 1;
        while (p <= z)
            p *= 2;
        return p * 2 <= fit ? p : fit;
    }
    if (dir < 0) {
        if (z <= 1)
            return 0;
        int p = 1;
        while (p * 4 <= z)
            p *= 2;
        return p;
    }
    return z;
}

struct zoom_grid zoom_grid_make(int rows, int cols, int z, int down, int across)
{
    struct zoom_grid g = {0};
    if (rows <= 0 || cols <= 0)
        return g;
    int fit = zoom_fit(rows, cols, down, across);
    z = z < 1 ? 1 : z > fit ? fit : z;
    /* An axis that fits with smaller blocks keeps them: its values are not pooled for nothing. */
    int need_r = ceil_div(rows, down > 0 ? down : 1),
        need_c = ceil_div(cols, across > 0 ? across : 1);
    need_r = need_r > 1 ? need_r : 1;
    need_c = need_c > 1 ? need_c : 1;
    g.rows = rows;
    g.cols = cols;
    g.br = z < need_r ? z : need_r;
    g.bc = z < need_c ? z : need_c;
    g.nbr = ceil_div(rows, g.br);
    g.nbc = ceil_div(cols, g.bc);
    return g;
}

void zoom_block_span(const struct zoom_grid *g, int bi, int bj, int *r0, int *r1, int *c0, int *c1)
{
    *r0 = bi * g->br;
    *r1 = *r0 + g->br < g->rows ? *r0 + g->br : g->rows;
    *c0 = bj * g->bc;
    *c1 = *c0 + g->bc < g->cols ? *c0 + g->bc : g->cols;
}

/* One axis of zoom_step_cursor: block k of size b, n values. */
static int step_axis(int at, int d, int b, int n)
{
    int blocks = ceil_div(n, b);
    int k = at / b + d;
    k = k < 0 ? 0 : k >= blocks ? blocks - 1 : k;
    int to = k * b + at % b;
    return to < n ? to : n - 1;
}

bool zoom_step_cursor(const struct zoom_grid *g, int *row, int *col, int dbi, int dbj)
{
    if (g->br <= 0 || g->bc <= 0)
        return false;
    int r = step_axis(*row, dbi, g->br, g->rows), c = step_axis(*col, dbj, g->bc, g->cols);
    bool moved = r != *row || c != *col;
    *row = r;
    *col = c;
    return moved;
}

void zoom_cell_text(char *out, size_t size, const struct zoom_grid *g, bool square,
                    enum block_agg agg)
{
    if (g->br <= 1 && g->bc <= 1)
        snprintf(out, size, "1 cell = 1 value");
    else if (square)
        snprintf(out, size, "1 cell = %d\u00d7%d tokens, %s", g->br, g->bc, block_agg_name(agg));
    else
        snprintf(out, size, "1 cell = %d token%s \u00d7 %d dim%s, %s", g->br, g->br > 1 ? "s" : "",
                 g->bc, g->bc > 1 ? "s" : "", block_agg_name(agg));
}

void zoom_span_text(char *out, size_t size, const char *one, const char *many, int first, int last)
{
    if (first == last)
        snprintf(out, size, "%s %d", one, first);
    else
        snprintf(out, size, "%s %d\u2013%d", many, first, last);
}

void zoom_block_stats(struct block_stats *out, struct attn_mat_view v, int r0, int r1, int c0,
                      int c1)
{
    out->max = out->mean = -INFINITY;
    out->max_row = out->max_col = -1;
    out->finite = 0;
    out->total = (r1 - r0) * (c1 - c0);
    double sum = 0;
    for (int i = r0; i < r1; i++)
        for (int j = c0; j < c1; j++) {
            float x = v.data[(size_t)i * (size_t)v.stride + (size_t)j];
            if (!isfinite(x))
                continue;
            if (out->finite == 0 || x > out->max) {
                out->max = x;
                out->max_row = i;
                out->max_col = j;
            }
            sum += x;
            out->finite++;
        }
    if (out->finite > 0)
        out->mean = (float)(sum / out->finite);
}

int block_cache_get(struct block_cache *c, struct attn_mat_view v, const struct zoom_grid *g,
                    unsigned long generation, int layer, int stage, int head)
{
    if (c->valid && c->generation == generation && c->layer == layer && c->stage == stage &&
        c->head == head && memcmp(&c->grid, g, sizeof(*g)) == 0)
        return 0;
    c->valid = false;
    size_t n = (size_t)g->nbr * (size_t)g->nbc;
    if (n > c->cap) {
        for (int k = 0; k < BLOCK_AGG_COUNT; k++) {
            float *grown = realloc(c->value[k], n * sizeof(float));
            if (!grown)
                return -1;
            c->value[k] = grown;
        }
        c->cap = n;
    }
    for (int k = 0; k < BLOCK_AGG_COUNT; k++) {
        c->lo[k] = INFINITY;
        c->hi[k] = -INFINITY;
    }
    for (int bi = 0; bi < g->nbr; bi++)
        for (int bj = 0; bj < g->nbc; bj++) {
            int r0, r1, c0, c1;
            zoom_block_span(g, bi, bj, &r0, &r1, &c0, &c1);
            struct block_stats s;
            zoom_block_stats(&s, v, r0, r1, c0, c1);
            for (int k = 0; k < BLOCK_AGG_COUNT; k++) {
                float x = block_stats_value(&s, (enum block_agg)k);
                c->value[k][(size_t)bi * (size_t)g->nbc + (size_t)bj] = x;
                if (isfinite(x)) {
                    c->lo[k] = x < c->lo[k] ? x : c->lo[k];
                    c->hi[k] = x > c->hi[k] ? x : c->hi[k];
                }
            }
        }
    for (int k = 0; k < BLOCK_AGG_COUNT; k++)
        if (c->lo[k] > c->hi[k])
            c->lo[k] = c->hi[k] = 0.0f;
    c->grid = *g;
    c->generation = generation;
    c->layer = layer;
    c->stage = stage;
    c->head = head;
    c->valid = true;
    return 0;
}

void block_cache_free(struct block_cache *c)
{
    for (int k = 0; k < BLOCK_AGG_COUNT; k++)
        free(c->value[k]);
    memset(c, 0, sizeof(*c));
}

void zoom_range_of(struct attn_mat_view v, float *lo, float *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < v.cols; j++) {
            float x = v.data[(size_t)i * v.stride + j];
            if (isfinite(x)) {
                *lo = x < *lo ? x : *lo;
                *hi = x > *hi ? x : *hi;
            }
        }
    if (*lo > *hi)
        *lo = *hi = 0.0f;
}

float zoom_pooled(struct attn_mat_view v, int i, int j, int rows, int cols, enum block_agg agg)
{
    int r0 = i * v.rows / rows, r1 = (i + 1) * v.rows / rows;
    int c0 = j * v.cols / cols, c1 = (j + 1) * v.cols / cols;
    float best = -INFINITY;
    double sum = 0;
    int finite = 0;
    for (int r = r0; r < (r1 > r0 ? r1 : r0 + 1); r++)
        for (int c = c0; c < (c1 > c0 ? c1 : c0 + 1); c++) {
            float x = v.data[(size_t)r * v.stride + c];
            if (!isfinite(x))
                continue;
            if (!isfinite(best) || fabsf(x) > fabsf(best))
                best = x;
            sum += x;
            finite++;
        }
    return agg == BLOCK_MEAN && finite > 0 ? (float)(sum / finite) : best;
}

void zoom_tile(float *out, float *lo, float *hi, struct attn_mat_view v, int rows, int cols,
               enum block_agg agg)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            out[(size_t)i * cols + j] = zoom_pooled(v, i, j, rows, cols, agg);
    zoom_range_of(v, lo, hi);
}
