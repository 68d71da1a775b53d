/* progress: a bar on a terminal, one line elsewhere, nothing under 200 ms (see progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "common/progress.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cnum.h"

#define BAR_WIDTH 30
#define REDRAW_MS 50.0

double attn_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void attn_progress_begin(struct progress *p, FILE *out, const char *what, const char *unit)
{
    memset(p, 0, sizeof(*p));
    p->out = out;
    p->tty = out && isatty(fileno(out));
    snprintf(p->what, sizeof(p->what), "%s", what);
    snprintf(p->unit, sizeof(p->unit), "%s", unit);
    p->t0_ms = attn_now_ms();
}

static void draw_bar(struct progress *p, double elapsed_ms)
{
    char bar[BAR_WIDTH + 1]; /* ASCII: a bar must survive any terminal and locale */
    int filled = p->total > 0 ? (int)((double)BAR_WIDTH * (double)p->done / (double)p->total) : 0;
    if (filled > BAR_WIDTH)
        filled = BAR_WIDTH;
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    if (p->total > 0)
        attn_cnum_fprintf(p->out, "\r%s [%s] %ld/%ld %s  %.1f s\033[K", p->what, bar, p->done,
                          p->total, p->unit, elapsed_ms / 1e3);
    else
        attn_cnum_fprintf(p->out, "\r%s %ld %s  %.1f s\033[K", p->what, p->done, p->unit,
                          elapsed_ms / 1e3);
    fflush(p->out);
    p->bar_shown = true;
    p->drawn_ms = elapsed_ms;
}

void attn_progress_step(struct progress *p, long done, long total)
{
    p->done = done;
    p->total = total;
    if (!p->out || !p->tty)
        return;
    double elapsed = attn_now_ms() - p->t0_ms;
    if (elapsed >= PROGRESS_QUIET_MS && (!p->bar_shown || elapsed - p->drawn_ms >= REDRAW_MS))
        draw_bar(p, elapsed);
}

void attn_progress_tick(void *ctx, long done, long total)
{
    attn_progress_step(ctx, done, total);
}

void attn_progress_end(struct progress *p, bool ok)
{
    if (!p->out)
        return;
    double elapsed = attn_now_ms() - p->t0_ms;
    if (p->tty) {
        if (p->bar_shown) {
            fputs("\r\033[K", p->out);
            fflush(p->out);
        }
        return;
    }
    if (ok && elapsed >= PROGRESS_QUIET_MS)
        attn_cnum_fprintf(p->out, "attnscope: %s: %ld %s in %.1f s\n", p->what, p->done, p->unit,
                          elapsed / 1e3);
}

volatile sig_atomic_t attn_progress_interrupted;
static volatile sig_atomic_t writing_files;

static void on_interrupt(int sig)
{
    attn_progress_interrupted = sig;
    if (writing_files)
        return; /* the writer sees the flag, removes its temporary files and returns */
    static const char erase[] = "\r\033[K", said[] = "attnscope: interrupted\n";
    if (isatty(STDERR_FILENO) && write(STDERR_FILENO, erase, sizeof(erase) - 1) < 0)
        _exit(128 + sig);
    if (write(STDERR_FILENO, said, sizeof(said) - 1) < 0)
        _exit(128 + sig);
    _exit(128 + sig); /* nothing is being written: nothing to clean up */
}

void attn_progress_catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal closed (ssh dropped): clean up as for C-c */
}

void attn_progress_writing(bool writing)
{
    writing_files = writing;
    if (!writing && attn_progress_interrupted)
        on_interrupt(attn_progress_interrupted); /* it came while the files were written */
}
