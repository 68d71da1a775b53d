/* test_export: the CSV writer and the export folder (README.md ("Export format") is a contract).
 *
 * CSV: RFC 4180 quoting, CRLF, shortest round-trip floats, -inf. Folder: exactly the listed
 * files for a split and a wrapper scene; an export of the exported scene.yaml is byte for byte
 * the same; a failed export says which file and leaves no temporary file behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
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
    diag_clear(&err);
    memset(&c->net, 0, sizeof(c->net));
    struct diag_list errs;
    diag_list_init(&errs);
    int problems = attn_scene_check(&c->scene, &errs);
    for (int i = 0; i < errs.n; i++)
        print_error("scene_check: %s: %s\n", errs.items[i].path, errs.items[i].msg);
    diag_list_free(&errs);
    assert_int_equal(problems, 0);
    if (attn_net_compute(&c->net, &c->scene, &err) != 0)
        fail_msg("attn_net_compute: %s", err.msg);
}

static void computed_free(struct computed *c)
{
    attn_net_free(&c->net);
    attn_scene_free(&c->scene);
}

static void export_ok(const char *dir, struct computed *c)
{
    struct diag err;
    if (export_dir(dir, &c->scene, &c->net, &err) != 0)
        fail_msg("export_dir: %s: %s", err.file, err.msg);
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

static const char split_files[] = "context.csv\n"
                                  "head0/context.csv\n"
                                  "head0/dropout.csv\n"
                                  "head0/keys.csv\n"
                                  "head0/masked.csv\n"
                                  "head0/queries.csv\n"
                                  "head0/scaled.csv\n"
                                  "head0/scores.csv\n"
                                  "head0/values.csv\n"
                                  "head0/weights.csv\n"
                                  "head1/context.csv\n"
                                  "head1/dropout.csv\n"
                                  "head1/keys.csv\n"
                                  "head1/masked.csv\n"
                                  "head1/queries.csv\n"
                                  "head1/scaled.csv\n"
                                  "head1/scores.csv\n"
                                  "head1/values.csv\n"
                                  "head1/weights.csv\n"
                                  "inputs.csv\n"
                                  "output.csv\n"
                                  "params/W_key.csv\n"
                                  "params/W_query.csv\n"
                                  "params/W_value.csv\n"
                                  "params/out.csv\n"
                                  "params/out_bias.csv\n"
                                  "scene.yaml\n"
                                  "tokens.csv\n";

static const char wrapper_files[] = "context.csv\n"
                                    "head0/context.csv\n"
                                    "head0/dropout.csv\n"
                                    "head0/keys.csv\n"
                                    "head0/masked.csv\n"
                                    "head0/queries.csv\n"
                                    "head0/scaled.csv\n"
                                    "head0/scores.csv\n"
                                    "head0/values.csv\n"
                                    "head0/weights.csv\n"
                                    "head1/context.csv\n"
                                    "head1/dropout.csv\n"
                                    "head1/keys.csv\n"
                                    "head1/masked.csv\n"
                                    "head1/queries.csv\n"
                                    "head1/scaled.csv\n"
                                    "head1/scores.csv\n"
                                    "head1/values.csv\n"
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
    diag_list_init(&errs);
    char *source = NULL;
    size_t source_len = 0;
    if (scenefile_load(&again.scene, yaml, &errs, &source, &source_len) != 0) {
        for (int i = 0; i < errs.n; i++)
            diag_print(stderr, &errs.items[i], source, source_len);
        fail_msg("the exported scene.yaml does not load");
    }
    diag_list_free(&errs);
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
    assert_int_equal(export_dir(dir, &c.scene, &c.net, &err), -1);
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
        fsutil_fail_nth_write(n);
        struct diag err;
        int rc = export_dir(out, &one.scene, &one.net, &err);
        fsutil_fail_nth_write(0);
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
    assert_int_equal(export_dir(tmp, &c.scene, &c.net, &err), -1);
    assert_string_equal(err.file, tmp);
    assert_non_null(strstr(err.msg, "not an attnscope export (notes.txt)"));
    char *files = list_files(tmp);
    assert_string_equal(files, "notes.txt\n");
    free(files);
    /* An empty folder is fine, and so is "." refused with a hint rather than swapped. */
    char empty[4200];
    snprintf(empty, sizeof(empty), "%s/empty", tmp);
    assert_int_equal(mkdir(empty, 0755), 0);
    export_ok(empty, &c);
    snprintf(empty, sizeof(empty), "%s/empty/.", tmp);
    assert_int_equal(export_dir(empty, &c.scene, &c.net, &err), -1);
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
    assert_int_equal(fsutil_mkdir_p(stale, &err), 0);
    assert_int_equal(fsutil_mkdir_p(live, &err), 0);
    char junk[4300];
    snprintf(junk, sizeof(junk), "%s/head0", stale);
    assert_int_equal(fsutil_mkdir_p(junk, &err), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quoting),
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
        cmocka_unit_test(test_export_large_matrices_side_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
