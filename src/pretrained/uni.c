/* uni: Unicode facts from ICU, at the versions Hugging Face's tokenizers uses (see uni.h). */
#include "pretrained/uni.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uset.h>
#include <unicode/ustring.h>

#include "common/utf8.h"

static const UNormalizer2 *forms[4]; /* filtered to [:Age=9.0:] */
static USet *age9;                   /* kept open: the filtered normalisers point at it */
static UNormalizer2 *filtered[4];
static UErrorCode init_status = U_ZERO_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_all(void)
{
    UErrorCode st = U_ZERO_ERROR;
    forms[UNI_NFC] = unorm2_getNFCInstance(&st);
    forms[UNI_NFD] = unorm2_getNFDInstance(&st);
    forms[UNI_NFKC] = unorm2_getNFKCInstance(&st);
    forms[UNI_NFKD] = unorm2_getNFKDInstance(&st);
    /* ICU's UnicodeSet reads [:Age=9.0:] as "assigned in 9.0 or before" */
    static const UChar pattern[] = {'[', ':', 'A', 'g', 'e', '=', '9', '.', '0', ':', ']', 0};
    if (U_SUCCESS(st))
        age9 = uset_openPattern(pattern, -1, &st);
    for (int f = 0; f < 4 && U_SUCCESS(st); f++)
        filtered[f] = unorm2_openFiltered(forms[f], age9, &st);
    init_status = st;
}

int attn_uni_init(struct diag *err)
{
    pthread_once(&once, open_all);
    if (U_FAILURE(init_status))
        return attn_diag_set(err, "", "ICU cannot open its normalisation data: %s",
                             u_errorName(init_status));
    return 0;
}

/* The character's age is at most major.minor (a character not assigned has age 0.0, and is
 * not in any category the callers ask about). */
static bool age_at_most(uint32_t c, int major, int minor)
{
    UVersionInfo v;
    u_charAge((UChar32)c, v);
    return v[0] < major || (v[0] == major && v[1] <= minor);
}

bool attn_uni_is_whitespace(uint32_t c)
{
    return u_hasBinaryProperty((UChar32)c, UCHAR_WHITE_SPACE);
}

bool attn_uni_is_numeric(uint32_t c)
{
    int t = u_charType((UChar32)c);
    return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool attn_uni_is_word(uint32_t c)
{
    int t = u_charType((UChar32)c);
    return u_hasBinaryProperty((UChar32)c, UCHAR_ALPHABETIC) || t == U_NON_SPACING_MARK ||
           t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK || t == U_DECIMAL_DIGIT_NUMBER ||
           t == U_CONNECTOR_PUNCTUATION || u_hasBinaryProperty((UChar32)c, UCHAR_JOIN_CONTROL);
}

bool attn_uni_bert_is_control(uint32_t c)
{
    if (c == '\t' || c == '\n' || c == '\r') /* BertNormalizer's is_control keeps them */
        return false;
    int t = u_charType((UChar32)c);
    return (t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_PRIVATE_USE_CHAR ||
            t == U_SURROGATE) &&
           age_at_most(c, 8, 0);
}

bool attn_uni_bert_is_punctuation(uint32_t c)
{
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    int t = u_charType((UChar32)c);
    return (t == U_CONNECTOR_PUNCTUATION || t == U_DASH_PUNCTUATION || t == U_START_PUNCTUATION ||
            t == U_END_PUNCTUATION || t == U_INITIAL_PUNCTUATION || t == U_FINAL_PUNCTUATION ||
            t == U_OTHER_PUNCTUATION) &&
           age_at_most(c, 8, 0);
}

bool attn_uni_bert_is_nonspacing(uint32_t c)
{
    return u_charType((UChar32)c) == U_NON_SPACING_MARK && age_at_most(c, 8, 0);
}

bool attn_uni_is_combining_mark(uint32_t c)
{
    int t = u_charType((UChar32)c);
    return (t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK) &&
           age_at_most(c, 9, 0);
}

bool attn_uni_is_chinese(uint32_t c)
{
    /* the blocks BERT's tokenizer (and BertNormalizer) calls Chinese: its definition */
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

int attn_uni_lower(uint32_t c, uint32_t out[3])
{
    UChar src[2], dst[8];
    int32_t n = 0;
    U16_APPEND_UNSAFE(src, n, (UChar32)c);
    UErrorCode st = U_ZERO_ERROR;
    /* one character alone: no context, so no final sigma, as char::to_lowercase */
    int32_t m = u_strToLower(dst, 8, src, n, "", &st);
    if (U_FAILURE(st) || m > 8) {
        out[0] = c;
        return 1;
    }
    int k = 0;
    for (int32_t i = 0; i < m && k < 3;) {
        UChar32 d;
        U16_NEXT(dst, i, m, d);
        out[k++] = (uint32_t)d;
    }
    return k;
}

/* ---- normalisation ---- */

struct buf {
    char *s;
    uint32_t *seg;
    size_t n, cap;
};

static int put(struct buf *b, const char *p, size_t len, const uint32_t *seg_src, uint32_t seg)
{
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + len)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (s)
            b->s = s;
        uint32_t *g = realloc(b->seg, cap * sizeof(*g));
        if (g)
            b->seg = g;
        if (!s || !g)
            return -1;
        b->cap = cap;
    }
    memcpy(b->s + b->n, p, len);
    for (size_t i = 0; i < len; i++)
        b->seg[b->n + i] = seg_src ? seg_src[i] : seg;
    b->n += len;
    return 0;
}

int attn_uni_normalize(char **out, uint32_t **seg, size_t *n, enum uni_form form, const char *text,
                       size_t len, struct diag *err)
{
    *out = NULL;
    *seg = NULL;
    *n = 0;
    if (attn_uni_init(err) != 0)
        return -1;
    const UNormalizer2 *nz = filtered[form];
    struct buf b = {0};
    UChar *u16 = malloc((len + 1) * 2 * sizeof(UChar)), *res = NULL;
    uint32_t *own = malloc((len + 1) * sizeof(*own));
    size_t res_cap = 0;
    char *u8 = NULL;
    size_t u8_cap = 0;
    int rc = -1;
    if (!u16 || !own)
        goto oom;
    /* every byte of a character carries the character's start: "left as is" */
    for (size_t i = 0; i < len;) {
        uint32_t c;
        int k = attn_utf8_decode(text + i, &c);
        if (k <= 0)
            k = 1;
        for (int j = 0; j < k && i + (size_t)j < len; j++)
            own[i + (size_t)j] = (uint32_t)i;
        i += (size_t)k;
    }
    size_t start = 0;
    while (start < len) {
        /* a segment: from a boundary to the next one (ICU's hasBoundaryBefore) */
        size_t end = start;
        int32_t m = 0;
        do {
            uint32_t c;
            int k = attn_utf8_decode(text + end, &c);
            if (k <= 0) { /* the callers pass valid UTF-8; keep the byte as it is */
                c = 0xFFFD;
                k = 1;
            }
            if (end > start && unorm2_hasBoundaryBefore(nz, (UChar32)c))
                break;
            U16_APPEND_UNSAFE(u16, m, (UChar32)c);
            end += (size_t)k;
        } while (end < len);
        UErrorCode st = U_ZERO_ERROR;
        if (unorm2_isNormalized(nz, u16, m, &st) && U_SUCCESS(st)) {
            if (put(&b, text + start, end - start, own + start, 0))
                goto oom;
            start = end;
            continue;
        }
        st = U_ZERO_ERROR;
        int32_t need = unorm2_normalize(nz, u16, m, res, (int32_t)res_cap, &st);
        if (st == U_BUFFER_OVERFLOW_ERROR || (size_t)need > res_cap) {
            res_cap = (size_t)need + 16;
            UChar *r = realloc(res, res_cap * sizeof(UChar));
            if (!r)
                goto oom;
            res = r;
            st = U_ZERO_ERROR;
            need = unorm2_normalize(nz, u16, m, res, (int32_t)res_cap, &st);
        }
        if (U_FAILURE(st)) {
            attn_diag_set(err, "", "ICU cannot normalise the text: %s", u_errorName(st));
            goto out;
        }
        int32_t bytes = 0;
        st = U_ZERO_ERROR;
        u_strToUTF8(u8, (int32_t)u8_cap, &bytes, res, need, &st);
        if (st == U_BUFFER_OVERFLOW_ERROR || (size_t)bytes > u8_cap) {
            u8_cap = (size_t)bytes + 16;
            char *p = realloc(u8, u8_cap);
            if (!p)
                goto oom;
            u8 = p;
            st = U_ZERO_ERROR;
            u_strToUTF8(u8, (int32_t)u8_cap, &bytes, res, need, &st);
        }
        if (U_FAILURE(st)) {
            attn_diag_set(err, "", "ICU cannot convert the text: %s", u_errorName(st));
            goto out;
        }
        if (put(&b, u8, (size_t)bytes, NULL, own[start]))
            goto oom;
        start = end;
    }
    *out = b.s ? b.s : malloc(1);
    *seg = b.seg ? b.seg : malloc(sizeof(uint32_t));
    if (!*out || !*seg) {
        free(*out);
        free(*seg);
        *out = NULL;
        *seg = NULL;
        goto oom;
    }
    *n = b.n;
    b.s = NULL;
    b.seg = NULL;
    rc = 0;
    goto out;
oom:
    attn_diag_set(err, "", "out of memory (normalising %zu bytes)", len);
out:
    free(b.s);
    free(b.seg);
    free(u16);
    free(own);
    free(res);
    free(u8);
    return rc;
}
