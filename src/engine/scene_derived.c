/* scene_derived: values a scene implies: its effective options with every default applied, widths,
 * the KV cache, the memory limit and estimate, the flops of its forward pass (see scene.h). */
#include "engine/scene.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* GPT's feed-forward, and the book's: d_in -> 4 d_in -> d_in, when ffn_hidden is not given. */
#define FFN_WIDTH_FACTOR 4
/* A scene may use this share of the machine's memory when ATTNSCOPE_MEMORY_MIB is not set. */
#define MEMORY_SHARE_NUM 3
#define MEMORY_SHARE_DEN 4
/* ATTNSCOPE_MEMORY_MIB's units, as a shift of the number: MiB and GiB. */
#define MIB_SHIFT 20
#define GIB_SHIFT 30
/* The most of a wrong ATTNSCOPE_MEMORY_MIB a message repeats. */
#define ENV_SHOWN 40
/* Floating-point operations per cell of a head's scores besides Q K^T: the scale, the mask, the
 * softmax (an exp a cell) and dropout; and per element of the block's norms and activation. */
#define FLOPS_PER_SCORE   8
#define FLOPS_PER_ELEMENT 20

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
    return s->block.ffn_hidden > 0 ? s->block.ffn_hidden : FFN_WIDTH_FACTOR * attn_scene_d_in(s);
}

int attn_scene_out_dim(const struct attn_scene *s)
{
    return s->model.file && s->block.on && attn_scene_eff_out_proj(s) ? attn_scene_d_in(s)
                                                                      : attn_scene_concat_dim(s);
}

int attn_scene_layer_window(const struct attn_scene *s, int layer)
{
    bool full = layer >= 0 && layer < SCENE_MAX_LAYERS && s->attn.window_off[layer];
    return full ? 0 : s->attn.window;
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

int attn_memory_env_parse(const char *text, size_t *bytes, char *why, size_t why_size)
{
    static const struct {
        const char *suffix;
        unsigned shift; /* bytes = number << shift */
    } units[] = {{"", MIB_SHIFT},
                 {"M", MIB_SHIFT},
                 {"MiB", MIB_SHIFT},
                 {"G", GIB_SHIFT},
                 {"GiB", GIB_SHIFT}};
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
                 "ATTNSCOPE_MEMORY_MIB is '%.*s%s': not a number of MiB (a whole number like "
                 "2048, or with a unit: 512M, 512MiB, 2G, 2GiB)",
                 ENV_SHOWN, text, strlen(text) > ENV_SHOWN ? "..." : "");
        return -1;
    }
    if (overflow || n > (UINT64_MAX >> units[unit].shift)) {
        snprintf(why, why_size,
                 "ATTNSCOPE_MEMORY_MIB is '%.*s%s': out of range (attnscope uses at most %zu "
                 "MiB)",
                 ENV_SHOWN, text, strlen(text) > ENV_SHOWN ? "..." : "",
                 SCENE_MAX_BYTES >> MIB_SHIFT);
        return -1;
    }
    if (n == 0) {
        snprintf(why, why_size, "ATTNSCOPE_MEMORY_MIB is '%.*s': the limit must be at least 1 MiB",
                 ENV_SHOWN, text);
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
        size_t share = (size_t)pages / MEMORY_SHARE_DEN * MEMORY_SHARE_NUM * (size_t)page;
        if (share < SCENE_MAX_BYTES) {
            *why = "3/4 of this machine's memory; ATTNSCOPE_MEMORY_MIB sets another";
            return share;
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
    double total = 0;
    int layers = s->layers > 1 ? s->layers : 1;
    for (int L = 0; L < layers; L++) {
        /* an encoder-decoder's: a cross-attention layer's keys are the source's, and its
           self-attention layer has no FFN */
        enum attn_sublayer sub = s->encoder ? (enum attn_sublayer)s->sublayer[L] : SUB_FULL;
        double nk = sub == SUB_CROSS ? (s->encoder->n_tokens > 0 ? s->encoder->n_tokens : 0) : n;
        double f = 0;
        if (project)
            f += r > 0 ? 2 * n * d * (D + r) + 2 * 2 * n * r * D
                       : 2 * n * d * D + 2 * nk * d * 2 * Dkv;
        f += 2 * n * nk * D * 2; /* Q K^T and weights V, over the heads' widths */
        f += FLOPS_PER_SCORE * heads * n * nk;
        if (attn_scene_eff_out_proj(s))
            f += 2 * n * D * (attn_scene_out_dim(s) > 0 ? attn_scene_out_dim(s) : 0);
        if (s->block.on && sub != SUB_SELF) {
            double h = attn_scene_ffn_hidden(s) > 0 ? attn_scene_ffn_hidden(s) : 0;
            int linears = attn_activation_gated(s->block.activation) ? 3 : 2;
            f += linears * 2 * n * d * h + FLOPS_PER_ELEMENT * n * (d + h); /* Linears, norms */
        }
        total += f;
    }
    return total + (s->encoder ? attn_scene_flops(s->encoder) : 0); /* computed first, whole */
}

double attn_scene_product_flops(const struct attn_scene *s, int first_row)
{
    int n = s->n_tokens > 0 ? s->n_tokens : 0;
    if (first_row < 0)
        first_row = 0;
    if (first_row >= n)
        return 0;
    double d = attn_scene_d_in(s) > 0 ? attn_scene_d_in(s) : 0;
    double D = attn_scene_concat_dim(s) > 0 ? attn_scene_concat_dim(s) : 0;
    double Dkv = attn_scene_kv_dim(s) > 0 ? attn_scene_kv_dim(s) : 0;
    double r = s->attn.kv_latent;
    double row = 0; /* one row's row-wise products, one layer */
    if (attn_scene_eff_projection(s) != PROJ_NONE)
        row += r > 0 ? 2 * d * (D + r) + 2 * 2 * r * D : 2 * d * (D + 2 * Dkv);
    if (attn_scene_eff_out_proj(s))
        row += 2 * D * (attn_scene_out_dim(s) > 0 ? attn_scene_out_dim(s) : 0);
    if (s->block.on)
        row += (attn_activation_gated(s->block.activation) ? 3 : 2) * 2 * d *
               (attn_scene_ffn_hidden(s) > 0 ? attn_scene_ffn_hidden(s) : 0);
    int layers = s->layers > 1 ? s->layers : 1;
    double f = 0;
    for (int L = 0; L < layers; L++) {
        int w = attn_scene_layer_window(s, L);
        double keys = 0; /* over the rows: the keys each sees */
        for (int i = first_row; i < n; i++) {
            int k = s->attn.causal ? i + 1 : n;
            keys += w > 0 && k > w ? w : k;
        }
        f += row * (n - first_row) + 2 * 2 * keys * D; /* Q K^T and weights V */
    }
    return f;
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
        size_t h_stages = attn_activation_gated(s->block.activation) ? 3 : 2;
        floats += (mapped ? 0 : 2 * d_in * h + h) + 6 * d_in /* the FFN and the norms */
                  + n * (h_stages * h + 7 * d_in);           /* the block's stages */
    }
    floats += heads * n + n * D; /* weighted_norm's value norms and their product */
    size_t layers = (size_t)(s->layers > 1 ? s->layers : 1);
    size_t bytes =
        layers * (floats * sizeof(float) + heads * n * n /* keep mask */) + s->model.widened;
    /* an encoder-decoder's encoder, computed and kept whole beside the decoder (its widened
       tensors are the decoder's: the same checkpoint), and each cross-attention layer's square
       stages over the source, which the sum above counts as n x n */
    if (s->encoder) {
        size_t ns = (size_t)(s->encoder->n_tokens > 0 ? s->encoder->n_tokens : 0);
        bytes += attn_scene_mem_estimate(s->encoder) - s->encoder->model.widened;
        for (size_t L = 0; L < layers; L++)
            if (s->sublayer[L] == SUB_CROSS && ns > n)
                bytes += (3 * heads * n * (ns - n) + n * (ns - n)) * sizeof(float) +
                         heads * n * (ns - n) + 2 * (ns - n) * Dkv * sizeof(float);
    }
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
