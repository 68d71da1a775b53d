/* tokenize: sentence -> tokens, for the three tokenizers a scene can name.
 *
 * Deliberately simple and predictable (this is a teaching tool, not BPE): what a learner types
 * is what they see on the heatmap axes.
 */
#ifndef ATTNSCOPE_TOKENIZE_H
#define ATTNSCOPE_TOKENIZE_H

#include "common/diag.h"

#define SCENE_MAX_TOKENS      8192
#define SCENE_MAX_TOKEN_BYTES 256

/* GPT2: GPT-2's byte-level BPE from a vocabulary (src/pretrained), through the scene's backing.
 * HF: a Hugging Face tokenizer.json (src/pretrained/hftok.h), the same way. */
enum attn_tokenizer {
    TOKENIZER_WHITESPACE,
    TOKENIZER_WORDS,
    TOKENIZER_CHARS,
    TOKENIZER_GPT2,
    TOKENIZER_HF
};

/* Whether t reads a vocabulary (gpt2, hf): its tokens and ids come from the scene's backing. */
static inline int attn_tokenizer_has_vocab(enum attn_tokenizer t)
{
    return t == TOKENIZER_GPT2 || t == TOKENIZER_HF;
}

/* *out: n newly allocated UTF-8 strings (free with attn_tokens_free). Fails on more than
 * SCENE_MAX_TOKENS tokens, a token over SCENE_MAX_TOKEN_BYTES, or invalid UTF-8. */
int attn_tokenize(char ***out, int *n, const char *text, enum attn_tokenizer t, struct diag *err);
void attn_tokens_free(char **tokens, int n);
/* Deep copy of a token array; returns NULL on out-of-memory. */
char **attn_tokens_dup(char *const *tokens, int n);

#endif
