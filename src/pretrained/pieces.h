/* pieces: the tables tokenizers look pieces up in, shared by tokenizer.json's tokenizers (hftok)
 * and SentencePiece's own models (spm): a string -> id hash, and SentencePiece's precompiled
 * charsmap (a darts-clone trie of normalization rules). */
#ifndef ATTNSCOPE_PIECES_H
#define ATTNSCOPE_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The vocabulary's hash: a polynomial in the bytes mod 2^64 (h = h * B + byte + 1 for each), so
 * the hash of a piece of a word, with or without a prefix before it, follows in O(1) from the
 * word's prefix sums: WordPiece looks up every length at every start without hashing a byte
 * twice. hf_hash_slot spreads it over the table. */
#define HF_HASH_B 0x100000001b3u

static inline uint64_t hf_hash_more(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = h * HF_HASH_B + (unsigned char)s[i] + 1;
    return h;
}

static inline size_t hf_hash_slot(uint64_t h)
{
    h ^= h >> 33; /* MurmurHash3's finaliser: the polynomial's low bits are its last bytes' */
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return (size_t)h;
}

/* A string -> id table (open addressing over an array of strings). */
struct hf_vocab {
    char **tok; /* id -> token (NUL-terminated copy), NULL for an id no token has */
    size_t *len;
    int n;     /* ids 0 .. n-1: one more than the largest */
    int count; /* the tokens: the library's vocabulary size (ids may leave gaps) */
    int *slots;
    size_t mask;
};

/* v's tables: ids 0 .. ids - 1, a hash of count tokens; token id is s[0, len) (a copy); the id
 * of s[0, len) (or of a + b, whose hf_hash is h), or -1. Alloc and set return 0, or -1 when out
 * of memory. */
int attn_hf_vocab_alloc(struct hf_vocab *v, size_t ids, size_t count);
int attn_hf_vocab_set(struct hf_vocab *v, int id, const char *s, size_t len);
int attn_hf_vocab_find(const struct hf_vocab *v, const char *s, size_t len);
int attn_hf_vocab_find_parts(const struct hf_vocab *v, uint64_t h, const char *a, size_t a_len,
                             const char *b, size_t b_len);
void attn_hf_vocab_free(struct hf_vocab *v);

/* SentencePiece's precompiled charsmap, decoded and checked whole when it is read, so that no
 * walk of its trie reads outside it. */
struct hf_charsmap {
    uint32_t *units; /* the darts-clone double array (the "trie") */
    size_t n_units;
    char *pool; /* the normalized strings, each ended by a NUL or by the pool's end */
    size_t pool_len;
};

/* A unit of the charsmap's double array (darts-clone's DoubleArrayUnit, as SentencePiece and
 * the spm_precompiled crate read it): the offset from a node to the block of its children, the
 * label of the byte that leads to it (bit 31 set: a leaf, which no byte leads to), whether the
 * key that ends here has a value (kept in the unit at the children's offset, label 0), and that
 * value: where its normalized string starts in the pool. */
static inline uint32_t hf_da_offset(uint32_t u)
{
    return (u >> 10) << ((u & (1u << 9)) >> 6);
}

static inline uint32_t hf_da_label(uint32_t u)
{
    return u & ((1u << 31) | 0xFFu);
}

static inline bool hf_da_has_leaf(uint32_t u)
{
    return (u >> 8) & 1u;
}

static inline uint32_t hf_da_value(uint32_t u)
{
    return u & ((1u << 31) - 1);
}

/* The blob (a little-endian u32, the trie's size in bytes; the trie; the pool) into m, checked
 * whole (pieces.c). Returns 0, or -1 with the problem in msg (m may be half filled: free it). */
int attn_hf_charsmap_read(struct hf_charsmap *m, const unsigned char *blob, size_t len, char *msg,
                          size_t size);
void attn_hf_charsmap_free(struct hf_charsmap *m);

#endif
