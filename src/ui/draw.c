/* draw: width-aware text output for the panels (see ui.h). Tokens like "café" or "日本" take
 * 4 and 4 columns: everything here counts terminal columns, never bytes. */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <langinfo.h>

#include "common/utf8.h"
#include "ui/draw.h"
#include "common/cnum.h"

/* Over ssh the locale is often C/POSIX: then every glyph the panels use has an ASCII stand-in,
 * so the screen stays readable and the columns stay aligned. */
static bool ascii_only;

void draw_init(void)
{
    const char *cs = nl_langinfo(CODESET);
    ascii_only = !(cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0));
}

bool draw_ascii_only(void)
{
    return ascii_only;
}

const char *draw_ascii_for(wchar_t wc)
{
    static const struct {
        wchar_t wc;
        const char *ascii;
    } map[] = {
        {L'\u00b7', "."},  {L'\u00d7', "x"},     {L'\u221e', "inf"}, {L'\u221a', "sqrt "},
        {L'\u00f7', "/"},  {L'\u03a3', "sum"},   {L'\u2502', "|"},   {L'\u2026', "~"},
        {L'\u201c', "\""}, {L'\u201d', "\""},    {L'\u2018', "'"},   {L'\u2019', "'"},
        {L'\u2591', "."},  {L'\u2592', ":"},     {L'\u2593', "#"},   {L'\u2588', "@"},
        {L'\u2581', "_"},  {L'\u2583', "="},     {L'\u2585', "%"},   {L'\u2587', "W"},
        {L'\u2190', "<"},  {L'\u2192', ">"},     {L'\u2191', "^"},   {L'\u2193', "v"},
        {L'\u2212', "-"},  {L'\u2717', "x"},     {L'\u25b6', ">"},   {L'\u1d40', "^T"},
        {L'\u2014', "-"},  {L'\u00a0', " "},     {L'\u2423', "_"},   {L'\u21e5', ">"},
        {L'\u21b5', "<"},  {L'\u2013', "-"},     {L'\u25c6', "+"},   {L'\u2500', "-"},
        {L'\u2248', "~"},  {L'\u03b8', "theta"}, {L'\u2016', "|"},   {L'\u03b1', "a"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].wc == wc)
            return map[i].ascii;
    return "?";
}

/* One character as drawn: a wide character, or for a control character, a bidi control or a
 * byte that is not UTF-8 its visible escape (common/utf8.h: "\\e", "<U+202E>", "\\xff"), so
 * text from a file never reaches the terminal raw and every width below counts the escape. */
struct glyph {
    wchar_t wc;
    char esc[UTF8_ESCAPE_MAX]; /* "" unless escaped */
};

/* Decodes the character at s whatever the locale; returns its length in bytes. */
static int next_glyph(const char *s, struct glyph *g)
{
    int n = attn_utf8_escape_char(s, g->esc, 0);
    uint32_t cp = '?';
    if (!g->esc[0])
        attn_utf8_decode(s, &cp);
    g->wc = (wchar_t)cp;
    return n;
}

static int char_width(wchar_t wc)
{
    if (ascii_only && wc >= 0x80)
        return (int)strlen(draw_ascii_for(wc));
    int w = wcwidth(wc);
    return w < 0 ? 1 : w;
}

static int glyph_width(const struct glyph *g)
{
    return g->esc[0] ? (int)strlen(g->esc) : char_width(g->wc);
}

/* The first character of s without escapes (draw_cell_pair's single glyphs). */
static int next_char(const char *s, wchar_t *wc)
{
    struct glyph g;
    int n = next_glyph(s, &g);
    *wc = g.esc[0] ? L'?' : g.wc;
    return n;
}

int text_width(const char *s)
{
    int w = 0;
    while (*s) {
        struct glyph g;
        s += next_glyph(s, &g);
        w += glyph_width(&g);
    }
    return w;
}

int tokens_label_width(char *const *tokens, int n, int max)
{
    int w = 4;
    for (int i = 0; i < n; i++) {
        int tw = text_width(tokens[i]);
        w = tw > w ? tw : w;
    }
    return (w > max ? max : w) + 1;
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
        struct glyph g;
        s += next_glyph(s, &g);
        int cw = glyph_width(&g);
        if (used + cw > width)
            break;
        if (g.esc[0]) {
            addstr(g.esc);
        } else if (ascii_only && g.wc >= 0x80) {
            addstr(draw_ascii_for(g.wc));
        } else {
            wchar_t str[2] = {g.wc, 0};
            addnwstr(str, 1);
        }
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
        struct glyph g;
        int len = next_glyph(s, &g);
        int cw = glyph_width(&g);
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
    /* Four decimals (print's) when the cell has room for a signed one, else three. */
    for (int prec = width >= 7 ? 4 : 3; prec >= 0; prec--) {
        int n = attn_cnum_format(out, out_size, "%.*f", prec, (double)v);
        if (n <= width)
            return;
    }
    attn_cnum_format(out, out_size, "%.0e", (double)v);
}

void abbreviate_start(char *out, size_t out_size, const char *s, int width)
{
    int total = text_width(s);
    if (total <= width) {
        snprintf(out, out_size, "%s", s);
        return;
    }
    /* Skip characters from the front until "…" plus the rest fits. */
    while (*s && total > width - 1) {
        struct glyph g;
        int len = next_glyph(s, &g);
        total -= glyph_width(&g);
        s += len;
    }
    snprintf(out, out_size, "\u2026%s", s);
}

void display_token(char *out, size_t out_size, const char *token)
{
    attn_utf8_visible_token(out, out_size, token);
}

void draw_cell_pair(int y, int x, const char *s, int attrs, int pair)
{
    wchar_t wc[2] = {L'?', 0};
    next_char(s, &wc[0]);
    cchar_t cc;
    setcchar(&cc, wc, (attr_t)attrs & ~A_COLOR, (short)pair, NULL);
    mvadd_wch(y, x, &cc);
}

void draw_clear(struct rect r, int attr)
{
    attrset(attr);
    for (int y = r.y; y < r.y + r.h; y++)
        mvhline(y, r.x, ' ', r.w);
    attrset(A_NORMAL);
}

void draw_bar_text(char *out, size_t size, double frac, int width)
{
    static const char *const eighths[8] = {"",       "\u258f", "\u258e", "\u258d",
                                           "\u258c", "\u258b", "\u258a", "\u2589"};
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    int units = ascii_only ? (int)(frac * width + 0.5) * 8 : (int)(frac * width * 8 + 0.5);
    size_t o = 0;
    out[0] = '\0';
    for (int c = 0; c < units / 8 && o + 4 < size; c++)
        o += (size_t)snprintf(out + o, size - o, "\u2588");
    if (units % 8 && o + 4 < size)
        snprintf(out + o, size - o, "%s", eighths[units % 8]);
}
