/* schema_data: the handlers of matrices, vectors and dropout masks, inline or from .npy and
 * .csv files (see schema.h). */
#include "scenefile/schema.h"

/* ---- handlers: matrices ------------------------------------------------------------------ */

/* One number of a matrix or vector; `where` says which ("row 2, column 3"). */
static bool read_value(struct loader *l, int node, const char *label, const char *where,
                       const char *path, float *out)
{
    double v;
    enum num r = attn_schema_scalar_number(l, node, &v);
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
bool attn_schema_is_file_ref(const struct loader *l, int node)
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
int attn_schema_read_file_ref(struct loader *l, int node, const char *label, const char *path,
                              int ndim, struct npy_array *out, const char **file)
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
    if (value < 0 || nd_of(l, value)->type != YNODE_SCALAR || attn_schema_is_nothing(l, value) ||
        attn_schema_has_nul(l, value)) {
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
    if (attn_schema_read_file_ref(l, node, label, path, 2, &a, &name) != 0)
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
int attn_schema_read_matrix(struct loader *l, int node, const char *label, const char *path,
                            const struct mat_limits *lim, struct attn_matrix *out)
{
    if (attn_schema_is_file_ref(l, node))
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
    if (attn_schema_is_file_ref(l, node)) {
        struct npy_array a;
        const char *name;
        if (attn_schema_read_file_ref(l, node, label, path, 1, &a, &name) != 0)
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

void attn_schema_matrix(struct loader *l, const struct field *f, int node, void *base,
                        const char *path)
{
    struct attn_matrix m = {0};
    if (attn_schema_read_matrix(l, node, f->key, path, f->arg, &m) == 0) {
        struct attn_matrix *dst = FIELD(base, f, struct attn_matrix);
        attn_matrix_free(dst);
        *dst = m;
    }
}

void attn_schema_vector(struct loader *l, const struct field *f, int node, void *base,
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
    if (attn_schema_read_file_ref(l, node, "dropout_mask", path, 3, &a, &name) != 0)
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

void attn_schema_dropout_mask(struct loader *l, const struct field *f, int node, void *base,
                              const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (attn_schema_is_file_ref(l, node)) {
        dropout_mask_file(l, node, path, s);
        return;
    }
    if (nd->type != YNODE_SEQ) {
        attn_schema_must_be(l, f, node, path);
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
