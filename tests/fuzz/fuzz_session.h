/*
 * fuzz_session.h - what the fuzz targets that read a session from disk
 * (fuzz_gzip.c, fuzz_report.c) share: a temporary directory per target,
 * made at the first input and removed at exit, its files written and
 * cleared between inputs, and a read whose callbacks touch everything
 * they are given.  Test code only.
 */
#ifndef GP_FUZZ_SESSION_H
#define GP_FUZZ_SESSION_H

#include "reader/read.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_path[256];

static inline void fuzz_clear(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[600];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

static inline void fuzz_remove_dir(void)
{
    if (fuzz_dir_path[0]) {
        fuzz_clear(fuzz_dir_path);
        rmdir(fuzz_dir_path);
    }
}

/* The target's directory (made at the first call); NULL if it cannot be. */
static inline const char *fuzz_dir(const char *name)
{
    if (fuzz_dir_path[0])
        return fuzz_dir_path;
    const char *base = getenv("TMPDIR");
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/gp_fuzz_%s_XXXXXX",
             base && *base ? base : "/tmp", name);
    if (!mkdtemp(fuzz_dir_path)) {
        fuzz_dir_path[0] = '\0';
        return NULL;
    }
    atexit(fuzz_remove_dir);
    return fuzz_dir_path;
}

static inline void fuzz_put(const char *dir, const char *name, const void *p, size_t n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    if (n)
        fwrite(p, 1, n, f);
    fclose(f);
}

static inline void fuzz_on_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    uint64_t *sum = user;
    *sum += (uint64_t)channel + (uint64_t)t + strlen(type) + json_object_size(rec);
}

static inline void fuzz_on_batch(void *user, const fl_batch *b)
{
    uint64_t *sum = user;
    *sum += strlen(b->type) + b->nrows + b->ncols;
    for (size_t c = 0; c < b->ncols; c++)
        *sum += strlen(b->cols[c]);
    for (size_t i = 0; i < b->nrows * b->ncols; i++)
        *sum += (uint64_t)fl_cell_int(&b->cells[i], 1);
}

static inline void fuzz_on_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    uint64_t *sum = user;
    *sum += strlen(file) + line + strlen(msg);
}

static inline void fuzz_read_session(const char *dir, const fl_read_opts *o, uint64_t *sum)
{
    fl_read_cb cb = {
        .user = sum, .record = fuzz_on_record, .batch = fuzz_on_batch, .warning = fuzz_on_warning};
    fl_read_result res;
    gp_error err;
    if (fl_read_session(dir, o, &cb, &res, &err) != GP_OK)
        *sum += strlen(err.message);
    *sum += res.lines + res.bytes + res.capped_files;
}

#endif /* GP_FUZZ_SESSION_H */
