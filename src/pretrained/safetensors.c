/* safetensors: reading Hugging Face's checkpoints (see safetensors.h).
 *
 * The header is parsed with jansson (duplicate names refused by the parser) and checked field
 * by field; only then are the tensors sorted by name and handed out. Data is little-endian
 * whatever the host, so the readers assemble values from bytes except where the host matches.
 * Every message names the file (err->file) and, where one is at fault, the tensor; names and
 * JSON excerpts are escaped and cut so a hostile header cannot flood or drive a terminal.
 */
#include "pretrained/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
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

static void describe_shape(char *out, size_t size, const struct st_tensor *t)
{
    size_t o = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < t->ndim && o < size; d++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (o < size)
        snprintf(out + o, size - o, "]");
}

static bool is_count(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

/* The tensor's shape, elements and bytes, all checked: more elements than 64-bit ones could
 * fill in 2^63 bytes, or sub-byte elements that do not fill whole bytes, are refused. */
static int parse_shape(struct st_tensor *t, const json_t *shape, uint64_t *bytes, const char *path,
                       const char *name, struct diag *err)
{
    char got[SHOW_MAX + 8], dims[ST_MAX_DIMS * 22 + 4];
    if (!json_is_array(shape))
        return attn_diag_file(err, path, "tensor '%s': shape must be an array of integers, got %s",
                              name, show_json(got, sizeof(got), shape));
    size_t ndim = json_array_size(shape);
    if (ndim > ST_MAX_DIMS)
        return attn_diag_file(err, path,
                              "tensor '%s': shape has %zu dimensions, attnscope reads at most %d",
                              name, ndim, ST_MAX_DIMS);
    t->ndim = (int)ndim;
    bool zero = false;
    for (size_t d = 0; d < ndim; d++) {
        const json_t *v = json_array_get(shape, d);
        if (!is_count(v))
            return attn_diag_file(err, path,
                                  "tensor '%s': shape entry %zu is %s, not a non-negative integer",
                                  name, d, show_json(got, sizeof(got), v));
        t->shape[d] = json_integer_value(v);
        zero = zero || t->shape[d] == 0;
    }
    describe_shape(dims, sizeof(dims), t);
    /* Count elements and bits in 64 bits; a zero dimension makes any product empty. */
    uint64_t count = 1, limit = (uint64_t)INT64_MAX / 64;
    for (int d = 0; d < t->ndim && !zero; d++) {
        uint64_t s = (uint64_t)t->shape[d];
        if (count > limit / s)
            return attn_diag_file(
                err, path,
                "tensor '%s': shape %s has 2^57 elements or more, more than a file "
                "can hold",
                name, dims);
        count *= s;
    }
    if (zero)
        count = 0;
    uint64_t bits = count * (uint64_t)dtype_bits(t);
    if (bits % 8 != 0)
        return attn_diag_file(err, path,
                              "tensor '%s': shape %s of %s is %llu bits, which is not whole bytes",
                              name, dims, t->dtype_name, (unsigned long long)bits);
    *bytes = bits / 8;
    return 0;
}

static int parse_tensor(struct st_tensor *t, const char *key, const json_t *v, size_t data_size,
                        const char *path, struct diag *err)
{
    char name[SHOW_MAX + 8], got[SHOW_MAX + 8], dims[ST_MAX_DIMS * 22 + 4];
    show(name, sizeof(name), key);
    if (!json_is_object(v))
        return attn_diag_file(err, path,
                              "tensor '%s' is %s, not an object of dtype, shape and data_offsets",
                              name, show_json(got, sizeof(got), v));
    for (void *it = json_object_iter((json_t *)v); it;
         it = json_object_iter_next((json_t *)v, it)) {
        const char *field = json_object_iter_key(it);
        if (strcmp(field, "dtype") && strcmp(field, "shape") && strcmp(field, "data_offsets"))
            return attn_diag_file(err, path,
                                  "tensor '%s': unknown field '%s' (a tensor has dtype, shape and "
                                  "data_offsets)",
                                  name, show(got, sizeof(got), field));
    }
    static const char *const fields[] = {"dtype", "shape", "data_offsets"};
    for (int i = 0; i < 3; i++)
        if (!json_object_get(v, fields[i]))
            return attn_diag_file(err, path, "tensor '%s' has no '%s'", name, fields[i]);

    const json_t *dtype = json_object_get(v, "dtype");
    if (!json_is_string(dtype))
        return attn_diag_file(err, path, "tensor '%s': dtype must be a string, got %s", name,
                              show_json(got, sizeof(got), dtype));
    int di = dtype_index(json_string_value(dtype));
    if (di < 0)
        return attn_diag_file(err, path, "tensor '%s': unknown dtype '%s'", name,
                              show(got, sizeof(got), json_string_value(dtype)));
    t->dtype = DTYPES[di].dtype;
    snprintf(t->dtype_name, sizeof(t->dtype_name), "%s", DTYPES[di].name);

    uint64_t bytes = 0;
    if (parse_shape(t, json_object_get(v, "shape"), &bytes, path, name, err) != 0)
        return -1;

    const json_t *offs = json_object_get(v, "data_offsets");
    if (!json_is_array(offs) || json_array_size(offs) != 2 || !is_count(json_array_get(offs, 0)) ||
        !is_count(json_array_get(offs, 1)))
        return attn_diag_file(err, path,
                              "tensor '%s': data_offsets must be [begin, end], two non-negative "
                              "integers, got %s",
                              name, show_json(got, sizeof(got), offs));
    uint64_t begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
    uint64_t end = (uint64_t)json_integer_value(json_array_get(offs, 1));
    if (end < begin)
        return attn_diag_file(err, path,
                              "tensor '%s': data_offsets [%llu, %llu] end before they begin", name,
                              (unsigned long long)begin, (unsigned long long)end);
    describe_shape(dims, sizeof(dims), t);
    if (end - begin != bytes)
        return attn_diag_file(
            err, path,
            "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, its shape %s of "
            "%s needs %llu",
            name, (unsigned long long)begin, (unsigned long long)end,
            (unsigned long long)(end - begin), dims, t->dtype_name, (unsigned long long)bytes);
    if (end > data_size)
        return attn_diag_file(
            err, path,
            "tensor '%s': data_offsets [%llu, %llu] end past the data section, which "
            "holds %zu bytes (is the file truncated?)",
            name, (unsigned long long)begin, (unsigned long long)end, data_size);
    t->begin = (size_t)begin;
    t->end = (size_t)end;
    return 0;
}

static int check_metadata(const json_t *v, const char *path, struct diag *err)
{
    char got[SHOW_MAX + 8], key[SHOW_MAX + 8];
    if (!json_is_object(v))
        return attn_diag_file(err, path, "__metadata__ is %s, not an object of strings",
                              show_json(got, sizeof(got), v));
    for (void *it = json_object_iter((json_t *)v); it;
         it = json_object_iter_next((json_t *)v, it)) {
        const json_t *s = json_object_iter_value(it);
        if (!json_is_string(s))
            return attn_diag_file(err, path, "__metadata__: '%s' is %s, not a string",
                                  show(key, sizeof(key), json_object_iter_key(it)),
                                  show_json(got, sizeof(got), s));
    }
    return 0;
}

static bool valid_name(const char *s)
{
    uint32_t cp;
    for (int n; *s; s += n)
        if ((n = attn_utf8_decode(s, &cp)) == 0)
            return false;
    return true;
}

static int by_begin(const void *a, const void *b)
{
    const struct st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

/* Sorted by begin, a tensor overlaps an earlier one exactly when it begins before the furthest
 * end so far. Empty tensors hold no bytes and overlap nothing. */
static int check_overlaps(struct st_file *f, struct diag *err)
{
    if (f->n == 0)
        return 0;
    qsort(f->tensors, (size_t)f->n, sizeof(*f->tensors), by_begin);
    const struct st_tensor *far = NULL;
    for (int i = 0; i < f->n; i++) {
        const struct st_tensor *t = &f->tensors[i];
        if (t->begin == t->end)
            continue;
        if (far && t->begin < far->end) {
            char a[SHOW_MAX + 8], b[SHOW_MAX + 8];
            return attn_diag_file(err, f->path,
                                  "tensors '%s' (data_offsets [%zu, %zu]) and '%s' (data_offsets "
                                  "[%zu, %zu]) overlap",
                                  show(a, sizeof(a), far->name), far->begin, far->end,
                                  show(b, sizeof(b), t->name), t->begin, t->end);
        }
        if (!far || t->end > far->end)
            far = t;
    }
    return 0;
}

static int parse_header(struct st_file *f, size_t hlen, struct diag *err)
{
    char got[2 * SHOW_MAX];
    json_error_t jerr;
    json_t *root = json_loadb((const char *)f->map + 8, hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root && attn_json_out_of_memory(&jerr, (const char *)f->map + 8, hlen))
        return attn_diag_file(err, f->path, "out of memory reading the header");
    /* jansson's position is just past the token it stopped at: name that token's last byte. */
    if (!root)
        return attn_diag_file(err, f->path,
                              "the header is not valid JSON: %s (byte %zu of the file)",
                              show(got, sizeof(got), jerr.text),
                              8 + (size_t)(jerr.position > 0 ? jerr.position - 1 : 0));
    int rc = -1;
    if (!json_is_object(root)) {
        attn_diag_file(err, f->path, "the header is %s, not a JSON object of tensors",
                       show_json(got, sizeof(got), root));
        goto out;
    }
    f->tensors = calloc(json_object_size(root) + 1, sizeof(*f->tensors));
    if (!f->tensors) {
        attn_diag_file(err, f->path, "out of memory for %zu tensors", json_object_size(root));
        goto out;
    }
    size_t data_size = f->size - f->data_start;
    /* In the file's order (jansson keeps it), so the first bad tensor is the one reported. */
    for (void *it = json_object_iter(root); it; it = json_object_iter_next(root, it)) {
        const char *key = json_object_iter_key(it);
        const json_t *v = json_object_iter_value(it);
        if (strcmp(key, "__metadata__") == 0) {
            if (check_metadata(v, f->path, err) != 0)
                goto out;
            continue;
        }
        if (!key[0] || !valid_name(key)) {
            attn_diag_file(err, f->path, "a tensor's name is %s",
                           key[0] ? "not valid UTF-8" : "empty");
            goto out;
        }
        struct st_tensor *t = &f->tensors[f->n];
        if (parse_tensor(t, key, v, data_size, f->path, err) != 0)
            goto out;
        if (!(t->name = strdup(key))) {
            attn_diag_file(err, f->path, "out of memory");
            goto out;
        }
        f->n++;
    }
    if (check_overlaps(f, err) != 0)
        goto out;
    if (f->n > 0)
        qsort(f->tensors, (size_t)f->n, sizeof(*f->tensors), by_name);
    rc = 0;
out:
    json_decref(root);
    return rc;
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
