/*
 * upload/session.c - the sessions an upload sends, as they are on disk:
 * which directories are sessions, their channel files in sending order
 * (per channel: published windows by number, the plain file, a live
 * session's .tmp/ file last), each file's contents gzipped for the wire,
 * and the cursor file that lets a re-run resume.  Reads only; the cursor
 * is the one file written, whole or not at all.
 */
#include "upload_int.h"
#include "../util/error.h"
#include "../util/fs.h"
#include "../util/text.h"
#include "../wire/vocab.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static void session_clear(up_session *s);

/* dir/name, malloc'd; NULL when out of memory. */
static char *join(const char *a, const char *b)
{
    return gp_concat3(a, "/", b);
}

/* "<channel>.log", "<channel>.<N>.log", either + ".gz": its channel and
 * window; false for any other name. */
static bool channel_name(const char *name, int *ch, long *win, bool *gz)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        const char *cn = fl_channel_name(c);
        size_t k = strlen(cn);
        if (strncmp(name, cn, k) != 0 || name[k] != '.')
            continue;
        const char *p = name + k + 1;
        long w = LONG_MAX - 1;
        if (*p >= '0' && *p <= '9') {
            char *end;
            errno = 0;
            w = strtol(p, &end, 10);
            if (errno || *end != '.' || w < 0 || w >= LONG_MAX - 1)
                return false;
            p = end + 1;
        }
        if (strcmp(p, "log") == 0)
            *gz = false;
        else if (strcmp(p, "log.gz") == 0)
            *gz = true;
        else
            return false;
        *ch = c;
        *win = w;
        return true;
    }
    return false;
}

static int cmp_file(const void *a, const void *b)
{
    const up_file *x = a, *y = b;
    /* window >= 0 (channel_name), so unsigned keeps its order. */
    return fl_file_order(x->channel, (uint64_t)x->window, x->name, y->channel, (uint64_t)y->window,
                         y->name);
}

static bool add_file(up_session *s, size_t *cap, const char *rel, const char *path, int ch,
                     long win, bool gz, uint64_t size)
{
    if (s->n_files == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        up_file *v = realloc(s->files, nc * sizeof *v);
        if (!v)
            return false;
        s->files = v;
        *cap = nc;
    }
    up_file *f = &s->files[s->n_files];
    f->name = strdup(rel);
    f->path = strdup(path);
    if (!f->name || !f->path) {
        free(f->name);
        free(f->path);
        return false;
    }
    f->channel = ch;
    f->window = win;
    f->gz = gz;
    f->size = size;
    s->n_files++;
    return true;
}

/* The channel files of dir (in_tmp: GPUFlight's .tmp/, window LONG_MAX). */
static bool scan_dir(up_session *s, size_t *cap, const char *dir, bool in_tmp)
{
    DIR *d = opendir(dir);
    if (!d)
        return true; /* no .tmp/, or a directory gone: no files */
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        int ch;
        long win;
        bool gz;
        /* Dot files: the cursor, GPUFlight's sidecars and its lock (which
         * a finished GPUFlight session keeps too). */
        if (e->d_name[0] == '.')
            continue;
        if (!channel_name(e->d_name, &ch, &win, &gz))
            continue;
        char *path = join(dir, e->d_name);
        struct stat st;
        if (!path) {
            ok = false;
        } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            char rel[512];
            snprintf(rel, sizeof rel, "%s%s", in_tmp ? ".tmp/" : "", e->d_name);
            ok = add_file(s, cap, rel, path, ch, in_tmp ? LONG_MAX : win, gz, (uint64_t)st.st_size);
            /* A file still in .tmp/: GPUFlight has not published it, the
             * session is live or crashed. */
            s->has_tmp |= in_tmp;
        }
        free(path);
    }
    closedir(d);
    return ok;
}

/* 1: dir is a session (has channel files, here or in .tmp/), 0: not, -1:
 * no memory. */
static int load_session(const char *dir, const char *base, up_session *s)
{
    memset(s, 0, sizeof *s);
    size_t cap = 0;
    char *tmp = join(dir, ".tmp");
    bool ok = tmp && scan_dir(s, &cap, dir, false) && scan_dir(s, &cap, tmp, true);
    free(tmp);
    if (ok && s->n_files == 0) {
        session_clear(s);
        return 0;
    }
    s->dir = strdup(dir);
    s->base = strdup(base);
    if (!ok || !s->dir || !s->base) {
        session_clear(s);
        return -1;
    }
    qsort(s->files, s->n_files, sizeof *s->files, cmp_file);
    return 1;
}

static const char *base_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b && b[1] ? b + 1 : p;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The subdirectories of dir, sorted (no memory: NULL, *n = SIZE_MAX). */
static char **subdirs(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p = join(dir, e->d_name);
        struct stat st;
        if (p && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 16;
                char **nv = realloc(v, cap * sizeof *nv);
                if (!nv) {
                    free(p);
                    break;
                }
                v = nv;
            }
            v[(*n)++] = p;
            continue;
        }
        free(p);
    }
    closedir(d);
    if (*n)
        qsort(v, *n, sizeof *v, cmp_name);
    return v;
}

gpufl_status up_find_sessions(const char *log_path, const char *want, up_session **out, size_t *n,
                              gpufl_error *err)
{
    *out = NULL;
    *n = 0;
    struct stat st;
    int sr = stat(log_path, &st);
    if (sr != 0 || !S_ISDIR(st.st_mode))
        return fl_error_set(err, GPUFL_ERR_IO,
                            "log path \"%s\" is not a directory (%s): give a session directory "
                            "or the log directory that holds sessions",
                            log_path, sr != 0 ? strerror(errno) : "not a directory");
    up_session one;
    int r = load_session(log_path, base_of(log_path), &one);
    if (r < 0)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory listing \"%s\"", log_path);
    if (r > 0) {
        *out = malloc(sizeof one);
        if (!*out) {
            session_clear(&one);
            return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory");
        }
        **out = one;
        *n = 1;
        return GPUFL_OK;
    }
    size_t nd;
    char **dirs = subdirs(log_path, &nd);
    up_session *v = nd ? calloc(nd, sizeof *v) : NULL;
    gpufl_status st_ = nd && !v ? GPUFL_ERR_NO_MEMORY : GPUFL_OK;
    for (size_t i = 0; i < nd && st_ == GPUFL_OK; i++) {
        if (want && *want && strcmp(base_of(dirs[i]), want) != 0)
            continue;
        r = load_session(dirs[i], base_of(dirs[i]), &v[*n]);
        if (r < 0)
            st_ = GPUFL_ERR_NO_MEMORY;
        else if (r > 0)
            (*n)++;
    }
    for (size_t i = 0; i < nd; i++)
        free(dirs[i]);
    free(dirs);
    if (st_ != GPUFL_OK) {
        up_sessions_free(v, *n);
        *n = 0;
        return fl_error_set(err, st_, "out of memory listing \"%s\"", log_path);
    }
    if (*n == 0) {
        free(v);
        if (want && *want)
            return fl_error_set(err, GPUFL_ERR_IO,
                                "no session \"%s\" in \"%s\": check the session id (the "
                                "session directory's name) and the log path",
                                want, log_path);
        return fl_error_set(err, GPUFL_ERR_IO,
                            "no session in \"%s\" (no <channel>.log files in it or in its "
                            "subdirectories): give a session directory or a log directory",
                            log_path);
    }
    *out = v;
    return GPUFL_OK;
}

static void session_clear(up_session *s)
{
    for (size_t j = 0; j < s->n_files; j++) {
        free(s->files[j].name);
        free(s->files[j].path);
    }
    free(s->files);
    free(s->dir);
    free(s->base);
    memset(s, 0, sizeof *s);
}

void up_sessions_free(up_session *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        session_clear(&v[i]);
    free(v);
}
