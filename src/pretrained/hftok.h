/* hftok: Hugging Face's tokenizer.json, exact to the tokenizers library.
 *
 * A tokenizer.json names a pipeline: added tokens are cut out of the text first, the rest is
 * normalised, pre-tokenised into pieces, each piece turned into ids by the model (BPE,
 * WordPiece or Unigram), and a post-processor adds the special tokens ([CLS] ... [SEP], <s>). This
 * module reads the components Llama, Mistral, Qwen, SmolLM, TinyLlama, GPT-2, BERT and the
 * SentencePiece conversions (T5, ALBERT, XLM-R: Unigram, the Precompiled charsmap) use
 * (docs/tokenizers.md lists them) and refuses every other component or option with its JSON
 * path, so a file is either read in full or not at all. tokenizer_config.json, when it is given,
 * may turn BOS and EOS on or off (add_bos_token, add_eos_token), as transformers does.
 *
 * tests/tokenizers checks it id for id against the tokenizers library itself on the real files
 * of Llama 3, Qwen3, Llama 2, GPT-2, BERT and ALBERT and on variants that use every component.
 * A loaded struct hftok is never changed, so threads may share it.
 */
#ifndef ATTNSCOPE_HFTOK_H
#define ATTNSCOPE_HFTOK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"

#define HFTOK_MAX_FILE_BYTES   (128u << 20) /* tokenizer.json; Qwen's is 11 MB, Gemma's 33 MB */
#define HFTOK_MAX_CONFIG_BYTES (16u << 20)  /* tokenizer_config.json (chat templates) */
#define HFTOK_MAX_VOCAB        (1 << 22)    /* ids must be below this */
/* The normalizer may make a text of n bytes at most n * GROWTH + SLACK bytes long, checked as
 * every step writes: a Sequence of 40 Replace "a" -> "aa" would double "a" past any memory. */
#define HFTOK_NORM_GROWTH 16
#define HFTOK_NORM_SLACK  1024

struct hftok; /* opaque */

/* Reads tokenizer.json at path and, when config_path is not NULL and the file exists,
 * tokenizer_config.json. Errors name the file, with line:col and the JSON path of the value
 * ("pre_tokenizer.pretokenizers[1].type: 'CharDelimiterSplit' is not supported"). */
int attn_hftok_load(struct hftok **out, const char *path, const char *config_path,
                    struct diag *err);
/* The same from bytes in memory (name is the file name for messages; config may be NULL). */
int attn_hftok_load_bytes(struct hftok **out, const char *text, size_t len, const char *name,
                          const char *config, size_t config_len, const char *config_name,
                          struct diag *err);
void attn_hftok_free(struct hftok *t);

/* Marian's tokenizer, from the files its folder dir holds in place of a tokenizer.json:
 * source.spm and target.spm (SentencePiece models, spm.h), vocab.json (piece -> id) and, when it
 * is there, tokenizer_config.json. It encodes as transformers' MarianTokenizer: the special tokens
 * (</s>, <unk>, <pad>, additional_special_tokens) cut out first, a language code (">>de<<") at
 * the start of a piece kept whole, the rest the side's SentencePiece pieces, each piece
 * vocab.json's id (<unk>'s when vocab.json lacks it), </s> added. */
int attn_hftok_load_marian(struct hftok **out, const char *dir, struct diag *err);

/* One encoded text: n ids, each with its type id (0 for the first sequence, 1 for a pair's
 * second with BERT's template) and whether the post-processor added it. */
struct hftok_encoding {
    int *ids;
    int *type_ids;
    unsigned char *special;
    int n;
};
void attn_hftok_encoding_free(struct hftok_encoding *e);

/* Encodes UTF-8 text (and pair, when not NULL, as the second sequence) as the tokenizers
 * library's encode(text, pair, add_special_tokens) does. Text that is not UTF-8 is refused with
 * the byte offset of the first bad byte. */
int attn_hftok_encode(struct hftok_encoding *out, const struct hftok *t, const char *text,
                      size_t len, const char *pair, size_t pair_len, bool add_special_tokens,
                      struct diag *err);
/* The same for one side of a translation: Marian's tokenizer reads the source language with
 * source.spm and the target with target.spm (transformers' text_target); every other tokenizer
 * reads both alike. attn_hftok_encode is the source's. */
enum hftok_side { HFTOK_SOURCE, HFTOK_TARGET };
int attn_hftok_encode_side(struct hftok_encoding *out, const struct hftok *t, enum hftok_side side,
                           const char *text, size_t len, const char *pair, size_t pair_len,
                           bool add_special_tokens, struct diag *err);

/* One more than the largest id of the vocabulary and the added tokens. */
int attn_hftok_vocab_size(const struct hftok *t);
/* The model's unknown token's id (WordPiece's [UNK], a BPE's <unk>), or -1 without one. */
int attn_hftok_unk_id(const struct hftok *t);
/* The token's string as tokenizer.json writes it ("Ġthe", "▁the", "##ing", "<s>"), *len bytes;
 * NULL for an id no token has. */
const char *attn_hftok_token(const struct hftok *t, int id, size_t *len);
/* The id of a token as tokenizer.json writes it (added tokens first), or -1. */
int attn_hftok_token_id(const struct hftok *t, const char *token, size_t len);

/* A printable label for display and CSV (always NUL-terminated, size > 0): what the token
 * stands for in the text, through the decoder's per-token steps (ByteLevel's bytes, Metaspace's
 * and Replace's spaces, ByteFallback's <0x0A> bytes; WordPiece's "##" stays, it says the token
 * continues a word), written like GPT-2's labels (attn_bpe_label_bytes: <XX> for bytes that are not
 * printable text). An added token is its content; an id no token has is "<unused N>". */
void attn_hftok_token_label(char *out, size_t size, const struct hftok *t, int id);
/* The bytes token id stands for in the text (the label's, before any is written as <XX>), at
 * most size of them into out (not terminated); how many. A WordPiece "##" stays, as in the label;
 * 0 for an id no token has. Generation appends them to the text. first: the token starts the
 * text, where the decoder drops what the tokenizer put in front (Metaspace's "▁" when it
 * prepends one; Strip's leading characters after Fuse, as Llama 2's decoder). */
size_t attn_hftok_token_bytes(char *out, size_t size, const struct hftok *t, int id, bool first);

#endif
