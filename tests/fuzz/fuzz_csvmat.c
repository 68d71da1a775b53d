/* fuzz_csvmat: libFuzzer target for CSV matrices, which scenes name as {file: name.csv} and which
 * arrive from spreadsheets, pandas and numpy.savetxt (tests/fuzz/README.md).
 *
 * The bytes are written to a temporary file and read with attn_csvmat_read. Invariants: a refusal
 * has a reason in printable text (fields quoted in it are escaped) naming the file; an accepted
 * matrix is 2-D, at least 1 x 1, as many values as its shape, all finite; written back both as
 * bare numbers and as the export's labelled table (CRLF, a label needing quotes) it reads again
 * with the same shape, bit for bit. The same entry point replays tests/fuzz/regressions/csvmat/
 * (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_TARGET "fuzz_csvmat"
#include "fuzz_common.h"

#include "common/cnum.h"
#include "common/csvmat.h"
#include "common/utf8.h"

static void write_back(const char *path, const struct npy_array *a, bool labelled)
{
    FILE *f = fopen(path, "wb");
    INVARIANT(f != NULL, "cannot rewrite %s", path);
    size_t rows = a->shape[0], cols = a->shape[1];
    if (labelled) {
        fputs("row", f);
        for (size_t j = 0; j < cols; j++)
            fprintf(f, ",d%zu", j);
        fputs("\r\n", f);
    }
    for (size_t i = 0; i < rows; i++) {
        if (labelled)
            fputs("\"a,\"\"b\"\"\nc\"", f);
        for (size_t j = 0; j < cols; j++) {
            char buf[32];
            attn_cnum_format_float(buf, sizeof(buf), a->data[i * cols + j]);
            fprintf(f, "%s%s", labelled || j ? "," : "", buf);
        }
        fputs(labelled ? "\r\n" : "\n", f);
    }
    INVARIANT(fclose(f) == 0, "cannot close %s", path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("csvmat", ".csv", data, size);
    struct npy_array a;
    struct diag err;
    if (attn_csvmat_read(&a, path, (size_t)1 << 20, &err) != 0) {
        INVARIANT(err.msg[0] != '\0', "a refusal without a reason");
        INVARIANT(strcmp(err.file, path) == 0, "the refusal names '%s'", err.file);
        /* what the file held is quoted escaped (common/utf8): no control character, bidi
           control or invalid byte reaches a terminal */
        INVARIANT(!attn_utf8_needs_escape(err.msg, 0), "an unescaped character in the reason: %s",
                  err.msg);
        return 0;
    }
    INVARIANT(a.ndim == 2, "ndim %d", a.ndim);
    INVARIANT(a.shape[0] >= 1 && a.shape[1] >= 1, "shape (%zu, %zu)", a.shape[0], a.shape[1]);
    INVARIANT(a.count == a.shape[0] * a.shape[1], "count %zu for (%zu, %zu)", a.count, a.shape[0],
              a.shape[1]);
    for (size_t i = 0; i < a.count; i++)
        INVARIANT(a.data[i] == a.data[i] && a.data[i] - a.data[i] == 0.0f,
                  "value %zu is not finite", i);
    for (int labelled = 0; labelled < 2; labelled++) {
        write_back(path, &a, labelled);
        struct npy_array b;
        INVARIANT(attn_csvmat_read(&b, path, (size_t)1 << 20, &err) == 0, "our own file: %s",
                  err.msg);
        INVARIANT(b.shape[0] == a.shape[0] && b.shape[1] == a.shape[1],
                  "shape changed in the round trip");
        INVARIANT(memcmp(a.data, b.data, a.count * sizeof(float)) == 0,
                  "values changed in the round trip");
        attn_npy_free(&b);
    }
    attn_npy_free(&a);
    return 0;
}
