/* fuzz_npy: libFuzzer target for .npy files, which scenes name as {file: name.npy} and which
 * arrive from anywhere (tests/fuzz/README.md).
 *
 * The bytes are written to a temporary file and read with attn_npy_read. Invariants: a refusal has
 * a reason naming the file; an accepted array has at most NPY_MAX_DIMS dimensions, as many values
 * as its shape says, all finite floats; writing it back and reading it again gives the same
 * values bit for bit. The same entry point replays tests/fuzz/regressions/npy/ (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_TARGET "fuzz_npy"
#include "fuzz_common.h"

#include "common/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("npy", ".npy", data, size);
    struct npy_array a;
    struct diag err;
    if (attn_npy_read(&a, path, (size_t)1 << 20, &err) != 0) {
        INVARIANT(err.msg[0] != '\0', "a refusal without a reason");
        INVARIANT(strcmp(err.file, path) == 0, "the refusal names '%s'", err.file);
        return 0;
    }
    INVARIANT(a.ndim >= 0 && a.ndim <= NPY_MAX_DIMS, "ndim %d", a.ndim);
    size_t count = 1;
    for (int d = 0; d < a.ndim; d++)
        count *= a.shape[d];
    INVARIANT(count == a.count, "count %zu for a shape of %zu values", a.count, count);
    for (size_t i = 0; i < a.count; i++)
        INVARIANT(a.data[i] == a.data[i] && a.data[i] - a.data[i] == 0.0f,
                  "value %zu is not finite", i);
    /* Round trip through our own writer. */
    FILE *f = fopen(path, "wb");
    INVARIANT(f != NULL, "cannot rewrite %s", path);
    INVARIANT(attn_npy_write_f32(f, a.data, a.ndim, a.shape) == 0, "attn_npy_write_f32 failed");
    INVARIANT(fclose(f) == 0, "cannot close %s", path);
    struct npy_array b;
    INVARIANT(attn_npy_read(&b, path, (size_t)1 << 20, &err) == 0, "our own file: %s", err.msg);
    INVARIANT(b.ndim == a.ndim && b.count == a.count, "shape changed in the round trip");
    INVARIANT(a.count == 0 || memcmp(a.data, b.data, a.count * sizeof(float)) == 0,
              "values changed in the round trip");
    attn_npy_free(&b);
    attn_npy_free(&a);
    return 0;
}
