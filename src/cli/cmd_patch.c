/* patch: activation patching, head by head (engine/logits.h).
 *
 *   layer  head      metric  recovered
 *       1     0      2.1034     0.9412
 *
 * For every head, the clean run's context of that head (before out_proj, every position) is
 * put into the corrupted run, everything after it recomputed, and the metric measured:
 * recovered = (patched - corrupted) / (clean - corrupted). logit_diff and prob read the last
 * position of a next-token model (what comes next) and the first [MASK] of a masked LM (what
 * fills it), or --position P; loss is ablate's, scored as in the clean run. --csv writes
 * layer,head,metric,recovered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "engine/logits.h"

enum { O_METRIC, O_POSITION, O_ANSWER, O_CSV, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_METRIC] = {"metric", 'm', "M",
                  "what to recover: logit_diff:A:B (the logit of token A minus\n"
                  "B's at the last position; a masked LM's first [MASK]),\n"
                  "prob:A (A's probability there) or loss (ablate's mean loss:\n"
                  "the clean text's next tokens; a masked LM's answers)"},
    [O_POSITION] = {"position", 'p', "P", "read logit_diff and prob at position P instead"},
    [O_ANSWER] = {"answer", 'a', "TOKEN",
                  "loss on a masked LM: the answer at its [MASK]s, as\n"
                  "ablate's --answer (default: the clean run's top token)"},
    [O_CSV] = {"csv", 'c', NULL, "as CSV: layer,head,metric,recovered"},
};

const struct cli_command cli_patch = {
    "patch",
    cmd_patch,
    "CLEAN CORRUPT --metric logit_diff:A:B|prob:A|loss [--position P] [--answer TOKEN] [--csv]",
    "activation patching: which heads carry the clean run's answer",
    "Run two scenes of the same model and length, CLEAN and CORRUPT (say \"When Mary and John\n"
    "went to the store, John gave a drink to\" and the same with Mary for the second John).\n"
    "For every head in turn, put the clean run's context of that head into the corrupted run\n"
    "at every position, recompute everything after it, and print how much of the clean minus\n"
    "corrupted metric it recovers: 0 no effect, 1 all of it (TransformerLens's activation\n"
    "patching). A and B are token text (\" Mary\" with its space), each one token of the\n"
    "scenes' tokenizer. On a masked language model (BERT) the metrics read the clean text's\n"
    "first [MASK], where the model answers, and loss scores the clean run's answers.",
    opts,
    O_COUNT,
    NULL, /* no example runs on the shipped scenes alone */
    true,
};

/* The metric's kind and token texts, split from "kind[:A[:B]]" into text (a copy). */
struct metric_spec {
    enum attn_metric_kind kind;
    const char *arg; /* as given */
    char text[256];  /* the kind, then the token texts a and b point into */
    const char *a, *b;
};

static int parse_metric(struct metric_spec *m, const char *arg)
{
    m->arg = arg;
    snprintf(m->text, sizeof(m->text), "%s", arg);
    char *a = strchr(m->text, ':'), *b = NULL;
    if (a) {
        *a++ = '\0';
        if ((b = strchr(a, ':')))
            *b++ = '\0';
    }
    m->a = a;
    m->b = b;
    if (strcmp(m->text, "logit_diff") == 0) {
        m->kind = METRIC_LOGIT_DIFF;
        if (!a || !b || !*a || !*b)
            return cli_usage_error("patch", "--metric logit_diff needs two tokens: logit_diff:A:B");
    } else if (strcmp(m->text, "prob") == 0) {
        m->kind = METRIC_PROB;
        if (!a || !*a || b)
            return cli_usage_error("patch", "--metric prob needs one token: prob:A");
    } else if (strcmp(m->text, "loss") == 0) {
        m->kind = METRIC_LOSS;
        if (a)
            return cli_usage_error("patch", "--metric loss takes no token");
    } else {
        return cli_usage_error("patch", "unknown metric '%s' (logit_diff:A:B, prob:A or loss)",
                               m->text);
    }
    return CLI_OK;
}

/* Says how the scenes differ, if they do in what patching needs alike. */
static int check_alike(const struct cli_scene *c, const struct cli_scene *x)
{
    const struct attn_scene *a = &c->scene, *b = &x->scene;
    if (strcmp(a->model.file, b->model.file) != 0) {
        fprintf(stderr, "%s and %s differ in model: %s, and %s: patching needs one model\n",
                c->name, x->name, a->model.file, b->model.file);
        return CLI_INVALID;
    }
    if (c->net.layers != x->net.layers || a->attn.heads != b->attn.heads) {
        fprintf(stderr, "%s and %s differ in shape: %d layers x %d heads, and %d x %d\n", c->name,
                x->name, c->net.layers, a->attn.heads, x->net.layers, b->attn.heads);
        return CLI_INVALID;
    }
    if (a->n_tokens != b->n_tokens) {
        fprintf(stderr,
                "%s and %s differ in length: %d tokens, and %d: patching puts each position's "
                "context into the same position\n",
                c->name, x->name, a->n_tokens, b->n_tokens);
        return CLI_INVALID;
    }
    return CLI_OK;
}

/* The metric's token ids, read with the clean scene's tokenizer. */
static int metric_ids(struct attn_metric *metric, const struct metric_spec *spec,
                      const struct cli_scene *clean)
{
    const char *texts[2] = {spec->a, spec->b};
    int *ids[2] = {&metric->a, &metric->b};
    for (int i = 0; i < 2; i++) {
        if (!texts[i])
            continue;
        struct diag err;
        attn_diag_clear(&err);
        if (attn_scene_single_token(ids[i], &clean->scene, texts[i], &err) != 0) {
            fprintf(stderr, "%s: --metric %s: %s\n", clean->name, spec->arg, err.msg);
            return CLI_INVALID;
        }
    }
    return CLI_OK;
}

/* Where logit_diff and prob read (--position, or the clean run's default) and what loss scores
 * (--answer, or the clean run's own), in metric. */
static int metric_where(struct attn_metric *metric, const struct metric_spec *spec,
                        const struct cli_scene *clean, const char *position, const char *answer,
                        int **scored)
{
    int n = clean->net.model[0].n;
    if (position && spec->kind == METRIC_LOSS)
        return cli_usage_error("patch", "--position is for logit_diff and prob: loss reads every "
                                        "position");
    if (answer && spec->kind != METRIC_LOSS)
        return cli_usage_error("patch", "--answer is for --metric loss: logit_diff and prob name "
                                        "their tokens");
    if (position && cli_parse_int(position, 0, n - 1, &metric->position) != 0)
        return cli_usage_error("patch",
                               "invalid --position '%s': the scenes have %d tokens (0 to "
                               "%d)",
                               position, n, n - 1);
    if (spec->kind != METRIC_LOSS && metric->position < 0 &&
        (metric->position = attn_metric_position(&clean->net)) < 0) {
        fprintf(stderr,
                "%s: --metric %s reads the first [MASK], and the text has none: add one, or give "
                "--position\n",
                clean->name, spec->arg);
        return CLI_INVALID;
    }
    if (spec->kind == METRIC_LOSS) {
        int rc = cli_loss_targets(scored, clean, "patch", answer);
        metric->scored = *scored;
        return rc;
    }
    return CLI_OK;
}

int cmd_patch(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[2];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_patch, argc, argv, val, pos, 2, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n_pos < 2)
        return cli_usage_error("patch", "needs two scenes: CLEAN and CORRUPT");
    if (in.save_scene)
        return cli_usage_error("patch", "--save-scene saves one scene; patch reads two");
    if (!val[O_METRIC])
        return cli_usage_error("patch", "missing --metric (logit_diff:A:B, prob:A or loss)");
    struct metric_spec spec;
    if ((rc = parse_metric(&spec, val[O_METRIC])) != CLI_OK)
        return rc;

    struct cli_scene clean = {0}, corrupt = {0};
    struct attn_metric metric = {.kind = spec.kind, .a = -1, .b = -1, .position = -1};
    double *recovered = NULL, m_clean = 0, m_corrupt = 0;
    int *scored = NULL;
    if ((rc = cli_scene_open_lean(&clean, pos[0], &in, true, NULL, NULL)) != CLI_OK ||
        (rc = cli_scene_open_lean(&corrupt, pos[1], &in, true, NULL, NULL)) != CLI_OK ||
        (rc = cli_scene_finite(&clean, true)) != CLI_OK ||
        (rc = cli_scene_finite(&corrupt, true)) != CLI_OK ||
        (rc = cli_need_vocab(&clean, "patch")) != CLI_OK ||
        (rc = cli_need_vocab(&corrupt, "patch")) != CLI_OK ||
        (rc = check_alike(&clean, &corrupt)) != CLI_OK ||
        (rc = metric_ids(&metric, &spec, &clean)) != CLI_OK ||
        (rc = metric_where(&metric, &spec, &clean, val[O_POSITION], val[O_ANSWER], &scored)) !=
            CLI_OK)
        goto out;
    int heads = corrupt.net.model[0].heads, count = corrupt.net.layers * heads;
    struct diag err;
    attn_diag_clear(&err);
    if (!(recovered = calloc((size_t)count, sizeof(double)))) {
        fprintf(stderr, "%s: out of memory\n", corrupt.name);
        rc = CLI_INVALID;
        goto out;
    }
    if (attn_patch_sweep(recovered, &m_clean, &m_corrupt, &corrupt.net, &clean.net, &metric,
                         &err) != 0) {
        fprintf(stderr, "%s, %s: --metric %s: %s\n", clean.name, corrupt.name, val[O_METRIC],
                err.msg);
        rc = CLI_INVALID;
        goto out;
    }
    double span = m_clean - m_corrupt;
    if (val[O_CSV]) {
        printf("layer,head,metric,recovered\r\n");
        for (int i = 0; i < count; i++)
            attn_cnum_fprintf(stdout, "%d,%d,%.6f,%.6f\r\n", i / heads, i % heads,
                              m_corrupt + recovered[i] * span, recovered[i]);
    } else {
        printf("# clean: %s\n# corrupted: %s\n", clean.name, corrupt.name);
        cli_print_modified(stdout, &clean.scene, "clean");
        cli_print_modified(stdout, &corrupt.scene, "corrupted");
        const struct attn_model *m = &clean.net.model[0];
        bool last = metric.position == m->n - 1 && !clean.net.model[clean.net.layers - 1].masked_lm;
        if (spec.kind == METRIC_LOGIT_DIFF) {
            printf("# metric: logit('");
            cli_print_text(spec.a, 0);
            printf("') - logit('");
            cli_print_text(spec.b, 0);
            printf("') at ");
        } else if (spec.kind == METRIC_PROB) {
            printf("# metric: p('");
            cli_print_text(spec.a, 0);
            printf("') at ");
        }
        if (spec.kind != METRIC_LOSS && last) {
            printf("the last position\n");
        } else if (spec.kind != METRIC_LOSS) {
            printf("position %d '", metric.position);
            cli_print_text(m->tokens[metric.position], 0);
            printf("'\n");
        } else if (!clean.net.model[clean.net.layers - 1].masked_lm) {
            printf("# metric: the mean loss of the clean text's next tokens\n");
        } else {
            printf("# metric: the mean loss\n");
            cli_print_scored(&clean, scored);
        }
        attn_cnum_fprintf(stdout, "# clean %.4f, corrupted %.4f: each head's context patched in\n",
                          m_clean, m_corrupt);
        printf("layer  head      metric  recovered\n");
        for (int i = 0; i < count; i++)
            attn_cnum_fprintf(stdout, "%5d  %4d  %10.4f  %9.4f\n", i / heads, i % heads,
                              m_corrupt + recovered[i] * span, recovered[i]);
    }
out:
    free(scored);
    free(recovered);
    cli_scene_close(&corrupt);
    cli_scene_close(&clean);
    return rc;
}
