/* lessonmode: lesson mode (see lessonmode.h). Each step's edit goes through explore/app's edit
 * functions; each step's scene is kept the first time it is reached, to come back to. */
#include "explore/lessonmode.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cnum.h"
#include "engine/generate.h"
#include "engine/logits.h"
#include "explore/keys.h"
#include "explore/appstate.h"

bool lesson_active(const struct app *a)
{
    return a->lesson.lesson && a->lesson.on;
}

const struct attn_lesson_step *lesson_current(const struct app *a)
{
    return a->lesson.lesson ? &a->lesson.lesson->steps[a->lesson.step] : NULL;
}

/* generate: N, the model's most likely tokens appended as g would append them one by one, here
 * as one edit (u takes them away together). */
static int generate_edit(struct app *a, const struct attn_edit *e)
{
    struct diag err;
    struct attn_scene next;
    int n0 = a->doc.scene.n_tokens;
    if (attn_scene_check_edit(&a->doc.scene, e, &err) != 0) {
        app_refuse(a, "generate: %s", err.msg);
        return -1;
    }
    if (attn_scene_copy(&next, &a->doc.scene) != 0) {
        app_refuse(a, "generate: out of memory");
        return -1;
    }
    if (attn_scene_generate(&next, e->generate, &err) != 0) {
        app_refuse(a, "generate: %s", err.msg);
        attn_scene_free(&next);
        return -1;
    }
    int rc = app_edit_scene(a, &next);
    if (rc == 0) { /* what it wrote, as g says it */
        char made[200] = "", label[4 * SCENE_MAX_TOKEN_BYTES];
        size_t o = 0;
        for (int i = n0; i < next.n_tokens && o < sizeof(made); i++) {
            attn_scene_token_label(label, sizeof(label), &next, next.token_ids[i]);
            o += (size_t)snprintf(made + o, sizeof(made) - o, "%s", label);
        }
        int k = next.n_tokens - n0;
        snprintf(a->status.message, sizeof(a->status.message),
                 "generate: '%.160s', %d token%s, each the model's most likely; u takes %s away",
                 made, k, k == 1 ? "" : "s", k == 1 ? "it" : "them");
        a->status.message_is_error = false;
    }
    attn_scene_free(&next);
    return rc;
}

/* The step's edit, as the user's key for it would make it (the app's edits, by engine/edit.h's
 * rules); a value the scene already has is no edit at all (no undo step). */
static int make_edit(struct app *a, const struct attn_edit *e)
{
    const struct attn_config *now = &a->doc.scene.attn;
    switch (e->kind) {
    case EDIT_CAUSAL:
        return now->causal == e->causal ? 0 : app_toggle_causal(a);
    case EDIT_HEADS:
        return app_edit_knob(a, KNOB_HEADS, e->heads);
    case EDIT_D_OUT:
        return app_edit_knob(a, KNOB_D_OUT, e->d_out);
    case EDIT_DROPOUT:
        return app_edit_knob(a, KNOB_DROPOUT, e->dropout);
    case EDIT_SEED:
        return app_edit_seed(a, e->seed);
    case EDIT_TEXT:
        return a->doc.scene.text && strcmp(a->doc.scene.text, e->text) == 0
                   ? 0
                   : app_edit_text(a, e->text);
    case EDIT_SCALE:
        return app_edit_scale(a, (enum attn_scale_kind)e->scale, e->scale_divisor);
    case EDIT_MASK_MODE:
        return (int)now->mask_mode == e->mask_mode ? 0 : app_cycle_mask_mode(a);
    case EDIT_NORMALIZE:
        return (int)now->normalize == e->normalize ? 0 : app_cycle_normalize(a);
    case EDIT_LAYOUT:
        return (int)now->layout == e->layout ? 0 : app_cycle_layout(a);
    case EDIT_OFFSET:
        return app_edit_offset(a, e->offset);
    case EDIT_ABLATE:
        return app_set_ablation(a, e->layer, e->head, (enum attn_head_mode)e->head_mode);
    case EDIT_GENERATE:
        return generate_edit(a, e);
    default: /* EDIT_NONE; a lesson step makes no other kind */
        break;
    }
    return 0;
}

/* The view the step sets; whatever the user changed inside the step goes. */
static void show_view(struct app *a, const struct attn_lesson_step *st)
{
    a->view.playing = false;
    a->view.head_mean = false;
    a->view.lens = a->view.rollout = false;
    a->view.all_heads = st->all_heads;
    /* what shows beside the map, as the step says (its default: the inspector) */
    a->view.predictions = st->panel == LESSON_PANEL_PREDICTIONS && app_has_vocab(a);
    a->view.token_view = st->panel == LESSON_PANEL_TOKENS;
    if (st->layer < a->result.net.layers)
        a->view.layer = st->layer;
    a->view.stage = (enum attn_stage)st->stage;
    a->view.head = st->head;
    a->view.row = st->row >= 0 ? st->row : 0;
    a->view.col = a->view.col_want = st->col >= 0 ? st->col : 0;
    app_clamp(a);
}

/* Keeps the scene of the step just reached, the first time. */
static void keep_scene(struct app *a, int step)
{
    if (a->lesson.reached[step])
        return;
    if (attn_scene_copy(&a->lesson.at[step], &a->doc.scene) == 0)
        a->lesson.reached[step] = 1;
}

/* True while the scene is as the lesson left it at the current step. */
static bool untouched(const struct app *a)
{
    return a->doc.edits == a->lesson.edits;
}

/* Back to step's own scene when the user has edited since (one edit, undoable). */
static void restore(struct app *a, int step)
{
    if (!untouched(a) && a->lesson.reached[step])
        app_edit_scene(a, &a->lesson.at[step]);
}

/* Shows step `to`, its scene and its view; the message line keeps what its edit changed. */
static void arrive(struct app *a, int to)
{
    a->lesson.step = to;
    a->lesson.edits = a->doc.edits;
    show_view(a, &a->lesson.lesson->steps[to]);
}

int lesson_open(struct app *a)
{
    struct attn_lesson *lesson = a->doc.scene.lesson;
    if (!lesson || a->lesson.lesson)
        return 0;
    size_t n = (size_t)lesson->n_steps;
    a->lesson.at = calloc(n, sizeof(*a->lesson.at));
    a->lesson.reached = calloc(n, 1);
    a->lesson.changed = calloc(n, 1);
    if (!a->lesson.at || !a->lesson.reached || !a->lesson.changed) {
        free(a->lesson.at);
        free(a->lesson.reached);
        free(a->lesson.changed);
        memset(&a->lesson, 0, sizeof(a->lesson));
        app_refuse(a, "out of memory for the lesson");
        return -1;
    }
    a->lesson.lesson = attn_lesson_ref(lesson);
    a->lesson.on = true;
    unsigned long before = a->doc.edits;
    make_edit(a, &lesson->steps[0].edit);
    a->lesson.changed[0] = a->doc.edits != before;
    keep_scene(a, 0);
    /* The scene as opened is the one a save would compare with: the first step's edit is the
       lesson's, not the user's. */
    arrive(a, 0);
    return 0;
}

int lesson_go(struct app *a, int to)
{
    const struct attn_lesson *lesson = a->lesson.lesson;
    if (!lesson || to < 0 || to >= lesson->n_steps)
        return -1;
    int from = a->lesson.step;
    a->lesson.on = true;
    a->status.message[0] = '\0'; /* an edit on the way says what it changed */
    a->status.message_is_error = false;
    if (to == from) {
        restore(a, from);
    } else if (to == from + 1) {
        restore(a, from);
        unsigned long before = a->doc.edits;
        make_edit(a, &lesson->steps[to].edit);
        a->lesson.changed[to] = a->doc.edits != before;
        keep_scene(a, to);
    } else if (to == from - 1) {
        if (untouched(a) && a->lesson.changed[from])
            app_undo(a); /* exactly the step's edit: redo brings it back */
        else
            restore(a, to);
    } else {
        /* further: one step at a time, so every edit on the way is made or undone */
        int dir = to > from ? 1 : -1;
        for (int s = from + dir; s != to + dir; s += dir)
            if (lesson_go(a, s) != 0)
                return -1;
        return 0;
    }
    arrive(a, to);
    return 0;
}

bool lesson_step_changed(const struct app *a)
{
    const struct attn_lesson_step *st = lesson_current(a);
    if (!st)
        return false;
    int step = a->lesson.step;
    if (!untouched(a) && a->lesson.reached[step] &&
        !app_scenes_alike(&a->doc.scene, &a->lesson.at[step]))
        return true;
    bool per_head = attn_stage_is_per_head(a->view.stage) && app_model(a)->heads > 1;
    return a->view.stage != (enum attn_stage)st->stage ||
           (st->layer < a->result.net.layers && a->view.layer != st->layer) ||
           a->view.all_heads != st->all_heads ||
           (per_head && !a->view.all_heads && a->view.head != st->head) || app_showing_mean(a) ||
           app_showing_delta(a);
}

int lesson_next(struct app *a)
{
    const struct attn_lesson *lesson = a->lesson.lesson;
    if (!lesson)
        return -1;
    if (a->lesson.step + 1 >= lesson->n_steps) {
        lesson_go(a, a->lesson.step); /* the last step as written again */
        char back[32], out[32];
        keymap_key_display(back, sizeof(back), a->keymap, ACTION_LESSON_PREV);
        keymap_key_display(out, sizeof(out), a->keymap, ACTION_LESSON);
        snprintf(a->status.message, sizeof(a->status.message),
                 "the last step of the lesson: %s goes back, %s explores freely", back, out);
        a->status.message_is_error = false;
        return -1;
    }
    return lesson_go(a, a->lesson.step + 1);
}

int lesson_prev(struct app *a)
{
    if (!a->lesson.lesson)
        return -1;
    if (a->lesson.step == 0) {
        lesson_go(a, 0);
        snprintf(a->status.message, sizeof(a->status.message), "the first step of the lesson");
        a->status.message_is_error = false;
        return -1;
    }
    return lesson_go(a, a->lesson.step - 1);
}

int lesson_toggle(struct app *a)
{
    if (!a->lesson.lesson) {
        app_refuse(a, "this scene has no lesson (scenes/lessons/ has some)");
        return -1;
    }
    if (a->lesson.on) {
        a->lesson.on = false;
        char key[32];
        keymap_key_display(key, sizeof(key), a->keymap, ACTION_LESSON);
        snprintf(a->status.message, sizeof(a->status.message),
                 "left the lesson at step %d of %d: explore freely; %s goes back to it",
                 a->lesson.step + 1, a->lesson.lesson->n_steps, key);
        a->status.message_is_error = false;
        return 0;
    }
    return lesson_go(a, a->lesson.step);
}

/* ---- checking a lesson ----------------------------------------------------------------------- */

/* v, rounded to the decimals the mark writes, is the mark's number. */
static bool mark_matches(float v, const struct attn_caption_mark *m)
{
    if (isinf(m->value))
        return isinf(v) && v < 0;
    if (!isfinite(v))
        return false;
    double half = 0.5 * pow(10.0, -m->decimals);
    return fabs((double)v - m->value) <= half * (1 + 1e-6) + 1e-7;
}

static float cell_of(struct attn_mat_view v, int r, int c)
{
    return v.data[(size_t)r * v.stride + c];
}

/* A value as the mark would write it: its decimals, -inf, nan. */
static void as_written(char *out, size_t size, float v, int decimals)
{
    if (isinf(v) || isnan(v))
        snprintf(out, size, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    else
        attn_cnum_format(out, size, "%.*f", decimals, (double)v);
}

/* A problem of the step shown, at byte `at` of its caption (SIZE_MAX: at the step). */
static void step_problem(const struct app *a, const char *source, size_t len,
                         struct diag_list *problems, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void step_problem(const struct app *a, const char *source, size_t len,
                         struct diag_list *problems, size_t at, const char *fmt, ...)
{
    const struct attn_lesson_step *st = lesson_current(a);
    int line = st->line, col = 1;
    if (at != (size_t)-1)
        attn_caption_locate(&line, &col, source, len, st, at);
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char path[64];
    snprintf(path, sizeof(path), "lesson[%d]", a->lesson.step);
    attn_diag_list_add(problems, a->doc.scene_path ? a->doc.scene_path : "", line, col, path,
                       "step %d: %s", a->lesson.step + 1, msg);
}

/* {p @ next P}: the probability the model, as the step leaves it (its ablations included),
 * gives position P's actual next token at temperature 1, as the predictions panel shows it;
 * {p @ top P}: the probability of P's most likely token, the panel's first line. The step must
 * show them: the panel open on row P. */
static int check_next_mark(const struct app *a, const char *source, size_t len,
                           const struct lesson_screen *screen, struct diag_list *problems,
                           const struct attn_caption_mark *m)
{
    const struct attn_lesson_step *st = lesson_current(a);
    const char *which = m->top ? "top" : "next";
    const struct attn_net *net = &a->result.net;
    int n = net->layers > 0 ? net->model[net->layers - 1].n : 0;
    if (!attn_net_has_vocab(net)) {
        step_problem(a, source, len, problems, m->start,
                     "the caption marks %s @ %s %d, but this scene has no vocabulary model "
                     "to predict with",
                     m->written, which, m->next);
        return 1;
    }
    if (m->next >= (m->top ? n : n - 1)) {
        step_problem(a, source, len, problems, m->start,
                     "the caption marks %s @ %s %d, but only positions 0 to %d have %s", m->written,
                     which, m->next, m->top ? n - 1 : n - 2,
                     m->top ? "predictions" : "a next token");
        return 1;
    }
    struct attn_predictions p = {0};
    struct diag err = {0};
    if (attn_predict(&p, net, net->layers - 1, m->next, 1, m->top ? 1 : 0, 1.0, NULL, &err) != 0) {
        step_problem(a, source, len, problems, m->start, "%s", err.msg);
        return 1;
    }
    float prob = m->top ? attn_predictions_top(&p, 0)[0].prob : (float)p.next_prob[0];
    attn_predictions_free(&p);
    char got[48];
    if (!mark_matches(prob, m)) {
        as_written(got, sizeof(got), prob, m->decimals);
        step_problem(a, source, len, problems, m->start,
                     "the caption says %s, but the model gives position %d's %s token p %s",
                     m->written, m->next, m->top ? "most likely" : "next", got);
        return 1;
    }
    /* On screen: the step opens the predictions on the position's row (a number the learner
       has to press p for, or move to, is not one the step shows). */
    if (st->panel != LESSON_PANEL_PREDICTIONS || st->row != m->next) {
        step_problem(a, source, len, problems, m->start,
                     "the caption quotes %s, position %d's prediction, but the step does not show "
                     "it: give the step panel: predictions and its row (or cell) on row %d",
                     m->written, m->next, m->next);
        return 1;
    }
    if (screen && !screen->shows_prediction(screen->ctx, m->written)) {
        step_problem(a, source, len, problems, m->start,
                     "the caption quotes %s (position %d's %s token), which the predictions panel "
                     "does not show at %s",
                     m->written, m->next, m->top ? "most likely" : "next", screen->size);
        return 1;
    }
    return 0;
}

/* A cell the caption quotes must be on the screen: in the map's window, with its number. */
static int check_cell_shown(const struct app *a, const char *source, size_t len,
                            const struct lesson_screen *screen, struct diag_list *problems,
                            const struct attn_caption_mark *m, int r, int c)
{
    if (!screen || screen->shows_cell(screen->ctx, r, c))
        return 0;
    step_problem(a, source, len, problems, m->start,
                 "the caption quotes %s, row %d, column %d, which the map does not show at %s "
                 "(out of its window, or zoomed out): quote a cell in view",
                 m->written, r, c, screen->size);
    return 1;
}

/* Mark m of the caption against the matrix the step shows (and, with a screen, on it: a mark of
 * another stage quotes a number from elsewhere, an earlier step's, and need not be). */
static int check_mark(const struct app *a, const char *source, size_t len,
                      const struct lesson_screen *screen, struct diag_list *problems,
                      const struct attn_caption_mark *m)
{
    const struct attn_lesson_step *st = lesson_current(a);
    char got[48];
    if (m->next >= 0)
        return check_next_mark(a, source, len, screen, problems, m);
    enum attn_stage stage = m->stage >= 0 ? (enum attn_stage)m->stage : a->view.stage;
    const char *name = attn_stage_name(stage);
    /* The tiles of every head show numbers only when they fit, and which head is whose is the
       learner's to find: a quoted cell belongs on one head's map. */
    if (st->all_heads && stage == a->view.stage) {
        step_problem(a, source, len, problems, m->start,
                     "the caption quotes %s from the view of every head; quote a cell on a step "
                     "that shows one head (head: H), where its number is on screen",
                     m->written);
        return 1;
    }
    bool here = stage == a->view.stage ? screen != NULL : false;
    struct attn_mat_view v = app_view(a, stage, a->view.head);
    if (m->row >= 0 || (st->row >= 0 && st->col >= 0)) {
        int r = m->row >= 0 ? m->row : st->row, c = m->row >= 0 ? m->col : st->col;
        if (r >= v.rows || c >= v.cols) {
            step_problem(a, source, len, problems, m->start,
                         "the caption marks %s at row %d, column %d, but the %s matrix is "
                         "%d\u00d7%d",
                         m->written, r, c, name, v.rows, v.cols);
            return 1;
        }
        float x = cell_of(v, r, c);
        if (mark_matches(x, m))
            return here ? check_cell_shown(a, source, len, screen, problems, m, r, c) : 0;
        as_written(got, sizeof(got), x, m->decimals);
        step_problem(a, source, len, problems, m->start,
                     "the caption says %s, but row %d, column %d of the %s matrix is %s%s",
                     m->written, r, c, name, got, m->row >= 0 ? "" : " (the step's cell)");
        return 1;
    }
    int r0 = st->row >= 0 ? st->row : 0, r1 = st->row >= 0 ? st->row + 1 : v.rows;
    int hr = -1, hc = -1; /* a matching cell, the first; one on screen wins */
    for (int r = r0; r < r1 && r < v.rows; r++)
        for (int c = 0; c < v.cols; c++)
            if (mark_matches(cell_of(v, r, c), m)) {
                if (!here || screen->shows_cell(screen->ctx, r, c))
                    return 0;
                if (hr < 0)
                    hr = r, hc = c;
            }
    if (hr >= 0)
        return check_cell_shown(a, source, len, screen, problems, m, hr, hc);
    char where[64] = "";
    if (st->row >= 0)
        snprintf(where, sizeof(where), "row %d of ", st->row);
    step_problem(a, source, len, problems, m->start,
                 "the caption says %s, but no cell of %sthe %s matrix is %s (to %d decimal%s)",
                 m->written, where, name, m->written, m->decimals, m->decimals == 1 ? "" : "s");
    return 1;
}

int lesson_check_step(const struct app *a, const char *source, size_t len,
                      const struct lesson_screen *screen, struct diag_list *problems)
{
    const struct attn_lesson_step *st = lesson_current(a);
    if (!st)
        return 0;
    int found = 0;
    const size_t at_step = (size_t)-1;
    if (a->doc.error[0] || a->status.message_is_error) {
        step_problem(a, source, len, problems, at_step, "%s",
                     a->doc.error[0] ? a->doc.error : a->status.message);
        found++;
    }
    if (a->result.nonfinite[0]) { /* the forward pass of this step */
        step_problem(a, source, len, problems, at_step, "the forward pass makes a value that is %s",
                     a->result.nonfinite);
        found++;
    }
    if ((int)a->view.stage != st->stage || a->view.head != st->head || a->view.layer != st->layer ||
        a->view.all_heads != st->all_heads) {
        step_problem(a, source, len, problems, at_step,
                     "the explorer shows %s, head %d, layer %d; the step says %s, head %d, "
                     "layer %d",
                     attn_stage_name(a->view.stage), a->view.head, a->view.layer,
                     attn_stage_name((enum attn_stage)st->stage), st->head, st->layer);
        found++;
    }
    if (st->row >= 0 && (a->view.row != st->row || (st->col >= 0 && a->view.col != st->col))) {
        step_problem(a, source, len, problems, at_step,
                     "the cursor is at row %d, column %d; the step says %d, %d", a->view.row,
                     a->view.col, st->row, st->col);
        found++;
    }
    if (!st->caption)
        return found;
    struct attn_caption_mark marks[LESSON_MAX_MARKS];
    struct diag err;
    int n = attn_caption_marks(st->caption, marks, LESSON_MAX_MARKS, &err);
    if (n < 0) { /* the loader refuses such a caption; a lesson made in code may have one */
        step_problem(a, source, len, problems, 0, "%s", err.msg);
        return found + 1;
    }
    for (int k = 0; k < n && k < LESSON_MAX_MARKS; k++)
        found += check_mark(a, source, len, screen, problems, &marks[k]);
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
            step_problem(a, source, len, problems, off,
                         "the caption quotes %.*s without a mark: write {%.*s} so it is checked "
                         "against the screen",
                         (int)(q + 1 + decimals - p), p, (int)(q + 1 + decimals - p), p);
            found++;
        }
        p = decimals ? q + decimals : q - 1; /* on to the number's last digit */
    }
    return found;
}

int lesson_check_all(struct app *a, const char *source, size_t len, struct diag_list *problems)
{
    if (!a->lesson.lesson)
        return 0;
    int found = 0;
    lesson_go(a, 0);
    found += lesson_check_step(a, source, len, NULL, problems);
    for (int i = 1; i < a->lesson.lesson->n_steps; i++) {
        if (lesson_go(a, i) != 0) {
            step_problem(a, source, len, problems, (size_t)-1, "the lesson stops here: %s",
                         a->doc.error[0] ? a->doc.error : a->status.message);
            return found + 1;
        }
        found += lesson_check_step(a, source, len, NULL, problems);
    }
    return found;
}
