/* test_rng: src/engine/rng.c against PyTorch 1.13, bit for bit.
 *
 * tests/golden/rng.golden (written by gen_rng_golden.py with Debian's torch) lists short torch
 * scripts and what each call produced. This test replays every script on one struct attn_rng and
 * compares bit patterns, so a single ulp of drift in any path fails. It also pins the numbers
 * the book prints, which must hold even if the golden file is regenerated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/rng.h"

#define MAX_TOKENS 16

/* One golden output, decoded: a kind and up to n values (u32/u64/f32 bits, or 0/1 for masks).
 * For a sampled output, idx[k] says which element values[k] is. */
struct expected {
    char kind[16];
    size_t total; /* number of elements the call produces */
    size_t n;     /* number of values listed */
    uint64_t *values;
    size_t *idx; /* NULL unless sampled */
};

struct stats {
    int cases;
    int ops;
    int failures;
};

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int split(char *s, char **tok, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t\r\n", &save); t != NULL && n < max;
         t = strtok_r(NULL, " \t\r\n", &save)) {
        tok[n++] = t;
    }
    return n;
}

static uint64_t parse_hex(const char *s)
{
    char *end = NULL;
    uint64_t v = strtoull(s, &end, 16);
    assert_true(end != s && *end == '\0');
    return v;
}

static long parse_long(const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    assert_true(end != s && *end == '\0');
    return v;
}

static double parse_double(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    assert_true(end != s && *end == '\0');
    return v;
}

/* Decode "<kind> <count> <values...>" (or the sampled "f32sparse <total> <k> <i> <v>..."). */
static void parse_expected(char *text, struct expected *e)
{
    char *save = NULL;
    char *kind = strtok_r(text, " \t\r\n", &save);
    assert_non_null(kind);
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    e->idx = NULL;

    bool sparse = strcmp(kind, "f32sparse") == 0;
    e->total = (size_t)parse_long(strtok_r(NULL, " \t\r\n", &save));
    e->n = sparse ? (size_t)parse_long(strtok_r(NULL, " \t\r\n", &save)) : e->total;
    e->values = calloc(e->n > 0 ? e->n : 1, sizeof *e->values);
    assert_non_null(e->values);
    if (sparse) {
        snprintf(e->kind, sizeof e->kind, "f32");
        e->idx = calloc(e->n > 0 ? e->n : 1, sizeof *e->idx);
        assert_non_null(e->idx);
    }

    if (strcmp(e->kind, "mask") == 0) {
        const char *m = strtok_r(NULL, " \t\r\n", &save);
        assert_non_null(m);
        assert_int_equal(strlen(m), e->n);
        for (size_t i = 0; i < e->n; i++) {
            e->values[i] = m[i] == '1';
        }
        return;
    }
    for (size_t k = 0; k < e->n; k++) {
        if (sparse) {
            e->idx[k] = (size_t)parse_long(strtok_r(NULL, " \t\r\n", &save));
        }
        const char *v = strtok_r(NULL, " \t\r\n", &save);
        assert_non_null(v);
        e->values[k] = parse_hex(v);
    }
}

static void print_value(const char *kind, uint64_t v)
{
    if (strcmp(kind, "f32") == 0) {
        fprintf(stderr, "%08llx (%.9g)", (unsigned long long)v, (double)bits_f32((uint32_t)v));
    } else if (strcmp(kind, "mask") == 0) {
        fprintf(stderr, "%s", v ? "keep" : "drop");
    } else {
        fprintf(stderr, "%016llx", (unsigned long long)v);
    }
}

/* Compare what the C code produced (got: e->total values) with the golden values. */
static bool compare(const char *case_name, const char *call, const struct expected *e,
                    const uint64_t *got, size_t got_n)
{
    if (got_n != e->total) {
        fprintf(stderr, "[%s] %s: produced %zu values, torch %zu\n", case_name, call, got_n,
                e->total);
        return false;
    }
    for (size_t k = 0; k < e->n; k++) {
        size_t i = e->idx != NULL ? e->idx[k] : k;
        assert_true(i < got_n);
        if (got[i] != e->values[k]) {
            fprintf(stderr, "[%s] %s: first mismatch at index %zu: torch ", case_name, call, i);
            print_value(e->kind, e->values[k]);
            fprintf(stderr, ", C ");
            print_value(e->kind, got[i]);
            fprintf(stderr, "\n");
            return false;
        }
    }
    return true;
}

static uint64_t *alloc_values(size_t n)
{
    uint64_t *v = calloc(n > 0 ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

static float *alloc_floats(size_t n)
{
    float *v = calloc(n > 0 ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

static void floats_to_values(uint64_t *out, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = f32_bits(f[i]);
    }
}

/* Make the call named by tok[0..ntok) on r. out: the values it produced, in torch's order. */
static uint64_t *run_call(char **tok, int ntok, struct attn_rng *r, size_t *n_out)
{
    const char *op = tok[0];
    uint64_t *out = NULL;

    if (strcmp(op, "u32") == 0 || strcmp(op, "u64") == 0) {
        assert_int_equal(ntok, 2);
        size_t n = (size_t)parse_long(tok[1]);
        out = alloc_values(n);
        for (size_t i = 0; i < n; i++) {
            out[i] = op[1] == '3' ? attn_rng_u32(r) : attn_rng_u64(r);
        }
        *n_out = n;
    } else if (strcmp(op, "rand") == 0 || strcmp(op, "uniform") == 0 || strcmp(op, "normal") == 0 ||
               strcmp(op, "embedding") == 0) {
        size_t n = (size_t)parse_long(tok[1]);
        if (strcmp(op, "embedding") == 0) {
            assert_int_equal(ntok, 3);
            n *= (size_t)parse_long(tok[2]);
        }
        float *f = alloc_floats(n);
        if (strcmp(op, "rand") == 0) {
            assert_int_equal(ntok, 2);
            attn_rng_rand(f, 1, (int)n, r);
        } else if (strcmp(op, "uniform") == 0) {
            assert_int_equal(ntok, 4);
            attn_rng_uniform(f, n, (float)parse_double(tok[2]), (float)parse_double(tok[3]), r);
        } else if (strcmp(op, "normal") == 0) {
            assert_int_equal(ntok, 4);
            attn_rng_normal(f, n, (float)parse_double(tok[2]), (float)parse_double(tok[3]), r);
        } else {
            attn_rng_normal(f, n, 0.0f, 1.0f, r);
        }
        out = alloc_values(n);
        floats_to_values(out, f, n);
        free(f);
        *n_out = n;
    } else if (strcmp(op, "linear") == 0) {
        assert_int_equal(ntok, 4);
        int in = (int)parse_long(tok[1]);
        int nout = (int)parse_long(tok[2]);
        bool has_bias = parse_long(tok[3]) != 0;
        size_t nw = (size_t)in * (size_t)nout;
        float *w = alloc_floats(nw);
        float *b = alloc_floats((size_t)nout);
        attn_rng_linear_init(w, has_bias ? b : NULL, in, nout, r);
        size_t n = nw + (has_bias ? (size_t)nout : 0);
        out = alloc_values(n);
        /* torch lists weight (out, in) row-major; ours is its transpose. */
        for (int o = 0; o < nout; o++) {
            for (int i = 0; i < in; i++) {
                out[(size_t)o * (size_t)in + (size_t)i] =
                    f32_bits(w[(size_t)i * (size_t)nout + (size_t)o]);
            }
        }
        if (has_bias) {
            floats_to_values(out + nw, b, (size_t)nout);
        }
        free(w);
        free(b);
        *n_out = n;
    } else if (strcmp(op, "dropout") == 0) {
        assert_int_equal(ntok, 3);
        size_t n = (size_t)parse_long(tok[1]);
        double p = parse_double(tok[2]);
        unsigned char *keep = calloc(n > 0 ? n : 1, 1);
        assert_non_null(keep);
        attn_rng_bernoulli(keep, n, 1.0 - p, r);
        out = alloc_values(n);
        for (size_t i = 0; i < n; i++) {
            out[i] = keep[i];
        }
        free(keep);
        *n_out = n;
    } else {
        fail_msg("unknown golden call '%s'", op);
    }
    return out;
}

static void run_op_line(char *line, const char *case_name, struct attn_rng *r, struct stats *st)
{
    char *eq = strstr(line, " = ");
    assert_non_null(eq);
    *eq = '\0';

    char call[128];
    snprintf(call, sizeof call, "%s", line);
    char *tok[MAX_TOKENS];
    int ntok = split(line, tok, MAX_TOKENS);
    assert_true(ntok >= 1);

    struct expected e;
    parse_expected(eq + 3, &e);
    size_t got_n = 0;
    uint64_t *got = run_call(tok, ntok, r, &got_n);
    st->ops++;
    if (!compare(case_name, call, &e, got, got_n)) {
        st->failures++;
    }
    free(got);
    free(e.values);
    free(e.idx);
}

static void test_golden(void **state)
{
    (void)state;
    const char *dir = getenv("ATTNSCOPE_GOLDEN_DIR");
    if (dir == NULL) {
        fail_msg("ATTNSCOPE_GOLDEN_DIR is not set (tests/meson.build sets it)");
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/rng.golden", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fail_msg("cannot open %s", path);
    }

    struct stats st = {0};
    struct attn_rng r;
    char case_name[128] = "";
    bool in_case = false;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) != -1) {
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        if (strncmp(line, "case ", 5) == 0) {
            assert_false(in_case);
            char *tok[MAX_TOKENS];
            assert_int_equal(split(line, tok, MAX_TOKENS), 2);
            snprintf(case_name, sizeof case_name, "%s", tok[1]);
            /* Cases start from a seed; poison the state so a missing one shows. */
            memset(&r, 0xa5, sizeof r);
            r.next = RNG_MT_N;
            r.has_next_double_normal = false;
            in_case = true;
            st.cases++;
        } else if (strncmp(line, "end", 3) == 0) {
            assert_true(in_case);
            in_case = false;
        } else if (strncmp(line, "seed ", 5) == 0) {
            assert_true(in_case);
            char *end = NULL;
            unsigned long long s = strtoull(line + 5, &end, 10);
            attn_rng_seed(&r, (uint64_t)s);
        } else {
            assert_true(in_case);
            run_op_line(line, case_name, &r, &st);
        }
    }
    free(line);
    fclose(f);
    assert_false(in_case);

    fprintf(stderr, "rng golden: %d cases, %d calls, %d mismatching\n", st.cases, st.ops,
            st.failures);
    assert_true(st.cases > 0);
    assert_int_equal(st.failures, 0);
}

/* The book: torch.manual_seed(123); nn.Embedding(6, 4) prints row 0 as these. */
static void test_book_embedding(void **state)
{
    (void)state;
    static const char *const row0[4] = {"0.3374", "-0.1778", "-0.3035", "-0.5880"};
    struct attn_rng r;
    attn_rng_seed(&r, 123);
    float w[6 * 4];
    attn_rng_normal(w, 6 * 4, 0.0f, 1.0f, &r);
    for (int j = 0; j < 4; j++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.4f", (double)w[j]);
        assert_string_equal(buf, row0[j]);
    }
}

/* The book: torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6)), rows 0 and 1. */
static void test_book_dropout(void **state)
{
    (void)state;
    static const unsigned char rows01[12] = {1, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1};
    struct attn_rng r;
    attn_rng_seed(&r, 123);
    unsigned char keep[36];
    attn_rng_bernoulli(keep, 36, 1.0 - 0.5, &r);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(keep[i], rows01[i]);
    }
}

/* Seeds agree on their low 32 bits, and seeding clears the cached normal sample. */
static void test_seed_semantics(void **state)
{
    (void)state;
    struct attn_rng a, b;
    attn_rng_seed(&a, 5);
    attn_rng_seed(&b, (UINT64_C(1) << 32) + 5);
    for (int i = 0; i < 1300; i++) {
        assert_int_equal(attn_rng_u32(&a), attn_rng_u32(&b));
    }
    float x, y;
    attn_rng_seed(&a, 9);
    attn_rng_normal(&x, 1, 0.0f, 1.0f, &a);
    assert_true(a.has_next_double_normal);
    attn_rng_seed(&a, 9);
    assert_false(a.has_next_double_normal);
    attn_rng_normal(&y, 1, 0.0f, 1.0f, &a);
    assert_int_equal(f32_bits(x), f32_bits(y));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_book_embedding),
        cmocka_unit_test(test_book_dropout),
        cmocka_unit_test(test_seed_semantics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
