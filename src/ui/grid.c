/* grid panel: small multiples of every head at the current stage, side by side, on one shared
 * colour scale so heads can be compared. With several layers it is the model view (BertViz's):
 * one row of heads per layer. Arrows pick a tile, Enter (or a click) opens it. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/grid.h"
#include "common/cnum.h"
#include "common/progress.h"
#include "ui/heatmap.h" /* the legend */

#define THUMB_MIN 4 /* cells a side of the smallest thumbnail */

/* Tiles per layer: every head, or one for a stage the heads share. */
static int per_layer(const struct app *a)
{
    return attn_stage_is_per_head(app_view_state(a)->stage) ? app_model(a)->heads : 1;
}

/* Tile t is layer t / per_layer, head t % per_layer. */
static int tiles(const struct app *a)
{
    return app_net(a)->layers * per_layer(a);
}

static int selected(const struct app *a)
{
    const struct app_view *view = app_view_state(a);
    return view->layer * per_layer(a) + (per_layer(a) > 1 ? view->head : 0);
}

/* Sizes the tiles to the area: 6 columns a cell (with its value) when every head fits, else
 * 2, else 1; else thumbnails of fewer cells, each pooling a block (a model view of 12 layers of
 * long sequences still fits); then scrolls by rows of tiles so the selected head stays visible. */
static void thumb_layout(struct panel *p, struct frame *f, int *cw)
{
    struct grid_panel *gp = (struct grid_panel *)p;
    static const int widths[] = {6, 2, 1};
    struct attn_mat_view v = {NULL, app_rows(f->app), app_cols(f->app), 0}; /* its shape */
    int n = tiles(f->app);
    bool fits = false;
    int full = v.rows > v.cols ? v.rows : v.cols;
    /* k < 3: every cell, at each width; then thumbnails of `size` cells a side, 2 columns a
       cell while the width allows (cells are twice as tall as wide), else 1 */
    for (int k = 0; !fits && k < 3 + 2 * full; k++) {
        int size = k < 3 ? full : full - (k - 3) / 2;
        if (k >= 3 && size < THUMB_MIN) /* thumbnails stop there; the full sizes always count */
            break;
        *cw = k < 3 ? widths[k] : (k - 3) % 2 == 0 ? 2 : 1;
        gp->shown_rows = v.rows < size ? v.rows : size;
        gp->shown_cols = v.cols < size ? v.cols : size;
        gp->tile_w = gp->shown_cols * *cw + 2;
        gp->tile_h = gp->shown_rows + 2;
        gp->per_row = p->area.w / gp->tile_w > 0 ? p->area.w / gp->tile_w : 1;
        /* The model view: a row per layer when a layer's heads fit on one. */
        if (app_net(f->app)->layers > 1 && gp->per_row >= per_layer(f->app))
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
    int tile_rows = (tiles(f->app) + gp->per_row - 1) / gp->per_row;
    if (gp->top > tile_rows - visible) /* a larger area: no rows of tiles left out above */
        gp->top = tile_rows - visible > 0 ? tile_rows - visible : 0;
    if (sel_row < gp->top)
        gp->top = sel_row;
    if (sel_row >= gp->top + visible)
        gp->top = sel_row - visible + 1;
}

/* Appends the score S colours the heads by to head h's label (layer L), and returns the
 * label's attribute: attr, or the score's colour on its own scale (entropy 0 .. ln n, the others
 * 0 .. 1) when the head is not the selected one. */
static int score_label(char *label, size_t size, const struct theme *t, const struct app *a, int L,
                       int h, bool sel, int attr)
{
    /* In the background mode a frame never scores 144 heads itself: the job does
       (app_request_scores), and a head not yet scored shows "…" */
    const struct head_scores *sc = app_scores_kept(a, L, h);
    if (!sc && !app_result(a)->job.background)
        sc = app_scores(a, L, h);
    int k = app_view_state(a)->score_shown;
    char num[24];
    if (!sc) {
        size_t used = strlen(label);
        snprintf(label + used, size - used, " \u2026");
        return attr;
    }
    if (sc->defined[k])
        attn_cnum_format(num, sizeof(num), " %.2f", sc->value[k]);
    else
        snprintf(num, sizeof(num), " -");
    size_t used = strlen(label);
    snprintf(label + used, size - used, "%s", num);
    if (!sc->defined[k] || sel)
        return attr;
    int n = app_net(a)->model[L].n;
    float top = k == SCORE_ENTROPY ? (float)log((double)(n > 1 ? n : 2)) : 1.0f;
    const char *shade;
    return theme_cell_attr(t, (float)sc->value[k], 0.0f, top, false, &shade);
}

/* Appends " ✗zero" or " ✗mean" to head h's label (layer L) when the head is ablated. */
static void ablated_mark(char *label, size_t size, const struct app *a, int L, int h)
{
    enum attn_head_mode hm = app_head_mode(a, L, h);
    size_t used = strlen(label);
    if (hm != HEAD_KEEP && used < size)
        snprintf(label + used, size - used, " \u2717%s", attn_head_mode_name(hm));
}

/* A mixture's layer: how many tokens chose each expert, a block of shade each (the fullest
 * expert's the darkest), " · load ▂█▁▄ (24 of 60)" after the label, as far as it fits. */
static void expert_load(char *label, size_t size, const struct app *a, int L,
                        const struct attn_model *m)
{
    struct attn_mat_view v = app_view_at(a, L, STAGE_ROUTED, 0);
    if (!v.data || v.cols != m->n_experts)
        return;
    int counts[SCENE_MAX_EXPERTS] = {0}, most = 0, used = 0;
    for (int i = 0; i < v.rows; i++)
        for (int e = 0; e < v.cols; e++)
            counts[e] += v.data[(size_t)i * v.stride + e] != 0.0f;
    for (int e = 0; e < v.cols; e++) {
        most = counts[e] > most ? counts[e] : most;
        used += counts[e] > 0;
    }
    static const char *const shade[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};
    size_t o = strlen(label);
    o += (size_t)snprintf(label + o, o < size ? size - o : 0, " \u00b7 load ");
    for (int e = 0; e < v.cols && o + 8 < size; e++) {
        int k = counts[e] == 0 ? 0 : 1 + (counts[e] * 7 + most - 1) / (most ? most : 1);
        o += (size_t)snprintf(label + o, size - o, "%s", shade[k > 8 ? 8 : k]);
    }
    if (o < size)
        snprintf(label + o, size - o, " (%d of %d)", used, v.cols);
}

/* Head h's label (layer L) and its attribute: "L1 h3 · KV 1" in the model view (model_view),
 * "head 3" (or "shared") on one layer, then its ablation and the score the heads are coloured by.
 */
static int tile_label(char *label, size_t size, const struct theme *t, const struct app *a, int L,
                      int h, bool model_view, bool shared, bool sel)
{
    const struct app_result *res = app_result(a);
    const struct app_view *view = app_view_state(a);
    const struct attn_model *m = &app_net(a)->model[L];
    char where[32] = "";
    const char *head = "head ";
    if (model_view && app_net(a)->layers > 1) {
        attn_net_layer_name(where, sizeof(where) - 2, app_net(a), L, true);
        strcat(where, " ");
        head = "h";
    }
    if (per_layer(a) == 1)
        snprintf(label, size, "%s%s", where, shared ? "shared" : model_view ? "h0" : "head 0");
    else if (m->kv_heads < m->heads && view->stage != STAGE_QUERIES)
        snprintf(label, size, "%s%s%d \u00b7 KV %d", where, head, h,
                 h / (m->heads / m->kv_heads)); /* who shares a KV head */
    else
        snprintf(label, size, "%s%s%d", where, head, h);
    int attr = t->role_attr[sel ? ROLE_STAGE_CURRENT : ROLE_LABEL];
    /* a model whose layers slide and attend to everything in turn (Gemma's): which is which */
    const struct attn_config *ac = &res->shown.attn;
    bool mixed = false;
    for (int k = 0; ac->window > 0 && k < app_net(a)->layers && k < SCENE_MAX_LAYERS; k++)
        mixed |= ac->window_off[k];
    if (model_view && m->n_experts > 0 && (h == 0 || shared) && app_layer_ready(a, L))
        expert_load(label, size, a, L, m);
    if (model_view && mixed && (h == 0 || shared)) {
        size_t o = strlen(label);
        if (m->window > 0)
            snprintf(label + o, size - o, " \u00b7 sliding %d", m->window);
        else
            snprintf(label + o, size - o, " \u00b7 global");
    }
    if (!shared)
        ablated_mark(label, size, a, L, h);
    if (view->score_shown >= 0 && !shared) /* one head a layer (an induction model) too */
        attr = score_label(label, size, t, a, L, h, sel, attr);
    return attr;
}

/* With a baseline pinned (two checkpoints of one model, say), each tile's mean |Δ| after its
 * label, " · Δ 0.0203": which heads moved most, side by side. Kept in the thumbnails' cache
 * (cached: it is this view's) once worked out. */
static void tile_change(char *label, size_t size, struct grid_panel *gp, const struct app *a,
                        bool cached, int tile, int L, int h)
{
    if (!app_baseline_pinned(a))
        return;
    struct thumb_cache *c = &gp->thumbs;
    float d;
    if (cached && c->changed[tile]) {
        d = c->change[tile];
    } else {
        d = app_base_change(a, L, app_view_state(a)->stage, h);
        if (cached && app_layer_ready(a, L)) {
            c->change[tile] = d;
            c->changed[tile] = 1;
        }
    }
    if (isfinite(d)) {
        size_t o = strlen(label);
        snprintf(label + o, o < size ? size - o : 0, " \u00b7 \u0394 %.4f", (double)d);
    }
}

/* Pooling time a frame may spend on thumbnails not yet made, in the background mode: a model
 * view of 144 heads of 1,016 tokens takes a second to pool, so it fills in over the frames that
 * follow (grid_panel.unfinished) while every key is answered. */
#define THUMB_BUDGET_MS 8.0

/* The cache for what the view shows now: reset when what it was made for changed. False when out
 * of memory (the caller pools as it draws, every tile). */
static bool thumb_fresh(struct grid_panel *gp, const struct app *a)
{
    struct thumb_cache *c = &gp->thumbs;
    const struct app_view *view = app_view_state(a);
    int n = tiles(a), rows = gp->shown_rows, cols = gp->shown_cols;
    if (c->generation == app_result(a)->generation && c->stage == (int)view->stage &&
        c->rows == rows && c->cols == cols && c->agg == (int)view->block_agg && c->tiles == n)
        return true;
    size_t cells = (size_t)n * (size_t)rows * (size_t)cols, count = (size_t)(n ? n : 1);
    float *grown = realloc(c->cells, (cells ? cells : 1) * sizeof(float));
    if (grown)
        c->cells = grown;
    float *lo = grown ? realloc(c->lo, count * sizeof(float)) : NULL;
    if (lo)
        c->lo = lo;
    float *hi = lo ? realloc(c->hi, count * sizeof(float)) : NULL;
    if (hi)
        c->hi = hi;
    unsigned char *made = hi ? realloc(c->made, count) : NULL;
    if (made)
        c->made = made;
    float *change = made ? realloc(c->change, count * sizeof(float)) : NULL;
    if (change)
        c->change = change;
    unsigned char *changed = change ? realloc(c->changed, count) : NULL;
    if (!changed) {
        c->tiles = -1; /* never matches: made again next time */
        return false;
    }
    c->changed = changed;
    memset(c->made, 0, count);
    memset(c->changed, 0, count);
    c->generation = app_result(a)->generation;
    c->stage = (int)view->stage;
    c->rows = rows;
    c->cols = cols;
    c->agg = (int)view->block_agg;
    c->tiles = n;
    return true;
}

/* Makes tile t (layer L, head h) when it is not yet and the deadline (ms; 0: none) allows: its
 * pooled cells and its range. True when it is made. */
static bool thumb_make(struct grid_panel *gp, const struct app *a, int t, int L, int h,
                       double deadline)
{
    struct thumb_cache *c = &gp->thumbs;
    const struct app_view *view = app_view_state(a);
    if (c->made[t])
        return true;
    if (!app_layer_ready(a, L) || !attn_stage_present(&app_net(a)->model[L], view->stage) ||
        (deadline > 0 && attn_now_ms() > deadline))
        return false;
    int rows = c->rows, cols = c->cols;
    float *out = c->cells + (size_t)t * (size_t)rows * (size_t)cols;
    zoom_tile(out, &c->lo[t], &c->hi[t], app_view_at(a, L, view->stage, h), rows, cols,
              view->block_agg);
    c->made[t] = 1;
    return true;
}

static void thumb_draw(struct panel *p, struct frame *f)
{
    struct grid_panel *gp = (struct grid_panel *)p;
    const struct app *a = f->app;
    const struct app_result *res = app_result(a);
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    int cw;
    thumb_layout(p, f, &cw);
    int n = tiles(f->app);

    /* One scale for all heads, so equal colours mean equal values across tiles. */
    int layers = app_net(a)->layers, pl = per_layer(a);
    /* One tile a layer: a stage the heads share, or a model of one head (its own). */
    bool shared = !attn_stage_is_per_head(view->stage) && app_model(a)->heads > 1;
    /* The tiles in view first, then the rest (the scale is every tile's), as time allows. */
    bool cached = thumb_fresh(gp, a);
    double deadline = res->job.background ? attn_now_ms() + THUMB_BUDGET_MS : 0;
    int first_shown = gp->top * gp->per_row;
    gp->unfinished = false;
    /* Stream mode: the layers not held come from a job that shows each again (app_thumbs);
       ui_compute_tick asks for it (walk_want) while tiles are missing. */
    gp->walk_want = (struct app_thumb_key){
        0, (int)view->stage, (int)view->block_agg, gp->shown_rows, gp->shown_cols, pl};
    gp->walk_wanted = false;
    if (cached && app_net(a)->stage_layers) {
        int done;
        const struct app_thumb_walk *w = app_thumbs(a, &gp->walk_want, &done);
        size_t cells = (size_t)gp->shown_rows * (size_t)gp->shown_cols;
        for (int k = 0; w && k < done * pl; k++)
            if (!gp->thumbs.made[k] && k / pl != w->skipped &&
                attn_stage_present(&app_net(a)->model[k / pl], view->stage)) {
                memcpy(gp->thumbs.cells + (size_t)k * cells, w->cells + (size_t)k * cells,
                       cells * sizeof(float));
                gp->thumbs.lo[k] = w->lo[k];
                gp->thumbs.hi[k] = w->hi[k];
                gp->thumbs.made[k] = 1;
            }
    }
    for (int k = 0; cached && k < n; k++) {
        int tile = (first_shown + k) % n;
        if (!thumb_make(gp, a, tile, tile / pl, tile % pl, deadline) &&
            attn_stage_present(&app_net(a)->model[tile / pl], view->stage)) {
            if (app_layer_ready(a, tile / pl))
                gp->unfinished = true;
            else if (app_net(a)->stage_layers && !app_computing(a) &&
                     attn_net_layers_ready(app_net(a)) == app_net(a)->layers)
                gp->walk_wanted = gp->unfinished = true; /* its layer's stages: the walk's */
            else if (app_net(a)->stage_layers && res->job.running && res->job.kind == JOB_THUMBS)
                gp->unfinished = true; /* coming */
        }
    }
    float lo = INFINITY, hi = -INFINITY;
    if (cached) { /* the shared scale: the union of the tiles' ranges made so far */
        for (int k = 0; k < n; k++)
            if (gp->thumbs.made[k]) {
                lo = fminf(lo, gp->thumbs.lo[k]);
                hi = fmaxf(hi, gp->thumbs.hi[k]);
            }
        if (lo > hi)
            lo = hi = 0.0f;
    } else {
        range_get(&gp->range, a, layers > 1 ? -2 : -1, &lo, &hi);
    }
    bool diverging = lo < 0;
    char title[128];
    if (layers > 1)
        snprintf(title, sizeof(title), "model view: %d layers \u00d7 %d head%s \u00b7 %s%s", layers,
                 app_model(a)->heads, app_model(a)->heads == 1 ? "" : "s",
                 attn_stage_name(view->stage), shared ? " (shared by the heads)" : "");
    else
        snprintf(title, sizeof(title), "all %d heads \u00b7 %s%s", app_model(a)->heads,
                 attn_stage_name(view->stage), shared ? " (shared by all heads)" : "");
    /* Thumbnails pool blocks of cells, as b asks (their max or their mean): the legend says so. */
    struct attn_mat_view v0 = {NULL, app_rows(a), app_cols(a), 0}; /* its shape */
    char pool[96] = "";
    if (gp->shown_rows < v0.rows || gp->shown_cols < v0.cols)
        snprintf(pool, sizeof(pool), "1 cell \u2248 %d\u00d7%d %s, %s",
                 (v0.rows + gp->shown_rows - 1) / gp->shown_rows,
                 (v0.cols + gp->shown_cols - 1) / gp->shown_cols,
                 attn_stage_is_square(view->stage) ? "tokens" : "values",
                 block_agg_name(view->block_agg));
    int legend_w =
        heatmap_legend_named(t, r.y, r.x + r.w, lo, hi, diverging, pool[0] ? pool : NULL);
    char clipped[160];
    abbreviate(clipped, sizeof(clipped), title, r.w - legend_w - 1);
    draw_text(r.y, r.x, r.w - legend_w - 1, t->role_attr[ROLE_LABEL], clipped);

    for (int tile = gp->top * gp->per_row; tile < n; tile++) {
        int ty = r.y + 1 + (tile / gp->per_row - gp->top) * gp->tile_h;
        int tx = r.x + (tile % gp->per_row) * gp->tile_w;
        if (ty >= r.y + r.h)
            break;
        int L = tile / pl, h = tile % pl;
        const struct attn_model *m = &app_net(a)->model[L];
        char label[512];
        bool sel = n > 1 && tile == selected(a);
        int lattr = tile_label(label, sizeof(label), t, a, L, h, true, shared, sel);
        tile_change(label, sizeof(label), gp, a, cached, tile, L, h);
        draw_text(ty, tx, gp->tile_w - 1, lattr, label);
        if (!attn_stage_present(m, view->stage)) /* the final norm: the last layer only */
            continue;
        if (!app_layer_ready(a, L) && !(cached && gp->thumbs.made[tile])) {
            /* still computing (or, in stream mode, shown again): dotted until it is done */
            for (int i = 0; i < gp->shown_rows && ty + 1 + i < r.y + r.h; i++)
                for (int j = 0; j < gp->shown_cols; j++)
                    draw_text(ty + 1 + i, tx + j * cw, cw, t->role_attr[ROLE_DIM],
                              cw == 1 ? "\u00b7" : " \u00b7");
            continue;
        }
        const float *cells = cached ? gp->thumbs.cells + (size_t)tile * (size_t)gp->shown_rows *
                                                             (size_t)gp->shown_cols
                                    : NULL;
        if (cached && !gp->thumbs.made[tile]) { /* its turn comes on a next frame */
            for (int i = 0; i < gp->shown_rows && ty + 1 + i < r.y + r.h; i++)
                for (int j = 0; j < gp->shown_cols; j++)
                    draw_text(ty + 1 + i, tx + j * cw, cw, t->role_attr[ROLE_DIM],
                              cw == 1 ? "\u00b7" : " \u00b7");
            continue;
        }
        struct attn_mat_view v =
            cells ? (struct attn_mat_view){0} : app_view_at(a, L, view->stage, h);
        for (int i = 0; i < gp->shown_rows && ty + 1 + i < r.y + r.h; i++)
            for (int j = 0; j < gp->shown_cols; j++) {
                float x =
                    cells ? cells[(size_t)i * gp->shown_cols + j]
                          : zoom_pooled(v, i, j, gp->shown_rows, gp->shown_cols, view->block_agg);
                struct theme_look look = {t->role_attr[ROLE_MASKED], t->role_attr[ROLE_MASKED],
                                          " "};
                if (isfinite(x))
                    look = theme_cell_look(t, x, lo, hi, diverging);
                int attr = look.attr;
                char cell[32];
                if (cw >= 6) {
                    char num[16];
                    format_cell(num, sizeof(num), x, cw - 1);
                    snprintf(cell, sizeof(cell), "%*s%s", cw - text_width(num), "", num);
                } else if (!isfinite(x)) {
                    snprintf(cell, sizeof(cell), cw == 2 ? " \u00b7" : "\u00b7");
                } else { /* the glyph's own look (8 colours: blending into the next colour) */
                    snprintf(cell, sizeof(cell), cw == 2 ? "%s%s" : "%s", look.shade, look.shade);
                    attr = look.shade_attr;
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
        app_view_mut(a)->head = tile % pl;
    if (layer != app_view_state(a)->layer)
        app_set_layer(a, layer);
    app_clamp(a);
    return OUTCOME_VIEW_CHANGED;
}

/* ---- One layer's heads: every row reachable, side by side whenever they fit. ---- */

#define GAP 2 /* columns between tiles */

/* Columns of a token label: the longest token's, at most 10, and a blank. */
static int token_label_width(const struct app *a)
{
    return tokens_label_width(app_model(a)->tokens, app_model(a)->n, 10);
}

/* Columns of a range label "96–103", and a blank. */
static int range_label_width(int rows)
{
    int d = 1;
    for (int n = rows > 1 ? rows - 1 : 1; n >= 10; n /= 10)
        d++;
    return 2 * d + 2;
}

/* The widest of lo and hi at `decimals`: every number of the view takes that many columns. */
static int number_width(float lo, float hi, int decimals)
{
    char a[32], b[32];
    int na = attn_cnum_format(a, sizeof(a), "%.*f", decimals, (double)lo);
    int nb = attn_cnum_format(b, sizeof(b), "%.*f", decimals, (double)hi);
    int w = na > nb ? na : nb;
    return w > 3 ? w : 3; /* "-∞", "nan" */
}

/* Does the layout fit width w? Fills per_row, tile_w, lines. */
static bool heads_fit(struct heads_layout *hl, int w, int tiles_n, int per_row)
{
    hl->tile_w = hl->grid.nbc * hl->cw;
    hl->per_row = per_row;
    hl->tile_rows = (tiles_n + per_row - 1) / per_row;
    hl->lines = (hl->grid.nbr + (hl->half ? 1 : 0)) / (hl->half ? 2 : 1);
    return hl->lw + per_row * hl->tile_w + (per_row - 1) * GAP <= w;
}

/* Tiles of one layer's heads that fit width w: how many side by side at most (0: none). */
static int heads_per_row(struct heads_layout *hl, int w, int tiles_n)
{
    hl->tile_w = hl->grid.nbc * hl->cw;
    int n = (w - hl->lw + GAP) / (hl->tile_w + GAP);
    return n < tiles_n ? n : tiles_n;
}

/* Lays one layer's heads out in the area: numbers (3 decimals, then 2), then colours (two
 * columns a cell, then one), each first with token labels, all heads side by side; failing
 * that, blocks of cells side by side (half blocks with 256 colours), or the heads in rows of
 * tiles. One format for the whole view. */
static void heads_layout(struct heads_layout *hl, const struct frame *f, struct rect area, float lo,
                         float hi)
{
    const struct app *a = f->app;
    int R = app_rows(a), C = app_cols(a), T = per_layer(a), w = area.w;
    int view = area.h - 3 > 1 ? area.h - 3 : 1; /* title, head labels, footer */
    int tlw = token_label_width(a);
    memset(hl, 0, sizeof(*hl));
    hl->view = view;
    struct heads_layout c;
    /* Every value in a cell, side by side. */
    static const struct {
        enum cell_kind kind;
        int decimals, cw;
        bool labels;
    } plain[] = {
        {CELLS_NUMBERS, 3, 0, true},  {CELLS_NUMBERS, 2, 0, true}, {CELLS_NUMBERS, 3, 0, false},
        {CELLS_NUMBERS, 2, 0, false}, {CELLS_COLOUR, 0, 2, true},  {CELLS_COLOUR, 0, 1, true},
        {CELLS_COLOUR, 0, 2, false},  {CELLS_COLOUR, 0, 1, false},
    };
    for (size_t k = 0; k < sizeof(plain) / sizeof(plain[0]); k++) {
        memset(&c, 0, sizeof(c));
        c.kind = plain[k].kind;
        c.decimals = plain[k].decimals;
        c.cw = c.kind == CELLS_NUMBERS ? number_width(lo, hi, c.decimals) + 1 : plain[k].cw;
        c.lw = plain[k].labels ? tlw : 0;
        c.grid = (struct zoom_grid){R, C, 1, 1, R, C};
        c.view = view;
        if (heads_fit(&c, w, T, T)) {
            *hl = c;
            return;
        }
    }
    /* Blocks side by side: the smallest that fits, while a tile keeps some detail. */
    bool half = f->theme->halves && !draw_ascii_only();
    int full = R > C ? R : C;
    struct heads_layout blocks;
    bool have_blocks = false;
    for (int labels = 1; labels >= 0 && !have_blocks; labels--) {
        for (int b = 2; b <= full && !have_blocks; b++) {
            memset(&c, 0, sizeof(c));
            c.kind = CELLS_BLOCKS;
            c.half = half;
            c.cw = half ? 1 : 2;
            c.lw = labels ? range_label_width(R) : 0;
            c.grid = (struct zoom_grid){R, C, b, b, (R + b - 1) / b, (C + b - 1) / b};
            c.view = view;
            if (heads_fit(&c, w, T, T)) {
                blocks = c;
                have_blocks = true;
            }
        }
    }
    bool detailed =
        have_blocks && (blocks.grid.br <= 2 || (blocks.grid.nbr >= 16 && blocks.grid.nbc >= 16));
    /* Rows of tiles, colours one column a cell, when they all show without scrolling. */
    memset(&c, 0, sizeof(c));
    c.kind = CELLS_COLOUR;
    c.cw = 1;
    c.grid = (struct zoom_grid){R, C, 1, 1, R, C};
    c.view = area.h - 2 > 1 ? area.h - 2 : 1; /* the head labels scroll with their tiles */
    c.lw = tlw;
    int n = heads_per_row(&c, w, T);
    if (n < 1) {
        c.lw = 0;
        n = heads_per_row(&c, w, T);
    }
    bool wraps = n >= 1 && heads_fit(&c, w, T, n);
    if (wraps && (!detailed || c.tile_rows * (1 + c.lines) <= c.view)) {
        *hl = c;
        return;
    }
    if (have_blocks && (blocks.grid.nbr >= 4 || blocks.grid.nbc >= 4)) {
        *hl = blocks;
        return;
    }
    if (wraps) {
        *hl = c;
        return;
    }
    /* One tile a row of tiles, in blocks that fit the width. */
    memset(&c, 0, sizeof(c));
    c.kind = CELLS_BLOCKS;
    c.half = half;
    c.cw = half ? 1 : 2;
    c.lw = range_label_width(R) < w / 3 ? range_label_width(R) : 0;
    int across = (w - c.lw) / c.cw > 0 ? (w - c.lw) / c.cw : 1;
    int b = (C + across - 1) / across;
    b = b > 1 ? b : 2;
    c.grid = (struct zoom_grid){R, C, b, b, (R + b - 1) / b, (C + b - 1) / b};
    c.view = area.h - 2 > 1 ? area.h - 2 : 1;
    heads_fit(&c, w, T, 1);
    *hl = c;
}

/* The value a cell of head h shows: the value itself, or its block's (cached per head). */
static float heads_value(struct grid_panel *gp, const struct heads_layout *hl,
                         struct attn_mat_view v, enum block_agg agg, int h, int bi, int bj)
{
    if (hl->grid.br == 1 && hl->grid.bc == 1)
        return v.data[(size_t)bi * (size_t)v.stride + (size_t)bj];
    if (h < gp->n_blocks && gp->blocks[h].valid)
        return block_cache_at(&gp->blocks[h], agg, bi, bj);
    int r0, r1, c0, c1;
    zoom_block_span(&hl->grid, bi, bj, &r0, &r1, &c0, &c1);
    struct block_stats st;
    zoom_block_stats(&st, v, r0, r1, c0, c1);
    return block_stats_value(&st, agg);
}

/* The first text line of every tile row, with the head labels in a row of their own. */
static int tile_row_line(const struct heads_layout *hl, int tr)
{
    return hl->tile_rows == 1 ? 0 : tr * (1 + hl->lines);
}

/* Scrolls so the cursor's row of the selected head is in view (with its tile's labels when
 * they fit too). */
static void heads_follow(struct grid_panel *gp, const struct app *a, const struct heads_layout *hl)
{
    int per = hl->half ? 2 : 1;
    int cur = app_view_state(a)->row / hl->grid.br / per;
    int total = hl->lines;
    if (hl->tile_rows > 1) {
        int tr = (per_layer(a) > 1 ? app_view_state(a)->head : 0) / hl->per_row,
            first = tile_row_line(hl, tr);
        cur += first + 1;
        total = hl->tile_rows * (1 + hl->lines);
        if (gp->top_line > first && cur - first < hl->view)
            gp->top_line = first;
    }
    if (cur < gp->top_line)
        gp->top_line = cur;
    if (cur >= gp->top_line + hl->view)
        gp->top_line = cur - hl->view + 1;
    if (gp->top_line > total - hl->view)
        gp->top_line = total - hl->view;
    if (gp->top_line < 0)
        gp->top_line = 0;
}

/* Fills a cell of text for one value: its number, or its colour (shade glyphs without). */
static void cell_text(char *out, size_t size, const struct heads_layout *hl, float x,
                      const char *shade)
{
    if (hl->kind == CELLS_NUMBERS) {
        char num[32];
        if (isfinite(x))
            attn_cnum_format(num, sizeof(num), "%.*f", hl->decimals, (double)x);
        else
            format_cell(num, sizeof(num), x, hl->cw - 1);
        snprintf(out, size, "%*s%s", hl->cw - text_width(num), "", num);
    } else if (!isfinite(x)) {
        snprintf(out, size, hl->cw == 2 ? " \u00b7" : "\u00b7");
    } else {
        snprintf(out, size, hl->cw == 2 ? "%s%s" : "%s", shade, shade);
    }
}

/* A frame of one layer's heads: the layout, and the scale its colours are on. */
struct heads_frame {
    struct heads_layout hl;
    float lo, hi;
    bool diverging;
    bool shared; /* one tile: a stage the heads share (one head's own tile is not) */
    int y0;      /* the tiles' first line: under the head labels pinned on line 1 when the
                    heads are one row */
};

/* Blocks are aggregated once per view (the block caches, one a head); their range is then the
 * scale, in place of the stage's. */
static void heads_block_scale(struct grid_panel *gp, const struct app *a,
                              const struct heads_layout *hl, float *lo, float *hi)
{
    const struct app_view *view = app_view_state(a);
    int T = per_layer(a);
    if (gp->n_blocks < T) {
        struct block_cache *grown = realloc(gp->blocks, (size_t)T * sizeof(*grown));
        if (grown) {
            memset(grown + gp->n_blocks, 0, (size_t)(T - gp->n_blocks) * sizeof(*grown));
            gp->blocks = grown;
            gp->n_blocks = T;
        }
    }
    float blo = INFINITY, bhi = -INFINITY;
    for (int h = 0; h < T && h < gp->n_blocks; h++) {
        struct attn_mat_view v = app_view(a, view->stage, h);
        if (block_cache_get(&gp->blocks[h], v, &hl->grid, app_result(a)->generation, view->layer,
                            (int)view->stage, T > 1 ? h : -1) == 0) {
            blo = fminf(blo, gp->blocks[h].lo[view->block_agg]);
            bhi = fmaxf(bhi, gp->blocks[h].hi[view->block_agg]);
        }
    }
    if (blo <= bhi) {
        *lo = blo;
        *hi = bhi;
    }
}

/* The layout of the panel's area, scrolled to the cursor, and its colour scale. */
static void heads_frame_make(struct heads_frame *hf, struct grid_panel *gp, struct frame *f)
{
    const struct app *a = f->app;
    struct rect r = gp->base.area;
    range_get(&gp->range, a, -1, &hf->lo, &hf->hi);
    heads_layout(&hf->hl, f, r, hf->lo, hf->hi);
    heads_follow(gp, a, &hf->hl);
    if (hf->hl.kind == CELLS_BLOCKS)
        heads_block_scale(gp, a, &hf->hl, &hf->lo, &hf->hi);
    hf->diverging = hf->lo < 0;
    hf->shared = per_layer(a) == 1 && app_model(a)->heads > 1;
    hf->y0 = r.y + (hf->hl.tile_rows == 1 ? 2 : 1);
}

/* The title, and the legend of the scale at its right. */
static void heads_title(const struct heads_frame *hf, struct frame *f, struct rect r)
{
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    char title[160], scale[96] = "";
    snprintf(title, sizeof(title), "all %d head%s \u00b7 %s%s", app_model(a)->heads,
             app_model(a)->heads == 1 ? "" : "s", attn_stage_name(view->stage),
             hf->shared ? " (shared by all heads)" : "");
    if (hf->hl.kind == CELLS_BLOCKS)
        zoom_cell_text(scale, sizeof(scale), &hf->hl.grid, attn_stage_is_square(view->stage),
                       view->block_agg);
    int legend_w = heatmap_legend_named(t, r.y, r.x + r.w, hf->lo, hf->hi, hf->diverging,
                                        scale[0] ? scale : NULL);
    char clipped[160];
    abbreviate(clipped, sizeof(clipped), title, r.w - legend_w - 1);
    draw_text(r.y, r.x, r.w - legend_w - 1, t->role_attr[ROLE_LABEL], clipped);
}

/* The row label at y of a line of blocks bu (and bl under it, half blocks; -1: none): its token,
 * or its positions "96–103", once for the row of tiles. */
static void heads_row_label(const struct heads_frame *hf, struct frame *f, int y, int x, int bu,
                            int bl)
{
    const struct heads_layout *hl = &hf->hl;
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    int first = bu * hl->grid.br;
    int last = ((bl >= 0 ? bl : bu) + 1) * hl->grid.br - 1;
    last = last < hl->grid.rows ? last : hl->grid.rows - 1;
    char lab[64], text[3 * SCENE_MAX_TOKEN_BYTES + 32];
    if (first == last)
        display_token(text, sizeof(text), app_row_token(a, first));
    else
        snprintf(text, sizeof(text), "%d\u2013%d", first, last);
    abbreviate(lab, sizeof(lab), text, hl->lw - 1);
    bool on = view->row >= first && view->row <= last;
    draw_text(y, x, hl->lw - 1, f->theme->role_attr[on ? ROLE_SELECTION : ROLE_LABEL], lab);
}

/* One text line of head h's tile at (y, tx): the cells of blocks row bu (and bl under it, as
 * half blocks), the cursor's marked when sel. */
static void heads_cells_line(struct grid_panel *gp, const struct heads_frame *hf,
                             const struct frame *f, struct attn_mat_view v, int h, bool sel, int y,
                             int tx, int bu, int bl)
{
    const struct heads_layout *hl = &hf->hl;
    const struct app *a = f->app;
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    float lo = hf->lo, hi = hf->hi;
    bool diverging = hf->diverging;
    int cbi = view->row / hl->grid.br, cbj = view->col / hl->grid.bc;
    for (int bj = 0; bj < hl->grid.nbc; bj++) {
        int x = tx + bj * hl->cw;
        float xu = heads_value(gp, hl, v, view->block_agg, h, bu, bj);
        struct theme_look look = {t->role_attr[ROLE_MASKED], t->role_attr[ROLE_MASKED], " "};
        if (isfinite(xu))
            look = theme_cell_look(t, xu, lo, hi, diverging);
        bool cursor = sel && bj == cbj && (bu == cbi || bl == cbi);
        if (!hl->half) {
            char cell[48];
            cell_text(cell, sizeof(cell), hl, xu, look.shade);
            /* a number reads on the cell's colour; glyphs have their own look */
            int attr = hl->kind == CELLS_NUMBERS ? look.attr : look.shade_attr;
            draw_text(y, x, hl->cw, cursor ? theme_cursor_attr(t, attr) : attr, cell);
            continue;
        }
        float xl = bl >= 0 ? heads_value(gp, hl, v, view->block_agg, h, bl, bj) : -INFINITY;
        int su = isfinite(xu) ? theme_cell_step(xu, lo, hi, diverging) : -1;
        int sl = isfinite(xl) ? theme_cell_step(xl, lo, hi, diverging) : -1;
        if (cursor) {
            float xc = bu == cbi ? xu : xl;
            int cattr = isfinite(xc) ? theme_cell_attr(t, xc, lo, hi, diverging, NULL)
                                     : t->role_attr[ROLE_CURSOR];
            draw_text(y, x, 1, cattr | A_BOLD, "\u25c6");
        } else if (su < 0 && sl < 0) {
            draw_text(y, x, 1, A_NORMAL, " ");
        } else if (su < 0) {
            draw_cell_pair(y, x, "\u2584", A_NORMAL, theme_half_pair(t, diverging, sl, -1));
        } else {
            draw_cell_pair(y, x, "\u2580", A_NORMAL, theme_half_pair(t, diverging, su, sl));
        }
    }
}

/* Head h's tile: its label and the lines of its cells in view. Returns the last line drawn. */
static int heads_tile(struct grid_panel *gp, const struct heads_frame *hf, struct frame *f, int h)
{
    const struct heads_layout *hl = &hf->hl;
    const struct app *a = f->app;
    struct rect r = gp->base.area;
    int T = per_layer(a), last_y = r.y + 1;
    int tr = h / hl->per_row, tc = h % hl->per_row;
    int tx = r.x + hl->lw + tc * (hl->tile_w + GAP);
    bool sel = T > 1 && h == app_view_state(a)->head;
    char label[512];
    int lattr = tile_label(label, sizeof(label), f->theme, a, app_view_state(a)->layer, h, false,
                           hf->shared, sel);
    int label_line = tile_row_line(hl, tr);
    if (hl->tile_rows == 1)
        draw_text(r.y + 1, tx, hl->tile_w + GAP - 1, lattr, label);
    else if (label_line >= gp->top_line && label_line < gp->top_line + hl->view)
        draw_text(hf->y0 + label_line - gp->top_line, tx, hl->tile_w + GAP - 1, lattr, label);
    struct attn_mat_view v = app_view(a, app_view_state(a)->stage, h);
    int per = hl->half ? 2 : 1, first_line = hl->tile_rows == 1 ? 0 : label_line + 1;
    for (int k = 0; k < hl->lines; k++) {
        int line = first_line + k - gp->top_line;
        if (line < 0 || line >= hl->view)
            continue;
        int y = hf->y0 + line;
        last_y = y > last_y ? y : last_y;
        int bu = k * per, bl = hl->half && bu + 1 < hl->grid.nbr ? bu + 1 : -1;
        if (tc == 0 && hl->lw > 0)
            heads_row_label(hf, f, y, r.x, bu, bl);
        heads_cells_line(gp, hf, f, v, h, sel, y, tx, bu, bl);
    }
    return last_y;
}

/* The footer right under the last line drawn (last_y): the selection, and what is out of view
 * (never cut off silently). */
static void heads_footer(const struct grid_panel *gp, const struct heads_frame *hf, struct frame *f,
                         int last_y)
{
    const struct heads_layout *hl = &hf->hl;
    const struct app *a = f->app;
    struct rect r = gp->base.area;
    int T = per_layer(a), per = hl->half ? 2 : 1;
    char footer[8 * SCENE_MAX_TOKEN_BYTES], row_tok[3 * SCENE_MAX_TOKEN_BYTES + 8], more[160] = "";
    char col_tok[3 * SCENE_MAX_TOKEN_BYTES + 8];
    display_token(row_tok, sizeof(row_tok), app_row_token(a, app_view_state(a)->row));
    if (attn_stage_is_square(app_view_state(a)->stage))
        display_token(col_tok, sizeof(col_tok), app_col_token(a, app_view_state(a)->col));
    else
        snprintf(col_tok, sizeof(col_tok), "d%d", app_view_state(a)->col);
    size_t o = (size_t)snprintf(footer, sizeof(footer),
                                "%s \u00b7 row %d \u201c%s\u201d \u00b7 column %d \u201c%s\u201d",
                                T > 1        ? ""
                                : hf->shared ? "shared"
                                             : "head 0",
                                app_view_state(a)->row, row_tok, app_view_state(a)->col, col_tok);
    if (T > 1) /* the head first: which tile the cursor is in */
        o = (size_t)snprintf(footer, sizeof(footer),
                             "head %d \u00b7 row %d \u201c%s\u201d \u00b7 column %d \u201c%s\u201d",
                             app_view_state(a)->head, app_view_state(a)->row, row_tok,
                             app_view_state(a)->col, col_tok);
    int total = hl->tile_rows == 1 ? hl->lines : hl->tile_rows * (1 + hl->lines);
    bool above = gp->top_line > 0, below = gp->top_line + hl->view < total;
    if (above || below) {
        if (hl->tile_rows == 1) {
            int first = gp->top_line * per * hl->grid.br;
            int last = (gp->top_line + hl->view) * per * hl->grid.br - 1;
            last = last < hl->grid.rows ? last : hl->grid.rows - 1;
            snprintf(more, sizeof(more), "rows %d\u2013%d of %d", first, last, hl->grid.rows);
        } else {
            /* the heads whose tiles have a line in view */
            int h0 = -1, h1 = -1;
            for (int tr = 0; tr < hl->tile_rows; tr++) {
                int l0 = tile_row_line(hl, tr), l1 = l0 + hl->lines;
                if (l1 >= gp->top_line && l0 < gp->top_line + hl->view) {
                    h0 = h0 < 0 ? tr * hl->per_row : h0;
                    h1 = (tr + 1) * hl->per_row - 1 < T - 1 ? (tr + 1) * hl->per_row - 1 : T - 1;
                }
            }
            snprintf(more, sizeof(more), "heads %d\u2013%d of %d", h0, h1, T);
        }
        size_t m = strlen(more);
        snprintf(more + m, sizeof(more) - m, ", %s%s for more", above ? "\u2191" : "",
                 below ? "\u2193" : "");
    }
    if (more[0] && o < sizeof(footer))
        snprintf(footer + o, sizeof(footer) - o, " \u00b7 %s", more);
    /* Right under the last row, where the eye is, not at the bottom of the panel. */
    int fy = last_y + 1 < r.y + r.h ? last_y + 1 : r.y + r.h - 1;
    draw_text(fy, r.x, r.w, f->theme->role_attr[ROLE_DIM], footer);
}

/* One layer's heads: laid out (heads_frame_make), then the title, the tiles and the footer. */
static void heads_draw(struct panel *p, struct frame *f)
{
    struct grid_panel *gp = (struct grid_panel *)p;
    draw_clear(p->area, A_NORMAL);
    struct heads_frame hf;
    heads_frame_make(&hf, gp, f);
    heads_title(&hf, f, p->area);
    int last_y = p->area.y + 1; /* the last line drawn: the footer goes right under it */
    for (int h = 0; h < per_layer(f->app); h++) {
        int y = heads_tile(gp, &hf, f, h);
        last_y = y > last_y ? y : last_y;
    }
    heads_footer(gp, &hf, f, last_y);
}

/* Moves the cursor's row by dbi cells (blocks) of the layout. */
static int heads_move_row(struct app *a, const struct heads_layout *hl, int dbi)
{
    const struct app_view *view = app_view_state(a);
    int row = view->row, col = view->col;
    if (!zoom_step_cursor(&hl->grid, &row, &col, dbi, 0))
        return OUTCOME_HANDLED;
    app_view_mut(a)->row = row;
    return OUTCOME_CURSOR_MOVED;
}

int grid_rows_wanted(struct grid_panel *gp, struct frame *f, int width, int *least)
{
    const struct app *a = f->app;
    struct attn_mat_view v = {NULL, app_rows(a), app_cols(a), 0}; /* its shape */
    if (app_net(a)->layers > 1) { /* every layer's tiles at full size, one column a cell */
        int tile_w = v.cols + 2, per_row = width / tile_w > 0 ? width / tile_w : 1;
        per_row = per_row < per_layer(a) ? per_row : per_layer(a);
        int tile_rows = (tiles(a) + per_row - 1) / per_row;
        int small = v.rows < THUMB_MIN ? v.rows : THUMB_MIN; /* the smallest thumbnails */
        *least = 1 + tile_rows * (small + 2);
        return 1 + tile_rows * (v.rows + 2);
    }
    float lo, hi; /* one layer: its heads laid out as if the rows were endless */
    range_get(&gp->range, a, -1, &lo, &hi);
    struct heads_layout hl;
    heads_layout(&hl, f, (struct rect){0, 0, 100000, width}, lo, hi);
    *least = hl.tile_rows == 1 ? 3 + hl.lines : 2 + hl.tile_rows * (1 + hl.lines);
    return *least; /* it scrolls through the rows: no smaller size */
}

int grid_rows_used(struct grid_panel *gp, struct frame *f, int width, int height)
{
    if (app_net(f->app)->layers > 1)
        return height;
    float lo, hi;
    range_get(&gp->range, f->app, -1, &lo, &hi);
    struct heads_layout hl;
    heads_layout(&hl, f, (struct rect){0, 0, height, width}, lo, hi);
    if (hl.tile_rows > 1 || hl.lines > hl.view)
        return height; /* it scrolls: every row shows some */
    return 3 + hl.lines < height ? 3 + hl.lines : height;
}

static void grid_draw(struct panel *p, struct frame *f)
{
    if (app_net(f->app)->layers > 1)
        thumb_draw(p, f);
    else
        heads_draw(p, f);
}

static int grid_handle_key(struct panel *p, struct frame *f, enum action act)
{
    const struct grid_panel *gp = (const struct grid_panel *)p;
    if (app_net(f->app)->layers == 1) {
        /* One layer: left and right pick a head, up and down move through the rows. */
        float lo, hi;
        range_get(&((struct grid_panel *)p)->range, f->app, -1, &lo, &hi);
        struct heads_layout hl;
        heads_layout(&hl, f, p->area, lo, hi);
        int page = hl.view * (hl.half ? 2 : 1);
        switch (act) {
        case ACTION_LEFT:
            return select_tile(f->app, selected(f->app) - 1);
        case ACTION_RIGHT:
            return select_tile(f->app, selected(f->app) + 1);
        case ACTION_UP:
            return heads_move_row(f->app, &hl, -1);
        case ACTION_DOWN:
            return heads_move_row(f->app, &hl, 1);
        case ACTION_PAGE_UP:
            return heads_move_row(f->app, &hl, -page);
        case ACTION_PAGE_DOWN:
            return heads_move_row(f->app, &hl, page);
        default:
            return OUTCOME_IGNORED;
        }
    }
    int cw;
    thumb_layout(p, f, &cw);
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

static int grid_handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    const struct grid_panel *gp = (const struct grid_panel *)p;
    if (buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return select_tile(f->app, selected(f->app) + (buttons & BUTTON4_PRESSED ? -1 : 1));
    int tile;
    if (app_net(f->app)->layers == 1) {
        float lo, hi;
        range_get(&((struct grid_panel *)p)->range, f->app, -1, &lo, &hi);
        struct heads_layout hl;
        heads_layout(&hl, f, p->area, lo, hi);
        int dx = x - p->area.x - hl.lw, dy = y - p->area.y - 1;
        int col = dx >= 0 ? dx / (hl.tile_w + GAP) : -1;
        int tr = hl.tile_rows == 1 ? 0 : (gp->top_line + dy) / (1 + hl.lines);
        tile = tr * hl.per_row + col;
        if (dy < 0 || col < 0 || col >= hl.per_row || tile >= tiles(f->app))
            return OUTCOME_IGNORED;
    } else {
        int cw;
        thumb_layout(p, f, &cw);
        int row = gp->top + (y - p->area.y - 1) / gp->tile_h;
        int col = (x - p->area.x) / gp->tile_w;
        tile = row * gp->per_row + col;
        if (y - p->area.y < 1 || col >= gp->per_row || tile >= tiles(f->app))
            return OUTCOME_IGNORED;
    }
    select_tile(f->app, tile);
    app_view_mut(f->app)->all_heads = false; /* a click opens the head large */
    return OUTCOME_VIEW_CHANGED;
}

/* A new area: the tiles are laid out again for it. */
static void grid_resize(struct panel *p, struct frame *f, struct rect area)
{
    p->area = area;
    if (app_net(f->app)->layers > 1) {
        int cw;
        thumb_layout(p, f, &cw);
    }
}

void grid_panel_free(struct grid_panel *gp)
{
    free(gp->thumbs.cells);
    free(gp->thumbs.lo);
    free(gp->thumbs.hi);
    free(gp->thumbs.made);
    free(gp->thumbs.change);
    free(gp->thumbs.changed);
    gp->thumbs = (struct thumb_cache){0};
    for (int h = 0; h < gp->n_blocks; h++)
        block_cache_free(&gp->blocks[h]);
    free(gp->blocks);
    gp->blocks = NULL;
    gp->n_blocks = 0;
}

/* Every head (a), every layer's in the model view. */
static bool grid_wanted(const struct frame *f)
{
    return app_view_state(f->app)->all_heads;
}

void grid_panel_init(struct grid_panel *gp)
{
    memset(gp, 0, sizeof(*gp));
    gp->base.name = "grid";
    gp->base.slot = SLOT_MAP;
    gp->base.wanted = grid_wanted;
    gp->base.follows_cursor = true;
    gp->base.draw = grid_draw;
    gp->base.handle_key = grid_handle_key;
    gp->base.handle_mouse = grid_handle_mouse;
    gp->base.resize = grid_resize;
}
