/* families: the registry of checkpoint families, one row each (struct attn_family, family.h), and
 * what is asked of it: which family config.json names, a family by its name, the names for a
 * message. Its rows are in families.c; each is defined in its family's file.
 */
#ifndef ATTNSCOPE_FAMILIES_H
#define ATTNSCOPE_FAMILIES_H

#include <stddef.h>

#include "common/diag.h"
#include "pretrained/ckpt.h"
#include "pretrained/family.h"

/* The family a scene's model: {arch: NAME} names, or NULL. */
const struct attn_family *attn_families_named(const char *name);

/* The families' names as a message lists them, after first when it is not NULL:
 * "auto, gpt2, llama or bert". */
const char *attn_families_list(char *out, size_t size, const char *first);

/* What config.json says the checkpoint is ("architectures", else "model_type"): *family (NULL
 * when it says nothing) and its *variant. A class no family reads is an error at its key that
 * lists those they do. */
int attn_families_detect(const struct attn_family **family, int *variant,
                         const struct ckpt_config *c, struct diag *err);

#endif
