/* safetensors: reading Hugging Face's checkpoints (see safetensors.h).
 *
 * The header's top-level object is walked here and jansson parses one key or tensor entry at a
 * time (a name twice is found once they are sorted); each entry is checked field by field, then
 * the offsets against the data section; only then are the tensors handed out, sorted by name. Data
 * is little-endian whatever the host, so the readers assemble values from bytes except where the
 * host matches. Every message names the file (err->file) and, where one is at fault, the tensor;
 * names and JSON excerpts are escaped and cut so a hostile header cannot flood or drive a terminal.
 */
#include "pretrained/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/mapguard.h"
#include "common/utf8.h"
#include "pretrained/jsonoom.h"

#define SHOW_MAX 100 /* bytes of a name or JSON excerpt in a message */

/* s for a message: escaped (common/utf8.h), cut on a character boundary with "…" to fit in out
 * (at least 8 bytes). */
static const char *show(char *out, size_t size, const char *s)
{
    attn_utf8_escape(out, size, s, (size_t)-1, 0);
    return out;
}

/* A JSON value for "got ...": as written (cut), but a large container only by its kind, so a
 * huge header is not dumped into a message. */
static const char *show_json(char *out, size_t size, const json_t *v)
{
    if (json_is_object(v))
        return snprintf(out, size, "an object"), out;
    if (json_is_array(v) && json_array_size(v) > 16)
        return snprintf(out, size, "an array of %zu values", json_array_size(v)), out;
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    show(out, size, text ? text : "?");
    free(text);
    return out;
}

/* ---- dtypes ------------------------------------------------------------------------------- */

/* Every dtype safetensors defines; F4 and F6 pack several elements into a byte. */
static const struct {
    const char *name;
    int bits;
    enum st_dtype dtype;
} DTYPES[] = {
    {"F32", 32, ST_F32},      {"F16", 16, ST_F16},      {"BF16", 16, ST_BF16},
    {"F64", 64, ST_OTHER},    {"I64", 64, ST_OTHER},    {"I32", 32, ST_OTHER},
    {"I16", 16, ST_OTHER},    {"I8", 8, ST_OTHER},      {"U64", 64, ST_OTHER},
    {"U32", 32, ST_OTHER},    {"U16", 16, ST_OTHER},    {"U8", 8, ST_OTHER},
    {"BOOL", 8, ST_OTHER},    {"F8_E5M2", 8, ST_OTHER}, {"F8_E4M3", 8, ST_OTHER},
    {"F8_E8M0", 8, ST_OTHER}, {"C64", 64, ST_OTHER},    {"F6_E2M3", 6, ST_OTHER},
    {"F6_E3M2", 6, ST_OTHER}, {"F4", 4, ST_OTHER},
};

static int dtype_index(const char *name)
{
    for (size_t i = 0; i < sizeof(DTYPES) / sizeof(DTYPES[0]); i++)
        if (strcmp(DTYPES[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int dtype_bits(const struct st_tensor *t)
{
    return DTYPES[dtype_index(t->dtype_name)].bits;
}

/* ---- the header --------------------------------------------------------------------------- */

static const char *describe_shape(char *out, size_t size, const struct st_tensor *t)
{
    size_t o = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < t->ndim && o < size; d++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (o < size)
        snprintf(out + o, size - o, "]");
    return out;
}

static bool is_count(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

/* The tensor's shape, elements and bytes, all checked: more elements than 64-bit ones could
 * fill in 2^63 bytes, or sub-byte elements that do not fill whole bytes, are refused. */
static int parse_shape(struct st_tensor *t, const json_t *shape, uint64_t *bytes, const char *path,
                       const char *key, struct diag *err)
{
    char name[SHOW_MAX + 8], got[SHOW_MAX + 8], dims[ST_MAX_DIMS * 22 + 4];
    if (!json_is_array(shape))
        return attn_diag_file(err, path, "tensor '%s': shape must be an array of integers, got %s",
                              show(name, sizeof(name), key), show_json(got, sizeof(got), shape));
    size_t ndim = json_array_size(shape);
    if (ndim > ST_MAX_DIMS)
        return attn_diag_file(err, path,
                              "tensor '%s': shape has %zu dimensions, attnscope reads at most %d",
                              show(name, sizeof(name), key), ndim, ST_MAX_DIMS);
    t->ndim = (int)ndim;
    bool zero = false;
    for (size_t d = 0; d < ndim; d++) {
        const json_t *v = json_array_get(shape, d);
        if (!is_count(v))
            return attn_diag_file(err, path,
                                  "tensor '%s': shape entry %zu is %s, not a non-negative integer",
                                  show(name, sizeof(name), key), d, show_json(got, sizeof(got), v));
        t->shape[d] = json_integer_value(v);
        zero = zero || t->shape[d] == 0;
    }
    /* Count elements and bits in 64 bits; a zero dimension makes any product empty. */
    uint64_t count = 1, limit = (uint64_t)INT64_MAX / 64;
    for (int d = 0; d < t->ndim && !zero; d++) {
        uint64_t s = (uint64_t)t->shape[d];
        if (count > limit / s)
            return attn_diag_file(
                err, path,
                "tensor '%s': shape %s has 2^57 elements or more, more than a file "
                "can hold",
                show(name, sizeof(name), key), describe_shape(dims, sizeof(dims), t));
        count *= s;
    }
    if (zero)
        count = 0;
    uint64_t bits = count * (uint64_t)dtype_bits(t);
    if (bits % 8 != 0)
        return attn_diag_file(err, path,
                              "tensor '%s': shape %s of %s is %llu bits, which is not whole bytes",
                              show(name, sizeof(name), key), describe_shape(dims, sizeof(dims), t),
                              t->dtype_name, (unsigned long long)bits);
    *bytes = bits / 8;
    return 0;
}

static int parse_tensor(struct st_tensor *t, const char *key, const json_t *v, size_t data_size,
                        const char *path, struct diag *err)
{
    char name[SHOW_MAX + 8], got[SHOW_MAX + 8], dims[ST_MAX_DIMS * 22 + 4];
    if (!json_is_object(v))
        return attn_diag_file(err, path,
                              "tensor '%s' is %s, not an object of dtype, shape and data_offsets",
                              show(name, sizeof(name), key), show_json(got, sizeof(got), v));
    for (void *it = json_object_iter((json_t *)v); it;
         it = json_object_iter_next((json_t *)v, it)) {
        const char *field = json_object_iter_key(it);
        if (strcmp(field, "dtype") && strcmp(field, "shape") && strcmp(field, "data_offsets"))
            return attn_diag_file(err, path,
                                  "tensor '%s': unknown field '%s' (a tensor has dtype, shape and "
                                  "data_offsets)",
                                  show(name, sizeof(name), key), show(got, sizeof(got), field));
    }
    static const char *const fields[] = {"dtype", "shape", "data_offsets"};
    for (int i = 0; i < 3; i++)
        if (!json_object_get(v, fields[i]))
            return attn_diag_file(err, path, "tensor '%s' has no '%s'",
                                  show(name, sizeof(name), key), fields[i]);

    const json_t *dtype = json_object_get(v, "dtype");
    if (!json_is_string(dtype))
        return attn_diag_file(err, path, "tensor '%s': dtype must be a string, got %s",
                              show(name, sizeof(name), key), show_json(got, sizeof(got), dtype));
    int di = dtype_index(json_string_value(dtype));
    if (di < 0)
        return attn_diag_file(err, path, "tensor '%s': unknown dtype '%s'",
                              show(name, sizeof(name), key),
                              show(got, sizeof(got), json_string_value(dtype)));
    t->dtype = DTYPES[di].dtype;
    snprintf(t->dtype_name, sizeof(t->dtype_name), "%s", DTYPES[di].name);

    uint64_t bytes = 0;
    if (parse_shape(t, json_object_get(v, "shape"), &bytes, path, key, err) != 0)
        return -1;

    const json_t *offs = json_object_get(v, "data_offsets");
    if (!json_is_array(offs) || json_array_size(offs) != 2 || !is_count(json_array_get(offs, 0)) ||
        !is_count(json_array_get(offs, 1)))
        return attn_diag_file(err, path,
                              "tensor '%s': data_offsets must be [begin, end], two non-negative "
                              "integers, got %s",
                              show(name, sizeof(name), key), show_json(got, sizeof(got), offs));
    uint64_t begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
    uint64_t end = (uint64_t)json_integer_value(json_array_get(offs, 1));
    if (end < begin)
        return attn_diag_file(
            err, path, "tensor '%s': data_offsets [%llu, %llu] end before they begin",
            show(name, sizeof(name), key), (unsigned long long)begin, (unsigned long long)end);
    if (end - begin != bytes)
        return attn_diag_file(
            err, path,
            "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, its shape %s of "
            "%s needs %llu",
            show(name, sizeof(name), key), (unsigned long long)begin, (unsigned long long)end,
            (unsigned long long)(end - begin), describe_shape(dims, sizeof(dims), t), t->dtype_name,
            (unsigned long long)bytes);
    if (end > data_size)
        return attn_diag_file(
            err, path,
            "tensor '%s': data_offsets [%llu, %llu] end past the data section, which "
            "holds %zu bytes (is the file truncated?)",
            show(name, sizeof(name), key), (unsigned long long)begin, (unsigned long long)end,
            data_size);
    t->begin = (size_t)begin;
    t->end = (size_t)end;
    return 0;
}

/* ---- walking the header ------------------------------------------------------------------- */

/* jansson builds a tree of whatever it parses, 10 to 20 bytes of memory for each byte of a
 * header (a valid 60 MB header took 1.18 GB and 10 s). So the top-level object is walked here,
 * member by member, and jansson parses one key or one value at a time: what stays is the tensors
 * themselves. A value of more than SPAN_ITEMS items, which no tensor entry and no metadata string
 * has, is refused or described without being parsed. */
#define SPAN_ITEMS 64
#define MIN_ENTRY  50 /* "a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}, */

struct walk {
    const char *s; /* the header: s[0] is byte 8 of the file */
    size_t n;      /* where this walk ends (the header's end, or a nested object's) */
    const char *path;
    struct diag *err;
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_space(const struct walk *w, size_t i)
{
    while (i < w->n && is_space(w->s[i]))
        i++;
    return i;
}

/* Where the value at i ends, found lexically (jansson checks the value itself): a string at its
 * closing quote, an object or array at its closing bracket, anything else at the next delimiter.
 * *items counts the commas and colons inside it, plus one: near enough the values it holds;
 * *members (when not NULL) the commas of its own level, plus one: an object's members. */
static size_t value_end(const struct walk *w, size_t i, size_t *items, size_t *members)
{
    size_t depth = 0, unused;
    bool in_string = false;
    if (!members)
        members = &unused;
    *items = *members = 1;
    for (; i < w->n; i++) {
        char c = w->s[i];
        if (in_string) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = false;
                if (depth == 0)
                    return i + 1;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            break;
        case '{':
        case '[':
            depth++;
            break;
        case '}':
        case ']':
            if (depth == 0) /* the end of the object around it */
                return i;
            if (--depth == 0)
                return i + 1;
            break;
        case ',':
        case ':':
            if (depth == 0)
                return i;
            (*items)++;
            *members += c == ',' && depth == 1;
            break;
        default:
            if (depth == 0 && is_space(c))
                return i;
        }
    }
    return w->n;
}

/* "the header is not valid JSON: <what> (byte B of the file)", as jansson words it; at is an
 * offset in the header. */
static int not_json(const struct walk *w, const char *what, size_t at)
{
    char shown[2 * SHOW_MAX];
    return attn_diag_file(w->err, w->path,
                          "the header is not valid JSON: %s (byte %zu of the file)",
                          show(shown, sizeof(shown), what), 8 + at);
}

/* A structural problem at offset i: "<expected> near 'c'" or "... near end of file". */
static int unexpected(const struct walk *w, size_t i, const char *expected)
{
    char what[64 + UTF8_ESCAPE_MAX];
    if (i >= w->n) {
        snprintf(what, sizeof(what), "%s near end of file", expected);
        return not_json(w, what, w->n > 0 ? w->n - 1 : 0);
    }
    char ch[5] = {0}, near[UTF8_ESCAPE_MAX];
    memcpy(ch, w->s + i, w->n - i < 4 ? w->n - i : 4);
    uint32_t cp;
    int len = attn_utf8_decode(ch, &cp);
    attn_utf8_escape(near, sizeof(near), ch, len > 0 ? (size_t)len : 1, 0);
    snprintf(what, sizeof(what), "%s near '%s'", expected, near);
    return not_json(w, what, i);
}

/* jansson's value of the header's bytes [a, b), or NULL with err set. */
static json_t *load_span(const struct walk *w, size_t a, size_t b)
{
    if (b == a) {
        unexpected(w, a, "unexpected token");
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(w->s + a, b - a, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (v)
        return v;
    if (attn_json_out_of_memory(&je, w->s + a, b - a))
        attn_diag_file(w->err, w->path, "out of memory reading the header");
    else /* jansson's position is just past the token it stopped at: name its last byte */
        not_json(w, je.text, a + (je.position > 0 ? (size_t)je.position - 1 : 0));
    return NULL;
}

/* The value [a, b) for "got ...": show_json's words, or only its kind when it is too large to
 * parse. NULL with err set when it is not JSON. */
static const char *show_span(char *out, size_t size, const struct walk *w, size_t a, size_t b,
                             size_t items)
{
    if (items > SPAN_ITEMS && (w->s[a] == '{' || w->s[a] == '['))
        return snprintf(out, size, w->s[a] == '{' ? "an object" : "an array of more than %d values",
                        SPAN_ITEMS),
               out;
    json_t *v = load_span(w, a, b);
    if (!v)
        return NULL;
    show_json(out, size, v);
    json_decref(v);
    return out;
}

/* A member's key: the string at [a, b) decoded. Most keys need no decoding (no escape, no
 * control character, valid UTF-8) and are the header's own bytes; the others are jansson's,
 * in *owned (decref it). */
static int key_of(const struct walk *w, size_t a, size_t b, const char **key, size_t *len,
                  json_t **owned)
{
    *owned = NULL;
    bool plain = b - a >= 2 && w->s[b - 1] == '"';
    for (size_t i = a + 1; plain && i + 1 < b;) {
        uint32_t cp;
        char ch[5] = {0};
        memcpy(ch, w->s + i, b - 1 - i < 4 ? b - 1 - i : 4);
        int k = attn_utf8_decode(ch, &cp);
        plain = k > 0 && cp >= 0x20 && cp != '\\';
        i += k > 0 ? (size_t)k : 1;
    }
    if (plain) {
        *key = w->s + a + 1;
        *len = b - a - 2;
        return 0;
    }
    if (!(*owned = load_span(w, a, b)))
        return -1;
    *key = json_string_value(*owned);
    *len = json_string_length(*owned); /* no NUL inside: jansson refuses \u0000 */
    return 0;
}

typedef int (*member_fn)(void *ctx, const struct walk *w, const char *key, size_t key_len, size_t a,
                         size_t b, size_t items);

/* Walks the object that starts at *i ('{'), calling fn for each member in the file's order (the
 * first bad one is the one reported); *i ends past its '}'. */
static int walk_object(const struct walk *w, size_t *i, member_fn fn, void *ctx)
{
    size_t at = skip_space(w, *i + 1), items;
    if (at < w->n && w->s[at] == '}') {
        *i = at + 1;
        return 0;
    }
    for (;;) {
        if (at >= w->n || w->s[at] != '"')
            return unexpected(w, at, "string or '}' expected");
        size_t key_end = value_end(w, at, &items, NULL);
        const char *key;
        size_t key_len;
        json_t *owned;
        if (key_of(w, at, key_end, &key, &key_len, &owned) != 0)
            return -1;
        at = skip_space(w, key_end);
        int rc = -1;
        if (at >= w->n || w->s[at] != ':')
            unexpected(w, at, "':' expected");
        else {
            at = skip_space(w, at + 1);
            size_t end = value_end(w, at, &items, NULL);
            rc = end == at ? unexpected(w, at, "unexpected token")
                           : fn(ctx, w, key, key_len, at, end, items);
            at = skip_space(w, end);
        }
        json_decref(owned);
        if (rc != 0)
            return -1;
        if (at < w->n && w->s[at] == ',') {
            at = skip_space(w, at + 1);
            continue;
        }
        if (at < w->n && w->s[at] == '}') {
            *i = at + 1;
            return 0;
        }
        return unexpected(w, at, "'}' expected");
    }
}

/* ---- the header --------------------------------------------------------------------------- */

static int metadata_member(void *ctx, const struct walk *w, const char *key, size_t key_len,
                           size_t a, size_t b, size_t items)
{
    (void)ctx;
    char got[SHOW_MAX + 8], name[SHOW_MAX + 8];
    if (w->s[a] != '"') {
        if (!show_span(got, sizeof(got), w, a, b, items))
            return -1;
        attn_utf8_escape(name, sizeof(name), key, key_len, 0);
        return attn_diag_file(w->err, w->path, "__metadata__: '%s' is %s, not a string", name, got);
    }
    json_t *v = load_span(w, a, b); /* a string, checked */
    if (!v)
        return -1;
    json_decref(v);
    return 0;
}

static int check_metadata(const struct walk *w, size_t a, size_t b, size_t items)
{
    char got[SHOW_MAX + 8];
    if (w->s[a] != '{') {
        if (!show_span(got, sizeof(got), w, a, b, items))
            return -1;
        return attn_diag_file(w->err, w->path, "__metadata__ is %s, not an object of strings", got);
    }
    /* A key twice is not looked for: attnscope ignores the metadata, Hugging Face's library
     * takes the last, and the keys would have to be kept (millions of short ones, in a header
     * of 100 MB). */
    struct walk inner = *w;
    inner.n = b;
    return walk_object(&inner, &a, metadata_member, NULL);
}

struct header {
    struct st_file *f;
    size_t cap;    /* f->tensors' room */
    bool metadata; /* seen */
};

static int header_member(void *ctx, const struct walk *w, const char *key, size_t key_len, size_t a,
                         size_t b, size_t items)
{
    struct header *h = ctx;
    struct st_file *f = h->f;
    char name[SHOW_MAX + 8];
    if (key_len == 12 && memcmp(key, "__metadata__", 12) == 0) {
        if (h->metadata)
            return attn_diag_file(w->err, w->path, "the header has __metadata__ twice");
        h->metadata = true;
        return check_metadata(w, a, b, items);
    }
    if (key_len == 0)
        return attn_diag_file(w->err, w->path, "a tensor's name is empty");
    if (items > SPAN_ITEMS) {
        attn_utf8_escape(name, sizeof(name), key, key_len, 0);
        return attn_diag_file(w->err, w->path,
                              "tensor '%s' holds more than %d JSON values; a tensor has a dtype, a "
                              "shape of at most %d dimensions and two data_offsets",
                              name, SPAN_ITEMS, ST_MAX_DIMS);
    }
    if ((size_t)f->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        struct st_tensor *grown = cap <= INT_MAX ? realloc(f->tensors, cap * sizeof(*grown)) : NULL;
        if (!grown)
            return attn_diag_file(w->err, w->path, "out of memory for %d tensors", f->n + 1);
        f->tensors = grown;
        h->cap = cap;
    }
    struct st_tensor *t = &f->tensors[f->n];
    memset(t, 0, sizeof(*t));
    json_t *v = load_span(w, a, b);
    if (!v)
        return -1;
    int rc = (t->name = strndup(key, key_len))
                 ? parse_tensor(t, t->name, v, f->size - f->data_start, w->path, w->err)
                 : attn_diag_file(w->err, w->path, "out of memory");
    json_decref(v);
    if (rc != 0) {
        free(t->name);
        return -1;
    }
    f->n++;
    return 0;
}

/* Tensors by their offsets, through pointers: a tensor is 112 bytes to move, a pointer 8. */
static int by_begin(const void *a, const void *b)
{
    const struct st_tensor *x = *(const struct st_tensor *const *)a;
    const struct st_tensor *y = *(const struct st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

/* Hugging Face's rule (safetensors' Metadata::validate): in the order of their offsets each
 * tensor begins where the one before it ends, the first at 0, and the last ends where the file
 * does. So the data starts right after the header, and a header length a few bytes short (its
 * padding cut off) is refused instead of shifting every tensor. */
static int check_packed(struct st_file *f, struct diag *err)
{
    char a[SHOW_MAX + 8], b[SHOW_MAX + 8];
    size_t data_size = f->size - f->data_start, at = 0;
    const struct st_tensor **order = malloc((f->n ? (size_t)f->n : 1) * sizeof(*order));
    if (!order)
        return attn_diag_file(err, f->path, "out of memory");
    for (int i = 0; i < f->n; i++)
        order[i] = &f->tensors[i];
    qsort(order, (size_t)f->n, sizeof(*order), by_begin);
    int rc = -1;
    for (int i = 0; i < f->n; i++) {
        const struct st_tensor *t = order[i], *p = i > 0 ? order[i - 1] : NULL;
        if (t->begin == at) {
            at = t->end;
            continue;
        }
        show(b, sizeof(b), t->name);
        if (p && t->begin < at)
            attn_diag_file(err, f->path,
                           "tensors '%s' (data_offsets [%zu, %zu]) and '%s' (data_offsets [%zu, "
                           "%zu]) overlap",
                           show(a, sizeof(a), p->name), p->begin, p->end, b, t->begin, t->end);
        else if (p)
            attn_diag_file(err, f->path,
                           "tensors '%s' (data_offsets [%zu, %zu]) and '%s' (data_offsets [%zu, "
                           "%zu]) leave %zu bytes between them that no tensor holds (safetensors "
                           "packs its tensors)",
                           show(a, sizeof(a), p->name), p->begin, p->end, b, t->begin, t->end,
                           t->begin - at);
        else
            attn_diag_file(err, f->path,
                           "the first tensor, '%s' (data_offsets [%zu, %zu]), begins at byte %zu "
                           "of the data section, not at 0",
                           b, t->begin, t->end, t->begin);
        goto out;
    }
    if (at == data_size)
        rc = 0;
    else if (f->n == 0)
        attn_diag_file(err, f->path,
                       "the header names no tensor, but %zu bytes of data follow it (is the "
                       "header length, %zu, right?)",
                       data_size, f->data_start - 8);
    else
        attn_diag_file(err, f->path,
                       "the data section holds %zu bytes, but the last tensor, '%s' (data_offsets "
                       "[%zu, %zu]), ends at %zu: the data must end where it does (is the header "
                       "length, %zu, right?)",
                       data_size, show(a, sizeof(a), order[f->n - 1]->name), order[f->n - 1]->begin,
                       order[f->n - 1]->end, order[f->n - 1]->end, f->data_start - 8);
out:
    free(order);
    return rc;
}

static int parse_header(struct st_file *f, size_t hlen, struct diag *err)
{
    char got[SHOW_MAX + 8];
    struct walk w = {(const char *)f->map + 8, hlen, f->path, err};
    size_t at = skip_space(&w, 0), items;
    if (at == hlen)
        return unexpected(&w, at, "'[' or '{' expected");
    if (w.s[at] != '{') {
        size_t end = value_end(&w, at, &items, NULL);
        if (!show_span(got, sizeof(got), &w, at, end, items))
            return -1;
        return attn_diag_file(err, f->path, "the header is %s, not a JSON object of tensors", got);
    }
    /* Room for every member at once: growing the array by doubling would hold up to twice it.
     * No tensor's entry is shorter than MIN_ENTRY bytes, so a header of short members, which
     * is refused at its first, does not reserve more than a valid one could use. */
    size_t members;
    value_end(&w, at, &items, &members);
    if (members > hlen / MIN_ENTRY + 1)
        members = hlen / MIN_ENTRY + 1;
    if (members > INT_MAX || !(f->tensors = malloc(members * sizeof(*f->tensors))))
        return attn_diag_file(err, f->path, "out of memory for %zu tensors", members);
    struct header h = {f, members, false};
    if (walk_object(&w, &at, header_member, &h) != 0)
        return -1;
    at = skip_space(&w, at); /* spaces pad the header to a multiple of 8 bytes */
    if (at < hlen)
        return unexpected(&w, at, "end of file expected");
    if (f->n > 0)
        qsort(f->tensors, (size_t)f->n, sizeof(*f->tensors), by_name);
    for (int i = 1; i < f->n; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return attn_diag_file(err, f->path, "tensor '%s' is in the header twice",
                                  show(got, sizeof(got), f->tensors[i].name));
    return check_packed(f, err);
}

/* ---- opening ------------------------------------------------------------------------------ */

int attn_st_open(struct st_file *out, const char *path, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    struct stat st;
    int fd = attn_fsutil_open_regular(path, &st, err);
    if (fd < 0)
        return -1;
    if ((unsigned long long)st.st_size > SIZE_MAX) {
        close(fd);
        return attn_diag_file(err, path, "the file is too large to map (%lld bytes)",
                              (long long)st.st_size);
    }
    size_t size = (size_t)st.st_size;
    if (size < 8) {
        close(fd);
        return attn_diag_file(
            err, path,
            "the file is %zu bytes long, too short for the 8-byte header length of a "
            "safetensors file",
            size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping keeps the file */
    if (map == MAP_FAILED)
        return attn_diag_file(err, path, "cannot map: %s", strerror(map_errno));
    out->map = map;
    out->size = size;
    out->dev = (unsigned long long)st.st_dev;
    out->ino = (unsigned long long)st.st_ino;
    out->mtime_sec = (long long)st.st_mtim.tv_sec;
    out->mtime_nsec = (long long)st.st_mtim.tv_nsec;
    attn_mapguard_add(map, size); /* a truncation under a reader: zeros and a flag, not SIGBUS */
    if (!(out->path = strdup(path))) {
        attn_st_close(out);
        return attn_diag_file(err, path, "out of memory");
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | out->map[i];
    if (hlen > size - 8) {
        attn_diag_file(err, path,
                       "the header length is %llu bytes, but only %zu bytes follow it (is the file "
                       "truncated?)",
                       (unsigned long long)hlen, size - 8);
        attn_st_close(out);
        return -1;
    }
    if (hlen > ST_HEADER_MAX) {
        attn_diag_file(err, path,
                       "the header is %llu bytes long, more than the %zu attnscope reads",
                       (unsigned long long)hlen, ST_HEADER_MAX);
        attn_st_close(out);
        return -1;
    }
    out->data_start = 8 + (size_t)hlen;
    if (parse_header(out, (size_t)hlen, err) != 0) {
        attn_st_close(out);
        return -1;
    }
    return 0;
}

void attn_st_close(struct st_file *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->map) {
        attn_mapguard_remove(f->map);
        munmap((void *)f->map, f->size);
    }
    free(f->path);
    memset(f, 0, sizeof(*f));
}

int attn_st_check_unchanged(const struct st_file *f, struct diag *err)
{
    if (!f->map)
        return 0;
    struct stat st;
    char why[160];
    why[0] = '\0';
    if (stat(f->path, &st) != 0)
        snprintf(why, sizeof(why), "%s", strerror(errno));
    else if ((unsigned long long)st.st_dev != f->dev || (unsigned long long)st.st_ino != f->ino)
        snprintf(why, sizeof(why), "another file is there now");
    else if ((unsigned long long)st.st_size != (unsigned long long)f->size)
        snprintf(why, sizeof(why), "%lld bytes now, %zu when it was read", (long long)st.st_size,
                 f->size);
    else if ((long long)st.st_mtim.tv_sec != f->mtime_sec ||
             (long long)st.st_mtim.tv_nsec != f->mtime_nsec)
        snprintf(why, sizeof(why), "rewritten since it was read");
    else if (attn_mapguard_faulted(f->map))
        snprintf(why, sizeof(why), "it shrank while it was read");
    if (!why[0])
        return 0;
    char name[SHOW_MAX + 8];
    return attn_diag_file(
        err, f->path, "the checkpoint changed on disk: %s (%s); reopen the scene to read it again",
        show(name, sizeof(name), f->path), why);
}

const struct st_tensor *attn_st_find(const struct st_file *f, const char *name)
{
    if (f->n == 0)
        return NULL;
    struct st_tensor key = {.name = (char *)name};
    return bsearch(&key, f->tensors, (size_t)f->n, sizeof(*f->tensors), by_name);
}

size_t attn_st_count(const struct st_tensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d]; /* attn_st_open checked the product */
    return n;
}

/* ---- reading ------------------------------------------------------------------------------ */

static bool little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

const float *attn_st_f32_view(const struct st_file *f, const struct st_tensor *t)
{
    if (t->dtype != ST_F32 || !little_endian())
        return NULL;
    const unsigned char *p = f->map + f->data_start + t->begin;
    if ((uintptr_t)p % _Alignof(float) != 0)
        return NULL;
    return (const float *)(const void *)p;
}

static float from_bits(uint32_t bits)
{
    float v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* IEEE half to float: every half is exactly a float. Subnormals are man * 2^-24. */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) /* inf, or nan with its payload */
        return from_bits(sign | 0x7f800000u | man << 13);
    if (exp != 0)
        return from_bits(sign | (exp + 112) << 23 | man << 13);
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
}

/* n values of dtype from the little-endian bytes at p. */
static void widen(float *out /*(n)*/, const unsigned char *p, size_t n, enum st_dtype dtype)
{
    if (dtype == ST_F32 && little_endian()) {
        memcpy(out, p, n * sizeof(float));
        return;
    }
    if (dtype == ST_BF16 && little_endian()) {
        /* bfloat16 is the top half of a float32: a shift a value, in a loop of its own that the
           compiler vectorises (the loop below, a branch and two byte loads a value, took a
           quarter of a TinyLlama last-word edit) */
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, sizeof(h));
            uint32_t bits = (uint32_t)h << 16;
            memcpy(out + i, &bits, sizeof(bits));
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (dtype == ST_F32) {
            const unsigned char *q = p + 4 * i;
            out[i] = from_bits((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                               (uint32_t)q[3] << 24);
            continue;
        }
        uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        /* bfloat16 is the top half of a float32 */
        out[i] = dtype == ST_F16 ? f16_to_f32(h) : from_bits((uint32_t)h << 16);
    }
}

static int check_readable(const struct st_file *f, const struct st_tensor *t, struct diag *err)
{
    char name[SHOW_MAX + 8];
    if (t->dtype == ST_OTHER)
        return attn_diag_file(err, f->path, "tensor '%s' is %s; attnscope reads F32, F16 and BF16",
                              show(name, sizeof(name), t->name), t->dtype_name);
    return 0;
}

int attn_st_read_f32(float *out /*(count)*/, size_t count, const struct st_file *f,
                     const struct st_tensor *t, struct diag *err)
{
    char name[SHOW_MAX + 8];
    if (check_readable(f, t, err) != 0)
        return -1;
    if (count != attn_st_count(t))
        return attn_diag_file(err, f->path, "tensor '%s' has %zu values, not the %zu asked for",
                              show(name, sizeof(name), t->name), attn_st_count(t), count);
    widen(out, f->map + f->data_start + t->begin, count, t->dtype);
    return 0;
}

int attn_st_read_rows_f32(float *out /*(nrows, cols)*/, const struct st_file *f,
                          const struct st_tensor *t, int64_t r0, int64_t nrows, struct diag *err)
{
    char name[SHOW_MAX + 8], dims[ST_MAX_DIMS * 22 + 4];
    if (check_readable(f, t, err) != 0)
        return -1;
    show(name, sizeof(name), t->name);
    describe_shape(dims, sizeof(dims), t);
    if (t->ndim != 2)
        return attn_diag_file(
            err, f->path, "tensor '%s' has shape %s; rows are read from 2-D tensors", name, dims);
    if (r0 < 0 || nrows < 0 || r0 > t->shape[0] || nrows > t->shape[0] - r0)
        return attn_diag_file(err, f->path,
                              "%lld rows from row %lld are not rows of tensor '%s' of shape %s",
                              (long long)nrows, (long long)r0, name, dims);
    size_t cols = (size_t)t->shape[1], esize = t->dtype == ST_F32 ? 4 : 2;
    widen(out, f->map + f->data_start + t->begin + (size_t)r0 * cols * esize, (size_t)nrows * cols,
          t->dtype);
    return 0;
}
