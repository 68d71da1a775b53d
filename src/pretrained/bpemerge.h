/* bpemerge: the merge loop of byte-pair encoding, shared by GPT-2's tokenizer (bpe.c) and
 * Hugging Face's BPE model (hftok_model.c).
 *
 * Symbols are ints chosen by the caller (bpe.c: its byte strings; hftok: vocabulary ids). A
 * merge table maps a pair of neighbouring symbols to its rank and the symbol it makes. Merging
 * a piece repeatedly joins the pair of neighbours with the lowest rank, left-most first. The two
 * callers differ only in when a pair that a merge creates may be taken:
 *   BPE_ROUNDS     OpenAI's encoder.py: every pair of the current lowest rank is merged, left
 *                  to right, before any pair made meanwhile (one "round" per rank);
 *   BPE_IMMEDIATE  Hugging Face's tokenizers (models/bpe/word.rs): one merge at a time, so a
 *                  pair made by a merge competes at once with the pairs still waiting.
 * With merges learnt in order (a result only takes part in later merges) both give the same
 * tokens; a hand-written table can tell them apart, and each caller follows its own reference.
 *
 * Allocation failures are returned as -1 (the caller reports "out of memory").
 */
#ifndef ATTNSCOPE_BPEMERGE_H
#define ATTNSCOPE_BPEMERGE_H

#include <stddef.h>

enum bpe_order { BPE_ROUNDS, BPE_IMMEDIATE };

/* Pairs -> (rank, result), open addressing. Never changed while pieces are merged, so threads
 * may share a filled table. */
struct bpe_merges {
    int *slots; /* index into the arrays below, -1 empty */
    size_t mask;
    int *a, *b, *rank, *result;
    int n, cap;
};

int attn_bpe_merges_init(struct bpe_merges *m, size_t expected);
void attn_bpe_merges_free(struct bpe_merges *m);
/* Adds (or, for a pair already there, replaces: Hugging Face keeps a repeated pair's last rank)
 * the merge of a then b. Returns 0, or -1 out of memory. */
int attn_bpe_merges_put(struct bpe_merges *m, int a, int b, int rank, int result);
/* The entry of pair (a, b), or -1 when no merge joins them. */
int attn_bpe_merges_find(const struct bpe_merges *m, int a, int b);

/* What one merge call reuses from piece to piece; zero it before first use. */
struct bpe_scratch {
    int *sym, *next, *prev, *round;
    struct bpe_cand *heap;
    int heap_n;
    size_t cap;
};
void attn_bpe_scratch_free(struct bpe_scratch *w);

/* Merges the n symbols of syms in place by m's ranks in the given order; *out_n gets the
 * count left (syms[0 .. *out_n) holds them, in order). Returns 0, or -1 out of memory. */
int attn_bpe_merge(int *syms, int n, int *out_n, const struct bpe_merges *m, enum bpe_order order,
                   struct bpe_scratch *w);

#endif
