/* scene: a scene's lifecycle: its defaults, the built-in scene, copies and freeing, matrices, the
 * explicit parameters dropped, the backing's widening buffer (see scene.h). The other jobs are
 * files of their own: scene_text (the sentence, seeds, ablations), scene_derived (effective values,
 * sizes, memory, flops), scene_check (the cross-key rules) and scene_describe (names and words). */
#include "engine/scene.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/lesson.h"
#include "engine/scene_fields.h"
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

void attn_book_rows_unref(struct attn_book_rows *b)
{
    if (!b || --b->refs > 0)
        return;
    attn_tokens_free(b->tokens, b->n);
    free(b->rows);
    free(b);
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
    attn_book_rows_unref(s->embed.book);
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

int attn_scene_check_backing(const struct attn_scene *s, struct diag *err)
{
    if (!s->backing || !s->backing->check)
        return 0;
    return s->backing->check(s->backing, err);
}
