/*
 * report/collect_records.c - the report's share of the records that are
 * not batches, beyond the model's (job_start, dictionaries, capabilities,
 * details, shutdown): memsets with their real times (GPUFlight's
 * start_ns / end_ns or our ts_ns / duration_ns), NVTX markers (as NVTX
 * scopes), graph launches and node definitions, the range profiler's
 * results per kernel and per scope, PM sampling and SASS metric
 * configurations, deep windows, execution signatures, the sass channel's
 * disassembly (counted, never kept), and record types nobody knows.
 *
 * Memory follows what is distinct (kernel and scope names, graphs, window
 * names, signatures, functions, types) and a few configurations, never the
 * number of records.  A record missing what makes it usable is counted in
 * the model's bad_rows.
 */
#include "report_int.h"
#include "../util/buf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAPH_BY_ID (1ull << 63)

static const char *intern(fl_report *r, const char *s)
{
    const char *p = s ? fl_pool_intern(&r->pool, s) : NULL;
    if (s && !p)
        r->oom = true;
    return p;
}

/* ------------------------------------------------------------- memset */

static void memset_event(fl_report *r, const json_t *rec)
{
    uint64_t bytes = 0, t, dur = 0;
    fl_jget_u64(rec, "bytes", &bytes);
    if (!fl_jget_span(rec, &t, &dur))
        dur = 0;
    r->memsets.count++;
    r->memsets.bytes += bytes;
    r->memsets.time_ns += dur;
}

/* XIDs (device_error_event): counted on their device, the newest kept. */
static void device_error(fl_report *r, const json_t *rec)
{
    uint64_t id = 0, xid = 0, count = 0;
    if (!fl_jget_u64(rec, "device_id", &id) || !fl_jget_u64(rec, "xid", &xid) ||
        !fl_jget_u64(rec, "count", &count) || id > INT32_MAX || xid > UINT32_MAX)
        return;
    dstat *d = fl_report_device(r, (int64_t)id);
    if (!d)
        return;
    d->xid_events += count;
    d->xid_last = (uint32_t)xid;
}

/* ---------------------------------------------------------------- NVTX */

static void nvtx_marker(fl_report *r, const json_t *rec)
{
    const char *name = fl_jget_str(rec, "name");
    uint64_t t, dur;
    if (!name || !fl_jget_span(rec, &t, &dur)) {
        r->m->bad_rows++;
        return;
    }
    sstat *s = fl_report_scope(r, intern(r, name[0] ? name : "(unnamed NVTX range)"), true, NULL);
    if (s)
        fl_report_scope_add(r, s, dur);
}

/* -------------------------------------------------------------- graphs */

void fl_report_graph_launch(fl_report *r, const char *exec_key, bool have_graph_id,
                            uint64_t graph_id, uint64_t dur)
{
    r->graphs++;
    r->graph_ns += dur;
    const char *k = exec_key && exec_key[0] ? intern(r, exec_key) : NULL;
    uint64_t key = k ? (uint64_t)(uintptr_t)k : GRAPH_BY_ID | (have_graph_id ? graph_id : ~0ull);
    graphstat *g = fl_report_entry(r, &r->gr_by_key, (void **)&r->gr, &r->n_gr, &r->cap_gr,
                                   sizeof *r->gr, key, NULL);
    if (!g)
        return;
    g->exec_key = k;
    if (have_graph_id && !g->have_graph_id) {
        g->graph_id = graph_id;
        g->have_graph_id = true;
    }
    g->launches++;
    g->time_ns += dur;
}

static void graph_launch(fl_report *r, const json_t *rec)
{
    uint64_t t, dur = 0, id;
    if (!fl_jget_span(rec, &t, &dur) && !fl_jget_u64(rec, "duration_ns", &dur))
        dur = 0; /* CUPTI gave no time: the launch still counts */
    bool have_id = fl_jget_u64(rec, "graph_id", &id);
    fl_report_graph_launch(r, fl_jget_str(rec, "graph_exec_key"), have_id, have_id ? id : 0, dur);
}

static void graph_node(fl_report *r, const json_t *rec)
{
    const char *key = fl_jget_str(rec, "graph_exec_key");
    const char *k = key && key[0] ? intern(r, key) : NULL;
    if (!k) {
        r->m->bad_rows++;
        return;
    }
    graphstat *g = fl_report_entry(r, &r->gr_by_key, (void **)&r->gr, &r->n_gr, &r->cap_gr,
                                   sizeof *r->gr, (uint64_t)(uintptr_t)k, NULL);
    if (g) {
        g->exec_key = k;
        g->nodes++;
    }
}

/* ------------------------------------------------------ range profiler */

static void perf_add(perfstat *p, const json_t *rec, size_t nkeys)
{
    p->ranges++;
    for (size_t i = 0; i < nkeys; i++) {
        double v;
        /* -1: not collected; another negative is no value either. */
        if (!fl_jget_real(rec, fl_perf_keys[i], &v) || v == -1)
            continue;
        bool rate = i == FL_PERF_L1_HIT || i == FL_PERF_L2_HIT;
        if (rate && (v < 0 || v > 100)) {
            p->invalid++; /* GPUFlight's analyzer makes these NaN too */
            continue;
        }
        if (v >= 0) {
            p->n[i]++;
            p->sum[i] += v;
        }
    }
}

static bool digits(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Kernel replay's range, named by CUPTI "0", "1"...: kept by its
 * launch_ordinal (the ordinal-th launch of the session by start time,
 * as GPUFlight's analyzer and text report count) until the end. */
static bool kernel_perf_by_ordinal(fl_report *r, const char *name, const json_t *rec)
{
    uint64_t ord;
    if (!digits(name) || !fl_jget_u64(rec, "launch_ordinal", &ord) || ord == 0)
        return false;
    perfstat *p = fl_report_entry(r, &r->kp_ord_by, (void **)&r->kp_ord, &r->n_kp_ord,
                                  &r->cap_kp_ord, sizeof *r->kp_ord, ord, NULL);
    if (p) {
        p->name = intern(r, name);
        p->ordinal = ord;
        perf_add(p, rec, FL_PERF_COUNT);
    }
    return true;
}

static int cmp_launch(const void *a, const void *b)
{
    const launchrec *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void fl_report_launch_log(fl_report *r, uint32_t kernel_id, uint64_t start_ns)
{
    if (r->ll_state == 0) {
        gpufl_engine e;
        bool rp = r->m->engine && fl_engine_of_wire(r->m->engine, &e) &&
                  (e == GPUFL_ENGINE_RANGE_PROFILER || e == GPUFL_ENGINE_DEEP);
        r->ll_state = rp ? 1 : -1;
        if (!rp)
            return;
    }
    if (r->n_ll >= MAX_LAUNCH_LOG) {
        r->ll_more++;
        return;
    }
    if (r->n_ll == r->cap_ll) {
        size_t cap = r->cap_ll ? r->cap_ll * 2 : 1024;
        launchrec *p = fl_keys_charge(&r->m->keys, (cap - r->cap_ll) * sizeof *p)
                           ? realloc(r->ll, cap * sizeof *p)
                           : NULL;
        if (!p) {
            r->oom = true;
            r->ll_state = -1;
            return;
        }
        r->ll = p;
        r->cap_ll = cap;
    }
    r->ll[r->n_ll] = (launchrec){start_ns, kernel_id, (uint32_t)r->n_ll};
    r->n_ll++;
}

/* Each range kept by ordinal into its kernel's row (the name the range
 * had when the launch is not known: beyond the log, or no launches). */
void fl_report_perf_ordinals(fl_report *r)
{
    if (!r->n_kp_ord)
        return;
    if (r->n_ll > 1)
        qsort(r->ll, r->n_ll, sizeof *r->ll, cmp_launch);
    for (size_t i = 0; i < r->n_kp_ord; i++) {
        const perfstat *o = &r->kp_ord[i];
        const char *name = o->ordinal <= r->n_ll
                               ? fl_model_kernel_name(r->m, r->ll[o->ordinal - 1].kernel_id)
                               : NULL;
        const char *k = intern(r, name ? name : o->name);
        perfstat *p = k ? fl_report_entry(r, &r->kp_by_name, (void **)&r->kp, &r->n_kp, &r->cap_kp,
                                          sizeof *r->kp, (uint64_t)(uintptr_t)k, NULL)
                        : NULL;
        if (!p)
            continue;
        p->name = k;
        p->ranges += o->ranges;
        p->invalid += o->invalid;
        for (size_t m = 0; m < FL_PERF_COUNT; m++) {
            p->n[m] += o->n[m];
            p->sum[m] += o->sum[m];
        }
    }
    r->n_kp_ord = 0;
}

static void kernel_perf(fl_report *r, const json_t *rec)
{
    const char *name = fl_jget_str(rec, "kernel_name");
    if (!name || !name[0])
        name = fl_jget_str(rec, "range_name");
    if (kernel_perf_by_ordinal(r, name, rec))
        return;
    const char *k = name && name[0] ? intern(r, name) : NULL;
    if (!k) {
        r->m->bad_rows++;
        return;
    }
    perfstat *p = fl_report_entry(r, &r->kp_by_name, (void **)&r->kp, &r->n_kp, &r->cap_kp,
                                  sizeof *r->kp, (uint64_t)(uintptr_t)k, NULL);
    if (p) {
        p->name = k;
        perf_add(p, rec, FL_PERF_COUNT);
    }
}

static void scope_perf(fl_report *r, const json_t *rec)
{
    const char *name = fl_jget_str(rec, "name");
    const char *k = name && name[0] ? intern(r, name) : NULL;
    uint64_t t, dur;
    if (!k || !fl_jget_span(rec, &t, &dur)) {
        r->m->bad_rows++;
        return;
    }
    bool fresh;
    perfstat *p = fl_report_entry(r, &r->sp_by_name, (void **)&r->sp, &r->n_sp, &r->cap_sp,
                                  sizeof *r->sp, (uint64_t)(uintptr_t)k, &fresh);
    if (!p)
        return;
    p->name = k;
    if (fresh)
        p->user_scope = intern(r, fl_jget_str(rec, "user_scope"));
    p->time_ns += dur;
    perf_add(p, rec, FL_PERF_SCOPE_COUNT);
}

/* -------------------------------------------------------- configurations */

/* About what Jansson holds for v: its strings' bytes and a node's
 * overhead for each value. */
static size_t json_bytes(const json_t *v)
{
    size_t n = 64;
    if (json_is_string(v))
        return n + json_string_length(v) + 1;
    if (json_is_array(v))
        for (size_t i = 0; i < json_array_size(v); i++)
            n += json_bytes(json_array_get(v, i));
    const char *key;
    const json_t *m;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, m)
        {
            n += strlen(key) + 1 + 32 + json_bytes(m);
        }
    }
    return n;
}

/* The record kept whole, charged to the report's bytes: a configuration
 * is one line, and 16 of them could be 16 long lines. */
static void keep_config(fl_report *r, json_t **list, uint64_t *more, const json_t *rec)
{
    if (!*list && !(*list = json_array())) {
        r->oom = true;
        return;
    }
    if (json_array_size(*list) >= MAX_CONFIGS) {
        (*more)++;
        return;
    }
    if (!fl_keys_charge(&r->m->keys, json_bytes(rec))) {
        r->oom = true;
        return;
    }
    if (json_array_append_new(*list, json_deep_copy(rec)) != 0)
        r->oom = true;
}

/* ---------------------------------------------------------- deep windows */

/* A list of strings joined by ", " (interned); NULL when not a list. */
static const char *joined(fl_report *r, const json_t *arr)
{
    if (!json_is_array(arr))
        return NULL;
    fl_buf b = {0};
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s)
            continue;
        if (b.len)
            fl_buf_puts(&b, ", ");
        fl_buf_puts(&b, s);
    }
    const char *out = intern(r, b.p ? b.p : "");
    fl_buf_free(&b);
    return out;
}

static void capture_window(fl_report *r, const json_t *rec)
{
    const char *trig = fl_jget_str(rec, "trigger"), *name = fl_jget_str(rec, "name");
    uint64_t t, dur;
    if (!trig || !fl_jget_span(rec, &t, &dur)) {
        r->m->bad_rows++;
        return;
    }
    const char *ti = intern(r, trig), *ni = intern(r, name ? name : "");
    size_t i = 0;
    while (i < r->n_cw && (r->cw[i].trigger != ti || r->cw[i].name != ni))
        i++;
    if (i == r->n_cw) {
        if (i == FL_CAPWIN_MAX || !ti || !ni) {
            r->capwin_other++;
            return;
        }
        r->cw[r->n_cw++] = (capwin){.trigger = ti, .name = ni, .first_start_ns = t};
    }
    capwin *c = &r->cw[i];
    c->count++;
    c->time_ns += dur;
    c->open += json_is_true(json_object_get(rec, "open_at_shutdown"));
    if (t < c->first_start_ns)
        c->first_start_ns = t;
}

/* The rule that opened a window (GPUFlight writes "trigger" only then). */
static void deep_trigger(fl_report *r, deepstat *d, const json_t *t)
{
    if (!json_is_object(t))
        return;
    d->triggered++;
    d->rule_id = intern(r, fl_jget_str(t, "rule_id"));
    d->metric = intern(r, fl_jget_str(t, "metric"));
    d->op = intern(r, fl_jget_str(t, "op"));
    d->have_threshold = fl_jget_real(t, "threshold", &d->threshold);
    d->have_observed = fl_jget_real(t, "observed", &d->observed);
    d->have_fired = fl_jget_u64(t, "fired_ns", &d->fired_ns);
}

static void deep_window(fl_report *r, const json_t *rec)
{
    const char *name = fl_jget_str(rec, "name");
    const char *k = intern(r, name ? name : "");
    uint64_t t, dur, launches = 0;
    if (!k || !fl_jget_span(rec, &t, &dur)) {
        r->m->bad_rows++;
        return;
    }
    bool fresh;
    deepstat *d = fl_report_entry(r, &r->dw_by_name, (void **)&r->dw, &r->n_dw, &r->cap_dw,
                                  sizeof *r->dw, (uint64_t)(uintptr_t)k, &fresh);
    if (!d)
        return;
    d->name = k;
    if (fresh)
        d->engines = joined(r, json_object_get(rec, "engines"));
    const char *why = fl_jget_str(rec, "close_reason");
    if (why)
        d->close_reason = intern(r, why);
    fl_jget_u64(rec, "launches_covered", &launches);
    deep_trigger(r, d, json_object_get(rec, "trigger"));
    d->count++;
    d->time_ns += dur;
    d->launches += launches;
}

/* ----------------------------------------------------------- signatures */

static void signature(fl_report *r, const json_t *rec)
{
    const char *scope = fl_jget_str(rec, "scope_name");
    const char *sig = fl_jget_str(rec, "signature");
    char num[32];
    uint64_t v;
    if (!sig && fl_jget_u64(rec, "signature", &v)) {
        snprintf(num, sizeof num, "%" PRIu64, v);
        sig = num;
    }
    if (!scope || !sig) {
        r->m->bad_rows++;
        return;
    }
    size_t n = strlen(scope) + strlen(sig) + 2;
    char *both = malloc(n);
    if (!both) {
        r->oom = true;
        return;
    }
    snprintf(both, n, "%s\x1f%s", scope, sig);
    const char *k = intern(r, both);
    free(both);
    sigstat *s = k ? fl_report_entry(r, &r->sg_by_key, (void **)&r->sg, &r->n_sg, &r->cap_sg,
                                     sizeof *r->sg, (uint64_t)(uintptr_t)k, NULL)
                   : NULL;
    if (!s)
        return;
    s->scope = intern(r, scope);
    s->signature = intern(r, sig);
    s->records++;
    fl_jget_u64(rec, "launch_count", &s->launch_count);
    fl_jget_u64(rec, "distinct_kernels", &s->distinct_kernels);
}

/* ------------------------------------------------------- the sass channel */

/* name (interned) into the list, once. */
static void sass_name(fl_report *r, const char ***list, size_t *n, size_t *cap, const char *name,
                      uint64_t tag)
{
    const char *k = intern(r, name);
    bool fresh;
    if (!k)
        return;
    fl_mval *v = fl_map_put(&r->sass_seen, (uint64_t)(uintptr_t)k * 2 + tag, &fresh);
    if (!v) {
        r->oom = true;
        return;
    }
    if (!fresh)
        return;
    if (fl_report_grow(r, (void **)list, cap, *n + 1, sizeof **list) != 0) {
        r->oom = true;
        return;
    }
    (*list)[(*n)++] = k;
}

static void sass_record(fl_report *r, fl_type t, const json_t *rec)
{
    char buf[64];
    uint64_t id;
    const char *name;
    if (t == FL_T_SOURCE_FILE_CONTENT) {
        r->sources++;
        name = fl_jget_str(rec, "path");
        if (!name && fl_jget_u64(rec, "source_file_id", &id)) {
            name = fl_model_source_file_name(r->m, id);
            if (!name) {
                snprintf(buf, sizeof buf, "(source file id %" PRIu64 ")", id);
                name = buf;
            }
        }
        if (name)
            sass_name(r, &r->sass_src, &r->n_sass_src, &r->cap_sass_src, name, 1);
        return;
    }
    if (t == FL_T_CUBIN_DISASSEMBLY)
        r->cubins++;
    else
        r->ptxs++;
    name = fl_jget_str(rec, "function_name");
    if (!name && fl_jget_u64(rec, "function_id", &id)) {
        name = fl_model_function_name(r->m, id);
        if (!name) {
            snprintf(buf, sizeof buf, "(function id %" PRIu64 ")", id);
            name = buf;
        }
    }
    if (name)
        sass_name(r, &r->sass_fn, &r->n_sass_fn, &r->cap_sass_fn, name, 0);
}

/* -------------------------------------------------------- unknown types */

void fl_report_unknown_type(fl_report *r, const char *type)
{
    const char *k = intern(r, type ? type : "");
    if (!k)
        return;
    for (size_t i = 0; i < r->n_unknown; i++) {
        if (r->unknown[i].type == k) {
            r->unknown[i].records++;
            return;
        }
    }
    if (r->n_unknown < MAX_UNKNOWN)
        r->unknown[r->n_unknown++] = (unkstat){.type = k, .records = 1};
}

/* ------------------------------------------------------------- dispatch */

void fl_report_gpufl_record(fl_report *r, int channel, fl_type t, const char *type,
                            const json_t *rec)
{
    (void)channel;
    switch (t) {
    case FL_T_MEMSET_EVENT:
        memset_event(r, rec);
        break;
    case FL_T_NVTX_MARKER_EVENT:
        nvtx_marker(r, rec);
        break;
    case FL_T_GRAPH_LAUNCH_EVENT:
        graph_launch(r, rec);
        break;
    case FL_T_GRAPH_NODE_DEFINITION:
        graph_node(r, rec);
        break;
    case FL_T_KERNEL_PERF_METRIC_EVENT:
        kernel_perf(r, rec);
        break;
    case FL_T_PERF_METRIC_EVENT:
        scope_perf(r, rec);
        break;
    case FL_T_PM_SAMPLING_CONFIG:
        keep_config(r, &r->pm_configs, &r->pm_configs_more, rec);
        break;
    case FL_T_SASS_CONFIG:
        keep_config(r, &r->sass_configs, &r->sass_configs_more, rec);
        break;
    case FL_T_DEEP_WINDOW_EVENT:
        deep_window(r, rec);
        break;
    case FL_T_CAPTURE_WINDOW:
        capture_window(r, rec);
        break;
    case FL_T_DEVICE_ERROR_EVENT:
        device_error(r, rec);
        break;
    case FL_T_EXECUTION_SIGNATURE:
        signature(r, rec);
        break;
    case FL_T_CUBIN_DISASSEMBLY:
    case FL_T_PTX_DISASSEMBLY:
    case FL_T_SOURCE_FILE_CONTENT:
        sass_record(r, t, rec);
        break;
    case FL_T_JOB_START:
    case FL_T_SEGMENT_START:
    case FL_T_SEGMENT_END:
    case FL_T_RUN_END:
    case FL_T_DEEP_WINDOW_RULE_SUMMARY:
    case FL_T_COUNTER_DATA_QUALITY_SUMMARY:
        fl_report_lifecycle(r, t, rec);
        break;
    case FL_T_INIT:
        fl_report_lifecycle(r, FL_T_JOB_START, rec);
        break;
    case FL_T_KERNEL_EVENT:
    case FL_T_MEMCPY_EVENT:
    case FL_T_SCOPE_BEGIN:
    case FL_T_SCOPE_END:
    case FL_T_SYSTEM_SAMPLE:
        fl_report_legacy(r, t, rec);
        break;
    case FL_T_UNKNOWN:
        fl_report_unknown_type(r, type);
        break;
    default:
        break;
    }
}

void fl_report_gpufl_free(fl_report *r)
{
    free(r->kp);
    free(r->sp);
    fl_map_free(&r->kp_by_name);
    fl_map_free(&r->sp_by_name);
    free(r->gr);
    fl_map_free(&r->gr_by_key);
    free(r->dw);
    fl_map_free(&r->dw_by_name);
    free(r->sg);
    fl_map_free(&r->sg_by_key);
    json_decref(r->pm_configs);
    json_decref(r->sass_configs);
    free(r->sass_fn);
    free(r->sass_src);
    fl_map_free(&r->sass_seen);
    fl_report_lifecycle_free(r);
    fl_report_legacy_free(r);
    free(r->kp_ord);
    fl_map_free(&r->kp_ord_by);
    free(r->ll);
}
