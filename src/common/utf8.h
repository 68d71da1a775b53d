/* utf8: decode and encode UTF-8 without the C library's locale.
 *
 * Scene files, tokens and the screen are UTF-8 whatever LC_ALL says (over ssh it is often C),
 * so everything that walks text by character uses these instead of mbrtowc/wcstombs.
 */
#ifndef ATTNSCOPE_UTF8_H
#define ATTNSCOPE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decodes the character at s into *cp; returns its length in bytes (1..4), or 0 when s does
 * not start with a valid, shortest-form UTF-8 sequence (or is the end of the string). */
int attn_utf8_decode(const char *s, uint32_t *cp);
/* Writes cp as UTF-8 into out (at least 4 bytes, not terminated); returns the byte count, or
 * 0 for a value that is not a Unicode scalar. */
int attn_utf8_encode(uint32_t cp, char *out);

/* Characters in s; an invalid byte counts as one. */
int attn_utf8_length(const char *s);

/* Text from a file (tokens, titles, captions, tensor names, config values, a scene's own line)
 * must never reach a terminal raw: an ESC starts a control sequence, a BEL rings, U+202E turns
 * the rest of the line around. Whatever a human reads goes through the escapes below, spelled
 * as git and ls do:
 *   ESC                           \e
 *   tab, line break, return       \t \n \r (unless the caller keeps them: UTF8_ESC_KEEP_*)
 *   other C0 controls and DEL     \x00 .. \x1f, \x7f
 *   C1 controls U+0080..U+009F    <U+0085>
 *   bidi controls                 <U+202E> (U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C)
 *   line and paragraph separators <U+2028> <U+2029>
 *   zero-width characters         <U+FEFF> (a byte order mark), <U+200B>, <U+2060>
 *   a byte that is not UTF-8      \xff
 * A backslash itself is left as it is, so escaping twice changes nothing (a message that
 * quotes an escaped name stays readable). */
#define UTF8_ESCAPE_MAX       16 /* bytes of one escape with its NUL ("<U+202E>": 9) */
#define UTF8_ESC_KEEP_NEWLINE 1u /* '\n' stays a line break (text laid out in lines) */
#define UTF8_ESC_KEEP_TAB     2u /* '\t' stays a tab (a source line under a caret) */

/* The character at s (s[0] != 0): returns its length in bytes (an invalid byte is 1), and
 * writes into esc (UTF8_ESCAPE_MAX bytes) how it is shown when it must be escaped, else "". */
int attn_utf8_escape_char(const char *s, char *esc, unsigned flags);
/* attn_utf8_escape_char on s, of which only avail bytes (at least 1) may be read: s need not be
 * NUL-terminated there, and a character cut by avail is one byte, escaped. */
int attn_utf8_escape_char_n(const char *s, size_t avail, char *esc, unsigned flags);
/* The len bytes of s ((size_t)-1: up to its NUL; a NUL within len is shown as \x00), every
 * character that must be escaped escaped, into out (size > 4 bytes), always terminated. When the
 * result does not fit it ends with "…", cut after a whole character. Returns the bytes written
 * (without the NUL). */
size_t attn_utf8_escape(char *out, size_t size, const char *s, size_t len, unsigned flags);
/* attn_utf8_escape into buf for a printf argument: returns buf. The whole of s when it fits. */
const char *attn_utf8_esc(char *buf, size_t size, const char *s);
/* Writes s to f escaped (no limit on its length). */
void attn_utf8_fputs_escaped(const char *s, FILE *f, unsigned flags);
/* True when s has a character attn_utf8_escape would escape. */
bool attn_utf8_needs_escape(const char *s, unsigned flags);

/* A token as the explorer and pictures label it: a blank, a tab and a line break become the
 * visible U+2423, U+21E5 and U+21B5 (the chars tokenizer makes blanks real tokens), and every
 * other character that must be escaped is (above). Cut after a whole character to fit. */
void attn_utf8_visible_token(char *out, size_t out_size, const char *token);

#endif
