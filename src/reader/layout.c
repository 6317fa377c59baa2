/*
 * reader/layout.c - the names of a session's files on disk, one place for
 * finding a session and for reading it.  A session directory holds, per
 * channel, published windows <channel>.<N>.log.gz or <channel>.<N>.log
 * (N >= 1), a plain <channel>.log (or .log.gz), and - while GPUFlight
 * writes, or after it crashed - .tmp/<channel>.log and retired windows
 * .tmp/<channel>.<N>.log[.gz]; the older flat layout is
 * <prefix>.<channel>[.<N>].log[.gz] beside each other, N from 0 there
 * (GPUFlight 1.3's Python writer starts at <prefix>.<channel>.0.log).
 * Every entry by such a name is listed, whatever it is, so that one the
 * read cannot open is a warning naming it, never a file silently absent.
 *
 * A channel's files are read in the order GPUFlight's own analyzer reads
 * them with load_all_rotated: the windows by N (a flat window 0 after the
 * others), then the plain file; one file per window (the session root's
 * before .tmp/'s, a non-empty one before an empty husk, the uncompressed
 * before the gzipped), then the .tmp/ active file, the newest data.
 */
#include "../util/buf.h"
#include "read_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ names */

/* A channel file's name after its prefix: which channel, window and
 * compression. */
typedef struct tail {
    int ch;
    unsigned long win; /* N >= 1 of <channel>.<N>.log[.gz]; 0: not a window */
    bool gz;
    bool zero; /* <channel>.0.log[.gz]: GPUFlight 1.3's first flat window */
} tail;

/* s is exactly "<channel>.log", "<channel>.log.gz" or
 * "<channel>.<N>.log[.gz]" (N >= 1; N = 0 too when zero_ok: the flat
 * layout, where GPUFlight's Python writer numbers windows from 0). */
static bool chan_tail(const char *s, bool zero_ok, tail *t)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        size_t n = strlen(fl_channel_name(c));
        if (strncmp(s, fl_channel_name(c), n) != 0 || s[n] != '.')
            continue;
        const char *rest = s + n + 1;
        unsigned long w = 0;
        bool zero = false;
        if (is_digit(*rest)) {
            char *e;
            errno = 0;
            w = strtoul(rest, &e, 10);
            zero = w == 0;
            if (errno || (zero && (!zero_ok || e != rest + 1)) || *e != '.')
                return false;
            rest = e + 1;
        }
        if (strcmp(rest, "log") != 0 && strcmp(rest, "log.gz") != 0)
            return false;
        *t = (tail){.ch = c, .win = w, .gz = rest[3] == '.', .zero = zero};
        return true;
    }
    return false;
}

bool fl_rd_channel_file_name(const char *name)
{
    const char *base = strrchr(name, '/');
    tail t;
    return chan_tail(base ? base + 1 : name, false, &t);
}

bool fl_rd_flat_name(const char *name, char *prefix, size_t cap, int *chan)
{
    /* The first '.' of the file name after which a channel file's tail
     * follows: the prefix is what comes before it (a directory part kept;
     * the name's part not empty). */
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (const char *d = strchr(base, '.'); d; d = strchr(d + 1, '.')) {
        tail t;
        if (d == base || !chan_tail(d + 1, true, &t))
            continue;
        size_t n = (size_t)(d - name);
        if (n >= cap)
            return false;
        memcpy(prefix, name, n);
        prefix[n] = '\0';
        if (chan)
            *chan = t.ch;
        return true;
    }
    return false;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
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
    tail t;
    bool in_tmp;
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
        const char *name = e->d_name;
        if (prefix) {
            if (strncmp(name, prefix, pl) != 0 || name[pl] != '.')
                continue;
            name += pl + 1;
        }
        cand k = {.in_tmp = in_tmp};
        struct stat st;
        /* Whatever the entry is, it is listed: a FIFO, a device, a
         * directory, a dangling symlink or a symlink loop by a channel
         * file's name is refused when the read opens it, with a warning
         * naming it and why (read.c), rather than the session seeming to
         * lack that file.  The link's own times when it leads nowhere. */
        if (!chan_tail(name, prefix != NULL, &k.t) || (ch >= 0 && k.t.ch != ch) ||
            (fstatat(dirfd(d), e->d_name, &st, 0) != 0 &&
             fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0))
            continue;
        k.size = S_ISREG(st.st_mode) ? st.st_size : 0;
        k.mtime = mtime_ns(&st);
        k.path = gp_concat3(dir, "/", e->d_name);
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
    char *tmp = gp_concat3(where, "/", RD_TMP_DIR);
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

/* The slot of a file: its window (1..), then the flat layout's window 0,
 * then the plain file of the session root, then the .tmp/ active file
 * (GPUFlight's analyzer reads window 0 with the plain file, after the
 * numbered windows). */
static int slot_group(const cand *x)
{
    return x->t.win ? 0 : x->t.zero ? 1 : 2 + x->in_tmp;
}

static int cmp_slot(const cand *x, const cand *y)
{
    int gx = slot_group(x), gy = slot_group(y);
    if (gx != gy)
        return gx < gy ? -1 : 1;
    if (x->t.win != y->t.win)
        return x->t.win < y->t.win ? -1 : 1;
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
    if (x->t.gz != y->t.gz)
        return x->t.gz ? 1 : -1;
    return strcmp(x->path, y->path);
}

static int cmp_channel_then_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->t.ch != y->t.ch)
        return x->t.ch < y->t.ch ? -1 : 1;
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
        if (i > 0 && c->v[i - 1].t.ch == k->t.ch && cmp_slot(&c->v[i - 1], k) == 0)
            continue; /* the slot's other file: not read */
        v[n++] = (rd_file){.path = k->path,
                           .channel = k->t.ch,
                           .window = k->t.win,
                           .gz = k->t.gz,
                           .in_tmp = k->in_tmp,
                           .zero = k->t.zero};
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

/* The light read's preference within a channel: lower is taken. */
static int light_rank(const rd_file *f)
{
    if (!f->window && !f->zero)
        return f->in_tmp ? 1 : 0;
    return f->zero ? 2 : 3; /* windows come in order: the first is the lowest */
}

void fl_rd_one_per_channel(rd_file *v)
{
    size_t n = 0, i = 0;
    while (v[i].path) {
        size_t best = i, j = i;
        for (; v[j].path && v[j].channel == v[i].channel; j++)
            if (light_rank(&v[j]) < light_rank(&v[best]))
                best = j;
        for (size_t k = i; k < j; k++)
            if (k != best)
                free(v[k].path);
        v[n++] = v[best];
        i = j;
    }
    v[n].path = NULL;
}

void fl_rd_free_files(rd_file *v)
{
    for (size_t i = 0; v && v[i].path; i++)
        free(v[i].path);
    free(v);
}
