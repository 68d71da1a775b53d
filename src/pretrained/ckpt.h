/* ckpt: what every checkpoint family shares.
 *
 * Each family's file (the registry, families.h, lists them) maps its Hugging Face tensor names
 * and config.json keys onto a scene; this module does the reading they have in common (and
 * family.c the steps each takes first):
 *   - the scene's backing (engine/scene.h): the tokenizer, the mapped checkpoint (one file or a
 *     sharded index, stset.h) and the float32 copies widened from F16/BF16 tensors;
 *   - config.json, its values checked against attnscope's limits and every problem located at
 *     config.json:line:col on its key;
 *   - tensors as a scene's matrices: an F32 tensor stored as the engine reads it stays in place in
 *     the mapping; any other weight matrix (F16, BF16, or stored transposed as torch's Linear
 *     keeps it) is lazy: the engine widens it when it needs it, one matrix at a time (model.h's
 *     attn_model_param), so a model is never widened whole; vectors and the small tables are
 *     widened once. Every tensor read is checked to hold finite numbers.
 */
#ifndef ATTNSCOPE_CKPT_H
#define ATTNSCOPE_CKPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/scene.h"
#include "pretrained/stset.h"

struct bpe;
struct hftok;

/* The scene's backing. Freed with the last scene that shares it. */
struct ckpt_backing {
    struct attn_backing base;
    struct bpe *bpe;
    struct hftok *hf; /* tokenizer hf, instead of bpe */
    struct st_set st;
    bool has_st;
    float **owned; /* the widened copies */
    int n_owned, cap_owned;
    struct ckpt_part **parts; /* rows of fused tensors read as tensors of their own */
    int n_parts, cap_parts;
    size_t widened; /* their bytes */
};

/* What the scene file said itself: it wins over the checkpoint's config. */
struct ckpt_overrides {
    bool heads;  /* attention.heads (the same columns split into other heads) */
    bool layers; /* layers: run only the first ones */
    bool causal; /* attention.causal */
    bool scale;  /* attention.scale */
};

/* s's backing, made on first use (only this module makes backings); NULL when out of memory. */
struct ckpt_backing *attn_ckpt_backing(struct attn_scene *s);
/* The id of a token of the scene's tokenizer as its vocabulary writes it ("[MASK]"), or -1. */
int attn_ckpt_token_id(const struct ckpt_backing *b, const char *token);

/* ---- config.json -------------------------------------------------------------------------- */

/* config.json is a few kB; anything past this is not one (a 300 MB string took 9 s). */
#define CKPT_CONFIG_MAX ((size_t)64 << 20)

struct ckpt_config {
    char path[4200]; /* config.json beside the checkpoint */
    char *text;      /* its bytes (to locate a key in a message) */
    size_t len;
    json_t *root;              /* a JSON object */
    struct diag_list warnings; /* what was read past without refusing, each at its key */
};

/* Reads and parses config.json beside model_path (the .safetensors file or the index). */
int attn_ckpt_config_open(struct ckpt_config *c, const char *model_path, struct diag *err);
void attn_ckpt_config_close(struct ckpt_config *c);
/* A problem of key's value (sub: a member of it, or NULL), at config.json on the key's line, or
 * at config.json:0:0 when key is NULL or not written. Returns -1. */
int attn_ckpt_config_error(const struct ckpt_config *c, const char *key, const char *sub,
                           struct diag *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The value of key, or of alt when key is not there (then *used names alt), or NULL. */
json_t *attn_ckpt_config_get(const struct ckpt_config *c, const char *key, const char *alt,
                             const char **used);
/* An integer key of config.json and what attnscope can run of it (attn_ckpt_config_int), named
 * at the call as ggml_init's struct ggml_init_params is:
 *   attn_ckpt_config_int(&n, c, (struct ckpt_int){.key = "n_head", .min = 1, .max = 256,
 *                                                  .what = "heads", .required = true}, err) */
struct ckpt_int {
    const char *key;
    const char *alt;    /* another name of it (GPT-2's attribute_map), or NULL */
    long long min, max; /* what attnscope runs: "it must be at least", "at most" */
    const char *what;   /* what it is, in messages: "'n_head' (heads) is 0" */
    bool required;      /* missing: an error; else *out is left as it is */
};
/* A number key of config.json, strictly between above and below (attn_ckpt_config_number). */
struct ckpt_number {
    const char *key;
    double above, below;
    const char *what; /* what it must be, in messages: 'KEY' is "abc", not WHAT */
};

/* The integer spec says. Missing (or null): an error when required, else *out is left as it is. */
int attn_ckpt_config_int(int *out, const struct ckpt_config *c, struct ckpt_int spec,
                         struct diag *err);
/* The number spec says; missing (or null): *out left as it is. */
int attn_ckpt_config_number(double *out, const struct ckpt_config *c, struct ckpt_number spec,
                            struct diag *err);
/* true or false; missing (or null): *out left as it is. */
int attn_ckpt_config_bool(bool *out, const struct ckpt_config *c, const char *key,
                          struct diag *err);
/* A warning about key's value (sub: a member of it, or NULL) at config.json on the key's line,
 * kept in c->warnings (the scene's backing takes them: attn_pretrained_load). */
void attn_ckpt_config_warn(struct ckpt_config *c, const char *key, const char *sub, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));
/* Whether two JSON values are the same, numbers by value (1 is 1.0, as in Python). */
bool attn_ckpt_json_same(const json_t *a, const json_t *b);
/* A JSON value as a message shows it: written out, cut, control characters escaped. */
const char *attn_ckpt_show_value(char *out, size_t size, const json_t *v);
/* A tensor's name for a message: escaped, a long one cut in its middle with "…". */
const char *attn_ckpt_show_name(char *out, size_t size, const char *name);

/* ---- config.json's keys: one table per family ---------------------------------------------- */

/* What attnscope does with a key of config.json. The tables are transformers' configuration
 * classes (configuration_gpt2.py, configuration_llama.py, ..., and PreTrainedConfig's own keys),
 * key by key; docs/checkpoints.md says which version and how they were read. */
enum ckpt_key_use {
    KEY_READ,    /* implemented: the family's reader reads and checks it */
    KEY_INERT,   /* changes nothing attnscope computes (dropout in training, token ids, ...) */
    KEY_DEFAULT, /* refused unless it has its default value (def) or is null */
};

struct ckpt_key {
    const char *name;
    enum ckpt_key_use use;
    unsigned variants; /* the family's variants that have it, a bit each (1u << variant); 0: all */
    const char *def;   /* KEY_DEFAULT: transformers' default, as JSON text ("false", "{}") */
    const char *why;   /* KEY_DEFAULT: what attnscope does not compute */
};

/* Every top-level key of c against family's table (n rows) for variant, and the keys every
 * config shares (PreTrainedConfig's, the generation keys, the token ids): a KEY_DEFAULT key of
 * another value is refused at its key ("'mlp_bias' is true: ..."); a key no table knows is a
 * warning at its key (attn_ckpt_config_warn) naming it and the configuration class (cls). */
int attn_ckpt_config_keys(struct ckpt_config *c, const struct ckpt_key *table, size_t n,
                          int variant, const char *cls, struct diag *err);

/* ---- tensors ------------------------------------------------------------------------------ */

enum ckpt_form {
    CKPT_VECTOR, /* 1-D of cols (rows is 1): widened once when it is not F32 */
    CKPT_TABLE,  /* (rows, cols) as stored, always in memory: in place, or widened once */
    CKPT_MATRIX, /* (rows, cols) as stored: in place, or lazy */
    CKPT_LINEAR, /* torch's Linear weight, stored (cols, rows): lazy, turned when widened */
};

/* Opens the checkpoint at path (a .safetensors file or a sharded index) into b, closing the one
 * it had. */
int attn_ckpt_open(struct ckpt_backing *b, const char *path, struct diag *err);
/* Whether the checkpoint has a tensor called name. */
bool attn_ckpt_has(const struct ckpt_backing *b, const char *name);
/* The shape of tensor name ((rows, cols) of a 2-D one, (1, n) of a 1-D one), or false. */
bool attn_ckpt_shape(const struct ckpt_backing *b, const char *name, int *rows, int *cols);
/* The tensor name as a scene matrix of (rows, cols) in x @ W orientation (see enum ckpt_form),
 * its shape checked and its values checked to be finite. arch names the mapping in messages
 * ("tensor 'x' is missing (arch llama)"). */
int attn_ckpt_tensor(struct attn_matrix *out, struct ckpt_backing *b, const char *name, int rows,
                     int cols, enum ckpt_form form, const char *arch, struct diag *err);
/* Rows row0 .. row0 + nrows - 1 of the Linear weight name, stored (total, in), as a lazy matrix
 * (in, nrows) of its own: one projection of a fused one whose parts are stacked (Phi-3's
 * qkv_proj [Q; K; V] and gate_up_proj [gate; up]). The whole tensor's shape is checked. */
int attn_ckpt_linear_rows(struct attn_matrix *out, struct ckpt_backing *b, const char *name, int in,
                          int total, int row0, int nrows, const char *arch, struct diag *err);
/* After the last tensor: the file still as it was read, and the float32 copies the loader made
 * and the engine's widening buffer together under the memory limit (the figure goes to
 * s->model.widened). */
int attn_ckpt_finish(struct ckpt_backing *b, struct attn_scene *s, const char *path,
                     const char *arch, struct diag *err);

/* A float32 array of count the backing owns (freed with it): longrope's factors. NULL out of
 * memory. */
float *attn_ckpt_owned(struct ckpt_backing *b, size_t count);

/* Frees every layer's explicit parameters and makes room for layers of them (layer 0 in
 * s->weights, the others in s->more_weights). */
int attn_ckpt_reset_weights(struct attn_scene *s, int layers, struct diag *err);

#endif
