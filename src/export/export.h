/* export: CSV or .npy files and PyTorch-style text for the stages of a forward pass.
 *
 * The export layout is a contract other tools read (README.md ("Export format")):
 *   DIR/scene.yaml, DIR/tokens.csv, DIR/inputs.csv, DIR/params/<name>.csv,
 *   DIR/head<H>/<stage>.csv, DIR/context.csv, DIR/output.csv (DIR/layer<L>/... for each layer
 *   of a scene with several), DIR/.attnscope-export (the marker: every path the export wrote);
 *   every file written atomically. With EXPORT_NPY each matrix is a
 *   .npy of the same name and shape instead (float32, little-endian, C order); tokens.csv and
 *   scene.yaml stay as they are.
 */
#ifndef ATTNSCOPE_EXPORT_H
#define ATTNSCOPE_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "common/diag.h"
#include "common/fsutil.h"
#include "common/progress.h"
#include "engine/attention.h"
#include "engine/logits.h"
#include "engine/model.h"
#include "engine/net.h"
#include "engine/scene.h"

/* Writes one matrix as RFC 4180 CSV. Header: "token," + col_labels (key tokens for n x n
 * stages) or d0,d1,...  when col_labels is NULL. Each row starts with row_labels[i] (or the row
 * index when NULL). Numbers use the shortest round-trip form; -inf is written "-inf". */
int csv_write_matrix(FILE *f, struct attn_mat_view v, char *const *row_labels,
                     char *const *col_labels);
/* The same with another first header cell than "token" (parameter files use "row").
 * Both return 0, or -1 when the stream reports a write error. */
int csv_write_table(FILE *f, struct attn_mat_view v, const char *corner, char *const *row_labels,
                    char *const *col_labels);
/* tokens.csv: "position,id,token", one row per token. Returns 0 or -1 on a write error. */
int csv_write_tokens(FILE *f, char *const *tokens, const int *ids, int n);
/* predictions.csv: "position,rank,id,token,logit,prob", the top k of every position of p (token:
 * the vocabulary label of s's tokenizer, logit raw, prob at p's temperature). */
int csv_write_predictions(FILE *f, const struct attn_predictions *p, const struct attn_scene *s);
/* One generated token, as `generate --csv` streams them: "step,position,id,token,prob,rank",
 * the header before step 1. Returns 0, or -1 on a write error. */
int csv_write_step(FILE *f, int step, int position, int id, double prob, int rank,
                   const struct attn_scene *s);
/* loss.csv: "position,next_id,next_token,prob,loss", every position that has a next token. */
int csv_write_loss(FILE *f, const struct attn_predictions *p, const struct attn_scene *s);
/* lens.csv: "layer,position,id,token,prob", the top 1 of each layer's predictions (layers[L] of
 * n_layers, each made with k >= 1). All three return 0, or -1 on a write error. */
int csv_write_lens(FILE *f, const struct attn_predictions *layers, int n_layers,
                   const struct attn_scene *s);
/* Writes x in the shortest of %.6g .. %.9g that reads back (strtof) to the same bits; inf,
 * -inf and nan as "inf", "-inf", "nan". Returns the length, like snprintf. */
int csv_format_float(char *out, size_t size, float x);

/* Whether an export writes stage st of layer m: every stage but dropout when the layer has no
 * dropout (its keep-mask absent), where dropout.csv would be a byte copy of weights.csv. */
bool export_writes_stage(const struct attn_model *m, enum attn_stage st);

/* What export writes each matrix as: a labelled CSV table, or a bare float32 .npy. */
enum export_format { EXPORT_CSV, EXPORT_NPY };

/* Writes every file of the export layout as the folder dir, all or nothing: the files go into a
 * temporary folder beside dir that replaces dir only once complete, so any failure leaves an
 * earlier export in dir exactly as it was (see export_check_target for what may be replaced).
 * s is the scene as the user gave it; the resolved scene.yaml is derived from s and the net,
 * which must hold a computed forward pass. One layer: the layout of README.md; more: one
 * layer<L>/ folder per layer with that layout. Returns 0, or -1 with err naming the file. */
int export_dir(const char *dir, const struct attn_scene *s, const struct attn_net *net,
               enum export_format fmt, struct diag *err);
/* export_dir, telling progress (NULL: nothing) of every head's files written: step 0 first,
 * then one step a head over every layer. A big export writes hundreds of MB of text. */
int export_dir_progress(const char *dir, const struct attn_scene *s, const struct attn_net *net,
                        enum export_format fmt, const struct progress_sink *progress,
                        struct diag *err);
/* The top k predictions.csv holds per position unless told otherwise. */
#define EXPORT_TOP_DEFAULT 10
/* export_dir_progress with top_k entries per position in predictions.csv. Besides the stages,
 * every export holds rollout.csv (the attention rollout through every layer; layer<L>/rollout
 * through layer L when there are several), and a scene with a vocabulary model
 * predictions.csv, loss.csv and lens.csv (CSV in either format: they hold token text). */
int export_dir_top(const char *dir, const struct attn_scene *s, const struct attn_net *net,
                   enum export_format fmt, int top_k, const struct progress_sink *progress,
                   struct diag *err);
/* An export written a layer at a time, while the net is computed (attn_net_compute_lean: one
 * layer's n x n stages in memory, not every layer's): export_stream_begin, then
 * export_stream_layer for layers 0 .. layers - 1 in order, each while its stages are current,
 * then export_stream_end, which swaps the folder into place. The files and the guarantees are
 * export_dir_top's. A failing call has already undone everything; export_stream_abort undoes a
 * stream the caller gives up (a failed compute), and is harmless after the end. */
struct export_progress { /* one step a head written, over every layer */
    const struct progress_sink *sink;
    long done, total;
};
struct export_stream {
    struct fsutil_dirswap tx;
    bool open; /* tx holds a temporary folder */
    enum export_format fmt;
    int top_k;
    const struct progress_sink *progress;
    struct export_progress pr;
    float *roll, *prev; /* (n, n) the rollout through the last layer written, and scratch */
};
int export_stream_begin(struct export_stream *x, const char *dir, enum export_format fmt, int top_k,
                        const struct progress_sink *progress, struct diag *err);
int export_stream_layer(struct export_stream *x, const struct attn_scene *s,
                        const struct attn_net *net, int layer, struct diag *err);
int export_stream_end(struct export_stream *x, const struct attn_scene *s,
                      const struct attn_net *net, struct diag *err);
void export_stream_abort(struct export_stream *x);
/* 0 when dir may become an export: it does not exist, is empty, or holds an earlier export
 * (*replaces, when not NULL, is then set). An earlier export is known by its marker,
 * DIR/.attnscope-export, which lists every path it wrote: the folder must hold exactly those
 * paths or fewer, each a file or a folder as listed. Anything else (a file added, a folder where
 * a file was, no marker, a symbolic link named as dir) is the user's and is never replaced: -1,
 * err names the first path that is not the export's and says what to do. */
int export_check_target(const char *dir, bool *replaces, struct diag *err);

/* Prints v the way print(t) shows a 2-D float32 tensor in PyTorch 1.13 with the default print
 * options (precision 4, linewidth 80, summarised above 1000 elements), newline included:
 * "tensor([[0.1385, 0.2379], ...])\n". A 1-row matrix prints as 2-D ("tensor([[...]])"). */
void torch_print_matrix(FILE *f, struct attn_mat_view v);

#endif
