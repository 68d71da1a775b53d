/* fuzz_tokenizer: libFuzzer target for Hugging Face's tokenizer.json (src/pretrained/hftok),
 * loading plus encoding (tests/fuzz/README.md).
 *
 * The input is tokenizer.json's bytes; after a first NUL byte comes a text to encode, and after
 * a second one the pair's second text (without a NUL, a few fixed texts are encoded). The file
 * is read from memory (attn_hftok_load_bytes, what attn_hftok_load does after reading the file).
 * Invariants: a refusal names the file, has a location inside the input and a message in
 * printable text, and prints as a located problem (fuzz_check_diag); an accepted tokenizer
 * encodes every text that is UTF-8 (and refuses the others, naming the byte) into ids below its
 * vocabulary size, type ids 0 or above and special flags 0 or 1, the same twice over; without
 * special tokens it marks none as special; every id has a printable, NUL-terminated label. The
 * same entry point replays tests/fuzz/regressions/tokenizer/ (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TARGET "fuzz_tokenizer"
#include "fuzz_common.h"

#include "common/utf8.h"
#include "pretrained/hftok.h"

static bool is_utf8(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        char tmp[5] = {0};
        memcpy(tmp, s + i, len - i < 4 ? len - i : 4);
        uint32_t cp;
        int k = attn_utf8_decode(tmp, &cp);
        if (k <= 0 && s[i] != '\0')
            return false;
        i += k > 0 ? (size_t)k : 1;
    }
    return true;
}

static void check_label(const struct hftok *t, int id)
{
    char label[64];
    memset(label, 'x', sizeof(label));
    attn_hftok_token_label(label, sizeof(label), t, id);
    size_t n = strnlen(label, sizeof(label));
    INVARIANT(n < sizeof(label), "the label of %d is not terminated", id);
    for (size_t i = 0; i < n; i++)
        INVARIANT((unsigned char)label[i] >= 0x20 && label[i] != 0x7f,
                  "a control byte in the label of %d", id);
}

static void encode(const struct hftok *t, const char *a, size_t an, const char *b, size_t bn)
{
    for (int special = 0; special < 2; special++) {
        struct hftok_encoding e, again;
        struct diag err;
        int rc = attn_hftok_encode(&e, t, a, an, b, bn, special, &err);
        bool valid = is_utf8(a, an) && (!b || is_utf8(b, bn));
        if (rc != 0) {
            INVARIANT(err.msg[0] != '\0', "an empty message");
            INVARIANT(!valid || strstr(err.msg, "unknown token") || strstr(err.msg, "regex") ||
                          strstr(err.msg, "post-processor") || strstr(err.msg, "template") ||
                          strstr(err.msg, "out of memory") ||
                          strstr(err.msg, "the normalizer makes the text longer"),
                      "UTF-8 text refused: %s", err.msg);
            INVARIANT(valid || strstr(err.msg, "not valid UTF-8"), "a refusal of bad text: %s",
                      err.msg);
            continue;
        }
        INVARIANT(valid, "text that is not UTF-8 was encoded");
        INVARIANT(e.n >= 0 && e.ids && e.type_ids && e.special, "an encoding without arrays");
        for (int i = 0; i < e.n; i++) {
            INVARIANT(e.ids[i] >= 0 && e.ids[i] < attn_hftok_vocab_size(t), "id %d of %d", e.ids[i],
                      attn_hftok_vocab_size(t));
            INVARIANT(e.type_ids[i] >= 0, "type id %d", e.type_ids[i]);
            INVARIANT(e.special[i] <= 1, "special %d", e.special[i]);
            INVARIANT(special || !e.special[i], "a special token without special tokens");
            if (i < 64)
                check_label(t, e.ids[i]);
        }
        INVARIANT(attn_hftok_encode(&again, t, a, an, b, bn, special, &err) == 0, "twice: %s",
                  err.msg);
        INVARIANT(again.n == e.n && memcmp(again.ids, e.ids, (size_t)e.n * sizeof(int)) == 0,
                  "the same text encodes differently");
        attn_hftok_encoding_free(&again);
        attn_hftok_encoding_free(&e);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *json = (const char *)data;
    const char *nul = memchr(json, '\0', size);
    size_t json_len = nul ? (size_t)(nul - json) : size;
    struct hftok *t = NULL;
    struct diag err;
    if (attn_hftok_load_bytes(&t, json, json_len, "tokenizer.json", NULL, 0, NULL, &err) != 0) {
        INVARIANT(t == NULL, "a refusal returned a tokenizer");
        INVARIANT(strcmp(err.file, "tokenizer.json") == 0, "the refusal names '%s'", err.file);
        fuzz_check_diag(&err, data, json_len);
        int lines = 1;
        for (size_t i = 0; i < json_len; i++)
            lines += json[i] == '\n';
        INVARIANT(err.line >= 1 && err.line <= lines, "line %d of %d", err.line, lines);
        for (const char *p = err.msg; *p; p++)
            INVARIANT((unsigned char)*p >= 0x20 && *p != 0x7f, "a control character in '%s'",
                      err.msg);
        return 0;
    }
    INVARIANT(attn_hftok_vocab_size(t) >= 1, "an empty vocabulary was accepted");
    check_label(t, 0);
    check_label(t, attn_hftok_vocab_size(t) - 1);
    if (nul) {
        const char *text = nul + 1;
        size_t rest = size - json_len - 1;
        const char *nul2 = memchr(text, '\0', rest);
        if (nul2)
            encode(t, text, (size_t)(nul2 - text), nul2 + 1, rest - (size_t)(nul2 - text) - 1);
        else
            encode(t, text, rest, NULL, 0);
    } else {
        static const char *const texts[] = {"", "Hello world! It's 2024.", "naïve café 你好 🎉",
                                            "  a\tb\n\nc  ", "<s>x</s>[CLS]<|endoftext|>"};
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
            encode(t, texts[i], strlen(texts[i]), i == 1 ? "second" : NULL, 6);
    }
    attn_hftok_free(t);
    return 0;
}
