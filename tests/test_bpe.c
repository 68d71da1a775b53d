/* test_bpe: GPT-2's tokenizer (src/pretrained/bpe) id for id against the reference table.
 *
 * fixtures/gpt2-tokenizer holds GPT-2's vocab.json and merges.txt and ids.tsv, the ids the npm
 * package gpt-3-encoder (a port of OpenAI's encoder.py) gives for 118 texts (its README says
 * how it was made). Every line must come out exactly, and the tokens' bytes must give the text
 * back. Then labels, the merge order on a hand-made vocabulary, and broken files and text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pretrained/bpe.h"
#include "testutil.h"

static char *fixture(const char *name)
{
    const char *base = getenv("ATTNSCOPE_FIXTURES");
    if (!base)
        fail_msg("ATTNSCOPE_FIXTURES is not set (run the test through meson test)");
    size_t n = strlen(base) + strlen(name) + 32;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/gpt2-tokenizer/%s", base, name);
    return p;
}

static int load_gpt2(void **state)
{
    char *vocab = fixture("vocab.json"), *merges = fixture("merges.txt");
    struct bpe *b = NULL;
    struct diag err;
    int rc = attn_bpe_load(&b, vocab, merges, &err);
    if (rc != 0)
        fprintf(stderr, "%s:%d:%d: %s\n", err.file, err.line, err.col, err.msg);
    free(vocab);
    free(merges);
    *state = b;
    return rc;
}

static int free_gpt2(void **state)
{
    attn_bpe_free(*state);
    return 0;
}

/* Encodes text and checks the spans tile it and the tokens' bytes are exactly its bytes. */
static int *encode_checked(const struct bpe *b, const char *text, size_t len, int *n)
{
    int *ids;
    size_t *starts;
    struct diag err;
    if (attn_bpe_encode_spans(&ids, &starts, n, b, text, len, &err) != 0)
        fail_msg("encoding \"%.*s\": %s", (int)len, text, err.msg);
    assert_non_null(ids);
    assert_int_equal(starts[0], 0);
    assert_int_equal(starts[*n], len);
    for (int i = 0; i < *n; i++) {
        size_t tlen;
        const char *t = attn_bpe_token_bytes(b, ids[i], &tlen);
        assert_non_null(t);
        assert_int_equal(starts[i + 1] - starts[i], tlen);
        assert_memory_equal(text + starts[i], t, tlen);
    }
    /* The plain call gives the same ids. */
    int *again, n2;
    assert_int_equal(attn_bpe_encode(&again, &n2, b, text, len, &err), 0);
    assert_int_equal(n2, *n);
    if (*n)
        assert_memory_equal(again, ids, (size_t)*n * sizeof(int));
    free(again);
    free(starts);
    return ids;
}

static void expect_ids(const struct bpe *b, const char *text, size_t len, const int *want,
                       int n_want)
{
    int n;
    int *ids = encode_checked(b, text, len, &n);
    bool same = n == n_want && (n == 0 || memcmp(ids, want, (size_t)n * sizeof(int)) == 0);
    if (!same) {
        fprintf(stderr, "text \"%.*s\"\n  want", (int)len, text);
        for (int i = 0; i < n_want; i++)
            fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n  got ");
        for (int i = 0; i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    assert_true(same);
}

/* expect_ids for a string literal (NUL bytes included) and the ids that follow it. */
#define EXPECT_IDS(b, lit, ...)                                                                    \
    expect_ids(b, lit, sizeof(lit) - 1, (const int[]){__VA_ARGS__},                                \
               (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

/* ids.tsv's text column: \\, \t, \n and \r escaped. Unescapes in place; returns the length. */
static size_t unescape(char *s)
{
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] != '\\') {
            s[o++] = s[i];
            continue;
        }
        i++;
        switch (s[i]) {
        case '\\':
            s[o++] = '\\';
            break;
        case 't':
            s[o++] = '\t';
            break;
        case 'n':
            s[o++] = '\n';
            break;
        case 'r':
            s[o++] = '\r';
            break;
        default:
            fail_msg("ids.tsv: unknown escape \\%c", s[i]);
        }
    }
    s[o] = '\0';
    return o;
}

static void test_reference_table(void **state)
{
    const struct bpe *b = *state;
    assert_int_equal(attn_bpe_vocab_size(b), 50257);
    char *path = fixture("ids.tsv");
    char *table = tu_must_read_file(path, NULL);
    int cases = 0, wrong = 0;
    for (char *line = table, *next; *line; line = next) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        next = nl + 1;
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = '\0';
        size_t len = unescape(line);
        int want[4096], n_want = 0;
        for (char *p = tab + 1, *end; *p; p = end) {
            assert_true(n_want < 4096);
            want[n_want++] = (int)strtol(p, &end, 10);
            assert_true(end > p);
        }
        int n;
        int *ids = encode_checked(b, line, len, &n);
        if (n != n_want || (n && memcmp(ids, want, (size_t)n * sizeof(int)) != 0)) {
            fprintf(stderr, "ids.tsv line %d differs\n", cases + 1);
            wrong++;
        }
        free(ids);
        cases++;
    }
    printf("ids.tsv: %d cases, %d differ\n", cases, wrong);
    free(table);
    free(path);
    assert_true(cases >= 60);
    assert_int_equal(wrong, 0);
}

/* Where gpt-3-encoder's JavaScript \s differs from Python's (U+0085 NEXT LINE is White_Space,
 * U+FEFF is not), the ids of OpenAI's encoder.py (Python 3, regex 2026.5.9): the pieces split
 * differently, so the merges do too. */
static void test_python_whitespace(void **state)
{
    const struct bpe *b = *state;
    EXPECT_IDS(b, " \xC2\x85.", 220, 126, 227, 13);
    EXPECT_IDS(b, "\n\n\xC2\x85", 628, 126, 227);
    EXPECT_IDS(b,
               "  \xC2\x85"
               "a",
               220, 220, 126, 227, 64);
    EXPECT_IDS(b, " \xEF\xBB\xBF)", 27332, 119, 123, 8);
    EXPECT_IDS(b, "\n\n\xEF\xBB\xBF", 198, 198, 171, 119, 123);
}

static void test_spans_and_ids(void **state)
{
    const struct bpe *b = *state;
    int *ids, n;
    size_t *starts;
    struct diag err;
    assert_int_equal(attn_bpe_encode_spans(&ids, &starts, &n, b, "Hello world", 11, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 15496);
    assert_int_equal(ids[1], 995);
    assert_int_equal(starts[1], 5);
    assert_int_equal(starts[2], 11);
    free(ids);
    free(starts);
    /* Empty text: no tokens, but an array to free. */
    assert_int_equal(attn_bpe_encode(&ids, &n, b, "", 0, &err), 0);
    assert_int_equal(n, 0);
    assert_non_null(ids);
    free(ids);
    /* A NUL byte is text too (a control character, byte 0's token). */
    EXPECT_IDS(b, "a\0b", 64, 188, 65);
    assert_int_equal(attn_bpe_token_id(b, " the", 4), 262);
    assert_int_equal(attn_bpe_token_id(b, " qwzx", 5), -1);
}

static void test_labels(void **state)
{
    const struct bpe *b = *state;
    char label[64];
    size_t len;
    assert_string_equal(attn_bpe_token_bytes(b, 262, &len), " the"); /* "Ġthe" */
    assert_int_equal(len, 4);
    attn_bpe_token_label(label, sizeof(label), b, 262);
    assert_string_equal(label, " the");
    assert_string_equal(attn_bpe_token_bytes(b, 50256, &len), "<|endoftext|>");
    /* Partial UTF-8: "â" is the byte E2 alone, "âĢ" the bytes E2 80. */
    int e2 = attn_bpe_token_id(b, "\xE2", 1), e280 = attn_bpe_token_id(b, "\xE2\x80", 2);
    assert_true(e2 >= 0 && e280 >= 0);
    attn_bpe_token_label(label, sizeof(label), b, e2);
    assert_string_equal(label, "<E2>");
    attn_bpe_token_label(label, sizeof(label), b, e280);
    assert_string_equal(label, "<E2><80>");
    /* A whole character is text; " é" is "ĠÃ©". */
    int e_acute = attn_bpe_token_id(b, " \xC3\xA9", 3);
    assert_true(e_acute >= 0);
    attn_bpe_token_label(label, sizeof(label), b, e_acute);
    assert_string_equal(label, " \xC3\xA9");
    /* Control characters never reach a label: "Ċ" is a newline, "ĉ" a tab. */
    attn_bpe_token_label(label, sizeof(label), b, 198);
    assert_string_equal(label, "<0A>");
    attn_bpe_token_label(label, sizeof(label), b, 628);
    assert_string_equal(label, "<0A><0A>");
    attn_bpe_token_label(label, sizeof(label), b, attn_bpe_token_id(b, "\r", 1));
    assert_string_equal(label, "<0D>");
    attn_bpe_token_label(label, sizeof(label), b, attn_bpe_token_id(b, "\t", 1));
    assert_string_equal(label, "<09>");
    attn_bpe_token_label(label, sizeof(label), b, attn_bpe_token_id(b, "\x7F", 1));
    assert_string_equal(label, "<7F>");
    /* Cut at a whole character or <XX>: " the" in 3 bytes is " t", "<E2><80>" in 6 is "<E2>". */
    attn_bpe_token_label(label, 3, b, 262);
    assert_string_equal(label, " t");
    attn_bpe_token_label(label, 6, b, e280);
    assert_string_equal(label, "<E2>");
    attn_bpe_token_label(label, 3, b, e_acute);
    assert_string_equal(label, " ");
    attn_bpe_token_label(label, 1, b, 262);
    assert_string_equal(label, "");
    /* Ids outside the vocabulary. */
    assert_null(attn_bpe_token_bytes(b, 50257, &len));
    assert_int_equal(len, 0);
    assert_null(attn_bpe_token_bytes(b, -1, &len));
    attn_bpe_token_label(label, sizeof(label), b, 50257);
    assert_string_equal(label, "<unused 50257>");
}

static void test_invalid_utf8(void **state)
{
    const struct bpe *b = *state;
    static const struct {
        const char *text;
        size_t len, at;
    } cases[] = {
        {"ab\xC3(", 4, 2},          /* a lead byte without its continuation */
        {"\xFF", 1, 0},             /* never UTF-8 */
        {"abc\xE2\x82", 5, 3},      /* cut at the end */
        {"x \xED\xA0\x80", 5, 2},   /* a surrogate */
        {"ok \xC0\xAF", 5, 3},      /* overlong '/' */
        {"caf\xC3\xA9 \x80", 7, 6}, /* a stray continuation after valid text */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int *ids = (int *)1, n = -1;
        struct diag err;
        assert_int_equal(attn_bpe_encode(&ids, &n, b, cases[i].text, cases[i].len, &err), -1);
        assert_null(ids);
        assert_int_equal(n, 0);
        char want[64];
        snprintf(want, sizeof(want), "not valid UTF-8 at byte %zu ", cases[i].at);
        if (!strstr(err.msg, want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, want);
    }
}

/* Long pieces, each one piece of 256 KiB: merged in n log n, not n squared. */
static void test_long_pieces(void **state)
{
    const struct bpe *b = *state;
    size_t len = 256 * 1024;
    char *text = malloc(len);
    assert_non_null(text);
    static const struct {
        const char *unit; /* repeated */
        int n, id;        /* tokens and the first one */
    } fills[] = {
        {"a", 256 * 1024 / 4, 24794}, /* "aaaa" */
        {" ", 256 * 1024, 220},       /* GPT-2 has no token of two spaces */
        {"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 0, 0},
    };
    for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
        size_t u = strlen(fills[f].unit);
        for (size_t i = 0; i < len; i++)
            text[i] = fills[f].unit[i % u];
        int n;
        int *ids = encode_checked(b, text, len, &n);
        if (fills[f].n) {
            assert_int_equal(n, fills[f].n);
            assert_int_equal(ids[0], fills[f].id);
        } else {
            assert_true(n > 0 && (size_t)n < len);
        }
        free(ids);
    }
    free(text);
}

/* ---- hand-made vocabularies and broken files ---- */

struct scratch {
    char *dir;
    char vocab[4096], merges[4096];
};

static void scratch_files(struct scratch *s, const char *vocab, const char *merges)
{
    snprintf(s->vocab, sizeof(s->vocab), "%s/vocab.json", s->dir);
    snprintf(s->merges, sizeof(s->merges), "%s/merges.txt", s->dir);
    tu_write_text(s->vocab, vocab);
    tu_write_text(s->merges, merges);
}

/* Loads the two texts, which must fail with a message containing want at file:line:col. */
static void expect_load_error(struct scratch *s, const char *vocab, const char *merges,
                              bool in_merges, int line, int col, const char *want)
{
    scratch_files(s, vocab, merges);
    struct bpe *b = (struct bpe *)1;
    struct diag err;
    assert_int_equal(attn_bpe_load(&b, s->vocab, s->merges, &err), -1);
    assert_null(b);
    const char *file = in_merges ? s->merges : s->vocab;
    if (strcmp(err.file, file) != 0 || err.line != line || err.col != col || !strstr(err.msg, want))
        fail_msg("got %s:%d:%d: %s\nwant %s:%d:%d: ...%s...", err.file, err.line, err.col, err.msg,
                 file, line, col, want);
}

static int scratch_setup(void **state)
{
    struct scratch *s = calloc(1, sizeof(*s));
    s->dir = tu_make_tmpdir("bpe");
    *state = s;
    return 0;
}

static int scratch_teardown(void **state)
{
    struct scratch *s = *state;
    tu_remove_tree(s->dir);
    free(s->dir);
    free(s);
    return 0;
}

static void test_missing_files(void **state)
{
    struct scratch *s = *state;
    scratch_files(s, "{\"a\": 0}", "#version: 0.2\n");
    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/nothing.json", s->dir);
    struct bpe *b;
    struct diag err;
    assert_int_equal(attn_bpe_load(&b, missing, s->merges, &err), -1);
    assert_string_equal(err.file, missing);
    assert_non_null(strstr(err.msg, "cannot open"));
    assert_int_equal(attn_bpe_load(&b, s->vocab, missing, &err), -1);
    assert_string_equal(err.file, missing);
    assert_int_equal(attn_bpe_load(&b, s->dir, s->merges, &err), -1); /* a folder */
    assert_string_equal(err.file, s->dir);
}

static void test_bad_vocab(void **state)
{
    struct scratch *s = *state;
    const char *m = "#version: 0.2\n";
    expect_load_error(s, "[1, 2]", m, false, 0, 0, "expected a JSON object");
    expect_load_error(s, "{}", m, false, 0, 0, "empty");
    expect_load_error(s, "", m, false, 1, 1, "not valid JSON");
    expect_load_error(s, "{\n  \"a\": 1,\n  \"b\" 2\n}", m, false, 3, 7, "not valid JSON");
    expect_load_error(s, "{\"a\": 0, \"a\": 1}", m, false, 1, 12, "duplicate");
    expect_load_error(s, "{\"a\": \"1\"}", m, false, 0, 0,
                      "token \"a\": the id must be an integer");
    expect_load_error(s, "{\"a\": 1.0}", m, false, 0, 0, "must be an integer");
    expect_load_error(s, "{\"a\": -1}", m, false, 0, 0, "id -1 is out of range");
    expect_load_error(s, "{\"a\": 99999999}", m, false, 0, 0, "id 99999999 is out of range");
    expect_load_error(s, "{\"a\": 0, \"b\": 1, \"c\": 0}", m, false, 0, 0,
                      "tokens \"a\" and \"c\" have the same id 0");
    expect_load_error(s, "{\"a b\": 0}", m, false, 0, 0,
                      "token \"a b\": character 2 (U+0020) is not one of GPT-2's 256");
    expect_load_error(s, "{\"\xE2\x96\x81the\": 0}", m, false, 0, 0, "(U+2581)");
    expect_load_error(s, "{\"\\u0000\": 0}", m, false, 1, 9, "NUL byte in object key");
    expect_load_error(s, "{\"\": 0}", m, false, 0, 0, "an empty token");
    expect_load_error(s, "{\"\\n\": 0}", m, false, 0, 0, "token \"\\n\"");
    /* ESC and a bidi override are shown escaped (common/utf8.h), never raw. */
    expect_load_error(s, "{\"\\u001b[2J\\u202e\": 0}", m, false, 0, 0, "token \"\\e[2J<U+202E>\"");
    expect_load_error(s, "\xEF\xBB\xBF{\"a\": 0}", m, false, 1, 1,
                      "the file starts with a byte order mark (<U+FEFF>)");
    expect_load_error(s, "{\"a\": 0 \xEF\xBB\xBF}", m, false, 1, 11, "near '<U+FEFF>'");
}

static void test_bad_merges(void **state)
{
    struct scratch *s = *state;
    const char *v = "{\"a\": 0, \"b\": 1, \"ab\": 2, \"\xC4\xA0\": 3}";
    expect_load_error(s, v, "#version: 0.2\na b\nab\n", true, 3, 3, "one symbol");
    expect_load_error(s, v, "a b c\n", true, 1, 4, "more than two symbols");
    expect_load_error(s, v, " a b\n", true, 1, 1, "starts with a space");
    expect_load_error(s, v, "a \n", true, 1, 3, "second symbol is missing");
    expect_load_error(s, v, "a b\n\nb a\n", true, 2, 1, "an empty line");
    expect_load_error(s, v, "a b\nabb a\n", true, 2, 1,
                      "\"abb\" is neither a token of the vocabulary nor made by an earlier merge");
    expect_load_error(s, v, "a b\nb ba\n", true, 2, 3, "\"ba\" is neither");
    expect_load_error(s, v, "a b\na \xE2\x96\x81\n", true, 2, 3, "U+2581 is not one of");
    expect_load_error(s, v, "a b\nb \xC4\xA0x\xFF\n", true, 2, 6, "not valid UTF-8");
    expect_load_error(s, v, "a b\nb a\na b\n", true, 3, 1, "repeats the merge of line 1");
    expect_load_error(s, v, "#version: 0.2\na b\na b\n", true, 3, 1, "repeats the merge of line 2");
    /* Empty: a failed download, not a tokenizer without merges (the "#version" line alone is
       one, test_hand_made). */
    expect_load_error(s, v, "", true, 0, 0,
                      "is empty: a merges.txt starts with \"#version: 0.2\" and lists one merge");
    expect_load_error(s, v, "\n", true, 1, 1, "an empty line");
}

/* merges.txt is grown as its lines are read, never sized by counting them first: 60 MB of
 * newlines is refused at line 1 for little more than the file itself (it cost 600 MB first). */
static void test_merges_not_sized_first(void **state)
{
    struct scratch *s = *state;
    size_t len = (size_t)60 << 20;
    char *nl = malloc(len + 1);
    assert_non_null(nl);
    memset(nl, '\n', len);
    nl[len] = '\0';
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    expect_load_error(s, "{\"a\": 0}", nl, true, 1, 1, "an empty line");
    getrusage(RUSAGE_SELF, &after);
    free(nl);
    long grew_mib = (after.ru_maxrss - before.ru_maxrss) / 1024; /* ru_maxrss is in KiB */
    if (grew_mib > 250)
        fail_msg("loading 60 MB of newlines took %ld MiB more", grew_mib);
}

static void test_hand_made(void **state)
{
    struct scratch *s = *state;
    struct bpe *b;
    struct diag err;
    int *ids, n;
    /* "ab a" ranks before "a b": encoder.py merges every "a b" of "abab" first (one round),
     * giving "ab ab"; merging one pair at a time by the lowest rank would give "aba b". A
     * merges.txt saved on Windows (CRLF) and without "#version" loads too. */
    scratch_files(s, "{\"a\": 0, \"b\": 1, \"ab\": 2, \"aba\": 3, \"aa\": 4}",
                  "ab a\r\na b\r\na a\r\n");
    assert_int_equal(attn_bpe_load(&b, s->vocab, s->merges, &err), 0);
    assert_int_equal(attn_bpe_vocab_size(b), 5);
    expect_ids(b, "abab", 4, (const int[]){2, 2}, 2);
    expect_ids(b, "aba", 3, (const int[]){3}, 1);
    expect_ids(b, "aaa", 3, (const int[]){4, 0}, 2); /* left to right, never overlapping */
    expect_ids(b, "aaaa", 4, (const int[]){4, 4}, 2);
    /* A symbol the vocabulary lacks is an error naming it and its piece. */
    assert_int_equal(attn_bpe_encode(&ids, &n, b, "ab c", 4, &err), -1);
    assert_null(ids);
    assert_non_null(strstr(err.msg, "\"\xC4\xA0\" (in \"\xC4\xA0"
                                    "c\" at byte 2)"));
    attn_bpe_free(b);

    /* Ids with gaps: the size is one more than the largest id, the gaps are unused. */
    scratch_files(s, "{\"a\": 5, \"b\": 1}", "#version: 0.2\n");
    assert_int_equal(attn_bpe_load(&b, s->vocab, s->merges, &err), 0);
    assert_int_equal(attn_bpe_vocab_size(b), 6);
    char label[32];
    attn_bpe_token_label(label, sizeof(label), b, 2);
    assert_string_equal(label, "<unused 2>");
    expect_ids(b, "ba", 2, (const int[]){1, 5}, 2);
    /* "ab" has no merge: the bytes stay apart. */
    expect_ids(b, "ab", 2, (const int[]){5, 1}, 2);
    attn_bpe_free(b);

    /* A merges symbol may be a token that no earlier line makes ("<|x|>"). */
    scratch_files(s, "{\"a\": 0, \"<|x|>\": 1, \"<|x|>a\": 2}", "<|x|> a\n");
    assert_int_equal(attn_bpe_load(&b, s->vocab, s->merges, &err), 0);
    attn_bpe_free(b);
    attn_bpe_free(NULL);
}

int main(void)
{
    const struct CMUnitTest gpt2[] = {
        cmocka_unit_test(test_reference_table), cmocka_unit_test(test_python_whitespace),
        cmocka_unit_test(test_spans_and_ids),   cmocka_unit_test(test_labels),
        cmocka_unit_test(test_invalid_utf8),    cmocka_unit_test(test_long_pieces),
    };
    const struct CMUnitTest files[] = {
        cmocka_unit_test(test_missing_files), cmocka_unit_test(test_bad_vocab),
        cmocka_unit_test(test_bad_merges),    cmocka_unit_test(test_merges_not_sized_first),
        cmocka_unit_test(test_hand_made),
    };
    int failed = cmocka_run_group_tests_name("gpt2", gpt2, load_gpt2, free_gpt2);
    failed += cmocka_run_group_tests_name("files", files, scratch_setup, scratch_teardown);
    return failed ? 1 : 0;
}
