/* schema (internal to src/scenefile): the tables the scene file is read by, shared by the files
 * that hold their parts:
 *   schema.c         the tables of every mapping (top level, embeddings, positional, attention,
 *                    block, view, ablate, weights, tokenizer, model) and the rules between keys
 *   schema_values.c  handlers of single values (integers, seeds, enums, strings, probabilities)
 *   schema_data.c    handlers of matrices and vectors, inline or {file: name.npy or .csv}, and
 *                    dropout masks
 *   schema_lesson.c  a lesson's steps, and the steps checked against the scene
 *   schema_walk.c    the walk of a mapping's keys: unknown keys (with the nearest one
 *                    suggested), duplicates, node types, then each row's handler in table order
 * Each mapping is a table of rows {key, node type, handler, field offset}, as in netplan.
 * Handlers report their problems and carry on, so a single pass finds them all. Sizes are
 * counted on the node tree before any matrix is allocated.
 */
#ifndef ATTNSCOPE_SCENEFILE_SCHEMA_H
#define ATTNSCOPE_SCENEFILE_SCHEMA_H

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cnum.h"
#include "common/csvmat.h"
#include "common/npy.h"
#include "engine/attention.h"
#include "engine/lesson.h"
#include "engine/stage.h"
#include "engine/tokenize.h"
#include "pretrained/pretrained.h"
#include "scenefile/scenefile.h"
#include "scenefile/locate.h"
#include "yaml/suggest.h"

#define MAX_FIELDS 32
/* Largest matrix read, in values: what SCENE_MAX_MATRIX_BYTES allows in float32. */
#define MAX_VALUES (SCENE_MAX_MATRIX_BYTES / sizeof(float))

/* Enum fields are filled through an int pointer. */
_Static_assert(sizeof(enum attn_tokenizer) == sizeof(int), "enum size");
_Static_assert(sizeof(enum attn_pos_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(enum attn_projection) == sizeof(int), "enum size");
_Static_assert(sizeof(enum attn_head_layout) == sizeof(int), "enum size");
_Static_assert(sizeof(enum attn_mask_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum attn_normalize) == sizeof(int), "enum size");

struct field;

/* Fills the field described by f from the value node; reports its own problems. path is the
 * key's full path ("attention.heads"), base the struct the mapping fills. */
typedef void (*field_fn)(struct loader *l, const struct field *f, int node, void *base,
                         const char *path);
/* Rules between the keys of one mapping; found[i] is the value node of row i, or -1. */
typedef void (*finish_fn)(struct loader *l, int node, const int *found, void *base,
                          const char *path);

/* WANT_DATA: a matrix or vector, written inline (a sequence) or as {file: name.npy} (or .csv). */
enum want { WANT_SCALAR, WANT_SEQ, WANT_MAP, WANT_DATA, WANT_ANY };

struct field {
    const char *key;
    enum want want;   /* node type the value must have */
    const char *what; /* for "'key' must be <what>, got ..." (enums: built from the names) */
    field_fn handler;
    size_t offset;   /* of the filled member in base (struct attn_scene, or struct head_weights) */
    const void *arg; /* handler-specific: range, enum, size limits or sub-mapping */
};

struct mapping {
    const char *name; /* in messages ("attention"); "" at the top level */
    const struct field *fields;
    int n_fields;
    finish_fn finish;
};

struct int_range {
    long long min, max;
};

struct enum_def {
    const int *values;
    int n;
    const char *(*name)(int value); /* the names are scene.h's, shared with the writer */
    int (*alias)(const char *name); /* other names it accepts (a value, or -1), or NULL */
};

struct mat_limits {
    int max_rows, max_cols;
};

#define FIELD(base, f, type) ((type *)(void *)((char *)(base) + (f)->offset))

static inline const struct ynode *nd_of(const struct loader *l, int node)
{
    return ytree_node(&l->tree, node);
}

static inline const char *str_of(const struct loader *l, int node)
{
    return ytree_str(&l->tree, node);
}

/* Formats a key path into a DIAG_PATH_MAX buffer; a path that long is cut, never overrun. */
static void path_fmt(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats a key path into a DIAG_PATH_MAX buffer; a path that long is cut, never overrun. */
static inline void path_fmt(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void path_fmt(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, DIAG_PATH_MAX, fmt, ap);
    va_end(ap);
}

/* "path.key", or "key" at the top level. */
static inline void join(char *out, const char *path, const char *key)
{
    path_fmt(out, path[0] ? "%s.%s" : "%s%s", path, key);
}

/* A scalar read as a number (attn_schema_scalar_number). */
enum num { NUM_OK, NUM_NOT_NUMBER, NUM_NOT_FINITE };

/* ---- what the files share (each defined in the file its comment names) ---- */

/* schema.c: the tables */
bool attn_schema_list_item_map(struct loader *l, int item, const char *path, int i,
                               char ipath[DIAG_PATH_MAX], const char *what, int number,
                               const char *list, const char *must);
bool attn_schema_meant_bad(const struct loader *l, const char *path, const char *key);

/* schema_values.c: single values */
void attn_schema_bool(struct loader *l, const struct field *f, int node, void *base,
                      const char *path);
void attn_schema_enum(struct loader *l, const struct field *f, int node, void *base,
                      const char *path);
void attn_schema_int(struct loader *l, const struct field *f, int node, void *base,
                     const char *path);
void attn_schema_opt_seed(struct loader *l, const struct field *f, int node, void *base,
                          const char *path);
void attn_schema_positive(struct loader *l, const struct field *f, int node, void *base,
                          const char *path);
void attn_schema_probability(struct loader *l, const struct field *f, int node, void *base,
                             const char *path);
void attn_schema_scale(struct loader *l, const struct field *f, int node, void *base,
                       const char *path);
void attn_schema_seed(struct loader *l, const struct field *f, int node, void *base,
                      const char *path);
void attn_schema_string(struct loader *l, const struct field *f, int node, void *base,
                        const char *path);
void attn_schema_text(struct loader *l, const struct field *f, int node, void *base,
                      const char *path);
void attn_schema_tokens(struct loader *l, const struct field *f, int node, void *base,
                        const char *path);
void attn_schema_tristate(struct loader *l, const struct field *f, int node, void *base,
                          const char *path);
void attn_schema_version(struct loader *l, const struct field *f, int node, void *base,
                         const char *path);
bool attn_schema_has_nul(const struct loader *l, int node);
bool attn_schema_is_nothing(const struct loader *l, int node);
void attn_schema_must_be(struct loader *l, const struct field *f, int node, const char *path);
int attn_schema_parse_ll(const char *s, long long *out);
enum num attn_schema_scalar_number(const struct loader *l, int node, double *out);
bool attn_schema_string_ok(struct loader *l, const struct field *f, int node, const char *path);

/* schema_data.c: matrices, vectors, masks */
void attn_schema_dropout_mask(struct loader *l, const struct field *f, int node, void *base,
                              const char *path);
void attn_schema_matrix(struct loader *l, const struct field *f, int node, void *base,
                        const char *path);
void attn_schema_vector(struct loader *l, const struct field *f, int node, void *base,
                        const char *path);
bool attn_schema_is_file_ref(const struct loader *l, int node);
int attn_schema_read_file_ref(struct loader *l, int node, const char *label, const char *path,
                              int ndim, struct npy_array *out, const char **file);
int attn_schema_read_matrix(struct loader *l, int node, const char *label, const char *path,
                            const struct mat_limits *lim, struct attn_matrix *out);

/* schema_lesson.c: the lesson */
void attn_schema_lesson(struct loader *l, const struct field *f, int node, void *base,
                        const char *path);

/* schema_walk.c: the walk of a mapping */
void attn_schema_mark_meant(struct loader *l, const char *path, const char *key);
void attn_schema_walk_map(struct loader *l, int node, const struct mapping *m, void *base,
                          const char *path);

/* schema.c: an ablated head's layer and head, as the scene's ablate: and a lesson step's read
 * them, and the check that both are given (layer, head: the mapping's first two fields). */
extern const struct int_range attn_schema_ablate_layer_range, attn_schema_ablate_head_range;
void attn_schema_finish_ablation(struct loader *l, int node, const int *found, void *base,
                                 const char *path);

/* schema_lesson.c: the table of a lesson step, and of its ablate: edit. */
extern const struct mapping attn_schema_step_map;
extern const struct mapping attn_schema_step_ablate_map;
void attn_schema_step_ablate(struct loader *l, const struct field *f, int node, void *base,
                             const char *path);

/* schema.c: the top-level table, and the nested mappings whose keys "belong under" one. */
extern const struct mapping attn_schema_top_map;
#define ATTN_SCHEMA_N_NESTED 6
extern const struct mapping *const attn_schema_nested_maps[ATTN_SCHEMA_N_NESTED];

/* How the tables say what a value must be, and where it goes. */
#define SEED_WHAT "an integer from 0 to 18446744073709551615"
/* A matrix or vector key's value: inline, or a file (attn_schema_read_file_ref). */
#define MATRIX_WHAT "a list of rows or {file: name.npy or .csv}"
#define VECTOR_WHAT "a list of numbers or {file: name.npy or .csv}"

#define S(member) offsetof(struct attn_scene, member)
#define H(member) offsetof(struct head_weights, member)
#define N(fields) ((int)(sizeof(fields) / sizeof((fields)[0])))

/* The values the tables take: enums, ranges, matrix limits (static: each file has its own). */
static inline const char *stage_str(int v)
{
    return attn_stage_name((enum attn_stage)v);
}
static inline const char *tokenizer_str(int v)
{
    return attn_tokenizer_name((enum attn_tokenizer)v);
}
static inline const char *pos_kind_str(int v)
{
    return attn_pos_kind_name((enum attn_pos_kind)v);
}
static inline const char *rope_pairs_str(int v)
{
    return attn_rope_pairs_name((enum attn_rope_pairs)v);
}
static inline const char *qkv_mode_str(int v)
{
    return attn_qkv_mode_name((enum attn_qkv_mode)v);
}
static inline const char *order_str(int v)
{
    return attn_block_order_name((enum attn_block_order)v);
}
static inline const char *norm_str(int v)
{
    return attn_norm_kind_name((enum attn_norm_kind)v);
}
static inline const char *activation_str(int v)
{
    return attn_activation_name((enum attn_activation)v);
}
static inline const char *projection_str(int v)
{
    return attn_projection_name((enum attn_projection)v);
}
static inline const char *layout_str(int v)
{
    return attn_layout_name((enum attn_head_layout)v);
}
static inline const char *mask_mode_str(int v)
{
    return attn_mask_mode_name((enum attn_mask_mode)v);
}
static inline const char *normalize_str(int v)
{
    return attn_normalize_name((enum attn_normalize)v);
}

static const int tokenizer_values[] = {TOKENIZER_WHITESPACE, TOKENIZER_WORDS, TOKENIZER_CHARS};
static const int pos_kind_values[] = {POS_NONE, POS_LEARNED, POS_SINUSOIDAL, POS_ROPE};
static const int rope_pairs_values[] = {ROPE_ADJACENT, ROPE_HALVES};
static const int qkv_mode_values[] = {QKV_SEPARATE, QKV_FUSED, QKV_FUSED_HEADS};
static const int order_values[] = {BLOCK_POST, BLOCK_PRE, BLOCK_PARALLEL, BLOCK_POST_BRANCH,
                                   BLOCK_SANDWICH};
static const int norm_values[] = {NORM_LAYER, NORM_RMS};
static const int activation_values[] = {ACT_RELU, ACT_GELU, ACT_GELU_TANH, ACT_SILU};
static const int projection_values[] = {PROJ_NONE, PROJ_RAND, PROJ_LINEAR};
static const int layout_values[] = {LAYOUT_SPLIT, LAYOUT_WRAPPER};
static const int mask_mode_values[] = {MASK_BEFORE_SOFTMAX, MASK_AFTER_SOFTMAX};
static const int normalize_values[] = {NORMALIZE_SOFTMAX, NORMALIZE_SUM};

static const struct enum_def tokenizer_enum = {tokenizer_values, 3, tokenizer_str, NULL};
static const struct enum_def pos_kind_enum = {pos_kind_values, 4, pos_kind_str, NULL};
static const struct enum_def rope_pairs_enum = {rope_pairs_values, 2, rope_pairs_str, NULL};
static const struct enum_def qkv_mode_enum = {qkv_mode_values, 3, qkv_mode_str, NULL};
static const struct enum_def order_enum = {order_values, 5, order_str, NULL};
static const struct enum_def norm_enum = {norm_values, 2, norm_str, NULL};
static const struct enum_def activation_enum = {activation_values, 3, activation_str, NULL};
static const struct enum_def projection_enum = {projection_values, 3, projection_str, NULL};
static const struct enum_def layout_enum = {layout_values, 2, layout_str, NULL};
static const struct enum_def mask_mode_enum = {mask_mode_values, 2, mask_mode_str, NULL};
static const struct enum_def normalize_enum = {normalize_values, 2, normalize_str, NULL};

static const struct int_range dim_range = {1, SCENE_MAX_DIM};
static const struct int_range heads_range = {1, SCENE_MAX_HEADS};
static const struct int_range max_len_range = {1, INT_MAX};
static const struct int_range offset_range = {0, SCENE_MAX_POSITION};
static const struct int_range count_range = {0, INT_MAX};
static const struct int_range hidden_range = {1, SCENE_MAX_FFN_HIDDEN};
static const struct int_range layers_range = {1, SCENE_MAX_LAYERS};

static const struct mat_limits table_limits = {INT_MAX, SCENE_MAX_DIM};
static const struct mat_limits qkv_limits = {SCENE_MAX_DIM, SCENE_MAX_DIM *SCENE_MAX_HEADS};
static const struct mat_limits out_limits = {SCENE_MAX_DIM * SCENE_MAX_HEADS,
                                             SCENE_MAX_DIM *SCENE_MAX_HEADS};
static const struct mat_limits head_limits = {SCENE_MAX_DIM, SCENE_MAX_DIM};
static const struct mat_limits fused_limits = {SCENE_MAX_DIM, 3 * SCENE_MAX_DIM};
static const struct mat_limits ffn_limits = {SCENE_MAX_FFN_HIDDEN, SCENE_MAX_FFN_HIDDEN};
static const int stage_values[STAGE_COUNT] = {
#define X(id, ...) STAGE_##id,
    ATTN_STAGES(X)
#undef X
};
/* A stage by its name, or the names --stage also takes (softmax for weights, q, k, v, ...), in
 * any case. */
static inline int stage_alias(const char *name)
{
    return attn_stage_parse(name);
}
static const struct enum_def stage_enum = {stage_values, STAGE_COUNT, stage_str, stage_alias};
static const struct int_range view_range = {0, SCENE_MAX_HEADS};

#endif
