/* test_export: the CSV writer and the export folder (README.md ("Export format") is a contract).
 *
 * CSV: RFC 4180 quoting, CRLF, shortest round-trip floats, -inf. Folder: exactly the listed
 * files for a split and a wrapper scene; an export of the exported scene.yaml is byte for byte
 * the same; a failed export says which file and leaves no temporary file behind. The .npy
 * export: the CSV export's names and shapes, every value bit for bit the CSV's; and a scene that
 * takes its parameters from an export's params/ files (either format) computes the same output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "engine/attention.h"
#include "engine/model.h"
#include "engine/scene.h"
#include "export/export.h"
#include "scenefile/scenefile.h"
#include "testutil.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static char *csv_to_string(struct attn_mat_view v, char *const *rows, char *const *cols)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(csv_write_matrix(f, v, rows, cols), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* Every regular file under root, as sorted paths relative to root, one per line. */
struct file_list {
    char **items;
    int n;
};

static void list_walk(struct file_list *l, const char *root, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub_rel[4096], sub[8192];
        snprintf(sub_rel, sizeof(sub_rel), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(sub, sizeof(sub), "%s/%s", root, sub_rel);
        struct stat st;
        assert_int_equal(lstat(sub, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            list_walk(l, root, sub_rel);
        } else {
            l->items = realloc(l->items, (size_t)(l->n + 1) * sizeof(*l->items));
            assert_non_null(l->items);
            l->items[l->n++] = strdup(sub_rel);
        }
    }
    closedir(d);
}

static char *list_files(const char *root)
{
    struct file_list l = {NULL, 0};
    list_walk(&l, root, "");
    qsort(l.items, (size_t)l.n, sizeof(*l.items), tu_cmp_str);
    size_t len = 1;
    for (int i = 0; i < l.n; i++)
        len += strlen(l.items[i]) + 1;
    char *out = calloc(1, len);
    assert_non_null(out);
    for (int i = 0; i < l.n; i++) {
        strcat(out, l.items[i]);
        strcat(out, "\n");
        free(l.items[i]);
    }
    free(l.items);
    return out;
}

/* A scene computed once, the way the CLI does it. */
struct computed {
    struct attn_scene scene;
    struct attn_net net;
};

static void compute(struct computed *c)
{
    struct diag err;
    attn_diag_clear(&err);
    memset(&c->net, 0, sizeof(c->net));
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int problems = attn_scene_check(&c->scene, &errs);
    for (int i = 0; i < errs.n; i++)
        print_error("scene_check: %s: %s\n", errs.items[i].path, errs.items[i].msg);
    attn_diag_list_free(&errs);
    assert_int_equal(problems, 0);
    if (attn_net_compute(&c->net, &c->scene, &err) != 0)
        fail_msg("attn_net_compute: %s", err.msg);
}

static void computed_free(struct computed *c)
{
    attn_net_free(&c->net);
    attn_scene_free(&c->scene);
}

static void export_as(const char *dir, struct computed *c, enum export_format fmt)
{
    struct diag err;
    if (export_dir(dir, &c->scene, &c->net, fmt, &err) != 0)
        fail_msg("export_dir: %s: %s", err.file, err.msg);
}

static void export_ok(const char *dir, struct computed *c)
{
    export_as(dir, c, EXPORT_CSV);
}

/* The book's MultiHeadAttention: split layout, out_proj with bias, no dropout. */
static void split_scene(struct computed *c)
{
    attn_scene_init_default(&c->scene);
    compute(c);
}

/* The wrapper layout with qkv biases, an out_proj and drawn dropout masks. */
static void wrapper_scene(struct computed *c)
{
    attn_scene_init_default(&c->scene);
    c->scene.attn.layout = LAYOUT_WRAPPER;
    c->scene.attn.qkv_bias = true;
    c->scene.attn.out_proj = TRI_TRUE;
    c->scene.attn.dropout = 0.5f;
    compute(c);
}

/* ---- CSV -------------------------------------------------------------------------------- */

static void test_csv_quoting(void **state)
{
    (void)state;
    const float data[] = {0.5f, -INFINITY, 1.0f, 0.25f};
    char t0[] = "a,b", t1[] = "say \"hi\"";
    char c0[] = "line\nbreak", c1[] = "cr\rhere";
    char *rows[] = {t0, t1};
    char *cols[] = {c0, c1};
    struct attn_mat_view v = {data, 2, 2, 2};
    char *got = csv_to_string(v, rows, cols);
    assert_string_equal(got, "token,\"line\nbreak\",\"cr\rhere\"\r\n"
                             "\"a,b\",0.5,-inf\r\n"
                             "\"say \"\"hi\"\"\",1,0.25\r\n");
    free(got);
}

/* tokens.csv keeps every token byte for byte (a reader gets the raw ESC back), quoted where RFC
 * 4180 wants it and where a spreadsheet would read a formula (= + - @). */
static void test_csv_tokens_faithful_and_quoted(void **state)
{
    (void)state;
    char t0[] = "\x1b[31mred", t1[] = "=HYPERLINK(\"x\")", t2[] = "+1", t3[] = "-2", t4[] = "@a";
    char t5[] = "bell\a",
         t6[] = "\xe2\x80\xae"
                "evil",
         t7[] = " cat", t8[] = "a=b",
         t9[] = "del\x7f"
                "";
    char *tokens[] = {t0, t1, t2, t3, t4, t5, t6, t7, t8, t9};
    const int ids[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(csv_write_tokens(f, tokens, ids, 10), 0);
    fclose(f);
    assert_string_equal(buf, "position,id,token\r\n"
                             "0,0,\"\x1b[31mred\"\r\n"
                             "1,1,\"=HYPERLINK(\"\"x\"\")\"\r\n"
                             "2,2,\"+1\"\r\n"
                             "3,3,\"-2\"\r\n"
                             "4,4,\"@a\"\r\n"
                             "5,5,\"bell\a\"\r\n"
                             "6,6,\xe2\x80\xae"
                             "evil\r\n" /* not a control byte: as it is */
                             "7,7, cat\r\n"
                             "8,8,a=b\r\n"
                             "9,9,\"del\x7f"
                             "\"\r\n");
    free(buf);
}

static void test_csv_default_labels_and_stride(void **state)
{
    (void)state;
    /* A 2 x 2 window on a 2 x 3 buffer: the third column must not appear. */
    const float data[] = {1.5f, 2.0f, 99.0f, -0.125f, 0.0f, 99.0f};
    struct attn_mat_view v = {data, 2, 2, 3};
    char *got = csv_to_string(v, NULL, NULL);
    assert_string_equal(got, "token,d0,d1\r\n0,1.5,2\r\n1,-0.125,0\r\n");
    free(got);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char b[] = "b";
    char *brow[] = {b};
    struct attn_mat_view bias = {data, 1, 3, 3};
    assert_int_equal(csv_write_table(f, bias, "row", brow, NULL), 0);
    fclose(f);
    assert_string_equal(buf, "row,d0,d1,d2\r\nb,1.5,2,99\r\n");
    free(buf);
}

static void expect_float(float x, const char *want)
{
    char buf[32];
    csv_format_float(buf, sizeof(buf), x);
    assert_string_equal(buf, want);
}

static void test_csv_special_and_short_floats(void **state)
{
    (void)state;
    expect_float(-INFINITY, "-inf");
    expect_float(INFINITY, "inf");
    expect_float(NAN, "nan");
    expect_float(-NAN, "nan");
    expect_float(0.0f, "0");
    expect_float(-0.0f, "-0");
    expect_float(0.1f, "0.1");
    expect_float(0.43f, "0.43");
    expect_float(1.0f / 3.0f, "0.33333334");
    expect_float(0.100246795f, "0.100246795"); /* needs all 9 digits */
    expect_float(16777216.0f, "16777216");
    expect_float(1e-10f, "1e-10");
    expect_float(3.40282347e38f, "3.4028235e+38"); /* numpy agrees: repr(float32) */
    expect_float(1.17549435e-38f, "1.1754944e-38");
    expect_float(1e-45f, "1.4013e-45"); /* the smallest subnormal; %.6g is the shortest tried */
}

/* For many float32 bit patterns: the text reads back to the same bits, and no shorter
 * precision (down to 6) would have. */
static void test_csv_shortest_round_trip(void **state)
{
    (void)state;
    uint32_t s = 12345;
    for (int i = 0; i < 200000; i++) {
        s = s * 1664525u + 1013904223u;
        uint32_t bits = s;
        float x;
        memcpy(&x, &bits, sizeof(x));
        if (!isfinite(x))
            continue;
        char buf[32];
        csv_format_float(buf, sizeof(buf), x);
        float back = strtof(buf, NULL);
        uint32_t got;
        memcpy(&got, &back, sizeof(got));
        if (got != bits)
            fail_msg("%a printed as %s reads back as %a", (double)x, buf, (double)back);
        for (int prec = 6; prec < 9; prec++) {
            char shorter[32];
            snprintf(shorter, sizeof(shorter), "%.*g", prec, (double)x);
            float b2 = strtof(shorter, NULL);
            if (memcmp(&b2, &x, sizeof(x)) == 0) {
                assert_string_equal(buf, shorter); /* the first that works is the one used */
                break;
            }
        }
    }
}

/* ---- export folder ---------------------------------------------------------------------- */

/* Without dropout there is no head<H>/dropout.csv (it would be a byte copy of weights.csv);
 * the wrapper scene has dropout, and its dropout.csv files. */
static const char split_files[] = ".attnscope-export\n"
                                  "context.csv\n"
                                  "head0/context.csv\n"
                                  "head0/keys.csv\n"
                                  "head0/masked.csv\n"
                                  "head0/queries.csv\n"
                                  "head0/scaled.csv\n"
                                  "head0/scores.csv\n"
                                  "head0/values.csv\n"
                                  "head0/weighted_norm.csv\n"
                                  "head0/weights.csv\n"
                                  "head1/context.csv\n"
                                  "head1/keys.csv\n"
                                  "head1/masked.csv\n"
                                  "head1/queries.csv\n"
                                  "head1/scaled.csv\n"
                                  "head1/scores.csv\n"
                                  "head1/values.csv\n"
                                  "head1/weighted_norm.csv\n"
                                  "head1/weights.csv\n"
                                  "inputs.csv\n"
                                  "output.csv\n"
                                  "params/W_key.csv\n"
                                  "params/W_query.csv\n"
                                  "params/W_value.csv\n"
                                  "params/out.csv\n"
                                  "params/out_bias.csv\n"
                                  "rollout.csv\n"
                                  "scene.yaml\n"
                                  "tokens.csv\n";

static const char wrapper_files[] = ".attnscope-export\n"
                                    "context.csv\n"
                                    "head0/context.csv\n"
                                    "head0/dropout.csv\n"
                                    "head0/keys.csv\n"
                                    "head0/masked.csv\n"
                                    "head0/queries.csv\n"
                                    "head0/scaled.csv\n"
                                    "head0/scores.csv\n"
                                    "head0/values.csv\n"
                                    "head0/weighted_norm.csv\n"
                                    "head0/weights.csv\n"
                                    "head1/context.csv\n"
                                    "head1/dropout.csv\n"
                                    "head1/keys.csv\n"
                                    "head1/masked.csv\n"
                                    "head1/queries.csv\n"
                                    "head1/scaled.csv\n"
                                    "head1/scores.csv\n"
                                    "head1/values.csv\n"
                                    "head1/weighted_norm.csv\n"
                                    "head1/weights.csv\n"
                                    "inputs.csv\n"
                                    "output.csv\n"
                                    "params/dropout_mask.csv\n"
                                    "params/head0/W_key.csv\n"
                                    "params/head0/W_query.csv\n"
                                    "params/head0/W_value.csv\n"
                                    "params/head0/b_key.csv\n"
                                    "params/head0/b_query.csv\n"
                                    "params/head0/b_value.csv\n"
                                    "params/head1/W_key.csv\n"
                                    "params/head1/W_query.csv\n"
                                    "params/head1/W_value.csv\n"
                                    "params/head1/b_key.csv\n"
                                    "params/head1/b_query.csv\n"
                                    "params/head1/b_value.csv\n"
                                    "params/out.csv\n"
                                    "params/out_bias.csv\n"
                                    "rollout.csv\n"
                                    "scene.yaml\n"
                                    "tokens.csv\n";

static void test_export_split_files(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    char *tmp = tu_make_tmpdir("export");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/new/folder", tmp); /* created, parents included */
    export_ok(dir, &c);
    char *files = list_files(dir);
    assert_string_equal(files, split_files);
    free(files);
    /* The marker: what it is, the version, then every path written, folders too, itself too. */
    char marker[4200];
    snprintf(marker, sizeof(marker), "%s/.attnscope-export", dir);
    char *m = tu_must_read_file(marker, NULL);
    assert_int_equal(strncmp(m, "attnscope-export 1\nversion " ATTNSCOPE_VERSION "\n",
                             28 + strlen(ATTNSCOPE_VERSION)),
                     0);
    assert_non_null(strstr(m, "\nf .attnscope-export\nf context.csv\nd head0\nf "
                              "head0/context.csv\n"));
    assert_non_null(strstr(m, "\nd params\nf params/W_key.csv\n"));
    assert_non_null(strstr(m, "\nf tokens.csv\n"));
    free(m);

    size_t len;
    char *text = tu_must_read_file(strcat(dir, "/params/W_query.csv"), &len);
    assert_int_equal(strncmp(text, "row,d0,d1\r\nd0,", 14), 0); /* d_in 3 x D 2 */
    free(text);
    snprintf(dir, sizeof(dir), "%s/new/folder/head0/masked.csv", tmp);
    text = tu_must_read_file(dir, &len);
    assert_non_null(strstr(text, "token,Your,journey,starts,with,one,step\r\nYour,"));
    assert_non_null(strstr(text, ",-inf,-inf,-inf,-inf,-inf\r\njourney,"));
    free(text);
    snprintf(dir, sizeof(dir), "%s/new/folder/output.csv", tmp);
    text = tu_must_read_file(dir, &len);
    /* the book's first output row, 0.3190 0.4858, at full precision */
    assert_int_equal(strncmp(text, "token,d0,d1\r\nYour,0.319", 23), 0);
    free(text);

    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

static void test_export_wrapper_files(void **state)
{
    (void)state;
    struct computed c;
    wrapper_scene(&c);
    char *tmp = tu_make_tmpdir("export");
    export_ok(tmp, &c);
    char *files = list_files(tmp);
    assert_string_equal(files, wrapper_files);
    free(files);

    char path[4096];
    size_t len;
    snprintf(path, sizeof(path), "%s/params/head1/W_value.csv", tmp);
    char *text = tu_must_read_file(path, &len);
    assert_int_equal(strncmp(text, "row,d0,d1\r\nd0,", 14), 0); /* d_in 3 x d_out 2 */
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 1 + 3);
    free(text);

    snprintf(path, sizeof(path), "%s/params/head0/b_query.csv", tmp);
    text = tu_must_read_file(path, &len);
    assert_int_equal(strncmp(text, "row,d0,d1\r\nb,", 13), 0);
    free(text);

    /* With dropout, dropout.csv is the weights with a keep-mask and a 1 / (1 - p): not a copy. */
    snprintf(path, sizeof(path), "%s/head0/dropout.csv", tmp);
    char *dropped = tu_must_read_file(path, NULL);
    snprintf(path, sizeof(path), "%s/head0/weights.csv", tmp);
    char *weights = tu_must_read_file(path, NULL);
    assert_string_not_equal(dropped, weights);
    free(dropped);
    free(weights);

    snprintf(path, sizeof(path), "%s/params/dropout_mask.csv", tmp);
    text = tu_must_read_file(path, &len);
    assert_int_equal(strncmp(text, "token,Your,journey,starts,with,one,step\r\nh0:Your,", 49), 0);
    assert_non_null(strstr(text, "\r\nh1:step,"));
    lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 1 + 2 * 6);
    free(text);

    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* Export, load the exported scene.yaml, export again: every file byte for byte equal. */
static void check_reexport(struct computed *first)
{
    char *tmp = tu_make_tmpdir("export");
    char a[4096], b[4096];
    snprintf(a, sizeof(a), "%s/a", tmp);
    snprintf(b, sizeof(b), "%s/b", tmp);
    export_ok(a, first);

    struct computed again;
    char yaml[4200];
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", a);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    char *source = NULL;
    size_t source_len = 0;
    if (attn_scenefile_load(&again.scene, yaml, &errs, &source, &source_len) != 0) {
        for (int i = 0; i < errs.n; i++)
            attn_diag_print(stderr, &errs.items[i], source, source_len);
        fail_msg("the exported scene.yaml does not load");
    }
    attn_diag_list_free(&errs);
    free(source);
    compute(&again);
    export_ok(b, &again);

    char *la = list_files(a), *lb = list_files(b);
    assert_string_equal(la, lb);
    for (char *line = la; *line;) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        char pa[8192], pb[8192];
        snprintf(pa, sizeof(pa), "%s/%s", a, line);
        snprintf(pb, sizeof(pb), "%s/%s", b, line);
        size_t na, nb;
        char *ta = tu_must_read_file(pa, &na), *tb = tu_must_read_file(pb, &nb);
        if (na != nb || memcmp(ta, tb, na) != 0)
            fail_msg("%s differs after re-export:\n--- first\n%s--- second\n%s", line, ta, tb);
        free(ta);
        free(tb);
        line = nl + 1;
    }
    free(la);
    free(lb);
    computed_free(&again);
    tu_remove_tree(tmp);
    free(tmp);
}

static void test_export_reexport_split(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    check_reexport(&c);
    computed_free(&c);
}

static void test_export_reexport_wrapper(void **state)
{
    (void)state;
    struct computed c;
    wrapper_scene(&c);
    check_reexport(&c);
    computed_free(&c);
}

/* The folder cannot be made (a file is in the way): a clean error naming the path. */
static void test_export_dir_blocked_by_file(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    char *tmp = tu_make_tmpdir("export");
    char file[4096], dir[4200];
    snprintf(file, sizeof(file), "%s/plain-file", tmp);
    tu_write_text(file, "");
    snprintf(dir, sizeof(dir), "%s/out", file);

    struct diag err;
    assert_int_equal(export_dir(dir, &c.scene, &c.net, EXPORT_CSV, &err), -1);
    assert_non_null(strstr(err.file, "plain-file"));
    assert_true(err.msg[0] != '\0');
    char *files = list_files(tmp);
    assert_string_equal(files, "plain-file\n");
    free(files);

    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* Every file under root with its contents, one "path\tbytes\n" entry per file: equal strings
 * mean equal folders. */
static char *snapshot(const char *root)
{
    char *names = list_files(root);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    for (char *line = names; *line;) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", root, line);
        size_t n;
        char *data = tu_must_read_file(path, &n);
        fprintf(f, "%s\t", line);
        fwrite(data, 1, n, f);
        fputc('\n', f);
        free(data);
        line = nl + 1;
    }
    fclose(f);
    free(names);
    return out;
}

/* The hidden names beside dir (temporary folders of an export), one per line. */
static char *hidden_beside(const char *parent)
{
    char *out = calloc(1, 4096);
    assert_non_null(out);
    DIR *d = opendir(parent);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            strlen(out) + strlen(e->d_name) + 2 < 4096) {
            strcat(out, e->d_name);
            strcat(out, "\n");
        }
    closedir(d);
    return out;
}

/* A re-export that fails at any file (a full disk, injected at the n-th file written) leaves
 * the previous export exactly as it was, and no temporary folder beside it. */
static void test_export_all_or_nothing(void **state)
{
    (void)state;
    struct computed two, one;
    split_scene(&two); /* 2 heads */
    attn_scene_init_default(&one.scene);
    one.scene.attn.heads = 1; /* 1 head, other numbers: nothing of it may leak into the old */
    one.scene.seed = 7;
    compute(&one);
    char *tmp = tu_make_tmpdir("export");
    char out[4096];
    snprintf(out, sizeof(out), "%s/out", tmp);
    export_ok(out, &two);
    char *before = snapshot(out);
    int files = 0;
    char *names = list_files(out);
    for (char *q = names; (q = strchr(q, '\n')) != NULL; q++)
        files++;
    free(names);
    assert_true(files > 20);
    for (int n = 1; n <= files; n++) {
        attn_fsutil_fail_nth_write(n);
        struct diag err;
        int rc = export_dir(out, &one.scene, &one.net, EXPORT_CSV, &err);
        attn_fsutil_fail_nth_write(0);
        if (rc == 0)
            break; /* the new export has fewer files than n */
        /* The message names the file in the folder the user asked for. */
        if (strncmp(err.file, out, strlen(out)) != 0 || !strstr(err.msg, "No space left"))
            fail_msg("file %d: the error names '%s': %s", n, err.file, err.msg);
        char *after = snapshot(out);
        if (strcmp(before, after) != 0)
            fail_msg("a failure at file %d changed the previous export", n);
        free(after);
        char *hidden = hidden_beside(tmp);
        if (hidden[0])
            fail_msg("a failure at file %d left temporary folders:\n%s", n, hidden);
        free(hidden);
    }
    /* Without a failure the new export replaces the old one whole: no head1 left over. */
    export_ok(out, &one);
    names = list_files(out);
    assert_null(strstr(names, "head1/"));
    assert_non_null(strstr(names, "head0/weights.csv\n"));
    free(names);
    char *hidden = hidden_beside(tmp);
    assert_string_equal(hidden, "");
    free(hidden);
    free(before);
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&one);
    computed_free(&two);
}

/* A folder that is not an earlier export is the user's: never replaced, nothing written. */
static void test_export_refuses_foreign_folder(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    char *tmp = tu_make_tmpdir("export");
    char notes[4200];
    snprintf(notes, sizeof(notes), "%s/notes.txt", tmp);
    tu_write_text(notes, "mine\n");
    struct diag err;
    assert_int_equal(export_dir(tmp, &c.scene, &c.net, EXPORT_CSV, &err), -1);
    assert_string_equal(err.file, tmp);
    assert_non_null(strstr(err.msg, "not an attnscope export: it holds notes.txt but no "
                                    ".attnscope-export marker"));
    char *files = list_files(tmp);
    assert_string_equal(files, "notes.txt\n");
    free(files);
    /* An empty folder is fine, and so is "." refused with a hint rather than swapped. */
    char empty[4200];
    snprintf(empty, sizeof(empty), "%s/empty", tmp);
    assert_int_equal(mkdir(empty, 0755), 0);
    export_ok(empty, &c);
    snprintf(empty, sizeof(empty), "%s/empty/.", tmp);
    assert_int_equal(export_dir(empty, &c.scene, &c.net, EXPORT_CSV, &err), -1);
    assert_non_null(strstr(err.msg, "a folder of its own"));
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* A temporary folder left by a kill -9 is removed by the next export; one of a process still
 * running (another export) is left alone. */
static void test_export_removes_stale_temp(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    char *tmp = tu_make_tmpdir("export");
    char stale[4200], live[4200], out[4200];
    /* Above any pid_max: no such process. */
    snprintf(stale, sizeof(stale), "%s/.out.attnscope-2147483000-AbCdEf", tmp);
    snprintf(live, sizeof(live), "%s/.out.attnscope-%ld-XyZxYz", tmp, (long)getppid());
    snprintf(out, sizeof(out), "%s/out", tmp);
    struct diag err;
    assert_int_equal(attn_fsutil_mkdir_p(stale, &err), 0);
    assert_int_equal(attn_fsutil_mkdir_p(live, &err), 0);
    char junk[4300];
    snprintf(junk, sizeof(junk), "%s/head0", stale);
    assert_int_equal(attn_fsutil_mkdir_p(junk, &err), 0);
    export_ok(out, &c);
    char *hidden = hidden_beside(tmp);
    char want[256];
    snprintf(want, sizeof(want), ".out.attnscope-%ld-XyZxYz\n", (long)getppid());
    assert_string_equal(hidden, want);
    free(hidden);
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* A chain of `levels` folders named d below dir, made with mkdirat one level at a time (no path
 * of its length is ever built). */
static void nest(const char *dir, int levels)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int i = 0; i < levels; i++) {
        assert_int_equal(mkdirat(fd, "d", 0755), 0);
        int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
        assert_true(sub >= 0);
        close(fd);
        fd = sub;
    }
    close(fd);
}

/* A folder nested 3,000 deep (the walk that recursed with 12 KB of buffers a level crashed at
 * about 700): refused from its top when there is no marker, and named as the one foreign path
 * inside an export, without reading below it. A marker that lists a tree deeper than any export
 * is not believed, and fsutil's removal stops at 64 levels rather than recurse without end. */
static void test_export_deep_folders(void **state)
{
    (void)state;
    char *tmp = tu_make_tmpdir("export");
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/nested", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    nest(dir, 3000);
    struct diag err;
    bool replaces = true;
    assert_int_equal(export_check_target(dir, &replaces, &err), -1);
    assert_false(replaces);
    assert_non_null(strstr(err.msg, "it holds d/ and more but no .attnscope-export marker"));

    struct computed c;
    split_scene(&c);
    snprintf(dir, sizeof(dir), "%s/out", tmp);
    export_ok(dir, &c);
    char sub[4300];
    snprintf(sub, sizeof(sub), "%s/head0", dir);
    nest(sub, 3000);
    assert_int_equal(export_check_target(dir, NULL, &err), -1);
    assert_non_null(
        strstr(err.msg, "holds head0/d/, which the attnscope export there did not write"));

    /* A forged marker listing d, d/d, ... 40 deep, and that tree. */
    snprintf(dir, sizeof(dir), "%s/forged", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    nest(dir, 40);
    char marker[4300], line[200] = "";
    snprintf(marker, sizeof(marker), "%s/.attnscope-export", dir);
    FILE *f = fopen(marker, "w");
    assert_non_null(f);
    fputs("attnscope-export 1\nversion 0\nf .attnscope-export\n", f);
    for (int i = 0; i < 40; i++) {
        strcat(line, i ? "/d" : "d");
        fprintf(f, "d %s\n", line);
    }
    fclose(f);
    assert_int_equal(export_check_target(dir, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "holds d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/, which"));
    snprintf(dir, sizeof(dir), "%s/deep", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    nest(dir, 100); /* removed to 64 deep, the rest left alone */
    snprintf(sub, sizeof(sub), "%s/d", dir);
    assert_int_equal(attn_fsutil_remove_tree(dir), -1);
    assert_int_equal(errno, ENOTEMPTY);
    assert_true(attn_fsutil_exists(sub));
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* A large layer: its matrices go to .npy files in scene.data/, and the export loads back and
 * reproduces itself byte for byte (an inline scene.yaml of it would be over the file limit). */
static void test_export_large_matrices_side_files(void **state)
{
    (void)state;
    struct computed c;
    attn_scene_init(&c.scene);
    char *tokens[8] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    struct diag err;
    assert_int_equal(attn_scene_set_tokens(&c.scene, tokens, 8, &err), 0);
    c.scene.embed.dim = 512;
    c.scene.attn.heads = 4;
    compute(&c);
    check_reexport(&c);
    char *tmp = tu_make_tmpdir("export");
    export_ok(tmp, &c);
    char *names = list_files(tmp);
    assert_non_null(strstr(names, "scene.data/weights.query-"));
    assert_non_null(strstr(names, "scene.data/weights.out-"));
    assert_null(strstr(names, "scene.data/embeddings-")); /* 8 x 512 stays inline */
    free(names);
    char yaml[4200];
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", tmp);
    size_t len;
    char *text = tu_must_read_file(yaml, &len);
    assert_true(len < 200000);
    assert_non_null(strstr(text, "  query: {file: scene.data/weights.query-"));
    free(text);
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* ---- the .npy export -------------------------------------------------------------------- */

/* A .npy as export writes it: version 1.0, the header NumPy itself writes for a 2-D '<f4'
 * array (padded to 64 bytes), then rows x cols little-endian floats. */
static float *read_export_npy(const char *path, int *rows, int *cols)
{
    size_t len;
    char *b = tu_must_read_file(path, &len);
    if (len < 10 || memcmp(b, "\x93NUMPY\x01\x00", 8) != 0)
        fail_msg("%s: not a version 1.0 .npy", path);
    size_t hlen = (size_t)(unsigned char)b[8] | (size_t)(unsigned char)b[9] << 8;
    assert_true(10 + hlen <= len);
    assert_int_equal((10 + hlen) % 64, 0);
    assert_int_equal(b[10 + hlen - 1], '\n');
    char header[256];
    snprintf(header, sizeof(header), "%.*s", (int)hlen, b + 10);
    char want[256];
    if (sscanf(header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows,
               cols) != 2)
        fail_msg("%s: header %s", path, header);
    snprintf(want, sizeof(want), "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }",
             *rows, *cols);
    assert_int_equal(strncmp(header, want, strlen(want)), 0);
    assert_true(strspn(header + strlen(want), " \n") == hlen - strlen(want));
    size_t n = (size_t)*rows * (size_t)*cols;
    assert_int_equal(len, 10 + hlen + n * 4);
    float *out = malloc(n * sizeof(float) + 1);
    assert_non_null(out);
    const unsigned char *p = (const unsigned char *)b + 10 + hlen;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                        (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
        memcpy(&out[i], &bits, 4);
    }
    free(b);
    return out;
}

/* An exported CSV's numbers: the header and the first field of each row skipped (the tokens of
 * these scenes need no quotes), each number read with strtof as any C reader would. */
static float *read_export_csv(const char *path, int *rows, int *cols)
{
    char *text = tu_must_read_file(path, NULL);
    float *out = NULL;
    size_t n = 0;
    *rows = 0;
    *cols = -1;
    char *line = strstr(text, "\r\n");
    assert_non_null(line);
    for (line += 2; *line; (*rows)++) {
        char *end = strstr(line, "\r\n");
        assert_non_null(end);
        *end = '\0';
        int c = 0;
        for (char *f = strchr(line, ','); f; f = strchr(f + 1, ','), c++) {
            out = realloc(out, (n + 1) * sizeof(*out));
            assert_non_null(out);
            out[n++] = strtof(f + 1, NULL);
        }
        if (*cols >= 0)
            assert_int_equal(c, *cols);
        *cols = c;
        line = end + 2;
    }
    free(text);
    return out;
}

/* The names of a CSV export's .npy twin: every .csv but tokens.csv becomes .npy. */
static char *npy_names(const char *csv_names)
{
    char *out = calloc(1, strlen(csv_names) + 1);
    assert_non_null(out);
    const char *line = csv_names;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = (size_t)(nl - line);
        strncat(out, line, len);
        if (len > 4 && strncmp(nl - 4, ".csv", 4) == 0 && strncmp(line, "tokens.csv", len) != 0)
            memcpy(out + strlen(out) - 3, "npy", 3);
        strcat(out, "\n");
        line = nl + 1;
    }
    return out;
}

/* Exports c as CSV and as .npy: the same layout, each .npy the CSV's shape and numbers bit for
 * bit (masked -inf included); tokens.csv and scene.yaml are the same files. */
static void check_npy_export(struct computed *c, const char *csv_list)
{
    char *tmp = tu_make_tmpdir("export");
    char a[4096], b[4096];
    snprintf(a, sizeof(a), "%s/csv", tmp);
    snprintf(b, sizeof(b), "%s/npy", tmp);
    export_as(a, c, EXPORT_CSV);
    export_as(b, c, EXPORT_NPY);
    char *la = list_files(a), *lb = list_files(b), *want = npy_names(csv_list);
    assert_string_equal(la, csv_list);
    assert_string_equal(lb, want);
    int compared = 0;
    for (char *line = la; *line;) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        char pa[8192], pb[8192];
        snprintf(pa, sizeof(pa), "%s/%s", a, line);
        snprintf(pb, sizeof(pb), "%s/%s", b, line);
        size_t len = strlen(line);
        if (strcmp(line, ".attnscope-export") == 0) { /* each lists its own files */
            char *ta = tu_must_read_file(pa, NULL), *tb = tu_must_read_file(pb, NULL);
            assert_non_null(strstr(ta, "\nf head0/weights.csv\n"));
            assert_non_null(strstr(tb, "\nf head0/weights.npy\n"));
            free(ta);
            free(tb);
        } else if (strcmp(line, "tokens.csv") == 0 || strcmp(line, "scene.yaml") == 0) {
            char *ta = tu_must_read_file(pa, NULL), *tb = tu_must_read_file(pb, NULL);
            assert_string_equal(ta, tb);
            free(ta);
            free(tb);
        } else {
            memcpy(pb + strlen(pb) - 3, "npy", 3);
            assert_int_equal(strcmp(line + len - 4, ".csv"), 0);
            int rc, cc, rn, cn;
            float *vc = read_export_csv(pa, &rc, &cc), *vn = read_export_npy(pb, &rn, &cn);
            if (rc != rn || cc != cn)
                fail_msg("%s: %d x %d as CSV, %d x %d as .npy", line, rc, cc, rn, cn);
            if (memcmp(vc, vn, (size_t)rc * (size_t)cc * sizeof(float)) != 0)
                fail_msg("%s: the .npy's numbers are not the CSV's", line);
            free(vc);
            free(vn);
            compared++;
        }
        line = nl + 1;
    }
    assert_true(compared > 20);
    free(la);
    free(lb);
    free(want);
    tu_remove_tree(tmp);
    free(tmp);
}

static void test_export_npy_split(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    check_npy_export(&c, split_files);
    /* One file's bytes in full: a 1 x 2 bias row is 2-D, as in the CSV. */
    char *tmp = tu_make_tmpdir("export");
    export_as(tmp, &c, EXPORT_NPY);
    char path[4200];
    snprintf(path, sizeof(path), "%s/params/out_bias.npy", tmp);
    size_t len;
    char *bytes = tu_must_read_file(path, &len);
    assert_int_equal(len, 128 + 2 * 4);
    const char header[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }";
    assert_memory_equal(bytes + 10, header, strlen(header));
    float want[2];
    memcpy(want, bytes + 128, sizeof(want));
    assert_memory_equal(want, c.net.model[0].bo, sizeof(want));
    free(bytes);
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

static void test_export_npy_wrapper(void **state)
{
    (void)state;
    struct computed c;
    wrapper_scene(&c);
    check_npy_export(&c, wrapper_files);
    computed_free(&c);
}

/* A folder of either format is an export: each replaces the other whole. A .npy the user put
 * beside an export's files is not the export's (its marker lists what it wrote): refused. */
static void test_export_npy_replaces_csv(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    char *tmp = tu_make_tmpdir("export");
    export_as(tmp, &c, EXPORT_CSV);
    struct diag err;
    bool replaces = false;
    assert_int_equal(export_check_target(tmp, &replaces, &err), 0);
    assert_true(replaces);
    export_as(tmp, &c, EXPORT_NPY);
    char *names = list_files(tmp);
    assert_null(strstr(names, "weights.csv"));
    assert_non_null(strstr(names, "head1/weights.npy\n"));
    free(names);
    assert_int_equal(export_check_target(tmp, NULL, &err), 0);
    export_as(tmp, &c, EXPORT_CSV);
    names = list_files(tmp);
    assert_null(strstr(names, ".npy"));
    free(names);
    char f[4300];
    snprintf(f, sizeof(f), "%s/head0/mine.npy", tmp);
    tu_write_text(f, "x");
    assert_int_equal(export_check_target(tmp, &replaces, &err), -1);
    assert_false(replaces);
    assert_non_null(strstr(err.msg, "holds head0/mine.npy, which the attnscope export there did "
                                    "not write"));
    /* Without the marker a folder of .npy files is the user's. */
    char mine[4200];
    snprintf(mine, sizeof(mine), "%s/mine", tmp);
    assert_int_equal(mkdir(mine, 0755), 0);
    assert_int_equal(export_check_target(mine, &replaces, &err), 0); /* empty */
    assert_false(replaces);
    snprintf(f, sizeof(f), "%s/weights.npy", mine);
    tu_write_text(f, "x");
    assert_int_equal(export_check_target(mine, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not an attnscope export: it holds weights.npy but no "
                                    ".attnscope-export marker"));
    tu_remove_tree(tmp);
    free(tmp);
    computed_free(&c);
}

/* The exported scene.yaml with its weights: replaced by references to the export's params/
 * files (ext "csv" or "npy"), and the embeddings by inputs (these scenes have no positions). */
static char *params_scene(const char *dir, const char *ext, bool wrapper)
{
    char yaml[4300];
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", dir);
    char *text = tu_must_read_file(yaml, NULL);
    char *w = strstr(text, "\nweights:\n");
    assert_non_null(w);
    w[1] = '\0';
    assert_non_null(strstr(text, "positional: {kind: none}"));
    char *emb = strstr(text, "embeddings: ");
    char *pos = strstr(text, "positional: ");
    assert_true(emb && pos && emb < pos);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    fprintf(f, "%.*s", (int)(emb - text), text);
    fprintf(f, "embeddings: {file: exp/inputs.%s}\n%s", ext, pos);
    fprintf(f, "weights:\n");
    if (wrapper) {
        fprintf(f, "  heads:\n");
        for (int h = 0; h < 2; h++) {
            const char *names[6][2] = {{"query", "W_query"},  {"key", "W_key"},
                                       {"value", "W_value"},  {"query_bias", "b_query"},
                                       {"key_bias", "b_key"}, {"value_bias", "b_value"}};
            for (int i = 0; i < 6; i++)
                fprintf(f, "    %s%s: {file: exp/params/head%d/%s.%s}\n", i ? "  " : "- ",
                        names[i][0], h, names[i][1], ext);
        }
        fprintf(f, "  dropout_mask: {file: exp/params/dropout_mask.%s}\n", ext);
    } else {
        fprintf(f, "  query: {file: exp/params/W_query.%s}\n", ext);
        fprintf(f, "  key: {file: exp/params/W_key.%s}\n", ext);
        fprintf(f, "  value: {file: exp/params/W_value.%s}\n", ext);
    }
    fprintf(f, "  out: {file: exp/params/out.%s}\n", ext);
    fprintf(f, "  out_bias: {file: exp/params/out_bias.%s}\n", ext);
    assert_int_equal(fclose(f), 0);
    free(text);
    return out;
}

static void assert_view_equal(struct attn_mat_view a, struct attn_mat_view b, const char *what)
{
    assert_int_equal(a.rows, b.rows);
    assert_int_equal(a.cols, b.cols);
    for (int i = 0; i < a.rows; i++)
        if (memcmp(a.data + (size_t)i * (size_t)a.stride, b.data + (size_t)i * (size_t)b.stride,
                   (size_t)a.cols * sizeof(float)) != 0)
            fail_msg("%s: row %d differs", what, i);
}

/* Every parameter (and the embeddings) from an export's own files, in either format: the
 * scene computes the original's weights and output bit for bit. */
static void check_params_reload(struct computed *c, bool wrapper)
{
    static const char *const exts[2] = {"csv", "npy"};
    for (int k = 0; k < 2; k++) {
        char *tmp = tu_make_tmpdir("export");
        char dir[4096], yaml[4200];
        snprintf(dir, sizeof(dir), "%s/exp", tmp);
        export_as(dir, c, k ? EXPORT_NPY : EXPORT_CSV);
        char *text = params_scene(dir, exts[k], wrapper);
        snprintf(yaml, sizeof(yaml), "%s/use.yaml", tmp);
        tu_write_text(yaml, text);
        struct computed again;
        struct diag_list errs;
        attn_diag_list_init(&errs);
        if (attn_scenefile_load(&again.scene, yaml, &errs, NULL, NULL) != 0) {
            for (int i = 0; i < errs.n; i++)
                attn_diag_print(stderr, &errs.items[i], NULL, 0);
            fail_msg("a scene of %s files does not load:\n%s", exts[k], text);
        }
        attn_diag_list_free(&errs);
        compute(&again);
        const struct attn_model *m0 = &c->net.model[0], *m1 = &again.net.model[0];
        const struct attn_run *r0 = &c->net.run[0], *r1 = &again.net.run[0];
        assert_view_equal(attn_view(r0, m0, STAGE_OUTPUT, 0), attn_view(r1, m1, STAGE_OUTPUT, 0),
                          "output");
        for (int h = 0; h < m0->heads; h++)
            assert_view_equal(attn_view(r0, m0, STAGE_DROPOUT, h),
                              attn_view(r1, m1, STAGE_DROPOUT, h), "dropout");
        computed_free(&again);
        free(text);
        tu_remove_tree(tmp);
        free(tmp);
    }
}

static void test_export_params_load_back(void **state)
{
    (void)state;
    struct computed c;
    split_scene(&c);
    check_params_reload(&c, false);
    computed_free(&c);
    wrapper_scene(&c);
    check_params_reload(&c, true);
    computed_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_csv_tokens_faithful_and_quoted),
        cmocka_unit_test(test_csv_default_labels_and_stride),
        cmocka_unit_test(test_csv_special_and_short_floats),
        cmocka_unit_test(test_csv_shortest_round_trip),
        cmocka_unit_test(test_export_split_files),
        cmocka_unit_test(test_export_wrapper_files),
        cmocka_unit_test(test_export_reexport_split),
        cmocka_unit_test(test_export_reexport_wrapper),
        cmocka_unit_test(test_export_dir_blocked_by_file),
        cmocka_unit_test(test_export_all_or_nothing),
        cmocka_unit_test(test_export_refuses_foreign_folder),
        cmocka_unit_test(test_export_removes_stale_temp),
        cmocka_unit_test(test_export_deep_folders),
        cmocka_unit_test(test_export_large_matrices_side_files),
        cmocka_unit_test(test_export_npy_split),
        cmocka_unit_test(test_export_npy_wrapper),
        cmocka_unit_test(test_export_npy_replaces_csv),
        cmocka_unit_test(test_export_params_load_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
