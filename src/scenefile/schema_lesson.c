/* schema_lesson: a lesson's steps, and the steps checked against the scene (see schema.h). */
#include "scenefile/schema.h"

/* ---- lesson: a list of steps --------------------------------------------------------------- */

/* Rows of a step's mapping; the edits last, in the order of enum attn_edit_kind. */
enum {
    L_STAGE,
    L_LAYER,
    L_HEAD,
    L_CELL,
    L_ROW,
    L_ALL_HEADS,
    L_PANEL,
    L_CAPTION,
    L_CAUSAL,
    L_HEADS,
    L_D_OUT,
    L_DROPOUT,
    L_SEED,
    L_TEXT,
    L_SCALE,
    L_MASK_MODE,
    L_NORMALIZE,
    L_LAYOUT,
    L_OFFSET,
    L_ABLATE,
    L_GENERATE,
    L_COUNT
};
#define L_EDIT_FIRST L_CAUSAL
_Static_assert(L_COUNT - L_EDIT_FIRST == EDIT_LESSON_COUNT - 1, "one row per edit");

/* cell: [row, column], counted from 0 as the explorer does. */
static void h_cell(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    struct attn_lesson_step *st = base;
    const struct ynode *nd = nd_of(l, node);
    char buf[LOADER_SHOW_MAX];
    int v[2], i = 0;
    for (int c = nd->u.c.first; c >= 0; c = nd_of(l, c)->next, i++) {
        long long x;
        if (i >= 2 || nd_of(l, c)->type != YNODE_SCALAR ||
            attn_schema_parse_ll(str_of(l, c), &x) != 0 || attn_schema_has_nul(l, c) || x < 0 ||
            x > INT_MAX / 2) {
            i = -1;
            break;
        }
        v[i] = (int)x;
    }
    if (i != 2) {
        attn_loader_error(l, node, path,
                          "'cell' must be [row, column], two whole numbers from 0, got %s",
                          attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    st->row = v[0];
    st->col = v[1];
}

static void h_caption(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    if (!attn_schema_string_ok(l, f, node, path))
        return;
    const char *text = str_of(l, node);
    struct diag err;
    attn_diag_clear(&err);
    if (attn_caption_marks(text, NULL, 0, &err) < 0) {
        attn_loader_error(l, node, path, "%s", err.msg);
        return;
    }
    int chars = attn_caption_chars(text), lines = attn_caption_lines(text);
    if (chars > LESSON_CAPTION_MAX_CHARS) {
        attn_loader_error(
            l, node, path,
            "the caption is %d characters long; a step holds at most %d (split it over "
            "two steps)",
            chars, LESSON_CAPTION_MAX_CHARS);
        return;
    }
    if (lines > LESSON_CAPTION_MAX_LINES) {
        attn_loader_error(l, node, path, "the caption has %d lines; a step holds at most %d", lines,
                          LESSON_CAPTION_MAX_LINES);
        return;
    }
    attn_schema_string(l, f, node, base, path);
    struct attn_lesson_step *st = base;
    attn_loader_locate(l, node, &st->caption_line, &st->caption_col);
}

/* scale: as attention.scale says it (attn_schema_scale), into the step's edit. */
static void h_step_scale(struct loader *l, const struct field *f, int node, void *base,
                         const char *path)
{
    struct attn_lesson_step *st = base;
    struct attn_config scale = {.scale = SCALE_DEFAULT};
    struct field at = *f;
    at.offset = 0;
    attn_schema_scale(l, &at, node, &scale, path);
    st->edit.scale = scale.scale;
    st->edit.scale_divisor = scale.scale_divisor;
}

/* ablate: {layer: L, head: H, mode: zero|mean|off}, one head's ablation set or taken off.
 * Whether the head exists is the step check's (it knows the scene). */
static const char *step_head_mode_str(int v)
{
    return v == HEAD_KEEP ? "off" : attn_head_mode_name((enum attn_head_mode)v);
}
static const int step_ablate_mode_values[] = {HEAD_ZERO, HEAD_MEAN, HEAD_KEEP};
static const struct enum_def step_ablate_mode_enum = {step_ablate_mode_values, 3,
                                                      step_head_mode_str, NULL};
#define SAB(member) offsetof(struct attn_ablation, member)
static const struct field step_ablate_fields[] = {
    {"layer", WANT_SCALAR, "an integer", attn_schema_int, SAB(layer),
     &attn_schema_ablate_layer_range},
    {"head", WANT_SCALAR, "an integer", attn_schema_int, SAB(head), &attn_schema_ablate_head_range},
    {"mode", WANT_SCALAR, NULL, attn_schema_enum, SAB(mode), &step_ablate_mode_enum},
};
const struct mapping attn_schema_step_ablate_map = {
    "ablate", step_ablate_fields, N(step_ablate_fields), attn_schema_finish_ablation};

void attn_schema_step_ablate(struct loader *l, const struct field *f, int node, void *base,
                             const char *path)
{
    (void)f;
    struct attn_lesson_step *st = base;
    struct attn_ablation ab = {-1, -1, HEAD_ZERO};
    attn_schema_walk_map(l, node, &attn_schema_step_ablate_map, &ab, path);
    st->edit.layer = ab.layer;
    st->edit.head = ab.head;
    st->edit.head_mode = (int)ab.mode;
}

static const struct int_range step_index_range = {0, INT_MAX};
static const struct int_range step_generate_range = {1, ATTN_EDIT_GENERATE_MAX};

/* panel: inspector, predictions or tokens. */
static const char *step_panel_str(int v)
{
    return attn_lesson_panel_name((enum attn_lesson_panel)v);
}
static const int step_panel_values[] = {LESSON_PANEL_INSPECTOR, LESSON_PANEL_PREDICTIONS,
                                        LESSON_PANEL_TOKENS};
static const struct enum_def step_panel_enum = {step_panel_values, 3, step_panel_str, NULL};

#define LS(member) offsetof(struct attn_lesson_step, member)
static const struct field step_fields[L_COUNT] = {
    [L_STAGE] = {"stage", WANT_SCALAR, NULL, attn_schema_enum, LS(stage), &stage_enum},
    [L_LAYER] = {"layer", WANT_SCALAR, "an integer", attn_schema_int, LS(layer), &view_range},
    [L_HEAD] = {"head", WANT_SCALAR, "an integer", attn_schema_int, LS(head), &view_range},
    [L_CELL] = {"cell", WANT_SEQ, "a cell as [row, column]", h_cell, 0, NULL},
    [L_ROW] = {"row", WANT_SCALAR, "an integer", attn_schema_int, LS(row), &step_index_range},
    [L_ALL_HEADS] = {"all_heads", WANT_SCALAR, "true or false", attn_schema_bool, LS(all_heads),
                     NULL},
    [L_PANEL] = {"panel", WANT_SCALAR, NULL, attn_schema_enum, LS(panel), &step_panel_enum},
    [L_CAPTION] = {"caption", WANT_SCALAR, "a string", h_caption, LS(caption), NULL},
    [L_CAUSAL] = {"causal", WANT_SCALAR, "true or false", attn_schema_bool, LS(edit.causal), NULL},
    [L_HEADS] = {"heads", WANT_SCALAR, "an integer", attn_schema_int, LS(edit.heads), &heads_range},
    [L_D_OUT] = {"d_out", WANT_SCALAR, "an integer", attn_schema_int, LS(edit.d_out), &dim_range},
    [L_DROPOUT] = {"dropout", WANT_SCALAR, "a number between 0 and 1", attn_schema_probability,
                   LS(edit.dropout), NULL},
    [L_SEED] = {"seed", WANT_SCALAR, SEED_WHAT, attn_schema_seed, LS(edit.seed), NULL},
    [L_TEXT] = {"text", WANT_SCALAR, "a string", attn_schema_string, LS(edit.text), NULL},
    [L_SCALE] = {"scale", WANT_SCALAR, "true, false or a positive number", h_step_scale, 0, NULL},
    [L_MASK_MODE] = {"mask_mode", WANT_SCALAR, NULL, attn_schema_enum, LS(edit.mask_mode),
                     &mask_mode_enum},
    [L_NORMALIZE] = {"normalize", WANT_SCALAR, NULL, attn_schema_enum, LS(edit.normalize),
                     &normalize_enum},
    [L_LAYOUT] = {"head_layout", WANT_SCALAR, NULL, attn_schema_enum, LS(edit.layout),
                  &layout_enum},
    [L_OFFSET] = {"offset", WANT_SCALAR, "an integer", attn_schema_int, LS(edit.offset),
                  &offset_range},
    [L_ABLATE] = {"ablate", WANT_MAP, "a head as {layer: 1, head: 0, mode: zero}",
                  attn_schema_step_ablate, 0, NULL},
    [L_GENERATE] = {"generate", WANT_SCALAR, "a whole number of tokens", attn_schema_int,
                    LS(edit.generate), &step_generate_range},
};

/* stage and caption are needed; a cell or a row; one edit at most. */
static void finish_step(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_lesson_step *st = base;
    st->line = attn_loader_line(l, node);
    if (found[L_STAGE] < 0 && !attn_schema_meant_bad(l, path, "stage"))
        attn_loader_error(
            l, node, path,
            "a lesson step needs 'stage': the stage it shows (inputs, scores, weights, "
            "...)");
    if (found[L_CAPTION] < 0 && !attn_schema_meant_bad(l, path, "caption"))
        attn_loader_error(l, node, path,
                          "a lesson step needs 'caption': what to say about the view");
    if (found[L_CELL] >= 0 && found[L_ROW] >= 0)
        attn_loader_error(l, found[L_ROW], path, "give the step either 'cell' or 'row', not both");
    else if (found[L_ROW] >= 0)
        st->col = -1;
    int first = -1;
    for (int i = L_EDIT_FIRST; i < L_COUNT; i++) {
        if (found[i] < 0)
            continue;
        if (first < 0 || attn_loader_line(l, found[i]) < attn_loader_line(l, found[first]))
            first = i;
    }
    for (int i = L_EDIT_FIRST; i < L_COUNT; i++) {
        if (found[i] < 0 || i == first)
            continue;
        char kp[DIAG_PATH_MAX];
        join(kp, path, step_fields[i].key);
        attn_loader_error(
            l, found[i], kp,
            "a step makes one edit: '%s' and '%s' are both given (give '%s' a step of "
            "its own)",
            step_fields[first].key, step_fields[i].key, step_fields[i].key);
    }
    if (first >= 0)
        st->edit.kind = (enum attn_edit_kind)(EDIT_CAUSAL + (first - L_EDIT_FIRST));
}
const struct mapping attn_schema_step_map = {"lesson step", step_fields, L_COUNT, finish_step};

void attn_schema_lesson(struct loader *l, const struct field *f, int node, void *base,
                        const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (nd->u.c.count == 0) {
        attn_loader_error(l, node, path,
                          "'lesson' is empty: give at least one step, like - {stage: weights, "
                          "caption: ...}");
        return;
    }
    if (nd->u.c.count > LESSON_MAX_STEPS) {
        attn_loader_error(l, node, path, "'lesson' has %d steps, the limit is %d", nd->u.c.count,
                          LESSON_MAX_STEPS);
        return;
    }
    struct attn_lesson *lesson = attn_lesson_new(nd->u.c.count);
    if (!lesson) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    attn_lesson_unref(s->lesson);
    s->lesson = lesson;
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        if (attn_schema_list_item_map(l, item, path, i, ipath, "step", i + 1, "lesson",
                                      "a mapping like {stage: weights, caption: ...}"))
            attn_schema_walk_map(l, item, &attn_schema_step_map, &lesson->steps[i], ipath);
    }
}

/* ---- lesson: the steps against the scene -------------------------------------------------- */

/* Where a key of step i is, or the step itself. */
static int step_node(struct loader *l, int i, const char *key, char *path)
{
    char step[DIAG_PATH_MAX];
    path_fmt(step, "lesson[%d]", i);
    join(path, step, key);
    const struct loader_key *k = attn_loader_find(l, path);
    if (k)
        return k->value;
    k = attn_loader_find(l, step);
    snprintf(path, DIAG_PATH_MAX, "%s", step);
    return k ? k->value : -1;
}

/* Step i's edit on now, by the rules the explorer makes it with (engine/edit.h); here only
 * where to say what went wrong: at the step's key. Returns 0, or -1 after reporting why the
 * edit cannot be made or leaves the scene invalid. */
static int sim_edit(struct loader *l, struct attn_scene *now, int i)
{
    const struct attn_edit *e = &now->lesson->steps[i].edit;
    if (e->kind == EDIT_NONE)
        return 0;
    char path[DIAG_PATH_MAX];
    int node = step_node(l, i, attn_edit_key(e->kind), path);
    struct diag err;
    struct attn_edit_effects fx;
    if (attn_scene_check_edit(now, e, &err) != 0 || attn_scene_apply_edit(now, e, &fx, &err) != 0) {
        attn_loader_error(l, node, path, "%s", err.msg);
        return -1;
    }
    struct diag_list problems;
    attn_diag_list_init(&problems);
    int rc = 0;
    if (attn_scene_check(now, &problems) > 0) {
        attn_loader_error(l, node, path, "step %d's edit makes the scene invalid: %s", i + 1,
                          problems.n ? problems.items[0].msg : "out of memory");
        rc = -1;
    }
    attn_diag_list_free(&problems);
    return rc;
}

/* "inputs, queries, keys, ...": the stages layer L of s has. */
static void stage_list(char *out, size_t size, const struct attn_scene *s, int layer)
{
    size_t o = 0;
    out[0] = '\0';
    for (int st = 0; st < STAGE_COUNT && o < size; st++)
        if (attn_scene_stage_present(s, layer, (enum attn_stage)st))
            o += (size_t)snprintf(out + o, size - o, "%s%s", o ? ", " : "",
                                  attn_stage_name((enum attn_stage)st));
}

/* What step i shows exists in now: its layer, head, stage, cell or row, and every cell its
 * caption marks. */
static void check_step_view(struct loader *l, const struct attn_scene *now, int i)
{
    const struct attn_lesson_step *st = &now->lesson->steps[i];
    char path[DIAG_PATH_MAX], stages[600];
    int node, heads = now->attn.heads, n = now->n_tokens;
    if (st->layer >= now->layers) {
        node = step_node(l, i, "layer", path);
        attn_loader_error(l, node, path, "layer %d: the scene has %d layer%s (0 to %d)", st->layer,
                          now->layers, now->layers == 1 ? "" : "s", now->layers - 1);
        return;
    }
    if (st->head >= heads) {
        node = step_node(l, i, "head", path);
        attn_loader_error(l, node, path, "head %d: at step %d the scene has %d head%s (0 to %d)",
                          st->head, i + 1, heads, heads == 1 ? "" : "s", heads - 1);
    }
    if (!attn_scene_stage_present(now, st->layer, (enum attn_stage)st->stage)) {
        node = step_node(l, i, "stage", path);
        stage_list(stages, sizeof(stages), now, st->layer);
        attn_loader_error(l, node, path, "the scene has no stage %s%s; its stages: %s",
                          attn_stage_name((enum attn_stage)st->stage),
                          now->layers > 1 ? " in this layer" : "", stages);
        return;
    }
    if (st->panel == LESSON_PANEL_PREDICTIONS && !attn_scene_has_vocab(now)) {
        node = step_node(l, i, "panel", path);
        attn_loader_error(l, node, path,
                          "panel predictions: the scene has no vocabulary model to predict with");
    } else if (st->panel == LESSON_PANEL_TOKENS && !attn_stage_is_square(st->stage)) {
        node = step_node(l, i, "panel", path);
        attn_loader_error(l, node, path,
                          "panel tokens: the token view shows the n\u00d7n stages (scores ... "
                          "weighted_norm), not %s",
                          attn_stage_name((enum attn_stage)st->stage));
    }
    int cols = attn_scene_stage_cols(now, st->layer, (enum attn_stage)st->stage);
    n = attn_scene_stage_rows(now, st->layer, (enum attn_stage)st->stage);
    if (st->row >= n) {
        node = step_node(l, i, st->col >= 0 ? "cell" : "row", path);
        attn_loader_error(l, node, path,
                          "row %d: at step %d the scene has %d tokens (rows 0 to %d)", st->row,
                          i + 1, n, n - 1);
    } else if (st->col >= cols) {
        node = step_node(l, i, "cell", path);
        attn_loader_error(l, node, path, "column %d: the %s matrix has %d columns (0 to %d)",
                          st->col, attn_stage_name((enum attn_stage)st->stage), cols, cols - 1);
    }
    if (!st->caption)
        return;
    struct attn_caption_mark marks[LESSON_MAX_MARKS];
    struct diag err;
    int count = attn_caption_marks(st->caption, marks, LESSON_MAX_MARKS, &err);
    node = step_node(l, i, "caption", path);
    if (count > LESSON_MAX_MARKS) {
        attn_loader_error(l, node, path, "the caption marks %d numbers; a step holds at most %d",
                          count, LESSON_MAX_MARKS);
        return;
    }
    for (int k = 0; k < count && !l->yd.stopped; k++) {
        const struct attn_caption_mark *m = &marks[k];
        int stage = m->stage >= 0 ? m->stage : st->stage;
        if (!attn_scene_stage_present(now, st->layer, (enum attn_stage)stage)) {
            stage_list(stages, sizeof(stages), now, st->layer);
            attn_loader_error(l, node, path,
                              "the mark {%s @ %s ...}: the scene has no stage %s; its "
                              "stages: %s",
                              m->written, attn_stage_name((enum attn_stage)stage),
                              attn_stage_name((enum attn_stage)stage), stages);
            continue;
        }
        int mcols = attn_scene_stage_cols(now, st->layer, (enum attn_stage)stage);
        int mrows = attn_scene_stage_rows(now, st->layer, (enum attn_stage)stage);
        if (m->row >= mrows || m->col >= mcols)
            attn_loader_error(
                l, node, path,
                "the mark {%s @ %s%s%d,%d}: the %s matrix is %d\u00d7%d (rows 0 to %d, "
                "columns 0 to %d)",
                m->written, m->stage >= 0 ? attn_stage_name((enum attn_stage)stage) : "",
                m->stage >= 0 ? " " : "", m->row, m->col, attn_stage_name((enum attn_stage)stage),
                mrows, mcols, mrows - 1, mcols - 1);
    }
}

void attn_schema_check_lesson(struct loader *l)
{
    struct attn_scene *s = l->s;
    if (!s->lesson || l->yd.n > 0 || l->yd.stopped)
        return;
    /* The scene as the steps so far have edited it: each step is checked against that. */
    struct attn_scene now;
    if (attn_scene_copy(&now, s) != 0) {
        attn_loader_error(l, -1, "lesson", "out of memory");
        return;
    }
    for (int i = 0; i < s->lesson->n_steps && !l->yd.stopped; i++) {
        if (sim_edit(l, &now, i) != 0)
            break; /* the steps after it would be checked against a scene the lesson never has */
        check_step_view(l, &now, i);
    }
    attn_scene_free(&now);
}
