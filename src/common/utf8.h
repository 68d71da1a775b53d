/* utf8: decode and encode UTF-8 without the C library's locale.
 *
 * Scene files, tokens and the screen are UTF-8 whatever LC_ALL says (over ssh it is often C),
 * so everything that walks text by character uses these instead of mbrtowc/wcstombs.
 */
#ifndef ATTNSCOPE_UTF8_H
#define ATTNSCOPE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the character at s into *cp; returns its length in bytes (1..4), or 0 when s does
 * not start with a valid, shortest-form UTF-8 sequence (or is the end of the string). */
int utf8_decode(const char *s, uint32_t *cp);
/* Writes cp as UTF-8 into out (at least 4 bytes, not terminated); returns the byte count, or
 * 0 for a value that is not a Unicode scalar. */
int utf8_encode(uint32_t cp, char *out);

/* Characters in s; an invalid byte counts as one. */
int utf8_length(const char *s);

/* A token as the explorer and pictures label it: a blank, a tab and a line break become the
 * visible U+2423, U+21E5 and U+21B5 (the chars tokenizer makes blanks real tokens). */
void utf8_visible_token(char *out, size_t out_size, const char *token);

#endif
