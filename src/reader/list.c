/*
 * reader/list.c - the sessions a log directory holds and each one's
 * job_start, for a caller that groups sessions into runs (report/runs.c).
 *
 * Promises: only first lines are read (the writer puts job_start first in
 * every channel file), so listing costs a few lines per session whatever
 * the sessions' sizes; a directory that cannot be read is an error naming
 * it, a session without a readable job_start is still listed.
 */
#include "../util/error.h"
#include "read_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jsscan {
    sbuf key; /* fl_probe_type's scratch */
    json_t *job;
} jsscan;

static bool on_first_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno,
                          const char *msg)
{
    (void)msg;
    jsscan *s = ctx;
    char type[RD_TYPE_MAX];
    int tl = ev == EV_LINE ? fl_probe_type(&s->key, line, type) : -1;
    if (tl > 0 && fl_type_of(type, (size_t)tl) == FL_T_JOB_START &&
        !fl_rd_too_many_values(line, len))
        s->job = json_loadb(line, len, 0, NULL);
    (void)lineno;
    return true; /* the first line only */
}

json_t *fl_read_job_start(const char *session_dir)
{
    jsscan s;
    memset(&s, 0, sizeof s);
    lbuf lb = {0};
    rd_file *files = fl_rd_all_files(session_dir, false);
    for (size_t i = 0; files && files[i].path && !s.job; i++)
        fl_rd_read_lines(&lb, files[i].path, files[i].gz, on_first_line, &s, NULL, NULL);
    fl_rd_free_files(files);
    free(s.key.p);
    free(lb.p);
    return s.job;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static gp_status push(char ***v, size_t *n, size_t *cap, char *s, gp_error *err)
{
    if (!s)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory listing sessions");
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        char **nv = realloc(*v, c * sizeof *nv);
        if (!nv) {
            free(s);
            return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory listing sessions");
        }
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = s;
    return GP_OK;
}

gp_status fl_read_list_sessions(const char *path, char ***dirs, size_t *n, gp_error *err)
{
    *dirs = NULL;
    *n = 0;
    size_t cap = 0;
    if (fl_rd_session_dir(path, NULL))
        return push(dirs, n, &cap, strdup(path), err);
    DIR *d = opendir(path);
    if (!d)
        return gp_error_set(err, GP_ERR_IO,
                            "cannot read the log directory '%s': %s; give a log directory or a "
                            "session directory",
                            path, strerror(errno));
    gp_status st = GP_OK;
    struct dirent *e;
    while (st == GP_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *sub = gp_concat3(path, "/", e->d_name);
        if (!sub) {
            st = gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory listing sessions");
        } else if (fl_rd_session_dir(sub, NULL)) {
            st = push(dirs, n, &cap, sub, err);
        } else {
            free(sub);
        }
    }
    closedir(d);
    if (st == GP_OK && *n > 1)
        qsort(*dirs, *n, sizeof **dirs, by_name);
    if (st != GP_OK) {
        fl_read_free_list(*dirs, *n);
        *dirs = NULL;
        *n = 0;
    }
    return st;
}

void fl_read_free_list(char **dirs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
}

int64_t fl_read_session_mtime(const char *session_dir)
{
    int64_t t = 0;
    return fl_rd_session_dir(session_dir, &t) ? t : 0;
}
