/*
 * decode.c - CUPTI activity records -> abi/trace_abi.h rows.
 *
 * Promises: every record of a buffer is visited once, in buffer order;
 * times are moved onto the wall clock by one addition; kernel names are
 * interned by pointer (CUPTI shares one name pointer among the records of
 * a kernel) and then by text, so an id is demangled and announced once,
 * before the first row that uses it; a framework's external id reaches the
 * kernel with its correlation id when its record came first (CUPTI writes
 * it at the API call, the kernel record only after the kernel ran); the
 * tables are fixed-size and direct-mapped, so a flood of records costs
 * associations, never memory.
 */
#include "decode.h"
#include "common/aggregator.h"
#include "common/id_table.h"
#include "common/text_hash.h"

#include <cupti.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXT_SLOTS 16384u  /* correlation id -> external id, direct-mapped */
#define MARK_SLOTS 4096u  /* NVTX range id -> its thread */
#define THREAD_SLOTS 256u /* thread -> open NVTX ranges */
#define MAX_DEVICES 256u
#define MEMOP_SLOTS 16384u /* correlation id -> allocation call's duration */

typedef struct ext_slot {
    uint32_t corr_id; /* 0: empty */
    uint8_t kind;
    uint64_t id;
} ext_slot;

typedef struct mark_slot {
    uint32_t id; /* 0: empty */
    uint32_t thread;
} mark_slot;

typedef struct thread_slot {
    uint32_t thread;
    uint32_t open;
    bool used;
} thread_slot;

struct fl_decoder {
    fl_decoder_config cfg;

    /* Staged rows, handed over in arrays of FL_TRACE_BATCH. */
    fl_kernel_row k[FL_TRACE_BATCH];
    fl_memcpy_row mc[FL_TRACE_BATCH];
    fl_memset_row ms[FL_TRACE_BATCH];
    fl_sync_row sy[FL_TRACE_BATCH];
    fl_alloc_row al[FL_TRACE_BATCH];
    fl_graph_row gr[FL_TRACE_BATCH];
    fl_marker_row mk[FL_TRACE_BATCH];
    size_t nk, nmc, nms, nsy, nal, ngr, nmk;

    /* Kernel names: by pointer, then by text (the text is ours). */
    fl_id_slot *by_ptr, *by_text; /* keys: the pointer; the text */
    size_t ptr_cap, ptr_used, text_cap, text_used;
    uint32_t next_kernel_id;
    /* Announced before the next kernel rows: ids and demangled names. */
    uint32_t *new_ids;
    char **new_names;
    size_t n_new, new_cap;

    /* Devices whose limits went to the sink. */
    uint8_t device_seen[MAX_DEVICES];
    fl_gpu_limits pending_dev[8];
    size_t n_pending_dev;

    ext_slot ext[EXT_SLOTS];
    mark_slot marks[MARK_SLOTS];
    thread_slot threads[THREAD_SLOTS];

    fl_trace_stats st;
};

typedef struct memop_slot {
    atomic_flag busy;
    uint32_t corr_id;
    uint64_t duration_ns;
} memop_slot;

static memop_slot memops[MEMOP_SLOTS];

static void slot_put(memop_slot *s, uint32_t corr_id, uint64_t value)
{
    while (atomic_flag_test_and_set_explicit(&s->busy, memory_order_acquire))
        ;
    s->corr_id = corr_id;
    s->duration_ns = value;
    atomic_flag_clear_explicit(&s->busy, memory_order_release);
}

/* Slot s's value when it holds corr_id; 0 when it does not (or no longer). */
static uint64_t slot_get(memop_slot *s, uint32_t corr_id)
{
    while (atomic_flag_test_and_set_explicit(&s->busy, memory_order_acquire))
        ;
    uint64_t d = corr_id && s->corr_id == corr_id ? s->duration_ns : 0;
    atomic_flag_clear_explicit(&s->busy, memory_order_release);
    return d;
}

void fl_memop_duration_put(uint32_t corr_id, uint64_t duration_ns)
{
    slot_put(&memops[corr_id & (MEMOP_SLOTS - 1)], corr_id, duration_ns);
}

/* The duration of allocation call corr_id; 0 when it is not there. */
static uint64_t memop_duration(uint32_t corr_id)
{
    return slot_get(&memops[corr_id & (MEMOP_SLOTS - 1)], corr_id);
}

/* Graph launches' executable graphs by correlation id: the launch
 * callback knows the handle, the GRAPH_TRACE record only the id. */
static memop_slot graph_execs[MEMOP_SLOTS];

void fl_graph_exec_put(uint32_t corr_id, uint64_t exec_key)
{
    slot_put(&graph_execs[corr_id & (MEMOP_SLOTS - 1)], corr_id, exec_key);
}

/* The scopes of launch corr_id into k (FL_SCOPE_UNKNOWN when not there,
 * or overwritten by a later launch). */
static void take_launch_scope(uint32_t corr_id, fl_kernel_row *k)
{
    k->scope_depth = FL_SCOPE_UNKNOWN;
    k->stack_id = 0;
    uint8_t n = 0;
    if (fl_launch_find(corr_id, k->scope_ids, FL_SCOPE_PATH_MAX, &n, &k->stack_id))
        k->scope_depth = n;
}

/* ----------------------------------------------------------------- names */

/* The kernel_dict id of a CUPTI name pointer; 0 when out of memory. */
static uint32_t kernel_id(fl_decoder *d, const char *name)
{
    const char *key = name ? name : "<unknown>";
    if (d->ptr_cap) {
        size_t j = fl_ptr_hash(key) & (d->ptr_cap - 1);
        for (; d->by_ptr[j].key; j = (j + 1) & (d->ptr_cap - 1))
            if (d->by_ptr[j].key == key)
                return d->by_ptr[j].id;
    }
    /* A pointer not seen yet: the same text may have come from another
     * module or context. */
    uint32_t id = 0;
    if ((d->text_used + 1) * 2 > d->text_cap &&
        !fl_id_table_grow(&d->by_text, &d->text_cap, 256, true))
        return 0;
    size_t j = fl_text_hash(key) & (d->text_cap - 1);
    for (; d->by_text[j].key; j = (j + 1) & (d->text_cap - 1))
        if (strcmp(d->by_text[j].key, key) == 0) {
            id = d->by_text[j].id;
            break;
        }
    if (!id) {
        if (d->n_new == d->new_cap) {
            size_t nc = d->new_cap ? d->new_cap * 2 : 64;
            uint32_t *ids = realloc(d->new_ids, nc * sizeof *ids);
            if (!ids)
                return 0;
            d->new_ids = ids;
            char **names = realloc(d->new_names, nc * sizeof *names);
            if (!names)
                return 0;
            d->new_names = names;
            d->new_cap = nc;
        }
        char *copy = strdup(key);
        char demangled[4096];
        if (d->cfg.demangle)
            fl_demangle(key, demangled, sizeof demangled);
        else
            snprintf(demangled, sizeof demangled, "%s", key);
        char *shown = strdup(demangled);
        if (!copy || !shown) {
            free(copy);
            free(shown);
            return 0;
        }
        id = ++d->next_kernel_id;
        d->by_text[j] = (fl_id_slot){copy, id};
        d->text_used++;
        d->new_ids[d->n_new] = id;
        d->new_names[d->n_new++] = shown;
    }
    if ((d->ptr_used + 1) * 2 > d->ptr_cap &&
        !fl_id_table_grow(&d->by_ptr, &d->ptr_cap, 256, false))
        return id;
    j = fl_ptr_hash(key) & (d->ptr_cap - 1);
    while (d->by_ptr[j].key)
        j = (j + 1) & (d->ptr_cap - 1);
    d->by_ptr[j] = (fl_id_slot){key, id};
    d->ptr_used++;
    return id;
}

/* ------------------------------------------------------------- handover */

static void flush_kernels(fl_decoder *d, const fl_trace_sink *s)
{
    if (d->n_new) {
        if (s->kernel_names)
            s->kernel_names(s->user, d->new_ids, (const char *const *)d->new_names, d->n_new);
        for (size_t i = 0; i < d->n_new; i++)
            free(d->new_names[i]);
        d->n_new = 0;
    }
    for (size_t i = 0; i < d->n_pending_dev; i++)
        if (s->device)
            s->device(s->user, &d->pending_dev[i]);
    d->n_pending_dev = 0;
    if (d->nk && s->kernels)
        s->kernels(s->user, d->k, d->nk);
    d->nk = 0;
}

#define FLUSH_ROWS(d, s, field, n, fn)                                                             \
    do {                                                                                           \
        if ((d)->n && (s)->fn)                                                                     \
            (s)->fn((s)->user, (d)->field, (d)->n);                                                \
        (d)->n = 0;                                                                                \
    } while (0)

void fl_decoder_flush(fl_decoder *d, const fl_trace_sink *s)
{
    if (!d || !s)
        return;
    flush_kernels(d, s);
    FLUSH_ROWS(d, s, mc, nmc, memcpys);
    FLUSH_ROWS(d, s, ms, nms, memsets);
    FLUSH_ROWS(d, s, sy, nsy, syncs);
    FLUSH_ROWS(d, s, al, nal, allocs);
    FLUSH_ROWS(d, s, gr, ngr, graphs);
    FLUSH_ROWS(d, s, mk, nmk, markers);
    if (d->cfg.pcs)
        fl_agg_flush(d->cfg.pcs, s);
}

/* --------------------------------------------------------------- records */

static uint64_t wall(const fl_decoder *d, uint64_t t)
{
    return (uint64_t)((int64_t)t + d->cfg.clock_offset_ns);
}

static uint64_t span(uint64_t start, uint64_t end)
{
    return end > start ? end - start : 0;
}

static void note_device(fl_decoder *d, uint32_t dev)
{
    if (dev >= MAX_DEVICES || d->device_seen[dev] || !d->cfg.limits)
        return;
    if (d->n_pending_dev == sizeof d->pending_dev / sizeof d->pending_dev[0])
        return; /* asked again with the next kernel of that device */
    d->device_seen[dev] = 1;
    fl_gpu_limits *l = &d->pending_dev[d->n_pending_dev];
    memset(l, 0, sizeof *l);
    l->device_id = dev;
    if (d->cfg.limits(dev, l, d->cfg.limits_user))
        d->n_pending_dev++;
}

static void on_kernel(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityKernel10 *r)
{
    d->st.kernels++;
    note_device(d, r->deviceId);
    fl_kernel_row *k = &d->k[d->nk];
    k->t_ns = wall(d, r->start);
    k->duration_ns = span(r->start, r->end);
    k->kernel_id = kernel_id(d, r->name);
    k->stream_id = r->streamId;
    k->corr_id = r->correlationId;
    k->device_id = r->deviceId;
    k->context_id = r->contextId;
    k->grid[0] = (uint32_t)r->gridX;
    k->grid[1] = (uint32_t)r->gridY;
    k->grid[2] = (uint32_t)r->gridZ;
    k->block[0] = (uint32_t)r->blockX;
    k->block[1] = (uint32_t)r->blockY;
    k->block[2] = (uint32_t)r->blockZ;
    k->static_smem_bytes = (uint32_t)r->staticSharedMemory;
    k->dynamic_smem_bytes = (uint32_t)r->dynamicSharedMemory;
    k->local_mem_per_thread_bytes = r->localMemoryPerThread;
    k->local_mem_total_bytes =
        r->localMemoryTotal_v2 ? r->localMemoryTotal_v2 : r->localMemoryTotal;
    k->smem_executed_bytes = r->sharedMemoryExecuted;
    k->graph_id = r->graphId;
    k->num_regs = r->registersPerThread;
    k->cache_requested = r->cacheConfig.config.requested;
    k->cache_executed = r->cacheConfig.config.executed;
    k->has_details = 0;
    k->external_kind = 0;
    k->external_id = 0;
    if (d->cfg.scopes)
        take_launch_scope(r->correlationId, k);
    else {
        k->scope_depth = FL_SCOPE_UNKNOWN;
        k->stack_id = 0;
    }
    /* A graph's kernel: where its node was made (captured or added), not
     * where the graph was launched, as nsys attributes it. */
    uint32_t node_stack =
        r->graphNodeId && d->cfg.graph_node_stack ? d->cfg.graph_node_stack(r->graphNodeId) : 0;
    if (node_stack)
        k->stack_id = node_stack;
    ext_slot *e = &d->ext[r->correlationId & (EXT_SLOTS - 1)];
    if (r->correlationId && e->corr_id == r->correlationId) {
        k->external_kind = e->kind;
        k->external_id = e->id;
        e->corr_id = 0;
    }
    if (++d->nk == FL_TRACE_BATCH)
        flush_kernels(d, s);
}

/* A copy, from a MEMCPY record or a peer-to-peer MEMCPY2 one (which adds
 * the two devices). */
static void stage_memcpy(fl_decoder *d, const fl_trace_sink *s, const fl_memcpy_row *row)
{
    d->st.memcpys++;
    d->mc[d->nmc] = *row;
    if (++d->nmc == FL_TRACE_BATCH)
        FLUSH_ROWS(d, s, mc, nmc, memcpys);
}

/* The rows carry CUPTI's kinds as they are: they must be the wire
 * format's codes (abi/trace_abi.h), which a second vendor maps onto. */
#define SAME(cupti, wire) ((int)(cupti) == (int)(wire))
_Static_assert(SAME(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, FL_COPY_HTOD) &&
                   SAME(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, FL_COPY_DTOH) &&
                   SAME(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, FL_COPY_DTOD) &&
                   SAME(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, FL_COPY_HTOH) &&
                   SAME(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, FL_COPY_PTOP),
               "copy_kind: CUPTI's numbering is the wire format's");
_Static_assert(SAME(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, FL_MEM_PAGEABLE) &&
                   SAME(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, FL_MEM_PINNED) &&
                   SAME(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, FL_MEM_DEVICE) &&
                   SAME(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, FL_MEM_MANAGED) &&
                   SAME(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, FL_MEM_MANAGED_STATIC),
               "memory_kind: CUPTI's numbering is the wire format's");
_Static_assert(SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, FL_SYNC_EVENT) &&
                   SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
                        FL_SYNC_STREAM_WAIT_EVENT) &&
                   SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, FL_SYNC_STREAM) &&
                   SAME(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, FL_SYNC_CONTEXT),
               "sync_type: CUPTI's numbering is the wire format's");
#undef SAME

/* What a copy's and a set's rows take alike from their records. */
#define TRANSFER_COMMON(d, r)                                                                      \
    .t_ns = wall(d, (r)->start), .duration_ns = span((r)->start, (r)->end), .bytes = (r)->bytes,   \
    .stream_id = (r)->streamId, .corr_id = (r)->correlationId, .device_id = (r)->deviceId,         \
    .context_id = (r)->contextId
#define MEMCPY_COMMON(d, r)                                                                        \
    TRANSFER_COMMON(d, r), .copy_kind = (r)->copyKind, .src_kind = (r)->srcKind,                   \
                           .dst_kind = (r)->dstKind

static void on_memcpy(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityMemcpy6 *r)
{
    fl_memcpy_row row = {MEMCPY_COMMON(d, r), .src_device_id = r->deviceId,
                         .dst_device_id = r->deviceId, .peer = 0};
    stage_memcpy(d, s, &row);
}

static void on_peer(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityMemcpyPtoP4 *r)
{
    fl_memcpy_row row = {MEMCPY_COMMON(d, r), .src_device_id = r->srcDeviceId,
                         .dst_device_id = r->dstDeviceId, .peer = 1};
    stage_memcpy(d, s, &row);
}

static void on_memset(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityMemset4 *r)
{
    d->st.memsets++;
    d->ms[d->nms] = (fl_memset_row){TRANSFER_COMMON(d, r), .value = r->value,
                                    .memory_kind = (uint8_t)r->memoryKind};
    if (++d->nms == FL_TRACE_BATCH)
        FLUSH_ROWS(d, s, ms, nms, memsets);
}

static void on_sync(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivitySynchronization2 *r)
{
    d->st.syncs++;
    d->sy[d->nsy] = (fl_sync_row){.t_ns = wall(d, r->start),
                                  .duration_ns = span(r->start, r->end),
                                  .sync_type = (uint32_t)r->type,
                                  .stream_id = r->streamId,
                                  .event_id = r->cudaEventId,
                                  .context_id = r->contextId,
                                  .corr_id = r->correlationId};
    /* The stack the synchronising call's callback captured (fl_sync_put). */
    uint32_t ids[FL_SCOPE_PATH_MAX];
    uint8_t n;
    fl_launch_find(r->correlationId, ids, FL_SCOPE_PATH_MAX, &n, &d->sy[d->nsy].stack_id);
    if (++d->nsy == FL_TRACE_BATCH)
        FLUSH_ROWS(d, s, sy, nsy, syncs);
}

static void on_memory(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityMemory4 *r)
{
    uint8_t op;
    if (r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
        op = 1;
    else if (r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        op = 2;
    else {
        d->st.other_records++;
        return;
    }
    d->st.allocs++;
    d->al[d->nal] =
        (fl_alloc_row){.t_ns = wall(d, r->timestamp),
                       .duration_ns = d->cfg.memop_durations ? memop_duration(r->correlationId) : 0,
                       .address = r->address,
                       .bytes = r->bytes,
                       .device_id = r->deviceId,
                       .stream_id = r->streamId,
                       .corr_id = r->correlationId,
                       .memory_op = op,
                       .memory_kind = (uint8_t)r->memoryKind};
    if (++d->nal == FL_TRACE_BATCH)
        FLUSH_ROWS(d, s, al, nal, allocs);
}

static void on_graph(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityGraphTrace2 *r)
{
    d->st.graphs++;
    d->gr[d->ngr] = (fl_graph_row){
        .t_ns = wall(d, r->start),
        .duration_ns = span(r->start, r->end),
        .graph_id = r->graphId,
        .stream_id = r->streamId,
        .corr_id = r->correlationId,
        .device_id = r->deviceId,
        .exec_key = slot_get(&graph_execs[r->correlationId & (MEMOP_SLOTS - 1)], r->correlationId)};
    if (++d->ngr == FL_TRACE_BATCH)
        FLUSH_ROWS(d, s, gr, ngr, graphs);
}

static void on_external(fl_decoder *d, const CUpti_ActivityExternalCorrelation *r)
{
    d->st.external++;
    ext_slot *e = &d->ext[r->correlationId & (EXT_SLOTS - 1)];
    *e = (ext_slot){r->correlationId, (uint8_t)r->externalKind, r->externalId};
}

static thread_slot *thread_of(fl_decoder *d, uint32_t tid)
{
    size_t j = (tid * 2654435761u) & (THREAD_SLOTS - 1);
    for (size_t k = 0; k < THREAD_SLOTS; k++, j = (j + 1) & (THREAD_SLOTS - 1)) {
        thread_slot *t = &d->threads[j];
        if (!t->used) {
            *t = (thread_slot){tid, 0, true};
            return t;
        }
        if (t->thread == tid)
            return t;
    }
    return &d->threads[0]; /* more threads than slots: depths get approximate */
}

static void push_marker(fl_decoder *d, const fl_trace_sink *s, const fl_marker_row *m)
{
    d->mk[d->nmk] = *m;
    if (++d->nmk == FL_TRACE_BATCH)
        FLUSH_ROWS(d, s, mk, nmk, markers);
}

static void on_marker(fl_decoder *d, const fl_trace_sink *s, const CUpti_ActivityMarker2 *r)
{
    d->st.markers++;
    uint32_t tid = r->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? r->objectId.pt.threadId : 0;
    uint64_t t = wall(d, r->timestamp);
    if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        /* nvtxMark: a zero-length range. */
        uint32_t depth = thread_of(d, tid)->open;
        fl_marker_row m = {.t_ns = t,
                           .marker_id = r->id,
                           .name = r->name ? r->name : "",
                           .depth = depth,
                           .domain = r->domain};
        push_marker(d, s, &m);
        m.is_end = 1;
        m.name = NULL;
        m.domain = NULL;
        push_marker(d, s, &m);
    } else if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        thread_slot *th = thread_of(d, tid);
        fl_marker_row m = {.t_ns = t,
                           .marker_id = r->id,
                           .name = r->name ? r->name : "",
                           .depth = th->open++,
                           .domain = r->domain};
        d->marks[r->id & (MARK_SLOTS - 1)] = (mark_slot){r->id, tid};
        push_marker(d, s, &m);
    } else if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        /* A range may end on another thread (nvtxRangeEnd): its start's
         * thread owns the depth. */
        mark_slot *ms = &d->marks[r->id & (MARK_SLOTS - 1)];
        uint32_t owner = ms->id == r->id ? ms->thread : tid;
        ms->id = 0;
        thread_slot *th = thread_of(d, owner);
        if (th->open)
            th->open--;
        fl_marker_row m = {.t_ns = t, .marker_id = r->id, .depth = th->open, .is_end = 1};
        push_marker(d, s, &m);
    } else {
        d->st.other_records++;
    }
}

static void on_overhead(fl_decoder *d, const CUpti_ActivityOverhead3 *r)
{
    d->st.overhead_records++;
    d->st.overhead_ns += span(r->start, r->end);
}

/* The activity API's PC sampling records, to the aggregator (t_ns: when
 * the buffer was decoded; the records carry no time). */
static bool on_pc_record(fl_decoder *d, const fl_trace_sink *s, const CUpti_Activity *rec,
                         uint64_t *t_ns)
{
    fl_agg *p = d->cfg.pcs;
    if (!p)
        return false;
    if (!*t_ns) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *t_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_PC_SAMPLING:
        fl_agg_on_sample(p, s, (const CUpti_ActivityPCSampling3 *)rec, *t_ns);
        return true;
    case CUPTI_ACTIVITY_KIND_FUNCTION:
        fl_agg_on_function(p, (const CUpti_ActivityFunction *)rec);
        return true;
    case CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR:
        fl_agg_on_source(p, (const CUpti_ActivitySourceLocator *)rec);
        return true;
    case CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO:
        fl_agg_on_info(p, (const CUpti_ActivityPCSamplingRecordInfo *)rec);
        return true;
    default:
        return false;
    }
}

void fl_decoder_feed(fl_decoder *d, const fl_trace_sink *s, uint8_t *buf, size_t valid)
{
    if (!d || !s || !buf || valid == 0)
        return;
    uint64_t t_pc = 0;
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buf, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (r != CUPTI_SUCCESS) {
            /* An unknown kind has no size to skip by: the rest is lost. */
            d->st.bad_buffers++;
            break;
        }
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            on_kernel(d, s, (const CUpti_ActivityKernel10 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            on_memcpy(d, s, (const CUpti_ActivityMemcpy6 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY2:
            on_peer(d, s, (const CUpti_ActivityMemcpyPtoP4 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
            on_memset(d, s, (const CUpti_ActivityMemset4 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
            on_sync(d, s, (const CUpti_ActivitySynchronization2 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMORY2:
            on_memory(d, s, (const CUpti_ActivityMemory4 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
            on_graph(d, s, (const CUpti_ActivityGraphTrace2 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
            on_external(d, (const CUpti_ActivityExternalCorrelation *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MARKER:
            on_marker(d, s, (const CUpti_ActivityMarker2 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_OVERHEAD:
            on_overhead(d, (const CUpti_ActivityOverhead3 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_PC_SAMPLING:
        case CUPTI_ACTIVITY_KIND_FUNCTION:
        case CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR:
        case CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO:
            if (!on_pc_record(d, s, rec, &t_pc))
                d->st.other_records++;
            break;
        default:
            d->st.other_records++;
            break;
        }
    }
}

/* -------------------------------------------------------------- lifetime */

fl_decoder *fl_decoder_create(const fl_decoder_config *cfg)
{
    fl_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    if (cfg)
        d->cfg = *cfg;
    return d;
}

void fl_decoder_destroy(fl_decoder *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->text_cap; i++)
        free((void *)d->by_text[i].key);
    for (size_t i = 0; i < d->n_new; i++)
        free(d->new_names[i]);
    free(d->by_text);
    free(d->by_ptr);
    free(d->new_ids);
    free(d->new_names);
    free(d);
}

void fl_decoder_stats(const fl_decoder *d, fl_trace_stats *out)
{
    if (!d || !out)
        return;
    out->kernels += d->st.kernels;
    out->memcpys += d->st.memcpys;
    out->memsets += d->st.memsets;
    out->syncs += d->st.syncs;
    out->allocs += d->st.allocs;
    out->graphs += d->st.graphs;
    out->markers += d->st.markers;
    out->external += d->st.external;
    out->other_records += d->st.other_records;
    out->bad_buffers += d->st.bad_buffers;
    out->overhead_records += d->st.overhead_records;
    out->overhead_ns += d->st.overhead_ns;
}
