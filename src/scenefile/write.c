/* write: struct attn_scene -> YAML a person can read, and parse back to the same struct.
 *
 * Written by hand with fprintf rather than the libyaml emitter, to control the layout: keys in
 * the order of README.md ("Scene format"), matrices as flow sequences with one row per line, short
 * mappings on one line. Strings are plain when that is unambiguous (a letter first, no YAML
 * indicator, not a word YAML 1.1 reads as a bool or null) and double-quoted with escapes
 * otherwise, so tokens such as `yes`, `-`, `:`, `#`, ` step` or `"` come back unchanged.
 * A float is written with the shortest of "%.6g" and "%.9g" that reads back to the same bits
 * (9 significant digits always do for float32; dropout and scale are doubles: 15 or 17),
 * through common/cnum, so in the C locale whatever the UI's.
 * Without `explicit` only what differs from attn_scene_init() is written; with it, every effective
 * value (scene_eff_*) is, so the file no longer depends on defaults.
 */
#include "scenefile/scenefile.h"
#include "scenefile/yamlstr.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cnum.h"
#include "common/fsutil.h"
#include "common/npy.h"
#include "common/utf8.h"
#include "engine/lesson.h"
#include "engine/stage.h"

struct writer {
    FILE *f;
    const struct attn_scene *s;
    struct attn_scene def;          /* attn_scene_init's values: what may be left out */
    struct scenefile_sidecar *side; /* where large matrices go, or NULL */
    size_t inline_values;           /* written inline so far */
    struct diag *err;
    bool failed; /* a side file could not be written (err says why) */
    bool explicit;
};

/* ---- checks before anything is written ---------------------------------------------------- */

static bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        int n = attn_utf8_decode((const char *)p, &cp);
        if (n == 0)
            return false;
        p += n;
    }
    return true;
}

static int check_string(const char *s, const char *what, struct diag *err)
{
    if (s && !utf8_valid(s))
        return attn_diag_set(err, what, "cannot write '%s': it is not valid UTF-8 text", what);
    return 0;
}

static int check_matrix(const struct attn_matrix *m, const char *what, struct diag *err)
{
    if (!m->data)
        return 0;
    for (size_t i = 0; i < (size_t)m->rows * (size_t)m->cols; i++)
        if (!isfinite(m->data[i]))
            return attn_diag_set(err, what,
                                 "cannot write '%s': row %zu, column %zu is not a finite number",
                                 what, i / (size_t)m->cols + 1, i % (size_t)m->cols + 1);
    return 0;
}

static int check_scene(const struct attn_scene *s, struct diag *err)
{
    if (check_string(s->title, "title", err) || check_string(s->text, "text", err) ||
        check_string(s->text_pair, "text", err))
        return -1;
    for (int i = 0; i < s->n_tokens; i++)
        if (check_string(s->tokens[i], "tokens", err))
            return -1;
    for (int i = 0; s->lesson && i < s->lesson->n_steps; i++)
        if (check_string(s->lesson->steps[i].caption, "lesson caption", err) ||
            check_string(s->lesson->steps[i].edit.text, "lesson text", err))
            return -1;
    if (s->attn.scale == SCALE_DIVISOR &&
        !(isfinite(s->attn.scale_divisor) && s->attn.scale_divisor > 0))
        return attn_diag_set(err, "attention.scale",
                             "cannot write 'scale': it is not a positive number");
    if (!isfinite(s->attn.dropout))
        return attn_diag_set(err, "attention.dropout",
                             "cannot write 'dropout': it is not a number");
    if (check_matrix(&s->embed.rows, "embeddings", err) ||
        check_matrix(&s->pos.table, "positional.table", err))
        return -1;
    for (int L = 0; L <= s->n_more; L++) {
        const struct attn_scene_weights *w = attn_scene_layer_weights(s, L);
#define X(name)                                                                                    \
    if (check_matrix(&w->name, "weights." #name, err))                                             \
        return -1;
        ATTN_WEIGHT_MATRICES(X)
#undef X
    }
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
        int len = attn_utf8_decode((const char *)p, &cp);
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
        int len = attn_utf8_decode((const char *)p, &cp);
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

void attn_scenefile_yaml_string(FILE *f, const char *s, bool flow)
{
    write_string(f, s, flow);
}

static void write_float(FILE *f, float v)
{
    char buf[32];
    attn_cnum_format_float(buf, sizeof(buf), v);
    fputs(buf, f);
}

/* dropout and scale are doubles (torch computes 1 - p in double). */
static void write_double(FILE *f, double v)
{
    char buf[40];
    attn_cnum_format_double(buf, sizeof(buf), v);
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

/* ---- side files --------------------------------------------------------------------------- */

void attn_scenefile_sidecar_free(struct scenefile_sidecar *side)
{
    for (int i = 0; i < side->n_written; i++)
        free(side->written[i]);
    free(side->written);
    side->written = NULL;
    side->n_written = 0;
}

/* True when a matrix of this many values goes to a side file; else it is counted inline. */
static bool goes_aside(struct writer *w, size_t values)
{
    if (w->side &&
        (values > SCENEFILE_INLINE_VALUES || w->inline_values + values > SCENEFILE_INLINE_TOTAL))
        return true;
    w->inline_values += values;
    return false;
}

struct npy_job {
    const void *data;
    bool bytes; /* uint8 (a keep mask), else float32 */
    int ndim;
    size_t shape[3];
};

static int write_npy_cb(FILE *f, void *ctx, struct diag *err)
{
    const struct npy_job *j = ctx;
    int rc = j->bytes ? attn_npy_write_u8(f, j->data, j->ndim, j->shape)
                      : attn_npy_write_f32(f, j->data, j->ndim, j->shape);
    return rc == 0 ? 0 : attn_diag_set(err, "", "cannot write: output error");
}

/* Writes data to the side folder as "<name>-<hash>.npy" (kept when a file of that name exists:
 * the same name is the same numbers) and "{file: <rel>/<that name>}" into the YAML. */
static void write_aside(struct writer *w, const char *name, struct npy_job *job, size_t bytes)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a over the shape and the bytes */
    const unsigned char *p = job->data;
    for (int d = 0; d < job->ndim; d++)
        h = (h ^ (uint64_t)job->shape[d]) * 1099511628211ull;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    char file[256], path[4096];
    snprintf(file, sizeof(file), "%s-%016llx.npy", name, (unsigned long long)h);
    fprintf(w->f, "{file: %s/%s}", w->side->rel, file);
    if (w->failed)
        return;
    int len = snprintf(path, sizeof(path), "%s/%s", w->side->dir, file);
    char **names = realloc(w->side->written, (size_t)(w->side->n_written + 1) * sizeof(*names));
    if (len < 0 || (size_t)len >= sizeof(path) || !names) {
        if (names)
            w->side->written = names;
        w->failed = true;
        attn_diag_set(w->err, "", names ? "the side-file path is too long" : "out of memory");
        return;
    }
    w->side->written = names;
    if (!(names[w->side->n_written] = strdup(file))) {
        w->failed = true;
        attn_diag_set(w->err, "", "out of memory");
        return;
    }
    w->side->n_written++;
    if (attn_fsutil_mkdir_p(w->side->dir, w->err) != 0) {
        w->failed = true;
        return;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return;
    if (attn_fsutil_write_atomic(path, true, write_npy_cb, job, w->err) != 0)
        w->failed = true;
}

/* Columns [col0, col0 + cols) of a matrix, to a side file. */
static void write_matrix_aside(struct writer *w, const char *name, const struct attn_matrix *m,
                               int col0, int cols, bool vector)
{
    size_t n = (size_t)m->rows * (size_t)cols;
    float *block = malloc((n ? n : 1) * sizeof(float));
    if (!block) {
        fputs("[]", w->f);
        w->failed = true;
        attn_diag_set(w->err, "", "out of memory");
        return;
    }
    for (int r = 0; r < m->rows; r++)
        memcpy(block + (size_t)r * cols, m->data + (size_t)r * m->cols + col0,
               (size_t)cols * sizeof(float));
    struct npy_job job = {block, false, vector ? 1 : 2, {0}};
    if (vector) {
        job.shape[0] = (size_t)cols;
    } else {
        job.shape[0] = (size_t)m->rows;
        job.shape[1] = (size_t)cols;
    }
    write_aside(w, name, &job, n * sizeof(float));
    free(block);
}

/* "<prefix>key: [[...]]" for a whole matrix or one head's column block. The prefix is what
 * starts the line ("  ", "    - "), so continuation rows line up under the first one. name is
 * the key's path, for a side file. */
static void write_matrix_key(struct writer *w, const char *prefix, const char *key,
                             const char *name, const struct attn_matrix *m, int col0, int cols)
{
    FILE *f = w->f;
    fprintf(f, "%s%s: ", prefix, key);
    if (goes_aside(w, (size_t)m->rows * (size_t)cols))
        write_matrix_aside(w, name, m, col0, cols, false);
    else
        write_rows(f, m->data, m->rows, cols, m->cols, col0,
                   (int)(strlen(prefix) + strlen(key)) + 2);
    fputc('\n', f);
}

static void write_vector_key(struct writer *w, const char *prefix, const char *key,
                             const char *name, const struct attn_matrix *m, int col0, int cols)
{
    FILE *f = w->f;
    fprintf(f, "%s%s: ", prefix, key);
    if (goes_aside(w, (size_t)cols)) {
        write_matrix_aside(w, name, m, col0, cols, true);
        fputc('\n', f);
        return;
    }
    fputc('[', f);
    for (int c = 0; c < cols; c++) {
        if (c > 0)
            fputs(", ", f);
        write_float(f, m->data[col0 + c]);
    }
    fputs("]\n", f);
}

static void write_mask(struct writer *w, const char *prefix, const struct attn_scene_weights *wt,
                       const char *name)
{
    FILE *f = w->f;
    const unsigned char *mask = wt->dropout_mask;
    int n = wt->dropout_mask_n, heads = wt->dropout_mask_heads;
    size_t count = (size_t)heads * (size_t)n * (size_t)n;
    fprintf(f, "%sdropout_mask: ", prefix);
    if (goes_aside(w, count)) {
        struct npy_job job = {mask, true, 3, {(size_t)heads, (size_t)n, (size_t)n}};
        write_aside(w, name, &job, count);
        fputc('\n', f);
        return;
    }
    fputc('[', f);
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

static void write_seed_pair(FILE *f, const char *key, const struct attn_opt_seed *seed, bool *first)
{
    if (!seed->set)
        return;
    fprintf(f, "%s%s: %llu", *first ? "" : ", ", key, (unsigned long long)seed->value);
    *first = false;
}

static void write_embeddings(struct writer *w)
{
    const struct attn_scene *s = w->s;
    FILE *f = w->f;
    if (s->embed.kind == EMBED_EXPLICIT && s->embed.rows.data) {
        write_matrix_key(w, "", "embeddings", "embeddings", &s->embed.rows, 0, s->embed.rows.cols);
    } else if (w->explicit || s->embed.kind != w->def.embed.kind ||
               s->embed.dim != w->def.embed.dim || s->embed.seed.set) {
        bool first = false;
        fprintf(f, "embeddings: {dim: %d", attn_scene_d_in(s));
        write_seed_pair(f, "seed", &s->embed.seed, &first);
        fputs("}\n", f);
    }
}

static void write_positional(struct writer *w)
{
    const struct attn_scene *s = w->s;
    FILE *f = w->f;
    enum attn_pos_kind pk = s->pos.kind;
    bool kind = w->explicit || pk != w->def.pos.kind;
    bool max_len = (w->explicit && pk == POS_LEARNED) || s->pos.max_len != w->def.pos.max_len;
    bool periodic = pk == POS_SINUSOIDAL || pk == POS_ROPE;
    bool base = (w->explicit && periodic) ||
                memcmp(&s->pos.base, &w->def.pos.base, sizeof(s->pos.base)) != 0;
    bool pairs = (w->explicit && pk == POS_ROPE) || s->pos.pairs != w->def.pos.pairs;
    bool offset = (w->explicit && pk != POS_NONE) || s->pos.offset != 0;
    bool rotary = s->pos.rotary_dims != 0;
    bool table = s->pos.table.data != NULL;
    if (!kind && !max_len && !s->pos.seed.set && !table && !base && !pairs && !offset && !rotary)
        return;
    const char *kind_name = attn_pos_kind_name(pk);
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
        if (base) {
            fprintf(f, "%sbase: ", first ? "" : ", ");
            write_double(f, s->pos.base);
            first = false;
        }
        if (pairs) {
            fprintf(f, "%srope_pairs: %s", first ? "" : ", ", attn_rope_pairs_name(s->pos.pairs));
            first = false;
        }
        if (rotary) {
            fprintf(f, "%srotary_dims: %d", first ? "" : ", ", s->pos.rotary_dims);
            first = false;
        }
        if (offset)
            fprintf(f, "%soffset: %d", first ? "" : ", ", s->pos.offset);
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
    if (offset)
        fprintf(f, "  offset: %d\n", s->pos.offset);
    write_matrix_key(w, "  ", "table", "positional.table", &s->pos.table, 0, s->pos.table.cols);
}

static void write_attention(struct writer *w)
{
    const struct attn_scene *s = w->s;
    const struct attn_config *a = &s->attn, *d = &w->def.attn;
    FILE *f = w->f;
    bool ex = w->explicit;
    if (ex)
        fprintf(f, "  projection: %s\n", attn_projection_name(attn_scene_eff_projection(s)));
    else if (a->projection != d->projection)
        fprintf(f, "  projection: %s\n", attn_projection_name(a->projection));
    if (ex || a->d_out != d->d_out)
        fprintf(f, "  d_out: %d\n", ex ? attn_scene_eff_d_out(s) : a->d_out);
    if (ex || a->heads != d->heads)
        fprintf(f, "  heads: %d\n", a->heads);
    if (ex || a->layout != d->layout)
        fprintf(f, "  head_layout: %s\n", attn_layout_name(a->layout));
    if (ex || a->causal != d->causal)
        fprintf(f, "  causal: %s\n", yes_no(a->causal));
    if (ex || a->mask_mode != d->mask_mode)
        fprintf(f, "  mask_mode: %s\n", attn_mask_mode_name(a->mask_mode));
    if (ex || a->normalize != d->normalize)
        fprintf(f, "  normalize: %s\n", attn_normalize_name(a->normalize));
    enum attn_scale_kind scale = ex ? attn_scene_eff_scale(s) : a->scale;
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
        fprintf(f, "  out_proj: %s\n", yes_no(attn_scene_eff_out_proj(s)));
    else if (a->out_proj != TRI_DEFAULT)
        fprintf(f, "  out_proj: %s\n", yes_no(a->out_proj == TRI_TRUE));
    if (ex || a->out_bias != d->out_bias)
        fprintf(f, "  out_bias: %s\n", yes_no(a->out_bias));
    if (a->seed.set)
        fprintf(f, "  seed: %llu\n", (unsigned long long)a->seed.value);
    if (a->qkv != d->qkv)
        fprintf(f, "  qkv: %s\n", attn_qkv_mode_name(a->qkv));
    if ((ex && a->layout == LAYOUT_SPLIT && a->kv_latent == 0) || a->kv_heads != d->kv_heads)
        fprintf(f, "  kv_heads: %d\n", ex ? attn_scene_kv_heads(s) : a->kv_heads);
    if (a->kv_latent != d->kv_latent)
        fprintf(f, "  kv_latent: %d\n", a->kv_latent);
}

static void write_block(struct writer *w)
{
    const struct attn_scene *s = w->s;
    const struct attn_block *b = &s->block, *d = &w->def.block;
    FILE *f = w->f;
    bool ex = w->explicit;
    if (!b->on)
        return;
    fputs("block:", f);
    bool any = false;
    if (ex || b->order != d->order) {
        fprintf(f, "\n  order: %s", attn_block_order_name(b->order));
        any = true;
    }
    if (ex || b->norm != d->norm) {
        fprintf(f, "\n  norm: %s", attn_norm_kind_name(b->norm));
        any = true;
    }
    if (ex || memcmp(&b->norm_eps, &d->norm_eps, sizeof(b->norm_eps)) != 0) {
        fputs("\n  norm_eps: ", f);
        write_double(f, b->norm_eps);
        any = true;
    }
    if (ex || b->ffn_hidden != d->ffn_hidden) {
        fprintf(f, "\n  ffn_hidden: %d", ex ? attn_scene_ffn_hidden(s) : b->ffn_hidden);
        any = true;
    }
    if (ex || b->activation != d->activation) {
        fprintf(f, "\n  activation: %s", attn_activation_name(b->activation));
        any = true;
    }
    if (b->ffn_seed.set) {
        fprintf(f, "\n  ffn_seed: %llu", (unsigned long long)b->ffn_seed.value);
        any = true;
    }
    if (b->ffn_skip != d->ffn_skip) {
        fprintf(f, "\n  ffn_skip: %d", b->ffn_skip);
        any = true;
    }
    if (ex || b->final_norm != d->final_norm) {
        fprintf(f, "\n  final_norm: %s", yes_no(b->final_norm));
        any = true;
    }
    fputs(any ? "\n" : " {}\n", f);
}

static bool attention_differs(const struct writer *w)
{
    const struct attn_config *a = &w->s->attn, *d = &w->def.attn;
    return w->explicit || a->projection != d->projection || a->d_out != d->d_out ||
           a->heads != d->heads || a->layout != d->layout || a->causal != d->causal ||
           a->mask_mode != d->mask_mode || a->normalize != d->normalize || a->scale != d->scale ||
           memcmp(&a->dropout, &d->dropout, sizeof(a->dropout)) != 0 || a->dropout_seed.set ||
           a->qkv_bias != d->qkv_bias || a->out_proj != d->out_proj || a->out_bias != d->out_bias ||
           a->seed.set || a->qkv != d->qkv || a->kv_heads != d->kv_heads ||
           a->kv_latent != d->kv_latent;
}

/* Whether a layer's weights say anything at all. */
/* The block's parameters, given whether or not the attention's are (`set`), in file order. */
#define BLOCK_PARAM(name)                                                                          \
    {                                                                                              \
#name, offsetof(struct attn_scene_weights, name)                                           \
    }
static const struct {
    const char *name;
    size_t offset;
} block_params[] = {
    BLOCK_PARAM(ffn_W1),
    BLOCK_PARAM(ffn_b1),
    BLOCK_PARAM(ffn_W2),
    BLOCK_PARAM(ffn_b2),
    BLOCK_PARAM(norm1_weight),
    BLOCK_PARAM(norm1_bias),
    BLOCK_PARAM(norm2_weight),
    BLOCK_PARAM(norm2_bias),
    BLOCK_PARAM(post_norm1_weight),
    BLOCK_PARAM(post_norm2_weight),
    BLOCK_PARAM(final_norm_weight),
    BLOCK_PARAM(final_norm_bias),
};
#undef BLOCK_PARAM
#define N_BLOCK_PARAMS (sizeof(block_params) / sizeof(block_params[0]))

static const struct attn_matrix *block_param(const struct attn_scene_weights *wt, size_t i)
{
    return (const struct attn_matrix *)(const void *)((const char *)wt + block_params[i].offset);
}

static bool weights_given(const struct attn_scene_weights *wt)
{
    if (wt->set || (wt->dropout_mask && wt->dropout_mask_n > 0 && wt->dropout_mask_heads > 0))
        return true;
    for (size_t i = 0; i < N_BLOCK_PARAMS; i++)
        if (block_param(wt, i)->data)
            return true;
    return false;
}

/* The keys of one weights mapping. Each line starts with `first` for the mapping's first key
 * ("  " for the one mapping, "  - " for a layer of the list) and `rest` after it; `at` names
 * side files ("weights", "weights.1"). */
struct key_lead {
    const char *first, *rest;
    bool used;
};

static const char *lead(struct key_lead *k)
{
    const char *p = k->used ? k->rest : k->first;
    k->used = true;
    return p;
}

static void write_layer_weights(struct writer *w, const struct attn_scene_weights *wt,
                                struct key_lead *kl, const char *at, bool allow_per_head)
{
    const struct attn_scene *s = w->s;
    FILE *f = w->f;
    char name[96];
    bool mask = wt->dropout_mask && wt->dropout_mask_n > 0 && wt->dropout_mask_heads > 0;
    const struct attn_matrix *qkv[6] = {&wt->query,      &wt->key,      &wt->value,
                                        &wt->query_bias, &wt->key_bias, &wt->value_bias};
    static const char *const names[6] = {"query",      "key",      "value",
                                         "query_bias", "key_bias", "value_bias"};
    int heads = s->attn.heads;
    /* The wrapper layout is written as the format shows it: one mapping per head, each
     * head's column block of the concatenated matrices. */
    bool per_head = allow_per_head && wt->set && s->attn.layout == LAYOUT_WRAPPER && heads > 0 &&
                    wt->query.data && wt->query.cols % heads == 0;
    for (int i = 0; per_head && i < 6; i++)
        if (qkv[i]->data && qkv[i]->cols != wt->query.cols)
            per_head = false;
    if (per_head) {
        int hd = wt->query.cols / heads;
        fprintf(f, "%sheads:\n", lead(kl));
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < 6; i++) {
                if (!qkv[i]->data)
                    continue;
                /* "    - query: ..." for a head's first key, "      key: ..." after it. */
                const char *prefix = i == 0 ? "    - " : "      ";
                snprintf(name, sizeof(name), "%s.heads.%d.%s", at, h, names[i]);
                if (i < 3)
                    write_matrix_key(w, prefix, names[i], name, qkv[i], h * hd, hd);
                else
                    write_vector_key(w, prefix, names[i], name, qkv[i], h * hd, hd);
            }
        }
    } else if (wt->set) {
        for (int i = 0; i < 6; i++) {
            if (!qkv[i]->data)
                continue;
            snprintf(name, sizeof(name), "%s.%s", at, names[i]);
            if (i < 3)
                write_matrix_key(w, lead(kl), names[i], name, qkv[i], 0, qkv[i]->cols);
            else
                write_vector_key(w, lead(kl), names[i], name, qkv[i], 0, qkv[i]->cols);
        }
    }
    const struct attn_matrix *fused[] = {&wt->qkv, &wt->down, &wt->key_up, &wt->value_up};
    static const char *const fused_names[] = {"qkv", "down", "key_up", "value_up"};
    for (int i = 0; wt->set && i < 4; i++)
        if (fused[i]->data) {
            snprintf(name, sizeof(name), "%s.%s", at, fused_names[i]);
            write_matrix_key(w, lead(kl), fused_names[i], name, fused[i], 0, fused[i]->cols);
        }
    if (wt->set && wt->qkv_bias.data) {
        snprintf(name, sizeof(name), "%s.qkv_bias", at);
        write_vector_key(w, lead(kl), "qkv_bias", name, &wt->qkv_bias, 0, wt->qkv_bias.cols);
    }
    if (wt->set && wt->out.data) {
        snprintf(name, sizeof(name), "%s.out", at);
        write_matrix_key(w, lead(kl), "out", name, &wt->out, 0, wt->out.cols);
    }
    if (wt->set && wt->out_bias.data) {
        snprintf(name, sizeof(name), "%s.out_bias", at);
        write_vector_key(w, lead(kl), "out_bias", name, &wt->out_bias, 0, wt->out_bias.cols);
    }
    for (size_t i = 0; i < N_BLOCK_PARAMS; i++) {
        const struct attn_matrix *m = block_param(wt, i);
        const char *key = block_params[i].name;
        if (!m->data)
            continue;
        snprintf(name, sizeof(name), "%s.%s", at, key);
        if (m->rows == 1 && strstr(key, "W") == NULL)
            write_vector_key(w, lead(kl), key, name, m, 0, m->cols);
        else
            write_matrix_key(w, lead(kl), key, name, m, 0, m->cols);
    }
    if (mask) {
        snprintf(name, sizeof(name), "%s.dropout_mask", at);
        write_mask(w, lead(kl), wt, name);
    }
}

static void write_weights(struct writer *w)
{
    const struct attn_scene *s = w->s;
    FILE *f = w->f;
    if (!s->weights_listed) {
        if (!weights_given(&s->weights))
            return;
        fputs("weights:\n", f);
        struct key_lead kl = {"  ", "  ", false};
        write_layer_weights(w, &s->weights, &kl, "weights", true);
        return;
    }
    /* One mapping per layer; the wrapper's heads as column blocks, not nested lists. */
    fputs("weights:\n", f);
    for (int L = 0; L <= s->n_more; L++) {
        const struct attn_scene_weights *wt = attn_scene_layer_weights(s, L);
        if (!weights_given(wt)) {
            fputs("  - {}\n", f);
            continue;
        }
        struct key_lead kl = {"  - ", "    ", false};
        char at[32];
        snprintf(at, sizeof(at), "weights.%d", L);
        write_layer_weights(w, wt, &kl, at, false);
    }
}

const char *attn_scenefile_relative_path(char *out, size_t size, const char *path, const char *dir)
{
    /* The longest common prefix of whole components. */
    size_t common = 0;
    for (size_t i = 0;; i++) {
        bool end_p = path[i] == '/' || path[i] == '\0', end_d = dir[i] == '/' || dir[i] == '\0';
        if (end_p && end_d)
            common = i;
        if (path[i] != dir[i] || path[i] == '\0')
            break;
    }
    if (path[0] != '/' || dir[0] != '/' || common == 0) {
        snprintf(out, size, "%s", path); /* only "/" in common: absolute it stays */
        return out;
    }
    size_t o = 0;
    out[0] = '\0';
    for (const char *d = dir + common; *d; d++) /* one ".." a component of dir left */
        if (*d == '/' && d[1] && d[1] != '/' && o + 4 < size)
            o += (size_t)snprintf(out + o, size - o, "../");
    const char *rest = path + common + (path[common] == '/');
    snprintf(out + o, size - o, "%s", *rest ? rest : ".");
    return out;
}

/* A file the scene names (checkpoint, vocabulary), relative to the YAML's folder when known. */
static void write_path(struct writer *w, const char *path)
{
    char rel[4096];
    if (path && path[0] == '/' && w->side && w->side->yaml_dir)
        path = attn_scenefile_relative_path(rel, sizeof(rel), path, w->side->yaml_dir);
    write_string(w->f, path ? path : "", true);
}

/* A checkpoint's scene: the reference to it and what the scene changes; its numbers stay in
 * the file (the path relative to a saved YAML, else absolute: found from anywhere). */
static void write_model_scene(struct writer *w)
{
    const struct attn_scene *s = w->s;
    FILE *f = w->f;
    fputs("model: {file: ", f);
    write_path(w, s->model.file);
    /* the family that read it; without one (never, once loaded), config.json says */
    fprintf(f, ", arch: %s}\n", s->model.arch ? s->model.arch : "auto");
    if (w->explicit || s->layers != s->model.layers)
        fprintf(f, "layers: %d\n", s->layers);
    const struct attn_config *a = &s->attn;
    bool heads = w->explicit || a->heads != s->model.heads;
    bool causal = w->explicit || a->causal != s->model.causal; /* the checkpoint's own mask */
    /* what the explorer's M, x and N change: written, so the saved scene computes what the
       screen did (it reopened as the checkpoint as trained) */
    bool mask = w->explicit || a->mask_mode != MASK_BEFORE_SOFTMAX;
    enum attn_scale_kind scale = attn_scene_eff_scale(s);
    bool scaled = w->explicit || scale != s->model.scale || scale == SCALE_DIVISOR;
    bool normalize = w->explicit || a->normalize != NORMALIZE_SOFTMAX;
    if (heads || causal || mask || scaled || normalize || a->dropout > 0 || a->dropout_seed.set) {
        fputs("attention:\n", f);
        if (heads)
            fprintf(f, "  heads: %d\n", a->heads);
        if (causal)
            fprintf(f, "  causal: %s\n", yes_no(a->causal));
        if (mask)
            fprintf(f, "  mask_mode: %s\n", attn_mask_mode_name(a->mask_mode));
        if (normalize)
            fprintf(f, "  normalize: %s\n", attn_normalize_name(a->normalize));
        if (scaled && scale == SCALE_DIVISOR) {
            fputs("  scale: ", f);
            write_double(f, a->scale_divisor);
            fputc('\n', f);
        } else if (scaled) {
            fprintf(f, "  scale: %s\n", yes_no(scale == SCALE_SQRT_DK));
        }
        if (w->explicit || a->dropout > 0) {
            fputs("  dropout: ", f);
            write_double(f, a->dropout);
            fputc('\n', f);
        }
        if (a->dropout_seed.set)
            fprintf(f, "  dropout_seed: %llu\n", (unsigned long long)a->dropout_seed.value);
    }
    if (s->pos.offset > 0)
        fprintf(f, "positional: {offset: %d}\n", s->pos.offset);
    if (s->view.layer >= 0)
        fprintf(f, "view: {layer: %d, head: %d, stage: %s}\n", s->view.layer, s->view.head,
                attn_stage_name((enum attn_stage)s->view.stage));
}

/* ablate: one flow mapping per head, in the scene's order. */
static void write_ablate(struct writer *w)
{
    const struct attn_scene *s = w->s;
    if (s->n_ablate == 0)
        return;
    fputs("ablate:\n", w->f);
    for (int i = 0; i < s->n_ablate; i++)
        fprintf(w->f, "  - {layer: %d, head: %d, mode: %s}\n", s->ablate[i].layer,
                s->ablate[i].head, attn_head_mode_name(s->ablate[i].mode));
}

/* lesson: one mapping per step, in the order of the schema's rows; the caption quoted, so its
 * line breaks and marks come back as they were. A resolved scene (explicit) is one state, not a
 * tour: its lesson is left out, as export leaves it out (its edits would start from a scene
 * with every default written down, kv_heads and out_proj included). */
static void write_lesson(struct writer *w)
{
    const struct attn_lesson *lesson = w->s->lesson;
    FILE *f = w->f;
    if (!lesson || w->explicit)
        return;
    fputs("lesson:\n", f);
    for (int i = 0; i < lesson->n_steps; i++) {
        const struct attn_lesson_step *st = &lesson->steps[i];
        const struct attn_edit *e = &st->edit;
        fprintf(f, "  - stage: %s\n", attn_stage_name((enum attn_stage)st->stage));
        if (st->layer)
            fprintf(f, "    layer: %d\n", st->layer);
        if (st->head)
            fprintf(f, "    head: %d\n", st->head);
        if (st->row >= 0 && st->col >= 0)
            fprintf(f, "    cell: [%d, %d]\n", st->row, st->col);
        else if (st->row >= 0)
            fprintf(f, "    row: %d\n", st->row);
        if (st->all_heads)
            fputs("    all_heads: true\n", f);
        if (st->panel != LESSON_PANEL_INSPECTOR)
            fprintf(f, "    panel: %s\n",
                    attn_lesson_panel_name((enum attn_lesson_panel)st->panel));
        if (e->kind != EDIT_NONE)
            fprintf(f, "    %s: ", attn_edit_key(e->kind));
        switch (e->kind) {
        case EDIT_CAUSAL:
            fputs(yes_no(e->causal), f);
            break;
        case EDIT_HEADS:
            fprintf(f, "%d", e->heads);
            break;
        case EDIT_D_OUT:
            fprintf(f, "%d", e->d_out);
            break;
        case EDIT_DROPOUT:
            write_double(f, e->dropout);
            break;
        case EDIT_SEED:
            fprintf(f, "%llu", (unsigned long long)e->seed);
            break;
        case EDIT_TEXT:
            write_string(f, e->text ? e->text : "", false);
            break;
        case EDIT_SCALE:
            if (e->scale == SCALE_DIVISOR)
                write_double(f, e->scale_divisor);
            else
                fputs(yes_no(e->scale != SCALE_NONE), f);
            break;
        case EDIT_MASK_MODE:
            fputs(attn_mask_mode_name((enum attn_mask_mode)e->mask_mode), f);
            break;
        case EDIT_NORMALIZE:
            fputs(attn_normalize_name((enum attn_normalize)e->normalize), f);
            break;
        case EDIT_LAYOUT:
            fputs(attn_layout_name((enum attn_head_layout)e->layout), f);
            break;
        case EDIT_OFFSET:
            fprintf(f, "%d", e->offset);
            break;
        case EDIT_ABLATE:
            fprintf(f, "{layer: %d, head: %d, mode: %s}", e->layer, e->head,
                    e->head_mode == HEAD_KEEP
                        ? "off"
                        : attn_head_mode_name((enum attn_head_mode)e->head_mode));
            break;
        case EDIT_GENERATE:
            fprintf(f, "%d", e->generate);
            break;
        default: /* EDIT_NONE; a lesson step makes no other kind */
            break;
        }
        if (e->kind != EDIT_NONE)
            fputc('\n', f);
        fputs("    caption: ", f);
        write_string(f, st->caption ? st->caption : "", false);
        fputc('\n', f);
    }
}

static void write_scene(struct writer *w)
{
    const struct attn_scene *s = w->s;
    FILE *f = w->f;
    fprintf(f, "version: %d\n", SCENE_SCHEMA_VERSION);
    if (s->title) {
        fputs("title: ", f);
        write_string(f, s->title, false);
        fputc('\n', f);
    }
    if (s->text && s->encoder && s->encoder->text) { /* an encoder-decoder's two sequences */
        fputs("text: {source: ", f);
        write_string(f, s->encoder->text, false);
        fputs(", target: ", f);
        write_string(f, s->text, false);
        fputs("}\n", f);
    } else if (s->text && s->text_pair) { /* two sentences a tokenizer joins */
        fputs("text: [", f);
        write_string(f, s->text, false);
        fputs(", ", f);
        write_string(f, s->text_pair, false);
        fputs("]\n", f);
    } else if (s->text) {
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
    if (s->tokenizer == TOKENIZER_GPT2) {
        fprintf(f, "tokenizer: {kind: %s, vocab: ", attn_tokenizer_name(s->tokenizer));
        write_path(w, s->vocab_path);
        fputs(", merges: ", f);
        write_path(w, s->merges_path);
        fputs("}\n", f);
    } else if (s->tokenizer == TOKENIZER_HF) {
        fprintf(f, "tokenizer: {kind: %s, file: ", attn_tokenizer_name(s->tokenizer));
        write_path(w, s->tokenizer_file);
        fputs("}\n", f);
    } else if (w->explicit || s->tokenizer != w->def.tokenizer) {
        fprintf(f, "tokenizer: %s\n", attn_tokenizer_name(s->tokenizer));
    }
    if (w->explicit || s->seed != w->def.seed)
        fprintf(f, "seed: %llu\n", (unsigned long long)s->seed);
    if (s->model.file) {
        write_model_scene(w);
        write_ablate(w);
        write_lesson(w);
        return;
    }
    write_embeddings(w);
    write_positional(w);
    if (attention_differs(w)) {
        fputs("attention:\n", f);
        write_attention(w);
    }
    if (w->explicit || s->layers != w->def.layers)
        fprintf(f, "layers: %d\n", s->layers);
    write_block(w);
    write_weights(w);
    if (s->view.layer >= 0)
        fprintf(f, "view: {layer: %d, head: %d, stage: %s}\n", s->view.layer, s->view.head,
                attn_stage_name((enum attn_stage)s->view.stage));
    write_ablate(w);
    write_lesson(w);
}

int attn_scenefile_write_side(FILE *out, const struct attn_scene *s, bool explicit,
                              struct scenefile_sidecar *side, struct diag *err)
{
    struct diag scratch;
    if (!err)
        err = &scratch;
    attn_diag_clear(err);
    if (check_scene(s, err) != 0)
        return -1;
    struct writer w = {.f = out, .s = s, .explicit = explicit, .side = side, .err = err};
    attn_scene_init(&w.def);
    write_scene(&w);
    attn_scene_free(&w.def);
    if (w.failed)
        return -1;
    if (ferror(out))
        return attn_diag_set(err, "", "cannot write the scene: output error");
    return 0;
}

int attn_scenefile_write(FILE *out, const struct attn_scene *s, bool explicit, struct diag *err)
{
    return attn_scenefile_write_side(out, s, explicit, NULL, err);
}

struct save_ctx {
    const struct attn_scene *s;
    bool explicit;
    struct scenefile_sidecar *side;
};

static int save_cb(FILE *f, void *ctx, struct diag *err)
{
    const struct save_ctx *c = ctx;
    return attn_scenefile_write_side(f, c->s, c->explicit, c->side, err);
}

/* Removes the side files of earlier saves that the YAML just written no longer names (only
 * names of the "<key>-<16 hex>.npy" form), and the folder when it is left empty. */
static void prune_side(const struct scenefile_sidecar *side)
{
    DIR *d = opendir(side->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 22 || strcmp(e->d_name + n - 4, ".npy") != 0 || e->d_name[n - 21] != '-' ||
            strspn(e->d_name + n - 20, "0123456789abcdef") != 16)
            continue;
        bool named = false;
        for (int i = 0; i < side->n_written && !named; i++)
            named = strcmp(side->written[i], e->d_name) == 0;
        if (named)
            continue;
        char path[4096 + 256];
        snprintf(path, sizeof(path), "%s/%s", side->dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(side->dir); /* only succeeds when empty */
}

int attn_scenefile_save(const char *path, const struct attn_scene *s, bool explicit, bool overwrite,
                        struct diag *err)
{
    /* "dir/name.yaml" -> side files in "dir/name.data", named "name.data/..." by the YAML. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t stem = strlen(path), bstem = strlen(base);
    if (bstem > 5 && strcmp(base + bstem - 5, ".yaml") == 0)
        stem -= 5, bstem -= 5;
    else if (bstem > 4 && strcmp(base + bstem - 4, ".yml") == 0)
        stem -= 4, bstem -= 4;
    char dir[4096], rel[1024];
    if (stem + 6 > sizeof(dir) || bstem + 6 > sizeof(rel))
        return attn_diag_set(err, "", "the file name is too long");
    snprintf(dir, sizeof(dir), "%.*s.data", (int)stem, path);
    snprintf(rel, sizeof(rel), "%.*s.data", (int)bstem, base);
    /* The YAML's own folder, resolved: the files it names are written relative to it. */
    char folder[4096]; /* "a/b.yaml": "a"; "/b.yaml": "/"; "b.yaml": "." */
    size_t flen = base > path ? (size_t)(base - path - 1) : 0;
    snprintf(folder, sizeof(folder), "%.*s", (int)(flen ? flen : 1), base > path ? path : ".");
    char *yaml_dir = realpath(folder, NULL);
    if (!yaml_dir && errno == ENOMEM)
        return attn_diag_file(err, path, "out of memory");
    struct scenefile_sidecar side = {.dir = dir, .rel = rel, .yaml_dir = yaml_dir};
    struct save_ctx c = {.s = s, .explicit = explicit, .side = &side};
    int rc = attn_fsutil_write_atomic(path, overwrite, save_cb, &c, err);
    if (rc == 0)
        prune_side(&side);
    attn_scenefile_sidecar_free(&side);
    free(yaml_dir);
    return rc;
}
