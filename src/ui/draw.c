/* draw: width-aware text output for the panels (see ui.h). Tokens like "café" or "日本" take
 * 4 and 4 columns: everything here counts terminal columns, never bytes. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "ui/ui.h"

/* Decodes one UTF-8 character; returns its byte length (1 for an invalid byte, shown as ?). */
static int next_char(const char *s, wchar_t *wc)
{
    mbstate_t st;
    memset(&st, 0, sizeof(st));
    size_t n = mbrtowc(wc, s, strlen(s), &st);
    if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
        *wc = L'?';
        return 1;
    }
    return (int)n;
}

static int char_width(wchar_t wc)
{
    int w = wcwidth(wc);
    return w < 0 ? 1 : w;
}

int text_width(const char *s)
{
    int w = 0;
    while (*s) {
        wchar_t wc;
        s += next_char(s, &wc);
        w += char_width(wc);
    }
    return w;
}

int draw_text(int y, int x, int width, int attr, const char *s)
{
    int used = 0;
    attr_t old_attr;
    short old_pair;
    attr_get(&old_attr, &old_pair, NULL);
    attrset(attr);
    move(y, x);
    while (*s && used < width) {
        wchar_t wc;
        s += next_char(s, &wc);
        int cw = char_width(wc);
        if (used + cw > width)
            break;
        if (wc == L'\t' || wc < 32)
            wc = L' ';
        wchar_t str[2] = {wc, 0};
        addnwstr(str, 1);
        used += cw;
    }
    attr_set(old_attr, old_pair, NULL);
    return used;
}

void abbreviate(char *out, size_t out_size, const char *s, int width)
{
    if (text_width(s) <= width) {
        snprintf(out, out_size, "%s", s);
        return;
    }
    size_t o = 0;
    int used = 0;
    while (*s) {
        wchar_t wc;
        int len = next_char(s, &wc);
        int cw = char_width(wc);
        if (used + cw > width - 1 || o + (size_t)len + 4 > out_size)
            break;
        memcpy(out + o, s, (size_t)len);
        o += (size_t)len;
        used += cw;
        s += len;
    }
    snprintf(out + o, out_size - o, "\u2026");
}

void format_cell(char *out, size_t out_size, float v, int width)
{
    if (isnan(v)) {
        snprintf(out, out_size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, out_size, v < 0 ? "-\u221e" : "\u221e");
        return;
    }
    for (int prec = 3; prec >= 0; prec--) {
        int n = snprintf(out, out_size, "%.*f", prec, (double)v);
        if (n <= width)
            return;
    }
    snprintf(out, out_size, "%.0e", (double)v);
}
