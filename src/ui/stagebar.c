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
    case STAGE_QUERIES_ROTATED:
        snprintf(out, size, "RoPE Q");
        return;
    case STAGE_KEYS_ROTATED:
        snprintf(out, size, "RoPE K");
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
    case STAGE_WEIGHTED_NORM: /* Kobayashi et al.'s norm: how far each key moves the output */
        snprintf(out, size, m->wo ? "\u2016\u03b1vW\u2016" : "\u2016\u03b1v\u2016");
        return;
    case STAGE_RESIDUAL1:
        snprintf(out, size, "+attn");
        return;
    case STAGE_FFN_HIDDEN:
        snprintf(out, size, "W1");
        return;
    case STAGE_FFN_ACTIVATED:
        snprintf(out, size, "%s", attn_activation_name(m->activation));
        return;
    case STAGE_FFN_OUT:
        snprintf(out, size, "W2");
        return;
    case STAGE_RESIDUAL2:
        snprintf(out, size, "+ffn");
        return;
    default:
        snprintf(out, size, "%s", attn_stage_name(s));
    }
}

/* Short names for a narrow bar. */
static const char *const short_labels[STAGE_COUNT] = {
    [STAGE_INPUTS] = "in",
    [STAGE_LATENT] = "c",
    [STAGE_QUERIES] = "Q",
    [STAGE_KEYS] = "K",
    [STAGE_VALUES] = "V",
    [STAGE_QUERIES_ROTATED] = "rQ",
    [STAGE_KEYS_ROTATED] = "rK",
    [STAGE_SCORES] = "QK",
    [STAGE_SCALED] = "\u00f7",
    [STAGE_MASKED] = "mask",
    [STAGE_WEIGHTS] = "sm",
    [STAGE_DROPOUT] = "drop",
    [STAGE_WEIGHTED_NORM] = "\u2016av\u2016",
    [STAGE_CONTEXT] = "ctx",
    [STAGE_CONCAT] = "cat",
    [STAGE_OUTPUT] = "out",
    [STAGE_RESIDUAL1] = "+a",
    [STAGE_NORM1] = "n1",
    [STAGE_FFN_HIDDEN] = "W1",
    [STAGE_FFN_ACTIVATED] = "act",
    [STAGE_FFN_OUT] = "W2",
    [STAGE_RESIDUAL2] = "+f",
    [STAGE_NORM2] = "n2",
    [STAGE_FINAL_NORM] = "lnf",
};

/* Where each of the scene's stages goes: its text and the columns [x0, x1) it covers, in the
 * densest layout that fits (0 padded with dots, 1 tight, 2 short names), and when even that
 * does not fit, a window of stages around the current one with "…" at a cut end. Drawing and
 * mouse clicks both use it, so they always agree. */
struct bar_layout {
    int density;
    int n; /* the scene's stages */
    enum attn_stage stage[STAGE_COUNT];
    char text[STAGE_COUNT][40];
    int x0[STAGE_COUNT], x1[STAGE_COUNT]; /* x1 == x0: not shown */
    bool cut_left, cut_right;
};

static void label_of(char *out, size_t size, const struct attn_model *m, enum attn_stage s,
                     int density)
{
    char label[32];
    stage_label(label, sizeof(label), m, s);
    snprintf(out, size, density == 0 ? " %s " : "%s", density == 2 ? short_labels[s] : label);
}

static void lay_out(struct bar_layout *bl, const struct rect *r, const struct attn_model *m,
                    enum attn_stage current)
{
    memset(bl, 0, sizeof(*bl));
    bl->n = attn_stage_order(bl->stage, m);
    for (bl->density = 0;; bl->density++) {
        int w = 1;
        for (int i = 0; i < bl->n; i++) {
            label_of(bl->text[i], sizeof(bl->text[i]), m, bl->stage[i], bl->density);
            /* Tight layouts keep a column of slack per stage, so a bar never ends flush. */
            w += text_width(bl->text[i]) + (bl->density == 0 ? 1 : 2);
        }
        if (w <= r->w || bl->density == 2)
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

static void draw(struct panel *p, struct frame *f)
{
    struct rect r = p->area;
    const struct attn_model *m = app_model(f->app);
    struct bar_layout bl;
    lay_out(&bl, &r, m, f->app->stage);
    int bar = f->theme->role_attr[ROLE_STAGEBAR];
    draw_clear(r, bar);
    if (bl.cut_left)
        draw_text(r.y, r.x + 1, 1, bar, "\u2026");
    int end = r.x + 1;
    for (int i = 0; i < bl.n; i++) {
        if (bl.x1[i] == bl.x0[i])
            continue;
        enum attn_stage s = bl.stage[i];
        int role = s == f->app->stage        ? ROLE_STAGE_CURRENT
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

static int handle_mouse(struct panel *p, struct frame *f, int y, int x, unsigned long buttons)
{
    (void)y;
    (void)buttons;
    struct bar_layout bl;
    lay_out(&bl, &p->area, app_model(f->app), f->app->stage);
    for (int i = 0; i < bl.n; i++)
        if (x >= bl.x0[i] && x < bl.x1[i]) {
            f->app->stage = bl.stage[i];
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
