/* utf8: locale-free UTF-8 (see utf8.h). */
#include "common/utf8.h"

#include <string.h>

int utf8_decode(const char *str, uint32_t *cp)
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

int utf8_encode(uint32_t cp, char *out)
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

int utf8_length(const char *s)
{
    int n = 0;
    while (*s) {
        uint32_t cp;
        int len = utf8_decode(s, &cp);
        s += len ? len : 1;
        n++;
    }
    return n;
}

void utf8_visible_token(char *out, size_t out_size, const char *token)
{
    /* Blanks are real tokens for the chars tokenizer: show them, or the label looks empty. */
    size_t o = 0;
    for (const char *p = token; *p && o + 4 < out_size; p++) {
        const char *glyph = *p == ' '    ? "\u2423"
                            : *p == '\t' ? "\u21e5"
                            : *p == '\n' ? "\u21b5"
                                         : NULL;
        if (glyph) {
            memcpy(out + o, glyph, 3);
            o += 3;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}
