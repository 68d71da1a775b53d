/* help panel: the `?` overlay listing every action and its keys, generated from ACTIONS and
 * the live keymap, so it always tells the truth about the bindings in use. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"

static int help_top; /* first line shown, when the list is taller than the screen */

/* Builds the overlay's lines; key column and help column split by a tab. */
static int build(struct ui *ui, char lines[][160], int max)
{
    static const char *const groups[] = {"move", "view", "edit", "file", "other"};
    int n = 0;
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        if (n < max)
            snprintf(lines[n++], 160, "\a%s", groups[g]);
        for (int a = 0; a < ACTION_COUNT && n < max; a++)
            if (strcmp(action_table[a].group, groups[g]) == 0)
                snprintf(lines[n++], 160, "%s\t%s",
                         ui->keymap.keys[a][0] ? ui->keymap.keys[a] : "(unbound)",
                         action_table[a].help);
    }
    if (n < max)
        snprintf(lines[n++], 160, "\amouse");
    if (n < max)
        snprintf(lines[n++], 160, "click\tSelect a cell, a stage or a head");
    if (n < max)
        snprintf(lines[n++], 160, "wheel\tScroll");
    return n;
}

static void draw(struct panel *p, struct ui *ui)
{
    struct rect r = p->area;
    const struct theme *t = &ui->theme;
    char lines[64][160];
    int n = build(ui, lines, 64);
    int w = r.w < 76 ? r.w : 76, h = r.h;
    int x0 = r.x + (r.w - w) / 2, y0 = r.y;
    int body = h - 3;
    if (help_top > n - body)
        help_top = n - body > 0 ? n - body : 0;
    for (int y = y0; y < y0 + h; y++) {
        move(y, x0);
        attrset(t->role_attr[ROLE_HELP]);
        for (int x = 0; x < w; x++)
            addch(' ');
    }
    attrset(A_NORMAL);
    draw_text(y0, x0 + 2, w - 4, t->role_attr[ROLE_LABEL] | A_BOLD,
              "attnscope keys \u2014 rebind them in keys.yaml");
    for (int i = 0; i < body && help_top + i < n; i++) {
        const char *line = lines[help_top + i];
        int y = y0 + 1 + i;
        if (line[0] == '\a') {
            draw_text(y, x0 + 2, w - 4, t->role_attr[ROLE_LABEL], line + 1);
            continue;
        }
        const char *tab = strchr(line, '\t');
        char keys[64];
        snprintf(keys, sizeof(keys), "%.*s", (int)(tab - line), line);
        draw_text(y, x0 + 4, 18, t->role_attr[ROLE_HELP_KEY], keys);
        draw_text(y, x0 + 23, w - 25, t->role_attr[ROLE_HELP], tab + 1);
    }
    char foot[96];
    if (n > body)
        snprintf(foot, sizeof(foot), "\u2191\u2193 scroll \u00b7 any other key closes (%d/%d)",
                 help_top + body < n ? help_top + body : n, n);
    else
        snprintf(foot, sizeof(foot), "any key closes");
    draw_text(y0 + h - 1, x0 + 2, w - 4, t->role_attr[ROLE_DIM], foot);
}

static int handle_key(struct panel *p, struct ui *ui, enum action a)
{
    (void)p;
    if (a == ACTION_DOWN || a == ACTION_PAGE_DOWN) {
        help_top += a == ACTION_DOWN ? 1 : 10;
        return HANDLED_CURSOR;
    }
    if (a == ACTION_UP || a == ACTION_PAGE_UP) {
        help_top -= a == ACTION_UP ? 1 : 10;
        if (help_top < 0)
            help_top = 0;
        return HANDLED_CURSOR;
    }
    ui->help_open = false;
    help_top = 0;
    return HANDLED_CURSOR;
}

void help_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "help";
    p->draw = draw;
    p->handle_key = handle_key;
}
