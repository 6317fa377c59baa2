/*
 * report/collect.c - the report's life and the reader's callbacks: every
 * record and batch of a session summed up as it streams by, into counters
 * and histograms whose size follows what is distinct in the session
 * (scope names, devices, stall reasons, metrics), never its events.
 * Kernel rows, the bulk of a session, are kernels.c's; the records that
 * are not batches, collect_records.c's.
 *
 * A scope instance is remembered only while it is open (scopes.h pairs
 * the rows); scopes still open at the end are counted as open_at_end.
 */
#include "report_int.h"
#include "sass_metrics.h"
#include "stalls.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "scopes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ============================================================= batches */

static void acc_add(acc *a, double v)
{
    if (a->n == 0 || v > a->max)
        a->max = v;
    a->sum += v;
    a->n++;
}

static void memcpy_batch(fl_report *r, const fl_batch *b)
{
    int c_dur = fl_batch_colid(b, FL_COL_MEMCPY_DURATION_NS),
        c_bytes = fl_batch_colid(b, FL_COL_MEMCPY_BYTES),
        c_kind = fl_batch_colid(b, FL_COL_MEMCPY_COPY_KIND);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t kind, bytes = 0, dur = 0;
        if (!fl_rcell_u64(b, i, c_kind, &kind)) {
            r->m->bad_rows++;
            continue;
        }
        fl_rcell_u64(b, i, c_bytes, &bytes);
        fl_rcell_u64(b, i, c_dur, &dur);
        opstat *o = &r->copies[kind < 256 ? kind : 256];
        o->count++;
        o->bytes += bytes;
        o->time_ns += dur;
    }
}

/* One row through the sampler's detector (one implementation: the run
 * summary and `serve` call it too); a row without util.gpu, SM activity
 * or power breaks the run, as a sample without them does. */
static void stuck_row(dstat *d, const gp_stuck_rule *rule, const fl_batch *b, size_t i, uint64_t t,
                      int c_ug, int c_pw, int c_sm)
{
    gp_device_sample s;
    memset(&s, 0, sizeof s);
    double v;
    if (fl_rcell_real(b, i, c_ug, &v) && v >= 0 && v <= 100) {
        s.util_gpu_pct = (uint32_t)(v + 0.5);
        s.valid |= GP_M_UTIL_GPU;
    }
    if (fl_rcell_real(b, i, c_pw, &v) && v >= 0 && v < 4e9) {
        s.power_mw = (uint32_t)(v + 0.5);
        s.valid |= GP_M_POWER;
    }
    if (fl_rcell_real(b, i, c_sm, &v) && v >= 0) {
        s.gpm[GP_GPM_SM_ACTIVE] = v / 100.0; /* the column is percent x 100 */
        s.valid |= GP_M_GPM(GP_GPM_SM_ACTIVE);
    }
    int st = gp_stuck_feed(&d->stuck, rule, &s);
    if (d->stuck.run == 1)
        d->stuck_run_start_ns = t;
    if (st == 1 && d->stuck.episodes >= 1 && d->stuck.episodes <= FL_STUCK_KEPT) {
        fl_stuck_stretch *k = &d->stuck_kept[d->stuck.episodes - 1];
        k->start_ns = d->stuck_run_start_ns;
        k->end_ns = t;
        k->samples = d->stuck.run;
    }
}

static void device_batch(fl_report *r, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_DEVMETRIC_DT_NS),
        c_dev = fl_batch_colid(b, FL_COL_DEVMETRIC_DEVICE_ID),
        c_ug = fl_batch_colid(b, FL_COL_DEVMETRIC_GPU_UTIL),
        c_um = fl_batch_colid(b, FL_COL_DEVMETRIC_MEM_UTIL),
        c_temp = fl_batch_colid(b, FL_COL_DEVMETRIC_TEMP_C),
        c_pw = fl_batch_colid(b, FL_COL_DEVMETRIC_POWER_MW),
        c_used = fl_batch_colid(b, FL_COL_DEVMETRIC_USED_MIB),
        c_total = fl_batch_colid(b, FL_COL_DEVMETRIC_TOTAL_MIB),
        c_clk = fl_batch_colid(b, FL_COL_DEVMETRIC_CLOCK_SM),
        c_clkm = fl_batch_colid(b, FL_COL_DEVMETRIC_CLOCK_MEM),
        c_e = fl_batch_colid(b, FL_COL_DEVMETRIC_ENERGY_UJ);
    int c_gpm[FL_GPM_N];
    for (int g = 0; g < FL_GPM_N; g++)
        c_gpm[g] = fl_batch_colid(b, FL_COL_DEVMETRIC_SM_ACTIVE + g);
    gp_stuck_rule rule;
    gp_stuck_rule_init(&rule);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt) || !fl_rcell_u64(b, i, c_dev, &dev) || dev > INT64_MAX) {
            r->m->bad_rows++;
            continue;
        }
        dstat *d = fl_report_device(r, (int64_t)dev);
        if (!d)
            return;
        uint64_t t = b->base_time_ns + dt;
        double v;
        uint64_t u;
        d->samples++;
        if (fl_rcell_real(b, i, c_ug, &v))
            acc_add(&d->util_gpu, v);
        if (fl_rcell_real(b, i, c_um, &v))
            acc_add(&d->util_mem, v);
        if (fl_rcell_real(b, i, c_temp, &v))
            acc_add(&d->temp, v);
        if (fl_rcell_real(b, i, c_used, &v))
            acc_add(&d->used, v);
        if (fl_rcell_real(b, i, c_total, &v)) {
            d->total_mib = v;
            d->have_total = true;
        }
        if (fl_rcell_real(b, i, c_clk, &v))
            acc_add(&d->clock_sm, v);
        if (fl_rcell_real(b, i, c_clkm, &v))
            acc_add(&d->clock_mem, v);
        if (fl_rcell_u64(b, i, c_e, &u)) {
            if (!d->have_energy)
                d->energy_first = u;
            d->energy_last = u;
            d->have_energy = true;
            d->energy_readings++;
        }
        stuck_row(d, &rule, b, i, t, c_ug, c_pw, c_gpm[0]);
        for (int g = 0; g < FL_GPM_N; g++)
            if (fl_rcell_real(b, i, c_gpm[g], &v))
                acc_add(&d->gpm[g], g < FL_GPM_FIRST_RATE ? v / 100.0 : v);
        if (fl_rcell_real(b, i, c_pw, &v)) {
            acc_add(&d->power, v);
            /* Trapezoids between consecutive readings of the device. */
            if (d->have_prev_power && t > d->prev_t) {
                d->power_integral_j +=
                    (v + d->prev_power_mw) / 2.0 * 1e-3 * ((double)(t - d->prev_t) * 1e-9);
                d->power_pairs++;
            }
            d->have_prev_power = true;
            d->prev_t = t;
            d->prev_power_mw = v;
        }
    }
}

static void host_batch(fl_report *r, const fl_batch *b)
{
    int c_cpu = fl_batch_colid(b, FL_COL_HOSTMETRIC_CPU_PCT_X100),
        c_used = fl_batch_colid(b, FL_COL_HOSTMETRIC_RAM_USED_MIB),
        c_total = fl_batch_colid(b, FL_COL_HOSTMETRIC_RAM_TOTAL_MIB);
    if (b->hostname && !r->host_name)
        r->host_name = fl_pool_intern(&r->pool, b->hostname);
    for (size_t i = 0; i < b->nrows; i++) {
        double v;
        r->host_samples++;
        if (fl_rcell_real(b, i, c_cpu, &v))
            acc_add(&r->cpu, v / 100.0);
        if (fl_rcell_real(b, i, c_used, &v))
            acc_add(&r->ram_used, v);
        if (fl_rcell_real(b, i, c_total, &v)) {
            r->ram_total_mib = v;
            r->have_ram_total = true;
        }
    }
}

static const char *scope_name(fl_report *r, uint64_t name_id)
{
    /* Interned in the report's pool, as the user_scope names are, so one
     * name is one scope whichever way it came. */
    const char *n = fl_model_scope_name(r->m, name_id);
    if (n)
        return fl_pool_intern(&r->pool, n);
    char buf[64];
    snprintf(buf, sizeof buf, "(scope id %" PRIu64 ", not in scope_name_dict)", name_id);
    return fl_pool_intern(&r->pool, buf);
}

static void scope_done(fl_report *r, uint64_t instance, uint64_t name_id, uint64_t dur)
{
    sstat *s =
        fl_report_scope(r, scope_name(r, name_id), (instance & FL_NVTX_INSTANCE_BIT) != 0, NULL);
    if (s)
        fl_report_scope_add(r, s, dur);
}

static void scope_batch(fl_report *r, const fl_batch *b)
{
    fl_scope_cols c = fl_scope_cols_of(b);
    r->scope_rows += b->nrows;
    for (size_t i = 0; i < b->nrows; i++) {
        fl_scope_end e;
        switch (fl_scope_row(&r->open, b, &c, i, &e)) {
        case FL_SCOPE_BAD_ROW:
            r->m->bad_rows++;
            break;
        case FL_SCOPE_OOM:
            r->oom = true;
            return;
        case FL_SCOPE_UNMATCHED_END:
            r->scope_unmatched_ends++;
            break;
        case FL_SCOPE_ENDED:
            scope_done(r, e.instance, e.name_id, e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0);
            break;
        case FL_SCOPE_NOTHING:
            break;
        }
    }
}

/* The stall reason's counters, made at its first sample; NULL when out
 * of memory.  A PC Sampling API row's reason is the one metric_dict names
 * (metric_id); an activity-API row's (metric_id 0) CUPTI's enum value. */
static stallstat *stall_of(fl_report *r, uint64_t reason, uint64_t metric_id)
{
    for (size_t k = 0; k < r->n_st; k++)
        if (r->st[k].metric_id == metric_id && (metric_id || r->st[k].reason == reason))
            return &r->st[k];
    stallstat *s = fl_report_append(r, (void **)&r->st, &r->n_st, &r->cap_st, sizeof *r->st);
    if (s) {
        s->reason = reason;
        s->metric_id = metric_id;
    }
    return s;
}

/* A SASS metric row (sample_kind 1): metric_value of metric_id. */
static void sass_metric(fl_report *r, uint64_t metric_id, double value)
{
    sassstat *m = NULL;
    for (size_t k = 0; k < r->n_sm && !m; k++)
        if (r->sm[k].metric_id == metric_id)
            m = &r->sm[k];
    if (!m) {
        m = fl_report_append(r, (void **)&r->sm, &r->n_sm, &r->cap_sm, sizeof *r->sm);
        if (!m)
            return;
        m->metric_id = metric_id;
    }
    m->rows++;
    m->total += value;
}

/* The same for a function's samples. */
static fnstat *function_of(fl_report *r, uint64_t function_id)
{
    for (size_t k = 0; k < r->n_fn; k++)
        if (r->fn[k].function_id == function_id)
            return &r->fn[k];
    fnstat *f = fl_report_append(r, (void **)&r->fn, &r->n_fn, &r->cap_fn, sizeof *r->fn);
    if (f)
        f->function_id = function_id;
    return f;
}

static void profile_batch(fl_report *r, const fl_batch *b)
{
    int c_kind = fl_batch_colid(b, FL_COL_PROFILE_SAMPLE_KIND),
        c_reason = fl_batch_colid(b, FL_COL_PROFILE_STALL_REASON),
        c_val = fl_batch_colid(b, FL_COL_PROFILE_METRIC_VALUE),
        c_fn = fl_batch_colid(b, FL_COL_PROFILE_FUNCTION_ID),
        c_metric = fl_batch_colid(b, FL_COL_PROFILE_METRIC_ID),
        c_corr = fl_batch_colid(b, FL_COL_PROFILE_CORR_ID),
        c_pc = fl_batch_colid(b, FL_COL_PROFILE_PC_OFFSET),
        c_scope = fl_batch_colid(b, FL_COL_PROFILE_SCOPE_NAME_ID),
        c_file = fl_batch_colid(b, FL_COL_PROFILE_SOURCE_FILE_ID),
        c_line = fl_batch_colid(b, FL_COL_PROFILE_SOURCE_LINE);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t kind = 0, reason, val, fn = 0, metric = 0;
        fl_rcell_u64(b, i, c_kind, &kind);
        if (kind == 1) {
            double v = 0;
            uint64_t u = 0, file = 0, line = 0;
            r->sass_rows++;
            fl_rcell_u64(b, i, c_metric, &metric);
            fl_rcell_real(b, i, c_val, &v);
            sass_metric(r, metric, v);
            fl_rcell_u64(b, i, c_fn, &fn);
            fl_rcell_u64(b, i, c_file, &file);
            fl_rcell_u64(b, i, c_line, &line);
            if (fl_rcell_u64(b, i, c_val, &u) && !fl_sassm_row(r, fn, metric, u, file, line))
                return;
            continue;
        }
        if (kind != 0 || !fl_rcell_u64(b, i, c_reason, &reason)) {
            r->other_profile_rows++;
            continue;
        }
        /* metric_value: the samples the row stands for (1 if absent). */
        if (!fl_rcell_u64(b, i, c_val, &val) || val == 0)
            val = 1;
        fl_rcell_u64(b, i, c_fn, &fn);
        bool have_metric = fl_rcell_u64(b, i, c_metric, &metric);
        psrow row = {.function_id = fn,
                     .metric_id = metric,
                     .reason = reason,
                     .samples = val,
                     .have_metric = have_metric};
        row.have_corr = fl_rcell_u64(b, i, c_corr, &row.corr);
        row.have_pc = fl_rcell_u64(b, i, c_pc, &row.pc);
        fl_rcell_u64(b, i, c_scope, &row.scope);
        fl_rcell_u64(b, i, c_file, &row.file);
        fl_rcell_u64(b, i, c_line, &row.line);
        if (!fl_stalls_row(r, &row))
            return;
        r->pc_samples += val;
        stallstat *s = stall_of(r, reason, metric);
        if (!s)
            return;
        s->samples += val;
        if (fn && !row.not_issued) {
            fnstat *f = function_of(r, fn);
            if (!f)
                return;
            f->samples += val;
        }
    }
}

static void pm_batch(fl_report *r, const fl_batch *b)
{
    int c_metric = fl_batch_colid(b, FL_COL_PM_METRIC_ID),
        c_val = fl_batch_colid(b, FL_COL_PM_VALUE);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t metric;
        double v;
        if (!fl_rcell_u64(b, i, c_metric, &metric) || !fl_rcell_real(b, i, c_val, &v)) {
            r->m->bad_rows++;
            continue;
        }
        pmstat *p = NULL;
        for (size_t k = 0; k < r->n_pm && !p; k++)
            if (r->pm[k].metric_id == metric)
                p = &r->pm[k];
        if (!p) {
            p = fl_report_append(r, (void **)&r->pm, &r->n_pm, &r->cap_pm, sizeof *r->pm);
            if (!p)
                return;
            p->metric_id = metric;
            p->min = p->max = v;
        }
        p->n++;
        p->sum += v;
        if (v < p->min)
            p->min = v;
        if (v > p->max)
            p->max = v;
    }
}

/* Our graph_event_batch: each row a launch of its graph_id. */
static void graph_batch(fl_report *r, const fl_batch *b)
{
    int c_graph = fl_batch_colid(b, FL_COL_GRAPH_GRAPH_ID), c_dur = fl_batch_time_col(b, true);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t id, d = 0;
        bool have_id = fl_rcell_u64(b, i, c_graph, &id);
        fl_rcell_u64(b, i, c_dur, &d);
        fl_report_graph_launch(r, NULL, have_id, have_id ? id : 0, d);
    }
}

static void alloc_batch(fl_report *r, const fl_batch *b)
{
    int c_op = fl_batch_colid(b, FL_COL_ALLOC_MEMORY_OP);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t op = 0;
        fl_rcell_u64(b, i, c_op, &op);
        if (op == 2)
            r->frees++;
        else
            r->allocs++;
    }
}

/* =========================================================== callbacks */

/* Scopes still open: begun, never ended (a crash, or a scope the program
 * left open); at a run's next session too, whose scope instance ids are
 * its own. */
static void scopes_left_open(fl_report *r)
{
    for (size_t i = 0; i < r->open.cap; i++) {
        if (!r->open.used[i])
            continue;
        sstat *s = fl_report_scope(r, scope_name(r, r->open.vals[i].b),
                                   (r->open.keys[i] & FL_NVTX_INSTANCE_BIT) != 0, NULL);
        if (s)
            s->open_at_end++;
    }
}

static void cb_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    fl_report *r = user;
    if (type && rec && t != FL_T_KERNEL_DETAIL)
        fl_report_dq_flush(r);
    uint64_t sessions = r->m->next_sessions;
    fl_model_record(r->m, channel, t, type, rec);
    if (r->m->next_sessions != sessions) {
        scopes_left_open(r);
        fl_map_clear(&r->open);
    }
    if (type && rec) {
        fl_report_gpufl_record(r, channel, t, type, rec);
        fl_stalls_record(r, t, rec);
    }
}

/* A kernel_detail (cb_record's, read without jansson): the model's. */
static void cb_detail(void *user, int channel, const fl_detail *d)
{
    fl_report *r = user;
    (void)channel;
    fl_model_detail(r->m, d);
}

static void cb_batch(void *user, const fl_batch *b)
{
    fl_report *r = user;
    fl_report_dq_flush(r);
    if (b && b->type_id == FL_T_KERNEL_EVENT_BATCH) {
        fl_stalls_kernels(r, b);
        if (fl_report_kernel_batch(r, b))
            return;
    }
    fl_model_batch(r->m, b);
    if (!b)
        return;
    switch (b->type_id) {
    case FL_T_MEMCPY_EVENT_BATCH:
        memcpy_batch(r, b);
        break;
    case FL_T_DEVICE_METRIC_BATCH:
        device_batch(r, b);
        break;
    case FL_T_HOST_METRIC_BATCH:
        host_batch(r, b);
        break;
    case FL_T_SCOPE_EVENT_BATCH:
        scope_batch(r, b);
        break;
    case FL_T_PROFILE_SAMPLE_BATCH:
        profile_batch(r, b);
        break;
    case FL_T_PM_SAMPLE_BATCH:
        pm_batch(r, b);
        break;
    case FL_T_GRAPH_EVENT_BATCH:
        graph_batch(r, b);
        break;
    case FL_T_SYNCHRONIZATION_EVENT_BATCH:
        fl_report_sync_batch(r, b);
        break;
    case FL_T_MEMORY_ALLOC_EVENT_BATCH:
        alloc_batch(r, b);
        break;
    case FL_T_UNKNOWN:
        fl_report_unknown_type(r, b->type);
        break;
    default:
        break;
    }
}

static void cb_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    fl_report *r = user;
    if (r->warnings < MAX_WARNINGS_KEPT) {
        const char *base = file ? strrchr(file, '/') : NULL;
        base = base ? base + 1 : file ? file : "?";
        size_t len = strlen(base) + (msg ? strlen(msg) : 0) + 32;
        char *t = malloc(len);
        if (t) {
            snprintf(t, len, "%s:%" PRIu64 ": %s", base, line, msg ? msg : "");
            r->warning_text[r->warnings] = t;
        }
    }
    r->warnings++;
}

fl_report *fl_report_create(void)
{
    fl_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->m = fl_model_create(fl_report_on_kernel, r);
    if (!r->m) {
        free(r);
        return NULL;
    }
    fl_report_budget_init(r);
    fl_report_callbacks(r, &r->self);
    return r;
}

void fl_report_destroy(fl_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_k; i++) {
        fl_hist_free(&r->k[i].h);
        free(r->k[i].scope_idx);
    }
    free(r->k);
    free(r->dq);
    fl_map_free(&r->k_by_id);
    free(r->k_dense);
    for (size_t i = 0; i < r->n_s; i++)
        fl_hist_free(&r->s[i].h);
    free(r->s);
    fl_map_free(&r->s_by_name);
    fl_map_free(&r->open);
    fl_report_by_free(r);
    free(r->d);
    free(r->st);
    free(r->fn);
    free(r->sm);
    free(r->pm);
    fl_report_gpufl_free(r);
    fl_report_syncs_free(r);
    fl_stalls_free(r);
    fl_sassm_free(r);
    fl_pool_free(&r->pool);
    for (size_t i = 0; i < MAX_WARNINGS_KEPT; i++)
        free(r->warning_text[i]);
    fl_model_destroy(r->m);
    free(r);
}

void fl_report_callbacks(fl_report *r, fl_read_cb *cb)
{
    *cb = (fl_read_cb){.user = r,
                       .record = cb_record,
                       .detail = cb_detail,
                       .batch = cb_batch,
                       .warning = cb_warning,
                       .stop = fl_report_stop};
}

static int cmp_stall(const void *a, const void *b)
{
    const stallstat *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return x->reason < y->reason ? -1 : x->reason > y->reason;
}

static int cmp_fn(const void *a, const void *b)
{
    const fnstat *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return x->function_id < y->function_id ? -1 : x->function_id > y->function_id;
}

static int cmp_pm(const void *a, const void *b)
{
    const pmstat *x = a, *y = b;
    return x->metric_id < y->metric_id ? -1 : x->metric_id > y->metric_id;
}

static int cmp_sass(const void *a, const void *b)
{
    const sassstat *x = a, *y = b;
    return x->metric_id < y->metric_id ? -1 : x->metric_id > y->metric_id;
}

void fl_report_finish(fl_report *r, const fl_read_result *res)
{
    fl_report_dq_flush(r);
    fl_model_finish(r->m);
    fl_report_kernels_done(r);
    fl_report_perf_ordinals(r);
    scopes_left_open(r);
    if (res) {
        r->res = *res;
        r->have_res = true;
    }
    if (r->n_st > 1)
        qsort(r->st, r->n_st, sizeof *r->st, cmp_stall);
    if (r->n_fn > 1)
        qsort(r->fn, r->n_fn, sizeof *r->fn, cmp_fn);
    if (r->n_pm > 1)
        qsort(r->pm, r->n_pm, sizeof *r->pm, cmp_pm);
    if (r->n_sm > 1)
        qsort(r->sm, r->n_sm, sizeof *r->sm, cmp_sass);
    if (!fl_stalls_finish(r) || !fl_sassm_finish(r))
        r->oom = true;
    if (r->ps) /* the not-issued samples are a subset, not more samples */
        r->pc_samples = r->ps->samples;
}

size_t fl_report_mem_bytes(const fl_report *r)
{
    size_t n = sizeof *r + fl_model_mem_bytes(r->m) + fl_map_bytes(&r->k_by_id) +
               r->n_dense * sizeof *r->k_dense + fl_map_bytes(&r->s_by_name) +
               fl_map_bytes(&r->open) + fl_pool_bytes(&r->pool) + r->cap_k * sizeof *r->k +
               r->cap_s * sizeof *r->s + r->cap_d * sizeof *r->d + r->cap_st * sizeof *r->st +
               r->cap_fn * sizeof *r->fn + r->cap_pm * sizeof *r->pm + r->cap_dq * sizeof *r->dq +
               r->cap_sm * sizeof *r->sm + r->cap_kp * sizeof *r->kp + r->cap_sp * sizeof *r->sp +
               r->cap_gr * sizeof *r->gr + r->cap_dw * sizeof *r->dw + r->cap_sg * sizeof *r->sg +
               fl_map_bytes(&r->kp_by_name) + fl_map_bytes(&r->sp_by_name) +
               fl_map_bytes(&r->gr_by_key) + fl_map_bytes(&r->dw_by_name) +
               fl_map_bytes(&r->sg_by_key) + fl_map_bytes(&r->sass_seen) +
               (r->cap_sass_fn + r->cap_sass_src) * sizeof(const char *) + fl_stalls_bytes(r) +
               fl_sassm_bytes(r);
    for (size_t i = 0; i < r->n_k; i++)
        n += fl_hist_bytes(&r->k[i].h) + r->k[i].n_scope_idx * sizeof(uint32_t);
    for (size_t i = 0; i < r->n_s; i++)
        n += fl_hist_bytes(&r->s[i].h);
    return n;
}

void fl_report_set_live(fl_report *r, bool live)
{
    if (r)
        r->live = live;
}
