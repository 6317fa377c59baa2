/* util/fs.c - directories and descriptors (fs.h): mkdir -p, the safety of
 * a shared directory, the library files we may load, descriptors kept off
 * 0, 1 and 2. */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fl_make_dirs(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(tmp, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

const char *fl_file_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISDIR(m))
        return "a directory";
    return "not a regular file";
}

fl_dir_safety fl_dir_check(const struct stat *st, uid_t me)
{
    if (!S_ISDIR(st->st_mode))
        return FL_DIR_NOT_DIR;
    if (st->st_mode & S_ISVTX)
        return FL_DIR_SAFE; /* only an entry's owner (and the directory's) may move it */
    if (st->st_mode & S_IWOTH)
        return FL_DIR_WORLD_WRITABLE;
    if (st->st_uid != me && st->st_uid != 0 && (st->st_mode & S_IWGRP))
        return FL_DIR_OTHERS_WRITABLE;
    return FL_DIR_SAFE;
}

int fl_library_check(const char *path, char *real, size_t real_len, char *why, size_t why_len)
{
    char abs[PATH_MAX];
    if (!path || !*path) {
        snprintf(why, why_len, "no library path given");
        return -1;
    }
    if (!realpath(path, abs)) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st, dst;
    if (stat(abs, &st) != 0) {
        snprintf(why, why_len, "%s: %s", abs, strerror(errno));
        return -1;
    }
    uid_t me = geteuid();
    const char *bad = NULL;
    if (!S_ISREG(st.st_mode))
        bad = "is not a regular file";
    else if (st.st_uid != me && st.st_uid != 0)
        bad = "belongs to another user (a library we load must be ours or root's)";
    else if (st.st_mode & S_IWOTH)
        bad = "is writable by every user";
    else if ((st.st_mode & S_IWGRP) && st.st_gid != getegid())
        bad = "is writable by its group, which is not ours";
    if (bad) {
        snprintf(why, why_len, "%s %s: not loaded", abs, bad);
        return -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", abs);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    if (stat(dir, &dst) != 0 || fl_dir_check(&dst, me) != FL_DIR_SAFE) {
        snprintf(why, why_len,
                 "%s is in %s, where other users can replace it (writable by them, no sticky "
                 "bit): not loaded",
                 abs, dir);
        return -1;
    }
    if (strlen(abs) >= real_len) {
        snprintf(why, why_len, "%s: %s", abs, strerror(ENAMETOOLONG));
        return -1;
    }
    memcpy(real, abs, strlen(abs) + 1);
    return 0;
}

int fl_fd_reserve_stdio(void)
{
    int opened = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* Not close-on-exec: a child should find its streams too. */
        int n = open("/dev/null", O_RDWR);
        if (n < 0)
            return -1;
        if (n != fd) {
            /* Another thread took fd meanwhile: it is not ours to fill. */
            close(n);
            continue;
        }
        opened++;
    }
    return opened;
}

int fl_fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return high;
}
