/* lens panel: every layer's top-1 next token, a row per position (see lens.h).
 *
 * Each cell is the token and its probability at the temperature, on the colour scale of a
 * probability (0 to 1; without 256 colours a shade block leads it), and "*" before the number
 * when the token is the actual next one: the layer already knows it. On a masked LM (BERT) a
 * position's guess is at its own token: the column "itself" holds it ("—" at a [MASK], which the
 * model fills in) and "*" marks a layer that gives it back. The cell under the cursor
 * is the picked one (the position on screen, the layer on screen). The positions in view are
 * filled from explore/interp's cache before they are drawn, a block of them at once; scrolling
 * to new ones computes those, a cursor move inside the view computes nothing.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "common/cnum.h"
#include "ui/heatmap.h" /* the legend */
#include "ui/lens.h"
#include "ui/status.h"

#define TOK_W  7  /* columns of a cell's token */
#define CELL_W 15 /* shade, token, blank, mark, "0.66", gap */
#define NEXT_W 9  /* the next-token column: a token and a gap */

struct lens_layout {
    int pw, tw;               /* columns of the position and the row's token */
    int x_cells;              /* where the layers' cells start */
    int vis_rows, vis_layers; /* positions and layers in view */
};

static int digits(int n)
{
    int d = 1;
    for (; n >= 10; n /= 10)
        d++;
    return d;
}

static void lay_out(struct lens_layout *l, const struct panel *p, const struct app *a)
{
    const struct attn_model *m = app_model(a);
    l->pw = digits(m->n > 1 ? m->n - 1 : 1);
    l->pw = l->pw < 3 ? 3 : l->pw; /* "pos" */
    int tw = 5;
    for (int i = 0; i < m->n; i++) {
        int w = text_width(m->tokens[i]);
        tw = w > tw ? w : tw;
    }
    l->tw = tw > 10 ? 10 : tw;
    l->x_cells = l->pw + 1 + l->tw + 1 + NEXT_W;
    l->vis_rows = p->area.h - 3 > 1 ? p->area.h - 3 : 1;
    l->vis_layers = (p->area.w - l->x_cells) / CELL_W;
    l->vis_layers = l->vis_layers < 1 ? 1 : l->vis_layers;
}

/* Vocabulary id's text as a label: visible blanks, cut to width. */
static void token_text(char *out, size_t size, const struct app *a, int id, int width)
{
    char raw[256], shown[3 * sizeof(raw) + 1];
    attn_scene_token_label(raw, sizeof(raw), &app_result(a)->shown, id);
    display_token(shown, sizeof(shown), raw);
    abbreviate(out, size, shown, width);
}

static void lens_draw(struct panel *p, struct frame *f)
{
    struct lens_panel *lp = (struct lens_panel *)p;
    struct app *a = f->app;
    const struct app_result *res = app_result(a);
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    const struct attn_model *m = app_model(a);
    int n = m->n, layers = res->net.layers;
    struct lens_layout l;
    lay_out(&l, p, a);
    lp->top_row = scroll_follow(lp->top_row, view->row, l.vis_rows, n);
    lp->left_layer = scroll_follow(lp->left_layer, view->layer, l.vis_layers, layers);
    int last_row = lp->top_row + l.vis_rows < n ? lp->top_row + l.vis_rows : n;
    int last_layer =
        lp->left_layer + l.vis_layers < layers ? lp->left_layer + l.vis_layers : layers;

    char temp[32], title[200], clipped[200];
    app_temperature_text(temp, sizeof(temp), view->temperature);
    const struct attn_model *lastm = &res->net.model[layers - 1];
    bool masked = lastm->masked_lm;
    char changes[120];
    bool modified = attn_scene_model_changes(changes, sizeof(changes), &res->shown) > 0;
    snprintf(title, sizeof(title), "%s lens%s: top-1 by layer \u00b7 %s %s",
             masked ? "MLM" : "logit", modified ? " of the modified model" : "",
             knob_label(KNOB_TEMPERATURE), temp);
    int legend_w = heatmap_legend(t, r.y, r.x + r.w, 0.0f, 1.0f, false);
    abbreviate(clipped, sizeof(clipped), title, r.w - legend_w - 1);
    draw_text(r.y, r.x, r.w - legend_w - 1, t->role_attr[ROLE_LABEL], clipped);

    /* Only the positions in view: a block of them through every layer, once per result. */
    struct diag err;
    attn_diag_clear(&err);
    int filled = app_lens_fill(a, lp->top_row, last_row - lp->top_row, &err);
    if (filled < 0) {
        abbreviate(clipped, sizeof(clipped), err.msg, r.w);
        draw_text(r.y + 1, r.x, r.w, t->role_attr[ROLE_ERROR], clipped);
        return;
    }
    if (filled > 0) { /* a job fills them (the background mode): drawn when it ends */
        snprintf(clipped, sizeof(clipped),
                 "computing the guesses of positions %d\u2013%d through every layer \u00b7 keys "
                 "work meanwhile",
                 lp->top_row, last_row - 1);
        draw_text(r.y + 2, r.x, r.w, t->role_attr[ROLE_DIM], clipped);
        return;
    }

    /* Column heads: the position, its token, the actual next token, each layer. */
    int hy = r.y + 1, x0 = r.x;
    char head[64];
    snprintf(head, sizeof(head), "%*s %-*s %-*s", l.pw, "pos", l.tw, "token", NEXT_W - 1,
             masked ? "itself" : "next");
    draw_text(hy, x0, l.x_cells, t->role_attr[ROLE_LABEL], head);
    for (int L = lp->left_layer; L < last_layer; L++) {
        char lab[32];
        snprintf(lab, sizeof(lab), " layer %d", L);
        draw_text(hy, x0 + l.x_cells + (L - lp->left_layer) * CELL_W, CELL_W,
                  t->role_attr[L == view->layer ? ROLE_SELECTION : ROLE_LABEL], lab);
    }

    const int *ids = res->net.model[0].ids;
    for (int i = lp->top_row; i < last_row; i++) {
        int y = r.y + 2 + (i - lp->top_row);
        char pos[16], tok[64], shown[3 * SCENE_MAX_TOKEN_BYTES + 1], next[64];
        snprintf(pos, sizeof(pos), "%*d", l.pw, i);
        display_token(shown, sizeof(shown), m->tokens[i]);
        abbreviate(tok, sizeof(tok), shown, l.tw);
        int row_role = i == view->row ? ROLE_SELECTION : ROLE_LABEL;
        draw_text(y, x0, l.pw, t->role_attr[ROLE_DIM], pos);
        draw_text(y, x0 + l.pw + 1, l.tw, t->role_attr[row_role], tok);
        int target = masked      ? (ids[i] == lastm->mask_id ? -1 : ids[i])
                     : i + 1 < n ? ids[i + 1]
                                 : -1;
        if (target >= 0)
            token_text(next, sizeof(next), a, target, NEXT_W - 1);
        else
            snprintf(next, sizeof(next), "\u2014");
        draw_text(y, x0 + l.pw + 1 + l.tw + 1, NEXT_W - 1, t->role_attr[ROLE_DIM], next);
        for (int L = lp->left_layer; L < last_layer; L++) {
            int x = x0 + l.x_cells + (L - lp->left_layer) * CELL_W;
            bool hit = false;
            const struct attn_token_score *ts = interp_lens_top(&app_caches(a)->interp, L, i, &hit);
            char cell[128], num[16], word[64];
            struct theme_look look = {t->role_attr[ROLE_MASKED], t->role_attr[ROLE_MASKED], " "};
            if (ts) {
                look = theme_cell_look(t, ts->prob, 0.0f, 1.0f, false);
                token_text(word, sizeof(word), a, ts->id, TOK_W);
                attn_cnum_format(num, sizeof(num), "%.2f", (double)ts->prob);
                snprintf(cell, sizeof(cell), "%s%*s %s%s", word, TOK_W - text_width(word), "",
                         hit ? "*" : " ", num);
            } else {
                snprintf(cell, sizeof(cell), "\u2026");
            }
            if (i == view->row && L == view->layer) {
                look.attr = theme_cursor_attr(t, look.attr);
                look.shade_attr = theme_cursor_attr(t, look.shade_attr);
            }
            /* the shade block first, in its own look (8 colours: blending into the next) */
            draw_text(y, x, 1, look.shade_attr, look.shade);
            draw_text(y, x + 1, CELL_W - 2, look.attr, cell);
        }
    }

    /* Footer: the picked cell in words, and what is out of view. */
    char footer[8 * SCENE_MAX_TOKEN_BYTES], word[64] = "", more[96] = "";
    bool hit = false;
    const struct attn_token_score *ts =
        interp_lens_top(&app_caches(a)->interp, view->layer, view->row, &hit);
    if (ts)
        token_text(word, sizeof(word), a, ts->id, 20);
    char cur[3 * SCENE_MAX_TOKEN_BYTES + 1];
    display_token(cur, sizeof(cur), m->tokens[view->row]);
    if (n > l.vis_rows || layers > l.vis_layers)
        snprintf(more, sizeof(more), " \u00b7 %s: arrows/PgUp/PgDn",
                 layers > l.vis_layers ? "positions and layers scroll" : "scrolled");
    if (ts)
        attn_cnum_format(footer, sizeof(footer),
                         "position %d \u201c%s\u201d \u00b7 layer %d: %s %.4f%s%s", view->row, cur,
                         view->layer, word, (double)ts->prob,
                         hit ? (masked ? ", the token itself" : ", the next token") : "", more);
    else
        snprintf(footer, sizeof(footer), "position %d \u201c%s\u201d \u00b7 layer %d%s", view->row,
                 cur, view->layer, more);
    int fy = r.y + 2 + (last_row - lp->top_row);
    draw_text(fy < r.y + r.h ? fy : r.y + r.h - 1, r.x, r.w, t->role_attr[ROLE_DIM], footer);
}

/* Moves the cursor to position row and layer L (clamped); a new layer is a view change. */
static int move_to(struct app *a, int row, int layer)
{
    const struct app_result *res = app_result(a);
    const struct app_view *view = app_view_state(a);
    int n = app_model(a)->n;
    row = row < 0 ? 0 : row >= n ? n - 1 : row;
    layer = layer < 0 ? 0 : layer >= res->net.layers ? res->net.layers - 1 : layer;
    if (row == view->row && layer == view->layer)
        return OUTCOME_HANDLED;
    int out = layer != view->layer ? OUTCOME_VIEW_CHANGED : OUTCOME_CURSOR_MOVED;
    app_view_mut(a)->row = row;
    if (layer != view->layer)
        app_set_layer(a, layer);
    return out;
}

static int lens_handle_key(struct panel *p, struct frame *f, enum action act)
{
    struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    struct lens_layout l;
    lay_out(&l, p, a);
    switch (act) {
    case ACTION_LEFT:
    case ACTION_LAYER_PREV:
        return move_to(a, view->row, view->layer - 1);
    case ACTION_RIGHT:
    case ACTION_LAYER_NEXT:
        return move_to(a, view->row, view->layer + 1);
    case ACTION_UP:
        return move_to(a, view->row - 1, view->layer);
    case ACTION_DOWN:
        return move_to(a, view->row + 1, view->layer);
    case ACTION_PAGE_UP:
        return move_to(a, view->row - l.vis_rows, view->layer);
    case ACTION_PAGE_DOWN:
        return move_to(a, view->row + l.vis_rows, view->layer);
    case ACTION_ROW_START:
        return move_to(a, view->row, 0);
    case ACTION_ROW_END:
        return move_to(a, view->row, app_result(a)->net.layers - 1);
    default:
        return OUTCOME_IGNORED;
    }
}

static int lens_handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    struct lens_panel *lp = (struct lens_panel *)p;
    struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    if (buttons & BUTTON4_PRESSED)
        return move_to(a, view->row - 3, view->layer);
    if (buttons & BUTTON5_PRESSED)
        return move_to(a, view->row + 3, view->layer);
    struct lens_layout l;
    lay_out(&l, p, a);
    int i = lp->top_row + (y - p->area.y - 2);
    if (y - p->area.y < 2 || i >= app_model(a)->n)
        return OUTCOME_IGNORED;
    int dx = x - p->area.x - l.x_cells;
    int layer = dx >= 0 ? lp->left_layer + dx / CELL_W : view->layer;
    if (dx >= 0 && (dx / CELL_W >= l.vis_layers || layer >= app_result(a)->net.layers))
        return OUTCOME_IGNORED;
    return move_to(a, i, layer);
}

int lens_min_width(const struct app *a)
{
    struct panel p = {.area = {0, 0, 10, 0}};
    struct lens_layout l;
    lay_out(&l, &p, a);
    return l.x_cells + app_result(a)->net.layers * CELL_W;
}

static bool lens_wanted(const struct frame *f)
{
    return app_view_state(f->app)->lens;
}

void lens_panel_init(struct lens_panel *lp)
{
    memset(lp, 0, sizeof(*lp));
    lp->base.name = "lens";
    lp->base.slot = SLOT_MAP;
    lp->base.wanted = lens_wanted;
    lp->base.follows_cursor = true;
    lp->base.draw = lens_draw;
    lp->base.handle_key = lens_handle_key;
    lp->base.handle_mouse = lens_handle_mouse;
}
