/* fatal: the one way out when something breaks: restore the terminal first, then report.
 *
 * The explorer registers how to put the terminal back (attn_fatal_set_terminal) once curses owns
 * it. attn_fatal_abort() (out of memory, a broken invariant) and the crash handlers (SIGSEGV,
 * SIGBUS, SIGABRT, SIGFPE, SIGILL) write those bytes and the saved terminal modes back before they
 * print anything, so a crash never leaves a workshop laptop in raw mode with a hidden cursor on
 * the alternate screen. The crash path uses only async-signal-safe calls: write(2) and
 * tcsetattr(3). Outside the explorer nothing is registered and attn_fatal_abort() just reports.
 */
#ifndef ATTNSCOPE_FATAL_H
#define ATTNSCOPE_FATAL_H

#include <stddef.h>
#include <termios.h>

#define FATAL_RESET_MAX 256

/* From now on a crash writes reset (len bytes: leave the alternate screen, show the cursor,
 * mouse and keypad off, plain attributes) to fd and restores saved on it. */
void attn_fatal_set_terminal(int fd, const struct termios *saved, const char *reset, size_t len);
/* The terminal is the shell's again (after endwin): a crash now has nothing to restore. */
void attn_fatal_clear_terminal(void);

/* Installs the crash handlers; each restores the terminal, says what happened on stderr and
 * re-raises the signal, so the exit status (and a core dump, when enabled) stay the system's. */
void attn_fatal_install_crash_handlers(void);

/* SIGQUIT (C-\ in the explorer) restores the terminal, says "attnscope: quit (SIGQUIT, C-\)"
 * and re-raises: the process still ends at once with the system's status (131) and a core dump
 * where enabled, as C-\ is meant to, even while the explorer is busy, but never leaves the
 * terminal raw. Work in flight is left as a kill -9 leaves it (an export's temporary folder is
 * removed by the next export). */
void attn_fatal_install_quit_handler(void);

/* Restores the terminal, prints "attnscope: fatal: <message>" and aborts. */
_Noreturn void attn_fatal_abort(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
