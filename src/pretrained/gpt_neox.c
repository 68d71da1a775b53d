/* gpt_neox: the GPT-NeoX family (Pythia, GPT-NeoX-20B), its row of the registry (family.h).
 *
 * GPTNeoXForCausalLM and GPTNeoXModel: gpt_neox.embed_in, gpt_neox.layers.L.{input_layernorm,
 * attention.query_key_value, attention.dense, post_attention_layernorm, mlp.dense_h_to_4h,
 * mlp.dense_4h_to_h}, gpt_neox.final_layer_norm and embed_out (unless tied). The block is
 * LayerNorm with biases in front of attention and the MLP, side by side (use_parallel_residual:
 * x + attn(ln1(x)) + mlp(ln2(x))) or one after the other; RoPE with rotate_half's pairs over the
 * first int(head_dim * rotary_pct) dimensions of a head (partial rotary); one fused
 * query_key_value laid out head by head ([q_h | k_h | v_h] for each head h, the engine's
 * fused_heads); a GELU MLP. Every config.json key that changes the mathematics is read, and one
 * attnscope does not model is refused at its key rather than ignored.
 */
#include <stdio.h>
#include <string.h>

#include "pretrained/family.h"
#include "pretrained/rope.h"

/* config.json's keys: transformers 5's GPTNeoXConfig, and 4's rotary_pct, rotary_emb_base and
 * rope_scaling (5 moves them into rope_parameters). */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"hidden_size", KEY_READ, 0, NULL, NULL},
    {"intermediate_size", KEY_READ, 0, NULL, NULL},
    {"num_hidden_layers", KEY_READ, 0, NULL, NULL},
    {"num_attention_heads", KEY_READ, 0, NULL, NULL},
    {"hidden_act", KEY_READ, 0, NULL, NULL},
    {"max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"layer_norm_eps", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    {"use_parallel_residual", KEY_READ, 0, NULL, NULL},
    {"attention_bias", KEY_READ, 0, NULL, NULL},
    /* RoPE, in both formats (rope.c) */
    {"rotary_pct", KEY_READ, 0, NULL, NULL},
    {"rotary_emb_base", KEY_READ, 0, NULL, NULL},
    {"rope_scaling", KEY_READ, 0, NULL, NULL},
    {"rope_parameters", KEY_READ, 0, NULL, NULL},
    {"attention_dropout", KEY_INERT, 0, NULL, NULL}, /* dropout: in training only */
    {"hidden_dropout", KEY_INERT, 0, NULL, NULL},
    {"classifier_dropout", KEY_INERT, 0, NULL, NULL}, /* a classification head's */
    {"is_decoder", KEY_INERT, 0, NULL, NULL},         /* causal either way: is_causal is set */
};

static const struct family_variant VARIANTS[] = {{"GPTNeoXConfig", "GPT-NeoX"}};

struct config {
    struct family_shape shape; /* d, layers, heads, positions, tied, as trained */
    int head_dim, inter;
    double eps;
    bool parallel, bias;
    enum attn_activation act;
    struct ckpt_rope rope;
};

static int read_config(struct config *g, struct ckpt_config *c, struct ckpt_backing *b,
                       struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    if (attn_family_read_sizes(sh, &g->inter, c, err))
        return -1;
    if (sh->d % sh->heads != 0)
        return attn_ckpt_config_error(c, "num_attention_heads", NULL, err,
                                      "'num_attention_heads' %d does not divide 'hidden_size' %d",
                                      sh->heads, sh->d);
    g->head_dim = sh->d / sh->heads;
    sh->kv_heads = sh->heads;
    sh->positions = 2048;
    g->eps = 1e-5;
    g->parallel = true;
    g->bias = true;
    if (attn_ckpt_config_int(
            &sh->positions, c,
            (struct ckpt_int){
                .key = "max_position_embeddings", .min = 1, .max = INT32_MAX, .what = "positions"},
            err) ||
        attn_ckpt_config_number(&g->eps, c,
                                (struct ckpt_number){.key = "layer_norm_eps",
                                                     .above = 0,
                                                     .below = 1,
                                                     .what = "a number between 0 and 1"},
                                err) ||
        attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err) ||
        attn_ckpt_config_bool(&g->parallel, c, "use_parallel_residual", err) ||
        attn_ckpt_config_bool(&g->bias, c, "attention_bias", err))
        return -1;
    /* transformers' ACT2FN: gelu is erf's, gelu_new and gelu_pytorch_tanh the tanh form */
    json_t *act = json_object_get(c->root, "hidden_act");
    const char *a = act && json_is_string(act) ? json_string_value(act) : act ? "" : "gelu";
    char got[64];
    if (strcmp(a, "gelu") == 0)
        g->act = ACT_GELU;
    else if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0)
        g->act = ACT_GELU_TANH;
    else if (strcmp(a, "relu") == 0)
        g->act = ACT_RELU;
    else
        return attn_ckpt_config_error(
            c, "hidden_act", NULL, err,
            "'hidden_act' is %s: attnscope computes gelu, gelu_new, gelu_pytorch_tanh and relu",
            attn_ckpt_show_value(got, sizeof(got), act));
    sh->width_key = "hidden_size";
    sh->heads_fixed = true; /* RoPE's heads */
    sh->positions_key = "max_position_embeddings";
    sh->causal = true;
    sh->scale = SCALE_SQRT_DK;
    /* RoPE over int(head_dim * rotary_pct) dimensions, 0.25 of a head by default */
    return attn_ckpt_rope(&g->rope, c, b,
                          &(struct ckpt_rope_spec){.head_dim = g->head_dim,
                                                   .positions = sh->positions,
                                                   .theta_key = "rotary_emb_base",
                                                   .partial_key = "rotary_pct",
                                                   .partial = true,
                                                   .partial_default = 0.25},
                          err);
}

/* A tensor the mapping reads or knows to skip: the buffers older exports carry (the causal mask
 * "attention.bias", "attention.masked_bias", and rotary_emb.inv_freq, which attnscope computes
 * from the base). name without the "gpt_neox." prefix. */
static bool known(const struct family_load *ld, const char *name)
{
    const struct config *g = ld->config;
    static const char *const top[] = {"embed_in.weight", "final_layer_norm.weight",
                                      "final_layer_norm.bias"};
    static const char *const per_layer[] = {
        "input_layernorm.weight",
        "input_layernorm.bias",
        "post_attention_layernorm.weight",
        "post_attention_layernorm.bias",
        "attention.query_key_value.weight",
        "attention.dense.weight",
        "mlp.dense_h_to_4h.weight",
        "mlp.dense_h_to_4h.bias",
        "mlp.dense_4h_to_h.weight",
        "mlp.dense_4h_to_h.bias",
        "attention.bias",
        "attention.masked_bias",
        "attention.rotary_emb.inv_freq",
    };
    static const char *const biases[] = {"attention.query_key_value.bias", "attention.dense.bias"};
    if (attn_family_name_in(name, top, sizeof(top) / sizeof(top[0])))
        return true;
    const char *rest = attn_family_layer_part(name, "layers.", g->shape.layers);
    return rest &&
           (attn_family_name_in(rest, per_layer, sizeof(per_layer) / sizeof(per_layer[0])) ||
            attn_family_name_in(rest, biases, g->bias ? 2 : 0));
}

/* The block the family is made of, and every layer's parameters. */
static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, b, err) || attn_family_prologue(ld, &c.shape, &c, err))
        return -1;
    const char *prefix = ld->prefix, *arch = ld->family->name;
    int d = c.shape.d, h = c.inter;
    attn_matrix_free(&s->pos.table);
    s->pos.kind = POS_ROPE;
    s->pos.pairs = ROPE_HALVES;
    s->pos.base = c.rope.theta;
    s->pos.rotary_dims = c.rope.rotary_dims < c.head_dim ? c.rope.rotary_dims : 0;
    s->pos.scaling = c.rope.scale;

    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = d;
    a->heads = c.shape.heads;
    a->kv_heads = c.shape.heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_FUSED_HEADS; /* query_key_value.view(n, heads, 3 * head_dim) */
    a->qkv_bias = c.bias;
    a->out_proj = TRI_TRUE;
    a->out_bias = c.bias;
    s->block = (struct attn_block){.on = true,
                                   .order = c.parallel ? BLOCK_PARALLEL : BLOCK_PRE,
                                   .norm = NORM_LAYER,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = h,
                                   .activation = c.act,
                                   .final_norm = true};

    char full[200];
    for (int L = 0; L < ld->layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        const struct family_part parts[] = {
            {&w->qkv, "attention.query_key_value.weight", d, 3 * d, CKPT_LINEAR, true},
            {&w->qkv_bias, "attention.query_key_value.bias", 1, 3 * d, CKPT_VECTOR, c.bias},
            {&w->out, "attention.dense.weight", d, d, CKPT_LINEAR, true},
            {&w->out_bias, "attention.dense.bias", 1, d, CKPT_VECTOR, c.bias},
            {&w->ffn_W1, "mlp.dense_h_to_4h.weight", d, h, CKPT_LINEAR, true},
            {&w->ffn_b1, "mlp.dense_h_to_4h.bias", 1, h, CKPT_VECTOR, true},
            {&w->ffn_W2, "mlp.dense_4h_to_h.weight", h, d, CKPT_LINEAR, true},
            {&w->ffn_b2, "mlp.dense_4h_to_h.bias", 1, d, CKPT_VECTOR, true},
            {&w->norm1_weight, "input_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->norm1_bias, "input_layernorm.bias", 1, d, CKPT_VECTOR, true},
            {&w->norm2_weight, "post_attention_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->norm2_bias, "post_attention_layernorm.bias", 1, d, CKPT_VECTOR, true},
        };
        if (attn_family_read_parts(b, prefix, "layers.", L, parts, sizeof(parts) / sizeof(parts[0]),
                                   arch, err))
            return -1;
        w->set = true;
        if (L == ld->layers - 1) {
            snprintf(full, sizeof(full), "%sfinal_layer_norm.weight", prefix);
            if (attn_ckpt_tensor(&w->final_norm_weight, b, full, 1, d, CKPT_VECTOR, arch, err))
                return -1;
            snprintf(full, sizeof(full), "%sfinal_layer_norm.bias", prefix);
            if (attn_ckpt_tensor(&w->final_norm_bias, b, full, 1, d, CKPT_VECTOR, arch, err))
                return -1;
        }
    }
    return attn_ckpt_finish(b, s, ld->path, arch, err);
}

static const struct family_class CLASSES[] = {
    {"GPTNeoXForCausalLM", "gpt_neox", 0},
    {"GPTNeoXModel", NULL, 0},
    {NULL, NULL, 0},
};
static const char *const OUTSIDE[] = {"embed_out.weight", NULL};

/* GPTNeoXForCausalLM's names start with "gpt_neox.", GPTNeoXModel's do not; embed_out is outside
 * both. */
const struct attn_family attn_family_gpt_neox = {
    .name = "gpt_neox",
    .classes = CLASSES,
    .variants = VARIANTS,
    .keys = KEYS,
    .n_keys = sizeof(KEYS) / sizeof(KEYS[0]),
    .names = {.prefix = "gpt_neox.",
              .outside = OUTSIDE,
              .embed = "embed_in.weight",
              .unembed = "embed_out.weight",
              .known = known},
    .load = load,
};
