/* commands: the explorer's actions and the answers to its prompts (see commands.h). */
#include "explore/commands.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

#include "common/cnum.h"
#include "common/fsutil.h"
#include "common/utf8.h"
#include "export/export.h"
#include "explore/keys.h"
#include "explore/lessonmode.h"
#include "explore/picture.h"
#include "explore/tokenview.h"
#include "explore/appstate.h"

/* The longest sentence the line editor holds: a 1024-token sentence fits. */

void ask_clear(struct ask *ask)
{
    free(ask->initial);
    memset(ask, 0, sizeof(*ask));
}

static void ask_for(struct ask *ask, enum prompt_kind kind, const char *label, const char *initial)
{
    ask_clear(ask);
    ask->kind = kind;
    snprintf(ask->label, sizeof(ask->label), "%s", label);
    ask->initial = initial ? strdup(initial) : NULL;
}

/* The stem of the scene file ("scenes/07-dropout.yaml" -> "07-dropout"), or "default". */
static void scene_stem(char *out, size_t size, const char *path)
{
    if (!path) {
        snprintf(out, size, "default");
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

static void note(struct app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->status.message, sizeof(a->status.message), fmt, ap);
    va_end(ap);
    a->status.message_is_error = false;
}

static void do_export(struct app *a, const char *dir)
{
    struct diag err;
    attn_diag_clear(&err);
    if (app_export(a, dir, &err)) {
        app_refuse(a, "export failed: %.200s: %.300s", err.file[0] ? err.file : dir, err.msg);
        return;
    }
    note(a, "exported every stage as CSV to %s/%s", dir,
         a->doc.error[0] ? " (the last valid result: the edited scene is invalid)" : "");
}

static void do_save(struct app *a, const char *path, bool overwrite)
{
    struct diag err;
    attn_diag_clear(&err);
    if (app_save(a, path, overwrite, &err)) {
        app_refuse(a, "save failed: %.200s%s%.300s", err.file[0] ? err.file : "",
                   err.file[0] ? ": " : "", err.msg);
        return;
    }
    if (a->lesson.lesson)
        note(a, "saved step %d as a scene of its own (without the lesson) to %s",
             a->lesson.step + 1, path);
    else
        note(a, "saved the scene to %s", path);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* text without the blanks around it (a trailing space is never meant), into out. */
static void trim_copy(char *out, size_t size, const char *text)
{
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    snprintf(out, size, "%.*s", (int)n, text);
}

static int accept_knob(struct app *a, const char *typed)
{
    char text[64];
    trim_copy(text, sizeof(text), typed);
    if (a->prompt.knob == KNOB_SEED) {
        /* Seeds are 64-bit, beyond a double's exact range: parse them as integers. */
        uint64_t v;
        bool neg;
        if (attn_cnum_parse_u64(text, &v, &neg) != CNUM_OK || neg || text[0] == '+')
            app_refuse(a, "seed must be a whole number from 0 to 2^64 - 1, not '%.40s'", typed);
        else
            app_edit_seed(a, v);
        return OUTCOME_SCENE_CHANGED;
    }
    /* A decimal comma is accepted as typed on a German keyboard ("0,5"); never hex or inf. */
    double v;
    if (strlen(typed) >= sizeof(text) - 1 || attn_cnum_parse_double(text, true, &v) != CNUM_OK)
        app_refuse(a, "'%.40s' is not a number for %s", typed, knob_name(a->prompt.knob));
    else
        app_edit_knob(a, a->prompt.knob, v);
    return OUTCOME_SCENE_CHANGED;
}

/* False, the message line saying so, while layer L, which a key reads, is still computing: the
 * key is answered at once. What writes a file (e, R) or pins a result (B) waits for the compute
 * instead: the user asked for its end. */
static bool computed(struct app *a, int layer, const char *what)
{
    if (app_layer_ready(a, layer))
        return true;
    struct app_progress pr;
    app_compute_progress(a, &pr);
    app_refuse(a, "%s: layer %d is still computing (%d of %d layers ready)", what, layer, pr.ready,
               pr.layers);
    return false;
}

/* The largest change of the attention weights (every head) between before and now. */
static double weights_change(const struct app *a, const float *before)
{
    double most = 0;
    for (int h = 0; h < app_model(a)->heads; h++) {
        struct attn_mat_view v = app_view(a, STAGE_WEIGHTS, h);
        for (int i = 0; i < v.rows; i++)
            for (int j = 0; j < v.cols; j++) {
                double d = fabs((double)v.data[(size_t)i * v.stride + j] -
                                (double)before[((size_t)h * v.rows + i) * v.cols + j]);
                if (d > most)
                    most = d;
            }
    }
    return most;
}

/* The shift demo: moves every position and says what that did to the weights. RoPE rotates q
 * and k by angles that grow with position, but a score only sees the difference of the two
 * angles, so the weights stay (to float rounding); added positions change them. */
/* G's count: the run starts at once. */
static int accept_generate(struct app *a, const char *typed)
{
    char text[64];
    trim_copy(text, sizeof(text), typed);
    uint64_t v;
    bool neg;
    if (strlen(typed) >= sizeof(text) - 1 || attn_cnum_parse_u64(text, &v, &neg) != CNUM_OK ||
        neg || v < 1 || v > SCENE_MAX_TOKENS) {
        app_refuse(a, "G: '%.40s' is not a count of tokens (a whole number from 1 to %d)", typed,
                   SCENE_MAX_TOKENS);
        return OUTCOME_VIEW_CHANGED;
    }
    app_generate_many(a, (int)v);
    return OUTCOME_SCENE_CHANGED;
}

static int accept_offset(struct app *a, const char *typed)
{
    char text[64];
    trim_copy(text, sizeof(text), typed);
    uint64_t v;
    bool neg;
    if (strlen(typed) >= sizeof(text) - 1 || attn_cnum_parse_u64(text, &v, &neg) != CNUM_OK ||
        neg || v > SCENE_MAX_POSITION) {
        app_refuse(a, "the first position must be a whole number from 0 to %d, not '%.40s'",
                   SCENE_MAX_POSITION, typed);
        return OUTCOME_VIEW_CHANGED;
    }
    if (!computed(a, a->view.layer, "the shift compares the weights before and after"))
        return OUTCOME_VIEW_CHANGED;
    const struct attn_model *m = app_model(a);
    size_t cells = (size_t)m->heads * (size_t)m->n * (size_t)m->n;
    float *before = malloc(cells * sizeof(float));
    if (!before) {
        app_refuse(a, "out of memory");
        return OUTCOME_VIEW_CHANGED;
    }
    for (int h = 0; h < m->heads; h++) {
        struct attn_mat_view w = app_view(a, STAGE_WEIGHTS, h);
        for (int i = 0; i < w.rows; i++)
            memcpy(before + ((size_t)h * w.rows + i) * w.cols, w.data + (size_t)i * w.stride,
                   (size_t)w.cols * sizeof(float));
    }
    int old = a->doc.scene.pos.offset;
    if (app_edit_offset(a, (int)v) == 0 && (int)v != old) {
        app_wait(a); /* the note quotes the weights after */
        double change = weights_change(a, before);
        int first = (int)v, last = first + app_model(a)->n - 1;
        /* Below 1e-6 is float rounding, and its digits vary with the BLAS kernel. */
        if (app_model(a)->rope && change < 1e-6)
            note(a,
                 "positions now %d\u2013%d: q and k turn by new angles, the weights stay (all "
                 "within 1e-6): RoPE sees only relative position",
                 first, last);
        else if (app_model(a)->rope)
            note(a,
                 "positions now %d\u2013%d: q and k turn by new angles, the weights by at most "
                 "%.1e: RoPE sees only relative position",
                 first, last, change);
        else
            note(a,
                 "positions now %d\u2013%d: the weights moved up to %.4f: %s positions are "
                 "absolute, not relative",
                 first, last, change,
                 app_model(a)->pos_kind == POS_SINUSOIDAL ? "sinusoidal" : "learned");
    }
    free(before);
    return OUTCOME_SCENE_CHANGED;
}

/* True when hay contains needle, ASCII letters compared without case. */
static bool contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return n == 0;
}

/* A token's text for finding: without the leading space marker a vocabulary token has. */
static const char *bare(const char *token)
{
    while (*token == ' ')
        token++;
    return token;
}

/* Moves to the next row (after the cursor, wrapping) whose token is a->view.find: an exact match
 * (ignoring case and a leading space) first, else one that contains it. */
static int find_next(struct app *a)
{
    const struct attn_model *m = app_model(a);
    int n = app_rows(a) < m->n ? app_rows(a) : m->n;
    if (!a->view.find[0]) {
        app_refuse(a, "nothing to find yet: / asks for a token");
        return OUTCOME_VIEW_CHANGED;
    }
    for (int pass = 0; pass < 2; pass++) {
        int hit = -1, count = 0, nth = 0;
        for (int k = 1; k <= n; k++) {
            int i = (a->view.row + k) % n;
            const char *t = bare(m->tokens[i]);
            bool match =
                pass == 0 ? strcasecmp(t, a->view.find) == 0 : contains_nocase(t, a->view.find);
            if (match && hit < 0)
                hit = i;
        }
        if (hit < 0)
            continue;
        for (int i = 0; i < n; i++) {
            const char *t = bare(m->tokens[i]);
            if (pass == 0 ? strcasecmp(t, a->view.find) == 0 : contains_nocase(t, a->view.find)) {
                count++;
                if (i <= hit)
                    nth++;
            }
        }
        a->view.row = hit;
        app_clamp(a);
        note(a, "\u201c%s\u201d at row %d (%d of %d; n: next)", m->tokens[hit], hit, nth, count);
        return OUTCOME_CURSOR_MOVED;
    }
    app_refuse(a, "no token is or contains '%.60s'", a->view.find);
    return OUTCOME_VIEW_CHANGED;
}

/* The column of the row's largest value (the key a query attends to most). */
static int row_max(struct app *a)
{
    struct attn_mat_view v = app_view(a, a->view.stage, a->view.head);
    if (a->view.row >= v.rows)
        return OUTCOME_HANDLED;
    const float *r = v.data + (size_t)a->view.row * v.stride;
    int best = -1;
    for (int j = 0; j < v.cols; j++)
        if (isfinite(r[j]) && (best < 0 || r[j] > r[best]))
            best = j;
    if (best < 0 || best == a->view.col)
        return OUTCOME_HANDLED;
    a->view.col = a->view.col_want = best;
    return OUTCOME_CURSOR_MOVED;
}

int command_zoom(struct app *a, int dir, int down, int across)
{
    int rows = app_rows(a), cols = app_cols(a);
    int fit = zoom_fit(rows, cols, down, across);
    int from = a->view.zoom < fit ? a->view.zoom : fit;
    int to = zoom_next(from, dir, fit);
    /* What a cell stands for, in the legend's words (zoom_cell_text). */
    char cell[96], zin[32], zout[32], blocks[32];
    struct zoom_grid g = zoom_grid_make(rows, cols, to > 0 ? to : 1, down, across);
    zoom_cell_text(cell, sizeof(cell), &g, attn_stage_is_square(a->view.stage), a->view.block_agg);
    keymap_key_display(zin, sizeof(zin), a->keymap, ACTION_ZOOM_IN);
    keymap_key_display(zout, sizeof(zout), a->keymap, ACTION_ZOOM_OUT);
    keymap_key_display(blocks, sizeof(blocks), a->keymap, ACTION_BLOCKS);
    const char *other = block_agg_name((enum block_agg) !a->view.block_agg);
    if (to == from) {
        if (dir < 0)
            note(a, "zoomed fully in: every value has its number");
        else
            note(a, "zoomed out to the whole matrix, %s (%s zooms in)", cell, zin);
        a->view.zoom = dir > 0 && from > 0 ? ZOOM_OVERVIEW : from;
        return OUTCOME_VIEW_CHANGED;
    }
    /* Out to the overview stays the overview when the area changes (a resize, a new stage). */
    a->view.zoom = dir > 0 && to == fit ? ZOOM_OVERVIEW : to;
    if (to == 0)
        note(a, "zoomed fully in: every value has its number");
    else if (to == 1)
        note(a, "colours only: %s (%s zooms out to blocks, %s back to numbers)", cell, zout, zin);
    else if (to == fit)
        note(a, "zoomed out to the whole matrix: %s (%s: %s; %s zooms in)", cell, blocks, other,
             zin);
    else
        note(a, "zoomed out: %s (%s: %s; %s in, %s out)", cell, blocks, other, zin, zout);
    return OUTCOME_VIEW_CHANGED;
}

/* A pair's first sentence typed: kept while the second is asked, with its own text in the line
 * (the two are one edit, made when B is entered). */
static int pair_prompt(struct app *a, const char *typed, struct ask *ask)
{
    free(a->prompt.sentence);
    a->prompt.sentence = strdup(typed);
    if (!a->prompt.sentence) {
        app_refuse(a, "out of memory");
        return OUTCOME_VIEW_CHANGED;
    }
    snprintf(a->prompt.initial, APP_PROMPT_BYTES, "%s", a->doc.scene.text_pair);
    ask_for(ask, PROMPT_TEXT_PAIR, "sentence B (of 2; empty: one sentence)",
            a->doc.scene.text_pair);
    return OUTCOME_VIEW_CHANGED;
}

const struct prompt_answer *prompt_answers(enum prompt_kind k)
{
    static const struct prompt_answer yes_no[] = {{'y', "yes"}, {0, "no"}};
    static const struct prompt_answer fit[] = {{'f', "keep the first"},
                                               {'l', "keep the last"},
                                               {'e', "edit it"},
                                               {0, "keep the sentence"}};
    return k == PROMPT_FIT_TEXT ? fit : prompt_is_question(k) ? yes_no : NULL;
}

/* A sentence longer than the model reads (a learned position table, or attnscope's 8,192) is
 * said at once, in the words of the command line, before anything is computed or any note of
 * its words is made, with what can be kept: the first or the last whole words that fit
 * (engine/textfit.c). A RoPE model reads past its positions, with the warning every edit
 * gives. Returns whether it asked (or refused), so the sentence waits. */
static bool ask_fit(struct app *a, const char *typed, const char *pair, struct ask *ask)
{
    struct attn_text_fit f;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_scene_text_fit(&f, &a->doc.scene, typed, pair, &err) != 0 || f.n <= f.limit)
        return false; /* the edit takes it, or says why not */
    char said[300], limit[16];
    attn_text_fit_describe(said, sizeof(said), &f);
    attn_count_text(limit, sizeof(limit), f.limit);
    if (pair || a->doc.scene.text_pair) { /* a pair: a cut keeps one sentence's words */
        app_refuse(a, "%s: shorten the sentences", said);
        return true;
    }
    free(a->prompt.text);
    if (!(a->prompt.text = strdup(typed))) {
        app_refuse(a, "out of memory");
        return true;
    }
    char label[ASK_LABEL_MAX];
    snprintf(label, sizeof(label), "%s: keep the first or the last %s?", said, limit);
    ask_for(ask, PROMPT_FIT_TEXT, label, "");
    return true;
}

/* f, l or e to ask_fit's question: the first or the last words that fit, or the sentence back
 * in the editor. */
static int accept_fit(struct app *a, char answer, struct ask *ask)
{
    char *text = a->prompt.text;
    a->prompt.text = NULL;
    if (!text)
        return OUTCOME_VIEW_CHANGED;
    if (answer == 'e') {
        ask_for(ask, PROMPT_TEXT, "sentence", text);
        free(text);
        return OUTCOME_VIEW_CHANGED;
    }
    struct attn_text_fit f;
    struct diag err;
    attn_diag_clear(&err);
    char *cut = NULL;
    bool first = answer == 'f';
    if (attn_scene_text_fit(&f, &a->doc.scene, text, NULL, &err) != 0 ||
        attn_scene_text_cut(&cut, &a->doc.scene, text, first ? TEXT_KEEP_FIRST : TEXT_KEEP_LAST, 0,
                            f.limit, &err) != 0) {
        app_refuse(a, "%s", err.msg);
        free(text);
        return OUTCOME_VIEW_CHANGED;
    }
    free(text);
    char total[16], kept[16];
    attn_count_text(total, sizeof(total), f.n);
    int n = f.n;
    if (attn_scene_text_fit(&f, &a->doc.scene, cut, NULL, &err) == 0)
        n = f.n;
    attn_count_text(kept, sizeof(kept), n);
    if (app_edit_text(a, cut) == 0 && !a->status.message_is_error) {
        char said[DIAG_MSG_MAX];
        snprintf(said, sizeof(said), "%.300s", a->status.message);
        note(a, "kept the %s %s of %s tokens (whole words)%s%s", first ? "first" : "last", kept,
             total, said[0] ? "; " : "", said);
    }
    free(cut);
    return OUTCOME_SCENE_CHANGED;
}

int command_answer(struct app *a, enum prompt_kind kind, const char *typed, struct ask *ask)
{
    ask_clear(ask);
    char text[1001]; /* a path: what prompt.path holds */
    trim_copy(text, sizeof(text), typed);
    if ((kind == PROMPT_EXPORT || kind == PROMPT_SAVE) && strlen(typed) >= sizeof(text)) {
        app_refuse(a, "the path is too long (over %zu bytes)", sizeof(text) - 1);
        return OUTCOME_VIEW_CHANGED;
    }
    switch (kind) {
    case PROMPT_TEXT:
        if (a->prompt.source) { /* the encoder's sentence: its length is the edit's to check */
            a->prompt.source = false;
            if (strcmp(typed, a->prompt.initial) != 0)
                app_edit_source(a, typed);
            return OUTCOME_SCENE_CHANGED;
        }
        if (a->doc.scene.text_pair && a->doc.scene.text)
            return pair_prompt(a, typed, ask);
        if (strcmp(typed, a->prompt.initial) == 0) /* Enter on the same text changes nothing */
            return OUTCOME_SCENE_CHANGED;
        if (ask_fit(a, typed, NULL, ask))
            return OUTCOME_VIEW_CHANGED;
        app_edit_text(a, typed);
        return OUTCOME_SCENE_CHANGED;
    case PROMPT_TEXT_PAIR: {
        /* Enter on both as they were changes nothing; B emptied: one sentence */
        char *first = a->prompt.sentence;
        a->prompt.sentence = NULL;
        if (first &&
            (strcmp(first, a->doc.scene.text) != 0 || strcmp(typed, a->doc.scene.text_pair) != 0) &&
            !ask_fit(a, first, typed[0] ? typed : NULL, ask))
            app_edit_text_pair(a, first, typed);
        free(first);
        return OUTCOME_SCENE_CHANGED;
    }
    case PROMPT_FIT_TEXT:
        return accept_fit(a, typed[0], ask);
    case PROMPT_KNOB:
        return accept_knob(a, typed);
    case PROMPT_OFFSET:
        return accept_offset(a, typed);
    case PROMPT_GENERATE:
        return accept_generate(a, typed);
    case PROMPT_FIND:
        trim_copy(a->view.find, sizeof(a->view.find), bare(typed));
        return a->view.find[0] ? find_next(a) : OUTCOME_VIEW_CHANGED;
    case PROMPT_EXPORT: {
        if (!text[0])
            break;
        struct diag err;
        bool replaces;
        if (export_check_target(text, &replaces, &err) != 0) {
            app_refuse(a, "%.300s %.300s", text, err.msg);
        } else if (replaces) {
            snprintf(a->prompt.path, sizeof(a->prompt.path), "%.1000s", text);
            char label[ASK_LABEL_MAX];
            snprintf(label, sizeof(label), "%.1100s holds an export: replace it? (y/n)", text);
            ask_for(ask, PROMPT_CONFIRM_EXPORT, label, "");
        } else {
            do_export(a, text);
        }
        break;
    }
    case PROMPT_SAVE:
        if (!text[0])
            break;
        if (is_dir(text)) {
            app_refuse(a, "%.300s is a folder; give a file name", text);
        } else if (attn_fsutil_exists(text)) {
            snprintf(a->prompt.path, sizeof(a->prompt.path), "%.1000s", text);
            char label[ASK_LABEL_MAX];
            snprintf(label, sizeof(label), "%.1100s exists: overwrite it? (y/n)", text);
            ask_for(ask, PROMPT_CONFIRM_SAVE, label, "");
        } else {
            do_save(a, text, false);
        }
        break;
    case PROMPT_CONFIRM_EXPORT:
        do_export(a, a->prompt.path);
        break;
    case PROMPT_CONFIRM_SAVE:
        do_save(a, a->prompt.path, true);
        break;
    case PROMPT_CONFIRM_QUIT:
        return OUTCOME_QUIT;
    case PROMPT_NONE:
        break;
    }
    return OUTCOME_VIEW_CHANGED;
}

int command_cancel(struct app *a, enum prompt_kind kind)
{
    a->prompt.source = false;
    if (kind == PROMPT_TEXT_PAIR) { /* Esc on B drops A too: the pair is one edit */
        free(a->prompt.sentence);
        a->prompt.sentence = NULL;
        note(a, "the sentences are as they were");
    }
    if (kind == PROMPT_CONFIRM_SAVE || kind == PROMPT_CONFIRM_EXPORT)
        note(a, "nothing written");
    if (kind == PROMPT_FIT_TEXT) {
        free(a->prompt.text);
        a->prompt.text = NULL;
        note(a, "the sentence is as it was");
    }
    return OUTCOME_VIEW_CHANGED;
}

static int knob_prompt(struct app *a, enum knob k, struct ask *ask)
{
    char label[64], value[64];
    a->view.knob = k;
    a->prompt.knob = k;
    snprintf(label, sizeof(label), "new %s", knob_name(k));
    app_knob_text(value, sizeof(value), a, k);
    snprintf(a->prompt.initial, APP_PROMPT_BYTES, "%s", value);
    ask_for(ask, PROMPT_KNOB, label, value);
    return OUTCOME_VIEW_CHANGED;
}

/* Edit the sentence; a scene given as a token list is edited as its tokens joined. In the
 * encoder's view (E), an encoder-decoder's source. */
static int text_prompt(struct app *a, struct ask *ask)
{
    a->prompt.source = a->view.encoder && a->doc.scene.encoder;
    const struct attn_scene *s = a->prompt.source ? a->doc.scene.encoder : &a->doc.scene;
    size_t need = s->text ? strlen(s->text) + 1 : 1;
    for (int i = 0; !s->text && i < s->n_tokens; i++)
        need += strlen(s->tokens[i]) + 1;
    char *text = calloc(need, 1);
    if (!text)
        return OUTCOME_HANDLED;
    if (s->text) {
        memcpy(text, s->text, need);
    } else {
        for (int i = 0; i < s->n_tokens; i++) {
            if (i)
                strcat(text, " ");
            strcat(text, s->tokens[i]);
        }
    }
    if (attn_utf8_length(text) >= APP_TEXT_MAX || need > APP_PROMPT_BYTES) {
        app_refuse(a, "the sentence is too long to edit here; edit the scene file");
    } else {
        memcpy(a->prompt.initial, text, need);
        /* a pair (BERT's text: [A, B]): A, then B (pair_prompt) */
        ask_for(ask, PROMPT_TEXT,
                a->prompt.source ? "source"
                : s->text_pair   ? "sentence A (of 2; Enter, then B)"
                                 : "sentence",
                text);
    }
    free(text);
    return OUTCOME_VIEW_CHANGED;
}

/* The place of the current stage in the scene's own order. */
static int stage_index(const struct app *a, enum attn_stage *order, int *n)
{
    *n = attn_stage_order(order, app_model(a));
    for (int i = 0; i < *n; i++)
        if (order[i] == a->view.stage)
            return i;
    return 0;
}

static int stage_step(struct app *a, int dir)
{
    enum attn_stage order[STAGE_COUNT];
    int n, i = stage_index(a, order, &n) + dir;
    if (i < 0 || i >= n)
        return OUTCOME_HANDLED; /* the pipeline has two ends; no wrapping round */
    a->view.stage = order[i];
    app_clamp(a);
    return OUTCOME_VIEW_CHANGED;
}

int command_paste(struct app *a, struct ask *ask)
{
    ask_for(ask, PROMPT_TEXT, "sentence", "");
    return OUTCOME_VIEW_CHANGED;
}

int command_play_tick(struct app *a)
{
    enum attn_stage order[STAGE_COUNT];
    int n, i = stage_index(a, order, &n) + 1;
    while (i < n && attn_stage_is_off(app_model(a), order[i]))
        i++;
    if (i >= n) {
        a->view.playing = false;
        return OUTCOME_VIEW_CHANGED;
    }
    a->view.stage = order[i];
    app_clamp(a);
    return OUTCOME_VIEW_CHANGED;
}

/* True when dir holds shipped files, which w, R and e must not write beside: dir (its real
 * path, links resolved) is at or under
 *   - a folder named scenes/ at the top of an attnscope source tree (beside its meson.build and
 *     src/engine/): scenes/ and scenes/lessons/ of a checkout, or
 *   - the installed data folder, <datadir>/attnscope/ (any path with /share/attnscope/ in it:
 *     its configs/ and whatever a package puts beside them).
 * dir ends with '/'. */
static bool shipped_dir(const char *dir)
{
    char real[PATH_MAX];
    if (!realpath(dir, real))
        return false;
    strcat(real, "/");
    if (strstr(real, "/share/attnscope/"))
        return true;
    /* Every ancestor named scenes, from the deepest up. */
    for (char *end = real + strlen(real) - 1; end > real;) {
        char *slash = end;
        while (slash > real && slash[-1] != '/')
            slash--; /* slash: the start of the last component, which ends at end */
        if (end - slash == 6 && strncmp(slash, "scenes", 6) == 0) {
            char probe[PATH_MAX + 32];
            snprintf(probe, sizeof(probe), "%.*smeson.build", (int)(slash - real), real);
            bool repo = access(probe, F_OK) == 0;
            snprintf(probe, sizeof(probe), "%.*ssrc/engine", (int)(slash - real), real);
            if (repo && access(probe, F_OK) == 0)
                return true;
        }
        end = slash - 1; /* the '/' before it: the parent ends there */
        if (end <= real)
            break;
    }
    return false;
}

/* Where save (w) and render (R) write: beside the scene ("dir/", with the slash), unless that
 * is a folder of shipped files (shipped_dir) or not writable, or there is no scene file: then
 * the current folder (""). */
static void save_dir(char *dir, size_t size, const char *scene_path)
{
    const char *slash = scene_path ? strrchr(scene_path, '/') : NULL;
    snprintf(dir, size, "%.*s", slash ? (int)(slash - scene_path + 1) : 0,
             scene_path ? scene_path : "");
    if (dir[0] && (shipped_dir(dir) || access(dir, W_OK) != 0))
        dir[0] = '\0';
}

/* R: the view on screen (stage, head, every head or their mean, layer, colour scale) as an
 * SVG picture in the save folder, named after the view; an existing file is never replaced:
 * the name gets -2, -3, ... instead. */
static void do_render(struct app *a)
{
    struct picture_view v = {
        .layer = a->view.layer,
        .stage = a->view.stage,
        .head = a->view.all_heads     ? PICTURE_ALL_HEADS
                : app_showing_mean(a) ? PICTURE_HEAD_MEAN
                                      : a->view.head,
        .scale = a->view.color_scale,
        .values = true, /* as the heatmap shows them; left out when the cells are too small */
        .seq_scale = a->view.palette_scale,
        .div_scale = a->view.palette_diverging,
    };
    char stem[256], dir[1100], name[400], path[1600];
    scene_stem(stem, sizeof(stem), a->doc.scene_path);
    save_dir(dir, sizeof(dir), a->doc.scene_path);
    picture_file_name(name, sizeof(name), stem, app_net(a), &v);
    snprintf(path, sizeof(path), "%s%s", dir, name);
    for (int k = 2; attn_fsutil_exists(path) && k < 1000; k++)
        snprintf(path, sizeof(path), "%s%.*s-%d.svg", dir, (int)strlen(name) - 4, name, k);

    /* The title the header shows, for the scene the result belongs to. */
    char title[1024], from[1100];
    app_title(title, sizeof(title), from, sizeof(from), a, &a->result.shown);
    struct diag err;
    attn_diag_clear(&err);
    if (picture_write(path, false, app_net(a), title, &v, &err)) {
        app_refuse(a, "picture failed: %.200s: %.300s", err.file[0] ? err.file : path, err.msg);
        return;
    }
    note(a, "wrote the picture to %s%s", path,
         a->doc.error[0] ? " (the last valid result: the edited scene is invalid)" : "");
}

/* The actions, one function each, bound to the actions by the `run` column of ACTIONS
 * (explore/actions.h). Each returns the outcome flags (explore/outcome.h). */

static int act_quit(struct app *a, enum action act, struct ask *ask)
{
    if (!app_unsaved(a))
        return OUTCOME_QUIT;
    ask_for(ask, PROMPT_CONFIRM_QUIT, "quit without saving your edits? (y/n)", "");
    return OUTCOME_VIEW_CHANGED;
}

int command_interrupt(struct app *a, struct ask *ask)
{
    ask_clear(ask);
    if (!app_unsaved(a))
        return OUTCOME_QUIT;
    ask_for(ask, PROMPT_CONFIRM_QUIT, "quit without saving your edits? (y/n; C-c again quits)", "");
    return OUTCOME_VIEW_CHANGED;
}

/* The map's own views (the rollout, the lens) give way to the stages, the heads, their mean. */
static void map_to_stages(struct app *a)
{
    if (a->view.rollout || a->view.lens) {
        a->view.rollout = a->view.lens = false;
        app_clamp(a);
    }
}

static int act_stage(struct app *a, enum action act, struct ask *ask)
{
    if (a->view.rollout || a->view.lens) { /* back to the stages, where they were (the weights) */
        map_to_stages(a);
        return OUTCOME_VIEW_CHANGED;
    }
    return stage_step(a, act == ACTION_STAGE_NEXT ? 1 : -1);
}

/* Why a scene has no next-token predictions, short enough for an 80-column message line. */
static const char *no_vocab(const struct app *a)
{
    return a->result.shown.model.file
               ? "its checkpoint has no unembedding (no lm_head.weight, no wte)"
               : "drawn embeddings have no vocabulary to unembed";
}

static int act_predictions(struct app *a, enum action act, struct ask *ask)
{
    if (!a->view.predictions && !app_has_vocab(a)) {
        app_refuse(a, "no next-token predictions: %s", no_vocab(a));
        return OUTCOME_VIEW_CHANGED;
    }
    if (!a->view.predictions && a->view.encoder) { /* a source row predicts nothing */
        app_refuse(a, "no predictions in the encoder: the decoder predicts the target's next "
                      "token (E: the decoder)");
        return OUTCOME_VIEW_CHANGED;
    }
    a->view.predictions = !a->view.predictions;
    if (a->view.predictions)
        a->view.token_view = false;
    char knob[24], up[24];
    keymap_key_display(knob, sizeof(knob), a->keymap, ACTION_KNOB_NEXT);
    keymap_key_display(up, sizeof(up), a->keymap, ACTION_KNOB_UP);
    if (a->view.predictions)
        note(a,
             "predictions of the cursor's row: the top tokens, the next one marked (temperature: "
             "%s to it, %s and -)",
             knob, up);
    else
        note(a, "the inspector again (p: the predictions)");
    return OUTCOME_VIEW_CHANGED;
}

static int act_lens(struct app *a, enum action act, struct ask *ask)
{
    if (!a->view.lens && !app_has_vocab(a)) {
        app_refuse(a, "no logit lens: %s", no_vocab(a));
        return OUTCOME_VIEW_CHANGED;
    }
    if (!a->view.lens && a->view.encoder) { /* the lens reads the decoder's residual stream */
        app_refuse(a, "no logit lens in the encoder: its layers predict no token (E: the "
                      "decoder)");
        return OUTCOME_VIEW_CHANGED;
    }
    a->view.lens = !a->view.lens;
    if (a->view.lens) {
        a->view.rollout = a->view.all_heads = false;
        if (a->result.net.model[a->result.net.layers - 1].masked_lm)
            note(a, "the logit lens of a masked LM: each layer's output through the MLM head, "
                    "scored at each token itself; \u2190 \u2192 pick a layer, the panel shows its "
                    "top tokens");
        else
            note(a, "the logit lens: each layer's output through the final norm and the "
                    "unembedding; \u2190 \u2192 pick a layer, the panel shows its top tokens");
    } else {
        app_clamp(a);
        note(a, "the stages again (y: the lens)");
    }
    return OUTCOME_VIEW_CHANGED;
}

static int act_encoder(struct app *a, enum action act, struct ask *ask)
{
    if (app_toggle_encoder(a))
        note(a,
             a->view.encoder
                 ? "the encoder: the source's tokens, its %d bidirectional layers (E: the decoder)"
                 : "the decoder: the target's tokens, self- and cross-attention (E: the encoder)",
             app_net(a)->layers);
    return OUTCOME_VIEW_CHANGED;
}

static int act_rollout(struct app *a, enum action act, struct ask *ask)
{
    a->view.rollout = !a->view.rollout;
    if (a->view.rollout) {
        a->view.lens = a->view.all_heads = false;
        a->view.stage =
            STAGE_WEIGHTS; /* the rollout multiplies the weights: the stage it stands on */
        app_clamp(a);
        if (a->result.net.layers > 1)
            note(a,
                 "attention rollout through layer %d: how much of each row's representation "
                 "comes from each token ({ } another layer, r the weights)",
                 a->view.layer);
        else
            note(a, "attention rollout: 0.5\u00b7weights + 0.5\u00b7I, rows renormalised (one "
                    "layer; r the weights)");
        app_request_rollout(a); /* in the background, when it computes there */
    } else {
        note(a, "the weights again (r: the rollout)");
    }
    return OUTCOME_VIEW_CHANGED;
}

static int act_ablate(struct app *a, enum action act, struct ask *ask)
{
    if (a->view.encoder) { /* the scene's ablate: names the decoder's layers */
        app_refuse(a, "ablation of the encoder's heads is not there yet: E shows the decoder");
        return OUTCOME_VIEW_CHANGED;
    }
    app_cycle_ablation(a);
    return OUTCOME_SCENE_CHANGED;
}

static int act_head_mean(struct app *a, enum action act, struct ask *ask)
{
    map_to_stages(a);
    a->view.head_mean = !a->view.head_mean;
    a->view.all_heads = false;
    if (a->view.head_mean && app_model(a)->heads < 2)
        note(a, "one head: its mean is itself");
    else
        note(a,
             a->view.head_mean ? "the mean over the %d heads (A: one head again)"
                               : "one head again (A: the mean over the heads)",
             app_model(a)->heads);
    return OUTCOME_VIEW_CHANGED;
}

static int act_token_view(struct app *a, enum action act, struct ask *ask)
{
    a->view.token_view = !a->view.token_view;
    if (a->view.token_view)
        a->view.predictions = false;
    if (!a->view.token_view)
        note(a, "the inspector again (v: the token view)");
    else if (!tokenview_applies(a->view.stage))
        note(a, "token view: it shows the n\u00d7n stages, scores to dropout (. and , step "
                "there; v: the inspector)");
    else
        note(a, "token view: what the cursor's row looks at, in the sentence and as its top "
                "keys (v: the inspector)");
    return OUTCOME_VIEW_CHANGED;
}

static int act_color_scale(struct app *a, enum action act, struct ask *ask)
{
    static const char *const said[SCALE_BY_COUNT] = {
        "colours: one scale for the whole matrix",
        "colours: each row on its own scale (every query's distribution, at any length)",
        "colours: logarithmic (values spanning decades; down to 1/10000 of the largest)"};
    a->view.color_scale = (enum color_scale)((a->view.color_scale + 1) % SCALE_BY_COUNT);
    note(a, "%s", said[a->view.color_scale]);
    return OUTCOME_VIEW_CHANGED;
}

static int act_blocks(struct app *a, enum action act, struct ask *ask)
{
    a->view.block_agg = a->view.block_agg == BLOCK_MAX ? BLOCK_MEAN : BLOCK_MAX;
    note(a, "%s",
         a->view.block_agg == BLOCK_MAX
             ? "zoomed-out blocks show their max (a strong weight stays visible)"
             : "zoomed-out blocks show their mean (how much a region holds on average)");
    return OUTCOME_VIEW_CHANGED;
}

/* The heatmap takes z and Z; here only what is left: the all-heads view, which fits its tiles
 * by itself. */
static int act_zoom(struct app *a, enum action act, struct ask *ask)
{
    app_refuse(a, "zoom works on one head's map (a: back to it); this view fits the heads "
                  "by itself");
    return OUTCOME_VIEW_CHANGED;
}

static int act_jump(struct app *a, enum action act, struct ask *ask)
{
    int rows = app_rows(a), cols = app_cols(a);
    int row = act == ACTION_TOP ? 0 : act == ACTION_BOTTOM ? rows - 1 : a->view.row;
    int col = act == ACTION_ROW_START ? 0 : act == ACTION_ROW_END ? cols - 1 : a->view.col;
    if (row == a->view.row && col == a->view.col)
        return OUTCOME_HANDLED;
    a->view.row = row;
    a->view.col = a->view.col_want = col;
    return OUTCOME_CURSOR_MOVED;
}

static int act_row_max(struct app *a, enum action act, struct ask *ask)
{
    if (!computed(a, a->view.layer, "the row's largest value"))
        return OUTCOME_VIEW_CHANGED;
    return row_max(a);
}

static int act_find(struct app *a, enum action act, struct ask *ask)
{
    ask_for(ask, PROMPT_FIND, "find token", a->view.find);
    return OUTCOME_VIEW_CHANGED;
}

static int act_find_next(struct app *a, enum action act, struct ask *ask)
{
    return find_next(a);
}

/* none -> previous -> induction -> first -> self -> entropy -> none; the tiles of the all-heads
 * view (and the model view) show it. */
static int act_score(struct app *a, enum action act, struct ask *ask)
{
    a->view.score_shown = a->view.score_shown + 1 >= SCORE_COUNT ? -1 : a->view.score_shown + 1;
    map_to_stages(a);
    a->view.all_heads = true;
    if (a->view.score_shown >= 0 && !attn_stage_is_per_head(a->view.stage) &&
        app_model(a)->heads > 1)
        note(a,
             "heads coloured by their %s score on a stage of each head's (this one they "
             "share; S: next score)",
             attn_head_score_name((enum head_score)a->view.score_shown));
    else if (a->view.score_shown >= 0)
        note(a, "heads coloured by their %s score (S: next score)",
             attn_head_score_name((enum head_score)a->view.score_shown));
    /* a score not given here (too few repeats for induction) says why, not a row of "-" */
    /* one head's scores here (milliseconds), for why a score is not given: the text decides */
    char why[200] = "";
    if (a->view.score_shown >= 0 && app_layer_ready(a, a->view.layer))
        attn_head_score_why(why, sizeof(why), app_scores(a, a->view.layer, 0),
                            (enum head_score)a->view.score_shown);
    if (a->view.score_shown >= 0)
        app_request_scores(a); /* every head: in the background when it computes there */
    if (why[0])
        note(a, "no %s score here: %s (S: next score)",
             attn_head_score_name((enum head_score)a->view.score_shown), strchr(why, ':') + 2);
    if (a->view.score_shown < 0)
        note(a, "heads no longer coloured by a score");
    return OUTCOME_VIEW_CHANGED;
}

static int act_layer(struct app *a, enum action act, struct ask *ask)
{
    int layers = app_net(a)->layers; /* the stack on screen's (an encoder's, E) */
    if (layers < 2) {
        app_refuse(a, "this scene has one layer (give it more with layers: N)");
        return OUTCOME_VIEW_CHANGED;
    }
    app_set_layer(a, (a->view.layer + (act == ACTION_LAYER_NEXT ? 1 : -1) + layers) % layers);
    app_request_rollout(a); /* the rollout on screen: through this layer now */
    return OUTCOME_VIEW_CHANGED;
}

static int act_head(struct app *a, enum action act, struct ask *ask)
{
    a->view.head = (a->view.head + (act == ACTION_HEAD_NEXT ? 1 : -1) + app_model(a)->heads) %
                   app_model(a)->heads;
    app_clamp(a);
    return OUTCOME_VIEW_CHANGED;
}

static int act_baseline(struct app *a, enum action act, struct ask *ask)
{
    struct app_progress pr;
    app_compute_progress(a, &pr);
    if (pr.baseline) { /* B again while it is pinned: it is not */
        app_stop_compute(a, "B");
        return OUTCOME_VIEW_CHANGED;
    }
    app_wait(a); /* the result on screen whole first: the baseline is a copy of its scene */
    if (app_toggle_baseline(a) == 1 && a->doc.error[0]) /* the last valid state is pinned */
        note(a, "baseline pinned: the last valid result (the edited scene is invalid)");
    return OUTCOME_SCENE_CHANGED;
}

static int act_all_heads(struct app *a, enum action act, struct ask *ask)
{
    map_to_stages(a);
    a->view.all_heads = !a->view.all_heads;
    return OUTCOME_VIEW_CHANGED;
}

static int act_open(struct app *a, enum action act, struct ask *ask)
{
    if (!a->view.all_heads)
        return OUTCOME_HANDLED;
    a->view.all_heads = false;
    return OUTCOME_VIEW_CHANGED;
}

static int act_play(struct app *a, enum action act, struct ask *ask)
{
    map_to_stages(a);
    a->view.playing = !a->view.playing;
    if (a->view.playing && a->view.stage == attn_stage_last(app_model(a)))
        a->view.stage = STAGE_INPUTS; /* play from the start when at the end */
    app_clamp(a);
    return OUTCOME_VIEW_CHANGED;
}

/* Halve or double, from a tenth of a second to four seconds a stage. */
static int act_play_speed(struct app *a, enum action act, struct ask *ask)
{
    int ms = act == ACTION_PLAY_FASTER ? a->view.play_ms / 2 : a->view.play_ms * 2;
    a->view.play_ms = ms < 100 ? 100 : ms > 4000 ? 4000 : ms;
    attn_cnum_format(a->status.message, sizeof(a->status.message),
                     "auto-play: one stage every %.1f s", a->view.play_ms / 1000.0);
    a->status.message_is_error = false;
    return OUTCOME_VIEW_CHANGED;
}

/* The next knob that applies (the temperature only with a vocabulary model). */
static int act_knob_select(struct app *a, enum action act, struct ask *ask)
{
    do
        a->view.knob = (enum knob)((a->view.knob + (act == ACTION_KNOB_NEXT ? 1 : KNOB_COUNT - 1)) %
                                   KNOB_COUNT);
    while (!app_knob_shown(a, a->view.knob));
    return OUTCOME_VIEW_CHANGED;
}

static int act_knob_step(struct app *a, enum action act, struct ask *ask)
{
    app_step_knob(a, a->view.knob, act == ACTION_KNOB_UP ? 1 : -1);
    return OUTCOME_SCENE_CHANGED;
}

/* # types a value for the selected knob; s, d, H and D for their own. */
static int act_knob_type(struct app *a, enum action act, struct ask *ask)
{
    enum knob k = act == ACTION_SEED      ? KNOB_SEED
                  : act == ACTION_D_OUT   ? KNOB_D_OUT
                  : act == ACTION_HEADS   ? KNOB_HEADS
                  : act == ACTION_DROPOUT ? KNOB_DROPOUT
                                          : a->view.knob;
    return knob_prompt(a, k, ask);
}

static int act_edit_text(struct app *a, enum action act, struct ask *ask)
{
    return text_prompt(a, ask);
}

static int act_shift(struct app *a, enum action act, struct ask *ask)
{
    if (a->doc.scene.pos.kind == POS_NONE) {
        app_refuse(a, "no positions to shift: this scene has positional kind none");
        return OUTCOME_VIEW_CHANGED;
    }
    snprintf(a->prompt.initial, APP_PROMPT_BYTES, "%d", a->doc.scene.pos.offset);
    ask_for(ask, PROMPT_OFFSET, "first position (every token moves with it)", a->prompt.initial);
    return OUTCOME_VIEW_CHANGED;
}

static int act_generate(struct app *a, enum action act, struct ask *ask)
{
    app_generate(a);
    return OUTCOME_SCENE_CHANGED;
}

static int act_generate_many(struct app *a, enum action act, struct ask *ask)
{
    snprintf(a->prompt.initial, APP_PROMPT_BYTES, "16");
    ask_for(ask, PROMPT_GENERATE, "tokens to write, one after another (any key stops)",
            a->prompt.initial);
    return OUTCOME_VIEW_CHANGED;
}

/* The option edits: each recomputes (app.c), the screen follows. */
#define EDIT_ACTION(fn, edit)                                                                      \
    static int fn(struct app *a, enum action act, struct ask *ask)                                 \
    {                                                                                              \
        edit(a);                                                                                   \
        return OUTCOME_SCENE_CHANGED;                                                              \
    }
EDIT_ACTION(act_causal, app_toggle_causal)
EDIT_ACTION(act_projection, app_cycle_projection)
EDIT_ACTION(act_layout, app_cycle_layout)
EDIT_ACTION(act_mask_mode, app_cycle_mask_mode)
EDIT_ACTION(act_scale, app_toggle_scale)
EDIT_ACTION(act_normalize, app_cycle_normalize)
EDIT_ACTION(act_tokenizer, app_cycle_tokenizer)
EDIT_ACTION(act_undo, app_undo)
EDIT_ACTION(act_redo, app_redo)
/* Lesson mode: a step may edit, and the caption's height lays the screen out again. */
EDIT_ACTION(act_lesson, lesson_toggle)
EDIT_ACTION(act_lesson_next, lesson_next)
EDIT_ACTION(act_lesson_prev, lesson_prev)
#undef EDIT_ACTION

static int act_export(struct app *a, enum action act, struct ask *ask)
{
    char stem[256], dir[300];
    scene_stem(stem, sizeof(stem), a->doc.scene_path);
    snprintf(dir, sizeof(dir), "attnscope-export-%s", stem);
    ask_for(ask, PROMPT_EXPORT, "export to folder", dir);
    return OUTCOME_VIEW_CHANGED;
}

static int act_save(struct app *a, enum action act, struct ask *ask)
{
    if (a->doc.error[0]) {
        app_refuse(a, "the edited scene is invalid: fix it or undo (u) before saving");
        return OUTCOME_VIEW_CHANGED;
    }
    /* Never offer to overwrite the scene itself: saving writes fresh YAML, so the original's
     * comments would be lost. A lesson's scene is saved as the scene on screen, without its
     * lesson (app_save): the prompt says so, and names the step. */
    char stem[256], path[1400], dir[1100];
    scene_stem(stem, sizeof(stem), a->doc.scene_path);
    save_dir(dir, sizeof(dir), a->doc.scene_path);
    if (a->lesson.lesson) {
        snprintf(path, sizeof(path), "%s%s-step%d.yaml", dir, stem, a->lesson.step + 1);
        ask_for(ask, PROMPT_SAVE, "save this step (no lesson) as", path);
    } else {
        /* a model folder opened as a scene has no file yet: the scene is the folder's own */
        bool folder = a->doc.scene_path && is_dir(a->doc.scene_path);
        snprintf(path, sizeof(path), "%s%s%s.yaml", dir, stem, folder ? "" : "-edited");
        ask_for(ask, PROMPT_SAVE, "save scene as", path);
    }
    return OUTCOME_VIEW_CHANGED;
}

static int act_render(struct app *a, enum action act, struct ask *ask)
{
    if (a->view.rollout || a->view.lens) {
        app_refuse(a, "R draws the stages; the %s is in an export (e): %s",
                   a->view.rollout ? "rollout" : "lens",
                   a->view.rollout ? "rollout.csv" : "lens.csv");
        return OUTCOME_VIEW_CHANGED;
    }
    app_exact(a); /* a file of the view, as an export: a fresh computation's numbers */
    do_render(a);
    return OUTCOME_VIEW_CHANGED;
}

static int (*const handlers[ACTION_COUNT])(struct app *a, enum action act, struct ask *ask) = {
#define X(id, name, keys, group, help, run) [ACTION_##id] = run,
    ACTIONS(X)
#undef X
};

int command_run(struct app *a, enum action act, struct ask *ask)
{
    ask_clear(ask);
    int out = act >= 0 && act < ACTION_COUNT && handlers[act] ? handlers[act](a, act, ask)
                                                              : OUTCOME_IGNORED;
    /* With a baseline pinned, a view of another stage, head or layer may have another shape
     * than the baseline's: the message line says why the map shows values, not a Δ. */
    bool moved = act == ACTION_STAGE_NEXT || act == ACTION_STAGE_PREV || act == ACTION_HEAD_NEXT ||
                 act == ACTION_HEAD_PREV || act == ACTION_LAYER_NEXT || act == ACTION_LAYER_PREV;
    char why[200];
    if (moved && a->base.pinned) {
        app_delta_problem(why, sizeof(why), a);
        if (why[0])
            note(a, "%s", why);
    }
    return out;
}
