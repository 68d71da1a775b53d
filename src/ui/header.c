/* header panel: the scene's title, its variant in words, sizes and the editable knobs. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/header.h"

static void header_draw(struct panel *p, struct frame *f)
{
    const struct app_result *res = app_result(f->app);
    const struct app_view *view = app_view_state(f->app);
    const struct attn_scene *s = &app_doc(f->app)->scene;
    int hattr = f->theme->role_attr[ROLE_HEADER];
    struct rect r = p->area;
    attrset(hattr);
    mvhline(r.y, r.x, ' ', r.w);
    attrset(A_NORMAL);

    char sizes[200], layer[96] = "", ablated[96] = "";
    if (res->net.encoder) { /* an encoder-decoder: the stack on screen, its layer and attention */
        char name[48];
        const struct attn_net *net = app_net(f->app);
        attn_net_layer_name(name, sizeof(name), net, view->layer, false);
        snprintf(layer, sizeof(layer), " \u00b7 %s of %d", name,
                 net->is_encoder ? net->layers : net->layers / 2);
    } else if (res->net.layers > 1) {
        snprintf(layer, sizeof(layer), " \u00b7 layer %d of %d", view->layer, res->net.layers);
    }
    /* Ablated heads are said where every view sees them: one by name, more by their count. */
    int n_abl = app_ablated_count(f->app);
    for (int L = 0; L < res->net.layers && n_abl == 1; L++)
        for (int h = 0; h < res->net.model[L].heads; h++)
            if (app_head_mode(f->app, L, h) != HEAD_KEEP) {
                char who[32] = "";
                if (res->net.layers > 1)
                    snprintf(who, sizeof(who), "L%d ", L);
                snprintf(ablated, sizeof(ablated), " \u00b7 %sh%d ablated (%s)", who, h,
                         attn_head_mode_name(app_head_mode(f->app, L, h)));
            }
    if (n_abl > 1)
        snprintf(ablated, sizeof(ablated), " \u00b7 %d heads ablated", n_abl);
    /* A checkpoint that computes otherwise than it was trained says so, first of all: one change
       by name, more by their count (the predictions panel names them all). */
    char changes[200], modified[120] = "";
    int n_mod = attn_scene_model_changes(changes, sizeof(changes), &res->shown);
    if (n_mod == 1)
        snprintf(modified, sizeof(modified), " \u00b7 modified: %.100s", changes);
    else if (n_mod > 1)
        snprintf(modified, sizeof(modified), " \u00b7 modified (%d changes)", n_mod);
    /* the tokens of the sequence on screen: the encoder's source in its view (E) */
    int n = view->encoder && s->encoder ? s->encoder->n_tokens : s->n_tokens;
    snprintf(sizes, sizeof(sizes), " %d token%s \u00b7 d_in %d%s%s%s ", n, n == 1 ? "" : "s",
             attn_scene_d_in(s), layer, modified, ablated);
    int sw = text_width(sizes);
    char variant[512];
    attn_scene_describe(variant, sizeof(variant), s);
    /* The title stays true after an edit: the values it names rewritten, or, when it no longer
       fits, the scene's own description, and line 2 says where it came from. */
    char title[1024], from[1100];
    if (app_title(title, sizeof(title), from, sizeof(from), f->app, s) == TITLE_REPLACED)
        snprintf(variant, sizeof(variant), "%.500s", from);
    char short_title[512];
    abbreviate(short_title, sizeof(short_title), title, r.w - sw - 2);
    draw_text(r.y, r.x + 1, r.w - sw - 2, hattr | A_BOLD, short_title);
    if (sw < r.w)
        draw_text(r.y, r.x + r.w - sw, sw, hattr, sizes);

    /* Line 2: the variant, then the knobs + and - change (the selected one highlighted). */
    move(r.y + 1, r.x);
    clrtoeol();
    char knobs[KNOB_COUNT][48];
    int kw = 0;
    for (int k = 0; k < KNOB_COUNT; k++) {
        char value[32];
        knobs[k][0] = '\0';
        if (!app_knob_shown(f->app, (enum knob)k))
            continue;
        app_knob_text(value, sizeof(value), f->app, (enum knob)k);
        /* each by the name Tab's help gives it: "temp", never "T", the tokenizer's key */
        snprintf(knobs[k], sizeof(knobs[k]), " %s %s ", knob_label((enum knob)k), value);
        kw += text_width(knobs[k]) + 1;
    }
    int vw = r.w - kw - 2;
    if (vw > 10) {
        char shortv[256];
        abbreviate(shortv, sizeof(shortv), variant, vw);
        draw_text(r.y + 1, r.x + 1, vw, f->theme->role_attr[ROLE_LABEL], shortv);
    }
    int x = r.x + r.w - kw;
    for (int k = 0; k < KNOB_COUNT && x >= r.x; k++) {
        if (!knobs[k][0])
            continue;
        int attr = k == (int)view->knob ? f->theme->role_attr[ROLE_STAGE_CURRENT]
                                        : f->theme->role_attr[ROLE_DIM];
        x += draw_text(r.y + 1, x, r.x + r.w - x, attr, knobs[k]) + 1;
    }
}

void header_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "header";
    p->draw = header_draw;
}
