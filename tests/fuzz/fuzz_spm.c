/* fuzz_spm: libFuzzer target for SentencePiece's model files (src/pretrained/spm: Marian's
 * source.spm and target.spm), loading plus encoding (tests/fuzz/README.md).
 *
 * A ModelProto may hold any byte, so the text to encode is not cut off by a NUL: the input's
 * first byte k says that its last k bytes are the text, and the bytes between are the model
 * (read from memory, as attn_spm_load does after reading the file). Invariants: a refusal names
 * the file and says why in printable text; an accepted model encodes the text and a few fixed
 * ones into non-empty pieces whose ids are pieces of the model, each known piece's string that
 * piece's own, each byte fallback a <0xXX> piece, the same twice over. The same entry point
 * replays tests/fuzz/regressions/spm/ (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TARGET "fuzz_spm"
#include "fuzz_common.h"

#include "pretrained/spm.h"

static void encode(const struct spm *m, const char *text, size_t len)
{
    struct spm_pieces p, again;
    struct diag err;
    attn_diag_clear(&err);
    INVARIANT(attn_spm_encode(&p, m, text, len, &err) == 0, "encoding failed: %s", err.msg);
    for (int i = 0; i < p.n; i++) {
        const struct spm_piece *x = &p.v[i];
        size_t len2;
        const char *own = attn_spm_piece(m, x->id, &len2);
        INVARIANT(own != NULL, "piece %d has id %d, not a piece of the model", i, x->id);
        INVARIANT(x->len > 0, "piece %d is empty", i);
        if (!attn_spm_is_unknown(m, x->id)) /* a byte fallback's string is its piece's too */
            INVARIANT(x->len == len2 && memcmp(x->s, own, len2) == 0,
                      "piece %d's string is not piece %d's", i, x->id);
    }
    INVARIANT(attn_spm_encode(&again, m, text, len, &err) == 0, "twice: %s", err.msg);
    INVARIANT(again.n == p.n, "the same text encodes differently");
    for (int i = 0; i < p.n; i++)
        INVARIANT(again.v[i].id == p.v[i].id && again.v[i].len == p.v[i].len,
                  "the same text encodes differently");
    attn_spm_pieces_free(&again);
    attn_spm_pieces_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t k = data[0] < size - 1 ? data[0] : size - 1;
    const uint8_t *model = data + 1;
    size_t model_len = size - 1 - k;
    struct spm *m = NULL;
    struct diag err;
    if (attn_spm_load_bytes(&m, model, model_len, "model.spm", &err) != 0) {
        INVARIANT(m == NULL, "a refusal returned a model");
        INVARIANT(strcmp(err.file, "model.spm") == 0, "the refusal names '%s'", err.file);
        INVARIANT(err.msg[0] != '\0', "an empty message");
        for (const char *p = err.msg; *p; p++)
            INVARIANT((unsigned char)*p >= 0x20 && *p != 0x7f, "a control character in '%s'",
                      err.msg);
        return 0;
    }
    INVARIANT(attn_spm_size(m) >= 1, "a model without pieces was accepted");
    encode(m, (const char *)data + size - k, k);
    static const char *const texts[] = {"",
                                        " ",
                                        "Hello  world! It's 2024.",
                                        "naïve café 你好 🎉",
                                        "  a\tb\n\nc  ",
                                        "\xff\xfe bad \xc3",
                                        "<s>x</s>▁▁y"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        encode(m, texts[i], strlen(texts[i]));
    attn_spm_free(m);
    return 0;
}
