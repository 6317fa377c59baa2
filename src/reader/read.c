/*
 * reader/read.c - reading a session back (reader/read.h): fl_read_session
 * finds the session (reader/discover.c), then reads every channel's files
 * (reader/files.c) line by line into the parser (reader/line.c), whose
 * batches and records go to the caller's callbacks; and the accessors of
 * what the callbacks are given; fl_read_session_prefixed, GPUFlight's
 * log_dir + log_prefix resolved into one fl_read_session.  Memory is one
 * line and one batch at a
 * time, whatever the files' size.  A session that cannot be found or whose
 * files cannot be opened is the only error: everything wrong inside the
 * files is a warning, and the rest is still read.
 */
#include "../util/error.h"
#include "../util/fs.h"
#include "../util/text.h"
#include "read_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ cells */

double fl_cell_real(const fl_cell *c)
{
    if (!c)
        return NAN;
    switch (c->kind) {
    case FL_CELL_INT:
        return (double)c->i;
    case FL_CELL_UINT:
        return (double)c->u;
    case FL_CELL_REAL:
        return c->d;
    default:
        return NAN;
    }
}

int64_t fl_cell_int(const fl_cell *c, int64_t def)
{
    if (!c)
        return def;
    switch (c->kind) {
    case FL_CELL_INT:
        return c->i;
    case FL_CELL_UINT:
        return INT64_MAX;
    case FL_CELL_REAL:
        if (isnan(c->d))
            return def;
        if (c->d >= 9223372036854775807.0)
            return INT64_MAX;
        if (c->d <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)c->d;
    default:
        return def;
    }
}

int fl_batch_col(const fl_batch *b, const char *name)
{
    if (!b || !name)
        return -1;
    for (size_t i = 0; i < b->ncols && i < INT_MAX; i++)
        if (b->cols[i] && strcmp(b->cols[i], name) == 0)
            return (int)i;
    return -1;
}

int fl_batch_time_col(const fl_batch *b, bool duration)
{
    if (!b)
        return -1;
    const fl_type_info *ti = fl_type_get(b->type_id);
    if (ti->batch) {
        int id = duration ? ti->col_duration : ti->col_dt;
        return id < 0 ? -1 : b->col[id];
    }
    /* A batch type the vocabulary does not know: by the names every
     * batch gives these columns. */
    const fl_type_info *k = fl_type_get(FL_T_KERNEL_EVENT_BATCH);
    return fl_batch_col(b, k->cols[duration ? FL_COL_KERNEL_DURATION_NS : FL_COL_KERNEL_DT_NS]);
}

const fl_cell *fl_batch_cell(const fl_batch *b, size_t row, int col)
{
    static const fl_cell null_cell = {.kind = FL_CELL_NULL};
    if (!b || col < 0 || (size_t)col >= b->ncols || row >= b->nrows)
        return &null_cell;
    return &b->cells[row * b->ncols + (size_t)col];
}

void fl_read_opts_init(fl_read_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->session_id = NULL;
    o->dedupe_common = true;
    o->stop_on_signal = true;
}

/* ------------------------------------------------------------ a session */

/* A cap from the environment: a whole number > 0, else 0 (the default). */
gp_status fl_env_count(const char *name, uint64_t *out, gp_error *err)
{
    const char *v = getenv(name);
    *out = 0;
    if (!v || !*v || gp_parse_count(v, out) == 0)
        return GP_OK;
    return gp_error_set(err, GP_ERR_INVALID_ARG,
                        "%s='%.64s%s': use a whole number from 1 (decimal digits only), or unset "
                        "it for the default",
                        name, v, strlen(v) > 64 ? "..." : "");
}

/* The reader's caps from the environment, in fl_read_session's order. */
static const char *const read_env[] = {"GPU_PROFILE_MAX_FILE_LINES", "GPU_PROFILE_MAX_FILE_BYTES",
                                       "GPU_PROFILE_MAX_SESSION_BYTES",
                                       "GPU_PROFILE_MAX_GZIP_RATIO"};

gp_status fl_read_env_check(gp_error *err)
{
    uint64_t n;
    gp_status st = GP_OK;
    for (size_t i = 0; st == GP_OK && i < sizeof read_env / sizeof read_env[0]; i++)
        st = fl_env_count(read_env[i], &n, err);
    return st;
}

/* The reader's handler of lines and events. */
static bool on_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno, const char *msg)
{
    rd *r = ctx;
    r->line = lineno;
    switch (ev) {
    case EV_LINE:
        r->res->lines++;
        if (fl_rd_handle_line(r, line, len) == 0)
            r->records++;
        break;
    case EV_TORN:
        r->res->lines++;
        fl_rd_bad_line(r, "torn last line (%zu bytes without a newline): skipped", len);
        break;
    case EV_LONG:
        r->res->lines++;
        fl_rd_bad_line(r, "line longer than %zu bytes: skipped", RD_MAX_LINE);
        break;
    case EV_GZERR:
        r->res->gz_errors++;
        fl_rd_warn(r, "%s", msg);
        break;
    case EV_CAP:
        r->res->capped_files++;
        fl_rd_warn(r, "%s", msg);
        break;
    case EV_HALT:
        r->res->capped_files++;
        r->res->session_capped = true;
        snprintf(r->res->session_capped_why, sizeof r->res->session_capped_why, "%s:%llu: %s",
                 r->file ? r->file : "?", (unsigned long long)lineno, msg);
        fl_rd_warn(r, "%s", msg);
        break;
    default:
        fl_rd_warn(r, "%s", msg);
        break;
    }
    if (r->cb && r->cb->stop) {
        r->stop_why = r->cb->stop(r->cb->user);
        return r->stop_why != NULL;
    }
    return false;
}

/* Why path could not be opened (errno e), naming it, into m. */
static void cannot_open(char *m, size_t cap, const char *path, int e)
{
    struct stat st;
    bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    snprintf(m, cap, "cannot open %s: %s%s; its events are not read", path, strerror(e),
             link && e == ENOENT ? " (a symbolic link to a file that is not there)" : "");
}

/* The read ended by a stop signal the caller holds pending: an error
 * naming it, and where (the signal stays pending for the caller). */
static gp_status interrupted(const lbuf *lb, const char *where, uint64_t line, gp_error *err)
{
    const char *name = lb->halt_signal == SIGINT    ? "SIGINT"
                       : lb->halt_signal == SIGTERM ? "SIGTERM"
                       : lb->halt_signal == SIGHUP  ? "SIGHUP"
                                                    : "SIGQUIT";
    char at[32] = "";
    if (line)
        snprintf(at, sizeof at, ":%llu", (unsigned long long)line);
    return gp_error_set(err, GP_ERR_IO, "%s%s: the read was interrupted (%s)",
                        fl_path_show(where).text, at, name);
}

/* One file of session t through the parser, then its window's sidecar
 * checked; false when it could not be opened (*first_err: the first such
 * message). */
static bool read_file(rd *r, const target *t, const rd_file *f, lbuf *lb, char *first_err,
                      size_t cap)
{
    r->file = f->path;
    r->line = 0;
    r->channel = f->channel;
    /* A window's sidecar is checked after it is read; a plain window's CRC
     * is taken as it is read, only when there is a sidecar to check. */
    bool check = !t->flat && f->window && fl_rd_has_sidecar(t->where, f);
    rd_crc crc;
    if (fl_rd_read_lines(lb, f->path, f->gz, on_line, r, &r->res->bytes,
                         check && !f->gz ? &crc : NULL) < 0) {
        char m[700];
        if (lb->why)
            snprintf(m, sizeof m,
                     "cannot read %s: it is %s, not a regular file (the reader reads regular "
                     "files only: copy the session's files, or name the session directory)",
                     f->path, lb->why);
        else
            cannot_open(m, sizeof m, f->path, errno);
        r->res->unreadable_files++;
        if (!first_err[0])
            snprintf(first_err, cap, "%s", m);
        fl_rd_warn(r, "%s", m);
        return false;
    }
    r->res->files++;
    if (f->in_tmp)
        r->res->tmp_files++;
    if (check)
        fl_rd_check_sidecar(r, t->where, f, f->gz ? NULL : &crc);
    return true;
}

/* Every channel file of session t, channel by channel, through the parser.
 * GP_ERR_IO when none could be opened. */
static gp_status read_channels(const target *t, const fl_read_opts *o, const fl_read_cb *cb,
                               fl_read_result *res, lbuf *lb, gp_error *err)
{
    rd r;
    memset(&r, 0, sizeof r);
    r.cb = cb;
    r.res = res;
    r.want = t->id[0] ? t->id : NULL;
    r.dedupe = o->dedupe_common;
    int opened = 0;
    char first_err[760] = "";
    /* Discovery's first lines had a budget of their own. */
    lb->session_bytes = lb->gz_in_bytes = lb->gz_out_bytes = 0;
    if (lb->halt == RD_HALT_BUDGET)
        lb->halt = RD_HALT_NONE;
    rd_file *files = fl_rd_all_files(t->where, t->flat);
    if (files && o->one_file_per_channel)
        fl_rd_one_per_channel(files);
    if (!files) {
        fl_rd_free(&r);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "%s: out of memory listing its files",
                            fl_path_show(t->where).text);
    }
    gp_status st = GP_OK;
    for (size_t i = 0; files[i].path && !r.stop_why && !lb->halt; i++)
        opened += read_file(&r, t, &files[i], lb, first_err, sizeof first_err);
    if (!t->flat && !r.stop_why)
        fl_rd_check_losses(&r, t->where);
    if (r.stop_why)
        st = gp_error_set(err, GP_ERR_NO_MEMORY, "%s:%llu: the read was stopped: %s",
                          fl_path_show(r.file).text, (unsigned long long)r.line, r.stop_why);
    else if (lb->halt == RD_HALT_SIGNAL)
        st = interrupted(lb, r.file ? r.file : t->where, r.line, err);
    fl_rd_free_files(files);
    r.file = NULL;
    if (!opened && st == GP_OK)
        st = gp_error_set(err, GP_ERR_IO, "%s: no channel file could be read%s%s",
                          fl_path_show(t->where).text, first_err[0] ? ": " : "", first_err);
    else if (st == GP_OK && res->lines && !r.records && !res->other_session)
        /* Lines, and not one of them a record: not a session's logs at
         * all (random bytes), so no report of an empty session. */
        st = gp_error_set(err, GP_ERR_IO,
                          "%s: nothing was read: none of the %llu lines of its %llu files is a "
                          "GPUFlight record (the warnings say what each is); name a session's "
                          "log directory",
                          t->where, (unsigned long long)res->lines, (unsigned long long)res->files);
    res->crashed = !r.saw_shutdown;
    fl_rd_free(&r);
    return st;
}

gp_status fl_read_session(const char *path, const fl_read_opts *opts, const fl_read_cb *cb,
                          fl_read_result *res, gp_error *err)
{
    fl_read_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    gp_error_clear(err);
    fl_read_opts o;
    fl_read_opts_init(&o);
    if (opts)
        o = *opts;
    const char *want = o.session_id && *o.session_id ? o.session_id : NULL;
    const char *app = o.app && *o.app ? o.app : NULL;
    if (!path || !*path)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no session path given");
    lbuf lb = {0};
    lb.max_lines = o.max_file_lines;
    lb.max_bytes = o.max_file_bytes;
    lb.max_session_bytes = o.max_session_bytes;
    lb.max_gz_ratio = o.max_gzip_ratio;
    lb.stop_on_signal = o.stop_on_signal;
    uint64_t *caps[] = {&lb.max_lines, &lb.max_bytes, &lb.max_session_bytes, &lb.max_gz_ratio};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        gp_status env = *caps[i] ? GP_OK : fl_env_count(read_env[i], caps[i], err);
        if (env != GP_OK)
            return env;
    }
    target t;
    gp_status st = fl_rd_find_session(path, want, app, &t, &lb, err);
    if (lb.halt == RD_HALT_SIGNAL) {
        /* Stopped while looking: what it found or missed says nothing. */
        if (st == GP_OK)
            free(t.where);
        st = interrupted(&lb, path, 0, err);
    } else if (st == GP_OK) {
        snprintf(res->session_id, sizeof res->session_id, "%s", t.id);
        snprintf(res->session_dir, sizeof res->session_dir, "%s", t.where);
        res->flat = t.flat;
        st = read_channels(&t, &o, cb, res, &lb, err);
        free(t.where);
    }
    free(lb.p);
    return st;
}

/* ------------------------------------------------------------ log_prefix */

gp_status fl_read_session_prefixed(const char *log_dir, const char *log_prefix,
                                   const fl_read_opts *opts, const fl_read_cb *cb,
                                   fl_read_result *res, gp_error *err)
{
    if (!log_prefix || !*log_prefix)
        return fl_read_session(log_dir, opts, cb, res, err);
    gp_error_clear(err);
    if (res)
        memset(res, 0, sizeof *res);
    if (!log_dir || !*log_dir)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no log directory given for log_prefix \"%s\"",
                            log_prefix);
    fl_read_opts o;
    fl_read_opts_init(&o);
    if (opts)
        o = *opts;
    char *at = gp_concat3(log_dir, "/", log_prefix);
    if (!at)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "%s: out of memory", fl_path_show(log_dir).text);
    /* (a) and (b) name the files or the directory themselves, which hold
     * the app's sessions whatever name their job_start gives. */
    o.app = NULL;
    struct stat st;
    bool tried = false;
    gp_status rc = GP_OK;
    /* The flat files' prefix, named by one of its files: read as such
     * even when <log_dir>/<log_prefix> is also a directory. */
    rd_file *flat = fl_rd_all_files(at, true);
    if (flat && flat[0].path) {
        rc = fl_read_session(flat[0].path, &o, cb, res, err);
        tried = true;
    }
    fl_rd_free_files(flat);
    if (!tried && stat(at, &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = fl_read_session(at, &o, cb, res, err);
        tried = true;
    }
    if (!tried) {
        o.app = log_prefix;
        gp_error why;
        rc = fl_read_session(log_dir, &o, cb, res, &why);
        if (rc != GP_OK)
            gp_error_set(err, rc,
                         "no session for log_prefix \"%s\" in %s: no %s.<channel>.log files (the "
                         "flat layout), no directory %s, and no session of app \"%s\" read from "
                         "%s: %s",
                         log_prefix, log_dir, at, at, log_prefix, log_dir, why.message);
    }
    free(at);
    return rc;
}
