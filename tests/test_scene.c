/* test_scene: the scene's owned fields, listed once (engine/scene_fields.h).
 *
 * A scene with every listed field set (BERT's token types and second sentence, a checkpoint's
 * paths and borrowed matrices, every layer's parameters and dropout masks, the ablations, a
 * lesson, the book of rows, a backing) is copied: what the copy allocates is what
 * attn_scene_owned_bytes says, and the explorer's undo budget counts that; the copy is alike
 * field by field and owns its memory; a change to any one field makes the two differ, and their
 * parameters too unless it is not one (FIELD_OTHER), or is the sentence and the sentence is set
 * aside (FIELDS_PARAMS_BUT_SENTENCE, a sentence edit's comparison); freeing
 * both leaves nothing. Scenes loaded as a user's are (a BERT pair, GPT-2 with its vocabulary
 * files, a lesson on models/english, longrope's factors, weights listed per layer, a dropout
 * mask, ablations on a checkpoint) are copied and freed the same way, and no word of a scene
 * outside the listed fields may hold memory allocated for it: a field a loader sets that owns
 * memory but is not listed fails here, in every build (oomhook.c keeps the live blocks), not
 * only under LeakSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/lesson.h"
#include "engine/scene.h"
#include "engine/scene_fields.h"
#include "explore/app.h"
#include "oomhook.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

/* ---- the fields, by their row ---- */

static void *at(const struct attn_scene *s, const struct attn_scene_field *f)
{
    return (char *)s + f->offset;
}

static int count_of(const struct attn_scene *s, const struct attn_scene_field *f)
{
    return f->count < 0 ? 0 : *(const int *)((const char *)s + f->count);
}

/* The bytes a row takes in struct attn_scene. */
static size_t row_size(const struct attn_scene_field *f)
{
    switch (f->kind) {
    case FIELD_MATRIX:
        return sizeof(struct attn_matrix);
    case FIELD_WEIGHTS:
        return sizeof(struct attn_scene_weights);
    default:
        return sizeof(void *);
    }
}

/* Whether s has the field set (a populated scene must have every one). */
static bool row_set(const struct attn_scene *s, const struct attn_scene_field *f)
{
    const void *p = at(s, f);
    int n = count_of(s, f);
    switch (f->kind) {
    case FIELD_STRING:
        return *(char *const *)p != NULL;
    case FIELD_STRINGS:
        return *(char **const *)p && n > 0;
    case FIELD_INTS:
        return *(int *const *)p && n > 0;
    case FIELD_MATRIX:
        return attn_matrix_given(p);
    case FIELD_ABLATIONS:
        return *(struct attn_ablation *const *)p && n > 0;
    case FIELD_WEIGHTS: {
        const struct attn_scene_weights *w = p;
        return w->set && w->dropout_mask;
    }
    case FIELD_LAYERS:
        return *(struct attn_scene_weights *const *)p && n > 0;
    case FIELD_BOOK:
        return *(struct attn_book_rows *const *)p != NULL;
    case FIELD_LESSON:
        return *(struct attn_lesson *const *)p != NULL;
    case FIELD_BACKING:
        return *(struct attn_backing *const *)p != NULL;
    case FIELD_BORROWED:
        return *(const float *const *)p != NULL && n > 0;
    case FIELD_SCENE:
        return *(struct attn_scene *const *)p != NULL;
    }
    return false;
}

/* Fails unless no word of s outside the listed fields is a block allocated while the hook
 * counted: such a word is a field that owns memory and is not listed. */
static void expect_nothing_unlisted(const struct attn_scene *s, const char *what)
{
    for (size_t off = 0; off + sizeof(void *) <= sizeof(*s); off += _Alignof(void *)) {
        bool listed = false;
        for (int i = 0; i < attn_scene_n_fields && !listed; i++)
            listed = off >= attn_scene_fields[i].offset &&
                     off < attn_scene_fields[i].offset + row_size(&attn_scene_fields[i]);
        void *word;
        memcpy(&word, (const char *)s + off, sizeof(word));
        if (!listed && oom_is_live(word))
            fail_msg("%s: the scene's bytes at offset %zu hold memory allocated for it, in a field "
                     "engine/scene_fields.h does not list: add its row there",
                     what, off);
    }
}

/* The copy c of s owns what s owns (other memory, the same contents) and shares what s shares. */
static void expect_deep(const struct attn_scene *s, const struct attn_scene *c,
                        const struct attn_scene_field *f)
{
    const void *x = at(s, f), *y = at(c, f);
    switch (f->kind) {
    case FIELD_STRING:
    case FIELD_STRINGS:
    case FIELD_INTS:
    case FIELD_ABLATIONS:
    case FIELD_LAYERS:
    case FIELD_SCENE:
        if (memcmp(x, y, sizeof(void *)) == 0) /* the same pointer */
            fail_msg("%s: the copy shares the scene's memory", f->name);
        break;
    case FIELD_MATRIX: {
        const struct attn_matrix *m = x, *n = y;
        if (m->borrowed != n->borrowed || (m->borrowed != (m->data == n->data)))
            fail_msg("%s: a borrowed matrix is shared, an owned one copied", f->name);
        break;
    }
    case FIELD_WEIGHTS: {
        const struct attn_scene_weights *v = x, *w = y;
        if (v->query.data == w->query.data || v->dropout_mask == w->dropout_mask)
            fail_msg("%s: the copy shares the scene's parameters", f->name);
        break;
    }
    case FIELD_BOOK:
    case FIELD_LESSON:
    case FIELD_BACKING:
    case FIELD_BORROWED:
        if (memcmp(x, y, sizeof(void *)) != 0)
            fail_msg("%s: what copies share is shared", f->name);
        break;
    }
}

/* ---- a scene with every field set ---- */

static float unembed_rows[2 * 4] = {0.5f, -1, 2, 0.25f, 3, 1, -0.5f, 4};
static const float factors[4] = {1, 1.5f, 2, 4}, other_factors[2] = {1, 3};
struct test_backing {
    struct attn_backing b;
    int released;
};
static struct test_backing backing, other_backing;
static struct attn_book_rows other_book;
static struct attn_lesson other_lesson;

static void release(struct attn_backing *b)
{
    ((struct test_backing *)b)->released++;
}

static void own(struct attn_matrix *m, int rows, int cols, float first)
{
    assert_int_equal(attn_matrix_alloc(m, rows, cols), 0);
    for (int i = 0; i < rows * cols; i++)
        m->data[i] = first + (float)i;
}

static void full_layer(struct attn_scene_weights *w, int heads, int n, float first)
{
    w->set = true;
#define X(name) own(&w->name, 2, 3, first++);
    ATTN_WEIGHT_MATRICES(X)
#undef X
    size_t bytes = (size_t)heads * (size_t)n * (size_t)n;
    assert_non_null(w->dropout_mask = malloc(bytes));
    for (size_t i = 0; i < bytes; i++)
        w->dropout_mask[i] = (unsigned char)(i % 2);
    w->dropout_mask_heads = heads;
    w->dropout_mask_n = n;
}

static void populate(struct attn_scene *s)
{
    struct diag err;
    attn_scene_init(s);
    assert_non_null(s->title = strdup("every field"));
    assert_int_equal(attn_scene_set_text(s, "the cat sat", &err), 0);
    s->embed.kind = EMBED_EXPLICIT;
    own(&s->embed.rows, 3, 4, 0.5f);
    assert_int_equal(attn_scene_retext(s, "the dog sat", &err), 0); /* makes the book */
    assert_non_null(s->text_pair = strdup("it ran"));
    assert_non_null(s->token_ids = malloc(3 * sizeof(int)));
    assert_non_null(s->token_types = malloc(3 * sizeof(int)));
    for (int i = 0; i < 3; i++) {
        s->token_ids[i] = 100 + i;
        s->token_types[i] = i == 2;
    }
    own(&s->embed.types, 2, 4, 1);
    own(&s->embed.norm_weight, 1, 4, 2);
    own(&s->embed.norm_bias, 1, 4, 3);
    own(&s->pos.table, 8, 4, 4);
    own(&s->pos.rel.table, 8, 2, 11);
    s->pos.scaling.short_factor = factors;
    s->pos.scaling.long_factor = factors + 2;
    s->pos.scaling.n_factors = 2;
    full_layer(&s->weights, 2, 3, 10);
    assert_non_null(s->more_weights = calloc(2, sizeof(*s->more_weights)));
    s->n_more = 2;
    full_layer(&s->more_weights[0], 2, 3, 40);
    full_layer(&s->more_weights[1], 2, 3, 70);
    s->layers = 3;
    s->weights_listed = true;
    assert_non_null(s->model.file = strdup("/models/bert/model.safetensors"));
    assert_non_null(s->model.arch = strdup("bert"));
    assert_non_null(s->vocab_path = strdup("/models/gpt2/vocab.json"));
    assert_non_null(s->merges_path = strdup("/models/gpt2/merges.txt"));
    assert_non_null(s->tokenizer_file = strdup("/models/bert/tokenizer.json"));
    s->unembed = (struct attn_matrix){.data = unembed_rows, .rows = 2, .cols = 4, .borrowed = true};
    own(&s->unembed_bias, 1, 2, 5);
    own(&s->head.dense, 4, 4, 6);
    own(&s->head.dense_bias, 1, 4, 7);
    own(&s->head.norm_weight, 1, 4, 8);
    own(&s->head.norm_bias, 1, 4, 9);
    assert_int_equal(attn_scene_set_ablation(s, 0, 1, HEAD_ZERO), 0);
    assert_int_equal(attn_scene_set_ablation(s, 2, 0, HEAD_MEAN), 0);
    assert_non_null(s->lesson = attn_lesson_new(2));
    backing = (struct test_backing){.b = {.refs = 1, .release = release}};
    s->backing = &backing.b;
    assert_non_null(s->encoder = calloc(1, sizeof(*s->encoder))); /* an encoder-decoder's */
    attn_scene_init(s->encoder);
    own(&s->encoder->pos.rel.table, 8, 2, 12);
}

/* Changes c's field so that it differs from s's; a second call puts it back. */
static void toggle(struct attn_scene *c, const struct attn_scene *s,
                   const struct attn_scene_field *f)
{
    void *p = at(c, f);
    const void *was = at(s, f);
    switch (f->kind) {
    case FIELD_STRING:
        (*(char **)p)[0] ^= 0x20;
        break;
    case FIELD_STRINGS:
        (*(char ***)p)[0][0] ^= 0x20;
        break;
    case FIELD_INTS:
        (*(int **)p)[0] ^= 1;
        break;
    case FIELD_MATRIX:
        ((struct attn_matrix *)p)->cols ^= 1; /* an owned or a borrowed one alike */
        break;
    case FIELD_ABLATIONS: {
        struct attn_ablation *a = *(struct attn_ablation **)p;
        a->mode = a->mode == HEAD_ZERO ? HEAD_MEAN : HEAD_ZERO;
        break;
    }
    case FIELD_WEIGHTS:
        ((struct attn_scene_weights *)p)->ffn_bgate.cols ^= 1;
        break;
    case FIELD_LAYERS:
        (*(struct attn_scene_weights **)p)[1].k_norm_weight.cols ^= 1;
        break;
    case FIELD_BOOK: {
        struct attn_book_rows **b = p;
        *b = *b == &other_book ? *(struct attn_book_rows *const *)was : &other_book;
        break;
    }
    case FIELD_LESSON: {
        struct attn_lesson **l = p;
        *l = *l == &other_lesson ? *(struct attn_lesson *const *)was : &other_lesson;
        break;
    }
    case FIELD_BACKING: {
        struct attn_backing **b = p;
        *b = *b == &other_backing.b ? *(struct attn_backing *const *)was : &other_backing.b;
        break;
    }
    case FIELD_BORROWED: {
        const float **v = p;
        *v = *v == other_factors ? *(const float *const *)was : other_factors;
        break;
    }
    case FIELD_SCENE: /* a parameter of the encoder's */
        (*(struct attn_scene **)p)->pos.rel.table.cols ^= 1;
        break;
    }
}

static void test_every_field(void **state)
{
    (void)state;
    oom_arm(0, false); /* counting only: every block made from here on is known */
    struct attn_scene s, c;
    populate(&s);
    for (int i = 0; i < attn_scene_n_fields; i++)
        if (!row_set(&s, &attn_scene_fields[i]))
            fail_msg("%s is listed but not set here: populate() must set every listed field",
                     attn_scene_fields[i].name);
    expect_nothing_unlisted(&s, "the populated scene");

    size_t before = oom_live_bytes(), owned = attn_scene_owned_bytes(&s);
    assert_int_equal(attn_scene_copy(&c, &s), 0);
    if (oom_live_bytes() - before != owned)
        fail_msg("the copy allocated %zu bytes; attn_scene_owned_bytes says %zu",
                 oom_live_bytes() - before, owned);
    assert_int_equal(app_undo_step_bytes(&s), sizeof(s) + owned);
    assert_int_equal(backing.b.refs, 2);
    assert_int_equal(s.lesson->refs, 2);
    assert_int_equal(s.embed.book->refs, 2);
    assert_true(attn_scene_same_fields(&s, &c, FIELDS_ALL));
    assert_true(attn_scene_same_fields(&s, &c, FIELDS_PARAMS));
    for (int i = 0; i < attn_scene_n_fields; i++) {
        const struct attn_scene_field *f = &attn_scene_fields[i];
        expect_deep(&s, &c, f);
        toggle(&c, &s, f);
        if (attn_scene_same_fields(&s, &c, FIELDS_ALL))
            fail_msg("%s changed, yet the scenes compare alike", f->name);
        if (attn_scene_same_fields(&s, &c, FIELDS_PARAMS) != (f->use == FIELD_OTHER))
            fail_msg("%s changed: the parameters %s", f->name,
                     f->use == FIELD_OTHER ? "differ" : "compare alike");
        /* a sentence edit keeps the parameters: the sentence's fields aside, they compare */
        if (attn_scene_same_fields(&s, &c, FIELDS_PARAMS_BUT_SENTENCE) != (f->use != FIELD_PARAM))
            fail_msg("%s changed: the parameters but the sentence %s", f->name,
                     f->use == FIELD_PARAM ? "compare alike" : "differ");
        toggle(&c, &s, f);
        assert_true(attn_scene_same_fields(&s, &c, FIELDS_ALL));
    }
    /* A dropout mask is drawn again: it tells scenes apart, not their parameters. */
    c.more_weights[0].dropout_mask[4] ^= 1;
    assert_false(attn_scene_same_fields(&s, &c, FIELDS_ALL));
    assert_true(attn_scene_same_fields(&s, &c, FIELDS_PARAMS));
    assert_true(attn_scene_same_fields(&s, &c, FIELDS_PARAMS_BUT_SENTENCE));

    attn_scene_free(&c);
    assert_int_equal(backing.released, 0);
    attn_scene_free(&s);
    assert_int_equal(backing.released, 1);
    size_t some;
    long left = oom_live(&some);
    oom_disarm();
    if (left)
        fail_msg("%ld blocks (one of %zu bytes) outlive the scene and its copy", left, some);
}

/* The undo budget is the scene and the sum over the list; the old count left out BERT's
 * fields, the strings, the ablations and four of every layer's matrices. */
static void test_undo_bytes(void **state)
{
    (void)state;
    struct attn_scene s;
    populate(&s);
    size_t sum = 0;
    for (int i = 0; i < attn_scene_n_fields; i++) {
        struct attn_scene one;
        attn_scene_init(&one);
        memcpy(at(&one, &attn_scene_fields[i]), at(&s, &attn_scene_fields[i]),
               row_size(&attn_scene_fields[i]));
        if (attn_scene_fields[i].count >= 0)
            memcpy((char *)&one + attn_scene_fields[i].count,
                   (char *)&s + attn_scene_fields[i].count, sizeof(int));
        sum += attn_scene_owned_bytes(&one); /* one's fields are s's: never freed */
    }
    assert_int_equal(app_undo_step_bytes(&s), sizeof(s) + sum);
    size_t tokens = 3 * sizeof(char *) + sizeof("the") + sizeof("dog") + sizeof("sat");
    size_t strings = sizeof("every field") + sizeof("the dog sat") + sizeof("it ran") +
                     sizeof("/models/bert/model.safetensors") + sizeof("bert") +
                     sizeof("/models/gpt2/vocab.json") + sizeof("/models/gpt2/merges.txt") +
                     sizeof("/models/bert/tokenizer.json");
    size_t matrices = (3 * 4 + 2 * 4 + 4 + 4 + 8 * 4 + 8 * 2 + 2 + 16 + 4 + 4 + 4) * sizeof(float);
    size_t encoder = sizeof(struct attn_scene) + 8 * 2 * sizeof(float); /* its relative table */
#define X(name) +1
    size_t layer = (0 ATTN_WEIGHT_MATRICES(X)) * 6 * sizeof(float) + 2 * 3 * 3; /* 2 x 3 each */
#undef X
    size_t expect = tokens + 2 * 3 * sizeof(int) + strings + matrices + encoder + 3 * layer +
                    2 * sizeof(struct attn_scene_weights) + 2 * sizeof(struct attn_ablation);
    assert_int_equal(attn_scene_owned_bytes(&s), expect);
    attn_scene_free(&s);
}

/* ---- scenes loaded as a user's are ---- */

static char *scratch;

static void load(struct attn_scene *s, const char *path)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int rc = attn_scenefile_load(s, path, &errs, NULL, NULL);
    char msg[600];
    snprintf(msg, sizeof(msg), "%s", errs.n ? errs.items[0].msg : "?");
    attn_diag_list_free(&errs);
    if (rc != 0)
        fail_msg("%s: %s", path, msg);
}

/* path loaded, copied and freed: the copy allocates attn_scene_owned_bytes, compares alike,
 * and nothing outlives the two. */
static void load_copy_free(const char *path)
{
    struct attn_scene s, c;
    load(&s, path); /* anything a first load keeps for good is made before the count */
    attn_scene_free(&s);
    oom_arm(0, false);
    load(&s, path);
    expect_nothing_unlisted(&s, path);
    size_t before = oom_live_bytes(), owned = attn_scene_owned_bytes(&s);
    assert_int_equal(attn_scene_copy(&c, &s), 0);
    if (oom_live_bytes() - before != owned)
        fail_msg("%s: the copy allocated %zu bytes; attn_scene_owned_bytes says %zu", path,
                 oom_live_bytes() - before, owned);
    assert_int_equal(app_undo_step_bytes(&s), sizeof(s) + owned);
    assert_true(attn_scene_same_fields(&s, &c, FIELDS_ALL));
    expect_nothing_unlisted(&c, path);
    attn_scene_free(&c);
    attn_scene_free(&s);
    size_t some;
    long left = oom_live(&some);
    oom_disarm();
    if (left)
        fail_msg("%s: %ld blocks (one of %zu bytes) outlive the scene and its copy", path, left,
                 some);
}

static char *in(const char *var, const char *rel)
{
    const char *dir = getenv(var);
    if (!dir || !*dir)
        fail_msg("%s is not set (run the test through meson test)", var);
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

static void test_loaded(void **state)
{
    (void)state;
    static const struct {
        const char *var, *rel;
    } scenes[] = {
        {"ATTNSCOPE_GOLDEN_DIR", "families/scenes/bert-pair.yaml"},      /* BERT's fields */
        {"ATTNSCOPE_GOLDEN_DIR", "gpt2/scenes/tiny-all.yaml"},           /* vocab, merges */
        {"ATTNSCOPE_GOLDEN_DIR", "families/scenes/llama-longrope.yaml"}, /* its factors */
        {"ATTNSCOPE_SCENES_DIR", "lessons/7-trained-heads.yaml"},        /* a lesson */
        {"ATTNSCOPE_SCENES_DIR", "14-blue-dog-causal.yaml"},             /* a dropout mask */
        {"ATTNSCOPE_FIXTURES", "random/r75.yaml"},                       /* weights per layer */
    };
    for (size_t i = 0; i < sizeof(scenes) / sizeof(scenes[0]); i++) {
        char *path = in(scenes[i].var, scenes[i].rel);
        load_copy_free(path);
        free(path);
    }
    /* ablations on a checkpoint */
    const char *root = getenv("ATTNSCOPE_DATA_DIR");
    assert_non_null(root);
    char yaml[4096], path[4200];
    snprintf(yaml, sizeof(yaml),
             "text: fish moon king door fish moon\n"
             "tokenizer: {kind: gpt2, vocab: %s/models/induction/vocab.json, merges: "
             "%s/models/induction/merges.txt}\n"
             "model: {file: %s/models/induction/model.safetensors}\n"
             "ablate:\n  - {layer: 1, head: 0}\n  - {layer: 0, head: 0, mode: mean}\n",
             root, root, root);
    snprintf(path, sizeof(path), "%s/ablate.yaml", scratch);
    tu_write_text(path, yaml);
    load_copy_free(path);
}

static int setup(void **state)
{
    (void)state;
    scratch = tu_make_tmpdir("scene");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_remove_tree(scratch);
    free(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_undo_bytes),
        cmocka_unit_test(test_loaded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
