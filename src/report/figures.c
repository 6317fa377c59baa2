/*
 * report/figures.c - what the report derives from its statistics once per
 * rendering (report_int.h's figures): the session's span and how it
 * ended, totals over devices and copy kinds, energy, and the sorted views
 * of kernels, scopes and devices - and the labels both renderings use -
 * so that the text and the JSON cannot disagree.
 */
#include "report_int.h"
#include "../util/energy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one energy rule (util/energy.h), on what the logs hold: the first
 * and the last energy_uj reading of the device, and the power integral. */
bool fl_device_energy(const dstat *d, double *j, const char **source)
{
    gp_energy_obs eo = {.counter_usable = d->have_energy && d->energy_readings >= 2,
                        .counter_first = d->energy_first,
                        .counter_last = d->energy_last,
                        .joules_per_unit = 1e-6,
                        .integral_usable = d->power_pairs > 0,
                        .integral_j = d->power_integral_j};
    gp_energy_source src = gp_energy_pick(&eo, j);
    *source = src == GP_ENERGY_COUNTER          ? "counter"
              : src == GP_ENERGY_POWER_INTEGRAL ? "power_integral"
                                                : NULL;
    return src != GP_ENERGY_NONE;
}

static int cmp_kernel(const void *a, const void *b, void *ctx)
{
    const fl_report *r = ctx;
    const kstat *x = &r->k[*(const size_t *)a], *y = &r->k[*(const size_t *)b];
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return x->kernel_id < y->kernel_id ? -1 : x->kernel_id > y->kernel_id;
}

static int cmp_scope(const void *a, const void *b, void *ctx)
{
    const fl_report *r = ctx;
    const sstat *x = &r->s[*(const size_t *)a], *y = &r->s[*(const size_t *)b];
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : (int)x->nvtx - (int)y->nvtx;
}

static int cmp_device(const void *a, const void *b, void *ctx)
{
    const fl_report *r = ctx;
    const dstat *x = &r->d[*(const size_t *)a], *y = &r->d[*(const size_t *)b];
    return x->id < y->id ? -1 : x->id > y->id;
}

static size_t *order(const fl_report *r, size_t n, int (*cmp)(const void *, const void *, void *))
{
    size_t *o = malloc((n ? n : 1) * sizeof *o);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    qsort_r(o, n, sizeof *o, cmp, (void *)r);
    return o;
}

/* The session's span: from job_start (else the first time read) to the
 * shutdown (else the last time read), and whether it was cut short. */
static void session_span(const fl_report *r, figures *f)
{
    const fl_model *m = r->m;
    f->have_start = m->have_start || m->have_time;
    f->start_ns = fl_model_origin(m);
    if (m->have_shutdown) {
        f->end_ns = m->shutdown_ns;
        f->end_source = fl_type_name(FL_T_SHUTDOWN);
        f->have_end = true;
    } else if (m->have_time) {
        f->end_ns = m->last_ns;
        f->end_source = "last_record";
        f->have_end = true;
    }
    if (f->have_start && f->have_end && f->end_ns > f->start_ns)
        f->duration_ns = f->end_ns - f->start_ns;
    f->crashed = r->have_res ? r->res.crashed : !m->have_shutdown;
}

/* The devices' metrics together: mean utilisation over every sample, the
 * peak of memory used, power, and the energy of those that have one. */
static void device_totals(const fl_report *r, figures *f)
{
    double util_sum = 0;
    uint64_t util_n = 0;
    size_t metric_devices = 0, energy_devices = 0;
    bool counter = false, integral = false;
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[i];
        if (d->samples == 0)
            continue;
        metric_devices++;
        util_sum += d->util_gpu.sum;
        util_n += d->util_gpu.n;
        if (d->used.n && (!f->have_used || d->used.max > f->used_peak_mib)) {
            f->have_used = true;
            f->used_peak_mib = d->used.max;
            f->used_peak_dev = d->id;
        }
        if (d->power.n) {
            f->have_power = true;
            f->power_mean_sum_w += d->power.sum / (double)d->power.n / 1000.0;
            if (d->power.max / 1000.0 > f->power_peak_w)
                f->power_peak_w = d->power.max / 1000.0;
        }
        double j;
        const char *src;
        if (fl_device_energy(d, &j, &src)) {
            energy_devices++;
            f->energy_j += j;
            counter |= src[0] == 'c';
            integral |= src[0] == 'p';
        }
    }
    f->have_util = util_n > 0;
    f->util_mean = util_n ? util_sum / (double)util_n : 0;
    f->have_energy = energy_devices > 0;
    f->energy_partial = energy_devices > 0 && energy_devices < metric_devices;
    f->energy_source = counter && integral ? "mixed" : counter ? "counter" : "power_integral";
}

bool fl_report_figures(const fl_report *r, int top_n, figures *f)
{
    memset(f, 0, sizeof *f);
    session_span(r, f);
    for (size_t k = 0; k < 257; k++) {
        f->copies += r->copies[k].count;
        f->copy_bytes += r->copies[k].bytes;
        f->copy_ns += r->copies[k].time_ns;
    }
    device_totals(r, f);
    f->korder = order(r, r->n_k, cmp_kernel);
    f->sorder = order(r, r->n_s, cmp_scope);
    f->dorder = order(r, r->n_d, cmp_device);
    f->top = (size_t)(top_n < 1 ? 10 : top_n);
    if (f->top > r->n_k)
        f->top = r->n_k;
    return f->korder && f->sorder && f->dorder;
}

void fl_figures_free(figures *f)
{
    free(f->korder);
    free(f->sorder);
    free(f->dorder);
}

/* ============================================================== labels */

const char *fl_kernel_label(const fl_report *r, const kstat *k, char *buf, size_t len)
{
    const char *n = fl_model_kernel_name(r->m, k->kernel_id);
    if (n)
        return n;
    snprintf(buf, len, "(kernel id %" PRIu32 ", not in kernel_dict)", k->kernel_id);
    return buf;
}

const char *fl_stall_name(const fl_report *r, const stallstat *s)
{
    return s->metric_id ? fl_model_metric_name(r->m, s->metric_id)
                        : fl_stall_reason_name(s->reason);
}

double fl_busy_pct(const dstat *d, uint64_t duration_ns)
{
    double p = 100.0 * (double)fl_busy_of(d) / (double)duration_ns;
    return p > 100.0 ? 100.0 : p;
}

const char *fl_copy_label(uint64_t kind, char *buf, size_t len)
{
    const char *n = fl_copy_kind_name(kind);
    if (n)
        return n;
    if (kind == 256)
        return "other";
    snprintf(buf, len, "kind %" PRIu64, kind);
    return buf;
}

bool fl_report_partial(const fl_report *r)
{
    const fl_model *m = r->m;
    const fl_read_result *res = &r->res;
    return (r->have_res &&
            (res->bad_lines || res->bad_records || res->other_session || res->gz_errors ||
             res->bad_windows || res->unreadable_files || res->lost_windows)) ||
           m->bad_rows || r->warnings || r->oom || m->oom || m->details_orphan || r->n_unknown;
}
