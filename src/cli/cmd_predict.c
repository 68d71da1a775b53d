/* predict: what the model says comes next, position by position (engine/logits.h).
 *
 *   # position 17 'moon' -> next ' king': rank 1, p 0.8123
 *     rank   id  token            logit    prob
 *        1  345  ' king'        9.1234  0.8123  ███████████████████▌  <- next
 *
 * The top K of every position (or --position P) at a temperature, the actual next token's rank
 * and probability, then the mean loss over positions 0 .. n-2 and the perplexity. --csv writes
 * the top K as export's predictions.csv does (position,rank,id,token,logit,prob).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "engine/logits.h"
#include "export/export.h"

#define PREDICT_TOP_MAX     1000
#define PREDICT_TOP         10 /* --top's default */
#define PREDICT_TOKEN_WIDTH 16 /* a token's column, its quotes included */
#define PREDICT_BAR_WIDTH   20 /* the bar of a probability of 1 */

enum { O_POSITION, O_TOP, O_TEMPERATURE, O_CSV, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_POSITION] = {"position", 'p', "P", "only position P (0 is the first token)"},
    [O_TOP] = {"top", 'k', "K", "the K most likely tokens (default 10, at most 1000)"},
    [O_TEMPERATURE] = {"temperature", 't', "T",
                       "softmax(logits / T): below 1 sharper, above 1 flatter\n(default 1)"},
    [O_CSV] = {"csv", 'c', NULL, "as CSV: position,rank,id,token,logit,prob"},
};

static const struct cli_example examples[] = {
    {"attnscope predict 30-english-journey --position 11 --top 5",
     "what models/english, trained on English, bets after \"one st\""},
    {"attnscope predict 29-induction-head --position 20 --top 3",
     "models/induction completing the second run of its words"},
    {NULL, NULL},
};

const struct cli_command cli_predict = {
    "predict",
    cmd_predict,
    "SCENE [--position P] [--top K] [--temperature T] [--csv]",
    "the next-token predictions of a scene with a vocabulary model",
    "For every position (or P), the K most likely next tokens with their logits and\n"
    "probabilities, softmax(logits / T), and the actual next token's rank and probability;\n"
    "then the mean loss (-ln p of each next token) over positions 0 .. n-2 and the perplexity.\n"
    "The logits are the last layer's final norm times the unembedding (lm_head, or wte when\n"
    "tied). The scene needs a vocabulary model: a checkpoint, such as the two that ship,\n"
    "models/english (trained on English prose) and models/induction (a toy on repeated words).",
    opts,
    O_COUNT,
    examples,
    true,
};

/* One position's table. */
static void print_position(const struct attn_predictions *p, int i, const struct cli_scene *cs,
                           bool utf8)
{
    const struct attn_model *m = &cs->net.model[0];
    const struct attn_model *last = &cs->net.model[cs->net.layers - 1];
    int pos = p->pos0 + i;
    const char *arrow = utf8 ? "\u2192" : "->";
    printf("\n# position %d '", pos);
    cli_print_text(m->tokens[pos], 0);
    putchar('\'');
    if (last->masked_lm && p->next_id[i] < 0) {
        printf(" (masked: the model fills it in)\n");
    } else if (p->next_id[i] >= 0) {
        printf(" %s %s ", arrow, last->masked_lm ? "itself" : "next");
        cli_print_token(&cs->scene, p->next_id[i], 0);
        attn_cnum_fprintf(stdout, ": rank %d, p %.4f, loss %.4f\n", p->next_rank[i],
                          p->next_prob[i], p->next_loss[i]);
    } else {
        printf(" (the last token: no next one to compare)\n");
    }
    printf("  rank     id  token              logit    prob\n");
    const struct attn_token_score *top = attn_predictions_top(p, i);
    for (int r = 0; r < p->k; r++) {
        printf("  %4d  %5d  ", r + 1, top[r].id);
        cli_print_token(&cs->scene, top[r].id, PREDICT_TOKEN_WIDTH);
        attn_cnum_fprintf(stdout, " %8.4f  %.4f  ", (double)top[r].logit, (double)top[r].prob);
        cli_print_bar(top[r].prob, PREDICT_BAR_WIDTH, utf8);
        if (top[r].id == p->next_id[i])
            printf("  %s %s", utf8 ? "\u2190" : "<-", last->masked_lm ? "itself" : "next");
        printf("\n");
    }
}

int cmd_predict(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_predict, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n_pos == 0)
        return cli_usage_error("predict", "missing SCENE (a scene with a vocabulary model)");
    int position = -1, top = PREDICT_TOP;
    double temperature = 1.0;
    /* any temperature a double holds: the softmax subtracts the largest logit first, so 1e-300
     * is the top token alone and 1e38 all of them alike (attn_predict) */
    if ((val[O_POSITION] && cli_int_option(&position, "predict", "position", val[O_POSITION], 0,
                                           SCENE_MAX_TOKENS - 1) != CLI_OK) ||
        (val[O_TOP] &&
         cli_int_option(&top, "predict", "--top", val[O_TOP], 1, PREDICT_TOP_MAX) != CLI_OK) ||
        (val[O_TEMPERATURE] && cli_positive_option(&temperature, "predict", "--temperature",
                                                   val[O_TEMPERATURE], DBL_MAX) != CLI_OK))
        return CLI_USAGE;

    struct cli_scene cs;
    if ((rc = cli_scene_open_lean(&cs, pos[0], &in, true, NULL, NULL)) != CLI_OK)
        return rc;
    const struct attn_net *net = &cs.net;
    int n = net->model[0].n;
    struct attn_predictions p = {0};
    int *scored = NULL;
    if ((rc = cli_scene_finite(&cs, true)) != CLI_OK ||
        (rc = cli_need_vocab(&cs, "predict")) != CLI_OK)
        goto out;
    if (position >= n) {
        fprintf(stderr, "%s: --position %d: the scene has %d tokens (0 to %d)\n", cs.name, position,
                n, n - 1);
        rc = CLI_INVALID;
        goto out;
    }
    /* Every position: the summary needs them all, whatever is shown. */
    struct diag err;
    attn_diag_clear(&err);
    if (attn_predict(&p, net, net->layers - 1, 0, n, top, temperature, NULL, &err) != 0) {
        fprintf(stderr, "%s: %s\n", cs.name, err.msg);
        rc = CLI_INVALID;
        goto out;
    }
    if (val[O_CSV]) {
        struct attn_predictions one = p;
        if (position >= 0) { /* a window on the one position */
            one.pos0 = position;
            one.count = 1;
            one.top = p.top + (size_t)position * (size_t)p.k;
        }
        csv_write_predictions(stdout, &one, &cs.scene);
        goto out;
    }
    bool utf8 = cli_utf8_output();
    const struct attn_model *m = &net->model[0];
    cli_print_tokens(stdout, m);
    cli_print_modified(stdout, &cs.scene, NULL);
    /* a masked language model (BERT) fills in its [MASK] positions: those by default */
    const struct attn_model *last = &net->model[net->layers - 1];
    int masks = 0;
    for (int i = 0; last->masked_lm && i < n; i++)
        masks += m->ids[i] == last->mask_id;
    if (last->masked_lm)
        attn_cnum_fprintf(stdout,
                          "# masked-token predictions: top %d of %d tokens, temperature %g%s\n",
                          p.k, p.vocab, temperature,
                          position >= 0 || masks == 0 ? ""
                                                      : " (the [MASK] positions; --position "
                                                        "shows any other)");
    else
        attn_cnum_fprintf(stdout, "# next-token predictions: top %d of %d tokens, temperature %g\n",
                          p.k, p.vocab, temperature);
    for (int i = 0; i < n; i++)
        if (position < 0 ? !masks || m->ids[i] == last->mask_id : i == position)
            print_position(&p, i, &cs, utf8);
    if (last->masked_lm) {
        /* the loss ablate and patch compare (logits.h, attn_loss_targets), with every head */
        double mean = 0;
        if (!(scored = malloc((size_t)n * sizeof(int))) ||
            attn_loss_targets(scored, net, NULL, 0, &err) != 0 ||
            attn_mean_loss(&mean, net, scored, 0, n, &err) != 0) {
            fprintf(stderr, "%s: %s\n", cs.name, scored ? err.msg : "out of memory");
            rc = CLI_INVALID;
            goto out;
        }
        if (masks == 0)
            attn_cnum_fprintf(stdout,
                              "\n# no [MASK] in the text: each position scores its own token; "
                              "mean loss over positions 0 to %d: %.4f nats\n",
                              n - 1, mean);
        else
            attn_cnum_fprintf(stdout,
                              "\n# mean loss of the top token at each [MASK] (what ablate and "
                              "patch score): %.4f nats\n",
                              mean);
    } else if (n > 1) {
        double sum = 0;
        for (int i = 0; i + 1 < n; i++)
            sum += p.next_loss[i];
        double mean = sum / (n - 1);
        attn_cnum_fprintf(stdout,
                          "\n# mean loss over positions 0 to %d: %.4f nats, perplexity %.4f\n",
                          n - 2, mean, exp(mean));
    } else {
        printf("\n# one token: there is no next token to score\n");
    }
out:
    free(scored);
    attn_predictions_free(&p);
    cli_scene_close(&cs);
    return rc;
}
