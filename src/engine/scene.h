/* scene: what the user asked for, as plain data.
 *
 * A struct scene is what a YAML scene file says (src/scenefile reads and writes it) and what
 * the explorer edits live. Options left out keep an "unset" value and are resolved by the
 * scene_eff_* helpers, so a saved scene says only what the user said. model_resolve() turns a
 * scene into numbers (model.h).
 *
 * Limits (refused before anything is allocated, see scene_check):
 *   tokens <= SCENE_MAX_TOKENS, d_in and d_out <= SCENE_MAX_DIM, heads <= SCENE_MAX_HEADS,
 *   and the memory estimate of all stages <= SCENE_MAX_BYTES.
 */
#ifndef ATTNSCOPE_SCENE_H
#define ATTNSCOPE_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "engine/tokenize.h" /* enum tokenizer, the token limits */

#define SCENE_MAX_DIM         4096
#define SCENE_MAX_HEADS       256
#define SCENE_MAX_BYTES       ((size_t)512 << 20) /* 512 MiB for params and every stage */
#define SCENE_SCHEMA_VERSION  1

enum embed_kind { EMBED_NONE, EMBED_EXPLICIT, EMBED_LEARNED };
enum pos_kind { POS_NONE, POS_LEARNED };
enum projection { PROJ_DEFAULT, PROJ_NONE, PROJ_RAND, PROJ_LINEAR };
enum head_layout { LAYOUT_SPLIT, LAYOUT_WRAPPER };
enum mask_mode { MASK_BEFORE_SOFTMAX, MASK_AFTER_SOFTMAX };
enum normalize { NORM_SOFTMAX, NORM_SUM };
enum scale_kind { SCALE_DEFAULT, SCALE_NONE, SCALE_SQRT_DK, SCALE_DIVISOR };
enum tristate { TRI_DEFAULT = -1, TRI_FALSE = 0, TRI_TRUE = 1 };

struct opt_seed {
    bool set;
    uint64_t value;
};

/* An owned row-major float matrix. data == NULL means "not given". */
struct matrix {
    float *data;
    int rows, cols;
};

struct attn_config {
    enum projection projection; /* PROJ_DEFAULT = linear, or the given weights */
    int d_out;                  /* 0 = d_in */
    int heads;                  /* >= 1 */
    enum head_layout layout;
    bool causal;
    enum mask_mode mask_mode;
    enum normalize normalize;
    enum scale_kind scale;        /* SCALE_DEFAULT: none when projection is none, else sqrt(d_k) */
    double scale_divisor;         /* SCALE_DIVISOR only: scores / divisor */
    double dropout;               /* p in [0, 1]; double, as torch's 1 - p is computed in double */
    struct opt_seed dropout_seed; /* re-seed right before the dropout draws */
    bool qkv_bias;
    enum tristate out_proj; /* default: true when heads > 1 and layout is split */
    bool out_bias;          /* default true */
    struct opt_seed seed;   /* re-seed right before the attention parameters */
};

/* Explicit parameters, all in x @ W orientation. For the wrapper layout each head's matrices
 * sit side by side as column blocks of query/key/value (head h = columns [h*d_out, (h+1)*d_out)),
 * so both layouts share one shape: D = width of the concatenated heads. */
struct scene_weights {
    bool set;
    struct matrix query, key, value;                /* (d_in, D) */
    struct matrix query_bias, key_bias, value_bias; /* (1, D), when qkv_bias */
    struct matrix out;                              /* (D, D), when out_proj */
    struct matrix out_bias;                         /* (1, D), when out_proj and out_bias */
    unsigned char *dropout_mask;                    /* (heads, n, n) 0/1 keep mask, or NULL */
    int dropout_mask_n;                             /* n the mask was given for */
    int dropout_mask_heads;                         /* heads the mask was given for */
};

struct scene {
    char *title; /* NULL: the explorer shows the variant instead */
    char *text;  /* the sentence, or NULL when tokens were given directly */
    enum tokenizer tokenizer;
    char **tokens; /* n_tokens UTF-8 strings (tokenised from text when text set) */
    int n_tokens;
    uint64_t seed; /* torch.manual_seed at the start; default 123 */

    struct {
        enum embed_kind kind;
        struct matrix rows;   /* EXPLICIT: (n_tokens, d_in) */
        int dim;              /* LEARNED: embedding width = d_in */
        struct opt_seed seed; /* LEARNED: re-seed before drawing the table */
    } embed;

    struct {
        enum pos_kind kind;
        int max_len; /* LEARNED: table rows; must be >= n_tokens */
        struct opt_seed seed;
        struct matrix table; /* optional explicit (max_len, d_in); drawn when NULL */
    } pos;

    struct attn_config attn;
    struct scene_weights weights;
};

/* Defaults everywhere; no tokens, no embeddings. */
void scene_init(struct scene *s);
void scene_free(struct scene *s);
/* Deep copy (the explorer keeps one per undo step). Returns 0, or -1 on out-of-memory. */
int scene_copy(struct scene *dst, const struct scene *src);
/* The built-in default: the book's "Your journey starts with one step" through ch. 3's
 * MultiHeadAttention (seed 123, d_out 2, 2 heads, causal). */
void scene_init_default(struct scene *s);

/* Sets text and re-tokenises it with s->tokenizer. Returns 0 or fills err. */
int scene_set_text(struct scene *s, const char *text, struct diag *err);
/* The explorer's sentence edit: sets text, and explicit embedding rows follow their tokens. A
 * token of the old sentence keeps its row; a new one gets scene_token_row's. Saving writes
 * every row out, so this rule decides what an edited scene holds. */
int scene_retext(struct scene *s, const char *text, struct diag *err);
/* The row of a token with none of its own: uniform [0, 1) values, like the book's hand-picked
 * embeddings, from a generator seeded by the token's FNV-1a hash, so the same word always gets
 * the same row, whatever sentence it is in. row: (d) */
void scene_token_row(float *row, const char *token, int d);
/* Replaces the tokens (text becomes NULL). */
int scene_set_tokens(struct scene *s, char *const *tokens, int n, struct diag *err);

/* Effective values, with every default applied. */
int scene_d_in(const struct scene *s);
int scene_eff_d_out(const struct scene *s);
enum projection scene_eff_projection(const struct scene *s);
bool scene_eff_out_proj(const struct scene *s);
enum scale_kind scene_eff_scale(const struct scene *s);
int scene_head_dim(const struct scene *s);   /* split: d_out / heads; wrapper: d_out */
int scene_concat_dim(const struct scene *s); /* D: split: d_out; wrapper: heads * d_out */
/* Bytes model_resolve + attn_forward would allocate (params and every stage). */
size_t scene_mem_estimate(const struct scene *s);

/* Checks every rule that needs more than one key (d_out % heads, sizes of explicit matrices,
 * limits, memory). Appends one diag per problem, with d.path set to the offending key
 * ("attention.d_out", "weights.query", ...) and no location: the YAML loader maps paths to
 * file:line:col. Returns the number of problems found. */
int scene_check(const struct scene *s, struct diag_list *out);

/* Names used by the YAML schema, the writer and the explorer's header. */
const char *tokenizer_name(enum tokenizer t);
const char *projection_name(enum projection p);
const char *layout_name(enum head_layout l);
const char *mask_mode_name(enum mask_mode m);
const char *normalize_name(enum normalize n);
/* A dropout probability as the book writes it: "0.0", "0.5", "0.05". */
void scene_format_p(char *out, size_t out_size, double p);
/* The variant in words, e.g. "multi-head causal attention, 2 heads x head_dim 1, dropout 0.0". */
void scene_describe(char *out, size_t out_size, const struct scene *s);

/* Frees every explicit parameter and the mask; w is left empty (not set). */
void scene_weights_free(struct scene_weights *w);

void matrix_free(struct matrix *m);
/* Allocates rows*cols zeroed floats; returns 0 or -1. */
int matrix_alloc(struct matrix *m, int rows, int cols);
int matrix_copy(struct matrix *dst, const struct matrix *src);

#endif
