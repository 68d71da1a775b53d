/* dump: the screen as golden-screen text, with every cell's look (see ui.h).
 *
 * The text alone cannot fail on colour, so after it comes one letter per cell for its look
 * (attributes plus colour pair) and a legend naming each look twice: by the theme's role or scale
 * step, which is what a reviewer reads, and by its flags and pair colours, which is what makes a
 * changed colour fail the test.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "ui/ui.h"

/* Letters for looks in order of first appearance; '.' is the plain default cell. A screen of
 * more looks than letters (a zoomed-out map of half blocks has hundreds of colour pairs) writes
 * two letters a cell instead, and says so. */
static const char look_letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define LETTERS   ((int)sizeof(look_letters) - 1)
#define LOOKS_MAX (LETTERS * LETTERS)

static const struct {
    attr_t bit;
    const char *name;
} flag_names[] = {
    {A_BOLD, "bold"},         {A_DIM, "dim"},
    {A_REVERSE, "reverse"},   {A_UNDERLINE, "underline"},
    {A_STANDOUT, "standout"}, {A_BLINK, "blink"},
    {A_ITALIC, "italic"},     {A_INVIS, "invis"},
    {A_PROTECT, "protect"},   {A_ALTCHARSET, "altcharset"},
};

/* Appends printf output to out[size] at *len, truncating rather than overflowing. */
static void append(char *out, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *out, size_t size, size_t *len, const char *fmt, ...)
{
    if (*len >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

/* "+bold -dim": the flags of have that want lacks (+) and the other way round (-). */
static void flag_diff(char *out, size_t size, size_t *len, attr_t have, attr_t want)
{
    for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
        attr_t b = flag_names[i].bit;
        if ((have & b) != (want & b))
            append(out, size, len, " %c%s", have & b ? '+' : '-', flag_names[i].name);
    }
}

/* The theme's name for a look: every role or scale step drawn with exactly this attribute;
 * failing that, the one with the same colour pair and the flags that differ from it. */
static void look_name(char *out, size_t size, size_t *len, const struct theme *t, attr_t attrs,
                      short pair)
{
    char half[48];
    if (theme_half_pair_name(t, pair, half, sizeof(half)) || /* past an attribute's 255 pairs */
        theme_ramp_pair_name(t, pair, half, sizeof(half))) { /* a ramp of 8 colours' */
        append(out, size, len, "%s", half);
        flag_diff(out, size, len, attrs, A_NORMAL);
        return;
    }
    int attr = (int)(attrs | COLOR_PAIR(pair));
    struct {
        char name[32];
        int attr;
    } known[ROLE_COUNT + 2 * SCALE_STEPS];
    int n = 0;
    for (int r = 0; r < ROLE_COUNT; r++) {
        snprintf(known[n].name, sizeof(known[n].name), "role %s", role_names[r]);
        known[n++].attr = t->role_attr[r];
    }
    /* Steps have pairs of their own in 256 colours only (8 colours: ramps, named above; without
       colour every step is plain: naming them would only repeat '.'). */
    for (int s = 0; s < SCALE_STEPS && t->mode == COLOR_MODE_256; s++) {
        snprintf(known[n].name, sizeof(known[n].name), "scale seq %d", s);
        known[n++].attr = t->seq_attr[s];
        snprintf(known[n].name, sizeof(known[n].name), "scale div %d", s);
        known[n++].attr = t->div_attr[s];
    }
    size_t start = *len;
    for (int i = 0; i < n; i++)
        if (known[i].attr == attr)
            append(out, size, len, "%s%s", *len > start ? ", " : "", known[i].name);
    for (int i = 0; i < n && *len == start && PAIR_NUMBER(attr) != 0; i++)
        if (PAIR_NUMBER(known[i].attr) == PAIR_NUMBER(attr)) {
            append(out, size, len, "%s", known[i].name);
            flag_diff(out, size, len, (attr_t)attr & ~A_COLOR, (attr_t)known[i].attr & ~A_COLOR);
        }
    if (*len == start)
        append(out, size, len, "no role");
}

/* "bold, reverse, fg 0 bg 6": the flags, then the pair's colours (-1 is "default"). */
static void look_facts(char *out, size_t size, size_t *len, attr_t attrs, short pair)
{
    attr_t rest = attrs;
    for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
        if (attrs & flag_names[i].bit) {
            append(out, size, len, "%s, ", flag_names[i].name);
            rest &= ~flag_names[i].bit;
        }
    if (rest)
        append(out, size, len, "attrs 0x%lx, ", (unsigned long)rest);
    short fg, bg;
    if (pair_content(pair, &fg, &bg) == ERR) {
        append(out, size, len, "pair %d (no colours)", pair);
        return;
    }
    char f[16] = "default", b[16] = "default";
    if (fg >= 0)
        snprintf(f, sizeof(f), "%d", fg);
    if (bg >= 0)
        snprintf(b, sizeof(b), "%d", bg);
    append(out, size, len, "fg %s bg %s", f, b);
    /* ncurses may accept a few pairs past the terminal's count and silently refuse the rest,
     * which then read back as black on black. */
    if (pair >= COLOR_PAIRS)
        append(out, size, len, " (pair %d beyond the terminal's %d)", pair, COLOR_PAIRS);
}

struct look {
    attr_t attrs; /* without the colour bits */
    short pair;
};

/* The number of a look, adding it to looks[] the first time it is seen; -1 for the plain
 * default cell, LOOKS_MAX when there are too many. */
static int look_index(struct look *looks, int *n, attr_t attrs, short pair)
{
    if (attrs == A_NORMAL && pair == 0)
        return -1;
    for (int i = 0; i < *n; i++)
        if (looks[i].attrs == attrs && looks[i].pair == pair)
            return i;
    if (*n == LOOKS_MAX)
        return LOOKS_MAX;
    looks[*n] = (struct look){attrs, pair};
    return (*n)++;
}

/* Look i as one letter, or two when the screen has more looks than letters. */
static void look_code(char *out, int i, bool two)
{
    if (i < 0 || i >= LOOKS_MAX) {
        out[0] = out[1] = i < 0 ? '.' : '?';
    } else if (two) {
        out[0] = look_letters[i / LETTERS];
        out[1] = look_letters[i % LETTERS];
    } else {
        out[0] = look_letters[i];
    }
    out[two ? 2 : 1] = '\0';
}

void ui_dump(const struct ui *ui, FILE *out)
{
    struct look *looks = malloc(LOOKS_MAX * sizeof(*looks));
    int n_looks = 0;
    bool overflow = false, unreadable = false;
    /* every cell's look index (-1 plain, -2 unreadable), decided before it is written */
    int *cells = malloc((size_t)LINES * (size_t)COLS * sizeof(int));
    if (!looks || !cells)
        abort();
    for (int y = 0; y < LINES; y++) {
        char line[4096];
        size_t len = 0;
        size_t last_non_blank = 0;
        bool text_full = false; /* the rest of the text is dropped, its looks still recorded */
        int *row = cells + (size_t)y * (size_t)COLS;
        for (int x = 0; x < COLS; x++) {
            cchar_t cc;
            wchar_t wc[CCHARW_MAX + 1];
            attr_t attrs;
            short pair;
            if (mvin_wch(y, x, &cc) != OK || getcchar(&cc, wc, &attrs, &pair, NULL) == ERR) {
                row[x] = -2;
                unreadable = true;
                continue;
            }
            int look = look_index(looks, &n_looks, attrs & ~A_COLOR, pair);
            overflow |= look == LOOKS_MAX;
            row[x] = look;
            if (wc[0] == L'\0')
                continue;
            /* Wide characters occupy two cells; the second reads back as the same cell. */
            int w = wcwidth(wc[0]);
            char mb[4 * (CCHARW_MAX + 1)];
            size_t n = 0;
            for (int k = 0; k < CCHARW_MAX && wc[k]; k++) {
                int bytes = attn_utf8_encode((uint32_t)wc[k], mb + n);
                n += (size_t)bytes;
            }
            if (w == 2 && x + 1 < COLS)
                row[++x] = look;
            if (text_full || len + n >= sizeof(line)) {
                text_full = true;
                continue;
            }
            memcpy(line + len, mb, n);
            len += n;
            if (!(n == 1 && mb[0] == ' '))
                last_non_blank = len;
        }
        fprintf(out, "%.*s\n", (int)last_non_blank, line);
    }
    bool two = n_looks > LETTERS;
    fprintf(out, "-- attributes%s\n", two ? " (two letters a cell)" : "");
    for (int y = 0; y < LINES; y++) {
        const int *row = cells + (size_t)y * (size_t)COLS;
        int last = COLS;
        while (last > 0 && row[last - 1] == -1)
            last--;
        for (int x = 0; x < last; x++) {
            char code[3];
            if (row[x] == -2)
                fputs(two ? "!!" : "!", out);
            else {
                look_code(code, row[x], two);
                fputs(code, out);
            }
        }
        fputc('\n', out);
    }
    free(cells);
    fprintf(out, "-- legend\n");
    for (int i = 0; i < n_looks; i++) {
        char desc[512], code[3];
        size_t len = 0;
        look_name(desc, sizeof(desc), &len, &ui->theme, looks[i].attrs, looks[i].pair);
        append(desc, sizeof(desc), &len, ": ");
        look_facts(desc, sizeof(desc), &len, looks[i].attrs, looks[i].pair);
        look_code(code, i, two);
        fprintf(out, "%s  %s\n", code, desc);
    }
    free(looks);
    if (overflow)
        fprintf(out, "%s  more looks than letters\n", two ? "??" : "?");
    if (unreadable)
        fprintf(out, "%s  a cell that could not be read\n", two ? "!!" : "!");
}
