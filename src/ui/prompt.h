/* prompt: the one-line editor at the bottom (the sentence, a typed value, a file name, y/n).
 *
 * It edits and reports; it decides nothing. prompt_key says whether the line is still being
 * edited, was accepted or was cancelled, and the caller (the screen manager) hands an accepted
 * text to explore/commands. Wide characters throughout, so "café" or "日本" edit as single
 * characters; keys follow readline (C-a/C-e, C-b/C-f, C-d, C-k/C-u, C-w, Esc or C-g cancel).
 */
#ifndef ATTNSCOPE_UI_PROMPT_H
#define ATTNSCOPE_UI_PROMPT_H

#include <stddef.h>
#include <wchar.h>

#include "explore/commands.h"
#include "explore/keys.h"
#include "ui/theme.h"

#define PROMPT_MAX APP_TEXT_MAX /* characters the editor holds (explore/app.h) */

struct prompt {
    enum prompt_kind kind; /* PROMPT_NONE: closed */
    wchar_t buf[PROMPT_MAX];
    int len, cur;
    char label[ASK_LABEL_MAX];
    int cursor_y, cursor_x; /* where the terminal cursor goes while it is open */
};

enum prompt_result {
    PROMPT_EDITING,   /* still open (the text or the cursor may have changed) */
    PROMPT_ACCEPTED,  /* Enter, or y to a question: prompt_text has the answer */
    PROMPT_CANCELLED, /* Esc, C-g, or anything but y to a question */
};

void prompt_open(struct prompt *p, enum prompt_kind kind, const char *label, const char *initial);
static inline bool prompt_is_open(const struct prompt *p)
{
    return p->kind != PROMPT_NONE;
}
/* After ACCEPTED or CANCELLED the prompt stays as it was (kind, text) until prompt_close. */
enum prompt_result prompt_key(struct prompt *p, struct key k);
void prompt_close(struct prompt *p);
/* The text as UTF-8 (always NUL-terminated). */
void prompt_text(const struct prompt *p, char *out, size_t size);
/* Draws "label: text" on line y of a screen cols wide and sets cursor_y, cursor_x. */
void prompt_draw(struct prompt *p, const struct theme *t, int y, int cols);

#endif
