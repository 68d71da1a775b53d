/* generate: a model writing, a token at a time (engine/generate.h).
 *
 *   # generating from models/english: 4 tokens, greedy, at most 40 new (context 128)
 *     step    pos     id  token                prob   rank
 *        1      4    345  ' there'           0.4123      1
 *   ...
 *   # stopped at --max-new 40: 40 tokens in 0.31 s, 7.8 ms a token (128 tokens/s)
 *   Once upon a time there ...
 *
 * Each line comes as its token is chosen. --csv streams "step,position,id,token,prob,rank"
 * instead, and says why it stopped on stderr.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "common/progress.h"
#include "common/utf8.h"
#include "engine/generate.h"
#include "export/export.h"

#define GENERATE_TOKEN_WIDTH 18 /* a token's column, its quotes included */

enum { O_MAX_NEW, O_GREEDY, O_TEMPERATURE, O_TOP_K, O_TOP_P, O_SEED, O_STOP, O_CSV, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_MAX_NEW] = {"max-new", 'n', "N",
                   "at most N new tokens (default: until the end-of-text token,\n--stop or the "
                   "model's context)"},
    [O_GREEDY] = {"greedy", 'g', NULL, "the most likely token each step (the default)"},
    [O_TEMPERATURE] = {"temperature", 't', "T", "sample from softmax(logits / T)"},
    [O_TOP_K] = {"top-k", 'k', "K", "sample from the K most likely tokens only"},
    [O_TOP_P] =
        {"top-p", 'p', "P",
         "sample from the fewest most likely tokens whose\nprobability reaches P, in (0, 1]"},
    [O_SEED] = {"seed", 's', "S",
                "the draws' seed (default: the scene's, 123), so a\nsampled run "
                "is the same each time"},
    [O_STOP] = {"stop", 'x', "TEXT", "stop once the new text holds TEXT"},
    [O_CSV] = {"csv", 'c', NULL, "as CSV: step,position,id,token,prob,rank"},
};

static const struct cli_example examples[] = {
    {"attnscope generate 30-english-journey --max-new 40",
     "the shipped English model's greedy continuation of the scene's text"},
    {"attnscope generate 30-english-journey -n 30 -t 0.8 -p 0.9 --seed 1",
     "sampled, the same tokens for the same seed"},
    {NULL, NULL},
};

const struct cli_command cli_generate = {
    "generate",
    cmd_generate,
    "PATH [--text T] [--max-new N] [--greedy | --temperature T --top-k K --top-p P]\n"
    "[--seed S] [--stop TEXT] [--csv]",
    "a model writing on from a text, a token at a time",
    "Generate tokens after the scene's text (or --text), one at a time, each line as its token\n"
    "is chosen: its position, id, probability and rank. Greedy takes the most likely token;\n"
    "--temperature, --top-k and --top-p sample, from the seed's draws. It stops at the model's\n"
    "end-of-text token (config.json's eos_token_id), at --stop, at --max-new or at the\n"
    "model's context, and says which, with the tokens a second.\n\n"
    "Each step computes the new token's row of every layer only, reading the keys and values\n"
    "of the rows before it (the KV cache): a step costs a row, not a forward pass.",
    opts,
    O_COUNT,
    examples,
    true,
};

/* The options that shape the draws, checked. */
static int parse_sampling(struct attn_sampling *sp, const char *const *val)
{
    *sp = (struct attn_sampling){.greedy = true, .temperature = 1.0, .top_k = 0, .top_p = 1.0};
    bool sampled = val[O_TEMPERATURE] || val[O_TOP_K] || val[O_TOP_P];
    if (sampled && val[O_GREEDY])
        return cli_usage_error("generate", "--greedy takes the most likely token: it cannot "
                                           "go with --temperature, --top-k or --top-p");
    sp->greedy = !sampled;
    if (val[O_TEMPERATURE] && cli_positive_option(&sp->temperature, "generate", "--temperature",
                                                  val[O_TEMPERATURE], DBL_MAX) != CLI_OK)
        return CLI_USAGE;
    if (val[O_TOP_K] &&
        cli_int_option(&sp->top_k, "generate", "--top-k", val[O_TOP_K], 1, INT32_MAX) != CLI_OK)
        return CLI_USAGE;
    if (val[O_TOP_P] && (cli_parse_double(val[O_TOP_P], 0, 1, &sp->top_p) != 0 ||
                         !(sp->top_p > 0 && sp->top_p <= 1)))
        return cli_usage_error("generate", "invalid --top-p '%s' (a number above 0, at most 1)",
                               val[O_TOP_P]);
    return CLI_OK;
}

/* The text, laid out in its own lines, every other control character escaped. */
static void print_text(const char *text)
{
    attn_utf8_fputs_escaped(text, stdout, UTF8_ESC_KEEP_NEWLINE | UTF8_ESC_KEEP_TAB);
    putchar('\n');
}

int cmd_generate(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_generate, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n_pos == 0)
        return cli_usage_error("generate", "missing PATH (a model folder or a scene with one)");
    struct attn_sampling sp;
    int max_new = -1;
    uint64_t seed = 0;
    if ((rc = parse_sampling(&sp, val)) != CLI_OK)
        return rc;
    if (val[O_MAX_NEW] && cli_int_option(&max_new, "generate", "--max-new", val[O_MAX_NEW], 1,
                                         SCENE_MAX_TOKENS) != CLI_OK)
        return CLI_USAGE;
    bool negative = false;
    if (val[O_SEED] && (attn_cnum_parse_u64(val[O_SEED], &seed, &negative) != CNUM_OK || negative))
        return cli_usage_error("generate", "invalid --seed '%s' (a whole number from 0 to %llu)",
                               val[O_SEED], (unsigned long long)UINT64_MAX);
    if (val[O_STOP] && !val[O_STOP][0])
        return cli_usage_error("generate", "--stop needs a text to stop at");

    struct cli_scene cs;
    if ((rc = cli_scene_load(&cs, pos[0], &in)) != CLI_OK)
        return rc;
    struct attn_scene *s = &cs.scene;
    const char *ctx_what;
    int ctx = attn_scene_context(s, &ctx_what), n0 = s->n_tokens;
    /* what the model cannot do, before any compute */
    char why[DIAG_MSG_MAX];
    if (attn_scene_why_no_next(why, sizeof(why), s)) {
        fprintf(stderr, "%s: %s\n", cs.name, why);
        rc = CLI_USAGE;
    } else if (s->model.n_eos == 0 && max_new < 0) {
        fprintf(stderr,
                "%s: the model names no end-of-text token (eos_token_id in config.json): "
                "say how many tokens to generate with --max-new N\n",
                cs.name);
        rc = CLI_USAGE;
    } else if (n0 >= ctx) {
        fprintf(stderr,
                "%s: the text is %d tokens, and the model's context (%s) is %d: no room "
                "for a new one\n",
                cs.name, n0, ctx_what, ctx);
        rc = CLI_USAGE;
    } else if (max_new > ctx - n0) {
        fprintf(stderr,
                "%s: --max-new %d: the text is %d tokens and the model's context (%s) "
                "is %d, so at most %d new\n",
                cs.name, max_new, n0, ctx_what, ctx, ctx - n0);
        rc = CLI_USAGE;
    }
    if (rc != CLI_OK) {
        cli_scene_close(&cs);
        return rc;
    }
    if (!val[O_SEED])
        seed = s->seed;
    attn_generation_net(&cs.net);
    if ((rc = cli_scene_compute(&cs, false, NULL, NULL)) != CLI_OK ||
        (rc = cli_scene_finite(&cs, true)) != CLI_OK) {
        cli_scene_close(&cs);
        return rc;
    }

    struct attn_generation g;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_generation_begin(&g, &cs.net, s, &sp, seed, &err) != 0) {
        fprintf(stderr, "%s: %s\n", cs.name, err.msg);
        cli_scene_close(&cs);
        return CLI_INVALID;
    }
    bool csv = val[O_CSV] != NULL;
    int limit = max_new > 0 ? max_new : ctx - n0;
    FILE *info = csv ? stderr : stdout;
    fprintf(info, "# generating from %s: %d tokens, ", cs.name, n0);
    if (sp.greedy)
        fputs("greedy", info);
    else
        attn_cnum_fprintf(info, "sampled at temperature %g, top-k %d, top-p %g, seed %llu",
                          sp.temperature, sp.top_k, sp.top_p, (unsigned long long)seed);
    fprintf(info, ", at most %d new (context %d)\n", limit, ctx);
    if (!csv) {
        cli_print_tokens(stdout, &cs.net.model[0]);
        cli_print_modified(stdout, s, NULL);
        printf("  step    pos      id  token                prob   rank\n");
    }
    fflush(info);

    /* the new text, to find --stop in; from an empty text (a translation's), its first token
     * starts the text */
    size_t stop_len = val[O_STOP] ? strlen(val[O_STOP]) : 0, have = 0, cap = 0;
    bool from_empty = s->text && s->text[0] == '\0';
    char *made = NULL;
    why[0] = '\0';
    double t0 = attn_now_ms() / 1e3;
    int step = 0;
    for (;;) {
        struct attn_choice c;
        if (attn_generation_choose(&g, &c, &err) != 0)
            break;
        step++;
        int position = s->n_tokens;
        if (csv) {
            csv_write_step(stdout, step, position, c.id, c.prob, c.rank, s);
        } else {
            printf("  %4d  %5d  %6d  ", step, position, c.id);
            cli_print_token(s, c.id, GENERATE_TOKEN_WIDTH);
            attn_cnum_fprintf(stdout, " %.4f  %5d\n", c.prob, c.rank);
        }
        fflush(stdout);
        if (attn_scene_is_eos(s, c.id)) {
            char label[4 * SCENE_MAX_TOKEN_BYTES];
            attn_scene_token_label(label, sizeof(label), s, c.id);
            snprintf(why, sizeof(why), "at the end-of-text token '%.200s' (eos_token_id)", label);
            break;
        }
        if (attn_generation_append(&g, c.id, &err) != 0)
            break;
        /* a row that made a nan or an inf: the next step's logits would not be numbers */
        char where[DIAG_MSG_MAX - 64];
        if (attn_net_nonfinite_text(where, sizeof(where), &cs.net)) {
            attn_diag_set(&err, "",
                          "the forward pass of its row made a value that is not a "
                          "number: %s",
                          where);
            break;
        }
        if (stop_len && s->backing->token_bytes) {
            char bytes[4 * SCENE_MAX_TOKEN_BYTES];
            size_t nb = s->backing->token_bytes(s->backing, c.id, from_empty && have == 0, bytes,
                                                sizeof(bytes));
            if (have + nb + 1 > cap) {
                cap = 2 * (have + nb + 1);
                char *grown = realloc(made, cap);
                if (!grown) {
                    attn_diag_set(&err, "", "out of memory");
                    break;
                }
                made = grown;
            }
            memcpy(made + have, bytes, nb);
            have += nb;
            made[have] = '\0';
            if (have >= stop_len && strstr(made, val[O_STOP])) {
                snprintf(why, sizeof(why), "at --stop");
                break;
            }
        }
        if (s->n_tokens >= ctx) {
            snprintf(why, sizeof(why), "at the model's context: %d tokens (%.100s)", ctx, ctx_what);
            break;
        }
        if (step == max_new) {
            snprintf(why, sizeof(why), "at --max-new %d", max_new);
            break;
        }
    }
    double seconds = attn_now_ms() / 1e3 - t0;
    free(made);
    if (!why[0]) {
        fprintf(stderr, "%s: step %d: %s\n", cs.name, step, err.msg[0] ? err.msg : "failed");
        rc = CLI_INVALID;
    } else {
        attn_cnum_fprintf(info,
                          "# stopped %s: %d tokens in %.*f %s, %.*f ms a token (%.0f tokens/s)\n",
                          why, step, seconds < 1 ? 1 : 2, seconds < 1 ? 1e3 * seconds : seconds,
                          seconds < 1 ? "ms" : "s", 1e3 * seconds / step < 10 ? 2 : 1,
                          1e3 * seconds / step, step / seconds);
        if (!csv && s->text)
            print_text(s->text);
    }
    attn_generation_end(&g);
    cli_scene_close(&cs);
    return rc;
}
