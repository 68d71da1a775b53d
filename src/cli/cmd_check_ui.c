/* check's lesson on the explorer's screen (ui/lessoncheck.h): here, with main.c, since it
 * links curses and the commands do not. */
#include "cli/cli.h"
#include "ui/lessoncheck.h"

int cmd_check_lesson_screen(struct attn_scene *s, const char *path, const char *source, size_t len,
                            struct diag_list *problems, struct diag *err)
{
    return ui_lesson_check(s, path, source, len, UI_LESSON_COLS, UI_LESSON_LINES, problems, err);
}
