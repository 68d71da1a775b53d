/* test_torchprint: torch_print_matrix against the text real PyTorch 1.13 printed.
 *
 * tests/golden/torchprint.golden is written by gen_torchprint.py (see its header for the
 * format); every case must match byte for byte. ATTNSCOPE_GOLDEN_DIR points at that folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

static char *print_to_string(struct attn_mat_view v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    torch_print_matrix(f, v);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static char *read_line(FILE *f, char **line, size_t *cap)
{
    ssize_t n = getline(line, cap, f);
    if (n < 0)
        return NULL;
    if (n > 0 && (*line)[n - 1] == '\n')
        (*line)[n - 1] = '\0';
    return *line;
}

/* Reads the next "case" record; returns 0 at the end of the file. Aborts the test when the
 * file is malformed, since a broken golden file must not pass silently. */
static int read_case(FILE *f, char *name, size_t name_size, float **vals, int *rows, int *cols,
                     char **expect)
{
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        if (!read_line(f, &line, &cap)) {
            free(line);
            return 0;
        }
        if (line[0] != '#' && line[0] != '\0')
            break;
    }
    char fmt[32];
    snprintf(fmt, sizeof(fmt), "case %%%zus %%d %%d", name_size - 1);
    assert_int_equal(sscanf(line, fmt, name, rows, cols), 3);
    *vals = calloc((size_t)*rows * (size_t)*cols + 1, sizeof(float));
    assert_non_null(*vals);
    for (int i = 0; i < *rows; i++) {
        assert_non_null(read_line(f, &line, &cap));
        char *p = line;
        for (int j = 0; j < *cols; j++) {
            char *end;
            (*vals)[(size_t)i * (size_t)*cols + (size_t)j] = strtof(p, &end);
            assert_true(end != p);
            p = end;
        }
    }
    int n_lines = 0;
    assert_non_null(read_line(f, &line, &cap));
    assert_int_equal(sscanf(line, "expect %d", &n_lines), 1);
    size_t len = 0;
    *expect = calloc(1, 1);
    for (int i = 0; i < n_lines; i++) {
        assert_non_null(read_line(f, &line, &cap));
        size_t add = strlen(line) + 1;
        *expect = realloc(*expect, len + add + 1);
        assert_non_null(*expect);
        memcpy(*expect + len, line, add - 1);
        len += add;
        (*expect)[len - 1] = '\n'; /* print() ends the text with a newline */
        (*expect)[len] = '\0';
    }
    assert_non_null(read_line(f, &line, &cap));
    assert_string_equal(line, "end");
    free(line);
    return 1;
}

static void test_golden(void **state)
{
    (void)state;
    const char *dir = getenv("ATTNSCOPE_GOLDEN_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/torchprint.golden", dir ? dir : "tests/golden");
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s (set ATTNSCOPE_GOLDEN_DIR)", path);

    int n_cases = 0, n_failed = 0;
    char name[128];
    float *vals;
    int rows, cols;
    char *expect;
    while (read_case(f, name, sizeof(name), &vals, &rows, &cols, &expect)) {
        struct attn_mat_view v = {vals, rows, cols, cols};
        char *got = print_to_string(v);
        if (strcmp(got, expect) != 0) {
            n_failed++;
            print_error("case %s (%dx%d)\n--- torch\n%s--- attnscope\n%s", name, rows, cols, expect,
                        got);
        }
        n_cases++;
        free(got);
        free(expect);
        free(vals);
    }
    fclose(f);
    assert_true(n_cases >= 30);
    assert_int_equal(n_failed, 0);
}

/* A head is a column slice of a wider buffer: the stride must be honoured. */
static void test_strided_view(void **state)
{
    (void)state;
    const float data[] = {0.25f, 99.0f, -0.5f, 99.0f};
    struct attn_mat_view v = {data, 2, 1, 2};
    char *got = print_to_string(v);
    assert_string_equal(got, "tensor([[ 0.2500],\n        [-0.5000]])\n");
    free(got);
}

static void test_empty(void **state)
{
    (void)state;
    struct attn_mat_view v = {NULL, 0, 3, 3};
    char *got = print_to_string(v);
    assert_string_equal(got, "tensor([], size=(0, 3))\n");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_strided_view),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
