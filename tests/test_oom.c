/* test_oom: out of memory is an error the library returns, never an abort (issue 17).
 *
 * Each sweep runs one piece of work (load a tokenizer and encode; load a scene, compute it and
 * look at every stage of every head; ...) once to count its allocations, then once for every
 * n with the n-th allocation failing (oomhook.c, linked with --wrap), and once more for every n
 * with every allocation from the n-th on failing (a machine that stays out of memory). Every
 * run must either succeed with exactly the first run's results, or fail with an error that
 * says "memory"; nothing may abort, and nothing allocated may be left behind (checked here on
 * the hook's own list of live blocks, and by LeakSanitizer in the ASan build). jansson's and
 * ICU's allocations go through the hook too in the sweeps that read small files, so their
 * failures are covered; libyaml, PCRE2 and OpenBLAS allocate out of its reach.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <attnscope/attnscope.h>
#include <curses.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/uclean.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/diag.h"
#include "engine/attention.h"
#include "engine/edit.h"
#include "engine/logits.h"
#include "engine/net.h"
#include "engine/scene.h"
#include "engine/stage.h"
#include "export/export.h"
#include "oomhook.h"
#include "pretrained/bpe.h"
#include "pretrained/hftok.h"
#include "scenefile/scenefile.h"
#include "testutil.h"
#include "explore/appstate.h"
#include "ui/ui.h"

/* ---- jansson and ICU through the hook, when a sweep asks for it ---- */

static bool route_libs;
void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);

/* jansson 2.14 ignores a failed growth of its lexer's text buffer (lex_save) and reads on with a
 * character missing: a key 'add_prefix_space' comes out 'add_prefix_spae', or the lexer runs
 * off its buffer. That is jansson's bug, not one the library can see, so those allocations (the
 * buffer doubles from 16 bytes: 32, 64, 128, ...) are never failed; every other allocation of
 * jansson's is. */
static bool jansson_lexer_growth(size_t n)
{
    return n >= 32 && (n & (n - 1)) == 0;
}

static void *json_alloc(size_t n)
{
    return route_libs && !jansson_lexer_growth(n) ? oom_malloc(n) : __real_malloc(n);
}

static void *lib_malloc(size_t n)
{
    return route_libs ? oom_malloc(n) : __real_malloc(n);
}

static void *U_CALLCONV icu_alloc(const void *ctx, size_t n)
{
    (void)ctx;
    return lib_malloc(n);
}

static void *U_CALLCONV icu_realloc(const void *ctx, void *p, size_t n)
{
    (void)ctx;
    return route_libs ? realloc(p, n) : __real_realloc(p, n);
}

static void U_CALLCONV icu_free(const void *ctx, void *p)
{
    (void)ctx;
    oom_free(p);
}

/* ---- the sweep ---- */

/* What a piece of work gives back: 0 or -1 with a message, and a digest of its results. */
struct sweep_outcome {
    int rc;
    char msg[DIAG_FILE_MAX + DIAG_MSG_MAX + 2];
    uint64_t digest;
};

typedef void (*work_fn)(struct sweep_outcome *out, const void *arg);

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211u;
    return h;
}

/* Where a sweep is, for the SIGABRT handler: an abort names the allocation that caused it. */
static const char *sweep_name = "";
static long sweep_nth;
static bool sweep_after;

static void on_abort(int sig)
{
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "\ntest_oom: %s aborted with allocation %ld failing%s\n",
                     sweep_name, sweep_nth, sweep_after ? " (and every later one)" : "");
    if (n > 0)
        (void)!write(2, buf, (size_t)n);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void check_live(const char *name, long nth, bool after)
{
    size_t size;
    long live = oom_live(&size);
    if (live)
        fail_msg("%s, allocation %ld failing%s: %ld blocks left allocated (one of %zu bytes)", name,
                 nth, after ? " (and every later one)" : "", live, size);
}

/* Runs work with every n-th allocation failing, in turn, for n up to limit (0: all of its
 * allocations); the counts go to stdout. */
static void sweep_first(const char *name, work_fn work, const void *arg, bool libs, long limit)
{
    route_libs = libs;
    sweep_name = name;
    /* once unarmed, for what jansson and ICU keep for good (caches made on first use) */
    struct sweep_outcome ref;
    work(&ref, arg);
    oom_arm(0, false);
    work(&ref, arg);
    oom_disarm();
    long total = oom_count();
    if (ref.rc != 0)
        fail_msg("%s fails without a failing allocation: %s", name, ref.msg);
    check_live(name, 0, false);
    assert_true(total > 0);
    /* OOM_ONLY=N runs allocation N failing alone (with OOM_TRACE=1: where it is) */
    const char *only = getenv("OOM_ONLY");
    long first = only ? atol(only) : 1, last = only ? first : total;
    if (limit > 0 && last > limit)
        last = limit;
    for (int after = 0; after <= (only ? 0 : 1); after++) {
        long errors = 0, recovered = 0;
        for (long n = first; n <= last; n++) {
            sweep_nth = n;
            sweep_after = after;
            struct sweep_outcome o;
            memset(&o, 0, sizeof(o));
            oom_arm(n, after);
            work(&o, arg);
            long failed = oom_disarm();
            check_live(name, n, after);
            if (failed == 0) /* fewer allocations this time: nothing failed */
                fail_msg("%s: %ld allocations, then fewer than %ld", name, total, n);
            if (only)
                printf("%s, allocation %ld failing: %s\n", name, n, o.rc ? o.msg : "succeeded");
            if (o.rc != 0) {
                if (!strstr(o.msg, "memory"))
                    fail_msg("%s, allocation %ld failing%s: the error does not say out of "
                             "memory: %s",
                             name, n, after ? " (and every later one)" : "", o.msg);
                errors++;
            } else {
                if (o.digest != ref.digest)
                    fail_msg("%s, allocation %ld failing%s: succeeded with other results", name, n,
                             after ? " (and every later one)" : "");
                recovered++;
            }
        }
        printf("%s: %ld allocations%s; with %s: %ld errors, %ld succeeded all the same\n", name,
               total, last < total && !only ? " (the first ones swept)" : "",
               after ? "the n-th and every later one failing" : "the n-th failing", errors,
               recovered);
    }
    fflush(stdout);
    route_libs = false;
    sweep_name = "";
}

static void sweep(const char *name, work_fn work, const void *arg, bool libs)
{
    sweep_first(name, work, arg, libs, 0);
}

static char *fixture(const char *rel)
{
    const char *dir = getenv("ATTNSCOPE_FIXTURES");
    if (!dir || !*dir)
        fail_msg("ATTNSCOPE_FIXTURES is not set (run the test through meson test)");
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

static void set_error(struct sweep_outcome *out, const struct diag *err)
{
    out->rc = -1;
    snprintf(out->msg, sizeof(out->msg), "%s%s%s", err->file, err->file[0] ? ": " : "", err->msg);
}

/* ---- GPT-2's BPE ---- */

struct bpe_arg {
    const char *vocab, *merges, *text;
    const struct bpe *loaded; /* encode with this one instead of loading */
};

static void work_bpe(struct sweep_outcome *out, const void *p)
{
    const struct bpe_arg *a = p;
    struct diag err;
    struct bpe *b = NULL;
    out->rc = 0;
    out->digest = 14695981039346656037u;
    if (!a->loaded && attn_bpe_load(&b, a->vocab, a->merges, &err) != 0) {
        set_error(out, &err);
        return;
    }
    const struct bpe *t = a->loaded ? a->loaded : b;
    int *ids = NULL, n = 0;
    size_t *starts = NULL;
    if (attn_bpe_encode(&ids, &n, t, a->text, strlen(a->text), &err) != 0) {
        set_error(out, &err);
    } else {
        out->digest = mix(out->digest, ids, (size_t)n * sizeof(int));
        free(ids);
        if (attn_bpe_encode_spans(&ids, &starts, &n, t, a->text, strlen(a->text), &err) != 0) {
            set_error(out, &err);
        } else {
            out->digest = mix(out->digest, ids, (size_t)n * sizeof(int));
            out->digest = mix(out->digest, starts, ((size_t)n + 1) * sizeof(size_t));
            free(ids);
            free(starts);
        }
    }
    attn_bpe_free(b);
}

/* The text of every line of ids.tsv, joined: 118 texts, several hundred tokens. */
static char *ids_tsv_text(const char *path)
{
    char *tsv = tu_must_read_file(path, NULL);
    size_t o = 0;
    for (char *line = tsv, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        char *tab = memchr(line, '\t', (size_t)(next - line));
        size_t len = tab ? (size_t)(tab - line) : 0;
        memmove(tsv + o, line, len);
        o += len;
        tsv[o++] = ' ';
    }
    tsv[o] = '\0';
    return tsv;
}

/* GPT-2's own files: the load with a short text, then a long text on a loaded tokenizer (one
 * load is a tenth of a second: its 70 allocations are swept once each, the encoding's 180 on
 * one tokenizer). */
static void test_bpe_gpt2(void **state)
{
    (void)state;
    char *v = fixture("gpt2-tokenizer/vocab.json"), *m = fixture("gpt2-tokenizer/merges.txt");
    char *ids = fixture("gpt2-tokenizer/ids.tsv"), *text = ids_tsv_text(ids);
    struct bpe_arg a = {v, m, "Hello, world! The quick brown fox.", NULL};
    sweep("GPT-2's BPE (fixtures/gpt2-tokenizer) loaded", work_bpe, &a, false);
    struct diag err;
    struct bpe *b;
    assert_int_equal(attn_bpe_load(&b, v, m, &err), 0);
    struct bpe_arg e = {NULL, NULL, text, b};
    sweep("GPT-2's BPE encoding the 118 texts of ids.tsv", work_bpe, &e, false);
    attn_bpe_free(b);
    free(v);
    free(m);
    free(ids);
    free(text);
}

static char *golden(const char *rel)
{
    const char *dir = getenv("ATTNSCOPE_GOLDEN_DIR");
    if (!dir || !*dir)
        fail_msg("ATTNSCOPE_GOLDEN_DIR is not set (run the test through meson test)");
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

/* The tiny GPT-2's vocabulary, small enough to sweep with jansson's allocations failing too. */
static void test_bpe_tiny(void **state)
{
    (void)state;
    char *v = golden("gpt2/vocab.json"), *m = golden("gpt2/merges.txt");
    struct bpe_arg a = {v, m,
                        "The cat sat on the mat, and the cat's hat was red. In the evening the "
                        "old man read the paper by the window.\n\n  \xC3\xA9t\xC3\xA9 42!",
                        NULL};
    sweep("the tiny GPT-2's BPE (golden/gpt2), jansson included", work_bpe, &a, true);
    free(v);
    free(m);
}

/* ---- Hugging Face's tokenizer.json ---- */

struct hf_arg {
    const char *path;  /* a file, or */
    const char *bytes; /* a tokenizer.json in memory */
    const char *text, *pair;
};

static void work_hftok(struct sweep_outcome *out, const void *p)
{
    const struct hf_arg *a = p;
    struct diag err;
    struct hftok *t = NULL;
    out->rc = 0;
    out->digest = 14695981039346656037u;
    int rc = a->path ? attn_hftok_load(&t, a->path, NULL, &err)
                     : attn_hftok_load_bytes(&t, a->bytes, strlen(a->bytes), "tokenizer.json", NULL,
                                             0, NULL, &err);
    if (rc != 0) {
        set_error(out, &err);
        return;
    }
    for (int special = 0; special <= 1 && out->rc == 0; special++) {
        struct hftok_encoding e = {0};
        if (attn_hftok_encode(&e, t, a->text, strlen(a->text), a->pair,
                              a->pair ? strlen(a->pair) : 0, special, &err) != 0) {
            set_error(out, &err);
            break;
        }
        out->digest = mix(out->digest, e.ids, (size_t)e.n * sizeof(int));
        out->digest = mix(out->digest, e.type_ids, (size_t)e.n * sizeof(int));
        out->digest = mix(out->digest, e.special, (size_t)e.n);
        for (int i = 0; i < e.n; i++) {
            char label[64];
            attn_hftok_token_label(label, sizeof(label), t, e.ids[i]);
            out->digest = mix(out->digest, label, strlen(label));
        }
        attn_hftok_encoding_free(&e);
    }
    attn_hftok_free(t);
}

static void test_hftok_induction(void **state)
{
    (void)state;
    char *path = fixture("hf/induction/tokenizer.json");
    struct hf_arg a = {path, NULL,
                       "fish moon king door gold rain lake tree wolf sand cake bird rose ship "
                       "apple star fish moon king door",
                       NULL};
    sweep("tokenizer.json (fixtures/hf/induction), jansson and ICU included", work_hftok, &a, true);
    free(path);
}

/* Llama 2's and Mistral's pipeline in small: added tokens, a normaliser sequence, Metaspace,
 * BPE with byte fallback, a template with BOS, and a decoder sequence. */
static const char sentencepiece_json[] =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
    " \"added_tokens\": ["
    "  {\"id\": 0, \"content\": \"<unk>\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true},"
    "  {\"id\": 1, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true},"
    "  {\"id\": 2, \"content\": \"</s>\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
    "  {\"type\": \"NFKC\"}, {\"type\": \"Prepend\", \"prepend\": \"\xE2\x96\x81\"},"
    "  {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"}]},"
    " \"pre_tokenizer\": null,"
    " \"post_processor\": {\"type\": \"TemplateProcessing\","
    "  \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
    "             {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
    "  \"pair\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
    "           {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
    "           {\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 1}},"
    "           {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}],"
    "  \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]}}},"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": ["
    "  {\"type\": \"Replace\", \"pattern\": {\"String\": \"\xE2\x96\x81\"}, \"content\": \" \"},"
    "  {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"},"
    "  {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}]},"
    " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\","
    "  \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null,"
    "  \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": false,"
    "  \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"<0x0A>\": 3, \"<0xC3>\": 4,"
    "   \"<0xA9>\": 5, \"\xE2\x96\x81\": 6, \"t\": 7, \"h\": 8, \"e\": 9, \"c\": 10, \"a\": 11,"
    "   \"\xE2\x96\x81t\": 12, \"he\": 13, \"\xE2\x96\x81the\": 14, \"at\": 15, \"\xE2\x96\x81"
    "c\": 16,"
    "   \"\xE2\x96\x81"
    "cat\": 17, \"s\": 18},"
    "  \"merges\": [\"\xE2\x96\x81 t\", \"h e\", \"\xE2\x96\x81t he\", \"a t\","
    "   \"\xE2\x96\x81 c\", \"\xE2\x96\x81"
    "c at\"]}}";

static void test_hftok_sentencepiece(void **state)
{
    (void)state;
    struct hf_arg a = {NULL, sentencepiece_json, "the cat\nthe cats \xC3\xA9<s>the</s>", "cat the"};
    sweep("a SentencePiece-style tokenizer.json, jansson and ICU included", work_hftok, &a, true);
}

/* BERT's pipeline in small: BertNormalizer (accents stripped, lower case, Chinese characters
 * spaced), BertPreTokenizer, WordPiece and BertProcessing with a pair. */
static const char wordpiece_json[] =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
    " \"added_tokens\": ["
    "  {\"id\": 0, \"content\": \"[PAD]\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true},"
    "  {\"id\": 1, \"content\": \"[UNK]\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true},"
    "  {\"id\": 2, \"content\": \"[CLS]\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true},"
    "  {\"id\": 3, \"content\": \"[SEP]\", \"single_word\": false, \"lstrip\": false,"
    "   \"rstrip\": false, \"normalized\": false, \"special\": true}],"
    " \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true,"
    "  \"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true},"
    " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
    " \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3],"
    "  \"cls\": [\"[CLS]\", 2]},"
    " \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true},"
    " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\","
    "  \"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100,"
    "  \"vocab\": {\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3, \"the\": 4,"
    "   \"cat\": 5, \"##s\": 6, \"cafe\": 7, \",\": 8, \"!\": 9, \"\xE4\xB8\xAD\": 10}}}";

static void test_hftok_wordpiece(void **state)
{
    (void)state;
    struct hf_arg a = {NULL, wordpiece_json, "The Cats, the Caf\xC3\xA9!\xE4\xB8\xAD dog",
                       "the cat"};
    sweep("a WordPiece tokenizer.json (BERT's pipeline), jansson and ICU included", work_hftok, &a,
          true);
}

/* ---- scenes ---- */

struct scene_arg {
    const char *path; /* NULL: the built-in default scene */
    bool predict;     /* and the model's predictions */
};

static uint64_t digest_net(uint64_t h, const struct attn_net *net)
{
    for (int L = 0; L < net->layers; L++) {
        const struct attn_model *m = &net->model[L];
        const struct attn_run *r = &net->run[L];
        enum attn_stage order[STAGE_COUNT];
        int k = attn_stage_order(order, m);
        for (int i = 0; i < k; i++)
            for (int head = 0; head < (attn_stage_is_per_head(order[i]) ? m->heads : 1); head++) {
                struct attn_mat_view v = attn_view(r, m, order[i], head);
                for (int row = 0; row < v.rows; row++)
                    h = mix(h, v.data + (size_t)row * v.stride, (size_t)v.cols * sizeof(float));
            }
    }
    return h;
}

static void work_scene(struct sweep_outcome *out, const void *p)
{
    const struct scene_arg *a = p;
    struct attn_scene s;
    struct diag err;
    out->rc = 0;
    out->digest = 14695981039346656037u;
    if (!a->path) {
        if (attn_scene_init_default(&s) != 0) {
            out->rc = -1;
            snprintf(out->msg, sizeof(out->msg), "attn_scene_init_default: out of memory");
            return;
        }
    } else {
        struct diag_list errs;
        attn_diag_list_init(&errs);
        if (attn_scenefile_load(&s, a->path, &errs, NULL, NULL) != 0) {
            out->rc = -1;
            /* the first problem, or the one that says why */
            snprintf(out->msg, sizeof(out->msg), "%s", errs.n ? errs.items[0].msg : "no problem");
            for (int i = 0; i < errs.n; i++)
                if (strstr(errs.items[i].msg, "memory"))
                    snprintf(out->msg, sizeof(out->msg), "%s", errs.items[i].msg);
            if (errs.lost)
                snprintf(out->msg, sizeof(out->msg), "%d problems lost: out of memory", errs.lost);
            attn_diag_list_free(&errs);
            return;
        }
        attn_diag_list_free(&errs);
    }
    struct attn_net net = {0};
    if (attn_net_compute(&net, &s, &err) != 0) {
        set_error(out, &err);
    } else {
        out->digest = digest_net(out->digest, &net);
        if (a->predict) {
            struct attn_predictions pr = {0};
            if (attn_predict(&pr, &net, net.layers - 1, 0, net.model[0].n, 3, 1.0, NULL, &err)) {
                set_error(out, &err);
            } else {
                out->digest =
                    mix(out->digest, pr.top, (size_t)pr.count * (size_t)pr.k * sizeof(*pr.top));
                out->digest = mix(out->digest, pr.next_prob, (size_t)pr.count * sizeof(double));
                attn_predictions_free(&pr);
            }
        }
    }
    attn_net_free(&net);
    attn_scene_free(&s);
}

static char *scene_path(const char *rel)
{
    const char *dir = getenv("ATTNSCOPE_SCENES_DIR");
    if (!dir || !*dir)
        fail_msg("ATTNSCOPE_SCENES_DIR is not set (run the test through meson test)");
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

static void test_scene_default(void **state)
{
    (void)state;
    struct scene_arg a = {NULL, false};
    sweep("the built-in scene, computed", work_scene, &a, false);
}

static void test_scene_mha(void **state)
{
    (void)state;
    char *path = scene_path("10-mha.yaml");
    struct scene_arg a = {path, false};
    sweep("scenes/10-mha.yaml, loaded and computed", work_scene, &a, false);
    free(path);
}

static void test_scene_gpt2(void **state)
{
    (void)state;
    char *path = golden("gpt2/scenes/tiny-all.yaml");
    struct scene_arg a = {path, true};
    sweep("the tiny GPT-2 (golden/gpt2/scenes/tiny-all.yaml), loaded, computed and predicted",
          work_scene, &a, true);
    free(path);
}

static void test_scene_hf(void **state)
{
    (void)state;
    char *path = fixture("hf/induction.yaml");
    struct scene_arg a = {path, true};
    sweep("the induction model with its tokenizer.json (fixtures/hf/induction.yaml)", work_scene,
          &a, true);
    free(path);
}

/* A model folder made a scene (scenefile/folder.c), then a sentence past its context cut to the
 * last whole words that fit (engine/textfit.c) and made its text, as --truncate start does. */
static void work_model_folder(struct sweep_outcome *out, const void *p)
{
    const char *folder = p;
    struct attn_model_files m;
    struct diag err;
    attn_diag_clear(&err);
    out->rc = 0;
    out->digest = 14695981039346656037u;
    if (attn_scenefile_find_model(&m, folder, NULL, &err) != 0) {
        set_error(out, &err);
        return;
    }
    char *said = NULL;
    size_t said_len = 0;
    FILE *report = open_memstream(&said, &said_len);
    assert_non_null(report);
    struct attn_scene s;
    int rc = attn_scenefile_load_model_report(&s, &m, report);
    fclose(report);
    if (rc != 0) {
        out->rc = -1;
        snprintf(out->msg, sizeof(out->msg), "%s", said);
        free(said);
        return;
    }
    free(said);
    char text[2400], *cut = NULL;
    for (int i = 0, o = 0; i < 200; i++)
        o += snprintf(text + o, sizeof(text) - (size_t)o, "%sword%d", i ? " " : "", i);
    struct attn_edit_effects fx;
    struct attn_edit e = {.kind = EDIT_TEXT, .text_pair = ""};
    if (attn_scene_text_cut(&cut, &s, text, TEXT_KEEP_LAST, 0, 128, &err) != 0 ||
        (e.text = cut, attn_scene_apply_edit(&s, &e, &fx, &err)) != 0) {
        set_error(out, &err);
        free(cut);
        attn_scene_free(&s);
        return;
    }
    free(cut);
    out->digest = mix(out->digest, s.token_ids, (size_t)s.n_tokens * sizeof(int));
    struct attn_net net = {0};
    if (attn_net_compute(&net, &s, &err) != 0)
        set_error(out, &err);
    else
        out->digest = digest_net(out->digest, &net);
    attn_net_free(&net);
    attn_scene_free(&s);
}

static void test_model_folder(void **state)
{
    (void)state;
    char *path = scene_path("../models/english");
    sweep("models/english as a folder, a sentence past its 128 positions cut to fit",
          work_model_folder, path, true);
    free(path);
}

/* libattnscope's API (include/attnscope/attnscope.h): a scene opened, computed and every
 * head's weights copied out; or a bad scene refused with its first problem at file:line:col. */
static void work_api(struct sweep_outcome *out, const void *p)
{
    const char *path = p;
    attnscope_scene *scene = NULL;
    attnscope_result *r = NULL;
    attnscope_error err;
    out->rc = 0;
    out->digest = 14695981039346656037u;
    if (attnscope_scene_open(&scene, path, &err) == 0 && attnscope_compute(&r, scene, &err) == 0) {
        size_t rows, cols;
        for (int h = 0; h < attnscope_heads(r) && out->rc == 0; h++) {
            float w[64];
            if (attnscope_matrix_shape(&rows, &cols, r, 0, "weights", &err) != 0 ||
                rows * cols > 64 || attnscope_matrix(w, rows, cols, r, 0, "weights", h, &err) != 0)
                out->rc = -1;
            else
                out->digest = mix(out->digest, w, rows * cols * sizeof(float));
        }
    } else if (!strstr(err.message, "memory")) { /* refused for what it says: the same each run */
        out->digest = mix(out->digest, &err, sizeof(err));
    } else {
        out->rc = -1;
    }
    if (out->rc != 0)
        attnscope_error_text(out->msg, sizeof(out->msg), &err);
    attnscope_result_delete(r);
    attnscope_scene_delete(scene);
}

static void test_api(void **state)
{
    (void)state;
    char *path = scene_path("10-mha.yaml");
    sweep("libattnscope's API: scenes/10-mha.yaml opened, computed, every head's weights", work_api,
          path, false);
    free(path);
    path = fixture("bad/unknown_key_systems.yaml");
    sweep("libattnscope's API: fixtures/bad/unknown_key_systems.yaml refused at 2:26", work_api,
          path, false);
    free(path);
}

/* A scene with many problems: every one listed, or the list says memory ran out. */
struct bad_arg {
    const char *path;
};

static void work_bad_scene(struct sweep_outcome *out, const void *p)
{
    const struct bad_arg *a = p;
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    out->digest = 14695981039346656037u;
    out->rc = 0;
    if (attn_scenefile_load(&s, a->path, &errs, NULL, NULL) == 0) {
        attn_scene_free(&s);
        out->rc = -1;
        snprintf(out->msg, sizeof(out->msg), "a bad scene loaded");
    } else {
        bool memory = errs.lost > 0;
        for (int i = 0; i < errs.n; i++) {
            memory |= strstr(errs.items[i].msg, "memory") != NULL;
            out->digest = mix(out->digest, errs.items[i].msg, strlen(errs.items[i].msg));
            out->digest = mix(out->digest, &errs.items[i].line, sizeof(int));
            out->digest = mix(out->digest, &errs.items[i].col, sizeof(int));
        }
        if (memory) { /* a partial list: it must say so */
            out->rc = -1;
            snprintf(out->msg, sizeof(out->msg), "%s", "out of memory");
        }
    }
    attn_diag_list_free(&errs);
}

static void test_scene_bad(void **state)
{
    (void)state;
    char *path = fixture("bad/independent_checks.yaml");
    struct bad_arg a = {path};
    sweep("a scene with many problems (fixtures/bad/independent_checks.yaml)", work_bad_scene, &a,
          false);
    free(path);
}

/* ---- export: all or nothing, an earlier export kept whole ---- */

/* A fresh folder for a sweep's exports: under /dev/shm when there is one (an export fsyncs
 * every file, and a sweep writes thousands of exports), else under TMPDIR. */
static void make_parent(char *out, size_t size)
{
    struct stat st;
    const char *tmp = getenv("TMPDIR");
    const char *base =
        stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
            ? "/dev/shm"
        : tmp && *tmp ? tmp
                      : "/tmp";
    snprintf(out, size, "%s/test_oom.XXXXXX", base);
    assert_non_null(mkdtemp(out));
}

/* rm -r path, without malloc of ours. */
static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[4096];
            snprintf(sub, sizeof(sub), "%.3800s/%.255s", path, e->d_name);
            rm_tree(sub);
        }
        closedir(d);
    }
    remove(path);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

#define TREE_NAMES 128

/* A digest of every name and byte under path, in name order, made without malloc (it runs
 * while allocations are failing). -1 when a folder is too big or cannot be read. */
static int tree_digest(uint64_t *h, const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            return -1;
        char buf[4096];
        ssize_t k;
        while ((k = read(fd, buf, sizeof(buf))) > 0)
            *h = mix(*h, buf, (size_t)k);
        close(fd);
        return k < 0 ? -1 : 0;
    }
    char names[TREE_NAMES][256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == TREE_NAMES) {
            closedir(d);
            return -1;
        }
        snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), cmp_name);
    for (int i = 0; i < n; i++) {
        char sub[4096];
        snprintf(sub, sizeof(sub), "%.3800s/%.255s", path, names[i]);
        *h = mix(*h, names[i], strlen(names[i]) + 1);
        if (tree_digest(h, sub) != 0)
            return -1;
    }
    return 0;
}

/* What parent holds besides "out": the first such name, or "" when nothing. */
static void stray(char *out, size_t size, const char *parent)
{
    out[0] = '\0';
    DIR *d = opendir(parent);
    if (!d) {
        snprintf(out, size, "(cannot read %s)", parent);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "out")) {
            snprintf(out, size, "%s", e->d_name);
            break;
        }
    closedir(d);
}

struct export_arg {
    const struct attn_scene *s;
    const struct attn_net *net;
    enum export_format fmt;
    const char *parent;
    bool replace;    /* parent/out holds an earlier export of the same scene */
    uint64_t before; /* its digest */
};

/* The outcome of an export into parent/out, checked for what a failure may leave: nothing at
 * all, or the earlier export exactly as it was. The messages of those checks never say
 * "memory", so the sweep fails on them. */
static void export_outcome(struct sweep_outcome *out, const char *parent, bool replace,
                           uint64_t before, bool ok)
{
    char dir[4096], left[256];
    snprintf(dir, sizeof(dir), "%s/out", parent);
    stray(left, sizeof(left), parent);
    if (left[0]) {
        out->rc = -1;
        snprintf(out->msg, sizeof(out->msg), "%s left beside the export folder", left);
        rm_tree(parent); /* the next runs start clean: recreated below */
        mkdir(parent, 0700);
        return;
    }
    uint64_t h = 14695981039346656037u;
    bool exists = access(dir, F_OK) == 0;
    if (exists && tree_digest(&h, dir) != 0) {
        out->rc = -1;
        snprintf(out->msg, sizeof(out->msg), "the export folder cannot be read back");
        return;
    }
    if (ok) {
        out->digest = h;
        if (!replace)
            rm_tree(dir);
    } else if (replace && (!exists || h != before)) {
        snprintf(out->msg, sizeof(out->msg), "the earlier export was %s by a failed one",
                 exists ? "changed" : "removed");
    } else if (!replace && exists) {
        snprintf(out->msg, sizeof(out->msg), "a failed export left its folder");
        rm_tree(dir);
    }
}

static void work_export(struct sweep_outcome *out, const void *p)
{
    const struct export_arg *a = p;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/out", a->parent);
    struct diag err;
    out->rc = 0;
    out->digest = 0;
    if (export_dir_top(dir, a->s, a->net, a->fmt, 3, NULL, &err) != 0)
        set_error(out, &err);
    export_outcome(out, a->parent, a->replace, a->before, out->rc == 0);
}

/* Loads and computes a scene outside the sweep: only the export's allocations fail. */
static void sweep_export(const char *name, const char *scene, enum export_format fmt, bool replace)
{
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, scene, &errs, NULL, NULL), 0);
    attn_diag_list_free(&errs);
    struct attn_net net = {0};
    struct diag err;
    assert_int_equal(attn_net_compute(&net, &s, &err), 0);
    char parent[4096];
    make_parent(parent, sizeof(parent));
    struct export_arg a = {&s, &net, fmt, parent, replace, 14695981039346656037u};
    if (replace) {
        char dir[4096 + 8];
        snprintf(dir, sizeof(dir), "%s/out", parent);
        assert_int_equal(export_dir_top(dir, &s, &net, fmt, 3, NULL, &err), 0);
        assert_int_equal(tree_digest(&a.before, dir), 0);
    }
    sweep(name, work_export, &a, false);
    rm_tree(parent);
    attn_net_free(&net);
    attn_scene_free(&s);
}

static void test_export_mha(void **state)
{
    (void)state;
    char *path = scene_path("10-mha.yaml");
    sweep_export("export of scenes/10-mha.yaml as CSV into a new folder", path, EXPORT_CSV, false);
    free(path);
}

/* A model with a vocabulary (predictions.csv, loss.csv, lens.csv too), replacing an earlier
 * export: a failure leaves that one as it was. */
static void test_export_hf_replace(void **state)
{
    (void)state;
    char *path = fixture("hf/induction.yaml");
    sweep_export("export of the induction model (fixtures/hf) as .npy over an earlier export", path,
                 EXPORT_NPY, true);
    free(path);
}

/* ---- the command: `attnscope export SCENE -o DIR` says so and exits 1, writing nothing ---- */

struct cmd_arg {
    const char *scene; /* NULL: the built-in scene */
    const char *parent;
};

/* Runs cmd_export with stdout and stderr in files; returns its status, stderr in err. */
static int run_cmd_export(const struct cmd_arg *a, char *err, size_t size)
{
    char dir[4096], errfile[4096];
    snprintf(dir, sizeof(dir), "%s/out", a->parent);
    snprintf(errfile, sizeof(errfile), "%s.stderr", a->parent);
    char *argv[] = {"-o", dir, (char *)a->scene, NULL};
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fe = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fo = open("/dev/null", O_WRONLY);
    assert_true(saved_out >= 0 && saved_err >= 0 && fe >= 0 && fo >= 0);
    dup2(fo, 1);
    dup2(fe, 2);
    int rc = cmd_export(a->scene ? 3 : 2, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    close(fo);
    close(fe);
    int fd = open(errfile, O_RDONLY);
    ssize_t k = fd >= 0 ? read(fd, err, size - 1) : -1;
    err[k > 0 ? k : 0] = '\0';
    if (fd >= 0)
        close(fd);
    unlink(errfile);
    return rc;
}

static void work_cmd_export(struct sweep_outcome *out, const void *p)
{
    const struct cmd_arg *a = p;
    char err[sizeof(out->msg)];
    out->rc = 0;
    out->digest = 0;
    int rc = run_cmd_export(a, err, sizeof(err));
    if (rc != CLI_OK) {
        out->rc = -1;
        /* the status first: a status other than 1 fails the sweep, its message has no "memory" */
        if (rc != CLI_INVALID)
            snprintf(out->msg, sizeof(out->msg), "exit status %d, not 1: %.200s", rc, err);
        else
            snprintf(out->msg, sizeof(out->msg), "%s", err);
    }
    export_outcome(out, a->parent, false, 0, rc == CLI_OK);
}

static void test_cmd_export(void **state)
{
    (void)state;
    char *path = scene_path("10-mha.yaml");
    char parent[4096];
    make_parent(parent, sizeof(parent));
    struct cmd_arg a = {path, parent};
    sweep("attnscope export scenes/10-mha.yaml -o DIR", work_cmd_export, &a, false);
    struct cmd_arg d = {NULL, parent};
    sweep("attnscope export -o DIR (the built-in scene)", work_cmd_export, &d, false);
    rm_tree(parent);
    free(path);
}

/* ---- the explorer ---- */

/* The explorer opened on the built-in scene as ui_main opens it (ui_new: the ui, the first
 * compute, the panels, keys.yaml and colors.yaml) and closed. When any of it fails, the scene
 * it was handed is freed with the rest: ui_main's own allocation of the ui left it behind. */
static void work_explorer(struct sweep_outcome *out, const void *p)
{
    (void)p;
    out->rc = 0;
    out->digest = 14695981039346656037u;
    struct attn_scene s;
    if (attn_scene_init_default(&s) != 0) {
        out->rc = -1;
        snprintf(out->msg, sizeof(out->msg), "attn_scene_init_default: out of memory");
        return;
    }
    struct diag err;
    attn_diag_clear(&err);
    struct ui *ui = ui_new(&s, NULL, NULL, &err);
    if (!ui) {
        set_error(out, &err);
        return;
    }
    out->digest = digest_net(out->digest, &ui->app->result.net);
    ui_delete(ui);
}

static void test_explorer(void **state)
{
    (void)state;
    FILE *in = fopen("/dev/null", "r"), *sink = fopen("/dev/null", "w");
    assert_true(in && sink);
    SCREEN *scr = newterm("xterm-256color", sink, in);
    assert_non_null(scr);
    set_term(scr);
    resizeterm(24, 80);
    ui_setup_terminal();
    ui_use_user_configs(false); /* the shipped keys and colours, whoever runs the test */
    /* Every allocation up to the explorer's state: the scene's, the ui's own and app_init's
     * (its first compute). keys.yaml and colors.yaml come after them, and src/config, the
     * program's and not the library's, aborts when its allocations fail (config.c). */
    struct attn_scene s;
    struct app a;
    struct diag err;
    oom_arm(0, false);
    assert_int_equal(attn_scene_init_default(&s), 0);
    long scene_allocs = oom_count();
    oom_arm(0, false);
    assert_int_equal(app_init(&a, &s, NULL, NULL, &err), 0);
    long app_allocs = oom_count();
    oom_disarm();
    app_free(&a);
    sweep_first("the explorer opened on the built-in scene (ui_new), up to its configuration",
                work_explorer, NULL, false, scene_allocs + 1 + app_allocs);
    ui_use_user_configs(true);
    endwin();
    delscreen(scr);
    fclose(in);
    fclose(sink);
}

int main(int argc, char **argv)
{
    signal(SIGABRT, on_abort);
    /* before any use of either library */
    json_set_alloc_funcs(json_alloc, oom_free);
    UErrorCode status = U_ZERO_ERROR;
    u_setMemoryFunctions(NULL, icu_alloc, icu_realloc, icu_free, &status);
    if (U_FAILURE(status)) {
        fprintf(stderr, "test_oom: u_setMemoryFunctions: %s\n", u_errorName(status));
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_gpt2),        cmocka_unit_test(test_bpe_tiny),
        cmocka_unit_test(test_hftok_induction), cmocka_unit_test(test_hftok_sentencepiece),
        cmocka_unit_test(test_hftok_wordpiece), cmocka_unit_test(test_scene_default),
        cmocka_unit_test(test_scene_mha),       cmocka_unit_test(test_scene_gpt2),
        cmocka_unit_test(test_scene_hf),        cmocka_unit_test(test_scene_bad),
        cmocka_unit_test(test_export_mha),      cmocka_unit_test(test_export_hf_replace),
        cmocka_unit_test(test_cmd_export),      cmocka_unit_test(test_model_folder),
        cmocka_unit_test(test_explorer),        cmocka_unit_test(test_api),
    };
    if (argc > 1) /* test_oom NAME: the tests whose names match NAME (cmocka's '*' and '?') */
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
