/* uni: the Unicode facts Hugging Face's tokenizers relies on, from ICU (libicu).
 *
 * The tokenizers library (Rust) takes its Unicode knowledge from several places, each of its own
 * Unicode version, and an exact port has to follow each one:
 *   - NFC/NFD/NFKC/NFKD and StripAccents: the unicode-normalization-alignments crate, Unicode
 *     9.0: characters assigned later have no decomposition and are not marks there;
 *   - BertNormalizer's control and non-spacing-mark tests, and the punctuation of
 *     BertPreTokenizer and Punctuation: the unicode_categories crate, Unicode 8.0;
 *   - char::is_whitespace, char::is_numeric and char::to_lowercase: Rust's std (Unicode 16);
 *   - the \w and \s of Rust's regex crate (Whitespace, added tokens' single_word).
 * Each test below asks ICU for the property and, where the crate is older, for the character's
 * age (u_charAge), so "a control character as Unicode 8.0 knew it" is a question to ICU, not a
 * table written here. ICU 72 (Debian 12) knows Unicode 15.0: the few characters Unicode 16
 * added with a lowercase form or as a number are the one place where std knows more.
 *
 * Why ICU rather than utf8proc: Rust's char::to_lowercase is the full case mapping
 * (U+0130 -> "i\u0307"), which ICU gives and utf8proc's simple mapping does not; and ICU can
 * restrict normalisation to an older Unicode version (unorm2_openFiltered with [:Age=9.0:]).
 */
#ifndef ATTNSCOPE_UNI_H
#define ATTNSCOPE_UNI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

enum uni_form { UNI_NFC, UNI_NFD, UNI_NFKC, UNI_NFKD };

/* Opens ICU's normalisers once (thread-safe, idempotent). -1 with err when ICU's data is
 * missing. */
int attn_uni_init(struct diag *err);

bool attn_uni_is_whitespace(uint32_t c);   /* Rust char::is_whitespace: White_Space */
bool attn_uni_is_numeric(uint32_t c);      /* Rust char::is_numeric: Nd, Nl, No */
bool attn_uni_is_word(uint32_t c);         /* Rust regex \w: Alphabetic, M, Nd, Pc, Join_Control */
bool attn_uni_bert_is_control(uint32_t c); /* is_other (Cc Cf Co Cs, 8.0) but \t \n \r */
bool attn_uni_bert_is_punctuation(uint32_t c); /* ASCII punctuation, or P* as of 8.0 */
bool attn_uni_bert_is_nonspacing(uint32_t c);  /* Mn as of 8.0 */
bool attn_uni_is_combining_mark(uint32_t c);   /* Mn Mc Me as of 9.0 (StripAccents) */
bool attn_uni_is_chinese(uint32_t c); /* BertNormalizer's CJK blocks (ranges of its code) */

/* Rust char::to_lowercase: the full lowercase of one character, out gets up to 3 characters;
 * returns how many. */
int attn_uni_lower(uint32_t c, uint32_t out[3]);

/* Appends the normal form (Unicode 9.0, see above) of UTF-8 text[0..len) to *out; *n counts
 * bytes, *cap is the buffer's size. seg gets, for every output byte, the input byte where its
 * normalisation segment starts (segments never split a character and its marks). Returns 0,
 * or -1 (out of memory, or ICU failed) with err. */
int attn_uni_normalize(char **out, uint32_t **seg, size_t *n, enum uni_form form, const char *text,
                       size_t len, struct diag *err);

#endif
