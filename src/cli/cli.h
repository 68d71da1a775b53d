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

/* One option of a command, declared once: the parser, `attnscope CMD --help` and the manual
 * page all read it. */
struct cli_opt {
    const char *long_name; /* without the dashes */
    char short_name;       /* 0 when there is none */
    const char *arg;       /* the value's name in help ("DIR"); NULL: a flag, no value */
    const char *help;      /* what it does; '\n' starts a continuation line */
};

/* One example of a command: a line to type, as it runs from anywhere (shipped scenes by name),
 * and what it shows. */
struct cli_example {
    const char *line; /* "attnscope predict 30-english-journey --position 11" */
    const char *what; /* one line, lower case, no full stop */
};

/* One command of `attnscope`, declared once: dispatch, `attnscope --help`'s list, the command's
 * own --help and its section of attnscope(1) come from this, and its examples are the help's
 * "examples:" and the manual's EXAMPLES (a test runs each). */
struct cli_command {
    const char *name;                  /* the word after attnscope; NULL: the explorer */
    int (*run)(int argc, char **argv); /* the words after the command name */
    const char *usage;                 /* after "attnscope NAME "; '\n' between forms */
    const char *summary;               /* one line, lower case, no full stop */
    const char *description;           /* sentences; '\n\n' between paragraphs */
    const struct cli_opt *opts;
    int n_opts;
    const struct cli_example *examples; /* ended by {NULL}; NULL: none */
    bool input; /* takes SCENE's input options too (cli_input_opts: --text, --save-scene, ...) */
};

/* The input options, declared once for every command that reads a scene (input: true): where
 * SCENE's sentence comes from, fitted to the model's context, and the scene saved. */
enum {
    CLI_IN_TEXT,
    CLI_IN_TEXT_FILE,
    CLI_IN_TOKENIZER,
    CLI_IN_TRUNCATE,
    CLI_IN_WINDOW,
    CLI_IN_SAVE_SCENE,
    CLI_IN_COUNT
};
extern const struct cli_opt cli_input_opts[CLI_IN_COUNT];

/* What the input options said. */
struct cli_input {
    /* The sentences, in the order given: each --text's, or --text-file's file name ("-":
     * standard input). One replaces the scene's text; two are a pair (BERT's [A, B]). */
    const char *sentence[2];
    bool from_file[2];
    int n_sentences;
    const char *tokenizer;  /* --tokenizer PATH, or NULL */
    const char *truncate;   /* "start", "end", or NULL: a text too long is refused */
    int window[2];          /* --window START:END, or {-1, -1} */
    const char *save_scene; /* --save-scene FILE, or NULL */
};

/* Parses args (the words after the command name) against cmd's options. values[i] receives
 * opts[i]'s value, "" for a flag that is there, NULL for an option not given. Positional words
 * go to pos (at most max_pos); "--" ends the options. -h/--help prints cmd's help to stdout.
 * Returns CLI_CONTINUE to go on, or the status the command returns now: CLI_OK after --help,
 * CLI_USAGE (printed) on an unknown option, a missing value or too many words. */
#define CLI_CONTINUE (-1)
int cli_begin(const struct cli_command *cmd, int argc, char **argv, const char **values,
              const char **pos, int max_pos, int *n_pos);
/* cli_begin for a command with input (cmd->input): the input options go to *in, checked (a
 * third sentence, --truncate's word, --window's numbers, --truncate with --window are usage
 * errors). */
int cli_begin_input(const struct cli_command *cmd, int argc, char **argv, const char **values,
                    const char **pos, int max_pos, int *n_pos, struct cli_input *in);

/* Prints "attnscope CMD: message" and where to find the usage to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `attnscope --help`: the forms and a line a command. */
void cli_print_overview(FILE *out, const struct cli_command *const *cmds, int n);
/* `attnscope CMD --help`: its usage, what it does, its options. */
void cli_print_command_help(FILE *out, const struct cli_command *cmd);
/* attnscope(1) in roff, from the command table and the explorer's key table. */
void cli_print_man(FILE *out, const struct cli_command *const *cmds, int n);
/* attnscope-scene(5) in roff, from the scene loader's tables; -1 (said on stderr) when a key has
 * no sentence in src/cli/manscene.c. */
int cli_print_man_scene(FILE *out);

/* bench's options, shared with main.c's bench --ui. */
enum {
    BENCH_O_TIME,
    BENCH_O_ITERS,
    BENCH_O_SUITE,
    BENCH_O_UI,
    BENCH_O_TOKENS,
    BENCH_O_DIM,
    BENCH_O_HEADS,
    BENCH_O_REPEAT,
    BENCH_O_JSON,
    BENCH_O_THREADS,
    BENCH_O_GENERATE,
    BENCH_O_COUNT
};
/* bench --ui lives with main.c, which links curses; main sets this before dispatching. */
extern int (*cli_bench_ui_hook)(const char *const *values, const char *const *pos, int n_pos,
                                const struct cli_input *in);
/* check's lesson on the explorer's screen at 80x24 (ui/lessoncheck.h), with main.c too: plays the
 * lesson of s (taken over) and adds every step's problems; -1 with err, s left, when there is no
 * virtual terminal to play it on. NULL: the lesson is checked without a screen. */
extern int (*cli_lesson_screen_hook)(struct attn_scene *s, const char *path, const char *source,
                                     size_t len, struct diag_list *problems, struct diag *err);
int cmd_check_lesson_screen(struct attn_scene *s, const char *path, const char *source, size_t len,
                            struct diag_list *problems, struct diag *err);

/* The commands of cli_lib (the ones without curses), in the order `attnscope --help` and
 * attnscope(1) list them: X(NAME) is the command NAME, cmd_NAME.c's cli_NAME and cmd_NAME. A new
 * command is its file and one row here; main.c adds the explorer first, and keys and help last. */
#define CLI_COMMANDS(X)                                                                            \
    X(check)                                                                                       \
    X(print)                                                                                       \
    X(diff)                                                                                        \
    X(heads)                                                                                       \
    X(predict)                                                                                     \
    X(generate)                                                                                    \
    X(lens)                                                                                        \
    X(ablate)                                                                                      \
    X(patch)                                                                                       \
    X(export)                                                                                      \
    X(render)                                                                                      \
    X(bench)                                                                                       \
    /* the last row */

#define CLI_DECLARE(name)                                                                          \
    extern const struct cli_command cli_##name;                                                    \
    int cmd_##name(int argc, char **argv);
CLI_COMMANDS(CLI_DECLARE)
#undef CLI_DECLARE

/* A scene ready to show: loaded (or the built-in default), resolved and computed once. */
struct cli_scene {
    const char *name; /* the path, or "default scene" */
    char path[4096];  /* the file found for the path given; a model's folder */
    bool from_file;
    bool model;       /* a model (a folder, its weights), made a scene in memory */
    char saved[4096]; /* where --save-scene wrote it, or "" */
    struct attn_scene scene;
    struct attn_net net; /* every layer, computed */
};

/* The scene a command line names (common/datadir.h: a file, or a shipped scene's name) into out.
 * Returns CLI_OK, or CLI_INVALID after saying where it looked. */
int cli_find_scene(char *out, size_t size, const char *arg);

/* Loads the scene path names (NULL: the built-in default): a scene file (found with
 * cli_find_scene), or a model (a Hugging Face folder, its weights: scenefile.h's
 * attn_scenefile_find_model), then applies in (NULL: none): its sentence in place of the scene's,
 * fitted to the model's context, and the scene saved. Prints every problem as file:line:col.
 * Returns CLI_OK, CLI_INVALID, or CLI_USAGE (an input option that does not apply, said); on
 * failure nothing is left to free. */
int cli_scene_load(struct cli_scene *cs, const char *path, const struct cli_input *in);
/* Whether any input option was given (a command that reads no scene in that mode refuses). */
bool cli_input_given(const struct cli_input *in);
/* cli_scene_load, then attn_forward. */
int cli_scene_open(struct cli_scene *cs, const char *path, const struct cli_input *in);
/* cli_scene_open, lean: with attn_net_compute_lean, visit (may be NULL) called on each layer
 * as it is computed, for a command that reads each layer once (heads, export, predict). A
 * visit's error is printed as the compute's. lean false: cli_scene_open. */
int cli_scene_open_lean(struct cli_scene *cs, const char *path, const struct cli_input *in,
                        bool lean, attn_net_visit visit, void *ctx);
/* The compute of cli_scene_open_lean for a scene already in cs (cs->name set): on failure the
 * scene is freed. */
int cli_scene_compute(struct cli_scene *cs, bool lean, attn_net_visit visit, void *ctx);
/* A forward pass that made a value that is not a number (nan, inf) is said on stderr with its
 * place: "NAME: ... nan at layer 0, head 1, queries_rotated, row 2 (“cat”), column 5". A
 * command whose output is the stages themselves (print, export, render, diff) warns and goes on:
 * nan is the honest number there, as PyTorch would show it (refuse false: CLI_OK). One that
 * makes numbers of them (check, predict, lens, ablate, patch, heads) refuses: CLI_INVALID, and
 * prints nothing else. */
int cli_scene_finite(const struct cli_scene *cs, bool refuse);
/* Frees cs's scene and net. A cli_scene of {0}, or one whose load or open failed, holds none: a
 * command closes its scenes once, on its one way out. */
void cli_scene_close(struct cli_scene *cs);

/* "# tokens: Your journey ..." and a line break: the tokens as print and heads show them, each
 * escaped (common/utf8.h) so a token from a file cannot drive the terminal. */
void cli_print_tokens(FILE *out, const struct attn_model *m);
/* "# modified model: heads 8 → 4 (not the checkpoint as trained)" when s computes otherwise than
 * its checkpoint (attn_scene_model_changes), after "WHO: " when who is given; else nothing. The
 * commands whose numbers are the model's say it under their tokens. */
void cli_print_modified(FILE *out, const struct attn_scene *s, const char *who);

/* A scene of n tokens with learned d_in-wide embeddings, `heads` causal split heads: the
 * benchmarks' shapes. Returns 0, or -1 (out of memory) with s still safe to free. */
int bench_scene(struct attn_scene *s, int n, int d_in, int d_out, int heads, double dropout);
/* "blas: OpenBLAS 0.3.21, Haswell kernels, 2 threads": the first line of every bench report,
 * whose figures are that kernel's (the same machine is a third slower on another). */
void bench_print_blas(void);
/* OpenBLAS sgemm's GFLOP/s on a d x d x d product here, now: the median of repeat samples
 * (bench --tokens' figure, and the speed bench --ui's bounds divide by); -1 when out of memory. */
double bench_sgemm_gflops(int d, int repeat);
/* Parses a whole decimal integer in [lo, hi]. Returns 0, or -1. */
int cli_parse_int(const char *text, int lo, int hi, int *out);
/* Parses a decimal number in [lo, hi] (C locale, finite). Returns 0, or -1. */
int cli_parse_double(const char *text, double lo, double hi, double *out);
/* A numeric option of cmd, parsed into *out, or a usage error that names the range it takes,
 * so a refused value is never said to be what it is ("invalid --top '0' (a whole number from 1
 * to 1000)"; "invalid --temperature '-1' (a number above 0, at most 1.8e308)"). what: the
 * option as the user writes it ("--top", "layer"). Returns CLI_OK or CLI_USAGE. */
int cli_int_option(int *out, const char *cmd, const char *what, const char *text, int lo, int hi);
/* A number above 0 and at most hi; hi DBL_MAX: any finite one (a temperature). */
int cli_positive_option(double *out, const char *cmd, const char *what, const char *text,
                        double hi);
/* CLI_OK when the scene has a vocabulary model; else says why cmd cannot run and returns
 * CLI_INVALID. */
int cli_need_vocab(const struct cli_scene *cs, const char *cmd);
/* What ablate's and patch's loss scores at each position (engine/logits.h, attn_loss_targets)
 * into *scored (n ints, the caller frees it). answer: --answer's TOKEN[,TOKEN...], or NULL for
 * the model's own answers: each a token text that the scene's tokenizer makes one token, or #ID.
 * Returns CLI_OK; CLI_USAGE when answers do not apply (a next-token model, a text without
 * [MASK]) or do not read; CLI_INVALID on other failures; each after saying why. */
int cli_loss_targets(int **scored, const struct cli_scene *cs, const char *cmd, const char *answer);
/* "# scored: -ln p of ..." lines saying what the loss of scored (attn_loss_targets) measures,
 * for ablate and patch. */
void cli_print_scored(const struct cli_scene *cs, const int *scored);
/* Whether the terminal's locale shows block characters (LC_CTYPE only: numbers stay C). */
bool cli_utf8_output(void);
/* A bar of fraction (0..1) of width characters: eighth blocks, or '#' without UTF-8. */
void cli_print_bar(double fraction, int width, bool utf8);
/* A vocabulary token as 'label', padded with blanks to width characters. */
void cli_print_token(const struct attn_scene *s, int id, int width);
/* A scene's token (or any text from a file) escaped (common/utf8.h) to stdout, padded with
 * blanks to width characters of what is shown. */
void cli_print_text(const char *text, int width);

int cmd_bench_ui(const char *const *values, const char *const *pos, int n_pos,
                 const struct cli_input *in);

#endif
