/* norm: the norms and elementwise steps of a layer (LayerNorm and RMSNorm over rows, qk_norm
 * over heads, the activations, the residual sums), split among the pool's threads in fixed
 * slices so that the split changes no bit. */
#include "engine/norm.h"

#include <math.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/pool.h"
#include "engine/vecmath.h"

/* Rows of a norm: each row's arithmetic is that of one thread, in order, so splitting rows
 * among threads changes no bit. */
struct norm_job {
    float *out;
    const float *in;
    int rows;
    const struct attn_model *m;
    const float *w, *b;
};

enum { NORM_ROWS_PER_TASK = 8 };

static void norm_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct norm_job *job = ctx;
    const struct attn_model *m = job->m;
    int d = m->d_in;
    const float *w = job->w, *b = job->b;
    int end = (t + 1) * NORM_ROWS_PER_TASK < job->rows ? (t + 1) * NORM_ROWS_PER_TASK : job->rows;
    for (int i = t * NORM_ROWS_PER_TASK; i < end; i++) {
        const float *x = job->in + (size_t)i * d;
        float *y = job->out + (size_t)i * d;
        double mean = 0, var = 0;
        if (m->norm == NORM_LAYER) {
            for (int j = 0; j < d; j++)
                mean += x[j];
            mean /= d;
        }
        for (int j = 0; j < d; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= d;
        float inv = (float)(1.0 / sqrt(var + (double)m->norm_eps));
        for (int j = 0; j < d; j++) {
            float v = (float)(x[j] - mean) * inv * w[j];
            y[j] = b ? v + b[j] : v;
        }
    }
}

void attn_norm_rows(float *out, const float *in, int rows, const struct attn_model *m,
                    const float *w, const float *b)
{
    struct norm_job job = {out, in, rows, m, w, b};
    int tasks = (rows + NORM_ROWS_PER_TASK - 1) / NORM_ROWS_PER_TASK;
    if ((size_t)rows * (size_t)m->d_in < 16384) /* small: a thread's wake-up would cost more */
        for (int t = 0; t < tasks; t++)
            norm_part(&job, t, 0);
    else
        attn_pool_run(tasks, 0, norm_part, &job);
}

void attn_final_norm_rows(float *out, const float *in, int rows, const struct attn_model *last)
{
    if (last->final_norm)
        attn_norm_rows(out, in, rows, last, last->fw, last->fb);
    else if (out != in)
        memcpy(out, in, (size_t)rows * (size_t)last->d_in * sizeof(float));
}

/* qk_norm: every group of x (n, width), group wide (head_dim: Qwen3's q_norm and k_norm; width:
 * OLMo 2's over the whole projection), RMS-normalised, times w (group). Rows first .. n - 1. */
void attn_norm_heads(float *out, const float *x, int width, int group, const struct attn_model *m,
                     const float *w, int first)
{
    int hd = group;
    for (int t = first; t < m->n; t++)
        for (int h = 0; h < width / hd; h++) {
            const float *in = x + (size_t)t * width + (size_t)h * hd;
            float *o = out + (size_t)t * width + (size_t)h * hd;
            double var = 0;
            for (int j = 0; j < hd; j++)
                var += (double)in[j] * in[j];
            float inv = (float)(1.0 / sqrt(var / hd + (double)m->norm_eps));
            for (int j = 0; j < hd; j++)
                o[j] = in[j] * inv * w[j];
        }
}

/* Elementwise work in slices of ELEMS_PER_TASK: each element's arithmetic is the same on
 * whichever thread, so the split changes no bit. */
enum { ELEMS_PER_TASK = 16384 };

struct elem_job {
    float *out;
    const float *a, *b;
    size_t count;
    int kind; /* an enum attn_activation, or ELEM_ADD */
};

#define ELEM_ADD (-1)

static void elem_part(void *ctx, int t, int slot)
{
    (void)slot;
    const struct elem_job *job = ctx;
    size_t lo = (size_t)t * ELEMS_PER_TASK;
    size_t hi = lo + ELEMS_PER_TASK < job->count ? lo + ELEMS_PER_TASK : job->count;
    float *out = job->out;
    const float *in = job->a, *up = job->b;
    switch (job->kind) {
    case ELEM_ADD:
        attn_add(out + lo, in + lo, up + lo, hi - lo);
        break;
    case ACT_RELU:
        for (size_t i = lo; i < hi; i++)
            out[i] = in[i] > 0.0f ? in[i] : 0.0f;
        break;
    case ACT_GELU: /* double precision, correctly rounded to float: as before, bit for bit */
        for (size_t i = lo; i < hi; i++) {
            double x = in[i];
            out[i] = (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
        }
        break;
    case ACT_GELU_TANH: /* float, vectorised (vecmath.h): within a few ulp of the double value */
        attn_gelu_tanh(out + lo, in + lo, hi - lo);
        break;
    case ACT_SWIGLU: /* SiLU(gate) * up, gate in a, up in b; double, as before */
        for (size_t i = lo; i < hi; i++) {
            double g = in[i];
            out[i] = (float)(g / (1.0 + exp(-g))) * up[i];
        }
        break;
    case ACT_SILU: /* x * sigmoid(x), double as swiglu's gate: Marian's swish */
        for (size_t i = lo; i < hi; i++) {
            double x = in[i];
            out[i] = (float)(x / (1.0 + exp(-x)));
        }
        break;
    case ACT_GEGLU_TANH: /* gelu_tanh(gate) * up: Gemma's */
        attn_gelu_tanh(out + lo, in + lo, hi - lo);
        for (size_t i = lo; i < hi; i++)
            out[i] = out[i] * up[i];
        break;
    default:
        break;
    }
}

static void elem_run(float *out, const float *a, const float *b, size_t count, int kind)
{
    struct elem_job job = {out, a, b, count, kind};
    size_t tasks = (count + ELEMS_PER_TASK - 1) / ELEMS_PER_TASK;
    attn_pool_run((int)tasks, 0, elem_part, &job);
}

void attn_elem_add(float *out, const float *a, const float *b, size_t count)
{
    elem_run(out, a, b, count, ELEM_ADD);
}

void attn_gated(float *out, const float *gate, const float *up, size_t count,
                enum attn_activation act)
{
    elem_run(out, gate, up, count, (int)act);
}

void attn_activate(float *out, const float *in, size_t count, enum attn_activation act)
{
    if (!attn_activation_gated(act))
        elem_run(out, in, NULL, count, (int)act);
}
