/*
 * cupti_plugin.c - libgpuprofile_cupti.so: the Trace engine's CUPTI side.
 *
 * Promises:
 *  - the core drives it through one exported table, gpufl_cupti_plugin_v1
 *    (abi/trace_abi.h); nothing else of the core is needed in-process;
 *  - CUPTI's buffers come from a pool bounded by max_buffers x buffer_bytes:
 *    when every buffer is in use a request is refused (CUPTI then drops
 *    records and counts them), so memory never grows with the run;
 *  - the buffer callbacks only move pointers under a mutex: records are
 *    decoded on the core's writer thread (drain), never on the thread that
 *    completed the buffer, and no record is allocated;
 *  - stop() forces every buffer out (cuptiActivityFlushAll(FORCED)), so a
 *    session's last kernels reach the disk at shutdown and at exit;
 *  - no CUPTI function that takes a context is called with one we made up:
 *    the only one used (cuptiActivityGetNumDroppedRecords) gets the context
 *    CUPTI handed to the completion callback;
 *  - with stack_trace, each launch callback captures the launching
 *    thread's CPU stack (stacks.h: addresses, a hash and a lookup there;
 *    symbolised on the writer thread in drain(), before the buffers, so a
 *    stack is announced before the first kernel row that uses it);
 *  - the profiling engines (engines/engine.h) are reached through their
 *    table only: they share the one CUPTI subscriber (their resource
 *    callbacks arrive through on_api, resources.c), drain in drain(), and
 *    no activity flush is asked for while one of them is armed (PC
 *    sampling: CUPTI then returns no kernel record);
 *  - the writer thread never calls the CUDA driver: the device limits the
 *    decoder wants are read on application threads (at start, at a
 *    launch's entry on a context not seen before) into a table it only
 *    reads.  At exit CUDA may be torn down before the session ends, and a
 *    driver call there blocks forever (seen on an H200: an injected
 *    program's first cuInit from the writer, inside exit());
 *  - under injection (inject.c) start() runs inside cuInit: nothing in it
 *    asks the driver then.
 */
#include "common/cupti_error.h"
#include "cupti_trace.h"
#include "decode.h"
#include "engines/engine.h"
#include "plugin.h"
#include "resources.h"
#include "scope_hooks.h"
#include "stacks.h"

#include "gpufl.h"

#include <cupti.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* metrics_host.cpp's table: PM sampling's config images and evaluation. */
extern const gp_metrics_plugin gpufl_cupti_metrics_v1;

#define EXPORT __attribute__((visibility("default")))

#define DEFAULT_BUFFER_BYTES (8u << 20)
#define DEFAULT_MAX_BUFFERS 16u
#define MIN_BUFFER_BYTES (64u << 10)
#define MAX_POOL 256u

typedef struct done_buf {
    uint8_t *p;
    size_t valid;
} done_buf;

/* Everything the callbacks share, under mu. */
static struct {
    pthread_mutex_t mu;
    uint8_t *free_list[MAX_POOL];
    size_t n_free;
    done_buf done[MAX_POOL];
    size_t n_done;
    size_t allocated;
    size_t max_buffers;
    size_t buffer_bytes;
    uint64_t refused, dropped, buffers;
    void (*kick)(void);
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* start / stop / release: one at a time. */
static pthread_mutex_t life = PTHREAD_MUTEX_INITIALIZER;
static bool running;
static bool callbacks_registered;
static fl_decoder *decoder; /* drain() only: the writer thread */
static CUpti_ActivityKind enabled[16];
static size_t n_enabled;
static fl_trace_stats start_notes; /* unavailable kinds */
static CUpti_SubscriberHandle subscriber;
static bool subscribed;
/* Read on the application's threads at every launch; set before the
 * callbacks are enabled, cleared after they are disabled. */
static size_t (*_Atomic scope_path_fn)(uint32_t *, size_t);
static _Atomic int injecting; /* start() runs inside cuInit (inject.c) */
/* CPU stacks (stack_trace): read at every launch like scope_path_fn; the
 * table itself lives from start() to release(). */
static fl_stacks *_Atomic stacks_fn;
static fl_stacks *stacks; /* under life */
static uint64_t stacks_announced;
/* The modules whose frames are the tool's: dropped from a stack's inner end. */
static const char *const tool_modules[] = {"libgpuprofile", "libcupti", "libcuda.so", "libcudart",
                                           NULL};

/* ---------------------------------------------------------------- buffers */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    pthread_mutex_lock(&pool.mu);
    if (pool.n_free > 0) {
        b = pool.free_list[--pool.n_free];
    } else if (pool.allocated < pool.max_buffers) {
        b = aligned_alloc(8, pool.buffer_bytes);
        if (b)
            pool.allocated++;
    }
    if (!b)
        pool.refused++;
    size_t bytes = pool.buffer_bytes;
    pthread_mutex_unlock(&pool.mu);
    *buffer = b;
    *size = b ? bytes : 0;
    *max_records = 0; /* as many as fit */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS)
        dropped = 0;
    if (!buffer)
        return;
    bool kick = false;
    void (*kick_fn)(void) = NULL;
    pthread_mutex_lock(&pool.mu);
    pool.dropped += dropped;
    pool.buffers++;
    if (valid == 0) {
        pool.free_list[pool.n_free++] = buffer;
    } else {
        pool.done[pool.n_done++] = (done_buf){buffer, valid};
        kick = true;
        kick_fn = pool.kick;
    }
    pthread_mutex_unlock(&pool.mu);
    if (kick && kick_fn)
        kick_fn();
}

/* ------------------------------------------------------------------ start */

/* The writer's: the limits read on application threads (driver.c). */
static bool decoder_limits(uint32_t device_id, fl_gpu_limits *out, void *user)
{
    (void)user;
    return gp_driver_limits_known(device_id, out);
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cupti_message(CUptiResult r, char *out, size_t len, const char *what)
{
    snprintf(out, len, "%s failed: %s (%d)", what, fl_cupti_name(r), (int)r);
}

/* A refusal that ends plugin_start: CUPTI answers 999 for a machine
 * without a driver as for anything else, so that cause, when it is the
 * one, comes first and CUPTI's own code after it. */
static gp_status start_refused(CUptiResult r, gp_error *err, const char *what)
{
    char m[256];
    cupti_message(r, m, sizeof m, what);
    if (gp_driver_missing())
        snprintf(err->message, sizeof err->message, "no NVIDIA driver (libcuda.so.1 not found): %s",
                 m);
    else
        snprintf(err->message, sizeof err->message, "%s", m);
    return err->status = GP_ERR_CUPTI;
}

/* A refusal of plugin_start that is not CUPTI's: status and message. */
static gp_status start_failed(gp_error *err, gp_status st, const char *message)
{
    snprintf(err->message, sizeof err->message, "%s", message);
    return err->status = st;
}

static void disable_all(void)
{
    for (size_t i = n_enabled; i-- > 0;)
        cuptiActivityDisable(enabled[i]);
    n_enabled = 0;
}

/* Enables one optional kind; a refusal is noted, not fatal. */
static void enable_optional(CUpti_ActivityKind kind, uint32_t feat, const char *what)
{
    CUptiResult r = cuptiActivityEnable(kind);
    if (r == CUPTI_SUCCESS) {
        enabled[n_enabled++] = kind;
        return;
    }
    if (!start_notes.unavailable)
        cupti_message(r, start_notes.unavailable_msg, sizeof start_notes.unavailable_msg, what);
    start_notes.unavailable |= feat;
}

/* ------------------------------------------------------------- callbacks */

/* Callbacks on the application's threads, at API calls:
 *  - entry of a kernel launch: the gpufl scopes the thread has open, keyed
 *    by the launch's correlation id (the kernel's activity record carries
 *    the same id) - kernel_detail's user_scope;
 *  - entry and exit of an allocation or free (enable_memory_tracking): the
 *    call's duration, keyed by its correlation id (the MEMORY2 record of
 *    the operation carries it) - memory_alloc_event_batch's duration_ns;
 *  - entry of a call that blocks the host until the GPU is done
 *    (enable_stack_trace with synchronization): the thread's CPU stack,
 *    keyed by the call's correlation id like a launch's (the
 *    SYNCHRONIZATION record carries it) - synchronization_event_batch's
 *    stack_id. */
enum { CB_NONE = 0, CB_LAUNCH = 1, CB_MEMOP = 2, CB_SYNC = 4 };
#define CB_IDS 2048
static uint8_t cb_kind[2][CB_IDS]; /* [runtime, driver][cbid]; set before subscribing */

typedef struct cb_id {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
} cb_id;

static const cb_id launch_cbids[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch},
};

static const cb_id memop_cbids[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync},
};

/* The calls that block the calling thread until the GPU is done
 * (cudaStreamWaitEvent makes a stream wait, not the host: not here). */
static const cb_id sync_cbids[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize},
};

/* The synchronising call in progress on this thread: a runtime call wraps
 * a driver call, which gets the runtime call's stack without a second
 * walk (whichever correlation id the record carries finds it).  gen: the
 * subscription it belongs to (an exit a past session missed is forgotten). */
static _Atomic unsigned sync_gen;
static _Thread_local struct {
    unsigned gen, depth;
    uint32_t stack_id;
} sync_tls;

static void on_sync_api(const CUpti_CallbackData *cb)
{
    unsigned gen = atomic_load_explicit(&sync_gen, memory_order_relaxed);
    if (sync_tls.gen != gen) {
        sync_tls.gen = gen;
        sync_tls.depth = 0;
    }
    if (cb->callbackSite != CUPTI_API_ENTER) {
        if (sync_tls.depth)
            sync_tls.depth--;
        return;
    }
    if (!sync_tls.depth++) {
        fl_stacks *st = atomic_load_explicit(&stacks_fn, memory_order_acquire);
        sync_tls.stack_id = st ? fl_stacks_capture(st, 0) : 0;
    }
    fl_sync_put(cb->correlationId, sync_tls.stack_id);
}

/* The entry times of the allocation calls in progress on this thread (a
 * runtime call wraps a driver call). */
static _Thread_local struct {
    uint64_t t[4];
    unsigned n;
} memop_tls;

static uint8_t kind_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? 0
            : domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1
                                                   : -1;
    return d >= 0 && cbid < CB_IDS ? cb_kind[d][cbid] : CB_NONE;
}

/* Launch callbacks open on this thread, of subscription gen (an exit a
 * past session missed is forgotten). */
static _Atomic unsigned launch_gen;
static _Thread_local struct {
    unsigned gen, depth;
} launch_tls;

/* A launch's entry to the engines that name their ranges by kernel. */
static void engines_kernel_launch(void *ctx, const char *symbol)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (fl_engines[i]->kernel_launch)
            fl_engines[i]->kernel_launch(ctx, symbol);
}

static void CUPTIAPI on_api(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *data)
{
    (void)user;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        fl_resource_event(cbid, data);
        return;
    }
    const CUpti_CallbackData *cb = data;
    if (!cb)
        return;
    uint8_t kind = kind_of(domain, cbid);
    if (kind == CB_LAUNCH) {
        /* A runtime launch calls the driver's, whose callback nests in
         * it: the outermost names the launch (once). */
        unsigned gen = atomic_load_explicit(&launch_gen, memory_order_relaxed);
        if (launch_tls.gen != gen) {
            launch_tls.gen = gen;
            launch_tls.depth = 0;
        }
        if (cb->callbackSite == CUPTI_API_ENTER) {
            gp_driver_limits_note(cb->context);
            if (launch_tls.depth++ == 0)
                engines_kernel_launch(cb->context, cb->symbolName);
        } else if (launch_tls.depth > 0) {
            launch_tls.depth--;
        }
        size_t (*fn)(uint32_t *, size_t) =
            atomic_load_explicit(&scope_path_fn, memory_order_acquire);
        fl_stacks *st = atomic_load_explicit(&stacks_fn, memory_order_acquire);
        if ((!fn && !st) || cb->callbackSite != CUPTI_API_ENTER)
            return;
        uint32_t ids[FL_SCOPE_PATH_MAX];
        size_t n = fn ? fn(ids, FL_SCOPE_PATH_MAX) : 0;
        fl_launch_put(cb->correlationId, ids, n, st ? fl_stacks_capture(st, 0) : 0);
    } else if (kind == CB_MEMOP) {
        uint64_t now = 0;
        cuptiGetTimestamp(&now); /* the activity records' clock */
        if (cb->callbackSite == CUPTI_API_ENTER) {
            if (memop_tls.n < 4)
                memop_tls.t[memop_tls.n] = now;
            memop_tls.n++;
        } else if (memop_tls.n > 0) {
            memop_tls.n--;
            if (memop_tls.n < 4 && now >= memop_tls.t[memop_tls.n])
                fl_memop_duration_put(cb->correlationId, now - memop_tls.t[memop_tls.n]);
        }
    } else if (kind == CB_SYNC) {
        on_sync_api(cb);
    }
}

static CUptiResult enable_list(const cb_id *ids, size_t n, uint8_t kind)
{
    CUptiResult r = CUPTI_SUCCESS;
    for (size_t i = 0; i < n && r == CUPTI_SUCCESS; i++) {
        int d = ids[i].domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1;
        if (ids[i].cbid < CB_IDS)
            cb_kind[d][ids[i].cbid] = kind;
        r = cuptiEnableCallback(1, subscriber, ids[i].domain, ids[i].cbid);
    }
    return r;
}

/* Subscribes the API callbacks the options need: launches for user_scope
 * (scope_fn set) and CPU stacks (st set), synchronising calls for their
 * CPU stacks (st and syncs set), allocation calls for their durations
 * (memory).  CUPTI
 * allows one subscriber per process: when another tool (a framework's own
 * profiler) holds it, kernels stay unattributed, allocations untimed, and
 * the reason is noted.  Returns the CB_* kinds now enabled. */
static unsigned subscribe_callbacks(size_t (*scope_fn)(uint32_t *, size_t), fl_stacks *st,
                                    bool syncs, bool memory, bool pc)
{
    syncs = syncs && st;
    bool launches = scope_fn || st;
    if (!launches && !memory && !pc)
        return CB_NONE;
    fl_launch_scope_reset();
    memset(cb_kind, 0, sizeof cb_kind);
    atomic_store_explicit(&scope_path_fn, scope_fn, memory_order_release);
    atomic_store_explicit(&stacks_fn, st, memory_order_release);
    CUptiResult r = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_api, NULL);
    if (r == CUPTI_SUCCESS && launches) {
        atomic_fetch_add_explicit(&launch_gen, 1, memory_order_relaxed);
        r = enable_list(launch_cbids, sizeof launch_cbids / sizeof launch_cbids[0], CB_LAUNCH);
    }
    if (r == CUPTI_SUCCESS && syncs) {
        atomic_fetch_add_explicit(&sync_gen, 1, memory_order_relaxed);
        r = enable_list(sync_cbids, sizeof sync_cbids / sizeof sync_cbids[0], CB_SYNC);
    }
    if (r == CUPTI_SUCCESS && memory)
        r = enable_list(memop_cbids, sizeof memop_cbids / sizeof memop_cbids[0], CB_MEMOP);
    if (r == CUPTI_SUCCESS && pc)
        r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    if (r == CUPTI_SUCCESS) {
        subscribed = true;
        return (launches ? CB_LAUNCH : 0u) | (memory ? CB_MEMOP : 0u) | (syncs ? CB_SYNC : 0u);
    }
    if (!start_notes.unavailable)
        cupti_message(r, start_notes.unavailable_msg, sizeof start_notes.unavailable_msg,
                      "cuptiSubscribe (API callbacks for user_scope and allocation timing)");
    if (scope_fn)
        start_notes.unavailable |= FL_FEAT_SCOPES;
    if (st) {
        start_notes.unavailable |= FL_FEAT_STACKS;
        cupti_message(r, start_notes.stacks_msg, sizeof start_notes.stacks_msg,
                      "cuptiSubscribe (launch callbacks for CPU stacks)");
    }
    /* Without resource callbacks no later context is seen. */
    for (size_t i = 0; pc && i < fl_n_engines; i++)
        if (fl_engines[i]->fail)
            fl_engines[i]->fail(r, fl_engines[i]->contexts_what);
    if (subscriber)
        cuptiUnsubscribe(subscriber);
    subscriber = NULL;
    atomic_store_explicit(&scope_path_fn, NULL, memory_order_release);
    atomic_store_explicit(&stacks_fn, NULL, memory_order_release);
    return CB_NONE;
}

static void unsubscribe_callbacks(void)
{
    if (subscribed) {
        cuptiUnsubscribe(subscriber);
        subscribed = false;
        subscriber = NULL;
    }
    atomic_store_explicit(&scope_path_fn, NULL, memory_order_release);
    atomic_store_explicit(&stacks_fn, NULL, memory_order_release);
}

/* The stack table when stack_trace is asked for; NULL with the reason
 * noted (FL_FEAT_STACKS) when it cannot be made. */
static fl_stacks *make_stacks(const fl_trace_options *o)
{
    if (!o->stack_trace)
        return NULL;
    fl_stacks_config sc = {
        .max_stacks = o->max_stacks, .skip_modules = tool_modules, .demangle = fl_demangle};
    gp_error err;
    fl_stacks *st = fl_stacks_create(&sc, &err);
    if (!st) {
        start_notes.unavailable |= FL_FEAT_STACKS;
        snprintf(start_notes.stacks_msg, sizeof start_notes.stacks_msg, "%s", err.message);
    }
    return st;
}

static void *current_context(void)
{
    return atomic_load(&injecting) ? NULL : gp_driver_context();
}

/* The activity kinds the options ask for: kernels, or the start is
 * refused (why); the others noted when CUPTI refuses them. */
static bool enable_kinds(const fl_trace_options *o, gp_error *err)
{
    /* Kernels are the engine: without them there is no Trace.  With
     * CONCURRENT_KERNEL on, CUPTI's SASS metrics count 0 for every
     * instruction; with KERNEL (kernels serialised) they count (an H200,
     * CUDA 13.0: tests/gpu/sass_probe.cu --activity, --serial). */
    CUpti_ActivityKind kernels =
        o->sass_metrics ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    CUptiResult r = cuptiActivityEnable(kernels);
    if (r != CUPTI_SUCCESS) {
        start_refused(r, err,
                      o->sass_metrics ? "cuptiActivityEnable(KERNEL)"
                                      : "cuptiActivityEnable(CONCURRENT_KERNEL)");
        return false;
    }
    n_enabled = 0;
    enabled[n_enabled++] = kernels;
    enable_optional(CUPTI_ACTIVITY_KIND_MEMCPY, FL_FEAT_MEMCPY, "cuptiActivityEnable(MEMCPY)");
    enable_optional(CUPTI_ACTIVITY_KIND_MEMCPY2, FL_FEAT_MEMCPY, "cuptiActivityEnable(MEMCPY2)");
    enable_optional(CUPTI_ACTIVITY_KIND_MEMSET, FL_FEAT_MEMSET, "cuptiActivityEnable(MEMSET)");
    enable_optional(CUPTI_ACTIVITY_KIND_OVERHEAD, FL_FEAT_OVERHEAD,
                    "cuptiActivityEnable(OVERHEAD)");
    if (o->synchronization)
        enable_optional(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, FL_FEAT_SYNC,
                        "cuptiActivityEnable(SYNCHRONIZATION)");
    if (o->memory)
        enable_optional(CUPTI_ACTIVITY_KIND_MEMORY2, FL_FEAT_MEMORY,
                        "cuptiActivityEnable(MEMORY2)");
    if (o->external_correlation)
        enable_optional(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, FL_FEAT_EXTERNAL,
                        "cuptiActivityEnable(EXTERNAL_CORRELATION)");
    if (o->nvtx)
        enable_optional(CUPTI_ACTIVITY_KIND_MARKER, FL_FEAT_NVTX, "cuptiActivityEnable(MARKER)");
    if (o->graphs)
        enable_optional(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, FL_FEAT_GRAPHS,
                        "cuptiActivityEnable(GRAPH_TRACE)");
    return true;
}

static void flush_completed(void); /* drain's, below */

/* Every engine released, walking the table backward (an engine that
 * uses another's aggregator is listed after it). */
static void release_engines(void)
{
    for (size_t i = fl_n_engines; i-- > 0;)
        fl_engines[i]->release();
}

/* Every engine started, in the table's order, over one environment (an
 * engine may leave in it what a later one uses: Deep's aggregator).
 * Returns whether some engine that follows CUDA contexts runs (the
 * resource callbacks are needed). */
static bool start_engines(const fl_trace_options *o, int64_t clock_offset_ns)
{
    void *ctx0 = atomic_load(&injecting) ? NULL : gp_driver_context();
    fl_engine_env env = {
        .ctx0 = ctx0,
        /* The one test of a late start (CUDA work before gpufl_init) the
         * Profiler API's engines share: a context already current here. */
        .late = !atomic_load(&injecting) && ctx0 != NULL,
        .clock_offset_ns = clock_offset_ns,
        .host = &gpufl_cupti_metrics_v1,
        .current_ctx = current_context,
        .ctx_synchronize = gp_driver_ctx_synchronize,
        .activity_flush = flush_completed,
    };
    fl_cupti_trace_install(&gpufl_cupti_metrics_v1);
    fl_scope_hooks_select(o);
    bool follow = false;
    for (size_t i = 0; i < fl_n_engines; i++) {
        const fl_engine *e = fl_engines[i];
        uint32_t st = e->start(o, &env);
        if (e->context_created && st == FL_PC_ACTIVE)
            follow = true;
    }
    return follow;
}

/* The activity API's sample aggregator an engine feeds through the
 * decoder (NULL: none). */
static fl_agg *engines_activity_sink(void)
{
    for (size_t i = 0; i < fl_n_engines; i++) {
        fl_agg *p = fl_engines[i]->activity_sink ? fl_engines[i]->activity_sink() : NULL;
        if (p)
            return p;
    }
    return NULL;
}

static gp_status plugin_start(const fl_trace_options *o, gp_error *err)
{
    gp_error scratch;
    if (!err)
        err = &scratch;
    pthread_mutex_lock(&life);
    if (running) {
        pthread_mutex_unlock(&life);
        return start_failed(err, GP_ERR_STATE, "the CUPTI plugin is already tracing a session");
    }
    memset(&start_notes, 0, sizeof start_notes);
    size_t bytes = o->buffer_bytes ? o->buffer_bytes : DEFAULT_BUFFER_BYTES;
    if (bytes < MIN_BUFFER_BYTES)
        bytes = MIN_BUFFER_BYTES;
    bytes = (bytes + 7) & ~(size_t)7;
    size_t maxb = o->max_buffers ? o->max_buffers : DEFAULT_MAX_BUFFERS;
    if (maxb > MAX_POOL)
        maxb = MAX_POOL;

    /* The anchor: CUPTI's clock and the wall clock read back to back. */
    uint64_t cupti_t = 0;
    CUptiResult r = cuptiGetTimestamp(&cupti_t);
    if (r != CUPTI_SUCCESS) {
        pthread_mutex_unlock(&life);
        return start_refused(r, err, "cuptiGetTimestamp");
    }
    uint64_t w = wall_ns();
    fl_decoder_config dc = {.clock_offset_ns = (int64_t)(w - cupti_t),
                            .limits = decoder_limits,
                            .limits_user = NULL,
                            .demangle = true,
                            .scopes = false};

    pthread_mutex_lock(&pool.mu);
    pool.max_buffers = maxb;
    pool.buffer_bytes = bytes;
    pool.kick = o->kick;
    pool.refused = pool.dropped = pool.buffers = 0;
    pthread_mutex_unlock(&pool.mu);

    if (!callbacks_registered) {
        r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
        if (r != CUPTI_SUCCESS) {
            pthread_mutex_unlock(&life);
            return start_refused(r, err, "cuptiActivityRegisterCallbacks");
        }
        callbacks_registered = true;
    }
    if (!enable_kinds(o, err)) {
        pthread_mutex_unlock(&life);
        return err->status;
    }
    fl_stacks_destroy(stacks); /* a previous session's, released without stop */
    stacks = make_stacks(o);
    stacks_announced = 0;
    /* The engines: on the context current here (gpufl_init after CUDA
     * came up), and on each context created later (resource callbacks). */
    bool follow = start_engines(o, dc.clock_offset_ns);
    unsigned cbs =
        subscribe_callbacks(o->scope_path, stacks, o->synchronization, o->memory, follow);
    if (!(cbs & CB_LAUNCH)) {
        fl_stacks_destroy(stacks);
        stacks = NULL;
    }
    dc.scopes = (cbs & CB_LAUNCH) != 0;
    dc.memop_durations = (cbs & CB_MEMOP) != 0;
    dc.pcs = engines_activity_sink();
    fl_decoder *d = fl_decoder_create(&dc);
    if (!d) {
        unsubscribe_callbacks();
        fl_stacks_destroy(stacks);
        stacks = NULL;
        release_engines();
        disable_all();
        pthread_mutex_unlock(&life);
        return start_failed(err, GP_ERR_NO_MEMORY, "out of memory for the activity decoder");
    }
    decoder = d;
    running = true;
    pthread_mutex_unlock(&life);
    return GP_OK;
}

static size_t plugin_devices(fl_gpu_limits *out, size_t cap)
{
    /* Inside cuInit the driver cannot be asked (it is initialising). */
    if (atomic_load(&injecting))
        return 0;
    return gp_driver_devices(out, cap);
}

/* ------------------------------------------------------------------ drain */

static void emit_stacks(void *user, const uint32_t *ids, const char *const *texts, size_t n)
{
    const fl_trace_sink *sink = user;
    sink->stacks(sink->user, ids, texts, n);
}

static void flush_completed(void)
{
    cuptiActivityFlushAll(0);
}

/* The activity buffers completed so far, decoded into sink. */
static void drain_buffers(const fl_trace_sink *sink)
{
    /* Stacks first: every stack a row below can name was captured at its
     * launch, before its buffer completed. */
    if (stacks && sink->stacks)
        stacks_announced += fl_stacks_announce(stacks, emit_stacks, (void *)sink);
    done_buf local[MAX_POOL];
    pthread_mutex_lock(&pool.mu);
    size_t n = pool.n_done;
    memcpy(local, pool.done, n * sizeof *local);
    pool.n_done = 0;
    pthread_mutex_unlock(&pool.mu);
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (decoder)
            fl_decoder_feed(decoder, sink, local[i].p, local[i].valid);
    if (decoder)
        fl_decoder_flush(decoder, sink);
    pthread_mutex_lock(&pool.mu);
    for (size_t i = 0; i < n; i++)
        pool.free_list[pool.n_free++] = local[i].p;
    pthread_mutex_unlock(&pool.mu);
}

static void plugin_drain(const fl_trace_sink *sink)
{
    drain_buffers(sink);
    /* Each engine's rows; a collection point, if one is due, flushes the
     * activity buffers while its sampling is stopped (env.activity_flush). */
    for (size_t i = 0; i < fl_n_engines; i++)
        fl_engines[i]->drain(sink);
}

/* A collection point, for each engine that has them (SASS metrics are
 * read at the end only: sassmetrics.c). */
static void plugin_collect(void)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (fl_engines[i]->collect)
            fl_engines[i]->collect();
}

/* Whether an engine holds the activity flush back now. */
static bool engines_armed(void)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (fl_engines[i]->armed && fl_engines[i]->armed())
            return true;
    return false;
}

static void plugin_flush(void)
{
    /* Under life: never concurrent with stop() disabling the kinds; not
     * while PC sampling is armed (CUPTI would return no kernel record). */
    pthread_mutex_lock(&life);
    if (running && !engines_armed())
        cuptiActivityFlushAll(0);
    pthread_mutex_unlock(&life);
}

static void plugin_stop(void)
{
    pthread_mutex_lock(&life);
    if (running) {
        /* PC sampling stopped first: a forced flush returns no kernel
         * record while it is armed.  The next drain reads it. */
        for (size_t i = 0; i < fl_n_engines; i++)
            fl_engines[i]->stop();
        unsubscribe_callbacks();
        /* Forced: buffers still being filled come out too. */
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        disable_all();
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        running = false;
    }
    pthread_mutex_unlock(&life);
}

static void plugin_stats(fl_trace_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&life);
    fl_decoder_stats(decoder, out);
    out->unavailable = start_notes.unavailable;
    memcpy(out->unavailable_msg, start_notes.unavailable_msg, sizeof out->unavailable_msg);
    memcpy(out->stacks_msg, start_notes.stacks_msg, sizeof out->stacks_msg);
    fl_stacks_stats ss;
    fl_stacks_counts(stacks, &ss);
    out->stacks = stacks_announced;
    out->stack_captures = ss.captures;
    out->stacks_overflow = ss.overflow;
    out->stacks_max = ss.max_stacks;
    pthread_mutex_unlock(&life);
    pthread_mutex_lock(&pool.mu);
    out->cupti_dropped = pool.dropped;
    out->buffers_refused = pool.refused;
    out->buffers = pool.buffers;
    out->pool_bytes = (uint64_t)pool.allocated * pool.buffer_bytes;
    pthread_mutex_unlock(&pool.mu);
    for (uint32_t k = 0; k < FL_ENGINE_SLOTS; k++)
        out->engines[k].engine = k;
    for (size_t i = 0; i < fl_n_engines; i++)
        fl_engines[i]->stats(out);
}

static void plugin_release(void)
{
    pthread_mutex_lock(&life);
    if (!running) {
        fl_decoder_destroy(decoder);
        decoder = NULL;
        fl_stacks_destroy(stacks);
        stacks = NULL;
        release_engines();
        pthread_mutex_lock(&pool.mu);
        /* Buffers CUPTI still holds (none after a forced flush) stay
         * counted in allocated and are never freed here. */
        for (size_t i = 0; i < pool.n_free; i++)
            free(pool.free_list[i]);
        pool.allocated -= pool.n_free;
        pool.n_free = 0;
        pool.kick = NULL;
        pthread_mutex_unlock(&pool.mu);
    }
    pthread_mutex_unlock(&life);
}

static const fl_trace_layout layout = FL_TRACE_LAYOUT;

EXPORT const fl_trace_plugin gpufl_cupti_plugin_v1 = {
    .abi = FL_TRACE_ABI,
    .layout = &layout,
    .version = GP_PLUGIN_VERSION,
    .start = plugin_start,
    .devices = plugin_devices,
    .drain = plugin_drain,
    .flush = plugin_flush,
    .stop = plugin_stop,
    .stats = plugin_stats,
    .release = plugin_release,
    .collect = plugin_collect,
    .range_begin = fl_scope_hooks_begin,
    .range_end = fl_scope_hooks_end,
};

void gp_plugin_injecting(bool on)
{
    atomic_store(&injecting, on ? 1 : 0);
}
