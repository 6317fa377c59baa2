/*
 * reader/layout.c - the names of a session's files on disk, one place for
 * finding a session and for reading it.  A session directory holds, per
 * channel, published windows <channel>.<N>.log.gz or <channel>.<N>.log
 * (N >= 1), a plain <channel>.log (or .log.gz), and - while GPUFlight
 * writes, or after it crashed - .tmp/<channel>.log and retired windows
 * .tmp/<channel>.<N>.log[.gz]; the older flat layout is
 * <prefix>.<channel>[.<N>].log[.gz] beside each other.
 *
 * A channel's files are read in the order GPUFlight's own analyzer reads
 * them with load_all_rotated: the windows by N, then the plain file; one
 * file per window (the session root's before .tmp/'s, a non-empty one
 * before an empty husk, the uncompressed before the gzipped), then the
 * .tmp/ active file, the newest data.
 */
#include "../util/buf.h"
#include "read_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ names */

/* s is exactly "<channel>.log", "<channel>.log.gz" (*win 0) or
 * "<channel>.<N>.log[.gz]" (*win N >= 1). */
static bool chan_tail(const char *s, int *ch, unsigned long *win, bool *gz)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        size_t n = strlen(fl_channel_name(c));
        if (strncmp(s, fl_channel_name(c), n) != 0 || s[n] != '.')
            continue;
        const char *rest = s + n + 1;
        unsigned long w = 0;
        if (is_digit(*rest)) {
            char *e;
            errno = 0;
            w = strtoul(rest, &e, 10);
            if (errno || w == 0 || *e != '.')
                return false;
            rest = e + 1;
        }
        if (strcmp(rest, "log") != 0 && strcmp(rest, "log.gz") != 0)
            return false;
        *ch = c;
        *win = w;
        *gz = rest[3] == '.';
        return true;
    }
    return false;
}

bool fl_rd_channel_file_name(const char *name)
{
    const char *base = strrchr(name, '/');
    int ch;
    unsigned long w;
    bool gz;
    return chan_tail(base ? base + 1 : name, &ch, &w, &gz);
}

bool fl_rd_flat_name(const char *name, char *prefix, size_t cap, int *chan)
{
    /* The first '.' of the file name after which a channel file's tail
     * follows: the prefix is what comes before it (a directory part kept;
     * the name's part not empty). */
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (const char *d = strchr(base, '.'); d; d = strchr(d + 1, '.')) {
        int ch;
        unsigned long w;
        bool gz;
        if (d == base || !chan_tail(d + 1, &ch, &w, &gz))
            continue;
        size_t n = (size_t)(d - name);
        if (n >= cap)
            return false;
        memcpy(prefix, name, n);
        prefix[n] = '\0';
        if (chan)
            *chan = ch;
        return true;
    }
    return false;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

char *fl_rd_join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

bool fl_rd_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* ------------------------------------------------------------ a walk */

/* A channel file found in a walk. */
typedef struct cand {
    char *path;
    int ch;
    unsigned long win;
    bool gz, in_tmp;
    off_t size;
    int64_t mtime;
} cand;

typedef struct cands {
    cand *v;
    size_t n, cap;
    bool oom;
} cands;

static void cands_free(cands *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].path);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* The channel files of dir into c: with prefix (the flat layout) the
 * files <prefix>.<tail>, else the files <tail>; ch < 0: every channel. */
static void walk(const char *dir, const char *prefix, bool in_tmp, int ch, cands *c)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t pl = prefix ? strlen(prefix) : 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *tail = e->d_name;
        if (prefix) {
            if (strncmp(tail, prefix, pl) != 0 || tail[pl] != '.')
                continue;
            tail += pl + 1;
        }
        cand k = {.in_tmp = in_tmp};
        struct stat st;
        /* Not only regular files: a FIFO or a device by a channel file's
         * name is listed, so that the read refuses it naming it
         * (files.c), rather than the session seeming to lack it. */
        if (!chan_tail(tail, &k.ch, &k.win, &k.gz) || (ch >= 0 && k.ch != ch) ||
            fstatat(dirfd(d), e->d_name, &st, 0) != 0 || S_ISDIR(st.st_mode))
            continue;
        k.size = st.st_size;
        k.mtime = mtime_ns(&st);
        k.path = fl_rd_join(dir, "/", e->d_name);
        if (!k.path || fl_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v) != 0) {
            free(k.path);
            c->oom = true;
            break;
        }
        c->v[c->n++] = k;
    }
    closedir(d);
}

/* Every channel file of a session (directory where, and its .tmp/; or the
 * flat prefix where); ch < 0: every channel. */
static void walk_session(const char *where, bool flat, int ch, cands *c)
{
    if (flat) {
        const char *slash = strrchr(where, '/');
        char *dir = slash ? strndup(where, (size_t)(slash - where)) : strdup(".");
        if (dir)
            walk(*dir ? dir : "/", slash ? slash + 1 : where, false, ch, c);
        else
            c->oom = true;
        free(dir);
        return;
    }
    walk(where, NULL, false, ch, c);
    char *tmp = fl_rd_join(where, "/", RD_TMP_DIR);
    if (tmp)
        walk(tmp, NULL, true, ch, c);
    else
        c->oom = true;
    free(tmp);
}

bool fl_rd_session_dir(const char *dir, int64_t *newest)
{
    cands c = {0};
    walk_session(dir, false, -1, &c);
    bool found = c.n > 0;
    if (newest) {
        struct stat st;
        int64_t t = stat(dir, &st) == 0 ? mtime_ns(&st) : 0;
        for (size_t i = 0; i < c.n; i++)
            if (c.v[i].mtime > t)
                t = c.v[i].mtime;
        *newest = t;
    }
    cands_free(&c);
    return found;
}

bool fl_rd_flat_exists(const char *prefix, int64_t *newest)
{
    cands c = {0};
    walk_session(prefix, true, -1, &c);
    bool found = c.n > 0;
    int64_t t = 0;
    for (size_t i = 0; i < c.n; i++)
        if (c.v[i].mtime > t)
            t = c.v[i].mtime;
    if (newest)
        *newest = t;
    cands_free(&c);
    return found;
}

/* ------------------------------------------------------------ reading order */

/* The slot of a file: its window (1..), then the plain file (0) of the
 * session root, then the .tmp/ active file. */
static int cmp_slot(const cand *x, const cand *y)
{
    int gx = x->win ? 0 : 1 + x->in_tmp, gy = y->win ? 0 : 1 + y->in_tmp;
    if (gx != gy)
        return gx < gy ? -1 : 1;
    if (x->win != y->win)
        return x->win < y->win ? -1 : 1;
    return 0;
}

/* Within a slot, the file to read first: the session root's, a non-empty
 * one, the uncompressed one (GPUFlight's analyzer's rule). */
static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    int s = cmp_slot(x, y);
    if (s)
        return s;
    if (x->in_tmp != y->in_tmp)
        return x->in_tmp ? 1 : -1;
    if ((x->size > 0) != (y->size > 0))
        return x->size > 0 ? -1 : 1;
    if (x->gz != y->gz)
        return x->gz ? 1 : -1;
    return strcmp(x->path, y->path);
}

static int cmp_channel_then_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->ch != y->ch)
        return x->ch < y->ch ? -1 : 1;
    return cmp_cand(a, b);
}

/* The files of c in reading order, one per slot; the list is
 * NULL-path-terminated (NULL when out of memory). */
static rd_file *ordered(cands *c)
{
    if (c->oom) {
        cands_free(c);
        return NULL;
    }
    if (c->n > 1)
        qsort(c->v, c->n, sizeof *c->v, cmp_channel_then_cand);
    rd_file *v = calloc(c->n + 1, sizeof *v);
    if (!v) {
        cands_free(c);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        cand *k = &c->v[i];
        if (i > 0 && c->v[i - 1].ch == k->ch && cmp_slot(&c->v[i - 1], k) == 0)
            continue; /* the slot's other file: not read */
        v[n++] = (rd_file){
            .path = k->path, .channel = k->ch, .window = k->win, .gz = k->gz, .in_tmp = k->in_tmp};
        k->path = NULL;
    }
    cands_free(c);
    return v;
}

rd_file *fl_rd_channel_files(const char *where, bool flat, int ch)
{
    cands c = {0};
    walk_session(where, flat, ch, &c);
    return ordered(&c);
}

rd_file *fl_rd_all_files(const char *where, bool flat)
{
    cands c = {0};
    walk_session(where, flat, -1, &c);
    return ordered(&c);
}

void fl_rd_free_files(rd_file *v)
{
    for (size_t i = 0; v && v[i].path; i++)
        free(v[i].path);
    free(v);
}
