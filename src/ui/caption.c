/* caption panel: a lesson step's caption (see caption.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"
#include "explore/lessonmode.h"
#include "ui/caption.h"
#include "ui/status.h" /* key_display */

#define CAPTION_BYTES (8 * LESSON_CAPTION_MAX_CHARS + 64)

/* The caption as shown, with a flag on every byte of a quoted number. */
struct styled {
    char text[CAPTION_BYTES];
    unsigned char quoted[CAPTION_BYTES];
    size_t len;
};

static void append(struct styled *o, const char *s, size_t n, bool quoted)
{
    if (o->len + n >= sizeof(o->text))
        n = sizeof(o->text) - 1 - o->len;
    memcpy(o->text + o->len, s, n);
    memset(o->quoted + o->len, quoted, n);
    o->len += n;
    o->text[o->len] = '\0';
}

static void style(struct styled *o, const char *caption)
{
    struct attn_caption_mark marks[LESSON_MAX_MARKS];
    struct diag err;
    int n = attn_caption_marks(caption, marks, LESSON_MAX_MARKS, &err);
    o->len = 0;
    o->text[0] = '\0';
    size_t at = 0;
    for (int k = 0; k < n && k < LESSON_MAX_MARKS; k++) {
        append(o, caption + at, marks[k].start - at, false);
        char mark[128], one[64];
        snprintf(mark, sizeof(mark), "%.*s", (int)(marks[k].end - marks[k].start),
                 caption + marks[k].start);
        attn_caption_plain(one, sizeof(one), mark);
        append(o, one, strlen(one), true);
        at = marks[k].end;
    }
    append(o, caption + at, strlen(caption + at), false);
    while (o->len > 0 && (o->text[o->len - 1] == '\n' || o->text[o->len - 1] == ' '))
        o->text[--o->len] = '\0';
}

/* Columns of bytes [from, to) of s. */
static int span_width(const char *s, size_t from, size_t to)
{
    char buf[CAPTION_BYTES];
    snprintf(buf, sizeof(buf), "%.*s", (int)(to - from), s + from);
    return text_width(buf);
}

struct line {
    size_t start, end; /* bytes of the styled text */
};

/* Breaks the text into lines of at most width columns: at its own line breaks, else at the
 * last blank that fits (a word longer than the line is cut). Returns how many (up to max). */
static int wrap(const struct styled *o, int width, struct line *lines, int max)
{
    int n = 0;
    size_t p = 0;
    while (p <= o->len && n < max) {
        size_t eol = p;
        while (eol < o->len && o->text[eol] != '\n')
            eol++;
        size_t start = p;
        do {
            size_t end = start, fit = start;
            while (end < eol) {
                size_t next = end + 1;
                while (next < eol && (o->text[next] & 0xC0) == 0x80)
                    next++;
                if (span_width(o->text, start, next) > width)
                    break;
                end = next;
                if (end == eol || o->text[end] == ' ')
                    fit = end;
            }
            if (end < eol && fit == start)
                fit = end > start ? end : eol; /* one word wider than the line */
            if (end == eol)
                fit = eol;
            lines[n++] = (struct line){start, fit};
            start = fit;
            while (start < eol && o->text[start] == ' ')
                start++;
        } while (start < eol && n < max);
        if (eol >= o->len)
            break;
        p = eol + 1;
    }
    return n;
}

#define MAX_LINES 64

int caption_rows(const struct app *a, int width, int max_rows)
{
    const struct attn_lesson_step *st = lesson_current(a);
    if (!st || !app_lesson(a)->on)
        return 0;
    static struct styled o;
    struct line lines[MAX_LINES];
    int n = 1;
    if (st->caption) {
        style(&o, st->caption);
        n = wrap(&o, width - 2, lines, MAX_LINES);
    }
    int rows = 1 + (n > 1 ? n : 1);
    return rows < max_rows ? rows : max_rows;
}

static void caption_draw(struct panel *p, struct frame *f)
{
    struct rect r = p->area;
    const struct theme *t = f->theme;
    const struct app *a = f->app;
    draw_clear(r, A_NORMAL);
    const struct attn_lesson_step *st = lesson_current(a);
    if (!st || r.h < 1)
        return;
    /* The title row: where the lesson is, as a rule across the panel. When the learner changed
       the step (its scene or its view), the caption's numbers need not be on screen: it is
       dimmed, its numbers no longer picked out, and the rule says how to get the step back. */
    bool stale = lesson_step_changed(a);
    char title[96];
    snprintf(title, sizeof(title), " %sstep %d of %d ", stale ? "" : "lesson \u00b7 ",
             app_lesson(a)->step + 1, app_lesson(a)->lesson->n_steps);
    char rule[4 * 512 + 1] = "";
    for (int i = 0; i < r.w && i < 512; i++)
        strcat(rule, "\u2500");
    draw_text(r.y, r.x, r.w, t->role_attr[ROLE_DIM], rule);
    int tx = r.x + 2 + draw_text(r.y, r.x + 2, r.w - 2, t->role_attr[ROLE_STAGE_CURRENT], title);
    if (stale) {
        char key[32], note[96];
        key_display(key, sizeof(key), f->keymap, ACTION_LESSON_NEXT);
        /* what the key does (explore/lessonmode.h): the step's own scene first, then the next */
        snprintf(note, sizeof(note), " you changed this step: %s goes on from it as written ", key);
        draw_text(r.y, tx + 1, r.x + r.w - tx - 1, t->role_attr[ROLE_LABEL], note);
    }

    static struct styled o;
    style(&o, st->caption ? st->caption : "");
    struct line lines[MAX_LINES];
    int n = wrap(&o, r.w - 2, lines, MAX_LINES);
    for (int i = 0; i < n && i < r.h - 1; i++) {
        int y = r.y + 1 + i, x = r.x + 1;
        bool last_row = i == r.h - 2 && i < n - 1; /* more than fits: say so */
        size_t b = lines[i].start;
        while (b < lines[i].end) {
            size_t e = b;
            while (e < lines[i].end && o.quoted[e] == o.quoted[b])
                e++;
            char run[CAPTION_BYTES];
            snprintf(run, sizeof(run), "%.*s", (int)(e - b), o.text + b);
            int attr = stale         ? t->role_attr[ROLE_DIM]
                       : o.quoted[b] ? t->role_attr[ROLE_SELECTION] | (int)A_BOLD
                                     : t->role_attr[ROLE_HELP];
            x += draw_text(y, x, r.x + r.w - 1 - x, attr, run);
            b = e;
        }
        if (last_row)
            draw_text(y, r.x + r.w - 2, 1, t->role_attr[ROLE_DIM], "\u2026");
    }
}

void caption_panel_init(struct panel *p)
{
    memset(p, 0, sizeof(*p));
    p->name = "caption";
    p->draw = caption_draw;
}
