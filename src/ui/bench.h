/* bench: the explorer's latency, key to frame, measured headless (attnscope bench --ui). */
#ifndef ATTNSCOPE_UI_BENCH_H
#define ATTNSCOPE_UI_BENCH_H

#include "common/diag.h"
#include "engine/scene.h"

struct ui_bench_figure {
    double median_ms, max_ms;
    int n; /* timed repeats; 0 when the action does not apply (one head: no heads edit) */
    /* The median over the repeats of the matrix products the action's pass had to compute
       (attn_scene_product_flops of the rows from the first changed token on); 0 for a key
       that computes nothing. */
    double flops;
    /* The explorer computes in the background: the median time to the frame that first drew
       the layer in view (median_ms is to the frame after the last layer); 0 when not timed. */
    double view_ms;
    /* Why the scene refused the edit, in the explorer's words ("the heads come from the
       checkpoint (llama): ..."): the action was skipped (n is 0); "" when it was measured. */
    char skipped[DIAG_MSG_MAX];
};

struct ui_bench_result {
    struct ui_bench_figure first;      /* ui_open through the frame after the last layer (view_ms:
                                          the first frame that drew the layer in view) */
    struct ui_bench_figure busy;       /* a key (the next or previous stage) -> frame while a
                                          compute runs in the background: one every
                                          UI_BENCH_BUSY_MS of the first compute and of the
                                          heads edits (not of the sentence edits, whose times
                                          those frames would lengthen) */
    struct ui_bench_figure cursor;     /* arrow key -> frame */
    struct ui_bench_figure stage;      /* next/previous stage -> frame */
    struct ui_bench_figure tile;       /* every head (a; the model view with layers): the next
                                          or previous tile -> frame */
    struct ui_bench_figure heads_edit; /* Enter in the heads prompt -> recomputed frame */
    struct ui_bench_figure text_edit;  /* Enter in the sentence prompt -> recomputed frame */
    struct ui_bench_figure mid_edit;   /* the same, a letter added mid-sentence */
    int tokens;                        /* of the scene as opened */
    /* Memory, KiB: the largest RssAnon (the process's own pages: the checkpoint's mapped file
       not counted) sampled every UI_BENCH_SAMPLE_MS while the explorer ran, and VmHWM (the
       peak resident set, mapped pages included, over the whole process so far) at the end;
       -1 where /proc/self/status has no such line. */
    long peak_anon_kib, hwm_kib;
    long first_anon_kib; /* the largest RssAnon sampled through the first frame */
};

#define UI_BENCH_SAMPLE_MS 2
#define UI_BENCH_BUSY_MS   20
#define UI_BENCH_BUSY_MAX  4096 /* keys timed during computes, at most */

/* Opens the explorer on s (taken over, freed in every case) in a cols x lines virtual terminal,
 * computing in the background as ui_main does, and times each action `repeat` times: a compute
 * to the frame that drew the layer in view and to the frame after its last layer, with a key
 * pressed and timed every UI_BENCH_BUSY_MS meanwhile. An edit the scene refuses is skipped, its
 * figure's `skipped` saying why; one that was taken once and then failed is an error. Returns 0, or
 * -1 with err set. */
int ui_bench(struct ui_bench_result *out, struct attn_scene *s, int cols, int lines, int repeat,
             struct diag *err);

#endif
