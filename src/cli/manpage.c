/* manpage: attnscope(1) in roff, from the command table and the explorer's key table.
 *
 * The build runs `attnscope help --man attnscope` and installs the output, so the manual says
 * what --help says and the keys the help overlay shows: the three cannot drift apart.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/stage.h"
#include "explore/actions.h"
#include "scenefile/scenefile.h"

/* Text for a roff line: backslashes escaped, a leading dot or quote kept from being a
 * request, '-' as the minus of an option. */
static void roff_text(FILE *out, const char *s, size_t len)
{
    if (len && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\')
            fputs("\\e", out);
        else if (s[i] == '-')
            fputs("\\-", out);
        else
            fputc(s[i], out);
    }
}

/* The stage names, for "@STAGES@" in an option's help. */
static void roff_stages(FILE *out)
{
    for (int s = 0; s < STAGE_COUNT; s++) {
        if (s)
            fputs(", ", out);
        const char *name = attn_stage_name((enum attn_stage)s);
        roff_text(out, name, strlen(name));
    }
}

/* A help text: its '\n's become spaces (roff fills), "\n\n" a new paragraph, "@STAGES@" the
 * stage names. */
static void roff_paragraphs(FILE *out, const char *s)
{
    while (*s) {
        const char *stages = strstr(s, "@STAGES@");
        const char *nl = strchr(s, '\n');
        const char *end = s + strlen(s);
        if (nl && nl < end)
            end = nl;
        if (stages && stages < end)
            end = stages;
        if (end > s)
            roff_text(out, s, (size_t)(end - s));
        if (end == stages) {
            roff_stages(out);
            s = end + strlen("@STAGES@");
            continue;
        }
        if (*end == '\n') {
            fputs(end[1] == '\n' ? "\n.PP\n" : "\n", out);
            s = end + (end[1] == '\n' ? 2 : 1);
            continue;
        }
        s = end;
    }
    fputs("\n", out);
}

static void roff_usage(FILE *out, const struct cli_command *cmd)
{
    const char *u = cmd->usage;
    do {
        const char *nl = strchr(u, '\n');
        size_t len = nl ? (size_t)(nl - u) : strlen(u);
        if (*u == ' ') { /* continues the form before */
            fputs("    ", out);
            roff_text(out, u, len);
            fputs("\n", out);
            u = nl ? nl + 1 : NULL;
            continue;
        }
        fputs("\\fBattnscope\\fR", out);
        if (cmd->name)
            fprintf(out, " \\fB%s\\fR", cmd->name);
        if (len) {
            fputs(" ", out);
            roff_text(out, u, len);
        }
        fputs("\n", out);
        u = nl ? nl + 1 : NULL;
    } while (u);
}

static void roff_option(FILE *out, const struct cli_opt *o)
{
    fputs(".TP\n", out);
    if (o->short_name)
        fprintf(out, "\\fB\\-%c\\fR, ", o->short_name);
    fprintf(out, "\\fB\\-\\-");
    roff_text(out, o->long_name, strlen(o->long_name));
    fputs("\\fR", out);
    if (o->arg) {
        fputs(" \\fI", out);
        roff_text(out, o->arg, strlen(o->arg));
        fputs("\\fR", out);
    }
    fputs("\n", out);
    roff_paragraphs(out, o->help);
}

/* What the program reads from its environment, and the files it reads. */
static const struct {
    const char *name, *what;
} environment[] = {
    {"ATTNSCOPE_DATA_DIR",
     "The data folder: configs/, scenes/ (with lessons/) and models/. Default: the installed "
     "share/attnscope. scripts/run points it at the source tree, which has the same layout."},
    {"ATTNSCOPE_CONFIGS_DIR",
     "The folder of the shipped keys.yaml and colors.yaml, instead of the data folder's configs/."},
    {"ATTNSCOPE_MEMORY_MIB",
     "The memory a scene may take, in MiB: scenes that need more are refused before anything is "
     "allocated. Default: 3/4 of the machine's memory, at most 8 GiB."},
    {"ATTNSCOPE_STAGE_MIB",
     "The memory the explorer's n x n stages may take, in MiB (default 32; 0: every layer "
     "keeps its own). Past it the explorer keeps the stages of a few layers, every layer's "
     "keys, values and output, and computes a layer again, with the same bits, when it is "
     "shown."},
    {"OPENBLAS_NUM_THREADS", "The threads of the matrix products (default: one per core)."},
    {"NO_COLOR", "When set and not empty, the explorer draws without colour."},
    {"XDG_CONFIG_HOME", "Where the user's keys.yaml and colors.yaml are (default ~/.config)."},
};

static const struct {
    const char *path, *what;
} files[] = {
    {"$XDG_CONFIG_HOME/attnscope/keys.yaml",
     "The user's keys: any action rebound, checked with attnscope check."},
    {"$XDG_CONFIG_HOME/attnscope/colors.yaml", "The user's colours and colour scales."},
    {"DATA/configs/keys.yaml, DATA/configs/colors.yaml", "The shipped defaults."},
    {"DATA/scenes/*.yaml, DATA/scenes/lessons/*.yaml",
     "The shipped scenes and lessons, opened by name (attnscope 10-mha)."},
    {"DATA/models/", "The shipped trained models the scenes read."},
};

void cli_print_man(FILE *out, const struct cli_command *const *cmds, int n)
{
    fputs(".\\\" Generated by `attnscope help --man attnscope`; edit src/cli, not this file.\n"
          ".TH ATTNSCOPE 1 \"\" \"attnscope " ATTNSCOPE_VERSION "\" \"User Commands\"\n"
          ".SH NAME\n"
          "attnscope \\- a terminal explorer for the attention mechanism of transformers\n"
          ".SH SYNOPSIS\n"
          ".nf\n",
          out);
    for (int i = 0; i < n; i++)
        roff_usage(out, cmds[i]);
    fputs(
        ".fi\n"
        ".SH DESCRIPTION\n"
        "attnscope computes the attention of a transformer, head by head and stage by stage, "
        "with every number equal to PyTorch's, and lets you explore it in the terminal: "
        "chapter 3 of Raschka's \\fIBuild a Large Language Model From Scratch\\fR with its "
        "printed tensors, and real GPT-2 checkpoints. A scene file (YAML, see "
        "\\fBattnscope-scene\\fR(5)) says what to compute.\n"
        ".PP\n"
        "\\fISCENE\\fR is a scene file, or the name of a shipped scene (\\fB10-mha\\fR, "
        "\\fBlessons/3-causal-mask\\fR): it is looked up in the current folder, then its "
        "scenes/, then the data folder's scenes/. Without \\fISCENE\\fR, the built-in scene: "
        "\"Your journey starts with one step\" through the book's MultiHeadAttention.\n"
        ".PP\n"
        "\\fISCENE\\fR may also be a model: a Hugging Face folder (config.json, model.safetensors "
        "or model.safetensors.index.json with its shards, and tokenizer.json, vocab.json with "
        "merges.txt, or Marian's source.spm, target.spm and vocab.json), or its model.safetensors. "
        "It is read as the scene one would write beside it "
        "(title, text, tokenizer and model), on the sentence \\-\\-text gives (default: "
        "\"" ATTN_MODEL_DEFAULT_TEXT
        "\"): \\fBattnscope predict ~/models/SmolLM2\\-135M \\-\\-text "
        "\"The capital of France is\"\\fR.\n"
        ".SH COMMANDS\n",
        out);
    for (int i = 0; i < n; i++) {
        const struct cli_command *c = cmds[i];
        fputs(".SS ", out);
        fputs(c->name ? c->name : "attnscope [SCENE]", out);
        fputs("\n.nf\n", out);
        roff_usage(out, c);
        fputs(".fi\n.PP\n", out);
        roff_paragraphs(out, c->description);
        for (int o = 0; o < c->n_opts; o++)
            roff_option(out, &c->opts[o]);
        if (c->input)
            fputs(".PP\nAnd the input options (INPUT OPTIONS).\n", out);
    }
    fputs(".SH INPUT OPTIONS\n"
          "Every command that reads a scene takes these. A sentence longer than the model reads "
          "(a learned position table: GPT-2's n_positions, BERT's max_position_embeddings) is "
          "refused, saying the limit, unless \\-\\-truncate or \\-\\-window fits it; a RoPE model "
          "reads "
          "past the positions it was trained on, with a warning.\n",
          out);
    for (int o = 0; o < CLI_IN_COUNT; o++)
        roff_option(out, &cli_input_opts[o]);
    fputs(".SH EXPLORER KEYS\n"
          "Every action can be bound to other keys in keys.yaml. In a lesson, the lesson's keys "
          "come first.\n",
          out);
    static const char *const groups[] = {"move", "view", "edit", "file", "lesson", "other"};
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        fprintf(out, ".SS %s\n", groups[g]);
        for (int a = 0; a < ACTION_COUNT; a++) {
            if (strcmp(action_table[a].group, groups[g]) != 0)
                continue;
            fputs(".TP\n\\fB", out);
            roff_text(out, action_table[a].default_keys, strlen(action_table[a].default_keys));
            fputs("\\fR (", out);
            roff_text(out, action_table[a].name, strlen(action_table[a].name));
            fputs(")\n", out);
            roff_paragraphs(out, action_table[a].help);
        }
    }
    fputs(".SH EXIT STATUS\n"
          ".TP\n0\nSuccess.\n"
          ".TP\n1\nAn invalid scene, input or checkpoint, or an I/O error; the message names the "
          "file, line and column.\n"
          ".TP\n2\nWrong usage: an unknown command or option, a missing value.\n"
          ".SH ENVIRONMENT\n",
          out);
    for (size_t i = 0; i < sizeof(environment) / sizeof(environment[0]); i++) {
        fprintf(out, ".TP\n.B %s\n", environment[i].name);
        roff_paragraphs(out, environment[i].what);
    }
    fputs(".SH FILES\nDATA is the data folder (see ATTNSCOPE_DATA_DIR).\n", out);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        fputs(".TP\n.I ", out);
        roff_text(out, files[i].path, strlen(files[i].path));
        fputs("\n", out);
        roff_paragraphs(out, files[i].what);
    }
    /* Every command's examples, in the command table's order: the same lines --help shows. */
    fputs(".SH EXAMPLES\n", out);
    for (int i = 0; i < n; i++)
        for (const struct cli_example *e = cmds[i]->examples; e && e->line; e++) {
            fputs(".TP\n\\fB", out);
            roff_text(out, e->line, strlen(e->line));
            fputs("\\fR\n", out);
            roff_paragraphs(out, e->what);
        }
    fputs(".SH SEE ALSO\n\\fBattnscope-scene\\fR(5)\n", out);
}
