/* bench: how long one recomputation takes, the number that decides whether live editing in the
 * explorer feels instant. The one benchmark harness: a scene of your own, with --suite the
 * standard shapes from the book's six tokens to a GPT-2-sized layer (bench/meson.build runs it
 * under `meson test --benchmark`), or with --tokens/--dim/--heads one such shape measured the way
 * bench/torch_peer.py measures PyTorch's nn.MultiheadAttention (bench/vs_torch runs both).
 *
 * Two figures per scene, each a mean over a time budget after a warm-up: attn_forward alone
 * (every kept stage of every head, on buffers sized once: no allocation inside), and
 * attn_model_resolve (drawing or copying every parameter, what a change of seed or weights adds).
 * A --tokens shape gives the median of --repeat forward passes instead, with its GFLOP/s, the
 * GFLOP/s of a plain sgemm in the same process and the peak RSS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "common/progress.h"
#include "engine/generate.h"
#include "engine/kernels.h"

/* --tokens goes past the 1024 tokens of a scene file (a limit of what the explorer shows, not of
   the engine), up to what a 2-core machine computes in seconds; the stages of the shape must
   also fit in BENCH_MAX_BYTES. */
#define BENCH_MAX_TOKENS 8192
#define BENCH_MAX_BYTES  ((size_t)8 << 30)
#define BENCH_MAX_REPEAT 100000
#define MIB              ((size_t)1 << 20)

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
    double t0 = attn_now_ms() * 1e3, t1 = t0;
    while (iters > 0 ? n < iters : (t1 - t0 < budget_us || n < 3)) {
        attn_net_forward(&net);
        n++;
        t1 = attn_now_ms() * 1e3;
    }
    t->forward_us = (t1 - t0) / (double)n;
    t->iters = n;
    long k = 0;
    double r0 = attn_now_ms() * 1e3, r1 = r0;
    struct attn_model *m2 = calloc((size_t)net.layers, sizeof(*m2));
    int rc = 0;
    while (m2 && (iters > 0 ? k < iters : (r1 - r0 < budget_us / 3 || k < 3))) {
        if ((rc = attn_model_resolve_layers(m2, net.layers, s, err)) != 0)
            break; /* m2 left freed */
        for (int L = 0; L < net.layers; L++)
            attn_model_free(&m2[L]);
        k++;
        r1 = attn_now_ms() * 1e3;
    }
    free(m2);
    t->resolve_us = k ? (r1 - r0) / (double)k : 0;
    attn_net_free(&net);
    return rc;
}

/* A scene of n tokens ("t0" ...) with learned d_in-wide embeddings, `heads` causal split heads.
 * The tokens are set directly: n may be above the scene files' limit. */
int bench_scene(struct attn_scene *s, int n, int d_in, int d_out, int heads, double dropout)
{
    attn_scene_init(s);
    char **tokens = calloc((size_t)n, sizeof(char *));
    if (!tokens)
        return -1;
    s->tokens = tokens;
    s->n_tokens = n;
    for (int i = 0; i < n; i++) {
        if (!(tokens[i] = malloc(16)))
            return -1; /* attn_scene_free frees what there is */
        snprintf(tokens[i], 16, "t%d", i);
    }
    s->embed.dim = d_in;
    s->attn.d_out = d_out;
    s->attn.heads = heads;
    s->attn.causal = true;
    s->attn.dropout = dropout;
    return 0;
}

void bench_print_blas(void)
{
    char blas[160];
    attn_blas_describe(blas, sizeof(blas));
    printf("blas: %s\n", blas);
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
    bench_print_blas();
    attn_cnum_fprintf(stdout, "%-36s %14s %14s %10s\n", "shape", "resolve (us)", "forward (us)",
                      "iters");
    int rc = CLI_OK;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && rc == CLI_OK; i++) {
        struct attn_scene s;
        struct timing t;
        struct diag err;
        attn_diag_clear(&err);
        if (bench_scene(&s, shapes[i].n, shapes[i].d_in, shapes[i].d_out, shapes[i].heads,
                        shapes[i].dropout) != 0 ||
            measure(&t, &s, budget_us, 0, &err) != 0) {
            fprintf(stderr, "attnscope bench: %s: %s\n", shapes[i].name,
                    err.msg[0] ? err.msg : "out of memory");
            rc = CLI_INVALID;
        } else {
            attn_cnum_fprintf(stdout, "%-36s %14.2f %14.2f %10ld\n", shapes[i].name, t.resolve_us,
                              t.forward_us, t.iters);
        }
        attn_scene_free(&s);
    }
    return rc;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v (n values; sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), compare_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The peak resident set of this process so far, in MiB (ru_maxrss is in KiB on Linux). */
static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* One shape, as bench/torch_peer.py measures PyTorch. */
struct shape_result {
    int tokens, dim, heads, repeat, threads;
    double forward_ms; /* median over repeat passes */
    double gflops;     /* the forward pass's products (see forward_flops) per second */
    double sgemm_gflops;
    double peak_rss_mb;
};

/* The flops of the forward pass's products, n tokens of width d: Q, K and V (3 of 2 n d d), the
 * scores Q K^T of every head (2 n n hd each, 2 n n d together), the weights times V (the same)
 * and the output projection (2 n d d). A causal mask saves nothing: both engines compute the full
 * products. The softmax and the elementwise steps are not counted. */
static double forward_flops(double n, double d)
{
    return 8.0 * n * d * d + 4.0 * n * n * d;
}

/* OpenBLAS's sgemm on a square d x d x d product (c = a b, the call attn_mm_ab makes): the speed
 * the forward pass's products could reach at this width. torch_peer.py times torch.mm on the
 * same problem. Each of the repeat samples times enough calls for about 10 Mflop; the median. */
double bench_sgemm_gflops(int d, int repeat)
{
    size_t dd = (size_t)d * (size_t)d;
    float *a = malloc(dd * sizeof(float)), *b = malloc(dd * sizeof(float));
    float *c = malloc(dd * sizeof(float));
    double *t = malloc((size_t)repeat * sizeof(double));
    double result = -1;
    if (a && b && c && t) {
        for (size_t i = 0; i < dd; i++) { /* any finite values: the speed does not depend on them */
            a[i] = (float)(i % 17) / 17.0f - 0.5f;
            b[i] = (float)(i % 13) / 13.0f - 0.5f;
        }
        double flop = 2.0 * (double)d * (double)d * (double)d;
        long calls = flop >= 1e7 ? 1 : (long)(1e7 / flop) + 1;
        attn_mm_ab(c, d, a, d, b, d, NULL, d, d, d); /* warm-up */
        for (int r = 0; r < repeat; r++) {
            double t0 = attn_now_ms() * 1e3;
            for (long k = 0; k < calls; k++)
                attn_mm_ab(c, d, a, d, b, d, NULL, d, d, d);
            t[r] = (attn_now_ms() * 1e3 - t0) / (double)calls;
        }
        double us = median(t, repeat);
        result = us > 0 ? flop / (us * 1e3) : 0;
    }
    free(a);
    free(b);
    free(c);
    free(t);
    return result;
}

/* Measures scene s (out's shape) into out. */
static int run_shape(struct shape_result *out, const struct attn_scene *s, struct diag *err)
{
    struct attn_net net = {0};
    double *t = malloc((size_t)out->repeat * sizeof(double));
    int rc = t ? 0 : attn_diag_set(err, "", "out of memory");
    if (rc == 0 && attn_net_compute(&net, s, err) != 0) /* the first pass */
        rc = -1;
    if (rc == 0) {
        attn_net_forward(&net); /* warm-up: first-touch pages, OpenBLAS threads */
        for (int r = 0; r < out->repeat; r++) {
            double t0 = attn_now_ms() * 1e3;
            attn_net_forward(&net);
            t[r] = attn_now_ms() * 1e3 - t0;
        }
        out->forward_ms = median(t, out->repeat) / 1e3;
        out->gflops = out->forward_ms > 0
                          ? forward_flops(out->tokens, out->dim) / (out->forward_ms * 1e6)
                          : 0;
        out->peak_rss_mb = peak_rss_mb(); /* before the sgemm's matrices */
    }
    attn_net_free(&net);
    free(t);
    if (rc == 0 && (out->sgemm_gflops = bench_sgemm_gflops(out->dim, out->repeat)) < 0)
        rc = attn_diag_set(err, "", "out of memory");
    return rc;
}

static void print_shape(const struct shape_result *r, bool json)
{
    if (json) {
        attn_cnum_fprintf(
            stdout,
            "{\"impl\": \"attnscope\", \"tokens\": %d, \"dim\": %d, \"heads\": %d, "
            "\"repeat\": %d, \"threads\": %d, \"forward_ms\": %.6g, \"gflops\": %.6g, "
            "\"sgemm_n\": %d, \"sgemm_gflops\": %.6g, \"peak_rss_mb\": %.1f, "
            "\"blas_kernel\": \"%s\"}\n",
            r->tokens, r->dim, r->heads, r->repeat, r->threads, r->forward_ms, r->gflops, r->dim,
            r->sgemm_gflops, r->peak_rss_mb, attn_blas_kernel());
        return;
    }
    bench_print_blas();
    attn_cnum_fprintf(
        stdout,
        "attnscope: %d tokens, dim %d, %d head%s, %d thread%s: forward %.4g ms (median "
        "of %d), %.2f GFLOP/s; sgemm %dx%dx%d %.2f GFLOP/s; peak RSS %.1f MiB\n",
        r->tokens, r->dim, r->heads, r->heads == 1 ? "" : "s", r->threads,
        r->threads == 1 ? "" : "s", r->forward_ms, r->repeat, r->gflops, r->dim, r->dim, r->dim,
        r->sgemm_gflops, r->peak_rss_mb);
}

/* *out = text as a whole number in [lo, hi], else a usage error naming the option. */
static int parse_int(int *out, const char *text, const char *option, int lo, int hi)
{
    char what[32];
    snprintf(what, sizeof(what), "--%s", option);
    return cli_int_option(out, "bench", what, text, lo, hi);
}

/* The --tokens mode: options checked, then one shape measured. */
static int bench_shape(const char *tokens, const char *dim, const char *heads, const char *repeat,
                       int threads, bool json)
{
    struct shape_result r = {.heads = 1, .repeat = 10, .threads = threads};
    if (!dim)
        return cli_usage_error("bench", "--tokens needs --dim (and optionally --heads)");
    if (parse_int(&r.tokens, tokens, "tokens", 1, BENCH_MAX_TOKENS) != CLI_OK ||
        parse_int(&r.dim, dim, "dim", 1, SCENE_MAX_DIM) != CLI_OK ||
        (heads && parse_int(&r.heads, heads, "heads", 1, SCENE_MAX_HEADS) != CLI_OK) ||
        (repeat && parse_int(&r.repeat, repeat, "repeat", 1, BENCH_MAX_REPEAT) != CLI_OK))
        return CLI_USAGE;
    if (r.dim % r.heads != 0)
        return cli_usage_error("bench",
                               "--dim %d is not divisible by --heads %d (each head is "
                               "dim / heads wide)",
                               r.dim, r.heads);
    struct attn_scene s;
    int rc = CLI_OK;
    size_t bytes;
    struct diag err;
    attn_diag_clear(&err);
    if (bench_scene(&s, r.tokens, r.dim, r.dim, r.heads, 0.0) != 0) {
        fprintf(stderr, "attnscope bench: out of memory\n");
        rc = CLI_INVALID;
    } else if ((bytes = attn_scene_mem_estimate(&s)) > BENCH_MAX_BYTES) {
        rc = cli_usage_error("bench",
                             "%d tokens x %d wide x %d heads need about %zu MiB, over "
                             "the bench's %zu MiB",
                             r.tokens, r.dim, r.heads, (bytes + MIB - 1) / MIB,
                             BENCH_MAX_BYTES / MIB);
    } else if (run_shape(&r, &s, &err) != 0) {
        fprintf(stderr, "attnscope bench: %s\n", err.msg);
        rc = CLI_INVALID;
    } else {
        print_shape(&r, json);
    }
    attn_scene_free(&s);
    return rc;
}

int (*cli_bench_ui_hook)(const char *const *values, const char *const *pos, int n_pos,
                         const struct cli_input *in);

static const struct cli_opt opts[BENCH_O_COUNT] = {
    [BENCH_O_TIME] = {"time", 't', "S", "seconds to spend on each (default 0.5)"},
    [BENCH_O_ITERS] = {"iters", 'n', "N", "a fixed number of repetitions instead"},
    [BENCH_O_SUITE] = {"suite", 0, NULL, "the standard shapes, from the book to a GPT-2 layer"},
    [BENCH_O_UI] = {"ui", 0, NULL,
                    "key -> frame in the explorer on a virtual terminal,\n"
                    "against its targets (exit 1 when one is missed); each\n"
                    "compute beside its bound (its products' FLOPs at the\n"
                    "sgemm speed measured in the same run) and the peak\n"
                    "RssAnon; an edit the scene refuses is skipped, said why"},
    [BENCH_O_TOKENS] = {"tokens", 0, "N",
                        "one shape instead: N tokens, learned D-wide embeddings,\n"
                        "d_out D, H causal heads; the median forward pass in ms,\n"
                        "its GFLOP/s, OpenBLAS sgemm's GFLOP/s on D x D x D and\n"
                        "the peak RSS in MiB (bench/torch_peer.py measures\n"
                        "PyTorch the same way)"},
    [BENCH_O_DIM] = {"dim", 0, "D", "the width, with --tokens"},
    [BENCH_O_HEADS] = {"heads", 0, "H", "the heads, with --tokens (default 1)"},
    [BENCH_O_REPEAT] = {"repeat", 'r', "N",
                        "with --tokens: forward passes to take the median of\n"
                        "(default 10); with --ui: timed repeats of each key (41);\n"
                        "with --generate: the steps (64)"},
    [BENCH_O_JSON] = {"json", 0, NULL, "with --tokens: as one line of JSON"},
    [BENCH_O_THREADS] = {"threads", 0, "T",
                         "OpenBLAS threads, any mode (default: OPENBLAS_NUM_THREADS,\n"
                         "else one per core)"},
    [BENCH_O_GENERATE] = {"generate", 0, NULL,
                          "the steps of a greedy generation from SCENE (attnscope\n"
                          "generate's): each step's time to choose the next token and\n"
                          "compute its row of every layer, median of --repeat steps\n"
                          "(default 64), and the tokens a second"},
};

/* --generate: one greedy step after another from the scene's text, each timed: the choice (the
 * last position's logits and the pick) and the append (the new row of every layer). */
static int bench_generate(const char *path, const struct cli_input *in, const char *repeat)
{
    int steps = 64;
    if (repeat && parse_int(&steps, repeat, "repeat", 1, 4096) != CLI_OK)
        return CLI_USAGE;
    struct cli_scene cs;
    int rc = cli_scene_load(&cs, path, in);
    if (rc != CLI_OK)
        return rc;
    attn_generation_net(&cs.net);
    if ((rc = cli_scene_compute(&cs, false, NULL, NULL)) != CLI_OK)
        return rc;
    struct attn_sampling sp = {.greedy = true, .temperature = 1, .top_p = 1};
    struct attn_generation g;
    struct diag err;
    attn_diag_clear(&err);
    double *t = calloc((size_t)steps * 3, sizeof(double));
    int n0 = cs.scene.n_tokens, done = 0;
    const char *what;
    int room = attn_scene_context(&cs.scene, &what) - n0;
    if (!t || attn_generation_begin(&g, &cs.net, &cs.scene, &sp, 0, &err) != 0) {
        fprintf(stderr, "%s: %s\n", cs.name, t ? err.msg : "out of memory");
        free(t);
        cli_scene_close(&cs);
        return CLI_INVALID;
    }
    for (; done < steps && done < room; done++) {
        struct attn_choice c;
        double t0 = attn_now_ms() * 1e3;
        if (attn_generation_choose(&g, &c, &err) != 0)
            break;
        double t1 = attn_now_ms() * 1e3;
        if (attn_generation_append(&g, c.id, &err) != 0)
            break;
        double t2 = attn_now_ms() * 1e3;
        t[done] = (t2 - t0) / 1e3;
        t[steps + done] = (t1 - t0) / 1e3;
        t[2 * steps + done] = (t2 - t1) / 1e3;
    }
    if (err.msg[0]) {
        fprintf(stderr, "%s: step %d: %s\n", cs.name, done + 1, err.msg);
        rc = CLI_INVALID;
    } else if (done == 0) {
        fprintf(stderr, "%s: the text fills the model's context: no step to time\n", cs.name);
        rc = CLI_USAGE;
    } else {
        double worst = 0;
        for (int i = 0; i < done; i++)
            worst = t[i] > worst ? t[i] : worst;
        bench_print_blas();
        attn_cnum_fprintf(stdout,
                          "generate: %s: %d tokens of text, %d greedy steps (positions %d to %d)\n"
                          "  a step       median %8.2f ms  max %8.2f ms  (%.1f tokens/s)\n"
                          "  the choice   median %8.2f ms  (the last position's logits, the pick)\n"
                          "  the new row  median %8.2f ms  (every layer, from the cached keys and "
                          "values)\n",
                          cs.name, n0, done, n0, n0 + done - 1, median(t, done), worst,
                          1e3 / median(t, done), median(t + steps, done),
                          median(t + 2 * steps, done));
    }
    attn_generation_end(&g);
    free(t);
    cli_scene_close(&cs);
    return rc;
}

const struct cli_command cli_bench = {
    "bench",
    cmd_bench,
    "[SCENE] [--time S | --iters N]\n"
    "--suite\n"
    "--ui [SCENE] [--repeat N]\n"
    "--tokens N --dim D [--heads H] [--repeat R] [--json]",
    "time the forward pass, the explorer's keys, or one shape",
    "Time the forward pass and the parameter draws of SCENE (mean microseconds), the standard\n"
    "shapes (--suite), the explorer's keys on a virtual terminal (--ui) or one shape\n"
    "(--tokens). Figures for speed come from here, never from the tests.",
    opts,
    BENCH_O_COUNT,
    NULL, /* no example runs on the shipped scenes alone */
    true,
};

int cmd_bench(int argc, char **argv)
{
    const char *val[BENCH_O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_bench, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    /* --ui opens the explorer, which links curses: main.c's cmd_bench_ui. */
    if (val[BENCH_O_UI])
        return cli_bench_ui_hook ? cli_bench_ui_hook(val, pos, n_pos, &in)
                                 : cli_usage_error("bench", "--ui needs the explorer");
    const char *iters_arg = val[BENCH_O_ITERS], *time_arg = val[BENCH_O_TIME];
    const char *suite = val[BENCH_O_SUITE], *tokens_arg = val[BENCH_O_TOKENS];
    const char *dim_arg = val[BENCH_O_DIM], *heads_arg = val[BENCH_O_HEADS];
    const char *repeat_arg = val[BENCH_O_REPEAT], *threads_arg = val[BENCH_O_THREADS];
    const char *json = val[BENCH_O_JSON];
    int iters = 0;
    if (iters_arg && parse_int(&iters, iters_arg, "iters", 1, 1000000000) != CLI_OK)
        return CLI_USAGE;
    double budget_s = 0.5; /* seconds */
    if (time_arg && cli_positive_option(&budget_s, "bench", "--time", time_arg, 3600) != CLI_OK)
        return CLI_USAGE;
    /* Every mode runs OpenBLAS on --threads threads (its own default otherwise). */
    int threads = 0;
    if (threads_arg && parse_int(&threads, threads_arg, "threads", 1, 256) != CLI_OK)
        return CLI_USAGE;
    if (threads > 0)
        attn_blas_set_threads(threads);
    threads = attn_blas_threads();

    if (val[BENCH_O_GENERATE]) {
        if (suite || tokens_arg || iters_arg || time_arg || dim_arg || heads_arg || json)
            return cli_usage_error("bench", "--generate times a generation's steps: a SCENE and "
                                            "--repeat only");
        return bench_generate(n_pos ? pos[0] : NULL, &in, repeat_arg);
    }
    if (tokens_arg) {
        if (n_pos > 0 || cli_input_given(&in) || suite || iters_arg || time_arg)
            return cli_usage_error("bench", "--tokens measures its own shape: no scene, no "
                                            "--suite, and --repeat instead of --iters or --time");
        return bench_shape(tokens_arg, dim_arg, heads_arg, repeat_arg, threads, json != NULL);
    }
    if (dim_arg || heads_arg || repeat_arg || json)
        return cli_usage_error("bench", "--dim, --heads, --repeat and --json go with --tokens");
    if (suite) {
        if (n_pos > 0 || cli_input_given(&in) || iters_arg)
            return cli_usage_error("bench",
                                   "--suite measures its own shapes: no scene, no --iters");
        return run_suite(budget_s * 1e6);
    }

    struct cli_scene cs;
    rc = cli_scene_open(&cs, n_pos ? pos[0] : NULL, &in);
    if (rc != CLI_OK)
        return rc;
    struct timing t;
    struct diag err;
    attn_diag_clear(&err);
    if (measure(&t, &cs.scene, budget_s * 1e6, iters, &err) != 0) {
        if (err.file[0] == '\0')
            snprintf(err.file, sizeof(err.file), "%.*s", (int)sizeof(err.file) - 1, cs.name);
        attn_diag_print(stderr, &err, NULL, 0);
        rc = CLI_INVALID;
        goto out;
    }
    const struct attn_model *m = &cs.net.model[0];
    bench_print_blas();
    printf("scene: %s (%d tokens, d_in %d, %d head%s x head_dim %d", cs.name, m->n, m->d_in,
           m->heads, m->heads == 1 ? "" : "s", m->head_dim);
    if (cs.net.layers > 1)
        printf(", %d layers", cs.net.layers);
    printf(")\n");
    attn_cnum_fprintf(stdout, "attn_forward        %12.3f us  (mean of %ld)\n", t.forward_us,
                      t.iters);
    attn_cnum_fprintf(stdout, "model_resolve       %12.3f us\n", t.resolve_us);
out:
    cli_scene_close(&cs);
    return rc;
}
