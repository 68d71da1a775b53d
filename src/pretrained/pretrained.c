/* pretrained: tokenizers and checkpoints as a scene; which family a checkpoint is (see
 * pretrained.h). */
#include "pretrained/pretrained.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "pretrained/bpe.h"
#include "pretrained/families.h"
#include "pretrained/hftok.h"

int attn_gpt2_attach_tokenizer(struct attn_scene *s, const char *vocab_path,
                               const char *merges_path, struct diag *err)
{
    struct ckpt_backing *b = attn_ckpt_backing(s);
    if (!b)
        return attn_diag_set(err, "tokenizer", "out of memory");
    struct bpe *bpe;
    if (attn_bpe_load(&bpe, vocab_path, merges_path, err))
        return -1;
    attn_bpe_free(b->bpe);
    attn_hftok_free(b->hf);
    b->hf = NULL;
    b->bpe = bpe;
    free(s->vocab_path);
    free(s->merges_path);
    s->vocab_path = attn_fsutil_absolute(vocab_path);
    s->merges_path = attn_fsutil_absolute(merges_path);
    s->tokenizer = TOKENIZER_GPT2;
    return s->vocab_path && s->merges_path ? 0 : attn_diag_set(err, "tokenizer", "out of memory");
}

int attn_pretrained_attach_hf_tokenizer(struct attn_scene *s, const char *path, struct diag *err)
{
    struct ckpt_backing *b = attn_ckpt_backing(s);
    if (!b)
        return attn_diag_set(err, "tokenizer", "out of memory");
    /* tokenizer_config.json is read when it is beside tokenizer.json */
    char *copy = strdup(path), *config = NULL;
    if (copy) {
        const char *dir = dirname(copy);
        size_t n = strlen(dir) + sizeof("/tokenizer_config.json");
        config = malloc(n);
        if (config)
            snprintf(config, n, "%s/tokenizer_config.json", dir);
    }
    free(copy);
    if (!config)
        return attn_diag_set(err, "tokenizer", "out of memory");
    struct hftok *t;
    int rc = attn_hftok_load(&t, path, config, err);
    free(config);
    if (rc)
        return -1;
    attn_hftok_free(b->hf);
    attn_bpe_free(b->bpe);
    b->bpe = NULL;
    b->hf = t;
    free(s->tokenizer_file);
    s->tokenizer_file = attn_fsutil_absolute(path);
    s->tokenizer = TOKENIZER_HF;
    return s->tokenizer_file ? 0 : attn_diag_set(err, "tokenizer", "out of memory");
}

/* ---- which family -------------------------------------------------------------------------- */

enum family { FAMILY_NONE, FAMILY_GPT2, FAMILY_LLAMA, FAMILY_BERT };

/* Every architecture (config.json's "architectures") and model_type attnscope reads. */
static const struct {
    const char *architecture, *model_type;
    enum family family;
    enum llama_variant variant;
} KNOWN[] = {
    {"GPT2LMHeadModel", "gpt2", FAMILY_GPT2, LLAMA_PLAIN},
    {"GPT2Model", NULL, FAMILY_GPT2, LLAMA_PLAIN},
    {"LlamaForCausalLM", "llama", FAMILY_LLAMA, LLAMA_PLAIN},
    {"MistralForCausalLM", "mistral", FAMILY_LLAMA, LLAMA_MISTRAL},
    {"Qwen2ForCausalLM", "qwen2", FAMILY_LLAMA, LLAMA_QWEN2},
    {"Qwen3ForCausalLM", "qwen3", FAMILY_LLAMA, LLAMA_QWEN3},
    {"BertForMaskedLM", "bert", FAMILY_BERT, LLAMA_PLAIN},
    {"BertModel", NULL, FAMILY_BERT, LLAMA_PLAIN},
    {"BertForPreTraining", NULL, FAMILY_BERT, LLAMA_PLAIN},
};
#define N_KNOWN (sizeof(KNOWN) / sizeof(KNOWN[0]))

static const char *family_name(enum family f)
{
    return f == FAMILY_GPT2    ? "gpt2"
           : f == FAMILY_LLAMA ? "llama"
           : f == FAMILY_BERT  ? "bert"
                               : "?";
}

bool attn_pretrained_arch_known(const char *name)
{
    return strcmp(name, "auto") == 0 || strcmp(name, "gpt2") == 0 || strcmp(name, "llama") == 0 ||
           strcmp(name, "bert") == 0;
}

/* What config.json says the checkpoint is: *family (FAMILY_NONE when it says nothing) and the
 * variant. A name attnscope does not read is an error at its key. */
static int detect(enum family *family, enum llama_variant *variant, const struct ckpt_config *c,
                  struct diag *err)
{
    *family = FAMILY_NONE;
    *variant = LLAMA_PLAIN;
    char got[120], list[512] = "";
    for (size_t i = 0, o = 0; i < N_KNOWN; i++)
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
                              KNOWN[i].architecture);
    json_t *archs = json_object_get(c->root, "architectures");
    if (archs && !json_is_null(archs)) {
        json_t *first = json_is_array(archs) ? json_array_get(archs, 0) : NULL;
        if (!json_is_string(first))
            return attn_ckpt_config_error(c, "architectures", NULL, err,
                                          "'architectures' is %s, not a list of names",
                                          attn_ckpt_show_value(got, sizeof(got), archs));
        for (size_t i = 0; i < N_KNOWN; i++)
            if (strcmp(json_string_value(first), KNOWN[i].architecture) == 0) {
                *family = KNOWN[i].family;
                *variant = KNOWN[i].variant;
                return 0;
            }
        return attn_ckpt_config_error(c, "architectures", NULL, err,
                                      "architecture %s is not one attnscope reads (%s)",
                                      attn_ckpt_show_value(got, sizeof(got), first), list);
    }
    json_t *type = json_object_get(c->root, "model_type");
    if (!type || json_is_null(type))
        return 0;
    for (size_t i = 0; json_is_string(type) && i < N_KNOWN; i++)
        if (KNOWN[i].model_type && strcmp(json_string_value(type), KNOWN[i].model_type) == 0) {
            *family = KNOWN[i].family;
            *variant = KNOWN[i].variant;
            return 0;
        }
    return attn_ckpt_config_error(c, "model_type", NULL, err,
                                  "model_type %s is not one attnscope reads (gpt2, llama, "
                                  "mistral, qwen2, qwen3, bert)",
                                  attn_ckpt_show_value(got, sizeof(got), type));
}

int attn_pretrained_load(struct attn_scene *s, const char *path, const char *arch,
                         const struct ckpt_overrides *o, struct diag *err)
{
    if (!attn_ckpt_backing(s))
        return attn_diag_set(err, "", "out of memory");
    if (!s->token_ids)
        return attn_diag_set(err, "",
                             "a checkpoint needs its tokenizer: tokenizer: {kind: hf, file: "
                             "tokenizer.json} (or for GPT-2 {kind: gpt2, vocab: vocab.json, "
                             "merges: merges.txt})");
    struct ckpt_config c;
    if (attn_ckpt_config_open(&c, path, err))
        return -1;
    enum family family;
    enum llama_variant variant;
    int rc = detect(&family, &variant, &c, err);
    bool automatic = !arch || strcmp(arch, "auto") == 0;
    if (rc == 0 && automatic && family == FAMILY_NONE)
        rc = attn_ckpt_config_error(&c, NULL, NULL, err,
                                    "config.json names no architecture ('architectures' or "
                                    "'model_type'): give it in the scene, model: {arch: gpt2, "
                                    "llama or bert}");
    if (rc == 0 && !automatic) {
        enum family want = strcmp(arch, "gpt2") == 0    ? FAMILY_GPT2
                           : strcmp(arch, "llama") == 0 ? FAMILY_LLAMA
                                                        : FAMILY_BERT;
        if (family != FAMILY_NONE && family != want) {
            const char *key =
                json_object_get(c.root, "architectures") ? "architectures" : "model_type";
            rc = attn_ckpt_config_error(&c, key, NULL, err,
                                        "the checkpoint is a %s (%s), but the scene says arch: %s",
                                        family_name(family), key, arch);
        }
        family = want;
    }
    if (rc == 0) {
        if (family == FAMILY_GPT2)
            rc = attn_gpt2_load(s, path, &c, o, err);
        else if (family == FAMILY_LLAMA)
            rc = attn_llama_load(s, path, &c, variant, o, err);
        else
            rc = attn_bert_load(s, path, &c, o, err);
    }
    if (rc == 0) { /* the warnings go with the checkpoint: every copy of the scene has them */
        struct attn_backing *b = s->backing;
        attn_diag_list_free(&b->warnings);
        b->warnings = c.warnings;
        attn_diag_list_init(&c.warnings);
    }
    attn_ckpt_config_close(&c);
    return rc;
}
