/* bench --ui: key -> frame in the explorer, on a virtual terminal (ui/bench), against the
 * targets the explorer is held to. Without a scene it measures the three shapes the targets
 * name: the book's scene, 128 tokens x 768 x 12 heads and 1024 tokens x 256 x 16 heads.
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

static const struct ui_shape ui_shapes[] = {
    {"book: 6 tokens, 3 -> 2, 2 heads", 0, 0, 0, 50, 16},
    {"128 tokens, 768 wide, 12 heads", 128, 768, 12, 300, 16},
    {"1024 tokens, 256 wide, 16 heads", 1024, 256, 16, 300, 100},
};

/* "1.23 (4.56)": median and max, and a mark when the median misses the target. */
static void print_figure(const struct ui_bench_figure *f, double target_ms)
{
    if (f->n == 0) {
        printf(" %18s", "-");
        return;
    }
    char cell[64];
    attn_cnum_format(cell, sizeof(cell), "%.2f (%.2f)%s", f->median_ms, f->max_ms,
                     target_ms > 0 && f->median_ms > target_ms ? " !" : "");
    printf(" %18s", cell);
}

static int report(const char *name, const struct ui_bench_result *r, double first_target,
                  double edit_target)
{
    char first[32];
    attn_cnum_format(first, sizeof(first), "%.1f%s", r->first_frame_ms,
                     first_target > 0 && r->first_frame_ms > first_target ? " !" : "");
    printf("%-34s %12s", name, first);
    print_figure(&r->cursor, CURSOR_TARGET_MS);
    print_figure(&r->stage, STAGE_TARGET_MS);
    print_figure(&r->heads_edit, edit_target);
    print_figure(&r->text_edit, edit_target);
    print_figure(&r->mid_edit, 0);
    printf("\n");
    bool missed = (first_target > 0 && r->first_frame_ms > first_target) ||
                  r->cursor.median_ms > CURSOR_TARGET_MS || r->stage.median_ms > STAGE_TARGET_MS ||
                  (edit_target > 0 &&
                   (r->heads_edit.median_ms > edit_target || r->text_edit.median_ms > edit_target));
    return missed ? 1 : 0;
}

static void header(void)
{
    printf("%-34s %12s %18s %18s %18s %18s %18s\n", "shape", "first frame", "cursor", "stage",
           "heads edit", "sentence edit", "mid-sentence edit");
}

static int bench_ui(const char *scene_path, const struct cli_input *in, int repeat)
{
    bench_print_blas();
    printf("key -> frame in ms on a %dx%d virtual terminal: median (max) of %d; first frame once"
           "\n",
           UI_BENCH_COLS, UI_BENCH_LINES, repeat);
    header();
    if (scene_path) {
        struct cli_scene cs;
        int rc = cli_scene_load(&cs, scene_path, in);
        if (rc != CLI_OK)
            return rc;
        struct ui_bench_result r;
        struct diag err;
        attn_diag_clear(&err);
        if (ui_bench(&r, &cs.scene, UI_BENCH_COLS, UI_BENCH_LINES, repeat, &err)) {
            fprintf(stderr, "attnscope bench: %s: %s\n", scene_path, err.msg);
            return CLI_INVALID;
        }
        report(scene_path, &r, 0, 0);
        return CLI_OK;
    }
    int missed = 0;
    for (size_t i = 0; i < sizeof(ui_shapes) / sizeof(ui_shapes[0]); i++) {
        const struct ui_shape *sh = &ui_shapes[i];
        struct attn_scene s;
        if (sh->n == 0 ? attn_scene_init_default(&s) != 0
                       : bench_scene(&s, sh->n, sh->d, sh->d, sh->heads, 0.0) != 0) {
            attn_scene_free(&s);
            fprintf(stderr, "attnscope bench: %s: out of memory\n", sh->name);
            return CLI_INVALID;
        }
        struct ui_bench_result r;
        struct diag err;
        attn_diag_clear(&err);
        if (ui_bench(&r, &s, UI_BENCH_COLS, UI_BENCH_LINES, repeat, &err)) {
            fprintf(stderr, "attnscope bench: %s: %s\n", sh->name, err.msg);
            return CLI_INVALID;
        }
        missed += report(sh->name, &r, sh->first_ms, sh->edit_ms);
    }
    printf("targets: cursor < %.0f ms, stage < %.0f ms, edit < 16 ms at 128 x 768 x 12 and "
           "< 100 ms at 1024 x 256 x 16, first frame < 50 ms (book) and < 300 ms; ! = missed\n",
           CURSOR_TARGET_MS, STAGE_TARGET_MS);
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
