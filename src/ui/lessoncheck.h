/* lessoncheck: a lesson checked against the explorer's own screen.
 *
 * The lesson is played on a virtual terminal (newterm, its output thrown away) of the size a
 * workshop projects, 80x24 the least it documents, as Space plays it from the first step to the
 * last, and each step is checked as explore/lessonmode.h's lesson_check_step says, with the
 * screen: every cell a caption quotes from the map must be in the map's window with its number,
 * every prediction it quotes in the predictions panel. `attnscope check` runs it on a lesson
 * (main.c hands it to the commands, which do not link curses), and so do the tests.
 */
#ifndef ATTNSCOPE_UI_LESSONCHECK_H
#define ATTNSCOPE_UI_LESSONCHECK_H

#include <stddef.h>

#include "common/diag.h"
#include "engine/scene.h"

/* The size a lesson's screen is checked at: the workshop's least (docs/lessons.md). */
#define UI_LESSON_COLS  80
#define UI_LESSON_LINES 24

/* Plays the lesson of s (taken over, freed) at cols x lines with the shipped keys and colours and
 * a UTF-8 locale, and adds every problem of every step to problems, located in path at the mark
 * (source: the file's text, len bytes, or NULL); a scene the explorer cannot open is one such
 * problem. Returns how many were added; -1 with err, and s left as it was, when no virtual
 * terminal can be made (no terminfo for xterm-256color). */
int ui_lesson_check(struct attn_scene *s, const char *path, const char *source, size_t len,
                    int cols, int lines, struct diag_list *problems, struct diag *err);

#endif
