/* scene_text: the sentence of a scene and what an edit sets through the scene: its text, tokens
 * and their explicit rows (the book's, or a made-up row for a new word), the seeds, the ablations,
 * and the vocabulary's labels and single tokens (see scene.h). */
#include "engine/scene.h"

#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "engine/scene_fields.h"
#include "engine/tokenize.h"

/* 64-bit FNV-1a, the hash a new word's row is seeded by (attn_scene_token_row). */
#define FNV_OFFSET_BASIS 14695981039346656037ull
#define FNV_PRIME        1099511628211ull
/* The parts seed_parts lists: embeddings, positions, attention, FFN, the later layers, dropout. */
#define SEED_PARTS 6

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
        attn_book_rows_unref(b);
        return NULL;
    }
    for (int i = 0; i < s->n_tokens && i < s->embed.rows.rows; i++) {
        bool seen = false;
        for (int k = 0; k < b->n && !seen; k++)
            seen = strcmp(b->tokens[k], s->tokens[i]) == 0;
        if (seen)
            continue;
        if (!(b->tokens[b->n] = strdup(s->tokens[i]))) {
            attn_book_rows_unref(b);
            return NULL;
        }
        memcpy(b->rows + (size_t)b->n * d, s->embed.rows.data + (size_t)i * d,
               (size_t)d * sizeof(float));
        b->n++;
    }
    return b;
}

/* The decoder's start token put first in a target's tokens, ids and types (grown by one). */
static int prepend_start(struct attn_scene *s, char ***tokens, int **ids, int **types, int *n,
                         struct diag *err)
{
    char label[256];
    s->backing->label(s->backing, s->decoder_start, label, sizeof(label));
    char **t = realloc(*tokens, (size_t)(*n + 1) * sizeof(char *));
    if (t)
        *tokens = t;
    int *i = t ? realloc(*ids, (size_t)(*n + 1) * sizeof(int)) : NULL;
    if (i)
        *ids = i;
    char *first = i ? strdup(label) : NULL;
    if (!first || (*types && !(*types = realloc(*types, (size_t)(*n + 1) * sizeof(int))))) {
        free(first);
        attn_tokens_free(*tokens, *n);
        free(*ids);
        free(*types);
        return attn_diag_set(err, "text", "out of memory");
    }
    memmove(*tokens + 1, *tokens, (size_t)*n * sizeof(char *));
    memmove(*ids + 1, *ids, (size_t)*n * sizeof(int));
    if (*types)
        memmove(*types + 1, *types, (size_t)*n * sizeof(int));
    (*tokens)[0] = first;
    (*ids)[0] = s->decoder_start;
    if (*types)
        (*types)[0] = 0;
    (*n)++;
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
        /* an encoder-decoder's target: no template, the decoder's start token first */
        if (s->backing->tokenize(s->backing, text, s->text_pair, !s->encoder, &tokens, &ids, &types,
                                 &n, err) ||
            (s->encoder && s->decoder_start >= 0 &&
             prepend_start(s, &tokens, &ids, &types, &n, err)))
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
    uint64_t h = FNV_OFFSET_BASIS;
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        h = (h ^ *p) * FNV_PRIME;
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

static int seed_parts(struct attn_scene *s, struct seed_part out[SEED_PARTS])
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
    return SEED_PARTS;
}

unsigned attn_scene_set_seed(struct attn_scene *s, uint64_t seed, unsigned *kept)
{
    struct seed_part parts[SEED_PARTS];
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
    struct seed_part parts[SEED_PARTS];
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

int attn_scene_append_id(struct attn_scene *s, int id, struct diag *err)
{
    if (!s->token_ids || !s->backing || !s->backing->label)
        return attn_diag_set(err, "tokens", "the scene has no vocabulary tokenizer");
    int n = s->n_tokens;
    if (n + 1 > SCENE_MAX_TOKENS)
        return attn_diag_set(err, "tokens", "more than %d tokens", SCENE_MAX_TOKENS);
    char label[4 * SCENE_MAX_TOKEN_BYTES], bytes[4 * SCENE_MAX_TOKEN_BYTES];
    s->backing->label(s->backing, id, label, sizeof(label));
    size_t old = s->text ? strlen(s->text) : 0;
    size_t nb = s->backing->token_bytes
                    ? s->backing->token_bytes(s->backing, id, old == 0, bytes, sizeof(bytes))
                    : 0;
    char **tokens = realloc(s->tokens, (size_t)(n + 1) * sizeof(*tokens));
    if (tokens)
        s->tokens = tokens;
    int *ids = tokens ? realloc(s->token_ids, (size_t)(n + 1) * sizeof(*ids)) : NULL;
    if (ids)
        s->token_ids = ids;
    int *types =
        ids && s->token_types ? realloc(s->token_types, (size_t)(n + 1) * sizeof(*types)) : NULL;
    if (types)
        s->token_types = types;
    char *text = ids && s->text && nb > 0 ? malloc(old + nb + 1) : NULL;
    char *tok = ids ? strdup(label) : NULL;
    if (!tok || (s->token_types && !types) || (s->text && nb > 0 && !text)) {
        free(tok);
        free(text);
        return attn_diag_set(err, "tokens", "out of memory");
    }
    if (text) {
        memcpy(text, s->text, old);
        memcpy(text + old, bytes, nb);
        text[old + nb] = '\0';
    }
    free(s->text);
    s->text = text; /* NULL when the token's bytes are not known */
    s->tokens[n] = tok;
    s->token_ids[n] = id;
    if (s->token_types)
        s->token_types[n] = n > 0 ? s->token_types[n - 1] : 0;
    s->n_tokens = n + 1;
    return 0;
}

bool attn_scene_why_no_next(char *out, size_t size, const struct attn_scene *s)
{
    if (!attn_scene_has_vocab(s))
        snprintf(out, size, "no next token to write: %s", attn_scene_why_no_vocab(s));
    else if (s->masked_lm)
        snprintf(out, size,
                 "a BERT model fills in its [MASK] tokens and has no next token to "
                 "write (predict shows what it puts at each [MASK])");
    else if (!s->attn.causal)
        snprintf(out, size,
                 "the scene is not causal: each token sees the ones after it, so "
                 "there is no next token to write");
    else
        return false;
    return true;
}

int attn_scene_context(const struct attn_scene *s, const char **what)
{
    int ctx = SCENE_MAX_TOKENS;
    *what = "the most tokens attnscope computes";
    if (s->model.positions > 0 && s->model.positions - s->pos.offset < ctx) {
        ctx = s->model.positions - s->pos.offset;
        *what = s->model.positions_key;
    }
    return ctx;
}

void attn_scene_ban_tokens(const struct attn_scene *s, float *logits, int vocab)
{
    for (int i = 0; i < s->model.n_banned; i++)
        if (s->model.banned[i] < vocab)
            logits[s->model.banned[i]] = -INFINITY;
}

bool attn_scene_is_eos(const struct attn_scene *s, int id)
{
    for (int i = 0; i < s->model.n_eos; i++)
        if (s->model.eos[i] == id)
            return true;
    return false;
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
