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

/* GPT2: GPT-2's byte-level BPE from a vocabulary (src/pretrained), through the scene's backing:
 * a tokenizer, which a checkpoint of any family may read. HF: a Hugging Face tokenizer.json
 * (src/pretrained/hftok.h), the same way. */
enum attn_tokenizer {
    TOKENIZER_WHITESPACE,
    TOKENIZER_WORDS,
    TOKENIZER_CHARS,
    TOKENIZER_GPT2,
    TOKENIZER_HF
};

/* t's name as a scene writes it (tokenizer: words; {kind: gpt2, ...}): whitespace, words,
 * chars, gpt2 or hf. The kinds' table in tokenize.c declares each name once; the scene loader
 * and writer ask it. */
const char *attn_tokenizer_name(enum attn_tokenizer t);

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

/* The words a vocabulary tokenizer (gpt2) could not keep whole and fell back to single bytes
 * for, said in a sentence for the message line, print and check:
 *   "“xylophone” is not in this model's vocabulary: 9 tokens, 8 single bytes"
 *   "“qq” is not in this model's vocabulary: 3 byte tokens"
 *   "2 words are not in this model's vocabulary: “qq” (3 byte tokens), “zz” (3 byte tokens)"
 * tokens are the labels of one sentence (a leading space is part of a token, a byte that is not
 * text is "<C3>"). A word is a run of letters (or of digits), with the space before it, as
 * GPT-2's pre-tokeniser cuts them; it is said when it became more than one token and one of them
 * is a single byte (a split into whole pieces, "un" + "believable", is not). out is "" when no
 * word is. Returns the number of such words. */
int attn_tokens_unknown_words(char *out, size_t size, char *const *tokens, int n);

#endif
