/* lessonmode: the explorer's lesson mode, without a terminal (a lesson as data is
 * engine/lesson.h).
 *
 * A scene with a lesson (engine/lesson.h) opens in lesson mode on its first step. Moving to a
 * step shows its view (stage, layer, head, cell or row) and makes its edit through the explorer's
 * own edit functions (explore/app.h), so the edit is exactly what the user's key would do, with
 * its undo step and its message. Going back undoes that step's edit. Edits stay for the steps
 * after them: step i's scene is the scene with the edits of steps 0 .. i.
 *
 * The user may poke around inside a step (any key, edits included). Moving on starts from the
 * step's own scene again: if the user edited, that scene comes back first as one edit (kept on
 * the undo history), then the next step's edit is made; going back likewise lands on the
 * earlier step's scene. So stepping back and forth always shows each step as written, and the
 * numbers its caption quotes. Leaving lesson mode keeps everything as it is; coming back shows
 * the step again as written.
 *
 * Front ends call lesson_open after app_init, then the functions below for the lesson actions.
 */
#ifndef ATTNSCOPE_EXPLORE_LESSON_H
#define ATTNSCOPE_EXPLORE_LESSON_H

#include <stdbool.h>

#include "engine/lesson.h"
#include "explore/app.h"

/* Starts lesson mode on step 0 when the scene has a lesson (else does nothing). Returns 0, or
 * -1 when out of memory (the explorer goes on without it). */
int lesson_open(struct app *a);
/* True in lesson mode (a lesson, and not left). */
bool lesson_active(const struct app *a);
/* The step on screen (kept while out of lesson mode), or NULL without a lesson. */
const struct attn_lesson_step *lesson_current(const struct app *a);
/* The next step / the one before; at either end the message line says so. Return 0, or -1 when
 * there is no step to go to (or the step's edit was refused: its message says why). */
int lesson_next(struct app *a);
int lesson_prev(struct app *a);
/* Any step (0 .. n - 1), one step at a time. */
int lesson_go(struct app *a, int step);
/* Leaves lesson mode (the view and the scene stay), or comes back to the step as written. */
int lesson_toggle(struct app *a);
/* True when the learner changed the step on screen: its scene (an edit not undone) or its view
 * (another stage, layer or head, every head or their mean, a baseline's Δ). The caption's
 * numbers then need not be on screen: the caption is shown stale (the next step still starts
 * from this one as written). Cursor moves, zoom and colours change no number: they do not
 * count. */
bool lesson_step_changed(const struct app *a);

/* ---- checking a lesson: `attnscope check` and tests/test_lessons.c ------------------------ */

/* What a front end's screen shows of the step, as last drawn, for lesson_check_step: the
 * explorer's terminal answers on a virtual one of the workshop's 80x24 (ui/lessoncheck.h). */
struct lesson_screen {
    const char *size; /* "80×24", for messages */
    void *ctx;
    /* Whether the map shows cell (r, c) of the matrix on screen with its number. */
    bool (*shows_cell)(void *ctx, int r, int c);
    /* Whether the predictions panel shows text (a number as the caption writes it). */
    bool (*shows_prediction)(void *ctx, const char *text);
};

/* Whether the step on screen is what its file says: the scene valid and its edit made (no
 * refused input), the view the step gives (stage, layer, head, all heads, cell or row), and
 * every number its caption marks equal to what the explorer shows, rounded to the decimals
 * written (engine/lesson.h); a number with three or more decimals outside a mark is a quote
 * nobody checks, and is a problem too. A quoted prediction needs the step to show it (panel:
 * predictions, on its row); a quoted cell of the map one head's map (not every head's tiles).
 * With a screen (NULL: none), every quote of the map's stage and every prediction must be on it
 * too: the cell in the map's window with its number, the number in the predictions panel. Each
 * problem is added to problems, located in a->doc.scene_path at the mark or number (source: the
 * file's text, len bytes; NULL: at the step). Returns the number of problems added. */
int lesson_check_step(const struct app *a, const char *source, size_t len,
                      const struct lesson_screen *screen, struct diag_list *problems);
/* Plays the whole lesson from lesson_open's first step to its last, as Space would, and checks
 * every step (lesson_check_step). Returns the number of problems added. */
int lesson_check_all(struct app *a, const char *source, size_t len, struct diag_list *problems);

#endif
