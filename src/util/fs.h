/* util/fs.h - directories (fs.c). */
#ifndef GP_UTIL_FS_H
#define GP_UTIL_FS_H

/* mkdir -p: path and its parents (0755); 0, or -1 with errno (ENOTDIR when
 * path exists and is not a directory). */
int fl_make_dirs(const char *path);

#endif /* GP_UTIL_FS_H */
