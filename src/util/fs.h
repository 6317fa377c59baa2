/* util/fs.h - directories and descriptors (fs.c): mkdir -p, the checks
 * that make a shared directory safe to create files in, the checks a
 * library must pass before we load it, and keeping our descriptors off
 * the standard streams. */
#ifndef GP_UTIL_FS_H
#define GP_UTIL_FS_H

#include "gpu_profile.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* mkdir -p: path and its parents (0755); 0, or -1 with errno (ENOTDIR when
 * path exists and is not a directory). */
int fl_make_dirs(const char *path);

/* Why a directory is not a safe place to create our files in. */
typedef enum fl_dir_safety {
    FL_DIR_SAFE = 0,
    FL_DIR_NOT_DIR,         /* not a directory */
    FL_DIR_WORLD_WRITABLE,  /* writable by every user, no sticky bit */
    FL_DIR_OTHERS_WRITABLE, /* another user's, writable by its group, no sticky bit */
} fl_dir_safety;

/* Whether a user other than `me` (and root) can rename or replace the
 * entries we create in the directory st describes: a directory writable by
 * every user without the sticky bit, or one that belongs to another user
 * and is writable by its group without the sticky bit.  (A directory that
 * belongs to another user and only they can write is safe for files opened
 * through a verified descriptor: they can move our entries, never make us
 * write through their links.) */
fl_dir_safety fl_dir_check(const struct stat *st, uid_t me);

/* What a file of mode m that is not a regular file is, for a message
 * refusing it: "a FIFO", "a character device", "a directory", ... */
const char *fl_file_kind(mode_t m);

/* Whether the shared library `path` may be loaded (dlopen runs its
 * constructors, so a file that another user can write is code they run in
 * us): made absolute (realpath, relative to the working directory) into
 * real, then checked: a regular file, owned by us (the effective user) or
 * root, not writable by others, nor by its group unless that group is
 * ours; its directory not one where another user can replace it
 * (fl_dir_check).  GP_OK, or GP_ERR_IO when the file cannot be found
 * ("<path>: No such file or directory"), GP_ERR_INVALID_ARG when it is
 * refused ("<path> is writable by every user: not loaded"), with err
 * filled (NULL accepted; paths through fl_path_show).  Load `real`, never
 * `path`. */
gp_status fl_library_check(const char *path, char *real, size_t real_len, gp_error *err);

/* A library we load with dlopen at the first use of what needs it
 * (libsqlite3, libcurl, libmicrohttpd): the file named by the environment
 * variable env when set, else dflt (*library: which), RTLD_NOW |
 * RTLD_LOCAL, then every syms[i].name resolved into *syms[i].slot - all
 * or none.  The handle, or NULL with *dl_error (dlerror's text) when the
 * file did not load or *missing (the first symbol it lacks, the handle
 * closed) when it did; the caller says what that means for its feature. */
typedef struct gp_dl_sym {
    const char *name;
    void **slot; /* POSIX: a function pointer round-trips through void * */
} gp_dl_sym;
/* The row of prefix's symbol m into the member m of obj, the table of
 * its function pointers: GP_DL_SYM("curl_", curl, easy_init). */
#define GP_DL_SYM(prefix, obj, m)                                                                  \
    {                                                                                              \
        .name = prefix #m, .slot = (void **)&(obj).m                                               \
    }
void *gp_dl_load(const char *env, const char *dflt, const gp_dl_sym *syms, size_t n,
                 const char **library, const char **dl_error, const char **missing);

/* The most bytes a path takes in a message, its NUL included: two paths
 * and the words that name the fix fit a gp_error's message (1024). */
#define FL_PATH_SHOWN_MAX 320

typedef struct fl_path_shown {
    char text[FL_PATH_SHOWN_MAX];
} fl_path_shown;

/* path as a message shows it: itself when it fits, else its head, "..."
 * and its tail (the file name, and as much of its directory as fits), so
 * the message still says where the file is and what it is, and the fix
 * after it is never cut off.  NULL shows as "".  Use it for every path
 * that goes into a gp_error: fl_path_show(p).text lives to the end of the
 * full expression. */
fl_path_shown fl_path_show(const char *path);

/* Opens /dev/null on each of the descriptors 0, 1 and 2 that is closed, so
 * that no file we open later becomes the process's stdin, stdout or stderr
 * (a program started with them closed would otherwise print into it).
 * Returns how many it opened, or -1 (errno) when /dev/null cannot be. */
int fl_fd_reserve_stdio(void);

/* fd itself when it is above 2; else a close-on-exec duplicate >= 3 and fd
 * closed (-1 with errno, fd closed, when no descriptor is left). */
int fl_fd_above_stdio(int fd);

/* The order of a session's channel files, qsort's answer for two of them:
 * by channel, then window, then name (the reader's loss sidecars and the
 * upload's files list them the same way). */
int fl_file_order(int ch_a, uint64_t win_a, const char *name_a, int ch_b, uint64_t win_b,
                  const char *name_b);

#endif /* GP_UTIL_FS_H */
