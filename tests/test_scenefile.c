/* test_scenefile: YAML scene files, read and written.
 *
 * Every tests/fixtures/bad/NAME.yaml must fail to load with exactly the diagnostics in
 * NAME.expect, in order, one "NAME.yaml:L:C: message" line each (as `attnscope check` prints
 * them without the excerpts): a missing line, but also an extra one such as a follow-on of
 * another problem, fails. Inputs too big to keep in the tree (a 10 MB line, a million nested
 * brackets) are generated here, and their lists are checked whole too. The good path checks the
 * format's own example field by field, and that parse(write(s)) == s for scenes with awkward
 * strings and floats, both as written by the user and with every default made explicit.
 * Matrices named as {file: ...}: every CSV layout the loader reads and the .npy dtypes it
 * converts, exactly (the malformed ones are fixtures/bad/file_*.yaml, their data in data/).
 */
#include <dirent.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fsutil.h"
#include "engine/attention.h"
#include "engine/lesson.h"
#include "scenefile/scenefile.h"
#include "testutil.h"
#include "yaml/yamltree.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static const char *fixtures_dir(void)
{
    const char *d = getenv("ATTNSCOPE_FIXTURES");
    if (!d)
        fail_msg("ATTNSCOPE_FIXTURES is not set (run through meson test)");
    return d;
}

static int parse_str(struct attn_scene *s, const char *text, struct diag_list *errs)
{
    return attn_scenefile_parse(s, "t.yaml", text, strlen(text), errs);
}

static void print_diags(const struct diag_list *errs, const char *src, size_t len)
{
    for (int i = 0; i < errs->n; i++)
        attn_diag_print(stderr, &errs->items[i], src, len);
}

/* The lines `attnscope check` prints for errs, caret excerpts left out: attn_diag_print's
 * "file:line:col: message", or "file: message" without a location, with the file's base name
 * (as the .expect files hold them). *n malloc'ed strings, freed with tu_free_names. */
static char **diag_lines(const struct diag_list *errs, int *n)
{
    char **lines = calloc((size_t)errs->n + 1, sizeof(*lines));
    assert_non_null(lines);
    for (int i = 0; i < errs->n; i++) {
        struct diag d = errs->items[i];
        const char *base = strrchr(d.file, '/');
        if (base)
            memmove(d.file, base + 1, strlen(base + 1) + 1);
        size_t size = 0;
        FILE *f = open_memstream(&lines[i], &size);
        assert_non_null(f);
        attn_diag_print(f, &d, NULL, 0);
        assert_int_equal(fclose(f), 0);
        if (size > 0 && lines[i][size - 1] == '\n')
            lines[i][size - 1] = '\0';
    }
    *n = errs->n;
    return lines;
}

/* Fails unless errs holds exactly the lines of expected, in order; prints a diff if not. */
static void assert_diags(const struct diag_list *errs, const char *name, const char *expected)
{
    int n;
    char **got = diag_lines(errs, &n);
    bool same = tu_same_lines(stderr, name, expected, got, n);
    tu_free_names(got, n);
    if (!same)
        fail_msg("%s: not the expected diagnostics (diff above)", name);
}

/* ATTNSCOPE_UPDATE_EXPECT=1 rewrites every .expect from what the loader reports, and fails;
 * read each one against its fixture before committing it. */
#define UPDATE_EXPECT "ATTNSCOPE_UPDATE_EXPECT"

/* Number of entries in dir other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* memset through a call GCC does not see into: with the sanitizers on it misjudges the size
 * of a fresh malloc'ed buffer and warns (-Warray-bounds). */
__attribute__((noinline)) static size_t fill_bytes(char *dst, int c, size_t n)
{
    memset(dst, c, n);
    return n;
}

static bool same_floats(const float *a, const float *b, size_t n)
{
    return n == 0 || memcmp(a, b, n * sizeof(float)) == 0;
}

static void assert_matrix_equal(const struct attn_matrix *a, const struct attn_matrix *b,
                                const char *what)
{
    if ((a->data == NULL) != (b->data == NULL))
        fail_msg("%s: given in one scene only", what);
    if (!a->data)
        return;
    if (a->rows != b->rows || a->cols != b->cols)
        fail_msg("%s: %d x %d vs %d x %d", what, a->rows, a->cols, b->rows, b->cols);
    if (!same_floats(a->data, b->data, (size_t)a->rows * (size_t)a->cols))
        fail_msg("%s: values differ", what);
}

static void assert_str_equal(const char *a, const char *b, const char *what)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        fail_msg("%s: '%s' vs '%s'", what, a ? a : "(null)", b ? b : "(null)");
}

static void assert_seed_equal(struct attn_opt_seed a, struct attn_opt_seed b, const char *what)
{
    if (a.set != b.set || (a.set && a.value != b.value))
        fail_msg("%s differs", what);
}

/* Step by step: what each shows, its edit and its caption. */
static void assert_lesson_equal(const struct attn_lesson *a, const struct attn_lesson *b)
{
    assert_int_equal(a == NULL, b == NULL);
    if (!a)
        return;
    assert_int_equal(a->n_steps, b->n_steps);
    for (int i = 0; i < a->n_steps; i++) {
        const struct attn_lesson_step *x = &a->steps[i], *y = &b->steps[i];
        assert_int_equal(x->stage, y->stage);
        assert_int_equal(x->layer, y->layer);
        assert_int_equal(x->head, y->head);
        assert_int_equal(x->row, y->row);
        assert_int_equal(x->col, y->col);
        assert_int_equal(x->all_heads, y->all_heads);
        assert_string_equal(x->caption, y->caption);
        const struct attn_edit *e = &x->edit, *f = &y->edit;
        assert_int_equal(e->kind, f->kind);
        switch (e->kind) {
        case EDIT_CAUSAL:
            assert_int_equal(e->causal, f->causal);
            break;
        case EDIT_HEADS:
            assert_int_equal(e->heads, f->heads);
            break;
        case EDIT_D_OUT:
            assert_int_equal(e->d_out, f->d_out);
            break;
        case EDIT_DROPOUT:
            assert_memory_equal(&e->dropout, &f->dropout, sizeof(double));
            break;
        case EDIT_SEED:
            assert_true(e->seed == f->seed);
            break;
        case EDIT_TEXT:
            assert_string_equal(e->text, f->text);
            break;
        case EDIT_SCALE:
            assert_int_equal(e->scale, f->scale);
            if (e->scale == SCALE_DIVISOR)
                assert_memory_equal(&e->scale_divisor, &f->scale_divisor, sizeof(double));
            break;
        case EDIT_MASK_MODE:
            assert_int_equal(e->mask_mode, f->mask_mode);
            break;
        case EDIT_NORMALIZE:
            assert_int_equal(e->normalize, f->normalize);
            break;
        case EDIT_LAYOUT:
            assert_int_equal(e->layout, f->layout);
            break;
        case EDIT_OFFSET:
            assert_int_equal(e->offset, f->offset);
            break;
        case EDIT_ABLATE:
            assert_int_equal(e->layer, f->layer);
            assert_int_equal(e->head, f->head);
            assert_int_equal(e->head_mode, f->head_mode);
            break;
        case EDIT_GENERATE:
            assert_int_equal(e->generate, f->generate);
            break;
        default:
            break;
        }
    }
}

/* Field-by-field equality of everything a scene file can say. */
static void assert_scene_equal(const struct attn_scene *a, const struct attn_scene *b)
{
    assert_str_equal(a->title, b->title, "title");
    assert_str_equal(a->text, b->text, "text");
    assert_int_equal(a->tokenizer, b->tokenizer);
    assert_str_equal(a->tokenizer_file, b->tokenizer_file, "tokenizer.file");
    assert_int_equal(a->n_tokens, b->n_tokens);
    assert_true((a->token_ids == NULL) == (b->token_ids == NULL));
    for (int i = 0; a->token_ids && i < a->n_tokens; i++)
        assert_int_equal(a->token_ids[i], b->token_ids[i]);
    for (int i = 0; i < a->n_tokens; i++)
        assert_str_equal(a->tokens[i], b->tokens[i], "token");
    assert_true(a->seed == b->seed);
    assert_int_equal(a->embed.kind, b->embed.kind);
    if (a->embed.kind == EMBED_EXPLICIT)
        assert_matrix_equal(&a->embed.rows, &b->embed.rows, "embeddings");
    if (a->embed.kind == EMBED_LEARNED) {
        assert_int_equal(a->embed.dim, b->embed.dim);
        assert_seed_equal(a->embed.seed, b->embed.seed, "embeddings.seed");
    }
    assert_int_equal(a->pos.kind, b->pos.kind);
    assert_int_equal(a->pos.max_len, b->pos.max_len);
    assert_seed_equal(a->pos.seed, b->pos.seed, "positional.seed");
    assert_matrix_equal(&a->pos.table, &b->pos.table, "positional.table");
    assert_memory_equal(&a->pos.base, &b->pos.base, sizeof(a->pos.base));
    assert_int_equal(a->pos.pairs, b->pos.pairs);
    assert_int_equal(a->pos.offset, b->pos.offset);
    const struct attn_config *x = &a->attn, *y = &b->attn;
    assert_int_equal(x->projection, y->projection);
    assert_int_equal(x->d_out, y->d_out);
    assert_int_equal(x->heads, y->heads);
    assert_int_equal(x->layout, y->layout);
    assert_int_equal(x->causal, y->causal);
    assert_int_equal(x->mask_mode, y->mask_mode);
    assert_int_equal(x->normalize, y->normalize);
    assert_int_equal(x->scale, y->scale);
    if (x->scale == SCALE_DIVISOR)
        assert_memory_equal(&x->scale_divisor, &y->scale_divisor, sizeof(x->scale_divisor));
    assert_memory_equal(&x->dropout, &y->dropout, sizeof(x->dropout));
    assert_seed_equal(x->dropout_seed, y->dropout_seed, "attention.dropout_seed");
    assert_int_equal(x->qkv_bias, y->qkv_bias);
    assert_int_equal(x->out_proj, y->out_proj);
    assert_int_equal(x->out_bias, y->out_bias);
    assert_seed_equal(x->seed, y->seed, "attention.seed");
    assert_int_equal(x->qkv, y->qkv);
    assert_int_equal(x->kv_heads, y->kv_heads);
    assert_int_equal(x->kv_latent, y->kv_latent);
    const struct attn_block *p = &a->block, *q = &b->block;
    assert_int_equal(p->on, q->on);
    if (p->on) { /* the block's keys are written only with the block */
        assert_int_equal(p->order, q->order);
        assert_int_equal(p->norm, q->norm);
        assert_memory_equal(&p->norm_eps, &q->norm_eps, sizeof(p->norm_eps));
        assert_int_equal(p->ffn_hidden, q->ffn_hidden);
        assert_int_equal(p->activation, q->activation);
        assert_seed_equal(p->ffn_seed, q->ffn_seed, "block.ffn_seed");
        assert_int_equal(p->ffn_skip, q->ffn_skip);
    }
    assert_lesson_equal(a->lesson, b->lesson);
    assert_int_equal(a->n_ablate, b->n_ablate);
    for (int i = 0; i < a->n_ablate; i++) {
        assert_int_equal(a->ablate[i].layer, b->ablate[i].layer);
        assert_int_equal(a->ablate[i].head, b->ablate[i].head);
        assert_int_equal(a->ablate[i].mode, b->ablate[i].mode);
    }
    const struct attn_scene_weights *v = &a->weights, *w = &b->weights;
    assert_int_equal(v->set, w->set);
#define SAME(name) assert_matrix_equal(&v->name, &w->name, "weights." #name);
    ATTN_WEIGHT_MATRICES(SAME)
#undef SAME
    assert_int_equal(v->dropout_mask == NULL, w->dropout_mask == NULL);
    if (v->dropout_mask) {
        assert_int_equal(v->dropout_mask_n, w->dropout_mask_n);
        assert_int_equal(v->dropout_mask_heads, w->dropout_mask_heads);
        size_t n = (size_t)x->heads * (size_t)v->dropout_mask_n * (size_t)v->dropout_mask_n;
        assert_memory_equal(v->dropout_mask, w->dropout_mask, n);
    }
}

/* Writes s to memory; the caller frees the text. */
static char *write_str(const struct attn_scene *s, bool explicit, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    struct diag err;
    if (attn_scenefile_write(f, s, explicit, &err) != 0)
        fail_msg("attn_scenefile_write: %s", err.msg);
    assert_int_equal(fclose(f), 0);
    if (len)
        *len = n;
    return buf;
}

/* Parses text or fails the test with every diagnostic printed under the text. */
static void parse_ok(struct attn_scene *s, const char *text)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (parse_str(s, text, &errs) != 0) {
        fprintf(stderr, "---- text:\n%s\n---- problems:\n", text);
        print_diags(&errs, text, strlen(text));
        fail_msg("a good scene failed to parse");
    }
    assert_int_equal(errs.n, 0);
    attn_diag_list_free(&errs);
}

/* parse(write(s)) == s, and with explicit defaults the text is a fixed point. */
static void check_round_trip(const struct attn_scene *s)
{
    char *text = write_str(s, false, NULL);
    struct attn_scene back;
    parse_ok(&back, text);
    assert_scene_equal(s, &back);

    char *text2 = write_str(&back, false, NULL);
    assert_string_equal(text, text2);
    free(text2);
    attn_scene_free(&back);

    char *ex = write_str(s, true, NULL);
    struct attn_scene eback;
    parse_ok(&eback, ex);
    char *ex2 = write_str(&eback, true, NULL);
    assert_string_equal(ex, ex2);
    /* Explicit values are what the defaults resolved to. */
    assert_int_equal(attn_scene_d_in(&eback), attn_scene_d_in(s));
    assert_int_equal(attn_scene_eff_d_out(&eback), attn_scene_eff_d_out(s));
    assert_int_equal(attn_scene_eff_projection(&eback), attn_scene_eff_projection(s));
    assert_int_equal(attn_scene_eff_out_proj(&eback), attn_scene_eff_out_proj(s));
    assert_int_equal(attn_scene_eff_scale(&eback), attn_scene_eff_scale(s));
    assert_int_equal(eback.n_tokens, s->n_tokens);
    if (!s->model.file) { /* a checkpoint decides these: a scene on one never says them */
        assert_int_not_equal(eback.attn.projection, PROJ_DEFAULT);
        assert_int_not_equal(eback.attn.scale, SCALE_DEFAULT);
        assert_int_not_equal(eback.attn.out_proj, TRI_DEFAULT);
        assert_int_not_equal(eback.attn.d_out, 0);
    }
    attn_scene_free(&eback);
    free(ex);
    free(ex2);
    free(text);
}

/* ---- bad inputs --------------------------------------------------------------------------- */

static void test_bad_fixtures(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/bad", fixtures_dir());
    int n;
    char **names = tu_list_names(dir, ".yaml", &n);
    assert_non_null(names);
    assert_true(n >= 25);

    /* Every fixture is checked before failing, so one run names all that differ. */
    char *failed = NULL;
    size_t failed_len = 0;
    FILE *failed_f = open_memstream(&failed, &failed_len);
    assert_non_null(failed_f);
    int failures = 0, rewritten = 0;
    char rewrote[4096] = "";
    bool update = tu_update_mode(UPDATE_EXPECT);
    for (int i = 0; i < n; i++) {
        char path[4200], expect_path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        snprintf(expect_path, sizeof(expect_path), "%s/%.*s.expect", dir,
                 (int)(strlen(names[i]) - 5), names[i]);
        char *expected = tu_read_file(expect_path, NULL);

        struct attn_scene s;
        struct diag_list errs;
        attn_diag_list_init(&errs);
        char *src = NULL;
        size_t src_len = 0;
        int rc = attn_scenefile_load(&s, path, &errs, &src, &src_len);
        int n_got;
        char **got = diag_lines(&errs, &n_got);
        bool ok;
        if (rc != -1) {
            fprintf(stderr, "%s: loaded without a problem\n", names[i]);
            attn_scene_free(&s);
            ok = false;
        } else if (update) {
            char *text = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&text, &len);
            assert_non_null(f);
            for (int j = 0; j < n_got; j++)
                fprintf(f, "%s\n", got[j]);
            assert_int_equal(fclose(f), 0);
            if (!expected || strcmp(expected, text) != 0) {
                tu_write_text(expect_path, text);
                fprintf(stderr, "%s: rewrote %s\n", names[i], expect_path);
                size_t used = strlen(rewrote);
                snprintf(rewrote + used, sizeof(rewrote) - used, " %s", names[i]);
                rewritten++;
            }
            free(text);
            ok = true;
        } else if (!expected) {
            fprintf(stderr, "%s: cannot read %s\n", names[i], expect_path);
            ok = false;
        } else {
            ok = tu_same_lines(stderr, names[i], expected, got, n_got);
        }
        /* A failed load leaves the text for caret excerpts and a scene safe to free. */
        if (rc == -1)
            assert_non_null(src);
        if (!ok)
            fprintf(failed_f, "%s%s", failures++ ? ", " : "", names[i]);
        tu_free_names(got, n_got);
        free(expected);
        free(src);
        attn_diag_list_free(&errs);
    }
    tu_free_names(names, n);

    /* An .expect without its fixture is left over from a rename or a removal. */
    char **expects = tu_list_names(dir, ".expect", &n);
    for (int i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%.*s.yaml", dir, (int)(strlen(expects[i]) - 7),
                 expects[i]);
        if (!attn_fsutil_exists(path)) {
            fprintf(stderr, "%s: no fixture %s beside it\n", expects[i], path);
            fprintf(failed_f, "%s%s", failures++ ? ", " : "", expects[i]);
        }
    }
    tu_free_names(expects, n);
    assert_int_equal(fclose(failed_f), 0);
    if (failures)
        fail_msg("fixtures in %s that do not match their .expect (%d): %s", dir, failures, failed);
    free(failed);
    if (update)
        tu_update_done(UPDATE_EXPECT, rewritten, n, rewrote);
}

/* A 10 MB line: refused at the first list entry too many, and located, without building 3
 * million tokens. */
static void test_ten_mb_line(void **state)
{
    (void)state;
    const size_t size = 10u << 20;
    char *text = malloc(size + 64);
    assert_non_null(text);
    size_t o = (size_t)sprintf(text, "tokens: [a");
    while (o + 3 < size)
        o += (size_t)sprintf(text + o, ", a");
    o += (size_t)sprintf(text + o, "]\n");
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_parse(&s, "big.yaml", text, o, &errs), -1);
    char expected[128];
    snprintf(expected, sizeof(expected), "big.yaml:1:9: 'tokens' has more than %d entries",
             YTREE_MAX_ITEMS);
    assert_diags(&errs, "a 10 MB list of tokens", expected);
    attn_diag_list_free(&errs);

    /* A 10 MB plain scalar, then a typo at column 10 million and something on one line. */
    o = (size_t)sprintf(text, "{text: a, title: ");
    size_t start = o;
    o += fill_bytes(text + o, 'x', size);
    o += (size_t)sprintf(text + o, ", haeds: 2}\n");
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_parse(&s, "big.yaml", text, o, &errs), -1);
    snprintf(expected, sizeof(expected),
             "big.yaml:1:%d: unknown key 'haeds' (did you mean 'heads' under 'attention'?)",
             (int)(start + size + 3));
    assert_diags(&errs, "a 10 MB title", expected);
    /* The caret excerpt of such a line stays short. */
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    attn_diag_print(f, &errs.items[0], text, o);
    fclose(f);
    assert_true(out_len < 1024);
    free(out);
    attn_diag_list_free(&errs);
    free(text);
}

/* A million nested brackets: refused at the depth limit, no recursion to overflow. */
static void test_deep_nesting(void **state)
{
    (void)state;
    const size_t depth = 1000000;
    char *text = malloc(2 * depth + 16);
    assert_non_null(text);
    size_t o = (size_t)sprintf(text, "text: [");
    o += fill_bytes(text + o, '[', depth);
    o += fill_bytes(text + o, ']', depth + 1);
    text[o++] = '\n';
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_parse(&s, "deep.yaml", text, o, &errs), -1);
    assert_diags(&errs, "a million nested lists",
                 "deep.yaml:1:70: the document nests more than 64 levels deep");
    attn_diag_list_free(&errs);

    /* The same through a mapping chain: a: {a: {a: ...}} */
    o = 0;
    for (size_t i = 0; i < 100000; i++)
        o += (size_t)sprintf(text + o, "{a: ");
    text[o++] = '1';
    for (size_t i = 0; i < 100000; i++)
        text[o++] = '}';
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_parse(&s, "deep.yaml", text, o, &errs), -1);
    assert_diags(&errs, "100000 nested mappings",
                 "deep.yaml:1:257: the document nests more than 64 levels deep");
    attn_diag_list_free(&errs);
    free(text);
}

/* One file, many mistakes: every one is reported, in file order. */
static void test_all_problems_reported(void **state)
{
    (void)state;
    const char *text = "text: Your journey starts with one step\n" /* 1 */
                       "tokenzier: words\n"                        /* 2 */
                       "attention:\n"                              /* 3 */
                       "  heads: two\n"                            /* 4 */
                       "  causal: maybe\n"                         /* 5 */
                       "  dropout: -0.5\n"                         /* 6 */
                       "  causal: true\n"                          /* 7 */
                       "embeddings: [[1, 2], [3]]\n"               /* 8 */
                       "seed: 1.5\n";                              /* 9 */
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(parse_str(&s, text, &errs), -1);
    assert_diags(&errs, "one file, many mistakes",
                 "t.yaml:2:1: unknown key 'tokenzier' (did you mean 'tokenizer'?)\n"
                 "t.yaml:4:10: 'heads' must be an integer, got 'two'\n"
                 "t.yaml:5:11: 'causal' must be true or false, got 'maybe'\n"
                 "t.yaml:6:12: 'dropout' must be between 0 and 1, got '-0.5'\n"
                 "t.yaml:7:3: duplicate key 'causal' (first given at line 5)\n"
                 "t.yaml:8:22: 'embeddings' row 2 has 1 value, expected 2\n"
                 "t.yaml:9:7: 'seed' must be an integer from 0 to 18446744073709551615, got "
                 "'1.5'\n");
    attn_diag_list_free(&errs);
}

static void test_error_limit(void **state)
{
    (void)state;
    char *text = malloc(200 * 32);
    assert_non_null(text);
    size_t o = (size_t)sprintf(text, "text: a\n");
    for (int i = 0; i < 200; i++)
        o += (size_t)sprintf(text + o, "bogus%d: 1\n", i);
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_parse(&s, "many.yaml", text, o, &errs), -1);
    /* The first 50, then one line without a location. */
    char *expected = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&expected, &len);
    assert_non_null(f);
    for (int i = 0; i < 50; i++)
        fprintf(f,
                "many.yaml:%d:1: unknown key 'bogus%d' (valid keys: version, title, tokenizer, "
                "text, tokens, seed, embeddings, positional, attention, block, layers, weights, "
                "view, model, lesson, ablate)\n",
                i + 2, i);
    fprintf(f, "many.yaml: too many problems; stopped after the first 50\n");
    assert_int_equal(fclose(f), 0);
    assert_diags(&errs, "200 unknown keys", expected);
    free(expected);
    attn_diag_list_free(&errs);
    free(text);
}

/* attn_scene_check's paths land on the key they name, or on the closest enclosing key. */
static void test_check_locations(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    /* d_out is not in the file (d_in 3 by default): the problem points at 'attention'. */
    const char *text = "text: a b c\n"
                       "attention:\n"
                       "  heads: 2\n";
    assert_int_equal(parse_str(&s, text, &errs), -1);
    assert_int_equal(errs.n, 1);
    assert_int_equal(errs.items[0].line, 2);
    assert_int_equal(errs.items[0].col, 1);
    assert_string_equal(errs.items[0].path, "attention.d_out");
    assert_string_equal(errs.items[0].file, "t.yaml");
    attn_diag_list_free(&errs);

    /* Wrapper weights: a shape problem of the assembled matrices points at weights.heads. */
    attn_diag_list_init(&errs);
    text = "tokens: [a, b]\n"
           "attention: {heads: 2, head_layout: wrapper, d_out: 1}\n"
           "weights:\n"
           "  heads:\n"
           "    - {query: [[1], [0], [0]], key: [[1], [0], [0]], value: [[1], [0], [0]]}\n"
           "    - {query: [[1], [0], [0]], key: [[1], [0], [0]], value: [[1], [0], [0]]}\n"
           "embeddings: [[1, 0], [0, 1]]\n";
    assert_int_equal(parse_str(&s, text, &errs), -1);
    assert_diags(&errs, "wrapper heads one row too many",
                 "t.yaml:5:5: 'weights.query' is 3 x 2, expected 2 x 2\n"
                 "t.yaml:5:5: 'weights.key' is 3 x 2, expected 2 x 2\n"
                 "t.yaml:5:5: 'weights.value' is 3 x 2, expected 2 x 2\n");
    assert_string_equal(errs.items[0].path, "weights.query");
    attn_diag_list_free(&errs);
}

/* Non-ASCII text before an error: columns are bytes, so the caret lands under the value. */
static void test_utf8_columns(void **state)
{
    (void)state;
    const char *text = "title: \xe6\x97\xa5\xe6\x9c\xac\n"
                       "tokens: [\xe6\x97\xa5\xe6\x9c\xac, [x]]\n";
    struct attn_scene s;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(parse_str(&s, text, &errs), -1);
    assert_diags(&errs, "a sequence after UTF-8 text",
                 "t.yaml:2:18: token 2 must be a string, got a sequence");
    attn_diag_list_free(&errs);
}

static void test_read_errors(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("scenefile");
    char path[4200];
    struct attn_scene s;
    struct diag_list errs;
    char *src = (char *)1;
    size_t len = 1;

    snprintf(path, sizeof(path), "%s/missing.yaml", dir);
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, path, &errs, &src, &len), -1);
    assert_null(src);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.items[0].file, path);
    assert_string_equal(errs.items[0].msg, "cannot open: No such file or directory");
    attn_diag_list_free(&errs);

    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, dir, &errs, &src, &len), -1);
    assert_string_equal(errs.items[0].msg, "is a directory, not a file");
    attn_diag_list_free(&errs);

    snprintf(path, sizeof(path), "%s/big.yaml", dir);
    tu_write_file(path, "0123456789", 10);
    struct diag err;
    char *text;
    assert_int_equal(attn_fsutil_read_file(&text, &len, path, 9, &err), -1);
    assert_string_equal(err.msg, "file is too large (10 bytes, the limit is 9)");
    assert_int_equal(attn_fsutil_read_file(&text, &len, path, 10, &err), 0);
    assert_int_equal(len, 10);
    assert_string_equal(text, "0123456789");
    free(text);
    tu_remove_tree(dir);
    free(dir);
}

static void test_mkdir_p(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("scenefile");
    char path[4200];
    struct diag err;
    snprintf(path, sizeof(path), "%s/a/b//c/", dir);
    assert_int_equal(attn_fsutil_mkdir_p(path, &err), 0);
    assert_int_equal(attn_fsutil_mkdir_p(path, &err), 0); /* already there */
    snprintf(path, sizeof(path), "%s/a/b/c", dir);
    assert_true(attn_fsutil_exists(path));
    snprintf(path, sizeof(path), "%s/file", dir);
    tu_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/file/sub", dir);
    assert_int_equal(attn_fsutil_mkdir_p(path, &err), -1);
    tu_remove_tree(dir);
    free(dir);
}

/* ---- matrices in files -------------------------------------------------------------------- */

/* Writes dir/name. */
static void put_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    tu_write_file(path, data, len);
}

static void put_text(const char *dir, const char *name, const char *text)
{
    put_file(dir, name, text, strlen(text));
}

/* A version 1.0 .npy as NumPy writes it: the dict (as given) padded with blanks to 64 bytes,
 * then data. */
static void put_npy_dict(const char *dir, const char *name, const char *dict, const void *data,
                         size_t len)
{
    int n = (int)strlen(dict);
    size_t hlen = (size_t)n + 1;
    hlen += (64 - (10 + hlen) % 64) % 64;
    size_t total = 10 + hlen + len;
    char *b = malloc(total);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (char)(hlen & 0xff);
    b[9] = (char)(hlen >> 8);
    memset(b + 10, ' ', hlen);
    memcpy(b + 10, dict, (size_t)n);
    b[10 + hlen - 1] = '\n';
    memcpy(b + 10 + hlen, data, len);
    put_file(dir, name, b, total);
    free(b);
}

static void put_npy(const char *dir, const char *name, const char *descr, const char *shape,
                    const void *data, size_t len)
{
    char dict[200];
    snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
             shape);
    put_npy_dict(dir, name, dict, data, len);
}

static void load_ok(struct attn_scene *s, const char *path)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    char *src = NULL;
    size_t len = 0;
    if (attn_scenefile_load(s, path, &errs, &src, &len) != 0) {
        print_diags(&errs, src, len);
        fail_msg("%s did not load", path);
    }
    attn_diag_list_free(&errs);
    free(src);
}

static void assert_matrix_is(const struct attn_matrix *m, int rows, int cols, const float *want,
                             const char *what)
{
    if (m->rows != rows || m->cols != cols)
        fail_msg("%s is %d x %d, expected %d x %d", what, m->rows, m->cols, rows, cols);
    for (int i = 0; i < rows * cols; i++)
        if (memcmp(&m->data[i], &want[i], sizeof(float)) != 0)
            fail_msg("%s value %d is %.9g, expected %.9g", what, i, (double)m->data[i],
                     (double)want[i]);
}

/* {file: x.csv} in every layout the loader reads, paths relative to the scene file: the export's
 * tables (CRLF, a header, quoted token labels), bare numbers (LF, blanks, a byte order mark,
 * blank lines at the end, old Mac CR line ends), pandas' to_csv (an empty corner, index labels)
 * and vectors as one row or one column (numpy.savetxt writes a vector as a column). */
static void test_matrix_files_csv(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("scenefile");
    char data[4200], sub[4200], path[4300];
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(sub, sizeof(sub), "%s/scenes", dir);
    assert_int_equal(mkdir(data, 0755), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    put_text(data, "emb.csv",
             "token,d0,d1,d2\r\n\"a,b\",0.100246795,-2,3e-3\r\n\"say \"\"hi\"\"\",1,2,3\r\n"
             "\"line\nbreak\",4,5,6\r\n");
    put_text(data, "wq.csv", "row,d0,d1\r\nd0,1,2\r\nd1,3,4\r\nd2,5,6\r\n");
    put_text(data, "wk.csv", "\xEF\xBB\xBF 1.5, -2\n3 ,4\n5,6\n\n\n");
    put_text(data, "wv.csv", ",0,1\n0,1,0\n1,0,1\n2,1,1\n");
    put_text(data, "qb.csv", "0.5\n0.25\n");
    put_text(data, "kb.csv", "row,d0,d1\r\nb,1,2\r\n");
    put_text(data, "vb.csv", "1.000000000000000056e-01\n2.000000000000000000e+00\n");
    put_text(data, "out.csv", "1,0\r0,1\r");
    put_text(data, "ob.csv", "row,d0,d1\nb,\"-0.5\",0.5");
    const char *yaml = "text: x y z\n"
                       "embeddings: {file: ../data/emb.csv}\n"
                       "attention: {d_out: 2, qkv_bias: true, out_proj: true}\n"
                       "weights:\n"
                       "  query: {file: ../data/wq.csv}\n"
                       "  key: {file: ../data/wk.csv}\n"
                       "  value: {file: ../data/wv.csv}\n"
                       "  query_bias: {file: ../data/qb.csv}\n"
                       "  key_bias: {file: ../data/kb.csv}\n"
                       "  value_bias: {file: ../data/vb.csv}\n"
                       "  out: {file: ../data/out.csv}\n"
                       "  out_bias: {file: ../data/ob.csv}\n";
    put_text(sub, "scene.yaml", yaml);
    snprintf(path, sizeof(path), "%s/scene.yaml", sub);
    struct attn_scene s;
    load_ok(&s, path);
    const float emb[] = {0.100246795f, -2, 3e-3f, 1, 2, 3, 4, 5, 6};
    assert_matrix_is(&s.embed.rows, 3, 3, emb, "embeddings");
    const float wq[] = {1, 2, 3, 4, 5, 6}, wk[] = {1.5f, -2, 3, 4, 5, 6}, wv[] = {1, 0, 0, 1, 1, 1};
    assert_matrix_is(&s.weights.query, 3, 2, wq, "query");
    assert_matrix_is(&s.weights.key, 3, 2, wk, "key");
    assert_matrix_is(&s.weights.value, 3, 2, wv, "value");
    const float qb[] = {0.5f, 0.25f}, kb[] = {1, 2}, vb[] = {0.1f, 2}, ob[] = {-0.5f, 0.5f};
    assert_matrix_is(&s.weights.query_bias, 1, 2, qb, "query_bias");
    assert_matrix_is(&s.weights.key_bias, 1, 2, kb, "key_bias");
    assert_matrix_is(&s.weights.value_bias, 1, 2, vb, "value_bias");
    const float eye[] = {1, 0, 0, 1};
    assert_matrix_is(&s.weights.out, 2, 2, eye, "out");
    assert_matrix_is(&s.weights.out_bias, 1, 2, ob, "out_bias");
    /* Written back, the numbers are inline: the scene no longer needs the files. */
    check_round_trip(&s);
    attn_scene_free(&s);
    tu_remove_tree(dir);
    free(dir);
}

/* {file: x.npy}: float64 rounded to the nearest float32 (as a YAML number is), float16 and
 * big-endian read exactly; integers and booleans only as a dropout mask, which also takes the
 * (heads * n) x n rows export writes. */
static void test_matrix_files_npy(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("scenefile");
    char path[4300];
    const double f8[] = {0.1, 0.2, 1.0 / 3.0, -4, 1e-3, 16777217.0};
    put_npy(dir, "wq.npy", "<f8", "(3, 2)", f8, sizeof(f8));
    const unsigned char be[] = {0x3f, 0x80, 0, 0, 0xc0, 0,    0, 0, 0x3f, 0,    0, 0,
                                0,    0,    0, 0, 0x40, 0x40, 0, 0, 0x3e, 0x80, 0, 0};
    put_npy(dir, "wk.npy", ">f4", "(3, 2)", be, sizeof(be));
    const uint16_t f2[] = {0x3c00, 0x3800, 0x0001, 0xbc00, 0x7bff, 0};
    put_npy(dir, "wv.npy", "<f2", "(3, 2)", f2, sizeof(f2));
    const unsigned char mask2[] = {1, 0, 1, 1, 1, 1, 0, 1}; /* 2 heads of 2 x 2, as rows */
    put_npy(dir, "mask.npy", "|b1", "(4, 2)", mask2, sizeof(mask2));
    put_text(dir, "scene.yaml",
             "tokens: [a, b]\n"
             "embeddings: [[1, 0, 0], [0, 1, 0]]\n"
             "attention: {d_out: 2, heads: 2, dropout: 0.5, out_proj: false}\n"
             "weights:\n"
             "  query: {file: wq.npy}\n"
             "  key: {file: wk.npy}\n"
             "  value: {file: wv.npy}\n"
             "  dropout_mask: {file: mask.npy}\n");
    snprintf(path, sizeof(path), "%s/scene.yaml", dir);
    struct attn_scene s;
    load_ok(&s, path);
    float wq[6];
    for (int i = 0; i < 6; i++)
        wq[i] = (float)f8[i];
    assert_matrix_is(&s.weights.query, 3, 2, wq, "query");
    assert_true(s.weights.query.data[5] == 16777216.0f); /* the tie goes to even */
    const float wk[] = {1, -2, 0.5f, 0, 3, 0.25f};
    assert_matrix_is(&s.weights.key, 3, 2, wk, "key");
    const float wv[] = {1, 0.5f, 0x1p-24f, -1, 65504, 0};
    assert_matrix_is(&s.weights.value, 3, 2, wv, "value");
    assert_int_equal(s.weights.dropout_mask_heads, 2);
    assert_int_equal(s.weights.dropout_mask_n, 2);
    assert_memory_equal(s.weights.dropout_mask, mask2, sizeof(mask2));
    attn_scene_free(&s);

    /* An integer weight matrix is refused; the same file as a mask is read. */
    const int32_t ints[] = {1, 0, 0, 1, 1, 1};
    put_npy(dir, "wq.npy", "<i4", "(3, 2)", ints, sizeof(ints));
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, path, &errs, NULL, NULL), -1);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.items[0].msg,
                        "'query': wq.npy holds int32 values (dtype '<i4'); 'query' must be "
                        "floats: save it with .astype(numpy.float32)");
    assert_int_equal(errs.items[0].line, 5);
    assert_int_equal(errs.items[0].col, 17);
    attn_diag_list_free(&errs);

    /* A 4-D array and a structured dtype: each told as what it is, not "not a dictionary". */
    float zeros[16] = {0};
    put_npy(dir, "wq.npy", "<f4", "(1, 1, 3, 2)", zeros, 6 * sizeof(float));
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, path, &errs, NULL, NULL), -1);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.items[0].msg, "the array has 4 dimensions; attnscope reads at "
                                              "most 3 (a matrix: reshape it to 2-D)"));
    attn_diag_list_free(&errs);
    put_npy_dict(dir, "wq.npy",
                 "{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (3,), }",
                 zeros, 6 * sizeof(float));
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, path, &errs, NULL, NULL), -1);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.items[0].msg, "a structured dtype (named fields, a record "
                                              "array); attnscope reads plain numbers"));
    attn_diag_list_free(&errs);
    tu_remove_tree(dir);
    free(dir);
}

/* ---- good inputs -------------------------------------------------------------------------- */

/* README.md ("Scene format")'s example with its "..." filled in. */
static const char *const full_example =
    "version: 1                                 # optional; only 1 exists\n"
    "title: Causal attention, two heads         # shown in the explorer\n"
    "text: Your journey starts with one step    # or tokens: [Your, journey, ...]\n"
    "tokenizer: whitespace                      # whitespace | words | chars\n"
    "seed: 123                                  # torch.manual_seed once, at the start\n"
    "embeddings: [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],\n"
    "             [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]\n"
    "positional: {kind: learned, max_len: 10, seed: 123}\n"
    "attention:\n"
    "  projection: linear      # none (Q=K=V=X) | rand (torch.rand, v1) | linear\n"
    "  d_out: 2                # default d_in\n"
    "  heads: 1\n"
    "  head_layout: split      # split (MultiHeadAttention) | wrapper\n"
    "  causal: false\n"
    "  mask_mode: before_softmax   # before_softmax | after_softmax\n"
    "  normalize: softmax      # softmax | sum\n"
    "  scale: true             # true = \xc3\xb7\xe2\x88\x9a"
    "d_k, false = none, or a number\n"
    "  dropout: 0.0\n"
    "  dropout_seed: 123       # optional: re-seed right before dropout\n"
    "  qkv_bias: false\n"
    "  out_proj: true          # default true when heads > 1 with the split layout\n"
    "  out_bias: true\n"
    "  seed: 789               # optional: re-seed right before the attention parameters\n"
    "weights:                  # optional explicit parameters, x @ W orientation\n"
    "  query: [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]   # (d_in x d_out)\n"
    "  key: [[1, 0], [0, 1], [1, 1]]\n"
    "  value: [[-1e-3, .5], [2, -0.25], [1.0, 0]]\n"
    "  out: [[1, 0], [0, 1]]   # (d_out x d_out), only with out_proj\n"
    "  out_bias: [0.5, -0.5]   # (d_out), only with out_proj and out_bias\n";

static void test_full_example(void **state)
{
    (void)state;
    struct attn_scene s;
    parse_ok(&s, full_example);
    assert_string_equal(s.title, "Causal attention, two heads");
    assert_string_equal(s.text, "Your journey starts with one step");
    assert_int_equal(s.tokenizer, TOKENIZER_WHITESPACE);
    assert_int_equal(s.n_tokens, 6);
    assert_string_equal(s.tokens[0], "Your");
    assert_string_equal(s.tokens[5], "step");
    assert_true(s.seed == 123);
    assert_int_equal(s.embed.kind, EMBED_EXPLICIT);
    assert_int_equal(s.embed.rows.rows, 6);
    assert_int_equal(s.embed.rows.cols, 3);
    assert_true(s.embed.rows.data[0] == 0.43f);
    assert_true(s.embed.rows.data[13] == 0.25f);
    assert_true(s.embed.rows.data[17] == 0.55f);
    assert_int_equal(s.pos.kind, POS_LEARNED);
    assert_int_equal(s.pos.max_len, 10);
    assert_true(s.pos.seed.set && s.pos.seed.value == 123);
    assert_null(s.pos.table.data);
    assert_int_equal(s.attn.projection, PROJ_LINEAR);
    assert_int_equal(s.attn.d_out, 2);
    assert_int_equal(s.attn.heads, 1);
    assert_int_equal(s.attn.layout, LAYOUT_SPLIT);
    assert_false(s.attn.causal);
    assert_int_equal(s.attn.mask_mode, MASK_BEFORE_SOFTMAX);
    assert_int_equal(s.attn.normalize, NORMALIZE_SOFTMAX);
    assert_int_equal(s.attn.scale, SCALE_SQRT_DK);
    assert_true(s.attn.dropout == 0.0);
    assert_true(s.attn.dropout_seed.set && s.attn.dropout_seed.value == 123);
    assert_false(s.attn.qkv_bias);
    assert_int_equal(s.attn.out_proj, TRI_TRUE);
    assert_true(s.attn.out_bias);
    assert_true(s.attn.seed.set && s.attn.seed.value == 789);
    assert_true(s.weights.set);
    assert_int_equal(s.weights.query.rows, 3);
    assert_int_equal(s.weights.query.cols, 2);
    assert_true(s.weights.query.data[3] == 0.4f);
    assert_true(s.weights.value.data[0] == -1e-3f);
    assert_true(s.weights.value.data[1] == 0.5f);
    assert_true(s.weights.value.data[4] == 1.0f);
    assert_int_equal(s.weights.out.rows, 2);
    assert_int_equal(s.weights.out_bias.rows, 1);
    assert_int_equal(s.weights.out_bias.cols, 2);
    assert_true(s.weights.out_bias.data[1] == -0.5f);
    assert_null(s.weights.query_bias.data);
    assert_null(s.weights.dropout_mask);
    check_round_trip(&s);
    attn_scene_free(&s);
}

/* ATTN_STAGES' rows agree with themselves and with the pipeline: a kind's width, a file for
 * every stage (its name but concat's), and every stage in some model's order, once. */
static void test_stage_table(void **state)
{
    (void)state;
    bool seen[STAGE_COUNT] = {false};
    static float flag; /* attn_stage_order reads only whether qnw (and pos_bias) is set */
    for (int v = 0; v < 256; v++) {
        struct attn_model m = {.latent = v & 1 ? 4 : 0,
                               .rope = v & 2,
                               .qnw = v & 4 ? &flag : NULL,
                               .block = v & 8,
                               .order = v & 16    ? BLOCK_PRE
                                        : v & 128 ? BLOCK_SANDWICH
                                                  : BLOCK_POST,
                               .activation = v & 32 ? ACT_SWIGLU : ACT_GELU,
                               .softcap = v & 64 ? 5.0f : 0.0f,
                               .n_experts = v & 128 ? 4 : 0,
                               .pos_bias = v & 2 ? &flag : NULL, /* T5's, without RoPE */
                               .no_ffn = (v & 9) == 9 && !(v & 128)};
        m.final_norm = m.block && (v & 1);
        enum attn_stage order[STAGE_COUNT];
        int n = attn_stage_order(order, &m);
        bool once[STAGE_COUNT] = {false};
        for (int k = 0; k < n; k++) {
            assert_false(once[order[k]]);
            once[order[k]] = seen[order[k]] = true;
        }
    }
    for (int st = 0; st < STAGE_COUNT; st++) {
        enum attn_stage s = (enum attn_stage)st;
        if (!seen[st])
            fail_msg("stage %s is in no model's attn_stage_order", attn_stage_name(s));
        assert_int_equal(attn_stage_is_square(s), attn_stage_width(s) == STAGE_WIDTH_TOKENS);
        if (attn_stage_kind(s) == STAGE_KIND_HEAD)
            assert_int_equal(attn_stage_width(s), STAGE_WIDTH_HEAD_DIM);
        assert_string_equal(attn_stage_file(s), s == STAGE_CONCAT ? "context" : attn_stage_name(s));
    }
}

/* YAML 1.1 booleans in any case, numbers in every YAML spelling. */
/* One name per stage, and the aliases --stage takes: softmax for weights, mask, q, k, v, out,
 * in view: and in a lesson's steps (and a caption's marks); written back by the one name. */
static void test_stage_names_and_aliases(void **state)
{
    (void)state;
    assert_int_equal(attn_stage_parse("weights"), STAGE_WEIGHTS);
    assert_int_equal(attn_stage_parse("softmax"), STAGE_WEIGHTS);
    assert_int_equal(attn_stage_parse("mask"), STAGE_MASKED);
    assert_int_equal(attn_stage_parse("q"), STAGE_QUERIES);
    assert_int_equal(attn_stage_parse("sm"), -1);
    for (int st = 0; st < STAGE_COUNT; st++) { /* the heading starts with the name */
        const char *name = attn_stage_name((enum attn_stage)st);
        assert_int_equal(strncmp(attn_stage_title((enum attn_stage)st), name, strlen(name)), 0);
        assert_int_equal(attn_stage_parse(name), st);
    }
    struct attn_scene s;
    parse_ok(&s, "text: a b c\n"
                 "view: {stage: softmax}\n"
                 "lesson:\n"
                 "  - {stage: Softmax, caption: 'the weights {1.0000 @ softmax 0,0}'}\n"
                 "  - {stage: mask, caption: masked}\n");
    assert_int_equal(s.view.stage, STAGE_WEIGHTS);
    assert_int_equal(s.lesson->steps[0].stage, STAGE_WEIGHTS);
    assert_int_equal(s.lesson->steps[1].stage, STAGE_MASKED);
    char *text = write_str(&s, false, NULL);
    assert_non_null(strstr(text, "stage: weights"));
    assert_null(strstr(text, "stage: softmax"));
    assert_null(strstr(text, "stage: mask\n"));
    free(text);
    attn_scene_free(&s);
}

static void test_scalar_forms(void **state)
{
    (void)state;
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "ON"};
    static const char *const no[] = {"false", "False", "no", "NO", "off", "Off"};
    char text[256];
    struct attn_scene s;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        snprintf(text, sizeof(text), "text: a\nattention: {causal: %s}\n", yes[i]);
        parse_ok(&s, text);
        assert_true(s.attn.causal);
        attn_scene_free(&s);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        snprintf(text, sizeof(text), "text: a\nattention: {causal: %s, out_bias: %s}\n", no[i],
                 no[i]);
        parse_ok(&s, text);
        assert_false(s.attn.causal);
        assert_false(s.attn.out_bias);
        attn_scene_free(&s);
    }
    parse_ok(&s, "tokens: [a]\nembeddings: [[1, 1.0, .5, -1e-3, +2, 1E2, -0, \"3\", '4.5']]\n");
    static const float want[] = {1, 1, 0.5f, -1e-3f, 2, 100, -0.0f, 3, 4.5f};
    assert_int_equal(s.embed.rows.cols, 9);
    assert_memory_equal(s.embed.rows.data, want, sizeof(want));
    attn_scene_free(&s);
    parse_ok(&s, "text: a\nseed: 18446744073709551615\nattention: {scale: 4, dropout: 1}\n");
    assert_true(s.seed == UINT64_MAX);
    assert_int_equal(s.attn.scale, SCALE_DIVISOR);
    assert_true(s.attn.scale_divisor == 4.0);
    assert_true(s.attn.dropout == 1.0);
    attn_scene_free(&s);
    parse_ok(&s, "text: a\nattention: {scale: no}\n");
    assert_int_equal(s.attn.scale, SCALE_NONE);
    attn_scene_free(&s);
    parse_ok(&s, "text: a\nembeddings: {seed: 7}\n");
    assert_int_equal(s.embed.kind, EMBED_LEARNED);
    assert_int_equal(s.embed.dim, 3);
    assert_true(s.embed.seed.set && s.embed.seed.value == 7);
    attn_scene_free(&s);
}

/* Tokens and titles that YAML would read as something else unless quoted. */
static const char *const awkward[] = {
    "big.",
    ":",
    "#",
    "yes",
    "No",
    "on",
    "y",
    "null",
    "~",
    "-",
    "- x",
    "a: b",
    "a #b",
    "1",
    "1.5",
    ".inf",
    "0x1F",
    "[x]",
    "{y}",
    ",",
    "a,b",
    "&a",
    "*b",
    "!tag",
    "|",
    ">",
    "%",
    "@",
    "`",
    "'",
    "\"",
    "it's",
    "say \"hi\"",
    " step",
    "step ",
    "  ",
    "\t",
    "line\nbreak",
    "back\\slash",
    "\xe6\x97\xa5\xe6\x9c\xac",
    "caf\xc3\xa9",
    "\xf0\x9f\x98\x80",
    "\xc2\x85",
    "\xe2\x80\xa8",
    ("\xef\xbb\xbf"
     "bom"),
    "\x7f",
    "\x01",
    "?",
    "? x",
    "=",
    "true",
    "FALSE",
    "Off",
    "---",
    "...",
    "x:",
    "a  b",
    "%TAG",
};

static void test_round_trip_awkward_strings(void **state)
{
    (void)state;
    int n = (int)(sizeof(awkward) / sizeof(awkward[0]));
    struct attn_scene s;
    attn_scene_init(&s);
    struct diag err;
    assert_int_equal(attn_scene_set_tokens(&s, (char *const *)awkward, n, &err), 0);
    check_round_trip(&s);
    /* Each as a title too (block context rather than a flow list). */
    for (int i = 0; i < n; i++) {
        free(s.title);
        s.title = strdup(awkward[i]);
        check_round_trip(&s);
    }
    attn_scene_free(&s);

    attn_scene_init(&s);
    s.tokenizer = TOKENIZER_CHARS;
    assert_int_equal(attn_scene_set_text(&s, "  Hi: \"you\" #1\n\xe6\x97\xa5 ", &err), 0);
    check_round_trip(&s);
    attn_scene_free(&s);
}

static void fill(struct attn_matrix *m, int rows, int cols, float base)
{
    assert_int_equal(attn_matrix_alloc(m, rows, cols), 0);
    for (int i = 0; i < rows * cols; i++)
        m->data[i] = base + (float)i / 7.0f;
}

static void test_round_trip_scenes(void **state)
{
    (void)state;
    struct diag err;
    struct attn_scene s;

    attn_scene_init_default(&s);
    check_round_trip(&s);
    attn_scene_free(&s);

    /* Floats at the edges of float32. */
    attn_scene_init(&s);
    assert_int_equal(attn_scene_set_text(&s, "a b", &err), 0);
    static const float edge[] = {-0.0f, FLT_MIN,  FLT_MAX,     -FLT_MAX, 1e-45f,
                                 0.1f,  1.0f / 3, 16777217.0f, 1e-8f,    123456789.0f};
    s.embed.kind = EMBED_EXPLICIT;
    assert_int_equal(attn_matrix_alloc(&s.embed.rows, 2, 5), 0);
    memcpy(s.embed.rows.data, edge, sizeof(edge));
    s.attn.scale = SCALE_DIVISOR;
    s.attn.scale_divisor = 0.3;
    s.attn.dropout = 0.1 + 1e-17; /* not a short decimal */
    s.attn.projection = PROJ_RAND;
    s.attn.out_proj = TRI_FALSE;
    s.seed = UINT64_MAX;
    s.attn.seed = (struct attn_opt_seed){true, 0};
    check_round_trip(&s);
    attn_scene_free(&s);

    /* Wrapper layout with every explicit parameter, biases and a dropout mask. */
    attn_scene_init(&s);
    s.title = strdup("wrapper: two heads");
    assert_int_equal(attn_scene_set_text(&s, "one two three", &err), 0);
    s.embed.kind = EMBED_LEARNED;
    s.embed.dim = 4;
    s.embed.seed = (struct attn_opt_seed){true, 5};
    s.pos.kind = POS_LEARNED;
    s.pos.max_len = 5;
    fill(&s.pos.table, 5, 4, -1.5f);
    s.attn.projection = PROJ_LINEAR;
    s.attn.heads = 2;
    s.attn.layout = LAYOUT_WRAPPER;
    s.attn.d_out = 3;
    s.attn.causal = true;
    s.attn.mask_mode = MASK_AFTER_SOFTMAX;
    s.attn.normalize = NORMALIZE_SUM;
    s.attn.qkv_bias = true;
    s.attn.out_proj = TRI_TRUE;
    s.attn.out_bias = false;
    s.attn.dropout = 0.5;
    s.attn.dropout_seed = (struct attn_opt_seed){true, 42};
    s.weights.set = true;
    fill(&s.weights.query, 4, 6, 0.25f);
    fill(&s.weights.key, 4, 6, -0.5f);
    fill(&s.weights.value, 4, 6, 3.0f);
    fill(&s.weights.query_bias, 1, 6, 0.0f);
    fill(&s.weights.key_bias, 1, 6, 1.0f);
    fill(&s.weights.value_bias, 1, 6, 2.0f);
    fill(&s.weights.out, 6, 6, -2.0f);
    s.weights.dropout_mask_n = 3;
    s.weights.dropout_mask_heads = 2;
    s.weights.dropout_mask = malloc(2 * 3 * 3);
    for (int i = 0; i < 18; i++)
        s.weights.dropout_mask[i] = (unsigned char)(i % 3 == 1);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scene_check(&s, &errs), 0);
    attn_diag_list_free(&errs);
    check_round_trip(&s);
    /* ...written as one mapping per head, as the format shows it. */
    char *text = write_str(&s, false, NULL);
    assert_non_null(strstr(text, "  heads:\n    - query: [[0.25, 0.39285713, 0.53571427],\n"));
    free(text);
    /* The same weights as one split-layout block. */
    s.attn.layout = LAYOUT_SPLIT;
    s.attn.d_out = 6;
    check_round_trip(&s);
    attn_scene_free(&s);

    /* The later systems, every key off its default, with explicit FFN and norm parameters. */
    attn_scene_init(&s);
    assert_int_equal(attn_scene_set_text(&s, "one two three four", &err), 0);
    s.embed.kind = EMBED_LEARNED;
    s.embed.dim = 8;
    s.pos.kind = POS_ROPE;
    s.pos.base = 500.5;
    s.pos.pairs = ROPE_HALVES;
    s.pos.offset = 3;
    s.attn.projection = PROJ_LINEAR;
    s.attn.d_out = 8;
    s.attn.heads = 4;
    s.attn.kv_heads = 2;
    s.attn.qkv = QKV_FUSED;
    s.attn.qkv_bias = true;
    s.block.on = true;
    s.block.order = BLOCK_PRE;
    s.block.norm = NORM_RMS;
    s.block.norm_eps = 1e-6;
    s.block.ffn_hidden = 12;
    s.block.activation = ACT_GELU;
    s.block.ffn_seed = (struct attn_opt_seed){true, 9};
    s.block.ffn_skip = 76;
    fill(&s.weights.ffn_W1, 8, 12, 0.5f);
    fill(&s.weights.ffn_b1, 1, 12, -0.25f);
    fill(&s.weights.ffn_W2, 12, 8, 1.5f);
    fill(&s.weights.ffn_b2, 1, 8, 0.125f);
    fill(&s.weights.norm1_weight, 1, 8, 2.0f);
    fill(&s.weights.norm2_weight, 1, 8, -1.0f);
    attn_diag_list_init(&errs);
    if (attn_scene_check(&s, &errs) != 0) {
        print_diags(&errs, NULL, 0);
        fail_msg("the systems scene is invalid");
    }
    attn_diag_list_free(&errs);
    check_round_trip(&s);
    text = write_str(&s, false, NULL);
    assert_non_null(strstr(text, "\nblock:\n  order: pre\n  norm: rms\n"));
    assert_non_null(strstr(text, "  kv_heads: 2\n"));
    free(text);
    /* MLA with explicit query/down/up weights, sinusoidal positions. */
    attn_scene_weights_free(&s.weights);
    s.pos.kind = POS_SINUSOIDAL;
    s.pos.pairs = ROPE_ADJACENT;
    s.attn.kv_heads = 0;
    s.attn.qkv = QKV_SEPARATE;
    s.attn.qkv_bias = false;
    s.attn.kv_latent = 3;
    s.block.on = false;
    s.weights.set = true;
    fill(&s.weights.query, 8, 8, 0.75f);
    fill(&s.weights.down, 8, 3, -0.5f);
    fill(&s.weights.key_up, 3, 8, 0.25f);
    fill(&s.weights.value_up, 3, 8, 2.5f);
    fill(&s.weights.out, 8, 8, 1.0f);
    fill(&s.weights.out_bias, 1, 8, 0.0f);
    attn_diag_list_init(&errs);
    if (attn_scene_check(&s, &errs) != 0) {
        print_diags(&errs, NULL, 0);
        fail_msg("the MLA scene is invalid");
    }
    attn_diag_list_free(&errs);
    check_round_trip(&s);
    attn_scene_free(&s);

    /* Every scene shipped in scenes/ and scenes/lessons/. */
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    if (!scenes || !*scenes)
        fail_msg("ATTNSCOPE_SCENES_DIR is unset: the shipped scenes were not checked");
    int loaded[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s%s", scenes, pass ? "/lessons" : "");
        int n = 0;
        char **names = tu_list_names(dir, ".yaml", &n);
        if (!names)
            fail_msg("%s: cannot list the shipped scenes", dir);
        for (int i = 0; i < n; i++) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
            attn_diag_list_init(&errs);
            char *src = NULL;
            size_t src_len = 0;
            if (attn_scenefile_load(&s, path, &errs, &src, &src_len) != 0) {
                print_diags(&errs, src, src_len);
                fail_msg("%s does not load", path);
            }
            if (pass == 1)
                assert_non_null(s.lesson);
            check_round_trip(&s);
            attn_scene_free(&s);
            attn_diag_list_free(&errs);
            loaded[pass]++;
        }
        tu_free_names(names, n);
    }
    /* scenes/ holds 29 scenes and scenes/lessons/ 6 lessons: fewer means the walk lost some. */
    assert_true(loaded[0] >= 29);
    assert_true(loaded[1] >= 6);

    /* tokenizer: {kind: hf}: the induction model's tokenizer as tokenizer.json gives the ids and
     * labels of its vocab.json + merges.txt (scenes/29), and the file's path survives a save */
    char hf[4200], gpt2[4200];
    snprintf(hf, sizeof(hf), "%s/hf/induction.yaml", getenv("ATTNSCOPE_FIXTURES"));
    snprintf(gpt2, sizeof(gpt2), "%s/29-induction-head.yaml", scenes);
    struct attn_scene g;
    attn_diag_list_init(&errs);
    char *src = NULL;
    size_t src_len = 0;
    if (attn_scenefile_load(&s, hf, &errs, &src, &src_len) != 0) {
        print_diags(&errs, src, src_len);
        fail_msg("%s does not load", hf);
    }
    free(src);
    assert_int_equal(attn_scenefile_load(&g, gpt2, &errs, NULL, NULL), 0);
    assert_int_equal(s.tokenizer, TOKENIZER_HF);
    assert_non_null(s.tokenizer_file);
    assert_true(s.tokenizer_file[0] == '/');
    assert_non_null(strstr(s.tokenizer_file, "/hf/induction/tokenizer.json"));
    assert_int_equal(s.n_tokens, g.n_tokens);
    for (int i = 0; i < s.n_tokens; i++) {
        assert_int_equal(s.token_ids[i], g.token_ids[i]);
        assert_string_equal(s.tokens[i], g.tokens[i]);
    }
    check_round_trip(&s);
    attn_scene_free(&s);
    attn_scene_free(&g);
    attn_diag_list_free(&errs);
}

/* A lesson of every kind of step, captions with every awkward character, written and read
 * back: the same steps, and the text a fixed point. */
static void test_round_trip_lesson(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag err;
    attn_scene_init(&s);
    assert_int_equal(attn_scene_set_text(&s, "the cat sat on the mat", &err), 0);
    s.embed.dim = 8;
    s.pos.kind = POS_ROPE;
    s.attn.d_out = 8;
    s.attn.heads = 2;
    s.attn.dropout_seed = (struct attn_opt_seed){true, 123};
    enum { STEPS = EDIT_LESSON_COUNT + 2 };
    s.lesson = attn_lesson_new(STEPS);
    assert_non_null(s.lesson);
    static const char *const captions[] = {
        "plain",
        "a: colon, # hash, {0.5}, {-inf @ 0,1} and {1.25 @ scores 2,3}",
        "two\nlines, \"quoted\" and 'single'\n",
        "  leading blanks, a tab\there, trailing ",
        "unicode: \u221ad_k \u00f7 \u2212\u221e \u00b7 \u65e5\u672c",
        "yes",
    };
    for (int i = 0; i < STEPS; i++) {
        struct attn_lesson_step *st = &s.lesson->steps[i];
        st->stage =
            (int[]){STAGE_WEIGHTS, STAGE_QUERIES_ROTATED, STAGE_SCORES, STAGE_INPUTS}[i % 4];
        st->head = i % 2;
        if (i % 3 == 1) {
            st->row = i % 6;
            st->col = (i + 1) % 4;
        } else if (i % 3 == 2) {
            st->row = 5;
        }
        st->all_heads = i == 4;
        st->caption = strdup(captions[i % 6]);
        struct attn_edit *e = &st->edit;
        /* generate: needs a vocabulary model, which this drawn scene is not (lesson 8 is) */
        e->kind = i < EDIT_LESSON_COUNT && i != EDIT_GENERATE ? (enum attn_edit_kind)i : EDIT_SCALE;
        e->causal = true;
        e->heads = 4;
        e->d_out = 16;
        e->dropout = 0.1; /* a double torch would print 0.1 */
        e->seed = UINT64_MAX;
        e->text = e->kind == EDIT_TEXT ? strdup("the mat sat: on \"the\" cat") : NULL;
        e->scale = i == STEPS - 1 ? SCALE_NONE : SCALE_DIVISOR;
        e->scale_divisor = 4.5;
        e->mask_mode = MASK_AFTER_SOFTMAX;
        e->normalize = NORMALIZE_SUM;
        e->layout = LAYOUT_WRAPPER;
        e->offset = 7;
        e->generate = 3;
        e->layer = 0;
        e->head = 1;
        e->head_mode = i % 2 ? HEAD_MEAN : HEAD_KEEP; /* "mode: off" takes an ablation away */
    }
    check_round_trip(&s);
    attn_scene_free(&s);
}

/* ablate: written back in its order (a drawn scene of 3 layers and a checkpoint's), and the
 * explorer's toggle edits the list. */
static void test_round_trip_ablate(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag err;
    attn_scene_init(&s);
    assert_int_equal(attn_scene_set_text(&s, "the cat sat on the mat", &err), 0);
    s.embed.dim = 8;
    s.attn.d_out = 8;
    s.attn.heads = 4;
    s.layers = 3;
    s.block.on = true;
    assert_int_equal(attn_scene_set_ablation(&s, 2, 3, HEAD_MEAN), 0);
    assert_int_equal(attn_scene_set_ablation(&s, 0, 1, HEAD_ZERO), 0);
    assert_int_equal(attn_scene_set_ablation(&s, 1, 0, HEAD_ZERO), 0);
    assert_int_equal(attn_scene_set_ablation(&s, 1, 0, HEAD_MEAN), 0); /* changed, not added */
    assert_int_equal(s.n_ablate, 3);
    char *text = write_str(&s, false, NULL);
    assert_non_null(strstr(text, "ablate:\n  - {layer: 2, head: 3, mode: mean}\n"
                                 "  - {layer: 0, head: 1, mode: zero}\n"
                                 "  - {layer: 1, head: 0, mode: mean}\n"));
    free(text);
    check_round_trip(&s);
    assert_int_equal(attn_scene_set_ablation(&s, 0, 1, HEAD_KEEP), 0);
    assert_int_equal(s.n_ablate, 2);
    assert_int_equal(attn_scene_ablation(&s, 0, 1), HEAD_KEEP);
    assert_int_equal(attn_scene_ablation(&s, 2, 3), HEAD_MEAN);
    check_round_trip(&s);
    attn_scene_free(&s);

    /* on a checkpoint: the scene says the model and what it ablates */
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    char path[4200];
    snprintf(path, sizeof(path), "%s/29-induction-head.yaml",
             scenes && *scenes ? scenes : "scenes");
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&s, path, &errs, NULL, NULL), 0);
    attn_diag_list_free(&errs);
    assert_int_equal(attn_scene_set_ablation(&s, 1, 0, HEAD_ZERO), 0);
    text = write_str(&s, false, NULL);
    assert_non_null(strstr(text, "ablate:\n  - {layer: 1, head: 0, mode: zero}\n"));
    free(text);
    check_round_trip(&s);
    attn_scene_free(&s);
}

/* The writer and the reader use '.' whatever LC_NUMERIC says. */
static void test_locale(void **state)
{
    (void)state;
    assert_non_null(setlocale(LC_ALL, tu_comma_locale()));
    struct attn_scene s;
    parse_ok(&s, "tokens: [a]\nembeddings: [[0.5, 1.25]]\nattention: {dropout: 0.25}\n");
    assert_true(s.embed.rows.data[1] == 1.25f);
    char *text = write_str(&s, true, NULL);
    assert_non_null(strstr(text, "[[0.5, 1.25]]"));
    assert_non_null(strstr(text, "dropout: 0.25\n"));
    free(text);
    attn_scene_free(&s);
    setlocale(LC_ALL, "C");
}

static void test_writer_refuses(void **state)
{
    (void)state;
    struct attn_scene s;
    struct diag err;
    attn_scene_init(&s);
    char *tokens[] = {"ok", "bad\xff"};
    assert_int_equal(attn_scene_set_tokens(&s, tokens, 2, &err), 0);
    FILE *f = fopen("/dev/null", "w");
    assert_int_equal(attn_scenefile_write(f, &s, false, &err), -1);
    assert_string_equal(err.msg, "cannot write 'tokens': it is not valid UTF-8 text");
    char *good[] = {"ok"};
    assert_int_equal(attn_scene_set_tokens(&s, good, 1, &err), 0);
    s.embed.kind = EMBED_EXPLICIT;
    assert_int_equal(attn_matrix_alloc(&s.embed.rows, 1, 2), 0);
    s.embed.rows.data[1] = NAN;
    assert_int_equal(attn_scenefile_write(f, &s, false, &err), -1);
    assert_string_equal(err.msg,
                        "cannot write 'embeddings': row 1, column 2 is not a finite number");
    fclose(f);
    attn_scene_free(&s);
}

/* ---- saving ------------------------------------------------------------------------------- */

static void test_save_no_overwrite(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("scenefile");
    char path[4200];
    snprintf(path, sizeof(path), "%s/scene.yaml", dir);
    struct attn_scene s, other, back;
    attn_scene_init_default(&s);
    attn_scene_init(&other);
    struct diag err;
    assert_int_equal(attn_scene_set_text(&other, "something else", &err), 0);

    assert_int_equal(attn_scenefile_save(path, &s, false, false, &err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);

    /* Refused, and the file keeps the first scene. */
    assert_int_equal(attn_scenefile_save(path, &other, false, false, &err), -1);
    assert_string_equal(err.msg, "already exists; not replacing it");
    assert_string_equal(err.file, path);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(attn_scenefile_load(&back, path, &errs, NULL, NULL), 0);
    assert_scene_equal(&s, &back);
    attn_scene_free(&back);

    /* With overwrite it is replaced. */
    assert_int_equal(attn_scenefile_save(path, &other, true, true, &err), 0);
    assert_int_equal(attn_scenefile_load(&back, path, &errs, NULL, NULL), 0);
    assert_string_equal(back.text, "something else");
    attn_scene_free(&back);
    assert_int_equal(errs.n, 0);
    attn_diag_list_free(&errs);
    assert_int_equal(count_entries(dir), 1);

    attn_scene_free(&s);
    attn_scene_free(&other);
    tu_remove_tree(dir);
    free(dir);
}

static int failing_writer(FILE *f, void *ctx, struct diag *err)
{
    fputs("half a scene", f);
    return attn_diag_set(err, "", "the writer gave up");
}

/* Saves leave nothing behind but the target, and a failed write leaves the target as it was. */
static void test_atomic_save(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("scenefile");
    char path[4200];
    snprintf(path, sizeof(path), "%s/scene.yaml", dir);
    struct attn_scene s;
    attn_scene_init_default(&s);
    struct diag err;
    for (int i = 0; i < 3; i++)
        assert_int_equal(attn_scenefile_save(path, &s, i == 1, true, &err), 0);
    assert_int_equal(count_entries(dir), 1);

    char *before, *after;
    size_t n1, n2;
    assert_int_equal(attn_fsutil_read_file(&before, &n1, path, 1 << 20, &err), 0);
    assert_int_equal(attn_fsutil_write_atomic(path, true, failing_writer, NULL, &err), -1);
    assert_string_equal(err.msg, "the writer gave up");
    assert_string_equal(err.file, path);
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(attn_fsutil_read_file(&after, &n2, path, 1 << 20, &err), 0);
    assert_int_equal(n1, n2);
    assert_memory_equal(before, after, n1);
    free(before);
    free(after);

    /* A scene the writer refuses: no file at all appears. */
    char bad_path[4200];
    snprintf(bad_path, sizeof(bad_path), "%s/bad.yaml", dir);
    s.embed.rows.data[0] = INFINITY;
    assert_int_equal(attn_scenefile_save(bad_path, &s, false, false, &err), -1);
    assert_false(attn_fsutil_exists(bad_path));
    assert_int_equal(count_entries(dir), 1);

    /* A folder that does not exist. */
    snprintf(bad_path, sizeof(bad_path), "%s/no/such/scene.yaml", dir);
    assert_int_equal(attn_scenefile_save(bad_path, &s, false, false, &err), -1);
    assert_int_equal(count_entries(dir), 1);

    /* A FIFO (the explorer's w confirmed over one): refused, never replaced by a file. */
    s.embed.rows.data[0] = 0.5f;
    snprintf(bad_path, sizeof(bad_path), "%s/fifo.yaml", dir);
    assert_int_equal(mkfifo(bad_path, 0644), 0);
    assert_int_equal(attn_scenefile_save(bad_path, &s, false, true, &err), -1);
    assert_string_equal(err.msg, "not a regular file (a FIFO): attnscope writes only files");
    struct stat st;
    assert_int_equal(lstat(bad_path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(count_entries(dir), 2);
    unlink(bad_path);

    attn_scene_free(&s);
    tu_remove_tree(dir);
    free(dir);
}

/* Paths a saved scene names: relative to the saved file wherever they share more than "/" with
 * it, so a scene travels with its folder and shows nobody the user's own paths. */
static void test_saved_paths_relative(void **state)
{
    (void)state;
    char out[4096];
    assert_string_equal(attn_scenefile_relative_path(out, sizeof(out), "/a/b/m/v.json", "/a/b/out"),
                        "../m/v.json");
    assert_string_equal(
        attn_scenefile_relative_path(out, sizeof(out), "/a/b/out/v.json", "/a/b/out"), "v.json");
    assert_string_equal(attn_scenefile_relative_path(out, sizeof(out), "/a/b/out/x", "/a/b/outer"),
                        "../out/x");
    assert_string_equal(attn_scenefile_relative_path(out, sizeof(out), "/a/m/x", "/a/b/c/d"),
                        "../../../m/x");
    assert_string_equal(attn_scenefile_relative_path(out, sizeof(out), "/opt/m/x", "/home/u/work"),
                        "/opt/m/x"); /* only "/" in common: absolute */

    /* A checkpoint scene (a copy of models/induction beside it) saved two folders down. */
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    assert_non_null(scenes);
    char *dir = tu_make_tmpdir("scenefile-paths");
    char m[4300], from[4300], to[4400], path[4400];
    snprintf(m, sizeof(m), "%s/m", dir);
    assert_int_equal(mkdir(m, 0755), 0);
    static const char *const files[] = {"config.json", "vocab.json", "merges.txt",
                                        "model.safetensors"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(from, sizeof(from), "%s/../models/induction/%s", scenes, files[i]);
        snprintf(to, sizeof(to), "%s/%s", m, files[i]);
        tu_copy_file(from, to);
    }
    char a[4096];
    snprintf(a, sizeof(a), "%s/a", dir);
    assert_int_equal(mkdir(a, 0755), 0);
    put_text(a, "scene.yaml",
             "text: fish moon king\n"
             "tokenizer: {kind: gpt2, vocab: ../m/vocab.json, merges: ../m/merges.txt}\n"
             "model: {file: ../m/model.safetensors, arch: gpt2}\n");
    snprintf(path, sizeof(path), "%s/a/scene.yaml", dir);
    struct attn_scene s;
    load_ok(&s, path);
    assert_true(s.model.file[0] == '/'); /* resolved when loaded */
    snprintf(path, sizeof(path), "%s/b/c", dir);
    struct diag err;
    assert_int_equal(attn_fsutil_mkdir_p(path, &err), 0);
    snprintf(path, sizeof(path), "%s/b/c/saved.yaml", dir);
    assert_int_equal(attn_scenefile_save(path, &s, false, false, &err), 0);
    attn_scene_free(&s);
    char *text = tu_must_read_file(path, NULL);
    assert_non_null(strstr(text, "tokenizer: {kind: gpt2, vocab: \"../../m/vocab.json\", merges: "
                                 "\"../../m/merges.txt\"}\n"));
    assert_non_null(strstr(text, "model: {file: \"../../m/model.safetensors\", arch: gpt2}\n"));
    assert_null(strstr(text, dir)); /* no absolute path of this machine */
    free(text);
    load_ok(&s, path); /* and it loads from where it is */
    attn_scene_free(&s);
    /* Saved by a relative name from another working folder: the same. */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(path, sizeof(path), "%s/b", dir);
    assert_int_equal(chdir(path), 0);
    snprintf(path, sizeof(path), "%s/a/scene.yaml", dir);
    load_ok(&s, path);
    assert_int_equal(attn_scenefile_save("here.yaml", &s, false, false, &err), 0);
    attn_scene_free(&s);
    text = tu_must_read_file("here.yaml", NULL);
    assert_non_null(strstr(text, "model: {file: \"../m/model.safetensors\", arch: gpt2}\n"));
    free(text);
    assert_int_equal(chdir(cwd), 0);

    /* A tokenizer.json (BERT's, beside its checkpoint) is named the same way. */
    snprintf(m, sizeof(m), "%s/bert", dir);
    assert_int_equal(mkdir(m, 0755), 0);
    static const char *const bert_files[] = {"config.json", "tokenizer.json", "model.safetensors"};
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        snprintf(from, sizeof(from), "%s/../tests/golden/families/bert-pair/%s", scenes,
                 bert_files[i]);
        char *bytes = tu_must_read_file(from, &len);
        snprintf(to, sizeof(to), "%s/%s", m, bert_files[i]);
        tu_write_file(to, bytes, len);
        free(bytes);
    }
    put_text(a, "bert.yaml",
             "text: [\"the cat sat\", \"it was [MASK]\"]\n"
             "tokenizer: {kind: hf, file: ../bert/tokenizer.json}\n"
             "model: {file: ../bert/model.safetensors}\n");
    snprintf(path, sizeof(path), "%s/a/bert.yaml", dir);
    load_ok(&s, path);
    snprintf(path, sizeof(path), "%s/b/c/bert.yaml", dir);
    assert_int_equal(attn_scenefile_save(path, &s, false, false, &err), 0);
    attn_scene_free(&s);
    text = tu_must_read_file(path, NULL);
    assert_non_null(strstr(text, "tokenizer: {kind: hf, file: \"../../bert/tokenizer.json\"}\n"));
    assert_null(strstr(text, dir));
    free(text);
    load_ok(&s, path);
    attn_scene_free(&s);
    tu_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_fixtures),
        cmocka_unit_test(test_ten_mb_line),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_all_problems_reported),
        cmocka_unit_test(test_error_limit),
        cmocka_unit_test(test_check_locations),
        cmocka_unit_test(test_utf8_columns),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_full_example),
        cmocka_unit_test(test_stage_names_and_aliases),
        cmocka_unit_test(test_stage_table),
        cmocka_unit_test(test_scalar_forms),
        cmocka_unit_test(test_round_trip_awkward_strings),
        cmocka_unit_test(test_round_trip_scenes),
        cmocka_unit_test(test_round_trip_lesson),
        cmocka_unit_test(test_round_trip_ablate),
        cmocka_unit_test(test_locale),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_save_no_overwrite),
        cmocka_unit_test(test_atomic_save),
        cmocka_unit_test(test_saved_paths_relative),
        cmocka_unit_test(test_matrix_files_csv),
        cmocka_unit_test(test_matrix_files_npy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
