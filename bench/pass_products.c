/* pass_products: how near the matrix-product bound of `attnscope bench --ui` a pass's products
 * can come on this machine, before anything else the pass does. For GPT-2 small's block at N
 * rows (c_attn 768 x 2304, c_proj 768 x 768, c_fc 768 x 3072, mlp c_proj 3072 x 768) it times
 * each product three ways, the fastest of R rounds each:
 *   whole   one product of all N rows (attn_mm_ab, as the commands' passes and bench --ui's
 *           sgemm measure call it);
 *   panels  the engine's attn_mm_ab_rows: 128-row panels, as every causal pass runs them so a
 *           sentence edit's rows have the bits of a fresh pass (kernels.h);
 *   bound   the FLOPs at the speed of a 768 x 768 x 768 sgemm measured in the same run, as
 *           bench --ui defines it.
 *
 *   pass_products [N ...] [--rounds R]
 *
 * The ratio "panels / bound" of the 12 layers is the least that an explorer's pass can be
 * against its bound with OpenBLAS's sgemm, which packs the weights again in every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/kernels.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static float *filled(size_t count, unsigned seed)
{
    float *p = malloc(count * sizeof(float));
    if (!p) {
        fprintf(stderr, "pass_products: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

/* The fastest of rounds: c (m, n) = a (m, k) @ b (k, n), whole or in the engine's panels. */
static double fastest(int m, int n, int k, bool panels, int rounds)
{
    float *a = filled((size_t)m * k, 1), *b = filled((size_t)k * n, 2),
          *c = filled((size_t)m * n, 3);
    double best = 1e30;
    for (int r = -1; r < rounds; r++) { /* round -1 warms the threads and the caches */
        double t = now_s();
        if (panels)
            attn_mm_ab_rows(c, n, a, k, b, n, NULL, m, n, k);
        else
            attn_mm_ab(c, n, a, k, b, n, NULL, m, n, k);
        t = now_s() - t;
        best = r >= 0 && t < best ? t : best;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

int main(int argc, char **argv)
{
    int rounds = 15, ns[16], count = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (count < 16 && atoi(argv[i]) > 0)
            ns[count++] = atoi(argv[i]);
        else {
            fprintf(stderr, "usage: pass_products [N ...] [--rounds R]\n");
            return 2;
        }
    }
    if (count == 0) {
        ns[count++] = 128;
        ns[count++] = 1016;
    }
    static const struct {
        const char *name;
        int n, k;
    } shapes[] = {{"c_attn", 2304, 768},
                  {"attn c_proj", 768, 768},
                  {"c_fc", 3072, 768},
                  {"mlp c_proj", 768, 3072}};
    double cube = 2.0 * 768 * 768 * 768 / fastest(768, 768, 768, false, rounds) / 1e9;
    printf("sgemm 768x768x768: %.1f GFLOP/s (the bound's speed)\n", cube);
    printf("%6s %-12s %10s %10s %10s %8s\n", "rows", "product", "whole ms", "panels ms", "bound ms",
           "x bound");
    for (int i = 0; i < count; i++) {
        double sum[3] = {0};
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            double flop = 2.0 * ns[i] * shapes[s].n * shapes[s].k;
            double t[3] = {fastest(ns[i], shapes[s].n, shapes[s].k, false, rounds),
                           fastest(ns[i], shapes[s].n, shapes[s].k, true, rounds),
                           flop / (cube * 1e9)};
            printf("%6d %-12s %10.3f %10.3f %10.3f %8.2f\n", ns[i], shapes[s].name, t[0] * 1e3,
                   t[1] * 1e3, t[2] * 1e3, t[1] / t[2]);
            for (int j = 0; j < 3; j++)
                sum[j] += t[j];
        }
        printf("%6d %-12s %10.3f %10.3f %10.3f %8.2f  (12 layers: %.1f ms in panels)\n", ns[i],
               "a block", sum[0] * 1e3, sum[1] * 1e3, sum[2] * 1e3, sum[1] / sum[2],
               12 * sum[1] * 1e3);
    }
    return 0;
}
