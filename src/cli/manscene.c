/* manscene: attnscope-scene(5) in roff: every key of the scene format, from the loader's own
 * tables (attn_scenefile_describe) with the sentence this file gives each.
 *
 * A key in the tables without a sentence here makes `attnscope help --man attnscope-scene`
 * fail (and with it the build), so the manual cannot fall behind the format.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/scene.h"
#include "pretrained/pretrained.h"
#include "scenefile/scenefile.h"

/* Where a sentence names every checkpoint family, as the registry lists them ("gpt2, llama or
 * bert"): src/pretrained/families.c's rows, never a copy here. */
#define FAMILIES "{families}"

/* What each key does; "[]" marks the items of a list. Keep in the tables' order. */
static const struct {
    const char *path, *text;
} keys[] = {
    {"version", "The schema version; 1, the only one, and the default."},
    {"title", "Shown in the explorer's header and on pictures; default: the variant in words."},
    {"tokenizer",
     "How text becomes tokens: whitespace (split on ASCII white space, the default), words "
     "(runs of letters, digits, _ and ' are tokens, every other printable ASCII character is a "
     "token of its own), chars (every code point); or a mapping naming a vocabulary's files."},
    {"tokenizer.kind",
     "gpt2 (GPT-2's byte-level BPE from vocab.json and merges.txt) or hf (a Hugging Face "
     "tokenizer.json)."},
    {"tokenizer.vocab", "kind gpt2: the vocab.json, relative to the scene file."},
    {"tokenizer.merges",
     "kind gpt2: the merges.txt; an empty file is an error, one with only its #version line a "
     "tokenizer without merges."},
    {"tokenizer.file",
     "kind hf: the tokenizer.json (with tokenizer_config.json read when it is beside it), or a "
     "folder: its tokenizer.json, else Marian's source.spm, target.spm and vocab.json."},
    {"text", "The sentence, tokenised with tokenizer, or [A, B]: two sentences a checkpoint's "
             "tokenizer joins (BERT's [CLS] A [SEP] B [SEP]). Exactly one of text and tokens. It "
             "may not contain NUL: text is kept as C strings, so the rest would be lost."},
    {"tokens", "The tokens, used as given."},
    {"seed", "torch.manual_seed(seed) before anything is drawn; default 123."},
    {"embeddings",
     "Explicit rows (one per token, all d_in wide), a {file: name.npy or .csv}, or a mapping "
     "for a drawn nn.Embedding over the distinct tokens; default {dim: 3}."},
    {"embeddings.dim", "The width d_in of the drawn embeddings."},
    {"embeddings.seed", "Re-seeds the generator right before the embeddings are drawn."},
    {"positional", "Positions, added to the inputs or rotating q and k."},
    {"positional.kind",
     "none (the default); learned (an nn.Embedding(max_len, d_in) table added to the inputs); "
     "sinusoidal (the original Transformer's table); rope (rotary embeddings on each head's q "
     "and k)."},
    {"positional.max_len",
     "Rows of the table; at least the token count. Its size changes the draws, as in torch."},
    {"positional.seed", "Re-seeds right before the table is drawn."},
    {"positional.table", "An explicit table, max_len x d_in, instead of drawing it."},
    {"positional.base", "sinusoidal and rope: the base of the frequencies; default 10000."},
    {"positional.rope_pairs",
     "rope: adjacent dimensions rotate together (LLaMA's complex form), or halves (i, i + "
     "head_dim/2), as rotate_half."},
    {"positional.rotary_dims",
     "rope: only a head's first rotary_dims dimensions turn (partial rotary, GPT-NeoX's "
     "rotary_pct); the rest pass through. Default: the whole head."},
    {"positional.offset",
     "The first token's position; with rope the weights do not change, which is the point."},
    {"attention", "The attention: its projections, heads, mask, scaling, dropout."},
    {"attention.projection",
     "How W_query, W_key and W_value are made: linear (nn.Linear, the default), rand "
     "(torch.rand), none (Q = K = V = X; needs d_out = d_in)."},
    {"attention.d_out",
     "Split layout: the total width, head_dim = d_out / heads; wrapper: each head's width. "
     "Default d_in."},
    {"attention.heads", "The number of heads; default 1."},
    {"attention.head_layout",
     "split (MultiHeadAttention: one Linear split into heads, the default) or wrapper "
     "(MultiHeadAttentionWrapper: one CausalAttention per head, concatenated)."},
    {"attention.causal", "Hides the tokens after each query; default false."},
    {"attention.mask_mode",
     "before_softmax (-inf before the softmax, the default) or after_softmax (the book's first "
     "try: zero after it and renormalise)."},
    {"attention.normalize",
     "softmax (the default) or sum (each row divided by its sum: the book's naive try)."},
    {"attention.scale",
     "true divides the scores by sqrt(d_k); false does not; a number divides by it (4 shows "
     "chapter 3's d_k*0.5 slip)."},
    {"attention.dropout",
     "Dropout p on the attention weights, survivors scaled by 1/(1 - p); default 0."},
    {"attention.dropout_seed", "Re-seeds right before the dropout draws."},
    {"attention.qkv_bias", "Biases on the query, key and value projections (linear only)."},
    {"attention.out_proj",
     "A last nn.Linear(D, D) over the concatenated heads; default true with several split "
     "heads."},
    {"attention.out_bias", "The bias of out_proj; default true."},
    {"attention.seed", "Re-seeds right before the attention's parameters are drawn."},
    {"attention.qkv",
     "separate (the default); fused (one Linear chunked into [Q | K | V]); fused_heads "
     "(SimpleLLaMA's per-head chunks)."},
    {"attention.kv_heads",
     "K and V have this many heads; query head h reads KV head h / (heads / kv_heads): 1 is "
     "multi-query attention, between 1 and heads grouped-query."},
    {"attention.kv_latent",
     "Multi-head latent attention: c = x W_down (r wide, cached once per token), K = c "
     "W_key_up, V = c W_value_up."},
    {"block", "The rest of an encoder or decoder block after attention: norms and the FFN."},
    {"block.order",
     "post (norm1(x + attn(x)), then norm2(norm1 + ffn(norm1)), the default), pre (r = x + "
     "attn(norm1(x)), then r + ffn(norm2(r))), parallel (x + attn(norm1(x)) + ffn(norm2(x)), "
     "GPT-NeoX's), post_branch (r = x + norm1(attn(x)), then r + norm2(ffn(r)), OLMo 2's) or "
     "sandwich (pre, with each branch's output normalised again before it is added: Gemma's; "
     "norm: rms)."},
    {"block.norm", "layer (nn.LayerNorm, the default) or rms (RMSNorm, no bias)."},
    {"block.norm_eps", "The epsilon inside the square root; default 1e-5."},
    {"block.ffn_hidden", "The FFN's hidden width; default 4 x d_in."},
    {"block.activation",
     "relu (the default), gelu (the exact erf form), gelu_tanh (GPT-2's gelu_new) or silu "
     "(x sigmoid(x), Marian's swish)."},
    {"block.ffn_seed", "Re-seeds right before the FFN's parameters are drawn."},
    {"block.ffn_skip", "Advances the generator by this many uniform draws first."},
    {"block.final_norm", "A last norm of the last layer's output (GPT-2's ln_f)."},
    {"layers", "Stacks this many layers; layer L + 1 reads what layer L hands on. Default 1."},
    {"weights",
     "Explicit parameters instead of drawn ones; a list of mappings gives one per layer."},
    {"weights.query", "W_query, d_in x d_out, used as x W."},
    {"weights.key", "W_key, d_in x Dkv."},
    {"weights.value", "W_value, d_in x Dkv."},
    {"weights.query_bias", "The query projection's bias."},
    {"weights.key_bias", "The key projection's bias."},
    {"weights.value_bias", "The value projection's bias."},
    {"weights.out", "out_proj's weight, D x D."},
    {"weights.out_bias", "out_proj's bias."},
    {"weights.dropout_mask",
     "The dropout's keep mask, heads x n x n of 0 and 1 (or the (heads n) x n rows export "
     "writes), instead of drawing it."},
    {"weights.heads", "The wrapper layout: one mapping per head."},
    {"weights.heads[].query", "This head's W_query, d_in x d_out."},
    {"weights.heads[].key", "This head's W_key."},
    {"weights.heads[].value", "This head's W_value."},
    {"weights.heads[].query_bias", "This head's query bias."},
    {"weights.heads[].key_bias", "This head's key bias."},
    {"weights.heads[].value_bias", "This head's value bias."},
    {"weights.qkv", "fused and fused_heads: the one projection, d_in x (Dq + 2 Dkv)."},
    {"weights.qkv_bias", "Its bias."},
    {"weights.down", "MLA: W_down, d_in x r."},
    {"weights.key_up", "MLA: W_key_up, r x d_out."},
    {"weights.value_up", "MLA: W_value_up, r x d_out."},
    {"weights.ffn_W1", "The FFN's first weight, d_in x hidden."},
    {"weights.ffn_b1", "Its bias."},
    {"weights.ffn_W2", "The FFN's second weight, hidden x d_in."},
    {"weights.ffn_b2", "Its bias."},
    {"weights.norm1_weight", "norm1's weight; default 1."},
    {"weights.norm1_bias", "norm1's bias; default 0."},
    {"weights.norm2_weight", "norm2's weight; default 1."},
    {"weights.post_norm1_weight",
     "block.order sandwich: the weight of the post-norm of attention's output; default 1."},
    {"weights.post_norm2_weight",
     "block.order sandwich: the weight of the post-norm of the FFN's output; default 1."},
    {"weights.norm2_bias", "norm2's bias; default 0."},
    {"weights.final_norm_weight", "The final norm's weight, in the last layer's mapping."},
    {"weights.final_norm_bias", "The final norm's bias."},
    {"view", "Where the explorer opens."},
    {"view.layer", "The layer; default 0."},
    {"view.head", "The head; default 0."},
    {"view.stage", "The stage; default weights."},
    {"model",
     "Parameters from a checkpoint instead of drawn ones; the other keys that describe the "
     "model then come from it, and writing one is an error."},
    {"model.file", "The model.safetensors, or a sharded checkpoint's "
                   "model.safetensors.index.json, relative to the scene file."},
    {"model.arch", "How its tensors are named: auto (the default: config.json's architectures or "
                   "model_type), " FAMILIES "."},
    {"lesson",
     "Guided steps (1 to 100): the explorer opens in lesson mode, and check plays every step "
     "and checks the numbers its captions mark."},
    {"lesson[].stage", "The stage the step shows."},
    {"lesson[].layer", "The layer it shows; default 0."},
    {"lesson[].head", "The head it shows; default 0."},
    {"lesson[].cell", "The cell under the cursor, [row, column] from 0."},
    {"lesson[].row", "Or a row to look at."},
    {"lesson[].all_heads", "Shows every head side by side."},
    {"lesson[].panel",
     "What shows beside the map: the inspector (the default), the next-token predictions of the "
     "cursor's row (a step that quotes a prediction shows them, its row on the position), or the "
     "token view."},
    {"lesson[].caption",
     "What to say, at most 480 characters and 8 lines; a number in braces, {0.2379} or "
     "{0.2379 @ 1,1}, is checked against the matrix on screen."},
    {"lesson[].causal", "An edit: causal on or off."},
    {"lesson[].heads", "An edit: the number of heads."},
    {"lesson[].d_out", "An edit: d_out."},
    {"lesson[].dropout", "An edit: dropout p."},
    {"lesson[].seed", "An edit: the seed, as the explorer's seed knob makes it."},
    {"lesson[].text", "An edit: the sentence."},
    {"lesson[].scale", "An edit: the scaling."},
    {"lesson[].mask_mode", "An edit: the mask mode."},
    {"lesson[].normalize", "An edit: the normalisation."},
    {"lesson[].head_layout", "An edit: the head layout."},
    {"lesson[].offset", "An edit: the first token's position."},
    {"lesson[].ablate", "An edit: one head's ablation set, or taken off with mode: off."},
    {"lesson[].ablate.layer", "The head's layer."},
    {"lesson[].ablate.head", "The head."},
    {"lesson[].ablate.mode", "zero, mean, or off (the head computed again)."},
    {"lesson[].generate",
     "An edit: 1 to 64 tokens appended, each the model's most likely, as g writes them (a "
     "vocabulary model's causal scene)."},
    {"ablate",
     "Heads whose context is replaced before out_proj; everything after is computed from it."},
    {"ablate[].layer", "The head's layer."},
    {"ablate[].head", "The head."},
    {"ablate[].mode",
     "zero (its context set to 0) or mean (its mean over the positions, as TransformerLens's "
     "mean ablation)."},
};

static void roff(FILE *out, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else
            fputc(*s, out);
    }
}

struct walk {
    FILE *out;
    int missing;
};

static void key(void *ctx, const struct attn_scene_key *k)
{
    struct walk *w = ctx;
    const char *text = NULL;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !text; i++)
        if (strcmp(keys[i].path, k->path) == 0)
            text = keys[i].text;
    if (!text) {
        fprintf(stderr,
                "attnscope help --man attnscope-scene: the key '%s' has no sentence in "
                "src/cli/manscene.c\n",
                k->path);
        w->missing++;
        return;
    }
    char expanded[1024];
    const char *mark = strstr(text, FAMILIES);
    if (mark) {
        char families[256];
        snprintf(expanded, sizeof(expanded), "%.*s%s%s", (int)(mark - text), text,
                 attn_pretrained_families(families, sizeof(families)), mark + strlen(FAMILIES));
        text = expanded;
    }
    fputs(".TP\n.B ", w->out);
    roff(w->out, k->path);
    fputs("\n", w->out);
    if (k->values[0]) {
        fputs("One of ", w->out);
        roff(w->out, k->values);
        fputs(". ", w->out);
    } else if (k->ranged) {
        fprintf(w->out, "An integer from %lld to %lld. ", k->min, k->max);
    } else if (k->what && (strncmp(k->what, "a ", 2) == 0 || strncmp(k->what, "an ", 3) == 0 ||
                           strncmp(k->what, "true", 4) == 0)) { /* not a bare example value */
        char what[256];
        snprintf(what, sizeof(what), "%s", k->what);
        what[0] = (char)(what[0] >= 'a' && what[0] <= 'z' ? what[0] - 'a' + 'A' : what[0]);
        roff(w->out, what);
        fputs(". ", w->out);
    }
    roff(w->out, text);
    fputs("\n", w->out);
}

int cli_print_man_scene(FILE *out)
{
    fputs(
        ".\\\" Generated by `attnscope help --man attnscope-scene` from the scene loader's tables\n"
        ".\\\" and src/cli/manscene.c; edit those, not this file.\n"
        ".TH ATTNSCOPE-SCENE 5 \"\" \"attnscope " ATTNSCOPE_VERSION "\" \"File Formats\"\n"
        ".SH NAME\n"
        "attnscope-scene \\- the scene files of attnscope\n"
        ".SH DESCRIPTION\n"
        "A scene file is YAML: what attnscope computes (a sentence, its tokens and embeddings, "
        "the attention and its block, drawn or given parameters, a checkpoint) and where the "
        "explorer opens. Every key but text or tokens has a default. Unknown keys, duplicate "
        "keys and wrong types are errors at file:line:col, an unknown key with the nearest "
        "valid one suggested; \\fBattnscope check\\fR lists every problem of a file.\n"
        ".PP\n"
        "A matrix or vector may be written inline (a list of rows) or as {file: name.npy} or "
        "{file: name.csv}, relative to the scene file. Random draws follow PyTorch exactly: "
        "torch.manual_seed(seed), then each part in the order of the keys below, so a scene "
        "reproduces a notebook's tensors digit for digit.\n"
        ".SH KEYS\n",
        out);
    struct walk w = {out, 0};
    attn_scenefile_describe(key, &w);
    fprintf(out,
            ".SH LIMITS\n"
            "At most %d tokens, %d layers, %d heads and a width of %d; a scene's memory (its "
            "parameters and every stage) must fit the limit ATTNSCOPE_MEMORY_MIB sets "
            "(\\fBattnscope\\fR(1)). A scene file is at most %d MiB.\n"
            ".SH EXAMPLE\n"
            ".nf\n"
            "version: 1\n"
            "title: Causal attention, two heads\n"
            "text: Your journey starts with one step\n"
            "embeddings: [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],\n"
            "             [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]\n"
            "attention: {d_out: 2, heads: 2, causal: true}\n"
            ".fi\n"
            ".SH SEE ALSO\n"
            "\\fBattnscope\\fR(1); docs/scene-format.md in the source.\n",
            SCENE_MAX_TOKENS, SCENE_MAX_LAYERS, SCENE_MAX_HEADS, SCENE_MAX_DIM,
            (int)(SCENEFILE_MAX_BYTES >> 20));
    return w.missing ? -1 : 0;
}
