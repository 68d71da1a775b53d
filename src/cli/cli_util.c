/* cli_util: option parsing, the help text and scene loading shared by the commands. */
#include "cli/cli.h"

#include "common/cnum.h"
#include "common/progress.h"

#include <errno.h>
#include <float.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cnum.h"
#include "common/datadir.h"
#include "common/diag.h"
#include "common/utf8.h"
#include "engine/logits.h"
#include "scenefile/scenefile.h"

/* What every help text ends with; the built-in scene only where SCENE may be left out. */
static const char scene_note[] =
    "SCENE is a scene file, or the name of a shipped scene: 10-mha, lessons/3-causal-mask\n"
    "(looked up in the current folder, then its scenes/, then attnscope's data folder); or a\n"
    "model: a Hugging Face folder (config.json, model.safetensors or its index, and\n"
    "tokenizer.json, vocab.json with merges.txt, or Marian's source.spm, target.spm and\n"
    "vocab.json), or its model.safetensors. A model reads --text (default:\n"
    "\"" ATTN_MODEL_DEFAULT_TEXT "\").\n";
static const char default_note[] =
    "Without SCENE: the built-in scene, \"Your journey starts with one step\" through the\n"
    "book's MultiHeadAttention (seed 123, 2 heads).\n";
static const char exit_note[] = "exit status: 0 ok, 1 invalid scene or I/O error, 2 wrong usage\n";

/* "attnscope NAME FORM" for each '\n'-separated form of usage, the first after lead; a form
 * that starts with a space continues the one before it. */
static void print_usage_lines(FILE *out, const struct cli_command *cmd, const char *lead)
{
    const char *u = cmd->usage;
    int indent = (int)strlen(lead) + (int)strlen(" attnscope") +
                 (cmd->name ? 1 + (int)strlen(cmd->name) : 0);
    bool first = true;
    do {
        const char *nl = strchr(u, '\n');
        int len = nl ? (int)(nl - u) : (int)strlen(u);
        if (*u == ' ')
            fprintf(out, "%*s%.*s\n", indent, "", len, u);
        else
            fprintf(out, "%s attnscope%s%s%s%.*s\n", first ? lead : "      ", cmd->name ? " " : "",
                    cmd->name ? cmd->name : "", len ? " " : "", len, u);
        first = false;
        u = nl ? nl + 1 : NULL;
    } while (u);
}

/* An option's help with "@STAGES@" replaced by the stage names, wrapped with '\n' so that no
 * line passes width columns. */
static void expand_help(char *buf, size_t size, const char *help, int width)
{
    const char *at = strstr(help, "@STAGES@");
    if (!at) {
        snprintf(buf, size, "%s", help);
        return;
    }
    size_t used = (size_t)snprintf(buf, size, "%.*s", (int)(at - help), help);
    const char *line = strrchr(buf, '\n');
    int col = (int)(used - (line ? (size_t)(line - buf) + 1 : 0));
    for (int s = 0; s < STAGE_COUNT && used < size; s++) {
        const char *name = attn_stage_name((enum attn_stage)s);
        int len = (int)strlen(name) + (s + 1 < STAGE_COUNT ? 1 : 0); /* the comma */
        bool wrap = col + 1 + len > width;
        used += (size_t)snprintf(buf + used, size - used, "%s%s%s", s ? (wrap ? "\n" : " ") : "",
                                 name, s + 1 < STAGE_COUNT ? "," : "");
        col = wrap ? len : col + 1 + len;
    }
    if (used < size)
        snprintf(buf + used, size - used, "%s", at + strlen("@STAGES@"));
}

/* "-o, --output DIR" */
static int opt_label(char *buf, size_t size, const struct cli_opt *o)
{
    char shorts[8] = "    ";
    if (o->short_name)
        snprintf(shorts, sizeof(shorts), "-%c, ", o->short_name);
    return snprintf(buf, size, "%s--%s%s%s", shorts, o->long_name, o->arg ? " " : "",
                    o->arg ? o->arg : "");
}

void cli_print_overview(FILE *out, const struct cli_command *const *cmds, int n)
{
    fputs("usage: attnscope [SCENE] [--text TEXT]  open the explorer on SCENE\n"
          "       attnscope COMMAND [ARGS...]      run a command\n"
          "       attnscope help [COMMAND]         a command's own help\n"
          "       attnscope --version\n"
          "\n"
          "Explore the attention mechanism of transformers, tensor by tensor.\n"
          "\n"
          "commands:\n",
          out);
    for (int i = 0; i < n; i++)
        if (cmds[i]->name)
            fprintf(out, "  %-8s %s\n", cmds[i]->name, cmds[i]->summary);
    fputs("\n", out);
    fputs(scene_note, out);
    fputs(default_note, out);
    fputs("'attnscope COMMAND --help' lists a command's options; 'man attnscope' has them all.\n",
          out);
    fputs(exit_note, out);
}

/* Each option with its help beside it, wrapped: "  -o, --output DIR      what it does". */
static void print_options(FILE *out, const struct cli_opt *opts, int n, bool help)
{
    for (int i = 0; i < n + (help ? 1 : 0); i++) {
        static const struct cli_opt help_opt = {"help", 'h', NULL, "show this help"};
        const struct cli_opt *o = i < n ? &opts[i] : &help_opt;
        char label[64];
        int len = opt_label(label, sizeof(label), o);
        /* The help text's lines, the first beside the label (or under it when too long). */
        char text[2048];
        expand_help(text, sizeof(text), o->help, 80 - 2 - 22 - 2);
        const char *h = text;
        fprintf(out, "  %s", label);
        if (len > 22)
            fprintf(out, "\n%*s", 2 + 22, "");
        else
            fprintf(out, "%*s", 22 - len, "");
        for (;;) {
            const char *nl = strchr(h, '\n');
            fprintf(out, "  %.*s\n", nl ? (int)(nl - h) : (int)strlen(h), h);
            if (!nl)
                break;
            h = nl + 1;
            fprintf(out, "%*s", 2 + 22, "");
        }
    }
}

void cli_print_command_help(FILE *out, const struct cli_command *cmd)
{
    print_usage_lines(out, cmd, "usage:");
    fprintf(out, "\n%s\n\noptions:\n", cmd->description);
    print_options(out, cmd->opts, cmd->n_opts, true);
    if (cmd->input) {
        fputs("\ninput options (SCENE's sentence, and the scene saved):\n", out);
        print_options(out, cli_input_opts, CLI_IN_COUNT, false);
    }
    fputs("\n", out);
    if (cmd->examples && cmd->examples[0].line) {
        fputs("examples:\n", out);
        for (const struct cli_example *e = cmd->examples; e->line; e++)
            fprintf(out, "  %s\n      %s\n", e->line, e->what);
        fputs("\n", out);
    }
    if (strstr(cmd->usage, "SCENE")) {
        fputs(scene_note, out);
        /* "SCENE ..." first: the command needs one (a checkpoint: the book's scene will not do) */
        if (strncmp(cmd->usage, "SCENE ", 6) != 0 && strncmp(cmd->usage, "SCENE...", 8) != 0)
            fputs(default_note, out);
    }
    fputs(exit_note, out);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    fprintf(stderr, "attnscope%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'attnscope%s%s --help'.\n", cmd ? " " : "", cmd ? cmd : "");
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

/* The input options: what they do is cli_input.c's. */
const struct cli_opt cli_input_opts[CLI_IN_COUNT] = {
    [CLI_IN_TEXT] = {"text", 0, "TEXT",
                     "the sentence, in place of SCENE's; given twice, a\n"
                     "pair (BERT's two sentences), or an encoder-decoder's\n"
                     "source and target (once: its source, to translate)"},
    [CLI_IN_TEXT_FILE] = {"text-file", 0, "FILE",
                          "the sentence from FILE (- is standard input), its\n"
                          "last line end dropped"},
    [CLI_IN_TOKENIZER] = {"tokenizer", 0, "PATH",
                          "a model's tokenizer when its folder has none: a\n"
                          "tokenizer.json, a vocab.json with merges.txt\n"
                          "beside it, or a folder of either or of Marian's\n"
                          "source.spm, target.spm and vocab.json"},
    [CLI_IN_TRUNCATE] = {"truncate", 0, "end|start",
                         "a text longer than the model reads, cut to fit in\n"
                         "whole words: end cuts its end off (keeps the first\n"
                         "tokens), start its start (keeps the last); without\n"
                         "it, such a text is refused"},
    [CLI_IN_WINDOW] = {"window", 0, "START:END",
                       "only the whole words in tokens START to END-1 of\n"
                       "the text"},
    [CLI_IN_SAVE_SCENE] = {"save-scene", 0, "FILE",
                           "write the scene this run made (SCENE with its\n"
                           "sentence) to FILE, to reopen and share"},
};

/* --truncate, --window and the sentences, checked once all are read. */
static int check_input(const struct cli_command *cmd, struct cli_input *in,
                       const char *const *given)
{
    const char *name = cmd->name;
    const char *t = given[CLI_IN_TRUNCATE], *w = given[CLI_IN_WINDOW];
    if (t && strcmp(t, "start") != 0 && strcmp(t, "end") != 0)
        return cli_usage_error(name,
                               "invalid --truncate '%s' (end: cut the end off, keeping the first "
                               "tokens; start: cut the start off, keeping the last)",
                               t);
    in->truncate = t;
    if (w) {
        const char *colon = strchr(w, ':');
        char a[32];
        if (!colon || (size_t)(colon - w) >= sizeof(a) ||
            (snprintf(a, sizeof(a), "%.*s", (int)(colon - w), w),
             cli_parse_int(a, 0, INT_MAX - 1, &in->window[0]) != 0) ||
            cli_parse_int(colon + 1, 1, INT_MAX, &in->window[1]) != 0 ||
            in->window[1] <= in->window[0])
            return cli_usage_error(name,
                                   "invalid --window '%s' (START:END, the tokens START to END-1 "
                                   "of the text, 0 <= START < END)",
                                   w);
    }
    if (t && w)
        return cli_usage_error(name, "--truncate or --window, not both");
    if ((t || w) && in->n_sentences == 2)
        return cli_usage_error(name, "--%s cuts one sentence; shorten a pair's sentences yourself",
                               t ? "truncate" : "window");
    int stdin_reads = 0;
    for (int i = 0; i < in->n_sentences; i++)
        stdin_reads += in->from_file[i] && strcmp(in->sentence[i], "-") == 0;
    if (stdin_reads > 1)
        return cli_usage_error(name, "standard input (--text-file -) holds one sentence");
    in->tokenizer = given[CLI_IN_TOKENIZER];
    in->save_scene = given[CLI_IN_SAVE_SCENE];
    return CLI_CONTINUE;
}

int cli_begin(const struct cli_command *cmd, int argc, char **argv, const char **values,
              const char **pos, int max_pos, int *n_pos)
{
    return cli_begin_input(cmd, argc, argv, values, pos, max_pos, n_pos, NULL);
}

int cli_begin_input(const struct cli_command *cmd, int argc, char **argv, const char **values,
                    const char **pos, int max_pos, int *n_pos, struct cli_input *in)
{
    const char *name = cmd->name;
    bool options_done = false, help = false;
    /* A command takes the input options when it reads them: its table says, its caller keeps. */
    if (cmd->input != (in != NULL))
        abort();
    const char *given[CLI_IN_COUNT] = {NULL};
    if (in)
        *in = (struct cli_input){.window = {-1, -1}};
    *n_pos = 0;
    for (int i = 0; i < cmd->n_opts; i++)
        values[i] = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == '\0') {
            if (*n_pos >= max_pos)
                return cli_usage_error(name, "unexpected argument '%s'", a);
            pos[(*n_pos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help = true;
            continue;
        }
        const struct cli_opt *o;
        const char *inline_value = NULL;
        if (a[1] == '-') {
            const char *long_name = a + 2;
            const char *eq = strchr(long_name, '=');
            size_t len = eq ? (size_t)(eq - long_name) : strlen(long_name);
            o = find_long(cmd->opts, cmd->n_opts, long_name, len);
            if (!o && in)
                o = find_long(cli_input_opts, CLI_IN_COUNT, long_name, len);
            if (!o)
                return cli_usage_error(name, "unknown option '%.*s'", (int)(len + 2), a);
            if (eq && !o->arg)
                return cli_usage_error(name, "option '--%s' takes no value", o->long_name);
            inline_value = eq ? eq + 1 : NULL;
        } else {
            o = find_short(cmd->opts, cmd->n_opts, a[1]);
            if (!o)
                return cli_usage_error(name, "unknown option '-%c'", a[1]);
            if (a[2] != '\0') {
                if (!o->arg)
                    return cli_usage_error(name, "unknown option '%s'", a);
                inline_value = a + 2;
            }
        }
        bool input = o >= cli_input_opts && o < cli_input_opts + CLI_IN_COUNT;
        const char **value = input ? &given[o - cli_input_opts] : &values[o - cmd->opts];
        if (!o->arg)
            *value = "";
        else if (inline_value)
            *value = inline_value;
        else if (i + 1 < argc)
            *value = argv[++i];
        else
            return cli_usage_error(name, "option '--%s' needs a value", o->long_name);
        /* the sentences, in their order: one, or a pair */
        int k = input ? (int)(o - cli_input_opts) : -1;
        if (k == CLI_IN_TEXT || k == CLI_IN_TEXT_FILE) {
            if (in->n_sentences == 2)
                return cli_usage_error(name, "at most two sentences (--text A --text B: a pair, "
                                             "as BERT reads)");
            in->from_file[in->n_sentences] = k == CLI_IN_TEXT_FILE;
            in->sentence[in->n_sentences++] = *value;
        }
    }
    if (help) {
        cli_print_command_help(stdout, cmd);
        return CLI_OK;
    }
    return in ? check_input(cmd, in, given) : CLI_CONTINUE;
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
    attn_diag_print(stderr, d, source, len);
}

int cli_find_scene(char *out, size_t size, const char *arg)
{
    if (attn_data_find_scene(out, size, arg) == 0)
        return CLI_OK;
    if (strchr(out, ' ')) /* a name looked up in the scene folders */
        fprintf(stderr, "%s: no such scene file (looked in %s)\n", arg, out);
    else
        fprintf(stderr, "%s: cannot open: %s\n", arg, strerror(ENOENT));
    return CLI_INVALID;
}

int cli_scene_compute(struct cli_scene *cs, bool lean, attn_net_visit visit, void *ctx)
{
    struct diag err;
    attn_diag_clear(&err);
    /* A compute estimated past ATTN_LONG_SECONDS is announced before it starts: how much work
       and how long here, and that Ctrl-C stops it (nothing is written while it runs). */
    double seconds = attn_net_estimate_seconds(&cs->scene);
    double gflop = attn_scene_flops(&cs->scene) / 1e9;
    if (seconds > ATTN_LONG_SECONDS)
        attn_cnum_fprintf(stderr,
                          "attnscope: %s: about %.*f GFLOP to compute, about %.0f s here (Ctrl-C "
                          "stops)\n",
                          cs->name, gflop < 10 ? 1 : 0, gflop, seconds);
    /* A big scene's first compute takes seconds: a bar on a terminal, a line in a log. */
    struct progress p;
    attn_progress_begin(&p, stderr, "computing", "heads");
    cs->net.progress = (struct progress_sink){attn_progress_tick, &p, &attn_progress_interrupted};
    int rc = lean ? attn_net_compute_lean(&cs->net, &cs->scene, visit, ctx, &err)
                  : attn_net_compute(&cs->net, &cs->scene, &err);
    attn_progress_end(&p, rc == 0);
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

int cli_scene_finite(const struct cli_scene *cs, bool refuse)
{
    char where[200];
    if (!attn_net_nonfinite_text(where, sizeof(where), &cs->net))
        return CLI_OK;
    attn_utf8_fputs_escaped(cs->name, stderr, 0);
    fprintf(stderr, "%s: the forward pass makes a value that is not a number: %s%s\n",
            refuse ? "" : ": warning", where, refuse ? "" : " (the stages hold it as computed)");
    return refuse ? CLI_INVALID : CLI_OK;
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

void cli_print_tokens(FILE *out, const struct attn_model *m)
{
    fputs("# tokens:", out);
    for (int i = 0; i < m->n; i++) {
        fputc(' ', out);
        attn_utf8_fputs_escaped(m->tokens[i], out, 0);
    }
    fputc('\n', out);
}

void cli_print_modified(FILE *out, const struct attn_scene *s, const char *who)
{
    char changes[400];
    if (attn_scene_model_changes(changes, sizeof(changes), s) > 0)
        fprintf(out, "# %s%smodified model: %s (not the checkpoint as trained)\n", who ? who : "",
                who ? ": " : "", changes);
}

int cli_parse_double(const char *text, double lo, double hi, double *out)
{
    double v;
    if (attn_cnum_parse_double(text, false, &v) != CNUM_OK || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int cli_int_option(int *out, const char *cmd, const char *what, const char *text, int lo, int hi)
{
    if (cli_parse_int(text, lo, hi, out) != 0)
        return cli_usage_error(cmd, "invalid %s '%s' (a whole number from %d to %d)", what, text,
                               lo, hi);
    return CLI_OK;
}

int cli_positive_option(double *out, const char *cmd, const char *what, const char *text, double hi)
{
    double v;
    if (cli_parse_double(text, 0, hi, &v) != 0 || !(v > 0))
        return hi >= DBL_MAX
                   ? cli_usage_error(cmd, "invalid %s '%s' (a number above 0, at most 1.8e308)",
                                     what, text)
                   : cli_usage_error(cmd, "invalid %s '%s' (a number above 0, at most %g)", what,
                                     text, hi);
    *out = v;
    return CLI_OK;
}

int cli_need_vocab(const struct cli_scene *cs, const char *cmd)
{
    if (attn_net_has_vocab(&cs->net))
        return CLI_OK;
    fprintf(stderr, "%s: attnscope %s needs a vocabulary model: %s\n", cs->name, cmd,
            attn_scene_why_no_vocab(&cs->scene));
    return CLI_INVALID;
}

/* One --answer token: #ID or a text of one token. Returns CLI_OK or CLI_USAGE. */
static int answer_id(int *id, const struct cli_scene *cs, const char *cmd, const char *text)
{
    int vocab = cs->net.model[cs->net.layers - 1].vocab;
    if (text[0] == '#') {
        if (cli_parse_int(text + 1, 0, vocab - 1, id) != 0)
            return cli_usage_error(cmd, "--answer %s: an id is #0 to #%d", text, vocab - 1);
        return CLI_OK;
    }
    struct diag err;
    attn_diag_clear(&err);
    if (attn_scene_single_token(id, &cs->scene, text, &err) != 0)
        return cli_usage_error(cmd, "--answer %s: %s", text, err.msg);
    return CLI_OK;
}

int cli_loss_targets(int **scored, const struct cli_scene *cs, const char *cmd, const char *answer)
{
    const struct attn_net *net = &cs->net;
    const struct attn_model *last = &net->model[net->layers - 1];
    int n = net->model[0].n, masks = attn_net_masks(net, NULL);
    *scored = NULL;
    if (answer && !last->masked_lm)
        return cli_usage_error(cmd,
                               "--answer names what fills a [MASK] of a masked language model "
                               "(BERT); %s predicts the next token, which its text gives",
                               cs->name);
    if (answer && masks == 0)
        return cli_usage_error(cmd,
                               "--answer: %s has no [MASK] to answer (without one, each position "
                               "scores its own token)",
                               cs->name);
    int answers[SCENE_MAX_TOKENS], count = 0;
    char text[1024];
    if (answer && strlen(answer) >= sizeof(text))
        return cli_usage_error(cmd, "--answer is too long");
    if (answer) {
        snprintf(text, sizeof(text), "%s", answer);
        for (char *word = text, *comma; word; word = comma ? comma + 1 : NULL) {
            if ((comma = strchr(word, ',')))
                *comma = '\0';
            if (count == SCENE_MAX_TOKENS)
                return cli_usage_error(cmd, "--answer: too many answers");
            int rc = answer_id(&answers[count++], cs, cmd, word);
            if (rc != CLI_OK)
                return rc;
        }
        if (count != 1 && count != masks)
            return cli_usage_error(cmd,
                                   "--answer: %d answers for %d [MASK]s (one for all of them, or "
                                   "one each, in order)",
                                   count, masks);
    }
    int *out = malloc((size_t)n * sizeof(int));
    struct diag err;
    attn_diag_clear(&err);
    if (!out || attn_loss_targets(out, net, answer ? answers : NULL, count, &err) != 0) {
        fprintf(stderr, "%s: %s\n", cs->name, out ? err.msg : "out of memory");
        free(out);
        return CLI_INVALID;
    }
    *scored = out;
    return CLI_OK;
}

void cli_print_scored(const struct cli_scene *cs, const int *scored)
{
    const struct attn_net *net = &cs->net;
    const struct attn_model *m = &net->model[0];
    if (!net->model[net->layers - 1].masked_lm) {
        printf("# the loss: -ln p of each position's next token\n");
        return;
    }
    if (attn_net_masks(net, NULL) == 0) {
        printf("# the loss: -ln p of each position's own token (the text has no [MASK])\n");
        return;
    }
    printf("# the loss: -ln p of the answer at each [MASK]:");
    for (int i = 0, j = 0; i < m->n; i++)
        if (scored[i] >= 0) {
            printf("%s %d ", j++ ? "," : "", i);
            cli_print_token(&cs->scene, scored[i], 0);
        }
    printf("\n");
}

bool cli_utf8_output(void)
{
    const char *was = setlocale(LC_CTYPE, NULL);
    char saved[64];
    snprintf(saved, sizeof(saved), "%s", was ? was : "C");
    setlocale(LC_CTYPE, "");
    const char *cs = nl_langinfo(CODESET);
    bool utf8 = cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
    setlocale(LC_CTYPE, saved);
    return utf8;
}

void cli_print_bar(double fraction, int width, bool utf8)
{
    static const char *const eighths[8] = {"",       "\u258f", "\u258e", "\u258d",
                                           "\u258c", "\u258b", "\u258a", "\u2589"};
    if (!(fraction > 0))
        return;
    if (fraction > 1)
        fraction = 1;
    int units = (int)(fraction * width * 8 + 0.5);
    for (int i = 0; i < units / 8; i++)
        fputs(utf8 ? "\u2588" : "#", stdout);
    if (utf8)
        fputs(eighths[units % 8], stdout);
}

void cli_print_token(const struct attn_scene *s, int id, int width)
{
    char label[4 * SCENE_MAX_TOKEN_BYTES + 16], shown[4 * sizeof(label)];
    attn_scene_token_label(label, sizeof(label), s, id);
    /* a token's own bytes may be controls: escaped, as everywhere a human reads (common/utf8) */
    attn_utf8_escape(shown, sizeof(shown), label, strlen(label), 0);
    printf("'%s'", shown);
    for (int pad = width - attn_utf8_length(shown) - 2; pad > 0; pad--)
        putchar(' ');
}

void cli_print_text(const char *text, int width)
{
    int shown = 0;
    for (const char *p = text; *p;) {
        char esc[UTF8_ESCAPE_MAX];
        int len = attn_utf8_escape_char(p, esc, 0);
        if (esc[0]) {
            fputs(esc, stdout);
            shown += attn_utf8_length(esc);
        } else {
            fwrite(p, 1, (size_t)len, stdout);
            shown++;
        }
        p += len;
    }
    for (; shown < width; shown++)
        putchar(' ');
}
