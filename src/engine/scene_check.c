/* scene_check: the rules of a scene that need more than one key (attn_scene_check): sizes,
 * limits, shapes of explicit matrices, the later systems' combinations, memory (see scene.h). */
#include "engine/scene.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

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
    if (s->pos.offset < 0 || s->pos.offset > SCENE_MAX_POSITION)
        problem(out, "positional.offset", "offset %d is out of range (0..%d)", s->pos.offset,
                SCENE_MAX_POSITION);
    else if (s->pos.offset > 0 && pk == POS_NONE)
        problem(out, "positional.offset", "offset needs positions: kind is none");
    if (pk == POS_SINUSOIDAL && d_in % 2 != 0)
        problem(out, "positional.kind",
                "sinusoidal positions pair sine and cosine columns, so d_in must be even, not %d",
                d_in);
    if (pk == POS_ROPE && hd % 2 != 0)
        problem(out, "positional.kind",
                "rope rotates pairs of dimensions, so head_dim must be even, not %d", hd);
    int rd = s->pos.rotary_dims;
    if (rd != 0 && pk != POS_ROPE)
        problem(out, "positional.rotary_dims", "rotary_dims needs kind: rope");
    else if (rd != 0 && (rd % 2 != 0 || rd > hd))
        problem(out, "positional.rotary_dims",
                "rotary_dims turns pairs of a head's first dimensions: an even number up to "
                "head_dim %d, not %d",
                hd, rd);
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
    if (b->ffn_hidden < 0 || attn_scene_ffn_hidden(s) > SCENE_MAX_FFN_HIDDEN)
        problem(out, "block.ffn_hidden", "ffn_hidden %d is out of range (1..%d)",
                attn_scene_ffn_hidden(s), SCENE_MAX_FFN_HIDDEN);
    if (!(b->norm_eps > 0.0 && isfinite(b->norm_eps)))
        problem(out, "block.norm_eps", "norm_eps must be a positive number, not %g", b->norm_eps);
    if (b->ffn_skip < 0)
        problem(out, "block.ffn_skip", "ffn_skip %d is out of range (0 or more)", b->ffn_skip);
    if (b->order == BLOCK_SANDWICH && b->norm != NORM_RMS)
        problem(out, "block.order",
                "a sandwich block's post-norms are RMSNorms (Gemma's): it needs norm: rms");
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
    bool gated = attn_activation_gated(b->activation);
    const char *ffn_why = !b->on ? "there is no block"
                          : gated
                              ? "swiglu's three matrices go together (with their biases, if any)"
                              : "the FFN's two matrices go together, and its two biases";
    check_shape(out, P("ffn_W1"), &w->ffn_W1, d_in, h, ffn, ffn_why);
    /* swiglu's biases (Llama's mlp_bias) come three together, or not at all; the plain FFN's two
       (T5's has none) */
    bool gate_biases = gated && attn_matrix_given(&w->ffn_bgate);
    bool biases =
        gated ? gate_biases : attn_matrix_given(&w->ffn_b1) || attn_matrix_given(&w->ffn_b2);
    check_shape(out, P("ffn_b1"), &w->ffn_b1, 1, h, ffn && biases, ffn_why);
    check_shape(out, P("ffn_W2"), &w->ffn_W2, h, d_in, ffn, ffn_why);
    check_shape(out, P("ffn_b2"), &w->ffn_b2, 1, d_in, ffn && biases, ffn_why);
    check_shape(out, P("ffn_Wgate"), &w->ffn_Wgate, d_in, h, ffn && gated,
                gated ? ffn_why : "only swiglu has a gate");
    check_shape(out, P("ffn_bgate"), &w->ffn_bgate, 1, h, ffn && gate_biases,
                gated ? ffn_why : "only swiglu has a gate");
    const char *qk_why = a->qk_norm ? "qk_norm is on" : "there is no qk_norm";
    check_shape(out, P("q_norm_weight"), &w->q_norm_weight, 1,
                a->qk_norm_whole ? attn_scene_eff_d_out(s) : attn_scene_head_dim(s),
                a->qk_norm && given, qk_why);
    check_shape(out, P("k_norm_weight"), &w->k_norm_weight, 1,
                a->qk_norm_whole ? attn_scene_kv_dim(s) : attn_scene_head_dim(s),
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
    const struct attn_matrix *post[2] = {&w->post_norm1_weight, &w->post_norm2_weight};
    static const char *const post_paths[2] = {"post_norm1_weight", "post_norm2_weight"};
    for (int i = 0; i < 2; i++)
        if (post[i]->data)
            check_shape(out, P(post_paths[i]), post[i], 1, d_in,
                        b->on && b->order == BLOCK_SANDWICH,
                        "only a sandwich block normalises its branches' outputs");
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

    /* two sequences are an encoder-decoder checkpoint's: its family lays out the decoder's
       self- and cross-attention layers (src/pretrained) */
    if (s->encoder && (s->layers < 2 || s->sublayer[0] != SUB_SELF))
        problem(out, "text",
                "two sequences (text: {source, target}) need an encoder-decoder checkpoint "
                "(model: T5, BART or Marian)");
    if (s->encoder && s->encoder->encoder)
        problem(out, "text", "an encoder has no encoder of its own");
    else if (s->encoder) /* the source side: its tokens, positions and parameters too */
        attn_scene_check(s->encoder, out);
    for (int L = 0; s->encoder && L + 1 < s->layers && L + 1 < SCENE_MAX_LAYERS; L += 2)
        if (s->sublayer[L] != SUB_SELF || s->sublayer[L + 1] != SUB_CROSS)
            problem(out, "layers",
                    "an encoder-decoder's layers come in pairs: self-attention, "
                    "then cross-attention");

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
        if (s->pos.max_len < 1 || s->pos.max_len > SCENE_MAX_POSITION)
            problem(out, "positional.max_len", "max_len %d is out of range (1..%d)", s->pos.max_len,
                    SCENE_MAX_POSITION);
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
                    (bytes + MIB - 1) / MIB, limit / MIB, why);
    }
    return out->n + out->lost - before;
}
