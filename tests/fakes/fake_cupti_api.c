/*
 * fake_cupti_api.c - the CUPTI calls the plugin makes for the Trace engine,
 * and a launch that drives them, over the fake libcuda.so.1's init lock
 * (fake_libcuda.c).  A test executable links this library: the plugin,
 * loaded later, then finds these definitions first (the global scope
 * comes before the plugin's own libcupti), while the calls not made here
 * (cuptiActivityGetNextRecord, cuptiGetResultString) stay the real
 * libcupti's, which walks the records built here exactly as it walks a
 * GPU's (tests/plugin/synth.h).
 *
 * Promises: fake_cupti_launch(name) is one kernel launch as the driver
 * and CUPTI make it - the driver's lock held shared (fake_cuda_launch_*),
 * the subscriber's launch callback at entry and exit when it enabled
 * cuLaunchKernel, one CONCURRENT_KERNEL (or KERNEL) record in the current
 * activity buffer when that kind is enabled (a buffer the pool refuses
 * drops the record and counts it, as CUPTI does); fake_cupti_complete()
 * hands the current buffer to buffer_completed, as CUPTI's own thread
 * does when a buffer fills; cuptiActivityFlushAll does the same from the
 * caller's thread.  A CUPTI call made where the injection contract forbids
 * it is a violation of the fake driver (fake_cuda_violation): any call
 * from inside buffer_completed; inside cuInit (InitializeInjection) any
 * call but the ones NVIDIA's injection sample makes there (subscribe,
 * enable callbacks and domains, enable activity kinds, register the
 * buffer callbacks).  Graphs: fake_cupti_graph_resource fires one graph
 * resource callback (inside a launch, so a driver call there is a
 * violation), fake_cupti_capture_launch a launch captured from a stream
 * (its launch callback around the node it creates), and
 * fake_cupti_graph_launch_kernel a graph launch replaying one kernel
 * node (its record's graphId / graphNodeId); cuptiGetGraphNodeId /
 * cuptiGetGraphId answer for the fake's handles; with
 * FAKE_CUPTI_REFUSE_GRAPH_NODES set, enabling a resource callback fails.
 */
#include "synth.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

/* The fake driver's (fake_libcuda.c). */
extern bool fake_cuda_thread_in_init(void);
extern int fake_cuda_launch_begin(void);
extern void fake_cuda_launch_end(void);
extern void fake_cuda_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define KINDS 64
#define FAKE_CTX ((CUcontext)(uintptr_t)0x1000)

static struct {
    pthread_mutex_t mu;
    CUpti_CallbackFunc cb;
    void *cb_user;
    bool subscribed;
    bool launch_cb;  /* cuLaunchKernel's callback enabled */
    bool graph_cb;   /* cudaGraphLaunch's callback enabled */
    bool res_cb[32]; /* resource callbacks enabled, by CUPTI_CBID_RESOURCE_* */
    bool kinds[KINDS];
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    uint8_t *buf;
    size_t len, cap;
    uint32_t corr;
    uint64_t dropped_unread, dropped_total, records;
    uint32_t flush_period_ms;
    int flush_all_calls;
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local bool tls_in_completion;

/* Every fake CUPTI call first: where it is made. */
static void check(const char *what, bool sample_makes_it_in_init)
{
    if (tls_in_completion)
        fake_cuda_violation("%s called inside buffer_completed: CUPTI may hold its own locks "
                            "around that callback",
                            what);
    if (fake_cuda_thread_in_init() && !sample_makes_it_in_init)
        fake_cuda_violation("%s called inside cuInit (InitializeInjection): only subscribe, "
                            "enable and register belong there",
                            what);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

API int fake_cupti_flush_all_calls(void)
{
    pthread_mutex_lock(&F.mu);
    int n = F.flush_all_calls;
    pthread_mutex_unlock(&F.mu);
    return n;
}

API uint32_t fake_cupti_flush_period_ms(void)
{
    pthread_mutex_lock(&F.mu);
    uint32_t ms = F.flush_period_ms;
    pthread_mutex_unlock(&F.mu);
    return ms;
}

API uint64_t fake_cupti_records(void)
{
    pthread_mutex_lock(&F.mu);
    uint64_t n = F.records;
    pthread_mutex_unlock(&F.mu);
    return n;
}

API uint64_t fake_cupti_dropped(void)
{
    pthread_mutex_lock(&F.mu);
    uint64_t n = F.dropped_total;
    pthread_mutex_unlock(&F.mu);
    return n;
}

API bool fake_cupti_subscribed(void)
{
    pthread_mutex_lock(&F.mu);
    bool s = F.subscribed;
    pthread_mutex_unlock(&F.mu);
    return s;
}

/* Under F.mu: the current buffer out to buffer_completed (the lock let go
 * around the callback, as CUPTI calls it without ours). */
static void complete_locked(void)
{
    uint8_t *b = F.buf;
    size_t len = F.len, cap = F.cap;
    CUpti_BuffersCallbackCompleteFunc done = F.complete;
    F.buf = NULL;
    F.len = F.cap = 0;
    if (!b || !done)
        return;
    pthread_mutex_unlock(&F.mu);
    tls_in_completion = true;
    done(NULL, 0, b, cap, len);
    tls_in_completion = false;
    pthread_mutex_lock(&F.mu);
}

API void fake_cupti_complete(void)
{
    pthread_mutex_lock(&F.mu);
    complete_locked();
    pthread_mutex_unlock(&F.mu);
}

/* Under F.mu: one kernel record, a buffer asked for when none is open;
 * graph_id / node_id: a graph's node replayed (0: none). */
static void put_kernel_of(const char *name, uint32_t corr, uint32_t graph_id, uint64_t node_id)
{
    CUpti_ActivityKind kind = F.kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]
                                  ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                  : CUPTI_ACTIVITY_KIND_KERNEL;
    if (!F.kinds[kind])
        return;
    /* A buffer asked for when none is open, a full one completed and a
     * new one asked for once; a refusal drops the record. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!F.buf && F.request) {
            size_t size = 0, max_records = 0;
            F.request(&F.buf, &size, &max_records);
            F.cap = F.buf ? size : 0;
            F.len = 0;
        }
        if (!F.buf)
            break;
        synth s = {F.buf, F.len, F.cap};
        uint64_t t = now_ns();
        if (synth_kernel(&s, name, t, t + 1000, corr, 7, 0, 2, 128, 32, 0, 0)) {
            CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(void *)(F.buf + F.len);
            k->kind = kind;
            k->graphId = graph_id;
            k->graphNodeId = node_id;
            F.len = s.len;
            F.records++;
            return;
        }
        complete_locked();
    }
    F.dropped_unread++;
    F.dropped_total++;
}

static void put_kernel(const char *name, uint32_t corr)
{
    put_kernel_of(name, corr, 0, 0);
}

/* Under F.mu: one GRAPH_TRACE record when the kind is enabled, a buffer
 * asked for when none is open (a full one: the record is dropped). */
static void put_graph(uint32_t graph_id, uint32_t corr)
{
    if (!F.kinds[CUPTI_ACTIVITY_KIND_GRAPH_TRACE])
        return;
    if (!F.buf && F.request) {
        size_t size = 0, max_records = 0;
        F.request(&F.buf, &size, &max_records);
        F.cap = F.buf ? size : 0;
        F.len = 0;
    }
    synth s = {F.buf, F.len, F.cap};
    uint64_t t = now_ns();
    if (F.buf && synth_graph(&s, graph_id, t, t + 5000, corr)) {
        F.len = s.len;
        F.records++;
        return;
    }
    F.dropped_unread++;
    F.dropped_total++;
}

/* A graph launch as the runtime makes it: cudaGraphLaunch's callback
 * (when enabled) with the executable graph in its parameters, around the
 * GRAPH_TRACE record of graph_id.  0, or the fake driver's refusal. */
API int fake_cupti_graph_launch(uintptr_t exec, uint32_t graph_id)
{
    int r = fake_cuda_launch_begin();
    if (r != 0)
        return r;
    pthread_mutex_lock(&F.mu);
    uint32_t corr = ++F.corr;
    CUpti_CallbackFunc cb = F.graph_cb ? F.cb : NULL;
    void *user = F.cb_user;
    pthread_mutex_unlock(&F.mu);
    cudaGraphLaunch_v10000_params params = {.graphExec = (cudaGraphExec_t)exec};
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.functionName = "cudaGraphLaunch";
    d.functionParams = &params;
    d.context = FAKE_CTX;
    d.contextUid = 1;
    d.correlationId = corr;
    d.callbackSite = CUPTI_API_ENTER;
    if (cb)
        cb(user, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &d);
    pthread_mutex_lock(&F.mu);
    put_graph(graph_id, corr);
    pthread_mutex_unlock(&F.mu);
    d.callbackSite = CUPTI_API_EXIT;
    if (cb)
        cb(user, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &d);
    fake_cuda_launch_end();
    return 0;
}

/* The graph handles of this fake are small numbers: CUPTI's ids of a
 * node and a graph are those numbers plus an offset (so an id is never
 * the handle), as cuptiGetGraphNodeId / cuptiGetGraphId give them. */
#define FAKE_NODE_ID_BASE 1000000ull
#define FAKE_GRAPH_ID_BASE 500u

API CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *id)
{
    check("cuptiGetGraphNodeId", false);
    if (!node || !id)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *id = FAKE_NODE_ID_BASE + (uint64_t)(uintptr_t)node;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetGraphId(CUgraph graph, uint32_t *id)
{
    check("cuptiGetGraphId", false);
    if (!graph || !id)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *id = FAKE_GRAPH_ID_BASE + (uint32_t)(uintptr_t)graph;
    return CUPTI_SUCCESS;
}

/* One graph resource callback (CUPTI_CBID_RESOURCE_GRAPH*) as the driver
 * makes it inside a graph call (its lock held), when enabled. */
API int fake_cupti_graph_resource(int cbid, uintptr_t graph, uintptr_t node, uintptr_t original,
                                  int node_type, uintptr_t dependency, uintptr_t exec)
{
    int r = fake_cuda_launch_begin();
    if (r != 0)
        return r;
    pthread_mutex_lock(&F.mu);
    CUpti_CallbackFunc cb = cbid >= 0 && cbid < 32 && F.res_cb[cbid] ? F.cb : NULL;
    void *user = F.cb_user;
    pthread_mutex_unlock(&F.mu);
    CUpti_GraphData gd = {.graph = (CUgraph)graph,
                          .originalGraph = NULL,
                          .node = (CUgraphNode)node,
                          .originalNode = (CUgraphNode)original,
                          .nodeType = (CUgraphNodeType)node_type,
                          .dependency = (CUgraphNode)dependency,
                          .graphExec = (CUgraphExec)exec};
    CUpti_ResourceData rd = {.context = FAKE_CTX, .resourceDescriptor = &gd};
    if (cb)
        cb(user, CUPTI_CB_DOMAIN_RESOURCE, (CUpti_CallbackId)cbid, &rd);
    fake_cuda_launch_end();
    return 0;
}

/* A kernel launched on a stream being captured into graph: the launch
 * callback (when enabled) around the graph node it creates (no kernel
 * runs, no record). */
API int fake_cupti_capture_launch(const char *name, uintptr_t graph, uintptr_t node);

/* A graph launch whose graph replays one kernel node: the launch's
 * callback and GRAPH_TRACE record (fake_cupti_graph_launch) and the
 * kernel's record with the launch's correlation id, graphId and the
 * node's CUPTI id. */
API int fake_cupti_graph_launch_kernel(uintptr_t exec, uint32_t graph_id, const char *name,
                                       uint64_t node_id);

static void launch_callback(CUpti_ApiCallbackSite site, const char *name, uint32_t corr)
{
    pthread_mutex_lock(&F.mu);
    CUpti_CallbackFunc cb = F.launch_cb ? F.cb : NULL;
    void *user = F.cb_user;
    pthread_mutex_unlock(&F.mu);
    if (!cb)
        return;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = site;
    d.functionName = "cuLaunchKernel";
    d.symbolName = name;
    d.context = FAKE_CTX;
    d.contextUid = 1;
    d.correlationId = corr;
    cb(user, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
}

/* One kernel launch; 0, or the fake driver's refusal (no cuInit yet). */
API int fake_cupti_launch(const char *name)
{
    int r = fake_cuda_launch_begin();
    if (r != 0)
        return r;
    pthread_mutex_lock(&F.mu);
    uint32_t corr = ++F.corr;
    pthread_mutex_unlock(&F.mu);
    launch_callback(CUPTI_API_ENTER, name, corr);
    pthread_mutex_lock(&F.mu);
    put_kernel(name, corr);
    pthread_mutex_unlock(&F.mu);
    launch_callback(CUPTI_API_EXIT, name, corr);
    fake_cuda_launch_end();
    return 0;
}

API int fake_cupti_capture_launch(const char *name, uintptr_t graph, uintptr_t node)
{
    int r = fake_cuda_launch_begin();
    if (r != 0)
        return r;
    pthread_mutex_lock(&F.mu);
    uint32_t corr = ++F.corr;
    pthread_mutex_unlock(&F.mu);
    launch_callback(CUPTI_API_ENTER, name, corr);
    fake_cuda_launch_end(); /* the resource callback takes the lock itself */
    r = fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, graph, node, 0,
                                  CU_GRAPH_NODE_TYPE_KERNEL, 0, 0);
    if (fake_cuda_launch_begin() != 0)
        return -1;
    launch_callback(CUPTI_API_EXIT, name, corr);
    fake_cuda_launch_end();
    return r;
}

API int fake_cupti_graph_launch_kernel(uintptr_t exec, uint32_t graph_id, const char *name,
                                       uint64_t node_id)
{
    pthread_mutex_lock(&F.mu);
    uint32_t corr = F.corr + 1; /* the one fake_cupti_graph_launch takes */
    pthread_mutex_unlock(&F.mu);
    int r = fake_cupti_graph_launch(exec, graph_id);
    if (r != 0)
        return r;
    pthread_mutex_lock(&F.mu);
    put_kernel_of(name, corr, graph_id, node_id);
    pthread_mutex_unlock(&F.mu);
    return 0;
}

API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                               void *userdata)
{
    check("cuptiSubscribe", true);
    pthread_mutex_lock(&F.mu);
    CUptiResult r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (!F.subscribed) {
        F.subscribed = true;
        F.cb = callback;
        F.cb_user = userdata;
        F.launch_cb = false;
        F.graph_cb = false;
        memset(F.res_cb, 0, sizeof F.res_cb);
        *subscriber = (CUpti_SubscriberHandle)(uintptr_t)0x5b5b;
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&F.mu);
    return r;
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    (void)subscriber;
    check("cuptiUnsubscribe", true);
    pthread_mutex_lock(&F.mu);
    F.subscribed = false;
    F.cb = NULL;
    F.launch_cb = false;
    F.graph_cb = false;
    memset(F.res_cb, 0, sizeof F.res_cb);
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)subscriber;
    check("cuptiEnableCallback", true);
    pthread_mutex_lock(&F.mu);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        F.launch_cb = enable != 0;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000)
        F.graph_cb = enable != 0;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && getenv("FAKE_CUPTI_REFUSE_GRAPH_NODES")) {
        pthread_mutex_unlock(&F.mu);
        return CUPTI_ERROR_NOT_SUPPORTED; /* a CUPTI without graph node callbacks */
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid < 32)
        F.res_cb[cbid] = enable != 0;
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                  CUpti_CallbackDomain domain)
{
    (void)enable;
    (void)subscriber;
    (void)domain;
    check("cuptiEnableDomain", true);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                               CUpti_BuffersCallbackCompleteFunc complete)
{
    check("cuptiActivityRegisterCallbacks", true);
    pthread_mutex_lock(&F.mu);
    F.request = request;
    F.complete = complete;
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    check("cuptiActivityEnable", true);
    pthread_mutex_lock(&F.mu);
    if ((int)kind >= 0 && (int)kind < KINDS)
        F.kinds[kind] = true;
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    check("cuptiActivityDisable", true);
    pthread_mutex_lock(&F.mu);
    if ((int)kind >= 0 && (int)kind < KINDS)
        F.kinds[kind] = false;
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    check("cuptiActivityFlushAll", false);
    pthread_mutex_lock(&F.mu);
    F.flush_all_calls++;
    complete_locked();
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushPeriod(uint32_t time)
{
    check("cuptiActivityFlushPeriod", false);
    pthread_mutex_lock(&F.mu);
    F.flush_period_ms = time;
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    check("cuptiGetTimestamp", false);
    *timestamp = now_ns();
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *device)
{
    check("cuptiGetDeviceId", false);
    if (context != FAKE_CTX)
        return CUPTI_ERROR_INVALID_CONTEXT;
    *device = 0;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
                                                  size_t *dropped)
{
    (void)context;
    (void)stream;
    check("cuptiActivityGetNumDroppedRecords", false);
    pthread_mutex_lock(&F.mu);
    *dropped = (size_t)F.dropped_unread; /* CUPTI's count resets as it answers */
    F.dropped_unread = 0;
    pthread_mutex_unlock(&F.mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetVersion(uint32_t *version)
{
    check("cuptiGetVersion", true);
    const char *v = getenv("FAKE_CUPTI_VERSION");
    *version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : (uint32_t)CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}
