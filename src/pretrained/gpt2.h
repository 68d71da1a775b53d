/* gpt2: a Hugging Face GPT-2 checkpoint and tokenizer as a scene's parameters and tokens.
 *
 * The files are Hugging Face's: model.safetensors with config.json beside it, and the
 * tokenizer's vocab.json and merges.txt. They are opened once per loaded scene and live in
 * the scene's backing (engine/scene.h): F32 tensors are read in place from the mapping, F16
 * and BF16 ones widened once; every copy the explorer makes of the scene shares them.
 */
#ifndef ATTNSCOPE_GPT2_H
#define ATTNSCOPE_GPT2_H

#include <stdbool.h>

#include "common/diag.h"
#include "engine/scene.h"

/* What the scene file said itself: it wins over the checkpoint's config. */
struct gpt2_overrides {
    bool heads;  /* attention.heads (the same columns split into other heads) */
    bool layers; /* layers: run only the first ones */
    bool causal; /* attention.causal */
};

/* Installs GPT-2's byte-level BPE (vocab.json, merges.txt) as s's tokenizer. */
int attn_gpt2_attach_tokenizer(struct attn_scene *s, const char *vocab_path,
                               const char *merges_path, struct diag *err);
/* Installs a Hugging Face tokenizer.json (hftok.h) as s's tokenizer (TOKENIZER_HF), with the
 * tokenizer_config.json beside it when there is one. Errors name the file with line:col. */
int attn_pretrained_attach_hf_tokenizer(struct attn_scene *s, const char *path, struct diag *err);
/* Fills s from the checkpoint at path: the options of a GPT-2 block (pre-norm LayerNorm, fused
 * qkv with biases, causal, gelu_tanh, final norm), the embedding and position tables, every
 * layer's parameters and the unembedding (lm_head.weight when config.json says
 * tie_word_embeddings: false, else wte), all borrowed. s must hold its tokens and their ids (the
 * gpt2 or hf tokenizer).
 * Errors name the file and the tensor. */
int attn_gpt2_load(struct attn_scene *s, const char *path, const struct gpt2_overrides *o,
                   struct diag *err);

#endif
