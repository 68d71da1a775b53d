/* schema: the keys of a scene file (README.md ("Scene format")), as tables.
 *
 * Each mapping of the format (top level, embeddings, positional, attention, weights and each
 * entry of weights.heads) is a table of rows {key, node type, handler, field offset}, as in
 * netplan. walk_map() checks the keys (unknown: the nearest valid key is suggested; duplicate:
 * where the first one was), then the node types, then calls each row's handler in table order,
 * so attention is known before weights whatever order the file uses. A mapping's `finish`
 * applies the rules between its keys. Handlers report their problems and carry on, so a single
 * pass finds them all. Sizes are counted on the node tree before any matrix is allocated.
 */
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
#include "pretrained/gpt2.h"
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

static const struct ynode *nd_of(const struct loader *l, int node)
{
    return ytree_node(&l->tree, node);
}

static const char *str_of(const struct loader *l, int node)
{
    return ytree_str(&l->tree, node);
}

/* Formats a key path into a DIAG_PATH_MAX buffer; a path that long is cut, never overrun. */
static void path_fmt(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void path_fmt(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, DIAG_PATH_MAX, fmt, ap);
    va_end(ap);
}

static void join(char *out, const char *path, const char *key)
{
    path_fmt(out, path[0] ? "%s.%s" : "%s%s", path, key);
}

/* ---- scalars ------------------------------------------------------------------------------ */

static bool has_nul(const struct loader *l, int node)
{
    return strlen(str_of(l, node)) != nd_of(l, node)->u.s.len;
}

static bool is_nothing(const struct loader *l, int node)
{
    const struct ynode *nd = nd_of(l, node);
    return nd->type == YNODE_SCALAR && nd->plain && nd->u.s.len == 0;
}

/* YAML 1.1 booleans, any case. */
static int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* Integers and numbers go through common/cnum: the C locale, whatever the UI's. */
static int parse_u64(const char *s, uint64_t *out, bool *negative)
{
    enum cnum_result r = attn_cnum_parse_u64(s, out, negative);
    return r == CNUM_OK ? 0 : r == CNUM_RANGE ? 1 : -1;
}

static int parse_ll(const char *s, long long *out)
{
    enum cnum_result r = attn_cnum_parse_ll(s, out);
    return r == CNUM_OK ? 0 : r == CNUM_RANGE ? 1 : -1;
}

enum num { NUM_OK, NUM_NOT_NUMBER, NUM_NOT_FINITE };

/* A finite number, read as Python reads it (a correctly rounded double). */
static enum num scalar_number(const struct loader *l, int node, double *out)
{
    if (nd_of(l, node)->type != YNODE_SCALAR || has_nul(l, node))
        return NUM_NOT_NUMBER;
    switch (attn_cnum_parse_double(str_of(l, node), false, out)) {
    case CNUM_OK:
        return NUM_OK;
    case CNUM_NOT_FINITE:
        return NUM_NOT_FINITE;
    default:
        return NUM_NOT_NUMBER;
    }
}

/* "'key' must be <what>, got <value>": the message for both wrong node types and bad values. */
static void must_be(struct loader *l, const struct field *f, int node, const char *path);

static void number_error(struct loader *l, const struct field *f, int node, const char *path,
                         enum num r)
{
    char buf[LOADER_SHOW_MAX];
    if (r == NUM_NOT_NUMBER)
        must_be(l, f, node, path);
    else
        attn_loader_error(l, node, path, "'%s' must be a finite number, got %s", f->key,
                          attn_loader_show(l, node, buf, sizeof(buf)));
}

/* ---- handlers: single values ------------------------------------------------------------ */

static void h_enum(struct loader *l, const struct field *f, int node, void *base, const char *path);

static void must_be(struct loader *l, const struct field *f, int node, const char *path)
{
    char buf[LOADER_SHOW_MAX], what[256];
    const char *w = f->what;
    if (f->handler == h_enum) {
        /* "whitespace, words or chars" */
        const struct enum_def *e = f->arg;
        size_t o = 0;
        what[0] = '\0';
        for (int i = 0; i < e->n && o < sizeof(what); i++)
            o += (size_t)snprintf(what + o, sizeof(what) - o, "%s%s",
                                  i == 0          ? ""
                                  : i == e->n - 1 ? " or "
                                                  : ", ",
                                  e->name(e->values[i]));
        w = what;
    }
    attn_loader_error(l, node, path, "'%s' must be %s, got %s", f->key, w,
                      attn_loader_show(l, node, buf, sizeof(buf)));
}

static void h_int(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    const struct int_range *r = f->arg;
    long long v = 0;
    int rc = parse_ll(str_of(l, node), &v);
    if (rc < 0 || has_nul(l, node)) {
        must_be(l, f, node, path);
        return;
    }
    if (rc > 0 || v < r->min || v > r->max) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_show(l, node, buf, sizeof(buf));
        if (r->max >= INT_MAX && (rc > 0 || v > r->max)) /* 20 digits: not "at least 0" */
            attn_loader_error(l, node, path, "'%s' is out of range, got %s (at most %lld)", f->key,
                              buf, r->max);
        else if (r->max >= INT_MAX)
            attn_loader_error(l, node, path, "'%s' must be at least %lld, got %s", f->key, r->min,
                              buf);
        else
            attn_loader_error(l, node, path, "'%s' must be between %lld and %lld, got %s", f->key,
                              r->min, r->max, buf);
        return;
    }
    *FIELD(base, f, int) = (int)v;
}

static void h_version(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    long long v;
    if (parse_ll(str_of(l, node), &v) != 0 || has_nul(l, node)) {
        must_be(l, f, node, path);
        return;
    }
    if (v != SCENE_SCHEMA_VERSION)
        attn_loader_error(l, node, path,
                          "unsupported schema version %lld: this attnscope reads version %d", v,
                          SCENE_SCHEMA_VERSION);
}

static int seed_value(struct loader *l, const struct field *f, int node, const char *path,
                      uint64_t *out)
{
    bool neg;
    int rc = parse_u64(str_of(l, node), out, &neg);
    if (rc != 0 || has_nul(l, node) || (neg && *out != 0)) {
        must_be(l, f, node, path);
        return -1;
    }
    return 0;
}

static void h_seed(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    uint64_t v;
    if (seed_value(l, f, node, path, &v) == 0)
        *FIELD(base, f, uint64_t) = v;
}

static void h_opt_seed(struct loader *l, const struct field *f, int node, void *base,
                       const char *path)
{
    uint64_t v;
    if (seed_value(l, f, node, path, &v) == 0) {
        struct attn_opt_seed *s = FIELD(base, f, struct attn_opt_seed);
        s->set = true;
        s->value = v;
    }
}

static void h_bool(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    bool v;
    if (parse_bool(str_of(l, node), &v) != 0)
        must_be(l, f, node, path);
    else
        *FIELD(base, f, bool) = v;
}

static void h_tristate(struct loader *l, const struct field *f, int node, void *base,
                       const char *path)
{
    bool v;
    if (parse_bool(str_of(l, node), &v) != 0)
        must_be(l, f, node, path);
    else
        *FIELD(base, f, enum attn_tristate) = v ? TRI_TRUE : TRI_FALSE;
}

static void h_enum(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    const struct enum_def *e = f->arg;
    for (int i = 0; i < e->n; i++) {
        if (strcasecmp(str_of(l, node), e->name(e->values[i])) == 0 && !has_nul(l, node)) {
            *FIELD(base, f, int) = e->values[i];
            return;
        }
    }
    int v = e->alias && !has_nul(l, node) ? e->alias(str_of(l, node)) : -1;
    if (v >= 0) {
        *FIELD(base, f, int) = v;
        return;
    }
    must_be(l, f, node, path);
}

/* A string value: "nothing" (an empty plain value) and NUL characters are refused. */
static bool string_ok(struct loader *l, const struct field *f, int node, const char *path)
{
    if (is_nothing(l, node)) {
        must_be(l, f, node, path);
        return false;
    }
    if (has_nul(l, node)) {
        attn_loader_error(l, node, path, "'%s' must not contain NUL characters", f->key);
        return false;
    }
    return true;
}

static void h_string(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    if (!string_ok(l, f, node, path))
        return;
    char **dst = FIELD(base, f, char *);
    char *copy = strdup(str_of(l, node));
    if (!copy) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    free(*dst);
    *dst = copy;
}

/* text is tokenised at the end, once tokenizer is known (finish_top). */
static void h_text(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    if (string_ok(l, f, node, path))
        l->text_node = node;
}

static void h_tokens(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    char buf[LOADER_SHOW_MAX];
    if (nd->u.c.count == 0) {
        attn_loader_error(l, node, path, "'tokens' is empty: give at least one token");
        return;
    }
    if (nd->u.c.count > SCENE_MAX_TOKENS) {
        attn_loader_error(l, node, path, "'tokens' has %d tokens, the limit is %d", nd->u.c.count,
                          SCENE_MAX_TOKENS);
        return;
    }
    bool ok = true;
    int i = 1;
    for (int c = nd->u.c.first; c >= 0 && !l->yd.stopped; c = nd_of(l, c)->next, i++) {
        const struct ynode *t = nd_of(l, c);
        if (t->type == YNODE_BAD) {
            ok = false;
        } else if (t->type != YNODE_SCALAR) {
            attn_loader_error(l, c, path, "token %d must be a string, got %s", i,
                              attn_loader_show(l, c, buf, sizeof(buf)));
            ok = false;
        } else if (t->u.s.len == 0) {
            attn_loader_error(l, c, path, "token %d is empty", i);
            ok = false;
        } else if (has_nul(l, c)) {
            attn_loader_error(l, c, path, "token %d contains a NUL character", i);
            ok = false;
        } else if (t->u.s.len > SCENE_MAX_TOKEN_BYTES) {
            attn_loader_error(l, c, path, "token %d is %u bytes long, the limit is %d bytes", i,
                              (unsigned)t->u.s.len, SCENE_MAX_TOKEN_BYTES);
            ok = false;
        }
    }
    if (ok)
        l->tokens_node = node;
}

static void h_probability(struct loader *l, const struct field *f, int node, void *base,
                          const char *path)
{
    double v;
    enum num r = scalar_number(l, node, &v);
    if (r != NUM_OK) {
        number_error(l, f, node, path, r);
        return;
    }
    if (v < 0 || v > 1) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path, "'%s' must be between 0 and 1, got %s", f->key,
                          attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    *FIELD(base, f, double) = v;
}

/* A number above 0 (a base, an epsilon). */
static void h_positive(struct loader *l, const struct field *f, int node, void *base,
                       const char *path)
{
    double v;
    enum num r = scalar_number(l, node, &v);
    if (r != NUM_OK) {
        number_error(l, f, node, path, r);
        return;
    }
    if (!(v > 0)) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path, "'%s' must be a number above 0, got %s", f->key,
                          attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    *FIELD(base, f, double) = v;
}

/* scale: true (divide by sqrt(d_k)), false (do not scale) or a positive number to divide by. */
static void h_scale(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    struct attn_config *a = FIELD(base, f, struct attn_config);
    bool b;
    if (parse_bool(str_of(l, node), &b) == 0) {
        a->scale = b ? SCALE_SQRT_DK : SCALE_NONE;
        return;
    }
    double v;
    enum num r = scalar_number(l, node, &v);
    if (r != NUM_OK) {
        number_error(l, f, node, path, r);
        return;
    }
    if (!(v > 0)) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path, "'%s' must be true, false or a positive number, got %s",
                          f->key, attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    a->scale = SCALE_DIVISOR;
    a->scale_divisor = v;
}

/* ---- handlers: matrices ------------------------------------------------------------------ */

/* One number of a matrix or vector; `where` says which ("row 2, column 3"). */
static bool read_value(struct loader *l, int node, const char *label, const char *where,
                       const char *path, float *out)
{
    double v;
    enum num r = scalar_number(l, node, &v);
    /* Up to FLT_MAX + half an ulp rounds to FLT_MAX; beyond that float32 has no value. */
    if (r == NUM_OK && fabs(v) < 0x1.ffffffp+127) {
        *out = fabs(v) > FLT_MAX ? (v < 0 ? -FLT_MAX : FLT_MAX) : (float)v;
        return true;
    }
    if (nd_of(l, node)->type == YNODE_BAD)
        return false;
    char buf[LOADER_SHOW_MAX];
    attn_loader_show(l, node, buf, sizeof(buf));
    if (r == NUM_NOT_NUMBER)
        attn_loader_error(l, node, path, "'%s' %s must be a number, got %s", label, where, buf);
    else if (r == NUM_NOT_FINITE)
        attn_loader_error(l, node, path, "'%s' %s must be a finite number, got %s", label, where,
                          buf);
    else
        attn_loader_error(l, node, path, "'%s' %s must fit in a 32-bit float, got %s", label, where,
                          buf);
    return false;
}

/* ---- {file: name.npy}, {file: name.csv} ------------------------------------------------------ */

/* True when node is a mapping with a 'file' key: a reference to a .npy or .csv file. */
static bool is_file_ref(const struct loader *l, int node)
{
    const struct ynode *nd = nd_of(l, node);
    if (nd->type != YNODE_MAP)
        return false;
    for (int k = nd->u.c.first; k >= 0;) {
        if (nd_of(l, k)->type == YNODE_SCALAR && strcmp(str_of(l, k), "file") == 0)
            return true;
        int v = nd_of(l, k)->next;
        k = v >= 0 ? nd_of(l, v)->next : -1;
    }
    return false;
}

static bool is_csv_name(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcasecmp(name + n - 4, ".csv") == 0;
}

/* "(3, 4)", "(5,)" */
static void shape_str(char *out, size_t size, const struct npy_array *a)
{
    size_t o = (size_t)snprintf(out, size, "(");
    for (int d = 0; d < a->ndim && o < size; d++)
        o += (size_t)snprintf(out + o, size - o, "%s%zu", d ? ", " : "", a->shape[d]);
    if (o < size)
        snprintf(out + o, size - o, a->ndim == 1 ? ",)" : ")");
}

/* Reads {file: PATH} (PATH relative to the scene file's folder; a .csv name is read as CSV,
 * any other as .npy) into a float array of ndim dimensions: a vector (1) also takes one row or
 * one column, a dropout mask (3) also its (heads * n) x n rows as export writes them. Reports
 * its problems at the reference and remembers the file for the problems found later. */
static int read_file_ref(struct loader *l, int node, const char *label, const char *path, int ndim,
                         struct npy_array *out, const char **file)
{
    const struct ynode *nd = nd_of(l, node);
    char buf[LOADER_SHOW_MAX];
    int value = -1;
    for (int k = nd->u.c.first; k >= 0;) {
        int v = nd_of(l, k)->next;
        if (nd_of(l, k)->type != YNODE_SCALAR || strcmp(str_of(l, k), "file") != 0) {
            attn_loader_error(l, k, path,
                              "'%s' is a file reference: {file: name.npy} and nothing else", label);
            return -1;
        }
        value = v;
        k = v >= 0 ? nd_of(l, v)->next : -1;
    }
    if (value < 0 || nd_of(l, value)->type != YNODE_SCALAR || is_nothing(l, value) ||
        has_nul(l, value)) {
        attn_loader_error(l, value >= 0 ? value : node, path,
                          "'%s' file must be the name of a .npy or .csv file, got %s", label,
                          value >= 0 ? attn_loader_show(l, value, buf, sizeof(buf)) : "nothing");
        return -1;
    }
    const char *name = str_of(l, value);
    *file = name;
    char full[8192];
    int len = name[0] == '/' || !l->dir[0] ? snprintf(full, sizeof(full), "%s", name)
                                           : snprintf(full, sizeof(full), "%s/%s", l->dir, name);
    if (len < 0 || (size_t)len >= sizeof(full)) {
        attn_loader_error(l, value, path, "'%s': the file name is too long", label);
        return -1;
    }
    struct diag err;
    int rc = is_csv_name(name) ? attn_csvmat_read(out, full, MAX_VALUES, &err)
                               : attn_npy_read(out, full, MAX_VALUES, &err);
    if (rc != 0) {
        attn_loader_error(l, value, path, "'%s': %s: %s", label, name, err.msg);
        return -1;
    }
    /* Integers and booleans are 0/1 masks (NumPy writes a bool mask as '|b1'); as weights or
       embeddings they are most likely the wrong file: token ids, a mask, a shape. */
    if (ndim != 3 && out->descr[0] && out->descr[1] != 'f') {
        char kind = out->descr[1], type[16] = "bool";
        if (kind != 'b')
            snprintf(type, sizeof(type), "%s%d", kind == 'u' ? "uint" : "int",
                     8 * (out->descr[2] - '0'));
        attn_loader_error(
            l, value, path,
            "'%s': %s holds %s values (dtype '%s'); '%s' must be floats: save it with "
            ".astype(numpy.float32)",
            label, name, type, out->descr, label);
        attn_npy_free(out);
        return -1;
    }
    bool vector_2d = ndim == 1 && out->ndim == 2 && (out->shape[0] == 1 || out->shape[1] == 1);
    bool mask_2d = ndim == 3 && out->ndim == 2;
    if (out->ndim != ndim && !vector_2d && !mask_2d) {
        char shape[96];
        shape_str(shape, sizeof(shape), out);
        attn_loader_error(l, value, path, "'%s': %s has shape %s, expected %s", label, name, shape,
                          ndim == 1   ? "one dimension, one row or one column"
                          : ndim == 2 ? "two dimensions (rows, columns)"
                                      : "(heads, n, n) or (heads * n, n)");
        attn_npy_free(out);
        return -1;
    }
    if (vector_2d) {
        out->ndim = 1;
        out->shape[0] = out->count;
    }
    attn_loader_set_file(l, path, name);
    return 0;
}

/* A matrix from a .npy or .csv file, within the same limits as one written inline. */
static int read_matrix_file(struct loader *l, int node, const char *label, const char *path,
                            const struct mat_limits *lim, struct attn_matrix *out)
{
    struct npy_array a;
    const char *name;
    if (read_file_ref(l, node, label, path, 2, &a, &name) != 0)
        return -1;
    int rc = -1;
    if (a.shape[0] == 0 || a.shape[1] == 0)
        attn_loader_error(l, node, path, "'%s': %s is empty", label, name);
    else if (a.shape[0] > (size_t)lim->max_rows)
        attn_loader_error(l, node, path, "'%s': %s has %zu rows, the limit is %d", label, name,
                          a.shape[0], lim->max_rows);
    else if (a.shape[1] > (size_t)lim->max_cols)
        attn_loader_error(l, node, path, "'%s': %s has %zu columns, the limit is %d", label, name,
                          a.shape[1], lim->max_cols);
    else
        rc = 0;
    if (rc == 0) {
        out->data = a.data;
        out->rows = (int)a.shape[0];
        out->cols = (int)a.shape[1];
        a.data = NULL;
    }
    attn_npy_free(&a);
    return rc;
}

/* A list of rows, counted and checked for raggedness and limits before it is allocated. */
static int read_matrix(struct loader *l, int node, const char *label, const char *path,
                       const struct mat_limits *lim, struct attn_matrix *out)
{
    if (is_file_ref(l, node))
        return read_matrix_file(l, node, label, path, lim, out);
    const struct ynode *nd = nd_of(l, node);
    char buf[LOADER_SHOW_MAX];
    if (nd->type != YNODE_SEQ) {
        attn_loader_error(
            l, node, path,
            "'%s' must be a list of rows like [[1, 2], [3, 4]] or {file: name.npy or .csv}, got %s",
            label, attn_loader_show(l, node, buf, sizeof(buf)));
        return -1;
    }
    int rows = nd->u.c.count;
    if (rows == 0) {
        attn_loader_error(l, node, path, "'%s' is empty: give at least one row", label);
        return -1;
    }
    if (rows > lim->max_rows) {
        attn_loader_error(l, node, path, "'%s' has %d rows, the limit is %d", label, rows,
                          lim->max_rows);
        return -1;
    }
    if (nd_of(l, nd->u.c.first)->type == YNODE_SCALAR) {
        attn_loader_error(l, node, path,
                          "'%s' must be a list of rows like [[1, 2], [3, 4]], got a flat list "
                          "(write one row as [[1, 2]])",
                          label);
        return -1;
    }
    int cols = -1, r = 1;
    bool bad = false;
    for (int row = nd->u.c.first; row >= 0 && !l->yd.stopped; row = nd_of(l, row)->next, r++) {
        const struct ynode *rn = nd_of(l, row);
        if (rn->type == YNODE_BAD) {
            bad = true;
            continue;
        }
        if (rn->type != YNODE_SEQ) {
            attn_loader_error(l, row, path, "'%s' row %d must be a list of numbers, got %s", label,
                              r, attn_loader_show(l, row, buf, sizeof(buf)));
            bad = true;
            continue;
        }
        if (cols < 0) {
            cols = rn->u.c.count;
            if (cols == 0) {
                attn_loader_error(l, row, path, "'%s' row 1 is empty", label);
                return -1;
            }
            if (cols > lim->max_cols) {
                attn_loader_error(l, row, path, "'%s' has %d columns, the limit is %d", label, cols,
                                  lim->max_cols);
                return -1;
            }
        } else if (rn->u.c.count != cols) {
            attn_loader_error(l, row, path, "'%s' row %d has %d value%s, expected %d", label, r,
                              rn->u.c.count, rn->u.c.count == 1 ? "" : "s", cols);
            bad = true;
        }
    }
    if (bad || cols < 0 || l->yd.stopped)
        return -1;
    if ((size_t)rows * (size_t)cols > MAX_VALUES) {
        attn_loader_error(l, node, path, "'%s' is too large: %d x %d values, the limit is %zu",
                          label, rows, cols, (size_t)MAX_VALUES);
        return -1;
    }
    if (attn_matrix_alloc(out, rows, cols) != 0) {
        attn_loader_error(l, node, path, "out of memory for '%s' (%d x %d)", label, rows, cols);
        return -1;
    }
    r = 0;
    for (int row = nd->u.c.first; row >= 0 && !l->yd.stopped; row = nd_of(l, row)->next, r++) {
        int c = 0;
        for (int v = nd_of(l, row)->u.c.first; v >= 0 && !l->yd.stopped;
             v = nd_of(l, v)->next, c++) {
            char where[64];
            snprintf(where, sizeof(where), "row %d, column %d", r + 1, c + 1);
            if (!read_value(l, v, label, where, path, &out->data[(size_t)r * cols + c]))
                bad = true;
        }
    }
    if (bad || l->yd.stopped) {
        attn_matrix_free(out);
        return -1;
    }
    return 0;
}

/* A flat list of numbers, stored as a (1, n) matrix. */
static int read_vector(struct loader *l, int node, const char *label, const char *path, int max_len,
                       struct attn_matrix *out)
{
    const struct ynode *nd = nd_of(l, node);
    if (is_file_ref(l, node)) {
        struct npy_array a;
        const char *name;
        if (read_file_ref(l, node, label, path, 1, &a, &name) != 0)
            return -1;
        int rc = -1;
        if (a.shape[0] == 0)
            attn_loader_error(l, node, path, "'%s' is empty: give at least one number", label);
        else if (a.shape[0] > (size_t)max_len)
            attn_loader_error(l, node, path, "'%s': %s has %zu values, the limit is %d", label,
                              name, a.shape[0], max_len);
        else
            rc = 0;
        if (rc == 0) {
            out->data = a.data;
            out->rows = 1;
            out->cols = (int)a.shape[0];
            a.data = NULL;
        }
        attn_npy_free(&a);
        return rc;
    }
    if (nd->type != YNODE_SEQ) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path,
                          "'%s' must be a list of numbers or {file: name.npy or .csv}, got %s",
                          label, attn_loader_show(l, node, buf, sizeof(buf)));
        return -1;
    }
    int n = nd->u.c.count;
    if (n == 0) {
        attn_loader_error(l, node, path, "'%s' is empty: give at least one number", label);
        return -1;
    }
    if (n > max_len) {
        attn_loader_error(l, node, path, "'%s' has %d values, the limit is %d", label, n, max_len);
        return -1;
    }
    if (attn_matrix_alloc(out, 1, n) != 0) {
        attn_loader_error(l, node, path, "out of memory for '%s'", label);
        return -1;
    }
    bool bad = false;
    int i = 0;
    for (int v = nd->u.c.first; v >= 0 && !l->yd.stopped; v = nd_of(l, v)->next, i++) {
        char where[32];
        snprintf(where, sizeof(where), "value %d", i + 1);
        if (!read_value(l, v, label, where, path, &out->data[i]))
            bad = true;
    }
    if (bad || l->yd.stopped) {
        attn_matrix_free(out);
        return -1;
    }
    return 0;
}

static void h_matrix(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    struct attn_matrix m = {0};
    if (read_matrix(l, node, f->key, path, f->arg, &m) == 0) {
        struct attn_matrix *dst = FIELD(base, f, struct attn_matrix);
        attn_matrix_free(dst);
        *dst = m;
    }
}

static void h_vector(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    const struct mat_limits *lim = f->arg;
    struct attn_matrix m = {0};
    if (read_vector(l, node, f->key, path, lim->max_cols, &m) == 0) {
        struct attn_matrix *dst = FIELD(base, f, struct attn_matrix);
        attn_matrix_free(dst);
        *dst = m;
    }
}

/* weights.dropout_mask: heads x n x n of 0/1. The number of heads is not stored in the scene,
 * so it is checked here against attention.heads. */
/* weights.dropout_mask as {file: mask.npy}: heads x n x n of 0 and 1, or the (heads * n) x n
 * rows of export's params/dropout_mask (.csv or .npy), head after head: the same values in the
 * same order. */
static void dropout_mask_file(struct loader *l, int node, const char *path, struct attn_scene *s)
{
    struct npy_array a;
    const char *name;
    if (read_file_ref(l, node, "dropout_mask", path, 3, &a, &name) != 0)
        return;
    bool rows = a.ndim == 2;
    size_t n = a.shape[1], heads = rows ? (n ? a.shape[0] / n : 0) : a.shape[0];
    if (heads == 0 || heads > SCENE_MAX_HEADS || n == 0 || n > SCENE_MAX_TOKENS ||
        (rows ? a.shape[0] % n != 0 : a.shape[2] != n)) {
        char shape[96];
        shape_str(shape, sizeof(shape), &a);
        attn_loader_error(
            l, node, path,
            "'dropout_mask': %s has shape %s, expected (heads, n, n) or (heads * n, n) "
            "with 1 to %d heads and 1 to %d tokens",
            name, shape, SCENE_MAX_HEADS, SCENE_MAX_TOKENS);
        attn_npy_free(&a);
        return;
    }
    if (!attn_loader_bad(l, "attention.heads") && (int)heads != s->attn.heads) {
        attn_loader_error(l, node, path,
                          "'dropout_mask': %s has %zu heads, expected %d (attention.heads)", name,
                          heads, s->attn.heads);
        attn_npy_free(&a);
        return;
    }
    unsigned char *mask = malloc(a.count ? a.count : 1);
    if (!mask) {
        attn_loader_error(l, node, path, "out of memory for 'dropout_mask'");
        attn_npy_free(&a);
        return;
    }
    for (size_t i = 0; i < a.count; i++) {
        if (a.data[i] != 0.0f && a.data[i] != 1.0f) {
            attn_loader_error(
                l, node, path,
                "'dropout_mask': %s value %zu (head %zu row %zu, column %zu) is %g, not "
                "0 or 1",
                name, i, i / (n * n) + 1, i / n % n + 1, i % n + 1, (double)a.data[i]);
            free(mask);
            attn_npy_free(&a);
            return;
        }
        mask[i] = a.data[i] != 0.0f;
    }
    attn_npy_free(&a);
    free(s->weights.dropout_mask);
    s->weights.dropout_mask = mask;
    s->weights.dropout_mask_n = (int)n;
    s->weights.dropout_mask_heads = (int)heads;
}

static void h_dropout_mask(struct loader *l, const struct field *f, int node, void *base,
                           const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (is_file_ref(l, node)) {
        dropout_mask_file(l, node, path, s);
        return;
    }
    if (nd->type != YNODE_SEQ) {
        must_be(l, f, node, path);
        return;
    }
    int heads = nd->u.c.count, n = -1;
    if (heads == 0) {
        attn_loader_error(l, node, path, "'dropout_mask' is empty: give one n x n matrix per head");
        return;
    }
    if (heads > SCENE_MAX_HEADS) {
        attn_loader_error(l, node, path, "'dropout_mask' has %d heads, the limit is %d", heads,
                          SCENE_MAX_HEADS);
        return;
    }
    char buf[LOADER_SHOW_MAX];
    bool bad = false;
    int h = 1;
    for (int layer = nd->u.c.first; layer >= 0 && !l->yd.stopped;
         layer = nd_of(l, layer)->next, h++) {
        const struct ynode *ln = nd_of(l, layer);
        if (ln->type != YNODE_SEQ ||
            (ln->u.c.count > 0 && nd_of(l, ln->u.c.first)->type != YNODE_SEQ)) {
            if (ln->type != YNODE_BAD)
                attn_loader_error(
                    l, layer, path,
                    "'dropout_mask' head %d must be an n x n matrix of 0 and 1, got %s", h,
                    ln->type == YNODE_SEQ ? "a flat list"
                                          : attn_loader_show(l, layer, buf, sizeof(buf)));
            bad = true;
            continue;
        }
        if (n < 0) {
            n = ln->u.c.count;
            if (n == 0 || n > SCENE_MAX_TOKENS) {
                attn_loader_error(l, layer, path,
                                  "'dropout_mask' head 1 has %d rows, expected 1 to %d", n,
                                  SCENE_MAX_TOKENS);
                return;
            }
        } else if (ln->u.c.count != n) {
            attn_loader_error(l, layer, path, "'dropout_mask' head %d has %d rows, expected %d", h,
                              ln->u.c.count, n);
            bad = true;
            continue;
        }
        int r = 1;
        for (int row = ln->u.c.first; row >= 0 && !l->yd.stopped; row = nd_of(l, row)->next, r++) {
            const struct ynode *rn = nd_of(l, row);
            if (rn->type != YNODE_SEQ) {
                if (rn->type != YNODE_BAD)
                    attn_loader_error(
                        l, row, path,
                        "'dropout_mask' head %d row %d must be a list of 0 and 1, got %s", h, r,
                        attn_loader_show(l, row, buf, sizeof(buf)));
                bad = true;
            } else if (rn->u.c.count != n) {
                attn_loader_error(l, row, path,
                                  "'dropout_mask' head %d row %d has %d value%s, expected %d", h, r,
                                  rn->u.c.count, rn->u.c.count == 1 ? "" : "s", n);
                bad = true;
            }
        }
    }
    if (bad || n < 0 || l->yd.stopped)
        return;
    if (!attn_loader_unknown(l, "attention.heads") && heads != s->attn.heads) {
        attn_loader_error(l, node, path,
                          "'dropout_mask' has %d heads, expected %d (attention.heads)", heads,
                          s->attn.heads);
        return;
    }
    unsigned char *mask = malloc((size_t)heads * (size_t)n * (size_t)n);
    if (!mask) {
        attn_loader_error(l, node, path, "out of memory for 'dropout_mask'");
        return;
    }
    size_t i = 0;
    h = 1;
    for (int layer = nd->u.c.first; layer >= 0 && !l->yd.stopped;
         layer = nd_of(l, layer)->next, h++) {
        int r = 1;
        for (int row = nd_of(l, layer)->u.c.first; row >= 0 && !l->yd.stopped;
             row = nd_of(l, row)->next, r++) {
            int c = 1;
            for (int v = nd_of(l, row)->u.c.first; v >= 0 && !l->yd.stopped;
                 v = nd_of(l, v)->next, c++) {
                const struct ynode *vn = nd_of(l, v);
                const char *t = vn->type == YNODE_SCALAR ? str_of(l, v) : "";
                bool one = vn->type == YNODE_SCALAR && strcmp(t, "1") == 0;
                bool zero = vn->type == YNODE_SCALAR && strcmp(t, "0") == 0;
                if (!one && !zero) {
                    if (vn->type != YNODE_BAD)
                        attn_loader_error(
                            l, v, path,
                            "'dropout_mask' head %d row %d, column %d must be 0 or 1, "
                            "got %s",
                            h, r, c, attn_loader_show(l, v, buf, sizeof(buf)));
                    bad = true;
                }
                mask[i++] = one;
            }
        }
    }
    if (bad || l->yd.stopped) {
        free(mask);
        return;
    }
    free(s->weights.dropout_mask);
    s->weights.dropout_mask = mask;
    s->weights.dropout_mask_n = n;
    s->weights.dropout_mask_heads = heads;
}

/* ---- mappings ---------------------------------------------------------------------------- */

static void walk_map(struct loader *l, int node, const struct mapping *m, void *base,
                     const char *path);

static void h_map(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    walk_map(l, node, f->arg, base, path);
}

static const struct mapping embeddings_map;
static const struct mapping head_map;

/* embeddings: explicit rows, or {dim, seed} for a drawn nn.Embedding. */
static void h_embeddings(struct loader *l, const struct field *f, int node, void *base,
                         const char *path)
{
    static const struct mat_limits lim = {SCENE_MAX_TOKENS, SCENE_MAX_DIM};
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_SEQ || is_file_ref(l, node)) {
        struct attn_matrix m = {0};
        if (read_matrix(l, node, f->key, path, &lim, &m) == 0) {
            attn_matrix_free(&s->embed.rows);
            s->embed.rows = m;
            s->embed.kind = EMBED_EXPLICIT;
        }
    } else if (nd->type == YNODE_MAP) {
        walk_map(l, node, &embeddings_map, base, path);
    } else {
        must_be(l, f, node, path);
    }
}

static void finish_embeddings(struct loader *l, int node, const int *found, void *base,
                              const char *path)
{
    struct attn_scene *s = base;
    /* dim keeps attn_scene_init's default (3) when only seed is given. */
    if (!attn_loader_bad(l, path))
        s->embed.kind = EMBED_LEARNED;
}

/* Item number i of the list at path, registered as path[i] (written into ipath). True when it is
 * a mapping to walk; anything else is reported as "<what> <number> of '<list>' must be <must>". */
static bool list_item_map(struct loader *l, int item, const char *path, int i,
                          char ipath[DIAG_PATH_MAX], const char *what, int number, const char *list,
                          const char *must)
{
    path_fmt(ipath, "%s[%d]", path, i);
    attn_loader_register(l, ipath, item, item);
    const struct ynode *in = nd_of(l, item);
    if (in->type == YNODE_MAP)
        return true;
    if (in->type == YNODE_BAD) {
        attn_loader_mark_bad(l, ipath);
        return false;
    }
    char buf[LOADER_SHOW_MAX];
    attn_loader_error(l, item, ipath, "%s %d of '%s' must be %s, got %s", what, number, list, must,
                      attn_loader_show(l, item, buf, sizeof(buf)));
    return false;
}

/* weights.heads: one mapping per head, each d_in x d_out; assembled in finish_weights. */
static void h_heads(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    if (nd->u.c.count == 0) {
        attn_loader_error(l, node, path, "'weights.heads' is empty: give one mapping per head");
        return;
    }
    if (nd->u.c.count > SCENE_MAX_HEADS) {
        attn_loader_error(l, node, path, "'weights.heads' has %d entries, the limit is %d",
                          nd->u.c.count, SCENE_MAX_HEADS);
        return;
    }
    attn_schema_free_heads(l);
    l->heads = calloc((size_t)nd->u.c.count, sizeof(*l->heads));
    if (!l->heads) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    l->n_heads = nd->u.c.count;
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        if (list_item_map(l, item, path, i, ipath, "head", i + 1, "weights.heads",
                          "a mapping with query, key and value"))
            walk_map(l, item, &head_map, &l->heads[i], ipath);
    }
}

void attn_schema_free_heads(struct loader *l)
{
    for (int i = 0; i < l->n_heads; i++) {
        struct head_weights *h = &l->heads[i];
        attn_matrix_free(&h->query);
        attn_matrix_free(&h->key);
        attn_matrix_free(&h->value);
        attn_matrix_free(&h->query_bias);
        attn_matrix_free(&h->key_bias);
        attn_matrix_free(&h->value_bias);
    }
    free(l->heads);
    l->heads = NULL;
    l->n_heads = 0;
}

static const struct {
    const char *key;
    size_t member;
    bool bias;
} head_members[] = {
    {"query", offsetof(struct head_weights, query), false},
    {"key", offsetof(struct head_weights, key), false},
    {"value", offsetof(struct head_weights, value), false},
    {"query_bias", offsetof(struct head_weights, query_bias), true},
    {"key_bias", offsetof(struct head_weights, key_bias), true},
    {"value_bias", offsetof(struct head_weights, value_bias), true},
};
#define N_HEAD_MEMBERS 6

static const struct attn_matrix *head_member(const struct loader *l, int h, int i)
{
    return (const struct attn_matrix *)(const void *)((const char *)&l->heads[h] +
                                                      head_members[i].member);
}

/* Puts member i of every head side by side: head h becomes columns [h*cols, (h+1)*cols). */
static int concat_heads(struct attn_matrix *dst, const struct loader *l, int i)
{
    const struct attn_matrix *h0 = head_member(l, 0, i);
    int rows = h0->rows, cols = h0->cols, D = cols * l->n_heads;
    if (attn_matrix_alloc(dst, rows, D) != 0)
        return -1;
    for (int h = 0; h < l->n_heads; h++) {
        const struct attn_matrix *m = head_member(l, h, i);
        for (int r = 0; r < rows; r++)
            memcpy(&dst->data[(size_t)r * D + (size_t)h * cols], &m->data[(size_t)r * cols],
                   (size_t)cols * sizeof(float));
    }
    return 0;
}

static void assemble_heads(struct loader *l, struct attn_scene *s, int node, const char *path)
{
    if (!attn_loader_unknown(l, "attention.head_layout") && s->attn.layout != LAYOUT_WRAPPER) {
        attn_loader_error(l, node, path,
                          "'weights.heads' is for head_layout: wrapper; with the split layout give "
                          "'query', 'key' and 'value' directly");
        return;
    }
    if (!attn_loader_unknown(l, "attention.heads") && l->n_heads != s->attn.heads) {
        attn_loader_error(l, node, path, "'weights.heads' has %d %s, expected %d (attention.heads)",
                          l->n_heads, l->n_heads == 1 ? "entry" : "entries", s->attn.heads);
        return;
    }
    if (attn_loader_bad(l, path) || l->n_heads == 0)
        return;
    /* Every head gives query, key and value, all of head 1's query shape; biases are given
     * for every head or for none, with head 1's width. */
    const struct attn_matrix *q0 = &l->heads[0].query;
    for (int h = 0; h < l->n_heads && !l->yd.stopped; h++) {
        char hpath[DIAG_PATH_MAX];
        path_fmt(hpath, "%s[%d]", path, h);
        const struct loader_key *item = attn_loader_find(l, hpath);
        int item_node = item ? item->value : node;
        for (int i = 0; i < N_HEAD_MEMBERS; i++) {
            const struct attn_matrix *m = head_member(l, h, i), *m0 = head_member(l, 0, i);
            char mpath[DIAG_PATH_MAX];
            join(mpath, hpath, head_members[i].key);
            const struct loader_key *k = attn_loader_find(l, mpath);
            if (!m->data && !head_members[i].bias) {
                attn_loader_error(l, item_node, hpath, "head %d of 'weights.heads' is missing '%s'",
                                  h + 1, head_members[i].key);
                continue;
            }
            if (!m->data && !m0->data)
                continue;
            if (!m->data || !m0->data) {
                attn_loader_error(l, m->data && k ? k->key : item_node, mpath,
                                  "head %d of 'weights.heads' %s '%s' but head 1 %s", h + 1,
                                  m->data ? "has" : "has no", head_members[i].key,
                                  m->data ? "does not" : "does");
                continue;
            }
            if (!q0->data)
                continue;
            int er = head_members[i].bias ? 1 : q0->rows, ec = q0->cols;
            const char *file = attn_loader_file(l, mpath);
            if (m->rows != er || m->cols != ec)
                attn_loader_error(
                    l, k ? k->value : item_node, mpath,
                    "head %d '%s' is %d x %d, expected %d x %d like head 1's 'query'%s%s%s", h + 1,
                    head_members[i].key, m->rows, m->cols, er, ec, file ? " (read from " : "",
                    file ? file : "", file ? ")" : "");
        }
    }
    if (attn_loader_bad(l, path))
        return;
    if ((size_t)q0->rows * (size_t)q0->cols * (size_t)l->n_heads > MAX_VALUES) {
        attn_loader_error(l, node, path, "'weights.heads' is too large: %d heads of %d x %d values",
                          l->n_heads, q0->rows, q0->cols);
        return;
    }
    /* Every head must have passed its shape checks: concat_heads copies all of them. */
    if (l->yd.stopped || attn_loader_bad(l, path))
        return;
    struct attn_matrix *dst[N_HEAD_MEMBERS] = {&s->weights.query,    &s->weights.key,
                                               &s->weights.value,    &s->weights.query_bias,
                                               &s->weights.key_bias, &s->weights.value_bias};
    for (int i = 0; i < N_HEAD_MEMBERS; i++) {
        if (!head_member(l, 0, i)->data)
            continue;
        attn_matrix_free(dst[i]);
        if (concat_heads(dst[i], l, i) != 0) {
            attn_loader_error(l, node, path, "out of memory");
            return;
        }
    }
}

enum {
    W_QUERY,
    W_KEY,
    W_VALUE,
    W_QUERY_BIAS,
    W_KEY_BIAS,
    W_VALUE_BIAS,
    W_OUT,
    W_OUT_BIAS,
    W_DROPOUT_MASK,
    W_HEADS,
    W_QKV,
    W_QKV_BIAS,
    W_DOWN,
    W_KEY_UP,
    W_VALUE_UP,
    W_FFN_W1,
    W_FFN_B1,
    W_FFN_W2,
    W_FFN_B2,
    W_NORM1_WEIGHT,
    W_NORM1_BIAS,
    W_NORM2_WEIGHT,
    W_NORM2_BIAS,
    W_FINAL_NORM_WEIGHT,
    W_FINAL_NORM_BIAS,
    W_COUNT
};

/* A key missing from the file but named by an unknown key's message (see mark_meant): the
 * misspelling is the problem to report, not the absence. */
static bool meant_bad(const struct loader *l, const char *path, const char *key)
{
    char p[DIAG_PATH_MAX];
    join(p, path, key);
    return attn_loader_bad(l, p);
}

static void finish_weights(struct loader *l, int node, const int *found, void *base,
                           const char *path)
{
    static const char *const names[W_COUNT] = {"query",        "key",        "value", "query_bias",
                                               "key_bias",     "value_bias", "out",   "out_bias",
                                               "dropout_mask", "heads"};
    struct attn_scene *s = base;
    const struct loader_key *wk = attn_loader_find(l, path);
    int at = wk ? wk->key : node;
    bool qkv = found[W_QUERY] >= 0 || found[W_KEY] >= 0 || found[W_VALUE] >= 0;
    bool heads = found[W_HEADS] >= 0;
    /* Fused QKV and MLA have their own matrices; attn_scene_check says which each mode needs. */
    bool other = found[W_QKV] >= 0 || found[W_DOWN] >= 0 || found[W_KEY_UP] >= 0 ||
                 found[W_VALUE_UP] >= 0 || s->attn.qkv != QKV_SEPARATE || s->attn.kv_latent > 0;
    if (heads && qkv) {
        attn_loader_error(
            l, found[W_HEADS], path,
            "give either 'heads' or 'query', 'key' and 'value' in 'weights', not both");
    } else if (heads) {
        for (int i = W_QUERY_BIAS; i <= W_VALUE_BIAS; i++)
            if (found[i] >= 0)
                attn_loader_error(l, found[i], path,
                                  "with 'weights.heads', give '%s' inside each head", names[i]);
        char hpath[DIAG_PATH_MAX];
        join(hpath, path, "heads");
        assemble_heads(l, s, found[W_HEADS], hpath);
        /* attn_scene_check's complaints about the assembled matrices point at the heads. */
        for (int i = W_QUERY; i <= W_VALUE_BIAS; i++) {
            char p[DIAG_PATH_MAX];
            join(p, path, names[i]);
            attn_loader_register(l, p, found[W_HEADS], found[W_HEADS]);
        }
    } else if (qkv && !other) {
        for (int i = W_QUERY; i <= W_VALUE; i++)
            if (found[i] < 0 && !meant_bad(l, path, names[i]))
                attn_loader_error(l, at, path,
                                  "'weights' needs 'query', 'key' and 'value': '%s' is missing",
                                  names[i]);
    } else if (!other) {
        /* 'out' alone is how a resolved scene with projection none gives its out_proj;
         * attn_scene_check refuses it when the projection needs query/key/value too. */
        for (int i = W_QUERY_BIAS; i <= W_VALUE_BIAS; i++)
            if (found[i] >= 0)
                attn_loader_error(l, found[i], path,
                                  "'weights.%s' needs 'query', 'key' and 'value' (or 'heads') too",
                                  names[i]);
        if (found[W_OUT_BIAS] >= 0 && found[W_OUT] < 0 && !meant_bad(l, path, "out"))
            attn_loader_error(l, found[W_OUT_BIAS], path, "'weights.out_bias' needs 'out' too");
    }
    if (attn_loader_bad(l, path)) {
        attn_scene_weights_free(&s->weights);
        return;
    }
    /* A dropout_mask alone keeps the drawn parameters: set means "parameters given". */
    s->weights.set = qkv || heads || found[W_OUT] >= 0 || found[W_QKV] >= 0 || found[W_DOWN] >= 0 ||
                     found[W_KEY_UP] >= 0 || found[W_VALUE_UP] >= 0;
}

/* text or tokens: exactly one; text is tokenised now that tokenizer is known. */
enum {
    T_VERSION,
    T_TITLE,
    T_TOKENIZER,
    T_TEXT,
    T_TOKENS,
    T_SEED,
    T_EMBEDDINGS,
    T_POSITIONAL,
    T_ATTENTION,
    T_BLOCK,
    T_LAYERS,
    T_WEIGHTS,
    T_VIEW,
    T_MODEL,
    T_LESSON,
    T_ABLATE,
    T_COUNT
};

/* A path of a scene key, relative to the scene file's folder. */
static void beside_scene(char *out, size_t size, const struct loader *l, const char *name)
{
    if (name[0] == '/' || !l->dir[0])
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%s/%s", l->dir, name);
}

/* A file the tokenizer read (resolved: tokenizer.json, or tokenizer_config.json beside it) as
 * the scene names it: named as the scene wrote tokenizer.json's path (given). */
static void scene_relative(char *out, size_t size, const char *file, const char *resolved,
                           const char *given)
{
    if (strcmp(file, resolved) == 0) {
        snprintf(out, size, "%s", given);
        return;
    }
    const char *rs = strrchr(resolved, '/'), *fs = strrchr(file, '/'), *gs = strrchr(given, '/');
    if (rs && fs && rs - resolved == fs - file &&
        strncmp(file, resolved, (size_t)(rs - resolved)) == 0)
        snprintf(out, size, "%.*s%s", gs ? (int)(gs - given + 1) : 0, given, fs + 1);
}

/* The keys a checkpoint decides: given with model:, each is refused where it is written. */
static const char *const model_decides[] = {
    "embeddings",
    "weights",
    "block",
    "attention.projection",
    "attention.d_out",
    "attention.head_layout",
    "attention.qkv",
    "attention.qkv_bias",
    "attention.out_proj",
    "attention.out_bias",
    "attention.kv_heads",
    "attention.kv_latent",
    "attention.scale",
    "attention.normalize",
    "positional.kind",
    "positional.max_len",
    "positional.table",
    "positional.seed",
    "positional.base",
    "positional.rope_pairs",
};

static void load_model(struct loader *l, struct attn_scene *s)
{
    bool refused = false;
    for (size_t i = 0; i < sizeof(model_decides) / sizeof(model_decides[0]); i++) {
        const struct loader_key *k = attn_loader_find(l, model_decides[i]);
        if (k) {
            attn_loader_error(l, k->key, model_decides[i],
                              "'%s' comes from the checkpoint (model): remove it",
                              model_decides[i]);
            refused = true;
        }
    }
    if (refused)
        return;
    if (!attn_tokenizer_has_vocab(s->tokenizer)) {
        const struct loader_key *k = attn_loader_find(l, "model");
        attn_loader_error(
            l, k ? k->key : -1, "model",
            "a GPT-2 checkpoint reads token ids: give its tokenizer, tokenizer: {kind: "
            "gpt2, vocab: vocab.json, merges: merges.txt} or {kind: hf, file: "
            "tokenizer.json}");
        return;
    }
    char file[4200];
    beside_scene(file, sizeof(file), l, l->model_spec.file);
    struct gpt2_overrides o = {attn_loader_find(l, "attention.heads") != NULL,
                               attn_loader_find(l, "layers") != NULL,
                               attn_loader_find(l, "attention.causal") != NULL};
    struct diag err;
    attn_diag_clear(&err);
    if (attn_gpt2_load(s, file, &o, &err) != 0) {
        /* A problem of the checkpoint's config.json is that file's, on the key's line. */
        size_t flen = strlen(err.file);
        if (flen > 12 && strcmp(err.file + flen - 12, "/config.json") == 0) {
            attn_loader_error_in(l, &err, "model");
            return;
        }
        /* at the key the problem is about (layers, heads, text), else at the file */
        const struct loader_key *k = err.path[0] ? attn_loader_find(l, err.path) : NULL;
        const char *at = k ? err.path : "model.file";
        if (!k)
            k = attn_loader_find(l, "model.file");
        /* the file as the scene names it, not as resolved from the scene's folder */
        const char *name = strcmp(err.file, file) == 0 ? l->model_spec.file : err.file;
        attn_loader_error(l, k ? k->value : -1, at, "%s%s%s", name, name[0] ? ": " : "", err.msg);
        attn_loader_mark_bad(l, "model");
    }
}

static void finish_top(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_scene *s = base;
    struct diag err;
    attn_diag_clear(&err);
    if (found[T_TEXT] >= 0 && found[T_TOKENS] >= 0) {
        const struct loader_key *a = attn_loader_find(l, "text"),
                                *b = attn_loader_find(l, "tokens");
        int later = b ? b->key : node;
        if (a && b && attn_loader_line(l, b->key) < attn_loader_line(l, a->key))
            later = a->key;
        attn_loader_error(l, later, "tokens", "give either 'text' or 'tokens', not both");
        attn_loader_mark_bad(l, "text");
        return;
    }
    if (found[T_TEXT] < 0 && found[T_TOKENS] < 0) {
        if (!meant_bad(l, path, "text") && !meant_bad(l, path, "tokens"))
            attn_loader_error(
                l, node, "tokens",
                "the scene needs 'text' (a sentence) or 'tokens' (a list of strings)");
        attn_loader_mark_bad(l, "text");
        return;
    }
    const char *kind = l->tokenizer_spec.kind;
    bool gpt2 =
        kind && strcmp(kind, "gpt2") == 0 && l->tokenizer_spec.vocab && l->tokenizer_spec.merges;
    bool hf = kind && strcmp(kind, "hf") == 0 && l->tokenizer_spec.file;
    if ((gpt2 || hf) && !attn_loader_bad(l, "tokenizer")) {
        char vocab[4200], merges[4200], file[4200];
        int rc;
        if (gpt2) {
            beside_scene(vocab, sizeof(vocab), l, l->tokenizer_spec.vocab);
            beside_scene(merges, sizeof(merges), l, l->tokenizer_spec.merges);
            rc = attn_gpt2_attach_tokenizer(s, vocab, merges, &err);
        } else {
            beside_scene(file, sizeof(file), l, l->tokenizer_spec.file);
            rc = attn_pretrained_attach_hf_tokenizer(s, file, &err);
        }
        if (rc != 0) {
            /* at the file's key; the message names the file and where in it */
            const struct loader_key *k = attn_loader_find(l, hf ? "tokenizer.file" : "tokenizer");
            if (!k)
                k = attn_loader_find(l, "tokenizer");
            char where[64] = "", name[4200];
            if (err.file[0] && err.line > 0)
                snprintf(where, sizeof(where), ":%d:%d", err.line, err.col);
            /* the file as the scene names it, not as resolved from the scene's folder */
            snprintf(name, sizeof(name), "%s", err.file);
            if (hf)
                scene_relative(name, sizeof(name), err.file, file, l->tokenizer_spec.file);
            else if (strcmp(err.file, vocab) == 0 || strcmp(err.file, merges) == 0)
                snprintf(name, sizeof(name), "%s",
                         strcmp(err.file, vocab) == 0 ? l->tokenizer_spec.vocab
                                                      : l->tokenizer_spec.merges);
            attn_loader_error(l, k ? k->value : node, "tokenizer", "%s%s%s%s", name, where,
                              name[0] ? ": " : "", err.msg);
            attn_loader_mark_bad(l, "text");
            return;
        }
    }
    if (l->text_node >= 0 && !attn_loader_bad(l, "tokenizer")) {
        if (attn_scene_set_text(s, str_of(l, l->text_node), &err) != 0)
            attn_loader_error(l, l->text_node, "text", "%s", err.msg);
        const struct loader_key *k = attn_loader_find(l, "text");
        if (k)
            attn_loader_register(l, "tokens", k->key, k->value);
    } else if (l->tokens_node >= 0) {
        const struct ynode *nd = nd_of(l, l->tokens_node);
        char **tokens = malloc((size_t)nd->u.c.count * sizeof(*tokens));
        if (!tokens) {
            attn_loader_error(l, l->tokens_node, "tokens", "out of memory");
            return;
        }
        int i = 0;
        for (int c = nd->u.c.first; c >= 0; c = nd_of(l, c)->next)
            tokens[i++] = (char *)(uintptr_t)str_of(l, c);
        if (attn_scene_set_tokens(s, tokens, i, &err) != 0)
            attn_loader_error(l, l->tokens_node, "tokens", "%s", err.msg);
        free(tokens);
        const struct loader_key *k = attn_loader_find(l, "tokens");
        if (k)
            attn_loader_register(l, "text", k->key, k->value);
    }
    if (l->model_spec.file && !attn_loader_bad(l, "model") && !attn_loader_bad(l, "text") &&
        !attn_loader_bad(l, "tokens"))
        load_model(l, s);
}

/* ---- the tables ------------------------------------------------------------------------- */

#define SEED_WHAT "an integer from 0 to 18446744073709551615"
/* A matrix or vector key's value: inline, or a file (read_file_ref). */
#define MATRIX_WHAT "a list of rows or {file: name.npy or .csv}"
#define VECTOR_WHAT "a list of numbers or {file: name.npy or .csv}"

/* block: given at all turns the block on. */
static void finish_block(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_scene *s = base;
    s->block.on = true;
}

static const char *stage_str(int v)
{
    return attn_stage_name((enum attn_stage)v);
}
static const char *tokenizer_str(int v)
{
    return attn_tokenizer_name((enum attn_tokenizer)v);
}
static const char *pos_kind_str(int v)
{
    return attn_pos_kind_name((enum attn_pos_kind)v);
}
static const char *rope_pairs_str(int v)
{
    return attn_rope_pairs_name((enum attn_rope_pairs)v);
}
static const char *qkv_mode_str(int v)
{
    return attn_qkv_mode_name((enum attn_qkv_mode)v);
}
static const char *order_str(int v)
{
    return attn_block_order_name((enum attn_block_order)v);
}
static const char *norm_str(int v)
{
    return attn_norm_kind_name((enum attn_norm_kind)v);
}
static const char *activation_str(int v)
{
    return attn_activation_name((enum attn_activation)v);
}
static const char *projection_str(int v)
{
    return attn_projection_name((enum attn_projection)v);
}
static const char *layout_str(int v)
{
    return attn_layout_name((enum attn_head_layout)v);
}
static const char *mask_mode_str(int v)
{
    return attn_mask_mode_name((enum attn_mask_mode)v);
}
static const char *normalize_str(int v)
{
    return attn_normalize_name((enum attn_normalize)v);
}

static const int tokenizer_values[] = {TOKENIZER_WHITESPACE, TOKENIZER_WORDS, TOKENIZER_CHARS};
static const int pos_kind_values[] = {POS_NONE, POS_LEARNED, POS_SINUSOIDAL, POS_ROPE};
static const int rope_pairs_values[] = {ROPE_ADJACENT, ROPE_HALVES};
static const int qkv_mode_values[] = {QKV_SEPARATE, QKV_FUSED, QKV_FUSED_HEADS};
static const int order_values[] = {BLOCK_POST, BLOCK_PRE};
static const int norm_values[] = {NORM_LAYER, NORM_RMS};
static const int activation_values[] = {ACT_RELU, ACT_GELU, ACT_GELU_TANH};
static const int projection_values[] = {PROJ_NONE, PROJ_RAND, PROJ_LINEAR};
static const int layout_values[] = {LAYOUT_SPLIT, LAYOUT_WRAPPER};
static const int mask_mode_values[] = {MASK_BEFORE_SOFTMAX, MASK_AFTER_SOFTMAX};
static const int normalize_values[] = {NORM_SOFTMAX, NORM_SUM};

static const struct enum_def tokenizer_enum = {tokenizer_values, 3, tokenizer_str, NULL};
static const struct enum_def pos_kind_enum = {pos_kind_values, 4, pos_kind_str, NULL};
static const struct enum_def rope_pairs_enum = {rope_pairs_values, 2, rope_pairs_str, NULL};
static const struct enum_def qkv_mode_enum = {qkv_mode_values, 3, qkv_mode_str, NULL};
static const struct enum_def order_enum = {order_values, 2, order_str, NULL};
static const struct enum_def norm_enum = {norm_values, 2, norm_str, NULL};
static const struct enum_def activation_enum = {activation_values, 3, activation_str, NULL};
static const struct enum_def projection_enum = {projection_values, 3, projection_str, NULL};
static const struct enum_def layout_enum = {layout_values, 2, layout_str, NULL};
static const struct enum_def mask_mode_enum = {mask_mode_values, 2, mask_mode_str, NULL};
static const struct enum_def normalize_enum = {normalize_values, 2, normalize_str, NULL};

static const struct int_range dim_range = {1, SCENE_MAX_DIM};
static const struct int_range heads_range = {1, SCENE_MAX_HEADS};
static const struct int_range max_len_range = {1, INT_MAX};
static const struct int_range offset_range = {0, 8 * SCENE_MAX_TOKENS};
static const struct int_range count_range = {0, INT_MAX};
static const struct int_range hidden_range = {1, 4 * SCENE_MAX_DIM};
static const struct int_range layers_range = {1, SCENE_MAX_LAYERS};

static const struct mat_limits table_limits = {INT_MAX, SCENE_MAX_DIM};
static const struct mat_limits qkv_limits = {SCENE_MAX_DIM, SCENE_MAX_DIM *SCENE_MAX_HEADS};
static const struct mat_limits out_limits = {SCENE_MAX_DIM * SCENE_MAX_HEADS,
                                             SCENE_MAX_DIM *SCENE_MAX_HEADS};
static const struct mat_limits head_limits = {SCENE_MAX_DIM, SCENE_MAX_DIM};
static const struct mat_limits fused_limits = {SCENE_MAX_DIM, 3 * SCENE_MAX_DIM};
static const struct mat_limits ffn_limits = {4 * SCENE_MAX_DIM, 4 * SCENE_MAX_DIM};

#define S(member) offsetof(struct attn_scene, member)
#define H(member) offsetof(struct head_weights, member)
#define N(fields) ((int)(sizeof(fields) / sizeof((fields)[0])))

static const struct field embeddings_fields[] = {
    {"dim", WANT_SCALAR, "an integer", h_int, S(embed.dim), &dim_range},
    {"seed", WANT_SCALAR, SEED_WHAT, h_opt_seed, S(embed.seed), NULL},
};
static const struct mapping embeddings_map = {"embeddings", embeddings_fields, N(embeddings_fields),
                                              finish_embeddings};

static const struct field positional_fields[] = {
    {"kind", WANT_SCALAR, NULL, h_enum, S(pos.kind), &pos_kind_enum},
    {"max_len", WANT_SCALAR, "an integer", h_int, S(pos.max_len), &max_len_range},
    {"seed", WANT_SCALAR, SEED_WHAT, h_opt_seed, S(pos.seed), NULL},
    {"table", WANT_DATA, MATRIX_WHAT, h_matrix, S(pos.table), &table_limits},
    {"base", WANT_SCALAR, "a number above 0", h_positive, S(pos.base), NULL},
    {"rope_pairs", WANT_SCALAR, NULL, h_enum, S(pos.pairs), &rope_pairs_enum},
    {"offset", WANT_SCALAR, "an integer", h_int, S(pos.offset), &offset_range},
};
static const struct mapping positional_map = {"positional", positional_fields, N(positional_fields),
                                              NULL};

static const struct field attention_fields[] = {
    {"projection", WANT_SCALAR, NULL, h_enum, S(attn.projection), &projection_enum},
    {"d_out", WANT_SCALAR, "an integer", h_int, S(attn.d_out), &dim_range},
    {"heads", WANT_SCALAR, "an integer", h_int, S(attn.heads), &heads_range},
    {"head_layout", WANT_SCALAR, NULL, h_enum, S(attn.layout), &layout_enum},
    {"causal", WANT_SCALAR, "true or false", h_bool, S(attn.causal), NULL},
    {"mask_mode", WANT_SCALAR, NULL, h_enum, S(attn.mask_mode), &mask_mode_enum},
    {"normalize", WANT_SCALAR, NULL, h_enum, S(attn.normalize), &normalize_enum},
    {"scale", WANT_SCALAR, "true, false or a positive number", h_scale, S(attn), NULL},
    {"dropout", WANT_SCALAR, "a number between 0 and 1", h_probability, S(attn.dropout), NULL},
    {"dropout_seed", WANT_SCALAR, SEED_WHAT, h_opt_seed, S(attn.dropout_seed), NULL},
    {"qkv_bias", WANT_SCALAR, "true or false", h_bool, S(attn.qkv_bias), NULL},
    {"out_proj", WANT_SCALAR, "true or false", h_tristate, S(attn.out_proj), NULL},
    {"out_bias", WANT_SCALAR, "true or false", h_bool, S(attn.out_bias), NULL},
    {"seed", WANT_SCALAR, SEED_WHAT, h_opt_seed, S(attn.seed), NULL},
    {"qkv", WANT_SCALAR, NULL, h_enum, S(attn.qkv), &qkv_mode_enum},
    {"kv_heads", WANT_SCALAR, "an integer", h_int, S(attn.kv_heads), &heads_range},
    {"kv_latent", WANT_SCALAR, "an integer", h_int, S(attn.kv_latent), &dim_range},
};
static const struct mapping attention_map = {"attention", attention_fields, N(attention_fields),
                                             NULL};

static const struct field block_fields[] = {
    {"order", WANT_SCALAR, NULL, h_enum, S(block.order), &order_enum},
    {"norm", WANT_SCALAR, NULL, h_enum, S(block.norm), &norm_enum},
    {"norm_eps", WANT_SCALAR, "a number above 0", h_positive, S(block.norm_eps), NULL},
    {"ffn_hidden", WANT_SCALAR, "an integer", h_int, S(block.ffn_hidden), &hidden_range},
    {"activation", WANT_SCALAR, NULL, h_enum, S(block.activation), &activation_enum},
    {"ffn_seed", WANT_SCALAR, SEED_WHAT, h_opt_seed, S(block.ffn_seed), NULL},
    {"ffn_skip", WANT_SCALAR, "an integer", h_int, S(block.ffn_skip), &count_range},
    {"final_norm", WANT_SCALAR, "true or false", h_bool, S(block.final_norm), NULL},
};
static const struct mapping block_map = {"block", block_fields, N(block_fields), finish_block};

static const int stage_values[STAGE_COUNT] = {
    STAGE_INPUTS,        STAGE_LATENT,          STAGE_QUERIES,      STAGE_KEYS,
    STAGE_VALUES,        STAGE_QUERIES_ROTATED, STAGE_KEYS_ROTATED, STAGE_SCORES,
    STAGE_SCALED,        STAGE_MASKED,          STAGE_WEIGHTS,      STAGE_DROPOUT,
    STAGE_WEIGHTED_NORM, STAGE_CONTEXT,         STAGE_CONCAT,       STAGE_OUTPUT,
    STAGE_RESIDUAL1,     STAGE_NORM1,           STAGE_FFN_HIDDEN,   STAGE_FFN_ACTIVATED,
    STAGE_FFN_OUT,       STAGE_RESIDUAL2,       STAGE_NORM2,        STAGE_FINAL_NORM};
/* A stage by its name, or the names --stage also takes (softmax for weights, q, k, v, ...). */
static int stage_alias(const char *name)
{
    char lower[32];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[i] = '\0';
    return name[i] ? -1 : attn_stage_parse(lower); /* as the names: in any case */
}
static const struct enum_def stage_enum = {stage_values, STAGE_COUNT, stage_str, stage_alias};
static const struct int_range view_range = {0, SCENE_MAX_HEADS};
static const struct field view_fields[] = {
    {"layer", WANT_SCALAR, "an integer", h_int, S(view.layer), &view_range},
    {"head", WANT_SCALAR, "an integer", h_int, S(view.head), &view_range},
    {"stage", WANT_SCALAR, NULL, h_enum, S(view.stage), &stage_enum},
};
/* view: given at all, its layer counts (0 unless said). */
static void finish_view(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_scene *s = base;
    if (found[0] < 0)
        s->view.layer = 0;
    if (found[2] < 0)
        s->view.stage = STAGE_WEIGHTS;
}
static const struct mapping view_map = {"view", view_fields, N(view_fields), finish_view};

/* ---- ablate: a list of heads ---------------------------------------------------------------- */

static const char *head_mode_str(int v)
{
    return attn_head_mode_name((enum attn_head_mode)v);
}
static const int ablate_mode_values[] = {HEAD_ZERO, HEAD_MEAN};
static const struct enum_def ablate_mode_enum = {ablate_mode_values, 2, head_mode_str, NULL};
static const struct int_range ablate_layer_range = {0, SCENE_MAX_LAYERS - 1};
static const struct int_range ablate_head_range = {0, SCENE_MAX_HEADS - 1};
#define AB(member) offsetof(struct attn_ablation, member)
static const struct field ablate_fields[] = {
    {"layer", WANT_SCALAR, "an integer", h_int, AB(layer), &ablate_layer_range},
    {"head", WANT_SCALAR, "an integer", h_int, AB(head), &ablate_head_range},
    {"mode", WANT_SCALAR, NULL, h_enum, AB(mode), &ablate_mode_enum},
};
/* layer and head are needed; mode is zero unless said. Whether the head exists, and that no
 * head comes twice, is attn_scene_check's (it knows the layers and heads of a checkpoint). */
static void finish_ablation(struct loader *l, int node, const int *found, void *base,
                            const char *path)
{
    static const char *const need[] = {"layer", "head"};
    for (int i = 0; i < 2; i++)
        if (found[i] < 0 && !meant_bad(l, path, need[i]))
            attn_loader_error(l, node, path,
                              "an ablated head needs '%s': {layer: 1, head: 0, mode: zero}",
                              need[i]);
}
static const struct mapping ablate_map = {"ablate", ablate_fields, N(ablate_fields),
                                          finish_ablation};

/* ablate: - {layer: L, head: H, mode: zero|mean}, one mapping per head. */
static void h_ablate(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    int count = nd->u.c.count;
    if (count > SCENE_MAX_LAYERS * SCENE_MAX_HEADS) {
        attn_loader_error(l, node, path, "'ablate' lists %d heads, the limit is %d", count,
                          SCENE_MAX_LAYERS * SCENE_MAX_HEADS);
        return;
    }
    struct attn_ablation *list = calloc((size_t)(count > 0 ? count : 1), sizeof(*list));
    if (!list) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        list[i] = (struct attn_ablation){-1, -1, HEAD_ZERO};
        if (list_item_map(l, item, path, i, ipath, "item", i + 1, "ablate",
                          "a mapping like {layer: 1, head: 0, mode: zero}"))
            walk_map(l, item, &ablate_map, &list[i], ipath);
    }
    free(s->ablate);
    s->ablate = list;
    s->n_ablate = count;
}

/* ---- lesson: a list of steps --------------------------------------------------------------- */

/* Rows of a step's mapping; the edits last, in the order of enum attn_edit_kind. */
enum {
    L_STAGE,
    L_LAYER,
    L_HEAD,
    L_CELL,
    L_ROW,
    L_ALL_HEADS,
    L_CAPTION,
    L_CAUSAL,
    L_HEADS,
    L_D_OUT,
    L_DROPOUT,
    L_SEED,
    L_TEXT,
    L_SCALE,
    L_MASK_MODE,
    L_NORMALIZE,
    L_LAYOUT,
    L_OFFSET,
    L_COUNT
};
#define L_EDIT_FIRST L_CAUSAL
_Static_assert(L_COUNT - L_EDIT_FIRST == EDIT_LESSON_COUNT - 1, "one row per edit");

/* cell: [row, column], counted from 0 as the explorer does. */
static void h_cell(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    struct attn_lesson_step *st = base;
    const struct ynode *nd = nd_of(l, node);
    char buf[LOADER_SHOW_MAX];
    int v[2], i = 0;
    for (int c = nd->u.c.first; c >= 0; c = nd_of(l, c)->next, i++) {
        long long x;
        if (i >= 2 || nd_of(l, c)->type != YNODE_SCALAR || parse_ll(str_of(l, c), &x) != 0 ||
            has_nul(l, c) || x < 0 || x > INT_MAX / 2) {
            i = -1;
            break;
        }
        v[i] = (int)x;
    }
    if (i != 2) {
        attn_loader_error(l, node, path,
                          "'cell' must be [row, column], two whole numbers from 0, got %s",
                          attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    st->row = v[0];
    st->col = v[1];
}

static void h_caption(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    if (!string_ok(l, f, node, path))
        return;
    const char *text = str_of(l, node);
    struct diag err;
    attn_diag_clear(&err);
    if (attn_caption_marks(text, NULL, 0, &err) < 0) {
        attn_loader_error(l, node, path, "%s", err.msg);
        return;
    }
    int chars = attn_caption_chars(text), lines = attn_caption_lines(text);
    if (chars > LESSON_CAPTION_MAX_CHARS) {
        attn_loader_error(
            l, node, path,
            "the caption is %d characters long; a step holds at most %d (split it over "
            "two steps)",
            chars, LESSON_CAPTION_MAX_CHARS);
        return;
    }
    if (lines > LESSON_CAPTION_MAX_LINES) {
        attn_loader_error(l, node, path, "the caption has %d lines; a step holds at most %d", lines,
                          LESSON_CAPTION_MAX_LINES);
        return;
    }
    h_string(l, f, node, base, path);
    struct attn_lesson_step *st = base;
    attn_loader_locate(l, node, &st->caption_line, &st->caption_col);
}

/* scale: as attention.scale says it (h_scale), into the step's edit. */
static void h_step_scale(struct loader *l, const struct field *f, int node, void *base,
                         const char *path)
{
    struct attn_lesson_step *st = base;
    struct attn_config scale = {.scale = SCALE_DEFAULT};
    struct field at = *f;
    at.offset = 0;
    h_scale(l, &at, node, &scale, path);
    st->edit.scale = scale.scale;
    st->edit.scale_divisor = scale.scale_divisor;
}

static const struct int_range step_index_range = {0, INT_MAX};

#define LS(member) offsetof(struct attn_lesson_step, member)
static const struct field step_fields[L_COUNT] = {
    [L_STAGE] = {"stage", WANT_SCALAR, NULL, h_enum, LS(stage), &stage_enum},
    [L_LAYER] = {"layer", WANT_SCALAR, "an integer", h_int, LS(layer), &view_range},
    [L_HEAD] = {"head", WANT_SCALAR, "an integer", h_int, LS(head), &view_range},
    [L_CELL] = {"cell", WANT_SEQ, "a cell as [row, column]", h_cell, 0, NULL},
    [L_ROW] = {"row", WANT_SCALAR, "an integer", h_int, LS(row), &step_index_range},
    [L_ALL_HEADS] = {"all_heads", WANT_SCALAR, "true or false", h_bool, LS(all_heads), NULL},
    [L_CAPTION] = {"caption", WANT_SCALAR, "a string", h_caption, LS(caption), NULL},
    [L_CAUSAL] = {"causal", WANT_SCALAR, "true or false", h_bool, LS(edit.causal), NULL},
    [L_HEADS] = {"heads", WANT_SCALAR, "an integer", h_int, LS(edit.heads), &heads_range},
    [L_D_OUT] = {"d_out", WANT_SCALAR, "an integer", h_int, LS(edit.d_out), &dim_range},
    [L_DROPOUT] = {"dropout", WANT_SCALAR, "a number between 0 and 1", h_probability,
                   LS(edit.dropout), NULL},
    [L_SEED] = {"seed", WANT_SCALAR, SEED_WHAT, h_seed, LS(edit.seed), NULL},
    [L_TEXT] = {"text", WANT_SCALAR, "a string", h_string, LS(edit.text), NULL},
    [L_SCALE] = {"scale", WANT_SCALAR, "true, false or a positive number", h_step_scale, 0, NULL},
    [L_MASK_MODE] = {"mask_mode", WANT_SCALAR, NULL, h_enum, LS(edit.mask_mode), &mask_mode_enum},
    [L_NORMALIZE] = {"normalize", WANT_SCALAR, NULL, h_enum, LS(edit.normalize), &normalize_enum},
    [L_LAYOUT] = {"head_layout", WANT_SCALAR, NULL, h_enum, LS(edit.layout), &layout_enum},
    [L_OFFSET] = {"offset", WANT_SCALAR, "an integer", h_int, LS(edit.offset), &offset_range},
};

/* stage and caption are needed; a cell or a row; one edit at most. */
static void finish_step(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_lesson_step *st = base;
    st->line = attn_loader_line(l, node);
    if (found[L_STAGE] < 0 && !meant_bad(l, path, "stage"))
        attn_loader_error(
            l, node, path,
            "a lesson step needs 'stage': the stage it shows (inputs, scores, weights, "
            "...)");
    if (found[L_CAPTION] < 0 && !meant_bad(l, path, "caption"))
        attn_loader_error(l, node, path,
                          "a lesson step needs 'caption': what to say about the view");
    if (found[L_CELL] >= 0 && found[L_ROW] >= 0)
        attn_loader_error(l, found[L_ROW], path, "give the step either 'cell' or 'row', not both");
    else if (found[L_ROW] >= 0)
        st->col = -1;
    int first = -1;
    for (int i = L_EDIT_FIRST; i < L_COUNT; i++) {
        if (found[i] < 0)
            continue;
        if (first < 0 || attn_loader_line(l, found[i]) < attn_loader_line(l, found[first]))
            first = i;
    }
    for (int i = L_EDIT_FIRST; i < L_COUNT; i++) {
        if (found[i] < 0 || i == first)
            continue;
        char kp[DIAG_PATH_MAX];
        join(kp, path, step_fields[i].key);
        attn_loader_error(
            l, found[i], kp,
            "a step makes one edit: '%s' and '%s' are both given (give '%s' a step of "
            "its own)",
            step_fields[first].key, step_fields[i].key, step_fields[i].key);
    }
    if (first >= 0)
        st->edit.kind = (enum attn_edit_kind)(EDIT_CAUSAL + (first - L_EDIT_FIRST));
}
static const struct mapping step_map = {"lesson step", step_fields, L_COUNT, finish_step};

static void h_lesson(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (nd->u.c.count == 0) {
        attn_loader_error(l, node, path,
                          "'lesson' is empty: give at least one step, like - {stage: weights, "
                          "caption: ...}");
        return;
    }
    if (nd->u.c.count > LESSON_MAX_STEPS) {
        attn_loader_error(l, node, path, "'lesson' has %d steps, the limit is %d", nd->u.c.count,
                          LESSON_MAX_STEPS);
        return;
    }
    struct attn_lesson *lesson = attn_lesson_new(nd->u.c.count);
    if (!lesson) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    attn_lesson_unref(s->lesson);
    s->lesson = lesson;
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        if (list_item_map(l, item, path, i, ipath, "step", i + 1, "lesson",
                          "a mapping like {stage: weights, caption: ...}"))
            walk_map(l, item, &step_map, &lesson->steps[i], ipath);
    }
}

/* ---- lesson: the steps against the scene -------------------------------------------------- */

/* Where a key of step i is, or the step itself. */
static int step_node(struct loader *l, int i, const char *key, char *path)
{
    char step[DIAG_PATH_MAX];
    path_fmt(step, "lesson[%d]", i);
    join(path, step, key);
    const struct loader_key *k = attn_loader_find(l, path);
    if (k)
        return k->value;
    k = attn_loader_find(l, step);
    snprintf(path, DIAG_PATH_MAX, "%s", step);
    return k ? k->value : -1;
}

/* Step i's edit on now, by the rules the explorer makes it with (engine/edit.h); here only
 * where to say what went wrong: at the step's key. Returns 0, or -1 after reporting why the
 * edit cannot be made or leaves the scene invalid. */
static int sim_edit(struct loader *l, struct attn_scene *now, int i)
{
    const struct attn_edit *e = &now->lesson->steps[i].edit;
    if (e->kind == EDIT_NONE)
        return 0;
    char path[DIAG_PATH_MAX];
    int node = step_node(l, i, attn_edit_key(e->kind), path);
    struct diag err;
    struct attn_edit_effects fx;
    if (attn_scene_check_edit(now, e, &err) != 0 || attn_scene_apply_edit(now, e, &fx, &err) != 0) {
        attn_loader_error(l, node, path, "%s", err.msg);
        return -1;
    }
    struct diag_list problems;
    attn_diag_list_init(&problems);
    int rc = 0;
    if (attn_scene_check(now, &problems) > 0) {
        attn_loader_error(l, node, path, "step %d's edit makes the scene invalid: %s", i + 1,
                          problems.n ? problems.items[0].msg : "out of memory");
        rc = -1;
    }
    attn_diag_list_free(&problems);
    return rc;
}

/* "inputs, queries, keys, ...": the stages layer L of s has. */
static void stage_list(char *out, size_t size, const struct attn_scene *s, int layer)
{
    size_t o = 0;
    out[0] = '\0';
    for (int st = 0; st < STAGE_COUNT && o < size; st++)
        if (attn_scene_stage_present(s, layer, (enum attn_stage)st))
            o += (size_t)snprintf(out + o, size - o, "%s%s", o ? ", " : "",
                                  attn_stage_name((enum attn_stage)st));
}

/* What step i shows exists in now: its layer, head, stage, cell or row, and every cell its
 * caption marks. */
static void check_step_view(struct loader *l, const struct attn_scene *now, int i)
{
    const struct attn_lesson_step *st = &now->lesson->steps[i];
    char path[DIAG_PATH_MAX], stages[600];
    int node, heads = now->attn.heads, n = now->n_tokens;
    if (st->layer >= now->layers) {
        node = step_node(l, i, "layer", path);
        attn_loader_error(l, node, path, "layer %d: the scene has %d layer%s (0 to %d)", st->layer,
                          now->layers, now->layers == 1 ? "" : "s", now->layers - 1);
        return;
    }
    if (st->head >= heads) {
        node = step_node(l, i, "head", path);
        attn_loader_error(l, node, path, "head %d: at step %d the scene has %d head%s (0 to %d)",
                          st->head, i + 1, heads, heads == 1 ? "" : "s", heads - 1);
    }
    if (!attn_scene_stage_present(now, st->layer, (enum attn_stage)st->stage)) {
        node = step_node(l, i, "stage", path);
        stage_list(stages, sizeof(stages), now, st->layer);
        attn_loader_error(l, node, path, "the scene has no stage %s%s; its stages: %s",
                          attn_stage_name((enum attn_stage)st->stage),
                          now->layers > 1 ? " in this layer" : "", stages);
        return;
    }
    int cols = attn_scene_stage_cols(now, (enum attn_stage)st->stage);
    if (st->row >= n) {
        node = step_node(l, i, st->col >= 0 ? "cell" : "row", path);
        attn_loader_error(l, node, path,
                          "row %d: at step %d the scene has %d tokens (rows 0 to %d)", st->row,
                          i + 1, n, n - 1);
    } else if (st->col >= cols) {
        node = step_node(l, i, "cell", path);
        attn_loader_error(l, node, path, "column %d: the %s matrix has %d columns (0 to %d)",
                          st->col, attn_stage_name((enum attn_stage)st->stage), cols, cols - 1);
    }
    if (!st->caption)
        return;
    struct attn_caption_mark marks[LESSON_MAX_MARKS];
    struct diag err;
    int count = attn_caption_marks(st->caption, marks, LESSON_MAX_MARKS, &err);
    node = step_node(l, i, "caption", path);
    if (count > LESSON_MAX_MARKS) {
        attn_loader_error(l, node, path, "the caption marks %d numbers; a step holds at most %d",
                          count, LESSON_MAX_MARKS);
        return;
    }
    for (int k = 0; k < count && !l->yd.stopped; k++) {
        const struct attn_caption_mark *m = &marks[k];
        int stage = m->stage >= 0 ? m->stage : st->stage;
        if (!attn_scene_stage_present(now, st->layer, (enum attn_stage)stage)) {
            stage_list(stages, sizeof(stages), now, st->layer);
            attn_loader_error(l, node, path,
                              "the mark {%s @ %s ...}: the scene has no stage %s; its "
                              "stages: %s",
                              m->written, attn_stage_name((enum attn_stage)stage),
                              attn_stage_name((enum attn_stage)stage), stages);
            continue;
        }
        int mcols = attn_scene_stage_cols(now, (enum attn_stage)stage);
        if (m->row >= n || m->col >= mcols)
            attn_loader_error(
                l, node, path,
                "the mark {%s @ %s%s%d,%d}: the %s matrix is %d\u00d7%d (rows 0 to %d, "
                "columns 0 to %d)",
                m->written, m->stage >= 0 ? attn_stage_name((enum attn_stage)stage) : "",
                m->stage >= 0 ? " " : "", m->row, m->col, attn_stage_name((enum attn_stage)stage),
                n, mcols, n - 1, mcols - 1);
    }
}

void attn_schema_check_lesson(struct loader *l)
{
    struct attn_scene *s = l->s;
    if (!s->lesson || l->yd.n > 0 || l->yd.stopped)
        return;
    /* The scene as the steps so far have edited it: each step is checked against that. */
    struct attn_scene now;
    if (attn_scene_copy(&now, s) != 0) {
        attn_loader_error(l, -1, "lesson", "out of memory");
        return;
    }
    for (int i = 0; i < s->lesson->n_steps && !l->yd.stopped; i++) {
        if (sim_edit(l, &now, i) != 0)
            break; /* the steps after it would be checked against a scene the lesson never has */
        check_step_view(l, &now, i);
    }
    attn_scene_free(&now);
}

static const struct field head_fields[] = {
    {"query", WANT_DATA, MATRIX_WHAT, h_matrix, H(query), &head_limits},
    {"key", WANT_DATA, MATRIX_WHAT, h_matrix, H(key), &head_limits},
    {"value", WANT_DATA, MATRIX_WHAT, h_matrix, H(value), &head_limits},
    {"query_bias", WANT_DATA, VECTOR_WHAT, h_vector, H(query_bias), &head_limits},
    {"key_bias", WANT_DATA, VECTOR_WHAT, h_vector, H(key_bias), &head_limits},
    {"value_bias", WANT_DATA, VECTOR_WHAT, h_vector, H(value_bias), &head_limits},
};
static const struct mapping head_map = {"weights.heads", head_fields, N(head_fields), NULL};

static const struct field weights_fields[W_COUNT] = {
    [W_QUERY] = {"query", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.query), &qkv_limits},
    [W_KEY] = {"key", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.key), &qkv_limits},
    [W_VALUE] = {"value", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.value), &qkv_limits},
    [W_QUERY_BIAS] = {"query_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.query_bias),
                      &qkv_limits},
    [W_KEY_BIAS] = {"key_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.key_bias), &qkv_limits},
    [W_VALUE_BIAS] = {"value_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.value_bias),
                      &qkv_limits},
    [W_OUT] = {"out", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.out), &out_limits},
    [W_OUT_BIAS] = {"out_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.out_bias), &out_limits},
    [W_DROPOUT_MASK] = {"dropout_mask", WANT_DATA,
                        "a list of n x n matrices of 0 and 1, or {file: name.npy or .csv}",
                        h_dropout_mask, 0, NULL},
    [W_HEADS] = {"heads", WANT_SEQ, "a list of mappings, one per head", h_heads, 0, NULL},
    [W_QKV] = {"qkv", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.qkv), &fused_limits},
    [W_QKV_BIAS] = {"qkv_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.qkv_bias),
                    &fused_limits},
    [W_DOWN] = {"down", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.down), &head_limits},
    [W_KEY_UP] = {"key_up", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.key_up), &head_limits},
    [W_VALUE_UP] = {"value_up", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.value_up),
                    &head_limits},
    [W_FFN_W1] = {"ffn_W1", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.ffn_W1), &ffn_limits},
    [W_FFN_B1] = {"ffn_b1", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.ffn_b1), &ffn_limits},
    [W_FFN_W2] = {"ffn_W2", WANT_DATA, MATRIX_WHAT, h_matrix, S(weights.ffn_W2), &ffn_limits},
    [W_FFN_B2] = {"ffn_b2", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.ffn_b2), &ffn_limits},
    [W_NORM1_WEIGHT] = {"norm1_weight", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.norm1_weight),
                        &head_limits},
    [W_NORM1_BIAS] = {"norm1_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.norm1_bias),
                      &head_limits},
    [W_NORM2_WEIGHT] = {"norm2_weight", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.norm2_weight),
                        &head_limits},
    [W_NORM2_BIAS] = {"norm2_bias", WANT_DATA, VECTOR_WHAT, h_vector, S(weights.norm2_bias),
                      &head_limits},
    [W_FINAL_NORM_WEIGHT] = {"final_norm_weight", WANT_DATA, VECTOR_WHAT, h_vector,
                             S(weights.final_norm_weight), &head_limits},
    [W_FINAL_NORM_BIAS] = {"final_norm_bias", WANT_DATA, VECTOR_WHAT, h_vector,
                           S(weights.final_norm_bias), &head_limits},
};
static const struct mapping weights_map = {"weights", weights_fields, W_COUNT, finish_weights};

/* weights: one mapping (the only layer, or layer 0), or a list of mappings, one per layer. A
 * later layer's mapping is read into a scratch scene that shares the options (attention, block,
 * tokens), so its handlers check it the same way; then its weights move to more_weights. */
static void h_weights(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_MAP) {
        walk_map(l, node, &weights_map, s, path);
        return;
    }
    if (nd->type != YNODE_SEQ) {
        must_be(l, f, node, path);
        return;
    }
    int count = nd->u.c.count;
    if (count < 1 || count > SCENE_MAX_LAYERS) {
        attn_loader_error(l, node, path, "'weights' lists %d layers, expected 1 to %d", count,
                          SCENE_MAX_LAYERS);
        return;
    }
    struct attn_scene_weights *more = calloc((size_t)count, sizeof(*more));
    if (!more) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    s->weights_listed = true;
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        if (!list_item_map(l, item, path, i, ipath, "layer", i, "weights",
                           "a mapping like {query: [[...]], ...}"))
            continue;
        if (i == 0) {
            walk_map(l, item, &weights_map, s, ipath);
            continue;
        }
        struct attn_scene scratch = *s; /* shallow: only its weights are written */
        memset(&scratch.weights, 0, sizeof(scratch.weights));
        walk_map(l, item, &weights_map, &scratch, ipath);
        more[i] = scratch.weights;
    }
    for (int k = 0; k < s->n_more; k++)
        attn_scene_weights_free(&s->more_weights[k]);
    free(s->more_weights);
    /* more[0] is unused (layer 0 lives in s->weights): shift down. */
    memmove(more, more + 1, (size_t)(count - 1) * sizeof(*more));
    s->more_weights = more;
    s->n_more = count - 1;
}

/* tokenizer: a built-in's name, {kind: gpt2, vocab: vocab.json, merges: merges.txt} or
 * {kind: hf, file: tokenizer.json}. */
#define TK(member) offsetof(struct loader, tokenizer_spec.member)
#define MD(member) offsetof(struct loader, model_spec.member)
static const struct field tokenizer_fields[] = {
    {"kind", WANT_SCALAR, "gpt2", h_string, TK(kind), NULL},
    {"vocab", WANT_SCALAR, "a file name (vocab.json)", h_string, TK(vocab), NULL},
    {"merges", WANT_SCALAR, "a file name (merges.txt)", h_string, TK(merges), NULL},
    {"file", WANT_SCALAR, "a file name (tokenizer.json)", h_string, TK(file), NULL},
};
static void finish_tokenizer(struct loader *l, int node, const int *found, void *base,
                             const char *path)
{
    /* found[]: kind, vocab, merges, file */
    const char *kind = l->tokenizer_spec.kind;
    if (found[0] < 0) {
        if (!meant_bad(l, path, "kind"))
            attn_loader_error(l, node, path,
                              "'tokenizer' needs 'kind': {kind: gpt2, vocab: vocab.json, merges: "
                              "merges.txt} or {kind: hf, file: tokenizer.json}");
        return;
    }
    char kp[DIAG_PATH_MAX];
    if (kind && strcmp(kind, "gpt2") == 0) {
        static const char *const need[] = {"vocab", "merges"};
        for (int i = 0; i < 2; i++)
            if (found[1 + i] < 0 && !meant_bad(l, path, need[i]))
                attn_loader_error(l, node, path,
                                  "'tokenizer' needs '%s': {kind: gpt2, vocab: vocab.json, "
                                  "merges: merges.txt}",
                                  need[i]);
        if (found[3] >= 0) {
            join(kp, path, "file");
            attn_loader_error(l, found[3], kp,
                              "'file' is for kind hf (tokenizer.json); kind gpt2 reads vocab and "
                              "merges");
        }
    } else if (kind && strcmp(kind, "hf") == 0) {
        if (found[3] < 0 && !meant_bad(l, path, "file"))
            attn_loader_error(l, node, path,
                              "'tokenizer' needs 'file': {kind: hf, file: tokenizer.json}");
        for (int i = 1; i <= 2; i++)
            if (found[i] >= 0) {
                join(kp, path, i == 1 ? "vocab" : "merges");
                attn_loader_error(l, found[i], kp,
                                  "'%s' is for kind gpt2; kind hf reads everything from its file "
                                  "(tokenizer.json)",
                                  i == 1 ? "vocab" : "merges");
            }
    } else if (kind) {
        join(kp, path, "kind");
        attn_loader_error(
            l, found[0], kp,
            "tokenizer kind '%.40s' has no files to read; as a mapping, kind is gpt2 or "
            "hf (or write tokenizer: whitespace, words or chars)",
            kind);
    }
}
static const struct mapping tokenizer_map = {"tokenizer", tokenizer_fields, N(tokenizer_fields),
                                             finish_tokenizer};

static void h_tokenizer(struct loader *l, const struct field *f, int node, void *base,
                        const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_MAP) {
        /* the files are read with the model, once everything else is known (finish_top) */
        struct loader *self = l;
        walk_map(l, node, &tokenizer_map, self, path);
        return;
    }
    if (nd->type == YNODE_SCALAR && strcmp(str_of(l, node), "gpt2") == 0) {
        attn_loader_error(l, node, path,
                          "the gpt2 tokenizer reads its vocabulary: tokenizer: {kind: gpt2, vocab: "
                          "vocab.json, merges: merges.txt}");
        return;
    }
    if (nd->type == YNODE_SCALAR && strcmp(str_of(l, node), "hf") == 0) {
        attn_loader_error(
            l, node, path,
            "the hf tokenizer reads Hugging Face's tokenizer.json: tokenizer: {kind: hf, "
            "file: tokenizer.json}");
        return;
    }
    /* a name: checked and reported as the enum it is */
    struct field as_enum = *f;
    as_enum.handler = h_enum;
    if (nd->type != YNODE_SCALAR) {
        as_enum.what = NULL;
        must_be(l, &as_enum, node, path);
        return;
    }
    h_enum(l, &as_enum, node, base, path);
}

/* model: {file: model.safetensors, arch: gpt2}; loaded in finish_top. */
static const struct field model_fields[] = {
    {"file", WANT_SCALAR, "a file name (model.safetensors)", h_string, MD(file), NULL},
    {"arch", WANT_SCALAR, "gpt2", h_string, MD(arch), NULL},
};
static void finish_model(struct loader *l, int node, const int *found, void *base, const char *path)
{
    if (found[0] < 0 && !meant_bad(l, path, "file"))
        attn_loader_error(l, node, path,
                          "'model' needs 'file': {file: model.safetensors, arch: gpt2}");
    if (found[1] < 0 && !meant_bad(l, path, "arch"))
        attn_loader_error(l, node, path,
                          "'model' needs 'arch' (the name mapping of its tensors): arch: gpt2");
    else if (l->model_spec.arch && strcmp(l->model_spec.arch, "gpt2") != 0) {
        char ap[DIAG_PATH_MAX];
        join(ap, path, "arch");
        attn_loader_error(l, found[1], ap, "arch '%.40s' is not one attnscope reads (gpt2)",
                          l->model_spec.arch);
    }
}
static const struct mapping model_map = {"model", model_fields, N(model_fields), finish_model};

static void h_model(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    walk_map(l, node, &model_map, l, path);
}

static const struct field top_fields[T_COUNT] = {
    [T_VERSION] = {"version", WANT_SCALAR, "an integer", h_version, 0, NULL},
    [T_TITLE] = {"title", WANT_SCALAR, "a string", h_string, S(title), NULL},
    [T_TOKENIZER] = {"tokenizer", WANT_ANY, NULL, h_tokenizer, S(tokenizer), &tokenizer_enum},
    [T_TEXT] = {"text", WANT_SCALAR, "a string", h_text, 0, NULL},
    [T_TOKENS] = {"tokens", WANT_SEQ, "a list of strings", h_tokens, 0, NULL},
    [T_SEED] = {"seed", WANT_SCALAR, SEED_WHAT, h_seed, S(seed), NULL},
    [T_EMBEDDINGS] = {"embeddings", WANT_ANY,
                      "a list of rows, {file: name.npy or .csv} or a mapping like {dim: 3}",
                      h_embeddings, 0, NULL},
    [T_POSITIONAL] = {"positional", WANT_MAP, "a mapping like {kind: learned, max_len: 10}", h_map,
                      0, &positional_map},
    [T_ATTENTION] = {"attention", WANT_MAP, "a mapping like {heads: 2, causal: true}", h_map, 0,
                     &attention_map},
    [T_BLOCK] = {"block", WANT_MAP, "a mapping like {order: post, ffn_hidden: 8}", h_map, 0,
                 &block_map},
    [T_LAYERS] = {"layers", WANT_SCALAR, "an integer", h_int, S(layers), &layers_range},
    [T_WEIGHTS] = {"weights", WANT_ANY,
                   "a mapping like {query: [[...]], key: ..., value: ...}, or a list of them, one "
                   "per layer",
                   h_weights, 0, NULL},
    [T_VIEW] = {"view", WANT_MAP, "a mapping like {layer: 1, head: 3, stage: weights}", h_map, 0,
                &view_map},
    [T_MODEL] = {"model", WANT_MAP, "a mapping like {file: model.safetensors, arch: gpt2}", h_model,
                 0, NULL},
    [T_LESSON] = {"lesson", WANT_SEQ, "a list of steps like - {stage: weights, caption: ...}",
                  h_lesson, 0, NULL},
    [T_ABLATE] = {"ablate", WANT_SEQ, "a list of heads like - {layer: 1, head: 0, mode: zero}",
                  h_ablate, 0, NULL},
};
static const struct mapping top_map = {"", top_fields, T_COUNT, finish_top};

/* Mappings below the top level, for "it belongs under 'attention'" hints. */
static const struct mapping *const nested_maps[] = {
    &attention_map, &positional_map, &embeddings_map, &block_map, &weights_map, &view_map};

/* ---- keys ------------------------------------------------------------------------------- */

static int find_field(const struct mapping *m, const char *key)
{
    for (int i = 0; i < m->n_fields; i++)
        if (strcmp(m->fields[i].key, key) == 0)
            return i;
    return -1;
}

/* The field of m nearest to key, when close enough to suggest (see attn_suggest_nearest), or -1. */
static int nearest_field(const struct mapping *m, const char *key, int *distance)
{
    const char *keys[MAX_FIELDS];
    int n = m->n_fields < MAX_FIELDS ? m->n_fields : MAX_FIELDS; /* walk_map's limit too */
    for (int i = 0; i < n; i++)
        keys[i] = m->fields[i].key;
    return attn_suggest_nearest(key, keys, n, distance);
}

/* The key the message of an unknown key names is taken as given but unknown: its value is a
 * default, so checks that read it would complain about that default. */
static void mark_meant(struct loader *l, const char *path, const char *key)
{
    char meant[DIAG_PATH_MAX];
    join(meant, path, key);
    attn_loader_mark_bad(l, meant);
}

static void unknown_key(struct loader *l, const struct mapping *m, int knode, const char *path)
{
    const char *key = str_of(l, knode);
    char in[DIAG_PATH_MAX + 8] = "";
    if (m->name[0])
        snprintf(in, sizeof(in), " in '%s'", m->name);
    char kpath[DIAG_PATH_MAX];
    join(kpath, path, key);

    int d;
    int best = nearest_field(m, key, &d);
    if (best >= 0) {
        attn_loader_error(l, knode, kpath, "unknown key '%.60s'%s (did you mean '%s'?)", key, in,
                          m->fields[best].key);
        mark_meant(l, path, m->fields[best].key);
        return;
    }
    if (m == &top_map) {
        /* A key of a nested mapping written at the top level, exactly or nearly. */
        const struct mapping *near_map = NULL;
        int near = -1, near_d = INT_MAX;
        for (size_t i = 0; i < sizeof(nested_maps) / sizeof(nested_maps[0]); i++) {
            if (find_field(nested_maps[i], key) >= 0) {
                attn_loader_error(l, knode, kpath, "unknown key '%s' (it belongs under '%s')", key,
                                  nested_maps[i]->name);
                mark_meant(l, nested_maps[i]->name, key);
                return;
            }
            int j = nearest_field(nested_maps[i], key, &d);
            if (j >= 0 && d < near_d) {
                near_map = nested_maps[i];
                near = j;
                near_d = d;
            }
        }
        if (near_map) {
            attn_loader_error(l, knode, kpath,
                              "unknown key '%.60s' (did you mean '%s' under '%s'?)", key,
                              near_map->fields[near].key, near_map->name);
            mark_meant(l, near_map->name, near_map->fields[near].key);
            return;
        }
    } else if (find_field(&top_map, key) >= 0) {
        attn_loader_error(l, knode, kpath, "unknown key '%s'%s (it belongs at the top level)", key,
                          in);
        mark_meant(l, "", key);
        return;
    }
    char valid[384];
    size_t o = 0;
    valid[0] = '\0';
    for (int i = 0; i < m->n_fields && o < sizeof(valid); i++)
        o +=
            (size_t)snprintf(valid + o, sizeof(valid) - o, "%s%s", i ? ", " : "", m->fields[i].key);
    attn_loader_error(l, knode, kpath, "unknown key '%.60s'%s (valid keys: %s)", key, in, valid);
}

static bool type_ok(enum want w, int type)
{
    switch (w) {
    case WANT_SCALAR:
        return type == YNODE_SCALAR;
    case WANT_SEQ:
        return type == YNODE_SEQ;
    case WANT_MAP:
        return type == YNODE_MAP;
    case WANT_DATA:
        return type == YNODE_SEQ || type == YNODE_MAP;
    default:
        return true;
    }
}

static void walk_map(struct loader *l, int node, const struct mapping *m, void *base,
                     const char *path)
{
    int found[MAX_FIELDS], keys[MAX_FIELDS];
    for (int i = 0; i < MAX_FIELDS; i++)
        found[i] = keys[i] = -1;
    char buf[LOADER_SHOW_MAX], kpath[DIAG_PATH_MAX];

    /* Keys, in file order. */
    int k = nd_of(l, node)->u.c.first;
    while (k >= 0 && !l->yd.stopped) {
        int v = nd_of(l, k)->next;
        int next = v >= 0 ? nd_of(l, v)->next : -1;
        const struct ynode *kn = nd_of(l, k);
        if (kn->type == YNODE_BAD) {
            /* an alias used as a key: already reported */
        } else if (kn->type != YNODE_SCALAR || has_nul(l, k)) {
            attn_loader_error(l, k, path, "keys must be plain names, got %s",
                              attn_loader_show(l, k, buf, sizeof(buf)));
        } else {
            const char *key = str_of(l, k);
            int i = find_field(m, key);
            join(kpath, path, key);
            if (i < 0)
                unknown_key(l, m, k, path);
            else if (found[i] >= 0)
                attn_loader_error(l, k, kpath, "duplicate key '%s' (first given at line %d)", key,
                                  attn_loader_line(l, keys[i]));
            else if (v >= 0) {
                found[i] = v;
                keys[i] = k;
                attn_loader_register(l, kpath, k, v);
            }
        }
        k = next;
    }

    /* Values, in table order. */
    for (int i = 0; i < m->n_fields && !l->yd.stopped; i++) {
        if (found[i] < 0)
            continue;
        const struct field *f = &m->fields[i];
        join(kpath, path, f->key);
        int type = nd_of(l, found[i])->type;
        if (type == YNODE_BAD)
            attn_loader_mark_bad(l, kpath);
        else if (!type_ok(f->want, type))
            must_be(l, f, found[i], kpath);
        else
            f->handler(l, f, found[i], base, kpath);
    }
    if (m->finish && !l->yd.stopped)
        m->finish(l, node, found, base, path);
}

void attn_schema_load_scene(struct loader *l, int root)
{
    walk_map(l, root, &top_map, l->s, "");
}
