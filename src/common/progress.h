/* progress: feedback for work that takes a while.
 *
 * Anything over PROGRESS_QUIET_MS shows progress; anything shorter shows nothing, so quick
 * commands stay silent. On a terminal: a bar on the stream, redrawn at most every 50 ms and
 * erased when the work ends. Otherwise (a log, a pipe, CI): one quiet line at the end saying
 * what was done and how long it took.
 *
 * A struct progress also works as a callback for code that must not print itself (the engine,
 * the exporter): attn_progress_tick has the signature of struct progress_sink's step.
 */
#ifndef ATTNSCOPE_PROGRESS_H
#define ATTNSCOPE_PROGRESS_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#define PROGRESS_QUIET_MS 200

/* The monotonic clock in milliseconds: every timer of attnscope reads this one. */
double attn_now_ms(void);

/* What long-running code calls: step(ctx, done, total) after each unit of work. A NULL step
 * is no feedback at all. stop, when not NULL, is a flag the work reads between its units: once
 * set (Ctrl-C, q in the explorer), the work ends early and says it stopped. */
struct progress_sink {
    void (*step)(void *ctx, long done, long total);
    void *ctx;
    const volatile sig_atomic_t *stop;
};

static inline void progress_report(const struct progress_sink *s, long done, long total)
{
    if (s && s->step)
        s->step(s->ctx, done, total);
}

/* True once the sink's stop flag is set. Read atomically: the flag may be set by another thread
 * than the one working (the explorer's, for its compute thread), or by a signal handler. */
static inline bool progress_stopped(const struct progress_sink *s)
{
    return s && s->stop && __atomic_load_n(s->stop, __ATOMIC_RELAXED);
}

/* Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed, an ssh session dropped) for the
 * commands: while nothing is being written the process ends at once, the bar erased,
 * "attnscope: interrupted" said, status 130 (143, 129); while a command writes files
 * (attn_progress_writing(true)), the signal only sets attn_progress_interrupted, which the
 * writer's sink reads as its stop flag, so it removes what it had begun and nothing half-written
 * is left. */
void attn_progress_catch_interrupts(void);
void attn_progress_writing(bool writing);
extern volatile sig_atomic_t attn_progress_interrupted;

struct progress {
    FILE *out;
    bool tty;      /* a bar; else the line at the end */
    char what[64]; /* "computing", "exporting" */
    char unit[32]; /* what done counts: "layers", "files" */
    double t0_ms, drawn_ms;
    long done, total; /* total 0: unknown, a count without a bar */
    bool bar_shown;
};

/* Starts the clock. out is usually stderr; tty decides bar or line (isatty of out's fd). */
void attn_progress_begin(struct progress *p, FILE *out, const char *what, const char *unit);
/* Records done of total; draws the bar once the work has run over PROGRESS_QUIET_MS. */
void attn_progress_step(struct progress *p, long done, long total);
/* attn_progress_step as a progress_sink's step: ctx is the struct progress. */
void attn_progress_tick(void *ctx, long done, long total);
/* Ends: erases the bar, or prints the line when the work took over PROGRESS_QUIET_MS and ok. */
void attn_progress_end(struct progress *p, bool ok);

#endif
