/*
 * report/text_profile.c - the text of what the profiling engines measured
 * (report.h's sections "stalls" and "perf"): PC-sampling stall reasons by
 * name and the functions sampled, SASS metrics and their configuration,
 * what the sass channel holds (never the disassembly itself), PM sampling
 * (its configuration and samples), and the range profiler's results per
 * kernel and per scope.  A metric not collected reads "n/a".
 */
#include "report_int.h"
#include "sass_metrics.h"
#include "stalls.h"
#include "../util/buf.h"
#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LIST_SHOWN 10 /* functions, files listed before "N more" */

static void label(fl_buf *b, const char *l)
{
    fl_buf_printf(b, "  %-18s", l);
}

/* A JSON list of strings, ", "-joined ("none" when empty). */
static void str_list(fl_buf *b, const json_t *arr)
{
    size_t shown = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s)
            continue;
        fl_buf_puts(b, shown++ ? ", " : "");
        fl_put_line(b, s, 100);
    }
    if (!shown)
        fl_buf_puts(b, "none");
}

static void device_of(fl_buf *b, const json_t *rec)
{
    uint64_t dev;
    if (fl_jget_id(rec, "device_id", &dev))
        fl_buf_printf(b, "device %" PRIu64 ": ", dev);
}

/* ============================================================== stalls */

/* The functions with most samples (the reasons: text_stalls.c). */
static void stall_reasons(const fl_report *r, fl_buf *b)
{
    size_t nf = r->n_fn < 10 ? r->n_fn : 10;
    if (nf)
        fl_buf_puts(b, "  functions with the most samples\n");
    for (size_t i = 0; i < nf; i++) {
        const fnstat *fn = &r->fn[i];
        const char *name = fl_model_function_name(r->m, fn->function_id);
        fl_buf_printf(b, "  %10" PRIu64 " %6.1f%%  ", fn->samples,
                      100.0 * (double)fn->samples / (double)r->pc_samples);
        if (name)
            fl_put_line(b, name, 100);
        else
            fl_buf_printf(b, "(function id %" PRIu64 ")", fn->function_id);
        fl_buf_puts(b, "\n");
    }
}

static void sass_metrics(const fl_report *r, int top, fl_buf *b)
{
    fl_buf_printf(b, "\nSASS metrics  %" PRIu64 " %s\n", r->sass_rows,
                  fl_plural(r->sass_rows, "row", "rows"));
    for (size_t i = 0; i < json_array_size(r->sass_configs); i++) {
        const json_t *c = json_array_get(r->sass_configs, i);
        label(b, "configured");
        device_of(b, c);
        str_list(b, json_object_get(c, "configured_metrics"));
        fl_buf_puts(b, "; skipped: ");
        str_list(b, json_object_get(c, "skipped_metrics"));
        fl_buf_puts(b, "\n");
    }
    if (r->sass_configs_more)
        fl_buf_printf(b, "  (%" PRIu64 " more sass_config records)\n", r->sass_configs_more);
    if (r->n_sm)
        fl_buf_printf(b, "  %8s %16s  %s\n", "rows", "total", "metric");
    for (size_t i = 0; i < r->n_sm; i++) {
        const sassstat *m = &r->sm[i];
        const char *name = fl_model_metric_name(r->m, m->metric_id);
        fl_buf_printf(b, "  %8" PRIu64 " %16.0f  ", m->rows, m->total);
        if (name)
            fl_put_line(b, name, 100);
        else
            fl_buf_printf(b, "(metric id %" PRIu64 ")", m->metric_id);
        fl_buf_puts(b, "\n");
    }
    fl_text_sass_detail(r, top, b);
}

static void name_list(fl_buf *b, const char *what, const char *const *v, size_t n)
{
    if (!n)
        return;
    label(b, what);
    for (size_t i = 0; i < n && i < LIST_SHOWN; i++) {
        fl_buf_puts(b, i ? ", " : "");
        fl_put_line(b, v[i], 100);
    }
    if (n > LIST_SHOWN)
        fl_buf_printf(b, " (%zu more)", n - LIST_SHOWN);
    fl_buf_puts(b, "\n");
}

static void sass_channel(const fl_report *r, fl_buf *b)
{
    fl_buf_printf(b,
                  "\nsass  %" PRIu64 " cubin %s, %" PRIu64 " PTX %s, %" PRIu64
                  " source %s (the text itself is not shown)\n",
                  r->cubins, fl_plural(r->cubins, "disassembly", "disassemblies"), r->ptxs,
                  fl_plural(r->ptxs, "disassembly", "disassemblies"), r->sources,
                  fl_plural(r->sources, "file", "files"));
    name_list(b, "functions", r->sass_fn, r->n_sass_fn);
    name_list(b, "source files", r->sass_src, r->n_sass_src);
}

void fl_text_stalls(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    int top = in->top_n;
    if (r->ps && r->ps->n_rs)
        fl_text_stall_detail(r, top, b);
    if (r->n_st)
        stall_reasons(r, b);
    if (r->sass_rows || r->sass_configs)
        sass_metrics(r, top, b);
    if (r->cubins || r->ptxs || r->sources)
        sass_channel(r, b);
}

/* ================================================================ perf */

static void pm_configs(const fl_report *r, fl_buf *b)
{
    for (size_t i = 0; i < json_array_size(r->pm_configs); i++) {
        const json_t *c = json_array_get(r->pm_configs, i);
        uint64_t v;
        const char *preset = fl_jget_str(c, "preset");
        label(b, "PM sampling");
        device_of(b, c);
        if (fl_jget_u64(c, "interval_us", &v))
            fl_buf_printf(b, "every %" PRIu64 " us", v);
        else
            fl_buf_puts(b, "interval n/a");
        if (fl_jget_u64(c, "max_samples", &v))
            fl_buf_printf(b, ", up to %" PRIu64 " samples", v);
        if (preset && preset[0]) {
            fl_buf_puts(b, ", preset ");
            fl_put_line(b, preset, 40);
        }
        fl_buf_puts(b, ": ");
        str_list(b, json_object_get(c, "metrics"));
        fl_buf_puts(b, "\n");
    }
    if (r->pm_configs_more)
        fl_buf_printf(b, "  (%" PRIu64 " more pm_sampling_config records)\n", r->pm_configs_more);
}

static void pm_samples(const fl_report *r, fl_buf *b)
{
    fl_buf_printf(b, "  %8s %14s %14s %14s  %s\n", "samples", "mean", "min", "max", "metric");
    for (size_t i = 0; i < r->n_pm; i++) {
        const pmstat *p = &r->pm[i];
        const char *name = fl_model_metric_name(r->m, p->metric_id);
        fl_buf_printf(b, "  %8" PRIu64 " %14.3f %14.3f %14.3f  ", p->n, p->sum / (double)p->n,
                      p->min, p->max);
        if (name)
            fl_put_line(b, name, 100);
        else
            fl_buf_printf(b, "(metric id %" PRIu64 ")", p->metric_id);
        fl_buf_puts(b, "\n");
    }
}

/* A metric's mean over the ranges that collected it, in width w ("n/a"
 * when none did); bytes as bytes. */
static void perf_cell(fl_buf *b, const perfstat *p, int k, int w)
{
    if (!p->n[k]) {
        fl_buf_printf(b, " %*s", w, "n/a");
        return;
    }
    double mean = p->sum[k] / (double)p->n[k];
    if (k == FL_PERF_DRAM_READ || k == FL_PERF_DRAM_WRITE) {
        char s[32];
        fl_bytes_str(s, sizeof s, mean);
        fl_buf_printf(b, " %*s", w, s);
    } else if (k == FL_PERF_SHARED_CONFLICTS) {
        fl_buf_printf(b, " %*.0f", w, mean);
    } else {
        fl_buf_printf(b, " %*.1f", w, mean);
    }
}

static void perf_common(fl_buf *b, const perfstat *p)
{
    perf_cell(b, p, FL_PERF_SM_THROUGHPUT, 6);
    perf_cell(b, p, FL_PERF_L1_HIT, 8);
    perf_cell(b, p, FL_PERF_L2_HIT, 8);
    perf_cell(b, p, FL_PERF_DRAM_READ, 11);
    perf_cell(b, p, FL_PERF_DRAM_WRITE, 11);
    perf_cell(b, p, FL_PERF_TENSOR, 8);
}

static void perf_invalid(fl_buf *b, const perfstat *p)
{
    if (p->invalid)
        fl_buf_printf(b, "  (%" PRIu64 " invalid hit %s left out)", p->invalid,
                      fl_plural(p->invalid, "rate", "rates"));
}

static void kernel_perf(const fl_report *r, fl_buf *b)
{
    fl_buf_puts(b, "\nkernel perf metrics  (range profiler: mean per range; n/a: not "
                   "collected)\n");
    fl_buf_printf(b, "  %6s %6s %8s %8s %11s %11s %8s %8s %10s  %s\n", "ranges", "SM %", "L1 hit%",
                  "L2 hit%", "DRAM read", "DRAM write", "tensor%", "occup.%", "bank confl",
                  "kernel");
    for (size_t i = 0; i < r->n_kp; i++) {
        const perfstat *p = &r->kp[i];
        fl_buf_printf(b, "  %6" PRIu64, p->ranges);
        perf_common(b, p);
        perf_cell(b, p, FL_PERF_OCCUPANCY, 8);
        perf_cell(b, p, FL_PERF_SHARED_CONFLICTS, 10);
        fl_buf_puts(b, "  ");
        fl_put_line(b, p->name, 100);
        perf_invalid(b, p);
        fl_buf_puts(b, "\n");
    }
}

static void scope_perf(const fl_report *r, fl_buf *b)
{
    fl_buf_puts(b, "\nscope perf metrics  (range profiler: mean per range; n/a: not "
                   "collected)\n");
    fl_buf_printf(b, "  %6s %10s %6s %8s %8s %11s %11s %8s  %s\n", "ranges", "time ms", "SM %",
                  "L1 hit%", "L2 hit%", "DRAM read", "DRAM write", "tensor%", "scope");
    for (size_t i = 0; i < r->n_sp; i++) {
        const perfstat *p = &r->sp[i];
        fl_buf_printf(b, "  %6" PRIu64 " %10.3f", p->ranges, (double)p->time_ns / 1e6);
        perf_common(b, p);
        fl_buf_puts(b, "  ");
        fl_put_line(b, p->name, 100);
        if (p->user_scope && strcmp(p->user_scope, p->name) != 0) {
            fl_buf_puts(b, " (");
            fl_put_line(b, p->user_scope, 100);
            fl_buf_puts(b, ")");
        }
        perf_invalid(b, p);
        fl_buf_puts(b, "\n");
    }
}

void fl_text_perf(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    if (r->n_pm || r->pm_configs) {
        fl_buf_puts(b, "\nperf metrics\n");
        pm_configs(r, b);
        if (r->n_pm)
            pm_samples(r, b);
    }
    if (r->n_kp)
        kernel_perf(r, b);
    if (r->n_sp)
        scope_perf(r, b);
}
