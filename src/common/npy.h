/* npy: NumPy's .npy files, for matrices too large to write inline in a scene file.
 *
 * A scene names one as {file: weights.query.npy}; export and save write them when a matrix is
 * too large for readable YAML, and export --format npy writes every matrix as one. Reading
 * validates the whole file before trusting it: the magic and version (1.0, 2.0, 3.0), the
 * header dictionary, the dtype, the shape, and that the data is exactly as long as the shape
 * says. Values are widened or narrowed to float32 the way a scene's YAML numbers are (float64
 * rounds to nearest, float16 and integers widen exactly); the dtype is kept, so the scene
 * loader can take integers as a mask and refuse them as weights.
 */
#ifndef ATTNSCOPE_NPY_H
#define ATTNSCOPE_NPY_H

#include <stddef.h>
#include <stdio.h>

#include "common/diag.h"

#define NPY_MAX_DIMS 3

/* An array read from a file: data holds count values in C (row-major) order. */
struct npy_array {
    int ndim;
    size_t shape[NPY_MAX_DIMS];
    size_t count;
    float *data;
    char descr[8]; /* the file's dtype as NumPy writes it ('<f8', '|u1'); "" when not a .npy */
};

/* Reads path as float32. Accepted dtypes: float16/32/64, int8..64, uint8..64 and bool, either
 * byte order, C or Fortran order, 0 to NPY_MAX_DIMS dimensions. Non-finite values and more
 * than max_values values are refused. On failure err names the file. */
int attn_npy_read(struct npy_array *out, const char *path, size_t max_values, struct diag *err);
void attn_npy_free(struct npy_array *a);
/* a's shape as NumPy prints it: "(3, 4)", "(5,)"; cut to fit size. */
void attn_npy_shape_str(char *out, size_t size, const struct npy_array *a);

/* Writes a float32 array ('<f4', C order) of ndim dimensions. Returns 0, or -1 when the stream
 * reports an error. */
int attn_npy_write_f32(FILE *f, const float *data, int ndim, const size_t *shape);
/* Writes a rows x cols float32 matrix whose row i starts at data + i * stride (a window on a
 * wider buffer), always as '<f4' in C order, so the file is the same on any machine. Returns 0,
 * or -1 when the stream reports an error. */
int attn_npy_write_f32_matrix(FILE *f, const float *data, size_t rows, size_t cols, size_t stride);
/* Writes a uint8 array ('|u1'); dropout keep-masks. */
int attn_npy_write_u8(FILE *f, const unsigned char *data, int ndim, const size_t *shape);

#endif
