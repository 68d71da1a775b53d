/* float_exhaustive: every float32 bit pattern through the shortest-text formatter.
 *
 *   float_exhaustive [--threads T] [--from HEX] [--to HEX] [--step K] [--round-trip]
 *
 * For each of the 2^32 patterns (or [from, to) every K-th): attn_cnum_float_text's text must
 * equal the reference's (attn_cnum_format_float_ref, the snprintf/strtod loop the exports were
 * written with before) byte for byte, and read back through strtof, and through strtod then a
 * cast to float (as a reader in double does), to the same bits (any nan as a nan).
 * --round-trip skips the reference (its printf calls are most of the time: about 0.9 us a
 * float, 0.1 us without): every text must still read back both ways and fit CNUM_FLOAT_MAX. Prints
 * the counts, the patterns the fast path left to the reference, and the time; exits 1 on the first
 * few mismatches (it names them). Minutes to hours: the reference is the slow part
 * (docs/performance.md has the figure). meson test --benchmark does not run it; run it by hand, or
 * with -Dslow_tests=true as the `float-exhaustive` test.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cnum.h"

struct part {
    uint64_t from, to, step;
    bool round_trip_only;
    uint64_t checked, fast, mismatches;
    uint64_t first_bad;
};

static void *run(void *arg)
{
    struct part *pt = arg;
    pt->first_bad = UINT64_MAX;
    for (uint64_t u = pt->from; u < pt->to; u += pt->step) {
        uint32_t bits = (uint32_t)u;
        float x;
        memcpy(&x, &bits, sizeof(x));
        char got[CNUM_FLOAT_MAX + 1], want[32];
        int fast = attn_cnum_float_text_fast(got, x);
        int n = fast >= 0 ? fast : attn_cnum_float_text(got, x);
        got[n] = '\0';
        if (pt->round_trip_only)
            memcpy(want, got, (size_t)n + 1);
        else
            attn_cnum_format_float_ref(want, sizeof(want), x);
        float back = strtof(got, NULL), back_d = (float)strtod(got, NULL);
        uint32_t bb, bd;
        memcpy(&bb, &back, sizeof(bb));
        memcpy(&bd, &back_d, sizeof(bd));
        bool same = isnan(x) ? isnan(back) && isnan(back_d) : bb == bits && bd == bits;
        pt->checked++;
        pt->fast += fast >= 0;
        if (strcmp(got, want) != 0 || !same || n >= CNUM_FLOAT_MAX) {
            if (pt->mismatches++ < 5)
                fprintf(stderr,
                        "0x%08" PRIx32 " (%a): \"%s\", the reference \"%s\", reads back "
                        "as 0x%08" PRIx32 "\n",
                        bits, (double)x, got, want, bb);
            if (pt->first_bad == UINT64_MAX)
                pt->first_bad = u;
        }
    }
    return NULL;
}

static uint64_t arg_u64(const char *s)
{
    return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
    uint64_t from = 0, to = (uint64_t)1 << 32, step = 1;
    int threads = 2;
    bool round_trip_only = false;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--round-trip") == 0) {
            round_trip_only = true;
            i--;
        } else if (i + 1 == argc)
            break;
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--from") == 0)
            from = arg_u64(argv[i + 1]);
        else if (strcmp(argv[i], "--to") == 0)
            to = arg_u64(argv[i + 1]);
        else if (strcmp(argv[i], "--step") == 0)
            step = arg_u64(argv[i + 1]);
        else {
            fprintf(stderr, "usage: float_exhaustive [--threads T] [--from N] [--to N] "
                            "[--step K] [--round-trip]\n");
            return 2;
        }
    }
    if (argc > 1 && (argc - 1 - round_trip_only) % 2 != 0) {
        fprintf(stderr, "float_exhaustive: an option without its value\n");
        return 2;
    }
    if (threads < 1 || threads > 64 || step < 1 || from > to || to > (uint64_t)1 << 32) {
        fprintf(stderr, "float_exhaustive: bad arguments\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Interleaved, so every thread gets as many of the slow patterns as the others. */
    struct part parts[64];
    pthread_t tid[64];
    for (int t = 0; t < threads; t++) {
        parts[t] = (struct part){.from = from + (uint64_t)t * step,
                                 .to = to,
                                 .step = step * (uint64_t)threads,
                                 .round_trip_only = round_trip_only};
        pthread_create(&tid[t], NULL, run, &parts[t]);
    }
    uint64_t checked = 0, fast = 0, bad = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        checked += parts[t].checked;
        fast += parts[t].fast;
        bad += parts[t].mismatches;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("float_exhaustive%s: %" PRIu64 " bit patterns from 0x%08" PRIx64 " to 0x%08" PRIx64
           " (step %" PRIu64 "): %" PRIu64 " mismatches; %" PRIu64
           " left to the reference by the fast path; %.1f s on %d threads\n",
           round_trip_only ? " --round-trip" : "", checked, from, to - 1, step, bad, checked - fast,
           s, threads);
    return bad ? 1 : 0;
}
