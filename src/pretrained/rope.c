/* rope: RoPE's keys of config.json in both formats (see rope.h).
 *
 * The fields each rope type takes, their defaults and the numbers made of them are transformers
 * 5's modeling_rope_utils.py (RotaryEmbeddingConfigMixin's standardize_rope_params and
 * _validate_*_rope_parameters, and the _compute_*_parameters functions): read there, written
 * here anew. The frequencies themselves are the engine's (model.c, rope_frequencies); this file
 * gives it the numbers, the attention factor worked out in double as Python works it out.
 */
#include "pretrained/rope.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The two places RoPE's fields are written: transformers 5's rope_parameters and 4's
 * rope_scaling (either may be NULL). */
struct rope_src {
    json_t *params, *scaling;
};

/* The rope types transformers computes, and the fields each takes besides rope_type (or its old
 * name type), rope_theta and partial_rotary_factor. */
static const struct {
    const char *name;
    enum attn_rope_scaling kind;
    const char *fields[9];
} TYPES[] = {
    {"default", ROPE_SCALING_NONE, {NULL}},
    {"linear", ROPE_SCALING_LINEAR, {"factor", NULL}},
    {"dynamic", ROPE_SCALING_DYNAMIC, {"factor", NULL}},
    {"yarn",
     ROPE_SCALING_YARN,
     {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
      "mscale", "mscale_all_dim", "truncate", NULL}},
    {"longrope",
     ROPE_SCALING_LONGROPE,
     {"short_factor", "long_factor", "original_max_position_embeddings", "attention_factor",
      "factor", NULL}},
    {"llama3",
     ROPE_SCALING_LLAMA3,
     {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings", NULL}},
};
#define N_TYPES (sizeof(TYPES) / sizeof(TYPES[0]))

static const char *const SHARED_FIELDS[] = {"rope_type", "type", "rope_theta",
                                            "partial_rotary_factor"};

/* name's value in rope_parameters, else in rope_scaling (rope_type: or its old name type);
 * *where gets the top-level key it is in ("rope_parameters" when it is in neither), *as the name
 * it is written under. NULL when it is in neither, or null. */
static json_t *field(const struct rope_src *r, const char *name, const char **where,
                     const char **as)
{
    json_t *objs[2] = {r->params, r->scaling};
    static const char *const keys[2] = {"rope_parameters", "rope_scaling"};
    bool type = strcmp(name, "rope_type") == 0;
    *where = r->params || !r->scaling ? "rope_parameters" : "rope_scaling";
    *as = name;
    for (int i = 0; i < 2; i++) {
        if (!objs[i])
            continue;
        json_t *v = json_object_get(objs[i], name);
        const char *spelled = name;
        if (!v && type) {
            v = json_object_get(objs[i], "type");
            spelled = "type";
        }
        if (v && !json_is_null(v)) {
            *where = keys[i];
            *as = spelled;
            return v;
        }
    }
    return NULL;
}

/* rope_parameters as transformers 5 may write it: one dict of fields, or one per layer type
 * ({"full_attention": {...}, "sliding_attention": {...}}). attnscope computes one RoPE for every
 * layer: several are refused unless they are the same. */
static int pick_params(json_t **out, json_t **sliding, struct ckpt_config *c, json_t *rp,
                       struct diag *err)
{
    *out = rp;
    const char *name;
    json_t *v, *first = NULL;
    size_t objects = 0;
    json_object_foreach(rp, name, v)
    {
        objects += json_is_object(v);
        if (json_is_object(v) && !first)
            first = v;
    }
    if (objects == 0 || objects != json_object_size(rp))
        return 0;
    if (sliding) { /* Gemma 3: the full layers' RoPE and the sliding layers' */
        json_object_foreach(rp, name, v)
        {
            if (strcmp(name, "full_attention") != 0 && strcmp(name, "sliding_attention") != 0)
                return attn_ckpt_config_error(c, "rope_parameters", name, err,
                                              "'rope_parameters' has RoPE for layer type '%s': "
                                              "the layers are full_attention or "
                                              "sliding_attention",
                                              name);
        }
        *out = json_object_get(rp, "full_attention");
        *sliding = json_object_get(rp, "sliding_attention");
        return 0;
    }
    json_object_foreach(rp, name, v)
    {
        if (!json_equal(v, first))
            return attn_ckpt_config_error(c, "rope_parameters", name, err,
                                          "'rope_parameters' gives its layer types RoPE of their "
                                          "own: attnscope computes one RoPE for every layer");
    }
    *out = first;
    return 0;
}

/* Gemma 3's sliding layers' base: the sliding_attention dict of rope_parameters (default RoPE
 * only) or the top-level rope_local_base_freq; where both are written they agree. */
static int read_local(struct ckpt_rope *out, struct ckpt_config *c, json_t *sliding,
                      struct diag *err)
{
    char got[64], other[64];
    out->base_local = 10000.0;
    json_t *top = json_object_get(c->root, "rope_local_base_freq"), *in = NULL;
    if (top && json_is_null(top))
        top = NULL;
    if (sliding) {
        const char *name;
        json_t *v;
        json_object_foreach(sliding, name, v)
        {
            bool type = strcmp(name, "rope_type") == 0 || strcmp(name, "type") == 0;
            if (type && !(json_is_string(v) && strcmp(json_string_value(v), "default") == 0))
                return attn_ckpt_config_error(c, "rope_parameters", "sliding_attention", err,
                                              "the sliding layers' rope type is %s: attnscope "
                                              "computes default RoPE there, as Gemma 3 has it",
                                              attn_ckpt_show_value(got, sizeof(got), v));
            if (!type && strcmp(name, "rope_theta") != 0 &&
                !(strcmp(name, "partial_rotary_factor") == 0 && json_is_number(v) &&
                  json_number_value(v) == 1.0))
                return attn_ckpt_config_error(c, "rope_parameters", "sliding_attention", err,
                                              "the sliding layers' RoPE has '%s': attnscope "
                                              "computes default RoPE there (rope_theta only)",
                                              name);
        }
        in = json_object_get(sliding, "rope_theta");
    }
    if (in && top && !attn_ckpt_json_same(in, top))
        return attn_ckpt_config_error(
            c, "rope_local_base_freq", NULL, err,
            "'rope_local_base_freq' is %s, the sliding layers' rope_theta in 'rope_parameters' "
            "%s: the two formats disagree",
            attn_ckpt_show_value(got, sizeof(got), top),
            attn_ckpt_show_value(other, sizeof(other), in));
    json_t *v = in ? in : top;
    if (v) {
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x > 1 && isfinite(x)))
            return attn_ckpt_config_error(c, in ? "rope_parameters" : "rope_local_base_freq", NULL,
                                          err,
                                          "the sliding layers' RoPE base is %s, not a number "
                                          "above 1",
                                          attn_ckpt_show_value(got, sizeof(got), v));
        out->base_local = x;
    }
    return 0;
}

/* Where both formats write a field, they must agree. */
static int formats_agree(struct ckpt_config *c, const struct rope_src *r, struct diag *err)
{
    if (!r->params || !r->scaling)
        return 0;
    const char *name;
    json_t *v;
    json_object_foreach(r->scaling, name, v)
    {
        bool type = strcmp(name, "type") == 0 || strcmp(name, "rope_type") == 0;
        json_t *p = json_object_get(r->params, name);
        if (!p && type)
            p = json_object_get(r->params, strcmp(name, "type") == 0 ? "rope_type" : "type");
        if (!p || json_is_null(p) || json_is_null(v) || attn_ckpt_json_same(p, v))
            continue;
        char a[64], b[64];
        return attn_ckpt_config_error(
            c, "rope_parameters", type && !json_object_get(r->params, name) ? "rope_type" : name,
            err, "'rope_parameters' has %s %s, 'rope_scaling' %s: the two formats disagree", name,
            attn_ckpt_show_value(a, sizeof(a), p), attn_ckpt_show_value(b, sizeof(b), v));
    }
    return 0;
}

/* A top-level key (top, or the field's own name when NULL) and the field name in
 * rope_parameters: where both are written they agree. The value (the field's first), or NULL;
 * *where, *as where it is written. */
static int top_or_field(json_t **out, struct ckpt_config *c, const struct rope_src *r,
                        const char *name, const char *top_name, const char **where, const char **as,
                        struct diag *err)
{
    if (!top_name)
        top_name = name;
    json_t *top = json_object_get(c->root, top_name);
    if (top && json_is_null(top))
        top = NULL;
    json_t *in = field(r, name, where, as);
    if (top && in && !attn_ckpt_json_same(top, in)) {
        char a[64], b[64];
        return attn_ckpt_config_error(
            c, *where, name, err, "'%s' has %s %s, the top-level '%s' %s: the two formats disagree",
            *where, name, attn_ckpt_show_value(a, sizeof(a), in), top_name,
            attn_ckpt_show_value(b, sizeof(b), top));
    }
    *out = in ? in : top;
    if (!in && top) {
        *where = top_name;
        *as = NULL; /* located at the top-level key */
    }
    return 0;
}

/* A number of the rope type's: above 0 and finite (lo_ok: 0 too). */
static int positive(double *out, struct ckpt_config *c, const char *where, const char *as,
                    const char *type, json_t *v, struct diag *err)
{
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(x > 0 && isfinite(x))) {
        char got[64];
        return attn_ckpt_config_error(c, where, as, err, "rope type %s needs '%s' above 0, not %s",
                                      type, as, attn_ckpt_show_value(got, sizeof(got), v));
    }
    *out = x;
    return 0;
}

/* A required number of the rope type's. */
static int required(double *out, struct ckpt_config *c, const struct rope_src *r, const char *type,
                    const char *name, struct diag *err)
{
    const char *where, *as;
    json_t *v = field(r, name, &where, &as);
    if (!v) {
        char got[64];
        return attn_ckpt_config_error(c, where, NULL, err,
                                      "rope type %s needs '%s' above 0, not %s", type, name,
                                      attn_ckpt_show_value(got, sizeof(got), v));
    }
    return positive(out, c, where, as, type, v, err);
}

/* An optional number (null or missing: *out as it is). */
static int optional(double *out, bool *given, struct ckpt_config *c, const struct rope_src *r,
                    const char *type, const char *name, struct diag *err)
{
    const char *where, *as;
    json_t *v = field(r, name, &where, &as);
    *given = v != NULL;
    return v ? positive(out, c, where, as, type, v, err) : 0;
}

/* YaRN's attention scale (transformers' get_mscale): 0.1 m ln(scale) + 1, or 1 below scale 1. */
static double yarn_mscale(double scale, double m)
{
    return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

/* longrope's short_factor or long_factor: head_dim / 2 numbers above 0, copied into b. */
static int factors(const float **out, struct ckpt_config *c, struct ckpt_backing *b,
                   const struct rope_src *r, const char *name, int pairs, struct diag *err)
{
    const char *where, *as;
    json_t *v = field(r, name, &where, &as);
    char got[64];
    if (!json_is_array(v) || json_array_size(v) != (size_t)pairs)
        return attn_ckpt_config_error(
            c, where, v ? as : NULL, err,
            "rope type longrope needs '%s', a list of %d numbers (one a pair of a head), not %s",
            name, pairs, attn_ckpt_show_value(got, sizeof(got), v));
    float *f = attn_ckpt_owned(b, (size_t)pairs);
    if (!f)
        return attn_ckpt_config_error(c, NULL, NULL, err, "out of memory");
    for (int i = 0; i < pairs; i++) {
        json_t *x = json_array_get(v, (size_t)i);
        double d = json_is_number(x) ? json_number_value(x) : NAN;
        if (!(d > 0 && isfinite(d)))
            return attn_ckpt_config_error(c, where, as, err,
                                          "rope type longrope needs '%s' above 0, not %s at [%d]",
                                          name, attn_ckpt_show_value(got, sizeof(got), x), i);
        f[i] = (float)d; /* torch.tensor(..., dtype=torch.float32) */
    }
    *out = f;
    return 0;
}

/* Every field of both dicts the type does not take: a warning each, as transformers warns. */
static void warn_unused(struct ckpt_config *c, const struct rope_src *r, int type)
{
    json_t *objs[2] = {r->params, r->scaling};
    static const char *const keys[2] = {"rope_parameters", "rope_scaling"};
    for (int i = 0; i < 2; i++) {
        const char *name;
        json_t *v;
        json_object_foreach(objs[i], name, v)
        {
            bool known = false;
            for (size_t k = 0; k < sizeof(SHARED_FIELDS) / sizeof(SHARED_FIELDS[0]); k++)
                known |= strcmp(name, SHARED_FIELDS[k]) == 0;
            for (int k = 0; TYPES[type].fields[k]; k++)
                known |= strcmp(name, TYPES[type].fields[k]) == 0;
            if (known)
                continue;
            char shown[200];
            attn_ckpt_show_name(shown, sizeof(shown), name);
            attn_ckpt_config_warn(c, keys[i], name,
                                  "'%s' of %s: rope type %s takes no such field (transformers "
                                  "ignores it, and so does attnscope)",
                                  shown, keys[i], TYPES[type].name);
        }
    }
}

int attn_ckpt_rope(struct ckpt_rope *out, struct ckpt_config *c, struct ckpt_backing *b,
                   const struct ckpt_rope_spec *spec, struct diag *err)
{
    int head_dim = spec->head_dim, positions = spec->positions;
    memset(out, 0, sizeof(*out));
    struct attn_rope_params *p = &out->scale;
    p->kind = ROPE_SCALING_NONE;
    p->attention_factor = 1.0;
    p->original_max = positions;
    char got[96];
    struct rope_src r = {NULL, NULL};
    static const char *const dicts[2] = {"rope_parameters", "rope_scaling"};
    json_t **slots[2] = {&r.params, &r.scaling};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(c->root, dicts[i]);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_object(v))
            return attn_ckpt_config_error(c, dicts[i], NULL, err,
                                          "'%s' is %s, not null or an object", dicts[i],
                                          attn_ckpt_show_value(got, sizeof(got), v));
        *slots[i] = v;
    }
    json_t *sliding = NULL;
    if (r.params && pick_params(&r.params, spec->local ? &sliding : NULL, c, r.params, err))
        return -1;
    if (spec->local && read_local(out, c, sliding, err))
        return -1;
    if (formats_agree(c, &r, err))
        return -1;

    /* the base: rope_parameters' rope_theta, or the top-level one, or transformers' 10000 */
    const char *where, *as;
    json_t *v;
    if (top_or_field(&v, c, &r, "rope_theta", spec->theta_key, &where, &as, err))
        return -1;
    out->theta = 10000.0;
    if (v) {
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x > 1 && isfinite(x)))
            return attn_ckpt_config_error(c, where, as, err,
                                          "'rope_theta' is %s, not a number above 1",
                                          attn_ckpt_show_value(got, sizeof(got), v));
        out->theta = x;
    }
    /* The share of a head that turns. Llama's RoPE turns the whole head: a part of it would not
       even broadcast in transformers. GPT-NeoX's turns int(head_dim * share) dimensions. */
    if (top_or_field(&v, c, &r, "partial_rotary_factor", spec->partial_key, &where, &as, err))
        return -1;
    double share = spec->partial_default > 0 ? spec->partial_default : 1.0;
    if (v) {
        share = json_is_number(v) ? json_number_value(v) : NAN;
        if (!spec->partial && share != 1.0)
            return attn_ckpt_config_error(c, where, as, err,
                                          "'%s' is %s: this model turns the whole head (RoPE over "
                                          "part of it is GPT-NeoX's and Phi's)",
                                          as ? as : where,
                                          attn_ckpt_show_value(got, sizeof(got), v));
        if (!(share > 0 && share <= 1))
            return attn_ckpt_config_error(
                c, where, as, err, "'%s' is %s, not a share of a head above 0 and up to 1",
                as ? as : where, attn_ckpt_show_value(got, sizeof(got), v));
    }
    out->rotary_dims = (int)(head_dim * share); /* Python's int(): truncated */
    if (out->rotary_dims < 2 || out->rotary_dims % 2 != 0)
        return attn_ckpt_config_error(
            c, v ? where : NULL, v ? as : NULL, err,
            "RoPE over %g of a head of %d turns %d dimensions: it turns pairs, so it needs an "
            "even number of at least 2",
            share, head_dim, out->rotary_dims);

    /* the type */
    v = field(&r, "rope_type", &where, &as);
    int type = 0;
    if (v) {
        const char *name = json_is_string(v) ? json_string_value(v) : NULL;
        if (spec->phi3 && name && (strcmp(name, "su") == 0 || strcmp(name, "yarn") == 0))
            name = "longrope"; /* Phi3Config's backward compatibility */
        if (spec->phi3 && name && strcmp(name, "default") != 0 && strcmp(name, "longrope") != 0)
            return attn_ckpt_config_error(c, where, as, err,
                                          "rope type %s: Phi-3 takes default or longrope (su and "
                                          "yarn are its old names of longrope)",
                                          attn_ckpt_show_value(got, sizeof(got), v));
        for (type = 0; name && type < (int)N_TYPES; type++)
            if (strcmp(name, TYPES[type].name) == 0)
                break;
        if (!name || type == (int)N_TYPES)
            return attn_ckpt_config_error(c, where, as, err,
                                          "rope type %s is not one attnscope computes (default, "
                                          "linear, dynamic, yarn, longrope, llama3)",
                                          attn_ckpt_show_value(got, sizeof(got), v));
    }
    /* no type: transformers takes the dict as default RoPE (and warns of its other fields) */
    const char *tname = TYPES[type].name;
    p->kind = TYPES[type].kind;
    warn_unused(c, &r, type);

    /* the pre-training length: Phi-3's top-level key wins in transformers 5; both must agree */
    bool long_type = p->kind == ROPE_SCALING_LLAMA3 || p->kind == ROPE_SCALING_YARN ||
                     p->kind == ROPE_SCALING_LONGROPE;
    if (long_type && spec->original_max > 0)
        p->original_max = spec->original_max;
    if (long_type) {
        if (top_or_field(&v, c, &r, "original_max_position_embeddings", NULL, &where, &as, err))
            return -1;
        if (v) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > INT32_MAX)
                return attn_ckpt_config_error(
                    c, where, as, err,
                    "rope type %s needs 'original_max_position_embeddings' (a number of "
                    "positions), not %s",
                    tname, attn_ckpt_show_value(got, sizeof(got), v));
            p->original_max = (int)json_integer_value(v);
        }
    }
    double factor = 0;
    bool given;
    switch (p->kind) {
    case ROPE_SCALING_NONE:
        return 0;
    case ROPE_SCALING_LINEAR:
    case ROPE_SCALING_DYNAMIC: /* dynamic grows past max_position_embeddings */
        p->original_max = positions;
        return required(&p->factor, c, &r, tname, "factor", err);
    case ROPE_SCALING_LLAMA3:
        if (required(&p->factor, c, &r, tname, "factor", err) ||
            required(&p->low_freq_factor, c, &r, tname, "low_freq_factor", err) ||
            required(&p->high_freq_factor, c, &r, tname, "high_freq_factor", err))
            return -1;
        field(&r, "high_freq_factor", &where, &as);
        if (!(p->high_freq_factor > p->low_freq_factor))
            return attn_ckpt_config_error(c, where, as, err,
                                          "rope type llama3 needs high_freq_factor above "
                                          "low_freq_factor (%g, %g)",
                                          p->high_freq_factor, p->low_freq_factor);
        return 0;
    case ROPE_SCALING_YARN: {
        /* factor: given, else the ratio of the lengths (DeepSeek-V3's) */
        double ratio = (double)positions / p->original_max;
        if (optional(&factor, &given, c, &r, tname, "factor", err))
            return -1;
        if (!given)
            factor = ratio;
        else if (ratio != factor && ratio != 1) {
            field(&r, "factor", &where, &as);
            attn_ckpt_config_warn(c, where, "factor",
                                  "rope type yarn: factor %g, but max_position_embeddings / "
                                  "original_max_position_embeddings is %g: transformers 5 uses "
                                  "factor, as attnscope does (transformers 4 used the ratio)",
                                  factor, ratio);
        }
        p->factor = factor;
        double att = 0, mscale = 0, mscale_all = 0;
        bool has_att, has_m, has_all;
        if (optional(&att, &has_att, c, &r, tname, "attention_factor", err) ||
            optional(&mscale, &has_m, c, &r, tname, "mscale", err) ||
            optional(&mscale_all, &has_all, c, &r, tname, "mscale_all_dim", err))
            return -1;
        if (!has_att)
            att = has_m && has_all ? yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all)
                                   : yarn_mscale(factor, 1.0);
        p->attention_factor = att;
        /* beta_fast, beta_slow: 32 and 1 unless given (Python's `or`: 0 is not given) */
        p->beta_fast = 32;
        p->beta_slow = 1;
        static const char *const betas[2] = {"beta_fast", "beta_slow"};
        double *dst[2] = {&p->beta_fast, &p->beta_slow};
        for (int i = 0; i < 2; i++) {
            v = field(&r, betas[i], &where, &as);
            double x = json_is_number(v) ? json_number_value(v) : NAN;
            if (v && !isfinite(x))
                return attn_ckpt_config_error(c, where, as, err,
                                              "rope type yarn needs '%s' a number, not %s",
                                              betas[i], attn_ckpt_show_value(got, sizeof(got), v));
            if (v && x != 0)
                *dst[i] = x;
        }
        v = field(&r, "truncate", &where, &as);
        if (v && !json_is_boolean(v))
            return attn_ckpt_config_error(c, where, as, err,
                                          "rope type yarn needs 'truncate' true or false, not %s",
                                          attn_ckpt_show_value(got, sizeof(got), v));
        p->truncate = !v || json_is_true(v);
        return 0;
    }
    case ROPE_SCALING_LONGROPE: {
        p->n_factors = out->rotary_dims / 2;
        if (factors(&p->short_factor, c, b, &r, "short_factor", p->n_factors, err) ||
            factors(&p->long_factor, c, b, &r, "long_factor", p->n_factors, err))
            return -1;
        double att = 0;
        bool has_att;
        if (optional(&factor, &given, c, &r, tname, "factor", err) ||
            optional(&att, &has_att, c, &r, tname, "attention_factor", err))
            return -1;
        if (!given) /* Phi-3's: the ratio of the lengths */
            factor = (double)positions / p->original_max;
        p->factor = factor;
        if (!has_att)
            att = factor <= 1.0 ? 1.0 : sqrt(1 + log(factor) / log((double)p->original_max));
        p->attention_factor = att;
        return 0;
    }
    }
    return 0;
}
