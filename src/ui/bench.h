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
    /* Why the scene refused the edit, in the explorer's words ("the heads come from the
       checkpoint (llama): ..."): the action was skipped (n is 0); "" when it was measured. */
    char skipped[DIAG_MSG_MAX];
};

struct ui_bench_result {
    struct ui_bench_figure first;      /* ui_open (every stage computed) through the first frame */
    struct ui_bench_figure cursor;     /* arrow key -> frame */
    struct ui_bench_figure stage;      /* next/previous stage -> frame */
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

/* Opens the explorer on s (taken over, freed in every case) in a cols x lines virtual terminal
 * and times each action `repeat` times. An edit the scene refuses is skipped, its figure's
 * `skipped` saying why; one that was taken once and then failed is an error. Returns 0, or -1
 * with err set. */
int ui_bench(struct ui_bench_result *out, struct attn_scene *s, int cols, int lines, int repeat,
             struct diag *err);

#endif
