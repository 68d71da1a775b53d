/* oomhook: the n-th allocation fails, for the out-of-memory sweeps of test_oom.c.
 *
 * An executable linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,
 * --wrap=strndup,--wrap=realpath,--wrap=free (tests/meson.build: oomhook_link_args) sends every
 * call its own objects make to those functions (the test's and libattnscope's static libraries,
 * not the shared libraries') through here. While armed, the allocations are counted and the n-th
 * returns NULL (with errno ENOMEM); with `after` every one from the n-th on does, as a machine
 * that stays out of memory would. glibc's malloc hooks are gone; --wrap needs no help from the
 * C library and works under ASan (the real functions are ASan's).
 *
 * The hook also keeps the set of blocks allocated while armed and not yet freed, so a sweep can
 * check that a failed call leaves nothing behind in any build, not only under LeakSanitizer.
 * oom_malloc and oom_free are the same functions for libraries that take allocation functions
 * (jansson's json_set_alloc_funcs). OOM_TRACE=1 prints the stack of each allocation made to
 * fail.
 */
#ifndef ATTNSCOPE_TESTS_OOMHOOK_H
#define ATTNSCOPE_TESTS_OOMHOOK_H

#include <stdbool.h>
#include <stddef.h>

/* Counts allocations from now on; allocation nth (1-based) fails, and with after every later
 * one too. nth 0: none fails (only counted). Clears the set of live blocks. */
void oom_arm(long nth, bool after);
/* Stops counting and failing; returns how many allocations failed since oom_arm. */
long oom_disarm(void);
/* Allocations seen since the last oom_arm. */
long oom_count(void);
/* Blocks allocated while armed that are still live, and the size of one of them (for a
 * message). */
long oom_live(size_t *some_size);
/* The bytes of those blocks, as asked for (a realpath result counts 1). */
size_t oom_live_bytes(void);
/* Whether p is the start of one of them. */
bool oom_is_live(const void *p);

void *oom_malloc(size_t n);
void oom_free(void *p);

#endif
