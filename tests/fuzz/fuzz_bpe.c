/* fuzz_bpe: libFuzzer target for GPT-2's byte-level BPE (tests/fuzz/README.md).
 *
 * One input holds the three things a tokenizer reads: vocab.json, then a NUL byte, merges.txt,
 * another NUL byte, and the text to encode (missing parts are empty). The two files are written
 * to scratch paths and loaded with attn_bpe_load, as a scene's tokenizer: {kind: gpt2} is. A
 * refusal must say why and name one of the two files. A loaded tokenizer encodes the text (at most
 * 4 KiB of it: the merges of one long piece are quadratic); the text must then be cut into tokens
 * whose byte spans tile it exactly, each token non-empty, its id in range and its bytes
 * (attn_bpe_token_bytes) the text's bytes of its span; attn_bpe_encode gives the same ids, and
 * every label fits its buffer and holds no control character. Text that is not UTF-8 is refused
 * with a reason. A broken invariant aborts, so libFuzzer reports the input. The same entry point
 * replays tests/fuzz/regressions/bpe/ and the seeds (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_TARGET "fuzz_bpe"
#include "fuzz_common.h"

#include "pretrained/bpe.h"

#define TEXT_MAX 4096

/* The next part of the input, up to a NUL byte or the end. */
static const uint8_t *part(const uint8_t **p, const uint8_t *end, size_t *n)
{
    const uint8_t *start = *p;
    const uint8_t *nul = start < end ? memchr(start, 0, (size_t)(end - start)) : NULL;
    *n = (size_t)((nul ? nul : end) - start);
    *p = nul ? nul + 1 : end;
    return start;
}

static void check_encoding(const struct bpe *b, const char *text, size_t len)
{
    int *ids = NULL, n = -1;
    size_t *starts = NULL;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_bpe_encode_spans(&ids, &starts, &n, b, text, len, &err) != 0) {
        INVARIANT(err.msg[0] != '\0', "a refused text gives no reason");
        INVARIANT(ids == NULL && starts == NULL, "a refusal left arrays behind");
        return;
    }
    INVARIANT(ids != NULL && starts != NULL, "no arrays for %d tokens", n);
    INVARIANT(n >= 0 && (size_t)n <= len, "%d tokens for %zu bytes", n, len);
    INVARIANT(starts[0] == 0, "the first token starts at %zu", starts[0]);
    INVARIANT(starts[n] == len, "the tokens end at %zu of %zu bytes", starts[n], len);
    int vocab = attn_bpe_vocab_size(b);
    for (int i = 0; i < n; i++) {
        INVARIANT(starts[i] < starts[i + 1], "token %d is empty or backwards (%zu .. %zu)", i,
                  starts[i], starts[i + 1]);
        INVARIANT(ids[i] >= 0 && ids[i] < vocab, "token %d has id %d of %d", i, ids[i], vocab);
        size_t tlen = 0;
        const char *bytes = attn_bpe_token_bytes(b, ids[i], &tlen);
        INVARIANT(bytes != NULL, "token %d's id %d has no bytes", i, ids[i]);
        INVARIANT(tlen == starts[i + 1] - starts[i] && memcmp(bytes, text + starts[i], tlen) == 0,
                  "token %d (id %d, %zu bytes) is not the text's bytes %zu .. %zu", i, ids[i], tlen,
                  starts[i], starts[i + 1]);
        char label[64];
        memset(label, 'x', sizeof(label));
        attn_bpe_token_label(label, sizeof(label), b, ids[i]);
        size_t ll = strnlen(label, sizeof(label));
        INVARIANT(ll < sizeof(label), "a label without its NUL");
        for (size_t j = 0; j < ll; j++)
            INVARIANT((unsigned char)label[j] >= 0x20 && label[j] != 0x7f,
                      "label of id %d holds byte 0x%02x", ids[i], (unsigned char)label[j]);
    }
    int *again = NULL, m = -1;
    INVARIANT(attn_bpe_encode(&again, &m, b, text, len, &err) == 0, "attn_bpe_encode refused: %s",
              err.msg);
    INVARIANT(m == n && memcmp(again, ids, (size_t)n * sizeof(int)) == 0,
              "attn_bpe_encode and attn_bpe_encode_spans disagree (%d and %d tokens)", m, n);
    free(again);
    free(ids);
    free(starts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char vocab_path[128], merges_path[128];
    const uint8_t *p = data, *end = data + size;
    size_t vn, mn, tn;
    const uint8_t *vocab = part(&p, end, &vn);
    const uint8_t *merges = part(&p, end, &mn);
    const uint8_t *text = p; /* the rest, NUL bytes included */
    tn = (size_t)(end - p);
    if (tn > TEXT_MAX)
        tn = TEXT_MAX;
    fuzz_write_scratch_at(vocab_path, sizeof(vocab_path), "bpe", "-vocab.json", vocab, vn);
    fuzz_write_scratch_at(merges_path, sizeof(merges_path), "bpe", "-merges.txt", merges, mn);
    struct bpe *b = (struct bpe *)1;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_bpe_load(&b, vocab_path, merges_path, &err) != 0) {
        INVARIANT(b == NULL, "a refused tokenizer is not NULL");
        INVARIANT(err.msg[0] != '\0', "a refused tokenizer gives no reason");
        INVARIANT(strcmp(err.file, vocab_path) == 0 || strcmp(err.file, merges_path) == 0,
                  "the refusal names '%s', neither file", err.file);
        INVARIANT(err.line >= 0 && err.col >= 0, "a negative location");
        return 0;
    }
    INVARIANT(b != NULL, "no tokenizer");
    INVARIANT(attn_bpe_vocab_size(b) >= 0 && attn_bpe_vocab_size(b) <= BPE_MAX_VOCAB,
              "vocabulary of %d", attn_bpe_vocab_size(b));
    char *copy = malloc(tn ? tn : 1); /* exactly the text: a read past it is ASan's */
    INVARIANT(copy != NULL, "out of memory");
    memcpy(copy, text, tn);
    check_encoding(b, copy, tn);
    free(copy);
    attn_bpe_free(b);
    return 0;
}
