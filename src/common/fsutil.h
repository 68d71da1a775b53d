/* fsutil: whole-file reads and atomic writes.
 *
 * Every file attnscope writes goes through attn_fsutil_write_atomic: a temporary file in the same
 * folder, fsync, then rename. A crash or a full disk never leaves a half-written file behind.
 */
#ifndef ATTNSCOPE_FSUTIL_H
#define ATTNSCOPE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/diag.h"

/* Reads a whole file (at most max_bytes) into a NUL-terminated buffer the caller frees. Opened
 * with attn_fsutil_open_regular: a FIFO, a device or a folder is refused without blocking. */
int attn_fsutil_read_file(char **out, size_t *len, const char *path, size_t max_bytes,
                          struct diag *err);

/* Creates dir and its parents (like mkdir -p). */
int attn_fsutil_mkdir_p(const char *dir, struct diag *err);
/* Opens path for reading when it is a regular file, without blocking on the way (a FIFO named
 * in a scene must not hang the loader waiting for a writer); the descriptor is blocking again
 * when returned, and *st holds its stat. -1 with err ("cannot open: ...", "is a directory, not
 * a file", "not a regular file (a FIFO)") otherwise. Every file attnscope reads is opened here
 * (or through attn_fsutil_read_file). */
int attn_fsutil_open_regular(const char *path, struct stat *st, struct diag *err);
/* 0 when path may be written as a file: it does not exist, or is a regular file (or a link to
 * one). A FIFO, a device, a socket or a folder is refused without being opened: -1 with err. */
int attn_fsutil_check_output(const char *path, struct diag *err);

/* Calls write(f, ctx) on a temporary file next to path, then renames it over path. When
 * overwrite is false and path exists, fails without writing. write returns 0 or -1 (with err). */
int attn_fsutil_write_atomic(const char *path, bool overwrite,
                             int (*write)(FILE *f, void *ctx, struct diag *err), void *ctx,
                             struct diag *err);

bool attn_fsutil_exists(const char *path);
/* Whether path is a folder (or a link to one). */
bool attn_fsutil_is_dir(const char *path);

/* Writes a new file with write(f, ctx): created exclusively, checked on close, no rename.
 * For files inside a folder that is itself swapped into place (fsutil_dirswap). */
int attn_fsutil_write_new(const char *path, int (*write)(FILE *f, void *ctx, struct diag *err),
                          void *ctx, struct diag *err);

/* path made absolute: its folder resolved (realpath), its own name kept even when it is a link
 * (malloc'ed; as given when the folder cannot be resolved; NULL out of memory). How a saved
 * scene names the files it reads: a Hugging Face cache's snapshot holds links into blobs/,
 * whose names say nothing, so a model.safetensors resolved whole would lose its config.json
 * beside it, and an index its .json. */
char *attn_fsutil_absolute(const char *path);

/* Removes path and everything below it, never following symbolic links. Returns 0, or -1
 * (errno set) when something could not be removed; a tree nested over 64 deep (no export is) is
 * left alone past that depth (ENOTEMPTY), never a stack overflow. */
int attn_fsutil_remove_tree(const char *path);

/* A folder written all or nothing (export). begin creates a fresh temporary folder beside the
 * target, ".<name>.attnscope-<pid>-XXXXXX", first removing such folders that processes no longer
 * running left behind (a kill -9). The caller fills tmp; commit syncs it and swaps it with the
 * target in one rename (RENAME_EXCHANGE; where the file system cannot, two renames, the old one
 * restored on failure), then removes the previous folder. abort removes tmp. A failure at any
 * point before the swap leaves the target exactly as it was. */
struct fsutil_dirswap {
    char target[4096];
    char tmp[4096];
    bool left_old; /* commit could not remove the previous folder; it stays at tmp */
};
int attn_fsutil_dirswap_begin(struct fsutil_dirswap *tx, const char *target, struct diag *err);
int attn_fsutil_dirswap_commit(struct fsutil_dirswap *tx, struct diag *err);
void attn_fsutil_dirswap_abort(struct fsutil_dirswap *tx);

#ifdef ATTNSCOPE_TEST_HOOKS
/* Only in a test build (-Dtests=true): from now on the n-th file written
 * (attn_fsutil_write_atomic or attn_fsutil_write_new) fails as a full disk would (ENOSPC); 0
 * turns it off. */
void attn_fsutil_fail_nth_write(int n);
#endif

#endif
