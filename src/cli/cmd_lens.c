/* lens: the logit lens, every layer's guess at the next token (engine/logits.h).
 *
 *     pos  token      next      layer 0            layer 1
 *       2  king       door      ' moon'   0.734    ' door' * 0.912
 *
 * Each layer's residual stream (its block output) through the final norm and the unembedding,
 * the top-1 token and its probability; * marks a guess that is the actual next token. On a
 * masked LM (BERT) the stream goes through its MLM head instead, each position is scored against
 * its own token (column "itself"; a [MASK] has none: "-"), and * marks a layer that already
 * gives it. --csv writes export's lens.csv: layer,position,id,token,prob.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "engine/logits.h"
#include "export/export.h"

enum { O_CSV, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_CSV] = {"csv", 'c', NULL, "as CSV: layer,position,id,token,prob"},
};

static const struct cli_example examples[] = {
    {"attnscope lens 29-induction-head",
     "each layer's guess: layer 0 the word before, layer 1 the word that comes next"},
    {NULL, NULL},
};

const struct cli_command cli_lens = {
    "lens",
    cmd_lens,
    "SCENE [--csv]",
    "the logit lens: every layer's top guess at the next token",
    "Put every layer's residual stream (its block output) through the final norm and the\n"
    "unembedding, as if the model stopped there, and print the top-1 token and its\n"
    "probability for every layer and position (the logit lens of nostalgebraist, 2020). The\n"
    "last layer's guesses are the model's own. The scene needs a vocabulary model. On a masked\n"
    "language model (BERT) each layer goes through the MLM head, and a position's guess is at\n"
    "its own token (at a [MASK]: what fills it).",
    opts,
    O_COUNT,
    examples,
    true,
};

/* The table's columns: a token or a guess padded to LENS_TOKEN_WIDTH characters; a layer's column
 * is its guess, a mark (* or a blank) and the probability (0.000). */
#define LENS_TOKEN_WIDTH 12
#define LENS_LAYER_WIDTH (LENS_TOKEN_WIDTH + 1 + 5)

int cmd_lens(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_lens, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n_pos == 0)
        return cli_usage_error("lens", "missing SCENE (a scene with a vocabulary model)");
    struct cli_scene cs;
    if ((rc = cli_scene_open_lean(&cs, pos[0], &in, true, NULL, NULL)) != CLI_OK)
        return rc;
    const struct attn_net *net = &cs.net;
    int layers = net->layers, n = net->model[0].n;
    struct attn_predictions *p = NULL;
    if ((rc = cli_scene_finite(&cs, true)) != CLI_OK ||
        (rc = cli_need_vocab(&cs, "lens")) != CLI_OK)
        goto out;
    if (!(p = calloc((size_t)layers, sizeof(*p)))) {
        fprintf(stderr, "%s: out of memory\n", cs.name);
        rc = CLI_INVALID;
        goto out;
    }
    struct diag err;
    attn_diag_clear(&err);
    for (int L = 0; L < layers; L++)
        if (attn_predict(&p[L], net, L, 0, n, 1, 1.0, NULL, &err) != 0) {
            fprintf(stderr, "%s: %s\n", cs.name, err.msg);
            rc = CLI_INVALID;
            goto out;
        }
    if (val[O_CSV]) {
        csv_write_lens(stdout, p, layers, &cs.scene);
        goto out;
    }
    const struct attn_model *m = &net->model[0];
    bool masked = net->model[layers - 1].masked_lm;
    if (masked)
        printf("# the logit lens of a masked LM: each layer's residual stream through the MLM\n"
               "# head; its top-1 token at each position and probability (* = the token\n"
               "# itself; a [MASK] has none)\n");
    else
        printf("# the logit lens: each layer's residual stream through the final norm and the\n"
               "# unembedding; its top-1 token and probability (* = the actual next token)\n");
    cli_print_modified(stdout, &cs.scene, NULL);
    printf("  pos  %-*s %-*s", LENS_TOKEN_WIDTH, "token", LENS_TOKEN_WIDTH,
           masked ? "itself" : "next");
    for (int L = 0; L < layers; L++) /* "layer L" over its column, the last one unpadded */
        printf("  layer %-*d", L + 1 < layers ? LENS_LAYER_WIDTH - (int)strlen("layer ") : 0, L);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%5d  ", i);
        cli_print_text(m->tokens[i], LENS_TOKEN_WIDTH);
        printf(" ");
        if (p[0].next_id[i] >= 0)
            cli_print_token(&cs.scene, p[0].next_id[i], LENS_TOKEN_WIDTH);
        else
            printf("%-*s", LENS_TOKEN_WIDTH, "-");
        for (int L = 0; L < layers; L++) {
            const struct attn_token_score *t = attn_predictions_top(&p[L], i);
            printf("  ");
            cli_print_token(&cs.scene, t->id, LENS_TOKEN_WIDTH);
            attn_cnum_fprintf(stdout, "%s%.3f", t->id == p[L].next_id[i] ? "*" : " ",
                              (double)t->prob);
        }
        printf("\n");
    }
out:
    for (int L = 0; p && L < layers; L++)
        attn_predictions_free(&p[L]);
    free(p);
    cli_scene_close(&cs);
    return rc;
}
