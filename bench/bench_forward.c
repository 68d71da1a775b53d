/* bench_forward: how long a recompute takes, from the book's six tokens to a GPT-2-sized layer.
 *
 * For each shape: model_resolve (draw every parameter from the generator) and attn_forward
 * (every stage of every head), as mean microseconds over enough iterations to run ~0.3 s.
 * `meson test --benchmark -C build` or run build/bench/bench_forward directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/attention.h"
#include "engine/model.h"
#include "engine/scene.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A scene of n tokens with learned d_in-wide embeddings and `heads` split heads. */
static void make_scene(struct scene *s, int n, int d_in, int d_out, int heads, double dropout)
{
    scene_init(s);
    char **tokens = malloc((size_t)n * sizeof(char *));
    for (int i = 0; i < n; i++) {
        tokens[i] = malloc(16);
        snprintf(tokens[i], 16, "t%d", i);
    }
    struct diag err;
    if (scene_set_tokens(s, tokens, n, &err))
        abort();
    for (int i = 0; i < n; i++)
        free(tokens[i]);
    free(tokens);
    s->embed.dim = d_in;
    s->attn.d_out = d_out;
    s->attn.heads = heads;
    s->attn.causal = true;
    s->attn.dropout = dropout;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int n, d_in, d_out, heads;
        double dropout;
    } shapes[] = {
        {"book: 6 tokens, 3 -> 2, 2 heads", 6, 3, 2, 2, 0.0},
        {"book + dropout 0.5", 6, 3, 2, 2, 0.5},
        {"32 tokens, 64 -> 64, 4 heads", 32, 64, 64, 4, 0.1},
        {"128 tokens, 768 -> 768, 12 heads", 128, 768, 768, 12, 0.1},
        {"512 tokens, 768 -> 768, 12 heads", 512, 768, 768, 12, 0.0},
    };
    double budget_us = argc > 1 ? atof(argv[1]) * 1e6 : 3e5;
    printf("%-36s %14s %14s %10s\n", "shape", "resolve (us)", "forward (us)", "iters");
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        struct scene s;
        make_scene(&s, shapes[i].n, shapes[i].d_in, shapes[i].d_out, shapes[i].heads,
                   shapes[i].dropout);
        struct diag err;
        struct model m;
        struct attn_run r = {0};
        if (model_resolve(&m, &s, &err) || attn_run_init(&r, &m, &err)) {
            fprintf(stderr, "%s: %s\n", shapes[i].name, err.msg);
            return 1;
        }
        attn_forward(&r, &m); /* warm-up: first-touch pages, OpenBLAS thread start */

        int iters = 0;
        double t0 = now_us(), t1 = t0;
        while (t1 - t0 < budget_us || iters < 3) {
            attn_forward(&r, &m);
            iters++;
            t1 = now_us();
        }
        double fwd = (t1 - t0) / iters;

        int riters = 0;
        double r0 = now_us(), r1 = r0;
        while (r1 - r0 < budget_us / 3 || riters < 3) {
            struct model m2;
            if (model_resolve(&m2, &s, &err))
                return 1;
            model_free(&m2);
            riters++;
            r1 = now_us();
        }
        printf("%-36s %14.2f %14.2f %10d\n", shapes[i].name, (r1 - r0) / riters, fwd, iters);
        attn_run_free(&r);
        model_free(&m);
        scene_free(&s);
    }
    return 0;
}
