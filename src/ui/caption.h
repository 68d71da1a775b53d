/* caption panel: in lesson mode, the current step's caption under the map, the numbers it quotes
 * (its marks, engine/lesson.h) picked out in the selection's look, wrapped at blanks to the
 * panel's width; dimmed, with a note, when the learner changed the step. The screen manager
 * gives it the rows the step's caption needs (the inspector above it takes the rest: no blank
 * rows under a short caption); the map above both keeps its place from step to step. */
#ifndef ATTNSCOPE_UI_CAPTION_H
#define ATTNSCOPE_UI_CAPTION_H

#include "ui/panel.h"

void caption_panel_init(struct panel *p);
/* The rows the panel needs at width (a title row and the step's caption, at most max_rows); 0
 * without a lesson. */
int caption_rows(const struct app *a, int width, int max_rows);

#endif
