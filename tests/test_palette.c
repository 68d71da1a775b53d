/* test_palette: the colour scales' numbers, which the terminal and the SVG pictures share: the
 * scales' true colours (matplotlib's viridis and magma, ColorBrewer's RdBu and PRGn) at known
 * positions, the xterm-256 palette's RGB, every scale's steps on distinct colours, positions on
 * the linear, diverging, row and log scales, and the legend's names for them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "palette/palette.h"

static void test_xterm_rgb(void **state)
{
    (void)state;
    struct palette_rgb c = palette_xterm_rgb(16); /* the cube's corners */
    assert_true(c.r == 0 && c.g == 0 && c.b == 0);
    c = palette_xterm_rgb(231);
    assert_true(c.r == 255 && c.g == 255 && c.b == 255);
    c = palette_xterm_rgb(16 + 36 * 1 + 6 * 2 + 3); /* levels 95, 135, 175 */
    assert_true(c.r == 95 && c.g == 135 && c.b == 175);
    c = palette_xterm_rgb(232); /* the gray ramp: 8, 18, ..., 238 */
    assert_true(c.r == 8 && c.g == 8 && c.b == 8);
    c = palette_xterm_rgb(255);
    assert_true(c.r == 238 && c.g == 238 && c.b == 238);
}

/* viridis as the explorer shows it: its ends are xterm 53 (#5f005f) and 226 (#ffff00); no two
 * steps of any scale share a colour, and none is darker than the step before it (a diverging
 * scale: than the step before it towards 0). The nearest colours alone took viridis from 113 down
 * to 107 and 61 down to 24 (issue 27). */
static void test_scale_steps(void **state)
{
    (void)state;
    int idx[PALETTE_STEPS];
    palette_xterm_indices(idx, 0, false);
    assert_int_equal(idx[0], 53);
    assert_int_equal(idx[PALETTE_STEPS - 1], 226);
    int zero = palette_step(0.5);
    for (int d = 0; d < 2; d++)
        for (int sc = 0; sc < (d ? PALETTE_DIVERGING : PALETTE_SEQUENTIAL); sc++) {
            palette_xterm_indices(idx, sc, d);
            for (int a = 0; a < PALETTE_STEPS; a++)
                for (int b = a + 1; b < PALETTE_STEPS; b++)
                    assert_int_not_equal(idx[a], idx[b]);
            for (int k = 1; k < PALETTE_STEPS; k++) {
                double before = palette_luminance(palette_xterm_rgb(idx[k - 1]));
                double here = palette_luminance(palette_xterm_rgb(idx[k]));
                if (d && k > zero ? here >= before : here <= before)
                    fail_msg("%s scale %d: step %d (xterm %d, %.3f) against step %d (xterm %d, "
                             "%.3f)",
                             d ? "diverging" : "sequential", sc, k, idx[k], here, k - 1, idx[k - 1],
                             before);
            }
        }
    assert_true(palette_luminance((struct palette_rgb){0, 0, 0}) == 0);
    assert_float_equal(palette_luminance((struct palette_rgb){255, 255, 255}), 1.0, 1e-9);
    struct palette_rgb first = palette_anchor_rgb(0, false, 0);
    assert_true(first.r == 68 && first.g == 1 && first.b == 84);
    assert_false(palette_text_dark(first));
    assert_true(palette_text_dark(palette_anchor_rgb(0, false, PALETTE_STEPS - 1)));
}

static void assert_hex(struct palette_rgb c, unsigned hex)
{
    unsigned got = (unsigned)c.r << 16 | (unsigned)c.g << 8 | c.b;
    if (got != hex)
        fail_msg("#%06x, expected #%06x", got, hex);
}

/* The true colours a picture draws, as matplotlib gives them: viridis(k / 255) is entry k of its
 * table exactly, positions between entries interpolate linearly (0.25 is 63.75 entries up);
 * no mid-low weight is a gray stand-in (#4e4e4e, #444444, #3a3a3a were the terminal's). Values
 * worked out from matplotlib 3.6's _cm_listed.py and _cm.py. */
static void test_true_colours(void **state)
{
    (void)state;
    assert_hex(palette_rgb_at(0, false, 0), 0x440154);
    assert_hex(palette_rgb_at(0, false, 64 / 255.0), 0x3b528b);
    assert_hex(palette_rgb_at(0, false, 128 / 255.0), 0x21918c);
    assert_hex(palette_rgb_at(0, false, 192 / 255.0), 0x5ec962);
    assert_hex(palette_rgb_at(0, false, 1), 0xfde725);
    assert_hex(palette_rgb_at(0, false, 0.25), 0x3b528b);
    assert_hex(palette_rgb_at(0, false, 0.5), 0x21908c);
    assert_hex(palette_rgb_at(0, false, 0.75), 0x5dc963);
    assert_hex(palette_rgb_at(0, false, 0.4776), 0x238b8d);
    assert_hex(palette_rgb_at(0, false, -1), 0x440154); /* clamped */
    assert_hex(palette_rgb_at(0, false, NAN), 0x440154);
    assert_hex(palette_rgb_at(0, false, 2), 0xfde725);
    for (int k = 0; k <= 100; k++) { /* viridis is never gray */
        struct palette_rgb c = palette_rgb_at(0, false, k / 100.0);
        assert_false(c.r == c.g && c.g == c.b);
    }
    assert_hex(palette_rgb_at(1, false, 0), 0x000004); /* magma */
    assert_hex(palette_rgb_at(1, false, 0.25), 0x50127c);
    assert_hex(palette_rgb_at(1, false, 0.5), 0xb63779);
    assert_hex(palette_rgb_at(1, false, 1), 0xfcfdbf);
    assert_hex(palette_rgb_at(2, false, 0), 0x1c1c1c); /* gray: a linear ramp */
    assert_hex(palette_rgb_at(2, false, 0.5), 0x858585);
    assert_hex(palette_rgb_at(2, false, 1), 0xeeeeee);
    assert_hex(palette_rgb_at(0, true, 0), 0x053061); /* blue-red: RdBu reversed */
    assert_hex(palette_rgb_at(0, true, 0.1), 0x2166ac);
    assert_hex(palette_rgb_at(0, true, 0.25), 0x6bacd1); /* half-way between classes 2 and 3 */
    assert_hex(palette_rgb_at(0, true, 0.5), 0xf7f7f7);
    assert_hex(palette_rgb_at(0, true, 0.9), 0xb2182b);
    assert_hex(palette_rgb_at(0, true, 1), 0x67001f);
    assert_hex(palette_rgb_at(1, true, 0), 0x40004b); /* purple-green: PRGn */
    assert_hex(palette_rgb_at(1, true, 0.5), 0xf7f7f7);
    assert_hex(palette_rgb_at(1, true, 1), 0x00441b);
    /* a step of the terminal's scale is the true colour at its position */
    assert_hex(palette_anchor_rgb(0, false, PALETTE_STEPS - 1), 0xfde725);
}

static void test_positions(void **state)
{
    (void)state;
    assert_float_equal(palette_position(0.25f, 0, 1, false), 0.25, 1e-7);
    assert_float_equal(palette_position(2, 0, 1, false), 1, 0);     /* clamped */
    assert_float_equal(palette_position(NAN, 0, 1, false), 0, 0);   /* NaN at the bottom */
    assert_float_equal(palette_position(1, 1, 1, false), 0.5, 0);   /* a flat matrix: the middle */
    assert_float_equal(palette_position(-1, -1, 0.5f, true), 0, 0); /* diverging around 0 */
    assert_float_equal(palette_position(0, -1, 0.5f, true), 0.5, 0);
    assert_float_equal(palette_position(0.5f, -1, 0.5f, true), 0.75, 1e-7);
    assert_int_equal(palette_step(0), 0);
    assert_int_equal(palette_step(1), PALETTE_STEPS - 1);
    assert_int_equal(palette_step(0.5), 12);
}

static void test_maps(void **state)
{
    (void)state;
    struct palette_map m;
    palette_map_init(&m, SCALE_BY_LOG, 0, 1);
    assert_int_equal(m.mode, SCALE_BY_LOG);
    assert_string_equal(palette_map_label(&m, SCALE_BY_LOG), "log scale");
    assert_float_equal(palette_map_position(&m, 1, 0, 0), 1, 1e-6);
    assert_float_equal(palette_map_position(&m, 0.01f, 0, 0), 0.5, 1e-6); /* 2 of 4 decades */
    assert_float_equal(palette_map_position(&m, 0, 0, 0), 0, 1e-6);       /* the floor */
    palette_map_init(&m, SCALE_BY_LOG, -2, 1); /* signed: no log, and the legend says so */
    assert_int_equal(m.mode, SCALE_BY_MATRIX);
    assert_true(m.diverging);
    assert_string_equal(palette_map_label(&m, SCALE_BY_LOG), "log: signed, linear");
    palette_map_init(&m, SCALE_BY_ROW, 0, 1);
    float row[4] = {0.1f, -INFINITY, 0.3f, 0.2f}, lo, hi;
    palette_row_range(&lo, &hi, row, 4);
    assert_float_equal(lo, 0.1f, 0);
    assert_float_equal(hi, 0.3f, 0);
    assert_float_equal(palette_map_position(&m, 0.2f, lo, hi), 0.5, 1e-6);
    assert_string_equal(palette_map_label(&m, SCALE_BY_ROW), "row scale");
    palette_map_init(&m, SCALE_BY_MATRIX, 0, 1);
    assert_null(palette_map_label(&m, SCALE_BY_MATRIX));
    assert_int_equal(palette_scale_parse("row"), SCALE_BY_ROW);
    assert_int_equal(palette_scale_parse("rows"), -1);
    assert_string_equal(palette_scale_name(SCALE_BY_LOG), "log");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_true_colours), cmocka_unit_test(test_xterm_rgb),
        cmocka_unit_test(test_scale_steps),  cmocka_unit_test(test_positions),
        cmocka_unit_test(test_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
