/* bench_bpe: how long GPT-2's tokenizer takes to load and to encode 10 KB of text.
 *
 * Loads vocab.json and merges.txt a few times (the best and the median), then encodes two
 * 10 KB texts for at least 0.3 s each: the start of a real text (README.md: English prose with
 * Markdown, many repeated words) and pseudo-random words (almost no piece twice, so the
 * per-call cache of pieces cannot help).
 * Usage: bench_bpe VOCAB.json MERGES.txt TEXT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "pretrained/bpe.h"

#define TEXT_BYTES (10 * 1024)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Encodes text again and again for at least 0.3 s; prints the mean time and the tokens. */
static int bench_encode(const struct bpe *b, const char *name, const char *text, size_t len)
{
    int runs = 0, n = 0;
    double start = now(), t;
    do {
        int *ids;
        struct diag err;
        if (attn_bpe_encode(&ids, &n, b, text, len, &err) != 0) {
            fprintf(stderr, "bench_bpe: %s: %s\n", name, err.msg);
            return -1;
        }
        free(ids);
        runs++;
        t = now() - start;
    } while (t < 0.3);
    printf("encode %-24s %6zu bytes -> %5d tokens  %8.1f us  (%.1f MB/s, %d runs)\n", name, len, n,
           t / runs * 1e6, (double)len * runs / t / 1e6, runs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_bpe VOCAB.json MERGES.txt TEXT\n");
        return 2;
    }
    struct bpe *b = NULL;
    struct diag err;
    double loads[5];
    for (int i = 0; i < 5; i++) {
        attn_bpe_free(b);
        double t0 = now();
        if (attn_bpe_load(&b, argv[1], argv[2], &err) != 0) {
            fprintf(stderr, "bench_bpe: %s: %s\n", err.file, err.msg);
            return 1;
        }
        loads[i] = now() - t0;
    }
    qsort(loads, 5, sizeof(loads[0]), cmp_double);
    printf("load   vocab.json + merges.txt (%d tokens)  best %.1f ms, median %.1f ms\n",
           attn_bpe_vocab_size(b), loads[0] * 1e3, loads[2] * 1e3);

    char *real;
    size_t real_len;
    if (attn_fsutil_read_file(&real, &real_len, argv[3], 64u << 20, &err) != 0) {
        fprintf(stderr, "bench_bpe: %s: %s\n", err.file, err.msg);
        attn_bpe_free(b);
        return 1;
    }
    size_t len = real_len < TEXT_BYTES ? real_len : TEXT_BYTES;
    while (len > 0 && len < real_len && ((unsigned char)real[len] & 0xC0) == 0x80)
        len--; /* never cut a character */

    /* Words of 2..9 letters from a fixed generator, with a little punctuation. */
    char words[TEXT_BYTES + 1];
    size_t o = 0;
    unsigned state = 12345;
    while (o + 12 < TEXT_BYTES) {
        int wl = 2 + (int)((state = state * 1103515245u + 12345u) >> 16) % 8;
        words[o++] = ' ';
        for (int i = 0; i < wl; i++)
            words[o++] = (char)('a' + ((state = state * 1103515245u + 12345u) >> 16) % 26);
        if (((state = state * 1103515245u + 12345u) >> 16) % 10 == 0)
            words[o++] = ',';
    }
    words[o] = '\0';

    const char *name = strrchr(argv[3], '/') ? strrchr(argv[3], '/') + 1 : argv[3];
    int rc = bench_encode(b, name, real, len) | bench_encode(b, "random words", words, o);
    free(real);
    attn_bpe_free(b);
    return rc ? 1 : 0;
}
