/* ckpt: the backing, config.json and tensors every checkpoint family reads (see ckpt.h). */
#include "pretrained/ckpt.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "engine/tokenize.h"
#include "pretrained/bpe.h"
#include "pretrained/hftok.h"
#include "pretrained/jsonloc.h"
#include "common/utf8.h"
#include "pretrained/jsonoom.h"

/* ---- the backing ------------------------------------------------------------------------- */

static void release(struct attn_backing *ab)
{
    struct ckpt_backing *b = (struct ckpt_backing *)ab;
    attn_diag_list_free(&b->base.warnings);
    attn_bpe_free(b->bpe);
    attn_hftok_free(b->hf);
    if (b->has_st)
        attn_stset_close(&b->st);
    for (int i = 0; i < b->n_owned; i++)
        free(b->owned[i]);
    free(b->owned);
    for (int i = 0; i < b->n_parts; i++)
        free(b->parts[i]);
    free(b->parts);
    free(b);
}

static int tokenize(struct attn_backing *ab, const char *text, const char *pair, bool special,
                    char ***tokens, int **ids, int **types, int *n, struct diag *err)
{
    struct ckpt_backing *b = (struct ckpt_backing *)ab;
    *types = NULL;
    if (!b->bpe && !b->hf)
        return attn_diag_set(err, "tokenizer", "the tokenizer needs its vocabulary");
    int count = 0, *id = NULL, *type = NULL;
    if (b->hf) {
        /* encode(text, pair) as transformers calls it: with the special tokens (a scene's
         * text, an encoder's source), or without them (a decoder's target, a word named on its
         * own: the target language's, when a translator's tokenizer tells the two apart) */
        struct hftok_encoding e;
        if (attn_hftok_encode_side(&e, b->hf, special ? HFTOK_SOURCE : HFTOK_TARGET, text,
                                   strlen(text), pair, pair ? strlen(pair) : 0, special, err))
            return -1;
        /* a word named on its own must be in the vocabulary: [UNK] stands for any word */
        int unk = attn_hftok_unk_id(b->hf);
        for (int i = 0; !special && unk >= 0 && i < e.n; i++)
            if (e.ids[i] == unk && attn_hftok_token_id(b->hf, text, strlen(text)) != unk) {
                char label[4 * SCENE_MAX_TOKEN_BYTES];
                attn_hftok_token_label(label, sizeof(label), b->hf, unk);
                attn_hftok_encoding_free(&e);
                return attn_diag_set(err, "text",
                                     "'%s' is not in the vocabulary: the tokenizer makes %s of it",
                                     text, label);
            }
        id = e.ids;
        type = e.type_ids;
        count = e.n;
        e.ids = NULL;
        e.type_ids = NULL;
        attn_hftok_encoding_free(&e);
    } else if (pair) {
        return attn_diag_set(err, "text",
                             "two sentences (text: [A, B]) need a tokenizer with a template "
                             "that joins them (kind: hf); GPT-2's BPE has none");
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
        free(type);
        return attn_diag_set(err, "text", "out of memory");
    }
    *tokens = labels;
    *ids = id;
    /* only a pair makes sentence B; one sentence is all sentence A (BERT's types are all 0) */
    *types = type;
    *n = count;
    return 0;
}

static void label(struct attn_backing *ab, int id, char *out, size_t size)
{
    struct ckpt_backing *b = (struct ckpt_backing *)ab;
    if (b->bpe)
        attn_bpe_token_label(out, size, b->bpe, id);
    else if (b->hf)
        attn_hftok_token_label(out, size, b->hf, id);
    else
        snprintf(out, size, "<id %d>", id);
}

static size_t token_bytes(struct attn_backing *ab, int id, bool first, char *out, size_t size)
{
    struct ckpt_backing *b = (struct ckpt_backing *)ab;
    if (b->bpe) {
        size_t len = 0;
        const char *p = attn_bpe_token_bytes(b->bpe, id, &len);
        if (!p)
            return 0;
        len = len < size ? len : size;
        memcpy(out, p, len);
        return len;
    }
    return b->hf ? attn_hftok_token_bytes(out, size, b->hf, id, first) : 0;
}

static int check(struct attn_backing *ab, struct diag *err)
{
    struct ckpt_backing *b = (struct ckpt_backing *)ab;
    return b->has_st ? attn_stset_check_unchanged(&b->st, err) : 0;
}

/* A lazy matrix's rows: tensor is its struct st_ref. A file that shrank gives zeros (mapguard)
 * and the next check says so; the shape was checked when it was loaded. */
static void read_rows(struct attn_backing *ab, const void *tensor, float *out, size_t r0,
                      size_t rows)
{
    struct ckpt_backing *b = (struct ckpt_backing *)ab;
    const struct st_ref *r = tensor;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_st_read_rows_f32(out, &b->st.files[r->file], r->t, (int64_t)r0, (int64_t)rows, &err) !=
        0)
        memset(out, 0, rows * (size_t)r->t->shape[1] * sizeof(float));
}

struct ckpt_backing *attn_ckpt_backing(struct attn_scene *s)
{
    if (s->backing)
        return (struct ckpt_backing *)s->backing;
    struct ckpt_backing *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->base.refs = 1;
    b->base.release = release;
    b->base.tokenize = tokenize;
    b->base.label = label;
    b->base.token_bytes = token_bytes;
    b->base.check = check;
    b->base.read_rows = read_rows;
    s->backing = &b->base;
    return b;
}

int attn_ckpt_token_id(const struct ckpt_backing *b, const char *token)
{
    return b->hf ? attn_hftok_token_id(b->hf, token, strlen(token)) : -1;
}

/* ---- config.json ------------------------------------------------------------------------- */

int attn_ckpt_config_open(struct ckpt_config *c, const char *model_path, struct diag *err)
{
    memset(c, 0, sizeof(*c));
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", model_path);
    snprintf(c->path, sizeof(c->path), "%s/config.json", dirname(dir));
    if (attn_fsutil_read_file(&c->text, &c->len, c->path, CKPT_CONFIG_MAX, err) != 0) {
        char msg[DIAG_MSG_MAX];
        snprintf(msg, sizeof(msg), "%.400s (config.json beside the checkpoint gives its sizes)",
                 err->msg);
        snprintf(err->msg, sizeof(err->msg), "%s", msg);
        return -1;
    }
    if (attn_json_has_bom(c->text, c->len)) {
        attn_diag_file(err, c->path, ATTN_JSON_BOM_MSG);
        err->line = err->col = 1;
        attn_ckpt_config_close(c);
        return -1;
    }
    json_error_t je;
    c->root = json_loadb(c->text, c->len, JSON_REJECT_DUPLICATES, &je);
    if (!c->root && attn_json_out_of_memory(&je, c->text, c->len)) {
        attn_diag_file(err, c->path, "out of memory reading the JSON");
        attn_ckpt_config_close(c);
        return -1;
    }
    if (!c->root) { /* jansson quotes the bytes near the error as they are */
        char shown[2 * JSON_ERROR_TEXT_LENGTH];
        attn_diag_file(err, c->path, "not valid JSON: %s",
                       attn_utf8_esc(shown, sizeof(shown), je.text));
        err->line = je.line > 0 ? je.line : 0;
        err->col = je.line > 0 && je.column > 0 ? je.column : 0;
        attn_ckpt_config_close(c);
        return -1;
    }
    if (!json_is_object(c->root)) {
        attn_diag_file(err, c->path, "not a JSON object of the model's sizes");
        attn_ckpt_config_close(c);
        return -1;
    }
    return 0;
}

void attn_ckpt_config_close(struct ckpt_config *c)
{
    attn_diag_list_free(&c->warnings);
    json_decref(c->root);
    free(c->text);
    c->root = NULL;
    c->text = NULL;
    c->len = 0;
}

int attn_ckpt_config_error(const struct ckpt_config *c, const char *key, const char *sub,
                           struct diag *err, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    attn_diag_file(err, c->path, "%s", msg);
    if (key) {
        const char *keys[2] = {key, sub};
        attn_json_locate(c->text, c->len, keys, sub ? 2 : 1, &err->line, &err->col);
    }
    return -1;
}

void attn_ckpt_config_warn(struct ckpt_config *c, const char *key, const char *sub, const char *fmt,
                           ...)
{
    struct diag d;
    attn_diag_clear(&d);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d.msg, sizeof(d.msg), fmt, ap);
    va_end(ap);
    snprintf(d.file, sizeof(d.file), "%.*s", (int)sizeof(d.file) - 1, c->path);
    if (key) {
        const char *keys[2] = {key, sub};
        attn_json_locate(c->text, c->len, keys, sub ? 2 : 1, &d.line, &d.col);
    }
    attn_diag_list_push(&c->warnings, &d); /* out of memory: counted in lost, and said */
}

bool attn_ckpt_json_same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return a && b && json_equal((json_t *)(uintptr_t)a, (json_t *)(uintptr_t)b);
}

/* ---- config.json's keys --------------------------------------------------------------------- */

/* The keys of every configuration (transformers' PreTrainedConfig, and the generation keys it
 * pops when a config carries them); any key ending in _token_id(s) is a token id too. */
static const struct ckpt_key common_keys[] = {
    {"architectures", KEY_READ, 0, NULL, NULL},
    {"model_type", KEY_READ, 0, NULL, NULL},
    {"transformers_version", KEY_INERT, 0, NULL, NULL},
    {"_name_or_path", KEY_INERT, 0, NULL, NULL},
    {"name_or_path", KEY_INERT, 0, NULL, NULL},
    {"_commit_hash", KEY_INERT, 0, NULL, NULL},
    {"torch_dtype", KEY_INERT, 0, NULL, NULL}, /* the stored dtype: safetensors says it */
    {"dtype", KEY_INERT, 0, NULL, NULL},       /* transformers 5's name of it */
    {"use_bfloat16", KEY_INERT, 0, NULL, NULL},
    {"return_dict", KEY_INERT, 0, NULL, NULL},
    {"output_hidden_states", KEY_INERT, 0, NULL, NULL},
    {"output_attentions", KEY_INERT, 0, NULL, NULL},
    {"torchscript", KEY_INERT, 0, NULL, NULL},
    /* eager, sdpa or flash: the same mathematics */
    {"_attn_implementation", KEY_INERT, 0, NULL, NULL},
    {"attn_implementation", KEY_INERT, 0, NULL, NULL},
    {"_attn_implementation_autoset", KEY_INERT, 0, NULL, NULL},
    {"experts_implementation", KEY_INERT, 0, NULL, NULL},
    {"chunk_size_feed_forward", KEY_INERT, 0, NULL, NULL}, /* the same rows, fewer at a time */
    {"is_encoder_decoder", KEY_DEFAULT, 0, "false", "attnscope reads a single stack of layers"},
    {"tie_encoder_decoder", KEY_INERT, 0, NULL, NULL},
    {"cross_attention_hidden_size", KEY_INERT, 0, NULL, NULL},
    {"pruned_heads", KEY_DEFAULT, 0, "{}", "pruned heads are not something attnscope computes"},
    {"per_layer_config", KEY_DEFAULT, 0, "{}",
     "a configuration of its own per layer is not something attnscope computes"},
    {"quantization_config", KEY_DEFAULT, 0, "{}",
     "quantized weights are not something attnscope reads"},
    {"auto_map", KEY_INERT, 0, NULL, NULL}, /* custom code: transformers' own class is computed */
    {"id2label", KEY_INERT, 0, NULL, NULL},
    {"label2id", KEY_INERT, 0, NULL, NULL},
    {"num_labels", KEY_INERT, 0, NULL, NULL},
    {"problem_type", KEY_INERT, 0, NULL, NULL},
    {"finetuning_task", KEY_INERT, 0, NULL, NULL},
    {"tokenizer_class", KEY_INERT, 0, NULL, NULL},
    {"prefix", KEY_INERT, 0, NULL, NULL},
    {"task_specific_params", KEY_INERT, 0, NULL, NULL},
    {"use_cache", KEY_INERT, 0, NULL, NULL},
    {"initializer_range", KEY_INERT, 0, NULL, NULL},
    {"gradient_checkpointing", KEY_INERT, 0, NULL, NULL},
    {"tf_legacy_loss", KEY_INERT, 0, NULL, NULL},
    /* generation's: how tokens are picked after the forward pass, never the pass itself */
    {"max_length", KEY_INERT, 0, NULL, NULL},
    {"max_new_tokens", KEY_INERT, 0, NULL, NULL},
    {"min_length", KEY_INERT, 0, NULL, NULL},
    {"min_new_tokens", KEY_INERT, 0, NULL, NULL},
    {"early_stopping", KEY_INERT, 0, NULL, NULL},
    {"max_time", KEY_INERT, 0, NULL, NULL},
    {"stop_strings", KEY_INERT, 0, NULL, NULL},
    {"do_sample", KEY_INERT, 0, NULL, NULL},
    {"num_beams", KEY_INERT, 0, NULL, NULL},
    {"num_beam_groups", KEY_INERT, 0, NULL, NULL},
    {"penalty_alpha", KEY_INERT, 0, NULL, NULL},
    {"temperature", KEY_INERT, 0, NULL, NULL},
    {"top_k", KEY_INERT, 0, NULL, NULL},
    {"top_p", KEY_INERT, 0, NULL, NULL},
    {"min_p", KEY_INERT, 0, NULL, NULL},
    {"typical_p", KEY_INERT, 0, NULL, NULL},
    {"epsilon_cutoff", KEY_INERT, 0, NULL, NULL},
    {"eta_cutoff", KEY_INERT, 0, NULL, NULL},
    {"diversity_penalty", KEY_INERT, 0, NULL, NULL},
    {"repetition_penalty", KEY_INERT, 0, NULL, NULL},
    {"encoder_repetition_penalty", KEY_INERT, 0, NULL, NULL},
    {"length_penalty", KEY_INERT, 0, NULL, NULL},
    {"no_repeat_ngram_size", KEY_INERT, 0, NULL, NULL},
    {"encoder_no_repeat_ngram_size", KEY_INERT, 0, NULL, NULL},
    {"bad_words_ids", KEY_READ, 0, NULL, NULL}, /* its single tokens: never chosen */
    {"force_words_ids", KEY_INERT, 0, NULL, NULL},
    {"renormalize_logits", KEY_INERT, 0, NULL, NULL},
    {"remove_invalid_values", KEY_INERT, 0, NULL, NULL},
    {"exponential_decay_length_penalty", KEY_INERT, 0, NULL, NULL},
    {"suppress_tokens", KEY_INERT, 0, NULL, NULL},
    {"begin_suppress_tokens", KEY_INERT, 0, NULL, NULL},
    {"sequence_bias", KEY_INERT, 0, NULL, NULL},
    {"guidance_scale", KEY_INERT, 0, NULL, NULL},
    {"num_return_sequences", KEY_INERT, 0, NULL, NULL},
    {"output_scores", KEY_INERT, 0, NULL, NULL},
    {"output_logits", KEY_INERT, 0, NULL, NULL},
    {"return_dict_in_generate", KEY_INERT, 0, NULL, NULL},
};

/* The row of name in table for variant, or NULL. */
static const struct ckpt_key *find_key(const struct ckpt_key *table, size_t n, int variant,
                                       const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0 &&
            (table[i].variants == 0 || (table[i].variants & (1u << variant))))
            return &table[i];
    return NULL;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

int attn_ckpt_config_keys(struct ckpt_config *c, const struct ckpt_key *table, size_t n,
                          int variant, const char *cls, struct diag *err)
{
    const char *name;
    json_t *v;
    json_object_foreach(c->root, name, v)
    {
        const struct ckpt_key *k = find_key(table, n, variant, name);
        if (!k)
            k = find_key(common_keys, sizeof(common_keys) / sizeof(common_keys[0]), 0, name);
        char shown[200];
        if (!k) {
            if (ends_with(name, "_token_id") || ends_with(name, "_token_ids"))
                continue; /* a token id: what generation starts or stops with */
            attn_ckpt_show_name(shown, sizeof(shown), name);
            attn_ckpt_config_warn(c, name, NULL,
                                  "unknown key '%s' (not in transformers' %s): attnscope "
                                  "ignores it",
                                  shown, cls);
            continue;
        }
        if (k->use != KEY_DEFAULT || json_is_null(v))
            continue;
        json_t *def = json_loads(k->def, JSON_DECODE_ANY, NULL);
        if (!def)
            return attn_ckpt_config_error(c, NULL, NULL, err, "out of memory");
        /* an empty object and null are the same absence (pruned_heads, quantization_config) */
        bool same =
            attn_ckpt_json_same(v, def) || (json_is_object(def) && json_object_size(def) == 0 &&
                                            json_is_object(v) && json_object_size(v) == 0);
        json_decref(def);
        if (!same) {
            char got[64];
            return attn_ckpt_config_error(c, name, NULL, err, "'%s' is %s: %s", name,
                                          attn_ckpt_show_value(got, sizeof(got), v), k->why);
        }
    }
    return 0;
}

json_t *attn_ckpt_config_get(const struct ckpt_config *c, const char *key, const char *alt,
                             const char **used)
{
    json_t *v = json_object_get(c->root, key);
    if (used)
        *used = key;
    if (!v && alt && (v = json_object_get(c->root, alt)) && used)
        *used = alt;
    return v;
}

const char *attn_ckpt_show_value(char *out, size_t size, const json_t *v)
{
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
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

int attn_ckpt_config_int(int *out, const struct ckpt_config *c, struct ckpt_int spec,
                         struct diag *err)
{
    const char *used, *what = spec.what;
    json_t *v = attn_ckpt_config_get(c, spec.key, spec.alt, &used);
    char got[64];
    if (!v || json_is_null(v)) {
        if (!spec.required)
            return 0;
        if (!v)
            return attn_ckpt_config_error(c, NULL, NULL, err, "'%s' (%s) is missing", spec.key,
                                          what);
    }
    if (!json_is_integer(v))
        return attn_ckpt_config_error(c, used, NULL, err, "'%s' (%s) is %s, not an integer", used,
                                      what, attn_ckpt_show_value(got, sizeof(got), v));
    long long x = json_integer_value(v);
    if (x < spec.min)
        return attn_ckpt_config_error(c, used, NULL, err,
                                      "'%s' (%s) is %lld: it must be at least %lld", used, what, x,
                                      spec.min);
    if (x > spec.max)
        return attn_ckpt_config_error(
            c, used, NULL, err, "'%s' (%s) is %lld: attnscope runs at most %lld (out of range)",
            used, what, x, spec.max);
    *out = (int)x;
    return 0;
}

int attn_ckpt_config_number(double *out, const struct ckpt_config *c, struct ckpt_number spec,
                            struct diag *err)
{
    json_t *v = json_object_get(c->root, spec.key);
    if (!v || json_is_null(v))
        return 0;
    char got[64];
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(x > spec.above && x < spec.below))
        return attn_ckpt_config_error(c, spec.key, NULL, err, "'%s' is %s, not %s", spec.key,
                                      attn_ckpt_show_value(got, sizeof(got), v), spec.what);
    *out = x;
    return 0;
}

int attn_ckpt_config_bool(bool *out, const struct ckpt_config *c, const char *key, struct diag *err)
{
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v))
        return 0;
    char got[64];
    if (!json_is_boolean(v))
        return attn_ckpt_config_error(c, key, NULL, err, "'%s' is %s, not true or false", key,
                                      attn_ckpt_show_value(got, sizeof(got), v));
    *out = json_is_true(v);
    return 0;
}

/* ---- tensors ------------------------------------------------------------------------------- */

const char *attn_ckpt_show_name(char *out, size_t size, const char *name)
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

int attn_ckpt_open(struct ckpt_backing *b, const char *path, struct diag *err)
{
    if (b->has_st)
        attn_stset_close(&b->st);
    b->has_st = false;
    b->base.lazy_floats = 0;
    if (attn_stset_open(&b->st, path, err))
        return -1;
    b->has_st = true;
    return 0;
}

bool attn_ckpt_has(const struct ckpt_backing *b, const char *name)
{
    return attn_stset_find(&b->st, name) != NULL;
}

bool attn_ckpt_shape(const struct ckpt_backing *b, const char *name, int *rows, int *cols)
{
    const struct st_ref *r = attn_stset_find(&b->st, name);
    if (!r || r->t->ndim < 1 || r->t->ndim > 2 || r->t->shape[0] > INT32_MAX ||
        (r->t->ndim == 2 && r->t->shape[1] > INT32_MAX))
        return false;
    *rows = r->t->ndim == 2 ? (int)r->t->shape[0] : 1;
    *cols = (int)r->t->shape[r->t->ndim - 1];
    return true;
}

/* True when v[0 .. n) holds a nan or an inf: the largest magnitude's bits reach the exponent's
 * all-ones (a max reduction the compiler vectorises; a loop that stops at the first bad value
 * does not, and the check read GPT-2 small's 500 MB a float at a time). */
static bool any_nonfinite(const float *v, size_t n)
{
    uint32_t lane[8] = {0}; /* eight running maxima: the form -O2's SLP vectoriser takes */
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            uint32_t u;
            memcpy(&u, v + i + k, sizeof(u));
            u &= 0x7fffffffu;
            lane[k] = u > lane[k] ? u : lane[k];
        }
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, v + i, sizeof(u));
        u &= 0x7fffffffu;
        lane[0] = u > lane[0] ? u : lane[0];
    }
    uint32_t most = 0;
    for (int k = 0; k < 8; k++)
        most = lane[k] > most ? lane[k] : most;
    return most >= 0x7f800000u;
}

/* Refuses a tensor holding nan or inf, naming it and the first bad value: softmax would turn a
 * nan row into weights of 0 where torch gives nan. The values are read a block of stored rows at
 * a time (a lazy tensor is never widened whole). Stored shape (srows, scols). */
static int check_finite(struct ckpt_backing *b, const struct st_ref *r, const float *data,
                        int srows, int scols, bool vector, struct diag *err)
{
    const struct st_file *f = &b->st.files[r->file];
    enum { BLOCK = 1 << 16 };
    float *buf = data ? NULL : malloc(BLOCK * sizeof(float));
    if (!data && !buf)
        return attn_diag_set(err, "", "out of memory");
    size_t rows_at_once = (size_t)(BLOCK / (scols > 0 ? scols : 1));
    if (rows_at_once < 1)
        rows_at_once = 1;
    int rc = 0;
    for (size_t r0 = 0; r0 < (size_t)srows && rc == 0; r0 += rows_at_once) {
        size_t nr = (size_t)srows - r0 < rows_at_once ? (size_t)srows - r0 : rows_at_once;
        const float *v = data ? data + r0 * (size_t)scols : buf;
        if (!data) {
            if (vector) /* a 1-D tensor: whole (it fits the block or is read in one go) */
                rc = attn_st_read_f32(buf, (size_t)scols, f, r->t, err);
            else
                rc = attn_st_read_rows_f32(buf, f, r->t, (int64_t)r0, (int64_t)nr, err);
            if (rc)
                break;
        }
        size_t count = nr * (size_t)scols;
        if (!any_nonfinite(v, count))
            continue;
        for (size_t i = 0; i < count; i++) { /* the first bad value, named */
            if (isfinite(v[i]))
                continue;
            char shown[200];
            attn_ckpt_show_name(shown, sizeof(shown), r->name);
            const char *what = isnan(v[i]) ? "nan" : v[i] > 0 ? "inf" : "-inf";
            size_t at = r0 * (size_t)scols + i;
            if (vector)
                rc = attn_diag_file(err, f->path,
                                    "tensor '%s': value [%zu] is %s, not a finite number", shown,
                                    at, what);
            else
                rc = attn_diag_file(
                    err, f->path,
                    "tensor '%s': value [%zu, %zu] of [%d, %d] is %s, not a finite number", shown,
                    at / (size_t)scols, at % (size_t)scols, srows, scols, what);
            break;
        }
    }
    free(buf);
    return rc;
}

/* A float32 copy the backing owns: count floats, or NULL. */
static float *owned_copy(struct ckpt_backing *b, size_t count)
{
    if (b->n_owned == b->cap_owned) {
        int cap = b->cap_owned ? 2 * b->cap_owned : 64;
        float **grown = realloc(b->owned, (size_t)cap * sizeof(*grown));
        if (!grown)
            return NULL;
        b->owned = grown;
        b->cap_owned = cap;
    }
    float *data = malloc((count ? count : 1) * sizeof(float));
    if (data) {
        b->owned[b->n_owned++] = data;
        b->widened += count * sizeof(float);
    }
    return data;
}

float *attn_ckpt_owned(struct ckpt_backing *b, size_t count)
{
    return owned_copy(b, count);
}

int attn_ckpt_tensor(struct attn_matrix *out, struct ckpt_backing *b, const char *name, int rows,
                     int cols, enum ckpt_form form, const char *arch, struct diag *err)
{
    char shown[200];
    attn_ckpt_show_name(shown, sizeof(shown), name);
    const struct st_ref *r = attn_stset_find(&b->st, name);
    const char *path = b->st.path;
    if (!r)
        return attn_diag_file(err, path, "tensor '%s' is missing (arch %s)", shown, arch);
    const struct st_tensor *t = r->t;
    bool vector = form == CKPT_VECTOR, turned = form == CKPT_LINEAR;
    int srows = turned ? cols : rows, scols = turned ? rows : cols; /* as stored */
    bool ok = vector ? t->ndim == 1 && t->shape[0] == cols
                     : t->ndim == 2 && t->shape[0] == srows && t->shape[1] == scols;
    if (!ok) {
        char shape[96] = "";
        size_t o = 0;
        for (int i = 0; i < t->ndim && o < sizeof(shape); i++)
            o += (size_t)snprintf(shape + o, sizeof(shape) - o, "%s%lld", i ? ", " : "",
                                  (long long)t->shape[i]);
        if (vector)
            return attn_diag_file(err, path, "tensor '%s' has shape [%s], expected [%d]", shown,
                                  shape, cols);
        return attn_diag_file(err, path, "tensor '%s' has shape [%s], expected [%d, %d]", shown,
                              shape, srows, scols);
    }
    if (t->dtype == ST_OTHER)
        return attn_diag_file(err, path, "tensor '%s' is %s: attnscope reads F32, F16 and BF16",
                              shown, t->dtype_name);
    const struct st_file *f = &b->st.files[r->file];
    size_t count = (size_t)rows * (size_t)cols;
    const float *view = turned ? NULL : attn_st_f32_view(f, t);
    float *data = (float *)(uintptr_t)view;
    if (!view && (form == CKPT_MATRIX || form == CKPT_LINEAR)) { /* lazy: widened when needed */
        if (check_finite(b, r, NULL, srows, scols, false, err))
            return -1;
        if (count > b->base.lazy_floats)
            b->base.lazy_floats = count;
        *out = (struct attn_matrix){NULL, rows, cols, true, r, turned};
        return 0;
    }
    if (!view) {
        if (!(data = owned_copy(b, count)))
            return attn_diag_set(err, "", "out of memory for tensor '%s'", shown);
        if (attn_st_read_f32(data, count, f, t, err))
            return -1;
    }
    if (check_finite(b, r, data, srows, scols, vector, err) != 0)
        return -1;
    *out = (struct attn_matrix){data, rows, cols, true, NULL, false};
    return 0;
}

/* Rows of a stored tensor as one of its own: its own shape and byte range, the file's. */
struct ckpt_part {
    struct st_tensor t;
    struct st_ref r;
};

int attn_ckpt_linear_rows(struct attn_matrix *out, struct ckpt_backing *b, const char *name, int in,
                          int total, int row0, int nrows, const char *arch, struct diag *err)
{
    struct attn_matrix whole;
    if (attn_ckpt_tensor(&whole, b, name, in, total, CKPT_LINEAR, arch, err))
        return -1;
    if (!whole.lazy) /* a Linear is always lazy: turned as it is widened */
        return attn_diag_set(err, "", "tensor '%s' was not read lazily", name);
    const struct st_ref *r = whole.lazy;
    if (b->n_parts == b->cap_parts) {
        int cap = b->cap_parts ? 2 * b->cap_parts : 16;
        struct ckpt_part **grown = realloc(b->parts, (size_t)cap * sizeof(*grown));
        if (!grown)
            return attn_diag_set(err, "", "out of memory");
        b->parts = grown;
        b->cap_parts = cap;
    }
    struct ckpt_part *part = malloc(sizeof(*part));
    if (!part)
        return attn_diag_set(err, "", "out of memory");
    b->parts[b->n_parts++] = part;
    size_t esize = r->t->dtype == ST_F32 ? 4 : 2, row_bytes = (size_t)in * esize;
    part->t = *r->t; /* its name and dtype the whole's: messages name the file's tensor */
    part->t.shape[0] = nrows;
    part->t.begin = r->t->begin + (size_t)row0 * row_bytes;
    part->t.end = part->t.begin + (size_t)nrows * row_bytes;
    part->r = (struct st_ref){r->name, r->file, &part->t};
    *out = (struct attn_matrix){NULL, in, nrows, true, &part->r, true};
    return 0;
}

int attn_ckpt_finish(struct ckpt_backing *b, struct attn_scene *s, const char *path,
                     const char *arch, struct diag *err)
{
    /* Every tensor was read by the finite check: a file that shrank meanwhile is known now. */
    if (attn_stset_check_unchanged(&b->st, err) != 0)
        return -1;
    size_t widened = b->widened + b->base.lazy_floats * sizeof(float);
    const char *why;
    size_t limit = attn_scene_memory_limit(&why);
    if (widened > limit)
        return attn_diag_file(err, path,
                              "its F16/BF16 tensors need about %zu MiB as float32, over the %zu "
                              "MiB limit (%s)",
                              (widened + ((size_t)1 << 20) - 1) >> 20, limit >> 20, why);
    char *file = attn_fsutil_absolute(path); /* links kept: see fsutil.h */
    if (!file)
        return attn_diag_set(err, "", "out of memory");
    free(s->model.file);
    free(s->model.arch);
    s->model.file = file;
    s->model.arch = strdup(arch);
    s->model.widened = widened;
    if (!s->model.file || !s->model.arch)
        return attn_diag_set(err, "", "out of memory");
    return 0;
}

int attn_ckpt_reset_weights(struct attn_scene *s, int layers, struct diag *err)
{
    attn_scene_weights_free_all(s);
    s->more_weights = layers > 1 ? calloc((size_t)layers - 1, sizeof(*s->more_weights)) : NULL;
    s->n_more = layers - 1;
    s->weights_listed = layers > 1;
    if (layers > 1 && !s->more_weights) {
        s->n_more = 0;
        return attn_diag_set(err, "", "out of memory");
    }
    return 0;
}
