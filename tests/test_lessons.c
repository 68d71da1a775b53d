/* test_lessons: every lesson shipped in scenes/lessons/ played through the explorer without a
 * screen (explore/lesson.h), forwards to its end and back to its start, and at every step every
 * number its caption marks checked against the matrix the explorer shows there.
 *
 * A caption marks the numbers it quotes ({0.2379}, {0.2379 @ 1,1}, {1.4950 @ scores 1,1},
 * {-inf @ 0,1}: engine/lesson.h); a number with three or more decimals outside a mark is a quote
 * nobody checks, and fails. Each lesson has 5 to 12 steps, and no step's edit may be refused or
 * leave the scene invalid.
 *
 * With ATTNSCOPE_LESSON_PRINT=1 every step's matrix is printed (stderr), to write captions by.
 * Environment: ATTNSCOPE_SCENES_DIR (the repository's scenes/ folder).
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "explore/app.h"
#include "explore/lesson.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

static bool printing(void)
{
    const char *p = getenv("ATTNSCOPE_LESSON_PRINT");
    return p && *p && strcmp(p, "0") != 0;
}

static void print_step(const struct app *a, const char *name, int i)
{
    const struct attn_lesson_step *st = lesson_current(a);
    struct attn_mat_view v = app_view(a, a->stage, a->head);
    fprintf(stderr, "---- %s step %d: %s head %d layer %d (%d x %d)%s%s\n", name, i + 1,
            attn_stage_name(a->stage), a->head, a->layer, v.rows, v.cols,
            a->message[0] ? " message: " : "", a->message);
    for (int r = 0; r < v.rows; r++) {
        fprintf(stderr, "  %-10.10s", app_model(a)->tokens[r]);
        for (int c = 0; c < v.cols; c++)
            fprintf(stderr, " %9.4f", (double)v.data[(size_t)r * v.stride + c]);
        fputc('\n', stderr);
    }
    (void)st;
}

/* v, rounded to the decimals the mark writes, is the mark's number. */
static bool matches(float v, const struct attn_caption_mark *m)
{
    if (isinf(m->value))
        return isinf(v) && v < 0;
    if (!isfinite(v))
        return false;
    double half = 0.5 * pow(10.0, -m->decimals);
    return fabs((double)v - m->value) <= half * (1 + 1e-6) + 1e-7;
}

static float cell(struct attn_mat_view v, int r, int c)
{
    return v.data[(size_t)r * v.stride + c];
}

/* Every mark of the step's caption against what a shows; returns the problems (printed). */
static int check_marks(const struct app *a, const char *name, int i)
{
    const struct attn_lesson_step *st = lesson_current(a);
    struct attn_caption_mark marks[LESSON_MAX_MARKS];
    struct diag err;
    int n = attn_caption_marks(st->caption, marks, LESSON_MAX_MARKS, &err);
    int problems = 0;
    if (n < 0) {
        fprintf(stderr, "%s step %d: %s\n", name, i + 1, err.msg);
        return 1;
    }
    for (int k = 0; k < n; k++) {
        const struct attn_caption_mark *m = &marks[k];
        enum attn_stage stage = m->stage >= 0 ? (enum attn_stage)m->stage : a->stage;
        struct attn_mat_view v = app_view(a, stage, a->head);
        bool ok = false;
        const char *where = "the matrix";
        char at[64];
        if (m->row >= 0) {
            ok = m->row < v.rows && m->col < v.cols && matches(cell(v, m->row, m->col), m);
            snprintf(at, sizeof(at), "%s %d,%d (%g)", attn_stage_name(stage), m->row, m->col,
                     m->row < v.rows && m->col < v.cols ? (double)cell(v, m->row, m->col) : NAN);
            where = at;
        } else if (st->row >= 0 && st->col >= 0) {
            ok = matches(cell(v, st->row, st->col), m);
            snprintf(at, sizeof(at), "the step's cell %d,%d (%g)", st->row, st->col,
                     (double)cell(v, st->row, st->col));
            where = at;
        } else if (st->row >= 0) {
            for (int c = 0; c < v.cols && !ok; c++)
                ok = matches(cell(v, st->row, c), m);
            snprintf(at, sizeof(at), "the step's row %d", st->row);
            where = at;
        } else {
            for (int r = 0; r < v.rows && !ok; r++)
                for (int c = 0; c < v.cols && !ok; c++)
                    ok = matches(cell(v, r, c), m);
        }
        if (!ok) {
            fprintf(stderr, "%s step %d: the caption says %s, not what %s shows\n", name, i + 1,
                    m->written, where);
            problems++;
        }
    }
    /* A number with 3 or more decimals outside the marks is an unchecked quote. */
    for (const char *p = st->caption; *p; p++) {
        size_t off = (size_t)(p - st->caption);
        bool inside = false;
        for (int k = 0; k < n && k < LESSON_MAX_MARKS; k++)
            inside |= off >= marks[k].start && off < marks[k].end;
        if (inside || !isdigit((unsigned char)*p) ||
            (p > st->caption && isdigit((unsigned char)p[-1])))
            continue;
        const char *q = p;
        while (isdigit((unsigned char)*q))
            q++;
        int decimals = 0;
        if (*q == '.')
            while (isdigit((unsigned char)q[1 + decimals]))
                decimals++;
        if (decimals >= 3) {
            fprintf(stderr, "%s step %d: '%.*s' is quoted without a mark ({...})\n", name, i + 1,
                    (int)(q + 1 + decimals - p), p);
            problems++;
        }
    }
    return problems;
}

/* The step's view and a valid scene. */
static int check_step(const struct app *a, const char *name, int i)
{
    const struct attn_lesson_step *st = lesson_current(a);
    int problems = 0;
    if (a->lesson.step != i || !lesson_active(a)) {
        fprintf(stderr, "%s: at step %d, expected %d\n", name, a->lesson.step + 1, i + 1);
        return 1;
    }
    if (a->error[0] || a->message_is_error) {
        fprintf(stderr, "%s step %d: %s\n", name, i + 1, a->error[0] ? a->error : a->message);
        problems++;
    }
    if ((int)a->stage != st->stage || a->head != st->head || a->layer != st->layer ||
        a->all_heads != st->all_heads) {
        fprintf(stderr,
                "%s step %d: shows %s head %d layer %d, the step says %s head %d "
                "layer %d\n",
                name, i + 1, attn_stage_name(a->stage), a->head, a->layer,
                attn_stage_name((enum attn_stage)st->stage), st->head, st->layer);
        problems++;
    }
    if (st->row >= 0 && (a->row != st->row || (st->col >= 0 && a->col != st->col))) {
        fprintf(stderr, "%s step %d: the cursor is at %d,%d, the step says %d,%d\n", name, i + 1,
                a->row, a->col, st->row, st->col);
        problems++;
    }
    if (app_unsaved(a)) {
        fprintf(stderr, "%s step %d: the lesson's own state counts as unsaved\n", name, i + 1);
        problems++;
    }
    return problems + check_marks(a, name, i);
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
        if (scenefile_load_report(&s, path, stderr) != 0)
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
        assert_int_equal(a.n_undo, a.lesson.changed[0] ? 1 : 0); /* every edit undone again */
        app_free(&a);
    }
    tu_free_names(names, n);
    if (problems)
        fail_msg("%d problems in the lessons (above)", problems);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_lesson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
