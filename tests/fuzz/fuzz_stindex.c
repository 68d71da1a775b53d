/* fuzz_stindex: libFuzzer target for a sharded checkpoint's model.safetensors.index.json
 * (tests/fuzz/README.md).
 *
 * Each input is parsed as an index (attn_stindex_parse), then opened as one from a scratch file
 * (attn_stset_open, which maps the shards it names: in the scratch folder there are none, or
 * they are not safetensors). Invariants: a refused index gives one located, printable reason and
 * leaves the result empty; an accepted one lists each tensor once, each with a shard in range,
 * and every shard is a plain file name (no '/', not "." or ".."), named once and used by some
 * tensor. A broken invariant aborts, so libFuzzer reports the input. The same entry point
 * replays tests/fuzz/regressions/stindex/ (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TARGET "fuzz_stindex"
#include "fuzz_common.h"

#include "pretrained/stset.h"

static void check_index(const struct st_index *ix)
{
    INVARIANT(ix->n_shards >= 0 && ix->n_shards <= STSET_MAX_SHARDS, "%d shards", ix->n_shards);
    INVARIANT(ix->n_entries >= 0, "%d entries", ix->n_entries);
    for (int s = 0; s < ix->n_shards; s++) {
        const char *f = ix->shards[s];
        INVARIANT(f && f[0] && !strchr(f, '/') && strcmp(f, ".") != 0 && strcmp(f, "..") != 0,
                  "shard %d is not a plain file name", s);
        for (int t = 0; t < s; t++)
            INVARIANT(strcmp(ix->shards[t], f) != 0, "shard %d named twice", s);
    }
    unsigned char *used = calloc((size_t)ix->n_shards + 1, 1);
    INVARIANT(used != NULL, "out of memory");
    for (int e = 0; e < ix->n_entries; e++) {
        const struct st_index_entry *en = &ix->entries[e];
        INVARIANT(en->tensor != NULL, "entry %d has no name", e);
        INVARIANT(en->shard >= 0 && en->shard < ix->n_shards, "entry %d: shard %d of %d", e,
                  en->shard, ix->n_shards);
        used[en->shard] = 1;
    }
    for (int s = 0; s < ix->n_shards; s++)
        INVARIANT(used[s], "shard %d holds no tensor", s);
    free(used);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_index ix;
    struct diag err;
    attn_diag_clear(&err);
    int rc = attn_stindex_parse(&ix, (const char *)data, size, "index.json", &err);
    if (rc != 0) {
        fuzz_check_diag(&err, data, size);
        INVARIANT(ix.n_shards == 0 && ix.n_entries == 0, "a refused index kept entries");
    } else {
        check_index(&ix);
    }
    attn_stindex_free(&ix);

    /* the whole open: the index from a file, its shards beside it (none exist there) */
    const char *path = fuzz_write_scratch("stindex", ".index.json", data, size);
    struct st_set set;
    attn_diag_clear(&err);
    if (attn_stset_open(&set, path, &err) != 0) {
        INVARIANT(err.msg[0] != '\0', "a refused index gives no reason");
        INVARIANT(set.n == 0 && set.n_files == 0, "a refused set kept files");
    }
    attn_stset_close(&set);
    return 0;
}
