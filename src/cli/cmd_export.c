/* export: every stage as CSV or .npy plus the resolved scene.yaml (README.md ("Export
 * format")). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "export/export.h"

enum { O_OUTPUT, O_FORMAT, O_TOP, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_OUTPUT] = {"output", 'o', "DIR", "the folder (created when missing)"},
    [O_FORMAT] = {"format", 'f', "F",
                  "csv (default: labelled tables) or npy (float32 .npy files\n"
                  "of the same names and shapes; tokens.csv stays CSV)"},
    [O_TOP] = {"top", 'k', "K",
               "the K most likely tokens per position in predictions.csv\n"
               "(default 10, at most 1000)"},
};

static const struct cli_example examples[] = {
    {"attnscope export 10-mha -o mha-export",
     "every stage of the book's MultiHeadAttention as CSV, in mha-export/"},
    {NULL, NULL},
};

const struct cli_command cli_export = {
    "export",
    cmd_export,
    "[SCENE] -o DIR [--format csv|npy] [--top K]",
    "write every stage as CSV (or .npy) and the resolved scene.yaml",
    "Write every stage of every head and layer as a CSV table (or a float32 .npy file), the\n"
    "parameters, the tokens, the attention rollout and the resolved scene.yaml into the folder\n"
    "DIR; with a vocabulary model also predictions.csv, loss.csv and lens.csv (CSV in either\n"
    "format: they hold token text). The folder is written all or nothing; an existing DIR is\n"
    "replaced only when it is an earlier export.",
    opts,
    O_COUNT,
    examples,
    true,
};

/* The export a lean compute writes as it goes. */
struct export_job {
    struct export_stream x;
    const struct cli_scene *cs; /* its scene is loaded before the compute starts */
};

/* Layer L's files, while its stages are current (attn_net_visit). */
static int export_visit(void *ctx, const struct attn_net *net, int layer, struct diag *err)
{
    struct export_job *job = ctx;
    return export_stream_layer(&job->x, &job->cs->scene, net, layer, err);
}

int cmd_export(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_export, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *dir = val[O_OUTPUT], *format = val[O_FORMAT];
    if (!dir || dir[0] == '\0')
        return cli_usage_error("export", "missing -o DIR");
    enum export_format fmt = EXPORT_CSV;
    if (format && strcmp(format, "npy") == 0)
        fmt = EXPORT_NPY;
    else if (format && strcmp(format, "csv") != 0)
        return cli_usage_error("export", "--format must be csv or npy, not '%s'", format);

    int top = EXPORT_TOP_DEFAULT;
    if (val[O_TOP] && cli_int_option(&top, "export", "--top", val[O_TOP], 1, 1000) != CLI_OK)
        return CLI_USAGE;

    /* A folder that is not ours is refused before a long compute, and again right before the
       swap. Each layer is written as it is computed (a lean compute: one layer's n x n stages
       in memory), into a temporary folder that replaces DIR only once complete. Ctrl-C, SIGTERM
       or SIGHUP, during the compute or the writing, stops at the next head and removes the
       temporary folder (the previous export stays whole); the command then ends with status
       130 (143, 129). */
    struct diag err;
    attn_diag_clear(&err);
    struct cli_scene cs;
    struct export_job job = {.cs = &cs};
    /* The writing reads the stop flag too, after each head's files and before the swap. */
    static const struct progress_sink stop = {NULL, NULL, &attn_progress_interrupted};
    /* Writing from before the temporary folder exists: a signal between its mkdtemp and this
       line ended the process at once and left the folder behind. */
    attn_progress_writing(true);
    if (export_stream_begin(&job.x, dir, fmt, top, &stop, &err) != 0) {
        attn_progress_writing(false);
        attn_diag_print(stderr, &err, NULL, 0);
        return CLI_INVALID;
    }
    rc = cli_scene_open_lean(&cs, n_pos ? pos[0] : NULL, &in, true, export_visit, &job);
    bool ended = rc == CLI_OK && export_stream_end(&job.x, &cs.scene, &cs.net, &err) == 0;
    if (rc != CLI_OK) /* nothing computed: the temporary folder goes */
        export_stream_abort(&job.x);
    attn_progress_writing(false);
    if (ended) {
        cli_scene_finite(&cs, false); /* the files hold nan as computed */
        printf("%s: exported %s\n", dir, cs.name);
    } else if (rc == CLI_OK) {
        attn_diag_print(stderr, &err, NULL, 0);
        rc = CLI_INVALID;
    }
    cli_scene_close(&cs);
    return rc;
}
