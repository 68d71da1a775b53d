/* locate: the state of one scene-file parse (struct loader): its problems (through src/yaml/ydiag),
 * where each key is, which keys had a problem. load.c drives a parse and schema.c (the schema
 * tables and their handlers) fills the scene; both report through here. Internal to src/scenefile.
 *
 * Out of memory: a handler whose allocation fails reports "out of memory" at its key, like any
 * problem. The loader's own tables (keys, bad paths) cannot say where they were when they fail,
 * and a key missing from them would change what the scene means ("attention.heads" given or
 * not), so they call attn_loader_out_of_memory: one problem for the file, and the parse stops.
 */
#ifndef ATTNSCOPE_SCENEFILE_LOCATE_H
#define ATTNSCOPE_SCENEFILE_LOCATE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/scene.h"
#include "yaml/yamltree.h"
#include "yaml/ydiag.h"

/* After this many problems the loader stops: the first ones are what the user fixes first. */
#define LOADER_MAX_ERRORS 50

/* A key seen in the file, so attn_scene_check's paths ("attention.d_out") can be located. */
struct loader_key {
    char path[DIAG_PATH_MAX];
    int key, value;   /* node indices */
    const char *file; /* the data file the value names ({file: w.npy}) as written, or NULL */
};

/* One entry of weights.heads (wrapper layout), assembled into column blocks at the end. */
struct head_weights {
    struct attn_matrix query, key, value;
    struct attn_matrix query_bias, key_bias, value_bias;
};

struct loader {
    const char *name; /* file name for diagnostics */
    char dir[4096];   /* its folder: {file: ...} references are relative to it ("" = here) */
    const char *text;
    size_t len;
    struct ydiag yd;   /* the problems; yd.stopped: LOADER_MAX_ERRORS passed, skip the rest */
    int first;         /* index in the list of this parse's first diag */
    struct ytree tree; /* also turns marks into line and byte column */
    struct attn_scene *s;
    struct loader_key *keys;
    int n_keys, cap_keys;
    char (*bad)[DIAG_PATH_MAX]; /* paths that had a problem */
    int n_bad, cap_bad;
    int text_node, tokens_node; /* value nodes of text / tokens, or -1 */
    int pair_node;              /* text: [A, B]: B's node (text_node is A's), or -1 */
    int source_node; /* text: {source: S, target: T}: S's node (text_node is T's), or -1 */
    struct head_weights *heads; /* weights.heads entries, n_heads of them */
    int n_heads;
    /* model: and tokenizer: {kind: gpt2} or {kind: hf}, as given (loaded in finish_top, once the
       tokens are known); the paths relative to the scene file */
    struct {
        char *kind, *vocab, *merges, *file;
    } tokenizer_spec;
    struct {
        char *file, *arch;
    } model_spec;
    bool oom; /* attn_loader_out_of_memory was called */
};

/* An allocation failed where no key is to blame: "out of memory while reading the scene file"
 * (once), and the parse stops (yd.stopped). */
void attn_loader_out_of_memory(struct loader *l);

/* Adds a problem located at node's start (node < 0: line 1) and marks path as bad. */
void attn_loader_error(struct loader *l, int node, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds a problem at a line and column already known. */
void attn_loader_error_at(struct loader *l, int line, int col, const char *path, const char *msg);
/* Adds d, a problem of another file the scene reads (a checkpoint's config.json), at that
 * file's own line and column (0: none); marks path as bad. */
void attn_loader_error_in(struct loader *l, const struct diag *d, const char *path);
/* attn_ytree_build's report callback (ctx: the loader). */
bool attn_loader_yaml_problem(void *ctx, const struct yproblem *p);
/* Marks path as bad without a message (the problem was reported under another key). */
void attn_loader_mark_bad(struct loader *l, const char *path);
/* True when path, or a key below it, had a problem. */
bool attn_loader_bad(const struct loader *l, const char *path);
/* True when path's value is not known: path, a key below it or a mapping above it had a problem
 * ('attention: 2' leaves attention.heads unknown). A problem of the whole document (path "")
 * does not count. */
bool attn_loader_unknown(const struct loader *l, const char *path);

void attn_loader_register(struct loader *l, const char *path, int key, int value);
/* The registered entry for path, or NULL. */
const struct loader_key *attn_loader_find(const struct loader *l, const char *path);
/* Records that path's value was read from file (the name as the scene writes it; it must live
 * as long as the parse), so later problems with that value name the file too. */
void attn_loader_set_file(struct loader *l, const char *path, const char *file);
/* The data file path's value was read from, or NULL. */
const char *attn_loader_file(const struct loader *l, const char *path);
/* Where node starts, as shown to users (node < 0: line 1, column 1). */
void attn_loader_locate(struct loader *l, int node, int *line, int *col);
/* True when key path a is b or below it ("attention.d_out" is below "attention"). */
bool attn_loader_path_within(const char *a, const char *b);
/* 1-based line of node, as shown to users. */
int attn_loader_line(struct loader *l, int node);

/* Buffer size for attn_loader_show. */
#define LOADER_SHOW_MAX YDIAG_SHOW_MAX
/* Writes how a node looks in a message: 'text' (shortened, escaped), nothing, a sequence... */
const char *attn_loader_show(const struct loader *l, int node, char *buf, size_t size);

/* schema.c: fills l->s from the top-level mapping, reporting every problem found. */
void attn_schema_load_scene(struct loader *l, int root);
/* schema.c: checks the scene's lesson against the scene: each step's edit as the explorer makes
 * it, then what the step shows (layer, head, stage, cell) and what its caption marks. Runs once
 * the rest of the file is free of problems. */
void attn_schema_check_lesson(struct loader *l);
/* schema.c: frees the temporary per-head weights. */
void attn_schema_free_heads(struct loader *l);

#endif
