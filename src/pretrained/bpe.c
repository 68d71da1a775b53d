/* bpe: GPT-2's byte-level BPE tokenizer (see bpe.h).
 *
 * Everything works on bytes: the byte-to-character mapping of vocab.json and merges.txt is a
 * bijection, so merging characters and merging the bytes they stand for give the same tokens.
 * Every string BPE can build is a symbol with a number: 0..255 the single bytes, then the
 * tokens of vocab.json, then what merges make that vocab.json lacks. A merge is a pair of symbol
 * numbers with its rank and its result.
 *
 * Out of memory is an error like a bad file: every allocation is checked, the function that
 * made it returns -1 (a symbol function returns -1 for "no symbol"), and the public calls turn
 * that into "out of memory" in err with everything they had allocated freed. The table of
 * pieces already encoded is a cache: when it cannot grow it stops learning, which changes
 * nothing but speed.
 */
#include "pretrained/bpe.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/fsutil.h"
#include "common/utf8.h"
#include "pretrained/bpemerge.h"
#include "pretrained/jsonoom.h"

/* GPT-2's pre-tokenising regex, as OpenAI's encoder.py writes it with Python's `regex` module:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * with \s spelled out. Python's \s is Unicode's White_Space, which has not changed since 6.3;
 * PCRE2's (with PCRE2_UCP) also takes U+180E MONGOLIAN VOWEL SEPARATOR, which Unicode 6.3 moved
 * out of White_Space, so " \u180e)" would split differently. \p{L} and \p{N} are PCRE2's own
 * tables (Unicode 14 for Debian 12's 10.42): letters and digits assigned later (CJK extension
 * H, say) are "other" here and letters in Python; no test text uses them. */
#define WS                                                                                         \
    "\\t\\n\\x{0B}\\f\\r "                                                                         \
    "\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char pretokenize_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+"
    "| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

struct symbol {
    size_t off; /* bytes in bpe.pool, NUL-terminated there */
    int len;
    int id; /* vocab.json's id, -1 when it has none */
};

/* Open addressing with linear probing; slot value -1 is empty. */
struct table {
    int *slots;
    size_t mask;
    int n;
};

struct bpe {
    char *pool;
    size_t pool_len, pool_cap;
    struct symbol *syms;
    int n_syms, syms_cap;
    struct table sym_index; /* bytes -> symbol */

    struct bpe_merges merges; /* (a, b) -> result; entry = rank (merges.txt has no repeats) */

    int *id_sym; /* id -> symbol, -1 for an unused id */
    int vocab_size;

    pcre2_code *re;
};

/* ---- the byte <-> character mapping ---- */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 (space,
 * controls, 0x7F-0xA0, 0xAD) for U+0100, U+0101, ... in byte order, so no token holds a space
 * or a control character. */
static bool stands_for_itself(int byte)
{
    return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
}

uint32_t attn_bpe_byte_char(int byte)
{
    if (stands_for_itself(byte))
        return (uint32_t)byte;
    uint32_t n = 0;
    for (int b = 0; b < byte; b++)
        n += !stands_for_itself(b);
    return 0x100 + n;
}

int attn_bpe_char_byte(uint32_t cp)
{
    if (cp < 0x100)
        return stands_for_itself((int)cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68)
        return -1;
    uint32_t n = cp - 0x100;
    for (int b = 0; b < 256; b++)
        if (!stands_for_itself(b) && n-- == 0)
            return b;
    return -1;
}

/* Writes bytes in vocab.json's spelling ("Ġthe" for " the"), cut to fit size. */
static void spell(char *out, size_t size, const char *bytes, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c[4];
        int n = attn_utf8_encode(attn_bpe_byte_char((unsigned char)bytes[i]), c);
        if (o + (size_t)n + 4 >= size) { /* room for "..." */
            snprintf(out + o, size - o, "...");
            return;
        }
        memcpy(out + o, c, (size_t)n);
        o += (size_t)n;
    }
    out[o] = '\0';
}

/* Copies text for a message, at most 120 bytes of it, escaped (common/utf8.h) so a strange
 * token cannot break the message's line or drive the terminal. */
static void show(char *out, size_t size, const char *s, size_t len)
{
    attn_utf8_escape(out, size, s, len < 120 ? len : 120, 0);
}

/* Decodes vocab.json's spelling of a token (len bytes of UTF-8) into bytes (at most len of
 * them). Returns the byte count, or -1 with *bad_at the byte offset of the first character
 * that is not one of the 256 (*bad_cp that character, or 0xFFFFFFFF for invalid UTF-8). */
static int unspell(char *out, const char *s, size_t len, size_t *bad_at, uint32_t *bad_cp)
{
    size_t i = 0;
    int n = 0;
    while (i < len) {
        uint32_t cp = 0xFFFFFFFF;
        int k = attn_utf8_decode(s + i, &cp);
        int byte = k > 0 && i + (size_t)k <= len ? attn_bpe_char_byte(cp) : -1;
        if (byte < 0) {
            *bad_at = i;
            *bad_cp = k > 0 ? cp : 0xFFFFFFFF;
            return -1;
        }
        out[n++] = (char)byte;
        i += (size_t)k;
    }
    return n;
}

/* ---- hash tables ---- */

static uint64_t hash_bytes(const char *p, size_t len)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h ^ (h >> 29);
}

/* Grows *p to n bytes; on failure *p is kept as it was. Returns 0 or -1. */
static int grow(void *p, size_t n)
{
    void *q = realloc(*(void **)p, n ? n : 1);
    if (!q)
        return -1;
    *(void **)p = q;
    return 0;
}

/* Returns 0, or -1 out of memory (t then has no slots). */
static int table_init(struct table *t, size_t min_slots)
{
    size_t n = 16;
    while (n < min_slots * 2)
        n *= 2;
    t->slots = malloc(n * sizeof(*t->slots));
    t->mask = n - 1;
    t->n = 0;
    if (!t->slots)
        return -1;
    memset(t->slots, 0xFF, n * sizeof(*t->slots));
    return 0;
}

static void table_free(struct table *t)
{
    free(t->slots);
    t->slots = NULL;
}

static const char *sym_bytes(const struct bpe *b, int s)
{
    return b->pool + b->syms[s].off;
}

/* The slot of bytes in sym_index: where the symbol is, or the empty slot it would go to. */
static size_t sym_slot(const struct bpe *b, const char *p, size_t len)
{
    size_t i = hash_bytes(p, len) & b->sym_index.mask;
    for (;; i = (i + 1) & b->sym_index.mask) {
        int s = b->sym_index.slots[i];
        if (s < 0 || ((size_t)b->syms[s].len == len && memcmp(sym_bytes(b, s), p, len) == 0))
            return i;
    }
}

static int sym_find(const struct bpe *b, const char *p, size_t len)
{
    return b->sym_index.slots[sym_slot(b, p, len)];
}

/* A table twice the size; on failure the old one stays (still correct, only fuller). */
static int sym_rehash(struct bpe *b)
{
    struct table old = b->sym_index;
    if (table_init(&b->sym_index, (size_t)b->n_syms * 2) != 0) {
        b->sym_index = old;
        return -1;
    }
    table_free(&old);
    for (int s = 0; s < b->n_syms; s++) {
        b->sym_index.slots[sym_slot(b, sym_bytes(b, s), (size_t)b->syms[s].len)] = s;
        b->sym_index.n++;
    }
    return 0;
}

/* The symbol of bytes, created when there is none yet; -1 out of memory. */
static int sym_intern(struct bpe *b, const char *p, size_t len)
{
    size_t slot = sym_slot(b, p, len);
    if (b->sym_index.slots[slot] >= 0)
        return b->sym_index.slots[slot];
    if (b->pool_len + len + 1 > b->pool_cap) {
        size_t cap = b->pool_cap;
        while (b->pool_len + len + 1 > cap)
            cap = cap ? cap * 2 : 1 << 16;
        if (grow(&b->pool, cap) != 0)
            return -1;
        b->pool_cap = cap;
    }
    if (b->n_syms == b->syms_cap) {
        int cap = b->syms_cap ? b->syms_cap * 2 : 1024;
        if (grow(&b->syms, (size_t)cap * sizeof(*b->syms)) != 0)
            return -1;
        b->syms_cap = cap;
    }
    int s = b->n_syms++;
    memcpy(b->pool + b->pool_len, p, len);
    b->pool[b->pool_len + len] = '\0';
    b->syms[s] = (struct symbol){.off = b->pool_len, .len = (int)len, .id = -1};
    b->pool_len += len + 1;
    b->sym_index.slots[slot] = s;
    if (++b->sym_index.n * 2 > (int)(b->sym_index.mask + 1) && sym_rehash(b) != 0)
        return -1;
    return s;
}

/* ---- vocab.json ---- */

static int file_error(struct diag *err, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int file_error(struct diag *err, const char *file, int line, int col, const char *fmt, ...)
{
    attn_diag_clear(err);
    snprintf(err->file, sizeof(err->file), "%s", file);
    err->line = line;
    err->col = col;
    va_list ap;
    va_start(ap, fmt);
    attn_diag_vset(err, "", fmt, ap);
    va_end(ap);
    return -1;
}

/* jansson counts columns in characters; diag columns are bytes, so they come from the byte
 * position (which jansson puts just past the offending character). */
static int json_byte_col(const char *text, size_t len, const json_error_t *je)
{
    size_t pos = je->position > 0 ? (size_t)je->position : 0;
    if (pos > len)
        pos = len;
    size_t start = pos;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    size_t col = pos > start ? pos - start : 1;
    return col > INT_MAX ? INT_MAX : (int)col;
}

static int load_vocab(struct bpe *b, const char *path, struct diag *err)
{
    char *text;
    size_t len;
    if (attn_fsutil_read_file(&text, &len, path, BPE_MAX_FILE_BYTES, err) != 0)
        return -1;
    if (attn_json_has_bom(text, len)) {
        free(text);
        return file_error(err, path, 1, 1, ATTN_JSON_BOM_MSG);
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root && attn_json_out_of_memory(&je, text, len)) {
        free(text);
        return attn_diag_file(err, path, "out of memory reading the JSON");
    }
    if (!root) {
        int col = json_byte_col(text, len, &je);
        free(text);
        char shown[2 * JSON_ERROR_TEXT_LENGTH]; /* jansson quotes the bytes as they are */
        return file_error(err, path, je.line > 0 ? je.line : 0, je.line > 0 ? col : 0,
                          "not valid JSON: %s", attn_utf8_esc(shown, sizeof(shown), je.text));
    }
    free(text);
    if (!json_is_object(root)) {
        json_decref(root);
        return file_error(err, path, 0, 0,
                          "expected a JSON object of token -> id (Hugging Face's vocab.json)");
    }
    if (json_object_size(root) == 0) {
        json_decref(root);
        return file_error(err, path, 0, 0, "the vocabulary is empty");
    }

    int max_id = -1, rc = -1;
    char *bytes = NULL;
    size_t bytes_cap = 0;
    const char *key;
    size_t key_len;
    json_t *value;
    char shown[160];
    json_object_keylen_foreach(root, key, key_len, value)
    {
        if (key_len == 0) {
            file_error(err, path, 0, 0, "an empty token \"\"");
            goto out;
        }
        if (!json_is_integer(value)) {
            show(shown, sizeof(shown), key, key_len);
            file_error(err, path, 0, 0, "token \"%s\": the id must be an integer", shown);
            goto out;
        }
        json_int_t id = json_integer_value(value);
        if (id < 0 || id >= BPE_MAX_VOCAB) {
            show(shown, sizeof(shown), key, key_len);
            file_error(err, path, 0, 0, "token \"%s\": id %lld is out of range (0..%d)", shown,
                       (long long)id, BPE_MAX_VOCAB - 1);
            goto out;
        }
        if (key_len > bytes_cap) {
            if (grow(&bytes, key_len) != 0) {
                attn_diag_file(err, path, "out of memory");
                goto out;
            }
            bytes_cap = key_len;
        }
        size_t bad_at;
        uint32_t bad_cp;
        int nb = unspell(bytes, key, key_len, &bad_at, &bad_cp);
        if (nb < 0) {
            show(shown, sizeof(shown), key, key_len);
            file_error(err, path, 0, 0,
                       "token \"%s\": character %zu (U+%04X) is not one of GPT-2's 256 byte "
                       "characters (is this a byte-level BPE vocabulary?)",
                       shown, bad_at + 1, (unsigned)bad_cp);
            goto out;
        }
        /* The mapping is one to one and jansson refuses repeated keys: a new symbol, or a
         * single byte's. */
        int sym = sym_intern(b, bytes, (size_t)nb); /* may move b->syms */
        if (sym < 0) {
            attn_diag_file(err, path, "out of memory");
            goto out;
        }
        b->syms[sym].id = (int)id;
        if (id > max_id)
            max_id = (int)id;
    }

    b->vocab_size = max_id + 1;
    b->id_sym = malloc((size_t)b->vocab_size * sizeof(*b->id_sym));
    if (!b->id_sym) {
        attn_diag_file(err, path, "out of memory");
        goto out;
    }
    for (int i = 0; i < b->vocab_size; i++)
        b->id_sym[i] = -1;
    for (int s = 0; s < b->n_syms; s++) {
        int id = b->syms[s].id;
        if (id < 0)
            continue;
        if (b->id_sym[id] >= 0) {
            char first[120], second[120];
            spell(first, sizeof(first), sym_bytes(b, b->id_sym[id]),
                  (size_t)b->syms[b->id_sym[id]].len);
            spell(second, sizeof(second), sym_bytes(b, s), (size_t)b->syms[s].len);
            file_error(err, path, 0, 0, "tokens \"%s\" and \"%s\" have the same id %d", first,
                       second, id);
            goto out;
        }
        b->id_sym[id] = s;
    }
    rc = 0;
out:
    free(bytes);
    json_decref(root);
    return rc;
}

/* ---- merges.txt ---- */

/* One symbol of a merges line (len bytes at s, starting at byte column col): its number, or -1
 * with err set when it is not vocab.json's spelling of bytes or no earlier line makes it. */
static int merge_symbol(struct bpe *b, const char *s, size_t len, const char *path, int line,
                        int col, char *scratch, struct diag *err)
{
    size_t bad_at;
    uint32_t bad_cp;
    int nb = unspell(scratch, s, len, &bad_at, &bad_cp);
    if (nb < 0) {
        if (bad_cp == 0xFFFFFFFF)
            return file_error(err, path, line, col + (int)bad_at, "not valid UTF-8");
        return file_error(err, path, line, col + (int)bad_at,
                          "U+%04X is not one of GPT-2's 256 byte characters", (unsigned)bad_cp);
    }
    int sym = nb == 1 ? (unsigned char)scratch[0] : sym_find(b, scratch, (size_t)nb);
    if (sym < 0) {
        char shown[160];
        show(shown, sizeof(shown), s, len);
        return file_error(err, path, line, col,
                          "\"%s\" is neither a token of the vocabulary nor made by an earlier "
                          "merge",
                          shown);
    }
    return sym;
}

static int load_merges(struct bpe *b, const char *path, struct diag *err)
{
    char *text;
    size_t len;
    if (attn_fsutil_read_file(&text, &len, path, BPE_MAX_FILE_BYTES, err) != 0)
        return -1;
    /* Grown as merges are read, never sized by the file: 60 MB of newlines is an error at
       line 1, not 600 MB of table first. */
    char *scratch = malloc(len + 1);
    int rc = -1, first_merge_line = 1;
    bool header = false;
    if (!scratch || attn_bpe_merges_init(&b->merges, 1024) != 0) {
        attn_diag_file(err, path, "out of memory");
        goto out;
    }

    const char *p = text, *end = text + len;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (eol > p && eol[-1] == '\r') /* a file saved on Windows */
            eol--;
        size_t n = (size_t)(eol - p); /* the file limit keeps lines and columns in an int */
        /* encoder.py skips the first line whatever it holds; Hugging Face only "#version". */
        if (line == 1 && n >= 8 && memcmp(p, "#version", 8) == 0) {
            first_merge_line = 2;
            header = true;
            p = next;
            continue;
        }
        const char *sp = memchr(p, ' ', n);
        if (n == 0) {
            file_error(err, path, line, 1, "an empty line; each line is a merge \"a b\"");
            goto out;
        }
        if (!sp) {
            file_error(err, path, line, (int)n + 1,
                       "one symbol; expected two separated by a space (\"a b\")");
            goto out;
        }
        if (sp == p) {
            file_error(err, path, line, 1, "the line starts with a space; expected \"a b\"");
            goto out;
        }
        const char *second = sp + 1;
        size_t n1 = (size_t)(sp - p), n2 = (size_t)(eol - second);
        if (n2 == 0) {
            file_error(err, path, line, (int)n + 1, "the second symbol is missing");
            goto out;
        }
        const char *sp2 = memchr(second, ' ', n2);
        if (sp2) {
            file_error(err, path, line, (int)(sp2 - p) + 1,
                       "more than two symbols; expected \"a b\"");
            goto out;
        }
        int x = merge_symbol(b, p, n1, path, line, 1, scratch, err);
        if (x < 0)
            goto out;
        int y = merge_symbol(b, second, n2, path, line, (int)n1 + 2, scratch, err);
        if (y < 0)
            goto out;
        int r = attn_bpe_merges_find(&b->merges, x, y);
        if (r >= 0) {
            file_error(err, path, line, 1, "repeats the merge of line %d", first_merge_line + r);
            goto out;
        }
        size_t lx = (size_t)b->syms[x].len, ly = (size_t)b->syms[y].len;
        memcpy(scratch, sym_bytes(b, x), lx);
        memcpy(scratch + lx, sym_bytes(b, y), ly);
        int result = sym_intern(b, scratch, lx + ly);
        if (result < 0 || attn_bpe_merges_put(&b->merges, x, y, b->merges.n, result) != 0) {
            attn_diag_file(err, path, "out of memory");
            goto out;
        }
        p = next;
    }
    /* An empty file is a mistake (a failed download), not a tokenizer without merges: that one
       says so with its "#version" line and nothing after it. */
    if (b->merges.n == 0 && !header) {
        file_error(err, path, 0, 0,
                   "is empty: a merges.txt starts with \"#version: 0.2\" and lists one merge "
                   "\"a b\" a line (GPT-2's has 50000)");
        goto out;
    }
    rc = 0;
out:
    free(scratch);
    free(text);
    return rc;
}

/* ---- loading ---- */

int attn_bpe_load(struct bpe **out, const char *vocab_path, const char *merges_path,
                  struct diag *err)
{
    *out = NULL;
    attn_diag_clear(err);
    struct bpe *b = calloc(1, sizeof(*b));
    if (!b)
        return attn_diag_file(err, vocab_path, "out of memory");
    bool ok = table_init(&b->sym_index, 1 << 16) == 0;
    for (int byte = 0; byte < 256 && ok; byte++) { /* symbols 0..255: the single bytes */
        char c = (char)byte;
        ok = sym_intern(b, &c, 1) == byte;
    }
    if (!ok) {
        attn_bpe_free(b);
        return attn_diag_file(err, vocab_path, "out of memory");
    }
    if (load_vocab(b, vocab_path, err) != 0 || load_merges(b, merges_path, err) != 0) {
        attn_bpe_free(b);
        return -1;
    }

    int code;
    PCRE2_SIZE at;
    b->re = pcre2_compile((PCRE2_SPTR)pretokenize_pattern, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!b->re && code == PCRE2_ERROR_HEAP_FAILED) {
        attn_bpe_free(b);
        return attn_diag_set(err, "", "out of memory compiling GPT-2's regex");
    }
    if (!b->re) {
        /* A PCRE2 built without Unicode support: nothing the files can change. */
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        attn_diag_set(err, "", "PCRE2 cannot compile GPT-2's regex: %s", (const char *)msg);
        attn_bpe_free(b);
        return -1;
    }
    pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE); /* optional: the interpreter gives the same */
    *out = b;
    return 0;
}

void attn_bpe_free(struct bpe *b)
{
    if (!b)
        return;
    pcre2_code_free(b->re);
    table_free(&b->sym_index);
    attn_bpe_merges_free(&b->merges);
    free(b->pool);
    free(b->syms);
    free(b->id_sym);
    free(b);
}

int attn_bpe_vocab_size(const struct bpe *b)
{
    return b->vocab_size;
}

const char *attn_bpe_token_bytes(const struct bpe *b, int id, size_t *len)
{
    if (id < 0 || id >= b->vocab_size || b->id_sym[id] < 0) {
        *len = 0;
        return NULL;
    }
    int s = b->id_sym[id];
    *len = (size_t)b->syms[s].len;
    return sym_bytes(b, s);
}

int attn_bpe_token_id(const struct bpe *b, const char *bytes, size_t len)
{
    int s = sym_find(b, bytes, len);
    return s < 0 ? -1 : b->syms[s].id;
}

void attn_bpe_label_bytes(char *out, size_t size, const char *p, size_t len)
{
    if (size == 0)
        return;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        char unit[8];
        uint32_t cp = 0;
        /* a sequence must not run past len: decode from a copy when it is near the end */
        char tail[5] = {0};
        const char *at = p + i;
        if (len - i < 4) {
            memcpy(tail, p + i, len - i);
            at = tail;
        }
        int k = attn_utf8_decode(at, &cp);
        bool text = k > 0 && cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp <= 0x9F) &&
                    cp != 0x2028 && cp != 0x2029;
        int n;
        if (text) {
            memcpy(unit, p + i, (size_t)k);
            n = k;
        } else {
            n = snprintf(unit, sizeof(unit), "<%02X>", (unsigned char)p[i]);
            k = 1;
        }
        if (o + (size_t)n + 1 > size)
            break;
        memcpy(out + o, unit, (size_t)n);
        o += (size_t)n;
        i += (size_t)k;
    }
    out[o] = '\0';
}

void attn_bpe_token_label(char *out, size_t size, const struct bpe *b, int id)
{
    if (size == 0)
        return;
    size_t len;
    const char *p = attn_bpe_token_bytes(b, id, &len);
    if (!p) {
        snprintf(out, size, "<unused %d>", id);
        return;
    }
    attn_bpe_label_bytes(out, size, p, len);
}

/* ---- encoding ---- */

/* What one encode call reuses from piece to piece. */
struct work {
    struct bpe_scratch merge; /* the merge loop's nodes and heap */
    int *syms;                /* the piece's symbols */
    size_t syms_cap;
    int *out_ids;
    size_t *out_starts;
    int out_n, out_cap;
    /* Pieces met before: text offset and length -> the first of their ids in out_ids. */
    size_t *seen_off;
    int *seen_len, *seen_first, *seen_count;
    size_t seen_mask;
    int seen_n;
};

/* Returns 0, or -1 out of memory. */
static int out_push(struct work *w, int id, size_t start)
{
    if (w->out_n == w->out_cap) {
        int cap = w->out_cap * 2;
        if (grow(&w->out_ids, (size_t)cap * sizeof(*w->out_ids)) != 0 ||
            grow(&w->out_starts, ((size_t)cap + 1) * sizeof(size_t)) != 0)
            return -1;
        w->out_cap = cap;
    }
    w->out_ids[w->out_n] = id;
    w->out_starts[w->out_n++] = start;
    return 0;
}

static int encode_oom(struct diag *err, size_t len)
{
    return attn_diag_set(err, "", "out of memory tokenizing %zu bytes of text", len);
}

/* Merges the bytes of one piece (text[start .. start+m)) the way encoder.py does: take the
 * pair of neighbours with the lowest rank, merge every occurrence of it left to right, repeat
 * until no neighbours have a rank (bpemerge.c, BPE_ROUNDS). Appends the ids, or fails naming a
 * final symbol vocab.json lacks; -1 without a message is out of memory. */
static int bpe_piece(struct work *w, const struct bpe *b, const char *text, size_t start, size_t m,
                     struct diag *err)
{
    if (m > w->syms_cap) {
        if (grow(&w->syms, m * sizeof(int)) != 0)
            return -1;
        w->syms_cap = m;
    }
    int n = (int)m;
    for (int i = 0; i < n; i++)
        w->syms[i] = (unsigned char)text[start + (size_t)i];
    if (attn_bpe_merge(w->syms, n, &n, &b->merges, BPE_ROUNDS, &w->merge) != 0)
        return -1;

    size_t at = start;
    for (int i = 0; i < n; i++) {
        int s = w->syms[i], id = b->syms[s].id;
        if (id < 0) {
            char sym[200], piece[200];
            spell(sym, sizeof(sym), sym_bytes(b, s), (size_t)b->syms[s].len);
            spell(piece, sizeof(piece), text + start, m);
            return attn_diag_set(err, "",
                                 "\"%s\" (in \"%s\" at byte %zu) is not in the vocabulary: "
                                 "vocab.json lacks a token its merges make",
                                 sym, piece, start);
        }
        if (out_push(w, id, at) != 0)
            return -1;
        at += (size_t)b->syms[s].len;
    }
    return 0;
}

static size_t seen_slot(const struct work *w, const char *text, size_t off, size_t len)
{
    size_t i = hash_bytes(text + off, len) & w->seen_mask;
    for (;; i = (i + 1) & w->seen_mask) {
        if (w->seen_first[i] < 0 ||
            ((size_t)w->seen_len[i] == len && memcmp(text + w->seen_off[i], text + off, len) == 0))
            return i;
    }
}

/* A fresh table of slots entries; on failure w's table is as it was. */
static int seen_alloc(struct work *w, size_t slots)
{
    size_t *off = malloc(slots * sizeof(*off));
    int *len = malloc(slots * sizeof(int)), *first = malloc(slots * sizeof(int)),
        *count = malloc(slots * sizeof(int));
    if (!off || !len || !first || !count) {
        free(off);
        free(len);
        free(first);
        free(count);
        return -1;
    }
    memset(first, 0xFF, slots * sizeof(int));
    w->seen_off = off;
    w->seen_len = len;
    w->seen_first = first;
    w->seen_count = count;
    w->seen_mask = slots - 1;
    w->seen_n = 0;
    return 0;
}

static void seen_free(struct work *w)
{
    free(w->seen_off);
    free(w->seen_len);
    free(w->seen_first);
    free(w->seen_count);
}

/* Remembers a piece's ids; a table that cannot grow forgets nothing and learns nothing more. */
static void seen_add(struct work *w, const char *text, size_t off, size_t len, int first, int count)
{
    if ((size_t)(w->seen_n + 1) * 2 > w->seen_mask + 1) {
        struct work old = *w;
        if (seen_alloc(w, (old.seen_mask + 1) * 2) != 0)
            return;
        for (size_t i = 0; i <= old.seen_mask; i++) {
            if (old.seen_first[i] < 0)
                continue;
            size_t j = seen_slot(w, text, old.seen_off[i], (size_t)old.seen_len[i]);
            w->seen_off[j] = old.seen_off[i];
            w->seen_len[j] = old.seen_len[i];
            w->seen_first[j] = old.seen_first[i];
            w->seen_count[j] = old.seen_count[i];
            w->seen_n++;
        }
        seen_free(&old);
    }
    size_t j = seen_slot(w, text, off, len);
    w->seen_off[j] = off;
    w->seen_len[j] = (int)len;
    w->seen_first[j] = first;
    w->seen_count[j] = count;
    w->seen_n++;
}

static void work_free(struct work *w)
{
    attn_bpe_scratch_free(&w->merge);
    free(w->syms);
    free(w->out_ids);
    free(w->out_starts);
    seen_free(w);
}

int attn_bpe_encode_spans(int **ids, size_t **starts, int *n, const struct bpe *b, const char *text,
                          size_t len, struct diag *err)
{
    *ids = NULL;
    if (starts)
        *starts = NULL;
    *n = 0;
    attn_diag_clear(err);
    /* Every token is at least one byte, so an int counts them. */
    if (len > (size_t)INT_MAX)
        return attn_diag_set(
            err, "", "the text is too long to tokenize (%zu bytes, the limit is %d)", len, INT_MAX);
    struct work w;
    memset(&w, 0, sizeof(w));
    w.out_cap = 64; /* allocated up front: the result is never NULL */
    w.out_ids = malloc((size_t)w.out_cap * sizeof(*w.out_ids));
    w.out_starts = malloc(((size_t)w.out_cap + 1) * sizeof(*w.out_starts));
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (seen_alloc(&w, 256) != 0 || !w.out_ids || !w.out_starts || !md) {
        pcre2_match_data_free(md);
        work_free(&w);
        return encode_oom(err, len);
    }
    int rc = 0;
    /* The first match checks the whole text is UTF-8 (and says where it is not); the later
     * ones skip that check, which would otherwise rescan the rest of the text every time. */
    uint32_t check = 0;
    size_t off = 0;
    while (off < len) {
        int m = pcre2_match(b->re, (PCRE2_SPTR)text, len, off, check, md, NULL);
        if (m <= PCRE2_ERROR_UTF8_ERR1 && m >= PCRE2_ERROR_UTF8_ERR21) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(m, msg, sizeof(msg));
            rc = attn_diag_set(err, "", "the text is not valid UTF-8 at byte %zu (%s)",
                               (size_t)pcre2_get_startchar(md), (const char *)msg);
            break;
        }
        check = PCRE2_NO_UTF_CHECK;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        /* Every character is a letter, a digit, white space or other, so the pieces tile the
         * text; anything else (PCRE2 out of memory, say) is reported, never skipped. */
        if (m < 0 || ov[0] != off || ov[1] <= off) {
            PCRE2_UCHAR msg[160] = "the pieces do not cover the text";
            if (m < 0)
                pcre2_get_error_message(m, msg, sizeof(msg));
            rc = attn_diag_set(err, "", "cannot pre-tokenize at byte %zu: %s", off,
                               (const char *)msg);
            break;
        }
        size_t plen = ov[1] - ov[0];
        size_t slot = seen_slot(&w, text, off, plen);
        if (w.seen_first[slot] >= 0) {
            int first = w.seen_first[slot], count = w.seen_count[slot];
            size_t at = off;
            for (int i = 0; i < count && rc == 0; i++) {
                int id = w.out_ids[first + i];
                if (out_push(&w, id, at) != 0)
                    rc = encode_oom(err, len);
                at += (size_t)b->syms[b->id_sym[id]].len;
            }
            if (rc != 0)
                break;
        } else {
            int first = w.out_n;
            if (bpe_piece(&w, b, text, off, plen, err) != 0) {
                rc = err->msg[0] ? -1 : encode_oom(err, len);
                break;
            }
            seen_add(&w, text, off, plen, first, w.out_n - first);
        }
        off = ov[1];
    }
    pcre2_match_data_free(md);
    if (rc == 0) {
        w.out_starts[w.out_n] = len;
        *ids = w.out_ids;
        *n = w.out_n;
        w.out_ids = NULL;
        if (starts) {
            *starts = w.out_starts;
            w.out_starts = NULL;
        }
    }
    work_free(&w);
    return rc;
}

int attn_bpe_encode(int **ids, int *n, const struct bpe *b, const char *text, size_t len,
                    struct diag *err)
{
    return attn_bpe_encode_spans(ids, NULL, n, b, text, len, err);
}
