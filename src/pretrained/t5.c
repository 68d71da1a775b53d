/* t5: the T5 family (T5, T5 v1.1, Flan-T5), its row of the registry (family.h): an encoder-decoder.
 *
 * T5ForConditionalGeneration: shared (the embeddings of both stacks), encoder.block.L.layer.0
 * (SelfAttention q, k, v, o and layer_norm) and layer.1 (DenseReluDense and layer_norm),
 * encoder.final_layer_norm; decoder.block.L.layer.0 (SelfAttention), layer.1 (EncDecAttention:
 * cross-attention) and layer.2 (DenseReluDense), decoder.final_layer_norm; lm_head unless tied.
 * Each stack's first layer holds relative_attention_bias (buckets, heads), which every layer of
 * it adds to its scores; no position is added to the embeddings, and the scores are not scaled
 * (T5 folds 1/sqrt(d_kv) into q's initialisation). Norms are T5LayerNorm (RMS, no mean, no bias)
 * in front of each sublayer. A tied head multiplies the last hidden state by d_model^-0.5.
 *
 * The scene is the decoder (the target text, after decoder_start_token_id), its layer L two of
 * the engine's: 2L its self-attention (SUB_SELF), 2L + 1 its cross-attention and FFN
 * (SUB_CROSS); s->encoder is the encoder (the source text, with the tokenizer's template).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretrained/family.h"

/* config.json's keys: transformers' T5Config (and the derived dense_act_fn and is_gated_act it
 * writes, and the keys of older exports: n_positions, output_past). */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"d_model", KEY_READ, 0, NULL, NULL},
    {"d_kv", KEY_READ, 0, NULL, NULL},
    {"d_ff", KEY_READ, 0, NULL, NULL},
    {"num_layers", KEY_READ, 0, NULL, NULL},
    {"num_decoder_layers", KEY_READ, 0, NULL, NULL},
    {"num_heads", KEY_READ, 0, NULL, NULL},
    {"relative_attention_num_buckets", KEY_READ, 0, NULL, NULL},
    {"relative_attention_max_distance", KEY_READ, 0, NULL, NULL},
    {"layer_norm_epsilon", KEY_READ, 0, NULL, NULL},
    {"feed_forward_proj", KEY_READ, 0, NULL, NULL},
    {"dense_act_fn", KEY_READ, 0, NULL, NULL},
    {"is_gated_act", KEY_READ, 0, NULL, NULL},
    {"is_encoder_decoder", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    {"decoder_start_token_id", KEY_READ, 0, NULL, NULL},
    {"dropout_rate", KEY_INERT, 0, NULL, NULL},       /* dropout: in training only */
    {"classifier_dropout", KEY_INERT, 0, NULL, NULL}, /* a classification head's */
    {"initializer_factor", KEY_INERT, 0, NULL, NULL}, /* how weights were first drawn */
    {"is_decoder", KEY_INERT, 0, NULL, NULL},         /* each stack knows what it is */
    {"n_positions", KEY_INERT, 0, NULL, NULL},        /* a length hint: T5 has no positions */
    {"output_past", KEY_INERT, 0, NULL, NULL},        /* the cache of old exports */
};

static const struct family_variant VARIANTS[] = {{"T5Config", "T5"}};

struct config {
    struct family_shape shape; /* d, layers (the decoder's, two engine layers each), heads */
    int d_kv, d_ff, enc_layers, dec_layers, buckets, max_distance, start;
    double eps;
    enum attn_activation act;
};

/* feed_forward_proj as T5Config reads it: "ACT" or "gated-ACT" ("gated-gelu" is gelu_new's);
 * dense_act_fn and is_gated_act, when written, say the same. */
static int read_act(struct config *g, struct ckpt_config *c, struct diag *err)
{
    json_t *v = json_object_get(c->root, "feed_forward_proj");
    const char *p = v && json_is_string(v) ? json_string_value(v) : v ? "" : "relu";
    bool gated = strstr(p, "gated-") == p;
    const char *act = gated ? p + 6 : p;
    const char *fn = gated && strcmp(act, "gelu") == 0 ? "gelu_new" : act;
    char got[64];
    if (!gated && strcmp(act, "relu") == 0)
        g->act = ACT_RELU;
    else if (!gated && strcmp(act, "gelu") == 0)
        g->act = ACT_GELU;
    else if (!gated && (strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_pytorch_tanh") == 0))
        g->act = ACT_GELU_TANH;
    else if (gated && (strcmp(fn, "gelu_new") == 0 || strcmp(fn, "gelu_pytorch_tanh") == 0))
        g->act = ACT_GEGLU_TANH;
    else if (gated && strcmp(fn, "silu") == 0)
        g->act = ACT_SWIGLU;
    else
        return attn_ckpt_config_error(c, "feed_forward_proj", NULL, err,
                                      "'feed_forward_proj' is %s: attnscope computes relu, gelu, "
                                      "gelu_new, gated-gelu and gated-silu",
                                      attn_ckpt_show_value(got, sizeof(got), v));
    json_t *dense = json_object_get(c->root, "dense_act_fn");
    if (dense && !json_is_null(dense) &&
        !(json_is_string(dense) && strcmp(json_string_value(dense), fn) == 0))
        return attn_ckpt_config_error(c, "dense_act_fn", NULL, err,
                                      "'dense_act_fn' is %s, but 'feed_forward_proj' %s makes it "
                                      "\"%s\"",
                                      attn_ckpt_show_value(got, sizeof(got), dense), p, fn);
    bool said = gated;
    if (attn_ckpt_config_bool(&said, c, "is_gated_act", err))
        return -1;
    if (said != gated)
        return attn_ckpt_config_error(c, "is_gated_act", NULL, err,
                                      "'is_gated_act' is %s, but 'feed_forward_proj' is \"%s\"",
                                      said ? "true" : "false", p);
    return 0;
}

static int read_config(struct config *g, struct ckpt_config *c, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    /* T5Config's defaults (t5-small's), num_decoder_layers num_layers' */
    sh->d = 512;
    g->d_kv = 64;
    g->d_ff = 2048;
    g->enc_layers = 6;
    sh->heads = 8;
    g->buckets = 32;
    g->max_distance = 128;
    g->eps = 1e-6;
    g->start = -1;
    sh->tied = sh->tied_default = true;
    bool enc_dec = true;
    struct ckpt_int ints[] = {
        {.key = "d_model", .min = 1, .max = SCENE_MAX_DIM, .what = "the width"},
        {.key = "d_kv", .min = 1, .max = SCENE_MAX_DIM, .what = "a head's width"},
        {.key = "d_ff", .min = 1, .max = SCENE_MAX_DIM * 8, .what = "the FFN's width"},
        {.key = "num_layers", .min = 1, .max = SCENE_MAX_LAYERS, .what = "the encoder's layers"},
        {.key = "num_heads", .min = 1, .max = SCENE_MAX_HEADS, .what = "heads"},
        {.key = "relative_attention_num_buckets", .min = 2, .max = 4096, .what = "buckets"},
        {.key = "relative_attention_max_distance",
         .min = 1,
         .max = INT32_MAX,
         .what = "a distance"},
        {.key = "decoder_start_token_id",
         .min = 0,
         .max = INT32_MAX,
         .what = "a token id",
         .required = true},
    };
    int *dst[] = {&sh->d,     &g->d_kv,    &g->d_ff,         &g->enc_layers,
                  &sh->heads, &g->buckets, &g->max_distance, &g->start};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (attn_ckpt_config_int(dst[i], c, ints[i], err))
            return -1;
    g->dec_layers = g->enc_layers;
    if (attn_ckpt_config_int(&g->dec_layers, c,
                             (struct ckpt_int){.key = "num_decoder_layers",
                                               .min = 1,
                                               .max = SCENE_MAX_LAYERS / 2,
                                               .what = "the decoder's layers (two of attnscope's "
                                                       "each)"},
                             err) ||
        attn_ckpt_config_number(&g->eps, c,
                                (struct ckpt_number){.key = "layer_norm_epsilon",
                                                     .above = 0,
                                                     .below = 1,
                                                     .what = "a number between 0 and 1"},
                                err) ||
        attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err) ||
        attn_ckpt_config_bool(&enc_dec, c, "is_encoder_decoder", err) || read_act(g, c, err))
        return -1;
    if (!enc_dec)
        return attn_ckpt_config_error(c, "is_encoder_decoder", NULL, err,
                                      "'is_encoder_decoder' is false: T5's encoder alone "
                                      "(T5EncoderModel) is not something attnscope reads");
    /* the encoder's exact buckets are a quarter of them, the decoder's a half: at least one
       each, and the logarithmic ones must reach past them */
    if (g->buckets < 4)
        return attn_ckpt_config_error(c, "relative_attention_num_buckets", NULL, err,
                                      "'relative_attention_num_buckets' %d: T5's buckets need at "
                                      "least 4 (an exact one a side)",
                                      g->buckets);
    if (g->max_distance <= g->buckets / 2)
        return attn_ckpt_config_error(c, "relative_attention_max_distance", NULL, err,
                                      "'relative_attention_max_distance' %d is not past the %d "
                                      "exact buckets: the logarithmic ones would have no room",
                                      g->max_distance, g->buckets / 2);
    if ((long)sh->heads * g->d_kv > SCENE_MAX_DIM)
        return attn_ckpt_config_error(c, "d_kv", NULL, err, "%d heads x d_kv %d is over %d",
                                      sh->heads, g->d_kv, SCENE_MAX_DIM);
    sh->layers = 2 * g->dec_layers; /* the engine's: each decoder layer's two sublayers */
    sh->width_key = "d_model";
    sh->heads_fixed = true; /* each head has its own row of the position bias */
    sh->kv_heads = sh->heads;
    sh->positions_key = "n_positions";
    sh->causal = true;
    sh->scale = SCALE_NONE;
    return 0;
}

/* Which of a layer's tensors exist: stack (0 encoder, 1 decoder), the layer's part after
 * "block.L.". */
static bool layer_known(const struct config *g, int stack, int L, const char *rest)
{
    static const char *const attn[] = {"q.weight", "k.weight", "v.weight", "o.weight"};
    const char *ffn_sub = stack == 0 ? "layer.1." : "layer.2.";
    char name[64];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "layer.0.SelfAttention.%s", attn[i]);
        if (strcmp(rest, name) == 0)
            return true;
        snprintf(name, sizeof(name), "layer.1.EncDecAttention.%s", attn[i]);
        if (stack == 1 && strcmp(rest, name) == 0)
            return true;
    }
    if (L == 0 && strcmp(rest, "layer.0.SelfAttention.relative_attention_bias.weight") == 0)
        return true;
    /* the released T5 files' cross-attention bias, which no layer reads (transformers ignores it
       on load: _keys_to_ignore_on_load_unexpected) */
    if (L == 0 && stack == 1 &&
        strcmp(rest, "layer.1.EncDecAttention.relative_attention_bias.weight") == 0)
        return true;
    for (int k = 0; k < (stack == 0 ? 2 : 3); k++) {
        snprintf(name, sizeof(name), "layer.%d.layer_norm.weight", k);
        if (strcmp(rest, name) == 0)
            return true;
    }
    bool gated = attn_activation_gated(g->act);
    const char *const ffn[] = {gated ? "wi_0.weight" : "wi.weight", "wi_1.weight", "wo.weight"};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && !gated)
            continue;
        snprintf(name, sizeof(name), "%sDenseReluDense.%s", ffn_sub, ffn[i]);
        if (strcmp(rest, name) == 0)
            return true;
    }
    return false;
}

/* A tensor the mapping reads, or one it knows to skip: each stack's embed_tokens, which
 * T5 ties to shared (save_pretrained leaves them out; older exports carry a copy). */
static bool known(const struct family_load *ld, const char *name)
{
    const struct config *g = ld->config;
    static const char *const top[] = {"shared.weight", "encoder.final_layer_norm.weight",
                                      "decoder.final_layer_norm.weight",
                                      "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
    if (attn_family_name_in(name, top, sizeof(top) / sizeof(top[0])))
        return true;
    const char *rest = attn_family_layer_part(name, "encoder.block.", g->enc_layers);
    if (rest)
        return layer_known(g, 0, (int)strtol(name + strlen("encoder.block."), NULL, 10), rest);
    rest = attn_family_layer_part(name, "decoder.block.", g->dec_layers);
    return rest && layer_known(g, 1, (int)strtol(name + strlen("decoder.block."), NULL, 10), rest);
}

/* What both stacks share: no positions, the unscaled relative-bias attention, T5LayerNorm in
 * front of each sublayer, the FFN. */
static void set_stack(struct attn_scene *s, const struct config *c, bool decoder)
{
    attn_matrix_free(&s->pos.table);
    s->pos.kind = POS_NONE;
    s->pos.rel.buckets = c->buckets;
    s->pos.rel.max_distance = c->max_distance;
    s->pos.rel.bidirectional = !decoder;
    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = c->shape.heads * c->d_kv;
    a->heads = c->shape.heads;
    a->kv_heads = c->shape.heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_SEPARATE;
    a->qkv_bias = false;
    a->out_proj = TRI_TRUE;
    a->out_bias = false;
    a->scale = SCALE_NONE;
    a->causal = decoder;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_PRE,
                                   .norm = NORM_RMS,
                                   .norm_eps = c->eps,
                                   .ffn_hidden = c->d_ff,
                                   .activation = c->act,
                                   .final_norm = true};
}

/* Layer L of a stack's attention ("layer.0.SelfAttention.", "layer.1.EncDecAttention."), its
 * norm, and (ffn: "layer.1.", "layer.2.", or NULL) the FFN after it, into w. */
static int read_sublayer(struct attn_scene_weights *w, struct ckpt_backing *b, const char *stem,
                         int L, const char *attn, int norm, const char *ffn, const struct config *c,
                         const char *arch, struct diag *err)
{
    int d = c->shape.d, D = c->shape.heads * c->d_kv, h = c->d_ff;
    bool gated = attn_activation_gated(c->act);
    char q[96], k[96], v[96], o[96], n1[64], n2[64], wi[96], wi1[96], wo[96];
    snprintf(q, sizeof(q), "%sq.weight", attn);
    snprintf(k, sizeof(k), "%sk.weight", attn);
    snprintf(v, sizeof(v), "%sv.weight", attn);
    snprintf(o, sizeof(o), "%so.weight", attn);
    snprintf(n1, sizeof(n1), "layer.%d.layer_norm.weight", norm);
    snprintf(n2, sizeof(n2), "%slayer_norm.weight", ffn ? ffn : "");
    snprintf(wi, sizeof(wi), "%sDenseReluDense.%s", ffn ? ffn : "",
             gated ? "wi_0.weight" : "wi.weight");
    snprintf(wi1, sizeof(wi1), "%sDenseReluDense.wi_1.weight", ffn ? ffn : "");
    snprintf(wo, sizeof(wo), "%sDenseReluDense.wo.weight", ffn ? ffn : "");
    /* gated: act(wi_0 x) * wi_1 x, the engine's act(x W_gate) * (x W1) */
    const struct family_part parts[] = {
        {&w->query, q, d, D, CKPT_LINEAR, true},
        {&w->key, k, d, D, CKPT_LINEAR, true},
        {&w->value, v, d, D, CKPT_LINEAR, true},
        {&w->out, o, D, d, CKPT_LINEAR, true},
        {&w->norm1_weight, n1, 1, d, CKPT_VECTOR, true},
        {&w->norm2_weight, n2, 1, d, CKPT_VECTOR, ffn != NULL},
        {gated ? &w->ffn_Wgate : &w->ffn_W1, wi, d, h, CKPT_LINEAR, ffn != NULL},
        {&w->ffn_W1, wi1, d, h, CKPT_LINEAR, ffn != NULL && gated},
        {&w->ffn_W2, wo, h, d, CKPT_LINEAR, ffn != NULL},
    };
    if (attn_family_read_parts(b, "", stem, L, parts, sizeof(parts) / sizeof(parts[0]), arch, err))
        return -1;
    w->set = true;
    return 0;
}

/* A stack's relative_attention_bias and final_layer_norm ("encoder.", "decoder."), into s and
 * its last layer's weights w. */
static int read_stack_ends(struct attn_scene *s, struct attn_scene_weights *w,
                           struct ckpt_backing *b, const char *stack, const struct config *c,
                           const char *arch, struct diag *err)
{
    char full[128];
    snprintf(full, sizeof(full), "%sblock.0.layer.0.SelfAttention.relative_attention_bias.weight",
             stack);
    attn_matrix_free(&s->pos.rel.table);
    if (attn_ckpt_tensor(&s->pos.rel.table, b, full, c->buckets, c->shape.heads, CKPT_TABLE, arch,
                         err))
        return -1;
    snprintf(full, sizeof(full), "%sfinal_layer_norm.weight", stack);
    return attn_ckpt_tensor(&w->final_norm_weight, b, full, 1, c->shape.d, CKPT_VECTOR, arch, err);
}

/* The encoder's scene (made by the scene file from text.source): the embeddings borrowed from
 * the decoder's, its own layers. */
static int load_encoder(struct family_load *ld, const struct config *c, struct diag *err)
{
    struct attn_scene *s = ld->s, *e = s->encoder;
    const char *arch = ld->family->name;
    if (attn_family_encdec_source(ld, c->shape.d, err))
        return -1;
    set_stack(e, c, false);
    e->layers = c->enc_layers;
    e->model.layers = c->enc_layers;
    e->model.heads = c->shape.heads;
    e->model.causal = false;
    e->model.scale = SCALE_NONE;
    if (attn_ckpt_reset_weights(e, c->enc_layers, err))
        return -1;
    for (int L = 0; L < c->enc_layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &e->weights : &e->more_weights[L - 1];
        if (read_sublayer(w, ld->b, "encoder.block.", L, "layer.0.SelfAttention.", 0, "layer.1.", c,
                          arch, err))
            return -1;
    }
    struct attn_scene_weights *last =
        c->enc_layers == 1 ? &e->weights : &e->more_weights[c->enc_layers - 2];
    return read_stack_ends(e, last, ld->b, "encoder.", c, arch, err);
}

static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, err))
        return -1;
    if (attn_family_encdec_check(ld, c.dec_layers, err) ||
        attn_family_prologue(ld, &c.shape, &c, err) || attn_family_encdec_target(ld, c.start, err))
        return -1;
    const char *arch = ld->family->name;
    set_stack(s, &c, true);
    s->unembed_scale = c.shape.tied ? 1.0 / sqrt((double)c.shape.d) : 0.0;
    for (int L = 0; L < c.dec_layers; L++) {
        struct attn_scene_weights *self = 2 * L == 0 ? &s->weights : &s->more_weights[2 * L - 1];
        struct attn_scene_weights *cross = &s->more_weights[2 * L];
        s->sublayer[2 * L] = SUB_SELF;
        s->sublayer[2 * L + 1] = SUB_CROSS;
        if (read_sublayer(self, b, "decoder.block.", L, "layer.0.SelfAttention.", 0, NULL, &c, arch,
                          err) ||
            read_sublayer(cross, b, "decoder.block.", L, "layer.1.EncDecAttention.", 1, "layer.2.",
                          &c, arch, err))
            return -1;
    }
    if (read_stack_ends(s, &s->more_weights[2 * c.dec_layers - 2], b, "decoder.", &c, arch, err) ||
        load_encoder(ld, &c, err) || attn_ckpt_finish(b, s, ld->path, arch, err))
        return -1;
    return attn_family_encdec_finish(ld, err);
}

static const struct family_class CLASSES[] = {
    {"T5ForConditionalGeneration", "t5", 0},
    {NULL, NULL, 0},
};
static const char *const OUTSIDE[] = {"lm_head.weight", NULL};

/* The names have no prefix; lm_head is outside them. */
/* each stack's embed_tokens: tied to shared */
static const char *const EMBED_TIES[] = {"encoder.embed_tokens.weight",
                                         "decoder.embed_tokens.weight", NULL};

const struct attn_family attn_family_t5 = {
    .name = "t5",
    .classes = CLASSES,
    .variants = VARIANTS,
    .keys = KEYS,
    .n_keys = sizeof(KEYS) / sizeof(KEYS[0]),
    .names = {.prefix = "",
              .outside = OUTSIDE,
              .embed = "shared.weight",
              .embed_ties = EMBED_TIES,
              .unembed = "lm_head.weight",
              .known = known},
    .load = load,
    .encoder_decoder = true,
};
