/* tokens panel: the token view, BertViz's head view in a terminal (see tokens.h).
 *
 * Top to bottom: a title (head or mean, stage), the sentence wrapped to the panel with every
 * token a chip (a marker column, then the token), a line saying which tokens are in view when
 * the sentence does not fit, then the query's top keys as bars, largest first. A chip's colour
 * is the heatmap cell's for that key; without 256 colours its marker is the cell's shade block,
 * so 8 colours, NO_COLOR and LC_ALL=C (ASCII stand-ins) still read. The query's marker is ▶ and
 * it is drawn as the map's cursor; a masked key (the causal future) is dim, marked ×. The bars
 * are block characters and carry their numbers, so no information is in colour alone.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore/picture.h"
#include "ui/status.h"
#include "ui/tokens.h"

#define CHIP_MAX  16 /* columns of a chip at most: the marker and 15 of the token */
#define LABEL_MAX 12 /* columns of a bar's token */
#define BAR_MAX   64 /* columns of a full bar at most: a wide screen need not stretch it */

/* A token as a chip shows it: visible blanks, cut to cap - 1 columns (the marker is the 1). */
static void chip_text(char *out, size_t size, const char *token, int cap)
{
    char shown[3 * SCENE_MAX_TOKEN_BYTES + 1];
    display_token(shown, sizeof(shown), token);
    abbreviate(out, size, shown, cap - 1);
}

/* Every token's chip width, measured once per result (and chip size), not per frame. */
static bool ensure_widths(struct tokens_panel *tp, const struct app *a, int cap)
{
    const struct app_result *res = app_result(a);
    const struct attn_model *m = app_model(a);
    /* the chips are the keys: the sentence, or a cross-attention's source */
    char *const *keys = attn_model_key_tokens(m);
    int n = m->n_kv;
    if (tp->widths_valid && tp->widths_generation == res->generation && tp->widths_n == n &&
        tp->widths_keys == keys && tp->widths_max == cap)
        return true;
    if (n > tp->widths_cap) {
        int *grown = realloc(tp->widths, (size_t)n * sizeof(int));
        if (!grown)
            return false;
        tp->widths = grown;
        tp->widths_cap = n;
    }
    for (int i = 0; i < n; i++) {
        char text[3 * SCENE_MAX_TOKEN_BYTES + 8];
        chip_text(text, sizeof(text), keys[i], cap);
        tp->widths[i] = 1 + text_width(text);
    }
    tp->widths_generation = res->generation;
    tp->widths_n = n;
    tp->widths_keys = keys;
    tp->widths_max = cap;
    tp->widths_valid = true;
    if (tp->first >= n)
        tp->first = -1;
    return true;
}

/* Writes text from line y on, wrapped at blanks to width columns; returns the next line. */
static int wrap_lines(int y, int y_end, int x, int width, int attr, const char *text)
{
    const char *s = text;
    while (*s && y < y_end) {
        while (*s == ' ')
            s++;
        /* The longest run of whole words that fits; a word longer than the line is cut. */
        size_t fit = 0, n = 0;
        char probe[512];
        while (s[n]) {
            size_t end = n;
            while (s[end] == ' ')
                end++;
            while (s[end] && s[end] != ' ')
                end++;
            if (end >= sizeof(probe))
                break;
            memcpy(probe, s, end);
            probe[end] = '\0';
            if (text_width(probe) > width)
                break;
            fit = n = end;
        }
        if (fit == 0) { /* one word wider than the line */
            draw_text(y++, x, width, attr, s);
            while (*s && *s != ' ')
                s++;
            continue;
        }
        memcpy(probe, s, fit);
        probe[fit] = '\0';
        draw_text(y++, x, width, attr, probe);
        s += fit;
    }
    return y;
}

/* "layer 1 · head 0 · attention weights" or "mean of the 2 heads · ...", for the title. */
static void title_text(char *out, size_t size, const struct app *a, int head)
{
    const struct app_view *view = app_view_state(a);
    char layer[64] = "", who[48];
    if (app_net(a)->layers > 1) {
        attn_net_layer_name(layer, sizeof(layer) - 8, app_net(a), view->layer, false);
        strcat(layer, " \u00b7 ");
    }
    if (head == TOKENVIEW_ROLLOUT) {
        snprintf(out, size, "token view \u00b7 attention rollout through layer %d", view->layer);
        return;
    }
    if (head == TOKENVIEW_MEAN)
        snprintf(who, sizeof(who), "mean of the %d heads", app_model(a)->heads);
    else if (attn_stage_is_per_head(view->stage))
        snprintf(who, sizeof(who), "head %d", head);
    else
        snprintf(who, sizeof(who), "all heads");
    snprintf(out, size, "token view \u00b7 %s%s \u00b7 %s", layer, who,
             picture_stage_title(app_model(a), view->stage));
}

/* A stage without a value for every key: say what the view is for and how to get there. */
static void draw_not_square(struct frame *f, struct attn_mat_view v, int y, int y_end, int x0,
                            int w)
{
    const struct app *a = f->app;
    const struct theme *t = f->theme;
    char next[24], prev[24], back[24], tok[64], text[600];
    key_display(next, sizeof(next), f->keymap, ACTION_STAGE_NEXT);
    key_display(prev, sizeof(prev), f->keymap, ACTION_STAGE_PREV);
    key_display(back, sizeof(back), f->keymap, ACTION_TOKEN_VIEW);
    chip_text(tok, sizeof(tok), app_model(a)->tokens[app_view_state(a)->row], LABEL_MAX + 1);
    snprintf(text, sizeof(text),
             "The token view shows what a token looks at: the n\u00d7n stages, scores to dropout, "
             "where the query \u201c%s\u201d has a value for every key.",
             tok);
    y = wrap_lines(y, y_end, x0, w, t->role_attr[ROLE_HELP], text);
    snprintf(text, sizeof(text),
             "This stage is %d\u00d7%d: a row per token, a column per dimension. %s and %s step "
             "through the stages; %s shows the inspector.",
             v.rows, v.cols, next, prev, back);
    wrap_lines(y + (y + 1 < y_end), y_end, x0, w, t->role_attr[ROLE_DIM], text);
}

/* True when key j was dropped for query `row` (dropout, one head: the map writes "drop"). */
static bool dropped(const struct app *a, int head, int row, int j)
{
    const struct attn_model *m = app_model(a);
    return app_view_state(a)->stage == STAGE_DROPOUT && head >= 0 && m->keep &&
           !m->keep[((size_t)head * (size_t)m->n + (size_t)row) * (size_t)m->n_kv + (size_t)j];
}

/* The sentence, or the window of it around the query, from line y; returns the lines used. */
static int draw_sentence(struct tokens_panel *tp, struct frame *f, struct attn_mat_view v,
                         const struct palette_map *pm, const struct tokenview_window *win, int y,
                         int x0, int w)
{
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    const struct tokenview_focus *fc = &tp->focus;
    const float *rowv = v.data + (size_t)view->row * (size_t)v.stride;
    int row = 0, x = 0, used = 0;
    for (int i = win->first; i <= win->last; i++) {
        int cw = tokenview_place(tp->widths[i], w, &row, &x);
        char text[3 * SCENE_MAX_TOKEN_BYTES + 8], chip[3 * SCENE_MAX_TOKEN_BYTES + 16];
        chip_text(text, sizeof(text), attn_model_key_tokens(app_model(a))[i], tp->widths_max);
        struct theme_look look = {t->role_attr[ROLE_MASKED], t->role_attr[ROLE_MASKED], "\u00d7"};
        float val = rowv[i];
        if (i >= fc->visible_start && i < fc->visible_end && isfinite(val)) {
            double pos = palette_map_position(pm, val, fc->row_lo, fc->row_hi);
            look = theme_position_look(t, pos, pm->diverging);
        }
        int attr = look.attr, marker_attr = look.shade_attr;
        if (i == view->row && !app_model(a)->cross) { /* the query: a key of its own sentence */
            look.shade = "\u25b6";
            attr = marker_attr = theme_cursor_attr(t, attr);
        } else if (i == view->col) { /* the key under the map's cursor */
            attr |= A_UNDERLINE;
        }
        /* the marker in its own look (8 colours: the shade blending into the next colour) */
        snprintf(chip, sizeof(chip), "%s", text);
        int mw = draw_text(y + row, x0 + x, cw, marker_attr, look.shade);
        draw_text(y + row, x0 + x + mw, cw - mw, attr, chip);
        if (tp->n_chips < TOKENS_CHIPS_MAX)
            tp->chips[tp->n_chips++] = (struct tokens_chip){y + row, x0 + x, cw, i};
        x += cw;
        used = row + 1;
    }
    return used;
}

/* Digits of n (the positions' column). */
static int digits(int n)
{
    int d = 1;
    for (; n >= 10; n /= 10)
        d++;
    return d;
}

/* The query's top keys from line y: a heading when there is room, then one bar a line. Keys are
 * named by their token, after their position when that is needed to tell them apart or find
 * them (the same token twice, or a sentence shown in part). */
static void draw_bars(struct tokens_panel *tp, struct frame *f, struct attn_mat_view v, int head,
                      bool windowed, int y, int y_end, int x0, int w)
{
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    const struct tokenview_focus *fc = &tp->focus;
    const float *rowv = v.data + (size_t)view->row * (size_t)v.stride;
    int left = y_end - y;
    if (left <= 0)
        return;
    char q[64];
    chip_text(q, sizeof(q), app_model(a)->tokens[view->row], LABEL_MAX + 1);
    bool heading = left >= 3; /* two lines: two bars say more than a heading and one */
    int k = fc->n_top < left - heading ? fc->n_top : left - heading;
    k = k < 64 ? k : 64;
    enum tokenview_bars kind = tokenview_bars_kind(fc, view->color_scale == SCALE_BY_ROW);
    /* A blank line before the heading when the bars leave one. */
    if (heading && left >= k + 3)
        y++;
    if (heading) {
        char text[200], scale[64];
        static const char *const full[] = {
            [TOKENVIEW_BARS_SHARE] = "full bar = 1",
            [TOKENVIEW_BARS_LARGEST] = "full bar = the largest",
            [TOKENVIEW_BARS_RANGE] = "bars from min to max",
        };
        if (fc->seen == 0)
            snprintf(text, sizeof(text), "\u201c%s\u201d sees no key here", q);
        else
            snprintf(text, sizeof(text), "top %d of %d key%s \u201c%s\u201d sees", k, fc->seen,
                     fc->seen == 1 ? "" : "s", q);
        snprintf(scale, sizeof(scale), " \u00b7 %s", full[kind]);
        int tw = draw_text(y, x0, w, t->role_attr[ROLE_LABEL], text);
        if (tw + text_width(scale) <= w)
            draw_text(y, x0 + tw, w - tw, t->role_attr[ROLE_DIM], scale);
        y++;
    }
    /* Columns: the values right-aligned, the keys, the bars in what is left. */
    char vals[64][32], labs[64][96];
    for (int e = 0; e < k; e++) {
        int j = fc->top[e];
        if (dropped(a, head, view->row, j))
            snprintf(vals[e], sizeof(vals[e]), "drop");
        else
            format_cell(vals[e], sizeof(vals[e]), rowv[j], 8);
        chip_text(labs[e], sizeof(labs[e]), attn_model_key_tokens(app_model(a))[fc->top[e]],
                  LABEL_MAX + 1);
    }
    bool positions = windowed;
    for (int e = 0; e < k && !positions; e++)
        for (int o = e + 1; o < k && !positions; o++)
            positions = strcmp(labs[e], labs[o]) == 0;
    int valw = 1, labw = 1;
    for (int e = 0; e < k; e++) {
        if (positions) {
            char tok[64];
            snprintf(tok, sizeof(tok), "%s", labs[e]);
            snprintf(labs[e], sizeof(labs[e]), "%*d %s", digits(v.cols - 1), fc->top[e], tok);
        }
        valw = text_width(vals[e]) > valw ? text_width(vals[e]) : valw;
        labw = text_width(labs[e]) > labw ? text_width(labs[e]) : labw;
    }
    int barw = w - (2 + valw + 1 + labw + 1);
    barw = barw < BAR_MAX ? barw : BAR_MAX;
    tp->bars_y = y;
    tp->n_bars = 0;
    for (int e = 0; e < k && y < y_end; e++, y++) {
        int j = fc->top[e];
        char cell[64], bar[3 * BAR_MAX + 8];
        snprintf(cell, sizeof(cell), "%*s%s", 2 + valw - text_width(vals[e]), "", vals[e]);
        int x = x0 + draw_text(y, x0, w, A_NORMAL, cell) + 1;
        draw_text(y, x, labw, j == view->col ? t->role_attr[ROLE_SELECTION] : (int)A_NORMAL,
                  labs[e]);
        x += labw + 1;
        if (barw >= 1) {
            draw_bar_text(bar, sizeof(bar), tokenview_bar_fraction(fc, kind, rowv[j]), barw);
            draw_text(y, x, barw, t->role_attr[ROLE_LABEL], bar);
        }
        tp->n_bars++;
    }
}

static void tokens_draw(struct panel *p, struct frame *f)
{
    struct tokens_panel *tp = (struct tokens_panel *)p;
    struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    tp->n_chips = 0;
    tp->n_bars = 0;
    /* A rule on the left separates it from the map in the side-by-side layout (as the
     * inspector's). */
    for (int i = 0; r.x > 0 && i < r.h; i++)
        draw_text(r.y + i, r.x, 1, t->role_attr[ROLE_DIM], "\u2502");
    int x0 = r.x + 2, w = r.w - 3, y = r.y, y_end = r.y + r.h;
    if (w < 8 || r.h < 1)
        return;
    int head;
    struct attn_mat_view v = tokenview_matrix(a, &head);
    char title[256], clipped[256];
    title_text(title, sizeof(title), a, head);
    abbreviate(clipped, sizeof(clipped), title, w);
    draw_text(y++, x0, w, t->role_attr[ROLE_LABEL], clipped);
    /* a square stage: a query's row over the keys (a cross-attention's: the source's) */
    bool keyed = v.rows == v.cols || (app_model(a)->cross && attn_stage_is_square(view->stage));
    if (!tokenview_applies(view->stage) || !keyed || view->row >= v.rows) {
        draw_not_square(f, v, y, y_end, x0, w);
        return;
    }
    int n = v.cols, body = y_end - y;
    if (body <= 0 || !ensure_widths(tp, a, w < CHIP_MAX ? w : CHIP_MAX) ||
        tokenview_focus_get(&tp->focus, a, v, head, view->row, body) != 0)
        return;

    /* The colours of the map's cells: its scale (row, matrix or log) over the same values. */
    struct palette_map pm;
    if (view->color_scale == SCALE_BY_ROW) { /* the row alone: no pass over the matrix */
        palette_map_init(&pm, SCALE_BY_ROW, tp->focus.row_lo, tp->focus.row_hi);
    } else {
        float lo, hi;
        range_get(&tp->range, a, head, &lo, &hi);
        palette_map_init(&pm, view->color_scale, lo, hi);
    }

    /* The sentence takes what it needs when it all fits above a few bars; else a window of
     * about half the body, its last line saying which tokens are in view. */
    int bars_min = body >= 5 ? 3 : body >= 3 ? 1 : 0;
    int box = body - bars_min > 0 ? body - bars_min : 1;
    bool all = tokenview_fill(tp->widths, n, 0, box, w) >= n - 1;
    int note = 0;
    if (!all) {
        int half = body / 2 > 2 ? body / 2 : 2;
        box = half < box ? half : box;
        note = box >= 2;
    }
    struct tokenview_window win;
    /* the window follows the query, or in cross-attention the key under the cursor */
    tokenview_window(&win, tp->widths, n, app_model(a)->cross ? view->col : view->row, box - note,
                     w, tp->first);
    tp->first = win.first;
    y += draw_sentence(tp, f, v, &pm, &win, y, x0, w);
    if (win.windowed) {
        char where[96];
        snprintf(where, sizeof(where), "tokens %d\u2013%d of %d", win.first, win.last, n);
        if (note) {
            const char *more = " \u00b7 the window follows the query";
            int used = draw_text(y, x0, w, t->role_attr[ROLE_DIM], where);
            if (used + text_width(more) <= w)
                draw_text(y, x0 + used, w - used, t->role_attr[ROLE_DIM], more);
            y++;
        } else if (text_width(clipped) + 3 + text_width(where) <= w) { /* on the title line */
            draw_text(r.y, x0 + w - text_width(where), text_width(where), t->role_attr[ROLE_DIM],
                      where);
        }
    }
    draw_bars(tp, f, v, head, win.windowed, y, y_end, x0, w);
}

/* A click on a token makes it the query (the cursor's row); on a bar, its key the column. */
static int tokens_handle_mouse(struct panel *p, struct frame *f, int y, int x,
                               unsigned long buttons)
{
    struct tokens_panel *tp = (struct tokens_panel *)p;
    struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    if (!(buttons & BUTTON1_PRESSED))
        return OUTCOME_IGNORED;
    for (int c = 0; c < tp->n_chips; c++)
        if (tp->chips[c].y == y && x >= tp->chips[c].x && x < tp->chips[c].x + tp->chips[c].w) {
            if (app_model(a)->cross) { /* a source token: the key, the cursor's column */
                if (tp->chips[c].token == view->col || tp->chips[c].token >= app_cols(a))
                    return OUTCOME_HANDLED;
                app_view_mut(a)->col = tp->chips[c].token;
                return OUTCOME_CURSOR_MOVED;
            }
            if (tp->chips[c].token == view->row || tp->chips[c].token >= app_rows(a))
                return OUTCOME_HANDLED;
            app_view_mut(a)->row = tp->chips[c].token;
            return OUTCOME_CURSOR_MOVED;
        }
    int e = y - tp->bars_y;
    if (e >= 0 && e < tp->n_bars && e < tp->focus.n_top) {
        int j = tp->focus.top[e];
        if (j == view->col || j >= app_cols(a))
            return OUTCOME_HANDLED;
        app_view_mut(a)->col = app_view_mut(a)->col_want = j;
        return OUTCOME_CURSOR_MOVED;
    }
    return OUTCOME_IGNORED;
}

void tokens_panel_free(struct tokens_panel *tp)
{
    tokenview_focus_free(&tp->focus);
    free(tp->widths);
    tp->widths = NULL;
}

static bool tokens_wanted(const struct frame *f)
{
    return app_view_state(f->app)->token_view;
}

void tokens_panel_init(struct tokens_panel *tp)
{
    memset(tp, 0, sizeof(*tp));
    tp->base.name = "tokens";
    tp->base.slot = SLOT_SIDE;
    tp->base.wanted = tokens_wanted;
    tp->base.follows_cursor = true;
    tp->base.draw = tokens_draw;
    tp->base.handle_mouse = tokens_handle_mouse;
    tp->first = -1;
}
