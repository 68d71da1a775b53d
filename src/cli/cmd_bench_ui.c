/* bench --ui: key -> frame in the explorer, on a virtual terminal (ui/bench), against the
 * targets the explorer is held to. Without a scene it measures the three shapes the targets
 * name: the book's scene, 128 tokens x 768 x 12 heads and 1024 tokens x 256 x 16 heads. Each
 * compute is set beside its bound (its products at sgemm's speed, measured in the same run), so
 * a slow machine cannot hide behind a fast target, nor a fast one pass by luck.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "scenefile/scenefile.h"
#include "ui/bench.h"

#define UI_BENCH_COLS  120
#define UI_BENCH_LINES 40

struct ui_shape {
    const char *name;
    int n, d, heads;          /* 0: the built-in book scene */
    double first_ms, edit_ms; /* targets; the cursor's and the stage's are the same for all */
};

#define CURSOR_TARGET_MS 2.0
#define STAGE_TARGET_MS  5.0
#define BUSY_TARGET_MS   16.0 /* a key -> frame while a compute runs: any scene, its own too */

static const struct ui_shape ui_shapes[] = {
    {"book: 6 tokens, 3 -> 2, 2 heads", 0, 0, 0, 50, 16},
    {"128 tokens, 768 wide, 12 heads", 128, 768, 12, 300, 16},
    {"1024 tokens, 256 wide, 16 heads", 1024, 256, 16, 300, 100},
};

/* The speed the bounds divide by: sgemm at the scene's width (bench --tokens' figure), never
 * under 256 wide, where a product is too small to say what the machine multiplies at. */
#define SGEMM_MIN_WIDTH 256
#define SGEMM_REPEAT    5

static bool missed(const struct ui_bench_figure *f, double target_ms)
{
    return f->n > 0 && target_ms > 0 && f->median_ms > target_ms;
}

/* One action's row: median and max in ms, and for a compute the products it had to do, their
 * time at sgemm's speed (the bound) and the median as a multiple of it; the target, "!" when
 * missed. A skipped edit says why instead. */
static void print_row(const char *action, const struct ui_bench_figure *f, bool compute,
                      double gflops, double target_ms)
{
    if (f->skipped[0]) {
        printf("  %-18s skipped, the scene refused it: %s\n", action, f->skipped);
        return;
    }
    if (f->n == 0) {
        printf("  %-18s -: %s\n", action,
               compute ? "one head, nothing to edit" : "no compute lasted long enough to type in");
        return;
    }
    char bound[64], times[32], view[32] = "";
    if (compute && f->view_ms > 0)
        attn_cnum_format(view, sizeof(view), " %10.2f", f->view_ms);
    else if (compute)
        snprintf(view, sizeof(view), " %10s", "-");
    if (compute && f->flops > 0 && gflops > 0) {
        double bound_ms = f->flops / (gflops * 1e6);
        attn_cnum_format(bound, sizeof(bound), " %10.4g %10.4g", f->flops / 1e9, bound_ms);
        attn_cnum_format(times, sizeof(times), " %8.3g", f->median_ms / bound_ms);
    } else if (compute) { /* every row left as it was (a token taken off the end) */
        snprintf(bound, sizeof(bound), " %10s %10s", "0", "0");
        snprintf(times, sizeof(times), " %8s", "-");
    } else {
        bound[0] = times[0] = '\0';
    }
    attn_cnum_fprintf(stdout, "  %-18s %10.2f %10.2f%s%s%s", action, f->median_ms, f->max_ms, bound,
                      times, view);
    if (target_ms > 0)
        attn_cnum_fprintf(stdout, "   < %g%s", target_ms, missed(f, target_ms) ? " !" : "");
    printf("\n");
}

/* A shape's block: its rows, its memory. Returns 1 when a measured figure missed its target;
 * first_target 0 is a scene of your own, judged only on a key during a compute (not the cursor,
 * not the stage): that one holds whatever the scene. */
static int report(const char *name, const struct ui_bench_result *r, const double gflops[2],
                  int width, double first_target, double edit_target)
{
    attn_cnum_fprintf(stdout,
                      "%s: %d tokens; sgemm %dx%dx%d %.1f GFLOP/s before, %.1f after: the "
                      "bound at the faster\n",
                      name, r->tokens, width, width, width, gflops[0], gflops[1]);
    printf("  %-18s %10s %10s %10s %10s %8s %10s\n", "action", "median ms", "max ms", "GFLOP",
           "bound ms", "x bound", "in view ms");
    bool targets = first_target > 0;
    double best = gflops[0] > gflops[1] ? gflops[0] : gflops[1];
    print_row("first frame", &r->first, true, best, 0);
    print_row("cursor", &r->cursor, false, best, targets ? CURSOR_TARGET_MS : 0);
    print_row("stage", &r->stage, false, best, targets ? STAGE_TARGET_MS : 0);
    print_row("tile (every head)", &r->tile, false, best, BUSY_TARGET_MS);
    print_row("heads edit", &r->heads_edit, true, best, edit_target);
    print_row("last-word edit", &r->text_edit, true, best, edit_target);
    print_row("mid-sentence edit", &r->mid_edit, true, best, 0);
    print_row("key, computing", &r->busy, false, best, BUSY_TARGET_MS);
    if (first_target > 0) /* the first frame that drew the layer in view */
        attn_cnum_fprintf(stdout, "  layer in view first: %.2f ms   < %g%s\n", r->first.view_ms,
                          first_target, r->first.view_ms > first_target ? " !" : "");
    if (r->peak_anon_kib >= 0)
        attn_cnum_fprintf(stdout,
                          "  peak RssAnon %.1f MiB, %.1f MiB through the first frame (sampled "
                          "every %d ms)",
                          (double)r->peak_anon_kib / 1024.0, (double)r->first_anon_kib / 1024.0,
                          UI_BENCH_SAMPLE_MS);
    if (r->hwm_kib >= 0)
        attn_cnum_fprintf(stdout, "; VmHWM %.1f MiB (this process, mapped pages included)",
                          (double)r->hwm_kib / 1024.0);
    printf("\n");
    bool miss =
        (first_target > 0 && r->first.view_ms > first_target) || missed(&r->busy, BUSY_TARGET_MS) ||
        (targets && (missed(&r->cursor, CURSOR_TARGET_MS) || missed(&r->stage, STAGE_TARGET_MS))) ||
        missed(&r->heads_edit, edit_target) || missed(&r->text_edit, edit_target);
    return miss ? 1 : 0;
}

/* Measures s (taken over) under name; *missed_out counts a missed target. */
static int bench_one(const char *name, struct attn_scene *s, int repeat, double first_target,
                     double edit_target, int *missed_out)
{
    int width = attn_scene_d_in(s) > SGEMM_MIN_WIDTH ? attn_scene_d_in(s) : SGEMM_MIN_WIDTH;
    /* Before the explorer opens (the product's matrices are freed before the memory is sampled)
       and after it: a neighbour busy at one moment must not lower the bound. */
    double gflops[2] = {bench_sgemm_gflops(width, SGEMM_REPEAT), 0};
    struct ui_bench_result r;
    struct diag err;
    attn_diag_clear(&err);
    if (gflops[0] < 0) {
        attn_scene_free(s);
        fprintf(stderr, "attnscope bench: %s: out of memory\n", name);
        return CLI_INVALID;
    }
    if (ui_bench(&r, s, UI_BENCH_COLS, UI_BENCH_LINES, repeat, &err)) {
        fprintf(stderr, "attnscope bench: %s: %s\n", name, err.msg);
        return CLI_INVALID;
    }
    if ((gflops[1] = bench_sgemm_gflops(width, SGEMM_REPEAT)) < 0) {
        fprintf(stderr, "attnscope bench: %s: out of memory\n", name);
        return CLI_INVALID;
    }
    *missed_out += report(name, &r, gflops, width, first_target, edit_target);
    return CLI_OK;
}

static int bench_ui(const char *scene_path, const struct cli_input *in, int repeat)
{
    bench_print_blas();
    printf("key -> frame in ms on a %dx%d virtual terminal: median (max) of %d; first frame "
           "once\n"
           "a compute runs in the background as in the explorer: its median is to the frame after "
           "its last layer, 'in view' to the first frame that drew the layer on screen\n"
           "bound: the products the pass had to do (the rows from the first changed token on)"
           " at sgemm's speed in this run\n",
           UI_BENCH_COLS, UI_BENCH_LINES, repeat);
    int missed = 0;
    if (scene_path) {
        struct cli_scene cs;
        int rc = cli_scene_load(&cs, scene_path, in);
        if (rc != CLI_OK)
            return rc;
        /* a scene of your own has no targets: its figures are reported, never judged */
        return bench_one(scene_path, &cs.scene, repeat, 0, 0, &missed);
    }
    for (size_t i = 0; i < sizeof(ui_shapes) / sizeof(ui_shapes[0]); i++) {
        const struct ui_shape *sh = &ui_shapes[i];
        struct attn_scene s;
        if (sh->n == 0 ? attn_scene_init_default(&s) != 0
                       : bench_scene(&s, sh->n, sh->d, sh->d, sh->heads, 0.0) != 0) {
            attn_scene_free(&s);
            fprintf(stderr, "attnscope bench: %s: out of memory\n", sh->name);
            return CLI_INVALID;
        }
        int rc = bench_one(sh->name, &s, repeat, sh->first_ms, sh->edit_ms, &missed);
        if (rc != CLI_OK)
            return rc;
    }
    printf("targets: cursor < %.0f ms, stage < %.0f ms, a key during a compute < %.0f ms, edit "
           "< 16 ms at 128 x 768 x 12 and < 100 ms at 1024 x 256 x 16, the layer in view first "
           "< 50 ms (book) and < 300 ms; ! = missed; a skipped edit is not a miss\n",
           CURSOR_TARGET_MS, STAGE_TARGET_MS, BUSY_TARGET_MS);
    return missed ? CLI_INVALID : CLI_OK;
}

int cmd_bench_ui(const char *const *val, const char *const *pos, int n_pos,
                 const struct cli_input *in)
{
    for (int i = 0; i < BENCH_O_COUNT; i++)
        if (val[i] && i != BENCH_O_UI && i != BENCH_O_REPEAT)
            return cli_usage_error("bench", "--ui takes a scene and --repeat only, not --%s",
                                   cli_bench.opts[i].long_name);
    const char *repeat_arg = val[BENCH_O_REPEAT];
    int repeat = 41; /* odd: the median is one measured frame */
    if (repeat_arg && cli_int_option(&repeat, "bench", "--repeat", repeat_arg, 1, 100000) != CLI_OK)
        return CLI_USAGE;
    if (!n_pos && cli_input_given(in))
        return cli_usage_error("bench", "--ui times its own shapes without SCENE: the input "
                                        "options need one");
    return bench_ui(n_pos ? pos[0] : NULL, in, repeat);
}
