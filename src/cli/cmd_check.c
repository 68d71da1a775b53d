/* check: validate scene files and list every problem, not only the first.
 *
 * Output follows the compilers' convention so editors can jump to the spot:
 *   scene.yaml:12:5: unknown key 'headz' (did you mean 'heads'?)
 *     headz: 2
 *     ^
 * A good file prints "FILE: ok" on stdout. Exit 1 when any file has a problem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scenefile/scenefile.h"

static int check_one(const char *path)
{
    struct scene s;
    if (scenefile_load_report(&s, path, stderr) != 0)
        return CLI_INVALID;
    scene_free(&s);
    printf("%s: ok\n", path);
    return CLI_OK;
}

int cmd_check(int argc, char **argv)
{
    const char **files = calloc((size_t)argc + 1, sizeof(*files));
    if (!files) {
        fputs("attnscope check: out of memory\n", stderr);
        return CLI_INVALID;
    }
    int n_files;
    bool help;
    int rc = cli_parse("check", argc, argv, NULL, 0, files, argc, &n_files, &help);
    if (rc == CLI_OK && help)
        cli_print_help(stdout);
    else if (rc == CLI_OK && n_files == 0)
        rc = cli_usage_error("check", "no scene file given");
    else if (rc == CLI_OK)
        for (int i = 0; i < n_files; i++)
            if (check_one(files[i]) != CLI_OK)
                rc = CLI_INVALID;
    free(files);
    return rc;
}
