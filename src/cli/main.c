/* attnscope: the command-line entry point.
 *
 *   attnscope [SCENE.yaml]          the explorer (src/ui)
 *   attnscope check|print|diff|export|render|heads|bench|keys ...
 *
 * main() only dispatches: each command lives in its own cmd_*.c and returns the exit status
 * (0 ok, 1 invalid scene or I/O error, 2 wrong usage).
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fatal.h"
#include "common/progress.h"
#include "engine/kernels.h"
#include "explore/actions.h"
#include "ui/ui.h"

#ifndef ATTNSCOPE_VERSION
#define ATTNSCOPE_VERSION "unknown"
#endif

/* The explorer's default keys as a Markdown table: the README's key table is this output. */
static int cmd_keys(int argc, char **argv)
{
    const char *pos[1];
    int n_pos;
    bool help;
    int rc = cli_parse("keys", argc, argv, NULL, 0, pos, 0, &n_pos, &help);
    if (rc != CLI_OK)
        return rc;
    actions_print_markdown(stdout);
    return CLI_OK;
}

/* bench --ui opens the explorer (curses, linked here); every other bench is cli's. */
static int cmd_bench_any(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--ui") == 0)
            return cmd_bench_ui(argc, argv);
    return cmd_bench(argc, argv);
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv); /* the words after the command name */
} commands[] = {
    {"check", cmd_check}, {"print", cmd_print}, {"export", cmd_export}, {"bench", cmd_bench_any},
    {"keys", cmd_keys},   {"heads", cmd_heads}, {"render", cmd_render}, {"diff", cmd_diff},
};

/* A word that is neither a command nor plausibly a scene file is a mistyped command. */
static bool looks_like_scene(const char *word)
{
    struct stat st;
    if (stat(word, &st) == 0 || strchr(word, '/'))
        return true;
    size_t n = strlen(word);
    return (n > 5 && strcmp(word + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(word + n - 4, ".yml") == 0);
}

static int cmd_explore(int argc, char **argv)
{
    const char *pos[1];
    int n_pos;
    bool help;
    int rc = cli_parse(NULL, argc, argv, NULL, 0, pos, 1, &n_pos, &help);
    if (rc != CLI_OK)
        return rc;
    if (help) {
        cli_print_help(stdout);
        return CLI_OK;
    }
    if (n_pos == 1 && !looks_like_scene(pos[0]))
        return cli_usage_error(NULL, "unknown command '%s'", pos[0]);
    return ui_main(n_pos ? pos[0] : NULL);
}

static int dispatch(int argc, char **argv)
{
    if (argc >= 2) {
        if (strcmp(argv[1], "--version") == 0) {
            printf("attnscope %s\n", ATTNSCOPE_VERSION);
            return CLI_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
            if (strcmp(argv[1], commands[i].name) == 0)
                return commands[i].run(argc - 2, argv + 2);
    }
    return cmd_explore(argc - 1, argv + 1);
}

/* Every edit frees the parameter and stage matrices and allocates new ones of the same sizes.
 * glibc would hand each matrix over 128 KiB back to the kernel and map fresh pages for the next:
 * at 128 tokens x 768 that is 10 MB of page faults per edit, 8.8 ms of drawing becoming 60-97 ms
 * on a VM. Keeping them on the heap makes the next edit reuse warm pages. Matrices over 32 MiB
 * (long sequences' score maps) are still mapped and returned. */
static void keep_freed_matrices(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

/* ATTNSCOPE_MEMORY_MIB (and ATTNSCOPE_GFLOPS), when set, must be a limit (a speed): a value
 * that is not one would otherwise be silently replaced by the default, so it is refused before
 * any command runs. */
static int check_environment(void)
{
    const char *env = getenv("ATTNSCOPE_MEMORY_MIB");
    size_t bytes;
    char why[200];
    if (env && *env && attn_memory_env_parse(env, &bytes, why, sizeof(why)) != 0) {
        fprintf(stderr, "attnscope: %s\n", why);
        return CLI_USAGE;
    }
    double gflops;
    env = getenv("ATTNSCOPE_GFLOPS");
    if (env && *env && attn_gflops_env_parse(env, &gflops) != 0) {
        fprintf(stderr,
                "attnscope: ATTNSCOPE_GFLOPS is '%.40s': not a speed (a number of GFLOP/s from "
                "0.001, like 20)\n",
                env);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int main(int argc, char **argv)
{
    fatal_install_crash_handlers();
    keep_freed_matrices();
    progress_catch_interrupts(); /* the explorer puts its own in place */
    int rc = check_environment();
    if (rc == CLI_OK)
        rc = dispatch(argc, argv);
    /* Output that never arrived is a failure, whichever command wrote it (a full disk, a
     * closed pipe, /dev/full): check the buffered writes once, for all of them. */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        int why = errno;
        /* A write that failed mid-output (text over the buffer's size) left only the error
         * flag; errno is long gone. One more byte asks the descriptor again. */
        if (!why) {
            why = EIO;
            if (write(STDOUT_FILENO, "\n", 1) < 0)
                why = errno;
        }
        fprintf(stderr, "attnscope: cannot write to standard output: %s\n", strerror(why));
        return rc == CLI_OK ? CLI_INVALID : rc;
    }
    return rc;
}
