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

/* *out = the mean next-token loss (-ln p at temperature 1) of the model over positions
 * a .. b - 1, each predicting targets[i + 1] (NULL: the scene's own ids); 0 <= a < b <= n - 1.
 * The quantity ablate and patch compare. Returns 0, or -1 with err. */
int attn_mean_loss(double *out, const struct attn_net *net, const int *targets, int a, int b,
                   struct diag *err);

/* A number the patching experiment measures on the model's output (TransformerLens's IOI
 * tutorial: a logit difference). */
enum attn_metric_kind {
    METRIC_LOGIT_DIFF, /* logit(a) - logit(b) at the last position */
    METRIC_PROB,       /* softmax probability of a at the last position */
    METRIC_LOSS,       /* attn_mean_loss over positions 0 .. n - 2 */
};
struct attn_metric {
    enum attn_metric_kind kind;
    int a, b;           /* token ids (LOGIT_DIFF: both, PROB: a) */
    const int *targets; /* LOSS: the ids predicted (n), or NULL for the scene's own */
};
/* "logit_diff", "prob", "loss". */
const char *attn_metric_name(enum attn_metric_kind k);
/* *out = the metric on the net as it is computed. Returns 0, or -1 with err. */
int attn_metric_eval(double *out, const struct attn_net *net, const struct attn_metric *metric,
                     struct diag *err);

/* Head ablation, one head at a time: for every layer L and head h (in that order), h's context
 * replaced by mode (HEAD_ZERO or HEAD_MEAN) on top of what the net already ablates, everything
 * after recomputed, and loss[L * heads + h] = the mean loss over positions a .. b - 1; the head
 * is then restored. *clean gets the loss of the net as given. net is left as it was (recomputed
 * once more at the end). Returns 0, or -1 with err. */
int attn_ablate_sweep(double *loss /*(layers, heads)*/, double *clean, struct attn_net *net,
                      enum attn_head_mode mode, int a, int b, struct diag *err);

/* Activation patching: for every layer L and head h, h's context in `corrupt` replaced by the
 * same head's context of `clean` (at every position), everything after recomputed, and
 * recovered[L * heads + h] = (M_patched - M_corrupt) / (M_clean - M_corrupt): 0 no effect, 1 the
 * whole difference. The nets must have the same shape (layers, heads, tokens, width); clean
 * must be the net the patches come from, computed. m_clean, m_corrupt get the metric of each
 * run. corrupt is left as it was. Returns 0, or -1 with err (among others when the two runs
 * give the same metric: nothing to recover). */
int attn_patch_sweep(double *recovered /*(layers, heads)*/, double *m_clean, double *m_corrupt,
                     struct attn_net *corrupt, const struct attn_net *clean,
                     const struct attn_metric *metric, struct diag *err);

#endif
