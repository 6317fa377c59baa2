/*
 * report/report.c - the session report: a GPUFlight session, streamed through
 * reader/read.h's callbacks, summed up in the sections of the gpufl analyzer's
 * report (print_summary, inspect_scopes, inspect_hotspots, inspect_stalls,
 * inspect_perf_metrics, TextReport), rendered as text or JSON.
 *
 * Promises:
 *  - memory grows with the distinct kernels, scope names, devices, metrics
 *    and launch configurations, never with the number of events: a kernel
 *    or scope keeps counters and a log-linear histogram of its durations
 *    (below), a scope instance is remembered only while it is open, and a
 *    kernel batch is held (one batch) only while its details are awaited;
 *  - min, max, mean and totals are exact; percentiles are estimates within
 *    1.6 % (the histogram's resolution), and say so in the JSON;
 *  - a value that was not recorded is "n/a" in the text and null in the
 *    JSON, never 0;
 *  - GPU busy % merges kernel intervals per device as rows come (one
 *    current interval per device): exact when the rows of a device come in
 *    time order (the recorder sorts each batch); a row that starts before
 *    the current interval is counted for its own length, which can count
 *    an overlap twice - the figure is then capped at 100 %;
 *  - nothing is printed; out of memory is recorded and said in the output.
 *
 * The model (fl_model, shared with report/export.c) keeps what the sections and
 * the exports need besides the events: job_start, the dictionaries, the
 * last capture_capabilities, the time span, and the join of kernel rows
 * with their kernel_detail by the has_details rule (docs/gpufl.md).
 */
#include "report.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "gpufl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVTX_BIT (1ull << 62)    /* scope_instance_id of an NVTX range */
#define PENDING_MAX 65536u       /* kernel_details waiting for their row */
#define MAX_WARNINGS_KEPT 5      /* reader warnings quoted in the report */
#define DEVICE_UNKNOWN INT64_MIN /* device key of rows that do not say */

/* ================================================================ maps */

/* Linear probing with backward-shift deletion. */

static size_t map_slot(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

fl_mval *fl_map_find(const fl_u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return NULL;
        if (m->keys[i] == key)
            return &m->vals[i];
    }
}

static int map_grow(fl_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    uint64_t *keys = malloc(cap * sizeof *keys);
    fl_mval *vals = malloc(cap * sizeof *vals);
    uint8_t *used = calloc(cap, 1);
    if (!keys || !vals || !used) {
        free(keys);
        free(vals);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t k = map_slot(m->keys[i], cap);
        while (used[k])
            k = (k + 1) & (cap - 1);
        used[k] = 1;
        keys[k] = m->keys[i];
        vals[k] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return 0;
}

/* The value of key, inserted zeroed (*fresh = true) if absent; NULL when
 * out of memory. */
fl_mval *fl_map_put(fl_u64map *m, uint64_t key, bool *fresh)
{
    fl_mval *v = fl_map_find(m, key);
    if (fresh)
        *fresh = v == NULL;
    if (v)
        return v;
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) != 0)
        return NULL;
    size_t i = map_slot(key, m->cap);
    while (m->used[i])
        i = (i + 1) & (m->cap - 1);
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = (fl_mval){0, 0};
    m->n++;
    return &m->vals[i];
}

void fl_map_del(fl_u64map *m, uint64_t key)
{
    if (!m->cap)
        return;
    size_t i = map_slot(key, m->cap);
    while (m->used[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i])
        return;
    m->used[i] = 0;
    m->n--;
    /* Backward shift: move up every later entry of the run that may sit
     * before its home slot. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->used[j])
            return;
        size_t home = map_slot(m->keys[j], m->cap);
        /* j's entry may move to i when home is not in (i, j] (cyclically). */
        bool in = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
}

void fl_map_clear(fl_u64map *m)
{
    if (m->cap)
        memset(m->used, 0, m->cap);
    m->n = 0;
}

void fl_map_free(fl_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

size_t fl_map_bytes(const fl_u64map *m)
{
    return m->cap * (sizeof(uint64_t) + sizeof(fl_mval) + 1);
}

/* ========================================================= interning */

/* Strings kept once for the life of the model; stable pointers. */
typedef struct strpool {
    char **slots;
    size_t cap, n, bytes;
} strpool;

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static const char *pool_intern(strpool *p, const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s);
    if ((p->n + 1) * 2 > p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        char **slots = calloc(cap, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < p->cap; i++) {
            if (!p->slots[i])
                continue;
            size_t k = (size_t)str_hash(p->slots[i], strlen(p->slots[i])) & (cap - 1);
            while (slots[k])
                k = (k + 1) & (cap - 1);
            slots[k] = p->slots[i];
        }
        free(p->slots);
        p->slots = slots;
        p->cap = cap;
    }
    size_t k = (size_t)str_hash(s, len) & (p->cap - 1);
    while (p->slots[k]) {
        if (strcmp(p->slots[k], s) == 0)
            return p->slots[k];
        k = (k + 1) & (p->cap - 1);
    }
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len + 1);
    p->slots[k] = d;
    p->n++;
    p->bytes += len + 1;
    return d;
}

static void pool_free(strpool *p)
{
    for (size_t i = 0; i < p->cap; i++)
        free(p->slots[i]);
    free(p->slots);
    memset(p, 0, sizeof *p);
}

static size_t pool_bytes(const strpool *p)
{
    return p->cap * sizeof(char *) + p->bytes;
}

/* ========================================================= histograms */

/*
 * Durations in ns, log-linear: values below 32 exactly, each power of two
 * above in 32 equal sub-buckets.  A bucket [lo, lo + w) has w <= lo / 32,
 * and a percentile is given as the bucket's middle, so it is within
 * w / 2 / lo <= 1/64 = 1.5625 % of the true nearest-rank value (and then
 * clamped into [min, max]).  The range of octaves reached is allocated,
 * in one array grown as needed: 256 bytes an octave, a few per kernel
 * (durations seldom span more than 2^10).
 */
#define HIST_SUB 32
#define HIST_OCT 60 /* octave 0: 0..31; octave o >= 1: [2^(o+4), 2^(o+5)) */
#define PCT_ERROR 1.6

typedef struct hist {
    /* The counters of octaves lo .. lo + n - 1, HIST_SUB each, in one
     * array (one load from the owner to the counter); grown to take in an
     * octave outside. */
    uint64_t *c;
    uint8_t lo, n;
} hist;

static bool hist_grow(hist *h, size_t o)
{
    size_t lo = h->n && h->lo < o ? h->lo : o;
    size_t hi = h->n && (size_t)h->lo + h->n - 1 > o ? (size_t)h->lo + h->n - 1 : o;
    uint64_t *c = calloc((hi - lo + 1) * HIST_SUB, sizeof *c);
    if (!c)
        return false;
    if (h->n)
        memcpy(c + (h->lo - lo) * HIST_SUB, h->c, (size_t)h->n * HIST_SUB * sizeof *c);
    free(h->c);
    h->c = c;
    h->lo = (uint8_t)lo;
    h->n = (uint8_t)(hi - lo + 1);
    return true;
}

static __attribute__((noinline)) bool hist_add_grow(hist *h, size_t o, size_t sub)
{
    if (!hist_grow(h, o))
        return false;
    h->c[(o - h->lo) * HIST_SUB + sub]++;
    return true;
}

static inline __attribute__((always_inline)) bool hist_add(hist *h, uint64_t v)
{
    /* v < 32: octave 0, sub-bucket v; else octave e - 4, the 5 bits
     * below the top one (e = floor(log2 v)), without a branch. */
    int e = 63 - __builtin_clzll(v | HIST_SUB); /* 5..63 */
    size_t big = v >= HIST_SUB;
    size_t o = big * ((size_t)e - 4);
    size_t sub = (size_t)(v >> (e - 5)) - HIST_SUB * big;
    size_t i = o - h->lo; /* wraps when o < lo */
    if (__builtin_expect(i >= h->n, 0))
        return hist_add_grow(h, o, sub);
    h->c[i * HIST_SUB + sub]++;
    return true;
}

static void hist_free(hist *h)
{
    free(h->c);
    memset(h, 0, sizeof *h);
}

static size_t hist_bytes(const hist *h)
{
    return (size_t)h->n * HIST_SUB * sizeof(uint64_t);
}

/* The nearest-rank p-th percentile (0 < p <= 100) of n values, estimated;
 * clamped into [lo, hi]. */
static uint64_t hist_pct(const hist *h, uint64_t n, double p, uint64_t lo, uint64_t hi)
{
    if (n == 0)
        return 0;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)n);
    if (rank <= 1)
        return lo; /* the smallest and the largest are known exactly */
    if (rank >= n)
        return hi;
    uint64_t seen = 0;
    for (size_t o = h->lo; o < (size_t)h->lo + h->n; o++) {
        for (size_t s = 0; s < HIST_SUB; s++) {
            seen += h->c[(o - h->lo) * HIST_SUB + s];
            if (seen < rank)
                continue;
            uint64_t v;
            if (o == 0) {
                v = s;
            } else {
                int shift = (int)o - 1; /* width 2^(o-1) */
                uint64_t b = ((uint64_t)(HIST_SUB + s)) << shift;
                v = b + (shift ? (1ull << shift) / 2 : 0);
            }
            return v < lo ? lo : v > hi ? hi : v;
        }
    }
    return hi;
}

/* ==================================================== batch helpers */

bool fl_rcell_u64_slow(const fl_batch *b, size_t row, int col, uint64_t *out)
{
    if (col < 0 || (size_t)col >= b->ncols || row >= b->nrows)
        return false;
    const fl_cell *c = &b->cells[row * b->ncols + (size_t)col];
    switch (c->kind) {
    case FL_CELL_INT:
        if (c->i < 0)
            return false;
        *out = (uint64_t)c->i;
        return true;
    case FL_CELL_UINT:
        *out = c->u;
        return true;
    case FL_CELL_REAL:
        if (!(c->d >= 0.0 && c->d < 18446744073709551616.0) || c->d != floor(c->d))
            return false;
        *out = (uint64_t)c->d;
        return true;
    default:
        return false;
    }
}

bool fl_rcell_real(const fl_batch *b, size_t row, int col, double *out)
{
    if (col < 0 || (size_t)col >= b->ncols || row >= b->nrows)
        return false;
    const fl_cell *c = &b->cells[row * b->ncols + (size_t)col];
    switch (c->kind) {
    case FL_CELL_INT:
        *out = (double)c->i;
        return true;
    case FL_CELL_UINT:
        *out = (double)c->u;
        return true;
    case FL_CELL_REAL:
        if (!isfinite(c->d))
            return false;
        *out = c->d;
        return true;
    default:
        return false;
    }
}

const char *fl_copy_kind_name(uint64_t kind)
{
    switch (kind) {
    case 1:
        return "HtoD";
    case 2:
        return "DtoH";
    case 8:
        return "DtoD";
    case 10:
        return "PtoP";
    default:
        return NULL;
    }
}

/* ======================================================== JSON values */

static bool jget_u64(const json_t *obj, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0)
            return false;
        *out = (uint64_t)i;
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 0.0 && d < 18446744073709551616.0))
            return false;
        *out = (uint64_t)d;
        return true;
    }
    return false;
}

static bool jget_i64(const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    return false;
}

static bool jget_real(const json_t *obj, const char *key, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out);
}

static const char *jget_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* "(x,y,z)" -> v; false if it is not that. */
static bool parse_dim3(const char *s, uint32_t v[3])
{
    if (!s)
        return false;
    unsigned long a[3];
    int end = 0;
    if (sscanf(s, " (%lu,%lu,%lu)%n", &a[0], &a[1], &a[2], &end) != 3 || s[end] != '\0')
        return false;
    for (int i = 0; i < 3; i++) {
        if (a[i] > UINT32_MAX)
            return false;
        v[i] = (uint32_t)a[i];
    }
    return true;
}

/* ============================================================== model */

enum { DICT_KERNEL, DICT_SCOPE, DICT_METRIC, DICT_FUNCTION, DICT_COUNT };

/* The columns of a kernel_event_batch (-1: absent). */
typedef struct kcols {
    int dt, kid, stream, dur, corr, dyn, regs, hd, ek, eid, dev;
} kcols;

static kcols kcols_of(const fl_batch *b)
{
    return (kcols){.dt = fl_batch_colid(b, FL_COL_KERNEL_DT_NS),
                   .kid = fl_batch_colid(b, FL_COL_KERNEL_KERNEL_ID),
                   .stream = fl_batch_colid(b, FL_COL_KERNEL_STREAM_ID),
                   .dur = fl_batch_colid(b, FL_COL_KERNEL_DURATION_NS),
                   .corr = fl_batch_colid(b, FL_COL_KERNEL_CORR_ID),
                   .dyn = fl_batch_colid(b, FL_COL_KERNEL_DYN_SHARED),
                   .regs = fl_batch_colid(b, FL_COL_KERNEL_NUM_REGS),
                   .hd = fl_batch_colid(b, FL_COL_KERNEL_HAS_DETAILS),
                   .ek = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_KIND),
                   .eid = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_ID),
                   .dev = fl_batch_colid(b, FL_COL_KERNEL_DEVICE_ID)};
}

/* The dictionaries the report names things by (wire/vocab.h). */
static const fl_dict dict_ids[DICT_COUNT] = {FL_DICT_KERNEL, FL_DICT_SCOPE_NAME, FL_DICT_METRIC,
                                             FL_DICT_FUNCTION};

struct fl_model_priv {
    fl_model_kernel_fn fn;
    void *user;
    strpool pool;
    fl_u64map dict[DICT_COUNT]; /* id -> a: (uintptr_t) interned name */
    fl_u64map current;          /* kernel_id -> a: (uintptr_t) fl_kdetail * (owned) */
    fl_u64map pending;          /* corr_id -> a: (uintptr_t) fl_kdetail * (owned) */
    uint64_t seq;
    /* A kernel batch waiting for details written after it. */
    fl_krow *held;
    size_t n_held, held_cap;
    bool holding;
};

static char *dup_str(fl_model *m, const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        m->oom = true;
    return d;
}

static void note_time(fl_model *m, uint64_t t)
{
    if (!m->have_time) {
        m->first_ns = m->last_ns = t;
        m->have_time = true;
        return;
    }
    if (t < m->first_ns)
        m->first_ns = t;
    if (t > m->last_ns)
        m->last_ns = t;
}

fl_model *fl_model_create(fl_model_kernel_fn fn, void *user)
{
    fl_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->priv = calloc(1, sizeof *m->priv);
    if (!m->priv) {
        free(m);
        return NULL;
    }
    m->priv->fn = fn;
    m->priv->user = user;
    m->default_device = -1;
    return m;
}

static void free_details(fl_u64map *map)
{
    for (size_t i = 0; i < map->cap; i++)
        if (map->used[i])
            free((fl_kdetail *)(uintptr_t)map->vals[i].a);
    fl_map_clear(map);
}

void fl_model_destroy(fl_model *m)
{
    if (!m)
        return;
    fl_model_priv *p = m->priv;
    free(m->app);
    free(m->session_id);
    free(m->hostname);
    free(m->session_kind);
    free(m->engine);
    for (size_t i = 0; i < m->n_devices; i++) {
        free(m->devices[i].name);
        free(m->devices[i].uuid);
    }
    free(m->devices);
    json_decref(m->caps);
    json_decref(m->shutdown);
    if (p) {
        for (int i = 0; i < DICT_COUNT; i++)
            fl_map_free(&p->dict[i]);
        free_details(&p->current);
        fl_map_free(&p->current);
        free_details(&p->pending);
        fl_map_free(&p->pending);
        free(p->held);
        pool_free(&p->pool);
        free(p);
    }
    free(m);
}

static const char *dict_name(const fl_model *m, int dict, uint64_t id)
{
    const fl_mval *v = fl_map_find(&m->priv->dict[dict], id);
    return v ? (const char *)(uintptr_t)v->a : NULL;
}

const char *fl_model_kernel_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_KERNEL, id);
}

const char *fl_model_scope_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_SCOPE, id);
}

const char *fl_model_metric_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_METRIC, id);
}

const char *fl_model_function_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_FUNCTION, id);
}

uint64_t fl_model_origin(const fl_model *m)
{
    if (m->have_start)
        return m->start_ns;
    return m->have_time ? m->first_ns : 0;
}

size_t fl_model_mem_bytes(const fl_model *m)
{
    const fl_model_priv *p = m->priv;
    size_t n = sizeof *m + sizeof *p + pool_bytes(&p->pool) + fl_map_bytes(&p->current) +
               fl_map_bytes(&p->pending) + p->held_cap * sizeof(fl_krow) +
               (p->current.n + p->pending.n) * sizeof(fl_kdetail);
    for (int i = 0; i < DICT_COUNT; i++)
        n += fl_map_bytes(&p->dict[i]);
    return n;
}

/* A row of kernel_id, in record order: the detail a has_details = 1 row
 * claims (by corr_id) becomes its kernel's current one; returns the
 * kernel's current detail (NULL: none known). */
static const fl_kdetail *claim(fl_model *m, uint32_t kernel_id, uint32_t corr_id, bool has_details)
{
    fl_model_priv *p = m->priv;
    if (has_details) {
        fl_kdetail *d = NULL;
        fl_mval *v = p->pending.n ? fl_map_find(&p->pending, corr_id) : NULL;
        if (v) {
            d = (fl_kdetail *)(uintptr_t)v->a;
            fl_map_del(&p->pending, corr_id);
        } else {
            m->details_missing++;
        }
        fl_mval *cur = p->current.n ? fl_map_find(&p->current, kernel_id) : NULL;
        if (cur) {
            free((fl_kdetail *)(uintptr_t)cur->a);
            if (d) {
                cur->a = (uintptr_t)d;
            } else {
                /* Its detail was lost: this row and the later ones up to
                 * the next detail have none. */
                fl_map_del(&p->current, kernel_id);
            }
        } else if (d) {
            cur = fl_map_put(&p->current, kernel_id, NULL);
            if (cur) {
                cur->a = (uintptr_t)d;
            } else {
                free(d);
                m->oom = true;
            }
        }
    }
    const fl_mval *cur = p->current.n ? fl_map_find(&p->current, kernel_id) : NULL;
    return cur ? (const fl_kdetail *)(uintptr_t)cur->a : NULL;
}

static void emit_row(fl_model *m, fl_krow *k)
{
    fl_model_priv *p = m->priv;
    k->detail = claim(m, k->kernel_id, k->corr_id, k->has_details);
    if (p->fn)
        p->fn(p->user, k);
}

static void flush_held(fl_model *m)
{
    fl_model_priv *p = m->priv;
    if (!p->holding)
        return;
    p->holding = false;
    for (size_t i = 0; i < p->n_held; i++)
        emit_row(m, &p->held[i]);
    p->n_held = 0;
}

void fl_model_finish(fl_model *m)
{
    flush_held(m);
    m->details_orphan += m->priv->pending.n;
    free_details(&m->priv->pending);
}

static void add_device(fl_model *m, const json_t *dev)
{
    int64_t id;
    if (!jget_i64(dev, "id", &id))
        return;
    fl_model_device *d = NULL;
    for (size_t i = 0; i < m->n_devices; i++)
        if (m->devices[i].id == id)
            d = &m->devices[i];
    if (!d) {
        fl_model_device *p = realloc(m->devices, (m->n_devices + 1) * sizeof *p);
        if (!p) {
            m->oom = true;
            return;
        }
        m->devices = p;
        d = &p[m->n_devices++];
        memset(d, 0, sizeof *d);
        d->id = id;
    }
    if (!d->name && jget_str(dev, "name"))
        d->name = dup_str(m, jget_str(dev, "name"));
    if (!d->uuid && jget_str(dev, "uuid") && jget_str(dev, "uuid")[0])
        d->uuid = dup_str(m, jget_str(dev, "uuid"));
}

static void on_job_start(fl_model *m, const json_t *rec)
{
    if (m->have_start || m->app)
        return; /* the first one wins (every channel repeats it) */
    m->app = dup_str(m, jget_str(rec, "app"));
    m->session_id = dup_str(m, jget_str(rec, "session_id"));
    m->hostname = dup_str(m, jget_str(rec, "hostname"));
    m->session_kind = dup_str(m, jget_str(rec, "session_kind"));
    m->engine = dup_str(m, jget_str(rec, "profiling_engine"));
    m->have_pid = jget_i64(rec, "pid", &m->pid);
    m->have_start = jget_u64(rec, "ts_ns", &m->start_ns);
    static const char *const lists[] = {"cuda_static_devices", "gpu_static_devices", "devices"};
    for (size_t l = 0; l < 3; l++) {
        const json_t *arr = json_object_get(rec, lists[l]);
        for (size_t i = 0; i < json_array_size(arr); i++)
            add_device(m, json_array_get(arr, i));
    }
    m->default_device = m->n_devices == 1 ? m->devices[0].id : -1;
}

static void on_dictionary(fl_model *m, const json_t *rec)
{
    for (int d = 0; d < DICT_COUNT; d++) {
        json_t *dict = json_object_get(rec, fl_dict_name(dict_ids[d]));
        if (!dict)
            continue;
        if (!json_is_object(dict)) {
            m->bad_rows++;
            continue;
        }
        const char *key;
        json_t *val;
        json_object_foreach(dict, key, val)
        {
            char *end = NULL;
            unsigned long long id = strtoull(key, &end, 10);
            const char *name = json_string_value(val);
            if (!end || end == key || *end || !name) {
                m->bad_rows++;
                continue;
            }
            const char *s = pool_intern(&m->priv->pool, name);
            fl_mval *v = s ? fl_map_put(&m->priv->dict[d], id, NULL) : NULL;
            if (!v) {
                m->oom = true;
                return;
            }
            v->a = (uintptr_t)s;
        }
    }
}

static void on_detail(fl_model *m, const json_t *rec)
{
    fl_model_priv *p = m->priv;
    uint64_t corr;
    if (!jget_u64(rec, "corr_id", &corr)) {
        m->bad_rows++;
        return;
    }
    fl_kdetail *d = calloc(1, sizeof *d);
    if (!d) {
        m->oom = true;
        return;
    }
    d->seq = ++p->seq;
    d->corr_id = (uint32_t)corr;
    d->have_grid = parse_dim3(jget_str(rec, "grid"), d->grid);
    d->have_block = parse_dim3(jget_str(rec, "block"), d->block);
    uint64_t ss;
    d->static_shared = jget_u64(rec, "static_shared", &ss) ? (int64_t)ss : -1;
    if (!jget_real(rec, "occupancy", &d->occupancy))
        d->occupancy = NAN;
    d->limiting = pool_intern(&p->pool, jget_str(rec, "limiting_resource"));
    d->user_scope = pool_intern(&p->pool, jget_str(rec, "user_scope"));
    if (p->pending.n >= PENDING_MAX) {
        /* Details no row claimed (a damaged file): forget them. */
        m->details_orphan += p->pending.n;
        free_details(&p->pending);
    }
    bool fresh;
    fl_mval *v = fl_map_put(&p->pending, corr, &fresh);
    if (!v) {
        free(d);
        m->oom = true;
        return;
    }
    if (!fresh) {
        free((fl_kdetail *)(uintptr_t)v->a);
        m->details_orphan++;
    }
    v->a = (uintptr_t)d;
}

void fl_model_record(fl_model *m, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel;
    if (!type || !rec)
        return;
    if (t == FL_T_KERNEL_DETAIL) {
        on_detail(m, rec);
        return;
    }
    flush_held(m);
    uint64_t ts;
    if (jget_u64(rec, "ts_ns", &ts)) {
        uint64_t dur = 0;
        jget_u64(rec, "duration_ns", &dur);
        note_time(m, ts);
        if (dur)
            note_time(m, ts + dur);
    }
    switch (t) {
    case FL_T_JOB_START:
        on_job_start(m, rec);
        break;
    case FL_T_DICTIONARY_UPDATE:
        on_dictionary(m, rec);
        break;
    case FL_T_CAPTURE_CAPABILITIES: {
        json_t *c = json_deep_copy(rec);
        if (!c) {
            m->oom = true;
            return;
        }
        json_decref(m->caps);
        m->caps = c; /* the last one wins */
        break;
    }
    case FL_T_SHUTDOWN: {
        if (jget_u64(rec, "ts_ns", &ts)) {
            m->shutdown_ns = ts;
            m->have_shutdown = true;
        }
        json_t *c = json_deep_copy(rec);
        if (c) {
            json_decref(m->shutdown);
            m->shutdown = c;
        }
        break;
    }
    default:
        break;
    }
}

static inline int64_t nonneg_or(int64_t v, int64_t def)
{
    return v >= 0 ? v : def;
}

/*
 * Row r into *k; false when it is not usable (dt_ns, kernel_id < 2^32 and
 * duration_ns must be non-negative integers; the other cells, when not,
 * take their "not recorded" value).  plain: the batch's cells are all
 * ints (fl_batch.all_ints) and every column is there - the writer's
 * batches: read straight, without looking at kinds.
 */
static inline __attribute__((always_inline)) bool krow_of(const fl_batch *b, const kcols *c,
                                                          size_t r, bool plain, fl_krow *k)
{
    if (plain) {
        const fl_cell *v = b->cells + r * b->ncols;
        int64_t dt = v[c->dt].i, kid = v[c->kid].i, dur = v[c->dur].i;
        if (dt < 0 || dur < 0 || (uint64_t)kid > UINT32_MAX)
            return false;
        k->start_ns = b->base_time_ns + (uint64_t)dt;
        k->duration_ns = (uint64_t)dur;
        k->kernel_id = (uint32_t)kid;
        k->stream_id = (uint32_t)nonneg_or(v[c->stream].i, 0);
        k->corr_id = (uint32_t)nonneg_or(v[c->corr].i, 0);
        k->dyn_shared = nonneg_or(v[c->dyn].i, -1);
        k->num_regs = nonneg_or(v[c->regs].i, -1);
        k->has_details = v[c->hd].i > 0;
        k->external_kind = nonneg_or(v[c->ek].i, 0);
        k->external_id = (uint64_t)nonneg_or(v[c->eid].i, 0);
        k->device_id = nonneg_or(v[c->dev].i, -1);
        k->detail = NULL;
        return true;
    }
    uint64_t dt, kid, dur, v;
    if (!fl_rcell_u64(b, r, c->dt, &dt) || !fl_rcell_u64(b, r, c->kid, &kid) ||
        !fl_rcell_u64(b, r, c->dur, &dur) || kid > UINT32_MAX)
        return false;
    k->start_ns = b->base_time_ns + dt;
    k->duration_ns = dur;
    k->kernel_id = (uint32_t)kid;
    k->stream_id = fl_rcell_u64(b, r, c->stream, &v) ? (uint32_t)v : 0;
    k->corr_id = fl_rcell_u64(b, r, c->corr, &v) ? (uint32_t)v : 0;
    k->dyn_shared = fl_rcell_u64(b, r, c->dyn, &v) ? (int64_t)v : -1;
    k->num_regs = fl_rcell_u64(b, r, c->regs, &v) ? (int64_t)v : -1;
    k->has_details = fl_rcell_u64(b, r, c->hd, &v) && v != 0;
    k->external_kind = fl_rcell_u64(b, r, c->ek, &v) ? (int64_t)v : 0;
    k->external_id = fl_rcell_u64(b, r, c->eid, &v) ? v : 0;
    k->device_id = fl_rcell_u64(b, r, c->dev, &v) ? (int64_t)v : -1;
    k->detail = NULL;
    return true;
}

/* The batch's usable rows into p->held: returns their count, in *wait
 * whether one claims a detail not read yet, in *lo / *hi their time span
 * (*lo UINT64_MAX: none). */
static inline __attribute__((always_inline)) size_t take_rows(fl_model *m, const fl_batch *b,
                                                              const kcols *c, bool plain,
                                                              bool *wait, uint64_t *lo,
                                                              uint64_t *hi)
{
    fl_model_priv *p = m->priv;
    size_t n = 0;
    uint64_t bad = 0, l = UINT64_MAX, h = 0;
    bool w = false;
    for (size_t r = 0; r < b->nrows; r++) {
        fl_krow *k = &p->held[n];
        if (!krow_of(b, c, r, plain, k)) {
            bad++;
            continue;
        }
        n++;
        uint64_t t = k->start_ns, e = k->start_ns + k->duration_ns;
        l = t < l ? t : l;
        h = e > h ? e : h;
        if (k->has_details && !w && !(p->pending.n && fl_map_find(&p->pending, k->corr_id)))
            w = true;
    }
    m->bad_rows += bad;
    *wait = w;
    *lo = l;
    *hi = h;
    return n;
}

static void kernel_batch(fl_model *m, const fl_batch *b)
{
    fl_model_priv *p = m->priv;
    kcols c = kcols_of(b);
    if (c.dt < 0 || c.kid < 0 || c.dur < 0) {
        m->bad_rows += b->nrows ? b->nrows : 1;
        return;
    }
    if (p->held_cap < b->nrows) {
        fl_krow *h = realloc(p->held, b->nrows * sizeof *h);
        if (!h) {
            m->oom = true;
            return;
        }
        p->held = h;
        p->held_cap = b->nrows;
    }
    bool plain = b->all_ints && b->cells &&
                 (c.stream | c.corr | c.dyn | c.regs | c.hd | c.ek | c.eid | c.dev) >= 0;
    bool wait;
    uint64_t lo, hi; /* the batch's time span, for the session's */
    size_t n = plain ? take_rows(m, b, &c, true, &wait, &lo, &hi)
                     : take_rows(m, b, &c, false, &wait, &lo, &hi);
    if (lo != UINT64_MAX) {
        note_time(m, lo);
        note_time(m, hi);
    }
    p->n_held = n;
    p->holding = true;
    /* Details written after their batch (the example session's order):
     * wait for them until the next other record; else the rows go now. */
    if (!wait)
        flush_held(m);
}

void fl_model_batch(fl_model *m, const fl_batch *b)
{
    flush_held(m);
    if (!b || !b->type)
        return;
    if (b->type_id == FL_T_KERNEL_EVENT_BATCH) {
        kernel_batch(m, b); /* notes the batch's time span as it goes */
        return;
    }
    int c_dt = fl_batch_time_col(b, false), c_dur = fl_batch_time_col(b, true);
    if (c_dt >= 0) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t r = 0; r < b->nrows; r++) {
            uint64_t dt, dur = 0;
            if (!fl_rcell_u64(b, r, c_dt, &dt))
                continue;
            fl_rcell_u64(b, r, c_dur, &dur);
            uint64_t t = b->base_time_ns + dt;
            if (t < lo)
                lo = t;
            if (t + dur > hi)
                hi = t + dur;
        }
        if (lo != UINT64_MAX) {
            note_time(m, lo);
            note_time(m, hi);
        }
    }
}

/* ============================================================= report */

typedef struct kstat {
    /* Touched by every row: first, together (72 bytes). min_ns starts at
     * UINT64_MAX, regs_min / regs_max at INT64_MAX / INT64_MIN (a kstat
     * is made for a row, so count >= 1 once it is seen). */
    uint64_t count, total_ns, min_ns, max_ns;
    hist h;
    uint32_t kernel_id;
    bool have_regs;
    int64_t regs_min, regs_max;
    /* The most recent detail, and which fields took several values. */
    uint64_t seq;
    fl_kdetail last;
    bool have_detail, grid_varies, block_varies, occ_varies, lim_varies, smem_varies;
    /* GPU time attribution of the current detail: 0 none known, 1 global,
     * 2 the scopes in scope_idx (indices into the scope table). */
    uint64_t attr_seq;
    int attr;
    uint32_t *scope_idx;
    size_t n_scope_idx;
} kstat;

typedef struct sstat {
    const char *name; /* interned */
    bool nvtx;
    uint64_t count, total_ns, min_ns, max_ns;
    uint64_t gpu_ns;      /* kernels whose user_scope holds this name */
    uint64_t kernels;     /* their launches */
    uint64_t open_at_end; /* begun, never ended */
    hist h;
} sstat;

typedef struct acc {
    uint64_t n;
    double sum, max;
} acc;

static void acc_add(acc *a, double v)
{
    if (a->n == 0 || v > a->max)
        a->max = v;
    a->sum += v;
    a->n++;
}

typedef struct dstat {
    int64_t id; /* DEVICE_UNKNOWN: rows that do not say their device */
    /* kernels */
    uint64_t kernels, kernel_ns;
    uint64_t busy_ns, cur_start, cur_end;
    bool have_cur;
    /* device_metric_batch */
    uint64_t samples;
    acc util_gpu, util_mem, temp, power, used, clock_sm, clock_mem;
    double total_mib;
    bool have_total;
    bool have_energy;
    uint64_t energy_first, energy_last, energy_readings;
    bool have_prev_power;
    uint64_t prev_t;
    double prev_power_mw, power_integral_j;
    uint64_t power_pairs;
} dstat;

typedef struct opstat {
    uint64_t count, bytes, time_ns;
} opstat;

typedef struct pmstat {
    uint64_t metric_id, n;
    double sum, min, max;
} pmstat;

typedef struct stallstat {
    uint64_t reason, samples, metric_id;
} stallstat;

typedef struct kdefer {
    uint64_t dur;
    uint32_t k; /* index into fl_report.k, | DQ_HD */
    uint32_t corr;
} kdefer;

typedef struct fnstat {
    uint64_t function_id, samples;
} fnstat;

struct fl_report {
    fl_model *m;
    bool live; /* the session is still recording (fl_report_set_live) */
    /* kernels */
    kstat *k;
    size_t n_k, cap_k;
    fl_u64map k_by_id; /* kernel_id -> a: index */
    /* The same for the small ids (dictionary ids are): k_dense[id] = index
     * + 1 (0: none yet), for id < n_dense. */
    uint32_t *k_dense;
    size_t n_dense;
    size_t last_dev; /* the index of the device of the last kernel row */
    /* Kernel rows waiting for their details (fast_kernels). */
    kdefer *dq;
    size_t n_dq, cap_dq;
    uint64_t dq_ns, dq_hd; /* their durations, has_details = 1 rows */
    bool dq_reset;         /* one's kernel has an attribution (attr_seq) */
    uint64_t kernel_launches, kernel_ns, kernel_global_ns, kernel_unattributed_ns;
    uint64_t kernel_scoped_ns;
    /* scopes */
    sstat *s;
    size_t n_s, cap_s;
    fl_u64map s_by_name; /* (uintptr_t) name * 2 + nvtx -> a: index */
    fl_u64map open;      /* scope_instance_id -> a: start ns, b: name_id */
    uint64_t scope_unmatched_ends;
    /* devices */
    dstat *d;
    size_t n_d, cap_d;
    /* memcpy by copy_kind (0..255; 256: out of range), memset */
    opstat copies[257];
    opstat memsets;
    uint64_t graphs, graph_ns, syncs, sync_ns, allocs, frees;
    /* host */
    uint64_t host_samples;
    acc cpu, ram_used;
    double ram_total_mib;
    bool have_ram_total;
    const char *host_name; /* interned in the report's pool */
    /* stalls, perf metrics */
    stallstat *st;
    size_t n_st, cap_st;
    fnstat *fn;
    size_t n_fn, cap_fn;
    uint64_t pc_samples, sass_rows, other_profile_rows;
    pmstat *pm;
    size_t n_pm, cap_pm;
    strpool pool;
    /* the reader */
    bool have_res;
    fl_read_result res;
    uint64_t warnings;
    char *warning_text[MAX_WARNINGS_KEPT];
    bool oom;
};

#define DENSE_MAX 4096u /* kernel ids below this have k_dense slots */

static kstat *kernel_of_slow(fl_report *r, uint32_t id)
{
    bool fresh;
    fl_mval *v = fl_map_put(&r->k_by_id, id, &fresh);
    if (!v) {
        r->oom = true;
        return NULL;
    }
    if (!fresh)
        return &r->k[v->a];
    if (fl_grow((void **)&r->k, &r->cap_k, r->n_k + 1, sizeof *r->k) != 0) {
        fl_map_del(&r->k_by_id, id);
        r->oom = true;
        return NULL;
    }
    v->a = r->n_k;
    kstat *k = &r->k[r->n_k++];
    memset(k, 0, sizeof *k);
    k->kernel_id = id;
    k->min_ns = UINT64_MAX;
    k->regs_min = INT64_MAX;
    k->regs_max = INT64_MIN;
    if (id < DENSE_MAX) {
        if (id >= r->n_dense) {
            size_t n = r->n_dense ? r->n_dense : 64;
            while (n <= id)
                n *= 2;
            uint32_t *d = realloc(r->k_dense, n * sizeof *d);
            if (d) {
                memset(d + r->n_dense, 0, (n - r->n_dense) * sizeof *d);
                r->k_dense = d;
                r->n_dense = n;
            }
        }
        if (id < r->n_dense)
            r->k_dense[id] = (uint32_t)r->n_k; /* index + 1 */
    }
    return k;
}

static inline kstat *kernel_of(fl_report *r, uint32_t id)
{
    if (id < r->n_dense && r->k_dense[id])
        return &r->k[r->k_dense[id] - 1];
    return kernel_of_slow(r, id);
}

/* The same as an index into r->k; -1: out of memory. */
static inline int64_t kernel_index(fl_report *r, uint32_t id)
{
    if (id < r->n_dense && r->k_dense[id])
        return (int64_t)r->k_dense[id] - 1;
    kstat *k = kernel_of_slow(r, id);
    return k ? k - r->k : -1;
}

static sstat *scope_of(fl_report *r, const char *name, bool nvtx, uint32_t *index)
{
    if (!name)
        return NULL;
    uint64_t key = (uint64_t)(uintptr_t)name * 2 + (nvtx ? 1 : 0);
    bool fresh;
    fl_mval *v = fl_map_put(&r->s_by_name, key, &fresh);
    if (!v) {
        r->oom = true;
        return NULL;
    }
    if (fresh) {
        if (fl_grow((void **)&r->s, &r->cap_s, r->n_s + 1, sizeof *r->s) != 0) {
            fl_map_del(&r->s_by_name, key);
            r->oom = true;
            return NULL;
        }
        v->a = r->n_s;
        sstat *s = &r->s[r->n_s++];
        memset(s, 0, sizeof *s);
        s->name = name;
        s->nvtx = nvtx;
    }
    if (index)
        *index = (uint32_t)v->a;
    return &r->s[v->a];
}

static dstat *device_of(fl_report *r, int64_t id)
{
    for (size_t i = 0; i < r->n_d; i++)
        if (r->d[i].id == id)
            return &r->d[i];
    if (fl_grow((void **)&r->d, &r->cap_d, r->n_d + 1, sizeof *r->d) != 0) {
        r->oom = true;
        return NULL;
    }
    dstat *d = &r->d[r->n_d++];
    memset(d, 0, sizeof *d);
    d->id = id;
    return d;
}

/* ----------------------------------------------------------- kernels */

static bool dim_eq(bool ha, const uint32_t *a, bool hb, const uint32_t *b)
{
    return ha == hb && (!ha || (a[0] == b[0] && a[1] == b[1] && a[2] == b[2]));
}

static bool occ_eq(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void take_detail(kstat *k, const fl_kdetail *d)
{
    if (k->have_detail) {
        const fl_kdetail *o = &k->last;
        k->grid_varies |= !dim_eq(o->have_grid, o->grid, d->have_grid, d->grid);
        k->block_varies |= !dim_eq(o->have_block, o->block, d->have_block, d->block);
        k->occ_varies |= !occ_eq(o->occupancy, d->occupancy);
        k->lim_varies |= o->limiting != d->limiting; /* interned */
        k->smem_varies |= o->static_shared != d->static_shared;
    }
    k->last = *d;
    k->have_detail = true;
    k->seq = d->seq;
}

/* The scopes of a user_scope path ("outer|inner"), each name once. */
static void resolve_scopes(fl_report *r, kstat *k, const fl_kdetail *d)
{
    free(k->scope_idx);
    k->scope_idx = NULL;
    k->n_scope_idx = 0;
    k->attr_seq = d ? d->seq : 0;
    if (!d || !d->user_scope) {
        k->attr = 0;
        return;
    }
    if (strcmp(d->user_scope, "global") == 0 || d->user_scope[0] == '\0') {
        k->attr = 1;
        return;
    }
    k->attr = 2;
    const char *s = d->user_scope;
    size_t parts = 1;
    for (const char *c = s; *c; c++)
        parts += *c == '|';
    k->scope_idx = malloc(parts * sizeof *k->scope_idx);
    if (!k->scope_idx) {
        r->oom = true;
        k->attr = 0;
        return;
    }
    char name[1024];
    while (*s) {
        const char *e = strchr(s, '|');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, s, len);
        name[len] = '\0';
        uint32_t idx;
        if (scope_of(r, pool_intern(&r->pool, name), false, &idx)) {
            bool dup = false;
            for (size_t i = 0; i < k->n_scope_idx; i++)
                dup |= k->scope_idx[i] == idx;
            if (!dup)
                k->scope_idx[k->n_scope_idx++] = idx;
        }
        if (!e)
            break;
        s = e + 1;
    }
}

static inline __attribute__((always_inline)) void busy_add(dstat *d, uint64_t a, uint64_t b)
{
    if (!d->have_cur) {
        d->cur_start = a;
        d->cur_end = b;
        d->have_cur = true;
    } else if (a >= d->cur_start && a <= d->cur_end) {
        if (b > d->cur_end)
            d->cur_end = b;
    } else if (a > d->cur_end) {
        d->busy_ns += d->cur_end - d->cur_start;
        d->cur_start = a;
        d->cur_end = b;
    } else if (b >= d->cur_start) {
        /* Starts before the current interval and reaches into it. */
        d->cur_start = a;
        if (b > d->cur_end)
            d->cur_end = b;
    } else {
        d->busy_ns += b - a; /* out of order: its own length */
    }
}

static uint64_t busy_of(const dstat *d)
{
    return d->busy_ns + (d->have_cur ? d->cur_end - d->cur_start : 0);
}

static inline __attribute__((always_inline)) dstat *kernel_device(fl_report *r, int64_t id)
{
    if (r->last_dev < r->n_d && r->d[r->last_dev].id == id)
        return &r->d[r->last_dev];
    dstat *d = device_of(r, id);
    if (d)
        r->last_dev = (size_t)(d - r->d);
    return d;
}

/* The part of a kernel row that does not depend on its detail: counts,
 * durations, registers, its device. */
static inline __attribute__((always_inline)) void
kernel_stats(fl_report *r, kstat *k, uint64_t start, uint64_t dur, int64_t regs, int64_t dev)
{
    k->min_ns = dur < k->min_ns ? dur : k->min_ns;
    k->max_ns = dur > k->max_ns ? dur : k->max_ns;
    k->count++;
    k->total_ns += dur;
    if (!hist_add(&k->h, dur))
        r->oom = true;
    if (regs >= 0) {
        k->regs_min = regs < k->regs_min ? regs : k->regs_min;
        k->regs_max = regs > k->regs_max ? regs : k->regs_max;
        k->have_regs = true;
    }
    dstat *ds = kernel_device(r, dev);
    if (ds) {
        ds->kernels++;
        ds->kernel_ns += dur;
        busy_add(ds, start, start + dur);
    }
}

/* The part that does: the detail d the row has (NULL: none), its scopes. */
static inline void kernel_attr(fl_report *r, kstat *k, const fl_kdetail *d, uint64_t dur)
{
    if (d && d->seq != k->seq)
        take_detail(k, d);
    if ((d ? d->seq : 0) != k->attr_seq)
        resolve_scopes(r, k, d);
    switch (k->attr) {
    case 1:
        r->kernel_global_ns += dur;
        break;
    case 2:
        r->kernel_scoped_ns += dur;
        for (size_t i = 0; i < k->n_scope_idx; i++) {
            r->s[k->scope_idx[i]].gpu_ns += dur;
            r->s[k->scope_idx[i]].kernels++;
        }
        break;
    default:
        r->kernel_unattributed_ns += dur;
    }
}

static inline int64_t device_key(const fl_report *r, int64_t id)
{
    int64_t dev = id >= 0 ? id : r->m->default_device;
    return dev >= 0 ? dev : DEVICE_UNKNOWN;
}

/* A row from the model (kernel batches fast_kernels does not take). */
static void on_kernel(void *user, const fl_krow *row)
{
    fl_report *r = user;
    r->kernel_launches++;
    r->kernel_ns += row->duration_ns;
    kstat *k = kernel_of(r, row->kernel_id);
    if (!k)
        return;
    kernel_stats(r, k, row->start_ns, row->duration_ns, row->num_regs,
                 device_key(r, row->device_id));
    kernel_attr(r, k, row->detail, row->duration_ns);
}

/*
 * The writer's kernel batches (all cells ints, every column there), read
 * straight from the cells, without fl_krow rows.  The model's rule for
 * details (kernel_batch) holds the rows of a batch in which a
 * has_details = 1 row finds no kernel_detail yet, until the next other
 * record.  Only the attribution depends on the detail, so the rest of a
 * row is taken at once; its attribution waits in r->dq (from the first
 * such row on: the rows before read only the kernels' current details,
 * which do not change until then) and is done by dq_flush.
 */
#define DQ_HD 0x80000000u /* kdefer.k: the row has has_details = 1 */

static void dq_flush(fl_report *r)
{
    fl_model *m = r->m;
    flush_held(m); /* rows of the model's (never both at once) */
    if (!r->n_dq)
        return;
    fl_model_priv *p = m->priv;
    if (!p->current.n && !p->pending.n) {
        /* No detail came: none of these rows has one. */
        m->details_missing += r->dq_hd;
        r->kernel_unattributed_ns += r->dq_ns;
        if (r->dq_reset)
            for (size_t i = 0; i < r->n_dq; i++) {
                kstat *k = &r->k[r->dq[i].k & ~DQ_HD];
                if (k->attr_seq)
                    resolve_scopes(r, k, NULL);
            }
    } else {
        for (size_t i = 0; i < r->n_dq; i++) {
            const kdefer *q = &r->dq[i];
            kstat *k = &r->k[q->k & ~DQ_HD];
            kernel_attr(r, k, claim(m, k->kernel_id, q->corr, (q->k & DQ_HD) != 0), q->dur);
        }
    }
    r->n_dq = 0;
    r->dq_hd = r->dq_ns = 0;
    r->dq_reset = false;
}

/* Whether a usable has_details = 1 row of b finds no kernel_detail. */
static bool kernels_wait(const fl_report *r, const fl_batch *b, const kcols *c)
{
    const fl_u64map *pending = &r->m->priv->pending;
    for (size_t i = 0; i < b->nrows; i++) {
        const fl_cell *v = b->cells + i * b->ncols;
        int64_t dt = v[c->dt].i, kid = v[c->kid].i, dur = v[c->dur].i;
        if (dt < 0 || dur < 0 || (uint64_t)kid > UINT32_MAX || v[c->hd].i <= 0)
            continue;
        if (!pending->n || !fl_map_find(pending, (uint32_t)nonneg_or(v[c->corr].i, 0)))
            return true;
    }
    return false;
}

/* false: not a batch for it (the model takes it). */
static bool fast_kernels(fl_report *r, const fl_batch *b)
{
    fl_model *m = r->m;
    kcols c = kcols_of(b);
    if (!b->all_ints || !b->cells ||
        (c.dt | c.kid | c.stream | c.dur | c.corr | c.dyn | c.regs | c.hd | c.ek | c.eid | c.dev) <
            0)
        return false;
    if (r->cap_dq < b->nrows &&
        fl_grow((void **)&r->dq, &r->cap_dq, b->nrows, sizeof *r->dq) != 0) {
        r->oom = m->oom = true;
        return false;
    }
    /* Whether the batch waits for details (see kernel_batch): with none
     * pending, as soon as a has_details = 1 row comes. */
    bool may_wait = !m->priv->pending.n || kernels_wait(r, b, &c);
    bool waiting = false;
    uint64_t bad = 0, lo = UINT64_MAX, hi = 0, launches = 0, ns = 0;
    const size_t ncols = b->ncols;
    const fl_cell *v = b->cells;
    for (size_t i = 0; i < b->nrows; i++, v += ncols) {
        int64_t dt = v[c.dt].i, kid = v[c.kid].i, sdur = v[c.dur].i;
        if (dt < 0 || sdur < 0 || (uint64_t)kid > UINT32_MAX) {
            bad++;
            continue;
        }
        uint64_t start = b->base_time_ns + (uint64_t)dt, dur = (uint64_t)sdur;
        lo = start < lo ? start : lo;
        hi = start + dur > hi ? start + dur : hi;
        launches++;
        ns += dur;
        int64_t ix = kernel_index(r, (uint32_t)kid);
        if (ix < 0)
            continue;
        kstat *k = &r->k[ix];
        kernel_stats(r, k, start, dur, v[c.regs].i >= 0 ? v[c.regs].i : -1,
                     device_key(r, v[c.dev].i));
        bool hd = v[c.hd].i > 0;
        uint32_t corr = (uint32_t)nonneg_or(v[c.corr].i, 0);
        waiting |= hd && may_wait;
        if (waiting) {
            r->dq[r->n_dq++] = (kdefer){dur, (uint32_t)ix | (hd ? DQ_HD : 0), corr};
            r->dq_ns += dur;
            r->dq_hd += hd;
            r->dq_reset |= k->attr_seq != 0;
        } else if (!hd && !m->priv->current.n) {
            kernel_attr(r, k, NULL, dur);
        } else {
            kernel_attr(r, k, claim(m, (uint32_t)kid, corr, hd), dur);
        }
    }
    m->bad_rows += bad;
    r->kernel_launches += launches;
    r->kernel_ns += ns;
    if (lo != UINT64_MAX) {
        note_time(m, lo);
        note_time(m, hi);
    }
    return true;
}

/* ------------------------------------------------------------- batches */

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
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, dev;
        if (!fl_rcell_u64(b, i, c_dt, &dt) || !fl_rcell_u64(b, i, c_dev, &dev) || dev > INT64_MAX) {
            r->m->bad_rows++;
            continue;
        }
        dstat *d = device_of(r, (int64_t)dev);
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
        r->host_name = pool_intern(&r->pool, b->hostname);
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
        return pool_intern(&r->pool, n);
    char buf[64];
    snprintf(buf, sizeof buf, "(scope id %" PRIu64 ", not in scope_name_dict)", name_id);
    return pool_intern(&r->pool, buf);
}

static void scope_done(fl_report *r, uint64_t instance, uint64_t name_id, uint64_t dur)
{
    sstat *s = scope_of(r, scope_name(r, name_id), (instance & NVTX_BIT) != 0, NULL);
    if (!s)
        return;
    if (s->count == 0 || dur < s->min_ns)
        s->min_ns = dur;
    if (s->count == 0 || dur > s->max_ns)
        s->max_ns = dur;
    s->count++;
    s->total_ns += dur;
    if (!hist_add(&s->h, dur))
        r->oom = true;
}

static void scope_batch(fl_report *r, const fl_batch *b)
{
    int c_dt = fl_batch_colid(b, FL_COL_SCOPE_DT_NS),
        c_id = fl_batch_colid(b, FL_COL_SCOPE_SCOPE_INSTANCE_ID),
        c_name = fl_batch_colid(b, FL_COL_SCOPE_NAME_ID),
        c_type = fl_batch_colid(b, FL_COL_SCOPE_EVENT_TYPE),
        c_orig = fl_batch_colid(b, FL_COL_SCOPE_ORIGINAL_START_NS);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t dt, id, name = 0, type, orig = 0;
        if (!fl_rcell_u64(b, i, c_dt, &dt) || !fl_rcell_u64(b, i, c_id, &id) ||
            !fl_rcell_u64(b, i, c_type, &type)) {
            r->m->bad_rows++;
            continue;
        }
        fl_rcell_u64(b, i, c_name, &name);
        fl_rcell_u64(b, i, c_orig, &orig);
        uint64_t t = b->base_time_ns + dt;
        fl_mval *v = fl_map_find(&r->open, id);
        switch (type) {
        case 0: /* begin */
        case 2: /* continuation-open: the scope began before this window */
            if (type == 2 && v)
                break;
            v = fl_map_put(&r->open, id, NULL);
            if (!v) {
                r->oom = true;
                return;
            }
            v->a = type == 2 && orig ? orig : t;
            v->b = name;
            break;
        case 1: { /* end */
            uint64_t start;
            if (v) {
                start = v->a;
                if (v->b)
                    name = v->b;
                fl_map_del(&r->open, id);
            } else if (orig && orig <= t) {
                start = orig; /* its begin was not read */
            } else {
                r->scope_unmatched_ends++;
                break;
            }
            scope_done(r, id, name, t > start ? t - start : 0);
            break;
        }
        default: /* 3, continuation-close: still open */
            break;
        }
    }
}

static void profile_batch(fl_report *r, const fl_batch *b)
{
    int c_kind = fl_batch_colid(b, FL_COL_PROFILE_SAMPLE_KIND),
        c_reason = fl_batch_colid(b, FL_COL_PROFILE_STALL_REASON),
        c_val = fl_batch_colid(b, FL_COL_PROFILE_METRIC_VALUE),
        c_fn = fl_batch_colid(b, FL_COL_PROFILE_FUNCTION_ID),
        c_metric = fl_batch_colid(b, FL_COL_PROFILE_METRIC_ID);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t kind = 0, reason, val, fn = 0, metric = 0;
        fl_rcell_u64(b, i, c_kind, &kind);
        if (kind == 1) {
            r->sass_rows++;
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
        fl_rcell_u64(b, i, c_metric, &metric);
        r->pc_samples += val;
        stallstat *s = NULL;
        for (size_t k = 0; k < r->n_st && !s; k++)
            if (r->st[k].reason == reason)
                s = &r->st[k];
        if (!s) {
            if (fl_grow((void **)&r->st, &r->cap_st, r->n_st + 1, sizeof *r->st) != 0) {
                r->oom = true;
                return;
            }
            s = &r->st[r->n_st++];
            memset(s, 0, sizeof *s);
            s->reason = reason;
        }
        s->samples += val;
        if (!s->metric_id)
            s->metric_id = metric;
        if (fn) {
            fnstat *f = NULL;
            for (size_t k = 0; k < r->n_fn && !f; k++)
                if (r->fn[k].function_id == fn)
                    f = &r->fn[k];
            if (!f) {
                if (fl_grow((void **)&r->fn, &r->cap_fn, r->n_fn + 1, sizeof *r->fn) != 0) {
                    r->oom = true;
                    return;
                }
                f = &r->fn[r->n_fn++];
                memset(f, 0, sizeof *f);
                f->function_id = fn;
            }
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
            if (fl_grow((void **)&r->pm, &r->cap_pm, r->n_pm + 1, sizeof *r->pm) != 0) {
                r->oom = true;
                return;
            }
            p = &r->pm[r->n_pm++];
            memset(p, 0, sizeof *p);
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

static void sum_durations(const fl_batch *b, uint64_t *count, uint64_t *ns)
{
    int c_dur = fl_batch_time_col(b, true);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t d = 0;
        fl_rcell_u64(b, i, c_dur, &d);
        (*count)++;
        *ns += d;
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

/* ----------------------------------------------------------- callbacks */

static void cb_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    fl_report *r = user;
    if (type && rec && t != FL_T_KERNEL_DETAIL)
        dq_flush(r);
    fl_model_record(r->m, channel, t, type, rec);
    if (t == FL_T_MEMSET_EVENT) {
        uint64_t bytes = 0, dur = 0;
        jget_u64(rec, "bytes", &bytes);
        jget_u64(rec, "duration_ns", &dur);
        r->memsets.count++;
        r->memsets.bytes += bytes;
        r->memsets.time_ns += dur;
    }
}

static void cb_batch(void *user, const fl_batch *b)
{
    fl_report *r = user;
    dq_flush(r);
    if (b && b->type_id == FL_T_KERNEL_EVENT_BATCH && fast_kernels(r, b))
        return;
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
        sum_durations(b, &r->graphs, &r->graph_ns);
        break;
    case FL_T_SYNCHRONIZATION_EVENT_BATCH:
        sum_durations(b, &r->syncs, &r->sync_ns);
        break;
    case FL_T_MEMORY_ALLOC_EVENT_BATCH:
        alloc_batch(r, b);
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
    r->m = fl_model_create(on_kernel, r);
    if (!r->m) {
        free(r);
        return NULL;
    }
    return r;
}

void fl_report_destroy(fl_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_k; i++) {
        hist_free(&r->k[i].h);
        free(r->k[i].scope_idx);
    }
    free(r->k);
    free(r->dq);
    fl_map_free(&r->k_by_id);
    free(r->k_dense);
    for (size_t i = 0; i < r->n_s; i++)
        hist_free(&r->s[i].h);
    free(r->s);
    fl_map_free(&r->s_by_name);
    fl_map_free(&r->open);
    free(r->d);
    free(r->st);
    free(r->fn);
    free(r->pm);
    pool_free(&r->pool);
    for (size_t i = 0; i < MAX_WARNINGS_KEPT; i++)
        free(r->warning_text[i]);
    fl_model_destroy(r->m);
    free(r);
}

void fl_report_callbacks(fl_report *r, fl_read_cb *cb)
{
    memset(cb, 0, sizeof *cb);
    cb->user = r;
    cb->record = cb_record;
    cb->batch = cb_batch;
    cb->warning = cb_warning;
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

void fl_report_finish(fl_report *r, const fl_read_result *res)
{
    dq_flush(r);
    fl_model_finish(r->m);
    /* Scopes still open: begun, never ended (a crash, or a scope the
     * program left open). */
    for (size_t i = 0; i < r->open.cap; i++) {
        if (!r->open.used[i])
            continue;
        sstat *s =
            scope_of(r, scope_name(r, r->open.vals[i].b), (r->open.keys[i] & NVTX_BIT) != 0, NULL);
        if (s)
            s->open_at_end++;
    }
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
}

size_t fl_report_mem_bytes(const fl_report *r)
{
    size_t n = sizeof *r + fl_model_mem_bytes(r->m) + fl_map_bytes(&r->k_by_id) +
               r->n_dense * sizeof *r->k_dense + fl_map_bytes(&r->s_by_name) +
               fl_map_bytes(&r->open) + pool_bytes(&r->pool) + r->cap_k * sizeof *r->k +
               r->cap_s * sizeof *r->s + r->cap_d * sizeof *r->d + r->cap_st * sizeof *r->st +
               r->cap_fn * sizeof *r->fn + r->cap_pm * sizeof *r->pm + r->cap_dq * sizeof *r->dq;
    for (size_t i = 0; i < r->n_k; i++)
        n += hist_bytes(&r->k[i].h) + r->k[i].n_scope_idx * sizeof(uint32_t);
    for (size_t i = 0; i < r->n_s; i++)
        n += hist_bytes(&r->s[i].h);
    return n;
}

/* ============================================================ figures */

/* What the text and the JSON both say, computed once per rendering. */
typedef struct figures {
    uint64_t start_ns, end_ns, duration_ns;
    bool have_start, have_end;
    const char *end_source; /* "shutdown", "last_record", NULL */
    bool crashed;
    /* memcpy totals */
    uint64_t copies, copy_bytes, copy_ns;
    /* device aggregates */
    bool have_util;
    double util_mean;
    bool have_used;
    double used_peak_mib;
    int64_t used_peak_dev;
    bool have_power;
    double power_mean_sum_w, power_peak_w;
    bool have_energy, energy_partial;
    double energy_j;
    const char *energy_source; /* "counter", "power_integral", "mixed" */
    /* sorted views (indices) */
    size_t *korder, *sorder, *dorder;
    size_t top;
} figures;

/* Energy of one device: the counter's difference when read twice, else
 * the integral of its power readings; false when neither. */
static bool device_energy(const dstat *d, double *j, const char **source)
{
    if (d->have_energy && d->energy_readings >= 2 && d->energy_last >= d->energy_first) {
        *j = (double)(d->energy_last - d->energy_first) / 1e6;
        *source = "counter";
        return true;
    }
    if (d->power_pairs > 0) {
        *j = d->power_integral_j;
        *source = "power_integral";
        return true;
    }
    return false;
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

static bool compute(const fl_report *r, int top_n, figures *f)
{
    const fl_model *m = r->m;
    memset(f, 0, sizeof *f);
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
    for (size_t k = 0; k < 257; k++) {
        f->copies += r->copies[k].count;
        f->copy_bytes += r->copies[k].bytes;
        f->copy_ns += r->copies[k].time_ns;
    }
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
        if (device_energy(d, &j, &src)) {
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
    f->korder = order(r, r->n_k, cmp_kernel);
    f->sorder = order(r, r->n_s, cmp_scope);
    f->dorder = order(r, r->n_d, cmp_device);
    f->top = (size_t)(top_n < 1 ? 10 : top_n);
    if (f->top > r->n_k)
        f->top = r->n_k;
    return f->korder && f->sorder && f->dorder;
}

static void figures_free(figures *f)
{
    free(f->korder);
    free(f->sorder);
    free(f->dorder);
}

static const char *device_name(const fl_model *m, int64_t id)
{
    for (size_t i = 0; i < m->n_devices; i++)
        if (m->devices[i].id == id)
            return m->devices[i].name;
    return NULL;
}

static const char *kernel_label(const fl_report *r, const kstat *k, char *buf, size_t len)
{
    const char *n = fl_model_kernel_name(r->m, k->kernel_id);
    if (n)
        return n;
    snprintf(buf, len, "(kernel id %" PRIu32 ", not in kernel_dict)", k->kernel_id);
    return buf;
}

static double busy_pct(const dstat *d, uint64_t duration_ns)
{
    double p = 100.0 * (double)busy_of(d) / (double)duration_ns;
    return p > 100.0 ? 100.0 : p;
}

/* =============================================================== text */

/* s on one line, control characters as '?', cut to max bytes with "...". */
static void put_line(fl_buf *b, const char *s, size_t max)
{
    size_t n = strlen(s);
    bool cut = n > max;
    if (cut)
        n = max > 3 ? max - 3 : 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char ch = c < 0x20 || c == 0x7f ? '?' : (char)c;
        fl_buf_put(b, &ch, 1);
    }
    if (cut)
        fl_buf_puts(b, "...");
}

static void dur_text(fl_buf *b, uint64_t ns)
{
    if (ns >= 1000000000ull)
        fl_buf_printf(b, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        fl_buf_printf(b, "%.3f ms", (double)ns / 1e6);
    else
        fl_buf_printf(b, "%.3f us", (double)ns / 1e3);
}

static void bytes_str(char *buf, size_t len, double bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024.0) {
        snprintf(buf, len, "%.0f B", bytes);
        return;
    }
    double v = bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", v, units[u]);
}

static void bytes_text(fl_buf *b, double bytes)
{
    char buf[32];
    bytes_str(buf, sizeof buf, bytes);
    fl_buf_puts(b, buf);
}

static void time_text(fl_buf *b, uint64_t ns)
{
    time_t s = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        fl_buf_printf(b, "%" PRIu64 " ns", ns);
        return;
    }
    char buf[64];
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    fl_buf_printf(b, "%s.%06u UTC", buf, (unsigned)(ns % 1000000000ull / 1000));
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void label(fl_buf *b, const char *l)
{
    fl_buf_printf(b, "  %-18s", l);
}

static void gpu_label(fl_buf *b, int64_t id)
{
    if (id == DEVICE_UNKNOWN)
        fl_buf_puts(b, "GPU ?");
    else
        fl_buf_printf(b, "GPU %" PRId64, id);
}

static const char *copy_label(uint64_t kind, char *buf, size_t len)
{
    const char *n = fl_copy_kind_name(kind);
    if (n)
        return n;
    if (kind == 256)
        return "other";
    snprintf(buf, len, "kind %" PRIu64, kind);
    return buf;
}

static void text_summary(const fl_report *r, const figures *f, fl_buf *b)
{
    const fl_model *m = r->m;
    fl_buf_puts(b, "report  ");
    put_line(b, m->app ? m->app : "(no job_start)", 80);
    if (m->session_id) {
        fl_buf_puts(b, "  session ");
        put_line(b, m->session_id, 80);
    }
    fl_buf_puts(b, "\n");
    label(b, "host");
    put_line(b, m->hostname ? m->hostname : "n/a", 80);
    if (m->have_pid)
        fl_buf_printf(b, "  pid %" PRId64, m->pid);
    fl_buf_puts(b, "\n");
    label(b, "start");
    if (f->have_start) {
        time_text(b, f->start_ns);
        if (!m->have_start)
            fl_buf_puts(b, " (first record: no job_start)");
    } else {
        fl_buf_puts(b, "n/a");
    }
    fl_buf_puts(b, "\n");
    label(b, "end");
    if (f->have_end) {
        time_text(b, f->end_ns);
        fl_buf_puts(b, m->have_shutdown ? " (shutdown)" : " (last record)");
    } else {
        fl_buf_puts(b, "n/a");
    }
    fl_buf_puts(b, "\n");
    label(b, "duration");
    if (f->have_start && f->have_end)
        dur_text(b, f->duration_ns);
    else
        fl_buf_puts(b, "n/a");
    fl_buf_puts(b, "\n");
    label(b, "session");
    put_line(b, m->session_kind ? m->session_kind : "n/a", 40);
    if (m->engine) {
        fl_buf_puts(b, ", engine ");
        put_line(b, m->engine, 40);
    }
    fl_buf_puts(b, "\n");
    if (f->crashed && r->live)
        fl_buf_puts(b, "  the session is still recording: the report covers what reached the "
                       "disk so far\n");
    else if (f->crashed)
        fl_buf_puts(b, "  the process did not shut down the recorder (crashed or killed): the "
                       "report covers what reached the disk\n");
    const json_t *sd = m->shutdown;
    if (json_is_true(json_object_get(sd, "crashed")) ||
        json_is_integer(json_object_get(sd, "signal"))) {
        label(b, "program ended");
        if (json_is_integer(json_object_get(sd, "signal")))
            fl_buf_printf(b, "by signal %" PRId64,
                          (int64_t)json_integer_value(json_object_get(sd, "signal")));
        else if (json_is_integer(json_object_get(sd, "exit_code")))
            fl_buf_printf(b, "with exit code %" PRId64,
                          (int64_t)json_integer_value(json_object_get(sd, "exit_code")));
        fl_buf_puts(b, json_is_true(json_object_get(sd, "crashed")) ? " (crashed)\n" : "\n");
    }
    label(b, "kernels");
    if (r->kernel_launches) {
        fl_buf_printf(b, "%" PRIu64 " %s  ", r->kernel_launches,
                      plural(r->kernel_launches, "launch", "launches"));
        dur_text(b, r->kernel_ns);
        fl_buf_printf(b, " GPU time  %zu distinct\n", r->n_k);
    } else {
        fl_buf_puts(b, "none\n");
    }
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->kernels)
            continue;
        label(b, "GPU busy");
        if (f->duration_ns) {
            fl_buf_printf(b, "%.1f%%  ", busy_pct(d, f->duration_ns));
        } else {
            fl_buf_puts(b, "n/a  ");
        }
        gpu_label(b, d->id);
        if (d->id == DEVICE_UNKNOWN)
            fl_buf_puts(b, " (the kernel rows do not say their device: all devices together)");
        else
            fl_buf_puts(b, " (union of its kernels' intervals over the duration)");
        fl_buf_puts(b, "\n");
    }
    label(b, "memcpy");
    if (f->copies) {
        fl_buf_printf(b, "%" PRIu64 " %s  ", f->copies, plural(f->copies, "copy", "copies"));
        bytes_text(b, (double)f->copy_bytes);
        fl_buf_puts(b, "  ");
        dur_text(b, f->copy_ns);
        fl_buf_puts(b, "\n");
    } else {
        fl_buf_puts(b, "none\n");
    }
    label(b, "memset");
    if (r->memsets.count) {
        fl_buf_printf(b, "%" PRIu64 " %s  ", r->memsets.count,
                      plural(r->memsets.count, "memset", "memsets"));
        bytes_text(b, (double)r->memsets.bytes);
        fl_buf_puts(b, "  ");
        dur_text(b, r->memsets.time_ns);
        fl_buf_puts(b, "\n");
    } else {
        fl_buf_puts(b, "none\n");
    }
    label(b, "util.gpu");
    if (f->have_util)
        fl_buf_printf(b, "mean %.1f%% (every sample of every device)\n", f->util_mean);
    else
        fl_buf_puts(b, "n/a\n");
    label(b, "memory used");
    if (f->have_used) {
        fl_buf_puts(b, "peak ");
        bytes_text(b, f->used_peak_mib * 1048576.0);
        fl_buf_puts(b, " (");
        gpu_label(b, f->used_peak_dev);
        fl_buf_puts(b, ")\n");
    } else {
        fl_buf_puts(b, "n/a\n");
    }
    label(b, "power");
    if (f->have_power)
        fl_buf_printf(b, "mean %.1f W (sum of the devices' means)  peak %.1f W (one device)\n",
                      f->power_mean_sum_w, f->power_peak_w);
    else
        fl_buf_puts(b, "n/a\n");
    label(b, "energy");
    if (f->have_energy)
        fl_buf_printf(b, "%.3f J (%s%s)\n", f->energy_j,
                      strcmp(f->energy_source, "counter") == 0          ? "counter"
                      : strcmp(f->energy_source, "power_integral") == 0 ? "power integral"
                                                                        : "counter and power "
                                                                          "integral",
                      f->energy_partial ? "; some devices have none" : "");
    else
        fl_buf_puts(b, "n/a\n");
    if (r->graphs || r->syncs || r->allocs || r->frees) {
        label(b, "other");
        const char *sep = "";
        if (r->graphs) {
            fl_buf_printf(b, "%" PRIu64 " graph %s ", r->graphs,
                          plural(r->graphs, "launch", "launches"));
            dur_text(b, r->graph_ns);
            sep = "  ";
        }
        if (r->syncs) {
            fl_buf_printf(b, "%s%" PRIu64 " %s ", sep, r->syncs,
                          plural(r->syncs, "synchronization", "synchronizations"));
            dur_text(b, r->sync_ns);
            sep = "  ";
        }
        if (r->allocs || r->frees)
            fl_buf_printf(b, "%s%" PRIu64 " allocations %" PRIu64 " frees", sep, r->allocs,
                          r->frees);
        fl_buf_puts(b, "\n");
    }
}

static void text_scopes(const fl_report *r, const figures *f, fl_buf *b)
{
    fl_buf_printf(b, "\nscopes  %zu %s  (p50/p99 within %.1f%%)\n", r->n_s,
                  plural(r->n_s, "name", "names"), PCT_ERROR);
    if (r->n_s == 0) {
        fl_buf_puts(b, "  none recorded\n");
    } else {
        fl_buf_printf(b, "  %-5s %7s %11s %10s %10s %10s %12s  %s\n", "kind", "count", "total ms",
                      "mean ms", "p50 ms", "p99 ms", "GPU ms in", "name");
        for (size_t i = 0; i < r->n_s; i++) {
            const sstat *s = &r->s[f->sorder[i]];
            fl_buf_printf(b, "  %-5s %7" PRIu64 " ", s->nvtx ? "NVTX" : "scope", s->count);
            if (s->count) {
                fl_buf_printf(b, "%11.3f %10.3f %10.3f %10.3f ", (double)s->total_ns / 1e6,
                              (double)s->total_ns / (double)s->count / 1e6,
                              (double)hist_pct(&s->h, s->count, 50, s->min_ns, s->max_ns) / 1e6,
                              (double)hist_pct(&s->h, s->count, 99, s->min_ns, s->max_ns) / 1e6);
            } else {
                fl_buf_printf(b, "%11s %10s %10s %10s ", "-", "-", "-", "-");
            }
            if (s->nvtx || !r->kernel_launches)
                fl_buf_printf(b, "%12s  ", "-");
            else
                fl_buf_printf(b, "%12.3f  ", (double)s->gpu_ns / 1e6);
            put_line(b, s->name, 100);
            if (s->open_at_end)
                fl_buf_printf(b, "  (%" PRIu64 " still open at the end)", s->open_at_end);
            fl_buf_puts(b, "\n");
        }
    }
    if (r->kernel_launches) {
        fl_buf_puts(b, "  kernel time       ");
        dur_text(b, r->kernel_scoped_ns);
        fl_buf_puts(b, " inside scopes, ");
        dur_text(b, r->kernel_global_ns);
        fl_buf_puts(b, " outside any, ");
        dur_text(b, r->kernel_unattributed_ns);
        fl_buf_puts(b, " not attributed (no user_scope)\n");
    }
    if (r->scope_unmatched_ends)
        fl_buf_printf(b, "  %" PRIu64 " scope %s without a begin (not counted)\n",
                      r->scope_unmatched_ends, plural(r->scope_unmatched_ends, "end", "ends"));
}

static void dim_text(fl_buf *b, bool varies, bool have, const uint32_t v[3])
{
    if (varies)
        fl_buf_puts(b, "varies");
    else if (have)
        fl_buf_printf(b, "(%" PRIu32 ",%" PRIu32 ",%" PRIu32 ")", v[0], v[1], v[2]);
    else
        fl_buf_puts(b, "n/a");
}

static void text_hotspots(const fl_report *r, const figures *f, fl_buf *b)
{
    fl_buf_printf(b, "\nhotspots  top %zu of %zu %s by GPU time  (us; p50/p90/p99 within %.1f%%)\n",
                  f->top, r->n_k, plural(r->n_k, "kernel", "kernels"), PCT_ERROR);
    if (r->n_k == 0) {
        fl_buf_puts(b, "  no kernels recorded\n");
        return;
    }
    fl_buf_printf(b, "  %3s %8s %11s %6s %10s %10s %10s %10s %10s %10s  %s\n", "#", "calls",
                  "total ms", "time", "mean", "p50", "p90", "p99", "min", "max", "name");
    for (size_t i = 0; i < f->top; i++) {
        const kstat *k = &r->k[f->korder[i]];
        char buf[96];
        fl_buf_printf(b, "  %3zu %8" PRIu64 " %11.3f ", i + 1, k->count, (double)k->total_ns / 1e6);
        if (r->kernel_ns)
            fl_buf_printf(b, "%5.1f%% ", 100.0 * (double)k->total_ns / (double)r->kernel_ns);
        else
            fl_buf_printf(b, "%6s ", "-");
        fl_buf_printf(b, "%10.3f %10.3f %10.3f %10.3f %10.3f %10.3f  ",
                      (double)k->total_ns / (double)k->count / 1e3,
                      (double)hist_pct(&k->h, k->count, 50, k->min_ns, k->max_ns) / 1e3,
                      (double)hist_pct(&k->h, k->count, 90, k->min_ns, k->max_ns) / 1e3,
                      (double)hist_pct(&k->h, k->count, 99, k->min_ns, k->max_ns) / 1e3,
                      (double)k->min_ns / 1e3, (double)k->max_ns / 1e3);
        put_line(b, kernel_label(r, k, buf, sizeof buf), 100);
        fl_buf_puts(b, "\n      grid ");
        dim_text(b, k->grid_varies, k->have_detail && k->last.have_grid, k->last.grid);
        fl_buf_puts(b, "  block ");
        dim_text(b, k->block_varies, k->have_detail && k->last.have_block, k->last.block);
        fl_buf_puts(b, "  registers ");
        if (!k->have_regs)
            fl_buf_puts(b, "n/a");
        else if (k->regs_min != k->regs_max)
            fl_buf_printf(b, "varies (%" PRId64 "-%" PRId64 ")", k->regs_min, k->regs_max);
        else
            fl_buf_printf(b, "%" PRId64, k->regs_min);
        fl_buf_puts(b, "  occupancy ");
        if (k->occ_varies)
            fl_buf_puts(b, "varies");
        else if (k->have_detail && !isnan(k->last.occupancy))
            fl_buf_printf(b, "%.1f%%", 100.0 * k->last.occupancy);
        else
            fl_buf_puts(b, "n/a");
        fl_buf_puts(b, "  limited by ");
        if (k->lim_varies)
            fl_buf_puts(b, "varies");
        else if (k->have_detail && k->last.limiting)
            put_line(b, k->last.limiting, 20);
        else
            fl_buf_puts(b, "n/a");
        fl_buf_puts(b, "\n");
    }
    if (r->n_k > f->top) {
        uint64_t calls = 0, ns = 0;
        for (size_t i = f->top; i < r->n_k; i++) {
            calls += r->k[f->korder[i]].count;
            ns += r->k[f->korder[i]].total_ns;
        }
        fl_buf_printf(b, "  %3s %8" PRIu64 " %11.3f  (%zu more %s)\n", "", calls, (double)ns / 1e6,
                      r->n_k - f->top, plural(r->n_k - f->top, "kernel", "kernels"));
    }
    if (r->m->details_missing)
        fl_buf_printf(b, "  %" PRIu64 " kernel %s announced a kernel_detail that was not found\n",
                      r->m->details_missing, plural(r->m->details_missing, "launch", "launches"));
}

static void text_ops_row(fl_buf *b, const char *name, const opstat *o)
{
    char bytes[32];
    bytes_str(bytes, sizeof bytes, (double)o->bytes);
    fl_buf_printf(b, "  %-8s %8" PRIu64 " %12s %11.3f ", name, o->count, bytes,
                  (double)o->time_ns / 1e6);
    if (o->time_ns)
        fl_buf_printf(b, "%9.2f\n", (double)o->bytes / (double)o->time_ns);
    else
        fl_buf_printf(b, "%9s\n", "-");
}

static void text_memory(const fl_report *r, const figures *f, fl_buf *b)
{
    fl_buf_puts(b, "\nmemcpy / memset\n");
    if (f->copies == 0 && r->memsets.count == 0) {
        fl_buf_puts(b, "  none recorded\n");
        return;
    }
    fl_buf_printf(b, "  %-8s %8s %12s %11s %9s\n", "kind", "count", "bytes", "time ms", "GB/s");
    static const uint64_t first[] = {1, 2, 8, 10};
    for (size_t i = 0; i < 4; i++)
        if (r->copies[first[i]].count)
            text_ops_row(b, fl_copy_kind_name(first[i]), &r->copies[first[i]]);
    for (uint64_t k = 0; k < 257; k++) {
        if (!r->copies[k].count || fl_copy_kind_name(k))
            continue;
        char buf[32];
        text_ops_row(b, copy_label(k, buf, sizeof buf), &r->copies[k]);
    }
    if (r->memsets.count)
        text_ops_row(b, "memset", &r->memsets);
}

static void text_devices(const fl_report *r, const figures *f, fl_buf *b)
{
    size_t shown = 0;
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->samples)
            continue;
        if (shown++ == 0)
            fl_buf_puts(b, "\ndevices\n");
        fl_buf_puts(b, "  ");
        gpu_label(b, d->id);
        const char *name = device_name(r->m, d->id);
        if (name) {
            fl_buf_puts(b, "  ");
            put_line(b, name, 80);
        }
        fl_buf_printf(b, "  %" PRIu64 " %s\n", d->samples, plural(d->samples, "sample", "samples"));
        fl_buf_printf(b, "    %-18s", "util.gpu");
        if (d->util_gpu.n)
            fl_buf_printf(b, "mean %.1f%%  max %.0f%%\n", d->util_gpu.sum / (double)d->util_gpu.n,
                          d->util_gpu.max);
        else
            fl_buf_puts(b, "n/a\n");
        fl_buf_printf(b, "    %-18s", "util.mem");
        if (d->util_mem.n)
            fl_buf_printf(b, "mean %.1f%%  max %.0f%%\n", d->util_mem.sum / (double)d->util_mem.n,
                          d->util_mem.max);
        else
            fl_buf_puts(b, "n/a\n");
        fl_buf_printf(b, "    %-18s", "memory used");
        if (d->used.n) {
            fl_buf_puts(b, "peak ");
            bytes_text(b, d->used.max * 1048576.0);
            if (d->have_total) {
                fl_buf_puts(b, " of ");
                bytes_text(b, d->total_mib * 1048576.0);
            }
            fl_buf_puts(b, "\n");
        } else {
            fl_buf_puts(b, "n/a\n");
        }
        fl_buf_printf(b, "    %-18s", "temperature");
        if (d->temp.n)
            fl_buf_printf(b, "max %.0f C\n", d->temp.max);
        else
            fl_buf_puts(b, "n/a\n");
        fl_buf_printf(b, "    %-18s", "power");
        if (d->power.n)
            fl_buf_printf(b, "mean %.1f W  max %.1f W\n",
                          d->power.sum / (double)d->power.n / 1000.0, d->power.max / 1000.0);
        else
            fl_buf_puts(b, "n/a\n");
        fl_buf_printf(b, "    %-18s", "clocks");
        if (d->clock_sm.n || d->clock_mem.n) {
            if (d->clock_sm.n)
                fl_buf_printf(b, "SM mean %.0f MHz", d->clock_sm.sum / (double)d->clock_sm.n);
            if (d->clock_mem.n)
                fl_buf_printf(b, "%smem mean %.0f MHz", d->clock_sm.n ? "  " : "",
                              d->clock_mem.sum / (double)d->clock_mem.n);
            fl_buf_puts(b, "\n");
        } else {
            fl_buf_puts(b, "n/a\n");
        }
        fl_buf_printf(b, "    %-18s", "energy");
        double j;
        const char *src;
        if (device_energy(d, &j, &src))
            fl_buf_printf(b, "%.3f J (%s)\n", j, src[0] == 'c' ? "counter" : "power integral");
        else
            fl_buf_puts(b, "n/a\n");
    }
}

static void text_host(const fl_report *r, fl_buf *b)
{
    if (!r->host_samples)
        return;
    fl_buf_puts(b, "\nhost  ");
    const char *h = r->host_name ? r->host_name : r->m->hostname;
    put_line(b, h ? h : "n/a", 80);
    fl_buf_printf(b, "  %" PRIu64 " %s\n", r->host_samples,
                  plural(r->host_samples, "sample", "samples"));
    label(b, "CPU");
    if (r->cpu.n)
        fl_buf_printf(b, "mean %.1f%%  max %.1f%%\n", r->cpu.sum / (double)r->cpu.n, r->cpu.max);
    else
        fl_buf_puts(b, "n/a\n");
    label(b, "RAM used");
    if (r->ram_used.n) {
        fl_buf_puts(b, "peak ");
        bytes_text(b, r->ram_used.max * 1048576.0);
        if (r->have_ram_total) {
            fl_buf_puts(b, " of ");
            bytes_text(b, r->ram_total_mib * 1048576.0);
        }
        fl_buf_puts(b, "\n");
    } else {
        fl_buf_puts(b, "n/a\n");
    }
}

static const char *stall_label(const fl_report *r, const stallstat *s, char *buf, size_t len)
{
    const char *n = s->metric_id ? fl_model_metric_name(r->m, s->metric_id) : NULL;
    if (n)
        return n;
    snprintf(buf, len, "stall reason %" PRIu64, s->reason);
    return buf;
}

static void text_stalls(const fl_report *r, fl_buf *b)
{
    if (r->n_st) {
        fl_buf_printf(b, "\nstalls  %" PRIu64 " PC %s\n", r->pc_samples,
                      plural(r->pc_samples, "sample", "samples"));
        for (size_t i = 0; i < r->n_st; i++) {
            char buf[48];
            const stallstat *s = &r->st[i];
            fl_buf_printf(b, "  %10" PRIu64 " %6.1f%%  ", s->samples,
                          100.0 * (double)s->samples / (double)r->pc_samples);
            put_line(b, stall_label(r, s, buf, sizeof buf), 80);
            fl_buf_puts(b, "\n");
        }
        size_t nf = r->n_fn < 10 ? r->n_fn : 10;
        if (nf)
            fl_buf_puts(b, "  functions with the most samples\n");
        for (size_t i = 0; i < nf; i++) {
            const fnstat *fn = &r->fn[i];
            const char *name = fl_model_function_name(r->m, fn->function_id);
            fl_buf_printf(b, "  %10" PRIu64 " %6.1f%%  ", fn->samples,
                          100.0 * (double)fn->samples / (double)r->pc_samples);
            if (name)
                put_line(b, name, 100);
            else
                fl_buf_printf(b, "(function id %" PRIu64 ")", fn->function_id);
            fl_buf_puts(b, "\n");
        }
    }
    if (r->sass_rows)
        fl_buf_printf(b, "  %" PRIu64 " SASS metric %s (not summarised here)\n", r->sass_rows,
                      plural(r->sass_rows, "row", "rows"));
}

static void text_perf(const fl_report *r, fl_buf *b)
{
    if (r->n_pm) {
        fl_buf_puts(b, "\nperf metrics\n");
        fl_buf_printf(b, "  %8s %14s %14s %14s  %s\n", "samples", "mean", "min", "max", "metric");
        for (size_t i = 0; i < r->n_pm; i++) {
            const pmstat *p = &r->pm[i];
            const char *name = fl_model_metric_name(r->m, p->metric_id);
            fl_buf_printf(b, "  %8" PRIu64 " %14.3f %14.3f %14.3f  ", p->n, p->sum / (double)p->n,
                          p->min, p->max);
            if (name)
                put_line(b, name, 100);
            else
                fl_buf_printf(b, "(metric id %" PRIu64 ")", p->metric_id);
            fl_buf_puts(b, "\n");
        }
    }
}

static void text_capture(const fl_report *r, fl_buf *b)
{
    const json_t *c = r->m->caps;
    fl_buf_puts(b, "\ncaptured");
    if (!c) {
        fl_buf_puts(b, "  no capture_capabilities record\n");
        return;
    }
    const char *req = jget_str(c, "requested_engine"), *sel = jget_str(c, "selected_engine");
    fl_buf_puts(b, "  requested ");
    put_line(b, req ? req : "n/a", 40);
    fl_buf_puts(b, ", selected ");
    put_line(b, sel ? sel : "n/a", 40);
    fl_buf_puts(b, "\n");
    const json_t *caps = json_object_get(c, "capabilities");
    for (size_t i = 0; i < json_array_size(caps); i++) {
        const json_t *e = json_array_get(caps, i);
        const char *feat = jget_str(e, "feature"), *st = jget_str(e, "status");
        const char *reason = jget_str(e, "reason_code"), *msg = jget_str(e, "message");
        fl_buf_puts(b, "  ");
        size_t before = b->len;
        put_line(b, feat ? feat : "?", 40);
        size_t w = b->len - before;
        fl_buf_printf(b, "%*s", w < 22 ? (int)(22 - w) : 1, "");
        put_line(b, st ? st : "?", 30);
        fl_cap_status cs = fl_cap_status_of(st);
        bool degraded = cs == FL_CAP_FALLBACK || cs == FL_CAP_PARTIAL || cs == FL_CAP_SKIPPED;
        if (degraded || (msg && msg[0])) {
            if (reason && reason[0]) {
                fl_buf_puts(b, " (");
                put_line(b, reason, 60);
                fl_buf_puts(b, ")");
            }
            if (msg && msg[0]) {
                fl_buf_puts(b, ": ");
                put_line(b, msg, 300);
            }
        }
        fl_buf_puts(b, "\n");
    }
}

static void text_reader(const fl_report *r, fl_buf *b)
{
    const fl_model *m = r->m;
    const fl_read_result *res = &r->res;
    bool any = (r->have_res &&
                (res->bad_lines || res->bad_records || res->other_session || res->gz_errors)) ||
               m->bad_rows || r->warnings || r->oom || m->oom || m->details_orphan;
    if (!any)
        return;
    fl_buf_puts(b, "\npartial read:");
    const char *sep = " ";
    if (r->have_res) {
        if (res->bad_lines) {
            fl_buf_printf(b, "%s%" PRIu64 " unreadable %s (not JSON or cut)", sep, res->bad_lines,
                          plural(res->bad_lines, "line", "lines"));
            sep = ", ";
        }
        if (res->bad_records) {
            fl_buf_printf(b, "%s%" PRIu64 " unusable %s", sep, res->bad_records,
                          plural(res->bad_records, "record", "records"));
            sep = ", ";
        }
        if (res->other_session) {
            fl_buf_printf(b, "%s%" PRIu64 " %s of another session dropped", sep, res->other_session,
                          plural(res->other_session, "record", "records"));
            sep = ", ";
        }
        if (res->gz_errors) {
            fl_buf_printf(b, "%s%" PRIu64 " broken gzip %s", sep, res->gz_errors,
                          plural(res->gz_errors, "stream", "streams"));
            sep = ", ";
        }
    }
    if (m->bad_rows) {
        fl_buf_printf(b, "%s%" PRIu64 " unusable %s or dictionary %s", sep, m->bad_rows,
                      plural(m->bad_rows, "row", "rows"), plural(m->bad_rows, "entry", "entries"));
        sep = ", ";
    }
    if (m->details_orphan) {
        fl_buf_printf(b, "%s%" PRIu64 " kernel_detail %s no kernel row claimed", sep,
                      m->details_orphan, plural(m->details_orphan, "record", "records"));
        sep = ", ";
    }
    if (r->oom || m->oom) {
        fl_buf_printf(b, "%sout of memory: some figures are short", sep);
        sep = ", ";
    }
    if (r->warnings) {
        fl_buf_printf(b, "%s%" PRIu64 " reader %s", sep, r->warnings,
                      plural(r->warnings, "warning", "warnings"));
    }
    fl_buf_puts(b, "\n");
    for (size_t i = 0; i < MAX_WARNINGS_KEPT && i < r->warnings; i++) {
        if (!r->warning_text[i])
            continue;
        fl_buf_puts(b, "  ");
        put_line(b, r->warning_text[i], 300);
        fl_buf_puts(b, "\n");
    }
}

void fl_report_text_sections(const fl_report *r, int top_n, unsigned sections, fl_buf *out)
{
    if (sections == 0)
        sections = GPUFL_SECTION_ALL;
    figures f;
    if (!compute(r, top_n, &f)) {
        figures_free(&f);
        fl_buf_puts(out, "report: out of memory\n");
        return;
    }
    /* The whole report is the concatenation of its sections, each of
     * which brings its own leading blank line: a caller asking for one
     * section (an analyzer's inspect_* method) gets exactly its part. */
    if (sections & GPUFL_SECTION_SUMMARY)
        text_summary(r, &f, out);
    if (sections & GPUFL_SECTION_SCOPES)
        text_scopes(r, &f, out);
    if (sections & GPUFL_SECTION_HOTSPOTS)
        text_hotspots(r, &f, out);
    if (sections & GPUFL_SECTION_MEMORY)
        text_memory(r, &f, out);
    if (sections & GPUFL_SECTION_DEVICES)
        text_devices(r, &f, out);
    if (sections & GPUFL_SECTION_HOST)
        text_host(r, out);
    if (sections & GPUFL_SECTION_STALLS)
        text_stalls(r, out);
    if (sections & GPUFL_SECTION_PERF)
        text_perf(r, out);
    if (sections & GPUFL_SECTION_CAPTURE)
        text_capture(r, out);
    if (sections & GPUFL_SECTION_READ)
        text_reader(r, out);
    figures_free(&f);
}

void fl_report_text(const fl_report *r, int top_n, fl_buf *out)
{
    fl_report_text_sections(r, top_n, GPUFL_SECTION_ALL, out);
}

/* =============================================================== JSON */

/* A compact JSON writer: sep() before every value, a key resets it. */
typedef struct jw {
    fl_buf *b;
    bool comma;
} jw;

static void j_sep(jw *w)
{
    if (w->comma)
        fl_buf_put(w->b, ",", 1);
    w->comma = true;
}

static void j_key(jw *w, const char *k)
{
    j_sep(w);
    fl_buf_str(w->b, k);
    fl_buf_put(w->b, ":", 1);
    w->comma = false;
}

static void j_open(jw *w, const char *key, char c)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_put(w->b, &c, 1);
    w->comma = false;
}

static void j_close(jw *w, char c)
{
    fl_buf_put(w->b, &c, 1);
    w->comma = true;
}

static void j_u64(jw *w, const char *key, uint64_t v)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_u64(w->b, v);
}

static void j_i64(jw *w, const char *key, int64_t v)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_i64(w->b, v);
}

static void j_dbl(jw *w, const char *key, bool ok, double v)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_opt_double(w->b, ok, v);
}

static void j_opt_u64(jw *w, const char *key, bool ok, uint64_t v)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_opt_u64(w->b, ok, v);
}

static void j_str(jw *w, const char *key, const char *s)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_str(w->b, s);
}

static void j_bool(jw *w, const char *key, bool v)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    fl_buf_puts(w->b, v ? "true" : "false");
}

static void j_raw_json(jw *w, const char *key, const json_t *v)
{
    if (key)
        j_key(w, key);
    j_sep(w);
    if (!v) {
        fl_buf_puts(w->b, "null");
        return;
    }
    /* Strings and numbers of the record, re-emitted through our own
     * conventions (escaping, fixed-point reals). */
    if (json_is_string(v)) {
        fl_buf_str(w->b, json_string_value(v));
    } else if (json_is_integer(v)) {
        fl_buf_i64(w->b, (int64_t)json_integer_value(v));
    } else if (json_is_real(v)) {
        fl_buf_double(w->b, json_real_value(v));
    } else if (json_is_true(v) || json_is_false(v)) {
        fl_buf_puts(w->b, json_is_true(v) ? "true" : "false");
    } else {
        fl_buf_puts(w->b, "null");
    }
}

static void j_dim(jw *w, const char *key, bool varies, bool have, const uint32_t v[3])
{
    char buf[48];
    if (varies)
        j_str(w, key, "varies");
    else if (have) {
        snprintf(buf, sizeof buf, "(%" PRIu32 ",%" PRIu32 ",%" PRIu32 ")", v[0], v[1], v[2]);
        j_str(w, key, buf);
    } else
        j_str(w, key, NULL);
}

static void j_device_id(jw *w, const char *key, int64_t id)
{
    if (id == DEVICE_UNKNOWN)
        j_str(w, key, NULL);
    else
        j_i64(w, key, id);
}

static void json_session(const fl_report *r, const figures *f, jw *w)
{
    const fl_model *m = r->m;
    j_open(w, "session", '{');
    j_str(w, "app", m->app);
    j_str(w, "session_id", m->session_id);
    j_str(w, "hostname", m->hostname);
    if (m->have_pid)
        j_i64(w, "pid", m->pid);
    else
        j_str(w, "pid", NULL);
    j_opt_u64(w, "start_ns", f->have_start, f->start_ns);
    j_str(w, "start_source",
          m->have_start   ? fl_type_name(FL_T_JOB_START)
          : f->have_start ? "first_record"
                          : NULL);
    j_opt_u64(w, "end_ns", f->have_end, f->end_ns);
    j_str(w, "end_source", f->end_source);
    j_opt_u64(w, "duration_ns", f->have_start && f->have_end, f->duration_ns);
    j_str(w, "session_kind", m->session_kind);
    j_str(w, "profiling_engine", m->engine);
    j_bool(w, "crashed", f->crashed && !r->live);
    j_bool(w, "recording", r->live);
    /* A launcher's shutdown says how the program ended. */
    j_raw_json(w, "exit_code", json_object_get(m->shutdown, "exit_code"));
    j_raw_json(w, "signal", json_object_get(m->shutdown, "signal"));
    j_raw_json(w, "program_crashed", json_object_get(m->shutdown, "crashed"));
    j_open(w, "devices", '[');
    for (size_t i = 0; i < m->n_devices; i++) {
        j_open(w, NULL, '{');
        j_i64(w, "id", m->devices[i].id);
        j_str(w, "name", m->devices[i].name);
        j_str(w, "uuid", m->devices[i].uuid);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

static void json_summary(const fl_report *r, const figures *f, jw *w)
{
    j_open(w, "summary", '{');
    j_u64(w, "kernel_launches", r->kernel_launches);
    j_u64(w, "kernel_distinct", r->n_k);
    j_u64(w, "kernel_time_ns", r->kernel_ns);
    j_open(w, "gpu_busy", '[');
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->kernels)
            continue;
        j_open(w, NULL, '{');
        j_device_id(w, "device_id", d->id);
        j_u64(w, "kernel_launches", d->kernels);
        j_u64(w, "kernel_time_ns", d->kernel_ns);
        j_u64(w, "busy_ns", busy_of(d));
        j_dbl(w, "busy_pct", f->duration_ns > 0, f->duration_ns ? busy_pct(d, f->duration_ns) : 0);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_u64(w, "memcpy_count", f->copies);
    j_u64(w, "memcpy_bytes", f->copy_bytes);
    j_u64(w, "memcpy_time_ns", f->copy_ns);
    j_u64(w, "memset_count", r->memsets.count);
    j_u64(w, "memset_bytes", r->memsets.bytes);
    j_u64(w, "memset_time_ns", r->memsets.time_ns);
    j_u64(w, "graph_launches", r->graphs);
    j_u64(w, "graph_time_ns", r->graph_ns);
    j_u64(w, "synchronizations", r->syncs);
    j_u64(w, "synchronization_time_ns", r->sync_ns);
    j_u64(w, "allocations", r->allocs);
    j_u64(w, "frees", r->frees);
    j_dbl(w, "util_gpu_mean_pct", f->have_util, f->util_mean);
    j_opt_u64(w, "mem_used_peak_bytes", f->have_used,
              (uint64_t)(f->used_peak_mib * 1048576.0 + 0.5));
    if (f->have_used)
        j_device_id(w, "mem_used_peak_device_id", f->used_peak_dev);
    else
        j_str(w, "mem_used_peak_device_id", NULL);
    j_dbl(w, "power_mean_sum_w", f->have_power, f->power_mean_sum_w);
    j_dbl(w, "power_peak_w", f->have_power, f->power_peak_w);
    j_dbl(w, "energy_j", f->have_energy, f->energy_j);
    j_str(w, "energy_source", f->have_energy ? f->energy_source : NULL);
    j_bool(w, "energy_partial", f->energy_partial);
    j_close(w, '}');
}

static void json_scopes(const fl_report *r, const figures *f, jw *w)
{
    j_open(w, "scopes", '{');
    j_dbl(w, "percentile_max_error_pct", true, PCT_ERROR);
    j_u64(w, "kernel_time_in_scopes_ns", r->kernel_scoped_ns);
    j_u64(w, "kernel_time_outside_scopes_ns", r->kernel_global_ns);
    j_u64(w, "kernel_time_unattributed_ns", r->kernel_unattributed_ns);
    j_u64(w, "unmatched_ends", r->scope_unmatched_ends);
    j_open(w, "items", '[');
    for (size_t i = 0; i < r->n_s; i++) {
        const sstat *s = &r->s[f->sorder[i]];
        bool n = s->count > 0;
        j_open(w, NULL, '{');
        j_str(w, "name", s->name);
        j_str(w, "kind", s->nvtx ? "nvtx" : "scope");
        j_u64(w, "count", s->count);
        j_u64(w, "total_ns", s->total_ns);
        j_dbl(w, "mean_ns", n, n ? (double)s->total_ns / (double)s->count : 0);
        j_opt_u64(w, "min_ns", n, s->min_ns);
        j_opt_u64(w, "max_ns", n, s->max_ns);
        j_opt_u64(w, "p50_ns", n, hist_pct(&s->h, s->count, 50, s->min_ns, s->max_ns));
        j_opt_u64(w, "p99_ns", n, hist_pct(&s->h, s->count, 99, s->min_ns, s->max_ns));
        /* null for NVTX ranges (user_scope names gpufl scopes only) and
         * when no kernel was recorded at all (Monitor). */
        bool gpu = !s->nvtx && r->kernel_launches > 0;
        j_opt_u64(w, "gpu_time_inside_ns", gpu, s->gpu_ns);
        j_opt_u64(w, "kernel_launches_inside", gpu, s->kernels);
        j_u64(w, "open_at_end", s->open_at_end);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

static void json_hotspots(const fl_report *r, const figures *f, jw *w)
{
    j_open(w, "hotspots", '{');
    j_u64(w, "distinct_kernels", r->n_k);
    j_u64(w, "top_n", f->top);
    j_dbl(w, "percentile_max_error_pct", true, PCT_ERROR);
    j_u64(w, "details_missing", r->m->details_missing);
    j_open(w, "kernels", '[');
    for (size_t i = 0; i < f->top; i++) {
        const kstat *k = &r->k[f->korder[i]];
        char buf[96];
        j_open(w, NULL, '{');
        j_u64(w, "rank", i + 1);
        j_u64(w, "kernel_id", k->kernel_id);
        j_str(w, "name", kernel_label(r, k, buf, sizeof buf));
        j_bool(w, "name_known", fl_model_kernel_name(r->m, k->kernel_id) != NULL);
        j_u64(w, "count", k->count);
        j_u64(w, "total_ns", k->total_ns);
        j_dbl(w, "time_pct", r->kernel_ns > 0,
              100.0 * (double)k->total_ns / (double)(r->kernel_ns ? r->kernel_ns : 1));
        j_dbl(w, "mean_ns", true, (double)k->total_ns / (double)k->count);
        j_u64(w, "p50_ns", hist_pct(&k->h, k->count, 50, k->min_ns, k->max_ns));
        j_u64(w, "p90_ns", hist_pct(&k->h, k->count, 90, k->min_ns, k->max_ns));
        j_u64(w, "p99_ns", hist_pct(&k->h, k->count, 99, k->min_ns, k->max_ns));
        j_u64(w, "min_ns", k->min_ns);
        j_u64(w, "max_ns", k->max_ns);
        j_dim(w, "grid", k->grid_varies, k->have_detail && k->last.have_grid, k->last.grid);
        j_dim(w, "block", k->block_varies, k->have_detail && k->last.have_block, k->last.block);
        j_opt_u64(w, "registers_min", k->have_regs, (uint64_t)k->regs_min);
        j_opt_u64(w, "registers_max", k->have_regs, (uint64_t)k->regs_max);
        if (k->smem_varies)
            j_str(w, "static_shared_bytes", "varies");
        else
            j_opt_u64(w, "static_shared_bytes", k->have_detail && k->last.static_shared >= 0,
                      (uint64_t)k->last.static_shared);
        if (k->occ_varies)
            j_str(w, "occupancy_pct", "varies");
        else
            j_dbl(w, "occupancy_pct", k->have_detail && !isnan(k->last.occupancy),
                  100.0 * k->last.occupancy);
        if (k->lim_varies)
            j_str(w, "limiting_resource", "varies");
        else
            j_str(w, "limiting_resource", k->have_detail ? k->last.limiting : NULL);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

static void json_ops(jw *w, const opstat *o)
{
    j_u64(w, "count", o->count);
    j_u64(w, "bytes", o->bytes);
    j_u64(w, "time_ns", o->time_ns);
    j_dbl(w, "throughput_gb_per_s", o->time_ns > 0,
          (double)o->bytes / (double)(o->time_ns ? o->time_ns : 1));
}

static void json_memory(const fl_report *r, jw *w)
{
    j_open(w, "memcpy", '[');
    static const uint64_t first[] = {1, 2, 8, 10};
    for (size_t i = 0; i < 4 + 257; i++) {
        uint64_t k = i < 4 ? first[i] : i - 4;
        if (i >= 4 && fl_copy_kind_name(k))
            continue;
        if (!r->copies[k].count)
            continue;
        char buf[32];
        j_open(w, NULL, '{');
        j_str(w, "kind", copy_label(k, buf, sizeof buf));
        j_opt_u64(w, "copy_kind", k < 256, k);
        json_ops(w, &r->copies[k]);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_open(w, "memset", '{');
    json_ops(w, &r->memsets);
    j_close(w, '}');
}

static void j_acc(jw *w, const char *mean_key, const char *max_key, const acc *a, double scale)
{
    j_dbl(w, mean_key, a->n > 0, a->n ? a->sum / (double)a->n * scale : 0);
    if (max_key)
        j_dbl(w, max_key, a->n > 0, a->max * scale);
}

static void json_devices(const fl_report *r, const figures *f, jw *w)
{
    j_open(w, "devices", '[');
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->samples)
            continue;
        j_open(w, NULL, '{');
        j_i64(w, "device_id", d->id);
        j_str(w, "name", device_name(r->m, d->id));
        j_u64(w, "samples", d->samples);
        j_acc(w, "util_gpu_mean_pct", "util_gpu_max_pct", &d->util_gpu, 1);
        j_acc(w, "util_mem_mean_pct", "util_mem_max_pct", &d->util_mem, 1);
        j_opt_u64(w, "mem_used_peak_bytes", d->used.n > 0,
                  (uint64_t)(d->used.max * 1048576.0 + 0.5));
        j_opt_u64(w, "mem_total_bytes", d->have_total, (uint64_t)(d->total_mib * 1048576.0 + 0.5));
        j_dbl(w, "temp_max_c", d->temp.n > 0, d->temp.max);
        j_acc(w, "power_mean_w", "power_max_w", &d->power, 1e-3);
        j_acc(w, "clock_sm_mean_mhz", NULL, &d->clock_sm, 1);
        j_acc(w, "clock_mem_mean_mhz", NULL, &d->clock_mem, 1);
        double j = 0;
        const char *src = NULL;
        bool e = device_energy(d, &j, &src);
        j_dbl(w, "energy_j", e, j);
        j_str(w, "energy_source", e ? src : NULL);
        j_close(w, '}');
    }
    j_close(w, ']');
}

static void json_host(const fl_report *r, jw *w)
{
    if (!r->host_samples) {
        j_str(w, "host", NULL);
        return;
    }
    j_open(w, "host", '{');
    j_str(w, "hostname", r->host_name ? r->host_name : r->m->hostname);
    j_u64(w, "samples", r->host_samples);
    j_acc(w, "cpu_mean_pct", "cpu_max_pct", &r->cpu, 1);
    j_opt_u64(w, "ram_used_peak_bytes", r->ram_used.n > 0,
              (uint64_t)(r->ram_used.max * 1048576.0 + 0.5));
    j_opt_u64(w, "ram_total_bytes", r->have_ram_total,
              (uint64_t)(r->ram_total_mib * 1048576.0 + 0.5));
    j_close(w, '}');
}

static void json_stalls(const fl_report *r, jw *w)
{
    if (!r->n_st && !r->sass_rows) {
        j_str(w, "stalls", NULL);
    } else {
        j_open(w, "stalls", '{');
        j_u64(w, "pc_samples", r->pc_samples);
        j_u64(w, "sass_metric_rows", r->sass_rows);
        j_open(w, "reasons", '[');
        for (size_t i = 0; i < r->n_st; i++) {
            const stallstat *s = &r->st[i];
            j_open(w, NULL, '{');
            j_u64(w, "stall_reason", s->reason);
            j_str(w, "name", s->metric_id ? fl_model_metric_name(r->m, s->metric_id) : NULL);
            j_u64(w, "samples", s->samples);
            j_close(w, '}');
        }
        j_close(w, ']');
        j_open(w, "functions", '[');
        for (size_t i = 0; i < r->n_fn && i < 10; i++) {
            const fnstat *fn = &r->fn[i];
            j_open(w, NULL, '{');
            j_u64(w, "function_id", fn->function_id);
            j_str(w, "name", fl_model_function_name(r->m, fn->function_id));
            j_u64(w, "samples", fn->samples);
            j_close(w, '}');
        }
        j_close(w, ']');
        j_close(w, '}');
    }
    if (!r->n_pm) {
        j_str(w, "perf_metrics", NULL);
        return;
    }
    j_open(w, "perf_metrics", '[');
    for (size_t i = 0; i < r->n_pm; i++) {
        const pmstat *p = &r->pm[i];
        j_open(w, NULL, '{');
        j_u64(w, "metric_id", p->metric_id);
        j_str(w, "name", fl_model_metric_name(r->m, p->metric_id));
        j_u64(w, "samples", p->n);
        j_dbl(w, "mean", true, p->sum / (double)p->n);
        j_dbl(w, "min", true, p->min);
        j_dbl(w, "max", true, p->max);
        j_close(w, '}');
    }
    j_close(w, ']');
}

static void json_capture(const fl_report *r, jw *w)
{
    const json_t *c = r->m->caps;
    if (!c) {
        j_str(w, "capture", NULL);
        return;
    }
    j_open(w, "capture", '{');
    j_str(w, "requested_engine", jget_str(c, "requested_engine"));
    j_str(w, "selected_engine", jget_str(c, "selected_engine"));
    j_opt_u64(w, "ts_ns", json_is_integer(json_object_get(c, "ts_ns")),
              (uint64_t)json_integer_value(json_object_get(c, "ts_ns")));
    j_open(w, "features", '[');
    const json_t *caps = json_object_get(c, "capabilities");
    static const char *const keys[] = {"feature", "requested",   "status",
                                       "mode",    "reason_code", "message"};
    for (size_t i = 0; i < json_array_size(caps); i++) {
        const json_t *e = json_array_get(caps, i);
        j_open(w, NULL, '{');
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            j_raw_json(w, keys[k], json_object_get(e, keys[k]));
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

static void json_reader(const fl_report *r, jw *w)
{
    const fl_model *m = r->m;
    const fl_read_result *res = &r->res;
    bool h = r->have_res;
    bool partial =
        (h && (res->bad_lines || res->bad_records || res->other_session || res->gz_errors)) ||
        m->bad_rows || r->warnings || r->oom || m->oom || m->details_orphan;
    j_open(w, "read", '{');
    j_bool(w, "partial", partial);
    j_str(w, "session_dir", h ? res->session_dir : NULL);
    /* session_dir is a flat-layout prefix, not a directory. */
    if (h)
        j_bool(w, "flat", res->flat);
    else
        j_str(w, "flat", NULL);
    j_opt_u64(w, "files", h, res->files);
    j_opt_u64(w, "lines", h, res->lines);
    j_opt_u64(w, "bytes", h, res->bytes);
    j_opt_u64(w, "bad_lines", h, res->bad_lines);
    j_opt_u64(w, "bad_records", h, res->bad_records);
    j_opt_u64(w, "other_session_records", h, res->other_session);
    j_opt_u64(w, "unknown_types", h, res->unknown_types);
    j_opt_u64(w, "gz_errors", h, res->gz_errors);
    j_u64(w, "bad_rows", m->bad_rows);
    j_u64(w, "orphan_details", m->details_orphan);
    j_bool(w, "out_of_memory", r->oom || m->oom);
    j_u64(w, "warnings", r->warnings);
    j_open(w, "first_warnings", '[');
    for (size_t i = 0; i < MAX_WARNINGS_KEPT && i < r->warnings; i++)
        if (r->warning_text[i])
            j_str(w, NULL, r->warning_text[i]);
    j_close(w, ']');
    j_close(w, '}');
}

void fl_report_json(const fl_report *r, int top_n, fl_buf *out)
{
    figures f;
    jw w = {out, false};
    if (!compute(r, top_n, &f)) {
        figures_free(&f);
        out->oom = true;
        return;
    }
    j_open(&w, NULL, '{');
    j_str(&w, "schema", "gpu-profile.report");
    j_u64(&w, "schema_version", 1);
    json_session(r, &f, &w);
    json_summary(r, &f, &w);
    json_scopes(r, &f, &w);
    json_hotspots(r, &f, &w);
    json_memory(r, &w);
    json_devices(r, &f, &w);
    json_host(r, &w);
    json_stalls(r, &w);
    json_capture(r, &w);
    json_reader(r, &w);
    j_close(&w, '}');
    fl_buf_puts(out, "\n");
    figures_free(&f);
}

void fl_report_set_live(fl_report *r, bool live)
{
    if (r)
        r->live = live;
}
