/* bert: the BERT family, its row of the registry (family.h).
 *
 * BertModel, BertForMaskedLM and BertForPreTraining, with or without the "bert." prefix:
 * embeddings.{word,position,token_type}_embeddings and embeddings.LayerNorm, then per layer
 * encoder.layer.L.attention.self.{query,key,value}, attention.output.{dense,LayerNorm},
 * intermediate.dense and output.{dense,LayerNorm}. Attention is bidirectional, the block post-norm
 * LayerNorm with GELU (erf). The MLM head, cls.predictions (transform.dense, its GELU and
 * LayerNorm, the decoder tied to the word embeddings, and its bias), makes the scores of each
 * position's own token: masked-token predictions. The pooler and the next-sentence head are
 * skipped. Old checkpoints name a LayerNorm's weight and bias gamma and beta: both are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretrained/family.h"

struct config {
    struct family_shape shape; /* d, layers, heads, positions, tied, as trained */
    int inter, types;
    double eps;
    enum attn_activation act;
};

/* config.json's keys: transformers' BertConfig (5's, and 4's position_embedding_type), and
 * the keys of older exports that nothing reads. */
static const struct ckpt_key KEYS[] = {
    {"vocab_size", KEY_READ, 0, NULL, NULL},
    {"hidden_size", KEY_READ, 0, NULL, NULL},
    {"num_hidden_layers", KEY_READ, 0, NULL, NULL},
    {"num_attention_heads", KEY_READ, 0, NULL, NULL},
    {"intermediate_size", KEY_READ, 0, NULL, NULL},
    {"hidden_act", KEY_READ, 0, NULL, NULL},
    {"max_position_embeddings", KEY_READ, 0, NULL, NULL},
    {"type_vocab_size", KEY_READ, 0, NULL, NULL},
    {"layer_norm_eps", KEY_READ, 0, NULL, NULL},
    {"tie_word_embeddings", KEY_READ, 0, NULL, NULL},
    {"position_embedding_type", KEY_READ, 0, NULL, NULL},
    {"is_decoder", KEY_READ, 0, NULL, NULL},
    {"add_cross_attention", KEY_READ, 0, NULL, NULL},
    {"hidden_dropout_prob", KEY_INERT, 0, NULL, NULL}, /* dropout: in training only */
    {"attention_probs_dropout_prob", KEY_INERT, 0, NULL, NULL},
    {"classifier_dropout", KEY_INERT, 0, NULL, NULL},
    /* Google's original exports (bert-base-chinese): the pooler's, which nothing reads */
    {"directionality", KEY_INERT, 0, NULL, NULL},
    {"pooler_fc_size", KEY_INERT, 0, NULL, NULL},
    {"pooler_num_attention_heads", KEY_INERT, 0, NULL, NULL},
    {"pooler_num_fc_layers", KEY_INERT, 0, NULL, NULL},
    {"pooler_size_per_head", KEY_INERT, 0, NULL, NULL},
    {"pooler_type", KEY_INERT, 0, NULL, NULL},
};

static int read_config(struct config *g, struct ckpt_config *c, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    struct family_shape *sh = &g->shape;
    if (attn_family_read_sizes(sh, &g->inter, c, err) ||
        attn_ckpt_config_int(&sh->positions, c,
                             (struct ckpt_int){.key = "max_position_embeddings",
                                               .min = 1,
                                               .max = SCENE_MAX_POSITION,
                                               .what = "positions",
                                               .required = true},
                             err))
        return -1;
    if (sh->d % sh->heads != 0)
        return attn_ckpt_config_error(c, "num_attention_heads", NULL, err,
                                      "'num_attention_heads' %d does not divide 'hidden_size' %d",
                                      sh->heads, sh->d);
    g->types = 2;
    g->eps = 1e-12;
    sh->tied = sh->tied_default = true; /* the MLM decoder is the word embeddings */
    if (attn_ckpt_config_int(
            &g->types, c,
            (struct ckpt_int){
                .key = "type_vocab_size", .min = 1, .max = 1024, .what = "the token types"},
            err) ||
        attn_ckpt_config_number(&g->eps, c,
                                (struct ckpt_number){.key = "layer_norm_eps",
                                                     .above = 0,
                                                     .below = 1,
                                                     .what = "a number between 0 and 1"},
                                err) ||
        attn_ckpt_config_bool(&sh->tied, c, "tie_word_embeddings", err))
        return -1;
    char got[64];
    json_t *act = json_object_get(c->root, "hidden_act");
    const char *a = json_is_string(act) ? json_string_value(act) : act ? "" : "gelu";
    if (strcmp(a, "gelu") == 0)
        g->act = ACT_GELU;
    else if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0)
        g->act = ACT_GELU_TANH;
    else if (strcmp(a, "relu") == 0)
        g->act = ACT_RELU;
    else
        return attn_ckpt_config_error(c, "hidden_act", NULL, err,
                                      "'hidden_act' %s is not one attnscope has (gelu, gelu_new, "
                                      "relu)",
                                      attn_ckpt_show_value(got, sizeof(got), act));
    json_t *pos = json_object_get(c->root, "position_embedding_type");
    if (pos && !(json_is_string(pos) && strcmp(json_string_value(pos), "absolute") == 0))
        return attn_ckpt_config_error(c, "position_embedding_type", NULL, err,
                                      "'position_embedding_type' is %s: attnscope reads absolute "
                                      "positions (a table)",
                                      attn_ckpt_show_value(got, sizeof(got), pos));
    static const char *const must_be_false[] = {"is_decoder", "add_cross_attention"};
    for (int i = 0; i < 2; i++) {
        bool on = false;
        if (attn_ckpt_config_bool(&on, c, must_be_false[i], err))
            return -1;
        if (on)
            return attn_ckpt_config_error(c, must_be_false[i], NULL, err,
                                          "'%s' is true: attnscope reads BERT as an encoder",
                                          must_be_false[i]);
    }
    sh->width_key = "hidden_size";
    sh->positions_key = "max_position_embeddings";
    sh->learned = true;
    sh->causal = false; /* an encoder: every token sees every other */
    sh->scale = SCALE_SQRT_DK;
    return 0;
}

/* Whether the checkpoint names its LayerNorms' parameters gamma and beta (older exports). */
static bool old_names(const struct ckpt_backing *b, const char *prefix)
{
    char n[96];
    snprintf(n, sizeof(n), "%sembeddings.LayerNorm.gamma", prefix);
    return attn_ckpt_has(b, n);
}

/* name with a LayerNorm's ".weight"/".bias" as the checkpoint spells them. */
static void norm_name(char *out, size_t size, const char *prefix, const char *name, bool old)
{
    size_t n = strlen(name);
    if (old && n > 7 && strcmp(name + n - 7, ".weight") == 0 && strstr(name, "LayerNorm"))
        snprintf(out, size, "%s%.*s.gamma", prefix, (int)(n - 7), name);
    else if (old && n > 5 && strcmp(name + n - 5, ".bias") == 0 && strstr(name, "LayerNorm"))
        snprintf(out, size, "%s%.*s.beta", prefix, (int)(n - 5), name);
    else
        snprintf(out, size, "%s%s", prefix, name);
}

/* A tensor the mapping reads, or knows to skip: the pooler, the next-sentence head, the MLM
 * decoder's copies of what it ties, the position_ids buffer. name without the prefix (the cls.
 * ones have none). */
static bool known(const struct family_load *ld, const char *name)
{
    const struct config *g = ld->config;
    bool old = old_names(ld->b, ld->prefix);
    static const char *const top[] = {
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
        "embeddings.position_ids",
        "pooler.dense.weight",
        "pooler.dense.bias",
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
        "cls.predictions.decoder.weight",
        "cls.predictions.decoder.bias",
        "cls.seq_relationship.weight",
        "cls.seq_relationship.bias",
    };
    static const char *const per_layer[] = {
        "attention.self.query.weight",
        "attention.self.query.bias",
        "attention.self.key.weight",
        "attention.self.key.bias",
        "attention.self.value.weight",
        "attention.self.value.bias",
        "attention.output.dense.weight",
        "attention.output.dense.bias",
        "attention.output.LayerNorm.weight",
        "attention.output.LayerNorm.bias",
        "intermediate.dense.weight",
        "intermediate.dense.bias",
        "output.dense.weight",
        "output.dense.bias",
        "output.LayerNorm.weight",
        "output.LayerNorm.bias",
    };
    char spelled[128];
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
        norm_name(spelled, sizeof(spelled), "", top[i], old);
        if (strcmp(name, spelled) == 0)
            return true;
    }
    const char *rest = attn_family_layer_part(name, "encoder.layer.", g->shape.layers);
    for (size_t i = 0; rest && i < sizeof(per_layer) / sizeof(per_layer[0]); i++) {
        norm_name(spelled, sizeof(spelled), "", per_layer[i], old);
        if (strcmp(rest, spelled) == 0)
            return true;
    }
    return false;
}

/* The block BERT is made of, its other embeddings, its MLM head and every layer's parameters. */
static int load(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    struct config c;
    if (read_config(&c, ld->cfg, err) || attn_family_prologue(ld, &c.shape, &c, err))
        return -1;
    const char *prefix = ld->prefix, *arch = ld->family->name;
    bool old = old_names(b, prefix);
    int d = c.shape.d, h = c.inter, vocab = ld->vocab;
    char full[200];

    /* the embeddings besides the words: positions and token types, their LayerNorm */
    attn_matrix_free(&s->embed.types);
    attn_matrix_free(&s->embed.norm_weight);
    attn_matrix_free(&s->embed.norm_bias);
    attn_matrix_free(&s->pos.table);
    struct {
        struct attn_matrix *dst;
        const char *name;
        int rows;
        enum ckpt_form form;
    } emb[] = {
        {&s->pos.table, "embeddings.position_embeddings.weight", c.shape.positions, CKPT_TABLE},
        {&s->embed.types, "embeddings.token_type_embeddings.weight", c.types, CKPT_TABLE},
        {&s->embed.norm_weight, "embeddings.LayerNorm.weight", 1, CKPT_VECTOR},
        {&s->embed.norm_bias, "embeddings.LayerNorm.bias", 1, CKPT_VECTOR},
    };
    for (size_t i = 0; i < sizeof(emb) / sizeof(emb[0]); i++) {
        norm_name(full, sizeof(full), prefix, emb[i].name, old);
        if (attn_ckpt_tensor(emb[i].dst, b, full, emb[i].rows, d, emb[i].form, arch, err))
            return -1;
    }
    s->pos.kind = POS_LEARNED;
    s->pos.max_len = c.shape.positions;

    /* the MLM head, when the checkpoint has one: masked-token predictions */
    attn_matrix_free(&s->unembed);
    attn_matrix_free(&s->unembed_bias);
    attn_matrix_free(&s->head.dense);
    attn_matrix_free(&s->head.dense_bias);
    attn_matrix_free(&s->head.norm_weight);
    attn_matrix_free(&s->head.norm_bias);
    s->masked_lm = false;
    s->mask_id = -1;
    if (attn_ckpt_has(b, "cls.predictions.transform.dense.weight")) {
        struct {
            struct attn_matrix *dst;
            const char *name;
            int rows, cols;
            enum ckpt_form form;
        } head[] = {
            {&s->head.dense, "cls.predictions.transform.dense.weight", d, d, CKPT_LINEAR},
            {&s->head.dense_bias, "cls.predictions.transform.dense.bias", 1, d, CKPT_VECTOR},
            {&s->head.norm_weight, "cls.predictions.transform.LayerNorm.weight", 1, d, CKPT_VECTOR},
            {&s->head.norm_bias, "cls.predictions.transform.LayerNorm.bias", 1, d, CKPT_VECTOR},
            {&s->unembed_bias, "cls.predictions.bias", 1, vocab, CKPT_VECTOR},
        };
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
            norm_name(full, sizeof(full), "", head[i].name, old);
            if (attn_ckpt_tensor(head[i].dst, b, full, head[i].rows, head[i].cols, head[i].form,
                                 arch, err))
                return -1;
        }
        s->head.act = c.act;
        if (c.shape.tied)
            s->unembed = s->embed.rows; /* the decoder is the word embeddings */
        else if (attn_ckpt_tensor(&s->unembed, b, "cls.predictions.decoder.weight", vocab, d,
                                  CKPT_MATRIX, arch, err))
            return -1;
        s->masked_lm = true;
        s->mask_id = attn_ckpt_token_id(b, ld->family->mask_token);
    }

    struct attn_config *a = &s->attn;
    a->projection = PROJ_LINEAR;
    a->d_out = d;
    a->heads = ld->heads;
    a->layout = LAYOUT_SPLIT;
    a->qkv = QKV_SEPARATE;
    a->qkv_bias = true;
    a->out_proj = TRI_TRUE;
    a->out_bias = true;
    s->block = (struct attn_block){.on = true,
                                   .order = BLOCK_POST,
                                   .norm = NORM_LAYER,
                                   .norm_eps = c.eps,
                                   .ffn_hidden = h,
                                   .activation = c.act,
                                   .final_norm = false};

    for (int L = 0; L < ld->layers; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        struct {
            struct attn_matrix *dst;
            const char *name;
            int rows, cols;
            enum ckpt_form form;
        } parts[] = {
            {&w->query, "attention.self.query.weight", d, d, CKPT_LINEAR},
            {&w->query_bias, "attention.self.query.bias", 1, d, CKPT_VECTOR},
            {&w->key, "attention.self.key.weight", d, d, CKPT_LINEAR},
            {&w->key_bias, "attention.self.key.bias", 1, d, CKPT_VECTOR},
            {&w->value, "attention.self.value.weight", d, d, CKPT_LINEAR},
            {&w->value_bias, "attention.self.value.bias", 1, d, CKPT_VECTOR},
            {&w->out, "attention.output.dense.weight", d, d, CKPT_LINEAR},
            {&w->out_bias, "attention.output.dense.bias", 1, d, CKPT_VECTOR},
            {&w->norm1_weight, "attention.output.LayerNorm.weight", 1, d, CKPT_VECTOR},
            {&w->norm1_bias, "attention.output.LayerNorm.bias", 1, d, CKPT_VECTOR},
            {&w->ffn_W1, "intermediate.dense.weight", d, h, CKPT_LINEAR},
            {&w->ffn_b1, "intermediate.dense.bias", 1, h, CKPT_VECTOR},
            {&w->ffn_W2, "output.dense.weight", h, d, CKPT_LINEAR},
            {&w->ffn_b2, "output.dense.bias", 1, d, CKPT_VECTOR},
            {&w->norm2_weight, "output.LayerNorm.weight", 1, d, CKPT_VECTOR},
            {&w->norm2_bias, "output.LayerNorm.bias", 1, d, CKPT_VECTOR},
        };
        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
            char name[128];
            snprintf(name, sizeof(name), "encoder.layer.%d.%s", L, parts[i].name);
            norm_name(full, sizeof(full), prefix, name, old);
            if (attn_ckpt_tensor(parts[i].dst, b, full, parts[i].rows, parts[i].cols, parts[i].form,
                                 arch, err))
                return -1;
        }
        w->set = true;
    }
    return attn_ckpt_finish(b, s, ld->path, arch, err);
}

static const struct family_class CLASSES[] = {
    {"BertForMaskedLM", "bert", 0},
    {"BertModel", NULL, 0},
    {"BertForPreTraining", NULL, 0},
    {NULL, NULL, 0},
};
static const struct family_variant VARIANTS[] = {{"BertConfig", "BERT"}};
static const char *const OUTSIDE[] = {"cls.", NULL}; /* the MLM and next-sentence heads */

/* BertForMaskedLM's names start with "bert.", BertModel's do not. */
const struct attn_family attn_family_bert = {
    .name = "bert",
    .classes = CLASSES,
    .variants = VARIANTS,
    .keys = KEYS,
    .n_keys = sizeof(KEYS) / sizeof(KEYS[0]),
    .names = {.prefix = "bert.",
              .outside = OUTSIDE,
              .embed = "embeddings.word_embeddings.weight",
              .known = known},
    .load = load,
    .mask_token = "[MASK]",
};
