/* export: every stage of a forward pass as files other tools can read.
 *
 * The layout is the contract of README.md ("Export format"): each matrix as a labelled CSV
 * table or, with EXPORT_NPY, as a bare float32 .npy of the same shape under the same name
 * (head0/weights.npy for head0/weights.csv). The whole folder is written all or nothing: into
 * a fresh temporary folder beside the target, swapped into place only when every file is
 * complete (fsutil_dirswap), so a failure or a kill -9 half-way leaves the previous export
 * intact and never a mix of two. The resolved scene.yaml (large matrices as .npy files in
 * scene.data/) makes the export reproducible: loading it and exporting again gives the same
 * bytes.
 */
#include "export/export.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/npy.h"
#include "engine/pool.h"
#include "scenefile/scenefile.h"

#define EXPORT_PATH_MAX 4096
/* The marker every export writes at its top, listing the paths it wrote (export_check_target). */
#define EXPORT_MARKER       ".attnscope-export"
#define EXPORT_MARKER_MAGIC "attnscope-export 1"
#define EXPORT_MARKER_MAX   ((size_t)64 << 20)
/* An export nests 4 deep (layer1/params/head0/W_query.csv); a folder this deep in a folder to be
 * replaced is never an export's, whatever a marker says: replacing it would remove a tree
 * whose depth nothing bounds (fsutil's removal stops at 64). */
#define EXPORT_DEPTH_MAX 16

/* What one CSV file holds; the context of write_csv. */
struct csv_job {
    struct attn_mat_view v;
    const char *corner; /* first header cell */
    char *const *rows;  /* row labels, or NULL for 0, 1, ... */
    char *const *cols;  /* column labels, or NULL for d0, d1, ... */
};

static int write_csv(FILE *f, void *ctx, struct diag *err)
{
    const struct csv_job *job = ctx;
    if (csv_write_table(f, job->v, job->corner, job->rows, job->cols) != 0)
        return attn_diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

static int write_npy(FILE *f, void *ctx, struct diag *err)
{
    const struct attn_mat_view *v = ctx;
    if (attn_npy_write_f32_matrix(f, v->data, (size_t)v->rows, (size_t)v->cols,
                                  (size_t)v->stride) != 0)
        return attn_diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

struct scene_job {
    const struct attn_scene *s;
    struct scenefile_sidecar *side;
};

static int write_scene(FILE *f, void *ctx, struct diag *err)
{
    const struct scene_job *job = ctx;
    return attn_scenefile_write_side(f, job->s, true, job->side, err);
}

/* Names path in err unless the failing call already named a file (fsutil names the folder or
 * file it could not create). A path longer than the diag's buffer keeps its start. */
static int fail_at(struct diag *err, const char *path)
{
    err->line = err->col = 0;
    if (err->file[0] != '\0')
        return -1;
    size_t len = strlen(path);
    if (len >= sizeof(err->file))
        len = sizeof(err->file) - 1;
    memcpy(err->file, path, len);
    err->file[len] = '\0';
    return -1;
}

/* Builds dir/a[/b] into out; fails when the path would be cut. */
static int join_path(char *out, const char *dir, const char *a, const char *b, struct diag *err)
{
    int len = b ? snprintf(out, EXPORT_PATH_MAX, "%s/%s/%s", dir, a, b)
                : snprintf(out, EXPORT_PATH_MAX, "%s/%s", dir, a);
    if (len < 0 || len >= EXPORT_PATH_MAX) {
        attn_diag_clear(err);
        attn_diag_set(err, NULL, "path too long");
        return fail_at(err, dir);
    }
    return 0;
}

/* One matrix as dir[/sub]/<stem>.csv or .npy. The labels (corner, rows, cols) are the CSV's
 * header row and first column; a .npy holds the numbers only. */
static int put_matrix(const char *dir, const char *sub, const char *stem, struct attn_mat_view v,
                      const char *corner, char *const *rows, char *const *cols,
                      enum export_format fmt, struct diag *err)
{
    char name[64], path[EXPORT_PATH_MAX];
    snprintf(name, sizeof(name), "%s.%s", stem, fmt == EXPORT_NPY ? "npy" : "csv");
    if (join_path(path, dir, sub ? sub : name, sub ? name : NULL, err) != 0)
        return -1;
    struct csv_job job = {v, corner, rows, cols};
    int rc = fmt == EXPORT_NPY ? attn_fsutil_write_new(path, write_npy, &v, err)
                               : attn_fsutil_write_new(path, write_csv, &job, err);
    if (rc != 0)
        return fail_at(err, path);
    return 0;
}

static int make_dir(const char *dir, const char *sub, struct diag *err)
{
    char path[EXPORT_PATH_MAX];
    if (join_path(path, dir, sub, NULL, err) != 0)
        return -1;
    if (attn_fsutil_mkdir_p(path, err) != 0)
        return fail_at(err, path);
    return 0;
}

/* Labels "<prefix>0" ... "<prefix>(n-1)" (or "h<H>:<token>" rows), in one allocation. */
struct labels {
    char **items;
    int n;
};

static void labels_free(struct labels *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static int labels_push(struct labels *l, const char *fmt, int a, const char *s)
{
    char buf[SCENE_MAX_TOKEN_BYTES + 32];
    if (s)
        snprintf(buf, sizeof(buf), fmt, a, s);
    else
        snprintf(buf, sizeof(buf), fmt, a);
    char **items = realloc(l->items, (size_t)(l->n + 1) * sizeof(*items));
    if (!items)
        return -1;
    l->items = items;
    l->items[l->n] = strdup(buf);
    if (!l->items[l->n])
        return -1;
    l->n++;
    return 0;
}

/* The files under params/: the projections, their biases, out_proj and the dropout mask. */
static int export_params(const char *dir, const struct attn_scene *s, const struct attn_model *m,
                         enum export_format fmt, struct diag *err)
{
    static const char *const w_names[3] = {"W_query", "W_key", "W_value"};
    static const char *const b_names[3] = {"b_query", "b_key", "b_value"};
    static char b_label[] = "b";
    char *const bias_row[1] = {b_label};
    struct labels dl = {0}, ml = {0};
    float *mask = NULL;
    int rc = -1;

    if (make_dir(dir, "params", err) != 0)
        goto out;
    int n_d = m->d_in > m->D ? m->d_in : m->D;
    n_d = m->hidden > n_d ? m->hidden : n_d;
    n_d = m->latent > n_d ? m->latent : n_d;
    for (int i = 0; i < n_d; i++)
        if (labels_push(&dl, "d%d", i, NULL) != 0)
            goto oom;

    if (m->project) {
        /* read at use: a checkpoint's lazy matrices share one widening buffer (model.h) */
        static const size_t w[3] = {offsetof(struct attn_model, wq),
                                    offsetof(struct attn_model, wk),
                                    offsetof(struct attn_model, wv)};
        const float *b[3] = {m->bq, m->bk, m->bv};
        bool wrapper = s->attn.layout == LAYOUT_WRAPPER;
        int blocks = wrapper ? m->heads : 1;
        int width = wrapper ? m->head_dim : m->D;
        for (int h = 0; h < blocks; h++) {
            char sub[64];
            if (wrapper) {
                snprintf(sub, sizeof(sub), "params/head%d", h);
                if (make_dir(dir, sub, err) != 0)
                    goto out;
            } else {
                snprintf(sub, sizeof(sub), "params");
            }
            for (int k = 0; k < 3; k++) {
                /* K and V are Dkv wide with GQA; MLA has only W_query here. */
                int wk = wrapper ? width : k == 0 ? m->D : m->Dkv, cols = k == 0 ? m->D : m->Dkv;
                int ld = attn_model_param_ld(m, w[k], cols);
                const float *wp = attn_model_param(m, w[k]);
                if (!wp)
                    continue;
                struct attn_mat_view v = {wp + (size_t)h * (size_t)width, m->d_in, wk, ld};
                if (put_matrix(dir, sub, w_names[k], v, "row", dl.items, NULL, fmt, err) != 0)
                    goto out;
                if (!b[k])
                    continue;
                struct attn_mat_view bv = {b[k] + (size_t)h * (size_t)width, 1, wk, cols};
                if (put_matrix(dir, sub, b_names[k], bv, "row", bias_row, NULL, fmt, err) != 0)
                    goto out;
            }
        }
    }
    /* The systems' own parameters: the fused projection as drawn, MLA's, the block's. */
    int W = m->D + 2 * m->Dkv, d = m->d_in, hid = m->hidden, r = m->latent;
#define M(member) offsetof(struct attn_model, member)
    struct {
        const char *name;
        size_t member; /* read at use (attn_model_param): lazy ones share one buffer */
        int rows, cols;
        bool bias;
    } extra[] = {
        {"W_qkv", M(wqkv), d, W, false},
        {"b_qkv", M(bqkv), 1, W, true},
        {"W_down", M(wdown), d, r, false},
        {"W_key_up", M(wkup), r, m->D, false},
        {"W_value_up", M(wvup), r, m->D, false},
        {"q_norm_weight", M(qnw), 1, (int)attn_model_buf_count(m, ATTN_BUF_qnw), true},
        {"k_norm_weight", M(knw), 1, (int)attn_model_buf_count(m, ATTN_BUF_knw), true},
        {"ffn_Wgate", M(wg), d, hid, false},
        {"ffn_bgate", M(bg), 1, hid, true},
        {"ffn_W1", M(w1), d, hid, false},
        {"ffn_b1", M(b1), 1, hid, true},
        {"ffn_W2", M(w2), hid, d, false},
        {"ffn_b2", M(b2), 1, d, true},
    };
#undef M
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
        const float *data = attn_model_param(m, extra[i].member);
        if (!data)
            continue;
        struct attn_mat_view v = {data, extra[i].rows, extra[i].cols, extra[i].cols};
        if (put_matrix(dir, "params", extra[i].name, v, "row", extra[i].bias ? bias_row : dl.items,
                       NULL, fmt, err) != 0)
            goto out;
    }
    /* The norms' weights only when they are not the default 1 and 0. */
    const float *norms[6] = {m->n1w, m->n1b, m->n2w, m->n2b, m->pn1w, m->pn2w};
    static const char *const norm_names[6] = {"norm1_weight",      "norm1_bias",
                                              "norm2_weight",      "norm2_bias",
                                              "post_norm1_weight", "post_norm2_weight"};
    static const float norm_plain[6] = {1, 0, 1, 0, 1, 1};
    for (int i = 0; m->block && i < 6; i++) {
        bool plain = true;
        for (int j = 0; norms[i] && j < d; j++)
            plain &= norms[i][j] == norm_plain[i];
        struct attn_mat_view v = {norms[i], 1, d, d};
        if (norms[i] && !plain &&
            put_matrix(dir, "params", norm_names[i], v, "row", bias_row, NULL, fmt, err) != 0)
            goto out;
    }
    if (m->wo) {
        struct attn_mat_view v = {ATTN_PARAM(m, wo), m->D, m->out_dim, m->out_dim};
        if (put_matrix(dir, "params", "out", v, "row", dl.items, NULL, fmt, err) != 0)
            goto out;
    }
    if (m->bo) {
        struct attn_mat_view v = {m->bo, 1, m->out_dim, m->out_dim};
        if (put_matrix(dir, "params", "out_bias", v, "row", bias_row, NULL, fmt, err) != 0)
            goto out;
    }
    if (m->keep) {
        size_t cells = (size_t)m->heads * (size_t)m->n * (size_t)m->n;
        mask = malloc(cells * sizeof(*mask) + 1);
        if (!mask)
            goto oom;
        for (size_t i = 0; i < cells; i++)
            mask[i] = m->keep[i] ? 1.0f : 0.0f;
        for (int h = 0; h < m->heads; h++)
            for (int i = 0; i < m->n; i++)
                if (labels_push(&ml, "h%d:%s", h, m->tokens[i]) != 0)
                    goto oom;
        struct attn_mat_view v = {mask, m->heads * m->n, m->n, m->n};
        if (put_matrix(dir, "params", "dropout_mask", v, "token", ml.items, m->tokens, fmt, err) !=
            0)
            goto out;
    }
    rc = 0;
    goto out;
oom:
    attn_diag_clear(err);
    attn_diag_set(err, NULL, "out of memory");
    fail_at(err, dir);
out:
    free(mask);
    labels_free(&dl);
    labels_free(&ml);
    return rc;
}

bool export_writes_stage(const struct attn_model *m, enum attn_stage st)
{
    return !(st == STAGE_DROPOUT && !m->keep);
}

/* A layer's heads at least this many floats (heads x n x n) are written on every thread. */
#define HEADS_PARALLEL_FLOATS ((size_t)1 << 16)

/* What each head's files are made of (export_head_files), and where each head's error goes. */
struct heads_job {
    const char *dir;
    const struct attn_model *m;
    const struct attn_run *r;
    enum export_format fmt;
    const enum attn_stage *order;
    int n_order;
    struct export_progress *pr; /* its sink's stop flag is read before each head */
    size_t cap;                 /* floats of each buffer, n x n */
    float **bufs;               /* (slots) a derived stage's numbers, one buffer a thread */
    struct diag *errs;          /* (heads) */
    int slots;
};

/* Head h's folder and its per-head stages, with the buffer of thread slot. Returns 0, or -1 with
 * job->errs[h]. */
static int export_head_files(struct heads_job *job, int h, int slot)
{
    const struct attn_model *m = job->m;
    struct diag *err = &job->errs[h];
    attn_diag_clear(err);
    if (progress_stopped(job->pr->sink)) { /* Ctrl-C: the temporary folder is removed */
        attn_diag_set(err, NULL, "interrupted; the folder is as it was");
        return fail_at(err, job->dir);
    }
    char sub[32];
    snprintf(sub, sizeof(sub), "head%d", h);
    if (make_dir(job->dir, sub, err) != 0)
        return -1;
    for (int i = 0; i < job->n_order; i++) {
        enum attn_stage st = job->order[i];
        if (!attn_stage_is_per_head(st) || !export_writes_stage(m, st))
            continue;
        /* cross-attention: a row a source token in K and V, a column one in the (n, n_kv) stages */
        char *const *keys = m->cross ? m->kv_tokens : m->tokens;
        char *const *cols = attn_stage_is_square(st) ? keys : NULL;
        char *const *rows = attn_stage_is_key_side(st) ? keys : m->tokens;
        if (put_matrix(job->dir, sub, attn_stage_file(st),
                       attn_view_buf(job->bufs[slot], job->cap, job->r, m, st, h), "token", rows,
                       cols, job->fmt, err) != 0)
            return -1;
    }
    return 0;
}

static void heads_task(void *ctx, int h, int slot)
{
    export_head_files(ctx, h, slot);
}

/* One layer's files into dir: its input, parameters, per-head stages and shared stages. */
static int export_layer(const char *dir, const struct attn_scene *s, const struct attn_model *m,
                        const struct attn_run *r, enum export_format fmt,
                        struct export_progress *pr, struct diag *err)
{
    if (put_matrix(dir, NULL, attn_stage_file(STAGE_INPUTS), attn_view(r, m, STAGE_INPUTS, 0),
                   "token", m->tokens, NULL, fmt, err) != 0)
        return -1;
    /* A checkpoint's parameters are in its file, which scene.yaml names: as CSV they would be
       a gigabyte for GPT-2 small. */
    if (!s->model.file && export_params(dir, s, m, fmt, err) != 0)
        return -1;

    enum attn_stage order[STAGE_COUNT];
    int n_order = attn_stage_order(order, m);
    /* The derived stages (scaled, masked, dropout) are computed one matrix at a time into a
       buffer of each thread's, so the export holds one n x n matrix a thread more than the
       result, not one per head. */
    size_t cap = (size_t)m->n * (size_t)m->n_kv;
    struct heads_job job = {dir, m, r, fmt, order, n_order, pr, cap, NULL, NULL, 1};
    /* The heads on every thread when they are worth it: writing is mostly the kernel copying
       into the page cache (3 GB at 1,024 tokens of GPT-2 small), which one thread does at
       about 1 GB/s here. A small layer stays in order on one thread. */
    if ((size_t)m->heads * cap >= HEADS_PARALLEL_FLOATS)
        job.slots = attn_pool_threads();
    job.bufs = calloc((size_t)job.slots, sizeof(*job.bufs));
    job.errs = calloc((size_t)m->heads, sizeof(*job.errs));
    int rc = job.bufs && job.errs ? 0 : -1;
    for (int t = 0; rc == 0 && t < job.slots; t++)
        if (!(job.bufs[t] = malloc((cap ? cap : 1) * sizeof(float))))
            rc = -1;
    if (rc != 0) {
        attn_diag_set(err, NULL, "out of memory");
        fail_at(err, dir);
    } else if (job.slots == 1) {
        for (int h = 0; rc == 0 && h < m->heads; h++) {
            if ((rc = export_head_files(&job, h, 0)) != 0)
                *err = job.errs[h];
            else
                progress_report(pr->sink, ++pr->done, pr->total);
        }
    } else {
        /* the value norms of weighted_norm share a scratch buffer: made here, in order */
        for (int i = 0; i < n_order; i++)
            for (int h = 0; order[i] == STAGE_WEIGHTED_NORM && h < m->heads; h++)
                attn_value_norms(r, m, h);
        attn_pool_run(m->heads, 0, heads_task, &job);
        for (int h = 0; rc == 0 && h < m->heads; h++)
            if (job.errs[h].msg[0]) { /* the first head that failed, as in order */
                *err = job.errs[h];
                rc = -1;
            }
        if (rc == 0) {
            pr->done += m->heads;
            progress_report(pr->sink, pr->done, pr->total);
        }
    }
    for (int t = 0; job.bufs && t < job.slots; t++)
        free(job.bufs[t]);
    free(job.bufs);
    free(job.errs);
    if (rc != 0)
        return -1;

    /* The concatenated heads are "context.csv" (stage.h's file): the name the book's readers
       look for. */
    if (put_matrix(dir, NULL, attn_stage_file(STAGE_CONCAT), attn_view(r, m, STAGE_CONCAT, 0),
                   "token", m->tokens, NULL, fmt, err) != 0)
        return -1;
    if (put_matrix(dir, NULL, attn_stage_file(STAGE_OUTPUT), attn_view(r, m, STAGE_OUTPUT, 0),
                   "token", m->tokens, NULL, fmt, err) != 0)
        return -1;
    /* Every other stage the heads share (MLA's latent, the block's): one file each. The final
       norm is the last layer's, written beside the layers (export_tail). */
    for (int i = 0; i < n_order; i++) {
        enum attn_stage st = order[i];
        if (attn_stage_is_per_head(st) || st == STAGE_INPUTS || st == STAGE_CONCAT ||
            st == STAGE_OUTPUT || st == STAGE_FINAL_NORM)
            continue;
        if (put_matrix(dir, NULL, attn_stage_file(st), attn_view(r, m, st, 0), "token", m->tokens,
                       NULL, fmt, err) != 0)
            return -1;
    }
    if (m->block &&
        put_matrix(dir, NULL, "block_output", attn_view(r, m, attn_stage_block_output(m), 0),
                   "token", m->tokens, NULL, fmt, err) != 0)
        return -1;
    return 0;
}

struct tokens_job {
    const struct attn_model *m;
};

static int write_tokens(FILE *f, void *ctx, struct diag *err)
{
    const struct attn_model *m = ((const struct tokens_job *)ctx)->m;
    if (csv_write_tokens(f, m->tokens, m->ids, m->n) != 0)
        return attn_diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

/* Layer L's step of the attention rollout (rollout through layer L, from x->roll through layer
 * L - 1): dir/layer<L>/rollout when there are several layers, and dir/rollout at the last. */
static int export_rollout_step(struct export_stream *x, const char *dir, const struct attn_net *net,
                               int L, struct diag *err)
{
    const struct attn_model *m = &net->model[0];
    size_t nn = (size_t)m->n * (size_t)m->n;
    if (!x->roll && (!(x->roll = malloc((nn ? nn : 1) * sizeof(float))) ||
                     !(x->prev = malloc((nn ? nn : 1) * sizeof(float))))) {
        attn_diag_set(err, NULL, "out of memory");
        return fail_at(err, dir);
    }
    if (L > 0)
        memcpy(x->prev, x->roll, nn * sizeof(float));
    if (attn_net_rollout_step(x->roll, L > 0 ? x->prev : NULL, net, L, err) != 0)
        return fail_at(err, dir);
    struct attn_mat_view v = {x->roll, m->n, m->n, m->n};
    char sub[32];
    snprintf(sub, sizeof(sub), "layer%d", L);
    if (net->layers > 1 &&
        put_matrix(dir, sub, "rollout", v, "token", m->tokens, m->tokens, x->fmt, err) != 0)
        return -1;
    if (L == net->layers - 1 &&
        put_matrix(dir, NULL, "rollout", v, "token", m->tokens, m->tokens, x->fmt, err) != 0)
        return -1;
    return 0;
}

/* What a predictions table writes: predictions, loss or the lens. */
struct table_job {
    int kind; /* 0 predictions.csv, 1 loss.csv, 2 lens.csv */
    const struct attn_predictions *p;
    int n;
    const struct attn_scene *s;
};

static int write_table(FILE *f, void *ctx, struct diag *err)
{
    const struct table_job *job = ctx;
    int rc = job->kind == 0   ? csv_write_predictions(f, job->p, job->s)
             : job->kind == 1 ? csv_write_loss(f, job->p, job->s)
                              : csv_write_lens(f, job->p, job->n, job->s);
    if (rc != 0)
        return attn_diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

/* predictions.csv, loss.csv and lens.csv of a scene with a vocabulary model: always CSV. */
static int export_predictions(const char *dir, const struct attn_scene *s,
                              const struct attn_net *net, int top_k, struct diag *err)
{
    static const char *const names[3] = {"predictions.csv", "loss.csv", "lens.csv"};
    int layers = net->layers, n = net->model[0].n;
    struct attn_predictions *p = calloc((size_t)layers, sizeof(*p));
    if (!p) {
        attn_diag_set(err, NULL, "out of memory");
        return fail_at(err, dir);
    }
    int rc = 0;
    for (int L = 0; L < layers && rc == 0; L++) /* the last layer's with the top k: the model's */
        if (attn_predict(&p[L], net, L, 0, n, L == layers - 1 ? top_k : 1, 1.0, NULL, err) != 0)
            rc = fail_at(err, dir);
    for (int kind = 0; kind < 3 && rc == 0; kind++) {
        char path[EXPORT_PATH_MAX];
        struct table_job job = {kind, kind == 2 ? p : &p[layers - 1], layers, s};
        if (join_path(path, dir, names[kind], NULL, err) != 0)
            rc = -1;
        else if (attn_fsutil_write_new(path, write_table, &job, err) != 0)
            rc = fail_at(err, path);
    }
    for (int L = 0; L < layers; L++)
        attn_predictions_free(&p[L]);
    free(p);
    return rc;
}

/* What every export starts with, before its first layer: scene.yaml (with it the rest can
 * always be regenerated) and tokens.csv. */
static int export_head(const char *dir, const struct attn_scene *s, const struct attn_net *net,
                       struct diag *err)
{
    char path[EXPORT_PATH_MAX], side_dir[EXPORT_PATH_MAX];
    struct attn_scene resolved;
    if (attn_scene_from_layers(&resolved, s, net->model, net->layers) != 0) {
        attn_diag_set(err, NULL, "out of memory while resolving the scene");
        return fail_at(err, dir);
    }
    /* The export's own folder, resolved: the checkpoint and tokenizer it names are written
       relative to it. The temporary folder sits beside the target, so the paths are the
       same from either. */
    char *yaml_dir = realpath(dir, NULL);
    struct scenefile_sidecar side = {.dir = side_dir, .rel = "scene.data", .yaml_dir = yaml_dir};
    struct scene_job job = {&resolved, &side};
    int rc = join_path(path, dir, "scene.yaml", NULL, err);
    if (rc == 0)
        rc = join_path(side_dir, dir, "scene.data", NULL, err);
    if (rc == 0 && attn_fsutil_write_new(path, write_scene, &job, err) != 0)
        rc = fail_at(err, path);
    attn_scenefile_sidecar_free(&side);
    free(yaml_dir);
    attn_scene_free(&resolved);
    if (rc != 0)
        return -1;
    struct tokens_job tj = {&net->model[0]};
    if (join_path(path, dir, "tokens.csv", NULL, err) != 0)
        return -1;
    if (attn_fsutil_write_new(path, write_tokens, &tj, err) != 0)
        return fail_at(err, path);
    return 0;
}

/* An encoder-decoder's source side, whole: encoder/tokens.csv, encoder/layer<L>/ as any layer's
 * files, encoder/final_norm. */
static int export_encoder(struct export_stream *x, const char *dir, const struct attn_scene *s,
                          const struct attn_net *enc, struct diag *err)
{
    char edir[EXPORT_PATH_MAX], path[EXPORT_PATH_MAX], sub[32];
    if (make_dir(dir, "encoder", err) != 0 || join_path(edir, dir, "encoder", NULL, err) != 0 ||
        join_path(path, edir, "tokens.csv", NULL, err) != 0)
        return -1;
    struct tokens_job tj = {&enc->model[0]};
    if (attn_fsutil_write_new(path, write_tokens, &tj, err) != 0)
        return fail_at(err, path);
    for (int L = 0; L < enc->layers; L++) {
        char ldir[EXPORT_PATH_MAX];
        snprintf(sub, sizeof(sub), "layer%d", L);
        if (make_dir(edir, sub, err) != 0 || join_path(ldir, edir, sub, NULL, err) != 0 ||
            export_layer(ldir, s, &enc->model[L], &enc->run[L], x->fmt, &x->pr, err) != 0)
            return -1;
    }
    const struct attn_model *last = &enc->model[enc->layers - 1];
    return put_matrix(edir, NULL, attn_stage_file(STAGE_FINAL_NORM), attn_net_output(enc), "token",
                      last->tokens, NULL, x->fmt, err);
}

/* An encoder-decoder's decoder layer: the engine's layer L is decoder/layer<L / 2>/self (its
 * self-attention) or .../cross (its cross-attention and FFN); the first call writes the export's
 * head and the whole encoder first. No rollout: cross-attention mixes two sequences. */
static int export_files_decoder(struct export_stream *x, const struct attn_scene *s,
                                const struct attn_net *net, int L, struct diag *err)
{
    const char *dir = x->tx.tmp;
    if (L == 0) {
        x->pr = (struct export_progress){x->progress, 0, 0};
        for (int k = 0; k < net->layers; k++)
            x->pr.total += net->model[k].heads;
        for (int k = 0; k < net->encoder->layers; k++)
            x->pr.total += net->encoder->model[k].heads;
        progress_report(x->progress, 0, x->pr.total);
        if (export_head(dir, s, net, err) != 0 ||
            export_encoder(x, dir, s, net->encoder, err) != 0 || make_dir(dir, "decoder", err) != 0)
            return -1;
    }
    char sub[64], ldir[EXPORT_PATH_MAX];
    snprintf(sub, sizeof(sub), "decoder/layer%d/%s", L / 2, net->model[L].cross ? "cross" : "self");
    if (make_dir(dir, sub, err) != 0 || join_path(ldir, dir, sub, NULL, err) != 0)
        return -1;
    return export_layer(ldir, s, &net->model[L], &net->run[L], x->fmt, &x->pr, err);
}

/* Layer L's files (the layout of README.md, in layer<L>/ when there are several) and its
 * rollout step; the first layer's call writes the export's head first. */
static int export_files_layer(struct export_stream *x, const struct attn_scene *s,
                              const struct attn_net *net, int L, struct diag *err)
{
    const char *dir = x->tx.tmp;
    if (net->encoder)
        return export_files_decoder(x, s, net, L, err);
    if (L == 0) {
        x->pr = (struct export_progress){x->progress, 0, 0};
        for (int k = 0; k < net->layers; k++)
            x->pr.total += net->model[k].heads;
        progress_report(x->progress, 0, x->pr.total);
        if (export_head(dir, s, net, err) != 0)
            return -1;
    }
    if (net->layers == 1) {
        if (export_layer(dir, s, &net->model[0], &net->run[0], x->fmt, &x->pr, err) != 0)
            return -1;
    } else {
        char sub[32], ldir[EXPORT_PATH_MAX];
        snprintf(sub, sizeof(sub), "layer%d", L);
        if (make_dir(dir, sub, err) != 0 || join_path(ldir, dir, sub, NULL, err) != 0 ||
            export_layer(ldir, s, &net->model[L], &net->run[L], x->fmt, &x->pr, err) != 0)
            return -1;
    }
    return export_rollout_step(x, dir, net, L, err);
}

/* What follows the last layer: the final norm (the whole model's: beside scene.yaml) and, with
 * a vocabulary model, the predictions. */
static int export_tail(struct export_stream *x, const struct attn_scene *s,
                       const struct attn_net *net, struct diag *err)
{
    const char *dir = x->tx.tmp;
    const struct attn_model *last = &net->model[net->layers - 1];
    char fdir[EXPORT_PATH_MAX]; /* an encoder-decoder's: the decoder's final norm */
    if (net->encoder && join_path(fdir, dir, "decoder", NULL, err) != 0)
        return -1;
    if (last->final_norm &&
        put_matrix(net->encoder ? fdir : dir, NULL, attn_stage_file(STAGE_FINAL_NORM),
                   attn_view(&net->run[net->layers - 1], last, STAGE_FINAL_NORM, 0), "token",
                   last->tokens, NULL, x->fmt, err) != 0)
        return -1;
    if (attn_net_has_vocab(net) && export_predictions(dir, s, net, x->top_k, err) != 0)
        return -1;
    return 0;
}

/* ---- the marker: what an export wrote, so only an export is ever replaced ------------------ */

/* Every path below a folder, its type beside it: 'd' a folder, 'f' a regular file, 'o' anything
 * else (a symbolic link, a FIFO: never an export's). Sorted by name, so the first foreign path
 * named is the same on every run. */
struct tree_list {
    char **paths; /* relative to the folder walked, "head0/weights.csv" */
    char *types;
    int n, cap;
};

static void tree_list_free(struct tree_list *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->paths[i]);
    free(t->paths);
    free(t->types);
    memset(t, 0, sizeof(*t));
}

static int tree_list_add(struct tree_list *t, char type, const char *rel, size_t len)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        char **paths = realloc(t->paths, (size_t)cap * sizeof(*paths));
        if (paths)
            t->paths = paths;
        char *types = paths ? realloc(t->types, (size_t)cap) : NULL;
        if (!types)
            return -1;
        t->types = types;
        t->cap = cap;
    }
    if (!(t->paths[t->n] = strndup(rel, len)))
        return -1;
    t->types[t->n++] = type;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry name of the folder dir: its type ('d', 'f' or 'o', as struct tree_list says), or 0
 * with err when it cannot be read. full holds dir/name. */
static char entry_type(char *full, const char *dir, const char *name, struct diag *err)
{
    int fl = snprintf(full, EXPORT_PATH_MAX, "%s/%s", dir, name);
    if (fl < 0 || fl >= EXPORT_PATH_MAX) {
        attn_diag_set(err, NULL, "path too long");
        fail_at(err, dir);
        return 0;
    }
    struct stat st;
    if (lstat(full, &st) != 0) {
        attn_diag_set(err, NULL, "cannot read: %s", strerror(errno));
        fail_at(err, full);
        return 0;
    }
    return S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 'o';
}

/* rel/name ("name" at the top) into out, or -1 with err when too long. */
static int join_rel(char *out, const char *rel, const char *name, const char *dir, struct diag *err)
{
    int sl = rel[0] ? snprintf(out, EXPORT_PATH_MAX, "%s/%s", rel, name)
                    : snprintf(out, EXPORT_PATH_MAX, "%s", name);
    if (sl < 0 || sl >= EXPORT_PATH_MAX) {
        attn_diag_set(err, NULL, "path too long");
        return fail_at(err, dir);
    }
    return 0;
}

/* Adds everything below root, never following symbolic links. Without recursion: t itself is
 * the list of folders still to read (each 'd' entry is read once it is reached), so a folder
 * nested thousands deep costs a list entry a level, never a stack frame. */
static int tree_walk(struct tree_list *t, const char *root, struct diag *err)
{
    int rc = 0;
    for (int next = -1; rc == 0 && next < t->n; next++) {
        if (next >= 0 && t->types[next] != 'd')
            continue;
        const char *rel = next >= 0 ? t->paths[next] : "";
        char dir[EXPORT_PATH_MAX];
        int len = rel[0] ? snprintf(dir, sizeof(dir), "%s/%s", root, rel)
                         : snprintf(dir, sizeof(dir), "%s", root);
        if (len < 0 || len >= (int)sizeof(dir)) {
            attn_diag_set(err, NULL, "path too long");
            return fail_at(err, root);
        }
        DIR *d = opendir(dir);
        if (!d) {
            attn_diag_set(err, NULL, "cannot read the folder: %s", strerror(errno));
            return fail_at(err, dir);
        }
        struct dirent *e;
        while (rc == 0 && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[EXPORT_PATH_MAX], full[EXPORT_PATH_MAX];
            char type = entry_type(full, dir, e->d_name, err);
            if (!type || join_rel(sub, rel, e->d_name, dir, err) != 0)
                rc = -1;
            else if (tree_list_add(t, type, sub, strlen(sub)) != 0) {
                attn_diag_set(err, NULL, "out of memory");
                rc = fail_at(err, dir);
            }
        }
        closedir(d);
    }
    return rc;
}

/* t sorted by path, types following their paths. */
static int tree_sort(struct tree_list *t)
{
    char **pairs = malloc((size_t)(t->n ? t->n : 1) * sizeof(*pairs));
    if (!pairs)
        return -1;
    for (int i = 0; i < t->n; i++) { /* "<type><path>" sorts as the paths do, types apart */
        size_t n = strlen(t->paths[i]);
        if (!(pairs[i] = malloc(n + 2))) {
            while (i--)
                free(pairs[i]);
            free(pairs);
            return -1;
        }
        memcpy(pairs[i], t->paths[i], n + 1);
        pairs[i][n + 1] = t->types[i];
    }
    qsort(pairs, (size_t)t->n, sizeof(*pairs), by_path);
    for (int i = 0; i < t->n; i++) {
        size_t n = strlen(pairs[i]);
        t->types[i] = pairs[i][n + 1];
        free(t->paths[i]);
        t->paths[i] = pairs[i];
    }
    free(pairs);
    return 0;
}

struct marker_job {
    const struct tree_list *t;
};

/* The marker: a first line that says what it is, the version, then one path a line. */
static int write_marker(FILE *f, void *ctx, struct diag *err)
{
    const struct tree_list *t = ((const struct marker_job *)ctx)->t;
    fprintf(f, "%s\n", EXPORT_MARKER_MAGIC);
    fprintf(f, "version %s\n", ATTNSCOPE_VERSION);
    fputs("# Every path this export wrote (d a folder, f a file). attnscope replaces this folder\n"
          "# with a new export only while it holds these paths and nothing else: anything added\n"
          "# here is the user's, and keeps the folder from being replaced.\n",
          f);
    for (int i = 0; i < t->n; i++)
        fprintf(f, "%c %s\n", t->types[i], t->paths[i]);
    if (ferror(f))
        return attn_diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

/* Writes dir/.attnscope-export listing everything below dir, the marker included. */
static int export_mark(const char *dir, struct diag *err)
{
    struct tree_list t = {0};
    int rc = tree_walk(&t, dir, err);
    if (rc == 0 && tree_list_add(&t, 'f', EXPORT_MARKER, strlen(EXPORT_MARKER)) != 0)
        rc = -1;
    if (rc == 0 && tree_sort(&t) != 0)
        rc = -1;
    if (rc != 0 && !err->msg[0]) {
        attn_diag_set(err, NULL, "out of memory");
        fail_at(err, dir);
    }
    char path[EXPORT_PATH_MAX];
    if (rc == 0 && join_path(path, dir, EXPORT_MARKER, NULL, err) != 0)
        rc = -1;
    struct marker_job job = {&t};
    if (rc == 0 && attn_fsutil_write_new(path, write_marker, &job, err) != 0)
        rc = fail_at(err, path);
    tree_list_free(&t);
    return rc;
}

/* The marker's paths, read back: 0, -1 when it is not a marker an export wrote, or -2 (err
 * "out of memory") when memory ran out reading it. */
static int read_marker(struct tree_list *out, const char *path, struct diag *err)
{
    char *text;
    size_t len;
    if (attn_fsutil_read_file(&text, &len, path, EXPORT_MARKER_MAX, err) != 0)
        return strstr(err->msg, "out of memory") ? -2 : -1;
    int rc = 0;
    bool oom = false;
    const char *p = text, *end = text + len;
    size_t magic = strlen(EXPORT_MARKER_MAGIC);
    if (len < magic + 1 || memcmp(p, EXPORT_MARKER_MAGIC, magic) != 0 || p[magic] != '\n' ||
        memchr(text, '\0', len))
        rc = -1;
    for (p += magic + 1; rc == 0 && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            rc = -1;
            break;
        }
        if (nl - p >= 3 && (p[0] == 'f' || p[0] == 'd') && p[1] == ' ')
            oom = (rc = tree_list_add(out, p[0], p + 2, (size_t)(nl - p - 2))) != 0;
        else if (!(p[0] == '#' || strncmp(p, "version ", 8) == 0))
            rc = -1;
        p = nl + 1;
    }
    free(text);
    if (rc == 0)
        oom = (rc = tree_sort(out)) != 0;
    if (oom) {
        attn_diag_file(err, path, "out of memory");
        return -2;
    }
    if (rc != 0)
        attn_diag_file(err, path, "is not a marker an attnscope export wrote");
    return rc;
}

/* The entry of m named path, or -1. m is sorted. */
static int marker_find(const struct tree_list *m, const char *path)
{
    int lo = 0, hi = m->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(m->paths[mid], path);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static const char *type_name(char type)
{
    return type == 'd' ? "folder" : type == 'f' ? "file" : "special file (a link, a FIFO...)";
}

/* The first of a folder's entries by name (the first path a sorted walk names), its type, and
 * whether it holds anything more: read in one pass over the folder alone, however much lies
 * below it. -1 with err when it cannot be read; *count 0 for an empty folder. */
static int top_entry(char *first, char *type, bool *more, int *count, const char *dir,
                     struct diag *err)
{
    *count = 0;
    *more = false;
    first[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        attn_diag_set(err, NULL, "cannot read the folder: %s", strerror(errno));
        return fail_at(err, dir);
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++*count == 1 || strcmp(e->d_name, first) < 0)
            snprintf(first, EXPORT_PATH_MAX, "%s", e->d_name);
    }
    closedir(d);
    if (*count == 0)
        return 0;
    char full[EXPORT_PATH_MAX];
    if (!(*type = entry_type(full, dir, first, err)))
        return -1;
    *more = *count > 1;
    if (!*more && *type == 'd') { /* a lone folder: "and more" when it is not empty */
        DIR *sub = opendir(full);
        while (sub && (e = readdir(sub)) && !*more)
            *more = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        if (sub)
            closedir(sub);
    }
    return 0;
}

/* The components of a relative path: "head0/weights.csv" is 2. */
static int depth_of(const char *rel)
{
    int k = 1;
    for (; *rel; rel++)
        k += *rel == '/';
    return k;
}

/* The first path below root (by name) that the marker m does not list with its type, or
 * nothing (*type 0). Only the folders m lists are read, each once: the walk is bounded by the
 * marker (which export reads up to EXPORT_MARKER_MAX), never by what else lies in the folder,
 * and never descends into a folder that is not the export's (a tree nested thousands deep
 * there is one foreign path). Without recursion: the folders to read wait in a list. */
static int first_foreign(char *path, char *type, char *listed, const struct tree_list *m,
                         const char *root, struct diag *err)
{
    *type = 0;
    *listed = 0;
    struct tree_list todo = {0}; /* folders listed in m and found as folders, still to read */
    int rc = 0;
    for (int next = -1; rc == 0 && next < todo.n; next++) {
        const char *rel = next >= 0 ? todo.paths[next] : "";
        char dir[EXPORT_PATH_MAX];
        int len = rel[0] ? snprintf(dir, sizeof(dir), "%s/%s", root, rel)
                         : snprintf(dir, sizeof(dir), "%s", root);
        if (len < 0 || len >= (int)sizeof(dir)) {
            attn_diag_set(err, NULL, "path too long");
            rc = fail_at(err, root);
            break;
        }
        DIR *d = opendir(dir);
        if (!d) {
            attn_diag_set(err, NULL, "cannot read the folder: %s", strerror(errno));
            rc = fail_at(err, dir);
            break;
        }
        struct dirent *e;
        while (rc == 0 && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[EXPORT_PATH_MAX], full[EXPORT_PATH_MAX];
            if (join_rel(sub, rel, e->d_name, dir, err) != 0) {
                rc = -1;
                break;
            }
            int at = marker_find(m, sub);
            if (at >= 0 && m->types[at] == 'f' && e->d_type == DT_REG)
                continue; /* the common case, without an lstat */
            char t = entry_type(full, dir, e->d_name, err);
            if (!t) {
                rc = -1;
            } else if (at >= 0 && m->types[at] == t &&
                       !(t == 'd' && depth_of(sub) >= EXPORT_DEPTH_MAX)) {
                if (t == 'd' && tree_list_add(&todo, 'd', sub, strlen(sub)) != 0) {
                    attn_diag_set(err, NULL, "out of memory");
                    rc = fail_at(err, root);
                }
            } else if (!*type || strcmp(sub, path) < 0) { /* the first by name wins */
                snprintf(path, EXPORT_PATH_MAX, "%s", sub);
                *type = t;
                *listed = at >= 0 && m->types[at] != t ? m->types[at] : 0;
            }
        }
        closedir(d);
    }
    tree_list_free(&todo);
    return rc;
}

int export_check_target(const char *dir, bool *replaces, struct diag *err)
{
    attn_diag_clear(err);
    if (replaces)
        *replaces = false;
    /* "out/" is "out": without this, lstat would follow a symbolic link named with a slash. */
    char name[EXPORT_PATH_MAX];
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= sizeof(name)) {
        attn_diag_set(err, NULL, "the folder name is too long");
        return fail_at(err, dir);
    }
    memcpy(name, dir, n);
    name[n] = '\0';
    struct stat st;
    if (lstat(name, &st) != 0)
        return 0; /* a new folder (or one it cannot reach: creating it says why) */
    if (S_ISLNK(st.st_mode)) {
        char to[1024];
        ssize_t k = readlink(name, to, sizeof(to) - 1);
        to[k > 0 ? k : 0] = '\0';
        attn_diag_set(
            err, NULL,
            "is a symbolic link%s%.300s%s; export replaces a folder, never a link: name the "
            "folder it points to",
            k > 0 ? " (to " : "", to, k > 0 ? ")" : "");
        return fail_at(err, name);
    }
    if (!S_ISDIR(st.st_mode)) {
        attn_diag_set(err, NULL,
                      S_ISREG(st.st_mode) ? "is a file; export writes a folder"
                                          : "is not a folder (a FIFO, a device...); export "
                                            "writes a folder");
        return fail_at(err, name);
    }
    /* The marker decides first: a folder without one is refused from its top alone, however
       large or deep it is (-o /usr, a tree nested 700 deep). */
    char first[EXPORT_PATH_MAX], first_type = 0;
    bool more;
    int count;
    if (top_entry(first, &first_type, &more, &count, name, err) != 0)
        return -1;
    if (count == 0)
        return 0; /* empty */
    struct tree_list marker = {0};
    char mpath[EXPORT_PATH_MAX];
    struct diag merr;
    attn_diag_clear(&merr);
    int mrc = -1, rc = 0;
    struct stat mst;
    bool has_marker =
        join_path(mpath, name, EXPORT_MARKER, NULL, &merr) == 0 && lstat(mpath, &mst) == 0;
    if (has_marker && S_ISREG(mst.st_mode))
        mrc = read_marker(&marker, mpath, &merr);
    if (mrc == -2) { /* whether it is an export is not known: memory ran out reading it */
        *err = merr;
        rc = -1;
        goto out;
    }
    if (mrc != 0) {
        attn_diag_set(
            err, NULL,
            "is not an attnscope export: it holds %.200s%s%s but %s; export never replaces "
            "such a folder: name a new or empty folder (an export made before exports "
            "carried the marker has none: remove it yourself)",
            first, first_type == 'd' ? "/" : "", more ? " and more" : "",
            has_marker ? "an " EXPORT_MARKER " it did not write" : "no " EXPORT_MARKER " marker");
        rc = fail_at(err, name);
        goto out;
    }
    char foreign[EXPORT_PATH_MAX], type, listed;
    if ((rc = first_foreign(foreign, &type, &listed, &marker, name, err)) != 0)
        goto out;
    if (type) {
        attn_diag_clear(err);
        if (!listed)
            attn_diag_set(
                err, NULL,
                "holds %.200s%s, which the attnscope export there did not write (its " EXPORT_MARKER
                " lists what it did): export never replaces it; move that "
                "out, or name a new or empty folder",
                foreign, type == 'd' ? "/" : "");
        else
            attn_diag_set(
                err, NULL,
                "holds %.200s as a %s where the attnscope export there wrote a %s: export "
                "never replaces it; move that out, or name a new or empty folder",
                foreign, type_name(type), type_name(listed));
        rc = fail_at(err, name);
        goto out;
    }
    if (replaces)
        *replaces = true;
out:
    tree_list_free(&marker);
    return rc;
}

/* Rewrites a path in err from the temporary folder to the folder the user named. */
static void name_target(struct diag *err, const struct fsutil_dirswap *tx)
{
    size_t n = strlen(tx->tmp);
    if (n && strncmp(err->file, tx->tmp, n) == 0) {
        char rest[DIAG_FILE_MAX];
        snprintf(rest, sizeof(rest), "%s", err->file + n);
        int half = (int)sizeof(err->file) / 2 - 1;
        snprintf(err->file, sizeof(err->file), "%.*s%.*s", half, tx->target, half, rest);
    }
}

int export_dir(const char *dir, const struct attn_scene *s, const struct attn_net *net,
               enum export_format fmt, struct diag *err)
{
    return export_dir_progress(dir, s, net, fmt, NULL, err);
}

int export_dir_progress(const char *dir, const struct attn_scene *s, const struct attn_net *net,
                        enum export_format fmt, const struct progress_sink *progress,
                        struct diag *err)
{
    return export_dir_top(dir, s, net, fmt, EXPORT_TOP_DEFAULT, progress, err);
}

int export_stream_begin(struct export_stream *x, const char *dir, enum export_format fmt, int top_k,
                        const struct progress_sink *progress, struct diag *err)
{
    memset(x, 0, sizeof(*x));
    x->fmt = fmt;
    x->top_k = top_k;
    x->progress = progress;
    if (export_check_target(dir, NULL, err) != 0 || attn_fsutil_dirswap_begin(&x->tx, dir, err))
        return -1;
    x->open = true;
    return 0;
}

void export_stream_abort(struct export_stream *x)
{
    if (x->open)
        attn_fsutil_dirswap_abort(&x->tx);
    x->open = false;
    free(x->roll);
    free(x->prev);
    x->roll = x->prev = NULL;
}

int export_stream_layer(struct export_stream *x, const struct attn_scene *s,
                        const struct attn_net *net, int layer, struct diag *err)
{
    if (export_files_layer(x, s, net, layer, err) != 0) {
        name_target(err, &x->tx);
        export_stream_abort(x);
        return -1;
    }
    return 0;
}

/* The stop flag read once more before the export is marked and swapped in: a signal while the
 * last layer's shared files or the tail were written keeps the previous export. */
static int stopped_before_swap(const struct export_stream *x, struct diag *err)
{
    if (!progress_stopped(x->progress))
        return 0;
    attn_diag_clear(err);
    attn_diag_set(err, NULL, "interrupted; the folder is as it was");
    return fail_at(err, x->tx.target);
}

int export_stream_end(struct export_stream *x, const struct attn_scene *s,
                      const struct attn_net *net, struct diag *err)
{
    if (export_tail(x, s, net, err) != 0 || stopped_before_swap(x, err) != 0 ||
        export_mark(x->tx.tmp, err) != 0) {
        name_target(err, &x->tx);
        export_stream_abort(x);
        return -1;
    }
    /* Once more right before the swap: a file the user put there while this export was being
       written is theirs, and the folder is no longer an export's. */
    if (export_check_target(x->tx.target, NULL, err) != 0) {
        export_stream_abort(x);
        return -1;
    }
    x->open = false; /* the swap ends the transaction either way */
    int rc = attn_fsutil_dirswap_commit(&x->tx, err);
    export_stream_abort(x);
    return rc;
}

int export_dir_top(const char *dir, const struct attn_scene *s, const struct attn_net *net,
                   enum export_format fmt, int top_k, const struct progress_sink *progress,
                   struct diag *err)
{
    struct export_stream x;
    if (export_stream_begin(&x, dir, fmt, top_k, progress, err) != 0)
        return -1;
    for (int L = 0; L < net->layers; L++)
        if (export_stream_layer(&x, s, net, L, err) != 0)
            return -1;
    return export_stream_end(&x, s, net, err);
}
