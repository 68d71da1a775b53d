/* lesson: lesson mode (see lesson.h). Each step's edit goes through explore/app's edit
 * functions; each step's scene is kept the first time it is reached, to come back to. */
#include "explore/lesson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool lesson_active(const struct app *a)
{
    return a->lesson.lesson && a->lesson.on;
}

const struct attn_lesson_step *lesson_current(const struct app *a)
{
    return a->lesson.lesson ? &a->lesson.lesson->steps[a->lesson.step] : NULL;
}

/* The step's edit, as the user's key for it would make it; a value the scene already has is no
 * edit at all (no undo step). */
static int make_edit(struct app *a, const struct attn_lesson_edit *e)
{
    const struct attn_config *now = &a->scene.attn;
    switch (e->kind) {
    case LESSON_EDIT_CAUSAL:
        return now->causal == e->causal ? 0 : app_toggle_causal(a);
    case LESSON_EDIT_HEADS:
        return app_edit_knob(a, KNOB_HEADS, e->heads);
    case LESSON_EDIT_D_OUT:
        return app_edit_knob(a, KNOB_D_OUT, e->d_out);
    case LESSON_EDIT_DROPOUT:
        return app_edit_knob(a, KNOB_DROPOUT, e->dropout);
    case LESSON_EDIT_SEED:
        return app_edit_seed(a, e->seed);
    case LESSON_EDIT_TEXT:
        return a->scene.text && strcmp(a->scene.text, e->text) == 0 ? 0 : app_edit_text(a, e->text);
    case LESSON_EDIT_SCALE:
        return app_edit_scale(a, (enum attn_scale_kind)e->scale, e->scale_divisor);
    case LESSON_EDIT_MASK_MODE:
        return (int)now->mask_mode == e->mask_mode ? 0 : app_cycle_mask_mode(a);
    case LESSON_EDIT_NORMALIZE:
        return (int)now->normalize == e->normalize ? 0 : app_cycle_normalize(a);
    case LESSON_EDIT_LAYOUT:
        return (int)now->layout == e->layout ? 0 : app_cycle_layout(a);
    case LESSON_EDIT_OFFSET:
        return app_edit_offset(a, e->offset);
    case LESSON_EDIT_NONE:
    case LESSON_EDIT_COUNT:
        break;
    }
    return 0;
}

/* The view the step sets; whatever the user changed inside the step goes. */
static void show_view(struct app *a, const struct attn_lesson_step *st)
{
    a->playing = false;
    a->head_mean = false;
    a->all_heads = st->all_heads;
    if (st->layer < a->net.layers)
        a->layer = st->layer;
    a->stage = (enum attn_stage)st->stage;
    a->head = st->head;
    a->row = st->row >= 0 ? st->row : 0;
    a->col = a->col_want = st->col >= 0 ? st->col : 0;
    app_clamp(a);
}

/* Keeps the scene of the step just reached, the first time. */
static void keep_scene(struct app *a, int step)
{
    if (a->lesson.reached[step])
        return;
    if (attn_scene_copy(&a->lesson.at[step], &a->scene) == 0)
        a->lesson.reached[step] = 1;
}

/* True while the scene is as the lesson left it at the current step. */
static bool untouched(const struct app *a)
{
    return a->edits == a->lesson.edits;
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
    a->lesson.edits = a->edits;
    show_view(a, &a->lesson.lesson->steps[to]);
}

int lesson_open(struct app *a)
{
    struct attn_lesson *lesson = a->scene.lesson;
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
    unsigned long before = a->edits;
    make_edit(a, &lesson->steps[0].edit);
    a->lesson.changed[0] = a->edits != before;
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
    a->message[0] = '\0'; /* an edit on the way says what it changed */
    a->message_is_error = false;
    if (to == from) {
        restore(a, from);
    } else if (to == from + 1) {
        restore(a, from);
        unsigned long before = a->edits;
        make_edit(a, &lesson->steps[to].edit);
        a->lesson.changed[to] = a->edits != before;
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
        !app_scenes_alike(&a->scene, &a->lesson.at[step]))
        return true;
    bool per_head = attn_stage_is_per_head(a->stage) && app_model(a)->heads > 1;
    return a->stage != (enum attn_stage)st->stage ||
           (st->layer < a->net.layers && a->layer != st->layer) || a->all_heads != st->all_heads ||
           (per_head && !a->all_heads && a->head != st->head) || app_showing_mean(a) ||
           app_showing_delta(a);
}

int lesson_next(struct app *a)
{
    const struct attn_lesson *lesson = a->lesson.lesson;
    if (!lesson)
        return -1;
    if (a->lesson.step + 1 >= lesson->n_steps) {
        lesson_go(a, a->lesson.step); /* the last step as written again */
        snprintf(a->message, sizeof(a->message),
                 "the last step of the lesson: \u2190 goes back, the lesson key explores freely");
        a->message_is_error = false;
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
        snprintf(a->message, sizeof(a->message), "the first step of the lesson");
        a->message_is_error = false;
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
        snprintf(a->message, sizeof(a->message),
                 "left the lesson at step %d of %d: explore freely; the same key goes back to it",
                 a->lesson.step + 1, a->lesson.lesson->n_steps);
        a->message_is_error = false;
        return 0;
    }
    return lesson_go(a, a->lesson.step);
}
