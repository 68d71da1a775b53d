/* stagebar panel: every pipeline stage in order, the current one highlighted; stages that do
 * nothing for this scene (no mask, no dropout, ...) are dimmed but can still be visited. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/stagebar.h"
#include "common/cnum.h"

static void stage_label(char *out, size_t size, const struct attn_model *m, enum attn_stage s)
{
    switch (s) {
    case STAGE_QUERIES:
        snprintf(out, size, "Q");
        return;
    case STAGE_KEYS:
        snprintf(out, size, "K");
        return;
    case STAGE_VALUES:
        snprintf(out, size, "V");
        return;
    case STAGE_SCALED:
        if (m->scale == SCALE_DIVISOR)
            cnum_format(out, size, "\u00f7%g", (double)m->scale_divisor);
        else
            snprintf(out, size, "\u00f7\u221ad_k");
        return;
    case STAGE_MASKED:
        snprintf(out, size, "mask");
        return;
    case STAGE_WEIGHTS:
        snprintf(out, size, m->normalize == NORM_SUM ? "\u00f7sum" : "softmax");
        return;
    default:
        snprintf(out, size, "%s", attn_stage_name(s));
    }
}

/* Short names for a narrow bar: every stage stays visible down to the minimum width. */
static const char *const short_labels[STAGE_COUNT] = {"in",   "Q",  "K",    "V",   "QK",  "\u00f7",
                                                      "mask", "sm", "drop", "ctx", "cat", "out"};

/* Width of the bar in one of three densities: 0 padded with dots, 1 tight, 2 short names. */
static int bar_width(const struct attn_model *m, int density)
{
    int w = 1;
    for (int s = 0; s < STAGE_COUNT; s++) {
        char label[32];
        stage_label(label, sizeof(label), m, (enum attn_stage)s);
        w += text_width(density == 2 ? short_labels[s] : label) + (density == 0 ? 3 : 2);
    }
    return w;
}

/* Where each stage's label goes: its text and the columns [x0, x1) it covers, in the
 * densest layout that fits. Drawing and mouse clicks both use it, so they always agree. */
struct bar_layout {
    int density;
    char text[STAGE_COUNT][40];
    int x0[STAGE_COUNT], x1[STAGE_COUNT];
};

static void lay_out(struct bar_layout *bl, const struct rect *r, const struct attn_model *m)
{
    bl->density = 0;
    while (bl->density < 2 && bar_width(m, bl->density) > r->w)
        bl->density++;
    int x = r->x + 1;
    for (int s = 0; s < STAGE_COUNT; s++) {
        char label[32];
        stage_label(label, sizeof(label), m, (enum attn_stage)s);
        snprintf(bl->text[s], sizeof(bl->text[s]), bl->density == 0 ? " %s " : "%s",
                 bl->density == 2 ? short_labels[s] : label);
        bl->x0[s] = x;
        x += text_width(bl->text[s]);
        bl->x1[s] = x;
        x += 1; /* the separator */
    }
}

static void draw(struct panel *p, struct frame *f)
{
    struct rect r = p->area;
    const struct attn_model *m = &f->app->model;
    struct bar_layout bl;
    lay_out(&bl, &r, m);
    draw_clear(r, f->theme->role_attr[ROLE_STAGEBAR]);
    for (int s = 0; s < STAGE_COUNT && bl.x0[s] < r.x + r.w; s++) {
        int role = s == (int)f->app->stage   ? ROLE_STAGE_CURRENT
                   : attn_stage_is_off(m, s) ? ROLE_STAGE_OFF
                                             : ROLE_STAGEBAR;
        draw_text(r.y, bl.x0[s], r.x + r.w - bl.x0[s], f->theme->role_attr[role], bl.text[s]);
        if (s + 1 < STAGE_COUNT && bl.x1[s] < r.x + r.w)
            draw_text(r.y, bl.x1[s], 1, f->theme->role_attr[ROLE_STAGEBAR],
                      bl.density == 0 ? "\u00b7" : " ");
    }
}

static int handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    (void)y;
    (void)buttons;
    struct bar_layout bl;
    lay_out(&bl, &p->area, &f->app->model);
    for (int s = 0; s < STAGE_COUNT; s++)
        if (x >= bl.x0[s] && x < bl.x1[s]) {
            f->app->stage = (enum attn_stage)s;
            app_clamp(f->app);
            return OUTCOME_VIEW_CHANGED;
        }
    return OUTCOME_IGNORED;
}

void stagebar_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "stagebar";
    p->draw = draw;
    p->handle_mouse = handle_mouse;
}
