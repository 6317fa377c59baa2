/*
 * report/html_timeline.c - the bounded summary of a session's events that
 * the HTML report's timeline and device charts draw (html.h): kernels,
 * copies, graph launches per GPU and stream, syncs, scopes per thread and
 * NVTX ranges on the host, device samples per GPU.
 *
 * Promises: memory and output are fixed by FL_HTML_TRACKS x
 * FL_HTML_BUCKETS and FL_HTML_DEVICES x FL_HTML_POINTS, never by the
 * number of events.  All tracks share one time axis of FL_HTML_BUCKETS
 * buckets that doubles its bucket width (folding neighbours) whenever an
 * event falls outside it, so every event is counted where it began; a
 * bucket keeps its longest event, its number of events and their summed
 * time (the density the page draws under the events).  Events of tracks
 * past the limit are counted as not shown.
 */
#include "html.h"
#include "fields.h"
#include "json_write.h"
#include "model.h"
#include "report_int.h"
#include "scopes.h"
#include "../wire/vocab.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_KERNEL, EV_MEMCPY, EV_GRAPH, EV_SYNC, EV_SCOPE, EV_NVTX };

typedef struct cell {
    uint64_t start_ns, dur_ns, busy_ns;
    uint64_t name; /* kernel id, copy kind, sync type, scope name id */
    uint32_t count;
    uint8_t kind;
    /* A kernel's launcher, for its tooltip: the op (ext_kind 0: none) and
     * the CPU stack (interned by the model; NULL: none). */
    int64_t ext_kind;
    uint64_t ext_id;
    const char *stack;
} cell;

typedef struct track {
    uint64_t key;
    cell *cells; /* FL_HTML_BUCKETS */
} track;

/* A time axis of nb buckets of width_ns from t0_ns, widened by doubling. */
typedef struct axis {
    uint64_t t0_ns, width_ns;
    bool set;
} axis;

#define N_SERIES                                                                                   \
    6 /* util.gpu %, SM active %, memory used MiB, power W, temperature C, util.mem % */

typedef struct point {
    double sum[N_SERIES];
    uint32_t n[N_SERIES];
} point;

typedef struct series {
    int64_t device_id;
    point *pts; /* FL_HTML_POINTS */
} series;

struct fl_html {
    fl_model *m;
    fl_read_cb inner;
    axis ax, sax;
    track tracks[FL_HTML_TRACKS];
    size_t n_tracks;
    series dev[FL_HTML_DEVICES];
    size_t n_dev;
    fl_u64map open; /* scope_instance_id -> a: start ns, b: name_id */
    fl_u64map open_tid;
    uint64_t events, events_not_shown, samples_not_shown;
    /* A run's sessions, one after another (report/runs_read.c, ids
     * already run-wide): the process each event's track belongs to, and
     * each process's pid for its labels. */
    uint32_t proc, n_proc;
    int64_t proc_pid[FL_HTML_PROCS];
    bool proc_have_pid[FL_HTML_PROCS];
    bool oom;
    char stop_why[160];
    cell cell_tmp[FL_HTML_BUCKETS];
    point point_tmp[FL_HTML_POINTS];
};

/* ------------------------------------------------------------- the axis */

/* Re-buckets base (nb buckets of size sz from old_t0 of width w) for the
 * axis from new_t0 <= old_t0 of width 2w (new_t0 chosen so that the old
 * span fits), through tmp (nb buckets: no allocation, so it cannot fail). */
static void fold(void *base, void *tmp, size_t nb, size_t sz, uint64_t old_t0, uint64_t new_t0,
                 uint64_t w, void (*merge)(void *into, const void *from))
{
    char *b = base, *t = tmp;
    memset(t, 0, nb * sz);
    for (size_t i = 0; i < nb; i++) {
        uint64_t j = (old_t0 - new_t0 + i * w) / (2 * w);
        merge(t + (j < nb ? j : nb - 1) * sz, b + i * sz);
    }
    memcpy(b, t, nb * sz);
}

/* The axis widened once so that t comes nearer: its new origin. */
static uint64_t widen_origin(const axis *a, uint64_t t, size_t nb)
{
    uint64_t span = a->width_ns * nb;
    if (t >= a->t0_ns)
        return a->t0_ns;
    return a->t0_ns >= span ? a->t0_ns - span : 0; /* near the epoch: from 0 */
}

static void merge_cell(void *into, const void *from)
{
    cell *a = into;
    const cell *b = from;
    if (!b->count)
        return;
    if (!a->count || b->dur_ns > a->dur_ns) {
        a->start_ns = b->start_ns;
        a->dur_ns = b->dur_ns;
        a->name = b->name;
        a->kind = b->kind;
        a->ext_kind = b->ext_kind;
        a->ext_id = b->ext_id;
        a->stack = b->stack;
    }
    a->count += b->count;
    a->busy_ns += b->busy_ns;
}

static void merge_point(void *into, const void *from)
{
    point *a = into;
    const point *b = from;
    for (int i = 0; i < N_SERIES; i++) {
        a->sum[i] += b->sum[i];
        a->n[i] += b->n[i];
    }
}

/* Widens the timeline's axis until t fits, folding every track. */
static size_t timeline_bucket(fl_html *h, uint64_t t)
{
    axis *a = &h->ax;
    if (!a->set) {
        a->set = true;
        a->t0_ns = t;
        a->width_ns = 1;
    }
    for (;;) {
        uint64_t span = a->width_ns * FL_HTML_BUCKETS;
        if (t >= a->t0_ns && t - a->t0_ns < span)
            return (size_t)((t - a->t0_ns) / a->width_ns);
        if (a->width_ns > UINT64_MAX / 4 / FL_HTML_BUCKETS)
            return t < a->t0_ns ? 0 : FL_HTML_BUCKETS - 1; /* a span past the clock's */
        uint64_t t0 = widen_origin(a, t, FL_HTML_BUCKETS);
        for (size_t i = 0; i < h->n_tracks; i++)
            fold(h->tracks[i].cells, h->cell_tmp, FL_HTML_BUCKETS, sizeof(cell), a->t0_ns, t0,
                 a->width_ns, merge_cell);
        a->t0_ns = t0;
        a->width_ns *= 2;
    }
}

static size_t series_bucket(fl_html *h, uint64_t t)
{
    axis *a = &h->sax;
    if (!a->set) {
        a->set = true;
        a->t0_ns = t;
        a->width_ns = 1000; /* 1 us: finer than any sampling interval */
    }
    for (;;) {
        uint64_t span = a->width_ns * FL_HTML_POINTS;
        if (t >= a->t0_ns && t - a->t0_ns < span)
            return (size_t)((t - a->t0_ns) / a->width_ns);
        if (a->width_ns > UINT64_MAX / 4 / FL_HTML_POINTS)
            return t < a->t0_ns ? 0 : FL_HTML_POINTS - 1;
        uint64_t t0 = widen_origin(a, t, FL_HTML_POINTS);
        for (size_t i = 0; i < h->n_dev; i++)
            fold(h->dev[i].pts, h->point_tmp, FL_HTML_POINTS, sizeof(point), a->t0_ns, t0,
                 a->width_ns, merge_point);
        a->t0_ns = t0;
        a->width_ns *= 2;
    }
}

/* ------------------------------------------------------------- events */

static track *track_of(fl_html *h, uint64_t key)
{
    for (size_t i = 0; i < h->n_tracks; i++)
        if (h->tracks[i].key == key)
            return &h->tracks[i];
    if (h->n_tracks == FL_HTML_TRACKS)
        return NULL;
    cell *c = calloc(FL_HTML_BUCKETS, sizeof *c);
    if (!c) {
        h->oom = true;
        return NULL;
    }
    track *tr = &h->tracks[h->n_tracks++];
    tr->key = key;
    tr->cells = c;
    return tr;
}

/* Track keys: the class in the top bits, then device and stream or tid. */
#define TK_GPU (1ull << 60)
#define TK_SYNC (2ull << 60)
#define TK_SCOPE (3ull << 60)
#define TK_NVTX (4ull << 60)
#define TK_CLASS(k) ((k) >> 60)
#define TK_PROC_SHIFT 52 /* the process, below the class */
#define TK_PROC(k) (((k) >> TK_PROC_SHIFT) & 0xff)

static void add_cell(fl_html *h, uint64_t key, const cell *one)
{
    h->events++;
    key |= (uint64_t)h->proc << TK_PROC_SHIFT;
    /* A track is made (and the axis widened) before the event's bucket is
     * taken, so a fold never moves a bucket already chosen. */
    track *tr = track_of(h, key);
    if (!tr) {
        h->events_not_shown++;
        return;
    }
    size_t bk = timeline_bucket(h, one->start_ns);
    merge_cell(&tr->cells[bk], one);
}

static void add_event(fl_html *h, uint64_t key, uint8_t kind, uint64_t name, uint64_t t,
                      uint64_t dur)
{
    cell one = {
        .start_ns = t, .dur_ns = dur, .busy_ns = dur, .name = name, .count = 1, .kind = kind};
    add_cell(h, key, &one);
}

static uint64_t gpu_key(const fl_html *h, int64_t cuda_dev, uint64_t stream)
{
    int64_t dev = cuda_dev >= 0 ? cuda_dev : h->m->default_device;
    dev = dev < 0 ? 0xfffff : fl_model_gpu_of_cuda(h->m, dev);
    if (dev < 0 || dev > 0xfffff)
        dev = 0xfffff; /* unknown device: one track per stream there */
    return TK_GPU | (uint64_t)dev << 32 | (stream & 0xffffffffu);
}

static void on_kernel(void *user, const fl_krow *k)
{
    fl_html *h = user;
    cell one = {.start_ns = k->start_ns,
                .dur_ns = k->duration_ns,
                .busy_ns = k->duration_ns,
                .name = k->kernel_id,
                .count = 1,
                .kind = EV_KERNEL,
                .ext_kind = k->external_kind > 0 ? k->external_kind : 0,
                .ext_id = k->external_id,
                .stack = k->detail && k->detail->stack_trace && *k->detail->stack_trace
                             ? k->detail->stack_trace
                             : NULL};
    add_cell(h, gpu_key(h, k->device_id, k->stream_id), &one);
}

static void memcpy_batch(fl_html *h, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_MEMCPY_DT_NS),
        c_stream = fl_batch_colid(b, FL_COL_MEMCPY_STREAM_ID),
        c_dur = fl_batch_colid(b, FL_COL_MEMCPY_DURATION_NS),
        c_kind = fl_batch_colid(b, FL_COL_MEMCPY_COPY_KIND),
        c_src = fl_batch_colid(b, FL_COL_MEMCPY_SRC_DEVICE_ID),
        c_dev = fl_batch_colid(b, FL_COL_MEMCPY_DEVICE_ID);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, stream = 0, dur = 0, kind = 0, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        fl_rcell_u64(b, i, c_stream, &stream);
        fl_rcell_u64(b, i, c_dur, &dur);
        fl_rcell_u64(b, i, c_kind, &kind);
        int64_t device = -1;
        if (fl_rcell_u64(b, i, c_src, &dev) && dev <= INT32_MAX)
            device = (int64_t)dev;
        else if (fl_rcell_u64(b, i, c_dev, &dev) && dev <= INT32_MAX)
            device = (int64_t)dev;
        add_event(h, gpu_key(h, device, stream), EV_MEMCPY, kind, b->base_time_ns + dt, dur);
    }
}

static void graph_batch(fl_html *h, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_GRAPH_DT_NS),
        c_stream = fl_batch_colid(b, FL_COL_GRAPH_STREAM_ID),
        c_dur = fl_batch_colid(b, FL_COL_GRAPH_DURATION_NS),
        c_graph = fl_batch_colid(b, FL_COL_GRAPH_GRAPH_ID),
        c_dev = fl_batch_colid(b, FL_COL_GRAPH_DEVICE_ID);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, stream = 0, dur = 0, graph = 0, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        fl_rcell_u64(b, i, c_stream, &stream);
        fl_rcell_u64(b, i, c_dur, &dur);
        fl_rcell_u64(b, i, c_graph, &graph);
        bool have_dev = fl_rcell_u64(b, i, c_dev, &dev) && dev <= INT32_MAX;
        add_event(h, gpu_key(h, have_dev ? (int64_t)dev : -1, stream), EV_GRAPH, graph,
                  b->base_time_ns + dt, dur);
    }
}

static void sync_batch(fl_html *h, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_SYNC_DT_NS),
        c_dur = fl_batch_colid(b, FL_COL_SYNC_DURATION_NS),
        c_type = fl_batch_colid(b, FL_COL_SYNC_SYNC_TYPE);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dur = 0, type = 0;
        if (!fl_rcell_u64(b, i, c_dt, &dt))
            continue;
        fl_rcell_u64(b, i, c_dur, &dur);
        fl_rcell_u64(b, i, c_type, &type);
        add_event(h, TK_SYNC, EV_SYNC, type, b->base_time_ns + dt, dur);
    }
}

static void scope_batch(fl_html *h, const fl_batch *b)
{
    fl_scope_cols c = fl_scope_cols_of(b);
    int c_tid = fl_batch_colid(b, FL_COL_SCOPE_TID);
    for (size_t i = 0; i < b->nrows; i++) {
        fl_scope_end end;
        int64_t th;
        fl_scope_step st = fl_scope_row_thread(&h->open, &h->open_tid, b, &c, c_tid, i, &end, &th);
        if (st == FL_SCOPE_OOM) {
            h->oom = true;
            return;
        }
        if (st != FL_SCOPE_ENDED)
            continue;
        uint64_t thread = (uint64_t)th; /* -1: no thread's track, 0xffffffff below */
        bool nvtx = (end.instance & FL_NVTX_INSTANCE_BIT) != 0;
        uint64_t dur = end.end_ns > end.start_ns ? end.end_ns - end.start_ns : 0;
        add_event(h, nvtx ? TK_NVTX : TK_SCOPE | (thread & 0xffffffffu), nvtx ? EV_NVTX : EV_SCOPE,
                  end.name_id, end.start_ns, dur);
    }
}

static series *series_of(fl_html *h, int64_t dev)
{
    for (size_t i = 0; i < h->n_dev; i++)
        if (h->dev[i].device_id == dev)
            return &h->dev[i];
    if (h->n_dev == FL_HTML_DEVICES)
        return NULL;
    point *p = calloc(FL_HTML_POINTS, sizeof *p);
    if (!p) {
        h->oom = true;
        return NULL;
    }
    series *s = &h->dev[h->n_dev++];
    s->device_id = dev;
    s->pts = p;
    return s;
}

static void device_metrics(fl_html *h, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_DEVMETRIC_DT_NS),
        c_dev = fl_batch_colid(b, FL_COL_DEVMETRIC_DEVICE_ID);
    const int cols[N_SERIES] = {
        fl_batch_colid(b, FL_COL_DEVMETRIC_GPU_UTIL), fl_batch_colid(b, FL_COL_DEVMETRIC_SM_ACTIVE),
        fl_batch_colid(b, FL_COL_DEVMETRIC_USED_MIB), fl_batch_colid(b, FL_COL_DEVMETRIC_POWER_MW),
        fl_batch_colid(b, FL_COL_DEVMETRIC_TEMP_C),   fl_batch_colid(b, FL_COL_DEVMETRIC_MEM_UTIL)};
    const double scale[N_SERIES] = {1, 0.01, 1, 1e-3, 1, 1};
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt) || !fl_rcell_u64(b, i, c_dev, &dev) || dev > INT32_MAX)
            continue;
        series *s = series_of(h, (int64_t)dev);
        if (!s) {
            h->samples_not_shown++;
            continue;
        }
        point *p = &s->pts[series_bucket(h, b->base_time_ns + dt)];
        for (int k = 0; k < N_SERIES; k++) {
            double v;
            if (cols[k] >= 0 && fl_rcell_real(b, i, cols[k], &v) && isfinite(v)) {
                p->sum[k] += v * scale[k];
                p->n[k]++;
            }
        }
    }
}

/* ------------------------------------------------------------- callbacks */

static void tee_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    fl_html *h = user;
    if (h->inner.record)
        h->inner.record(h->inner.user, channel, t, type, rec);
    fl_model_record(h->m, channel, t, type, rec);
    if (t == FL_T_JOB_START) {
        /* Every channel repeats it: a new process only when the model
         * counted another session. */
        uint64_t k = h->m->next_sessions;
        h->proc = k < FL_HTML_PROCS ? (uint32_t)k : FL_HTML_PROCS - 1;
        if (h->proc >= h->n_proc) {
            json_t *pid = json_object_get(rec, "pid");
            h->proc_have_pid[h->proc] = json_is_integer(pid);
            h->proc_pid[h->proc] = json_is_integer(pid) ? json_integer_value(pid) : 0;
            h->n_proc = h->proc + 1;
        }
    }
}

static void tee_detail(void *user, int channel, const fl_detail *d)
{
    fl_html *h = user;
    if (h->inner.detail)
        h->inner.detail(h->inner.user, channel, d);
    fl_model_detail(h->m, d);
}

static void tee_batch(void *user, const fl_batch *b)
{
    fl_html *h = user;
    if (h->inner.batch)
        h->inner.batch(h->inner.user, b);
    fl_model_batch(h->m, b);
    if (!b || !b->type)
        return;
    switch (b->type_id) {
    case FL_T_MEMCPY_EVENT_BATCH:
        memcpy_batch(h, b);
        break;
    case FL_T_SCOPE_EVENT_BATCH:
        scope_batch(h, b);
        break;
    case FL_T_DEVICE_METRIC_BATCH:
        device_metrics(h, b);
        break;
    case FL_T_GRAPH_EVENT_BATCH:
        graph_batch(h, b);
        break;
    case FL_T_SYNCHRONIZATION_EVENT_BATCH:
        sync_batch(h, b);
        break;
    default:
        break;
    }
}

static void tee_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    fl_html *h = user;
    if (h->inner.warning)
        h->inner.warning(h->inner.user, file, line, msg);
}

static const char *tee_stop(void *user)
{
    fl_html *h = user;
    const char *why = h->inner.stop ? h->inner.stop(h->inner.user) : NULL;
    if (why)
        return why;
    if (h->oom || h->m->oom) {
        snprintf(h->stop_why, sizeof h->stop_why,
                 "out of memory for the HTML report's timeline: give the process more memory");
        return h->stop_why;
    }
    return NULL;
}

fl_html *fl_html_create(void)
{
    fl_html *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->m = fl_model_create(on_kernel, h);
    if (!h->m) {
        free(h);
        return NULL;
    }
    /* The model's own cap is the report's business: the timeline's model
     * keeps the same distinct keys the report does, so no second cap. */
    h->m->keys.max = 0;
    h->m->keys.max_bytes = 0;
    return h;
}

void fl_html_destroy(fl_html *h)
{
    if (!h)
        return;
    fl_model_destroy(h->m);
    for (size_t i = 0; i < h->n_tracks; i++)
        free(h->tracks[i].cells);
    for (size_t i = 0; i < h->n_dev; i++)
        free(h->dev[i].pts);
    fl_map_free(&h->open);
    fl_map_free(&h->open_tid);
    free(h);
}

void fl_html_tee(fl_html *h, const fl_read_cb *inner, fl_read_cb *out)
{
    h->inner = *inner;
    *out = (fl_read_cb){.user = h,
                        .record = tee_record,
                        .detail = tee_detail,
                        .batch = tee_batch,
                        .warning = tee_warning,
                        .stop = tee_stop};
}

void fl_html_finish(fl_html *h)
{
    if (h)
        fl_model_finish(h->m);
}

/* ------------------------------------------------------------- the JSON */

void fl_html_put_str(fl_buf *out, const char *s, size_t max_bytes)
{
    size_t n = strlen(s);
    if (n <= max_bytes) {
        fl_buf_str(out, s);
        return;
    }
    /* Cut on a UTF-8 boundary: never inside a character. */
    size_t cut = max_bytes;
    while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
        cut--;
    char buf[256];
    if (cut > sizeof buf - 4)
        cut = sizeof buf - 4;
    memcpy(buf, s, cut);
    memcpy(buf + cut, "\xe2\x80\xa6", 4); /* "…" */
    fl_buf_str(out, buf);
}

static void put_name(fl_buf *out, const fl_html *h, const cell *c)
{
    char buf[64];
    const char *s = NULL;
    static const char *const syncs[] = {"sync (unknown)", "sync event", "sync stream wait event",
                                        "sync stream", "sync context"};
    switch (c->kind) {
    case EV_KERNEL:
        s = fl_model_kernel_name(h->m, c->name);
        if (!s)
            snprintf(buf, sizeof buf, "kernel %llu", (unsigned long long)c->name);
        break;
    case EV_MEMCPY:
        s = fl_copy_kind_name(c->name);
        snprintf(buf, sizeof buf, "memcpy %s", s ? s : "kind ?");
        s = NULL;
        break;
    case EV_GRAPH:
        snprintf(buf, sizeof buf, "graph %llu", (unsigned long long)c->name);
        break;
    case EV_SYNC:
        s = c->name < 5 ? syncs[c->name] : "sync";
        break;
    default:
        s = fl_model_scope_name(h->m, c->name);
        if (!s)
            snprintf(buf, sizeof buf, "scope %llu", (unsigned long long)c->name);
        break;
    }
    /* The hotspots table has the whole name; a timeline label is cut. */
    fl_html_put_str(out, s ? s : buf, 200);
}

/* A kernel's op and launching line (report --by op|line's names): two
 * more members, null when unknown. */
static void put_launcher(fl_buf *out, const fl_html *h, const cell *c)
{
    char buf[256];
    FL_BUF_LIT(out, ",");
    if (c->ext_kind > 0) {
        fl_model_op_label(h->m, c->ext_kind, c->ext_id, buf, sizeof buf);
        fl_html_put_str(out, buf, 200);
    } else {
        FL_BUF_LIT(out, "null");
    }
    FL_BUF_LIT(out, ",");
    if (c->stack) {
        fl_by_line_label(c->stack, buf, sizeof buf);
        fl_html_put_str(out, buf, 200);
    } else {
        FL_BUF_LIT(out, "null");
    }
}

static void put_label(fl_buf *out, const fl_html *h, uint64_t key)
{
    char buf[96], what[64];
    switch (TK_CLASS(key)) {
    case 1: {
        unsigned dev = (unsigned)((key >> 32) & 0xfffff);
        if (dev == 0xfffff)
            snprintf(what, sizeof what, "GPU ? stream %u", (unsigned)(key & 0xffffffffu));
        else
            snprintf(what, sizeof what, "GPU %u stream %u", dev, (unsigned)(key & 0xffffffffu));
        break;
    }
    case 2:
        snprintf(what, sizeof what, "host syncs");
        break;
    case 3:
        if ((key & 0xffffffffu) == 0xffffffffu)
            snprintf(what, sizeof what, "scopes");
        else
            snprintf(what, sizeof what, "scopes tid %u", (unsigned)(key & 0xffffffffu));
        break;
    default:
        snprintf(what, sizeof what, "NVTX");
        break;
    }
    uint32_t p = (uint32_t)TK_PROC(key);
    if (h->n_proc < 2) /* one session: its tracks need no owner */
        snprintf(buf, sizeof buf, "%s", what);
    else if (p < h->n_proc && h->proc_have_pid[p])
        snprintf(buf, sizeof buf, "pid %" PRId64 " \xc2\xb7 %s", h->proc_pid[p], what);
    else
        snprintf(buf, sizeof buf, "process %u \xc2\xb7 %s", p + 1, what);
    fl_buf_str(out, buf);
}

static int cmp_track(const void *a, const void *b)
{
    const track *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static void put_tracks(const fl_html *h, fl_buf *out)
{
    track sorted[FL_HTML_TRACKS];
    memcpy(sorted, h->tracks, h->n_tracks * sizeof *sorted);
    qsort(sorted, h->n_tracks, sizeof *sorted, cmp_track);
    static const char *const kinds[] = {"kernel", "memcpy", "graph", "sync", "scope", "nvtx"};
    FL_BUF_LIT(out, "[");
    for (size_t i = 0; i < h->n_tracks; i++) {
        const track *tr = &sorted[i];
        FL_BUF_LIT(out, "{\"label\":");
        put_label(out, h, tr->key);
        fl_buf_puts(out, TK_CLASS(tr->key) == 1 ? ",\"side\":\"gpu\"" : ",\"side\":\"host\"");
        FL_BUF_LIT(out, ",\"cells\":[");
        bool first = true;
        for (size_t k = 0; k < FL_HTML_BUCKETS; k++) {
            const cell *c = &tr->cells[k];
            if (!c->count)
                continue;
            fl_buf_puts(out, first ? "[" : ",[");
            first = false;
            fl_buf_u64(out, k);
            FL_BUF_LIT(out, ",");
            fl_buf_u64(out, c->start_ns - h->ax.t0_ns);
            FL_BUF_LIT(out, ",");
            fl_buf_u64(out, c->dur_ns);
            FL_BUF_LIT(out, ",");
            fl_buf_str(out, kinds[c->kind]);
            FL_BUF_LIT(out, ",");
            put_name(out, h, c);
            FL_BUF_LIT(out, ",");
            fl_buf_u64(out, c->count);
            FL_BUF_LIT(out, ",");
            fl_buf_u64(out, c->busy_ns);
            put_launcher(out, h, c);
            FL_BUF_LIT(out, "]");
        }
        FL_BUF_LIT(out, "]}");
        if (i + 1 < h->n_tracks)
            FL_BUF_LIT(out, ",");
    }
    FL_BUF_LIT(out, "]");
}

static void put_series(const fl_html *h, fl_buf *out)
{
    FL_BUF_LIT(out, "{\"t0_ns\":");
    fl_buf_u64(out, h->sax.t0_ns);
    FL_BUF_LIT(out, ",\"bucket_ns\":");
    fl_buf_u64(out, h->sax.width_ns);
    FL_BUF_LIT(out, ",\"columns\":[\"t_ns\",\"util_gpu_pct\",\"sm_active_pct\",\"mem_used_mib\","
                    "\"power_w\",\"temp_c\",\"util_mem_pct\"],\"devices\":[");
    for (size_t d = 0; d < h->n_dev; d++) {
        const series *s = &h->dev[d];
        FL_BUF_LIT(out, "{\"device_id\":");
        fl_buf_i64(out, s->device_id);
        FL_BUF_LIT(out, ",\"points\":[");
        bool first = true;
        for (size_t k = 0; k < FL_HTML_POINTS; k++) {
            const point *p = &s->pts[k];
            bool any = false;
            for (int j = 0; j < N_SERIES; j++)
                any |= p->n[j] > 0;
            if (!any)
                continue;
            fl_buf_puts(out, first ? "[" : ",[");
            first = false;
            fl_buf_u64(out, k * h->sax.width_ns + h->sax.width_ns / 2);
            for (int j = 0; j < N_SERIES; j++) {
                FL_BUF_LIT(out, ",");
                fl_buf_opt_double(out, p->n[j] > 0, p->n[j] ? p->sum[j] / p->n[j] : 0);
            }
            FL_BUF_LIT(out, "]");
        }
        FL_BUF_LIT(out, "]}");
        if (d + 1 < h->n_dev)
            FL_BUF_LIT(out, ",");
    }
    FL_BUF_LIT(out, "]}");
}

void fl_html_timeline_json(const fl_html *h, fl_buf *out)
{
    jw w = {out, false};
    j_open(&w, NULL, '{');
    j_u64(&w, "t0_ns", h->ax.t0_ns);
    j_u64(&w, "origin_ns", fl_model_origin(h->m));
    j_u64(&w, "bucket_ns", h->ax.width_ns);
    j_u64(&w, "buckets", FL_HTML_BUCKETS);
    j_u64(&w, "events", h->events);
    j_u64(&w, "events_not_shown", h->events_not_shown);
    j_u64(&w, "samples_not_shown", h->samples_not_shown);
    j_at(&w, "pid");
    fl_buf_opt_i64(out, h->m->have_pid, h->m->pid);
    j_at(&w, "tracks");
    put_tracks(h, out);
    j_at(&w, "series");
    put_series(h, out);
    j_close(&w, '}');
}
