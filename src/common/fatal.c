/* fatal: restore the terminal, then report (see fatal.h). */
#include "common/fatal.h"

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cnum.h"

/* Set up before the handlers can run; read only from them. */
static struct {
    volatile sig_atomic_t armed;
    int fd;
    struct termios saved;
    char reset[FATAL_RESET_MAX];
    size_t len;
} term;

void attn_fatal_set_terminal(int fd, const struct termios *saved, const char *reset, size_t len)
{
    term.armed = 0;
    term.fd = fd;
    term.saved = *saved;
    term.len = len < FATAL_RESET_MAX ? len : FATAL_RESET_MAX;
    memcpy(term.reset, reset, term.len);
    term.armed = 1;
}

void attn_fatal_clear_terminal(void)
{
    term.armed = 0;
}

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void say(const char *s)
{
    write_all(STDERR_FILENO, s, strlen(s));
}

/* Async-signal-safe: the bytes were prepared while curses was set up. */
static void restore_terminal(void)
{
    if (!term.armed)
        return;
    term.armed = 0; /* once: a second crash inside this must not loop */
    write_all(term.fd, term.reset, term.len);
    tcsetattr(term.fd, TCSADRAIN, &term.saved);
}

static const char *signal_words(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "a segmentation fault (SIGSEGV)";
    case SIGBUS:
        return "a bus error (SIGBUS)";
    case SIGABRT:
        return "an abort (SIGABRT)";
    case SIGFPE:
        return "an arithmetic fault (SIGFPE)";
    case SIGILL:
        return "an illegal instruction (SIGILL)";
    default:
        return "a fatal signal";
    }
}

static void on_crash(int sig)
{
    bool had_terminal = term.armed;
    restore_terminal();
    say("attnscope: crashed with ");
    say(signal_words(sig));
    say(had_terminal ? "; the terminal was restored.\n" : ".\n");
    say("attnscope: please report it with the scene file and the keys you pressed.\n");
    /* The default action gives the usual exit status (128 + sig) and a core dump. */
    signal(sig, SIG_DFL);
    raise(sig);
}

void attn_fatal_install_crash_handlers(void)
{
    /* The handler runs on an alternate stack: a stack overflow is a SIGSEGV too. */
    static char stack[1 << 16];
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof(stack), .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}

/* C-\ (SIGQUIT) keeps its meaning, end now and dump core where enabled, which works even when
 * the event loop is busy; only the terminal is put back first. Not a crash: no report asked. */
static void on_quit(int sig)
{
    bool had_terminal = term.armed;
    restore_terminal();
    say(had_terminal ? "attnscope: quit (SIGQUIT, C-\\); the terminal was restored.\n"
                     : "attnscope: quit (SIGQUIT, C-\\).\n");
    signal(sig, SIG_DFL);
    raise(sig);
}

void attn_fatal_install_quit_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_quit;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGQUIT, &sa, NULL);
}

void attn_fatal_abort(const char *fmt, ...)
{
    restore_terminal();
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    attn_cnum_vformat(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    say("attnscope: fatal: ");
    say(msg);
    say("\n");
    signal(SIGABRT, SIG_DFL); /* the report is written: no second one from on_crash */
    abort();
}
