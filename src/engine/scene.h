/* scene: what the user asked for, as plain data.
 *
 * A struct attn_scene is what a YAML scene file says (src/scenefile reads and writes it) and what
 * the explorer edits live. Options left out keep an "unset" value and are resolved by the
 * scene_eff_* helpers, so a saved scene says only what the user said. attn_model_resolve() turns a
 * scene into numbers (model.h).
 *
 * Limits (refused before anything is allocated, see attn_scene_check):
 *   tokens <= SCENE_MAX_TOKENS, d_in and d_out <= SCENE_MAX_DIM, heads <= SCENE_MAX_HEADS,
 *   and the memory estimate of all stages <= attn_scene_memory_limit().
 */
#ifndef ATTNSCOPE_SCENE_H
#define ATTNSCOPE_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "engine/tokenize.h" /* enum attn_tokenizer, the token limits */

struct attn_lesson;
struct attn_edit; /* engine/edit.h */
struct attn_edit_effects;

/* The explicit embedding rows a scene was given, by token: what a sentence edit takes a known
 * word's row from, however many edits came between ("Your" keeps the book's row after "The cat
 * sat on the mat" and then "Your cat"). Read-only once made; every copy of the scene shares it. */
struct attn_book_rows {
    int refs;
    int n, d;      /* tokens, and the width of each row */
    char **tokens; /* (n), first occurrences only */
    float *rows;   /* (n, d) */
};

#define SCENE_MAX_DIM          4096
#define SCENE_MAX_HEADS        256
#define SCENE_MAX_EXPERTS      512 /* a mixture's experts (Qwen3-MoE has 128, DeepSeek 256) */
#define SCENE_MAX_LAYERS       128
#define SCENE_MAX_BYTES        ((size_t)8 << 30)   /* the most any scene may use: 8 GiB */
#define SCENE_MAX_MATRIX_BYTES ((size_t)512 << 20) /* one matrix read from a scene or file */
#define SCENE_SCHEMA_VERSION   1

/* The most positions a scene may name (positional.offset, max_len): 8 x the most tokens. */
#define SCENE_MAX_POSITION (8 * SCENE_MAX_TOKENS)
#define SCENE_MAX_EOS      8  /* end-of-text ids a checkpoint may name */
#define SCENE_MAX_BANNED   64 /* single tokens a checkpoint's bad_words_ids may ban */
/* The widest feed-forward (block.ffn_hidden): 4 x the widest d_in, as GPT's is 4 x its d_in. */
#define SCENE_MAX_FFN_HIDDEN (4 * SCENE_MAX_DIM)

enum attn_embed_kind { EMBED_NONE, EMBED_EXPLICIT, EMBED_LEARNED, EMBED_TABLE };
enum attn_pos_kind { POS_NONE, POS_LEARNED, POS_SINUSOIDAL, POS_ROPE };
enum attn_rope_pairs { ROPE_ADJACENT, ROPE_HALVES };
enum attn_qkv_mode { QKV_SEPARATE, QKV_FUSED, QKV_FUSED_HEADS };
/* Where a block's norms sit: after each residual add (post, 002's Add & Norm), in front of
 * attention and the FFN (pre), in front of both side by side, each reading the block's input,
 * their outputs added to it at once (parallel: GPT-NeoX's use_parallel_residual), or on each
 * branch's output before it is added (post_branch: OLMo 2's x + norm(attn(x))). */
enum attn_block_order { BLOCK_POST, BLOCK_PRE, BLOCK_PARALLEL, BLOCK_POST_BRANCH, BLOCK_SANDWICH };
/* sandwich (Gemma 2 and 3's): pre-norm as pre, and each branch's output normalised again before
 * it is added (post_norm1, post_norm2): r = x + pn1(attn(norm1(x))), then r + pn2(ffn(norm2(r))).
 */

/* Whether attention reads norm1 of the block's input (pre, parallel and sandwich) rather than the
 * input. */
static inline bool attn_block_norms_input(enum attn_block_order o)
{
    return o == BLOCK_PRE || o == BLOCK_PARALLEL || o == BLOCK_SANDWICH;
}
enum attn_norm_kind { NORM_LAYER, NORM_RMS };
/* A layer of the engine as an encoder-decoder's decoder has them (scene.sublayer). */
enum attn_sublayer {
    SUB_FULL,  /* attention and the FFN, as every other scene's layer */
    SUB_SELF,  /* the decoder's causal self-attention and its residual; no FFN */
    SUB_CROSS, /* cross-attention (queries here, keys and values from the encoder) and the FFN */
};
/* ACT_SWIGLU: the gated FFN of the Llama family, W2 (silu(x W_gate) * (x W1)), no biases. */
/* ACT_GEGLU_TANH: the same gated FFN with GELU's tanh form for silu (Gemma's, gelu_pytorch_tanh).
 */
/* ACT_SILU: x * sigmoid(x), ungated (Marian's "swish"). */
enum attn_activation { ACT_RELU, ACT_GELU, ACT_GELU_TANH, ACT_SWIGLU, ACT_GEGLU_TANH, ACT_SILU };

/* Whether the FFN is gated: act(x W_gate) * (x W1), the stages ffn_gate and ffn_up. */
static inline bool attn_activation_gated(enum attn_activation a)
{
    return a == ACT_SWIGLU || a == ACT_GEGLU_TANH;
}
/* How RoPE's frequencies are stretched for long contexts (Hugging Face's rope_type). */
enum attn_rope_scaling {
    ROPE_SCALING_NONE,
    ROPE_SCALING_LINEAR,
    ROPE_SCALING_LLAMA3,
    ROPE_SCALING_DYNAMIC,  /* NTK-aware: a larger base once the positions pass original_max */
    ROPE_SCALING_YARN,     /* NTK-by-parts: interpolated and extrapolated frequencies ramped */
    ROPE_SCALING_LONGROPE, /* Phi-3's: each frequency divided by its short or long factor */
};
enum attn_projection { PROJ_DEFAULT, PROJ_NONE, PROJ_RAND, PROJ_LINEAR };
enum attn_head_layout { LAYOUT_SPLIT, LAYOUT_WRAPPER };
enum attn_mask_mode { MASK_BEFORE_SOFTMAX, MASK_AFTER_SOFTMAX };
enum attn_normalize { NORMALIZE_SOFTMAX, NORMALIZE_SUM };
enum attn_scale_kind { SCALE_DEFAULT, SCALE_NONE, SCALE_SQRT_DK, SCALE_DIVISOR };
enum attn_tristate { TRI_DEFAULT = -1, TRI_FALSE = 0, TRI_TRUE = 1 };
/* What a head hands to the output projection: its own context, or (ablation, patching) a
 * replacement. A scene's ablate: key holds HEAD_ZERO and HEAD_MEAN; HEAD_PATCH is set on a
 * computed net only (net.h, attn_net_set_head). */
enum attn_head_mode {
    HEAD_KEEP,  /* the head's context */
    HEAD_ZERO,  /* zeros (zero ablation) */
    HEAD_MEAN,  /* every row the context's mean over the positions (mean ablation) */
    HEAD_PATCH, /* another run's context of this head (activation patching) */
};

/* Rows of logits computed at once (logits.h): a block is at most this many floats, whatever
 * the vocabulary (GPT-2's 50257: 83 rows, 16 MiB), so n x vocab never exists. */
#define SCENE_LOGITS_BLOCK_FLOATS ((size_t)1 << 22)

struct attn_opt_seed {
    bool set;
    uint64_t value;
};

/* A row-major float matrix. data == NULL means "not given". Owned, unless borrowed: then it
 * lives in a checkpoint's mapping (the scene's backing) and is shared, never freed or copied.
 * A lazy matrix is a checkpoint's tensor the engine reads only when it needs it (data NULL,
 * borrowed): one in F16 or BF16, or one stored transposed, (cols, rows), as torch's Linear keeps
 * its weight. Its backing's read_rows widens rows of the tensor; the engine holds at most one
 * such matrix widened at a time (model.h, attn_model_param). */
struct attn_matrix {
    float *data;
    int rows, cols;
    bool borrowed;
    const void *lazy; /* the backing's handle of the tensor, or NULL */
    bool lazy_t;      /* lazy: the tensor is stored (cols, rows), the transpose of this matrix */
};

/* True when m holds numbers: in memory, or lazily in a checkpoint. */
static inline bool attn_matrix_given(const struct attn_matrix *m)
{
    return m->data || m->lazy;
}

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
    /* A checkpoint's attention logit soft-capping (Gemma 2's attn_logit_softcapping): the scaled
     * scores become cap * tanh(scaled / cap) (the stage capped) before the mask. 0: none. */
    double softcap;
    double dropout; /* p in [0, 1]; double, as torch's 1 - p is computed in double */
    struct attn_opt_seed dropout_seed; /* re-seed right before the dropout draws */
    bool qkv_bias;
    enum attn_tristate out_proj; /* default: true when heads > 1 and layout is split */
    bool out_bias;               /* default true */
    struct attn_opt_seed seed;   /* re-seed right before the attention parameters */
    enum attn_qkv_mode qkv;      /* one fused projection (004) or three */
    int kv_heads;                /* 0 = heads; fewer: GQA, 1: MQA */
    int kv_latent;               /* r > 0: multi-head latent attention; 0: none */
    /* A checkpoint's sliding window (Mistral's sliding_window, Qwen2's use_sliding_window): query
     * i sees key j only when i - j < window (masked: -inf); 0: no window. window_off[L]: layer L
     * attends to every earlier key all the same (Qwen2's max_window_layers, layer_types). */
    int window;
    bool window_off[SCENE_MAX_LAYERS];
    /* A checkpoint's (GPT-2's scale_attn_by_inverse_layer_idx): layer L's scores are divided by
     * L + 1 besides the scale. */
    bool scale_by_layer;
    /* A checkpoint's (Qwen3's q_norm, k_norm): every head's q and k RMS-normalised over its
     * head_dim, with weights q_norm_weight and k_norm_weight, before RoPE. qk_norm_whole (OLMo
     * 2's): over the whole projection instead, D of q and Dkv of k, weights as wide. */
    bool qk_norm, qk_norm_whole;
};

/* The rest of a transformer block after attention (002's Add & Norm and feed-forward). */
struct attn_block {
    bool on;
    enum attn_block_order order;
    enum attn_norm_kind norm;
    double norm_eps; /* default 1e-5 */
    int ffn_hidden;  /* 0 = 4 * d_in */
    /* A checkpoint's mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE) in place of the FFN:
     * n_experts SwiGLU experts of expert_hidden (ffn_hidden is then theirs), a router (d_in,
     * n_experts) whose softmax's top_k choose each token's experts (norm_topk: their weights
     * renormalised to sum to 1), and Qwen2-MoE's shared expert of shared_hidden, gated by
     * sigmoid(x . shared_gate). 0 experts: the FFN. */
    int n_experts, top_k, shared_hidden;
    bool norm_topk;
    enum attn_activation activation;
    struct attn_opt_seed ffn_seed; /* re-seed right before the FFN's parameters */
    int ffn_skip;                  /* uniform draws skipped before them */
    bool final_norm;               /* a last norm after the last layer (GPT-2's ln_f) */
};

/* Every explicit parameter matrix, by the name scene files and export give it. */
#define ATTN_WEIGHT_MATRICES(X)                                                                    \
    X(query)                                                                                       \
    X(key)                                                                                         \
    X(value)                                                                                       \
    X(query_bias)                                                                                  \
    X(key_bias)                                                                                    \
    X(value_bias)                                                                                  \
    X(out)                                                                                         \
    X(out_bias)                                                                                    \
    X(qkv)                                                                                         \
    X(qkv_bias)                                                                                    \
    X(down)                                                                                        \
    X(key_up)                                                                                      \
    X(value_up)                                                                                    \
    X(ffn_W1)                                                                                      \
    X(ffn_b1)                                                                                      \
    X(ffn_W2)                                                                                      \
    X(ffn_b2)                                                                                      \
    X(ffn_Wgate)                                                                                   \
    X(ffn_bgate)                                                                                   \
    X(q_norm_weight)                                                                               \
    X(k_norm_weight)                                                                               \
    X(norm1_weight)                                                                                \
    X(norm1_bias)                                                                                  \
    X(norm2_weight)                                                                                \
    X(norm2_bias)                                                                                  \
    X(post_norm1_weight)                                                                           \
    X(router)                                                                                      \
    X(shared_Wgate)                                                                                \
    X(shared_W1)                                                                                   \
    X(shared_W2)                                                                                   \
    X(shared_gate)                                                                                 \
    X(post_norm2_weight)                                                                           \
    X(final_norm_weight)                                                                           \
    X(final_norm_bias)

/* Explicit parameters, all in x @ W orientation. For the wrapper layout each head's matrices
 * sit side by side as column blocks of query/key/value (head h = columns [h*d_out, (h+1)*d_out)),
 * so both layouts share one shape: D = width of the concatenated heads. `set` means the
 * attention's parameters are given (query/key/value, or qkv, or query/down/key_up/value_up); the
 * FFN's are given when ffn_W1 is; norm weights each on their own. */
struct attn_scene_weights {
    bool set;
    struct attn_matrix query, key, value;                /* (d_in, Dq), (d_in, Dkv), (d_in, Dkv) */
    struct attn_matrix query_bias, key_bias, value_bias; /* (1, ...), when qkv_bias */
    struct attn_matrix out;                              /* (D, D), when out_proj */
    struct attn_matrix out_bias;                         /* (1, D), when out_proj and out_bias */
    struct attn_matrix qkv, qkv_bias;                    /* fused: (d_in, Dq + 2 Dkv), (1, ...) */
    struct attn_matrix down, key_up, value_up;           /* MLA: (d_in, r), (r, D), (r, D) */
    struct attn_matrix ffn_W1, ffn_b1, ffn_W2, ffn_b2; /* (d_in, h), (1, h), (h, d_in), (1, d_in) */
    struct attn_matrix ffn_Wgate;                      /* swiglu: (d_in, h); W1 is then "up" */
    struct attn_matrix ffn_bgate; /* swiglu with biases (Llama's mlp_bias): (1, h), with b1, b2 */
    struct attn_matrix q_norm_weight, k_norm_weight; /* qk_norm: (1, head_dim) each */
    struct attn_matrix norm1_weight, norm1_bias;     /* (1, d_in) each */
    struct attn_matrix norm2_weight, norm2_bias;
    struct attn_matrix post_norm1_weight, post_norm2_weight; /* sandwich: (1, d_in) each */
    /* a mixture of experts: the router (d_in, n_experts); each expert's gate, up and down,
     * (n_experts * 3) matrices a checkpoint's backing owns (NULL: no mixture); the shared
     * expert's three and its gate (d_in, 1) */
    struct attn_matrix router;
    const struct attn_matrix *experts;
    struct attn_matrix shared_Wgate, shared_W1, shared_W2, shared_gate;
    struct attn_matrix final_norm_weight, final_norm_bias; /* the last layer's only */
    unsigned char *dropout_mask; /* (heads, n, n) 0/1 keep mask, or NULL */
    int dropout_mask_n;          /* n the mask was given for */
    int dropout_mask_heads;      /* heads the mask was given for */
};

/* What a scene borrows from outside: a checkpoint's mapping and its tokenizer (src/pretrained
 * makes one). Shared by every copy of the scene (the explorer keeps one per undo step) and
 * released with the last. */
struct attn_backing {
    int refs;
    void (*release)(struct attn_backing *b);
    /* The checkpoint's tokenizer: tokens (display labels) and their ids for text. */
    /* pair: a second sentence (NULL for none), which the tokenizer's template joins to the first
     * (BERT's [CLS] A [SEP] B [SEP]); *types gets each token's sentence, 0 or 1 (the
     * token_type_ids), or NULL when the tokenizer has no template of sentences. special: with
     * the special tokens the template adds ([CLS], [SEP]), as a scene's text is read; false for
     * a word named on its own (attn_scene_single_token). */
    int (*tokenize)(struct attn_backing *b, const char *text, const char *pair, bool special,
                    char ***tokens, int **ids, int **types, int *n, struct diag *err);
    /* 0 while the files the borrowed matrices live in are still the ones loaded; -1 with err
     * when one changed on disk (a checkpoint rewritten or truncated under the explorer). May be
     * NULL. */
    int (*check)(struct attn_backing *b, struct diag *err);
    /* The display label of vocabulary id (" Mary", "<0A>"), NUL-terminated in out (size > 0). */
    void (*label)(struct attn_backing *b, int id, char *out, size_t size);
    /* The bytes vocabulary id stands for in the text (" Mary", "\n"; a partial UTF-8 sequence
     * when the token is part of a character), at most size into out; how many (0: none). first:
     * the token starts the text (a translation's first word: SentencePiece's "▁Die" is "Die"
     * there, as the tokenizer's decoder makes it). May be NULL. */
    size_t (*token_bytes)(struct attn_backing *b, int id, bool first, char *out, size_t size);
    /* Rows r0 .. r0 + rows - 1 of a lazy matrix's tensor (attn_matrix.lazy) as it is stored,
     * widened to float32 into out (rows, its stored columns). NULL when nothing is lazy. */
    void (*read_rows)(struct attn_backing *b, const void *tensor, float *out, size_t r0,
                      size_t rows);
    /* The most floats any one lazy matrix takes: the size of the engine's widening buffer. */
    size_t lazy_floats;
    /* The engine's widening buffers (model.c), made on first use and freed with the backing:
     * [0] every thread's, [1] a thread that called attn_param_cache_worker (a compute running
     * beside a thread that reads parameters: the explorer's worker). */
    struct attn_param_cache *cache[2];
    /* What the loader read past without refusing, each at its file:line:col: config.json's
     * unknown keys (src/pretrained). Commands print them, the explorer shows them. */
    struct diag_list warnings;
};

/* Stored rows of a transposed lazy matrix read at once, as floats: the turning buffer's size. */
#define ATTN_TURN_BLOCK_FLOATS ((size_t)1 << 18)

/* The engine's widening buffer of a backing's lazy matrices (model.c fills it). */
struct attn_param_cache {
    float *buf;         /* (floats) the lazy matrix last asked for */
    size_t floats;      /* backing->lazy_floats when it was made */
    const void *tensor; /* which one it holds, or NULL */
    float *turn;        /* (TURN_BLOCK_FLOATS of model.c) stored rows of a transposed one */
};
/* Frees b's widening buffers (the scene's last reference to the backing is going). */
void attn_param_cache_free(struct attn_backing *b);
/* The calling thread widens b's lazy matrices into b's second buffer from now on, made here: it
 * computes while another thread reads parameters through the first (attn_model_param hands out
 * the buffer itself, which a widening of another matrix overwrites). Returns 0, or -1 when out
 * of memory (the thread then uses the first). */
int attn_param_cache_worker(struct attn_backing *b);
/* Gives the pages of b's widening buffer back to the system, keeping the buffer (models point
 * at it): the next lazy matrix asked for is widened again. After a forward pass, so that the
 * largest matrix (TinyLlama's FFN: 44 MiB) is not held while the predictions are computed. */
void attn_param_cache_drop(struct attn_backing *b);
/* Which of a backing's widening buffers the calling thread uses: 0, or 1 after
 * attn_param_cache_worker. */
int attn_param_cache_slot(void);
/* The calling thread's widening buffer of b, made on first use (its pages cost memory only once a
 * matrix is widened into them); NULL when out of memory. */
struct attn_param_cache *attn_param_cache_get(struct attn_backing *b);

/* One head the scene ablates (scene key ablate:). */
struct attn_ablation {
    int layer, head;
    enum attn_head_mode mode; /* HEAD_ZERO or HEAD_MEAN */
};

struct attn_scene {
    char *title;     /* NULL: the explorer shows the variant instead */
    char *text;      /* the sentence, or NULL when tokens were given directly */
    char *text_pair; /* a second sentence (text: [A, B]), which the tokenizer joins to text */
    enum attn_tokenizer tokenizer;
    char **tokens; /* n_tokens UTF-8 strings (tokenised from text when text set) */
    int n_tokens;
    int *token_ids;   /* (n_tokens) a vocabulary tokenizer's ids, or NULL */
    int *token_types; /* (n_tokens) each token's sentence, 0 or 1, when the tokenizer gives it */
    uint64_t seed;    /* torch.manual_seed at the start; default 123 */

    struct {
        enum attn_embed_kind kind;
        struct attn_matrix rows;     /* EXPLICIT: (n_tokens, d_in); TABLE: (vocab, d_in), the rows
                                        of token_ids */
        int dim;                     /* LEARNED: embedding width = d_in */
        struct attn_opt_seed seed;   /* LEARNED: re-seed before drawing the table */
        struct attn_book_rows *book; /* EXPLICIT: the rows as given, made by the first sentence
                                        edit (NULL before it); shared */
        /* A checkpoint's (BERT's): the token type table, (types, d_in), added to every token's
         * row by its token_types entry; and a LayerNorm of the sum (norm_weight given), with
         * block.norm_eps. Layer 0's input is then LayerNorm(word + type + position). */
        struct attn_matrix types;
        struct attn_matrix norm_weight, norm_bias; /* (1, d_in) each */
        /* A checkpoint's (Gemma's): every row times this, as float32 (its sqrt(hidden_size)
         * normalizer); 0: none. */
        double scale;
    } embed;

    struct {
        enum attn_pos_kind kind;
        int max_len; /* LEARNED: table rows; must be >= offset + n_tokens */
        struct attn_opt_seed seed;
        struct attn_matrix table;   /* optional explicit (max_len, d_in); drawn when NULL */
        double base;                /* SINUSOIDAL, ROPE: default 10000 */
        enum attn_rope_pairs pairs; /* ROPE */
        /* ROPE: the first dims of every head that turn, even (GPT-NeoX's rotary_pct of a head,
         * Phi's partial_rotary_factor); the rest pass through unturned. 0: the whole head. */
        int rotary_dims;
        /* ROPE, Gemma 3's: the base of the sliding-window layers (rope_local_base_freq), which
         * take no rope scaling; the global layers take base and scaling. 0: base everywhere. */
        double base_local;
        int offset; /* the first token's position */
        /* A checkpoint's relative position bias (T5's): every score of query i and key j gets
         * table[bucket(j - i)][h] added after scaling, the bucket exact up to half the buckets,
         * then logarithmic up to max_distance; bidirectional (an encoder's) gives the future
         * its own half. table (buckets, heads) given: on, in every layer but a cross-attention
         * one (the one table shared, as T5 computes it in a stack's first layer). */
        struct {
            struct attn_matrix table;
            int buckets, max_distance;
            bool bidirectional;
        } rel;
        /* ROPE, a checkpoint's rope type (Hugging Face's rope_init_functions; model.c's
         * rope_frequencies computes them as transformers does, in float32): linear divides every
         * frequency by factor; llama3 divides the low ones (wavelength over original_max /
         * low_freq_factor), keeps the high ones (under original_max / high_freq_factor) and
         * blends between; dynamic raises the base once the last position + 1 passes original_max
         * (max_position_embeddings); yarn blends base^(-2i/hd) / factor into base^(-2i/hd) over
         * the pairs between beta_fast's and beta_slow's rotations; longrope divides pair i's
         * frequency by short_factor[i], or long_factor[i] past original_max. cos and sin are
         * multiplied by attention_factor (1 but for yarn and longrope). */
        struct attn_rope_params {
            enum attn_rope_scaling kind;
            double factor, low_freq_factor, high_freq_factor;
            int original_max;
            double attention_factor;     /* 1: none */
            double beta_fast, beta_slow; /* yarn */
            bool truncate;               /* yarn: the ramp's ends rounded out to whole pairs */
            /* longrope: (n_factors = head_dim / 2) each, borrowed from the backing */
            const float *short_factor, *long_factor;
            int n_factors;
        } scaling;
    } pos;

    struct attn_config attn;
    struct attn_block block;
    int layers; /* blocks stacked: layer L + 1 reads layer L's output */
    /* Explicit parameters of layer 0 (or of the only layer). With weights_listed the file gave
     * one mapping per layer: more_weights holds layers 1 .. layers - 1 (n_more of them). */
    struct attn_scene_weights weights;
    bool weights_listed;
    struct attn_scene_weights *more_weights;
    int n_more;

    /* A checkpoint the parameters come from (scene key model:), resolved by src/scenefile. */
    struct {
        char *file; /* absolute path of the .safetensors file, or NULL */
        char *arch; /* the family that read it (src/pretrained's registry) */
        int layers; /* the checkpoint's own count (layers may run fewer) */
        int heads;  /* its config's head count (attention.heads may split otherwise) */
        /* Its own mask and scaling, as trained: causal (GPT-2, Llama) or not (BERT), and the
         * scores ÷ √d_k or not (GPT-2's scale_attn_weights), for attn_scene_model_changes. Its
         * rows are normalised by the softmax, masked before it, without dropout. */
        bool causal;
        enum attn_scale_kind scale; /* SCALE_SQRT_DK, SCALE_NONE or SCALE_DIVISOR (Gemma's) */
        double scale_divisor;       /* SCALE_DIVISOR: the scores ÷ it (√query_pre_attn_scalar) */
        /* The positions it was trained on (n_positions, max_position_embeddings), named by
         * positions_key (a string literal), or 0. Learned positions end there; RoPE computes
         * past them as transformers does, with a warning (attn_scene_positions_note). */
        int positions;
        const char *positions_key;
        size_t widened; /* bytes of its F16/BF16 tensors widened into float32 copies, which
                           count against the memory limit (F32 ones are read in place) */
        /* config.json's eos_token_id (a number or a list, Llama 3's three): the tokens that end
         * a generation. n_eos 0: the model names none. */
        int eos[SCENE_MAX_EOS];
        int n_eos;
        /* config.json's bad_words_ids of one token each (Marian's <pad>): a generation never
         * chooses them, as transformers' NoBadWordsLogitsProcessor makes their logits -inf. */
        int banned[SCENE_MAX_BANNED];
        int n_banned;
    } model;
    char *vocab_path, *merges_path; /* tokenizer gpt2: its files, absolute */
    char *tokenizer_file;           /* tokenizer hf: tokenizer.json, absolute */
    struct attn_backing *backing;   /* what the borrowed matrices live in, or NULL */
    /* The unembedding, next-token scores = final hidden state . unembed^T: a checkpoint's
     * lm_head.weight, or its wte when they are tied (then the same borrowed data as
     * embed.rows). (vocab, d_in), or no data: the scene has no vocabulary model. */
    struct attn_matrix unembed;
    struct attn_matrix unembed_bias; /* (1, vocab) added to the scores (BERT's), or no data */
    /* Final logit soft-capping (Gemma 2's final_logit_softcapping): scores = cap * tanh(scores /
     * cap). 0: none. */
    double logit_softcap;
    /* A checkpoint's head between the last hidden state and the unembedding (BERT's MLM
     * transform: LayerNorm(act(h W + b)), with block.norm_eps), when dense is given. */
    struct {
        struct attn_matrix dense, dense_bias;      /* (d_in, d_in), (1, d_in) */
        struct attn_matrix norm_weight, norm_bias; /* (1, d_in) each */
        enum attn_activation act;
    } head;
    /* A masked language model (BERT): position i's scores are for the token at i itself, and
     * the positions holding mask_id are the ones it is asked to fill in. False: next-token
     * scores (GPT-2, Llama). */
    bool masked_lm;
    int mask_id; /* the [MASK] token's id, or -1 */
    /* Heads whose context is replaced before out_proj (scene key ablate:), n_ablate of them,
     * in the file's order. */
    struct attn_ablation *ablate;
    int n_ablate;

    /* An encoder-decoder (T5): this scene is the decoder, reading the target text, and encoder
     * the source side, a scene of its own (bidirectional, its own layers) that shares the
     * backing and the tokenizer. Its last layer's output (after its final norm) is the keys and
     * values of every SUB_CROSS layer here. NULL: one sequence. */
    struct attn_scene *encoder;
    /* What layer L is (enum attn_sublayer): an encoder-decoder's decoder layer is two of the
     * engine's, its self-attention (SUB_SELF, no FFN) and then its cross-attention with the FFN
     * (SUB_CROSS). 0 (SUB_FULL) everywhere else. */
    unsigned char sublayer[SCENE_MAX_LAYERS];
    /* The decoder's start token (config.json's decoder_start_token_id), the first of the target's
     * tokens, which are read without the tokenizer's template; -1 until the checkpoint says. */
    int decoder_start;
    /* T5's tied unembedding: the last hidden state times this (d_model^-0.5) before the scores;
     * 0: none. */
    double unembed_scale;

    /* Where the explorer opens (scene key view:); layer -1 = not given. */
    struct {
        int layer, head, stage;
    } view;
    /* The guided steps (scene key lesson:, engine/lesson.h), or NULL. Read-only once loaded:
     * every copy of the scene shares it (attn_lesson_ref). */
    struct attn_lesson *lesson;
};

/* Defaults everywhere; no tokens, no embeddings. */
void attn_scene_init(struct attn_scene *s);
void attn_scene_free(struct attn_scene *s);
/* Deep copy (the explorer keeps one per undo step). Returns 0, or -1 on out-of-memory. */
int attn_scene_copy(struct attn_scene *dst, const struct attn_scene *src);
/* The bytes attn_scene_copy allocates for a copy of s, the struct itself aside: its strings,
 * tokens and their ids and types, every matrix it does not borrow, each layer's parameters and
 * dropout mask, the ablations. Not what every copy shares: the backing and the matrices
 * borrowed from it (GPT-2 small's 154 MB embedding table), the lesson, the book of rows. */
size_t attn_scene_owned_bytes(const struct attn_scene *s);
/* The built-in default: the book's "Your journey starts with one step" through ch. 3's
 * MultiHeadAttention (seed 123, d_out 2, 2 heads, causal). Returns 0, or -1 out of memory (s is
 * then an empty scene, as attn_scene_init leaves it). */
int attn_scene_init_default(struct attn_scene *s);

/* Sets text and re-tokenises it with s->tokenizer. Returns 0 or fills err. */
int attn_scene_set_text(struct attn_scene *s, const char *text, struct diag *err);
/* The explorer's sentence edit: sets text, and explicit embedding rows follow their tokens. A
 * token the scene was given a row for (its book, embed.book, kept from before the first edit
 * on) has that row, whatever edits came between; any other gets attn_scene_token_row's. Saving
 * writes every row out, so this rule decides what an edited scene holds. */
int attn_scene_retext(struct attn_scene *s, const char *text, struct diag *err);
/* True when the scene's explicit rows give token a row of its own (its book's, or its current
 * sentence's before any edit); false: a sentence edit makes one up. */
bool attn_scene_has_row(const struct attn_scene *s, const char *token);
/* The row of a token with none of its own: uniform [0, 1) values, like the book's hand-picked
 * embeddings, from a generator seeded by the token's FNV-1a hash, so the same word always gets
 * the same row, whatever sentence it is in. row: (d) */
void attn_scene_token_row(float *row, const char *token, int d);
/* Replaces the tokens (text becomes NULL). */
int attn_scene_set_tokens(struct attn_scene *s, char *const *tokens, int n, struct diag *err);
/* Why s has no next token to write (no vocabulary model, a masked language model, attention
 * that is not causal), into out: true; false when it has one. generate and the explorer's g
 * refuse with it. */
bool attn_scene_why_no_next(char *out, size_t size, const struct attn_scene *s);
/* The most tokens s may hold as a generation goes on: its model's context (the positions it was
 * trained on, less the offset), or SCENE_MAX_TOKENS; *what names which (positions_key, or
 * "the most tokens attnscope computes"). */
int attn_scene_context(const struct attn_scene *s, const char **what);
/* The model's banned tokens (model.banned) made -inf among logits[0 .. vocab): what a
 * generation chooses from. */
void attn_scene_ban_tokens(const struct attn_scene *s, float *logits, int vocab);
/* Whether id is one of the model's end-of-text tokens (model.eos). */
bool attn_scene_is_eos(const struct attn_scene *s, int id);
/* Appends vocabulary token id to s (a scene with a vocabulary tokenizer): its label to the
 * tokens, id to the ids, the sentence type of the last token to the types, and its bytes to the
 * text (backing->token_bytes; the text is dropped when there are none). What generation does
 * with the token it chose. Returns 0, or -1 with err (no vocabulary, SCENE_MAX_TOKENS, out of
 * memory), s unchanged. */
int attn_scene_append_id(struct attn_scene *s, int id, struct diag *err);

/* The seeds of the parts that re-seed the generator (attention.seed, embeddings.seed, ...). */
enum attn_seed_part {
    SEED_PART_EMBEDDINGS = 1 << 0,
    SEED_PART_POSITIONS = 1 << 1,
    SEED_PART_ATTENTION = 1 << 2,
    SEED_PART_FFN = 1 << 3,
    SEED_PART_DROPOUT = 1 << 4,
};
/* "the embeddings'", "the dropout's": a part in words. */
const char *attn_seed_part_name(enum attn_seed_part part);
/* The explorer's seed edit, as a notebook's torch.manual_seed(seed) changed everywhere: sets
 * s->seed, and every part seed equal to the old seed takes the new value too (the notebook
 * re-seeded with the same number); a part seed of another value stays. Returns the parts that
 * moved; *kept gets the parts with a seed of their own that stayed. */
unsigned attn_scene_set_seed(struct attn_scene *s, uint64_t seed, unsigned *kept);
/* True when s->seed decides a draw: some part is drawn (embeddings, positions, parameters,
 * dropout) before the first part that re-seeds. False: every draw follows a part's own seed (or
 * nothing is drawn), so `seed:` alone changes no number; *first gets the part that re-seeds
 * first (0 when nothing is drawn). */
bool attn_scene_seed_used(const struct attn_scene *s, enum attn_seed_part *first);
/* 0 when s borrows nothing, or what it borrows from is unchanged on disk (the backing's
 * check); -1 with err otherwise. Asked before every compute that reads a checkpoint, and after
 * it (a file that shrank while it was read). */
int attn_scene_check_backing(const struct attn_scene *s, struct diag *err);

/* Effective values, with every default applied. */
int attn_scene_d_in(const struct attn_scene *s);
int attn_scene_eff_d_out(const struct attn_scene *s);
enum attn_projection attn_scene_eff_projection(const struct attn_scene *s);
bool attn_scene_eff_out_proj(const struct attn_scene *s);
enum attn_scale_kind attn_scene_eff_scale(const struct attn_scene *s);
int attn_scene_head_dim(const struct attn_scene *s);   /* split: d_out / heads; wrapper: d_out */
int attn_scene_concat_dim(const struct attn_scene *s); /* D: split: d_out; wrapper: heads * d_out */
int attn_scene_kv_heads(const struct attn_scene *s);   /* K: kv_heads, or heads */
int attn_scene_kv_dim(const struct attn_scene *s);     /* Dkv = K * head_dim (split layout) */
int attn_scene_ffn_hidden(const struct attn_scene *s); /* block.ffn_hidden, or 4 * d_in */
/* The width of the attention's output: D, or d_in in a checkpoint's block whose out_proj maps
 * the heads' D back to the residual stream (Qwen3's head_dim x heads != hidden_size). */
int attn_scene_out_dim(const struct attn_scene *s);
/* The sliding window layer L attends through: attn.window, or 0 where window_off[L] makes it a
 * full layer (Gemma's and Qwen's alternating layers) or there is no window. */
int attn_scene_layer_window(const struct attn_scene *s, int layer);
/* Layer L's explicit parameters (layer 0: s->weights); never NULL, maybe all empty. */
const struct attn_scene_weights *attn_scene_layer_weights(const struct attn_scene *s, int layer);
/* Floats cached per token for K and V: 2 * heads * head_dim for MHA, 2 * K * head_dim for
 * GQA and MQA, r for MLA. mha_floats (may be NULL) gets what plain MHA of the shape needs. */
long attn_scene_kv_cache(const struct attn_scene *s, long *mha_floats);
/* The memory a scene may use here: ATTNSCOPE_MEMORY_MIB (MiB) when it is set, else 3/4 of the
 * machine's physical memory, never over SCENE_MAX_BYTES. why gets where the number came from
 * ("3/4 of this machine's memory", ...). */
size_t attn_scene_memory_limit(const char **why);
/* ATTNSCOPE_MEMORY_MIB's value as bytes: a whole number of MiB from 1 ("2048"), or with a unit
 * M, MiB, G or GiB ("512M", "2G"); more than SCENE_MAX_BYTES is SCENE_MAX_BYTES. 0, or -1 with
 * why naming the variable ("0", "-5", "1e3", "2 G", a 20-digit number). */
int attn_memory_env_parse(const char *text, size_t *bytes, char *why, size_t why_size);
/* Floating-point operations of s's forward pass (a multiply-add counts 2): the projections,
 * every head's scores and context, out_proj, the feed-forward, over every layer. What the
 * compute estimate (net.h) divides by the machine's speed. */
double attn_scene_flops(const struct attn_scene *s);
/* The matrix products alone of rows first_row .. n - 1 of every layer (a multiply-add counts 2):
 * the projections, out_proj and the feed-forward per row, and Q K^T and weights V over the keys
 * each row sees (a causal row i: i + 1, a window's at most its width). The least a pass that
 * recomputes those rows must multiply: bench --ui divides it by sgemm's speed for its bound. */
double attn_scene_product_flops(const struct attn_scene *s, int first_row);
/* Bytes attn_model_resolve + attn_forward would allocate (params and every stage). */
size_t attn_scene_mem_estimate(const struct attn_scene *s);

/* Checks every rule that needs more than one key (d_out % heads, sizes of explicit matrices,
 * limits, memory). Appends one diag per problem, with d.path set to the offending key
 * ("attention.d_out", "weights.query", ...) and no location: the YAML loader maps paths to
 * file:line:col. Returns the number of problems found, those out->lost counts (out of memory)
 * included: a caller that shows the first must check out->n. */
int attn_scene_check(const struct attn_scene *s, struct diag_list *out);

/* The rules of an edit (engine/edit.h), written once: what it may change, what it refuses, and
 * what else it takes along (explicit weights drawn again after a new shape or seed, dropout masks
 * after a new p or sentence, the part seeds that follow the notebook's seed, a position table
 * that grows with the sentence). Whether e can be made on s at all, without changing s: a
 * checkpoint fixes d_out, the layout, the projection and the embeddings; positions kind none cannot
 * shift; a vocabulary tokenizer cannot change; a sentence must tokenise to at least one token.
 * Returns 0, or -1 with why in err (a message for the user; err's path names the key). */
int attn_scene_check_edit(const struct attn_scene *s, const struct attn_edit *e, struct diag *err);

/* Makes e on s (after attn_scene_check_edit said it can be made), filling fx. Returns 0, or -1 when
 * the scene could not take it (out of memory, a sentence that fails): err says why and s may be
 * left invalid, as an edit the user typed may. Whether the result is a valid scene is
 * attn_scene_check's to say. The scene's own view: follows a new head count to the nearest head
 * it has (attn_scene_clamp_view): where a scene opens is never what makes an edit invalid. */
int attn_scene_apply_edit(struct attn_scene *s, const struct attn_edit *e,
                          struct attn_edit_effects *fx, struct diag *err);
/* The view: (where the explorer opens) moved to the nearest layer and head s has: view.head 4
 * of a scene cut to 4 heads becomes head 3. */
void attn_scene_clamp_view(struct attn_scene *s);
/* True when s can say what comes next: it has an unembedding and vocabulary ids. */
bool attn_scene_has_vocab(const struct attn_scene *s);
/* Why a scene cannot predict tokens, in a sentence for the user (s has no vocabulary model). */
const char *attn_scene_why_no_vocab(const struct attn_scene *s);
/* The display label of vocabulary id with s's tokenizer; "<id N>" without one. */
void attn_scene_token_label(char *out, size_t size, const struct attn_scene *s, int id);
/* The id of text when s's tokenizer makes it one token ("Mary" is not " Mary"). Returns 0, or
 * -1 with err saying what text is instead. */
int attn_scene_single_token(int *id, const struct attn_scene *s, const char *text,
                            struct diag *err);
/* Sets (mode HEAD_ZERO or HEAD_MEAN) or clears (HEAD_KEEP) the ablation of one head: the
 * explorer's toggle. Returns 0, or -1 on out-of-memory. */
int attn_scene_set_ablation(struct attn_scene *s, int layer, int head, enum attn_head_mode mode);
/* The scene's mode for a head: HEAD_KEEP unless ablate: names it. */
enum attn_head_mode attn_scene_ablation(const struct attn_scene *s, int layer, int head);

/* Names used by the YAML schema, the writer and the explorer's header (the tokenizer's:
 * attn_tokenizer_name, engine/tokenize.h). */
const char *attn_head_mode_name(enum attn_head_mode m); /* "keep", "zero", "mean", "patch" */
const char *attn_projection_name(enum attn_projection p);
const char *attn_layout_name(enum attn_head_layout l);
const char *attn_mask_mode_name(enum attn_mask_mode m);
const char *attn_normalize_name(enum attn_normalize n);
const char *attn_pos_kind_name(enum attn_pos_kind k);
const char *attn_rope_pairs_name(enum attn_rope_pairs p);
const char *attn_qkv_mode_name(enum attn_qkv_mode q);
const char *attn_block_order_name(enum attn_block_order o);
const char *attn_norm_kind_name(enum attn_norm_kind n);
const char *attn_activation_name(enum attn_activation a);
/* "none", "linear", "llama3", "dynamic", "yarn", "longrope": transformers' rope_type */
const char *attn_rope_scaling_name(enum attn_rope_scaling k);
/* True when a and b compute the same RoPE frequencies (every field of pos.scaling). */
bool attn_rope_scaling_same(const struct attn_scene *a, const struct attn_scene *b);
/* What s computes otherwise than its checkpoint as trained: its heads split otherwise, fewer
 * layers, the mask, the scaling, the normalisation or dropout changed (the scene keys
 * attention.heads, layers, attention.causal, .scale, .normalize, .mask_mode, .dropout, or the
 * explorer's H, c, x, N, M, D). Its predictions are then not the checkpoint's. out gets the
 * changes in the message line's words, "heads 8 → 4, causal off" ("" for none, or a scene
 * without a checkpoint); returns how many. The sentence, the positions' offset and the
 * temperature are the input, not the model; an ablation is an intervention that is said apart
 * (attn_scene_ablation). */
int attn_scene_model_changes(char *out, size_t size, const struct attn_scene *s);

/* True when s is a RoPE checkpoint that reads past the positions it was trained on
 * (model.positions): transformers computes them, and so does attnscope, but says so. out gets the
 * warning ("70 tokens, past the checkpoint's 64 positions (max_position_embeddings): ..."). */
bool attn_scene_positions_note(char *out, size_t size, const struct attn_scene *s);
/* A sentence against what the scene can read (textfit.c). */
struct attn_text_fit {
    int n;           /* the tokens the text makes, the tokenizer's own ([CLS], <s>) included */
    int limit;       /* the most the scene reads: a checkpoint's learned position table (table rows)
                        less the offset, else SCENE_MAX_TOKENS */
    int table;       /* the learned table's rows, or 0 when limit is attnscope's own */
    int offset;      /* positional.offset */
    int trained;     /* RoPE: the positions the checkpoint was trained on, which it reads past (with
                        a warning), or 0 */
    const char *key; /* the config.json key of table or trained ("n_positions"), or NULL */
};
/* How text (and pair, the second sentence, or NULL) fits s: every token counted with s's own
 * tokenizer, as the scene would read the text. Returns 0, or -1 with err (text that is not
 * UTF-8, out of memory). */
int attn_scene_text_fit(struct attn_text_fit *f, const struct attn_scene *s, const char *text,
                        const char *pair, struct diag *err);
/* The limit a text passed, in the user's words: "1,225 tokens, but this model reads at most 128
 * (n_positions)"; "9,000 tokens, but attnscope reads at most 8,192". */
void attn_text_fit_describe(char *out, size_t size, const struct attn_text_fit *f);
/* 1225 -> "1,225": a count of tokens as people write it (size 16 holds any int). */
void attn_count_text(char *out, size_t size, int v);
/* What a cut keeps: the first tokens, the last, or a window of positions [from, to). */
enum attn_text_cut { TEXT_KEEP_FIRST, TEXT_KEEP_LAST, TEXT_WINDOW };
/* The part of text (one sentence) that a cut keeps, as a new string in *out: the most whole
 * words from the start (KEEP_FIRST) or from the end (KEEP_LAST) whose tokens with s's tokenizer,
 * its own included, are at most `to`; or the whole words whose tokens lie in positions from ..
 * to - 1 of the text's (WINDOW, positions as the scene shows them). A text without spaces is cut
 * between characters. The words keep the tokens they had: the space before the first stays
 * when the tokenizer makes fewer tokens with it (GPT-2's " two"), else the spaces around go.
 * Returns 0, or -1 with err saying why nothing fits. */
int attn_scene_text_cut(char **out, const struct attn_scene *s, const char *text,
                        enum attn_text_cut how, int from, int to, struct diag *err);
/* A dropout probability as the book writes it: "0.0", "0.5", "0.05". */
void attn_scene_format_p(char *out, size_t out_size, double p);
/* The variant in words, e.g. "multi-head causal attention, 2 heads x head_dim 1, dropout 0.0". */
void attn_scene_describe(char *out, size_t out_size, const struct attn_scene *s);

/* Frees every explicit parameter and the mask; w is left empty (not set). */
void attn_scene_weights_free(struct attn_scene_weights *w);
/* Frees every layer's parameters, a checkpoint's too: s->weights empty, no more_weights. */
void attn_scene_weights_free_all(struct attn_scene *s);
/* Frees every layer's explicit parameters (their dropout masks with them): what an edit of the
 * shape or the seed does, since they fit only the shape they were written for. A checkpoint's
 * stay. Returns whether there were any to drop. */
bool attn_scene_drop_weights(struct attn_scene *s);
/* Frees every layer's explicit dropout mask: one drawn for other heads, tokens or p no longer
 * fits. */
void attn_scene_drop_dropout_masks(struct attn_scene *s);

void attn_matrix_free(struct attn_matrix *m);
/* Allocates rows*cols zeroed floats; returns 0 or -1. */
int attn_matrix_alloc(struct attn_matrix *m, int rows, int cols);
int attn_matrix_copy(struct attn_matrix *dst, const struct attn_matrix *src);

#endif
