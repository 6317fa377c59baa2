/*
 * run.c - a run's summary (run.h): each session directory read by the
 * session reader, one fl_read_session call per directory (every channel,
 * plain .log and the gzipped windows; the records common to every channel
 * given once).  Of what it delivers the summary takes dictionary_update
 * (kernel_dict, metric_dict), kernel_event_batch, memcpy_event_batch and
 * profile_sample_batch (columns looked up by vocabulary id), memset_event,
 * the range profiler's records, job_start's pid and rank, capture_window
 * (each process's windows) and the last capture_capabilities;
 * everything else is ignored.  A bad log never fails the read: the reader
 * counts what it skips (lines that are not a JSON object with a string
 * "type", a torn last line too; records it cannot use; records of another
 * session_id) and the summary adds the records and rows it cannot use
 * itself - a missing column or field, a value that is not a non-negative
 * number.  A session is merged into the run only once the reader read that
 * directory, so a failed read adds nothing.
 */
#include "run.h"
#include "model.h"
#include "run_lines.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "../util/error.h"
#include "../wire/vocab.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* A non-negative real below 2^64 (the plugin might write a big value
 * so), truncated; -1 for anything else. */
static int real_u64(double d, uint64_t *out)
{
    if (!(d >= 0.0 && d < 18446744073709551616.0))
        return -1;
    *out = (uint64_t)d;
    return 0;
}

/* A record's field: a non-negative integer or real; -1 for anything else. */
static int json_u64(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0)
            return -1;
        *out = (uint64_t)i;
        return 0;
    }
    return json_is_real(v) ? real_u64(json_real_value(v), out) : -1;
}

/* A batch cell, by the same rule; null is -1 too. */
static int cell_u64(const fl_cell *c, uint64_t *out)
{
    switch (c->kind) {
    case FL_CELL_INT:
        if (c->i < 0)
            return -1;
        *out = (uint64_t)c->i;
        return 0;
    case FL_CELL_UINT:
        *out = c->u;
        return 0;
    case FL_CELL_REAL:
        return real_u64(c->d, out);
    default:
        return -1;
    }
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* --------------------------------------------- per-session kernel table */

/* kernel_id -> name and what its rows added up to, one session's. */
typedef struct kent {
    uint64_t id;
    char *name;
    uint64_t calls, total_ns;
    int used;
    int64_t kind, ext_id; /* the ops table's: the external kind and id */
} kent;

typedef struct kmap {
    kent *e;
    size_t cap, n; /* cap: a power of two */
} kmap;

static size_t kslot(uint64_t id, size_t cap)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static kent *kmap_get(kmap *m, uint64_t id)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        kent *e = calloc(cap, sizeof *e);
        if (!e)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].used)
                continue;
            size_t k = kslot(m->e[i].id, cap);
            while (e[k].used)
                k = (k + 1) & (cap - 1);
            e[k] = m->e[i];
        }
        free(m->e);
        m->e = e;
        m->cap = cap;
    }
    size_t k = kslot(id, m->cap);
    while (m->e[k].used && m->e[k].id != id)
        k = (k + 1) & (m->cap - 1);
    if (!m->e[k].used) {
        m->e[k].used = 1;
        m->e[k].id = id;
        m->n++;
    }
    return &m->e[k];
}

static void kmap_free(kmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].name);
    free(m->e);
    memset(m, 0, sizeof *m);
}

/* --------------------------------------------------------------- state */

/* One session while it is read: merged into the summary only when the
 * reader read that directory (merge_session). */
typedef struct sess {
    fl_run *t; /* for oom */
    kmap kernels;
    kmap metrics;        /* metric_dict: the names of PC sampling's stall reasons */
    kmap ops;            /* (kind, id) mixed -> the launches of a framework op */
    kmap op_dict;        /* op_dict: our ops' names */
    fl_run_lines *lines; /* fl_run.want_lines: the launches by source line */
    fl_run_stall *stalls;
    size_t n_stalls, cap_stalls;
    uint64_t pc_samples;
    uint64_t sass_rows, sass_v[6]; /* SASS metrics: fl_sass_metric_kind 0..5 */
    unsigned sass_have;
    uint64_t perf_ranges; /* RangeProfiler's records: scope and kernel ranges */
    json_t *caps;         /* the last capture_capabilities */
    long long pid, rank;  /* job_start's (rank -1: none) */
    fl_run_capture cap;   /* its capture_window records (trigger: the first's) */
    uint64_t launches, kernel_ns;
    fl_run_ops copies[FL_RUN_COPY_KINDS], memsets;
    fl_run_ops syncs; /* bytes unused */
    uint64_t bad;     /* records and rows the summary could not use */
} sess;

void fl_run_init(fl_run *t)
{
    memset(t, 0, sizeof *t);
}

void fl_run_free(fl_run *t)
{
    for (size_t i = 0; i < t->n_kernels; i++)
        free(t->kernels[i].name);
    free(t->kernels);
    for (size_t i = 0; i < t->n_ops; i++)
        free(t->ops[i].name);
    free(t->ops);
    for (size_t i = 0; i < t->n_lines; i++)
        free(t->lines[i].name);
    free(t->lines);
    for (size_t i = 0; i < t->n_caps; i++) {
        free(t->caps[i].feature);
        free(t->caps[i].status);
        free(t->caps[i].message);
    }
    free(t->caps);
    for (size_t i = 0; i < t->n_engines; i++) {
        free(t->engines[i].engine);
        free(t->engines[i].requested);
        free(t->engines[i].message);
    }
    free(t->engines);
    for (size_t i = 0; i < t->n_stalls; i++)
        free(t->stalls[i].name);
    free(t->stalls);
    for (size_t i = 0; i < t->n_captures; i++)
        free(t->captures[i].trigger);
    free(t->captures);
    memset(t, 0, sizeof *t);
}

static char *dup_or_oom(fl_run *t, const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        t->oom = 1;
    return d;
}

/* One dictionary's entries (id -> name) into m. */
static void take_dict(sess *s, const json_t *dict, kmap *m)
{
    if (!json_is_object(dict)) {
        s->bad++;
        return;
    }
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)dict, key, val)
    {
        char *end = NULL;
        unsigned long long id = strtoull(key, &end, 10);
        const char *name = json_string_value(val);
        if (!key[0] || *end || key[0] == '-' || key[0] == '+' || !name) {
            s->bad++;
            continue;
        }
        kent *e = kmap_get(m, id);
        char *copy = strdup(name);
        if (!e || !copy) {
            free(copy);
            s->t->oom = 1;
            return;
        }
        free(e->name);
        e->name = copy;
    }
}

static void on_dictionary(sess *s, const json_t *rec)
{
    const json_t *kd = json_object_get(rec, fl_dict_name(FL_DICT_KERNEL));
    const json_t *md = json_object_get(rec, fl_dict_name(FL_DICT_METRIC));
    const json_t *od = json_object_get(rec, fl_dict_name(FL_DICT_OP));
    if (od)
        take_dict(s, od, &s->op_dict);
    if (kd)
        take_dict(s, kd, &s->kernels);
    if (md)
        take_dict(s, md, &s->metrics);
}

/* samples more of the reason called name, in a table of reasons. */
static int add_stall(fl_run_stall **v, size_t *n, size_t *cap, const char *name, uint64_t samples)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].name, name)) {
            (*v)[i].samples = sat_add((*v)[i].samples, samples);
            return 0;
        }
    char *copy = strdup(name);
    if (!copy || fl_grow((void **)v, cap, *n + 1, sizeof **v) < 0) {
        free(copy);
        return -1;
    }
    (*v)[(*n)++] = (fl_run_stall){copy, samples};
    return 0;
}

/* A SASS metric's value into the sums (metric_dict's name; one the
 * summary does not use is left out). */
static void sass_add(uint64_t v[6], unsigned *have, const char *metric_name, uint64_t value)
{
    int k = fl_sass_metric_kind(metric_name);
    if (k < 0 || k >= 6)
        return;
    v[k] = sat_add(v[k], value);
    *have |= 1u << k;
}

/* A SASS-metric row (sample_kind 1): its value into the summary's sums. */
static void on_sass(sess *s, const fl_batch *b, size_t r)
{
    int cm = fl_batch_colid(b, FL_COL_PROFILE_METRIC_ID);
    int cv = fl_batch_colid(b, FL_COL_PROFILE_METRIC_VALUE);
    uint64_t metric = 0, v = 0;
    s->sass_rows++;
    if (cm < 0 || cell_u64(fl_batch_cell(b, r, cm), &metric) < 0 ||
        cell_u64(fl_batch_cell(b, r, cv), &v) < 0)
        return;
    const kent *e = metric ? kmap_get(&s->metrics, metric) : NULL;
    sass_add(s->sass_v, &s->sass_have, e ? e->name : NULL, v);
}

/* PC sampling's rows (sample_kind 0): samples per stall reason, named
 * through metric_dict. */
static void on_samples(sess *s, const fl_batch *b)
{
    int cm = fl_batch_colid(b, FL_COL_PROFILE_METRIC_ID);
    int cv = fl_batch_colid(b, FL_COL_PROFILE_METRIC_VALUE);
    int cr = fl_batch_colid(b, FL_COL_PROFILE_STALL_REASON);
    int ck = fl_batch_colid(b, FL_COL_PROFILE_SAMPLE_KIND);
    if (cv < 0 || cr < 0) {
        s->bad++;
        return;
    }
    for (size_t r = 0; r < b->nrows; r++) {
        uint64_t kind = 0, metric = 0, n, reason;
        if (ck >= 0 && cell_u64(fl_batch_cell(b, r, ck), &kind) < 0) {
            s->bad++;
            continue;
        }
        if (kind == 1)
            on_sass(s, b, r);
        if (kind != 0)
            continue; /* SASS metrics, source maps: their stall_reason may be null */
        if ((cm >= 0 && cell_u64(fl_batch_cell(b, r, cm), &metric) < 0) ||
            cell_u64(fl_batch_cell(b, r, cv), &n) < 0 ||
            cell_u64(fl_batch_cell(b, r, cr), &reason) < 0) {
            s->bad++;
            continue;
        }
        const kent *e = metric ? kmap_get(&s->metrics, metric) : NULL;
        char label[160];
        bool not_issued;
        fl_stall_label(e ? e->name : NULL, reason, label, sizeof label, &not_issued);
        if (not_issued)
            continue;
        s->pc_samples = sat_add(s->pc_samples, n);
        if (add_stall(&s->stalls, &s->n_stalls, &s->cap_stalls, label, n) < 0) {
            s->t->oom = 1;
            return;
        }
    }
}

/* A launch's framework op (external kind > 0). */
static void on_op(sess *s, const fl_batch *b, size_t r, int ck, int ce, uint64_t dur)
{
    uint64_t kind, id;
    if (ck < 0 || ce < 0 || cell_u64(fl_batch_cell(b, r, ck), &kind) < 0 || !kind ||
        cell_u64(fl_batch_cell(b, r, ce), &id) < 0)
        return;
    kent *e = kmap_get(&s->ops, id ^ (kind * 0x9e3779b97f4a7c15ull));
    if (!e) {
        s->t->oom = 1;
        return;
    }
    e->kind = (int64_t)kind;
    e->ext_id = (int64_t)id;
    e->calls++;
    e->total_ns = sat_add(e->total_ns, dur);
}

static void on_kernels(sess *s, const fl_batch *b)
{
    int ci = fl_batch_colid(b, FL_COL_KERNEL_KERNEL_ID);
    int cd = fl_batch_colid(b, FL_COL_KERNEL_DURATION_NS);
    int ck = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_KIND);
    int ce = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_ID);
    if (ci < 0 || cd < 0) {
        s->bad++;
        return;
    }
    for (size_t r = 0; r < b->nrows; r++) {
        uint64_t id, dur;
        if (cell_u64(fl_batch_cell(b, r, ci), &id) < 0 ||
            cell_u64(fl_batch_cell(b, r, cd), &dur) < 0) {
            s->bad++;
            continue;
        }
        kent *e = kmap_get(&s->kernels, id);
        if (!e) {
            s->t->oom = 1;
            return;
        }
        e->calls++;
        e->total_ns = sat_add(e->total_ns, dur);
        s->launches++;
        s->kernel_ns = sat_add(s->kernel_ns, dur);
        on_op(s, b, r, ck, ce, dur);
    }
}

static enum fl_run_copy copy_kind(uint64_t k)
{
    switch (k) {
    case 1:
        return FL_RUN_COPY_HTOD;
    case 2:
        return FL_RUN_COPY_DTOH;
    case 8:
        return FL_RUN_COPY_DTOD;
    case 10:
        return FL_RUN_COPY_PTOP;
    default:
        return FL_RUN_COPY_OTHER;
    }
}

static void add_ops(fl_run_ops *o, uint64_t count, uint64_t bytes, uint64_t dur)
{
    o->count += count;
    o->bytes = sat_add(o->bytes, bytes);
    o->time_ns = sat_add(o->time_ns, dur);
}

static void on_memcpys(sess *s, const fl_batch *b)
{
    int cb = fl_batch_colid(b, FL_COL_MEMCPY_BYTES),
        cd = fl_batch_colid(b, FL_COL_MEMCPY_DURATION_NS);
    int ck = fl_batch_colid(b, FL_COL_MEMCPY_COPY_KIND);
    if (cb < 0 || cd < 0 || ck < 0) {
        s->bad++;
        return;
    }
    for (size_t r = 0; r < b->nrows; r++) {
        uint64_t bytes, dur, kind;
        if (cell_u64(fl_batch_cell(b, r, cb), &bytes) < 0 ||
            cell_u64(fl_batch_cell(b, r, cd), &dur) < 0 ||
            cell_u64(fl_batch_cell(b, r, ck), &kind) < 0) {
            s->bad++;
            continue;
        }
        add_ops(&s->copies[copy_kind(kind)], 1, bytes, dur);
    }
}

static void on_memset(sess *s, const json_t *rec)
{
    uint64_t bytes, dur;
    if (json_u64(json_object_get(rec, "bytes"), &bytes) < 0 ||
        json_u64(json_object_get(rec, "duration_ns"), &dur) < 0) {
        s->bad++;
        return;
    }
    add_ops(&s->memsets, 1, bytes, dur);
}

/* The reader's callbacks: records (borrowed for the call) and batches. */
/* Synchronizations: the CPU's wait on the GPU, each row's duration. */
static void on_syncs(sess *s, const fl_batch *b)
{
    int cd = fl_batch_colid(b, FL_COL_SYNC_DURATION_NS);
    if (cd < 0) {
        s->bad++;
        return;
    }
    for (size_t r = 0; r < b->nrows; r++) {
        uint64_t dur;
        if (cell_u64(fl_batch_cell(b, r, cd), &dur) < 0) {
            s->bad++;
            continue;
        }
        add_ops(&s->syncs, 1, 0, dur);
    }
}

static void on_job_start(sess *s, const json_t *rec)
{
    const json_t *pid = json_object_get(rec, "pid"), *rank = json_object_get(rec, "rank");
    s->pid = json_is_integer(pid) ? (long long)json_integer_value(pid) : -1;
    s->rank = json_is_integer(rank) ? (long long)json_integer_value(rank) : -1;
}

/* A capture_window: counted, its duration summed, the trigger of the
 * first kept ("nvtx:NAME" for an NVTX range). */
static void on_window(sess *s, const json_t *rec)
{
    uint64_t d;
    const char *trig = json_string_value(json_object_get(rec, "trigger"));
    const char *name = json_string_value(json_object_get(rec, "name"));
    if (!trig || json_u64(json_object_get(rec, "duration_ns"), &d) < 0) {
        s->bad++;
        return;
    }
    s->cap.windows++;
    s->cap.captured_ns = sat_add(s->cap.captured_ns, d);
    if (json_is_true(json_object_get(rec, "open_at_shutdown")))
        s->cap.open_at_end++;
    if (s->cap.trigger)
        return;
    size_t len = strlen(trig) + (name ? strlen(name) : 0) + 2;
    s->cap.trigger = malloc(len);
    if (!s->cap.trigger) {
        s->t->oom = 1;
        return;
    }
    snprintf(s->cap.trigger, len, "%s%s%s", trig, name && *name ? ":" : "",
             name && *name ? name : "");
}

static void on_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel;
    (void)type;
    sess *s = user;
    if (s->lines)
        fl_run_lines_record(s->lines, channel, t, type, rec);
    if (t == FL_T_DICTIONARY_UPDATE) {
        on_dictionary(s, rec);
    } else if (t == FL_T_MEMSET_EVENT) {
        on_memset(s, rec);
    } else if (t == FL_T_PERF_METRIC_EVENT || t == FL_T_KERNEL_PERF_METRIC_EVENT) {
        s->perf_ranges++;
    } else if (t == FL_T_CAPTURE_CAPABILITIES) {
        json_decref(s->caps);
        s->caps = json_incref(rec);
    } else if (t == FL_T_JOB_START) {
        on_job_start(s, rec);
    } else if (t == FL_T_CAPTURE_WINDOW) {
        on_window(s, rec);
    }
}

static void on_detail(void *user, int channel, const fl_detail *d)
{
    (void)channel;
    fl_run_lines_detail(((sess *)user)->lines, d);
}

static void on_batch(void *user, const fl_batch *b)
{
    sess *s = user;
    if (s->lines)
        fl_run_lines_batch(s->lines, b);
    if (b->type_id == FL_T_KERNEL_EVENT_BATCH)
        on_kernels(s, b);
    else if (b->type_id == FL_T_MEMCPY_EVENT_BATCH)
        on_memcpys(s, b);
    else if (b->type_id == FL_T_PROFILE_SAMPLE_BATCH)
        on_samples(s, b);
    else if (b->type_id == FL_T_SYNCHRONIZATION_EVENT_BATCH)
        on_syncs(s, b);
}

/* ------------------------------------------------------ end of a session */

static fl_run_cap *find_cap(fl_run *t, const char *feature, const char *status, const char *message)
{
    for (size_t i = 0; i < t->n_caps; i++)
        if (same(t->caps[i].feature, feature) && same(t->caps[i].status, status) &&
            same(t->caps[i].message, message))
            return &t->caps[i];
    if (fl_grow((void **)&t->caps, &t->cap_caps, t->n_caps + 1, sizeof *t->caps) < 0) {
        t->oom = 1;
        return NULL;
    }
    fl_run_cap *c = &t->caps[t->n_caps];
    memset(c, 0, sizeof *c);
    c->feature = dup_or_oom(t, feature);
    c->status = dup_or_oom(t, status);
    c->message = dup_or_oom(t, message);
    if (!c->feature || !c->status || !c->message) {
        free(c->feature);
        free(c->status);
        free(c->message);
        return NULL;
    }
    t->n_caps++;
    return c;
}

static void take_caps(fl_run *t, const json_t *cc)
{
    const char *requested = json_string_value(json_object_get(cc, "requested_engine"));
    const char *selected = json_string_value(json_object_get(cc, "selected_engine"));
    const char *first_fallback = NULL;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(cc, "capabilities"), i, c)
    {
        const char *feature = json_string_value(json_object_get(c, "feature"));
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *message = json_string_value(json_object_get(c, "message"));
        if (!feature || !status)
            continue;
        fl_cap_status cs = fl_cap_status_of(status);
        if (cs != FL_CAP_FALLBACK && cs != FL_CAP_PARTIAL)
            continue;
        if (!first_fallback && cs == FL_CAP_FALLBACK && message && message[0])
            first_fallback = message;
        fl_run_cap *k = find_cap(t, feature, status, message ? message : "");
        if (k)
            k->processes++;
    }
    if (!selected)
        return;
    fl_run_engine *e = NULL;
    for (size_t k = 0; k < t->n_engines && !e; k++)
        if (strcmp(t->engines[k].engine, selected) == 0)
            e = &t->engines[k];
    if (!e) {
        if (fl_grow((void **)&t->engines, &t->cap_engines, t->n_engines + 1, sizeof *t->engines) <
            0) {
            t->oom = 1;
            return;
        }
        e = &t->engines[t->n_engines];
        memset(e, 0, sizeof *e);
        e->engine = dup_or_oom(t, selected);
        e->requested = requested ? dup_or_oom(t, requested) : NULL;
        if (!e->engine) {
            free(e->requested);
            return;
        }
        t->n_engines++;
    }
    e->processes++;
    if (requested && strcmp(requested, selected) != 0 && !e->message)
        e->message = dup_or_oom(t, first_fallback ? first_fallback : "");
}

static int add_named(fl_run_kernel **v, size_t *n, size_t *cap, const char *name, uint64_t calls,
                     uint64_t total_ns)
{
    if (fl_grow((void **)v, cap, *n + 1, sizeof **v) != 0)
        return -1;
    char *d = strdup(name);
    if (!d)
        return -1;
    (*v)[(*n)++] = (fl_run_kernel){d, calls, total_ns};
    return 0;
}

static int add_line(void *user, const char *label, uint64_t launches, uint64_t ns)
{
    fl_run *t = user;
    return add_named(&t->lines, &t->n_lines, &t->cap_lines, label, launches, ns);
}

/* A session's ops into t, named by its op_dict (our kind only). */
static void merge_ops(fl_run *t, sess *s)
{
    for (size_t i = 0; i < s->ops.cap; i++) {
        const kent *e = &s->ops.e[i];
        if (!e->used || !e->calls)
            continue;
        const kent *n = NULL;
        if (e->kind == 4)
            for (size_t k = 0; k < s->op_dict.cap && !n; k++)
                if (s->op_dict.e[k].used && s->op_dict.e[k].id == (uint64_t)e->ext_id)
                    n = &s->op_dict.e[k];
        char name[64];
        if (!n || !n->name)
            snprintf(name, sizeof name, "%s#%llu", fl_external_kind_name(e->kind),
                     (unsigned long long)e->ext_id);
        if (add_named(&t->ops, &t->n_ops, &t->cap_ops, n && n->name ? n->name : name, e->calls,
                      e->total_ns) != 0)
            t->oom = 1;
    }
}

static void add_kernel(fl_run *t, const char *name, uint64_t calls, uint64_t total_ns)
{
    if (fl_grow((void **)&t->kernels, &t->cap_kernels, t->n_kernels + 1, sizeof *t->kernels) < 0) {
        t->oom = 1;
        return;
    }
    char *n = dup_or_oom(t, name);
    if (!n)
        return;
    t->kernels[t->n_kernels++] = (fl_run_kernel){n, calls, total_ns};
}

/* Whether the session's last capture_capabilities says it asked for
 * capture windows. */
static bool asked_windows(const json_t *caps)
{
    const json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *c = json_array_get(list, i);
        if (same(json_string_value(json_object_get(c, "feature")), "capture_windows"))
            return json_is_true(json_object_get(c, "requested"));
    }
    return false;
}

/* The process's windows into t (the trigger's string moves). */
static void take_capture(fl_run *t, sess *s)
{
    if (s->cap.windows == 0 && !asked_windows(s->caps))
        return;
    if (fl_grow((void **)&t->captures, &t->cap_captures, t->n_captures + 1, sizeof *t->captures) <
        0) {
        t->oom = 1;
        return;
    }
    fl_run_capture *c = &t->captures[t->n_captures++];
    *c = s->cap;
    c->pid = s->pid;
    c->rank = s->rank;
    c->trigger = s->cap.trigger ? s->cap.trigger : dup_or_oom(t, "");
    s->cap.trigger = NULL;
}

static void merge_session(fl_run *t, sess *s, const fl_read_result *res)
{
    t->processes++;
    t->kernel_launches += s->launches;
    t->kernel_ns = sat_add(t->kernel_ns, s->kernel_ns);
    for (int k = 0; k < FL_RUN_COPY_KINDS; k++)
        add_ops(&t->copies[k], s->copies[k].count, s->copies[k].bytes, s->copies[k].time_ns);
    add_ops(&t->memsets, s->memsets.count, s->memsets.bytes, s->memsets.time_ns);
    add_ops(&t->syncs, s->syncs.count, 0, s->syncs.time_ns);
    t->bad_lines += res->bad_lines;
    t->bad_rows += res->bad_records + s->bad;
    t->dropped += res->other_session;
    for (size_t i = 0; i < s->kernels.cap; i++) {
        const kent *e = &s->kernels.e[i];
        if (!e->used || e->calls == 0)
            continue;
        if (e->name) {
            add_kernel(t, e->name, e->calls, e->total_ns);
        } else {
            char name[64];
            snprintf(name, sizeof name, "(kernel id %llu, not in kernel_dict)",
                     (unsigned long long)e->id);
            add_kernel(t, name, e->calls, e->total_ns);
        }
    }
    merge_ops(t, s);
    if (s->lines && fl_run_lines_each(s->lines, add_line, t) < 0)
        t->oom = 1;
    if (s->caps)
        take_caps(t, s->caps);
    take_capture(t, s);
    t->pc_samples = sat_add(t->pc_samples, s->pc_samples);
    t->sass_rows = sat_add(t->sass_rows, s->sass_rows);
    for (int k = 0; k < 6; k++)
        t->sass_v[k] = sat_add(t->sass_v[k], s->sass_v[k]);
    t->sass_have |= s->sass_have;
    t->perf_ranges = sat_add(t->perf_ranges, s->perf_ranges);
    for (size_t i = 0; i < s->n_stalls; i++)
        if (add_stall(&t->stalls, &t->n_stalls, &t->cap_stalls, s->stalls[i].name,
                      s->stalls[i].samples) < 0)
            t->oom = 1;
}

/* Whether the reader read dir itself (not a session it found below it, nor
 * a flat layout there). */
static int read_dir_itself(const fl_read_result *res, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return !res->flat && strlen(res->session_dir) == n && memcmp(res->session_dir, dir, n) == 0;
}

gp_status fl_run_add_session(fl_run *t, const char *session_dir, gp_error *err)
{
    sess s;
    memset(&s, 0, sizeof s);
    s.t = t;
    s.pid = s.rank = -1;
    fl_read_cb cb = {.user = &s, .record = on_record, .batch = on_batch};
    if (t->want_lines) {
        s.lines = fl_run_lines_new();
        t->oom |= !s.lines;
        if (s.lines)
            cb.detail = on_detail;
    }
    fl_read_opts opts;
    fl_read_opts_init(&opts);  /* no session_id: the directory's own */
    opts.dedupe_common = true; /* the records written to every channel, once */
    /* The command takes its signals through its signalfd: the ^C that
     * ended CMD, still pending, must not cost its summary. */
    opts.stop_on_signal = false;
    fl_read_result res;
    gp_status st = fl_read_session(session_dir, &opts, &cb, &res, err);
    if (st == GP_OK && !read_dir_itself(&res, session_dir))
        st = gp_error_set(err, GP_ERR_INVALID_ARG,
                          "%s: not a session directory (no channel file directly in it); "
                          "give the <log_path>/<session_id>/ directory itself",
                          session_dir);
    if (st == GP_OK)
        merge_session(t, &s, &res);
    kmap_free(&s.kernels);
    kmap_free(&s.metrics);
    kmap_free(&s.ops);
    kmap_free(&s.op_dict);
    fl_run_lines_free(s.lines);
    for (size_t i = 0; i < s.n_stalls; i++)
        free(s.stalls[i].name);
    free(s.stalls);
    free(s.cap.trigger);
    json_decref(s.caps);
    return st;
}

gp_status fl_run_read(fl_run *t, const char *const *dirs, size_t n, gp_error *err)
{
    gp_status first = GP_OK;
    for (size_t i = 0; i < n; i++) {
        gp_error e;
        gp_error_clear(&e);
        gp_status st = fl_run_add_session(t, dirs[i], &e);
        if (st != GP_OK && first == GP_OK) {
            first = st;
            gp_error_set(err, st, "%s", e.message);
        }
    }
    fl_run_finish(t);
    return first;
}

/* -------------------------------------------------------------- finish */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const fl_run_kernel *)a)->name, ((const fl_run_kernel *)b)->name);
}

static int by_time(const void *a, const void *b)
{
    const fl_run_kernel *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_samples(const void *a, const void *b)
{
    const fl_run_stall *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Entries of one name merged, then by total_ns descending. */
static void merge_by_name(fl_run_kernel *v, size_t *n)
{
    if (*n == 0)
        return;
    qsort(v, *n, sizeof *v, by_name);
    size_t w = 0;
    for (size_t i = 0; i < *n; i++) {
        if (w > 0 && strcmp(v[w - 1].name, v[i].name) == 0) {
            v[w - 1].calls += v[i].calls;
            v[w - 1].total_ns = sat_add(v[w - 1].total_ns, v[i].total_ns);
            free(v[i].name);
        } else {
            v[w++] = v[i];
        }
    }
    *n = w;
    qsort(v, *n, sizeof *v, by_time);
}

void fl_run_finish(fl_run *t)
{
    if (t->n_stalls)
        qsort(t->stalls, t->n_stalls, sizeof *t->stalls, by_samples);
    merge_by_name(t->kernels, &t->n_kernels);
    merge_by_name(t->ops, &t->n_ops);
    merge_by_name(t->lines, &t->n_lines);
}