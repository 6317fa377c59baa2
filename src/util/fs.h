/* util/fs.h - directories and descriptors (fs.c): mkdir -p, the checks
 * that make a shared directory safe to create files in, the checks a
 * library must pass before we load it, and keeping our descriptors off
 * the standard streams. */
#ifndef GP_UTIL_FS_H
#define GP_UTIL_FS_H

#include <stddef.h>
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
 * (fl_dir_check).  0, or -1 with why ("... is writable by other users").
 * Load `real`, never `path`. */
int fl_library_check(const char *path, char *real, size_t real_len, char *why, size_t why_len);

/* Opens /dev/null on each of the descriptors 0, 1 and 2 that is closed, so
 * that no file we open later becomes the process's stdin, stdout or stderr
 * (a program started with them closed would otherwise print into it).
 * Returns how many it opened, or -1 (errno) when /dev/null cannot be. */
int fl_fd_reserve_stdio(void);

/* fd itself when it is above 2; else a close-on-exec duplicate >= 3 and fd
 * closed (-1 with errno, fd closed, when no descriptor is left). */
int fl_fd_above_stdio(int fd);

#endif /* GP_UTIL_FS_H */
