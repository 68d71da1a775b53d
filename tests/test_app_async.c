/* test_app_async: the explorer's background compute (explore/app.h, app_new_background).
 *
 * The explorer's thread reads the layers ready while the job's thread computes the rest; edits
 * stop the compute and start their own; and every result ends bit for bit what the same scene
 * computed on one thread gives. scripts/test runs this suite again under ThreadSanitizer
 * (build-tsan), which fails it on any read of a layer the job's thread still writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "explore/app.h"
#include "explore/appstate.h"
#include "explore/commands.h"
#include "explore/inspect.h"
#include "explore/zoom.h"
#include "scenefile/scenefile.h"

/* words whitespace-tokenised words of a small vocabulary (so the tokens repeat, as text does) */
static char *sentence_with(int words, int salt, int at, const char *word);

static char *sentence(int words, int salt)
{
    return sentence_with(words, salt, -1, NULL);
}

/* The same, word `at` replaced by `word`. */
static char *sentence_with(int words, int salt, int at, const char *word)
{
    static const char *const vocab[] = {"the",  "cat", "sat", "on", "a",   "mat",  "and",
                                        "then", "it",  "ran", "to", "one", "house"};
    size_t cap = (size_t)words * 8 + 1, o = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    for (int i = 0; i < words; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s%s", i ? " " : "",
                              i == at ? word : vocab[((unsigned)i * 7u + (unsigned)salt) % 13u]);
    return s;
}

/* A scene of layers x words tokens x 256 wide, 8 heads, a pre-norm block: tens of milliseconds,
 * long enough that every edit below lands while a compute runs. */
static void make_scene(struct attn_scene *s, int layers, int words)
{
    char *text = sentence(words, 0);
    size_t cap = strlen(text) + 1024;
    char *yaml = malloc(cap);
    assert_non_null(yaml);
    int len = snprintf(yaml, cap,
                       "version: 1\n"
                       "title: background compute\n"
                       "text: %s\n"
                       "tokenizer: whitespace\n"
                       "seed: 7\n"
                       "layers: %d\n"
                       "embeddings: {dim: 256}\n"
                       "positional: {kind: learned, max_len: 1024}\n"
                       "attention: {qkv: fused, d_out: 256, heads: 8, causal: true,\n"
                       "            out_proj: true}\n"
                       "block: {order: pre, norm: layer, ffn_hidden: 1024, activation: gelu}\n",
                       text, layers);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int rc = attn_scenefile_parse(s, "async.yaml", yaml, (size_t)len, &errs);
    if (rc)
        fail_msg("%s", errs.n ? errs.items[0].msg : "out of memory");
    attn_diag_list_free(&errs);
    free(yaml);
    free(text);
}

/* x and y of one shape, every row the same bits; what names them in a failure. */
static void assert_same_rows(struct attn_mat_view x, struct attn_mat_view y, const char *what)
{
    assert_non_null(x.data);
    assert_non_null(y.data);
    assert_int_equal(x.rows, y.rows);
    assert_int_equal(x.cols, y.cols);
    for (int i = 0; i < x.rows; i++)
        if (memcmp(x.data + (size_t)i * x.stride, y.data + (size_t)i * y.stride,
                   (size_t)x.cols * sizeof(float)) != 0)
            fail_msg("%s: row %d differs", what, i);
}

/* Every kept stage a panel reads of every layer, bit for bit: the weights of each head, what the
 * layer hands on, and the not-a-number note. */
static void assert_same_result(const struct app *a, const struct app *b)
{
    const struct attn_net *x = &a->result.net, *y = &b->result.net;
    assert_int_equal(x->layers, y->layers);
    char what[96];
    for (int L = 0; L < x->layers; L++) {
        const struct attn_model *m = &x->model[L];
        assert_int_equal(m->n, y->model[L].n);
        assert_int_equal(m->heads, y->model[L].heads);
        for (int h = 0; h < m->heads; h++) {
            snprintf(what, sizeof(what), "layer %d head %d: weights", L, h);
            assert_same_rows(app_view_at(a, L, STAGE_WEIGHTS, h),
                             app_view_at(b, L, STAGE_WEIGHTS, h), what);
        }
        enum attn_stage out = attn_stage_block_output(m);
        snprintf(what, sizeof(what), "layer %d: %s", L, attn_stage_name(out));
        assert_same_rows(app_view_at(a, L, out, 0), app_view_at(b, L, out, 0), what);
    }
    assert_string_equal(a->result.nonfinite, b->result.nonfinite);
}

/* The explorer in the background mode on make_scene's scene: its first compute under way. */
static struct app *open_background(int layers, int words)
{
    struct attn_scene s;
    make_scene(&s, layers, words);
    struct app *a;
    struct diag err;
    assert_int_equal(app_new_background(&a, &s, NULL, &err), 0);
    return a;
}

/* The same scene as a's document, computed on this thread alone. */
static struct app *computed_alone(const struct app *a)
{
    struct attn_scene s;
    assert_int_equal(attn_scene_copy(&s, &a->doc.scene), 0);
    struct app *b;
    struct diag err;
    assert_int_equal(app_new(&b, &s, NULL, NULL, &err), 0);
    return b;
}

/* a's result is its document's computed on this thread alone, bit for bit. */
static void assert_as_alone(const struct app *a)
{
    struct app *b = computed_alone(a);
    assert_same_result(a, b);
    app_delete(b);
}

/* What a panel does between frames: the weights of head 0 of every layer ready, each row's sum
 * 1 (the causal softmax). Returns the layers ready. */
static int read_ready(struct app *a)
{
    int ready = 0;
    for (int L = 0; L < a->result.net.layers && app_layer_ready(a, L); L++, ready++) {
        struct attn_mat_view v = app_view_at(a, L, STAGE_WEIGHTS, 0);
        for (int i = 0; i < v.rows; i += 37) {
            double sum = 0;
            for (int j = 0; j < v.cols; j++)
                sum += v.data[(size_t)i * v.stride + j];
            if (sum < 0.999 || sum > 1.001)
                fail_msg("layer %d ready, but its row %d sums to %g", L, i, sum);
        }
    }
    return ready;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The layers come ready one after the other, each readable as it comes, and the result is the
 * one-thread result bit for bit. */
static void test_layers_come_ready(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    assert_true(app_computing(a)); /* it returned with the compute under way */
    int last = 0, polls = 0;
    while (app_computing(a)) {
        app_poll(a);
        int ready = read_ready(a);
        assert_true(ready >= last); /* never back */
        last = ready;
        polls++;
        sleep_ms(1);
    }
    assert_true(polls > 1);
    struct app_progress pr;
    app_compute_progress(a, &pr);
    assert_int_equal(pr.ready, 6);
    assert_int_equal(pr.layers, 6);
    assert_as_alone(a);
    app_delete(a);
}

/* Edits while a compute runs (the heads, the sentence, an append, undo): each stops the one
 * running and starts its own; the end is the one-thread result of the scene as edited. */
static void test_edits_restart_it(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    assert_int_equal(app_edit_knob(a, KNOB_HEADS, 4), 0); /* at once, mid-compute */
    assert_true(app_computing(a));
    read_ready(a);
    char *text = sentence(384, 3);
    assert_int_equal(app_edit_text(a, text), 0);
    free(text);
    sleep_ms(3);
    read_ready(a);
    char *longer = sentence(390, 3);
    assert_int_equal(app_edit_text(a, longer), 0); /* the same words and six more */
    free(longer);
    app_poll(a);
    read_ready(a);
    assert_int_equal(app_undo(a), 0);
    assert_int_equal(app_edit_knob(a, KNOB_HEADS, 2), 0);
    while (app_computing(a)) {
        app_poll(a);
        read_ready(a);
        sleep_ms(1);
    }
    assert_int_equal(a->result.net.model[0].heads, 2);
    assert_int_equal(a->result.net.model[0].n, 384);
    assert_as_alone(a);
    /* app_wait: a compute started, waited for */
    assert_int_equal(app_edit_knob(a, KNOB_HEADS, 8), 0);
    app_wait(a);
    assert_false(app_computing(a));
    assert_as_alone(a);
    app_delete(a);
}

/* An ablation recomputes from its own layer on: the layers before it are ready at once. A
 * sentence edit typed while another computes keeps the rows that one kept. Both end bit for bit
 * the one-thread result. */
static void test_edits_start_where_they_change(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    app_wait(a);
    assert_int_equal(app_set_ablation(a, 5, 0, HEAD_ZERO), 0);
    for (int L = 0; L < 5; L++)
        assert_true(app_layer_ready(a, L)); /* kept, not recomputed */
    assert_int_equal(a->result.net.first_layer, 5);
    app_wait(a);
    assert_as_alone(a);
    /* ablated again, and Esc: in place, taken back by computing layer 5 again unablated */
    assert_int_equal(app_set_ablation(a, 5, 1, HEAD_ZERO), 0);
    assert_true(app_result(a)->stop_by_undo);
    if (app_computing(a)) {
        assert_int_equal(app_stop_compute(a, "Esc"), 1);
        assert_int_equal(a->result.net.first_layer, 5);
    }
    app_wait(a);
    assert_int_equal(app_head_mode(a, 5, 1), HEAD_KEEP);
    assert_int_equal(app_head_mode(a, 5, 0), HEAD_ZERO);
    assert_int_equal(app_set_ablation(a, 5, 0, HEAD_KEEP), 0);
    app_wait(a);
    /* 390 words, then a change at word 300 while it computes: rows 0 .. 255 kept throughout */
    char *longer = sentence(390, 0);
    assert_int_equal(app_edit_text(a, longer), 0);
    free(longer);
    assert_int_equal(a->result.net.kept_rows, 384 - 384 % 128);
    char *changed =
        sentence_with(390, 0, 300, "cat") /* "then" there: no new word, the same parameters */;
    assert_int_equal(app_edit_text(a, changed), 0);
    free(changed);
    assert_true(a->result.net.kept_rows >= 256); /* mid-compute, partial: its rows still kept */
    app_wait(a);
    assert_as_alone(a);
    app_delete(a);
}

/* A BF16 checkpoint's matrices are widened one at a time into a buffer: the inspector's W_out
 * of a ready layer, read while the compute widens the next layers' into a buffer of its own
 * (attn_param_cache_worker), never the same one (ThreadSanitizer would see it). */
static void test_parameters_while_computing(void **state)
{
    (void)state;
    setenv("ATTNSCOPE_GFLOPS", "0.001", 1); /* estimated long: computed in the background */
    setenv("ATTNSCOPE_HEAD_PAUSE_MS", "15", 1);
    char path[4200];
    const char *golden = getenv("ATTNSCOPE_GOLDEN_DIR");
    snprintf(path, sizeof(path), "%s/gpt2/scenes/tiny-bf16.yaml", golden ? golden : "tests/golden");
    struct attn_scene s;
    assert_int_equal(attn_scenefile_load_report(&s, path, stderr), 0);
    struct app *a;
    struct diag err;
    assert_int_equal(app_new_background(&a, &s, path, &err), 0);
    assert_true(app_computing(a));
    while (!app_layer_ready(a, 0))
        sleep_ms(1);
    app_view_mut(a)->stage = STAGE_OUTPUT; /* out_proj: a lazy matrix of its own (W_out) */
    char text[4096];
    int read = 0;
    while (app_computing(a)) {
        inspect_explain(text, sizeof(text), a); /* W_out's column, widened on this thread */
        assert_non_null(strstr(text, "W_out"));
        read++;
        app_poll(a);
    }
    assert_true(read > 1);
    struct app *b = computed_alone(a);
    assert_same_result(a, b);
    /* the lens, filled by a job in the background; the same guesses as on one thread */
    int n = a->result.net.model[0].n, layers = a->result.net.layers;
    assert_int_equal(app_lens_fill(a, 0, n, &err), 1);
    assert_true(app_interp_busy(a));
    while (app_computing(a))
        app_poll(a);
    assert_int_equal(app_lens_fill(a, 0, n, &err), 0); /* filled */
    assert_int_equal(app_lens_fill(b, 0, n, &err), 0);
    for (int L = 0; L < layers; L++)
        for (int i = 0; i < n; i++) {
            const struct attn_token_score *x = interp_lens_top(&app_caches(a)->interp, L, i, NULL);
            const struct attn_token_score *y = interp_lens_top(&app_caches(b)->interp, L, i, NULL);
            assert_non_null(x);
            assert_non_null(y);
            assert_memory_equal(x, y, sizeof(*x));
        }
    /* an ablation: the run without it (the predictions' "before") made in the job's thread,
       the net untouched, the same before -> after as on one thread */
    assert_int_equal(app_set_ablation(a, 1, 0, HEAD_ZERO), 0);
    assert_int_equal(app_set_ablation(b, 1, 0, HEAD_ZERO), 0);
    app_wait(a);
    struct interp_compare ca, cb;
    assert_int_equal(app_prediction_compare(a, &ca, &err), 0);
    assert_int_equal(app_prediction_compare(b, &cb, &err), 0);
    assert_int_equal(ca.id, cb.id);
    assert_memory_equal(&ca.before, &cb.before, sizeof(ca.before));
    assert_memory_equal(&ca.after, &cb.after, sizeof(ca.after));
    assert_same_result(a, b);
    app_delete(b);
    app_delete(a);
    unsetenv("ATTNSCOPE_GFLOPS");
    unsetenv("ATTNSCOPE_HEAD_PAUSE_MS");
}

/* A sentence edit that keeps rows computes in place, into the buffers it keeps them in; Esc
 * takes it back by computing the sentence before it again from those rows, and the end is the
 * one-thread result of the sentence before it. */
static void test_stop_a_sentence_edit(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    app_wait(a);
    char *changed = sentence_with(384, 0, 300, "cat"); /* word 300 ("then"): rows 0 .. 255 kept */
    assert_int_equal(app_edit_text(a, changed), 0);
    free(changed);
    assert_true(app_computing(a));
    assert_true(app_result(a)->stop_by_undo); /* in place: no second result */
    assert_true(app_result(a)->stoppable);
    assert_int_equal(app_stop_compute(a, "Esc"), 1);
    assert_non_null(strstr(a->status.message, "stopped: that edit would take about"));
    assert_true(a->result.net.kept_rows >= 256); /* the sentence before it, from the same rows */
    app_wait(a);
    struct app *b = computed_alone(a);
    char *before = sentence(384, 0);
    assert_string_equal(a->doc.scene.text, before);
    free(before);
    assert_same_result(a, b);
    app_delete(b);
    app_delete(a);
}

/* B computes the baseline's own result in the background and pins it when it ends; B again
 * meanwhile stops it, and nothing is pinned. */
static void test_baseline_in_the_background(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    app_wait(a);
    assert_int_equal(app_toggle_baseline(a), 2);
    assert_false(app_baseline(a)->pinned);
    while (app_computing(a)) {
        read_ready(a); /* the result on screen, read while the baseline computes */
        app_poll(a);
    }
    assert_true(app_baseline(a)->pinned);
    assert_true(app_delta_ok(a));
    /* the same scene: the same numbers */
    assert_same_rows(app_base_view(a), app_view(a, a->view.stage, a->view.head), "the baseline");
    assert_int_equal(app_toggle_baseline(a), 0); /* unpinned */
    /* pinned, then an edit at once: the pin is finished first, the edit compared with it */
    assert_int_equal(app_toggle_baseline(a), 2);
    assert_int_equal(app_edit_knob(a, KNOB_HEADS, 4), 0);
    assert_true(app_baseline(a)->pinned);
    app_wait(a);
    assert_int_equal(app_toggle_baseline(a), 0);
    assert_int_equal(app_toggle_baseline(a), 2);
    struct ask ask = {0};
    command_run(a, ACTION_BASELINE, &ask); /* B again while it computes: stopped */
    assert_false(app_computing(a));
    assert_false(app_baseline(a)->pinned);
    assert_non_null(strstr(a->status.message, "stopped pinning the baseline"));
    app_delete(a);
}

/* r computes the rollout through the layer on screen in the background (and again through
 * the next layer on }), the same numbers as on one thread. */
static void test_rollout_in_the_background(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    app_wait(a);
    app_set_layer(a, 4);
    struct ask ask = {0};
    command_run(a, ACTION_ROLLOUT, &ask);
    struct app_progress pr;
    app_compute_progress(a, &pr);
    assert_true(pr.rollout);
    assert_true(app_interp_busy(a));
    while (app_computing(a)) {
        read_ready(a);
        app_poll(a);
    }
    command_run(a, ACTION_LAYER_NEXT, &ask); /* through layer 5: one step more */
    app_wait(a);
    struct app *b = computed_alone(a);
    app_set_layer(b, 5);
    b->view.rollout = true;
    assert_same_rows(app_rollout_view(a), app_rollout_view(b), "the rollout");
    app_delete(b);
    app_delete(a);
}

/* Every head scored in the background (S in the model view), each read as it lands, the same
 * numbers as one head scored at a time on one thread. */
static void test_scores_in_the_background(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    app_wait(a);
    assert_int_equal(app_request_scores(a), 1);
    assert_int_equal(app_request_scores(a), 0); /* one at a time */
    int layers = a->result.net.layers, heads = a->result.net.model[0].heads, landed = 0;
    double sum = 0;
    while (app_computing(a)) {
        for (int L = 0; L < layers; L++)
            for (int h = 0; h < heads; h++) {
                const struct head_scores *k = app_scores_kept(a, L, h);
                if (k) {
                    sum += k->value[SCORE_PREVIOUS];
                    landed++;
                }
            }
        app_poll(a);
    }
    (void)sum;
    struct app *b = computed_alone(a);
    for (int L = 0; L < layers; L++)
        for (int h = 0; h < heads; h++) {
            const struct head_scores *k = app_scores_kept(a, L, h), *one = app_scores(b, L, h);
            assert_non_null(k);
            assert_memory_equal(k->value, one->value, sizeof(k->value));
            assert_memory_equal(k->defined, one->defined, sizeof(k->defined));
        }
    assert_int_equal(app_request_scores(a), 0); /* every head scored */
    app_delete(b);
    app_delete(a);
}

/* Keys that read what is still computing are answered at once, with why, or ask what they
 * write meanwhile; closing the explorer mid-compute stops it. */
static void test_keys_while_computing(void **state)
{
    (void)state;
    struct app *a = open_background(6, 384);
    app_set_layer(a, 5); /* the last: ready last */
    struct ask ask = {0};
    if (!app_layer_ready(a, 5)) {
        command_run(a, ACTION_ROW_MAX, &ask);
        assert_non_null(strstr(a->status.message, "layer 5 is still computing"));
    }
    command_run(a, ACTION_EXPORT, &ask); /* the prompt at once; the export waits for the end */
    assert_int_equal(ask.kind, PROMPT_EXPORT);
    ask_clear(&ask);
    app_delete(a); /* mid-compute: stopped and joined */
}

/* ---- stream mode (net.h's stage_budget): two layers hold their n x n stages ---------------- */

/* The layers of a's result holding a stage set: never more than its stage_layers. */
static void assert_sets_within(const struct app *a)
{
    int held = 0;
    for (int L = 0; L < a->result.net.layers; L++)
        held += attn_run_holds_stages(&a->result.net.run[L]);
    assert_true(held <= a->result.net.stage_layers);
}

/* Layer L of a, shown (a job recomputed it): every head's weights and what it hands on are b's
 * (a net that keeps every layer) bit for bit. */
static void assert_layer_as(const struct app *a, const struct app *b, int L)
{
    char what[96];
    assert_true(app_layer_ready(a, L));
    for (int h = 0; h < a->result.net.model[L].heads; h++) {
        snprintf(what, sizeof(what), "stream: layer %d head %d: weights", L, h);
        assert_same_rows(app_view_at(a, L, STAGE_WEIGHTS, h), app_view_at(b, L, STAGE_WEIGHTS, h),
                         what);
    }
    enum attn_stage out = attn_stage_block_output(&a->result.net.model[L]);
    snprintf(what, sizeof(what), "stream: layer %d: %s", L, attn_stage_name(out));
    assert_same_rows(app_view_at(a, L, out, 0), app_view_at(b, L, out, 0), what);
}

/* What a frame does while a job runs in stream mode: reads every layer app_layer_ready allows
 * (the pinned one: the job may take any other layer's stages meanwhile), and polls. */
static void frames_until_done(struct app *a)
{
    while (app_computing(a)) {
        for (int L = 0; L < a->result.net.layers; L++)
            if (app_layer_ready(a, L)) {
                struct attn_mat_view v = app_view_at(a, L, STAGE_WEIGHTS, 0);
                assert_non_null(v.data);
                volatile float sum = 0;
                for (int i = 0; i < v.rows; i += 17)
                    sum += v.data[(size_t)i * v.stride + i / 2];
                (void)sum;
            }
        app_show_layer(a); /* as the screen manager before each frame */
        app_poll(a);
        sleep_ms(1);
    }
    app_show_layer(a);
    app_wait(a);
}

/* Layers shown in any order are recomputed in a job and are a full net's bits; the model view's
 * tiles, the scores and the rollout walk every layer in the job's thread while this one reads
 * the pinned layer; a heads edit and its Esc, and a last-word edit, end as the one-thread
 * result. ThreadSanitizer (scripts/test) sees every read against the job's writes. */
static void test_stream_mode(void **state)
{
    (void)state;
    setenv("ATTNSCOPE_STAGE_MIB", "0.5", 1); /* a set is 9.4 MiB here: two sets */
    struct app *a = open_background(6, 384);
    setenv("ATTNSCOPE_STAGE_MIB", "0", 1);
    frames_until_done(a);
    assert_int_equal(a->result.net.stage_layers, 2);
    assert_sets_within(a);
    struct app *b = computed_alone(a);
    assert_int_equal(b->result.net.stage_layers, 0); /* the one-thread explorer keeps all */
    static const int order[] = {3, 1, 5, 0, 4, 4, 2, 0};
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        app_set_layer(a, order[k]);
        frames_until_done(a);
        assert_layer_as(a, b, order[k]);
        assert_sets_within(a);
    }
    /* the model view's tiles of every layer, pooled in the job's thread */
    int heads = a->result.net.model[0].heads, rows = 7, cols = 9;
    struct app_thumb_key key = {0, STAGE_WEIGHTS, BLOCK_MAX, rows, cols, heads};
    app_request_thumbs(a, &key);
    assert_true(app_computing(a));
    frames_until_done(a);
    int done;
    const struct app_thumb_walk *w = app_thumbs(a, &key, &done);
    assert_non_null(w);
    assert_int_equal(done, 6);
    for (int L = 0; L < 6; L++)
        for (int h = 0; h < heads && L != w->skipped; h++) {
            struct attn_mat_view v = app_view_at(b, L, STAGE_WEIGHTS, h);
            const float *t = w->cells + ((size_t)L * heads + (size_t)h) * (size_t)(rows * cols);
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < cols; j++) {
                    float want = zoom_pooled(v, i, j, rows, cols, BLOCK_MAX);
                    assert_memory_equal(&t[i * cols + j], &want, sizeof(float));
                }
        }
    /* every head scored, each layer shown again in the job's thread */
    assert_int_equal(app_request_scores(a), 1);
    frames_until_done(a);
    for (int L = 0; L < 6; L++)
        for (int h = 0; h < heads; h++) {
            const struct head_scores *kept = app_scores_kept(a, L, h), *one = app_scores(b, L, h);
            assert_non_null(kept);
            assert_memory_equal(kept->value, one->value, sizeof(kept->value));
        }
    /* the rollout through layer 4 */
    app_set_layer(a, 4);
    frames_until_done(a);
    struct ask ask = {0};
    command_run(a, ACTION_ROLLOUT, &ask);
    frames_until_done(a);
    app_set_layer(b, 4);
    b->view.rollout = true;
    assert_same_rows(app_rollout_view(a), app_rollout_view(b), "stream: the rollout");
    assert_sets_within(a);
    command_run(a, ACTION_ROLLOUT, &ask); /* off again */
    app_delete(b);
    /* a heads edit, stopped: the scene before it computed again */
    assert_int_equal(app_edit_knob(a, KNOB_HEADS, 4), 0);
    if (app_computing(a)) {
        assert_true(app_result(a)->stoppable);
        assert_int_equal(app_stop_compute(a, "Esc"), 1);
    }
    frames_until_done(a);
    assert_int_equal(a->result.net.model[0].heads, 8);
    b = computed_alone(a);
    assert_layer_as(a, b, 4);
    app_delete(b);
    /* the heads edit through, then a last word changed (the row path past the sets) */
    assert_int_equal(app_edit_knob(a, KNOB_HEADS, 4), 0);
    frames_until_done(a);
    char *changed = sentence_with(384, 0, 383, "dog");
    assert_int_equal(app_edit_text(a, changed), 0);
    free(changed);
    frames_until_done(a);
    app_exact(a); /* the near path's rows made a fresh computation's */
    b = computed_alone(a);
    for (int L = 5; L >= 0; L--) {
        app_set_layer(a, L);
        frames_until_done(a);
        assert_layer_as(a, b, L);
    }
    assert_sets_within(a);
    app_delete(b);
    app_delete(a);
}

int main(void)
{
    /* every layer keeps its stages, as the tests before test_stream_mode read them (it sets
       its own budget) */
    setenv("ATTNSCOPE_STAGE_MIB", "0", 1);
    const struct CMUnitTest tests[] = {
        /* first: attn_measured_gflops keeps the speed it first finds, ATTNSCOPE_GFLOPS's here */
        cmocka_unit_test(test_parameters_while_computing),
        cmocka_unit_test(test_layers_come_ready),
        cmocka_unit_test(test_edits_restart_it),
        cmocka_unit_test(test_edits_start_where_they_change),
        cmocka_unit_test(test_stop_a_sentence_edit),
        cmocka_unit_test(test_baseline_in_the_background),
        cmocka_unit_test(test_rollout_in_the_background),
        cmocka_unit_test(test_scores_in_the_background),
        cmocka_unit_test(test_keys_while_computing),
        cmocka_unit_test(test_stream_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
