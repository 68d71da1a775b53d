/* bench_load: how long and how much memory a scene file of the largest allowed size takes to
 * accept or refuse.
 *
 * The target is under 1 s and 100 MB for any file up to SCENEFILE_MAX_BYTES, however hostile:
 * the limits on nodes, list lengths and depth are checked while the file is parsed, so a file
 * of 33 million one-number rows is refused at the first row too many. Each shape is generated
 * in memory and parsed in a child process, so the peak resident size is that shape's alone.
 * Usage: bench_load [MiB]   (default: the file-size limit)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scenefile/scenefile.h"

struct text {
    char *p;
    size_t len, cap;
};

static void put(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap)
        return;
    memcpy(t->p + t->len, s, n + 1);
    t->len += n;
}

/* Repeats unit until the text is size bytes (or one unit short of it), then adds tail. */
static void fill(struct text *t, size_t size, const char *head, const char *unit, const char *tail)
{
    put(t, head);
    size_t n = strlen(unit), room = size - strlen(tail);
    while (t->len + n <= room) {
        memcpy(t->p + t->len, unit, n);
        t->len += n;
    }
    t->p[t->len] = '\0';
    put(t, tail);
}

/* A valid scene near the size limit: 1024 tokens and rows of 10-character numbers, as many
 * rows of weights as fit (the loader refuses it for its shapes, after reading every value). */
static void big_weights(struct text *t, size_t size)
{
    put(t, "text: a b c d\nweights:\n  query:\n");
    char row[8 * 1024];
    size_t o = 0;
    o += (size_t)snprintf(row + o, sizeof(row) - o, "    - [");
    for (int j = 0; j < 512; j++)
        o += (size_t)snprintf(row + o, sizeof(row) - o, "%s0.12345678", j ? ", " : "");
    snprintf(row + o, sizeof(row) - o, "]\n");
    size_t n = strlen(row);
    for (int r = 0; r < 8192 && t->len + n + 1 < size; r++)
        put(t, row);
}

static void shape(struct text *t, int which, size_t size)
{
    t->len = 0;
    t->p[0] = '\0';
    switch (which) {
    case 0: /* the report's case: one-number rows */
        fill(t, size, "text: a b\nembeddings:\n", "- [1]\n", "");
        break;
    case 1: /* short rows of many numbers, under the list-length limit: the node limit */
        fill(t, size, "text: a b\nweights:\n  query:\n", "  - [1, 2, 3, 4, 5, 6, 7, 8]\n", "");
        break;
    case 2:
        big_weights(t, size);
        break;
    case 3: /* one long comment after another */
        fill(t, size, "text: a b\n", "# a comment line of about sixty characters, repeated.\n", "");
        break;
    case 4: /* one plain scalar as long as the file */
        fill(t, size, "text: a b\ntitle: ", "xxxxxxxxxxxxxxxx", "\n");
        break;
    case 5: /* one double-quoted scalar full of escapes */
        fill(t, size, "text: a b\ntitle: \"", "\\u00e9\\t\\\"", "\"\n");
        break;
    case 6: /* mappings nested 60 deep, repeated */
        fill(t, size, "text: a b\nweights: [",
             "{a: {a: {a: {a: {a: {a: {a: {a: {a: {a: 1}}}}}}}}}}, ", "1]\n");
        break;
    case 7: /* blank lines */
        fill(t, size, "text: a b\n", "\n", "");
        break;
    }
}

static const char *const names[] = {"one-number rows (33 M rows)",
                                    "8-number rows",
                                    "512-wide rows of weights",
                                    "comments",
                                    "one plain scalar",
                                    "one quoted scalar, escapes",
                                    "nested mappings",
                                    "blank lines"};
#define N_SHAPES ((int)(sizeof(names) / sizeof(names[0])))

int main(int argc, char **argv)
{
    size_t size = argc > 1 ? (size_t)atol(argv[1]) << 20 : SCENEFILE_MAX_BYTES;
    printf("scene files of %zu MiB (the limit is %zu MiB); each parsed once in a child\n",
           size >> 20, SCENEFILE_MAX_BYTES >> 20);
    printf("%-28s %8s %9s %9s  %s\n", "shape", "seconds", "load MiB", "peak MiB", "result");
    for (int i = 0; i < N_SHAPES; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            struct text t = {malloc(size + 1), 0, size + 1};
            if (!t.p)
                _exit(1);
            shape(&t, i, size);
            struct rusage before;
            getrusage(RUSAGE_SELF, &before);
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            struct attn_scene s;
            struct diag_list errs;
            attn_diag_list_init(&errs);
            int rc = attn_scenefile_parse(&s, "bench.yaml", t.p, t.len, &errs);
            clock_gettime(CLOCK_MONOTONIC, &b);
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
            /* The text itself is the caller's; the peak above it is the loader's. */
            printf("%-28s %8.3f %9.1f %9.1f  %.70s\n", names[i], secs,
                   (double)(ru.ru_maxrss - before.ru_maxrss) / 1024.0,
                   (double)ru.ru_maxrss / 1024.0,
                   rc == 0  ? "accepted"
                   : errs.n ? errs.items[0].msg
                            : "refused");
            fflush(stdout);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
    }
    return 0;
}
