/* status panel: the message line (errors, notes, the prompt) and the line of the most useful
 * keys. The keys shown are read from the keymap, so a user's rebinding shows up here too. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "common/progress.h"
#include "explore/lessonmode.h"
#include "ui/status.h"

/* First bound key of an action, in display form (arrows as glyphs). */
void key_display(char *out, size_t size, const struct keymap *km, enum action a)
{
    keymap_key_display(out, size, km, a);
}

/* Every key bound to an action, in display form, joined by '/' ("Space/\u2192"). */
static void keys_display(char *out, size_t size, const struct keymap *km, enum action a)
{
    static const struct {
        const char *name, *glyph;
    } glyphs[] = {{"Left", "\u2190"}, {"Right", "\u2192"}, {"Up", "\u2191"}, {"Down", "\u2193"}};
    char names[64];
    snprintf(names, sizeof(names), "%s", km->keys[a]);
    size_t o = 0;
    out[0] = '\0';
    for (char *save = NULL, *k = strtok_r(names, " ", &save); k && o < size;
         k = strtok_r(NULL, " ", &save)) {
        const char *shown = k;
        for (size_t i = 0; i < sizeof(glyphs) / sizeof(glyphs[0]); i++)
            if (strcmp(k, glyphs[i].name) == 0)
                shown = glyphs[i].glyph;
        o += (size_t)snprintf(out + o, size - o, "%s%s", o ? "/" : "", shown);
    }
    if (!out[0])
        snprintf(out, size, "(unbound)");
}

/* The status line: pairs of (keys, what they do), most useful first; help and quit lead so
 * they survive the narrowest terminal. */
static const struct {
    enum action a, b; /* b: the paired action (prev/next), or ACTION_NONE */
    const char *label;
} hints[] = {
    {ACTION_HELP, ACTION_NONE, "help"},
    {ACTION_QUIT, ACTION_NONE, "quit"},
    {ACTION_STAGE_PREV, ACTION_STAGE_NEXT, "stage"},
    {ACTION_HEAD_PREV, ACTION_HEAD_NEXT, "head"},
    {ACTION_ALL_HEADS, ACTION_NONE, "all heads"},
    {ACTION_TOKEN_VIEW, ACTION_NONE, "token view"},
    {ACTION_PREDICTIONS, ACTION_NONE, "predictions"}, /* with a vocabulary model */
    {ACTION_EDIT_TEXT, ACTION_NONE, "text"},
    {ACTION_KNOB_NEXT, ACTION_NONE, "knob"},
    {ACTION_KNOB_DOWN, ACTION_KNOB_UP, "change"},
    {ACTION_CAUSAL, ACTION_NONE, "causal"},
    {ACTION_UNDO, ACTION_NONE, "undo"},
    {ACTION_PLAY, ACTION_NONE, "play"},
    {ACTION_EXPORT, ACTION_NONE, "export"},
    {ACTION_SAVE, ACTION_NONE, "save"},
};

/* Draws "key:label " pairs from x; returns the new x, or -1 once one did not fit. */
static int hint(int y, int x, int x_end, const struct theme *t, const char *keys, const char *label)
{
    char tail[64];
    snprintf(tail, sizeof(tail), ":%s ", label);
    if (x < 0 || x + text_width(keys) + text_width(tail) > x_end)
        return -1;
    x += draw_text(y, x, x_end - x, t->role_attr[ROLE_STATUS_KEY], keys);
    return x + draw_text(y, x, x_end - x, t->role_attr[ROLE_STATUS], tail);
}

/* One line of the message row, ending in "…" when it does not fit (? shows config problems in
 * full). Returns the columns used. */
static int message_line(int y, struct rect r, int attr, const char *text)
{
    char shown[DIAG_MSG_MAX + DIAG_FILE_MAX + 64];
    abbreviate(shown, sizeof(shown), text, r.w);
    return draw_text(y, r.x, r.w, attr, shown);
}

/* A compute running in the background, at the message line's right end (after the message,
 * which comes first): how far it is, and whether Esc stops it or why not. */
static void computing_note(int y, struct rect r, const struct theme *t, const struct app *a)
{
    struct app_progress pr;
    app_compute_progress(a, &pr);
    const struct app_result *res = app_result(a);
    char note[320], cannot[200] = "";
    if (!res->stoppable && res->prev.layers == 0) /* the first: nothing to go back to */
        snprintf(cannot, sizeof(cannot), " \u00b7 q quits");
    else if (!res->stoppable) {
        const char *paren = strstr(res->stop_note, " (");
        snprintf(cannot, sizeof(cannot), ", cannot be stopped (%.*s)",
                 paren ? (int)(paren - res->stop_note) : (int)strlen(res->stop_note),
                 res->stop_note);
    }
    char about[48] = "";
    if (res->compute_seconds * 1000 > PROGRESS_QUIET_MS) /* the estimate, when it was felt */
        snprintf(about, sizeof(about), " of about %.*f s", res->compute_seconds < 9.5 ? 1 : 0,
                 res->compute_seconds);
    if (pr.rollout)
        snprintf(note, sizeof(note), " the rollout \u00b7 %.1f s \u00b7 Esc stops ",
                 pr.ms / 1000.0);
    else if (pr.baseline)
        snprintf(note, sizeof(note), " pinning the baseline \u00b7 %.1f s \u00b7 Esc stops ",
                 pr.ms / 1000.0);
    else if (pr.lens)
        snprintf(note, sizeof(note),
                 " the lens: every layer's guesses \u00b7 %.1f s \u00b7 Esc stops ",
                 pr.ms / 1000.0);
    else if (pr.scoring)
        snprintf(note, sizeof(note),
                 " scoring the heads: %ld of %ld \u00b7 %.1f s \u00b7 Esc stops ", pr.heads_done,
                 pr.heads_total, pr.ms / 1000.0);
    else
        snprintf(note, sizeof(note), " computing: %d of %d layers ready \u00b7 %.1f s%s%s%s ",
                 pr.ready, pr.layers, pr.ms / 1000.0, about,
                 res->stoppable ? " \u00b7 Esc stops" : "", cannot);
    int w = text_width(note), x = r.x + r.w - w;
    int used = 0; /* the message's own columns: the note goes after them, or not at all */
    for (int c = r.w - 1; c >= 0; c--) {
        chtype ch = mvinch(y, r.x + c) & A_CHARTEXT;
        if (ch != ' ') {
            used = c + 1;
            break;
        }
    }
    if (x < r.x + used + 1)
        x = r.x + used + 1;
    if (x < r.x + r.w)
        draw_text(y, x, r.x + r.w - x, t->role_attr[ROLE_DIM], note);
}

static void status_draw(struct panel *p, struct frame *f)
{
    const struct app_result *res = app_result(f->app);
    const struct app_view *view = app_view_state(f->app);
    struct status_panel *sp = (struct status_panel *)p;
    struct rect r = p->area;
    const struct theme *t = f->theme;
    int y = r.y;

    move(y, r.x);
    clrtoeol();
    /* The newest thing first: the prompt, then a note about the last action (an export, a
     * refused input), then the standing problem of the edited scene, then config problems. */
    if (prompt_is_open(&sp->prompt)) {
        prompt_draw(&sp->prompt, t, y, f->cols);
    } else if (app_result(f->app)
                   ->nonfinite[0]) { /* every number after it is not one: said first */
        const char *also =
            app_status(f->app)->message[0] ? app_status(f->app)->message : app_doc(f->app)->error;
        char line[2 * DIAG_MSG_MAX + 16];
        snprintf(line, sizeof(line), " \u2717 %s%s%s ", res->nonfinite, also[0] ? " \u00b7 " : "",
                 also);
        message_line(y, r, t->role_attr[ROLE_ERROR], line);
    } else if (app_status(f->app)->message[0]) {
        char line[DIAG_MSG_MAX + 16];
        snprintf(line, sizeof(line), app_status(f->app)->message_is_error ? " \u2717 %s " : " %s",
                 app_status(f->app)->message);
        message_line(y, r,
                     t->role_attr[app_status(f->app)->message_is_error ? ROLE_ERROR : ROLE_LABEL],
                     line);
    } else if (app_doc(f->app)->error[0]) {
        char line[DIAG_MSG_MAX + 16];
        snprintf(line, sizeof(line), " \u2717 %s ", app_doc(f->app)->error);
        int x = r.x + message_line(y, r, t->role_attr[ROLE_ERROR], line);
        /* The reassurance only when there is room: the problem itself comes first. */
        const char *note = " last valid result shown \u00b7 u undoes";
        if (x + text_width(note) <= r.x + r.w)
            draw_text(y, x, r.x + r.w - x, t->role_attr[ROLE_DIM], note);
    } else if (f->config_error[0]) {
        message_line(y, r, t->role_attr[ROLE_ERROR], f->config_error);
    } else if (view->playing) {
        draw_text(y, r.x + 1, r.w - 1, t->role_attr[ROLE_LABEL],
                  "\u25b6 playing through the stages (Space stops)");
    }

    if (!prompt_is_open(&sp->prompt) && app_computing(f->app))
        computing_note(y, r, t, f->app);

    y = r.y + r.h - 1;
    attrset(t->role_attr[ROLE_STATUS]);
    mvhline(y, r.x, ' ', r.w);
    attrset(A_NORMAL);
    int x = r.x + 1, x_end = r.x + r.w;
    if (prompt_is_open(&sp->prompt) && sp->prompt.note[0]) { /* what a paste did */
        draw_text(y, x, x_end - x, t->role_attr[ROLE_STATUS], sp->prompt.note);
        return;
    }
    if (prompt_is_question(sp->prompt.kind)) {
        const struct prompt_answer *a = prompt_answers(sp->prompt.kind);
        for (; a->key; a++) {
            char key[2] = {a->key, '\0'};
            x = hint(y, x, x_end, t, key, a->what);
        }
        hint(y, x, x_end, t, "any other key", a->what);
        return;
    }
    if (prompt_is_open(&sp->prompt)) { /* the line editor's own keys */
        static const char *const editor[][2] = {
            {"Enter", "accept"},    {"Esc", "cancel"},        {"C-a C-e", "start/end"},
            {"C-k", "kill to end"}, {"C-u", "kill to start"}, {"C-w", "kill word"},
        };
        for (size_t i = 0; i < sizeof(editor) / sizeof(editor[0]); i++)
            x = hint(y, x, x_end, t, editor[i][0], editor[i][1]);
        return;
    }
    /* In a lesson: where it is ("3/12"), then its own keys; out of it, the key back in. */
    if (app_lesson(f->app)->lesson) {
        char k[48];
        if (lesson_active(f->app)) {
            char pos[32];
            snprintf(pos, sizeof(pos), "lesson %d/%d", app_lesson(f->app)->step + 1,
                     app_lesson(f->app)->lesson->n_steps);
            x += draw_text(y, x, x_end - x, t->role_attr[ROLE_STATUS_KEY], pos) + 1;
            keys_display(k, sizeof(k), f->keymap, ACTION_LESSON_NEXT);
            x = hint(y, x, x_end, t, k, "next");
            keys_display(k, sizeof(k), f->keymap, ACTION_LESSON_PREV);
            x = hint(y, x, x_end, t, k, "back");
            key_display(k, sizeof(k), f->keymap, ACTION_LESSON);
            x = hint(y, x, x_end, t, k, "explore freely");
        } else {
            key_display(k, sizeof(k), f->keymap, ACTION_LESSON);
            x = hint(y, x, x_end, t, k, "back to the lesson");
        }
    }
    if (view->all_heads) {
        char k[24];
        key_display(k, sizeof(k), f->keymap, ACTION_OPEN);
        if (lesson_active(f->app)) { /* ← and → step through the lesson: the other keys */
            char left[24], right[24], keys[48];
            key_display(left, sizeof(left), f->keymap, ACTION_HEAD_PREV);
            key_display(right, sizeof(right), f->keymap, ACTION_HEAD_NEXT);
            snprintf(keys, sizeof(keys), "%s%s", left, right);
            x = hint(y, x, x_end, t, keys, "head");
        } else if (res->net.layers > 1) { /* the model view: arrows cross heads and layers */
            x = hint(y, x, x_end, t, "\u2190\u2192\u2191\u2193", "pick a head");
        } else { /* one layer's heads: up and down go through the rows */
            x = hint(y, x, x_end, t, "\u2190\u2192", "head");
            x = hint(y, x, x_end, t, "\u2191\u2193", "row");
        }
        x = hint(y, x, x_end, t, k, "open it");
    }
    if (view->lens && !lesson_active(f->app)) { /* the lens: positions down, layers across */
        x = hint(y, x, x_end, t, "\u2191\u2193", "position");
        x = hint(y, x, x_end, t, "\u2190\u2192", "layer");
    }
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        if (hints[i].a == ACTION_PLAY && lesson_active(f->app))
            continue; /* its key steps through the lesson */
        if (hints[i].a == ACTION_PREDICTIONS && !app_has_vocab(f->app))
            continue;
        char keys[48], k1[24], k2[24];
        key_display(k1, sizeof(k1), f->keymap, hints[i].a);
        if (hints[i].b != ACTION_NONE) {
            key_display(k2, sizeof(k2), f->keymap, hints[i].b);
            snprintf(keys, sizeof(keys), "%s%s", k1, k2);
        } else {
            snprintf(keys, sizeof(keys), "%s", k1);
        }
        x = hint(y, x, x_end, t, keys, hints[i].label);
    }
}

void status_panel_init(struct status_panel *sp)
{
    memset(sp, 0, sizeof(*sp));
    sp->base.name = "status";
    sp->base.follows_cursor = true; /* the cursor's cell is on the status line */
    sp->base.draw = status_draw;
}
