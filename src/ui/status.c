/* status panel: the message line (errors, notes, the prompt) and the line of the most useful
 * keys. The keys shown are read from the keymap, so a user's rebinding shows up here too. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"

/* First bound key of an action, in display form (arrows as glyphs). */
void key_display(char *out, size_t size, const struct keymap *km, enum action a);
void key_display(char *out, size_t size, const struct keymap *km, enum action a)
{
    static const struct {
        const char *name, *glyph;
    } glyphs[] = {{"Left", "\u2190"}, {"Right", "\u2192"}, {"Up", "\u2191"}, {"Down", "\u2193"}};
    char first[32];
    sscanf(km->keys[a], "%31s", first);
    if (!km->keys[a][0])
        snprintf(first, sizeof(first), "(unbound)");
    for (size_t i = 0; i < sizeof(glyphs) / sizeof(glyphs[0]); i++)
        if (strcmp(first, glyphs[i].name) == 0) {
            snprintf(out, size, "%s", glyphs[i].glyph);
            return;
        }
    snprintf(out, size, "%s", first);
}

/* The status line: pairs of (keys, what they do), most useful first. */
static const struct {
    enum action a, b; /* b: the paired action (prev/next), or ACTION_NONE */
    const char *label;
} hints[] = {
    {ACTION_HELP, ACTION_NONE, "help"},           {ACTION_STAGE_PREV, ACTION_STAGE_NEXT, "stage"},
    {ACTION_HEAD_PREV, ACTION_HEAD_NEXT, "head"}, {ACTION_ALL_HEADS, ACTION_NONE, "all heads"},
    {ACTION_EDIT_TEXT, ACTION_NONE, "text"},      {ACTION_KNOB_NEXT, ACTION_NONE, "knob"},
    {ACTION_KNOB_DOWN, ACTION_KNOB_UP, "change"}, {ACTION_CAUSAL, ACTION_NONE, "causal"},
    {ACTION_PLAY, ACTION_NONE, "play"},           {ACTION_UNDO, ACTION_NONE, "undo"},
    {ACTION_EXPORT, ACTION_NONE, "export"},       {ACTION_SAVE, ACTION_NONE, "save"},
    {ACTION_QUIT, ACTION_NONE, "quit"},
};

static void draw(struct panel *p, struct ui *ui)
{
    struct rect r = p->area;
    const struct theme *t = &ui->theme;
    int y = r.y;

    move(y, r.x);
    clrtoeol();
    if (ui->prompt != PROMPT_NONE) {
        prompt_draw(ui, y);
    } else if (ui->app.error[0]) {
        char line[DIAG_MSG_MAX + 16];
        snprintf(line, sizeof(line), " \u2717 %s ", ui->app.error);
        int x = r.x + draw_text(y, r.x, r.w, t->role_attr[ROLE_ERROR], line);
        /* The reassurance only when there is room: the problem itself comes first. */
        const char *note = " last valid result shown \u00b7 u undoes";
        if (x + text_width(note) <= r.x + r.w)
            draw_text(y, x, r.x + r.w - x, t->role_attr[ROLE_DIM], note);
    } else if (ui->config_error[0]) {
        draw_text(y, r.x, r.w, t->role_attr[ROLE_ERROR], ui->config_error);
    } else if (ui->app.message[0]) {
        draw_text(y, r.x + 1, r.w - 1, t->role_attr[ROLE_LABEL], ui->app.message);
    } else if (ui->app.playing) {
        draw_text(y, r.x + 1, r.w - 1, t->role_attr[ROLE_LABEL],
                  "\u25b6 playing through the stages (Space stops)");
    }

    y = r.y + r.h - 1;
    attrset(t->role_attr[ROLE_STATUS]);
    mvhline(y, r.x, ' ', r.w);
    attrset(A_NORMAL);
    int x = r.x + 1;
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]) && x < r.x + r.w; i++) {
        char keys[48], k1[24], k2[24], label[48];
        key_display(k1, sizeof(k1), &ui->keymap, hints[i].a);
        if (hints[i].b != ACTION_NONE) {
            key_display(k2, sizeof(k2), &ui->keymap, hints[i].b);
            snprintf(keys, sizeof(keys), "%s%s", k1, k2);
        } else {
            snprintf(keys, sizeof(keys), "%s", k1);
        }
        snprintf(label, sizeof(label), ":%s ", hints[i].label);
        if (x + text_width(keys) + text_width(label) > r.x + r.w)
            break;
        x += draw_text(y, x, r.x + r.w - x, t->role_attr[ROLE_STATUS_KEY], keys);
        x += draw_text(y, x, r.x + r.w - x, t->role_attr[ROLE_STATUS], label);
    }
}

void status_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "status";
    p->draw = draw;
}
