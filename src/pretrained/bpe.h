/* bpe: GPT-2's byte-level BPE tokenizer, exact to OpenAI's encoder.py.
 *
 * Reads Hugging Face's vocab.json (token -> id, tokens written in GPT-2's byte-to-character
 * mapping: "Ġthe" is " the") and merges.txt (one merge "a b" per line, the rank is the line
 * order). Encoding splits the text with GPT-2's pre-tokenising regex (PCRE2, with Python's
 * `regex` module's meaning of \s), then merges each piece's bytes by lowest rank.
 * tests/test_bpe.c checks it id for id against the table in tests/fixtures/gpt2-tokenizer.
 *
 * A loaded struct bpe is never changed, so threads may share it.
 */
#ifndef ATTNSCOPE_BPE_H
#define ATTNSCOPE_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

#define BPE_MAX_FILE_BYTES (64u << 20) /* vocab.json and merges.txt each; GPT-2's are 1 MB */
#define BPE_MAX_VOCAB      (1 << 22)   /* ids must be below this */

struct bpe; /* opaque */

/* Loads vocab.json and merges.txt. A missing file, a wrong format or a token that cannot be
 * GPT-2's (a character outside the 256 byte characters, a repeated id) is an error naming the
 * file, with line:col where one applies (JSON syntax, every line of merges.txt). Each symbol
 * of merges.txt must be a token of vocab.json or made by an earlier line, and no merge may
 * come twice. */
int attn_bpe_load(struct bpe **out, const char *vocab_path, const char *merges_path,
                  struct diag *err);
void attn_bpe_free(struct bpe *b);

/* Encodes len bytes of UTF-8 text into *n token ids, a malloc'd array the caller frees (never
 * NULL on success, even for n == 0). Text that is not UTF-8 is refused with the byte offset of
 * the first bad byte: GPT-2 tokenises Unicode text, and bytes that are not text have no
 * pre-tokenisation to follow. A piece whose merges end in a symbol vocab.json lacks (only a
 * broken vocabulary has one) is an error naming it. Special tokens are not looked for:
 * "<|endoftext|>" in the text is plain text, as in encoder.py. */
int attn_bpe_encode(int **ids, int *n, const struct bpe *b, const char *text, size_t len,
                    struct diag *err);
/* attn_bpe_encode that also gives each token's byte span in text: token i is the bytes
 * (*starts)[i] .. (*starts)[i + 1] - 1, and (*starts)[*n] == len (n + 1 entries, malloc'd).
 * The tokens' bytes always concatenate to the text. */
int attn_bpe_encode_spans(int **ids, size_t **starts, int *n, const struct bpe *b, const char *text,
                          size_t len, struct diag *err);

/* One more than the largest id in vocab.json (GPT-2: 50257). */
int attn_bpe_vocab_size(const struct bpe *b);

/* The token's bytes decoded ("Ġthe" -> " the"), *len of them; may be a partial UTF-8 sequence
 * and may hold a NUL byte (it is also NUL-terminated). NULL and *len = 0 for an id out of range
 * or one vocab.json does not use. */
const char *attn_bpe_token_bytes(const struct bpe *b, int id, size_t *len);

/* The id of a token given as its decoded bytes (" the"), or -1 when the vocabulary has none. */
int attn_bpe_token_id(const struct bpe *b, const char *bytes, size_t len);

/* A printable label for display and CSV, always NUL-terminated (size > 0): the token's text
 * where it is valid UTF-8 and printable, every other byte written as <XX> in upper-case hex.
 * That covers the bytes of a partial or invalid sequence ("\xE2\x80" -> "<E2><80>"), control
 * characters, C1 ones included ("\n" -> "<0A>", "\n\n" -> "<0A><0A>"), and U+2028/U+2029, so
 * a label never breaks a line or moves the cursor: one notation for every byte that is not
 * text, like the <0x0A> byte tokens of other tokenizers. A label that does not fit is cut at a
 * whole character or <XX>, never inside one. An unused id is written "<unused N>". */
void attn_bpe_token_label(char *out, size_t size, const struct bpe *b, int id);
/* The same notation for any len bytes (hftok's labels use it). */
void attn_bpe_label_bytes(char *out, size_t size, const char *bytes, size_t len);

/* GPT-2's bytes_to_unicode, shared with tokenizer.json's ByteLevel (hftok.c): the character
 * byte stands for in vocab.json ("Ġ" U+0120 for a space), and back: the byte cp stands for,
 * or -1 when cp is not one of the 256. */
uint32_t attn_bpe_byte_char(int byte);
int attn_bpe_char_byte(uint32_t cp);

#endif
