/* ydiag: the one place where problems of YAML files are worded and collected, as netplan keeps
 * one error.c.
 *
 * Scene files and the explorer's keys.yaml and colors.yaml report a syntax error, a bad
 * encoding, a file nested too deep or too large, a second document, an unknown or duplicate
 * key, a value of the wrong type and "too many problems" in the same words, each as a diag
 * with file:line:col that attn_diag_print shows with the line and a caret.
 */
#ifndef ATTNSCOPE_YAML_YDIAG_H
#define ATTNSCOPE_YAML_YDIAG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "yaml/yamltree.h"

/* The problems of one file, capped: after max of them the rest are dropped and attn_ydiag_finish
 * adds "too many problems; stopped after the first <max>". */
struct ydiag {
    const char *file;   /* name in every diag */
    struct ytree *tree; /* turns positions into line and byte column */
    struct diag_list *errs;
    int max;
    int n;          /* problems added */
    bool stopped;   /* a problem past max was dropped: stop reading */
    bool truncated; /* the same, for attn_ydiag_finish */
};

void attn_ydiag_init(struct ydiag *d, const char *file, struct ytree *tree, struct diag_list *errs,
                     int max);
/* Adds a problem at pos for key path ("" for the document); returns false once the cap is
 * reached, so a reader can stop. */
bool attn_ydiag_add(struct ydiag *d, struct ypos pos, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same at a line and column already known (1-based). */
bool attn_ydiag_add_line(struct ydiag *d, int line, int col, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Appends the closing note when problems were dropped (no location: it is about the file). */
void attn_ydiag_finish(struct ydiag *d);

/* A problem of the YAML text itself, worded; what is the kind of file ("scene file",
 * "configuration file"). Out of memory is a problem like the others ("out of memory while
 * reading the scene file", no location) that also stops the reading. A problem the list had no
 * memory for is counted in errs->lost (common/diag.h) and still counts here. */
bool attn_ydiag_stream(struct ydiag *d, const struct yproblem *p, const char *what);

#define YDIAG_SHOW_MAX 200
/* How a node looks in a message: 'text' (shortened to about 40 bytes, never inside a UTF-8
 * character, control characters escaped), nothing, a sequence, a mapping. */
const char *attn_ydiag_show(const struct ytree *t, int node, char *buf, size_t size);
/* The same for a name read from the file. */
const char *attn_ydiag_show_str(const char *s, char *buf, size_t size);

/* "unknown <what> '<name>'[ in '<in>'] (did you mean '<x>'?)", or when nothing is close,
 * "(valid <what>s: a, b, c)" for up to 16 choices, else "(<hint>)". Returns out. */
const char *attn_ydiag_unknown(char *out, size_t size, const char *what, const char *name,
                               const char *in, const char *const *choices, int n, const char *hint);
/* "duplicate key '<name>' (first given at line <line>)" */
const char *attn_ydiag_duplicate(char *out, size_t size, const char *name, int first_line);

#endif
