/* heatmap panel: one head at one stage, every cell with its value and its colour.
 *
 * Query tokens label the rows, key tokens (or d0, d1, ... for matrix stages) the columns. A
 * row-sum column shows the softmax rows summing to 1, and dropout breaking that. -inf cells are
 * dim "-∞", never a colour. The view scrolls to keep the cursor visible.
 *
 * Zoomed out (z Z, explore/zoom.h) a cell is a coloured square for a block of values, their max
 * or mean (b), and the legend says how many; with 256 colours a half block (▀, the upper
 * block's colour in front of the lower's) puts two rows of blocks in a text row. Row labels
 * give each row's positions, a ruler the columns'. The blocks come from a cache that is filled
 * when the view changes, never on a cursor move.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/heatmap.h"

#include "explore/commands.h"
#include "explore/inspect.h"
#include "explore/picture.h"
#include "explore/tokenview.h"
#include "ui/status.h"

#define CELL_W      7 /* "-0.138" and a gap */
#define CELL_W_WIDE 9 /* "-0.1385", print's 4 decimals, when the area has room */
#define SUM_W       10

/* Column label j: the key token for square stages, else the dimension. */
static void col_label(char *out, size_t size, const struct app *a, int j)
{
    if (attn_stage_is_square(app_view_state(a)->stage))
        display_token(out, size, app_col_token(a, j));
    else
        snprintf(out, size, "d%d", j);
}

/* Columns of a row label: the longest token's, at most 12, and a blank. */
static int label_width(const struct app *a)
{
    const struct attn_model *m = app_model(a);
    int w = tokens_label_width(m->tokens, m->n, 12);
    if (!m->cross) /* cross-attention's K and V rows are the source's */
        return w;
    int k = tokens_label_width(m->kv_tokens, m->n_kv, 12);
    return k > w ? k : w;
}

/* The row-sum column belongs where rows are distributions: after the normalisation (summing
 * to 1), after dropout (no longer), and the after-softmax mask (zeroed, not renormalised). */
static bool shows_sum(const struct app *a)
{
    const struct app_view *view = app_view_state(a);
    if (app_showing_delta(a)) /* a Δ row sums to the change of the row's sum: 0, said 6 times */
        return false;
    return tokenview_is_distribution(app_model(a), view->stage);
}

struct layout {
    int lw, cw, vis_rows, vis_cols; /* label and cell widths, visible text rows and cells across */
    bool sum;
    bool zoomed; /* coloured blocks (app_view_state(app)->zoom > 0) instead of numbers */
    bool half;   /* zoomed, two rows of blocks a text row (half blocks) */
    int zoom,
        fit; /* the zoom in force (app_view_state(app)->zoom, at most fit) and the overview's */
    int down, across;      /* zoomed out, the cells there are room for */
    struct zoom_grid grid; /* the blocks; 1 x 1 fully zoomed in */
};

/* Digits of the largest position, for the zoomed row labels "992–999". */
static int digits(int n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* Zoomed out, a row label is a position range and, when there is room, the first token. */
static int zoomed_label_width(const struct app *a, int rows)
{
    int range = 2 * digits(rows > 1 ? rows - 1 : 1) + 1;
    int tok = label_width(a) - 1;
    tok = tok > 6 ? 6 : tok;
    int w = range + 1 + tok + 1;
    return w > label_width(a) ? w : label_width(a);
}

static struct layout compute_layout(const struct panel *p, const struct frame *f)
{
    struct layout l;
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    int rows = app_rows(a), cols = app_cols(a);
    l.vis_rows = p->area.h - 3 > 0 ? p->area.h - 3 : 1;
    /* The zoomed-out geometry first: it decides how far out the overview is. */
    l.half = f->theme->halves && !draw_ascii_only();
    int zlw = zoomed_label_width(a, rows);
    int zcw = l.half ? 1 : 2; /* square cells: a column and half a row, or two columns a row */
    int down = l.vis_rows * (l.half ? 2 : 1);
    int across = (p->area.w - zlw) / zcw > 0 ? (p->area.w - zlw) / zcw : 1;
    l.fit = zoom_fit(rows, cols, down, across);
    l.down = down;
    l.across = across;
    l.zoom = view->zoom < l.fit ? view->zoom : l.fit;
    l.zoomed = l.zoom > 0;
    if (l.zoomed) {
        l.lw = zlw;
        l.cw = zcw;
        l.sum = false;
        l.vis_cols = across;
        l.grid = zoom_grid_make(rows, cols, l.zoom, down, across);
        return l;
    }
    l.half = false;
    l.grid = (struct zoom_grid){rows, cols, 1, 1, rows, cols};
    l.lw = label_width(a);
    l.sum = shows_sum(a);
    int w = p->area.w - l.lw - (l.sum ? SUM_W : 0);
    /* Shade blocks (8 colours, no colour) take a column: one more keeps 4 signed decimals. */
    int wide = f->theme->mode != COLOR_MODE_256 ? CELL_W_WIDE + 1 : CELL_W_WIDE;
    l.cw = cols * wide <= w ? wide : cols * CELL_W_WIDE <= w ? CELL_W_WIDE : CELL_W;
    l.vis_cols = w / l.cw > 0 ? w / l.cw : 1;
    return l;
}

bool heatmap_shows_cell(const struct heatmap_panel *hp, const struct frame *f, int r, int c)
{
    struct layout l = compute_layout(&hp->base, f);
    const struct app *a = f->app;
    if (!hp->base.visible || l.zoomed || r < 0 || c < 0 || r >= app_rows(a) || c >= app_cols(a))
        return false; /* zoomed out, blocks stand for the numbers */
    return r >= hp->top_row && r < hp->top_row + l.vis_rows && c >= hp->left_col &&
           c < hp->left_col + l.vis_cols;
}

int heatmap_min_width(const struct app *a)
{
    return label_width(a) + app_model(a)->n_kv * CELL_W_WIDE + SUM_W + 1;
}

/* Keeps the cursor's cell (or block) inside the visible window; a new zoom centres it, so the
 * view zooms around the cursor. Zoomed out with half blocks the window starts at an even block
 * row, so a text row always holds the same two. */
static void follow_cursor(struct heatmap_panel *hp, const struct app *a, const struct layout *l)
{
    const struct app_view *view = app_view_state(a);
    const struct zoom_grid *g = &l->grid;
    int bi = view->row / g->br, bj = view->col / g->bc;
    int per = l->half ? 2 : 1;
    int text_rows = (g->nbr + per - 1) / per;
    if (hp->shown_zoom != l->zoom || hp->shown_br != g->br || hp->shown_bc != g->bc) {
        if (hp->shown_br > 0) { /* not the first layout: a zoom (or a new shape) */
            hp->top_row = (bi / per - l->vis_rows / 2) * per;
            hp->left_col = bj - l->vis_cols / 2;
        }
        hp->shown_zoom = l->zoom;
        hp->shown_br = g->br;
        hp->shown_bc = g->bc;
    }
    hp->top_row = scroll_follow(hp->top_row / per, bi / per, l->vis_rows, text_rows) * per;
    hp->left_col = scroll_follow(hp->left_col, bj, l->vis_cols, g->nbc);
}

/* "min -0.51 [gradient] max 0.91" at the right end of line y; returns its width. */
int heatmap_legend(const struct theme *t, int y, int x_end, float lo, float hi, bool diverging)
{
    return heatmap_legend_named(t, y, x_end, lo, hi, diverging, NULL);
}

int heatmap_legend_named(const struct theme *t, int y, int x_end, float lo, float hi,
                         bool diverging, const char *scale)
{
    char lo_s[32], hi_s[32], left[256], right[48];
    format_cell(lo_s, sizeof(lo_s), lo, 8);
    format_cell(hi_s, sizeof(hi_s), hi, 8);
    snprintf(left, sizeof(left), "%s%smin %s ", scale ? scale : "", scale ? " \u00b7 " : "", lo_s);
    snprintf(right, sizeof(right), " max %s", hi_s);
    int steps = 8;
    int width = text_width(left) + steps + text_width(right);
    int x = x_end - width;
    if (x < 0)
        return 0;
    x += draw_text(y, x, text_width(left), t->role_attr[ROLE_DIM], left);
    for (int s = 0; s < steps; s++) {
        float v = lo + (hi - lo) * (float)s / (float)(steps - 1);
        struct theme_look look = theme_cell_look(t, v, lo, hi, diverging);
        x += draw_text(y, x, 1, look.shade_attr, look.shade);
    }
    draw_text(y, x, 40, t->role_attr[ROLE_DIM], right);
    return width;
}

/* The look (and scale step) of value x with the row's range, on the palette's mapping: the same
 * colour a picture (R, attnscope render) gives it. */
static struct theme_look paint_look(const struct theme *t, const struct palette_map *pm, float x,
                                    float row_lo, float row_hi, int *step)
{
    double pos = palette_map_position(pm, x, row_lo, row_hi);
    if (step)
        *step = palette_step(pos);
    return theme_position_look(t, pos, pm->diverging);
}

/* Fully zoomed in: a number in every cell, the row sums beside them. */
static void draw_numbers(struct heatmap_panel *hp, struct frame *f, const struct layout *lp,
                         struct attn_mat_view v, bool mean, const struct palette_map *pt)
{
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = hp->base.area;
    struct layout l = *lp;
    int shaded = t->mode != COLOR_MODE_256; /* cells spend a column on a shade block */
    int x0 = r.x + l.lw;
    int last_col = hp->left_col + l.vis_cols < v.cols ? hp->left_col + l.vis_cols : v.cols;
    int last_row = hp->top_row + l.vis_rows < v.rows ? hp->top_row + l.vis_rows : v.rows;
    for (int j = hp->left_col; j < last_col; j++) {
        char full[3 * SCENE_MAX_TOKEN_BYTES + 8], shortl[64], cell[80];
        col_label(full, sizeof(full), a, j);
        abbreviate(shortl, sizeof(shortl), full, l.cw - 1);
        snprintf(cell, sizeof(cell), "%*s%s", l.cw - text_width(shortl), "", shortl);
        int role = j == view->col ? ROLE_SELECTION : ROLE_LABEL;
        draw_text(r.y + 1, x0 + (j - hp->left_col) * l.cw, l.cw, t->role_attr[role], cell);
    }
    if (l.sum)
        draw_text(r.y + 1, x0 + (last_col - hp->left_col) * l.cw, SUM_W, t->role_attr[ROLE_LABEL],
                  " \u2502 row \u03a3");

    /* The KV cache's stages: the rows the last edit computed (a generated or last-word token)
       are marked +, the ones before them came from the cache. */
    int first_new = 0;
    if (!mean && inspect_is_kv_stage(view->stage)) {
        char brief[120], full[640];
        first_new = inspect_kv_cache_rows(brief, sizeof(brief), full, sizeof(full), a);
    }
    for (int i = hp->top_row; i < last_row; i++) {
        int y = r.y + 2 + (i - hp->top_row);
        char lab[64];
        char shown[3 * SCENE_MAX_TOKEN_BYTES + 1];
        display_token(shown + (first_new > 0 && i >= first_new),
                      sizeof(shown) - (first_new > 0 && i >= first_new), app_row_token(a, i));
        if (first_new > 0 && i >= first_new)
            shown[0] = '+';
        abbreviate(lab, sizeof(lab), shown, l.lw - 1);
        draw_text(y, r.x, l.lw - 1, t->role_attr[i == view->row ? ROLE_SELECTION : ROLE_LABEL],
                  lab);
        const float *row = v.data + (size_t)i * v.stride;
        float row_lo = pt->lo, row_hi = pt->hi;
        if (pt->mode == SCALE_BY_ROW) /* this query's own range: O(n) per row drawn */
            palette_row_range(&row_lo, &row_hi, row, v.cols);
        for (int j = hp->left_col; j < last_col; j++) {
            float x = row[j];
            char num[32], cell[64];
            const char *shade = " ";
            int attr;
            /* A dropped cell says so: on a projector a 0 and a dropped weight look alike. */
            bool dropped =
                !mean && view->stage == STAGE_DROPOUT && app_model(a)->keep &&
                !app_model(a)->keep[((size_t)view->head * v.rows + (size_t)i) * v.rows + j];
            if (dropped)
                snprintf(num, sizeof(num), "drop");
            else
                format_cell(num, sizeof(num), x, l.cw - 1 - shaded);
            /* With a shade block in front, keep a blank between it and the number. */
            if (shaded && !dropped && text_width(num) >= l.cw - 2)
                format_cell(num, sizeof(num), x, l.cw - 3);
            bool plain = isinf(x) || isnan(x) || dropped;
            struct theme_look look = {t->role_attr[ROLE_MASKED], t->role_attr[ROLE_MASKED], " "};
            if (!plain)
                look = paint_look(t, pt, x, row_lo, row_hi, NULL);
            attr = look.attr;
            int shade_attr = look.shade_attr;
            shade = look.shade;
            if (i == view->row && j == view->col) {
                attr = theme_cursor_attr(t, attr);
                shade_attr = theme_cursor_attr(t, shade_attr);
            }
            /* Without 256 colours a shade block leads the cell, after a blank, so it is never
             * read as part of the neighbour's number; in 8 colours it has a pair of its own. */
            int cx = x0 + (j - hp->left_col) * l.cw;
            if (shaded) {
                snprintf(cell, sizeof(cell), "%*s%s", l.cw - 2 - text_width(num), "", num);
                draw_text(y, cx, 1, attr, " ");
                draw_text(y, cx + 1, 1, shade_attr, shade);
                draw_text(y, cx + 2, l.cw - 2, attr, cell);
            } else {
                snprintf(cell, sizeof(cell), "%*s%s", l.cw - text_width(num), "", num);
                draw_text(y, cx, l.cw, attr, cell);
            }
        }
        if (l.sum) {
            float sum = 0.0f;
            for (int j = 0; j < v.cols; j++)
                if (row[j] != -INFINITY) /* a masked cell adds nothing; a nan row sums to nan */
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
    char footer[8 * SCENE_MAX_TOKEN_BYTES], zoom_out[24], more[96] = "";
    display_token(row_full, sizeof(row_full), app_row_token(a, view->row));
    col_label(col_full, sizeof(col_full), a, view->col);
    key_display(zoom_out, sizeof(zoom_out), f->keymap, ACTION_ZOOM_OUT);
    if (v.rows > l.vis_rows || v.cols > l.vis_cols)
        snprintf(more, sizeof(more), " \u00b7 scrolled: arrows/PgUp/PgDn \u00b7 %s zooms out",
                 zoom_out);
    snprintf(footer, sizeof(footer), "row %d \u201c%s\u201d \u00b7 column %d \u201c%s\u201d%s",
             view->row, row_full, view->col, col_full, more);
    /* Right under the last row, where the eye is, not at the bottom of the panel. */
    int fy = r.y + 2 + (last_row - hp->top_row);
    draw_text(fy < r.y + r.h ? fy : r.y + r.h - 1, r.x, r.w, t->role_attr[ROLE_DIM], footer);
}

/* Zoomed out: the value of block (bi, bj), from the cache (filled by draw when the view
 * changed); one value a block reads the matrix itself. */
static float block_value(const struct heatmap_panel *hp, const struct layout *l,
                         struct attn_mat_view v, enum block_agg agg, int bi, int bj)
{
    if (l->grid.br == 1 && l->grid.bc == 1)
        return v.data[(size_t)bi * (size_t)v.stride + (size_t)bj];
    if (hp->blocks.valid)
        return block_cache_at(&hp->blocks, agg, bi, bj);
    /* out of memory for the cache: this block alone */
    int r0, r1, c0, c1;
    zoom_block_span(&l->grid, bi, bj, &r0, &r1, &c0, &c1);
    struct block_stats st;
    zoom_block_stats(&st, v, r0, r1, c0, c1);
    return block_stats_value(&st, agg);
}

/* The range of block row bi's values (the row scale zoomed out). */
static void block_row_range(const struct heatmap_panel *hp, const struct layout *l,
                            struct attn_mat_view v, enum block_agg agg, int bi, float *lo,
                            float *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int bj = 0; bj < l->grid.nbc; bj++) {
        float x = block_value(hp, l, v, agg, bi, bj);
        if (isfinite(x)) {
            *lo = fminf(*lo, x);
            *hi = fmaxf(*hi, x);
        }
    }
    if (*lo > *hi)
        *lo = *hi = 0;
}

/* "992–999 the": the positions a zoomed-out text row covers, then its first token. */
static void range_label(char *out, size_t size, const struct app *a, int first, int last, int width)
{
    char shown[3 * SCENE_MAX_TOKEN_BYTES + 1], text[3 * SCENE_MAX_TOKEN_BYTES + 32];
    display_token(shown, sizeof(shown), app_row_token(a, first));
    if (first == last)
        snprintf(text, sizeof(text), "%s", shown);
    else
        snprintf(text, sizeof(text), "%d\u2013%d %s", first, last, shown);
    abbreviate(out, size, text, width);
    /* a token cut to "…" alone says nothing: the range without it */
    if (first != last && text_width(out) < width && strstr(out, "\u2026")) {
        char bare[32];
        snprintf(bare, sizeof(bare), "%d\u2013%d", first, last);
        snprintf(out, size, "%s", bare);
    }
}

/* The ruler over zoomed-out columns: the first position of a block every 8 columns or so, an
 * arrow over the cursor's column. */
static void draw_ruler(int y, int x0, const struct layout *l, const struct heatmap_panel *hp,
                       const struct theme *t, int cursor_bj)
{
    const struct zoom_grid *g = &l->grid;
    int shown = g->nbc - hp->left_col < l->vis_cols ? g->nbc - hp->left_col : l->vis_cols;
    int width = shown * l->cw;
    int cursor_x = (cursor_bj - hp->left_col) * l->cw;
    int step = 8 / l->cw; /* blocks between labels */
    int next_free = 0;
    for (int c = 0; c < shown; c++) {
        int bj = hp->left_col + c;
        if (bj % step != 0)
            continue;
        char num[16];
        snprintf(num, sizeof(num), "%d", bj * g->bc);
        int x = c * l->cw, w = (int)strlen(num);
        if (x < next_free || x + w > width || (cursor_x >= x && cursor_x < x + w + 1))
            continue;
        draw_text(y, x0 + x, w, t->role_attr[ROLE_LABEL], num);
        next_free = x + w + 1;
    }
    if (cursor_x >= 0 && cursor_x < width)
        draw_text(y, x0 + cursor_x, l->cw, t->role_attr[ROLE_SELECTION],
                  l->cw == 1 ? "\u2193" : "\u2193\u2193");
}

/* Zoomed out: a coloured square for every block; two block rows a text row with half blocks. */
static void draw_zoomed(struct heatmap_panel *hp, struct frame *f, const struct layout *l,
                        struct attn_mat_view v, const struct palette_map *pt)
{
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = hp->base.area;
    const struct zoom_grid *g = &l->grid;
    enum block_agg agg = view->block_agg;
    int per = l->half ? 2 : 1;
    int cbi = view->row / g->br, cbj = view->col / g->bc;
    int x0 = r.x + l->lw;
    draw_ruler(r.y + 1, x0, l, hp, t, cbj);

    int text_rows = 0;
    for (int k = 0; k < l->vis_rows; k++) {
        int bu = hp->top_row + k * per, bl = l->half ? bu + 1 : -1;
        if (bu >= g->nbr)
            break;
        if (bl >= g->nbr)
            bl = -1;
        int y = r.y + 2 + k;
        text_rows = k + 1;
        int first = bu * g->br, last = ((bl >= 0 ? bl : bu) + 1) * g->br - 1;
        last = last < g->rows ? last : g->rows - 1;
        char lab[64];
        range_label(lab, sizeof(lab), a, first, last, l->lw - 1);
        bool sel = view->row >= first && view->row <= last;
        draw_text(y, r.x, l->lw - 1, t->role_attr[sel ? ROLE_SELECTION : ROLE_LABEL], lab);
        float ulo = pt->lo, uhi = pt->hi, llo = pt->lo, lhi = pt->hi;
        if (pt->mode == SCALE_BY_ROW) { /* each block row on its own range */
            block_row_range(hp, l, v, agg, bu, &ulo, &uhi);
            if (bl >= 0)
                block_row_range(hp, l, v, agg, bl, &llo, &lhi);
        }
        for (int c = 0; c < l->vis_cols; c++) {
            int bj = hp->left_col + c;
            if (bj >= g->nbc)
                break;
            int x = x0 + c * l->cw;
            float xu = block_value(hp, l, v, agg, bu, bj);
            int su = -1, sl = -1;
            struct theme_look look = {t->role_attr[ROLE_MASKED], t->role_attr[ROLE_MASKED], " "};
            if (isfinite(xu))
                look = paint_look(t, pt, xu, ulo, uhi, &su);
            bool cursor_here = bj == cbj && (bu == cbi || bl == cbi);
            if (!l->half) {
                /* two columns a block: the colour, or the shade glyph twice (the glyph's look) */
                char cell[16];
                int attr = look.shade_attr;
                if (!isfinite(xu))
                    snprintf(cell, sizeof(cell), " \u00b7");
                else
                    snprintf(cell, sizeof(cell), "%s%s", look.shade, look.shade);
                if (cursor_here)
                    attr = theme_cursor_attr(t, attr);
                draw_text(y, x, l->cw, attr, cell);
                continue;
            }
            float xl = bl >= 0 ? block_value(hp, l, v, agg, bl, bj) : -INFINITY;
            if (bl >= 0 && isfinite(xl))
                paint_look(t, pt, xl, llo, lhi, &sl);
            if (cursor_here) {
                /* The cursor's block fills its text cell with a mark, in its own colour. */
                float xc = bu == cbi ? xu : xl;
                float clo = bu == cbi ? ulo : llo, chi = bu == cbi ? uhi : lhi;
                int cattr = isfinite(xc) ? paint_look(t, pt, xc, clo, chi, NULL).attr
                                         : t->role_attr[ROLE_CURSOR];
                draw_text(y, x, 1, cattr | A_BOLD, "\u25c6");
            } else if (su < 0 && sl < 0) {
                draw_text(y, x, 1, A_NORMAL, " ");
            } else if (su < 0) {
                draw_cell_pair(
                    y, x, "\u2584", A_NORMAL,
                    theme_half_pair(t, pt->diverging && pt->mode != SCALE_BY_LOG, sl, -1));
            } else {
                draw_cell_pair(
                    y, x, "\u2580", A_NORMAL,
                    theme_half_pair(t, pt->diverging && pt->mode != SCALE_BY_LOG, su, sl));
            }
        }
    }

    /* Footer: the cursor's block (or value) and its tokens. */
    char footer[8 * SCENE_MAX_TOKEN_BYTES], zin[24], zout[24];
    key_display(zin, sizeof(zin), f->keymap, ACTION_ZOOM_IN);
    key_display(zout, sizeof(zout), f->keymap, ACTION_ZOOM_OUT);
    int r0, r1, c0, c1;
    zoom_block_span(g, cbi, cbj, &r0, &r1, &c0, &c1);
    char row_full[3 * SCENE_MAX_TOKEN_BYTES + 8], col_full[3 * SCENE_MAX_TOKEN_BYTES + 8];
    size_t o = 0;
    if (g->br == 1 && g->bc == 1) {
        char num[32];
        display_token(row_full, sizeof(row_full), app_row_token(a, view->row));
        col_label(col_full, sizeof(col_full), a, view->col);
        format_cell(num, sizeof(num), v.data[(size_t)view->row * v.stride + view->col], 8);
        o = (size_t)snprintf(footer, sizeof(footer),
                             "row %d \u201c%s\u201d \u00b7 column %d \u201c%s\u201d: %s", view->row,
                             row_full, view->col, col_full, num);
    } else {
        struct block_stats st;
        zoom_block_stats(&st, v, r0, r1, c0, c1);
        char mx[32], mn[32];
        format_cell(mx, sizeof(mx), st.max, 8);
        format_cell(mn, sizeof(mn), st.mean, 8);
        char rows[48], cols[48];
        zoom_span_text(rows, sizeof(rows), "row", "rows", r0, r1 - 1);
        zoom_span_text(cols, sizeof(cols), "column", "columns", c0, c1 - 1);
        o = (size_t)snprintf(footer, sizeof(footer), "%s \u00d7 %s: max %s, mean %s", rows, cols,
                             mx, mn);
    }
    if (o < sizeof(footer))
        snprintf(footer + o, sizeof(footer) - o, " \u00b7 %s zooms in%s%s", zin,
                 l->zoom < l->fit ? ", " : "", l->zoom < l->fit ? zout : "");
    if (l->zoom < l->fit && o < sizeof(footer))
        snprintf(footer + strlen(footer), sizeof(footer) - strlen(footer), " out");
    int fy = r.y + 2 + text_rows;
    draw_text(fy < r.y + r.h ? fy : r.y + r.h - 1, r.x, r.w, t->role_attr[ROLE_DIM], footer);
}

/* "1 cell = 8×8 tokens, max": what a zoomed-out cell stands for, for the legend. */
static void zoom_legend(char *out, size_t size, const struct app *a, const struct layout *l)
{
    const struct app_view *view = app_view_state(a);
    zoom_cell_text(out, size, &l->grid, attn_stage_is_square(view->stage), view->block_agg);
}

static void heatmap_draw(struct panel *p, struct frame *f)
{
    struct heatmap_panel *hp = (struct heatmap_panel *)p;
    struct app *a = f->app;
    const struct app_result *res = app_result(a);
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    struct attn_mat_view v = app_shown_view(f->app);
    bool mean = app_showing_mean(a);
    bool delta = app_showing_delta(a) &&
                 v.data == app_caches(a)->delta.values; /* Δ vs the pinned baseline */
    bool rollout = view->rollout; /* app_shown_view gave the rollout (or turned it off) */
    /* The caches' key for what is shown: a head, the mean (-3), a head's Δ (-4 - head), or the
       rollout (RANGE_ROLLOUT). */
    int key = rollout ? RANGE_ROLLOUT : delta ? -4 - view->head : mean ? -3 : view->head;
    struct layout l = compute_layout(p, f);
    follow_cursor(hp, a, &l);
    app_set_zoom_shown(a, l.zoomed ? &l.grid : NULL);

    float lo, hi;
    /* Blocks are aggregated here, once per view; their range is the colour scale's, so the
     * values' own range (another pass over n x n) is needed only without them. */
    if (l.zoomed && (l.grid.br > 1 || l.grid.bc > 1) &&
        block_cache_get(&hp->blocks, v, &l.grid, res->generation, view->layer, (int)view->stage,
                        key) == 0) {
        lo = hp->blocks.lo[view->block_agg];
        hi = hp->blocks.hi[view->block_agg];
    } else {
        range_get(&hp->range, a, key, &lo, &hi);
    }
    if (delta) { /* a diverging scale centred on 0: a gain and a loss of one size look alike */
        float m = fmaxf(fabsf(lo), fabsf(hi));
        lo = -m;
        hi = m;
    }
    bool diverging = lo < 0;
    const char *what = picture_stage_title(app_model(a), view->stage);
    char title[400];
    char kv[240];
    inspect_kv_sharing(kv, sizeof(kv), a, view->head);
    /* the KV cache's stages: its size and the rows the last edit computed */
    char cache[120] = "", cache_full[640];
    if (!mean && !rollout && inspect_is_kv_stage(view->stage) &&
        inspect_kv_cache_rows(cache, sizeof(cache), cache_full, sizeof(cache_full), a) >= 0) {
        size_t o = strlen(kv);
        snprintf(kv + o, sizeof(kv) - o, "%s%s", o ? " \u00b7 " : "", cache);
    }
    /* The KV sharing last: on a narrow screen the stage's name and shape matter more. */
    char layer[64] = "";
    if (app_net(a)->layers > 1) {
        attn_net_layer_name(layer, sizeof(layer) - 8, app_net(a), view->layer, false);
        strcat(layer, " \u00b7 ");
    }
    char since[160] = "";
    if (delta) { /* "Δ vs baseline (seed 123 → 7) · ": what changed, as the edits say it */
        char change[200];
        app_baseline_change(change, sizeof(change), a);
        snprintf(since, sizeof(since), "\u0394 vs baseline (%.120s) \u00b7 ",
                 change[0] ? change : "no change yet");
    }
    /* An ablated head's weights are its own still; what it hands on is not. */
    char ablated[48] = "";
    enum attn_head_mode hm = app_head_mode(a, view->layer, view->head);
    if (hm != HEAD_KEEP)
        snprintf(ablated, sizeof(ablated), " \u00b7 ablated (%s)", attn_head_mode_name(hm));
    if (rollout && view->layer > 0) /* the product of the layers' A' up to this one */
        snprintf(title, sizeof(title),
                 "attention rollout \u00b7 layers 0\u2013%d (of %d) \u00b7 %d\u00d7%d", view->layer,
                 app_net(a)->layers, v.rows, v.cols);
    else if (rollout)
        snprintf(title, sizeof(title), "attention rollout \u00b7 layer 0%s \u00b7 %d\u00d7%d",
                 app_net(a)->layers > 1 ? " (the first)" : "", v.rows, v.cols);
    else if (mean)
        snprintf(title, sizeof(title), "%smean of the %d heads \u00b7 %s \u00b7 %d\u00d7%d", layer,
                 app_model(a)->heads, what, v.rows, v.cols);
    else if (attn_stage_is_per_head(view->stage))
        snprintf(title, sizeof(title), "%s%shead %d (of %d) \u00b7 %s \u00b7 %d\u00d7%d%s%s%s",
                 since, layer, view->head, app_model(a)->heads, what, v.rows, v.cols, ablated,
                 kv[0] && view->stage != STAGE_QUERIES ? " \u00b7 " : "",
                 view->stage != STAGE_QUERIES ? kv : "");
    else
        snprintf(title, sizeof(title), "%s%s%s \u00b7 %d\u00d7%d \u00b7 all heads%s%s", since,
                 layer, what, v.rows, v.cols, cache[0] ? " \u00b7 " : "", cache);
    /* The legend first, so the title yields to it rather than running into it. */
    /* The log scale needs values >= 0: a signed matrix stays linear, and the legend says so. */
    struct palette_map pm;
    palette_map_init(&pm, view->color_scale, lo, hi);
    const char *scale_name = palette_map_label(&pm, view->color_scale);
    char named[160];
    if (l.zoomed) { /* the legend says what a cell stands for */
        zoom_legend(named, sizeof(named), a, &l);
        if (scale_name)
            snprintf(named + strlen(named), sizeof(named) - strlen(named), " \u00b7 %s",
                     scale_name);
        scale_name = named;
    }
    int legend_w = heatmap_legend_named(t, r.y, r.x + r.w, lo, hi, diverging, scale_name);
    char clipped[256];
    abbreviate(clipped, sizeof(clipped), title, r.w - legend_w - 1);
    draw_text(r.y, r.x, r.w - legend_w - 1, t->role_attr[ROLE_LABEL], clipped);

    if (l.zoomed)
        draw_zoomed(hp, f, &l, v, &pm);
    else
        draw_numbers(hp, f, &l, v, mean || delta, &pm);
}

/* Moves the cursor by blocks of the current zoom (single values fully zoomed in). */
static int move_cursor(struct app *a, const struct layout *l, int dbi, int dbj)
{
    const struct app_view *view = app_view_state(a);
    int row = view->row, col = view->col;
    if (!zoom_step_cursor(&l->grid, &row, &col, dbi, dbj))
        return OUTCOME_HANDLED;
    app_view_mut(a)->row = row;
    app_view_mut(a)->col = app_view_mut(a)->col_want = col;
    return OUTCOME_CURSOR_MOVED;
}

static int heatmap_handle_key(struct panel *p, struct frame *f, enum action act)
{
    struct layout l = compute_layout(p, f);
    int page = l.vis_rows * (l.half ? 2 : 1);
    switch (act) {
    case ACTION_LEFT:
        return move_cursor(f->app, &l, 0, -1);
    case ACTION_RIGHT:
        return move_cursor(f->app, &l, 0, 1);
    case ACTION_UP:
        return move_cursor(f->app, &l, -1, 0);
    case ACTION_DOWN:
        return move_cursor(f->app, &l, 1, 0);
    case ACTION_PAGE_UP:
        return move_cursor(f->app, &l, -page, 0);
    case ACTION_PAGE_DOWN:
        return move_cursor(f->app, &l, page, 0);
    case ACTION_ZOOM_IN:
        return command_zoom(f->app, -1, l.down, l.across);
    case ACTION_ZOOM_OUT:
        return command_zoom(f->app, 1, l.down, l.across);
    default:
        return OUTCOME_IGNORED;
    }
}

static int heatmap_handle_mouse(struct panel *p, struct frame *f, int y, int x,
                                unsigned long buttons)
{
    struct layout l = compute_layout(p, f);
    if (buttons & BUTTON4_PRESSED)
        return move_cursor(f->app, &l, -3, 0);
    if (buttons & BUTTON5_PRESSED)
        return move_cursor(f->app, &l, 3, 0);
    const struct heatmap_panel *hp = (const struct heatmap_panel *)p;
    /* The block under the click (the upper one of a half-block cell). */
    int bi = hp->top_row + (y - p->area.y - 2) * (l.half ? 2 : 1);
    int bj = hp->left_col + (x - p->area.x - l.lw) / l.cw;
    if (y - p->area.y < 2 || x - p->area.x < l.lw || bi >= l.grid.nbr || bj >= l.grid.nbc ||
        bj >= hp->left_col + l.vis_cols)
        return OUTCOME_IGNORED;
    app_view_mut(f->app)->row = bi * l.grid.br;
    app_view_mut(f->app)->col = app_view_mut(f->app)->col_want = bj * l.grid.bc;
    return OUTCOME_CURSOR_MOVED;
}

/* A new area: the scroll position is kept, but never leaves the cursor out of view. */
static void heatmap_resize(struct panel *p, struct frame *f, struct rect area)
{
    p->area = area;
    struct layout l = compute_layout(p, f);
    follow_cursor((struct heatmap_panel *)p, f->app, &l);
}

void heatmap_panel_free(struct heatmap_panel *hp)
{
    block_cache_free(&hp->blocks);
}

void heatmap_panel_init(struct heatmap_panel *hp)
{
    memset(hp, 0, sizeof(*hp));
    hp->base.name = "heatmap";
    hp->base.slot = SLOT_MAP; /* the map, unless another view asks for the place */
    hp->base.follows_cursor = true;
    hp->base.draw = heatmap_draw;
    hp->base.handle_key = heatmap_handle_key;
    hp->base.handle_mouse = heatmap_handle_mouse;
    hp->base.resize = heatmap_resize;
}
