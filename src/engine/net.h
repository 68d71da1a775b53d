/* net: a scene's whole computation, layer after layer.
 *
 * A scene with `layers: N` stacks N layers of attention (and block); layer L + 1 reads what
 * layer L hands on (attn_stage_block_output). struct attn_net owns one model and one run per
 * layer; everything that shows one layer (print, export, the explorer) works on
 * net->model[L] and net->run[L] with the single-layer API of attention.h.
 */
#ifndef ATTNSCOPE_NET_H
#define ATTNSCOPE_NET_H

#include "engine/attention.h"
#include "engine/model.h"

struct attn_net {
    int layers;
    struct attn_model *model; /* (layers) */
    struct attn_run *run;     /* (layers) */
    /* What the models were made from, so an edit that changes only options that draw nothing
     * (dropout, the mask, the scale) copies their numbers instead of drawing them again. */
    struct attn_scene *from;
    struct attn_rng after_params; /* the generator before the dropout draws */
    /* Told of every head the forward pass finishes (every layer's, in order); kept by
     * attn_net_compute. step NULL: no feedback. Its stop flag ends a compute early, when it can
     * leave the previous result whole (see keep_previous). */
    struct progress_sink progress;
    /* The next attn_net_compute allocates every buffer afresh instead of taking over the
     * previous result's (which a live edit normally reuses): a compute stopped half-way then
     * leaves the previous result exactly as it was, at the price of two results in memory for
     * a moment. Without it, the stop flag is not read once a buffer was taken over. A compute
     * that keeps rows or layers of the previous result (a sentence edit, an edit of the options
     * that changes a later layer only) takes its buffers over all the same: copying what it
     * keeps would cost more than what it computes. */
    bool keep_previous;
    /* The rows of every layer the last attn_net_compute kept from the result before it (a
     * sentence edit of a causal net: the rows before the panel of the first changed token, or
     * on the near path before that token), 0 when it computed every row. */
    int kept_rows;
    /* A forward pass was stopped half-way: the stages are incomplete, and no edit keeps rows
     * of them. */
    bool partial;
    /* Layers 0 .. layers_ready - 1 are computed: the forward pass moves it on as each layer is
     * done, with release order, so another thread that reads it (attn_net_layers_ready) may read
     * those layers' models and runs while the pass writes the later ones. */
    int layers_ready;
    /* After attn_net_prepare: the row the pending forward pass starts at (the rows kept),
     * whether the models borrow the previous net's parameters until attn_net_commit, and
     * whether the previous result's buffers moved over (then it is gone whatever happens). */
    int pending_row;
    bool shares, moved;
    /* The first layer the last compute computed (an edit of the options keeps those before the
     * first it changes: an ablation of layer 9 recomputes 9 on), 0 for every layer. */
    int first_layer;
    /* Set by the caller (false when zeroed: the commands, the library and the tests keep the
     * panels): a sentence edit whose first changed row r has n - r <= ATTN_NEAR_ROWS may take
     * the near path, rows r .. n - 1 of every layer as one block (attn_forward_rows_near), the
     * cost of those rows instead of their 128-row panel. Kept by attn_net_compute. */
    bool near_ok;
    /* -1: every number is a fresh computation's, bit for bit. Else the first row the near path
     * computed (every layer; the earliest of the edits since the last exact result): the rows
     * from its panel on may differ from a fresh computation's in the last places, within
     * test_causal's tolerance. attn_net_forward_exact makes them exact. */
    int near_from;
    /* Stream mode, for a caller that shows one layer at a time (the explorer): the stage sets
     * (attention.h's attn_run_init_stream: a layer's queries, n x n stages and FFN) may take
     * stage_budget bytes (0: every layer keeps its own, as the commands, the library and the
     * tests want). When that is fewer sets than layers, stage_layers (at least 2) layers hold
     * one at a time: each layer keeps only its input, its keys and values and what it hands
     * on, and a layer shown again is recomputed from its input (attn_net_materialise), with the
     * same calls, so the same bits. At GPT-2 small's 12 layers of 1,016 tokens a set is 141 MB.
     * Set by the caller, kept by every compute; stage_layers is the compute's (0: off). */
    size_t stage_budget;
    int stage_layers;
    /* The layer a pass never takes a set from (the one shown; -1 none): the caller sets it
     * while no pass runs. */
    int stage_pin;
    unsigned char *held;        /* (layers) layer L's set holds its stages, whole: atomic */
    unsigned long *used, clock; /* (layers) when each layer last took or used its set */
    struct attn_run scratch;    /* attn_net_materialise writes the buffers outside the set here */
    /* An encoder-decoder's source side (scene.encoder), computed whole before this net's pass:
     * its output is the keys and values of this net's cross-attention layers. NULL: none. */
    struct attn_net *encoder;
    bool is_encoder; /* this net is an encoder-decoder's encoder (its layers' names say so) */
};

/* The near path's most rows (net.near_ok): an appended or edited last word or two in any
 * tokenizer (a character tokenizer's word is its letters), and no more, so that the rows whose
 * bits are not the panels' stay few. A block reads every weight matrix once, as one row does: at
 * 1,016 tokens of GPT-2 small's shape (bench/near_edit) 1 row took 19 ms (OpenBLAS's small-matrix
 * kernels, no packing), 6 and 16 rows 72 ms, the panels from the same first row 87 to 123 ms. */
#define ATTN_NEAR_ROWS 16

/* Layer L as a person reads it, into out: "layer 3" ("L3" brief); an encoder-decoder's
 * decoder's "decoder layer 1, cross-attention" ("L1 cross" brief: the engine's layer 3). */
void attn_net_layer_name(char *out, size_t size, const struct attn_net *net, int L, bool brief);
/* The most floats a (n, n_kv) stage of one head of any layer of net holds: the room a derived
 * stage is computed into (attn_view_buf). */
size_t attn_net_square_floats(const struct attn_net *net);
/* What the net's last layer hands out: its final norm, or its block output. (n, d_in) */
struct attn_mat_view attn_net_output(const struct attn_net *net);
/* Resolves every layer of s, sizes the runs (keeping buffers whose shape is unchanged) and
 * runs the forward pass. When s is net's scene with another sentence and the net is causal
 * (attn_rows_reusable: no dropout, no ablation), only the rows from the panel holding the first
 * token whose inputs changed are computed, bit for bit what a fresh computation gives (the
 * panels, attention.h); the rows before it are moved over or copied, never recomputed. With
 * near_ok and at most ATTN_NEAR_ROWS rows from that token on, only they are computed (the near
 * path, near_from). net must be zeroed or valid; on failure, or when stopped (err "stopped
 * before the end"), it is left as it was. */
int attn_net_compute(struct attn_net *net, const struct attn_scene *s, struct diag *err);
/* attn_net_compute in parts, for a caller that computes in a thread of its own while it shows
 * the layers done (the explorer). attn_net_prepare does all but the forward pass into *fresh:
 * s's models resolved (sharing net's parameters as attn_net_compute does), the runs sized, the
 * rows a sentence edit keeps moved or copied. net keeps what fresh borrows (its parameters, and
 * with keep_previous its whole result: fresh->moved false) until attn_net_commit; on failure net
 * is as it was. attn_net_forward_pending runs fresh's pass (on any one thread), moving
 * layers_ready on layer by layer: 0, or -1 when the sink's stop flag ended it (fresh stays
 * partial: the next prepare from it computes every row). attn_net_commit makes fresh net's
 * result, through or stopped, and frees the old one; attn_net_discard drops fresh instead,
 * leaving net's result as it was, whole when fresh->moved is false. Bit for bit what
 * attn_net_compute gives. */
int attn_net_prepare(struct attn_net *fresh, struct attn_net *net, const struct attn_scene *s,
                     struct diag *err);
int attn_net_forward_pending(struct attn_net *fresh);
void attn_net_commit(struct attn_net *net, struct attn_net *fresh);
void attn_net_discard(struct attn_net *fresh);
/* How many layers are computed (0 .. layers), as layers_ready, read with acquire order: what
 * the pass wrote to those layers is visible to the thread that reads it. */
int attn_net_layers_ready(const struct attn_net *net);

/* Whether layer L's stages can be read (the set it holds is whole): true in full mode for a
 * computed layer; in stream mode read with acquire order, and during a pass only meaningful for
 * stage_pin (the pass may take any other layer's set). */
bool attn_net_layer_held(const struct attn_net *net, int L);
/* Layer L's stages recomputed from its input into a set (taken from the layer least recently
 * used, never stage_pin), bit for bit what the pass made; its own keys, values and output are
 * not written (another thread may read them). A no-op when held. Returns 0, or -1 with err on
 * out-of-memory. */
int attn_net_materialise(struct attn_net *net, int L, struct diag *err);

/* When near_from >= 0: every layer again from near_from's panel on, the panels' exact path
 * (attn_net_forward_rows), so that every number is a fresh computation's bit for bit; near_from
 * is -1 after. What hands numbers out of the program (an export) calls it first. About a
 * panel's rows of every layer; not stopped by the sink's stop flag (its rows are rewritten in
 * place). Returns 0. */
int attn_net_forward_exact(struct attn_net *net);
/* What attn_net_compute_lean calls after each layer's forward pass, with the net as it then
 * is. Returns 0 to go on, or -1 with err to stop the compute. */
typedef int (*attn_net_visit)(void *ctx, const struct attn_net *net, int layer, struct diag *err);
/* attn_net_compute for a caller that reads each layer once, as it is computed (heads, export,
 * predict): every layer shares layer 0's buffers for the stages only read while a layer is
 * current (attn_run_init_sharing: the projections, the n x n stages, the FFN's), so memory
 * holds one layer's scores and weights instead of every layer's (1.2 GB at GPT-2 small's
 * 12 x 12 heads and 1,024 tokens), and fresh pages are zeroed once, not per layer. visit (NULL:
 * none) sees layer L with its every stage current; an earlier layer keeps only what it hands on
 * (its block output, the residual stream), its concatenated heads and its final norm.
 * Afterwards the net is the last visit's; predictions, the lens, ablation and patching
 * (attn_net_forward_from) work on it. net must be zeroed or valid; on failure it is left as it
 * was. */
int attn_net_compute_lean(struct attn_net *net, const struct attn_scene *s, attn_net_visit visit,
                          void *ctx, struct diag *err);
/* Rows first_row .. n - 1 of what the layer of m and r hands on (its block output, d wide),
 * into x (n, d): the next layer's input, as the forward pass feeds it. */
void attn_net_handed_on(float *x, int d, const struct attn_run *r, const struct attn_model *m,
                        int first_row);
/* The forward pass of every layer, in order. Never allocates. Returns 0, or -1 when the sink's
 * stop flag ended it (the stages are incomplete). */
int attn_net_forward(struct attn_net *net);

/* The forward pass of every layer from row first_row on (attn_forward_rows): the rows before
 * it, and every layer's input rows before it, are kept. Never allocates. A pass that ends with
 * no near row left (from row 0, or from near_from's panel or before) sets near_from to -1. */
int attn_net_forward_rows(struct attn_net *net, int first_row);
/* Both: layers first .. layers - 1, rows first_row .. n - 1 of each. */
int attn_net_forward_layers(struct attn_net *net, int first, int first_row);
/* A compute estimated past this many seconds is announced (commands say how long, the
 * explorer's bar says it can be stopped). */
#define ATTN_LONG_SECONDS 2.0
/* How long attn_net_compute of s would take here: its multiply-adds (attn_scene_flops) at the
 * speed this machine multiplies matrices (attn_measured_gflops, measured only for scenes over a
 * second's worth at 1 GFLOP/s: most never pay for it). Seconds. */
double attn_net_estimate_seconds(const struct attn_scene *s);
/* The same for s computed after net's result: a sentence edit of a causal net computes the rows
 * from the panel of the first changed token only (attn_net_compute; with near_ok, the near
 * path's rows), about that share of it. */
double attn_net_estimate_edit_seconds(const struct attn_net *net, const struct attn_scene *s);
/* The forward pass of layers first .. layers - 1 only: what an ablation or a patch of layer
 * `first` changes (the layers before it are as they were). Never allocates. Returns 0, or -1
 * when the sink's stop flag ended it. */
int attn_net_forward_from(struct attn_net *net, int first);
/* What head h of layer L hands to out_proj from now on: HEAD_KEEP (its context), HEAD_ZERO,
 * HEAD_MEAN, or HEAD_PATCH with patch (n, D), another run's concat of the same shape, whose
 * head-h columns it takes (net only borrows it). Recomputes nothing: call
 * attn_net_forward_from(net, L). The scene's ablate: list sets these when the net is
 * computed; this is the cheap toggle for sweeps and the explorer. */
void attn_net_set_head(struct attn_net *net, int layer, int head, enum attn_head_mode mode,
                       const float *patch);
/* Attention rollout (Abnar & Zuidema 2020) up to layer `last`: per layer the heads' mean
 * attention weights A (the softmax stage), A' = 0.5 A + 0.5 I with its rows renormalised,
 * multiplied from layer 0 on: out = A'_last ... A'_1 A'_0. Row i says how much of position
 * i's representation after layer `last` comes from each input token. out: (n, n). Returns 0,
 * or -1 with err on out-of-memory. */
int attn_net_rollout(float *out, const struct attn_net *net, int last, struct diag *err);
/* One layer of it: out (n, n) = A'_layer . prev, or A'_layer itself when prev is NULL (layer
 * 0). out and prev must differ. A caller that wants every layer's rollout walks this. */
int attn_net_rollout_step(float *out, const float *prev, const struct attn_net *net, int layer,
                          struct diag *err);
/* The first value of the last forward pass that is not a number (attn_run's nonfinite), in
 * layer order: a later layer's come from an earlier one's. Its layer in *layer (may be NULL).
 * NULL when every value of every layer is a number. */
const struct attn_nonfinite *attn_net_nonfinite(const struct attn_net *net, int *layer);
/* Where, in words, into out: "nan at layer 0, head 1, queries_rotated, row 2 (“cat”), column 5"
 * ("inf", "-inf"; no head for a stage the heads share). false, out "", when there is none. */
bool attn_net_nonfinite_text(char *out, size_t size, const struct attn_net *net);
void attn_net_free(struct attn_net *net);

#endif
