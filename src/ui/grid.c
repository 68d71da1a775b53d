/* grid panel: small multiples of every head at the current stage, side by side, on one shared
 * colour scale so heads can be compared. Arrows pick a head, Enter (or a click) opens it. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"

void heatmap_range(struct mat_view v, float *lo, float *hi);
void heatmap_legend(const struct ui *ui, int y, int x_end, float lo, float hi, bool diverging);

static int tiles(const struct ui *ui)
{
    return stage_is_per_head(ui->app.stage) ? ui->app.model.heads : 1;
}

/* Sizes the tiles to the area: 2 columns per cell when they fit, else 1. */
static void layout(struct panel *p, struct ui *ui, int *cw)
{
    struct mat_view v = app_view(&ui->app, ui->app.stage, 0);
    int n = tiles(ui);
    *cw = 2;
    for (;;) {
        ui->grid_tile_w = v.cols * *cw + 2;
        ui->grid_tile_h = v.rows + 1;
        ui->grid_per_row = p->area.w / ui->grid_tile_w;
        if (ui->grid_per_row < 1)
            ui->grid_per_row = 1;
        int rows_needed = (n + ui->grid_per_row - 1) / ui->grid_per_row;
        if (*cw == 1 || rows_needed * ui->grid_tile_h <= p->area.h - 1)
            break;
        *cw = 1;
    }
}

static void draw(struct panel *p, struct ui *ui)
{
    const struct app *a = &ui->app;
    const struct theme *t = &ui->theme;
    struct rect r = p->area;
    for (int y = r.y; y < r.y + r.h; y++) {
        move(y, r.x);
        for (int x = 0; x < r.w; x++)
            addch(' ');
    }
    int cw;
    layout(p, ui, &cw);
    int n = tiles(ui);

    /* One scale for all heads, so equal colours mean equal values across tiles. */
    float lo = INFINITY, hi = -INFINITY;
    for (int h = 0; h < n; h++) {
        float l, u;
        heatmap_range(app_view(a, a->stage, h), &l, &u);
        lo = l < lo ? l : lo;
        hi = u > hi ? u : hi;
    }
    bool diverging = lo < 0;
    char title[128];
    snprintf(title, sizeof(title), "all %d heads \u00b7 %s%s", a->model.heads, stage_name(a->stage),
             n == 1 ? " (shared by all heads)" : "");
    draw_text(r.y, r.x, r.w, t->role_attr[ROLE_LABEL], title);
    heatmap_legend(ui, r.y, r.x + r.w, lo, hi, diverging);

    for (int h = 0; h < n; h++) {
        int ty = r.y + 1 + (h / ui->grid_per_row) * ui->grid_tile_h;
        int tx = r.x + (h % ui->grid_per_row) * ui->grid_tile_w;
        if (ty >= r.y + r.h)
            break;
        char label[32];
        snprintf(label, sizeof(label), n == 1 ? "shared" : "head %d", h);
        bool sel = n > 1 && h == a->head;
        draw_text(ty, tx, ui->grid_tile_w - 1, t->role_attr[sel ? ROLE_STAGE_CURRENT : ROLE_LABEL],
                  label);
        struct mat_view v = app_view(a, a->stage, h);
        for (int i = 0; i < v.rows && ty + 1 + i < r.y + r.h; i++)
            for (int j = 0; j < v.cols; j++) {
                float x = v.data[(size_t)i * v.stride + j];
                const char *shade = " ";
                int attr;
                const char *glyph;
                if (!isfinite(x)) {
                    attr = t->role_attr[ROLE_MASKED];
                    glyph = cw == 2 ? " \u00b7" : "\u00b7";
                } else {
                    attr = theme_cell_attr(t, x, lo, hi, diverging, &shade);
                    glyph = shade;
                }
                char cell[16];
                if (isfinite(x) && cw == 2)
                    snprintf(cell, sizeof(cell), "%s%s", glyph, glyph);
                else
                    snprintf(cell, sizeof(cell), "%s", glyph);
                draw_text(ty + 1 + i, tx + j * cw, cw, attr, cell);
            }
    }
}

static int select_head(struct ui *ui, int h)
{
    if (h < 0 || h >= tiles(ui) || h == ui->app.head)
        return HANDLED_YES;
    ui->app.head = h;
    app_clamp(&ui->app);
    return HANDLED_CURSOR;
}

static int handle_key(struct panel *p, struct ui *ui, enum action act)
{
    int cw;
    layout(p, ui, &cw);
    switch (act) {
    case ACTION_LEFT:
        return select_head(ui, ui->app.head - 1);
    case ACTION_RIGHT:
        return select_head(ui, ui->app.head + 1);
    case ACTION_UP:
        return select_head(ui, ui->app.head - ui->grid_per_row);
    case ACTION_DOWN:
        return select_head(ui, ui->app.head + ui->grid_per_row);
    case ACTION_OPEN:
        ui->app.all_heads = false;
        return HANDLED_CURSOR;
    default:
        return HANDLED_NO;
    }
}

static int handle_mouse(struct panel *p, struct ui *ui, int y, int x, unsigned long buttons)
{
    if (buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return select_head(ui, ui->app.head + (buttons & BUTTON4_PRESSED ? -1 : 1));
    int cw;
    layout(p, ui, &cw);
    int row = (y - p->area.y - 1) / ui->grid_tile_h, col = (x - p->area.x) / ui->grid_tile_w;
    int h = row * ui->grid_per_row + col;
    if (y - p->area.y < 1 || col >= ui->grid_per_row || h >= tiles(ui))
        return HANDLED_NO;
    ui->app.head = h;
    ui->app.all_heads = false; /* a click opens the head large */
    app_clamp(&ui->app);
    return HANDLED_CURSOR;
}

void grid_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "grid";
    p->draw = draw;
    p->handle_key = handle_key;
    p->handle_mouse = handle_mouse;
}
