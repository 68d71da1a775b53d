/* app: the explorer's state, independent of how it is drawn.
 *
 * struct app holds one part per job (explore/appparts.h): the document (the scene being
 * edited and its undo history), the last valid result, the caches made from it, the view
 * (stage, head, cursor, zoom), the baseline, the lesson, the prompt and the message line. Outside
 * src/explore it is opaque: a front end reads the parts through the accessors below and changes
 * the document only through app_edit_* and commands. Each edit copies the scene onto the undo
 * stack, changes it, checks it and recomputes. An invalid scene (d_out not divisible by heads,
 * ...) keeps the last valid result on screen and sets doc.error. Cursor moves never recompute.
 */
#ifndef ATTNSCOPE_APP_H
#define ATTNSCOPE_APP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/attention.h"
#include "engine/headscore.h"
#include "engine/scene.h"
#include "explore/appparts.h"
#include "explore/title.h"

/* The explorer's state, one part per job (explore/appstate.h): opaque outside src/explore. A
   front end reads a part through its accessor below, never a member of struct app. */
struct app;

/* Opens the explorer's state on s, which it takes in every case (s must have passed
 * attn_scene_check). Returns 0, or -1 with err and *out NULL. *out is set before the first
 * compute, so progress may read the state (compute_seconds, stoppable) while it runs.
 * progress hears of every compute: step 0 as soon as it is asked for, before its parameters are
 * resolved and its buffers made (seconds, for a long one: a front end shows its bar at once),
 * step 0 again when the forward pass starts, then one step a head. */
int app_new(struct app **out, struct attn_scene *s, const char *path,
            const struct progress_sink *progress, struct diag *err);
void app_delete(struct app *a);
/* app_new for an interactive front end: every compute estimated past APP_SYNC_SECONDS runs in a
 * thread of its own (struct app_job), the first one included, so this returns as soon as it is
 * under way. Layer after layer comes ready (app_layer_ready); the front end calls app_poll
 * between frames, draws the layers ready and shows the others as pending. An edit meanwhile
 * stops the compute and starts its own. */
int app_new_background(struct app **out, struct attn_scene *s, const char *path, struct diag *err);
/* True while a background compute runs. */
bool app_computing(const struct app *a);
/* True when layer L of the result is computed (at rest, every layer); app_all_ready: every one.
 * A panel reads a layer's stages only when it is ready. */
bool app_layer_ready(const struct app *a, int layer);
bool app_all_ready(const struct app *a);
/* How far the compute running is. */
struct app_progress {
    bool scoring;                 /* the job scores every head (app_request_scores) */
    bool lens;                    /* the job fills the lens (app_lens_fill) */
    bool baseline;                /* the job computes the baseline (app_toggle_baseline) */
    bool rollout;                 /* the job computes the rollout (app_request_rollout) */
    int ready, layers;            /* layers computed, of how many */
    long heads_done, heads_total; /* the forward pass's heads (0 of 0 until it starts) */
    double ms;                    /* since it was asked for; 0 at rest */
};
void app_compute_progress(const struct app *a, struct app_progress *out);
/* Between frames: joins a compute that is through and makes what its end makes (the note of a
 * value that is not a number, the ablation's clean run). 0: nothing new; 1: a layer came ready;
 * 2: the compute ended. */
int app_poll(struct app *a);
/* Stream mode: the layer in view pinned and, when it holds no stages, recomputed (a job while
 * none runs). The screen manager calls it before each frame, so nothing draws a layer unheld. */
void app_show_layer(struct app *a);
/* Stream mode (net.h's stage_budget): the model view asks for every layer's tiles pooled as key
 * says (its generation is filled in here); a job makes them (JOB_THUMBS) when no other runs, else
 * the next call asks again. app_thumbs: the walk when it is for key (else NULL), and in *done the
 * layers it has published (their tiles readable). */
struct app_thumb_key;
struct app_thumb_walk;
void app_request_thumbs(struct app *a, const struct app_thumb_key *key);
const struct app_thumb_walk *app_thumbs(const struct app *a, const struct app_thumb_key *key,
                                        int *done);
/* Waits for the compute running, if any: for what needs every layer at once and cannot show
 * them as they come (the shift demo's note, a lesson step's quotes). */
void app_wait(struct app *a);
/* Esc or C-c (key, as the message names it) while a compute runs: it is stopped and its edit
 * taken back, the result before it on screen at once, when that result was kept
 * (result.stoppable); else the message line says why it cannot stop, and it goes on. 1: stopped;
 * -1: it cannot stop; 0: nothing runs. */
int app_stop_compute(struct app *a, const char *key);

/* The parts, read-only: what panels draw. */
const struct app_doc *app_doc(const struct app *a);
const struct app_result *app_result(const struct app *a);
const struct app_caches *app_caches(const struct app *a);
const struct app_view *app_view_state(const struct app *a);
const struct app_baseline *app_baseline(const struct app *a);
const struct app_lesson *app_lesson(const struct app *a);
const struct app_prompt *app_prompt(const struct app *a);
const struct app_status *app_status(const struct app *a);
const struct keymap *app_keymap(const struct app *a);
/* The parts a front end changes: the view (cursor moves, modes: never a recompute) and the
   message line. The caches fill through the functions below, the document through app_edit_*
   and commands. */
struct app_view *app_view_mut(struct app *a);
struct app_status *app_status_mut(struct app *a);
/* The front end's keys (so a message names the key as bound) and the sink an export reports
   to. */
void app_set_keymap(struct app *a, const struct keymap *keymap);
void app_set_export_progress(struct app *a, const struct progress_sink *progress);

/* The layer on screen: its parameters and stages. */
const struct attn_model *app_model(const struct app *a);
/* The net on screen: the result's, or an encoder-decoder's encoder (view.encoder, E). Its
 * layers are what the view's layer indexes; edits and predictions are the result's own. */
const struct attn_net *app_net(const struct app *a);
/* E: an encoder-decoder's encoder on screen, or its decoder again. Returns false (refused, with
 * the reason noted) for a scene of one sequence. */
bool app_toggle_encoder(struct app *a);
/* The token of row i of the stage shown (a cross-attention's K and V: the source's), and of
 * column j of a square stage (the keys': the source's in cross-attention). */
const char *app_row_token(const struct app *a, int i);
const char *app_col_token(const struct app *a, int j);
const struct attn_run *app_run(const struct app *a);

/* What the heatmap shows: the current head's matrix, or with head_mean the mean over every
 * head (per-head stages), computed on first use and kept until the result or view changes. */
struct attn_mat_view app_shown_view(struct app *a);
/* True when the heatmap shows the mean over the heads. */
bool app_showing_mean(const struct app *a);

/* B: pins the state on screen as the baseline, or unpins it. Returns 1 when it pinned, 0
 * when it unpinned, -1 when it refused (the message line says why), 2 when the baseline's own
 * result computes in the background (it is pinned when that job ends). Either way the views are
 * drawn again (generation moves on). */
int app_toggle_baseline(struct app *a);
/* Pins other (taken: freed here whatever happens), a scene of its own such as another
 * checkpoint of the model on the same text, as the baseline, named name in the Δ heading.
 * Returns 1 pinned, 2 computing (pinned when it ends), -1 refused (the message line says why). */
int app_pin_baseline_scene(struct app *a, struct attn_scene *other, const char *name);
/* The baseline's matrix of the stage, head and layer on screen; rows = cols = 0 when the
 * baseline has no such layer, stage or head. Only while pinned. */
struct attn_mat_view app_base_view(const struct app *a);
/* The mean |current − baseline| over the finite cells of stage s of head h of layer L (the model
 * view's number a head: two checkpoints of one model, how far training moved it); NAN when no
 * baseline is pinned, either side lacks the stage or head, or the shapes differ. */
float app_base_change(const struct app *a, int L, enum attn_stage s, int h);
bool app_baseline_pinned(const struct app *a);
/* True when a baseline is pinned and its matrix on screen has the current one's shape: the
 * heatmap then shows Δ (one head's, not the mean over the heads). */
bool app_delta_ok(const struct app *a);
bool app_showing_delta(const struct app *a);
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
/* The lens's top tokens of positions first .. first + count - 1 through every layer, at the
 * temperature, into the interp cache (interp_lens_fill: once per result and temperature; read
 * them with interp_lens_top on app_caches(a)->interp). Returns 0, or -1 with err. In the
 * background mode positions not yet filled are filled by a job: 1, the cache not to be read
 * until it ends (app_interp_busy). */
int app_lens_fill(struct app *a, int first, int count, struct diag *err);
/* True while a job writes the interp cache (the lens, the rollout): what reads it waits. */
bool app_interp_busy(const struct app *a);
/* In the background mode, with the rollout on screen (r): its product through the layer on
 * screen, when not kept, computed by a job (a layer's worth of n x n products from layer 0: 120
 * ms at layer 11 of 1,016 tokens); the map shows it pending meanwhile. 1: started. */
int app_request_rollout(struct app *a);
/* The cursor row's prediction before -> after the ablations (interp_compare), kept. Returns 0, or
 * -1 when nothing is ablated or a computation failed (err). */
int app_prediction_compare(struct app *a, struct interp_compare *out, struct diag *err);
/* The heatmap's blocks as last laid out, which the inspector explains; NULL: no blocks (the
 * numbers themselves). */
void app_set_zoom_shown(struct app *a, const struct zoom_grid *grid);
/* The mode head h of layer L is ablated in (HEAD_KEEP: not) in the result on screen. */
enum attn_head_mode app_head_mode(const struct app *a, int layer, int head);
/* How many heads the result on screen ablates. */
int app_ablated_count(const struct app *a);

/* In the background mode: every head not yet scored is scored in the job's thread (the model
 * view's S: 144 heads of 1,016 tokens take a second), unless a compute runs (the end of a
 * forward pass asks again while the model view shows a score). 1: started. */
int app_request_scores(struct app *a);
/* Head h of layer L's scores when they are made, NULL when not yet: what a view of every head
 * draws, never computing 144 of them on a frame. */
const struct head_scores *app_scores_kept(const struct app *a, int layer, int head);
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
/* An encoder-decoder's source replaced by text (the encoder reads it; the target stays). */
int app_edit_source(struct app *a, const char *text);
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
/* g: the next token appended, chosen from the last position's logits as `generate` chooses it
 * (engine/generate.h): greedy at the predictions' temperature 1, else sampled at it from the
 * scene's seed. An edit of the sentence (u takes it away), its row of every layer computed by
 * the last-word path; the cursor goes to the row that chose it, so the predictions panel shows
 * that step's distribution with the token chosen marked. The end-of-text token is said, not
 * appended. Returns 0, or -1 refused (said on the message line). */
int app_generate(struct app *a);
/* G: count tokens, each step once the one before is computed (app_generate_tick); any key stops
 * (app_generate_stop). */
int app_generate_many(struct app *a, int count);
bool app_generating(const struct app *a);
/* The next step of G when its result is in: 1 when it made one, else 0. */
int app_generate_tick(struct app *a);
/* G stopped by key (its name, for the message line). */
void app_generate_stop(struct app *a, const char *key);
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

/* What leaves the program is a fresh computation's, bit for bit: the compute running waited
 * for, and the near rows of a last-word edit (attn_net_forward_exact) computed on the panels. */
void app_exact(struct app *a);
/* Export of the current result / save of the edited scene (atomic writes). A scene with a
 * lesson is saved as the scene on screen without its lesson. */
int app_export(struct app *a, const char *dir, struct diag *err);
int app_save(struct app *a, const char *path, bool overwrite, struct diag *err);

#endif
