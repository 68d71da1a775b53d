/* diag: errors as values.
 *
 * Every fallible function in attnscope returns an int status (0 = ok) and fills a struct diag
 * with a message and, where one exists, the location it belongs to. Nothing here prints by
 * itself except attn_diag_print; the UI shows the message in a panel, the CLI prints it and
 * exits 1.
 */
#ifndef ATTNSCOPE_DIAG_H
#define ATTNSCOPE_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#define DIAG_MSG_MAX  512
#define DIAG_PATH_MAX 128
#define DIAG_FILE_MAX 512

struct diag {
    char file[DIAG_FILE_MAX]; /* "" when there is no file (built-in scene, live edit) */
    int line;                 /* 1-based; 0 = unknown */
    int col;                  /* 1-based; 0 = unknown */
    char path[DIAG_PATH_MAX]; /* scene key the problem belongs to, e.g. "attention.d_out" */
    char msg[DIAG_MSG_MAX];
};

/* A growable list, so `check` can report every problem of a file, not only the first. When
 * memory runs out the list cannot grow: a problem that does not fit is counted in lost instead,
 * and whoever shows the list says so (attn_diag_list_print_lost), so a list is never silently
 * short. */
struct diag_list {
    struct diag *items;
    int n, cap;
    int lost; /* problems not stored: out of memory */
};

void attn_diag_clear(struct diag *d);
/* Sets d->msg (printf-style) and d->path; returns -1 so callers can `return attn_diag_set(...)`. */
int attn_diag_set(struct diag *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int attn_diag_vset(struct diag *d, const char *path, const char *fmt, va_list ap);
/* A problem of a whole file (an .npy, a checkpoint, a file the disk refused): d is cleared,
 * d->file names it and d->msg says what, so attn_diag_print shows "file: message". d may be NULL.
 * Returns -1. */
int attn_diag_file(struct diag *d, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void attn_diag_list_init(struct diag_list *l);
void attn_diag_list_free(struct diag_list *l);
/* Appends a copy; returns the stored item, or NULL when out of memory (l->lost counts it). */
struct diag *attn_diag_list_push(struct diag_list *l, const struct diag *d);
/* Appends a new diag built from the arguments; returns -1 like attn_diag_set. */
int attn_diag_list_add(struct diag_list *l, const char *file, int line, int col, const char *path,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Prints "file:line:col: message" and, when source is given and line > 0, the offending line
 * with a caret under the column. Falls back to "file: message" when the location is unknown. */
void attn_diag_print(FILE *out, const struct diag *d, const char *source, size_t source_len);
/* When l lost problems, prints "<file>: out of memory: N more problems could not be listed"
 * (file "" for none). Returns whether it printed. */
bool attn_diag_list_print_lost(FILE *out, const struct diag_list *l, const char *file);

#endif
