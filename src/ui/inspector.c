/* inspector panel: draws inspect_explain's text for the selected cell, wrapped to its width. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <string.h>

#include "explore/inspect.h"
#include "ui/inspector.h"

static void inspector_draw(struct panel *p, struct frame *f)
{
    struct rect r = p->area;
    draw_clear(r, A_NORMAL);
    /* A rule on the left separates it from the map in the side-by-side layout. */
    int x0 = r.x + 2, w = r.w - 3, y = r.y;
    for (int i = 0; r.x > 0 && i < r.h; i++)
        draw_text(r.y + i, r.x, 1, f->theme->role_attr[ROLE_DIM], "\u2502");
    draw_text(y++, x0, w, f->theme->role_attr[ROLE_LABEL], "inspector");
    char text[4096];
    inspect_explain(text, sizeof(text), f->app);
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && y < r.y + r.h;
         line = strtok_r(NULL, "\n", &save)) {
        /* Wrap long lines at word boundaries, continuing indented. */
        const char *s = line;
        bool first = true;
        while (*s && y < r.y + r.h) {
            int indent = first ? 0 : 4, room = w - indent;
            size_t cut = 0, last_space = 0, n = 0;
            int used = 0;
            while (s[n]) {
                size_t len = 1;
                while ((s[n + len] & 0xC0) == 0x80)
                    len++;
                char one[8] = {0};
                memcpy(one, s + n, len < 7 ? len : 7);
                used += text_width(one);
                if (used > room)
                    break;
                n += len;
                if (s[n - 1] == ' ')
                    last_space = n;
            }
            cut = !s[n] || last_space == 0 ? n : last_space;
            if (cut == 0)
                break;
            char chunk[512];
            size_t c = cut < sizeof(chunk) - 1 ? cut : sizeof(chunk) - 1;
            memcpy(chunk, s, c);
            chunk[c] = '\0';
            draw_text(y++, x0 + indent, room, f->theme->role_attr[ROLE_HELP], chunk);
            s += cut;
            first = false;
        }
    }
}

void inspector_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "inspector";
    p->slot = SLOT_SIDE; /* the inspector, unless another view asks for the place */
    p->follows_cursor = true;
    p->draw = inspector_draw;
}
