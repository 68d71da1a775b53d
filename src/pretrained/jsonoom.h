/* jsonoom: whether jansson failed for want of memory rather than because of the JSON; and
 * whether a file starts with a byte order mark.
 *
 * jansson 2.14 reports out of memory three ways: json_error_out_of_memory (rarely), no message
 * at all (a value, an object or its lexer could not be allocated), and, when the copy of a
 * string it has read whole could not be allocated, the lexer's "invalid token", which the parser
 * words as "invalid token" or "string or '}' expected" with the position just past the string's
 * closing quote. A string the lexer refuses for what it holds has its own message, and jansson
 * keeps the first message, so those words after a closing quote mean memory. The readers of
 * tokenizers, checkpoints and config.json ask this before they call a file not valid JSON.
 */
#ifndef ATTNSCOPE_PRETRAINED_JSONOOM_H
#define ATTNSCOPE_PRETRAINED_JSONOOM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* je is json_loadb's error for the len bytes of text. */
static inline bool attn_json_out_of_memory(const json_error_t *je, const char *text, size_t len)
{
    if (json_error_code(je) == json_error_out_of_memory || je->text[0] == '\0')
        return true;
    size_t pos = je->position > 0 ? (size_t)je->position : 0;
    return json_error_code(je) == json_error_invalid_syntax && pos > 0 && pos <= len &&
           text[pos - 1] == '"' &&
           (strncmp(je->text, "invalid token", 13) == 0 ||
            strncmp(je->text, "string or '}' expected", 22) == 0);
}

/* A UTF-8 byte order mark at the start of a file: not JSON (RFC 8259 forbids writing one, and
 * Python's json and Rust's serde_json, which Hugging Face's libraries read with, refuse it).
 * jansson's own words for it ("'[' or '{' expected near '\xEF\xBB\xBF'") hide what it is, so the
 * readers say this at line 1, column 1 instead. */
#define ATTN_JSON_BOM_MSG                                                                          \
    "the file starts with a byte order mark (<U+FEFF>), which JSON does not allow (Hugging "       \
    "Face's readers refuse it too); save it as UTF-8 without one"

static inline bool attn_json_has_bom(const char *text, size_t len)
{
    return len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0;
}

#endif
