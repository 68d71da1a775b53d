/* test_gpt2: the gpt2 name mapping on checkpoints made here, each with one thing wrong.
 *
 * A one-layer GPT-2 of width 4 is written as safetensors (with config.json beside it) and
 * loaded through a scene file, the way a user's is; the tiny vocabulary of tests/golden/gpt2
 * tokenizes. A missing tensor, a tensor GPT-2 does not have, a wrong shape and a bad config
 * must each be refused with the tensor (or key) named; the buffers some exports carry are
 * ignored. The unembedding is wte unless config.json says tie_word_embeddings: false; then it is
 * lm_head.weight, which must be there with wte's shape.
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/net.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

#define D     4
#define VOCAB 407 /* the tiny vocabulary's size */

struct tensor {
    char name[64];
    int rows, cols; /* rows 0: a vector of cols */
    bool f16;       /* written as F16 (widened when loaded), else F32 */
};

static int n_tensors;
static struct tensor tensors[32];
/* One value written in place of another (a nan, an inf), or none. */
static const char *poison_name;
static size_t poison_at;
static float poison_value;
/* A name written in the header in place of the first tensor's, when set (100 kB long). */
static const char *long_name;

static void add(const char *name, int rows, int cols)
{
    struct tensor *t = &tensors[n_tensors++];
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->rows = rows;
    t->cols = cols;
    t->f16 = false;
}

/* A valid one-layer checkpoint's tensors (prefix "" or "transformer."), of width d with a
 * feed-forward of inner and positions rows of positions. */
static void gpt2_tensors_of(const char *p, int d, int inner, int positions)
{
    char n[64];
    n_tensors = 0;
    poison_name = NULL;
    long_name = NULL;
#define ADD(name, r, c) (snprintf(n, sizeof(n), "%s%s", p, name), add(n, r, c))
    ADD("wte.weight", VOCAB, d);
    ADD("wpe.weight", positions, d);
    ADD("h.0.ln_1.weight", 0, d);
    ADD("h.0.ln_1.bias", 0, d);
    ADD("h.0.attn.c_attn.weight", d, 3 * d);
    ADD("h.0.attn.c_attn.bias", 0, 3 * d);
    ADD("h.0.attn.c_proj.weight", d, d);
    ADD("h.0.attn.c_proj.bias", 0, d);
    ADD("h.0.ln_2.weight", 0, d);
    ADD("h.0.ln_2.bias", 0, d);
    ADD("h.0.mlp.c_fc.weight", d, inner);
    ADD("h.0.mlp.c_fc.bias", 0, inner);
    ADD("h.0.mlp.c_proj.weight", inner, d);
    ADD("h.0.mlp.c_proj.bias", 0, d);
    ADD("ln_f.weight", 0, d);
    ADD("ln_f.bias", 0, d);
#undef ADD
}

static void gpt2_tensors(const char *p)
{
    gpt2_tensors_of(p, D, 4 * D, 16);
}

static struct tensor *find_tensor(const char *name)
{
    for (int i = 0; i < n_tensors; i++)
        if (strcmp(tensors[i].name, name) == 0)
            return &tensors[i];
    fail_msg("no tensor %s", name);
    return NULL;
}

/* IEEE half of a float that has one exactly (the test's values, inf and nan). */
static uint16_t to_f16(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    uint16_t sign = (uint16_t)(b >> 16 & 0x8000u);
    int exp = (int)(b >> 23 & 0xff);
    uint32_t man = b & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    if (v == 0)
        return sign;
    int e = exp - 127 + 15;
    if (e <= 0) /* a subnormal half */
        return (uint16_t)(sign | ((man | 0x800000u) >> (14 - e)));
    return (uint16_t)(sign | e << 10 | man >> 13);
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

/* Writes dir/model.safetensors (F32 or F16, values 0.01 * index) and dir/config.json. */
static void write_checkpoint(const char *dir, const char *config)
{
    size_t cap = 256 * 1024;
    char *header = calloc(1, cap);
    assert_non_null(header);
    strcat(header, "{");
    size_t off = 0;
    for (int i = 0; i < n_tensors; i++) {
        const struct tensor *t = &tensors[i];
        size_t count = (size_t)(t->rows ? t->rows : 1) * (size_t)t->cols;
        char shape[32];
        if (t->rows)
            snprintf(shape, sizeof(shape), "[%d, %d]", t->rows, t->cols);
        else
            snprintf(shape, sizeof(shape), "[%d]", t->cols);
        size_t esize = t->f16 ? 2 : 4;
        snprintf(header + strlen(header), cap - strlen(header),
                 "%s\"%s\": {\"dtype\": \"%s\", \"shape\": %s, \"data_offsets\": [%zu, %zu]}",
                 i ? ", " : "", i == 0 && long_name ? long_name : t->name, t->f16 ? "F16" : "F32",
                 shape, off, off + esize * count);
        off += esize * count;
        off = (off + 3) / 4 * 4; /* the next tensor 4-byte aligned: F32 ones read in place */
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
    size_t at = 0;
    for (int i = 0; i < n_tensors; i++) {
        const struct tensor *t = &tensors[i];
        size_t count = (size_t)(t->rows ? t->rows : 1) * (size_t)t->cols;
        for (size_t j = 0; j < count; j++) {
            float v = 0.01f * (float)((at + j) % 97) - 0.4f;
            if (poison_name && strcmp(poison_name, t->name) == 0 && j == poison_at)
                v = poison_value;
            if (t->f16) {
                uint16_t h = to_f16(v);
                fwrite(&h, 2, 1, f);
            } else {
                fwrite(&v, 4, 1, f);
            }
        }
        at += count;
        size_t pad = (4 - (t->f16 ? 2 * count : 4 * count) % 4) % 4;
        for (size_t j = 0; j < pad; j++)
            fputc(0, f);
    }
    assert_int_equal(fclose(f), 0);
    free(header);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    tu_write_text(path, config);
}

static const char *const good_config =
    "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, \"vocab_size\": 407,"
    " \"layer_norm_epsilon\": 1e-05, \"activation_function\": \"gelu_new\", \"n_inner\": null}";

/* Loads a scene on dir's checkpoint; returns the problems as "file:line:col: message" lines
 * ("" when it loaded), the file's folder left out. */
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
    attn_diag_list_init(&errs);
    char *out = calloc(1, 4096);
    assert_non_null(out);
    if (attn_scenefile_load(&s, scene, &errs, NULL, NULL) != 0) {
        for (int i = 0; i < errs.n; i++) {
            const struct diag *d = &errs.items[i];
            const char *base = strrchr(d->file, '/') ? strrchr(d->file, '/') + 1 : d->file;
            snprintf(out + strlen(out), 4096 - strlen(out), "%s:%d:%d: %s\n", base, d->line, d->col,
                     d->msg);
        }
    } else if (net) {
        struct diag err;
        attn_diag_clear(&err);
        assert_int_equal(attn_net_compute(net, &s, &err), 0);
    }
    if (!errs.n)
        attn_scene_free(&s);
    attn_diag_list_free(&errs);
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
    add("h.00.ln_1.weight", 0, D); /* layer 0 as %d does not write it */
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.00.ln_1.weight' is not part of GPT-2");

    gpt2_tensors("");
    remove_tensor("h.0.mlp.c_fc.weight");
    add("h.0.mlp.c_fc.weight", 4 * D, D); /* nn.Linear's (out, in), not Conv1D's (in, out) */
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.0.mlp.c_fc.weight' has shape [16, 4], expected [4, 16]");

    gpt2_tensors("");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4}");
    expect_refused(dir, "config.json:0:0: 'n_positions' (positions) is missing\n");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_head\": 3}");
    expect_refused(dir, "duplicate object key");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, "
                          "\"activation_function\": \"swish\"}");
    expect_refused(dir, "config.json:1:61: 'activation_function' \"swish\" is not one attnscope "
                        "has");
    tu_remove_tree(dir);
    free(dir);
}

/* config.json's vocab_size is wte's rows, as every family checks (family.c's prologue): a
 * vocabulary that disagrees with the tensors is refused, naming both, before any is read. */
static void test_vocab_size(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-vocab");
    gpt2_tensors("");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, "
                          "\"vocab_size\": 50257}");
    char *got = load(dir, NULL);
    assert_string_equal(got, "scene.yaml:3:15: model.safetensors: tensor 'wte.weight' has 407 "
                             "rows, but config.json says vocab_size 50257\n");
    free(got);
    gpt2_tensors("transformer.");
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, "
                          "\"vocab_size\": 406}");
    got = load(dir, NULL);
    assert_string_equal(got, "scene.yaml:3:15: model.safetensors: tensor 'transformer.wte.weight' "
                             "has 407 rows, but config.json says vocab_size 406\n");
    free(got);
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16,\n"
                          " \"vocab_size\": \"407\"}");
    got = load(dir, NULL);
    assert_string_equal(got, "config.json:2:2: 'vocab_size' (the vocabulary) is \"407\", not an "
                             "integer\n");
    free(got);
    tu_remove_tree(dir);
    free(dir);
}

/* config.json's values: each problem at config.json, on its key's line, and alone (no
 * follow-on problem of the scene); every limit refused before the checkpoint is opened. */
static void test_config_values(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-config");
    gpt2_tensors("");
    static const struct {
        const char *config, *want;
    } cases[] = {
        {"{\"n_head\": 2,\n \"n_layer\": 1000000,\n \"n_embd\": 4, \"n_positions\": 16}",
         "config.json:2:2: 'n_layer' (layers) is 1000000: attnscope runs at most 128 (out of "
         "range)\n"},
        {"{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4104, \"n_positions\": 16}",
         "config.json:1:29: 'n_embd' (the width) is 4104: attnscope runs at most 4096 (out of "
         "range)\n"},
        {"{\"n_head\": 0, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16}",
         "config.json:1:2: 'n_head' (heads) is 0: it must be at least 1\n"},
        {"{\"n_head\": 3, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16}",
         "config.json:1:2: 'n_head' 3 does not divide 'n_embd' 4\n"},
        {"{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 1e3}",
         "config.json:1:42: 'n_positions' (positions) is 1000.0, not an integer\n"},
        {"{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16,\n"
         "  \"layer_norm_epsilon\": \"abc\"}",
         "config.json:2:3: 'layer_norm_epsilon' is \"abc\", not a number between 0 and 1 "
         "(GPT-2's is 1e-05)\n"},
        {"{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, \"n_inner\": -1}",
         "config.json:1:61: 'n_inner' (the feed-forward width) is -1: it must be at least 1\n"},
        {"{\"n_head\": 2,\n\"n_layer\": 1,,}", "config.json:2:14: not valid JSON: string or '}' "
                                               "expected near ','\n"},
        {"[1, 2]", "config.json:0:0: not a JSON object of the model's sizes\n"},
        {"", "config.json:1:0: not valid JSON"},
        /* A byte order mark is said for what it is (Hugging Face's readers refuse it too). */
        {"\xEF\xBB\xBF{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16}",
         "config.json:1:1: the file starts with a byte order mark (<U+FEFF>), which JSON does not "
         "allow (Hugging Face's readers refuse it too); save it as UTF-8 without one\n"},
        /* jansson's quote of the bytes near a problem is escaped. */
        {"{\"n_head\": 2\xE2\x80\xAE}",
         "config.json:1:13: not valid JSON: '}' expected near '<U+202E>'\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_checkpoint(dir, cases[i].config);
        char *got = load(dir, NULL);
        if (strncmp(got, cases[i].want, strlen(cases[i].want)) != 0 ||
            strchr(got, '\n') != got + strlen(got) - 1)
            fail_msg("config %s:\nexpected only '%s', got '%s'", cases[i].config, cases[i].want,
                     got);
        free(got);
    }
    /* No config.json at all: that one problem, not a follow-on "view.layer 1: the scene has 1
       layer"; nor ":-1:-1". */
    char path[4200];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    unlink(path);
    char *got = load(dir, NULL);
    assert_string_equal(got, "config.json:0:0: cannot open: No such file or directory (config.json "
                             "beside the checkpoint gives its sizes)\n");
    free(got);
    /* Over 64 MiB (a sparse file: the size is refused before a byte is read). */
    tu_write_text(path, "{");
    assert_int_equal(truncate(path, (off_t)65 << 20), 0);
    expect_refused(dir, "config.json:0:0: file is too large (68157440 bytes, the limit is "
                        "67108864)");
    unlink(path);
    /* Not a regular file: /dev/zero, a FIFO (without waiting for a writer). */
    assert_int_equal(symlink("/dev/zero", path), 0);
    expect_refused(dir, "config.json:0:0: not a regular file (a character device)");
    unlink(path);
    assert_int_equal(mkfifo(path, 0644), 0);
    expect_refused(dir, "config.json:0:0: not a regular file (a FIFO)");
    unlink(path);
    tu_remove_tree(dir);
    free(dir);
}

/* Dimensions of 1 are matrices of one row or column, never vectors: n_inner 1, n_embd 1. */
static void test_dimensions_of_one(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-ones");
    gpt2_tensors_of("", D, 1, 16);
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 16, "
                          "\"n_inner\": 1}");
    struct attn_net net = {0};
    char *got = load(dir, &net);
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(net.model[0].hidden, 1);
    attn_net_free(&net);
    gpt2_tensors_of("", 1, 1, 16);
    write_checkpoint(dir, "{\"n_head\": 1, \"n_layer\": 1, \"n_embd\": 1, \"n_positions\": 16, "
                          "\"n_inner\": 1}");
    got = load(dir, &net);
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(net.model[0].d_in, 1);
    attn_net_free(&net);
    gpt2_tensors_of("", D, 4 * D, 1); /* one position: 3 tokens do not fit */
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": 1}");
    expect_refused(dir, "3 tokens, but the checkpoint has 1 positions (n_positions)");
    tu_remove_tree(dir);
    free(dir);
}

/* nan or inf anywhere in a tensor: refused at load, naming the tensor and the first bad value,
 * as an .npy matrix is (F32 read in place and F16 widened alike). */
static void test_non_finite(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-nan");
    gpt2_tensors("");
    poison_name = "h.0.attn.c_attn.weight";
    poison_at = 2 * 12 + 5;
    poison_value = NAN;
    write_checkpoint(dir, good_config);
    expect_refused(dir, "model.safetensors: tensor 'h.0.attn.c_attn.weight': value [2, 5] of "
                        "[4, 12] is nan, not a finite number");
    gpt2_tensors("");
    poison_name = "ln_f.bias";
    poison_at = 3;
    poison_value = -INFINITY;
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'ln_f.bias': value [3] is -inf, not a finite number");
    gpt2_tensors("");
    find_tensor("h.0.mlp.c_proj.weight")->f16 = true;
    poison_name = "h.0.mlp.c_proj.weight";
    poison_at = 7;
    poison_value = INFINITY;
    write_checkpoint(dir, good_config);
    expect_refused(dir, "tensor 'h.0.mlp.c_proj.weight': value [1, 3] of [16, 4] is inf");
    tu_remove_tree(dir);
    free(dir);
}

/* F16 tensors widened to float32 count against the memory limit, before any is made; a long
 * tensor name is cut in its middle, never the reason after it. */
static void test_widened_and_long_names(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("gpt2-wide");
    gpt2_tensors_of("", D, 4 * D, 65536); /* 65536 x 4 floats: 1 MiB widened, and wte more */
    find_tensor("wpe.weight")->f16 = true;
    find_tensor("wte.weight")->f16 = true;
    write_checkpoint(dir, "{\"n_head\": 2, \"n_layer\": 1, \"n_embd\": 4, \"n_positions\": "
                          "65536}");
    char *got = load(dir, NULL);
    assert_string_equal(got, "");
    free(got);
    /* The copies are the scene's memory: in its estimate, which the limit is checked against. */
    char scene[4200];
    snprintf(scene, sizeof(scene), "%s/scene.yaml", dir);
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, scene, &errs, NULL, NULL), 0);
    size_t widened = (size_t)(65536 + VOCAB) * D * sizeof(float);
    assert_int_equal(s.model.widened, widened);
    assert_true(attn_scene_mem_estimate(&s) > widened);
    attn_scene_free(&s);
    attn_diag_list_free(&errs);
    setenv("ATTNSCOPE_MEMORY_MIB", "1", 1);
    expect_refused(dir, "model.safetensors: its F16/BF16 tensors need about 2 MiB as float32, "
                        "over the 1 MiB limit (ATTNSCOPE_MEMORY_MIB)");
    setenv("ATTNSCOPE_MEMORY_MIB", "4096", 1);

    gpt2_tensors("");
    char *name = malloc(100 * 1000 + 1);
    assert_non_null(name);
    memset(name, 'x', 100 * 1000);
    name[100 * 1000] = '\0';
    long_name = name;
    add("wte.weight", VOCAB, D); /* the first tensor's place went to the long name */
    write_checkpoint(dir, good_config);
    got = load(dir, NULL);
    if (!strstr(got, "xxx\u2026xxx") || !strstr(got, "' is not part of GPT-2 (arch gpt2)\n"))
        fail_msg("the long name is not cut in its middle with the reason kept: %s", got);
    free(got);
    free(name);
    long_name = NULL;
    tu_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_and_prefixed), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_unembedding),       cmocka_unit_test(test_vocab_size),
        cmocka_unit_test(test_config_values),     cmocka_unit_test(test_dimensions_of_one),
        cmocka_unit_test(test_non_finite),        cmocka_unit_test(test_widened_and_long_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
