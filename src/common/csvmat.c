/* csvmat: reading a matrix from a CSV file (see csvmat.h).
 *
 * The file is read once, a byte at a time, one field at a time: only the numbers are kept, so a
 * large table costs its floats and one field's text. The first field decides the layout; the
 * first line decides how many fields every line has.
 */
#include "common/csvmat.h"
#include "common/utf8.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cnum.h"
#include "common/fsutil.h"

#define FIELD_MAX 65536 /* no number and no label anyone wrote is longer */

struct reader {
    FILE *f;
    const char *path;
    struct diag *err;
    int back[3], n_back; /* bytes given back after looking for a byte order mark */
    int line;            /* the line being read, 1-based */
    char *buf;           /* the field just read, NUL-terminated */
    size_t len, cap;
    bool quoted;    /* it was written in quotes */
    int field_line; /* the line it starts on */
};

/* How next_field stopped. */
enum end {
    END_FIELD, /* a comma: the line has another field */
    END_LINE,  /* a line break or the end of the file after the field */
    END_FILE,  /* the end of the file before any field of a new line */
    END_ERROR, /* err says why */
};

static int next_byte(struct reader *r)
{
    if (r->n_back > 0)
        return r->back[--r->n_back];
    return getc_unlocked(r->f);
}

static void skip_bom(struct reader *r)
{
    int a = next_byte(r);
    if (a != 0xEF) {
        r->back[r->n_back++] = a;
        return;
    }
    int b = next_byte(r), c = next_byte(r);
    if (b == 0xBB && c == 0xBF)
        return;
    r->back[r->n_back++] = c; /* not a mark: given back in reverse, read again in order */
    r->back[r->n_back++] = b;
    r->back[r->n_back++] = a;
}

static bool append(struct reader *r, int c, size_t field)
{
    if (c == '\0') {
        attn_diag_file(r->err, r->path, "line %d, field %zu holds a NUL byte: not a CSV text file",
                       r->line, field);
        return false;
    }
    if (r->len + 1 >= r->cap) {
        if (r->cap >= FIELD_MAX) {
            attn_diag_file(r->err, r->path, "line %d, field %zu is longer than %d bytes",
                           r->field_line, field, FIELD_MAX);
            return false;
        }
        size_t cap = r->cap ? r->cap * 2 : 64;
        char *buf = realloc(r->buf, cap);
        if (!buf) {
            attn_diag_file(r->err, r->path, "out of memory");
            return false;
        }
        r->buf = buf;
        r->cap = cap;
    }
    r->buf[r->len++] = (char)c;
    return true;
}

/* Reads field number `field` (1-based) of the line into r->buf. */
static enum end next_field(struct reader *r, size_t field)
{
    r->len = 0;
    r->quoted = false;
    r->field_line = r->line;
    int c = next_byte(r);
    if (field == 1 && c == EOF)
        return END_FILE;
    if (c == '"') {
        r->quoted = true;
        for (;;) {
            c = next_byte(r);
            if (c == EOF) {
                attn_diag_file(r->err, r->path, "line %d, field %zu: a quoted field is not closed",
                               r->field_line, field);
                return END_ERROR;
            }
            if (c == '"') {
                c = next_byte(r);
                if (c != '"')
                    break;
            } else if (c == '\n') {
                r->line++;
            }
            if (!append(r, c, field))
                return END_ERROR;
        }
        while (c == ' ' || c == '\t')
            c = next_byte(r);
        if (c != ',' && c != '\n' && c != '\r' && c != EOF) {
            attn_diag_file(r->err, r->path, "line %d, field %zu: text after the closing quote",
                           r->line, field);
            return END_ERROR;
        }
    } else {
        while (c != ',' && c != '\n' && c != '\r' && c != EOF) {
            if (!append(r, c, field))
                return END_ERROR;
            c = next_byte(r);
        }
    }
    r->buf[r->len] = '\0';
    if (c == ',')
        return END_FIELD;
    if (c == '\r') {
        int d = next_byte(r);
        if (d != '\n')
            r->back[r->n_back++] = d;
    }
    if (c != EOF)
        r->line++;
    return END_LINE;
}

/* s without the blanks around it (in place). */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* A field as a message shows it: quoted, at most 40 bytes, escaped (common/utf8.h). */
static void show(char *out, size_t size, const char *s)
{
    size_t len = strlen(s), lim = len > 40 ? 40 : len;
    while (lim < len && ((unsigned char)s[lim] & 0xC0) == 0x80)
        lim++;
    out[0] = '\'';
    size_t o = 1 + attn_utf8_escape(out + 1, size - 6, s, lim, 0);
    memcpy(out + o, lim < len ? "...'" : "'", lim < len ? 5 : 2);
}

/* The spellings of a number that strtof takes and attnscope does not (a scene's numbers are
 * decimal): a hexadecimal float ("0x1p-1") and a leading U+2212 MINUS SIGN ("\u22120.5", what a
 * word processor or a web page writes). A field spelled so is a number, never a header. */
enum spelling { NOT_A_NUMBER, DECIMAL, HEXADECIMAL, UNICODE_MINUS };

static enum spelling spelling_of(const char *field)
{
    char copy[64];
    snprintf(copy, sizeof(copy), "%s", field);
    char *s = trim(copy);
    double v;
    enum cnum_result res = attn_cnum_parse_double(s, false, &v);
    if (res == CNUM_OK || res == CNUM_NOT_FINITE)
        return DECIMAL;
    if (strncmp(s, "\xe2\x88\x92", 3) == 0) {
        s[2] = '-'; /* the rest as it would read after a plain minus */
        return spelling_of(s + 2) != NOT_A_NUMBER ? UNICODE_MINUS : NOT_A_NUMBER;
    }
    const char *p = s + (*s == '-' || *s == '+');
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        size_t digits = strspn(p + 2, "0123456789abcdefABCDEF.");
        const char *e = p + 2 + digits;
        if (digits > 0 &&
            (*e == '\0' || ((*e == 'p' || *e == 'P') &&
                            strspn(e + 1 + (e[1] == '-' || e[1] == '+'), "0123456789") > 0)))
            return HEXADECIMAL;
    }
    return NOT_A_NUMBER;
}

static bool parse_number(struct reader *r, size_t field, float *out)
{
    char *s = trim(r->buf);
    if (!*s) {
        attn_diag_file(r->err, r->path, "line %d, field %zu is empty, expected a number",
                       r->field_line, field);
        return false;
    }
    double v;
    enum cnum_result res = attn_cnum_parse_double(s, false, &v);
    /* As a YAML number: up to FLT_MAX + half an ulp rounds to FLT_MAX, beyond has no float32. */
    if (res == CNUM_OK && fabs(v) < 0x1.ffffffp+127) {
        *out = fabs(v) > FLT_MAX ? (v < 0 ? -FLT_MAX : FLT_MAX) : (float)v;
        return true;
    }
    char shown[64];
    show(shown, sizeof(shown), s);
    enum spelling sp = spelling_of(s);
    attn_diag_file(r->err, r->path, "line %d, field %zu: %s %s", r->field_line, field, shown,
                   sp == HEXADECIMAL ? "is a hexadecimal number; write it in decimal (0.5, 1e-3)"
                   : sp == UNICODE_MINUS ? "starts with U+2212 MINUS SIGN; write the minus as '-'"
                   : res == CNUM_NOT_FINITE ? "is not a finite number"
                   : res == CNUM_OK         ? "does not fit in a 32-bit float"
                                            : "is not a number");
    return false;
}

int attn_csvmat_read(struct npy_array *out, const char *path, size_t max_values, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    struct stat st;
    int fd = attn_fsutil_open_regular(path, &st, err);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        attn_diag_file(err, path, "cannot read: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct reader r = {.f = f, .path = path, .err = err, .line = 1, .cap = 64};
    r.buf = malloc(r.cap);
    if (!r.buf) {
        attn_diag_file(err, path, "out of memory");
        fclose(f);
        return -1;
    }
    skip_bom(&r);

    enum { UNKNOWN, LABELLED, PLAIN } layout = UNKNOWN;
    size_t width = 0, lines = 0, count = 0, cap = 0;
    int first_line = 0, blank_line = 0;
    char first[64] = "";
    float *data = NULL;
    int rc = -1;
    for (;;) {
        size_t field = 0;
        int line = r.line;
        bool blank = false;
        enum end e;
        do {
            e = next_field(&r, field + 1);
            if (e == END_ERROR)
                goto out;
            if (e == END_FILE)
                goto done;
            field++;
            if (field == 1 && e == END_LINE && r.len == 0 && !r.quoted) {
                blank = true;
                break;
            }
            if (blank_line) {
                attn_diag_file(err, path, "line %d is empty; a matrix has no blank lines",
                               blank_line);
                goto out;
            }
            if (layout == UNKNOWN) {
                /* A number in any spelling makes the file bare numbers: "0x1p-1" as a header
                   would drop a row and a column without a word. */
                layout = spelling_of(r.buf) != NOT_A_NUMBER ? PLAIN : LABELLED;
                show(first, sizeof(first), r.buf);
            }
            /* A labelled table's header and its row labels are not read. */
            if (layout == LABELLED && (lines == 0 || field == 1))
                continue;
            if (lines > 0 && field > width)
                continue; /* a ragged line: reported at its end */
            if (count == max_values) {
                attn_diag_file(err, path, "more than %zu values", max_values);
                goto out;
            }
            if (count == cap) {
                size_t n = cap ? cap * 2 : 256;
                float *grown = realloc(data, n * sizeof(*grown));
                if (!grown) {
                    attn_diag_file(err, path, "out of memory at line %d", r.field_line);
                    goto out;
                }
                data = grown;
                cap = n;
            }
            if (!parse_number(&r, field, &data[count]))
                goto out;
            count++;
        } while (e == END_FIELD);
        if (blank) {
            if (!blank_line)
                blank_line = line;
            continue;
        }
        if (lines == 0) {
            width = field;
            first_line = line;
        } else if (field != width) {
            if (layout == LABELLED)
                attn_diag_file(err, path, "line %d has %zu field%s, the header (line %d) has %zu",
                               line, field, field == 1 ? "" : "s", first_line, width);
            else
                attn_diag_file(err, path, "line %d has %zu number%s, line %d has %zu", line, field,
                               field == 1 ? "" : "s", first_line, width);
            goto out;
        }
        lines++;
    }
done:
    if (lines == 0) {
        attn_diag_file(err, path, "the file is empty: no matrix in it");
        goto out;
    }
    if (layout == LABELLED && width == 1) {
        attn_diag_file(err, path,
                       "no numbers: line %d starts with %s, so it is read as a header and each "
                       "line's one field as its label",
                       first_line, first);
        goto out;
    }
    if (layout == LABELLED && lines == 1) {
        attn_diag_file(err, path, "a header (line %d) and no rows of numbers", first_line);
        goto out;
    }
    out->ndim = 2;
    out->shape[0] = layout == LABELLED ? lines - 1 : lines;
    out->shape[1] = layout == LABELLED ? width - 1 : width;
    out->count = count;
    out->data = data;
    data = NULL;
    rc = 0;
out:
    free(data);
    free(r.buf);
    fclose(f);
    return rc;
}
