/* scene: defaults, copies and the cross-key rules of a scene (see scene.h). */
#include "engine/scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cnum.h"
#include "engine/lesson.h"
#include "engine/rng.h"
#include "engine/tokenize.h"

/* The book's six tokens and their 3-d embeddings (ch. 3.3.1). */
static const char *const book_tokens[] = {"Your", "journey", "starts", "with", "one", "step"};
static const float book_rows[6][3] = {
    {0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f},
    {0.22f, 0.58f, 0.33f}, {0.77f, 0.25f, 0.10f}, {0.05f, 0.80f, 0.55f},
};

void attn_matrix_free(struct attn_matrix *m)
{
    if (m->borrowed) { /* the backing owns it */
        memset(m, 0, sizeof(*m));
        return;
    }
    free(m->data);
    memset(m, 0, sizeof(*m));
}

int attn_matrix_alloc(struct attn_matrix *m, int rows, int cols)
{
    memset(m, 0, sizeof(*m));
    size_t count = (size_t)rows * (size_t)cols;
    m->data = calloc(count ? count : 1, sizeof(float));
    if (!m->data)
        return -1;
    m->rows = rows;
    m->cols = cols;
    return 0;
}

int attn_matrix_copy(struct attn_matrix *dst, const struct attn_matrix *src)
{
    memset(dst, 0, sizeof(*dst));
    if (!attn_matrix_given(src))
        return 0;
    if (src->borrowed) { /* shared: the copy holds a reference to the backing */
        *dst = *src;
        return 0;
    }
    if (attn_matrix_alloc(dst, src->rows, src->cols))
        return -1;
    memcpy(dst->data, src->data, (size_t)src->rows * (size_t)src->cols * sizeof(float));
    return 0;
}

void attn_scene_init(struct attn_scene *s)
{
    memset(s, 0, sizeof(*s));
    s->tokenizer = TOKENIZER_WHITESPACE;
    s->seed = 123;
    s->embed.kind = EMBED_LEARNED;
    s->embed.dim = 3;
    s->pos.kind = POS_NONE;
    s->pos.max_len = 512;
    s->pos.base = 10000.0;
    s->pos.scaling.attention_factor = 1.0;
    s->block.norm_eps = 1e-5;
    s->layers = 1;
    s->view.layer = -1;
    s->attn.projection = PROJ_DEFAULT;
    s->attn.heads = 1;
    s->attn.layout = LAYOUT_SPLIT;
    s->attn.mask_mode = MASK_BEFORE_SOFTMAX;
    s->attn.normalize = NORM_SOFTMAX;
    s->attn.scale = SCALE_DEFAULT;
    s->attn.out_proj = TRI_DEFAULT;
    s->attn.out_bias = true;
    s->mask_id = -1;
}

void attn_scene_weights_free(struct attn_scene_weights *w)
{
#define X(name) attn_matrix_free(&w->name);
    ATTN_WEIGHT_MATRICES(X)
#undef X
    free(w->dropout_mask);
    memset(w, 0, sizeof(*w));
}

void attn_scene_weights_free_all(struct attn_scene *s)
{
    attn_scene_weights_free(&s->weights);
    for (int i = 0; i < s->n_more; i++)
        attn_scene_weights_free(&s->more_weights[i]);
    free(s->more_weights);
    s->more_weights = NULL;
    s->n_more = 0;
}

bool attn_scene_drop_weights(struct attn_scene *s)
{
    if (s->model.file) /* a checkpoint's numbers are the point: they never go */
        return false;
    bool any = s->weights.set || s->weights.dropout_mask || s->n_more > 0;
    attn_scene_weights_free_all(s);
    s->weights_listed = false;
    return any;
}

void attn_scene_drop_dropout_masks(struct attn_scene *s)
{
    for (int L = 0; L <= s->n_more; L++) {
        struct attn_scene_weights *w = L == 0 ? &s->weights : &s->more_weights[L - 1];
        free(w->dropout_mask);
        w->dropout_mask = NULL;
        w->dropout_mask_n = w->dropout_mask_heads = 0;
    }
}

static void book_unref(struct attn_book_rows *b)
{
    if (!b || --b->refs > 0)
        return;
    attn_tokens_free(b->tokens, b->n);
    free(b->rows);
    free(b);
}

/* The book of s's explicit rows: each token's first row. NULL when out of memory. */
static struct attn_book_rows *book_make(const struct attn_scene *s)
{
    struct attn_book_rows *b = calloc(1, sizeof(*b));
    int d = s->embed.rows.cols;
    if (!b)
        return NULL;
    b->refs = 1;
    b->d = d;
    b->tokens = calloc((size_t)(s->n_tokens > 0 ? s->n_tokens : 1), sizeof(char *));
    b->rows = malloc((size_t)(s->n_tokens > 0 ? s->n_tokens : 1) * (size_t)d * sizeof(float));
    if (!b->tokens || !b->rows) {
        book_unref(b);
        return NULL;
    }
    for (int i = 0; i < s->n_tokens && i < s->embed.rows.rows; i++) {
        bool seen = false;
        for (int k = 0; k < b->n && !seen; k++)
            seen = strcmp(b->tokens[k], s->tokens[i]) == 0;
        if (seen)
            continue;
        if (!(b->tokens[b->n] = strdup(s->tokens[i]))) {
            book_unref(b);
            return NULL;
        }
        memcpy(b->rows + (size_t)b->n * d, s->embed.rows.data + (size_t)i * d,
               (size_t)d * sizeof(float));
        b->n++;
    }
    return b;
}

void attn_scene_free(struct attn_scene *s)
{
    free(s->title);
    free(s->text);
    free(s->text_pair);
    attn_tokens_free(s->tokens, s->n_tokens);
    free(s->token_types);
    attn_matrix_free(&s->embed.rows);
    attn_matrix_free(&s->embed.types);
    attn_matrix_free(&s->embed.norm_weight);
    attn_matrix_free(&s->embed.norm_bias);
    attn_matrix_free(&s->unembed_bias);
    attn_matrix_free(&s->head.dense);
    attn_matrix_free(&s->head.dense_bias);
    attn_matrix_free(&s->head.norm_weight);
    attn_matrix_free(&s->head.norm_bias);
    attn_matrix_free(&s->pos.table);
    attn_scene_weights_free_all(s);
    free(s->token_ids);
    free(s->model.file);
    free(s->model.arch);
    free(s->vocab_path);
    free(s->merges_path);
    free(s->tokenizer_file);
    attn_matrix_free(&s->unembed);
    free(s->ablate);
    attn_lesson_unref(s->lesson);
    book_unref(s->embed.book);
    /* last: the borrowed matrices above point into it */
    if (s->backing && --s->backing->refs == 0) {
        attn_param_cache_free(s->backing);
        if (s->backing->release)
            s->backing->release(s->backing);
    }
    memset(s, 0, sizeof(*s));
}

void attn_param_cache_free(struct attn_backing *b)
{
    if (!b || !b->cache)
        return;
    free(b->cache->buf);
    free(b->cache->turn);
    free(b->cache);
    b->cache = NULL;
}

void attn_param_cache_drop(struct attn_backing *b)
{
    if (!b || !b->cache)
        return;
    struct attn_param_cache *c = b->cache;
    c->tensor = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t lo = ((uintptr_t)c->buf + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    uintptr_t hi =
        ((uintptr_t)c->buf + c->floats * sizeof(float)) / (uintptr_t)page * (uintptr_t)page;
    if (hi > lo) /* whole pages inside the buffer only; they read as zeros until written */
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

/* dw must be zeroed; on failure it holds what was copied (attn_scene_weights_free frees it). */
static int weights_copy(struct attn_scene_weights *dw, const struct attn_scene_weights *sw)
{
    int rc = 0;
    dw->set = sw->set;
#define X(name) rc |= attn_matrix_copy(&dw->name, &sw->name);
    ATTN_WEIGHT_MATRICES(X)
#undef X
    if (sw->dropout_mask) {
        size_t bytes = (size_t)sw->dropout_mask_heads * (size_t)sw->dropout_mask_n *
                       (size_t)sw->dropout_mask_n;
        dw->dropout_mask = malloc(bytes ? bytes : 1);
        if (dw->dropout_mask) {
            memcpy(dw->dropout_mask, sw->dropout_mask, bytes);
            dw->dropout_mask_n = sw->dropout_mask_n;
            dw->dropout_mask_heads = sw->dropout_mask_heads;
        } else {
            rc = -1;
        }
    }
    return rc;
}

int attn_scene_copy(struct attn_scene *dst, const struct attn_scene *src)
{
    *dst = *src;
    /* Null every owned pointer first so a failure half-way can be freed safely. */
    dst->title = dst->text = dst->text_pair = NULL;
    dst->tokens = NULL;
    dst->n_tokens = 0;
    dst->token_types = NULL;
    memset(&dst->embed.rows, 0, sizeof(dst->embed.rows));
    memset(&dst->embed.types, 0, sizeof(dst->embed.types));
    memset(&dst->embed.norm_weight, 0, sizeof(dst->embed.norm_weight));
    memset(&dst->embed.norm_bias, 0, sizeof(dst->embed.norm_bias));
    memset(&dst->unembed_bias, 0, sizeof(dst->unembed_bias));
    memset(&dst->head, 0, sizeof(dst->head));
    dst->head.act = src->head.act;
    memset(&dst->pos.table, 0, sizeof(dst->pos.table));
    memset(&dst->weights, 0, sizeof(dst->weights));
    dst->more_weights = NULL;
    dst->n_more = 0;
    dst->token_ids = NULL;
    dst->model.file = dst->model.arch = NULL;
    dst->vocab_path = dst->merges_path = dst->tokenizer_file = NULL;
    memset(&dst->unembed, 0, sizeof(dst->unembed));
    dst->ablate = NULL;
    dst->n_ablate = 0;
    if (dst->backing)
        dst->backing->refs++;
    attn_lesson_ref(dst->lesson); /* read-only: shared */
    if (dst->embed.book)
        dst->embed.book->refs++;

    int rc = dup_str(&dst->title, src->title) | dup_str(&dst->text, src->text) |
             dup_str(&dst->text_pair, src->text_pair) | dup_str(&dst->model.file, src->model.file) |
             dup_str(&dst->model.arch, src->model.arch) |
             dup_str(&dst->vocab_path, src->vocab_path) |
             dup_str(&dst->merges_path, src->merges_path) |
             dup_str(&dst->tokenizer_file, src->tokenizer_file);
    if (src->token_ids && src->n_tokens > 0) {
        dst->token_ids = malloc((size_t)src->n_tokens * sizeof(int));
        if (dst->token_ids)
            memcpy(dst->token_ids, src->token_ids, (size_t)src->n_tokens * sizeof(int));
        else
            rc = -1;
    }
    if (src->n_tokens > 0) {
        dst->tokens = attn_tokens_dup(src->tokens, src->n_tokens);
        if (dst->tokens)
            dst->n_tokens = src->n_tokens;
        else
            rc = -1;
    }
    if (src->token_types && src->n_tokens > 0) {
        dst->token_types = malloc((size_t)src->n_tokens * sizeof(int));
        if (dst->token_types)
            memcpy(dst->token_types, src->token_types, (size_t)src->n_tokens * sizeof(int));
        else
            rc = -1;
    }
    rc |= attn_matrix_copy(&dst->embed.rows, &src->embed.rows);
    rc |= attn_matrix_copy(&dst->embed.types, &src->embed.types);
    rc |= attn_matrix_copy(&dst->embed.norm_weight, &src->embed.norm_weight);
    rc |= attn_matrix_copy(&dst->embed.norm_bias, &src->embed.norm_bias);
    rc |= attn_matrix_copy(&dst->pos.table, &src->pos.table);
    rc |= attn_matrix_copy(&dst->unembed, &src->unembed);
    rc |= attn_matrix_copy(&dst->unembed_bias, &src->unembed_bias);
    rc |= attn_matrix_copy(&dst->head.dense, &src->head.dense);
    rc |= attn_matrix_copy(&dst->head.dense_bias, &src->head.dense_bias);
    rc |= attn_matrix_copy(&dst->head.norm_weight, &src->head.norm_weight);
    rc |= attn_matrix_copy(&dst->head.norm_bias, &src->head.norm_bias);
    if (src->n_ablate > 0) {
        dst->ablate = malloc((size_t)src->n_ablate * sizeof(*dst->ablate));
        if (dst->ablate) {
            memcpy(dst->ablate, src->ablate, (size_t)src->n_ablate * sizeof(*dst->ablate));
            dst->n_ablate = src->n_ablate;
        } else {
            rc = -1;
        }
    }
    rc |= weights_copy(&dst->weights, &src->weights);
    if (src->n_more > 0) {
        dst->more_weights = calloc((size_t)src->n_more, sizeof(*dst->more_weights));
        if (dst->more_weights) {
            dst->n_more = src->n_more;
            for (int i = 0; i < src->n_more; i++)
                rc |= weights_copy(&dst->more_weights[i], &src->more_weights[i]);
        } else {
            rc = -1;
        }
    }
    if (rc) {
        attn_scene_free(dst);
        return -1;
    }
    return 0;
}

int attn_scene_init_default(struct attn_scene *s)
{
    attn_scene_init(s);
    s->title = strdup("Your journey starts with one step: multi-head attention (ch. 3.6)");
    s->text = strdup("Your journey starts with one step");
    s->tokens = attn_tokens_dup((char *const *)book_tokens, 6);
    if (s->tokens)
        s->n_tokens = 6;
    if (!s->title || !s->text || !s->tokens || attn_matrix_alloc(&s->embed.rows, 6, 3)) {
        attn_scene_free(s);
        attn_scene_init(s);
        return -1;
    }
    s->embed.kind = EMBED_EXPLICIT;
    memcpy(s->embed.rows.data, book_rows, sizeof(book_rows));
    s->attn.projection = PROJ_LINEAR;
    s->attn.d_out = 2;
    s->attn.heads = 2;
    s->attn.causal = true;
    return 0;
}

int attn_scene_set_text(struct attn_scene *s, const char *text, struct diag *err)
{
    char **tokens = NULL;
    int n = 0, *ids = NULL, *types = NULL;
    if (attn_tokenizer_has_vocab(s->tokenizer)) {
        if (!s->backing || !s->backing->tokenize)
            return attn_diag_set(err, "tokenizer", "the %s tokenizer needs its vocabulary",
                                 attn_tokenizer_name(s->tokenizer));
        if (s->backing->tokenize(s->backing, text, s->text_pair, true, &tokens, &ids, &types, &n,
                                 err))
            return -1;
        if (n > SCENE_MAX_TOKENS) {
            attn_tokens_free(tokens, n);
            free(ids);
            free(types);
            return attn_diag_set(err, "text", "%d tokens is over the limit of %d", n,
                                 SCENE_MAX_TOKENS);
        }
    } else if (s->text_pair) {
        return attn_diag_set(err, "text",
                             "two sentences (text: [A, B]) need a tokenizer with a template "
                             "that joins them: tokenizer: {kind: hf, file: tokenizer.json}");
    } else if (attn_tokenize(&tokens, &n, text, s->tokenizer, err)) {
        return -1;
    }
    char *copy = strdup(text);
    if (!copy) {
        attn_tokens_free(tokens, n);
        free(ids);
        free(types);
        return attn_diag_set(err, "text", "out of memory");
    }
    free(s->text);
    attn_tokens_free(s->tokens, s->n_tokens);
    free(s->token_ids);
    free(s->token_types);
    s->text = copy;
    s->tokens = tokens;
    s->n_tokens = n;
    s->token_ids = ids;
    s->token_types = types;
    return 0;
}

void attn_scene_token_row(float *row, const char *token, int d)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    struct attn_rng r;
    attn_rng_seed(&r, h);
    attn_rng_uniform(row, (size_t)d, 0.0f, 1.0f, &r);
}

/* Re-rows the explicit embeddings after the tokens changed: each token takes its row in the
 * book, or attn_scene_token_row(). s->embed.rows: (old_n, d) -> (n, d) */
static int remap_rows(struct attn_scene *s)
{
    const struct attn_book_rows *b = s->embed.book;
    struct attn_matrix rows;
    int d = b->d;
    if (attn_matrix_alloc(&rows, s->n_tokens, d))
        return -1;
    for (int i = 0; i < s->n_tokens; i++) {
        int from = -1;
        for (int j = 0; j < b->n && from < 0; j++)
            if (strcmp(s->tokens[i], b->tokens[j]) == 0)
                from = j;
        float *dst = rows.data + (size_t)i * d;
        if (from >= 0)
            memcpy(dst, b->rows + (size_t)from * d, (size_t)d * sizeof(float));
        else
            attn_scene_token_row(dst, s->tokens[i], d);
    }
    attn_matrix_free(&s->embed.rows);
    s->embed.rows = rows;
    return 0;
}

bool attn_scene_has_row(const struct attn_scene *s, const char *token)
{
    if (s->embed.book) {
        for (int k = 0; k < s->embed.book->n; k++)
            if (strcmp(s->embed.book->tokens[k], token) == 0)
                return true;
        return false;
    }
    for (int k = 0; k < s->n_tokens; k++)
        if (strcmp(s->tokens[k], token) == 0)
            return true;
    return false;
}

int attn_scene_retext(struct attn_scene *s, const char *text, struct diag *err)
{
    /* The rows as given are kept once, before the first edit changes them. */
    if (s->embed.kind == EMBED_EXPLICIT && !s->embed.book && !(s->embed.book = book_make(s)))
        return attn_diag_set(err, "text", "out of memory");
    int rc = attn_scene_set_text(s, text, err);
    if (rc == 0 && s->embed.kind == EMBED_EXPLICIT && remap_rows(s) != 0)
        rc = attn_diag_set(err, "text", "out of memory");
    return rc;
}

const char *attn_seed_part_name(enum attn_seed_part part)
{
    switch (part) {
    case SEED_PART_EMBEDDINGS:
        return "the embeddings'";
    case SEED_PART_POSITIONS:
        return "the positions'";
    case SEED_PART_ATTENTION:
        return "the attention's";
    case SEED_PART_FFN:
        return "the feed-forward's";
    case SEED_PART_DROPOUT:
        return "the dropout's";
    }
    return "?";
}

/* Each part with a seed of its own, in the order the generator meets them (README's Random
 * draws): whether the scene draws it, and its seed. */
struct seed_part {
    enum attn_seed_part part;
    bool drawn;
    struct attn_opt_seed *seed;
};

static int seed_parts(struct attn_scene *s, struct seed_part out[6])
{
    const struct attn_config *a = &s->attn;
    bool ckpt = s->model.file != NULL;
    bool attn_drawn = !ckpt && !s->weights.set &&
                      (attn_scene_eff_projection(s) != PROJ_NONE || attn_scene_eff_out_proj(s));
    out[0] =
        (struct seed_part){SEED_PART_EMBEDDINGS, s->embed.kind == EMBED_LEARNED, &s->embed.seed};
    out[1] = (struct seed_part){SEED_PART_POSITIONS,
                                s->pos.kind == POS_LEARNED && !s->pos.table.data, &s->pos.seed};
    out[2] = (struct seed_part){SEED_PART_ATTENTION, attn_drawn, &s->attn.seed};
    out[3] = (struct seed_part){SEED_PART_FFN,
                                !ckpt && s->block.on && !attn_matrix_given(&s->weights.ffn_W1),
                                &s->block.ffn_seed};
    /* layers 1 ..: drawn on from the stream, with no seed of their own */
    bool later = false;
    for (int L = 1; L < s->layers && !ckpt; L++)
        later = later || !attn_scene_layer_weights(s, L)->set;
    out[4] = (struct seed_part){0, later, NULL};
    out[5] = (struct seed_part){SEED_PART_DROPOUT,
                                a->dropout > 0 && a->dropout < 1 && !s->weights.dropout_mask,
                                &s->attn.dropout_seed};
    return 6;
}

unsigned attn_scene_set_seed(struct attn_scene *s, uint64_t seed, unsigned *kept)
{
    struct seed_part parts[6];
    int n = seed_parts(s, parts);
    unsigned moved = 0;
    *kept = 0;
    for (int i = 0; i < n; i++) {
        if (!parts[i].seed || !parts[i].seed->set)
            continue;
        if (parts[i].seed->value == s->seed) {
            parts[i].seed->value = seed;
            moved |= parts[i].part;
        } else {
            *kept |= parts[i].part;
        }
    }
    s->seed = seed;
    return moved;
}

bool attn_scene_seed_used(const struct attn_scene *s, enum attn_seed_part *first)
{
    struct seed_part parts[6];
    int n = seed_parts((struct attn_scene *)s, parts); /* read only */
    *first = 0;
    for (int i = 0; i < n; i++) {
        if (!parts[i].drawn)
            continue;
        if (parts[i].seed && parts[i].seed->set) { /* re-seeded before anything drew */
            *first = parts[i].part;
            return false;
        }
        return true;
    }
    return false;
}

int attn_scene_set_tokens(struct attn_scene *s, char *const *tokens, int n, struct diag *err)
{
    if (n > SCENE_MAX_TOKENS)
        return attn_diag_set(err, "tokens", "more than %d tokens", SCENE_MAX_TOKENS);
    char **copy = attn_tokens_dup(tokens, n);
    if (!copy)
        return attn_diag_set(err, "tokens", "out of memory");
    free(s->text);
    s->text = NULL;
    free(s->text_pair);
    s->text_pair = NULL;
    attn_tokens_free(s->tokens, s->n_tokens);
    free(s->token_ids);
    s->token_ids = NULL;
    free(s->token_types);
    s->token_types = NULL;
    s->tokens = copy;
    s->n_tokens = n;
    return 0;
}

int attn_scene_d_in(const struct attn_scene *s)
{
    return s->embed.kind == EMBED_EXPLICIT || s->embed.kind == EMBED_TABLE ? s->embed.rows.cols
                                                                           : s->embed.dim;
}

int attn_scene_eff_d_out(const struct attn_scene *s)
{
    return s->attn.d_out > 0 ? s->attn.d_out : attn_scene_d_in(s);
}

enum attn_projection attn_scene_eff_projection(const struct attn_scene *s)
{
    return s->attn.projection == PROJ_DEFAULT ? PROJ_LINEAR : s->attn.projection;
}

bool attn_scene_eff_out_proj(const struct attn_scene *s)
{
    if (s->attn.out_proj != TRI_DEFAULT)
        return s->attn.out_proj == TRI_TRUE;
    return s->attn.heads > 1 && s->attn.layout == LAYOUT_SPLIT;
}

enum attn_scale_kind attn_scene_eff_scale(const struct attn_scene *s)
{
    if (s->attn.scale != SCALE_DEFAULT)
        return s->attn.scale;
    return attn_scene_eff_projection(s) == PROJ_NONE ? SCALE_NONE : SCALE_SQRT_DK;
}

int attn_scene_head_dim(const struct attn_scene *s)
{
    int d_out = attn_scene_eff_d_out(s);
    if (s->attn.layout == LAYOUT_WRAPPER)
        return d_out;
    return s->attn.heads > 0 ? d_out / s->attn.heads : d_out;
}

int attn_scene_concat_dim(const struct attn_scene *s)
{
    return s->attn.layout == LAYOUT_WRAPPER ? s->attn.heads * attn_scene_eff_d_out(s)
                                            : attn_scene_eff_d_out(s);
}

int attn_scene_kv_heads(const struct attn_scene *s)
{
    return s->attn.kv_heads > 0 ? s->attn.kv_heads : s->attn.heads;
}

int attn_scene_kv_dim(const struct attn_scene *s)
{
    if (s->attn.layout == LAYOUT_WRAPPER)
        return attn_scene_concat_dim(s);
    return attn_scene_kv_heads(s) * attn_scene_head_dim(s);
}

int attn_scene_ffn_hidden(const struct attn_scene *s)
{
    return s->block.ffn_hidden > 0 ? s->block.ffn_hidden : 4 * attn_scene_d_in(s);
}

int attn_scene_out_dim(const struct attn_scene *s)
{
    return s->model.file && s->block.on && attn_scene_eff_out_proj(s) ? attn_scene_d_in(s)
                                                                      : attn_scene_concat_dim(s);
}

const struct attn_scene_weights *attn_scene_layer_weights(const struct attn_scene *s, int layer)
{
    static const struct attn_scene_weights none;
    if (layer == 0)
        return &s->weights;
    return layer - 1 < s->n_more ? &s->more_weights[layer - 1] : &none;
}

long attn_scene_kv_cache(const struct attn_scene *s, long *mha_floats)
{
    long hd = attn_scene_head_dim(s), heads = s->attn.heads;
    if (mha_floats)
        *mha_floats = 2 * heads * hd;
    if (s->attn.kv_latent > 0)
        return s->attn.kv_latent;
    return 2L * attn_scene_kv_heads(s) * hd;
}

int attn_scene_check_backing(const struct attn_scene *s, struct diag *err)
{
    if (!s->backing || !s->backing->check)
        return 0;
    return s->backing->check(s->backing, err);
}

int attn_memory_env_parse(const char *text, size_t *bytes, char *why, size_t why_size)
{
    static const struct {
        const char *suffix;
        unsigned shift; /* bytes = number << shift */
    } units[] = {{"", 20}, {"M", 20}, {"MiB", 20}, {"G", 30}, {"GiB", 30}};
    const char *p = text;
    uint64_t n = 0;
    bool overflow = false;
    while (*p >= '0' && *p <= '9') {
        unsigned digit = (unsigned)(*p++ - '0');
        if (n > (UINT64_MAX - digit) / 10)
            overflow = true;
        else
            n = n * 10 + digit;
    }
    int unit = -1;
    for (int i = 0; p != text && i < (int)(sizeof(units) / sizeof(units[0])); i++)
        if (strcmp(p, units[i].suffix) == 0)
            unit = i;
    if (unit < 0) {
        snprintf(why, why_size,
                 "ATTNSCOPE_MEMORY_MIB is '%.40s%s': not a number of MiB (a whole number like "
                 "2048, or with a unit: 512M, 512MiB, 2G, 2GiB)",
                 text, strlen(text) > 40 ? "..." : "");
        return -1;
    }
    if (overflow || n > (UINT64_MAX >> units[unit].shift)) {
        snprintf(why, why_size,
                 "ATTNSCOPE_MEMORY_MIB is '%.40s%s': out of range (attnscope uses at most %zu "
                 "MiB)",
                 text, strlen(text) > 40 ? "..." : "", SCENE_MAX_BYTES >> 20);
        return -1;
    }
    if (n == 0) {
        snprintf(why, why_size, "ATTNSCOPE_MEMORY_MIB is '%.40s': the limit must be at least 1 MiB",
                 text);
        return -1;
    }
    uint64_t b = n << units[unit].shift;
    *bytes = b < SCENE_MAX_BYTES ? (size_t)b : SCENE_MAX_BYTES;
    return 0;
}

size_t attn_scene_memory_limit(const char **why)
{
    const char *env = getenv("ATTNSCOPE_MEMORY_MIB");
    char problem[160];
    size_t bytes;
    /* An invalid value is refused by the command line before any scene is read (main); here it
       falls back to the default. */
    if (env && *env && attn_memory_env_parse(env, &bytes, problem, sizeof(problem)) == 0) {
        *why = "ATTNSCOPE_MEMORY_MIB";
        return bytes;
    }
    /* Refused before anything is allocated: past physical memory a scene would page or be
     * killed, never fail cleanly (Linux overcommits). */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        size_t quarter3 = (size_t)pages / 4 * 3 * (size_t)page;
        if (quarter3 < SCENE_MAX_BYTES) {
            *why = "3/4 of this machine's memory; ATTNSCOPE_MEMORY_MIB sets another";
            return quarter3;
        }
    }
    *why = "attnscope's most";
    return SCENE_MAX_BYTES;
}

double attn_scene_flops(const struct attn_scene *s)
{
    double n = s->n_tokens > 0 ? s->n_tokens : 0;
    double d = attn_scene_d_in(s) > 0 ? attn_scene_d_in(s) : 0;
    double D = attn_scene_concat_dim(s) > 0 ? attn_scene_concat_dim(s) : 0;
    double Dkv = attn_scene_kv_dim(s) > 0 ? attn_scene_kv_dim(s) : 0;
    double heads = s->attn.heads > 0 ? s->attn.heads : 1, r = s->attn.kv_latent;
    bool project = attn_scene_eff_projection(s) != PROJ_NONE;
    double f = 0;
    if (project)
        f += r > 0 ? 2 * n * d * (D + r) + 2 * 2 * n * r * D : 2 * n * d * (D + 2 * Dkv);
    f += 2 * n * n * D * 2; /* Q K^T and weights V, over the heads' widths */
    f += 8 * heads * n * n; /* scale, mask, softmax (an exp a cell), dropout */
    if (attn_scene_eff_out_proj(s))
        f += 2 * n * D * (attn_scene_out_dim(s) > 0 ? attn_scene_out_dim(s) : 0);
    if (s->block.on) {
        double h = attn_scene_ffn_hidden(s) > 0 ? attn_scene_ffn_hidden(s) : 0;
        int linears = s->block.activation == ACT_SWIGLU ? 3 : 2;
        f += linears * 2 * n * d * h + 20 * n * (d + h); /* the Linears, the norms, gelu */
    }
    return f * (s->layers > 1 ? s->layers : 1);
}

size_t attn_scene_mem_estimate(const struct attn_scene *s)
{
    size_t n = (size_t)(s->n_tokens > 0 ? s->n_tokens : 0);
    size_t d_in = (size_t)(attn_scene_d_in(s) > 0 ? attn_scene_d_in(s) : 0);
    size_t D = (size_t)(attn_scene_concat_dim(s) > 0 ? attn_scene_concat_dim(s) : 0);
    size_t Dkv = (size_t)(attn_scene_kv_dim(s) > 0 ? attn_scene_kv_dim(s) : 0);
    size_t E = (size_t)(attn_scene_out_dim(s) > 0 ? attn_scene_out_dim(s) : 0);
    size_t heads = (size_t)(s->attn.heads > 0 ? s->attn.heads : 0);
    size_t r = (size_t)(s->attn.kv_latent > 0 ? s->attn.kv_latent : 0);
    bool rope = s->pos.kind == POS_ROPE, fused = s->attn.qkv != QKV_SEPARATE;
    size_t pos = s->pos.kind == POS_LEARNED      ? (size_t)s->pos.max_len * d_in
                 : s->pos.kind == POS_SINUSOIDAL ? n * d_in
                 : rope                          ? n * D
                                                 : 0;
    /* A checkpoint's parameters stay in its mapping: only what the engine computes counts (fused
       q, k, v, which it splits into copies), and its F16/BF16 or transposed tensors, widened one
       at a time into one buffer, are in s->model.widened with what the loader widened itself. */
    bool mapped = s->model.file != NULL;
    size_t qkv = d_in * (D + 2 * Dkv);
    size_t params = (mapped ? (fused ? qkv : 0) : qkv + (fused ? qkv : 0)) /* W_q, k, v */
                    + 3 * (D + 2 * Dkv)                                    /* their biases */
                    + (mapped ? 0 : D * E + E + r * (d_in + 2 * D));       /* out_proj, MLA's */
    size_t floats = 3 * n * d_in + (mapped ? 0 : pos) /* embeddings and their table, inputs */
                    + params + n * (D + 2 * Dkv) * (rope ? 2 : 1) /* q, k, v and their rotations */
                    + (s->attn.qk_norm ? n * (D + Dkv) : 0)       /* q and k normalised */
                    + n * D + n * E                               /* concat, output */
                    + 3 * heads * n * n + n * n /* scores, weights, one derived stage, work */
                    + r * n;                    /* MLA's latent */
    if (s->block.on) {
        size_t h = (size_t)attn_scene_ffn_hidden(s);
        size_t h_stages = s->block.activation == ACT_SWIGLU ? 3 : 2;
        floats += (mapped ? 0 : 2 * d_in * h + h) + 6 * d_in /* the FFN and the norms */
                  + n * (h_stages * h + 7 * d_in);           /* the block's stages */
    }
    floats += heads * n + n * D; /* weighted_norm's value norms and their product */
    size_t layers = (size_t)(s->layers > 1 ? s->layers : 1);
    size_t bytes =
        layers * (floats * sizeof(float) + heads * n * n /* keep mask */) + s->model.widened;
    /* Next-token scores: one block of logits rows at a time (logits.h), never n x vocab; a lazy
       unembedding is widened a block of its rows at a time too. */
    if (attn_matrix_given(&s->unembed)) {
        size_t vocab = (size_t)s->unembed.rows;
        bytes += (SCENE_LOGITS_BLOCK_FLOATS + vocab + 2 * n * d_in) * sizeof(float) +
                 (s->unembed.lazy ? SCENE_LOGITS_BLOCK_FLOATS * sizeof(float) : 0) +
                 (s->unembed.borrowed ? 0 : vocab * d_in * sizeof(float));
    }
    return bytes;
}

/* Appends one problem located at `path`; the loader fills in file:line:col. */
static void problem(struct diag_list *out, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(struct diag_list *out, const char *path, const char *fmt, ...)
{
    struct diag d;
    attn_diag_clear(&d);
    va_list ap;
    va_start(ap, fmt);
    attn_diag_vset(&d, path, fmt, ap);
    va_end(ap);
    attn_diag_list_push(out, &d);
}

static void check_shape(struct diag_list *out, const char *path, const struct attn_matrix *m,
                        int rows, int cols, bool wanted, const char *why)
{
    if (!attn_matrix_given(m)) {
        if (wanted)
            problem(out, path, "'%s' is missing (%s)", path, why);
        return;
    }
    if (!wanted) {
        problem(out, path, "'%s' is given but %s", path, why);
        return;
    }
    if (m->rows != rows || m->cols != cols)
        problem(out, path, "'%s' is %d x %d, expected %d x %d", path, m->rows, m->cols, rows, cols);
}

/* The rules of the later systems: positions (sinusoidal, RoPE), fused QKV, GQA/MQA, MLA, the
 * block. */
static void check_systems(const struct attn_scene *s, struct diag_list *out)
{
    const struct attn_config *a = &s->attn;
    int d_in = attn_scene_d_in(s), hd = attn_scene_head_dim(s), n = s->n_tokens;
    bool split = a->layout == LAYOUT_SPLIT;
    enum attn_projection proj = attn_scene_eff_projection(s);
    enum attn_pos_kind pk = s->pos.kind;
    if ((pk == POS_SINUSOIDAL || pk == POS_ROPE) && !(s->pos.base > 1.0 && isfinite(s->pos.base)))
        problem(out, "positional.base", "base must be a number above 1, not %g", s->pos.base);
    if (s->pos.offset < 0 || s->pos.offset > 8 * SCENE_MAX_TOKENS)
        problem(out, "positional.offset", "offset %d is out of range (0..%d)", s->pos.offset,
                8 * SCENE_MAX_TOKENS);
    else if (s->pos.offset > 0 && pk == POS_NONE)
        problem(out, "positional.offset", "offset needs positions: kind is none");
    if (pk == POS_SINUSOIDAL && d_in % 2 != 0)
        problem(out, "positional.kind",
                "sinusoidal positions pair sine and cosine columns, so d_in must be even, not %d",
                d_in);
    if (pk == POS_ROPE && hd % 2 != 0)
        problem(out, "positional.kind",
                "rope rotates pairs of dimensions, so head_dim must be even, not %d", hd);
    if (pk == POS_ROPE && a->kv_latent > 0)
        problem(out, "positional.kind",
                "rope with kv_latent needs DeepSeek's decoupled rotary keys, which attnscope does "
                "not model: drop one of them");
    (void)n;

    int heads = a->heads, K = attn_scene_kv_heads(s);
    if (a->kv_heads != 0) {
        if (!split)
            problem(out, "attention.kv_heads", "kv_heads needs head_layout: split");
        else if (K < 1 || K > heads)
            problem(out, "attention.kv_heads", "kv_heads %d is out of range (1..heads = %d)", K,
                    heads);
        else if (K != heads && proj == PROJ_NONE)
            problem(out, "attention.kv_heads",
                    "kv_heads needs a projection to make K and V narrower than Q (projection is "
                    "none)");
        else if (heads % K != 0)
            problem(out, "attention.kv_heads",
                    "heads %d is not a multiple of kv_heads %d (each KV head serves heads / "
                    "kv_heads query heads)",
                    heads, K);
    }
    if (a->qkv != QKV_SEPARATE) {
        const char *mode = attn_qkv_mode_name(a->qkv);
        if (!split)
            problem(out, "attention.qkv", "qkv: %s needs head_layout: split", mode);
        else if (proj != PROJ_LINEAR)
            problem(out, "attention.qkv", "qkv: %s needs projection: linear (it is %s)", mode,
                    attn_projection_name(proj));
        else if (a->kv_latent > 0)
            problem(out, "attention.qkv",
                    "qkv: %s and kv_latent are two ways to make K and V: choose one", mode);
        else if (a->qkv == QKV_FUSED_HEADS && K != heads)
            problem(out, "attention.qkv",
                    "qkv: fused_heads gives every head its own q, k and v, so kv_heads must equal "
                    "heads (use qkv: fused with kv_heads)");
    }
    if (a->kv_latent != 0) {
        if (a->kv_latent < 1 || a->kv_latent > SCENE_MAX_DIM)
            problem(out, "attention.kv_latent", "kv_latent %d is out of range (1..%d)",
                    a->kv_latent, SCENE_MAX_DIM);
        else if (!split)
            problem(out, "attention.kv_latent", "kv_latent needs head_layout: split");
        else if (proj != PROJ_LINEAR)
            problem(out, "attention.kv_latent", "kv_latent needs projection: linear (it is %s)",
                    attn_projection_name(proj));
        else if (a->qkv_bias)
            problem(out, "attention.kv_latent",
                    "kv_latent's projections have no bias: set qkv_bias: false");
        else if (a->kv_heads != 0 && K != heads)
            problem(out, "attention.kv_latent",
                    "kv_latent gives every head its own K and V from the latent: drop kv_heads");
    }

    const struct attn_block *b = &s->block;
    if (!b->on)
        return;
    int D = attn_scene_concat_dim(s);
    if (attn_scene_out_dim(s) != d_in)
        problem(out, "block",
                "the block adds the attention output back to its input, so they must be as wide: "
                "the output is %d wide, d_in is %d (set attention.d_out to %d)",
                D, d_in, split ? d_in : d_in / (heads > 0 ? heads : 1));
    if (b->ffn_hidden < 0 || attn_scene_ffn_hidden(s) > 4 * SCENE_MAX_DIM)
        problem(out, "block.ffn_hidden", "ffn_hidden %d is out of range (1..%d)",
                attn_scene_ffn_hidden(s), 4 * SCENE_MAX_DIM);
    if (!(b->norm_eps > 0.0 && isfinite(b->norm_eps)))
        problem(out, "block.norm_eps", "norm_eps must be a positive number, not %g", b->norm_eps);
    if (b->ffn_skip < 0)
        problem(out, "block.ffn_skip", "ffn_skip %d is out of range (0 or more)", b->ffn_skip);
}

/* The explicit parameters fit the scene's shapes; what a mode does not use is not given. */
static void check_weights(const struct attn_scene *s, int layer, struct diag_list *out)
{
    const struct attn_scene_weights *w = attn_scene_layer_weights(s, layer);
    /* "weights.query", or "weights[1].query" when the file gives one mapping per layer */
    char pre[32];
    if (s->weights_listed)
        snprintf(pre, sizeof(pre), "weights[%d]", layer);
    else
        snprintf(pre, sizeof(pre), "weights");
    char path[64];
#define P(key) (snprintf(path, sizeof(path), "%s.%s", pre, key), path)
    const struct attn_config *a = &s->attn;
    int d_in = attn_scene_d_in(s), D = attn_scene_concat_dim(s), Dkv = attn_scene_kv_dim(s);
    int r = a->kv_latent, W = D + 2 * Dkv;
    enum attn_projection proj = attn_scene_eff_projection(s);
    bool fused = a->qkv != QKV_SEPARATE, mla = r > 0, given = w->set;
    if (given) {
        bool out_proj = attn_scene_eff_out_proj(s);
        bool any = proj != PROJ_NONE, sep = any && !fused && !mla;
        const char *why = !any    ? "projection is none (Q = K = V = X)"
                          : fused ? "qkv is fused: give 'qkv'"
                          : mla   ? "kv_latent makes K and V from 'down', 'key_up' and 'value_up'"
                                  : "needed with weights";
        const char *bias_why = a->qkv_bias ? "qkv_bias is true" : "qkv_bias is false";
        check_shape(out, P("query"), &w->query, d_in, D, sep || mla, why);
        check_shape(out, P("key"), &w->key, d_in, Dkv, sep, why);
        check_shape(out, P("value"), &w->value, d_in, Dkv, sep, why);
        check_shape(out, P("query_bias"), &w->query_bias, 1, D, sep && a->qkv_bias,
                    sep ? bias_why : why);
        check_shape(out, P("key_bias"), &w->key_bias, 1, Dkv, sep && a->qkv_bias,
                    sep ? bias_why : why);
        check_shape(out, P("value_bias"), &w->value_bias, 1, Dkv, sep && a->qkv_bias,
                    sep ? bias_why : why);
        check_shape(out, P("qkv"), &w->qkv, d_in, W, fused,
                    fused ? "needed with weights" : "qkv is separate: give query, key and value");
        check_shape(out, P("qkv_bias"), &w->qkv_bias, 1, W, fused && a->qkv_bias,
                    fused ? bias_why : "qkv is separate");
        const char *mla_why = mla ? "needed with weights" : "there is no kv_latent";
        check_shape(out, P("down"), &w->down, d_in, r, mla, mla_why);
        check_shape(out, P("key_up"), &w->key_up, r, D, mla, mla_why);
        check_shape(out, P("value_up"), &w->value_up, r, D, mla, mla_why);
        int E = attn_scene_out_dim(s);
        check_shape(out, P("out"), &w->out, D, E, out_proj,
                    out_proj ? "out_proj is on" : "out_proj is off");
        check_shape(out, P("out_bias"), &w->out_bias, 1, E, out_proj && a->out_bias,
                    out_proj && a->out_bias ? "out_proj has a bias" : "there is no out bias");
    }
    const struct attn_block *b = &s->block;
    int h = attn_scene_ffn_hidden(s);
    bool ffn = b->on && (attn_matrix_given(&w->ffn_W1) || attn_matrix_given(&w->ffn_b1) ||
                         attn_matrix_given(&w->ffn_W2) || attn_matrix_given(&w->ffn_b2) ||
                         attn_matrix_given(&w->ffn_Wgate) || attn_matrix_given(&w->ffn_bgate));
    bool gated = b->activation == ACT_SWIGLU;
    const char *ffn_why = !b->on ? "there is no block"
                          : gated
                              ? "swiglu's three matrices go together (with their biases, if any)"
                              : "the FFN's four parameters go together";
    check_shape(out, P("ffn_W1"), &w->ffn_W1, d_in, h, ffn, ffn_why);
    /* swiglu's biases (Llama's mlp_bias) come three together, or not at all */
    bool gate_biases = gated && attn_matrix_given(&w->ffn_bgate);
    check_shape(out, P("ffn_b1"), &w->ffn_b1, 1, h, ffn && (!gated || gate_biases), ffn_why);
    check_shape(out, P("ffn_W2"), &w->ffn_W2, h, d_in, ffn, ffn_why);
    check_shape(out, P("ffn_b2"), &w->ffn_b2, 1, d_in, ffn && (!gated || gate_biases), ffn_why);
    check_shape(out, P("ffn_Wgate"), &w->ffn_Wgate, d_in, h, ffn && gated,
                gated ? ffn_why : "only swiglu has a gate");
    check_shape(out, P("ffn_bgate"), &w->ffn_bgate, 1, h, ffn && gate_biases,
                gated ? ffn_why : "only swiglu has a gate");
    const char *qk_why = a->qk_norm ? "qk_norm is on" : "there is no qk_norm";
    check_shape(out, P("q_norm_weight"), &w->q_norm_weight, 1, attn_scene_head_dim(s),
                a->qk_norm && given, qk_why);
    check_shape(out, P("k_norm_weight"), &w->k_norm_weight, 1, attn_scene_head_dim(s),
                a->qk_norm && given, qk_why);
    const struct attn_matrix *norms[4] = {&w->norm1_weight, &w->norm1_bias, &w->norm2_weight,
                                          &w->norm2_bias};
    static const char *const norm_paths[4] = {"norm1_weight", "norm1_bias", "norm2_weight",
                                              "norm2_bias"};
    for (int i = 0; i < 4; i++) {
        bool bias = i % 2 == 1;
        if (!norms[i]->data)
            continue;
        bool ok = b->on && !(bias && b->norm == NORM_RMS);
        check_shape(out, P(norm_paths[i]), norms[i], 1, d_in, ok,
                    !b->on ? "there is no block" : "RMSNorm has no bias");
    }
    bool last = layer == (s->layers > 1 ? s->layers : 1) - 1;
    const struct attn_matrix *fin[2] = {&w->final_norm_weight, &w->final_norm_bias};
    static const char *const fin_paths[2] = {"final_norm_weight", "final_norm_bias"};
    for (int i = 0; i < 2; i++) {
        if (!fin[i]->data)
            continue;
        bool ok = b->on && b->final_norm && last && !(i == 1 && b->norm == NORM_RMS);
        check_shape(out, P(fin_paths[i]), fin[i], 1, d_in, ok,
                    !b->on || !b->final_norm ? "there is no final norm (block.final_norm)"
                    : !last                  ? "the final norm belongs to the last layer"
                                             : "RMSNorm has no bias");
    }
    if (w->dropout_mask) {
        const struct attn_config *ac = &s->attn;
        if (!(ac->dropout > 0.0 && ac->dropout < 1.0)) /* p = 0 keeps all, p = 1 drops all */
            problem(out, P("dropout_mask"), "dropout_mask needs 0 < dropout < 1 (dropout is %g)",
                    ac->dropout);
        else if (w->dropout_mask_heads != ac->heads)
            problem(out, P("dropout_mask"), "dropout_mask is for %d heads, the scene has %d",
                    w->dropout_mask_heads, ac->heads);
        else if (w->dropout_mask_n != s->n_tokens)
            problem(out, P("dropout_mask"), "dropout_mask is for %d tokens, the scene has %d",
                    w->dropout_mask_n, s->n_tokens);
    }
#undef P
}

/* ablate: every head exists, and none is named twice. */
static void check_ablate(const struct attn_scene *s, struct diag_list *out)
{
    char path[DIAG_PATH_MAX];
    int layers = s->layers, heads = s->attn.heads;
    for (int i = 0; i < s->n_ablate; i++) {
        const struct attn_ablation *a = &s->ablate[i];
        if (a->layer < 0 || a->layer >= layers) {
            snprintf(path, sizeof(path), "ablate[%d].layer", i);
            problem(out, path,
                    "ablate: layer %d does not exist: the scene has %d layer%s (0 to %d)", a->layer,
                    layers, layers == 1 ? "" : "s", layers - 1);
            continue;
        }
        if (a->head < 0 || a->head >= heads) {
            snprintf(path, sizeof(path), "ablate[%d].head", i);
            problem(out, path, "ablate: head %d does not exist: the scene has %d head%s (0 to %d)",
                    a->head, heads, heads == 1 ? "" : "s", heads - 1);
            continue;
        }
        for (int j = 0; j < i; j++)
            if (s->ablate[j].layer == a->layer && s->ablate[j].head == a->head) {
                snprintf(path, sizeof(path), "ablate[%d]", i);
                problem(out, path,
                        "ablate: layer %d head %d is already ablated (item %d of the list); "
                        "give each head once",
                        a->layer, a->head, j + 1);
                break;
            }
    }
}

int attn_scene_check(const struct attn_scene *s, struct diag_list *out)
{
    int before = out->n + out->lost;
    const char *tok_path = s->text ? "text" : "tokens";
    int n = s->n_tokens;
    if (n < 1)
        problem(out, tok_path, "the scene has no tokens");
    if (n > SCENE_MAX_TOKENS)
        problem(out, tok_path, "%d tokens is over the limit of %d", n, SCENE_MAX_TOKENS);
    for (int i = 0; i < n && i < SCENE_MAX_TOKENS; i++)
        if (strlen(s->tokens[i]) > SCENE_MAX_TOKEN_BYTES)
            problem(out, tok_path, "token %d is longer than %d bytes", i + 1,
                    SCENE_MAX_TOKEN_BYTES);

    int d_in = attn_scene_d_in(s);
    switch (s->embed.kind) {
    case EMBED_EXPLICIT:
        if (s->embed.rows.rows != n)
            problem(out, "embeddings", "%d embedding rows for %d tokens", s->embed.rows.rows, n);
        break;
    case EMBED_LEARNED:
        break;
    case EMBED_TABLE:
        for (int i = 0; i < n; i++)
            if (!s->token_ids || s->token_ids[i] < 0 || s->token_ids[i] >= s->embed.rows.rows) {
                problem(out, tok_path, "token %d has id %d, outside the embedding table's %d rows",
                        i + 1, s->token_ids ? s->token_ids[i] : -1, s->embed.rows.rows);
                break;
            }
        break;
    case EMBED_NONE:
        problem(out, "embeddings", "the scene has no embeddings");
        break;
    }
    if (d_in < 1 || d_in > SCENE_MAX_DIM)
        problem(out, s->embed.kind == EMBED_LEARNED ? "embeddings.dim" : "embeddings",
                "d_in %d is out of range (1..%d)", d_in, SCENE_MAX_DIM);
    if (attn_matrix_given(&s->embed.types))
        for (int i = 0; i < n; i++) {
            int t = s->token_types ? s->token_types[i] : 0;
            if (t < 0 || t >= s->embed.types.rows) {
                problem(out, tok_path,
                        "token %d is of sentence %d, but the checkpoint has %d token types", i + 1,
                        t + 1, s->embed.types.rows);
                break;
            }
        }

    if (s->pos.kind == POS_LEARNED) {
        if (s->pos.max_len < 1 || s->pos.max_len > 8 * SCENE_MAX_TOKENS)
            problem(out, "positional.max_len", "max_len %d is out of range (1..%d)", s->pos.max_len,
                    8 * SCENE_MAX_TOKENS);
        else if (s->pos.max_len < n + (s->pos.offset > 0 ? s->pos.offset : 0))
            problem(out, "positional.max_len",
                    s->pos.offset > 0 ? "max_len %d is less than offset + the %d tokens"
                                      : "max_len %d is less than the %d tokens",
                    s->pos.max_len, n);
        if (s->pos.table.data && (s->pos.table.rows != s->pos.max_len || s->pos.table.cols != d_in))
            problem(out, "positional.table", "'positional.table' is %d x %d, expected %d x %d",
                    s->pos.table.rows, s->pos.table.cols, s->pos.max_len, d_in);
    }

    const struct attn_config *a = &s->attn;
    enum attn_projection proj = attn_scene_eff_projection(s);
    int d_out = attn_scene_eff_d_out(s);
    bool heads_ok = a->heads >= 1 && a->heads <= SCENE_MAX_HEADS;
    if (!heads_ok)
        problem(out, "attention.heads", "heads %d is out of range (1..%d)", a->heads,
                SCENE_MAX_HEADS);
    if (a->d_out < 0 || d_out > SCENE_MAX_DIM)
        problem(out, "attention.d_out", "d_out %d is out of range (1..%d)", d_out, SCENE_MAX_DIM);
    else if (heads_ok && a->layout == LAYOUT_SPLIT && d_out % a->heads != 0)
        problem(out, "attention.d_out",
                "d_out %d is not divisible by heads %d (the split layout gives each head "
                "d_out / heads columns)",
                d_out, a->heads);
    if (a->layout == LAYOUT_WRAPPER && heads_ok && d_out >= 1 &&
        (long)a->heads * d_out > SCENE_MAX_DIM)
        problem(out, "attention.heads", "heads x d_out = %ld is over the limit of %d",
                (long)a->heads * d_out, SCENE_MAX_DIM);
    if (proj == PROJ_NONE && d_out != d_in)
        problem(out, "attention.d_out",
                "projection none keeps Q = K = V = X, so d_out must equal d_in (%d), not %d", d_in,
                d_out);
    if (a->qkv_bias && proj != PROJ_LINEAR)
        problem(out, "attention.qkv_bias", "qkv_bias needs projection: linear (it is %s)",
                attn_projection_name(proj));
    if (a->scale == SCALE_DIVISOR && !(a->scale_divisor > 0.0 && isfinite(a->scale_divisor)))
        problem(out, "attention.scale", "scale must be true, false or a positive number");
    if (!(a->dropout >= 0.0 && a->dropout <= 1.0))
        problem(out, "attention.dropout", "dropout %g is out of range [0, 1]", a->dropout);

    check_systems(s, out);

    int layers = s->layers;
    if (layers < 1 || layers > SCENE_MAX_LAYERS)
        problem(out, "layers", "layers %d is out of range (1..%d)", layers, SCENE_MAX_LAYERS);
    else if (layers > 1 && attn_scene_concat_dim(s) != d_in && !s->block.on)
        problem(out, "layers",
                "each layer reads the one before it, so attention's output must be as wide as its "
                "input: the output is %d wide, d_in is %d",
                attn_scene_concat_dim(s), d_in);
    else if (s->weights_listed && s->n_more + 1 != layers)
        problem(out, "weights", "'weights' lists %d layers, the scene has %d", s->n_more + 1,
                layers);
    if (s->view.layer >= 0 && layers >= 1 && s->view.layer >= layers)
        problem(out, "view.layer", "view.layer %d: the scene has %d layer%s (0 to %d)",
                s->view.layer, layers, layers == 1 ? "" : "s", layers - 1);
    if (s->view.layer >= 0 && s->view.head >= s->attn.heads)
        problem(out, "view.head", "view.head %d: the scene has %d head%s (0 to %d)", s->view.head,
                s->attn.heads, s->attn.heads == 1 ? "" : "s", s->attn.heads - 1);
    if (s->block.final_norm && !s->block.on)
        problem(out, "block.final_norm", "final_norm needs the block");
    if (attn_matrix_given(&s->unembed) && s->unembed.cols != d_in)
        problem(out, "model", "the unembedding is %d x %d, expected %d columns (d_in)",
                s->unembed.rows, s->unembed.cols, d_in);
    if (a->window < 0)
        problem(out, "attention", "the sliding window %d is not a number of tokens", a->window);
    check_ablate(s, out);
    if (out->n == before) /* shapes only make sense once the sizes are sane */
        for (int L = 0; L < (s->weights_listed ? layers : 1); L++)
            check_weights(s, L, out);

    if (out->n == before) {
        size_t bytes = attn_scene_mem_estimate(s);
        const char *why;
        size_t limit = attn_scene_memory_limit(&why);
        /* Rounded up: 512.77 MiB must never read as "about 512 MiB, over the 512 MiB limit". */
        if (bytes > limit)
            problem(out, tok_path,
                    "the scene needs about %zu MiB for its parameters and stages, over the "
                    "%zu MiB limit (%s)",
                    (bytes + ((size_t)1 << 20) - 1) >> 20, limit >> 20, why);
    }
    return out->n + out->lost - before;
}

bool attn_scene_has_vocab(const struct attn_scene *s)
{
    return attn_matrix_given(&s->unembed) && s->token_ids && s->unembed.rows > 0;
}

const char *attn_scene_why_no_vocab(const struct attn_scene *s)
{
    if (s->model.file)
        return "its checkpoint has no unembedding (neither lm_head.weight nor a wte to tie)";
    if (s->embed.kind == EMBED_EXPLICIT)
        return "its embeddings are rows written in the scene, not a vocabulary model: there is "
               "no unembedding to turn the last layer into next-token scores (open a checkpoint "
               "with model: {file: model.safetensors, arch: gpt2})";
    return "its embeddings are drawn for its own words, not a vocabulary model: there is no "
           "unembedding to turn the last layer into next-token scores (open a checkpoint with "
           "model: {file: model.safetensors, arch: gpt2})";
}

void attn_scene_token_label(char *out, size_t size, const struct attn_scene *s, int id)
{
    if (s->backing && s->backing->label)
        s->backing->label(s->backing, id, out, size);
    else
        snprintf(out, size, "<id %d>", id);
}

int attn_scene_single_token(int *id, const struct attn_scene *s, const char *text, struct diag *err)
{
    if (!s->backing || !s->backing->tokenize)
        return attn_diag_set(err, "", "the scene has no vocabulary tokenizer to read '%s' with",
                             text);
    char **tokens = NULL;
    int *ids = NULL, *types = NULL, n = 0;
    if (s->backing->tokenize(s->backing, text, NULL, false, &tokens, &ids, &types, &n, err))
        return -1;
    free(types);
    int rc = 0;
    if (n == 1) {
        *id = ids[0];
    } else if (n == 0) {
        rc = attn_diag_set(err, "", "'%s' is no token at all", text);
    } else {
        char list[256] = "";
        size_t o = 0;
        for (int i = 0; i < n && o < sizeof(list); i++)
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s'%s'", i ? " + " : "", tokens[i]);
        rc = attn_diag_set(err, "", "'%s' is not a single token: the tokenizer makes %d of it (%s)",
                           text, n, list);
    }
    attn_tokens_free(tokens, n);
    free(ids);
    return rc;
}

enum attn_head_mode attn_scene_ablation(const struct attn_scene *s, int layer, int head)
{
    for (int i = 0; i < s->n_ablate; i++)
        if (s->ablate[i].layer == layer && s->ablate[i].head == head)
            return s->ablate[i].mode;
    return HEAD_KEEP;
}

int attn_scene_set_ablation(struct attn_scene *s, int layer, int head, enum attn_head_mode mode)
{
    for (int i = 0; i < s->n_ablate; i++)
        if (s->ablate[i].layer == layer && s->ablate[i].head == head) {
            if (mode == HEAD_KEEP) {
                memmove(&s->ablate[i], &s->ablate[i + 1],
                        (size_t)(s->n_ablate - i - 1) * sizeof(*s->ablate));
                s->n_ablate--;
            } else {
                s->ablate[i].mode = mode;
            }
            return 0;
        }
    if (mode == HEAD_KEEP)
        return 0;
    struct attn_ablation *grown =
        realloc(s->ablate, (size_t)(s->n_ablate + 1) * sizeof(*s->ablate));
    if (!grown)
        return -1;
    s->ablate = grown;
    s->ablate[s->n_ablate++] = (struct attn_ablation){layer, head, mode};
    return 0;
}

const char *attn_head_mode_name(enum attn_head_mode m)
{
    switch (m) {
    case HEAD_KEEP:
        return "keep";
    case HEAD_ZERO:
        return "zero";
    case HEAD_MEAN:
        return "mean";
    case HEAD_PATCH:
        return "patch";
    }
    return "?";
}

const char *attn_projection_name(enum attn_projection p)
{
    switch (p) {
    case PROJ_DEFAULT:
    case PROJ_LINEAR:
        return "linear";
    case PROJ_NONE:
        return "none";
    case PROJ_RAND:
        return "rand";
    }
    return "?";
}

const char *attn_layout_name(enum attn_head_layout l)
{
    return l == LAYOUT_WRAPPER ? "wrapper" : "split";
}

const char *attn_mask_mode_name(enum attn_mask_mode m)
{
    return m == MASK_AFTER_SOFTMAX ? "after_softmax" : "before_softmax";
}

const char *attn_normalize_name(enum attn_normalize n)
{
    return n == NORM_SUM ? "sum" : "softmax";
}

const char *attn_pos_kind_name(enum attn_pos_kind k)
{
    static const char *const names[] = {"none", "learned", "sinusoidal", "rope"};
    return k >= POS_NONE && k <= POS_ROPE ? names[k] : "?";
}

const char *attn_rope_pairs_name(enum attn_rope_pairs p)
{
    return p == ROPE_HALVES ? "halves" : "adjacent";
}

const char *attn_qkv_mode_name(enum attn_qkv_mode q)
{
    return q == QKV_FUSED ? "fused" : q == QKV_FUSED_HEADS ? "fused_heads" : "separate";
}

const char *attn_block_order_name(enum attn_block_order o)
{
    return o == BLOCK_PRE ? "pre" : "post";
}

const char *attn_norm_kind_name(enum attn_norm_kind n)
{
    return n == NORM_RMS ? "rms" : "layer";
}

const char *attn_activation_name(enum attn_activation a)
{
    return a == ACT_SWIGLU      ? "swiglu"
           : a == ACT_GELU_TANH ? "gelu_tanh"
           : a == ACT_GELU      ? "gelu"
                                : "relu";
}

const char *attn_rope_scaling_name(enum attn_rope_scaling k)
{
    return k == ROPE_SCALING_LINEAR     ? "linear"
           : k == ROPE_SCALING_LLAMA3   ? "llama3"
           : k == ROPE_SCALING_DYNAMIC  ? "dynamic"
           : k == ROPE_SCALING_YARN     ? "yarn"
           : k == ROPE_SCALING_LONGROPE ? "longrope"
                                        : "none";
}

bool attn_rope_scaling_same(const struct attn_scene *a, const struct attn_scene *b)
{
    const struct attn_rope_params *x = &a->pos.scaling, *y = &b->pos.scaling;
    if (x->kind != y->kind || x->factor != y->factor || x->low_freq_factor != y->low_freq_factor ||
        x->high_freq_factor != y->high_freq_factor || x->original_max != y->original_max ||
        x->attention_factor != y->attention_factor || x->beta_fast != y->beta_fast ||
        x->beta_slow != y->beta_slow || x->truncate != y->truncate || x->n_factors != y->n_factors)
        return false;
    size_t size = (size_t)x->n_factors * sizeof(float);
    return (x->short_factor == y->short_factor ||
            (x->short_factor && y->short_factor &&
             memcmp(x->short_factor, y->short_factor, size) == 0)) &&
           (x->long_factor == y->long_factor ||
            (x->long_factor && y->long_factor &&
             memcmp(x->long_factor, y->long_factor, size) == 0));
}

int attn_scene_model_changes(char *out, size_t size, const struct attn_scene *s)
{
    if (size)
        out[0] = '\0';
    if (!s->model.file)
        return 0;
    int n = 0;
    size_t o = 0;
#define SAY(...)                                                                                   \
    do {                                                                                           \
        n++;                                                                                       \
        if (o < size)                                                                              \
            o += (size_t)snprintf(out + o, size - o, "%s", o ? ", " : "");                         \
        if (o < size)                                                                              \
            o += (size_t)snprintf(out + o, size - o, __VA_ARGS__);                                 \
    } while (0)
    const struct attn_config *a = &s->attn;
    if (a->heads != s->model.heads)
        SAY("heads %d \u2192 %d", s->model.heads, a->heads);
    if (s->layers != s->model.layers)
        SAY("layers %d \u2192 %d", s->model.layers, s->layers);
    if (a->causal != s->model.causal)
        SAY("causal %s", a->causal ? "on" : "off");
    if (a->causal && a->mask_mode != MASK_BEFORE_SOFTMAX)
        SAY("mask %s", attn_mask_mode_name(a->mask_mode));
    enum attn_scale_kind sc = attn_scene_eff_scale(s);
    if (sc == SCALE_DIVISOR)
        SAY("scores \u00f7 %g", a->scale_divisor);
    else if (sc != s->model.scale)
        SAY("scaling %s", sc == SCALE_NONE ? "off" : "by \u221ad_k");
    if (a->normalize != NORM_SOFTMAX)
        SAY("normalize %s", attn_normalize_name(a->normalize));
    if (a->dropout > 0) {
        char p[32];
        attn_scene_format_p(p, sizeof(p), a->dropout);
        SAY("dropout %s", p);
    }
#undef SAY
    return n;
}

bool attn_scene_positions_note(char *out, size_t size, const struct attn_scene *s)
{
    int last = s->n_tokens + (s->pos.offset > 0 ? s->pos.offset : 0);
    if (s->pos.kind != POS_ROPE || s->model.positions <= 0 || last <= s->model.positions)
        return false;
    snprintf(out, size,
             "%d tokens%s, past the checkpoint's %d positions (%s): computed as transformers "
             "computes them, on positions the model was not trained on",
             s->n_tokens, s->pos.offset > 0 ? " after the offset" : "", s->model.positions,
             s->model.positions_key ? s->model.positions_key : "max_position_embeddings");
    return true;
}

void attn_scene_format_p(char *out, size_t out_size, double p)
{
    /* "0.0" and "0.5" as the book writes them; more digits only when p needs them. */
    if (fabs(p * 10 - round(p * 10)) < 1e-9)
        attn_cnum_format(out, out_size, "%.1f", p);
    else
        attn_cnum_format(out, out_size, "%g", p);
}

void attn_scene_describe(char *out, size_t out_size, const struct attn_scene *s)
{
    const struct attn_config *a = &s->attn;
    enum attn_projection proj = attn_scene_eff_projection(s);
    /* "self-attention" for one plain head, as the book names it; "attention" otherwise. */
    const char *kind = proj == PROJ_NONE ? "simplified " : "";
    const char *multi = a->heads > 1 ? "multi-head " : "";
    const char *causal = a->causal ? "causal " : "";
    const char *self = a->heads == 1 && !a->causal ? "self-" : "";
    const char *v1 = proj == PROJ_RAND ? " (torch.rand weights)" : "";
    char heads[64];
    if (a->layout == LAYOUT_WRAPPER && a->heads > 1)
        snprintf(heads, sizeof(heads), "wrapper of %d heads \u00d7 d_out %d", a->heads,
                 attn_scene_eff_d_out(s));
    else if (a->heads > 0 && attn_scene_eff_d_out(s) % a->heads != 0)
        snprintf(heads, sizeof(heads), "%d heads \u00d7 head_dim %d/%d?", a->heads,
                 attn_scene_eff_d_out(s), a->heads);
    else
        snprintf(heads, sizeof(heads), "%d head%s \u00d7 head_dim %d", a->heads,
                 a->heads == 1 ? "" : "s", attn_scene_head_dim(s));
    char extra[256] = "";
    if (a->causal && a->mask_mode == MASK_AFTER_SOFTMAX)
        strcat(extra, ", mask after softmax");
    if (a->normalize == NORM_SUM)
        strcat(extra, ", sum-normalised");
    if (s->pos.kind == POS_SINUSOIDAL)
        strcat(extra, ", sinusoidal positions");
    if (s->pos.kind == POS_ROPE)
        strcat(extra, s->pos.pairs == ROPE_HALVES ? ", RoPE (halves)" : ", RoPE");
    if (s->pos.kind == POS_ROPE && s->pos.scaling.kind != ROPE_SCALING_NONE) {
        char sc[64];
        if (s->pos.scaling.kind == ROPE_SCALING_LONGROPE)
            snprintf(sc, sizeof(sc), " scaled longrope");
        else
            snprintf(sc, sizeof(sc), " scaled %s ×%g", attn_rope_scaling_name(s->pos.scaling.kind),
                     s->pos.scaling.factor);
        strcat(extra, sc);
    }
    if (a->qk_norm)
        strcat(extra, ", qk-norm");
    if (a->window > 0) {
        char w[80];
        int off = 0;
        for (int L = 0; L < s->layers && L < SCENE_MAX_LAYERS; L++)
            off += a->window_off[L];
        if (off == 0)
            snprintf(w, sizeof(w), ", sliding window %d", a->window);
        else
            snprintf(w, sizeof(w), ", sliding window %d in %d of %d layers", a->window,
                     s->layers - off, s->layers);
        strcat(extra, w);
    }
    if (a->scale_by_layer)
        strcat(extra, ", scores \u00f7 (layer + 1)");
    if (a->qkv == QKV_FUSED)
        strcat(extra, ", fused qkv");
    if (a->qkv == QKV_FUSED_HEADS)
        strcat(extra, ", fused qkv per head");
    int K = attn_scene_kv_heads(s);
    char part[64];
    if (a->kv_latent > 0) {
        snprintf(part, sizeof(part), ", MLA latent %d", a->kv_latent);
        strcat(extra, part);
    } else if (K == 1 && a->heads > 1) {
        strcat(extra, ", MQA");
    } else if (K < a->heads) {
        snprintf(part, sizeof(part), ", GQA %d KV heads", K);
        strcat(extra, part);
    }
    if (s->block.on) {
        snprintf(part, sizeof(part), ", %s-norm block (%s, %s)",
                 attn_block_order_name(s->block.order),
                 s->block.norm == NORM_RMS ? "RMSNorm" : "LayerNorm",
                 attn_activation_name(s->block.activation));
        strcat(extra, part);
    }
    if (s->layers > 1) {
        snprintf(part, sizeof(part), ", %d layers", s->layers);
        strcat(extra, part);
    }
    char pstr[32];
    attn_scene_format_p(pstr, sizeof(pstr), a->dropout);
    snprintf(out, out_size, "%s%s%s%sattention%s, %s, dropout %s%s", kind, multi, causal, self, v1,
             heads, pstr, extra);
}
