/* help panel: the `?` overlay listing every action and its keys, generated from ACTIONS and
 * the live keymap, so it always tells the truth about the bindings in use. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/help.h"

/* Builds the overlay's lines: "\agroup" headings, "keys\thelp" rows, plain text rows. */
/* Appends text as plain rows of at most width columns, broken at blanks; rows after the first
 * are indented. Returns the new row count. */
static int wrap(char lines[][256], int n, int max, const char *text, int width)
{
    char rest[512];
    snprintf(rest, sizeof(rest), "%s", text);
    const char *p = rest;
    bool first = true;
    while (*p && n < max) {
        int room = width - (first ? 0 : 4);
        size_t cut = strlen(p);
        char probe[512];
        snprintf(probe, sizeof(probe), "%s", p);
        while (text_width(probe) > room) { /* back off to the last blank that fits */
            char *blank = strrchr(probe, ' ');
            if (!blank || blank == probe)
                break;
            *blank = '\0';
        }
        cut = strlen(probe);
        snprintf(lines[n++], 256, "%s%.*s", first ? "" : "    ", (int)cut, p);
        p += cut;
        while (*p == ' ')
            p++;
        first = false;
    }
    return n;
}

static int build(struct frame *f, char lines[][256], int max, int width)
{
    static const char *const groups[] = {"move", "view", "edit", "file", "lesson", "other"};
    int n = 0;
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        if (n < max)
            snprintf(lines[n++], 256, "\a%s", groups[g]);
        for (int a = 0; a < ACTION_COUNT && n < max; a++)
            if (strcmp(action_table[a].group, groups[g]) == 0)
                snprintf(lines[n++], 256, "%s\t%s",
                         f->keymap->keys[a][0] ? f->keymap->keys[a] : "(unbound)",
                         action_table[a].help);
    }
    static const char *const extra[][2] = {
        {"\amouse", NULL},
        {"click", "Select a cell, a stage or a head"},
        {"wheel", "Scroll"},
        {"\aline editor", NULL},
        {"Enter Esc", "Accept / cancel"},
        {"C-a C-e", "Start / end of the line (Home, End)"},
        {"C-k C-u C-w", "Kill to the end / to the start / a word"},
    };
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]) && n < max; i++)
        snprintf(lines[n++], 256, extra[i][1] ? "%s\t%s" : "%s", extra[i][0],
                 extra[i][1] ? extra[i][1] : "");
    if ((f->config_problems->n > 0 || f->config_problems->lost) && n < max)
        snprintf(lines[n++], 256, "\aconfiguration problems (the defaults are in use)");
    if (f->config_problems->lost && n < max)
        snprintf(lines[n++], 256, "out of memory: %d problems could not be listed",
                 f->config_problems->lost);
    for (int i = 0; i < f->config_problems->n && n < max; i++) {
        const struct diag *d = &f->config_problems->items[i];
        char text[400];
        snprintf(text, sizeof(text), "%.150s:%d:%d: %.200s", d->file, d->line, d->col, d->msg);
        n = wrap(lines, n, max, text, width);
    }
    return n;
}

static void draw_line(const struct theme *t, int y, int x, int w, const char *line)
{
    if (line[0] == '\a') {
        draw_text(y, x, w, t->role_attr[ROLE_LABEL], line + 1);
        return;
    }
    const char *tab = strchr(line, '\t');
    if (!tab) {
        draw_text(y, x + 2, w - 2, t->role_attr[ROLE_HELP], line);
        return;
    }
    char keys[64];
    snprintf(keys, sizeof(keys), "%.*s", (int)(tab - line), line);
    draw_text(y, x + 2, 16, t->role_attr[ROLE_HELP_KEY], keys);
    draw_text(y, x + 19, w - 19, t->role_attr[ROLE_HELP], tab + 1);
}

static void help_draw(struct panel *p, struct frame *f)
{
    struct help_panel *hp = (struct help_panel *)p;
    struct rect r = p->area;
    const struct theme *t = f->theme;
    char lines[96][256];
    /* Plain rows are drawn 2 columns in, within a column at most 80 wide. */
    int n = build(f, lines, 96, (r.w < 80 ? r.w : 80) - 4);
    int body = r.h - 2;
    /* Two columns when one would scroll and the screen is wide enough for both. */
    int columns = n > body && r.w >= 150 ? 2 : 1;
    int col_w = columns == 2 ? (r.w - 4) / 2 : (r.w < 80 ? r.w : 80);
    int x0 = r.x + (r.w - col_w * columns) / 2;
    int per_col = columns == 2 ? (n + 1) / 2 : n;
    int shown = body * columns;
    if (hp->scroll > n - shown)
        hp->scroll = n - shown > 0 ? n - shown : 0;
    draw_clear(r, t->role_attr[ROLE_HELP]);
    draw_text(r.y, x0 + 2, r.w - 4, t->role_attr[ROLE_LABEL] | A_BOLD,
              "attnscope keys \u2014 rebind them in keys.yaml (see the README)");
    for (int c = 0; c < columns; c++)
        for (int i = 0; i < body; i++) {
            int k = columns == 2 ? c * per_col + i : hp->scroll + i;
            if (k >= n || (columns == 2 && i >= per_col))
                break;
            draw_line(t, r.y + 1 + i, x0 + c * col_w, col_w - 1, lines[k]);
        }
    char foot[96];
    if (n > shown)
        snprintf(foot, sizeof(foot),
                 "\u2191\u2193 scroll (%d\u2013%d of %d) \u00b7 any other key closes",
                 hp->scroll + 1, hp->scroll + body < n ? hp->scroll + body : n, n);
    else
        snprintf(foot, sizeof(foot), "any key closes");
    draw_text(r.y + r.h - 1, x0 + 2, r.w - 4, t->role_attr[ROLE_DIM], foot);
}

static int help_handle_key(struct panel *p, struct frame *f, enum action a)
{
    struct help_panel *hp = (struct help_panel *)p;
    if (a == ACTION_DOWN || a == ACTION_PAGE_DOWN) {
        hp->scroll += a == ACTION_DOWN ? 1 : 10;
        return OUTCOME_VIEW_CHANGED;
    }
    if (a == ACTION_UP || a == ACTION_PAGE_UP) {
        hp->scroll -= a == ACTION_UP ? 1 : 10;
        if (hp->scroll < 0)
            hp->scroll = 0;
        return OUTCOME_VIEW_CHANGED;
    }
    hp->open = false;
    hp->scroll = 0;
    return OUTCOME_VIEW_CHANGED; /* everything under the overlay comes back */
}

void help_panel_init(struct help_panel *hp)
{
    memset(hp, 0, sizeof(*hp));
    hp->base.name = "help";
    hp->base.draw = help_draw;
    hp->base.handle_key = help_handle_key;
}
