/* schema_values: the handlers of single values (see schema.h). */
#include "scenefile/schema.h"

/* ---- scalars ------------------------------------------------------------------------------ */

bool attn_schema_has_nul(const struct loader *l, int node)
{
    return strlen(str_of(l, node)) != nd_of(l, node)->u.s.len;
}

bool attn_schema_is_nothing(const struct loader *l, int node)
{
    const struct ynode *nd = nd_of(l, node);
    return nd->type == YNODE_SCALAR && nd->plain && nd->u.s.len == 0;
}

/* YAML 1.1 booleans, any case. */
static int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* Integers and numbers go through common/cnum: the C locale, whatever the UI's. */
static int parse_u64(const char *s, uint64_t *out, bool *negative)
{
    enum cnum_result r = attn_cnum_parse_u64(s, out, negative);
    return r == CNUM_OK ? 0 : r == CNUM_RANGE ? 1 : -1;
}

int attn_schema_parse_ll(const char *s, long long *out)
{
    enum cnum_result r = attn_cnum_parse_ll(s, out);
    return r == CNUM_OK ? 0 : r == CNUM_RANGE ? 1 : -1;
}

/* A finite number, read as Python reads it (a correctly rounded double). */
enum num attn_schema_scalar_number(const struct loader *l, int node, double *out)
{
    if (nd_of(l, node)->type != YNODE_SCALAR || attn_schema_has_nul(l, node))
        return NUM_NOT_NUMBER;
    switch (attn_cnum_parse_double(str_of(l, node), false, out)) {
    case CNUM_OK:
        return NUM_OK;
    case CNUM_NOT_FINITE:
        return NUM_NOT_FINITE;
    default:
        return NUM_NOT_NUMBER;
    }
}

/* "'key' must be <what>, got <value>": the message for both wrong node types and bad values. */

static void number_error(struct loader *l, const struct field *f, int node, const char *path,
                         enum num r)
{
    char buf[LOADER_SHOW_MAX];
    if (r == NUM_NOT_NUMBER)
        attn_schema_must_be(l, f, node, path);
    else
        attn_loader_error(l, node, path, "'%s' must be a finite number, got %s", f->key,
                          attn_loader_show(l, node, buf, sizeof(buf)));
}

/* ---- handlers: single values ------------------------------------------------------------ */

void attn_schema_must_be(struct loader *l, const struct field *f, int node, const char *path)
{
    char buf[LOADER_SHOW_MAX], what[512];
    const char *w = f->what;
    if (f->handler == attn_schema_enum) {
        /* "whitespace, words or chars" */
        const struct enum_def *e = f->arg;
        size_t o = 0;
        what[0] = '\0';
        for (int i = 0; i < e->n && o < sizeof(what); i++)
            o += (size_t)snprintf(what + o, sizeof(what) - o, "%s%s",
                                  i == 0          ? ""
                                  : i == e->n - 1 ? " or "
                                                  : ", ",
                                  e->name(e->values[i]));
        w = what;
    }
    attn_loader_error(l, node, path, "'%s' must be %s, got %s", f->key, w,
                      attn_loader_show(l, node, buf, sizeof(buf)));
}

void attn_schema_int(struct loader *l, const struct field *f, int node, void *base,
                     const char *path)
{
    const struct int_range *r = f->arg;
    long long v = 0;
    int rc = attn_schema_parse_ll(str_of(l, node), &v);
    if (rc < 0 || attn_schema_has_nul(l, node)) {
        attn_schema_must_be(l, f, node, path);
        return;
    }
    if (rc > 0 || v < r->min || v > r->max) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_show(l, node, buf, sizeof(buf));
        if (r->max >= INT_MAX && (rc > 0 || v > r->max)) /* 20 digits: not "at least 0" */
            attn_loader_error(l, node, path, "'%s' is out of range, got %s (at most %lld)", f->key,
                              buf, r->max);
        else if (r->max >= INT_MAX)
            attn_loader_error(l, node, path, "'%s' must be at least %lld, got %s", f->key, r->min,
                              buf);
        else
            attn_loader_error(l, node, path, "'%s' must be between %lld and %lld, got %s", f->key,
                              r->min, r->max, buf);
        return;
    }
    *FIELD(base, f, int) = (int)v;
}

void attn_schema_version(struct loader *l, const struct field *f, int node, void *base,
                         const char *path)
{
    long long v;
    if (attn_schema_parse_ll(str_of(l, node), &v) != 0 || attn_schema_has_nul(l, node)) {
        attn_schema_must_be(l, f, node, path);
        return;
    }
    if (v != SCENE_SCHEMA_VERSION)
        attn_loader_error(l, node, path,
                          "unsupported schema version %lld: this attnscope reads version %d", v,
                          SCENE_SCHEMA_VERSION);
}

static int seed_value(struct loader *l, const struct field *f, int node, const char *path,
                      uint64_t *out)
{
    bool neg;
    int rc = parse_u64(str_of(l, node), out, &neg);
    if (rc != 0 || attn_schema_has_nul(l, node) || (neg && *out != 0)) {
        attn_schema_must_be(l, f, node, path);
        return -1;
    }
    return 0;
}

void attn_schema_seed(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    uint64_t v;
    if (seed_value(l, f, node, path, &v) == 0)
        *FIELD(base, f, uint64_t) = v;
}

void attn_schema_opt_seed(struct loader *l, const struct field *f, int node, void *base,
                          const char *path)
{
    uint64_t v;
    if (seed_value(l, f, node, path, &v) == 0) {
        struct attn_opt_seed *s = FIELD(base, f, struct attn_opt_seed);
        s->set = true;
        s->value = v;
    }
}

void attn_schema_bool(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    bool v;
    if (parse_bool(str_of(l, node), &v) != 0)
        attn_schema_must_be(l, f, node, path);
    else
        *FIELD(base, f, bool) = v;
}

void attn_schema_tristate(struct loader *l, const struct field *f, int node, void *base,
                          const char *path)
{
    bool v;
    if (parse_bool(str_of(l, node), &v) != 0)
        attn_schema_must_be(l, f, node, path);
    else
        *FIELD(base, f, enum attn_tristate) = v ? TRI_TRUE : TRI_FALSE;
}

void attn_schema_enum(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    const struct enum_def *e = f->arg;
    for (int i = 0; i < e->n; i++) {
        if (strcasecmp(str_of(l, node), e->name(e->values[i])) == 0 &&
            !attn_schema_has_nul(l, node)) {
            *FIELD(base, f, int) = e->values[i];
            return;
        }
    }
    int v = e->alias && !attn_schema_has_nul(l, node) ? e->alias(str_of(l, node)) : -1;
    if (v >= 0) {
        *FIELD(base, f, int) = v;
        return;
    }
    attn_schema_must_be(l, f, node, path);
}

/* A string value: "nothing" (an empty plain value) and NUL characters are refused. */
bool attn_schema_string_ok(struct loader *l, const struct field *f, int node, const char *path)
{
    if (attn_schema_is_nothing(l, node)) {
        attn_schema_must_be(l, f, node, path);
        return false;
    }
    if (attn_schema_has_nul(l, node)) {
        attn_loader_error(l, node, path, "'%s' must not contain NUL characters", f->key);
        return false;
    }
    return true;
}

void attn_schema_string(struct loader *l, const struct field *f, int node, void *base,
                        const char *path)
{
    if (!attn_schema_string_ok(l, f, node, path))
        return;
    char **dst = FIELD(base, f, char *);
    char *copy = strdup(str_of(l, node));
    if (!copy) {
        attn_loader_error(l, node, path, "out of memory");
        return;
    }
    free(*dst);
    *dst = copy;
}

/* text is tokenised at the end, once tokenizer is known (finish_top): a sentence, or two
 * ([A, B]) that a tokenizer's template joins (BERT's [CLS] A [SEP] B [SEP]). */
void attn_schema_text(struct loader *l, const struct field *f, int node, void *base,
                      const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    if (nd->type == YNODE_SEQ) {
        int a = nd->u.c.first, b = a >= 0 ? nd_of(l, a)->next : -1;
        if (nd->u.c.count != 2 || nd_of(l, a)->type != YNODE_SCALAR ||
            nd_of(l, b)->type != YNODE_SCALAR) {
            attn_loader_error(l, node, path,
                              "'text' is a sentence, or a list of two sentences ([A, B]) for a "
                              "tokenizer that joins a pair; this list has %d item%s",
                              nd->u.c.count, nd->u.c.count == 1 ? "" : "s");
            return;
        }
        if (attn_schema_string_ok(l, f, a, path) && attn_schema_string_ok(l, f, b, path)) {
            l->text_node = a;
            l->pair_node = b;
        }
        return;
    }
    if (nd->type == YNODE_MAP) { /* an encoder-decoder's two sequences */
        int got[2] = {-1, -1};
        static const char *const names[2] = {"source", "target"};
        for (int k = nd->u.c.first; k >= 0; k = nd_of(l, nd_of(l, k)->next)->next) {
            int v = nd_of(l, k)->next, which = -1;
            for (int i = 0; i < 2; i++)
                if (nd_of(l, k)->type == YNODE_SCALAR && strcmp(str_of(l, k), names[i]) == 0)
                    which = i;
            if (which < 0) {
                attn_loader_error(l, k, path,
                                  "'text' of two sequences has the keys 'source' (what the "
                                  "encoder reads) and 'target' (what the decoder reads)");
                return;
            }
            if (nd_of(l, v)->type != YNODE_SCALAR) {
                attn_loader_error(l, v, path, "'text.%s' must be a string", names[which]);
                return;
            }
            if (!attn_schema_string_ok(l, f, v, path))
                return;
            got[which] = v;
        }
        if (got[0] < 0 || got[1] < 0) {
            attn_loader_error(l, node, path,
                              "'text' of two sequences needs both 'source' and "
                              "'target'");
            return;
        }
        l->source_node = got[0];
        l->text_node = got[1];
        return;
    }
    if (nd->type != YNODE_SCALAR) {
        attn_loader_error(l, node, path,
                          "'text' must be a string, a list of two strings, or {source, target}");
        return;
    }
    if (attn_schema_string_ok(l, f, node, path))
        l->text_node = node;
}

void attn_schema_tokens(struct loader *l, const struct field *f, int node, void *base,
                        const char *path)
{
    const struct ynode *nd = nd_of(l, node);
    char buf[LOADER_SHOW_MAX];
    if (nd->u.c.count == 0) {
        attn_loader_error(l, node, path, "'tokens' is empty: give at least one token");
        return;
    }
    if (nd->u.c.count > SCENE_MAX_TOKENS) {
        attn_loader_error(l, node, path, "'tokens' has %d tokens, the limit is %d", nd->u.c.count,
                          SCENE_MAX_TOKENS);
        return;
    }
    bool ok = true;
    int i = 1;
    for (int c = nd->u.c.first; c >= 0 && !l->yd.stopped; c = nd_of(l, c)->next, i++) {
        const struct ynode *t = nd_of(l, c);
        if (t->type == YNODE_BAD) {
            ok = false;
        } else if (t->type != YNODE_SCALAR) {
            attn_loader_error(l, c, path, "token %d must be a string, got %s", i,
                              attn_loader_show(l, c, buf, sizeof(buf)));
            ok = false;
        } else if (t->u.s.len == 0) {
            attn_loader_error(l, c, path, "token %d is empty", i);
            ok = false;
        } else if (attn_schema_has_nul(l, c)) {
            attn_loader_error(l, c, path, "token %d contains a NUL character", i);
            ok = false;
        } else if (t->u.s.len > SCENE_MAX_TOKEN_BYTES) {
            attn_loader_error(l, c, path, "token %d is %u bytes long, the limit is %d bytes", i,
                              (unsigned)t->u.s.len, SCENE_MAX_TOKEN_BYTES);
            ok = false;
        }
    }
    if (ok)
        l->tokens_node = node;
}

void attn_schema_probability(struct loader *l, const struct field *f, int node, void *base,
                             const char *path)
{
    double v;
    enum num r = attn_schema_scalar_number(l, node, &v);
    if (r != NUM_OK) {
        number_error(l, f, node, path, r);
        return;
    }
    if (v < 0 || v > 1) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path, "'%s' must be between 0 and 1, got %s", f->key,
                          attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    *FIELD(base, f, double) = v;
}

/* A number above 0 (a base, an epsilon). */
void attn_schema_positive(struct loader *l, const struct field *f, int node, void *base,
                          const char *path)
{
    double v;
    enum num r = attn_schema_scalar_number(l, node, &v);
    if (r != NUM_OK) {
        number_error(l, f, node, path, r);
        return;
    }
    if (!(v > 0)) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path, "'%s' must be a number above 0, got %s", f->key,
                          attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    *FIELD(base, f, double) = v;
}

/* scale: true (divide by sqrt(d_k)), false (do not scale) or a positive number to divide by. */
void attn_schema_scale(struct loader *l, const struct field *f, int node, void *base,
                       const char *path)
{
    struct attn_config *a = FIELD(base, f, struct attn_config);
    bool b;
    if (parse_bool(str_of(l, node), &b) == 0) {
        a->scale = b ? SCALE_SQRT_DK : SCALE_NONE;
        return;
    }
    double v;
    enum num r = attn_schema_scalar_number(l, node, &v);
    if (r != NUM_OK) {
        number_error(l, f, node, path, r);
        return;
    }
    if (!(v > 0)) {
        char buf[LOADER_SHOW_MAX];
        attn_loader_error(l, node, path, "'%s' must be true, false or a positive number, got %s",
                          f->key, attn_loader_show(l, node, buf, sizeof(buf)));
        return;
    }
    a->scale = SCALE_DIVISOR;
    a->scale_divisor = v;
}
