/* scene: what the user asked for, as plain data.
 *
 * A struct attn_scene is what a YAML scene file says (src/scenefile reads and writes it) and what
 * the explorer edits live. Options left out keep an "unset" value and are resolved by the
 * scene_eff_* helpers, so a saved scene says only what the user said. attn_model_resolve() turns a
 * scene into numbers (model.h).
 *
 * Limits (refused before anything is allocated, see attn_scene_check):
 *   tokens <= SCENE_MAX_TOKENS, d_in and d_out <= SCENE_MAX_DIM, heads <= SCENE_MAX_HEADS,
 *   and the memory estimate of all stages <= SCENE_MAX_BYTES.
 */
#ifndef ATTNSCOPE_SCENE_H
#define ATTNSCOPE_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "engine/tokenize.h" /* enum attn_tokenizer, the token limits */

#define SCENE_MAX_DIM        4096
#define SCENE_MAX_HEADS      256
#define SCENE_MAX_BYTES      ((size_t)512 << 20) /* 512 MiB for params and every stage */
#define SCENE_SCHEMA_VERSION 1

enum attn_embed_kind { EMBED_NONE, EMBED_EXPLICIT, EMBED_LEARNED };
enum attn_pos_kind { POS_NONE, POS_LEARNED };
enum attn_projection { PROJ_DEFAULT, PROJ_NONE, PROJ_RAND, PROJ_LINEAR };
enum attn_head_layout { LAYOUT_SPLIT, LAYOUT_WRAPPER };
enum attn_mask_mode { MASK_BEFORE_SOFTMAX, MASK_AFTER_SOFTMAX };
enum attn_normalize { NORM_SOFTMAX, NORM_SUM };
enum attn_scale_kind { SCALE_DEFAULT, SCALE_NONE, SCALE_SQRT_DK, SCALE_DIVISOR };
enum attn_tristate { TRI_DEFAULT = -1, TRI_FALSE = 0, TRI_TRUE = 1 };

struct attn_opt_seed {
    bool set;
    uint64_t value;
};

/* An owned row-major float matrix. data == NULL means "not given". */
struct attn_matrix {
    float *data;
    int rows, cols;
};

struct attn_config {
    enum attn_projection projection; /* PROJ_DEFAULT = linear, or the given weights */
    int d_out;                       /* 0 = d_in */
    int heads;                       /* >= 1 */
    enum attn_head_layout layout;
    bool causal;
    enum attn_mask_mode mask_mode;
    enum attn_normalize normalize;
    enum attn_scale_kind scale; /* SCALE_DEFAULT: none when projection is none, else sqrt(d_k) */
    double scale_divisor;       /* SCALE_DIVISOR only: scores / divisor */
    double dropout;             /* p in [0, 1]; double, as torch's 1 - p is computed in double */
    struct attn_opt_seed dropout_seed; /* re-seed right before the dropout draws */
    bool qkv_bias;
    enum attn_tristate out_proj; /* default: true when heads > 1 and layout is split */
    bool out_bias;               /* default true */
    struct attn_opt_seed seed;   /* re-seed right before the attention parameters */
};

/* Explicit parameters, all in x @ W orientation. For the wrapper layout each head's matrices
 * sit side by side as column blocks of query/key/value (head h = columns [h*d_out, (h+1)*d_out)),
 * so both layouts share one shape: D = width of the concatenated heads. */
struct attn_scene_weights {
    bool set;
    struct attn_matrix query, key, value;                /* (d_in, D) */
    struct attn_matrix query_bias, key_bias, value_bias; /* (1, D), when qkv_bias */
    struct attn_matrix out;                              /* (D, D), when out_proj */
    struct attn_matrix out_bias;                         /* (1, D), when out_proj and out_bias */
    unsigned char *dropout_mask;                         /* (heads, n, n) 0/1 keep mask, or NULL */
    int dropout_mask_n;                                  /* n the mask was given for */
    int dropout_mask_heads;                              /* heads the mask was given for */
};

struct attn_scene {
    char *title; /* NULL: the explorer shows the variant instead */
    char *text;  /* the sentence, or NULL when tokens were given directly */
    enum attn_tokenizer tokenizer;
    char **tokens; /* n_tokens UTF-8 strings (tokenised from text when text set) */
    int n_tokens;
    uint64_t seed; /* torch.manual_seed at the start; default 123 */

    struct {
        enum attn_embed_kind kind;
        struct attn_matrix rows;   /* EXPLICIT: (n_tokens, d_in) */
        int dim;                   /* LEARNED: embedding width = d_in */
        struct attn_opt_seed seed; /* LEARNED: re-seed before drawing the table */
    } embed;

    struct {
        enum attn_pos_kind kind;
        int max_len; /* LEARNED: table rows; must be >= n_tokens */
        struct attn_opt_seed seed;
        struct attn_matrix table; /* optional explicit (max_len, d_in); drawn when NULL */
    } pos;

    struct attn_config attn;
    struct attn_scene_weights weights;
};

/* Defaults everywhere; no tokens, no embeddings. */
void attn_scene_init(struct attn_scene *s);
void attn_scene_free(struct attn_scene *s);
/* Deep copy (the explorer keeps one per undo step). Returns 0, or -1 on out-of-memory. */
int attn_scene_copy(struct attn_scene *dst, const struct attn_scene *src);
/* The built-in default: the book's "Your journey starts with one step" through ch. 3's
 * MultiHeadAttention (seed 123, d_out 2, 2 heads, causal). */
void attn_scene_init_default(struct attn_scene *s);

/* Sets text and re-tokenises it with s->tokenizer. Returns 0 or fills err. */
int attn_scene_set_text(struct attn_scene *s, const char *text, struct diag *err);
/* The explorer's sentence edit: sets text, and explicit embedding rows follow their tokens. A
 * token of the old sentence keeps its row; a new one gets attn_scene_token_row's. Saving writes
 * every row out, so this rule decides what an edited scene holds. */
int attn_scene_retext(struct attn_scene *s, const char *text, struct diag *err);
/* The row of a token with none of its own: uniform [0, 1) values, like the book's hand-picked
 * embeddings, from a generator seeded by the token's FNV-1a hash, so the same word always gets
 * the same row, whatever sentence it is in. row: (d) */
void attn_scene_token_row(float *row, const char *token, int d);
/* Replaces the tokens (text becomes NULL). */
int attn_scene_set_tokens(struct attn_scene *s, char *const *tokens, int n, struct diag *err);

/* Effective values, with every default applied. */
int attn_scene_d_in(const struct attn_scene *s);
int attn_scene_eff_d_out(const struct attn_scene *s);
enum attn_projection attn_scene_eff_projection(const struct attn_scene *s);
bool attn_scene_eff_out_proj(const struct attn_scene *s);
enum attn_scale_kind attn_scene_eff_scale(const struct attn_scene *s);
int attn_scene_head_dim(const struct attn_scene *s);   /* split: d_out / heads; wrapper: d_out */
int attn_scene_concat_dim(const struct attn_scene *s); /* D: split: d_out; wrapper: heads * d_out */
/* Bytes attn_model_resolve + attn_forward would allocate (params and every stage). */
size_t attn_scene_mem_estimate(const struct attn_scene *s);

/* Checks every rule that needs more than one key (d_out % heads, sizes of explicit matrices,
 * limits, memory). Appends one diag per problem, with d.path set to the offending key
 * ("attention.d_out", "weights.query", ...) and no location: the YAML loader maps paths to
 * file:line:col. Returns the number of problems found. */
int attn_scene_check(const struct attn_scene *s, struct diag_list *out);

/* Names used by the YAML schema, the writer and the explorer's header. */
const char *attn_tokenizer_name(enum attn_tokenizer t);
const char *attn_projection_name(enum attn_projection p);
const char *attn_layout_name(enum attn_head_layout l);
const char *attn_mask_mode_name(enum attn_mask_mode m);
const char *attn_normalize_name(enum attn_normalize n);
/* A dropout probability as the book writes it: "0.0", "0.5", "0.05". */
void attn_scene_format_p(char *out, size_t out_size, double p);
/* The variant in words, e.g. "multi-head causal attention, 2 heads x head_dim 1, dropout 0.0". */
void attn_scene_describe(char *out, size_t out_size, const struct attn_scene *s);

/* Frees every explicit parameter and the mask; w is left empty (not set). */
void attn_scene_weights_free(struct attn_scene_weights *w);

void attn_matrix_free(struct attn_matrix *m);
/* Allocates rows*cols zeroed floats; returns 0 or -1. */
int attn_matrix_alloc(struct attn_matrix *m, int rows, int cols);
int attn_matrix_copy(struct attn_matrix *dst, const struct attn_matrix *src);

#endif
