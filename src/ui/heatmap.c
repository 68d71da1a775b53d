/* heatmap panel: one head at one stage, every cell with its value and its colour.
 *
 * Query tokens label the rows, key tokens (or d0, d1, ... for matrix stages) the columns. A
 * row-sum column shows the softmax rows summing to 1, and dropout breaking that. -inf cells are
 * dim "-∞", never a colour. The view scrolls to keep the cursor visible.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/heatmap.h"

#include "explore/inspect.h"
#include "explore/picture.h"

#define CELL_W      7 /* "-0.138" and a gap */
#define CELL_W_WIDE 9 /* "-0.1385", print's 4 decimals, when the area has room */
#define SUM_W       10

/* Column label j: the key token for square stages, else the dimension. */
static void col_label(char *out, size_t size, const struct app *a, int j)
{
    if (attn_stage_is_square(a->stage))
        display_token(out, size, app_model(a)->tokens[j]);
    else
        snprintf(out, size, "d%d", j);
}

static int label_width(const struct app *a)
{
    int w = 4;
    for (int i = 0; i < app_model(a)->n; i++) {
        int tw = text_width(app_model(a)->tokens[i]);
        w = tw > w ? tw : w;
    }
    return (w > 12 ? 12 : w) + 1;
}

/* The row-sum column belongs where rows are distributions: after the normalisation (summing
 * to 1), after dropout (no longer), and the after-softmax mask (zeroed, not renormalised). */
static bool shows_sum(const struct app *a)
{
    return a->stage == STAGE_WEIGHTS || a->stage == STAGE_DROPOUT ||
           (a->stage == STAGE_MASKED && app_model(a)->causal &&
            app_model(a)->mask_mode == MASK_AFTER_SOFTMAX);
}

struct layout {
    int lw, cw, vis_rows, vis_cols; /* label and cell widths, visible rows and columns */
    bool sum;
};

static struct layout compute_layout(const struct panel *p, const struct frame *f)
{
    struct layout l;
    l.lw = label_width(f->app);
    l.sum = shows_sum(f->app);
    int w = p->area.w - l.lw - (l.sum ? SUM_W : 0);
    int cols = app_cols(f->app);
    /* Shade blocks (8 colours, no colour) take a column: one more keeps 4 signed decimals. */
    int wide = f->theme->mode != COLOR_MODE_256 ? CELL_W_WIDE + 1 : CELL_W_WIDE;
    l.cw = cols * wide <= w ? wide : cols * CELL_W_WIDE <= w ? CELL_W_WIDE : CELL_W;
    l.vis_cols = w / l.cw > 0 ? w / l.cw : 1;
    l.vis_rows = p->area.h - 3 > 0 ? p->area.h - 3 : 1;
    return l;
}

int heatmap_min_width(const struct app *a)
{
    return label_width(a) + app_model(a)->n * CELL_W_WIDE + SUM_W + 1;
}

/* Keeps the cursor inside the visible window. */
static void follow_cursor(struct heatmap_panel *hp, const struct app *a, const struct layout *l)
{
    if (a->row < hp->top_row)
        hp->top_row = a->row;
    if (a->row >= hp->top_row + l->vis_rows)
        hp->top_row = a->row - l->vis_rows + 1;
    if (a->col < hp->left_col)
        hp->left_col = a->col;
    if (a->col >= hp->left_col + l->vis_cols)
        hp->left_col = a->col - l->vis_cols + 1;
    /* After a resize, use the room: no blank rows below the last one while rows are hidden. */
    int rows = app_rows(a), cols = app_cols(a);
    if (hp->top_row > rows - l->vis_rows)
        hp->top_row = rows - l->vis_rows;
    if (hp->left_col > cols - l->vis_cols)
        hp->left_col = cols - l->vis_cols;
    if (hp->top_row < 0)
        hp->top_row = 0;
    if (hp->left_col < 0)
        hp->left_col = 0;
}

/* "min -0.51 [gradient] max 0.91" at the right end of line y; returns its width. */
int heatmap_legend(const struct theme *t, int y, int x_end, float lo, float hi, bool diverging)
{
    return heatmap_legend_named(t, y, x_end, lo, hi, diverging, NULL);
}

int heatmap_legend_named(const struct theme *t, int y, int x_end, float lo, float hi,
                         bool diverging, const char *scale)
{
    char lo_s[32], hi_s[32], left[64], right[48];
    format_cell(lo_s, sizeof(lo_s), lo, 8);
    format_cell(hi_s, sizeof(hi_s), hi, 8);
    snprintf(left, sizeof(left), "%s%smin %s ", scale ? scale : "", scale ? " \u00b7 " : "", lo_s);
    snprintf(right, sizeof(right), " max %s", hi_s);
    int steps = 8;
    int width = text_width(left) + steps + text_width(right);
    int x = x_end - width;
    if (x < 0)
        return 0;
    x += draw_text(y, x, 40, t->role_attr[ROLE_DIM], left);
    for (int s = 0; s < steps; s++) {
        float v = lo + (hi - lo) * (float)s / (float)(steps - 1);
        const char *shade;
        int attr = theme_cell_attr(t, v, lo, hi, diverging, &shade);
        x += draw_text(y, x, 1, attr, t->mode == COLOR_MODE_256 ? " " : shade);
    }
    draw_text(y, x, 40, t->role_attr[ROLE_DIM], right);
    return width;
}

static void draw(struct panel *p, struct frame *f)
{
    struct heatmap_panel *hp = (struct heatmap_panel *)p;
    const struct app *a = f->app;
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    struct attn_mat_view v = app_shown_view(f->app);
    bool mean = app_showing_mean(a);
    struct layout l = compute_layout(p, f);
    follow_cursor(hp, a, &l);

    float lo, hi;
    range_get(&hp->range, a, mean ? -3 : a->head, &lo, &hi);
    bool diverging = lo < 0;
    const char *what = picture_stage_title(app_model(a), a->stage);
    char title[200];
    char kv[100];
    inspect_kv_sharing(kv, sizeof(kv), a, a->head);
    /* The KV sharing last: on a narrow screen the stage's name and shape matter more. */
    char layer[32] = "";
    if (a->net.layers > 1)
        snprintf(layer, sizeof(layer), "layer %d \u00b7 ", a->layer);
    if (mean)
        snprintf(title, sizeof(title), "%smean of the %d heads \u00b7 %s \u00b7 %d\u00d7%d", layer,
                 app_model(a)->heads, what, v.rows, v.cols);
    else if (attn_stage_is_per_head(a->stage))
        snprintf(title, sizeof(title), "%shead %d (of %d) \u00b7 %s \u00b7 %d\u00d7%d%s%s", layer,
                 a->head, app_model(a)->heads, what, v.rows, v.cols,
                 kv[0] && a->stage != STAGE_QUERIES ? " \u00b7 " : "",
                 a->stage != STAGE_QUERIES ? kv : "");
    else
        snprintf(title, sizeof(title), "%s%s \u00b7 %d\u00d7%d \u00b7 all heads", layer, what,
                 v.rows, v.cols);
    /* The legend first, so the title yields to it rather than running into it. */
    /* The log scale needs values >= 0: a signed matrix stays linear, and the legend says so. */
    struct palette_map pm;
    palette_map_init(&pm, a->color_scale, lo, hi);
    int legend_w = heatmap_legend_named(t, r.y, r.x + r.w, lo, hi, diverging,
                                        palette_map_label(&pm, a->color_scale));
    char clipped[256];
    abbreviate(clipped, sizeof(clipped), title, r.w - legend_w - 1);
    draw_text(r.y, r.x, r.w - legend_w - 1, t->role_attr[ROLE_LABEL], clipped);

    int shaded = t->mode != COLOR_MODE_256; /* cells spend a column on a shade block */
    int x0 = r.x + l.lw;
    int last_col = hp->left_col + l.vis_cols < v.cols ? hp->left_col + l.vis_cols : v.cols;
    int last_row = hp->top_row + l.vis_rows < v.rows ? hp->top_row + l.vis_rows : v.rows;
    for (int j = hp->left_col; j < last_col; j++) {
        char full[3 * SCENE_MAX_TOKEN_BYTES + 8], shortl[64], cell[80];
        col_label(full, sizeof(full), a, j);
        abbreviate(shortl, sizeof(shortl), full, l.cw - 1);
        snprintf(cell, sizeof(cell), "%*s%s", l.cw - text_width(shortl), "", shortl);
        int role = j == a->col ? ROLE_SELECTION : ROLE_LABEL;
        draw_text(r.y + 1, x0 + (j - hp->left_col) * l.cw, l.cw, t->role_attr[role], cell);
    }
    if (l.sum)
        draw_text(r.y + 1, x0 + (last_col - hp->left_col) * l.cw, SUM_W, t->role_attr[ROLE_LABEL],
                  " \u2502 row \u03a3");

    for (int i = hp->top_row; i < last_row; i++) {
        int y = r.y + 2 + (i - hp->top_row);
        char lab[64];
        char shown[3 * SCENE_MAX_TOKEN_BYTES + 1];
        display_token(shown, sizeof(shown), app_model(a)->tokens[i]);
        abbreviate(lab, sizeof(lab), shown, l.lw - 1);
        draw_text(y, r.x, l.lw - 1, t->role_attr[i == a->row ? ROLE_SELECTION : ROLE_LABEL], lab);
        const float *row = v.data + (size_t)i * v.stride;
        float row_lo = lo, row_hi = hi;
        if (pm.mode == SCALE_BY_ROW) /* this query's own range: O(n) per row drawn */
            palette_row_range(&row_lo, &row_hi, row, v.cols);
        for (int j = hp->left_col; j < last_col; j++) {
            float x = row[j];
            char num[32], cell[64];
            const char *shade = " ";
            int attr;
            /* A dropped cell says so: on a projector a 0 and a dropped weight look alike. */
            bool dropped = !mean && a->stage == STAGE_DROPOUT && app_model(a)->keep &&
                           !app_model(a)->keep[((size_t)a->head * v.rows + (size_t)i) * v.rows + j];
            if (dropped)
                snprintf(num, sizeof(num), "drop");
            else
                format_cell(num, sizeof(num), x, l.cw - 1 - shaded);
            /* With a shade block in front, keep a blank between it and the number. */
            if (shaded && !dropped && text_width(num) >= l.cw - 2)
                format_cell(num, sizeof(num), x, l.cw - 3);
            bool plain = isinf(x) || isnan(x) || dropped;
            if (plain)
                attr = t->role_attr[ROLE_MASKED];
            else
                attr = theme_position_attr(t, palette_map_position(&pm, x, row_lo, row_hi),
                                           pm.diverging, &shade);
            if (i == a->row && j == a->col)
                attr = theme_cursor_attr(t, attr);
            /* Without 256 colours a shade block leads the cell, after a blank, so it is never
             * read as part of the neighbour's number. */
            if (shaded)
                snprintf(cell, sizeof(cell), " %s%*s%s", plain ? " " : shade,
                         l.cw - 2 - text_width(num), "", num);
            else
                snprintf(cell, sizeof(cell), "%*s%s", l.cw - text_width(num), "", num);
            draw_text(y, x0 + (j - hp->left_col) * l.cw, l.cw, attr, cell);
        }
        if (l.sum) {
            float sum = 0.0f;
            for (int j = 0; j < v.cols; j++)
                if (isfinite(row[j]))
                    sum += row[j];
            char num[32], cell[64];
            format_cell(num, sizeof(num), sum, SUM_W - 3);
            snprintf(cell, sizeof(cell), " \u2502%*s%s", SUM_W - 2 - text_width(num), "", num);
            draw_text(y, x0 + (last_col - hp->left_col) * l.cw, SUM_W, t->role_attr[ROLE_DIM],
                      cell);
        }
    }

    /* Footer: the full tokens of the selection, since the axes abbreviate them. */
    char col_full[3 * SCENE_MAX_TOKEN_BYTES + 8], row_full[3 * SCENE_MAX_TOKEN_BYTES + 8];
    char footer[8 * SCENE_MAX_TOKEN_BYTES];
    display_token(row_full, sizeof(row_full), app_model(a)->tokens[a->row]);
    col_label(col_full, sizeof(col_full), a, a->col);
    snprintf(footer, sizeof(footer), "row %d \u201c%s\u201d \u00b7 column %d \u201c%s\u201d%s",
             a->row, row_full, a->col, col_full,
             (v.rows > l.vis_rows || v.cols > l.vis_cols) ? " \u00b7 scrolled: arrows/PgUp/PgDn"
                                                          : "");
    /* Right under the last row, where the eye is, not at the bottom of the panel. */
    int fy = r.y + 2 + (last_row - hp->top_row);
    draw_text(fy < r.y + r.h ? fy : r.y + r.h - 1, r.x, r.w, t->role_attr[ROLE_DIM], footer);
}

static int move_cursor(struct app *a, int drow, int dcol)
{
    int rows = app_rows(a), cols = app_cols(a);
    int row = a->row + drow, col = a->col + dcol;
    row = row < 0 ? 0 : row >= rows ? rows - 1 : row;
    col = col < 0 ? 0 : col >= cols ? cols - 1 : col;
    if (row == a->row && col == a->col)
        return OUTCOME_HANDLED;
    a->row = row;
    a->col = a->col_want = col;
    return OUTCOME_CURSOR_MOVED;
}

static int handle_key(struct panel *p, struct frame *f, enum action act)
{
    struct layout l = compute_layout(p, f);
    switch (act) {
    case ACTION_LEFT:
        return move_cursor(f->app, 0, -1);
    case ACTION_RIGHT:
        return move_cursor(f->app, 0, 1);
    case ACTION_UP:
        return move_cursor(f->app, -1, 0);
    case ACTION_DOWN:
        return move_cursor(f->app, 1, 0);
    case ACTION_PAGE_UP:
        return move_cursor(f->app, -l.vis_rows, 0);
    case ACTION_PAGE_DOWN:
        return move_cursor(f->app, l.vis_rows, 0);
    default:
        return OUTCOME_IGNORED;
    }
}

static int handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    if (buttons & BUTTON4_PRESSED)
        return move_cursor(f->app, -3, 0);
    if (buttons & BUTTON5_PRESSED)
        return move_cursor(f->app, 3, 0);
    struct layout l = compute_layout(p, f);
    const struct heatmap_panel *hp = (const struct heatmap_panel *)p;
    int i = hp->top_row + (y - p->area.y - 2);
    int j = hp->left_col + (x - p->area.x - l.lw) / l.cw;
    if (y - p->area.y < 2 || x - p->area.x < l.lw || i >= app_rows(f->app) ||
        j >= app_cols(f->app) || j >= hp->left_col + l.vis_cols)
        return OUTCOME_IGNORED;
    f->app->row = i;
    f->app->col = f->app->col_want = j;
    return OUTCOME_CURSOR_MOVED;
}

/* A new area: the scroll position is kept, but never leaves the cursor out of view. */
static void resize(struct panel *p, struct frame *f, struct rect area)
{
    p->area = area;
    struct layout l = compute_layout(p, f);
    follow_cursor((struct heatmap_panel *)p, f->app, &l);
}

void heatmap_panel_init(struct heatmap_panel *hp)
{
    memset(hp, 0, sizeof(*hp));
    hp->base.name = "heatmap";
    hp->base.draw = draw;
    hp->base.handle_key = handle_key;
    hp->base.handle_mouse = handle_mouse;
    hp->base.resize = resize;
}
