/* api: libattnscope's public API (include/attnscope/attnscope.h) over the engine, the scene
 * files and the pretrained models.
 *
 * The handles wrap the engine's own structs, so a program never sees them: attnscope_scene is a
 * struct attn_scene, attnscope_result an attn_net computed from it. A result holds a reference
 * on its scene, whose matrices (a checkpoint's mapping, among them) its models borrow.
 */
#include <attnscope/attnscope.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "engine/attention.h"
#include "engine/net.h"
#include "engine/scene.h"
#include "engine/stage.h"
#include "scenefile/scenefile.h"

#ifndef ATTNSCOPE_VERSION
#define ATTNSCOPE_VERSION "unknown"
#endif

struct attnscope_scene {
    int refs; /* the caller's, and one per result computed from it */
    struct attn_scene scene;
    char where[ATTNSCOPE_ERROR_FILE_MAX]; /* what its warnings without a file of their own name */
};

struct attnscope_result {
    attnscope_scene *scene;
    struct attn_net net;
};

const char *attnscope_version(void)
{
    return ATTNSCOPE_VERSION;
}

/* err (may be NULL) from a diag; more: the problems after it. Returns -1. */
static int error_from(attnscope_error *err, const struct diag *d, int more)
{
    if (!err)
        return -1;
    memset(err, 0, sizeof(*err));
    snprintf(err->file, sizeof(err->file), "%s", d->file);
    err->line = d->line;
    err->col = d->line > 0 ? (d->col > 0 ? d->col : 1) : 0;
    snprintf(err->message, sizeof(err->message), "%s", d->msg);
    err->more = more > 0 ? more : 0;
    return -1;
}

static int error_set(attnscope_error *err, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int error_set(attnscope_error *err, const char *file, const char *fmt, ...)
{
    struct diag d;
    attn_diag_clear(&d);
    snprintf(d.file, sizeof(d.file), "%s", file ? file : "");
    va_list ap;
    va_start(ap, fmt);
    attn_diag_vset(&d, "", fmt, ap);
    va_end(ap);
    return error_from(err, &d, 0);
}

/* The first problem of a failed load, the others counted. When memory ran out for some of them
 * the first kept may not be the first: the error says out of memory instead. */
static int error_from_list(attnscope_error *err, const struct diag_list *l, const char *path)
{
    if (l->lost > 0) {
        error_set(err, path, "out of memory: %d of its problems could not be kept", l->lost);
        if (err)
            err->more = l->n + l->lost - 1;
        return -1;
    }
    if (l->n > 0)
        return error_from(err, &l->items[0], l->n - 1);
    return error_set(err, path, "invalid scene");
}

char *attnscope_error_text(char *out, size_t size, const attnscope_error *err)
{
    if (err->file[0] && err->line > 0)
        snprintf(out, size, "%s:%d:%d: %s", err->file, err->line, err->col > 0 ? err->col : 1,
                 err->message);
    else if (err->file[0])
        snprintf(out, size, "%s: %s", err->file, err->message);
    else
        snprintf(out, size, "%s", err->message);
    return out;
}

int attnscope_scene_open(attnscope_scene **out, const char *path, attnscope_error *err)
{
    *out = NULL;
    attnscope_scene *s = calloc(1, sizeof(*s));
    if (!s)
        return error_set(err, path, "out of memory");
    s->refs = 1;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int rc;
    if (attn_scenefile_is_model(path)) {
        struct attn_model_files m;
        struct diag d;
        attn_diag_clear(&d);
        if (attn_scenefile_find_model(&m, path, NULL, &d) != 0) {
            attn_scene_init(&s->scene);
            attn_diag_list_push(&errs, &d);
            rc = -1;
        } else {
            rc = attn_scenefile_load_model(&s->scene, &m, &errs);
        }
    } else {
        rc = attn_scenefile_load(&s->scene, path, &errs, NULL, NULL);
    }
    if (rc != 0) {
        error_from_list(err, &errs, path);
        /* a whole-file problem (no such file) names its file already; one without, the path */
        if (err && !err->file[0])
            snprintf(err->file, sizeof(err->file), "%s", path);
        attn_diag_list_free(&errs);
        free(s); /* the loader left s->scene freed */
        return -1;
    }
    attn_diag_list_free(&errs);
    snprintf(s->where, sizeof(s->where), "%s", path);
    *out = s;
    return 0;
}

int attnscope_warnings(const attnscope_scene *scene)
{
    struct diag d;
    int n = 0;
    while (attn_scenefile_warning(&d, &scene->scene, scene->where, n) == 0)
        n++;
    return n;
}

int attnscope_warning(attnscope_error *out, const attnscope_scene *scene, int i)
{
    struct diag d;
    if (attn_scenefile_warning(&d, &scene->scene, scene->where, i) != 0)
        return error_set(out, scene->where, "no warning %d: the scene has %d", i,
                         attnscope_warnings(scene));
    error_from(out, &d, 0);
    return 0;
}

static void scene_unref(attnscope_scene *s)
{
    if (s && --s->refs == 0) {
        attn_scene_free(&s->scene);
        free(s);
    }
}

void attnscope_scene_delete(attnscope_scene *scene)
{
    scene_unref(scene);
}

int attnscope_compute(attnscope_result **out, const attnscope_scene *scene, attnscope_error *err)
{
    *out = NULL;
    attnscope_result *r = calloc(1, sizeof(*r));
    if (!r)
        return error_set(err, NULL, "out of memory");
    struct diag d;
    attn_diag_clear(&d);
    int rc = attn_net_compute(&r->net, &scene->scene, &d);
    /* A checkpoint that shrank while it was read gave zeros, not its numbers. */
    if (rc == 0 && attn_scene_check_backing(&scene->scene, &d) != 0) {
        attn_net_free(&r->net);
        rc = -1;
    }
    if (rc != 0) {
        free(r);
        return error_from(err, &d, 0);
    }
    /* The handle is const to the caller: only its count of references changes. */
    r->scene = (attnscope_scene *)scene;
    r->scene->refs++;
    *out = r;
    return 0;
}

void attnscope_result_delete(attnscope_result *result)
{
    if (!result)
        return;
    attn_net_free(&result->net);
    scene_unref(result->scene);
    free(result);
}

int attnscope_tokens(const attnscope_result *result)
{
    return result->net.layers > 0 ? result->net.model[0].n : 0;
}

const char *attnscope_token(const attnscope_result *result, int i)
{
    return i >= 0 && i < attnscope_tokens(result) ? result->net.model[0].tokens[i] : NULL;
}

int attnscope_layers(const attnscope_result *result)
{
    return result->net.layers;
}

int attnscope_heads(const attnscope_result *result)
{
    return result->net.layers > 0 ? result->net.model[0].heads : 0;
}

int attnscope_stages(const attnscope_result *result, int layer)
{
    if (layer < 0 || layer >= result->net.layers)
        return 0;
    enum attn_stage order[STAGE_COUNT];
    return attn_stage_order(order, &result->net.model[layer]);
}

const char *attnscope_stage_name(const attnscope_result *result, int layer, int i)
{
    if (layer < 0 || layer >= result->net.layers)
        return NULL;
    enum attn_stage order[STAGE_COUNT];
    int n = attn_stage_order(order, &result->net.model[layer]);
    return i >= 0 && i < n ? attn_stage_name(order[i]) : NULL;
}

int attnscope_stage_per_head(const char *stage)
{
    int st = attn_stage_parse(stage);
    return st < 0 ? -1 : attn_stage_is_per_head((enum attn_stage)st);
}

/* Layer's model, and stage st in it, or -1 with err. */
static int find_stage(const struct attn_model **m, enum attn_stage *st,
                      const attnscope_result *result, int layer, const char *stage,
                      attnscope_error *err)
{
    if (layer < 0 || layer >= result->net.layers)
        return error_set(err, NULL, "no layer %d: the scene has %d", layer, result->net.layers);
    int parsed = attn_stage_parse(stage);
    if (parsed < 0)
        return error_set(err, NULL, "no stage is called \"%s\"", stage);
    *m = &result->net.model[layer];
    *st = (enum attn_stage)parsed;
    if (!attn_stage_present(*m, *st))
        return error_set(err, NULL, "layer %d has no %s stage", layer, attn_stage_name(*st));
    return 0;
}

/* The shape attn_view gives: the square stages, derived ones among them, are (n, n). */
static void stage_shape(size_t *rows, size_t *cols, const attnscope_result *result, int layer,
                        const struct attn_model *m, enum attn_stage st)
{
    if (attn_stage_is_square(st)) {
        *rows = *cols = (size_t)m->n;
        return;
    }
    struct attn_mat_view v = attn_view(&result->net.run[layer], m, st, 0);
    *rows = (size_t)v.rows;
    *cols = (size_t)v.cols;
}

int attnscope_matrix_shape(size_t *rows, size_t *cols, const attnscope_result *result, int layer,
                           const char *stage, attnscope_error *err)
{
    const struct attn_model *m;
    enum attn_stage st;
    if (find_stage(&m, &st, result, layer, stage, err) != 0)
        return -1;
    stage_shape(rows, cols, result, layer, m, st);
    return 0;
}

int attnscope_matrix(float *out, size_t rows, size_t cols, const attnscope_result *result,
                     int layer, const char *stage, int head, attnscope_error *err)
{
    const struct attn_model *m;
    enum attn_stage st;
    if (find_stage(&m, &st, result, layer, stage, err) != 0)
        return -1;
    if (head < 0 || head >= m->heads)
        return error_set(err, NULL, "no head %d: layer %d has %d", head, layer, m->heads);
    size_t want_rows, want_cols;
    stage_shape(&want_rows, &want_cols, result, layer, m, st);
    if (rows != want_rows || cols != want_cols)
        return error_set(err, NULL, "layer %d's %s is %zu\u00d7%zu, not %zu\u00d7%zu", layer,
                         attn_stage_name(st), want_rows, want_cols, rows, cols);
    /* A derived stage (scaled, masked, dropout, weighted_norm) is computed into out itself, and
     * the run's memo is left alone: the result stays as it was, const. */
    struct attn_mat_view v = attn_view_buf(out, rows * cols, &result->net.run[layer], m, st, head);
    if (v.data == out && (size_t)v.stride == cols)
        return 0;
    for (size_t i = 0; i < rows; i++)
        memcpy(out + i * cols, v.data + i * (size_t)v.stride, cols * sizeof(float));
    return 0;
}
