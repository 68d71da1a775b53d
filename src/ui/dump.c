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

/* Letters for looks in order of first appearance; '.' is the plain default cell. */
static const char look_letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define LOOKS_MAX ((int)sizeof(look_letters) - 1)

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
static void look_name(char *out, size_t size, size_t *len, const struct theme *t, int attr)
{
    struct {
        char name[32];
        int attr;
    } known[ROLE_COUNT + 2 * SCALE_STEPS];
    int n = 0;
    for (int r = 0; r < ROLE_COUNT; r++) {
        snprintf(known[n].name, sizeof(known[n].name), "role %s", role_names[r]);
        known[n++].attr = t->role_attr[r];
    }
    /* Without colour every step is plain: naming them would only repeat '.'. */
    for (int s = 0; s < SCALE_STEPS && t->mode != COLOR_MODE_MONO; s++) {
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

/* The letter of a look, adding it to looks[] the first time it is seen. */
static char look_letter(struct look *looks, int *n, attr_t attrs, short pair)
{
    if (attrs == A_NORMAL && pair == 0)
        return '.';
    for (int i = 0; i < *n; i++)
        if (looks[i].attrs == attrs && looks[i].pair == pair)
            return look_letters[i];
    if (*n == LOOKS_MAX)
        return '?';
    looks[*n] = (struct look){attrs, pair};
    return look_letters[(*n)++];
}

void ui_dump(const struct ui *ui, FILE *out)
{
    struct look looks[LOOKS_MAX];
    int n_looks = 0;
    bool overflow = false, unreadable = false;
    char *letters = malloc((size_t)LINES * ((size_t)COLS + 1));
    if (!letters)
        abort();
    for (int y = 0; y < LINES; y++) {
        char line[4096];
        size_t len = 0;
        size_t last_non_blank = 0;
        bool text_full = false; /* the rest of the text is dropped, its looks still recorded */
        char *row = letters + (size_t)y * ((size_t)COLS + 1);
        int last_letter = 0;
        for (int x = 0; x < COLS; x++) {
            cchar_t cc;
            wchar_t wc[CCHARW_MAX + 1];
            attr_t attrs;
            short pair;
            if (mvin_wch(y, x, &cc) != OK || getcchar(&cc, wc, &attrs, &pair, NULL) == ERR) {
                row[x] = '!';
                last_letter = x + 1;
                unreadable = true;
                continue;
            }
            char letter = look_letter(looks, &n_looks, attrs & ~A_COLOR, pair);
            overflow |= letter == '?';
            row[x] = letter;
            if (letter != '.')
                last_letter = x + 1;
            if (wc[0] == L'\0')
                continue;
            /* Wide characters occupy two cells; the second reads back as the same cell. */
            int w = wcwidth(wc[0]);
            char mb[4 * (CCHARW_MAX + 1)];
            size_t n = 0;
            for (int k = 0; k < CCHARW_MAX && wc[k]; k++) {
                int bytes = utf8_encode((uint32_t)wc[k], mb + n);
                n += (size_t)bytes;
            }
            if (w == 2 && x + 1 < COLS) {
                row[++x] = letter;
                if (letter != '.')
                    last_letter = x + 1;
            }
            if (text_full || len + n >= sizeof(line)) {
                text_full = true;
                continue;
            }
            memcpy(line + len, mb, n);
            len += n;
            if (!(n == 1 && mb[0] == ' '))
                last_non_blank = len;
        }
        row[last_letter] = '\0';
        fprintf(out, "%.*s\n", (int)last_non_blank, line);
    }
    fprintf(out, "-- attributes\n");
    for (int y = 0; y < LINES; y++)
        fprintf(out, "%s\n", letters + (size_t)y * ((size_t)COLS + 1));
    free(letters);
    fprintf(out, "-- legend\n");
    for (int i = 0; i < n_looks; i++) {
        char desc[512];
        size_t len = 0;
        look_name(desc, sizeof(desc), &len, &ui->theme,
                  (int)(looks[i].attrs | COLOR_PAIR(looks[i].pair)));
        append(desc, sizeof(desc), &len, ": ");
        look_facts(desc, sizeof(desc), &len, looks[i].attrs, looks[i].pair);
        fprintf(out, "%c  %s\n", look_letters[i], desc);
    }
    if (overflow)
        fprintf(out, "?  more looks than letters\n");
    if (unreadable)
        fprintf(out, "!  a cell that could not be read\n");
}
