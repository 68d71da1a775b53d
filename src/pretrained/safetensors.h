/* safetensors: Hugging Face's checkpoint format, read through a read-only mmap.
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON naming every tensor with
 * its dtype, shape and byte range in the data section (which starts at 8 + N), then the data.
 * attn_st_open validates the whole header before anything uses it (field types, shapes that do not
 * overflow, ranges that match their shape and, as Hugging Face's safetensors requires, tile the
 * data section: each tensor begins where the one before it ends, the last ends with the file), so
 * the readers below never look outside a tensor's bytes and a wrong header length is refused, not
 * read shifted. The header is walked member by member, so opening one costs about twice its size
 * in memory, not a tree of the whole JSON. F32, F16 and BF16 tensors read as float32; other
 * dtypes are listed but refused by the readers. An aligned F32 tensor is viewed in place, so a
 * 500 MB GPT-2 checkpoint costs page cache, not heap.
 */
#ifndef ATTNSCOPE_SAFETENSORS_H
#define ATTNSCOPE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

#define ST_MAX_DIMS 8
/* Larger headers are refused before parsing, as Hugging Face's safetensors refuses them (GPT-2's
 * is 15 KB, a 70B model's shard about 100 KB: some 100 bytes a tensor). */
#define ST_HEADER_MAX ((size_t)100 * 1000 * 1000)

enum st_dtype {
    ST_F32,
    ST_F16,
    ST_BF16,
    ST_OTHER, /* a known safetensors dtype (F64, I64, U8, BOOL...): listed, not readable */
};

struct st_tensor {
    char *name;
    enum st_dtype dtype;
    char dtype_name[8]; /* as the file spells it: "F32", "I64", "F8_E4M3" */
    int ndim;           /* 0 (a scalar) to ST_MAX_DIMS */
    int64_t shape[ST_MAX_DIMS];
    size_t begin, end; /* byte range in the data section, exactly the shape's size */
};

struct st_file {
    char *path;
    const unsigned char *map; /* the whole file, read-only (guarded: common/mapguard.h) */
    size_t size;
    /* The file as mapped, to tell when it changed on disk (attn_st_check_unchanged). */
    unsigned long long dev, ino;
    long long mtime_sec, mtime_nsec;
    size_t data_start;         /* 8 + N */
    struct st_tensor *tensors; /* sorted by name (strcmp), for attn_st_find */
    int n;
};

/* Maps path and validates its header. Refuses anything but a regular file without blocking
 * (a FIFO, a device). On failure *out is empty (attn_st_close is harmless) and err->file is path,
 * err->msg says what is wrong and, where it applies, names the tensor. */
int attn_st_open(struct st_file *out, const char *path, struct diag *err);
void attn_st_close(struct st_file *f);

/* 0 when the file on disk is still the one mapped: the same file (device and inode), size and
 * modification time (to the nanosecond), and no read of the mapping has run past a new end of
 * it. Otherwise -1, err: "the checkpoint changed on disk: PATH (why); ...". A checkpoint
 * rewritten in place (truncated, or the same size with other bytes) would feed the engine
 * numbers that are not the ones loaded, or a SIGBUS. */
int attn_st_check_unchanged(const struct st_file *f, struct diag *err);

/* The tensor called name, or NULL. */
const struct st_tensor *attn_st_find(const struct st_file *f, const char *name);
/* Its number of elements (1 for a scalar). */
size_t attn_st_count(const struct st_tensor *t);

/* The tensor's values in place (count of them, row-major), or NULL when that is not possible:
 * not F32, not 4-byte aligned in the file, or a big-endian host. Valid until attn_st_close. */
const float *attn_st_f32_view(const struct st_file *f, const struct st_tensor *t);

/* Copies the tensor into out (count = attn_st_count(t) floats), widening F16 and BF16 exactly.
 * Refuses other dtypes and a count that is not the tensor's. */
int attn_st_read_f32(float *out /*(count)*/, size_t count, const struct st_file *f,
                     const struct st_tensor *t, struct diag *err);

/* Rows [r0, r0 + nrows) of a 2-D tensor (rows, cols), e.g. a few tokens' embeddings out of a
 * 50257-row table, without reading the others. */
int attn_st_read_rows_f32(float *out /*(nrows, cols)*/, const struct st_file *f,
                          const struct st_tensor *t, int64_t r0, int64_t nrows, struct diag *err);

#endif
