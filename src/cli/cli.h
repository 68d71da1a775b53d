/* cli: the `attnscope` command line, shared pieces.
 *
 * main.c dispatches to one cmd_* function per command. Each returns the process exit status:
 * CLI_OK, CLI_INVALID (a bad scene or input, an I/O error) or CLI_USAGE (wrong command line).
 * Every message goes to stderr and names the file it is about.
 */
#ifndef ATTNSCOPE_CLI_H
#define ATTNSCOPE_CLI_H

#include <stdbool.h>

#include "engine/attention.h"
#include "engine/net.h"
#include "engine/model.h"
#include "engine/scene.h"

enum cli_status { CLI_OK = 0, CLI_INVALID = 1, CLI_USAGE = 2 };

/* One option of a command: --long, -s, with or without a value. */
struct cli_opt {
    const char *long_name; /* without the dashes */
    char short_name;       /* 0 when there is none */
    bool has_arg;          /* takes a value: --name V, --name=V, -s V or -sV */
    const char **value;    /* receives the value, or "" for a flag */
};

/* Parses args (the words after the command name). Positional words go to pos (at most
 * max_pos); "--" ends the options. -h/--help sets *help. Prints the problem and returns
 * CLI_USAGE on an unknown option, a missing value or too many words; else CLI_OK. */
int cli_parse(const char *cmd, int argc, char **argv, const struct cli_opt *opts, int n_opts,
              const char **pos, int max_pos, int *n_pos, bool *help);

/* Prints "attnscope CMD: message" and the usage hint to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The help text (stdout for --help, stderr after a usage error). */
void cli_print_help(FILE *out);

/* A scene ready to show: loaded (or the built-in default), resolved and computed once. */
struct cli_scene {
    const char *name; /* the path, or "default scene" */
    bool from_file;
    struct attn_scene scene;
    struct attn_net net; /* every layer, computed */
};

/* Loads path (NULL: the built-in default), resolves it and runs attn_forward. Prints every
 * problem as file:line:col with the line and a caret. Returns CLI_OK or CLI_INVALID; on
 * failure nothing is left to free. */
int cli_scene_open(struct cli_scene *cs, const char *path);
void cli_scene_close(struct cli_scene *cs);

/* "# tokens: Your journey ..." and a line break: the tokens as print and heads show them, each
 * escaped (common/utf8.h) so a token from a file cannot drive the terminal. */
void cli_print_tokens(FILE *out, const struct attn_model *m);

/* A scene of n tokens with learned d_in-wide embeddings, `heads` causal split heads: the
 * benchmarks' shapes. Returns 0, or -1 (out of memory) with s still safe to free. */
int bench_scene(struct attn_scene *s, int n, int d_in, int d_out, int heads, double dropout);
/* Parses a whole decimal integer in [lo, hi]. Returns 0, or -1. */
int cli_parse_int(const char *text, int lo, int hi, int *out);

int cmd_check(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_heads(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_diff(int argc, char **argv);
/* bench --ui lives with main.c: it opens the explorer, so it links curses. */
int cmd_bench_ui(int argc, char **argv);

#endif
