/* family: a family of checkpoints as one row (struct attn_family), and the reading every family
 * shares (attn_family_prologue).
 *
 * A family is one file (NAME.c: gpt2.c, llama.c, ...) that defines its row, attn_family_NAME: its
 * name, the classes config.json names it by, config.json's keys (the strict table of ckpt.h), its
 * tensor names, its reader (the block it builds) and its tokenizer's defaults. The registry
 * (families.h) lists the rows; nothing outside the family files and the registry names a family.
 */
#ifndef ATTNSCOPE_FAMILY_H
#define ATTNSCOPE_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "engine/scene.h"
#include "pretrained/ckpt.h"

struct family_load;

/* A class config.json names the family by: its "architectures" (the first name) and its
 * "model_type" (NULL: none of its own), and the family's variant it is. */
struct family_class {
    const char *architecture, *model_type;
    int variant;
};

/* A variant of the family (the Llama family's Mistral, Qwen2, ...; 0 when there is one). */
struct family_variant {
    const char *config_class; /* transformers' configuration class, in warnings: "GPT2Config" */
    const char *shown;        /* the model in messages: "tensor 'x' is not part of GPT-2" */
};

/* The checkpoint's tensor names, as the prologue checks and reads them. */
struct family_names {
    const char *prefix; /* the model's names may all start with it ("transformer."); "": never */
    /* Names never under the prefix, NULL-terminated: a whole name is the reader's own (the untied
     * unembedding, "lm_head.weight"); one ending in '.' starts names known() checks whole
     * (BERT's "cls."). */
    const char *const *outside;
    const char *embed; /* the embedding table, under the prefix ("wte.weight") */
    /* The names of the parameters transformers ties to embed, NULL-terminated (or NULL): a file
     * that kept one of them and not embed (a conversion may keep either) is read from it, as
     * transformers reads it, whose tied parameters are one tensor before the file is loaded. */
    const char *const *embed_ties;
    const char *unembed; /* the untied unembedding, outside; NULL: the reader reads its own */
    /* Whether name (the prefix cut off, or whole when outside) is one the family reads or knows
     * to skip (the buffers some exports carry); ld->config is the reader's config. */
    bool (*known)(const struct family_load *ld, const char *name);
};

/* One family: its row of the registry. */
struct attn_family {
    const char *name;                      /* a scene's model: {arch: NAME}; "(arch NAME)" */
    const struct family_class *classes;    /* ends with {NULL}; in the order messages list them */
    const struct family_variant *variants; /* by family_class.variant */
    const struct ckpt_key *keys;           /* config.json's keys (ckpt.h), every variant's */
    size_t n_keys;
    struct family_names names;
    /* Reads config.json and the checkpoint into ld->s: the family's own keys, then
     * attn_family_prologue, then the block it builds, then attn_ckpt_finish. */
    int (*load)(struct family_load *ld, struct diag *err);
    /* The tokenizer's defaults: the token a masked language model fills in ("[MASK]"), or NULL
     * (a next-token model). */
    const char *mask_token;
    /* An encoder-decoder: its scenes read two sequences, text: {source, target}. */
    bool encoder_decoder;
};

/* What a family's reader works on: attn_pretrained_load fills the first part, the prologue the
 * rest. */
struct family_load {
    struct attn_scene *s;
    struct ckpt_backing *b;
    struct ckpt_config *cfg;
    const char *path; /* the checkpoint: a .safetensors file or a sharded index */
    const struct attn_family *family;
    int variant;
    const struct ckpt_overrides *o;
    /* the prologue's */
    const void *config; /* the reader's own config (known() reads it) */
    const char *prefix; /* names.prefix when the checkpoint's names have it, else "" */
    int vocab;          /* rows of the embedding table */
    int layers, heads;  /* what the scene runs: the checkpoint's, or its own (layers:, heads:) */
};

/* What the prologue needs of the reader's config.json. */
struct family_shape {
    int d, layers, heads;  /* the width (hidden_size), the layers and query heads */
    const char *width_key; /* d's key, in messages: "n_embd" */
    /* Heads that cannot be split into others (attention.heads refused): RoPE's, in their KV
     * groups of kv_heads. Else attention.heads may split the same columns. */
    bool heads_fixed;
    int kv_heads;
    int positions;              /* the positions it was trained on */
    const char *positions_key;  /* their key ("n_positions"): a string literal */
    bool learned;               /* a table of positions: a longer text is refused */
    bool tied, tied_default;    /* tie_word_embeddings, and transformers' default of it */
    bool causal;                /* as trained: the mask (attention.causal overrides it) */
    enum attn_scale_kind scale; /* as trained: SCALE_SQRT_DK, SCALE_NONE or SCALE_DIVISOR */
    double scale_divisor;       /* SCALE_DIVISOR: the divisor (Gemma's √query_pre_attn_scalar) */
};

/* The sizes most of transformers' configuration classes name alike, each required and checked
 * against attnscope's limits: hidden_size (sh->d), num_hidden_layers, num_attention_heads and
 * intermediate_size (*inter). */
int attn_family_read_sizes(struct family_shape *sh, int *inter, const struct ckpt_config *c,
                           struct diag *err);

/* Which layers slide, in both of transformers' formats: 5's layer_types ("full_attention" or
 * "sliding_attention" a layer) and 4's rule, rule[L] (true: layer L slides), from rule_key's
 * value rule_value ("'max_window_layers' 28 makes it ..."); where both are written they agree.
 * window 0 (no window): a sliding layer in layer_types is refused, saying why (no_window).
 * off[L] gets !slides (the engine's window_off). */
int attn_family_layer_types(bool *off, const struct ckpt_config *c, int layers, const bool *rule,
                            const char *rule_key, int rule_value, bool rule_given, int window,
                            const char *no_window, struct diag *err);

/* A tensor a family reads into a layer: the matrix it fills, its name in the layer, its shape as
 * the engine reads it (x @ W) and its form; wanted false: the checkpoint has none (a bias off). */
struct family_part {
    struct attn_matrix *dst;
    const char *name;
    int rows, cols;
    enum ckpt_form form;
    bool wanted;
};
/* Reads the n parts of layer L that are wanted, each named "<prefix><stem><L>.<name>"
 * ("model.layers.3.self_attn.q_proj.weight"). */
int attn_family_read_parts(struct ckpt_backing *b, const char *prefix, const char *stem, int L,
                           const struct family_part *parts, size_t n, const char *arch,
                           struct diag *err);

/* What a family's known() asks of a tensor's name: whether it is one of the n names. */
bool attn_family_name_in(const char *name, const char *const *names, size_t n);
/* The part of name after "STEMN." when N, as %d writes it, is a layer below layers
 * ("h.3.ln_1.weight", stem "h.": "ln_1.weight"; "h.03." is no layer's); NULL when it names none. */
const char *attn_family_layer_part(const char *name, const char *stem, int layers);

/* What every family does first, once its config.json is read (config: the reader's own): opens
 * the checkpoint; finds its prefix; refuses a tensor the family does not know, a text past
 * learned positions, more layers than it has, heads the checkpoint's cannot become, and a
 * vocab_size its embedding table does not have; reads the embedding table and (names.unembed)
 * the unembedding, tied or not; sets the scene's layers, its mask (unless the scene gives it),
 * what the checkpoint is as trained (s->model), and room for every layer's parameters. */
int attn_family_prologue(struct family_load *ld, const struct family_shape *shape,
                         const void *config, struct diag *err);

/* An encoder-decoder's family (t5.c, bart.c): the scene file made s->encoder from text.source,
 * and the scene is the decoder, each of its dec_layers two of the engine's (SUB_SELF, SUB_CROSS).
 * Before the prologue: two sequences, and `layers:` only as the scene writes it back (every
 * engine layer). */
int attn_family_encdec_check(const struct family_load *ld, int dec_layers, struct diag *err);
/* After the prologue: the target read again after the decoder's start token (checked against
 * the embedding table; the scene file tokenized it before the checkpoint said which). */
int attn_family_encdec_target(struct family_load *ld, int start, struct diag *err);
/* The encoder's tokens checked against the table, which it borrows from the decoder (width d). */
int attn_family_encdec_source(struct family_load *ld, int d, struct diag *err);
/* After attn_ckpt_finish: the encoder's model.file, arch and widened bytes the decoder's. */
int attn_family_encdec_finish(struct family_load *ld, struct diag *err);

#endif
