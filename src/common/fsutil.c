/* fsutil: whole-file reads and atomic writes (see fsutil.h).
 *
 * Reads are bounded so a stray huge file (or /dev/zero) cannot exhaust memory. Writes go to a
 * temporary file in the target's folder (rename is only atomic within one file system), are
 * fsync'ed, then renamed over the target; on any failure the temporary file is removed and the
 * target is left as it was.
 */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Every error names the file, so diag_print shows "path: message". */
static int fs_error(struct diag *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fs_error(struct diag *err, const char *path, const char *fmt, ...)
{
    if (!err)
        return -1;
    diag_clear(err);
    snprintf(err->file, sizeof(err->file), "%s", path);
    va_list ap;
    va_start(ap, fmt);
    diag_vset(err, "", fmt, ap);
    va_end(ap);
    return -1;
}

int fsutil_read_file(char **out, size_t *len, const char *path, size_t max_bytes, struct diag *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fs_error(err, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fs_error(err, path, "cannot read: %s", strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return fs_error(err, path, "is a directory, not a file");
    }
    if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max_bytes) {
        close(fd);
        return fs_error(err, path, "file is too large (%lld bytes, the limit is %zu)",
                        (long long)st.st_size, max_bytes);
    }

    /* st_size is only a hint (pipes, /proc): read until EOF, but never past max_bytes. */
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096;
    size_t n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return fs_error(err, path, "out of memory");
    }
    for (;;) {
        if (n + 1 >= cap) {
            size_t ncap = cap * 2;
            if (ncap > max_bytes + 2)
                ncap = max_bytes + 2;
            char *nb = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                close(fd);
                return fs_error(err, path, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            return fs_error(err, path, "cannot read: %s", strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max_bytes) {
            free(buf);
            close(fd);
            return fs_error(err, path, "file is too large (more than %zu bytes)", max_bytes);
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int fsutil_mkdir_p(const char *dir, struct diag *err)
{
    size_t n = strlen(dir);
    if (n == 0)
        return fs_error(err, dir, "empty folder name");
    char *p = malloc(n + 1);
    if (!p)
        return fs_error(err, dir, "out of memory");
    memcpy(p, dir, n + 1);
    /* Create each prefix ending before a '/', then the whole path. */
    for (size_t i = 1; i <= n; i++) {
        if (i < n && p[i] != '/')
            continue;
        if (i < n && p[i - 1] == '/')
            continue; /* "a//b" */
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            int rc = fs_error(err, p, "cannot create folder: %s", strerror(e));
            free(p);
            return rc;
        }
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            int rc = fs_error(err, p, "exists and is not a folder");
            free(p);
            return rc;
        }
        p[i] = saved;
    }
    free(p);
    return 0;
}

bool fsutil_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Syncs the folder holding path so the rename itself survives a crash (best effort). */
static void sync_dir_of(const char *path, size_t dir_len)
{
    char *dir = dir_len ? strndup(path, dir_len) : strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* A replaced file keeps its permissions (a private 0600 file stays private); a new one gets
 * 0644 less the umask, as open(2) would give it. */
static mode_t target_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return st.st_mode & 07777;
    mode_t mask = umask(0);
    umask(mask);
    return 0644 & ~mask;
}

int fsutil_write_atomic(const char *path, bool overwrite,
                        int (*write_fn)(FILE *f, void *ctx, struct diag *err), void *ctx,
                        struct diag *err)
{
    if (!overwrite && fsutil_exists(path))
        return fs_error(err, path, "already exists; not replacing it");

    /* The temporary file: "<dir>/.<base>.XXXXXX", hidden and next to the target. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    if (!*base)
        return fs_error(err, path, "is a folder name, not a file name");
    size_t tlen = dir_len + 1 + strlen(base) + 8;
    char *tmp = malloc(tlen);
    if (!tmp)
        return fs_error(err, path, "out of memory");
    snprintf(tmp, tlen, "%.*s.%s.XXXXXX", (int)dir_len, path, base);

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fs_error(err, path, "cannot create a temporary file: %s", strerror(e));
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return fs_error(err, path, "cannot open a temporary file: %s", strerror(e));
    }

    struct diag werr;
    diag_clear(&werr);
    int rc = 0;
    if (write_fn(f, ctx, &werr) != 0) {
        if (err) {
            *err = werr;
            if (!err->file[0])
                snprintf(err->file, sizeof(err->file), "%s", path);
            if (!err->msg[0])
                snprintf(err->msg, sizeof(err->msg), "cannot write");
        }
        rc = -1;
    } else if (fflush(f) != 0 || ferror(f)) {
        rc = fs_error(err, path, "cannot write: %s", strerror(errno));
    } else if (fsync(fileno(f)) != 0) {
        rc = fs_error(err, path, "cannot sync to disk: %s", strerror(errno));
    } else if (fchmod(fileno(f), target_mode(path)) != 0) {
        rc = fs_error(err, path, "cannot set permissions: %s", strerror(errno));
    }
    if (fclose(f) != 0 && rc == 0)
        rc = fs_error(err, path, "cannot write: %s", strerror(errno));

    if (rc == 0) {
        if (overwrite) {
            if (rename(tmp, path) != 0)
                rc = fs_error(err, path, "cannot replace: %s", strerror(errno));
        } else {
            /* link() fails when path appeared meanwhile, so a file created between the check
             * above and now is never clobbered. Some file systems have no hard links: fall
             * back to a last check and rename. */
            if (link(tmp, path) == 0) {
                unlink(tmp);
            } else if (errno == EEXIST) {
                rc = fs_error(err, path, "already exists; not replacing it");
            } else if (fsutil_exists(path)) {
                rc = fs_error(err, path, "already exists; not replacing it");
            } else if (rename(tmp, path) != 0) {
                rc = fs_error(err, path, "cannot create: %s", strerror(errno));
            }
        }
    }
    if (rc != 0)
        unlink(tmp);
    else
        sync_dir_of(path, dir_len);
    free(tmp);
    return rc;
}
