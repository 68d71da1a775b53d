/* test_theme: the heatmap's cells get brighter with their values in every colour mode.
 *
 * Issue 27: on an 8-colour terminal the bands drew the strongest weights as black shade blocks on
 * yellow (the sink column, an induction stripe: solid black), and both ends of a signed stage as
 * solid white. Here each mode's mapping (256 colours under every scale colors.yaml offers, 8
 * colours, NO_COLOR, and each of those drawn with LANG=C's ASCII stand-ins) is played over
 * positions 0..1 on a virtual terminal, and every cell is given the brightness a viewer sees:
 * its background and its glyph's colour (xterm's default palette, relative luminance) mixed by the
 * glyph's ink. Without colour the terminal's foreground is light on a dark background. A
 * sequential scale must brighten with the value, end at its brightest and tell its levels apart;
 * a signed one must move away from its 0 as the magnitude grows, on each side, and tell its two
 * ends from each other and from 0.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/utf8.h"
#include "palette/palette.h"
#include "ui/draw.h"
#include "ui/theme.h"

/* The ink of a glyph as drawn: the share of its cell it covers. The ASCII stand-ins by rank of
 * their ink in a monospaced font: below any block's, but in the same order. */
static double ink(const char *glyph, bool ascii)
{
    static const struct {
        uint32_t cp;
        double ink;
        char ascii;
        double ascii_ink;
    } inks[] = {
        {' ', 0, ' ', 0},           {0x2591, 0.25, '.', 0.05}, {0x2592, 0.5, ':', 0.1},
        {0x2593, 0.75, '#', 0.3},   {0x2588, 1, '@', 0.35},    {0x2581, 0.125, '_', 0.06},
        {0x2583, 0.375, '=', 0.12}, {0x2585, 0.625, '%', 0.2}, {0x2587, 0.875, 'W', 0.28},
    };
    uint32_t cp = 0;
    attn_utf8_decode(glyph, &cp);
    for (size_t i = 0; i < sizeof(inks) / sizeof(inks[0]); i++)
        if (inks[i].cp == cp) {
            if (!ascii)
                return inks[i].ink;
            /* what draw.c really puts there, without UTF-8 */
            const char *drawn = cp == ' ' ? " " : draw_ascii_for((wchar_t)cp);
            if (strlen(drawn) != 1 || drawn[0] != inks[i].ascii)
                fail_msg("U+%04X is drawn as '%s' without UTF-8, not '%c'", (unsigned)cp, drawn,
                         inks[i].ascii);
            return inks[i].ascii_ink;
        }
    fail_msg("a shade glyph this test does not know: U+%04X", (unsigned)cp);
    return 0;
}

static double linear(unsigned char c)
{
    double x = c / 255.0;
    return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4);
}

/* Relative luminance of xterm's colour i; -1 (the terminal's own) is black behind, white in
 * front: a dark terminal. */
static double luminance(int i, bool front)
{
    if (i < 0)
        return front ? 1.0 : 0.0;
    struct palette_rgb c = palette_xterm_rgb(i);
    return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
}

/* The colours of attribute attr: its pair's, or the terminal's own. */
static void colours(int attr, short *fg, short *bg)
{
    *fg = *bg = -1;
    short pair = (short)PAIR_NUMBER(attr);
    if (pair > 0)
        assert_int_equal(pair_content(pair, fg, bg), OK);
}

/* What a viewer sees of a cell of this look: its background, and its glyph's colour over it by
 * the glyph's ink. */
static double brightness(struct theme_look look, bool ascii)
{
    short fg, bg, gfg, gbg;
    colours(look.attr, &fg, &bg);
    colours(look.shade_attr, &gfg, &gbg);
    if (gbg != bg)
        fail_msg("a glyph on another background than its cell's (%d, %d)", gbg, bg);
    double c = ink(look.shade, ascii);
    return (1 - c) * luminance(bg, false) + c * luminance(gfg, true);
}

/* Two looks a viewer tells apart: other colours, or another glyph. */
static bool distinct(struct theme_look a, struct theme_look b)
{
    short af, ab, bf, bb, agf, agb, bgf, bgb;
    colours(a.attr, &af, &ab);
    colours(b.attr, &bf, &bb);
    colours(a.shade_attr, &agf, &agb);
    colours(b.shade_attr, &bgf, &bgb);
    return ab != bb || agf != bgf || strcmp(a.shade, b.shade) != 0;
}

enum { SAMPLES = 480 };

/* The brightness of every sample of a scale, and how many levels a viewer tells apart. */
static int sample(const struct theme *t, bool diverging, bool ascii, double *b,
                  struct theme_look *looks)
{
    int levels = 0;
    for (int k = 0; k <= SAMPLES; k++) {
        looks[k] = theme_position_look(t, (double)k / SAMPLES, diverging);
        b[k] = brightness(looks[k], ascii);
        levels += k == 0 || distinct(looks[k], looks[k - 1]);
    }
    return levels;
}

static void check_sequential(const struct theme *t, const char *mode, bool ascii, int least)
{
    double b[SAMPLES + 1];
    struct theme_look looks[SAMPLES + 1];
    int levels = sample(t, false, ascii, b, looks);
    for (int k = 1; k <= SAMPLES; k++)
        if (b[k] < b[k - 1] - 1e-12)
            fail_msg("%s: darker at %.3f (%.4f) than at %.3f (%.4f)", mode, (double)k / SAMPLES,
                     b[k], (double)(k - 1) / SAMPLES, b[k - 1]);
    if (!(b[SAMPLES] > b[0] + 0.2))
        fail_msg("%s: the largest value (%.4f) is not much brighter than the least (%.4f)", mode,
                 b[SAMPLES], b[0]);
    if (levels < least)
        fail_msg("%s: %d levels, fewer than %d", mode, levels, least);
}

/* From 0 out to either end: ever further from 0's look (brightness, or in 256 colours the
 * distance of the colours, since a diverging scale pales towards its 0), the two ends told from
 * each other and from 0. */
static void check_signed(const struct theme *t, const char *mode, bool ascii, int least)
{
    double b[SAMPLES + 1];
    struct theme_look looks[SAMPLES + 1];
    int levels = sample(t, true, ascii, b, looks);
    int zero = SAMPLES / 2;
    for (int side = -1; side <= 1; side += 2)
        for (int m = 1; m <= zero; m++) {
            double here = fabs(b[zero + side * m] - b[zero]);
            double before = fabs(b[zero + side * (m - 1)] - b[zero]);
            if (here < before - 1e-12)
                fail_msg("%s: magnitude %.3f on the %s side is nearer 0's brightness (%.4f) than "
                         "%.3f (%.4f)",
                         mode, (double)m / zero, side < 0 ? "negative" : "positive", here,
                         (double)(m - 1) / zero, before);
        }
    if (!distinct(looks[0], looks[SAMPLES]))
        fail_msg("%s: the most negative and the most positive value look alike", mode);
    if (!distinct(looks[0], looks[zero]) || !distinct(looks[SAMPLES], looks[zero]))
        fail_msg("%s: an end looks like 0", mode);
    if (!(fabs(b[0] - b[zero]) > 0.1 && fabs(b[SAMPLES] - b[zero]) > 0.1))
        fail_msg("%s: an end is hardly brighter or darker than 0 (%.4f, %.4f, 0: %.4f)", mode, b[0],
                 b[SAMPLES], b[zero]);
    if (levels < least)
        fail_msg("%s: %d levels, fewer than %d", mode, levels, least);
}

/* A theme on a virtual terminal of TERM term (colors.yaml: the shipped one, then colors). */
static SCREEN *open_theme(struct theme *t, const char *term, bool no_color, bool ascii,
                          const char *colors)
{
    if (no_color)
        setenv("NO_COLOR", "1", 1);
    else
        unsetenv("NO_COLOR");
    setlocale(LC_ALL, ascii ? "C" : "C.UTF-8");
    draw_init();
    assert_int_equal(draw_ascii_only(), ascii);
    FILE *in = fopen("/dev/null", "r"), *out = fopen("/dev/null", "w");
    SCREEN *scr = newterm(term, out, in);
    assert_non_null(scr);
    set_term(scr);
    if (has_colors())
        start_color();
    char shipped[1024], user[1200] = "";
    snprintf(shipped, sizeof(shipped), "%s/colors.yaml", getenv("ATTNSCOPE_CONFIGS_DIR"));
    if (colors) {
        snprintf(user, sizeof(user), "/tmp/attnscope-test-theme-%d.yaml", (int)getpid());
        FILE *f = fopen(user, "w");
        assert_non_null(f);
        fputs(colors, f);
        fclose(f);
    }
    struct diag_list errs;
    attn_diag_list_init(&errs);
    theme_init(t, shipped, colors ? user : NULL, &errs);
    if (errs.n)
        fail_msg("colors.yaml: %s", errs.items[0].msg);
    attn_diag_list_free(&errs);
    if (colors)
        unlink(user);
    return scr;
}

static void close_theme(SCREEN *scr)
{
    endwin();
    delscreen(scr);
}

static void test_256_colours(void **state)
{
    (void)state;
    static const char *const scales[][2] = {
        {"viridis", "blue-red"}, {"magma", "purple-green"}, {"gray", "blue-red"}};
    for (int ascii = 0; ascii < 2; ascii++)
        for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
            char colors[128], mode[96];
            snprintf(colors, sizeof(colors), "scale: %s\ndiverging: %s\n", scales[i][0],
                     scales[i][1]);
            snprintf(mode, sizeof(mode), "256 colours, %s and %s%s", scales[i][0], scales[i][1],
                     ascii ? ", LANG=C" : "");
            struct theme t;
            SCREEN *scr = open_theme(&t, "xterm-256color", false, ascii, colors);
            assert_int_equal(t.mode, COLOR_MODE_256);
            check_sequential(&t, mode, ascii, SCALE_STEPS);
            check_signed(&t, mode, ascii, SCALE_STEPS);
            close_theme(scr);
        }
}

/* The bug: xterm and screen have 8 colours. The weights run black, blue, green, yellow, the shade
 * glyphs blending each into the next (13 levels); a signed stage runs from black at 0 through
 * blue to cyan below and through red to yellow above (9 levels a side). */
static void test_8_colours(void **state)
{
    (void)state;
    static const char *const terms[] = {"xterm", "screen"};
    for (int ascii = 0; ascii < 2; ascii++)
        for (size_t i = 0; i < sizeof(terms) / sizeof(terms[0]); i++) {
            char mode[64];
            snprintf(mode, sizeof(mode), "8 colours (%s)%s", terms[i], ascii ? ", LANG=C" : "");
            struct theme t;
            SCREEN *scr = open_theme(&t, terms[i], false, ascii, NULL);
            assert_int_equal(t.mode, COLOR_MODE_8);
            check_sequential(&t, mode, ascii, 13);
            check_signed(&t, mode, ascii, 17);
            /* the strongest weight is the ramp's brightest colour, plain: yellow, no black glyph */
            struct theme_look top = theme_position_look(&t, 1.0, false);
            short fg, bg;
            colours(top.attr, &fg, &bg);
            assert_int_equal(bg, COLOR_YELLOW);
            assert_string_equal(top.shade, " ");
            /* two hues: blue to cyan below 0, red to yellow above */
            struct theme_look lo = theme_position_look(&t, 0.0, true);
            struct theme_look hi = theme_position_look(&t, 1.0, true);
            colours(lo.attr, &fg, &bg);
            assert_int_equal(bg, COLOR_CYAN);
            colours(hi.attr, &fg, &bg);
            assert_int_equal(bg, COLOR_YELLOW);
            close_theme(scr);
        }
}

/* Without colour the glyphs carry it all: shades by ink, and on a signed stage the lower blocks
 * below 0, so its two ends (█ and ▇) differ. */
static void test_no_colour(void **state)
{
    (void)state;
    for (int ascii = 0; ascii < 2; ascii++) {
        char mode[64];
        snprintf(mode, sizeof(mode), "NO_COLOR%s", ascii ? ", LANG=C" : "");
        struct theme t;
        SCREEN *scr = open_theme(&t, "xterm-256color", true, ascii, NULL);
        assert_int_equal(t.mode, COLOR_MODE_MONO);
        check_sequential(&t, mode, ascii, 5);
        check_signed(&t, mode, ascii, 9);
        close_theme(scr);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_256_colours),
        cmocka_unit_test(test_8_colours),
        cmocka_unit_test(test_no_colour),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
