/* llama: the Llama family, its row of the registry (family.h).
 *
 * LlamaForCausalLM (Llama 2 and 3, SmolLM, TinyLlama), MistralForCausalLM, Qwen2ForCausalLM and
 * Qwen3ForCausalLM: model.embed_tokens, model.layers.L.{input_layernorm, self_attn.{q,k,v,o}_proj,
 * post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm and lm_head (unless tied), with
 * Qwen2's q/k/v biases and Qwen3's per-head q_norm/k_norm. The block is pre-norm RMSNorm, RoPE with
 * rotate_half's pairs (halves), grouped-query attention and the SwiGLU MLP. Olmo2ForCausalLM is
 * the same attention and MLP with its norms moved: q_norm and k_norm over the whole projection,
 * and no input_layernorm but post_attention_layernorm and post_feedforward_layernorm on each
 * branch's output before its residual add (block.order post_branch). Phi3ForCausalLM fuses
 * q, k and v into one qkv_proj and gate and up into one gate_up_proj, read as row ranges of them,
 * turns part of a head when partial_rotary_factor says so, and takes longrope ("su"). torch's
 * Linear keeps its weight (out, in): these are lazy matrices, turned into x @ W as the engine
 * widens them. Every config.json key that changes the mathematics is read, and one attnscope does
 * not model is refused at its key rather than ignored.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretrained/family.h"
#include "pretrained/rope.h"

/* The variants of the family, which differ in a few keys and tensors. */
enum llama_variant {
    LLAMA_PLAIN,
    LLAMA_MISTRAL,
    LLAMA_QWEN2,
    LLAMA_QWEN3,
    LLAMA_OLMO2,
    LLAMA_PHI3,
    /* mixtures of experts: Mistral's, Qwen2's and Qwen3's attention */
    LLAMA_MIXTRAL,
    LLAMA_QWEN2_MOE,
    LLAMA_QWEN3_MOE
};

#define V(variant) (1u << (variant))
#define V_QWEN     (V(LLAMA_QWEN2) | V(LLAMA_QWEN3))
#define V_QWEN_MOE (V(LLAMA_QWEN2_MOE) | V(LLAMA_QWEN3_MOE))
#define V_MOE      (V(LLAMA_MIXTRAL) | V_QWEN_MOE)

/* The variant whose attention a mixture has. */
static enum llama_variant attention_of(enum llama_variant v)
{
    return v == LLAMA_MIXTRAL     ? LLAMA_MISTRAL
           : v == LLAMA_QWEN2_MOE ? LLAMA_QWEN2
           : v == LLAMA_QWEN3_MOE ? LLAMA_QWEN3
                                  : v;
}

/* config.json's keys: transformers 5's LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config and
 * Olmo2Config (with 4's rope_theta and rope_scaling), each for the variants whose class has it. A
 * key of another variant's class is unknown here: its model ignores it (Mistral's attention has no
 * biases, Qwen2's MLP none). */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"hidden_size", KEY_READ, 0, NULL, NULL},
    {"intermediate_size", KEY_READ, 0, NULL, NULL},
    {"num_hidden_layers", KEY_READ, 0, NULL, NULL},
    {"num_attention_heads", KEY_READ, 0, NULL, NULL},
    {"num_key_value_heads", KEY_READ, 0, NULL, NULL},
    {"head_dim", KEY_READ, 0, NULL, NULL},
    {"hidden_act", KEY_READ, 0, NULL, NULL},
    {"max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"rms_norm_eps", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    /* RoPE, in both formats (rope.c) */
    {"rope_theta", KEY_READ, 0, NULL, NULL},
    {"rope_scaling", KEY_READ, 0, NULL, NULL},
    {"rope_parameters", KEY_READ, 0, NULL, NULL},
    {"partial_rotary_factor", KEY_READ, 0, NULL, NULL},
    {"original_max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"attention_bias", KEY_READ,
     V(LLAMA_PLAIN) | V(LLAMA_QWEN3) | V(LLAMA_OLMO2) | V(LLAMA_QWEN3_MOE), NULL, NULL},
    {"mlp_bias", KEY_READ, V(LLAMA_PLAIN), NULL, NULL},
    {"sliding_window", KEY_READ, V(LLAMA_MISTRAL) | V_QWEN | V(LLAMA_PHI3) | V_MOE, NULL, NULL},
    {"use_sliding_window", KEY_READ, V_QWEN | V_QWEN_MOE, NULL, NULL},
    {"max_window_layers", KEY_READ, V_QWEN | V_QWEN_MOE, NULL, NULL},
    {"layer_types", KEY_READ, V_QWEN | V_QWEN_MOE, NULL, NULL},
    /* the mixtures' */
    {"num_local_experts", KEY_READ, V(LLAMA_MIXTRAL), NULL, NULL},
    {"num_experts", KEY_READ, V_QWEN_MOE, NULL, NULL},
    {"num_experts_per_tok", KEY_READ, V_MOE, NULL, NULL},
    {"norm_topk_prob", KEY_READ, V_QWEN_MOE, NULL, NULL},
    {"moe_intermediate_size", KEY_READ, V_QWEN_MOE, NULL, NULL},
    {"shared_expert_intermediate_size", KEY_READ, V(LLAMA_QWEN2_MOE), NULL, NULL},
    {"decoder_sparse_step", KEY_DEFAULT, V_QWEN_MOE, "1",
     "layers of a plain MLP between the mixtures are not something attnscope computes"},
    {"mlp_only_layers", KEY_DEFAULT, V_QWEN_MOE, "[]",
     "layers of a plain MLP between the mixtures are not something attnscope computes"},
    {"output_router_logits", KEY_INERT, V_MOE, NULL, NULL}, /* the auxiliary loss's, training */
    {"router_aux_loss_coef", KEY_INERT, V_MOE, NULL, NULL},
    {"router_jitter_noise", KEY_INERT, V(LLAMA_MIXTRAL), NULL, NULL}, /* training only */
    {"attention_dropout", KEY_INERT, 0, NULL, NULL},                  /* in training only */
    {"resid_pdrop", KEY_INERT, V(LLAMA_PHI3), NULL, NULL},
    {"embd_pdrop", KEY_INERT, V(LLAMA_PHI3), NULL, NULL},
    {"pretraining_tp", KEY_INERT, V(LLAMA_PLAIN), NULL, NULL}, /* the same products, in slices */
    /* Qwen2.5's configs carry Qwen2-VL's multimodal RoPE switch, off: Qwen2's model reads it not,
       and one that is on belongs to a vision model */
    {"use_mrope", KEY_DEFAULT, V_QWEN, "false",
     "multimodal RoPE (Qwen2-VL's) is not something attnscope computes"},
};

/* Each variant's configuration class, and the model as messages name it. */
static const struct family_variant VARIANTS[] = {
    [LLAMA_PLAIN] = {"LlamaConfig", "Llama"},
    [LLAMA_MISTRAL] = {"MistralConfig", "Mistral"},
    [LLAMA_QWEN2] = {"Qwen2Config", "Qwen2"},
    [LLAMA_QWEN3] = {"Qwen3Config", "Qwen3"},
    [LLAMA_OLMO2] = {"Olmo2Config", "OLMo 2"},
    [LLAMA_PHI3] = {"Phi3Config", "Phi-3"},
    [LLAMA_MIXTRAL] = {"MixtralConfig", "Mixtral"},
    [LLAMA_QWEN2_MOE] = {"Qwen2MoeConfig", "Qwen2-MoE"},
    [LLAMA_QWEN3_MOE] = {"Qwen3MoeConfig", "Qwen3-MoE"},
};

/* What each class defaults a key to, where they differ. */
static const struct {
    int kv_heads;  /* num_key_value_heads; 0: the heads */
    int positions; /* max_position_embeddings */
    int head_dim;  /* 0: hidden_size / heads */
    double eps;    /* rms_norm_eps */
} DEFAULTS[] = {
    [LLAMA_PLAIN] = {0, 2048, 0, 1e-6},        [LLAMA_MISTRAL] = {8, 4096 * 32, 0, 1e-6},
    [LLAMA_QWEN2] = {32, 32768, 0, 1e-6},      [LLAMA_QWEN3] = {32, 32768, 128, 1e-6},
    [LLAMA_OLMO2] = {0, 2048, 0, 1e-5},        [LLAMA_PHI3] = {0, 4096, 0, 1e-5},
    [LLAMA_MIXTRAL] = {8, 4096 * 32, 0, 1e-5}, [LLAMA_QWEN2_MOE] = {16, 32768, 0, 1e-6},
    [LLAMA_QWEN3_MOE] = {4, 32768, 128, 1e-6},
};

struct config {
    struct family_shape shape; /* d, layers, heads, kv_heads, positions, tied, as trained */
    int head_dim, inter, window;
    bool window_off[SCENE_MAX_LAYERS]; /* layers of full attention despite the window */
    double eps;
    bool qkv_bias, out_bias, qk_norm, mlp_bias;
    bool olmo2; /* qk_norm over the whole projection; the norms on the branches' outputs */
    bool phi3;  /* qkv_proj [Q; K; V] and gate_up_proj [gate; up], each read in parts */
    /* a mixture of experts: its variant (its names), the experts, the top k, whether their
       weights are renormalised, the shared expert's width (0: none) */
    enum llama_variant moe;
    int experts, top_k, shared;
    bool norm_topk;
    struct ckpt_rope rope;
};

/* sliding_window: Mistral's, and Qwen's when use_sliding_window */
#define WINDOW                                                                                     \
    ((struct ckpt_int){                                                                            \
        .key = "sliding_window", .min = 1, .max = INT32_MAX, .what = "the sliding window"})

/* Qwen2's and Qwen3's sliding window, in both formats: transformers 4's use_sliding_window with
 * max_window_layers (layers from max_window_layers on slide), and 5's layer_types
 * ("full_attention" or "sliding_attention", layer by layer; the window's size is still
 * sliding_window, and only with use_sliding_window). Where both are written they must agree. */
static int read_qwen_window(struct config *g, struct ckpt_config *c, struct diag *err)
{
    bool use = false;
    if (attn_ckpt_config_bool(&use, c, "use_sliding_window", err))
        return -1;
    g->window = 0;
    if (use) {
        json_t *w = json_object_get(c->root, "sliding_window");
        g->window = 4096; /* Qwen2Config's default */
        if (w && json_is_null(w))
            g->window = 0;
        else if (attn_ckpt_config_int(&g->window, c, WINDOW, err))
            return -1;
    }
    int from = 28; /* max_window_layers: Qwen2Config's default */
    bool from_given = json_object_get(c->root, "max_window_layers") != NULL;
    if (attn_ckpt_config_int(&from, c,
                             (struct ckpt_int){.key = "max_window_layers",
                                               .min = 0,
                                               .max = INT32_MAX,
                                               .what = "the layers of full attention"},
                             err))
        return -1;
    bool rule[SCENE_MAX_LAYERS];
    for (int L = 0; L < g->shape.layers; L++)
        rule[L] = g->window > 0 && L >= from; /* transformers 4's rule */
    return attn_family_layer_types(g->window_off, c, g->shape.layers, rule, "max_window_layers",
                                   from, from_given, g->window, "'use_sliding_window' is not true",
                                   err);
}

/* A mixture's keys: its experts, the top k, their weights' renormalisation, and the widths (an
 * expert's replaces g->inter). */
static int read_experts(struct config *g, struct ckpt_config *c, enum llama_variant v,
                        struct diag *err)
{
    bool mixtral = v == LLAMA_MIXTRAL;
    g->moe = v;
    g->experts = mixtral ? 8 : 60;
    g->top_k = mixtral ? 2 : 4;
    g->norm_topk = mixtral; /* Mixtral always renormalises; Qwen's only with norm_topk_prob */
    g->shared = 0;
    if (attn_ckpt_config_int(&g->experts, c,
                             (struct ckpt_int){.key = mixtral ? "num_local_experts" : "num_experts",
                                               .min = 1,
                                               .max = SCENE_MAX_EXPERTS,
                                               .what = "experts"},
                             err) ||
        attn_ckpt_config_int(&g->top_k, c,
                             (struct ckpt_int){.key = "num_experts_per_tok",
                                               .min = 1,
                                               .max = g->experts,
                                               .what = "the experts a token takes"},
                             err) ||
        (!mixtral && attn_ckpt_config_bool(&g->norm_topk, c, "norm_topk_prob", err)))
        return -1;
    if (!mixtral) { /* the experts' width is moe_intermediate_size (intermediate_size: the MLP's) */
        g->inter = v == LLAMA_QWEN2_MOE ? 1408 : 768;
        if (attn_ckpt_config_int(&g->inter, c,
                                 (struct ckpt_int){.key = "moe_intermediate_size",
                                                   .min = 1,
                                                   .max = SCENE_MAX_FFN_HIDDEN,
                                                   .what = "an expert's width"},
                                 err))
            return -1;
    }
    if (v == LLAMA_QWEN2_MOE) {
        g->shared = 5632;
        if (attn_ckpt_config_int(&g->shared, c,
                                 (struct ckpt_int){.key = "shared_expert_intermediate_size",
                                                   .min = 1,
                                                   .max = SCENE_MAX_FFN_HIDDEN,
                                                   .what = "the shared expert's width"},
                                 err))
            return -1;
    }
    return 0;
}

static int read_config(struct config *g, struct ckpt_config *c, struct ckpt_backing *b,
                       enum llama_variant v, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    if (attn_family_read_sizes(sh, &g->inter, c, err))
        return -1;
    /* the class's default when the key is missing; null is the heads (as transformers 5) */
    json_t *kv = json_object_get(c->root, "num_key_value_heads");
    sh->kv_heads = DEFAULTS[v].kv_heads && !kv ? DEFAULTS[v].kv_heads : sh->heads;
    if (attn_ckpt_config_int(
            &sh->kv_heads, c,
            (struct ckpt_int){
                .key = "num_key_value_heads", .min = 1, .max = sh->heads, .what = "the KV heads"},
            err))
        return -1;
    if (sh->kv_heads > sh->heads || sh->heads % sh->kv_heads != 0)
        return attn_ckpt_config_error(c, "num_key_value_heads", NULL, err,
                                      "'num_key_value_heads' %d does not divide "
                                      "'num_attention_heads' %d",
                                      sh->kv_heads, sh->heads);
    g->head_dim = DEFAULTS[v].head_dim;
    if (attn_ckpt_config_int(
            &g->head_dim, c,
            (struct ckpt_int){
                .key = "head_dim", .min = 2, .max = SCENE_MAX_DIM, .what = "a head's width"},
            err))
        return -1;
    if (g->head_dim == 0) {
        if (sh->d % sh->heads != 0)
            return attn_ckpt_config_error(c, "num_attention_heads", NULL, err,
                                          "'num_attention_heads' %d does not divide "
                                          "'hidden_size' %d (and there is no 'head_dim')",
                                          sh->heads, sh->d);
        g->head_dim = sh->d / sh->heads;
    }
    if (g->head_dim % 2 != 0)
        return attn_ckpt_config_error(c, "head_dim", NULL, err,
                                      "a head is %d wide: RoPE turns pairs, so it must be even",
                                      g->head_dim);
    if ((long)sh->heads * g->head_dim > SCENE_MAX_DIM)
        return attn_ckpt_config_error(c, "head_dim", NULL, err,
                                      "%d heads x head_dim %d is over attnscope's %d", sh->heads,
                                      g->head_dim, SCENE_MAX_DIM);
    sh->positions = DEFAULTS[v].positions;
    if (attn_ckpt_config_int(
            &sh->positions, c,
            (struct ckpt_int){
                .key = "max_position_embeddings", .min = 1, .max = INT32_MAX, .what = "positions"},
            err))
        return -1;
    g->eps = DEFAULTS[v].eps;
    if (attn_ckpt_config_number(
            &g->eps, c,
            (struct ckpt_number){
                .key = "rms_norm_eps", .above = 0, .below = 1, .what = "a number between 0 and 1"},
            err) ||
        attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err))
        return -1;
    /* attention_bias: Llama's and Qwen3's q, k, v and o; Qwen2 always has q, k and v biases,
       Mistral none */
    bool bias = false;
    enum llama_variant att = attention_of(v);
    if ((att == LLAMA_PLAIN || att == LLAMA_QWEN3 || att == LLAMA_OLMO2) &&
        attn_ckpt_config_bool(&bias, c, "attention_bias", err))
        return -1;
    g->qkv_bias = bias || att == LLAMA_QWEN2;
    g->out_bias = bias;
    g->olmo2 = v == LLAMA_OLMO2;
    g->phi3 = v == LLAMA_PHI3;
    g->qk_norm = att == LLAMA_QWEN3 || g->olmo2;
    if (v == LLAMA_PLAIN && attn_ckpt_config_bool(&g->mlp_bias, c, "mlp_bias", err))
        return -1;
    json_t *act = json_object_get(c->root, "hidden_act");
    char got[64];
    if (act && !(json_is_string(act) && strcmp(json_string_value(act), "silu") == 0))
        return attn_ckpt_config_error(c, "hidden_act", NULL, err,
                                      "'hidden_act' is %s: the Llama family's MLP is SwiGLU, "
                                      "attnscope computes it with silu",
                                      attn_ckpt_show_value(got, sizeof(got), act));
    if (att == LLAMA_MISTRAL || v == LLAMA_PHI3) { /* every layer; Mistral's default is 4096 */
        json_t *w = json_object_get(c->root, "sliding_window");
        g->window = v == LLAMA_MISTRAL ? 4096 : 0;
        if (w && json_is_null(w))
            g->window = 0;
        else if (attn_ckpt_config_int(&g->window, c, WINDOW, err))
            return -1;
    } else if ((att == LLAMA_QWEN2 || att == LLAMA_QWEN3) && read_qwen_window(g, c, err)) {
        return -1;
    }
    if (v != att && read_experts(g, c, v, err))
        return -1;
    sh->width_key = "hidden_size";
    sh->heads_fixed = true; /* they come with RoPE and their KV groups */
    sh->positions_key = "max_position_embeddings";
    sh->causal = true;
    sh->scale = SCALE_SQRT_DK;
    return attn_ckpt_rope(&g->rope, c, b,
                          &(struct ckpt_rope_spec){.head_dim = g->head_dim,
                                                   .positions = sh->positions,
                                                   .partial = g->phi3,
                                                   .phi3 = g->phi3,
                                                   .original_max = g->phi3 ? 4096 : 0},
                          err);
}

/* A mixture's tensors in a layer: the router, each expert's gate, up and down under
 * experts.E., and Qwen2-MoE's shared expert and its gate. */
struct moe_names {
    const char *router, *experts, *parts[3], *shared[3], *shared_gate;
};
static const struct moe_names MIXTRAL_NAMES = {"block_sparse_moe.gate.weight",
                                               "block_sparse_moe.experts.",
                                               {"w1.weight", "w3.weight", "w2.weight"},
                                               {NULL, NULL, NULL},
                                               NULL};
static const struct moe_names QWEN_MOE_NAMES = {
    "mlp.gate.weight",
    "mlp.experts.",
    {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
    {"mlp.shared_expert.gate_proj.weight", "mlp.shared_expert.up_proj.weight",
     "mlp.shared_expert.down_proj.weight"},
    "mlp.shared_expert_gate.weight"};

static const struct moe_names *moe_names(const struct config *g)
{
    return g->moe == LLAMA_MIXTRAL ? &MIXTRAL_NAMES : &QWEN_MOE_NAMES;
}

/* rest (a layer's part of a name) is one of the mixture's tensors. */
static bool moe_known(const struct config *g, const char *rest)
{
    const struct moe_names *nm = moe_names(g);
    if (strcmp(rest, nm->router) == 0)
        return true;
    const char *part = attn_family_layer_part(rest, nm->experts, g->experts);
    if (part && attn_family_name_in(part, nm->parts, 3))
        return true;
    return g->shared > 0 &&
           (attn_family_name_in(rest, nm->shared, 3) || strcmp(rest, nm->shared_gate) == 0);
}

/* A tensor the mapping reads or knows to skip (rotary_emb.inv_freq, a buffer some exports carry:
 * attnscope computes the frequencies from rope_theta). name without the "model." prefix. */
static bool known(const struct family_load *ld, const char *name)
{
    const struct config *g = ld->config;
    static const char *const top[] = {"embed_tokens.weight", "norm.weight"};
    static const char *const per_layer[] = {
        "post_attention_layernorm.weight",
        "self_attn.q_proj.weight",
        "self_attn.k_proj.weight",
        "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
        "self_attn.rotary_emb.inv_freq",
    };
    /* OLMo 2 has no input_layernorm but a norm on the MLP's output */
    const char *input_norm =
        g->olmo2 ? "post_feedforward_layernorm.weight" : "input_layernorm.weight";
    static const char *const qkv_bias[] = {"self_attn.q_proj.bias", "self_attn.k_proj.bias",
                                           "self_attn.v_proj.bias"};
    static const char *const mlp_bias[] = {"mlp.gate_proj.bias", "mlp.up_proj.bias",
                                           "mlp.down_proj.bias"};
    static const char *const qk_norm[] = {"self_attn.q_norm.weight", "self_attn.k_norm.weight"};
    /* Phi-3's fused projections, in place of q, k, v and gate, up */
    static const char *const phi3[] = {
        "input_layernorm.weight",       "post_attention_layernorm.weight",
        "self_attn.qkv_proj.weight",    "self_attn.o_proj.weight",
        "mlp.gate_up_proj.weight",      "mlp.down_proj.weight",
        "self_attn.rotary_emb.inv_freq"};
    if (attn_family_name_in(name, top, sizeof(top) / sizeof(top[0])))
        return true;
    const char *rest = attn_family_layer_part(name, "layers.", g->shape.layers);
    if (g->phi3)
        return rest && attn_family_name_in(rest, phi3, sizeof(phi3) / sizeof(phi3[0]));
    if (rest && g->moe && strncmp(rest, "mlp.", 4) == 0 && !moe_known(g, rest))
        return false; /* a mixture has no plain MLP */
    return rest &&
           ((g->moe && moe_known(g, rest)) ||
            attn_family_name_in(rest, per_layer, sizeof(per_layer) / sizeof(per_layer[0])) ||
            strcmp(rest, input_norm) == 0 ||
            attn_family_name_in(rest, qkv_bias, g->qkv_bias ? 3 : 0) ||
            attn_family_name_in(rest, qk_norm, g->qk_norm ? 2 : 0) ||
            attn_family_name_in(rest, mlp_bias, g->mlp_bias ? 3 : 0) ||
            (g->out_bias && strcmp(rest, "self_attn.o_proj.bias") == 0));
}

/* Layer L's mixture: the router, every expert's three Linears (lazy: an expert no token
 * chooses is never read) in an array the backing owns, and the shared expert. */
static int read_moe(struct attn_scene_weights *w, const struct config *c, struct ckpt_backing *b,
                    const char *prefix, int L, const char *arch, struct diag *err)
{
    const struct moe_names *nm = moe_names(c);
    int d = c->shape.d, h = c->inter, hs = c->shared, E = c->experts;
    char full[240];
    snprintf(full, sizeof(full), "%slayers.%d.%s", prefix, L, nm->router);
    if (attn_ckpt_tensor(&w->router, b, full, d, E, CKPT_LINEAR, arch, err))
        return -1;
    /* E * 3 matrices, in memory the backing owns and frees (floats' worth, as its copies) */
    size_t bytes = (size_t)E * 3 * sizeof(struct attn_matrix);
    struct attn_matrix *x = (struct attn_matrix *)(void *)attn_ckpt_owned(
        b, (bytes + sizeof(float) - 1) / sizeof(float));
    if (!x)
        return attn_diag_set(err, "", "out of memory for %d experts", E);
    for (int e = 0; e < E; e++)
        for (int p = 0; p < 3; p++) {
            snprintf(full, sizeof(full), "%slayers.%d.%s%d.%s", prefix, L, nm->experts, e,
                     nm->parts[p]);
            bool down = p == 2;
            if (attn_ckpt_tensor(&x[3 * e + p], b, full, down ? h : d, down ? d : h, CKPT_LINEAR,
                                 arch, err))
                return -1;
        }
    w->experts = x;
    const struct family_part shared[] = {
        {&w->shared_Wgate, nm->shared[0], d, hs, CKPT_LINEAR, hs > 0},
        {&w->shared_W1, nm->shared[1], d, hs, CKPT_LINEAR, hs > 0},
        {&w->shared_W2, nm->shared[2], hs, d, CKPT_LINEAR, hs > 0},
        {&w->shared_gate, nm->shared_gate, d, 1, CKPT_LINEAR, hs > 0},
    };
    return attn_family_read_parts(b, prefix, "layers.", L, shared,
                                  sizeof(shared) / sizeof(shared[0]), arch, err);
}

/* The block the family is made of, and every layer's parameters. */
static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, b, (enum llama_variant)ld->variant, err) ||
        attn_family_prologue(ld, &c.shape, &c, err))
        return -1;
    const char *prefix = ld->prefix, *arch = ld->family->name;
    int d = c.shape.d, heads = c.shape.heads, D = heads * c.head_dim,
        Dkv = c.shape.kv_heads * c.head_dim, h = c.inter;
    /* RoPE in rotate_half's pairs, with the checkpoint's base and scaling */
    attn_matrix_free(&s->pos.table);
    s->pos.kind = POS_ROPE;
    s->pos.pairs = ROPE_HALVES;
    s->pos.base = c.rope.theta;
    s->pos.scaling = c.rope.scale;
    s->pos.rotary_dims = c.rope.rotary_dims < c.head_dim ? c.rope.rotary_dims : 0;

    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = D;
    a->heads = heads;
    a->kv_heads = c.shape.kv_heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_SEPARATE;
    a->qkv_bias = c.qkv_bias;
    a->out_proj = TRI_TRUE;
    a->out_bias = c.out_bias;
    a->window = c.window;
    memcpy(a->window_off, c.window_off, sizeof(a->window_off));
    a->qk_norm = c.qk_norm;
    a->qk_norm_whole = c.olmo2;
    s->block = (struct attn_block){.on = true,
                                   .order = c.olmo2 ? BLOCK_POST_BRANCH : BLOCK_PRE,
                                   .norm = NORM_RMS,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = h,
                                   .activation = ACT_SWIGLU,
                                   .final_norm = true,
                                   .n_experts = c.moe ? c.experts : 0,
                                   .top_k = c.top_k,
                                   .norm_topk = c.norm_topk,
                                   .shared_hidden = c.shared};

    char full[200];
    for (int L = 0; L < ld->layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        const struct family_part parts[] = {
            {&w->query, "self_attn.q_proj.weight", d, D, CKPT_LINEAR, !c.phi3},
            {&w->key, "self_attn.k_proj.weight", d, Dkv, CKPT_LINEAR, !c.phi3},
            {&w->value, "self_attn.v_proj.weight", d, Dkv, CKPT_LINEAR, !c.phi3},
            {&w->query_bias, "self_attn.q_proj.bias", 1, D, CKPT_VECTOR, c.qkv_bias},
            {&w->key_bias, "self_attn.k_proj.bias", 1, Dkv, CKPT_VECTOR, c.qkv_bias},
            {&w->value_bias, "self_attn.v_proj.bias", 1, Dkv, CKPT_VECTOR, c.qkv_bias},
            {&w->q_norm_weight, "self_attn.q_norm.weight", 1, c.olmo2 ? D : c.head_dim, CKPT_VECTOR,
             c.qk_norm},
            {&w->k_norm_weight, "self_attn.k_norm.weight", 1, c.olmo2 ? Dkv : c.head_dim,
             CKPT_VECTOR, c.qk_norm},
            {&w->out, "self_attn.o_proj.weight", D, d, CKPT_LINEAR, true},
            {&w->out_bias, "self_attn.o_proj.bias", 1, d, CKPT_VECTOR, c.out_bias},
            {&w->ffn_Wgate, "mlp.gate_proj.weight", d, h, CKPT_LINEAR, !c.phi3 && !c.moe},
            {&w->ffn_bgate, "mlp.gate_proj.bias", 1, h, CKPT_VECTOR, c.mlp_bias},
            {&w->ffn_W1, "mlp.up_proj.weight", d, h, CKPT_LINEAR, !c.phi3 && !c.moe},
            {&w->ffn_b1, "mlp.up_proj.bias", 1, h, CKPT_VECTOR, c.mlp_bias},
            {&w->ffn_W2, "mlp.down_proj.weight", h, d, CKPT_LINEAR, !c.moe},
            {&w->ffn_b2, "mlp.down_proj.bias", 1, d, CKPT_VECTOR, c.mlp_bias},
            /* norm1 and norm2: in front of attention and the MLP, or (OLMo 2) on their outputs */
            {&w->norm1_weight,
             c.olmo2 ? "post_attention_layernorm.weight" : "input_layernorm.weight", 1, d,
             CKPT_VECTOR, true},
            {&w->norm2_weight,
             c.olmo2 ? "post_feedforward_layernorm.weight" : "post_attention_layernorm.weight", 1,
             d, CKPT_VECTOR, true},
        };
        if (attn_family_read_parts(b, prefix, "layers.", L, parts, sizeof(parts) / sizeof(parts[0]),
                                   arch, err))
            return -1;
        /* Phi-3: each projection is its rows of a fused Linear, read in place (no copy) */
        struct {
            struct attn_matrix *dst;
            const char *name;
            int total, row0, rows;
        } fused[] = {
            {&w->query, "self_attn.qkv_proj.weight", D + 2 * Dkv, 0, D},
            {&w->key, "self_attn.qkv_proj.weight", D + 2 * Dkv, D, Dkv},
            {&w->value, "self_attn.qkv_proj.weight", D + 2 * Dkv, D + Dkv, Dkv},
            {&w->ffn_Wgate, "mlp.gate_up_proj.weight", 2 * h, 0, h}, /* chunk(2): gate, then up */
            {&w->ffn_W1, "mlp.gate_up_proj.weight", 2 * h, h, h},
        };
        for (size_t i = 0; c.phi3 && i < sizeof(fused) / sizeof(fused[0]); i++) {
            snprintf(full, sizeof(full), "%slayers.%d.%s", prefix, L, fused[i].name);
            if (attn_ckpt_linear_rows(fused[i].dst, b, full, d, fused[i].total, fused[i].row0,
                                      fused[i].rows, arch, err))
                return -1;
        }
        if (c.moe && read_moe(w, &c, b, prefix, L, arch, err))
            return -1;
        w->set = true;
        snprintf(full, sizeof(full), "%snorm.weight", prefix);
        if (L == ld->layers - 1 &&
            attn_ckpt_tensor(&w->final_norm_weight, b, full, 1, d, CKPT_VECTOR, arch, err))
            return -1;
    }
    return attn_ckpt_finish(b, s, ld->path, arch, err);
}

static const struct family_class CLASSES[] = {
    {"LlamaForCausalLM", "llama", LLAMA_PLAIN},
    {"MistralForCausalLM", "mistral", LLAMA_MISTRAL},
    {"Qwen2ForCausalLM", "qwen2", LLAMA_QWEN2},
    {"Qwen3ForCausalLM", "qwen3", LLAMA_QWEN3},
    {"Olmo2ForCausalLM", "olmo2", LLAMA_OLMO2},
    {"Phi3ForCausalLM", "phi3", LLAMA_PHI3},
    {"MixtralForCausalLM", "mixtral", LLAMA_MIXTRAL},
    {"Qwen2MoeForCausalLM", "qwen2_moe", LLAMA_QWEN2_MOE},
    {"Qwen3MoeForCausalLM", "qwen3_moe", LLAMA_QWEN3_MOE},
    {NULL, NULL, 0},
};
static const char *const OUTSIDE[] = {"lm_head.weight", NULL};

/* LlamaForCausalLM's names start with "model.", LlamaModel's do not. */
const struct attn_family attn_family_llama = {
    .name = "llama",
    .classes = CLASSES,
    .variants = VARIANTS,
    .keys = KEYS,
    .n_keys = sizeof(KEYS) / sizeof(KEYS[0]),
    .names = {.prefix = "model.",
              .outside = OUTSIDE,
              .embed = "embed_tokens.weight",
              .unembed = "lm_head.weight",
              .known = known},
    .load = load,
};
