/*
 * report/export_ranges.c - GPUFlight's timed records (and our memset_event)
 * read into the Chrome trace's complete events (export_ranges.h): where
 * each goes, its name, span and args.  A value not recorded is left out of
 * the args (never written as 0); a metric the range profiler did not
 * collect (-1) likewise.  The export writes them (report/export.c).
 */
#include "export_ranges.h"
#include "fields.h"

#include <string.h>

static void arg_u(fl_ex_span *s, const char *key, uint64_t v)
{
    if (s->nargs < FL_EX_MAX_ARGS)
        s->args[s->nargs++] = (fl_ex_arg){.key = key, .kind = FL_EX_ARG_U64, .u = v};
}

static void arg_d(fl_ex_span *s, const char *key, double v)
{
    if (s->nargs < FL_EX_MAX_ARGS)
        s->args[s->nargs++] = (fl_ex_arg){.key = key, .kind = FL_EX_ARG_DBL, .d = v};
}

static void arg_s(fl_ex_span *s, const char *key, const char *v)
{
    if (v && v[0] && s->nargs < FL_EX_MAX_ARGS)
        s->args[s->nargs++] = (fl_ex_arg){.key = key, .kind = FL_EX_ARG_STR, .s = v};
}

/* Member key as an arg, when it is a non-negative number. */
static void arg_member(fl_ex_span *s, const json_t *rec, const char *key)
{
    uint64_t v;
    if (fl_jget_u64(rec, key, &v))
        arg_u(s, key, v);
}

/* A device number in [0, INT32_MAX] (-1: none). */
static int64_t device_of(const json_t *rec)
{
    uint64_t dev;
    return fl_jget_id(rec, "device_id", &dev) && dev <= INT32_MAX ? (int64_t)dev : -1;
}

static void on_stream(fl_ex_span *s, const json_t *rec, const char *name, const char *cat)
{
    s->name = name;
    s->cat = cat;
    s->on_device = true;
    s->device = device_of(rec);
    if (!fl_jget_id(rec, "stream_id", &s->stream))
        s->stream = 0;
}

static void on_host(fl_ex_span *s, const json_t *rec, const char *cat, int64_t tid,
                    const char *unnamed)
{
    const char *name = fl_jget_str(rec, "name");
    s->name = name && name[0] ? name : unnamed;
    s->cat = cat;
    s->host_tid = tid;
    s->device = -1;
}

static void memset_span(fl_ex_span *s, const json_t *rec)
{
    uint64_t bytes = 0;
    on_stream(s, rec, "memset", "memset");
    fl_jget_u64(rec, "bytes", &bytes);
    arg_u(s, "bytes", bytes);
    arg_member(s, rec, "value");
    arg_member(s, rec, "corr_id");
    arg_s(s, "user_scope", fl_jget_str(rec, "user_scope"));
}

static void graph_span(fl_ex_span *s, const json_t *rec)
{
    on_stream(s, rec, "graph launch", "graph");
    arg_member(s, rec, "graph_id");
    arg_member(s, rec, "corr_id");
    arg_s(s, "graph_exec_key", fl_jget_str(rec, "graph_exec_key"));
}

static void perf_span(fl_ex_span *s, const json_t *rec)
{
    on_host(s, rec, "perf", FL_EX_TID_PERF, "(unnamed range)");
    int64_t dev = device_of(rec);
    if (dev >= 0)
        arg_u(s, "device_id", (uint64_t)dev);
    arg_s(s, "user_scope", fl_jget_str(rec, "user_scope"));
    for (size_t k = 0; k < FL_PERF_SCOPE_COUNT; k++) {
        double v;
        if (fl_jget_real(rec, fl_perf_keys[k], &v) && v >= 0)
            arg_d(s, fl_perf_keys[k], v);
    }
}

static void deep_span(fl_ex_span *s, const json_t *rec)
{
    on_host(s, rec, "deep", FL_EX_TID_DEEP, "(unnamed window)");
    arg_s(s, "close_reason", fl_jget_str(rec, "close_reason"));
    arg_member(s, rec, "launches_covered");
    const json_t *engines = json_object_get(rec, "engines");
    for (size_t i = 0; i < json_array_size(engines); i++) {
        const char *e = json_string_value(json_array_get(engines, i));
        if (!e)
            continue;
        if (s->text.len)
            fl_buf_puts(&s->text, ", ");
        fl_buf_puts(&s->text, e);
    }
    if (s->text.len && !s->text.oom)
        arg_s(s, "engines", s->text.p);
}

bool fl_ex_record_span(fl_type t, const json_t *rec, fl_ex_span *s)
{
    memset(s, 0, sizeof *s);
    if (!fl_jget_span(rec, &s->start_ns, &s->dur_ns))
        return false;
    switch (t) {
    case FL_T_MEMSET_EVENT:
        memset_span(s, rec);
        return true;
    case FL_T_GRAPH_LAUNCH_EVENT:
        graph_span(s, rec);
        return true;
    case FL_T_NVTX_MARKER_EVENT:
        on_host(s, rec, "nvtx", FL_EX_TID_NVTX, "(unnamed NVTX range)");
        arg_member(s, rec, "marker_id");
        arg_s(s, "domain", fl_jget_str(rec, "domain"));
        return true;
    case FL_T_PERF_METRIC_EVENT:
        perf_span(s, rec);
        return true;
    case FL_T_DEEP_WINDOW_EVENT:
        deep_span(s, rec);
        return true;
    default:
        return false;
    }
}

void fl_ex_span_free(fl_ex_span *s)
{
    fl_buf_free(&s->text);
}
