/* spm: SentencePiece's own model files (spiece.model; Marian's source.spm and target.spm), read
 * and run as the SentencePiece library runs them.
 *
 * A .model is a protobuf ModelProto: the pieces with their scores and types, the trainer's spec
 * (the model's kind, byte fallback, whitespace as a suffix) and the normalizer's (the precompiled
 * charsmap and three whitespace switches). Encoding is the library's EncodeAsPieces: its
 * normalizer (the longest charsmap rule at each byte, user-defined symbols kept whole, extra
 * spaces dropped, spaces as U+2581, a dummy prefix), then the Unigram model's Viterbi in float as
 * the library's optimised encoder computes it, then its neighbouring unknowns merged, or with byte
 * fallback spelled as <0xXX> pieces. This is not the Precompiled normalizer of tokenizer.json
 * (hftok), which cuts grapheme clusters first: the two differ on combining marks.
 *
 * Only the Unigram kind is read; a BPE, WORD or CHAR model, and a denormalizer (a rule for
 * decoding), are refused by name. tests/tokenizers checks the pieces against the library itself
 * (Debian's python3-sentencepiece) on real models. A loaded struct spm is never changed.
 */
#ifndef ATTNSCOPE_SPM_H
#define ATTNSCOPE_SPM_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"

#define SPM_MAX_FILE_BYTES (64u << 20) /* a 250,000-piece model is about 5 MB */
#define SPM_MAX_PIECES     (1 << 22)   /* as tokenizer.json's vocabularies (hftok.h) */
/* Normalizing may make a text of n bytes at most n * GROWTH + SLACK bytes long (a charsmap's
 * strings may be long), as hftok's normalizer. */
#define SPM_NORM_GROWTH 16
#define SPM_NORM_SLACK  1024

struct spm; /* opaque */

/* Reads a ModelProto from path (or from b[0..len), name for messages). Errors name the file and,
 * for a broken protobuf, the byte. */
int attn_spm_load(struct spm **out, const char *path, struct diag *err);
int attn_spm_load_bytes(struct spm **out, const unsigned char *b, size_t len, const char *name,
                        struct diag *err);
void attn_spm_free(struct spm *m);

/* One piece of an encoding: its string (the normalized text it covers: "▁Hallo"; an unknown
 * run's own characters, not "<unk>"; a byte fallback's "<0xE2>") and its id in the model. */
struct spm_piece {
    const char *s;
    size_t len;
    int id;
};

struct spm_pieces {
    struct spm_piece *v;
    int n;
    char *norm; /* the normalized text the pieces point into */
};

/* The pieces of UTF-8 text[0..len) as EncodeAsPieces gives them. Fails only when out of memory
 * or when normalizing would make the text absurdly long. */
int attn_spm_encode(struct spm_pieces *out, const struct spm *m, const char *text, size_t len,
                    struct diag *err);
void attn_spm_pieces_free(struct spm_pieces *p);

/* The pieces' count, a piece's string (NULL past them), and whether id is the unknown piece. */
int attn_spm_size(const struct spm *m);
const char *attn_spm_piece(const struct spm *m, int id, size_t *len);
bool attn_spm_is_unknown(const struct spm *m, int id);

#endif
