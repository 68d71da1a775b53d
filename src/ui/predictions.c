/* predictions panel: the cursor's row's next tokens as bars (see predictions.h).
 *
 * Top to bottom: a title (the position and its token, the layer read, the temperature), a line
 * on the actual next token (its rank and probability; with a head ablated, the probability
 * without the ablation -> with it), then one line per token of the top k, highest first: rank,
 * token, logit (when there is room), probability and a bar of it (a full bar is 1). The next
 * token's line is marked "← next". Bars carry their numbers, so nothing is in colour alone.
 * On a masked LM (BERT) a position's scores are for its own token: the title says "at", the
 * line and the mark say "itself", and a [MASK] says the model fills it in; with a head ablated a
 * [MASK]'s line follows the model's answer (what it put first without the ablation), as ablate's
 * loss does.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "common/cnum.h"
#include "ui/predictions.h"

#define TOKEN_MAX 14 /* columns of a token at most */
#define BAR_MAX   40 /* columns of a full bar at most */

/* Vocabulary id's text as a label: visible blanks (" rain" as "␣rain"), cut to width. */
static void token_text(char *out, size_t size, const struct app *a, int id, int width)
{
    char raw[256], shown[3 * sizeof(raw) + 1];
    attn_scene_token_label(raw, sizeof(raw), &app_result(a)->shown, id);
    display_token(shown, sizeof(shown), raw);
    abbreviate(out, size, shown, width);
}

/* "L1 h0 zero, L0 h0 mean" (or "3 heads"): the ablations "after" stands for. */
static void ablated_text(char *out, size_t size, const struct app *a)
{
    const struct app_result *res = app_result(a);
    int n = app_ablated_count(a);
    out[0] = '\0';
    if (n > 2) {
        snprintf(out, size, "%d heads ablated", n);
        return;
    }
    size_t o = 0;
    for (int L = 0; L < res->net.layers; L++)
        for (int h = 0; h < res->net.model[L].heads && o < size; h++) {
            enum attn_head_mode hm = app_head_mode(a, L, h);
            if (hm == HEAD_KEEP)
                continue;
            char who[24] = "";
            if (res->net.layers > 1)
                snprintf(who, sizeof(who), "L%d ", L);
            o += (size_t)snprintf(out + o, size - o, "%s%sh%d %s", o ? ", " : "", who, h,
                                  attn_head_mode_name(hm));
        }
}

static void predictions_draw(struct panel *p, struct frame *f)
{
    struct app *a = f->app;
    const struct app_result *res = app_result(a);
    const struct app_view *view = app_view_state(a);
    const struct theme *t = f->theme;
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    /* A rule on the left separates it from the map in the side-by-side layout. */
    for (int i = 0; r.x > 0 && i < r.h; i++)
        draw_text(r.y + i, r.x, 1, t->role_attr[ROLE_DIM], "\u2502");
    int x0 = r.x + 2, w = r.w - 3, y = r.y, y_end = r.y + r.h;
    if (w < 12 || r.h < 1)
        return;
    struct diag err;
    attn_diag_clear(&err);
    int layer;
    const struct attn_predictions *pr = app_predictions(a, &layer, &err);

    char title[400], tok[64], temp[32], clipped[400];
    char cur[3 * SCENE_MAX_TOKEN_BYTES + 1];
    display_token(cur, sizeof(cur), app_model(a)->tokens[view->row]);
    abbreviate(tok, sizeof(tok), cur, TOKEN_MAX);
    app_temperature_text(temp, sizeof(temp), view->temperature);
    const struct attn_model *lastm = &res->net.model[res->net.layers - 1];
    bool masked = lastm->masked_lm;
    /* Not the checkpoint's predictions when the scene computes otherwise: said first. */
    char changes[200], modified[240] = "";
    if (attn_scene_model_changes(changes, sizeof(changes), &res->shown) > 0)
        snprintf(modified, sizeof(modified), " of the modified model (%s)", changes);
    if (view->lens)
        snprintf(title, sizeof(title),
                 "lens%s \u00b7 layer %d%s %s \u201c%s\u201d (position %d) \u00b7 %s %s", modified,
                 layer, layer == res->net.layers - 1 ? " (the output)" : "",
                 masked ? "at" : "after", tok, view->row, knob_label(KNOB_TEMPERATURE), temp);
    else
        snprintf(title, sizeof(title),
                 "predictions%s \u00b7 %s \u201c%s\u201d (position %d) \u00b7 %s %s", modified,
                 masked ? "at" : "after", tok, view->row, knob_label(KNOB_TEMPERATURE), temp);
    if (lastm->logit_softcap > 0) { /* Gemma 2's: no logit passes the cap */
        size_t o = strlen(title);
        snprintf(title + o, sizeof(title) - o,
                 " \u00b7 logits soft-capped: %g\u00b7tanh(z\u00f7%g)",
                 (double)lastm->logit_softcap, (double)lastm->logit_softcap);
    }
    abbreviate(clipped, sizeof(clipped), title, w);
    draw_text(y++, x0, w, t->role_attr[ROLE_LABEL], clipped);
    if (!pr) {
        char msg[DIAG_MSG_MAX + 32];
        snprintf(msg, sizeof(msg), "no predictions: %s", err.msg);
        abbreviate(clipped, sizeof(clipped), msg, w);
        if (y < y_end)
            draw_text(y, x0, w, t->role_attr[ROLE_ERROR], clipped);
        return;
    }

    /* The actual next token: its rank and probability; with an ablation, before -> after (at
       the last position, of what the run without it put first). */
    char line[400], next[64];
    int next_id = pr->next_id[0];
    struct interp_compare cmp;
    struct diag cerr;
    bool ablated = layer == res->net.layers - 1 && app_prediction_compare(a, &cmp, &cerr) == 0;
    if (ablated) {
        char heads[120];
        ablated_text(heads, sizeof(heads), a);
        token_text(next, sizeof(next), a, cmp.id, TOKEN_MAX);
        attn_cnum_format(line, sizeof(line), "%s %s: p %.4f \u2192 %.4f, rank %d \u2192 %d (%s)",
                         cmp.is_next ? (masked ? "itself" : "next")
                                     : (masked ? "[MASK] answer" : "top before"),
                         next, cmp.before, cmp.after, cmp.before_rank, cmp.after_rank, heads);
    } else if (next_id < 0 && masked) {
        snprintf(line, sizeof(line), "[MASK]: the model fills it in");
    } else if (next_id < 0) {
        snprintf(line, sizeof(line), "the last token: no next token to compare with");
    } else {
        token_text(next, sizeof(next), a, next_id, TOKEN_MAX);
        attn_cnum_format(line, sizeof(line), "%s %s: rank %d, p %.4f, loss %.4f",
                         masked ? "itself" : "next", next, pr->next_rank[0], pr->next_prob[0],
                         pr->next_loss[0]);
    }
    abbreviate(clipped, sizeof(clipped), line, w);
    if (y < y_end)
        draw_text(y++, x0, w, t->role_attr[ROLE_HELP], clipped);

    /* The top k that fit: rank, token, logit (when there is room), probability, bar. */
    int k = pr->k < y_end - y ? pr->k : y_end - y;
    char labs[INTERP_TOP][64];
    int labw = 1;
    for (int e = 0; e < k; e++) {
        token_text(labs[e], sizeof(labs[e]), a, attn_predictions_top(pr, 0)[e].id, TOKEN_MAX);
        labw = text_width(labs[e]) > labw ? text_width(labs[e]) : labw;
    }
    const char *mark = masked ? " \u2190 itself" : " \u2190 next";
    bool logits = w >= 3 + 1 + labw + 1 + 9 + 7 + 12 + 7;
    int fixed = 3 + 1 + labw + 1 + (logits ? 9 : 0) + 7 + 1;
    int barw = w - fixed - text_width(mark);
    barw = barw < BAR_MAX ? barw : BAR_MAX;
    for (int e = 0; e < k; e++, y++) {
        const struct attn_token_score *ts = &attn_predictions_top(pr, 0)[e];
        bool is_next = ts->id == next_id;
        char cells[128], bar[3 * BAR_MAX + 8];
        /* rank, then the token in its own column (display width, not bytes), then numbers */
        int x = x0;
        char rank[16];
        snprintf(rank, sizeof(rank), "%3d ", e + 1);
        x += draw_text(y, x, w, t->role_attr[ROLE_DIM], rank);
        draw_text(y, x, labw, is_next ? t->role_attr[ROLE_SELECTION] : (int)A_NORMAL, labs[e]);
        x += labw + 1;
        if (logits)
            attn_cnum_format(cells, sizeof(cells), "%8.4f %6.4f ", (double)ts->logit,
                             (double)ts->prob);
        else
            attn_cnum_format(cells, sizeof(cells), "%6.4f ", (double)ts->prob);
        x += draw_text(y, x, x0 + w - x, A_NORMAL, cells);
        if (barw >= 1) {
            draw_bar_text(bar, sizeof(bar), ts->prob, barw);
            int used = draw_text(y, x, barw, t->role_attr[ROLE_LABEL], bar);
            x += used;
        }
        if (is_next)
            draw_text(y, x, x0 + w - x, t->role_attr[ROLE_SELECTION], mark);
    }
}

/* The predictions (p), and with the lens (y) its pick's. */
static bool predictions_wanted(const struct frame *f)
{
    const struct app_view *view = app_view_state(f->app);
    return view->predictions || view->lens;
}

void predictions_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "predictions";
    p->slot = SLOT_SIDE;
    p->wanted = predictions_wanted;
    p->follows_cursor = true;
    p->draw = predictions_draw;
}
