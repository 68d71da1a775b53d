/* utf8: locale-free UTF-8 (see utf8.h). */
#include "common/utf8.h"

#include <stdio.h>
#include <string.h>

int attn_utf8_decode(const char *str, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (s[0] == 0)
        return 0;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    int len;
    uint32_t c, min;
    if ((s[0] & 0xE0) == 0xC0)
        len = 2, c = s[0] & 0x1F, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0)
        len = 3, c = s[0] & 0x0F, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0)
        len = 4, c = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

int attn_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF)
        return 0;
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int attn_utf8_length(const char *s)
{
    int n = 0;
    while (*s) {
        uint32_t cp;
        int len = attn_utf8_decode(s, &cp);
        s += len ? len : 1;
        n++;
    }
    return n;
}

void attn_utf8_visible_token(char *out, size_t out_size, const char *token)
{
    /* Blanks are real tokens for the chars tokenizer: show them, or the label looks empty. */
    size_t o = 0;
    if (out_size == 0)
        return;
    for (const char *p = token; *p;) {
        char esc[UTF8_ESCAPE_MAX];
        const char *glyph = *p == ' '    ? "\u2423"
                            : *p == '\t' ? "\u21e5"
                            : *p == '\n' ? "\u21b5"
                                         : NULL;
        int k = glyph ? 1 : attn_utf8_escape_char(p, esc, 0);
        const char *piece = glyph ? glyph : esc[0] ? esc : p;
        size_t n = glyph ? 3 : esc[0] ? strlen(esc) : (size_t)k;
        if (o + n + 1 > out_size)
            break;
        memcpy(out + o, piece, n);
        o += n;
        p += k;
    }
    out[o] = '\0';
}

/* ---- escapes for a human reader (see utf8.h) ------------------------------------------------ */

/* The bidi controls, the line and paragraph separators, and the zero-width characters that
 * show nothing and join nothing (a byte order mark at the start of a file, U+200B, U+2060): in
 * a message they would hide what is there. */
static bool shows_as_code_point(uint32_t cp)
{
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
           cp == 0x200F || cp == 0x061C || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
           cp == 0x200B || cp == 0x2060;
}

int attn_utf8_escape_char(const char *s, char *esc, unsigned flags)
{
    uint32_t cp;
    int len = attn_utf8_decode(s, &cp);
    esc[0] = '\0';
    if (len == 0) {
        snprintf(esc, UTF8_ESCAPE_MAX, "\\x%02x", (unsigned char)s[0]);
        return 1;
    }
    if (cp == 0x1B)
        snprintf(esc, UTF8_ESCAPE_MAX, "\\e");
    else if (cp == '\n')
        snprintf(esc, UTF8_ESCAPE_MAX, "%s", flags & UTF8_ESC_KEEP_NEWLINE ? "" : "\\n");
    else if (cp == '\t')
        snprintf(esc, UTF8_ESCAPE_MAX, "%s", flags & UTF8_ESC_KEEP_TAB ? "" : "\\t");
    else if (cp == '\r')
        snprintf(esc, UTF8_ESCAPE_MAX, "\\r");
    else if (cp < 0x20 || cp == 0x7F)
        snprintf(esc, UTF8_ESCAPE_MAX, "\\x%02x", (unsigned)cp);
    else if ((cp >= 0x80 && cp < 0xA0) || shows_as_code_point(cp))
        snprintf(esc, UTF8_ESCAPE_MAX, "<U+%04X>", (unsigned)cp);
    return len;
}

int attn_utf8_escape_char_n(const char *s, size_t avail, char *esc, unsigned flags)
{
    /* Near the end, decode from a terminated copy, so a truncated multi-byte character is never
     * read past its last byte. */
    char tail[5] = {0};
    const char *at = s;
    if (avail < 4) {
        memcpy(tail, s, avail);
        at = tail;
    }
    int k = attn_utf8_escape_char(at, esc, flags);
    if ((size_t)k > avail) { /* a character cut by avail: its bytes are not UTF-8 here */
        k = 1;
        snprintf(esc, UTF8_ESCAPE_MAX, "\\x%02x", (unsigned char)s[0]);
    }
    return k;
}

size_t attn_utf8_escape(char *out, size_t size, const char *s, size_t len, unsigned flags)
{
    static const char more[] = "\u2026";
    size_t o = 0, i = 0;
    if (size == 0)
        return 0;
    if (len == (size_t)-1)
        len = strlen(s);
    while (i < len) {
        char esc[UTF8_ESCAPE_MAX];
        int k = attn_utf8_escape_char_n(s + i, len - i, esc, flags);
        const char *piece = esc[0] ? esc : s + i;
        size_t n = esc[0] ? strlen(esc) : (size_t)k;
        /* Room for this piece, and for "…" unless it is the last. */
        bool last = i + (size_t)k >= len;
        if (o + n + (last ? 0 : sizeof(more) - 1) + 1 > size) {
            if (o + sizeof(more) <= size) {
                memcpy(out + o, more, sizeof(more) - 1);
                o += sizeof(more) - 1;
            }
            break;
        }
        memcpy(out + o, piece, n);
        o += n;
        i += (size_t)k;
    }
    out[o] = '\0';
    return o;
}

const char *attn_utf8_esc(char *buf, size_t size, const char *s)
{
    attn_utf8_escape(buf, size, s ? s : "", (size_t)-1, 0);
    return buf;
}

void attn_utf8_fputs_escaped(const char *s, FILE *f, unsigned flags)
{
    while (*s) {
        char esc[UTF8_ESCAPE_MAX];
        int k = attn_utf8_escape_char(s, esc, flags);
        if (esc[0])
            fputs(esc, f);
        else
            fwrite(s, 1, (size_t)k, f);
        s += k;
    }
}

bool attn_utf8_needs_escape(const char *s, unsigned flags)
{
    while (*s) {
        char esc[UTF8_ESCAPE_MAX];
        s += attn_utf8_escape_char(s, esc, flags);
        if (esc[0])
            return true;
    }
    return false;
}
