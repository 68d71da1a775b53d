/* fsutil: whole-file reads and atomic writes (see fsutil.h).
 *
 * Reads are bounded so a stray huge file (or /dev/zero) cannot exhaust memory. Writes go to a
 * temporary file in the target's folder (rename is only atomic within one file system), are
 * fsync'ed, then renamed over the target; on any failure the temporary file is removed and the
 * target is left as it was.
 */
#define _GNU_SOURCE /* renameat2, syncfs, sync_file_range */
#include "common/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* What a file that is not a regular one is, for a message: "a FIFO". */
static const char *kind_of(mode_t mode)
{
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISDIR(mode)  ? "a folder"
                            : "not a file";
}

int attn_fsutil_open_regular(const char *path, struct stat *st, struct diag *err)
{
    /* O_NONBLOCK: open(2) of a FIFO waits for a writer, for ever; of a regular file it changes
       nothing, and it is cleared below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return attn_diag_file(err, path, "cannot open: %s", strerror(errno));
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return attn_diag_file(err, path, "cannot read: %s", strerror(e));
    }
    if (S_ISDIR(st->st_mode)) {
        close(fd);
        return attn_diag_file(err, path, "is a directory, not a file");
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return attn_diag_file(err, path, "not a regular file (%s)", kind_of(st->st_mode));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int attn_fsutil_check_output(const char *path, struct diag *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return 0; /* new (or unreachable: writing it says why), or a file to replace */
    if (S_ISDIR(st.st_mode))
        return attn_diag_file(err, path, "is a folder; give a file name");
    return attn_diag_file(err, path, "not a regular file (%s): attnscope writes only files",
                          kind_of(st.st_mode));
}

int attn_fsutil_read_file(char **out, size_t *len, const char *path, size_t max_bytes,
                          struct diag *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    struct stat st;
    int fd = attn_fsutil_open_regular(path, &st, err);
    if (fd < 0)
        return -1;
    if ((unsigned long long)st.st_size > max_bytes) {
        close(fd);
        return attn_diag_file(err, path, "file is too large (%lld bytes, the limit is %zu)",
                              (long long)st.st_size, max_bytes);
    }

    /* st_size is only a hint (a file growing, /proc): read until EOF, but never past
       max_bytes. */
    size_t cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1;
    size_t n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return attn_diag_file(err, path, "out of memory");
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
                return attn_diag_file(err, path, "out of memory");
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
            return attn_diag_file(err, path, "cannot read: %s", strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max_bytes) {
            free(buf);
            close(fd);
            return attn_diag_file(err, path, "file is too large (more than %zu bytes)", max_bytes);
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int attn_fsutil_mkdir_p(const char *dir, struct diag *err)
{
    size_t n = strlen(dir);
    if (n == 0)
        return attn_diag_file(err, dir, "empty folder name");
    char *p = malloc(n + 1);
    if (!p)
        return attn_diag_file(err, dir, "out of memory");
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
            int rc = attn_diag_file(err, p, "cannot create folder: %s", strerror(e));
            free(p);
            return rc;
        }
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            int rc = attn_diag_file(err, p, "exists and is not a folder");
            free(p);
            return rc;
        }
        p[i] = saved;
    }
    free(p);
    return 0;
}

bool attn_fsutil_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

bool attn_fsutil_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

#ifdef ATTNSCOPE_TEST_HOOKS
static int fail_countdown;

void attn_fsutil_fail_nth_write(int n)
{
    fail_countdown = n;
}

static bool injected_failure(void)
{
    return fail_countdown > 0 && --fail_countdown == 0;
}
#else
static bool injected_failure(void)
{
    return false;
}
#endif

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

static mode_t target_mode_mask(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return mask;
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

/* What write_atomic and write_new share once their file is open: write_fn's content, then
 * flushed; the test hook's full disk first. Returns 0, or -1 with err naming path (write_fn's
 * own message kept). */
static int write_body(FILE *f, const char *path,
                      int (*write_fn)(FILE *f, void *ctx, struct diag *err), void *ctx,
                      struct diag *err)
{
    struct diag werr;
    attn_diag_clear(&werr);
    if (injected_failure())
        return attn_diag_file(err, path, "cannot write: %s", strerror(ENOSPC));
    if (write_fn(f, ctx, &werr) != 0) {
        if (err) {
            *err = werr;
            if (!err->file[0])
                snprintf(err->file, sizeof(err->file), "%s", path);
            if (!err->msg[0])
                snprintf(err->msg, sizeof(err->msg), "cannot write");
        }
        return -1;
    }
    if (fflush(f) != 0 || ferror(f))
        return attn_diag_file(err, path, "cannot write: %s", strerror(errno));
    return 0;
}

int attn_fsutil_write_atomic(const char *path, bool overwrite,
                             int (*write_fn)(FILE *f, void *ctx, struct diag *err), void *ctx,
                             struct diag *err)
{
    if (!overwrite && attn_fsutil_exists(path))
        return attn_diag_file(err, path, "already exists; not replacing it");
    /* Renaming over a FIFO or a device (/dev/null as root) would replace it with a file. */
    if (attn_fsutil_check_output(path, err) != 0)
        return -1;

    /* The temporary file: "<dir>/.<base>.XXXXXX", hidden and next to the target. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    if (!*base)
        return attn_diag_file(err, path, "is a folder name, not a file name");
    size_t tlen = dir_len + 1 + strlen(base) + 8;
    char *tmp = malloc(tlen);
    if (!tmp)
        return attn_diag_file(err, path, "out of memory");
    snprintf(tmp, tlen, "%.*s.%s.XXXXXX", (int)dir_len, path, base);

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return attn_diag_file(err, path, "cannot create a temporary file: %s", strerror(e));
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return attn_diag_file(err, path, "cannot open a temporary file: %s", strerror(e));
    }

    int rc = write_body(f, path, write_fn, ctx, err);
    if (rc == 0 && fsync(fileno(f)) != 0) {
        rc = attn_diag_file(err, path, "cannot sync to disk: %s", strerror(errno));
    } else if (rc == 0 && fchmod(fileno(f), target_mode(path)) != 0) {
        rc = attn_diag_file(err, path, "cannot set permissions: %s", strerror(errno));
    }
    if (fclose(f) != 0 && rc == 0)
        rc = attn_diag_file(err, path, "cannot write: %s", strerror(errno));

    if (rc == 0) {
        if (overwrite) {
            if (rename(tmp, path) != 0)
                rc = attn_diag_file(err, path, "cannot replace: %s", strerror(errno));
        } else {
            /* link() fails when path appeared meanwhile, so a file created between the check
             * above and now is never clobbered. Some file systems have no hard links: fall
             * back to a last check and rename. */
            if (link(tmp, path) == 0) {
                unlink(tmp);
            } else if (errno == EEXIST) {
                rc = attn_diag_file(err, path, "already exists; not replacing it");
            } else if (attn_fsutil_exists(path)) {
                rc = attn_diag_file(err, path, "already exists; not replacing it");
            } else if (rename(tmp, path) != 0) {
                rc = attn_diag_file(err, path, "cannot create: %s", strerror(errno));
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

int attn_fsutil_write_new(const char *path, int (*write_fn)(FILE *f, void *ctx, struct diag *err),
                          void *ctx, struct diag *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return attn_diag_file(err, path, "cannot create: %s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(path);
        return attn_diag_file(err, path, "cannot open: %s", strerror(e));
    }
    int rc = write_body(f, path, write_fn, ctx, err);
#ifdef SYNC_FILE_RANGE_WRITE
    /* Start writing it to disk now, without waiting: the export goes on computing and writing
       while the disk works, and the one sync before the swap (dirswap_commit) finds most of it
       done. */
    if (rc == 0)
        sync_file_range(fileno(f), 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
    if (fclose(f) != 0 && rc == 0)
        rc = attn_diag_file(err, path, "cannot write: %s", strerror(errno));
    if (rc != 0)
        unlink(path);
    return rc;
}

/* Removes name in the folder dfd and everything below it. It allocates nothing of its own (no
 * path is built: each folder is opened relative to its parent), so a failed export is cleaned
 * up even when memory has run out. It recurses, a stack frame and an open folder a level, so it
 * goes at most REMOVE_DEPTH_MAX deep (an export is 4): a deeper tree is not an export's, and
 * is left as it is (-1, ENOTEMPTY) rather than overflow the stack or run out of descriptors. */
enum { REMOVE_DEPTH_MAX = 64 };
static int remove_at(int dfd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dfd, name, 0);
    /* A folder being removed may have been made read-only (an old export's head1/): open it
     * up first, as the owner may. */
    if (depth >= REMOVE_DEPTH_MAX) {
        errno = ENOTEMPTY;
        return -1;
    }
    if (faccessat(dfd, name, R_OK | W_OK | X_OK, 0) != 0)
        fchmodat(dfd, name, (st.st_mode & 07777) | 0700, 0);
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (remove_at(dirfd(d), e->d_name, depth + 1) != 0)
            rc = -1;
    }
    closedir(d);
    if (unlinkat(dfd, name, AT_REMOVEDIR) != 0)
        return -1;
    return rc;
}

int attn_fsutil_remove_tree(const char *path)
{
    return remove_at(AT_FDCWD, path, 0);
}

/* The folder holding target ("." when it has none, "/" for "/name") and its base name. */
static void split_target(const char *target, char *dir, size_t size, const char **base)
{
    const char *slash = strrchr(target, '/');
    *base = slash ? slash + 1 : target;
    if (!slash)
        snprintf(dir, size, ".");
    else
        snprintf(dir, size, "%.*s", slash == target ? 1 : (int)(slash - target), target);
}

/* Removes ".<base>.attnscope-<pid>-*" folders beside target whose process is gone. */
static void remove_stale(const char *target)
{
    char dir[4096], prefix[512];
    const char *base;
    split_target(target, dir, sizeof(dir), &base);
    int plen = snprintf(prefix, sizeof(prefix), ".%s.attnscope-", base);
    if (plen < 0 || (size_t)plen >= sizeof(prefix))
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (end == e->d_name + plen || *end != '-' || pid <= 0)
            continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* ours, or another export still running */
        char path[4096 + 512];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        attn_fsutil_remove_tree(path);
    }
    closedir(d);
}

int attn_fsutil_dirswap_begin(struct fsutil_dirswap *tx, const char *target, struct diag *err)
{
    memset(tx, 0, sizeof(*tx));
    size_t n = strlen(target);
    while (n > 1 && target[n - 1] == '/')
        n--; /* "out/" is "out" */
    if (n == 0 || n >= sizeof(tx->target) - 64)
        return attn_diag_file(err, target, n ? "the folder name is too long" : "empty folder name");
    memcpy(tx->target, target, n);
    tx->target[n] = '\0';
    const char *base = strrchr(tx->target, '/');
    base = base ? base + 1 : tx->target;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return attn_diag_file(err, target,
                              "export writes a folder of its own: give its name (like out/export)");
    char dir[4096];
    split_target(tx->target, dir, sizeof(dir), &base);
    if (attn_fsutil_mkdir_p(dir, err) != 0) /* the parent, as mkdir -p would */
        return -1;
    remove_stale(tx->target);
    int len = snprintf(tx->tmp, sizeof(tx->tmp), "%.*s.%s.attnscope-%ld-XXXXXX",
                       (int)(base - tx->target), tx->target, base, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof(tx->tmp))
        return attn_diag_file(err, target, "the folder name is too long");
    if (!mkdtemp(tx->tmp))
        return attn_diag_file(err, tx->target, "cannot create a temporary folder beside it: %s",
                              strerror(errno));
    return 0;
}

void attn_fsutil_dirswap_abort(struct fsutil_dirswap *tx)
{
    if (tx->tmp[0])
        attn_fsutil_remove_tree(tx->tmp);
    tx->tmp[0] = '\0';
}

int attn_fsutil_dirswap_commit(struct fsutil_dirswap *tx, struct diag *err)
{
    /* Everything on disk before the folder becomes visible under its name. */
    int fd = open(tx->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        attn_fsutil_dirswap_abort(tx);
        return attn_diag_file(err, tx->target, "cannot sync the export to disk: %s", strerror(e));
    }
    close(fd);
    chmod(tx->tmp, 0777 & ~target_mode_mask());
    struct stat st;
    bool existed = lstat(tx->target, &st) == 0;
    if (!existed) {
        if (rename(tx->tmp, tx->target) != 0) {
            int e = errno;
            attn_fsutil_dirswap_abort(tx);
            return attn_diag_file(err, tx->target, "cannot create: %s", strerror(e));
        }
        tx->tmp[0] = '\0';
    } else if (renameat2(AT_FDCWD, tx->tmp, AT_FDCWD, tx->target, RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS) {
            int e = errno;
            attn_fsutil_dirswap_abort(tx);
            return attn_diag_file(err, tx->target, "cannot replace: %s", strerror(e));
        }
        /* No exchange on this file system: move the old one aside, then the new one in. */
        char old[sizeof(tx->tmp)];
        if (snprintf(old, sizeof(old), "%.4088s-old", tx->tmp) >= (int)sizeof(old)) {
            attn_fsutil_dirswap_abort(tx);
            return attn_diag_file(err, tx->target, "the folder name is too long");
        }
        if (rename(tx->target, old) != 0) {
            int e = errno;
            attn_fsutil_dirswap_abort(tx);
            return attn_diag_file(err, tx->target, "cannot replace: %s", strerror(e));
        }
        if (rename(tx->tmp, tx->target) != 0) {
            int e = errno;
            rename(old, tx->target);
            attn_fsutil_dirswap_abort(tx);
            return attn_diag_file(err, tx->target, "cannot replace: %s", strerror(e));
        }
        memcpy(tx->tmp, old, sizeof(old));
    }
    /* tmp now holds the previous folder (or nothing). */
    const char *slash = strrchr(tx->target, '/');
    sync_dir_of(tx->target, slash ? (size_t)(slash - tx->target) + 1 : 0);
    if (tx->tmp[0] && attn_fsutil_remove_tree(tx->tmp) != 0)
        tx->left_old = true;
    else
        tx->tmp[0] = '\0';
    return 0;
}

char *attn_fsutil_absolute(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return NULL;
    char *real = realpath(dir, NULL);
    free(dir);
    if (!real)
        return errno == ENOMEM ? NULL : strdup(path);
    size_t n = strlen(real) + strlen(name) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", name);
    free(real);
    return out;
}
