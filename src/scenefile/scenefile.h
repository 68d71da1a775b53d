/* scenefile: YAML scene files <-> struct scene (schema version 1).
 *
 * The schema is a table of {key, node type, handler, field} rows. Every problem is reported
 * as a diag with file:line:col (1-based) so `attnscope check` can list them all. Duplicate
 * keys, unknown keys (with the nearest valid key suggested), wrong types, ragged matrices,
 * NaN/Inf and out-of-range values are errors; so is everything scene_check refuses, located
 * at the key it names.
 */
#ifndef ATTNSCOPE_SCENEFILE_H
#define ATTNSCOPE_SCENEFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/diag.h"
#include "engine/scene.h"

/* Largest scene file read. Any file up to this size is accepted or refused in well under a
 * second and 100 MB (bench/bench_load); larger matrices live in .npy side files. */
#define SCENEFILE_MAX_BYTES ((size_t)16 << 20)

/* Parses YAML text. `name` is the file name used in diagnostics. On success returns 0 and out
 * holds a scene that passed scene_check. On failure returns -1, appends every problem found to
 * errs, and leaves out freed. */
int scenefile_parse(struct scene *out, const char *name, const char *text, size_t len,
                    struct diag_list *errs);

/* Reads and parses a file. On failure the file's text (for caret excerpts) is kept in
 * *source / *source_len when those are not NULL; the caller frees *source. */
int scenefile_load(struct scene *out, const char *path, struct diag_list *errs, char **source,
                   size_t *source_len);

/* scenefile_load for the command line and the explorer's start: on failure every problem is
 * printed to report as file:line:col with the line and a caret. Returns 0 or -1. */
int scenefile_load_report(struct scene *out, const char *path, FILE *report);

/* Writes s as YAML. With explicit, every default is written out too (resolved scenes). */
int scenefile_write(FILE *out, const struct scene *s, bool explicit, struct diag *err);

/* Writes s to path atomically (temporary file in the same folder, then rename). Refuses to
 * replace an existing file unless overwrite is set. */
int scenefile_save(const char *path, const struct scene *s, bool explicit, bool overwrite,
                   struct diag *err);

#endif
