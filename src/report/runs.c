/*
 * report/runs.c - the runs of a set of log directories (runs.h): each
 * session's job_start (reader/list.c: first lines only), the sessions
 * grouped by run_id, the run shown, and the figures of its sessions, each
 * read on its own through run.h's summary.
 *
 * Promises: a session whose job_start cannot be read is still listed (a
 * run of its own, named by its directory); the same session given twice
 * (two paths naming one directory) is counted once; a rank, local rank or
 * world size job_start does not give stays unknown, never 0.
 */
#include "runs.h"
#include "maps.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "../util/error.h"
#include "run.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void fl_runs_init(fl_runs *rs)
{
    memset(rs, 0, sizeof *rs);
}

static void session_free(fl_runs_session *s)
{
    free(s->dir);
    free(s->session_id);
    free(s->run_id);
    free(s->host);
    free(s->app);
    free(s->kind);
    free(s->rank_source);
    free(s->busiest);
    free(s->busiest_op);
    free(s->busiest_line);
}

void fl_runs_free(fl_runs *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        session_free(&rs->s[i]);
    free(rs->s);
    for (size_t i = 0; i < rs->ng; i++) {
        free(rs->g[i].run_id);
        free(rs->g[i].idx);
    }
    free(rs->g);
    free(rs->dev);
    memset(rs, 0, sizeof *rs);
}

/* ----------------------------------------------------------- job_start */

static char *dup_str(fl_runs *rs, const json_t *v)
{
    return fl_dup_str(json_string_value(v), &rs->oom);
}

/* A whole number >= 0 (a rank, a pid); false for null, absent or any other value. */
static bool count_of(const json_t *v, int64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

static void take_job(fl_runs *rs, fl_runs_session *s, const json_t *js)
{
    s->session_id = dup_str(rs, json_object_get(js, "session_id"));
    s->run_id = dup_str(rs, json_object_get(js, "run_id"));
    s->host = dup_str(rs, json_object_get(js, "hostname"));
    s->app = dup_str(rs, json_object_get(js, "app"));
    s->kind = dup_str(rs, json_object_get(js, "session_kind"));
    s->rank_source = dup_str(rs, json_object_get(js, "rank_source"));
    s->have_pid = count_of(json_object_get(js, "pid"), &s->pid);
    s->have_rank = count_of(json_object_get(js, "rank"), &s->rank);
    s->have_local_rank = count_of(json_object_get(js, "local_rank"), &s->local_rank);
    s->have_world_size = count_of(json_object_get(js, "world_size"), &s->world_size);
    int64_t ts, mono;
    s->have_start = count_of(json_object_get(js, "ts_ns"), &ts);
    s->start_ns = s->have_start ? (uint64_t)ts : 0;
    s->have_mono =
        s->have_start && count_of(json_object_get(js, "monotonic_ns"), &mono) && mono > 0;
    s->wall_minus_mono_ns = s->have_mono ? ts - mono : 0;
}

static bool seen(const fl_runs *rs, const char *dir, const char *session_id)
{
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->s[i].dir, dir) == 0 ||
            (session_id && rs->s[i].session_id && strcmp(rs->s[i].session_id, session_id) == 0))
            return true;
    return false;
}

static gp_status add_session(fl_runs *rs, const char *dir)
{
    if (fl_grow((void **)&rs->s, &rs->cap, rs->n + 1, sizeof *rs->s) != 0)
        return GP_ERR_NO_MEMORY;
    fl_runs_session s;
    memset(&s, 0, sizeof s);
    s.mtime = fl_read_session_mtime(dir);
    json_t *js = fl_read_job_start(dir);
    if (js)
        take_job(rs, &s, js);
    json_decref(js);
    if (!s.session_id) { /* named by its directory */
        const char *base = strrchr(dir, '/');
        s.session_id = strdup(base ? base + 1 : dir);
    }
    s.dir = strdup(dir);
    if (!s.dir || !s.session_id || seen(rs, dir, s.session_id)) {
        bool oom = !s.dir || !s.session_id;
        session_free(&s);
        return oom ? GP_ERR_NO_MEMORY : GP_OK;
    }
    rs->s[rs->n++] = s;
    return GP_OK;
}

/* ------------------------------------------------------------ grouping */

int fl_runs_rank_order(const fl_runs_session *a, const fl_runs_session *b)
{
    if (a->have_rank != b->have_rank)
        return a->have_rank ? -1 : 1;
    if (a->have_rank && a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return 0;
}

static int by_rank(const void *pa, const void *pb, void *user)
{
    const fl_runs *rs = user;
    const fl_runs_session *a = &rs->s[*(const size_t *)pa];
    const fl_runs_session *b = &rs->s[*(const size_t *)pb];
    int c = fl_runs_rank_order(a, b);
    return c ? c : strcmp(a->session_id, b->session_id);
}

/* Written later, as the reader picks a log directory's latest session. */
static bool newer(const fl_runs_session *a, const fl_runs_session *b)
{
    return a->mtime > b->mtime || (a->mtime == b->mtime && strcmp(a->dir, b->dir) > 0);
}

static fl_runs_group *group_of(fl_runs *rs, const char *run_id)
{
    if (run_id)
        for (size_t i = 0; i < rs->ng; i++)
            if (rs->g[i].run_id && strcmp(rs->g[i].run_id, run_id) == 0)
                return &rs->g[i];
    fl_runs_group *v = realloc(rs->g, (rs->ng + 1) * sizeof *v);
    if (!v)
        return NULL;
    rs->g = v;
    fl_runs_group *g = &rs->g[rs->ng];
    memset(g, 0, sizeof *g);
    if (run_id && !(g->run_id = strdup(run_id)))
        return NULL;
    rs->ng++;
    return g;
}

static gp_status group(fl_runs *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        fl_runs_group *g = group_of(rs, rs->s[i].run_id);
        size_t *idx = g ? realloc(g->idx, (g->n + 1) * sizeof *idx) : NULL;
        if (!idx)
            return GP_ERR_NO_MEMORY;
        g->idx = idx;
        g->idx[g->n++] = i;
        if (rs->s[i].start_ns > g->latest_ns)
            g->latest_ns = rs->s[i].start_ns;
        if (g->n == 1 || newer(&rs->s[i], &rs->s[g->newest]))
            g->newest = i;
    }
    for (size_t i = 0; i < rs->ng; i++)
        qsort_r(rs->g[i].idx, rs->g[i].n, sizeof *rs->g[i].idx, by_rank, rs);
    return GP_OK;
}

gp_status fl_runs_scan(fl_runs *rs, const char *const *paths, size_t n, gp_error *err)
{
    rs->paths = n;
    for (size_t p = 0; p < n; p++) {
        char **dirs;
        size_t nd;
        gp_status st = fl_read_list_sessions(paths[p], &dirs, &nd, err);
        if (st != GP_OK)
            return st;
        for (size_t i = 0; i < nd && st == GP_OK; i++)
            st = add_session(rs, dirs[i]);
        fl_read_free_list(dirs, nd);
        if (st != GP_OK || rs->oom)
            return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory listing the sessions of %s",
                                paths[p]);
    }
    if (rs->n == 0)
        return gp_error_set(err, GP_ERR_IO,
                            "no session in %s%s: give a log directory (the --log-dir of the run) "
                            "or a session directory",
                            n ? paths[0] : "(no path)", n > 1 ? " and the others" : "");
    if (group(rs) != GP_OK)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory grouping sessions into runs");
    return GP_OK;
}

/* ------------------------------------------------------------- picking */

/* What exists, for a message: "run R (N sessions), ..." at most 8. */
static void list_runs(const fl_runs *rs, bool sessions, char *buf, size_t cap)
{
    size_t used = 0, shown = 0, total = sessions ? rs->n : rs->ng;
    buf[0] = '\0';
    for (size_t i = 0; i < total && shown < 8 && used + 1 < cap; i++, shown++) {
        int k;
        if (sessions)
            k = snprintf(buf + used, cap - used, "%s%s", shown ? ", " : "", rs->s[i].session_id);
        else if (rs->g[i].run_id)
            k = snprintf(buf + used, cap - used, "%s%s (%zu session%s)", shown ? ", " : "",
                         rs->g[i].run_id, rs->g[i].n, rs->g[i].n == 1 ? "" : "s");
        else
            continue;
        used += k > 0 ? (size_t)k : 0;
    }
    if (total > shown && used + 1 < cap)
        snprintf(buf + used, cap - used, " and %zu more", total - shown);
    if (!buf[0])
        snprintf(buf, cap, "none");
}

gp_status fl_runs_pick(fl_runs *rs, const char *run_id, const char *session_id, gp_error *err)
{
    char have[1024];
    if (run_id && *run_id) {
        for (size_t i = 0; i < rs->ng; i++)
            if (rs->g[i].run_id && strcmp(rs->g[i].run_id, run_id) == 0) {
                rs->shown = i;
                rs->picked_by = "run";
                return GP_OK;
            }
        list_runs(rs, false, have, sizeof have);
        return gp_error_set(err, GP_ERR_INVALID_ARG, "--run '%s': no such run; the runs: %s",
                            run_id, have);
    }
    if (session_id && *session_id) {
        for (size_t i = 0; i < rs->ng; i++)
            for (size_t k = 0; k < rs->g[i].n; k++)
                if (strcmp(rs->s[rs->g[i].idx[k]].session_id, session_id) == 0) {
                    rs->shown = i;
                    rs->picked_by = "session";
                    return GP_OK;
                }
        list_runs(rs, true, have, sizeof have);
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "--session '%s': no such session; the sessions: %s", session_id, have);
    }
    size_t best = 0;
    for (size_t i = 1; i < rs->ng; i++) {
        if (newer(&rs->s[rs->g[i].newest], &rs->s[rs->g[best].newest]))
            best = i;
    }
    rs->shown = best;
    rs->picked_by = "most_recent";
    return GP_OK;
}

/* ------------------------------------------------------------- figures */

/* NCCL's kernels: the name starts with "nccl" (after a "void " return type). */
static bool is_nccl(const char *name)
{
    if (strncmp(name, "void ", 5) == 0)
        name += 5;
    return strncasecmp(name, "nccl", 4) == 0;
}

static void figures_of(fl_runs *rs, fl_runs_session *s)
{
    /* A Monitor session (gpu-profile's own, a process that did not trace)
     * has no kernels to count: its figures stay unknown, not 0. */
    if (s->kind && strcmp(s->kind, "monitor") == 0)
        return;
    fl_run r;
    fl_run_init(&r);
    r.want_lines = true;
    s->read = fl_run_add_session(&r, s->dir, NULL) == GP_OK;
    fl_run_finish(&r);
    s->kernels = r.kernel_launches;
    s->gpu_ns = r.kernel_ns;
    for (int k = 0; k < FL_RUN_COPY_KINDS; k++) {
        s->copies += r.copies[k].count;
        s->copy_bytes += r.copies[k].bytes;
        s->copy_ns += r.copies[k].time_ns;
    }
    s->syncs = r.syncs.count;
    s->sync_ns = r.syncs.time_ns;
    for (size_t i = 0; i < r.n_kernels; i++)
        if (is_nccl(r.kernels[i].name))
            s->nccl_ns += r.kernels[i].total_ns;
    if (r.n_kernels > 0) {
        s->busiest = strdup(r.kernels[0].name);
        s->busiest_ns = r.kernels[0].total_ns;
        rs->oom |= !s->busiest;
    }
    if (r.n_ops > 0) {
        s->busiest_op = strdup(r.ops[0].name);
        s->busiest_op_ns = r.ops[0].total_ns;
        rs->oom |= !s->busiest_op;
    }
    if (r.n_lines > 0) {
        s->busiest_line = strdup(r.lines[0].name);
        s->busiest_line_ns = r.lines[0].total_ns;
        rs->oom |= !s->busiest_line;
    }
    rs->oom |= r.oom != 0;
    fl_run_free(&r);
}

/* ------------------------------------------------------ device telemetry */

static fl_runs_device *device_of(fl_runs *rs, int64_t id)
{
    for (size_t i = 0; i < rs->n_dev; i++)
        if (rs->dev[i].id == id)
            return &rs->dev[i];
    if (rs->n_dev >= 64) /* a device id per row: bounded whatever the file says */
        return NULL;
    fl_runs_device *v = realloc(rs->dev, (rs->n_dev + 1) * sizeof *v);
    if (!v) {
        rs->oom = true;
        return NULL;
    }
    rs->dev = v;
    fl_runs_device *d = &rs->dev[rs->n_dev++];
    memset(d, 0, sizeof *d);
    d->id = id;
    return d;
}

/* A cell as a finite number >= 0; false for null or anything else. */
static bool cell_val(const fl_batch *b, size_t row, int col, double *out)
{
    if (col < 0)
        return false;
    double v = fl_cell_real(fl_batch_cell(b, row, col));
    if (!(v >= 0.0 && v < 1e300))
        return false;
    *out = v;
    return true;
}

static void on_device_rows(void *user, const fl_batch *b)
{
    fl_runs *rs = user;
    if (b->type_id != FL_T_DEVICE_METRIC_BATCH)
        return;
    int ci = fl_batch_colid(b, FL_COL_DEVMETRIC_DEVICE_ID);
    int cu = fl_batch_colid(b, FL_COL_DEVMETRIC_GPU_UTIL);
    int cm = fl_batch_colid(b, FL_COL_DEVMETRIC_USED_MIB);
    int cp = fl_batch_colid(b, FL_COL_DEVMETRIC_POWER_MW);
    for (size_t r = 0; r < b->nrows; r++) {
        double id, v;
        fl_runs_device *d = cell_val(b, r, ci, &id) ? device_of(rs, (int64_t)id) : NULL;
        if (!d)
            continue;
        d->samples++;
        if (cell_val(b, r, cu, &v)) {
            d->util_sum += v;
            d->util_max = d->util_n++ == 0 || v > d->util_max ? v : d->util_max;
        }
        if (cell_val(b, r, cm, &v)) {
            d->used_max_mib = d->used_n++ == 0 || v > d->used_max_mib ? v : d->used_max_mib;
        }
        if (cell_val(b, r, cp, &v)) {
            d->power_sum_mw += v;
            d->power_n++;
        }
    }
}

static void telemetry_of(fl_runs *rs, const fl_runs_session *s)
{
    fl_read_cb cb = {.user = rs, .batch = on_device_rows};
    fl_read_opts opts;
    fl_read_opts_init(&opts);
    opts.stop_on_signal = false;
    fl_read_result res;
    if (fl_read_session(s->dir, &opts, &cb, &res, NULL) == GP_OK)
        rs->telemetry = s;
}

void fl_runs_figures(fl_runs *rs)
{
    if (rs->shown >= rs->ng)
        return;
    const fl_runs_group *g = &rs->g[rs->shown];
    for (size_t k = 0; k < g->n; k++)
        figures_of(rs, &rs->s[g->idx[k]]);
    for (size_t k = 0; k < g->n && !rs->telemetry; k++) {
        const fl_runs_session *s = &rs->s[g->idx[k]];
        if (s->kind && strcmp(s->kind, "monitor") == 0)
            telemetry_of(rs, s);
    }
}

const fl_runs_session *fl_runs_primary(const fl_runs *rs, const char *session_id)
{
    if (rs->shown >= rs->ng || rs->g[rs->shown].n == 0)
        return NULL;
    const fl_runs_group *g = &rs->g[rs->shown];
    const fl_runs_session *best = &rs->s[g->idx[0]];
    for (size_t k = 0; k < g->n; k++) {
        const fl_runs_session *s = &rs->s[g->idx[k]];
        if (session_id && *session_id) {
            if (strcmp(s->session_id, session_id) == 0)
                return s;
            continue;
        }
        if (s->gpu_ns > best->gpu_ns) /* idx is by rank: a tie keeps the lower */
            best = s;
    }
    return best;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool fl_runs_median_gpu(const fl_runs *rs, uint64_t *median_ns)
{
    if (rs->shown >= rs->ng)
        return false;
    const fl_runs_group *g = &rs->g[rs->shown];
    uint64_t *v = malloc((g->n ? g->n : 1) * sizeof *v);
    if (!v)
        return false;
    size_t n = 0;
    for (size_t k = 0; k < g->n; k++)
        if (rs->s[g->idx[k]].kernels > 0)
            v[n++] = rs->s[g->idx[k]].gpu_ns;
    if (n > 0) {
        qsort(v, n, sizeof *v, by_u64);
        /* The mean of the middle two without overflow, rounded down. */
        uint64_t lo = v[(n - 1) / 2], hi = v[n / 2];
        *median_ns = lo + (hi - lo) / 2;
    }
    free(v);
    return n > 0;
}
