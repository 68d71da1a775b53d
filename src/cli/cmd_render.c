/* render: one view of a scene as an SVG heatmap for slides (explore/picture, export/svg).
 *
 *   attnscope render SCENE --stage weights --head 1 -o head1.svg
 *   attnscope render SCENE --all-heads --layer 5 --scale row --values -o layer5.svg
 *
 * The colours are the explorer's: the same scale steps and the RGB of the xterm-256 colours it
 * shows, with the scales colors.yaml chooses. The file is written all or nothing; an existing
 * file is replaced only when it is an SVG (never a scene given by mistake as -o).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fsutil.h"
#include "explore/picture.h"
#include "explore/roles.h"

/* True when the file at path reads as SVG (an earlier picture): "<svg" near its start. Opened
 * as every input is (attn_fsutil_open_regular): a FIFO is not read, so never waited on. */
static bool looks_like_svg(const char *path)
{
    struct stat st;
    int fd = attn_fsutil_open_regular(path, &st, NULL);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return false;
    }
    char head[1025];
    size_t n = fread(head, 1, sizeof(head) - 1, f);
    fclose(f);
    head[n] = '\0';
    return strstr(head, "<svg") != NULL;
}

static void usage_stages(void)
{
    fprintf(stderr, "attnscope render: stages:");
    for (int s = 0; s < STAGE_COUNT; s++)
        fprintf(stderr, "%s %s", s ? "," : "", attn_stage_name((enum attn_stage)s));
    fputs("\nTry 'attnscope render --help'.\n", stderr);
}

enum { O_STAGE, O_HEAD, O_ALL_HEADS, O_MEAN, O_LAYER, O_VALUES, O_SCALE, O_OUTPUT, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_STAGE] = {"stage", 's', "S", "the stage (default weights): @STAGES@"},
    [O_HEAD] = {"head", 'H', "H", "the head (default 0)"},
    [O_ALL_HEADS] = {"all-heads", 'a', NULL, "every head of the layer in a grid, one shared range"},
    [O_MEAN] = {"mean", 0, NULL, "the mean over the heads"},
    [O_LAYER] = {"layer", 'l', "L", "the layer (default 0)"},
    [O_VALUES] = {"values", 0, NULL, "each cell's value in it (when the cells are big enough)"},
    [O_SCALE] = {"scale", 0, "M",
                 "colour scale: matrix (default), row (each row its own\n"
                 "range) or log (down to max/10^4)"},
    [O_OUTPUT] = {"output", 'o', "FILE.svg", "the picture; replaced only when it is an SVG"},
};

static const struct cli_example examples[] = {
    {"attnscope render 10-mha --head 1 --values -o head1.svg",
     "head 1's weights as an SVG picture for slides, each cell's value written"},
    {NULL, NULL},
};

const struct cli_command cli_render = {
    "render",
    cmd_render,
    "[SCENE] [--stage S] [--head H | --all-heads | --mean] [--layer L]\n"
    " [--values] [--scale matrix|row|log] -o FILE.svg",
    "one view as an SVG heatmap for slides",
    "Draw one view as an SVG heatmap for slides, in the explorer's colours: token labels, a\n"
    "legend and a title. The file is written all or nothing.",
    opts,
    O_COUNT,
    examples,
    true,
};

int cmd_render(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_render, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *stage_arg = val[O_STAGE], *head_arg = val[O_HEAD], *layer_arg = val[O_LAYER];
    const char *scale_arg = val[O_SCALE], *all_arg = val[O_ALL_HEADS], *mean_arg = val[O_MEAN];
    const char *values_arg = val[O_VALUES], *out = val[O_OUTPUT];
    if (!out || !out[0])
        return cli_usage_error("render", "missing -o FILE.svg");
    struct stat st;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_usage_error("render", "'%s' is a folder; -o takes a file name", out);
    struct diag oerr;
    if (attn_fsutil_check_output(out, &oerr) != 0) { /* a FIFO, a device: refused, never opened */
        attn_diag_print(stderr, &oerr, NULL, 0);
        return CLI_INVALID;
    }
    int stage = STAGE_WEIGHTS, head = 0, layer = 0, scale = SCALE_BY_MATRIX;
    if (stage_arg && (stage = attn_stage_parse(stage_arg)) < 0) {
        fprintf(stderr, "attnscope render: unknown stage '%s'\n", stage_arg);
        usage_stages();
        return CLI_USAGE;
    }
    if (scale_arg && (scale = palette_scale_parse(scale_arg)) < 0)
        return cli_usage_error("render", "unknown scale '%s' (matrix, row or log)", scale_arg);
    if ((head_arg != NULL) + (all_arg != NULL) + (mean_arg != NULL) > 1)
        return cli_usage_error("render", "--head, --all-heads and --mean exclude each other");
    if ((head_arg &&
         cli_int_option(&head, "render", "head", head_arg, 0, SCENE_MAX_HEADS - 1) != CLI_OK) ||
        (layer_arg &&
         cli_int_option(&layer, "render", "layer", layer_arg, 0, SCENE_MAX_LAYERS - 1) != CLI_OK))
        return CLI_USAGE;

    struct cli_scene cs;
    rc = cli_scene_open(&cs, n_pos ? pos[0] : NULL, &in);
    if (rc != CLI_OK)
        return rc;
    cli_scene_finite(&cs, false);
    /* A head, layer or stage the scene does not have is a wrong command line. */
    const char *who = cs.from_file ? cs.name : "attnscope render";
    const struct attn_model *m0 = &cs.net.model[0];
    rc = CLI_USAGE;
    if (head >= m0->heads) {
        fprintf(stderr, "%s: head %d out of range (scene has %d head%s)\n", who, head, m0->heads,
                m0->heads == 1 ? "" : "s");
    } else if (layer >= cs.net.layers) {
        fprintf(stderr, "%s: layer %d out of range (scene has %d layer%s)\n", who, layer,
                cs.net.layers, cs.net.layers == 1 ? "" : "s");
    } else if (!attn_stage_present(&cs.net.model[layer], (enum attn_stage)stage)) {
        enum attn_stage order[STAGE_COUNT];
        int n_order = attn_stage_order(order, &cs.net.model[layer]);
        fprintf(stderr, "%s: %s has no stage %s; its stages:", who,
                cs.net.layers > 1 ? "this layer" : "this scene",
                attn_stage_name((enum attn_stage)stage));
        for (int i = 0; i < n_order; i++)
            fprintf(stderr, "%s %s", i ? "," : "", attn_stage_name(order[i]));
        fputs("\n", stderr);
    } else if (attn_fsutil_exists(out) && !looks_like_svg(out)) {
        fprintf(stderr, "%s: exists and is not an SVG; not replacing it\n", out);
        rc = CLI_INVALID;
    } else {
        rc = CLI_OK;
    }
    if (rc != CLI_OK)
        goto out;

    /* The explorer's colour scales: colors.yaml's choice, problems said but not fatal. */
    struct color_spec roles[ROLE_COUNT];
    struct picture_view v = {
        .layer = layer,
        .stage = (enum attn_stage)stage,
        .head = all_arg    ? PICTURE_ALL_HEADS
                : mean_arg ? PICTURE_HEAD_MEAN
                           : head,
        .scale = (enum color_scale)scale,
        .values = values_arg != NULL,
    };
    struct diag_list errs;
    attn_diag_list_init(&errs);
    roles_load_default(roles, &v.seq_scale, &v.div_scale, &errs);
    for (int i = 0; i < errs.n; i++) {
        attn_diag_print(stderr, &errs.items[i], NULL, 0);
        fprintf(stderr, "attnscope render: %s ignored, its default colours used\n",
                errs.items[i].file);
    }
    attn_diag_list_print_lost(stderr, &errs, "attnscope render");
    attn_diag_list_free(&errs);

    char variant[256], title[600];
    attn_scene_describe(variant, sizeof(variant), &cs.scene);
    snprintf(title, sizeof(title), "%.500s", cs.scene.title ? cs.scene.title : variant);
    struct diag err;
    attn_diag_clear(&err);
    attn_progress_writing(true); /* Ctrl-C waits for the picture: it is written whole or not */
    int wrote = picture_write(out, true, &cs.net, title, &v, &err);
    attn_progress_writing(false);
    if (wrote != 0) {
        attn_diag_print(stderr, &err, NULL, 0);
        rc = CLI_INVALID;
    } else {
        /* "wrote head1.svg (scenes/10-mha.yaml, weights, head 1)": the picture, then what it
           shows, so it never reads as if the scene had been written. */
        char what[160], layer_part[32] = "", scale_part[32] = "";
        if (cs.net.layers > 1)
            snprintf(layer_part, sizeof(layer_part), ", layer %d", layer);
        if (scale != SCALE_BY_MATRIX)
            snprintf(scale_part, sizeof(scale_part), ", %s scale",
                     palette_scale_name((enum color_scale)scale));
        if (all_arg)
            snprintf(what, sizeof(what), "all heads");
        else if (mean_arg)
            snprintf(what, sizeof(what), "mean of the heads");
        else
            snprintf(what, sizeof(what), "head %d", head);
        printf("wrote %s (%s, %s, %s%s%s)\n", out, cs.name, attn_stage_name((enum attn_stage)stage),
               what, layer_part, scale_part);
    }
out:
    cli_scene_close(&cs);
    return rc;
}
