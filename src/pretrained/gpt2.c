/* gpt2: the GPT-2 family, its row of the registry (family.h): Hugging Face's GPT2LMHeadModel and
 * GPT2Model. The tensors: wte, wpe, h.L.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
 * mlp.c_proj}, ln_f, with or without "transformer.", and lm_head when it is not tied. Conv1D keeps
 * its weights (in, out), as the engine reads them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretrained/family.h"

/* Rows of the position table: GPT-2 has 1024; a scene's learned table may have this many. */
#define GPT2_MAX_POSITIONS SCENE_MAX_POSITION

/* config.json's keys: transformers' GPT2Config (5's, and 4's n_ctx). */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"n_positions", KEY_READ, 0, NULL, NULL},
    {"n_ctx", KEY_READ, 0, NULL, NULL}, /* older exports': n_positions when it is not written */
    {"n_embd", KEY_READ, 0, NULL, NULL},
    {"n_layer", KEY_READ, 0, NULL, NULL},
    {"n_head", KEY_READ, 0, NULL, NULL},
    {"n_inner", KEY_READ, 0, NULL, NULL},
    {"activation_function", KEY_READ, 0, NULL, NULL},
    {"layer_norm_epsilon", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    {"scale_attn_weights", KEY_READ, 0, NULL, NULL},
    {"scale_attn_by_inverse_layer_idx", KEY_READ, 0, NULL, NULL},
    {"reorder_and_upcast_attn", KEY_READ, 0, NULL, NULL},
    /* GPT2Config's attribute_map: other names of n_embd, n_positions, n_head and n_layer */
    {"hidden_size", KEY_READ, 0, NULL, NULL},
    {"max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"num_attention_heads", KEY_READ, 0, NULL, NULL},
    {"num_hidden_layers", KEY_READ, 0, NULL, NULL},
    {"add_cross_attention", KEY_DEFAULT, 0, "false",
     "cross-attention to an encoder is not something attnscope computes"},
    {"resid_pdrop", KEY_INERT, 0, NULL, NULL}, /* dropout: in training only */
    {"embd_pdrop", KEY_INERT, 0, NULL, NULL},
    {"attn_pdrop", KEY_INERT, 0, NULL, NULL},
    /* GPT2DoubleHeadsModel's multiple-choice head, which attnscope does not read */
    {"summary_type", KEY_INERT, 0, NULL, NULL},
    {"summary_use_proj", KEY_INERT, 0, NULL, NULL},
    {"summary_activation", KEY_INERT, 0, NULL, NULL},
    {"summary_proj_to_labels", KEY_INERT, 0, NULL, NULL},
    {"summary_first_dropout", KEY_INERT, 0, NULL, NULL},
};

/* GPT2Config's attribute_map: each name and the one it stands for. */
static const char *const ALIASES[][2] = {
    {"n_embd", "hidden_size"},
    {"n_positions", "max_position_embeddings"},
    {"n_head", "num_attention_heads"},
    {"n_layer", "num_hidden_layers"},
};

struct config {
    struct family_shape shape; /* d, layers, heads, positions, tied (and its key), as trained */
    int inner;
    double eps;
    enum attn_activation act;
    bool scaled, by_layer, reorder;
};

/* config.json's keys: every size checked against attnscope's limits here, before the
 * checkpoint is opened or anything is allocated for it. */
static int read_config(struct config *g, struct ckpt_config *c, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    /* a name and its alias both written must agree (transformers would keep the later one) */
    for (size_t i = 0; i < sizeof(ALIASES) / sizeof(ALIASES[0]); i++) {
        json_t *a = json_object_get(c->root, ALIASES[i][0]),
               *b = json_object_get(c->root, ALIASES[i][1]);
        char x[64], y[64];
        if (a && b && !attn_ckpt_json_same(a, b))
            return attn_ckpt_config_error(c, ALIASES[i][1], NULL, err,
                                          "'%s' is %s, '%s' %s: the two names of one size "
                                          "disagree",
                                          ALIASES[i][1], attn_ckpt_show_value(y, sizeof(y), b),
                                          ALIASES[i][0], attn_ckpt_show_value(x, sizeof(x), a));
    }
    sh->positions_key = json_object_get(c->root, "n_positions") ? "n_positions"
                        : json_object_get(c->root, "max_position_embeddings")
                            ? "max_position_embeddings"
                        : json_object_get(c->root, "n_ctx") ? "n_ctx"
                                                            : "n_positions";
    if (attn_ckpt_config_int(&sh->heads, c,
                             (struct ckpt_int){.key = "n_head",
                                               .alt = "num_attention_heads",
                                               .min = 1,
                                               .max = SCENE_MAX_HEADS,
                                               .what = "heads",
                                               .required = true},
                             err) ||
        attn_ckpt_config_int(&sh->layers, c,
                             (struct ckpt_int){.key = "n_layer",
                                               .alt = "num_hidden_layers",
                                               .min = 1,
                                               .max = SCENE_MAX_LAYERS,
                                               .what = "layers",
                                               .required = true},
                             err) ||
        attn_ckpt_config_int(&sh->d, c,
                             (struct ckpt_int){.key = "n_embd",
                                               .alt = "hidden_size",
                                               .min = 1,
                                               .max = SCENE_MAX_DIM,
                                               .what = "the width",
                                               .required = true},
                             err) ||
        attn_ckpt_config_int(&sh->positions, c,
                             (struct ckpt_int){.key = sh->positions_key,
                                               .min = 1,
                                               .max = GPT2_MAX_POSITIONS,
                                               .what = "positions",
                                               .required = true},
                             err))
        return -1;
    /* scale_attn_weights: scores / sqrt(head_dim), or not; scale_attn_by_inverse_layer_idx: layer
       L's also / (L + 1). reorder_and_upcast_attn scales q k^T inside the product and upcasts it
       to float32 for mixed precision: attnscope computes in float32 throughout, so it is the same
       division (the goldens hold it within a rounding). */
    g->scaled = true;
    if (attn_ckpt_config_bool(&g->scaled, c, "scale_attn_weights", err) ||
        attn_ckpt_config_bool(&g->by_layer, c, "scale_attn_by_inverse_layer_idx", err) ||
        attn_ckpt_config_bool(&g->reorder, c, "reorder_and_upcast_attn", err))
        return -1;
    if (sh->d % sh->heads != 0)
        return attn_ckpt_config_error(c, "n_head", NULL, err,
                                      "'n_head' %d does not divide 'n_embd' %d", sh->heads, sh->d);
    g->inner = 4 * sh->d;
    if (attn_ckpt_config_int(&g->inner, c,
                             (struct ckpt_int){.key = "n_inner",
                                               .min = 1,
                                               .max = SCENE_MAX_FFN_HIDDEN,
                                               .what = "the feed-forward width"},
                             err))
        return -1;
    sh->tied = sh->tied_default = true; /* lm_head is wte */
    g->eps = 1e-5;
    if (attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err) ||
        attn_ckpt_config_number(&g->eps, c,
                                (struct ckpt_number){.key = "layer_norm_epsilon",
                                                     .above = 0,
                                                     .below = 1,
                                                     .what = "a number between 0 and 1 (GPT-2's "
                                                             "is 1e-05)"},
                                err))
        return -1;
    json_t *act = json_object_get(c->root, "activation_function");
    char got[64];
    if (act && !json_is_string(act))
        return attn_ckpt_config_error(c, "activation_function", NULL, err,
                                      "'activation_function' is %s, not a name",
                                      attn_ckpt_show_value(got, sizeof(got), act));
    const char *a = act ? json_string_value(act) : "gelu_new";
    if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0)
        g->act = ACT_GELU_TANH;
    else if (strcmp(a, "gelu") == 0)
        g->act = ACT_GELU;
    else if (strcmp(a, "relu") == 0)
        g->act = ACT_RELU;
    else
        return attn_ckpt_config_error(
            c, "activation_function", NULL, err,
            "'activation_function' %s is not one attnscope has (gelu_new, gelu, relu)",
            attn_ckpt_show_value(got, sizeof(got), act));
    sh->width_key = "n_embd";
    sh->learned = true;
    sh->causal = true;
    sh->scale = g->scaled ? SCALE_SQRT_DK : SCALE_NONE;
    return 0;
}

/* A tensor the mapping knows: GPT-2's, or a buffer some exports add. */
static bool known(const struct family_load *ld, const char *name)
{
    static const char *const top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    static const char *const per_layer[] = {
        "ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
        "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias",
        "attn.bias",          "attn.masked_bias", /* buffers: the causal mask, -1e4 */
    };
    const struct config *g = ld->config;
    const char *rest = attn_family_layer_part(name, "h.", g->shape.layers);
    return attn_family_name_in(name, top, sizeof(top) / sizeof(top[0])) ||
           (rest && attn_family_name_in(rest, per_layer, sizeof(per_layer) / sizeof(per_layer[0])));
}

/* The block GPT-2 is made of, and every layer's parameters. */
static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, err) || attn_family_prologue(ld, &c.shape, &c, err))
        return -1;
    const char *prefix = ld->prefix, *arch = ld->family->name;
    int d = c.shape.d, positions = c.shape.positions;
    char full[160];
    attn_matrix_free(&s->pos.table); /* read whole */
    snprintf(full, sizeof(full), "%swpe.weight", prefix);
    if (attn_ckpt_tensor(&s->pos.table, b, full, positions, d, CKPT_TABLE, arch, err))
        return -1;
    s->pos.kind = POS_LEARNED;
    s->pos.max_len = positions;

    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = d;
    a->heads = ld->heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_FUSED;
    a->qkv_bias = true;
    a->out_proj = TRI_TRUE;
    a->out_bias = true;
    if (!ld->o->scale)
        a->scale = c.scaled ? SCALE_DEFAULT : SCALE_NONE;
    a->scale_by_layer = c.by_layer;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_PRE,
                                   .norm = NORM_LAYER,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = c.inner,
                                   .activation = c.act,
                                   .final_norm = true};

    for (int L = 0; L < ld->layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
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
            snprintf(full, sizeof(full), "%sh.%d.%s", prefix, L, parts[i].name);
            bool vector = parts[i].rows == 0;
            if (attn_ckpt_tensor(parts[i].dst, b, full, vector ? 1 : parts[i].rows, parts[i].cols,
                                 vector ? CKPT_VECTOR : CKPT_MATRIX, arch, err))
                return -1;
        }
        w->set = true;
        if (L == ld->layers - 1) {
            snprintf(full, sizeof(full), "%sln_f.weight", prefix);
            if (attn_ckpt_tensor(&w->final_norm_weight, b, full, 1, d, CKPT_VECTOR, arch, err))
                return -1;
            snprintf(full, sizeof(full), "%sln_f.bias", prefix);
            if (attn_ckpt_tensor(&w->final_norm_bias, b, full, 1, d, CKPT_VECTOR, arch, err))
                return -1;
        }
    }
    return attn_ckpt_finish(b, s, ld->path, arch, err);
}

static const struct family_class CLASSES[] = {
    {"GPT2LMHeadModel", "gpt2", 0},
    {"GPT2Model", NULL, 0},
    {NULL, NULL, 0},
};
static const struct family_variant VARIANTS[] = {{"GPT2Config", "GPT-2"}};
static const char *const OUTSIDE[] = {"lm_head.weight", NULL};

const struct attn_family attn_family_gpt2 = {
    .name = "gpt2",
    .classes = CLASSES,
    .variants = VARIANTS,
    .keys = KEYS,
    .n_keys = sizeof(KEYS) / sizeof(KEYS[0]),
    .names = {.prefix = "transformer.",
              .outside = OUTSIDE,
              .embed = "wte.weight",
              .unembed = "lm_head.weight",
              .known = known},
    .load = load,
};
