/* bench: key -> frame on a virtual terminal, the latency a user feels (see bench.h).
 *
 * The explorer runs exactly as ui_main runs it (ui_open, ui_key, ui_mark, ui_draw), on a newterm
 * whose output goes to /dev/null: curses still computes and writes every changed cell, only no
 * terminal emulator reads them. Each figure is the median of its repeats, so one page fault or
 * a busy neighbour does not decide it; the maximum is reported beside it.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui/bench.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ui/ui.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(struct ui_bench_figure *f, double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
    f->median_ms = n ? (n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2) : 0;
    f->max_ms = n ? ms[n - 1] : 0;
    f->n = n;
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
    double t0 = now_ms();
    ui_mark(ui, ui_key(ui, key, is_code));
    ui_draw(ui);
    return now_ms() - t0;
}

/* An edit: keys opens and fills a prompt, untimed; then Enter, timed into *ms. An edit that did
 * not recompute would be a fast wrong number: -1 with err saying why (what: "heads"). */
static int timed_edit(double *ms, struct ui *ui, const char *keys, const char *what,
                      struct diag *err)
{
    press(ui, keys);
    unsigned long gen = app_result(ui->app)->generation;
    *ms = timed_key(ui, '\r', false);
    if (app_doc(ui->app)->error[0] || app_result(ui->app)->generation == gen)
        return attn_diag_set(err, "", "the %s edit did not recompute: %s", what,
                             app_doc(ui->app)->error[0] ? app_doc(ui->app)->error
                                                        : app_status(ui->app)->message);
    return 0;
}

int ui_bench(struct ui_bench_result *out, struct attn_scene *s, int cols, int lines, int repeat,
             struct diag *err)
{
    memset(out, 0, sizeof(*out));
    if (repeat < 1)
        repeat = 1;
    FILE *in = fopen("/dev/null", "r"), *sink = fopen("/dev/null", "w");
    SCREEN *scr = in && sink ? newterm("xterm-256color", sink, in) : NULL;
    if (!scr) {
        if (in)
            fclose(in);
        if (sink)
            fclose(sink);
        attn_scene_free(s);
        return attn_diag_set(err, "", "cannot open a virtual terminal (xterm-256color)");
    }
    set_term(scr);
    resizeterm(lines, cols);
    ui_setup_terminal();

    double *ms = calloc((size_t)repeat, sizeof(*ms));
    int rc = 0;
    double t0 = now_ms();
    struct ui *ui = ui_new(s, NULL, NULL, err); /* takes s */
    if (!ui || !ms) {
        rc = ui ? attn_diag_set(err, "", "out of memory") : -1;
        goto done;
    }
    ui_draw(ui);
    out->first_frame_ms = now_ms() - t0;

    /* Cursor: right and down, then back, so the cursor stays on the map. */
    for (int i = 0; i < repeat; i++)
        ms[i] = timed_key(
            ui, i % 4 < 2 ? (i % 2 ? KEY_DOWN : KEY_RIGHT) : (i % 2 ? KEY_UP : KEY_LEFT), true);
    summarize(&out->cursor, ms, repeat);

    for (int i = 0; i < repeat; i++)
        ms[i] = timed_key(ui, i % 2 ? ',' : '.', false);
    summarize(&out->stage, ms, repeat);

    /* Heads: between the scene's count and the largest divisor of it below (12 <-> 6), typed
     * into the H prompt (C-u clears it); only Enter is timed. */
    int heads = app_doc(ui->app)->scene.attn.heads, other = 1;
    for (int h = heads / 2; h >= 1; h--)
        if (heads % h == 0) {
            other = h;
            break;
        }
    for (int i = 0; i < repeat && heads > 1; i++) {
        char keys[32];
        snprintf(keys, sizeof(keys), "H\025%d", i % 2 ? heads : other);
        if ((rc = timed_edit(&ms[i], ui, keys, "heads", err)) != 0)
            goto done;
    }
    summarize(&out->heads_edit, ms, heads > 1 ? repeat : 0);

    /* Sentence: one letter added to the last word and taken away again, so the token count
     * (and every buffer's shape) stays while the text changes. */
    for (int i = 0; i < repeat; i++)
        if ((rc = timed_edit(&ms[i], ui, i % 2 ? "t\177" : "tx", "sentence", err)) != 0)
            goto done;
    summarize(&out->text_edit, ms, repeat);

    /* The same in the middle of the sentence: the cursor walked back half the line (its
     * characters: the same count both ways), a letter added there and taken away again. A
     * causal model recomputes from the changed token on, half the rows. */
    press(ui, "t");
    int back = ui->status.prompt.len / 2;
    press(ui, "\033");
    for (int i = 0; i < repeat; i++) {
        press(ui, "t");
        press_quietly(ui, KEY_LEFT, true, back);
        if ((rc = timed_edit(&ms[i], ui, i % 2 ? "\177" : "x", "mid-sentence", err)) != 0)
            goto done;
    }
    summarize(&out->mid_edit, ms, repeat);

done:
    ui_delete(ui);
    free(ms);
    endwin();
    delscreen(scr);
    fclose(in);
    fclose(sink);
    return rc;
}
