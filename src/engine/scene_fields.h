/* scene_fields: every field of struct attn_scene that owns memory or holds a reference, listed
 * once, as llm.c lists its parameter tensors (ptrs[]): attn_scene_copy, attn_scene_free,
 * attn_scene_owned_bytes (the explorer's undo budget) and attn_scene_same_fields (net.c's
 * same_params and same_but_sentence) walk the list, so a field added to the scene is added here, in
 * one row, and everything that copies, frees, counts or compares a scene follows.
 * tests/test_scene.c fails when a field a loader sets owns memory the list does not name.
 *
 * Not installed: the engine's files and the tests read it. It includes no scene.h (scene.c
 * includes it); the rows name the fields of struct attn_scene, whose types scene.c checks against
 * their kinds at compile time.
 */
#ifndef ATTNSCOPE_SCENE_FIELDS_H
#define ATTNSCOPE_SCENE_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

struct attn_scene;
struct attn_book_rows;

/* What copying, freeing, counting and comparing a field means, by its type. */
enum attn_field_kind {
    FIELD_STRING,    /* char *: a copy of its own, or NULL */
    FIELD_STRINGS,   /* char **: count strings of its own (the tokens) */
    FIELD_INTS,      /* int *: count ints of its own, or NULL */
    FIELD_MATRIX,    /* struct attn_matrix: floats of its own, or borrowed from the backing */
    FIELD_ABLATIONS, /* struct attn_ablation *: count of its own */
    FIELD_WEIGHTS,   /* struct attn_scene_weights: a layer's matrices and its dropout mask */
    FIELD_LAYERS,    /* struct attn_scene_weights *: count layers of them, of its own */
    FIELD_BOOK,      /* struct attn_book_rows *: shared by every copy, counted */
    FIELD_LESSON,    /* struct attn_lesson *: shared by every copy, counted (lesson.h) */
    FIELD_BACKING,   /* struct attn_backing *: shared by every copy, counted; released last */
    FIELD_BORROWED,  /* const float *: count floats the backing owns; neither copied nor freed */
    FIELD_SCENE,     /* struct attn_scene *: a scene of its own (an encoder's), deep, or NULL */
};

/* What a field is to the computation. FIELD_PARAM: the parameters, embeddings or positions are
 * resolved from it, so a net keeps its parameters for another scene only while every such
 * field is the same (net.c). FIELD_SENTENCE: the same, but the sentence (the tokens, their ids
 * and types, their rows): a sentence edit changes these alone, and keeps the parameters (net.c's
 * same_but_sentence). FIELD_OTHER: names and paths, the text as typed (its tokens are what
 * counts), the ablations (an option, resolved at every compute), the lesson, the book. */
enum attn_field_use { FIELD_PARAM, FIELD_SENTENCE, FIELD_OTHER };

/* X(kind, field, count, use): the field (a member path of struct attn_scene), its kind, the
 * int that counts its items (ATTN_FIELD_N(n_tokens)) or ATTN_FIELD_NONE, and its use. In the
 * order attn_scene_free releases them: the backing last, since the borrowed matrices and
 * factors above point into it. (model.positions_key points at a string literal: nothing to own
 * or share.) */
#define ATTN_SCENE_FIELDS(X)                                                                       \
    X(FIELD_STRING, title, ATTN_FIELD_NONE, FIELD_OTHER)                                           \
    X(FIELD_STRING, text, ATTN_FIELD_NONE, FIELD_OTHER)                                            \
    X(FIELD_STRING, text_pair, ATTN_FIELD_NONE, FIELD_OTHER)                                       \
    X(FIELD_STRINGS, tokens, ATTN_FIELD_N(n_tokens), FIELD_SENTENCE)                               \
    X(FIELD_INTS, token_ids, ATTN_FIELD_N(n_tokens), FIELD_SENTENCE)                               \
    X(FIELD_INTS, token_types, ATTN_FIELD_N(n_tokens), FIELD_SENTENCE)                             \
    X(FIELD_MATRIX, embed.rows, ATTN_FIELD_NONE, FIELD_SENTENCE)                                   \
    X(FIELD_BOOK, embed.book, ATTN_FIELD_NONE, FIELD_OTHER)                                        \
    X(FIELD_MATRIX, embed.types, ATTN_FIELD_NONE, FIELD_PARAM)                                     \
    X(FIELD_MATRIX, embed.norm_weight, ATTN_FIELD_NONE, FIELD_PARAM)                               \
    X(FIELD_MATRIX, embed.norm_bias, ATTN_FIELD_NONE, FIELD_PARAM)                                 \
    X(FIELD_MATRIX, pos.table, ATTN_FIELD_NONE, FIELD_PARAM)                                       \
    X(FIELD_MATRIX, pos.rel.table, ATTN_FIELD_NONE, FIELD_PARAM)                                   \
    X(FIELD_BORROWED, pos.scaling.short_factor, ATTN_FIELD_N(pos.scaling.n_factors), FIELD_PARAM)  \
    X(FIELD_BORROWED, pos.scaling.long_factor, ATTN_FIELD_N(pos.scaling.n_factors), FIELD_PARAM)   \
    X(FIELD_WEIGHTS, weights, ATTN_FIELD_NONE, FIELD_PARAM)                                        \
    X(FIELD_LAYERS, more_weights, ATTN_FIELD_N(n_more), FIELD_PARAM)                               \
    X(FIELD_STRING, model.file, ATTN_FIELD_NONE, FIELD_OTHER)                                      \
    X(FIELD_STRING, model.arch, ATTN_FIELD_NONE, FIELD_OTHER)                                      \
    X(FIELD_STRING, vocab_path, ATTN_FIELD_NONE, FIELD_OTHER)                                      \
    X(FIELD_STRING, merges_path, ATTN_FIELD_NONE, FIELD_OTHER)                                     \
    X(FIELD_STRING, tokenizer_file, ATTN_FIELD_NONE, FIELD_OTHER)                                  \
    X(FIELD_MATRIX, unembed, ATTN_FIELD_NONE, FIELD_PARAM)                                         \
    X(FIELD_MATRIX, unembed_bias, ATTN_FIELD_NONE, FIELD_PARAM)                                    \
    X(FIELD_MATRIX, head.dense, ATTN_FIELD_NONE, FIELD_PARAM)                                      \
    X(FIELD_MATRIX, head.dense_bias, ATTN_FIELD_NONE, FIELD_PARAM)                                 \
    X(FIELD_MATRIX, head.norm_weight, ATTN_FIELD_NONE, FIELD_PARAM)                                \
    X(FIELD_MATRIX, head.norm_bias, ATTN_FIELD_NONE, FIELD_PARAM)                                  \
    X(FIELD_ABLATIONS, ablate, ATTN_FIELD_N(n_ablate), FIELD_OTHER)                                \
    X(FIELD_LESSON, lesson, ATTN_FIELD_NONE, FIELD_OTHER)                                          \
    X(FIELD_SCENE, encoder, ATTN_FIELD_NONE, FIELD_PARAM)                                          \
    X(FIELD_BACKING, backing, ATTN_FIELD_NONE, FIELD_PARAM)

/* One row of the list, as scene.c expands it. */
struct attn_scene_field {
    const char *name; /* the member path: "embed.types" */
    enum attn_field_kind kind;
    size_t offset;   /* offsetof(struct attn_scene, the field) */
    ptrdiff_t count; /* offsetof the int that counts its items, or -1 */
    enum attn_field_use use;
};
extern const struct attn_scene_field attn_scene_fields[];
extern const int attn_scene_n_fields;

/* How much of two scenes attn_scene_same_fields compares. */
enum attn_fields_compare {
    FIELDS_ALL,    /* every listed field, the dropout masks included */
    FIELDS_PARAMS, /* the FIELD_PARAM and FIELD_SENTENCE ones, the dropout masks aside (they are
                      drawn again) */
    FIELDS_PARAMS_BUT_SENTENCE, /* the FIELD_PARAM ones, the dropout masks aside */
};
/* True when a's and b's listed fields are alike: what the scene owns by value (strings, tokens,
 * ints, the matrices' floats, the ablations, each layer's parameters), what it shares by
 * identity (the book, the lesson, the backing; a borrowed matrix or factor is alike when it is
 * the same or holds the same numbers). The fields no row lists (the options, the sizes) are the
 * caller's to compare. */
bool attn_scene_same_fields(const struct attn_scene *a, const struct attn_scene *b,
                            enum attn_fields_compare which);

/* One sharer fewer of a book of rows (embed.book); the last frees it. Takes NULL. */
void attn_book_rows_unref(struct attn_book_rows *b);

#endif
