/* pieces: a string -> id hash and SentencePiece's precompiled charsmap (see pieces.h). */
#include "pretrained/pieces.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* ---- the vocabulary ------------------------------------------------------------------------ */

/* The token a + b (hf_hash h), or -1. */
int attn_hf_vocab_find_parts(const struct hf_vocab *v, uint64_t h, const char *a, size_t a_len,
                             const char *b, size_t b_len)
{
    if (!v->slots)
        return -1;
    for (size_t i = hf_hash_slot(h) & v->mask;; i = (i + 1) & v->mask) {
        int id = v->slots[i];
        if (id < 0)
            return -1;
        if (v->len[id] == a_len + b_len && memcmp(v->tok[id], a, a_len) == 0 &&
            memcmp(v->tok[id] + a_len, b, b_len) == 0)
            return id;
    }
}

int attn_hf_vocab_find(const struct hf_vocab *v, const char *s, size_t len)
{
    return attn_hf_vocab_find_parts(v, hf_hash_more(0, s, len), s, len, "", 0);
}

void attn_hf_vocab_free(struct hf_vocab *v)
{
    for (int i = 0; v->tok && i < v->n; i++)
        free(v->tok[i]);
    free(v->tok);
    free(v->len);
    free(v->slots);
    memset(v, 0, sizeof(*v));
}

int attn_hf_vocab_alloc(struct hf_vocab *v, size_t ids, size_t count)
{
    v->n = (int)ids;
    v->count = (int)count;
    v->tok = calloc(ids, sizeof(*v->tok));
    v->len = calloc(ids, sizeof(*v->len));
    size_t slots = 16;
    while (slots < count * 2)
        slots *= 2;
    v->slots = malloc(slots * sizeof(*v->slots));
    v->mask = slots - 1;
    if (!v->tok || !v->len || !v->slots)
        return -1;
    memset(v->slots, 0xFF, slots * sizeof(*v->slots));
    return 0;
}

int attn_hf_vocab_set(struct hf_vocab *v, int id, const char *s, size_t len)
{
    if (!(v->tok[id] = malloc(len + 1)))
        return -1;
    memcpy(v->tok[id], s, len);
    v->tok[id][len] = '\0';
    v->len[id] = len;
    size_t i = hf_hash_slot(hf_hash_more(0, s, len)) & v->mask;
    while (v->slots[i] >= 0)
        i = (i + 1) & v->mask;
    v->slots[i] = id;
    return 0;
}

/* model.vocab: every token and an id, each id once. The ids may leave gaps, as the library
 * allows (a BPE's vocabulary is a map; cl100k_base's converted file has 100,263 tokens with ids up
 * to 100,276): an id no token has is no token. */

/* ---- the charsmap -------------------------------------------------------------------------- */

/* SentencePiece's precompiled charsmap: a little-endian u32 (the trie's size in bytes), the trie
 * (darts-clone's double array of little-endian u32 units), then the pool of normalized strings.
 * The crate reads any such blob and panics on a walk that leaves the trie or a string that starts
 * outside the pool; here the whole blob is checked once, so that no text can make such a walk:
 * every unit a byte can lead to (and the root) must have the 256 units of its children inside the
 * trie, and every value a key can have must start a character of the pool (or be its end: the
 * empty string). The pool must be UTF-8 (the crate refuses it otherwise). */
int attn_hf_charsmap_read(struct hf_charsmap *n, const unsigned char *blob, size_t len, char *msg,
                          size_t size)
{
    if (len < 4)
        return snprintf(msg, size,
                        "the charsmap is %zu bytes, too short to hold its trie's size (4 bytes)",
                        len),
               -1;
    uint32_t tsize = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 |
                     (uint32_t)blob[3] << 24;
    if (tsize % 4 != 0)
        return snprintf(msg, size,
                        "the charsmap's trie is %" PRIu32
                        " bytes, not a whole number of 4-byte units",
                        tsize),
               -1;
    if (tsize > len - 4)
        return snprintf(msg, size,
                        "the charsmap's trie is %" PRIu32
                        " bytes, more than the %zu bytes after its size",
                        tsize, len - 4),
               -1;
    if (tsize == 0)
        return snprintf(msg, size, "the charsmap's trie is empty (it has no root)"), -1;
    n->n_units = tsize / 4;
    n->pool_len = len - 4 - tsize;
    n->units = malloc(n->n_units * sizeof(*n->units));
    n->pool = malloc(n->pool_len + 1);
    if (!n->units || !n->pool)
        return snprintf(msg, size, "out of memory"), -1;
    for (size_t i = 0; i < n->n_units; i++) {
        const unsigned char *b = blob + 4 + 4 * i;
        n->units[i] =
            (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    }
    memcpy(n->pool, blob + 4 + tsize, n->pool_len);
    n->pool[n->pool_len] = '\0';
    for (size_t i = 0; i < n->pool_len;) {
        char tmp[5] = {0};
        size_t avail = n->pool_len - i;
        memcpy(tmp, n->pool + i, avail < 4 ? avail : 4);
        uint32_t cp;
        int k = n->pool[i] == '\0' ? 1 : attn_utf8_decode(tmp, &cp);
        if (k <= 0)
            return snprintf(msg, size,
                            "the charsmap's normalized strings are not UTF-8 (at byte %zu of them)",
                            i),
                   -1;
        i += (size_t)k;
    }
    for (size_t q = 0; q < n->n_units; q++) {
        uint32_t u = n->units[q], l = hf_da_label(u);
        if (q != 0 && (l == 0 || l > 0xFF))
            continue; /* a leaf, or a unit no byte leads to (the walk stops at a NUL) */
        size_t kids = (size_t)(q ^ hf_da_offset(u));
        if ((kids | 0xFF) >= n->n_units)
            return snprintf(msg, size,
                            "the charsmap's trie is broken: unit %zu has its children at %zu, "
                            "outside the trie's %zu units",
                            q, kids & ~(size_t)0xFF, n->n_units),
                   -1;
        if (q == 0 || !hf_da_has_leaf(u))
            continue;
        uint32_t at = hf_da_value(n->units[kids]);
        if (at > n->pool_len)
            return snprintf(
                       msg, size,
                       "the charsmap's trie is broken: unit %zu's string starts at byte %" PRIu32
                       ", past the %zu bytes of normalized strings",
                       q, at, n->pool_len),
                   -1;
        if (at < n->pool_len && ((unsigned char)n->pool[at] & 0xC0) == 0x80)
            return snprintf(
                       msg, size,
                       "the charsmap's trie is broken: unit %zu's string starts at byte %" PRIu32
                       ", inside a character",
                       q, at),
                   -1;
    }
    return 0;
}

void attn_hf_charsmap_free(struct hf_charsmap *m)
{
    free(m->units);
    free(m->pool);
    memset(m, 0, sizeof(*m));
}
