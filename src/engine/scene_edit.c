/* scene_edit: the rules of an edit to a scene, written once (see scene.h, engine/edit.h). */
#include "engine/scene.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/edit.h"
#include "engine/generate.h"
#include "engine/tokenize.h"

/* The second sentence an edit leaves: its own (NULL when it removes it), else the scene's. */
static const char *pair_of(const struct attn_scene *s, const struct attn_edit *e)
{
    if (e->kind != EDIT_TEXT || !e->text_pair)
        return s->text_pair;
    return e->text_pair[0] ? e->text_pair : NULL;
}

/* Tokenises text (and pair, a second sentence) as the scene would: its vocabulary's tokenizer,
 * or a built-in one. */
static int tokens_of(const struct attn_scene *s, const char *text, const char *pair, int tok,
                     int *n, struct diag *err)
{
    char **tokens = NULL;
    int *ids = NULL, *types = NULL;
    *n = 0;
    bool vocab =
        attn_tokenizer_has_vocab((enum attn_tokenizer)tok) && s->backing && s->backing->tokenize;
    if (!vocab && pair)
        return attn_diag_set(err, "text",
                             "two sentences (text: [A, B]) need a tokenizer with a template "
                             "that joins them: tokenizer: {kind: hf, file: tokenizer.json}");
    /* with the template, but a decoder's target (scene_text.c's rule), whose start token the
       checkpoint puts first */
    int rc = vocab ? s->backing->tokenize(s->backing, text, pair, !s->encoder, &tokens, &ids,
                                          &types, n, err)
                   : attn_tokenize(&tokens, n, text, (enum attn_tokenizer)tok, err);
    attn_tokens_free(tokens, *n);
    free(ids);
    free(types);
    if (rc == 0 && vocab && s->encoder && s->decoder_start >= 0)
        (*n)++;
    return rc;
}

/* A checkpoint's learned positions end with its table: n tokens from offset on past it are
 * refused, in the words the loader uses (RoPE computes past its positions: scene.h's
 * attn_scene_positions_note). */
static int past_table(const struct attn_scene *s, int n, int offset, const char *key,
                      struct diag *err)
{
    if (!s->model.file || s->pos.kind != POS_LEARNED || n + offset <= s->pos.max_len)
        return 0;
    return attn_diag_set(err, key, "%d tokens%s, but the checkpoint has %d positions (%s)", n,
                         offset > 0 ? " after the offset" : "", s->pos.max_len,
                         s->model.positions_key ? s->model.positions_key : "positions");
}

int attn_scene_check_edit(const struct attn_scene *s, const struct attn_edit *e, struct diag *err)
{
    attn_diag_clear(err);
    const char *fixed = e->kind == EDIT_D_OUT    ? "d_out"
                        : e->kind == EDIT_LAYOUT ? "the head layout"
                        : e->kind == EDIT_SHAPE  ? "the projection"
                        : e->kind == EDIT_DIM    ? "the embedding width"
                                                 : NULL;
    if (fixed && s->model.file)
        return attn_diag_set(err, attn_edit_key(e->kind),
                             "%s comes from the checkpoint (%s): heads, dropout, causal and the "
                             "sentence can change",
                             fixed, s->model.arch ? s->model.arch : "model");
    /* RoPE turns each head's own pairs, GQA shares KV heads between groups of query heads and
       qk-norm normalises over a head's width: cut into other heads, the numbers mean nothing. */
    if (e->kind == EDIT_HEADS && s->model.file && e->heads != s->attn.heads &&
        (s->pos.kind == POS_ROPE || s->attn.kv_heads > 0 || s->attn.qk_norm))
        return attn_diag_set(err, "heads",
                             "the heads come from the checkpoint (%s): RoPE turns each head's "
                             "pairs and its KV heads are shared, so they cannot be cut again",
                             s->model.arch ? s->model.arch : "model");
    if (e->kind == EDIT_TOKENIZER) {
        if (attn_tokenizer_has_vocab(s->tokenizer))
            return attn_diag_set(
                err, "",
                "the %s tokenizer comes with its vocabulary: the checkpoint needs its "
                "ids",
                attn_tokenizer_name(s->tokenizer));
        if (!s->text)
            return attn_diag_set(
                err, "",
                "the scene gives its tokens as a list: there is no text to tokenise "
                "again");
    }
    switch (e->kind) {
    case EDIT_ABLATE: {
        int layers = s->layers > 1 ? s->layers : 1;
        if (e->head_mode != HEAD_KEEP && e->head_mode != HEAD_ZERO && e->head_mode != HEAD_MEAN)
            return attn_diag_set(err, "ablate", "a head is ablated to zero or its mean, or not");
        if (e->layer < 0 || e->layer >= layers)
            return attn_diag_set(err, "ablate",
                                 "layer %d does not exist: the scene has %d layer%s (0 to %d)",
                                 e->layer, layers, layers == 1 ? "" : "s", layers - 1);
        if (e->head < 0 || e->head >= s->attn.heads)
            return attn_diag_set(
                err, "ablate", "head %d does not exist: the scene has %d head%s (0 to %d)", e->head,
                s->attn.heads, s->attn.heads == 1 ? "" : "s", s->attn.heads - 1);
        return 0;
    }
    case EDIT_GENERATE: {
        char why[DIAG_MSG_MAX];
        const char *what;
        int room = attn_scene_context(s, &what) - s->n_tokens;
        if (attn_scene_why_no_next(why, sizeof(why), s))
            return attn_diag_set(err, "generate", "%s", why);
        if (e->generate < 1 || e->generate > ATTN_EDIT_GENERATE_MAX)
            return attn_diag_set(err, "generate", "generate writes 1 to %d tokens, not %d",
                                 ATTN_EDIT_GENERATE_MAX, e->generate);
        if (e->generate > room)
            return attn_diag_set(err, "generate",
                                 "the text is %d tokens and the model's context (%s) is %d: "
                                 "room for %d more, not %d",
                                 s->n_tokens, what, s->n_tokens + room, room > 0 ? room : 0,
                                 e->generate);
        return 0;
    }
    case EDIT_OFFSET:
        if (s->pos.kind == POS_NONE)
            return attn_diag_set(err, "offset",
                                 "no positions to shift: the scene has positional kind none");
        return past_table(s, s->n_tokens, e->offset, "offset", err);
    case EDIT_DIM:
        if (s->embed.kind != EMBED_LEARNED)
            return attn_diag_set(err, "",
                                 "the embedding rows are given (%d wide): dim changes drawn "
                                 "embeddings only",
                                 attn_scene_d_in(s));
        return 0;
    case EDIT_TOKENIZER: /* the sentence under the new tokenizer */
    case EDIT_TEXT: {
        int n;
        if (e->kind == EDIT_TEXT && e->source) {
            if (!s->encoder)
                return attn_diag_set(err, "text",
                                     "one sequence: an encoder-decoder's scene has a source");
            if (tokens_of(s->encoder, e->text, NULL, (int)s->tokenizer, &n, err) != 0) {
                snprintf(err->path, sizeof(err->path), "text");
                return -1;
            }
            if (n == 0)
                return attn_diag_set(err, "text", "the source needs at least one token");
            return past_table(s->encoder, n, s->encoder->pos.offset, "text", err);
        }
        const char *text = e->kind == EDIT_TEXT ? e->text : s->text;
        int tok = e->kind == EDIT_TEXT ? (int)s->tokenizer : e->tokenizer;
        if (tokens_of(s, text, pair_of(s, e), tok, &n, err) != 0) {
            snprintf(err->path, sizeof(err->path), "text");
            return -1;
        }
        if (n == 0)
            return attn_diag_set(err, "text", "the sentence needs at least one token");
        return past_table(s, n, s->pos.offset > 0 ? s->pos.offset : 0, "text", err);
    }
    default:
        return 0;
    }
}

void attn_scene_clamp_view(struct attn_scene *s)
{
    if (s->view.layer < 0)
        return;
    int layers = s->layers > 1 ? s->layers : 1;
    if (s->view.layer >= layers)
        s->view.layer = layers - 1;
    if (s->view.head >= s->attn.heads)
        s->view.head = s->attn.heads > 0 ? s->attn.heads - 1 : 0;
}

int attn_scene_apply_edit(struct attn_scene *s, const struct attn_edit *e,
                          struct attn_edit_effects *fx, struct diag *err)
{
    memset(fx, 0, sizeof(*fx));
    attn_diag_clear(err);
    struct attn_config *c = &s->attn;
    switch (e->kind) {
    case EDIT_NONE:
    case EDIT_COUNT:
        return 0;
    case EDIT_CAUSAL:
        c->causal = e->causal;
        return 0;
    case EDIT_SCALE:
        c->scale = (enum attn_scale_kind)e->scale;
        if (e->scale == SCALE_DIVISOR) /* x toggles back to this divisor after none */
            c->scale_divisor = e->scale_divisor;
        return 0;
    case EDIT_MASK_MODE:
        c->mask_mode = (enum attn_mask_mode)e->mask_mode;
        return 0;
    case EDIT_NORMALIZE:
        c->normalize = (enum attn_normalize)e->normalize;
        return 0;
    case EDIT_OFFSET: /* the weights stay: only the positions move */
        s->pos.offset = e->offset;
        return 0;
    case EDIT_GENERATE: /* the sentence grows by the model's own tokens; the weights stay */
        return attn_scene_generate(s, e->generate, err);
    case EDIT_ABLATE: /* every parameter stays; what the head hands on changes */
        if (attn_scene_set_ablation(s, e->layer, e->head, (enum attn_head_mode)e->head_mode))
            return attn_diag_set(err, "ablate", "out of memory");
        return 0;
    case EDIT_DROPOUT: /* a mask drawn for another p no longer fits */
        c->dropout = e->dropout;
        attn_scene_drop_dropout_masks(s);
        return 0;
    /* Explicit weights only fit the shape and the seed they were written for: the scene goes
     * back to drawing them. */
    case EDIT_HEADS:
        c->heads = e->heads;
        break;
    case EDIT_D_OUT:
        c->d_out = e->d_out;
        break;
    case EDIT_LAYOUT:
        c->layout = (enum attn_head_layout)e->layout;
        break;
    case EDIT_DIM:
        s->embed.dim = e->dim;
        if (e->d_out > 0) /* a d_out that follows the width (projection none) */
            c->d_out = e->d_out;
        break;
    case EDIT_SHAPE:
        c->projection = (enum attn_projection)e->projection;
        c->layout = (enum attn_head_layout)e->layout;
        c->d_out = e->d_out;
        c->heads = e->heads;
        c->qkv_bias = e->qkv_bias;
        break;
    case EDIT_SEED:
        /* The notebook's torch.manual_seed changed everywhere: a part that re-seeded with the
           same number follows (12-shoes re-seeds three parts with 123); a seed of its own
           value stays. */
        fx->seeds_moved = attn_scene_set_seed(s, e->seed, &fx->seeds_kept);
        break;
    case EDIT_TEXT:
        if (e->source) /* the encoder reads it; the decoder's target stays */
            return attn_scene_set_text(s->encoder, e->text, err);
        /* fall through */
    case EDIT_TOKENIZER: {
        /* The rows of words the scene was given follow them (attn_scene_retext); a mask drawn
           for other tokens no longer fits; a drawn position table grows with the sentence (a
           given one does not, and the scene says why it is invalid). */
        char *text = strdup(e->kind == EDIT_TEXT ? e->text : s->text);
        const char *pair = pair_of(s, e);
        char *pair_copy = pair && pair != s->text_pair ? strdup(pair) : NULL;
        if (!text || (pair && pair != s->text_pair && !pair_copy)) {
            free(text);
            free(pair_copy);
            return attn_diag_set(err, "text", "out of memory");
        }
        if (e->kind == EDIT_TOKENIZER)
            s->tokenizer = (enum attn_tokenizer)e->tokenizer;
        char *old_pair = s->text_pair;
        if (pair != old_pair) /* the tokenizer joins the new pair */
            s->text_pair = pair_copy;
        int rc = attn_scene_retext(s, text, err);
        free(text);
        if (rc) {
            if (s->text_pair != old_pair) { /* the scene as it was */
                free(s->text_pair);
                s->text_pair = old_pair;
            }
            return -1;
        }
        if (s->text_pair != old_pair)
            free(old_pair);
        attn_scene_drop_dropout_masks(s);
        if (s->pos.kind == POS_LEARNED && !s->pos.table.data && !s->model.file &&
            s->n_tokens + s->pos.offset > s->pos.max_len) {
            s->pos.max_len = s->n_tokens + s->pos.offset;
            fx->positions_grew = true;
        }
        return 0;
    }
    }
    fx->weights_dropped = attn_scene_drop_weights(s);
    attn_scene_clamp_view(s);
    /* A head that is gone is ablated no more (fewer heads): the others stay as they were. */
    for (int i = s->n_ablate - 1; i >= 0; i--)
        if (s->ablate[i].head >= c->heads) {
            attn_scene_set_ablation(s, s->ablate[i].layer, s->ablate[i].head, HEAD_KEEP);
            fx->ablations_dropped++;
        }
    return 0;
}
