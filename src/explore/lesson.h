/* lesson: the explorer's lesson mode, without a terminal.
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

#endif
