/*
 * reader/layout.c - the names of a session's files on disk, as the
 * recorder writes them: a session directory holds <channel>.log and the
 * gzipped windows <channel>.<N>.log.gz (read in window order, then the
 * plain file); the older flat layout is <prefix>.<channel>.log.  One place
 * knows these names, for finding a session and for reading it.
 */
#include "read_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "<channel>.log" (*win = 0) or "<channel>.<N>.log.gz" (*win = N >= 1). */
static bool chan_file(const char *name, int *ch, unsigned long *win)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        size_t n = strlen(fl_channel_name(c));
        if (strncmp(name, fl_channel_name(c), n) != 0 || name[n] != '.')
            continue;
        const char *rest = name + n + 1;
        if (strcmp(rest, "log") == 0) {
            *ch = c;
            *win = 0;
            return true;
        }
        if (!is_digit(*rest))
            return false;
        char *e;
        errno = 0;
        unsigned long w = strtoul(rest, &e, 10);
        if (errno || w == 0 || strcmp(e, ".log.gz") != 0)
            return false;
        *ch = c;
        *win = w;
        return true;
    }
    return false;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* A session directory: holds a channel file.  *newest: the latest mtime of
 * the directory and its channel files. */
bool fl_rd_session_dir(const char *dir, int64_t *newest)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct stat st;
    int64_t t = 0;
    if (newest && fstat(dirfd(d), &st) == 0)
        t = mtime_ns(&st);
    struct dirent *e;
    while ((e = readdir(d))) {
        int ch;
        unsigned long w;
        if (!chan_file(e->d_name, &ch, &w))
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        found = true;
        if (!newest)
            break;
        if (mtime_ns(&st) > t)
            t = mtime_ns(&st);
    }
    closedir(d);
    if (newest)
        *newest = t;
    return found;
}

char *fl_rd_join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static int cmp_ulong(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return x < y ? -1 : x > y;
}

/* The files of channel ch, in reading order: the windows by number, then
 * the plain file (session directory), or <prefix>.<channel>.log (flat).
 * NULL-terminated, malloc'd; NULL when out of memory. */
char **fl_rd_channel_files(const char *where, bool flat, int ch)
{
    size_t n = 0, cap = 8;
    char **v = calloc(cap + 1, sizeof *v);
    if (!v)
        return NULL;
    if (flat) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(ch));
        char *f = fl_rd_join(where, suffix, "");
        struct stat st;
        if (f && stat(f, &st) == 0 && S_ISREG(st.st_mode))
            v[n++] = f;
        else
            free(f);
        return v;
    }
    unsigned long *w = NULL;
    size_t nw = 0, wcap = 0;
    bool plain = false;
    DIR *d = opendir(where);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            int c;
            unsigned long win;
            if (!chan_file(e->d_name, &c, &win) || c != ch)
                continue;
            if (win == 0) {
                plain = true;
                continue;
            }
            if (nw == wcap) {
                wcap = wcap ? wcap * 2 : 16;
                unsigned long *nwv = realloc(w, wcap * sizeof *nwv);
                if (!nwv)
                    break;
                w = nwv;
            }
            w[nw++] = win;
        }
        closedir(d);
    }
    if (nw)
        qsort(w, nw, sizeof *w, cmp_ulong);
    for (size_t i = 0; i <= nw; i++) {
        char name[64];
        if (i < nw)
            snprintf(name, sizeof name, "/%s.%lu.log.gz", fl_channel_name(ch), w[i]);
        else if (plain)
            snprintf(name, sizeof name, "/%s.log", fl_channel_name(ch));
        else
            break;
        if (n == cap) {
            cap *= 2;
            char **nv = realloc(v, (cap + 1) * sizeof *nv);
            if (!nv)
                break;
            v = nv;
        }
        v[n] = fl_rd_join(where, name, "");
        if (v[n])
            n++;
        v[n] = NULL;
    }
    free(w);
    return v;
}

void fl_rd_free_list(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

bool fl_rd_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The channel files of a session (dir or flat prefix), in order. */
char **fl_rd_all_files(const char *where, bool flat)
{
    char **all = calloc(1, sizeof *all);
    size_t n = 0;
    for (int ch = 0; all && ch < FL_CH_COUNT; ch++) {
        char **v = fl_rd_channel_files(where, flat, ch);
        for (size_t i = 0; v && v[i]; i++) {
            char **na = realloc(all, (n + 2) * sizeof *na);
            if (!na) {
                for (size_t k = i; v[k]; k++)
                    free(v[k]);
                break;
            }
            all = na;
            all[n++] = v[i];
            all[n] = NULL;
        }
        free(v);
    }
    return all;
}

/* A flat prefix of name in dir ("<prefix>.<channel>.log"), or false;
 * *chan: the channel. */
bool fl_rd_flat_name(const char *name, char *prefix, size_t cap, int *chan)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(c));
        size_t a = strlen(name), b = strlen(suffix);
        if (a > b && strcmp(name + a - b, suffix) == 0 && a - b < cap) {
            memcpy(prefix, name, a - b);
            prefix[a - b] = '\0';
            if (chan)
                *chan = c;
            return true;
        }
    }
    return false;
}

/* Whether ch is the first channel that prefix has a file of (each prefix
 * is considered once). */
bool fl_rd_first_flat_channel(const char *dir, const char *prefix, int ch)
{
    for (int c = 0; c < ch; c++) {
        char name[1200];
        snprintf(name, sizeof name, "%s/%s.%s.log", dir, prefix, fl_channel_name(c));
        struct stat st;
        if (stat(name, &st) == 0 && S_ISREG(st.st_mode))
            return false;
    }
    return true;
}

bool fl_rd_flat_exists(const char *prefix, int64_t *newest)
{
    bool found = false;
    int64_t t = 0;
    for (int c = 0; c < FL_CH_COUNT; c++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(c));
        char *f = fl_rd_join(prefix, suffix, "");
        struct stat st;
        if (f && stat(f, &st) == 0 && S_ISREG(st.st_mode)) {
            found = true;
            if (mtime_ns(&st) > t)
                t = mtime_ns(&st);
        }
        free(f);
    }
    if (newest)
        *newest = t;
    return found;
}
