/* app: scene editing, undo and recompute for the explorer (see app.h). No curses here. */
#include "explore/app.h"
#include "explore/appstate.h"
#include "explore/zoom.h"

#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cnum.h"
#include "common/progress.h"
#include "engine/lesson.h"
#include "engine/rng.h"
#include "engine/tokenize.h"
#include "export/export.h"
#include "scenefile/scenefile.h"

static const char *const knob_names[KNOB_COUNT] = {"seed",    "d_out", "heads",
                                                   "dropout", "dim",   "temperature"};

const char *knob_name(enum knob k)
{
    return k >= 0 && k < KNOB_COUNT ? knob_names[k] : "?";
}

const char *knob_label(enum knob k)
{
    return k == KNOB_TEMPERATURE ? "temp" : knob_name(k);
}

/* The caches (struct app_caches), each with its own invalidation. Each is keyed by the
   result's generation and the view it was made for; generation 0 names no result (the first
   compute makes 1), so an invalidated cache never matches. */

/* A new result: every head unscored, room for count heads. False: out of memory, and no scores
   at all rather than stale ones (app_scores: undefined). */
static bool score_cache_invalidate(struct app_score_cache *c, size_t count)
{
    struct head_scores *sc = realloc(c->scores, count * sizeof(*sc));
    if (sc)
        c->scores = sc;
    unsigned char *done = sc ? realloc(c->scored, count) : NULL;
    if (!sc || !done) {
        free(c->scores);
        free(c->scored);
        c->scores = NULL;
        c->scored = NULL;
        return false;
    }
    c->scored = done;
    memset(c->scored, 0, count);
    return true;
}

static void score_cache_free(struct app_score_cache *c)
{
    free(c->scores);
    free(c->scored);
    *c = (struct app_score_cache){0};
}

static bool mean_cache_holds(const struct app_mean_cache *c, unsigned long gen, int layer,
                             int stage)
{
    return c->values && c->generation == gen && c->layer == layer && c->stage == stage;
}

static void mean_cache_invalidate(struct app_mean_cache *c)
{
    c->generation = 0; /* the buffer stays for the next */
}

static void mean_cache_free(struct app_mean_cache *c)
{
    free(c->values);
    *c = (struct app_mean_cache){0};
}

static bool delta_cache_holds(const struct app_delta_cache *c, unsigned long gen, int layer,
                              int stage, int head)
{
    return c->values && c->generation == gen && c->layer == layer && c->stage == stage &&
           c->head == head;
}

static void delta_cache_invalidate(struct app_delta_cache *c)
{
    c->generation = 0;
}

static void delta_cache_free(struct app_delta_cache *c)
{
    free(c->values);
    *c = (struct app_delta_cache){0};
}

/* The heatmap lays its blocks out again on its next draw. */
static void zoom_cache_invalidate(struct zoom_grid *g)
{
    *g = (struct zoom_grid){0};
}

/* A new result (or baseline): whatever was made from the last one is stale. The interp cache
   keys itself by generation (explore/interp.h); the score cache is sized for the new result in
   recompute. */
static void caches_invalidate(struct app_caches *c)
{
    mean_cache_invalidate(&c->mean);
    delta_cache_invalidate(&c->delta);
}

static void thumb_walk_free(struct app_thumb_walk *w)
{
    free(w->cells);
    free(w->lo);
    free(w->hi);
    *w = (struct app_thumb_walk){0};
}

static void caches_free(struct app_caches *c)
{
    thumb_walk_free(&c->thumbs);
    score_cache_free(&c->score);
    mean_cache_free(&c->mean);
    delta_cache_free(&c->delta);
    interp_cache_free(&c->interp);
    zoom_cache_invalidate(&c->zoom);
}

/* ---- the background compute (struct app_job) ------------------------------------------- */

static _Thread_local bool job_thread; /* this thread is a job's */

/* The net's progress sink in the background mode: the job's thread counts the heads done. */
static void job_step(void *ctx, long done, long total)
{
    struct app_job *job = ctx;
    __atomic_store_n(&job->heads_done, done, __ATOMIC_RELAXED);
    __atomic_store_n(&job->heads_total, total, __ATOMIC_RELAXED);
#ifdef ATTNSCOPE_TEST_HOOKS
    if (job->pause_ms > 0 && done > 0 && job_thread) {
        struct timespec t = {0, (long)job->pause_ms * 1000000L};
        nanosleep(&t, NULL);
    }
#else
    (void)job_thread;
#endif
}

/* JOB_SCORES: every head of every layer not yet scored, a layer at a time on the pool, each
 * entry published with release order; it stops between layers when told. */
static void job_scores(struct app *a)
{
    struct app_job *job = &a->result.job;
    struct attn_net *net = &a->result.net;
    int heads = net->model[0].heads;
    struct head_scores *out = malloc((size_t)heads * sizeof(*out));
    struct attn_mat_view *w = malloc((size_t)heads * sizeof(*w));
    for (int L = 0; out && w && L < net->layers; L++) {
        if (__atomic_load_n(&job->stop, __ATOMIC_RELAXED))
            break;
        size_t i0 = (size_t)L * (size_t)heads;
        bool all = true;
        for (int h = 0; h < heads; h++)
            all &= __atomic_load_n(&a->cache.score.scored[i0 + (size_t)h], __ATOMIC_ACQUIRE) != 0;
        if (!all && attn_net_materialise(net, L, &job->err) != 0) /* stream mode: shown again */
            break;
        for (int h = 0; h < heads; h++)
            w[h] = attn_view(&net->run[L], &net->model[L], STAGE_WEIGHTS, h); /* kept: a read */
        if (!all)
            attn_head_scores_many(out, w, heads, net->model[0].ids);
        for (int h = 0; h < heads && !all; h++)
            if (!a->cache.score.scored[i0 + (size_t)h]) {
                a->cache.score.scores[i0 + (size_t)h] = out[h];
                __atomic_store_n(&a->cache.score.scored[i0 + (size_t)h], 1, __ATOMIC_RELEASE);
            }
        __atomic_store_n(&job->heads_done, (long)(L + 1) * heads, __ATOMIC_RELAXED);
    }
    free(out);
    free(w);
}

static bool job_start(struct app *a, enum app_job_kind kind, long heads_total);
static void job_cancel(struct app *a);

/* JOB_THUMBS: every layer's tiles but the pinned layer's, each layer shown again in turn. */
static void job_thumbs(struct app *a)
{
    struct app_job *job = &a->result.job;
    struct app_thumb_walk *w = &a->cache.thumbs;
    struct attn_net *net = &a->result.net;
    const struct app_thumb_key *k = &w->key;
    size_t cells = (size_t)k->rows * (size_t)k->cols;
    for (int L = 0; L < net->layers; L++) {
        if (__atomic_load_n(&job->stop, __ATOMIC_RELAXED))
            break;
        bool present = attn_stage_present(&net->model[L], (enum attn_stage)k->stage);
        if (L != w->skipped && present && attn_net_materialise(net, L, &job->err) != 0)
            break;
        for (int h = 0; L != w->skipped && present && h < k->per_layer; h++) {
            size_t t = (size_t)L * (size_t)k->per_layer + (size_t)h;
            zoom_tile(w->cells + t * cells, &w->lo[t], &w->hi[t],
                      attn_view(&net->run[L], &net->model[L], (enum attn_stage)k->stage, h),
                      k->rows, k->cols, (enum block_agg)k->agg);
        }
        __atomic_store_n(&w->layers_done, L + 1, __ATOMIC_RELEASE);
    }
}

static bool thumb_key_same(const struct app_thumb_key *x, const struct app_thumb_key *y)
{
    return x->generation == y->generation && x->stage == y->stage && x->agg == y->agg &&
           x->rows == y->rows && x->cols == y->cols && x->per_layer == y->per_layer;
}

void app_request_thumbs(struct app *a, const struct app_thumb_key *key)
{
    struct app_job *job = &a->result.job;
    struct app_thumb_walk *w = &a->cache.thumbs;
    struct app_thumb_key k = *key;
    k.generation = a->result.generation;
    if (!a->result.net.stage_layers || !job->background || !a->result.have_result)
        return;
    bool same = w->valid && thumb_key_same(&w->key, &k);
    if (job->running) {
        if (job->kind != JOB_THUMBS || same)
            return; /* another job first: asked again on a next frame */
        job_cancel(a);
    }
    app_show_layer(a); /* the layer in view first */
    if (job->running)
        return;
    if (same && w->layers_done == a->result.net.layers)
        return;
    size_t tiles = (size_t)a->result.net.layers * (size_t)k.per_layer;
    size_t cells = tiles * (size_t)k.rows * (size_t)k.cols;
    float *c = realloc(w->cells, (cells ? cells : 1) * sizeof(float));
    if (c)
        w->cells = c;
    float *lo = c ? realloc(w->lo, (tiles ? tiles : 1) * sizeof(float)) : NULL;
    if (lo)
        w->lo = lo;
    float *hi = lo ? realloc(w->hi, (tiles ? tiles : 1) * sizeof(float)) : NULL;
    if (hi)
        w->hi = hi;
    w->valid = hi != NULL;
    if (!w->valid) /* out of memory: the layers shown one by one only */
        return;
    w->key = k;
    w->layers_done = 0;
    w->skipped = a->result.net.stage_pin;
    job->backing = a->result.shown.backing;
    if (!job_start(a, JOB_THUMBS, 0))
        w->valid = false;
}

const struct app_thumb_walk *app_thumbs(const struct app *a, const struct app_thumb_key *key,
                                        int *done)
{
    const struct app_thumb_walk *w = &a->cache.thumbs;
    struct app_thumb_key k = *key;
    k.generation = a->result.generation;
    *done = 0;
    if (!w->valid || !thumb_key_same(&w->key, &k))
        return NULL;
    *done = __atomic_load_n(&w->layers_done, __ATOMIC_ACQUIRE);
    return w;
}

static void *job_main(void *arg)
{
    struct app *a = arg;
    struct app_job *job = &a->result.job;
    job_thread = true;
    if (job->kind == JOB_SCORES) {
        job_scores(a);
    } else if (job->kind == JOB_THUMBS) {
        attn_param_cache_worker(job->backing);
        job_thumbs(a);
        attn_param_cache_drop(job->backing);
    } else if (job->kind == JOB_LAYER) {
        attn_param_cache_worker(job->backing);
        job->rc = attn_net_materialise(&a->result.net, job->layer, &job->err);
        attn_param_cache_drop(job->backing);
    } else if (job->kind == JOB_BASELINE) {
        attn_param_cache_worker(job->backing);
        job->rc = attn_net_compute(&a->base.net, &a->base.scene, &job->err);
        attn_param_cache_drop(job->backing);
    } else if (job->kind == JOB_ROLLOUT) {
        job->rc = interp_rollout(&a->cache.interp, &a->result.net, a->result.generation,
                                 job->rollout_layer, &job->err)
                          .data
                      ? 0
                      : -1;
    } else if (job->kind == JOB_LENS) {
        job->rc = interp_lens_fill(&a->cache.interp, &a->result.net, a->result.generation,
                                   job->lens_t, job->lens_first, job->lens_count, &job->err);
    } else {
        attn_param_cache_worker(job->backing); /* out of memory: it shares the first */
        job->rc = attn_net_forward_pending(&a->result.net);
        /* the run without the ablations, for the predictions' "before": here too, the net
           untouched (nothing reads the interp cache until the job ends: app_all_ready) */
        struct diag clean_err;
        if (job->rc == 0)
            interp_keep_clean(&a->cache.interp, &a->result.net, a->result.generation, &clean_err);
        attn_param_cache_drop(job->backing); /* its own buffer's pages back */
    }
    __atomic_store_n(&job->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Starts a job of kind in its thread, its counters and error cleared (what it reads set by the
 * caller first). False when no thread could be made: the caller does the work itself. */
static bool job_start(struct app *a, enum app_job_kind kind, long heads_total)
{
    struct app_job *job = &a->result.job;
    job->kind = kind;
    job->finished = 0;
    job->rc = 0;
    job->heads_done = 0;
    job->heads_total = heads_total;
    job->seen_ready = 0;
    attn_diag_clear(&job->err);
    job->started_ms = attn_now_ms();
    job->running = pthread_create(&job->thread, NULL, job_main, a) == 0;
    return job->running;
}

/* Tells the job to stop and waits for its thread: it ends at its next head or layer. */
static void job_stop_join(struct app_job *job)
{
    __atomic_store_n(&job->stop, 1, __ATOMIC_RELAXED);
    pthread_join(job->thread, NULL);
    job->running = false;
    job->stop = 0;
}

static void baseline_drop(struct app *a);
static void baseline_done(struct app *a, int rc, struct diag *err);
static void job_finish(struct app *a);

/* The compute's net becomes the result (through, or stopped: then partial), the one before it
 * freed once the parameters it lent are handed over. */
static void job_commit(struct app *a)
{
    attn_net_commit(&a->result.prev, &a->result.net);
    a->result.net = a->result.prev;
    memset(&a->result.prev, 0, sizeof(a->result.prev));
}

/* Ends the compute running (an edit replaced it): stopped, joined, its net the result; partial,
 * so the next attn_net_prepare computes it whole. */
static void job_cancel(struct app *a)
{
    struct app_job *job = &a->result.job;
    if (!job->running)
        return;
    job_stop_join(job);
    if (job->kind == JOB_FORWARD)
        job_commit(a);
    if (job->kind == JOB_BASELINE) /* stopped: no baseline */
        baseline_drop(a);
}

/* What a compute makes at its end, once its every layer is there: the note of a value that is not
 * a number, the run without the ablated heads (the predictions' "before"), the pages of the
 * widening buffer. Returns 1 when the checkpoint changed on disk meanwhile (err says so). */
static int result_complete(struct app *a, const struct attn_scene *s, bool clean_kept,
                           struct diag *err)
{
    attn_param_cache_drop(s->backing);
    char where[DIAG_MSG_MAX - 32];
    a->result.nonfinite[0] = '\0';
    if (attn_net_nonfinite_text(where, sizeof(where), &a->result.net))
        snprintf(a->result.nonfinite, sizeof(a->result.nonfinite), "not a number: %s", where);
    /* With a head ablated, the run without it is kept for the predictions' "before": one pass
       over the layers from the first ablated one in a run of its own, at the edit, never on a
       cursor move (a background compute made it in its thread: clean_kept). Out of memory only
       loses the "before". */
    struct diag clean_err;
    if (!clean_kept)
        interp_keep_clean(&a->cache.interp, &a->result.net, a->result.generation, &clean_err);
    return attn_scene_check_backing(s, err) ? 1 : 0;
}

/* A new result's bookkeeping, before its forward pass (the background) or after it: the layer on
 * screen kept, every cache made from the last one stale. */
static int result_begin(struct app *a, struct diag *err)
{
    if (a->view.encoder && !a->result.net.encoder) /* one sequence now */
        a->view.encoder = false;
    if (a->view.layer >= app_net(a)->layers) /* fewer layers now: the last one */
        a->view.layer = app_net(a)->layers - 1;
    /* Scored on first use, once per result: drawing and cursor moves never rescan. */
    size_t count = (size_t)a->result.net.layers * (size_t)a->result.net.model[0].heads;
    if (!score_cache_invalidate(&a->cache.score, count))
        return attn_diag_set(err, "", "out of memory for the head scores");
    a->result.have_result = true;
    a->result.generation++;
    caches_invalidate(&a->cache);
    a->result.nonfinite[0] = '\0';
    return 0;
}

/* The pages of the buffers freed since, back to the system: the binary keeps freed matrices
 * under 32 MiB on the heap for the next edit's reuse (cli/main.c), but in stream mode, where the
 * memory is the point, a result freed (a heads edit's, 500 MB at 1,016 tokens) must not stay. */
static void give_back_freed(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
    /* and from now on every buffer over 1 MiB is mapped on its own: a sentence edit that grows
       them (realloc, every layer's) then moves their pages instead of copying them into new
       ones while the old wait on the heap, 150 MB more at its peak at 1,016 tokens */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

/* The prepared pass on this thread, its net the result (no thread could be made for it). */
static void forward_here(struct app *a)
{
    attn_net_forward_pending(&a->result.net);
    job_commit(a);
}

/* Recomputes the result for s in the job's thread: prepared here (the parameters resolved, the
 * buffers sized: milliseconds), the forward pass there. The result before it is kept whole, so
 * Esc or C-c can take the edit back at once (app_stop_compute), when the compute is felt and two
 * results fit the memory limit, as a compute on this thread keeps it. -1: prepare failed, the
 * last result stays. */
static int recompute_background(struct app *a, const struct attn_scene *s, struct diag *err)
{
    struct app_job *job = &a->result.job;
    const char *why;
    bool felt = a->result.compute_seconds * 1000 > PROGRESS_QUIET_MS;
    size_t need = attn_scene_mem_estimate(s), limit = attn_scene_memory_limit(&why);
    /* Stream mode (a model too large for every layer's stages) keeps one result: Esc computes
       the scene before it again instead, in the background like any compute, where a second
       result would double the peak (600 MiB against 1.3 GB at GPT-2 small's 1,016 tokens). */
    bool stream = a->result.net.stage_layers > 0;
    a->result.net.keep_previous = felt && a->result.have_result && need <= limit / 2 && !stream;
    struct attn_net fresh;
    int rc = attn_net_prepare(&fresh, &a->result.net, s, err);
    a->result.net.keep_previous = false;
    if (rc != 0)
        return -1;
    fresh.keep_previous = false;
    if (stream)
        give_back_freed();
    a->result.prev = a->result.net; /* what fresh borrows; whole unless its buffers moved */
    a->result.net = fresh;
    /* An edit that keeps rows or layers of the result before it computes in place
       (attn_net_prepare): Esc takes it back all the same, by computing the scene before it
       again from what it kept, which costs what the edit did (app_stop_compute). */
    bool keeps = fresh.kept_rows > 0 || fresh.first_layer > 0;
    keeps |= fresh.stage_layers > 0; /* stream mode: undone by computing again, any edit */
    a->result.stop_by_undo = a->result.have_result && fresh.moved && keeps && !a->result.restoring;
    a->result.stoppable = a->result.have_result && (!fresh.moved || keeps) && !a->result.restoring;
    a->result.stop_note[0] = '\0';
    if (a->result.restoring)
        snprintf(a->result.stop_note, sizeof(a->result.stop_note),
                 "it brings back the result before the edit stopped");
    else if (!a->result.stoppable && !a->result.have_result)
        snprintf(a->result.stop_note, sizeof(a->result.stop_note),
                 "nothing before it to go back to; q quits");
    else if (!a->result.stoppable && felt)
        snprintf(a->result.stop_note, sizeof(a->result.stop_note),
                 "no room for two results (2 \u00d7 %zu MiB, limit %zu MiB)",
                 (need + ((size_t)1 << 20) - 1) >> 20, limit >> 20);
    else if (!a->result.stoppable)
        snprintf(a->result.stop_note, sizeof(a->result.stop_note),
                 "estimated short: computed in place");
    if (result_begin(a, err) != 0) { /* out of memory for the scores: computed here, unscored */
        forward_here(a);
        return -1;
    }
    job->backing = s->backing;           /* result.shown becomes s's copy meanwhile (settle) */
    if (!job_start(a, JOB_FORWARD, 0)) { /* no thread: here, then */
        forward_here(a);
        return result_complete(a, s, false, err);
    }
    return 0;
}

/* Recomputes the result for s; on failure (-1) the last result stays. 1: the result is s's,
 * but its checkpoint shrank while it was read (err says so): its numbers are not the file's. */
static int recompute(struct app *a, const struct attn_scene *s, struct diag *err)
{
    /* A checkpoint rewritten or truncated on disk is never read: the view and the edits stay,
       the error says which file changed. */
    if (attn_scene_check_backing(s, err))
        return -1;
    /* a pass for a scene no longer wanted stops; a baseline pinned just before the edit is what
       the edit is to be compared with: it is finished first */
    if (a->result.job.running && a->result.job.kind == JOB_BASELINE)
        job_finish(a);
    job_cancel(a);
    a->result.stop_by_undo = false;
    a->result.net.stage_pin = a->view.layer; /* stream mode: the pass keeps the layer in view */
    /* A last-word edit computes its rows alone (the near path): numbers within the last
       places of a fresh computation's on screen, made exact before an export. */
    a->result.net.near_ok = true;
    a->result.compute_seconds = attn_net_estimate_edit_seconds(&a->result.net, s);
    a->result.stoppable = false;
    a->result.stop_note[0] = '\0';
    if (a->result.job.background && a->result.compute_seconds > APP_SYNC_SECONDS)
        return recompute_background(a, s, err);
    /* A compute long enough to show its progress may be stopped (q, Esc, C-c): it then goes
       into fresh buffers, so the result on screen stays whole, when two results fit in the
       memory limit; the first has none to keep. The estimate is rough (the machine may be
       busy): a stop offered only past ATTN_LONG_SECONDS left computes of seconds unstoppable. */
    const char *why;
    bool felt = a->result.compute_seconds * 1000 > PROGRESS_QUIET_MS;
    size_t need = attn_scene_mem_estimate(s), limit = attn_scene_memory_limit(&why);
    a->result.net.keep_previous = felt && a->result.have_result && need <= limit / 2;
    a->result.stoppable = felt && (!a->result.have_result || a->result.net.keep_previous);
    a->result.stop_note[0] = '\0';
    if (felt && !a->result.stoppable)
        snprintf(a->result.stop_note, sizeof(a->result.stop_note),
                 "no room for two results (2 \u00d7 %zu MiB, limit %zu MiB)",
                 (need + ((size_t)1 << 20) - 1) >> 20, limit >> 20);
    /* Said before the parameters are resolved and the buffers made, which take seconds of a
       long compute: the front end shows it at once (app_init). */
    progress_report(&a->result.net.progress, 0,
                    (long)(s->layers > 1 ? s->layers : 1) *
                        (s->attn.heads > 0 ? s->attn.heads : 1));
    int rc = attn_net_compute(&a->result.net, s, err);
    a->result.net.keep_previous = false;
    if (rc || result_begin(a, err) != 0)
        return -1;
    rc = result_complete(a, s, false, err);
    if (a->result.net.stage_layers) /* a sentence edit's grown buffers left their old ones */
        give_back_freed();
    app_show_layer(a);
    return rc;
}

bool app_computing(const struct app *a)
{
    return a->result.job.running;
}

/* Layer L is through the pass (what it keeps, and what was made from it, can be read). */
bool app_toggle_encoder(struct app *a)
{
    if (!a->result.have_result || !a->result.net.encoder) {
        app_refuse(a, "one sequence: an encoder-decoder's scene (text: {source, target}) has an "
                      "encoder to show");
        return false;
    }
    a->view.encoder = !a->view.encoder;
    /* the logit lens and the predictions read the decoder's residual stream, a target row */
    a->view.lens = a->view.predictions = false;
    /* the same depth: decoder layer L (the engine's 2L, 2L + 1) and encoder layer L; into the
       decoder, its cross-attention, which reads the encoder */
    a->view.layer = a->view.encoder ? a->view.layer / 2 : 2 * a->view.layer + 1;
    if (a->view.layer >= app_net(a)->layers)
        a->view.layer = app_net(a)->layers - 1;
    if (!attn_stage_present(app_model(a), a->view.stage))
        a->view.stage = attn_stage_block_output(app_model(a));
    a->result.generation++; /* every cache of a view: the other stack's numbers */
    app_clamp(a);
    return true;
}

const struct attn_net *app_net(const struct app *a)
{
    return a->view.encoder && a->result.net.encoder ? a->result.net.encoder : &a->result.net;
}

/* The encoder is computed whole before the decoder's pass starts (net.c's attach_encoder). */
static bool layer_computed(const struct app *a, int layer)
{
    const struct app_job *job = &a->result.job;
    return !job->running || job->kind != JOB_FORWARD || a->view.encoder ||
           layer < attn_net_layers_ready(&a->result.net);
}

bool app_layer_ready(const struct app *a, int layer)
{
    const struct app_job *job = &a->result.job;
    const struct attn_net *net = app_net(a);
    if (!layer_computed(a, layer))
        return false;
    if (!net->stage_layers)
        return true;
    /* stream mode: a job that computes layers may take the stages of any but the pinned one */
    if (job->running && job->kind != JOB_LENS && job->kind != JOB_BASELINE &&
        layer != net->stage_pin)
        return false;
    return attn_net_layer_held(net, layer);
}

/* Stream mode: the layer in view is pinned (no pass takes its stages), and recomputed when it
 * holds none, in a job (JOB_LAYER: one layer's pass) or here. Called where the view's layer or
 * the result changes and no job runs. */
void app_show_layer(struct app *a)
{
    struct attn_net *net = &a->result.net;
    if (!net->stage_layers || a->result.job.running || !a->result.have_result || a->view.encoder)
        return;
    net->stage_pin = a->view.layer;
    if (attn_net_layer_held(net, a->view.layer))
        return;
    a->result.job.layer = a->view.layer;
    a->result.job.backing = a->result.shown.backing;
    /* one layer's share of the pass: in a job unless it is done before a frame (128 tokens of
       GPT-2 small, 2 ms), as any compute */
    double seconds = attn_net_estimate_seconds(&a->result.shown) / net->layers;
    if (a->result.job.background && seconds > APP_SYNC_SECONDS && job_start(a, JOB_LAYER, 0))
        return;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_net_materialise(net, a->view.layer, &err) != 0)
        app_refuse(a, "layer %d: %.300s", a->view.layer, err.msg);
}

bool app_all_ready(const struct app *a)
{
    return !a->result.job.running || a->result.job.kind != JOB_FORWARD;
}

int app_request_scores(struct app *a)
{
    struct app_job *job = &a->result.job;
    const struct app_score_cache *c = &a->cache.score;
    if (!job->background || job->running || !c->scored)
        return 0;
    size_t count = (size_t)a->result.net.layers * (size_t)a->result.net.model[0].heads, i = 0;
    while (i < count && c->scored[i])
        i++;
    if (i == count) /* every head scored */
        return 0;
    /* out of threads: each head is scored as it is asked for */
    return job_start(a, JOB_SCORES, (long)count) ? 1 : 0;
}

const struct head_scores *app_scores_kept(const struct app *a, int layer, int head)
{
    const struct app_score_cache *c = &a->cache.score;
    size_t i = (size_t)layer * (size_t)a->result.net.model[0].heads + (size_t)head;
    if (!c->scored || !layer_computed(a, layer) ||
        !__atomic_load_n(&c->scored[i], __ATOMIC_ACQUIRE))
        return NULL;
    return &c->scores[i];
}

void app_compute_progress(const struct app *a, struct app_progress *out)
{
    const struct app_job *job = &a->result.job;
    *out = (struct app_progress){
        .layers = a->result.net.layers,
        .ready = job->running ? attn_net_layers_ready(&a->result.net) : a->result.net.layers,
        .heads_done = __atomic_load_n(&job->heads_done, __ATOMIC_RELAXED),
        .heads_total = __atomic_load_n(&job->heads_total, __ATOMIC_RELAXED),
        .ms = job->running ? attn_now_ms() - job->started_ms : 0,
        .scoring = job->running && job->kind == JOB_SCORES,
        .lens = job->running && job->kind == JOB_LENS,
        .baseline = job->running && job->kind == JOB_BASELINE,
        .rollout = job->running && job->kind == JOB_ROLLOUT};
}

/* The compute through: joined, and what its end makes made. */
static void job_finish(struct app *a)
{
    struct app_job *job = &a->result.job;
    pthread_join(job->thread, NULL);
    job->running = false;
    if (job->kind == JOB_LENS && job->rc != 0)
        app_refuse(a, "the lens: %.300s", job->err.msg);
    if (job->kind == JOB_BASELINE)
        baseline_done(a, job->rc, &job->err);
    if (job->kind == JOB_ROLLOUT && job->rc != 0) { /* out of memory: the stage again */
        a->view.rollout = false;
        app_refuse(a, "%s", job->err.msg);
    }
    if (job->kind == JOB_LAYER && job->rc != 0)
        app_refuse(a, "layer %d: %.300s", job->layer, job->err.msg);
    if (job->kind == JOB_SCORES && job->err.msg[0])
        app_refuse(a, "the head scores: %.300s", job->err.msg);
    if (job->kind != JOB_FORWARD) {
        if (job->kind != JOB_LAYER)
            app_show_layer(a);
        /* the model view's scores, asked for while another job ran (stream mode) */
        if (job->kind != JOB_SCORES && a->view.score_shown >= 0 && a->view.all_heads)
            app_request_scores(a);
        return;
    }
    job_commit(a);
    if (a->result.net.stage_layers) /* the result before it freed */
        give_back_freed();
    struct diag err;
    attn_diag_clear(&err);
    /* The generation stays: what was cached of each layer once it was ready (its thumbnails,
       scores, mean, range) is this result's; nothing read a layer before. */
    if (result_complete(a, &a->result.shown, job->rc == 0, &err) > 0)
        snprintf(a->doc.error, sizeof(a->doc.error),
                 "%.300s; the numbers on screen were read as it changed", err.msg);
    app_show_layer(a); /* the pinned layer holds its stages, unless the view moved meanwhile */
    if (a->view.score_shown >= 0 && a->view.all_heads) /* the model view shows them: next */
        app_request_scores(a);
    else if (a->view.rollout) /* the rollout on screen: next */
        app_request_rollout(a);
}

int app_poll(struct app *a)
{
    struct app_job *job = &a->result.job;
    if (!job->running)
        return 0;
    int ready = attn_net_layers_ready(&a->result.net);
    bool came = ready != job->seen_ready;
    job->seen_ready = ready;
    if (__atomic_load_n(&job->finished, __ATOMIC_ACQUIRE)) {
        job_finish(a);
        return 2;
    }
    return came ? 1 : 0;
}

void app_wait(struct app *a)
{
    if (a->result.job.running)
        job_finish(a);
}

static void revert_edit(struct app *a);
static int settle(struct app *a);

int app_stop_compute(struct app *a, const char *key)
{
    if (!a->result.job.running)
        return 0;
    if (a->result.job.kind == JOB_LAYER) { /* one layer's pass: the view needs it */
        job_finish(a);
        return 0;
    }
    if (a->result.job.kind != JOB_FORWARD) { /* nothing to undo: what was made so far stays */
        job_cancel(a);
        enum app_job_kind kind = a->result.job.kind;
        snprintf(a->status.message, sizeof(a->status.message), "%s: stopped %s", key,
                 kind == JOB_SCORES     ? "scoring the heads (S scores the rest)"
                 : kind == JOB_BASELINE ? "pinning the baseline (none is pinned)"
                 : kind == JOB_ROLLOUT  ? "the rollout: the weights again (r shows it)"
                 : kind == JOB_THUMBS   ? "the model view's tiles (they come as it is shown)"
                                        : "the lens (y shows it again)");
        a->status.message_is_error = false;
        if (kind == JOB_ROLLOUT)
            a->view.rollout = false;
        app_show_layer(a);
        return 1;
    }
    if (!a->result.stoppable) {
        app_refuse(a, "%s: that compute could not be stopped: %s", key, a->result.stop_note);
        return -1;
    }
    if (a->result.stop_by_undo) { /* its rows computed in place: the sentence before it again */
        double seconds = a->result.compute_seconds;
        job_cancel(a); /* partial: the rows it kept are still there, every layer's */
        revert_edit(a);
        a->result.restoring = true; /* that compute is the undo: a stop would undo one more */
        settle(a);
        a->result.restoring = false;
        app_refuse(a, "stopped: that edit would take about %.*f s here; undone",
                   seconds < 9.5 ? 1 : 0, seconds);
        return 1;
    }
    job_stop_join(&a->result.job);
    attn_net_discard(&a->result.net); /* the result before it, whole: kept aside */
    a->result.net = a->result.prev;
    memset(&a->result.prev, 0, sizeof(a->result.prev));
    revert_edit(a);
    struct attn_scene before;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_scene_copy(&before, &a->doc.scene) == 0) { /* the scene shown before the edit */
        attn_scene_free(&a->result.shown);
        a->result.shown = before;
    }
    result_begin(a, &err);
    result_complete(a, &a->result.shown, false, &err);
    app_clamp(a);
    app_show_layer(a); /* stream mode: the result before it lent its stages to the compute */
    app_refuse(a, "stopped: that edit would take about %.*f s here; undone",
               a->result.compute_seconds < 9.5 ? 1 : 0, a->result.compute_seconds);
    return 1;
}

/* What the scene is computed past without a refusal, added to the message line: with
 * checkpoint, its config.json's first warning (and how many more: `attnscope check` lists them);
 * always, tokens past the positions a RoPE checkpoint was trained on. */
static void warnings_note(struct app *a, bool checkpoint)
{
    char note[2 * DIAG_MSG_MAX] = "";
    const struct diag_list *w = a->doc.scene.backing ? &a->doc.scene.backing->warnings : NULL;
    if (checkpoint && w && w->n + w->lost > 0) {
        const struct diag *d = &w->items[0];
        const char *base = strrchr(d->file, '/') ? strrchr(d->file, '/') + 1 : d->file;
        int more = w->n + w->lost - 1;
        if (w->n == 0)
            snprintf(note, sizeof(note), "warning: %d warnings lost (out of memory)", w->lost);
        else if (more > 0)
            snprintf(note, sizeof(note), "warning: %.60s:%d:%d: %.300s (+%d more)", base, d->line,
                     d->col, d->msg, more);
        else
            snprintf(note, sizeof(note), "warning: %.60s:%d:%d: %.300s", base, d->line, d->col,
                     d->msg);
    }
    char past[DIAG_MSG_MAX];
    if (attn_scene_positions_note(past, sizeof(past), &a->doc.scene)) {
        size_t o = strlen(note);
        snprintf(note + o, sizeof(note) - o, "%swarning: %.300s", o ? "; " : "", past);
    }
    if (!note[0])
        return;
    size_t o = strlen(a->status.message);
    snprintf(a->status.message + o, sizeof(a->status.message) - o, "%s%.*s", o ? "; " : "",
             (int)sizeof(a->status.message) - 3, note);
}

/* app_init, with computes past APP_SYNC_SECONDS in the job's thread when background. */
static int app_init_mode(struct app *a, struct attn_scene *s, const char *path,
                         const struct progress_sink *progress, bool background, struct diag *err)
{
    memset(a, 0, sizeof(*a));
    a->result.job.background = background;
    /* A test build's aid (ATTNSCOPE_TEST_HOOKS): the job's thread pauses this long after each
       head it reports, so a tmux test catches a compute under way on any machine. */
#ifdef ATTNSCOPE_TEST_HOOKS
    const char *pause = getenv("ATTNSCOPE_HEAD_PAUSE_MS");
    a->result.job.pause_ms = pause ? atoi(pause) : 0;
    if (a->result.job.pause_ms < 0 || a->result.job.pause_ms > 999)
        a->result.job.pause_ms = 0;
#endif
    /* Stream mode (net.h's stage_budget): the explorer shows a layer at a time, so the n x n
       stages of a few layers are kept and a layer shown again is recomputed (a job). */
    if (background) {
        const char *mib = getenv("ATTNSCOPE_STAGE_MIB");
        double budget = APP_STAGE_MIB; /* a value that is no amount: refused by the binary */
        if (mib && *mib && attn_cnum_parse_double(mib, false, &budget) != CNUM_OK)
            budget = APP_STAGE_MIB;
        a->result.net.stage_budget = budget > 0 ? (size_t)(budget * 1048576.0) : 0;
    }
    if (background) /* the job counts the heads; the front end reads app_compute_progress */
        a->result.net.progress =
            (struct progress_sink){job_step, &a->result.job, &a->result.job.stop};
    else if (progress) /* every compute, the first included, tells the front end how far */
        a->result.net.progress = *progress;
    a->doc.scene = *s;
    memset(s, 0, sizeof(*s));
    a->doc.scene_path = path ? strdup(path) : NULL;
    a->doc.undo = calloc(APP_UNDO_MAX, sizeof(*a->doc.undo));
    a->doc.redo = calloc(APP_UNDO_MAX, sizeof(*a->doc.redo));
    a->prompt.initial = calloc(1, APP_PROMPT_BYTES);
    bool oom = !a->doc.undo || !a->doc.redo || !a->prompt.initial || (path && !a->doc.scene_path);
    int rc = oom || attn_scene_copy(&a->result.shown, &a->doc.scene) ||
                     attn_scene_copy(&a->doc.written, &a->doc.scene)
                 ? attn_diag_set(err, "", "out of memory")
                 : recompute(a, &a->result.shown, err);
    if (rc) {
        app_free(a); /* the scene was taken over: nothing is left for the caller to free */
        return -1;
    }
    a->view.stage = STAGE_WEIGHTS;
    a->view.score_shown = -1;
    a->view.play_ms = 900;
    a->view.temperature = 1.0;
    /* A long sequence opens on its overview, each query's row on its own scale: one scale for
     * the whole matrix is set by row 0's 1.0 and leaves rows 80-100 one colour. */
    if (a->doc.scene.n_tokens > APP_LONG_TOKENS) {
        a->view.zoom = ZOOM_OVERVIEW;
        a->view.color_scale = SCALE_BY_ROW;
    }
    if (a->doc.scene.view.layer >= 0) { /* where the scene asks to open (an induction head, ...) */
        a->view.layer =
            a->doc.scene.view.layer < a->result.net.layers ? a->doc.scene.view.layer : 0;
        a->view.head = a->doc.scene.view.head;
        a->view.stage = (enum attn_stage)a->doc.scene.view.stage;
        if (!attn_stage_present(app_model(a), a->view.stage))
            a->view.stage = STAGE_WEIGHTS;
        app_clamp(a);
    }
    /* A vocabulary's byte fallback is said, not left for the learner to puzzle over. */
    if (a->doc.scene.tokenizer == TOKENIZER_GPT2)
        attn_tokens_unknown_words(a->status.message, sizeof(a->status.message), a->doc.scene.tokens,
                                  a->doc.scene.n_tokens);
    warnings_note(a, true);
    return 0;
}

int app_init(struct app *a, struct attn_scene *s, const char *path,
             const struct progress_sink *progress, struct diag *err)
{
    return app_init_mode(a, s, path, progress, false, err);
}

void app_free(struct app *a)
{
    job_cancel(a); /* before the net it computes goes */
    attn_net_free(&a->result.prev);
    attn_scene_free(&a->doc.scene);
    attn_scene_free(&a->result.shown);
    for (int i = 0; i < a->doc.n_undo; i++)
        attn_scene_free(&a->doc.undo[i]);
    for (int i = 0; i < a->doc.n_redo; i++)
        attn_scene_free(&a->doc.redo[i]);
    free(a->doc.undo);
    free(a->doc.redo);
    free(a->prompt.initial);
    free(a->prompt.sentence);
    free(a->prompt.text);
    free(a->doc.scene_path);
    attn_net_free(&a->result.net);
    caches_free(&a->cache);
    attn_scene_free(&a->base.scene);
    attn_net_free(&a->base.net);
    attn_scene_free(&a->doc.written);
    for (int i = 0; a->lesson.lesson && i < a->lesson.lesson->n_steps; i++)
        if (a->lesson.reached[i])
            attn_scene_free(&a->lesson.at[i]);
    free(a->lesson.at);
    free(a->lesson.reached);
    free(a->lesson.changed);
    attn_lesson_unref(a->lesson.lesson);
    memset(a, 0, sizeof(*a));
}

static int app_new_mode(struct app **out, struct attn_scene *s, const char *path,
                        const struct progress_sink *progress, bool background, struct diag *err)
{
    struct app *a = malloc(sizeof(*a));
    *out = a; /* before the first compute: progress may read it (the front end's bar) */
    if (!a) {
        attn_scene_free(s); /* taken in every case, as app_init takes it */
        return attn_diag_set(err, "", "out of memory");
    }
    if (app_init_mode(a, s, path, progress, background, err)) {
        free(a);
        *out = NULL;
        return -1;
    }
    return 0;
}

int app_new(struct app **out, struct attn_scene *s, const char *path,
            const struct progress_sink *progress, struct diag *err)
{
    return app_new_mode(out, s, path, progress, false, err);
}

int app_new_background(struct app **out, struct attn_scene *s, const char *path, struct diag *err)
{
    return app_new_mode(out, s, path, NULL, true, err);
}

void app_delete(struct app *a)
{
    if (!a)
        return;
    app_free(a);
    free(a);
}

const struct app_doc *app_doc(const struct app *a)
{
    return &a->doc;
}

const struct app_result *app_result(const struct app *a)
{
    return &a->result;
}

const struct app_caches *app_caches(const struct app *a)
{
    return &a->cache;
}

const struct app_view *app_view_state(const struct app *a)
{
    return &a->view;
}

const struct app_baseline *app_baseline(const struct app *a)
{
    return &a->base;
}

const struct app_lesson *app_lesson(const struct app *a)
{
    return &a->lesson;
}

const struct app_prompt *app_prompt(const struct app *a)
{
    return &a->prompt;
}

const struct app_status *app_status(const struct app *a)
{
    return &a->status;
}

const struct keymap *app_keymap(const struct app *a)
{
    return a->keymap;
}

struct app_view *app_view_mut(struct app *a)
{
    return &a->view;
}

struct app_status *app_status_mut(struct app *a)
{
    return &a->status;
}

int app_lens_fill(struct app *a, int first, int count, struct diag *err)
{
    struct app_job *job = &a->result.job;
    if (!job->background ||
        interp_lens_filled(&a->cache.interp, &a->result.net, a->result.generation,
                           a->view.temperature, first, count))
        return interp_lens_fill(&a->cache.interp, &a->result.net, a->result.generation,
                                a->view.temperature, first, count, err);
    if (job->running) /* another job first; the next frame asks again */
        return 1;
    /* 12 layers' unembedding of every position in view: a second at GPT-2 small's size */
    job->lens_first = first;
    job->lens_count = count;
    job->lens_t = a->view.temperature;
    if (!job_start(a, JOB_LENS, 0)) /* here, then */
        return interp_lens_fill(&a->cache.interp, &a->result.net, a->result.generation,
                                a->view.temperature, first, count, err);
    return 1;
}

bool app_interp_busy(const struct app *a)
{
    const struct app_job *job = &a->result.job;
    return job->running && (job->kind == JOB_LENS || job->kind == JOB_ROLLOUT);
}

int app_request_rollout(struct app *a)
{
    struct app_job *job = &a->result.job;
    double n = a->result.net.layers > 0 ? (double)a->result.net.model[0].n : 0;
    /* an encoder's rollout is the map's own, made as it draws (the job walks the decoder) */
    if (!job->background || job->running || !a->view.rollout || !a->result.have_result ||
        a->view.encoder ||
        interp_rollout_kept(&a->cache.interp, a->result.generation, a->view.layer).data)
        return 0;
    /* a product of n x n a layer: under 0.1 GFLOP the map makes it on its frame (a thread of
       its own would cost more, and the view would flicker pending) */
    if (2.0 * n * n * n * (double)(a->view.layer + 1) < 1e8)
        return 0;
    job->rollout_layer = a->view.layer;
    /* out of threads: the map computes it as it draws */
    return job_start(a, JOB_ROLLOUT, 0) ? 1 : 0;
}

int app_prediction_compare(struct app *a, struct interp_compare *out, struct diag *err)
{
    return interp_compare(&a->cache.interp, &a->result.net, a->result.generation, a->view.row,
                          a->view.temperature, out, err);
}

void app_set_zoom_shown(struct app *a, const struct zoom_grid *grid)
{
    a->cache.zoom = grid ? *grid : (struct zoom_grid){0};
}

void app_set_keymap(struct app *a, const struct keymap *keymap)
{
    a->keymap = keymap;
}

void app_set_export_progress(struct app *a, const struct progress_sink *progress)
{
    a->result.export_progress = *progress;
}

const struct attn_model *app_model(const struct app *a)
{
    return &app_net(a)->model[a->view.layer];
}

const char *app_row_token(const struct app *a, int i)
{
    return attn_stage_row_tokens(app_model(a), a->view.stage)[i];
}

const char *app_col_token(const struct app *a, int j)
{
    return attn_model_key_tokens(app_model(a))[j];
}

const struct attn_run *app_run(const struct app *a)
{
    return &app_net(a)->run[a->view.layer];
}

bool app_showing_mean(const struct app *a)
{
    return a->view.head_mean && !a->view.rollout && attn_stage_is_per_head(a->view.stage) &&
           app_model(a)->heads > 1;
}

bool app_showing_delta(const struct app *a)
{
    return a->base.pinned && !a->view.rollout && !app_showing_mean(a) && app_delta_ok(a);
}

const struct head_scores *app_scores(const struct app *a, int layer, int head)
{
    static const struct head_scores none; /* every score undefined */
    if (a->view.encoder) { /* the encoder's: scored as asked (the cache is the decoder's) */
        static struct head_scores enc;
        const struct attn_net *e = app_net(a);
        if (layer < 0 || layer >= e->layers || head < 0 || head >= e->model[layer].heads)
            return &none;
        attn_head_scores(&enc, app_view_at(a, layer, STAGE_WEIGHTS, head), e->model[0].ids);
        return &enc;
    }
    if (!a->cache.score.scored || !layer_computed(a, layer)) /* a layer still computing */
        return &none;
    const struct head_scores *kept = app_scores_kept(a, layer, head);
    if (kept)
        return kept;
    if (!app_layer_ready(a, layer)) /* stream mode: its stages are not held; the job scores it */
        return &none;
    if (a->result.job.running) /* the scores job writes it: it comes with the next frame */
        return &none;
    size_t i = (size_t)layer * (size_t)a->result.net.model[0].heads + (size_t)head;
    if (!a->cache.score
             .scored[i]) { /* a cache: the pointers are const, what they point at is not */
        attn_head_scores(&a->cache.score.scores[i], app_view_at(a, layer, STAGE_WEIGHTS, head),
                         a->result.net.model[0].ids);
        a->cache.score.scored[i] = 1;
    }
    return &a->cache.score.scores[i];
}

struct attn_mat_view app_view(const struct app *a, enum attn_stage s, int head)
{
    return attn_view(app_run(a), app_model(a), s, head);
}

struct attn_mat_view app_view_at(const struct app *a, int layer, enum attn_stage s, int head)
{
    return attn_view(&app_net(a)->run[layer], &app_net(a)->model[layer], s, head);
}

void app_set_layer(struct app *a, int layer)
{
    if (layer < 0 || layer >= app_net(a)->layers)
        return;
    a->view.layer = layer;
    /* Only the last layer has the final norm: elsewhere the nearest stage is the block's
     * output. */
    if (!attn_stage_present(app_model(a), a->view.stage))
        a->view.stage = attn_stage_block_output(app_model(a));
    app_clamp(a);
    app_show_layer(a);
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

/* Δ = current − baseline of the matrix on screen, into a->cache.delta (kept per result and view).
 */
static struct attn_mat_view shown_delta(struct app *a, struct attn_mat_view v)
{
    size_t cells = (size_t)v.rows * (size_t)v.cols;
    int head = attn_stage_is_per_head(a->view.stage) ? a->view.head : 0;
    if (delta_cache_holds(&a->cache.delta, a->result.generation, a->view.layer, (int)a->view.stage,
                          head))
        return (struct attn_mat_view){a->cache.delta.values, v.rows, v.cols, v.cols};
    if (!reserve(&a->cache.delta.values, &a->cache.delta.cap, cells))
        return v; /* out of memory: the values themselves */
    struct attn_mat_view b = app_base_view(a);
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < v.cols; j++)
            a->cache.delta.values[(size_t)i * v.cols + j] =
                attn_cell_delta(v.data[(size_t)i * v.stride + j], b.data[(size_t)i * b.stride + j]);
    a->cache.delta.generation = a->result.generation;
    a->cache.delta.layer = a->view.layer;
    a->cache.delta.stage = (int)a->view.stage;
    a->cache.delta.head = head;
    return (struct attn_mat_view){a->cache.delta.values, v.rows, v.cols, v.cols};
}

struct attn_mat_view app_base_view(const struct app *a)
{
    if (!a->base.pinned || a->view.layer >= a->base.net.layers)
        return (struct attn_mat_view){0};
    const struct attn_model *m = &a->base.net.model[a->view.layer];
    if (!attn_stage_present(m, a->view.stage) || a->view.head >= m->heads)
        return (struct attn_mat_view){0};
    return attn_view(&a->base.net.run[a->view.layer], m, a->view.stage, a->view.head);
}

bool app_baseline_pinned(const struct app *a)
{
    return a->base.pinned;
}

float app_base_change(const struct app *a, int L, enum attn_stage s, int h)
{
    if (!a->base.pinned || L >= a->base.net.layers || L >= a->result.net.layers ||
        !app_layer_ready(a, L))
        return NAN;
    const struct attn_model *bm = &a->base.net.model[L];
    if (!attn_stage_present(bm, s) || h >= bm->heads || h >= a->result.net.model[L].heads)
        return NAN;
    struct attn_mat_view v = app_view_at(a, L, s, h);
    size_t cap = (size_t)bm->n * (size_t)bm->n_kv;
    float *buf = attn_stage_is_derived(bm, s) ? malloc((cap ? cap : 1) * sizeof(float)) : NULL;
    if (attn_stage_is_derived(bm, s) && !buf)
        return NAN;
    struct attn_mat_view b = attn_view_buf(buf, cap, &a->base.net.run[L], bm, s, h);
    struct attn_delta_stats st = {0}; /* as diff --layer all ranks the heads */
    for (int i = 0; v.data && b.data && v.rows == b.rows && v.cols == b.cols && i < v.rows; i++)
        for (int j = 0; j < v.cols; j++)
            attn_delta_stats_add(
                &st,
                attn_cell_delta(v.data[(size_t)i * v.stride + j], b.data[(size_t)i * b.stride + j]),
                i * v.cols + j);
    free(buf);
    return st.finite ? attn_delta_stats_mean(&st) : NAN;
}

bool app_delta_ok(const struct app *a)
{
    if (!a->base.pinned)
        return false;
    struct attn_mat_view b = app_base_view(a), v = app_view(a, a->view.stage, a->view.head);
    return b.data && b.rows == v.rows && b.cols == v.cols;
}

void app_delta_problem(char *out, size_t size, const struct app *a)
{
    out[0] = '\0';
    if (!a->base.pinned || app_delta_ok(a))
        return;
    struct attn_mat_view b = app_base_view(a), v = app_view(a, a->view.stage, a->view.head);
    if (!b.data)
        snprintf(out, size, "the baseline has no %s here (layer %d, head %d): no \u0394 (B unpins)",
                 attn_stage_name(a->view.stage), a->view.layer, a->view.head);
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
    if (a->base.pinned && a->base.from[0]) /* another scene: no edit leads from it to this one */
        snprintf(out, size, "%s", a->base.from);
    else if (a->base.pinned)
        describe_change(out, size, &a->base.scene, &a->result.shown);
}

static void baseline_drop(struct app *a)
{
    a->base.pinned = false;
    a->base.from[0] = '\0';
    attn_scene_free(&a->base.scene);
    attn_net_free(&a->base.net);
    delta_cache_free(&a->cache.delta);
}

/* The baseline's compute ended (rc from attn_net_compute, err): pinned, or why not. */
static void baseline_done(struct app *a, int rc, struct diag *err)
{
    a->result.generation++; /* every view's Δ */
    caches_invalidate(&a->cache);
    if (rc || attn_scene_check_backing(&a->base.scene, err)) {
        baseline_drop(a);
        app_refuse(a, "cannot pin a baseline: %.300s", err->msg[0] ? err->msg : "out of memory");
        return;
    }
    a->base.pinned = true;
    if (a->base.from[0])
        snprintf(a->status.message, sizeof(a->status.message),
                 "baseline %.90s pinned: every view shows \u0394 = this \u2212 it (B unpins)",
                 a->base.from);
    else
        snprintf(a->status.message, sizeof(a->status.message),
                 "baseline pinned: edits now show \u0394 = current \u2212 baseline (B unpins)");
}

/* Computes a->base.scene, filled, and pins it (the job's thread computes one that takes long).
 * Returns as app_toggle_baseline. */
static int pin_baseline(struct app *a)
{
    const char *why;
    size_t limit = attn_scene_memory_limit(&why), need = attn_scene_mem_estimate(&a->result.shown);
    size_t need_base = attn_scene_mem_estimate(&a->base.scene);
    if (need_base > need)
        need = need_base;
    if (need > limit / 2) {
        baseline_drop(a);
        app_refuse(a,
                   "a baseline needs a second result, about %zu MiB, over the %zu MiB limit (%s)",
                   (2 * need + ((size_t)1 << 20) - 1) >> 20, limit >> 20, why);
        return -1;
    }
    struct diag err;
    attn_diag_clear(&err);
    if (attn_scene_check_backing(&a->base.scene, &err)) {
        baseline_drop(a);
        app_refuse(a, "cannot pin a baseline: %.300s", err.msg[0] ? err.msg : "out of memory");
        return -1;
    }
    /* In the background mode a baseline that takes long is computed in the job's thread: the
       keys are answered meanwhile, and it is pinned when it ends. */
    struct app_job *job = &a->result.job;
    if (job->background && !job->running &&
        attn_net_estimate_seconds(&a->base.scene) > APP_SYNC_SECONDS) {
        a->base.net.progress = (struct progress_sink){NULL, NULL, &job->stop}; /* Esc stops */
        job->backing = a->base.scene.backing;
        if (job_start(a, JOB_BASELINE, 0)) {
            snprintf(a->status.message, sizeof(a->status.message),
                     "pinning the baseline: its own result is computing");
            return 2;
        }
    }
    int rc = attn_net_compute(&a->base.net, &a->base.scene, &err);
    baseline_done(a, rc, &err);
    return a->base.pinned ? 1 : -1;
}

int app_toggle_baseline(struct app *a)
{
    a->result.generation++; /* every view's Δ or values again */
    caches_invalidate(&a->cache);
    a->status.message_is_error = false;
    if (a->base.pinned) {
        baseline_drop(a);
        snprintf(a->status.message, sizeof(a->status.message),
                 "baseline unpinned: the values again");
        return 0;
    }
    if (attn_scene_copy(&a->base.scene, &a->result.shown)) {
        baseline_drop(a);
        app_refuse(a, "cannot pin a baseline: out of memory");
        return -1;
    }
    return pin_baseline(a);
}

int app_pin_baseline_scene(struct app *a, struct attn_scene *other, const char *name)
{
    a->result.generation++;
    caches_invalidate(&a->cache);
    a->status.message_is_error = false;
    app_wait(a); /* the first result whole: a running job may not be the baseline's */
    baseline_drop(a);
    a->base.scene = *other; /* ours now */
    attn_scene_init(other);
    snprintf(a->base.from, sizeof(a->base.from), "%s", name);
    return pin_baseline(a);
}

bool app_has_vocab(const struct app *a)
{
    return a->result.have_result && attn_net_has_vocab(&a->result.net);
}

struct attn_mat_view app_rollout_view(struct app *a)
{
    struct diag err;
    attn_diag_clear(&err);
    struct attn_mat_view v = interp_rollout(
        &a->cache.interp,
        a->view.encoder && a->result.net.encoder ? a->result.net.encoder : &a->result.net,
        a->result.generation, a->view.layer, &err);
    if (!v.data)
        app_refuse(a, "%s", err.msg);
    return v;
}

const struct attn_predictions *app_predictions(struct app *a, int *layer, struct diag *err)
{
    *layer = a->view.lens ? a->view.layer : a->result.net.layers - 1;
    if (!app_has_vocab(a)) {
        attn_diag_set(err, "", "%s", attn_scene_why_no_vocab(&a->result.shown));
        return NULL;
    }
    return interp_predict(&a->cache.interp, &a->result.net, a->result.generation, *layer,
                          a->view.row, a->view.temperature, err);
}

enum attn_head_mode app_head_mode(const struct app *a, int layer, int head)
{
    if (layer < 0 || layer >= a->result.net.layers || head < 0 ||
        head >= a->result.net.model[layer].heads)
        return HEAD_KEEP;
    return (enum attn_head_mode)a->result.net.model[layer].head_mode[head];
}

int app_ablated_count(const struct app *a)
{
    int n = 0;
    for (int L = 0; L < a->result.net.layers; L++)
        for (int h = 0; h < a->result.net.model[L].heads; h++)
            n += a->result.net.model[L].head_mode[h] != HEAD_KEEP;
    return n;
}

struct attn_mat_view app_shown_view(struct app *a)
{
    if (a->view.rollout) {
        struct attn_mat_view r = app_rollout_view(a);
        if (r.data)
            return r;
        a->view.rollout = false; /* out of memory: the stage again, and the message says why */
    }
    struct attn_mat_view v = app_view(a, a->view.stage, a->view.head);
    if (app_showing_delta(a))
        return shown_delta(a, v);
    if (!app_showing_mean(a))
        return v;
    size_t cells = (size_t)v.rows * (size_t)v.cols;
    if (mean_cache_holds(&a->cache.mean, a->result.generation, a->view.layer, (int)a->view.stage))
        return (struct attn_mat_view){a->cache.mean.values, v.rows, v.cols, v.cols};
    if (!reserve(&a->cache.mean.values, &a->cache.mean.cap, cells))
        return v; /* out of memory: the head itself */
    attn_head_mean(a->cache.mean.values, app_run(a), app_model(a), a->view.stage);
    a->cache.mean.generation = a->result.generation;
    a->cache.mean.layer = a->view.layer;
    a->cache.mean.stage = (int)a->view.stage;
    return (struct attn_mat_view){a->cache.mean.values, v.rows, v.cols, v.cols};
}

/* The shape from the model alone: the layer may still be computing, and a derived stage would
   be computed to learn it. */
int app_rows(const struct app *a)
{
    return attn_stage_present(app_model(a), a->view.stage)
               ? attn_stage_rows(app_model(a), a->view.stage)
               : 0;
}

int app_cols(const struct app *a)
{
    return attn_stage_present(app_model(a), a->view.stage)
               ? attn_stage_cols(app_model(a), a->view.stage)
               : 0;
}

void app_clamp(struct app *a)
{
    /* An edit may take a stage away (no more rope, no block): the weights are always there. */
    if (!attn_stage_present(app_model(a), a->view.stage))
        a->view.stage = STAGE_WEIGHTS;
    if (a->view.head >= app_model(a)->heads)
        a->view.head = app_model(a)->heads - 1;
    if (a->view.head < 0)
        a->view.head = 0;
    int rows = app_rows(a), cols = app_cols(a);
    if (a->view.row >= rows)
        a->view.row = rows - 1;
    /* The column the user asked for comes back when a wider stage has it again. */
    a->view.col = a->view.col_want < cols ? a->view.col_want : cols - 1;
    if (a->view.row < 0)
        a->view.row = 0;
    if (a->view.col < 0)
        a->view.col = 0;
}

/* Takes the last edit back without a compute: the scene before it was the one on screen
 * (a stopped compute left that result whole); redo forgets it. */
static void revert_edit(struct app *a)
{
    if (a->doc.n_undo == 0)
        return;
    attn_scene_free(&a->doc.scene);
    a->doc.scene = a->doc.undo[--a->doc.n_undo];
    memset(&a->doc.undo[a->doc.n_undo], 0, sizeof(a->doc.undo[a->doc.n_undo]));
    if (a->doc.saved_depth > a->doc.n_undo)
        a->doc.saved_depth = -1;
    a->doc.error[0] = '\0';
    a->doc.unshown = false;
}

/* Checks the edited scene and recomputes when it is valid. */
static int settle(struct app *a)
{
    struct diag_list problems;
    attn_diag_list_init(&problems);
    a->doc.error[0] = '\0';
    a->doc.unshown = true; /* until its result is */
    if (attn_scene_check(&a->doc.scene, &problems) > 0) {
        int more = problems.n + problems.lost - 1;
        const char *first = problems.n ? problems.items[0].msg : "out of memory";
        if (more > 0)
            snprintf(a->doc.error, sizeof(a->doc.error), "%.400s (+%d more)", first, more);
        else
            snprintf(a->doc.error, sizeof(a->doc.error), "%s", first);
        attn_diag_list_free(&problems);
        return -1;
    }
    attn_diag_list_free(&problems);
    struct attn_scene copy;
    struct diag err;
    attn_diag_clear(&err);
    int rc = attn_scene_copy(&copy, &a->doc.scene) ? -1 : recompute(a, &copy, &err);
    if (rc < 0 && progress_stopped(&a->result.net.progress) && a->result.stoppable) {
        /* q during a long compute: the edit is taken back, the result on screen is its own. */
        attn_scene_free(&copy);
        revert_edit(a);
        app_refuse(a, "stopped: that edit would take about %.*f s here; undone",
                   a->result.compute_seconds < 9.5 ? 1 : 0, a->result.compute_seconds);
        return -1;
    }
    if (rc < 0) {
        snprintf(a->doc.error, sizeof(a->doc.error), "%s", err.msg[0] ? err.msg : "out of memory");
        attn_scene_free(&copy);
        return -1;
    }
    attn_scene_free(&a->result.shown);
    a->result.shown = copy; /* the result is copy's, even one read from a file that shrank */
    a->doc.unshown = false;
    app_clamp(a);
    if (rc > 0) {
        snprintf(a->doc.error, sizeof(a->doc.error),
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
    size_t o = strlen(a->status.message);
    if (why[0] && o < sizeof(a->status.message))
        snprintf(a->status.message + o, sizeof(a->status.message) - o, "%s%s", o ? "; " : "", why);
}

/* An edit's settle; then the message line says what changed (before a note of the edit's own,
 * such as dropped weights). */
static int settle_edit(struct app *a)
{
    int rc = settle(a);
    if (rc == 0 && a->doc.n_undo > 0 &&
        !a->status.message_is_error) { /* an invalid edit shows its error */
        char change[240], kept[240];
        describe_change(change, sizeof(change), &a->doc.undo[a->doc.n_undo - 1], &a->doc.scene);
        snprintf(kept, sizeof(kept), "%.200s", a->status.message);
        if (change[0])
            snprintf(a->status.message, sizeof(a->status.message), "%s%s%s", change,
                     kept[0] ? "; " : "", kept);
    }
    if (rc == 0)
        warnings_note(a, false);
    baseline_note(a);
    return rc;
}

bool app_scenes_alike(const struct attn_scene *x, const struct attn_scene *y)
{
    char change[240];
    describe_change(change, sizeof(change), x, y);
    return change[0] == '\0';
}

const struct attn_scene *app_title_written(const struct app *a)
{
    if (a->lesson.lesson && a->lesson.reached && a->lesson.reached[a->lesson.step])
        return &a->lesson.at[a->lesson.step]; /* a step's own edits are the lesson's */
    return &a->doc.written;
}

enum title_kind app_title(char *out, size_t size, char *from, size_t from_size, const struct app *a,
                          const struct attn_scene *s)
{
    return title_for(out, size, from, from_size, s, app_title_written(a));
}

bool app_unsaved(const struct app *a)
{
    if (a->lesson.lesson && a->doc.edits == a->lesson.edits)
        return false; /* as the lesson left it: its edits are its own */
    return a->doc.n_undo != a->doc.saved_depth;
}

size_t app_undo_step_bytes(const struct attn_scene *s)
{
    return sizeof(*s) + attn_scene_owned_bytes(s);
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
        total += app_undo_step_bytes(&stack[i]);
    while (*n > 1 && total > APP_UNDO_BYTES) {
        total -= app_undo_step_bytes(&stack[0]);
        attn_scene_free(&stack[0]);
        memmove(stack, stack + 1, (size_t)(*n - 1) * sizeof(*stack));
        (*n)--;
        dropped++;
    }
    return dropped;
}

/* Called before every edit: the current scene becomes undoable, redo is forgotten. A scene
 * whose result is not on screen (an invalid one) is not kept: the history holds only states that
 * were shown, and the one before it is on the stack already. */
static void begin_edit(struct app *a)
{
    /* The saved state moves one step down the stack, or off it (or off the redo side). */
    int forgot = a->doc.unshown ? 0 : push(a->doc.undo, &a->doc.n_undo, &a->doc.scene);
    if (a->doc.saved_depth >= 0)
        a->doc.saved_depth = a->doc.saved_depth >= forgot ? a->doc.saved_depth - forgot : -1;
    if (a->doc.saved_depth > a->doc.n_undo - 1)
        a->doc.saved_depth = -1;
    for (int i = 0; i < a->doc.n_redo; i++)
        attn_scene_free(&a->doc.redo[i]);
    a->doc.n_redo = 0;
    a->status.message[0] = '\0';
    a->status.message_is_error = false;
    a->doc.edits++;
}

void app_refuse(struct app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->status.message, sizeof(a->status.message), fmt, ap);
    va_end(ap);
    a->status.message_is_error = true;
}

/* Checks e by engine/edit.h's rules: a refused edit is said, and changes nothing. */
static int edit_refused(struct app *a, const struct attn_edit *e)
{
    struct diag err;
    if (attn_scene_check_edit(&a->doc.scene, e, &err) == 0)
        return 0;
    app_refuse(a, "%s", err.msg);
    return -1;
}

/* Makes e (checked) as one undo step, by engine/edit.h's rules; what = the edit in words for
 * the message when explicit weights go. The caller adds its notes, then settles the edit.
 * Returns 0, or -1 when the scene could not take it (a->doc.error says why). */
static int apply_edit(struct app *a, const struct attn_edit *e, const char *what,
                      struct attn_edit_effects *fx)
{
    begin_edit(a);
    struct diag err;
    if (attn_scene_apply_edit(&a->doc.scene, e, fx, &err) != 0) {
        snprintf(a->doc.error, sizeof(a->doc.error), "%s", err.msg);
        return -1;
    }
    if (fx->weights_dropped)
        snprintf(a->status.message, sizeof(a->status.message),
                 "explicit weights dropped (%s): drawn from the seed", what);
    if (fx->ablations_dropped) {
        size_t o = strlen(a->status.message);
        snprintf(a->status.message + o, sizeof(a->status.message) - o,
                 "%s%d ablated head%s gone with %s", o ? "; " : "", fx->ablations_dropped,
                 fx->ablations_dropped == 1 ? "" : "s", what);
    }
    return 0;
}

/* An edit that needs nothing said besides what settle_edit says. */
static int edit(struct app *a, const struct attn_edit *e, const char *what)
{
    struct attn_edit_effects fx;
    if (edit_refused(a, e) || apply_edit(a, e, what, &fx))
        return -1;
    return settle_edit(a);
}

/* The sentence text (TEXT), or the sentence again under another tokenizer (TOKENIZER). */
static int edit_text(struct app *a, const struct attn_edit *e)
{
    struct attn_edit_effects fx;
    if (edit_refused(a, e) || apply_edit(a, e, "new sentence", &fx))
        return -1;
    const struct attn_scene *sc = &a->doc.scene;
    /* Words a vocabulary does not have fall apart into bytes: the message line says which. */
    char unknown[300] = "";
    if (sc->tokenizer == TOKENIZER_GPT2)
        attn_tokens_unknown_words(unknown, sizeof(unknown), sc->tokens, sc->n_tokens);
    /* Explicit embedding rows: a word the scene was given keeps its row (after any number of
     * edits), a new one gets a made-up row (its hash's uniform values); say which, since its
     * numbers are not the book's. */
    char made_up[200] = "";
    if (sc->embed.kind == EMBED_EXPLICIT) {
        size_t o = 0;
        for (int i = 0; i < sc->n_tokens; i++) {
            bool known = attn_scene_has_row(sc, sc->tokens[i]);
            for (int k = 0; k < i && !known; k++)
                known = strcmp(sc->tokens[i], sc->tokens[k]) == 0; /* listed once */
            if (!known && o < sizeof(made_up))
                o += (size_t)snprintf(made_up + o, sizeof(made_up) - o, "%s%s", o ? ", " : "",
                                      sc->tokens[i]);
        }
    }
    if (made_up[0])
        snprintf(a->status.message, sizeof(a->status.message), "made-up rows for new words: %.200s",
                 made_up);
    else if (unknown[0])
        snprintf(a->status.message, sizeof(a->status.message), "%s", unknown);
    return settle_edit(a);
}

int app_edit_text(struct app *a, const char *text)
{
    struct attn_edit e = {.kind = EDIT_TEXT, .text = (char *)text};
    return edit_text(a, &e);
}

int app_edit_text_pair(struct app *a, const char *text, const char *pair)
{
    struct attn_edit e = {.kind = EDIT_TEXT, .text = (char *)text, .text_pair = pair};
    return edit_text(a, &e);
}

int app_edit_source(struct app *a, const char *text)
{
    struct attn_edit e = {.kind = EDIT_TEXT, .text = (char *)text, .source = true};
    return edit_text(a, &e);
}

double app_knob_value(const struct app *a, enum knob k)
{
    switch (k) {
    case KNOB_SEED:
        return (double)a->doc.scene.seed;
    case KNOB_D_OUT:
        return attn_scene_eff_d_out(&a->doc.scene);
    case KNOB_HEADS:
        return a->doc.scene.attn.heads;
    case KNOB_DIM:
        return attn_scene_d_in(&a->doc.scene);
    case KNOB_TEMPERATURE:
        return a->view.temperature;
    case KNOB_DROPOUT:
    case KNOB_COUNT:
        break;
    }
    return a->doc.scene.attn.dropout;
}

void app_knob_text(char *out, size_t size, const struct app *a, enum knob k)
{
    if (k == KNOB_SEED) /* 64-bit: a double would round seeds above 2^53 */
        snprintf(out, size, "%llu", (unsigned long long)a->doc.scene.seed);
    else if (k == KNOB_DROPOUT)
        attn_scene_format_p(out, size, a->doc.scene.attn.dropout);
    else if (k == KNOB_TEMPERATURE) /* "1.0", "0.7", "1.25": as typed, without a tail of 0s */
        app_temperature_text(out, size, a->view.temperature);
    else
        snprintf(out, size, "%d", (int)app_knob_value(a, k));
}

/* "the embeddings', positions' and attention's": parts in words, for the message line. */
static void seed_parts_text(char *out, size_t size, unsigned parts)
{
    static const enum attn_seed_part all[] = {SEED_PART_EMBEDDINGS, SEED_PART_POSITIONS,
                                              SEED_PART_ATTENTION, SEED_PART_FFN,
                                              SEED_PART_DROPOUT};
    int n = 0, total = 0;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        total += (parts & all[i]) != 0;
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && o < size; i++) {
        if (!(parts & all[i]))
            continue;
        const char *name = attn_seed_part_name(all[i]);
        n++;
        o += (size_t)snprintf(out + o, size - o, "%s%s",
                              n == 1       ? ""
                              : n == total ? " and "
                                           : ", ",
                              n == 1 ? name : name + 4); /* "the " once */
    }
}

int app_edit_seed(struct app *a, uint64_t seed)
{
    if (seed == a->doc.scene.seed)
        return 0; /* the same value is no edit: no undo step, nothing unsaved */
    uint64_t old = a->doc.scene.seed;
    struct attn_edit e = {.kind = EDIT_SEED, .seed = seed};
    struct attn_edit_effects fx;
    if (apply_edit(a, &e, "new seed", &fx))
        return -1;
    unsigned moved = fx.seeds_moved, kept = fx.seeds_kept;
    char parts[160], note[400] = "";
    enum attn_seed_part first;
    if (moved) {
        seed_parts_text(parts, sizeof(parts), moved);
        snprintf(note, sizeof(note), "%s seed%s too (%llu before, as the scene's)", parts,
                 (moved & (moved - 1)) ? "s" : "", (unsigned long long)old);
    }
    if (!moved && !attn_scene_seed_used(&a->doc.scene, &first)) {
        /* every draw follows a part's own seed: say so, not a silent no-op */
        const struct attn_opt_seed *own[] = {[0] = NULL,
                                             [1] = &a->doc.scene.embed.seed,
                                             [2] = &a->doc.scene.pos.seed,
                                             [4] = &a->doc.scene.attn.seed,
                                             [8] = &a->doc.scene.block.ffn_seed,
                                             [16] = &a->doc.scene.attn.dropout_seed};
        size_t o = strlen(note);
        if (first)
            snprintf(note + o, sizeof(note) - o, "%sno draw uses it: %s seed (%llu) re-seeds first",
                     o ? "; " : "", attn_seed_part_name(first),
                     (unsigned long long)own[first]->value);
        else
            snprintf(note + o, sizeof(note) - o, "%sno draw uses it: every number is given",
                     o ? "; " : "");
    } else if (kept) {
        seed_parts_text(parts, sizeof(parts), kept);
        size_t o = strlen(note);
        snprintf(note + o, sizeof(note) - o, "%s%s own seed%s stay%s", o ? "; " : "", parts,
                 (kept & (kept - 1)) ? "s" : "", (kept & (kept - 1)) ? "" : "s");
    }
    if (note[0]) {
        size_t o = strlen(a->status.message);
        snprintf(a->status.message + o, sizeof(a->status.message) - o, "%s%s", o ? "; " : "", note);
    }
    return settle_edit(a);
}

int app_edit_offset(struct app *a, int offset)
{
    struct attn_edit e = {.kind = EDIT_OFFSET, .offset = offset};
    if (edit_refused(a, &e))
        return -1;
    return offset == a->doc.scene.pos.offset ? 0 : edit(a, &e, "new positions");
}

void app_temperature_text(char *out, size_t size, double t)
{
    attn_cnum_format(out, size, "%.2f", t);
    size_t n = strlen(out);
    while (n > 3 && out[n - 1] == '0' && out[n - 2] != '.')
        out[--n] = '\0';
}

bool app_knob_shown(const struct app *a, enum knob k)
{
    return k != KNOB_TEMPERATURE || app_has_vocab(a);
}

int app_set_temperature(struct app *a, double t)
{
    if (!app_has_vocab(a)) {
        app_refuse(a, "the temperature is the predictions': %s",
                   attn_scene_why_no_vocab(&a->result.shown));
        return -1;
    }
    if (!(t >= INTERP_T_MIN && t <= INTERP_T_MAX)) {
        app_refuse(a, "the temperature must be from %g to %g, not %g", INTERP_T_MIN, INTERP_T_MAX,
                   t);
        return -1;
    }
    if (t == a->view.temperature)
        return 0;
    a->view.temperature = t;
    char text[32];
    app_temperature_text(text, sizeof(text), t);
    snprintf(a->status.message, sizeof(a->status.message),
             "temperature %s: softmax(logits \u00f7 %s)%s", text, text,
             t < 1   ? ", sharper than the model's own"
             : t > 1 ? ", flatter than the model's own"
                     : ", the model's own probabilities");
    a->status.message_is_error = false;
    return 0;
}

int app_set_ablation(struct app *a, int layer, int head, enum attn_head_mode mode)
{
    if (attn_scene_ablation(&a->doc.scene, layer, head) == mode)
        return 0;
    struct attn_edit e = {.kind = EDIT_ABLATE, .layer = layer, .head = head, .head_mode = mode};
    return edit(a, &e, "ablation");
}

int app_cycle_ablation(struct app *a)
{
    static const enum attn_head_mode next[] = {[HEAD_KEEP] = HEAD_ZERO,
                                               [HEAD_ZERO] = HEAD_MEAN,
                                               [HEAD_MEAN] = HEAD_KEEP,
                                               [HEAD_PATCH] = HEAD_KEEP};
    return app_set_ablation(a, a->view.layer, a->view.head,
                            next[attn_scene_ablation(&a->doc.scene, a->view.layer, a->view.head)]);
}

int app_edit_knob(struct app *a, enum knob k, double value)
{
    if (k == KNOB_TEMPERATURE)
        return app_set_temperature(a, value);
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
        if (value == a->doc.scene.attn.dropout)
            return 0;
        struct attn_edit e = {.kind = EDIT_DROPOUT, .dropout = value};
        return edit(a, &e, "new dropout");
    }
    /* d_out and heads: whole numbers; attn_scene_check names the limits. */
    if (!(value >= 1 && value == floor(value) && value <= INT_MAX)) {
        app_refuse(a, "%s must be a whole number of at least 1, not %g", knob_name(k), value);
        return -1;
    }
    if (value == app_knob_value(a, k))
        return 0;
    int v = (int)value;
    struct attn_edit e = {.kind = k == KNOB_DIM     ? EDIT_DIM
                                  : k == KNOB_D_OUT ? EDIT_D_OUT
                                                    : EDIT_HEADS};
    if (k == KNOB_DIM)
        e.dim = v;
    else if (k == KNOB_D_OUT)
        e.d_out = v;
    else
        e.heads = v;
    return edit(a, &e,
                k == KNOB_DIM     ? "new embedding width"
                : k == KNOB_D_OUT ? "new d_out"
                                  : "new head count");
}

/* ---- Edits of the shape land on a valid scene ----
 * An option or a knob step asks for one thing. When that alone leaves the scene invalid (d_out 3
 * for 2 heads after projection none, an odd head_dim under RoPE, a wrapper's heads wider than a
 * block's residual), the edit takes the nearest valid neighbour and the message line says so,
 * or it is refused with the reason: it never lands on an invalid state nobody asked for. A
 * scene that is invalid already (a value the user typed) is edited as asked. */

/* True when t passes attn_scene_check; else the first problem goes to why (when given). */
static bool shape_ok(const struct attn_scene *t, char *why, size_t size)
{
    struct diag_list problems;
    attn_diag_list_init(&problems);
    int n = attn_scene_check(t, &problems);
    if (n > 0 && why)
        snprintf(why, size, "%s", problems.n ? problems.items[0].msg : "out of memory");
    attn_diag_list_free(&problems);
    return n == 0;
}

/* The scene as an edit of its shape leaves it: a copy with the explicit weights dropped (they
 * fit the old shape only) and without its view: (the edit moves that to the nearest head, so
 * no trial may fail on it). Returns 0, or -1 out of memory (refused: the message says so). */
static int shape_trial(struct attn_scene *t, struct app *a)
{
    if (attn_scene_copy(t, &a->doc.scene)) {
        app_refuse(a, "out of memory");
        return -1;
    }
    attn_scene_drop_weights(t);
    t->view.layer = -1;
    return 0;
}

/* Makes t valid by moving d_out and heads (those allowed) as little as possible: a step of
 * d_out costs 1, one of heads 4 (a head count is the bigger change), the smaller value first on
 * a tie, d_out at most 64 and heads at most 16 away. Returns whether t is valid now; when not,
 * t is as it came. */
static bool nearest_valid_shape(struct attn_scene *t, bool vary_d_out, bool vary_heads)
{
    if (shape_ok(t, NULL, 0))
        return true;
    int d_field = t->attn.d_out, d0 = attn_scene_eff_d_out(t), h0 = t->attn.heads;
    for (int cost = 1; cost <= 64; cost++)
        for (int dh = 0; 4 * dh <= cost; dh++) {
            int dd = cost - 4 * dh;
            if ((dd && !vary_d_out) || (dh && !vary_heads))
                continue;
            static const int signs[4][2] = {{-1, -1}, {-1, 1}, {1, -1}, {1, 1}};
            for (int k = 0; k < 4; k++) {
                if ((signs[k][0] > 0 && dd == 0) || (signs[k][1] > 0 && dh == 0))
                    continue; /* +0 is -0, tried already */
                int d = d0 + signs[k][0] * dd, h = h0 + signs[k][1] * dh;
                if (d < 1 || d > SCENE_MAX_DIM || h < 1 || h > SCENE_MAX_HEADS)
                    continue;
                t->attn.d_out = d;
                t->attn.heads = h;
                if (shape_ok(t, NULL, 0))
                    return true;
            }
        }
    t->attn.d_out = d_field;
    t->attn.heads = h0;
    return false;
}

/* "heads 2 → 1": what nearest_valid_shape moved between `asked` (the edit alone) and `took`. */
static void shape_moves(char *out, size_t size, const struct attn_scene *asked,
                        const struct attn_scene *took)
{
    int da = attn_scene_eff_d_out(asked), dt = attn_scene_eff_d_out(took);
    size_t o = 0;
    out[0] = '\0';
    if (da != dt)
        o += (size_t)snprintf(out, size, "d_out %d \u2192 %d", da, dt);
    if (asked->attn.heads != took->attn.heads && o < size)
        snprintf(out + o, size - o, "%sheads %d \u2192 %d", o ? " and " : "", asked->attn.heads,
                 took->attn.heads);
}

/* The next value of d_out, heads or the embedding width in direction dir that gives a valid
 * scene (d_out a multiple of the heads, head_dim even under RoPE, ...), the others as they are;
 * a d_out that followed the width (d_out = d_in, as projection none and a block's residual
 * need) follows it on. Returns it, or v when there is none (why says what the next one breaks). */
static int next_valid(struct app *a, enum knob k, int v, int dir, char *why, size_t size)
{
    struct attn_scene t;
    if (shape_trial(&t, a))
        return v;
    int d_in = attn_scene_d_in(&a->doc.scene);
    bool follow = k == KNOB_DIM && t.attn.d_out == d_in;
    int top = k == KNOB_HEADS ? SCENE_MAX_HEADS : SCENE_MAX_DIM, found = v;
    why[0] = '\0';
    for (int x = v + dir; x >= 1 && x <= top && found == v; x += dir) {
        if (k == KNOB_D_OUT)
            t.attn.d_out = x;
        else if (k == KNOB_HEADS)
            t.attn.heads = x;
        else
            t.embed.dim = x;
        if (follow)
            t.attn.d_out = x;
        /* Why there is none: the next value's problem, unless that is only the split rule
           and a later value meets another (a block's residual, RoPE's even head_dim). */
        char problem[DIAG_MSG_MAX];
        if (shape_ok(&t, problem, sizeof(problem)))
            found = x;
        else if (!why[0] || (strstr(why, "not divisible") && !strstr(problem, "not divisible")))
            snprintf(why, size, "%s", problem);
    }
    attn_scene_free(&t);
    return found;
}

int app_step_knob(struct app *a, enum knob k, int direction)
{
    double v = app_knob_value(a, k);
    if (k == KNOB_TEMPERATURE) { /* the 0.1 grid, no drift; a typed 0.05 steps up to 0.1 */
        double next = round((v + direction * INTERP_T_STEP) * 10) / 10;
        next = next < INTERP_T_STEP ? INTERP_T_STEP : next > INTERP_T_MAX ? INTERP_T_MAX : next;
        return next == v ? 0 : app_set_temperature(a, next);
    }
    if (k == KNOB_DROPOUT) {
        double next = round((v + direction * 0.05) * 100) / 100; /* the 0.05 grid, no drift */
        next = next < 0 ? 0 : next > 1 ? 1 : next;
        return next == v ? 0 : app_edit_knob(a, k, next);
    }
    if (k == KNOB_SEED) {
        if ((direction < 0 && a->doc.scene.seed == 0) ||
            (direction > 0 && a->doc.scene.seed == UINT64_MAX))
            return 0; /* the ends of the seed range: no wrapping round */
        return app_edit_seed(a, a->doc.scene.seed + (uint64_t)(int64_t)direction);
    }
    if (a->doc.error[0]) /* invalid already: one step, as asked */
        return app_edit_knob(a, k, (int)v + direction >= 1 ? (int)v + direction : 1);
    struct attn_edit probe = {.kind = k == KNOB_DIM ? EDIT_DIM : EDIT_D_OUT};
    if ((k == KNOB_D_OUT || k == KNOB_DIM) && edit_refused(a, &probe))
        return -1;
    char why[DIAG_MSG_MAX];
    int next = next_valid(a, k, (int)v, direction, why, sizeof(why));
    if (next == (int)v) {
        if (!a->status.message_is_error)
            app_refuse(a, "no %s %s %d gives a valid scene: %.300s", knob_name(k),
                       direction > 0 ? "above" : "below", (int)v,
                       why[0]          ? why
                       : direction > 0 ? "the largest there is"
                                       : "1 is the least");
        return -1;
    }
    if (k == KNOB_DIM) { /* a d_out that followed the width follows it on */
        bool follow = a->doc.scene.attn.d_out == attn_scene_d_in(&a->doc.scene);
        struct attn_edit e = {.kind = EDIT_DIM, .dim = next, .d_out = follow ? next : 0};
        return edit(a, &e, "new embedding width");
    }
    return app_edit_knob(a, k, next);
}

int app_toggle_causal(struct app *a)
{
    struct attn_edit e = {.kind = EDIT_CAUSAL, .causal = !a->doc.scene.attn.causal};
    return edit(a, &e, "causal");
}

/* The projection cycle's next option after p. */
static enum attn_projection next_projection(enum attn_projection p)
{
    static const enum attn_projection next[] = {[PROJ_DEFAULT] = PROJ_NONE,
                                                [PROJ_NONE] = PROJ_RAND,
                                                [PROJ_RAND] = PROJ_LINEAR,
                                                [PROJ_LINEAR] = PROJ_NONE};
    return next[p];
}

/* Sets the projection p on t, as the cycle does: Q = K = V = X needs d_out = d_in; the d_out
 * and heads from before none come back when the cycle moves on. */
static void set_projection(struct attn_scene *t, const struct app *a, enum attn_projection p)
{
    struct attn_config *c = &t->attn;
    enum attn_projection from = attn_scene_eff_projection(t);
    c->projection = p;
    if (p == PROJ_NONE) {
        c->d_out = attn_scene_d_in(t);
    } else if (from == PROJ_NONE) {
        if (a->doc.d_out_before_none > 0)
            c->d_out = a->doc.d_out_before_none;
        if (a->doc.heads_before_none > 0)
            c->heads = a->doc.heads_before_none;
    }
    if (p != PROJ_LINEAR)
        c->qkv_bias = false;
}

/* Makes the edit that turns the scene into t's shape (projection, layout, d_out, heads), with
 * its undo step; the message says what moved besides what was asked (`moved`, `why`) and which
 * options were passed over (`skipped`). */
static int apply_shape(struct app *a, const struct attn_scene *t, const char *what,
                       const char *moved, const char *why, const char *skipped)
{
    const struct attn_config *c = &a->doc.scene.attn, *to = &t->attn;
    if (attn_scene_eff_projection(&a->doc.scene) != PROJ_NONE &&
        attn_scene_eff_projection(t) == PROJ_NONE) {
        a->doc.d_out_before_none = c->d_out;
        a->doc.heads_before_none = c->heads;
    }
    struct attn_edit e = {.kind = EDIT_SHAPE,
                          .projection = to->projection,
                          .layout = to->layout,
                          .d_out = to->d_out,
                          .heads = to->heads,
                          .qkv_bias = to->qkv_bias};
    struct attn_edit_effects fx;
    if (apply_edit(a, &e, what, &fx))
        return -1;
    size_t o = strlen(a->status.message);
    if (skipped[0] && o < sizeof(a->status.message))
        snprintf(a->status.message + o, sizeof(a->status.message) - o, "%s%s", o ? "; " : "",
                 skipped);
    int rc = settle_edit(a);
    if (moved[0] && !a->status.message_is_error) { /* first, where the message line shows it: what
                                               the edit moved besides what was asked, and why */
        char said[DIAG_MSG_MAX];
        snprintf(said, sizeof(said), "%s", a->status.message);
        snprintf(a->status.message, sizeof(a->status.message), "%.100s to stay valid: %.*s; %.250s",
                 moved, strstr(why, " (") ? (int)(strstr(why, " (") - why) : 120, why, said);
    }
    return rc;
}

int app_cycle_projection(struct app *a)
{
    struct attn_edit probe = {.kind = EDIT_SHAPE};
    if (edit_refused(a, &probe))
        return -1;
    enum attn_projection from = attn_scene_eff_projection(&a->doc.scene);
    if (a->doc.error[0]) { /* invalid already: the next option, as asked */
        struct attn_scene t;
        if (shape_trial(&t, a))
            return -1;
        set_projection(&t, a, next_projection(from));
        int rc = apply_shape(a, &t, "new projection", "", "", "");
        attn_scene_free(&t);
        return rc;
    }
    /* The next option that gives a valid scene (heads and, but under none, d_out moved as
       little as needed); an option that cannot be valid is passed over, and the message says
       why. */
    char skipped[400] = "", why[DIAG_MSG_MAX] = "";
    for (enum attn_projection p = next_projection(from); p != from; p = next_projection(p)) {
        struct attn_scene t, asked;
        if (shape_trial(&t, a))
            return -1;
        set_projection(&t, a, p);
        char problem[DIAG_MSG_MAX] = "";
        bool ok_asis = shape_ok(&t, problem, sizeof(problem));
        if (attn_scene_copy(&asked, &t)) {
            attn_scene_free(&t);
            app_refuse(a, "out of memory");
            return -1;
        }
        bool ok = ok_asis || nearest_valid_shape(&t, p != PROJ_NONE, true);
        if (ok) {
            char moved[160];
            shape_moves(moved, sizeof(moved), &asked, &t);
            int rc = apply_shape(a, &t, "new projection", moved, problem, skipped);
            attn_scene_free(&t);
            attn_scene_free(&asked);
            return rc;
        }
        attn_scene_free(&t);
        attn_scene_free(&asked);
        if (!why[0])
            snprintf(why, sizeof(why), "%s", problem);
        size_t o = strlen(skipped);
        if (o < sizeof(skipped))
            snprintf(skipped + o, sizeof(skipped) - o, "%sprojection %s passed over (%.150s)",
                     o ? "; " : "", attn_projection_name(p), problem);
    }
    app_refuse(a, "the projection stays %s: %.300s", attn_projection_name(from), why);
    return -1;
}

int app_cycle_layout(struct app *a)
{
    struct attn_edit probe = {.kind = EDIT_LAYOUT};
    if (edit_refused(a, &probe))
        return -1;
    struct attn_scene t, asked;
    if (shape_trial(&t, a))
        return -1;
    t.attn.layout = t.attn.layout == LAYOUT_SPLIT ? LAYOUT_WRAPPER : LAYOUT_SPLIT;
    char problem[DIAG_MSG_MAX] = "";
    bool ok = a->doc.error[0] || shape_ok(&t, problem, sizeof(problem));
    if (attn_scene_copy(&asked, &t)) {
        attn_scene_free(&t);
        app_refuse(a, "out of memory");
        return -1;
    }
    if (!ok && !nearest_valid_shape(&t, true, true)) {
        app_refuse(a, "the head layout stays %s: %.300s",
                   attn_layout_name(a->doc.scene.attn.layout), problem);
        attn_scene_free(&t);
        attn_scene_free(&asked);
        return -1;
    }
    char moved[160];
    shape_moves(moved, sizeof(moved), &asked, &t);
    int rc = apply_shape(a, &t, "new head layout", moved, problem, "");
    attn_scene_free(&t);
    attn_scene_free(&asked);
    return rc;
}

int app_cycle_mask_mode(struct app *a)
{
    const struct attn_config *c = &a->doc.scene.attn;
    struct attn_edit e = {.kind = EDIT_MASK_MODE,
                          .mask_mode = c->mask_mode == MASK_BEFORE_SOFTMAX ? MASK_AFTER_SOFTMAX
                                                                           : MASK_BEFORE_SOFTMAX};
    struct attn_edit_effects fx;
    if (apply_edit(a, &e, "new mask mode", &fx))
        return -1;
    if (!c->causal)
        snprintf(a->status.message, sizeof(a->status.message),
                 "mask mode %s (takes effect with causal on: c)",
                 attn_mask_mode_name(c->mask_mode));
    return settle_edit(a);
}

int app_toggle_scale(struct app *a)
{
    const struct attn_config *c = &a->doc.scene.attn;
    /* \u221ad_k <-> none; a given divisor (4 for ch. 3's d_k*0.5 slip) comes back after none */
    struct attn_edit e = {.kind = EDIT_SCALE, .scale_divisor = c->scale_divisor};
    if (attn_scene_eff_scale(&a->doc.scene) == SCALE_NONE)
        e.scale = c->scale_divisor > 0 ? SCALE_DIVISOR : SCALE_SQRT_DK;
    else
        e.scale = SCALE_NONE;
    return edit(a, &e, "new scale");
}

int app_edit_scale(struct app *a, enum attn_scale_kind kind, double divisor)
{
    const struct attn_config *c = &a->doc.scene.attn;
    if (kind == SCALE_DIVISOR ? c->scale == SCALE_DIVISOR && c->scale_divisor == divisor
                              : attn_scene_eff_scale(&a->doc.scene) == kind)
        return 0;
    struct attn_edit e = {.kind = EDIT_SCALE, .scale = kind, .scale_divisor = divisor};
    return edit(a, &e, "new scale");
}

int app_edit_scene(struct app *a, const struct attn_scene *to)
{
    struct attn_scene copy;
    if (attn_scene_copy(&copy, to)) {
        app_refuse(a, "out of memory");
        return -1;
    }
    begin_edit(a);
    attn_scene_free(&a->doc.scene);
    a->doc.scene = copy;
    return settle_edit(a);
}

int app_cycle_normalize(struct app *a)
{
    struct attn_edit e = {.kind = EDIT_NORMALIZE,
                          .normalize = a->doc.scene.attn.normalize == NORMALIZE_SOFTMAX
                                           ? NORMALIZE_SUM
                                           : NORMALIZE_SOFTMAX};
    return edit(a, &e, "new normalisation");
}

int app_cycle_tokenizer(struct app *a)
{
    static const enum attn_tokenizer next[TOKENIZER_CHARS + 1] = {
        [TOKENIZER_WHITESPACE] = TOKENIZER_WORDS,
        [TOKENIZER_WORDS] = TOKENIZER_CHARS,
        [TOKENIZER_CHARS] = TOKENIZER_WHITESPACE};
    enum attn_tokenizer t = a->doc.scene.tokenizer;
    /* the sentence again under the next tokenizer, by the sentence edit's rules (a vocabulary's
       tokenizer is refused before the table is read) */
    struct attn_edit e = {.kind = EDIT_TOKENIZER,
                          .tokenizer = t <= TOKENIZER_CHARS ? next[t] : TOKENIZER_WHITESPACE};
    return edit_text(a, &e);
}

/* "head 1" in a scene of one layer, "layer 1 head 0" in one of several. */
static void head_words(char *out, size_t size, const struct attn_scene *s, int layer, int head)
{
    if (s->layers > 1)
        snprintf(out, size, "layer %d head %d", layer, head);
    else
        snprintf(out, size, "head %d", head);
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
    bool first = (from->text == NULL) != (to->text == NULL) ||
                 (from->text && strcmp(from->text, to->text) != 0);
    bool second = (from->text_pair == NULL) != (to->text_pair == NULL) ||
                  (from->text_pair && strcmp(from->text_pair, to->text_pair) != 0);
    const struct attn_scene *fe = from->encoder, *te = to->encoder;
    if (fe && te && (fe->text == NULL) == (te->text == NULL) && fe->text &&
        strcmp(fe->text, te->text) != 0)
        SAY("the source (%d \u2192 %d tokens)", fe->n_tokens, te->n_tokens);
    if (first || second)
        SAY("the %s (%d \u2192 %d tokens)",
            !second  ? "sentence"
            : !first ? "second sentence"
                     : "sentences",
            from->n_tokens, to->n_tokens);
    else if (from->n_tokens != to->n_tokens) /* the same text, tokenised otherwise */
        SAY("%d \u2192 %d tokens", from->n_tokens, to->n_tokens);
    /* Ablations: each head whose mode moved, in the order of the lists. */
    char where[48];
    for (int i = 0; i < to->n_ablate; i++) {
        const struct attn_ablation *ab = &to->ablate[i];
        enum attn_head_mode was = attn_scene_ablation(from, ab->layer, ab->head);
        if (was == ab->mode)
            continue;
        head_words(where, sizeof(where), to, ab->layer, ab->head);
        if (was == HEAD_KEEP)
            SAY("%s ablated (%s)", where, attn_head_mode_name(ab->mode));
        else
            SAY("%s ablated (%s \u2192 %s)", where, attn_head_mode_name(was),
                attn_head_mode_name(ab->mode));
    }
    for (int i = 0; i < from->n_ablate; i++) {
        const struct attn_ablation *ab = &from->ablate[i];
        if (attn_scene_ablation(to, ab->layer, ab->head) != HEAD_KEEP)
            continue;
        head_words(where, sizeof(where), from, ab->layer, ab->head);
        SAY("%s no longer ablated", where);
    }
#undef SAY
}

static int swap_history(struct app *a, struct attn_scene *from, int *n_from, struct attn_scene *to,
                        int *n_to, const char *what)
{
    if (*n_from == 0) {
        snprintf(a->status.message, sizeof(a->status.message), "nothing to %s", what);
        return 0;
    }
    if (!a->doc.unshown) /* a scene never shown (invalid) is dropped, not kept to come back to */
        push(to, n_to, &a->doc.scene);
    char change[240];
    describe_change(change, sizeof(change), &a->doc.scene, &from[*n_from - 1]);
    attn_scene_free(&a->doc.scene);
    a->doc.scene = from[--(*n_from)];
    a->doc.edits++;
    memset(&from[*n_from], 0, sizeof(from[*n_from]));
    int rc = settle(a);
    snprintf(a->status.message, sizeof(a->status.message), "%s%s%s",
             strcmp(what, "undo") == 0 ? "undid" : "redid", change[0] ? ": " : "", change);
    a->status.message_is_error = false;
    if (rc == 0)
        warnings_note(a, false);
    baseline_note(a);
    return rc;
}

int app_undo(struct app *a)
{
    return swap_history(a, a->doc.undo, &a->doc.n_undo, a->doc.redo, &a->doc.n_redo, "undo");
}

int app_redo(struct app *a)
{
    return swap_history(a, a->doc.redo, &a->doc.n_redo, a->doc.undo, &a->doc.n_undo, "redo");
}

void app_exact(struct app *a)
{
    app_wait(a);
    if (a->result.net.near_from >= 0) {
        attn_net_forward_exact(&a->result.net);
        a->result.generation++; /* the caches hold the near numbers */
        caches_invalidate(&a->cache);
    }
}

int app_export(struct app *a, const char *dir, struct diag *err)
{
    /* Export what is on screen: the last valid state, as CSV (attnscope export --format npy
       writes .npy), its near rows (a last-word edit's) first made a fresh computation's. A
       compute still running (e asks at once) is waited for first. */
    app_exact(a);
    /* layer by layer, each shown again first in stream mode (the pinned one keeps its stages) */
    struct attn_net *net = &a->result.net;
    struct export_stream x;
    if (export_stream_begin(&x, dir, EXPORT_CSV, EXPORT_TOP_DEFAULT, &a->result.export_progress,
                            err) != 0)
        return -1;
    for (int L = 0; L < net->layers; L++) {
        if (attn_net_materialise(net, L, err) != 0) {
            export_stream_abort(&x);
            return -1;
        }
        if (export_stream_layer(&x, &a->result.shown, net, L, err) != 0)
            return -1;
    }
    return export_stream_end(&x, &a->result.shown, net, err);
}

int app_save(struct app *a, const char *path, bool overwrite, struct diag *err)
{
    /* A file that would not load is no use to anyone: fix or undo first. */
    if (a->doc.error[0])
        return attn_diag_set(err, "", "the edited scene is invalid (%.300s); fix it or undo first",
                             a->doc.error);
    /* A lesson's scene is saved as it is on screen, a scene of its own: with its lesson the
     * file would open on step 1 with this step's edits already made, under captions that no
     * longer hold. The lesson's own file is where the lesson is. */
    struct attn_scene plain = a->doc.scene; /* a shallow copy, only read */
    plain.lesson = NULL;
    if (attn_scenefile_save(path, &plain, false, overwrite, err))
        return -1;
    a->doc.saved_depth = a->doc.n_undo;
    struct attn_scene copy; /* the title now speaks of the scene as saved */
    if (attn_scene_copy(&copy, &a->doc.scene) == 0) {
        attn_scene_free(&a->doc.written);
        a->doc.written = copy;
    }
    return 0;
}
