/* attn_hftok_load: tokenizer.json (and tokenizer_config.json) into a struct hftok.
 *
 * Every value is checked where it is read, and every problem is reported with the file, the
 * line and column of the value and its JSON path ("model.merges[17]: ..."). The location comes
 * from walking the file's text along that path (json_locate): jansson keeps no positions. An
 * option the tokenizers library knows but attnscope does not implement, and any key neither
 * knows, is refused by name: a tokenizer is read in full or not at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/utf8.h"
#include "pretrained/hftok.h"
#include "pretrained/hftok_int.h"
#include "pretrained/jsonoom.h"
#include "pretrained/spm.h"
#include "pretrained/uni.h"

/* ---- where a JSON path is in the text ---------------------------------------------------- */

#define MAX_DEPTH 24

struct jseg {
    const char *key; /* NULL: an array index */
    size_t key_len;
    long index;
};

struct jctx {
    const char *text;
    size_t len;
    const char *file;
    struct jseg path[MAX_DEPTH];
    int depth;
    struct diag *err;
};

static void push_key(struct jctx *c, const char *key)
{
    if (c->depth < MAX_DEPTH)
        c->path[c->depth] = (struct jseg){key, strlen(key), 0};
    c->depth++;
}

static void push_keyn(struct jctx *c, const char *key, size_t len)
{
    if (c->depth < MAX_DEPTH)
        c->path[c->depth] = (struct jseg){key, len, 0};
    c->depth++;
}

static void push_index(struct jctx *c, long i)
{
    if (c->depth < MAX_DEPTH)
        c->path[c->depth] = (struct jseg){NULL, 0, i};
    c->depth++;
}

static void pop(struct jctx *c)
{
    c->depth--;
}

static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/* i at a '"': the index just past the closing quote. */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return len;
}

/* i at a value: the index just past it. */
static size_t skip_value(const char *t, size_t len, size_t i)
{
    if (i >= len)
        return len;
    if (t[i] == '"')
        return skip_string(t, len, i);
    if (t[i] == '{' || t[i] == '[') {
        int depth = 0;
        for (; i < len; i++) {
            if (t[i] == '"') {
                i = skip_string(t, len, i) - 1;
            } else if (t[i] == '{' || t[i] == '[') {
                depth++;
            } else if (t[i] == '}' || t[i] == ']') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return len;
    }
    while (i < len && !strchr(",}] \t\r\n", t[i]))
        i++;
    return i;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Whether the JSON string at t[i] ('"') spells key[0..key_len). */
static bool string_is(const char *t, size_t len, size_t i, const char *key, size_t key_len)
{
    size_t k = 0;
    for (i++; i < len && t[i] != '"'; i++) {
        char buf[4];
        size_t n = 1;
        buf[0] = t[i];
        if (t[i] == '\\' && i + 1 < len) {
            char e = t[++i];
            switch (e) {
            case 'n':
                buf[0] = '\n';
                break;
            case 't':
                buf[0] = '\t';
                break;
            case 'r':
                buf[0] = '\r';
                break;
            case 'b':
                buf[0] = '\b';
                break;
            case 'f':
                buf[0] = '\f';
                break;
            case 'u': {
                uint32_t cp = 0;
                for (int d = 0; d < 4 && i + 1 < len; d++)
                    cp = cp * 16 + (uint32_t)(hexval(t[++i]) < 0 ? 0 : hexval(t[i]));
                if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < len && t[i + 1] == '\\' &&
                    t[i + 2] == 'u') {
                    uint32_t lo = 0;
                    for (int d = 0; d < 4; d++)
                        lo = lo * 16 +
                             (uint32_t)(hexval(t[i + 3 + d]) < 0 ? 0 : hexval(t[i + 3 + d]));
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
                n = (size_t)attn_utf8_encode(cp, buf);
                if (n == 0) { /* a lone surrogate or \u0000: compare as given */
                    n = 1;
                    buf[0] = cp == 0 ? '\0' : '?';
                }
                break;
            }
            default:
                buf[0] = e;
            }
        }
        if (k + n > key_len || memcmp(key + k, buf, n) != 0)
            return false;
        k += n;
    }
    return k == key_len;
}

/* The byte offset of the deepest value of the path that exists (the root at worst). */
static size_t locate(const struct jctx *c)
{
    const char *t = c->text;
    size_t len = c->len, at = skip_ws(t, len, 0);
    int depth = c->depth < MAX_DEPTH ? c->depth : MAX_DEPTH;
    for (int d = 0; d < depth; d++) {
        const struct jseg *s = &c->path[d];
        size_t i = at;
        if (s->key && i < len && t[i] == '{') {
            size_t found = (size_t)-1;
            i = skip_ws(t, len, i + 1);
            while (i < len && t[i] == '"') {
                bool hit = string_is(t, len, i, s->key, s->key_len);
                size_t key_at = i;
                i = skip_ws(t, len, skip_string(t, len, i));
                if (i < len && t[i] == ':')
                    i = skip_ws(t, len, i + 1);
                if (hit) {
                    /* a value that is a scalar is shown at its key (where it is read) */
                    found = key_at;
                    if (d + 1 < depth || t[i] == '{' || t[i] == '[')
                        found = i;
                    break;
                }
                i = skip_ws(t, len, skip_value(t, len, i));
                if (i < len && t[i] == ',')
                    i = skip_ws(t, len, i + 1);
            }
            if (found == (size_t)-1)
                return at;
            at = found;
        } else if (!s->key && i < len && t[i] == '[') {
            i = skip_ws(t, len, i + 1);
            long k = 0;
            while (i < len && t[i] != ']' && k < s->index) {
                i = skip_ws(t, len, skip_value(t, len, i));
                if (i < len && t[i] == ',')
                    i = skip_ws(t, len, i + 1);
                k++;
            }
            if (i >= len || t[i] == ']')
                return at;
            at = i;
        } else {
            return at;
        }
    }
    return at;
}

static void path_text(char *out, size_t size, const struct jctx *c)
{
    size_t o = 0;
    out[0] = '\0';
    int depth = c->depth < MAX_DEPTH ? c->depth : MAX_DEPTH;
    for (int d = 0; d < depth && o + 16 < size; d++) {
        const struct jseg *s = &c->path[d];
        if (!s->key) {
            o += (size_t)snprintf(out + o, size - o, "[%ld]", s->index);
            continue;
        }
        bool plain = s->key_len > 0;
        for (size_t k = 0; k < s->key_len; k++) {
            char ch = s->key[k];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_'))
                plain = false;
        }
        if (plain) {
            o += (size_t)snprintf(out + o, size - o, "%s%.*s", d ? "." : "", (int)s->key_len,
                                  s->key);
        } else {
            /* a vocabulary token or a special token's name: quoted, control bytes escaped */
            o += (size_t)snprintf(out + o, size - o, "[\"");
            for (size_t k = 0; k < s->key_len && k < 60 && o + 8 < size; k++) {
                unsigned char ch = (unsigned char)s->key[k];
                if (ch < 0x20 || ch == 0x7F || ch == '"' || ch == '\\')
                    o += (size_t)snprintf(out + o, size - o, "\\x%02X", ch);
                else
                    out[o++] = (char)ch;
            }
            o += (size_t)snprintf(out + o, size - o, "\"]");
        }
    }
    if (o >= size)
        out[size - 1] = '\0';
}

static int jerr(struct jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jerr(struct jctx *c, const char *fmt, ...)
{
    char path[200], msg[DIAG_MSG_MAX];
    path_text(path, sizeof(path), c);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t at = locate(c);
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < c->len; i++) {
        if (c->text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    attn_diag_clear(c->err);
    snprintf(c->err->file, sizeof(c->err->file), "%s", c->file);
    c->err->line = line;
    c->err->col = col;
    attn_diag_set(c->err, "", "%s%s%s", path, path[0] ? ": " : "", msg);
    return -1;
}

/* Copies text for a message: at most 60 bytes of it, cut after a whole character, escaped as
 * every text a person reads is (common/utf8.h: controls, bidi controls, a byte order mark). */
static const char *shown(char *buf, size_t size, const char *s, size_t len)
{
    size_t cut = len < 60 ? len : 60;
    while (cut > 0 && cut < len && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    size_t o = attn_utf8_escape(buf, size, s, cut, 0);
    if (cut < len && o + 4 < size)
        snprintf(buf + o, size - o, "...");
    return buf;
}

/* ---- typed fields -------------------------------------------------------------------------- */

/* Refuses a key of obj that is not in known (NULL-terminated); "type" is always allowed. */
static int only_keys(struct jctx *c, json_t *obj, const char *component, const char *const *known)
{
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach(obj, key, klen, v)
    {
        bool ok = klen == 4 && memcmp(key, "type", 4) == 0;
        for (int i = 0; known[i] && !ok; i++)
            ok = strlen(known[i]) == klen && memcmp(known[i], key, klen) == 0;
        if (!ok) {
            push_keyn(c, key, klen);
            char b[80];
            int rc = jerr(c, "'%s' is not an option of %s that attnscope supports",
                          shown(b, sizeof(b), key, klen), component);
            pop(c);
            return rc;
        }
    }
    return 0;
}

/* A boolean: absent gives def (or an error when required), null too when nullable. */
static int get_bool(struct jctx *c, json_t *obj, const char *key, bool *out, bool def,
                    bool required, bool nullable)
{
    json_t *v = json_object_get(obj, key);
    push_key(c, key);
    int rc = 0;
    if (!v) {
        if (required)
            rc = jerr(c, "is missing (true or false)");
        else
            *out = def;
    } else if (json_is_null(v) && nullable) {
        *out = def;
    } else if (!json_is_boolean(v)) {
        rc = jerr(c, "must be true or false");
    } else {
        *out = json_is_true(v);
    }
    pop(c);
    return rc;
}

/* A string, copied (NUL-terminated; *len its bytes). Absent or null (when nullable) gives
 * NULL. */
static int get_string(struct jctx *c, json_t *obj, const char *key, char **out, size_t *len,
                      bool required, bool nullable)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (len)
        *len = 0;
    push_key(c, key);
    int rc = 0;
    if (!v || (json_is_null(v) && nullable)) {
        if (required && !v)
            rc = jerr(c, "is missing");
    } else if (!json_is_string(v)) {
        rc = jerr(c, "must be a string");
    } else {
        size_t n = json_string_length(v);
        *out = malloc(n + 1);
        if (!*out) {
            rc = jerr(c, "out of memory");
        } else {
            memcpy(*out, json_string_value(v), n);
            (*out)[n] = '\0';
            if (len)
                *len = n;
        }
    }
    pop(c);
    return rc;
}

/* One character (Metaspace's replacement, Strip's content). */
static int get_char(struct jctx *c, json_t *obj, const char *key, uint32_t *out)
{
    json_t *v = json_object_get(obj, key);
    push_key(c, key);
    int rc = 0;
    if (!v) {
        rc = jerr(c, "is missing (one character)");
    } else if (!json_is_string(v)) {
        rc = jerr(c, "must be a string of one character");
    } else {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        int k = n ? attn_utf8_decode(s, out) : 0;
        if (k <= 0 || (size_t)k != n)
            rc = jerr(c, "must be exactly one character");
    }
    pop(c);
    return rc;
}

static int get_int(struct jctx *c, json_t *obj, const char *key, long *out, long lo, long hi)
{
    json_t *v = json_object_get(obj, key);
    push_key(c, key);
    int rc = 0;
    if (!v)
        rc = jerr(c, "is missing (an integer)");
    else if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        rc = jerr(c, "must be an integer from %ld to %ld", lo, hi);
    else
        *out = (long)json_integer_value(v);
    pop(c);
    return rc;
}

static const char *type_of(json_t *obj)
{
    json_t *t = json_object_get(obj, "type");
    return t && json_is_string(t) ? json_string_value(t) : NULL;
}

/* obj must be an object with a string "type"; *type gets it. */
static int component(struct jctx *c, json_t *obj, const char **type, const char *what)
{
    if (!json_is_object(obj))
        return jerr(c, "must be an object (a %s with its \"type\")", what);
    *type = type_of(obj);
    if (!*type) {
        push_key(c, "type");
        int rc = jerr(c, json_object_get(obj, "type") ? "must be a string" : "is missing");
        pop(c);
        return rc;
    }
    return 0;
}

static int unsupported(struct jctx *c, const char *type, const char *what)
{
    push_key(c, "type");
    char b[80];
    int rc = jerr(c, "'%s' is not supported (attnscope reads these %s: see docs/tokenizers.md)",
                  shown(b, sizeof(b), type, strlen(type)), what);
    pop(c);
    return rc;
}

/* A pattern {"String": s} or {"Regex": r}. */
static int get_pattern(struct jctx *c, json_t *obj, struct hf_pattern *p)
{
    json_t *v = json_object_get(obj, "pattern");
    push_key(c, "pattern");
    int rc = 0;
    json_t *s =
        v && json_is_object(v) && json_object_size(v) == 1 ? json_object_get(v, "String") : NULL;
    json_t *r =
        v && json_is_object(v) && json_object_size(v) == 1 ? json_object_get(v, "Regex") : NULL;
    if (!v) {
        rc = jerr(c, "is missing ({\"String\": ...} or {\"Regex\": ...})");
    } else if ((!s && !r) || (s && !json_is_string(s)) || (r && !json_is_string(r))) {
        rc = jerr(c, "must be {\"String\": \"...\"} or {\"Regex\": \"...\"}");
    } else {
        json_t *str = s ? s : r;
        push_key(c, s ? "String" : "Regex");
        struct diag e;
        attn_diag_clear(&e);
        p->re =
            attn_hf_regex_compile(json_string_value(str), json_string_length(str), s != NULL, &e);
        if (!p->re)
            rc = jerr(c, "%s", e.msg);
        pop(c);
    }
    pop(c);
    return rc;
}

static int get_behavior(struct jctx *c, json_t *obj, enum hf_behavior *out, bool required)
{
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    json_t *v = json_object_get(obj, "behavior");
    push_key(c, "behavior");
    int rc = 0;
    if (!v) {
        if (required)
            rc = jerr(c, "is missing");
        else
            *out = HF_ISOLATED;
    } else {
        rc = -2;
        for (int i = 0; i < 5 && json_is_string(v); i++)
            if (strcmp(json_string_value(v), names[i]) == 0) {
                *out = (enum hf_behavior)i;
                rc = 0;
            }
        if (rc)
            rc = jerr(c, "must be Removed, Isolated, MergedWithPrevious, MergedWithNext or "
                         "Contiguous");
    }
    pop(c);
    return rc;
}

/* ---- Sequence: a list of components, each loaded like a single one ------------------------- */

typedef int (*load_item_fn)(struct jctx *c, json_t *obj, void *item);

/* {"type": "Sequence", key: [...]}: a fresh array of the list's items, each size bytes, loaded by
 * load_one, into *items (*n: how many were loaded, the failed one included, so that freeing
 * them frees what it had made); what names the items in the message ("normalizers"). */
static int load_sequence(struct jctx *c, json_t *obj, const char *key, const char *what,
                         void **items, size_t size, int *n, load_item_fn load_one)
{
    const char *const keys[] = {key, NULL};
    if (only_keys(c, obj, "Sequence", keys))
        return -1;
    json_t *a = json_object_get(obj, key);
    push_key(c, key);
    int rc = 0;
    if (!a || !json_is_array(a)) {
        rc = a ? jerr(c, "must be a list of %s", what) : jerr(c, "is missing");
    } else if (json_array_size(a) > 0 && !(*items = calloc(json_array_size(a), size))) {
        rc = jerr(c, "out of memory");
    } else {
        for (size_t i = 0; i < json_array_size(a) && rc == 0; i++) {
            push_index(c, (long)i);
            rc = load_one(c, json_array_get(a, i), (char *)*items + i * size);
            *n = (int)i + 1;
            pop(c);
        }
    }
    pop(c);
    return rc;
}

/* ---- normalizers --------------------------------------------------------------------------- */

/* Standard base64 as the spm_precompiled crate decodes it (the base64 crate's STANDARD engine):
 * the alphabet A-Z a-z 0-9 + /, no white space, "=" padding to a multiple of 4 characters and
 * only where it belongs, unused bits of the last character 0. Returns the bytes (*out, *len;
 * malloc'd), or -1 with why in msg. */
static int base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len, char *msg,
                         size_t msg_size)
{
    *out = NULL;
    *out_len = 0;
    if (len % 4 != 0) {
        snprintf(msg, msg_size,
                 "is not base64: %zu characters, not a multiple of 4 (padded with '=')", len);
        return -1;
    }
    size_t pad = 0;
    while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
        pad++;
    unsigned char *o = malloc(len / 4 * 3 + 1);
    if (!o) {
        snprintf(msg, msg_size, "out of memory");
        return -1;
    }
    size_t n = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < len - pad; i++) {
        unsigned char c = (unsigned char)s[i];
        int v = c >= 'A' && c <= 'Z'   ? c - 'A'
                : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '+'             ? 62
                : c == '/'             ? 63
                                       : -1;
        if (v < 0) {
            char tmp[5] = {0}, b[80];
            memcpy(tmp, s + i, len - i < 4 ? len - i : 4);
            uint32_t cp;
            int k = attn_utf8_decode(tmp, &cp);
            snprintf(msg, msg_size, "is not base64: '%s' at byte %zu%s",
                     shown(b, sizeof(b), s + i, k > 0 ? (size_t)k : 1), i,
                     c == '=' ? ", padding before the end" : "");
            free(o);
            return -1;
        }
        acc = (acc << 6) | (uint32_t)v;
        if (i % 4 == 3) {
            o[n++] = (unsigned char)(acc >> 16);
            o[n++] = (unsigned char)(acc >> 8);
            o[n++] = (unsigned char)acc;
            acc = 0;
        }
    }
    /* the last group: 2 characters give a byte (4 bits left over), 3 give two (2 bits) */
    if (pad == 2 ? acc & 0xF : pad == 1 ? acc & 0x3 : 0) {
        snprintf(msg, msg_size, "is not base64: its last character has bits set past the data");
        free(o);
        return -1;
    }
    if (pad == 2)
        o[n++] = (unsigned char)(acc >> 4);
    else if (pad == 1) {
        o[n++] = (unsigned char)(acc >> 10);
        o[n++] = (unsigned char)(acc >> 2);
    }
    *out = o;
    *out_len = n;
    return 0;
}

/* Precompiled's precompiled_charsmap: base64 of SentencePiece's blob (attn_hf_charsmap_read). */
static int load_charsmap(struct jctx *c, json_t *obj, struct hf_norm *n)
{
    json_t *v = json_object_get(obj, "precompiled_charsmap");
    push_key(c, "precompiled_charsmap");
    int rc = 0;
    unsigned char *blob = NULL;
    size_t len = 0;
    char msg[200];
    if (!v)
        rc = jerr(c, "is missing (base64 of SentencePiece's precompiled charsmap)");
    else if (!json_is_string(v))
        rc = jerr(c, "must be a string (base64 of SentencePiece's precompiled charsmap)");
    else if (base64_decode(json_string_value(v), json_string_length(v), &blob, &len, msg,
                           sizeof(msg)) ||
             attn_hf_charsmap_read(&n->map, blob, len, msg, sizeof(msg)))
        rc = jerr(c, "%s", msg);
    free(blob);
    pop(c);
    return rc;
}

/* item: a struct hf_norm (the type of load_sequence's items) */
static int load_norm(struct jctx *c, json_t *obj, void *item)
{
    struct hf_norm *n = item;
    const char *type;
    if (component(c, obj, &type, "normalizer"))
        return -1;
    static const char *const none[] = {NULL};
    static const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
    for (int f = 0; f < 4; f++)
        if (strcmp(type, forms[f]) == 0) {
            n->kind = (enum hf_norm_kind)(HN_NFC + f);
            return only_keys(c, obj, type, none);
        }
    if (strcmp(type, "Lowercase") == 0) {
        n->kind = HN_LOWERCASE;
        return only_keys(c, obj, type, none);
    }
    if (strcmp(type, "StripAccents") == 0) {
        n->kind = HN_STRIP_ACCENTS;
        return only_keys(c, obj, type, none);
    }
    if (strcmp(type, "BertNormalizer") == 0) {
        static const char *const keys[] = {"clean_text", "handle_chinese_chars", "strip_accents",
                                           "lowercase", NULL};
        n->kind = HN_BERT;
        if (only_keys(c, obj, type, keys) ||
            get_bool(c, obj, "clean_text", &n->clean_text, true, true, false) ||
            get_bool(c, obj, "handle_chinese_chars", &n->chinese, true, true, false) ||
            get_bool(c, obj, "lowercase", &n->lowercase, true, true, false))
            return -1;
        json_t *sa = json_object_get(obj, "strip_accents");
        n->strip_accents = -1;
        if (sa && !json_is_null(sa)) {
            bool b;
            if (get_bool(c, obj, "strip_accents", &b, false, false, true))
                return -1;
            n->strip_accents = b;
        }
        return 0;
    }
    if (strcmp(type, "Prepend") == 0) {
        static const char *const keys[] = {"prepend", NULL};
        n->kind = HN_PREPEND;
        return only_keys(c, obj, type, keys) ||
                       get_string(c, obj, "prepend", &n->str, &n->str_len, true, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Replace") == 0) {
        static const char *const keys[] = {"pattern", "content", NULL};
        n->kind = HN_REPLACE;
        return only_keys(c, obj, type, keys) || get_pattern(c, obj, &n->pat) ||
                       get_string(c, obj, "content", &n->str, &n->str_len, true, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Strip") == 0) {
        static const char *const keys[] = {"strip_left", "strip_right", NULL};
        n->kind = HN_STRIP;
        return only_keys(c, obj, type, keys) ||
                       get_bool(c, obj, "strip_left", &n->left, false, true, false) ||
                       get_bool(c, obj, "strip_right", &n->right, false, true, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Precompiled") == 0) {
        static const char *const keys[] = {"precompiled_charsmap", NULL};
        n->kind = HN_PRECOMPILED;
        return only_keys(c, obj, type, keys) || load_charsmap(c, obj, n) ? -1 : 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        n->kind = HN_SEQUENCE;
        void *items = NULL;
        int rc = load_sequence(c, obj, "normalizers", "normalizers", &items, sizeof(*n->items),
                               &n->n, load_norm);
        n->items = items;
        return rc;
    }
    return unsupported(c, type,
                       "normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, "
                       "BertNormalizer, Prepend, Replace, Strip, Precompiled and Sequence");
}

/* ---- pre-tokenizers ------------------------------------------------------------------------ */

/* Metaspace's options, shared by the pre-tokenizer and the decoder. */
static int metaspace_options(struct jctx *c, json_t *obj, uint32_t *replacement,
                             enum hf_prepend *prepend, bool *split)
{
    static const char *const keys[] = {"replacement", "add_prefix_space", "prepend_scheme",
                                       "split",       "str_rep",          NULL};
    if (only_keys(c, obj, "Metaspace", keys) || get_char(c, obj, "replacement", replacement))
        return -1;
    *prepend = HF_PREPEND_ALWAYS;
    json_t *ps = json_object_get(obj, "prepend_scheme");
    if (ps) {
        push_key(c, "prepend_scheme");
        const char *s = json_is_string(ps) ? json_string_value(ps) : "";
        int rc = 0;
        if (strcmp(s, "always") == 0)
            *prepend = HF_PREPEND_ALWAYS;
        else if (strcmp(s, "first") == 0)
            *prepend = HF_PREPEND_FIRST;
        else if (strcmp(s, "never") == 0)
            *prepend = HF_PREPEND_NEVER;
        else
            rc = jerr(c, "must be \"always\", \"first\" or \"never\"");
        pop(c);
        if (rc)
            return -1;
    }
    bool aps = true;
    if (get_bool(c, obj, "add_prefix_space", &aps, true, false, true) ||
        get_bool(c, obj, "split", split, true, false, true))
        return -1;
    json_t *sr = json_object_get(obj, "str_rep");
    if (sr && !json_is_null(sr) && !json_is_string(sr)) {
        push_key(c, "str_rep");
        int rc = jerr(c, "must be a string");
        pop(c);
        return rc;
    }
    if (!aps) { /* the legacy option: false means never, and must agree */
        if (*prepend != HF_PREPEND_NEVER && ps) {
            push_key(c, "add_prefix_space");
            int rc = jerr(c, "false does not match prepend_scheme");
            pop(c);
            return rc;
        }
        *prepend = HF_PREPEND_NEVER;
    }
    return 0;
}

/* item: a struct hf_pre (the type of load_sequence's items) */
static int load_pre(struct jctx *c, json_t *obj, void *item)
{
    struct hf_pre *p = item;
    const char *type;
    if (component(c, obj, &type, "pre-tokenizer"))
        return -1;
    static const char *const none[] = {NULL};
    if (strcmp(type, "ByteLevel") == 0) {
        static const char *const keys[] = {"add_prefix_space", "trim_offsets", "use_regex", NULL};
        bool trim;
        p->kind = HP_BYTE_LEVEL;
        return only_keys(c, obj, type, keys) ||
                       get_bool(c, obj, "add_prefix_space", &p->add_prefix_space, false, true,
                                false) ||
                       get_bool(c, obj, "trim_offsets", &trim, false, true, false) ||
                       get_bool(c, obj, "use_regex", &p->use_regex, true, false, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Split") == 0) {
        static const char *const keys[] = {"pattern", "behavior", "invert", NULL};
        p->kind = HP_SPLIT;
        return only_keys(c, obj, type, keys) || get_pattern(c, obj, &p->pat) ||
                       get_behavior(c, obj, &p->behavior, true) ||
                       get_bool(c, obj, "invert", &p->invert, false, true, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Metaspace") == 0) {
        p->kind = HP_METASPACE;
        return metaspace_options(c, obj, &p->replacement, &p->prepend, &p->split);
    }
    if (strcmp(type, "BertPreTokenizer") == 0 || strcmp(type, "Whitespace") == 0 ||
        strcmp(type, "WhitespaceSplit") == 0) {
        p->kind = type[0] == 'B'                    ? HP_BERT
                  : strcmp(type, "Whitespace") == 0 ? HP_WHITESPACE
                                                    : HP_WHITESPACE_SPLIT;
        return only_keys(c, obj, type, none);
    }
    if (strcmp(type, "Digits") == 0) {
        static const char *const keys[] = {"individual_digits", NULL};
        p->kind = HP_DIGITS;
        return only_keys(c, obj, type, keys) || get_bool(c, obj, "individual_digits",
                                                         &p->individual_digits, false, true, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Punctuation") == 0) {
        static const char *const keys[] = {"behavior", NULL};
        p->kind = HP_PUNCTUATION;
        return only_keys(c, obj, type, keys) || get_behavior(c, obj, &p->behavior, false) ? -1 : 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        p->kind = HP_SEQUENCE;
        void *items = NULL;
        int rc = load_sequence(c, obj, "pretokenizers", "pre-tokenizers", &items, sizeof(*p->items),
                               &p->n, load_pre);
        p->items = items;
        return rc;
    }
    return unsupported(c, type,
                       "pre-tokenizers: ByteLevel, Split, Metaspace, BertPreTokenizer, "
                       "Whitespace, WhitespaceSplit, Digits, Punctuation and Sequence");
}

/* ---- the model ----------------------------------------------------------------------------- */

static int load_vocab_object(struct jctx *c, json_t *o, struct hf_vocab *v)
{
    int rc = -1;
    if (!o || !json_is_object(o))
        return jerr(c, o ? "must be an object of token -> id" : "is missing");
    size_t n = json_object_size(o);
    if (n == 0) {
        rc = jerr(c, "the vocabulary is empty");
        goto out;
    }
    if (n > HFTOK_MAX_VOCAB) {
        rc = jerr(c, "%zu tokens is over the limit of %d", n, HFTOK_MAX_VOCAB);
        goto out;
    }
    const char *key;
    size_t klen;
    json_t *val;
    json_int_t top = 0;
    json_object_keylen_foreach(o, key, klen, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= HFTOK_MAX_VOCAB) {
            push_keyn(c, key, klen);
            if (!json_is_integer(val))
                jerr(c, "the id must be an integer");
            else
                jerr(c, "id %lld: ids must be 0 .. %d", (long long)json_integer_value(val),
                     HFTOK_MAX_VOCAB - 1);
            pop(c);
            goto out;
        }
        if (json_integer_value(val) > top)
            top = json_integer_value(val);
    }
    if (attn_hf_vocab_alloc(v, (size_t)top + 1, n)) {
        rc = jerr(c, "out of memory (%zu tokens)", n);
        goto out;
    }
    json_object_keylen_foreach(o, key, klen, val)
    {
        push_keyn(c, key, klen);
        int id = (int)json_integer_value(val);
        if (v->tok[id]) {
            char b[80];
            jerr(c, "has id %d, as \"%s\" does: each id must be one token's", id,
                 shown(b, sizeof(b), v->tok[id], v->len[id]));
            pop(c);
            goto out;
        }
        if (attn_hf_vocab_set(v, id, key, klen)) {
            jerr(c, "out of memory");
            pop(c);
            goto out;
        }
        pop(c);
    }
    rc = 0;
out:
    return rc;
}

static int load_vocab(struct jctx *c, json_t *m, struct hf_vocab *v)
{
    push_key(c, "vocab");
    int rc = load_vocab_object(c, json_object_get(m, "vocab"), v);
    pop(c);
    return rc;
}

static int vocab_id(const struct hf_vocab *v, const char *s, size_t len)
{
    return attn_hf_vocab_find(v, s, len);
}

/* One merge: "a b" (split at the space; more than one space is an error, as in the library)
 * or ["a", "b"]. */
static int load_merge(struct jctx *c, json_t *e, struct hftok *t, int rank, char **buf, size_t *cap)
{
    const char *a, *b;
    size_t na, nb;
    if (json_is_string(e)) {
        const char *s = json_string_value(e);
        size_t n = json_string_length(e);
        const char *sp = memchr(s, ' ', n);
        if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
            return jerr(c, "must be two tokens separated by one space (\"a b\")");
        a = s;
        na = (size_t)(sp - s);
        b = sp + 1;
        nb = n - na - 1;
    } else if (json_is_array(e) && json_array_size(e) == 2 &&
               json_is_string(json_array_get(e, 0)) && json_is_string(json_array_get(e, 1))) {
        a = json_string_value(json_array_get(e, 0));
        na = json_string_length(json_array_get(e, 0));
        b = json_string_value(json_array_get(e, 1));
        nb = json_string_length(json_array_get(e, 1));
    } else {
        return jerr(c, "must be \"a b\" or [\"a\", \"b\"]");
    }
    char sb[80];
    int ia = vocab_id(&t->vocab, a, na), ib = vocab_id(&t->vocab, b, nb);
    if (ia < 0)
        return jerr(c, "\"%s\" is not in the vocabulary", shown(sb, sizeof(sb), a, na));
    if (ib < 0)
        return jerr(c, "\"%s\" is not in the vocabulary", shown(sb, sizeof(sb), b, nb));
    /* the result: a, then b without the continuing_subword_prefix */
    size_t pl = t->model.prefix_len;
    if (nb < pl)
        return jerr(c, "\"%s\" is shorter than the continuing_subword_prefix",
                    shown(sb, sizeof(sb), b, nb));
    if (na + nb - pl > *cap) {
        char *nbuf = realloc(*buf, na + nb);
        if (!nbuf)
            return jerr(c, "out of memory");
        *buf = nbuf;
        *cap = na + nb;
    }
    memcpy(*buf, a, na);
    memcpy(*buf + na, b + pl, nb - pl);
    int r = vocab_id(&t->vocab, *buf, na + nb - pl);
    if (r < 0)
        return jerr(c, "the merge makes \"%s\", which is not in the vocabulary",
                    shown(sb, sizeof(sb), *buf, na + nb - pl));
    if (attn_bpe_merges_put(&t->model.merges, ia, ib, rank, r) != 0)
        return jerr(c, "out of memory");
    return 0;
}

static int load_bpe(struct jctx *c, json_t *m, struct hftok *t)
{
    static const char *const keys[] = {"dropout",
                                       "unk_token",
                                       "continuing_subword_prefix",
                                       "end_of_word_suffix",
                                       "fuse_unk",
                                       "byte_fallback",
                                       "ignore_merges",
                                       "vocab",
                                       "merges",
                                       NULL};
    struct hf_model *md = &t->model;
    md->kind = HM_BPE;
    if (only_keys(c, m, "BPE", keys))
        return -1;
    json_t *d = json_object_get(m, "dropout");
    if (d && !json_is_null(d) && !(json_is_number(d) && json_number_value(d) == 0.0)) {
        push_key(c, "dropout");
        int rc = jerr(c, "BPE dropout draws random merges: attnscope shows one tokenization, "
                         "so dropout must be null");
        pop(c);
        return rc;
    }
    if (get_string(c, m, "unk_token", &md->unk, &md->unk_len, false, true) ||
        get_string(c, m, "continuing_subword_prefix", &md->prefix, &md->prefix_len, false, true) ||
        get_string(c, m, "end_of_word_suffix", &md->suffix, &md->suffix_len, false, true) ||
        get_bool(c, m, "fuse_unk", &md->fuse_unk, false, false, true) ||
        get_bool(c, m, "byte_fallback", &md->byte_fallback, false, false, true) ||
        get_bool(c, m, "ignore_merges", &md->ignore_merges, false, false, true) ||
        load_vocab(c, m, &t->vocab))
        return -1;
    json_t *a = json_object_get(m, "merges");
    push_key(c, "merges");
    int rc = 0;
    if (!a || !json_is_array(a)) {
        rc = jerr(c, a ? "must be a list of merges" : "is missing");
    } else if (attn_bpe_merges_init(&md->merges, json_array_size(a)) != 0) {
        rc = jerr(c, "out of memory");
    } else {
        char *buf = NULL;
        size_t cap = 0;
        int rank = 0;
        for (size_t i = 0; i < json_array_size(a) && rc == 0; i++) {
            json_t *e = json_array_get(a, i);
            /* the library drops "#version" lines of the legacy string form */
            if (json_is_string(e) && strncmp(json_string_value(e), "#version", 8) == 0)
                continue;
            push_index(c, (long)i);
            rc = load_merge(c, e, t, rank++, &buf, &cap);
            pop(c);
        }
        free(buf);
    }
    pop(c);
    if (rc)
        return -1;
    md->unk_id = md->unk ? vocab_id(&t->vocab, md->unk, md->unk_len) : -1;
    for (int b = 0; b < 256; b++) {
        char code[8];
        snprintf(code, sizeof(code), "<0x%02X>", b);
        md->byte_ids[b] = vocab_id(&t->vocab, code, 6);
    }
    return 0;
}

static int by_length_down(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x > y ? -1 : x < y;
}

/* The lengths a piece of the vocabulary has, each once, longest first, with B^(len - the
 * prefix's length) (hf_hash): the only lengths a match can have. */
static int vocab_lengths(struct jctx *c, struct hftok *t)
{
    struct hf_model *md = &t->model;
    size_t *lens = malloc((size_t)t->vocab.count * sizeof(*lens));
    if (!lens)
        return jerr(c, "out of memory");
    int n_tok = 0;
    for (int id = 0; id < t->vocab.n; id++)
        if (t->vocab.tok[id])
            lens[n_tok++] = t->vocab.len[id];
    qsort(lens, (size_t)n_tok, sizeof(*lens), by_length_down);
    int n = 0;
    for (int i = 0; i < n_tok; i++)
        if (n == 0 || lens[i] != lens[n - 1])
            lens[n++] = lens[i];
    if (!(md->lens = malloc((size_t)n * sizeof(*md->lens)))) {
        free(lens);
        return jerr(c, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        uint64_t pow = 1, b = HF_HASH_B; /* B^(len - prefix), by squaring */
        for (size_t k = lens[i] > md->prefix_len ? lens[i] - md->prefix_len : 0; k; k >>= 1) {
            if (k & 1)
                pow *= b;
            b *= b;
        }
        md->lens[i] = (struct hf_len){lens[i], pow};
    }
    md->n_lens = n;
    free(lens);
    return 0;
}

static int load_wordpiece(struct jctx *c, json_t *m, struct hftok *t)
{
    static const char *const keys[] = {"unk_token", "continuing_subword_prefix",
                                       "max_input_chars_per_word", "vocab", NULL};
    struct hf_model *md = &t->model;
    md->kind = HM_WORDPIECE;
    if (only_keys(c, m, "WordPiece", keys) ||
        get_string(c, m, "unk_token", &md->unk, &md->unk_len, true, false) ||
        get_string(c, m, "continuing_subword_prefix", &md->prefix, &md->prefix_len, true, false) ||
        get_int(c, m, "max_input_chars_per_word", &md->max_chars, 0, LONG_MAX) ||
        load_vocab(c, m, &t->vocab))
        return -1;
    md->unk_id = vocab_id(&t->vocab, md->unk, md->unk_len);
    return vocab_lengths(c, t);
}

/* Unigram's vocabulary: a list of [piece, score], the ids their places. A piece twice is
 * refused (the library would keep the later one's id). */
static int load_unigram_vocab(struct jctx *c, json_t *m, struct hftok *t)
{
    struct hf_vocab *v = &t->vocab;
    struct hf_model *md = &t->model;
    json_t *a = json_object_get(m, "vocab");
    push_key(c, "vocab");
    int rc = -1;
    size_t n = a && json_is_array(a) ? json_array_size(a) : 0;
    if (!a || !json_is_array(a) || n == 0 || n > HFTOK_MAX_VOCAB) {
        rc = jerr(c, !a                  ? "is missing"
                     : !json_is_array(a) ? "must be a list of [piece, score]"
                     : n == 0            ? "the vocabulary is empty"
                                         : "over the limit of tokens");
        goto out;
    }
    md->scores = malloc(n * sizeof(*md->scores));
    if (attn_hf_vocab_alloc(v, n, n) || !md->scores) {
        rc = jerr(c, "out of memory (%zu tokens)", n);
        goto out;
    }
    md->min_score = INFINITY;
    for (size_t id = 0; id < n; id++) {
        json_t *e = json_array_get(a, id), *p = json_array_get(e, 0), *sc = json_array_get(e, 1);
        push_index(c, (long)id);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(p) ||
            !json_is_number(sc) || !isfinite(json_number_value(sc))) {
            jerr(c, "must be [piece, score], a string and a number");
            pop(c);
            goto out;
        }
        size_t klen = json_string_length(p);
        if (vocab_id(v, json_string_value(p), klen) >= 0) {
            char b[80];
            jerr(c, "the piece \"%s\" is in the vocabulary twice",
                 shown(b, sizeof(b), json_string_value(p), klen));
            pop(c);
            goto out;
        }
        if (attn_hf_vocab_set(v, (int)id, json_string_value(p), klen)) {
            jerr(c, "out of memory");
            pop(c);
            goto out;
        }
        md->scores[id] = json_number_value(sc);
        if (md->scores[id] < md->min_score)
            md->min_score = md->scores[id];
        pop(c);
    }
    rc = 0;
out:
    pop(c);
    return rc;
}

/* models/unigram: the pieces with their scores, an unknown's id (or null), byte_fallback. */
static int load_unigram(struct jctx *c, json_t *m, struct hftok *t)
{
    static const char *const keys[] = {"unk_id", "vocab", "byte_fallback", NULL};
    struct hf_model *md = &t->model;
    md->kind = HM_UNIGRAM;
    md->fuse_unk = true; /* the library's Unigram always fuses unknowns */
    if (only_keys(c, m, "Unigram", keys) ||
        get_bool(c, m, "byte_fallback", &md->byte_fallback, false, false, true) ||
        load_unigram_vocab(c, m, t))
        return -1;
    md->unk_id = -1;
    json_t *u = json_object_get(m, "unk_id");
    if (u && !json_is_null(u)) {
        long id;
        if (get_int(c, m, "unk_id", &id, 0, (long)t->vocab.n - 1))
            return -1;
        md->unk_id = (int)id;
    }
    for (int b = 0; b < 256; b++) {
        char code[8];
        snprintf(code, sizeof(code), "<0x%02X>", b);
        md->byte_ids[b] = vocab_id(&t->vocab, code, 6);
    }
    return vocab_lengths(c, t);
}

static int load_model(struct jctx *c, json_t *m, struct hftok *t)
{
    const char *type;
    if (component(c, m, &type, "model"))
        return -1;
    if (strcmp(type, "BPE") == 0)
        return load_bpe(c, m, t);
    if (strcmp(type, "WordPiece") == 0)
        return load_wordpiece(c, m, t);
    if (strcmp(type, "Unigram") == 0)
        return load_unigram(c, m, t);
    return unsupported(c, type, "models: BPE, WordPiece and Unigram");
}

/* ---- post-processors ----------------------------------------------------------------------- */

/* sep or cls: ["[SEP]", 102] */
static int token_pair(struct jctx *c, json_t *obj, const char *key, int *id)
{
    json_t *v = json_object_get(obj, key);
    push_key(c, key);
    int rc = 0;
    if (!v || !json_is_array(v) || json_array_size(v) != 2 ||
        !json_is_string(json_array_get(v, 0)) || !json_is_integer(json_array_get(v, 1)) ||
        json_integer_value(json_array_get(v, 1)) < 0 ||
        json_integer_value(json_array_get(v, 1)) >= HFTOK_MAX_VOCAB)
        rc = jerr(c, v ? "must be [\"token\", id]" : "is missing ([\"token\", id])");
    else
        *id = (int)json_integer_value(json_array_get(v, 1));
    pop(c);
    return rc;
}

static int template_pieces(struct jctx *c, json_t *obj, const char *key, struct hf_post *p,
                           struct hf_tpiece **out, int *n)
{
    json_t *a = json_object_get(obj, key);
    push_key(c, key);
    int rc = 0;
    if (!a || !json_is_array(a)) {
        rc = jerr(c, a ? "must be a list of {\"Sequence\": ...} and {\"SpecialToken\": ...}"
                       : "is missing");
        goto out;
    }
    *out = calloc(json_array_size(a) + 1, sizeof(**out));
    if (!*out) {
        rc = jerr(c, "out of memory");
        goto out;
    }
    bool has_a = false, has_b = false;
    for (size_t i = 0; i < json_array_size(a) && rc == 0; i++) {
        json_t *e = json_array_get(a, i);
        push_index(c, (long)i);
        json_t *sq =
            json_is_object(e) && json_object_size(e) == 1 ? json_object_get(e, "Sequence") : NULL;
        json_t *sp = json_is_object(e) && json_object_size(e) == 1
                         ? json_object_get(e, "SpecialToken")
                         : NULL;
        json_t *body = sq ? sq : sp;
        json_t *id = body && json_is_object(body) ? json_object_get(body, "id") : NULL;
        json_t *ty = body && json_is_object(body) ? json_object_get(body, "type_id") : NULL;
        struct hf_tpiece *tp = &(*out)[i];
        if (!body || !id || !json_is_string(id) || !ty || !json_is_integer(ty) ||
            json_integer_value(ty) < 0 || json_integer_value(ty) > INT_MAX ||
            json_object_size(body) != 2) {
            rc = jerr(c, "must be {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}} or "
                         "{\"SpecialToken\": {\"id\": \"...\", \"type_id\": 0}}");
        } else if (sq) {
            tp->special = false;
            tp->type_id = (int)json_integer_value(ty);
            if (strcmp(json_string_value(id), "A") == 0) {
                tp->seq = 0;
                has_a = true;
            } else if (strcmp(json_string_value(id), "B") == 0) {
                tp->seq = 1;
                has_b = true;
            } else {
                rc = jerr(c, "a Sequence's id must be \"A\" or \"B\"");
            }
        } else {
            tp->special = true;
            tp->type_id = (int)json_integer_value(ty);
            tp->special_index = -1;
            for (int s = 0; s < p->n_specials; s++)
                if (strcmp(p->specials[s].name, json_string_value(id)) == 0)
                    tp->special_index = s;
            if (tp->special_index < 0) {
                char b[80];
                rc = jerr(c, "the special token \"%s\" is not in special_tokens",
                          shown(b, sizeof(b), json_string_value(id), json_string_length(id)));
            }
        }
        *n = (int)i + 1;
        pop(c);
    }
    if (rc == 0 && strcmp(key, "pair") == 0 && !(has_a && has_b))
        rc = jerr(c, "the pair template must use both sequences A and B");
out:
    pop(c);
    return rc;
}

/* item: a struct hf_post (the type of load_sequence's items) */
static int load_post(struct jctx *c, json_t *obj, void *item)
{
    struct hf_post *p = item;
    const char *type;
    if (component(c, obj, &type, "post-processor"))
        return -1;
    if (strcmp(type, "TemplateProcessing") == 0) {
        static const char *const keys[] = {"single", "pair", "special_tokens", NULL};
        p->kind = HQ_TEMPLATE;
        if (only_keys(c, obj, type, keys))
            return -1;
        json_t *st = json_object_get(obj, "special_tokens");
        push_key(c, "special_tokens");
        if (!st || !json_is_object(st)) {
            int rc = jerr(c, st ? "must be an object" : "is missing");
            pop(c);
            return rc;
        }
        p->specials = calloc(json_object_size(st) + 1, sizeof(*p->specials));
        if (!p->specials) {
            pop(c);
            return jerr(c, "out of memory");
        }
        const char *key;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach(st, key, klen, v)
        {
            push_keyn(c, key, klen);
            struct hf_special *s = &p->specials[p->n_specials++];
            s->name = strndup(key, klen);
            json_t *ids = json_is_object(v) ? json_object_get(v, "ids") : NULL;
            json_t *toks = json_is_object(v) ? json_object_get(v, "tokens") : NULL;
            json_t *id = json_is_object(v) ? json_object_get(v, "id") : NULL;
            int rc = 0;
            if (!s->name)
                rc = jerr(c, "out of memory");
            else if (!ids || !json_is_array(ids) || !toks || !json_is_array(toks) || !id ||
                     !json_is_string(id) || json_object_size(v) != 3)
                rc = jerr(c, "must be {\"id\": \"...\", \"ids\": [...], \"tokens\": [...]}");
            else if (json_array_size(ids) != json_array_size(toks))
                rc = jerr(c, "ids and tokens must be of the same length");
            else if (!(s->ids = calloc(json_array_size(ids) + 1, sizeof(int))))
                rc = jerr(c, "out of memory");
            for (size_t i = 0; rc == 0 && i < json_array_size(ids); i++) {
                json_t *x = json_array_get(ids, i);
                if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                    json_integer_value(x) >= HFTOK_MAX_VOCAB) {
                    push_key(c, "ids");
                    push_index(c, (long)i);
                    rc = jerr(c, "must be a token id");
                    pop(c);
                    pop(c);
                } else {
                    s->ids[s->n++] = (int)json_integer_value(x);
                }
            }
            pop(c);
            if (rc) {
                pop(c);
                return -1;
            }
        }
        pop(c);
        return template_pieces(c, obj, "single", p, &p->single, &p->n_single) ||
                       template_pieces(c, obj, "pair", p, &p->pair, &p->n_pair)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        static const char *const bert[] = {"sep", "cls", NULL};
        static const char *const roberta[] = {"sep", "cls", "trim_offsets", "add_prefix_space",
                                              NULL};
        bool is_bert = type[0] == 'B', flag;
        p->kind = is_bert ? HQ_BERT : HQ_ROBERTA;
        if (only_keys(c, obj, type, is_bert ? bert : roberta) ||
            token_pair(c, obj, "sep", &p->sep_id) || token_pair(c, obj, "cls", &p->cls_id))
            return -1;
        /* offsets only: read to check their type */
        if (!is_bert && (get_bool(c, obj, "trim_offsets", &flag, true, false, false) ||
                         get_bool(c, obj, "add_prefix_space", &flag, true, false, false)))
            return -1;
        return 0;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        static const char *const keys[] = {"add_prefix_space", "trim_offsets", "use_regex", NULL};
        bool flag;
        p->kind = HQ_BYTE_LEVEL;
        return only_keys(c, obj, type, keys) ||
                       get_bool(c, obj, "add_prefix_space", &flag, false, true, false) ||
                       get_bool(c, obj, "trim_offsets", &flag, false, true, false) ||
                       get_bool(c, obj, "use_regex", &flag, true, false, false)
                   ? -1
                   : 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        p->kind = HQ_SEQUENCE;
        void *items = NULL;
        int rc = load_sequence(c, obj, "processors", "post-processors", &items, sizeof(*p->items),
                               &p->n, load_post);
        p->items = items;
        return rc;
    }
    return unsupported(c, type,
                       "post-processors: TemplateProcessing, BertProcessing, "
                       "RobertaProcessing, ByteLevel and Sequence");
}

/* ---- decoders ------------------------------------------------------------------------------ */

static int add_dec(struct jctx *c, struct hftok *t, struct hf_dec d)
{
    struct hf_dec *nd = realloc(t->dec, (size_t)(t->n_dec + 1) * sizeof(*nd));
    if (!nd) {
        free(d.content);
        pcre2_code_free(d.pat.re);
        return jerr(c, "out of memory");
    }
    t->dec = nd;
    t->dec[t->n_dec++] = d;
    return 0;
}

static int load_dec(struct jctx *c, json_t *obj, struct hftok *t)
{
    const char *type;
    if (component(c, obj, &type, "decoder"))
        return -1;
    static const char *const none[] = {NULL};
    struct hf_dec d;
    memset(&d, 0, sizeof(d));
    if (strcmp(type, "ByteLevel") == 0) {
        static const char *const keys[] = {"add_prefix_space", "trim_offsets", "use_regex", NULL};
        bool flag;
        d.kind = HD_BYTE_LEVEL;
        if (only_keys(c, obj, type, keys) ||
            get_bool(c, obj, "add_prefix_space", &flag, false, true, false) ||
            get_bool(c, obj, "trim_offsets", &flag, false, true, false) ||
            get_bool(c, obj, "use_regex", &flag, true, false, false))
            return -1;
        return add_dec(c, t, d);
    }
    if (strcmp(type, "Metaspace") == 0) {
        enum hf_prepend prepend;
        bool split;
        d.kind = HD_METASPACE;
        if (metaspace_options(c, obj, &d.replacement, &prepend, &split))
            return -1;
        d.prepends = prepend != HF_PREPEND_NEVER;
        return add_dec(c, t, d);
    }
    if (strcmp(type, "WordPiece") == 0) {
        static const char *const keys[] = {"prefix", "cleanup", NULL};
        char *prefix;
        bool cleanup;
        d.kind = HD_WORDPIECE;
        if (only_keys(c, obj, type, keys) ||
            get_string(c, obj, "prefix", &prefix, NULL, false, false) ||
            get_bool(c, obj, "cleanup", &cleanup, true, false, false))
            return -1;
        free(prefix);
        return add_dec(c, t, d);
    }
    if (strcmp(type, "ByteFallback") == 0 || strcmp(type, "Fuse") == 0) {
        d.kind = type[0] == 'B' ? HD_BYTE_FALLBACK : HD_FUSE;
        return only_keys(c, obj, type, none) ? -1 : add_dec(c, t, d);
    }
    if (strcmp(type, "Strip") == 0) {
        static const char *const keys[] = {"content", "start", "stop", NULL};
        long stop;
        d.kind = HD_STRIP;
        if (only_keys(c, obj, type, keys) || get_char(c, obj, "content", &d.replacement) ||
            get_int(c, obj, "start", &d.strip_start, 0, LONG_MAX) ||
            get_int(c, obj, "stop", &stop, 0, LONG_MAX))
            return -1;
        return add_dec(c, t, d);
    }
    if (strcmp(type, "Replace") == 0) {
        static const char *const keys[] = {"pattern", "content", NULL};
        d.kind = HD_REPLACE;
        if (only_keys(c, obj, type, keys) || get_pattern(c, obj, &d.pat) ||
            get_string(c, obj, "content", &d.content, &d.content_len, true, false)) {
            pcre2_code_free(d.pat.re);
            return -1;
        }
        return add_dec(c, t, d);
    }
    if (strcmp(type, "Sequence") == 0) {
        static const char *const keys[] = {"decoders", NULL};
        if (only_keys(c, obj, type, keys))
            return -1;
        json_t *a = json_object_get(obj, "decoders");
        push_key(c, "decoders");
        int rc = 0;
        if (!a || !json_is_array(a))
            rc = jerr(c, a ? "must be a list of decoders" : "is missing");
        for (size_t i = 0; rc == 0 && i < json_array_size(a); i++) {
            push_index(c, (long)i);
            rc = load_dec(c, json_array_get(a, i), t);
            pop(c);
        }
        pop(c);
        return rc;
    }
    return unsupported(c, type,
                       "decoders: ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, "
                       "Strip, Replace and Sequence");
}

/* ---- added tokens -------------------------------------------------------------------------- */

static int load_added(struct jctx *c, json_t *a, struct hftok *t)
{
    if (!json_is_array(a))
        return jerr(c, "must be a list of added tokens");
    t->added = calloc(json_array_size(a) + 1, sizeof(*t->added));
    if (!t->added)
        return jerr(c, "out of memory");
    static const char *const keys[] = {"id",     "content",    "single_word", "lstrip",
                                       "rstrip", "normalized", "special",     NULL};
    /* the library's ids: the vocabulary's for a token it has, else the next from the
     * vocabulary's size, its count of tokens (AddedVocabulary::add_tokens) */
    int next = t->vocab.count;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        push_index(c, (long)i);
        struct hf_added at;
        memset(&at, 0, sizeof(at));
        long id;
        if (!json_is_object(e)) {
            pop(c);
            return jerr(c, "must be an object");
        }
        if (only_keys(c, e, "an added token", keys) ||
            get_int(c, e, "id", &id, 0, HFTOK_MAX_VOCAB - 1) ||
            get_string(c, e, "content", &at.content, &at.len, true, false) ||
            get_bool(c, e, "single_word", &at.single_word, false, true, false) ||
            get_bool(c, e, "lstrip", &at.lstrip, false, true, false) ||
            get_bool(c, e, "rstrip", &at.rstrip, false, true, false) ||
            get_bool(c, e, "normalized", &at.normalized, false, true, false) ||
            get_bool(c, e, "special", &at.special, false, true, false)) {
            free(at.content);
            pop(c);
            return -1;
        }
        if (at.len == 0) { /* the library ignores an empty token */
            free(at.content);
            pop(c);
            continue;
        }
        int same = -1;
        for (int k = 0; k < t->n_added; k++)
            if (t->added[k].len == at.len && memcmp(t->added[k].content, at.content, at.len) == 0)
                same = k;
        int vid = vocab_id(&t->vocab, at.content, at.len);
        at.id = same >= 0 ? t->added[same].id : vid >= 0 ? vid : next++;
        if (at.id != id) {
            char b[80];
            push_key(c, "id");
            int rc = jerr(c,
                          "is %ld, but \"%s\" gets id %d (the vocabulary's id of the token, or "
                          "the next free one, as the tokenizers library assigns them)",
                          id, shown(b, sizeof(b), at.content, at.len), at.id);
            pop(c);
            free(at.content);
            pop(c);
            return rc;
        }
        if (at.normalized && t->has_norm) {
            struct diag e2;
            attn_diag_clear(&e2);
            if (attn_hf_normalize_text(&at.norm, &at.norm_len, t, at.content, at.len, &e2) != 0) {
                free(at.content);
                int rc = jerr(c, "%s", e2.msg);
                pop(c);
                return rc;
            }
        }
        /* one token per id: a later entry for the same id replaces the earlier */
        int slot = -1;
        for (int k = 0; k < t->n_added; k++)
            if (t->added[k].id == at.id)
                slot = k;
        if (slot >= 0) {
            free(t->added[slot].content);
            free(t->added[slot].norm);
            t->added[slot] = at;
        } else {
            t->added[t->n_added++] = at;
        }
        pop(c);
    }
    return 0;
}

/* One more than the largest id of the vocabulary and the added tokens. */
static void set_size(struct hftok *t)
{
    t->size = t->vocab.n;
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id + 1 > t->size)
            t->size = t->added[i].id + 1;
}

/* ---- tokenizer_config.json ----------------------------------------------------------------- */

/* A token as tokenizer_config.json writes it: a string, or an AddedToken's {"content": ...}. */
static json_t *token_content(json_t *v)
{
    return v && json_is_object(v) ? json_object_get(v, "content") : v;
}

/* bos_token / eos_token: a string or {"content": "..."}. */
static int config_token(struct jctx *c, json_t *root, const char *key, const struct hftok *t,
                        int *id)
{
    json_t *v = token_content(json_object_get(root, key));
    push_key(c, key);
    int rc = 0;
    if (!v || json_is_null(v) || !json_is_string(v)) {
        rc = jerr(c, "is needed (a token) to add it");
    } else {
        *id = attn_hftok_token_id(t, json_string_value(v), json_string_length(v));
        if (*id < 0) {
            char b[80];
            rc = jerr(c, "\"%s\" is not a token of tokenizer.json",
                      shown(b, sizeof(b), json_string_value(v), json_string_length(v)));
        }
    }
    pop(c);
    return rc;
}

static void post_free(struct hf_post *p);

/* transformers' rule (LlamaTokenizerFast.update_post_processor): when the config says
 * add_bos_token or add_eos_token, the post-processor becomes the template
 * "[bos] $A [eos]" / "[bos] $A [eos] [bos] $B:1 [eos]:1" with the parts it asks for. */
static int load_config(struct jctx *c, json_t *root, struct hftok *t)
{
    if (!json_is_object(root))
        return jerr(c, "must be a JSON object");
    json_t *ab = json_object_get(root, "add_bos_token"),
           *ae = json_object_get(root, "add_eos_token");
    if (!ab && !ae)
        return 0;
    bool bos = false, eos = false;
    if (get_bool(c, root, "add_bos_token", &bos, false, false, false) ||
        get_bool(c, root, "add_eos_token", &eos, false, false, false))
        return -1;
    int bos_id = -1, eos_id = -1;
    if ((bos && config_token(c, root, "bos_token", t, &bos_id)) ||
        (eos && config_token(c, root, "eos_token", t, &eos_id)))
        return -1;
    struct hf_post p;
    memset(&p, 0, sizeof(p));
    p.kind = HQ_TEMPLATE;
    p.specials = calloc(2, sizeof(*p.specials));
    p.single = calloc(3, sizeof(*p.single));
    p.pair = calloc(6, sizeof(*p.pair));
    if (!p.specials || !p.single || !p.pair) {
        post_free(&p);
        return jerr(c, "out of memory");
    }
    int sb = -1, se = -1;
    if (bos) {
        sb = p.n_specials++;
        p.specials[sb].name = strdup("bos");
        p.specials[sb].ids = malloc(sizeof(int));
        if (p.specials[sb].ids)
            p.specials[sb].ids[p.specials[sb].n++] = bos_id;
    }
    if (eos) {
        se = p.n_specials++;
        p.specials[se].name = strdup("eos");
        p.specials[se].ids = malloc(sizeof(int));
        if (p.specials[se].ids)
            p.specials[se].ids[p.specials[se].n++] = eos_id;
    }
    for (int s = 0; s < p.n_specials; s++)
        if (!p.specials[s].name || !p.specials[s].ids) {
            post_free(&p);
            return jerr(c, "out of memory");
        }
    for (int seq = 0; seq < 2; seq++) {
        struct hf_tpiece *v = seq ? p.pair : p.single;
        int *n = seq ? &p.n_pair : &p.n_single;
        for (int part = 0; part <= seq; part++) {
            if (bos)
                v[(*n)++] = (struct hf_tpiece){true, 0, sb, part};
            v[(*n)++] = (struct hf_tpiece){false, part, 0, part};
            if (eos)
                v[(*n)++] = (struct hf_tpiece){true, 0, se, part};
        }
    }
    if (t->has_post)
        post_free(&t->post);
    t->post = p;
    t->has_post = true;
    return 0;
}

/* Every id a post-processor adds must be a token: the library would pass any number on, and
 * a model has no row for it. */
static int check_post_ids(struct jctx *c, const struct hf_post *p, const struct hftok *t)
{
    size_t len;
    if (p->kind == HQ_SEQUENCE) {
        push_key(c, "processors");
        for (int i = 0; i < p->n; i++) {
            push_index(c, i);
            int rc = check_post_ids(c, &p->items[i], t);
            pop(c);
            if (rc) {
                pop(c);
                return -1;
            }
        }
        pop(c);
        return 0;
    }
    if (p->kind == HQ_BERT || p->kind == HQ_ROBERTA) {
        for (int k = 0; k < 2; k++) {
            int id = k ? p->cls_id : p->sep_id;
            if (!attn_hftok_token(t, id, &len)) {
                push_key(c, k ? "cls" : "sep");
                int rc = jerr(c, "id %d is not a token (the vocabulary has %d)", id, t->size);
                pop(c);
                return rc;
            }
        }
        return 0;
    }
    for (int s = 0; s < p->n_specials; s++)
        for (int k = 0; k < p->specials[s].n; k++)
            if (!attn_hftok_token(t, p->specials[s].ids[k], &len)) {
                push_key(c, "special_tokens");
                push_keyn(c, p->specials[s].name, strlen(p->specials[s].name));
                push_key(c, "ids");
                push_index(c, k);
                int rc = jerr(c, "id %d is not a token (the vocabulary has %d)",
                              p->specials[s].ids[k], t->size);
                pop(c);
                pop(c);
                pop(c);
                pop(c);
                return rc;
            }
    return 0;
}

/* ---- the file ------------------------------------------------------------------------------ */

static json_t *parse(struct jctx *c, const char *text, size_t len, size_t flags)
{
    if (attn_json_has_bom(text, len)) {
        attn_diag_clear(c->err);
        snprintf(c->err->file, sizeof(c->err->file), "%s", c->file);
        c->err->line = c->err->col = 1;
        attn_diag_set(c->err, "", ATTN_JSON_BOM_MSG);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | flags, &je);
    if (!root && attn_json_out_of_memory(&je, text, len)) {
        attn_diag_file(c->err, c->file, "out of memory reading the JSON");
        return NULL;
    }
    if (!root) {
        /* jansson counts columns in characters; ours are bytes, from the position it gives */
        size_t pos = je.position > 0 ? (size_t)je.position : 0;
        if (pos > len)
            pos = len;
        int line = 1, col = 1;
        for (size_t i = 0; i < pos; i++) {
            if (text[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        attn_diag_clear(c->err);
        snprintf(c->err->file, sizeof(c->err->file), "%s", c->file);
        c->err->line = line;
        c->err->col = col > 1 ? col - 1 : 1;
        /* jansson quotes the text near the error: raw bytes, escaped for the message */
        char b[200];
        attn_diag_set(c->err, "", "not valid JSON: %s",
                      shown(b, sizeof(b), je.text, strlen(je.text)));
    }
    return root;
}

static const char *const top_keys[] = {
    "version",       "truncation", "padding", "added_tokens",   "normalizer",
    "pre_tokenizer", "model",      "decoder", "post_processor", NULL};

static int load_root(struct jctx *c, json_t *root, struct hftok *t)
{
    if (!json_is_object(root))
        return jerr(c, "expected a JSON object (Hugging Face's tokenizer.json)");
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach(root, key, klen, v)
    {
        bool ok = false;
        for (int i = 0; top_keys[i] && !ok; i++)
            ok = strlen(top_keys[i]) == klen && memcmp(top_keys[i], key, klen) == 0;
        if (!ok) {
            char b[80];
            push_keyn(c, key, klen);
            int rc = jerr(c, "'%s' is not a part of tokenizer.json that attnscope reads",
                          shown(b, sizeof(b), key, klen));
            pop(c);
            return rc;
        }
    }
    json_t *ver = json_object_get(root, "version");
    if (ver && !(json_is_string(ver) && strcmp(json_string_value(ver), "1.0") == 0)) {
        push_key(c, "version");
        int rc = jerr(c, "must be \"1.0\"");
        pop(c);
        return rc;
    }
    static const char *const off[] = {"truncation", "padding"};
    for (int i = 0; i < 2; i++) {
        json_t *x = json_object_get(root, off[i]);
        if (x && !json_is_null(x)) {
            push_key(c, off[i]);
            int rc = jerr(c, "must be null: attnscope shows the whole text, neither cut nor "
                             "padded");
            pop(c);
            return rc;
        }
    }
    json_t *m = json_object_get(root, "model");
    push_key(c, "model");
    int rc = m ? load_model(c, m, t) : jerr(c, "is missing");
    pop(c);
    if (rc)
        return -1;
    struct {
        const char *key;
        bool *has;
    } parts[] = {{"normalizer", &t->has_norm},
                 {"pre_tokenizer", &t->has_pre},
                 {"post_processor", &t->has_post},
                 {"decoder", NULL}};
    for (int i = 0; i < 4; i++) {
        json_t *x = json_object_get(root, parts[i].key);
        if (!x || json_is_null(x))
            continue;
        push_key(c, parts[i].key);
        switch (i) {
        case 0:
            rc = load_norm(c, x, &t->norm);
            break;
        case 1:
            rc = load_pre(c, x, &t->pre);
            break;
        case 2:
            rc = load_post(c, x, &t->post);
            break;
        default:
            rc = load_dec(c, x, t);
        }
        if (parts[i].has)
            *parts[i].has = true; /* freed as loaded so far even when it failed */
        pop(c);
        if (rc)
            return -1;
    }
    json_t *a = json_object_get(root, "added_tokens");
    if (a) {
        push_key(c, "added_tokens");
        rc = load_added(c, a, t);
        pop(c);
        if (rc)
            return -1;
    }
    set_size(t);
    if (t->has_post) {
        push_key(c, "post_processor");
        rc = check_post_ids(c, &t->post, t);
        pop(c);
    }
    return rc;
}

/* ---- freeing ------------------------------------------------------------------------------- */

static void norm_free(struct hf_norm *n)
{
    free(n->str);
    attn_hf_charsmap_free(&n->map);
    pcre2_code_free(n->pat.re);
    for (int i = 0; i < n->n; i++)
        norm_free(&n->items[i]);
    free(n->items);
}

static void pre_free(struct hf_pre *p)
{
    pcre2_code_free(p->pat.re);
    for (int i = 0; i < p->n; i++)
        pre_free(&p->items[i]);
    free(p->items);
}

static void post_free(struct hf_post *p)
{
    free(p->single);
    free(p->pair);
    for (int i = 0; i < p->n_specials; i++) {
        free(p->specials[i].name);
        free(p->specials[i].ids);
    }
    free(p->specials);
    for (int i = 0; i < p->n; i++)
        post_free(&p->items[i]);
    free(p->items);
    memset(p, 0, sizeof(*p));
}

void attn_hftok_free(struct hftok *t)
{
    if (!t)
        return;
    attn_hf_vocab_free(&t->vocab);
    attn_bpe_merges_free(&t->model.merges);
    free(t->model.prefix);
    free(t->model.suffix);
    free(t->model.lens);
    free(t->model.scores);
    free(t->model.unk);
    attn_spm_free(t->model.spm[0]);
    attn_spm_free(t->model.spm[1]);
    if (t->has_norm)
        norm_free(&t->norm);
    if (t->has_pre)
        pre_free(&t->pre);
    if (t->has_post)
        post_free(&t->post);
    for (int i = 0; i < t->n_dec; i++) {
        free(t->dec[i].content);
        pcre2_code_free(t->dec[i].pat.re);
    }
    free(t->dec);
    for (int i = 0; i < t->n_added; i++) {
        free(t->added[i].content);
        free(t->added[i].norm);
    }
    free(t->added);
    pcre2_code_free(t->byte_level_re);
    free(t);
}

/* GPT-2's pattern, as ByteLevel's use_regex runs it. */
static const char byte_level_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int attn_hftok_load_bytes(struct hftok **out, const char *text, size_t len, const char *name,
                          const char *config, size_t config_len, const char *config_name,
                          struct diag *err)
{
    *out = NULL;
    attn_diag_clear(err);
    if (attn_uni_init(err) != 0)
        return -1;
    struct hftok *t = calloc(1, sizeof(*t));
    if (!t)
        return attn_diag_file(err, name, "out of memory");
    t->model.unk_id = -1;
    struct jctx c = {.text = text, .len = len, .file = name, .err = err};
    json_t *root = parse(&c, text, len, 0);
    if (!root || load_root(&c, root, t) != 0) {
        json_decref(root);
        attn_hftok_free(t);
        return -1;
    }
    json_decref(root);
    if (config) {
        struct jctx cc = {.text = config, .len = config_len, .file = config_name, .err = err};
        /* its model_max_length is often 1e+30, written as an integer by Python */
        json_t *croot = parse(&cc, config, config_len, JSON_DECODE_INT_AS_REAL);
        if (!croot || load_config(&cc, croot, t) != 0) {
            json_decref(croot);
            attn_hftok_free(t);
            return -1;
        }
        json_decref(croot);
    }
    t->byte_level_re =
        attn_hf_regex_compile(byte_level_pattern, sizeof(byte_level_pattern) - 1, false, err);
    if (!t->byte_level_re) {
        attn_hftok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int attn_hftok_load(struct hftok **out, const char *path, const char *config_path, struct diag *err)
{
    *out = NULL;
    attn_diag_clear(err);
    char *text = NULL, *config = NULL;
    size_t len = 0, config_len = 0;
    if (attn_fsutil_read_file(&text, &len, path, HFTOK_MAX_FILE_BYTES, err) != 0)
        return -1;
    if (config_path && attn_fsutil_exists(config_path) &&
        attn_fsutil_read_file(&config, &config_len, config_path, HFTOK_MAX_CONFIG_BYTES, err) !=
            0) {
        free(text);
        return -1;
    }
    int rc = attn_hftok_load_bytes(out, text, len, path, config, config_len, config_path, err);
    free(text);
    free(config);
    return rc;
}

/* ---- Marian's files -------------------------------------------------------------------------- */

/* A problem of obj's member key, at it. */
static int key_problem(struct jctx *c, const char *key, const char *msg)
{
    push_key(c, key);
    int rc = jerr(c, "%s", msg);
    pop(c);
    return rc;
}

#define NOT_A_TOKEN "must be a token: a string or {\"content\": \"...\"}"

/* A special token of tokenizer_config.json (token_content); absent or null leaves *out as it
 * is. */
static int marian_token(struct jctx *c, json_t *root, const char *key, const char **out)
{
    json_t *v = token_content(json_object_get(root, key));
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v) && json_string_length(v) > 0) {
        *out = json_string_value(v);
        return 0;
    }
    return key_problem(c, key, NOT_A_TOKEN);
}

/* The special token content[0..len) as tokenizer.json's added_tokens writes one, with
 * vocab.json's id (-1: none), appended to added. */
static int marian_special(json_t *added, const struct hftok *t, const char *content, size_t len)
{
    json_t *e = json_pack("{s:i,s:s%,s:b,s:b,s:b,s:b,s:b}", "id", vocab_id(&t->vocab, content, len),
                          "content", content, len, "single_word", 0, "lstrip", 0, "rstrip", 0,
                          "normalized", 0, "special", 1);
    return json_array_append_new(added, e);
}

/* MarianTokenizer's settings of tokenizer_config.json that change the ids, and the added tokens
 * they make (*added: a JSON list in tokenizer.json's form, for load_added). Its other keys (the
 * languages, model_max_length, clean_up_tokenization_spaces, ...) change no id. */
static int marian_config(struct jctx *c, json_t *root, const struct hftok *t, json_t *added,
                         const char **unk)
{
    if (!json_is_object(root))
        return jerr(c, "must be a JSON object");
    bool separate = false;
    if (get_bool(c, root, "separate_vocabs", &separate, false, false, true))
        return -1;
    if (separate) {
        return key_problem(c, "separate_vocabs",
                           "is true: a target_vocab.json of the target's own ids, which "
                           "attnscope does not read yet");
    }
    json_t *kw = json_object_get(root, "sp_model_kwargs");
    if (kw && !json_is_null(kw) && !(json_is_object(kw) && json_object_size(kw) == 0)) {
        return key_problem(c, "sp_model_kwargs",
                           "must be empty: SentencePiece's options (sampling) would make the "
                           "pieces random");
    }
    json_t *cls = json_object_get(root, "tokenizer_class");
    if (cls && !json_is_null(cls) &&
        !(json_is_string(cls) && strcmp(json_string_value(cls), "MarianTokenizer") == 0)) {
        return key_problem(c, "tokenizer_class",
                           "must be \"MarianTokenizer\": source.spm, target.spm and vocab.json "
                           "are Marian's files");
    }
    const char *eos = "</s>", *pad = "<pad>";
    if (marian_token(c, root, "unk_token", unk) || marian_token(c, root, "eos_token", &eos) ||
        marian_token(c, root, "pad_token", &pad))
        return -1;
    const char *names[] = {eos, *unk, pad};
    for (int i = 0; i < 3; i++)
        if (marian_special(added, t, names[i], strlen(names[i])))
            return jerr(c, "out of memory");
    json_t *more = json_object_get(root, "additional_special_tokens");
    if (more && !json_is_null(more) && !json_is_array(more)) {
        return key_problem(c, "additional_special_tokens", "must be a list of tokens");
    }
    for (size_t i = 0; more && i < json_array_size(more); i++) {
        json_t *e = token_content(json_array_get(more, i));
        if (!e || !json_is_string(e) || json_string_length(e) == 0) {
            push_key(c, "additional_special_tokens");
            push_index(c, (long)i);
            int rc = jerr(c, NOT_A_TOKEN);
            pop(c);
            pop(c);
            return rc;
        }
        if (marian_special(added, t, json_string_value(e), json_string_length(e)))
            return jerr(c, "out of memory");
    }
    return 0;
}

/* dir/name into path[size]. */
static int marian_path(char *path, size_t size, const char *dir, const char *name, struct diag *err)
{
    if (snprintf(path, size, "%s/%s", dir, name) >= (int)size)
        return attn_diag_file(err, dir, "the path is too long");
    return 0;
}

/* The file dir/name: read into *text, named in *path. */
static int marian_file(char **text, size_t *len, char *path, size_t size, const char *dir,
                       const char *name, size_t max, struct diag *err)
{
    return marian_path(path, size, dir, name, err) ||
                   attn_fsutil_read_file(text, len, path, max, err)
               ? -1
               : 0;
}

int attn_hftok_load_marian(struct hftok **out, const char *dir, struct diag *err)
{
    *out = NULL;
    attn_diag_clear(err);
    if (attn_uni_init(err) != 0)
        return -1;
    struct hftok *t = calloc(1, sizeof(*t));
    char vpath[4200], cpath[4200], spath[4200];
    char *vtext = NULL, *ctext = NULL;
    size_t vlen = 0, clen = 0;
    json_t *vroot = NULL, *croot = NULL, *added = json_array();
    int rc = -1;
    if (!t || !added) {
        attn_diag_file(err, dir, "out of memory");
        goto out;
    }
    t->model.kind = HM_SPM;
    t->model.unk_id = -1;
    if (marian_file(&vtext, &vlen, vpath, sizeof(vpath), dir, "vocab.json", HFTOK_MAX_FILE_BYTES,
                    err))
        goto out;
    struct jctx c = {.text = vtext, .len = vlen, .file = vpath, .err = err};
    if (!(vroot = parse(&c, vtext, vlen, 0)) || load_vocab_object(&c, vroot, &t->vocab))
        goto out;
    /* tokenizer_config.json, when there is one; its messages are located in it */
    if (marian_path(cpath, sizeof(cpath), dir, "tokenizer_config.json", err))
        goto out;
    struct jctx cc = {.file = cpath, .err = err};
    const char *unk = "<unk>";
    if (attn_fsutil_exists(cpath)) {
        if (marian_file(&ctext, &clen, cpath, sizeof(cpath), dir, "tokenizer_config.json",
                        HFTOK_MAX_CONFIG_BYTES, err))
            goto out;
        cc.text = ctext;
        cc.len = clen;
        if (!(croot = parse(&cc, ctext, clen, JSON_DECODE_INT_AS_REAL)) ||
            marian_config(&cc, croot, t, added, &unk))
            goto out;
    } else {
        json_t *empty = json_object();
        int r2 = empty ? marian_config(&cc, empty, t, added, &unk) : -1;
        json_decref(empty);
        if (r2) {
            attn_diag_file(err, dir, "out of memory");
            goto out;
        }
    }
    /* MarianTokenizer refuses a vocabulary without its unknown token; every special token must
     * be a row of the model, so one vocab.json lacks is refused too */
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *e = json_array_get(added, i);
        if (json_integer_value(json_object_get(e, "id")) < 0) {
            char b[80];
            const char *s = json_string_value(json_object_get(e, "content"));
            attn_diag_file(err, vpath, "has no \"%s\", the tokenizer's %s token",
                           shown(b, sizeof(b), s, strlen(s)),
                           i == 0   ? "end-of-sequence"
                           : i == 1 ? "unknown"
                           : i == 2 ? "padding"
                                    : "special");
            goto out;
        }
    }
    t->model.unk_id = vocab_id(&t->vocab, unk, strlen(unk));
    struct jctx ac = {.text = "", .len = 0, .file = croot ? cpath : vpath, .err = err};
    if (load_added(&ac, added, t))
        goto out;
    /* build_inputs_with_special_tokens: the source, then </s> (a pair: both, then </s>) */
    const char *eos = json_string_value(json_object_get(json_array_get(added, 0), "content"));
    json_t *post = json_pack(
        "{s:s,s:[{s:{s:s,s:i}},{s:{s:s,s:i}}],s:[{s:{s:s,s:i}},{s:{s:s,s:i}},"
        "{s:{s:s,s:i}}],s:{s:{s:s,s:[i],s:[s]}}}",
        "type", "TemplateProcessing", "single", "Sequence", "id", "A", "type_id", 0, "SpecialToken",
        "id", eos, "type_id", 0, "pair", "Sequence", "id", "A", "type_id", 0, "Sequence", "id", "B",
        "type_id", 0, "SpecialToken", "id", eos, "type_id", 0, "special_tokens", eos, "id", eos,
        "ids", (int)json_integer_value(json_object_get(json_array_get(added, 0), "id")), "tokens",
        eos);
    /* the pieces' "▁" is a space: what convert_tokens_to_string makes of it */
    json_t *dec = json_pack("{s:s,s:s,s:s,s:b}", "type", "Metaspace", "replacement", "\xE2\x96\x81",
                            "prepend_scheme", "always", "split", 1);
    if (!post || !dec) {
        json_decref(post);
        json_decref(dec);
        attn_diag_file(err, dir, "out of memory");
        goto out;
    }
    int r3 = load_post(&ac, post, &t->post);
    t->has_post = true;
    if (r3 == 0)
        r3 = load_dec(&ac, dec, t);
    json_decref(post);
    json_decref(dec);
    if (r3)
        goto out;
    static const char *const spm_name[2] = {"source.spm", "target.spm"};
    for (int i = 0; i < 2; i++) {
        if (marian_path(spath, sizeof(spath), dir, spm_name[i], err) ||
            attn_spm_load(&t->model.spm[i], spath, err))
            goto out;
    }
    set_size(t);
    rc = 0;
out:
    json_decref(vroot);
    json_decref(croot);
    json_decref(added);
    free(vtext);
    free(ctext);
    if (rc) {
        attn_hftok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
