/* schema: the keys of a scene file (docs/scene-format.md), as tables (see schema.h for the
 * files that hold the handlers and the walk). A mapping's `finish` applies the rules between its
 * keys. */
#include "scenefile/schema.h"

/* ---- mappings ---------------------------------------------------------------------------- */

static void h_map(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    attn_schema_walk_map(l, node, f->arg, base, path);
}

static const struct mapping embeddings_map;
static const struct mapping head_map;

/* embeddings: explicit rows, or {dim, seed} for a drawn nn.Embedding. */
static void h_embeddings(struct loader *l, const struct field *f, int node, void *base,
                         const char *path)
{
    static const struct mat_limits lim = {SCENE_MAX_TOKENS, SCENE_MAX_DIM};
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_SEQ || attn_schema_is_file_ref(l, node)) {
        struct attn_matrix m = {0};
        if (attn_schema_read_matrix(l, node, f->key, path, &lim, &m) == 0) {
            attn_matrix_free(&s->embed.rows);
            s->embed.rows = m;
            s->embed.kind = EMBED_EXPLICIT;
        }
    } else if (nd->type == YNODE_MAP) {
        attn_schema_walk_map(l, node, &embeddings_map, base, path);
    } else {
        attn_schema_must_be(l, f, node, path);
    }
}

static void finish_embeddings(struct loader *l, int node, const int *found, void *base,
                              const char *path)
{
    struct attn_scene *s = base;
    /* dim keeps attn_scene_init's default (3) when only seed is given. */
    if (!attn_loader_bad(l, path))
        s->embed.kind = EMBED_LEARNED;
}

/* Item number i of the list at path, registered as path[i] (written into ipath). True when it is
 * a mapping to walk; anything else is reported as "<what> <number> of '<list>' must be <must>". */
bool attn_schema_list_item_map(struct loader *l, int item, const char *path, int i,
                               char ipath[DIAG_PATH_MAX], const char *what, int number,
                               const char *list, const char *must)
{
    path_fmt(ipath, "%s[%d]", path, i);
    attn_loader_register(l, ipath, item, item);
    const struct ynode *in = nd_of(l, item);
    if (in->type == YNODE_MAP)
        return true;
    if (in->type == YNODE_BAD) {
        attn_loader_mark_bad(l, ipath);
        return false;
    }
    char buf[LOADER_SHOW_MAX];
    attn_loader_error(l, item, ipath, "%s %d of '%s' must be %s, got %s", what, number, list, must,
                      attn_loader_show(l, item, buf, sizeof(buf)));
    return false;
}

/* weights.heads: one mapping per head, each d_in x d_out; assembled in finish_weights. */
static void h_heads(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    if (nd->u.c.count == 0) {
        attn_loader_error(l, node, path, "'weights.heads' is empty: give one mapping per head");
        return;
    }
    if (nd->u.c.count > SCENE_MAX_HEADS) {
        attn_loader_error(l, node, path, "'weights.heads' has %d entries, the limit is %d",
                          nd->u.c.count, SCENE_MAX_HEADS);
        return;
    }
    attn_schema_free_heads(l);
    l->heads = calloc((size_t)nd->u.c.count, sizeof(*l->heads));
    if (!l->heads) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    l->n_heads = nd->u.c.count;
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        if (attn_schema_list_item_map(l, item, path, i, ipath, "head", i + 1, "weights.heads",
                                      "a mapping with query, key and value"))
            attn_schema_walk_map(l, item, &head_map, &l->heads[i], ipath);
    }
}

void attn_schema_free_heads(struct loader *l)
{
    for (int i = 0; i < l->n_heads; i++) {
        struct head_weights *h = &l->heads[i];
        attn_matrix_free(&h->query);
        attn_matrix_free(&h->key);
        attn_matrix_free(&h->value);
        attn_matrix_free(&h->query_bias);
        attn_matrix_free(&h->key_bias);
        attn_matrix_free(&h->value_bias);
    }
    free(l->heads);
    l->heads = NULL;
    l->n_heads = 0;
}

static const struct {
    const char *key;
    size_t member;
    bool bias;
} head_members[] = {
    {"query", offsetof(struct head_weights, query), false},
    {"key", offsetof(struct head_weights, key), false},
    {"value", offsetof(struct head_weights, value), false},
    {"query_bias", offsetof(struct head_weights, query_bias), true},
    {"key_bias", offsetof(struct head_weights, key_bias), true},
    {"value_bias", offsetof(struct head_weights, value_bias), true},
};
#define N_HEAD_MEMBERS 6

static const struct attn_matrix *head_member(const struct loader *l, int h, int i)
{
    return (const struct attn_matrix *)(const void *)((const char *)&l->heads[h] +
                                                      head_members[i].member);
}

/* Puts member i of every head side by side: head h becomes columns [h*cols, (h+1)*cols). */
static int concat_heads(struct attn_matrix *dst, const struct loader *l, int i)
{
    const struct attn_matrix *h0 = head_member(l, 0, i);
    int rows = h0->rows, cols = h0->cols, D = cols * l->n_heads;
    if (attn_matrix_alloc(dst, rows, D) != 0)
        return -1;
    for (int h = 0; h < l->n_heads; h++) {
        const struct attn_matrix *m = head_member(l, h, i);
        for (int r = 0; r < rows; r++)
            memcpy(&dst->data[(size_t)r * D + (size_t)h * cols], &m->data[(size_t)r * cols],
                   (size_t)cols * sizeof(float));
    }
    return 0;
}

static void assemble_heads(struct loader *l, struct attn_scene *s, int node, const char *path)
{
    if (!attn_loader_unknown(l, "attention.head_layout") && s->attn.layout != LAYOUT_WRAPPER) {
        attn_loader_error(l, node, path,
                          "'weights.heads' is for head_layout: wrapper; with the split layout give "
                          "'query', 'key' and 'value' directly");
        return;
    }
    if (!attn_loader_unknown(l, "attention.heads") && l->n_heads != s->attn.heads) {
        attn_loader_error(l, node, path, "'weights.heads' has %d %s, expected %d (attention.heads)",
                          l->n_heads, l->n_heads == 1 ? "entry" : "entries", s->attn.heads);
        return;
    }
    if (attn_loader_bad(l, path) || l->n_heads == 0)
        return;
    /* Every head gives query, key and value, all of head 1's query shape; biases are given
     * for every head or for none, with head 1's width. */
    const struct attn_matrix *q0 = &l->heads[0].query;
    for (int h = 0; h < l->n_heads && !l->yd.stopped; h++) {
        char hpath[DIAG_PATH_MAX];
        path_fmt(hpath, "%s[%d]", path, h);
        const struct loader_key *item = attn_loader_find(l, hpath);
        int item_node = item ? item->value : node;
        for (int i = 0; i < N_HEAD_MEMBERS; i++) {
            const struct attn_matrix *m = head_member(l, h, i), *m0 = head_member(l, 0, i);
            char mpath[DIAG_PATH_MAX];
            join(mpath, hpath, head_members[i].key);
            const struct loader_key *k = attn_loader_find(l, mpath);
            if (!m->data && !head_members[i].bias) {
                attn_loader_error(l, item_node, hpath, "head %d of 'weights.heads' is missing '%s'",
                                  h + 1, head_members[i].key);
                continue;
            }
            if (!m->data && !m0->data)
                continue;
            if (!m->data || !m0->data) {
                attn_loader_error(l, m->data && k ? k->key : item_node, mpath,
                                  "head %d of 'weights.heads' %s '%s' but head 1 %s", h + 1,
                                  m->data ? "has" : "has no", head_members[i].key,
                                  m->data ? "does not" : "does");
                continue;
            }
            if (!q0->data)
                continue;
            int er = head_members[i].bias ? 1 : q0->rows, ec = q0->cols;
            const char *file = attn_loader_file(l, mpath);
            if (m->rows != er || m->cols != ec)
                attn_loader_error(
                    l, k ? k->value : item_node, mpath,
                    "head %d '%s' is %d x %d, expected %d x %d like head 1's 'query'%s%s%s", h + 1,
                    head_members[i].key, m->rows, m->cols, er, ec, file ? " (read from " : "",
                    file ? file : "", file ? ")" : "");
        }
    }
    if (attn_loader_bad(l, path))
        return;
    if ((size_t)q0->rows * (size_t)q0->cols * (size_t)l->n_heads > MAX_VALUES) {
        attn_loader_error(l, node, path, "'weights.heads' is too large: %d heads of %d x %d values",
                          l->n_heads, q0->rows, q0->cols);
        return;
    }
    /* Every head must have passed its shape checks: concat_heads copies all of them. */
    if (l->yd.stopped || attn_loader_bad(l, path))
        return;
    struct attn_matrix *dst[N_HEAD_MEMBERS] = {&s->weights.query,    &s->weights.key,
                                               &s->weights.value,    &s->weights.query_bias,
                                               &s->weights.key_bias, &s->weights.value_bias};
    for (int i = 0; i < N_HEAD_MEMBERS; i++) {
        if (!head_member(l, 0, i)->data)
            continue;
        attn_matrix_free(dst[i]);
        if (concat_heads(dst[i], l, i) != 0) {
            attn_loader_error(l, node, path, "out of memory");
            return;
        }
    }
}

enum {
    W_QUERY,
    W_KEY,
    W_VALUE,
    W_QUERY_BIAS,
    W_KEY_BIAS,
    W_VALUE_BIAS,
    W_OUT,
    W_OUT_BIAS,
    W_DROPOUT_MASK,
    W_HEADS,
    W_QKV,
    W_QKV_BIAS,
    W_DOWN,
    W_KEY_UP,
    W_VALUE_UP,
    W_FFN_W1,
    W_FFN_B1,
    W_FFN_W2,
    W_FFN_B2,
    W_NORM1_WEIGHT,
    W_NORM1_BIAS,
    W_NORM2_WEIGHT,
    W_NORM2_BIAS,
    W_POST_NORM1_WEIGHT,
    W_POST_NORM2_WEIGHT,
    W_FINAL_NORM_WEIGHT,
    W_FINAL_NORM_BIAS,
    W_COUNT
};

/* A key missing from the file but named by an unknown key's message (see attn_schema_mark_meant):
 * the misspelling is the problem to report, not the absence. */
bool attn_schema_meant_bad(const struct loader *l, const char *path, const char *key)
{
    char p[DIAG_PATH_MAX];
    join(p, path, key);
    return attn_loader_bad(l, p);
}

static void finish_weights(struct loader *l, int node, const int *found, void *base,
                           const char *path)
{
    static const char *const names[W_COUNT] = {"query",        "key",        "value", "query_bias",
                                               "key_bias",     "value_bias", "out",   "out_bias",
                                               "dropout_mask", "heads"};
    struct attn_scene *s = base;
    const struct loader_key *wk = attn_loader_find(l, path);
    int at = wk ? wk->key : node;
    bool qkv = found[W_QUERY] >= 0 || found[W_KEY] >= 0 || found[W_VALUE] >= 0;
    bool heads = found[W_HEADS] >= 0;
    /* Fused QKV and MLA have their own matrices; attn_scene_check says which each mode needs. */
    bool other = found[W_QKV] >= 0 || found[W_DOWN] >= 0 || found[W_KEY_UP] >= 0 ||
                 found[W_VALUE_UP] >= 0 || s->attn.qkv != QKV_SEPARATE || s->attn.kv_latent > 0;
    if (heads && qkv) {
        attn_loader_error(
            l, found[W_HEADS], path,
            "give either 'heads' or 'query', 'key' and 'value' in 'weights', not both");
    } else if (heads) {
        for (int i = W_QUERY_BIAS; i <= W_VALUE_BIAS; i++)
            if (found[i] >= 0)
                attn_loader_error(l, found[i], path,
                                  "with 'weights.heads', give '%s' inside each head", names[i]);
        char hpath[DIAG_PATH_MAX];
        join(hpath, path, "heads");
        assemble_heads(l, s, found[W_HEADS], hpath);
        /* attn_scene_check's complaints about the assembled matrices point at the heads. */
        for (int i = W_QUERY; i <= W_VALUE_BIAS; i++) {
            char p[DIAG_PATH_MAX];
            join(p, path, names[i]);
            attn_loader_register(l, p, found[W_HEADS], found[W_HEADS]);
        }
    } else if (qkv && !other) {
        for (int i = W_QUERY; i <= W_VALUE; i++)
            if (found[i] < 0 && !attn_schema_meant_bad(l, path, names[i]))
                attn_loader_error(l, at, path,
                                  "'weights' needs 'query', 'key' and 'value': '%s' is missing",
                                  names[i]);
    } else if (!other) {
        /* 'out' alone is how a resolved scene with projection none gives its out_proj;
         * attn_scene_check refuses it when the projection needs query/key/value too. */
        for (int i = W_QUERY_BIAS; i <= W_VALUE_BIAS; i++)
            if (found[i] >= 0)
                attn_loader_error(l, found[i], path,
                                  "'weights.%s' needs 'query', 'key' and 'value' (or 'heads') too",
                                  names[i]);
        if (found[W_OUT_BIAS] >= 0 && found[W_OUT] < 0 && !attn_schema_meant_bad(l, path, "out"))
            attn_loader_error(l, found[W_OUT_BIAS], path, "'weights.out_bias' needs 'out' too");
    }
    if (attn_loader_bad(l, path)) {
        attn_scene_weights_free(&s->weights);
        return;
    }
    /* A dropout_mask alone keeps the drawn parameters: set means "parameters given". */
    s->weights.set = qkv || heads || found[W_OUT] >= 0 || found[W_QKV] >= 0 || found[W_DOWN] >= 0 ||
                     found[W_KEY_UP] >= 0 || found[W_VALUE_UP] >= 0;
}

/* text or tokens: exactly one; text is tokenised now that tokenizer is known. */
enum {
    T_VERSION,
    T_TITLE,
    T_TOKENIZER,
    T_TEXT,
    T_TOKENS,
    T_SEED,
    T_EMBEDDINGS,
    T_POSITIONAL,
    T_ATTENTION,
    T_BLOCK,
    T_LAYERS,
    T_WEIGHTS,
    T_VIEW,
    T_MODEL,
    T_LESSON,
    T_ABLATE,
    T_COUNT
};

/* A path of a scene key, relative to the scene file's folder. */
static void beside_scene(char *out, size_t size, const struct loader *l, const char *name)
{
    if (name[0] == '/' || !l->dir[0])
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%s/%s", l->dir, name);
}

/* A file the tokenizer read (resolved: tokenizer.json, or tokenizer_config.json beside it; a
 * file of the folder resolved names, for Marian's) as the scene names it: named as the scene
 * wrote tokenizer.json's path (given). */
static void scene_relative(char *out, size_t size, const char *file, const char *resolved,
                           const char *given)
{
    if (strcmp(file, resolved) == 0) {
        snprintf(out, size, "%s", given);
        return;
    }
    size_t rl = strlen(resolved);
    if (strncmp(file, resolved, rl) == 0 && file[rl] == '/') {
        snprintf(out, size, "%s%s", given, file + rl);
        return;
    }
    const char *rs = strrchr(resolved, '/'), *fs = strrchr(file, '/'), *gs = strrchr(given, '/');
    if (rs && fs && rs - resolved == fs - file &&
        strncmp(file, resolved, (size_t)(rs - resolved)) == 0)
        snprintf(out, size, "%.*s%s", gs ? (int)(gs - given + 1) : 0, given, fs + 1);
}

/* The keys a checkpoint decides: given with model:, each is refused where it is written. */
static const char *const model_decides[] = {
    "embeddings",
    "weights",
    "block",
    "attention.projection",
    "attention.d_out",
    "attention.head_layout",
    "attention.qkv",
    "attention.qkv_bias",
    "attention.out_proj",
    "attention.out_bias",
    "attention.kv_heads",
    "attention.kv_latent",
    "positional.kind",
    "positional.max_len",
    "positional.table",
    "positional.seed",
    "positional.base",
    "positional.rope_pairs",
};

/* A scene key that makes the checkpoint compute otherwise than it was trained (its heads cut
 * again, fewer layers, the mask, scaling or normalisation changed, dropout) is allowed, and is a
 * warning at the key, which every command prints and the explorer shows: its predictions are not
 * the checkpoint's (attn_scene_model_changes says what changed, everywhere the model shows). */
static void warn_model_changes(struct loader *l, struct attn_scene *s)
{
    static const char *const keys[] = {"attention.heads",  "layers",
                                       "attention.causal", "attention.mask_mode",
                                       "attention.scale",  "attention.normalize",
                                       "attention.dropout"};
    const struct attn_config *a = &s->attn;
    struct {
        int line, col;
        const char *key;
        char what[96];
    } found[sizeof(keys) / sizeof(keys[0])];
    int n = 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && s->backing; i++) {
        const struct loader_key *k = attn_loader_find(l, keys[i]);
        if (!k)
            continue;
        char what[96] = "";
        if (i == 0 && a->heads != s->model.heads)
            snprintf(what, sizeof(what), "heads %d \u2192 %d", s->model.heads, a->heads);
        else if (i == 1 && s->layers != s->model.layers)
            snprintf(what, sizeof(what), "layers %d \u2192 %d", s->model.layers, s->layers);
        else if (i == 2 && a->causal != s->model.causal)
            snprintf(what, sizeof(what), "causal %s", a->causal ? "on" : "off");
        else if (i == 3 && a->causal && a->mask_mode != MASK_BEFORE_SOFTMAX)
            snprintf(what, sizeof(what), "mask %s", attn_mask_mode_name(a->mask_mode));
        else if (i == 4 && attn_scene_eff_scale(s) == SCALE_DIVISOR)
            snprintf(what, sizeof(what), "scores \u00f7 %g", a->scale_divisor);
        else if (i == 4 && attn_scene_eff_scale(s) != s->model.scale)
            snprintf(what, sizeof(what), "scaling %s",
                     attn_scene_eff_scale(s) == SCALE_NONE ? "off" : "by \u221ad_k");
        else if (i == 5 && a->normalize != NORMALIZE_SOFTMAX)
            snprintf(what, sizeof(what), "normalize %s", attn_normalize_name(a->normalize));
        else if (i == 6 && a->dropout > 0)
            attn_scene_format_p(what + snprintf(what, sizeof(what), "dropout "), 32, a->dropout);
        if (!what[0])
            continue;
        /* in the file's order, as problems are listed */
        int line, col, at = n++;
        attn_loader_locate(l, k->key, &line, &col);
        while (at > 0 && (found[at - 1].line > line ||
                          (found[at - 1].line == line && found[at - 1].col > col))) {
            found[at] = found[at - 1];
            at--;
        }
        found[at].line = line;
        found[at].col = col;
        found[at].key = keys[i];
        snprintf(found[at].what, sizeof(found[at].what), "%s", what);
    }
    for (int i = 0; i < n; i++)
        attn_diag_list_add(&s->backing->warnings, l->name, found[i].line, found[i].col,
                           found[i].key,
                           "'%s' modifies the checkpoint (%s): what it computes is not the model "
                           "as trained, nor are its predictions",
                           found[i].key, found[i].what);
}

static void load_model(struct loader *l, struct attn_scene *s)
{
    bool refused = false;
    for (size_t i = 0; i < sizeof(model_decides) / sizeof(model_decides[0]); i++) {
        const struct loader_key *k = attn_loader_find(l, model_decides[i]);
        if (k) {
            attn_loader_error(l, k->key, model_decides[i],
                              "'%s' comes from the checkpoint (model): remove it",
                              model_decides[i]);
            refused = true;
        }
    }
    if (refused)
        return;
    if (!attn_tokenizer_has_vocab(s->tokenizer)) {
        const struct loader_key *k = attn_loader_find(l, "model");
        attn_loader_error(
            l, k ? k->key : -1, "model",
            "a checkpoint reads token ids: give its tokenizer, tokenizer: {kind: hf, file: "
            "tokenizer.json} (or for GPT-2 {kind: gpt2, vocab: vocab.json, merges: "
            "merges.txt})");
        return;
    }
    char file[4200];
    beside_scene(file, sizeof(file), l, l->model_spec.file);
    struct ckpt_overrides o = {attn_loader_find(l, "attention.heads") != NULL,
                               attn_loader_find(l, "layers") != NULL,
                               attn_loader_find(l, "attention.causal") != NULL,
                               attn_loader_find(l, "attention.scale") != NULL};
    struct diag err;
    attn_diag_clear(&err);
    if (attn_pretrained_load(s, file, l->model_spec.arch, &o, &err) != 0) {
        /* A problem of the checkpoint's config.json is that file's, on the key's line. */
        size_t flen = strlen(err.file);
        if (flen > 12 && strcmp(err.file + flen - 12, "/config.json") == 0) {
            attn_loader_error_in(l, &err, "model");
            return;
        }
        /* at the key the problem is about (layers, heads, text), else at the file */
        const struct loader_key *k = err.path[0] ? attn_loader_find(l, err.path) : NULL;
        const char *at = k ? err.path : "model.file";
        if (!k)
            k = attn_loader_find(l, "model.file");
        /* the file as the scene names it, not as resolved from the scene's folder (a shard:
           beside the index as the scene names it), with line:col when it is the index */
        char name[4200], where[64] = "";
        snprintf(name, sizeof(name), "%s", err.file);
        scene_relative(name, sizeof(name), err.file, file, l->model_spec.file);
        if (err.file[0] && err.line > 0)
            snprintf(where, sizeof(where), ":%d:%d", err.line, err.col);
        attn_loader_error(l, k ? k->value : -1, at, "%s%s%s%s", name, where, name[0] ? ": " : "",
                          err.msg);
        attn_loader_mark_bad(l, "model");
        return;
    }
    warn_model_changes(l, s);
}

/* Whether a scene's tokenizer kind (or NULL) is t's name, as the engine declares it. */
static bool kind_is(const char *kind, enum attn_tokenizer t)
{
    return kind && strcmp(kind, attn_tokenizer_name(t)) == 0;
}

/* text: {source, target}: the encoder's scene, made beside s (its tokenizer's, sharing its
 * backing) with the source sentence; s then reads the target. The checkpoint's family fills in
 * both stacks (src/pretrained). Returns 0, or -1 with the problem at the source's node. */
static int make_encoder(struct loader *l, struct attn_scene *s, int source)
{
    struct diag err;
    attn_diag_clear(&err);
    if (!attn_tokenizer_has_vocab(s->tokenizer)) {
        attn_loader_error(l, source, "text",
                          "two sequences (text: {source, target}) are an encoder-decoder "
                          "checkpoint's: give its tokenizer and model");
        attn_loader_mark_bad(l, "text");
        return -1;
    }
    struct attn_scene *e = calloc(1, sizeof(*e));
    if (e)
        attn_scene_init(e);
    if (!e || (s->tokenizer_file && !(e->tokenizer_file = strdup(s->tokenizer_file))) ||
        (s->vocab_path && !(e->vocab_path = strdup(s->vocab_path))) ||
        (s->merges_path && !(e->merges_path = strdup(s->merges_path)))) {
        if (e) {
            attn_scene_free(e);
            free(e);
        }
        attn_loader_error(l, source, "text", "out of memory");
        return -1;
    }
    e->tokenizer = s->tokenizer;
    e->backing = s->backing;
    if (e->backing)
        e->backing->refs++;
    if (attn_scene_set_text(e, str_of(l, source), &err) != 0) {
        attn_loader_error(l, source, "text", "%s", err.msg);
        attn_loader_mark_bad(l, "text");
        attn_scene_free(e);
        free(e);
        return -1;
    }
    if (s->encoder) {
        attn_scene_free(s->encoder);
        free(s->encoder);
    }
    s->encoder = e;
    return 0;
}

static void finish_top(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_scene *s = base;
    struct diag err;
    attn_diag_clear(&err);
    if (found[T_TEXT] >= 0 && found[T_TOKENS] >= 0) {
        const struct loader_key *a = attn_loader_find(l, "text"),
                                *b = attn_loader_find(l, "tokens");
        int later = b ? b->key : node;
        if (a && b && attn_loader_line(l, b->key) < attn_loader_line(l, a->key))
            later = a->key;
        attn_loader_error(l, later, "tokens", "give either 'text' or 'tokens', not both");
        attn_loader_mark_bad(l, "text");
        return;
    }
    if (found[T_TEXT] < 0 && found[T_TOKENS] < 0) {
        if (!attn_schema_meant_bad(l, path, "text") && !attn_schema_meant_bad(l, path, "tokens"))
            attn_loader_error(
                l, node, "tokens",
                "the scene needs 'text' (a sentence) or 'tokens' (a list of strings)");
        attn_loader_mark_bad(l, "text");
        return;
    }
    const char *kind = l->tokenizer_spec.kind;
    bool gpt2 =
        kind_is(kind, TOKENIZER_GPT2) && l->tokenizer_spec.vocab && l->tokenizer_spec.merges;
    bool hf = kind_is(kind, TOKENIZER_HF) && l->tokenizer_spec.file;
    if ((gpt2 || hf) && !attn_loader_bad(l, "tokenizer")) {
        char vocab[4200], merges[4200], file[4200];
        int rc;
        if (gpt2) {
            beside_scene(vocab, sizeof(vocab), l, l->tokenizer_spec.vocab);
            beside_scene(merges, sizeof(merges), l, l->tokenizer_spec.merges);
            rc = attn_gpt2_attach_tokenizer(s, vocab, merges, &err);
        } else {
            beside_scene(file, sizeof(file), l, l->tokenizer_spec.file);
            rc = attn_pretrained_attach_hf_tokenizer(s, file, &err);
        }
        if (rc != 0) {
            /* at the file's key; the message names the file and where in it */
            const struct loader_key *k = attn_loader_find(l, hf ? "tokenizer.file" : "tokenizer");
            if (!k)
                k = attn_loader_find(l, "tokenizer");
            char where[64] = "", name[4200];
            if (err.file[0] && err.line > 0)
                snprintf(where, sizeof(where), ":%d:%d", err.line, err.col);
            /* the file as the scene names it, not as resolved from the scene's folder */
            snprintf(name, sizeof(name), "%s", err.file);
            if (hf)
                scene_relative(name, sizeof(name), err.file, file, l->tokenizer_spec.file);
            else if (strcmp(err.file, vocab) == 0 || strcmp(err.file, merges) == 0)
                snprintf(name, sizeof(name), "%s",
                         strcmp(err.file, vocab) == 0 ? l->tokenizer_spec.vocab
                                                      : l->tokenizer_spec.merges);
            attn_loader_error(l, k ? k->value : node, "tokenizer", "%s%s%s%s", name, where,
                              name[0] ? ": " : "", err.msg);
            attn_loader_mark_bad(l, "text");
            return;
        }
    }
    if (l->source_node >= 0 && !attn_loader_bad(l, "tokenizer") &&
        make_encoder(l, s, l->source_node) != 0)
        return;
    if (l->text_node >= 0 && !attn_loader_bad(l, "tokenizer")) {
        free(s->text_pair);
        s->text_pair = l->pair_node >= 0 ? strdup(str_of(l, l->pair_node)) : NULL;
        if (l->pair_node >= 0 && !s->text_pair)
            attn_loader_error(l, l->text_node, "text", "out of memory");
        else if (attn_scene_set_text(s, str_of(l, l->text_node), &err) != 0)
            attn_loader_error(l, l->text_node, "text", "%s", err.msg);
        const struct loader_key *k = attn_loader_find(l, "text");
        if (k)
            attn_loader_register(l, "tokens", k->key, k->value);
    } else if (l->tokens_node >= 0) {
        const struct ynode *nd = nd_of(l, l->tokens_node);
        char **tokens = malloc((size_t)nd->u.c.count * sizeof(*tokens));
        if (!tokens) {
            attn_loader_error(l, l->tokens_node, "tokens", "out of memory");
            return;
        }
        int i = 0;
        for (int c = nd->u.c.first; c >= 0; c = nd_of(l, c)->next)
            tokens[i++] = (char *)(uintptr_t)str_of(l, c);
        if (attn_scene_set_tokens(s, tokens, i, &err) != 0)
            attn_loader_error(l, l->tokens_node, "tokens", "%s", err.msg);
        free(tokens);
        const struct loader_key *k = attn_loader_find(l, "tokens");
        if (k)
            attn_loader_register(l, "text", k->key, k->value);
    }
    if (l->model_spec.file && !attn_loader_bad(l, "model") && !attn_loader_bad(l, "text") &&
        !attn_loader_bad(l, "tokens"))
        load_model(l, s);
}

/* ---- the tables ------------------------------------------------------------------------- */

/* block: given at all turns the block on. */
static void finish_block(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_scene *s = base;
    s->block.on = true;
}

static const struct field embeddings_fields[] = {
    {"dim", WANT_SCALAR, "an integer", attn_schema_int, S(embed.dim), &dim_range},
    {"seed", WANT_SCALAR, SEED_WHAT, attn_schema_opt_seed, S(embed.seed), NULL},
};
static const struct mapping embeddings_map = {"embeddings", embeddings_fields, N(embeddings_fields),
                                              finish_embeddings};

static const struct field positional_fields[] = {
    {"kind", WANT_SCALAR, NULL, attn_schema_enum, S(pos.kind), &pos_kind_enum},
    {"max_len", WANT_SCALAR, "an integer", attn_schema_int, S(pos.max_len), &max_len_range},
    {"seed", WANT_SCALAR, SEED_WHAT, attn_schema_opt_seed, S(pos.seed), NULL},
    {"table", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(pos.table), &table_limits},
    {"base", WANT_SCALAR, "a number above 0", attn_schema_positive, S(pos.base), NULL},
    {"rope_pairs", WANT_SCALAR, NULL, attn_schema_enum, S(pos.pairs), &rope_pairs_enum},
    {"rotary_dims", WANT_SCALAR, "an integer", attn_schema_int, S(pos.rotary_dims), &dim_range},
    {"offset", WANT_SCALAR, "an integer", attn_schema_int, S(pos.offset), &offset_range},
};
static const struct mapping positional_map = {"positional", positional_fields, N(positional_fields),
                                              NULL};

static const struct field attention_fields[] = {
    {"projection", WANT_SCALAR, NULL, attn_schema_enum, S(attn.projection), &projection_enum},
    {"d_out", WANT_SCALAR, "an integer", attn_schema_int, S(attn.d_out), &dim_range},
    {"heads", WANT_SCALAR, "an integer", attn_schema_int, S(attn.heads), &heads_range},
    {"head_layout", WANT_SCALAR, NULL, attn_schema_enum, S(attn.layout), &layout_enum},
    {"causal", WANT_SCALAR, "true or false", attn_schema_bool, S(attn.causal), NULL},
    {"mask_mode", WANT_SCALAR, NULL, attn_schema_enum, S(attn.mask_mode), &mask_mode_enum},
    {"normalize", WANT_SCALAR, NULL, attn_schema_enum, S(attn.normalize), &normalize_enum},
    {"scale", WANT_SCALAR, "true, false or a positive number", attn_schema_scale, S(attn), NULL},
    {"dropout", WANT_SCALAR, "a number between 0 and 1", attn_schema_probability, S(attn.dropout),
     NULL},
    {"dropout_seed", WANT_SCALAR, SEED_WHAT, attn_schema_opt_seed, S(attn.dropout_seed), NULL},
    {"qkv_bias", WANT_SCALAR, "true or false", attn_schema_bool, S(attn.qkv_bias), NULL},
    {"out_proj", WANT_SCALAR, "true or false", attn_schema_tristate, S(attn.out_proj), NULL},
    {"out_bias", WANT_SCALAR, "true or false", attn_schema_bool, S(attn.out_bias), NULL},
    {"seed", WANT_SCALAR, SEED_WHAT, attn_schema_opt_seed, S(attn.seed), NULL},
    {"qkv", WANT_SCALAR, NULL, attn_schema_enum, S(attn.qkv), &qkv_mode_enum},
    {"kv_heads", WANT_SCALAR, "an integer", attn_schema_int, S(attn.kv_heads), &heads_range},
    {"kv_latent", WANT_SCALAR, "an integer", attn_schema_int, S(attn.kv_latent), &dim_range},
};
static const struct mapping attention_map = {"attention", attention_fields, N(attention_fields),
                                             NULL};

static const struct field block_fields[] = {
    {"order", WANT_SCALAR, NULL, attn_schema_enum, S(block.order), &order_enum},
    {"norm", WANT_SCALAR, NULL, attn_schema_enum, S(block.norm), &norm_enum},
    {"norm_eps", WANT_SCALAR, "a number above 0", attn_schema_positive, S(block.norm_eps), NULL},
    {"ffn_hidden", WANT_SCALAR, "an integer", attn_schema_int, S(block.ffn_hidden), &hidden_range},
    {"activation", WANT_SCALAR, NULL, attn_schema_enum, S(block.activation), &activation_enum},
    {"ffn_seed", WANT_SCALAR, SEED_WHAT, attn_schema_opt_seed, S(block.ffn_seed), NULL},
    {"ffn_skip", WANT_SCALAR, "an integer", attn_schema_int, S(block.ffn_skip), &count_range},
    {"final_norm", WANT_SCALAR, "true or false", attn_schema_bool, S(block.final_norm), NULL},
};
static const struct mapping block_map = {"block", block_fields, N(block_fields), finish_block};

static const struct field view_fields[] = {
    {"layer", WANT_SCALAR, "an integer", attn_schema_int, S(view.layer), &view_range},
    {"head", WANT_SCALAR, "an integer", attn_schema_int, S(view.head), &view_range},
    {"stage", WANT_SCALAR, NULL, attn_schema_enum, S(view.stage), &stage_enum},
};
/* view: given at all, its layer counts (0 unless said). */
static void finish_view(struct loader *l, int node, const int *found, void *base, const char *path)
{
    struct attn_scene *s = base;
    if (found[0] < 0)
        s->view.layer = 0;
    if (found[2] < 0)
        s->view.stage = STAGE_WEIGHTS;
}
static const struct mapping view_map = {"view", view_fields, N(view_fields), finish_view};

/* ---- ablate: a list of heads ---------------------------------------------------------------- */

static const char *head_mode_str(int v)
{
    return attn_head_mode_name((enum attn_head_mode)v);
}
static const int ablate_mode_values[] = {HEAD_ZERO, HEAD_MEAN};
static const struct enum_def ablate_mode_enum = {ablate_mode_values, 2, head_mode_str, NULL};
const struct int_range attn_schema_ablate_layer_range = {0, SCENE_MAX_LAYERS - 1};
const struct int_range attn_schema_ablate_head_range = {0, SCENE_MAX_HEADS - 1};
#define AB(member) offsetof(struct attn_ablation, member)
static const struct field ablate_fields[] = {
    {"layer", WANT_SCALAR, "an integer", attn_schema_int, AB(layer),
     &attn_schema_ablate_layer_range},
    {"head", WANT_SCALAR, "an integer", attn_schema_int, AB(head), &attn_schema_ablate_head_range},
    {"mode", WANT_SCALAR, NULL, attn_schema_enum, AB(mode), &ablate_mode_enum},
};
/* layer and head are needed; mode is zero unless said. Whether the head exists, and that no
 * head comes twice, is attn_scene_check's (it knows the layers and heads of a checkpoint). */
void attn_schema_finish_ablation(struct loader *l, int node, const int *found, void *base,
                                 const char *path)
{
    static const char *const need[] = {"layer", "head"};
    for (int i = 0; i < 2; i++)
        if (found[i] < 0 && !attn_schema_meant_bad(l, path, need[i]))
            attn_loader_error(l, node, path,
                              "an ablated head needs '%s': {layer: 1, head: 0, mode: zero}",
                              need[i]);
}
static const struct mapping ablate_map = {"ablate", ablate_fields, N(ablate_fields),
                                          attn_schema_finish_ablation};

/* ablate: - {layer: L, head: H, mode: zero|mean}, one mapping per head. */
static void h_ablate(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    int count = nd->u.c.count;
    if (count > SCENE_MAX_LAYERS * SCENE_MAX_HEADS) {
        attn_loader_error(l, node, path, "'ablate' lists %d heads, the limit is %d", count,
                          SCENE_MAX_LAYERS * SCENE_MAX_HEADS);
        return;
    }
    struct attn_ablation *list = calloc((size_t)(count > 0 ? count : 1), sizeof(*list));
    if (!list) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        list[i] = (struct attn_ablation){-1, -1, HEAD_ZERO};
        if (attn_schema_list_item_map(l, item, path, i, ipath, "item", i + 1, "ablate",
                                      "a mapping like {layer: 1, head: 0, mode: zero}"))
            attn_schema_walk_map(l, item, &ablate_map, &list[i], ipath);
    }
    free(s->ablate);
    s->ablate = list;
    s->n_ablate = count;
}

static const struct field head_fields[] = {
    {"query", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, H(query), &head_limits},
    {"key", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, H(key), &head_limits},
    {"value", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, H(value), &head_limits},
    {"query_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector, H(query_bias), &head_limits},
    {"key_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector, H(key_bias), &head_limits},
    {"value_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector, H(value_bias), &head_limits},
};
static const struct mapping head_map = {"weights.heads", head_fields, N(head_fields), NULL};

static const struct field weights_fields[W_COUNT] = {
    [W_QUERY] = {"query", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.query),
                 &qkv_limits},
    [W_KEY] = {"key", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.key), &qkv_limits},
    [W_VALUE] = {"value", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.value),
                 &qkv_limits},
    [W_QUERY_BIAS] = {"query_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                      S(weights.query_bias), &qkv_limits},
    [W_KEY_BIAS] = {"key_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector, S(weights.key_bias),
                    &qkv_limits},
    [W_VALUE_BIAS] = {"value_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                      S(weights.value_bias), &qkv_limits},
    [W_OUT] = {"out", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.out), &out_limits},
    [W_OUT_BIAS] = {"out_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector, S(weights.out_bias),
                    &out_limits},
    [W_DROPOUT_MASK] = {"dropout_mask", WANT_DATA,
                        "a list of n x n matrices of 0 and 1, or {file: name.npy or .csv}",
                        attn_schema_dropout_mask, 0, NULL},
    [W_HEADS] = {"heads", WANT_SEQ, "a list of mappings, one per head", h_heads, 0, NULL},
    [W_QKV] = {"qkv", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.qkv), &fused_limits},
    [W_QKV_BIAS] = {"qkv_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector, S(weights.qkv_bias),
                    &fused_limits},
    [W_DOWN] = {"down", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.down), &head_limits},
    [W_KEY_UP] = {"key_up", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.key_up),
                  &head_limits},
    [W_VALUE_UP] = {"value_up", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.value_up),
                    &head_limits},
    [W_FFN_W1] = {"ffn_W1", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.ffn_W1),
                  &ffn_limits},
    [W_FFN_B1] = {"ffn_b1", WANT_DATA, VECTOR_WHAT, attn_schema_vector, S(weights.ffn_b1),
                  &ffn_limits},
    [W_FFN_W2] = {"ffn_W2", WANT_DATA, MATRIX_WHAT, attn_schema_matrix, S(weights.ffn_W2),
                  &ffn_limits},
    [W_FFN_B2] = {"ffn_b2", WANT_DATA, VECTOR_WHAT, attn_schema_vector, S(weights.ffn_b2),
                  &ffn_limits},
    [W_NORM1_WEIGHT] = {"norm1_weight", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                        S(weights.norm1_weight), &head_limits},
    [W_NORM1_BIAS] = {"norm1_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                      S(weights.norm1_bias), &head_limits},
    [W_NORM2_WEIGHT] = {"norm2_weight", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                        S(weights.norm2_weight), &head_limits},
    [W_NORM2_BIAS] = {"norm2_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                      S(weights.norm2_bias), &head_limits},
    [W_POST_NORM1_WEIGHT] = {"post_norm1_weight", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                             S(weights.post_norm1_weight), &head_limits},
    [W_POST_NORM2_WEIGHT] = {"post_norm2_weight", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                             S(weights.post_norm2_weight), &head_limits},
    [W_FINAL_NORM_WEIGHT] = {"final_norm_weight", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                             S(weights.final_norm_weight), &head_limits},
    [W_FINAL_NORM_BIAS] = {"final_norm_bias", WANT_DATA, VECTOR_WHAT, attn_schema_vector,
                           S(weights.final_norm_bias), &head_limits},
};
static const struct mapping weights_map = {"weights", weights_fields, W_COUNT, finish_weights};

/* weights: one mapping (the only layer, or layer 0), or a list of mappings, one per layer. A
 * later layer's mapping is read into a scratch scene that shares the options (attention, block,
 * tokens), so its handlers check it the same way; then its weights move to more_weights. */
static void h_weights(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    struct attn_scene *s = base;
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_MAP) {
        attn_schema_walk_map(l, node, &weights_map, s, path);
        return;
    }
    if (nd->type != YNODE_SEQ) {
        attn_schema_must_be(l, f, node, path);
        return;
    }
    int count = nd->u.c.count;
    if (count < 1 || count > SCENE_MAX_LAYERS) {
        attn_loader_error(l, node, path, "'weights' lists %d layers, expected 1 to %d", count,
                          SCENE_MAX_LAYERS);
        return;
    }
    struct attn_scene_weights *more = calloc((size_t)count, sizeof(*more));
    if (!more) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    s->weights_listed = true;
    int i = 0;
    for (int item = nd->u.c.first; item >= 0 && !l->yd.stopped; item = nd_of(l, item)->next, i++) {
        char ipath[DIAG_PATH_MAX];
        if (!attn_schema_list_item_map(l, item, path, i, ipath, "layer", i, "weights",
                                       "a mapping like {query: [[...]], ...}"))
            continue;
        if (i == 0) {
            attn_schema_walk_map(l, item, &weights_map, s, ipath);
            continue;
        }
        struct attn_scene scratch = *s; /* shallow: only its weights are written */
        memset(&scratch.weights, 0, sizeof(scratch.weights));
        attn_schema_walk_map(l, item, &weights_map, &scratch, ipath);
        more[i] = scratch.weights;
    }
    for (int k = 0; k < s->n_more; k++)
        attn_scene_weights_free(&s->more_weights[k]);
    free(s->more_weights);
    /* more[0] is unused (layer 0 lives in s->weights): shift down. */
    memmove(more, more + 1, (size_t)(count - 1) * sizeof(*more));
    s->more_weights = more;
    s->n_more = count - 1;
}

/* A string field whose what (what its value must be, said when it is not a string) is made when
 * it is said: a name the engine's tokenizer kinds or the families' registry declare. */
static void string_saying(struct loader *l, const struct field *f, int node, void *base,
                          const char *path, const char *what)
{
    struct field with = *f;
    with.what = what;
    if (nd_of(l, node)->type != YNODE_SCALAR)
        attn_schema_must_be(l, &with, node, path);
    else
        attn_schema_string(l, &with, node, base, path);
}

/* tokenizer: {kind: gpt2, ...}: for its what, the first kind that reads files */
static void h_kind(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    string_saying(l, f, node, base, path, attn_tokenizer_name(TOKENIZER_GPT2));
}

/* tokenizer: a built-in's name, {kind: gpt2, vocab: vocab.json, merges: merges.txt} or
 * {kind: hf, file: tokenizer.json}. */
#define TK(member) offsetof(struct loader, tokenizer_spec.member)
#define MD(member) offsetof(struct loader, model_spec.member)
static const struct field tokenizer_fields[] = {
    {"kind", WANT_ANY, NULL, h_kind, TK(kind), NULL},
    {"vocab", WANT_SCALAR, "a file name (vocab.json)", attn_schema_string, TK(vocab), NULL},
    {"merges", WANT_SCALAR, "a file name (merges.txt)", attn_schema_string, TK(merges), NULL},
    {"file", WANT_SCALAR, "a file name (tokenizer.json)", attn_schema_string, TK(file), NULL},
};
static void finish_tokenizer(struct loader *l, int node, const int *found, void *base,
                             const char *path)
{
    /* found[]: kind, vocab, merges, file */
    const char *kind = l->tokenizer_spec.kind;
    if (found[0] < 0) {
        if (!attn_schema_meant_bad(l, path, "kind"))
            attn_loader_error(l, node, path,
                              "'tokenizer' needs 'kind': {kind: gpt2, vocab: vocab.json, merges: "
                              "merges.txt} or {kind: hf, file: tokenizer.json}");
        return;
    }
    char kp[DIAG_PATH_MAX];
    if (kind_is(kind, TOKENIZER_GPT2)) {
        static const char *const need[] = {"vocab", "merges"};
        for (int i = 0; i < 2; i++)
            if (found[1 + i] < 0 && !attn_schema_meant_bad(l, path, need[i]))
                attn_loader_error(l, node, path,
                                  "'tokenizer' needs '%s': {kind: gpt2, vocab: vocab.json, "
                                  "merges: merges.txt}",
                                  need[i]);
        if (found[3] >= 0) {
            join(kp, path, "file");
            attn_loader_error(l, found[3], kp,
                              "'file' is for kind hf (tokenizer.json); kind gpt2 reads vocab and "
                              "merges");
        }
    } else if (kind_is(kind, TOKENIZER_HF)) {
        if (found[3] < 0 && !attn_schema_meant_bad(l, path, "file"))
            attn_loader_error(l, node, path,
                              "'tokenizer' needs 'file': {kind: hf, file: tokenizer.json}");
        for (int i = 1; i <= 2; i++)
            if (found[i] >= 0) {
                join(kp, path, i == 1 ? "vocab" : "merges");
                attn_loader_error(l, found[i], kp,
                                  "'%s' is for kind gpt2; kind hf reads everything from its file "
                                  "(tokenizer.json)",
                                  i == 1 ? "vocab" : "merges");
            }
    } else if (kind) {
        join(kp, path, "kind");
        attn_loader_error(
            l, found[0], kp,
            "tokenizer kind '%.40s' has no files to read; as a mapping, kind is gpt2 or "
            "hf (or write tokenizer: whitespace, words or chars)",
            kind);
    }
}
static const struct mapping tokenizer_map = {"tokenizer", tokenizer_fields, N(tokenizer_fields),
                                             finish_tokenizer};

static void h_tokenizer(struct loader *l, const struct field *f, int node, void *base,
                        const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_MAP) {
        /* the files are read with the model, once everything else is known (finish_top) */
        struct loader *self = l;
        attn_schema_walk_map(l, node, &tokenizer_map, self, path);
        return;
    }
    if (nd->type == YNODE_SCALAR && kind_is(str_of(l, node), TOKENIZER_GPT2)) {
        attn_loader_error(l, node, path,
                          "the gpt2 tokenizer reads its vocabulary: tokenizer: {kind: gpt2, vocab: "
                          "vocab.json, merges: merges.txt}");
        return;
    }
    if (nd->type == YNODE_SCALAR && kind_is(str_of(l, node), TOKENIZER_HF)) {
        attn_loader_error(
            l, node, path,
            "the hf tokenizer reads Hugging Face's tokenizer.json: tokenizer: {kind: hf, "
            "file: tokenizer.json}");
        return;
    }
    /* a name: checked and reported as the enum it is */
    struct field as_enum = *f;
    as_enum.handler = attn_schema_enum;
    if (nd->type != YNODE_SCALAR) {
        as_enum.what = NULL;
        attn_schema_must_be(l, &as_enum, node, path);
        return;
    }
    attn_schema_enum(l, &as_enum, node, base, path);
}

/* model: {arch: ...}: auto or a family of the registry */
static void h_arch(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    char archs[256];
    string_saying(l, f, node, base, path, attn_pretrained_archs(archs, sizeof(archs)));
}

/* model: {file: model.safetensors, arch: auto}; loaded in finish_top. */
static const struct field model_fields[] = {
    {"file", WANT_SCALAR,
     "a file name (model.safetensors, or a sharded checkpoint's model.safetensors.index.json)",
     attn_schema_string, MD(file), NULL},
    {"arch", WANT_ANY, NULL, h_arch, MD(arch), NULL},
};
static void finish_model(struct loader *l, int node, const int *found, void *base, const char *path)
{
    if (found[0] < 0 && !attn_schema_meant_bad(l, path, "file"))
        attn_loader_error(l, node, path, "'model' needs 'file': {file: model.safetensors}");
    if (found[1] >= 0 && l->model_spec.arch && !attn_pretrained_arch_known(l->model_spec.arch)) {
        char ap[DIAG_PATH_MAX], archs[256];
        join(ap, path, "arch");
        attn_loader_error(l, found[1], ap, "arch '%.40s' is not one attnscope reads (%s)",
                          l->model_spec.arch, attn_pretrained_archs(archs, sizeof(archs)));
    }
}
static const struct mapping model_map = {"model", model_fields, N(model_fields), finish_model};

static void h_model(struct loader *l, const struct field *f, int node, void *base, const char *path)
{
    attn_schema_walk_map(l, node, &model_map, l, path);
}

static const struct field top_fields[T_COUNT] = {
    [T_VERSION] = {"version", WANT_SCALAR, "an integer", attn_schema_version, 0, NULL},
    [T_TITLE] = {"title", WANT_SCALAR, "a string", attn_schema_string, S(title), NULL},
    [T_TOKENIZER] = {"tokenizer", WANT_ANY, NULL, h_tokenizer, S(tokenizer), &tokenizer_enum},
    [T_TEXT] = {"text", WANT_ANY, "a string", attn_schema_text, 0, NULL},
    [T_TOKENS] = {"tokens", WANT_SEQ, "a list of strings", attn_schema_tokens, 0, NULL},
    [T_SEED] = {"seed", WANT_SCALAR, SEED_WHAT, attn_schema_seed, S(seed), NULL},
    [T_EMBEDDINGS] = {"embeddings", WANT_ANY,
                      "a list of rows, {file: name.npy or .csv} or a mapping like {dim: 3}",
                      h_embeddings, 0, NULL},
    [T_POSITIONAL] = {"positional", WANT_MAP, "a mapping like {kind: learned, max_len: 10}", h_map,
                      0, &positional_map},
    [T_ATTENTION] = {"attention", WANT_MAP, "a mapping like {heads: 2, causal: true}", h_map, 0,
                     &attention_map},
    [T_BLOCK] = {"block", WANT_MAP, "a mapping like {order: post, ffn_hidden: 8}", h_map, 0,
                 &block_map},
    [T_LAYERS] = {"layers", WANT_SCALAR, "an integer", attn_schema_int, S(layers), &layers_range},
    [T_WEIGHTS] = {"weights", WANT_ANY,
                   "a mapping like {query: [[...]], key: ..., value: ...}, or a list of them, one "
                   "per layer",
                   h_weights, 0, NULL},
    [T_VIEW] = {"view", WANT_MAP, "a mapping like {layer: 1, head: 3, stage: weights}", h_map, 0,
                &view_map},
    [T_MODEL] = {"model", WANT_MAP, "a mapping like {file: model.safetensors, arch: gpt2}", h_model,
                 0, NULL},
    [T_LESSON] = {"lesson", WANT_SEQ, "a list of steps like - {stage: weights, caption: ...}",
                  attn_schema_lesson, 0, NULL},
    [T_ABLATE] = {"ablate", WANT_SEQ, "a list of heads like - {layer: 1, head: 0, mode: zero}",
                  h_ablate, 0, NULL},
};
const struct mapping attn_schema_top_map = {"", top_fields, T_COUNT, finish_top};

/* Mappings below the top level, for "it belongs under 'attention'" hints. */
const struct mapping *const attn_schema_nested_maps[ATTN_SCHEMA_N_NESTED] = {
    &attention_map, &positional_map, &embeddings_map, &block_map, &weights_map, &view_map};

/* ---- the format described, for the manual ------------------------------------------------ */

/* The mapping below field f, and the mark of a list of them ("[]"), or NULL. */
static const struct mapping *below(const struct field *f, const char **list)
{
    *list = "";
    if (f->handler == h_map)
        return f->arg;
    if (f->handler == h_embeddings)
        return &embeddings_map;
    if (f->handler == h_weights)
        return &weights_map;
    if (f->handler == h_tokenizer)
        return &tokenizer_map;
    if (f->handler == h_model)
        return &model_map;
    if (f->handler == attn_schema_step_ablate)
        return &attn_schema_step_ablate_map;
    *list = "[]";
    if (f->handler == h_heads)
        return &head_map;
    if (f->handler == h_ablate)
        return &ablate_map;
    if (f->handler == attn_schema_lesson)
        return &attn_schema_step_map;
    return NULL;
}

static void describe(const struct mapping *m, const char *prefix,
                     void (*visit)(void *ctx, const struct attn_scene_key *k), void *ctx)
{
    for (int i = 0; i < m->n_fields; i++) {
        const struct field *f = &m->fields[i];
        char path[DIAG_PATH_MAX];
        path_fmt(path, "%s%s", prefix, f->key);
        struct attn_scene_key k = {.path = path, .what = f->what};
        if (f->handler == attn_schema_enum || f->handler == h_tokenizer) {
            const struct enum_def *e = f->arg;
            size_t o = 0;
            for (int v = 0; v < e->n && o < sizeof(k.values); v++)
                o += (size_t)snprintf(k.values + o, sizeof(k.values) - o, "%s%s",
                                      v == 0          ? ""
                                      : v == e->n - 1 ? " or "
                                                      : ", ",
                                      e->name(e->values[v]));
        }
        if (f->handler == attn_schema_int) {
            const struct int_range *r = f->arg;
            k.ranged = true;
            k.min = r->min;
            k.max = r->max;
        }
        visit(ctx, &k);
        const char *list;
        const struct mapping *sub = below(f, &list);
        if (sub) {
            char inner[DIAG_PATH_MAX];
            path_fmt(inner, "%s%s.", path, list);
            describe(sub, inner, visit, ctx);
        }
    }
}

void attn_scenefile_describe(void (*visit)(void *ctx, const struct attn_scene_key *k), void *ctx)
{
    describe(&attn_schema_top_map, "", visit, ctx);
}
