/* ablate: every head switched off in turn, alone, and what it costs the model (logits.h).
 *
 *   layer  head  mode      loss  delta_loss
 *       0     0  zero    2.9132     +2.5284
 *
 * delta_loss is the mean loss with that head's context replaced (zero, or its mean over the
 * positions) before out_proj, minus the loss of the scene as given, over the positions that
 * score a token (attn_loss_targets: each next token; on a masked LM the model's own answer at
 * each [MASK], or --answer's, or every token of a text without [MASK]), all of them or
 * --positions A:B. --sort puts the largest delta first; --csv writes
 * layer,head,mode,loss,delta_loss.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "engine/logits.h"

enum { O_MODE, O_SORT, O_CSV, O_POSITIONS, O_ANSWER, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_MODE] = {"mode", 'm', "MODE",
                "zero (the head's context set to 0, the default) or mean\n"
                "(its mean over the positions)"},
    [O_SORT] = {"sort", 's', NULL, "the heads whose loss rises most first"},
    [O_CSV] = {"csv", 'c', NULL, "as CSV: layer,head,mode,loss,delta_loss"},
    [O_POSITIONS] = {"positions", 'p', "A:B",
                     "average the loss over positions A .. B-1 only (as a\n"
                     "Python slice; A: or :B leave an end open)"},
    [O_ANSWER] = {"answer", 'a', "TOKEN",
                  "a masked LM's answer at its [MASK]s: one token for all,\n"
                  "or one each (TOKEN,TOKEN); #ID names an id (default:\n"
                  "what the model ranks first there)"},
};

static const struct cli_example examples[] = {
    {"attnscope ablate 32-english-repeat --sort",
     "the heads of models/english a repeated span needs most, first"},
    {NULL, NULL},
};

const struct cli_command cli_ablate = {
    "ablate",
    cmd_ablate,
    "SCENE [--mode zero|mean] [--sort] [--csv] [--positions A:B] [--answer TOKEN]",
    "switch off every head in turn and measure the loss",
    "Ablate every head of every layer in turn, alone: replace its context before the output\n"
    "projection by zeros (or by its mean over the positions, TransformerLens's mean\n"
    "ablation), recompute everything after it, and print the mean next-token loss and\n"
    "delta_loss, its rise over the scene as given. Heads the scene's ablate: key switches off\n"
    "stay off. The scene needs a vocabulary model. On a masked language model (BERT) the loss\n"
    "is -ln p of the model's own answer at each [MASK] (what it ranks first there with every\n"
    "head on; --answer names another), or of every token itself when the text has no [MASK].",
    opts,
    O_COUNT,
    examples,
    true,
};

struct row {
    int layer, head;
    double loss, delta;
};

static int by_delta(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    if (a->delta != b->delta)
        return a->delta < b->delta ? 1 : -1;
    return a->layer != b->layer ? a->layer - b->layer : a->head - b->head;
}

/* "A:B", "A:", ":B" into [*a, *b) with -1 for an open end. Returns 0, or -1. */
static int parse_range(const char *text, int *a, int *b)
{
    const char *colon = strchr(text, ':');
    if (!colon)
        return -1;
    char left[32], right[32];
    size_t l = (size_t)(colon - text);
    if (l >= sizeof(left) || strlen(colon + 1) >= sizeof(right))
        return -1;
    memcpy(left, text, l);
    left[l] = '\0';
    snprintf(right, sizeof(right), "%s", colon + 1);
    *a = *b = -1;
    if (left[0] && cli_parse_int(left, 0, SCENE_MAX_TOKENS, a) != 0)
        return -1;
    if (right[0] && cli_parse_int(right, 0, SCENE_MAX_TOKENS, b) != 0)
        return -1;
    return 0;
}

int cmd_ablate(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_ablate, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n_pos == 0)
        return cli_usage_error("ablate", "missing SCENE (a scene with a vocabulary model)");
    enum attn_head_mode mode = HEAD_ZERO;
    if (val[O_MODE] && strcmp(val[O_MODE], "mean") == 0)
        mode = HEAD_MEAN;
    else if (val[O_MODE] && strcmp(val[O_MODE], "zero") != 0)
        return cli_usage_error("ablate", "--mode must be zero or mean, not '%s'", val[O_MODE]);
    int a = -1, b = -1;
    if (val[O_POSITIONS] && parse_range(val[O_POSITIONS], &a, &b) != 0)
        return cli_usage_error("ablate", "invalid --positions '%s' (A:B, like 16:31)",
                               val[O_POSITIONS]);

    struct cli_scene cs;
    if ((rc = cli_scene_open_lean(&cs, pos[0], &in, true, NULL, NULL)) != CLI_OK)
        return rc;
    struct attn_net *net = &cs.net;
    int n = net->model[0].n, heads = net->model[0].heads, count = net->layers * heads;
    bool masked = net->model[net->layers - 1].masked_lm;
    int *scored = NULL;
    double clean = 0, *loss = NULL;
    struct row *rows = NULL;
    if ((rc = cli_scene_finite(&cs, true)) != CLI_OK ||
        (rc = cli_need_vocab(&cs, "ablate")) != CLI_OK)
        goto out;
    if (masked) { /* every position may score (its [MASK]'s answer, or its own token) */
        a = a < 0 ? 0 : a;
        b = b < 0 ? n : b;
        if (a >= b || b > n) {
            fprintf(stderr,
                    "%s: --positions %d:%d: the scene has %d tokens (A:B takes A .. B-1, B at "
                    "most %d)\n",
                    cs.name, a, b, n, n);
            rc = CLI_INVALID;
            goto out;
        }
    }
    if ((rc = cli_loss_targets(&scored, &cs, "ablate", val[O_ANSWER])) != CLI_OK)
        goto out;
    if (a < 0)
        a = 0;
    if (b < 0)
        b = n - 1;
    if (!masked && (n < 2 || a >= b || b > n - 1)) {
        if (n < 2)
            fprintf(stderr, "%s: one token has no next token to score\n", cs.name);
        else
            fprintf(stderr,
                    "%s: --positions %d:%d: the positions with a next token are 0 to %d (A:B "
                    "takes A .. B-1, B at most %d)\n",
                    cs.name, a, b, n - 2, n - 1);
        rc = CLI_INVALID;
        goto out;
    }
    loss = calloc((size_t)count, sizeof(double));
    rows = calloc((size_t)count, sizeof(*rows));
    struct diag err;
    attn_diag_clear(&err);
    if (!loss || !rows)
        rc = attn_diag_set(&err, "", "out of memory");
    else
        rc = attn_ablate_sweep(loss, &clean, net, mode, scored, a, b, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", cs.name, err.msg);
        rc = CLI_INVALID;
        goto out;
    }
    for (int i = 0; i < count; i++)
        rows[i] = (struct row){i / heads, i % heads, loss[i], loss[i] - clean};
    if (val[O_SORT])
        qsort(rows, (size_t)count, sizeof(*rows), by_delta);
    const char *mname = attn_head_mode_name(mode);
    if (val[O_CSV]) {
        printf("layer,head,mode,loss,delta_loss\r\n");
        for (int i = 0; i < count; i++)
            attn_cnum_fprintf(stdout, "%d,%d,%s,%.6f,%.6f\r\n", rows[i].layer, rows[i].head, mname,
                              rows[i].loss, rows[i].delta);
        goto out;
    }
    cli_print_tokens(stdout, &net->model[0]);
    cli_print_modified(stdout, &cs.scene, NULL);
    printf("# each head ablated alone (%s), the mean loss over positions %d to %d\n",
           mode == HEAD_ZERO ? "zero: its context set to 0 before out_proj"
                             : "mean: its context replaced by its mean over the positions",
           a, b - 1);
    if (masked)
        cli_print_scored(&cs, scored);
    attn_cnum_fprintf(stdout, "# the loss with no head ablated: %.4f nats\n", clean);
    printf("layer  head  mode      loss  delta_loss\n");
    for (int i = 0; i < count; i++)
        attn_cnum_fprintf(stdout, "%5d  %4d  %-4s  %8.4f  %+10.4f\n", rows[i].layer, rows[i].head,
                          mname, rows[i].loss, rows[i].delta);
out:
    free(scored);
    free(loss);
    free(rows);
    cli_scene_close(&cs);
    return rc;
}
