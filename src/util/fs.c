/* util/fs.c - directories and descriptors (fs.h): mkdir -p, the safety of
 * a shared directory, the library files we may load, descriptors kept off
 * 0, 1 and 2. */
#include "fs.h"
#include "error.h"

#include <dlfcn.h>
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

fl_path_shown fl_path_show(const char *path)
{
    fl_path_shown out;
    const size_t room = sizeof out.text - 1, dots = 3, head_min = 64;
    size_t n = path ? strlen(path) : 0;
    if (n <= room) {
        memcpy(out.text, path ? path : "", n + 1);
        return out;
    }
    /* The head says where the file lives, the tail what it is; the
     * middle gives way.  A file name too long for the room keeps its end. */
    const char *slash = strrchr(path, '/');
    size_t tail = slash ? n - (size_t)(slash - path) : 0;
    if (tail == 0 || tail > room - dots - head_min)
        tail = room - dots - head_min;
    size_t head = room - dots - tail;
    memcpy(out.text, path, head);
    memcpy(out.text + head, "...", dots);
    memcpy(out.text + head + dots, path + n - tail, tail + 1);
    return out;
}

gp_status fl_library_check(const char *path, char *real, size_t real_len, gp_error *err)
{
    char abs[PATH_MAX];
    if (!path || !*path)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no library path given");
    if (!realpath(path, abs))
        return gp_error_set(err, GP_ERR_IO, "%s: %s", fl_path_show(path).text, strerror(errno));
    struct stat st, dst;
    if (stat(abs, &st) != 0)
        return gp_error_set(err, GP_ERR_IO, "%s: %s", fl_path_show(abs).text, strerror(errno));
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
    if (bad)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "%s %s: not loaded", fl_path_show(abs).text,
                            bad);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", abs);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    if (stat(dir, &dst) != 0 || fl_dir_check(&dst, me) != FL_DIR_SAFE)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "%s is in %s, where other users can replace it (writable by them, no "
                            "sticky bit): not loaded",
                            fl_path_show(abs).text, fl_path_show(dir).text);
    if (strlen(abs) >= real_len)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "%s: %s", fl_path_show(abs).text,
                            strerror(ENAMETOOLONG));
    memcpy(real, abs, strlen(abs) + 1);
    return GP_OK;
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

void *gp_dl_load(const char *env, const char *dflt, const gp_dl_sym *syms, size_t n,
                 const char **library, const char **dl_error, const char **missing)
{
    const char *name = env ? getenv(env) : NULL;
    *library = name && *name ? name : dflt;
    *dl_error = *missing = NULL;
    void *h = dlopen(*library, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        *dl_error = e ? e : "not found";
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            *missing = syms[i].name;
            dlclose(h);
            return NULL;
        }
    }
    return h;
}

int fl_file_order(int ch_a, uint64_t win_a, const char *name_a, int ch_b, uint64_t win_b,
                  const char *name_b)
{
    if (ch_a != ch_b)
        return ch_a < ch_b ? -1 : 1;
    if (win_a != win_b)
        return win_a < win_b ? -1 : 1;
    return strcmp(name_a, name_b);
}
