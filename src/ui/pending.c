/* pending panel: a layer not yet computed, in the place of what would show it (see pending.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/pending.h"

bool pending_wanted_map(const struct frame *f)
{
    const struct app *a = f->app;
    const struct app_view *v = app_view_state(a);
    if (!app_computing(a))
        return false;
    if (v->lens) /* every layer's guess */
        return !app_all_ready(a);
    if (v->all_heads && app_result(a)->net.layers > 1) /* the model view: tile by tile */
        return false;
    /* its product, made by a job; in stream mode from every layer's stages, which a job may take */
    if (v->rollout && (app_interp_busy(a) || app_result(a)->net.stage_layers))
        return true;
    return !app_layer_ready(a, v->layer); /* the rollout too: layers 0 .. the one shown */
}

bool pending_wanted_side(const struct frame *f)
{
    const struct app *a = f->app;
    const struct app_view *v = app_view_state(a);
    if (!app_computing(a))
        return false;
    /* what reads the interp cache (the predictions, the lens, the rollout's token view and
       inspector) waits while a job writes it */
    if (app_interp_busy(a) && (v->predictions || v->lens || v->rollout))
        return true;
    if (v->rollout && app_result(a)->net.stage_layers)
        return true;
    if (v->predictions || v->lens) /* the model's own: the last layer, and the ablation's before */
        return !app_all_ready(a);
    return !app_layer_ready(a, v->layer);
}

/* "■■■■□□□□" of ready of total, at most width cells (one per layer when they fit). */
static void bar(char *out, size_t size, int ready, int total, int width)
{
    int cells = total < width ? total : width, full = total ? ready * cells / total : 0;
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < cells && o + 4 < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s", i < full ? "\u25a0" : "\u25a1");
}

static void pending_draw(struct panel *p, struct frame *f)
{
    const struct app *a = f->app;
    const struct app_view *v = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    bool side = p->slot == SLOT_SIDE;
    int x0 = r.x + (side ? 2 : 0), w = r.w - (side ? 3 : 0), y = r.y;
    for (int i = 0; side && r.x > 0 && i < r.h; i++)
        draw_text(r.y + i, r.x, 1, t->role_attr[ROLE_DIM], "\u2502");
    struct app_progress pr;
    app_compute_progress(a, &pr);
    char title[160], what[160];
    bool all = v->lens || (side && v->predictions);
    struct app_progress jp;
    app_compute_progress(a, &jp);
    if (jp.rollout && !side)
        snprintf(what, sizeof(what),
                 "the rollout through layer %d is computing: a product of n \u00d7 n a layer",
                 v->layer);
    else if (app_interp_busy(a))
        snprintf(what, sizeof(what), "the %s is computing: the predictions come after it",
                 jp.rollout ? "rollout" : "lens");
    else if (v->lens)
        snprintf(what, sizeof(what), "the logit lens reads every layer");
    else if (side && v->predictions)
        snprintf(what, sizeof(what), "the predictions come from the last layer");
    else if (v->rollout && !side)
        snprintf(what, sizeof(what), "the rollout through layer %d needs layers 0\u2013%d",
                 v->layer, v->layer);
    else
        snprintf(what, sizeof(what), "layer %d is computing", v->layer);
    snprintf(title, sizeof(title), "%s",
             side ? (v->predictions ? "predictions" : "inspector")
                  : (v->lens ? "logit lens" : "computing"));
    draw_text(y++, x0, w, t->role_attr[ROLE_LABEL], title);
    if (side && !all && pending_wanted_map(f)) { /* the map says how far: only what waits */
        snprintf(what, sizeof(what), "waits for layer %d", v->layer);
        if (y < r.y + r.h)
            draw_text(y, x0, w, t->role_attr[ROLE_DIM], what);
        return;
    }
    if (y < r.y + r.h)
        y++;
    char line[320], cells[256];
    if (y < r.y + r.h)
        draw_text(y++, x0, w, t->role_attr[ROLE_HELP], what);
    bar(cells, sizeof(cells), pr.ready, pr.layers, w - 30 > 4 ? w - 30 : 4);
    snprintf(line, sizeof(line), "%s %d of %d layers ready \u00b7 %.1f s", cells, pr.ready,
             pr.layers, pr.ms / 1000.0);
    if (y < r.y + r.h)
        draw_text(y++, x0, w, t->role_attr[ROLE_LABEL], line);
    if (pr.heads_total > 0 && y < r.y + r.h) {
        snprintf(line, sizeof(line), "%ld of %ld heads", pr.heads_done, pr.heads_total);
        draw_text(y++, x0, w, t->role_attr[ROLE_DIM], line);
    }
    if (y < r.y + r.h)
        y++;
    static const char *const notes[] = {
        "Every key works meanwhile: a layer that is ready shows at once,",
        "an edit starts again from what it changes, q quits.",
    };
    for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]) && y < r.y + r.h && !all; i++)
        draw_text(y++, x0, w, t->role_attr[ROLE_DIM], notes[i]);
    if (all && y < r.y + r.h)
        draw_text(y++, x0, w, t->role_attr[ROLE_DIM], notes[1]);
}

void pending_panel_init(struct panel *p, enum panel_slot slot)
{
    memset(p, 0, sizeof(*p));
    p->name = slot == SLOT_MAP ? "pending-map" : "pending-side";
    p->slot = slot;
    p->wanted = slot == SLOT_MAP ? pending_wanted_map : pending_wanted_side;
    p->draw = pending_draw;
}
