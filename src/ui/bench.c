/* bench: key -> frame on a virtual terminal, the latency a user feels (see bench.h).
 *
 * The explorer runs exactly as ui_main runs it (ui_open, ui_key, ui_mark, ui_draw), on a newterm
 * whose output goes to /dev/null: curses still computes and writes every changed cell, only no
 * terminal emulator reads them. Each figure is the median of its repeats, so one page fault or
 * a busy neighbour does not decide it; the maximum is reported beside it. Beside each compute
 * goes the products its pass had to do (the caller divides them by sgemm's speed: the bound),
 * and beside the run the memory it held, sampled by a thread of its own.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui/bench.h"

#include <curses.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/progress.h"
#include "ui/ui.h"

/* The value in KiB of /proc/self/status's line `key` ("RssAnon:"), -1 when there is none.
 * read(2) on a stack buffer: no allocation, so the sampler does not move what it measures. */
static long status_kib(const char *key)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    const char *line = strstr(buf, key);
    return line ? strtol(line + strlen(key), NULL, 10) : -1;
}

/* The sampler: RssAnon every UI_BENCH_SAMPLE_MS until told to stop. A peak held for less than
 * that may be missed; one held through a layer's pass is not. */
struct sampler {
    pthread_t thread;
    atomic_bool stop;
    atomic_long peak_kib;
};

static void *sample(void *arg)
{
    struct sampler *sm = arg;
    const struct timespec pause = {0, UI_BENCH_SAMPLE_MS * 1000000L};
    while (!atomic_load(&sm->stop)) {
        long kib = status_kib("RssAnon:");
        if (kib > atomic_load(&sm->peak_kib))
            atomic_store(&sm->peak_kib, kib);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* ms and flops (NULL for a key that computes nothing): n repeats each, sorted in place. */
static void summarize(struct ui_bench_figure *f, double *ms, double *flops, int n)
{
    f->median_ms = median_of(ms, n);
    f->max_ms = n ? ms[n - 1] : 0;
    f->n = n;
    f->flops = flops ? median_of(flops, n) : 0;
}

/* Keys that set up an action without being timed: a prompt opened and filled in. */
static void press(struct ui *ui, const char *keys)
{
    for (const char *k = keys; *k; k++) {
        ui_mark(ui, ui_key(ui, (wint_t)(unsigned char)*k, false));
        ui_draw(ui);
    }
}

/* Keys pressed without a frame between them (the cursor walked along the prompt's line), then
 * one frame. */
static void press_quietly(struct ui *ui, wint_t key, bool is_code, int times)
{
    for (int i = 0; i < times; i++)
        ui_mark(ui, ui_key(ui, key, is_code));
    ui_draw(ui);
}

/* The timed part: one key, what it marks stale, the frame. Returns milliseconds. */
static double timed_key(struct ui *ui, wint_t key, bool is_code)
{
    double t0 = attn_now_ms();
    ui_mark(ui, ui_key(ui, key, is_code));
    ui_draw(ui);
    return attn_now_ms() - t0;
}

/* Keys timed while a compute runs (ui_bench_result.busy). */
struct busy_keys {
    double *ms; /* (UI_BENCH_BUSY_MAX) */
    int n, next;
};

static void sleep_ms(double ms)
{
    struct timespec t = {0, (long)(ms * 1e6)};
    nanosleep(&t, NULL);
}

/* The loop ui_main runs while a compute started at t0 (ms) goes on: its tick (app_poll, the
 * layers done drawn), and every UI_BENCH_BUSY_MS a stage key, timed to its frame into busy (NULL:
 * none, so the keys' own frames do not slow the compute timed: the sentence edits').
 * *view_ms: t0 to the frame that first drew the layer in view; returns t0 to the frame after the
 * last layer. A compute made on the explorer's thread (a small one) was over with the key. */
static double settle(struct ui *ui, double t0, double *view_ms, struct busy_keys *busy)
{
    bool seen = app_layer_ready(ui->app, app_view_state(ui->app)->layer);
    *view_ms = seen ? attn_now_ms() - t0 : 0;
    double last_key = attn_now_ms();
    while (app_computing(ui->app)) {
        sleep_ms(0.5);
        bool draw = ui_compute_tick(ui);
        if (!seen && app_layer_ready(ui->app, app_view_state(ui->app)->layer)) {
            ui_draw(ui);
            *view_ms = attn_now_ms() - t0;
            seen = true;
            draw = false;
        }
        if (draw)
            ui_draw(ui);
        if (busy && app_computing(ui->app) && attn_now_ms() - last_key >= UI_BENCH_BUSY_MS &&
            busy->n < UI_BENCH_BUSY_MAX) {
            busy->ms[busy->n++] = timed_key(ui, busy->next++ % 2 ? ',' : '.', false);
            last_key = attn_now_ms();
        }
    }
    ui_draw(ui);
    double all = attn_now_ms() - t0;
    if (!seen)
        *view_ms = all;
    return all;
}

/* The first token at which the result's scene differs from tokens (n of them, ids may be NULL):
 * the first row an edit between them has to recompute. */
static int first_changed(const struct attn_scene *s, char *const *tokens, const int *ids, int n)
{
    int m = s->n_tokens < n ? s->n_tokens : n, p = 0;
    while (p < m && strcmp(s->tokens[p], tokens[p]) == 0 &&
           (!ids || !s->token_ids || ids[p] == s->token_ids[p]))
        p++;
    return p;
}

/* The result's tokens as they are now, so the rows an edit redoes can be counted after it. */
struct token_copy {
    char **tokens;
    int *ids;
    int n;
};

static void token_copy_free(struct token_copy *c)
{
    for (int i = 0; c->tokens && i < c->n; i++)
        free(c->tokens[i]);
    free(c->tokens);
    free(c->ids);
    memset(c, 0, sizeof(*c));
}

static int token_copy(struct token_copy *c, const struct attn_scene *s)
{
    memset(c, 0, sizeof(*c));
    c->tokens = calloc((size_t)(s->n_tokens > 0 ? s->n_tokens : 1), sizeof(char *));
    c->ids = s->token_ids ? malloc((size_t)s->n_tokens * sizeof(int)) : NULL;
    if (!c->tokens || (s->token_ids && !c->ids))
        return token_copy_free(c), -1;
    for (c->n = 0; c->n < s->n_tokens; c->n++)
        if (!(c->tokens[c->n] = strdup(s->tokens[c->n])))
            return token_copy_free(c), -1;
    if (c->ids)
        memcpy(c->ids, s->token_ids, (size_t)s->n_tokens * sizeof(int));
    return 0;
}

/* An edit: keys opens and fills a prompt, untimed; then Enter, timed into *ms, and the products
 * of the rows it had to redo (all_rows: every row, as after a heads edit) into *flops. An edit that
 * did not recompute would be a fast wrong number. On the first try (first) that is the scene
 * refusing it: 1, with refused (size DIAG_MSG_MAX) saying why in the explorer's words, the prompt
 * closed. After one was taken it is an error: -1 with err saying why (what: "heads"). 0 when
 * measured. */
static int timed_edit(double *ms, double *view_ms, double *flops, struct ui *ui, const char *keys,
                      const char *what, bool all_rows, bool first, char *refused,
                      struct busy_keys *busy, struct diag *err)
{
    press(ui, keys);
    struct token_copy before;
    if (token_copy(&before, &app_result(ui->app)->shown) != 0)
        return attn_diag_set(err, "", "out of memory");
    unsigned long gen = app_result(ui->app)->generation;
    double t0 = attn_now_ms();
    timed_key(ui, '\r', false);
    *ms = settle(ui, t0, view_ms, busy);
    const char *why = app_doc(ui->app)->error[0] ? app_doc(ui->app)->error : NULL;
    if (!why && app_result(ui->app)->generation == gen)
        why = app_status(ui->app)->message[0] ? app_status(ui->app)->message
                                              : "nothing was recomputed";
    const struct attn_scene *now = &app_result(ui->app)->shown;
    *flops = attn_scene_product_flops(
        now, all_rows ? 0 : first_changed(now, before.tokens, before.ids, before.n));
    token_copy_free(&before);
    if (!why)
        return 0;
    if (!first)
        return attn_diag_set(err, "", "the %s edit did not recompute: %s", what, why);
    snprintf(refused, DIAG_MSG_MAX, "%s", why);
    if (prompt_is_open(&ui->status.prompt))
        press(ui, "\033");
    return 1;
}

/* action: `repeat` edits, the i-th made by keys(i) (untimed) and Enter (timed); a refusal on the
 * first skips it (f->skipped). Returns 0, or -1 with err. */
struct edit_plan {
    const char *what;
    bool all_rows;                                  /* it changes every row, not the tokens */
    void (*setup)(struct ui *ui, int i, void *ctx); /* untimed keys before each, may be NULL */
    const char *(*keys)(int i, void *ctx);
    void *ctx;
};

static int timed_edits(struct ui_bench_figure *f, double *ms, double *view, double *flops,
                       struct ui *ui, const struct edit_plan *plan, int repeat,
                       struct busy_keys *busy, struct diag *err)
{
    for (int i = 0; i < repeat; i++) {
        if (plan->setup)
            plan->setup(ui, i, plan->ctx);
        int rc = timed_edit(&ms[i], &view[i], &flops[i], ui, plan->keys(i, plan->ctx), plan->what,
                            plan->all_rows, i == 0, f->skipped, busy, err);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            f->n = 0;
            return 0;
        }
    }
    summarize(f, ms, flops, repeat);
    f->view_ms = median_of(view, repeat);
    return 0;
}

/* Heads: between the scene's count and the largest divisor of it below (12 <-> 6), typed into
 * the H prompt (C-u clears it). */
struct heads_ctx {
    int heads, other;
    char keys[32];
};

static const char *heads_keys(int i, void *ctx)
{
    struct heads_ctx *h = ctx;
    snprintf(h->keys, sizeof(h->keys), "H\025%d", i % 2 ? h->heads : h->other);
    return h->keys;
}

/* Sentence: one letter added to the last word and taken away again, so the token count (and
 * every buffer's shape) stays while the text changes. */
static const char *text_keys(int i, void *ctx)
{
    (void)ctx;
    return i % 2 ? "t\177" : "tx";
}

/* The same in the middle of the sentence: the prompt opened and the cursor walked back half the
 * line (its characters: the same count both ways), a letter added there and taken away again.
 * A causal model recomputes from the changed token on, half the rows. */
static void mid_setup(struct ui *ui, int i, void *ctx)
{
    (void)i;
    press(ui, "t");
    press_quietly(ui, KEY_LEFT, true, *(int *)ctx);
}

static const char *mid_keys(int i, void *ctx)
{
    (void)ctx;
    return i % 2 ? "\177" : "x";
}

int ui_bench(struct ui_bench_result *out, struct attn_scene *s, int cols, int lines, int repeat,
             struct diag *err)
{
    memset(out, 0, sizeof(*out));
    out->peak_anon_kib = out->hwm_kib = out->first_anon_kib = -1;
    if (repeat < 1)
        repeat = 1;
    struct ui_vterm term;
    if (ui_vterm_open(&term, cols, lines, err) != 0) {
        attn_scene_free(s);
        return -1;
    }

    struct sampler sm = {.peak_kib = status_kib("RssAnon:")};
    bool sampling = pthread_create(&sm.thread, NULL, sample, &sm) == 0;
    if (!sampling)
        sm.peak_kib = -1;
    double *ms = calloc((size_t)repeat, sizeof(*ms));
    double *view = calloc((size_t)repeat, sizeof(*view));
    double *flops = calloc((size_t)repeat, sizeof(*flops));
    struct busy_keys busy = {calloc(UI_BENCH_BUSY_MAX, sizeof(double)), 0, 0};
    int rc = 0;
    double t0 = attn_now_ms();
    ui_use_background(true);                    /* as ui_main opens it */
    struct ui *ui = ui_new(s, NULL, NULL, err); /* takes s */
    ui_use_background(false);
    if (!ui || !ms || !view || !flops || !busy.ms) {
        rc = ui ? attn_diag_set(err, "", "out of memory") : -1;
        goto done;
    }
    ui_draw(ui);
    out->first.median_ms = out->first.max_ms = settle(ui, t0, &out->first.view_ms, &busy);
    out->first.n = 1;
    out->first_anon_kib = atomic_load(&sm.peak_kib);
    out->first.flops = attn_scene_product_flops(&app_result(ui->app)->shown, 0);
    out->tokens = app_result(ui->app)->shown.n_tokens;

    /* Cursor: right and down, then back, so the cursor stays on the map. */
    for (int i = 0; i < repeat; i++)
        ms[i] = timed_key(
            ui, i % 4 < 2 ? (i % 2 ? KEY_DOWN : KEY_RIGHT) : (i % 2 ? KEY_UP : KEY_LEFT), true);
    summarize(&out->cursor, ms, NULL, repeat);

    for (int i = 0; i < repeat; i++)
        ms[i] = timed_key(ui, i % 2 ? ',' : '.', false);
    summarize(&out->stage, ms, NULL, repeat);

    press(ui, "a"); /* every head; with layers, the model view */
    for (int i = 0; i < repeat; i++)
        ms[i] = timed_key(ui, i % 2 ? KEY_LEFT : KEY_RIGHT, true);
    summarize(&out->tile, ms, NULL, repeat);
    press(ui, "a");

    struct heads_ctx heads = {.heads = app_doc(ui->app)->scene.attn.heads, .other = 1};
    for (int h = heads.heads / 2; h >= 1; h--)
        if (heads.heads % h == 0) {
            heads.other = h;
            break;
        }
    const struct edit_plan heads_plan = {"heads", true, NULL, heads_keys, &heads};
    if (heads.heads > 1 && (rc = timed_edits(&out->heads_edit, ms, view, flops, ui, &heads_plan,
                                             repeat, &busy, err)) != 0)
        goto done;

    const struct edit_plan text_plan = {"sentence", false, NULL, text_keys, NULL};
    if ((rc = timed_edits(&out->text_edit, ms, view, flops, ui, &text_plan, repeat, NULL, err)) !=
        0)
        goto done;

    press(ui, "t");
    int back = ui->status.prompt.len / 2;
    press(ui, "\033");
    const struct edit_plan mid_plan = {"mid-sentence", false, mid_setup, mid_keys, &back};
    rc = timed_edits(&out->mid_edit, ms, view, flops, ui, &mid_plan, repeat, NULL, err);
    if (busy.n > 0)
        summarize(&out->busy, busy.ms, NULL, busy.n);

done:
    ui_delete(ui);
    if (sampling) {
        atomic_store(&sm.stop, true);
        pthread_join(sm.thread, NULL);
        out->peak_anon_kib = atomic_load(&sm.peak_kib);
    }
    out->hwm_kib = status_kib("VmHWM:");
    free(ms);
    free(view);
    free(flops);
    free(busy.ms);
    ui_vterm_close(&term);
    return rc;
}
