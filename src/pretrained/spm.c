/* spm: SentencePiece's ModelProto, read and encoded as the library does (see spm.h). The
 * library's own files name the steps: model_interface.cc (which pieces the model looks up),
 * normalizer.cc (Normalize, NormalizePrefix), unigram_model.cc (EncodeOptimized) and
 * sentencepiece_processor.cc (PopulateSentencePieceText: unknowns merged, byte fallback). */
#include "pretrained/spm.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/utf8.h"
#include "pretrained/pieces.h"

/* sentencepiece_model.proto's SentencePiece.Type and TrainerSpec.ModelType */
enum { T_NORMAL = 1, T_UNKNOWN = 2, T_CONTROL = 3, T_USER = 4, T_UNUSED = 5, T_BYTE = 6 };
enum { M_UNIGRAM = 1, M_BPE = 2, M_WORD = 3, M_CHAR = 4 };

struct spm {
    int n;        /* pieces, ids 0 .. n - 1 */
    char **str;   /* each piece's string */
    size_t *len;  /* its bytes */
    float *score; /* its score (a log probability) */
    unsigned char *type;
    struct hf_vocab find; /* the pieces the model looks up: normal, user-defined and unused */
    size_t *lens;         /* their lengths in bytes, each once, shortest first */
    int n_lens;
    size_t *user_lens; /* user-defined symbols' lengths, longest first (the normalizer's) */
    int n_user_lens;
    int unk_id;
    float min_score, max_score; /* over the normal pieces */
    int byte_id[256];           /* <0xXX>, with byte fallback */
    bool byte_fallback, suffix; /* trainer_spec: byte_fallback, treat_whitespace_as_suffix */
    bool dummy_prefix, remove_extra, escape; /* normalizer_spec */
    bool has_map;
    struct hf_charsmap map; /* the precompiled charsmap's trie and pool */
};

/* ---- the protobuf ---------------------------------------------------------------------------- */

struct pb {
    const unsigned char *p, *start, *end;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return -1;
        unsigned char c = *b->p++;
        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* The next field: its number and wire type, and its value (a varint, a fixed32 in *v, or the
 * bytes of a length-delimited one in *sub). 1 at the end, -1 when the bytes are not protobuf. */
static int pb_next(struct pb *b, uint32_t *field, int *wire, uint64_t *v, struct pb *sub)
{
    if (b->p >= b->end)
        return 1;
    uint64_t key;
    if (pb_varint(b, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
        return -1;
    *field = (uint32_t)(key >> 3);
    *wire = (int)(key & 7);
    switch (*wire) {
    case 0:
        return pb_varint(b, v);
    case 1:
        if (b->end - b->p < 8)
            return -1;
        b->p += 8;
        return 0;
    case 2:
        if (pb_varint(b, v) || *v > (uint64_t)(b->end - b->p))
            return -1;
        *sub = (struct pb){b->p, b->start, b->p + *v};
        b->p += *v;
        return 0;
    case 5:
        if (b->end - b->p < 4)
            return -1;
        *v = (uint64_t)b->p[0] | (uint64_t)b->p[1] << 8 | (uint64_t)b->p[2] << 16 |
             (uint64_t)b->p[3] << 24;
        b->p += 4;
        return 0;
    default: /* groups (3, 4) are not in this format; 6 and 7 are no wire type */
        return -1;
    }
}

struct reader {
    const char *name;
    struct diag *err;
    /* what the file says, before it is checked */
    int model_type;
    struct pb charsmap, denorm_map;
    bool has_charsmap, has_denorm_map;
    /* the pieces, in order */
    struct pb *piece;
    float *score;
    int *type;
    int n, cap;
};

static int broken(struct reader *r, const struct pb *b)
{
    return attn_diag_file(r->err, r->name,
                          "not a SentencePiece model: the protobuf is broken at byte %td",
                          b->p - b->start);
}

/* A field of the wrong wire type is one the format does not have: the file is not a model. */
static int want(struct reader *r, const struct pb *b, int wire, int expected)
{
    return wire == expected ? 0 : broken(r, b);
}

static int read_piece(struct reader *r, struct pb b)
{
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 1024;
        if (cap > SPM_MAX_PIECES)
            return attn_diag_file(r->err, r->name, "more than %d pieces", SPM_MAX_PIECES);
        struct pb *p = realloc(r->piece, (size_t)cap * sizeof(*p));
        if (p)
            r->piece = p;
        float *s = p ? realloc(r->score, (size_t)cap * sizeof(*s)) : NULL;
        if (s)
            r->score = s;
        int *t = s ? realloc(r->type, (size_t)cap * sizeof(*t)) : NULL;
        if (!t)
            return attn_diag_file(r->err, r->name, "out of memory");
        r->type = t;
        r->cap = cap;
    }
    int i = r->n++;
    r->piece[i] = (struct pb){b.p, b.start, b.p};
    r->score[i] = 0;
    r->type[i] = T_NORMAL;
    uint32_t f;
    int wire, rc;
    uint64_t v;
    struct pb sub;
    while ((rc = pb_next(&b, &f, &wire, &v, &sub)) == 0) {
        static const int wire_of[4] = {0, 2, 5, 0}; /* piece, score, type */
        if (f <= 3 && want(r, &b, wire, wire_of[f]))
            return -1;
        if (f == 1) {
            r->piece[i] = sub;
        } else if (f == 2) {
            uint32_t u = (uint32_t)v;
            memcpy(&r->score[i], &u, sizeof(u));
        } else if (f == 3) {
            r->type[i] = (int)v;
        }
    }
    return rc < 0 ? broken(r, &b) : 0;
}

/* trainer_spec: the model's kind (3), whitespace as a suffix (24), byte fallback (35); the rest
 * are how it was trained. */
static int read_trainer(struct reader *r, struct pb b, struct spm *m)
{
    uint32_t f;
    int wire, rc;
    uint64_t v;
    struct pb sub;
    while ((rc = pb_next(&b, &f, &wire, &v, &sub)) == 0) {
        bool is_varint = f == 3 || f == 24 || f == 35;
        if (is_varint && want(r, &b, wire, 0))
            return -1;
        if (f == 3)
            r->model_type = (int)v;
        else if (f == 24)
            m->suffix = v != 0;
        else if (f == 35)
            m->byte_fallback = v != 0;
    }
    return rc < 0 ? broken(r, &b) : 0;
}

/* normalizer_spec (and denormalizer_spec): the charsmap (2), add_dummy_prefix (3),
 * remove_extra_whitespaces (4), escape_whitespaces (5); its name (1) and the rules it was built
 * from (6) say nothing the charsmap does not. */
static int read_normalizer(struct reader *r, struct pb b, struct spm *m, bool denorm)
{
    uint32_t f;
    int wire, rc;
    uint64_t v;
    struct pb sub;
    while ((rc = pb_next(&b, &f, &wire, &v, &sub)) == 0) {
        if ((f == 2 && want(r, &b, wire, 2)) || (f >= 3 && f <= 5 && want(r, &b, wire, 0)))
            return -1;
        if (f == 2 && denorm) {
            r->denorm_map = sub;
            r->has_denorm_map = true;
        } else if (f == 2) {
            r->charsmap = sub;
            r->has_charsmap = true;
        } else if (!denorm && f == 3) {
            m->dummy_prefix = v != 0;
        } else if (!denorm && f == 4) {
            m->remove_extra = v != 0;
        } else if (!denorm && f == 5) {
            m->escape = v != 0;
        }
    }
    return rc < 0 ? broken(r, &b) : 0;
}

static int by_size_up(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The distinct values of v[0..n), sorted up (down: reversed); how many. */
static int distinct(size_t *v, int n, bool down)
{
    qsort(v, (size_t)n, sizeof(*v), by_size_up);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1])
            v[k++] = v[i];
    for (int i = 0; down && i < k / 2; i++) {
        size_t t = v[i];
        v[i] = v[k - 1 - i];
        v[k - 1 - i] = t;
    }
    return k;
}

/* A piece as a message shows it: escaped, at most 60 bytes of it. */
static const char *shown(char *buf, size_t size, const char *s, size_t len)
{
    attn_utf8_escape(buf, size, s, len < 60 ? len : 60, 0);
    return buf;
}

/* The byte "<0xXX>" stands for (PieceToByte: upper-case hex, two digits), or -1. */
static int byte_piece(const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *hi = len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] ? strchr(hex, s[3])
                                                                                 : NULL,
               *lo = hi && s[4] ? strchr(hex, s[4]) : NULL;
    return lo ? (int)((hi - hex) * 16 + (lo - hex)) : -1;
}

/* The pieces as model_interface.cc's InitializePieces checks them. */
static int build_pieces(struct reader *r, struct spm *m)
{
    int n = r->n;
    if (n == 0)
        return attn_diag_file(r->err, r->name, "not a SentencePiece model: it has no pieces");
    m->n = n;
    m->str = calloc((size_t)n, sizeof(*m->str));
    m->len = calloc((size_t)n, sizeof(*m->len));
    m->score = malloc((size_t)n * sizeof(*m->score));
    m->type = malloc((size_t)n);
    m->lens = malloc((size_t)n * sizeof(*m->lens));
    m->user_lens = malloc((size_t)n * sizeof(*m->user_lens));
    int n_find = 0;
    for (int i = 0; i < n; i++)
        n_find += r->type[i] == T_NORMAL || r->type[i] == T_USER || r->type[i] == T_UNUSED;
    if (!m->str || !m->len || !m->score || !m->type || !m->lens || !m->user_lens ||
        attn_hf_vocab_alloc(&m->find, (size_t)n, (size_t)n_find))
        return attn_diag_file(r->err, r->name, "out of memory");
    m->unk_id = -1;
    m->min_score = 3.402823466e+38F; /* FLT_MAX and FLT_MIN, as the library starts them */
    m->max_score = 1.175494351e-38F;
    memset(m->byte_id, 0xFF, sizeof(m->byte_id));
    int n_bytes = 0;
    char b[300];
    for (int i = 0; i < n; i++) {
        const struct pb *p = &r->piece[i];
        size_t len = (size_t)(p->end - p->p);
        int t = r->type[i];
        if (len == 0)
            return attn_diag_file(r->err, r->name, "piece %d is empty", i);
        if (t < T_NORMAL || t > T_BYTE)
            return attn_diag_file(r->err, r->name, "piece %d has type %d, which is no piece type",
                                  i, t);
        if (!(m->str[i] = malloc(len + 1)))
            return attn_diag_file(r->err, r->name, "out of memory");
        memcpy(m->str[i], p->p, len);
        m->str[i][len] = '\0';
        m->len[i] = len;
        m->score[i] = r->score[i];
        m->type[i] = (unsigned char)t;
        bool looked_up = t == T_NORMAL || t == T_USER || t == T_UNUSED;
        /* each piece once among the looked-up ones, and once among the rest */
        int before = looked_up ? attn_hf_vocab_find(&m->find, m->str[i], len) : -1;
        for (int j = 0; !looked_up && j < i && before < 0; j++) {
            int u = m->type[j];
            if (!(u == T_NORMAL || u == T_USER || u == T_UNUSED) && m->len[j] == len &&
                memcmp(m->str[j], m->str[i], len) == 0)
                before = j;
        }
        if (before >= 0)
            return attn_diag_file(r->err, r->name, "piece %d '%s' is piece %d already", i,
                                  shown(b, sizeof(b), m->str[i], len), before);
        if (looked_up) {
            if (attn_hf_vocab_set(&m->find, i, m->str[i], len))
                return attn_diag_file(r->err, r->name, "out of memory");
            m->lens[m->n_lens++] = len;
            if (t == T_USER)
                m->user_lens[m->n_user_lens++] = len;
        }
        if (t == T_NORMAL) {
            m->min_score = r->score[i] < m->min_score ? r->score[i] : m->min_score;
            m->max_score = r->score[i] > m->max_score ? r->score[i] : m->max_score;
        }
        if (t == T_UNKNOWN) {
            if (m->unk_id >= 0)
                return attn_diag_file(r->err, r->name,
                                      "pieces %d and %d are both the unknown piece", m->unk_id, i);
            m->unk_id = i;
        }
        if (t == T_BYTE) {
            if (!m->byte_fallback)
                return attn_diag_file(r->err, r->name,
                                      "piece %d '%s' is a byte, but the model has no "
                                      "byte_fallback",
                                      i, shown(b, sizeof(b), m->str[i], len));
            int hex = byte_piece(m->str[i], len);
            if (hex < 0)
                return attn_diag_file(r->err, r->name,
                                      "piece %d '%s' is a byte, but not one written <0xXX>", i,
                                      shown(b, sizeof(b), m->str[i], len));
            if (m->byte_id[hex] < 0)
                n_bytes++;
            m->byte_id[hex] = i;
        }
    }
    if (m->unk_id < 0)
        return attn_diag_file(r->err, r->name, "the model has no unknown piece (type UNKNOWN)");
    if (m->byte_fallback && n_bytes != 256)
        return attn_diag_file(r->err, r->name,
                              "the model has byte_fallback but %d byte pieces, not 256", n_bytes);
    m->n_lens = distinct(m->lens, m->n_lens, false);
    m->n_user_lens = distinct(m->user_lens, m->n_user_lens, true);
    return 0;
}

int attn_spm_load_bytes(struct spm **out, const unsigned char *bytes, size_t size, const char *name,
                        struct diag *err)
{
    *out = NULL;
    attn_diag_clear(err);
    struct spm *m = calloc(1, sizeof(*m));
    if (!m)
        return attn_diag_file(err, name, "out of memory");
    m->dummy_prefix = m->remove_extra = m->escape = true; /* the proto's defaults */
    struct reader r = {.name = name, .err = err, .model_type = M_UNIGRAM};
    struct pb b = {bytes, bytes, bytes + size};
    uint32_t f;
    int wire, rc;
    uint64_t v;
    struct pb sub;
    /* ModelProto: pieces (1), trainer_spec (2), normalizer_spec (3), self_test_data (4),
     * denormalizer_spec (5); a message given twice is merged, as protobuf merges it */
    while ((rc = pb_next(&b, &f, &wire, &v, &sub)) == 0) {
        if (f >= 1 && f <= 5 && want(&r, &b, wire, 2)) {
            rc = -2;
            break;
        }
        if ((f == 1 && read_piece(&r, sub)) || (f == 2 && read_trainer(&r, sub, m)) ||
            (f == 3 && read_normalizer(&r, sub, m, false)) ||
            (f == 5 && read_normalizer(&r, sub, m, true))) {
            rc = -2;
            break;
        }
    }
    if (rc == -1)
        rc = broken(&r, &b);
    if (rc == 1) {
        rc = 0;
        static const char *const kind[] = {"?", "UNIGRAM", "BPE", "WORD", "CHAR"};
        if (r.model_type != M_UNIGRAM)
            rc = attn_diag_file(
                err, name,
                "trainer_spec.model_type is %s: attnscope reads SentencePiece's Unigram models "
                "(T5's, Marian's, ALBERT's), not its other kinds",
                r.model_type >= 1 && r.model_type <= 4 ? kind[r.model_type] : "unknown");
        else if (r.has_denorm_map && r.denorm_map.end > r.denorm_map.p)
            rc = attn_diag_file(err, name,
                                "the model has a denormalizer_spec (a rule for decoding text), "
                                "which attnscope does not read");
    }
    if (rc == 0)
        rc = build_pieces(&r, m);
    if (rc == 0 && r.has_charsmap && r.charsmap.end > r.charsmap.p) {
        char msg[200];
        if (attn_hf_charsmap_read(&m->map, r.charsmap.p, (size_t)(r.charsmap.end - r.charsmap.p),
                                  msg, sizeof(msg)))
            rc = attn_diag_file(err, name, "normalizer_spec.precompiled_charsmap: %s", msg);
        m->has_map = true;
    }
    free(r.piece);
    free(r.score);
    free(r.type);
    if (rc) {
        attn_spm_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int attn_spm_load(struct spm **out, const char *path, struct diag *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    if (attn_fsutil_read_file(&text, &len, path, SPM_MAX_FILE_BYTES, err) != 0)
        return -1;
    int rc = attn_spm_load_bytes(out, (const unsigned char *)text, len, path, err);
    free(text);
    return rc;
}

void attn_spm_free(struct spm *m)
{
    if (!m)
        return;
    for (int i = 0; m->str && i < m->n; i++)
        free(m->str[i]);
    free(m->str);
    free(m->len);
    free(m->score);
    free(m->type);
    free(m->lens);
    free(m->user_lens);
    attn_hf_vocab_free(&m->find);
    attn_hf_charsmap_free(&m->map);
    free(m);
}

int attn_spm_size(const struct spm *m)
{
    return m->n;
}

const char *attn_spm_piece(const struct spm *m, int id, size_t *len)
{
    if (id < 0 || id >= m->n)
        return NULL;
    *len = m->len[id];
    return m->str[id];
}

bool attn_spm_is_unknown(const struct spm *m, int id)
{
    return id == m->unk_id;
}

/* ---- the normalizer -------------------------------------------------------------------------- */

/* The library's DecodeUTF8 as IsValidDecodeUTF8 uses it: the length of the character at s
 * (1 for a byte that starts none: it becomes U+FFFD). */
static size_t char_len(const unsigned char *s, size_t n, bool *valid)
{
    uint32_t c;
    size_t k = s[0] < 0x80             ? 1
               : (s[0] & 0xE0) == 0xC0 ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    *valid = k != 0 && k <= n;
    for (size_t i = 1; *valid && i < k; i++)
        *valid = (s[i] & 0xC0) == 0x80;
    if (!*valid || k == 1)
        return 1;
    c = k == 2 ? (s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu)
        : k == 3
            ? (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu)
            : (s[0] & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 | (s[3] & 0x3Fu);
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    *valid = c >= least[k] && (c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF));
    return *valid ? k : 1;
}

/* NormalizePrefix: what the start of s[0..n) becomes (*out, *out_len) and how many bytes of it
 * that consumes: a user-defined symbol as it is (the longest), else the longest rule of the
 * charsmap (its string ends at a NUL), else one character (U+FFFD for a byte that is none). */
static size_t normalize_prefix(const struct spm *m, const char *s, size_t n, const char **out,
                               size_t *out_len)
{
    for (int i = 0; i < m->n_user_lens; i++) {
        size_t L = m->user_lens[i];
        int id = L <= n ? attn_hf_vocab_find(&m->find, s, L) : -1;
        if (id >= 0 && m->type[id] == T_USER) {
            *out = s;
            *out_len = L;
            return L;
        }
    }
    if (m->has_map) { /* darts-clone's commonPrefixSearch, the longest result */
        const uint32_t *a = m->map.units;
        uint32_t pos = hf_da_offset(a[0]);
        size_t best = 0;
        uint32_t value = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t c = (unsigned char)s[i];
            pos ^= c;
            uint32_t u = a[pos];
            if (hf_da_label(u) != c)
                break;
            pos ^= hf_da_offset(u);
            if (hf_da_has_leaf(u)) {
                best = i + 1;
                value = hf_da_value(a[pos]);
            }
        }
        if (best) {
            *out = m->map.pool + value;
            *out_len = strnlen(*out, m->map.pool_len - value);
            return best;
        }
    }
    bool valid;
    size_t k = char_len((const unsigned char *)s, n, &valid);
    *out = valid ? s : "\xEF\xBF\xBD";
    *out_len = valid ? k : 3;
    return k;
}

struct nbuf {
    char *s;
    size_t n, cap, limit;
    bool failed;
};

static void nput(struct nbuf *b, const char *p, size_t len)
{
    if (b->failed)
        return;
    if (len > b->limit - b->n) {
        b->failed = true;
        return;
    }
    if (b->n + len > b->cap) {
        size_t cap = b->cap * 2 > b->n + len ? b->cap * 2 : b->n + len + 64;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, p, len);
    b->n += len;
}

#define SPACE_SYMBOL "\xE2\x96\x81" /* U+2581 */

/* Normalizer::Normalize: leading spaces dropped, a dummy "▁" first (or last, as a suffix), each
 * prefix normalized, a space after a space dropped, every space "▁", trailing ones dropped. */
static int normalize(struct nbuf *out, const struct spm *m, const char *s, size_t n)
{
    const char *ws = m->escape ? SPACE_SYMBOL : " ";
    size_t ws_len = m->escape ? 3 : 1;
    const char *p;
    size_t plen;
    if (m->remove_extra)
        while (n > 0) {
            size_t used = normalize_prefix(m, s, n, &p, &plen);
            if (!(plen == 1 && p[0] == ' '))
                break;
            s += used;
            n -= used;
        }
    if (n == 0)
        return 0;
    if (!m->suffix && m->dummy_prefix)
        nput(out, ws, ws_len);
    bool prev_space = m->remove_extra;
    while (n > 0) {
        size_t used = normalize_prefix(m, s, n, &p, &plen);
        while (prev_space && plen > 0 && p[0] == ' ') {
            p++;
            plen--;
        }
        if (plen > 0) {
            for (size_t i = 0; i < plen; i++)
                if (m->escape && p[i] == ' ')
                    nput(out, SPACE_SYMBOL, 3);
                else
                    nput(out, p + i, 1);
            prev_space = p[plen - 1] == ' ';
        }
        s += used;
        n -= used;
        if (!m->remove_extra)
            prev_space = false;
    }
    if (m->remove_extra)
        while (out->n >= ws_len && memcmp(out->s + out->n - ws_len, ws, ws_len) == 0)
            out->n -= ws_len;
    if (m->suffix && m->dummy_prefix)
        nput(out, ws, ws_len);
    return out->failed ? -1 : 0;
}

/* ---- the Unigram model ----------------------------------------------------------------------- */

struct node {
    float score; /* the best path's that ends here */
    int from;    /* where its last piece starts; -1: none yet */
    int id;
};

/* EncodeOptimized: at each character, in order, every piece that starts there, shortest first,
 * offers its end the path so far plus its score (a user-defined symbol: its length times the
 * highest score, less 0.1), summed in double and kept in float, replacing the best only when
 * strictly higher; a character no single piece covers offers an unknown of the lowest score less
 * 10, in float. Unused pieces offer nothing. Read back from the end. */
static int viterbi(int **ids, int **at, int *count, const struct spm *m, const char *s, int size)
{
    struct node *best = malloc((size_t)(size + 1) * sizeof(*best));
    int *rid = malloc((size_t)(size + 1) * sizeof(int)),
        *rat = malloc((size_t)(size + 1) * sizeof(int));
    if (!best || !rid || !rat) {
        free(best);
        free(rid);
        free(rat);
        return -1;
    }
    for (int i = 0; i <= size; i++)
        best[i] = (struct node){0.0F, -1, -1};
    const float unk_score = m->min_score - 10.0F;
    for (int start = 0; start < size;) {
        const unsigned char c0 = (unsigned char)s[start];
        int mblen = c0 < 0xC0 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4; /* OneCharLen */
        if (mblen > size - start)
            mblen = size - start;
        const float here = best[start].score;
        bool single = false;
        for (int k = 0; k < m->n_lens; k++) {
            size_t L = m->lens[k];
            if (L > (size_t)(size - start))
                break;
            int id = attn_hf_vocab_find(&m->find, s + start, L);
            if (id < 0 || m->type[id] == T_UNUSED)
                continue;
            struct node *t = &best[start + (int)L];
            double score = m->type[id] == T_USER ? (double)((float)L * m->max_score) - 0.1
                                                 : (double)m->score[id];
            double cand = score + (double)here;
            if (t->from == -1 || cand > (double)t->score) {
                t->score = (float)cand;
                t->from = start;
                t->id = id;
            }
            single |= L == (size_t)mblen;
        }
        if (!single) {
            struct node *t = &best[start + mblen];
            float cand = unk_score + here;
            if (t->from == -1 || cand > t->score) {
                t->score = cand;
                t->from = start;
                t->id = m->unk_id;
            }
        }
        start += mblen;
    }
    int n = 0;
    for (int end = size; end > 0; end = best[end].from) {
        rid[n] = best[end].id;
        rat[n++] = best[end].from;
    }
    for (int i = 0; i < n / 2; i++) { /* first piece first */
        int t = rid[i];
        rid[i] = rid[n - 1 - i];
        rid[n - 1 - i] = t;
        t = rat[i];
        rat[i] = rat[n - 1 - i];
        rat[n - 1 - i] = t;
    }
    free(best);
    *ids = rid;
    *at = rat;
    *count = n;
    return 0;
}

int attn_spm_encode(struct spm_pieces *out, const struct spm *m, const char *text, size_t len,
                    struct diag *err)
{
    memset(out, 0, sizeof(*out));
    if (len > (size_t)INT32_MAX / 32)
        return attn_diag_set(err, "text", "the text is too long to tokenize (%zu bytes)", len);
    struct nbuf nb = {.limit = len * SPM_NORM_GROWTH + SPM_NORM_SLACK};
    if (normalize(&nb, m, text, len) != 0) {
        free(nb.s);
        return nb.n + 64 > nb.limit
                   ? attn_diag_set(err, "text",
                                   "normalizing makes the text more than %d times as long",
                                   SPM_NORM_GROWTH)
                   : attn_diag_set(err, "", "out of memory");
    }
    int *ids = NULL, *at = NULL, n = 0;
    if (nb.n > 0 && viterbi(&ids, &at, &n, m, nb.s, (int)nb.n) != 0) {
        free(nb.s);
        return attn_diag_set(err, "", "out of memory");
    }
    /* PopulateSentencePieceText: an unknown run is one piece; with byte fallback, its bytes */
    size_t cap = (size_t)n + (m->byte_fallback ? nb.n : 0) + 1;
    out->v = malloc(cap * sizeof(*out->v));
    if (!out->v) {
        free(nb.s);
        free(ids);
        free(at);
        return attn_diag_set(err, "", "out of memory");
    }
    out->norm = nb.s;
    bool prev_unk = false;
    for (int i = 0; i < n; i++) {
        size_t a = (size_t)at[i], b = i + 1 < n ? (size_t)at[i + 1] : nb.n;
        bool unk = ids[i] == m->unk_id;
        if (unk && m->byte_fallback) {
            for (size_t k = a; k < b; k++) {
                int id = m->byte_id[(unsigned char)nb.s[k]];
                out->v[out->n++] = (struct spm_piece){m->str[id], m->len[id], id};
            }
        } else if (unk && prev_unk) {
            out->v[out->n - 1].len += b - a;
        } else {
            out->v[out->n++] = (struct spm_piece){nb.s + a, b - a, ids[i]};
        }
        prev_unk = unk;
    }
    free(ids);
    free(at);
    return 0;
}

void attn_spm_pieces_free(struct spm_pieces *p)
{
    free(p->v);
    free(p->norm);
    memset(p, 0, sizeof(*p));
}
