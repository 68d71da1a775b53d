/* families: the registry (see families.h). */
#include "pretrained/families.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* The registry: one row per family, in the order messages list them. X(NAME) is the row
 * attn_family_NAME that the family's file (src/pretrained/NAME.c) defines; a new family is one
 * line here. */
#define ATTN_FAMILIES(X)                                                                           \
    X(gpt2)                                                                                        \
    X(llama)                                                                                       \
    X(bert)                                                                                        \
    X(gpt_neox)                                                                                    \
    X(gemma)                                                                                       \
    X(t5)                                                                                          \
    X(bart)                                                                                        \
    /* the last row */

#define DECLARE(name) extern const struct attn_family attn_family_##name;
ATTN_FAMILIES(DECLARE)
#undef DECLARE

#define ROW(name) &attn_family_##name,
static const struct attn_family *const FAMILIES[] = {ATTN_FAMILIES(ROW)};
#undef ROW
#define N_FAMILIES (sizeof(FAMILIES) / sizeof(FAMILIES[0]))

const struct attn_family *attn_families_named(const char *name)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (strcmp(FAMILIES[i]->name, name) == 0)
            return FAMILIES[i];
    return NULL;
}

/* Appends item, the index-th of a list of total items (the last after " or "), at out + o. */
static size_t list_add(char *out, size_t size, size_t o, int index, int total, const char *item)
{
    if (o >= size)
        return o;
    int n = snprintf(out + o, size - o, "%s%s",
                     index == 0           ? ""
                     : index == total - 1 ? " or "
                                          : ", ",
                     item);
    return o + (n > 0 ? (size_t)n : 0);
}

const char *attn_families_list(char *out, size_t size, const char *first)
{
    size_t o = 0;
    int index = 0, total = (int)N_FAMILIES + (first != NULL);
    out[0] = '\0';
    if (first)
        o = list_add(out, size, o, index++, total, first);
    for (size_t i = 0; i < N_FAMILIES; i++)
        o = list_add(out, size, o, index++, total, FAMILIES[i]->name);
    return out;
}

/* The class of some family whose architecture (by_type: model_type) is name, or NULL. */
static const struct family_class *find_class(const struct attn_family **family, const char *name,
                                             bool by_type)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        for (const struct family_class *k = FAMILIES[i]->classes; k->architecture; k++) {
            const char *own = by_type ? k->model_type : k->architecture;
            if (own && strcmp(own, name) == 0) {
                *family = FAMILIES[i];
                return k;
            }
        }
    return NULL;
}

/* Every class's architecture (by_type: its model_type, where it has one), as a message lists
 * them: "GPT2LMHeadModel, GPT2Model, ...". */
static const char *classes_list(char *out, size_t size, bool by_type)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < N_FAMILIES; i++)
        for (const struct family_class *k = FAMILIES[i]->classes; k->architecture; k++) {
            const char *own = by_type ? k->model_type : k->architecture;
            if (own && o < size)
                o += (size_t)snprintf(out + o, size - o, "%s%s", o ? ", " : "", own);
        }
    return out;
}

int attn_families_detect(const struct attn_family **family, int *variant,
                         const struct ckpt_config *c, struct diag *err)
{
    *family = NULL;
    *variant = 0;
    char got[120], list[512];
    const struct family_class *k;
    json_t *archs = json_object_get(c->root, "architectures");
    if (archs && !json_is_null(archs)) {
        json_t *first = json_is_array(archs) ? json_array_get(archs, 0) : NULL;
        if (!json_is_string(first))
            return attn_ckpt_config_error(c, "architectures", NULL, err,
                                          "'architectures' is %s, not a list of names",
                                          attn_ckpt_show_value(got, sizeof(got), archs));
        if ((k = find_class(family, json_string_value(first), false))) {
            *variant = k->variant;
            return 0;
        }
        return attn_ckpt_config_error(
            c, "architectures", NULL, err, "architecture %s is not one attnscope reads (%s)",
            attn_ckpt_show_value(got, sizeof(got), first), classes_list(list, sizeof(list), false));
    }
    json_t *type = json_object_get(c->root, "model_type");
    if (!type || json_is_null(type))
        return 0;
    if (json_is_string(type) && (k = find_class(family, json_string_value(type), true))) {
        *variant = k->variant;
        return 0;
    }
    return attn_ckpt_config_error(
        c, "model_type", NULL, err, "model_type %s is not one attnscope reads (%s)",
        attn_ckpt_show_value(got, sizeof(got), type), classes_list(list, sizeof(list), true));
}
