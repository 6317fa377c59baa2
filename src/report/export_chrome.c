/*
 * report/export_chrome.c - the Chrome trace exporter (Trace Event Format),
 * one row of report/export.h's FL_EXPORTERS: fl_export_chrome's hooks write
 * each kernel, batch and timed record as it streams in, and at the end the
 * scopes still open and otherData.
 *
 * Mapping (ts / dur in microseconds with three decimals, so
 * nanosecond precision, relative to the session's origin: job_start's
 * ts_ns, else the first time read; "otherData.origin_ns" says which; with
 * absolute time, from the Unix epoch, origin_ns 0, to line the trace up
 * with other tools' - a viewer reading ts as a double keeps about 0.25 us
 * of it at today's dates):
 *
 *   pid 1            "host: <app> (pid N)": tid 0 "session", the one
 *                    event spanning the session (speedscope shows only
 *                    threads with spans: a Monitor trace needs one); gpufl
 *                    scopes on one track per
 *                    thread, tid 16 + T "scopes: thread T" (T the
 *                    scope_event_batch's tid column of the scope's begin),
 *                    or on tid 1 "scopes" in a session without that
 *                    column; tid 2 "NVTX" (ranges: scope_instance_id bit
 *                    62, and nvtx_marker_event), tid 3 "synchronization",
 *                    tid 4 "perf ranges" (perf_metric_event), tid 5 "deep
 *                    windows"; counters "cpu", "ram"
 *   pid 100 + d      "GPU d: <name>": one tid per stream ("stream 7") with
 *                    kernels, memcpys, memsets and graph launches as "X"
 *                    events; counters "util", "memory", "power",
 *                    "temperature" (device_metric_batch), "pm: <metric>" (PM)
 *   pid 99           "GPU ?": rows that do not say their device when the
 *                    session has more than one (kernel_event_batch and
 *                    memcpy_event_batch have no device_id column; the only
 *                    device job_start lists is used when there is one)
 *
 * Scopes are written at their end (X with the begin's ts); those still
 * open at the end of the read are written at finish, up to the last time
 * read, with args.open_at_end.  Metadata events (process_name,
 * process_sort_index, thread_name) are written the first time a track is
 * used.  For the viewers (issue 37): every event has a cat; no ts is
 * before the origin (clipped, counted in otherData); what differs event
 * to event (ids, scope, sizes) goes under "per_event", not "args", since
 * speedscope keys a frame by name and args.  Every string goes through
 * fl_buf_str (JSON escaping) or the export's caches of quoted text.  The
 * timed records besides kernels, copies, scopes and synchronizations
 * (memsets, graph launches, NVTX markers, perf ranges, deep windows) are
 * read by report/export_ranges.c and written here.
 */
#include "export_int.h"
#include "export_ranges.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "model.h"
#include "scopes.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PID_HOST 1
#define PID_GPU_UNKNOWN 99
#define PID_GPU_BASE 100
#define TID_SESSION 0 /* the one "session" event: every trace has a profile */
#define TID_SCOPES 1
#define TID_NVTX 2
#define TID_SYNC 3
#define TID_THREAD_BASE 16 /* + a thread's tid (the tid column): its scopes' track */
_Static_assert(TID_NVTX == FL_EX_TID_NVTX, "NVTX ranges and markers share a thread");
static uint64_t origin(fl_export *e)
{
    if (!e->have_origin) {
        e->origin = e->absolute ? 0 : fl_model_origin(e->m);
        e->have_origin = true;
    }
    return e->origin;
}

/* Microseconds with three decimals (ns precision), signed, at d (26
 * bytes); no printf, since every event has one or two. */
static char *put_us_at(char *d, int64_t ns)
{
    uint64_t a = ns < 0 ? 0u - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        *d++ = '-';
    if (a < 1000) {
        d[0] = '0';
        d[1] = '.';
        d[2] = (char)('0' + a / 100);
        d[3] = (char)('0' + a / 10 % 10);
        d[4] = (char)('0' + a % 10);
        return d + 5;
    }
    /* The ns digits, the last three moved right past a '.'. */
    char *end = fl_put_u64(d, a);
    end[0] = end[-1];
    end[-1] = end[-2];
    end[-2] = end[-3];
    end[-3] = '.';
    return end + 1;
}

static void put_us(fl_buf *b, int64_t ns)
{
    char *d = fl_buf_reserve(b, 26);
    if (d)
        fl_buf_commit(b, put_us_at(d, ns));
}

/* Viewers refuse or misplace a negative ts (a launch CUPTI timed before
 * job_start's): such an event starts at the origin, its duration cut by
 * what lay before (clip_ns, for put_dur), and is counted. */
static void put_ts(fl_export *e, uint64_t t)
{
    uint64_t o = origin(e);
    e->clip_ns = t < o ? o - t : 0;
    e->clipped += t < o;
    put_us(&e->line, t >= o ? (int64_t)(t - o) : 0);
}

/* ,"dur":D of the event begin_event opened, less its clip_ns. */
static void put_dur(fl_export *e, uint64_t dur)
{
    FL_BUF_LIT(&e->line, ",\"dur\":");
    put_us(&e->line, dur > e->clip_ns ? (int64_t)(dur - e->clip_ns) : 0);
}

/* Opens an event: {"name":N,"cat":C,"ph":P,"ts":T,"pid":P,"tid":T - the
 * caller adds the rest and closes it with end_event. */
static void begin_event(fl_export *e, const char *name, const char *cat, const char *ph,
                        bool have_ts, uint64_t t, int64_t pid, int64_t tid)
{
    fl_buf *b = &e->line;
    fl_buf_puts(b, e->first_event ? "{\"name\":" : ",\n{\"name\":");
    e->first_event = false;
    fl_buf_str(b, name);
    FL_BUF_LIT(b, ",\"cat\":");
    fl_buf_str(b, cat);
    fl_buf_puts(b, ",\"ph\":\"");
    fl_buf_puts(b, ph);
    fl_buf_puts(b, "\"");
    e->clip_ns = 0;
    if (have_ts) {
        fl_buf_puts(b, ",\"ts\":");
        put_ts(e, t);
    }
    FL_BUF_LIT(b, ",\"pid\":");
    fl_buf_i64(b, e->pid_base + pid);
    FL_BUF_LIT(b, ",\"tid\":");
    fl_buf_i64(b, tid);
}

static void end_event(fl_export *e)
{
    if (e->aside.len) {
        /* Per-event values, out of args: speedscope keys a frame by its
         * name and args, so launches of one kernel stay one frame. */
        FL_BUF_LIT(&e->line, ",\"per_event\":{");
        fl_buf_put(&e->line, e->aside.p, e->aside.len);
        FL_BUF_LIT(&e->line, "}");
        fl_buf_reset(&e->aside);
    }
    fl_buf_puts(&e->line, "}");
    fl_ex_put_some(e);
    e->events++;
}

static void meta(fl_export *e, const char *what, int64_t pid, int64_t tid, const char *key,
                 const char *sval, int64_t ival)
{
    begin_event(e, what, "__metadata", "M", false, 0, pid, tid);
    fl_buf_puts(&e->line, ",\"args\":{");
    fl_buf_str(&e->line, key);
    fl_buf_puts(&e->line, ":");
    if (sval)
        fl_buf_str(&e->line, sval);
    else
        fl_buf_i64(&e->line, ival);
    fl_buf_puts(&e->line, "}");
    end_event(e);
}

/* The pid of the device NVML numbers dev (device_metric_batch rows). */
static int64_t gpu_pid_nvml(int64_t dev)
{
    if (dev < 0 || dev > 1000000)
        return PID_GPU_UNKNOWN;
    return PID_GPU_BASE + dev;
}

/* The pid of the device CUDA numbers dev (-1: not recorded): the same
 * track as its device_metric_batch rows (model.h). */
static int64_t gpu_pid(const fl_export *e, int64_t dev)
{
    if (dev < 0)
        dev = e->m->default_device;
    return gpu_pid_nvml(dev < 0 ? dev : fl_model_gpu_of_cuda(e->m, dev));
}

/* Labels a track the first time it is used. */
static void track(fl_export *e, int64_t pid, int64_t tid)
{
    /* A labelled thread's process is labelled too: the first few threads
     * are known without a look-up, the others with one. */
    uint64_t tkey = (uint64_t)pid << 33 | (uint32_t)tid;
    for (unsigned i = 0; tid >= 0 && i < e->n_known_tracks; i++)
        if (e->known_tracks[i] == tkey)
            return;
    if (tid >= 0 && e->tracks.n && fl_map_find(&e->tracks, tkey))
        return;
    bool fresh;
    uint64_t pkey = (uint64_t)pid << 33 | 1ull << 32;
    if (!fl_map_put(&e->tracks, pkey, &fresh)) {
        e->oom = true;
        return;
    }
    if (fresh) {
        /* A run's process (fl_export_begin_process): its label names the
         * host block and prefixes its GPUs'. */
        char name[512], who[400] = "";
        if (e->run)
            fl_ex_process_label(e, who, sizeof who);
        const char *sep = who[0] ? ": " : "";
        if (e->run && pid == PID_HOST) {
            snprintf(name, sizeof name, "%s", who);
        } else if (pid == PID_HOST) {
            const fl_model *m = e->m;
            if (m->have_pid)
                snprintf(name, sizeof name, "host: %s (pid %" PRId64 ")", m->app ? m->app : "?",
                         m->pid);
            else
                snprintf(name, sizeof name, "host: %s", m->app ? m->app : "?");
        } else if (pid == PID_GPU_UNKNOWN) {
            snprintf(name, sizeof name, "%s%sGPU ? (device not recorded)", who, sep);
        } else {
            const char *dn = fl_model_device_name(e->m, pid - PID_GPU_BASE);
            snprintf(name, sizeof name, "%s%sGPU %" PRId64 "%s%s", who, sep, pid - PID_GPU_BASE,
                     dn ? ": " : "", dn ? dn : "");
        }
        meta(e, "process_name", pid, 0, "name", name, 0);
        meta(e, "process_sort_index", pid, 0, "sort_index", NULL, e->pid_base + pid);
    }
    if (tid < 0)
        return;
    if (!fl_map_put(&e->tracks, tkey, &fresh)) {
        e->oom = true;
        return;
    }
    if (e->n_known_tracks < sizeof e->known_tracks / sizeof e->known_tracks[0])
        e->known_tracks[e->n_known_tracks++] = tkey;
    if (!fresh)
        return;
    char name[64];
    if (pid == PID_HOST && tid >= TID_THREAD_BASE)
        snprintf(name, sizeof name, "scopes: thread %" PRId64, tid - TID_THREAD_BASE);
    else if (pid == PID_HOST)
        snprintf(name, sizeof name, "%s",
                 tid == TID_SESSION      ? "session"
                 : tid == TID_SCOPES     ? "scopes"
                 : tid == TID_NVTX       ? "NVTX"
                 : tid == FL_EX_TID_PERF ? "perf ranges"
                 : tid == FL_EX_TID_DEEP ? "deep windows"
                                         : "synchronization");
    else
        snprintf(name, sizeof name, "stream %" PRId64, tid);
    meta(e, "thread_name", pid, tid, "name", name, 0);
    meta(e, "thread_sort_index", pid, tid, "sort_index", NULL, tid);
}

/* ------------------------------------------------------ args helpers */

static void arg_u64(fl_buf *b, bool *first, const char *key, uint64_t v)
{
    fl_buf_puts(b, *first ? "" : ",");
    *first = false;
    fl_buf_str(b, key);
    fl_buf_puts(b, ":");
    fl_buf_u64(b, v);
}

static void arg_i64(fl_buf *b, bool *first, const char *key, int64_t v)
{
    fl_buf_puts(b, *first ? "" : ",");
    *first = false;
    fl_buf_str(b, key);
    fl_buf_puts(b, ":");
    fl_buf_i64(b, v);
}

static void arg_dbl(fl_buf *b, bool *first, const char *key, double v)
{
    fl_buf_puts(b, *first ? "" : ",");
    *first = false;
    fl_buf_str(b, key);
    fl_buf_puts(b, ":");
    fl_buf_double(b, v);
}

static void arg_str(fl_buf *b, bool *first, const char *key, const char *v)
{
    fl_buf_puts(b, *first ? "" : ",");
    *first = false;
    fl_buf_str(b, key);
    fl_buf_puts(b, ":");
    fl_buf_str(b, v);
}

#define LIT(d, s) fl_put_lit((d), "" s "", sizeof(s) - 1)
#define KEY(k) ",\"" k "\":", sizeof(",\"" k "\":") - 1 /* put_num's key and length */

/* ,"key":v - an optional number of the kernel event (28 + the key). */
static char *put_num(char *d, bool ok, const char *key_lit, size_t key_len, int64_t v)
{
    if (!ok)
        return d;
    d = fl_put_lit(d, key_lit, key_len);
    return fl_put_i64(d, v);
}

/* ,"grid":"(x,y,z)","block":"(x,y,z)" of a detail (92 bytes at most):
 * the same for every launch that shares it, so kept (fl_ex_dims_text). */
static char *put_dims(char *p, const fl_kdetail *d)
{
    if (d->have_grid) {
        p = LIT(p, ",\"grid\":\"");
        p = fl_put_dim3(p, d->grid);
        *p++ = '"';
    }
    if (d->have_block) {
        p = LIT(p, ",\"block\":\"");
        p = fl_put_dim3(p, d->block);
        *p++ = '"';
    }
    return p;
}

/* An interned string of the model as a JSON literal, its text cached. */
static void put_interned(fl_export *e, const char *s)
{
    size_t len;
    const char *q = fl_ex_interned_text(e, s, fl_buf_str, &len);
    if (q)
        fl_buf_put(&e->line, q, len);
    else
        fl_buf_str(&e->line, s);
}

/* The kernel event, the trace's hot path: what begin_event, put_dur and
 * the arg_* helpers would write, the numbers into one reservation and the
 * name's JSON text from the export's cache (fl_ex_kernel_text). */
static void chrome_kernel(fl_export *e, const fl_krow *k)
{
    int64_t pid = gpu_pid(e, k->device_id);
    track(e, pid, k->stream_id);
    fl_buf *b = &e->line;
    if (e->first_event)
        FL_BUF_LIT(b, "{\"name\":");
    else
        FL_BUF_LIT(b, ",\n{\"name\":");
    e->first_event = false;
    size_t len;
    const char *q = fl_ex_kernel_text(e, k->kernel_id, fl_buf_str, &len);
    if (q) {
        fl_buf_put(b, q, len);
    } else {
        const char *name = fl_model_kernel_name(e->m, k->kernel_id);
        char buf[64];
        if (!name) {
            snprintf(buf, sizeof buf, "kernel %" PRIu32, k->kernel_id);
            name = buf;
        }
        fl_buf_str(b, name);
    }
    const fl_kdetail *d = k->detail;
    char *p = fl_buf_reserve(b, 512);
    if (!p)
        return;
    uint64_t o = origin(e), t = k->start_ns;
    uint64_t clip = t < o ? o - t : 0;
    e->clipped += t < o;
    p = LIT(p, ",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":");
    p = put_us_at(p, t >= o ? (int64_t)(t - o) : 0);
    p = LIT(p, ",\"pid\":");
    p = fl_put_i64(p, e->pid_base + pid);
    p = LIT(p, ",\"tid\":");
    p = fl_put_u64(p, k->stream_id);
    p = LIT(p, ",\"dur\":");
    p = put_us_at(p, k->duration_ns > clip ? (int64_t)(k->duration_ns - clip) : 0);
    p = LIT(p, ",\"args\":{\"kernel_id\":");
    p = fl_put_u64(p, k->kernel_id);
    size_t dlen;
    const char *dtext = fl_ex_dims_text(e, k->kernel_id, d, put_dims, &dlen);
    if (dtext)
        p = fl_put_lit(p, dtext, dlen);
    else if (d)
        p = put_dims(p, d);
    p = put_num(p, k->num_regs >= 0, KEY("registers"), k->num_regs);
    p = put_num(p, k->dyn_shared >= 0, KEY("dyn_shared_bytes"), k->dyn_shared);
    p = put_num(p, d && d->static_shared >= 0, KEY("static_shared_bytes"),
                d ? d->static_shared : 0);
    fl_buf_commit(b, p);
    if (d && !isnan(d->occupancy)) {
        FL_BUF_LIT(b, ",\"occupancy\":");
        fl_buf_double(b, d->occupancy);
    }
    if (d && d->limiting) {
        FL_BUF_LIT(b, ",\"limiting_resource\":");
        put_interned(e, d->limiting);
    }
    /* Per launch: out of args (end_event's per_event). */
    p = fl_buf_reserve(b, 48);
    if (!p)
        return;
    p = LIT(p, "},\"per_event\":{\"corr_id\":");
    fl_buf_commit(b, fl_put_u64(p, k->corr_id));
    if (d && d->user_scope) {
        FL_BUF_LIT(b, ",\"user_scope\":");
        put_interned(e, d->user_scope);
    }
    if (k->external_kind > 0) {
        p = fl_buf_reserve(b, 17 + 21 + 15 + 20 + 8); /* keys, an i64, a u64 */
        if (!p)
            return;
        p = LIT(p, ",\"external_kind\":");
        p = fl_put_i64(p, k->external_kind);
        p = LIT(p, ",\"external_id\":");
        p = fl_put_u64(p, k->external_id);
        fl_buf_commit(b, p);
        const char *op = fl_model_op_name(e->m, k->external_kind, k->external_id);
        if (op) {
            FL_BUF_LIT(b, ",\"op\":");
            fl_buf_str(b, op);
        }
    }
    FL_BUF_LIT(b, "}}");
    fl_ex_put_some(e);
    e->events++;
}

/* ------------------------------------------------------------ others */

static void device_event(fl_export *e, const char *name, const char *cat, uint64_t t, uint64_t dur,
                         int64_t dev, uint64_t stream)
{
    int64_t pid = gpu_pid(e, dev);
    track(e, pid, (int64_t)stream);
    begin_event(e, name, cat, "X", true, t, pid, (int64_t)stream);
    put_dur(e, dur);
    fl_buf_puts(&e->line, ",\"args\":{");
}

static void memcpy_batch(fl_export *e, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_MEMCPY_DT_NS),
        c_stream = fl_batch_colid(b, FL_COL_MEMCPY_STREAM_ID),
        c_dur = fl_batch_colid(b, FL_COL_MEMCPY_DURATION_NS),
        c_bytes = fl_batch_colid(b, FL_COL_MEMCPY_BYTES),
        c_kind = fl_batch_colid(b, FL_COL_MEMCPY_COPY_KIND),
        c_corr = fl_batch_colid(b, FL_COL_MEMCPY_CORR_ID),
        c_src = fl_batch_colid(b, FL_COL_MEMCPY_SRC_DEVICE_ID),
        c_dst = fl_batch_colid(b, FL_COL_MEMCPY_DST_DEVICE_ID),
        c_dev = fl_batch_colid(b, FL_COL_MEMCPY_DEVICE_ID);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, stream = 0, dur = 0, bytes = 0, kind = 0, corr = 0, src, dst, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        fl_rcell_u64(b, i, c_stream, &stream);
        fl_rcell_u64(b, i, c_dur, &dur);
        fl_rcell_u64(b, i, c_bytes, &bytes);
        fl_rcell_u64(b, i, c_kind, &kind);
        fl_rcell_u64(b, i, c_corr, &corr);
        bool have_src = fl_rcell_u64(b, i, c_src, &src);
        bool have_dst = fl_rcell_u64(b, i, c_dst, &dst);
        int64_t device = -1;
        if (have_src && src <= INT32_MAX)
            device = (int64_t)src;
        else if (fl_rcell_u64(b, i, c_dev, &dev) && dev <= INT32_MAX)
            device = (int64_t)dev;
        char name[48];
        const char *kn = fl_copy_kind_name(kind);
        if (kn)
            snprintf(name, sizeof name, "memcpy %s", kn);
        else
            snprintf(name, sizeof name, "memcpy kind %" PRIu64, kind);
        device_event(e, name, "memcpy", b->base_time_ns + dt, dur, device, stream);
        bool first = true, pe_first = true;
        arg_u64(&e->aside, &pe_first, "bytes", bytes);
        arg_u64(&e->line, &first, "copy_kind", kind);
        arg_u64(&e->aside, &pe_first, "corr_id", corr);
        if (dur)
            arg_dbl(&e->aside, &pe_first, "gb_per_s", (double)bytes / (double)dur);
        if (have_src)
            arg_u64(&e->line, &first, "src_device_id", src);
        if (have_dst)
            arg_u64(&e->line, &first, "dst_device_id", dst);
        fl_buf_puts(&e->line, "}");
        end_event(e);
    }
}

/* The values that differ from one event of a name to the next (ids, the
 * caller's scope, sizes): written under per_event, not args. */
static bool per_event_key(const char *key)
{
    static const char *const keys[] = {"corr_id",     "marker_id",       "instance_id",
                                       "external_id", "external_kind",   "user_scope",
                                       "bytes",       "launches_covered"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return false;
}

/* A timed record's complete event (export_ranges.c says which and where). */
static void span_event(fl_export *e, const fl_ex_span *s)
{
    if (s->on_device) {
        device_event(e, s->name, s->cat, s->start_ns, s->dur_ns, s->device, s->stream);
    } else {
        track(e, PID_HOST, s->host_tid);
        begin_event(e, s->name, s->cat, "X", true, s->start_ns, PID_HOST, s->host_tid);
        put_dur(e, s->dur_ns);
        fl_buf_puts(&e->line, ",\"args\":{");
    }
    bool first = true, pe_first = true;
    for (size_t i = 0; i < s->nargs; i++) {
        const fl_ex_arg *a = &s->args[i];
        bool pe = per_event_key(a->key);
        fl_buf *to = pe ? &e->aside : &e->line;
        bool *f = pe ? &pe_first : &first;
        if (a->kind == FL_EX_ARG_U64)
            arg_u64(to, f, a->key, a->u);
        else if (a->kind == FL_EX_ARG_I64)
            arg_i64(to, f, a->key, a->i);
        else if (a->kind == FL_EX_ARG_DBL)
            arg_dbl(to, f, a->key, a->d);
        else
            arg_str(to, f, a->key, a->s);
    }
    fl_buf_puts(&e->line, "}");
    end_event(e);
}

static void graph_batch(fl_export *e, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_GRAPH_DT_NS),
        c_graph = fl_batch_colid(b, FL_COL_GRAPH_GRAPH_ID),
        c_stream = fl_batch_colid(b, FL_COL_GRAPH_STREAM_ID),
        c_dur = fl_batch_colid(b, FL_COL_GRAPH_DURATION_NS),
        c_corr = fl_batch_colid(b, FL_COL_GRAPH_CORR_ID),
        c_dev = fl_batch_colid(b, FL_COL_GRAPH_DEVICE_ID);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, graph = 0, stream = 0, dur = 0, corr = 0, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        fl_rcell_u64(b, i, c_graph, &graph);
        fl_rcell_u64(b, i, c_stream, &stream);
        fl_rcell_u64(b, i, c_dur, &dur);
        fl_rcell_u64(b, i, c_corr, &corr);
        bool have_dev = fl_rcell_u64(b, i, c_dev, &dev) && dev <= INT32_MAX;
        device_event(e, "graph launch", "graph", b->base_time_ns + dt, dur,
                     have_dev ? (int64_t)dev : -1, stream);
        bool first = true, pe_first = true;
        arg_u64(&e->line, &first, "graph_id", graph);
        arg_u64(&e->aside, &pe_first, "corr_id", corr);
        fl_buf_puts(&e->line, "}");
        end_event(e);
    }
}

static void sync_batch(fl_export *e, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_SYNC_DT_NS),
        c_dur = fl_batch_colid(b, FL_COL_SYNC_DURATION_NS),
        c_type = fl_batch_colid(b, FL_COL_SYNC_SYNC_TYPE),
        c_stream = fl_batch_colid(b, FL_COL_SYNC_STREAM_ID),
        c_corr = fl_batch_colid(b, FL_COL_SYNC_CORR_ID);
    static const char *const names[] = {"sync (unknown)", "sync event", "sync stream wait event",
                                        "sync stream", "sync context"};
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dur = 0, type = 0, stream, corr = 0;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        fl_rcell_u64(b, i, c_dur, &dur);
        fl_rcell_u64(b, i, c_type, &type);
        fl_rcell_u64(b, i, c_corr, &corr);
        track(e, PID_HOST, TID_SYNC);
        begin_event(e, type < 5 ? names[type] : "sync", "sync", "X", true, b->base_time_ns + dt,
                    PID_HOST, TID_SYNC);
        put_dur(e, dur);
        fl_buf_puts(&e->line, ",\"args\":{");
        bool first = true;
        arg_u64(&e->line, &first, "sync_type", type);
        if (fl_rcell_u64(b, i, c_stream, &stream))
            arg_u64(&e->line, &first, "stream_id", stream);
        bool pe_first = true;
        arg_u64(&e->aside, &pe_first, "corr_id", corr);
        fl_buf_puts(&e->line, "}");
        end_event(e);
    }
}

/* thread: the tid of the scope's thread, -1 when the session does not say
 * (one track for all scopes). */
static void scope_event(fl_export *e, uint64_t instance, uint64_t name_id, uint64_t t0, uint64_t t1,
                        bool open_at_end, int64_t thread)
{
    bool nvtx = (instance & FL_NVTX_INSTANCE_BIT) != 0;
    int64_t tid = nvtx ? TID_NVTX : thread >= 0 ? TID_THREAD_BASE + thread : TID_SCOPES;
    const char *name = fl_model_scope_name(e->m, name_id);
    char buf[64];
    if (!name) {
        snprintf(buf, sizeof buf, "scope %" PRIu64, name_id);
        name = buf;
    }
    track(e, PID_HOST, tid);
    begin_event(e, name, nvtx ? "nvtx" : "scope", "X", true, t0, PID_HOST, tid);
    put_dur(e, t1 > t0 ? t1 - t0 : 0);
    fl_buf_puts(&e->line, ",\"args\":{");
    bool pe_first = true;
    arg_u64(&e->aside, &pe_first, "instance_id",
            nvtx ? instance & ~FL_NVTX_INSTANCE_BIT : instance);
    bool first = true;
    if (thread >= 0 && !nvtx)
        arg_i64(&e->line, &first, "tid", thread);
    if (open_at_end)
        fl_buf_puts(&e->line, first ? "\"open_at_end\":true" : ",\"open_at_end\":true");
    fl_buf_puts(&e->line, "}");
    end_event(e);
}

static void scope_batch(fl_export *e, const fl_batch *b)
{
    fl_scope_cols c = fl_scope_cols_of(b);
    int c_tid = fl_batch_colid(b, FL_COL_SCOPE_TID);
    for (size_t i = 0; i < b->nrows; i++) {
        fl_scope_end end;
        int64_t thread;
        fl_scope_step st =
            fl_scope_row_thread(&e->open, &e->open_tid, b, &c, c_tid, i, &end, &thread);
        if (st == FL_SCOPE_OOM) {
            e->oom = true;
            return;
        }
        if (st == FL_SCOPE_ENDED)
            scope_event(e, end.instance, end.name_id, end.start_ns, end.end_ns, false, thread);
    }
}

/* A counter event with up to four named values (NaN: left out); nothing
 * when all are missing. */
static void counter(fl_export *e, const char *name, const char *cat, int64_t pid, uint64_t t,
                    const char *const *keys, const double *vals, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= !isnan(vals[i]);
    if (!any)
        return;
    track(e, pid, -1);
    begin_event(e, name, cat, "C", true, t, pid, 0);
    fl_buf_puts(&e->line, ",\"args\":{");
    bool first = true;
    for (size_t i = 0; i < n; i++)
        if (!isnan(vals[i]))
            arg_dbl(&e->line, &first, keys[i], vals[i]);
    fl_buf_puts(&e->line, "}");
    end_event(e);
}

static double cell(const fl_batch *b, size_t row, int col, double scale)
{
    double v;
    return fl_rcell_real(b, row, col, &v) ? v * scale : NAN;
}

static void device_metrics(fl_export *e, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_DEVMETRIC_DT_NS),
        c_dev = fl_batch_colid(b, FL_COL_DEVMETRIC_DEVICE_ID),
        c_ug = fl_batch_colid(b, FL_COL_DEVMETRIC_GPU_UTIL),
        c_um = fl_batch_colid(b, FL_COL_DEVMETRIC_MEM_UTIL),
        c_temp = fl_batch_colid(b, FL_COL_DEVMETRIC_TEMP_C),
        c_pw = fl_batch_colid(b, FL_COL_DEVMETRIC_POWER_MW),
        c_used = fl_batch_colid(b, FL_COL_DEVMETRIC_USED_MIB);
    static const char *const util_keys[] = {"gpu_pct", "mem_pct"};
    static const char *const mem_keys[] = {"used_mib"};
    static const char *const power_keys[] = {"power_w"};
    static const char *const temp_keys[] = {"temp_c"};
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt) || !fl_rcell_u64(b, i, c_dev, &dev) || dev > INT32_MAX)
            continue;
        uint64_t t = b->base_time_ns + dt;
        int64_t pid = gpu_pid_nvml((int64_t)dev);
        double util[2] = {cell(b, i, c_ug, 1), cell(b, i, c_um, 1)};
        double used = cell(b, i, c_used, 1), power = cell(b, i, c_pw, 1e-3),
               temp = cell(b, i, c_temp, 1);
        counter(e, "util", "gpu_metrics", pid, t, util_keys, util, 2);
        counter(e, "memory", "gpu_metrics", pid, t, mem_keys, &used, 1);
        counter(e, "power", "gpu_metrics", pid, t, power_keys, &power, 1);
        counter(e, "temperature", "gpu_metrics", pid, t, temp_keys, &temp, 1);
    }
}

static void host_metrics(fl_export *e, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_HOSTMETRIC_DT_NS),
        c_cpu = fl_batch_colid(b, FL_COL_HOSTMETRIC_CPU_PCT_X100),
        c_used = fl_batch_colid(b, FL_COL_HOSTMETRIC_RAM_USED_MIB);
    static const char *const cpu_keys[] = {"cpu_pct"};
    static const char *const ram_keys[] = {"used_mib"};
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        uint64_t t = b->base_time_ns + dt;
        double cpu = cell(b, i, c_cpu, 0.01), used = cell(b, i, c_used, 1);
        counter(e, "cpu", "host_metrics", PID_HOST, t, cpu_keys, &cpu, 1);
        counter(e, "ram", "host_metrics", PID_HOST, t, ram_keys, &used, 1);
    }
}

/* PM samples: a counter per metric on its GPU, "pm: <metric>" (or its id). */
static void pm_counters(fl_export *e, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_PM_DT_NS), c_dev = fl_batch_colid(b, FL_COL_PM_DEVICE_ID),
        c_m = fl_batch_colid(b, FL_COL_PM_METRIC_ID), c_v = fl_batch_colid(b, FL_COL_PM_VALUE);
    static const char *const keys[] = {"value"};
    char name[160];
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dev, m;
        double v = cell(b, i, c_v, 1);
        if (!fl_rcell_u64(b, i, c_dt, &dt) || !fl_rcell_u64(b, i, c_dev, &dev) ||
            !fl_rcell_u64(b, i, c_m, &m) || dev > INT32_MAX)
            continue;
        const char *mn = fl_model_metric_name(e->m, m);
        if (!mn || snprintf(name, sizeof name, "pm: %s", mn) < 0)
            snprintf(name, sizeof name, "pm: metric %" PRIu64, m);
        counter(e, name, "pm_sampling", gpu_pid(e, (int64_t)dev), b->base_time_ns + dt, keys, &v,
                1);
    }
}

/* ------------------------------------------------------------ hooks */

static void chrome_record(fl_export *e, fl_type t, const json_t *rec)
{
    fl_ex_span s;
    if (fl_ex_record_span(t, rec, &s)) {
        fl_ex_start(e);
        span_event(e, &s);
    }
    fl_ex_span_free(&s);
}

static void chrome_batch(fl_export *e, const fl_batch *b)
{
    switch (b->type_id) {
    case FL_T_MEMCPY_EVENT_BATCH:
        memcpy_batch(e, b);
        break;
    case FL_T_SCOPE_EVENT_BATCH:
        scope_batch(e, b);
        break;
    case FL_T_DEVICE_METRIC_BATCH:
        device_metrics(e, b);
        break;
    case FL_T_HOST_METRIC_BATCH:
        host_metrics(e, b);
        break;
    case FL_T_GRAPH_EVENT_BATCH:
        graph_batch(e, b);
        break;
    case FL_T_SYNCHRONIZATION_EVENT_BATCH:
        sync_batch(e, b);
        break;
    case FL_T_PM_SAMPLE_BATCH:
        pm_counters(e, b);
        break;
    default:
        break;
    }
}

static void other_data(fl_export *e, const fl_read_result *res)
{
    const fl_model *m = e->m;
    fl_buf *b = &e->line;
    bool first = true;
    fl_buf_puts(b, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{");
    arg_str(b, &first, "generator", "gpu-profile");
    arg_str(b, &first, "app", m->app);
    arg_str(b, &first, "session_id", m->session_id);
    arg_str(b, &first, "hostname", m->hostname);
    if (m->have_pid)
        arg_i64(b, &first, "pid", m->pid);
    arg_str(b, &first, "session_kind", m->session_kind);
    arg_str(b, &first, "profiling_engine", m->engine);
    if (e->have_origin || m->have_start || m->have_time) {
        arg_u64(b, &first, "origin_ns", origin(e));
        arg_str(b, &first, "origin",
                e->absolute     ? "unix_epoch"
                : m->have_start ? fl_type_name(FL_T_JOB_START)
                                : "first_record");
    }
    if (m->have_shutdown)
        arg_u64(b, &first, "end_ns", m->shutdown_ns);
    else if (m->have_time)
        arg_u64(b, &first, "end_ns", m->last_ns);
    bool crashed = res ? res->crashed : !m->have_shutdown;
    fl_buf_printf(b, ",\"crashed\":%s", crashed ? "true" : "false");
    arg_u64(b, &first, "events", e->events);
    if (e->run) /* the other fields are the last process's */
        arg_u64(b, &first, "processes", (uint64_t)e->proc.index + 1);
    arg_u64(b, &first, "clipped_before_origin", e->clipped);
    if (res) {
        arg_u64(b, &first, "bad_lines", res->bad_lines);
        arg_u64(b, &first, "bad_records", res->bad_records);
        arg_u64(b, &first, "other_session_records", res->other_session);
        arg_u64(b, &first, "gz_errors", res->gz_errors);
    }
    fl_buf_puts(b, "}}\n");
    fl_ex_put_line(e);
}

/* The session as one complete event on the host's "session" track, from
 * the session's start to its end: a trace of counters alone (a Monitor
 * session) then still has a thread with a span, without which speedscope
 * has no profile to show. */
static void session_event(fl_export *e, uint64_t end)
{
    const fl_model *m = e->m;
    if (!m->have_start && !m->have_time)
        return;
    uint64_t t0 = fl_model_origin(m);
    track(e, PID_HOST, TID_SESSION);
    begin_event(e, "session", "session", "X", true, t0, PID_HOST, TID_SESSION);
    put_dur(e, end > t0 ? end - t0 : 0);
    fl_buf_puts(&e->line, ",\"args\":{");
    bool first = true;
    arg_str(&e->line, &first, "app", m->app);
    arg_str(&e->line, &first, "profiling_engine", m->engine);
    fl_buf_puts(&e->line, "}");
    end_event(e);
}

/* A session's end: scopes the read left open (up to the last time
 * read), the session's span. */
static void chrome_session_end(fl_export *e)
{
    uint64_t end = e->m->have_shutdown ? e->m->shutdown_ns : e->m->last_ns;
    for (size_t i = 0; i < e->open.cap; i++)
        if (e->open.used[i])
            scope_event(e, e->open.keys[i], e->open.vals[i].b, e->open.vals[i].a, end, true,
                        fl_scope_thread(&e->open_tid, e->open.keys[i], false, 0));
    fl_map_clear(&e->open);
    session_event(e, end);
}

static void chrome_finish(fl_export *e, const fl_read_result *res)
{
    other_data(e, res);
}

const fl_export_hooks fl_export_chrome = {
    .header = "{\"traceEvents\":[\n",
    .kernel = chrome_kernel,
    .batch = chrome_batch,
    .record = chrome_record,
    .finish = chrome_finish,
    .session_end = chrome_session_end,
};
