/* testutil: helpers shared by the cmocka tests (see testutil.h). */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_make_tmpdir(const char *name)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t size = strlen(base) + strlen(name) + sizeof("/attnscope-test--XXXXXX");
    char *dir = malloc(size);
    assert_non_null(dir);
    snprintf(dir, size, "%s/attnscope-test-%s-XXXXXX", base, name);
    if (!mkdtemp(dir))
        fail_msg("mkdtemp %s: %s", dir, strerror(errno));
    return dir;
}

/* Empties folder fd: its files removed, its folders moved to root as ".tu-rm-<n>" (*next
 * counts them), so tu_remove_tree never builds a long path nor holds a chain of folders open. */
static void empty_into(int fd, int root, unsigned long *next)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) { /* names first: the moves change the folder being read */
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **bigger = realloc(names, cap * sizeof(*names));
            if (!bigger)
                break;
            names = bigger;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            char moved[48];
            snprintf(moved, sizeof(moved), ".tu-rm-%lu", (*next)++);
            renameat(fd, names[i], root, moved);
        } else {
            unlinkat(fd, names[i], 0);
        }
        free(names[i]);
    }
    free(names);
}

/* Every folder below path is moved up to path's top before it is emptied: a test nests folders
 * 3,000 deep, past PATH_MAX and the limit of open files, and the tree still goes. */
void tu_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    chmod(path, 0700); /* a test may have made it read-only */
    int root = open(path, O_RDONLY | O_DIRECTORY);
    if (root >= 0) {
        unsigned long next = 0;
        empty_into(root, root, &next);
        for (unsigned long k = 0; k < next; k++) {
            char name[48];
            snprintf(name, sizeof(name), ".tu-rm-%lu", k);
            fchmodat(root, name, 0700, 0);
            int fd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (fd >= 0) {
                empty_into(fd, root, &next);
                close(fd);
            }
            unlinkat(root, name, AT_REMOVEDIR);
        }
        close(root);
    }
    rmdir(path);
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break; /* end of file or an error, told apart below */
        char *bigger = realloc(buf, cap * 2);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

char *tu_must_read_file(const char *path, size_t *len)
{
    errno = 0;
    char *buf = tu_read_file(path, len);
    if (!buf)
        fail_msg("cannot read %s: %s", path, errno ? strerror(errno) : "read error");
    return buf;
}

void tu_copy_file(const char *from, const char *to)
{
    size_t len;
    char *bytes = tu_must_read_file(from, &len);
    tu_write_file(to, bytes, len);
    free(bytes);
}

void tu_write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("cannot write %s: %s", path, strerror(errno));
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void tu_write_text(const char *path, const char *text)
{
    tu_write_file(path, text, strlen(text));
}

int tu_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **tu_list_names(const char *dir, const char *suffix, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t suffix_len = strlen(suffix);
    int cap = 16;
    char **names = malloc((size_t)cap * sizeof(*names));
    assert_non_null(names);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= suffix_len ||
            strcmp(e->d_name + len - suffix_len, suffix) != 0)
            continue;
        if (*n == cap) {
            cap *= 2;
            names = realloc(names, (size_t)cap * sizeof(*names));
            assert_non_null(names);
        }
        names[*n] = strdup(e->d_name);
        assert_non_null(names[*n]);
        (*n)++;
    }
    closedir(d);
    qsort(names, (size_t)*n, sizeof(*names), tu_cmp_str);
    return names;
}

void tu_free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* True when name is a locale this process can load and its decimal point is a comma. */
static bool comma_locale_works(const char *name)
{
    locale_t l = newlocale(LC_ALL_MASK, name, (locale_t)0);
    if (!l)
        return false;
    locale_t old = uselocale(l);
    bool comma = strcmp(localeconv()->decimal_point, ",") == 0;
    uselocale(old);
    freelocale(l);
    return comma;
}

const char *tu_comma_locale(void)
{
    static const char *const installed[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                            "fr_FR.utf8"};
    for (size_t i = 0; i < sizeof(installed) / sizeof(installed[0]); i++)
        if (comma_locale_works(installed[i]))
            return installed[i];
    char *dir = tu_make_tmpdir("locale");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
    int rc = system(cmd); /* localedef may warn and still write the locale: test it below */
    (void)rc;
    setenv("LOCPATH", dir, 1);
    free(dir); /* the folder stays for the rest of the run */
    if (!comma_locale_works("de_DE.UTF-8"))
        fail_msg("no comma-decimal locale: localedef -i de_DE -f UTF-8 failed (install "
                 "Debian's locales package)");
    return "de_DE.UTF-8";
}

/* Splits text into its lines, in place; the array is the caller's to free. */
static char **split_lines(char *text, int *n)
{
    int cap = 16;
    char **lines = malloc((size_t)cap * sizeof(*lines));
    assert_non_null(lines);
    *n = 0;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        size_t len = strlen(p);
        if (len > 0 && p[len - 1] == '\r')
            p[len - 1] = '\0';
        if (*n == cap) {
            cap *= 2;
            lines = realloc(lines, (size_t)cap * sizeof(*lines));
            assert_non_null(lines);
        }
        lines[(*n)++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    return lines;
}

bool tu_same_lines(FILE *out, const char *name, const char *expected, char *const *got, int n_got)
{
    char *text = strdup(expected);
    assert_non_null(text);
    int n_exp;
    char **exp = split_lines(text, &n_exp);
    bool same = n_exp == n_got;
    for (int i = 0; same && i < n_exp; i++)
        same = strcmp(exp[i], got[i]) == 0;
    if (!same) {
        /* lcs[i][j]: longest common subsequence of exp[i..] and got[j..]; the lists are a few
         * dozen lines, so the table is small. */
        int w = n_got + 1;
        int *lcs = calloc((size_t)(n_exp + 1) * (size_t)w, sizeof(*lcs));
        assert_non_null(lcs);
        for (int i = n_exp - 1; i >= 0; i--)
            for (int j = n_got - 1; j >= 0; j--)
                if (strcmp(exp[i], got[j]) == 0)
                    lcs[i * w + j] = lcs[(i + 1) * w + j + 1] + 1;
                else if (lcs[(i + 1) * w + j] > lcs[i * w + j + 1])
                    lcs[i * w + j] = lcs[(i + 1) * w + j];
                else
                    lcs[i * w + j] = lcs[i * w + j + 1];
        fprintf(out,
                "%s: %d line%s expected, %d got; they differ (-: only expected, +: only got)\n",
                name, n_exp, n_exp == 1 ? "" : "s", n_got);
        int i = 0, j = 0;
        while (i < n_exp || j < n_got) {
            if (i < n_exp && j < n_got && strcmp(exp[i], got[j]) == 0) {
                fprintf(out, "   %s\n", exp[i]);
                i++;
                j++;
            } else if (i < n_exp && (j == n_got || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
                fprintf(out, "-  %s\n", exp[i++]);
            } else {
                fprintf(out, "+  %s\n", got[j++]);
            }
        }
        free(lcs);
    }
    free(exp);
    free(text);
    return same;
}

bool tu_update_mode(const char *var)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return false;
    if (strcmp(v, "1") != 0)
        fail_msg("%s=%s: set it to 1 to rewrite the golden files, or leave it unset", var, v);
    return true;
}

void tu_update_done(const char *var, int n_rewritten, int n_total, const char *names)
{
    if (n_rewritten)
        fail_msg("%s=1 rewrote %d of %d golden files:%s; review `git diff`, then run without it",
                 var, n_rewritten, n_total, names);
    fail_msg("%s=1: all %d golden files already match; run without it", var, n_total);
}

/* ---- a small RFC 4180 reader (see testutil.h) ---------------------------------------------- */

void tu_csv_free(struct tu_csv *c)
{
    for (int i = 0; i < c->rows; i++) {
        for (int j = 0; j < c->ncols[i]; j++)
            free(c->cells[i][j]);
        free(c->cells[i]);
    }
    free(c->cells);
    free(c->ncols);
    memset(c, 0, sizeof(*c));
}

bool tu_csv_shape_is(const struct tu_csv *c, int rows, int cols)
{
    if (c->rows != rows + 1)
        return false;
    for (int i = 0; i < c->rows; i++)
        if (c->ncols[i] != cols + 1)
            return false;
    return true;
}

int tu_csv_read(struct tu_csv *out, const char *path, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    size_t len;
    char *text = tu_read_file(path, &len);
    if (!text) {
        snprintf(why, why_len, "cannot read %s", path);
        return -1;
    }
    /* one field at a time, at most the file's length; a weight matrix's CSV has tens of
       thousands of fields, so each is kept at its own size */
    char *scratch = malloc(len + 1);
    assert_non_null(scratch);
    size_t i = 0;
    int row_cap = 0;
    while (i < len) {
        if (out->rows == row_cap) {
            row_cap = row_cap ? row_cap * 2 : 16;
            out->cells = realloc(out->cells, (size_t)row_cap * sizeof(*out->cells));
            out->ncols = realloc(out->ncols, (size_t)row_cap * sizeof(*out->ncols));
            assert_non_null(out->cells);
            assert_non_null(out->ncols);
        }
        char **fields = NULL;
        int nf = 0, fcap = 0;
        for (;;) { /* one field: read into scratch, then kept at its own size */
            size_t fl = 0;
            if (i < len && text[i] == '"') {
                i++;
                for (;;) {
                    if (i >= len) {
                        snprintf(why, why_len, "%s: unterminated quoted field", path);
                        free(scratch);
                        free(text);
                        return -1;
                    }
                    if (text[i] == '"') {
                        if (i + 1 < len && text[i + 1] == '"') {
                            scratch[fl++] = '"';
                            i += 2;
                            continue;
                        }
                        i++;
                        break;
                    }
                    scratch[fl++] = text[i++];
                }
            } else {
                while (i < len && text[i] != ',' && text[i] != '\r' && text[i] != '\n')
                    scratch[fl++] = text[i++];
            }
            char *field = malloc(fl + 1);
            assert_non_null(field);
            memcpy(field, scratch, fl);
            field[fl] = '\0';
            if (nf == fcap) {
                fcap = fcap ? fcap * 2 : 16;
                fields = realloc(fields, (size_t)fcap * sizeof(*fields));
                assert_non_null(fields);
            }
            fields[nf++] = field;
            if (i < len && text[i] == ',') {
                i++;
                continue;
            }
            break;
        }
        if (i < len && text[i] == '\r') {
            if (i + 1 >= len || text[i + 1] != '\n') {
                snprintf(why, why_len, "%s: bare CR", path);
                free(scratch);
                free(text);
                return -1;
            }
            i += 2;
        } else if (i < len && text[i] == '\n') {
            snprintf(why, why_len, "%s: line end is LF, not CRLF", path);
            free(scratch);
            free(text);
            return -1;
        }
        out->cells[out->rows] = fields;
        out->ncols[out->rows] = nf;
        out->rows++;
    }
    free(scratch);
    free(text);
    return 0;
}

/* ---- work held to limits ------------------------------------------------------------------ */

/* The process's address space in bytes (/proc/self/statm's first field), or 0. */
static size_t address_space(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f && fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    if (f)
        fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

int tu_run_limited(char *out, size_t size, int (*fn)(void *arg, char *out, size_t size), void *arg,
                   int cpu_seconds, size_t mem_bytes)
{
    int fds[2];
    fflush(NULL);
    if (size == 0 || pipe(fds) != 0)
        fail_msg("tu_run_limited: no pipe");
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("tu_run_limited: cannot fork");
    if (pid == 0) {
        close(fds[0]);
        struct rlimit cpu = {(rlim_t)cpu_seconds, (rlim_t)cpu_seconds + 1};
        setrlimit(RLIMIT_CPU, &cpu);
        if (mem_bytes) {
            struct rlimit as = {address_space() + mem_bytes, address_space() + mem_bytes};
            setrlimit(RLIMIT_AS, &as);
        }
        out[0] = '\0';
        int rc = fn(arg, out, size);
        size_t len = strnlen(out, size - 1);
        ssize_t put = write(fds[1], out, len);
        _exit(put == (ssize_t)len ? rc & 0x7f : 126);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < size && (k = read(fds[0], out + got, size - 1 - got)) > 0)
        got += (size_t)k;
    out[got] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            fail_msg("tu_run_limited: waitpid failed");
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WTERMSIG(status) == SIGXCPU)
        snprintf(out, size, "it ran past %d s of CPU time", cpu_seconds);
    else
        snprintf(out, size, "it was killed by signal %d", WTERMSIG(status));
    return -1;
}
