/* hftok_regex: the tokenizers library's regexes (Oniguruma, Ruby syntax) run by PCRE2.
 *
 * Most of a tokenizer.json pattern means the same to both engines: \p{L}, \p{N}, (?i:...),
 * lookahead, possessive quantifiers (a*+) and atomic groups ((?>...)). What differs is
 * rewritten here, and what has no PCRE2 spelling is refused by name:
 *   \s \S     Oniguruma: U+0009-000D, U+0085 and the Z categories, which is White_Space; PCRE2's
 *             misses U+0085. Spelled out as a class (\S inside a class is refused).
 *   \w \W     Oniguruma: Alphabetic, M, Nd and Pc and, below U+0100, also No
 *             (its ISO-8859-1 table: ² ³ ¹ ¼ ½ ¾); PCRE2 10.42: L, N and _. Spelled out.
 *   \h \H     Oniguruma: a hexadecimal digit; PCRE2: horizontal space. Spelled out.
 *   \v        Oniguruma: U+000B; PCRE2: vertical space. \x{0B}.
 *   \uHHHH    \x{HHHH}.
 *   {,n}      Oniguruma: {0,n}; PCRE2 10.42: the literal text.
 *   (?m)      Ruby: "." matches a newline, PCRE2's (?s).
 *   ^ $       Ruby: at every line; PCRE2_MULTILINE.
 * Refused: {n,m}+ (Ruby: a repeated interval; PCRE2: possessive), class intersection &&, nested
 * classes, the absent operator (?~...), \y \Y, and options other than i, m, x.
 * The Unicode tables are PCRE2's own (Unicode 14 in 10.42): a letter assigned since is "other"
 * here and a letter to the library's Oniguruma.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/uchar.h>

#include "common/utf8.h"
#include "pretrained/hftok_int.h"

#define WS                                                                                         \
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"    \
    "\\x{205F}\\x{3000}"
/* Oniguruma's word: Alphabetic, M, Nd and Pc, and below U+0100 its ISO-8859-1 table,
 * which also counts the digits of category No there (latin1_numbers, from ICU) */
#define WORD "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}"
#define HEX  "0-9a-fA-F"

struct out {
    char *s;
    size_t n, cap;
    int failed;
};

static void emit(struct out *o, const char *p, size_t len)
{
    if (o->failed)
        return;
    if (o->n + len + 1 > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        while (cap < o->n + len + 1)
            cap *= 2;
        char *s = realloc(o->s, cap);
        if (!s) {
            o->failed = 1;
            return;
        }
        o->s = s;
        o->cap = cap;
    }
    memcpy(o->s + o->n, p, len);
    o->n += len;
    o->s[o->n] = '\0';
}

static void emits(struct out *o, const char *s)
{
    emit(o, s, strlen(s));
}

/* The Latin-1 characters of category No, asked of ICU: Oniguruma's \\w takes them. */
static void latin1_numbers(struct out *o)
{
    for (UChar32 c = 0x80; c < 0x100; c++)
        if (u_charType(c) == U_OTHER_NUMBER) {
            char buf[16];
            snprintf(buf, sizeof(buf), "\\x{%X}", (unsigned)c);
            emits(o, buf);
        }
}

static void word(struct out *o, bool in_class, bool negated)
{
    if (!in_class)
        emits(o, negated ? "[^" : "[");
    emits(o, WORD);
    latin1_numbers(o);
    if (!in_class)
        emits(o, "]");
}

static int refuse(struct diag *err, size_t at, const char *what)
{
    return attn_diag_set(err, "", "%s (at character %zu of the pattern) has no PCRE2 equivalent",
                         what, at + 1);
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Rewrites pattern into o (see the top of the file). */
static int translate(struct out *o, const char *p, size_t len, struct diag *err)
{
    bool in_class = false, class_negated = false;
    size_t class_start = 0;
    for (size_t i = 0; i < len;) {
        char c = p[i];
        if (c == '\\') {
            if (i + 1 >= len)
                return attn_diag_set(err, "", "the pattern ends with a lone backslash");
            char e = p[i + 1];
            switch (e) {
            case 's':
                emits(o, in_class ? WS : "[" WS "]");
                i += 2;
                continue;
            case 'S':
                if (in_class)
                    return refuse(err, i, "\\S inside a character class");
                emits(o, "[^" WS "]");
                i += 2;
                continue;
            case 'w':
                word(o, in_class, false);
                i += 2;
                continue;
            case 'W':
                if (in_class)
                    return refuse(err, i, "\\W inside a character class");
                word(o, false, true);
                i += 2;
                continue;
            case 'h':
                emits(o, in_class ? HEX : "[" HEX "]");
                i += 2;
                continue;
            case 'H':
                if (in_class)
                    return refuse(err, i, "\\H inside a character class");
                emits(o, "[^" HEX "]");
                i += 2;
                continue;
            case 'v':
                emits(o, "\\x{0B}");
                i += 2;
                continue;
            case 'y':
            case 'Y':
                return refuse(err, i, "a text segment boundary \\y or \\Y");
            case 'u': {
                size_t k = 0;
                while (k < 4 && i + 2 + k < len && strchr("0123456789abcdefABCDEF", p[i + 2 + k]) &&
                       p[i + 2 + k])
                    k++;
                if (k != 4)
                    return attn_diag_set(err, "", "\\u at character %zu needs four hex digits",
                                         i + 1);
                emits(o, "\\x{");
                emit(o, p + i + 2, 4);
                emits(o, "}");
                i += 6;
                continue;
            }
            default: {
                /* copy the escape with its whole character (an escaped non-ASCII letter), and
                 * its {...} argument (\p{L}, \x{2581}) */
                uint32_t cp;
                int k = attn_utf8_decode(p + i + 1, &cp);
                if (k <= 0)
                    k = 1;
                size_t end = i + 1 + (size_t)k;
                if (((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) && end < len &&
                    p[end] == '{') {
                    const char *close = memchr(p + end, '}', len - end);
                    if (close)
                        end = (size_t)(close - p) + 1;
                }
                emit(o, p + i, end - i);
                i = end;
                continue;
            }
            }
        }
        if (in_class) {
            if (c == '[') {
                if (i + 1 < len && p[i + 1] == ':') { /* a POSIX class [:alpha:] */
                    const char *end = NULL;
                    for (size_t k = i + 2; k + 1 < len; k++)
                        if (p[k] == ':' && p[k + 1] == ']') {
                            end = p + k + 2;
                            break;
                        }
                    if (end) {
                        emit(o, p + i, (size_t)(end - (p + i)));
                        i = (size_t)(end - p);
                        continue;
                    }
                }
                return refuse(err, i, "a nested character class");
            }
            if (c == '&' && i + 1 < len && p[i + 1] == '&')
                return refuse(err, i, "class intersection &&");
            if (c == ']' && i > class_start + 1 + (class_negated ? 1 : 0)) {
                in_class = false;
                emit(o, p + i, 1);
                i++;
                continue;
            }
            emit(o, p + i, 1);
            i++;
            continue;
        }
        if (c == '[') {
            in_class = true;
            class_start = i;
            class_negated = i + 1 < len && p[i + 1] == '^';
            emit(o, p + i, class_negated ? 2 : 1);
            i += class_negated ? 2 : 1;
            /* a ']' right after '[' or '[^' is a literal in both engines */
            if (i < len && p[i] == ']') {
                emit(o, "\\]", 2);
                i++;
            }
            continue;
        }
        if (c == '(' && i + 1 < len && p[i + 1] == '?') {
            size_t k = i + 2;
            if (k < len && p[k] == '~')
                return refuse(err, i, "the absent operator (?~...)");
            if (k < len && (p[k] == 'i' || p[k] == 'm' || p[k] == 'x' || p[k] == '-')) {
                /* options: (?imx-imx) or (?imx-imx:...) */
                emits(o, "(?");
                for (; k < len && p[k] != ')' && p[k] != ':'; k++) {
                    char f = p[k];
                    if (f == 'm')
                        emits(o, "s");
                    else if (f == 'i' || f == 'x' || f == '-')
                        emit(o, &f, 1);
                    else {
                        char what[64];
                        snprintf(what, sizeof(what), "the option '%c' in (?%c...)", f, f);
                        return refuse(err, k, what);
                    }
                }
                i = k;
                continue;
            }
            emit(o, p + i, 2);
            i += 2;
            continue;
        }
        if (c == '{') {
            /* {n}, {n,}, {n,m}, {,m}: an interval only when it has that shape */
            size_t k = i + 1;
            while (k < len && is_digit(p[k]))
                k++;
            bool lower = k > i + 1, comma = false, upper = false;
            if (k < len && p[k] == ',') {
                comma = true;
                k++;
                size_t u = k;
                while (k < len && is_digit(p[k]))
                    k++;
                upper = k > u;
            }
            if (k < len && p[k] == '}' && (lower || upper)) {
                if (k + 1 < len && p[k + 1] == '+')
                    return refuse(err, i,
                                  "an interval followed by + ({n,m}+: repeated in "
                                  "Oniguruma, possessive in PCRE2)");
                if (!lower && comma) { /* {,m} */
                    emits(o, "{0");
                    emit(o, p + i + 1, k + 1 - (i + 1));
                } else {
                    emit(o, p + i, k + 1 - i);
                }
                i = k + 1;
                continue;
            }
            emits(o, "\\{"); /* a literal brace to Oniguruma */
            i++;
            continue;
        }
        emit(o, p + i, 1);
        i++;
    }
    if (in_class)
        return attn_diag_set(err, "", "a character class is not closed");
    return 0;
}

static void literal(struct out *o, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x80 &&
            !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
            char buf[16];
            snprintf(buf, sizeof(buf), "\\x{%X}", c);
            emits(o, buf);
        } else {
            emit(o, p + i, 1);
        }
    }
}

pcre2_code *attn_hf_regex_compile(const char *pattern, size_t len, bool lit, struct diag *err)
{
    struct out o = {0};
    emits(&o, "");
    if (lit)
        literal(&o, pattern, len);
    else if (translate(&o, pattern, len, err) != 0) {
        free(o.s);
        return NULL;
    }
    if (o.failed || !o.s) {
        free(o.s);
        attn_diag_set(err, "", "out of memory (a regex of %zu bytes)", len);
        return NULL;
    }
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)o.s, o.n, PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE,
                                   &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        /* at is an offset in the rewritten pattern; it equals the original's until the first
         * rewrite, which is where most mistakes are anyway */
        attn_diag_set(err, "", "PCRE2 refuses the regex: %s (near character %zu)",
                      (const char *)msg, (size_t)at + 1);
        free(o.s);
        return NULL;
    }
    free(o.s);
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: the interpreter gives the same */
    return re;
}

int attn_hf_regex_each(const pcre2_code *re, const char *s, size_t len,
                       int (*fn)(void *ctx, size_t start, size_t end), void *ctx, struct diag *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!md || !mc) {
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        return attn_diag_set(err, "", "out of memory (PCRE2 match data)");
    }
    /* a pattern that backtracks without end is an error, not a hang */
    pcre2_set_match_limit(mc, 10000000);
    pcre2_set_depth_limit(mc, 100000);
    int rc = 0;
    size_t at = 0;
    bool have_last = false;
    size_t last_end = 0;
    uint32_t check = 0;
    while (at <= len) {
        int m = pcre2_match(re, (PCRE2_SPTR)s, len, at, check, md, mc);
        check = PCRE2_NO_UTF_CHECK;
        if (m == PCRE2_ERROR_NOMATCH)
            break;
        if (m < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(m, msg, sizeof(msg));
            rc = attn_diag_set(err, "", "the regex fails at byte %zu: %s", at, (const char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me < ms) { /* \K moved the start past the end: take it as empty */
            ms = me;
        }
        if (ms == me && have_last && last_end == me) {
            /* the onig crate skips an empty match right after the previous one */
            if (at >= len)
                break;
            uint32_t cp;
            int k = attn_utf8_decode(s + at, &cp);
            at += k > 0 ? (size_t)k : 1;
            continue;
        }
        if (fn(ctx, ms, me) != 0) {
            rc = -1;
            break;
        }
        have_last = true;
        last_end = me;
        at = me;
    }
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    return rc;
}
