/* fuzz_safetensors: libFuzzer target for safetensors checkpoints, which arrive from anywhere
 * (tests/fuzz/README.md).
 *
 * The bytes are written to a temporary file and opened with attn_st_open. Invariants: a refusal
 * names the file and says why, in printable text (names and JSON excerpts are escaped); an accepted
 * file lists its tensors sorted by name, each found by attn_st_find, its bytes inside the data
 * section, as many as its shape needs, the tensors tiling the data section (each begins where
 * the one before it ends, the last ends with the file: Hugging Face's rule); every F32, F16 and
 * BF16 tensor reads, its rows read the same values, an F32 view equals the copy, and other dtypes
 * are refused. The same entry point replays tests/fuzz/regressions/safetensors/ (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_TARGET "fuzz_safetensors"
#include "fuzz_common.h"

#include "pretrained/safetensors.h"

static int by_begin(const void *a, const void *b)
{
    const struct st_tensor *x = *(const struct st_tensor *const *)a;
    const struct st_tensor *y = *(const struct st_tensor *const *)b;
    if (x->begin != y->begin) /* then by end: an empty tensor before one that begins with it */
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Reads t every way there is and checks that the ways agree. */
static void read_tensor(const struct st_file *f, const struct st_tensor *t)
{
    struct diag err;
    size_t n = attn_st_count(t);
    float *all = malloc((n ? n : 1) * sizeof(float)), *rows = malloc((n ? n : 1) * sizeof(float));
    INVARIANT(all && rows, "out of memory for %zu values", n);
    if (t->dtype == ST_OTHER) {
        INVARIANT(attn_st_read_f32(all, n, f, t, &err) != 0, "%s read as float", t->dtype_name);
        INVARIANT(strstr(err.msg, t->dtype_name) != NULL, "the refusal does not name the dtype");
        INVARIANT(attn_st_f32_view(f, t) == NULL, "a view of %s", t->dtype_name);
        free(all);
        free(rows);
        return;
    }
    INVARIANT(attn_st_read_f32(all, n, f, t, &err) == 0, "a readable tensor: %s", err.msg);
    const float *view = attn_st_f32_view(f, t);
    INVARIANT(view == NULL || t->dtype == ST_F32, "a view of %s", t->dtype_name);
    INVARIANT(view == NULL || n == 0 || memcmp(view, all, n * sizeof(float)) == 0,
              "the view differs from the copy");
    if (t->ndim == 2) {
        INVARIANT(attn_st_read_rows_f32(rows, f, t, 0, t->shape[0], &err) == 0, "all rows: %s",
                  err.msg);
        INVARIANT(n == 0 || memcmp(rows, all, n * sizeof(float)) == 0, "rows differ");
        if (t->shape[0] > 1) { /* the last row alone */
            size_t cols = (size_t)t->shape[1];
            INVARIANT(attn_st_read_rows_f32(rows, f, t, t->shape[0] - 1, 1, &err) == 0, "a row: %s",
                      err.msg);
            INVARIANT(cols == 0 || memcmp(rows, all + n - cols, cols * sizeof(float)) == 0,
                      "the last row differs");
        }
        INVARIANT(attn_st_read_rows_f32(rows, f, t, t->shape[0], 1, &err) != 0,
                  "a row past the end");
    }
    free(all);
    free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("st", ".safetensors", data, size);
    struct st_file f;
    struct diag err;
    if (attn_st_open(&f, path, &err) != 0) {
        fuzz_check_diag(&err, data, size);
        INVARIANT(strcmp(err.file, path) == 0, "the refusal names '%s'", err.file);
        for (const char *p = err.msg; *p; p++)
            INVARIANT((unsigned char)*p >= 0x20 && *p != 0x7f, "a control character in '%s'",
                      err.msg);
        INVARIANT(f.map == NULL && f.tensors == NULL && f.n == 0, "a refusal left a file open");
        return 0;
    }
    INVARIANT(f.data_start >= 8 && f.data_start <= f.size, "data_start %zu of %zu", f.data_start,
              f.size);
    const struct st_tensor **order = malloc((size_t)(f.n ? f.n : 1) * sizeof(*order));
    INVARIANT(order != NULL, "out of memory");
    for (int i = 0; i < f.n; i++) {
        const struct st_tensor *t = &f.tensors[i];
        INVARIANT(t->name[0] != '\0', "an empty name");
        INVARIANT(i == 0 || strcmp(f.tensors[i - 1].name, t->name) < 0, "names out of order");
        INVARIANT(attn_st_find(&f, t->name) == t, "attn_st_find misses '%s'", t->name);
        INVARIANT(t->ndim >= 0 && t->ndim <= ST_MAX_DIMS, "ndim %d", t->ndim);
        INVARIANT(t->begin <= t->end && t->end <= f.size - f.data_start, "[%zu, %zu) of %zu",
                  t->begin, t->end, f.size - f.data_start);
        size_t esize = t->dtype == ST_F32 ? 4 : 2;
        INVARIANT(t->dtype == ST_OTHER || t->end - t->begin == attn_st_count(t) * esize,
                  "%zu bytes for %zu values of %s", t->end - t->begin, attn_st_count(t),
                  t->dtype_name);
        order[i] = t;
        read_tensor(&f, t);
    }
    if (f.n > 0)
        qsort(order, (size_t)f.n, sizeof(*order), by_begin);
    /* Hugging Face's rule: in the order of their offsets, the tensors tile the data section */
    size_t at = 0;
    for (int i = 0; i < f.n; i++) {
        INVARIANT(order[i]->begin == at,
                  "'%s' begins at %zu, not where the tensor before it ends "
                  "(%zu)",
                  order[i]->name, order[i]->begin, at);
        at = order[i]->end;
    }
    INVARIANT(at == f.size - f.data_start, "the tensors end at %zu of a %zu-byte data section", at,
              f.size - f.data_start);
    free(order);
    INVARIANT(attn_st_find(&f, "__metadata__") == NULL, "the metadata is a tensor");
    attn_st_close(&f);
    return 0;
}
