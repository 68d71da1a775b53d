/* test_gpt2: the gpt2 name mapping on checkpoints made here, each with one thing wrong.
 *
 * A one-layer GPT-2 of width 4 is written as safetensors (with config.json beside it) and
 * loaded through a scene file, the way a user's is; the tiny vocabulary of tests/golden/gpt2
 * tokenizes. A missing tensor, a tensor GPT-2 does not have, a wrong shape and a bad config
 * must each be refused with the tensor (or key) named; the buffers some exports carry are
 * ignored. The unembedding is wte unless config.json says tie_word_embeddings: false; then it is
 * lm_head.weight, which must be there with wte's shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/net.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

#define D     4
#define VOCAB 407 /* the tiny vocabulary's size */

struct tensor {
    char name[64];
    int rows, cols; /* rows 0: a vector of cols */
};

static int n_tensors;
static struct tensor tensors[32];

static void add(const char *name, int rows, int cols)
{
    struct tensor *t = &tensors[n_tensors++];
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->rows = rows;
    t->cols = cols;
}

/* A valid one-layer checkpoint's tensors (prefix "" or "transformer."). */
static void gpt2_tensors(const char *p)
{
    char n[64];
    n_tensors = 0;
#define ADD(name, r, c) (snprintf(n, sizeof(n), "%s%s", p, name), add(n, r, c))
    ADD("wte.weight", VOCAB, D);
    ADD("wpe.weight", 16, D);
    ADD("h.0.ln_1.weight", 0, D);
    ADD("h.0.ln_1.bias", 0, D);
    ADD("h.0.attn.c_attn.weight", D, 3 * D);
    ADD("h.0.attn.c_attn.bias", 0, 3 * D);
    ADD("h.0.attn.c_proj.weight", D, D);
    ADD("h.0.attn.c_proj.bias", 0, D);
    ADD("h.0.ln_2.weight", 0, D);
    ADD("h.0.ln_2.bias", 0, D);
    ADD("h.0.mlp.c_fc.weight", D, 4 * D);
    ADD("h.0.mlp.c_fc.bias", 0, 4 * D);
    ADD("h.0.mlp.c_proj.weight", 4 * D, D);
    ADD("h.0.mlp.c_proj.bias", 0, D);
    ADD("ln_f.weight", 0, D);
    ADD("ln_f.bias", 0, D);
#undef ADD
}

static void remove_tensor(const char *name)
{
    for (int i = 0; i < n_tensors; i++)
        if (strcmp(tensors[i].name, name) == 0) {
            tensors[i] = tensors[--n_tensors];
            return;
        }
    fail_msg("no tensor %s to remove", name);
}

/* Writes dir/model.safetensors (F32, values 0.01 * index) and dir/config.json. */
static void write_checkpoint(const char *dir, const char *config)
{
    char header[8192] = "{";
    size_t off = 0;
    for (int i = 0; i < n_tensors; i++) {
        const struct tensor *t = &tensors[i];
        size_t count = (size_t)(t->rows ? t->rows : 1) * (size_t)t->cols;
        char shape[32];
        if (t->rows)
            snprintf(shape, sizeof(shape), "[%d, %d]", t->rows, t->cols);
        else
            snprintf(shape, sizeof(shape), "[%d]", t->cols);
        snprintf(header + strlen(header), sizeof(header) - strlen(header),
                 "%s\"%s\": {\"dtype\": \"F32\", \"shape\": %s, \"data_offsets\": [%zu, %zu]}",
                 i ? ", " : "", t->name, shape, off, off + 4 * count);
        off += 4 * count;
    }
    strcat(header, "}");
    while (strlen(header) % 8)
        strcat(header, " ");
    char path[4200];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t n = strlen(header);
    fwrite(&n, 8, 1, f); /* little-endian host */
    fwrite(header, 1, n, f);
    for (size_t i = 0; i < off / 4; i++) {
        float v = 0.01f * (float)(i % 97) - 0.4f;
        fwrite(&v, 4, 1, f);
    }
    assert_int_equal(fclose(f), 0);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    tu_write_text(path, config);
}

static const char *const good_config =
    "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, \"vocab_size\": 407,"
    " \"layer_norm_epsilon\": 1e-05, \"activation_function\": \"gelu_new\", \"n_inner\": null}";

/* Loads a scene on dir's checkpoint; returns the problems' text ("" when it loaded). */
static char *load(const char *dir, struct attn_net *net)
{
    const char *golden = getenv("ATTNSCOPE_GOLDEN_DIR");
    char scene[4200], text[9000];
    snprintf(scene, sizeof(scene), "%s/scene.yaml", dir);
    snprintf(text, sizeof(text),
             "text: the cat sat\n"
             "tokenizer: {kind: gpt2, vocab: %s/gpt2/vocab.json, merges: %s/gpt2/merges.txt}\n"
             "model: {file: model.safetensors, arch: gpt2}\n",
             golden ? golden : "tests/golden", golden ? golden : "tests/golden");
    tu_write_text(scene, text);
    struct attn_scene s;
    struct diag_list errs;
    diag_list_init(&errs);
    char *out = calloc(1, 4096);
    assert_non_null(out);
    if (scenefile_load(&s, scene, &errs, NULL, NULL) != 0) {
        for (int i = 0; i < errs.n; i++)
            snprintf(out + strlen(out), 4096 - strlen(out), "%s\n", errs.items[i].msg);
    } else if (net) {
        struct diag err;
        diag_clear(&err);
        assert_int_equal(attn_net_compute(net, &s, &err), 0);
    }
    if (!errs.n)
        attn_scene_free(&s);
    diag_list_free(&errs);
    return out;
}

static void expect_refused(const char *dir, const char *want)
{
    char *got = load(dir, NULL);
    if (!strstr(got, want))
        fail_msg("expected '%s', got '%s'", want, got);
    free(got);
}

static void test_good_and_prefixed(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-good");
    gpt2_tensors("");
    write_checkpoint(dir, good_config);
    struct attn_net net = {0};
    char *got = load(dir, &net);
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(net.layers, 1);
    assert_int_equal(net.model[0].heads, 2);
    assert_int_equal(net.model[0].d_in, D);
    assert_true(net.model[0].final_norm);
    attn_net_free(&net);

    /* transformer. prefix, the attention buffers and the tied LM head: all fine */
    gpt2_tensors("transformer.");
    add("transformer.h.0.attn.bias", 1, 16 * 16);
    add("transformer.h.0.attn.masked_bias", 0, 1);
    add("lm_head.weight", VOCAB, D);
    write_checkpoint(dir, good_config);
    got = load(dir, NULL);
    assert_string_equal(got, "");
    free(got);
    tu_remove_tree(dir);
    free(dir);
}

/* The value write_checkpoint gives element i of tensor t (its floats counted from the start). */
static float value_at(int t, size_t i)
{
    size_t off = 0;
    for (int k = 0; k < t; k++)
        off += (size_t)(tensors[k].rows ? tensors[k].rows : 1) * (size_t)tensors[k].cols;
    return 0.01f * (float)((off + i) % 97) - 0.4f;
}

static const char *const untied_config =
    "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, \"vocab_size\": 407,"
    " \"tie_word_embeddings\": false}";

/* Tied (the default): the unembedding is wte. Untied: lm_head.weight, required, wte's shape. */
static void test_unembedding(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-lm-head");
    gpt2_tensors("");
    add("lm_head.weight", VOCAB, D);
    int lm = n_tensors - 1;
    write_checkpoint(dir, good_config); /* tied: lm_head is there, and wte is used */
    struct attn_net net = {0};
    char *got = load(dir, &net);
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(net.model[0].vocab, VOCAB);
    for (size_t i = 0; i < 12; i++)
        assert_true(net.model[0].unembed[i] == value_at(0, i)); /* wte is tensor 0 */
    attn_net_free(&net);

    write_checkpoint(dir, untied_config);
    got = load(dir, &net);
    assert_string_equal(got, "");
    free(got);
    for (size_t i = 0; i < 12; i++)
        assert_true(net.model[0].unembed[i] == value_at(lm, i));
    assert_true(net.model[0].unembed[0] != value_at(0, 0));
    attn_net_free(&net);

    remove_tensor("lm_head.weight");
    write_checkpoint(dir, untied_config);
    expect_refused(dir, "config.json says tie_word_embeddings: false, but the checkpoint has no "
                        "lm_head.weight to unembed with");
    add("lm_head.weight", D, VOCAB);
    write_checkpoint(dir, untied_config);
    expect_refused(dir, "tensor 'lm_head.weight' has shape [4, 407], expected [407, 4]");
    tu_remove_tree(dir);
    free(dir);
}

static void test_refused(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-bad");
    gpt2_tensors("");
    remove_tensor("h.0.ln_2.bias");
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.0.ln_2.bias' is missing (arch gpt2)");

    gpt2_tensors("");
    add("h.0.attn.rotary_emb", 0, 8);
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.0.attn.rotary_emb' is not part of GPT-2 (arch gpt2)");

    gpt2_tensors("");
    add("h.1.ln_1.weight", 0, D); /* a second layer the config does not have */
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.1.ln_1.weight' is not part of GPT-2");

    gpt2_tensors("");
    remove_tensor("h.0.mlp.c_fc.weight");
    add("h.0.mlp.c_fc.weight", 4 * D, D); /* nn.Linear's (out, in), not Conv1D's (in, out) */
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.0.mlp.c_fc.weight' has shape [16, 4], expected [4, 16]");

    gpt2_tensors("");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4}");
    expect_refused(dir, "'n_positions' must be a positive integer");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_head\": 3}");
    expect_refused(dir, "duplicate object key");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, "
                          "\"activation_function\": \"swish\"}");
    expect_refused(dir, "activation_function 'swish' is not one attnscope has");
    tu_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_and_prefixed),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_unembedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
