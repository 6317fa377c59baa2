/*
 * report/legacy.c - GPUFlight's records from before its batches, read as
 * its analyzer reads a session without batches: kernel_event and
 * memcpy_event (one per launch and copy, the kernel named in the record),
 * scope_begin / scope_end (paired by the scope's path and depth),
 * system_sample (the devices' and the host's readings) and init (the older
 * job_start: model.c takes it as one).
 *
 * Each becomes the one-row batch our own writer would have written, with
 * a dictionary entry for its name, and goes through the report's own
 * batch callback (r->self): the figures are those of a batch session.  Names get ids from
 * LEGACY_ID_BASE up, which no writer's dictionary reaches in practice.
 * Memory follows the distinct names and the scopes open at once.
 */
#include "report_int.h"
#include "../util/buf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEGACY_ID_BASE 0xF0000000u

static const char *intern(fl_report *r, const char *s)
{
    const char *p = s ? fl_pool_intern(&r->pool, s) : NULL;
    if (s && !p)
        r->oom = true;
    return p;
}

/* The id of name in dict (kernel or scope names), made
 * and announced to the model at its first use; 0 when out of memory. */
static uint32_t name_id(fl_report *r, fl_dict dict, const char *name)
{
    const char *k = intern(r, name);
    bool fresh;
    fl_mval *v =
        k ? fl_map_put(&r->legacy_ids, (uint64_t)(uintptr_t)k * 8 + (uint64_t)dict, &fresh) : NULL;
    if (!v) {
        r->oom = true;
        return 0;
    }
    if (!fresh)
        return (uint32_t)v->a;
    v->a = LEGACY_ID_BASE + r->legacy_next++;
    char id[16];
    snprintf(id, sizeof id, "%" PRIu32, (uint32_t)v->a);
    json_t *d = json_pack("{s:s, s:{s:s}}", "type", fl_type_name(FL_T_DICTIONARY_UPDATE),
                          fl_dict_name(dict), id, name);
    if (!d) {
        r->oom = true;
        return 0;
    }
    fl_model_record(r->m, FL_CH_ALL, FL_T_DICTIONARY_UPDATE, fl_type_name(FL_T_DICTIONARY_UPDATE),
                    d);
    json_decref(d);
    return (uint32_t)v->a;
}

/* A number the record holds as a number or a string ("device_id":"0"). */
static bool num_or_str(const json_t *rec, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(rec, key);
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    char *end = NULL;
    if (!s || !*s)
        return false;
    long long n = strtoll(s, &end, 10);
    if (*end)
        return false;
    *out = n;
    return true;
}

/* One row of a batch of type t, cells vals (INT64_MIN: null), through the
 * report's batch path. */
static void feed(fl_report *r, fl_type type, const char *const *cols, size_t ncols,
                 const int64_t *vals, uint64_t base_ns)
{
    fl_cell cells[FL_MAX_COLS];
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = fl_type_name(type);
    b.cols = cols;
    b.ncols = ncols;
    b.nrows = 1;
    b.cells = cells;
    b.base_time_ns = base_ns;
    b.all_ints = true;
    for (size_t i = 0; i < ncols; i++) {
        cells[i] = (fl_cell){.kind = FL_CELL_INT, .i = vals[i]};
        if (vals[i] == INT64_MIN) {
            cells[i] = (fl_cell){.kind = FL_CELL_NULL};
            b.all_ints = false;
        }
    }
    fl_batch_map_columns(&b);
    r->self.batch(r->self.user, &b);
}

static bool span(const json_t *rec, uint64_t *start, uint64_t *dur)
{
    uint64_t s, e;
    if (!fl_jget_u64(rec, "start_ns", &s) || !fl_jget_u64(rec, "end_ns", &e) || e < s)
        return false;
    *start = s;
    *dur = e - s;
    return true;
}

static int64_t opt(const json_t *rec, const char *key)
{
    int64_t v;
    return num_or_str(rec, key, &v) ? v : INT64_MIN;
}

static void kernel_event(fl_report *r, const json_t *rec)
{
    static const char *const cols[] = {"dt_ns",       "kernel_id",   "stream_id",
                                       "duration_ns", "corr_id",     "dyn_shared",
                                       "num_regs",    "has_details", "device_id"};
    const char *name = fl_jget_str(rec, "name");
    uint64_t start, dur;
    if (!name || !span(rec, &start, &dur)) {
        r->m->bad_rows++;
        return;
    }
    uint32_t id = name_id(r, FL_DICT_KERNEL, name[0] ? name : "(unnamed kernel)");
    if (!id)
        return;
    int64_t vals[] = {0,
                      id,
                      opt(rec, "stream_id"),
                      (int64_t)dur,
                      opt(rec, "corr_id"),
                      opt(rec, "dyn_shared_bytes"),
                      opt(rec, "num_regs"),
                      0,
                      opt(rec, "device_id")};
    feed(r, FL_T_KERNEL_EVENT_BATCH, cols, sizeof cols / sizeof *cols, vals, start);
}

/* GPUFlight's copy kinds by name (its text report's table): CUPTI's. */
static int64_t copy_kind(const char *s)
{
    static const char *const names[] = {NULL,   "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
    for (size_t i = 1; s && i < sizeof names / sizeof *names; i++)
        if (strcmp(s, names[i]) == 0)
            return (int64_t)i;
    return 0; /* unknown */
}

static void memcpy_event(fl_report *r, const json_t *rec)
{
    static const char *const cols[] = {"dt_ns",     "stream_id", "duration_ns", "bytes",
                                       "copy_kind", "corr_id",   "device_id"};
    uint64_t start, dur;
    if (!span(rec, &start, &dur)) {
        r->m->bad_rows++;
        return;
    }
    int64_t vals[] = {0,
                      opt(rec, "stream_id"),
                      (int64_t)dur,
                      opt(rec, "bytes"),
                      copy_kind(fl_jget_str(rec, "copy_kind")),
                      opt(rec, "corr_id"),
                      opt(rec, "device_id")};
    feed(r, FL_T_MEMCPY_EVENT_BATCH, cols, sizeof cols / sizeof *cols, vals, start);
}

/* scope_begin / scope_end: an instance per begin, found again by the
 * end of the same path (user_scope, else name) and depth. */
static void scope_event(fl_report *r, const json_t *rec, bool begin)
{
    static const char *const cols[] = {"dt_ns", "scope_instance_id", "name_id", "event_type",
                                       "depth"};
    const char *name = fl_jget_str(rec, "name");
    const char *path = fl_jget_str(rec, "user_scope");
    uint64_t ts;
    int64_t depth = opt(rec, "scope_depth");
    if (!name || !fl_jget_u64(rec, "ts_ns", &ts)) {
        r->m->bad_rows++;
        return;
    }
    const char *k = intern(r, path && path[0] ? path : name);
    fl_mval *v =
        k ? fl_map_put(&r->legacy_open, (uint64_t)(uintptr_t)k * 64 + (uint64_t)(depth & 63), NULL)
          : NULL;
    if (!v) {
        r->oom = true;
        return;
    }
    uint64_t instance;
    if (begin) {
        instance = ++r->legacy_scopes;
        v->a = instance * 2 + 1; /* odd: open */
    } else if (v->a & 1) {
        instance = v->a / 2;
        v->a = 0;
    } else {
        instance = ++r->legacy_scopes; /* an end without a begin: said so */
    }
    uint32_t id = name_id(r, FL_DICT_SCOPE_NAME, name);
    if (!id)
        return;
    int64_t vals[] = {0, (int64_t)instance, id, begin ? 0 : 1, depth == INT64_MIN ? 0 : depth};
    feed(r, FL_T_SCOPE_EVENT_BATCH, cols, sizeof cols / sizeof *cols, vals, ts);
}

static int64_t rounded(const json_t *o, const char *key, double scale)
{
    double v;
    return fl_jget_real(o, key, &v) && v >= 0 ? (int64_t)(v * scale + 0.5) : INT64_MIN;
}

/* system_sample: each device's readings and the host's, as the metric
 * batches carry them. */
static void system_sample(fl_report *r, const json_t *rec)
{
    static const char *const dcols[] = {"dt_ns",    "device_id", "gpu_util",  "mem_util", "temp_c",
                                        "power_mw", "used_mib",  "total_mib", "clock_sm"};
    static const char *const hcols[] = {"dt_ns", "cpu_pct_x100", "ram_used_mib", "ram_total_mib"};
    uint64_t ts;
    if (!fl_jget_u64(rec, "ts_ns", &ts)) {
        r->m->bad_rows++;
        return;
    }
    const json_t *devs = json_object_get(rec, "devices");
    for (size_t i = 0; i < json_array_size(devs); i++) {
        const json_t *d = json_array_get(devs, i);
        int64_t vals[] = {0,
                          json_object_get(d, "id") ? opt(d, "id") : (int64_t)i,
                          rounded(d, "util_gpu_pct", 1),
                          rounded(d, "util_mem_pct", 1),
                          rounded(d, "temp_c", 1),
                          rounded(d, "power_mw", 1),
                          rounded(d, "used_mib", 1),
                          rounded(d, "total_mib", 1),
                          rounded(d, "clk_sm_mhz", 1)};
        feed(r, FL_T_DEVICE_METRIC_BATCH, dcols, sizeof dcols / sizeof *dcols, vals, ts);
    }
    const json_t *h = json_object_get(rec, "host");
    if (json_is_object(h)) {
        int64_t vals[] = {0, rounded(h, "cpu_pct", 100), rounded(h, "ram_used_mib", 1),
                          rounded(h, "ram_total_mib", 1)};
        if (vals[1] != INT64_MIN && vals[2] != INT64_MIN)
            feed(r, FL_T_HOST_METRIC_BATCH, hcols, sizeof hcols / sizeof *hcols, vals, ts);
    }
}

void fl_report_legacy(fl_report *r, fl_type t, const json_t *rec)
{
    switch (t) {
    case FL_T_KERNEL_EVENT:
        kernel_event(r, rec);
        break;
    case FL_T_MEMCPY_EVENT:
        memcpy_event(r, rec);
        break;
    case FL_T_SCOPE_BEGIN:
    case FL_T_SCOPE_END:
        scope_event(r, rec, t == FL_T_SCOPE_BEGIN);
        break;
    case FL_T_SYSTEM_SAMPLE:
        system_sample(r, rec);
        break;
    default:
        break;
    }
}

void fl_report_legacy_free(fl_report *r)
{
    fl_map_free(&r->legacy_ids);
    fl_map_free(&r->legacy_open);
}
