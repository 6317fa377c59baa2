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

int fl_heaviest_first(uint64_t x1, uint64_t y1, uint64_t x2, uint64_t y2, const char *x,
                      const char *y)
{
    if (x1 != y1)
        return x1 < y1 ? 1 : -1;
    if (x2 != y2)
        return x2 < y2 ? 1 : -1;
    return strcmp(x, y);
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
    int c = fl_heaviest_first(x->total_ns, y->total_ns, x->gpu_ns, y->gpu_ns, x->name, y->name);
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

/* A MIG instance whose parent GPU has metric rows too: the parent's
 * figures already cover it (the run total's rule, cli/report.c). */
static bool covered_by_parent(const fl_report *r, const dstat *d)
{
    const fl_model_device *md = fl_model_device_of(r->m, d->id);
    if (!md || !md->is_mig || md->mig_parent_id < 0)
        return false;
    for (size_t i = 0; i < r->n_d; i++)
        if (r->d[i].id == md->mig_parent_id && r->d[i].samples)
            return true;
    return false;
}

/* The devices' metrics together: mean utilisation over every sample, the
 * sums of memory used and power (the run total's rule, cli/report.c: a sum
 * only when every device has the figure, never a silent undercount), and
 * the energy of those that have one; a MIG instance its parent covers is
 * left out. */
static void device_totals(const fl_report *r, figures *f)
{
    double util_sum = 0;
    uint64_t util_n = 0;
    size_t used_devices = 0, power_devices = 0, energy_devices = 0;
    bool counter = false, integral = false;
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[i];
        if (d->samples == 0 || covered_by_parent(r, d))
            continue;
        f->metric_devices++;
        util_sum += d->util_gpu.sum;
        util_n += d->util_gpu.n;
        if (d->used.n) {
            used_devices++;
            f->used_max_mib += d->used.max;
        }
        if (d->power.n) {
            power_devices++;
            f->power_mean_mw += d->power.sum / (double)d->power.n;
            f->power_max_mw += d->power.max;
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
    f->have_used = used_devices > 0 && used_devices == f->metric_devices;
    f->used_partial = used_devices > 0 && !f->have_used;
    f->have_power = power_devices > 0 && power_devices == f->metric_devices;
    f->power_partial = power_devices > 0 && !f->have_power;
    f->have_util = util_n > 0;
    f->util_mean = util_n ? util_sum / (double)util_n : 0;
    f->have_energy = energy_devices > 0;
    f->energy_partial = energy_devices > 0 && energy_devices < f->metric_devices;
    f->energy_source = counter && integral ? "mixed" : counter ? "counter" : "power_integral";
}

/* The count before `what` in a capability's message: the recorder writes
 * "N scope events dropped: ..." and "N metric rows dropped: ..."
 * (recorder/capabilities.c, fl_caps_mark_lost_rows; a feature's later
 * losses are appended after "; ", so the count is looked for, not assumed
 * first; pinned by test_gpufl_session's ring_full case). */
static bool count_before(const char *msg, const char *what, uint64_t *n)
{
    const char *at = msg ? strstr(msg, what) : NULL;
    if (!at || at == msg || at[-1] < '0' || at[-1] > '9')
        return false;
    const char *p = at;
    while (p > msg && p[-1] >= '0' && p[-1] <= '9')
        p--;
    uint64_t v = 0;
    for (; p < at; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *n = v;
    return true;
}

/* What the recorder dropped (its closing capture_capabilities: scope
 * events of a full ring, metric rows of a full queue) and what its files
 * could not take (the shutdown's lines_lost, rows_lost).  A count is
 * known when the session says it: a capability that counts, or our
 * shutdown (it always carries lines_lost, and our closing capabilities
 * then say every drop), so a clean session of ours without a drop says 0. */
static void losses(const fl_report *r, figures *f)
{
    const fl_model *m = r->m;
    f->have_lost = fl_jget_u64(m->shutdown, "lines_lost", &f->lines_lost) &&
                   fl_jget_u64(m->shutdown, "rows_lost", &f->rows_lost);
    f->have_scope_drops = f->have_metric_drops = f->have_lost && m->caps;
    const json_t *caps = json_object_get(m->caps, "capabilities");
    for (size_t i = 0; i < json_array_size(caps); i++) {
        const json_t *e = json_array_get(caps, i);
        const char *feat = fl_jget_str(e, "feature"), *msg = fl_jget_str(e, "message");
        if (!feat)
            continue;
        if (strcmp(feat, "scope_events") == 0 &&
            count_before(msg, " scope events dropped", &f->scope_events_dropped))
            f->have_scope_drops = true;
        else if (strcmp(feat, "device_metrics") == 0 &&
                 count_before(msg, " metric rows dropped", &f->metric_rows_dropped))
            f->have_metric_drops = true;
    }
    f->scope_ends_dropped = f->scope_events_dropped > 0 && m->have_shutdown && !f->crashed;
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
    losses(r, f);
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
