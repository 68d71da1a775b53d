/* llama: the Llama family's Hugging Face files as a scene (see families.h).
 *
 * LlamaForCausalLM (Llama 2 and 3, SmolLM, TinyLlama), MistralForCausalLM, Qwen2ForCausalLM and
 * Qwen3ForCausalLM: model.embed_tokens, model.layers.L.{input_layernorm, self_attn.{q,k,v,o}_proj,
 * post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm and lm_head (unless tied), with
 * Qwen2's q/k/v biases and Qwen3's per-head q_norm/k_norm. The block is pre-norm RMSNorm, RoPE with
 * rotate_half's pairs (halves), grouped-query attention and the SwiGLU MLP. torch's Linear keeps
 * its weight (out, in): these are lazy matrices, turned into x @ W as the engine widens them.
 * Every config.json key that changes the mathematics is read, and one attnscope does not model is
 * refused at its key rather than ignored.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretrained/families.h"

#define ARCH "llama"

struct config {
    int d, layers, heads, kv_heads, head_dim, inter, positions, window;
    double eps, theta;
    bool tied, qkv_bias, out_bias, qk_norm;
    enum attn_rope_scaling scaling;
    double factor, low, high;
    int original_max;
};

static const char *variant_name(enum llama_variant v)
{
    return v == LLAMA_MISTRAL ? "Mistral"
           : v == LLAMA_QWEN2 ? "Qwen2"
           : v == LLAMA_QWEN3 ? "Qwen3"
                              : "Llama";
}

/* rope_scaling: null, or {"rope_type" (or "type"): "default", "linear" or "llama3", ...}. */
static int read_rope_scaling(struct config *g, const struct ckpt_config *c, struct diag *err)
{
    json_t *rs = json_object_get(c->root, "rope_scaling");
    char got[96];
    g->scaling = ROPE_SCALING_NONE;
    if (!rs || json_is_null(rs))
        return 0;
    if (!json_is_object(rs))
        return attn_ckpt_config_error(c, "rope_scaling", NULL, err,
                                      "'rope_scaling' is %s, not null or an object",
                                      attn_ckpt_show_value(got, sizeof(got), rs));
    const char *key = json_object_get(rs, "rope_type") ? "rope_type" : "type";
    json_t *type = json_object_get(rs, key);
    const char *name = json_is_string(type) ? json_string_value(type) : NULL;
    if (!name || strcmp(name, "default") == 0) {
        if (!name)
            return attn_ckpt_config_error(c, "rope_scaling", key, err,
                                          "'rope_scaling' needs its type ('rope_type': "
                                          "\"linear\" or \"llama3\"), not %s",
                                          attn_ckpt_show_value(got, sizeof(got), type));
        return 0;
    }
    if (strcmp(name, "linear") == 0)
        g->scaling = ROPE_SCALING_LINEAR;
    else if (strcmp(name, "llama3") == 0)
        g->scaling = ROPE_SCALING_LLAMA3;
    else
        return attn_ckpt_config_error(c, "rope_scaling", key, err,
                                      "rope_scaling type %s is not supported: attnscope computes "
                                      "none (default), linear and llama3",
                                      attn_ckpt_show_value(got, sizeof(got), type));
    /* the numbers each type reads: positive, finite */
    static const char *const linear_keys[] = {"factor"};
    static const char *const llama3_keys[] = {"factor", "low_freq_factor", "high_freq_factor",
                                              "original_max_position_embeddings"};
    double *dst[] = {&g->factor, &g->low, &g->high, NULL};
    const char *const *keys = g->scaling == ROPE_SCALING_LINEAR ? linear_keys : llama3_keys;
    int n = g->scaling == ROPE_SCALING_LINEAR ? 1 : 4;
    for (int i = 0; i < n; i++) {
        json_t *v = json_object_get(rs, keys[i]);
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x > 0 && isfinite(x)) || (i == 3 && (!json_is_integer(v) || x > 1e9)))
            return attn_ckpt_config_error(c, "rope_scaling", v ? keys[i] : NULL, err,
                                          "rope_scaling %s needs '%s' %s, not %s", name, keys[i],
                                          i == 3 ? "(a number of positions)" : "above 0",
                                          attn_ckpt_show_value(got, sizeof(got), v));
        if (dst[i])
            *dst[i] = x;
        else
            g->original_max = (int)x;
    }
    if (g->scaling == ROPE_SCALING_LLAMA3 && !(g->high > g->low))
        return attn_ckpt_config_error(c, "rope_scaling", "high_freq_factor", err,
                                      "rope_scaling llama3 needs high_freq_factor above "
                                      "low_freq_factor (%g, %g)",
                                      g->high, g->low);
    return 0;
}

/* A key that would change the mathematics away from what attnscope computes: refused unless it
 * has its neutral value. */
static int refuse_unless(const struct ckpt_config *c, const char *key, const json_t *neutral_ok,
                         const char *why, struct diag *err)
{
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v) || (neutral_ok && json_equal(v, (json_t *)(uintptr_t)neutral_ok)))
        return 0;
    char got[64];
    return attn_ckpt_config_error(c, key, NULL, err, "'%s' is %s: %s", key,
                                  attn_ckpt_show_value(got, sizeof(got), v), why);
}

static int read_config(struct config *g, const struct ckpt_config *c, enum llama_variant v,
                       struct diag *err)
{
    memset(g, 0, sizeof(*g));
    if (attn_ckpt_config_int(&g->d, c, "hidden_size", NULL, 1, SCENE_MAX_DIM, "the width", true,
                             err) ||
        attn_ckpt_config_int(&g->layers, c, "num_hidden_layers", NULL, 1, SCENE_MAX_LAYERS,
                             "layers", true, err) ||
        attn_ckpt_config_int(&g->heads, c, "num_attention_heads", NULL, 1, SCENE_MAX_HEADS, "heads",
                             true, err) ||
        attn_ckpt_config_int(&g->inter, c, "intermediate_size", NULL, 1, 4 * SCENE_MAX_DIM,
                             "the feed-forward width", true, err))
        return -1;
    g->kv_heads = g->heads;
    if (attn_ckpt_config_int(&g->kv_heads, c, "num_key_value_heads", NULL, 1, g->heads,
                             "the KV heads", false, err))
        return -1;
    if (g->heads % g->kv_heads != 0)
        return attn_ckpt_config_error(c, "num_key_value_heads", NULL, err,
                                      "'num_key_value_heads' %d does not divide "
                                      "'num_attention_heads' %d",
                                      g->kv_heads, g->heads);
    g->head_dim = 0;
    if (attn_ckpt_config_int(&g->head_dim, c, "head_dim", NULL, 2, SCENE_MAX_DIM, "a head's width",
                             false, err))
        return -1;
    if (g->head_dim == 0) {
        if (g->d % g->heads != 0)
            return attn_ckpt_config_error(c, "num_attention_heads", NULL, err,
                                          "'num_attention_heads' %d does not divide "
                                          "'hidden_size' %d (and there is no 'head_dim')",
                                          g->heads, g->d);
        g->head_dim = g->d / g->heads;
    }
    if (g->head_dim % 2 != 0)
        return attn_ckpt_config_error(c, "head_dim", NULL, err,
                                      "a head is %d wide: RoPE turns pairs, so it must be even",
                                      g->head_dim);
    if ((long)g->heads * g->head_dim > SCENE_MAX_DIM)
        return attn_ckpt_config_error(c, "head_dim", NULL, err,
                                      "%d heads x head_dim %d is over attnscope's %d", g->heads,
                                      g->head_dim, SCENE_MAX_DIM);
    g->positions = 8 * SCENE_MAX_TOKENS;
    if (attn_ckpt_config_int(&g->positions, c, "max_position_embeddings", NULL, 1, INT32_MAX,
                             "positions", false, err))
        return -1;
    g->eps = 1e-6;
    g->theta = 10000.0;
    if (attn_ckpt_config_number(&g->eps, c, "rms_norm_eps", 0, 1, "a number between 0 and 1",
                                err) ||
        attn_ckpt_config_number(&g->theta, c, "rope_theta", 1, INFINITY, "a number above 1", err) ||
        attn_ckpt_config_bool(&g->tied, c, "tie_word_embeddings", err))
        return -1;
    /* attention_bias: Llama's and Qwen3's q, k, v and o; Qwen2 always has q, k and v biases */
    bool bias = false;
    if (attn_ckpt_config_bool(&bias, c, "attention_bias", err))
        return -1;
    g->qkv_bias = bias || v == LLAMA_QWEN2;
    g->out_bias = bias && v != LLAMA_QWEN2;
    g->qk_norm = v == LLAMA_QWEN3;
    json_t *act = json_object_get(c->root, "hidden_act");
    char got[64];
    if (act && !(json_is_string(act) && strcmp(json_string_value(act), "silu") == 0))
        return attn_ckpt_config_error(c, "hidden_act", NULL, err,
                                      "'hidden_act' is %s: the Llama family's MLP is SwiGLU, "
                                      "attnscope computes it with silu",
                                      attn_ckpt_show_value(got, sizeof(got), act));
    /* Mistral's sliding window; Qwen's is used only with use_sliding_window */
    bool use_window = v == LLAMA_MISTRAL;
    if (v != LLAMA_MISTRAL && attn_ckpt_config_bool(&use_window, c, "use_sliding_window", err))
        return -1;
    if (use_window && v != LLAMA_MISTRAL)
        return attn_ckpt_config_error(c, "use_sliding_window", NULL, err,
                                      "'use_sliding_window' is true: %s's sliding window of some "
                                      "layers (max_window_layers) is not something attnscope "
                                      "computes",
                                      variant_name(v));
    if (use_window && attn_ckpt_config_int(&g->window, c, "sliding_window", NULL, 1, INT32_MAX,
                                           "the sliding window", false, err))
        return -1;
    json_t *full = json_string("full_attention"), *one = json_real(1.0), *no = json_false();
    int rc = refuse_unless(c, "mlp_bias", no,
                           "the MLP's biases are not something attnscope "
                           "computes",
                           err) ||
             refuse_unless(c, "partial_rotary_factor", one,
                           "RoPE over part of a head is not something attnscope computes", err);
    json_t *types = json_object_get(c->root, "layer_types");
    for (size_t i = 0; rc == 0 && json_is_array(types) && i < json_array_size(types); i++)
        if (!json_equal(json_array_get(types, i), full))
            rc = attn_ckpt_config_error(
                c, "layer_types", NULL, err,
                "layer %zu is %s: attnscope computes full attention in "
                "every layer",
                i, attn_ckpt_show_value(got, sizeof(got), json_array_get(types, i)));
    json_decref(full);
    json_decref(one);
    json_decref(no);
    if (rc)
        return -1;
    return read_rope_scaling(g, c, err);
}

/* A tensor the mapping reads or knows to skip (rotary_emb.inv_freq, a buffer some exports carry:
 * attnscope computes the frequencies from rope_theta). name without the "model." prefix. */
static bool known_name(const char *name, int layers, const struct config *g)
{
    static const char *const top[] = {"embed_tokens.weight", "norm.weight"};
    static const char *const per_layer[] = {
        "input_layernorm.weight",  "post_attention_layernorm.weight",
        "self_attn.q_proj.weight", "self_attn.k_proj.weight",
        "self_attn.v_proj.weight", "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",    "mlp.up_proj.weight",
        "mlp.down_proj.weight",    "self_attn.rotary_emb.inv_freq",
    };
    static const char *const qkv_bias[] = {"self_attn.q_proj.bias", "self_attn.k_proj.bias",
                                           "self_attn.v_proj.bias"};
    static const char *const qk_norm[] = {"self_attn.q_norm.weight", "self_attn.k_norm.weight"};
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        if (strcmp(name, top[i]) == 0)
            return true;
    int L, used = 0;
    if (sscanf(name, "layers.%d.%n", &L, &used) != 1 || used == 0 || L < 0 || L >= layers)
        return false;
    char check[32];
    snprintf(check, sizeof(check), "layers.%d.", L);
    if (strncmp(name, check, strlen(check)) != 0) /* "layers.01." is not layer 1's */
        return false;
    const char *rest = name + used;
    for (size_t i = 0; i < sizeof(per_layer) / sizeof(per_layer[0]); i++)
        if (strcmp(rest, per_layer[i]) == 0)
            return true;
    for (size_t i = 0; g->qkv_bias && i < 3; i++)
        if (strcmp(rest, qkv_bias[i]) == 0)
            return true;
    for (size_t i = 0; g->qk_norm && i < 2; i++)
        if (strcmp(rest, qk_norm[i]) == 0)
            return true;
    return g->out_bias && strcmp(rest, "self_attn.o_proj.bias") == 0;
}

int attn_llama_load(struct attn_scene *s, const char *path, const struct ckpt_config *cfg,
                    enum llama_variant v, const struct ckpt_overrides *o, struct diag *err)
{
    struct ckpt_backing *b = attn_ckpt_backing(s);
    struct config c;
    if (read_config(&c, cfg, v, err) || attn_ckpt_open(b, path, err))
        return -1;
    const char *prefix = attn_ckpt_has(b, "model.embed_tokens.weight") ? "model." : "";
    size_t plen = strlen(prefix);
    char shown[200], full[200];
    for (int i = 0; i < b->st.n; i++) {
        const char *name = b->st.refs[i].name;
        if (strcmp(name, "lm_head.weight") == 0) /* the unembedding: below */
            continue;
        if (strncmp(name, prefix, plen) != 0 || !known_name(name + plen, c.layers, &c))
            return attn_diag_file(err, b->st.path, "tensor '%s' is not part of %s (arch llama)",
                                  attn_ckpt_show_name(shown, sizeof(shown), name), variant_name(v));
    }
    if (s->n_tokens + s->pos.offset > c.positions)
        return attn_diag_set(err, "text",
                             "%d tokens%s, but the checkpoint has %d positions "
                             "(max_position_embeddings)",
                             s->n_tokens, s->pos.offset > 0 ? " after the offset" : "",
                             c.positions);
    int layers = o->layers ? s->layers : c.layers;
    if (layers > c.layers)
        return attn_diag_set(err, "layers", "layers %d: the checkpoint has %d", layers, c.layers);
    if (o->heads && s->attn.heads != c.heads)
        return attn_diag_set(err, "attention.heads",
                             "heads %d: the checkpoint's %d heads come with its RoPE and its %d "
                             "KV heads, and cannot be cut again (remove attention.heads)",
                             s->attn.heads, c.heads, c.kv_heads);
    int d = c.d, D = c.heads * c.head_dim, Dkv = c.kv_heads * c.head_dim, h = c.inter;

    /* the embeddings and the unembedding: rows of the vocabulary */
    snprintf(full, sizeof(full), "%sembed_tokens.weight", prefix);
    int vocab = 0, cols;
    if (!attn_ckpt_shape(b, full, &vocab, &cols))
        vocab = 0;
    int said = vocab;
    if (attn_ckpt_config_int(&said, cfg, "vocab_size", NULL, 1, INT32_MAX, "the vocabulary", false,
                             err))
        return -1;
    if (vocab > 0 && said != vocab)
        return attn_diag_file(err, b->st.path,
                              "tensor '%s' has %d rows, but config.json says vocab_size %d", full,
                              vocab, said);
    attn_matrix_free(&s->embed.rows);
    if (attn_ckpt_tensor(&s->embed.rows, b, full, vocab, d, CKPT_MATRIX, ARCH, err))
        return -1;
    s->embed.kind = EMBED_TABLE;
    s->embed.dim = d;
    attn_matrix_free(&s->unembed);
    if (c.tied) {
        s->unembed = s->embed.rows; /* the same numbers, never freed twice */
    } else if (!attn_ckpt_has(b, "lm_head.weight")) {
        return attn_diag_file(err, path,
                              "config.json says tie_word_embeddings: false (the default), but the "
                              "checkpoint has no lm_head.weight to unembed with");
    } else if (attn_ckpt_tensor(&s->unembed, b, "lm_head.weight", vocab, d, CKPT_MATRIX, ARCH,
                                err)) {
        return -1;
    }
    /* RoPE in rotate_half's pairs, with the checkpoint's base and scaling */
    attn_matrix_free(&s->pos.table);
    s->pos.kind = POS_ROPE;
    s->pos.pairs = ROPE_HALVES;
    s->pos.base = c.theta;
    s->pos.scaling.kind = c.scaling;
    s->pos.scaling.factor = c.factor;
    s->pos.scaling.low_freq_factor = c.low;
    s->pos.scaling.high_freq_factor = c.high;
    s->pos.scaling.original_max = c.original_max;

    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = D;
    a->heads = c.heads;
    a->kv_heads = c.kv_heads;
    a->layout = LAYOUT_SPLIT;
    if (!o->causal)
        a->causal = true;
    a->qkv = QKV_SEPARATE;
    a->qkv_bias = c.qkv_bias;
    a->out_proj = TRI_TRUE;
    a->out_bias = c.out_bias;
    a->window = c.window;
    a->qk_norm = c.qk_norm;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_PRE,
                                   .norm = NORM_RMS,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = h,
                                   .activation = ACT_SWIGLU,
                                   .final_norm = true};
    s->layers = layers;

    if (attn_ckpt_reset_weights(s, layers, err))
        return -1;
    for (int L = 0; L < layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        struct {
            struct attn_matrix *dst;
            const char *name;
            int rows, cols; /* as the engine reads it, x @ W */
            enum ckpt_form form;
            bool wanted;
        } parts[] = {
            {&w->query, "self_attn.q_proj.weight", d, D, CKPT_LINEAR, true},
            {&w->key, "self_attn.k_proj.weight", d, Dkv, CKPT_LINEAR, true},
            {&w->value, "self_attn.v_proj.weight", d, Dkv, CKPT_LINEAR, true},
            {&w->query_bias, "self_attn.q_proj.bias", 1, D, CKPT_VECTOR, c.qkv_bias},
            {&w->key_bias, "self_attn.k_proj.bias", 1, Dkv, CKPT_VECTOR, c.qkv_bias},
            {&w->value_bias, "self_attn.v_proj.bias", 1, Dkv, CKPT_VECTOR, c.qkv_bias},
            {&w->q_norm_weight, "self_attn.q_norm.weight", 1, c.head_dim, CKPT_VECTOR, c.qk_norm},
            {&w->k_norm_weight, "self_attn.k_norm.weight", 1, c.head_dim, CKPT_VECTOR, c.qk_norm},
            {&w->out, "self_attn.o_proj.weight", D, d, CKPT_LINEAR, true},
            {&w->out_bias, "self_attn.o_proj.bias", 1, d, CKPT_VECTOR, c.out_bias},
            {&w->ffn_Wgate, "mlp.gate_proj.weight", d, h, CKPT_LINEAR, true},
            {&w->ffn_W1, "mlp.up_proj.weight", d, h, CKPT_LINEAR, true},
            {&w->ffn_W2, "mlp.down_proj.weight", h, d, CKPT_LINEAR, true},
            {&w->norm1_weight, "input_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->norm2_weight, "post_attention_layernorm.weight", 1, d, CKPT_VECTOR, true},
        };
        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
            if (!parts[i].wanted)
                continue;
            snprintf(full, sizeof(full), "%slayers.%d.%s", prefix, L, parts[i].name);
            if (attn_ckpt_tensor(parts[i].dst, b, full, parts[i].rows, parts[i].cols, parts[i].form,
                                 ARCH, err))
                return -1;
        }
        w->set = true;
        snprintf(full, sizeof(full), "%snorm.weight", prefix);
        if (L == layers - 1 &&
            attn_ckpt_tensor(&w->final_norm_weight, b, full, 1, d, CKPT_VECTOR, ARCH, err))
            return -1;
    }
    s->model.layers = c.layers;
    s->model.heads = c.heads;
    return attn_ckpt_finish(b, s, path, ARCH, err);
}
