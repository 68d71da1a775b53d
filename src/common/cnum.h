/* cnum: numbers as text, always in the C locale.
 *
 * Scene files, CSV, the explorer's prompts, configuration and every number on screen use '.'
 * as the decimal point whatever LC_ALL says: a German workshop machine must export the same
 * CSV as the teacher's. Every number attnscope writes or parses goes through here; nothing
 * else calls printf's %f/%g/%e or strtod on numbers.
 */
#ifndef ATTNSCOPE_CNUM_H
#define ATTNSCOPE_CNUM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* snprintf / vsnprintf / fprintf in the C locale. */
int attn_cnum_format(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int attn_cnum_vformat(char *out, size_t size, const char *fmt, va_list ap);
int attn_cnum_fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The shortest of %.6g .. %.9g that reads back to the same float32 bits through strtof and
 * through strtod then a cast (inf, -inf and nan as
 * "inf", "-inf", "nan"). Returns the length, like snprintf. No printf: see cnum_float.c. */
int attn_cnum_format_float(char *out, size_t size, float x);
/* The same text into out without a terminating NUL, for writers that fill a buffer: at most
 * CNUM_FLOAT_MAX - 1 characters ("-1.17549435e-38"). Returns the length. out must have room
 * for CNUM_FLOAT_MAX bytes: the fast path stores them all at once (the bytes past the length
 * are scratch). */
#define CNUM_FLOAT_MAX 16
int attn_cnum_float_text(char *out, float x);
/* The fast path alone: the length, or -1 for the few floats (about one in a million) whose text
 * it leaves to the reference. For the exhaustive check (bench/float_exhaustive) and the tests. */
int attn_cnum_float_text_fast(char *out, float x);
/* The reference: the snprintf("%.Ng") / strtod loop that defines the text, the naive twin. */
int attn_cnum_format_float_ref(char *out, size_t size, float x);
/* The same for a double: the shortest of %.15g and %.17g that reads back exactly. */
int attn_cnum_format_double(char *out, size_t size, double x);

enum cnum_result {
    CNUM_OK,
    CNUM_NOT_NUMBER, /* not a decimal number as a whole */
    CNUM_NOT_FINITE, /* inf, nan, or too large for a double (1e400) */
    CNUM_RANGE,      /* an integer that does not fit */
};

/* A decimal number as a whole string: [-+]? ( .d+ | d+ ( .d* )? ) ( [eE] [-+]? d+ )?, read as
 * Python reads it (correctly rounded). No hex, no blanks, no locale. "inf"/"nan" spellings give
 * CNUM_NOT_FINITE; when decimal_comma is set, one ',' may stand for the '.' (a typed "0,5"). */
enum cnum_result attn_cnum_parse_double(const char *s, bool decimal_comma, double *out);
/* A decimal integer [-+]?d+; *negative tells the sign (so "-0" is allowed for seeds). */
enum cnum_result attn_cnum_parse_u64(const char *s, uint64_t *out, bool *negative);
enum cnum_result attn_cnum_parse_ll(const char *s, long long *out);

#endif
