/* fuzz_common: what both fuzz targets share: the invariant check and the diagnostics' printing.
 *
 * Include once, after defining FUZZ_TARGET ("fuzz_scenefile"...): a broken invariant prints
 * its condition and aborts, so libFuzzer (or replay.c's test) reports the input.
 */
#ifndef ATTNSCOPE_FUZZ_COMMON_H
#define ATTNSCOPE_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/utf8.h"

#define INVARIANT(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s: broken invariant: %s: ", FUZZ_TARGET, #cond);                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Output nobody reads: only the code that writes it matters. */
static inline FILE *fuzz_sink(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    INVARIANT(f != NULL, "cannot open /dev/null");
    return f;
}

/* The scratch files this process wrote, removed when it exits: every replay and libFuzzer run
 * left one in /tmp per process, hundreds over a day of tests. */
static const char *fuzz_scratch_paths[8];

static void fuzz_remove_scratch(void)
{
    for (size_t i = 0; i < sizeof(fuzz_scratch_paths) / sizeof(fuzz_scratch_paths[0]); i++)
        if (fuzz_scratch_paths[i])
            unlink(fuzz_scratch_paths[i]);
}

/* The input as a file at path (size bytes, "" at first: then named
 * "/tmp/attnscope-fuzz-<tag>-<pid><ext>" and removed at exit), rewritten for every input: for
 * the readers that take a path (.npy, safetensors, a BPE's two files). */
static inline const char *fuzz_write_scratch_at(char *path, size_t path_size, const char *tag,
                                                const char *ext, const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, path_size, "/tmp/attnscope-fuzz-%s-%ld%s", tag, (long)getpid(), ext);
        size_t i = 0, n = sizeof(fuzz_scratch_paths) / sizeof(fuzz_scratch_paths[0]);
        while (i < n && fuzz_scratch_paths[i])
            i++;
        INVARIANT(i < n, "more than %zu scratch files", n);
        if (i == 0)
            atexit(fuzz_remove_scratch);
        fuzz_scratch_paths[i] = path;
    }
    FILE *f = fopen(path, "wb");
    INVARIANT(f != NULL, "cannot create %s", path);
    INVARIANT(fwrite(data, 1, size, f) == size || size == 0, "cannot write %s", path);
    INVARIANT(fclose(f) == 0, "cannot close %s", path);
    return path;
}

static inline const char *fuzz_write_scratch(const char *tag, const char *ext, const uint8_t *data,
                                             size_t size)
{
    static char path[128];
    return fuzz_write_scratch_at(path, sizeof(path), tag, ext, data, size);
}

/* attn_diag_print into a malloc'ed string. */
static inline char *fuzz_print_diag(const struct diag *d, const uint8_t *data, size_t size,
                                    size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    INVARIANT(f != NULL, "open_memstream failed");
    attn_diag_print(f, d, (const char *)data, size);
    INVARIANT(fclose(f) == 0, "fclose of a memory stream failed");
    return buf;
}

/* A problem the loader reports: a message, a location, and a print that is its header line,
 * then at most a window of 160 bytes of its source line and a caret line under it. The shape
 * of the text is checked, since a read past the source inside printf escapes ASan. */
static inline void fuzz_check_diag(const struct diag *d, const uint8_t *data, size_t size)
{
    INVARIANT(d->msg[0] != '\0', "an empty message");
    INVARIANT(d->line >= 0 && d->col >= 0, "a negative location");
    size_t hlen, len;
    char *header = fuzz_print_diag(d, NULL, 0, &hlen);
    char *full = fuzz_print_diag(d, data, size, &len);
    INVARIANT(len >= hlen && memcmp(full, header, hlen) == 0, "the header changed");
    /* Nothing raw reaches a terminal: every line is valid UTF-8 without a control character
     * (a tab is kept in the excerpt) or a bidi control (common/utf8.h). */
    for (const char *q = full; q < full + len;) {
        const char *nl = memchr(q, '\n', (size_t)(full + len - q));
        INVARIANT(nl != NULL, "a diag print without its last newline");
        char *line = strndup(q, (size_t)(nl - q));
        INVARIANT(line && strlen(line) == (size_t)(nl - q), "a NUL in a printed diag");
        INVARIANT(!attn_utf8_needs_escape(line, UTF8_ESC_KEEP_TAB), "a raw control in '%s'", line);
        free(line);
        q = nl + 1;
    }
    /* The rest: nothing, or "  " + excerpt + "\n" + "  " + blanks + "^\n", each line at most
     * 2 + 3 ("…") + 160 bytes, each of them escaped (at most 4 bytes: "\xff"), + 1. */
    const char *p = full + hlen, *end = full + len;
    int lines = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        INVARIANT(nl != NULL, "a caret excerpt without its last newline");
        INVARIANT(nl - p <= 2 + 3 + 4 * 160, "an excerpt line of %zu bytes", (size_t)(nl - p));
        lines++;
        p = nl + 1;
    }
    INVARIANT(lines == 0 || (lines == 2 && len >= 2 && full[len - 2] == '^'),
              "the excerpt is %d lines, not the line and its caret", lines);
    free(full);
    free(header);
}

#endif
