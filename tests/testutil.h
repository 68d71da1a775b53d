/* testutil: small helpers the cmocka tests share (scratch folders, whole files, sorted names).
 *
 * Plain C and stdio only, no attnscope library, so any test can link it. The helpers that can
 * fail fail the running cmocka test (fail_msg), except where a NULL return is documented.
 */
#ifndef ATTNSCOPE_TESTUTIL_H
#define ATTNSCOPE_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Creates a fresh folder $TMPDIR/attnscope-test-NAME-XXXXXX (/tmp when TMPDIR is unset) and
 * returns its path, which the caller frees; fails the test when it cannot. */
char *tu_make_tmpdir(const char *name);

/* Deletes path and, for a folder, everything below it (rm -rf), making folders writable first;
 * symbolic links are removed, not followed. Missing paths and errors are ignored. */
void tu_remove_tree(const char *path);

/* Reads a whole file into a NUL-terminated buffer the caller frees, its size (without the NUL)
 * in *len when len is not NULL. Returns NULL when the file cannot be opened or read. */
char *tu_read_file(const char *path, size_t *len);

/* tu_read_file for a file that must be there: fails the test, naming path, when it cannot. */
char *tu_must_read_file(const char *path, size_t *len);

/* Creates or truncates path and writes len bytes of data to it; fails the test on any error. */
void tu_write_file(const char *path, const char *data, size_t len);

/* Copies the file from to to, byte for byte (fails the test when it cannot). */
void tu_copy_file(const char *from, const char *to);
/* tu_write_file of a NUL-terminated text. */
void tu_write_text(const char *path, const char *text);

/* qsort comparator for an array of C strings (char *), by strcmp. */
int tu_cmp_str(const void *a, const void *b);

/* The names in folder dir that end with suffix (and have more before it), hidden names left
 * out, sorted by strcmp: a malloc'ed array of *n strings, freed with tu_free_names. Returns
 * NULL (and *n = 0) when dir cannot be opened. */
char **tu_list_names(const char *dir, const char *suffix, int *n);

/* Frees what tu_list_names returned. */
void tu_free_names(char **names, int n);

/* The name of a locale whose decimal point is a comma (de_DE.UTF-8), for setlocale. When the
 * system has none installed it is generated with localedef into a scratch folder and LOCPATH
 * points there, so a locale test can never pass by running in "C". Fails the test when no such
 * locale can be made (scripts/bootstrap installs Debian's locales package for localedef). */
const char *tu_comma_locale(void);

/* Compares the lines of expected (a whole file's text: one line per '\n', a final '\n'
 * optional, '\r' before it ignored) with got[0..n_got), which must be equal, in order. When
 * they differ, prints to out "NAME: ... differ" and a diff in which each line is common
 * ("   "), only expected ("-  ") or only got ("+  "), so a missing, extra or reordered line
 * shows as such. Returns whether they are equal. */
bool tu_same_lines(FILE *out, const char *name, const char *expected, char *const *got, int n_got);

/* Whether an update mode is on: the variable var (ATTNSCOPE_UPDATE_SCREENS,
 * ATTNSCOPE_UPDATE_EXPECT) set to "1". Unset or empty is off; any other value fails the test, so a
 * typo cannot quietly turn a real run into an update run or the other way round. Every update
 * run rewrites golden files and then fails (tu_update_done): it can never stand in for a pass. */
bool tu_update_mode(const char *var);

/* Ends an update run of var: fails the test, naming how many of n_total goldens were rewritten
 * (names, a space-separated list, may be empty) and what to do next. */
void tu_update_done(const char *var, int n_rewritten, int n_total, const char *names);

/* Runs fn(arg, out, size) in a child process held to limits, so a test can show that work is
 * bounded by a limit the unbounded code exceeds many times over (never by a wall clock, which a
 * loaded machine stretches): cpu_seconds of CPU time (RLIMIT_CPU), and, when mem_bytes is not 0,
 * mem_bytes of address space more than the child holds when fn starts (RLIMIT_AS; an allocation
 * past it fails). Under AddressSanitizer, whose allocator reserves its space up front, only large
 * blocks and mappings count, so the memory limit holds in the plain build. fn writes text for the
 * parent (the message to compare) into out and returns its status. Returns that status, or -1
 * with out saying why the child did not finish ("it ran past 10 s of CPU time"). */
int tu_run_limited(char *out, size_t size, int (*fn)(void *arg, char *out, size_t size), void *arg,
                   int cpu_seconds, size_t mem_bytes);

/* A CSV file as text fields: RFC 4180 (quoted fields, "" for a quote), CRLF line ends only. */
struct tu_csv {
    char ***cells; /* rows of fields */
    int *ncols;    /* (rows) fields of each row */
    int rows;
};
/* Reads path into out. Returns 0, or -1 with why filled (a missing file, an unterminated quote,
 * a bare CR, an LF line end). */
int tu_csv_read(struct tu_csv *out, const char *path, char *why, size_t why_len);
void tu_csv_free(struct tu_csv *c);
/* Whether c is a golden of rows x cols numbers: a header row, then rows rows of a label and cols
 * values each. Checked before any cell is compared, so a truncated golden fails instead of
 * comparing only the cells it still has. */
bool tu_csv_shape_is(const struct tu_csv *c, int rows, int cols);

#endif
