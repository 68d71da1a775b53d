/* heads: every head of every layer scored by its attention pattern (engine/headscore.h).
 *
 *   layer  head  previous  induction   first    self  entropy
 *       0     0    0.9123     0.0132  0.0312  0.0123   0.4312
 *
 * The heading says how many rows each score averages: rows 1 .. n-1, and for induction the rows
 * whose token occurred before, which must be ATTN_INDUCTION_MIN_ROWS or more for the score to be
 * given ("-" and a footer saying why otherwise). --csv writes the same as CSV (a score not given
 * is an empty field), with the two counts as the last columns; --sort SCORE orders the heads by
 * one score, highest first (entropy lowest first: the most focused heads). The last lines name
 * the head with the top score of each kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "engine/headscore.h"

struct row {
    int layer, head;
    struct head_scores s;
};

static int sort_score = -1;

static int by_score(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    double x = a->s.defined[sort_score] ? a->s.value[sort_score] : -1e300;
    double y = b->s.defined[sort_score] ? b->s.value[sort_score] : -1e300;
    if (sort_score == SCORE_ENTROPY) { /* the most focused first */
        x = a->s.defined[sort_score] ? -x : -1e300;
        y = b->s.defined[sort_score] ? -y : -1e300;
    }
    if (x != y)
        return x < y ? 1 : -1;
    return a->layer != b->layer ? a->layer - b->layer : a->head - b->head;
}

enum { O_SORT, O_CSV, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_SORT] = {"sort", 's', "SCORE", "order by one score (entropy: lowest first)"},
    [O_CSV] = {"csv", 'c', NULL,
               "as CSV: layer,head,previous,induction,first,self,entropy,rows,\n"
               "induction_rows (the rows each score averages)"},
};

static const struct cli_example examples[] = {
    {"attnscope heads 31-english-passage --sort induction",
     "the heads of models/english on a passage read twice, induction heads first"},
    {NULL, NULL},
};

const struct cli_command cli_heads = {
    "heads",
    cmd_heads,
    "[SCENE] [--sort SCORE] [--csv]",
    "score every head by its attention pattern",
    "Score every head of every layer by its attention pattern: previous token, induction,\n"
    "first token (an attention sink), self and entropy, as interpretability work names\n"
    "heads. The scores average the weights' rows 1 .. n-1; induction averages the rows whose\n"
    "token occurred before, and is given only on 8 or more of them (a text that repeats\n"
    "itself): on a few it measures something else.",
    opts,
    O_COUNT,
    examples,
    true,
};

/* The rows of every head, filled a layer at a time (attn_net_visit). */
struct rows_job {
    struct row *rows;              /* (layers, heads) */
    struct head_scores *scores;    /* (heads) one layer's */
    struct attn_mat_view *weights; /* (heads) */
};

static int score_layer(void *ctx, const struct attn_net *net, int L, struct diag *err)
{
    struct rows_job *job = ctx;
    int heads = net->model[0].heads;
    if (!job->rows && (!(job->rows = calloc((size_t)net->layers * heads, sizeof(*job->rows))) ||
                       !(job->scores = calloc((size_t)heads, sizeof(*job->scores))) ||
                       !(job->weights = calloc((size_t)heads, sizeof(*job->weights)))))
        return attn_diag_set(err, "", "out of memory");
    for (int h = 0; h < heads; h++)
        job->weights[h] = attn_view(&net->run[L], &net->model[L], STAGE_WEIGHTS, h);
    /* the heads at once, on every thread: the logarithms of the entropy are most of the work */
    attn_head_scores_many(job->scores, job->weights, heads, net->model[0].ids);
    for (int h = 0; h < heads; h++)
        job->rows[L * heads + h] = (struct row){L, h, job->scores[h]};
    return 0;
}

/* The top head of each score, in layer and head order (before any sort): best[s] is a copy,
 * found[s] false when no head has score s. */
static void top_heads(struct row best[SCORE_COUNT], bool found[SCORE_COUNT], const struct row *rows,
                      int n)
{
    for (int s = 0; s < SCORE_COUNT; s++) {
        found[s] = false;
        for (int i = 0; i < n; i++) {
            double v = rows[i].s.value[s], b = best[s].s.value[s];
            if (rows[i].s.defined[s] && (!found[s] || (s == SCORE_ENTROPY ? v < b : v > b))) {
                best[s] = rows[i];
                found[s] = true;
            }
        }
    }
}

static void print_csv(const struct row *rows, int n)
{
    fputs("layer,head", stdout);
    for (int s = 0; s < SCORE_COUNT; s++)
        printf(",%s", attn_head_score_name((enum head_score)s));
    fputs(",rows,induction_rows\r\n", stdout);
    for (int i = 0; i < n; i++) {
        printf("%d,%d", rows[i].layer, rows[i].head);
        for (int s = 0; s < SCORE_COUNT; s++)
            if (rows[i].s.defined[s])
                attn_cnum_fprintf(stdout, ",%.6f", rows[i].s.value[s]);
            else
                fputs(",", stdout);
        printf(",%d,%d\r\n", rows[i].s.rows[SCORE_PREVIOUS], rows[i].s.rows[SCORE_INDUCTION]);
    }
}

/* The table, then the top head of each score (top_heads) and why a score is not given. */
static void print_table(const struct cli_scene *cs, const struct row *rows, int n,
                        const struct row best[SCORE_COUNT], const bool found[SCORE_COUNT])
{
    const struct attn_net *net = &cs->net;
    const struct attn_model *m = &net->model[0];
    int heads = m->heads;
    cli_print_tokens(stdout, m);
    cli_print_modified(stdout, &cs->scene, NULL);
    /* the rows are the text's, the same for every head */
    int all = rows[0].s.rows[SCORE_PREVIOUS], rep = rows[0].s.rows[SCORE_INDUCTION];
    printf("# %d layer%s \u00d7 %d head%s, scored on the attention weights: rows 1 to %d (%d "
           "row%s), induction on the %d whose token occurred before\n",
           net->layers, net->layers == 1 ? "" : "s", heads, heads == 1 ? "" : "s", m->n - 1, all,
           all == 1 ? "" : "s", rep);
    printf("layer  head");
    for (int s = 0; s < SCORE_COUNT; s++)
        printf("  %9s", attn_head_score_name((enum head_score)s));
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%5d  %4d", rows[i].layer, rows[i].head);
        for (int s = 0; s < SCORE_COUNT; s++)
            if (rows[i].s.defined[s])
                attn_cnum_fprintf(stdout, "  %9.4f", rows[i].s.value[s]);
            else
                printf("  %9s", "-");
        printf("\n");
    }
    printf("# top:");
    for (int s = 0; s < SCORE_COUNT; s++) {
        if (!found[s]) {
            printf("%s %s -", s ? "," : "", attn_head_score_name((enum head_score)s));
            continue;
        }
        printf("%s %s L%d H%d", s ? "," : "", attn_head_score_name((enum head_score)s),
               best[s].layer, best[s].head);
        attn_cnum_fprintf(stdout, " (%.2f)", best[s].s.value[s]);
    }
    printf("\n");
    for (int s = 0; s < SCORE_COUNT; s++) {
        char why[200];
        attn_head_score_why(why, sizeof(why), &rows[0].s, (enum head_score)s);
        if (why[0])
            printf("# %s -: %s\n", attn_head_score_name((enum head_score)s), strchr(why, ':') + 2);
    }
}

int cmd_heads(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_heads, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *sort_arg = val[O_SORT];
    if (sort_arg && (sort_score = attn_head_score_parse(sort_arg)) < 0)
        return cli_usage_error(
            "heads", "unknown score '%s' (previous, induction, first, self, entropy)", sort_arg);
    /* Each layer's heads are scored as the layer is computed, while its weights are in memory
       (a lean compute keeps one layer's n x n stages, not every layer's). */
    struct rows_job job = {0};
    struct cli_scene cs;
    if ((rc = cli_scene_open_lean(&cs, n_pos ? pos[0] : NULL, &in, true, score_layer, &job)) !=
            CLI_OK ||
        (rc = cli_scene_finite(&cs, true)) != CLI_OK)
        goto out;
    int n = cs.net.layers * cs.net.model[0].heads;
    struct row best[SCORE_COUNT] = {{0}};
    bool found[SCORE_COUNT];
    top_heads(best, found, job.rows, n);
    if (sort_score >= 0)
        qsort(job.rows, (size_t)n, sizeof(*job.rows), by_score);
    if (val[O_CSV])
        print_csv(job.rows, n);
    else
        print_table(&cs, job.rows, n, best, found);
out:
    free(job.rows);
    free(job.scores);
    free(job.weights);
    cli_scene_close(&cs);
    return rc;
}
