/* load: reading a scene file, and where each problem is.
 *
 * The parse runs in three steps: libyaml events -> node tree (src/yaml), tree -> struct scene
 * through the schema tables (schema.c), then scene_check for the rules that span several keys.
 * Every problem becomes a diag with file:line:col; ytree_locate turns libyaml's marks (columns in
 * characters from 0) into the 1-based byte columns diag_print puts its caret by.
 */
#include "scenefile/scenefile.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "scenefile/loader.h"

/* ---- locations ---------------------------------------------------------------------------- */

static void loc_of_node(struct loader *l, int node, int *line, int *col)
{
    if (node < 0) {
        *line = 1;
        *col = 1;
        return;
    }
    ytree_locate(&l->tree, ytree_pos(&l->tree, node), line, col);
}

int loader_line(struct loader *l, int node)
{
    int line, col;
    loc_of_node(l, node, &line, &col);
    return line;
}

/* ---- problems ----------------------------------------------------------------------------- */

void loader_mark_bad(struct loader *l, const char *path)
{
    path = path ? path : "";
    for (int i = 0; i < l->n_bad; i++)
        if (strcmp(l->bad[i], path) == 0)
            return;
    if (l->n_bad == l->cap_bad) {
        int cap = l->cap_bad ? l->cap_bad * 2 : 16;
        char(*bad)[DIAG_PATH_MAX] = realloc(l->bad, (size_t)cap * sizeof(*bad));
        if (!bad)
            return;
        l->bad = bad;
        l->cap_bad = cap;
    }
    snprintf(l->bad[l->n_bad++], DIAG_PATH_MAX, "%s", path);
}

/* True when a is b, or a key below b ("attention.d_out" is below "attention"). */
static bool path_within(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (n == 0)
        return true;
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '.' || a[n] == '[');
}

bool loader_bad(const struct loader *l, const char *path)
{
    for (int i = 0; i < l->n_bad; i++)
        if (path_within(l->bad[i], path))
            return true;
    return false;
}

bool loader_unknown(const struct loader *l, const char *path)
{
    for (int i = 0; i < l->n_bad; i++)
        if (path_within(l->bad[i], path) || (l->bad[i][0] && path_within(path, l->bad[i])))
            return true;
    return false;
}

static void add_at(struct loader *l, int line, int col, const char *path, const char *msg)
{
    loader_mark_bad(l, path);
    if (l->stopped) {
        l->truncated = true;
        return;
    }
    if (l->n_errors >= LOADER_MAX_ERRORS) {
        l->stopped = true;
        l->truncated = true;
        return;
    }
    diag_list_add(l->errs, l->name, line, col, path, "%s", msg);
    l->n_errors++;
}

void loader_error(struct loader *l, int node, const char *path, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line, col;
    loc_of_node(l, node, &line, &col);
    add_at(l, line, col, path, msg);
}

bool loader_error_pos(struct loader *l, struct ypos pos, const char *path, const char *msg)
{
    int line, col;
    ytree_locate(&l->tree, pos, &line, &col);
    add_at(l, line, col, path, msg);
    return !l->stopped;
}

/* A problem of the YAML stream itself, in the scene loader's words. */
static bool report_cb(void *ctx, const struct yproblem *p)
{
    char msg[512];
    const char *problem = p->problem ? p->problem : "unknown problem";
    switch (p->kind) {
    case YPROB_MEMORY:
        snprintf(msg, sizeof(msg), "out of memory while reading YAML");
        break;
    case YPROB_ENCODING:
        if (p->byte >= 0)
            snprintf(msg, sizeof(msg), "not valid UTF-8 text: %s (byte 0x%02X)", problem,
                     (unsigned)p->byte);
        else
            snprintf(msg, sizeof(msg), "not valid UTF-8 text: %s", problem);
        break;
    case YPROB_SYNTAX:
        if (p->context)
            snprintf(msg, sizeof(msg), "syntax error: %s (%s starting at line %zu)", problem,
                     p->context, p->context_line + 1);
        else
            snprintf(msg, sizeof(msg), "syntax error: %s", problem);
        break;
    case YPROB_TOO_DEEP:
        snprintf(msg, sizeof(msg), "the document nests more than %d levels deep", p->limit);
        break;
    case YPROB_TOO_MANY_NODES:
        snprintf(msg, sizeof(msg),
                 "the file holds more than %d values; stopped reading here (large matrices "
                 "belong in .npy files: {file: name.npy})",
                 p->limit);
        break;
    case YPROB_TOO_LONG:
        if (p->key && p->row > 0)
            snprintf(msg, sizeof(msg),
                     "'%.60s' row %d has more than %d values; no scene needs that many", p->key,
                     p->row, p->limit);
        else if (p->key)
            snprintf(msg, sizeof(msg), "'%.60s' has more than %d entries; no scene needs that many",
                     p->key, p->limit);
        else
            snprintf(msg, sizeof(msg), "a list with more than %d entries; no scene needs that many",
                     p->limit);
        break;
    case YPROB_SECOND_DOCUMENT:
        snprintf(msg, sizeof(msg),
                 "a scene file holds one YAML document, but a second one starts here");
        break;
    case YPROB_ANCHOR:
        snprintf(msg, sizeof(msg),
                 "anchors (&%s) are not supported in scene files; write the value out", p->name);
        break;
    case YPROB_ALIAS:
        snprintf(msg, sizeof(msg),
                 "aliases (*%s) are not supported in scene files; write the value out", p->name);
        break;
    }
    return loader_error_pos(ctx, p->pos, "", msg);
}

/* ---- keys and their locations ------------------------------------------------------------- */

void loader_register(struct loader *l, const char *path, int key, int value)
{
    if (loader_find(l, path))
        return;
    if (l->n_keys == l->cap_keys) {
        int cap = l->cap_keys ? l->cap_keys * 2 : 32;
        struct loader_key *keys = realloc(l->keys, (size_t)cap * sizeof(*keys));
        if (!keys)
            return;
        l->keys = keys;
        l->cap_keys = cap;
    }
    struct loader_key *k = &l->keys[l->n_keys++];
    snprintf(k->path, sizeof(k->path), "%s", path);
    k->key = key;
    k->value = value;
}

const struct loader_key *loader_find(const struct loader *l, const char *path)
{
    for (int i = 0; i < l->n_keys; i++)
        if (strcmp(l->keys[i].path, path) == 0)
            return &l->keys[i];
    return NULL;
}

const char *loader_show(const struct loader *l, int node, char *buf, size_t size)
{
    const struct ynode *nd = ytree_node(&l->tree, node);
    if (nd->type != YNODE_SCALAR) {
        snprintf(buf, size, "%s", ytree_type_name(nd->type));
        return buf;
    }
    if (nd->plain && nd->u.s.len == 0) {
        snprintf(buf, size, "nothing");
        return buf;
    }
    /* 'value', shortened to about 40 bytes (never inside a UTF-8 sequence), with control
     * characters escaped. */
    const unsigned char *s = (const unsigned char *)ytree_str(&l->tree, node);
    size_t len = nd->u.s.len, lim = len, o = 0;
    bool cut = false;
    if (lim > 40) {
        lim = 40;
        while (lim < len && (s[lim] & 0xC0) == 0x80)
            lim++;
        cut = true;
    }
    if (size < 16) {
        snprintf(buf, size, "a value");
        return buf;
    }
    buf[o++] = '\'';
    for (size_t i = 0; i < lim && o + 10 < size; i++) {
        if (s[i] < 0x20 || s[i] == 0x7f)
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", s[i]);
        else
            buf[o++] = (char)s[i];
    }
    if (cut)
        o += (size_t)snprintf(buf + o, size - o, "...");
    snprintf(buf + o, size - o, "'");
    return buf;
}

/* ---- scene_check ------------------------------------------------------------------------ */

/* Keys that decide the shapes scene_check compares. When one of them had a problem its value
 * is a default, so shape complaints about the others would only be noise. */
static const char *const shape_keys[] = {
    "text",
    "tokens",
    "tokenizer",
    "embeddings",
    "attention.d_out",
    "attention.heads",
    "attention.head_layout",
    "attention.projection",
    "attention.qkv_bias",
    "attention.out_proj",
    "attention.out_bias",
    "positional",
    "weights",
};
#define N_SHAPE_KEYS (sizeof(shape_keys) / sizeof(shape_keys[0]))

/* Other keys a scene_check problem reads: with a bad value the complaint would be about the
 * default put in its place ("dropout_mask needs 0 < dropout < 1 (dropout is 0)"). */
static const struct {
    const char *path, *reads;
} check_reads[] = {
    {"weights.dropout_mask", "attention.dropout"},
};
#define N_CHECK_READS (sizeof(check_reads) / sizeof(check_reads[0]))

/* One path is the other or below it. "" (a problem of the whole document) relates to nothing. */
static bool related(const char *a, const char *b)
{
    return a[0] && b[0] && (path_within(a, b) || path_within(b, a));
}

static bool check_suppressed(const struct loader *l, const char *path)
{
    bool shapes_unknown = false;
    for (size_t i = 0; i < N_SHAPE_KEYS; i++)
        if (loader_unknown(l, shape_keys[i]))
            shapes_unknown = true;
    for (int i = 0; i < l->n_bad; i++)
        if (related(l->bad[i], path))
            return true;
    /* text and tokens are two spellings of the same thing. */
    if ((related(path, "text") && loader_bad(l, "tokens")) ||
        (related(path, "tokens") && loader_bad(l, "text")))
        return true;
    if (shapes_unknown)
        for (size_t i = 0; i < N_SHAPE_KEYS; i++)
            if (related(path, shape_keys[i]))
                return true;
    for (size_t i = 0; i < N_CHECK_READS; i++)
        if (related(path, check_reads[i].path) && loader_unknown(l, check_reads[i].reads))
            return true;
    return false;
}

/* The value of the key path names; else its closest enclosing key; else line 1. */
static void locate_path(struct loader *l, const char *path, int *line, int *col)
{
    const struct loader_key *k = loader_find(l, path);
    if (k) {
        loc_of_node(l, k->value, line, col);
        return;
    }
    char p[DIAG_PATH_MAX];
    snprintf(p, sizeof(p), "%s", path);
    for (;;) {
        char *cut = strrchr(p, '.');
        char *br = strrchr(p, '[');
        if (br && (!cut || br > cut))
            cut = br;
        if (!cut)
            break;
        *cut = '\0';
        k = loader_find(l, p);
        if (k) {
            loc_of_node(l, k->key, line, col);
            return;
        }
    }
    *line = 1;
    *col = 1;
}

static void run_scene_check(struct loader *l)
{
    struct diag_list found;
    diag_list_init(&found);
    scene_check(l->s, &found);
    /* All decided before any is added, since adding marks a path bad: scene_check's problems
     * are not follow-ons of one another (it skips the checks its own findings would spoil). */
    int kept = 0;
    for (int i = 0; i < found.n; i++)
        if (!check_suppressed(l, found.items[i].path))
            found.items[kept++] = found.items[i];
    for (int i = 0; i < kept && !l->stopped; i++) {
        const struct diag *d = &found.items[i];
        int line, col;
        locate_path(l, d->path, &line, &col);
        add_at(l, line, col, d->path, d->msg);
    }
    diag_list_free(&found);
}

/* ---- entry points ------------------------------------------------------------------------- */

/* Stable sort of this parse's diags by position, so they read in file order. */
static void sort_diags(struct diag_list *errs, int first)
{
    for (int i = first + 1; i < errs->n; i++) {
        struct diag d = errs->items[i];
        int j = i - 1;
        while (j >= first && (errs->items[j].line > d.line ||
                              (errs->items[j].line == d.line && errs->items[j].col > d.col))) {
            errs->items[j + 1] = errs->items[j];
            j--;
        }
        errs->items[j + 1] = d;
    }
}

static void parse_tree(struct loader *l)
{
    if (l->len > SCENEFILE_MAX_BYTES) {
        loader_error(l, -1, "", "the file is too large (%zu bytes, the limit is %zu)", l->len,
                     SCENEFILE_MAX_BYTES);
        return;
    }
    if (ytree_build(&l->tree, l->text, l->len, NULL, report_cb, l) != 0 || l->stopped)
        return;
    int root = l->tree.root;
    const struct ynode *nd = root >= 0 ? ytree_node(&l->tree, root) : NULL;
    if (!nd || (nd->type == YNODE_SCALAR && nd->plain && nd->u.s.len == 0)) {
        loader_error(l, -1, "", "the file is empty: a scene needs at least 'text: ...'");
        return;
    }
    if (nd->type != YNODE_MAP) {
        char buf[64];
        loader_error(l, root, "",
                     "a scene file must be a mapping of keys (like 'text: ...'), got %s",
                     loader_show(l, root, buf, sizeof(buf)));
        return;
    }
    schema_load_scene(l, root);
    if (!l->stopped)
        run_scene_check(l);
}

int scenefile_parse(struct scene *out, const char *name, const char *text, size_t len,
                    struct diag_list *errs)
{
    struct loader l;
    memset(&l, 0, sizeof(l));
    l.name = name ? name : "";
    const char *slash = strrchr(l.name, '/');
    if (slash)
        snprintf(l.dir, sizeof(l.dir), "%.*s", slash == l.name ? 1 : (int)(slash - l.name), l.name);
    l.text = text ? text : "";
    l.len = text ? len : 0;
    l.errs = errs;
    l.first = errs->n;
    l.tree.root = -1;
    l.text_node = l.tokens_node = -1;
    scene_init(out);
    l.s = out;

    parse_tree(&l);

    sort_diags(errs, l.first);
    if (l.truncated)
        diag_list_add(errs, l.name, 0, 0, "", "too many problems; stopped after the first %d",
                      LOADER_MAX_ERRORS);
    int failed = l.n_errors > 0;
    ytree_free(&l.tree);
    schema_free_heads(&l);
    free(l.keys);
    free(l.bad);
    if (failed) {
        scene_free(out);
        scene_init(out);
        return -1;
    }
    return 0;
}

int scenefile_load(struct scene *out, const char *path, struct diag_list *errs, char **source,
                   size_t *source_len)
{
    if (source)
        *source = NULL;
    if (source_len)
        *source_len = 0;
    char *text;
    size_t len;
    struct diag err;
    diag_clear(&err);
    if (fsutil_read_file(&text, &len, path, SCENEFILE_MAX_BYTES, &err) != 0) {
        scene_init(out);
        diag_list_push(errs, &err);
        return -1;
    }
    int rc = scenefile_parse(out, path, text, len, errs);
    if (rc != 0 && source) {
        *source = text;
        if (source_len)
            *source_len = len;
    } else {
        free(text);
    }
    return rc;
}

int scenefile_load_report(struct scene *out, const char *path, FILE *report)
{
    struct diag_list errs;
    diag_list_init(&errs);
    char *source = NULL;
    size_t source_len = 0;
    int rc = scenefile_load(out, path, &errs, &source, &source_len);
    for (int i = 0; rc != 0 && i < errs.n; i++) {
        struct diag *d = &errs.items[i];
        if (!d->file[0])
            snprintf(d->file, sizeof(d->file), "%.*s", (int)sizeof(d->file) - 1, path);
        diag_print(report, d, source, source_len);
    }
    if (rc != 0 && errs.n == 0)
        fprintf(report, "%s: invalid scene\n", path);
    diag_list_free(&errs);
    free(source);
    return rc;
}
