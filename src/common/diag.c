/* diag: errors as values (see diag.h). */
#include "common/diag.h"

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

void attn_diag_clear(struct diag *d)
{
    memset(d, 0, sizeof(*d));
}

int attn_diag_vset(struct diag *d, const char *path, const char *fmt, va_list ap)
{
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    snprintf(d->path, sizeof(d->path), "%s", path ? path : "");
    return -1;
}

int attn_diag_set(struct diag *d, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    attn_diag_vset(d, path, fmt, ap);
    va_end(ap);
    return -1;
}

int attn_diag_file(struct diag *d, const char *file, const char *fmt, ...)
{
    if (!d)
        return -1;
    attn_diag_clear(d);
    snprintf(d->file, sizeof(d->file), "%s", file);
    va_list ap;
    va_start(ap, fmt);
    attn_diag_vset(d, "", fmt, ap);
    va_end(ap);
    return -1;
}

void attn_diag_list_init(struct diag_list *l)
{
    memset(l, 0, sizeof(*l));
}

void attn_diag_list_free(struct diag_list *l)
{
    free(l->items);
    memset(l, 0, sizeof(*l));
}

struct diag *attn_diag_list_push(struct diag_list *l, const struct diag *d)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        struct diag *items = realloc(l->items, (size_t)cap * sizeof(*items));
        if (!items) {
            l->lost++;
            return NULL;
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n] = *d;
    return &l->items[l->n++];
}

int attn_diag_list_add(struct diag_list *l, const char *file, int line, int col, const char *path,
                       const char *fmt, ...)
{
    struct diag d;
    attn_diag_clear(&d);
    snprintf(d.file, sizeof(d.file), "%s", file ? file : "");
    d.line = line;
    d.col = col;
    va_list ap;
    va_start(ap, fmt);
    attn_diag_vset(&d, path, fmt, ap);
    va_end(ap);
    attn_diag_list_push(l, &d);
    return -1;
}

/* Finds the start and length of 1-based line `line` in source. */
static int find_line(const char *src, size_t len, int line, const char **start, size_t *n)
{
    const char *p = src, *end = src + len;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return -1;
        p = nl + 1;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *start = p;
    *n = (size_t)((nl ? nl : end) - p);
    if (*n > 0 && p[*n - 1] == '\r')
        (*n)--;
    return 0;
}

void attn_diag_print(FILE *out, const struct diag *d, const char *source, size_t source_len)
{
    /* The file name, the message and the line all come from files: escaped (common/utf8.h), so
     * an ESC or a U+202E in a scene reaches the terminal as "\\e" or "<U+202E>". */
    attn_utf8_fputs_escaped(d->file[0] ? d->file : "<scene>", out, 0);
    if (d->line > 0)
        fprintf(out, ":%d:%d", d->line, d->col > 0 ? d->col : 1);
    fputs(": ", out);
    attn_utf8_fputs_escaped(d->msg, out, 0);
    fputc('\n', out);
    if (!source || d->line <= 0)
        return;
    const char *start;
    size_t n;
    if (find_line(source, source_len, d->line, &start, &n) != 0)
        return;
    /* A long line is shown as a window of at most 160 bytes around the column. */
    size_t line_len = n, col = d->col > 0 ? (size_t)d->col - 1 : 0, from = 0;
    if (n > 160) {
        from = col > 80 ? col - 80 : 0;
        while (from > 0 && ((unsigned char)start[from] & 0xC0) == 0x80)
            from--; /* never start inside a UTF-8 character */
        n = line_len - from < 160 ? line_len - from : 160;
        size_t window = n;
        while (n > 0 && from + n < line_len && ((unsigned char)start[from + n] & 0xC0) == 0x80)
            n--;
        if (n == 0) /* nothing but continuation bytes: not UTF-8, any cut will do */
            n = window;
    }
    /* The line escaped (a tab kept, so the caret below lines up under it) and under it, one
     * blank per column each character takes, escapes included. */
    char shown[4 * 160 + 64];
    attn_utf8_escape(shown, sizeof(shown), start + from, n, UTF8_ESC_KEEP_TAB);
    fprintf(out, "  %s%s\n  %s", from ? "\u2026" : "", shown, from ? " " : "");
    for (size_t c = from; c < col && c < from + n;) {
        char esc[UTF8_ESCAPE_MAX];
        /* a character the window cuts is one byte */
        size_t k = (size_t)attn_utf8_escape_char_n(start + c, from + n - c, esc, UTF8_ESC_KEEP_TAB);
        if (start[c] == '\t')
            fputc('\t', out);
        else
            for (size_t w = esc[0] ? strlen(esc) : 1; w > 0; w--)
                fputc(' ', out);
        c += k;
    }
    fputs("^\n", out);
}

bool attn_diag_list_print_lost(FILE *out, const struct diag_list *l, const char *file)
{
    if (l->lost == 0)
        return false;
    if (file && file[0]) {
        attn_utf8_fputs_escaped(file, out, 0);
        fputs(": ", out);
    }
    fprintf(out, "out of memory: %d more problem%s could not be listed\n", l->lost,
            l->lost == 1 ? "" : "s");
    return true;
}
