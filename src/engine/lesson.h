/* lesson: a scene's guided tour (scene key lesson:), as plain data.
 *
 * A lesson is an ordered list of steps. Each step shows one view (stage, layer, head, and a
 * cell or a row to look at), may make one edit (causal on, 4 heads, a new sentence, ...) that
 * stays for the steps after it, and has a caption of a few lines. src/scenefile reads, checks
 * and writes it; the explorer plays it (explore/lessonmode.h); both make a step's edit by
 * engine/edit.h's rules. A
 * loaded lesson never changes, so the scene's copies (one per undo step) share it.
 *
 * Captions mark the numbers they quote from the matrix on screen, so a test can check each one
 * against what the explorer shows at that step:
 *   {0.2379}             the step's cell; with a row instead, somewhere in that row; with
 *                        neither, somewhere in the matrix shown
 *   {0.2379 @ 1,1}       row 1, column 1 of the matrix shown (0-based, as the explorer counts)
 *   {1.4950 @ scores 1,1}  the same cell of another stage (same layer and head)
 *   {-inf @ 0,1}         a masked cell
 *   {0.9187 @ next 20}   the probability the model gives position 20's actual next token
 *                        (scenes with a vocabulary model: what the predictions panel shows)
 *   {0.6437 @ top 11}    the probability of position 11's most likely next token, the
 *                        panel's first line
 * A step that quotes a prediction shows the predictions panel (panel: predictions) with the
 * cursor on that position's row, and every number a caption quotes from the screen must be on
 * it at 80x24, the workshop's least (ui/lessoncheck.h checks that on a virtual terminal).
 * The number matches when the value, rounded to the decimals written, is the number written.
 * On screen a mark is just its number ("0.2379", "−∞").
 */
#ifndef ATTNSCOPE_LESSON_H
#define ATTNSCOPE_LESSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "engine/edit.h"
#include "engine/stage.h"

#define LESSON_MAX_STEPS         100
#define LESSON_CAPTION_MAX_CHARS 480 /* characters on screen, marks counted as their numbers */
#define LESSON_CAPTION_MAX_LINES 8
#define LESSON_MAX_MARKS         32 /* marked numbers in one caption */

/* What a step shows beside (or under) the map: the inspector, the next-token predictions of the
 * cursor's row (p), or the token view (v). */
enum attn_lesson_panel { LESSON_PANEL_INSPECTOR, LESSON_PANEL_PREDICTIONS, LESSON_PANEL_TOKENS };
/* "inspector", "predictions", "tokens": the values of a step's panel: key. */
const char *attn_lesson_panel_name(enum attn_lesson_panel p);

struct attn_lesson_step {
    int stage; /* enum attn_stage */
    int layer, head;
    int row, col;          /* the cell to look at; col -1: the row; both -1: neither */
    bool all_heads;        /* every head side by side instead of one */
    int panel;             /* enum attn_lesson_panel */
    struct attn_edit edit; /* kind < EDIT_LESSON_COUNT; the keys are the scene's own */
    char *caption;         /* with marks (above) */
    int line; /* where the step starts in its file (1-based; 0: unknown), for messages */
    int caption_line, caption_col; /* where the caption's value starts (1-based line and byte
                                      column; 0: unknown), to locate a mark in the file */
};

struct attn_lesson {
    int refs; /* the scenes sharing it */
    struct attn_lesson_step *steps;
    int n_steps;
};

/* An empty lesson of n steps (every step on the weights, head 0, no cell, no edit), one
 * reference; NULL when out of memory. */
struct attn_lesson *attn_lesson_new(int n_steps);
/* One more sharer / one fewer (the last frees it). Both take NULL. */
struct attn_lesson *attn_lesson_ref(struct attn_lesson *l);
void attn_lesson_unref(struct attn_lesson *l);

/* A number a caption marks (see above). */
struct attn_caption_mark {
    double value;      /* -INFINITY for -inf */
    int decimals;      /* digits written after the point */
    int stage;         /* -1: the step's */
    int row, col;      /* -1: the step's cell, its row, or anywhere */
    int next;          /* >= 0: {p @ next P}, the model's probability of position P's next
                          token (at temperature 1, after the step's ablations); -1: a cell */
    bool top;          /* with next: {p @ top P}, the probability of P's most likely token */
    size_t start, end; /* bytes of the mark in the caption: '{' up to and with '}' */
    char written[32];  /* the number as written ("0.2379", "-inf") */
};

/* Finds the marks of caption: returns how many (up to max are stored in marks, which may be
 * NULL), or -1 when one is malformed, with err->msg saying which and how to write it. */
int attn_caption_marks(const char *caption, struct attn_caption_mark *marks, int max,
                       struct diag *err);
/* The caption as shown: each mark replaced by its number ("-inf" as "−∞"), the trailing line
 * break of a YAML block dropped. The caption must have passed attn_caption_marks. */
void attn_caption_plain(char *out, size_t size, const char *caption);
/* Where byte `at` of step st's caption is in the file it was read from (source: len bytes):
 * 1-based line and byte column, for a message about a mark or a quoted number. The text that
 * starts there (up to a blank) is found again in the file from the caption's start, as often as
 * it occurs in the caption before `at`; when it is not found (a double-quoted caption's escapes
 * change it, or source is NULL) the caption's start, else the step's. */
void attn_caption_locate(int *line, int *col, const char *source, size_t len,
                         const struct attn_lesson_step *st, size_t at);
/* Characters (code points) and lines of attn_caption_plain's text. */
int attn_caption_chars(const char *caption);
int attn_caption_lines(const char *caption);

#endif
