/* test_ckpt_config: config.json read strictly, in both of transformers' formats.
 *
 * The golden checkpoints' weights (tests/golden/families/llama-gqa, tests/golden/gpt2) are copied
 * beside a config.json written here, one key changed at a time, and loaded through a scene file
 * as a user's would be. Every refusal and every warning is asserted word for word with its
 * file:line:col; what a key computes is asserted on the scene and the models (the numbers of each
 * rope type are tests/golden/gen_families.py's goldens, goldens-families).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/edit.h"
#include "engine/net.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

static const char *golden(void)
{
    const char *g = getenv("ATTNSCOPE_GOLDEN_DIR");
    return g ? g : "tests/golden";
}

/* dir/model.safetensors: a copy of the golden checkpoint rel (under tests/golden). */
static void copy_model(const char *dir, const char *rel)
{
    char from[4200], to[4200];
    snprintf(from, sizeof(from), "%s/%s", golden(), rel);
    snprintf(to, sizeof(to), "%s/model.safetensors", dir);
    size_t len;
    char *data = tu_must_read_file(from, &len);
    tu_write_file(to, data, len);
    free(data);
}

/* dir/model.safetensors with its tensor from renamed to: the header rewritten, the data as it
 * was (a conversion that kept another name of a tied parameter). */
static void rename_tensor(const char *dir, const char *from, const char *to)
{
    char path[4200], q_from[200], q_to[200];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    snprintf(q_from, sizeof(q_from), "\"%s\"", from);
    snprintf(q_to, sizeof(q_to), "\"%s\"", to);
    size_t len;
    char *file = tu_must_read_file(path, &len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | (unsigned char)file[i];
    const char *header = file + 8, *at = strstr(header, q_from);
    assert_non_null(at);
    assert_true((size_t)(at - header) < hlen);
    size_t grown = hlen + strlen(q_to) - strlen(q_from), total = 8 + grown + (len - 8 - hlen);
    char *out = malloc(total);
    assert_non_null(out);
    for (int i = 0; i < 8; i++)
        out[i] = (char)(grown >> (8 * i));
    size_t before = (size_t)(at - header);
    memcpy(out + 8, header, before);
    memcpy(out + 8 + before, q_to, strlen(q_to));
    memcpy(out + 8 + before + strlen(q_to), at + strlen(q_from), hlen - before - strlen(q_from));
    memcpy(out + 8 + grown, file + 8 + hlen, len - 8 - hlen);
    tu_write_file(path, out, total);
    free(out);
    free(file);
}

struct loaded {
    char problems[4096]; /* "file:line:col: message" lines, the folder left out; "" loaded */
    char warnings[4096]; /* the backing's warnings, the same way */
    struct attn_scene s; /* loaded: the scene (free with attn_scene_free) */
    bool ok;
};

static void put_diag(char *out, size_t size, const struct diag *d)
{
    const char *base = strrchr(d->file, '/') ? strrchr(d->file, '/') + 1 : d->file;
    size_t o = strlen(out);
    snprintf(out + o, size - o, "%s:%d:%d: %s\n", base, d->line, d->col, d->msg);
}

/* Loads a scene of text (YAML) on dir's checkpoint with config (written as dir/config.json),
 * its tokenizer the line tokenizer ("{kind: ...}"). */
static void load_scene(struct loaded *r, const char *dir, const char *config, const char *text,
                       const char *tokenizer)
{
    memset(r, 0, sizeof(*r));
    char path[4200], scene[9000];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    tu_write_text(path, config);
    snprintf(path, sizeof(path), "%s/scene.yaml", dir);
    snprintf(scene, sizeof(scene), "text: %s\ntokenizer: %s\nmodel: {file: model.safetensors}\n",
             text, tokenizer);
    tu_write_text(path, scene);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_load(&r->s, path, &errs, NULL, NULL) != 0) {
        for (int i = 0; i < errs.n; i++)
            put_diag(r->problems, sizeof(r->problems), &errs.items[i]);
    } else {
        r->ok = true;
        const struct diag_list *w = &r->s.backing->warnings;
        for (int i = 0; i < w->n; i++)
            put_diag(r->warnings, sizeof(r->warnings), &w->items[i]);
    }
    attn_diag_list_free(&errs);
}

/* The same on the tiny GPT-2 BPE of tests/golden/gpt2. */
static void load_text(struct loaded *r, const char *dir, const char *config, const char *text)
{
    char tok[4200];
    snprintf(tok, sizeof(tok),
             "{kind: gpt2, vocab: %s/gpt2/vocab.json, merges: %s/gpt2/merges.txt}", golden(),
             golden());
    load_scene(r, dir, config, text, tok);
}

static void load(struct loaded *r, const char *dir, const char *config)
{
    load_text(r, dir, config, "the cat sat on the mat");
}

static void loaded_free(struct loaded *r)
{
    if (r->ok)
        attn_scene_free(&r->s);
    r->ok = false;
}

/* The one problem config has, exactly. */
static void expect_problem(const char *dir, const char *config, const char *want)
{
    struct loaded r;
    load(&r, dir, config);
    if (r.ok || strcmp(r.problems, want) != 0)
        fail_msg("config:\n%s\nexpected the problem\n%sgot\n%s", config, want,
                 r.ok ? "(loaded)\n" : r.problems);
    loaded_free(&r);
}

/* config loads, with exactly the warnings want ("" for none). */
static void expect_warnings(const char *dir, const char *config, const char *want)
{
    struct loaded r;
    load(&r, dir, config);
    if (!r.ok)
        fail_msg("config:\n%s\ndid not load:\n%s", config, r.problems);
    if (strcmp(r.warnings, want) != 0)
        fail_msg("config:\n%s\nexpected the warnings\n%sgot\n%s", config, want, r.warnings);
    loaded_free(&r);
}

/* config loads, with no warning: r holds its scene. */
static void load_clean(struct loaded *r, const char *dir, const char *config)
{
    load(r, dir, config);
    if (!r->ok)
        fail_msg("config:\n%s\ndid not load:\n%s", config, r->problems);
    if (strcmp(r->warnings, "") != 0)
        fail_msg("config:\n%s\nexpected no warning, got\n%s", config, r->warnings);
}

/* A config.json of llama-gqa's sizes, one key a line from line 2 on, then extra (lines of
 * `"key": value,`) before the last line. */
static char *llama_config(const char *arch, const char *extra)
{
    static char buf[8192];
    const char *type = strstr(arch, "Mistral") ? "mistral"
                       : strstr(arch, "Qwen2") ? "qwen2"
                       : strstr(arch, "Qwen3") ? "qwen3"
                       : strstr(arch, "Olmo2") ? "olmo2"
                                               : "llama";
    snprintf(buf, sizeof(buf),
             "{\n"
             "  \"architectures\": [\"%s\"],\n"
             "  \"model_type\": \"%s\",\n"
             "  \"vocab_size\": 407,\n"
             "  \"hidden_act\": \"silu\",\n"
             "  \"hidden_size\": 32,\n"
             "  \"num_hidden_layers\": 2,\n"
             "  \"num_attention_heads\": 4,\n"
             "  \"num_key_value_heads\": 2,\n"
             "  \"intermediate_size\": 48,\n"
             "  \"rms_norm_eps\": 1e-06,\n"
             "  \"tie_word_embeddings\": false,\n"
             "%s"
             "  \"max_position_embeddings\": 64\n"
             "}\n",
             arch, type, extra);
    return buf;
}

#define LLAMA(extra) llama_config("LlamaForCausalLM", extra)

/* config with its text from, on a line of its own, replaced by to. */
static char *with(char *config, const char *from, const char *to)
{
    static char buf[8192];
    char *at = strstr(config, from);
    assert_non_null(at);
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - config), config, to, at + strlen(from));
    return buf;
}

/* tests/golden/gpt2's config.json (3 layers, n_embd 32, 4 heads, 32 positions), extra before
 * the last line. */
static char *gpt2_config(const char *extra)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\n"
             "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
             "  \"model_type\": \"gpt2\",\n"
             "  \"vocab_size\": 407,\n"
             "  \"n_embd\": 32,\n"
             "  \"n_layer\": 3,\n"
             "  \"n_head\": 4,\n"
             "%s"
             "  \"n_positions\": 32\n"
             "}\n",
             extra);
    return buf;
}

#define GPT2(extra) gpt2_config(extra)

/* Every key is read, inert, refused unless default, or a warning that names it. */
static void test_key_tables(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-keys");
    copy_model(dir, "families/llama-gqa/model.safetensors");
    /* the keys every config has, transformers 4's and 5's, and token ids: nothing to say */
    expect_warnings(dir,
                    LLAMA("  \"torch_dtype\": \"float32\",\n  \"dtype\": \"float32\",\n"
                          "  \"transformers_version\": \"5.0.0\",\n  \"use_cache\": true,\n"
                          "  \"pad_token_id\": null,\n  \"bos_token_id\": 1,\n"
                          "  \"eos_token_id\": [2, 3],\n  \"initializer_range\": 0.02,\n"
                          "  \"attention_dropout\": 0.1,\n  \"pretraining_tp\": 2,\n"
                          "  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"
                          "  \"pruned_heads\": {},\n  \"quantization_config\": null,\n"),
                    "");
    /* a key no table knows: a warning at it, and the load goes on */
    expect_warnings(dir, LLAMA("  \"foo_bar\": 1,\n  \"use_sliding_window\": false,\n"),
                    "config.json:13:3: unknown key 'foo_bar' (not in transformers' LlamaConfig): "
                    "attnscope ignores it\n"
                    "config.json:14:3: unknown key 'use_sliding_window' (not in transformers' "
                    "LlamaConfig): attnscope ignores it\n");
    /* Mistral's attention has no biases and Qwen2's MLP none: their classes lack the keys */
    expect_warnings(dir,
                    llama_config("MistralForCausalLM",
                                 "  \"attention_bias\": true,\n  \"sliding_window\": null,\n"),
                    "config.json:13:3: unknown key 'attention_bias' (not in transformers' "
                    "MistralConfig): attnscope ignores it\n");
    /* refused unless it has its default */
    expect_problem(dir, LLAMA("  \"pruned_heads\": {\"0\": [1]},\n"),
                   "config.json:13:3: 'pruned_heads' is {\"0\":[1]}: pruned heads are not "
                   "something attnscope computes\n");
    expect_problem(dir, LLAMA("  \"quantization_config\": {\"quant_method\": \"awq\"},\n"),
                   "config.json:13:3: 'quantization_config' is {\"quant_method\":\"awq\"}: "
                   "quantized weights are not something attnscope reads\n");
    expect_problem(dir, LLAMA("  \"is_encoder_decoder\": true,\n"),
                   "config.json:13:3: 'is_encoder_decoder' is true: attnscope reads a single "
                   "stack of layers\n");
    /* the whole head is 1, written 1 or 1.0; a part of it is refused */
    expect_warnings(dir, LLAMA("  \"partial_rotary_factor\": 1,\n"), "");
    expect_warnings(dir,
                    LLAMA("  \"rope_parameters\": {\"rope_type\": \"default\", "
                          "\"partial_rotary_factor\": 1.0},\n"),
                    "");
    expect_problem(dir, LLAMA("  \"partial_rotary_factor\": 0.5,\n"),
                   "config.json:13:3: 'partial_rotary_factor' is 0.5: this model turns the "
                   "whole head (RoPE over part of it is GPT-NeoX's and Phi's)\n");
    expect_problem(dir, with(LLAMA(""), "\"silu\"", "\"gelu\""),
                   "config.json:5:3: 'hidden_act' is \"gelu\": the Llama family's MLP is "
                   "SwiGLU, attnscope computes it with silu\n");
    tu_remove_tree(dir);
    free(dir);
}

/* RoPE in transformers 4's keys and 5's rope_parameters: the same scene; disagreeing, refused. */
static void test_rope_formats(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-rope");
    copy_model(dir, "families/llama-gqa/model.safetensors");
    struct loaded a, b;
    load(&a, dir,
         LLAMA("  \"rope_theta\": 500000,\n"
               "  \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2},\n"));
    load(&b, dir,
         LLAMA("  \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2.0, "
               "\"rope_theta\": 500000.0},\n"));
    assert_true(a.ok && b.ok);
    assert_true(a.s.pos.base == 500000.0 && b.s.pos.base == 500000.0);
    assert_int_equal(a.s.pos.scaling.kind, ROPE_SCALING_LINEAR);
    assert_true(attn_rope_scaling_same(&a.s, &b.s));
    loaded_free(&a);
    loaded_free(&b);
    /* both written: agreeing is fine, disagreeing refused at rope_parameters' field */
    expect_warnings(dir,
                    LLAMA("  \"rope_theta\": 10000,\n"
                          "  \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2},\n"
                          "  \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2.0, "
                          "\"rope_theta\": 10000.0},\n"),
                    "");
    expect_problem(dir,
                   LLAMA("  \"rope_scaling\": {\"type\": \"linear\", \"factor\": 3},\n"
                         "  \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2.0},\n"),
                   "config.json:14:46: 'rope_parameters' has factor 2.0, 'rope_scaling' 3: the two "
                   "formats disagree\n");
    expect_problem(dir,
                   LLAMA("  \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2},\n"
                         "  \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2},\n"),
                   "config.json:14:23: 'rope_parameters' has type \"linear\", 'rope_scaling' "
                   "\"dynamic\": the two formats disagree\n");
    /* one dict per layer type: the same RoPE in every layer is read, RoPE of their own refused */
    expect_warnings(
        dir,
        LLAMA("  \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\"}, "
              "\"sliding_attention\": {\"rope_type\": \"default\"}},\n"),
        "");
    expect_problem(dir,
                   LLAMA("  \"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1e6}, "
                         "\"sliding_attention\": {\"rope_theta\": 1e4}},\n"),
                   "config.json:13:62: 'rope_parameters' gives its layer types RoPE of their own: "
                   "attnscope computes one RoPE for every layer\n");
    /* a field the type does not take: transformers warns and ignores it, so does attnscope */
    expect_warnings(dir,
                    LLAMA("  \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2, "
                          "\"low_freq_factor\": 1},\n"),
                    "config.json:13:59: 'low_freq_factor' of rope_parameters: rope type linear "
                    "takes no such field (transformers ignores it, and so does attnscope)\n");
    expect_problem(dir, LLAMA("  \"rope_scaling\": {\"type\": \"su\", \"factor\": 2},\n"),
                   "config.json:13:20: rope type \"su\" is not one attnscope computes (default, "
                   "linear, dynamic, yarn, longrope, llama3)\n");
    expect_problem(dir, LLAMA("  \"rope_parameters\": {\"rope_type\": \"linear\"},\n"),
                   "config.json:13:3: rope type linear needs 'factor' above 0, not nothing\n");
    tu_remove_tree(dir);
    free(dir);
}

/* yarn's attention factor: given, DeepSeek's mscale ratio, or 0.1 ln(factor) + 1; longrope's
 * factors, one a pair; dynamic's length. */
static void test_rope_types(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-rope-types");
    copy_model(dir, "families/llama-gqa/model.safetensors");
    struct loaded r;
    load(&r, dir,
         LLAMA("  \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
               "\"original_max_position_embeddings\": 16, \"attention_factor\": 1.5},\n"));
    assert_true(r.ok);
    assert_int_equal(r.s.pos.scaling.kind, ROPE_SCALING_YARN);
    assert_true(r.s.pos.scaling.attention_factor == 1.5);
    assert_int_equal(r.s.pos.scaling.original_max, 16);
    assert_true(r.s.pos.scaling.beta_fast == 32 && r.s.pos.scaling.beta_slow == 1);
    assert_true(r.s.pos.scaling.truncate);
    /* cos and sin carry the factor: a pair at position 0 turns by nothing, times 1.5 */
    struct attn_net net = {0};
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_net_compute(&net, &r.s, &err), 0);
    assert_true(net.model[0].rope_cos[0] == 1.5f && net.model[0].rope_sin[0] == 0.0f);
    attn_net_free(&net);
    loaded_free(&r);
    load(&r, dir,
         LLAMA("  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, "
               "\"original_max_position_embeddings\": 16},\n"));
    assert_true(r.ok && r.s.pos.scaling.attention_factor == 0.1 * log(4.0) + 1.0);
    loaded_free(&r);
    load(&r, dir,
         LLAMA("  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 8.0, "
               "\"original_max_position_embeddings\": 8, \"mscale\": 1.0, "
               "\"mscale_all_dim\": 0.5},\n"));
    assert_true(r.ok && r.s.pos.scaling.attention_factor ==
                            (0.1 * log(8.0) + 1.0) / (0.1 * 0.5 * log(8.0) + 1.0));
    loaded_free(&r);
    /* factor and the ratio of the lengths differ: transformers 5 takes factor, and warns */
    expect_warnings(dir,
                    LLAMA("  \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 2.0, "
                          "\"original_max_position_embeddings\": 16},\n"),
                    "config.json:13:44: rope type yarn: factor 2, but max_position_embeddings / "
                    "original_max_position_embeddings is 4: transformers 5 uses factor, as "
                    "attnscope does (transformers 4 used the ratio)\n");
    /* Phi-3's top-level original length, and the same in rope_parameters disagreeing */
    expect_problem(dir,
                   LLAMA("  \"original_max_position_embeddings\": 16,\n"
                         "  \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                         "\"original_max_position_embeddings\": 32},\n"),
                   "config.json:14:59: 'rope_parameters' has original_max_position_embeddings 32, "
                   "the top-level 'original_max_position_embeddings' 16: the two formats "
                   "disagree\n");
    expect_problem(dir,
                   LLAMA("  \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 2], "
                         "\"long_factor\": [1, 2]},\n"),
                   "config.json:13:40: rope type longrope needs 'short_factor', a list of 4 "
                   "numbers (one a pair of a head), not [1,2]\n");
    load(&r, dir,
         LLAMA("  \"original_max_position_embeddings\": 16,\n"
               "  \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 2, 3, 4], "
               "\"long_factor\": [5, 6, 7, 8]},\n"));
    assert_true(r.ok);
    assert_int_equal(r.s.pos.scaling.kind, ROPE_SCALING_LONGROPE);
    assert_int_equal(r.s.pos.scaling.n_factors, 4);
    assert_true(r.s.pos.scaling.long_factor[3] == 8.0f && r.s.pos.scaling.short_factor[0] == 1.0f);
    assert_true(r.s.pos.scaling.factor == 4.0);
    assert_true(r.s.pos.scaling.attention_factor == sqrt(1 + log(4.0) / log(16.0)));
    loaded_free(&r);
    load(&r, dir, LLAMA("  \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0},\n"));
    assert_true(r.ok && r.s.pos.scaling.kind == ROPE_SCALING_DYNAMIC);
    assert_int_equal(r.s.pos.scaling.original_max, 64); /* max_position_embeddings */
    loaded_free(&r);
    tu_remove_tree(dir);
    free(dir);
}

/* qwen2-bias's sizes: llama-gqa's with a feed-forward of 64, tied. */
static char *qwen_config(const char *arch, const char *extra)
{
    static char buf[8192];
    char *c =
        with(llama_config(arch, extra), "\"intermediate_size\": 48", "\"intermediate_size\": 64");
    snprintf(buf, sizeof(buf), "%s", c);
    c = with(buf, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    snprintf(buf, sizeof(buf), "%s", c);
    return buf;
}

/* Mistral's window: every layer, 4096 when the key is missing, none when null; Qwen2's: in the
 * layers layer_types or max_window_layers make sliding, both formats agreeing. */
static void test_windows(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-window");
    copy_model(dir, "families/llama-gqa/model.safetensors");
    struct loaded r;
    load(&r, dir, llama_config("MistralForCausalLM", ""));
    assert_true(r.ok);
    assert_int_equal(r.s.attn.window, 4096);
    assert_false(r.s.attn.window_off[0] || r.s.attn.window_off[1]);
    loaded_free(&r);
    load(&r, dir, llama_config("MistralForCausalLM", "  \"sliding_window\": null,\n"));
    assert_true(r.ok && r.s.attn.window == 0);
    loaded_free(&r);
    /* Qwen2 has q, k and v biases: its checkpoint is qwen2-bias's */
    copy_model(dir, "families/qwen2-bias/model.safetensors");
    const char *qwen = "Qwen2ForCausalLM";
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "  \"use_sliding_window\": true,\n  \"sliding_window\": 4,\n"
             "  \"max_window_layers\": 1,\n");
    load(&r, dir, qwen_config(qwen, extra));
    if (!r.ok)
        fail_msg("%s", r.problems);
    assert_int_equal(r.s.attn.window, 4);
    assert_true(r.s.attn.window_off[0] && !r.s.attn.window_off[1]);
    struct attn_net net = {0};
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_net_compute(&net, &r.s, &err), 0);
    assert_int_equal(net.model[0].window, 0);
    assert_int_equal(net.model[1].window, 4);
    attn_net_free(&net);
    loaded_free(&r);
    /* Qwen2.5's configs as published: Qwen2-VL's multimodal RoPE switch, off, says nothing;
       on, it is refused */
    expect_warnings(dir,
                    qwen_config(qwen, "  \"use_mrope\": false,\n  \"use_sliding_window\": false,\n"
                                      "  \"sliding_window\": 131072,\n"
                                      "  \"max_window_layers\": 24,\n"),
                    "");
    expect_problem(dir, qwen_config(qwen, "  \"use_mrope\": true,\n"),
                   "config.json:13:3: 'use_mrope' is true: multimodal RoPE (Qwen2-VL's) is not "
                   "something attnscope computes\n");
    /* layer_types alone (transformers 5), the same */
    snprintf(extra, sizeof(extra),
             "  \"use_sliding_window\": true,\n  \"sliding_window\": 4,\n"
             "  \"layer_types\": [\"full_attention\", \"sliding_attention\"],\n");
    load(&r, dir, qwen_config(qwen, extra));
    assert_true(r.ok && r.s.attn.window == 4 && r.s.attn.window_off[0] && !r.s.attn.window_off[1]);
    loaded_free(&r);
    snprintf(extra, sizeof(extra),
             "  \"use_sliding_window\": true,\n  \"sliding_window\": 4,\n"
             "  \"max_window_layers\": 0,\n"
             "  \"layer_types\": [\"full_attention\", \"sliding_attention\"],\n");
    expect_problem(dir, qwen_config(qwen, extra),
                   "config.json:16:3: 'layer_types' makes layer 0 full_attention, "
                   "'max_window_layers' 0 makes it sliding_attention: the two formats disagree\n");
    snprintf(extra, sizeof(extra),
             "  \"layer_types\": [\"full_attention\", \"sliding_attention\"],\n");
    expect_problem(dir, qwen_config(qwen, extra),
                   "config.json:13:3: layer 1 is sliding_attention, but there is no window "
                   "('use_sliding_window' is not true)\n");
    snprintf(extra, sizeof(extra),
             "  \"layer_types\": [\"full_attention\", \"chunked_attention\"],\n");
    expect_problem(dir, qwen_config(qwen, extra),
                   "config.json:13:3: layer 1 is \"chunked_attention\": attnscope computes "
                   "full_attention and sliding_attention\n");
    tu_remove_tree(dir);
    free(dir);
}

/* A RoPE checkpoint past max_position_embeddings is computed, with a warning; learned positions
 * end with their table, and an edit past it is refused by the edit rules. */
static void test_positions(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-positions");
    copy_model(dir, "families/llama-gqa/model.safetensors");
    char *config = LLAMA("");
    char *at = strstr(config, "\"max_position_embeddings\": 64");
    memcpy(at, "\"max_position_embeddings\": 4 ", strlen("\"max_position_embeddings\": 4 "));
    struct loaded r;
    load(&r, dir, config);
    assert_true(r.ok);
    char note[DIAG_MSG_MAX];
    assert_true(attn_scene_positions_note(note, sizeof(note), &r.s));
    assert_string_equal(note, "7 tokens, past the checkpoint's 4 positions "
                              "(max_position_embeddings): computed as transformers computes "
                              "them, on positions the model was not trained on");
    struct attn_net net = {0};
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_net_compute(&net, &r.s, &err), 0);
    attn_net_free(&net);
    loaded_free(&r);

    /* GPT-2's learned table: 32 rows; a sentence or a shift past them is refused */
    copy_model(dir, "gpt2/model.safetensors");
    load(&r, dir, GPT2(""));
    assert_true(r.ok);
    assert_false(attn_scene_positions_note(note, sizeof(note), &r.s));
    struct attn_edit e = {.kind = EDIT_TEXT,
                          .text = "the cat sat on the mat and the cat sat on the mat and the cat "
                                  "sat on the mat and the cat sat on the mat and the dog"};
    assert_int_equal(attn_scene_check_edit(&r.s, &e, &err), -1);
    assert_string_equal(err.msg, "35 tokens, but the checkpoint has 32 positions (n_positions)");
    assert_string_equal(err.path, "text");
    e = (struct attn_edit){.kind = EDIT_OFFSET, .offset = 30};
    assert_int_equal(attn_scene_check_edit(&r.s, &e, &err), -1);
    assert_string_equal(err.msg, "7 tokens after the offset, but the checkpoint has 32 positions "
                                 "(n_positions)");
    e.offset = 25;
    assert_int_equal(attn_scene_check_edit(&r.s, &e, &err), 0);
    loaded_free(&r);
    tu_remove_tree(dir);
    free(dir);
}

/* GPT-2's keys: attribute_map's other names agreeing, the scaling keys computed, an unknown key
 * said, cross-attention refused. */
static void test_gpt2_keys(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-gpt2");
    copy_model(dir, "gpt2/model.safetensors");
    expect_warnings(dir, GPT2("  \"hidden_size\": 32,\n  \"num_hidden_layers\": 3,\n"), "");
    expect_problem(dir, GPT2("  \"num_attention_heads\": 8,\n"),
                   "config.json:8:3: 'num_attention_heads' is 8, 'n_head' 4: the two names of "
                   "one size disagree\n");
    expect_problem(dir, GPT2("  \"add_cross_attention\": true,\n"),
                   "config.json:8:3: 'add_cross_attention' is true: cross-attention to an encoder "
                   "is not something attnscope computes\n");
    expect_warnings(dir, GPT2("  \"rope_theta\": 10000,\n  \"resid_pdrop\": 0.1,\n"),
                    "config.json:8:3: unknown key 'rope_theta' (not in transformers' "
                    "GPT2Config): attnscope ignores it\n");
    struct loaded r;
    load(&r, dir,
         GPT2("  \"scale_attn_weights\": false,\n  \"scale_attn_by_inverse_layer_idx\": true,\n"
              "  \"reorder_and_upcast_attn\": true,\n"));
    assert_true(r.ok);
    assert_int_equal(r.s.attn.scale, SCALE_NONE);
    assert_true(r.s.attn.scale_by_layer);
    struct attn_net net = {0};
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_net_compute(&net, &r.s, &err), 0);
    for (int L = 0; L < 3; L++) /* no sqrt(head_dim): layer L's scores / (L + 1) */
        assert_true(net.model[L].scale_divisor == (float)(L + 1));
    attn_net_free(&net);
    loaded_free(&r);
    load(&r, dir, GPT2("  \"scale_attn_by_inverse_layer_idx\": true,\n"));
    assert_true(r.ok);
    attn_diag_clear(&err);
    assert_int_equal(attn_net_compute(&net, &r.s, &err), 0);
    assert_true(net.model[2].scale_divisor == (float)(sqrt(8.0) * 3));
    attn_net_free(&net);
    loaded_free(&r);
    tu_remove_tree(dir);
    free(dir);
}

/* BERT's keys: transformers 5's BertConfig (no position_embedding_type) and 4's. */
static void test_bert_keys(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-bert");
    copy_model(dir, "families/bert-pair/model.safetensors");
    char path[4200], scene[4200];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    tu_write_text(path,
                  "{\n"
                  "  \"architectures\": [\"BertForMaskedLM\"],\n"
                  "  \"vocab_size\": 30, \"hidden_size\": 32, \"num_hidden_layers\": 2,\n"
                  "  \"num_attention_heads\": 4, \"intermediate_size\": 64,\n"
                  "  \"max_position_embeddings\": 40, \"dtype\": \"float32\",\n"
                  "  \"classifier_dropout\": null, \"pooler_type\": \"first_token_transform\",\n"
                  "  \"rope_theta\": 10000\n"
                  "}\n");
    snprintf(path, sizeof(path), "%s/scene.yaml", dir);
    snprintf(scene, sizeof(scene),
             "text: the cat sat on the mat\n"
             "tokenizer: {kind: hf, file: %s/families/bert-pair/tokenizer.json}\n"
             "model: {file: model.safetensors}\n",
             golden());
    tu_write_text(path, scene);
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, path, &errs, NULL, NULL), 0);
    char got[1024] = "";
    for (int i = 0; i < s.backing->warnings.n; i++)
        put_diag(got, sizeof(got), &s.backing->warnings.items[i]);
    assert_string_equal(got, "config.json:7:3: unknown key 'rope_theta' (not in transformers' "
                             "BertConfig): attnscope ignores it\n");
    attn_scene_free(&s);
    attn_diag_list_free(&errs);
    tu_remove_tree(dir);
    free(dir);
}

/* OLMo 2 is the Llama family's attention with its norms moved: its own class's keys (no sliding
 * window, no mlp_bias), its default eps (1e-5), q_norm and k_norm as wide as the projections. */
static void test_olmo2_keys(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-olmo2");
    copy_model(dir, "families/olmo2/model.safetensors");
    struct loaded r;
    load_clean(&r, dir, llama_config("Olmo2ForCausalLM", "  \"attention_bias\": true,\n"));
    assert_int_equal(r.s.block.order, BLOCK_POST_BRANCH);
    assert_true(r.s.attn.qk_norm && r.s.attn.qk_norm_whole);
    assert_int_equal(r.s.weights.q_norm_weight.cols, 32);
    assert_int_equal(r.s.weights.k_norm_weight.cols, 16);
    loaded_free(&r);
    expect_warnings(
        dir,
        llama_config("Olmo2ForCausalLM", "  \"attention_bias\": true,\n  \"sliding_window\": 8,\n"),
        "config.json:14:3: unknown key 'sliding_window' (not in transformers' "
        "Olmo2Config): attnscope ignores it\n");
    /* without attention_bias the checkpoint's biases are tensors OLMo 2 does not have */
    load(&r, dir, llama_config("Olmo2ForCausalLM", ""));
    assert_false(r.ok);
    assert_non_null(strstr(r.problems, "_proj.bias' is not part of OLMo 2 (arch llama)"));
    loaded_free(&r);
    tu_remove_tree(dir);
    free(dir);
}

/* A scratch folder holding tests/golden/GROUP/NAME's checkpoint (*dir), and that case's
 * config.json's text (the caller frees both). GROUP: families (gen_families.py), seq2seq
 * (gen_seq2seq.py). */
static char *golden_config(char **dir, const char *group, const char *name)
{
    char rel[200], path[4200];
    *dir = tu_make_tmpdir("ckpt-family");
    snprintf(rel, sizeof(rel), "%s/%s/model.safetensors", group, name);
    copy_model(*dir, rel);
    snprintf(path, sizeof(path), "%s/%s/%s/config.json", golden(), group, name);
    size_t len;
    return tu_must_read_file(path, &len);
}

static char *family_config(char **dir, const char *name)
{
    return golden_config(dir, "families", name);
}

/* Phi-3: su and yarn are its old names of longrope, and no other rope type is taken; the factors
 * are one a turned pair (partial_rotary_factor 0.5 of 16: 4). */
static void test_phi3_keys(void **state)
{
    (void)state;
    char *dir, *config = family_config(&dir, "phi3-longrope");
    struct loaded r;
    load_clean(&r, dir, config);
    assert_int_equal(r.s.pos.rotary_dims, 8);
    assert_int_equal(r.s.pos.scaling.kind, ROPE_SCALING_LONGROPE);
    assert_int_equal(r.s.pos.scaling.n_factors, 4);
    assert_int_equal(r.s.pos.scaling.original_max, 16);
    assert_int_equal(r.s.attn.window, 9);
    loaded_free(&r);
    load(&r, dir, with(config, "\"su\"", "\"yarn\""));
    assert_true(r.ok);
    assert_int_equal(r.s.pos.scaling.kind, ROPE_SCALING_LONGROPE);
    loaded_free(&r);
    expect_problem(dir, with(config, "\"su\"", "\"dynamic\""),
                   "config.json:22:5: rope type \"dynamic\": Phi-3 takes default or longrope (su "
                   "and yarn are its old names of longrope)\n");
    expect_problem(dir,
                   with(config, "\"partial_rotary_factor\": 0.5", "\"partial_rotary_factor\": 1.0"),
                   "config.json:23:5: rope type longrope needs 'short_factor', a list of 8 numbers "
                   "(one a pair of a head), not [1.0,1.1,1.3,1.7]\n");
    free(config);
    tu_remove_tree(dir);
    free(dir);
}

/* Gemma 3's config (gen_families.py's gemma3) with one change each: its layers in both formats,
 * its sliding layers' RoPE base in both, and what it does not compute. */
static void test_gemma_keys(void **state)
{
    (void)state;
    char *dir, *config = family_config(&dir, "gemma3");
    struct loaded r;
    load_clean(&r, dir, config);
    assert_int_equal(r.s.block.order, BLOCK_SANDWICH);
    assert_int_equal(r.s.block.activation, ACT_GEGLU_TANH);
    assert_true(r.s.pos.base == 1000000.0 && r.s.pos.base_local == 10000.0);
    assert_true(!r.s.attn.window_off[0] && !r.s.attn.window_off[1] && r.s.attn.window_off[2]);
    assert_true(r.s.embed.scale == sqrt(32.0));
    loaded_free(&r);
    expect_problem(
        dir,
        with(config, "\"sliding_window_pattern\": 3,",
             "\"sliding_window_pattern\": 3,\n  \"layer_types\": [\"sliding_attention\", "
             "\"full_attention\", \"full_attention\"],"),
        "config.json:20:3: 'layer_types' makes layer 1 full_attention, 'sliding_window_pattern' 3 "
        "makes it sliding_attention: the two formats disagree\n");
    expect_problem(dir,
                   with(config, "\"rope_local_base_freq\": 10000.0,",
                        "\"rope_local_base_freq\": 20000.0,\n  \"rope_parameters\": "
                        "{\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": "
                        "10000.0}},"),
                   "config.json:21:3: 'rope_local_base_freq' is 20000.0, the sliding layers' "
                   "rope_theta in 'rope_parameters' 10000.0: the two formats disagree\n");
    expect_problem(dir,
                   with(config, "\"hidden_activation\": \"gelu_pytorch_tanh\"",
                        "\"hidden_activation\": \"relu\""),
                   "config.json:15:3: 'hidden_activation' is \"relu\": Gemma's MLP is GeGLU, "
                   "attnscope computes it with gelu's tanh form (gelu_pytorch_tanh)\n");
    expect_problem(
        dir,
        with(config, "\"tie_word_embeddings\": false,",
             "\"tie_word_embeddings\": false,\n  \"use_bidirectional_attention\": true,"),
        "config.json:27:3: 'use_bidirectional_attention' is true: bidirectional "
        "attention (EmbeddingGemma's) is not something attnscope computes\n");
    free(config);
    tu_remove_tree(dir);
    free(dir);
}

/* Qwen2-MoE's config (gen_families.py's qwen2-moe) with one change each: the mixture's keys
 * read and checked, plain-MLP layers refused. */
static void test_moe_keys(void **state)
{
    (void)state;
    char *dir, *config = family_config(&dir, "qwen2-moe");
    struct loaded r;
    load_clean(&r, dir, config);
    assert_int_equal(r.s.block.n_experts, 6);
    assert_int_equal(r.s.block.top_k, 2);
    assert_false(r.s.block.norm_topk);
    assert_int_equal(r.s.block.ffn_hidden, 16);
    assert_int_equal(r.s.block.shared_hidden, 40);
    assert_non_null(r.s.weights.experts);
    loaded_free(&r);
    expect_problem(dir, with(config, "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 7"),
                   "config.json:18:3: 'num_experts_per_tok' (the experts a token takes) is 7: "
                   "attnscope runs at most 6 (out of range)\n");
    expect_problem(
        dir, with(config, "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2"),
        "config.json:24:3: 'decoder_sparse_step' is 2: layers of a plain MLP between the "
        "mixtures are not something attnscope computes\n");
    expect_problem(dir, with(config, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [1]"),
                   "config.json:25:3: 'mlp_only_layers' is [1]: layers of a plain MLP between the "
                   "mixtures are not something attnscope computes\n");
    free(config);
    tu_remove_tree(dir);
    free(dir);
}

/* A scene of two sequences on an encoder-decoder of tests/golden/seq2seq (gen_seq2seq.py: t5,
 * bart, marian), its checkpoint in dir, with config (changed), into r. */
static void load_seq2seq(struct loaded *r, const char *dir, const char *name, const char *config)
{
    char tok[4200]; /* Marian's: opus-mt's files (source.spm, ...), named by their folder */
    snprintf(tok, sizeof(tok), "{kind: hf, file: %s/seq2seq/%s%s}", golden(), name,
             strcmp(name, "marian") == 0 ? "" : "/tokenizer.json");
    load_scene(r, dir, config, "{source: \"the small dog sees the red ball\", target: \"dovi\"}",
               tok);
}

/* The one problem config has, exactly, on the encoder-decoder name. */
static void expect_seq2seq_problem(const char *dir, const char *name, const char *config,
                                   const char *want)
{
    struct loaded r;
    load_seq2seq(&r, dir, name, config);
    if (r.ok || strcmp(r.problems, want) != 0)
        fail_msg("config:\n%s\nexpected the problem\n%sgot\n%s", config, want,
                 r.ok ? "(loaded)\n" : r.problems);
    loaded_free(&r);
}

/* T5's, BART's and Marian's configs (gen_seq2seq.py's), each read whole, then with one change
 * each: what they compute (the stacks, the position bias, the positions) and what they refuse,
 * at the key. */
static void test_seq2seq_keys(void **state)
{
    (void)state;
    char *dir, *config = golden_config(&dir, "seq2seq", "t5");
    struct loaded r;
    load_seq2seq(&r, dir, "t5", config);
    if (!r.ok)
        fail_msg("t5 did not load:\n%s", r.problems);
    assert_non_null(r.s.encoder);
    assert_int_equal(r.s.layers, 4); /* two decoder layers, two sublayers each */
    assert_int_equal(r.s.sublayer[0], SUB_SELF);
    assert_int_equal(r.s.sublayer[1], SUB_CROSS);
    assert_int_equal(r.s.encoder->layers, 2);
    assert_int_equal(r.s.pos.rel.buckets, 8);
    assert_false(r.s.pos.rel.bidirectional);
    assert_true(r.s.encoder->pos.rel.bidirectional);
    assert_true(r.s.unembed_scale == 1.0 / sqrt(32.0)); /* tied: d_model^-0.5 */
    assert_int_equal(r.s.token_ids[0], 0);              /* decoder_start_token_id */
    assert_int_equal(r.s.encoder->token_ids[r.s.encoder->n_tokens - 1], 1); /* </s> */
    assert_string_equal(r.warnings, "");
    loaded_free(&r);
    expect_seq2seq_problem(dir, "t5",
                           with(config, "\"relative_attention_num_buckets\": 8",
                                "\"relative_attention_num_buckets\": 2"),
                           "config.json:23:3: 'relative_attention_num_buckets' 2: T5's buckets "
                           "need at least 4 (an exact one a side)\n");
    expect_seq2seq_problem(dir, "t5",
                           with(config, "\"relative_attention_max_distance\": 16",
                                "\"relative_attention_max_distance\": 3"),
                           "config.json:22:3: 'relative_attention_max_distance' 3 is not past the "
                           "4 exact buckets: the logarithmic ones would have no room\n");
    expect_seq2seq_problem(
        dir, "t5", with(config, "\"dense_act_fn\": \"relu\"", "\"dense_act_fn\": \"gelu\""),
        "config.json:9:3: 'dense_act_fn' is \"gelu\", but 'feed_forward_proj' relu makes it "
        "\"relu\"\n");
    expect_seq2seq_problem(
        dir, "t5",
        with(config, "\"feed_forward_proj\": \"relu\"", "\"feed_forward_proj\": \"gated-relu\""),
        "config.json:12:3: 'feed_forward_proj' is \"gated-relu\": attnscope "
        "computes relu, gelu, gelu_new, gated-gelu and gated-silu\n");
    expect_seq2seq_problem(
        dir, "t5", with(config, "\"is_encoder_decoder\": true", "\"is_encoder_decoder\": false"),
        "config.json:14:3: 'is_encoder_decoder' is false: T5's encoder alone (T5EncoderModel) "
        "is not something attnscope reads\n");
    free(config);
    tu_remove_tree(dir);
    free(dir);

    config = golden_config(&dir, "seq2seq", "bart");
    load_seq2seq(&r, dir, "bart", config);
    if (!r.ok)
        fail_msg("bart did not load:\n%s", r.problems);
    assert_int_equal(r.s.pos.offset, 2); /* BartLearnedPositionalEmbedding's */
    assert_int_equal(r.s.block.order, BLOCK_POST);
    assert_int_equal(r.s.model.positions, 66); /* every one of the 64 positions usable */
    assert_non_null(r.s.unembed_bias.data);    /* final_logits_bias */
    assert_int_equal(r.s.token_ids[0], 2);     /* decoder_start_token_id: </s> */
    loaded_free(&r);
    expect_seq2seq_problem(
        dir, "bart",
        with(config, "\"activation_function\": \"gelu\"", "\"activation_function\": \"tanh\""),
        "config.json:3:3: 'activation_function' is \"tanh\": attnscope "
        "computes gelu, gelu_new, relu and swish\n");
    free(config);
    tu_remove_tree(dir);
    free(dir);

    config = golden_config(&dir, "seq2seq", "marian");
    load_seq2seq(&r, dir, "marian", config);
    if (!r.ok)
        fail_msg("marian did not load:\n%s", r.problems);
    assert_true(r.s.embed.scale == sqrt(32.0)); /* scale_embedding */
    assert_int_equal(r.s.pos.offset, 0);
    assert_int_equal(r.s.block.activation, ACT_SILU);
    assert_string_equal(r.warnings, "");
    /* the estimates count the encoder, computed whole beside the decoder, and the cross layers'
       keys over the source (16 tokens, more than the target's) */
    struct attn_scene *enc = r.s.encoder;
    size_t mem = attn_scene_mem_estimate(&r.s), enc_mem = attn_scene_mem_estimate(enc);
    double flops = attn_scene_flops(&r.s), enc_flops = attn_scene_flops(enc);
    r.s.encoder = NULL;
    size_t dec_mem = attn_scene_mem_estimate(&r.s);
    double dec_flops = attn_scene_flops(&r.s);
    r.s.encoder = enc;
    assert_true(enc->n_tokens > r.s.n_tokens);
    assert_true(mem > dec_mem + (enc_mem - enc->model.widened));
    assert_true(flops > dec_flops + enc_flops);
    loaded_free(&r);
    /* a file that kept the encoder's name of the tied embeddings and not shared's: read from it,
     * the same numbers (read before the file is rewritten: the scene maps it) */
    load_seq2seq(&r, dir, "marian", config);
    assert_true(r.ok);
    assert_non_null(r.s.embed.rows.lazy); /* BF16: widened as read */
    assert_int_equal(r.s.embed.rows.cols, 32);
    int rows = r.s.embed.rows.rows;
    float *want = malloc((size_t)rows * 32 * sizeof(float)), got[32];
    assert_non_null(want);
    r.s.backing->read_rows(r.s.backing, r.s.embed.rows.lazy, want, 0, (size_t)rows);
    loaded_free(&r);
    rename_tensor(dir, "model.shared.weight", "model.encoder.embed_tokens.weight");
    load_seq2seq(&r, dir, "marian", config);
    if (!r.ok)
        fail_msg("marian with encoder.embed_tokens did not load:\n%s", r.problems);
    assert_int_equal(r.s.embed.rows.rows, rows);
    for (int row = 0; row < rows; row++) {
        r.s.backing->read_rows(r.s.backing, r.s.embed.rows.lazy, got, (size_t)row, 1);
        assert_memory_equal(got, want + (size_t)row * 32, sizeof(got));
    }
    free(want);
    loaded_free(&r);
    /* opus-mt's configs carry the keys of fairseq's conversion: inert, without a warning */
    char *legacy = with(config, "\"activation_dropout\": 0.0,",
                        "\"activation_dropout\": 0.0,\n  \"add_bias_logits\": false,\n"
                        "  \"add_final_layer_norm\": false,\n  \"extra_pos_embeddings\": 90,\n"
                        "  \"normalize_before\": false,\n  \"normalize_embedding\": false,\n"
                        "  \"static_position_embeddings\": true,");
    load_seq2seq(&r, dir, "marian", legacy);
    if (!r.ok)
        fail_msg("marian with opus-mt's keys did not load:\n%s", r.problems);
    assert_string_equal(r.warnings, "");
    loaded_free(&r);
    expect_seq2seq_problem(dir, "marian",
                           with(config, "\"share_encoder_decoder_embeddings\": true",
                                "\"share_encoder_decoder_embeddings\": false"),
                           "config.json:29:3: 'share_encoder_decoder_embeddings' is false: a "
                           "decoder vocabulary of its own is not something attnscope reads\n");
    free(config);
    tu_remove_tree(dir);
    free(dir);
}

/* A config.json of pythia-par's sizes (head_dim 16), one key a line, extra before the last. */
static char *neox_config(const char *extra)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\n"
             "  \"architectures\": [\"GPTNeoXForCausalLM\"],\n"
             "  \"model_type\": \"gpt_neox\",\n"
             "  \"vocab_size\": 407,\n"
             "  \"hidden_size\": 64,\n"
             "  \"num_hidden_layers\": 2,\n"
             "  \"num_attention_heads\": 4,\n"
             "  \"intermediate_size\": 96,\n"
             "  \"use_parallel_residual\": true,\n"
             "%s"
             "  \"max_position_embeddings\": 64\n"
             "}\n",
             extra);
    return buf;
}

/* GPT-NeoX's keys: its names of RoPE's base and share (4's) against rope_parameters (5's), the
 * share turned into whole pairs, and what the model does not compute. */
static void test_neox_keys(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("ckpt-neox");
    copy_model(dir, "families/pythia-par/model.safetensors");
    struct loaded r;
    /* 4's names, then 5's: a quarter of 16 dimensions turns, on base 10000 */
    const char *ok[] = {"  \"rotary_pct\": 0.25, \"rotary_emb_base\": 10000,\n",
                        "  \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": "
                        "10000.0, \"partial_rotary_factor\": 0.25},\n",
                        ""}; /* the defaults */
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        load(&r, dir, neox_config(ok[i]));
        if (!r.ok)
            fail_msg("%s did not load:\n%s", ok[i], r.problems);
        assert_string_equal(r.warnings, "");
        assert_int_equal(r.s.pos.kind, POS_ROPE);
        assert_int_equal(r.s.pos.rotary_dims, 4);
        assert_true(r.s.pos.base == 10000.0);
        assert_int_equal(r.s.block.order, BLOCK_PARALLEL);
        assert_int_equal(r.s.attn.qkv, QKV_FUSED_HEADS);
        loaded_free(&r);
    }
    /* the whole head: rotary_dims 0, RoPE as Llama's */
    load(&r, dir,
         with(neox_config("  \"rotary_pct\": 1.0,\n"), "\"use_parallel_residual\": true",
              "\"use_parallel_residual\": false"));
    assert_true(r.ok);
    assert_int_equal(r.s.pos.rotary_dims, 0);
    assert_int_equal(r.s.block.order, BLOCK_PRE);
    loaded_free(&r);
    expect_problem(dir,
                   neox_config("  \"rotary_pct\": 0.25,\n  \"rope_parameters\": {\"rope_type\": "
                               "\"default\", \"partial_rotary_factor\": 0.5},\n"),
                   "config.json:11:47: 'rope_parameters' has partial_rotary_factor 0.5, the "
                   "top-level 'rotary_pct' 0.25: the two formats disagree\n");
    expect_problem(dir, neox_config("  \"rotary_pct\": 0.2,\n"),
                   "config.json:10:3: RoPE over 0.2 of a head of 16 turns 3 dimensions: it turns "
                   "pairs, so it needs an even number of at least 2\n");
    expect_problem(dir, neox_config("  \"rotary_pct\": 1.5,\n"),
                   "config.json:10:3: 'rotary_pct' is 1.5, not a share of a head above 0 and up "
                   "to 1\n");
    expect_problem(dir, neox_config("  \"hidden_act\": \"silu\",\n"),
                   "config.json:10:3: 'hidden_act' is \"silu\": attnscope computes gelu, "
                   "gelu_new, gelu_pytorch_tanh and relu\n");
    expect_problem(
        dir,
        with(neox_config(""), "\"use_parallel_residual\": true", "\"use_parallel_residual\": 1"),
        "config.json:9:3: 'use_parallel_residual' is 1, not true or false\n");
    expect_warnings(dir, neox_config("  \"rotary_emb_fraction\": 0.5,\n"),
                    "config.json:10:3: unknown key 'rotary_emb_fraction' (not in transformers' "
                    "GPTNeoXConfig): attnscope ignores it\n");
    tu_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_tables),   cmocka_unit_test(test_rope_formats),
        cmocka_unit_test(test_rope_types),   cmocka_unit_test(test_windows),
        cmocka_unit_test(test_positions),    cmocka_unit_test(test_gpt2_keys),
        cmocka_unit_test(test_bert_keys),    cmocka_unit_test(test_neox_keys),
        cmocka_unit_test(test_olmo2_keys),   cmocka_unit_test(test_phi3_keys),
        cmocka_unit_test(test_gemma_keys),   cmocka_unit_test(test_moe_keys),
        cmocka_unit_test(test_seq2seq_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
