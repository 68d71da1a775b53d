/* pool: one set of worker threads for the whole engine (see pool.h). */
#include "engine/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_MAX 64

void openblas_set_num_threads(int n); /* cblas.h's, without its other declarations */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int threads;        /* the pool's size, the caller included; 0 until first asked */
static int started;        /* workers running (threads - 1 once every start succeeded) */
static unsigned long job;  /* incremented for every parallel run */
static int job_workers;    /* workers that may join the current run */
static int joined, active; /* workers that joined it, and those still working */
static attn_pool_task *job_fn;
static void *job_ctx;
static int job_tasks;
static atomic_int next_task;
static unsigned long start_job[POOL_MAX]; /* job when each worker was started */
static _Thread_local bool inside;         /* this thread runs a task: nested runs are serial */

static int threads_from_env(void)
{
    const char *names[] = {"ATTNSCOPE_THREADS", "OPENBLAS_NUM_THREADS"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end == '\0' && n >= 1)
                return n > POOL_MAX ? POOL_MAX : (int)n;
        }
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > POOL_MAX ? POOL_MAX : (int)cores;
}

/* Called with lock held. */
static void ensure_size(void)
{
    if (threads == 0) {
        threads = threads_from_env();
        openblas_set_num_threads(1); /* every product runs inside the pool's tasks */
    }
}

int attn_pool_threads(void)
{
    pthread_mutex_lock(&lock);
    ensure_size();
    int n = threads;
    pthread_mutex_unlock(&lock);
    return n;
}

void attn_pool_set_threads(int n)
{
    pthread_mutex_lock(&lock);
    ensure_size();
    threads = n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : n; /* extra workers stay asleep */
    pthread_mutex_unlock(&lock);
}

static void claim_and_run(attn_pool_task *fn, void *ctx, int tasks, int slot)
{
    inside = true;
    for (int t; (t = atomic_fetch_add(&next_task, 1)) < tasks;)
        fn(ctx, t, slot);
    inside = false;
}

static void *worker(void *arg)
{
    int slot = (int)(long)arg;
    pthread_mutex_lock(&lock);
    unsigned long seen = start_job[slot]; /* the run it was started for is after this */
    for (;;) {
        while (job == seen)
            pthread_cond_wait(&wake, &lock);
        seen = job;
        if (slot >= job_workers || joined >= job_workers - 1)
            continue; /* not wanted for this run, or woken after its end */
        joined++;
        active++;
        attn_pool_task *fn = job_fn;
        void *ctx = job_ctx;
        int tasks = job_tasks;
        pthread_mutex_unlock(&lock);
        claim_and_run(fn, ctx, tasks, slot);
        pthread_mutex_lock(&lock);
        if (--active == 0)
            pthread_cond_signal(&done);
    }
    return NULL;
}

/* Starts workers up to want - 1; called with lock held. Returns how many run. */
static int start_workers(int want)
{
    while (started < want - 1) {
        pthread_t tid;
        start_job[started + 1] = job;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, worker, (void *)(long)(started + 1));
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break; /* fewer threads: the work still gets done */
        started++;
    }
    return started;
}

/* A child of fork has none of the parent's workers: it starts its own. */
static void after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&wake, NULL);
    pthread_cond_init(&done, NULL);
    started = joined = active = job_workers = 0;
}

static void register_fork(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

static void run_parallel(int tasks, int max_threads, attn_pool_task *fn, void *ctx);

/* Held by the thread whose run the workers serve: another caller thread (the explorer's, while
   its compute thread runs a pass) runs its tasks itself, in order, rather than wait. */
static pthread_mutex_t caller = PTHREAD_MUTEX_INITIALIZER;

void attn_pool_run(int tasks, int max_threads, attn_pool_task *fn, void *ctx)
{
    if (tasks <= 0)
        return;
    bool serial = tasks == 1 || inside || pthread_mutex_trylock(&caller) != 0;
    if (serial) {
        bool was = inside;
        inside = true;
        for (int t = 0; t < tasks; t++)
            fn(ctx, t, 0);
        inside = was;
        return;
    }
    run_parallel(tasks, max_threads, fn, ctx);
    pthread_mutex_unlock(&caller);
}

/* The run on the pool's threads, the caller's (holding `caller`) included. */
static void run_parallel(int tasks, int max_threads, attn_pool_task *fn, void *ctx)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork);
    pthread_mutex_lock(&lock);
    ensure_size();
    int want = threads;
    if (max_threads > 0 && want > max_threads)
        want = max_threads;
    if (want > tasks)
        want = tasks;
    int workers = want > 1 ? start_workers(want) : 0;
    if (workers > want - 1)
        workers = want - 1;
    if (workers == 0) {
        pthread_mutex_unlock(&lock);
        atomic_store(&next_task, 0);
        claim_and_run(fn, ctx, tasks, 0);
        return;
    }
    job_fn = fn;
    job_ctx = ctx;
    job_tasks = tasks;
    job_workers = workers + 1; /* slots 1 .. workers */
    joined = 0;
    atomic_store(&next_task, 0);
    job++;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    claim_and_run(fn, ctx, tasks, 0);
    pthread_mutex_lock(&lock);
    /* Every task is claimed; wait for those still running. A worker that wakes only now finds
       nothing left and is not waited for: job_workers = 0 keeps it out. */
    job_workers = 0;
    while (active > 0)
        pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
}
