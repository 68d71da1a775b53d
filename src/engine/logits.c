/* logits: next-token predictions a block of positions at a time, the logit lens, and the head
 * ablation and patching sweeps (see logits.h). */
#include "engine/logits.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "engine/model.h"
#include "engine/pool.h"
#include "engine/scores.h"

bool attn_net_has_vocab(const struct attn_net *net)
{
    return net->layers > 0 &&
           (net->model[net->layers - 1].unembed || net->model[net->layers - 1].unembed_lazy) &&
           net->model[net->layers - 1].vocab > 0 && net->model[0].ids;
}

/* The net ends in a masked language model (BERT): position i's scores are for its own token. */
static bool last_masked_lm(const struct attn_net *net)
{
    return net->layers > 0 && net->model[net->layers - 1].masked_lm;
}

/* Rows of logits computed at once: a block of at most SCENE_LOGITS_BLOCK_FLOATS floats. */
static int block_rows(int vocab, int count)
{
    size_t rows = SCENE_LOGITS_BLOCK_FLOATS / (size_t)(vocab > 0 ? vocab : 1);
    if (rows < 1)
        rows = 1;
    return (size_t)count < rows ? count : (int)rows;
}

/* Checks the request: a vocabulary, the layer and the positions. */
static int check_request(const struct attn_net *net, int layer, int pos0, int count,
                         struct diag *err)
{
    if (!attn_net_has_vocab(net))
        return attn_diag_set(err, "", "the scene has no vocabulary model (no unembedding)");
    if (layer < 0 || layer >= net->layers)
        return attn_diag_set(err, "", "layer %d: the scene has %d layers", layer, net->layers);
    int n = net->model[0].n;
    if (pos0 < 0 || count < 0 || pos0 + count > n)
        return attn_diag_set(err, "", "positions %d to %d: the scene has %d tokens (0 to %d)", pos0,
                             pos0 + count - 1, n, n - 1);
    const struct attn_model *lm = &net->model[layer];
    int width = lm->block ? lm->d_in : lm->D;
    if (width != net->model[net->layers - 1].d_in)
        return attn_diag_set(err, "", "layer %d's output is %d wide, the unembedding %d", layer,
                             width, net->model[net->layers - 1].d_in);
    return 0;
}

/* BERT's MLM transform, in place: h (rows, d) = LayerNorm(act(h hw + hb)) with hnw, hnb, act the
 * checkpoint's hidden_act (as transformers' BertPredictionHeadTransform). */
static int head_transform(float *h, int rows, const struct attn_model *last)
{
    int d = last->d_in;
    float *t = malloc((size_t)rows * (size_t)d * sizeof(float));
    if (!t)
        return -1;
    attn_mm_ab(t, d, h, d, ATTN_PARAM(last, hw), d, last->hb, rows, d, d);
    attn_activate(t, t, (size_t)rows * (size_t)d, last->hact);
    attn_norm_rows(h, t, rows, last, last->hnw, last->hnb);
    free(t);
    return 0;
}

/* The residual stream the logits of layer are read from: its block output. (n, d) */
static struct attn_mat_view stream_of(const struct attn_net *net, int layer)
{
    const struct attn_model *m = &net->model[layer];
    return attn_view(&net->run[layer], m, attn_stage_block_output(m), 0);
}

/* out (rows, vocab) = logits of rows pos0 .. pos0 + rows - 1 of the stream v (n, d); hidden:
 * (rows, d) scratch.
 * A lazy unembedding (a checkpoint's F16/BF16 table) is widened a block of its rows at a time. */
static int logits_block(float *out, float *hidden, const struct attn_net *net,
                        struct attn_mat_view v, int pos0, int rows)
{
    const struct attn_model *last = &net->model[net->layers - 1];
    int d = last->d_in, vocab = last->vocab;
    for (int i = 0; i < rows; i++)
        memcpy(hidden + (size_t)i * d, v.data + (size_t)(pos0 + i) * v.stride,
               (size_t)d * sizeof(float));
    attn_final_norm_rows(hidden, hidden, rows, last);
    if (last->unembed_scale > 0) /* T5's tied head: sequence_output * d_model ** -0.5 */
        for (size_t i = 0; i < (size_t)rows * (size_t)d; i++)
            hidden[i] = hidden[i] * last->unembed_scale;
    if (last->hw && head_transform(hidden, rows, last))
        return -1;
    if (last->unembed) {
        attn_mm_abt(out, vocab, hidden, d, last->unembed, d, rows, vocab, d);
    } else {
        size_t per = SCENE_LOGITS_BLOCK_FLOATS / (size_t)d;
        if (per < 1)
            per = 1;
        if (per > (size_t)vocab)
            per = (size_t)vocab;
        float *chunk = malloc(per * (size_t)d * sizeof(float));
        if (!chunk)
            return -1;
        struct attn_backing *b = last->lazy_from;
        for (size_t v0 = 0; v0 < (size_t)vocab; v0 += per) {
            size_t nv = (size_t)vocab - v0 < per ? (size_t)vocab - v0 : per;
            b->read_rows(b, last->unembed_lazy, chunk, v0, nv);
            attn_mm_abt(out + v0, vocab, hidden, d, chunk, d, rows, (int)nv, d);
        }
        free(chunk);
    }
    if (last->unembed_bias)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < vocab; j++)
                out[(size_t)i * vocab + j] += last->unembed_bias[j];
    if (last->logit_softcap > 0) /* Gemma 2's final_logit_softcapping */
        attn_softcap(out, (size_t)rows * (size_t)vocab, last->logit_softcap);
    return 0;
}

int attn_logits(float *out, const struct attn_net *net, int layer, int pos0, int count,
                struct diag *err)
{
    if (check_request(net, layer, pos0, count, err))
        return -1;
    int d = net->model[net->layers - 1].d_in;
    float *hidden = malloc((size_t)(count > 0 ? count : 1) * (size_t)d * sizeof(float));
    if (!hidden)
        return attn_diag_set(err, "", "out of memory for %d rows of the residual stream", count);
    int rc = count > 0 ? logits_block(out, hidden, net, stream_of(net, layer), pos0, count) : 0;
    free(hidden);
    return rc ? attn_diag_set(err, "", "out of memory for the unembedding") : 0;
}

/* a ranks before b: a higher logit, or the same and a lower id. */
static bool ranks_before(const struct attn_token_score *a, const struct attn_token_score *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* The k best of a row in a heap whose root is the worst of them. */
static void sift_down(struct attn_token_score *heap, int size, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, worst = i;
        if (l < size && ranks_before(&heap[worst], &heap[l]))
            worst = l;
        if (r < size && ranks_before(&heap[worst], &heap[r]))
            worst = r;
        if (worst == i)
            return;
        struct attn_token_score t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

static void sift_up(struct attn_token_score *heap, int i)
{
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!ranks_before(&heap[parent], &heap[i]))
            return;
        struct attn_token_score t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

static int by_rank(const void *pa, const void *pb)
{
    const struct attn_token_score *a = pa, *b = pb;
    return ranks_before(a, b) ? -1 : ranks_before(b, a) ? 1 : 0;
}

/* ln sum_j exp((l_j - l_max) / T), in double, and l_max in *max. The maximum is subtracted
 * before the division, so every term is exp of a number <= 0 at any temperature above 0: l / T
 * itself overflows for a small enough T (a float logit of 1e30 at T = 1e-300). row: (vocab)
 * The terms are added in order, one libm exp each: the sum's bits are the outputs' (T = 1
 * divides by nothing, which is the same number). */
static double log_sum_exp_shifted(double *max, const float *row, int vocab, double temperature)
{
    float mf = -INFINITY; /* a float's maximum is one of them: no rounding, and it vectorises */
    for (int j = 0; j < vocab; j++)
        mf = row[j] > mf ? row[j] : mf;
    double m = mf, sum = 0;
    if (temperature == 1.0)
        for (int j = 0; j < vocab; j++)
            sum += exp(row[j] - m);
    else
        for (int j = 0; j < vocab; j++)
            sum += exp((row[j] - m) / temperature);
    *max = m;
    return log(sum);
}

/* The top k of a row into heap (k entries), highest first. Most of a row is below the k-th
 * best so far: one comparison with it skips the entry. */
static int top_of_row(struct attn_token_score *heap, int k, const float *row, int vocab)
{
    int size = 0;
    for (int j = 0; j < vocab && k > 0; j++) {
        if (size == k && row[j] < heap[0].logit)
            continue;
        struct attn_token_score c = {j, row[j], 0.0f};
        if (size < k) {
            heap[size] = c;
            sift_up(heap, size++);
        } else if (ranks_before(&c, &heap[0])) {
            heap[0] = c;
            sift_down(heap, size, 0);
        }
    }
    qsort(heap, (size_t)size, sizeof(*heap), by_rank);
    return size;
}

/* 1 + the entries of row that rank before entry t (ranks_before): counts the compiler
 * vectorises. */
static int rank_in_row(const float *row, int vocab, int t)
{
    float lt = row[t];
    int above = 0, ties = 0;
    for (int j = 0; j < vocab; j++)
        above += row[j] > lt;
    for (int j = 0; j < t; j++)
        ties += row[j] == lt;
    return 1 + above + ties;
}

/* Position i of out from its row of logits (vocab). Returns 0, or -1 when the row is not
 * finite (the caller says where). Rows are independent: each is one task of the pool. */
static int reduce_row(struct attn_predictions *out, int i, const float *row, int target)
{
    int vocab = out->vocab, k = out->k;
    double T = out->temperature, top, shift = log_sum_exp_shifted(&top, row, vocab, T);
    if (!isfinite(shift) || !isfinite(top))
        return -1;
    struct attn_token_score *heap = out->top + (size_t)i * (size_t)k;
    int size = top_of_row(heap, k, row, vocab);
    for (int j = 0; j < size; j++)
        heap[j].prob = (float)exp((heap[j].logit - top) / T - shift);
    out->next_id[i] = target;
    if (target < 0 || target >= vocab)
        return 0;
    out->next_rank[i] = rank_in_row(row, vocab, target);
    out->next_logit[i] = row[target];
    out->next_loss[i] = (top - row[target]) / T + shift;
    out->next_prob[i] = exp(-out->next_loss[i]);
    return 0;
}

void attn_predictions_free(struct attn_predictions *p)
{
    free(p->top);
    free(p->next_id);
    free(p->next_rank);
    free(p->next_logit);
    free(p->next_prob);
    free(p->next_loss);
    memset(p, 0, sizeof(*p));
}

/* What predict_stream predicts, named at each call. */
struct stream_query {
    int layer;              /* whose stream it is (out->layer) */
    struct attn_mat_view v; /* the stream (n, d), checked by the caller */
    int pos0, count;        /* the positions pos0 .. pos0 + count - 1 */
    int k;                  /* the top k of each (0: none) */
    double temperature;
    const int *targets; /* (n) the ids a position's next token is read from; NULL: the scene's */
    const int *scored;  /* (n) or NULL: the id each position is scored on (attn_loss_targets),
                           instead of the rule of targets */
};

/* The rows b0 .. b0 + m - 1 of out from a block of logits (m, vocab): one task a row. */
struct reduce_job {
    struct attn_predictions *out;
    const struct attn_net *net;
    const float *logits;
    const int *targets, *scored; /* as struct stream_query's, targets resolved */
    int b0, m;
    atomic_int first_bad; /* the first row that is not finite, or m */
};

static void reduce_task(void *ctx, int i, int slot)
{
    (void)slot;
    struct reduce_job *j = ctx;
    const struct attn_model *last = &j->net->model[j->net->layers - 1];
    int p = j->out->pos0 + j->b0 + i, n = last->n;
    int target = p + 1 < n ? j->targets[p + 1] : -1;
    /* a masked language model scores the token at p itself; at [MASK] it is unknown */
    if (last->masked_lm)
        target = j->targets[p] == last->mask_id ? -1 : j->targets[p];
    if (j->scored)
        target = j->scored[p];
    if (reduce_row(j->out, j->b0 + i, j->logits + (size_t)i * (size_t)last->vocab, target) == 0)
        return;
    int bad = atomic_load(&j->first_bad);
    while (i < bad && !atomic_compare_exchange_weak(&j->first_bad, &bad, i))
        ;
}

/* attn_predict of the stream q->v. */
static int predict_stream(struct attn_predictions *out, const struct attn_net *net,
                          const struct stream_query *q, struct diag *err)
{
    int layer = q->layer, pos0 = q->pos0, count = q->count, k = q->k;
    double temperature = q->temperature;
    const int *targets = q->targets, *scored = q->scored;
    if (!(temperature > 0) || !isfinite(temperature))
        return attn_diag_set(err, "", "the temperature must be a number above 0, not %g",
                             temperature);
    const struct attn_model *last = &net->model[net->layers - 1];
    int vocab = last->vocab, d = last->d_in;
    if (k < 0)
        k = 0;
    if (k > vocab)
        k = vocab;
    if (!targets)
        targets = net->model[0].ids;
    *out = (struct attn_predictions){.layer = layer,
                                     .pos0 = pos0,
                                     .count = count,
                                     .k = k,
                                     .vocab = vocab,
                                     .temperature = temperature};
    size_t c = (size_t)(count > 0 ? count : 1);
    int rows = block_rows(vocab, count > 0 ? count : 1);
    float *logits = malloc((size_t)rows * (size_t)vocab * sizeof(float));
    float *hidden = malloc((size_t)rows * (size_t)d * sizeof(float));
    out->top = calloc(c * (size_t)(k > 0 ? k : 1), sizeof(*out->top));
    out->next_id = calloc(c, sizeof(int));
    out->next_rank = calloc(c, sizeof(int));
    out->next_logit = calloc(c, sizeof(float));
    out->next_prob = calloc(c, sizeof(double));
    out->next_loss = calloc(c, sizeof(double));
    int rc = 0;
    if (!logits || !hidden || !out->top || !out->next_id || !out->next_rank || !out->next_logit ||
        !out->next_prob || !out->next_loss) {
        rc = attn_diag_set(err, "", "out of memory for the logits of %d positions", count);
        goto out;
    }
    for (int b0 = 0; b0 < count && rc == 0; b0 += rows) {
        int m = count - b0 < rows ? count - b0 : rows;
        if (logits_block(logits, hidden, net, q->v, pos0 + b0, m)) {
            rc = attn_diag_set(err, "", "out of memory for the unembedding");
            break;
        }
        struct reduce_job job = {.out = out,
                                 .net = net,
                                 .logits = logits,
                                 .targets = targets,
                                 .scored = scored,
                                 .b0 = b0,
                                 .m = m,
                                 .first_bad = m};
        attn_pool_run(m, 0, reduce_task, &job);
        int bad = atomic_load(&job.first_bad);
        if (bad < m)
            rc =
                attn_diag_set(err, "", "the logits at position %d are not finite", pos0 + b0 + bad);
    }
out:
    free(logits);
    free(hidden);
    if (rc)
        attn_predictions_free(out);
    return rc;
}

int attn_predict(struct attn_predictions *out, const struct attn_net *net, int layer, int pos0,
                 int count, int k, double temperature, const int *targets, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    if (check_request(net, layer, pos0, count, err))
        return -1;
    return predict_stream(out, net,
                          &(struct stream_query){.layer = layer,
                                                 .v = stream_of(net, layer),
                                                 .pos0 = pos0,
                                                 .count = count,
                                                 .k = k,
                                                 .temperature = temperature,
                                                 .targets = targets},
                          err);
}

int attn_predict_stream(struct attn_predictions *out, const struct attn_net *net,
                        const float *stream, int pos0, int count, int k, double temperature,
                        const int *targets, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    int last = net->layers - 1;
    if (check_request(net, last, pos0, count, err))
        return -1;
    int d = net->model[last].d_in;
    return predict_stream(out, net,
                          &(struct stream_query){.layer = last,
                                                 .v = {stream, net->model[last].n, d, d},
                                                 .pos0 = pos0,
                                                 .count = count,
                                                 .k = k,
                                                 .temperature = temperature,
                                                 .targets = targets},
                          err);
}

int attn_net_masks(const struct attn_net *net, int *first)
{
    int count = 0;
    if (first)
        *first = -1;
    if (!last_masked_lm(net) || !net->model[0].ids)
        return 0;
    const struct attn_model *m = &net->model[0];
    int mask = net->model[net->layers - 1].mask_id;
    for (int i = 0; i < m->n; i++)
        if (m->ids[i] == mask && mask >= 0) {
            if (first && *first < 0)
                *first = i;
            count++;
        }
    return count;
}

int attn_loss_targets(int *scored, const struct attn_net *net, const int *answers, int n_answers,
                      struct diag *err)
{
    if (!attn_net_has_vocab(net))
        return attn_diag_set(err, "", "the scene has no vocabulary model (no unembedding)");
    const struct attn_model *m = &net->model[0], *last = &net->model[net->layers - 1];
    int n = m->n, masks = attn_net_masks(net, NULL);
    if (answers && !last->masked_lm)
        return attn_diag_set(err, "",
                             "answers are for the [MASK]s of a masked language model (BERT); "
                             "this model predicts the next token, which the text gives");
    if (answers && masks == 0)
        return attn_diag_set(err, "",
                             "the text has no [MASK] to answer: each position scores its own "
                             "token");
    if (answers && n_answers != 1 && n_answers != masks)
        return attn_diag_set(err, "", "%d answers for %d [MASK]s: give one for all, or one each",
                             n_answers, masks);
    for (int i = 0; answers && i < n_answers; i++)
        if (answers[i] < 0 || answers[i] >= last->vocab)
            return attn_diag_set(err, "", "token id %d is outside the vocabulary (0 to %d)",
                                 answers[i], last->vocab - 1);
    if (!last->masked_lm) {
        for (int i = 0; i < n; i++)
            scored[i] = i + 1 < n ? m->ids[i + 1] : -1;
        return 0;
    }
    if (masks == 0) {
        memcpy(scored, m->ids, (size_t)n * sizeof(int));
        return 0;
    }
    for (int i = 0, j = 0; i < n; i++) {
        scored[i] = -1;
        if (m->ids[i] != last->mask_id)
            continue;
        if (answers) {
            scored[i] = answers[n_answers == 1 ? 0 : j++];
            continue;
        }
        struct attn_predictions p;
        if (attn_predict(&p, net, net->layers - 1, i, 1, 1, 1.0, NULL, err))
            return -1;
        scored[i] = p.top[0].id;
        attn_predictions_free(&p);
    }
    return 0;
}

/* *scored = *own = the tokens the net's loss scores (attn_loss_targets), n of them, allocated
 * here for a caller that was given none. Returns 0, or -1 with err. */
static int own_targets(int **own, const int **scored, const struct attn_net *net, int n,
                       struct diag *err)
{
    if (!(*own = malloc((size_t)(n > 0 ? n : 1) * sizeof(int))))
        return attn_diag_set(err, "", "out of memory for the scored tokens");
    if (attn_loss_targets(*own, net, NULL, 0, err)) {
        free(*own);
        *own = NULL;
        return -1;
    }
    *scored = *own;
    return 0;
}

int attn_mean_loss(double *out, const struct attn_net *net, const int *scored, int a, int b,
                   struct diag *err)
{
    int n = net->layers > 0 ? net->model[0].n : 0;
    if (a < 0 || b > n || a >= b)
        return attn_diag_set(err, "", "positions %d to %d: the loss needs 0 <= first < last <= %d",
                             a, b - 1, n - 1);
    int *own = NULL;
    if (!scored && own_targets(&own, &scored, net, n, err))
        return -1;
    int count = 0;
    for (int i = a; i < b; i++)
        count += scored[i] >= 0;
    int rc = 0;
    if (count == 0) {
        rc = attn_diag_set(err, "", "positions %d to %d score no token (%s)", a, b - 1,
                           last_masked_lm(net) ? "a masked LM scores its [MASK]s, or every "
                                                 "token of a text without one"
                                               : "the last position has no next token");
    } else {
        /* the scored positions a .. b - 1 in one pass of blocks; the others cost a row each */
        struct attn_predictions p;
        const struct attn_model *lm = &net->model[net->layers - 1];
        int last = net->layers - 1;
        if (check_request(net, last, a, b - a, err) ||
            predict_stream(&p, net,
                           &(struct stream_query){.layer = last,
                                                  .v = stream_of(net, last),
                                                  .pos0 = a,
                                                  .count = b - a,
                                                  .temperature = 1.0,
                                                  .scored = scored},
                           err)) {
            rc = -1;
        } else {
            double sum = 0;
            for (int i = 0; i < p.count; i++)
                sum += scored[a + i] >= 0 && scored[a + i] < lm->vocab ? p.next_loss[i] : 0;
            *out = sum / count;
            attn_predictions_free(&p);
        }
    }
    free(own);
    return rc;
}

const char *attn_metric_name(enum attn_metric_kind k)
{
    switch (k) {
    case METRIC_LOGIT_DIFF:
        return "logit_diff";
    case METRIC_PROB:
        return "prob";
    case METRIC_LOSS:
        return "loss";
    }
    return "?";
}

int attn_metric_position(const struct attn_net *net)
{
    int first;
    if (!last_masked_lm(net))
        return net->layers > 0 ? net->model[0].n - 1 : -1;
    attn_net_masks(net, &first);
    return first;
}

int attn_metric_eval(double *out, const struct attn_net *net, const struct attn_metric *metric,
                     struct diag *err)
{
    if (!attn_net_has_vocab(net))
        return attn_diag_set(err, "", "the scene has no vocabulary model (no unembedding)");
    const struct attn_model *last = &net->model[net->layers - 1];
    int n = last->n, vocab = last->vocab;
    if (metric->kind == METRIC_LOSS)
        return attn_mean_loss(out, net, metric->scored, 0, n, err);
    int pos = metric->position >= 0 ? metric->position : attn_metric_position(net);
    if (pos < 0)
        return attn_diag_set(err, "",
                             "the text has no [MASK] for the metric to read: give a position");
    if (pos >= n)
        return attn_diag_set(err, "", "position %d: the scene has %d tokens (0 to %d)", pos, n,
                             n - 1);
    int need = metric->kind == METRIC_LOGIT_DIFF ? 2 : 1;
    int ids[2] = {metric->a, metric->b};
    for (int i = 0; i < need; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return attn_diag_set(err, "", "token id %d is outside the vocabulary (0 to %d)", ids[i],
                                 vocab - 1);
    float *row = malloc((size_t)vocab * sizeof(float));
    if (!row)
        return attn_diag_set(err, "", "out of memory");
    int rc = attn_logits(row, net, net->layers - 1, pos, 1, err);
    if (rc == 0) {
        if (metric->kind == METRIC_LOGIT_DIFF)
            *out = (double)row[metric->a] - (double)row[metric->b];
        else {
            double top, shift = log_sum_exp_shifted(&top, row, vocab, 1.0);
            *out = exp((double)row[metric->a] - (top + shift));
        }
    }
    free(row);
    return rc;
}

int attn_ablate_sweep(double *loss, double *clean, struct attn_net *net, enum attn_head_mode mode,
                      const int *scored, int a, int b, struct diag *err)
{
    int n = net->layers > 0 ? net->model[0].n : 0, *own = NULL;
    /* the net's own answers, before any head of the sweep is off */
    if (!scored && n > 0 && own_targets(&own, &scored, net, n, err))
        return -1;
    if (attn_mean_loss(clean, net, scored, a, b, err)) {
        free(own);
        return -1;
    }
    int rc = 0;
    for (int L = 0; L < net->layers && rc == 0; L++) {
        int heads = net->model[L].heads;
        for (int h = 0; h < heads && rc == 0; h++) {
            enum attn_head_mode was = (enum attn_head_mode)net->model[L].head_mode[h];
            attn_net_set_head(net, L, h, mode, NULL);
            attn_net_forward_from(net, L);
            rc = attn_mean_loss(&loss[L * heads + h], net, scored, a, b, err);
            attn_net_set_head(net, L, h, was, NULL);
        }
        attn_net_forward_from(net, L); /* the next layer reads this one as it was */
    }
    free(own);
    return rc;
}

int attn_patch_sweep(double *recovered, double *m_clean, double *m_corrupt,
                     struct attn_net *corrupt, const struct attn_net *clean,
                     const struct attn_metric *metric, struct diag *err)
{
    if (clean->layers != corrupt->layers)
        return attn_diag_set(err, "", "the clean run has %d layers, the corrupted one %d",
                             clean->layers, corrupt->layers);
    for (int L = 0; L < clean->layers; L++) {
        const struct attn_model *c = &clean->model[L], *x = &corrupt->model[L];
        if (c->heads != x->heads || c->n != x->n || c->D != x->D)
            return attn_diag_set(
                err, "",
                "layer %d differs: the clean run has %d heads x %d tokens x %d, the "
                "corrupted one %d x %d x %d",
                L, c->heads, c->n, c->D, x->heads, x->n, x->D);
    }
    /* the clean run says where logit_diff and prob read and what the loss scores */
    struct attn_metric given = *metric;
    int n = clean->model[0].n, *own = NULL;
    if (given.kind != METRIC_LOSS && given.position < 0 &&
        (given.position = attn_metric_position(clean)) < 0)
        return attn_diag_set(err, "",
                             "the clean text has no [MASK] for the metric to read: give a "
                             "position");
    if (given.kind == METRIC_LOSS && !given.scored) {
        if (!(own = malloc((size_t)n * sizeof(int))))
            return attn_diag_set(err, "", "out of memory for the scored tokens");
        if (attn_loss_targets(own, clean, NULL, 0, err)) {
            free(own);
            return -1;
        }
        given.scored = own;
    }
    metric = &given;
    int rc = 0;
    if (attn_metric_eval(m_clean, clean, metric, err) ||
        attn_metric_eval(m_corrupt, corrupt, metric, err))
        rc = -1;
    double span = *m_clean - *m_corrupt;
    if (rc == 0 && span == 0)
        rc = attn_diag_set(err, "",
                           "the metric is %g in both runs: there is no difference for a head to "
                           "recover",
                           *m_clean);
    for (int L = 0; L < corrupt->layers && rc == 0; L++) {
        int heads = corrupt->model[L].heads;
        const float *was_patch = corrupt->model[L].patch;
        for (int h = 0; h < heads && rc == 0; h++) {
            enum attn_head_mode was = (enum attn_head_mode)corrupt->model[L].head_mode[h];
            attn_net_set_head(corrupt, L, h, HEAD_PATCH, clean->run[L].concat);
            attn_net_forward_from(corrupt, L);
            double m;
            rc = attn_metric_eval(&m, corrupt, metric, err);
            recovered[L * heads + h] = (m - *m_corrupt) / span;
            attn_net_set_head(corrupt, L, h, was, was_patch);
            corrupt->model[L].patch = was_patch;
        }
        attn_net_forward_from(corrupt, L);
    }
    free(own);
    return rc;
}
