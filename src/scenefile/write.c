/* write: struct scene -> YAML a person can read, and parse back to the same struct.
 *
 * Written by hand with fprintf rather than the libyaml emitter, to control the layout: keys in
 * the order of README.md ("Scene format"), matrices as flow sequences with one row per line, short
 * mappings on one line. Strings are plain when that is unambiguous (a letter first, no YAML
 * indicator, not a word YAML 1.1 reads as a bool or null) and double-quoted with escapes
 * otherwise, so tokens such as `yes`, `-`, `:`, `#`, ` step` or `"` come back unchanged.
 * A float is written with the shortest of "%.6g" and "%.9g" that reads back to the same bits
 * (9 significant digits always do for float32; dropout and scale are doubles: 15 or 17),
 * through common/cnum, so in the C locale whatever the UI's.
 * Without `explicit` only what differs from scene_init() is written; with it, every effective
 * value (scene_eff_*) is, so the file no longer depends on defaults.
 */
#include "scenefile/scenefile.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cnum.h"
#include "common/fsutil.h"
#include "common/utf8.h"
#include "scenefile/loader.h"

struct writer {
    FILE *f;
    const struct scene *s;
    struct scene def; /* scene_init's values: what may be left out */
    bool explicit;
};

/* ---- checks before anything is written ---------------------------------------------------- */

static bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        int n = utf8_decode((const char *)p, &cp);
        if (n == 0)
            return false;
        p += n;
    }
    return true;
}

static int check_string(const char *s, const char *what, struct diag *err)
{
    if (s && !utf8_valid(s))
        return diag_set(err, what, "cannot write '%s': it is not valid UTF-8 text", what);
    return 0;
}

static int check_matrix(const struct matrix *m, const char *what, struct diag *err)
{
    if (!m->data)
        return 0;
    for (size_t i = 0; i < (size_t)m->rows * (size_t)m->cols; i++)
        if (!isfinite(m->data[i]))
            return diag_set(err, what,
                            "cannot write '%s': row %zu, column %zu is not a finite number", what,
                            i / (size_t)m->cols + 1, i % (size_t)m->cols + 1);
    return 0;
}

static int check_scene(const struct scene *s, struct diag *err)
{
    if (check_string(s->title, "title", err) || check_string(s->text, "text", err))
        return -1;
    for (int i = 0; i < s->n_tokens; i++)
        if (check_string(s->tokens[i], "tokens", err))
            return -1;
    if (s->attn.scale == SCALE_DIVISOR &&
        !(isfinite(s->attn.scale_divisor) && s->attn.scale_divisor > 0))
        return diag_set(err, "attention.scale",
                        "cannot write 'scale': it is not a positive number");
    if (!isfinite(s->attn.dropout))
        return diag_set(err, "attention.dropout", "cannot write 'dropout': it is not a number");
    const struct scene_weights *w = &s->weights;
    if (check_matrix(&s->embed.rows, "embeddings", err) ||
        check_matrix(&s->pos.table, "positional.table", err) ||
        check_matrix(&w->query, "weights.query", err) ||
        check_matrix(&w->key, "weights.key", err) ||
        check_matrix(&w->value, "weights.value", err) ||
        check_matrix(&w->query_bias, "weights.query_bias", err) ||
        check_matrix(&w->key_bias, "weights.key_bias", err) ||
        check_matrix(&w->value_bias, "weights.value_bias", err) ||
        check_matrix(&w->out, "weights.out", err) ||
        check_matrix(&w->out_bias, "weights.out_bias", err))
        return -1;
    return 0;
}

/* ---- scalars ------------------------------------------------------------------------------ */

static bool reserved_word(const char *s)
{
    static const char *const words[] = {"true", "false", "yes", "no",  "on",
                                        "off",  "y",     "n",   "null"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(s, words[i]) == 0)
            return true;
    return false;
}

/* Code points libyaml will not take raw (or that would read as a line break or BOM). */
static bool needs_escape(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

/* Plain only when no YAML reader could take it for anything but this string. */
static bool plain_ok(const char *s, bool flow)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    if (n == 0 || p[n - 1] == ' ' || reserved_word(s))
        return false;
    if (!((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z') || p[0] >= 0x80))
        return false;
    while (*p) {
        uint32_t cp;
        int len = utf8_decode((const char *)p, &cp);
        if (len == 0 || needs_escape(cp))
            return false;
        if (cp < 0x80) {
            bool alnum =
                (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
            if (!alnum && cp != ' ' && !strchr("_-.'()/+!?;=$%^~&*<>|@`", (int)cp) &&
                !(cp == ',' && !flow))
                return false;
        }
        p += len;
    }
    return true;
}

static void write_quoted(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        uint32_t cp;
        int len = utf8_decode((const char *)p, &cp);
        if (len == 0) { /* checked before writing; keep the byte visible rather than lose it */
            fprintf(f, "\\x%02X", *p);
            p++;
            continue;
        }
        if (cp == '"')
            fputs("\\\"", f);
        else if (cp == '\\')
            fputs("\\\\", f);
        else if (cp == '\n')
            fputs("\\n", f);
        else if (cp == '\t')
            fputs("\\t", f);
        else if (cp == '\r')
            fputs("\\r", f);
        else if (cp == 0x2028)
            fputs("\\L", f);
        else if (cp == 0x2029)
            fputs("\\P", f);
        else if (needs_escape(cp))
            fprintf(f, cp <= 0xFF ? "\\x%02X" : "\\u%04X", (unsigned)cp);
        else
            fwrite(p, 1, (size_t)len, f);
        p += len;
    }
    fputc('"', f);
}

static void write_string(FILE *f, const char *s, bool flow)
{
    if (plain_ok(s, flow))
        fputs(s, f);
    else
        write_quoted(f, s);
}

static void write_float(FILE *f, float v)
{
    char buf[32];
    cnum_format_float(buf, sizeof(buf), v);
    fputs(buf, f);
}

/* dropout and scale are doubles (torch computes 1 - p in double). */
static void write_double(FILE *f, double v)
{
    char buf[40];
    cnum_format_double(buf, sizeof(buf), v);
    fputs(buf, f);
}

static const char *yes_no(bool b)
{
    return b ? "true" : "false";
}

/* ---- matrices ----------------------------------------------------------------------------- */

/* Columns [col0, col0 + cols) of rows x stride data, as "[[a, b],\n<indent> [c, d]]" where
 * indent is the column of the opening bracket. */
static void write_rows(FILE *f, const float *data, int rows, int cols, int stride, int col0,
                       int indent)
{
    fputc('[', f);
    for (int r = 0; r < rows; r++) {
        if (r > 0)
            fprintf(f, ",\n%*s", indent + 1, "");
        fputc('[', f);
        for (int c = 0; c < cols; c++) {
            if (c > 0)
                fputs(", ", f);
            write_float(f, data[(size_t)r * stride + col0 + c]);
        }
        fputc(']', f);
    }
    fputc(']', f);
}

/* "<prefix>key: [[...]]" for a whole matrix or one head's column block. The prefix is what
 * starts the line ("  ", "    - "), so continuation rows line up under the first one. */
static void write_matrix_key(FILE *f, const char *prefix, const char *key, const struct matrix *m,
                             int col0, int cols)
{
    fprintf(f, "%s%s: ", prefix, key);
    write_rows(f, m->data, m->rows, cols, m->cols, col0, (int)(strlen(prefix) + strlen(key)) + 2);
    fputc('\n', f);
}

static void write_vector_key(FILE *f, const char *prefix, const char *key, const struct matrix *m,
                             int col0, int cols)
{
    fprintf(f, "%s%s: [", prefix, key);
    for (int c = 0; c < cols; c++) {
        if (c > 0)
            fputs(", ", f);
        write_float(f, m->data[col0 + c]);
    }
    fputs("]\n", f);
}

static void write_mask(FILE *f, const char *prefix, const struct scene *s)
{
    const unsigned char *mask = s->weights.dropout_mask;
    int n = s->weights.dropout_mask_n, heads = s->weights.dropout_mask_heads;
    fprintf(f, "%sdropout_mask: [", prefix);
    int open = (int)(strlen(prefix) + strlen("dropout_mask: "));
    for (int h = 0; h < heads; h++) {
        if (h > 0)
            fprintf(f, ",\n%*s", open + 1, "");
        fputc('[', f);
        for (int r = 0; r < n; r++) {
            if (r > 0)
                fprintf(f, ",\n%*s", open + 2, "");
            fputc('[', f);
            for (int c = 0; c < n; c++)
                fprintf(f, c ? ", %d" : "%d", mask[((size_t)h * n + r) * n + c] ? 1 : 0);
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("]\n", f);
}

/* ---- sections ---------------------------------------------------------------------------- */

static void write_seed_pair(FILE *f, const char *key, const struct opt_seed *seed, bool *first)
{
    if (!seed->set)
        return;
    fprintf(f, "%s%s: %llu", *first ? "" : ", ", key, (unsigned long long)seed->value);
    *first = false;
}

static void write_embeddings(struct writer *w)
{
    const struct scene *s = w->s;
    FILE *f = w->f;
    if (s->embed.kind == EMBED_EXPLICIT && s->embed.rows.data) {
        write_matrix_key(f, "", "embeddings", &s->embed.rows, 0, s->embed.rows.cols);
    } else if (w->explicit || s->embed.kind != w->def.embed.kind ||
               s->embed.dim != w->def.embed.dim || s->embed.seed.set) {
        bool first = false;
        fprintf(f, "embeddings: {dim: %d", scene_d_in(s));
        write_seed_pair(f, "seed", &s->embed.seed, &first);
        fputs("}\n", f);
    }
}

static void write_positional(struct writer *w)
{
    const struct scene *s = w->s;
    FILE *f = w->f;
    bool kind = w->explicit || s->pos.kind != w->def.pos.kind;
    bool max_len = w->explicit || s->pos.max_len != w->def.pos.max_len;
    bool table = s->pos.table.data != NULL;
    if (!kind && !max_len && !s->pos.seed.set && !table)
        return;
    const char *kind_name = s->pos.kind == POS_LEARNED ? "learned" : "none";
    if (!table) {
        /* One line, as in the format's example: {kind: learned, max_len: 10, seed: 123} */
        bool first = true;
        fputs("positional: {", f);
        if (kind) {
            fprintf(f, "kind: %s", kind_name);
            first = false;
        }
        if (max_len) {
            fprintf(f, "%smax_len: %d", first ? "" : ", ", s->pos.max_len);
            first = false;
        }
        write_seed_pair(f, "seed", &s->pos.seed, &first);
        fputs("}\n", f);
        return;
    }
    fputs("positional:\n", f);
    if (kind)
        fprintf(f, "  kind: %s\n", kind_name);
    if (max_len)
        fprintf(f, "  max_len: %d\n", s->pos.max_len);
    if (s->pos.seed.set)
        fprintf(f, "  seed: %llu\n", (unsigned long long)s->pos.seed.value);
    write_matrix_key(f, "  ", "table", &s->pos.table, 0, s->pos.table.cols);
}

static void write_attention(struct writer *w)
{
    const struct scene *s = w->s;
    const struct attn_config *a = &s->attn, *d = &w->def.attn;
    FILE *f = w->f;
    bool ex = w->explicit;
    if (ex)
        fprintf(f, "  projection: %s\n", projection_name(scene_eff_projection(s)));
    else if (a->projection != d->projection)
        fprintf(f, "  projection: %s\n", projection_name(a->projection));
    if (ex || a->d_out != d->d_out)
        fprintf(f, "  d_out: %d\n", ex ? scene_eff_d_out(s) : a->d_out);
    if (ex || a->heads != d->heads)
        fprintf(f, "  heads: %d\n", a->heads);
    if (ex || a->layout != d->layout)
        fprintf(f, "  head_layout: %s\n", layout_name(a->layout));
    if (ex || a->causal != d->causal)
        fprintf(f, "  causal: %s\n", yes_no(a->causal));
    if (ex || a->mask_mode != d->mask_mode)
        fprintf(f, "  mask_mode: %s\n", mask_mode_name(a->mask_mode));
    if (ex || a->normalize != d->normalize)
        fprintf(f, "  normalize: %s\n", normalize_name(a->normalize));
    enum scale_kind scale = ex ? scene_eff_scale(s) : a->scale;
    if (scale == SCALE_SQRT_DK || scale == SCALE_NONE) {
        fprintf(f, "  scale: %s\n", yes_no(scale == SCALE_SQRT_DK));
    } else if (scale == SCALE_DIVISOR) {
        fputs("  scale: ", f);
        write_double(f, a->scale_divisor);
        fputc('\n', f);
    }
    if (ex || memcmp(&a->dropout, &d->dropout, sizeof(a->dropout)) != 0) {
        fputs("  dropout: ", f);
        write_double(f, a->dropout);
        fputc('\n', f);
    }
    if (a->dropout_seed.set)
        fprintf(f, "  dropout_seed: %llu\n", (unsigned long long)a->dropout_seed.value);
    if (ex || a->qkv_bias != d->qkv_bias)
        fprintf(f, "  qkv_bias: %s\n", yes_no(a->qkv_bias));
    if (ex)
        fprintf(f, "  out_proj: %s\n", yes_no(scene_eff_out_proj(s)));
    else if (a->out_proj != TRI_DEFAULT)
        fprintf(f, "  out_proj: %s\n", yes_no(a->out_proj == TRI_TRUE));
    if (ex || a->out_bias != d->out_bias)
        fprintf(f, "  out_bias: %s\n", yes_no(a->out_bias));
    if (a->seed.set)
        fprintf(f, "  seed: %llu\n", (unsigned long long)a->seed.value);
}

static bool attention_differs(const struct writer *w)
{
    const struct attn_config *a = &w->s->attn, *d = &w->def.attn;
    return w->explicit || a->projection != d->projection || a->d_out != d->d_out ||
           a->heads != d->heads || a->layout != d->layout || a->causal != d->causal ||
           a->mask_mode != d->mask_mode || a->normalize != d->normalize || a->scale != d->scale ||
           memcmp(&a->dropout, &d->dropout, sizeof(a->dropout)) != 0 || a->dropout_seed.set ||
           a->qkv_bias != d->qkv_bias || a->out_proj != d->out_proj || a->out_bias != d->out_bias ||
           a->seed.set;
}

static void write_weights(struct writer *w)
{
    const struct scene *s = w->s;
    const struct scene_weights *wt = &s->weights;
    FILE *f = w->f;
    bool mask = wt->dropout_mask && wt->dropout_mask_n > 0 && wt->dropout_mask_heads > 0;
    if (!wt->set && !mask)
        return;
    fputs("weights:\n", f);
    const struct matrix *qkv[6] = {&wt->query,      &wt->key,      &wt->value,
                                   &wt->query_bias, &wt->key_bias, &wt->value_bias};
    static const char *const names[6] = {"query",      "key",      "value",
                                         "query_bias", "key_bias", "value_bias"};
    int heads = s->attn.heads;
    /* The wrapper layout is written as the format shows it: one mapping per head, each
     * head's column block of the concatenated matrices. */
    bool per_head = wt->set && s->attn.layout == LAYOUT_WRAPPER && heads > 0 && wt->query.data &&
                    wt->query.cols % heads == 0;
    for (int i = 0; per_head && i < 6; i++)
        if (qkv[i]->data && qkv[i]->cols != wt->query.cols)
            per_head = false;
    if (per_head) {
        int hd = wt->query.cols / heads;
        fputs("  heads:\n", f);
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < 6; i++) {
                if (!qkv[i]->data)
                    continue;
                /* "    - query: ..." for a head's first key, "      key: ..." after it. */
                const char *prefix = i == 0 ? "    - " : "      ";
                if (i < 3)
                    write_matrix_key(f, prefix, names[i], qkv[i], h * hd, hd);
                else
                    write_vector_key(f, prefix, names[i], qkv[i], h * hd, hd);
            }
        }
    } else if (wt->set) {
        for (int i = 0; i < 6; i++) {
            if (!qkv[i]->data)
                continue;
            if (i < 3)
                write_matrix_key(f, "  ", names[i], qkv[i], 0, qkv[i]->cols);
            else
                write_vector_key(f, "  ", names[i], qkv[i], 0, qkv[i]->cols);
        }
    }
    if (wt->set && wt->out.data)
        write_matrix_key(f, "  ", "out", &wt->out, 0, wt->out.cols);
    if (wt->set && wt->out_bias.data)
        write_vector_key(f, "  ", "out_bias", &wt->out_bias, 0, wt->out_bias.cols);
    if (mask)
        write_mask(f, "  ", s);
}

static void write_scene(struct writer *w)
{
    const struct scene *s = w->s;
    FILE *f = w->f;
    fprintf(f, "version: %d\n", SCENE_SCHEMA_VERSION);
    if (s->title) {
        fputs("title: ", f);
        write_string(f, s->title, false);
        fputc('\n', f);
    }
    if (s->text) {
        fputs("text: ", f);
        write_string(f, s->text, false);
        fputc('\n', f);
    } else if (s->n_tokens > 0) {
        fputs("tokens: [", f);
        for (int i = 0; i < s->n_tokens; i++) {
            if (i > 0)
                fputs(", ", f);
            write_string(f, s->tokens[i], true);
        }
        fputs("]\n", f);
    }
    if (w->explicit || s->tokenizer != w->def.tokenizer)
        fprintf(f, "tokenizer: %s\n", tokenizer_name(s->tokenizer));
    if (w->explicit || s->seed != w->def.seed)
        fprintf(f, "seed: %llu\n", (unsigned long long)s->seed);
    write_embeddings(w);
    write_positional(w);
    if (attention_differs(w)) {
        fputs("attention:\n", f);
        write_attention(w);
    }
    write_weights(w);
}

int scenefile_write(FILE *out, const struct scene *s, bool explicit, struct diag *err)
{
    struct diag scratch;
    if (!err)
        err = &scratch;
    diag_clear(err);
    if (check_scene(s, err) != 0)
        return -1;
    struct writer w = {.f = out, .s = s, .explicit = explicit};
    scene_init(&w.def);

    write_scene(&w);
    scene_free(&w.def);
    if (ferror(out))
        return diag_set(err, "", "cannot write the scene: output error");
    return 0;
}

struct save_ctx {
    const struct scene *s;
    bool explicit;
};

static int save_cb(FILE *f, void *ctx, struct diag *err)
{
    const struct save_ctx *c = ctx;
    return scenefile_write(f, c->s, c->explicit, err);
}

int scenefile_save(const char *path, const struct scene *s, bool explicit, bool overwrite,
                   struct diag *err)
{
    struct save_ctx c = {.s = s, .explicit = explicit};
    return fsutil_write_atomic(path, overwrite, save_cb, &c, err);
}
