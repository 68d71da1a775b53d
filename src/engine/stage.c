/* stage: names and shapes of the pipeline steps (see stage.h). */
#include "engine/stage.h"

#include <string.h>

static const char *const names[STAGE_COUNT] = {
    "inputs",        "latent",        "queries", "keys",      "values",    "queries_rotated",
    "keys_rotated",  "scores",        "scaled",  "masked",    "weights",   "dropout",
    "weighted_norm", "context",       "concat",  "output",    "residual1", "norm1",
    "ffn_hidden",    "ffn_activated", "ffn_out", "residual2", "norm2",     "final_norm",
};

/* As the explorer's heatmap and a picture's title call them. */
static const char *const titles[STAGE_COUNT] = {
    [STAGE_INPUTS] = "inputs",
    [STAGE_LATENT] = "latent c (MLA)",
    [STAGE_QUERIES] = "queries Q",
    [STAGE_KEYS] = "keys K",
    [STAGE_VALUES] = "values V",
    [STAGE_QUERIES_ROTATED] = "queries rotated (RoPE)",
    [STAGE_KEYS_ROTATED] = "keys rotated (RoPE)",
    [STAGE_SCORES] = "scores Q\u00b7K\u1d40",
    [STAGE_SCALED] = "scaled scores",
    [STAGE_MASKED] = "masked scores",
    [STAGE_WEIGHTS] = "attention weights",
    [STAGE_DROPOUT] = "weights after dropout",
    [STAGE_WEIGHTED_NORM] = "weighted norms \u2016\u03b1\u00b7v\u00b7W_O\u2016",
    [STAGE_CONTEXT] = "context vectors",
    [STAGE_CONCAT] = "all heads concatenated",
    [STAGE_OUTPUT] = "output",
    [STAGE_RESIDUAL1] = "residual: input + attention",
    [STAGE_NORM1] = "norm1",
    [STAGE_FFN_HIDDEN] = "FFN: x \u00b7 W1 + b1",
    [STAGE_FFN_ACTIVATED] = "FFN activated",
    [STAGE_FFN_OUT] = "FFN out: \u00b7 W2 + b2",
    [STAGE_RESIDUAL2] = "residual: + FFN",
    [STAGE_NORM2] = "norm2",
    [STAGE_FINAL_NORM] = "final norm (ln_f)",
};

const char *attn_stage_title(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? titles[s] : "?";
}

const char *attn_stage_name(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? names[s] : "?";
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
    for (int i = 0; i < STAGE_COUNT; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(name, aliases[i].alias) == 0)
            return (int)aliases[i].s;
    return -1;
}

bool attn_stage_is_square(enum attn_stage s)
{
    return s >= STAGE_SCORES && s <= STAGE_WEIGHTED_NORM;
}

bool attn_stage_is_per_head(enum attn_stage s)
{
    return s >= STAGE_QUERIES && s <= STAGE_CONTEXT;
}

bool attn_stage_is_block(enum attn_stage s)
{
    return s >= STAGE_RESIDUAL1 && s <= STAGE_FINAL_NORM;
}
