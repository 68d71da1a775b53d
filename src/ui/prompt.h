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
    char note[160];         /* what the last paste did, shown while it is open; "" for nothing */
    bool fresh; /* a knob's value as it opened, shown selected: the first character typed
                   replaces it (H 4 Enter is heads 4, not 84), any other key edits it */
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
/* A paste (the terminal's bracketed paste: text, never keys) into the open prompt: its line ends
 * (CR, LF, CRLF) and tabs become spaces, line ends at its end and other control characters are
 * dropped (a paste never presses Enter or Esc), and what is left is inserted at the cursor, as
 * much as the line has room for. text (n characters, changed in place) is what was read of it,
 * `more` the characters that came after those and were not kept. A question takes none. note
 * says what happened (as_sentence: the paste opened the sentence editor). Returns the
 * characters inserted. */
int prompt_paste(struct prompt *p, wchar_t *text, int n, long more, bool as_sentence);
/* The text as UTF-8 (always NUL-terminated). */
void prompt_text(const struct prompt *p, char *out, size_t size);
/* Draws "label: text" on line y of a screen cols wide and sets cursor_y, cursor_x. */
void prompt_draw(struct prompt *p, const struct theme *t, int y, int cols);

#endif
