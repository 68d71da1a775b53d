/* test_common: src/common's numbers-as-text (cnum), under a comma-decimal locale, and the
 * escapes of text a human reads (utf8).
 *
 * Every number attnscope writes or parses goes through cnum, so these run with LC_ALL set to a
 * locale whose decimal point is ',' (generated when the system has none): a plain snprintf
 * would write "0,5000" there, cnum must write "0.5000".
 */
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/cnum.h"
#include "common/diag.h"
#include "common/npy.h"
#include "common/progress.h"
#include "common/utf8.h"
#include "testutil.h"

static int comma_setup(void **state)
{
    (void)state;
    if (!setlocale(LC_ALL, tu_comma_locale()))
        return -1;
    /* The premise: this locale really writes commas. */
    char probe[16];
    snprintf(probe, sizeof(probe), "%.1f", 0.5);
    return strcmp(probe, "0,5") == 0 ? 0 : -1;
}

static int comma_teardown(void **state)
{
    (void)state;
    setlocale(LC_ALL, "C");
    return 0;
}

static void test_format(void **state)
{
    (void)state;
    char buf[64];
    attn_cnum_format(buf, sizeof(buf), "%.4f|%g|%.0e", 0.47758853, 0.5, 1e-7);
    assert_string_equal(buf, "0.4776|0.5|1e-07");
    attn_cnum_format_float(buf, sizeof(buf), 0.47758853f);
    assert_string_equal(buf, "0.47758853");
    attn_cnum_format_float(buf, sizeof(buf), 0.1f);
    assert_string_equal(buf, "0.1");
    attn_cnum_format_float(buf, sizeof(buf), -INFINITY);
    assert_string_equal(buf, "-inf");
    attn_cnum_format_double(buf, sizeof(buf), 0.1);
    assert_string_equal(buf, "0.1");
    attn_cnum_format_double(buf, sizeof(buf), 1.0 / 3.0);
    assert_string_equal(buf, "0.33333333333333331");
    FILE *f = tmpfile();
    assert_non_null(f);
    attn_cnum_fprintf(f, "%.3f", 2.5);
    rewind(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "2.500");
}

/* One float: the fast text equals the reference's (the snprintf/strtod loop) byte for byte and
 * reads back through strtof to the same bits. Returns whether the fast path decided it. */
static bool check_float_text(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof(x));
    char fast[CNUM_FLOAT_MAX + 1], want[32], full[32];
    int n = attn_cnum_float_text_fast(fast, x);
    attn_cnum_format_float_ref(want, sizeof(want), x);
    int len = attn_cnum_format_float(full, sizeof(full), x);
    if (strcmp(full, want) != 0 || len != (int)strlen(want))
        fail_msg("0x%08x: \"%s\", the reference \"%s\"", bits, full, want);
    if (n >= 0) {
        assert_true(n < CNUM_FLOAT_MAX);
        fast[n] = '\0';
        if (strcmp(fast, want) != 0)
            fail_msg("0x%08x: fast path \"%s\", the reference \"%s\"", bits, fast, want);
    }
    float back = strtof(full, NULL); /* under the comma locale: only "nan"/"inf"/digits reach it */
    uint32_t bb;
    memcpy(&bb, &back, sizeof(bb));
    if (isnan(x) ? !isnan(back) : bb != bits)
        fail_msg("0x%08x printed as %s reads back as 0x%08x", bits, full, bb);
    return n >= 0;
}

static uint32_t float_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

/* The shortest text of a float32 (cnum_float.c): the edge cases, then a large random sample
 * (bench/float_exhaustive checks all 2^32 patterns, too slow for every run). */
static void test_float_text(void **state)
{
    (void)state;
    setlocale(LC_ALL, "C"); /* strtof below reads the C locale's point */
    static const struct {
        float x;
        const char *text;
    } known[] = {
        {0.0f, "0"},
        {-0.0f, "-0"},
        {INFINITY, "inf"},
        {-INFINITY, "-inf"},
        {0.1f, "0.1"},
        {0.5f, "0.5"},
        {1.0f / 3.0f, "0.33333334"},
        {0.100246795f, "0.100246795"},
        {16777216.0f, "16777216"},
        {16777218.0f, "16777218"},
        {33554436.0f, "33554436"}, /* 33554440 is the midpoint above, and 4 is even: no */
        {1e-10f, "1e-10"},
        {1e6f, "1e+06"}, /* %.6g switches to e-style at 10^6 */
        {123456.0f, "123456"},
        {1234567.0f, "1234567"},
        {0.0001f, "0.0001"},
        {0.00001f, "1e-05"},
        {0.001953125f, "0.001953125"}, /* 2^-9: %.6g and %.7g round an exact tie to even */
        {3.40282347e38f, "3.4028235e+38"},
        {1.17549435e-38f, "1.1754944e-38"},
        {1e-45f, "1.4013e-45"},
        {-2.5e-7f, "-2.5e-07"},
        {9.9999999e8f, "1e+09"},
        {1e9f, "1e+09"},
        {1e10f, "1e+10"},
        {1e38f, "1e+38"},
    };
    /* %.7g's "7.038531e-26" reads back as this float through strtod and a cast, but as its
       neighbour below through strtof: the text must do both (bench/float_exhaustive found it). */
    char near_tie[32];
    const uint32_t near_bits = 0x15ae43feu;
    float near_x;
    memcpy(&near_x, &near_bits, sizeof(near_x));
    attn_cnum_format_float(near_tie, sizeof(near_tie), near_x);
    assert_string_equal(near_tie, "7.0385313e-26");
    check_float_text(0x15ae43feu);
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        char buf[32];
        attn_cnum_format_float(buf, sizeof(buf), known[i].x);
        if (strcmp(buf, known[i].text) != 0)
            fail_msg("%a: \"%s\", not \"%s\"", (double)known[i].x, buf, known[i].text);
        check_float_text(float_bits(known[i].x));
    }
    char buf[32];
    assert_int_equal(attn_cnum_format_float(buf, 4, -1.5f), 4); /* cut like snprintf */
    assert_string_equal(buf, "-1.");
    assert_true(isnan(NAN));
    for (uint32_t nan = 0x7fc00000u; nan != 0x7fc00010u; nan++) {
        check_float_text(nan);
        check_float_text(nan | 0x80000000u);
    }
    check_float_text(0x7f800001u); /* a signalling nan */
    /* Edges: every subnormal near 0 and near the smallest normal; the extremes; every power of
       ten and of two, with their neighbours. */
    for (uint32_t b = 0; b < 4096; b++) {
        check_float_text(b);
        check_float_text(0x00800000u - 2048u + b);
        check_float_text(0x80000000u | b);
    }
    static const uint32_t ends[] = {0x7f7fffffu, 0x7f7ffffeu, 0x00800000u, 0x00800001u,
                                    0x007fffffu, 0x00000001u, 0xff7fffffu, 0x80000001u};
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
        check_float_text(ends[i]);
    for (int e = -45; e <= 38; e++) {
        char text[16];
        snprintf(text, sizeof(text), "1e%d", e);
        uint32_t b = float_bits(strtof(text, NULL));
        for (uint32_t k = b - 3; k != b + 4; k++)
            check_float_text(k);
    }
    for (uint32_t e = 0; e < 255; e++)
        for (uint32_t k = 0; k < 5; k++) {
            check_float_text((e << 23) + k - 2);
            check_float_text(e << 23 | 0x2000u << k); /* short exact decimals: ties */
        }
    /* Integers and halves: exact decimals, ties at every precision. */
    for (uint32_t i = 0; i < 20000; i++) {
        check_float_text(float_bits((float)i + 0.5f));
        check_float_text(float_bits((float)(i * 1048573u)));
    }
    /* A million random patterns; the fast path decides nearly every one. */
    uint64_t s = 0x9E3779B97F4A7C15u;
    long fast = 0, n = 1 << 20;
    for (long i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        fast += check_float_text((uint32_t)(s >> 16));
    }
    assert_true(fast >= n - 10);
    setlocale(LC_ALL, tu_comma_locale());
}

static void test_parse_double(void **state)
{
    (void)state;
    double v = 0;
    assert_int_equal(attn_cnum_parse_double("0.5", false, &v), CNUM_OK);
    assert_true(v == 0.5);
    assert_int_equal(attn_cnum_parse_double("-.25e1", false, &v), CNUM_OK);
    assert_true(v == -2.5);
    assert_int_equal(attn_cnum_parse_double("0,5", false, &v), CNUM_NOT_NUMBER);
    assert_int_equal(attn_cnum_parse_double("0,5", true, &v), CNUM_OK);
    assert_true(v == 0.5);
    assert_int_equal(attn_cnum_parse_double("1,024.5", true, &v), CNUM_NOT_NUMBER);
    assert_int_equal(attn_cnum_parse_double("1,0,2", true, &v), CNUM_NOT_NUMBER);
    static const char *const not_numbers[] = {"",  " 1", "1 ",   "0x10", "1e",
                                              ".", "+",  "1..2", "abc"};
    for (size_t i = 0; i < sizeof(not_numbers) / sizeof(not_numbers[0]); i++)
        assert_int_equal(attn_cnum_parse_double(not_numbers[i], true, &v), CNUM_NOT_NUMBER);
    static const char *const not_finite[] = {"inf", "-Infinity", ".nan", "NaN", "1e400"};
    for (size_t i = 0; i < sizeof(not_finite) / sizeof(not_finite[0]); i++)
        assert_int_equal(attn_cnum_parse_double(not_finite[i], false, &v), CNUM_NOT_FINITE);
    /* Correctly rounded, as Python reads it. */
    assert_int_equal(attn_cnum_parse_double("0.1", false, &v), CNUM_OK);
    assert_true(v == 0.1);
}

static void test_parse_integers(void **state)
{
    (void)state;
    uint64_t u;
    bool neg;
    assert_int_equal(attn_cnum_parse_u64("18446744073709551615", &u, &neg), CNUM_OK);
    assert_true(u == UINT64_MAX && !neg);
    assert_int_equal(attn_cnum_parse_u64("18446744073709551616", &u, &neg), CNUM_RANGE);
    assert_int_equal(attn_cnum_parse_u64("-0", &u, &neg), CNUM_OK);
    assert_true(u == 0 && neg);
    assert_int_equal(attn_cnum_parse_u64("1.0", &u, &neg), CNUM_NOT_NUMBER);
    long long ll;
    assert_int_equal(attn_cnum_parse_ll("-9223372036854775808", &ll), CNUM_OK);
    assert_true(ll == INT64_MIN);
    assert_int_equal(attn_cnum_parse_ll("9223372036854775808", &ll), CNUM_RANGE);
    assert_int_equal(attn_cnum_parse_ll("1 000", &ll), CNUM_NOT_NUMBER);
}

/* Not a terminal: no bar, and one line at the end of work that took over 200 ms, numbers in
 * the C locale (this test runs under a comma locale). A failed job says nothing. */
static void test_progress_line(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    struct progress p;
    attn_progress_begin(&p, f, "exporting", "files");
    struct progress_sink sink = {attn_progress_tick, &p, NULL};
    for (long i = 1; i <= 3; i++)
        progress_report(&sink, i, 3);
    nanosleep(&(struct timespec){0, 250 * 1000 * 1000}, NULL);
    fflush(f);
    assert_int_equal(len, 0); /* nothing while it runs */
    attn_progress_end(&p, true);
    fflush(f);
    const char *head = "attnscope: exporting: 3 files in ";
    assert_int_equal(strncmp(text, head, strlen(head)), 0);
    char num[32];
    assert_int_equal(sscanf(text + strlen(head), "%31[0-9.] s\n", num), 1);
    double secs = 0;
    assert_int_equal(attn_cnum_parse_double(num, false, &secs), CNUM_OK);
    assert_true(secs >= 0.2);
    attn_progress_begin(&p, f, "exporting", "files");
    nanosleep(&(struct timespec){0, 250 * 1000 * 1000}, NULL);
    size_t before = len;
    attn_progress_end(&p, false);
    fflush(f);
    assert_int_equal(len, before);
    fclose(f);
    free(text);
}

static void expect_escaped(const char *s, unsigned flags, const char *want)
{
    char out[256];
    attn_utf8_escape(out, sizeof(out), s, (size_t)-1, flags);
    assert_string_equal(out, want);
    assert_int_equal(attn_utf8_needs_escape(s, flags), strcmp(s, want) != 0);
    /* Escaping twice changes nothing. */
    char again[256];
    attn_utf8_escape(again, sizeof(again), out, (size_t)-1, flags);
    assert_string_equal(again, out);
}

/* Every control character, bidi control and bad byte gets the one spelling (utf8.h). */
static void test_escapes(void **state)
{
    (void)state;
    expect_escaped("plain caf\u00e9 \u65e5\u672c \\ ok", 0, "plain caf\u00e9 \u65e5\u672c \\ ok");
    expect_escaped("\x1b[2J\x1b]0;pwned\x07", 0, "\\e[2J\\e]0;pwned\\x07");
    expect_escaped("a\tb\nc\rd\x01\x7f", 0, "a\\tb\\nc\\rd\\x01\\x7f");
    expect_escaped("a\tb\nc", UTF8_ESC_KEEP_NEWLINE | UTF8_ESC_KEEP_TAB, "a\tb\nc");
    /* C1 controls, the bidi controls, the line and paragraph separators */
    expect_escaped("\xc2\x85\xc2\x9b", 0, "<U+0085><U+009B>");
    expect_escaped("x\u202ey\u202a\u2066\u2069\u200e\u200f\u061c\u2028\u2029", 0,
                   "x<U+202E>y<U+202A><U+2066><U+2069><U+200E><U+200F><U+061C><U+2028><U+2029>");
    /* the zero-width characters that show nothing: a byte order mark read as text */
    expect_escaped("\xef\xbb\xbf{\u200b\u2060\u200d}", 0, "<U+FEFF>{<U+200B><U+2060>\u200d}");
    /* Not UTF-8: each byte; an overlong NUL; a lone continuation byte; a cut character */
    expect_escaped("\xff\xc0\x80\x80z\xe2\x80", 0, "\\xff\\xc0\\x80\\x80z\\xe2\\x80");
    /* A NUL inside the length given is shown too. */
    char out[64];
    attn_utf8_escape(out, sizeof(out), "a\0b", 3, 0);
    assert_string_equal(out, "a\\x00b");
    /* Cut to fit after a whole character or escape, with "…". */
    attn_utf8_escape(out, 12, "\x1b\x1b\x1b\x1b\x1b\x1b", (size_t)-1, 0);
    assert_string_equal(out, "\\e\\e\\e\\e\u2026");
    attn_utf8_escape(out, 8, "\u65e5\u672c\u65e5", (size_t)-1, 0);
    assert_string_equal(out, "\u65e5\u2026");
    /* Tokens as the explorer labels them: blanks as glyphs, the rest escaped. */
    attn_utf8_visible_token(out, sizeof(out), " a\tb\n\x1b\u202e");
    assert_string_equal(out, "\u2423a\u21e5b\u21b5\\e<U+202E>");
}

/* attn_diag_print: the message, the file name and the line under the caret all escaped, the caret
 * under the column the escapes moved it to. */
static void test_diag_print_escapes(void **state)
{
    (void)state;
    struct diag d;
    attn_diag_clear(&d);
    snprintf(d.file, sizeof(d.file), "f\x1b.yaml");
    d.line = 2;
    d.col = 15; /* the k: byte 14 of the line */
    snprintf(d.msg, sizeof(d.msg), "unknown key 'k\u202e' \x07");
    const char src[] = "a: 1\nt: \"\x1b[31m\u202e\" k: 2\n";
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    attn_diag_print(f, &d, src, sizeof(src) - 1);
    fclose(f);
    assert_string_equal(buf, "f\\e.yaml:2:15: unknown key 'k<U+202E>' \\x07\n"
                             "  t: \"\\e[31m<U+202E>\" k: 2\n"
                             "  "
                             "                    ^\n");
    free(buf);
}

/* The npy writer's one writev (header and rows straight from the buffer, past stdio): a window
 * on a wider buffer gives its rows only, whole matrices and empty ones their exact bytes, and
 * what the stream held before and gets after stays in order around it. */
static void npy_file(const float *data, size_t rows, size_t cols, size_t stride, char **out,
                     size_t *len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs("pre", f); /* buffered in stdio: must reach the file first */
    assert_int_equal(attn_npy_write_f32_matrix(f, data, rows, cols, stride), 0);
    fputs("post", f);
    assert_int_equal(fflush(f), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    *out = malloc((size_t)n);
    assert_non_null(*out);
    assert_int_equal(fread(*out, 1, (size_t)n, f), (size_t)n);
    *len = (size_t)n;
    fclose(f);
}

static void test_npy_write_window(void **state)
{
    (void)state;
    float buf[12];
    for (int i = 0; i < 12; i++)
        buf[i] = (float)i + 0.5f;
    char *t;
    size_t len;
    /* rows 0..2, columns 1..2 of a 3 x 4 buffer */
    npy_file(buf + 1, 3, 2, 4, &t, &len);
    assert_memory_equal(t, "pre\x93NUMPY\x01\x00", 11);
    size_t hlen = (size_t)(unsigned char)t[11] | (size_t)(unsigned char)t[12] << 8;
    size_t data = 3 + 10 + hlen;
    assert_int_equal((10 + hlen) % 64, 0);
    assert_int_equal(t[data - 1], '\n');
    assert_non_null(strstr(t + 13, "'shape': (3, 2), }"));
    assert_int_equal(len, data + 6 * sizeof(float) + 4);
    const float want[6] = {1.5f, 2.5f, 5.5f, 6.5f, 9.5f, 10.5f};
    assert_memory_equal(t + data, want, sizeof(want)); /* little-endian hosts */
    assert_memory_equal(t + data + sizeof(want), "post", 4);
    free(t);
    /* a whole matrix (stride = cols): the 12 values as they are */
    npy_file(buf, 3, 4, 4, &t, &len);
    hlen = (size_t)(unsigned char)t[11] | (size_t)(unsigned char)t[12] << 8;
    assert_int_equal(len, 3 + 10 + hlen + sizeof(buf) + 4);
    assert_memory_equal(t + 13 + hlen, buf, sizeof(buf));
    free(t);
    /* no rows: the header alone */
    npy_file(buf, 0, 4, 4, &t, &len);
    hlen = (size_t)(unsigned char)t[11] | (size_t)(unsigned char)t[12] << 8;
    assert_non_null(strstr(t + 13, "'shape': (0, 4), }"));
    assert_int_equal(len, 3 + 10 + hlen + 4);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_float_text),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_parse_integers),
        cmocka_unit_test(test_progress_line),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_diag_print_escapes),
        cmocka_unit_test(test_npy_write_window),
    };
    return cmocka_run_group_tests(tests, comma_setup, comma_teardown);
}
