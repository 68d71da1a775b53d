/* stage: names and kinds of the pipeline steps, from the one table of stage.h. */
#include "engine/stage.h"

#include <ctype.h>
#include <string.h>

static const struct {
    const char *name, *title, *file;
    enum attn_stage_kind kind;
    enum attn_stage_width width;
} stages[STAGE_COUNT] = {
#define X(id, name, heading, kind, width, file, explain)                                           \
    [STAGE_##id] = {name, heading, file, STAGE_KIND_##kind, STAGE_WIDTH_##width},
    ATTN_STAGES(X)
#undef X
};

const char *attn_stage_name(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? stages[s].name : "?";
}

const char *attn_stage_title(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? stages[s].title : "?";
}

const char *attn_stage_file(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? stages[s].file : "?";
}

enum attn_stage_width attn_stage_width(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? stages[s].width : STAGE_WIDTH_D_IN;
}

int attn_stage_parse(const char *name)
{
    static const struct {
        const char *alias;
        enum attn_stage s;
    } aliases[] = {
        {"q", STAGE_QUERIES},   {"k", STAGE_KEYS},          {"v", STAGE_VALUES},
        {"mask", STAGE_MASKED}, {"softmax", STAGE_WEIGHTS}, {"out", STAGE_OUTPUT},
    };
    char lower[32];
    size_t len = strlen(name);
    if (len >= sizeof(lower))
        return -1;
    for (size_t i = 0; i <= len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    for (int i = 0; i < STAGE_COUNT; i++)
        if (strcmp(lower, stages[i].name) == 0)
            return i;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(lower, aliases[i].alias) == 0)
            return (int)aliases[i].s;
    return -1;
}

enum attn_stage_kind attn_stage_kind(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? stages[s].kind : STAGE_KIND_SHARED;
}

bool attn_stage_is_square(enum attn_stage s)
{
    return attn_stage_kind(s) == STAGE_KIND_SQUARE && s >= 0 && s < STAGE_COUNT;
}

bool attn_stage_is_per_head(enum attn_stage s)
{
    enum attn_stage_kind k = attn_stage_kind(s);
    return s >= 0 && s < STAGE_COUNT && (k == STAGE_KIND_HEAD || k == STAGE_KIND_SQUARE);
}

bool attn_stage_is_key_side(enum attn_stage s)
{
    return s == STAGE_KEYS || s == STAGE_VALUES || s == STAGE_KEYS_NORMED ||
           s == STAGE_KEYS_ROTATED;
}

bool attn_stage_is_block(enum attn_stage s)
{
    return s >= 0 && s < STAGE_COUNT && attn_stage_kind(s) == STAGE_KIND_BLOCK;
}

bool attn_stage_is_on_demand(enum attn_stage s)
{
    switch (s) {
#define X(id) case STAGE_##id:
        ATTN_DERIVED_STAGES(X)
#undef X
        return true;
    default:
        return false;
    }
}
