/* cnum: numbers as text in the C locale (see cnum.h).
 *
 * printf and strtod follow the thread's LC_NUMERIC, so each call switches this thread to a
 * cached "C" locale with uselocale() and back: cheap (a pointer swap), and correct whatever
 * the program's global locale is.
 */
#include "common/cnum.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static locale_t c_locale(void)
{
    static locale_t c;
    if (!c)
        c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    return c;
}

/* Runs between enter and leave in the C locale; without one (newlocale failed, which glibc
 * never does for "C") the global locale is used. */
static locale_t enter(void)
{
    locale_t c = c_locale();
    return c ? uselocale(c) : (locale_t)0;
}

static void leave(locale_t old)
{
    if (old)
        uselocale(old);
}

int attn_cnum_vformat(char *out, size_t size, const char *fmt, va_list ap)
{
    locale_t old = enter();
    int n = vsnprintf(out, size, fmt, ap);
    leave(old);
    return n;
}

int attn_cnum_format(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = attn_cnum_vformat(out, size, fmt, ap);
    va_end(ap);
    return n;
}

int attn_cnum_fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    locale_t old = enter();
    int n = vfprintf(f, fmt, ap);
    leave(old);
    va_end(ap);
    return n;
}

int attn_cnum_format_float_ref(char *out, size_t size, float x)
{
    if (isnan(x))
        return snprintf(out, size, "nan");
    if (isinf(x))
        return snprintf(out, size, x < 0 ? "-inf" : "inf");
    if (x == 0.0f) /* as %g writes them; half of a causal matrix, so worth the shortcut */
        return snprintf(out, size, signbit(x) ? "-0" : "0");
    locale_t old = enter();
    char buf[32];
    /* Literal precisions: glibc sends "%.*g" down its slow positional path. */
    static const char *const shortest[] = {"%.6g", "%.7g", "%.8g"};
    for (int k = 0; k < 3; k++) {
        snprintf(buf, sizeof(buf), shortest[k], (double)x);
        /* Read back both ways readers do: decimal -> double -> float32 (Python, NumPy, torch)
           and decimal -> float32 rounded once (strtof, Rust, Go). They differ for a decimal
           within a double's half ulp of the midpoint between two floats (0x15ae43fe's
           "7.038531e-26" reads back as its neighbour through strtof): such a text is not
           taken, %.8g or %.9g is. */
        float back = (float)strtod(buf, NULL), back_f = strtof(buf, NULL);
        if (memcmp(&back, &x, sizeof(x)) == 0 && memcmp(&back_f, &x, sizeof(x)) == 0)
            goto done;
    }
    snprintf(buf, sizeof(buf), "%.9g", (double)x); /* always round-trips a float32 */
done:
    leave(old);
    return snprintf(out, size, "%s", buf);
}

int attn_cnum_format_double(char *out, size_t size, double x)
{
    if (isnan(x))
        return snprintf(out, size, "nan");
    if (isinf(x))
        return snprintf(out, size, x < 0 ? "-inf" : "inf");
    locale_t old = enter();
    char buf[40];
    snprintf(buf, sizeof(buf), "%.15g", x);
    double back = strtod(buf, NULL);
    if (memcmp(&back, &x, sizeof(x)) != 0)
        snprintf(buf, sizeof(buf), "%.17g", x);
    leave(old);
    return snprintf(out, size, "%s", buf);
}

/* The decimal form of cnum.h; the only characters strtod will then see. */
static bool number_form(const char *p)
{
    if (*p == '+' || *p == '-')
        p++;
    bool digits = false;
    while (isdigit((unsigned char)*p)) {
        p++;
        digits = true;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            p++;
            digits = true;
        }
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

static bool non_finite_name(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    return strcasecmp(s, ".inf") == 0 || strcasecmp(s, "inf") == 0 ||
           strcasecmp(s, "infinity") == 0 || strcasecmp(s, ".nan") == 0 ||
           strcasecmp(s, "nan") == 0;
}

enum cnum_result attn_cnum_parse_double(const char *s, bool decimal_comma, double *out)
{
    char buf[128];
    const char *comma = decimal_comma ? strchr(s, ',') : NULL;
    if (comma) {
        /* One comma and no point: "0,5" is 0.5 as a German keyboard types it. */
        size_t n = strlen(s);
        if (strchr(s, '.') || strchr(comma + 1, ',') || n >= sizeof(buf))
            return CNUM_NOT_NUMBER;
        memcpy(buf, s, n + 1);
        buf[comma - s] = '.';
        s = buf;
    }
    if (non_finite_name(s))
        return CNUM_NOT_FINITE;
    if (!number_form(s))
        return CNUM_NOT_NUMBER;
    locale_t old = enter();
    char *end;
    double v = strtod(s, &end);
    leave(old);
    if (*end)
        return CNUM_NOT_NUMBER;
    if (!isfinite(v))
        return CNUM_NOT_FINITE;
    *out = v;
    return CNUM_OK;
}

enum cnum_result attn_cnum_parse_u64(const char *s, uint64_t *out, bool *negative)
{
    const char *p = s;
    *negative = false;
    if (*p == '+' || *p == '-')
        *negative = *p++ == '-';
    if (!isdigit((unsigned char)*p))
        return CNUM_NOT_NUMBER;
    uint64_t v = 0;
    bool over = false;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (*p)
        return CNUM_NOT_NUMBER;
    *out = v;
    return over ? CNUM_RANGE : CNUM_OK;
}

enum cnum_result attn_cnum_parse_ll(const char *s, long long *out)
{
    uint64_t u;
    bool neg;
    enum cnum_result r = attn_cnum_parse_u64(s, &u, &neg);
    if (r != CNUM_OK)
        return r;
    if (u > (uint64_t)LLONG_MAX + (neg ? 1u : 0u))
        return CNUM_RANGE;
    *out = neg ? (long long)(0 - u) : (long long)u;
    return CNUM_OK;
}
