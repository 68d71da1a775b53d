/* loader: the state of one scene-file parse: its problems, where each key is, which keys had a
 * problem (see locate.h). load.c drives a parse; schema.c fills the scene through these. */
#include "scenefile/locate.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- locations ---------------------------------------------------------------------------- */

void attn_loader_locate(struct loader *l, int node, int *line, int *col)
{
    if (node < 0) {
        *line = 1;
        *col = 1;
        return;
    }
    attn_ytree_locate(&l->tree, ytree_pos(&l->tree, node), line, col);
}

int attn_loader_line(struct loader *l, int node)
{
    int line, col;
    attn_loader_locate(l, node, &line, &col);
    return line;
}

/* ---- problems ----------------------------------------------------------------------------- */

void attn_loader_mark_bad(struct loader *l, const char *path)
{
    path = path ? path : "";
    for (int i = 0; i < l->n_bad; i++)
        if (strcmp(l->bad[i], path) == 0)
            return;
    if (l->n_bad == l->cap_bad) {
        int cap = l->cap_bad ? l->cap_bad * 2 : 16;
        char(*bad)[DIAG_PATH_MAX] = realloc(l->bad, (size_t)cap * sizeof(*bad));
        if (!bad) {
            attn_loader_out_of_memory(l);
            return;
        }
        l->bad = bad;
        l->cap_bad = cap;
    }
    snprintf(l->bad[l->n_bad++], DIAG_PATH_MAX, "%s", path);
}

/* True when a is b, or a key below b ("attention.d_out" is below "attention"). */
bool attn_loader_path_within(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (n == 0)
        return true;
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '.' || a[n] == '[');
}

bool attn_loader_bad(const struct loader *l, const char *path)
{
    for (int i = 0; i < l->n_bad; i++)
        if (attn_loader_path_within(l->bad[i], path))
            return true;
    return false;
}

bool attn_loader_unknown(const struct loader *l, const char *path)
{
    for (int i = 0; i < l->n_bad; i++)
        if (attn_loader_path_within(l->bad[i], path) ||
            (l->bad[i][0] && attn_loader_path_within(path, l->bad[i])))
            return true;
    return false;
}

void attn_loader_out_of_memory(struct loader *l)
{
    if (!l->oom) {
        l->oom = true;
        attn_ydiag_add_line(&l->yd, 0, 0, "", "out of memory while reading the scene file");
    }
    l->yd.stopped = true;
}

void attn_loader_error_at(struct loader *l, int line, int col, const char *path, const char *msg)
{
    attn_loader_mark_bad(l, path);
    attn_ydiag_add_line(&l->yd, line, col, path, "%s", msg);
}

void attn_loader_error_in(struct loader *l, const struct diag *d, const char *path)
{
    attn_loader_mark_bad(l, path);
    int before = l->yd.errs->n;
    attn_ydiag_add_line(&l->yd, d->line, d->col, path, "%s", d->msg);
    if (l->yd.errs->n > before) /* added: at the other file */
        snprintf(l->yd.errs->items[before].file, sizeof(d->file), "%s", d->file);
}

void attn_loader_error(struct loader *l, int node, const char *path, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line, col;
    attn_loader_locate(l, node, &line, &col);
    attn_loader_error_at(l, line, col, path, msg);
}

/* A problem of the YAML stream itself, in the words of src/yaml/ydiag. Scene files refuse
 * anchors and aliases, and a file too large gets a hint where large matrices belong. */
bool attn_loader_yaml_problem(void *ctx, const struct yproblem *p)
{
    struct loader *l = ctx;
    attn_loader_mark_bad(l, "");
    if (p->kind == YPROB_TOO_MANY_NODES)
        return attn_ydiag_add(&l->yd, p->pos, "",
                              "the file holds more than %d values; stopped reading here (large "
                              "matrices belong in .npy files: {file: name.npy})",
                              p->limit);
    return attn_ydiag_stream(&l->yd, p, "scene file");
}

/* ---- keys and their locations ------------------------------------------------------------- */

void attn_loader_register(struct loader *l, const char *path, int key, int value)
{
    if (attn_loader_find(l, path))
        return;
    if (l->n_keys == l->cap_keys) {
        int cap = l->cap_keys ? l->cap_keys * 2 : 32;
        struct loader_key *keys = realloc(l->keys, (size_t)cap * sizeof(*keys));
        if (!keys) {
            attn_loader_out_of_memory(l);
            return;
        }
        l->keys = keys;
        l->cap_keys = cap;
    }
    struct loader_key *k = &l->keys[l->n_keys++];
    snprintf(k->path, sizeof(k->path), "%s", path);
    k->key = key;
    k->value = value;
    k->file = NULL;
}

const struct loader_key *attn_loader_find(const struct loader *l, const char *path)
{
    for (int i = 0; i < l->n_keys; i++)
        if (strcmp(l->keys[i].path, path) == 0)
            return &l->keys[i];
    return NULL;
}

void attn_loader_set_file(struct loader *l, const char *path, const char *file)
{
    for (int i = 0; i < l->n_keys; i++)
        if (strcmp(l->keys[i].path, path) == 0)
            l->keys[i].file = file;
}

const char *attn_loader_file(const struct loader *l, const char *path)
{
    const struct loader_key *k = attn_loader_find(l, path);
    return k ? k->file : NULL;
}

const char *attn_loader_show(const struct loader *l, int node, char *buf, size_t size)
{
    return attn_ydiag_show(&l->tree, node, buf, size);
}
