/*
 * sassmetrics_decode.c - CUPTI's SASS-metric records -> fl_sample_row of
 * sample_kind 1, aggregated.
 *
 * Promises: every non-zero (record, instance) value fed is added once, to
 * the row of its (device, function, PC offset, metric), in PC sampling's
 * aggregator (common/aggregator.c: the same bounded table, dictionaries handed
 * to the sink before the rows that use them, the same source-line cache);
 * a function is named once per (cubin CRC, name) - never by CUPTI's
 * name pointer, which FlushData allocates anew each call, nor by its
 * functionIndex, the same for every function of a cubin on an H200; a
 * metric's dictionary id is found through a small open table keyed by
 * (device, CUPTI metric id); no lock of its own: one thread at a time,
 * and under Deep (fl_sass_create_shared) PC sampling's aggregator is used
 * only under the lock it shares with PC sampling.
 */
#include "sassmetrics.h"
#include "../../common/text_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FN_SLOTS 16384u
#define METRIC_SLOTS 256u

typedef struct fn_slot {
    uint64_t name_hash;
    uint32_t crc, id; /* id 0: empty */
} fn_slot;

typedef struct metric_slot {
    uint64_t metric;
    uint32_t device, id; /* id 0: empty */
} metric_slot;

struct fl_sass {
    fl_agg *agg;
    bool shared;                         /* agg is PC sampling's (Deep), not ours */
    void (*lock)(void), (*unlock)(void); /* what guards a shared agg; NULL: none */
    fn_slot fns[FN_SLOTS];
    metric_slot metrics[METRIC_SLOTS];
    uint64_t records, no_line;
};

fl_sass *fl_sass_create(const fl_agg_config *cfg)
{
    fl_sass *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    fl_agg_config c = cfg ? *cfg : (fl_agg_config){0};
    c.scopes = false; /* SASS records carry no launch */
    x->agg = fl_agg_create(&c);
    if (!x->agg) {
        free(x);
        return NULL;
    }
    return x;
}

fl_sass *fl_sass_create_shared(fl_agg *agg, void (*lock)(void), void (*unlock)(void))
{
    fl_sass *x = agg ? calloc(1, sizeof *x) : NULL;
    if (!x)
        return NULL;
    x->agg = agg;
    x->shared = true;
    x->lock = lock;
    x->unlock = unlock;
    return x;
}

void fl_sass_destroy(fl_sass *x)
{
    if (!x)
        return;
    if (!x->shared)
        fl_agg_destroy(x->agg);
    free(x);
}

static void agg_lock(const fl_sass *x)
{
    if (x->lock)
        x->lock();
}

static void agg_unlock(const fl_sass *x)
{
    if (x->unlock)
        x->unlock();
}

static uint32_t metric_hash(uint32_t device, uint64_t metric)
{
    uint64_t h = (metric ^ (uint64_t)device << 56) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40);
}

/* The slot of (device, metric): its own or the empty one where it goes;
 * NULL when the table is full. */
static metric_slot *metric_slot_of(fl_sass *x, uint32_t device, uint64_t metric)
{
    uint32_t j = metric_hash(device, metric);
    for (uint32_t n = 0; n < METRIC_SLOTS; n++, j++) {
        metric_slot *m = &x->metrics[j & (METRIC_SLOTS - 1)];
        if (!m->id || (m->metric == metric && m->device == device))
            return m;
    }
    return NULL;
}

void fl_sass_metric_name(fl_sass *x, uint32_t device_id, uint64_t metric_id, const char *name)
{
    if (!x || !name)
        return;
    metric_slot *m = metric_slot_of(x, device_id, metric_id);
    agg_lock(x);
    uint32_t id = fl_agg_metric_id(x->agg, name);
    agg_unlock(x);
    if (m && id)
        *m = (metric_slot){metric_id, device_id, id};
}

static uint32_t metric_of(fl_sass *x, uint32_t device, uint64_t metric)
{
    metric_slot *m = metric_slot_of(x, device, metric);
    if (m && m->id)
        return m->id;
    char name[48];
    snprintf(name, sizeof name, "metric_%llu", (unsigned long long)metric);
    uint32_t id = fl_agg_metric_id(x->agg, name);
    if (m && id)
        *m = (metric_slot){metric, device, id};
    return id;
}

/* CUPTI 13.0 on an H200 gave every function of a cubin the same
 * functionIndex, so the name's hash tells them apart. */
static uint32_t function_of(fl_sass *x, const CUpti_SassMetrics_Data *r)
{
    uint64_t nh = fl_text_hash(r->functionName ? r->functionName : "");
    uint64_t h = (nh ^ (uint64_t)r->cubinCrc << 32) * 0x9e3779b97f4a7c15ull;
    fn_slot *c = &x->fns[(h >> 40) & (FN_SLOTS - 1)];
    if (c->id && c->crc == r->cubinCrc && c->name_hash == nh)
        return c->id;
    uint32_t id = fl_agg_function_id(x->agg, r->functionName, r->cubinCrc);
    if (id)
        *c = (fn_slot){nh, r->cubinCrc, id};
    return id;
}

void fl_sass_feed(fl_sass *x, const fl_trace_sink *s, const CUpti_SassMetrics_Data *d, size_t n,
                  size_t n_instances, uint32_t device_id, uint64_t t_ns)
{
    if (!x || !d)
        return;
    x->records += n;
    agg_lock(x);
    fl_sample_row k = {.t_ns = t_ns, .device_id = device_id, .sample_kind = FL_SAMPLE_KIND_SASS};
    for (size_t i = 0; i < n; i++) {
        const CUpti_SassMetrics_Data *r = &d[i];
        const CUpti_SassMetrics_InstanceValue *v = r->pInstanceValues;
        if (!v)
            continue;
        k.function_id = function_of(x, r);
        k.pc_offset = r->pcOffset;
        k.source_file_id = fl_agg_source_line(x->agg, r->cubinCrc, k.function_id, r->functionName,
                                              k.pc_offset, &k.source_line);
        uint64_t h = fl_agg_row_hash(&k);
        for (size_t j = 0; j < n_instances; j++) {
            if (!v[j].value)
                continue;
            k.metric_id = metric_of(x, device_id, v[j].metricId);
            x->no_line += k.source_file_id ? 0 : 1;
            fl_agg_add(x->agg, s, &k, h, v[j].value);
        }
    }
    agg_unlock(x);
}

void fl_sass_flush(fl_sass *x, const fl_trace_sink *s)
{
    if (!x)
        return;
    agg_lock(x);
    fl_agg_flush(x->agg, s);
    agg_unlock(x);
}

void fl_sass_stats(const fl_sass *x, fl_trace_stats *out)
{
    if (!x || !out)
        return;
    /* A shared aggregator's rows of sample_kind 1 are PC sampling's
     * fl_agg_stats to report (once). */
    if (!x->shared) {
        fl_trace_stats t;
        memset(&t, 0, sizeof t);
        fl_agg_stats(x->agg, &t);
        out->engines[FL_ENGINE_SASS].counters.sass.rows +=
            t.engines[FL_ENGINE_SASS].counters.sass.rows;
        out->engines[FL_ENGINE_SASS].counters.sass.lost_values +=
            t.engines[FL_ENGINE_SASS].counters.sass.lost_values;
    }
    out->engines[FL_ENGINE_SASS].counters.sass.records += x->records;
    out->engines[FL_ENGINE_SASS].counters.sass.no_line_values += x->no_line;
}
