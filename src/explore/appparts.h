/* appparts: the parts of the explorer's state, one struct per job (the document, the result, the
 * caches, the view, the baseline, the lesson, the prompt, the message line). struct app
 * (explore/appstate.h) holds one of each; a front end reads them through app.h's accessors.
 */
#ifndef ATTNSCOPE_EXPLORE_APPPARTS_H
#define ATTNSCOPE_EXPLORE_APPPARTS_H

#include <pthread.h>
#include <signal.h>
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

/* A forward pass computing in a thread of its own (app_new_background), while the explorer's
 * thread shows the layers it has done and answers every key. What each thread may touch:
 * - the job's thread runs attn_net_forward_pending on result.net: it writes the runs of the
 *   layers not yet ready and the inputs (model x) of the layers after them, the members of
 *   the net it moves layers_ready on with, and the counters here (atomically);
 * - the explorer's thread reads the models (their shapes, tokens, parameters: resolved before
 *   the thread starts, never written by it) and the runs of the layers ready
 *   (app_layer_ready), and never calls into the net otherwise until app_poll has joined the
 *   thread; an edit first stops and joins it (job_cancel). Lazy parameters are widened into a
 *   buffer of the thread's own (attn_param_cache_worker), and the engine's pool serves
 *   whichever thread asks first, running the other's tasks on that thread itself.
 * - in stream mode (net.h's stage_budget) a job that computes layers (the pass, JOB_LAYER, the
 *   scores, the rollout) may take any layer's stage set but the pinned one's (stage_pin, the
 *   layer in view, set only while no job runs): meanwhile the explorer reads the stages of that
 *   layer alone (app_layer_ready), and what every layer keeps (its keys and values, what it
 *   hands on) of the layers ready.
 * tests/test_app_async.c checks this under ThreadSanitizer (scripts/test). */
enum app_job_kind {
    JOB_FORWARD,  /* the forward pass of a result: layer after layer comes ready */
    JOB_SCORES,   /* every head's pattern scores, into the score cache (the model view's S) */
    JOB_LENS,     /* the logit lens of the positions in view through every layer (y), into the
                     interp cache, which nothing else reads meanwhile (app_interp_busy) */
    JOB_BASELINE, /* the baseline's own result (B), pinned when it ends */
    JOB_ROLLOUT,  /* the attention rollout through the layer on screen (r), into the interp
                     cache (app_interp_busy) */
    JOB_LAYER,    /* stream mode (net.h's stage_budget): the layer in view's stages again
                     (attn_net_materialise) */
    JOB_THUMBS,   /* stream mode: the model view's tiles of every layer, each shown again in
                     turn, into the cache's thumbs (the grid copies each layer published) */
};

/* What JOB_THUMBS pools: the result's generation, the stage, block_agg, the tiles' cells and the
 * tiles a layer has (its heads, or 1 for a stage they share). */
struct app_thumb_key {
    unsigned long generation;
    int stage, agg, rows, cols, per_layer;
};

/* JOB_THUMBS's tiles, layer by layer: the job writes layer L's, then publishes layers_done = L + 1
 * with release order; the explorer's thread reads the layers published (app_thumbs). The pinned
 * layer is left to the grid, which pools it itself (the job never reads its stages). */
struct app_thumb_walk {
    struct app_thumb_key key;
    bool valid;
    float *cells;    /* (layers x per_layer, rows, cols) */
    float *lo, *hi;  /* (layers x per_layer) each tile's finite range */
    int layers_done; /* atomic */
    int skipped;     /* the layer it left to the grid (the pinned one), -1 none */
};

/* The stage sets the explorer's result may keep (MiB; ATTNSCOPE_STAGE_MIB sets another, 0 keeps
 * every layer's): GPT-2 small's set is 141 MB at 1,016 tokens (so two, the least there is) and
 * 8.9 MB at 128 (three of its 12 layers); every layer of the book's scenes and lessons fits, and
 * nothing changes for them. A layer shown again costs its share of the pass: 1 ms at 128
 * tokens, 150 ms at 1,016. */
#define APP_STAGE_MIB 32

struct app_job {
    enum app_job_kind kind;
    bool background; /* computes past APP_SYNC_SECONDS run in the job's thread */
    bool running;    /* a thread computes result.net now (app_poll joins it once finished) */
    pthread_t thread;
    volatile sig_atomic_t stop;   /* set, atomically, to end the pass early: an edit replaced it */
    int finished;                 /* set by the thread, atomically, as it ends */
    int rc;                       /* the pass's: 0, or -1 when stopped */
    long heads_done, heads_total; /* the pass's progress, stored atomically */
    double started_ms;            /* when it was asked for (a monotonic clock) */
    int seen_ready;               /* layers ready at the last app_poll */
    struct attn_backing *backing; /* the checkpoint it reads (its own widening buffer) */
    int pause_ms; /* ATTNSCOPE_HEAD_PAUSE_MS: the thread's pause after each head (the tests) */
    int lens_first, lens_count; /* JOB_LENS: the positions, at the temperature lens_t */
    int rollout_layer;          /* JOB_ROLLOUT: through this layer */
    int layer;                  /* JOB_LAYER: the layer recomputed */
    double lens_t;
    struct diag err; /* JOB_LENS: why it failed (rc -1) */
};

/* Computes estimated under this many seconds run on the explorer's thread even in the
 * background mode: they are done before a frame is (the book's scenes, every lesson step of a
 * small one), so nothing on screen is ever pending for them. */
#define APP_SYNC_SECONDS 0.008

/* The result: the last valid scene's forward pass, and the generation every cache is keyed by. */
struct app_result {
    struct attn_scene shown; /* the scene the result belongs to (the last valid one) */
    struct attn_net net;     /* last valid result: every layer */
    /* While a compute runs in the background: the result before it, which net borrows from
       (and, when the compute is stoppable, whole: Esc goes back to it). Empty otherwise. */
    struct attn_net prev;
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
    bool restoring;    /* the compute app_stop_compute starts after undoing the edit it stopped:
                          it cannot stop by undoing (that would undo the edit before) */
    bool stop_by_undo; /* stoppable by computing the scene before it again (a sentence edit
                          that keeps rows computes in place: app_stop_compute) */
    char stop_note[160];
    /* The result on screen holds a value that is not a number: where the forward pass made the
       first ("not a number: nan at layer 0, head 1, queries_rotated, row 2 (“cat”), column 5"),
       standing while that result is shown; "" when every value is a number. */
    char nonfinite[DIAG_MSG_MAX];
    struct app_job job; /* the pass computing in the background, if any */
};

/* The pattern scores of every head (layers * heads) of the result, each on first use: one head
   at a time on the explorer's thread, every head by a JOB_SCORES job, which sets scored[i] with
   release order once scores[i] is written. */
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
    struct app_thumb_walk thumbs;
};

/* The view: what is on screen and where the cursor is. Changing it never recomputes. */
struct app_view {
    int layer;    /* the layer on screen */
    bool encoder; /* an encoder-decoder's encoder on screen (E), not its decoder */
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
    /* pinned from another scene (app_pin_baseline_scene: another checkpoint of the model), named
       so; "" when it is a state of this one */
    char from[96];
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
    bool source;    /* t in the encoder (E): the sentence asked is an encoder-decoder's source */
};

/* G: the tokens a run of generation still has to write, one step after each result. */
struct app_generate {
    int left; /* 0: not generating */
    int done; /* of this run */
    int asked;
    double t0_ms; /* when the run began: its tokens a second */
};

/* The message line's transient note (where export wrote, ...). */
struct app_status {
    char message[DIAG_MSG_MAX];
    bool message_is_error; /* the note reports a refused input, not an invalid scene */
};

#endif
