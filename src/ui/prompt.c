/* prompt: the one-line editor (see prompt.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui/prompt.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <wctype.h>

#include "common/utf8.h"
#include "ui/draw.h"

/* UTF-8 -> code points, whatever the locale; an invalid byte becomes '?'. Returns the count. */
static int to_wide(wchar_t *out, int max, const char *s)
{
    int n = 0;
    while (*s && n < max) {
        uint32_t cp;
        int len = attn_utf8_decode(s, &cp);
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
        int len = attn_utf8_encode((uint32_t)w[i], buf);
        if (o + (size_t)len + 1 > size)
            break;
        memcpy(out + o, buf, (size_t)len);
        o += (size_t)len;
    }
    out[o] = '\0';
}

void prompt_open(struct prompt *p, enum prompt_kind kind, const char *label, const char *initial)
{
    p->kind = kind;
    p->note[0] = '\0';
    snprintf(p->label, sizeof(p->label), "%s", label);
    int n = to_wide(p->buf, PROMPT_MAX - 1, initial ? initial : "");
    p->buf[n] = L'\0';
    p->len = p->cur = n;
    p->fresh = kind == PROMPT_KNOB && n > 0;
}

void prompt_close(struct prompt *p)
{
    p->kind = PROMPT_NONE;
    p->note[0] = '\0';
}

void prompt_text(const struct prompt *p, char *out, size_t size)
{
    to_utf8(out, size, p->buf, p->len);
}

/* text made fit for the one line, in place (prompt_paste); returns its new length. */
static int paste_clean(wchar_t *text, int n)
{
    int out = 0, kept = 0; /* kept: the length without the line ends that end it */
    for (int i = 0; i < n; i++) {
        wchar_t c = text[i];
        bool line_end = c == L'\n' || c == L'\r';
        if (c == L'\r' && i + 1 < n && text[i + 1] == L'\n')
            i++; /* CRLF: one line end */
        if (line_end || c == L'\t')
            c = L' ';
        else if (c < 32 || c == 127 || (c >= 0x80 && c < 0xa0))
            continue;
        text[out++] = c;
        if (!line_end)
            kept = out;
    }
    return kept;
}

int prompt_paste(struct prompt *p, wchar_t *text, int n, long more, bool as_sentence)
{
    if (!prompt_is_open(p))
        return 0;
    if (prompt_is_question(p->kind)) {
        const struct prompt_answer *a = prompt_answers(p->kind);
        int keys = 0, o = snprintf(p->note, sizeof(p->note), "a paste answers no question: press ");
        while (a[keys].key)
            keys++;
        for (int i = 0; i < keys; i++)
            o += snprintf(p->note + o, sizeof(p->note) - (size_t)o, "%s%c",
                          i == 0          ? ""
                          : i + 1 == keys ? " or "
                                          : ", ",
                          a[i].key);
        if (keys == 1) /* y/n */
            snprintf(p->note + o, sizeof(p->note) - (size_t)o, " or n");
        return 0;
    }
    int clean = paste_clean(text, n), k = clean;
    long total = clean + more;
    int room = PROMPT_MAX - 1 - p->len;
    if (k > room)
        k = room;
    if (k > 0) {
        memmove(p->buf + p->cur + k, p->buf + p->cur,
                (size_t)(p->len - p->cur + 1) * sizeof(wchar_t));
        memcpy(p->buf + p->cur, text, (size_t)k * sizeof(wchar_t));
        p->len += k;
        p->cur += k;
    }
    const char *then = as_sentence ? ": Enter applies it, Esc drops it" : "";
    if (k < total)
        snprintf(p->note, sizeof(p->note), "pasted %d of %ld characters, all the line holds%s", k,
                 total, then);
    else
        snprintf(p->note, sizeof(p->note), "pasted %d characters%s%s", k,
                 as_sentence ? " as the sentence" : "", then);
    return k;
}

static void delete_range(struct prompt *p, int from, int to)
{
    if (from >= to)
        return;
    memmove(p->buf + from, p->buf + to, (size_t)(p->len - to + 1) * sizeof(wchar_t));
    p->len -= to - from;
    p->cur = from;
}

/* Named keys as the control characters readline gives the same meaning. */
static uint32_t as_control(struct key k)
{
    if (!k.is_code)
        return k.value;
    switch ((enum keycode)k.value) {
    case KEYCODE_LEFT:
        return 2; /* C-b */
    case KEYCODE_RIGHT:
        return 6; /* C-f */
    case KEYCODE_HOME:
        return 1; /* C-a */
    case KEYCODE_END:
        return 5; /* C-e */
    case KEYCODE_BACKSPACE:
        return 127;
    case KEYCODE_DELETE:
        return 4; /* C-d */
    case KEYCODE_ENTER:
        return '\n';
    default:
        return 0;
    }
}

enum prompt_result prompt_key(struct prompt *p, struct key k)
{
    if (prompt_is_question(p->kind)) {
        for (const struct prompt_answer *a = prompt_answers(p->kind); a->key; a++)
            if (!k.is_code &&
                (k.value == (uint32_t)a->key || k.value == (uint32_t)towupper(a->key))) {
                p->buf[0] = (wchar_t)a->key;
                p->len = p->cur = 1;
                return PROMPT_ACCEPTED;
            }
        return PROMPT_CANCELLED;
    }
    uint32_t c = as_control(k);
    if (p->fresh && c >= 32 && c != 127) { /* typed over the value it opened with */
        p->len = p->cur = 0;
        p->buf[0] = L'\0';
    }
    if (c != 0)
        p->fresh = false;
    int cur = p->cur, len = p->len;
    switch (c) {
    case 0: /* a named key with no meaning here */
        return PROMPT_EDITING;
    case '\n':
    case '\r':
        return PROMPT_ACCEPTED;
    case 27: /* Esc */
    case 7:  /* C-g */
        return PROMPT_CANCELLED;
    case 1:
        p->cur = 0;
        break;
    case 5:
        p->cur = len;
        break;
    case 2:
        p->cur = cur > 0 ? cur - 1 : 0;
        break;
    case 6:
        p->cur = cur < len ? cur + 1 : len;
        break;
    case 127:
    case 8:
        delete_range(p, cur > 0 ? cur - 1 : 0, cur);
        break;
    case 4:
        delete_range(p, cur, cur < len ? cur + 1 : len);
        break;
    case 11:
        delete_range(p, cur, len);
        break;
    case 21:
        delete_range(p, 0, cur);
        break;
    case 23: { /* C-w: the word before the cursor, and the blanks before it */
        int from = cur;
        while (from > 0 && iswspace((wint_t)p->buf[from - 1]))
            from--;
        while (from > 0 && !iswspace((wint_t)p->buf[from - 1]))
            from--;
        delete_range(p, from, cur);
        break;
    }
    default:
        if (c < 32 || len >= PROMPT_MAX - 1)
            return PROMPT_EDITING;
        memmove(p->buf + cur + 1, p->buf + cur, (size_t)(len - cur + 1) * sizeof(wchar_t));
        p->buf[cur] = (wchar_t)c;
        p->len++;
        p->cur++;
    }
    return PROMPT_EDITING;
}

/* One character of the buffer as UTF-8, and its width on screen (ASCII stand-ins included). */
static int char_at(const struct prompt *p, int i, char *utf8)
{
    int len = attn_utf8_encode((uint32_t)p->buf[i], utf8);
    utf8[len] = '\0';
    return text_width(utf8);
}

void prompt_draw(struct prompt *p, const struct theme *t, int y, int cols)
{
    /* A long label (a path) keeps its end, where the file name is. */
    char label[sizeof(p->label) + 8];
    /* A question takes the whole line; an editor leaves room for the text typed. */
    int room = prompt_is_question(p->kind) ? cols - 3 : (cols / 2 > 20 ? cols / 2 : 20);
    if (p->kind == PROMPT_FIT_TEXT) /* its start says how long the sentence is */
        abbreviate(label, sizeof(label), p->label, room);
    else
        abbreviate_start(label, sizeof(label), p->label, room);
    int x = draw_text(y, 0, cols, t->role_attr[ROLE_LABEL], label);
    x += draw_text(y, x, 2, A_NORMAL, ": ");
    int avail = cols - x - 1;
    if (avail < 4)
        return;
    /* Scroll horizontally so the cursor stays visible. */
    char ch[8];
    int start = 0, width = 0;
    for (int i = p->cur - 1; i >= 0; i--) {
        int w = char_at(p, i, ch);
        if (width + w >= avail)
            break;
        width += w;
        start = i;
    }
    if (p->cur == 0)
        start = 0;
    int used = 0, cursor_x = x;
    for (int i = start; i < p->len; i++) {
        int w = char_at(p, i, ch);
        if (used + w > avail)
            break;
        if (i == p->cur)
            cursor_x = x + used;
        used += draw_text(y, x + used, w, p->fresh ? A_REVERSE : A_NORMAL, ch);
    }
    if (p->cur >= p->len)
        cursor_x = x + used;
    p->cursor_y = y;
    p->cursor_x = cursor_x;
}
