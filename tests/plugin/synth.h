/*
 * synth.h - synthetic CUPTI activity buffers, built from the real record
 * structs of the installed toolkit (cupti_activity.h), laid out as CUPTI
 * lays them out (records back to back, 8-byte aligned), so that
 * cuptiActivityGetNextRecord walks them exactly as it walks a buffer CUPTI
 * filled on a GPU.  For the decoder tests, the fake plugin and the decoder
 * benchmark.  Test-only: never linked into the shipped library.
 */
#ifndef GP_TEST_SYNTH_H
#define GP_TEST_SYNTH_H

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct synth {
    uint8_t *p;
    size_t len, cap;
} synth;

static inline void synth_init(synth *s, size_t cap)
{
    s->p = aligned_alloc(8, (cap + 7) & ~(size_t)7);
    s->len = 0;
    s->cap = s->p ? cap : 0;
}

static inline void synth_free(synth *s)
{
    free(s->p);
    s->p = NULL;
    s->len = s->cap = 0;
}

/* Appends one record (its struct); false when full. */
static inline int synth_put(synth *s, const void *rec, size_t size)
{
    size_t padded = (size + 7) & ~(size_t)7;
    if (s->len + padded > s->cap)
        return 0;
    memcpy(s->p + s->len, rec, size);
    memset(s->p + s->len + size, 0, padded - size);
    s->len += padded;
    return 1;
}

static inline int synth_kernel(synth *s, const char *name, uint64_t start, uint64_t end,
                               uint32_t corr, uint32_t stream, uint32_t device, int gx, int bx,
                               uint16_t regs, int32_t static_smem, int32_t dyn_smem)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.start = start;
    k.end = end;
    k.correlationId = corr;
    k.streamId = stream;
    k.deviceId = device;
    k.contextId = 1;
    k.gridX = gx;
    k.gridY = 1;
    k.gridZ = 1;
    k.blockX = bx;
    k.blockY = 1;
    k.blockZ = 1;
    k.registersPerThread = regs;
    k.staticSharedMemory = static_smem;
    k.dynamicSharedMemory = dyn_smem;
    k.sharedMemoryExecuted = 0;
    return synth_put(s, &k, sizeof k);
}

static inline int synth_memcpy(synth *s, uint8_t copy_kind, uint64_t bytes, uint64_t start,
                               uint64_t end, uint32_t corr, uint32_t stream)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = copy_kind;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.correlationId = corr;
    m.streamId = stream;
    m.deviceId = 0;
    m.contextId = 1;
    return synth_put(s, &m, sizeof m);
}

static inline int synth_peer(synth *s, uint64_t bytes, uint64_t start, uint64_t end, uint32_t corr,
                             uint32_t src_dev, uint32_t dst_dev)
{
    CUpti_ActivityMemcpyPtoP4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.correlationId = corr;
    m.deviceId = src_dev;
    m.srcDeviceId = src_dev;
    m.dstDeviceId = dst_dev;
    m.streamId = 13;
    return synth_put(s, &m, sizeof m);
}

static inline int synth_memset(synth *s, uint64_t bytes, uint32_t value, uint64_t start,
                               uint64_t end, uint32_t corr)
{
    CUpti_ActivityMemset4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.value = value;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.correlationId = corr;
    m.streamId = 7;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    return synth_put(s, &m, sizeof m);
}

static inline int synth_sync(synth *s, CUpti_ActivitySynchronizationType type, uint64_t start,
                             uint64_t end, uint32_t corr, uint32_t stream)
{
    CUpti_ActivitySynchronization2 y;
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = type;
    y.start = start;
    y.end = end;
    y.correlationId = corr;
    y.contextId = 1;
    y.streamId = stream;
    y.cudaEventId = 0;
    return synth_put(s, &y, sizeof y);
}

static inline int synth_memory(synth *s, CUpti_ActivityMemoryOperationType op, uint64_t address,
                               uint64_t bytes, uint64_t t, uint32_t corr)
{
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = op;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.correlationId = corr;
    m.address = address;
    m.bytes = bytes;
    m.timestamp = t;
    m.deviceId = 0;
    m.contextId = 1;
    m.streamId = 7;
    return synth_put(s, &m, sizeof m);
}

static inline int synth_graph(synth *s, uint32_t graph, uint64_t start, uint64_t end, uint32_t corr)
{
    CUpti_ActivityGraphTrace2 g;
    memset(&g, 0, sizeof g);
    g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    g.correlationId = corr;
    g.start = start;
    g.end = end;
    g.deviceId = 0;
    g.graphId = graph;
    g.contextId = 1;
    g.streamId = 7;
    return synth_put(s, &g, sizeof g);
}

static inline int synth_external(synth *s, CUpti_ExternalCorrelationKind kind, uint64_t id,
                                 uint32_t corr)
{
    CUpti_ActivityExternalCorrelation e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = kind;
    e.externalId = id;
    e.correlationId = corr;
    return synth_put(s, &e, sizeof e);
}

static inline int synth_marker(synth *s, CUpti_ActivityFlag flag, uint32_t id, const char *name,
                               uint64_t t, uint32_t thread)
{
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flag;
    m.timestamp = t;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = 1;
    m.objectId.pt.threadId = thread;
    m.name = name;
    return synth_put(s, &m, sizeof m);
}

/* A marker of a named NVTX domain (synth_marker: the default one). */
static inline int synth_marker_domain(synth *s, CUpti_ActivityFlag flag, uint32_t id,
                                      const char *name, const char *domain, uint64_t t,
                                      uint32_t thread)
{
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flag;
    m.timestamp = t;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = 1;
    m.objectId.pt.threadId = thread;
    m.name = name;
    m.domain = domain;
    return synth_put(s, &m, sizeof m);
}

static inline int synth_overhead(synth *s, uint64_t start, uint64_t end)
{
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.start = start;
    o.end = end;
    return synth_put(s, &o, sizeof o);
}

/* A kind the decoder does not handle (a context record): skipped. */
static inline int synth_context(synth *s)
{
    CUpti_ActivityContext3 c;
    memset(&c, 0, sizeof c);
    c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    c.contextId = 1;
    c.deviceId = 0;
    return synth_put(s, &c, sizeof c);
}

/* A record CUPTI does not know: ends the buffer. */
static inline int synth_garbage(synth *s)
{
    CUpti_Activity a;
    memset(&a, 0, sizeof a);
    a.kind = (CUpti_ActivityKind)0x7ffffff0;
    return synth_put(s, &a, sizeof a);
}

/* ---------------------------------------------------------- PC sampling */

/* The activity API's PC sampling records. */
static inline int synth_function(synth *s, uint32_t id, const char *name)
{
    CUpti_ActivityFunction f;
    memset(&f, 0, sizeof f);
    f.kind = CUPTI_ACTIVITY_KIND_FUNCTION;
    f.id = id;
    f.contextId = 1;
    f.moduleId = 1;
    f.functionIndex = id;
    f.name = name;
    return synth_put(s, &f, sizeof f);
}

static inline int synth_source(synth *s, uint32_t id, const char *file, uint32_t line)
{
    CUpti_ActivitySourceLocator l;
    memset(&l, 0, sizeof l);
    l.kind = CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR;
    l.id = id;
    l.lineNumber = line;
    l.fileName = file;
    return synth_put(s, &l, sizeof l);
}

static inline int synth_pc_sample(synth *s, uint32_t function, uint32_t source, uint32_t corr,
                                  uint64_t pc, CUpti_ActivityPCSamplingStallReason reason,
                                  uint32_t samples)
{
    CUpti_ActivityPCSampling3 p;
    memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
    p.sourceLocatorId = source;
    p.correlationId = corr;
    p.functionId = function;
    p.samples = samples;
    p.stallReason = reason;
    p.pcOffset = pc;
    return synth_put(s, &p, sizeof p);
}

static inline int synth_pc_info(synth *s, uint32_t corr, uint64_t total, uint64_t dropped)
{
    CUpti_ActivityPCSamplingRecordInfo r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO;
    r.correlationId = corr;
    r.totalSamples = total;
    r.droppedSamples = dropped;
    r.samplingPeriodInCycles = 1u << 18;
    return synth_put(s, &r, sizeof r);
}

/* The PC Sampling API's GetData output: a CUpti_PCSamplingData with its
 * records and their stall slots, as CUPTI fills it (parsed format). */
#define SYNTH_PC_MAX 64
#define SYNTH_PC_SLOTS 8
typedef struct synth_pc {
    CUpti_PCSamplingData data;
    CUpti_PCSamplingPCData pcs[SYNTH_PC_MAX];
    CUpti_PCSamplingStallReason slots[SYNTH_PC_MAX][SYNTH_PC_SLOTS];
} synth_pc;

static inline void synth_pc_init(synth_pc *s)
{
    memset(s, 0, sizeof *s);
    s->data.size = sizeof s->data;
    s->data.collectNumPcs = SYNTH_PC_MAX;
    s->data.pPcData = s->pcs;
    for (size_t i = 0; i < SYNTH_PC_MAX; i++) {
        s->pcs[i].size = sizeof s->pcs[i];
        s->pcs[i].stallReason = s->slots[i];
    }
}

/* One PC record of n stall reasons (index[i], samples[i]); 0 when full. */
static inline int synth_pc_add(synth_pc *s, uint64_t crc, const char *fn, uint64_t pc,
                               uint32_t corr, size_t n, const uint32_t *index,
                               const uint32_t *samples)
{
    size_t at = s->data.totalNumPcs;
    if (at == SYNTH_PC_MAX || n > SYNTH_PC_SLOTS)
        return 0;
    CUpti_PCSamplingPCData *r = &s->pcs[at];
    r->cubinCrc = crc;
    r->pcOffset = pc;
    r->functionIndex = 0;
    r->functionName = (char *)fn;
    r->correlationId = corr;
    r->stallReasonCount = n;
    for (size_t i = 0; i < n; i++) {
        s->slots[at][i].pcSamplingStallReasonIndex = index[i];
        s->slots[at][i].samples = samples[i];
    }
    s->data.totalNumPcs = at + 1;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += samples[i];
    s->data.totalSamples += total;
    return 1;
}

#endif /* GP_TEST_SYNTH_H */
