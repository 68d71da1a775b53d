/* bpemerge: the merge loop of byte-pair encoding (see bpemerge.h). */
#include "pretrained/bpemerge.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A pair of neighbouring symbols waiting in the heap: node pos, merge table entry e. */
struct bpe_cand {
    int rank, pos, e;
};

static uint64_t hash_pair(int a, int b)
{
    uint64_t h = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) * 0x9E3779B97F4A7C15u;
    return h ^ (h >> 31);
}

static size_t slot_of(const struct bpe_merges *m, int a, int b)
{
    size_t i = hash_pair(a, b) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        int e = m->slots[i];
        if (e < 0 || (m->a[e] == a && m->b[e] == b))
            return i;
    }
}

static int rehash(struct bpe_merges *m, size_t slots)
{
    int *s = malloc(slots * sizeof(*s));
    if (!s)
        return -1;
    memset(s, 0xFF, slots * sizeof(*s));
    free(m->slots);
    m->slots = s;
    m->mask = slots - 1;
    for (int e = 0; e < m->n; e++)
        m->slots[slot_of(m, m->a[e], m->b[e])] = e;
    return 0;
}

int attn_bpe_merges_init(struct bpe_merges *m, size_t expected)
{
    memset(m, 0, sizeof(*m));
    size_t slots = 16;
    while (slots < expected * 2)
        slots *= 2;
    return rehash(m, slots);
}

void attn_bpe_merges_free(struct bpe_merges *m)
{
    free(m->slots);
    free(m->a);
    free(m->b);
    free(m->rank);
    free(m->result);
    memset(m, 0, sizeof(*m));
}

int attn_bpe_merges_put(struct bpe_merges *m, int a, int b, int rank, int result)
{
    size_t i = slot_of(m, a, b);
    int e = m->slots[i];
    if (e >= 0) {
        m->rank[e] = rank;
        m->result[e] = result;
        return 0;
    }
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 1024;
        int *na = realloc(m->a, (size_t)cap * sizeof(int));
        if (na)
            m->a = na;
        int *nb = realloc(m->b, (size_t)cap * sizeof(int));
        if (nb)
            m->b = nb;
        int *nr = realloc(m->rank, (size_t)cap * sizeof(int));
        if (nr)
            m->rank = nr;
        int *nx = realloc(m->result, (size_t)cap * sizeof(int));
        if (nx)
            m->result = nx;
        if (!na || !nb || !nr || !nx)
            return -1;
        m->cap = cap;
    }
    e = m->n++;
    m->a[e] = a;
    m->b[e] = b;
    m->rank[e] = rank;
    m->result[e] = result;
    m->slots[i] = e;
    if ((size_t)m->n * 2 > m->mask + 1)
        return rehash(m, (m->mask + 1) * 2);
    return 0;
}

int attn_bpe_merges_find(const struct bpe_merges *m, int a, int b)
{
    return m->slots ? m->slots[slot_of(m, a, b)] : -1;
}

void attn_bpe_scratch_free(struct bpe_scratch *w)
{
    free(w->sym);
    free(w->next);
    free(w->prev);
    free(w->round);
    free(w->heap);
    memset(w, 0, sizeof(*w));
}

static bool cand_less(struct bpe_cand x, struct bpe_cand y)
{
    return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos);
}

static void heap_push(struct bpe_scratch *w, struct bpe_cand c)
{
    int i = w->heap_n++;
    while (i > 0 && cand_less(c, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
}

static struct bpe_cand heap_pop(struct bpe_scratch *w)
{
    struct bpe_cand top = w->heap[0], last = w->heap[--w->heap_n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= w->heap_n)
            break;
        if (c + 1 < w->heap_n && cand_less(w->heap[c + 1], w->heap[c]))
            c++;
        if (!cand_less(w->heap[c], last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->heap_n > 0)
        w->heap[i] = last;
    return top;
}

static void push_pair(struct bpe_scratch *w, const struct bpe_merges *m, int pos)
{
    if (pos < 0 || w->next[pos] < 0)
        return;
    int e = attn_bpe_merges_find(m, w->sym[pos], w->sym[w->next[pos]]);
    if (e >= 0)
        heap_push(w, (struct bpe_cand){m->rank[e], pos, e});
}

static void *grow(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q;
}

/* Joins node p with its right neighbour by entry e, then queues the pairs the join made. */
static void join(struct bpe_scratch *w, const struct bpe_merges *m, int p, int e)
{
    int q = w->next[p];
    w->sym[p] = m->result[e];
    w->next[p] = w->next[q];
    if (w->next[q] >= 0)
        w->prev[w->next[q]] = p;
    w->sym[q] = -1;
    w->next[q] = -1;
    w->prev[q] = -1;
    push_pair(w, m, w->prev[p]);
    push_pair(w, m, p);
}

int attn_bpe_merge(int *syms, int n, int *out_n, const struct bpe_merges *m, enum bpe_order order,
                   struct bpe_scratch *w)
{
    *out_n = n;
    if (n < 2)
        return 0;
    size_t need = (size_t)n;
    if (need > w->cap) {
        int *s = grow(w->sym, need * sizeof(int));
        if (s)
            w->sym = s;
        int *nx = grow(w->next, need * sizeof(int));
        if (nx)
            w->next = nx;
        int *pv = grow(w->prev, need * sizeof(int));
        if (pv)
            w->prev = pv;
        int *rd = grow(w->round, need * sizeof(int));
        if (rd)
            w->round = rd;
        /* each node is queued at most once per rank its left symbol can take: 3 per node is
         * what the loop below can have waiting at once (a pair, and the two a join makes) */
        struct bpe_cand *hp = grow(w->heap, 3 * need * sizeof(*w->heap));
        if (hp)
            w->heap = hp;
        if (!s || !nx || !pv || !rd || !hp)
            return -1;
        w->cap = need;
    }
    for (int i = 0; i < n; i++) {
        w->sym[i] = syms[i];
        w->next[i] = i + 1 < n ? i + 1 : -1;
        w->prev[i] = i - 1;
    }
    w->heap_n = 0;
    for (int i = 0; i + 1 < n; i++)
        push_pair(w, m, i);

    while (w->heap_n > 0) {
        if (order == BPE_IMMEDIATE) {
            struct bpe_cand c = heap_pop(w);
            int p = c.pos, q = w->next[p];
            /* stale once a merge changed either side (or consumed p) */
            if (w->sym[p] != m->a[c.e] || q < 0 || w->sym[q] != m->b[c.e])
                continue;
            join(w, m, p, c.e);
            continue;
        }
        /* BPE_ROUNDS: symbols at a node only grow, so a rank is queued at most once per node:
         * a round holds at most n positions, and comes out of the heap in position order. */
        int rank = w->heap[0].rank, taken = 0, e = w->heap[0].e;
        while (w->heap_n > 0 && w->heap[0].rank == rank)
            w->round[taken++] = heap_pop(w).pos;
        for (int t = 0; t < taken; t++) {
            int p = w->round[t], q = w->next[p];
            if (w->sym[p] != m->a[e] || q < 0 || w->sym[q] != m->b[e])
                continue;
            join(w, m, p, e);
        }
    }
    int k = 0;
    for (int i = 0; i >= 0; i = w->next[i])
        syms[k++] = w->sym[i];
    *out_n = k;
    return 0;
}
