/* family: the reading every family shares (see family.h). */
#include "pretrained/family.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry of outside that name is (a whole name) or starts (an entry ending in '.'), or NULL. */
static const char *outside_entry(const char *const *outside, const char *name)
{
    for (; outside && *outside; outside++) {
        size_t n = strlen(*outside);
        if (n && (*outside)[n - 1] == '.' ? strncmp(name, *outside, n) == 0
                                          : strcmp(name, *outside) == 0)
            return *outside;
    }
    return NULL;
}

int attn_family_read_sizes(struct family_shape *sh, int *inter, const struct ckpt_config *c,
                           struct diag *err)
{
    return attn_ckpt_config_int(&sh->d, c,
                                (struct ckpt_int){.key = "hidden_size",
                                                  .min = 1,
                                                  .max = SCENE_MAX_DIM,
                                                  .what = "the width",
                                                  .required = true},
                                err) ||
                   attn_ckpt_config_int(&sh->layers, c,
                                        (struct ckpt_int){.key = "num_hidden_layers",
                                                          .min = 1,
                                                          .max = SCENE_MAX_LAYERS,
                                                          .what = "layers",
                                                          .required = true},
                                        err) ||
                   attn_ckpt_config_int(&sh->heads, c,
                                        (struct ckpt_int){.key = "num_attention_heads",
                                                          .min = 1,
                                                          .max = SCENE_MAX_HEADS,
                                                          .what = "heads",
                                                          .required = true},
                                        err) ||
                   attn_ckpt_config_int(inter, c,
                                        (struct ckpt_int){.key = "intermediate_size",
                                                          .min = 1,
                                                          .max = SCENE_MAX_FFN_HIDDEN,
                                                          .what = "the feed-forward width",
                                                          .required = true},
                                        err)
               ? -1
               : 0;
}

bool attn_family_name_in(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

const char *attn_family_layer_part(const char *name, const char *stem, int layers)
{
    size_t n = strlen(stem);
    int L, used = 0;
    if (strncmp(name, stem, n) != 0 || sscanf(name + n, "%d.%n", &L, &used) != 1 || used == 0 ||
        L < 0 || L >= layers)
        return NULL;
    char check[32];
    snprintf(check, sizeof(check), "%d.", L);
    return strncmp(name + n, check, strlen(check)) == 0 ? name + n + used : NULL;
}

int attn_family_read_parts(struct ckpt_backing *b, const char *prefix, const char *stem, int L,
                           const struct family_part *parts, size_t n, const char *arch,
                           struct diag *err)
{
    char full[240];
    for (size_t i = 0; i < n; i++) {
        if (!parts[i].wanted)
            continue;
        snprintf(full, sizeof(full), "%s%s%d.%s", prefix, stem, L, parts[i].name);
        if (attn_ckpt_tensor(parts[i].dst, b, full, parts[i].rows, parts[i].cols, parts[i].form,
                             arch, err))
            return -1;
    }
    return 0;
}

int attn_family_layer_types(bool *off, const struct ckpt_config *c, int layers, const bool *rule,
                            const char *rule_key, int rule_value, bool rule_given, int window,
                            const char *no_window, struct diag *err)
{
    json_t *types = json_object_get(c->root, "layer_types");
    char got[64];
    if (types && !json_is_null(types) &&
        (!json_is_array(types) || json_array_size(types) != (size_t)layers))
        return attn_ckpt_config_error(c, "layer_types", NULL, err,
                                      "'layer_types' is %s, not a list of the %d layers' attention",
                                      attn_ckpt_show_value(got, sizeof(got), types), layers);
    for (int L = 0; L < layers; L++) {
        bool slides = rule[L];
        if (json_is_array(types)) {
            json_t *t = json_array_get(types, (size_t)L);
            const char *name = json_is_string(t) ? json_string_value(t) : "";
            bool given = strcmp(name, "sliding_attention") == 0;
            if (!given && strcmp(name, "full_attention") != 0)
                return attn_ckpt_config_error(c, "layer_types", NULL, err,
                                              "layer %d is %s: attnscope computes full_attention "
                                              "and sliding_attention",
                                              L, attn_ckpt_show_value(got, sizeof(got), t));
            if (given && window == 0)
                return attn_ckpt_config_error(c, "layer_types", NULL, err,
                                              "layer %d is sliding_attention, but there is no "
                                              "window (%s)",
                                              L, no_window);
            if (rule_given && given != slides)
                return attn_ckpt_config_error(
                    c, "layer_types", NULL, err,
                    "'layer_types' makes layer %d %s, '%s' %d makes it %s: the two formats "
                    "disagree",
                    L, given ? "sliding_attention" : "full_attention", rule_key, rule_value,
                    slides ? "sliding_attention" : "full_attention");
            slides = given;
        }
        off[L] = !slides;
    }
    return 0;
}

/* Every tensor is one the family reads or knows to skip: a tensor of another model, or of more
 * layers than config.json says, is refused by name. */
static int check_names(const struct family_load *ld, struct diag *err)
{
    const struct family_names *nm = &ld->family->names;
    const struct st_set *st = &ld->b->st;
    size_t plen = strlen(ld->prefix);
    for (int i = 0; i < st->n; i++) {
        const char *name = st->refs[i].name, *out = outside_entry(nm->outside, name);
        if (out && out[strlen(out) - 1] != '.') /* the reader's own */
            continue;
        bool known = out ? nm->known(ld, name)
                         : strncmp(name, ld->prefix, plen) == 0 && nm->known(ld, name + plen);
        char shown[200];
        if (!known)
            return attn_diag_file(err, st->path, "tensor '%s' is not part of %s (arch %s)",
                                  attn_ckpt_show_name(shown, sizeof(shown), name),
                                  ld->family->variants[ld->variant].shown, ld->family->name);
    }
    return 0;
}

/* The embedding table, its rows the vocabulary config.json says; and the unembedding. */
static int read_tables(struct family_load *ld, const struct family_shape *sh, struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    const struct family_names *nm = &ld->family->names;
    const char *arch = ld->family->name;
    char full[200];
    snprintf(full, sizeof(full), "%s%s", ld->prefix, nm->embed);
    for (int i = 0; nm->embed_ties && nm->embed_ties[i] && !attn_ckpt_has(b, full); i++) {
        char tie[200];
        snprintf(tie, sizeof(tie), "%s%s", ld->prefix, nm->embed_ties[i]);
        if (attn_ckpt_has(b, tie))
            snprintf(full, sizeof(full), "%s", tie);
    }
    int vocab = 0, cols;
    if (!attn_ckpt_shape(b, full, &vocab, &cols))
        vocab = 0; /* missing: attn_ckpt_tensor names it */
    int said = vocab;
    if (attn_ckpt_config_int(
            &said, ld->cfg,
            (struct ckpt_int){
                .key = "vocab_size", .min = 1, .max = INT32_MAX, .what = "the vocabulary"},
            err))
        return -1;
    if (vocab > 0 && said != vocab)
        return attn_diag_file(err, b->st.path,
                              "tensor '%s' has %d rows, but config.json says vocab_size %d", full,
                              vocab, said);
    /* the rows stay in the file (lazy when not F32: read as needed) */
    attn_matrix_free(&s->embed.rows);
    if (attn_ckpt_tensor(&s->embed.rows, b, full, vocab, sh->d, CKPT_MATRIX, arch, err))
        return -1;
    s->embed.kind = EMBED_TABLE;
    s->embed.dim = sh->d;
    ld->vocab = vocab;
    if (!nm->unembed)
        return 0;
    attn_matrix_free(&s->unembed);
    if (sh->tied) {
        s->unembed = s->embed.rows; /* borrowed: the same numbers, never freed twice */
    } else if (!attn_ckpt_has(b, nm->unembed)) {
        return attn_diag_file(err, ld->path,
                              "config.json says tie_word_embeddings: false%s, but the checkpoint "
                              "has no %s to unembed with",
                              sh->tied_default ? "" : " (the default)", nm->unembed);
    } else if (attn_ckpt_tensor(&s->unembed, b, nm->unembed, vocab, sh->d, CKPT_MATRIX, arch,
                                err)) {
        return -1;
    }
    return 0;
}

int attn_family_prologue(struct family_load *ld, const struct family_shape *sh, const void *config,
                         struct diag *err)
{
    struct attn_scene *s = ld->s;
    struct ckpt_backing *b = ld->b;
    const char *prefix = ld->family->names.prefix;
    ld->config = config;
    if (attn_ckpt_open(b, ld->path, err))
        return -1;
    /* any tensor under the prefix says the checkpoint uses it (GPT2LMHeadModel's "transformer.",
       GPT2Model's none): a missing embedding is then named as missing, not every other tensor
       as foreign */
    ld->prefix = "";
    for (int i = 0; i < b->st.n; i++)
        if (prefix[0] && strncmp(b->st.refs[i].name, prefix, strlen(prefix)) == 0)
            ld->prefix = prefix;
    if (check_names(ld, err))
        return -1;

    /* what the scene asks of it: learned positions end (RoPE computes past them, as
       transformers does: a warning, attn_scene_positions_note), layers and heads */
    if (sh->learned && s->n_tokens + s->pos.offset > sh->positions)
        return attn_diag_set(err, "text", "%d tokens%s, but the checkpoint has %d positions (%s)",
                             s->n_tokens, s->pos.offset > 0 ? " after the offset" : "",
                             sh->positions, sh->positions_key);
    ld->layers = ld->o->layers ? s->layers : sh->layers;
    if (ld->layers > sh->layers)
        return attn_diag_set(err, "layers", "layers %d: the checkpoint has %d", ld->layers,
                             sh->layers);
    ld->heads = ld->o->heads ? s->attn.heads : sh->heads;
    if (sh->heads_fixed && ld->heads != sh->heads)
        return attn_diag_set(err, "attention.heads",
                             "heads %d: the checkpoint's %d heads come with its RoPE and its %d "
                             "KV heads, and cannot be cut again (remove attention.heads)",
                             ld->heads, sh->heads, sh->kv_heads);
    if (!sh->heads_fixed && (ld->heads < 1 || sh->d % ld->heads != 0))
        return attn_diag_set(err, "attention.heads",
                             "heads %d does not divide the checkpoint's width %d (%s)", ld->heads,
                             sh->d, sh->width_key);

    if (read_tables(ld, sh, err))
        return -1;
    s->layers = ld->layers;
    if (!ld->o->causal)
        s->attn.causal = sh->causal;
    s->model.layers = sh->layers;
    s->model.heads = sh->heads;
    s->model.causal = sh->causal;
    s->model.scale = sh->scale;
    s->model.scale_divisor = sh->scale_divisor;
    if (!ld->o->scale && sh->scale == SCALE_DIVISOR) { /* as trained, unless the scene says */
        s->attn.scale = SCALE_DIVISOR;
        s->attn.scale_divisor = sh->scale_divisor;
    }
    s->model.positions = sh->positions;
    s->model.positions_key = sh->positions_key;
    return attn_ckpt_reset_weights(s, ld->layers, err);
}

int attn_family_encdec_check(const struct family_load *ld, int dec_layers, struct diag *err)
{
    const struct attn_scene *s = ld->s;
    if (!s->encoder)
        return attn_diag_set(err, "text",
                             "%s is an encoder-decoder: give it two sequences, text: {source: "
                             "\"...\", target: \"...\"}",
                             ld->family->variants[ld->variant].shown);
    if (ld->o->layers && s->layers != 2 * dec_layers)
        return attn_diag_set(err, "layers",
                             "layers %d: an encoder-decoder runs every layer of both stacks "
                             "(the decoder's %d are %d of attnscope's: remove it)",
                             s->layers, dec_layers, 2 * dec_layers);
    return 0;
}

int attn_family_encdec_target(struct family_load *ld, int start, struct diag *err)
{
    struct attn_scene *s = ld->s;
    s->decoder_start = start;
    if (start >= ld->vocab)
        return attn_ckpt_config_error(ld->cfg, "decoder_start_token_id", NULL, err,
                                      "'decoder_start_token_id' %d is past the %d rows of '%s'",
                                      start, ld->vocab, ld->family->names.embed);
    return attn_scene_set_text(s, s->text, err);
}

int attn_family_encdec_source(struct family_load *ld, int d, struct diag *err)
{
    struct attn_scene *s = ld->s, *e = s->encoder;
    for (int i = 0; i < e->n_tokens; i++)
        if (e->token_ids[i] >= ld->vocab)
            return attn_diag_set(err, "text",
                                 "the source's token %d (id %d) is past the %d rows of '%s'", i,
                                 e->token_ids[i], ld->vocab, ld->family->names.embed);
    attn_matrix_free(&e->embed.rows);
    e->embed.rows = s->embed.rows; /* the mapping's, or lazy: borrowed by both */
    e->embed.rows.borrowed = true;
    e->embed.kind = EMBED_TABLE;
    e->embed.dim = d;
    return 0;
}

int attn_family_encdec_finish(struct family_load *ld, struct diag *err)
{
    struct attn_scene *s = ld->s, *e = s->encoder; /* one checkpoint: what its scenes know */
    free(e->model.file);
    free(e->model.arch);
    e->model.file = strdup(s->model.file);
    e->model.arch = strdup(s->model.arch);
    e->model.widened = s->model.widened;
    if (!e->model.file || !e->model.arch)
        return attn_diag_set(err, "", "out of memory");
    return 0;
}
