/* torchprint: float32 matrices printed exactly the way PyTorch 1.13 prints them.
 *
 * A port of torch/_tensor_str.py for 2-D float tensors with the default print options
 * (precision 4, threshold 1000, edgeitems 3, linewidth 80, sci_mode None), so the text the
 * CLI prints can be compared digit for digit with the book. Checked against real torch by
 * tests/golden/gen_torchprint.py.
 *
 * Python formats the double value of each float32 element; so does this file. Python and glibc
 * both round correctly (ties to even on the exact binary value), so "{:.4f}" and "%.4f" agree.
 */
#include "export/export.h"
#include "common/cnum.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define TP_PRECISION 4
#define TP_THRESHOLD 1000
#define TP_EDGEITEMS 3
#define TP_LINEWIDTH 80
#define TP_PREFIX    "tensor("
#define TP_INDENT    ((int)sizeof(TP_PREFIX) - 1)

/* _Formatter: one mode and one width for the whole tensor. */
struct tp_formatter {
    bool int_mode;
    bool sci_mode;
    int max_width;
};

/* The indices get_summarized_data keeps along one dimension of size n. */
static bool tp_keep(int i, int n, bool summarize)
{
    if (!summarize || n <= 2 * TP_EDGEITEMS)
        return true;
    return i < TP_EDGEITEMS || i >= n - TP_EDGEITEMS;
}

static float tp_at(struct attn_mat_view v, int i, int j)
{
    return v.data[(size_t)i * (size_t)v.stride + (size_t)j];
}

/* Whether cell (i, j) is one the mode and the width are made of: kept in the summary, finite and
 * nonzero; *x is its value. */
static bool tp_counted(float *x, struct attn_mat_view v, int i, int j, bool summarize)
{
    *x = tp_at(v, i, j);
    return tp_keep(i, v.rows, summarize) && tp_keep(j, v.cols, summarize) && isfinite(*x) &&
           *x != 0.0f;
}

static void tp_formatter_init(struct tp_formatter *f, struct attn_mat_view v, bool summarize)
{
    f->int_mode = true;
    f->sci_mode = false;
    f->max_width = 1;

    /* Pass 1: the nonzero finite values decide the mode. */
    bool any = false;
    double lo = 0, hi = 0;
    float x;
    for (int i = 0; i < v.rows; i++) {
        for (int j = 0; j < v.cols; j++) {
            if (!tp_counted(&x, v, i, j, summarize))
                continue;
            double a = fabs((double)x);
            if (!any || a < lo)
                lo = a;
            if (!any || a > hi)
                hi = a;
            any = true;
            if (x != ceilf(x))
                f->int_mode = false;
        }
    }
    if (!any)
        return; /* no valid number: int mode, width 1 */

    if (f->int_mode)
        f->sci_mode = hi / lo > 1000.0 || hi > 1.0e8;
    else
        f->sci_mode = hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4;

    /* Pass 2: the width of the widest nonzero finite value in that mode. */
    for (int i = 0; i < v.rows; i++) {
        for (int j = 0; j < v.cols; j++) {
            if (!tp_counted(&x, v, i, j, summarize))
                continue;
            char buf[64];
            int len;
            if (f->sci_mode)
                len = attn_cnum_format(buf, sizeof(buf), "%.*e", TP_PRECISION, (double)x);
            else if (f->int_mode)
                len = attn_cnum_format(buf, sizeof(buf), "%.0f", (double)x) + 1; /* the '.' */
            else
                len = attn_cnum_format(buf, sizeof(buf), "%.*f", TP_PRECISION, (double)x);
            if (len > f->max_width)
                f->max_width = len;
        }
    }
}

/* _Formatter.format: the value right-aligned to max_width (never cut when wider). */
static void tp_format(char *out, size_t size, const struct tp_formatter *f, float x)
{
    char buf[64];
    double d = x;
    if (isnan(d))
        snprintf(buf, sizeof(buf), "nan"); /* Python never prints "-nan" */
    else if (f->sci_mode)
        attn_cnum_format(buf, sizeof(buf), "%.*e", TP_PRECISION, d);
    else if (f->int_mode)
        attn_cnum_format(buf, sizeof(buf), isinf(d) ? "%.0f" : "%.0f.", d);
    else
        attn_cnum_format(buf, sizeof(buf), "%.*f", TP_PRECISION, d);
    int pad = f->max_width - (int)strlen(buf);
    snprintf(out, size, "%*s%s", pad > 0 ? pad : 0, "", buf);
}

/* _vector_str for row i, at the indent of a row inside a 2-D tensor. */
static void tp_vector(FILE *out, struct attn_mat_view v, int i, int indent, bool summarize,
                      const struct tp_formatter *f)
{
    int per_line = (TP_LINEWIDTH - indent) / (f->max_width + 2);
    if (per_line < 1)
        per_line = 1;
    bool cut = summarize && v.cols > 2 * TP_EDGEITEMS;

    /* With summarisation the row is E values, " ...", E values: 2E + 1 elements. */
    int n = cut ? 2 * TP_EDGEITEMS + 1 : v.cols;
    fputc('[', out);
    for (int k = 0; k < n; k++) {
        if (k > 0) {
            if (k % per_line == 0)
                fprintf(out, ",\n%*s", indent + 1, "");
            else
                fputs(", ", out);
        }
        if (cut && k == TP_EDGEITEMS) {
            fputs(" ...", out);
            continue;
        }
        int j = (!cut || k < TP_EDGEITEMS) ? k : v.cols - (n - k);
        char buf[96];
        tp_format(buf, sizeof(buf), f, tp_at(v, i, j));
        fputs(buf, out);
    }
    fputc(']', out);
}

void torch_print_matrix(FILE *f, struct attn_mat_view v)
{
    if (v.rows <= 0 || v.cols <= 0) {
        fprintf(f, "%s[], size=(%d, %d))\n", TP_PREFIX, v.rows < 0 ? 0 : v.rows,
                v.cols < 0 ? 0 : v.cols);
        return;
    }
    bool summarize = (long long)v.rows * v.cols > TP_THRESHOLD;
    struct tp_formatter fmt;
    tp_formatter_init(&fmt, v, summarize);

    fputs(TP_PREFIX "[", f);
    bool cut = summarize && v.rows > 2 * TP_EDGEITEMS;
    for (int i = 0; i < v.rows; i++) {
        if (i > 0)
            fprintf(f, ",\n%*s", TP_INDENT + 1, "");
        if (cut && i == TP_EDGEITEMS) {
            fprintf(f, "...,\n%*s", TP_INDENT + 1, "");
            i = v.rows - TP_EDGEITEMS;
        }
        tp_vector(f, v, i, TP_INDENT + 1, summarize, &fmt);
    }
    fputs("])\n", f);
}
