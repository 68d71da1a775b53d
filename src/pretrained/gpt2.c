/* gpt2: Hugging Face GPT-2 files as a scene (see gpt2.h). */
#include "pretrained/gpt2.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "engine/tokenize.h"
#include "pretrained/bpe.h"
#include "pretrained/hftok.h"
#include "pretrained/jsonoom.h"
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
    attn_bpe_free(b->bpe);
    attn_hftok_free(b->hf);
    if (b->has_st)
        attn_st_close(&b->st);
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
        return attn_diag_set(err, "tokenizer", "the tokenizer needs its vocabulary");
    int count = 0, *id = NULL;
    if (b->hf) {
        /* encode(text) as transformers calls it: with the special tokens */
        struct hftok_encoding e;
        if (attn_hftok_encode(&e, b->hf, text, strlen(text), NULL, 0, true, err))
            return -1;
        id = e.ids;
        count = e.n;
        e.ids = NULL;
        attn_hftok_encoding_free(&e);
    } else if (attn_bpe_encode(&id, &count, b->bpe, text, strlen(text), err)) {
        return -1;
    }
    char **labels = calloc((size_t)(count > 0 ? count : 1), sizeof(*labels));
    for (int i = 0; labels && i < count; i++) {
        char label[4 * SCENE_MAX_TOKEN_BYTES];
        if (b->hf)
            attn_hftok_token_label(label, sizeof(label), b->hf, id[i]);
        else
            attn_bpe_token_label(label, sizeof(label), b->bpe, id[i]);
        if (!(labels[i] = strdup(label))) {
            attn_tokens_free(labels, i);
            labels = NULL;
        }
    }
    if (!labels) {
        free(id);
        return attn_diag_set(err, "text", "out of memory");
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
        attn_bpe_token_label(out, size, b->bpe, id);
    else
        snprintf(out, size, "<id %d>", id);
}

static int check(struct attn_backing *ab, struct diag *err)
{
    struct backing *b = (struct backing *)ab;
    return b->has_st ? attn_st_check_unchanged(&b->st, err) : 0;
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
    b->base.check = check;
    s->backing = &b->base;
    return b;
}

/* path made absolute, or as given when it cannot be resolved; NULL out of memory. */
static char *absolute(const char *path)
{
    char *r = realpath(path, NULL);
    if (!r && errno == ENOMEM)
        return NULL;
    return r ? r : strdup(path);
}

int attn_gpt2_attach_tokenizer(struct attn_scene *s, const char *vocab_path,
                               const char *merges_path, struct diag *err)
{
    struct backing *b = backing_of(s);
    if (!b)
        return attn_diag_set(err, "tokenizer", "out of memory");
    struct bpe *bpe;
    if (attn_bpe_load(&bpe, vocab_path, merges_path, err))
        return -1;
    attn_bpe_free(b->bpe);
    attn_hftok_free(b->hf);
    b->hf = NULL;
    b->bpe = bpe;
    free(s->vocab_path);
    free(s->merges_path);
    s->vocab_path = absolute(vocab_path);
    s->merges_path = absolute(merges_path);
    s->tokenizer = TOKENIZER_GPT2;
    return s->vocab_path && s->merges_path ? 0 : attn_diag_set(err, "tokenizer", "out of memory");
}

int attn_pretrained_attach_hf_tokenizer(struct attn_scene *s, const char *path, struct diag *err)
{
    struct backing *b = backing_of(s);
    if (!b)
        return attn_diag_set(err, "tokenizer", "out of memory");
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
        return attn_diag_set(err, "tokenizer", "out of memory");
    struct hftok *t;
    int rc = attn_hftok_load(&t, path, config, err);
    free(config);
    if (rc)
        return -1;
    attn_hftok_free(b->hf);
    attn_bpe_free(b->bpe);
    b->bpe = NULL;
    b->hf = t;
    free(s->tokenizer_file);
    s->tokenizer_file = absolute(path);
    s->tokenizer = TOKENIZER_HF;
    return s->tokenizer_file ? 0 : attn_diag_set(err, "tokenizer", "out of memory");
}

/* ---- config.json ------------------------------------------------------------------------- */

/* config.json is a few hundred bytes; anything past this is not one (a 300 MB string took 9 s). */
#define CONFIG_JSON_MAX ((size_t)64 << 20)
/* Rows of the position table: GPT-2 has 1024; a scene's learned table may have this many. */
#define GPT2_MAX_POSITIONS (8 * SCENE_MAX_TOKENS)

struct config {
    int heads, layers, d, positions, inner, vocab;
    double eps;
    enum attn_activation act;
    bool tied; /* tie_word_embeddings (Hugging Face's default: true): lm_head is wte */
    const char *path, *text; /* config.json, and its bytes (to locate a key in a message) */
    size_t len;
};

/* Where key is written at the top level of the JSON text: the 1-based line and byte column of
 * its opening quote, or 0, 0. A plain scan (strings and nesting), as jansson keeps no
 * positions. */
static void locate_key(const struct config *c, const char *key, int *line, int *col)
{
    *line = *col = 0;
    size_t klen = strlen(key);
    int depth = 0, ln = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < c->len; i++) {
        char ch = c->text[i];
        if (ch == '\n') {
            ln++;
            line_start = i + 1;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch == '"') {
            size_t start = i++;
            while (i < c->len && c->text[i] != '"')
                i += c->text[i] == '\\' ? 2 : 1;
            if (depth != 1 || i - start - 1 != klen || memcmp(c->text + start + 1, key, klen))
                continue;
            size_t j = i + 1;
            while (j < c->len && strchr(" \t\r\n", c->text[j]))
                j++;
            if (j < c->len && c->text[j] == ':') {
                *line = ln;
                *col = (int)(start - line_start) + 1;
                return;
            }
        }
    }
}

/* A problem with key's value: at config.json, on the key's line. Returns -1. */
static int config_error(const struct config *c, const char *key, struct diag *err, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
static int config_error(const struct config *c, const char *key, struct diag *err, const char *fmt,
                        ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    attn_diag_file(err, c->path, "%s", msg);
    if (key)
        locate_key(c, key, &err->line, &err->col);
    return -1;
}

/* A JSON value as a message shows it: written out, cut, control characters escaped. */
static const char *show_value(char *out, size_t size, const json_t *v)
{
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    size_t o = 0;
    for (const char *p = text ? text : "nothing"; *p && o + 8 < size; p++) {
        unsigned char ch = (unsigned char)*p;
        o += ch < 0x20 || ch == 0x7f ? (size_t)snprintf(out + o, size - o, "\\x%02x", ch)
                                     : (size_t)snprintf(out + o, size - o, "%c", ch);
    }
    if (text && strlen(text) > o)
        snprintf(out + (o < size - 4 ? o : size - 4), 4, "...");
    free(text);
    return out;
}

/* An integer from lo to hi (what attnscope can run); key may be spelled alt. */
static int config_int(int *out, const struct config *c, json_t *root, const char *key,
                      const char *alt, long long lo, long long hi, const char *what,
                      struct diag *err)
{
    json_t *v = json_object_get(root, key);
    if (!v && alt && (v = json_object_get(root, alt)))
        key = alt;
    char got[64];
    if (!v)
        return config_error(c, NULL, err, "'%s' (%s) is missing", key, what);
    if (!json_is_integer(v))
        return config_error(c, key, err, "'%s' (%s) is %s, not an integer", key, what,
                            show_value(got, sizeof(got), v));
    long long x = json_integer_value(v);
    if (x < lo)
        return config_error(c, key, err, "'%s' (%s) is %lld: it must be at least %lld", key, what,
                            x, lo);
    if (x > hi)
        return config_error(c, key, err,
                            "'%s' (%s) is %lld: attnscope runs at most %lld (out of range)", key,
                            what, x, hi);
    *out = (int)x;
    return 0;
}

/* config.json beside the checkpoint: every size checked against attnscope's limits here, before
 * the checkpoint is opened or anything is allocated for it. */
static int read_config(struct config *c, const char *path, struct diag *err)
{
    memset(c, 0, sizeof(*c));
    c->path = path;
    char *text;
    size_t len;
    if (attn_fsutil_read_file(&text, &len, path, CONFIG_JSON_MAX, err) != 0) {
        char msg[DIAG_MSG_MAX];
        snprintf(msg, sizeof(msg), "%.400s (config.json beside the checkpoint gives its sizes)",
                 err->msg);
        snprintf(err->msg, sizeof(err->msg), "%s", msg);
        return -1;
    }
    c->text = text;
    c->len = len;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    int rc = -1;
    if (!root && attn_json_out_of_memory(&je, text, len)) {
        attn_diag_file(err, path, "out of memory reading the JSON");
        goto out;
    }
    if (!root) {
        attn_diag_file(err, path, "not valid JSON: %.300s", je.text);
        err->line = je.line > 0 ? je.line : 0;
        err->col = je.line > 0 && je.column > 0 ? je.column : 0;
        goto out;
    }
    if (!json_is_object(root)) {
        attn_diag_file(err, path, "not a JSON object of the model's sizes");
        goto out;
    }
    if (config_int(&c->heads, c, root, "n_head", NULL, 1, SCENE_MAX_HEADS, "heads", err) ||
        config_int(&c->layers, c, root, "n_layer", NULL, 1, SCENE_MAX_LAYERS, "layers", err) ||
        config_int(&c->d, c, root, "n_embd", NULL, 1, SCENE_MAX_DIM, "the width", err) ||
        config_int(&c->positions, c, root, "n_positions", "n_ctx", 1, GPT2_MAX_POSITIONS,
                   "positions", err))
        goto out;
    if (c->d % c->heads != 0) {
        config_error(c, "n_head", err, "'n_head' %d does not divide 'n_embd' %d", c->heads, c->d);
        goto out;
    }
    json_t *inner = json_object_get(root, "n_inner");
    c->inner = 4 * c->d;
    if (inner && !json_is_null(inner) &&
        config_int(&c->inner, c, root, "n_inner", NULL, 1, 4 * SCENE_MAX_DIM,
                   "the feed-forward width", err))
        goto out;
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    c->tied = !(tie && json_is_false(tie));
    json_t *eps = json_object_get(root, "layer_norm_epsilon");
    char got[64];
    c->eps = 1e-5;
    if (eps) {
        c->eps = json_is_number(eps) ? json_number_value(eps) : -1;
        if (!(c->eps > 0 && c->eps < 1)) {
            config_error(c, "layer_norm_epsilon", err,
                         "'layer_norm_epsilon' is %s, not a number between 0 and 1 (GPT-2's is "
                         "1e-05)",
                         show_value(got, sizeof(got), eps));
            goto out;
        }
    }
    json_t *act = json_object_get(root, "activation_function");
    if (act && !json_is_string(act)) {
        config_error(c, "activation_function", err, "'activation_function' is %s, not a name",
                     show_value(got, sizeof(got), act));
        goto out;
    }
    const char *a = act ? json_string_value(act) : "gelu_new";
    if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0) {
        c->act = ACT_GELU_TANH;
    } else if (strcmp(a, "gelu") == 0) {
        c->act = ACT_GELU;
    } else if (strcmp(a, "relu") == 0) {
        c->act = ACT_RELU;
    } else {
        config_error(c, "activation_function", err,
                     "'activation_function' %s is not one attnscope has (gelu_new, gelu, relu)",
                     show_value(got, sizeof(got), act));
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    free(text);
    c->text = NULL;
    c->len = 0;
    return rc;
}

/* ---- tensors ------------------------------------------------------------------------------- */

/* A tensor's name for a message: control characters escaped, a long one cut in its middle with
 * "…", so the reason after it is never cut off. */
static const char *show_name(char *out, size_t size, const char *name)
{
    size_t o = 0, n = strlen(name);
    for (size_t i = 0; i < n && o + 16 < size; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (n > 120 && i == 60) { /* the first 60 bytes, "…", the last 40 */
            size_t tail = n - 40;
            while (tail < n && ((unsigned char)name[tail] & 0xC0) == 0x80)
                tail++;
            while (i > 0 && ((unsigned char)name[i] & 0xC0) == 0x80)
                i--, o--; /* never cut inside a character */
            o += (size_t)snprintf(out + o, size - o, "\u2026");
            i = tail - 1;
            continue;
        }
        o += ch < 0x20 || ch == 0x7f ? (size_t)snprintf(out + o, size - o, "\\x%02x", ch)
                                     : (size_t)snprintf(out + o, size - o, "%c", ch);
    }
    out[o] = '\0';
    return out;
}

/* Refuses a tensor holding nan or inf, naming it and the first bad value, as .npy matrices are:
 * softmax would turn a nan row into weights of 0 where torch gives nan. */
static int check_finite(const float *data, int rows, int cols, bool vector, const char *path,
                        const char *name, struct diag *err)
{
    size_t count = (size_t)rows * (size_t)cols;
    for (size_t i = 0; i < count; i++) {
        if (isfinite(data[i]))
            continue;
        char shown[200];
        show_name(shown, sizeof(shown), name);
        const char *what = isnan(data[i]) ? "nan" : data[i] > 0 ? "inf" : "-inf";
        if (vector)
            return attn_diag_file(err, path, "tensor '%s': value [%zu] is %s, not a finite number",
                                  shown, i, what);
        return attn_diag_file(
            err, path, "tensor '%s': value [%zu, %zu] of [%d, %d] is %s, not a finite number",
            shown, i / (size_t)cols, i % (size_t)cols, rows, cols, what);
    }
    return 0;
}

/* The tensor prefix + name as a (rows, cols) matrix, or with vector a 1-D tensor of cols
 * (then rows is 1), in place when it is F32 and aligned, else widened into memory the backing
 * owns. Either way checked to hold finite numbers only. */
static int tensor(struct attn_matrix *out, struct backing *b, const char *prefix, const char *name,
                  int rows, int cols, bool vector, struct diag *err)
{
    char full[160];
    snprintf(full, sizeof(full), "%s%s", prefix, name);
    const struct st_tensor *t = attn_st_find(&b->st, full);
    if (!t)
        return attn_diag_file(err, b->st.path, "tensor '%s' is missing (arch gpt2)", full);
    bool ok = vector ? t->ndim == 1 && t->shape[0] == cols
                     : t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols;
    if (!ok) {
        char shape[96] = "";
        size_t o = 0;
        for (int i = 0; i < t->ndim && o < sizeof(shape); i++)
            o += (size_t)snprintf(shape + o, sizeof(shape) - o, "%s%lld", i ? ", " : "",
                                  (long long)t->shape[i]);
        if (vector)
            return attn_diag_file(err, b->st.path, "tensor '%s' has shape [%s], expected [%d]",
                                  full, shape, cols);
        return attn_diag_file(err, b->st.path, "tensor '%s' has shape [%s], expected [%d, %d]",
                              full, shape, rows, cols);
    }
    size_t count = (size_t)rows * (size_t)cols;
    const float *view = attn_st_f32_view(&b->st, t);
    float *data = (float *)(uintptr_t)view;
    if (!view) {
        if (b->n_owned == b->cap_owned) {
            int cap = b->cap_owned ? 2 * b->cap_owned : 64;
            float **grown = realloc(b->owned, (size_t)cap * sizeof(*grown));
            if (!grown)
                return attn_diag_set(err, "", "out of memory");
            b->owned = grown;
            b->cap_owned = cap;
        }
        if (!(data = malloc(count * sizeof(float))))
            return attn_diag_set(err, "", "out of memory for tensor '%s'", full);
        b->owned[b->n_owned++] = data;
        if (attn_st_read_f32(data, count, &b->st, t, err))
            return -1;
    }
    if (check_finite(data, rows, cols, vector, b->st.path, full, err) != 0)
        return -1;
    *out = (struct attn_matrix){data, rows, cols, true};
    return 0;
}

/* Bytes the tensor takes once widened to float32 in memory: 0 when it is read in place. */
static size_t widened_bytes(const struct st_file *f, const char *full)
{
    const struct st_tensor *t = attn_st_find(f, full);
    return t && t->dtype != ST_OTHER && !attn_st_f32_view(f, t) ? attn_st_count(t) * sizeof(float)
                                                                : 0;
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

int attn_gpt2_load(struct attn_scene *s, const char *path, const struct gpt2_overrides *o,
                   struct diag *err)
{
    struct backing *b = backing_of(s);
    if (!b)
        return attn_diag_set(err, "", "out of memory");
    if (!s->token_ids)
        return attn_diag_set(err, "",
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
        attn_st_close(&b->st);
    b->has_st = false;
    if (attn_st_open(&b->st, path, err))
        return -1;
    b->has_st = true;

    const char *prefix = attn_st_find(&b->st, "transformer.wte.weight") ? "transformer." : "";
    size_t plen = strlen(prefix);
    for (int i = 0; i < b->st.n; i++) {
        const char *name = b->st.tensors[i].name;
        if (strcmp(name, "lm_head.weight") == 0) /* the unembedding: below */
            continue;
        char shown[200];
        if (strncmp(name, prefix, plen) != 0 || !known_name(name + plen, c.layers))
            return attn_diag_file(err, path, "tensor '%s' is not part of GPT-2 (arch gpt2)",
                                  show_name(shown, sizeof(shown), name));
    }

    if (s->n_tokens + s->pos.offset > c.positions)
        return attn_diag_set(
            err, "text", "%d tokens%s, but the checkpoint has %d positions (n_positions)",
            s->n_tokens, s->pos.offset > 0 ? " after the offset" : "", c.positions);
    int d = c.d, layers = o->layers ? s->layers : c.layers;
    if (layers > c.layers)
        return attn_diag_set(err, "layers", "layers %d: the checkpoint has %d", layers, c.layers);
    int heads = o->heads ? s->attn.heads : c.heads;
    if (heads < 1 || d % heads != 0)
        return attn_diag_set(err, "attention.heads",
                             "heads %d does not divide the checkpoint's width %d (n_embd)", heads,
                             d);

    /* F16 and BF16 tensors are widened to float32 copies: counted against the memory limit
       before any is made (F32 ones are read in place from the mapping). */
    static const char *const per_layer[] = {
        "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
        "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias",
        "ln_1.weight",        "ln_1.bias",        "ln_2.weight",        "ln_2.bias",
    };
    static const char *const top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    size_t widened = 0;
    char full[160];
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
        snprintf(full, sizeof(full), "%s%s", prefix, top[i]);
        widened += widened_bytes(&b->st, full);
    }
    for (int L = 0; L < layers; L++)
        for (size_t i = 0; i < sizeof(per_layer) / sizeof(per_layer[0]); i++) {
            snprintf(full, sizeof(full), "%sh.%d.%s", prefix, L, per_layer[i]);
            widened += widened_bytes(&b->st, full);
        }
    const char *why;
    size_t limit = attn_scene_memory_limit(&why);
    if (widened > limit)
        return attn_diag_file(
            err, path,
            "its F16/BF16 tensors need about %zu MiB as float32, over the %zu MiB "
            "limit (%s)",
            (widened + ((size_t)1 << 20) - 1) >> 20, limit >> 20, why);

    /* the tables */
    const struct st_tensor *wte =
        attn_st_find(&b->st, prefix[0] ? "transformer.wte.weight" : "wte.weight");
    int vocab = wte && wte->ndim == 2 ? (int)wte->shape[0] : 0;
    attn_matrix_free(&s->embed.rows);
    if (tensor(&s->embed.rows, b, prefix, "wte.weight", vocab, d, false, err))
        return -1;
    s->embed.kind = EMBED_TABLE;
    s->embed.dim = d;
    attn_matrix_free(&s->pos.table);
    if (tensor(&s->pos.table, b, prefix, "wpe.weight", c.positions, d, false, err))
        return -1;
    /* The unembedding: Hugging Face's GPT2LMHeadModel ties lm_head to wte unless the config
     * says tie_word_embeddings: false; then lm_head.weight is its own matrix. */
    attn_matrix_free(&s->unembed);
    if (c.tied) {
        s->unembed = s->embed.rows; /* borrowed: the same numbers, never freed twice */
    } else if (!attn_st_find(&b->st, "lm_head.weight")) {
        return attn_diag_file(
            err, path,
            "config.json says tie_word_embeddings: false, but the checkpoint has no "
            "lm_head.weight to unembed with");
    } else if (tensor(&s->unembed, b, "", "lm_head.weight", vocab, d, false, err)) {
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
    attn_scene_weights_free_all(s);
    if (layers > 1) {
        s->more_weights = calloc((size_t)layers - 1, sizeof(*s->more_weights));
        if (!s->more_weights)
            return attn_diag_set(err, "", "out of memory");
        s->n_more = layers - 1;
    }
    s->weights_listed = layers > 1;
    for (int L = 0; L < layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        char n[64];
        struct {
            struct attn_matrix *dst;
            const char *name;
            int rows, cols; /* rows 0: a vector (1-D) of cols */
        } parts[] = {
            {&w->qkv, "attn.c_attn.weight", d, 3 * d},
            {&w->qkv_bias, "attn.c_attn.bias", 0, 3 * d},
            {&w->out, "attn.c_proj.weight", d, d},
            {&w->out_bias, "attn.c_proj.bias", 0, d},
            {&w->ffn_W1, "mlp.c_fc.weight", d, c.inner},
            {&w->ffn_b1, "mlp.c_fc.bias", 0, c.inner},
            {&w->ffn_W2, "mlp.c_proj.weight", c.inner, d},
            {&w->ffn_b2, "mlp.c_proj.bias", 0, d},
            {&w->norm1_weight, "ln_1.weight", 0, d},
            {&w->norm1_bias, "ln_1.bias", 0, d},
            {&w->norm2_weight, "ln_2.weight", 0, d},
            {&w->norm2_bias, "ln_2.bias", 0, d},
        };
        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
            snprintf(n, sizeof(n), "h.%d.%s", L, parts[i].name);
            bool vector = parts[i].rows == 0;
            if (tensor(parts[i].dst, b, prefix, n, vector ? 1 : parts[i].rows, parts[i].cols,
                       vector, err))
                return -1;
        }
        w->set = true;
        if (L == layers - 1 &&
            (tensor(&w->final_norm_weight, b, prefix, "ln_f.weight", 1, d, true, err) ||
             tensor(&w->final_norm_bias, b, prefix, "ln_f.bias", 1, d, true, err)))
            return -1;
    }
    /* Every tensor was read by the finite check: a file that shrank meanwhile is known now. */
    if (attn_st_check_unchanged(&b->st, err) != 0)
        return -1;
    free(s->model.file);
    free(s->model.arch);
    s->model.file = absolute(path);
    s->model.arch = strdup("gpt2");
    s->model.layers = c.layers;
    s->model.heads = c.heads;
    s->model.widened = widened;
    if (!s->model.file || !s->model.arch)
        return attn_diag_set(err, "", "out of memory");
    return 0;
}
