/* attnscope: the command-line entry point.
 *
 *   attnscope [SCENE] [--text TEXT] the explorer (src/ui); SCENE may be a model folder
 *   attnscope COMMAND ...            a command of cli.h's CLI_COMMANDS, keys or help
 *
 * main() only dispatches, through the command table below: each command lives in its own
 * cmd_*.c with its descriptor (usage, summary, options) and returns the exit status (0 ok, 1
 * invalid scene or I/O error, 2 wrong usage).
 */
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "common/datadir.h"
#include "common/fatal.h"
#include "common/progress.h"
#include "scenefile/scenefile.h"
#include "engine/kernels.h"
#include "explore/actions.h"
#include "ui/ui.h"

#ifndef ATTNSCOPE_VERSION
#define ATTNSCOPE_VERSION "unknown"
#endif

static int cmd_keys(int argc, char **argv);
static int cmd_explore(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct cli_example keys_examples[] = {
    {"attnscope keys", "the keys as a table, as docs/explorer.md shows it"},
    {NULL, NULL},
};

static const struct cli_command cli_keys = {
    "keys",
    cmd_keys,
    "",
    "the explorer's keys as a Markdown table",
    "Print the explorer's default keys as a Markdown table, grouped as the help overlay (?)\n"
    "groups them. Keys are rebound in keys.yaml (see attnscope(1), FILES).",
    NULL,
    0,
    keys_examples,
    false,
};

static const struct cli_example explore_examples[] = {
    {"attnscope 30-english-journey",
     "the book's sentence in models/english, a model trained on English: t types your own, p "
     "shows its next-token guesses"},
    {"attnscope lessons/7-trained-heads", "a guided tour of what trained heads do"},
    {NULL, NULL},
};

enum { EXPLORE_O_BASELINE, EXPLORE_O_COUNT };
static const struct cli_opt explore_opts[EXPLORE_O_COUNT] = {
    [EXPLORE_O_BASELINE] = {"baseline", 0, "B",
                            "pin scene or model B (on the same text) as the baseline: every\n"
                            "view shows \u0394 = SCENE \u2212 B, as after the B key; two\n"
                            "checkpoints of one model show what training changed"},
};

static const struct cli_command cli_explore = {
    NULL,
    cmd_explore,
    "[SCENE] [--text TEXT] [--baseline B]",
    "open the explorer on SCENE",
    "Open the explorer: the attention of SCENE, head by head and stage by stage, as a\n"
    "heatmap with an inspector that shows each number's arithmetic. Press ? for the keys.\n"
    "SCENE may be a model folder: attnscope ~/models/SmolLM2-135M --text \"The capital of\n"
    "France is\" opens it on that sentence (t types another, w saves the scene).",
    explore_opts,
    EXPLORE_O_COUNT,
    explore_examples,
    true,
};

enum { HELP_O_MAN, HELP_O_COUNT };
static const struct cli_opt help_opts[HELP_O_COUNT] = {
    [HELP_O_MAN] = {"man", 0, "PAGE",
                    "the manual page PAGE in roff instead: attnscope (section 1)\n"
                    "or attnscope-scene (section 5); the build installs them"},
};

static const struct cli_example help_examples[] = {
    {"attnscope help predict", "predict's options, as attnscope predict --help prints them"},
    {NULL, NULL},
};

static const struct cli_command cli_help = {
    "help",
    cmd_help,
    "[COMMAND]\n--man attnscope|attnscope-scene",
    "the list of commands, or one command's help",
    "Without COMMAND: the list of commands. With one: its usage, what it does and its\n"
    "options, the same as 'attnscope COMMAND --help'.",
    help_opts,
    HELP_O_COUNT,
    help_examples,
    false,
};

/* Every command, the explorer first: dispatch, `attnscope --help` and attnscope(1). */
#define ROW(name) , &cli_##name
static const struct cli_command *const commands[] = {
    &cli_explore CLI_COMMANDS(ROW), /* cli.h's, then main.c's own */
    &cli_keys,
    &cli_help,
};
#undef ROW
#define N_COMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

static const struct cli_command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (commands[i]->name && strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static int cmd_keys(int argc, char **argv)
{
    int n_pos;
    int rc = cli_begin(&cli_keys, argc, argv, NULL, NULL, 0, &n_pos);
    if (rc != CLI_CONTINUE)
        return rc;
    actions_print_markdown(stdout);
    return CLI_OK;
}

static int cmd_help(int argc, char **argv)
{
    const char *val[HELP_O_COUNT], *pos[1];
    int n_pos;
    int rc = cli_begin(&cli_help, argc, argv, val, pos, 1, &n_pos);
    if (rc != CLI_CONTINUE)
        return rc;
    if (val[HELP_O_MAN]) {
        if (n_pos)
            return cli_usage_error("help", "--man takes no command");
        if (strcmp(val[HELP_O_MAN], "attnscope-scene") == 0)
            return cli_print_man_scene(stdout) == 0 ? CLI_OK : CLI_INVALID;
        if (strcmp(val[HELP_O_MAN], "attnscope") != 0)
            return cli_usage_error("help", "no manual page '%s' (attnscope, attnscope-scene)",
                                   val[HELP_O_MAN]);
        cli_print_man(stdout, commands, N_COMMANDS);
        return CLI_OK;
    }
    if (n_pos == 0) {
        cli_print_overview(stdout, commands, N_COMMANDS);
        return CLI_OK;
    }
    const struct cli_command *cmd = find_command(pos[0]);
    if (!cmd)
        return cli_usage_error("help", "unknown command '%s'", pos[0]);
    cli_print_command_help(stdout, cmd);
    return CLI_OK;
}

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
    /* `attnscope --help` is the overview, not the explorer's own help. */
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_overview(stdout, commands, N_COMMANDS);
            return CLI_OK;
        }
    struct cli_input in;
    const char *val[EXPLORE_O_COUNT];
    int rc = cli_begin_input(&cli_explore, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *base_arg = val[EXPLORE_O_BASELINE];
    for (int i = 0; base_arg && i < in.n_sentences; i++)
        if (in.from_file[i] && strcmp(in.sentence[i], "-") == 0)
            return cli_usage_error(NULL, "--baseline reads the sentence a second time: give it "
                                         "with --text or --text-file FILE, not standard input");
    char path[4096];
    if (n_pos && attn_data_find_scene(path, sizeof(path), pos[0]) != 0 &&
        !attn_scenefile_is_model(pos[0])) {
        if (!looks_like_scene(pos[0]))
            return cli_usage_error(NULL, "'%s' is neither a command nor a scene (looked in %s)",
                                   pos[0], path);
        return cli_find_scene(path, sizeof(path), pos[0]); /* says why */
    }
    struct cli_scene cs, cb = {0};
    if ((rc = cli_scene_load(&cs, n_pos ? pos[0] : NULL, &in)) != CLI_OK)
        return rc;
    if (base_arg) { /* the same sentence, never saved: --save-scene is the scene's */
        struct cli_input bin = in;
        bin.save_scene = NULL;
        if ((rc = cli_scene_load(&cb, base_arg, &bin)) != CLI_OK) {
            cli_scene_close(&cs);
            return rc;
        }
    }
    /* The sentence came down a pipe: the keys come from the terminal, as less reads them. */
    for (int i = 0; i < in.n_sentences; i++)
        if (in.from_file[i] && strcmp(in.sentence[i], "-") == 0 && !isatty(STDIN_FILENO)) {
            int tty = open("/dev/tty", O_RDONLY);
            if (tty >= 0 && tty != STDIN_FILENO) {
                dup2(tty, STDIN_FILENO);
                close(tty);
            }
        }
    /* w saves beside what was opened: the saved scene, the model's folder, the scene file */
    char base_name[96] = "";
    if (base_arg) { /* the heading names it by its last part: "pythia-70m-step1000" */
        const char *end = base_arg + strlen(base_arg);
        while (end > base_arg + 1 && end[-1] == '/')
            end--;
        const char *start = end;
        while (start > base_arg && start[-1] != '/')
            start--;
        snprintf(base_name, sizeof(base_name), "%.*s", (int)(end - start), start);
    }
    int status = ui_main(&cs.scene,
                         cs.saved[0] ? cs.saved
                         : n_pos     ? cs.path
                                     : NULL,
                         base_arg ? &cb.scene : NULL, base_name);
    cli_scene_close(&cb);
    return status;
}

static int dispatch(int argc, char **argv)
{
    if (argc >= 2) {
        if (strcmp(argv[1], "--version") == 0) {
            char blas[160];
            attn_blas_describe(blas, sizeof(blas));
            printf("attnscope %s\n%s\n", ATTNSCOPE_VERSION, blas); /* what a bug report needs */
            return CLI_OK;
        }
        const struct cli_command *cmd = find_command(argv[1]);
        if (cmd)
            return cmd->run(argc - 2, argv + 2);
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

/* ATTNSCOPE_MEMORY_MIB (ATTNSCOPE_GFLOPS, ATTNSCOPE_STAGE_MIB), when set, must be a limit (a
 * speed, an amount): a value
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
    double mib;
    env = getenv("ATTNSCOPE_STAGE_MIB");
    if (env && *env && (attn_cnum_parse_double(env, false, &mib) != CNUM_OK || !(mib >= 0))) {
        fprintf(stderr,
                "attnscope: ATTNSCOPE_STAGE_MIB is '%.40s': not an amount of memory (MiB, 0 or "
                "more, like 32; 0 keeps every layer's stages)\n",
                env);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int main(int argc, char **argv)
{
    attn_fatal_install_crash_handlers();
    cli_bench_ui_hook = cmd_bench_ui;
    cli_lesson_screen_hook = cmd_check_lesson_screen;
    keep_freed_matrices();
    attn_progress_catch_interrupts(); /* the explorer puts its own in place */
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
