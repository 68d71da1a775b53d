/* logits: what the model predicts, and what a head does for it.
 *
 * A scene with a vocabulary model (attn_scene_has_vocab: a checkpoint) ends in an unembedding:
 * the logits of position i are final_norm(h_i) . U^T, U the checkpoint's lm_head.weight, or its
 * wte when they are tied (model.h: the last layer's unembed, (vocab, d_in)). Logits are n x vocab
 * (1024 x 50257 floats is 206 MB), so they never exist whole: they are computed in blocks of
 * positions (at most SCENE_LOGITS_BLOCK_FLOATS floats, 16 MiB) with OpenBLAS, and each row is
 * reduced at once to what a view or command needs: the top k, and the probability, rank and
 * loss of the actual next token. What is kept is O(count * k).
 *
 * The same path serves the logit lens (nostalgebraist 2020, Ecco): any layer's residual stream
 * (its block output) through the final norm and the unembedding.
 *
 * Ablation (zero or mean) and activation patching replace one head's context before out_proj
 * (net.h, attn_net_set_head) and recompute the layers from there; the sweeps below do that for
 * every head in turn and measure it, as TransformerLens's tutorials do.
 */
#ifndef ATTNSCOPE_LOGITS_H
#define ATTNSCOPE_LOGITS_H

#include <stdbool.h>

#include "common/diag.h"
#include "engine/net.h"

/* One entry of a top-k list. */
struct attn_token_score {
    int id;
    float logit; /* the raw logit (before the temperature) */
    float prob;  /* softmax(logits / T) */
};

/* Predictions at positions pos0 .. pos0 + count - 1 of one layer's residual stream. */
struct attn_predictions {
    int layer;          /* the residual stream read: net->layers - 1 is the model's output */
    int pos0, count, k; /* k entries of top per position (fewer when vocab < k) */
    int vocab;
    double temperature;
    struct attn_token_score *top;  /* (count, k) highest logit first; ties: lower id first */
    int *next_id;                  /* (count) the target at position + 1, -1 at the last one */
    int *next_rank;                /* (count) 1-based, in the top's order; 0 without a target */
    float *next_logit;             /* (count) */
    double *next_prob, *next_loss; /* (count) p and -ln p at the temperature; 0 without target */
};

/* True when the net's last layer has an unembedding (its scene has a vocabulary model). */
bool attn_net_has_vocab(const struct attn_net *net);

/* out (count, vocab) = the logits of positions pos0 .. pos0 + count - 1 of layer's residual
 * stream: its block output (attention output without a block), through the last layer's final
 * norm (when the scene has one), times unembed^T. count * vocab floats: a block, for tests and
 * small vocabularies. Returns 0, or -1 with err. */
int attn_logits(float *out, const struct attn_net *net, int layer, int pos0, int count,
                struct diag *err);

/* The predictions of layer's residual stream at positions pos0 .. pos0 + count - 1 (see
 * attn_logits), at a temperature T > 0: the top k (k = 0: none) and the probability of each
 * position's next token, targets[i + 1] (targets: n ids, or NULL for the scene's own). Logits
 * are computed a block at a time and never kept. out must be zeroed or freed; on failure it is
 * left empty. Returns 0, or -1 with err (no vocabulary model, a range out of bounds, out of
 * memory). */
int attn_predict(struct attn_predictions *out, const struct attn_net *net, int layer, int pos0,
                 int count, int k, double temperature, const int *targets, struct diag *err);
/* attn_predict of the last layer, reading its residual stream from `stream` (n, d_in) instead
 * of the net's own: the block output of another run of the same net, kept by the caller (the
 * explorer keeps the run without its ablations, for "before -> after"). Everything after the
 * stream (the final norm, the unembedding) is the net's. */
int attn_predict_stream(struct attn_predictions *out, const struct attn_net *net,
                        const float *stream, int pos0, int count, int k, double temperature,
                        const int *targets, struct diag *err);
void attn_predictions_free(struct attn_predictions *p);
/* The top k entries of position pos0 + i. */
static inline const struct attn_token_score *attn_predictions_top(const struct attn_predictions *p,
                                                                  int i)
{
    return p->top + (size_t)i * (size_t)p->k;
}

/* What a loss scores on a masked language model (BERT, model.h's masked_lm) and on a next-token
 * one, in one rule that ablate, patch and the explorer share:
 *   next-token (GPT-2, Llama):  position i scores the text's next token, ids[i + 1]; the last
 *                               position scores nothing;
 *   masked LM, the text has [MASK]s: each [MASK] position scores an answer: the token the net
 *                               as given ranks first there (its own answer: how sure it stays of
 *                               it when a head is switched off), or the answers given; the other
 *                               positions score nothing (they see their own token: copying it
 *                               is no prediction);
 *   masked LM without a [MASK]: every position scores its own token, ids[i].
 * scored (n) gets the id each position scores, or -1. answers: NULL (the net's own), or
 * n_answers ids: one for every [MASK], or as many as the text has [MASK]s, in order; only a
 * masked LM with [MASK]s takes them. Returns 0, or -1 with err. */
int attn_loss_targets(int *scored /*(n)*/, const struct attn_net *net, const int *answers,
                      int n_answers, struct diag *err);
/* The number of [MASK] positions of a masked LM's text (0 for a next-token model), and the
 * first of them in *first (-1 without one; first may be NULL). */
int attn_net_masks(const struct attn_net *net, int *first);

/* *out = the mean loss (-ln p at temperature 1) of the positions i in a .. b - 1 that score a
 * token, scored[i] >= 0 (scored: (n), from attn_loss_targets; NULL: attn_loss_targets of the
 * net as it is, without answers); 0 <= a < b <= n. The quantity ablate and patch compare.
 * Returns 0, or -1 with err (among others when no position of the range scores a token). */
int attn_mean_loss(double *out, const struct attn_net *net, const int *scored, int a, int b,
                   struct diag *err);

/* A number the patching experiment measures on the model's output (TransformerLens's IOI
 * tutorial: a logit difference). */
enum attn_metric_kind {
    METRIC_LOGIT_DIFF, /* logit(a) - logit(b) at the metric's position */
    METRIC_PROB,       /* softmax probability of a there */
    METRIC_LOSS,       /* attn_mean_loss over every position */
};
struct attn_metric {
    enum attn_metric_kind kind;
    int a, b;          /* token ids (LOGIT_DIFF: both, PROB: a) */
    int position;      /* LOGIT_DIFF, PROB: the position read; -1: attn_metric_position's */
    const int *scored; /* LOSS: (n) what each position scores (attn_loss_targets of the clean
                          run), or NULL: the clean run's own (in attn_metric_eval: the net's) */
};
/* "logit_diff", "prob", "loss". */
const char *attn_metric_name(enum attn_metric_kind k);
/* The position logit_diff and prob read by default: the last one on a next-token model (what
 * comes after the text), the first [MASK] on a masked LM (what fills it; -1 without one). */
int attn_metric_position(const struct attn_net *net);
/* *out = the metric on the net as it is computed. Returns 0, or -1 with err. */
int attn_metric_eval(double *out, const struct attn_net *net, const struct attn_metric *metric,
                     struct diag *err);

/* Head ablation, one head at a time: for every layer L and head h (in that order), h's context
 * replaced by mode (HEAD_ZERO or HEAD_MEAN) on top of what the net already ablates, everything
 * after recomputed, and loss[L * heads + h] = attn_mean_loss(scored, a, b); the head is then
 * restored. scored: (n) from attn_loss_targets, or NULL: attn_loss_targets of the net as given,
 * before any head of the sweep is ablated. *clean gets the loss of the net as given. net is
 * left as it was (recomputed once more at the end). Returns 0, or -1 with err. */
int attn_ablate_sweep(double *loss /*(layers, heads)*/, double *clean, struct attn_net *net,
                      enum attn_head_mode mode, const int *scored, int a, int b, struct diag *err);

/* Activation patching: for every layer L and head h, h's context in `corrupt` replaced by the
 * same head's context of `clean` (at every position), everything after recomputed, and
 * recovered[L * heads + h] = (M_patched - M_corrupt) / (M_clean - M_corrupt): 0 no effect, 1 the
 * whole difference. The nets must have the same shape (layers, heads, tokens, width); clean
 * must be the net the patches come from, computed. The metric's defaults (position -1, scored
 * NULL) are read from the clean run. m_clean, m_corrupt get the metric of each run. corrupt is
 * left as it was. Returns 0, or -1 with err (among others when the two runs give the same
 * metric: nothing to recover). */
int attn_patch_sweep(double *recovered /*(layers, heads)*/, double *m_clean, double *m_corrupt,
                     struct attn_net *corrupt, const struct attn_net *clean,
                     const struct attn_metric *metric, struct diag *err);

#endif
