/* scene: a scene's lifecycle: its defaults, the built-in scene, copies and freeing, matrices, the
 * explicit parameters dropped, the backing's widening buffer (see scene.h). The other jobs are
 * files of their own: scene_text (the sentence, seeds, ablations), scene_derived (effective values,
 * sizes, memory, flops), scene_check (the cross-key rules) and scene_describe (names and words). */
#include "engine/scene.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/lesson.h"
#include "engine/scene_fields.h"
#include "engine/tokenize.h"

/* What a scene leaves out: the book's torch.manual_seed(123) and 3-d embeddings, a learned
 * position table of 512 rows, the sinusoids' and RoPE's base 10000, torch's LayerNorm eps. */
#define DEFAULT_SEED    123
#define DEFAULT_DIM     3
#define DEFAULT_MAX_LEN 512
#define DEFAULT_BASE    10000.0
#define DEFAULT_EPS     1e-5

/* The book's six tokens and their 3-d embeddings (ch. 3.3.1), through ch. 3.6's
 * MultiHeadAttention: d_out 2, 2 heads. */
#define BOOK_TOKENS 6
#define BOOK_DIM    3
#define BOOK_D_OUT  2
#define BOOK_HEADS  2
static const char *const book_tokens[BOOK_TOKENS] = {"Your", "journey", "starts",
                                                     "with", "one",     "step"};
static const float book_rows[BOOK_TOKENS][BOOK_DIM] = {
    {0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f},
    {0.22f, 0.58f, 0.33f}, {0.77f, 0.25f, 0.10f}, {0.05f, 0.80f, 0.55f},
};

void attn_matrix_free(struct attn_matrix *m)
{
    if (m->borrowed) { /* the backing owns it */
        memset(m, 0, sizeof(*m));
        return;
    }
    free(m->data);
    memset(m, 0, sizeof(*m));
}

int attn_matrix_alloc(struct attn_matrix *m, int rows, int cols)
{
    memset(m, 0, sizeof(*m));
    size_t count = (size_t)rows * (size_t)cols;
    m->data = calloc(count ? count : 1, sizeof(float));
    if (!m->data)
        return -1;
    m->rows = rows;
    m->cols = cols;
    return 0;
}

int attn_matrix_copy(struct attn_matrix *dst, const struct attn_matrix *src)
{
    memset(dst, 0, sizeof(*dst));
    if (!attn_matrix_given(src))
        return 0;
    if (src->borrowed) { /* shared: the copy holds a reference to the backing */
        *dst = *src;
        return 0;
    }
    if (attn_matrix_alloc(dst, src->rows, src->cols))
        return -1;
    memcpy(dst->data, src->data, (size_t)src->rows * (size_t)src->cols * sizeof(float));
    return 0;
}

void attn_scene_init(struct attn_scene *s)
{
    memset(s, 0, sizeof(*s));
    s->tokenizer = TOKENIZER_WHITESPACE;
    s->seed = DEFAULT_SEED;
    s->embed.kind = EMBED_LEARNED;
    s->embed.dim = DEFAULT_DIM;
    s->pos.kind = POS_NONE;
    s->pos.max_len = DEFAULT_MAX_LEN;
    s->pos.base = DEFAULT_BASE;
    s->pos.scaling.attention_factor = 1.0; /* none */
    s->block.norm_eps = DEFAULT_EPS;
    s->layers = 1;
    s->view.layer = -1;
    s->attn.projection = PROJ_DEFAULT;
    s->attn.heads = 1;
    s->attn.layout = LAYOUT_SPLIT;
    s->attn.mask_mode = MASK_BEFORE_SOFTMAX;
    s->attn.normalize = NORMALIZE_SOFTMAX;
    s->attn.scale = SCALE_DEFAULT;
    s->attn.out_proj = TRI_DEFAULT;
    s->attn.out_bias = true;
    s->mask_id = -1;
    s->decoder_start = -1;
}

void attn_scene_weights_free(struct attn_scene_weights *w)
{
#define X(name) attn_matrix_free(&w->name);
    ATTN_WEIGHT_MATRICES(X)
#undef X
    free(w->dropout_mask);
    memset(w, 0, sizeof(*w));
}

void attn_scene_weights_free_all(struct attn_scene *s)
{
    attn_scene_weights_free(&s->weights);
    for (int i = 0; i < s->n_more; i++)
        attn_scene_weights_free(&s->more_weights[i]);
    free(s->more_weights);
    s->more_weights = NULL;
    s->n_more = 0;
}

bool attn_scene_drop_weights(struct attn_scene *s)
{
    if (s->model.file) /* a checkpoint's numbers are the point: they never go */
        return false;
    bool any = s->weights.set || s->weights.dropout_mask || s->n_more > 0;
    attn_scene_weights_free_all(s);
    s->weights_listed = false;
    return any;
}

void attn_scene_drop_dropout_masks(struct attn_scene *s)
{
    for (int L = 0; L <= s->n_more; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        free(w->dropout_mask);
        w->dropout_mask = NULL;
        w->dropout_mask_n = w->dropout_mask_heads = 0;
    }
}

void attn_book_rows_unref(struct attn_book_rows *b)
{
    if (!b || --b->refs > 0)
        return;
    attn_tokens_free(b->tokens, b->n);
    free(b->rows);
    free(b);
}

/* The list of scene_fields.h as a table: each row's type checked against its kind (a field of
 * another type is a compile error: "_Generic selector ... not compatible"), and so is its count
 * (an int). */
#define FIELD_TYPE_FIELD_STRING    char *
#define FIELD_TYPE_FIELD_STRINGS   char **
#define FIELD_TYPE_FIELD_INTS      int *
#define FIELD_TYPE_FIELD_MATRIX    struct attn_matrix
#define FIELD_TYPE_FIELD_ABLATIONS struct attn_ablation *
#define FIELD_TYPE_FIELD_WEIGHTS   struct attn_scene_weights
#define FIELD_TYPE_FIELD_LAYERS    struct attn_scene_weights *
#define FIELD_TYPE_FIELD_BOOK      struct attn_book_rows *
#define FIELD_TYPE_FIELD_LESSON    struct attn_lesson *
#define FIELD_TYPE_FIELD_BACKING   struct attn_backing *
#define FIELD_TYPE_FIELD_BORROWED  const float *
#define FIELD_TYPE_FIELD_SCENE     struct attn_scene *
#define MEMBER(field)              (((struct attn_scene *)0)->field)
#define ATTN_FIELD_N(field)                                                                        \
    _Generic(MEMBER(field), int : (ptrdiff_t)offsetof(struct attn_scene, field))
#define ATTN_FIELD_NONE ((ptrdiff_t)-1)
#define ROW(kind, field, count, use)                                                               \
    {#field, kind,                                                                                 \
     _Generic(MEMBER(field), FIELD_TYPE_##kind                                                     \
              : offsetof(struct attn_scene, field)),                                               \
     count, use},
const struct attn_scene_field attn_scene_fields[] = {ATTN_SCENE_FIELDS(ROW)};
const int attn_scene_n_fields = (int)(sizeof(attn_scene_fields) / sizeof(attn_scene_fields[0]));
#undef ROW

static void *field_at(const struct attn_scene *s, const struct attn_scene_field *f)
{
    return (char *)s + f->offset;
}

/* The field's item count (its count field's value), 0 for a field with none. */
static int field_count(const struct attn_scene *s, const struct attn_scene_field *f)
{
    return f->count < 0 ? 0 : *(const int *)((const char *)s + f->count);
}

static void set_count(struct attn_scene *s, const struct attn_scene_field *f, int n)
{
    *(int *)((char *)s + f->count) = n;
}

/* Bytes of a layer's dropout mask: (heads, n, n) of 0/1. */
static size_t mask_bytes(const struct attn_scene_weights *w)
{
    return (size_t)w->dropout_mask_heads * (size_t)w->dropout_mask_n * (size_t)w->dropout_mask_n;
}

/* What attn_matrix_copy allocates for m: its floats, or nothing when it is borrowed. */
static size_t matrix_bytes(const struct attn_matrix *m)
{
    if (!attn_matrix_given(m) || m->borrowed)
        return 0;
    size_t count = (size_t)m->rows * (size_t)m->cols;
    return (count ? count : 1) * sizeof(float);
}

static size_t weights_bytes(const struct attn_scene_weights *w)
{
    size_t bytes = 0;
#define X(name) bytes += matrix_bytes(&w->name);
    ATTN_WEIGHT_MATRICES(X)
#undef X
    if (w->dropout_mask)
        bytes += mask_bytes(w) ? mask_bytes(w) : 1;
    return bytes;
}

/* dw must be zeroed; on failure it holds what was copied (attn_scene_weights_free frees it). */
static int weights_copy(struct attn_scene_weights *dw, const struct attn_scene_weights *sw)
{
    int rc = 0;
    dw->set = sw->set;
    dw->experts = sw->experts; /* the backing's */
#define X(name) rc |= attn_matrix_copy(&dw->name, &sw->name);
    ATTN_WEIGHT_MATRICES(X)
#undef X
    if (sw->dropout_mask) {
        size_t bytes = mask_bytes(sw);
        dw->dropout_mask = malloc(bytes ? bytes : 1);
        if (dw->dropout_mask) {
            memcpy(dw->dropout_mask, sw->dropout_mask, bytes);
            dw->dropout_mask_n = sw->dropout_mask_n;
            dw->dropout_mask_heads = sw->dropout_mask_heads;
        } else {
            rc = -1;
        }
    }
    return rc;
}

/* Empties a shallow copy's owned field (a failure half-way then frees only what was copied), or
 * takes one more reference to a shared one. */
static void field_take(struct attn_scene *dst, const struct attn_scene_field *f)
{
    void *p = field_at(dst, f);
    switch (f->kind) {
    case FIELD_STRING:
        *(char **)p = NULL;
        break;
    case FIELD_INTS:
        *(int **)p = NULL;
        break;
    case FIELD_STRINGS:
        *(char ***)p = NULL;
        set_count(dst, f, 0);
        break;
    case FIELD_ABLATIONS:
        *(struct attn_ablation **)p = NULL;
        set_count(dst, f, 0);
        break;
    case FIELD_LAYERS:
        *(struct attn_scene_weights **)p = NULL;
        set_count(dst, f, 0);
        break;
    case FIELD_MATRIX:
        memset(p, 0, sizeof(struct attn_matrix));
        break;
    case FIELD_WEIGHTS:
        memset(p, 0, sizeof(struct attn_scene_weights));
        break;
    case FIELD_BOOK: {
        struct attn_book_rows *b = *(struct attn_book_rows **)p;
        if (b)
            b->refs++;
        break;
    }
    case FIELD_LESSON:
        attn_lesson_ref(*(struct attn_lesson **)p); /* read-only: shared */
        break;
    case FIELD_BACKING: {
        struct attn_backing *b = *(struct attn_backing **)p;
        if (b)
            b->refs++;
        break;
    }
    case FIELD_BORROWED:
        break;
    case FIELD_SCENE:
        *(struct attn_scene **)p = NULL;
        break;
    }
}

/* Copies src's field into dst's, emptied by field_take. Returns 0, or -1 out of memory. */
static int field_copy(struct attn_scene *dst, const struct attn_scene *src,
                      const struct attn_scene_field *f)
{
    void *to = field_at(dst, f);
    const void *from = field_at(src, f);
    int n = field_count(src, f);
    switch (f->kind) {
    case FIELD_STRING: {
        const char *s = *(char *const *)from;
        return s && !(*(char **)to = strdup(s)) ? -1 : 0;
    }
    case FIELD_STRINGS:
        if (n > 0 && !(*(char ***)to = attn_tokens_dup(*(char **const *)from, n)))
            return -1;
        set_count(dst, f, n);
        return 0;
    case FIELD_INTS: {
        const int *ints = *(int *const *)from;
        int *copy = NULL;
        if (ints && n > 0 && !(copy = *(int **)to = malloc((size_t)n * sizeof(int))))
            return -1;
        if (copy)
            memcpy(copy, ints, (size_t)n * sizeof(int));
        return 0;
    }
    case FIELD_ABLATIONS: {
        const struct attn_ablation *items = *(struct attn_ablation *const *)from;
        struct attn_ablation *copy = NULL;
        if (items && n > 0 &&
            !(copy = *(struct attn_ablation **)to = malloc((size_t)n * sizeof(*copy))))
            return -1;
        if (copy)
            memcpy(copy, items, (size_t)n * sizeof(*copy));
        set_count(dst, f, n);
        return 0;
    }
    case FIELD_MATRIX:
        return attn_matrix_copy(to, from);
    case FIELD_WEIGHTS:
        return weights_copy(to, from);
    case FIELD_LAYERS: {
        const struct attn_scene_weights *layers = *(struct attn_scene_weights *const *)from;
        if (n <= 0)
            return 0;
        struct attn_scene_weights *copy = calloc((size_t)n, sizeof(*copy));
        if (!(*(struct attn_scene_weights **)to = copy))
            return -1;
        set_count(dst, f, n);
        int rc = 0;
        for (int i = 0; i < n; i++)
            rc |= weights_copy(&copy[i], &layers[i]);
        return rc;
    }
    case FIELD_BOOK:
    case FIELD_LESSON:
    case FIELD_BACKING:
    case FIELD_BORROWED:
        return 0; /* shared: field_take counted the reference */
    case FIELD_SCENE: {
        const struct attn_scene *sc = *(struct attn_scene *const *)from;
        struct attn_scene *copy;
        if (!sc)
            return 0;
        if (!(copy = calloc(1, sizeof(*copy))))
            return -1;
        if (attn_scene_copy(copy, sc)) {
            free(copy);
            return -1;
        }
        *(struct attn_scene **)to = copy;
        return 0;
    }
    }
    return 0;
}

static void field_free(struct attn_scene *s, const struct attn_scene_field *f)
{
    void *p = field_at(s, f);
    switch (f->kind) {
    case FIELD_STRING:
        free(*(char **)p);
        break;
    case FIELD_INTS:
        free(*(int **)p);
        break;
    case FIELD_ABLATIONS:
        free(*(struct attn_ablation **)p);
        break;
    case FIELD_STRINGS:
        attn_tokens_free(*(char ***)p, field_count(s, f));
        break;
    case FIELD_MATRIX:
        attn_matrix_free(p);
        break;
    case FIELD_WEIGHTS:
        attn_scene_weights_free(p);
        break;
    case FIELD_LAYERS: {
        struct attn_scene_weights *layers = *(struct attn_scene_weights **)p;
        for (int i = 0; layers && i < field_count(s, f); i++)
            attn_scene_weights_free(&layers[i]);
        free(layers);
        break;
    }
    case FIELD_BOOK:
        attn_book_rows_unref(*(struct attn_book_rows **)p);
        break;
    case FIELD_LESSON:
        attn_lesson_unref(*(struct attn_lesson **)p);
        break;
    case FIELD_BACKING: {
        struct attn_backing *b = *(struct attn_backing **)p;
        if (b && --b->refs == 0) {
            attn_param_cache_free(b);
            if (b->release)
                b->release(b);
        }
        break;
    }
    case FIELD_BORROWED:
        break;
    case FIELD_SCENE: {
        struct attn_scene *sc = *(struct attn_scene **)p;
        if (sc) {
            attn_scene_free(sc);
            free(sc);
        }
        break;
    }
    }
}

/* Bytes field_copy allocates for the field: none for what copies share. */
static size_t field_bytes(const struct attn_scene *s, const struct attn_scene_field *f)
{
    const void *p = field_at(s, f);
    int n = field_count(s, f);
    size_t bytes = 0;
    switch (f->kind) {
    case FIELD_STRING: {
        const char *str = *(char *const *)p;
        return str ? strlen(str) + 1 : 0;
    }
    case FIELD_STRINGS: {
        char *const *tokens = *(char **const *)p;
        for (int i = 0; tokens && i < n; i++)
            bytes += sizeof(char *) + strlen(tokens[i]) + 1;
        return bytes;
    }
    case FIELD_INTS:
        return *(int *const *)p && n > 0 ? (size_t)n * sizeof(int) : 0;
    case FIELD_ABLATIONS:
        return *(struct attn_ablation *const *)p && n > 0 ? (size_t)n * sizeof(struct attn_ablation)
                                                          : 0;
    case FIELD_MATRIX:
        return matrix_bytes(p);
    case FIELD_WEIGHTS:
        return weights_bytes(p);
    case FIELD_LAYERS: {
        const struct attn_scene_weights *layers = *(struct attn_scene_weights *const *)p;
        for (int i = 0; layers && i < n; i++)
            bytes += sizeof(layers[i]) + weights_bytes(&layers[i]);
        return bytes;
    }
    case FIELD_BOOK:
    case FIELD_LESSON:
    case FIELD_BACKING:
    case FIELD_BORROWED:
        return 0;
    case FIELD_SCENE: {
        const struct attn_scene *sc = *(struct attn_scene *const *)p;
        return sc ? sizeof(*sc) + attn_scene_owned_bytes(sc) : 0;
    }
    }
    return 0;
}

static bool same_matrix(const struct attn_matrix *a, const struct attn_matrix *b)
{
    if (a->lazy || b->lazy)
        return a->lazy == b->lazy && a->lazy_t == b->lazy_t && a->rows == b->rows &&
               a->cols == b->cols;
    if (a->data == b->data)
        return a->rows == b->rows && a->cols == b->cols;
    if (!a->data || !b->data || a->rows != b->rows || a->cols != b->cols)
        return false;
    return memcmp(a->data, b->data, (size_t)a->rows * (size_t)a->cols * sizeof(float)) == 0;
}

static bool same_weights(const struct attn_scene_weights *a, const struct attn_scene_weights *b,
                         enum attn_fields_compare which)
{
    if (a->set != b->set || a->experts != b->experts)
        return false;
#define X(name)                                                                                    \
    if (!same_matrix(&a->name, &b->name))                                                          \
        return false;
    ATTN_WEIGHT_MATRICES(X)
#undef X
    if (which != FIELDS_ALL)
        return true; /* the dropout masks may differ: they are made again */
    if ((!a->dropout_mask) != (!b->dropout_mask))
        return false;
    return !a->dropout_mask || (a->dropout_mask_n == b->dropout_mask_n &&
                                a->dropout_mask_heads == b->dropout_mask_heads &&
                                memcmp(a->dropout_mask, b->dropout_mask, mask_bytes(a)) == 0);
}

static bool same_field(const struct attn_scene *a, const struct attn_scene *b,
                       const struct attn_scene_field *f, enum attn_fields_compare which)
{
    const void *x = field_at(a, f), *y = field_at(b, f);
    int n = field_count(a, f);
    if (n != field_count(b, f))
        return false;
    switch (f->kind) {
    case FIELD_STRING: {
        const char *s = *(char *const *)x, *t = *(char *const *)y;
        return s == t || (s && t && strcmp(s, t) == 0);
    }
    case FIELD_STRINGS: {
        char *const *s = *(char **const *)x, *const *t = *(char **const *)y;
        if (!s || !t)
            return s == t || n == 0;
        for (int i = 0; i < n; i++)
            if (strcmp(s[i], t[i]) != 0)
                return false;
        return true;
    }
    case FIELD_INTS: {
        const int *s = *(int *const *)x, *t = *(int *const *)y;
        if (!s || !t)
            return s == t;
        return n <= 0 || memcmp(s, t, (size_t)n * sizeof(int)) == 0;
    }
    case FIELD_ABLATIONS: {
        const struct attn_ablation *s = *(struct attn_ablation *const *)x;
        const struct attn_ablation *t = *(struct attn_ablation *const *)y;
        if (!s || !t)
            return s == t || n == 0;
        for (int i = 0; i < n; i++)
            if (s[i].layer != t[i].layer || s[i].head != t[i].head || s[i].mode != t[i].mode)
                return false;
        return true;
    }
    case FIELD_MATRIX:
        return same_matrix(x, y);
    case FIELD_WEIGHTS:
        return same_weights(x, y, which);
    case FIELD_LAYERS: {
        const struct attn_scene_weights *s = *(struct attn_scene_weights *const *)x;
        const struct attn_scene_weights *t = *(struct attn_scene_weights *const *)y;
        if (!s || !t)
            return s == t || n == 0;
        for (int i = 0; i < n; i++)
            if (!same_weights(&s[i], &t[i], which))
                return false;
        return true;
    }
    case FIELD_BOOK:
        return *(struct attn_book_rows *const *)x == *(struct attn_book_rows *const *)y;
    case FIELD_LESSON:
        return *(struct attn_lesson *const *)x == *(struct attn_lesson *const *)y;
    case FIELD_BACKING:
        return *(struct attn_backing *const *)x == *(struct attn_backing *const *)y;
    case FIELD_BORROWED: {
        const float *s = *(const float *const *)x, *t = *(const float *const *)y;
        return s == t || (s && t && (n <= 0 || memcmp(s, t, (size_t)n * sizeof(float)) == 0));
    }
    case FIELD_SCENE: { /* only the fields: an encoder's options are compared by the caller */
        const struct attn_scene *s = *(struct attn_scene *const *)x;
        const struct attn_scene *t = *(struct attn_scene *const *)y;
        return s == t || (s && t && attn_scene_same_fields(s, t, which));
    }
    }
    return false;
}

bool attn_scene_same_fields(const struct attn_scene *a, const struct attn_scene *b,
                            enum attn_fields_compare which)
{
    for (int i = 0; i < attn_scene_n_fields; i++) {
        const struct attn_scene_field *f = &attn_scene_fields[i];
        bool compared = which == FIELDS_ALL || f->use == FIELD_PARAM ||
                        (f->use == FIELD_SENTENCE && which == FIELDS_PARAMS);
        if (compared && !same_field(a, b, f, which))
            return false;
    }
    return true;
}

void attn_scene_free(struct attn_scene *s)
{
    for (int i = 0; i < attn_scene_n_fields; i++)
        field_free(s, &attn_scene_fields[i]);
    memset(s, 0, sizeof(*s));
}

int attn_scene_copy(struct attn_scene *dst, const struct attn_scene *src)
{
    *dst = *src;
    for (int i = 0; i < attn_scene_n_fields; i++)
        field_take(dst, &attn_scene_fields[i]);
    int rc = 0;
    for (int i = 0; i < attn_scene_n_fields; i++)
        rc |= field_copy(dst, src, &attn_scene_fields[i]);
    if (rc) {
        attn_scene_free(dst);
        return -1;
    }
    return 0;
}

size_t attn_scene_owned_bytes(const struct attn_scene *s)
{
    size_t bytes = 0;
    for (int i = 0; i < attn_scene_n_fields; i++)
        bytes += field_bytes(s, &attn_scene_fields[i]);
    return bytes;
}

static _Thread_local int param_slot; /* the widening buffer this thread uses: 0, or 1 */

int attn_param_cache_slot(void)
{
    return param_slot;
}

struct attn_param_cache *attn_param_cache_get(struct attn_backing *b)
{
    struct attn_param_cache **own = &b->cache[param_slot];
    if (!*own) {
        struct attn_param_cache *c = calloc(1, sizeof(*c));
        if (!c)
            return NULL;
        c->floats = b->lazy_floats ? b->lazy_floats : 1;
        c->buf = malloc(c->floats * sizeof(float)); /* its pages cost memory once written */
        c->turn = malloc(ATTN_TURN_BLOCK_FLOATS * sizeof(float));
        if (!c->buf || !c->turn) {
            free(c->buf);
            free(c->turn);
            free(c);
            return NULL;
        }
        *own = c;
    }
    return *own;
}

int attn_param_cache_worker(struct attn_backing *b)
{
    param_slot = 1;
    if (b && b->read_rows && !attn_param_cache_get(b)) {
        param_slot = 0;
        return -1;
    }
    return 0;
}

void attn_param_cache_free(struct attn_backing *b)
{
    for (int i = 0; b && i < 2; i++)
        if (b->cache[i]) {
            free(b->cache[i]->buf);
            free(b->cache[i]->turn);
            free(b->cache[i]);
            b->cache[i] = NULL;
        }
}

void attn_param_cache_drop(struct attn_backing *b)
{
    if (!b || !b->cache[param_slot])
        return;
    struct attn_param_cache *c = b->cache[param_slot];
    c->tensor = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t lo = ((uintptr_t)c->buf + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    uintptr_t hi =
        ((uintptr_t)c->buf + c->floats * sizeof(float)) / (uintptr_t)page * (uintptr_t)page;
    if (hi > lo) /* whole pages inside the buffer only; they read as zeros until written */
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

int attn_scene_init_default(struct attn_scene *s)
{
    attn_scene_init(s);
    s->title = strdup("Your journey starts with one step: multi-head attention (ch. 3.6)");
    s->text = strdup("Your journey starts with one step");
    s->tokens = attn_tokens_dup((char *const *)book_tokens, BOOK_TOKENS);
    if (s->tokens)
        s->n_tokens = BOOK_TOKENS;
    if (!s->title || !s->text || !s->tokens ||
        attn_matrix_alloc(&s->embed.rows, BOOK_TOKENS, BOOK_DIM)) {
        attn_scene_free(s);
        attn_scene_init(s);
        return -1;
    }
    s->embed.kind = EMBED_EXPLICIT;
    memcpy(s->embed.rows.data, book_rows, sizeof(book_rows));
    s->attn.projection = PROJ_LINEAR;
    s->attn.d_out = BOOK_D_OUT;
    s->attn.heads = BOOK_HEADS;
    s->attn.causal = true;
    return 0;
}

int attn_scene_check_backing(const struct attn_scene *s, struct diag *err)
{
    if (!s->backing || !s->backing->check)
        return 0;
    return s->backing->check(s->backing, err);
}
