/* stage: names and shapes of the pipeline steps (see stage.h). */
#include "engine/stage.h"

#include <string.h>

static const char *const names[STAGE_COUNT] = {
    [STAGE_INPUTS] = "inputs",
    [STAGE_LATENT] = "latent",
    [STAGE_QUERIES] = "queries",
    [STAGE_KEYS] = "keys",
    [STAGE_VALUES] = "values",
    [STAGE_QUERIES_NORMED] = "queries_normed",
    [STAGE_KEYS_NORMED] = "keys_normed",
    [STAGE_QUERIES_ROTATED] = "queries_rotated",
    [STAGE_KEYS_ROTATED] = "keys_rotated",
    [STAGE_SCORES] = "scores",
    [STAGE_SCALED] = "scaled",
    [STAGE_MASKED] = "masked",
    [STAGE_WEIGHTS] = "weights",
    [STAGE_DROPOUT] = "dropout",
    [STAGE_WEIGHTED_NORM] = "weighted_norm",
    [STAGE_CONTEXT] = "context",
    [STAGE_CONCAT] = "concat",
    [STAGE_OUTPUT] = "output",
    [STAGE_RESIDUAL1] = "residual1",
    [STAGE_NORM1] = "norm1",
    [STAGE_FFN_HIDDEN] = "ffn_hidden",
    [STAGE_FFN_GATE] = "ffn_gate",
    [STAGE_FFN_UP] = "ffn_up",
    [STAGE_FFN_ACTIVATED] = "ffn_activated",
    [STAGE_FFN_OUT] = "ffn_out",
    [STAGE_RESIDUAL2] = "residual2",
    [STAGE_NORM2] = "norm2",
    [STAGE_FINAL_NORM] = "final_norm",
};

/* As the explorer's map heading and a picture's title call them: the stage's one name first
 * (the stage bar's, --stage's, the README's), then what it is where a few words help. */
static const char *const titles[STAGE_COUNT] = {
    [STAGE_INPUTS] = "inputs",
    [STAGE_LATENT] = "latent (MLA's c = x \u00b7 W_down)",
    [STAGE_QUERIES] = "queries (Q)",
    [STAGE_KEYS] = "keys (K)",
    [STAGE_VALUES] = "values (V)",
    [STAGE_QUERIES_NORMED] = "queries_normed (q_norm, RMS over a head)",
    [STAGE_KEYS_NORMED] = "keys_normed (k_norm, RMS over a head)",
    [STAGE_QUERIES_ROTATED] = "queries_rotated (RoPE)",
    [STAGE_KEYS_ROTATED] = "keys_rotated (RoPE)",
    [STAGE_SCORES] = "scores (Q\u00b7K\u1d40)",
    [STAGE_SCALED] = "scaled",
    [STAGE_MASKED] = "masked",
    [STAGE_WEIGHTS] = "weights",
    [STAGE_DROPOUT] = "dropout",
    [STAGE_WEIGHTED_NORM] = "weighted_norm (\u2016\u03b1\u00b7v\u00b7W_O\u2016)",
    [STAGE_CONTEXT] = "context (weights \u00b7 V)",
    [STAGE_CONCAT] = "concat (every head's context)",
    [STAGE_OUTPUT] = "output",
    [STAGE_RESIDUAL1] = "residual1 (inputs + output)",
    [STAGE_NORM1] = "norm1",
    [STAGE_FFN_HIDDEN] = "ffn_hidden (x \u00b7 W1 + b1)",
    [STAGE_FFN_GATE] = "ffn_gate (x \u00b7 W_gate)",
    [STAGE_FFN_UP] = "ffn_up (x \u00b7 W1)",
    [STAGE_FFN_ACTIVATED] = "ffn_activated",
    [STAGE_FFN_OUT] = "ffn_out (\u00b7 W2 + b2)",
    [STAGE_RESIDUAL2] = "residual2 (+ ffn_out)",
    [STAGE_NORM2] = "norm2",
    [STAGE_FINAL_NORM] = "final_norm (ln_f)",
};

/* Short forms for an 80-column stage bar: words a learner reads, Q K V as the book writes them. */
static const char *const short_names[STAGE_COUNT] = {
    [STAGE_INPUTS] = "inputs",
    [STAGE_LATENT] = "latent",
    [STAGE_QUERIES] = "Q",
    [STAGE_KEYS] = "K",
    [STAGE_VALUES] = "V",
    [STAGE_QUERIES_NORMED] = "Q(norm)",
    [STAGE_KEYS_NORMED] = "K(norm)",
    [STAGE_QUERIES_ROTATED] = "Q(RoPE)",
    [STAGE_KEYS_ROTATED] = "K(RoPE)",
    [STAGE_SCORES] = "scores",
    [STAGE_SCALED] = "scaled",
    [STAGE_MASKED] = "masked",
    [STAGE_WEIGHTS] = "weights",
    [STAGE_DROPOUT] = "dropout",
    [STAGE_WEIGHTED_NORM] = "weighted",
    [STAGE_CONTEXT] = "context",
    [STAGE_CONCAT] = "concat",
    [STAGE_OUTPUT] = "output",
    [STAGE_RESIDUAL1] = "res1",
    [STAGE_NORM1] = "norm1",
    [STAGE_FFN_HIDDEN] = "hidden",
    [STAGE_FFN_GATE] = "gate",
    [STAGE_FFN_UP] = "up",
    [STAGE_FFN_ACTIVATED] = "activated",
    [STAGE_FFN_OUT] = "ffn_out",
    [STAGE_RESIDUAL2] = "res2",
    [STAGE_NORM2] = "norm2",
    [STAGE_FINAL_NORM] = "final",
};

const char *attn_stage_short_name(enum attn_stage s)
{
    return (s >= 0 && s < STAGE_COUNT) ? short_names[s] : "?";
}

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
