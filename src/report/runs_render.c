/*
 * report/runs_render.c - the report's run section (FL_REPORT_SECTIONS row
 * "run"), text and JSON, from the runs the report was given
 * (fl_report_set_runs; runs.h): the run shown and why, one row per
 * process (rank), the stragglers, how the hosts' clocks line up, and the
 * other runs the directories hold.
 *
 * Promises: both renderings say the same figures; an unknown value is
 * "n/a" in the text and null in the JSON, never 0 (rank 0 is a rank).
 */
#include "json_write.h"
#include "report_int.h"
#include "runs.h"
#include "units.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fl_report_set_runs(fl_report *r, const struct fl_runs *runs, const char *session_id)
{
    if (!r)
        return;
    r->runs = runs && runs->shown < runs->ng ? runs : NULL;
    r->runs_session = session_id;
}

static const fl_runs_group *shown(const fl_report *r)
{
    return r->runs ? &r->runs->g[r->runs->shown] : NULL;
}

static const fl_runs_session *member(const fl_report *r, size_t k)
{
    return &r->runs->s[shown(r)->idx[k]];
}

/* How far gpu_ns is off the median, in percent (signed). */
static double off_pct(uint64_t gpu_ns, uint64_t median_ns)
{
    return median_ns ? ((double)gpu_ns - (double)median_ns) * 100.0 / (double)median_ns : 0.0;
}

static bool straggles(const fl_runs_session *s, bool have_median, uint64_t median_ns)
{
    return have_median && s->kernels > 0 && median_ns > 0 &&
           fabs(off_pct(s->gpu_ns, median_ns)) > FL_RUNS_STRAGGLER_PCT;
}

/* The sessions of one host: how many, and the spread of their wall clock's
 * offset to the (shared) monotonic clock; false when fewer than two say it. */
static bool host_spread(const fl_report *r, const char *host, size_t *n, int64_t *spread_ns)
{
    const fl_runs_group *g = shown(r);
    int64_t lo = 0, hi = 0;
    size_t with = 0;
    *n = 0;
    for (size_t k = 0; k < g->n; k++) {
        const fl_runs_session *s = member(r, k);
        if (!((!host && !s->host) || (host && s->host && strcmp(host, s->host) == 0)))
            continue;
        (*n)++;
        if (!s->have_mono)
            continue;
        if (!with || s->wall_minus_mono_ns < lo)
            lo = s->wall_minus_mono_ns;
        if (!with || s->wall_minus_mono_ns > hi)
            hi = s->wall_minus_mono_ns;
        with++;
    }
    *spread_ns = hi - lo;
    return with >= 2;
}

/* Whether session k is the first of its host in the run (hosts listed once). */
static bool first_of_host(const fl_report *r, size_t k)
{
    const char *h = member(r, k)->host;
    for (size_t i = 0; i < k; i++) {
        const char *o = member(r, i)->host;
        if ((!h && !o) || (h && o && strcmp(h, o) == 0))
            return false;
    }
    return true;
}

/* A host's figures, taken at its first session k (hosts listed once). */
typedef struct host_fig {
    const char *host;
    size_t n;
    int64_t spread_ns;
    bool ok; /* spread_ns known */
} host_fig;

static bool host_at(const fl_report *r, size_t k, host_fig *h)
{
    if (!first_of_host(r, k))
        return false;
    h->host = member(r, k)->host;
    h->ok = host_spread(r, h->host, &h->n, &h->spread_ns);
    return true;
}

static size_t n_hosts(const fl_report *r)
{
    size_t n = 0;
    for (size_t k = 0; k < shown(r)->n; k++)
        n += first_of_host(r, k);
    return n;
}

/* ---------------------------------------------------------------- text */

static void text_opt(fl_buf *b, bool ok, int64_t v, int width)
{
    if (ok)
        fl_buf_printf(b, "%*lld", width, (long long)v);
    else
        fl_buf_printf(b, "%*s", width, "n/a");
}

static void text_dur_col(fl_buf *b, bool ok, uint64_t ns, int width)
{
    fl_buf d = {0};
    if (ok)
        fl_dur_text(&d, ns);
    fl_buf_printf(b, "%*s", width, ok && d.p ? d.p : "n/a");
    fl_buf_free(&d);
}

static void text_row(fl_buf *b, const fl_runs_session *s, int by)
{
    fl_buf_puts(b, "  ");
    text_opt(b, s->have_rank, s->rank, 4);
    text_opt(b, s->have_local_rank, s->local_rank, 6);
    text_opt(b, s->have_pid, s->pid, 9);
    fl_buf_puts(b, "  ");
    size_t before = b->len;
    fl_put_line(b, s->host ? s->host : "n/a", 16);
    size_t w = b->len - before;
    fl_buf_printf(b, "%*s", w < 16 ? (int)(16 - w) : 1, "");
    text_dur_col(b, s->read, s->gpu_ns, 12);
    text_opt(b, s->read, (int64_t)s->kernels, 9);
    text_opt(b, s->read, (int64_t)s->copies, 8);
    text_dur_col(b, s->read, s->sync_ns, 12);
    if (s->gpu_ns)
        fl_buf_printf(b, "%7.1f%%  ", (double)s->nccl_ns * 100.0 / (double)s->gpu_ns);
    else
        fl_buf_printf(b, "%8s  ", "n/a");
    const char *busiest_by = by == FL_BY_OP ? s->busiest_op : s->busiest_line;
    if (by != FL_BY_KERNEL && busiest_by)
        fl_put_line(b, busiest_by, 60);
    else if (by != FL_BY_KERNEL && s->busiest)
        fl_buf_puts(b, by == FL_BY_OP ? "(no op)" : "(no stack)");
    else if (s->busiest)
        fl_put_line(b, s->busiest, 60);
    else
        fl_buf_printf(b, "(%s session, no kernels)", s->kind ? s->kind : "n/a");
    fl_buf_puts(b, "\n");
}

static void text_others(const fl_report *r, fl_buf *b)
{
    const fl_runs *rs = r->runs;
    if (rs->ng < 2)
        return;
    fl_buf_printf(b, "  other runs (--run ID or --session ID to pick):\n");
    for (size_t i = 0; i < rs->ng; i++) {
        if (i == rs->shown)
            continue;
        const fl_runs_group *g = &rs->g[i];
        fl_buf_puts(b, "    ");
        if (g->run_id) {
            fl_buf_puts(b, "run ");
            fl_put_line(b, g->run_id, 64);
            fl_buf_printf(b, "  %zu session%s", g->n, g->n == 1 ? "" : "s");
        } else {
            fl_buf_puts(b, "session ");
            fl_put_line(b, rs->s[g->idx[0]].session_id, 64);
            fl_buf_puts(b, "  (no run id)");
        }
        if (g->latest_ns) {
            fl_buf_puts(b, ", started ");
            fl_time_text(b, g->latest_ns);
        }
        fl_buf_puts(b, "\n");
    }
}

static void text_clock(const fl_report *r, fl_buf *b)
{
    const fl_runs_group *g = shown(r);
    size_t hosts = n_hosts(r);
    fl_buf_printf(b, "  clocks: each host's wall clock (CLOCK_REALTIME) as recorded; ");
    if (hosts > 1)
        fl_buf_printf(b, "skew between the %zu hosts unknown (not measured: NTP's)\n", hosts);
    else
        fl_buf_puts(b, "one host, no skew between hosts\n");
    for (size_t k = 0; k < g->n; k++) {
        host_fig h;
        if (!host_at(r, k, &h))
            continue;
        fl_buf_puts(b, "    ");
        fl_put_line(b, h.host ? h.host : "n/a", 40);
        fl_buf_printf(b, ": %zu session%s, wall clock vs monotonic offset spread ", h.n,
                      h.n == 1 ? "" : "s");
        text_dur_col(b, h.ok, h.ok ? (uint64_t)h.spread_ns : 0, 0);
        fl_buf_puts(b, "\n");
    }
}

static bool is_monitor(const fl_runs_session *s)
{
    return s->kind && strcmp(s->kind, "monitor") == 0;
}

static void text_devices(const fl_report *r, fl_buf *b)
{
    const fl_runs *rs = r->runs;
    if (!rs->telemetry)
        return;
    fl_buf_puts(b, "  devices (gpu-profile's session ");
    fl_put_line(b, rs->telemetry->session_id, 64);
    fl_buf_puts(b, rs->n_dev ? "):\n" : "): no device rows\n");
    for (size_t i = 0; i < rs->n_dev; i++) {
        const fl_runs_device *d = &rs->dev[i];
        fl_buf_printf(b, "    GPU %lld  %llu sample%s, util ", (long long)d->id,
                      (unsigned long long)d->samples, d->samples == 1 ? "" : "s");
        if (d->util_n)
            fl_buf_printf(b, "mean %.1f%% max %.0f%%", d->util_sum / (double)d->util_n,
                          d->util_max);
        else
            fl_buf_puts(b, "n/a");
        fl_buf_puts(b, ", memory max ");
        if (d->used_n)
            fl_bytes_text(b, d->used_max_mib * 1048576.0);
        else
            fl_buf_puts(b, "n/a");
        if (d->power_n)
            fl_buf_printf(b, ", power mean %.1f W", d->power_sum_mw / (double)d->power_n / 1000.0);
        else
            fl_buf_puts(b, ", power n/a");
        fl_buf_puts(b, "\n");
    }
}

void fl_text_sec_run(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const fl_runs_group *g = shown(r);
    if (!g)
        return;
    const fl_runs *rs = r->runs;
    fl_buf_puts(b, "\nrun  ");
    fl_put_line(b, g->run_id ? g->run_id : "n/a (a session of no run)", 64);
    fl_buf_printf(b, "  %zu session%s on %zu host%s; shown: %s\n", g->n, g->n == 1 ? "" : "s",
                  n_hosts(r), n_hosts(r) == 1 ? "" : "s",
                  strcmp(rs->picked_by, "run") == 0       ? "--run"
                  : strcmp(rs->picked_by, "session") == 0 ? "--session"
                  : rs->ng > 1                            ? "the most recent run"
                                                          : "the only run");
    /* --by op|line: each process's busiest framework op or source line
     * instead of kernel */
    fl_buf_printf(b,
                  "  rank local      pid  host                GPU time  kernels  copies   sync "
                  "wait     NCCL  busiest %s\n",
                  r->by == FL_BY_OP     ? "op"
                  : r->by == FL_BY_LINE ? "line"
                                        : "kernel");
    for (size_t k = 0; k < g->n; k++)
        text_row(b, member(r, k), r->by);
    uint64_t median = 0;
    bool have_median = fl_runs_median_gpu(rs, &median);
    for (size_t k = 0; k < g->n; k++) {
        const fl_runs_session *s = member(r, k);
        if (!straggles(s, have_median, median))
            continue;
        fl_buf_puts(b, "  straggler: rank ");
        text_opt(b, s->have_rank, s->rank, 0);
        fl_buf_printf(b, " (pid %lld) GPU time ", (long long)s->pid);
        fl_dur_text(b, s->gpu_ns);
        fl_buf_printf(b, ", %+.1f%% vs the median ", off_pct(s->gpu_ns, median));
        fl_dur_text(b, median);
        fl_buf_printf(b, " (threshold %.0f%%)\n", FL_RUNS_STRAGGLER_PCT);
    }
    text_devices(r, b);
    text_clock(r, b);
    const fl_runs_session *p = fl_runs_primary(rs, r->runs_session);
    bool one = r->runs_session && *r->runs_session;
    if (p && g->n > 1 && !one) {
        size_t monitors = 0;
        for (size_t k = 0; k < g->n; k++)
            monitors += is_monitor(member(r, k));
        fl_buf_printf(b, "  the sections below: the whole run, %zu sessions (%zu process%s%s)\n",
                      g->n, g->n - monitors, g->n - monitors == 1 ? "" : "es",
                      monitors ? " + gpu-profile's monitor" : "");
    } else if (p && g->n > 1) {
        fl_buf_puts(b, "  the sections below: session ");
        fl_put_line(b, p->session_id, 64);
        if (p->have_rank)
            fl_buf_printf(b, " (rank %lld)", (long long)p->rank);
        fl_buf_puts(b, r->runs_session ? ", as --session asked\n" : ", the run's most GPU time\n");
    }
    text_others(r, b);
}

/* ---------------------------------------------------------------- JSON */

static void j_opt_i64(jw *w, const char *key, bool ok, int64_t v)
{
    if (ok)
        j_i64(w, key, v);
    else
        j_str(w, key, NULL);
}

static void json_process(jw *w, const fl_runs_session *s)
{
    j_open(w, NULL, '{');
    j_opt_i64(w, "pid", s->have_pid, s->pid);
    j_opt_i64(w, "rank", s->have_rank, s->rank);
    j_opt_i64(w, "world_size", s->have_world_size, s->world_size);
    j_opt_i64(w, "local_rank", s->have_local_rank, s->local_rank);
    j_str(w, "rank_source", s->rank_source);
    j_str(w, "host", s->host);
    j_str(w, "session_id", s->session_id);
    j_str(w, "app", s->app);
    j_str(w, "session_kind", s->kind);
    j_opt_u64(w, "start_ns", s->have_start, s->start_ns);
    j_opt_u64(w, "gpu_time_ns", s->read, s->gpu_ns);
    j_opt_u64(w, "kernel_launches", s->read, s->kernels);
    j_opt_u64(w, "memcpy_count", s->read, s->copies);
    j_opt_u64(w, "memcpy_bytes", s->read, s->copy_bytes);
    j_opt_u64(w, "memcpy_time_ns", s->read, s->copy_ns);
    j_opt_u64(w, "synchronizations", s->read, s->syncs);
    j_opt_u64(w, "synchronization_time_ns", s->read, s->sync_ns);
    j_str(w, "busiest_kernel", s->busiest);
    j_opt_u64(w, "busiest_kernel_ns", s->busiest != NULL, s->busiest_ns);
    j_str(w, "busiest_op", s->busiest_op);
    j_opt_u64(w, "busiest_op_ns", s->busiest_op != NULL, s->busiest_op_ns);
    j_str(w, "busiest_line", s->busiest_line);
    j_opt_u64(w, "busiest_line_ns", s->busiest_line != NULL, s->busiest_line_ns);
    j_opt_u64(w, "nccl_time_ns", s->read, s->nccl_ns);
    j_dbl(w, "nccl_pct", s->gpu_ns > 0,
          s->gpu_ns ? (double)s->nccl_ns * 100.0 / (double)s->gpu_ns : 0);
    j_close(w, '}');
}

static void json_clock(const fl_report *r, jw *w)
{
    const fl_runs_group *g = shown(r);
    j_open(w, "clock", '{');
    j_str(w, "basis", "wall_clock");
    j_open(w, "hosts", '[');
    for (size_t k = 0; k < g->n; k++) {
        host_fig h;
        if (!host_at(r, k, &h))
            continue;
        j_open(w, NULL, '{');
        j_str(w, "host", h.host);
        j_u64(w, "sessions", h.n);
        j_opt_i64(w, "wall_minus_monotonic_spread_ns", h.ok, h.spread_ns);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_str(w, "cross_host_skew", n_hosts(r) > 1 ? "unknown" : "single_host");
    j_close(w, '}');
}

static void json_devices(const fl_report *r, jw *w)
{
    const fl_runs *rs = r->runs;
    if (!rs->telemetry) {
        j_str(w, "devices", NULL);
        return;
    }
    j_open(w, "devices", '{');
    j_str(w, "session_id", rs->telemetry->session_id);
    j_open(w, "items", '[');
    for (size_t i = 0; i < rs->n_dev; i++) {
        const fl_runs_device *d = &rs->dev[i];
        j_open(w, NULL, '{');
        j_i64(w, "device_id", d->id);
        j_u64(w, "samples", d->samples);
        j_dbl(w, "util_gpu_mean_pct", d->util_n > 0,
              d->util_n ? d->util_sum / (double)d->util_n : 0);
        j_dbl(w, "util_gpu_max_pct", d->util_n > 0, d->util_max);
        j_opt_u64(w, "mem_used_max_bytes", d->used_n > 0,
                  (uint64_t)(d->used_max_mib * 1048576.0 + 0.5));
        j_dbl(w, "power_mean_mw", d->power_n > 0,
              d->power_n ? d->power_sum_mw / (double)d->power_n : 0);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

static void json_others(const fl_report *r, jw *w)
{
    const fl_runs *rs = r->runs;
    j_open(w, "other_runs", '[');
    for (size_t i = 0; i < rs->ng; i++) {
        if (i == rs->shown)
            continue;
        const fl_runs_group *g = &rs->g[i];
        j_open(w, NULL, '{');
        j_str(w, "run_id", g->run_id);
        j_u64(w, "sessions", g->n);
        j_opt_u64(w, "latest_start_ns", g->latest_ns > 0, g->latest_ns);
        j_open(w, "session_ids", '[');
        for (size_t k = 0; k < g->n; k++)
            j_str(w, NULL, rs->s[g->idx[k]].session_id);
        j_close(w, ']');
        j_close(w, '}');
    }
    j_close(w, ']');
}

void fl_json_sec_run(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const fl_runs_group *g = shown(r);
    if (!g) {
        j_str(w, "run", NULL);
        return;
    }
    const fl_runs *rs = r->runs;
    const fl_runs_session *p = fl_runs_primary(rs, r->runs_session);
    j_open(w, "run", '{');
    j_str(w, "run_id", g->run_id);
    j_str(w, "picked_by", rs->picked_by);
    j_str(w, "report_session_id", p ? p->session_id : NULL);
    /* The sessions the other sections sum up: the whole run, or
     * --session's alone. */
    const fl_runs_session **order = calloc(g->n ? g->n : 1, sizeof *order);
    size_t n_read = order ? fl_runs_read_order(rs, r->runs_session, order, g->n) : 0;
    j_open(w, "report_session_ids", '[');
    for (size_t k = 0; k < n_read; k++)
        j_str(w, NULL, order[k]->session_id);
    j_close(w, ']');
    free(order);
    j_open(w, "processes", '[');
    for (size_t k = 0; k < g->n; k++)
        json_process(w, member(r, k));
    j_close(w, ']');
    uint64_t median = 0;
    bool have_median = fl_runs_median_gpu(rs, &median);
    j_opt_u64(w, "median_gpu_time_ns", have_median, median);
    j_dbl(w, "straggler_threshold_pct", true, FL_RUNS_STRAGGLER_PCT);
    j_open(w, "stragglers", '[');
    for (size_t k = 0; k < g->n; k++) {
        const fl_runs_session *s = member(r, k);
        if (!straggles(s, have_median, median))
            continue;
        j_open(w, NULL, '{');
        j_str(w, "session_id", s->session_id);
        j_opt_i64(w, "rank", s->have_rank, s->rank);
        j_opt_i64(w, "pid", s->have_pid, s->pid);
        j_u64(w, "gpu_time_ns", s->gpu_ns);
        j_dbl(w, "off_median_pct", true, off_pct(s->gpu_ns, median));
        j_close(w, '}');
    }
    j_close(w, ']');
    json_devices(r, w);
    json_clock(r, w);
    json_others(r, w);
    j_close(w, '}');
}
