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

#include "ui/ui.h"

#define CELL_W 7
#define SUM_W  9

/* Finite min and max of a matrix. */
void heatmap_range(struct mat_view v, float *lo, float *hi);
void heatmap_range(struct mat_view v, float *lo, float *hi)
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

/* Column label j: the key token for square stages, else the dimension. */
static void col_label(char *out, size_t size, const struct ui *ui, int j)
{
    if (stage_is_square(ui->app.stage))
        snprintf(out, size, "%s", ui->app.model.tokens[j]);
    else
        snprintf(out, size, "d%d", j);
}

static int label_width(const struct ui *ui)
{
    int w = 4;
    for (int i = 0; i < ui->app.model.n; i++) {
        int tw = text_width(ui->app.model.tokens[i]);
        w = tw > w ? tw : w;
    }
    return (w > 12 ? 12 : w) + 1;
}

struct layout {
    int lw, vis_rows, vis_cols;
    bool sum;
};

static struct layout compute_layout(const struct panel *p, const struct ui *ui)
{
    struct layout l;
    l.lw = label_width(ui);
    l.sum = stage_is_square(ui->app.stage);
    int w = p->area.w - l.lw - (l.sum ? SUM_W : 0);
    l.vis_cols = w / CELL_W > 0 ? w / CELL_W : 1;
    l.vis_rows = p->area.h - 3 > 0 ? p->area.h - 3 : 1;
    return l;
}

/* Keeps the cursor inside the visible window. */
static void follow_cursor(struct ui *ui, const struct layout *l)
{
    const struct app *a = &ui->app;
    if (a->row < ui->top_row)
        ui->top_row = a->row;
    if (a->row >= ui->top_row + l->vis_rows)
        ui->top_row = a->row - l->vis_rows + 1;
    if (a->col < ui->left_col)
        ui->left_col = a->col;
    if (a->col >= ui->left_col + l->vis_cols)
        ui->left_col = a->col - l->vis_cols + 1;
    if (ui->top_row < 0)
        ui->top_row = 0;
    if (ui->left_col < 0)
        ui->left_col = 0;
}

/* "min -0.51 [gradient] max 0.91" at the right end of line y. */
void heatmap_legend(const struct ui *ui, int y, int x_end, float lo, float hi, bool diverging);
void heatmap_legend(const struct ui *ui, int y, int x_end, float lo, float hi, bool diverging)
{
    char lo_s[32], hi_s[32], left[48], right[48];
    format_cell(lo_s, sizeof(lo_s), lo, 8);
    format_cell(hi_s, sizeof(hi_s), hi, 8);
    snprintf(left, sizeof(left), "min %s ", lo_s);
    snprintf(right, sizeof(right), " max %s", hi_s);
    int steps = 8;
    int x = x_end - text_width(left) - steps - text_width(right);
    if (x < 0)
        return;
    x += draw_text(y, x, 40, ui->theme.role_attr[ROLE_DIM], left);
    for (int s = 0; s < steps; s++) {
        float v = lo + (hi - lo) * (float)s / (float)(steps - 1);
        const char *shade;
        int attr = theme_cell_attr(&ui->theme, v, lo, hi, diverging, &shade);
        x += draw_text(y, x, 1, attr, ui->theme.mode == COLOR_MODE_256 ? " " : shade);
    }
    draw_text(y, x, 40, ui->theme.role_attr[ROLE_DIM], right);
}

/* The stage's name as the title calls it. */
static const char *stage_title(enum stage s)
{
    static const char *const titles[STAGE_COUNT] = {
        "inputs (after positional encoding)",
        "queries Q",
        "keys K",
        "values V",
        "scores Q\u00b7K\u1d40",
        "scaled scores",
        "masked scores",
        "attention weights",
        "weights after dropout",
        "context vectors",
        "all heads concatenated",
        "output",
    };
    return s >= 0 && s < STAGE_COUNT ? titles[s] : "?";
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
    struct mat_view v = app_view(a, a->stage, a->head);
    struct layout l = compute_layout(p, ui);
    follow_cursor(ui, &l);

    float lo, hi;
    heatmap_range(v, &lo, &hi);
    bool diverging = lo < 0;
    char title[160];
    if (stage_is_per_head(a->stage))
        snprintf(title, sizeof(title), "head %d of %d \u00b7 %s \u00b7 %d\u00d7%d", a->head,
                 a->model.heads, stage_title(a->stage), v.rows, v.cols);
    else
        snprintf(title, sizeof(title), "%s \u00b7 %d\u00d7%d (shared by all heads)",
                 stage_title(a->stage), v.rows, v.cols);
    draw_text(r.y, r.x, r.w, t->role_attr[ROLE_LABEL], title);
    heatmap_legend(ui, r.y, r.x + r.w, lo, hi, diverging);

    int x0 = r.x + l.lw;
    int last_col = ui->left_col + l.vis_cols < v.cols ? ui->left_col + l.vis_cols : v.cols;
    int last_row = ui->top_row + l.vis_rows < v.rows ? ui->top_row + l.vis_rows : v.rows;
    for (int j = ui->left_col; j < last_col; j++) {
        char full[SCENE_MAX_TOKEN_BYTES + 8], shortl[64], cell[80];
        col_label(full, sizeof(full), ui, j);
        abbreviate(shortl, sizeof(shortl), full, CELL_W - 1);
        snprintf(cell, sizeof(cell), "%*s%s", CELL_W - text_width(shortl), "", shortl);
        int role = j == a->col ? ROLE_SELECTION : ROLE_LABEL;
        draw_text(r.y + 1, x0 + (j - ui->left_col) * CELL_W, CELL_W, t->role_attr[role], cell);
    }
    if (l.sum)
        draw_text(r.y + 1, x0 + (last_col - ui->left_col) * CELL_W, SUM_W, t->role_attr[ROLE_LABEL],
                  " \u2502 row \u03a3");

    for (int i = ui->top_row; i < last_row; i++) {
        int y = r.y + 2 + (i - ui->top_row);
        char lab[64];
        abbreviate(lab, sizeof(lab), a->model.tokens[i], l.lw - 1);
        draw_text(y, r.x, l.lw - 1, t->role_attr[i == a->row ? ROLE_SELECTION : ROLE_LABEL], lab);
        const float *row = v.data + (size_t)i * v.stride;
        for (int j = ui->left_col; j < last_col; j++) {
            float x = row[j];
            char num[32], cell[64];
            const char *shade = " ";
            int attr;
            format_cell(num, sizeof(num), x, CELL_W - 1);
            if (isinf(x) || isnan(x))
                attr = t->role_attr[ROLE_MASKED];
            else
                attr = theme_cell_attr(t, x, lo, hi, diverging, &shade);
            if (i == a->row && j == a->col)
                attr = (attr & ~A_DIM) | A_REVERSE | A_BOLD;
            snprintf(cell, sizeof(cell), "%s%*s%s", isinf(x) || isnan(x) ? " " : shade,
                     CELL_W - 1 - text_width(num), "", num);
            draw_text(y, x0 + (j - ui->left_col) * CELL_W, CELL_W, attr, cell);
        }
        if (l.sum) {
            float sum = 0.0f;
            for (int j = 0; j < v.cols; j++)
                if (isfinite(row[j]))
                    sum += row[j];
            char num[32], cell[64];
            format_cell(num, sizeof(num), sum, SUM_W - 3);
            snprintf(cell, sizeof(cell), " \u2502%*s%s", SUM_W - 2 - text_width(num), "", num);
            draw_text(y, x0 + (last_col - ui->left_col) * CELL_W, SUM_W, t->role_attr[ROLE_DIM],
                      cell);
        }
    }

    /* Footer: the full tokens of the selection, since the axes abbreviate them. */
    char col_full[SCENE_MAX_TOKEN_BYTES + 8], footer[3 * SCENE_MAX_TOKEN_BYTES];
    col_label(col_full, sizeof(col_full), ui, a->col);
    snprintf(footer, sizeof(footer), "row %d \u201c%s\u201d \u00b7 column %d \u201c%s\u201d%s",
             a->row, a->model.tokens[a->row], a->col, col_full,
             (v.rows > l.vis_rows || v.cols > l.vis_cols) ? " \u00b7 scrolled: arrows/PgUp/PgDn"
                                                          : "");
    draw_text(r.y + r.h - 1, r.x, r.w, t->role_attr[ROLE_DIM], footer);
}

static int move_cursor(struct ui *ui, int drow, int dcol)
{
    struct app *a = &ui->app;
    int rows = app_rows(a), cols = app_cols(a);
    int row = a->row + drow, col = a->col + dcol;
    row = row < 0 ? 0 : row >= rows ? rows - 1 : row;
    col = col < 0 ? 0 : col >= cols ? cols - 1 : col;
    if (row == a->row && col == a->col)
        return HANDLED_YES;
    a->row = row;
    a->col = col;
    return HANDLED_CURSOR;
}

static int handle_key(struct panel *p, struct ui *ui, enum action act)
{
    struct layout l = compute_layout(p, ui);
    switch (act) {
    case ACTION_LEFT:
        return move_cursor(ui, 0, -1);
    case ACTION_RIGHT:
        return move_cursor(ui, 0, 1);
    case ACTION_UP:
        return move_cursor(ui, -1, 0);
    case ACTION_DOWN:
        return move_cursor(ui, 1, 0);
    case ACTION_PAGE_UP:
        return move_cursor(ui, -l.vis_rows, 0);
    case ACTION_PAGE_DOWN:
        return move_cursor(ui, l.vis_rows, 0);
    default:
        return HANDLED_NO;
    }
}

static int handle_mouse(struct panel *p, struct ui *ui, int y, int x, unsigned long buttons)
{
    if (buttons & BUTTON4_PRESSED)
        return move_cursor(ui, -3, 0);
    if (buttons & BUTTON5_PRESSED)
        return move_cursor(ui, 3, 0);
    struct layout l = compute_layout(p, ui);
    int i = ui->top_row + (y - p->area.y - 2);
    int j = ui->left_col + (x - p->area.x - l.lw) / CELL_W;
    if (y - p->area.y < 2 || x - p->area.x < l.lw || i >= app_rows(&ui->app) ||
        j >= app_cols(&ui->app) || j >= ui->left_col + l.vis_cols)
        return HANDLED_NO;
    ui->app.row = i;
    ui->app.col = j;
    return HANDLED_CURSOR;
}

void heatmap_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "heatmap";
    p->draw = draw;
    p->handle_key = handle_key;
    p->handle_mouse = handle_mouse;
}
