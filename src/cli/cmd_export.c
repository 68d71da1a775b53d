/* export: every stage as CSV or .npy plus the resolved scene.yaml (README.md ("Export
 * format")). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "export/export.h"

int cmd_export(int argc, char **argv)
{
    const char *dir = NULL, *format = NULL;
    const struct cli_opt opts[] = {
        {"output", 'o', true, &dir},
        {"format", 'f', true, &format},
    };
    const char *pos[1];
    int n_pos;
    bool help;
    int rc = cli_parse("export", argc, argv, opts, 2, pos, 1, &n_pos, &help);
    if (rc != CLI_OK)
        return rc;
    if (help) {
        cli_print_help(stdout);
        return CLI_OK;
    }
    if (!dir || dir[0] == '\0')
        return cli_usage_error("export", "missing -o DIR");
    enum export_format fmt = EXPORT_CSV;
    if (format && strcmp(format, "npy") == 0)
        fmt = EXPORT_NPY;
    else if (format && strcmp(format, "csv") != 0)
        return cli_usage_error("export", "--format must be csv or npy, not '%s'", format);

    /* A folder that is not ours is refused before a long compute, and again right before the
       swap (export_dir_progress). */
    struct diag err;
    if (export_check_target(dir, NULL, &err) != 0) {
        diag_print(stderr, &err, NULL, 0);
        return CLI_INVALID;
    }
    struct cli_scene cs;
    rc = cli_scene_open(&cs, n_pos ? pos[0] : NULL);
    if (rc != CLI_OK)
        return rc;
    struct progress p;
    progress_begin(&p, stderr, "exporting", "heads");
    /* Ctrl-C while the files are written: the export stops at the next head and removes its
       temporary folder (the previous export stays whole), then the command ends, status 130. */
    const struct progress_sink sink = {progress_tick, &p, &progress_interrupted};
    progress_writing(true);
    rc = export_dir_progress(dir, &cs.scene, &cs.net, fmt, &sink, &err);
    progress_end(&p, rc == 0);
    progress_writing(false);
    if (rc != 0) {
        diag_print(stderr, &err, NULL, 0);
        rc = CLI_INVALID;
    } else {
        printf("%s: exported %s\n", dir, cs.name);
    }
    cli_scene_close(&cs);
    return rc;
}
