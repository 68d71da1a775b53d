/* cli_util: option parsing, the help text and scene loading shared by the commands. */
#include "cli/cli.h"

#include "common/cnum.h"
#include "common/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "scenefile/scenefile.h"

void cli_print_help(FILE *out)
{
    fputs("usage: attnscope [SCENE.yaml]\n"
          "       attnscope check SCENE.yaml...\n"
          "       attnscope print [SCENE.yaml] [--stage S] [--head H] [--layer L]\n"
          "       attnscope diff A.yaml B.yaml [--stage S] [--head H|all] [--layer L] [--top K]\n"
          "                      [--csv]\n"
          "       attnscope heads [SCENE.yaml] [--sort SCORE] [--csv]\n"
          "       attnscope export [SCENE.yaml] -o DIR [--format csv|npy]\n"
          "       attnscope render [SCENE.yaml] [--stage S] [--head H | --all-heads | --mean]\n"
          "                        [--layer L] [--values] [--scale matrix|row|log] -o FILE.svg\n"
          "       attnscope bench [SCENE.yaml] [--time S | --iters N] | --suite\n"
          "       attnscope bench --ui [SCENE.yaml] [--repeat N]\n"
          "       attnscope bench --tokens N --dim D [--heads H] [--repeat R] [--json]\n"
          "       attnscope keys\n"
          "       attnscope --help | --version\n"
          "\n"
          "Explore the attention mechanism of transformers, tensor by tensor.\n"
          "Without SCENE.yaml: the built-in scene, \"Your journey starts with one step\"\n"
          "through the book's MultiHeadAttention (seed 123, 2 heads).\n"
          "\n"
          "commands:\n"
          "  (none)  open the explorer on SCENE\n",
          out);
    fputs("  check   validate scene files (and keys.yaml/colors.yaml); every problem as\n"
          "          file:line:col\n"
          "  print   print the stages the way PyTorch prints tensors\n"
          "            -s, --stage S   only stage S:",
          out);
    for (int s = 0; s < STAGE_COUNT; s++)
        fprintf(out, "%s%s",
                s == 0       ? " "
                : s % 6 == 0 ? ",\n                            "
                             : ", ",
                attn_stage_name((enum attn_stage)s));
    fputs("\n"
          "                            (also q, k, v, mask, softmax, out), or params:\n"
          "                            every parameter matrix (W_query, W_out, ...)\n"
          "            -H, --head H    only head H (0-based)\n"
          "            -l, --layer L   only layer L (0-based) of a scene with layers\n"
          "  diff    compare one stage of two scenes cell by cell (B minus A): the shapes,\n"
          "          max and mean |diff|, the largest changes and a map of them\n"
          "            -s, --stage S   the stage (default weights)\n"
          "            -H, --head H    the head (default 0), or all\n"
          "            -l, --layer L   the layer (default 0)\n"
          "            -k, --top K     the K largest changes (default 10)\n"
          "            -c, --csv       the top K as CSV: layer,head,row,col,a,b,delta\n"
          "  heads   score every head by its attention pattern: previous token, induction,\n"
          "          first token (sink), self, entropy\n"
          "            -s, --sort SCORE  order by one score (entropy: lowest first)\n"
          "            -c, --csv       as CSV\n"
          "  export  write every stage as CSV (or .npy) and the resolved scene.yaml\n"
          "            -o, --output DIR  the folder (created when missing)\n"
          "            -f, --format F  csv (default: labelled tables) or npy (float32 .npy\n"
          "                            files of the same names and shapes; tokens.csv stays)\n"
          "  render  one view as an SVG heatmap for slides, in the explorer's colours: token\n"
          "          labels, a legend, a title; the file is written all or nothing\n"
          "            -s, --stage S   the stage (default weights)\n"
          "            -H, --head H    the head (default 0)\n"
          "            -a, --all-heads every head of the layer in a grid, one shared range\n"
          "            --mean          the mean over the heads\n"
          "            -l, --layer L   the layer (default 0)\n"
          "            --values        each cell's value in it (when the cells are big enough)\n"
          "            --scale M       colour scale: matrix (default), row (each row its own\n"
          "                            range) or log (down to max/10^4)\n"
          "            -o, --output FILE.svg  replaced only when it is an SVG\n"
          "  bench   time the forward pass and the parameter draws (mean microseconds)\n"
          "            -t, --time S    seconds to spend on each (default 0.5)\n"
          "            -n, --iters N   a fixed number of repetitions instead\n"
          "            --suite         the standard shapes, from the book to a GPT-2 layer\n"
          "            --ui            key -> frame in the explorer on a virtual terminal,\n"
          "                            against its targets (exit 1 when one is missed)\n"
          "            -r, --repeat N  timed repeats of each key with --ui (default 41)\n"
          "            --tokens N --dim D [--heads H]  one shape instead (N tokens, learned\n"
          "                            D-wide embeddings, d_out D, H causal heads, default 1):\n"
          "                            the median forward pass in ms, its GFLOP/s, OpenBLAS\n"
          "                            sgemm's GFLOP/s on D x D x D, the peak RSS in MiB\n"
          "                            (bench/torch_peer.py measures PyTorch the same way)\n"
          "            --repeat R      forward passes to take the median of (default 10)\n"
          "            --json          as one line of JSON\n"
          "            --threads T     OpenBLAS threads, any mode (default: OPENBLAS_NUM_THREADS,\n"
          "                            else one per core)\n"
          "  keys    the explorer's keys as a Markdown table (press ? in the explorer)\n"
          "\n"
          "exit status: 0 ok, 1 invalid scene or I/O error, 2 wrong usage\n",
          out);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    fprintf(stderr, "attnscope%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'attnscope --help'.\n", stderr);
    return CLI_USAGE;
}

static const struct cli_opt *find_long(const struct cli_opt *opts, int n, const char *name,
                                       size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(opts[i].long_name) == len && strncmp(opts[i].long_name, name, len) == 0)
            return &opts[i];
    return NULL;
}

static const struct cli_opt *find_short(const struct cli_opt *opts, int n, char c)
{
    for (int i = 0; i < n; i++)
        if (opts[i].short_name && opts[i].short_name == c)
            return &opts[i];
    return NULL;
}

int cli_parse(const char *cmd, int argc, char **argv, const struct cli_opt *opts, int n_opts,
              const char **pos, int max_pos, int *n_pos, bool *help)
{
    bool options_done = false;
    *n_pos = 0;
    *help = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == '\0') {
            if (*n_pos >= max_pos)
                return cli_usage_error(cmd, "unexpected argument '%s'", a);
            pos[(*n_pos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = true;
            continue;
        }
        const struct cli_opt *o;
        const char *inline_value = NULL;
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(opts, n_opts, name, len);
            if (!o)
                return cli_usage_error(cmd, "unknown option '%.*s'", (int)(len + 2), a);
            if (eq && !o->has_arg)
                return cli_usage_error(cmd, "option '--%s' takes no value", o->long_name);
            inline_value = eq ? eq + 1 : NULL;
        } else {
            o = find_short(opts, n_opts, a[1]);
            if (!o)
                return cli_usage_error(cmd, "unknown option '-%c'", a[1]);
            if (a[2] != '\0') {
                if (!o->has_arg)
                    return cli_usage_error(cmd, "unknown option '%s'", a);
                inline_value = a + 2;
            }
        }
        if (!o->has_arg) {
            *o->value = "";
            continue;
        }
        if (inline_value) {
            *o->value = inline_value;
        } else if (i + 1 < argc) {
            *o->value = argv[++i];
        } else {
            return cli_usage_error(cmd, "option '--%s' needs a value", o->long_name);
        }
    }
    return CLI_OK;
}

/* Prints a diag, naming the scene when the diag has no file of its own. */
static void print_diag(struct diag *d, const char *name, const char *source, size_t len)
{
    if (d->file[0] == '\0') {
        size_t n = strlen(name);
        if (n >= sizeof(d->file))
            n = sizeof(d->file) - 1;
        memcpy(d->file, name, n);
        d->file[n] = '\0';
    }
    diag_print(stderr, d, source, len);
}

int cli_scene_open(struct cli_scene *cs, const char *path)
{
    memset(cs, 0, sizeof(*cs));
    cs->name = path ? path : "default scene";
    cs->from_file = path != NULL;
    struct diag err;
    diag_clear(&err);

    if (path) {
        if (scenefile_load_report(&cs->scene, path, stderr) != 0)
            return CLI_INVALID;
    } else {
        attn_scene_init_default(&cs->scene);
    }

    /* A compute estimated past ATTN_LONG_SECONDS is announced before it starts: how much work
       and how long here, and that Ctrl-C stops it (nothing is written while it runs). */
    double seconds = attn_net_estimate_seconds(&cs->scene);
    double gflop = attn_scene_flops(&cs->scene) / 1e9;
    if (seconds > ATTN_LONG_SECONDS)
        cnum_fprintf(stderr,
                     "attnscope: %s: about %.*f GFLOP to compute, about %.0f s here (Ctrl-C "
                     "stops)\n",
                     cs->name, gflop < 10 ? 1 : 0, gflop, seconds);
    /* A big scene's first compute takes seconds: a bar on a terminal, a line in a log. */
    struct progress p;
    progress_begin(&p, stderr, "computing", "heads");
    cs->net.progress = (struct progress_sink){progress_tick, &p, &progress_interrupted};
    int rc = attn_net_compute(&cs->net, &cs->scene, &err);
    progress_end(&p, rc == 0);
    cs->net.progress = (struct progress_sink){0, 0, 0};
    /* A checkpoint that shrank while it was read gave zeros, not its numbers. */
    if (rc == 0 && attn_scene_check_backing(&cs->scene, &err) != 0) {
        attn_net_free(&cs->net);
        rc = -1;
    }
    if (rc != 0) {
        print_diag(&err, cs->name, NULL, 0);
        attn_scene_free(&cs->scene);
        return CLI_INVALID;
    }
    return CLI_OK;
}

void cli_scene_close(struct cli_scene *cs)
{
    attn_net_free(&cs->net);
    attn_scene_free(&cs->scene);
}

int cli_parse_int(const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}
