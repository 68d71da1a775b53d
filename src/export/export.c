/* export: every stage of a forward pass as files other tools can read.
 *
 * The layout is the contract of README.md ("Export format"). Each file goes through
 * fsutil_write_atomic, so a reader (or a crash) never sees half a file. The resolved scene.yaml
 * makes the export reproducible: loading it and exporting again gives the same bytes.
 */
#include "export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "scenefile/scenefile.h"

#define EXPORT_PATH_MAX 4096

/* What one CSV file holds; the context of write_csv. */
struct csv_job {
    struct mat_view v;
    const char *corner; /* first header cell */
    char *const *rows;  /* row labels, or NULL for 0, 1, ... */
    char *const *cols;  /* column labels, or NULL for d0, d1, ... */
};

static int write_csv(FILE *f, void *ctx, struct diag *err)
{
    const struct csv_job *job = ctx;
    if (csv_write_table(f, job->v, job->corner, job->rows, job->cols) != 0)
        return diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

static int write_scene(FILE *f, void *ctx, struct diag *err)
{
    return scenefile_write(f, ctx, true, err);
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
        diag_clear(err);
        diag_set(err, NULL, "path too long");
        return fail_at(err, dir);
    }
    return 0;
}

static int put_csv(const char *dir, const char *sub, const char *name, struct mat_view v,
                   const char *corner, char *const *rows, char *const *cols, struct diag *err)
{
    char path[EXPORT_PATH_MAX];
    if (join_path(path, dir, sub ? sub : name, sub ? name : NULL, err) != 0)
        return -1;
    struct csv_job job = {v, corner, rows, cols};
    if (fsutil_write_atomic(path, true, write_csv, &job, err) != 0)
        return fail_at(err, path);
    return 0;
}

static int make_dir(const char *dir, const char *sub, struct diag *err)
{
    char path[EXPORT_PATH_MAX];
    if (join_path(path, dir, sub, NULL, err) != 0)
        return -1;
    if (fsutil_mkdir_p(path, err) != 0)
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
static int export_params(const char *dir, const struct scene *s, const struct model *m,
                         struct diag *err)
{
    static const char *const w_names[3] = {"W_query.csv", "W_key.csv", "W_value.csv"};
    static const char *const b_names[3] = {"b_query.csv", "b_key.csv", "b_value.csv"};
    static char b_label[] = "b";
    char *const bias_row[1] = {b_label};
    struct labels dl = {0}, ml = {0};
    float *mask = NULL;
    int rc = -1;

    if (make_dir(dir, "params", err) != 0)
        goto out;
    int n_d = m->d_in > m->D ? m->d_in : m->D;
    for (int i = 0; i < n_d; i++)
        if (labels_push(&dl, "d%d", i, NULL) != 0)
            goto oom;

    if (m->project) {
        const float *w[3] = {m->wq, m->wk, m->wv};
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
                struct mat_view v = {w[k] + (size_t)h * (size_t)width, m->d_in, width, m->D};
                if (put_csv(dir, sub, w_names[k], v, "row", dl.items, NULL, err) != 0)
                    goto out;
            }
            for (int k = 0; k < 3; k++) {
                if (!b[k])
                    continue;
                struct mat_view v = {b[k] + (size_t)h * (size_t)width, 1, width, m->D};
                if (put_csv(dir, sub, b_names[k], v, "row", bias_row, NULL, err) != 0)
                    goto out;
            }
        }
    }
    if (m->wo) {
        struct mat_view v = {m->wo, m->D, m->D, m->D};
        if (put_csv(dir, "params", "out.csv", v, "row", dl.items, NULL, err) != 0)
            goto out;
    }
    if (m->bo) {
        struct mat_view v = {m->bo, 1, m->D, m->D};
        if (put_csv(dir, "params", "out_bias.csv", v, "row", bias_row, NULL, err) != 0)
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
        struct mat_view v = {mask, m->heads * m->n, m->n, m->n};
        if (put_csv(dir, "params", "dropout_mask.csv", v, "token", ml.items, m->tokens, err) != 0)
            goto out;
    }
    rc = 0;
    goto out;
oom:
    diag_clear(err);
    diag_set(err, NULL, "out of memory");
    fail_at(err, dir);
out:
    free(mask);
    labels_free(&dl);
    labels_free(&ml);
    return rc;
}

int export_dir(const char *dir, const struct scene *s, const struct model *m,
               const struct attn_run *r, struct diag *err)
{
    diag_clear(err);
    char path[EXPORT_PATH_MAX];
    if (fsutil_mkdir_p(dir, err) != 0)
        return fail_at(err, dir);

    /* scene.yaml first: with it the rest can always be regenerated. */
    struct scene resolved;
    if (scene_from_model(&resolved, s, m) != 0) {
        diag_set(err, NULL, "out of memory while resolving the scene");
        return fail_at(err, dir);
    }
    int rc = join_path(path, dir, "scene.yaml", NULL, err);
    if (rc == 0 && fsutil_write_atomic(path, true, write_scene, &resolved, err) != 0)
        rc = fail_at(err, path);
    scene_free(&resolved);
    if (rc != 0)
        return -1;

    if (put_csv(dir, NULL, "inputs.csv", attn_view(r, m, STAGE_INPUTS, 0), "token", m->tokens, NULL,
                err) != 0)
        return -1;
    if (export_params(dir, s, m, err) != 0)
        return -1;

    for (int h = 0; h < m->heads; h++) {
        char sub[32];
        snprintf(sub, sizeof(sub), "head%d", h);
        if (make_dir(dir, sub, err) != 0)
            return -1;
        for (int st = 0; st < STAGE_COUNT; st++) {
            if (!stage_is_per_head((enum stage)st))
                continue;
            char name[64];
            snprintf(name, sizeof(name), "%s.csv", stage_name((enum stage)st));
            char *const *cols = stage_is_square((enum stage)st) ? m->tokens : NULL;
            if (put_csv(dir, sub, name, attn_view(r, m, (enum stage)st, h), "token", m->tokens,
                        cols, err) != 0)
                return -1;
        }
    }

    /* The concatenated heads are "context.csv": the name the book's readers look for. */
    if (put_csv(dir, NULL, "context.csv", attn_view(r, m, STAGE_CONCAT, 0), "token", m->tokens,
                NULL, err) != 0)
        return -1;
    if (put_csv(dir, NULL, "output.csv", attn_view(r, m, STAGE_OUTPUT, 0), "token", m->tokens, NULL,
                err) != 0)
        return -1;
    return 0;
}
