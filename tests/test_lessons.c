/* test_lessons: every lesson shipped in scenes/lessons/ played through the explorer without a
 * screen (explore/lessonmode.h), forwards to its end and back to its start, and at every step every
 * number its caption marks checked against the matrix the explorer shows there.
 *
 * A caption marks the numbers it quotes ({0.2379}, {0.2379 @ 1,1}, {1.4950 @ scores 1,1},
 * {-inf @ 0,1}: engine/lesson.h); a number with three or more decimals outside a mark is a quote
 * nobody checks, and fails. The checks are the library's (explore/lessonmode.h's
 * lesson_check_step), which `attnscope check` runs on any lesson; here they run going back too.
 * Each lesson has 5 to 12 steps, and no step's edit may be refused or leave the scene invalid.
 *
 * With ATTNSCOPE_LESSON_PRINT=1 every step's matrix is printed (stderr), to write captions by.
 * Environment: ATTNSCOPE_SCENES_DIR (the repository's scenes/ folder).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "explore/appstate.h"
#include "explore/app.h"
#include "explore/lessonmode.h"
#include "scenefile/scenefile.h"
#include "testutil.h"
#include "ui/lessoncheck.h"

static bool printing(void)
{
    const char *p = getenv("ATTNSCOPE_LESSON_PRINT");
    return p && *p && strcmp(p, "0") != 0;
}

static void print_step(const struct app *a, const char *name, int i)
{
    const struct attn_lesson_step *st = lesson_current(a);
    struct attn_mat_view v = app_view(a, a->view.stage, a->view.head);
    fprintf(stderr, "---- %s step %d: %s head %d layer %d (%d x %d)%s%s\n", name, i + 1,
            attn_stage_name(a->view.stage), a->view.head, a->view.layer, v.rows, v.cols,
            a->status.message[0] ? " message: " : "", a->status.message);
    for (int r = 0; r < v.rows; r++) {
        fprintf(stderr, "  %-10.10s", app_model(a)->tokens[r]);
        for (int c = 0; c < v.cols; c++)
            fprintf(stderr, " %9.4f", (double)v.data[(size_t)r * v.stride + c]);
        fputc('\n', stderr);
    }
    (void)st;
}

/* The step shown is step i, and what the explorer shows there is what the step's file says
 * (lesson_check_step: the view, a valid scene, every marked number). */
static int check_step(const struct app *a, const char *name, int i)
{
    if (a->lesson.step != i || !lesson_active(a)) {
        fprintf(stderr, "%s: at step %d, expected %d\n", name, a->lesson.step + 1, i + 1);
        return 1;
    }
    int problems = 0;
    if (app_unsaved(a)) {
        fprintf(stderr, "%s step %d: the lesson's own state counts as unsaved\n", name, i + 1);
        problems++;
    }
    struct diag_list found;
    attn_diag_list_init(&found);
    problems += lesson_check_step(a, NULL, 0, NULL, &found);
    for (int k = 0; k < found.n; k++)
        attn_diag_print(stderr, &found.items[k], NULL, 0);
    attn_diag_list_free(&found);
    return problems;
}

static void test_every_lesson(void **state)
{
    (void)state;
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    assert_non_null(scenes);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/lessons", scenes);
    int n;
    char **names = tu_list_names(dir, ".yaml", &n);
    assert_non_null(names);
    assert_true(n >= 6); /* scenes/lessons/ ships six lessons */
    int problems = 0;
    for (int f = 0; f < n; f++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
        struct attn_scene s;
        if (attn_scenefile_load_report(&s, path, stderr) != 0)
            fail_msg("%s does not load", path);
        if (!s.lesson)
            fail_msg("%s has no lesson", path);
        int steps = s.lesson->n_steps;
        if (steps < 5 || steps > 12) {
            fprintf(stderr, "%s: %d steps, a lesson has 5 to 12\n", names[f], steps);
            problems++;
        }
        struct app a;
        struct diag err;
        assert_int_equal(app_init(&a, &s, path, NULL, &err), 0);
        assert_int_equal(lesson_open(&a), 0);
        for (int i = 0; i < steps; i++) {
            if (i > 0)
                assert_int_equal(lesson_next(&a), 0);
            if (printing())
                print_step(&a, names[f], i);
            problems += check_step(&a, names[f], i);
        }
        assert_int_equal(lesson_next(&a), -1); /* the end: stays */
        problems += check_step(&a, names[f], steps - 1);
        for (int i = steps - 2; i >= 0; i--) {
            assert_int_equal(lesson_prev(&a), 0);
            problems += check_step(&a, names[f], i);
        }
        assert_int_equal(a.doc.n_undo, a.lesson.changed[0] ? 1 : 0); /* every edit undone again */
        app_free(&a);
    }
    tu_free_names(names, n);
    if (problems)
        fail_msg("%d problems in the lessons (above)", problems);
}

/* Every shipped lesson on the explorer's screen at 80x24, the workshop's least (ui/lessoncheck.h,
 * as `attnscope check` plays it): each cell a caption quotes from the map is in the map's window
 * with its number, each prediction it quotes in the predictions panel. Lesson 7 hid the prediction
 * its caption talked about (the panel, opened with p, had room for one line). */
static void test_every_lesson_on_screen(void **state)
{
    (void)state;
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/lessons", scenes);
    int n;
    char **names = tu_list_names(dir, ".yaml", &n);
    assert_non_null(names);
    int problems = 0;
    for (int f = 0; f < n; f++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
        struct attn_scene s;
        if (attn_scenefile_load_report(&s, path, stderr) != 0)
            fail_msg("%s does not load", path);
        size_t len;
        char *source = tu_read_file(path, &len);
        struct diag_list found;
        attn_diag_list_init(&found);
        struct diag err;
        int k =
            ui_lesson_check(&s, path, source, len, UI_LESSON_COLS, UI_LESSON_LINES, &found, &err);
        if (k < 0)
            fail_msg("%s: %s", path, err.msg);
        for (int i = 0; i < found.n; i++)
            attn_diag_print(stderr, &found.items[i], source, len);
        problems += k;
        attn_diag_list_free(&found);
        free(source);
    }
    tu_free_names(names, n);
    if (problems)
        fail_msg("%d quotes not on the screen at 80x24 (above)", problems);
}

/* The screen check finds what is not on screen: a cell out of the map's window, a prediction the
 * step does not open. */
static void test_screen_check_finds_hidden_quotes(void **state)
{
    (void)state;
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    char *dir = tu_make_tmpdir("attnscope-lesson-hidden");
    assert_non_null(dir);
    char path[4200], lesson[16384];
    snprintf(path, sizeof(path), "%s/hidden.yaml", dir);
    snprintf(lesson, sizeof(lesson),
             "version: 1\n"
             "text: \"Your journey starts with one step\"\n"
             "tokenizer: {kind: gpt2, vocab: %s/../models/english/vocab.json, merges: "
             "%s/../models/english/merges.txt}\n"
             "model: {file: %s/../models/english/model.safetensors, arch: gpt2}\n"
             "lesson:\n"
             "  - {stage: weights, layer: 2, head: 4, cell: [0, 0],\n"
             "     caption: \"the last row, {0.1423 @ 12,12}, and the first, {1.0000 @ 0,0}\"}\n"
             "  - {stage: weights, layer: 2, head: 4, cell: [11, 0],\n"
             "     caption: \"after st, ep gets {0.0048 @ next 11}\"}\n"
             "  - {stage: weights, layer: 2, head: 4, cell: [11, 0], panel: predictions,\n"
             "     caption: \"after st, ep gets {0.0048 @ next 11}, art {0.6421 @ top 11}\"}\n",
             scenes, scenes, scenes);
    tu_write_text(path, lesson);
    struct attn_scene s;
    if (attn_scenefile_load_report(&s, path, stderr) != 0)
        fail_msg("%s does not load", path);
    struct diag_list found;
    attn_diag_list_init(&found);
    struct diag err;
    int k = ui_lesson_check(&s, path, lesson, strlen(lesson), 80, 24, &found, &err);
    for (int i = 0; i < found.n; i++)
        attn_diag_print(stderr, &found.items[i], lesson, strlen(lesson));
    assert_int_equal(k, 2);
    assert_int_equal(found.n, 2);
    assert_non_null(strstr(found.items[0].msg, "step 1: the caption quotes 0.1423, row 12, "
                                               "column 12, which the map does not show at "
                                               "80\u00d724"));
    assert_int_equal(found.items[0].line, 7);
    assert_non_null(strstr(found.items[1].msg, "step 2: the caption quotes 0.0048, position "
                                               "11's prediction, but the step does not show it"));
    attn_diag_list_free(&found);
    remove(path);
    tu_remove_tree(dir);
    free(dir);
}

/* docs/lessons.md's table names every lesson with its number of steps as the loader reads it
 * (it gave lesson 7 8 steps when the screen said 9), and no lesson that is not there. */
static void test_docs_table(void **state)
{
    (void)state;
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    char path[4200], dir[4200];
    snprintf(path, sizeof(path), "%s/../docs/lessons.md", scenes);
    snprintf(dir, sizeof(dir), "%s/lessons", scenes);
    char *doc = tu_must_read_file(path, NULL);
    int n;
    char **names = tu_list_names(dir, ".yaml", &n);
    assert_non_null(names);
    int rows = 0;
    for (const char *line = doc; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        char name[256];
        int steps;
        if (sscanf(line, "| `%255[^`]` | %d |", name, &steps) != 2)
            continue;
        rows++;
        char file[4600];
        snprintf(file, sizeof(file), "%s/%s", dir, name);
        struct attn_scene s;
        if (attn_scenefile_load_report(&s, file, stderr) != 0 || !s.lesson)
            fail_msg("docs/lessons.md names %s, which is no lesson", name);
        if (s.lesson->n_steps != steps)
            fail_msg("docs/lessons.md gives %s %d steps; it has %d", name, steps,
                     s.lesson->n_steps);
        attn_scene_free(&s);
    }
    if (rows != n)
        fail_msg("docs/lessons.md's table has %d lessons; scenes/lessons/ has %d", rows, n);
    tu_free_names(names, n);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_lesson),
        cmocka_unit_test(test_every_lesson_on_screen),
        cmocka_unit_test(test_screen_check_finds_hidden_quotes),
        cmocka_unit_test(test_docs_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
