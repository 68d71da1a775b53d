/* scene_describe: a scene in words: the names of its options as scene files write them, the
 * variant in a line, what it computes otherwise than its checkpoint, dropout's p as the book
 * writes it (see scene.h). */
#include "engine/scene.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cnum.h"

/* How near a whole number of tenths a dropout p is written with one decimal ("0.1", not
 * "0.10000000000000001"). */
#define TENTHS_EPS 1e-9

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
    return n == NORMALIZE_SUM ? "sum" : "softmax";
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
    return o == BLOCK_SANDWICH      ? "sandwich"
           : o == BLOCK_POST_BRANCH ? "post_branch"
           : o == BLOCK_PARALLEL    ? "parallel"
           : o == BLOCK_PRE         ? "pre"
                                    : "post";
}

const char *attn_norm_kind_name(enum attn_norm_kind n)
{
    return n == NORM_RMS ? "rms" : "layer";
}

const char *attn_activation_name(enum attn_activation a)
{
    return a == ACT_SILU         ? "silu"
           : a == ACT_GEGLU_TANH ? "geglu_tanh"
           : a == ACT_SWIGLU     ? "swiglu"
           : a == ACT_GELU_TANH  ? "gelu_tanh"
           : a == ACT_GELU       ? "gelu"
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
    if (sc == SCALE_DIVISOR &&
        !(s->model.scale == SCALE_DIVISOR && a->scale_divisor == s->model.scale_divisor))
        SAY("scores \u00f7 %g", a->scale_divisor);
    else if (sc != s->model.scale)
        SAY("scaling %s", sc == SCALE_NONE ? "off" : "by \u221ad_k");
    if (a->normalize != NORMALIZE_SOFTMAX)
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
    if (fabs(p * 10 - round(p * 10)) < TENTHS_EPS)
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
    char extra[384] = "";
    if (a->causal && a->mask_mode == MASK_AFTER_SOFTMAX)
        strcat(extra, ", mask after softmax");
    if (a->normalize == NORMALIZE_SUM)
        strcat(extra, ", sum-normalised");
    if (s->pos.kind == POS_SINUSOIDAL)
        strcat(extra, ", sinusoidal positions");
    if (s->pos.kind == POS_ROPE)
        strcat(extra, s->pos.pairs == ROPE_HALVES ? ", RoPE (halves)" : ", RoPE");
    int hd = attn_scene_head_dim(s);
    if (s->pos.kind == POS_ROPE && s->pos.rotary_dims > 0 && s->pos.rotary_dims < hd) {
        char part[48];
        snprintf(part, sizeof(part), " on %d of %d dims", s->pos.rotary_dims, hd);
        strcat(extra, part);
    }
    if (s->pos.kind == POS_ROPE && s->pos.base_local > 0) {
        char part[64];
        snprintf(part, sizeof(part), " base %g (sliding layers: %g)", s->pos.base,
                 s->pos.base_local);
        strcat(extra, part);
    }
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
        strcat(extra, a->qk_norm_whole ? ", qk-norm over all heads" : ", qk-norm");
    if (a->softcap > 0) {
        char cap[48];
        snprintf(cap, sizeof(cap), ", scores soft-capped at %g", a->softcap);
        strcat(extra, cap);
    }
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
    if (attn_matrix_given(&s->pos.rel.table))
        strcat(extra, ", relative position bias");
    if (s->layers > 1 && !s->encoder) {
        snprintf(part, sizeof(part), ", %d layers", s->layers);
        strcat(extra, part);
    }
    char pstr[32];
    attn_scene_format_p(pstr, sizeof(pstr), a->dropout);
    if (s->encoder) { /* the decoder's engine layers are two a layer: self, then cross */
        snprintf(out, out_size,
                 "encoder-decoder: %d encoder layer%s over %d source tokens, %d decoder layer%s "
                 "(causal self- and cross-attention), %s, dropout %s%s",
                 s->encoder->layers, s->encoder->layers == 1 ? "" : "s", s->encoder->n_tokens,
                 s->layers / 2, s->layers / 2 == 1 ? "" : "s", heads, pstr, extra);
        return;
    }
    snprintf(out, out_size, "%s%s%s%sattention%s, %s, dropout %s%s", kind, multi, causal, self, v1,
             heads, pstr, extra);
}
