/* fsutil: whole-file reads and atomic writes.
 *
 * Every file attnscope writes goes through fsutil_write_atomic: a temporary file in the same
 * folder, fsync, then rename. A crash or a full disk never leaves a half-written file behind.
 */
#ifndef ATTNSCOPE_FSUTIL_H
#define ATTNSCOPE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/diag.h"

/* Reads a whole file (at most max_bytes) into a NUL-terminated buffer the caller frees. */
int fsutil_read_file(char **out, size_t *len, const char *path, size_t max_bytes, struct diag *err);

/* Creates dir and its parents (like mkdir -p). */
int fsutil_mkdir_p(const char *dir, struct diag *err);

/* Calls write(f, ctx) on a temporary file next to path, then renames it over path. When
 * overwrite is false and path exists, fails without writing. write returns 0 or -1 (with err). */
int fsutil_write_atomic(const char *path, bool overwrite,
                        int (*write)(FILE *f, void *ctx, struct diag *err), void *ctx,
                        struct diag *err);

bool fsutil_exists(const char *path);

#endif
