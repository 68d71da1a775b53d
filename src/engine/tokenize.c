/* tokenize: whitespace, words and chars tokenizers (see tokenize.h). */
#include "engine/tokenize.h"

#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>

void attn_tokens_free(char **tokens, int n)
{
    if (!tokens)
        return;
    for (int i = 0; i < n; i++)
        free(tokens[i]);
    free(tokens);
}

char **attn_tokens_dup(char *const *tokens, int n)
{
    char **out = calloc((size_t)(n > 0 ? n : 1), sizeof(*out));
    if (!out)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!(out[i] = strdup(tokens[i]))) {
            attn_tokens_free(out, i);
            return NULL;
        }
    return out;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Letters, digits, '_' and apostrophes stay inside a word; so does any non-ASCII character,
 * so "café" and "日本" are single tokens. */
static int is_word(unsigned char c)
{
    return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || c == '_' || c == '\'';
}

struct tokbuf {
    char **items;
    int n, cap;
};

static int push(struct tokbuf *b, const char *s, size_t len, struct diag *err)
{
    if (b->n >= SCENE_MAX_TOKENS)
        return diag_set(err, "text", "more than %d tokens", SCENE_MAX_TOKENS);
    if (len > SCENE_MAX_TOKEN_BYTES)
        return diag_set(err, "text", "token %d is longer than %d bytes", b->n + 1,
                        SCENE_MAX_TOKEN_BYTES);
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        char **items = realloc(b->items, (size_t)cap * sizeof(*items));
        if (!items)
            return diag_set(err, "text", "out of memory");
        b->items = items;
        b->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t)
        return diag_set(err, "text", "out of memory");
    memcpy(t, s, len);
    t[len] = '\0';
    b->items[b->n++] = t;
    return 0;
}

int attn_tokenize(char ***out, int *n, const char *text, enum attn_tokenizer t, struct diag *err)
{
    struct tokbuf b = {0};
    const char *p = text;
    /* Validate once so every branch below can step by code point safely. */
    for (const char *q = text; *q;) {
        uint32_t cp;
        int l = utf8_decode(q, &cp);
        if (!l)
            return diag_set(err, "text", "invalid UTF-8 at byte %d", (int)(q - text));
        q += l;
    }
    while (*p) {
        const char *start = p;
        int rc = 0;
        unsigned char c = (unsigned char)*p;
        switch (t) {
        case TOKENIZER_WHITESPACE:
            if (is_space(c)) {
                p++;
                continue;
            }
            while (*p && !is_space((unsigned char)*p))
                p++;
            rc = push(&b, start, (size_t)(p - start), err);
            break;
        case TOKENIZER_WORDS:
            if (is_space(c)) {
                p++;
                continue;
            }
            if (is_word(c)) {
                while (*p && is_word((unsigned char)*p))
                    p++;
            } else {
                p++; /* one punctuation character */
            }
            rc = push(&b, start, (size_t)(p - start), err);
            break;
        case TOKENIZER_GPT2: /* needs its vocabulary: attn_scene_set_text asks the backing */
        case TOKENIZER_HF:
            attn_tokens_free(b.items, b.n);
            return diag_set(err, "tokenizer", "the %s tokenizer needs its vocabulary",
                            t == TOKENIZER_HF ? "hf" : "gpt2");
        case TOKENIZER_CHARS: {
            uint32_t cp;
            p += utf8_decode(p, &cp); /* valid: checked above */
            rc = push(&b, start, (size_t)(p - start), err);
            break;
        }
        }
        if (rc) {
            attn_tokens_free(b.items, b.n);
            return rc;
        }
    }
    *out = b.items;
    *n = b.n;
    return 0;
}
