/* replay: runs a fuzz target's entry point on files, without libFuzzer.
 *
 * Linked with one fuzz_*.c into the normal test suite (gcc, plain and ASan), so every crash the
 * fuzzers ever found (tests/fuzz/regressions/<target>/) and every seed of the corpora stays
 * checked on machines without clang. Arguments are files or folders (every regular file in a
 * folder, sorted, hidden files skipped). A folder must hold at least one file, so a mistyped
 * path cannot pass by replaying nothing. A broken invariant aborts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return -1;
    }
    /* Named first, so the log says which input broke an invariant. */
    fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
    /* An exact-size copy, so ASan sees a read past the input as libFuzzer's runs would. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file of dir; returns how many, or -1. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **more = realloc(names, (n + 1) * sizeof(*names));
        if (!more || !(more[n] = strdup(e->d_name))) {
            names = more;
            break;
        }
        names = more;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), by_name);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        struct stat st;
        if (path) {
            snprintf(path, plen, "%s/%s", dir, names[i]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (replay_file(path) != 0)
                    count = -1;
                else if (count >= 0)
                    count++;
            }
        }
        free(path);
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    int total = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            n = -1;
        } else if (S_ISDIR(st.st_mode)) {
            n = replay_dir(argv[i]);
        } else {
            n = replay_file(argv[i]) == 0 ? 1 : -1;
        }
        if (n <= 0) {
            fprintf(stderr, "%s: %s\n", argv[i], n < 0 ? "could not be replayed" : "holds no file");
            failed++;
        } else {
            printf("%s: %d files replayed\n", argv[i], n);
            total += n;
        }
    }
    printf("%d files replayed, %d arguments failed\n", total, failed);
    return failed ? 1 : 0;
}
