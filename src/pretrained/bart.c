/* bart: the BART family, its row of the registry (family.h): encoder-decoders of post-norm blocks,
 * BART itself and Marian (the opus-mt translators), which transformers writes as a copy of BART
 * with other defaults: a variant here, as HACKING.md says of a family that renames another.
 *
 * BartForConditionalGeneration (names under "model."), BartModel (none), MarianMTModel ("model."):
 * shared (both stacks' embeddings), encoder.embed_positions (BART's learned table, read from
 * position 2 on; Marian's sinusoidal one, stored), BART's encoder.layernorm_embedding, and
 * encoder.layers.L.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
 * final_layer_norm}; the decoder's the same plus encoder_attn (cross-attention) and
 * encoder_attn_layer_norm; final_logits_bias and lm_head (tied to shared) outside. The blocks are
 * post-norm: h = LN(h + attn(h)), then LN(h + fc2(act(fc1(h)))); the scores are divided by
 * sqrt(head_dim); Marian multiplies the embeddings by sqrt(d_model) (scale_embedding). Neither
 * stack ends in a norm.
 *
 * The scene is the decoder (the target, after decoder_start_token_id), its layer L two of the
 * engine's: 2L its self-attention (SUB_SELF: LN(x + attn)), 2L + 1 its cross-attention and FFN
 * (SUB_CROSS); s->encoder is the encoder (the source, with the tokenizer's template).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretrained/family.h"

enum { BART, MARIAN };
#define B (1u << BART)
#define M (1u << MARIAN)

/* config.json's keys: transformers' BartConfig and MarianConfig, and the keys of the fairseq
 * conversions that transformers' modelling reads no more (add_final_layer_norm,
 * normalize_before, normalize_embedding, static_position_embeddings, add_bias_logits,
 * extra_pos_embeddings (opus-mt's configs have all six): inert, as there; an mBART-style final norm
 * would be a tensor no variant knows, and is refused). */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"d_model", KEY_READ, 0, NULL, NULL},
    {"encoder_layers", KEY_READ, 0, NULL, NULL},
    {"decoder_layers", KEY_READ, 0, NULL, NULL},
    {"encoder_attention_heads", KEY_READ, 0, NULL, NULL},
    {"decoder_attention_heads", KEY_READ, 0, NULL, NULL},
    {"encoder_ffn_dim", KEY_READ, 0, NULL, NULL},
    {"decoder_ffn_dim", KEY_READ, 0, NULL, NULL},
    {"activation_function", KEY_READ, 0, NULL, NULL},
    {"max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"scale_embedding", KEY_READ, 0, NULL, NULL},
    {"is_encoder_decoder", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    {"decoder_start_token_id", KEY_READ, 0, NULL, NULL},
    {"decoder_vocab_size", KEY_READ, M, NULL, NULL},
    {"share_encoder_decoder_embeddings", KEY_READ, M, NULL, NULL},
    {"num_hidden_layers", KEY_INERT, 0, NULL, NULL}, /* encoder_layers again */
    {"dropout", KEY_INERT, 0, NULL, NULL},           /* dropout: in training only */
    {"attention_dropout", KEY_INERT, 0, NULL, NULL},
    {"activation_dropout", KEY_INERT, 0, NULL, NULL},
    {"classifier_dropout", KEY_INERT, 0, NULL, NULL},
    {"classif_dropout", KEY_INERT, 0, NULL, NULL},
    {"encoder_layerdrop", KEY_INERT, 0, NULL, NULL},
    {"decoder_layerdrop", KEY_INERT, 0, NULL, NULL},
    {"init_std", KEY_INERT, 0, NULL, NULL},
    {"add_final_layer_norm", KEY_INERT, 0, NULL, NULL},
    {"normalize_before", KEY_INERT, 0, NULL, NULL},
    {"normalize_embedding", KEY_INERT, 0, NULL, NULL},
    {"static_position_embeddings", KEY_INERT, 0, NULL, NULL},
    {"add_bias_logits", KEY_INERT, 0, NULL, NULL},
    {"extra_pos_embeddings", KEY_INERT, 0, NULL, NULL},
};

static const struct family_variant VARIANTS[] = {
    [BART] = {"BartConfig", "BART"},
    [MARIAN] = {"MarianConfig", "Marian"},
};

/* One stack's sizes. */
struct stack {
    int layers, heads, ffn;
};

struct config {
    struct family_shape shape; /* d, layers (the decoder's, two engine layers each), heads */
    struct stack enc, dec;
    int positions, start;
    bool scale;
    enum attn_activation act;
    int variant;
};

static int read_act(struct config *g, struct ckpt_config *c, struct diag *err)
{
    json_t *v = json_object_get(c->root, "activation_function");
    const char *a = v && json_is_string(v) ? json_string_value(v) : v ? "" : "gelu";
    char got[64];
    if (strcmp(a, "gelu") == 0)
        g->act = ACT_GELU;
    else if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0)
        g->act = ACT_GELU_TANH;
    else if (strcmp(a, "relu") == 0)
        g->act = ACT_RELU;
    else if (strcmp(a, "swish") == 0 || strcmp(a, "silu") == 0)
        g->act = ACT_SILU;
    else
        return attn_ckpt_config_error(c, "activation_function", NULL, err,
                                      "'activation_function' is %s: attnscope computes gelu, "
                                      "gelu_new, relu and swish",
                                      attn_ckpt_show_value(got, sizeof(got), v));
    return 0;
}

static int read_config(struct config *g, struct ckpt_config *c, int variant, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    g->variant = variant;
    /* the configuration classes' defaults (bart-large's; Marian's own) */
    sh->d = variant == MARIAN ? 512 : 1024;
    g->enc = g->dec =
        variant == MARIAN ? (struct stack){12, 16, 4096} : (struct stack){12, 16, 4096};
    g->positions = 1024;
    g->start = -1;
    g->scale = variant == MARIAN;
    sh->tied = sh->tied_default = true;
    bool enc_dec = true, share = true;
    int dec_vocab = 0;
    struct ckpt_int ints[] = {
        {.key = "d_model", .min = 1, .max = SCENE_MAX_DIM, .what = "the width"},
        {.key = "encoder_layers", .min = 1, .max = SCENE_MAX_LAYERS, .what = "layers"},
        {.key = "decoder_layers",
         .min = 1,
         .max = SCENE_MAX_LAYERS / 2,
         .what = "the decoder's layers (two of attnscope's each)"},
        {.key = "encoder_attention_heads", .min = 1, .max = SCENE_MAX_HEADS, .what = "heads"},
        {.key = "decoder_attention_heads", .min = 1, .max = SCENE_MAX_HEADS, .what = "heads"},
        {.key = "encoder_ffn_dim", .min = 1, .max = SCENE_MAX_FFN_HIDDEN, .what = "a width"},
        {.key = "decoder_ffn_dim", .min = 1, .max = SCENE_MAX_FFN_HIDDEN, .what = "a width"},
        {.key = "max_position_embeddings", .min = 1, .max = INT32_MAX, .what = "positions"},
        {.key = "decoder_start_token_id",
         .min = 0,
         .max = INT32_MAX,
         .what = "a token id",
         .required = true},
        {.key = "decoder_vocab_size", .min = 1, .max = INT32_MAX, .what = "the vocabulary"},
    };
    int *dst[] = {&sh->d,      &g->enc.layers, &g->dec.layers, &g->enc.heads, &g->dec.heads,
                  &g->enc.ffn, &g->dec.ffn,    &g->positions,  &g->start,     &dec_vocab};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (attn_ckpt_config_int(dst[i], c, ints[i], err))
            return -1;
    if (attn_ckpt_config_bool(&g->scale, c, "scale_embedding", err) ||
        attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err) ||
        attn_ckpt_config_bool(&enc_dec, c, "is_encoder_decoder", err) ||
        attn_ckpt_config_bool(&share, c, "share_encoder_decoder_embeddings", err) ||
        read_act(g, c, err))
        return -1;
    if (!enc_dec)
        return attn_ckpt_config_error(c, "is_encoder_decoder", NULL, err,
                                      "'is_encoder_decoder' is false: attnscope reads %s as the "
                                      "encoder-decoder it is",
                                      VARIANTS[variant].shown);
    if (!share)
        return attn_ckpt_config_error(c, "share_encoder_decoder_embeddings", NULL, err,
                                      "'share_encoder_decoder_embeddings' is false: a decoder "
                                      "vocabulary of its own is not something attnscope reads");
    int vocab = 0;
    if (dec_vocab > 0 &&
        attn_ckpt_config_int(
            &vocab, c,
            (struct ckpt_int){
                .key = "vocab_size", .min = 1, .max = INT32_MAX, .what = "the vocabulary"},
            err) == 0 &&
        vocab > 0 && dec_vocab != vocab)
        return attn_ckpt_config_error(c, "decoder_vocab_size", NULL, err,
                                      "'decoder_vocab_size' %d is not 'vocab_size' %d: a decoder "
                                      "vocabulary of its own is not something attnscope reads",
                                      dec_vocab, vocab);
    for (int k = 0; k < 2; k++) {
        const struct stack *st = k ? &g->dec : &g->enc;
        if (sh->d % st->heads != 0)
            return attn_ckpt_config_error(
                c, k ? "decoder_attention_heads" : "encoder_attention_heads", NULL, err,
                "%d heads do not divide 'd_model' %d", st->heads, sh->d);
    }
    sh->layers = 2 * g->dec.layers; /* the engine's: each decoder layer's two sublayers */
    sh->heads = g->dec.heads;
    sh->kv_heads = g->dec.heads;
    sh->width_key = "d_model";
    sh->heads_fixed = false;
    sh->positions = g->positions;
    sh->positions_key = "max_position_embeddings";
    sh->learned = true;
    sh->causal = true;
    sh->scale = SCALE_SQRT_DK;
    return 0;
}

/* A layer's tensors (the part after "layers.L."): stack 0 the encoder, 1 the decoder. */
static bool layer_known(int stack, const char *rest)
{
    static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    static const char *const other[] = {"self_attn_layer_norm", "fc1", "fc2", "final_layer_norm",
                                        "encoder_attn_layer_norm"};
    static const char *const kinds[] = {"weight", "bias"};
    char name[64];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 4; i++) {
            snprintf(name, sizeof(name), "self_attn.%s.%s", attn[i], kinds[k]);
            if (strcmp(rest, name) == 0)
                return true;
            snprintf(name, sizeof(name), "encoder_attn.%s.%s", attn[i], kinds[k]);
            if (stack == 1 && strcmp(rest, name) == 0)
                return true;
        }
        for (int i = 0; i < (stack == 1 ? 5 : 4); i++) {
            snprintf(name, sizeof(name), "%s.%s", other[i], kinds[k]);
            if (strcmp(rest, name) == 0)
                return true;
        }
    }
    return false;
}

/* A tensor the mapping reads, or one it knows to skip: each stack's embed_tokens, which
 * transformers ties to shared (older exports carry a copy). */
static bool known(const struct family_load *ld, const char *name)
{
    const struct config *g = ld->config;
    static const char *const top[] = {"shared.weight",
                                      "encoder.embed_tokens.weight",
                                      "decoder.embed_tokens.weight",
                                      "encoder.embed_positions.weight",
                                      "decoder.embed_positions.weight",
                                      "encoder.layernorm_embedding.weight",
                                      "encoder.layernorm_embedding.bias",
                                      "decoder.layernorm_embedding.weight",
                                      "decoder.layernorm_embedding.bias"};
    size_t n_top = g->variant == MARIAN ? 5 : sizeof(top) / sizeof(top[0]);
    if (attn_family_name_in(name, top, n_top))
        return true;
    const char *rest = attn_family_layer_part(name, "encoder.layers.", g->enc.layers);
    if (rest)
        return layer_known(0, rest);
    rest = attn_family_layer_part(name, "decoder.layers.", g->dec.layers);
    return rest && layer_known(1, rest);
}

/* What a stack is: post-norm blocks of st's heads and FFN, the positions read from its table
 * (BART's from position 2), BART's embedding LayerNorm. */
static void set_stack(struct attn_scene *s, const struct config *c, const struct stack *st,
                      bool decoder)
{
    s->pos.kind = POS_LEARNED;
    s->pos.max_len = c->variant == BART ? c->positions + 2 : c->positions;
    s->pos.offset = c->variant == BART ? 2 : 0; /* BartLearnedPositionalEmbedding's offset */
    s->embed.scale = c->scale ? sqrt((double)c->shape.d) : 0.0;
    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = c->shape.d;
    a->heads = st->heads;
    a->kv_heads = st->heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_SEPARATE;
    a->qkv_bias = true;
    a->out_proj = TRI_TRUE;
    a->out_bias = true;
    a->scale = SCALE_DEFAULT;
    a->causal = decoder;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_POST,
                                   .norm = NORM_LAYER,
                                   .norm_eps = 1e-5,
                                   .ffn_hidden = st->ffn,
                                   .activation = c->act,
                                   .final_norm = false};
}

/* The embeddings besides the words: a stack's position table and (BART) its LayerNorm. stack:
 * "encoder.", "decoder.". */
static int read_embeddings(struct attn_scene *s, struct family_load *ld, const char *stack,
                           const struct config *c, struct diag *err)
{
    char full[200];
    int d = c->shape.d;
    attn_matrix_free(&s->pos.table);
    attn_matrix_free(&s->embed.norm_weight);
    attn_matrix_free(&s->embed.norm_bias);
    snprintf(full, sizeof(full), "%s%sembed_positions.weight", ld->prefix, stack);
    if (attn_ckpt_tensor(&s->pos.table, ld->b, full, s->pos.max_len, d, CKPT_TABLE,
                         ld->family->name, err))
        return -1;
    if (c->variant != BART)
        return 0;
    snprintf(full, sizeof(full), "%s%slayernorm_embedding.weight", ld->prefix, stack);
    if (attn_ckpt_tensor(&s->embed.norm_weight, ld->b, full, 1, d, CKPT_VECTOR, ld->family->name,
                         err))
        return -1;
    snprintf(full, sizeof(full), "%s%slayernorm_embedding.bias", ld->prefix, stack);
    return attn_ckpt_tensor(&s->embed.norm_bias, ld->b, full, 1, d, CKPT_VECTOR, ld->family->name,
                            err);
}

/* Layer L's attention ("self_attn", "encoder_attn") and its norm, and with ffn the FFN and
 * final_layer_norm, into w. stem: "model.encoder.layers.". */
static int read_sublayer(struct attn_scene_weights *w, struct family_load *ld, const char *stem,
                         int L, const char *attn, const char *norm, bool ffn, int hidden,
                         struct diag *err)
{
    int d = ld->config ? ((const struct config *)ld->config)->shape.d : 0, h = hidden;
    char n[8][64];
    static const char *const proj[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    for (int i = 0; i < 4; i++) {
        snprintf(n[2 * i], sizeof(n[0]), "%s.%s.weight", attn, proj[i]);
        snprintf(n[2 * i + 1], sizeof(n[0]), "%s.%s.bias", attn, proj[i]);
    }
    char nw[64], nb[64];
    snprintf(nw, sizeof(nw), "%s.weight", norm);
    snprintf(nb, sizeof(nb), "%s.bias", norm);
    const struct family_part parts[] = {
        {&w->query, n[0], d, d, CKPT_LINEAR, true},
        {&w->query_bias, n[1], 1, d, CKPT_VECTOR, true},
        {&w->key, n[2], d, d, CKPT_LINEAR, true},
        {&w->key_bias, n[3], 1, d, CKPT_VECTOR, true},
        {&w->value, n[4], d, d, CKPT_LINEAR, true},
        {&w->value_bias, n[5], 1, d, CKPT_VECTOR, true},
        {&w->out, n[6], d, d, CKPT_LINEAR, true},
        {&w->out_bias, n[7], 1, d, CKPT_VECTOR, true},
        /* post-norm: norm1 after attention's residual, norm2 after the FFN's */
        {&w->norm1_weight, nw, 1, d, CKPT_VECTOR, true},
        {&w->norm1_bias, nb, 1, d, CKPT_VECTOR, true},
        {&w->ffn_W1, "fc1.weight", d, h, CKPT_LINEAR, ffn},
        {&w->ffn_b1, "fc1.bias", 1, h, CKPT_VECTOR, ffn},
        {&w->ffn_W2, "fc2.weight", h, d, CKPT_LINEAR, ffn},
        {&w->ffn_b2, "fc2.bias", 1, d, CKPT_VECTOR, ffn},
        {&w->norm2_weight, "final_layer_norm.weight", 1, d, CKPT_VECTOR, ffn},
        {&w->norm2_bias, "final_layer_norm.bias", 1, d, CKPT_VECTOR, ffn},
    };
    if (attn_family_read_parts(ld->b, ld->prefix, stem, L, parts, sizeof(parts) / sizeof(parts[0]),
                               ld->family->name, err))
        return -1;
    w->set = true;
    return 0;
}

/* The encoder's scene (made by the scene file from text.source): the word embeddings borrowed
 * from the decoder's, its own positions, layers and heads. */
static int load_encoder(struct family_load *ld, const struct config *c, struct diag *err)
{
    struct attn_scene *e = ld->s->encoder;
    if (attn_family_encdec_source(ld, c->shape.d, err))
        return -1;
    set_stack(e, c, &c->enc, false);
    if (e->n_tokens + e->pos.offset > e->pos.max_len)
        return attn_diag_set(err, "text", "the source's %d tokens are past the %d positions (%s)",
                             e->n_tokens, c->positions, "max_position_embeddings");
    e->layers = c->enc.layers;
    e->model.layers = c->enc.layers;
    e->model.heads = c->enc.heads;
    e->model.causal = false;
    e->model.scale = SCALE_SQRT_DK;
    e->model.positions = e->pos.max_len;
    e->model.positions_key = "max_position_embeddings";
    if (read_embeddings(e, ld, "encoder.", c, err) ||
        attn_ckpt_reset_weights(e, c->enc.layers, err))
        return -1;
    for (int L = 0; L < c->enc.layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &e->weights : &e->more_weights[L - 1];
        if (read_sublayer(w, ld, "encoder.layers.", L, "self_attn", "self_attn_layer_norm", true,
                          c->enc.ffn, err))
            return -1;
    }
    return 0;
}

static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, ld->variant, err))
        return -1;
    const char *shown = VARIANTS[c.variant].shown;
    if (attn_family_encdec_check(ld, c.dec.layers, err))
        return -1;
    /* as the scene writes them back: the checkpoint's own */
    if (ld->o->heads && s->attn.heads != c.dec.heads)
        return attn_diag_set(err, "attention.heads",
                             "heads %d: an encoder-decoder's heads are its stacks' own (the "
                             "decoder's %d: remove it)",
                             s->attn.heads, c.dec.heads);
    int offset = c.variant == BART ? 2 : 0; /* the table's first row a position reads */
    if (s->pos.offset != 0 && s->pos.offset != offset)
        return attn_diag_set(err, "positional.offset",
                             "offset %d: %s's positions are its table's own (rows from %d on: "
                             "remove it)",
                             s->pos.offset, shown, offset);
    if (attn_family_prologue(ld, &c.shape, &c, err))
        return -1;
    const char *arch = ld->family->name;
    if (attn_family_encdec_target(ld, c.start, err))
        return -1;
    set_stack(s, &c, &c.dec, true);
    if (s->n_tokens + s->pos.offset > s->pos.max_len)
        return attn_diag_set(err, "text", "the target's %d tokens are past the %d positions (%s)",
                             s->n_tokens, c.positions, "max_position_embeddings");
    if (read_embeddings(s, ld, "decoder.", &c, err))
        return -1;
    /* the table's rows: BART's first two are no position's (its offset), so every one of
       max_position_embeddings is usable (the context: attn_scene_context) */
    s->model.positions = s->pos.max_len;
    /* final_logits_bias: a (1, vocab) buffer every export carries (zeros unless trained) */
    attn_matrix_free(&s->unembed_bias);
    if (attn_ckpt_has(b, "final_logits_bias") &&
        attn_ckpt_tensor(&s->unembed_bias, b, "final_logits_bias", 1, ld->vocab, CKPT_TABLE, arch,
                         err))
        return -1;
    for (int L = 0; L < c.dec.layers; L++) {
        struct attn_scene_weights *self = 2 * L == 0 ? &s->weights : &s->more_weights[2 * L - 1];
        struct attn_scene_weights *cross = &s->more_weights[2 * L];
        s->sublayer[2 * L] = SUB_SELF;
        s->sublayer[2 * L + 1] = SUB_CROSS;
        if (read_sublayer(self, ld, "decoder.layers.", L, "self_attn", "self_attn_layer_norm",
                          false, c.dec.ffn, err) ||
            read_sublayer(cross, ld, "decoder.layers.", L, "encoder_attn",
                          "encoder_attn_layer_norm", true, c.dec.ffn, err))
            return -1;
    }
    if (load_encoder(ld, &c, err) || attn_ckpt_finish(b, s, ld->path, arch, err))
        return -1;
    return attn_family_encdec_finish(ld, err);
}

static const struct family_class CLASSES[] = {
    {"BartForConditionalGeneration", "bart", BART},
    {"BartModel", NULL, BART},
    {"MarianMTModel", "marian", MARIAN},
    {NULL, NULL, 0},
};
static const char *const OUTSIDE[] = {"lm_head.weight", "final_logits_bias", NULL};
/* each stack's embed_tokens: tied to shared */
static const char *const EMBED_TIES[] = {"encoder.embed_tokens.weight",
                                         "decoder.embed_tokens.weight", NULL};

/* BartForConditionalGeneration's and MarianMTModel's names start with "model.", BartModel's do
 * not; lm_head and final_logits_bias are outside both. */
const struct attn_family attn_family_bart = {
    .name = "bart",
    .classes = CLASSES,
    .variants = VARIANTS,
    .keys = KEYS,
    .n_keys = sizeof(KEYS) / sizeof(KEYS[0]),
    .names = {.prefix = "model.",
              .outside = OUTSIDE,
              .embed = "shared.weight",
              .embed_ties = EMBED_TIES,
              .unembed = "lm_head.weight",
              .known = known},
    .load = load,
    .encoder_decoder = true,
};
