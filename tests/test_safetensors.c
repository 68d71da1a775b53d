/* test_safetensors: src/pretrained's safetensors reader on small files written here.
 *
 * A valid file with F32, F16 and BF16 tensors must read back bit for bit (F16 subnormals, -0,
 * inf, nan, 65504; BF16's 8 bits of precision); aligned F32 tensors are viewed in place. Every
 * malformed header gives its exact message, and flipping or cutting the bytes of a valid file
 * never crashes the reader (the ASan build runs this too). A sharded checkpoint's index is
 * checked against its shards in n log n string comparisons (counted through --wrap=strcmp).
 */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pretrained/safetensors.h"
#include "pretrained/stset.h"
#include "common/mapguard.h"
#include "testutil.h"

static char *scratch; /* the group's folder */

static int group_setup(void **state)
{
    (void)state;
    scratch = tu_make_tmpdir("safetensors");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_remove_tree(scratch);
    free(scratch);
    return 0;
}

/* scratch/name, in a static buffer. */
static const char *path_of(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", scratch, name);
    return path;
}

/* Writes scratch/name: the 8-byte little-endian length of header, header, data. */
static const char *write_st(const char *name, const char *header, const void *data, size_t len)
{
    size_t hlen = strlen(header), total = 8 + hlen + len;
    unsigned char *buf = malloc(total);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, header, hlen);
    if (len)
        memcpy(buf + 8 + hlen, data, len);
    const char *path = path_of(name);
    tu_write_file(path, (const char *)buf, total);
    free(buf);
    return path;
}

/* A file whose header (and data) are built tensor by tensor, the way safetensors writes them:
 * data packed in order, the header padded with spaces to a multiple of 8 bytes. */
struct builder {
    char header[8192];
    size_t hlen;
    unsigned char data[8192];
    size_t dlen;
};

static void b_init(struct builder *b)
{
    memset(b, 0, sizeof(*b));
    b->hlen = (size_t)snprintf(b->header, sizeof(b->header), "{");
}

/* shape is JSON text: "[2, 3]". */
static void b_add(struct builder *b, const char *name, const char *dtype, const char *shape,
                  const void *bytes, size_t n)
{
    b->hlen +=
        (size_t)snprintf(b->header + b->hlen, sizeof(b->header) - b->hlen,
                         "%s\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                         b->hlen > 1 ? "," : "", name, dtype, shape, b->dlen, b->dlen + n);
    assert_true(b->dlen + n <= sizeof(b->data));
    memcpy(b->data + b->dlen, bytes, n);
    b->dlen += n;
}

/* Closes the header, pads it with `pad` spaces past a multiple of 8 and writes the file;
 * returns its size in *total when total is not NULL. */
static const char *b_write(struct builder *b, const char *name, size_t pad, unsigned char **bytes,
                           size_t *total)
{
    b->hlen += (size_t)snprintf(b->header + b->hlen, sizeof(b->header) - b->hlen, "}");
    while ((8 + b->hlen) % 8 != 0)
        b->header[b->hlen++] = ' ';
    for (size_t i = 0; i < pad; i++)
        b->header[b->hlen++] = ' ';
    b->header[b->hlen] = '\0';
    const char *path = write_st(name, b->header, b->data, b->dlen);
    if (bytes)
        *bytes = (unsigned char *)tu_must_read_file(path, total);
    return path;
}

static uint32_t bits_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static void le16(unsigned char *out, const uint16_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = (unsigned char)(h[i] & 0xff);
        out[2 * i + 1] = (unsigned char)(h[i] >> 8);
    }
}

static void le32(unsigned char *out, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            out[4 * i + k] = (unsigned char)(bits_of(v[i]) >> (8 * k));
}

/* ---- the values of every readable dtype ---------------------------------------------------- */

static const float F32_VALUES[6] = {1.0f, -2.5f, 0x1p-149f, -0.0f, INFINITY, 3.14159274f};
/* F16 bits and what they are as float32. */
static const uint16_t F16_BITS[11] = {0x0001, 0x03ff, 0x0400, 0x8000, 0x7c00, 0xfc00,
                                      0x7bff, 0x3c00, 0xc000, 0x3555, 0x8001};
static const float F16_VALUES[11] = {
    0x1p-24f,        /* the smallest subnormal */
    0x3ffp-24f,      /* the largest subnormal: 1023 * 2^-24 */
    0x1p-14f,        /* the smallest normal */
    -0.0f,           /* negative zero */
    INFINITY,        /* */
    -INFINITY,       /* */
    65504.0f,        /* the largest half */
    1.0f,            /* */
    -2.0f,           /* */
    0.333251953125f, /* 1/3 to 11 bits */
    -0x1p-24f,       /* a negative subnormal */
};
/* BF16 is the top half of a float32: 8 bits of precision, float32's range. */
static const uint16_t BF16_BITS[6] = {0x3f80, 0x3f81, 0x4049, 0x4381, 0x7f80, 0x0001};
static const float BF16_VALUES[6] = {
    1.0f,       /* */
    1.0078125f, /* the next value after 1 is 1 + 2^-7 */
    3.140625f,  /* pi in bfloat16 */
    258.0f,     /* 257 is no bfloat16: past 256 the step is 2 */
    INFINITY,   /* */
    0x1p-133f,  /* the smallest subnormal, which float32 keeps */
};

/* The valid file: every readable dtype, an I64 tensor, a 2-D table, a scalar, an empty tensor,
 * metadata. The F32 tensors come first so they are 4-byte aligned. */
static const char *write_valid(const char *name, size_t pad, unsigned char **bytes, size_t *total)
{
    struct builder b;
    unsigned char buf[256];
    b_init(&b);
    b.hlen += (size_t)snprintf(b.header + b.hlen, sizeof(b.header) - b.hlen,
                               "\"__metadata__\":{\"format\":\"pt\",\"note\":\"ignored\"}");
    le32(buf, F32_VALUES, 6);
    b_add(&b, "f32", "F32", "[2, 3]", buf, 24);
    float table[15];
    for (int i = 0; i < 15; i++)
        table[i] = (float)(i * 10 + 1);
    le32(buf, table, 15);
    b_add(&b, "wte", "F32", "[5, 3]", buf, 60);
    float scalar = -7.25f;
    le32(buf, &scalar, 1);
    b_add(&b, "scalar", "F32", "[]", buf, 4);
    b_add(&b, "empty", "F32", "[0, 3]", buf, 0);
    le16(buf, F16_BITS, 11);
    b_add(&b, "f16", "F16", "[11]", buf, 22);
    le16(buf, BF16_BITS, 6);
    b_add(&b, "bf16", "BF16", "[3, 2]", buf, 12);
    const unsigned char steps[16] = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
    b_add(&b, "steps", "I64", "[2]", steps, 16);
    return b_write(&b, name, pad, bytes, total);
}

static void open_ok(struct st_file *f, const char *path)
{
    struct diag err;
    if (attn_st_open(f, path, &err) != 0)
        fail_msg("attn_st_open: %s: %s", err.file, err.msg);
}

static void read_ok(float *out, size_t count, const struct st_file *f, const char *name)
{
    struct diag err;
    const struct st_tensor *t = attn_st_find(f, name);
    assert_non_null(t);
    if (attn_st_read_f32(out, count, f, t, &err) != 0)
        fail_msg("attn_st_read_f32 %s: %s", name, err.msg);
}

static void assert_same_bits(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bits_of(got[i]) != bits_of(want[i]))
            fail_msg("value %zu: got %a (0x%08x), want %a (0x%08x)", i, (double)got[i],
                     bits_of(got[i]), (double)want[i], bits_of(want[i]));
}

static void test_valid_file(void **state)
{
    (void)state;
    struct st_file f;
    open_ok(&f, write_valid("valid.safetensors", 0, NULL, NULL));
    assert_int_equal(f.n, 7); /* the metadata is no tensor */
    assert_null(attn_st_find(&f, "__metadata__"));
    /* Sorted by name. */
    for (int i = 1; i < f.n; i++)
        assert_true(strcmp(f.tensors[i - 1].name, f.tensors[i].name) < 0);

    const struct st_tensor *t = attn_st_find(&f, "f32");
    assert_non_null(t);
    assert_int_equal(t->dtype, ST_F32);
    assert_string_equal(t->dtype_name, "F32");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    assert_int_equal(attn_st_count(t), 6);
    float out[16];
    read_ok(out, 6, &f, "f32");
    assert_same_bits(out, F32_VALUES, 6);

    t = attn_st_find(&f, "f16");
    assert_int_equal(t->dtype, ST_F16);
    read_ok(out, 11, &f, "f16");
    assert_same_bits(out, F16_VALUES, 11);
    assert_true(signbit(out[3]) && out[3] == 0.0f);

    t = attn_st_find(&f, "bf16");
    assert_int_equal(t->dtype, ST_BF16);
    read_ok(out, 6, &f, "bf16");
    assert_same_bits(out, BF16_VALUES, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(bits_of(out[i]), (uint32_t)BF16_BITS[i] << 16);

    t = attn_st_find(&f, "scalar");
    assert_int_equal(t->ndim, 0);
    assert_int_equal(attn_st_count(t), 1);
    read_ok(out, 1, &f, "scalar");
    assert_true(out[0] == -7.25f);

    t = attn_st_find(&f, "empty");
    assert_int_equal(attn_st_count(t), 0);
    read_ok(out, 0, &f, "empty");

    /* Listed, not readable. */
    struct diag err;
    t = attn_st_find(&f, "steps");
    assert_int_equal(t->dtype, ST_OTHER);
    assert_string_equal(t->dtype_name, "I64");
    assert_int_equal(attn_st_read_f32(out, 2, &f, t, &err), -1);
    assert_string_equal(err.file, f.path);
    assert_string_equal(err.msg, "tensor 'steps' is I64; attnscope reads F32, F16 and BF16");
    assert_null(attn_st_f32_view(&f, t));
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, 0, 1, &err), -1);
    assert_string_equal(err.msg, "tensor 'steps' is I64; attnscope reads F32, F16 and BF16");

    /* A count that is not the tensor's. */
    assert_int_equal(attn_st_read_f32(out, 5, &f, attn_st_find(&f, "f32"), &err), -1);
    assert_string_equal(err.msg, "tensor 'f32' has 6 values, not the 5 asked for");

    assert_null(attn_st_find(&f, "h.0.attn.bias"));
    assert_null(attn_st_find(&f, ""));
    attn_st_close(&f);
    attn_st_close(&f); /* harmless twice */
}

static void test_rows(void **state)
{
    (void)state;
    struct st_file f;
    struct diag err;
    open_ok(&f, write_valid("rows.safetensors", 0, NULL, NULL));
    const struct st_tensor *t = attn_st_find(&f, "wte");
    float out[15];
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, 1, 3, &err), 0);
    for (int i = 0; i < 9; i++)
        assert_true(out[i] == (float)((i + 3) * 10 + 1));
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, 4, 1, &err), 0);
    assert_true(out[0] == 121.0f && out[2] == 141.0f);
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, 5, 0, &err), 0); /* none, at the end */
    /* BF16 rows widen like the whole tensor. */
    assert_int_equal(attn_st_read_rows_f32(out, &f, attn_st_find(&f, "bf16"), 1, 2, &err), 0);
    assert_same_bits(out, BF16_VALUES + 2, 4);

    assert_int_equal(attn_st_read_rows_f32(out, &f, t, 4, 2, &err), -1);
    assert_string_equal(err.msg, "2 rows from row 4 are not rows of tensor 'wte' of shape [5, 3]");
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, -1, 1, &err), -1);
    assert_string_equal(err.msg, "1 rows from row -1 are not rows of tensor 'wte' of shape [5, 3]");
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, INT64_MAX, INT64_MAX, &err), -1);
    assert_int_equal(attn_st_read_rows_f32(out, &f, t, 0, -1, &err), -1);
    assert_int_equal(attn_st_read_rows_f32(out, &f, attn_st_find(&f, "f16"), 0, 1, &err), -1);
    assert_string_equal(err.msg, "tensor 'f16' has shape [11]; rows are read from 2-D tensors");
    attn_st_close(&f);
}

/* Metadata is ignored and spaces after the JSON are padding. */
static void test_padding_and_metadata(void **state)
{
    (void)state;
    struct st_file f;
    open_ok(&f, write_valid("padded.safetensors", 37, NULL, NULL));
    float out[11];
    read_ok(out, 11, &f, "f16");
    assert_same_bits(out, F16_VALUES, 11);
    attn_st_close(&f);
    /* A header that is only metadata, or nothing at all. */
    open_ok(&f, write_st("meta-only.safetensors", "{\"__metadata__\":{}}  ", NULL, 0));
    assert_int_equal(f.n, 0);
    assert_null(attn_st_find(&f, "x"));
    attn_st_close(&f);
}

static void test_zero_copy(void **state)
{
    (void)state;
    struct st_file f;
    open_ok(&f, write_valid("aligned.safetensors", 0, NULL, NULL));
    assert_int_equal(f.data_start % 8, 0);
    const struct st_tensor *t = attn_st_find(&f, "wte");
    const float *v = attn_st_f32_view(&f, t);
    assert_non_null(v);
    /* In the mapping itself, not a copy. */
    assert_ptr_equal(v, (const void *)(f.map + f.data_start + t->begin));
    assert_true(v[0] == 1.0f && v[14] == 141.0f);
    assert_null(attn_st_f32_view(&f, attn_st_find(&f, "f16")));
    assert_null(attn_st_f32_view(&f, attn_st_find(&f, "bf16")));
    attn_st_close(&f);

    /* One byte of U8 first puts the F32 tensor at an odd address: no view, but a copy. */
    struct builder b;
    b_init(&b);
    const unsigned char one = 7;
    b_add(&b, "byte", "U8", "[1]", &one, 1);
    unsigned char buf[24];
    le32(buf, F32_VALUES, 6);
    b_add(&b, "odd", "F32", "[6]", buf, 24);
    open_ok(&f, b_write(&b, "unaligned.safetensors", 0, NULL, NULL));
    t = attn_st_find(&f, "odd");
    assert_int_equal(t->begin, 1);
    assert_null(attn_st_f32_view(&f, t));
    float out[6];
    read_ok(out, 6, &f, "odd");
    assert_same_bits(out, F32_VALUES, 6);
    attn_st_close(&f);
}

/* ---- malformed files ------------------------------------------------------------------------ */

static void expect_error_at(const char *path, const char *msg)
{
    struct st_file f;
    struct diag err;
    memset(&f, 0xab, sizeof(f));
    if (attn_st_open(&f, path, &err) == 0)
        fail_msg("%s opened; expected: %s", path, msg);
    assert_string_equal(err.file, path);
    assert_string_equal(err.msg, msg);
    /* Nothing left behind. */
    assert_null(f.map);
    assert_null(f.tensors);
    assert_null(f.path);
    attn_st_close(&f);
}

/* A file of header and `len` zero bytes of data must be refused with msg. */
static void expect_error(const char *header, size_t len, const char *msg)
{
    unsigned char zeros[256] = {0};
    assert_true(len <= sizeof(zeros));
    expect_error_at(write_st("bad.safetensors", header, zeros, len), msg);
}

static void test_truncated(void **state)
{
    (void)state;
    /* Shorter than the header length. */
    tu_write_file(path_of("short.safetensors"), "\x10\0\0\0\0", 5);
    expect_error_at(path_of("short.safetensors"),
                    "the file is 5 bytes long, too short for the 8-byte header length of a "
                    "safetensors file");
    tu_write_file(path_of("empty.safetensors"), "", 0);
    expect_error_at(path_of("empty.safetensors"),
                    "the file is 0 bytes long, too short for the 8-byte header length of a "
                    "safetensors file");
    /* A header length beyond the file: a cut header, or a huge length. */
    tu_write_file(path_of("cut.safetensors"), "\x40\0\0\0\0\0\0\0{\"a\":", 13);
    expect_error_at(path_of("cut.safetensors"),
                    "the header length is 64 bytes, but only 5 bytes follow it (is the file "
                    "truncated?)");
    tu_write_file(path_of("huge.safetensors"), "\xff\xff\xff\xff\xff\xff\xff\xff{}", 10);
    expect_error_at(path_of("huge.safetensors"),
                    "the header length is 18446744073709551615 bytes, but only 2 bytes follow "
                    "it (is the file truncated?)");
    /* The data ends before the last tensor does. */
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                 20,
                 "tensor 'b': data_offsets [8, 24] end past the data section, which holds 20 "
                 "bytes (is the file truncated?)");
}

/* A header longer than ST_HEADER_MAX, in a sparse file large enough to hold it. */
static void test_header_too_large(void **state)
{
    (void)state;
    const char *path = path_of("large-header.safetensors");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t n = ST_HEADER_MAX + 1;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(n >> (8 * i));
    assert_int_equal(fwrite(len, 1, 8, f), 8);
    assert_int_equal(ftruncate(fileno(f), (off_t)(8 + n + 16)), 0);
    assert_int_equal(fclose(f), 0);
    expect_error_at(path, "the header is 100000001 bytes long, more than the 100000000 attnscope "
                          "reads");
    unlink(path);
}

static void test_offsets(void **state)
{
    (void)state;
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 8,
                 "tensor 'a': data_offsets [4, 0] end before they begin");
    /* The example. */
    expect_error("{\"h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[768,2304],"
                 "\"data_offsets\":[0,100]}}",
                 100,
                 "tensor 'h.0.attn.c_attn.weight': data_offsets [0, 100] hold 100 bytes, its "
                 "shape [768, 2304] of F32 needs 7077888");
    expect_error("{\"a\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
                 "tensor 'a': data_offsets [0, 8] hold 8 bytes, its shape [3] of BF16 needs 6");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 8,
                 "tensor 'a': data_offsets must be [begin, end], two non-negative integers, got "
                 "[0]");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8,
                 "tensor 'a': data_offsets must be [begin, end], two non-negative integers, got "
                 "[-4,0]");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0-4\"}}", 8,
                 "tensor 'a': data_offsets must be [begin, end], two non-negative integers, got "
                 "\"0-4\"");
    /* Sub-byte elements must fill whole bytes. */
    expect_error("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 8,
                 "tensor 'a': shape [3] of F4 is 12 bits, which is not whole bytes");
}

static void test_overlap(void **state)
{
    (void)state;
    expect_error("{\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                 24, "tensors 'a' (data_offsets [0, 16]) and 'b' (data_offsets [8, 24]) overlap");
    /* Inside a long one that is not the previous by begin. */
    expect_error("{\"long\":{\"dtype\":\"U8\",\"shape\":[20],\"data_offsets\":[0,20]},"
                 "\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                 "\"y\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]}}",
                 24, "tensors 'long' (data_offsets [0, 20]) and 'x' (data_offsets [2, 4]) overlap");
    /* The same range twice. */
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                 "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
                 4, "tensors 'a' (data_offsets [0, 4]) and 'b' (data_offsets [0, 4]) overlap");
    /* Touching is not overlapping, and an empty tensor holds no bytes where the one before it
     * ends. */
    struct st_file f;
    open_ok(&f, write_st("touching.safetensors",
                         "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                         "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                         "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
                         "\"c\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[8,9]}}",
                         "012345678", 9));
    assert_int_equal(f.n, 4);
    attn_st_close(&f);
    /* An empty tensor inside another is where no tensor begins (Hugging Face's rule). */
    expect_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                 "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]}}",
                 4, "tensors 'a' (data_offsets [0, 4]) and 'e' (data_offsets [2, 2]) overlap");
}

/* The tensors tile the data section, as Hugging Face's safetensors requires: no byte before,
 * between or after them. A header length a few bytes short reads as a valid header whose
 * padding was cut off, with every tensor shifted: refused. */
static void test_packed(void **state)
{
    (void)state;
    expect_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                 "\"c\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[6,7]}}",
                 7,
                 "tensors 'a' (data_offsets [0, 4]) and 'c' (data_offsets [6, 7]) leave 2 bytes "
                 "between them that no tensor holds (safetensors packs its tensors)");
    expect_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8,
                 "the first tensor, 'a' (data_offsets [4, 8]), begins at byte 4 of the data "
                 "section, not at 0");
    expect_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 5,
                 "the data section holds 5 bytes, but the last tensor, 'a' (data_offsets [0, 4]), "
                 "ends at 4: the data must end where it does (is the header length, 53, right?)");
    expect_error("{\"__metadata__\":{}}", 3,
                 "the header names no tensor, but 3 bytes of data follow it (is the header length, "
                 "19, right?)");

    /* The file: a valid one, its header length 4 and 8 bytes short. Each cut leaves
     * JSON (the padding) but moves the data's start back into the header. */
    unsigned char *bytes;
    size_t total;
    const char *path = write_valid("short-length.safetensors", 8, &bytes, &total);
    struct st_file f;
    open_ok(&f, path);
    size_t hlen = f.data_start - 8, data = f.size - f.data_start;
    attn_st_close(&f);
    for (size_t cut = 4; cut <= 8; cut += 4) {
        for (int i = 0; i < 8; i++)
            bytes[i] = (unsigned char)((hlen - cut) >> (8 * i));
        tu_write_file(path, (const char *)bytes, total);
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "the data section holds %zu bytes, but the last tensor, 'steps' (data_offsets "
                 "[%zu, %zu]), ends at %zu: the data must end where it does (is the header "
                 "length, %zu, right?)",
                 data + cut, data - 16, data, data, hlen - cut);
        expect_error_at(path, msg);
    }
    free(bytes);
}

static void test_json(void **state)
{
    (void)state;
    /* Invalid JSON: jansson's words and the byte where it stopped (8 + its offset). */
    const char *broken = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}";
    char msg[256];
    snprintf(msg, sizeof(msg),
             "the header is not valid JSON: unexpected token near ']' (byte %zu of the file)",
             8 + (size_t)(strstr(broken, ",]") - broken) + 1);
    expect_error(broken, 4, msg);
    expect_error("", 0,
                 "the header is not valid JSON: '[' or '{' expected near end of file "
                 "(byte 8 of the file)");
    expect_error("{\"a\":", 0,
                 "the header is not valid JSON: unexpected token near end of file (byte 12 of "
                 "the file)");
    expect_error("{} x", 0,
                 "the header is not valid JSON: end of file expected near 'x' (byte 11 of the "
                 "file)");
    /* Invalid UTF-8 in a name is the parser's to refuse. */
    expect_error("{\"\xff\":{}}", 0,
                 "the header is not valid JSON: unable to decode byte 0xff near '\"' (byte 9 "
                 "of the file)");
    /* Duplicate names: the parser refuses them, naming the key (byte 64: the closing quote of
     * the second "a", at 8 + 54 + 2). */
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                 8, "tensor 'a' is in the header twice");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                 8, "tensor 'a' is in the header twice");
    expect_error("{\"__metadata__\":{},\"__metadata__\":{}}", 0,
                 "the header has __metadata__ twice");
    /* ignored, as Hugging Face's library takes the last */
    struct st_file f;
    open_ok(&f, write_st("meta-twice.safetensors",
                         "{\"__metadata__\":{\"k\":\"1\",\"j\":\"2\",\"k\":\"3\"}}", NULL, 0));
    attn_st_close(&f);
    /* Inside a tensor's entry the parser itself refuses them. */
    expect_error(
        "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
        "the header is not valid JSON: duplicate object key near '\"dtype\"' (byte 34 of "
        "the file)");
    /* Not an object at the top. */
    expect_error("[1, 2]", 0, "the header is [1,2], not a JSON object of tensors");
    expect_error("\"weights\"", 0, "the header is \"weights\", not a JSON object of tensors");
    /* What the walk of the top-level object refuses itself, in jansson's words. */
    expect_error("{\"a\" 1}", 0,
                 "the header is not valid JSON: ':' expected near '1' (byte 13 of the file)");
    expect_error("{\"a\":,}", 0,
                 "the header is not valid JSON: unexpected token near ',' (byte 13 of the file)");
    expect_error("{\"__metadata__\":{} \"b\":{}}", 0,
                 "the header is not valid JSON: '}' expected near '\"' (byte 27 of the file)");
    expect_error("{1:{}}", 0,
                 "the header is not valid JSON: string or '}' expected near '1' (byte 9 of the "
                 "file)");
    expect_error("{\"__metadata__\":{}", 0,
                 "the header is not valid JSON: '}' expected near end of file (byte 25 of the "
                 "file)");
    expect_error("{\"__metadata__\":{}}\xef\xbb\xbf", 0,
                 "the header is not valid JSON: end of file expected near '<U+FEFF>' (byte 27 of "
                 "the file)");
    expect_error("\xef\xbb\xbf{\"__metadata__\":{}}", 0,
                 "the header is not valid JSON: invalid token near '<U+FEFF>' (byte 10 of the "
                 "file)");
    /* No tensor's entry holds that many values: refused before it is parsed. */
    char big[1024] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1";
    for (int i = 0; i < 100; i++)
        strcat(big, ",1");
    strcat(big, "],\"data_offsets\":[0,4]}}");
    expect_error(big, 4,
                 "tensor 'a' holds more than 64 JSON values; a tensor has a dtype, a shape of at "
                 "most 8 dimensions and two data_offsets");
    expect_error("{\"__metadata__\":{\"a\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
                 "21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,"
                 "48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65]}}",
                 0, "__metadata__: 'a' is an array of more than 64 values, not a string");
    expect_error("{\"a\":[1]}", 0,
                 "tensor 'a' is [1], not an object of dtype, shape and data_offsets");
    expect_error("{\"__metadata__\":[]}", 0, "__metadata__ is [], not an object of strings");
    expect_error("{\"__metadata__\":{\"format\":1}}", 0,
                 "__metadata__: 'format' is 1, not a string");
    expect_error("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "a tensor's name is empty");
}

static void test_fields(void **state)
{
    (void)state;
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
                 "tensor 'a' has no 'data_offsets'");
    expect_error("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a' has no 'dtype'");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a' has no 'shape'");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"strides\":[1]}}",
                 4,
                 "tensor 'a': unknown field 'strides' (a tensor has dtype, shape and "
                 "data_offsets)");
    expect_error("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': dtype must be a string, got 32");
    expect_error("{\"a\":{\"dtype\":\"F99\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': unknown dtype 'F99'");
    expect_error("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': unknown dtype 'f32'");
    /* The first bad tensor in the file's order is the one named. */
    expect_error("{\"z\":{\"dtype\":\"Z\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"a\":{\"dtype\":\"A\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                 4, "tensor 'z': unknown dtype 'Z'");
    /* Control characters and bidi overrides in a name are escaped, other characters kept. */
    expect_error("{\"w\\u001b[2J\\n\\u202e\\u00e9\":{\"dtype\":\"X\",\"shape\":[1],"
                 "\"data_offsets\":[0,4]}}",
                 4, "tensor 'w\\e[2J\\n<U+202E>\u00e9': unknown dtype 'X'");
}

static void test_shapes(void **state)
{
    (void)state;
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': shape entry 1 is -3, not a non-negative integer");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': shape entry 0 is 2.5, not a non-negative integer");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': shape entry 0 is 1.0, not a non-negative integer");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"3\"],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': shape entry 0 is \"3\", not a non-negative integer");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': shape must be an array of integers, got 3");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
                 4, "tensor 'a': shape has 9 dimensions, attnscope reads at most 8");
    /* Products that overflow 64 bits, and one that wraps to exactly 0 in them. */
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
                 "\"data_offsets\":[0,4]}}",
                 4,
                 "tensor 'a': shape [4294967296, 4294967296, 16] has 2^57 elements or more, more "
                 "than a file can hold");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                 "\"data_offsets\":[0,0]}}",
                 4,
                 "tensor 'a': shape [4294967296, 4294967296] has 2^57 elements or more, more "
                 "than a file can hold");
    expect_error("{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],"
                 "\"data_offsets\":[0,0]}}",
                 4,
                 "tensor 'a': shape [2305843009213693952] has 2^57 elements or more, more than a "
                 "file can hold");
    /* A zero dimension empties any product. */
    struct st_file f;
    open_ok(&f, write_st("zero-dim.safetensors",
                         "{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807,0,"
                         "9223372036854775807],\"data_offsets\":[0,0]}}",
                         NULL, 0));
    assert_int_equal(attn_st_count(attn_st_find(&f, "a")), 0);
    attn_st_close(&f);
}

/* A valid header of LARGE_TENSORS entries, each about 100 bytes as in real headers (GPT-2's
 * names, F32 [1], packed). */
#define LARGE_TENSORS 200000

static const char *write_large(size_t *header_len)
{
    size_t cap = (size_t)LARGE_TENSORS * 128, len = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    len += (size_t)snprintf(h, cap, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < LARGE_TENSORS; i++)
        len += (size_t)snprintf(h + len, cap - len,
                                ",\"transformer.h.%d.mlp.experts.%d.c_fc.weight\":{\"dtype\":"
                                "\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                                i / 1000, i % 1000, 4 * i, 4 * i + 4);
    len += (size_t)snprintf(h + len, cap - len, "}");
    char *zeros = calloc(LARGE_TENSORS, 4);
    assert_non_null(zeros);
    const char *path = write_st("large.safetensors", h, zeros, (size_t)LARGE_TENSORS * 4);
    free(zeros);
    free(h);
    *header_len = len;
    return path;
}

static int open_large(void *arg, char *out, size_t size)
{
    struct st_file f;
    struct diag err;
    if (attn_st_open(&f, arg, &err) != 0) {
        snprintf(out, size, "%s", err.msg);
        return 1;
    }
    snprintf(out, size, "%d tensors", f.n);
    attn_st_close(&f);
    return 0;
}

/* A valid header of 20 MB (Hugging Face reads up to 100 MB) opens within three times its size of
 * memory besides the file's mapping. jansson's tree of the whole header took 10 to 20 times
 * its size (1.18 GB for 60 MB): the header is walked, and jansson parses one entry at a time. */
static void test_large_header_bounded(void **state)
{
    (void)state;
    size_t hlen;
    char path[4200], out[512];
    snprintf(path, sizeof(path), "%s", write_large(&hlen));
    size_t file = 8 + hlen + (size_t)LARGE_TENSORS * 4;
    int rc = tu_run_limited(out, sizeof(out), open_large, path, 60, file + 3 * hlen);
    if (rc != 0)
        fail_msg("a %zu-byte header: %s", hlen, out);
    assert_string_equal(out, "200000 tensors");
    unlink(path);
}

/* ---- sharded checkpoints -------------------------------------------------------------------- */

/* Every strcmp libattnscope's own code makes (tests/meson.build links this test with
 * -Wl,--wrap=strcmp): a count of work no loaded machine can stretch. */
int __real_strcmp(const char *a, const char *b);
int __wrap_strcmp(const char *a, const char *b);
static long strcmps;

int __wrap_strcmp(const char *a, const char *b)
{
    strcmps++;
    return __real_strcmp(a, b);
}

/* scratch/name: a shard of the tensors name_fmt % i for i in [from, to), each U8 [1]. */
static void write_shard(const char *name, const char *name_fmt, int from, int to)
{
    size_t cap = (size_t)(to - from) * 160 + 64, len = 1;
    char *h = malloc(cap), *data = calloc((size_t)(to - from) + 1, 1), tensor[128];
    assert_true(h && data);
    h[0] = '{';
    for (int i = from; i < to; i++) {
        snprintf(tensor, sizeof(tensor), name_fmt, i);
        len +=
            (size_t)snprintf(h + len, cap - len,
                             "%s\"%s\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                             i > from ? "," : "", tensor, i - from, i - from + 1);
    }
    snprintf(h + len, cap - len, "}");
    write_st(name, h, data, (size_t)(to - from));
    free(h);
    free(data);
}

/* An index of 20,000 tensors in two shards whose weight_map leaves the last one out: found in
 * n log n comparisons. A search of the weight_map for each of the shards' tensors took n^2 / 2
 * (35 s for 100,000 tensors). */
static void test_index_unlisted_tensor(void **state)
{
    (void)state;
    enum { N = 20000 };
    const char *fmt = "model.layers.%05d.weight";
    write_shard("model-00001-of-00002.safetensors", fmt, 0, N / 2);
    write_shard("model-00002-of-00002.safetensors", fmt, N / 2, N);
    size_t cap = (size_t)N * 80 + 64, len = 0;
    char *ix = malloc(cap), tensor[64];
    assert_non_null(ix);
    len += (size_t)snprintf(ix, cap, "{\"metadata\": {},\n \"weight_map\": {");
    for (int i = 0; i < N - 1; i++) {
        snprintf(tensor, sizeof(tensor), fmt, i);
        len += (size_t)snprintf(ix + len, cap - len,
                                "%s\n  \"%s\": \"model-0000%d-of-00002.safetensors\"", i ? "," : "",
                                tensor, i < N / 2 ? 1 : 2);
    }
    snprintf(ix + len, cap - len, "}}\n");
    char path[4200];
    snprintf(path, sizeof(path), "%s", path_of("model.safetensors.index.json"));
    tu_write_text(path, ix);
    free(ix);

    struct st_set set;
    struct diag err;
    strcmps = 0;
    assert_int_equal(attn_stset_open(&set, path, &err), -1);
    assert_string_equal(err.file, path);
    assert_int_equal(err.line, 2); /* at "weight_map" */
    assert_int_equal(err.col, 2);
    assert_string_equal(err.msg, "tensor 'model.layers.19999.weight' of shard "
                                 "'model-00002-of-00002.safetensors' is not in the index's "
                                 "weight_map");
    /* a few sorts and searches of n log2 n (286,000) each; a search per tensor was n^2 / 2
     * (200,000,000) */
    if (strcmps > 100L * N)
        fail_msg("%ld string comparisons for %d tensors", strcmps, N);
    attn_stset_close(&set);
}

/* A shard that is a link out of the index's folder is refused: the index names its shards, and
 * a downloaded folder must not read a file of the user's elsewhere. Hugging Face's cache, where
 * the index and the shards are links into one blobs/ folder, opens. */
static void test_index_shard_links(void **state)
{
    (void)state;
    char dir[4200], link[4300], index[4300], target[4300];
    const char *json = "{\"weight_map\": {\"a\": \"model-00001-of-00001.safetensors\"}}";
    snprintf(dir, sizeof(dir), "%s/links", scratch);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(index, sizeof(index), "%s/model.safetensors.index.json", dir);
    tu_write_text(index, json);
    write_shard("elsewhere.safetensors", "a", 0, 1); /* a valid shard, one folder up */
    snprintf(link, sizeof(link), "%s/model-00001-of-00001.safetensors", dir);
    snprintf(target, sizeof(target), "%s/elsewhere.safetensors", scratch);
    assert_int_equal(symlink("../elsewhere.safetensors", link), 0);
    struct st_set set;
    struct diag err;
    assert_int_equal(attn_stset_open(&set, index, &err), -1);
    char want[9000];
    snprintf(want, sizeof(want),
             "shard 'model-00001-of-00001.safetensors': it is a link to '%s', outside the folder "
             "of the index ('%s'); a shard is a file beside the index",
             target, dir);
    if (strlen(want) < 480) /* a scratch folder's path is short enough to be shown whole */
        assert_string_equal(err.msg, want);
    assert_non_null(strstr(err.msg, "outside the folder of the index"));
    assert_string_equal(err.file, index);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 17);

    /* Hugging Face's cache: snapshots/main/ holds links to ../../blobs/, the index's too. */
    char blobs[4300], snap[4300], path[4400], snap_link[4400];
    snprintf(blobs, sizeof(blobs), "%s/hub/blobs", scratch);
    snprintf(snap, sizeof(snap), "%s/hub/snapshots/main", scratch);
    snprintf(path, sizeof(path), "%s/hub", scratch);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(mkdir(blobs, 0755), 0);
    snprintf(path, sizeof(path), "%s/hub/snapshots", scratch);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(mkdir(snap, 0755), 0);
    snprintf(path, sizeof(path), "%s/5f1e", blobs);
    tu_write_text(path, json);
    assert_int_equal(rename(target, strcat(strcpy(path, blobs), "/9ac0")), 0);
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", snap);
    assert_int_equal(symlink("../../blobs/5f1e", path), 0);
    snprintf(snap_link, sizeof(snap_link), "%s/model-00001-of-00001.safetensors", snap);
    assert_int_equal(symlink("../../blobs/9ac0", snap_link), 0);
    if (attn_stset_open(&set, path, &err) != 0)
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(set.n, 1);
    attn_stset_close(&set);

    /* An index that starts with a byte order mark: said for what it is. */
    snprintf(path, sizeof(path), "%s/bom.index.json", dir);
    tu_write_text(path, "\xEF\xBB\xBF{}");
    assert_int_equal(attn_stset_open(&set, path, &err), -1);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 1);
    assert_string_equal(err.msg, "the file starts with a byte order mark (<U+FEFF>), which JSON "
                                 "does not allow (Hugging Face's readers refuse it too); save it "
                                 "as UTF-8 without one");
}

static void test_not_a_file(void **state)
{
    (void)state;
    expect_error_at(scratch, "is a directory, not a file");
    const char *fifo = path_of("fifo.safetensors");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_error_at(fifo, "not a regular file (a FIFO)"); /* without waiting for a writer */
    unlink(fifo);
    expect_error_at(path_of("missing.safetensors"), "cannot open: No such file or directory");
    expect_error_at("/dev/null", "not a regular file (a character device)");
}

/* ---- a file that changes under its mapping ------------------------------------------------- */

/* A 64 KiB F32 tensor (16 pages), its values 1.0. */
static const char *write_big(const char *name)
{
    enum { COUNT = 16384 };
    float *v = malloc(COUNT * sizeof(float));
    assert_non_null(v);
    for (int i = 0; i < COUNT; i++)
        v[i] = 1.0f;
    unsigned char *bytes = malloc(COUNT * 4);
    assert_non_null(bytes);
    le32(bytes, v, COUNT);
    const char *path = write_st(name,
                                "{\"w\":{\"dtype\":\"F32\",\"shape\":[16384],"
                                "\"data_offsets\":[0,65536]}}          ",
                                bytes, COUNT * 4);
    free(v);
    free(bytes);
    return path;
}

/* Truncated in place while mapped: reading past the new end is no SIGBUS but zeros, and the
 * file is reported as changed; unchanged, it is not. */
static void test_truncated_under_the_mapping(void **state)
{
    (void)state;
    const char *path = write_big("shrinks.safetensors");
    struct st_file f;
    open_ok(&f, path);
    struct diag err;
    assert_int_equal(attn_st_check_unchanged(&f, &err), 0);
    const struct st_tensor *t = attn_st_find(&f, "w");
    assert_int_equal(truncate(path, 8192), 0);
    float *out = malloc(16384 * sizeof(float));
    assert_non_null(out);
    assert_int_equal(attn_st_read_f32(out, 16384, &f, t, &err), 0); /* would be SIGBUS */
    assert_true(out[0] == 1.0f);                                    /* before the cut: the file's */
    assert_true(out[16383] == 0.0f);                                /* after it: zeros */
    assert_true(attn_mapguard_faulted(f.map));
    assert_int_equal(attn_st_check_unchanged(&f, &err), -1);
    assert_non_null(strstr(err.msg, "the checkpoint changed on disk: "));
    assert_non_null(strstr(err.msg, "(8192 bytes now, 65616 when it was read)"));
    /* The in-place view reads the same zeros, in any code that reads it. */
    const float *view = attn_st_f32_view(&f, t);
    assert_non_null(view);
    assert_true(view[16000] == 0.0f);
    free(out);
    attn_st_close(&f);
    assert_false(attn_mapguard_faulted(NULL));
}

/* Rewritten in place with the same size (other bytes, a later modification time): changed. */
static void test_rewritten_same_size(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s", write_big("rewritten.safetensors"));
    struct st_file f;
    open_ok(&f, path);
    struct diag err;
    struct timespec later[2] = {{0, UTIME_OMIT}, {0, 0}};
    clock_gettime(CLOCK_REALTIME, &later[1]);
    later[1].tv_nsec = (later[1].tv_nsec + 1) % 1000000000; /* a nanosecond apart is enough */
    FILE *w = fopen(path, "r+b");
    assert_non_null(w);
    assert_int_equal(fseek(w, -4, SEEK_END), 0);
    fputc(0, w);
    assert_int_equal(fclose(w), 0);
    assert_int_equal(utimensat(AT_FDCWD, path, later, 0), 0);
    assert_int_equal(attn_st_check_unchanged(&f, &err), -1);
    assert_non_null(strstr(err.msg, "(rewritten since it was read)"));
    attn_st_close(&f);
    /* Replaced by another file under the same name (an atomic save): changed too. */
    open_ok(&f, path);
    write_big("rewritten.safetensors.new");
    char fresh[4300];
    snprintf(fresh, sizeof(fresh), "%s.new", path);
    assert_int_equal(rename(fresh, path), 0);
    assert_int_equal(attn_st_check_unchanged(&f, &err), -1);
    assert_non_null(strstr(err.msg, "(another file is there now)"));
    attn_st_close(&f);
}

/* ---- no input crashes it ------------------------------------------------------------------- */

/* Opens bytes as a file: refused with a message naming it, or accepted and every readable
 * tensor read. */
static void open_any(const unsigned char *bytes, size_t len)
{
    const char *path = path_of("fuzz.safetensors");
    tu_write_file(path, (const char *)bytes, len);
    struct st_file f;
    struct diag err;
    if (attn_st_open(&f, path, &err) != 0) {
        assert_true(err.msg[0] != '\0');
        assert_string_equal(err.file, path);
        return;
    }
    for (int i = 0; i < f.n; i++) {
        const struct st_tensor *t = &f.tensors[i];
        assert_ptr_equal(attn_st_find(&f, t->name), t);
        assert_true(t->begin <= t->end && f.data_start + t->end <= f.size);
        size_t n = attn_st_count(t);
        float *out = malloc((n ? n : 1) * sizeof(float));
        assert_non_null(out);
        int rc = attn_st_read_f32(out, n, &f, t, &err);
        assert_true(rc == 0 || t->dtype == ST_OTHER);
        free(out);
    }
    attn_st_close(&f);
}

static void test_flips_and_cuts(void **state)
{
    (void)state;
    unsigned char *bytes;
    size_t total;
    write_valid("base.safetensors", 0, &bytes, &total);
    size_t upto = total < 200 ? total : 200;
    for (size_t pos = 0; pos < upto; pos++) {
        for (int bit = 0; bit < 8; bit++) {
            bytes[pos] ^= (unsigned char)(1u << bit);
            open_any(bytes, total);
            bytes[pos] ^= (unsigned char)(1u << bit);
        }
    }
    for (size_t len = 0; len <= total; len++)
        open_any(bytes, len);
    free(bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_padding_and_metadata),
        cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_header_too_large),
        cmocka_unit_test(test_large_header_bounded),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_packed),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_index_unlisted_tensor),
        cmocka_unit_test(test_index_shard_links),
        cmocka_unit_test(test_not_a_file),
        cmocka_unit_test(test_truncated_under_the_mapping),
        cmocka_unit_test(test_rewritten_same_size),
        cmocka_unit_test(test_flips_and_cuts),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
