/* mapguard: SIGBUS on a guarded mapping becomes zero pages and a flag (see mapguard.h).
 *
 * The handler uses only what is safe in a signal handler: reads of the slot table (written
 * with atomics before a mapping is used), mmap(2) (a plain system call on Linux) and an atomic
 * store. The page that faulted and every page after it to the mapping's end are replaced at
 * once: a truncation removes the file's tail, so they would all fault.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include "common/mapguard.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct {
    _Atomic(uintptr_t) start; /* 0: a free slot */
    _Atomic(size_t) len;
    atomic_bool faulted;
} slots[MAPGUARD_MAX];

static struct sigaction previous;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    uintptr_t addr = (uintptr_t)info->si_addr;
    for (int i = 0; i < MAPGUARD_MAX; i++) {
        uintptr_t start = atomic_load(&slots[i].start);
        size_t len = atomic_load(&slots[i].len);
        if (start <= 1 || addr < start || addr - start >= len)
            continue;
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t from = addr & ~(page - 1), end = (start + len + page - 1) & ~(page - 1);
        if (mmap((void *)from, end - from, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1,
                 0) == MAP_FAILED)
            break; /* cannot patch it: a crash after all */
        atomic_store(&slots[i].faulted, true);
        return; /* the read is tried again, and reads zeros */
    }
    /* Not ours: whatever was there before (fatal's report), or the default action. */
    if (previous.sa_flags & SA_SIGINFO && previous.sa_sigaction) {
        previous.sa_sigaction(sig, info, uctx);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
               previous.sa_handler) {
        previous.sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/* Makes on_sigbus the SIGBUS handler unless it is already; whatever was there becomes the one
 * it hands other faults to. Asked on every attn_mapguard_add: code that installs its own handlers
 * later (a test harness, fatal's crash report) is then chained behind it, not lost. */
static void install(void)
{
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == on_sigbus)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &previous);
}

int attn_mapguard_add(const void *start, size_t len)
{
    if (!start || !len)
        return -1;
    install();
    for (int i = 0; i < MAPGUARD_MAX; i++) {
        uintptr_t free_slot = 0;
        /* Claimed with 1 (which the handler skips) until its length is set. */
        if (!atomic_compare_exchange_strong(&slots[i].start, &free_slot, 1))
            continue;
        atomic_store(&slots[i].len, len);
        atomic_store(&slots[i].faulted, false);
        atomic_store(&slots[i].start, (uintptr_t)start);
        return 0;
    }
    return -1;
}

void attn_mapguard_remove(const void *start)
{
    for (int i = 0; start && i < MAPGUARD_MAX; i++)
        if (atomic_load(&slots[i].start) == (uintptr_t)start) {
            atomic_store(&slots[i].start, 0);
            atomic_store(&slots[i].faulted, false);
            return;
        }
}

bool attn_mapguard_faulted(const void *start)
{
    for (int i = 0; start && i < MAPGUARD_MAX; i++)
        if (atomic_load(&slots[i].start) == (uintptr_t)start)
            return atomic_load(&slots[i].faulted);
    return false;
}
