/* stagebar panel: every pipeline stage in order, the current one highlighted; stages that do
 * nothing for this scene (no mask, no dropout, ...) are dimmed but can still be visited. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/stagebar.h"
#include "common/cnum.h"

/* Where each of the scene's stages goes: its text and the columns [x0, x1) it covers, in the
 * densest layout that fits (0 padded with dots, 1 tight), and when even that does not fit, a
 * window of stages around the current one with "…" at a cut end. Every stage is written by its
 * one name (engine/stage.h), as --stage, the map heading and the docs write it: a name the bar
 * shortened would be one the command line refuses. Drawing and mouse clicks both use it, so
 * they always agree. */
struct bar_layout {
    int density;
    int n; /* the scene's stages */
    enum attn_stage stage[STAGE_COUNT];
    char text[STAGE_COUNT][40];
    int x0[STAGE_COUNT], x1[STAGE_COUNT]; /* x1 == x0: not shown */
    bool cut_left, cut_right;
};

static void lay_out(struct bar_layout *bl, const struct rect *r, const struct attn_model *m,
                    enum attn_stage current)
{
    memset(bl, 0, sizeof(*bl));
    bl->n = attn_stage_order(bl->stage, m);
    for (bl->density = 0;; bl->density++) {
        int w = 1;
        for (int i = 0; i < bl->n; i++) {
            snprintf(bl->text[i], sizeof(bl->text[i]), bl->density == 0 ? " %s " : "%s",
                     attn_stage_name(bl->stage[i]));
            w += text_width(bl->text[i]) + 1;
        }
        if (w <= r->w || bl->density == 1)
            break;
    }
    int cur = 0;
    for (int i = 0; i < bl->n; i++)
        if (bl->stage[i] == current)
            cur = i;
    /* The first stage shown: from 0, or far enough right that the current one fits. */
    int first = 0;
    for (;;) {
        int x = r->x + 1 + (first > 0 ? 2 : 0);
        int last = first;
        while (last < bl->n &&
               x + text_width(bl->text[last]) + (last + 1 < bl->n ? 3 : 0) <= r->x + r->w) {
            x += text_width(bl->text[last]) + 1;
            last++;
        }
        if (cur < last || first >= cur)
            break;
        first++;
    }
    int x = r->x + 1;
    if (first > 0) {
        bl->cut_left = true;
        x += 2;
    }
    for (int i = 0; i < bl->n; i++) {
        bl->x0[i] = bl->x1[i] = x;
        if (i < first)
            continue;
        int wi = text_width(bl->text[i]);
        if (x + wi + (i + 1 < bl->n ? 2 : 0) > r->x + r->w) {
            bl->cut_right = i < bl->n;
            break;
        }
        bl->x1[i] = x + wi;
        x += wi + 1; /* the separator */
    }
}

static void stagebar_draw(struct panel *p, struct frame *f)
{
    const struct app_view *view = app_view_state(f->app);
    struct rect r = p->area;
    const struct attn_model *m = app_model(f->app);
    struct bar_layout bl;
    lay_out(&bl, &r, m, view->stage);
    int bar = f->theme->role_attr[ROLE_STAGEBAR];
    draw_clear(r, bar);
    if (bl.cut_left)
        draw_text(r.y, r.x + 1, 1, bar, "\u2026");
    int end = r.x + 1;
    for (int i = 0; i < bl.n; i++) {
        if (bl.x1[i] == bl.x0[i])
            continue;
        enum attn_stage s = bl.stage[i];
        int role = s == view->stage          ? ROLE_STAGE_CURRENT
                   : attn_stage_is_off(m, s) ? ROLE_STAGE_OFF
                                             : ROLE_STAGEBAR;
        draw_text(r.y, bl.x0[i], bl.x1[i] - bl.x0[i], f->theme->role_attr[role], bl.text[i]);
        if (i + 1 < bl.n && bl.x1[i + 1] > bl.x0[i + 1])
            draw_text(r.y, bl.x1[i], 1, bar, bl.density == 0 ? "\u00b7" : " ");
        end = bl.x1[i];
    }
    if (bl.cut_right)
        draw_text(r.y, end + 1, 1, bar, "\u2026");
}

static int stagebar_handle_mouse(struct panel *p, struct frame *f, int y, int x,
                                 unsigned long buttons)
{
    (void)y;
    (void)buttons;
    struct bar_layout bl;
    lay_out(&bl, &p->area, app_model(f->app), app_view_state(f->app)->stage);
    for (int i = 0; i < bl.n; i++)
        if (x >= bl.x0[i] && x < bl.x1[i]) {
            app_view_mut(f->app)->rollout = app_view_mut(f->app)->lens =
                false; /* a stage: the map shows the stages again */
            app_view_mut(f->app)->stage = bl.stage[i];
            app_clamp(f->app);
            return OUTCOME_VIEW_CHANGED;
        }
    return OUTCOME_IGNORED;
}

void stagebar_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "stagebar";
    p->draw = stagebar_draw;
    p->handle_mouse = stagebar_handle_mouse;
}
