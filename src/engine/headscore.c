/* headscore: pattern scores of a head's attention weights (see headscore.h). */
#include "engine/headscore.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"

static const char *const names[SCORE_COUNT] = {"previous", "induction", "first", "self", "entropy"};

const char *attn_head_score_name(enum head_score s)
{
    return s >= 0 && s < SCORE_COUNT ? names[s] : "?";
}

int attn_head_score_parse(const char *name)
{
    for (int i = 0; i < SCORE_COUNT; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* attn_head_scores with earlier[i], the most recent earlier position of ids[i] (-1: none), or
 * NULL to look each up. */
static void score_weights(struct head_scores *out, struct attn_mat_view w, const int *ids,
                          const int *earlier)
{
    memset(out, 0, sizeof(*out));
    int n = w.rows;
    if (w.cols != n) { /* cross-attention: queries of one sequence, keys of another. Only the
                          entropy means the same there (how focused a row is), over every row:
                          none is masked to a single choice */
        out->cross = true;
        double h = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < w.cols; j++) {
                double a = w.data[(size_t)i * w.stride + j];
                if (a > 0)
                    h -= a * log(a);
            }
        out->rows[SCORE_ENTROPY] = n;
        out->defined[SCORE_ENTROPY] = n > 0;
        out->value[SCORE_ENTROPY] = n > 0 ? h / n : 0;
        return;
    }
    double sum[SCORE_COUNT] = {0};
    int rows = 0, repeats = 0;
    for (int i = 1; i < n; i++) {
        const float *a = w.data + (size_t)i * w.stride;
        rows++;
        sum[SCORE_PREVIOUS] += a[i - 1];
        sum[SCORE_FIRST] += a[0];
        sum[SCORE_SELF] += a[i];
        double h = 0;
        for (int j = 0; j < w.cols; j++)
            if (a[j] > 0)
                h -= (double)a[j] * log((double)a[j]);
        sum[SCORE_ENTROPY] += h;
        int j = -1;
        if (earlier)
            j = earlier[i];
        else
            for (j = i - 1; j >= 0 && ids[j] != ids[i]; j--) /* the most recent earlier one */
                ;
        if (j >= 0) {
            sum[SCORE_INDUCTION] += a[j + 1];
            repeats++;
        }
    }
    for (int s = 0; s < SCORE_COUNT; s++) {
        int count = s == SCORE_INDUCTION ? repeats : rows;
        out->rows[s] = count;
        out->defined[s] = count >= attn_head_score_min_rows((enum head_score)s);
        out->value[s] = out->defined[s] ? sum[s] / count : 0.0;
    }
}

void attn_head_scores(struct head_scores *out, struct attn_mat_view w, const int *ids)
{
    score_weights(out, w, ids, NULL);
}

struct scores_job {
    struct head_scores *out;
    const struct attn_mat_view *w;
    const int *ids, *earlier;
};

static void score_task(void *ctx, int t, int slot)
{
    (void)slot;
    const struct scores_job *j = ctx;
    score_weights(&j->out[t], j->w[t], j->ids, j->earlier);
}

void attn_head_scores_many(struct head_scores *out, const struct attn_mat_view *w, int count,
                           const int *ids)
{
    if (count <= 0)
        return;
    int n = w[0].rows;
    bool same = true; /* one text: its earlier occurrences are looked up once, for all */
    for (int t = 1; t < count; t++)
        same &= w[t].rows == n;
    int *earlier = same && n > 0 ? malloc((size_t)n * sizeof(int)) : NULL;
    for (int i = 0; earlier && i < n; i++) {
        int j = i - 1;
        while (j >= 0 && ids[j] != ids[i])
            j--;
        earlier[i] = j;
    }
    struct scores_job job = {out, w, ids, earlier}; /* without earlier: each head looks up */
    attn_pool_run(count, 0, score_task, &job);
    free(earlier);
}

int attn_head_score_min_rows(enum head_score s)
{
    return s == SCORE_INDUCTION ? ATTN_INDUCTION_MIN_ROWS : 1;
}

void attn_head_score_why(char *out, size_t size, const struct head_scores *sc, enum head_score s)
{
    if (size)
        out[0] = '\0';
    if (s < 0 || s >= SCORE_COUNT || sc->defined[s])
        return;
    int rows = sc->rows[s];
    if (sc->cross)
        snprintf(out, size,
                 "%s: it compares positions of one sequence; cross-attention's keys are the "
                 "source's",
                 names[s]);
    else if (s != SCORE_INDUCTION)
        snprintf(out, size, "%s: no row to average (one token)", names[s]);
    else if (rows == 0)
        snprintf(out, size,
                 "induction: no token repeats an earlier one (a text that repeats "
                 "itself gives the score)");
    else
        snprintf(out, size,
                 "induction: %d row%s repeat%s an earlier token, fewer than the %d the score needs",
                 rows, rows == 1 ? "" : "s", rows == 1 ? "s" : "", ATTN_INDUCTION_MIN_ROWS);
}
