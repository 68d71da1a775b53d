/* pretrained: tokenizers and checkpoints as a scene; which family a checkpoint is (see
 * pretrained.h). */
#include "pretrained/pretrained.h"

#include <errno.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "pretrained/bpe.h"
#include "pretrained/families.h"
#include "pretrained/family.h"
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
        const char *dir = attn_fsutil_is_dir(path) ? path : dirname(copy);
        size_t n = strlen(dir) + sizeof("/tokenizer_config.json");
        config = malloc(n);
        if (config)
            snprintf(config, n, "%s/tokenizer_config.json", dir);
    }
    free(copy);
    if (!config)
        return attn_diag_set(err, "tokenizer", "out of memory");
    /* a folder: its tokenizer.json, else Marian's source.spm, target.spm and vocab.json */
    struct hftok *t;
    int rc;
    char json[4200];
    snprintf(json, sizeof(json), "%s/tokenizer.json", path);
    if (!attn_fsutil_is_dir(path))
        rc = attn_hftok_load(&t, path, config, err);
    else if (attn_fsutil_exists(json))
        rc = attn_hftok_load(&t, json, config, err);
    else
        rc = attn_hftok_load_marian(&t, path, err);
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

#define AUTO "auto" /* arch: auto, config.json says */

const char *attn_pretrained_families(char *out, size_t size)
{
    return attn_families_list(out, size, NULL);
}

const char *attn_pretrained_archs(char *out, size_t size)
{
    return attn_families_list(out, size, AUTO);
}

bool attn_pretrained_arch_known(const char *name)
{
    return strcmp(name, AUTO) == 0 || attn_families_named(name) != NULL;
}

bool attn_pretrained_encoder_decoder(const char *model_path)
{
    struct ckpt_config c;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_ckpt_config_open(&c, model_path, &err))
        return false;
    const struct attn_family *family = NULL;
    int variant = 0;
    bool yes =
        attn_families_detect(&family, &variant, &c, &err) == 0 && family && family->encoder_decoder;
    attn_ckpt_config_close(&c);
    return yes;
}

/* The family that reads the checkpoint: the one config.json names (*variant: which of it), or
 * the scene's arch, which must not contradict it. */
static int which_family(const struct attn_family **family, int *variant, const char *arch,
                        const struct ckpt_config *c, struct diag *err)
{
    if (attn_families_detect(family, variant, c, err))
        return -1;
    char names[256];
    if (!arch || strcmp(arch, AUTO) == 0) {
        if (!*family)
            return attn_ckpt_config_error(c, NULL, NULL, err,
                                          "config.json names no architecture ('architectures' or "
                                          "'model_type'): give it in the scene, model: {arch: %s}",
                                          attn_pretrained_families(names, sizeof(names)));
        return 0;
    }
    const struct attn_family *want = attn_families_named(arch);
    if (!want) /* a scene's is checked as it is read: a caller's own */
        return attn_diag_set(err, "model.arch", "arch '%.40s' is not one attnscope reads (%s)",
                             arch, attn_pretrained_archs(names, sizeof(names)));
    if (*family && *family != want) {
        const char *key =
            json_object_get(c->root, "architectures") ? "architectures" : "model_type";
        return attn_ckpt_config_error(c, key, NULL, err,
                                      "the checkpoint is a %s (%s), but the scene says arch: %s",
                                      (*family)->name, key, arch);
    }
    if (!*family)
        *variant = 0;
    *family = want;
    return 0;
}

/* The vocabulary's size: the unembedding's rows, or the embedding table's. */
static int model_vocab(const struct attn_scene *s)
{
    return s->unembed.rows > 0 ? s->unembed.rows : s->embed.rows.rows;
}

/* config.json's eos_token_id: a token id or a list of them (none: null, absent or []). An id
 * past the vocabulary (transformers' GPT2Config keeps 50256 for any vocabulary) is a warning,
 * and generation never meets it. */
static int read_eos(struct attn_scene *s, struct ckpt_config *c, struct diag *err)
{
    const json_t *v = json_object_get(c->root, "eos_token_id");
    int vocab = model_vocab(s);
    s->model.n_eos = 0;
    if (!v || json_is_null(v))
        return 0;
    size_t count = json_is_array(v) ? json_array_size(v) : 1;
    if (count > SCENE_MAX_EOS)
        return attn_ckpt_config_error(c, "eos_token_id", NULL, err,
                                      "'eos_token_id' lists %zu tokens; attnscope reads at most %d",
                                      count, SCENE_MAX_EOS);
    for (size_t i = 0; i < count; i++) {
        const json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > INT32_MAX)
            return attn_ckpt_config_error(c, "eos_token_id", NULL, err,
                                          "'eos_token_id' must be a token id (a whole number from "
                                          "0), or a list of them");
        json_int_t x = json_integer_value(e);
        if (vocab > 0 && x >= vocab)
            attn_ckpt_config_warn(c, "eos_token_id", NULL,
                                  "'eos_token_id' %lld is past the vocabulary (%d tokens): a "
                                  "generation never ends at it",
                                  (long long)x, vocab);
        else
            s->model.eos[s->model.n_eos++] = (int)x;
    }
    return 0;
}

/* config.json's bad_words_ids: lists of token ids, each a sequence transformers never lets a
 * generation make. One of a single token (Marian's [[<pad>]]) is banned; a longer one would need
 * the tokens before it, which attnscope does not track: a warning says it is not applied. */
static int read_bad_words(struct attn_scene *s, struct ckpt_config *c, struct diag *err)
{
    const json_t *v = json_object_get(c->root, "bad_words_ids");
    int vocab = model_vocab(s);
    s->model.n_banned = 0;
    if (!v || json_is_null(v))
        return 0;
    static const char *const must = "'bad_words_ids' must be a list of lists of token ids";
    if (!json_is_array(v))
        return attn_ckpt_config_error(c, "bad_words_ids", NULL, err, "%s", must);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *w = json_array_get(v, i);
        if (!json_is_array(w) || json_array_size(w) == 0)
            return attn_ckpt_config_error(c, "bad_words_ids", NULL, err, "%s", must);
        for (size_t k = 0; k < json_array_size(w); k++) {
            const json_t *e = json_array_get(w, k);
            if (!json_is_integer(e) || json_integer_value(e) < 0 ||
                json_integer_value(e) > INT32_MAX)
                return attn_ckpt_config_error(c, "bad_words_ids", NULL, err, "%s", must);
        }
        if (json_array_size(w) > 1) {
            attn_ckpt_config_warn(c, "bad_words_ids", NULL,
                                  "'bad_words_ids' entry %zu is a sequence of %zu tokens: "
                                  "attnscope bans single tokens only, so a generation may make it",
                                  i, json_array_size(w));
            continue;
        }
        json_int_t id = json_integer_value(json_array_get(w, 0));
        if (vocab > 0 && id >= vocab)
            attn_ckpt_config_warn(c, "bad_words_ids", NULL,
                                  "'bad_words_ids' bans %lld, past the vocabulary (%d tokens)",
                                  (long long)id, vocab);
        else if (s->model.n_banned == SCENE_MAX_BANNED)
            return attn_ckpt_config_error(c, "bad_words_ids", NULL, err,
                                          "'bad_words_ids' bans more than %d single tokens, "
                                          "attnscope's limit",
                                          SCENE_MAX_BANNED);
        else
            s->model.banned[s->model.n_banned++] = (int)id;
    }
    return 0;
}

int attn_pretrained_load(struct attn_scene *s, const char *path, const char *arch,
                         const struct ckpt_overrides *o, struct diag *err)
{
    struct ckpt_backing *b = attn_ckpt_backing(s);
    if (!b)
        return attn_diag_set(err, "", "out of memory");
    if (!s->token_ids)
        return attn_diag_set(err, "",
                             "a checkpoint needs its tokenizer: tokenizer: {kind: hf, file: "
                             "tokenizer.json} (or for GPT-2 {kind: gpt2, vocab: vocab.json, "
                             "merges: merges.txt})");
    struct ckpt_config c;
    if (attn_ckpt_config_open(&c, path, err))
        return -1;
    struct family_load ld = {.s = s, .b = b, .cfg = &c, .path = path, .o = o};
    int rc = which_family(&ld.family, &ld.variant, arch, &c, err);
    /* config.json's keys against the family's table, before the family reads any */
    if (rc == 0)
        rc = attn_ckpt_config_keys(&c, ld.family->keys, ld.family->n_keys, ld.variant,
                                   ld.family->variants[ld.variant].config_class, err);
    if (rc == 0)
        rc = ld.family->load(&ld, err);
    /* a family of one stack reads one sequence: {source, target} is an encoder-decoder's */
    if (rc == 0 && s->encoder && s->sublayer[0] != SUB_SELF)
        rc = attn_diag_set(err, "text",
                           "%s reads one sequence: give 'text' a sentence (two sequences, "
                           "{source, target}, are an encoder-decoder's: T5, BART, Marian)",
                           ld.family->variants[ld.variant].shown);
    if (rc == 0)
        rc = read_eos(s, &c, err);
    if (rc == 0)
        rc = read_bad_words(s, &c, err);
    if (rc == 0) { /* the warnings go with the checkpoint: every copy of the scene has them */
        attn_diag_list_free(&b->base.warnings);
        b->base.warnings = c.warnings;
        attn_diag_list_init(&c.warnings);
    }
    attn_ckpt_config_close(&c);
    return rc;
}
