/* prompt: the one-line editor at the bottom (sentence, typed knob values, file names, y/n).
 *
 * Wide characters throughout, so "café" or "日本" edit as single characters. Keys follow
 * readline: C-a/C-e start/end, C-b/C-f, C-d delete, C-k/C-u kill, C-w word, Esc/C-g cancel.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "common/utf8.h"
#include "ui/ui.h"

/* UTF-8 -> code points, whatever the locale; an invalid byte becomes '?'. Returns the count. */
static int to_wide(wchar_t *out, int max, const char *s)
{
    int n = 0;
    while (*s && n < max) {
        uint32_t cp;
        int len = utf8_decode(s, &cp);
        out[n++] = len ? (wchar_t)cp : L'?';
        s += len ? len : 1;
    }
    return n;
}

/* Code points -> UTF-8 (always terminated; stops before overflowing). */
static void to_utf8(char *out, size_t size, const wchar_t *w, int n)
{
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        char buf[4];
        int len = utf8_encode((uint32_t)w[i], buf);
        if (o + (size_t)len + 1 > size)
            break;
        memcpy(out + o, buf, (size_t)len);
        o += (size_t)len;
    }
    out[o] = '\0';
}

void prompt_open(struct ui *ui, enum prompt_kind kind, const char *label, const char *initial)
{
    ui->prompt = kind;
    snprintf(ui->prompt_label, sizeof(ui->prompt_label), "%s", label);
    int n = to_wide(ui->prompt_buf, PROMPT_MAX - 1, initial ? initial : "");
    ui->prompt_buf[n] = L'\0';
    ui->prompt_len = ui->prompt_cur = n;
    /* What the buffer really holds, so "unchanged" compares like with like. */
    to_utf8(ui->prompt_initial, sizeof(ui->prompt_initial), ui->prompt_buf, n);
}

static void close_prompt(struct ui *ui)
{
    ui->prompt = PROMPT_NONE;
}

static void delete_range(struct ui *ui, int from, int to)
{
    if (from >= to)
        return;
    memmove(ui->prompt_buf + from, ui->prompt_buf + to,
            (size_t)(ui->prompt_len - to + 1) * sizeof(wchar_t));
    ui->prompt_len -= to - from;
    ui->prompt_cur = from;
}

static int accept(struct ui *ui)
{
    static char text[PROMPT_MAX * 4 + 1];
    to_utf8(text, sizeof(text), ui->prompt_buf, ui->prompt_len);
    enum prompt_kind kind = ui->prompt;
    close_prompt(ui);
    prompt_accept(ui, kind, text);
    return HANDLED_SCENE;
}

int prompt_key(struct ui *ui, wint_t key, bool is_code)
{
    if (ui->prompt == PROMPT_CONFIRM_SAVE || ui->prompt == PROMPT_CONFIRM_EXPORT ||
        ui->prompt == PROMPT_CONFIRM_QUIT) {
        if (!is_code && (key == L'y' || key == L'Y')) {
            ui->prompt_buf[0] = L'y';
            ui->prompt_buf[1] = L'\0';
            return accept(ui);
        }
        enum prompt_kind kind = ui->prompt;
        close_prompt(ui);
        if (kind != PROMPT_CONFIRM_QUIT)
            snprintf(ui->app.message, sizeof(ui->app.message), "nothing written");
        return HANDLED_CURSOR;
    }
    int cur = ui->prompt_cur, len = ui->prompt_len;
    if (is_code) {
        switch (key) {
        case KEY_LEFT:
            key = 2;
            break;
        case KEY_RIGHT:
            key = 6;
            break;
        case KEY_HOME:
            key = 1;
            break;
        case KEY_END:
            key = 5;
            break;
        case KEY_BACKSPACE:
            key = 127;
            break;
        case KEY_DC:
            key = 4;
            break;
        case KEY_ENTER:
            key = L'\n';
            break;
        default:
            return HANDLED_YES;
        }
    }
    switch (key) {
    case L'\n':
    case L'\r':
        return accept(ui);
    case 27: /* Esc */
    case 7:  /* C-g */
        close_prompt(ui);
        return HANDLED_CURSOR;
    case 1:
        ui->prompt_cur = 0;
        break;
    case 5:
        ui->prompt_cur = len;
        break;
    case 2:
        ui->prompt_cur = cur > 0 ? cur - 1 : 0;
        break;
    case 6:
        ui->prompt_cur = cur < len ? cur + 1 : len;
        break;
    case 127:
    case 8:
        delete_range(ui, cur > 0 ? cur - 1 : 0, cur);
        break;
    case 4:
        delete_range(ui, cur, cur < len ? cur + 1 : len);
        break;
    case 11:
        delete_range(ui, cur, len);
        break;
    case 21:
        delete_range(ui, 0, cur);
        break;
    case 23: { /* C-w: the word before the cursor, and the blanks before it */
        int from = cur;
        while (from > 0 && iswspace((wint_t)ui->prompt_buf[from - 1]))
            from--;
        while (from > 0 && !iswspace((wint_t)ui->prompt_buf[from - 1]))
            from--;
        delete_range(ui, from, cur);
        break;
    }
    default:
        if (key < 32 || len >= PROMPT_MAX - 1)
            return HANDLED_YES;
        memmove(ui->prompt_buf + cur + 1, ui->prompt_buf + cur,
                (size_t)(len - cur + 1) * sizeof(wchar_t));
        ui->prompt_buf[cur] = (wchar_t)key;
        ui->prompt_len++;
        ui->prompt_cur++;
    }
    return HANDLED_CURSOR;
}

/* One character of the buffer as UTF-8, and its width on screen (ASCII stand-ins included). */
static int char_at(const struct ui *ui, int i, char *utf8)
{
    int len = utf8_encode((uint32_t)ui->prompt_buf[i], utf8);
    utf8[len] = '\0';
    return text_width(utf8);
}

void prompt_draw(struct ui *ui, int y)
{
    const struct theme *t = &ui->theme;
    /* A long label (a path) keeps its end, where the file name is. */
    char label[sizeof(ui->prompt_label) + 8];
    bool confirm = ui->prompt == PROMPT_CONFIRM_SAVE || ui->prompt == PROMPT_CONFIRM_EXPORT ||
                   ui->prompt == PROMPT_CONFIRM_QUIT;
    /* A question takes the whole line; an editor leaves room for the text typed. */
    int room = confirm ? ui->cols - 3 : (ui->cols / 2 > 20 ? ui->cols / 2 : 20);
    abbreviate_start(label, sizeof(label), ui->prompt_label, room);
    int x = draw_text(y, 0, ui->cols, t->role_attr[ROLE_LABEL], label);
    x += draw_text(y, x, 2, A_NORMAL, ": ");
    int avail = ui->cols - x - 1;
    if (avail < 4)
        return;
    /* Scroll horizontally so the cursor stays visible. */
    char ch[8];
    int start = 0, width = 0;
    for (int i = ui->prompt_cur - 1; i >= 0; i--) {
        int w = char_at(ui, i, ch);
        if (width + w >= avail)
            break;
        width += w;
        start = i;
    }
    if (ui->prompt_cur == 0)
        start = 0;
    int used = 0, cursor_x = x;
    for (int i = start; i < ui->prompt_len; i++) {
        int w = char_at(ui, i, ch);
        if (used + w > avail)
            break;
        if (i == ui->prompt_cur)
            cursor_x = x + used;
        used += draw_text(y, x + used, w, A_NORMAL, ch);
    }
    if (ui->prompt_cur >= ui->prompt_len)
        cursor_x = x + used;
    ui->prompt_y = y;
    ui->prompt_x = cursor_x;
}
