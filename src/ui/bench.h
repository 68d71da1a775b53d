/* bench: the explorer's latency, key to frame, measured headless (attnscope bench --ui). */
#ifndef ATTNSCOPE_UI_BENCH_H
#define ATTNSCOPE_UI_BENCH_H

#include "common/diag.h"
#include "engine/scene.h"

struct ui_bench_figure {
    double median_ms, max_ms;
    int n; /* timed repeats; 0 when the action does not apply (one head: no heads edit) */
};

struct ui_bench_result {
    double first_frame_ms;             /* ui_open (every stage computed) through the first frame */
    struct ui_bench_figure cursor;     /* arrow key -> frame */
    struct ui_bench_figure stage;      /* next/previous stage -> frame */
    struct ui_bench_figure heads_edit; /* Enter in the heads prompt -> recomputed frame */
    struct ui_bench_figure text_edit;  /* Enter in the sentence prompt -> recomputed frame */
    struct ui_bench_figure mid_edit;   /* the same, a letter added mid-sentence */
};

/* Opens the explorer on s (taken over, freed in every case) in a cols x lines virtual terminal
 * and times each action `repeat` times. Returns 0, or -1 with err set. */
int ui_bench(struct ui_bench_result *out, struct attn_scene *s, int cols, int lines, int repeat,
             struct diag *err);

#endif
