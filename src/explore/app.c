/* app: scene editing, undo and recompute for the explorer (see app.h). No curses here. */
#include "explore/app.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/lesson.h"
#include "engine/rng.h"
#include "engine/tokenize.h"
#include "export/export.h"
#include "scenefile/scenefile.h"

static const char *const knob_names[KNOB_COUNT] = {"seed", "d_out", "heads", "dropout", "dim"};

const char *knob_name(enum knob k)
{
    return k >= 0 && k < KNOB_COUNT ? knob_names[k] : "?";
}

/* Recomputes the result for s; on failure (-1) the last result stays. 1: the result is s's,
 * but its checkpoint shrank while it was read (err says so): its numbers are not the file's. */
static int recompute(struct app *a, const struct attn_scene *s, struct diag *err)
{
    /* A checkpoint rewritten or truncated on disk is never read: the view and the edits stay,
       the error says which file changed. */
    if (attn_scene_check_backing(s, err))
        return -1;
    /* A long compute may be stopped (q): it then goes into fresh buffers, so the result on
       screen stays whole, when two results fit in the memory limit. */
    const char *why;
    a->compute_seconds = attn_net_estimate_seconds(s);
    bool long_one = a->compute_seconds > ATTN_LONG_SECONDS;
    a->net.keep_previous = long_one && a->have_result &&
                           attn_scene_mem_estimate(s) <= attn_scene_memory_limit(&why) / 2;
    a->stoppable = long_one && (!a->have_result || a->net.keep_previous);
    int rc = attn_net_compute(&a->net, s, err);
    a->net.keep_previous = false;
    if (rc)
        return -1;
    int changed = attn_scene_check_backing(s, err) ? 1 : 0;
    if (a->layer >= a->net.layers) /* fewer layers now: the last one */
        a->layer = a->net.layers - 1;
    /* Scored on first use, once per result: drawing and cursor moves never rescan. */
    size_t count = (size_t)a->net.layers * (size_t)a->net.model[0].heads;
    struct head_scores *sc = realloc(a->scores, count * sizeof(*sc));
    if (sc)
        a->scores = sc;
    unsigned char *done = sc ? realloc(a->scored, count) : NULL;
    if (!sc || !done) { /* no scores at all rather than stale ones (app_scores: undefined) */
        free(a->scores);
        free(a->scored);
        a->scores = NULL;
        a->scored = NULL;
        return diag_set(err, "", "out of memory for the head scores");
    }
    a->scored = done;
    memset(a->scored, 0, count);
    a->have_result = true;
    a->generation++;
    return changed;
}

int app_init(struct app *a, struct attn_scene *s, const char *path,
             const struct progress_sink *progress, struct diag *err)
{
    memset(a, 0, sizeof(*a));
    if (progress) /* every compute, the first included, tells the front end how far it got */
        a->net.progress = *progress;
    a->scene = *s;
    memset(s, 0, sizeof(*s));
    a->scene_path = path ? strdup(path) : NULL;
    int rc = attn_scene_copy(&a->shown, &a->scene) ? diag_set(err, "", "out of memory")
                                                   : recompute(a, &a->shown, err);
    if (rc != 0) {
        app_free(a); /* the scene was taken over: nothing is left for the caller to free */
        return -1;
    }
    a->stage = STAGE_WEIGHTS;
    a->score_shown = -1;
    a->play_ms = 900;
    /* A long sequence opens on its overview, each query's row on its own scale: one scale for
     * the whole matrix is set by row 0's 1.0 and leaves rows 80-100 one colour. */
    if (a->scene.n_tokens > APP_LONG_TOKENS) {
        a->zoom = ZOOM_OVERVIEW;
        a->color_scale = SCALE_BY_ROW;
    }
    if (a->scene.view.layer >= 0) { /* where the scene asks to open (an induction head, ...) */
        a->layer = a->scene.view.layer < a->net.layers ? a->scene.view.layer : 0;
        a->head = a->scene.view.head;
        a->stage = (enum attn_stage)a->scene.view.stage;
        if (!attn_stage_present(app_model(a), a->stage))
            a->stage = STAGE_WEIGHTS;
        app_clamp(a);
    }
    return 0;
}

void app_free(struct app *a)
{
    attn_scene_free(&a->scene);
    attn_scene_free(&a->shown);
    for (int i = 0; i < a->n_undo; i++)
        attn_scene_free(&a->undo[i]);
    for (int i = 0; i < a->n_redo; i++)
        attn_scene_free(&a->redo[i]);
    free(a->scene_path);
    attn_net_free(&a->net);
    free(a->scores);
    free(a->scored);
    free(a->mean);
    attn_scene_free(&a->base_scene);
    attn_net_free(&a->base_net);
    free(a->delta);
    for (int i = 0; a->lesson.lesson && i < a->lesson.lesson->n_steps; i++)
        if (a->lesson.reached[i])
            attn_scene_free(&a->lesson.at[i]);
    free(a->lesson.at);
    free(a->lesson.reached);
    free(a->lesson.changed);
    attn_lesson_unref(a->lesson.lesson);
    memset(a, 0, sizeof(*a));
}

const struct head_scores *app_scores(const struct app *a, int layer, int head)
{
    static const struct head_scores none; /* every score undefined */
    if (!a->scored)
        return &none;
    size_t i = (size_t)layer * (size_t)a->net.model[0].heads + (size_t)head;
    if (!a->scored[i]) { /* a cache: the pointers are const, what they point at is not */
        attn_head_scores(&a->scores[i], app_view_at(a, layer, STAGE_WEIGHTS, head),
                         a->net.model[0].ids);
        a->scored[i] = 1;
    }
    return &a->scores[i];
}

struct attn_mat_view app_view(const struct app *a, enum attn_stage s, int head)
{
    return attn_view(app_run(a), app_model(a), s, head);
}

struct attn_mat_view app_view_at(const struct app *a, int layer, enum attn_stage s, int head)
{
    return attn_view(&a->net.run[layer], &a->net.model[layer], s, head);
}

void app_set_layer(struct app *a, int layer)
{
    if (layer < 0 || layer >= a->net.layers)
        return;
    a->layer = layer;
    /* Only the last layer has the final norm: elsewhere the nearest stage is the block's
     * output. */
    if (!attn_stage_present(app_model(a), a->stage))
        a->stage = attn_stage_block_output(app_model(a));
    app_clamp(a);
}

/* *buf holds at least count floats (*cap of them), grown when needed. False: out of memory,
 * *buf as it was. */
static bool reserve(float **buf, size_t *cap, size_t count)
{
    if (count <= *cap)
        return true;
    float *grown = realloc(*buf, count * sizeof(float));
    if (!grown)
        return false;
    *buf = grown;
    *cap = count;
    return true;
}

/* Δ = current − baseline of the matrix on screen, into a->delta (kept per result and view). */
static struct attn_mat_view shown_delta(struct app *a, struct attn_mat_view v)
{
    size_t cells = (size_t)v.rows * (size_t)v.cols;
    int head = attn_stage_is_per_head(a->stage) ? a->head : 0;
    if (a->delta && a->delta_generation == a->generation && a->delta_layer == a->layer &&
        a->delta_stage == (int)a->stage && a->delta_head == head)
        return (struct attn_mat_view){a->delta, v.rows, v.cols, v.cols};
    if (!reserve(&a->delta, &a->delta_cap, cells))
        return v; /* out of memory: the values themselves */
    struct attn_mat_view b = app_base_view(a);
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < v.cols; j++)
            a->delta[(size_t)i * v.cols + j] =
                attn_cell_delta(v.data[(size_t)i * v.stride + j], b.data[(size_t)i * b.stride + j]);
    a->delta_generation = a->generation;
    a->delta_layer = a->layer;
    a->delta_stage = (int)a->stage;
    a->delta_head = head;
    return (struct attn_mat_view){a->delta, v.rows, v.cols, v.cols};
}

struct attn_mat_view app_base_view(const struct app *a)
{
    if (!a->pinned || a->layer >= a->base_net.layers)
        return (struct attn_mat_view){0};
    const struct attn_model *m = &a->base_net.model[a->layer];
    if (!attn_stage_present(m, a->stage) || a->head >= m->heads)
        return (struct attn_mat_view){0};
    return attn_view(&a->base_net.run[a->layer], m, a->stage, a->head);
}

bool app_delta_ok(const struct app *a)
{
    if (!a->pinned)
        return false;
    struct attn_mat_view b = app_base_view(a), v = app_view(a, a->stage, a->head);
    return b.data && b.rows == v.rows && b.cols == v.cols;
}

void app_delta_problem(char *out, size_t size, const struct app *a)
{
    out[0] = '\0';
    if (!a->pinned || app_delta_ok(a))
        return;
    struct attn_mat_view b = app_base_view(a), v = app_view(a, a->stage, a->head);
    if (!b.data)
        snprintf(out, size, "the baseline has no %s here (layer %d, head %d): no \u0394 (B unpins)",
                 attn_stage_name(a->stage), a->layer, a->head);
    else
        snprintf(out, size,
                 "baseline %d\u00d7%d, now %d\u00d7%d: shapes differ, no \u0394 (B unpins)", b.rows,
                 b.cols, v.rows, v.cols);
}

static void describe_change(char *out, size_t size, const struct attn_scene *from,
                            const struct attn_scene *to);

void app_baseline_change(char *out, size_t size, const struct app *a)
{
    out[0] = '\0';
    if (a->pinned)
        describe_change(out, size, &a->base_scene, &a->shown);
}

int app_toggle_baseline(struct app *a)
{
    a->generation++; /* every view's Δ or values again */
    a->message_is_error = false;
    if (a->pinned) {
        a->pinned = false;
        attn_scene_free(&a->base_scene);
        attn_net_free(&a->base_net);
        free(a->delta);
        a->delta = NULL;
        a->delta_cap = 0;
        snprintf(a->message, sizeof(a->message), "baseline unpinned: the values again");
        return 0;
    }
    const char *why;
    size_t limit = attn_scene_memory_limit(&why), need = attn_scene_mem_estimate(&a->shown);
    if (need > limit / 2) {
        app_refuse(a,
                   "a baseline needs a second result, about %zu MiB, over the %zu MiB limit (%s)",
                   (2 * need + ((size_t)1 << 20) - 1) >> 20, limit >> 20, why);
        return -1;
    }
    struct diag err;
    diag_clear(&err);
    if (attn_scene_copy(&a->base_scene, &a->shown) ||
        attn_scene_check_backing(&a->base_scene, &err) ||
        attn_net_compute(&a->base_net, &a->base_scene, &err) ||
        attn_scene_check_backing(&a->base_scene, &err)) {
        attn_scene_free(&a->base_scene);
        attn_net_free(&a->base_net);
        app_refuse(a, "cannot pin a baseline: %.300s", err.msg[0] ? err.msg : "out of memory");
        return -1;
    }
    a->pinned = true;
    snprintf(a->message, sizeof(a->message),
             "baseline pinned: edits now show \u0394 = current \u2212 baseline (B unpins)");
    return 1;
}

struct attn_mat_view app_shown_view(struct app *a)
{
    struct attn_mat_view v = app_view(a, a->stage, a->head);
    if (app_showing_delta(a))
        return shown_delta(a, v);
    if (!app_showing_mean(a))
        return v;
    size_t cells = (size_t)v.rows * (size_t)v.cols;
    if (a->mean && a->mean_generation == a->generation && a->mean_layer == a->layer &&
        a->mean_stage == (int)a->stage)
        return (struct attn_mat_view){a->mean, v.rows, v.cols, v.cols};
    if (!reserve(&a->mean, &a->mean_cap, cells))
        return v; /* out of memory: the head itself */
    attn_head_mean(a->mean, app_run(a), app_model(a), a->stage);
    a->mean_generation = a->generation;
    a->mean_layer = a->layer;
    a->mean_stage = (int)a->stage;
    return (struct attn_mat_view){a->mean, v.rows, v.cols, v.cols};
}

int app_rows(const struct app *a)
{
    return app_view(a, a->stage, a->head).rows;
}

int app_cols(const struct app *a)
{
    return app_view(a, a->stage, a->head).cols;
}

void app_clamp(struct app *a)
{
    /* An edit may take a stage away (no more rope, no block): the weights are always there. */
    if (!attn_stage_present(app_model(a), a->stage))
        a->stage = STAGE_WEIGHTS;
    if (a->head >= app_model(a)->heads)
        a->head = app_model(a)->heads - 1;
    if (a->head < 0)
        a->head = 0;
    int rows = app_rows(a), cols = app_cols(a);
    if (a->row >= rows)
        a->row = rows - 1;
    /* The column the user asked for comes back when a wider stage has it again. */
    a->col = a->col_want < cols ? a->col_want : cols - 1;
    if (a->row < 0)
        a->row = 0;
    if (a->col < 0)
        a->col = 0;
}

/* Takes the last edit back without a compute: the scene before it was the one on screen
 * (a stopped compute left that result whole); redo forgets it. */
static void revert_edit(struct app *a)
{
    if (a->n_undo == 0)
        return;
    attn_scene_free(&a->scene);
    a->scene = a->undo[--a->n_undo];
    memset(&a->undo[a->n_undo], 0, sizeof(a->undo[a->n_undo]));
    if (a->saved_depth > a->n_undo)
        a->saved_depth = -1;
    a->error[0] = '\0';
}

/* Checks the edited scene and recomputes when it is valid. */
static int settle(struct app *a)
{
    struct diag_list problems;
    diag_list_init(&problems);
    a->error[0] = '\0';
    if (attn_scene_check(&a->scene, &problems) > 0) {
        if (problems.n > 1)
            snprintf(a->error, sizeof(a->error), "%.400s (+%d more)", problems.items[0].msg,
                     problems.n - 1);
        else
            snprintf(a->error, sizeof(a->error), "%s", problems.items[0].msg);
        diag_list_free(&problems);
        return -1;
    }
    diag_list_free(&problems);
    struct attn_scene copy;
    struct diag err;
    diag_clear(&err);
    int rc = attn_scene_copy(&copy, &a->scene) ? -1 : recompute(a, &copy, &err);
    if (rc < 0 && progress_stopped(&a->net.progress) && a->stoppable) {
        /* q during a long compute: the edit is taken back, the result on screen is its own. */
        attn_scene_free(&copy);
        revert_edit(a);
        app_refuse(a, "stopped: that edit would take about %.0f s here; undone",
                   a->compute_seconds);
        return -1;
    }
    if (rc < 0) {
        snprintf(a->error, sizeof(a->error), "%s", err.msg[0] ? err.msg : "out of memory");
        attn_scene_free(&copy);
        return -1;
    }
    attn_scene_free(&a->shown);
    a->shown = copy; /* the result is copy's, even one read from a file that shrank */
    app_clamp(a);
    if (rc > 0) {
        snprintf(a->error, sizeof(a->error),
                 "%.300s; the numbers on screen were read as it changed", err.msg);
        return -1;
    }
    return 0;
}

/* While a baseline is pinned, an edit that leaves the shapes apart says there is no Δ. */
static void baseline_note(struct app *a)
{
    char why[200];
    app_delta_problem(why, sizeof(why), a);
    size_t o = strlen(a->message);
    if (why[0] && o < sizeof(a->message))
        snprintf(a->message + o, sizeof(a->message) - o, "%s%s", o ? "; " : "", why);
}

/* An edit's settle; then the message line says what changed (before a note of the edit's own,
 * such as dropped weights). */
static int settle_edit(struct app *a)
{
    int rc = settle(a);
    if (rc == 0 && a->n_undo > 0 && !a->message_is_error) { /* an invalid edit shows its error */
        char change[240], kept[240];
        describe_change(change, sizeof(change), &a->undo[a->n_undo - 1], &a->scene);
        snprintf(kept, sizeof(kept), "%.200s", a->message);
        if (change[0])
            snprintf(a->message, sizeof(a->message), "%s%s%s", change, kept[0] ? "; " : "", kept);
    }
    baseline_note(a);
    return rc;
}

bool app_unsaved(const struct app *a)
{
    if (a->lesson.lesson && a->edits == a->lesson.edits)
        return false; /* as the lesson left it: its edits are its own */
    return a->n_undo != a->saved_depth;
}

/* Bytes a scene's copy holds: explicit parameters can be large (a 768-wide layer is ~9 MB). */
static size_t scene_bytes(const struct attn_scene *s)
{
    const struct attn_scene_weights *w = &s->weights;
    const struct attn_matrix *ms[] = {&s->embed.rows, &s->pos.table,  &w->query,    &w->key,
                                      &w->value,      &w->query_bias, &w->key_bias, &w->value_bias,
                                      &w->out,        &w->out_bias};
    size_t bytes = sizeof(*s);
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
        bytes += (size_t)ms[i]->rows * (size_t)ms[i]->cols * sizeof(float);
    if (w->dropout_mask)
        bytes +=
            (size_t)w->dropout_mask_heads * (size_t)w->dropout_mask_n * (size_t)w->dropout_mask_n;
    return bytes;
}

/* Pushes a copy of s. The stack keeps at most APP_UNDO_MAX steps and APP_UNDO_BYTES of copies,
 * forgetting the oldest first (the newest step is always kept). Returns how many it forgot. */
static int push(struct attn_scene *stack, int *n, const struct attn_scene *s)
{
    int dropped = 0;
    if (*n == APP_UNDO_MAX) {
        attn_scene_free(&stack[0]);
        memmove(stack, stack + 1, (APP_UNDO_MAX - 1) * sizeof(*stack));
        (*n)--;
        dropped = 1;
    }
    if (attn_scene_copy(&stack[*n], s) != 0)
        return dropped;
    (*n)++;
    size_t total = 0;
    for (int i = 0; i < *n; i++)
        total += scene_bytes(&stack[i]);
    while (*n > 1 && total > APP_UNDO_BYTES) {
        total -= scene_bytes(&stack[0]);
        attn_scene_free(&stack[0]);
        memmove(stack, stack + 1, (size_t)(*n - 1) * sizeof(*stack));
        (*n)--;
        dropped++;
    }
    return dropped;
}

/* Called before every edit: the current scene becomes undoable, redo is forgotten. */
static void begin_edit(struct app *a)
{
    /* The saved state moves one step down the stack, or off it (or off the redo side). */
    int forgot = push(a->undo, &a->n_undo, &a->scene);
    if (a->saved_depth >= 0)
        a->saved_depth = a->saved_depth >= forgot ? a->saved_depth - forgot : -1;
    if (a->saved_depth > a->n_undo - 1)
        a->saved_depth = -1;
    for (int i = 0; i < a->n_redo; i++)
        attn_scene_free(&a->redo[i]);
    a->n_redo = 0;
    a->message[0] = '\0';
    a->message_is_error = false;
    a->edits++;
}

void app_refuse(struct app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof(a->message), fmt, ap);
    va_end(ap);
    a->message_is_error = true;
}

/* Explicit weights only fit the shape they were written for; when an edit changes the shape
 * or the seed, the scene goes back to drawing them, and says so. */
static void drop_weights(struct app *a, const char *why)
{
    if (!attn_scene_drop_weights(&a->scene))
        return;
    snprintf(a->message, sizeof(a->message), "explicit weights dropped (%s): drawn from the seed",
             why);
}

/* A checkpoint decides its shapes and projections: an edit of one is refused, with why. */
static bool from_checkpoint(struct app *a, const char *what)
{
    if (!a->scene.model.file)
        return false;
    app_refuse(a,
               "%s comes from the checkpoint (%s); heads, dropout, causal and the sentence can "
               "change",
               what, a->scene.model.arch ? a->scene.model.arch : "model");
    return true;
}

/* The sentence text under tokenizer tok (the scene's, or the next one for T). */
static int edit_text(struct app *a, const char *text, enum attn_tokenizer tok)
{
    struct diag err;
    diag_clear(&err);
    char **tokens = NULL;
    int n = 0, *ids = NULL;
    /* tokenised first, so a sentence that cannot be is refused without an edit */
    int rc = tok == TOKENIZER_GPT2 && a->scene.backing && a->scene.backing->tokenize
                 ? a->scene.backing->tokenize(a->scene.backing, text, &tokens, &ids, &n, &err)
                 : attn_tokenize(&tokens, &n, text, tok, &err);
    free(ids);
    if (rc) {
        app_refuse(a, "%s", err.msg);
        return -1;
    }
    if (n == 0) {
        attn_tokens_free(tokens, n);
        app_refuse(a, "the sentence needs at least one token");
        return -1;
    }
    /* Explicit embedding rows: a word the scene had keeps its row, a new one gets a made-up
     * row (its hash's uniform values); say which, since its numbers are not the book's. */
    char made_up[200] = "";
    if (a->scene.embed.kind == EMBED_EXPLICIT) {
        size_t o = 0;
        for (int i = 0; i < n; i++) {
            bool known = false;
            for (int k = 0; k < a->scene.n_tokens && !known; k++)
                known = strcmp(tokens[i], a->scene.tokens[k]) == 0;
            for (int k = 0; k < i && !known; k++)
                known = strcmp(tokens[i], tokens[k]) == 0; /* listed once */
            if (!known && o < sizeof(made_up))
                o += (size_t)snprintf(made_up + o, sizeof(made_up) - o, "%s%s", o ? ", " : "",
                                      tokens[i]);
        }
    }
    attn_tokens_free(tokens, n);
    begin_edit(a);
    a->scene.tokenizer = tok;
    if (attn_scene_retext(&a->scene, text, &err)) {
        snprintf(a->error, sizeof(a->error), "%s", err.msg);
        return -1;
    }
    if (a->scene.weights.dropout_mask)
        attn_scene_drop_dropout_masks(&a->scene);
    /* A drawn position table grows with the sentence (its draws change: said in the message);
     * a given table does not, and the scene says why it is invalid. */
    struct attn_scene *sc = &a->scene;
    if (sc->pos.kind == POS_LEARNED && !sc->pos.table.data && !sc->model.file &&
        sc->n_tokens + sc->pos.offset > sc->pos.max_len)
        sc->pos.max_len = sc->n_tokens + sc->pos.offset;
    if (made_up[0])
        snprintf(a->message, sizeof(a->message), "made-up rows for new words: %.200s", made_up);
    return settle_edit(a);
}

int app_edit_text(struct app *a, const char *text)
{
    return edit_text(a, text, a->scene.tokenizer);
}

double app_knob_value(const struct app *a, enum knob k)
{
    switch (k) {
    case KNOB_SEED:
        return (double)a->scene.seed;
    case KNOB_D_OUT:
        return attn_scene_eff_d_out(&a->scene);
    case KNOB_HEADS:
        return a->scene.attn.heads;
    case KNOB_DIM:
        return attn_scene_d_in(&a->scene);
    case KNOB_DROPOUT:
    case KNOB_COUNT:
        break;
    }
    return a->scene.attn.dropout;
}

void app_knob_text(char *out, size_t size, const struct app *a, enum knob k)
{
    if (k == KNOB_SEED) /* 64-bit: a double would round seeds above 2^53 */
        snprintf(out, size, "%llu", (unsigned long long)a->scene.seed);
    else if (k == KNOB_DROPOUT)
        attn_scene_format_p(out, size, a->scene.attn.dropout);
    else
        snprintf(out, size, "%d", (int)app_knob_value(a, k));
}

int app_edit_seed(struct app *a, uint64_t seed)
{
    if (seed == a->scene.seed)
        return 0; /* the same value is no edit: no undo step, nothing unsaved */
    begin_edit(a);
    a->scene.seed = seed;
    drop_weights(a, "new seed");
    return settle_edit(a);
}

int app_edit_offset(struct app *a, int offset)
{
    if (a->scene.pos.kind == POS_NONE) {
        app_refuse(a, "no positions to shift: this scene has positional kind none");
        return -1;
    }
    if (offset == a->scene.pos.offset)
        return 0;
    begin_edit(a);
    a->scene.pos.offset = offset; /* the weights stay: only the positions move */
    return settle_edit(a);
}

int app_edit_knob(struct app *a, enum knob k, double value)
{
    if (k == KNOB_SEED) {
        if (!(value >= 0 && value == floor(value) && value < 18446744073709551616.0)) {
            app_refuse(a, "seed must be a whole number from 0 to 2^64 - 1");
            return -1;
        }
        return app_edit_seed(a, (uint64_t)value);
    }
    if (k == KNOB_DROPOUT) {
        if (!(value >= 0 && value <= 1)) {
            app_refuse(a, "dropout p must be between 0 and 1, not %g", value);
            return -1;
        }
        value += 0.0; /* -0 becomes 0 */
        if (value == a->scene.attn.dropout)
            return 0;
        begin_edit(a);
        a->scene.attn.dropout = value;
        attn_scene_drop_dropout_masks(&a->scene);
        return settle_edit(a);
    }
    /* d_out and heads: whole numbers; attn_scene_check names the limits. */
    if (!(value >= 1 && value == floor(value) && value <= INT_MAX)) {
        app_refuse(a, "%s must be a whole number of at least 1, not %g", knob_name(k), value);
        return -1;
    }
    if (value == app_knob_value(a, k))
        return 0;
    if ((k == KNOB_D_OUT && from_checkpoint(a, "d_out")) ||
        (k == KNOB_DIM && from_checkpoint(a, "the embedding width")))
        return -1;
    if (k == KNOB_DIM && a->scene.embed.kind != EMBED_LEARNED) {
        app_refuse(a, "the embedding rows are given (%d wide): dim changes drawn embeddings only",
                   attn_scene_d_in(&a->scene));
        return -1;
    }
    begin_edit(a);
    if (k == KNOB_DIM) {
        a->scene.embed.dim = (int)value;
        drop_weights(a, "new embedding width");
    } else if (k == KNOB_D_OUT) {
        a->scene.attn.d_out = (int)value;
        drop_weights(a, "new d_out");
    } else {
        a->scene.attn.heads = (int)value;
        drop_weights(a, "new head count");
    }
    return settle_edit(a);
}

/* The next value of d_out or heads in direction dir that keeps the split layout valid:
 * a multiple of heads for d_out, a divisor of d_out for heads. */
static int next_valid(const struct app *a, enum knob k, int v, int dir)
{
    const struct attn_scene *s = &a->scene;
    int d_out = attn_scene_eff_d_out(s), heads = s->attn.heads;
    bool split = s->attn.layout == LAYOUT_SPLIT;
    for (int x = v + dir; x >= 1 && x <= SCENE_MAX_DIM; x += dir) {
        if (!split || k == KNOB_DIM)
            return x;
        if (k == KNOB_D_OUT && heads > 0 && x % heads == 0)
            return x;
        if (k == KNOB_HEADS && d_out % x == 0)
            return x;
    }
    return v;
}

int app_step_knob(struct app *a, enum knob k, int direction)
{
    double v = app_knob_value(a, k);
    if (k == KNOB_DROPOUT) {
        double next = round((v + direction * 0.05) * 100) / 100; /* the 0.05 grid, no drift */
        next = next < 0 ? 0 : next > 1 ? 1 : next;
        return next == v ? 0 : app_edit_knob(a, k, next);
    }
    if (k == KNOB_SEED) {
        if ((direction < 0 && a->scene.seed == 0) || (direction > 0 && a->scene.seed == UINT64_MAX))
            return 0; /* the ends of the seed range: no wrapping round */
        return app_edit_seed(a, a->scene.seed + (uint64_t)(int64_t)direction);
    }
    int next = next_valid(a, k, (int)v, direction);
    if (next == (int)v) {
        app_refuse(a, "no %s %s %d keeps the split layout valid (d_out %d, heads %d)", knob_name(k),
                   direction > 0 ? "above" : "below", (int)v, attn_scene_eff_d_out(&a->scene),
                   a->scene.attn.heads);
        return -1;
    }
    return app_edit_knob(a, k, next);
}

int app_toggle_causal(struct app *a)
{
    begin_edit(a);
    a->scene.attn.causal = !a->scene.attn.causal;
    return settle_edit(a);
}

int app_cycle_projection(struct app *a)
{
    if (from_checkpoint(a, "the projection"))
        return -1;
    begin_edit(a);
    static const enum attn_projection next[] = {[PROJ_DEFAULT] = PROJ_NONE,
                                                [PROJ_NONE] = PROJ_RAND,
                                                [PROJ_RAND] = PROJ_LINEAR,
                                                [PROJ_LINEAR] = PROJ_NONE};
    struct attn_config *c = &a->scene.attn;
    enum attn_projection from = attn_scene_eff_projection(&a->scene);
    c->projection = next[from];
    /* Q = K = V = X needs d_out = d_in; the old d_out comes back when the cycle moves on. */
    if (c->projection == PROJ_NONE) {
        a->d_out_before_none = c->d_out;
        c->d_out = attn_scene_d_in(&a->scene);
    } else if (from == PROJ_NONE && a->d_out_before_none > 0) {
        c->d_out = a->d_out_before_none;
    }
    if (c->projection != PROJ_LINEAR)
        c->qkv_bias = false;
    drop_weights(a, "new projection");
    return settle_edit(a);
}

int app_cycle_layout(struct app *a)
{
    if (from_checkpoint(a, "the head layout"))
        return -1;
    begin_edit(a);
    a->scene.attn.layout = a->scene.attn.layout == LAYOUT_SPLIT ? LAYOUT_WRAPPER : LAYOUT_SPLIT;
    drop_weights(a, "new head layout");
    return settle_edit(a);
}

int app_cycle_mask_mode(struct app *a)
{
    begin_edit(a);
    struct attn_config *c = &a->scene.attn;
    c->mask_mode = c->mask_mode == MASK_BEFORE_SOFTMAX ? MASK_AFTER_SOFTMAX : MASK_BEFORE_SOFTMAX;
    if (!c->causal)
        snprintf(a->message, sizeof(a->message), "mask mode %s (takes effect with causal on: c)",
                 attn_mask_mode_name(c->mask_mode));
    return settle_edit(a);
}

int app_toggle_scale(struct app *a)
{
    begin_edit(a);
    struct attn_config *c = &a->scene.attn;
    /* \u221ad_k <-> none; a given divisor (4 for ch. 3's d_k*0.5 slip) comes back after none */
    enum attn_scale_kind eff = attn_scene_eff_scale(&a->scene);
    if (eff == SCALE_NONE)
        c->scale = c->scale_divisor > 0 ? SCALE_DIVISOR : SCALE_SQRT_DK;
    else
        c->scale = SCALE_NONE;
    return settle_edit(a);
}

int app_edit_scale(struct app *a, enum attn_scale_kind kind, double divisor)
{
    struct attn_config *c = &a->scene.attn;
    if (kind == SCALE_DIVISOR ? c->scale == SCALE_DIVISOR && c->scale_divisor == divisor
                              : attn_scene_eff_scale(&a->scene) == kind)
        return 0;
    begin_edit(a);
    c->scale = kind;
    if (kind == SCALE_DIVISOR) /* x toggles back to this divisor after none */
        c->scale_divisor = divisor;
    return settle_edit(a);
}

int app_edit_scene(struct app *a, const struct attn_scene *to)
{
    struct attn_scene copy;
    if (attn_scene_copy(&copy, to)) {
        app_refuse(a, "out of memory");
        return -1;
    }
    begin_edit(a);
    attn_scene_free(&a->scene);
    a->scene = copy;
    return settle_edit(a);
}

int app_cycle_normalize(struct app *a)
{
    begin_edit(a);
    struct attn_config *c = &a->scene.attn;
    c->normalize = c->normalize == NORM_SOFTMAX ? NORM_SUM : NORM_SOFTMAX;
    return settle_edit(a);
}

int app_cycle_tokenizer(struct app *a)
{
    if (a->scene.tokenizer == TOKENIZER_GPT2) {
        app_refuse(a, "the gpt2 tokenizer comes with its vocabulary: the checkpoint needs its ids");
        return -1;
    }
    if (!a->scene.text) {
        app_refuse(a, "the scene gives its tokens as a list: there is no text to tokenise again");
        return -1;
    }
    static const enum attn_tokenizer next[] = {[TOKENIZER_WHITESPACE] = TOKENIZER_WORDS,
                                               [TOKENIZER_WORDS] = TOKENIZER_CHARS,
                                               [TOKENIZER_CHARS] = TOKENIZER_WHITESPACE};
    char *text = strdup(a->scene.text);
    if (!text) {
        app_refuse(a, "out of memory");
        return -1;
    }
    /* the sentence again under the next tokenizer, by the sentence edit's rules */
    int rc = edit_text(a, text, next[a->scene.tokenizer]);
    free(text);
    return rc;
}

/* What differs between two versions of the scene, in a few words: "heads 2 → 4, causal on". */
static void describe_change(char *out, size_t size, const struct attn_scene *from,
                            const struct attn_scene *to)
{
    out[0] = '\0';
    size_t o = 0;
#define SAY(...)                                                                                   \
    do {                                                                                           \
        if (o < size)                                                                              \
            o += (size_t)snprintf(out + o, size - o, "%s", o ? ", " : "");                         \
        if (o < size)                                                                              \
            o += (size_t)snprintf(out + o, size - o, __VA_ARGS__);                                 \
    } while (0)
    const struct attn_config *x = &from->attn, *y = &to->attn;
    if (from->seed != to->seed)
        SAY("seed %llu \u2192 %llu", (unsigned long long)from->seed, (unsigned long long)to->seed);
    if (attn_scene_eff_d_out(from) != attn_scene_eff_d_out(to))
        SAY("d_out %d \u2192 %d", attn_scene_eff_d_out(from), attn_scene_eff_d_out(to));
    if (x->heads != y->heads)
        SAY("heads %d \u2192 %d", x->heads, y->heads);
    if (x->dropout != y->dropout) {
        char p[32], q[32];
        attn_scene_format_p(p, sizeof(p), x->dropout);
        attn_scene_format_p(q, sizeof(q), y->dropout);
        SAY("dropout %s \u2192 %s", p, q);
    }
    if (x->causal != y->causal)
        SAY("causal %s", y->causal ? "on" : "off");
    if (attn_scene_eff_projection(from) != attn_scene_eff_projection(to))
        SAY("projection %s \u2192 %s", attn_projection_name(attn_scene_eff_projection(from)),
            attn_projection_name(attn_scene_eff_projection(to)));
    if (x->layout != y->layout)
        SAY("layout %s \u2192 %s", attn_layout_name(x->layout), attn_layout_name(y->layout));
    if (x->mask_mode != y->mask_mode)
        SAY("mask %s", attn_mask_mode_name(y->mask_mode));
    enum attn_scale_kind sf = attn_scene_eff_scale(from), st = attn_scene_eff_scale(to);
    if (sf != st && st == SCALE_NONE)
        SAY("scaling off");
    else if (st == SCALE_DIVISOR && (sf != st || x->scale_divisor != y->scale_divisor))
        SAY("scores \u00f7 %g", y->scale_divisor);
    else if (sf != st)
        SAY("scaling %s", st == SCALE_SQRT_DK ? "by \u221ad_k" : "on");
    if (x->normalize != y->normalize)
        SAY("normalize %s", attn_normalize_name(y->normalize));
    if (from->tokenizer != to->tokenizer)
        SAY("tokenizer %s", attn_tokenizer_name(to->tokenizer));
    if (from->pos.max_len != to->pos.max_len && to->pos.kind == POS_LEARNED)
        SAY("max_len %d \u2192 %d", from->pos.max_len, to->pos.max_len);
    if (attn_scene_d_in(from) != attn_scene_d_in(to))
        SAY("embedding dim %d \u2192 %d", attn_scene_d_in(from), attn_scene_d_in(to));
    if (from->pos.offset != to->pos.offset)
        SAY("first position %d \u2192 %d", from->pos.offset, to->pos.offset);
    if ((from->text == NULL) != (to->text == NULL) ||
        (from->text && strcmp(from->text, to->text) != 0))
        SAY("the sentence (%d \u2192 %d tokens)", from->n_tokens, to->n_tokens);
    else if (from->n_tokens != to->n_tokens) /* the same text, tokenised otherwise */
        SAY("%d \u2192 %d tokens", from->n_tokens, to->n_tokens);
#undef SAY
}

static int swap_history(struct app *a, struct attn_scene *from, int *n_from, struct attn_scene *to,
                        int *n_to, const char *what)
{
    if (*n_from == 0) {
        snprintf(a->message, sizeof(a->message), "nothing to %s", what);
        return 0;
    }
    push(to, n_to, &a->scene);
    char change[240];
    describe_change(change, sizeof(change), &a->scene, &from[*n_from - 1]);
    attn_scene_free(&a->scene);
    a->scene = from[--(*n_from)];
    a->edits++;
    memset(&from[*n_from], 0, sizeof(from[*n_from]));
    int rc = settle(a);
    snprintf(a->message, sizeof(a->message), "%s%s%s",
             strcmp(what, "undo") == 0 ? "undid" : "redid", change[0] ? ": " : "", change);
    a->message_is_error = false;
    baseline_note(a);
    return rc;
}

int app_undo(struct app *a)
{
    return swap_history(a, a->undo, &a->n_undo, a->redo, &a->n_redo, "undo");
}

int app_redo(struct app *a)
{
    return swap_history(a, a->redo, &a->n_redo, a->undo, &a->n_undo, "redo");
}

int app_export(struct app *a, const char *dir, struct diag *err)
{
    /* Export what is on screen: the last valid state, as CSV (attnscope export --format npy
       writes .npy). */
    return export_dir_progress(dir, &a->shown, &a->net, EXPORT_CSV, &a->export_progress, err);
}

int app_save(struct app *a, const char *path, bool overwrite, struct diag *err)
{
    /* A file that would not load is no use to anyone: fix or undo first. */
    if (a->error[0])
        return diag_set(err, "", "the edited scene is invalid (%.300s); fix it or undo first",
                        a->error);
    if (scenefile_save(path, &a->scene, false, overwrite, err))
        return -1;
    a->saved_depth = a->n_undo;
    return 0;
}
