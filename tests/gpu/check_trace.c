/*
 * check_trace.c - checks a Trace session against what the program that was
 * traced knows it did (tests/gpu/run.sh).
 *
 *   check_trace --expect FILE (--session DIR | --log-dir DIR)
 *   check_trace --any-name SUB[,SUB...] (--session DIR | --log-dir DIR)
 *
 * --session names a session directory; --log-dir a directory of sessions,
 * of which the one with the most kernel rows is checked (the gpu-profile
 * command's own Monitor session, which has none, sits next to its child's).
 * Channels are read as <channel>.<N>.log.gz windows (through gzip -dc) then
 * <channel>.log; every line must be JSON.
 *
 * With --expect (the JSON trace_workload.cu writes), it checks:
 *   - capture_capabilities' selected_engine is "nvidia.trace";
 *   - the kernel names (kernel_dict, demangled as nsys shows them) are the
 *     expected ones, and the launches per name are the expected count;
 *   - grid and block per name, from kernel_detail (has_details = 1: the
 *     detail with the row's corr_id, paired in file order; has_details = 0:
 *     the nearest earlier row of the same kernel_id with has_details = 1);
 *   - the sum of the kernel rows' duration_ns is within 5 % of the
 *     program's cudaEvent total;
 *   - every kernel row lies inside the session (job_start ts_ns ..
 *     shutdown ts_ns) and inside the program's own wall-clock window (2 ms
 *     of slack for the GPU-to-wall clock mapping);
 *   - memcpy rows: count and bytes per direction (HtoD, DtoH, DtoD), and no
 *     other direction; memset_event: count, bytes, value;
 *   - synchronization rows: at least the stream and context
 *     synchronizations the program made;
 *   - with graph tracking: one graph_node_definition per node of the
 *     graph (kernel nodes named as the kernel, under the launches'
 *     graph_exec_key), and exactly one graph launch per cudaGraphLaunch
 *     (a graph_launch_event, as the recorder writes them, or a row of an
 *     older session's graph_event_batch), their durations within 5 % of
 *     the events' total; without it, none.  With graph tracking CUPTI may report a graph as
 *     one graph record without its nodes' kernel records: then the kernel
 *     counts and time are those of the direct launches alone (either form
 *     is accepted, and which one was seen is printed).
 *
 * With --any-name (any program, e.g. PyTorch): the engine, at least one
 * kernel row, the rows inside the session, and some kernel name containing
 * one of the substrings (case-insensitive).  The most launched names are
 * printed.
 *
 * Every check prints a PASS or FAIL line, then a final PASS or FAIL; exit
 * status 0 only if all passed (2: bad usage or unreadable input).
 */
#include "fl_log.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#define TIME_TOLERANCE 0.05
#define WINDOW_SLACK_NS 2000000LL

/* ------------------------------------------------------------ checks */

static int n_pass, n_fail;

static bool report(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool report(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  %s  ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        n_pass++;
    else
        n_fail++;
    return ok;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  ....  ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* ----------------------------------------------------------- session */

static const char *const channels[] = {"device", "scope", "system"};
#define N_CHANNELS 3

typedef struct session {
    char dir[4096];
    fl_log ch[N_CHANNELS];
    size_t kernel_rows;
} session;

/* Appends text's lines to log (each must be JSON). */
static void add_lines(fl_log *log, char *text, const char *what)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t e;
        json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &e);
        if (!j) {
            log->bad++;
            fprintf(stderr, "not JSON in %s: %.200s (%s)\n", what, line, e.text);
            continue;
        }
        json_t **p = realloc(log->lines, (log->n + 1) * sizeof *p);
        if (!p) {
            json_decref(j);
            log->bad++;
            return;
        }
        log->lines = p;
        log->lines[log->n++] = j;
    }
}

static char *read_gz(const char *path)
{
    char cmd[4400];
    if (strchr(path, '\'') || strlen(path) > 4096)
        return NULL;
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (pclose(p) != 0) {
        free(buf);
        return NULL;
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

static void session_load(session *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    for (int c = 0; c < N_CHANNELS; c++) {
        char path[4200];
        for (int w = 1; w < 100000; w++) {
            snprintf(path, sizeof path, "%s/%s.%d.log.gz", dir, channels[c], w);
            if (access(path, R_OK) != 0)
                break;
            char *text = read_gz(path);
            if (!text) {
                fprintf(stderr, "cannot read %s\n", path);
                s->ch[c].bad++;
                continue;
            }
            add_lines(&s->ch[c], text, path);
            free(text);
        }
        snprintf(path, sizeof path, "%s/%s.log", dir, channels[c]);
        char *text = check_read_file(path, NULL);
        if (text) {
            add_lines(&s->ch[c], text, path);
            free(text);
        }
    }
    for (int c = 0; c < N_CHANNELS; c++)
        for (size_t i = 0; i < s->ch[c].n; i++)
            if (strcmp(log_type(s->ch[c].lines[i]), "kernel_event_batch") == 0)
                s->kernel_rows += json_array_size(json_object_get(s->ch[c].lines[i], "rows"));
}

static void session_free(session *s)
{
    for (int c = 0; c < N_CHANNELS; c++)
        fl_log_free(&s->ch[c]);
}

/* Calls fn on every record of type (all channels, device first, file order). */
#define FOR_EACH_RECORD(s, type, rec)                                                              \
    for (int c_ = 0; c_ < N_CHANNELS; c_++)                                                        \
        for (size_t i_ = 0; i_ < (s)->ch[c_].n; i_++)                                              \
            if (strcmp(log_type((rec) = (s)->ch[c_].lines[i_]), (type)) == 0)

/* The first (last) record of type, the device channel first. */
static json_t *first_record(const session *s, const char *type, bool last)
{
    json_t *found = NULL, *rec;
    FOR_EACH_RECORD(s, type, rec)
    {
        if (!last)
            return rec;
        found = rec;
    }
    return found;
}

static long long num(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    return (long long)json_number_value(v);
}

static long long cell(const json_t *row, int col)
{
    return col < 0 ? 0 : num(json_array_get(row, (size_t)col));
}

/* ------------------------------------------------------------ kernels */

typedef struct krow {
    long long t, dur, corr;
    long kernel_id;
    int has_details;
    const char *name;  /* NULL: not in kernel_dict */
    const char *grid;  /* NULL: no detail found */
    const char *block; /* NULL: no detail found */
    const char *scope; /* the detail's user_scope; NULL: none or null */
} krow;

typedef struct kdetail {
    long long corr;
    const char *grid, *block, *scope;
    bool used;
} kdetail;

typedef struct kernels {
    krow *rows;
    size_t n;
    json_t *dict; /* merged kernel_dict */
} kernels;

static void kernels_load(const session *s, kernels *k)
{
    memset(k, 0, sizeof *k);
    k->dict = json_object();
    json_t *rec;
    FOR_EACH_RECORD(s, "dictionary_update", rec)
    {
        json_t *d = json_object_get(rec, "kernel_dict");
        if (json_is_object(d))
            json_object_update(k->dict, d);
    }
    kdetail *det = NULL;
    size_t n_det = 0;
    FOR_EACH_RECORD(s, "kernel_detail", rec)
    {
        kdetail *p = realloc(det, (n_det + 1) * sizeof *p);
        if (!p)
            break;
        det = p;
        det[n_det].corr = num(json_object_get(rec, "corr_id"));
        det[n_det].grid = json_string_value(json_object_get(rec, "grid"));
        det[n_det].block = json_string_value(json_object_get(rec, "block"));
        det[n_det].scope = json_string_value(json_object_get(rec, "user_scope"));
        det[n_det].used = false;
        n_det++;
    }
    FOR_EACH_RECORD(s, "kernel_event_batch", rec)
    {
        long long base = num(json_object_get(rec, "base_time_ns"));
        int c_dt = fl_col(rec, "dt_ns"), c_id = fl_col(rec, "kernel_id");
        int c_dur = fl_col(rec, "duration_ns"), c_corr = fl_col(rec, "corr_id");
        int c_det = fl_col(rec, "has_details");
        json_t *rows = json_object_get(rec, "rows");
        krow *p = realloc(k->rows, (k->n + json_array_size(rows)) * sizeof *p);
        if (!p)
            break;
        k->rows = p;
        size_t j;
        json_t *row;
        json_array_foreach(rows, j, row)
        {
            krow *r = &k->rows[k->n++];
            memset(r, 0, sizeof *r);
            r->t = base + cell(row, c_dt);
            r->dur = cell(row, c_dur);
            r->corr = cell(row, c_corr);
            r->kernel_id = (long)cell(row, c_id);
            r->has_details = (int)cell(row, c_det);
            char key[32];
            snprintf(key, sizeof key, "%ld", r->kernel_id);
            r->name = json_string_value(json_object_get(k->dict, key));
        }
    }
    /* has_details = 1: the k-th such row of a corr_id takes the k-th
     * kernel_detail of that corr_id (graph nodes share their launch's),
     * or, when there are fewer details, the last of them. */
    for (size_t i = 0; i < k->n; i++) {
        krow *r = &k->rows[i];
        if (r->has_details != 1)
            continue;
        const kdetail *shared = NULL;
        for (size_t d = 0; d < n_det; d++) {
            if (det[d].corr != r->corr)
                continue;
            if (!det[d].used) {
                det[d].used = true;
                shared = NULL;
                r->grid = det[d].grid;
                r->block = det[d].block;
                r->scope = det[d].scope;
                break;
            }
            shared = &det[d];
        }
        /* All taken: the spec only says a detail with the corr_id exists. */
        if (shared) {
            r->grid = shared->grid;
            r->block = shared->block;
            r->scope = shared->scope;
        }
    }
    /* has_details = 0: as the nearest earlier row of its kernel with details. */
    for (size_t i = 0; i < k->n; i++) {
        krow *r = &k->rows[i];
        if (r->has_details == 1)
            continue;
        for (size_t j = i; j-- > 0;) {
            if (k->rows[j].kernel_id == r->kernel_id && k->rows[j].has_details == 1) {
                r->grid = k->rows[j].grid;
                r->block = k->rows[j].block;
                r->scope = k->rows[j].scope;
                break;
            }
        }
    }
    free(det);
}

static void kernels_free(kernels *k)
{
    free(k->rows);
    json_decref(k->dict);
    memset(k, 0, sizeof *k);
}

typedef struct name_stat {
    const char *name;
    size_t count;
    long long dur;
} name_stat;

static int by_count(const void *a, const void *b)
{
    const name_stat *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return x->dur < y->dur ? 1 : x->dur > y->dur ? -1 : 0;
}

/* Launches and time per name (name NULL: "(unknown kernel_id)"), most
 * launched first; *n_out entries. */
static name_stat *name_stats(const kernels *k, size_t *n_out)
{
    name_stat *st = calloc(k->n + 1, sizeof *st);
    size_t n = 0;
    for (size_t i = 0; st && i < k->n; i++) {
        const char *nm = k->rows[i].name ? k->rows[i].name : "(unknown kernel_id)";
        size_t j = 0;
        while (j < n && strcmp(st[j].name, nm) != 0)
            j++;
        if (j == n)
            st[n++].name = nm;
        st[j].count++;
        st[j].dur += k->rows[i].dur;
    }
    if (st)
        qsort(st, n, sizeof *st, by_count);
    *n_out = st ? n : 0;
    return st;
}

static void print_names(const kernels *k, size_t top)
{
    size_t n;
    name_stat *st = name_stats(k, &n);
    for (size_t i = 0; i < n && i < top; i++)
        note("%6zu x %10.3f ms  %s", st[i].count, st[i].dur / 1e6, st[i].name);
    if (n > top)
        note("... and %zu more kernel names", n - top);
    free(st);
}

/* --------------------------------------------------------- common checks */

static bool within(long long got, long long want, double tol)
{
    long long d = got > want ? got - want : want - got;
    return want > 0 && (double)d <= tol * (double)want;
}

static void check_parse(const session *s)
{
    size_t bad = 0, lines = 0;
    for (int c = 0; c < N_CHANNELS; c++) {
        bad += s->ch[c].bad;
        lines += s->ch[c].n;
    }
    report(bad == 0 && lines > 0, "session logs read: %zu JSON lines, %zu bad", lines, bad);
}

static void check_engine(const session *s)
{
    json_t *cc = first_record(s, "capture_capabilities", true);
    const char *sel = cc ? json_string_value(json_object_get(cc, "selected_engine")) : NULL;
    const char *req = cc ? json_string_value(json_object_get(cc, "requested_engine")) : NULL;
    bool ok = sel && strcmp(sel, "nvidia.trace") == 0;
    report(ok,
           "capture_capabilities selected_engine = \"%s\" (requested \"%s\"), want nvidia.trace",
           sel ? sel : "(none)", req ? req : "(none)");
    if (!ok && cc) {
        size_t i;
        json_t *cap;
        json_array_foreach(json_object_get(cc, "capabilities"), i, cap)
        {
            const char *status = json_string_value(json_object_get(cap, "status"));
            if (status && strcmp(status, "collected") != 0 && strcmp(status, "not_requested") != 0)
                note("capability %s: %s %s: %s", json_string_value(json_object_get(cap, "feature")),
                     status, json_string_value(json_object_get(cap, "reason_code")),
                     json_string_value(json_object_get(cap, "message")));
        }
    }
}

/* Every kernel row inside [lo, hi]; returns the number outside. */
static size_t rows_outside(const kernels *k, long long lo, long long hi, long long *worst)
{
    size_t out = 0;
    *worst = 0;
    for (size_t i = 0; i < k->n; i++) {
        long long b = k->rows[i].t, e = k->rows[i].t + k->rows[i].dur;
        long long off = b < lo ? lo - b : e > hi ? e - hi : 0;
        if (off) {
            out++;
            if (off > *worst)
                *worst = off;
        }
    }
    return out;
}

static void check_session_window(const session *s, const kernels *k)
{
    json_t *js = first_record(s, "job_start", false);
    json_t *sd = first_record(s, "shutdown", true);
    report(js != NULL, "job_start present");
    report(sd != NULL, "shutdown present (the traced process finished its session)");
    if (!js || !sd)
        return;
    long long lo = num(json_object_get(js, "ts_ns")), hi = num(json_object_get(sd, "ts_ns"));
    long long worst;
    size_t out = rows_outside(k, lo, hi, &worst);
    report(out == 0 && k->n > 0,
           "every kernel row inside the session (job_start .. shutdown, %.3f s): %zu of %zu "
           "outside, worst by %.3f ms",
           (hi - lo) / 1e9, out, k->n, worst / 1e6);
}

static void check_durations_positive(const kernels *k)
{
    size_t zero = 0;
    for (size_t i = 0; i < k->n; i++)
        if (k->rows[i].dur <= 0)
            zero++;
    report(zero == 0, "every kernel row has duration_ns > 0 (%zu do not)", zero);
}

/* ------------------------------------------------------- expect mode */

static const char *dir_name(int kind)
{
    switch (kind) {
    case 1:
        return "htod";
    case 2:
        return "dtoh";
    case 8:
        return "dtod";
    case 10:
        return "ptop";
    default:
        return NULL;
    }
}

static void check_memcpy(const session *s, const json_t *exp)
{
    long long count[256] = {0}, bytes[256] = {0};
    json_t *rec;
    FOR_EACH_RECORD(s, "memcpy_event_batch", rec)
    {
        int c_bytes = fl_col(rec, "bytes"), c_kind = fl_col(rec, "copy_kind");
        size_t j;
        json_t *row;
        json_array_foreach(json_object_get(rec, "rows"), j, row)
        {
            long long kind = cell(row, c_kind);
            if (kind < 0 || kind > 255)
                kind = 255;
            count[kind]++;
            bytes[kind] += cell(row, c_bytes);
        }
    }
    json_t *want = json_object_get(exp, "memcpy");
    for (int kind = 0; kind < 256; kind++) {
        const char *dn = dir_name(kind);
        json_t *w = dn ? json_object_get(want, dn) : NULL;
        long long wc = w ? num(json_object_get(w, "count")) : 0;
        long long wb = w ? num(json_object_get(w, "bytes")) : 0;
        if (!w && count[kind] == 0)
            continue;
        char label[32];
        snprintf(label, sizeof label, "%s", dn ? dn : "");
        if (!dn)
            snprintf(label, sizeof label, "copy_kind %d", kind);
        report(count[kind] == wc && bytes[kind] == wb,
               "memcpy %s: %lld copies, %lld bytes (want %lld, %lld)", label, count[kind],
               bytes[kind], wc, wb);
    }
}

static void check_memset(const session *s, const json_t *exp)
{
    long long count = 0, bytes = 0, bad_value = 0;
    json_t *want = json_object_get(exp, "memset");
    long long wv = num(json_object_get(want, "value"));
    json_t *rec;
    FOR_EACH_RECORD(s, "memset_event", rec)
    {
        count++;
        bytes += num(json_object_get(rec, "bytes"));
        if (num(json_object_get(rec, "value")) != wv)
            bad_value++;
    }
    long long wc = num(json_object_get(want, "count")), wb = num(json_object_get(want, "bytes"));
    report(count == wc && bytes == wb && bad_value == 0,
           "memset_event: %lld records, %lld bytes, %lld with another value than %lld "
           "(want %lld, %lld)",
           count, bytes, bad_value, wv, wc, wb);
}

/* In-process runs track memory: the 6 device allocations and their frees,
 * each with the duration of its cudaMalloc / cudaFree call. */
static void check_allocs(const session *s, const json_t *exp)
{
    json_t *want = json_object_get(exp, "device_mallocs");
    if (!json_is_integer(want))
        return;
    long long allocs = 0, frees = 0, timed = 0, rows = 0;
    json_t *rec;
    FOR_EACH_RECORD(s, "memory_alloc_event_batch", rec)
    {
        int c_op = fl_col(rec, "memory_op"), c_kind = fl_col(rec, "memory_kind");
        int c_dur = fl_col(rec, "duration_ns");
        size_t j;
        json_t *row;
        json_array_foreach(json_object_get(rec, "rows"), j, row)
        {
            rows++;
            if (cell(row, c_kind) != 3) /* CUPTI_ACTIVITY_MEMORY_KIND_DEVICE */
                continue;
            long long op = cell(row, c_op);
            allocs += op == 1;
            frees += op == 2;
            timed += cell(row, c_dur) > 0;
        }
    }
    long long w = json_integer_value(want);
    note("memory rows: %lld (device: %lld allocations, %lld frees, %lld timed)", rows, allocs,
         frees, timed);
    report(allocs == w, "device allocations (memory_op 1): %lld, want %lld", allocs, w);
    report(frees == w, "device frees (memory_op 2): %lld, want %lld", frees, w);
    report(timed == allocs + frees, "every device allocation and free has its call's duration");
}

static void check_syncs(const session *s, const json_t *exp)
{
    long long by_type[6] = {0};
    json_t *rec;
    FOR_EACH_RECORD(s, "synchronization_event_batch", rec)
    {
        int c_type = fl_col(rec, "sync_type");
        size_t j;
        json_t *row;
        json_array_foreach(json_object_get(rec, "rows"), j, row)
        {
            long long t = cell(row, c_type);
            by_type[t >= 1 && t <= 4 ? t : 5]++;
        }
    }
    note("synchronization rows: %lld event, %lld stream-wait-event, %lld stream, %lld context, "
         "%lld other",
         by_type[1], by_type[2], by_type[3], by_type[4], by_type[5]);
    long long ws = num(json_object_get(exp, "stream_syncs"));
    long long wc = num(json_object_get(exp, "context_syncs"));
    report(by_type[3] >= ws, "stream synchronizations (sync_type 3): %lld, want >= %lld",
           by_type[3], ws);
    report(by_type[4] >= wc, "context synchronizations (sync_type 4): %lld, want >= %lld",
           by_type[4], wc);
}

/* graph_node_definition (graph tracking): one per node of the workload's
 * graph (three vecAdd launches captured from a stream), each a kernel
 * node named as the kernel, under the launches' graph_exec_key. */
static void check_graph_nodes(const session *s, const json_t *exp)
{
    long long want = num(json_object_get(exp, "graph_nodes_per_launch"));
    const char *vec = json_string_value(
        json_object_get(json_array_get(json_object_get(exp, "kernels"), 0), "name"));
    const char *key = NULL;
    json_t *rec;
    FOR_EACH_RECORD(s, "graph_launch_event", rec)
    {
        key = json_string_value(json_object_get(rec, "graph_exec_key"));
    }
    long long n = 0, kernels = 0, same_key = 0, named = 0;
    char deps[256] = "";
    size_t used = 0;
    FOR_EACH_RECORD(s, "graph_node_definition", rec)
    {
        n++;
        const char *k = json_string_value(json_object_get(rec, "graph_exec_key"));
        const char *kn = json_string_value(json_object_get(rec, "kernel_name"));
        same_key += key && k && strcmp(k, key) == 0;
        kernels += num(json_object_get(rec, "node_type")) == 0;
        named += kn && vec && strcmp(kn, vec) == 0;
        if (used < sizeof deps)
            used += (size_t)snprintf(deps + used, sizeof deps - used, "%s%lld:%lld",
                                     used ? ", " : "", num(json_object_get(rec, "node_index")),
                                     num(json_object_get(rec, "dependency_count")));
    }
    report(n == want, "graph_node_definition: %lld, want %lld (one per node)", n, want);
    report(kernels == want, "kernel nodes (node_type 0): %lld, want %lld", kernels, want);
    report(n > 0 && same_key == n, "nodes under the launches' graph_exec_key %s: %lld of %lld",
           key ? key : "(none)", same_key, n);
    report(named == want, "kernel nodes named %s (the captured launch's): %lld, want %lld",
           vec ? vec : "(none)", named, want);
    note("node_index:dependency_count %s (a chain captured from one stream: 0:0, 1:1, 2:1)", deps);
}

/* Graph launches (graph_launch_event records, or the rows of an older
 * session's graph_event_batch) and their total duration. */
static long long graph_rows(const session *s, long long *dur)
{
    long long n = 0;
    *dur = 0;
    json_t *rec;
    FOR_EACH_RECORD(s, "graph_launch_event", rec)
    {
        n++;
        *dur += num(json_object_get(rec, "duration_ns"));
    }
    FOR_EACH_RECORD(s, "graph_event_batch", rec)
    {
        int c_dur = fl_col(rec, "duration_ns");
        size_t j;
        json_t *row;
        json_array_foreach(json_object_get(rec, "rows"), j, row)
        {
            n++;
            *dur += cell(row, c_dur);
        }
    }
    return n;
}

/* In-process runs wrap the GEMM launches in a gpufl scope: every GEMM row's
 * user_scope is that scope, every other kernel's "global" (graph nodes
 * take their cudaGraphLaunch's, made outside any scope). */
static void check_user_scope(const session *s, const kernels *k, const json_t *exp)
{
    const char *want = json_string_value(json_object_get(exp, "gemm_scope"));
    const char *gemm = json_string_value(
        json_object_get(json_array_get(json_object_get(exp, "kernels"), 1), "name"));
    if (!want || !gemm)
        return;
    json_t *caps = first_record(s, "capture_capabilities", true);
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        const char *f = json_string_value(json_object_get(c, "feature"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (f && strcmp(f, "user_scope") == 0 && st && strcmp(st, "collected") != 0) {
            note("user_scope is %s (%s): not checked", st,
                 json_string_value(json_object_get(c, "message")));
            return;
        }
    }
    size_t bad = 0;
    for (size_t i = 0; i < k->n; i++) {
        const krow *r = &k->rows[i];
        if (!r->name)
            continue;
        const char *w = strcmp(r->name, gemm) == 0 ? want : "global";
        if (!r->scope || strcmp(r->scope, w) != 0) {
            if (bad++ < 3)
                note("corr %lld (%s): user_scope %s, want %s", r->corr, r->name,
                     r->scope ? r->scope : "null", w);
        }
    }
    report(bad == 0, "user_scope: GEMM launches in \"%s\", the others global (%zu rows not)", want,
           bad);
}

static int run_expect(const session *s, const json_t *exp)
{
    kernels k;
    kernels_load(s, &k);
    bool graphs = json_is_true(json_object_get(exp, "graphs_tracking"));
    printf("check_trace: %s (%zu kernel rows), graph tracking %s\n", s->dir, k.n,
           graphs ? "on" : "off");

    check_parse(s);
    check_engine(s);
    check_user_scope(s, &k, exp);
    report(k.n > 0, "kernel rows: %zu", k.n);
    print_names(&k, 10);

    json_t *kexp = json_object_get(exp, "kernels");
    size_t nk = json_array_size(kexp);

    /* Names: every row's kernel_id named in kernel_dict, by an expected name. */
    size_t unknown = 0, unexpected = 0;
    for (size_t i = 0; i < k.n; i++) {
        if (!k.rows[i].name) {
            unknown++;
            continue;
        }
        bool found = false;
        for (size_t e = 0; e < nk && !found; e++)
            found =
                strcmp(k.rows[i].name,
                       json_string_value(json_object_get(json_array_get(kexp, e), "name"))) == 0;
        if (!found) {
            if (unexpected++ < 5)
                note("unexpected kernel name \"%s\"", k.rows[i].name);
        }
    }
    report(unknown == 0, "every kernel row's kernel_id is in kernel_dict (%zu are not)", unknown);
    report(unexpected == 0, "every kernel name is an expected one (%zu rows are not)", unexpected);

    /* Counts per name: all launches, or (graph tracking) the direct ones only. */
    int mode = -1; /* 0: nodes traced as kernels, 1: graph-level only */
    for (int m = 0; m < (graphs ? 2 : 1) && mode < 0; m++) {
        bool all = true;
        for (size_t e = 0; e < nk; e++) {
            json_t *ke = json_array_get(kexp, e);
            const char *nm = json_string_value(json_object_get(ke, "name"));
            long long want = num(json_object_get(ke, m == 0 ? "count" : "direct"));
            long long got = 0;
            for (size_t i = 0; i < k.n; i++)
                got += k.rows[i].name && strcmp(k.rows[i].name, nm) == 0;
            all = all && got == want;
        }
        if (all)
            mode = m;
    }
    if (graphs)
        note("graph node kernels: %s", mode == 0 ? "traced as kernel rows as well"
                                       : mode == 1
                                           ? "not traced as kernel rows (graph-level records only)"
                                           : "counts match neither form");
    for (size_t e = 0; e < nk; e++) {
        json_t *ke = json_array_get(kexp, e);
        const char *nm = json_string_value(json_object_get(ke, "name"));
        const char *wg = json_string_value(json_object_get(ke, "grid"));
        const char *wb = json_string_value(json_object_get(ke, "block"));
        long long want = num(json_object_get(ke, mode == 1 ? "direct" : "count"));
        long long got = 0, dur = 0, no_detail = 0, wrong = 0;
        const char *bad_g = NULL, *bad_b = NULL;
        for (size_t i = 0; i < k.n; i++) {
            const krow *r = &k.rows[i];
            if (!r->name || strcmp(r->name, nm) != 0)
                continue;
            got++;
            dur += r->dur;
            if (!r->grid || !r->block) {
                no_detail++;
            } else if (strcmp(r->grid, wg) != 0 || strcmp(r->block, wb) != 0) {
                wrong++;
                bad_g = r->grid;
                bad_b = r->block;
            }
        }
        if (graphs && mode < 0)
            report(false,
                   "launches of %s: %lld, want %lld (all launches) or %lld (direct launches, "
                   "graph nodes not traced)",
                   nm, got, num(json_object_get(ke, "count")), num(json_object_get(ke, "direct")));
        else
            report(got == want, "launches of %s: %lld, want %lld", nm, got, want);
        report(got > 0 && no_detail == 0 && wrong == 0,
               "grid %s block %s for every launch of %s: %lld without a kernel_detail, %lld "
               "differ%s%s%s%s%s",
               wg, wb, nm, no_detail, wrong, bad_g ? " (e.g. grid " : "", bad_g ? bad_g : "",
               bad_g ? " block " : "", bad_b ? bad_b : "", bad_g ? ")" : "");
        note("%s: %.3f ms in kernel rows (direct launches by events: %.3f ms)", nm, dur / 1e6,
             num(json_object_get(ke, "direct_time_ns")) / 1e6);
    }

    /* Total time. */
    long long total = 0;
    for (size_t i = 0; i < k.n; i++)
        total += k.rows[i].dur;
    const char *tkey = mode == 1 ? "kernel_time_direct_ns" : "kernel_time_ns";
    long long want_t = num(json_object_get(exp, tkey));
    report(within(total, want_t, TIME_TOLERANCE),
           "total kernel duration_ns %.3f ms within 5%% of the cudaEvent total %.3f ms (%s, "
           "%+.2f%%)",
           total / 1e6, want_t / 1e6, mode == 1 ? "direct launches" : "all launches",
           want_t ? 100.0 * (double)(total - want_t) / (double)want_t : 0.0);

    check_durations_positive(&k);
    check_session_window(s, &k);
    long long lo = num(json_object_get(exp, "wall_start_ns"));
    long long hi = num(json_object_get(exp, "wall_end_ns"));
    long long worst;
    size_t out = rows_outside(&k, lo - WINDOW_SLACK_NS, hi + WINDOW_SLACK_NS, &worst);
    report(out == 0 && k.n > 0,
           "every kernel row inside the program's own wall-clock window (%.3f s, 2 ms slack): "
           "%zu of %zu outside, worst by %.3f ms",
           (hi - lo) / 1e9, out, k.n, worst / 1e6);

    check_memcpy(s, exp);
    check_memset(s, exp);
    check_syncs(s, exp);
    check_allocs(s, exp);

    long long gdur, gn = graph_rows(s, &gdur);
    if (graphs) {
        long long wn = num(json_object_get(exp, "graph_launches"));
        long long wt = num(json_object_get(exp, "graph_time_ns"));
        report(gn == wn, "graph launches (graph_launch_event): %lld, want %lld", gn, wn);
        report(within(gdur, wt, TIME_TOLERANCE),
               "graph durations %.3f ms within 5%% of the cudaEvent total %.3f ms", gdur / 1e6,
               wt / 1e6);
        check_graph_nodes(s, exp);
    } else {
        report(gn == 0, "no graph launches without graph tracking: %lld", gn);
    }
    kernels_free(&k);
    return 0;
}

/* ------------------------------------------------------ any-name mode */

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return true;
    }
    return n == 0;
}

static int run_any_name(const session *s, const char *subs)
{
    kernels k;
    kernels_load(s, &k);
    printf("check_trace: %s (%zu kernel rows)\n", s->dir, k.n);
    check_parse(s);
    check_engine(s);
    report(k.n > 0, "kernel rows: %zu", k.n);
    print_names(&k, 15);
    check_durations_positive(&k);
    check_session_window(s, &k);
    char list[1024];
    snprintf(list, sizeof list, "%s", subs);
    const char *hit = NULL;
    char *save = NULL;
    for (char *sub = strtok_r(list, ",", &save); sub && !hit; sub = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < k.n && !hit; i++)
            if (k.rows[i].name && contains_ci(k.rows[i].name, sub))
                hit = k.rows[i].name;
    report(hit != NULL, "some kernel name contains one of \"%s\"%s%s", subs, hit ? ": " : "",
           hit ? hit : "");
    kernels_free(&k);
    return 0;
}

/* ------------------------------------------------------------- main */

static int usage(void)
{
    fprintf(stderr, "usage: check_trace --expect FILE (--session DIR | --log-dir DIR)\n"
                    "       check_trace --any-name SUB[,SUB...] (--session DIR | --log-dir DIR)\n");
    return 2;
}

/* The session under base with the most kernel rows (ties: the one that
 * asked for the Trace engine, so a fall-back is reported); -1 if none. */
static int pick_session(const char *base, session *best)
{
    DIR *d = opendir(base);
    if (!d) {
        perror(base);
        return -1;
    }
    int found = 0;
    long best_score = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char dir[4096];
        int len = snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
        if (len < 0 || (size_t)len >= sizeof dir)
            continue;
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        session s;
        session_load(&s, dir);
        json_t *cc = first_record(&s, "capture_capabilities", true);
        const char *req = cc ? json_string_value(json_object_get(cc, "requested_engine")) : NULL;
        json_t *js = first_record(&s, "job_start", false);
        const char *app = js ? json_string_value(json_object_get(js, "app")) : NULL;
        bool trace = req && strcmp(req, "nvidia.trace") == 0;
        printf("check_trace: session %s: app %s, requested engine %s, %zu kernel rows\n", dir,
               app ? app : "?", req ? req : "?", s.kernel_rows);
        long score = (long)s.kernel_rows * 2 + (trace ? 1 : 0);
        found++;
        if (score > best_score) {
            if (best_score >= 0)
                session_free(best);
            *best = s;
            best_score = score;
        } else {
            session_free(&s);
        }
    }
    closedir(d);
    if (!found)
        fprintf(stderr, "check_trace: no session directory under %s\n", base);
    return found ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *expect = NULL, *dir = NULL, *log_dir = NULL, *any = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--expect") == 0)
            expect = argv[++i];
        else if (strcmp(argv[i], "--session") == 0)
            dir = argv[++i];
        else if (strcmp(argv[i], "--log-dir") == 0)
            log_dir = argv[++i];
        else if (strcmp(argv[i], "--any-name") == 0)
            any = argv[++i];
        else
            return usage();
    }
    if (!!expect == !!any || !!dir == !!log_dir)
        return usage();

    json_t *exp = NULL;
    if (expect) {
        json_error_t je;
        exp = json_load_file(expect, 0, &je);
        if (!json_is_object(exp)) {
            fprintf(stderr, "check_trace: %s: %s (line %d)\n", expect, je.text, je.line);
            return 2;
        }
    }
    session s;
    if (dir) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "check_trace: %s is not a directory\n", dir);
            json_decref(exp);
            return 2;
        }
        session_load(&s, dir);
    } else if (pick_session(log_dir, &s) != 0) {
        json_decref(exp);
        return 2;
    }

    if (exp)
        run_expect(&s, exp);
    else
        run_any_name(&s, any);
    session_free(&s);
    json_decref(exp);

    if (n_fail)
        printf("check_trace: FAIL (%d of %d checks failed)\n", n_fail, n_pass + n_fail);
    else
        printf("check_trace: PASS (%d checks)\n", n_pass);
    return n_fail ? 1 : 0;
}
