/* gpt2: Hugging Face GPT-2 files as a scene (see gpt2.h). */
#include "pretrained/gpt2.h"

#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenize.h"
#include "pretrained/bpe.h"
#include "pretrained/hftok.h"
#include "pretrained/safetensors.h"

/* The scene's backing: the tokenizer, the mapped checkpoint and the tensors widened from F16
 * or BF16. Freed with the last scene that shares it. */
struct backing {
    struct attn_backing base;
    struct bpe *bpe;
    struct hftok *hf; /* tokenizer hf, instead of bpe */
    struct st_file st;
    bool has_st;
    float **owned;
    int n_owned, cap_owned;
};

static void release(struct attn_backing *ab)
{
    struct backing *b = (struct backing *)ab;
    bpe_free(b->bpe);
    hftok_free(b->hf);
    if (b->has_st)
        st_close(&b->st);
    for (int i = 0; i < b->n_owned; i++)
        free(b->owned[i]);
    free(b->owned);
    free(b);
}

static int tokenize(struct attn_backing *ab, const char *text, char ***tokens, int **ids, int *n,
                    struct diag *err)
{
    struct backing *b = (struct backing *)ab;
    if (!b->bpe && !b->hf)
        return diag_set(err, "tokenizer", "the tokenizer needs its vocabulary");
    int count = 0, *id = NULL;
    if (b->hf) {
        /* encode(text) as transformers calls it: with the special tokens */
        struct hftok_encoding e;
        if (hftok_encode(&e, b->hf, text, strlen(text), NULL, 0, true, err))
            return -1;
        id = e.ids;
        count = e.n;
        e.ids = NULL;
        hftok_encoding_free(&e);
    } else if (bpe_encode(&id, &count, b->bpe, text, strlen(text), err)) {
        return -1;
    }
    char **labels = calloc((size_t)(count > 0 ? count : 1), sizeof(*labels));
    for (int i = 0; labels && i < count; i++) {
        char label[4 * SCENE_MAX_TOKEN_BYTES];
        if (b->hf)
            hftok_token_label(label, sizeof(label), b->hf, id[i]);
        else
            bpe_token_label(label, sizeof(label), b->bpe, id[i]);
        if (!(labels[i] = strdup(label))) {
            attn_tokens_free(labels, i);
            labels = NULL;
        }
    }
    if (!labels) {
        free(id);
        return diag_set(err, "text", "out of memory");
    }
    *tokens = labels;
    *ids = id;
    *n = count;
    return 0;
}

static void label(struct attn_backing *ab, int id, char *out, size_t size)
{
    struct backing *b = (struct backing *)ab;
    if (b->bpe)
        bpe_token_label(out, size, b->bpe, id);
    else
        snprintf(out, size, "<id %d>", id);
}

/* s's backing, made on first use; only this module makes backings. */
static struct backing *backing_of(struct attn_scene *s)
{
    if (s->backing)
        return (struct backing *)s->backing;
    struct backing *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->base.refs = 1;
    b->base.release = release;
    b->base.tokenize = tokenize;
    b->base.label = label;
    s->backing = &b->base;
    return b;
}

static char *absolute(const char *path)
{
    char *r = realpath(path, NULL);
    return r ? r : strdup(path);
}

int gpt2_attach_tokenizer(struct attn_scene *s, const char *vocab_path, const char *merges_path,
                          struct diag *err)
{
    struct backing *b = backing_of(s);
    if (!b)
        return diag_set(err, "tokenizer", "out of memory");
    struct bpe *bpe;
    if (bpe_load(&bpe, vocab_path, merges_path, err))
        return -1;
    bpe_free(b->bpe);
    hftok_free(b->hf);
    b->hf = NULL;
    b->bpe = bpe;
    free(s->vocab_path);
    free(s->merges_path);
    s->vocab_path = absolute(vocab_path);
    s->merges_path = absolute(merges_path);
    s->tokenizer = TOKENIZER_GPT2;
    return s->vocab_path && s->merges_path ? 0 : diag_set(err, "tokenizer", "out of memory");
}

int pretrained_attach_hf_tokenizer(struct attn_scene *s, const char *path, struct diag *err)
{
    struct backing *b = backing_of(s);
    if (!b)
        return diag_set(err, "tokenizer", "out of memory");
    /* tokenizer_config.json is read when it is beside tokenizer.json */
    char *copy = strdup(path), *config = NULL;
    if (copy) {
        const char *dir = dirname(copy);
        size_t n = strlen(dir) + sizeof("/tokenizer_config.json");
        config = malloc(n);
        if (config)
            snprintf(config, n, "%s/tokenizer_config.json", dir);
    }
    free(copy);
    if (!config)
        return diag_set(err, "tokenizer", "out of memory");
    struct hftok *t;
    int rc = hftok_load(&t, path, config, err);
    free(config);
    if (rc)
        return -1;
    hftok_free(b->hf);
    bpe_free(b->bpe);
    b->bpe = NULL;
    b->hf = t;
    free(s->tokenizer_file);
    s->tokenizer_file = absolute(path);
    s->tokenizer = TOKENIZER_HF;
    return s->tokenizer_file ? 0 : diag_set(err, "tokenizer", "out of memory");
}

/* ---- config.json ------------------------------------------------------------------------- */

struct config {
    int heads, layers, d, positions, inner, vocab;
    double eps;
    enum attn_activation act;
    bool tied; /* tie_word_embeddings (Hugging Face's default: true): lm_head is wte */
};

static int config_int(int *out, json_t *root, const char *key, const char *alt, const char *path,
                      struct diag *err)
{
    json_t *v = json_object_get(root, key);
    if (!v && alt)
        v = json_object_get(root, alt);
    if (!v || !json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000) {
        diag_set(err, "", "%s: '%s' must be a positive integer", path, key);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

static int read_config(struct config *c, const char *path, struct diag *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return diag_set(err, "", "%s:%d:%d: %s (config.json beside the checkpoint says its sizes)",
                        path, je.line, je.column, je.text);
    int rc = -1;
    memset(c, 0, sizeof(*c));
    if (!json_is_object(root)) {
        diag_set(err, "", "%s: not a JSON object", path);
        goto out;
    }
    if (config_int(&c->heads, root, "n_head", NULL, path, err) ||
        config_int(&c->layers, root, "n_layer", NULL, path, err) ||
        config_int(&c->d, root, "n_embd", NULL, path, err) ||
        config_int(&c->positions, root, "n_positions", "n_ctx", path, err))
        goto out;
    json_t *inner = json_object_get(root, "n_inner");
    c->inner = 4 * c->d;
    if (inner && !json_is_null(inner) && config_int(&c->inner, root, "n_inner", NULL, path, err))
        goto out;
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    c->tied = !(tie && json_is_false(tie));
    json_t *eps = json_object_get(root, "layer_norm_epsilon");
    c->eps = eps && json_is_number(eps) ? json_number_value(eps) : 1e-5;
    json_t *act = json_object_get(root, "activation_function");
    const char *a = act && json_is_string(act) ? json_string_value(act) : "gelu_new";
    if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0) {
        c->act = ACT_GELU_TANH;
    } else if (strcmp(a, "gelu") == 0) {
        c->act = ACT_GELU;
    } else if (strcmp(a, "relu") == 0) {
        c->act = ACT_RELU;
    } else {
        diag_set(err, "",
                 "%s: activation_function '%.40s' is not one attnscope has (gelu_new, "
                 "gelu, relu)",
                 path, a);
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* ---- tensors ------------------------------------------------------------------------------- */

/* The tensor prefix + name as a (rows, cols) matrix (rows 1: a vector of cols), in place when
 * it is F32 and aligned, else widened into memory the backing owns. */
static int tensor(struct attn_matrix *out, struct backing *b, const char *prefix, const char *name,
                  int rows, int cols, struct diag *err)
{
    char full[160];
    snprintf(full, sizeof(full), "%s%s", prefix, name);
    const struct st_tensor *t = st_find(&b->st, full);
    if (!t)
        return diag_file(err, b->st.path, "tensor '%s' is missing (arch gpt2)", full);
    bool vector = rows == 1;
    bool ok = vector ? t->ndim == 1 && t->shape[0] == cols
                     : t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols;
    if (!ok) {
        char shape[96] = "";
        size_t o = 0;
        for (int i = 0; i < t->ndim && o < sizeof(shape); i++)
            o += (size_t)snprintf(shape + o, sizeof(shape) - o, "%s%lld", i ? ", " : "",
                                  (long long)t->shape[i]);
        if (vector)
            return diag_file(err, b->st.path, "tensor '%s' has shape [%s], expected [%d]", full,
                             shape, cols);
        return diag_file(err, b->st.path, "tensor '%s' has shape [%s], expected [%d, %d]", full,
                         shape, rows, cols);
    }
    size_t count = (size_t)rows * (size_t)cols;
    const float *view = st_f32_view(&b->st, t);
    float *data = (float *)(uintptr_t)view;
    if (!view) {
        if (b->n_owned == b->cap_owned) {
            int cap = b->cap_owned ? 2 * b->cap_owned : 64;
            float **grown = realloc(b->owned, (size_t)cap * sizeof(*grown));
            if (!grown)
                return diag_set(err, "", "out of memory");
            b->owned = grown;
            b->cap_owned = cap;
        }
        if (!(data = malloc(count * sizeof(float))))
            return diag_set(err, "", "out of memory for tensor '%s'", full);
        b->owned[b->n_owned++] = data;
        if (st_read_f32(data, count, &b->st, t, err))
            return -1;
    }
    *out = (struct attn_matrix){data, rows, cols, true};
    return 0;
}

/* A tensor the mapping knows: GPT-2's, a buffer some exports add, or the tied LM head. */
static bool known_name(const char *name, int layers)
{
    static const char *const top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    static const char *const per_layer[] = {
        "ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
        "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias",
        "attn.bias",          "attn.masked_bias", /* buffers: the causal mask, -1e4 */
    };
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        if (strcmp(name, top[i]) == 0)
            return true;
    int L, used = 0;
    if (sscanf(name, "h.%d.%n", &L, &used) == 1 && used > 0 && L >= 0 && L < layers) {
        char check[32];
        snprintf(check, sizeof(check), "h.%d.", L);
        if (strncmp(name, check, strlen(check)) != 0) /* "h.01." is not layer 1's */
            return false;
        for (size_t i = 0; i < sizeof(per_layer) / sizeof(per_layer[0]); i++)
            if (strcmp(name + used, per_layer[i]) == 0)
                return true;
    }
    return false;
}

int gpt2_load(struct attn_scene *s, const char *path, const struct gpt2_overrides *o,
              struct diag *err)
{
    struct backing *b = backing_of(s);
    if (!b)
        return diag_set(err, "", "out of memory");
    if (!s->token_ids)
        return diag_set(err, "",
                        "a GPT-2 checkpoint needs its tokenizer: tokenizer: {kind: gpt2, "
                        "vocab: vocab.json, merges: merges.txt}");
    /* config.json lives beside the weights */
    char dir[4096], config_path[4200];
    snprintf(dir, sizeof(dir), "%s", path);
    snprintf(config_path, sizeof(config_path), "%s/config.json", dirname(dir));
    struct config c;
    if (read_config(&c, config_path, err))
        return -1;
    if (b->has_st)
        st_close(&b->st);
    b->has_st = false;
    if (st_open(&b->st, path, err))
        return -1;
    b->has_st = true;

    const char *prefix = st_find(&b->st, "transformer.wte.weight") ? "transformer." : "";
    size_t plen = strlen(prefix);
    for (int i = 0; i < b->st.n; i++) {
        const char *name = b->st.tensors[i].name;
        if (strcmp(name, "lm_head.weight") == 0) /* the unembedding: below */
            continue;
        if (strncmp(name, prefix, plen) != 0 || !known_name(name + plen, c.layers))
            return diag_file(err, path, "tensor '%s' is not part of GPT-2 (arch gpt2)", name);
    }

    if (s->n_tokens + s->pos.offset > c.positions)
        return diag_set(err, "text",
                        "%d tokens%s, but the checkpoint has %d positions (n_positions)",
                        s->n_tokens, s->pos.offset > 0 ? " after the offset" : "", c.positions);
    int d = c.d, layers = o->layers ? s->layers : c.layers;
    if (layers > c.layers)
        return diag_set(err, "layers", "layers %d: the checkpoint has %d", layers, c.layers);
    int heads = o->heads ? s->attn.heads : c.heads;
    if (heads < 1 || d % heads != 0)
        return diag_set(err, "attention.heads",
                        "heads %d does not divide the checkpoint's width %d (n_embd)", heads, d);

    /* the tables */
    const struct st_tensor *wte =
        st_find(&b->st, prefix[0] ? "transformer.wte.weight" : "wte.weight");
    int vocab = wte && wte->ndim == 2 ? (int)wte->shape[0] : 0;
    attn_matrix_free(&s->embed.rows);
    if (tensor(&s->embed.rows, b, prefix, "wte.weight", vocab, d, err))
        return -1;
    s->embed.kind = EMBED_TABLE;
    s->embed.dim = d;
    attn_matrix_free(&s->pos.table);
    if (tensor(&s->pos.table, b, prefix, "wpe.weight", c.positions, d, err))
        return -1;
    /* The unembedding: Hugging Face's GPT2LMHeadModel ties lm_head to wte unless the config
     * says tie_word_embeddings: false; then lm_head.weight is its own matrix. */
    attn_matrix_free(&s->unembed);
    if (c.tied) {
        s->unembed = s->embed.rows; /* borrowed: the same numbers, never freed twice */
    } else if (!st_find(&b->st, "lm_head.weight")) {
        return diag_file(err, path,
                         "config.json says tie_word_embeddings: false, but the checkpoint has no "
                         "lm_head.weight to unembed with");
    } else if (tensor(&s->unembed, b, "", "lm_head.weight", vocab, d, err)) {
        return -1;
    }
    s->pos.kind = POS_LEARNED;
    s->pos.max_len = c.positions;

    /* the block GPT-2 is made of */
    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = d;
    a->heads = heads;
    a->layout = LAYOUT_SPLIT;
    if (!o->causal)
        a->causal = true;
    a->qkv = QKV_FUSED;
    a->qkv_bias = true;
    a->out_proj = TRI_TRUE;
    a->out_bias = true;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_PRE,
                                   .norm = NORM_LAYER,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = c.inner,
                                   .activation = c.act,
                                   .final_norm = true};
    s->layers = layers;

    /* every layer's parameters */
    attn_scene_weights_free(&s->weights);
    for (int i = 0; i < s->n_more; i++)
        attn_scene_weights_free(&s->more_weights[i]);
    free(s->more_weights);
    s->more_weights = layers > 1 ? calloc((size_t)layers - 1, sizeof(*s->more_weights)) : NULL;
    s->n_more = layers - 1;
    if (layers > 1 && !s->more_weights)
        return diag_set(err, "", "out of memory");
    s->weights_listed = layers > 1;
    for (int L = 0; L < layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        char n[64];
        struct {
            struct attn_matrix *dst;
            const char *name;
            int rows, cols;
        } parts[] = {
            {&w->qkv, "attn.c_attn.weight", d, 3 * d},
            {&w->qkv_bias, "attn.c_attn.bias", 1, 3 * d},
            {&w->out, "attn.c_proj.weight", d, d},
            {&w->out_bias, "attn.c_proj.bias", 1, d},
            {&w->ffn_W1, "mlp.c_fc.weight", d, c.inner},
            {&w->ffn_b1, "mlp.c_fc.bias", 1, c.inner},
            {&w->ffn_W2, "mlp.c_proj.weight", c.inner, d},
            {&w->ffn_b2, "mlp.c_proj.bias", 1, d},
            {&w->norm1_weight, "ln_1.weight", 1, d},
            {&w->norm1_bias, "ln_1.bias", 1, d},
            {&w->norm2_weight, "ln_2.weight", 1, d},
            {&w->norm2_bias, "ln_2.bias", 1, d},
        };
        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
            snprintf(n, sizeof(n), "h.%d.%s", L, parts[i].name);
            if (tensor(parts[i].dst, b, prefix, n, parts[i].rows, parts[i].cols, err))
                return -1;
        }
        w->set = true;
        if (L == layers - 1 &&
            (tensor(&w->final_norm_weight, b, prefix, "ln_f.weight", 1, d, err) ||
             tensor(&w->final_norm_bias, b, prefix, "ln_f.bias", 1, d, err)))
            return -1;
    }
    free(s->model.file);
    free(s->model.arch);
    s->model.file = absolute(path);
    s->model.arch = strdup("gpt2");
    s->model.layers = c.layers;
    s->model.heads = c.heads;
    if (!s->model.file || !s->model.arch)
        return diag_set(err, "", "out of memory");
    return 0;
}
