/* test_textfit: a sentence against the model's context (engine/textfit.c), and the text edit
 * that takes a second sentence.
 *
 * The checkpoints are the shipped models/english (GPT-2, 128 learned positions), the golden
 * families' llama-gqa (RoPE, trained on 64) and bert-pair (40 learned positions, [CLS] and [SEP]
 * around the text), loaded through scene files as a user's are. Every cut is checked against
 * what it promises: whole words of the text, in their order, whose tokens fit; and the most of
 * them that do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/edit.h"
#include "engine/scene.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

static char *scratch;

/* A scene of text on the model named (english, llama-gqa, bert-pair), loaded from a file. */
static void load(struct attn_scene *s, const char *model, const char *text)
{
    const char *root = getenv("ATTNSCOPE_DATA_DIR");
    assert_non_null(root);
    char yaml[8192], path[4200];
    if (strcmp(model, "english") == 0)
        snprintf(yaml, sizeof(yaml),
                 "text: \"%s\"\n"
                 "tokenizer: {kind: gpt2, vocab: %s/models/english/vocab.json, merges: "
                 "%s/models/english/merges.txt}\n"
                 "model: {file: %s/models/english/model.safetensors}\n",
                 text, root, root, root);
    else if (strcmp(model, "llama-gqa") == 0)
        snprintf(yaml, sizeof(yaml),
                 "text: \"%s\"\n"
                 "tokenizer: {kind: gpt2, vocab: %s/tests/golden/gpt2/vocab.json, merges: "
                 "%s/tests/golden/gpt2/merges.txt}\n"
                 "model: {file: %s/tests/golden/families/llama-gqa/model.safetensors}\n",
                 text, root, root, root);
    else
        snprintf(yaml, sizeof(yaml),
                 "text: \"%s\"\n"
                 "tokenizer: {kind: hf, file: %s/tests/golden/families/%s/tokenizer.json}\n"
                 "model: {file: %s/tests/golden/families/%s/model.safetensors}\n",
                 text, root, model, root, model);
    snprintf(path, sizeof(path), "%s/scene.yaml", scratch);
    tu_write_text(path, yaml);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_load(s, path, &errs, NULL, NULL) != 0)
        fail_msg("%s: %s", model, errs.n ? errs.items[0].msg : "?");
    attn_diag_list_free(&errs);
}

/* "word0 word1 ... word{n-1}" */
static char *words(int n, const char *stem)
{
    size_t size = (size_t)n * (strlen(stem) + 8) + 1, o = 0;
    char *t = malloc(size);
    assert_non_null(t);
    t[0] = '\0';
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(t + o, size - o, "%s%s%d", i ? " " : "", stem, i);
    return t;
}

static int tokens_of(const struct attn_scene *s, const char *text)
{
    struct attn_text_fit f;
    struct diag err;
    attn_diag_clear(&err);
    assert_int_equal(attn_scene_text_fit(&f, s, text, NULL, &err), 0);
    return f.n;
}

/* part is whole words of text: it starts at text's start or after a space (or with the space
 * before its first word), ends at its end or before one. */
static void expect_whole_words(const char *text, const char *part)
{
    const char *at = strstr(text, part);
    if (!at)
        fail_msg("'%s' is not a part of the text", part);
    size_t len = strlen(part);
    assert_true(at == text || at[-1] == ' ' || (part[0] == ' ' && part[1] != ' '));
    assert_true(at[len] == '\0' || at[len] == ' ');
    assert_true(part[len - 1] != ' ');
}

/* The limit of each family: GPT-2's table, BERT's, and RoPE's trained positions (no limit but
 * attnscope's). The message in the user's words. */
static void test_fit(void **state)
{
    (void)state;
    struct attn_scene s;
    struct attn_text_fit f;
    struct diag err;
    char msg[300];
    attn_diag_clear(&err);

    load(&s, "english", "Your journey starts with one step");
    char *long_text = words(300, "w");
    assert_int_equal(attn_scene_text_fit(&f, &s, long_text, NULL, &err), 0);
    assert_true(f.n > 128);
    assert_int_equal(f.limit, 128);
    assert_int_equal(f.table, 128);
    assert_int_equal(f.trained, 0);
    assert_string_equal(f.key, "n_positions");
    /* the count is the scene's own: the same text set as the scene's has as many tokens */
    int n = f.n;
    assert_int_equal(attn_scene_text_fit(&f, &s, s.text, NULL, &err), 0);
    assert_int_equal(f.n, s.n_tokens);
    f = (struct attn_text_fit){.n = 1225, .limit = 128, .table = 128, .key = "n_positions"};
    attn_text_fit_describe(msg, sizeof(msg), &f);
    assert_string_equal(msg, "1,225 tokens, but this model reads at most 128 (n_positions)");
    /* an offset moves the first position: fewer fit */
    s.pos.offset = 10;
    assert_int_equal(attn_scene_text_fit(&f, &s, long_text, NULL, &err), 0);
    assert_int_equal(f.n, n);
    assert_int_equal(f.limit, 118);
    attn_text_fit_describe(msg, sizeof(msg), &f);
    assert_true(n > 1000);
    assert_non_null(strstr(msg, " tokens, but this model reads at most 118 (n_positions 128, "
                                "less the offset 10)"));
    attn_scene_free(&s);

    load(&s, "bert-pair", "the cat sat");
    assert_int_equal(attn_scene_text_fit(&f, &s, "the cat sat", NULL, &err), 0);
    assert_int_equal(f.n, 5); /* [CLS] the cat sat [SEP] */
    assert_int_equal(f.limit, 40);
    assert_string_equal(f.key, "max_position_embeddings");
    assert_int_equal(attn_scene_text_fit(&f, &s, "the cat sat", "it was", &err), 0);
    assert_int_equal(f.n, 8); /* and it was [SEP] */
    attn_scene_free(&s);

    load(&s, "llama-gqa", "The river runs to the sea.");
    assert_int_equal(attn_scene_text_fit(&f, &s, long_text, NULL, &err), 0);
    assert_int_equal(f.limit, SCENE_MAX_TOKENS); /* RoPE reads past what it was trained on */
    assert_int_equal(f.table, 0);
    assert_int_equal(f.trained, 64);
    assert_string_equal(f.key, "max_position_embeddings");
    f.n = 9000;
    attn_text_fit_describe(msg, sizeof(msg), &f);
    assert_string_equal(msg, "9,000 tokens, but attnscope reads at most 8,192");
    attn_scene_free(&s);
    free(long_text);
}

/* The first and the last whole words that fit, and the most of them: one more word would not. */
static void test_keep_first_and_last(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag err;
    attn_diag_clear(&err);
    char *text = words(300, "w");
    const char *models[] = {"english", "bert-pair"};
    for (int m = 0; m < 2; m++) {
        load(&s, models[m], "the cat sat");
        int limit = m == 0 ? 128 : 40;
        for (int last = 0; last < 2; last++) {
            char *part;
            assert_int_equal(attn_scene_text_cut(&part, &s, text,
                                                 last ? TEXT_KEEP_LAST : TEXT_KEEP_FIRST, 0, limit,
                                                 &err),
                             0);
            expect_whole_words(text, part);
            assert_true(last ? strlen(part) + (size_t)(strstr(text, part) - text) == strlen(text)
                             : strncmp(text, part, strlen(part)) == 0);
            int n = tokens_of(&s, part);
            assert_true(n <= limit);
            /* one word more does not fit */
            const char *at = strstr(text, part);
            char more[8192];
            if (last) {
                const char *from = at - 2;
                while (from > text && from[-1] != ' ')
                    from--;
                snprintf(more, sizeof(more), "%s", from);
            } else {
                const char *to = at + strlen(part) + 1;
                while (*to && *to != ' ')
                    to++;
                snprintf(more, sizeof(more), "%.*s", (int)(to - text), text);
            }
            assert_true(tokens_of(&s, more) > limit);
            free(part);
        }
        attn_scene_free(&s);
    }
    /* a text that fits is kept whole, without the spaces around it */
    load(&s, "english", "the cat sat");
    char *part;
    assert_int_equal(
        attn_scene_text_cut(&part, &s, "  fish moon king \n", TEXT_KEEP_LAST, 0, 128, &err), 0);
    assert_string_equal(part, "fish moon king");
    free(part);
    /* a text without spaces: its characters */
    char nospace[400];
    memset(nospace, 'x', 399);
    nospace[399] = '\0';
    assert_int_equal(attn_scene_text_cut(&part, &s, nospace, TEXT_KEEP_FIRST, 0, 20, &err), 0);
    assert_true(strlen(part) > 0 && tokens_of(&s, part) <= 20);
    assert_true(strspn(part, "x") == strlen(part));
    free(part);
    attn_scene_free(&s);
    free(text);
}

/* A window of positions: the whole words in it, as the scene numbers its tokens ([CLS] at 0). */
static void test_window(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag err;
    attn_diag_clear(&err);
    char *text = words(300, "w");
    load(&s, "english", "the cat sat");
    char *part;
    assert_int_equal(attn_scene_text_cut(&part, &s, text, TEXT_WINDOW, 100, 228, &err), 0);
    expect_whole_words(text, part);
    int n = tokens_of(&s, part);
    assert_true(n <= 128 && n > 100);
    /* its tokens are the text's at 100 .. 227: the words before it make at least 100 */
    size_t before = (size_t)(strstr(text, part) - text);
    char head[8192];
    snprintf(head, sizeof(head), "%.*s", (int)before - 1, text);
    int start = tokens_of(&s, head);
    assert_true(start >= 100 && start + n <= 228);
    free(part);
    assert_int_equal(attn_scene_text_cut(&part, &s, text, TEXT_WINDOW, 0, 5, &err), 0);
    assert_string_equal(part, "w0 w1"); /* "w", "0", " w", "1": the next word needs 2 more */
    free(part);
    assert_int_equal(attn_scene_text_cut(&part, &s, text, TEXT_WINDOW, 1, 2, &err), -1);
    assert_string_equal(err.msg, "no whole word lies in tokens 1 to 1");
    /* GPT-2's BPE reads a word with the space before it: " two" is the token the text had */
    assert_int_equal(attn_scene_text_cut(&part, &s, "one two", TEXT_WINDOW, 1, 2, &err), 0);
    assert_string_equal(part, " two");
    assert_int_equal(tokens_of(&s, part), 1);
    free(part);
    attn_scene_free(&s);

    /* BERT: [CLS] is position 0, so the text's own tokens start at 1 */
    load(&s, "bert-pair", "the cat sat");
    assert_int_equal(
        attn_scene_text_cut(&part, &s, "the cat sat on the mat", TEXT_WINDOW, 1, 3, &err), 0);
    assert_string_equal(part, "the cat");
    free(part);
    assert_int_equal(
        attn_scene_text_cut(&part, &s, "the cat sat on the mat", TEXT_WINDOW, 2, 4, &err), 0);
    assert_string_equal(part, "cat sat");
    free(part);
    attn_scene_free(&s);
    free(text);
}

/* The text edit takes a second sentence (text_pair), or drops it (""), and keeps the scene's
 * when not asked (NULL); a tokenizer without a template refuses two. */
static void test_edit_pair(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag err;
    struct attn_edit_effects fx;
    attn_diag_clear(&err);
    load(&s, "bert-pair", "the cat sat");
    struct attn_edit e = {.kind = EDIT_TEXT, .text = "the dog", .text_pair = "it ran"};
    assert_int_equal(attn_scene_check_edit(&s, &e, &err), 0);
    assert_int_equal(attn_scene_apply_edit(&s, &e, &fx, &err), 0);
    assert_string_equal(s.text_pair, "it ran");
    assert_int_equal(s.n_tokens, 7); /* [CLS] the dog [SEP] it ran [SEP] */
    assert_int_equal(s.token_types[6], 1);
    e = (struct attn_edit){.kind = EDIT_TEXT, .text = "a cat"};
    assert_int_equal(attn_scene_apply_edit(&s, &e, &fx, &err), 0);
    assert_string_equal(s.text_pair, "it ran"); /* the explorer's t keeps the pair */
    e = (struct attn_edit){.kind = EDIT_TEXT, .text = "a cat", .text_pair = ""};
    assert_int_equal(attn_scene_apply_edit(&s, &e, &fx, &err), 0);
    assert_null(s.text_pair);
    assert_int_equal(s.n_tokens, 4);
    attn_scene_free(&s);

    load(&s, "english", "the cat sat");
    e = (struct attn_edit){.kind = EDIT_TEXT, .text = "a", .text_pair = "b"};
    assert_int_equal(attn_scene_check_edit(&s, &e, &err), -1);
    assert_non_null(strstr(err.msg, "two sentences"));
    attn_scene_free(&s);
}

int main(void)
{
    scratch = tu_make_tmpdir("textfit");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit),
        cmocka_unit_test(test_keep_first_and_last),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_edit_pair),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_remove_tree(scratch);
    free(scratch);
    return rc;
}
