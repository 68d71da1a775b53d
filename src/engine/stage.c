/* stage: names and shapes of the pipeline steps (see stage.h). */
#include "engine/stage.h"

#include <string.h>

static const char *const names[STAGE_COUNT] = {
    "inputs", "queries", "keys",    "values",  "scores", "scaled",
    "masked", "weights", "dropout", "context", "concat", "output",
};

const char *stage_name(enum stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? names[s] : "?";
}

int stage_parse(const char *name)
{
    static const struct {
        const char *alias;
        enum stage s;
    } aliases[] = {
        {"q", STAGE_QUERIES},   {"k", STAGE_KEYS},          {"v", STAGE_VALUES},
        {"mask", STAGE_MASKED}, {"softmax", STAGE_WEIGHTS}, {"out", STAGE_OUTPUT},
    };
    for (int i = 0; i < STAGE_COUNT; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(name, aliases[i].alias) == 0)
            return (int)aliases[i].s;
    return -1;
}

bool stage_is_square(enum stage s)
{
    return s >= STAGE_SCORES && s <= STAGE_DROPOUT;
}

bool stage_is_per_head(enum stage s)
{
    return s >= STAGE_QUERIES && s <= STAGE_CONTEXT;
}
