/* scenefile: YAML scene files <-> struct attn_scene (schema version 1).
 *
 * The schema is a table of {key, node type, handler, field} rows. Every problem is reported
 * as a diag with file:line:col (1-based) so `attnscope check` can list them all. Duplicate
 * keys, unknown keys (with the nearest valid key suggested), wrong types, ragged matrices,
 * NaN/Inf and out-of-range values are errors; so is everything attn_scene_check refuses, located
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
 * holds a scene that passed attn_scene_check. On failure returns -1, appends every problem found to
 * errs, and leaves out freed. */
int attn_scenefile_parse(struct attn_scene *out, const char *name, const char *text, size_t len,
                         struct diag_list *errs);

/* Reads and parses a file. On failure the file's text (for caret excerpts) is kept in
 * *source / *source_len when those are not NULL; the caller frees *source. */
int attn_scenefile_load(struct attn_scene *out, const char *path, struct diag_list *errs,
                        char **source, size_t *source_len);

/* attn_scenefile_load for the command line and the explorer's start: on failure every problem is
 * printed to report as file:line:col with the line and a caret; on success its warnings
 * (attn_scenefile_print_warnings). Returns 0 or -1. */
int attn_scenefile_load_report(struct attn_scene *out, const char *path, FILE *report);

/* What s was loaded past without a refusal, i from 0: its checkpoint's warnings (config.json's
 * unknown keys, each at its key), then how many more memory ran out for, then tokens past the
 * positions a RoPE checkpoint was trained on (at path, the scene). Fills *out (its message
 * without "warning: ") and returns 0, or -1 past the last. */
int attn_scenefile_warning(struct diag *out, const struct attn_scene *s, const char *path, int i);
/* Prints each, one "file:line:col: warning: ..." line. Returns how many. */
int attn_scenefile_print_warnings(FILE *out, const struct attn_scene *s, const char *path);

/* ---- a model folder as a scene (folder.c) ---------------------------------------------- */

/* The sentence of a model's scene when none is given: the book's, as the built-in scene has. */
#define ATTN_MODEL_DEFAULT_TEXT "Your journey starts with one step"

/* What attnscope reads of a Hugging Face model: each path as the user named it, or beside it. */
struct attn_model_files {
    char folder[4096];    /* the folder (without a trailing '/'), or the one the weights are in */
    char weights[4096];   /* model.safetensors, model.safetensors.index.json, or the file named */
    char tokenizer[4096]; /* tokenizer.json, or GPT-2's vocab.json */
    char merges[4096];    /* merges.txt with vocab.json, else "" */
};

/* Whether path is a model rather than a scene file: a folder, a .safetensors file (by its
 * name, or its first bytes), or a sharded checkpoint's .safetensors.index.json. */
bool attn_scenefile_is_model(const char *path);
/* The files of the model at path (a folder, or its weights): config.json and the weights, and
 * the tokenizer (tokenizer.json, else vocab.json with merges.txt) from the folder, or from
 * tokenizer (NULL: the folder's; else a tokenizer.json, a vocab.json with merges.txt beside it,
 * or a folder of either). Returns 0, or -1 with err (naming path) saying what a model folder
 * holds and what this one has: "not a model folder: ...; this one has config.json, but ...". */
int attn_scenefile_find_model(struct attn_model_files *m, const char *path, const char *tokenizer,
                              struct diag *err);
/* The model's scene as YAML (malloc'd, *len bytes), as one writes it by hand beside the folder:
 * title (the folder's name; ORG/NAME in Hugging Face's cache), text (ATTN_MODEL_DEFAULT_TEXT),
 * tokenizer and model (arch: auto, config.json says). */
int attn_scenefile_model_yaml(char **yaml, size_t *len, const struct attn_model_files *m,
                              struct diag *err);
/* Loads that scene through the scene loader (attn_scenefile_parse), so everything a checkpoint
 * scene is checked for is checked. On failure returns -1 and appends every problem to errs, each
 * about the folder or the file it names (the in-memory YAML's lines are nobody's to read). */
int attn_scenefile_load_model(struct attn_scene *out, const struct attn_model_files *m,
                              struct diag_list *errs);
/* The same, the problems and warnings printed to report. Returns 0 or -1. */
int attn_scenefile_load_model_report(struct attn_scene *out, const struct attn_model_files *m,
                                     FILE *report);

/* One key of the scene format, as the loader's tables know it: for the reference (the manual
 * page attnscope-scene(5) is made from these). */
struct attn_scene_key {
    const char *path; /* "attention.heads"; "[]" marks a list's items: "lesson[].caption" */
    const char *what; /* what its value must be ("an integer", "true or false"), or NULL */
    char values[256]; /* an enum's names, "none, learned, sinusoidal or rope"; else "" */
    bool ranged;      /* an integer between min and max */
    long long min, max;
};
/* Calls visit for every key of the format, the top level first and each mapping's keys after
 * its own key, in the tables' order. */
void attn_scenefile_describe(void (*visit)(void *ctx, const struct attn_scene_key *k), void *ctx);

/* Matrices larger than this many values, and every matrix once a file holds SCENEFILE_INLINE_TOTAL
 * inline, are written to .npy side files, so a written scene stays readable and far below
 * SCENEFILE_MAX_BYTES (a float takes at most 17 bytes of YAML). */
#define SCENEFILE_INLINE_VALUES 65536
#define SCENEFILE_INLINE_TOTAL  524288

/* Where the side files of a scene go. Their names carry a hash of their contents
 * ("weights.query-1f2e3d4c5b6a7980.npy"), so a file the previous YAML refers to is never
 * overwritten with other numbers: a crash between writing them and the YAML leaves a
 * consistent pair either way. */
struct scenefile_sidecar {
    const char *dir; /* folder for the .npy files, created when the first one is written */
    const char *rel; /* how the YAML names that folder, relative to the YAML's own folder */
    char **written;  /* out: the file names written or reused, n_written of them */
    int n_written;
    /* The folder the YAML is written in, or NULL. When given, the checkpoint and tokenizer
     * files (absolute once loaded) are written relative to it wherever they share more than
     * "/" with it ("../models/induction/vocab.json"): a saved scene or an export travels with
     * its folder and does not show the user's own paths. */
    const char *yaml_dir;
};
/* path (absolute) as seen from the folder dir (absolute): "../m/vocab.json", or path itself
 * when the two share nothing but "/". Returns out. */
const char *attn_scenefile_relative_path(char *out, size_t size, const char *path, const char *dir);
void attn_scenefile_sidecar_free(struct scenefile_sidecar *side);

/* Writes s as YAML, every matrix inline. With explicit, every default is written out too
 * (resolved scenes), and a lesson is left out: a resolved scene is one state, not a tour. */
int attn_scenefile_write(FILE *out, const struct attn_scene *s, bool explicit, struct diag *err);
/* The same, with large matrices in side files (side NULL: all inline). */
int attn_scenefile_write_side(FILE *out, const struct attn_scene *s, bool explicit,
                              struct scenefile_sidecar *side, struct diag *err);

/* Writes s to path atomically (temporary file in the same folder, then rename); large matrices
 * go to "<path without .yaml>.data/", and side files of an earlier save that the new YAML no
 * longer names are removed afterwards. Refuses to replace an existing file unless overwrite is
 * set. */
int attn_scenefile_save(const char *path, const struct attn_scene *s, bool explicit, bool overwrite,
                        struct diag *err);

#endif
