/* bench: how long one recomputation takes, the number that decides whether live editing in the
 * explorer feels instant. The one benchmark harness: a scene of your own, or with --suite the
 * standard shapes from the book's six tokens to a GPT-2-sized layer (bench/meson.build runs it
 * under `meson test --benchmark`).
 *
 * Two figures per scene, each a mean over a time budget after a warm-up: attn_forward alone
 * (every stage of every head, on buffers sized once: no allocation inside), and attn_model_resolve
 * (drawing or copying every parameter, what a change of seed or weights adds).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli.h"
#include "common/cnum.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

struct timing {
    double resolve_us, forward_us;
    long iters; /* forward passes timed */
};

/* Times scene s: forward for budget_us (or iters when > 0), resolve for a third of that. */
static int measure(struct timing *t, const struct attn_scene *s, double budget_us, long iters,
                   struct diag *err)
{
    struct attn_net net = {0};
    if (attn_net_compute(&net, s, err) != 0)
        return -1;
    attn_net_forward(&net); /* warm-up: first-touch pages, OpenBLAS threads */
    long n = 0;
    double t0 = now_us(), t1 = t0;
    while (iters > 0 ? n < iters : (t1 - t0 < budget_us || n < 3)) {
        attn_net_forward(&net);
        n++;
        t1 = now_us();
    }
    t->forward_us = (t1 - t0) / (double)n;
    t->iters = n;
    long k = 0;
    double r0 = now_us(), r1 = r0;
    struct attn_model *m2 = calloc((size_t)net.layers, sizeof(*m2));
    while (m2 && (iters > 0 ? k < iters : (r1 - r0 < budget_us / 3 || k < 3))) {
        if (attn_model_resolve_layers(m2, net.layers, s, err) != 0) {
            free(m2);
            attn_net_free(&net);
            return -1;
        }
        for (int L = 0; L < net.layers; L++)
            attn_model_free(&m2[L]);
        k++;
        r1 = now_us();
    }
    free(m2);
    t->resolve_us = k ? (r1 - r0) / (double)k : 0;
    attn_net_free(&net);
    return 0;
}

int bench_scene(struct attn_scene *s, int n, int d_in, int d_out, int heads, double dropout)
{
    attn_scene_init(s);
    char **tokens = calloc((size_t)n, sizeof(char *));
    int rc = tokens ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        tokens[i] = malloc(16);
        if (tokens[i])
            snprintf(tokens[i], 16, "t%d", i);
        else
            rc = -1;
    }
    struct diag err;
    if (rc == 0)
        rc = attn_scene_set_tokens(s, tokens, n, &err);
    for (int i = 0; tokens && i < n; i++)
        free(tokens[i]);
    free(tokens);
    s->embed.dim = d_in;
    s->attn.d_out = d_out;
    s->attn.heads = heads;
    s->attn.causal = true;
    s->attn.dropout = dropout;
    return rc;
}

static int run_suite(double budget_us)
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
    cnum_fprintf(stdout, "%-36s %14s %14s %10s\n", "shape", "resolve (us)", "forward (us)",
                 "iters");
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        struct attn_scene s;
        struct timing t;
        struct diag err;
        diag_clear(&err);
        if (bench_scene(&s, shapes[i].n, shapes[i].d_in, shapes[i].d_out, shapes[i].heads,
                        shapes[i].dropout) != 0 ||
            measure(&t, &s, budget_us, 0, &err) != 0) {
            fprintf(stderr, "attnscope bench: %s: %s\n", shapes[i].name,
                    err.msg[0] ? err.msg : "out of memory");
            attn_scene_free(&s);
            return CLI_INVALID;
        }
        cnum_fprintf(stdout, "%-36s %14.2f %14.2f %10ld\n", shapes[i].name, t.resolve_us,
                     t.forward_us, t.iters);
        attn_scene_free(&s);
    }
    return CLI_OK;
}

int cmd_bench(int argc, char **argv)
{
    const char *iters_arg = NULL, *time_arg = NULL, *suite = NULL;
    const struct cli_opt opts[] = {
        {"iters", 'n', true, &iters_arg},
        {"time", 't', true, &time_arg},
        {"suite", 0, false, &suite},
    };
    const char *pos[1];
    int n_pos;
    bool help;
    int rc = cli_parse("bench", argc, argv, opts, 3, pos, 1, &n_pos, &help);
    if (rc != CLI_OK)
        return rc;
    if (help) {
        cli_print_help(stdout);
        return CLI_OK;
    }
    long iters = 0;
    if (iters_arg) {
        char *end;
        errno = 0;
        iters = strtol(iters_arg, &end, 10);
        if (errno != 0 || end == iters_arg || *end != '\0' || iters < 1 || iters > 1000000000L)
            return cli_usage_error("bench", "invalid --iters '%s' (a number from 1)", iters_arg);
    }
    double budget_s = 0.5;
    if (time_arg && (cnum_parse_double(time_arg, false, &budget_s) != CNUM_OK ||
                     !(budget_s > 0 && budget_s <= 3600)))
        return cli_usage_error("bench", "invalid --time '%s' (seconds, above 0)", time_arg);
    if (suite) {
        if (n_pos > 0 || iters_arg)
            return cli_usage_error("bench",
                                   "--suite measures its own shapes: no scene, no --iters");
        return run_suite(budget_s * 1e6);
    }

    struct cli_scene cs;
    rc = cli_scene_open(&cs, n_pos ? pos[0] : NULL);
    if (rc != CLI_OK)
        return rc;
    struct timing t;
    struct diag err;
    diag_clear(&err);
    if (measure(&t, &cs.scene, budget_s * 1e6, iters, &err) != 0) {
        if (err.file[0] == '\0')
            snprintf(err.file, sizeof(err.file), "%.*s", (int)sizeof(err.file) - 1, cs.name);
        diag_print(stderr, &err, NULL, 0);
        cli_scene_close(&cs);
        return CLI_INVALID;
    }
    const struct attn_model *m = &cs.net.model[0];
    printf("scene: %s (%d tokens, d_in %d, %d head%s x head_dim %d", cs.name, m->n, m->d_in,
           m->heads, m->heads == 1 ? "" : "s", m->head_dim);
    if (cs.net.layers > 1)
        printf(", %d layers", cs.net.layers);
    printf(")\n");
    cnum_fprintf(stdout, "attn_forward        %12.3f us  (mean of %ld)\n", t.forward_us, t.iters);
    cnum_fprintf(stdout, "model_resolve       %12.3f us\n", t.resolve_us);
    cli_scene_close(&cs);
    return CLI_OK;
}
