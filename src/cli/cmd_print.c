/* print: every stage of the forward pass, printed the way PyTorch prints tensors.
 *
 *   # tokens: Your journey starts with one step
 *   # multi-head causal attention, ...
 *
 *   # inputs (6×3)
 *   tensor([[0.4300, 0.1500, 0.8900],
 *   ...
 *   # head 0 · weights (6×6)
 *
 * --stage keeps one stage, --head one head. With --head alone, only per-head stages print.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/utf8.h"
#include "export/export.h"

/* buf (cap floats, n * n): where a derived stage (scaled, masked, dropout) is computed. */
static void print_stage(float *buf, size_t cap, const struct cli_scene *cs, int layer,
                        enum attn_stage st, int h)
{
    struct attn_mat_view v =
        attn_view_buf(buf, cap, &cs->net.run[layer], &cs->net.model[layer], st, h);
    char where[64] = "";
    if (cs->net.layers > 1) { /* one layer prints as it always did */
        attn_net_layer_name(where, sizeof(where) - 8, &cs->net, layer, false);
        strcat(where, " \u00b7 ");
    }
    if (attn_stage_is_per_head(st))
        printf("\n# %shead %d \u00b7 %s (%d\u00d7%d)\n", where, h, attn_stage_name(st), v.rows,
               v.cols);
    else
        printf("\n# %s%s (%d\u00d7%d)\n", where, attn_stage_name(st), v.rows, v.cols);
    torch_print_matrix(stdout, v);
}

/* Every parameter matrix of layer L, as `print` shows stages. */
static void print_params(const struct cli_scene *cs, int layer)
{
    const struct attn_model *m = &cs->net.model[layer];
    int d = m->d_in, D = m->D, Dkv = m->Dkv, r = m->latent, h = m->hidden, W = D + 2 * Dkv;
    int E = m->out_dim;
#define M(member) offsetof(struct attn_model, member)
    const struct {
        const char *name;
        size_t member; /* read at use (attn_model_param): lazy ones share one buffer */
        int rows, cols;
    } p[] = {
        {"W_qkv", M(wqkv), d, W},
        {"b_qkv", M(bqkv), 1, W},
        {"W_query", M(wq), d, D},
        {"W_key", M(wk), d, Dkv},
        {"W_value", M(wv), d, Dkv},
        {"b_query", M(bq), 1, D},
        {"b_key", M(bk), 1, Dkv},
        {"b_value", M(bv), 1, Dkv},
        {"q_norm_weight", M(qnw), 1, (int)attn_model_buf_count(m, ATTN_BUF_qnw)},
        {"k_norm_weight", M(knw), 1, (int)attn_model_buf_count(m, ATTN_BUF_knw)},
        {"W_down", M(wdown), d, r},
        {"W_key_up", M(wkup), r, D},
        {"W_value_up", M(wvup), r, D},
        {"W_out", M(wo), D, E},
        {"b_out", M(bo), 1, E},
        {"ffn_Wgate", M(wg), d, h},
        {"ffn_bgate", M(bg), 1, h},
        {"ffn_W1", M(w1), d, h},
        {"ffn_b1", M(b1), 1, h},
        {"ffn_W2", M(w2), h, d},
        {"ffn_b2", M(b2), 1, d},
        {"norm1_weight", M(n1w), 1, d},
        {"norm1_bias", M(n1b), 1, d},
        {"norm2_weight", M(n2w), 1, d},
        {"norm2_bias", M(n2b), 1, d},
        {"post_norm1_weight", M(pn1w), 1, d},
        {"post_norm2_weight", M(pn2w), 1, d},
        {"final_norm_weight", M(fw), 1, d},
        {"final_norm_bias", M(fb), 1, d},
    };
#undef M
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        const float *data = attn_model_param(m, p[i].member);
        if (!data)
            continue;
        if (cs->net.layers > 1)
            printf("\n# layer %d \u00b7 %s (%d\u00d7%d)\n", layer, p[i].name, p[i].rows, p[i].cols);
        else
            printf("\n# %s (%d\u00d7%d)\n", p[i].name, p[i].rows, p[i].cols);
        torch_print_matrix(stdout,
                           (struct attn_mat_view){data, p[i].rows, p[i].cols,
                                                  attn_model_param_ld(m, p[i].member, p[i].cols)});
    }
}

static int parse_layer(const char *text, int *layer)
{
    return cli_int_option(layer, "print", "layer", text, 0, SCENE_MAX_LAYERS - 1);
}

static int parse_head(const char *text, int *head)
{
    return cli_int_option(head, "print", "head", text, 0, SCENE_MAX_HEADS - 1);
}

enum { O_STAGE, O_HEAD, O_LAYER, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_STAGE] = {"stage", 's', "S",
                 "only stage S: @STAGES@;\n"
                 "or params: every parameter matrix (W_query, W_out, ...)"},
    [O_HEAD] = {"head", 'H', "H", "only head H (0-based)"},
    [O_LAYER] = {"layer", 'l', "L", "only layer L (0-based) of a scene with layers"},
};

static const struct cli_example examples[] = {
    {"attnscope print 10-mha --stage weights --head 1",
     "head 1's attention weights of the book's MultiHeadAttention, as PyTorch prints them"},
    {NULL, NULL},
};

const struct cli_command cli_print = {
    "print",
    cmd_print,
    "[SCENE] [--stage S] [--head H] [--layer L]",
    "print the stages the way PyTorch prints tensors",
    "Print every stage of the forward pass the way PyTorch prints tensors, so a learner can\n"
    "set them beside the book's. With --head alone, only the per-head stages print.",
    opts,
    O_COUNT,
    examples,
    true,
};

int cmd_print(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[1];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_print, argc, argv, val, pos, 1, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *stage_arg = val[O_STAGE], *head_arg = val[O_HEAD], *layer_arg = val[O_LAYER];
    int stage = -1, head = -1, layer = -1;
    bool params = stage_arg && strcmp(stage_arg, "params") == 0;
    if (stage_arg && !params && (stage = attn_stage_parse(stage_arg)) < 0) {
        fprintf(stderr, "attnscope print: unknown stage '%s'; stages:", stage_arg);
        for (int s = 0; s < STAGE_COUNT; s++)
            fprintf(stderr, "%s %s", s ? "," : "", attn_stage_name((enum attn_stage)s));
        fputs(", params\nTry 'attnscope print --help'.\n", stderr);
        return CLI_USAGE;
    }
    if (head_arg && parse_head(head_arg, &head) != CLI_OK)
        return CLI_USAGE;
    if (layer_arg && parse_layer(layer_arg, &layer) != CLI_OK)
        return CLI_USAGE;

    struct cli_scene cs;
    rc = cli_scene_open(&cs, n_pos ? pos[0] : NULL, &in);
    if (rc != CLI_OK)
        return rc;
    float *buf = NULL;
    cli_scene_finite(&cs, false);
    /* A head or layer the scene does not have is a wrong command line, not a wrong scene. */
    const struct attn_model *m0 = &cs.net.model[0];
    const char *who = cs.from_file ? cs.name : "attnscope print";
    if (head >= m0->heads || layer >= cs.net.layers) {
        if (head >= m0->heads)
            fprintf(stderr, "%s: head %d out of range (scene has %d head%s)\n", who, head,
                    m0->heads, m0->heads == 1 ? "" : "s");
        else
            fprintf(stderr, "%s: layer %d out of range (scene has %d layer%s)\n", who, layer,
                    cs.net.layers, cs.net.layers == 1 ? "" : "s");
        rc = CLI_USAGE;
        goto out;
    }
    int first = layer >= 0 ? layer : 0, last = layer >= 0 ? layer : cs.net.layers - 1;
    if (params) { /* the parameter matrices, x @ W orientation, layer by layer */
        for (int L = first; L <= last; L++)
            print_params(&cs, L);
        goto out;
    }
    bool anywhere = stage < 0;
    for (int L = first; L <= last; L++)
        anywhere |= attn_stage_present(&cs.net.model[L], (enum attn_stage)stage);
    if (!anywhere) {
        enum attn_stage order[STAGE_COUNT];
        int n_order = attn_stage_order(order, &cs.net.model[last]);
        fprintf(stderr, "%s: this scene has no stage %s; its stages:", who,
                attn_stage_name((enum attn_stage)stage));
        for (int i = 0; i < n_order; i++)
            fprintf(stderr, "%s %s", i ? "," : "", attn_stage_name(order[i]));
        fputs("\n", stderr);
        rc = CLI_USAGE;
        goto out;
    }

    cli_print_tokens(stdout, m0);
    char unknown[600];
    if (cs.scene.tokenizer == TOKENIZER_GPT2 &&
        attn_tokens_unknown_words(unknown, sizeof(unknown), m0->tokens, m0->n) > 0) {
        fputs("# ", stdout);
        attn_utf8_fputs_escaped(unknown, stdout, 0);
        fputc('\n', stdout);
    }
    char desc[512];
    attn_scene_describe(desc, sizeof(desc), &cs.scene);
    printf("# %s\n", desc);
    cli_print_modified(stdout, &cs.scene, NULL);
    long mha, kv = attn_scene_kv_cache(&cs.scene, &mha);
    if (kv != mha) /* the point of GQA, MQA and MLA */
        printf("# KV cache per token: %ld floats (multi-head attention of this shape: %ld)\n", kv,
               mha);

    size_t cap = attn_net_square_floats(&cs.net);
    if (!(buf = malloc((cap ? cap : 1) * sizeof(float)))) {
        fprintf(stderr, "%s: out of memory\n", who);
        rc = CLI_INVALID;
        goto out;
    }
    for (int L = first; L <= last; L++) {
        enum attn_stage order[STAGE_COUNT];
        int n_order = attn_stage_order(order, &cs.net.model[L]);
        for (int i = 0; i < n_order; i++) {
            enum attn_stage st = order[i];
            int s = (int)st;
            if (stage >= 0 && s != stage)
                continue;
            if (!attn_stage_is_per_head(st)) {
                if (head < 0 || stage >= 0)
                    print_stage(buf, cap, &cs, L, st, 0);
                continue;
            }
            for (int h = 0; h < m0->heads; h++)
                if (head < 0 || h == head)
                    print_stage(buf, cap, &cs, L, st, h);
        }
    }
out:
    free(buf);
    cli_scene_close(&cs);
    return rc; /* main() checks that stdout got it all */
}
