/* pretrained: a Hugging Face checkpoint and tokenizer as a scene's parameters and tokens.
 *
 * The files are Hugging Face's: model.safetensors (or a sharded model.safetensors.index.json and
 * its shards) with config.json beside it, and the tokenizer: GPT-2's vocab.json and merges.txt,
 * or a tokenizer.json. They are opened once per loaded scene and live in the scene's backing
 * (engine/scene.h); every copy the explorer makes of the scene shares them. config.json says
 * which family the checkpoint is (its "architectures", or "model_type"), and the registry
 * (families.h) which file of this folder reads it; family.c and ckpt.c read for them all.
 */
#ifndef ATTNSCOPE_PRETRAINED_H
#define ATTNSCOPE_PRETRAINED_H

#include "common/diag.h"
#include "engine/scene.h"
#include "pretrained/ckpt.h" /* struct ckpt_overrides */

/* The families of the registry, as a message lists them: "gpt2, llama or bert". */
const char *attn_pretrained_families(char *out, size_t size);
/* What a scene's model: {arch: ...} may be, the same way: auto (config.json says) and every
 * family, "auto, gpt2, llama or bert". */
const char *attn_pretrained_archs(char *out, size_t size);
/* True when name is an arch a scene may give (attn_pretrained_archs). */
bool attn_pretrained_arch_known(const char *name);
/* Whether the checkpoint at model_path (its config.json beside it) is of a family that reads
 * two sequences (T5, BART, Marian); false too when config.json cannot be read or names no family
 * (the scene's load says why). */
bool attn_pretrained_encoder_decoder(const char *model_path);

/* Installs GPT-2's byte-level BPE (vocab.json, merges.txt) as s's tokenizer. */
int attn_gpt2_attach_tokenizer(struct attn_scene *s, const char *vocab_path,
                               const char *merges_path, struct diag *err);
/* Installs a Hugging Face tokenizer.json (hftok.h) as s's tokenizer (TOKENIZER_HF), with the
 * tokenizer_config.json beside it when there is one. Errors name the file with line:col. */
int attn_pretrained_attach_hf_tokenizer(struct attn_scene *s, const char *path, struct diag *err);
/* Fills s from the checkpoint at path with the mapping arch (a family's name, or NULL or "auto":
 * the one config.json names): the options of its blocks, the embedding tables, every
 * layer's parameters and the unembedding, all borrowed. s must hold its tokens and their ids.
 * Errors name the file and the tensor, or config.json with line:col and the key. */
int attn_pretrained_load(struct attn_scene *s, const char *path, const char *arch,
                         const struct ckpt_overrides *o, struct diag *err);

#endif
