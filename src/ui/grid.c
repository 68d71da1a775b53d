/* grid panel: small multiples of every head at the current stage, side by side, on one shared
 * colour scale so heads can be compared. With several layers it is the model view (BertViz's):
 * one row of heads per layer. Arrows pick a tile, Enter (or a click) opens it. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/grid.h"
#include "common/cnum.h"
#include "ui/heatmap.h" /* the legend */

/* Tiles per layer: every head, or one for a stage the heads share. */
static int per_layer(const struct app *a)
{
    return attn_stage_is_per_head(a->stage) ? app_model(a)->heads : 1;
}

/* Tile t is layer t / per_layer, head t % per_layer. */
static int tiles(const struct app *a)
{
    return a->net.layers * per_layer(a);
}

static int selected(const struct app *a)
{
    return a->layer * per_layer(a) + (per_layer(a) > 1 ? a->head : 0);
}

/* Sizes the tiles to the area: 6 columns a cell (with its value) when every head fits, else
 * 2, else 1; else thumbnails of fewer cells, each pooling a block (a model view of 12 layers of
 * long sequences still fits); then scrolls by rows of tiles so the selected head stays visible. */
static void layout(struct panel *p, struct frame *f, int *cw)
{
    struct grid_panel *gp = (struct grid_panel *)p;
    static const int widths[] = {6, 2, 1};
    struct attn_mat_view v = app_view(f->app, f->app->stage, 0);
    int n = tiles(f->app);
    bool fits = false;
    int full = v.rows > v.cols ? v.rows : v.cols;
    /* k < 3: every cell, at each width; then thumbnails of `size` cells a side, 2 columns a
       cell while the width allows (cells are twice as tall as wide), else 1 */
    for (int k = 0; !fits && k < 3 + 2 * full; k++) {
        int size = k < 3 ? full : full - (k - 3) / 2;
        if (k >= 3 && size < 4) /* thumbnails stop at 4 cells; the full sizes always count */
            break;
        *cw = k < 3 ? widths[k] : (k - 3) % 2 == 0 ? 2 : 1;
        gp->shown_rows = v.rows < size ? v.rows : size;
        gp->shown_cols = v.cols < size ? v.cols : size;
        gp->tile_w = gp->shown_cols * *cw + 2;
        gp->tile_h = gp->shown_rows + 2;
        gp->per_row = p->area.w / gp->tile_w > 0 ? p->area.w / gp->tile_w : 1;
        /* The model view: a row per layer when a layer's heads fit on one. */
        if (f->app->net.layers > 1 && gp->per_row >= per_layer(f->app))
            gp->per_row = per_layer(f->app);
        int tile_rows = (n + gp->per_row - 1) / gp->per_row;
        fits = tile_rows * gp->tile_h <= p->area.h - 1;
    }
    if (gp->shown_rows < v.rows) { /* thumbnails: the height decided; spend the width */
        int wide = (p->area.w / gp->per_row - 2) / *cw;
        gp->shown_cols = v.cols < wide ? v.cols : wide > gp->shown_cols ? wide : gp->shown_cols;
        gp->tile_w = gp->shown_cols * *cw + 2;
    }
    int visible = (p->area.h - 1) / gp->tile_h > 0 ? (p->area.h - 1) / gp->tile_h : 1;
    int sel_row = selected(f->app) / gp->per_row;
    if (sel_row < gp->top)
        gp->top = sel_row;
    if (sel_row >= gp->top + visible)
        gp->top = sel_row - visible + 1;
}

/* Cell (i, j) of a rows x cols thumbnail of v: the value of largest magnitude in its block
 * (where a head attends strongly stays visible); -inf only when the whole block is masked. */
static float pooled(struct attn_mat_view v, int i, int j, int rows, int cols)
{
    int r0 = i * v.rows / rows, r1 = (i + 1) * v.rows / rows;
    int c0 = j * v.cols / cols, c1 = (j + 1) * v.cols / cols;
    float best = -INFINITY;
    for (int r = r0; r < (r1 > r0 ? r1 : r0 + 1); r++)
        for (int c = c0; c < (c1 > c0 ? c1 : c0 + 1); c++) {
            float x = v.data[(size_t)r * v.stride + c];
            if (isfinite(x) && (!isfinite(best) || fabsf(x) > fabsf(best)))
                best = x;
        }
    return best;
}

static void draw(struct panel *p, struct frame *f)
{
    struct grid_panel *gp = (struct grid_panel *)p;
    const struct app *a = f->app;
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    int cw;
    layout(p, f, &cw);
    int n = tiles(f->app);

    /* One scale for all heads, so equal colours mean equal values across tiles. */
    int layers = a->net.layers, pl = per_layer(a);
    float lo, hi;
    range_get(&gp->range, a, layers > 1 ? -2 : -1, &lo, &hi);
    bool diverging = lo < 0;
    char title[128];
    if (layers > 1)
        snprintf(title, sizeof(title), "model view: %d layers \u00d7 %d heads \u00b7 %s%s", layers,
                 app_model(a)->heads, attn_stage_name(a->stage),
                 pl == 1 ? " (shared by the heads)" : "");
    else
        snprintf(title, sizeof(title), "all %d heads \u00b7 %s%s", app_model(a)->heads,
                 attn_stage_name(a->stage), n == 1 ? " (shared by all heads)" : "");
    int legend_w = heatmap_legend(t, r.y, r.x + r.w, lo, hi, diverging);
    char clipped[160];
    abbreviate(clipped, sizeof(clipped), title, r.w - legend_w - 1);
    draw_text(r.y, r.x, r.w - legend_w - 1, t->role_attr[ROLE_LABEL], clipped);

    for (int tile = gp->top * gp->per_row; tile < n; tile++) {
        int ty = r.y + 1 + (tile / gp->per_row - gp->top) * gp->tile_h;
        int tx = r.x + (tile % gp->per_row) * gp->tile_w;
        if (ty >= r.y + r.h)
            break;
        int L = tile / pl, h = tile % pl;
        const struct attn_model *m = &a->net.model[L];
        char label[48], where[16] = "";
        if (layers > 1)
            snprintf(where, sizeof(where), "L%d ", L);
        if (pl == 1)
            snprintf(label, sizeof(label), "%sshared", where);
        else if (m->kv_heads < m->heads && a->stage != STAGE_QUERIES)
            snprintf(label, sizeof(label), "%s%s%d \u00b7 KV %d", where, layers > 1 ? "h" : "head ",
                     h, h / (m->heads / m->kv_heads)); /* who shares a KV head */
        else
            snprintf(label, sizeof(label), "%s%s%d", where, layers > 1 ? "h" : "head ", h);
        bool sel = n > 1 && tile == selected(a);
        int lattr = t->role_attr[sel ? ROLE_STAGE_CURRENT : ROLE_LABEL];
        if (a->score_shown >= 0 && pl > 1) {
            /* The chosen score beside the label, its colour on the score's scale: entropy runs
               from 0 to ln n, the others from 0 to 1. */
            const struct head_scores *sc = app_scores(a, L, h);
            int k = a->score_shown;
            char num[24];
            if (sc->defined[k])
                cnum_format(num, sizeof(num), " %.2f", sc->value[k]);
            else
                snprintf(num, sizeof(num), " -");
            size_t used = strlen(label);
            snprintf(label + used, sizeof(label) - used, "%s", num);
            const char *shade;
            float top = k == SCORE_ENTROPY ? (float)log((double)(m->n > 1 ? m->n : 2)) : 1.0f;
            if (sc->defined[k] && !sel)
                lattr = theme_cell_attr(t, (float)sc->value[k], 0.0f, top, false, &shade);
        }
        draw_text(ty, tx, gp->tile_w - 1, lattr, label);
        if (!attn_stage_present(m, a->stage)) /* the final norm: the last layer only */
            continue;
        struct attn_mat_view v = app_view_at(a, L, a->stage, h);
        for (int i = 0; i < gp->shown_rows && ty + 1 + i < r.y + r.h; i++)
            for (int j = 0; j < gp->shown_cols; j++) {
                float x = pooled(v, i, j, gp->shown_rows, gp->shown_cols);
                const char *shade = " ";
                int attr = isfinite(x) ? theme_cell_attr(t, x, lo, hi, diverging, &shade)
                                       : t->role_attr[ROLE_MASKED];
                char cell[32];
                if (cw >= 6) {
                    char num[16];
                    format_cell(num, sizeof(num), x, cw - 1);
                    snprintf(cell, sizeof(cell), "%*s%s", cw - text_width(num), "", num);
                } else if (!isfinite(x)) {
                    snprintf(cell, sizeof(cell), cw == 2 ? " \u00b7" : "\u00b7");
                } else {
                    snprintf(cell, sizeof(cell), cw == 2 ? "%s%s" : "%s", shade, shade);
                }
                draw_text(ty + 1 + i, tx + j * cw, cw, attr, cell);
            }
    }
    int tile_rows = (n + gp->per_row - 1) / gp->per_row;
    if (tile_rows * gp->tile_h > r.h - 1)
        draw_text(r.y + r.h - 1, r.x, r.w, t->role_attr[ROLE_DIM],
                  layers > 1 ? "more layers: arrows scroll \u00b7 Enter opens the selected head"
                             : "more heads: arrows scroll \u00b7 Enter opens the selected head");
}

static int select_tile(struct app *a, int tile)
{
    if (tile < 0 || tile >= tiles(a) || tile == selected(a))
        return OUTCOME_HANDLED;
    int pl = per_layer(a), layer = tile / pl;
    if (pl > 1)
        a->head = tile % pl;
    if (layer != a->layer)
        app_set_layer(a, layer);
    app_clamp(a);
    return OUTCOME_VIEW_CHANGED;
}

static int handle_key(struct panel *p, struct frame *f, enum action act)
{
    const struct grid_panel *gp = (const struct grid_panel *)p;
    int cw;
    layout(p, f, &cw);
    switch (act) {
    case ACTION_LEFT:
        return select_tile(f->app, selected(f->app) - 1);
    case ACTION_RIGHT:
        return select_tile(f->app, selected(f->app) + 1);
    case ACTION_UP:
        return select_tile(f->app, selected(f->app) - gp->per_row);
    case ACTION_DOWN:
        return select_tile(f->app, selected(f->app) + gp->per_row);
    default:
        return OUTCOME_IGNORED;
    }
}

static int handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    const struct grid_panel *gp = (const struct grid_panel *)p;
    if (buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return select_tile(f->app, selected(f->app) + (buttons & BUTTON4_PRESSED ? -1 : 1));
    int cw;
    layout(p, f, &cw);
    int row = gp->top + (y - p->area.y - 1) / gp->tile_h;
    int col = (x - p->area.x) / gp->tile_w;
    int tile = row * gp->per_row + col;
    if (y - p->area.y < 1 || col >= gp->per_row || tile >= tiles(f->app))
        return OUTCOME_IGNORED;
    select_tile(f->app, tile);
    f->app->all_heads = false; /* a click opens the head large */
    return OUTCOME_VIEW_CHANGED;
}

/* A new area: the tiles are laid out again for it. */
static void resize(struct panel *p, struct frame *f, struct rect area)
{
    p->area = area;
    int cw;
    layout(p, f, &cw);
}

void grid_panel_init(struct grid_panel *gp)
{
    memset(gp, 0, sizeof(*gp));
    gp->base.name = "grid";
    gp->base.draw = draw;
    gp->base.handle_key = handle_key;
    gp->base.handle_mouse = handle_mouse;
    gp->base.resize = resize;
}
