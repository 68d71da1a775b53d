/* mapguard: a mapped file that shrinks under its reader becomes an error, not a crash.
 *
 * A checkpoint is read through mmap. When another program truncates the file in place (a
 * non-atomic writer saving a new one), a read of a page past the new end raises SIGBUS, which
 * would kill the explorer with its unsaved edits. A mapping registered here is guarded: the
 * SIGBUS handler replaces the faulting page and the rest of the mapping with zero pages, records
 * the fault and returns, so the read goes on (with zeros, in whichever thread it was, BLAS's
 * included); the owner asks attn_mapguard_faulted afterwards and reports the file as changed. A
 * SIGBUS anywhere else goes to the handler installed before (fatal's crash report).
 */
#ifndef ATTNSCOPE_MAPGUARD_H
#define ATTNSCOPE_MAPGUARD_H

#include <stdbool.h>
#include <stddef.h>

#define MAPGUARD_MAX 64 /* mappings guarded at once; one per open checkpoint */

/* Guards [start, start + len); installs the handler the first time. Returns 0, or -1 when every
 * slot is taken (the mapping then works unguarded). */
int attn_mapguard_add(const void *start, size_t len);
/* Stops guarding the mapping at start (before munmap). */
void attn_mapguard_remove(const void *start);
/* True when a read of the mapping at start faulted since it was added: the file shrank. */
bool attn_mapguard_faulted(const void *start);

#endif
