/* families: the name mapping of each checkpoint family, called by pretrained.c once config.json
 * is read and says which it is. Each fills s as attn_pretrained_load says (pretrained.h). */
#ifndef ATTNSCOPE_FAMILIES_H
#define ATTNSCOPE_FAMILIES_H

#include "common/diag.h"
#include "engine/scene.h"
#include "pretrained/ckpt.h"

/* The variants of the Llama family, which differ in a few keys and tensors. */
enum llama_variant { LLAMA_PLAIN, LLAMA_MISTRAL, LLAMA_QWEN2, LLAMA_QWEN3 };

/* GPT-2 (gpt2.c): GPT2LMHeadModel / GPT2Model. */
int attn_gpt2_load(struct attn_scene *s, const char *path, struct ckpt_config *c,
                   const struct ckpt_overrides *o, struct diag *err);
/* The Llama family (llama.c): LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
 * Qwen3ForCausalLM. */
int attn_llama_load(struct attn_scene *s, const char *path, struct ckpt_config *c,
                    enum llama_variant v, const struct ckpt_overrides *o, struct diag *err);
/* BERT (bert.c): BertModel, BertForMaskedLM, BertForPreTraining. */
int attn_bert_load(struct attn_scene *s, const char *path, struct ckpt_config *c,
                   const struct ckpt_overrides *o, struct diag *err);

#endif
