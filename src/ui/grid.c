/* grid panel: small multiples of every head at the current stage, side by side, on one shared
 * colour scale so heads can be compared. Arrows pick a head, Enter (or a click) opens it. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/grid.h"
#include "ui/heatmap.h" /* the legend */

static int tiles(const struct app *a)
{
    return attn_stage_is_per_head(a->stage) ? a->model.heads : 1;
}

/* Sizes the tiles to the area: 6 columns a cell (with its value) when every head fits, else
 * 2, else 1; then scrolls by rows of tiles so the selected head stays visible. */
static void layout(struct panel *p, struct frame *f, int *cw)
{
    struct grid_panel *gp = (struct grid_panel *)p;
    static const int widths[] = {6, 2, 1};
    struct attn_mat_view v = app_view(f->app, f->app->stage, 0);
    int n = tiles(f->app);
    for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
        *cw = widths[i];
        gp->tile_w = v.cols * *cw + 2;
        gp->tile_h = v.rows + 2;
        gp->per_row = p->area.w / gp->tile_w > 0 ? p->area.w / gp->tile_w : 1;
        int tile_rows = (n + gp->per_row - 1) / gp->per_row;
        if (tile_rows * gp->tile_h <= p->area.h - 1)
            break;
    }
    int visible = (p->area.h - 1) / gp->tile_h > 0 ? (p->area.h - 1) / gp->tile_h : 1;
    int sel_row = (n > 1 ? f->app->head : 0) / gp->per_row;
    if (sel_row < gp->top)
        gp->top = sel_row;
    if (sel_row >= gp->top + visible)
        gp->top = sel_row - visible + 1;
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
    float lo, hi;
    range_get(&gp->range, a, -1, &lo, &hi);
    bool diverging = lo < 0;
    char title[128];
    snprintf(title, sizeof(title), "all %d heads \u00b7 %s%s", a->model.heads,
             attn_stage_name(a->stage), n == 1 ? " (shared by all heads)" : "");
    draw_text(r.y, r.x, r.w, t->role_attr[ROLE_LABEL], title);
    heatmap_legend(t, r.y, r.x + r.w, lo, hi, diverging);

    for (int h = gp->top * gp->per_row; h < n; h++) {
        int ty = r.y + 1 + (h / gp->per_row - gp->top) * gp->tile_h;
        int tx = r.x + (h % gp->per_row) * gp->tile_w;
        if (ty >= r.y + r.h)
            break;
        char label[32];
        if (n == 1)
            snprintf(label, sizeof(label), "shared");
        else if (a->model.kv_heads < a->model.heads && a->stage != STAGE_QUERIES)
            snprintf(label, sizeof(label), "head %d \u00b7 KV %d", h,
                     h / (a->model.heads / a->model.kv_heads)); /* who shares a KV head */
        else
            snprintf(label, sizeof(label), "head %d", h);
        bool sel = n > 1 && h == a->head;
        draw_text(ty, tx, gp->tile_w - 1, t->role_attr[sel ? ROLE_STAGE_CURRENT : ROLE_LABEL],
                  label);
        struct attn_mat_view v = app_view(a, a->stage, h);
        for (int i = 0; i < v.rows && ty + 1 + i < r.y + r.h; i++)
            for (int j = 0; j < v.cols; j++) {
                float x = v.data[(size_t)i * v.stride + j];
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
                  "more heads: arrows scroll \u00b7 Enter opens the selected head");
}

static int select_head(struct app *a, int h)
{
    if (h < 0 || h >= tiles(a) || h == a->head)
        return OUTCOME_HANDLED;
    a->head = h;
    app_clamp(a);
    return OUTCOME_CURSOR_MOVED;
}

static int handle_key(struct panel *p, struct frame *f, enum action act)
{
    const struct grid_panel *gp = (const struct grid_panel *)p;
    int cw;
    layout(p, f, &cw);
    switch (act) {
    case ACTION_LEFT:
        return select_head(f->app, f->app->head - 1);
    case ACTION_RIGHT:
        return select_head(f->app, f->app->head + 1);
    case ACTION_UP:
        return select_head(f->app, f->app->head - gp->per_row);
    case ACTION_DOWN:
        return select_head(f->app, f->app->head + gp->per_row);
    default:
        return OUTCOME_IGNORED;
    }
}

static int handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    const struct grid_panel *gp = (const struct grid_panel *)p;
    if (buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return select_head(f->app, f->app->head + (buttons & BUTTON4_PRESSED ? -1 : 1));
    int cw;
    layout(p, f, &cw);
    int row = gp->top + (y - p->area.y - 1) / gp->tile_h;
    int col = (x - p->area.x) / gp->tile_w;
    int h = row * gp->per_row + col;
    if (y - p->area.y < 1 || col >= gp->per_row || h >= tiles(f->app))
        return OUTCOME_IGNORED;
    f->app->head = h;
    f->app->all_heads = false; /* a click opens the head large */
    app_clamp(f->app);
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
