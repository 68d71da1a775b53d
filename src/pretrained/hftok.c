/* hftok: running a tokenizer.json (see hftok.h), step for step as the tokenizers library
 * (tokenizers/src/tokenizer/mod.rs: encode_single_sequence, post_process).
 *
 * Text travels as pieces: UTF-8 bytes, each byte with the input offset its character came from
 * (the start of the library's alignments). The offsets decide one thing here: Metaspace's
 * prepend_scheme "first" adds its "▁" only to a piece that starts where the input starts.
 * A normaliser rewrites a piece; a pre-tokenizer cuts pieces into smaller ones (never empty
 * ones); added tokens are pieces of their own that later steps pass by.
 */
#include "pretrained/hftok.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/ubrk.h>
#include <unicode/utext.h>

#include "common/utf8.h"
#include "pretrained/bpe.h"
#include "pretrained/hftok_int.h"
#include "pretrained/spm.h"
#include "pretrained/uni.h"

int attn_hftok_vocab_size(const struct hftok *t)
{
    return t->size;
}

int attn_hftok_unk_id(const struct hftok *t)
{
    return t->model.unk_id;
}

static const struct hf_added *added_of(const struct hftok *t, int id)
{
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id == id)
            return &t->added[i];
    return NULL;
}

const char *attn_hftok_token(const struct hftok *t, int id, size_t *len)
{
    const struct hf_added *a = added_of(t, id);
    if (a) {
        *len = a->len;
        return a->content;
    }
    if (id >= 0 && id < t->vocab.n && t->vocab.tok[id]) {
        *len = t->vocab.len[id];
        return t->vocab.tok[id];
    }
    *len = 0;
    return NULL;
}

int attn_hftok_token_id(const struct hftok *t, const char *token, size_t len)
{
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].len == len && memcmp(t->added[i].content, token, len) == 0)
            return t->added[i].id;
    return attn_hf_vocab_find(&t->vocab, token, len);
}

/* ---- pieces -------------------------------------------------------------------------------- */

struct piece {
    char *s;
    uint32_t *orig; /* per byte: the input offset of its character */
    size_t len;
    uint32_t base; /* where in the input this piece's original text starts */
    int id;        /* an added token's id, or -1 */
    size_t limit;  /* while it is normalised: the most bytes it may grow to (0: no limit) */
};

struct plist {
    struct piece *v;
    int n, cap;
};

/* A piece being written. */
struct sb {
    char *s;
    uint32_t *orig;
    size_t n, cap;
    size_t limit; /* the piece's (0: none) */
    int failed;   /* SB_NO_MEMORY, SB_TOO_LONG */
};

enum { SB_NO_MEMORY = 1, SB_TOO_LONG };

static void sb_put(struct sb *b, const char *p, size_t len, uint32_t orig)
{
    if (b->failed || len == 0)
        return;
    if (b->limit && len > b->limit - b->n) {
        b->failed = SB_TOO_LONG;
        return;
    }
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + len)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (s)
            b->s = s;
        uint32_t *o = realloc(b->orig, cap * sizeof(*o));
        if (o)
            b->orig = o;
        if (!s || !o) {
            b->failed = SB_NO_MEMORY;
            return;
        }
        b->cap = cap;
    }
    memcpy(b->s + b->n, p, len);
    for (size_t i = 0; i < len; i++)
        b->orig[b->n + i] = orig;
    b->n += len;
}

static void sb_putc(struct sb *b, uint32_t cp, uint32_t orig)
{
    char u[4];
    int k = attn_utf8_encode(cp, u);
    sb_put(b, u, (size_t)(k > 0 ? k : 0), orig);
}

/* A normaliser made p longer than its limit (norm_limit). */
static int too_long(const struct piece *p, struct diag *err)
{
    return attn_diag_set(err, "text",
                         "the normalizer makes the text longer than %zu bytes, the most attnscope "
                         "lets it grow to (%d times the text, plus %d bytes)",
                         p->limit, HFTOK_NORM_GROWTH, HFTOK_NORM_SLACK);
}

/* Replaces p's text with b's (b is emptied). */
static int sb_into(struct sb *b, struct piece *p, struct diag *err)
{
    if (b->failed) {
        int failed = b->failed;
        free(b->s);
        free(b->orig);
        memset(b, 0, sizeof(*b));
        return failed == SB_TOO_LONG ? too_long(p, err) : attn_diag_set(err, "", "out of memory");
    }
    if (!b->s) { /* nothing was written: an empty piece, still with its buffers */
        b->s = malloc(1);
        b->orig = malloc(sizeof(*b->orig));
        if (!b->s || !b->orig) {
            free(b->s);
            free(b->orig);
            memset(b, 0, sizeof(*b));
            return attn_diag_set(err, "", "out of memory");
        }
    }
    free(p->s);
    free(p->orig);
    p->s = b->s;
    p->orig = b->orig;
    p->len = b->n;
    memset(b, 0, sizeof(*b));
    return 0;
}

static void plist_free(struct plist *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].s);
        free(l->v[i].orig);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Room for one more piece in l: 0, or -1 out of memory. */
static int plist_reserve(struct plist *l, struct diag *err)
{
    if (l->n < l->cap)
        return 0;
    int cap = l->cap ? l->cap * 2 : 16;
    struct piece *v = realloc(l->v, (size_t)cap * sizeof(*v));
    if (!v)
        return attn_diag_set(err, "", "out of memory");
    l->v = v;
    l->cap = cap;
    return 0;
}

/* Appends a copy of p's bytes [a, b) as a new piece; an empty one is dropped (the library's
 * PreTokenizedString::split does the same). */
static int plist_add(struct plist *l, const struct piece *p, size_t a, size_t b, int id,
                     struct diag *err)
{
    if (b <= a)
        return 0;
    if (plist_reserve(l, err) != 0)
        return -1;
    struct piece *q = &l->v[l->n];
    q->len = b - a;
    q->s = malloc(q->len);
    q->orig = malloc(q->len * sizeof(*q->orig));
    if (!q->s || !q->orig) {
        free(q->s);
        free(q->orig);
        return attn_diag_set(err, "", "out of memory");
    }
    memcpy(q->s, p->s + a, q->len);
    memcpy(q->orig, p->orig + a, q->len * sizeof(*q->orig));
    q->base = p->orig[a];
    q->id = id;
    q->limit = 0;
    l->n++;
    return 0;
}

/* Moves a whole piece into l (p is emptied). */
static int plist_take(struct plist *l, struct piece *p, struct diag *err)
{
    if (p->len == 0) {
        free(p->s);
        free(p->orig);
        memset(p, 0, sizeof(*p));
        return 0;
    }
    if (plist_reserve(l, err) != 0)
        return -1;
    l->v[l->n++] = *p;
    memset(p, 0, sizeof(*p));
    return 0;
}

static uint32_t char_at(const char *s, size_t len, size_t i, int *k)
{
    uint32_t cp = 0;
    char tmp[5] = {0};
    memcpy(tmp, s + i, len - i < 4 ? len - i : 4);
    *k = attn_utf8_decode(tmp, &cp);
    if (*k <= 0)
        *k = 1;
    return cp;
}

/* ---- normalizers --------------------------------------------------------------------------- */

static bool bert_whitespace(uint32_t c)
{
    return c == '\t' || c == '\n' || c == '\r' || attn_uni_is_whitespace(c);
}

static int normalize(struct piece *p, const struct hf_norm *n, struct diag *err);

/* Keeps the characters for which keep() holds, each with its own offset. */
static int filter(struct piece *p, bool (*drop)(uint32_t), struct diag *err)
{
    struct sb b = {.limit = p->limit};
    for (size_t i = 0; i < p->len;) {
        int k;
        uint32_t c = char_at(p->s, p->len, i, &k);
        if (!drop(c))
            sb_put(&b, p->s + i, (size_t)k, p->orig[i]);
        i += (size_t)k;
    }
    return sb_into(&b, p, err);
}

static bool bert_clean_drop(uint32_t c)
{
    return c == 0 || c == 0xFFFD || attn_uni_bert_is_control(c);
}

static int lowercase(struct piece *p, struct diag *err)
{
    struct sb b = {.limit = p->limit};
    for (size_t i = 0; i < p->len;) {
        int k;
        uint32_t c = char_at(p->s, p->len, i, &k), out[3];
        int m = attn_uni_lower(c, out);
        for (int j = 0; j < m; j++)
            sb_putc(&b, out[j], p->orig[i]);
        i += (size_t)k;
    }
    return sb_into(&b, p, err);
}

static int nform(struct piece *p, enum uni_form f, struct diag *err)
{
    char *out;
    uint32_t *seg;
    size_t n;
    if (attn_uni_normalize(&out, &seg, &n, f, p->s, p->len, err) != 0)
        return -1;
    if (p->limit && n > p->limit) { /* a form grows a text 11 times at most (U+FDFA) */
        free(out);
        free(seg);
        return too_long(p, err);
    }
    for (size_t i = 0; i < n; i++)
        seg[i] = p->orig[seg[i]];
    free(p->s);
    free(p->orig);
    p->s = out;
    p->orig = seg;
    p->len = n;
    return 0;
}

static int prepend(struct piece *p, const char *s, size_t len, struct diag *err)
{
    if (p->len == 0)
        return 0;
    struct sb b = {.limit = p->limit};
    sb_put(&b, s, len, p->orig[0]);
    sb_put(&b, p->s, p->len, 0);
    if (!b.failed)
        memcpy(b.orig + len, p->orig, p->len * sizeof(*p->orig));
    return sb_into(&b, p, err);
}

struct repl_ctx {
    struct piece *p;
    struct sb *b;
    size_t last;
    const char *content;
    size_t content_len;
};

static int repl_one(void *vc, size_t start, size_t end)
{
    struct repl_ctx *c = vc;
    struct piece *p = c->p;
    for (size_t i = c->last; i < start; i++)
        sb_put(c->b, p->s + i, 1, p->orig[i]);
    /* the library gives the new text the alignment of the byte before the match's end */
    uint32_t o = end > 0 ? p->orig[end - 1] : p->base;
    sb_put(c->b, c->content, c->content_len, o);
    c->last = end;
    return 0;
}

static int replace(struct piece *p, const pcre2_code *re, const char *content, size_t content_len,
                   struct diag *err)
{
    struct sb b = {.limit = p->limit};
    struct repl_ctx c = {p, &b, 0, content, content_len};
    if (attn_hf_regex_each(re, p->s, p->len, repl_one, &c, err) != 0) {
        free(b.s);
        free(b.orig);
        return -1;
    }
    for (size_t i = c.last; i < p->len; i++)
        sb_put(&b, p->s + i, 1, p->orig[i]);
    return sb_into(&b, p, err);
}

static int strip(struct piece *p, bool left, bool right, struct diag *err)
{
    size_t a = 0, z = p->len;
    while (left && a < z) {
        int k;
        uint32_t c = char_at(p->s, p->len, a, &k);
        if (!attn_uni_is_whitespace(c))
            break;
        a += (size_t)k;
    }
    while (right && z > a) {
        size_t i = z - 1;
        while (i > a && ((unsigned char)p->s[i] & 0xC0) == 0x80)
            i--;
        int k;
        uint32_t c = char_at(p->s, p->len, i, &k);
        if (!attn_uni_is_whitespace(c))
            break;
        z = i;
    }
    if (a == 0 && z == p->len)
        return 0;
    struct sb b = {.limit = p->limit};
    sb_put(&b, p->s + a, z - a, 0);
    if (!b.failed && z > a)
        memcpy(b.orig, p->orig + a, (z - a) * sizeof(*p->orig));
    return sb_into(&b, p, err);
}

static int bert(struct piece *p, const struct hf_norm *n, struct diag *err)
{
    if (n->clean_text) {
        if (filter(p, bert_clean_drop, err))
            return -1;
        struct sb b = {.limit = p->limit};
        for (size_t i = 0; i < p->len;) {
            int k;
            uint32_t c = char_at(p->s, p->len, i, &k);
            if (bert_whitespace(c))
                sb_put(&b, " ", 1, p->orig[i]);
            else
                sb_put(&b, p->s + i, (size_t)k, p->orig[i]);
            i += (size_t)k;
        }
        if (sb_into(&b, p, err))
            return -1;
    }
    if (n->chinese) {
        struct sb b = {.limit = p->limit};
        for (size_t i = 0; i < p->len;) {
            int k;
            uint32_t c = char_at(p->s, p->len, i, &k);
            bool cjk = attn_uni_is_chinese(c);
            if (cjk)
                sb_put(&b, " ", 1, p->orig[i]);
            sb_put(&b, p->s + i, (size_t)k, p->orig[i]);
            if (cjk)
                sb_put(&b, " ", 1, p->orig[i]);
            i += (size_t)k;
        }
        if (sb_into(&b, p, err))
            return -1;
    }
    bool accents = n->strip_accents < 0 ? n->lowercase : n->strip_accents == 1;
    if (accents) {
        if (nform(p, UNI_NFD, err) || filter(p, attn_uni_bert_is_nonspacing, err))
            return -1;
    }
    if (n->lowercase && lowercase(p, err))
        return -1;
    return 0;
}

/* ---- Precompiled: SentencePiece's charsmap ------------------------------------------------- */

/* The normalized string of the shortest key of the charsmap's trie that starts key[0..len) (the
 * crate's common_prefix_search, whose first result it takes; the walk stops at a NUL byte), as
 * an offset into the pool, or -1 when none does. hftok_load.c checked every unit this can
 * reach: no index here leaves the trie. */
static long charsmap_lookup(const struct hf_norm *n, const char *key, size_t len)
{
    const uint32_t *a = n->map.units;
    uint32_t pos = hf_da_offset(a[0]);
    for (size_t i = 0; i < len && key[i] != '\0'; i++) {
        uint32_t c = (unsigned char)key[i];
        pos ^= c;
        uint32_t u = a[pos];
        if (hf_da_label(u) != c)
            return -1;
        pos ^= hf_da_offset(u);
        if (hf_da_has_leaf(u))
            return (long)hf_da_value(a[pos]);
    }
    return -1;
}

/* The library's list of (character, change) for NormalizedString::transform: change 0 replaces
 * the next original character, 1 is a character inserted, -k replaces one and removes k more. */
struct trans {
    struct tr {
        uint32_t c;
        long change;
    } * v;
    size_t n, cap;
    size_t bytes; /* the UTF-8 length of the characters so far */
    size_t limit; /* the piece's (0: none): a charsmap's strings may be long */
    int failed;   /* SB_NO_MEMORY, SB_TOO_LONG */
};

static void trans_push(struct trans *t, uint32_t c)
{
    size_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (t->failed)
        return;
    if (t->limit && k > t->limit - t->bytes) {
        t->failed = SB_TOO_LONG;
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct tr *v = realloc(t->v, cap * sizeof(*v));
        if (!v) {
            t->failed = SB_NO_MEMORY;
            return;
        }
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = (struct tr){c, 0};
    t->bytes += k;
}

static long count_chars(const char *s, size_t len)
{
    long k = 0;
    for (size_t i = 0; i < len; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* precompiled.rs's replace(): old (characters of the text) becomes the pool's string at `at`.
 * The new characters replace the old ones in order; the surplus ones are insertions; when
 * there are fewer, the last new one (or, when there is none, the last character before them,
 * if any) takes the removals. */
static void trans_replace(struct trans *t, const struct hf_norm *n, const char *old, size_t old_len,
                          long at)
{
    const char *s = n->map.pool + at;
    size_t len = strnlen(s, n->map.pool_len - (size_t)at);
    size_t first = t->n;
    for (size_t i = 0; i < len;) {
        int k;
        uint32_t c = char_at(s, len, i, &k);
        trans_push(t, c);
        i += (size_t)k;
    }
    if (t->failed)
        return;
    long diff = (long)(t->n - first) - count_chars(old, old_len);
    if (diff > 0)
        for (size_t i = t->n - (size_t)diff; i < t->n; i++)
            t->v[i].change = 1;
    else if (diff < 0 && t->n > 0)
        t->v[t->n - 1].change += diff;
}

/* The Precompiled normalizer (tokenizers' normalizers/precompiled.rs over the spm_precompiled
 * crate): the text is cut into extended grapheme clusters (ICU's character break iterator: the
 * crate's unicode-segmentation); a cluster shorter than 6 bytes that starts with a key of the
 * trie becomes that key's string, whole, marks after the key included; any other cluster goes
 * character by character, each one that is a key becoming its string. The offsets are the
 * library's: NormalizedString::transform applied to the (character, change) list. */
static int precompiled(struct piece *p, const struct hf_norm *n, struct diag *err)
{
    if (p->len == 0)
        return 0;
    if (p->len > (size_t)INT32_MAX)
        return attn_diag_set(err, "text", "the text is too long for the Precompiled normalizer");
    UErrorCode st = U_ZERO_ERROR;
    UText *ut = utext_openUTF8(NULL, p->s, (int64_t)p->len, &st);
    UBreakIterator *bi = ubrk_open(UBRK_CHARACTER, "root", NULL, 0, &st);
    if (U_SUCCESS(st))
        ubrk_setUText(bi, ut, &st);
    if (U_FAILURE(st)) {
        ubrk_close(bi);
        utext_close(ut);
        return attn_diag_set(err, "", "ICU's grapheme break iterator failed: %s", u_errorName(st));
    }
    struct trans t = {.limit = p->limit};
    bool modified = false;
    for (int32_t a = ubrk_first(bi), b; (b = ubrk_next(bi)) != UBRK_DONE && !t.failed; a = b) {
        const char *g = p->s + a;
        size_t glen = (size_t)(b - a);
        long at = glen < 6 ? charsmap_lookup(n, g, glen) : -1;
        if (at >= 0) {
            trans_replace(&t, n, g, glen, at);
            modified = true;
        } else {
            for (size_t i = 0; i < glen;) {
                int k;
                uint32_t c = char_at(g, glen, i, &k);
                long one = charsmap_lookup(n, g + i, (size_t)k);
                if (one >= 0) {
                    trans_replace(&t, n, g + i, (size_t)k, one);
                    modified = true;
                } else {
                    trans_push(&t, c);
                }
                i += (size_t)k;
            }
        }
    }
    ubrk_close(bi);
    utext_close(ut);
    if (t.failed) {
        free(t.v);
        return t.failed == SB_TOO_LONG ? too_long(p, err) : attn_diag_set(err, "", "out of memory");
    }
    if (!modified) {
        free(t.v);
        return 0;
    }
    /* NormalizedString::transform: each character takes the offset of the original character
     * it replaces; an inserted one, the offset of the byte before (the piece's start at 0) */
    struct sb out = {.limit = p->limit};
    size_t off = 0;
    for (size_t i = 0; i < t.n; i++) {
        uint32_t o;
        if (t.v[i].change > 0) {
            o = off < 1 ? p->base : p->orig[off - 1];
        } else {
            o = off < p->len ? p->orig[off] : p->base;
            for (long k = 0; k <= -t.v[i].change && off < p->len; k++) {
                int len;
                char_at(p->s, p->len, off, &len);
                off += (size_t)len;
            }
        }
        sb_putc(&out, t.v[i].c, o);
    }
    free(t.v);
    return sb_into(&out, p, err);
}

static int normalize_step(struct piece *p, const struct hf_norm *n, struct diag *err)
{
    switch (n->kind) {
    case HN_NFC:
    case HN_NFD:
    case HN_NFKC:
    case HN_NFKD:
        return nform(p, (enum uni_form)(n->kind - HN_NFC), err);
    case HN_LOWERCASE:
        return lowercase(p, err);
    case HN_STRIP_ACCENTS:
        return filter(p, attn_uni_is_combining_mark, err);
    case HN_BERT:
        return bert(p, n, err);
    case HN_PREPEND:
        return prepend(p, n->str, n->str_len, err);
    case HN_REPLACE:
        return replace(p, n->pat.re, n->str, n->str_len, err);
    case HN_STRIP:
        return strip(p, n->left, n->right, err);
    case HN_PRECOMPILED:
        return precompiled(p, n, err);
    case HN_SEQUENCE:
        for (int i = 0; i < n->n; i++)
            if (normalize_step(p, &n->items[i], err))
                return -1;
        return 0;
    }
    return 0;
}

/* The most bytes normalising len bytes may make: real normalisers grow a text a few times at
 * most (NFKD's U+FDFA 11 times, a Replace of ' ' by '▁' 3 times), but a Sequence of Replaces can
 * double it at every step, 40 of them past any memory, so every step's writes are held to this. */
static size_t norm_limit(size_t len)
{
    return len > (SIZE_MAX - HFTOK_NORM_SLACK) / HFTOK_NORM_GROWTH
               ? SIZE_MAX
               : len * HFTOK_NORM_GROWTH + HFTOK_NORM_SLACK;
}

static int normalize(struct piece *p, const struct hf_norm *n, struct diag *err)
{
    p->limit = norm_limit(p->len);
    int rc = normalize_step(p, n, err);
    p->limit = 0;
    return rc;
}

int attn_hf_normalize_text(char **out, size_t *out_len, const struct hftok *t, const char *s,
                           size_t len, struct diag *err)
{
    *out = NULL;
    *out_len = 0;
    struct piece p = {0};
    p.len = len;
    p.s = malloc(len ? len : 1);
    p.orig = malloc((len ? len : 1) * sizeof(*p.orig));
    if (!p.s || !p.orig) {
        free(p.s);
        free(p.orig);
        return attn_diag_set(err, "", "out of memory");
    }
    memcpy(p.s, s, len);
    for (size_t i = 0; i < len; i++)
        p.orig[i] = (uint32_t)i;
    int rc = t->has_norm ? normalize(&p, &t->norm, err) : 0;
    free(p.orig);
    if (rc) {
        free(p.s);
        return -1;
    }
    *out = p.s;
    *out_len = p.len;
    return 0;
}

/* ---- splitting ----------------------------------------------------------------------------- */

/* The matches of a pattern in a piece: contiguous ranges covering it, each a match or not. */
struct mlist {
    size_t *a, *b;
    bool *is;
    int n, cap;
    int failed;
};

static void mpush(struct mlist *m, size_t a, size_t b, bool is)
{
    if (m->failed)
        return;
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 32;
        size_t *na = realloc(m->a, (size_t)cap * sizeof(size_t));
        if (na)
            m->a = na;
        size_t *nb = realloc(m->b, (size_t)cap * sizeof(size_t));
        if (nb)
            m->b = nb;
        bool *ni = realloc(m->is, (size_t)cap * sizeof(bool));
        if (ni)
            m->is = ni;
        if (!na || !nb || !ni) {
            m->failed = 1;
            return;
        }
        m->cap = cap;
    }
    m->a[m->n] = a;
    m->b[m->n] = b;
    m->is[m->n] = is;
    m->n++;
}

static void mfree(struct mlist *m)
{
    free(m->a);
    free(m->b);
    free(m->is);
    memset(m, 0, sizeof(*m));
}

struct rx_ctx {
    struct mlist *m;
    size_t prev;
};

static int rx_one(void *vc, size_t start, size_t end)
{
    struct rx_ctx *c = vc;
    if (c->prev != start)
        mpush(c->m, c->prev, start, false);
    mpush(c->m, start, end, true);
    c->prev = end;
    return 0;
}

/* pattern.rs's find_matches for a regex. */
static int regex_matches(struct mlist *m, const pcre2_code *re, const struct piece *p,
                         struct diag *err)
{
    if (p->len == 0) {
        mpush(m, 0, 0, false);
        return 0;
    }
    struct rx_ctx c = {m, 0};
    if (attn_hf_regex_each(re, p->s, p->len, rx_one, &c, err))
        return -1;
    if (c.prev != p->len)
        mpush(m, c.prev, p->len, false);
    return 0;
}

/* pattern.rs's find_matches for a predicate on characters: each matching character alone. */
static void char_matches(struct mlist *m, bool (*is)(uint32_t), const struct piece *p)
{
    if (p->len == 0) {
        mpush(m, 0, 0, false);
        return;
    }
    size_t last = 0, seen = 0;
    for (size_t i = 0; i < p->len;) {
        int k;
        uint32_t c = char_at(p->s, p->len, i, &k);
        seen = i + (size_t)k;
        if (is(c)) {
            if (last < i)
                mpush(m, last, i, false);
            mpush(m, i, seen, true);
            last = seen;
        }
        i = seen;
    }
    if (seen > last)
        mpush(m, last, seen, false);
}

/* normalizer.rs's split: the matches into pieces by behavior, appended to out. */
static int split_piece(struct plist *out, const struct piece *p, struct mlist *m,
                       enum hf_behavior behavior, bool invert, struct diag *err)
{
    if (m->failed)
        return attn_diag_set(err, "", "out of memory");
    if (invert)
        for (int i = 0; i < m->n; i++)
            m->is[i] = !m->is[i];
    /* (a, b, remove) in order */
    size_t *A = malloc(((size_t)m->n + 1) * sizeof(size_t)),
           *B = malloc(((size_t)m->n + 1) * sizeof(size_t));
    bool *R = malloc(((size_t)m->n + 1) * sizeof(bool));
    int k = 0;
    if (!A || !B || !R) {
        free(A);
        free(B);
        free(R);
        return attn_diag_set(err, "", "out of memory");
    }
    bool prev = false;
    switch (behavior) {
    case HF_ISOLATED:
    case HF_REMOVED:
        for (int i = 0; i < m->n; i++) {
            A[k] = m->a[i];
            B[k] = m->b[i];
            R[k++] = behavior == HF_REMOVED && m->is[i];
        }
        break;
    case HF_CONTIGUOUS:  /* runs of the same kind joined */
    case HF_MERGED_PREV: /* a match joined to what comes before it */
        for (int i = 0; i < m->n; i++) {
            bool join = behavior == HF_CONTIGUOUS ? m->is[i] == prev : m->is[i] && !prev;
            if (join && k > 0) {
                B[k - 1] = m->b[i];
            } else {
                A[k] = m->a[i];
                B[k] = m->b[i];
                R[k++] = false;
            }
            prev = m->is[i];
        }
        break;
    case HF_MERGED_NEXT:
        /* folded from the end, then reversed */
        for (int i = m->n - 1; i >= 0; i--) {
            if (m->is[i] && !prev && k > 0) {
                A[k - 1] = m->a[i];
            } else {
                A[k] = m->a[i];
                B[k] = m->b[i];
                R[k++] = false;
            }
            prev = m->is[i];
        }
        for (int i = 0; i < k / 2; i++) {
            size_t ta = A[i], tb = B[i];
            bool tr = R[i];
            A[i] = A[k - 1 - i];
            B[i] = B[k - 1 - i];
            R[i] = R[k - 1 - i];
            A[k - 1 - i] = ta;
            B[k - 1 - i] = tb;
            R[k - 1 - i] = tr;
        }
        break;
    }
    int rc = 0;
    for (int i = 0; i < k && rc == 0; i++)
        if (!R[i])
            rc = plist_add(out, p, A[i], B[i], -1, err);
    free(A);
    free(B);
    free(R);
    return rc;
}

/* ---- pre-tokenizers ------------------------------------------------------------------------ */

static bool is_bert_space(uint32_t c)
{
    return attn_uni_is_whitespace(c);
}

static int byte_level_map(struct piece *p, struct diag *err)
{
    struct sb b = {0};
    for (size_t i = 0; i < p->len; i++)
        sb_putc(&b, attn_bpe_byte_char((unsigned char)p->s[i]), p->orig[i]);
    return sb_into(&b, p, err);
}

/* Whitespace: the runs of \w+ and [^\w\s]+ (Rust's regex crate), everything else removed. */
static void whitespace_matches(struct mlist *m, const struct piece *p)
{
    if (p->len == 0) {
        mpush(m, 0, 0, false);
        return;
    }
    size_t prev = 0;
    for (size_t i = 0; i < p->len;) {
        int k;
        uint32_t c = char_at(p->s, p->len, i, &k);
        int cls = attn_uni_is_word(c) ? 1 : attn_uni_is_whitespace(c) ? 0 : 2;
        if (cls == 0) {
            i += (size_t)k;
            continue;
        }
        size_t j = i + (size_t)k;
        while (j < p->len) {
            int k2;
            uint32_t d = char_at(p->s, p->len, j, &k2);
            int c2 = attn_uni_is_word(d) ? 1 : attn_uni_is_whitespace(d) ? 0 : 2;
            if (c2 != cls)
                break;
            j += (size_t)k2;
        }
        /* the regex's matches, inverted by the library: matches are kept */
        if (prev != i)
            mpush(m, prev, i, true);
        mpush(m, i, j, false);
        prev = j;
        i = j;
    }
    if (prev != p->len)
        mpush(m, prev, p->len, true);
}

static int pre_tokenize(struct plist *l, const struct hftok *t, const struct hf_pre *pre,
                        struct diag *err);

/* Runs one pre-tokenizer on every piece of l that is not an added token. */
static int pre_tokenize(struct plist *l, const struct hftok *t, const struct hf_pre *pre,
                        struct diag *err)
{
    if (pre->kind == HP_SEQUENCE) {
        for (int i = 0; i < pre->n; i++)
            if (pre_tokenize(l, t, &pre->items[i], err))
                return -1;
        return 0;
    }
    if (pre->kind == HP_BERT) {
        struct hf_pre ws = {.kind = HP_WHITESPACE_SPLIT};
        struct hf_pre pu = {.kind = HP_PUNCTUATION, .behavior = HF_ISOLATED};
        return pre_tokenize(l, t, &ws, err) || pre_tokenize(l, t, &pu, err) ? -1 : 0;
    }
    struct plist out = {0};
    int rc = 0;
    for (int i = 0; i < l->n && rc == 0; i++) {
        struct piece *p = &l->v[i];
        if (p->id >= 0) {
            rc = plist_take(&out, p, err);
            continue;
        }
        struct mlist m = {0};
        switch (pre->kind) {
        case HP_BYTE_LEVEL: {
            if (pre->add_prefix_space && p->len > 0 && p->s[0] != ' ' && prepend(p, " ", 1, err)) {
                rc = -1;
                break;
            }
            int first = out.n;
            if (pre->use_regex) {
                if (regex_matches(&m, t->byte_level_re, p, err) ||
                    split_piece(&out, p, &m, HF_ISOLATED, false, err))
                    rc = -1;
            } else {
                rc = plist_take(&out, p, err);
            }
            for (int k = first; k < out.n && rc == 0; k++)
                rc = byte_level_map(&out.v[k], err);
            break;
        }
        case HP_SPLIT:
            if (regex_matches(&m, pre->pat.re, p, err) ||
                split_piece(&out, p, &m, pre->behavior, pre->invert, err))
                rc = -1;
            break;
        case HP_METASPACE: {
            char rep[4];
            int rl = attn_utf8_encode(pre->replacement, rep);
            struct sb b = {0};
            for (size_t k = 0; k < p->len; k++) {
                if (p->s[k] == ' ')
                    sb_put(&b, rep, (size_t)rl, p->orig[k]);
                else
                    sb_put(&b, p->s + k, 1, p->orig[k]);
            }
            if (sb_into(&b, p, err)) {
                rc = -1;
                break;
            }
            bool starts = p->len >= (size_t)rl && memcmp(p->s, rep, (size_t)rl) == 0;
            if ((pre->prepend == HF_PREPEND_ALWAYS ||
                 (pre->prepend == HF_PREPEND_FIRST && p->base == 0)) &&
                !starts && prepend(p, rep, (size_t)rl, err)) {
                rc = -1;
                break;
            }
            if (pre->split) {
                /* the replacement is one character: matched as such */
                if (p->len == 0) {
                    mpush(&m, 0, 0, false);
                } else {
                    size_t last = 0;
                    for (size_t k = 0; k < p->len;) {
                        int kk;
                        uint32_t c = char_at(p->s, p->len, k, &kk);
                        if (c == pre->replacement) {
                            if (last < k)
                                mpush(&m, last, k, false);
                            mpush(&m, k, k + (size_t)kk, true);
                            last = k + (size_t)kk;
                        }
                        k += (size_t)kk;
                    }
                    if (last < p->len)
                        mpush(&m, last, p->len, false);
                }
                rc = split_piece(&out, p, &m, HF_MERGED_NEXT, false, err);
            } else {
                rc = plist_take(&out, p, err);
            }
            break;
        }
        case HP_WHITESPACE:
            whitespace_matches(&m, p);
            rc = split_piece(&out, p, &m, HF_REMOVED, false, err);
            break;
        case HP_WHITESPACE_SPLIT:
            char_matches(&m, is_bert_space, p);
            rc = split_piece(&out, p, &m, HF_REMOVED, false, err);
            break;
        case HP_DIGITS:
            char_matches(&m, attn_uni_is_numeric, p);
            rc = split_piece(&out, p, &m, pre->individual_digits ? HF_ISOLATED : HF_CONTIGUOUS,
                             false, err);
            break;
        case HP_PUNCTUATION:
            char_matches(&m, attn_uni_bert_is_punctuation, p);
            rc = split_piece(&out, p, &m, pre->behavior, false, err);
            break;
        case HP_BERT:
        case HP_SEQUENCE:
            break;
        }
        mfree(&m);
    }
    if (rc) {
        plist_free(&out);
        return -1;
    }
    plist_free(l);
    *l = out;
    return 0;
}

/* ---- added tokens -------------------------------------------------------------------------- */

/* \w$ and ^\w of Rust's regex crate on a piece's text. */
static bool ends_with_word(const char *s, size_t len)
{
    if (len == 0)
        return false;
    size_t i = len - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    int k;
    return attn_uni_is_word(char_at(s, len, i, &k));
}

static bool starts_with_word(const char *s, size_t len)
{
    int k;
    return len > 0 && attn_uni_is_word(char_at(s, len, 0, &k));
}

/* added_vocabulary.rs's find_matches and split_with_indices: the pieces of p around the added
 * tokens (normalized ones or the others) it holds, leftmost-longest, appended to out. */
static int split_added(struct plist *out, struct piece *p, const struct hftok *t, bool normalized,
                       struct diag *err)
{
    size_t start_offset = 0;
    int rc = 0;
    for (size_t i = 0; i < p->len && rc == 0;) {
        /* the longest token of the set that starts at i */
        int best = -1;
        size_t best_len = 0;
        for (int k = 0; k < t->n_added; k++) {
            const struct hf_added *a = &t->added[k];
            if (a->normalized != normalized)
                continue;
            const char *pat = a->normalized && a->norm ? a->norm : a->content;
            size_t pl = a->normalized && a->norm ? a->norm_len : a->len;
            if (pl > best_len && pl <= p->len - i && memcmp(p->s + i, pat, pl) == 0) {
                best = k;
                best_len = pl;
            }
        }
        if (best < 0 || best_len == 0) {
            int k;
            char_at(p->s, p->len, i, &k);
            i += (size_t)k;
            continue;
        }
        const struct hf_added *a = &t->added[best];
        size_t start = i, stop = i + best_len;
        i = stop; /* the matcher goes on after the match, whatever is done with it */
        if (a->single_word) {
            bool start_space = start == 0 || !ends_with_word(p->s, start);
            bool stop_space = stop == p->len || !starts_with_word(p->s + stop, p->len - stop);
            if (!start_space || !stop_space)
                continue;
        }
        if (a->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t j = ns - 1;
                while (j > 0 && ((unsigned char)p->s[j] & 0xC0) == 0x80)
                    j--;
                int k;
                if (!attn_uni_is_whitespace(char_at(p->s, p->len, j, &k)))
                    break;
                ns = j;
            }
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip) {
            while (stop < p->len) {
                int k;
                if (!attn_uni_is_whitespace(char_at(p->s, p->len, stop, &k)))
                    break;
                stop += (size_t)k;
            }
        }
        if (start_offset < start)
            rc = plist_add(out, p, start_offset, start, -1, err);
        if (rc == 0)
            rc = plist_add(out, p, start, stop, a->id, err);
        start_offset = stop;
    }
    if (rc == 0 && start_offset < p->len)
        rc = plist_add(out, p, start_offset, p->len, -1, err);
    return rc;
}

/* ---- models -------------------------------------------------------------------------------- */

struct ids {
    int *v;
    int n, cap;
    int failed;
};

static void ids_push(struct ids *x, int id)
{
    if (x->failed)
        return;
    if (x->n == x->cap) {
        int cap = x->cap ? x->cap * 2 : 64;
        int *v = realloc(x->v, (size_t)cap * sizeof(int));
        if (!v) {
            x->failed = 1;
            return;
        }
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = id;
}

static int need_unk(const struct hf_model *m, struct diag *err)
{
    char b[120];
    attn_bpe_label_bytes(b, sizeof(b), m->unk, m->unk_len);
    return attn_diag_set(err, "", "the unknown token \"%s\" is needed but is not in the vocabulary",
                         b);
}

/* models/bpe/model.rs: merge_word and tokenize. */
static int bpe_word(struct ids *out, const struct hftok *t, const char *s, size_t len,
                    struct bpe_scratch *w, struct ids *syms, struct diag *err)
{
    const struct hf_model *m = &t->model;
    if (len == 0)
        return 0;
    if (m->ignore_merges) {
        int id = attn_hf_vocab_find(&t->vocab, s, len);
        if (id >= 0) {
            ids_push(out, id);
            return 0;
        }
    }
    syms->n = 0;
    int unk = -1; /* a pending unknown token (fused ones grow into it) */
    char *buf = malloc(m->prefix_len + 4 + m->suffix_len + 1);
    if (!buf)
        return attn_diag_set(err, "", "out of memory");
    for (size_t i = 0; i < len;) {
        int k;
        char_at(s, len, i, &k);
        size_t n = 0;
        if (i > 0 && m->prefix) {
            memcpy(buf, m->prefix, m->prefix_len);
            n = m->prefix_len;
        }
        memcpy(buf + n, s + i, (size_t)k);
        n += (size_t)k;
        if (i + (size_t)k >= len && m->suffix) {
            memcpy(buf + n, m->suffix, m->suffix_len);
            n += m->suffix_len;
        }
        int id = attn_hf_vocab_find(&t->vocab, buf, n);
        if (id >= 0) {
            if (unk >= 0) {
                ids_push(syms, unk);
                unk = -1;
            }
            ids_push(syms, id);
        } else {
            bool done = false;
            if (m->byte_fallback) {
                bool all = true;
                for (size_t b = 0; b < n; b++)
                    all = all && m->byte_ids[(unsigned char)buf[b]] >= 0;
                if (all) {
                    for (size_t b = 0; b < n; b++)
                        ids_push(syms, m->byte_ids[(unsigned char)buf[b]]);
                    done = true;
                }
            }
            if (!done && m->unk) {
                if (m->unk_id < 0) {
                    free(buf);
                    return need_unk(m, err);
                }
                if (unk >= 0 && !m->fuse_unk)
                    ids_push(syms, unk);
                unk = m->unk_id;
            }
            /* no unk_token: the character is dropped, as in the library */
        }
        i += (size_t)k;
    }
    free(buf);
    if (unk >= 0)
        ids_push(syms, unk);
    if (syms->failed)
        return attn_diag_set(err, "", "out of memory");
    int n = syms->n;
    if (attn_bpe_merge(syms->v, syms->n, &n, &m->merges, BPE_IMMEDIATE, w) != 0)
        return attn_diag_set(err, "", "out of memory");
    for (int i = 0; i < n; i++)
        ids_push(out, syms->v[i]);
    return 0;
}

/* The first of m's lengths (longest first) that is at most n. */
static int first_length_within(const struct hf_model *m, size_t n)
{
    int lo = 0, hi = m->n_lens;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (m->lens[mid].len > n)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* models/wordpiece/mod.rs: greedy longest match first. The library tries every end from the
 * word's end down, hashing each candidate whole; a long word and a long token made that the
 * word's length times the token's squared (118 s for 8,000 characters). Here only the lengths
 * some token has are tried, longest first, each hashed in O(1) from the word's prefix sums: the
 * same longest match, in at most one lookup per token length at each start. */
static int wordpiece_word(struct ids *out, const struct hftok *t, const char *s, size_t len,
                          struct diag *err)
{
    const struct hf_model *m = &t->model;
    long chars = 0;
    for (size_t i = 0; i < len;) {
        int k;
        char_at(s, len, i, &k);
        i += (size_t)k;
        chars++;
    }
    int first = out->n;
    bool bad = chars > m->max_chars;
    /* sum[i]: the hash of s[0, i) */
    uint64_t *sum = bad ? NULL : malloc((len + 1) * sizeof(*sum));
    if (!bad && !sum)
        return attn_diag_set(err, "", "out of memory");
    for (size_t i = 0; sum && i <= len; i++)
        sum[i] = i ? sum[i - 1] * HF_HASH_B + (unsigned char)s[i - 1] + 1 : 0;
    uint64_t prefix = hf_hash_more(0, m->prefix, m->prefix_len);
    for (size_t start = 0; !bad && start < len;) {
        /* after the first piece every token starts with continuing_subword_prefix */
        size_t plen = start > 0 ? m->prefix_len : 0, end = start;
        int found = -1;
        for (int i = first_length_within(m, len - start + plen); i < m->n_lens; i++) {
            if (m->lens[i].len <= plen)
                break;
            end = start + (m->lens[i].len - plen);
            if (end < len && ((unsigned char)s[end] & 0xC0) == 0x80)
                continue; /* not a character's end: no token (they are UTF-8) ends there */
            /* the piece's hash, then the prefix's before it (the prefix's power is the piece's) */
            uint64_t h = sum[end] - sum[start] * m->lens[i].pow;
            if (plen)
                h += prefix * m->lens[i].pow;
            found = attn_hf_vocab_find_parts(&t->vocab, h, plen ? m->prefix : "", plen, s + start,
                                             end - start);
            if (found >= 0)
                break;
        }
        if (found < 0) {
            bad = true;
            break;
        }
        ids_push(out, found);
        start = end;
    }
    free(sum);
    if (bad) {
        out->n = first;
        if (m->unk_id < 0)
            return need_unk(m, err);
        ids_push(out, m->unk_id);
    }
    return 0;
}

/* One piece of a Unigram segmentation, s[0, len): its id, or (byte_fallback) its bytes' <0xXX>
 * ids when every one is in the vocabulary, else the unknown's (models/unigram: tokenize). */
static int unigram_piece(struct ids *out, const struct hftok *t, const char *s, size_t len,
                         struct diag *err)
{
    const struct hf_model *m = &t->model;
    int id = attn_hf_vocab_find(&t->vocab, s, len);
    if (id >= 0) {
        ids_push(out, id);
        return 0;
    }
    bool bytes = m->byte_fallback;
    for (size_t i = 0; bytes && i < len; i++)
        bytes = m->byte_ids[(unsigned char)s[i]] >= 0;
    if (bytes) {
        for (size_t i = 0; i < len; i++)
            ids_push(out, m->byte_ids[(unsigned char)s[i]]);
        return 0;
    }
    if (m->unk_id < 0)
        return attn_diag_set(err, "",
                             "the text has a character no piece of the Unigram model "
                             "covers, and the model has no unk_id");
    ids_push(out, m->unk_id);
    return 0;
}

/* models/unigram/model.rs, encode_optimized: the segmentation whose pieces' scores add up to
 * the most (Viterbi over the byte positions, in double as the library's f64). At each character
 * boundary, in order, every piece that starts there, shortest first, offers its end the score
 * so far plus its own; a later offer replaces the best only when strictly higher, so ties go to
 * the first. A character no single piece covers offers an unknown of score min_score - 10 to its
 * end. Read back from the end, neighbouring unknowns are fused into one piece. Only the lengths
 * some piece has are tried, each looked up in O(1) from the word's prefix hashes. */
static int unigram_word(struct ids *out, const struct hftok *t, const char *s, size_t len,
                        struct diag *err)
{
    const struct hf_model *m = &t->model;
    if (len == 0)
        return 0;
    uint64_t *sum = malloc((len + 1) * sizeof(*sum));
    double *score = malloc((len + 1) * sizeof(*score));
    int *from = malloc((len + 1) * sizeof(*from)), *idat = malloc((len + 1) * sizeof(*idat));
    size_t *a = malloc((len + 1) * sizeof(*a)), *b = malloc((len + 1) * sizeof(*b)), n = 0;
    int rc = 0;
    if (!sum || !score || !from || !idat || !a || !b) {
        rc = attn_diag_set(err, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i <= len; i++) {
        sum[i] = i ? sum[i - 1] * HF_HASH_B + (unsigned char)s[i - 1] + 1 : 0;
        score[i] = 0;
        from[i] = -1;
    }
    double unk_score = m->min_score - 10.0; /* K_UNK_PENALTY */
    for (size_t start = 0; start < len;) {
        int mblen;
        char_at(s, len, start, &mblen);
        bool single = false;
        for (int i = m->n_lens - 1; i >= 0; i--) { /* shortest first */
            size_t end = start + m->lens[i].len;
            if (end > len)
                break;
            if (end < len && ((unsigned char)s[end] & 0xC0) == 0x80)
                continue; /* pieces are whole characters */
            uint64_t h = sum[end] - sum[start] * m->lens[i].pow;
            int id = attn_hf_vocab_find_parts(&t->vocab, h, "", 0, s + start, end - start);
            if (id < 0)
                continue;
            double cand = m->scores[id] + score[start];
            if (from[end] < 0 || cand > score[end]) {
                score[end] = cand;
                from[end] = (int)start;
                idat[end] = id;
            }
            single |= end - start == (size_t)mblen;
        }
        if (!single) {
            size_t end = start + (size_t)mblen;
            if (m->unk_id < 0) {
                rc = attn_diag_set(err, "",
                                   "the text has a character no piece of the Unigram "
                                   "model covers, and the model has no unk_id");
                goto out;
            }
            double cand = unk_score + score[start];
            if (from[end] < 0 || cand > score[end]) {
                score[end] = cand;
                from[end] = (int)start;
                idat[end] = m->unk_id;
            }
        }
        start += (size_t)mblen;
    }
    /* back from the end: the pieces, last first, neighbouring unknowns fused into one */
    bool pending = false; /* an unknown run a[n], b[n] being extended to the left */
    for (size_t end = len; end > 0;) {
        size_t st = (size_t)from[end];
        if (m->unk_id >= 0 && idat[end] == m->unk_id) {
            if (!pending)
                b[n] = end;
            a[n] = st;
            pending = true;
        } else {
            if (pending)
                n++;
            pending = false;
            a[n] = st;
            b[n++] = end;
        }
        end = st;
    }
    if (pending)
        n++;
    for (size_t k = n; k-- > 0 && rc == 0;)
        rc = unigram_piece(out, t, s + a[k], b[k] - a[k], err);
out:
    free(a);
    free(b);
    free(sum);
    free(score);
    free(from);
    free(idat);
    return rc;
}

/* ---- one sequence -------------------------------------------------------------------------- */

static int check_utf8(const char *s, size_t len, struct diag *err)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        char tmp[5] = {0};
        memcpy(tmp, s + i, len - i < 4 ? len - i : 4);
        int k = attn_utf8_decode(tmp, &cp);
        if (k <= 0 && !(s[i] == '\0'))
            return attn_diag_set(err, "text", "the text is not valid UTF-8 at byte %zu", i);
        i += k > 0 ? (size_t)k : 1;
    }
    return 0;
}

/* MarianTokenizer._tokenize of one piece between special tokens: a language code (">>de<<", up
 * to the first "<<") at its start kept whole, the rest the side's SentencePiece pieces; each
 * piece vocab.json's id, or <unk>'s. (transformers 4 gave <unk> for a piece vocab.json lacks, as
 * the comment of transformers 5's _convert_token_to_id still says it should; its code returns the
 * SentencePiece model's own id, which numbers another list: id 0, </s> in opus-mt's vocab.json,
 * for any unknown character. attnscope keeps <unk>.) */
static int marian_piece(struct ids *out, const struct hftok *t, int side, const char *s, size_t len,
                        struct diag *err)
{
    size_t code = 0;
    if (len >= 2 && s[0] == '>' && s[1] == '>')
        for (size_t i = 2; i + 1 < len && !code; i++)
            if (s[i] == '<' && s[i + 1] == '<')
                code = i + 2;
    if (code) {
        int id = attn_hf_vocab_find(&t->vocab, s, code);
        ids_push(out, id >= 0 ? id : t->model.unk_id);
    }
    struct spm_pieces p;
    if (attn_spm_encode(&p, t->model.spm[side], s + code, len - code, err))
        return -1;
    for (int i = 0; i < p.n; i++) {
        int id = attn_hf_vocab_find(&t->vocab, p.v[i].s, p.v[i].len);
        ids_push(out, id >= 0 ? id : t->model.unk_id);
    }
    attn_spm_pieces_free(&p);
    return 0;
}

/* encode_single_sequence: added tokens, normaliser, pre-tokenizer, model. */
static int encode_one(struct ids *out, const struct hftok *t, int side, const char *text,
                      size_t len, struct diag *err)
{
    if (len > (size_t)INT32_MAX)
        return attn_diag_set(err, "text", "the text is too long to tokenize (%zu bytes)", len);
    struct piece whole = {0};
    whole.len = len;
    whole.s = malloc(len ? len : 1);
    whole.orig = malloc((len ? len : 1) * sizeof(uint32_t));
    whole.id = -1;
    if (!whole.s || !whole.orig) {
        free(whole.s);
        free(whole.orig);
        return attn_diag_set(err, "", "out of memory");
    }
    memcpy(whole.s, text, len);
    for (size_t i = 0; i < len;) {
        int k;
        char_at(text, len, i, &k);
        for (int j = 0; j < k && i + (size_t)j < len; j++)
            whole.orig[i + (size_t)j] = (uint32_t)i;
        i += (size_t)k;
    }
    struct plist a = {0}, b = {0};
    int rc = split_added(&a, &whole, t, false, err);
    free(whole.s);
    free(whole.orig);
    /* the rest is normalised, then the normalized added tokens are cut out */
    for (int i = 0; i < a.n && rc == 0; i++) {
        struct piece *p = &a.v[i];
        if (p->id >= 0) {
            rc = plist_take(&b, p, err);
            continue;
        }
        if (t->has_norm)
            rc = normalize(p, &t->norm, err);
        if (rc == 0)
            rc = split_added(&b, p, t, true, err);
    }
    plist_free(&a);
    if (rc == 0 && t->has_pre)
        rc = pre_tokenize(&b, t, &t->pre, err);
    struct bpe_scratch w = {0};
    struct ids syms = {0};
    for (int i = 0; i < b.n && rc == 0; i++) {
        const struct piece *p = &b.v[i];
        if (p->id >= 0)
            ids_push(out, p->id);
        else if (t->model.kind == HM_SPM)
            rc = marian_piece(out, t, side, p->s, p->len, err);
        else if (t->model.kind == HM_BPE)
            rc = bpe_word(out, t, p->s, p->len, &w, &syms, err);
        else if (t->model.kind == HM_UNIGRAM)
            rc = unigram_word(out, t, p->s, p->len, err);
        else
            rc = wordpiece_word(out, t, p->s, p->len, err);
    }
    attn_bpe_scratch_free(&w);
    free(syms.v);
    plist_free(&b);
    if (rc == 0 && out->failed)
        rc = attn_diag_set(err, "", "out of memory");
    return rc;
}

/* ---- post-processing ----------------------------------------------------------------------- */

struct enc {
    struct ids id, type, special;
};

struct encs {
    struct enc *v;
    int n;
};

static void enc_free(struct enc *e)
{
    free(e->id.v);
    free(e->type.v);
    free(e->special.v);
    memset(e, 0, sizeof(*e));
}

static void encs_free(struct encs *l)
{
    for (int i = 0; i < l->n; i++)
        enc_free(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static void enc_append(struct enc *dst, const struct enc *src, int type_id /* -1: keep */)
{
    for (int i = 0; i < src->id.n; i++) {
        ids_push(&dst->id, src->id.v[i]);
        ids_push(&dst->type, type_id >= 0 ? type_id : src->type.v[i]);
        ids_push(&dst->special, src->special.v[i]);
    }
}

static void enc_special(struct enc *dst, int id, int type_id)
{
    ids_push(&dst->id, id);
    ids_push(&dst->type, type_id);
    ids_push(&dst->special, 1);
}

static bool enc_failed(const struct enc *e)
{
    return e->id.failed || e->type.failed || e->special.failed;
}

static int post_process(struct encs *l, const struct hf_post *p, bool add, struct diag *err)
{
    if (p->kind == HQ_SEQUENCE) {
        for (int i = 0; i < p->n; i++)
            if (post_process(l, &p->items[i], add, err))
                return -1;
        return 0;
    }
    if (p->kind == HQ_ROBERTA) /* "Roberta is weird, and every encoding is type_id=0" */
        for (int i = 0; i < l->n; i++)
            for (int k = 0; k < l->v[i].type.n; k++)
                l->v[i].type.v[k] = 0;
    if (p->kind == HQ_BYTE_LEVEL || ((p->kind == HQ_BERT || p->kind == HQ_ROBERTA) && !add))
        return 0;
    if (l->n < 1 || l->n > 2)
        return attn_diag_set(err, "",
                             "the post-processor cannot take %d sequences (after an earlier "
                             "template)",
                             l->n);
    struct encs out = {
        calloc(p->kind == HQ_TEMPLATE ? (size_t)(l->n == 2 ? p->n_pair : p->n_single) + 1 : 2,
               sizeof(struct enc)),
        0};
    if (!out.v)
        return attn_diag_set(err, "", "out of memory");
    bool failed = false;
    if (p->kind == HQ_TEMPLATE) {
        const struct hf_tpiece *tp = l->n == 2 ? p->pair : p->single;
        int n = l->n == 2 ? p->n_pair : p->n_single;
        for (int i = 0; i < n; i++) {
            struct enc *e = &out.v[out.n];
            if (!tp[i].special) {
                if (tp[i].seq >= l->n) {
                    encs_free(&out);
                    return attn_diag_set(err, "", "the template names sequence B for one sequence");
                }
                enc_append(e, &l->v[tp[i].seq], tp[i].type_id);
                out.n++;
            } else if (add) {
                const struct hf_special *s = &p->specials[tp[i].special_index];
                for (int k = 0; k < s->n; k++)
                    enc_special(e, s->ids[k], tp[i].type_id);
                out.n++;
            }
            failed = failed || enc_failed(e);
        }
    } else {
        bool roberta = p->kind == HQ_ROBERTA;
        for (int s = 0; s < l->n; s++) {
            struct enc *e = &out.v[out.n++];
            if (s == 0) {
                enc_special(e, p->cls_id, 0);
                enc_append(e, &l->v[0], roberta ? 0 : -1);
                enc_special(e, p->sep_id, 0);
            } else {
                if (roberta)
                    enc_special(e, p->sep_id, 0);
                enc_append(e, &l->v[1], roberta ? 0 : -1);
                enc_special(e, p->sep_id, roberta ? 0 : 1);
            }
            failed = failed || enc_failed(e);
        }
    }
    if (failed) {
        encs_free(&out);
        return attn_diag_set(err, "", "out of memory");
    }
    encs_free(l);
    *l = out;
    return 0;
}

void attn_hftok_encoding_free(struct hftok_encoding *e)
{
    free(e->ids);
    free(e->type_ids);
    free(e->special);
    memset(e, 0, sizeof(*e));
}

int attn_hftok_encode(struct hftok_encoding *out, const struct hftok *t, const char *text,
                      size_t len, const char *pair, size_t pair_len, bool add_special_tokens,
                      struct diag *err)
{
    return attn_hftok_encode_side(out, t, HFTOK_SOURCE, text, len, pair, pair_len,
                                  add_special_tokens, err);
}

int attn_hftok_encode_side(struct hftok_encoding *out, const struct hftok *t, enum hftok_side side,
                           const char *text, size_t len, const char *pair, size_t pair_len,
                           bool add_special_tokens, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    attn_diag_clear(err);
    /* Both texts are checked before either is encoded: bad input is refused as such, whatever
     * the first text's encoding would have met. */
    if (check_utf8(text, len, err) || (pair && check_utf8(pair, pair_len, err)))
        return -1;
    struct encs l = {calloc(2, sizeof(struct enc)), 0};
    if (!l.v)
        return attn_diag_set(err, "", "out of memory");
    int rc = 0;
    for (int s = 0; s < (pair ? 2 : 1) && rc == 0; s++) {
        struct enc *e = &l.v[l.n++];
        rc = encode_one(&e->id, t, side == HFTOK_TARGET, s ? pair : text, s ? pair_len : len, err);
        for (int i = 0; i < e->id.n; i++) {
            ids_push(&e->type, s);
            ids_push(&e->special, 0);
        }
        /* the three lists must be as long as each other before anything reads them */
        if (rc == 0 && enc_failed(e))
            rc = attn_diag_set(err, "", "out of memory");
    }
    if (rc == 0 && t->has_post)
        rc = post_process(&l, &t->post, add_special_tokens, err);
    struct enc all = {0};
    for (int i = 0; i < l.n && rc == 0; i++)
        enc_append(&all, &l.v[i], -1);
    encs_free(&l);
    if (rc == 0 && enc_failed(&all))
        rc = attn_diag_set(err, "", "out of memory");
    if (rc == 0 && all.id.n == 0) { /* never NULL on success */
        all.id.v = malloc(sizeof(int));
        all.type.v = malloc(sizeof(int));
        all.special.v = malloc(sizeof(int));
        if (!all.id.v || !all.type.v || !all.special.v)
            rc = attn_diag_set(err, "", "out of memory");
    }
    if (rc) {
        enc_free(&all);
        return -1;
    }
    out->ids = all.id.v;
    out->type_ids = all.type.v;
    out->special = malloc((size_t)(all.id.n ? all.id.n : 1));
    if (!out->special) {
        enc_free(&all);
        memset(out, 0, sizeof(*out));
        return attn_diag_set(err, "", "out of memory");
    }
    for (int i = 0; i < all.id.n; i++)
        out->special[i] = (unsigned char)all.special.v[i];
    free(all.special.v);
    out->n = all.id.n;
    return 0;
}

/* ---- labels -------------------------------------------------------------------------------- */

struct lbuf {
    char s[4 * 256 + 64];
    size_t n;
};

static void lput(struct lbuf *b, const char *p, size_t len)
{
    if (b->n + len > sizeof(b->s))
        len = sizeof(b->s) - b->n;
    memcpy(b->s + b->n, p, len);
    b->n += len;
}

struct lrepl {
    struct lbuf *out;
    const struct lbuf *in;
    size_t last;
    const char *content;
    size_t content_len;
};

static int lrepl_one(void *vc, size_t start, size_t end)
{
    struct lrepl *c = vc;
    lput(c->out, c->in->s + c->last, start - c->last);
    lput(c->out, c->content, c->content_len);
    c->last = end;
    return 0;
}

/* What token id stands for in the text, into *b: its string through the decoder's per-token
 * steps, or an added token's content. False for an id no token has. */
static bool token_text(struct lbuf *out, const struct hftok *t, int id, bool first)
{
    size_t len;
    const char *tok = attn_hftok_token(t, id, &len);
    out->n = 0;
    if (!tok)
        return false;
    lput(out, tok, len);
    if (added_of(t, id))
        return true;
    struct lbuf b = *out;
    bool fused = false;
    for (int d = 0; d < t->n_dec; d++) {
        const struct hf_dec *dec = &t->dec[d];
        struct lbuf nb = {.n = 0};
        switch (dec->kind) {
        case HD_BYTE_LEVEL: {
            bool all = true;
            for (size_t i = 0; i < b.n && all;) {
                int k;
                uint32_t c = char_at(b.s, b.n, i, &k);
                int by = attn_bpe_char_byte(c);
                if (by < 0)
                    all = false;
                else {
                    char ch = (char)by;
                    lput(&nb, &ch, 1);
                }
                i += (size_t)k;
            }
            if (all)
                b = nb;
            break;
        }
        case HD_BYTE_FALLBACK:
            if (b.n == 6 && memcmp(b.s, "<0x", 3) == 0 && b.s[5] == '>') {
                char hex[3] = {b.s[3], b.s[4], 0};
                char *e;
                long v = strtol(hex, &e, 16);
                if (*e == '\0' && hex[0] != '-' && hex[0] != '+' && hex[0] != ' ') {
                    char ch = (char)v;
                    b.n = 0;
                    lput(&b, &ch, 1);
                }
            }
            break;
        case HD_METASPACE: /* the first token's replacements are the prepended space: gone */
            for (size_t i = 0; i < b.n;) {
                int k;
                uint32_t c = char_at(b.s, b.n, i, &k);
                if (c != dec->replacement)
                    lput(&nb, b.s + i, (size_t)k);
                else if (!(first && dec->prepends))
                    lput(&nb, " ", 1);
                i += (size_t)k;
            }
            b = nb;
            break;
        case HD_REPLACE: {
            struct diag e;
            attn_diag_clear(&e);
            struct lrepl c = {&nb, &b, 0, dec->content, dec->content_len};
            if (attn_hf_regex_each(dec->pat.re, b.s, b.n, lrepl_one, &c, &e) == 0) {
                lput(&nb, b.s + c.last, b.n - c.last);
                b = nb;
            }
            break;
        }
        case HD_STRIP: /* after Fuse, it strips the text's start: the first token's */
            if (first && fused) {
                size_t cut = 0;
                for (long k = 0; k < dec->strip_start && cut < b.n; k++) {
                    int w;
                    if (char_at(b.s, b.n, cut, &w) != dec->replacement)
                        break;
                    cut += (size_t)w;
                }
                memmove(b.s, b.s + cut, b.n - cut);
                b.n -= cut;
            }
            break;
        case HD_FUSE:
            fused = true;
            break;
        case HD_WORDPIECE: /* "##ing" says it continues a word: the label keeps it */
            break;
        }
    }
    *out = b;
    return true;
}

void attn_hftok_token_label(char *out, size_t size, const struct hftok *t, int id)
{
    if (size == 0)
        return;
    struct lbuf b;
    if (!token_text(&b, t, id, false)) {
        snprintf(out, size, "<unused %d>", id);
        return;
    }
    attn_bpe_label_bytes(out, size, b.s, b.n);
}

size_t attn_hftok_token_bytes(char *out, size_t size, const struct hftok *t, int id, bool first)
{
    struct lbuf b;
    if (!token_text(&b, t, id, first))
        return 0;
    size_t n = b.n < size ? b.n : size;
    memcpy(out, b.s, n);
    return n;
}
