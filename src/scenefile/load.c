/* load: reading a scene file.
 *
 * The parse runs in three steps: libyaml events -> node tree (src/yaml), tree -> struct attn_scene
 * through the schema tables (schema.c), then attn_scene_check for the rules that span several keys,
 * located at the keys they name. Every problem becomes a diag with file:line:col through the
 * parse's struct loader (locate.c); attn_ytree_locate turns libyaml's marks (columns in characters
 * from 0) into the 1-based byte columns attn_diag_print puts its caret by.
 */
#include "scenefile/scenefile.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "scenefile/locate.h"

/* ---- attn_scene_check ------------------------------------------------------------------------ */

/* Keys that decide the shapes attn_scene_check compares. When one of them had a problem its value
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
    "attention.qkv",
    "attention.kv_heads",
    "attention.kv_latent",
    "positional",
    "block",
    "layers",
    "weights",
    "model",
};
#define N_SHAPE_KEYS (sizeof(shape_keys) / sizeof(shape_keys[0]))

/* Other keys a attn_scene_check problem reads: with a bad value the complaint would be about the
 * default put in its place ("dropout_mask needs 0 < dropout < 1 (dropout is 0)"). */
static const struct {
    const char *path, *reads;
} check_reads[] = {
    {"weights.dropout_mask", "attention.dropout"},
    {"ablate", "layers"},
    {"ablate", "attention.heads"},
    {"ablate", "model"},
};
#define N_CHECK_READS (sizeof(check_reads) / sizeof(check_reads[0]))

/* One path is the other or below it. "" (a problem of the whole document) relates to nothing. */
static bool related(const char *a, const char *b)
{
    return a[0] && b[0] && (attn_loader_path_within(a, b) || attn_loader_path_within(b, a));
}

static bool check_suppressed(const struct loader *l, const char *path)
{
    bool shapes_unknown = false;
    for (size_t i = 0; i < N_SHAPE_KEYS; i++)
        if (attn_loader_unknown(l, shape_keys[i]))
            shapes_unknown = true;
    for (int i = 0; i < l->n_bad; i++)
        if (related(l->bad[i], path))
            return true;
    /* text and tokens are two spellings of the same thing. */
    if ((related(path, "text") && attn_loader_bad(l, "tokens")) ||
        (related(path, "tokens") && attn_loader_bad(l, "text")))
        return true;
    if (shapes_unknown)
        for (size_t i = 0; i < N_SHAPE_KEYS; i++)
            if (related(path, shape_keys[i]))
                return true;
    for (size_t i = 0; i < N_CHECK_READS; i++)
        if (related(path, check_reads[i].path) && attn_loader_unknown(l, check_reads[i].reads))
            return true;
    return false;
}

/* The value of the key path names; else its closest enclosing key; else line 1. */
static void locate_path(struct loader *l, const char *path, int *line, int *col)
{
    const struct loader_key *k = attn_loader_find(l, path);
    if (k) {
        attn_loader_locate(l, k->value, line, col);
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
        k = attn_loader_find(l, p);
        if (k) {
            attn_loader_locate(l, k->key, line, col);
            return;
        }
    }
    *line = 1;
    *col = 1;
}

static void run_scene_check(struct loader *l)
{
    struct diag_list found;
    attn_diag_list_init(&found);
    attn_scene_check(l->s, &found);
    /* All decided before any is added, since adding marks a path bad: attn_scene_check's problems
     * are not follow-ons of one another (it skips the checks its own findings would spoil). */
    int kept = 0;
    for (int i = 0; i < found.n; i++)
        if (!check_suppressed(l, found.items[i].path))
            found.items[kept++] = found.items[i];
    for (int i = 0; i < kept && !l->yd.stopped; i++) {
        const struct diag *d = &found.items[i];
        int line, col;
        locate_path(l, d->path, &line, &col);
        /* A matrix from a file: the file is where the user fixes it. */
        const char *file = attn_loader_file(l, d->path);
        char msg[DIAG_MSG_MAX];
        if (file)
            snprintf(msg, sizeof(msg), "%.300s (read from %.180s)", d->msg, file);
        attn_loader_error_at(l, line, col, d->path, file ? msg : d->msg);
    }
    if (found.lost)
        attn_loader_out_of_memory(l);
    attn_diag_list_free(&found);
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
        attn_loader_error(l, -1, "", "the file is too large (%zu bytes, the limit is %zu)", l->len,
                          SCENEFILE_MAX_BYTES);
        return;
    }
    if (attn_ytree_build(&l->tree, l->text, l->len, NULL, attn_loader_yaml_problem, l) != 0 ||
        l->yd.stopped)
        return;
    int root = l->tree.root;
    const struct ynode *nd = root >= 0 ? ytree_node(&l->tree, root) : NULL;
    if (!nd || (nd->type == YNODE_SCALAR && nd->plain && nd->u.s.len == 0)) {
        attn_loader_error(l, -1, "", "the file is empty: a scene needs at least 'text: ...'");
        return;
    }
    if (nd->type != YNODE_MAP) {
        char buf[64];
        attn_loader_error(l, root, "",
                          "a scene file must be a mapping of keys (like 'text: ...'), got %s",
                          attn_loader_show(l, root, buf, sizeof(buf)));
        return;
    }
    attn_schema_load_scene(l, root);
    /* A checkpoint that did not load (its config.json, its tokenizer, the file itself) leaves
       the scene without its shapes: every rule checked now would be a follow-on of that one
       problem ("view.layer 1: the scene has 1 layer"). */
    if (l->model_spec.file && !l->s->model.file && l->yd.n > 0)
        return;
    if (!l->yd.stopped)
        run_scene_check(l);
    if (!l->yd.stopped)
        attn_schema_check_lesson(l);
}

int attn_scenefile_parse(struct attn_scene *out, const char *name, const char *text, size_t len,
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
    l.first = errs->n;
    l.tree.root = -1;
    attn_ydiag_init(&l.yd, l.name, &l.tree, errs, LOADER_MAX_ERRORS);
    l.text_node = l.tokens_node = l.pair_node = l.source_node = -1;
    attn_scene_init(out);
    l.s = out;

    parse_tree(&l);

    sort_diags(errs, l.first);
    attn_ydiag_finish(&l.yd);
    int failed = l.yd.n > 0;
    attn_ytree_free(&l.tree);
    attn_schema_free_heads(&l);
    free(l.tokenizer_spec.kind);
    free(l.tokenizer_spec.vocab);
    free(l.tokenizer_spec.merges);
    free(l.tokenizer_spec.file);
    free(l.model_spec.file);
    free(l.model_spec.arch);
    free(l.keys);
    free(l.bad);
    if (failed) {
        attn_scene_free(out);
        attn_scene_init(out);
        return -1;
    }
    return 0;
}

int attn_scenefile_load(struct attn_scene *out, const char *path, struct diag_list *errs,
                        char **source, size_t *source_len)
{
    if (source)
        *source = NULL;
    if (source_len)
        *source_len = 0;
    char *text;
    size_t len;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_fsutil_read_file(&text, &len, path, SCENEFILE_MAX_BYTES, &err) != 0) {
        attn_scene_init(out);
        attn_diag_list_push(errs, &err);
        return -1;
    }
    int rc = attn_scenefile_parse(out, path, text, len, errs);
    if (rc != 0 && source) {
        *source = text;
        if (source_len)
            *source_len = len;
    } else {
        free(text);
    }
    return rc;
}

int attn_scenefile_load_report(struct attn_scene *out, const char *path, FILE *report)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    char *source = NULL;
    size_t source_len = 0;
    int rc = attn_scenefile_load(out, path, &errs, &source, &source_len);
    for (int i = 0; rc != 0 && i < errs.n; i++) {
        struct diag *d = &errs.items[i];
        if (!d->file[0])
            snprintf(d->file, sizeof(d->file), "%.*s", (int)sizeof(d->file) - 1, path);
        /* the excerpt only under the scene's own problems (a config.json's has its own file) */
        bool own = strncmp(d->file, path, sizeof(d->file) - 1) == 0;
        attn_diag_print(report, d, own ? source : NULL, source_len);
    }
    if (rc != 0 && !attn_diag_list_print_lost(report, &errs, path) && errs.n == 0)
        fprintf(report, "%s: invalid scene\n", path);
    if (rc == 0)
        attn_scenefile_print_warnings(report, out, path);
    attn_diag_list_free(&errs);
    free(source);
    return rc;
}

int attn_scenefile_warning(struct diag *out, const struct attn_scene *s, const char *path, int i)
{
    attn_diag_clear(out);
    const struct diag_list *w = s->backing ? &s->backing->warnings : NULL;
    int kept = w ? w->n : 0, lost = w && w->lost > 0 ? 1 : 0;
    if (i >= 0 && i < kept) {
        *out = w->items[i];
        return 0;
    }
    snprintf(out->file, sizeof(out->file), "%.*s", (int)sizeof(out->file) - 1, path);
    if (lost && i == kept) {
        snprintf(out->msg, sizeof(out->msg), "out of memory: %d more warnings could not be listed",
                 w->lost);
        return 0;
    }
    if (i == kept + lost && attn_scene_positions_note(out->msg, sizeof(out->msg), s))
        return 0;
    attn_diag_clear(out);
    return -1;
}

int attn_scenefile_print_warnings(FILE *out, const struct attn_scene *s, const char *path)
{
    int n = 0;
    struct diag d;
    for (; attn_scenefile_warning(&d, s, path, n) == 0; n++) {
        char msg[DIAG_MSG_MAX];
        snprintf(msg, sizeof(msg), "warning: %.*s", (int)sizeof(msg) - 16, d.msg);
        snprintf(d.msg, sizeof(d.msg), "%s", msg);
        attn_diag_print(out, &d, NULL, 0);
    }
    return n;
}
