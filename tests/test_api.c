/* test_api: libattnscope's public API (include/attnscope/attnscope.h), used as a program uses it:
 * this file includes nothing else of attnscope.
 *
 * The book's multi-head attention (scenes/10-mha.yaml) gives PyTorch's weights for head 1
 * (tests/golden/scenes/10-mha/head1/weights.csv), a masked stage its -inf, and the shared
 * stages their shapes; the shipped induction model opens from its folder. Every error is a value
 * with its place: a missing file, a bad scene at file:line:col with the others counted, a folder
 * that is no model, no such layer, stage or head, a buffer of another shape; nothing is written
 * on an error, and deleting NULL does nothing. A result outlives its scene.
 *
 * Environment: ATTNSCOPE_SCENES_DIR (scenes/), ATTNSCOPE_FIXTURES (tests/fixtures),
 * ATTNSCOPE_DATA_DIR (the source tree, for models/).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <attnscope/attnscope.h>

/* PyTorch's weights of head 1 (tests/golden/scenes/10-mha/head1/weights.csv): (6, 6). */
static const float HEAD1_WEIGHTS[36] = {
    1,           0,           0,           0,           0,           0,
    0.49875769f, 0.50124228f, 0,           0,           0,           0,
    0.33246180f, 0.33378911f, 0.33374909f, 0,           0,           0,
    0.24631213f, 0.25048652f, 0.25035983f, 0.25284144f, 0,           0,
    0.20247763f, 0.19947228f, 0.19956210f, 0.19781826f, 0.20066963f, 0,
    0.16245085f, 0.16669115f, 0.16656192f, 0.16909997f, 0.16498105f, 0.17021510f,
};
static const char *const TOKENS[6] = {"Your", "journey", "starts", "with", "one", "step"};

static const char *in_dir(char *out, size_t size, const char *env, const char *fallback,
                          const char *name)
{
    const char *dir = getenv(env) ? getenv(env) : fallback;
    snprintf(out, size, "%s/%s", dir, name);
    return out;
}

static attnscope_result *compute_mha(attnscope_scene **scene)
{
    char path[1024];
    in_dir(path, sizeof(path), "ATTNSCOPE_SCENES_DIR", "scenes", "10-mha.yaml");
    attnscope_error err;
    if (attnscope_scene_open(scene, path, &err) != 0)
        fail_msg("%s: %s", path, err.message);
    attnscope_result *r = NULL;
    if (attnscope_compute(&r, *scene, &err) != 0)
        fail_msg("%s: %s", path, err.message);
    return r;
}

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(attnscope_version(), ATTNSCOPE_VERSION);
}

static void test_shape_and_tokens(void **state)
{
    (void)state;
    attnscope_scene *scene;
    attnscope_result *r = compute_mha(&scene);
    assert_int_equal(attnscope_tokens(r), 6);
    for (int i = 0; i < 6; i++)
        assert_string_equal(attnscope_token(r, i), TOKENS[i]);
    assert_null(attnscope_token(r, 6));
    assert_null(attnscope_token(r, -1));
    assert_int_equal(attnscope_layers(r), 1);
    assert_int_equal(attnscope_heads(r), 2);
    attnscope_result_delete(r);
    attnscope_scene_delete(scene);
}

/* Every stage `attnscope print` shows for this scene, in its order, each with its shape. */
static void test_stages(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        size_t rows, cols;
        int per_head;
    } want[] = {
        {"inputs", 6, 3, 0},        {"queries", 6, 1, 1}, {"keys", 6, 1, 1},
        {"values", 6, 1, 1},        {"scores", 6, 6, 1},  {"scaled", 6, 6, 1},
        {"masked", 6, 6, 1},        {"weights", 6, 6, 1}, {"dropout", 6, 6, 1},
        {"weighted_norm", 6, 6, 1}, {"context", 6, 1, 1}, {"concat", 6, 2, 0},
        {"output", 6, 2, 0},
    };
    size_t n = sizeof(want) / sizeof(want[0]);
    attnscope_scene *scene;
    attnscope_result *r = compute_mha(&scene);
    assert_int_equal(attnscope_stages(r, 0), (int)n);
    for (size_t i = 0; i < n; i++) {
        const char *name = attnscope_stage_name(r, 0, (int)i);
        assert_string_equal(name, want[i].name);
        size_t rows = 0, cols = 0;
        assert_int_equal(attnscope_matrix_shape(&rows, &cols, r, 0, name, NULL), 0);
        assert_int_equal(rows, want[i].rows);
        assert_int_equal(cols, want[i].cols);
        assert_int_equal(attnscope_stage_per_head(name), want[i].per_head);
    }
    assert_null(attnscope_stage_name(r, 0, (int)n));
    assert_null(attnscope_stage_name(r, 1, 0));
    assert_int_equal(attnscope_stages(r, 1), 0);
    assert_int_equal(attnscope_stage_per_head("nonsense"), -1);
    attnscope_result_delete(r);
    attnscope_scene_delete(scene);
}

static void test_weights_are_pytorchs(void **state)
{
    (void)state;
    attnscope_scene *scene;
    attnscope_result *r = compute_mha(&scene);
    float w[36];
    attnscope_error err;
    assert_int_equal(attnscope_matrix(w, 6, 6, r, 0, "weights", 1, &err), 0);
    for (int i = 0; i < 36; i++)
        if (fabsf(w[i] - HEAD1_WEIGHTS[i]) > 1e-6f)
            fail_msg("weights[%d][%d] = %.9g, PyTorch %.9g", i / 6, i % 6, (double)w[i],
                     (double)HEAD1_WEIGHTS[i]);
    /* masked is derived from the scores when asked for: -inf above the diagonal */
    float masked[36];
    assert_int_equal(attnscope_matrix(masked, 6, 6, r, 0, "masked", 1, &err), 0);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            assert_true(j > i ? isinf(masked[i * 6 + j]) && masked[i * 6 + j] < 0
                              : isfinite(masked[i * 6 + j]));
    /* a stage the heads share is the same from each head; the inputs are the scene's */
    float in0[18], in1[18];
    assert_int_equal(attnscope_matrix(in0, 6, 3, r, 0, "inputs", 0, &err), 0);
    assert_int_equal(attnscope_matrix(in1, 6, 3, r, 0, "INPUTS", 1, &err), 0);
    assert_memory_equal(in0, in1, sizeof(in0));
    assert_true(in0[0] == 0.43f && in0[17] == 0.55f);
    attnscope_result_delete(r);
    attnscope_scene_delete(scene);
}

/* The result holds its scene: deleting the scene first leaves it whole. */
static void test_result_outlives_scene(void **state)
{
    (void)state;
    attnscope_scene *scene;
    attnscope_result *r = compute_mha(&scene);
    float before[36], w[36];
    assert_int_equal(attnscope_matrix(before, 6, 6, r, 0, "weights", 1, NULL), 0);
    attnscope_scene_delete(scene);
    assert_int_equal(attnscope_matrix(w, 6, 6, r, 0, "weights", 1, NULL), 0);
    /* the very numbers it held (PyTorch's are test_weights_are_pytorchs': within 1e-6, the last
       bits are the BLAS kernel's) */
    assert_memory_equal(w, before, sizeof(w));
    assert_true(fabsf(w[6] - HEAD1_WEIGHTS[6]) <= 1e-6f);
    attnscope_result_delete(r);
}

static void test_model_folder(void **state)
{
    (void)state;
    char path[1024];
    in_dir(path, sizeof(path), "ATTNSCOPE_DATA_DIR", ".", "models/induction");
    attnscope_scene *scene = NULL;
    attnscope_error err;
    if (attnscope_scene_open(&scene, path, &err) != 0)
        fail_msg("%s: %s", path, err.message);
    attnscope_result *r = NULL;
    assert_int_equal(attnscope_compute(&r, scene, &err), 0);
    int n = attnscope_tokens(r);
    assert_true(n > 1);
    assert_true(attnscope_layers(r) >= 1 && attnscope_heads(r) >= 1);
    int last = attnscope_layers(r) - 1;
    size_t rows, cols;
    assert_int_equal(attnscope_matrix_shape(&rows, &cols, r, last, "weights", &err), 0);
    assert_int_equal(rows, n);
    assert_int_equal(cols, n);
    float *w = malloc(rows * cols * sizeof(*w));
    assert_non_null(w);
    assert_int_equal(attnscope_matrix(w, rows, cols, r, last, "weights", 0, &err), 0);
    for (size_t i = 0; i < rows; i++) { /* softmax rows, causal */
        double sum = 0;
        for (size_t j = 0; j < cols; j++)
            sum += w[i * cols + j];
        assert_true(fabs(sum - 1) < 1e-5);
        assert_true(i + 1 == cols || w[i * cols + i + 1] == 0);
    }
    free(w);
    attnscope_result_delete(r);
    attnscope_scene_delete(scene);
}

static void test_missing_file(void **state)
{
    (void)state;
    attnscope_scene *scene = (attnscope_scene *)&scene; /* must come back NULL */
    attnscope_error err;
    assert_int_equal(attnscope_scene_open(&scene, "no/such/scene.yaml", &err), -1);
    assert_null(scene);
    assert_string_equal(err.file, "no/such/scene.yaml");
    assert_int_equal(err.line, 0);
    assert_non_null(strstr(err.message, "No such file"));
    char text[ATTNSCOPE_ERROR_TEXT_MAX];
    assert_string_equal(attnscope_error_text(text, sizeof(text), &err),
                        "no/such/scene.yaml: cannot open: No such file or directory");
    assert_int_equal(attnscope_scene_open(&scene, "no/such/scene.yaml", NULL), -1);
}

/* The first problem at its file:line:col, as `attnscope check` prints it
 * (fixtures/bad/unknown_key_systems.expect), the other two counted. */
static void test_bad_scene_located(void **state)
{
    (void)state;
    char path[1024];
    in_dir(path, sizeof(path), "ATTNSCOPE_FIXTURES", "tests/fixtures",
           "bad/unknown_key_systems.yaml");
    attnscope_scene *scene;
    attnscope_error err;
    assert_int_equal(attnscope_scene_open(&scene, path, &err), -1);
    assert_null(scene);
    assert_string_equal(err.file, path);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 26);
    assert_string_equal(err.message,
                        "unknown key 'rope_pair' in 'positional' (did you mean 'rope_pairs'?)");
    assert_int_equal(err.more, 2);
    char text[ATTNSCOPE_ERROR_TEXT_MAX], want[2048];
    snprintf(want, sizeof(want), "%s:2:26: %s", path, err.message);
    assert_string_equal(attnscope_error_text(text, sizeof(text), &err), want);
    /* cut to fit, never past the buffer */
    char small[8];
    assert_int_equal(strlen(attnscope_error_text(small, sizeof(small), &err)), 7);
}

static void test_not_a_model_folder(void **state)
{
    (void)state;
    char path[1024];
    in_dir(path, sizeof(path), "ATTNSCOPE_FIXTURES", "tests/fixtures", "bad");
    attnscope_scene *scene;
    attnscope_error err;
    assert_int_equal(attnscope_scene_open(&scene, path, &err), -1);
    assert_null(scene);
    assert_true(err.file[0] != '\0');
    assert_int_equal(err.line, 0);
    assert_non_null(strstr(err.message, "config.json"));
}

/* No such layer, stage or head, or a buffer of another shape: -1, a message, out untouched. */
static void test_matrix_refused(void **state)
{
    (void)state;
    attnscope_scene *scene;
    attnscope_result *r = compute_mha(&scene);
    float out[64];
    const float untouched = 12345.0f;
    for (int i = 0; i < 64; i++)
        out[i] = untouched;
    static const struct {
        size_t rows, cols;
        int layer;
        const char *stage;
        int head;
        const char *message;
    } bad[] = {
        {6, 6, 0, "weights", 2, "no head 2: layer 0 has 2"},
        {6, 6, 0, "weights", -1, "no head -1: layer 0 has 2"},
        {6, 6, 1, "weights", 0, "no layer 1: the scene has 1"},
        {6, 6, -1, "weights", 0, "no layer -1: the scene has 1"},
        {6, 6, 0, "weight", 0, "no stage is called \"weight\""},
        {6, 6, 0, "ffn_hidden", 0, "layer 0 has no ffn_hidden stage"},
        {6, 5, 0, "weights", 0, "layer 0's weights is 6\u00d76, not 6\u00d75"},
        {5, 6, 0, "weights", 0, "layer 0's weights is 6\u00d76, not 5\u00d76"},
        {6, 7, 0, "weights", 0, "layer 0's weights is 6\u00d76, not 6\u00d77"},
        {6, 6, 0, "inputs", 0, "layer 0's inputs is 6\u00d73, not 6\u00d76"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        attnscope_error err;
        assert_int_equal(attnscope_matrix(out, bad[i].rows, bad[i].cols, r, bad[i].layer,
                                          bad[i].stage, bad[i].head, &err),
                         -1);
        assert_string_equal(err.message, bad[i].message);
        assert_string_equal(err.file, "");
        assert_int_equal(err.line, 0);
        assert_int_equal(attnscope_matrix(out, bad[i].rows, bad[i].cols, r, bad[i].layer,
                                          bad[i].stage, bad[i].head, NULL),
                         -1);
    }
    for (int i = 0; i < 64; i++)
        assert_true(out[i] == untouched);
    size_t rows = 99, cols = 99;
    attnscope_error err;
    assert_int_equal(attnscope_matrix_shape(&rows, &cols, r, 0, "nope", &err), -1);
    assert_string_equal(err.message, "no stage is called \"nope\"");
    assert_true(rows == 99 && cols == 99);
    attnscope_result_delete(r);
    attnscope_scene_delete(scene);
}

/* A scene that makes the English model compute otherwise than it was trained opens, and says so
 * at each key, as `attnscope check` does; the scene as trained has no warning. */
static void test_warnings(void **state)
{
    (void)state;
    const char *data = getenv("ATTNSCOPE_DATA_DIR");
    char dir[1024], yaml[4096], path[] = "/tmp/attnscope-api-XXXXXX.yaml";
    char cwd[800];
    if (!(data && *data)) /* the scene is in /tmp: its paths must not be relative */
        data = getcwd(cwd, sizeof(cwd));
    assert_non_null(data);
    snprintf(dir, sizeof(dir), "%.900s/models/english", data);
    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "text: \"Your journey starts with one step\"\n"
             "tokenizer: {kind: gpt2, vocab: %s/vocab.json, merges: %s/merges.txt}\n"
             "model: {file: %s/model.safetensors, arch: gpt2}\n"
             "attention: {heads: 4, scale: false}\n"
             "layers: 2\n",
             dir, dir, dir);
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(yaml, f);
    fclose(f);
    attnscope_scene *scene = NULL;
    attnscope_error err, w;
    int rc = attnscope_scene_open(&scene, path, &err);
    if (rc != 0)
        fail_msg("%s: %s", path, err.message);
    assert_int_equal(attnscope_warnings(scene), 3);
    static const int at[3][2] = {{5, 13}, {5, 23}, {6, 1}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(attnscope_warning(&w, scene, i), 0);
        assert_string_equal(w.file, path);
        assert_int_equal(w.line, at[i][0]);
        assert_int_equal(w.col, at[i][1]);
        assert_int_equal(w.more, 0);
    }
    assert_non_null(strstr(w.message, "'layers' modifies the checkpoint (layers 4 \u2192 2)"));
    assert_int_equal(attnscope_warning(&w, scene, 3), -1);
    assert_string_equal(w.message, "no warning 3: the scene has 3");
    attnscope_scene_delete(scene);
    /* as trained: nothing to say */
    *strstr(yaml, "attention:") = '\0';
    f = fopen(path, "w");
    fputs(yaml, f);
    fclose(f);
    assert_int_equal(attnscope_scene_open(&scene, path, &err), 0);
    assert_int_equal(attnscope_warnings(scene), 0);
    assert_int_equal(attnscope_warning(&w, scene, 0), -1);
    attnscope_scene_delete(scene);
    unlink(path);
}

static void test_delete_null(void **state)
{
    (void)state;
    attnscope_scene_delete(NULL);
    attnscope_result_delete(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_shape_and_tokens),
        cmocka_unit_test(test_stages),
        cmocka_unit_test(test_weights_are_pytorchs),
        cmocka_unit_test(test_result_outlives_scene),
        cmocka_unit_test(test_model_folder),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_bad_scene_located),
        cmocka_unit_test(test_not_a_model_folder),
        cmocka_unit_test(test_matrix_refused),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_delete_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
