/* gemma: the Gemma family (Gemma 2 and Gemma 3's text model), its row of the registry
 * (family.h).
 *
 * Gemma2ForCausalLM and Gemma3ForCausalLM: model.embed_tokens, model.layers.L.{input_layernorm,
 * self_attn.{q,k,v,o}_proj, post_attention_layernorm, pre_feedforward_layernorm,
 * post_feedforward_layernorm, mlp.{gate,up,down}_proj}, model.norm and lm_head (unless tied), with
 * Gemma 3's per-head q_norm and k_norm. The block is a sandwich: RMSNorm in front of attention and
 * the MLP and again on each one's output before it is added (block.order sandwich); every Gemma
 * RMSNorm multiplies by (1 + weight), so the norms' weights are read as 1 + weight. The embeddings
 * are scaled by sqrt(hidden_size); the scores by query_pre_attn_scalar^-0.5; Gemma 2 soft-caps the
 * scores (attn_logit_softcapping, the stage capped) and the logits (final_logit_softcapping);
 * sliding-window and full layers alternate (Gemma 2: every other one; Gemma 3: five in six), and
 * Gemma 3's sliding layers turn on a RoPE base of their own. The MLP is GeGLU with gelu's tanh
 * form. Every config.json key that changes the mathematics is read, and one attnscope does not
 * model is refused at its key rather than ignored.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pretrained/family.h"
#include "pretrained/rope.h"

enum gemma_variant { GEMMA2, GEMMA3 };

#define V(variant) (1u << (variant))

/* config.json's keys: transformers 5's Gemma2Config and Gemma3TextConfig, with 4's rope_theta,
 * rope_scaling, sliding_window_pattern and rope_local_base_freq. */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"hidden_size", KEY_READ, 0, NULL, NULL},
    {"intermediate_size", KEY_READ, 0, NULL, NULL},
    {"num_hidden_layers", KEY_READ, 0, NULL, NULL},
    {"num_attention_heads", KEY_READ, 0, NULL, NULL},
    {"num_key_value_heads", KEY_READ, 0, NULL, NULL},
    {"head_dim", KEY_READ, 0, NULL, NULL},
    {"hidden_activation", KEY_READ, 0, NULL, NULL},
    {"max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"rms_norm_eps", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    {"attention_bias", KEY_READ, 0, NULL, NULL},
    {"query_pre_attn_scalar", KEY_READ, 0, NULL, NULL},
    {"sliding_window", KEY_READ, 0, NULL, NULL},
    {"layer_types", KEY_READ, 0, NULL, NULL},
    {"final_logit_softcapping", KEY_READ, 0, NULL, NULL},
    {"attn_logit_softcapping", KEY_READ, 0, NULL, NULL},
    {"rope_theta", KEY_READ, 0, NULL, NULL},
    {"rope_parameters", KEY_READ, 0, NULL, NULL},
    {"rope_scaling", KEY_READ, V(GEMMA3), NULL, NULL},
    {"rope_local_base_freq", KEY_READ, V(GEMMA3), NULL, NULL},
    {"sliding_window_pattern", KEY_READ, V(GEMMA3), NULL, NULL},
    /* Gemma 1's name of the activation, which Gemma 2 and 3 carry beside hidden_activation and
       never read */
    {"hidden_act", KEY_INERT, 0, NULL, NULL},
    {"attention_dropout", KEY_INERT, 0, NULL, NULL},    /* in training only */
    {"cache_implementation", KEY_INERT, 0, NULL, NULL}, /* generate's cache, not the numbers */
    {"use_bidirectional_attention", KEY_DEFAULT, V(GEMMA3), "false",
     "bidirectional attention (EmbeddingGemma's) is not something attnscope computes"},
};

static const struct family_variant VARIANTS[] = {
    [GEMMA2] = {"Gemma2Config", "Gemma 2"},
    [GEMMA3] = {"Gemma3TextConfig", "Gemma 3"},
};

/* What each class defaults a key to, where they differ. */
static const struct {
    int positions;
    double theta, final_cap, attn_cap;
    int pattern; /* one full layer in so many (Gemma 2's alternate: 2) */
} DEFAULTS[] = {
    [GEMMA2] = {8192, 10000.0, 30.0, 50.0, 2},
    [GEMMA3] = {131072, 1000000.0, 0, 0, 6},
};

struct config {
    struct family_shape shape;
    int head_dim, inter, window;
    bool window_off[SCENE_MAX_LAYERS]; /* the full layers */
    double eps, qpas, final_cap, attn_cap;
    bool bias, qk_norm;
    struct ckpt_rope rope;
};

/* A number that may be null (none: *out 0) and is above 0 when given. */
static int optional_cap(double *out, struct ckpt_config *c, const char *key, struct diag *err)
{
    json_t *v = json_object_get(c->root, key);
    if (v && json_is_null(v)) {
        *out = 0;
        return 0;
    }
    return attn_ckpt_config_number(
        out, c,
        (struct ckpt_number){
            .key = key, .above = 0, .below = INFINITY, .what = "a number above 0, or null"},
        err);
}

/* The sliding and the full layers, in both formats: 4's rule (Gemma 2: the even layers slide;
 * Gemma 3: all but every sliding_window_pattern-th) and 5's layer_types; where both are written
 * they agree. */
static int read_layers(struct config *g, struct ckpt_config *c, enum gemma_variant v,
                       struct diag *err)
{
    int pattern = DEFAULTS[v].pattern;
    bool pattern_given = v == GEMMA3 && json_object_get(c->root, "sliding_window_pattern");
    if (v == GEMMA3 && attn_ckpt_config_int(&pattern, c,
                                            (struct ckpt_int){.key = "sliding_window_pattern",
                                                              .min = 1,
                                                              .max = INT32_MAX,
                                                              .what = "a count of layers"},
                                            err))
        return -1;
    bool rule[SCENE_MAX_LAYERS];
    for (int L = 0; L < g->shape.layers; L++)
        rule[L] = (L + 1) % pattern != 0; /* transformers 4's: every pattern-th layer is full */
    return attn_family_layer_types(g->window_off, c, g->shape.layers, rule,
                                   "sliding_window_pattern", pattern, pattern_given, g->window,
                                   "'sliding_window' is not given", err);
}

static int read_config(struct config *g, struct ckpt_config *c, struct ckpt_backing *b,
                       enum gemma_variant v, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    if (attn_family_read_sizes(sh, &g->inter, c, err))
        return -1;
    sh->kv_heads = sh->heads;
    g->head_dim = 256; /* both classes' default */
    sh->positions = DEFAULTS[v].positions;
    g->eps = 1e-6;
    sh->tied = sh->tied_default = true;
    g->window = 4096;
    g->final_cap = DEFAULTS[v].final_cap;
    g->attn_cap = DEFAULTS[v].attn_cap;
    if (attn_ckpt_config_int(
            &sh->kv_heads, c,
            (struct ckpt_int){
                .key = "num_key_value_heads", .min = 1, .max = sh->heads, .what = "the KV heads"},
            err) ||
        attn_ckpt_config_int(
            &g->head_dim, c,
            (struct ckpt_int){
                .key = "head_dim", .min = 2, .max = SCENE_MAX_DIM, .what = "a head's width"},
            err) ||
        attn_ckpt_config_int(
            &sh->positions, c,
            (struct ckpt_int){
                .key = "max_position_embeddings", .min = 1, .max = INT32_MAX, .what = "positions"},
            err) ||
        attn_ckpt_config_number(
            &g->eps, c,
            (struct ckpt_number){
                .key = "rms_norm_eps", .above = 0, .below = 1, .what = "a number between 0 and 1"},
            err) ||
        attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err) ||
        attn_ckpt_config_bool(&g->bias, c, "attention_bias", err) ||
        optional_cap(&g->final_cap, c, "final_logit_softcapping", err) ||
        optional_cap(&g->attn_cap, c, "attn_logit_softcapping", err))
        return -1;
    if (sh->heads % sh->kv_heads != 0)
        return attn_ckpt_config_error(c, "num_key_value_heads", NULL, err,
                                      "'num_key_value_heads' %d does not divide "
                                      "'num_attention_heads' %d",
                                      sh->kv_heads, sh->heads);
    if (g->head_dim % 2 != 0 || (long)sh->heads * g->head_dim > SCENE_MAX_DIM)
        return attn_ckpt_config_error(c, "head_dim", NULL, err,
                                      "head_dim %d: RoPE turns pairs, and %d heads of it must fit "
                                      "attnscope's %d",
                                      g->head_dim, sh->heads, SCENE_MAX_DIM);
    g->qpas = 256; /* both classes' default */
    if (attn_ckpt_config_number(&g->qpas, c,
                                (struct ckpt_number){.key = "query_pre_attn_scalar",
                                                     .above = 0,
                                                     .below = INFINITY,
                                                     .what = "a number above 0"},
                                err))
        return -1;
    json_t *w = json_object_get(c->root, "sliding_window");
    if (w && json_is_null(w))
        return attn_ckpt_config_error(c, "sliding_window", NULL, err,
                                      "'sliding_window' is null: Gemma's sliding layers need one");
    if (attn_ckpt_config_int(
            &g->window, c,
            (struct ckpt_int){
                .key = "sliding_window", .min = 1, .max = INT32_MAX, .what = "the sliding window"},
            err) ||
        read_layers(g, c, v, err))
        return -1;
    /* hidden_activation: gelu's tanh form (the class's default) */
    json_t *act = json_object_get(c->root, "hidden_activation");
    char got[64];
    if (act && !(json_is_string(act) && (strcmp(json_string_value(act), "gelu_pytorch_tanh") == 0 ||
                                         strcmp(json_string_value(act), "gelu_new") == 0)))
        return attn_ckpt_config_error(c, "hidden_activation", NULL, err,
                                      "'hidden_activation' is %s: Gemma's MLP is GeGLU, attnscope "
                                      "computes it with gelu's tanh form (gelu_pytorch_tanh)",
                                      attn_ckpt_show_value(got, sizeof(got), act));
    g->qk_norm = v == GEMMA3;
    sh->width_key = "hidden_size";
    sh->heads_fixed = true;
    sh->positions_key = "max_position_embeddings";
    sh->causal = true;
    /* scores times query_pre_attn_scalar^-0.5: ÷ its square root (√d_k when they are equal) */
    sh->scale = g->qpas == g->head_dim ? SCALE_SQRT_DK : SCALE_DIVISOR;
    sh->scale_divisor = sqrt(g->qpas);
    /* Gemma 3's default base is 1,000,000 (Gemma 2's transformers' 10,000) */
    json_t *params = json_object_get(c->root, "rope_parameters");
    bool theta_given = json_object_get(c->root, "rope_theta") ||
                       (json_is_object(params) && (json_object_get(params, "rope_theta") ||
                                                   json_object_get(params, "full_attention")));
    if (attn_ckpt_rope(&g->rope, c, b,
                       &(struct ckpt_rope_spec){.head_dim = g->head_dim,
                                                .positions = sh->positions,
                                                .local = v == GEMMA3},
                       err))
        return -1;
    if (!theta_given)
        g->rope.theta = DEFAULTS[v].theta;
    return 0;
}

/* A tensor the mapping reads or knows to skip. name without the "model." prefix. */
static bool known(const struct family_load *ld, const char *name)
{
    const struct config *g = ld->config;
    static const char *const top[] = {"embed_tokens.weight", "norm.weight"};
    static const char *const per_layer[] = {
        "input_layernorm.weight",
        "post_attention_layernorm.weight",
        "pre_feedforward_layernorm.weight",
        "post_feedforward_layernorm.weight",
        "self_attn.q_proj.weight",
        "self_attn.k_proj.weight",
        "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
        "self_attn.rotary_emb.inv_freq",
    };
    static const char *const biases[] = {"self_attn.q_proj.bias", "self_attn.k_proj.bias",
                                         "self_attn.v_proj.bias", "self_attn.o_proj.bias"};
    static const char *const qk_norm[] = {"self_attn.q_norm.weight", "self_attn.k_norm.weight"};
    if (attn_family_name_in(name, top, sizeof(top) / sizeof(top[0])))
        return true;
    const char *rest = attn_family_layer_part(name, "layers.", g->shape.layers);
    return rest &&
           (attn_family_name_in(rest, per_layer, sizeof(per_layer) / sizeof(per_layer[0])) ||
            attn_family_name_in(rest, biases, g->bias ? 4 : 0) ||
            attn_family_name_in(rest, qk_norm, g->qk_norm ? 2 : 0));
}

/* A Gemma RMSNorm's weight, read, made the factor it multiplies by: 1 + weight, each in float32
 * as torch's (1.0 + self.weight.float()), in a copy the backing owns. */
static int one_plus(struct attn_matrix *w, struct ckpt_backing *b, const char *name,
                    struct diag *err)
{
    float *factor = attn_ckpt_owned(b, (size_t)w->cols);
    if (!factor)
        return attn_diag_set(err, "", "out of memory for tensor '%s'", name);
    for (int j = 0; j < w->cols; j++)
        factor[j] = 1.0f + w->data[j];
    *w = (struct attn_matrix){factor, 1, w->cols, true, NULL, false};
    return 0;
}

static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, b, (enum gemma_variant)ld->variant, err) ||
        attn_family_prologue(ld, &c.shape, &c, err))
        return -1;
    const char *prefix = ld->prefix, *arch = ld->family->name;
    int d = c.shape.d, D = c.shape.heads * c.head_dim, Dkv = c.shape.kv_heads * c.head_dim,
        h = c.inter;
    s->embed.scale = sqrt((double)d); /* hidden_size ** 0.5 */
    s->logit_softcap = c.final_cap;
    attn_matrix_free(&s->pos.table);
    s->pos.kind = POS_ROPE;
    s->pos.pairs = ROPE_HALVES;
    s->pos.base = c.rope.theta;
    s->pos.base_local = c.qk_norm ? c.rope.base_local : 0; /* Gemma 3's */
    s->pos.scaling = c.rope.scale;

    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = D;
    a->heads = c.shape.heads;
    a->kv_heads = c.shape.kv_heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_SEPARATE;
    a->qkv_bias = c.bias;
    a->out_proj = TRI_TRUE;
    a->out_bias = c.bias;
    a->window = c.window;
    memcpy(a->window_off, c.window_off, sizeof(a->window_off));
    a->qk_norm = c.qk_norm;
    a->softcap = c.attn_cap;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_SANDWICH,
                                   .norm = NORM_RMS,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = h,
                                   .activation = ACT_GEGLU_TANH,
                                   .final_norm = true};

    char full[200];
    for (int L = 0; L < ld->layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        const struct family_part parts[] = {
            {&w->query, "self_attn.q_proj.weight", d, D, CKPT_LINEAR, true},
            {&w->key, "self_attn.k_proj.weight", d, Dkv, CKPT_LINEAR, true},
            {&w->value, "self_attn.v_proj.weight", d, Dkv, CKPT_LINEAR, true},
            {&w->query_bias, "self_attn.q_proj.bias", 1, D, CKPT_VECTOR, c.bias},
            {&w->key_bias, "self_attn.k_proj.bias", 1, Dkv, CKPT_VECTOR, c.bias},
            {&w->value_bias, "self_attn.v_proj.bias", 1, Dkv, CKPT_VECTOR, c.bias},
            {&w->out, "self_attn.o_proj.weight", D, d, CKPT_LINEAR, true},
            {&w->out_bias, "self_attn.o_proj.bias", 1, d, CKPT_VECTOR, c.bias},
            {&w->ffn_Wgate, "mlp.gate_proj.weight", d, h, CKPT_LINEAR, true},
            {&w->ffn_W1, "mlp.up_proj.weight", d, h, CKPT_LINEAR, true},
            {&w->ffn_W2, "mlp.down_proj.weight", h, d, CKPT_LINEAR, true},
        };
        if (attn_family_read_parts(b, prefix, "layers.", L, parts, sizeof(parts) / sizeof(parts[0]),
                                   arch, err))
            return -1;
        /* the norms, each 1 + weight */
        const struct family_part norms[] = {
            {&w->norm1_weight, "input_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->post_norm1_weight, "post_attention_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->norm2_weight, "pre_feedforward_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->post_norm2_weight, "post_feedforward_layernorm.weight", 1, d, CKPT_VECTOR, true},
            {&w->q_norm_weight, "self_attn.q_norm.weight", 1, c.head_dim, CKPT_VECTOR, c.qk_norm},
            {&w->k_norm_weight, "self_attn.k_norm.weight", 1, c.head_dim, CKPT_VECTOR, c.qk_norm},
        };
        size_t n_norms = sizeof(norms) / sizeof(norms[0]);
        if (attn_family_read_parts(b, prefix, "layers.", L, norms, n_norms, arch, err))
            return -1;
        for (size_t i = 0; i < n_norms; i++) {
            snprintf(full, sizeof(full), "%slayers.%d.%s", prefix, L, norms[i].name);
            if (norms[i].wanted && one_plus(norms[i].dst, b, full, err))
                return -1;
        }
        w->set = true;
        if (L == ld->layers - 1) {
            snprintf(full, sizeof(full), "%snorm.weight", prefix);
            if (attn_ckpt_tensor(&w->final_norm_weight, b, full, 1, d, CKPT_VECTOR, arch, err) ||
                one_plus(&w->final_norm_weight, b, full, err))
                return -1;
        }
    }
    return attn_ckpt_finish(b, s, ld->path, arch, err);
}

static const struct family_class CLASSES[] = {
    {"Gemma2ForCausalLM", "gemma2", GEMMA2},
    {"Gemma3ForCausalLM", "gemma3_text", GEMMA3},
    {NULL, NULL, 0},
};
static const char *const OUTSIDE[] = {"lm_head.weight", NULL};

/* Gemma2ForCausalLM's names start with "model.". */
const struct attn_family attn_family_gemma = {
    .name = "gemma",
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
