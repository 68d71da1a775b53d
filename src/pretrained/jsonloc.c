/* jsonloc: a key's place in a JSON text (see jsonloc.h). One pass over the text, keeping the
 * member key of every object it is inside. */
#include "pretrained/jsonloc.h"

#include <stdbool.h>
#include <string.h>

#define DEPTH_MAX 64

/* Whether the JSON string at text[a + 1 .. b - 1] (b the closing quote) decodes to key. */
static bool string_is(const char *text, size_t a, size_t b, const char *key)
{
    size_t k = 0;
    for (size_t i = a + 1; i < b; i++) {
        char ch = text[i];
        if (ch == '\\' && i + 1 < b) {
            char e = text[++i];
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *at = strchr(from, e);
            if (at && e) {
                ch = to[at - from];
            } else if (e == 'u' && i + 4 < b && text[i + 1] == '0' && text[i + 2] == '0') {
                unsigned v = 0;
                for (int d = 3; d <= 4; d++) {
                    char h = text[i + d];
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                                                   : h - 'A' + 10);
                }
                if (v >= 0x80)
                    return false; /* a non-ASCII escape: no key of ours */
                ch = (char)v;
                i += 4;
            } else {
                return false;
            }
        }
        if (key[k] != ch)
            return false;
        k++;
    }
    return key[k] == '\0';
}

void attn_json_locate(const char *text, size_t len, const char *const *keys, int n, int *line,
                      int *col)
{
    *line = *col = 0;
    /* matched[d]: the containers 1 .. d are the objects named keys[0 .. d - 1] */
    bool object[DEPTH_MAX + 1] = {false}, matched[DEPTH_MAX + 1] = {true};
    int depth = 0, best = 0, ln = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (ch == '\n') {
            ln++;
            line_start = i + 1;
        } else if (ch == '{' || ch == '[') {
            if (depth < DEPTH_MAX) {
                object[depth + 1] = ch == '{';
                matched[depth + 1] = false;
            }
            depth++;
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch == '"') {
            size_t start = i++;
            while (i < len && text[i] != '"')
                i += text[i] == '\\' ? 2 : 1;
            if (depth < 1 || depth > DEPTH_MAX || depth > n || !object[depth] ||
                !matched[depth - 1])
                continue;
            size_t j = i + 1;
            while (j < len && strchr(" \t\r\n", text[j]))
                j++;
            if (j >= len || text[j] != ':') /* a value, not a key */
                continue;
            bool hit = string_is(text, start, i, keys[depth - 1]);
            if (depth < DEPTH_MAX)
                matched[depth] = hit; /* the object this key's value opens, if it is one */
            if (hit && depth > best) {
                best = depth;
                *line = ln;
                *col = (int)(start - line_start) + 1;
                if (depth == n)
                    return;
            }
        }
    }
}
