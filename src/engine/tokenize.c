/* tokenize: whitespace, words and chars tokenizers (see tokenize.h). */
#include "engine/tokenize.h"

#include "common/utf8.h"

#include <stdbool.h>
#include <stdio.h>
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
        return attn_diag_set(err, "text", "more than %d tokens", SCENE_MAX_TOKENS);
    if (len > SCENE_MAX_TOKEN_BYTES)
        return attn_diag_set(err, "text", "token %d is longer than %d bytes", b->n + 1,
                             SCENE_MAX_TOKEN_BYTES);
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        char **items = realloc(b->items, (size_t)cap * sizeof(*items));
        if (!items)
            return attn_diag_set(err, "text", "out of memory");
        b->items = items;
        b->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t)
        return attn_diag_set(err, "text", "out of memory");
    memcpy(t, s, len);
    t[len] = '\0';
    b->items[b->n++] = t;
    return 0;
}

/* The tokenizer kinds' names: each declared here once. gpt2 names GPT-2's BPE, a tokenizer; the
 * checkpoint families' names are src/pretrained's registry's. */
static const char *const KIND_NAMES[] = {
    [TOKENIZER_WHITESPACE] = "whitespace",
    [TOKENIZER_WORDS] = "words",
    [TOKENIZER_CHARS] = "chars",
    [TOKENIZER_GPT2] = "gpt2",
    [TOKENIZER_HF] = "hf",
};

const char *attn_tokenizer_name(enum attn_tokenizer t)
{
    size_t i = (size_t)t;
    return i < sizeof(KIND_NAMES) / sizeof(KIND_NAMES[0]) && KIND_NAMES[i] ? KIND_NAMES[i] : "?";
}

int attn_tokenize(char ***out, int *n, const char *text, enum attn_tokenizer t, struct diag *err)
{
    struct tokbuf b = {0};
    const char *p = text;
    /* Validate once so every branch below can step by code point safely. */
    for (const char *q = text; *q;) {
        uint32_t cp;
        int l = attn_utf8_decode(q, &cp);
        if (!l)
            return attn_diag_set(err, "text", "invalid UTF-8 at byte %d", (int)(q - text));
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
            return attn_diag_set(err, "tokenizer", "the %s tokenizer needs its vocabulary",
                                 attn_tokenizer_name(t));
        case TOKENIZER_CHARS: {
            uint32_t cp;
            p += attn_utf8_decode(p, &cp); /* valid: checked above */
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

/* ---- words a vocabulary splits into bytes -------------------------------------------------- */

enum char_class { CC_OTHER, CC_SPACE, CC_LETTER, CC_DIGIT };

static enum char_class class_of(unsigned char c)
{
    if (c == ' ')
        return CC_SPACE;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
        return CC_LETTER; /* any byte of a non-ASCII character: a letter, for the most part */
    if (c >= '0' && c <= '9')
        return CC_DIGIT;
    return CC_OTHER;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A label "<C3>" or "<C3><A9>": bytes that are not text on their own (a letter's halves). */
static int hex_bytes(const char *t)
{
    size_t len = strlen(t);
    if (len == 0 || len % 4 != 0)
        return 0;
    for (size_t i = 0; i < len; i += 4)
        if (t[i] != '<' || t[i + 3] != '>' || hex_digit(t[i + 1]) < 0 || hex_digit(t[i + 2]) < 0)
            return 0;
    return (int)(len / 4);
}

static enum char_class first_class(const char *t)
{
    return hex_bytes(t) ? CC_LETTER : class_of((unsigned char)t[0]);
}

static enum char_class last_class(const char *t)
{
    size_t len = strlen(t);
    return hex_bytes(t) || len == 0 ? CC_LETTER : class_of((unsigned char)t[len - 1]);
}

static bool single_byte(const char *t)
{
    return strlen(t) == 1 || hex_bytes(t) == 1;
}

/* The word as the user typed it: a byte token's label ("<C3>") is its byte again, so the
 * halves of a character the vocabulary split ("na" "<C3>" "<AF>" "ve") join into it ("naïve");
 * a byte that is no part of a whole character stays its label. */
static void word_text(char *out, size_t size, char *const *tokens, int first, int end)
{
    char raw[96];
    size_t n = 0;
    for (int i = first; i < end && n + 1 < sizeof(raw); i++) {
        const char *t = tokens[i];
        if (i == first && t[0] == ' ')
            t++; /* the space before the word */
        int bytes = hex_bytes(t);
        for (int k = 0; k < bytes && n + 1 < sizeof(raw); k++)
            raw[n++] = (char)(hex_digit(t[4 * k + 1]) * 16 + hex_digit(t[4 * k + 2]));
        for (size_t k = 0; !bytes && t[k] && n + 1 < sizeof(raw); k++)
            raw[n++] = t[k];
    }
    raw[n] = '\0';
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size;) {
        uint32_t cp;
        int len = attn_utf8_decode(raw + i, &cp);
        if (len > 0) {
            memcpy(out + o, raw + i, (size_t)len);
            o += (size_t)len;
            i += (size_t)len;
        } else {
            o += (size_t)snprintf(out + o, size - o, "<%02X>", (unsigned char)raw[i]);
            i++;
        }
    }
    out[o < size ? o : size - 1] = '\0';
}

/* One word: tokens [first, end). */
static void describe_word(char *out, size_t size, char *const *tokens, int first, int end,
                          bool alone)
{
    char word[160];
    word_text(word, sizeof(word), tokens, first, end);
    int bytes = 0;
    for (int i = first; i < end; i++)
        bytes += single_byte(tokens[i]);
    int count = end - first;
    char what[64];
    if (bytes == count)
        snprintf(what, sizeof(what), "%d byte tokens", count);
    else
        snprintf(what, sizeof(what), "%d tokens, %d single byte%s", count, bytes,
                 bytes == 1 ? "" : "s");
    if (alone)
        snprintf(out, size, "\u201c%s\u201d is not in this model's vocabulary: %s", word, what);
    else
        snprintf(out, size, "\u201c%s\u201d (%s)", word, what);
}

int attn_tokens_unknown_words(char *out, size_t size, char *const *tokens, int n)
{
    if (size)
        out[0] = '\0';
    /* The words: [start[k], start[k + 1]) for the reported ones. */
    int found = 0, first_found = -1, first_end = -1;
    char list[1024] = "";
    size_t o = 0;
    for (int i = 0; i < n;) {
        int end = i + 1;
        while (end < n) {
            enum char_class next = first_class(tokens[end]);
            if (next != CC_LETTER && next != CC_DIGIT)
                break;
            bool lone_space = strcmp(tokens[end - 1], " ") == 0 && end - 1 == i;
            if (!lone_space && last_class(tokens[end - 1]) != next)
                break;
            end++;
        }
        int bytes = 0;
        for (int k = i; k < end; k++)
            bytes += single_byte(tokens[k]) && strcmp(tokens[k], " ") != 0;
        /* said when most of its pieces are single bytes: a subword vocabulary
           (models/english) spells "Your" as "Y" "our", which is no news */
        if (end - i > 1 && 2 * bytes > end - i) {
            if (found++ == 0) {
                first_found = i;
                first_end = end;
            }
            char one[200];
            describe_word(one, sizeof(one), tokens, i, end, false);
            if (o < sizeof(list))
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", one);
        }
        i = end;
    }
    if (found == 1)
        describe_word(out, size, tokens, first_found, first_end, true);
    else if (found > 1)
        snprintf(out, size, "%d words are not in this model's vocabulary: %s", found, list);
    return found;
}
