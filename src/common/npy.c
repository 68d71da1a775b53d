/* npy: reading and writing NumPy .npy files (see npy.h).
 *
 * The format: "\x93NUMPY", a version byte pair, a little-endian header length (2 bytes for
 * 1.0, 4 for 2.0 and 3.0), then a Python dict literal such as
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with blanks to a multiple
 * of 64 bytes and ended by '\n', then the raw data.
 */
#include "common/npy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/fsutil.h"

#define HEADER_MAX 65536 /* numpy itself refuses headers longer than this */

void attn_npy_free(struct npy_array *a)
{
    free(a->data);
    memset(a, 0, sizeof(*a));
}

/* ---- the header dictionary ---------------------------------------------------------------- */

struct header {
    char descr[8];
    bool fortran;
    int ndim;
    size_t shape[NPY_MAX_DIMS];
    bool has_descr, has_fortran, has_shape;
};

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n')
        p++;
    return p;
}

/* A quoted Python string into out; returns the position after it, or NULL. */
static const char *parse_string(const char *p, char *out, size_t size)
{
    char q = *p;
    if (q != '\'' && q != '"')
        return NULL;
    size_t n = 0;
    for (p++; *p && *p != q; p++) {
        if (*p == '\\' || n + 1 >= size)
            return NULL;
        out[n++] = *p;
    }
    if (*p != q)
        return NULL;
    out[n] = '\0';
    return p + 1;
}

/* (3, 4), (3,), (); *why says what is wrong when it returns NULL. */
static const char *parse_shape(const char *p, struct header *h, const char **why)
{
    *why = "the shape is not a tuple of sizes like (3, 4)";
    if (*p != '(')
        return NULL;
    p = skip_blanks(p + 1);
    h->ndim = 0;
    int dims = 0;
    while (*p != ')') {
        if (!isdigit((unsigned char)*p))
            return NULL;
        size_t v = 0;
        for (; isdigit((unsigned char)*p); p++) {
            if (v > (SIZE_MAX - 9) / 10) {
                *why = "a size in the shape is too large";
                return NULL;
            }
            v = v * 10 + (size_t)(*p - '0');
        }
        if (dims < NPY_MAX_DIMS)
            h->shape[dims] = v;
        dims++;
        p = skip_blanks(p);
        if (*p == ',')
            p = skip_blanks(p + 1);
        else if (*p != ')')
            return NULL;
    }
    if (dims > NPY_MAX_DIMS) {
        static char many[96];
        snprintf(many, sizeof(many),
                 "the array has %d dimensions; attnscope reads at most %d (a matrix: "
                 "reshape it to 2-D)",
                 dims, NPY_MAX_DIMS);
        *why = many;
        return NULL;
    }
    h->ndim = dims;
    return p + 1;
}

/* NULL when text is the header dictionary numpy writes; else what is wrong with it. */
static const char *parse_header(const char *text, struct header *h)
{
    static const char *const not_dict =
        "the header is not a dictionary of descr, fortran_order and shape";
    memset(h, 0, sizeof(*h));
    const char *p = skip_blanks(text), *why;
    if (*p++ != '{')
        return not_dict;
    for (;;) {
        p = skip_blanks(p);
        if (*p == '}')
            break;
        char key[32];
        if (!(p = parse_string(p, key, sizeof(key))))
            return not_dict;
        p = skip_blanks(p);
        if (*p++ != ':')
            return not_dict;
        p = skip_blanks(p);
        if (strcmp(key, "descr") == 0 && !h->has_descr) {
            if (*p == '[' || *p == '{')
                return "a structured dtype (named fields, a record array); attnscope reads plain "
                       "numbers: save one field, or .astype(numpy.float32)";
            if (!(p = parse_string(p, h->descr, sizeof(h->descr))))
                return "the dtype is not one attnscope reads: float16/32/64 are (and int, uint "
                       "and bool for 0/1 masks)";
            h->has_descr = true;
        } else if (strcmp(key, "fortran_order") == 0 && !h->has_fortran) {
            if (strncmp(p, "True", 4) == 0)
                h->fortran = true, p += 4;
            else if (strncmp(p, "False", 5) == 0)
                p += 5;
            else
                return "fortran_order is neither True nor False";
            h->has_fortran = true;
        } else if (strcmp(key, "shape") == 0 && !h->has_shape) {
            if (!(p = parse_shape(p, h, &why)))
                return why;
            h->has_shape = true;
        } else {
            return not_dict; /* unknown or repeated key */
        }
        p = skip_blanks(p);
        if (*p == ',')
            p++;
        else if (*p != '}')
            return not_dict;
    }
    return h->has_descr && h->has_fortran && h->has_shape && *skip_blanks(p + 1) == '\0' ? NULL
                                                                                         : not_dict;
}

/* ---- element types ------------------------------------------------------------------------ */

enum kind { K_FLOAT, K_INT, K_UINT, K_BOOL };

struct dtype {
    enum kind kind;
    int size;
    bool swap; /* stored in the other byte order than this machine's */
};

static bool little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static bool parse_descr(const char *d, struct dtype *t)
{
    if (strlen(d) != 3 || (d[0] != '<' && d[0] != '>' && d[0] != '|' && d[0] != '='))
        return false;
    t->size = d[2] - '0';
    t->swap = t->size > 1 && (d[0] == '>' ? little_endian() : d[0] == '<' && !little_endian());
    switch (d[1]) {
    case 'f':
        t->kind = K_FLOAT;
        return t->size == 2 || t->size == 4 || t->size == 8;
    case 'i':
        t->kind = K_INT;
        return t->size == 1 || t->size == 2 || t->size == 4 || t->size == 8;
    case 'u':
        t->kind = K_UINT;
        return t->size == 1 || t->size == 2 || t->size == 4 || t->size == 8;
    case 'b':
        t->kind = K_BOOL;
        return t->size == 1;
    default:
        return false;
    }
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* One element at p as a double (exact for every accepted type but 64-bit integers). */
static double element(const unsigned char *p, const struct dtype *t)
{
    unsigned char b[8];
    for (int i = 0; i < t->size; i++)
        b[i] = t->swap ? p[t->size - 1 - i] : p[i];
    switch (t->kind) {
    case K_FLOAT:
        if (t->size == 2) {
            uint16_t h;
            memcpy(&h, b, 2);
            return half_to_float(h);
        }
        if (t->size == 4) {
            float f;
            memcpy(&f, b, 4);
            return f;
        } else {
            double d;
            memcpy(&d, b, 8);
            return d;
        }
    case K_INT:
        switch (t->size) {
        case 1:
            return (int8_t)b[0];
        case 2: {
            int16_t v;
            memcpy(&v, b, 2);
            return v;
        }
        case 4: {
            int32_t v;
            memcpy(&v, b, 4);
            return v;
        }
        default: {
            int64_t v;
            memcpy(&v, b, 8);
            return (double)v;
        }
        }
    case K_UINT:
        switch (t->size) {
        case 1:
            return b[0];
        case 2: {
            uint16_t v;
            memcpy(&v, b, 2);
            return v;
        }
        case 4: {
            uint32_t v;
            memcpy(&v, b, 4);
            return v;
        }
        default: {
            uint64_t v;
            memcpy(&v, b, 8);
            return (double)v;
        }
        }
    case K_BOOL:
        break;
    }
    return b[0] != 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

static int read_exact(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The C-order index of the element stored at position i of a Fortran-order array. */
static size_t c_index(size_t i, const struct npy_array *a)
{
    size_t idx[NPY_MAX_DIMS] = {0}, out = 0;
    for (int d = 0; d < a->ndim; d++) { /* Fortran: the first index varies fastest */
        idx[d] = i % a->shape[d];
        i /= a->shape[d];
    }
    for (int d = 0; d < a->ndim; d++)
        out = out * a->shape[d] + idx[d];
    return out;
}

void attn_npy_shape_str(char *out, size_t size, const struct npy_array *a)
{
    size_t o = (size_t)snprintf(out, size, "(");
    for (int d = 0; d < a->ndim && o < size; d++)
        o += (size_t)snprintf(out + o, size - o, "%s%zu", d ? ", " : "", a->shape[d]);
    if (o < size)
        snprintf(out + o, size - o, a->ndim == 1 ? ",)" : ")");
}

int attn_npy_read(struct npy_array *out, const char *path, size_t max_values, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    struct stat st;
    int fd = attn_fsutil_open_regular(path, &st, err);
    if (fd < 0)
        return -1;
    unsigned char *chunk = NULL;
    char *header = NULL;
    int rc = -1;
    unsigned char pre[12];
    if ((size_t)st.st_size < 10 || read_exact(fd, pre, 10) != 0 ||
        memcmp(pre, "\x93NUMPY", 6) != 0) {
        attn_diag_file(err, path, "not a NumPy .npy file (it must start with \\x93NUMPY)");
        goto out;
    }
    int major = pre[6];
    size_t hlen, pre_len;
    if (major == 1) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
        pre_len = 10;
    } else if (major == 2 || major == 3) {
        if (read_exact(fd, pre + 10, 2) != 0) {
            attn_diag_file(err, path, "the file ends inside its header");
            goto out;
        }
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        pre_len = 12;
    } else {
        attn_diag_file(err, path, ".npy format version %d.%d is not supported (1.0 to 3.0 are)",
                       major, pre[7]);
        goto out;
    }
    if (hlen > HEADER_MAX || pre_len + hlen > (size_t)st.st_size) {
        attn_diag_file(err, path, "the header is %zu bytes long, more than the file or %d bytes",
                       hlen, HEADER_MAX);
        goto out;
    }
    header = malloc(hlen + 1);
    if (!header || read_exact(fd, header, hlen) != 0) {
        attn_diag_file(err, path, header ? "cannot read the header" : "out of memory");
        goto out;
    }
    header[hlen] = '\0';
    struct header h;
    struct dtype t;
    const char *bad = memchr(header, '\0', hlen)
                          ? "the header is not a dictionary of descr, fortran_order and shape"
                          : parse_header(header, &h);
    if (bad) {
        attn_diag_file(err, path, "%s", bad);
        goto out;
    }
    if (!parse_descr(h.descr, &t)) {
        attn_diag_file(err, path,
                       "dtype '%s' is not supported: float16/32/64 are (and int, uint and bool for "
                       "0/1 masks)",
                       h.descr);
        goto out;
    }
    snprintf(out->descr, sizeof(out->descr), "%s", h.descr);
    out->ndim = h.ndim;
    out->count = 1;
    for (int d = 0; d < h.ndim; d++) {
        out->shape[d] = h.shape[d];
        if (h.shape[d] && out->count > SIZE_MAX / h.shape[d])
            out->count = SIZE_MAX;
        else
            out->count *= h.shape[d];
    }
    char shape[96];
    attn_npy_shape_str(shape, sizeof(shape), out);
    if (out->count > max_values) {
        attn_diag_file(err, path, "shape %s has more than %zu values", shape, max_values);
        goto out;
    }
    size_t bytes = out->count * (size_t)t.size;
    if ((size_t)st.st_size - pre_len - hlen != bytes) {
        attn_diag_file(err, path, "shape %s of %s needs %zu bytes of data, the file has %lld",
                       shape, h.descr, bytes, (long long)((size_t)st.st_size - pre_len - hlen));
        goto out;
    }
    out->data = malloc((out->count ? out->count : 1) * sizeof(float));
    chunk = malloc(65536);
    if (!out->data || !chunk) {
        attn_diag_file(err, path, "out of memory for shape %s", shape);
        goto out;
    }
    size_t per = 65536 / (size_t)t.size, i = 0;
    while (i < out->count) {
        size_t n = out->count - i < per ? out->count - i : per;
        if (read_exact(fd, chunk, n * (size_t)t.size) != 0) {
            attn_diag_file(err, path, "cannot read the data");
            goto out;
        }
        for (size_t k = 0; k < n; k++, i++) {
            double v = element(chunk + k * (size_t)t.size, &t);
            /* As a YAML number: the nearest float32; beyond float32's range is no value. */
            if (!isfinite(v) || fabs(v) >= 0x1.ffffffp+127) {
                attn_diag_file(err, path, "value %zu of shape %s is %s, not a finite float32", i,
                               shape, isnan(v) ? "nan" : "too large or infinite");
                goto out;
            }
            float f = fabs(v) > 0x1.fffffep+127 ? (v < 0 ? -0x1.fffffep+127f : 0x1.fffffep+127f)
                                                : (float)v;
            out->data[h.fortran ? c_index(i, out) : i] = f;
        }
    }
    rc = 0;
out:
    free(chunk);
    free(header);
    close(fd);
    if (rc != 0)
        attn_npy_free(out);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* The version 1.0 preamble of an array into out (NPY_HEADER_MAX bytes): magic, length, the
 * dict, padded with blanks so that the whole is a multiple of 64 bytes, ending in '\n'. Returns
 * its length. */
#define NPY_HEADER_MAX 384
static size_t format_header(char *out, const char *descr, int ndim, const size_t *shape)
{
    char dict[256];
    size_t o = (size_t)snprintf(dict, sizeof(dict),
                                "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int d = 0; d < ndim; d++)
        o += (size_t)snprintf(dict + o, sizeof(dict) - o, "%zu%s", shape[d],
                              ndim == 1 || d + 1 < ndim ? ", " : "");
    o += (size_t)snprintf(dict + o, sizeof(dict) - o, "), }");
    size_t total = 10 + o + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = o + pad + 1;
    const unsigned char pre[10] = {0x93,
                                   'N',
                                   'U',
                                   'M',
                                   'P',
                                   'Y',
                                   1,
                                   0,
                                   (unsigned char)(hlen & 0xff),
                                   (unsigned char)(hlen >> 8)};
    memcpy(out, pre, sizeof(pre));
    memcpy(out + 10, dict, o);
    memset(out + 10 + o, ' ', pad);
    out[10 + o + pad] = '\n';
    return 10 + hlen;
}

static int write_header(FILE *f, const char *descr, int ndim, const size_t *shape)
{
    char h[NPY_HEADER_MAX];
    size_t n = format_header(h, descr, ndim, shape);
    if (fwrite(h, 1, n, f) != n)
        return -1;
    return ferror(f) ? -1 : 0;
}

#ifndef IOV_MAX
#define IOV_MAX 1024 /* Linux's; POSIX guarantees 16 */
#endif

/* Writes every byte of iov[0 .. cnt) to fd, going on after a short write or EINTR. */
static int write_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        ssize_t n = writev(fd, iov, cnt > IOV_MAX ? IOV_MAX : cnt);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

static size_t count_of(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

int attn_npy_write_f32(FILE *f, const float *data, int ndim, const size_t *shape)
{
    if (write_header(f, little_endian() ? "<f4" : ">f4", ndim, shape) != 0)
        return -1;
    size_t n = count_of(ndim, shape);
    if (n && fwrite(data, sizeof(float), n, f) != n)
        return -1;
    return ferror(f) ? -1 : 0;
}

int attn_npy_write_f32_matrix(FILE *f, const float *data, size_t rows, size_t cols, size_t stride)
{
    const size_t shape[2] = {rows, cols};
    if (little_endian()) {
        /* The header and the rows straight from the buffer in one writev (the rows of a window
           on a wider buffer one vector each): no copy through stdio's buffer, no call a row. */
        char h[NPY_HEADER_MAX];
        bool whole = stride == cols || rows <= 1;
        size_t cnt = 1 + (cols == 0 ? 0 : whole ? (rows > 0) : rows);
        struct iovec one[2], *iov = cnt <= 2 ? one : malloc(cnt * sizeof(*iov));
        if (!iov || fflush(f) != 0) {
            if (iov != one)
                free(iov);
            return -1;
        }
        iov[0] = (struct iovec){h, format_header(h, "<f4", 2, shape)};
        for (size_t i = 1; i < cnt; i++)
            iov[i] = (struct iovec){(void *)(data + (i - 1) * stride),
                                    (whole ? rows : 1) * cols * sizeof(float)};
        int rc = cnt > INT_MAX ? -1 : write_all(fileno(f), iov, (int)cnt);
        if (iov != one)
            free(iov);
        return rc;
    }
    if (write_header(f, "<f4", 2, shape) != 0)
        return -1;
    for (size_t i = 0; i < rows; i++) {
        const float *row = data + i * stride;
        for (size_t j = 0; j < cols; j++) {
            unsigned char b[4];
            memcpy(b, &row[j], 4);
            const unsigned char le[4] = {b[3], b[2], b[1], b[0]};
            if (fwrite(le, 1, 4, f) != 4)
                return -1;
        }
    }
    return ferror(f) ? -1 : 0;
}

int attn_npy_write_u8(FILE *f, const unsigned char *data, int ndim, const size_t *shape)
{
    if (write_header(f, "|u1", ndim, shape) != 0)
        return -1;
    size_t n = count_of(ndim, shape);
    if (n && fwrite(data, 1, n, f) != n)
        return -1;
    return ferror(f) ? -1 : 0;
}
