/* lessoncheck: a lesson's steps checked on the explorer's screen (see lessoncheck.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui/lessoncheck.h"

#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "explore/commands.h"
#include "explore/lessonmode.h"
#include "ui/ui.h"

/* The screen's answers for lesson_check_step: what the panels drew last. */
static bool shows_cell(void *ctx, int r, int c)
{
    struct ui *ui = ctx;
    return heatmap_shows_cell(&ui->heatmap, &ui->frame, r, c);
}

/* Whether text is on one of the lines of area, as the terminal holds them. */
static bool area_has(struct rect area, const char *text)
{
    for (int y = area.y; y < area.y + area.h; y++) {
        wchar_t w[1024];
        int n = mvinnwstr(y, area.x, w, area.w < 1023 ? area.w : 1023);
        if (n <= 0)
            continue;
        w[n] = L'\0';
        char line[4 * 1024 + 1];
        if (wcstombs(line, w, sizeof(line)) != (size_t)-1 && strstr(line, text))
            return true;
    }
    return false;
}

static bool shows_prediction(void *ctx, const char *text)
{
    struct ui *ui = ctx;
    return ui->predictions.visible && area_has(ui->predictions.area, text);
}

int ui_lesson_check(struct attn_scene *s, const char *path, const char *source, size_t len,
                    int cols, int lines, struct diag_list *problems, struct diag *err)
{
    /* The workshop's terminal: UTF-8, whatever this shell's locale (ASCII stand-ins would move
       nothing, but the screen is the one a projector shows). */
    char *ctype = strdup(setlocale(LC_CTYPE, NULL));
    if (!ctype)
        return attn_diag_set(err, "", "out of memory");
    if (!setlocale(LC_CTYPE, "C.UTF-8"))
        setlocale(LC_CTYPE, "C.utf8");
    struct ui_vterm term;
    if (ui_vterm_open(&term, cols, lines, err) != 0) {
        setlocale(LC_CTYPE, ctype);
        free(ctype);
        return -1;
    }

    int found = 0;
    ui_use_user_configs(false);
    struct ui *ui = ui_new(s, path, NULL, err); /* takes s */
    char size[32];
    snprintf(size, sizeof(size), "%d\u00d7%d", cols, lines);
    struct lesson_screen screen = {size, ui, shows_cell, shows_prediction};
    if (!ui) {
        if (!err->file[0])
            snprintf(err->file, sizeof(err->file), "%.*s", (int)sizeof(err->file) - 1, path);
        attn_diag_list_push(problems, err);
        found = 1;
    } else if (!app_lesson(ui->app)->lesson) {
        found = 0;
    } else {
        ui_draw(ui);
        int steps = app_lesson(ui->app)->lesson->n_steps;
        for (int i = 0; i < steps; i++) {
            if (i > 0) { /* Space, as the learner presses it */
                struct ask ask = {0};
                int outcome = command_run(ui->app, ACTION_LESSON_NEXT, &ask);
                ask_clear(&ask);
                ui_mark(ui, outcome);
                ui_draw(ui);
                if (app_lesson(ui->app)->step != i) {
                    attn_diag_list_add(problems, path, 0, 0, "lesson",
                                       "step %d: the lesson stops here: %s", i + 1,
                                       app_doc(ui->app)->error[0] ? app_doc(ui->app)->error
                                                                  : app_status(ui->app)->message);
                    found++;
                    break;
                }
            }
            found += lesson_check_step(ui->app, source, len, &screen, problems);
        }
    }
    ui_use_user_configs(true);
    ui_delete(ui);
    ui_vterm_close(&term);
    setlocale(LC_CTYPE, ctype);
    free(ctype);
    return found;
}
