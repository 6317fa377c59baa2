/*
 * report/text.c - the report as aligned text, one section after another
 * (report.h): each section brings its own leading blank line, so a caller
 * asking for some sections gets byte for byte their part of the whole.
 * Every string from the session goes through fl_put_line (one line, control
 * characters as '?', cut), so a damaged name cannot break the layout; a
 * value not recorded reads "n/a", never 0.
 */
#include "report_int.h"
#include "../util/buf.h"
#include "units.h"
#include "gpufl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ============================================================= helpers */

static void label(fl_buf *b, const char *l)
{
    fl_buf_printf(b, "  %-18s", l);
}

/* Memory used (MiB readings): "max <peak> of <total>\n", the total only
 * when known, "n/a" without a reading. */
static void used_of_total(fl_buf *b, const acc *used, bool have_total, double total_mib)
{
    if (!used->n) {
        fl_buf_puts(b, "n/a\n");
        return;
    }
    fl_buf_puts(b, "max ");
    fl_bytes_text(b, used->max * 1048576.0);
    if (have_total) {
        fl_buf_puts(b, " of ");
        fl_bytes_text(b, total_mib * 1048576.0);
    }
    fl_buf_puts(b, "\n");
}

static void gpu_label(fl_buf *b, int64_t id)
{
    if (id == DEVICE_UNKNOWN)
        fl_buf_puts(b, "GPU ?");
    else
        fl_buf_printf(b, "GPU %" PRId64, id);
}

/* "<s>[<sep><extra>]\n", extra where the session has it, each one line
 * of at most width. */
static void line_and(fl_buf *b, const char *s, const char *sep, const char *extra, size_t width)
{
    fl_put_line(b, s, width);
    if (extra) {
        fl_buf_puts(b, sep);
        fl_put_line(b, extra, width);
    }
    fl_buf_puts(b, "\n");
}

/* A device's utilization readings (percent): mean and max, n/a without
 * one. */
static void util_line(fl_buf *b, const char *what, const acc *util)
{
    fl_buf_printf(b, "    %-18s", what);
    if (util->n)
        fl_buf_printf(b, "mean %.1f%%  max %.0f%%\n", util->sum / (double)util->n, util->max);
    else
        fl_buf_puts(b, "n/a\n");
}

/* ============================================================= summary */

/* What ran, and where. */
static void summary_who(const fl_model *m, fl_buf *b)
{
    fl_buf_puts(b, "report  ");
    line_and(b, m->app ? m->app : "(no job_start)", "  session ", m->session_id, 80);
    label(b, "host");
    fl_put_line(b, m->hostname ? m->hostname : "n/a", 80);
    if (m->have_pid)
        fl_buf_printf(b, "  pid %" PRId64, m->pid);
    fl_buf_puts(b, "\n");
}

/* When: the span, and which records it comes from. */
static void summary_when(const fl_model *m, const figures *f, fl_buf *b)
{
    label(b, "start");
    if (f->have_start) {
        fl_time_text(b, f->start_ns);
        if (!m->have_start)
            fl_buf_puts(b, " (first record: no job_start)");
    } else {
        fl_buf_puts(b, "n/a");
    }
    fl_buf_puts(b, "\n");
    label(b, "end");
    if (f->have_end) {
        fl_time_text(b, f->end_ns);
        fl_buf_puts(b, m->have_shutdown ? " (shutdown)" : " (last record)");
    } else {
        fl_buf_puts(b, "n/a");
    }
    fl_buf_puts(b, "\n");
    label(b, "duration");
    if (f->have_start && f->have_end)
        fl_dur_text(b, f->duration_ns);
    else
        fl_buf_puts(b, "n/a");
    fl_buf_puts(b, "\n");
}

/* How the session was recorded, and how the recording and the program
 * ended when not normally. */
static void summary_how(const fl_report *r, const figures *f, fl_buf *b)
{
    const fl_model *m = r->m;
    label(b, "session");
    line_and(b, m->session_kind ? m->session_kind : "n/a", ", engine ", m->engine, 40);
    if (f->crashed && r->live)
        fl_buf_puts(b, "  the session is still recording: the report covers what reached the "
                       "disk so far\n");
    else if (f->crashed && r->have_res && r->res.tmp_files)
        fl_buf_puts(b, "  the session is live or crashed (its files are still in .tmp/, no "
                       "shutdown): the report covers what reached the disk\n");
    else if (f->crashed)
        fl_buf_puts(b, "  the process did not shut down the recorder (crashed or killed): the "
                       "report covers what reached the disk\n");
    const json_t *sd = m->shutdown;
    if (json_is_true(json_object_get(sd, "crashed")) ||
        json_is_integer(json_object_get(sd, "signal"))) {
        label(b, "program ended");
        if (json_is_integer(json_object_get(sd, "signal")))
            fl_buf_printf(b, "by signal %" PRId64,
                          (int64_t)json_integer_value(json_object_get(sd, "signal")));
        else if (json_is_integer(json_object_get(sd, "exit_code")))
            fl_buf_printf(b, "with exit code %" PRId64,
                          (int64_t)json_integer_value(json_object_get(sd, "exit_code")));
        fl_buf_puts(b, json_is_true(json_object_get(sd, "crashed")) ? " (crashed)\n" : "\n");
    }
}

/* Kernel launches, and how busy they kept each device. */
static void summary_kernels(const fl_report *r, const figures *f, fl_buf *b)
{
    label(b, "kernels");
    if (r->kernel_launches) {
        fl_buf_printf(b, "%" PRIu64 " %s  ", r->kernel_launches,
                      fl_plural(r->kernel_launches, "launch", "launches"));
        fl_dur_text(b, r->kernel_ns);
        fl_buf_printf(b, " GPU time  %zu distinct\n", r->n_k);
    } else {
        fl_buf_puts(b, "none\n");
    }
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->kernels)
            continue;
        label(b, "GPU busy");
        if (f->duration_ns) {
            fl_buf_printf(b, "%.1f%%  ", fl_busy_pct(d, f->duration_ns));
        } else {
            fl_buf_puts(b, "n/a  ");
        }
        gpu_label(b, d->id);
        if (d->id == DEVICE_UNKNOWN)
            fl_buf_puts(b, " (the kernel rows do not say their device: all devices together)");
        else
            fl_buf_puts(b, " (union of its kernels' intervals over the duration)");
        fl_buf_puts(b, "\n");
    }
}

/* One line of memory operations (memcpy, memset): count, bytes, time. */
static void summary_ops(fl_buf *b, const char *what, uint64_t n, const char *one, const char *many,
                        uint64_t bytes, uint64_t ns)
{
    label(b, what);
    if (n) {
        fl_buf_printf(b, "%" PRIu64 " %s  ", n, fl_plural(n, one, many));
        fl_bytes_text(b, (double)bytes);
        fl_buf_puts(b, "  ");
        fl_dur_text(b, ns);
        fl_buf_puts(b, "\n");
    } else {
        fl_buf_puts(b, "none\n");
    }
}

/* The end of a figure's line summed over n devices: which sums when
 * more than one; n/a without a figure, and why when only some devices
 * report it. */
static void summed_end(fl_buf *b, bool have, bool partial, size_t n, const char *sums,
                       const char *of)
{
    if (!have)
        fl_buf_puts(b, partial ? "n/a (not every device reports it)\n" : "n/a\n");
    else if (n > 1)
        fl_buf_printf(b, " (%s of the %zu devices' %s)\n", sums, n, of);
    else
        fl_buf_puts(b, "\n");
}

/* The device metrics over every device: utilisation, memory, power,
 * energy.  Over several devices memory and power are the sums of the
 * devices' figures, as the run's total says them (cli/report.c). */
static void summary_metrics(const figures *f, fl_buf *b)
{
    label(b, "util.gpu");
    if (f->have_util)
        fl_buf_printf(b, "mean %.1f%% (every sample of every device)\n", f->util_mean);
    else
        fl_buf_puts(b, "n/a\n");
    size_t n = f->metric_devices;
    label(b, "memory used");
    if (f->have_used) {
        fl_buf_puts(b, "max ");
        fl_bytes_text(b, f->used_max_mib * 1048576.0);
    }
    summed_end(b, f->have_used, f->used_partial, n, "sum", "maxima");
    label(b, "power");
    if (f->have_power)
        fl_buf_printf(b, "mean %.1f W  max %.1f W", f->power_mean_mw / 1000.0,
                      f->power_max_mw / 1000.0);
    summed_end(b, f->have_power, f->power_partial, n, "sums", "means and maxima");
    label(b, "energy");
    if (f->have_energy)
        fl_buf_printf(b, "%.3f J (%s%s)\n", f->energy_j,
                      strcmp(f->energy_source, "counter") == 0          ? "counter"
                      : strcmp(f->energy_source, "power_integral") == 0 ? "power integral"
                                                                        : "counter and power "
                                                                          "integral",
                      f->energy_partial ? "; some devices have none" : "");
    else
        fl_buf_puts(b, "n/a\n");
}

/* Graph launches, synchronizations, allocations: a line when any. */
static void summary_other(const fl_report *r, fl_buf *b)
{
    if (!(r->graphs || r->syncs || r->allocs || r->frees))
        return;
    label(b, "other");
    const char *sep = "";
    if (r->graphs) {
        fl_buf_printf(b, "%" PRIu64 " graph %s ", r->graphs,
                      fl_plural(r->graphs, "launch", "launches"));
        fl_dur_text(b, r->graph_ns);
        sep = "  ";
    }
    if (r->syncs) {
        fl_buf_printf(b, "%s%" PRIu64 " %s ", sep, r->syncs,
                      fl_plural(r->syncs, "synchronization", "synchronizations"));
        fl_dur_text(b, r->sync_ns);
        sep = "  ";
    }
    if (r->allocs || r->frees)
        fl_buf_printf(b, "%s%" PRIu64 " allocations %" PRIu64 " frees", sep, r->allocs, r->frees);
    fl_buf_puts(b, "\n");
    fl_text_sync_stacks(r, b);
}

/* What the recorder dropped or could not write, in the header: a report
 * with a hole in it says so before any figure (the "captured" section
 * has the recorder's own words). */
static void summary_dropped(const fl_report *r, const figures *f, fl_buf *b)
{
    bool files = f->have_lost && f->lines_lost;
    if (!f->scope_events_dropped && !f->metric_rows_dropped && !files)
        return;
    label(b, "dropped");
    const char *sep = "";
    if (f->scope_events_dropped) {
        uint64_t all = f->scope_events_dropped + r->scope_rows;
        fl_buf_printf(
            b, "%" PRIu64 " of %" PRIu64 " scope events (%.1f%%: the recorder's ring was full)",
            f->scope_events_dropped, all, 100.0 * (double)f->scope_events_dropped / (double)all);
        sep = "; ";
    }
    if (f->metric_rows_dropped) {
        fl_buf_printf(b, "%s%" PRIu64 " metric %s (the recorder's queue was full)", sep,
                      f->metric_rows_dropped, fl_plural(f->metric_rows_dropped, "row", "rows"));
        sep = "; ";
    }
    if (files)
        fl_buf_printf(b, "%s%" PRIu64 " %s (%" PRIu64 " %s) the files could not take", sep,
                      f->lines_lost, fl_plural(f->lines_lost, "line", "lines"), f->rows_lost,
                      fl_plural(f->rows_lost, "row", "rows"));
    fl_buf_puts(b, "\n");
}

void fl_text_sec_summary(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    summary_who(r->m, b);
    summary_when(r->m, f, b);
    summary_how(r, f, b);
    summary_dropped(r, f, b);
    summary_kernels(r, f, b);
    summary_ops(b, "memcpy", f->copies, "copy", "copies", f->copy_bytes, f->copy_ns);
    summary_ops(b, "memset", r->memsets.count, "memset", "memsets", r->memsets.bytes,
                r->memsets.time_ns);
    summary_metrics(f, b);
    summary_other(r, b);
}
/* ====================================================== other sections */

void fl_text_sec_scopes(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    fl_buf_printf(b, "\nscopes  %zu %s  (p50/p99 within %.1f%%)\n", r->n_s,
                  fl_plural(r->n_s, "name", "names"), FL_HIST_PCT_ERROR);
    if (r->n_s == 0) {
        fl_buf_puts(b, "  none recorded\n");
    } else {
        fl_buf_printf(b, "  %-5s %7s %11s %10s %10s %10s %12s  %s\n", "kind", "count", "total ms",
                      "mean ms", "p50 ms", "p99 ms", "GPU ms in", "name");
        for (size_t i = 0; i < r->n_s; i++) {
            const sstat *s = &r->s[f->sorder[i]];
            fl_buf_printf(b, "  %-5s %7" PRIu64 " ", s->nvtx ? "NVTX" : "scope", s->count);
            if (s->count) {
                fl_buf_printf(b, "%11.3f %10.3f %10.3f %10.3f ", (double)s->total_ns / 1e6,
                              (double)s->total_ns / (double)s->count / 1e6,
                              (double)fl_hist_pct(&s->h, s->count, 50, s->min_ns, s->max_ns) / 1e6,
                              (double)fl_hist_pct(&s->h, s->count, 99, s->min_ns, s->max_ns) / 1e6);
            } else {
                fl_buf_printf(b, "%11s %10s %10s %10s ", "-", "-", "-", "-");
            }
            if (s->nvtx || !r->kernel_launches)
                fl_buf_printf(b, "%12s  ", "-");
            else
                fl_buf_printf(b, "%12.3f  ", (double)s->gpu_ns / 1e6);
            fl_put_line(b, s->name, 100);
            if (s->open_at_end && f->scope_ends_dropped)
                fl_buf_printf(b, "  (%" PRIu64 " %s dropped)", s->open_at_end,
                              fl_plural(s->open_at_end, "end", "ends"));
            else if (s->open_at_end)
                fl_buf_printf(b, "  (%" PRIu64 " still open at the end)", s->open_at_end);
            fl_buf_puts(b, "\n");
        }
    }
    if (r->kernel_launches) {
        fl_buf_puts(b, "  kernel time       ");
        fl_dur_text(b, r->kernel_scoped_ns);
        fl_buf_puts(b, " inside scopes, ");
        fl_dur_text(b, r->kernel_global_ns);
        fl_buf_puts(b, " outside any, ");
        fl_dur_text(b, r->kernel_unattributed_ns);
        fl_buf_puts(b, " not attributed (no user_scope)\n");
    }
    if (r->scope_unmatched_ends)
        fl_buf_printf(b, "  %" PRIu64 " scope %s without a begin (not counted%s)\n",
                      r->scope_unmatched_ends, fl_plural(r->scope_unmatched_ends, "end", "ends"),
                      f->scope_events_dropped ? ": begins dropped" : "");
}

static void dim_text(fl_buf *b, bool varies, bool have, const uint32_t v[3])
{
    char buf[48];
    if (varies)
        fl_buf_puts(b, "varies");
    else if (have)
        fl_buf_puts(b, fl_dim3_format(buf, sizeof buf, v));
    else
        fl_buf_puts(b, "n/a");
}

/* A kernel's CPU stack at launch (enable_stack_trace), innermost first:
 * "      launched from c (app.c:12) <- b (app.c:30) <- ... (N more)"; the
 * last one seen when its launches had several.  Nothing without one. */
static void text_stack(const kstat *k, fl_buf *b)
{
    const char *st = k->stack;
    if (!st || !*st)
        return;
    fl_buf_puts(b, k->stack_varies ? "      launched from (last of several stacks) "
                                   : "      launched from ");
    fl_put_stack(b, st);
    fl_buf_puts(b, "\n");
}

void fl_text_sec_hotspots(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    if (r->by != FL_BY_KERNEL) {
        fl_text_hotspots_by(r, in->top_n, b);
        return;
    }
    fl_buf_printf(b, "\nhotspots  top %zu of %zu %s by GPU time  (us; p50/p90/p99 within %.1f%%)\n",
                  f->top, r->n_k, fl_plural(r->n_k, "kernel", "kernels"), FL_HIST_PCT_ERROR);
    if (r->n_k == 0) {
        fl_buf_puts(b, "  no kernels recorded\n");
        return;
    }
    fl_buf_printf(b, "  %3s %8s %11s %6s %10s %10s %10s %10s %10s %10s  %s\n", "#", "calls",
                  "total ms", "time", "mean", "p50", "p90", "p99", "min", "max", "name");
    for (size_t i = 0; i < f->top; i++) {
        const kstat *k = &r->k[f->korder[i]];
        char buf[96];
        fl_buf_printf(b, "  %3zu %8" PRIu64 " %11.3f ", i + 1, k->count, (double)k->total_ns / 1e6);
        if (r->kernel_ns)
            fl_buf_printf(b, "%5.1f%% ", 100.0 * (double)k->total_ns / (double)r->kernel_ns);
        else
            fl_buf_printf(b, "%6s ", "-");
        fl_buf_printf(b, "%10.3f %10.3f %10.3f %10.3f %10.3f %10.3f  ",
                      (double)k->total_ns / (double)k->count / 1e3,
                      (double)fl_hist_pct(&k->h, k->count, 50, k->min_ns, k->max_ns) / 1e3,
                      (double)fl_hist_pct(&k->h, k->count, 90, k->min_ns, k->max_ns) / 1e3,
                      (double)fl_hist_pct(&k->h, k->count, 99, k->min_ns, k->max_ns) / 1e3,
                      (double)k->min_ns / 1e3, (double)k->max_ns / 1e3);
        fl_put_line(b, fl_kernel_label(r, k, buf, sizeof buf), 100);
        fl_buf_puts(b, "\n      grid ");
        dim_text(b, k->grid_varies, k->have_detail && k->last.have_grid, k->last.grid);
        fl_buf_puts(b, "  block ");
        dim_text(b, k->block_varies, k->have_detail && k->last.have_block, k->last.block);
        fl_buf_puts(b, "  registers ");
        if (!k->have_regs)
            fl_buf_puts(b, "n/a");
        else if (k->regs_min != k->regs_max)
            fl_buf_printf(b, "varies (%" PRId64 "-%" PRId64 ")", k->regs_min, k->regs_max);
        else
            fl_buf_printf(b, "%" PRId64, k->regs_min);
        fl_buf_puts(b, "  occupancy ");
        if (k->occ_varies)
            fl_buf_puts(b, "varies");
        else if (k->have_detail && !isnan(k->last.occupancy))
            fl_buf_printf(b, "%.1f%%", 100.0 * k->last.occupancy);
        else
            fl_buf_puts(b, "n/a");
        fl_buf_puts(b, "  limited by ");
        if (k->lim_varies)
            fl_buf_puts(b, "varies");
        else if (k->have_detail && k->last.limiting)
            fl_put_line(b, k->last.limiting, 20);
        else
            fl_buf_puts(b, "n/a");
        fl_buf_puts(b, "\n");
        text_stack(k, b);
    }
    if (r->n_k > f->top) {
        uint64_t calls = 0, ns = 0;
        for (size_t i = f->top; i < r->n_k; i++) {
            calls += r->k[f->korder[i]].count;
            ns += r->k[f->korder[i]].total_ns;
        }
        fl_buf_printf(b, "  %3s %8" PRIu64 " %11.3f  (%zu more %s)\n", "", calls, (double)ns / 1e6,
                      r->n_k - f->top, fl_plural(r->n_k - f->top, "kernel", "kernels"));
    }
    if (r->m->details_missing)
        fl_buf_printf(b, "  %" PRIu64 " kernel %s announced a kernel_detail that was not found\n",
                      r->m->details_missing,
                      fl_plural(r->m->details_missing, "launch", "launches"));
}

static void text_ops_row(fl_buf *b, const char *name, const opstat *o)
{
    char bytes[32];
    fl_bytes_str(bytes, sizeof bytes, (double)o->bytes);
    fl_buf_printf(b, "  %-8s %8" PRIu64 " %12s %11.3f ", name, o->count, bytes,
                  (double)o->time_ns / 1e6);
    if (o->time_ns)
        fl_buf_printf(b, "%9.2f\n", (double)o->bytes / (double)o->time_ns);
    else
        fl_buf_printf(b, "%9s\n", "-");
}

void fl_text_sec_memory(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    fl_buf_puts(b, "\nmemcpy / memset\n");
    if (f->copies == 0 && r->memsets.count == 0) {
        fl_buf_puts(b, "  none recorded\n");
        return;
    }
    fl_buf_printf(b, "  %-8s %8s %12s %11s %9s\n", "kind", "count", "bytes", "time ms", "GB/s");
    static const uint64_t first[] = {1, 2, 8, 10};
    for (size_t i = 0; i < 4; i++)
        if (r->copies[first[i]].count)
            text_ops_row(b, fl_copy_kind_name(first[i]), &r->copies[first[i]]);
    for (uint64_t k = 0; k < 257; k++) {
        if (!r->copies[k].count || fl_copy_kind_name(k))
            continue;
        char buf[32];
        text_ops_row(b, fl_copy_label(k, buf, sizeof buf), &r->copies[k]);
    }
    if (r->memsets.count)
        text_ops_row(b, "memset", &r->memsets);
}

/* A line per GPM metric the device's rows had (none without GPM). */
static void text_gpm(const dstat *d, fl_buf *b)
{
    static const char *const labels[FL_GPM_N] = {
        "SM active",     "SM occupancy",   "tensor active", "tensor DFMA", "tensor HMMA",
        "tensor IMMA",   "DRAM bandwidth", "FP64 active",   "FP32 active", "FP16 active",
        "PCIe tx (GPM)", "PCIe rx (GPM)",  "NVLink tx",     "NVLink rx"};
    for (int g = 0; g < FL_GPM_N; g++) {
        const acc *a = &d->gpm[g];
        if (!a->n)
            continue;
        fl_buf_printf(b, "    %-18s", labels[g]);
        if (g < FL_GPM_FIRST_RATE) {
            fl_buf_printf(b, "mean %.1f%%  max %.1f%%\n", a->sum / (double)a->n, a->max);
        } else {
            fl_buf_printf(b, "mean %.3f GB/s  max %.3f GB/s\n", a->sum / (double)a->n / 1e9,
                          a->max / 1e9);
        }
    }
}

/* "Busy but stuck" (docs/report.md): n/a where no row had the three
 * metrics the rule needs - unknown, never "none". */
static void text_stuck(const dstat *d, const figures *f, fl_buf *b)
{
    fl_buf_printf(b, "    %-18s", "stuck");
    if (!d->stuck.known_samples) {
        fl_buf_puts(b, "n/a (no sample had util.gpu, GPM SM activity and power)\n");
        return;
    }
    gp_stuck_rule rule;
    gp_stuck_rule_init(&rule);
    uint64_t n = d->stuck.episodes;
    if (n)
        fl_buf_printf(b, "%" PRIu64 " %s", n, fl_plural(n, "stretch", "stretches"));
    else
        fl_buf_puts(b, "none");
    fl_buf_printf(b,
                  " in %" PRIu64 " samples (util.gpu >= %.0f%%, SM active <= %.0f%%, "
                  "power <= %.2f x idle %.1f W, %" PRIu32 " in a row)\n",
                  d->stuck.known_samples, rule.util_min_pct, rule.sm_active_max_pct,
                  rule.power_idle_ratio, d->stuck.min_power_mw / 1000.0, rule.after_samples);
    for (uint64_t i = 0; i < n && i < FL_STUCK_KEPT; i++) {
        const fl_stuck_stretch *k = &d->stuck_kept[i];
        uint64_t at = k->start_ns > f->start_ns ? k->start_ns - f->start_ns : 0;
        fl_buf_printf(b, "      at +%.3f s for %.3f s (%" PRIu64 " samples)\n", (double)at * 1e-9,
                      (double)(k->end_ns - k->start_ns) * 1e-9, k->samples);
    }
    if (n > FL_STUCK_KEPT)
        fl_buf_printf(b, "      ... and %" PRIu64 " more\n", n - FL_STUCK_KEPT);
}

void fl_text_sec_devices(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    size_t shown = 0;
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->samples)
            continue;
        if (shown++ == 0)
            fl_buf_puts(b, "\ndevices\n");
        fl_buf_puts(b, "  ");
        gpu_label(b, d->id);
        char mig[512];
        const char *name = fl_model_mig_title(r->m, d->id, mig, sizeof mig)
                               ? mig
                               : fl_model_device_name(r->m, d->id);
        if (name) {
            fl_buf_puts(b, "  ");
            fl_put_line(b, name, 80);
        }
        fl_buf_printf(b, "  %" PRIu64 " %s\n", d->samples,
                      fl_plural(d->samples, "sample", "samples"));
        util_line(b, "util.gpu", &d->util_gpu);
        util_line(b, "util.mem", &d->util_mem);
        fl_buf_printf(b, "    %-18s", "memory used");
        used_of_total(b, &d->used, d->have_total, d->total_mib);
        fl_buf_printf(b, "    %-18s", "temperature");
        if (d->temp.n)
            fl_buf_printf(b, "max %.0f C\n", d->temp.max);
        else
            fl_buf_puts(b, "n/a\n");
        fl_buf_printf(b, "    %-18s", "power");
        if (d->power.n)
            fl_buf_printf(b, "mean %.1f W  max %.1f W\n",
                          d->power.sum / (double)d->power.n / 1000.0, d->power.max / 1000.0);
        else
            fl_buf_puts(b, "n/a\n");
        fl_buf_printf(b, "    %-18s", "clocks");
        if (d->clock_sm.n || d->clock_mem.n) {
            if (d->clock_sm.n)
                fl_buf_printf(b, "SM mean %.0f MHz", d->clock_sm.sum / (double)d->clock_sm.n);
            if (d->clock_mem.n)
                fl_buf_printf(b, "%smem mean %.0f MHz", d->clock_sm.n ? "  " : "",
                              d->clock_mem.sum / (double)d->clock_mem.n);
            fl_buf_puts(b, "\n");
        } else {
            fl_buf_puts(b, "n/a\n");
        }
        fl_buf_printf(b, "    %-18s", "energy");
        double j;
        const char *src;
        if (fl_device_energy(d, &j, &src))
            fl_buf_printf(b, "%.3f J (%s)\n", j, src[0] == 'c' ? "counter" : "power integral");
        else
            fl_buf_puts(b, "n/a\n");
        /* Only where the session recorded some: none recorded is not a
         * known 0 (the driver may not report XIDs). */
        if (d->xid_events)
            fl_buf_printf(b, "    %-18s%" PRIu64 " (newest: XID %" PRIu32 ")\n", "XID errors",
                          d->xid_events, d->xid_last);
        text_gpm(d, b);
        text_stuck(d, in->f, b);
    }
}

void fl_text_sec_host(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    if (!r->host_samples)
        return;
    fl_buf_puts(b, "\nhost  ");
    const char *h = r->host_name ? r->host_name : r->m->hostname;
    fl_put_line(b, h ? h : "n/a", 80);
    fl_buf_printf(b, "  %" PRIu64 " %s\n", r->host_samples,
                  fl_plural(r->host_samples, "sample", "samples"));
    label(b, "CPU");
    if (r->cpu.n)
        fl_buf_printf(b, "mean %.1f%%  max %.1f%%\n", r->cpu.sum / (double)r->cpu.n, r->cpu.max);
    else
        fl_buf_puts(b, "n/a\n");
    label(b, "RAM used");
    used_of_total(b, &r->ram_used, r->have_ram_total, r->ram_total_mib);
}

void fl_text_sec_capture(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const json_t *c = r->m->caps;
    fl_buf_puts(b, "\ncaptured");
    if (!c) {
        fl_buf_puts(b, "  no capture_capabilities record\n");
        return;
    }
    const char *req = fl_jget_str(c, "requested_engine"), *sel = fl_jget_str(c, "selected_engine");
    fl_buf_puts(b, "  requested ");
    fl_put_line(b, req ? req : "n/a", 40);
    fl_buf_puts(b, ", selected ");
    fl_put_line(b, sel ? sel : "n/a", 40);
    fl_buf_puts(b, "\n");
    const json_t *caps = json_object_get(c, "capabilities");
    for (size_t i = 0; i < json_array_size(caps); i++) {
        const json_t *e = json_array_get(caps, i);
        const char *feat = fl_jget_str(e, "feature"), *st = fl_jget_str(e, "status");
        const char *reason = fl_jget_str(e, "reason_code"), *msg = fl_jget_str(e, "message");
        fl_buf_puts(b, "  ");
        size_t before = b->len;
        fl_put_line(b, feat ? feat : "?", 40);
        size_t w = b->len - before;
        fl_buf_printf(b, "%*s", w < 22 ? (int)(22 - w) : 1, "");
        fl_put_line(b, st ? st : "?", 30);
        fl_cap_status cs = fl_cap_status_of(st);
        bool degraded = cs == FL_CAP_FALLBACK || cs == FL_CAP_PARTIAL || cs == FL_CAP_SKIPPED;
        if (degraded || (msg && msg[0])) {
            if (reason && reason[0]) {
                fl_buf_puts(b, " (");
                fl_put_line(b, reason, 60);
                fl_buf_puts(b, ")");
            }
            if (msg && msg[0]) {
                fl_buf_puts(b, ": ");
                fl_put_line(b, msg, 300);
            }
        }
        fl_buf_puts(b, "\n");
    }
}

/* One count of what the read passed over: "<n> " then fmt, whose %s
 * take the plural of one[i] / many[i] for n. */
typedef struct partial_count {
    uint64_t n;
    const char *fmt;
    const char *one[2], *many[2];
} partial_count;

void fl_text_sec_read(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    const fl_model *m = r->m;
    const fl_read_result *res = &r->res;
    if (!fl_report_partial(r))
        return;
    fl_buf_puts(b, "\npartial read:");
    const char *sep = " ";
    bool h = r->have_res;
    const partial_count counts[] = {
        {h ? res->bad_lines : 0, "unreadable %s (not JSON or cut)", {"line"}, {"lines"}},
        {h ? res->bad_records : 0, "unusable %s", {"record"}, {"records"}},
        {h ? res->other_session : 0, "%s of another session dropped", {"record"}, {"records"}},
        {h ? res->gz_errors : 0, "broken gzip %s", {"stream"}, {"streams"}},
        {h ? res->bad_windows : 0,
         "%s not matching %s sidecar",
         {"window", "its"},
         {"windows", "their"}},
        {h ? res->unreadable_files : 0, "%s that could not be opened", {"file"}, {"files"}},
        {h ? res->lost_windows : 0, "%s lost in transport", {"window"}, {"windows"}},
        {h ? res->unknown_types : 0, "%s of unknown types not read", {"record"}, {"records"}},
        {m->bad_rows, "unusable %s or dictionary %s", {"row", "entry"}, {"rows", "entries"}},
        {m->details_orphan, "kernel_detail %s no kernel row claimed", {"record"}, {"records"}},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const partial_count *c = &counts[i];
        if (!c->n)
            continue;
        fl_buf_printf(b, "%s%" PRIu64 " ", sep, c->n);
        fl_buf_printf(b, c->fmt, fl_plural(c->n, c->one[0], c->many[0]),
                      fl_plural(c->n, c->one[1] ? c->one[1] : "", c->many[1] ? c->many[1] : ""));
        sep = ", ";
    }
    if (r->oom || m->oom) {
        fl_buf_printf(b, "%sout of memory: some figures are short", sep);
        sep = ", ";
    }
    if (r->warnings) {
        fl_buf_printf(b, "%s%" PRIu64 " reader %s", sep, r->warnings,
                      fl_plural(r->warnings, "warning", "warnings"));
    }
    fl_buf_puts(b, "\n");
    if (r->n_unknown) {
        fl_buf_puts(b, "  unknown record types:");
        for (size_t i = 0; i < r->n_unknown; i++) {
            fl_buf_puts(b, i ? ", " : " ");
            fl_put_line(b, r->unknown[i].type, 60);
            fl_buf_printf(b, " (%" PRIu64 ")", r->unknown[i].records);
        }
        fl_buf_puts(b, "\n");
    }
    for (size_t i = 0; i < MAX_WARNINGS_KEPT && i < r->warnings; i++) {
        if (!r->warning_text[i])
            continue;
        fl_buf_puts(b, "  ");
        fl_put_line(b, r->warning_text[i], 300);
        fl_buf_puts(b, "\n");
    }
}

/* ======================================================== the sections */

/* ============================================================ the text */

void fl_report_text_sections(const fl_report *r, int top_n, unsigned sections, fl_buf *out)
{
    if (sections == 0)
        sections = GPUFL_SECTION_ALL;
    figures f;
    if (!fl_report_figures(r, top_n, &f)) {
        fl_figures_free(&f);
        out->oom = true; /* the caller says so, never the report's text */
        return;
    }
    /* The whole report is the concatenation of its sections, each of
     * which brings its own leading blank line: a caller asking for one
     * section (an analyzer's inspect_* method) gets exactly its part. */
    fl_section_in in = {r, &f, top_n};
    for (size_t i = 0; i < fl_report_n_sections; i++) {
        const fl_report_section *sec = &fl_report_sections[i];
        for (size_t k = 0; (sections & sec->bit) && k < FL_SECTION_PARTS && sec->text[k]; k++)
            sec->text[k](&in, out);
    }
    fl_figures_free(&f);
}

void fl_report_text(const fl_report *r, int top_n, fl_buf *out)
{
    fl_report_text_sections(r, top_n, GPUFL_SECTION_ALL, out);
}
