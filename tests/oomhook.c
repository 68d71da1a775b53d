/* oomhook: the n-th allocation fails (see oomhook.h). */
#include "oomhook.h"

#include <errno.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_realpath(const char *path, char *resolved);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
char *__wrap_realpath(const char *path, char *resolved);
void __wrap_free(void *p);

static bool armed, fail_after;
static long seen, nth, failed;

/* The blocks allocated while armed and not freed: open addressing on the pointer, with
 * tombstones; cleared by oom_arm. */
#define LIVE_SLOTS (1u << 20)
#define TOMB       ((void *)1)
static void *live_ptr[LIVE_SLOTS];
static size_t live_size[LIVE_SLOTS];
static long live_n;

static size_t slot_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u;
    return (size_t)(h >> 44) & (LIVE_SLOTS - 1);
}

static void live_add(void *p, size_t size)
{
    if (!p)
        return;
    size_t i = slot_of(p);
    for (size_t k = 0; k < LIVE_SLOTS; k++, i = (i + 1) & (LIVE_SLOTS - 1))
        if (!live_ptr[i] || live_ptr[i] == TOMB) {
            live_ptr[i] = p;
            live_size[i] = size;
            live_n++;
            return;
        }
    abort(); /* the test's own table is full: a broken test, not the library */
}

static void live_remove(const void *p)
{
    if (!p || live_n == 0)
        return;
    size_t i = slot_of(p);
    for (size_t k = 0; k < LIVE_SLOTS && live_ptr[i]; k++, i = (i + 1) & (LIVE_SLOTS - 1))
        if (live_ptr[i] == p) {
            live_ptr[i] = TOMB;
            live_n--;
            return;
        }
}

/* OOM_TRACE=1 in the environment prints the stack of every allocation made to fail: where a
 * sweep's complaint comes from. */
static void trace(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("OOM_TRACE");
        on = v && *v == '1';
    }
    if (!on)
        return;
    void *frames[32];
    int n = backtrace(frames, 32);
    char line[64];
    int k = snprintf(line, sizeof(line), "-- allocation %ld fails:\n", seen);
    (void)!write(2, line, (size_t)k);
    backtrace_symbols_fd(frames, n, 2);
}

static bool should_fail(void)
{
    if (!armed)
        return false;
    seen++;
    if (nth > 0 && (seen == nth || (fail_after && seen > nth))) {
        failed++;
        if (seen == nth)
            trace();
        errno = ENOMEM;
        return true;
    }
    return false;
}

void oom_arm(long n, bool after)
{
    memset(live_ptr, 0, sizeof(live_ptr));
    live_n = 0;
    seen = failed = 0;
    nth = n;
    fail_after = after;
    armed = true;
}

long oom_disarm(void)
{
    armed = false;
    return failed;
}

long oom_count(void)
{
    return seen;
}

long oom_live(size_t *some_size)
{
    *some_size = 0;
    for (size_t i = 0; live_n > 0 && i < LIVE_SLOTS; i++)
        if (live_ptr[i] && live_ptr[i] != TOMB) {
            *some_size = live_size[i];
            break;
        }
    return live_n;
}

size_t oom_live_bytes(void)
{
    size_t bytes = 0;
    for (size_t i = 0; live_n > 0 && i < LIVE_SLOTS; i++)
        if (live_ptr[i] && live_ptr[i] != TOMB)
            bytes += live_size[i];
    return bytes;
}

bool oom_is_live(const void *p)
{
    if (!p || live_n == 0)
        return false;
    size_t i = slot_of(p);
    for (size_t k = 0; k < LIVE_SLOTS && live_ptr[i]; k++, i = (i + 1) & (LIVE_SLOTS - 1))
        if (live_ptr[i] == p)
            return true;
    return false;
}

void *__wrap_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __real_malloc(n);
    if (armed)
        live_add(p, n);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    void *p = __real_calloc(n, size);
    if (armed)
        live_add(p, n * size);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    void *q = __real_realloc(p, n);
    if (q || n == 0)
        live_remove(p);
    if (armed)
        live_add(q, n);
    return q;
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = __wrap_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = __wrap_malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

char *__wrap_realpath(const char *path, char *resolved)
{
    if (!resolved && should_fail())
        return NULL;
    char *r = __real_realpath(path, resolved);
    if (!resolved && armed)
        live_add(r, 1);
    return r;
}

void __wrap_free(void *p)
{
    live_remove(p);
    __real_free(p);
}

void *oom_malloc(size_t n)
{
    return __wrap_malloc(n);
}

void oom_free(void *p)
{
    __wrap_free(p);
}
