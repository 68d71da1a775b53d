/* app: the explorer's state, independent of how it is drawn.
 *
 * struct app holds the scene being edited, its undo history, the last valid result and the
 * view (stage, head, cursor). Edits go through app_edit_*: each one copies the scene onto the
 * undo stack, changes it, checks it and recomputes. An invalid scene (d_out not divisible by
 * heads, ...) keeps the last valid result on screen and sets app->doc.error. Cursor moves never
 * recompute.
 */
#ifndef ATTNSCOPE_APP_H
#define ATTNSCOPE_APP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"
#include "engine/attention.h"
#include "engine/headscore.h"
#include "engine/model.h"
#include "engine/net.h"
#include "engine/scene.h"
#include "explore/interp.h"
#include "explore/title.h"
#include "explore/zoom.h"
#include "palette/palette.h" /* enum color_scale: how the heatmap maps values to colours */

struct keymap; /* explore/keys.h */

#define APP_UNDO_MAX     100
#define APP_TEXT_MAX     65536 /* characters a prompt holds: an 8192-token sentence fits */
#define APP_UNDO_BYTES   ((size_t)256 << 20)    /* copies kept for undo, each way */
#define APP_PROMPT_BYTES (4 * APP_TEXT_MAX + 1) /* a prompt's text in UTF-8, with its NUL */

/* The knobs Tab selects and + - change. The temperature is the predictions' (a view, not an
 * edit of the scene: no undo), and a knob only on a scene with a vocabulary model. */
enum knob {
    KNOB_SEED,
    KNOB_D_OUT,
    KNOB_HEADS,
    KNOB_DROPOUT,
    KNOB_DIM,
    KNOB_TEMPERATURE,
    KNOB_COUNT
};

/* Past this many tokens a scene opens zoomed out to its overview, on the per-row scale. */
#define APP_LONG_TOKENS 64

/* The document: the scene as edited and its history. Every edit goes through app_edit_*. */
struct app_doc {
    struct attn_scene scene; /* as edited; may be invalid (then error is set) */
    char *scene_path;        /* file it came from, NULL for the built-in scene */
    /* The history, on the heap (APP_UNDO_MAX scenes each way, allocated by app_init), so that
     * struct app is small enough for a caller's stack. */
    struct attn_scene *undo;
    int n_undo;
    struct attn_scene *redo;
    int n_redo;
    char error[DIAG_MSG_MAX]; /* the edit problem on screen, "" when none */
    /* The scene's result is not on screen (an invalid combination typed, a compute that failed):
       the last valid result is. Such a scene never enters the undo or redo history, so undo
       always lands on a state that was shown. */
    bool unshown;
    int saved_depth;           /* n_undo when the scene was opened or last saved; -1 when
                                  that state fell off the undo history */
    struct attn_scene written; /* the scene as opened or last saved: what its title describes */
    int d_out_before_none;     /* d_out to restore when the projection cycles away from none */
    int heads_before_none;     /* and the head count, which none may have moved */
    /* Every edit, undo and redo counts one: a lesson step's scene is untouched while this is what
       the step left it at. */
    unsigned long edits;
};

/* The result: the last valid scene's forward pass, and the generation every cache is keyed by. */
struct app_result {
    struct attn_scene shown;              /* the scene the result belongs to (the last valid one) */
    struct attn_net net;                  /* last valid result: every layer */
    struct progress_sink export_progress; /* told of an export's heads (the front end's) */
    bool have_result;
    unsigned long generation; /* bumped on every recompute, so views can cache */
    /* The compute running now (or last): how long it was estimated to take here, and whether
       the engine's stop flag may end it: one long enough to show its progress (past
       PROGRESS_QUIET_MS) with room for two results, or the first; then the previous result
       stays whole, or there is none to keep. When such a compute cannot stop, stop_note says
       why ("no room for two results (2 × 640 MiB, limit 1100 MiB)"; "" otherwise). */
    double compute_seconds;
    bool stoppable;
    char stop_note[160];
    /* The result on screen holds a value that is not a number: where the forward pass made the
       first ("not a number: nan at layer 0, head 1, queries_rotated, row 2 (“cat”), column 5"),
       standing while that result is shown; "" when every value is a number. */
    char nonfinite[DIAG_MSG_MAX];
};

/* The pattern scores of every head (layers * heads) of the result, each on first use. */
struct app_score_cache {
    struct head_scores *scores;
    unsigned char *scored; /* 1 once scores[i] is this result's */
};

/* The mean over the heads of a per-head stage (A), which BertViz users ask for: computed once
   per result, layer and stage, not on cursor moves. */
struct app_mean_cache {
    float *values;
    size_t cap;
    unsigned long generation;
    int layer, stage;
};

/* The Δ of the matrix on screen against the baseline, made once per result and view, never on a
   cursor move. */
struct app_delta_cache {
    float *values;
    size_t cap;
    unsigned long generation;
    int layer, stage, head;
};

/* What is computed from the result and kept between frames. Each cache is keyed by the result's
   generation (and the view it was made for) and has its own invalidation (app.c). */
struct app_caches {
    struct app_score_cache score;
    struct app_mean_cache mean;
    struct app_delta_cache delta;
    /* What a head does for the prediction (explore/interp.h): once per result (and position,
       and temperature): a cursor move costs at most a row of logits, never a forward pass. */
    struct interp_cache interp;
    struct zoom_grid zoom; /* the heatmap's blocks as last laid out, which the inspector
                              explains (all zero when none is drawn yet) */
};

/* The view: what is on screen and where the cursor is. Changing it never recomputes. */
struct app_view {
    int layer; /* the layer on screen */
    enum attn_stage stage;
    int head;
    int row, col;    /* cursor in the current matrix */
    int col_want;    /* the column asked for, kept across stages of other widths */
    bool all_heads;  /* small multiples of every head */
    bool token_view; /* the token view (explore/tokenview.h) in place of the inspector */
    bool playing;    /* auto-play through the stages */
    int play_ms;     /* one stage every play_ms while playing */
    enum knob knob;  /* which knob + and - change */
    int score_shown; /* the head score the model view colours by, or -1 */
    char find[256];  /* the last token looked for (/, n) */
    enum color_scale color_scale;
    /* The heatmap's zoom (z Z): 0 fully in, a number a value; from 1 up, coloured cells, each a
       block of up to `zoom` values a side (explore/zoom.h), showing their max or mean (b);
       ZOOM_OVERVIEW: the whole matrix, whatever the area. */
    int zoom;
    enum block_agg block_agg;
    int palette_scale, palette_diverging; /* the scales colors.yaml chose (indices into
                                             scale_names, diverging_names): the front end sets
                                             them; pictures (R) draw with the same */
    bool head_mean;                       /* the mean over the heads of a per-head stage (A) */
    /* On a scene with a vocabulary model: the predictions panel (p) in place of the inspector,
       the logit lens (y) in place of the map, at a temperature (a knob); and, on any scene, the
       attention rollout (r) through the layer on screen in place of the stage. Views, not
       edits. */
    bool predictions;
    bool lens;
    bool rollout;
    double temperature;
};

/* The baseline (B): a pinned state later edits are compared with, Δ = current − baseline. It
   keeps the pinned scene and its own result (every layer, head and kept stage), not a copy of
   the matrices on screen: the Δ then follows the view to any stage, head or layer, and the
   describe-change text needs the scene anyway. The price is a second result: at 1024 tokens ×
   12 heads a layer's kept scores and weights are ~96 MB, so pinning is refused when twice the
   scene's memory estimate passes the memory limit. */
struct app_baseline {
    bool pinned;
    struct attn_scene scene;
    struct attn_net net;
};

/* Lesson mode (explore/lessonmode.h): the scene's steps, one at a time, with their captions. */
struct app_lesson {
    struct attn_lesson *lesson; /* the scene's (a reference of its own), or NULL */
    bool on;                    /* in lesson mode: the caption shows, the lesson keys step */
    int step;                   /* the step shown (kept while out of lesson mode) */
    unsigned long edits;        /* doc.edits when the step's scene was set */
    struct attn_scene *at;      /* (n_steps) the scene at each step reached: after edits of
                                   the user's own, the lesson goes on from there */
    unsigned char *reached;     /* (n_steps) at[i] is set */
    unsigned char *changed;     /* (n_steps) step i's edit changed the scene: one undo step */
};

/* What an open prompt is about (explore/commands): the knob it sets, the path a y/n question
 * confirms, and the text it opened with (Enter on it unchanged edits nothing). */
struct app_prompt {
    enum knob knob;
    char path[1024];
    char *initial;  /* (APP_PROMPT_BYTES) UTF-8 of a prompt's text; allocated by app_init */
    char *sentence; /* t on a pair (text: [A, B]): sentence A as typed, while B is asked;
                       NULL otherwise */
    char *text;     /* a sentence too long for the model, while asked what to keep */
};

/* The message line's transient note (where export wrote, ...). */
struct app_status {
    char message[DIAG_MSG_MAX];
    bool message_is_error; /* the note reports a refused input, not an invalid scene */
};

/* The explorer's state, one part per job. */
struct app {
    struct app_doc doc;
    struct app_result result;
    struct app_caches cache;
    struct app_view view;
    struct app_baseline base;
    struct app_lesson lesson;
    struct app_prompt prompt;
    struct app_status status;
    /* The front end's keys (explore/keys.h), so a message names the key a user's keys.yaml
       binds ("i explores freely"); NULL: the default keys. */
    const struct keymap *keymap;
};

/* Takes ownership of s (which must have passed attn_scene_check). Returns 0 or fills err.
 * progress hears of every compute: step 0 as soon as it is asked for, before its parameters are
 * resolved and its buffers made (seconds, for a long one: a front end shows its bar at once,
 * with compute_seconds and stoppable set), step 0 again when the forward pass starts, then
 * one step a head. */
int app_init(struct app *a, struct attn_scene *s, const char *path,
             const struct progress_sink *progress, struct diag *err);
void app_free(struct app *a);

/* The layer on screen: its parameters and stages. */
static inline const struct attn_model *app_model(const struct app *a)
{
    return &a->result.net.model[a->view.layer];
}
static inline const struct attn_run *app_run(const struct app *a)
{
    return &a->result.net.run[a->view.layer];
}

/* What the heatmap shows: the current head's matrix, or with head_mean the mean over every
 * head (per-head stages), computed on first use and kept until the result or view changes. */
struct attn_mat_view app_shown_view(struct app *a);
/* True when the heatmap shows the mean over the heads. */
static inline bool app_showing_mean(const struct app *a)
{
    return a->view.head_mean && !a->view.rollout && attn_stage_is_per_head(a->view.stage) &&
           a->result.net.model[a->view.layer].heads > 1;
}

/* B: pins the state on screen as the baseline, or unpins it. Returns 1 when it pinned, 0
 * when it unpinned, -1 when it refused (the message line says why). Either way the views are
 * drawn again (generation moves on). */
int app_toggle_baseline(struct app *a);
/* The baseline's matrix of the stage, head and layer on screen; rows = cols = 0 when the
 * baseline has no such layer, stage or head. Only while pinned. */
struct attn_mat_view app_base_view(const struct app *a);
/* True when a baseline is pinned and its matrix on screen has the current one's shape: the
 * heatmap then shows Δ (one head's, not the mean over the heads). */
bool app_delta_ok(const struct app *a);
static inline bool app_showing_delta(const struct app *a)
{
    return a->base.pinned && !a->view.rollout && !app_showing_mean(a) && app_delta_ok(a);
}
/* Why no Δ can be shown, for the message line ("" when it can, or nothing is pinned):
 * "baseline 6×6, now 8×8: shapes differ, no Δ (B unpins)". */
void app_delta_problem(char *out, size_t size, const struct app *a);
/* What changed since the baseline, the edits' own words ("seed 123 → 7"; "" for nothing). */
void app_baseline_change(char *out, size_t size, const struct app *a);

/* True when the result on screen can say what comes next: a vocabulary model (engine/logits.h). */
bool app_has_vocab(const struct app *a);
/* The attention rollout through the layer on screen (the map with r), kept per result and
 * layer; rows = 0 when it could not be computed (out of memory: the message line says so). */
struct attn_mat_view app_rollout_view(struct app *a);
/* The predictions of the cursor's row: at the lens's pick (the layer on screen) in the lens
 * view, else the model's own (the last layer), at the temperature; kept (explore/interp.h).
 * NULL with err without a vocabulary. *layer gets the layer read. */
const struct attn_predictions *app_predictions(struct app *a, int *layer, struct diag *err);
/* The mode head h of layer L is ablated in (HEAD_KEEP: not) in the result on screen. */
enum attn_head_mode app_head_mode(const struct app *a, int layer, int head);
/* How many heads the result on screen ablates. */
int app_ablated_count(const struct app *a);

/* The pattern scores of head h in layer L (engine/headscore.h), computed the first time they
 * are asked for after a result (a pass over the head's n x n weights, a log each: 16 heads of
 * 1024 tokens took 80 ms, paid up front by every edit before) and kept until the next. */
const struct head_scores *app_scores(const struct app *a, int layer, int head);

/* Rows and columns of the matrix at the current stage and head. */
int app_rows(const struct app *a);
int app_cols(const struct app *a);
struct attn_mat_view app_view(const struct app *a, enum attn_stage s, int head);
/* Clamps head and cursor after the shape changed. */
void app_clamp(struct app *a);
/* Shows layer L (0 .. net.layers - 1), keeping the stage when that layer has it. */
void app_set_layer(struct app *a, int layer);
/* The matrix of stage s, head h in layer L (the model view draws every layer). */
struct attn_mat_view app_view_at(const struct app *a, int layer, enum attn_stage s, int head);

/* Every edit: pushes undo, applies, checks, recomputes. Returns 0 when the new scene is valid,
 * -1 when it is not (the result stays, a->doc.error says why). */
int app_edit_text(struct app *a, const char *text);
/* A pair's two sentences at once (BERT's text: [A, B]); pair "" makes it one sentence. */
int app_edit_text_pair(struct app *a, const char *text, const char *pair);
int app_edit_knob(struct app *a, enum knob k, double value);
int app_edit_seed(struct app *a, uint64_t seed);
/* Moves every token's position to offset + i; every parameter stays as it is. */
int app_edit_offset(struct app *a, int offset);
/* Refuses an input without touching the scene: the message line shows why. */
void app_refuse(struct app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int app_step_knob(struct app *a, enum knob k, int direction);
int app_toggle_causal(struct app *a);
int app_cycle_projection(struct app *a);
int app_cycle_layout(struct app *a);
int app_cycle_mask_mode(struct app *a);
int app_toggle_scale(struct app *a); /* \u221ad_k (or the given divisor) <-> none */
/* Scaling as a scene file gives it: SCALE_SQRT_DK, SCALE_NONE, or SCALE_DIVISOR by divisor. */
int app_edit_scale(struct app *a, enum attn_scale_kind kind, double divisor);
/* The whole scene replaced by another version of it (a lesson step's), as one edit. */
int app_edit_scene(struct app *a, const struct attn_scene *to);
int app_cycle_normalize(struct app *a); /* softmax <-> sum */
int app_cycle_tokenizer(struct app *a); /* whitespace -> words -> chars, the text again */
/* Head h of layer L ablated as mode (HEAD_ZERO, HEAD_MEAN) or not (HEAD_KEEP): an edit of the
 * scene's ablate: list, with its undo step (engine/edit.h, EDIT_ABLATE). */
int app_set_ablation(struct app *a, int layer, int head, enum attn_head_mode mode);
/* X: the head on screen (the selected tile of the model view) goes off -> zero -> mean -> off. */
int app_cycle_ablation(struct app *a);
/* The temperature of the predictions and the lens, from INTERP_T_MIN to INTERP_T_MAX: a view
 * setting, no edit (no undo step, no recompute). Returns 0, or -1 refused (message). */
int app_set_temperature(struct app *a, double t);
/* A temperature as the header shows it: "1.0", "0.7", "1.25" (at most 2 decimals). */
void app_temperature_text(char *out, size_t size, double t);
int app_undo(struct app *a);
int app_redo(struct app *a);
/* Bytes an undo step's copy of s owns, what APP_UNDO_BYTES counts: the scene and what
 * attn_scene_copy allocates for it (attn_scene_owned_bytes: every field engine/scene_fields.h
 * lists). Not what it borrows from a checkpoint (GPT-2 small's 154 MB embedding table): every
 * copy shares that with the open scene, so an undo step costs none of it. */
size_t app_undo_step_bytes(const struct attn_scene *s);

double app_knob_value(const struct app *a, enum knob k);
/* The knob's value as the header shows it and its prompt starts with ("123", "0.5"). */
void app_knob_text(char *out, size_t size, const struct app *a, enum knob k);
const char *knob_name(enum knob k);
/* The knob as the header and the panels' titles name it: its name, "temp" for the temperature
 * (a `T` there read as the key T, which cycles the tokenizer). */
const char *knob_label(enum knob k);
/* True when knob k applies to the scene (the temperature: a vocabulary model): the header shows
 * it and Tab stops at it. */
bool app_knob_shown(const struct app *a, enum knob k);

/* The scene the title was written for: as a lesson step left it (its edits are the lesson's),
 * else as opened or last saved. */
const struct attn_scene *app_title_written(const struct app *a);
/* The title to show for s (the scene, or the result's scene for a picture), true after any
 * edit (explore/title.h); from gets "edited from “...”" when the title was replaced. */
enum title_kind app_title(char *out, size_t size, char *from, size_t from_size, const struct app *a,
                          const struct attn_scene *s);

/* True when x and y agree in everything the explorer's edits change (the sentence, the seed,
 * the shape, the mask, ...): an edit and its undo leave the scene alike. */
bool app_scenes_alike(const struct attn_scene *x, const struct attn_scene *y);

/* True when the scene differs from the one opened or last saved (undo back to it: false). A
 * lesson step's own scene, untouched since the step set it, is not the user's edit: false. */
bool app_unsaved(const struct app *a);

/* Export of the current result / save of the edited scene (atomic writes). A scene with a
 * lesson is saved as the scene on screen without its lesson. */
int app_export(struct app *a, const char *dir, struct diag *err);
int app_save(struct app *a, const char *path, bool overwrite, struct diag *err);

#endif
