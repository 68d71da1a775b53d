/* pool: the threads the engine's work runs on, the matrix products included.
 *
 * One pool does everything parallel: OpenBLAS runs on one thread inside it (kernels.c splits a
 * product into tasks), and the elementwise work (GELU, softmax, norms, residual adds) is split
 * the same way, so no thread spins waiting for another's kind of work. Waiting workers sleep on
 * a condition variable. Work is a count of independent tasks, claimed one at a time in order by
 * whichever thread is free; the caller's thread works too. How work is cut into tasks never
 * depends on the number of threads, so results are the same bits on 1 thread or 64.
 *
 * The pool serves one caller thread at a time (the engine's); a task that calls
 * attn_pool_run again runs the inner tasks itself, in order.
 */
#ifndef ATTNSCOPE_POOL_H
#define ATTNSCOPE_POOL_H

/* Task t of ctx's work, run by thread `slot` (0 = the caller, < the max_threads asked for). */
typedef void attn_pool_task(void *ctx, int t, int slot);

/* Runs tasks 0 .. tasks - 1 of fn on at most max_threads threads (0: every thread of the
 * pool), and returns when all have run. Serially, in order, when there is one task, one thread,
 * or the call is made from inside a task. */
void attn_pool_run(int tasks, int max_threads, attn_pool_task *fn, void *ctx);
/* The pool's threads, the caller's included: ATTNSCOPE_THREADS, else OPENBLAS_NUM_THREADS,
 * else one per online core (at most 64), until attn_pool_set_threads. */
int attn_pool_threads(void);
void attn_pool_set_threads(int n);

#endif
