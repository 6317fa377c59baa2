/*
 * cupti_plugin.c - libgpuprofile_cupti.so: the Trace engine's CUPTI side.
 *
 * Promises:
 *  - the core drives it through one exported table, gpufl_cupti_plugin_v1
 *    (abi/trace_abi.h); nothing else of the core is needed in-process;
 *  - CUPTI's buffers come from pool.c's bounded pool, whose callbacks call
 *    no CUPTI function; records are decoded on the core's writer thread
 *    (drain), which also asks CUPTI's count of dropped records; buffers
 *    completed before a session drains (injection: launches before the
 *    deferred start is ready) wait there for the first drain;
 *  - partly filled buffers come out on CUPTI's own period
 *    (cuptiActivityFlushPeriod), so the writer asks for no flush and holds
 *    none of our locks across one; only where CUPTI refuses the period, or
 *    an engine holds flushes back (PC sampling), the writer still asks;
 *  - stop() forces every buffer out (cuptiActivityFlushAll(FORCED)), so a
 *    session's last kernels reach the disk at shutdown and at exit;
 *  - no CUPTI function that takes a context is called with one we made up
 *    or one that may be gone: the dropped count is asked only for buffers
 *    CUPTI handed over with no context;
 *  - with stack_trace, each launch callback captures the launching
 *    thread's CPU stack (stacks.h: addresses, a hash and a lookup there;
 *    symbolised on the writer thread in drain(), before the buffers, so a
 *    stack is announced before the first kernel row that uses it);
 *  - the profiling engines (engines/engine.h) are reached through their
 *    table only: they share the one CUPTI subscriber (their resource
 *    callbacks arrive through on_api, resources.c), drain in drain(), and
 *    no activity flush is asked for while one of them is armed (PC
 *    sampling: CUPTI then returns no kernel record);
 *  - neither the writer thread nor any CUPTI callback calls the CUDA
 *    driver: the device limits the decoder wants are read by ordinal at
 *    start (driver.c, after cuInit) into a table they only read.  Inside a
 *    launch callback the launch holds the driver's lock a second cuInit
 *    (cuBLAS's own runtime) waits for; at exit CUDA may be torn down before
 *    the session ends, and a driver call there blocks forever;
 *  - under injection (inject.c) only gp_plugin_attach_early runs inside
 *    cuInit; start() runs later on the injection's own thread.
 */
#include "cbids.h"
#include "capture_cb.h"
#include "common/cupti_error.h"
#include "cupti_trace.h"
#include "decode.h"
#include "engines/engine.h"
#include "plugin.h"
#include "pool.h"
#include "graphs.h"
#include "kinds.h"
#include "resources.h"
#include "scope_hooks.h"
#include "pystack.h"
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
#define FLUSH_PERIOD_MS 1000u /* partly filled buffers out, once a second */

/* start / stop / release: one at a time. */
static pthread_mutex_t life = PTHREAD_MUTEX_INITIALIZER;
static bool running;
static bool callbacks_registered;
static bool early;                 /* gp_plugin_attach_early's CUPTI state, no session yet */
static _Atomic bool flush_period;  /* CUPTI flushes on its own period */
static fl_decoder *decoder;        /* drain() only: the writer thread */
static fl_trace_stats start_notes; /* unavailable kinds */
static CUpti_SubscriberHandle subscriber;
static bool subscribed;
/* Read on the application's threads at every launch; set before the
 * callbacks are enabled, cleared after they are disabled. */
static size_t (*_Atomic scope_path_fn)(uint32_t *, size_t);
/* Why NVTX was not handed to CUPTI (inject.c), for the closing notes. */
static char nvtx_note[256];
static _Atomic bool nvtx_noted;
/* CPU stacks (stack_trace): read at every launch like scope_path_fn; the
 * table itself lives from start() to release(). */
static fl_stacks *_Atomic stacks_fn;
static fl_stacks *stacks; /* under life */
static uint64_t stacks_announced;
/* The modules whose frames are the tool's: dropped from a stack's inner end. */
static const char *const tool_modules[] = {"libgpuprofile", "libcupti", "libcuda.so", "libcudart",
                                           NULL};

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

/* A refusal that ends plugin_start: CUPTI answers 999 for a machine
 * without a driver as for anything else, so that cause, when it is the
 * one, comes first and CUPTI's own code after it. */
static gp_status start_refused(CUptiResult r, gp_error *err, const char *what)
{
    char m[256];
    fl_kinds_message(r, m, sizeof m, what);
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
enum { CB_NONE = 0, CB_LAUNCH = 1, CB_MEMOP = 2, CB_SYNC = 4, CB_GRAPH = 8 };
#define CB_IDS 2048
/* [runtime, driver][cbid]: set while launches may already call on_api
 * (after gp_plugin_attach_early), hence atomic. */
static _Atomic uint8_t cb_kind[2][CB_IDS];

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
    return d >= 0 && cbid < CB_IDS ? atomic_load_explicit(&cb_kind[d][cbid], memory_order_relaxed)
                                   : CB_NONE;
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
        if (!fl_graphs_event(cbid, data, atomic_load_explicit(&stacks_fn, memory_order_acquire)))
            fl_resource_event(cbid, data);
        return;
    }
    if (fl_capture_cb(domain, cbid, data)) /* capture windows' edges (capture_cb.c) */
        return;
    const CUpti_CallbackData *cb = data;
    if (!cb)
        return;
    uint8_t kind = kind_of(domain, cbid);
    if ((kind == CB_LAUNCH || kind == CB_GRAPH) && cb->callbackSite == CUPTI_API_ENTER) {
        uint64_t exec = fl_graph_launch_exec(domain, cbid, cb->functionParams);
        if (exec)
            fl_graph_exec_put(cb->correlationId, exec);
    }
    if (kind == CB_LAUNCH) {
        /* A runtime launch calls the driver's, whose callback nests in
         * it: the outermost names the launch (once). */
        unsigned gen = atomic_load_explicit(&launch_gen, memory_order_relaxed);
        if (launch_tls.gen != gen) {
            launch_tls.gen = gen;
            launch_tls.depth = 0;
        }
        bool outer = false;
        if (cb->callbackSite == CUPTI_API_ENTER) {
            if ((outer = launch_tls.depth++ == 0)) {
                engines_kernel_launch(cb->context, cb->symbolName);
                fl_graphs_launch_enter(cb->symbolName);
            }
        } else if (launch_tls.depth > 0 && --launch_tls.depth == 0) {
            fl_graphs_launch_exit();
        }
        size_t (*fn)(uint32_t *, size_t) =
            atomic_load_explicit(&scope_path_fn, memory_order_acquire);
        fl_stacks *st = atomic_load_explicit(&stacks_fn, memory_order_acquire);
        if ((!fn && !st) || cb->callbackSite != CUPTI_API_ENTER)
            return;
        uint32_t ids[FL_SCOPE_PATH_MAX];
        size_t n = fn ? fn(ids, FL_SCOPE_PATH_MAX) : 0;
        uint32_t stack_id = st ? fl_stacks_capture(st, 0) : 0;
        fl_launch_put(cb->correlationId, ids, n, stack_id);
        if (outer) /* a node this launch makes in a stream capture: its stack */
            fl_graphs_launch_stack(stack_id);
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

static CUptiResult enable_list(const fl_cb_id *ids, size_t n, uint8_t kind)
{
    CUptiResult r = CUPTI_SUCCESS;
    for (size_t i = 0; i < n && r == CUPTI_SUCCESS; i++) {
        int d = ids[i].domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1;
        if (ids[i].cbid < CB_IDS)
            atomic_store_explicit(&cb_kind[d][ids[i].cbid], kind, memory_order_relaxed);
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
                                    bool syncs, bool memory, bool pc, bool graphs)
{
    syncs = syncs && st;
    bool launches = scope_fn || st, graph_nodes = graphs;
    graphs = graphs && !launches; /* the launches include the graph launches */
    if (!launches && !memory && !pc && !graphs)
        return CB_NONE;
    fl_launch_scope_reset();
    if (!subscribed)
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < CB_IDS; i++)
                atomic_store_explicit(&cb_kind[d][i], CB_NONE, memory_order_relaxed);
    atomic_store_explicit(&scope_path_fn, scope_fn, memory_order_release);
    atomic_store_explicit(&stacks_fn, st, memory_order_release);
    /* Injection subscribed already (gp_plugin_attach_early): the same
     * subscriber, CUPTI allowing one per process. */
    CUptiResult r =
        subscribed ? CUPTI_SUCCESS : cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_api, NULL);
    if (r == CUPTI_SUCCESS && launches) {
        atomic_fetch_add_explicit(&launch_gen, 1, memory_order_relaxed);
        r = enable_list(fl_launch_cbids, fl_n_launch_cbids, CB_LAUNCH);
    }
    if (r == CUPTI_SUCCESS && syncs) {
        atomic_fetch_add_explicit(&sync_gen, 1, memory_order_relaxed);
        r = enable_list(fl_sync_cbids, fl_n_sync_cbids, CB_SYNC);
    }
    if (r == CUPTI_SUCCESS && memory)
        r = enable_list(fl_memop_cbids, fl_n_memop_cbids, CB_MEMOP);
    if (r == CUPTI_SUCCESS && graphs) /* their graph_exec_key */
        r = enable_list(fl_graph_cbids, fl_n_graph_cbids, CB_GRAPH);
    CUptiResult g = r == CUPTI_SUCCESS && graph_nodes ? fl_graphs_subscribe(subscriber) : r;
    if (graph_nodes && g != CUPTI_SUCCESS) /* graph_node_definition: optional */
        fl_kinds_message(g, start_notes.graph_nodes_msg, sizeof start_notes.graph_nodes_msg,
                         "graph resource callbacks");
    if (r == CUPTI_SUCCESS && pc)
        r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    if (r == CUPTI_SUCCESS) {
        subscribed = true;
        return (launches ? CB_LAUNCH : 0u) | (memory ? CB_MEMOP : 0u) | (syncs ? CB_SYNC : 0u) |
               (graphs ? CB_GRAPH : 0u);
    }
    if (!start_notes.unavailable)
        fl_kinds_message(r, start_notes.unavailable_msg, sizeof start_notes.unavailable_msg,
                         "cuptiSubscribe (API callbacks for user_scope and allocation timing)");
    if (scope_fn)
        start_notes.unavailable |= FL_FEAT_SCOPES;
    if (st) {
        start_notes.unavailable |= FL_FEAT_STACKS;
        fl_kinds_message(r, start_notes.stacks_msg, sizeof start_notes.stacks_msg,
                         "cuptiSubscribe (launch callbacks for CPU stacks)");
    }
    /* Without resource callbacks no later context is seen. */
    for (size_t i = 0; pc && i < fl_n_engines; i++)
        if (fl_engines[i]->fail)
            fl_engines[i]->fail(r, fl_engines[i]->contexts_what);
    if (subscriber)
        cuptiUnsubscribe(subscriber);
    subscriber = NULL;
    subscribed = false;
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
    fl_capture_cb_stop();
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
    return gp_driver_context();
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
static bool start_engines(const fl_trace_options *o, int64_t clock_offset_ns, void *ctx0)
{
    fl_engine_env env = {
        .ctx0 = ctx0,
        /* The one test of a late start (CUDA work before gpufl_init) the
         * Profiler API's engines share: a context already current here. */
        .late = ctx0 != NULL,
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
    /* The driver asked before life is taken: this may be the process's
     * first cuInit, which calls InitializeInjection (the program runs under
     * CUDA_INJECTION64_PATH and starts its own session first), and that
     * takes life too. */
    void *ctx0 = gp_driver_context();
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
    if (maxb > FL_POOL_MAX)
        maxb = FL_POOL_MAX;

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

    fl_pool_configure(maxb, bytes, o->kick, early); /* injection's counts are this session's */

    if (!callbacks_registered) {
        r = fl_pool_register();
        if (r != CUPTI_SUCCESS) {
            pthread_mutex_unlock(&life);
            return start_refused(r, err, "cuptiActivityRegisterCallbacks");
        }
        callbacks_registered = true;
    }
    const char *refused = "";
    r = fl_kinds_start(o, early, &start_notes, &refused);
    if (r != CUPTI_SUCCESS) {
        pthread_mutex_unlock(&life);
        return start_refused(r, err, refused);
    }
    fl_stacks_destroy(stacks); /* a previous session's, released without stop */
    stacks = make_stacks(o);
    stacks_announced = 0;
    /* The engines: on the context current here (gpufl_init after CUDA
     * came up), and on each context created later (resource callbacks). */
    bool follow = start_engines(o, dc.clock_offset_ns, ctx0);
    fl_graphs_start(o->graphs);
    dc.graph_node_stack = o->graphs ? fl_graphs_node_stack : NULL;
    unsigned cbs = subscribe_callbacks(o->scope_path, stacks, o->synchronization, o->memory, follow,
                                       o->graphs);
    if (!(cbs & CB_LAUNCH)) {
        fl_stacks_destroy(stacks);
        stacks = NULL;
    }
    /* Capture windows' edges ride on the launch subscription; without it
     * no window opens and the session says none was captured. */
    if (!(cbs & CB_LAUNCH) || fl_capture_cb_start(o, subscriber) != CUPTI_SUCCESS)
        fl_capture_cb_stop();
    dc.scopes = (cbs & CB_LAUNCH) != 0;
    dc.memop_durations = (cbs & CB_MEMOP) != 0;
    dc.pcs = engines_activity_sink();
    fl_decoder *d = fl_decoder_create(&dc);
    if (!d) {
        unsubscribe_callbacks();
        fl_stacks_destroy(stacks);
        stacks = NULL;
        release_engines();
        fl_kinds_disable_all();
        pthread_mutex_unlock(&life);
        return start_failed(err, GP_ERR_NO_MEMORY, "out of memory for the activity decoder");
    }
    decoder = d;
    running = true;
    early = false;
    /* CUPTI's own flush period, unless an engine holds flushes back. */
    atomic_store(&flush_period,
                 !o->pc_sampling && cuptiActivityFlushPeriod(FLUSH_PERIOD_MS) == CUPTI_SUCCESS);
    pthread_mutex_unlock(&life);
    return GP_OK;
}

/* The pool's bounds from the environment gpu-profile sets (the session's
 * config, read later by the core, cannot change a buffer's size once
 * CUPTI holds it): the same limits as the core's fields. */
static void early_pool_bounds(void)
{
    const char *kib = getenv("GPUFL_CUPTI_BUFFER_KIB"), *maxb = getenv("GPUFL_CUPTI_MAX_BUFFERS");
    unsigned long k = kib && *kib ? strtoul(kib, NULL, 10) : 0;
    unsigned long m = maxb && *maxb ? strtoul(maxb, NULL, 10) : 0;
    size_t bytes = k && k <= 1048576ul ? (size_t)k * 1024u : DEFAULT_BUFFER_BYTES;
    if (bytes < MIN_BUFFER_BYTES)
        bytes = MIN_BUFFER_BYTES;
    fl_pool_configure(m && m <= FL_POOL_MAX ? (size_t)m : DEFAULT_MAX_BUFFERS, bytes, NULL, false);
}

bool gp_plugin_attach_early(char *why, size_t len)
{
    pthread_mutex_lock(&life);
    CUptiResult r = CUPTI_SUCCESS;
    const char *what = "";
    if (!running && !early) {
        memset(&start_notes, 0, sizeof start_notes);
        early_pool_bounds();
        if (!callbacks_registered) {
            what = "cuptiActivityRegisterCallbacks";
            r = fl_pool_register();
            callbacks_registered = r == CUPTI_SUCCESS;
        }
        fl_kinds_forget();
        if (r == CUPTI_SUCCESS) {
            what = "cuptiActivityEnable(CONCURRENT_KERNEL)";
            r = fl_kinds_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        }
        if (r == CUPTI_SUCCESS) {
            fl_kinds_optional(CUPTI_ACTIVITY_KIND_MEMCPY, FL_FEAT_MEMCPY,
                              "cuptiActivityEnable(MEMCPY)", &start_notes);
            fl_kinds_optional(CUPTI_ACTIVITY_KIND_MEMSET, FL_FEAT_MEMSET,
                              "cuptiActivityEnable(MEMSET)", &start_notes);
            what = "cuptiSubscribe";
            r = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_api, NULL);
        }
        if (r == CUPTI_SUCCESS) {
            subscribed = true;
            atomic_fetch_add_explicit(&launch_gen, 1, memory_order_relaxed);
            what = "cuptiEnableCallback (launches)";
            r = enable_list(fl_launch_cbids, fl_n_launch_cbids, CB_LAUNCH);
        }
        early = r == CUPTI_SUCCESS;
        if (!early) {
            unsubscribe_callbacks();
            fl_kinds_disable_all();
            fl_kinds_message(r, why, len, what);
        }
    }
    pthread_mutex_unlock(&life);
    return r == CUPTI_SUCCESS;
}

void gp_plugin_detach_early(void)
{
    pthread_mutex_lock(&life);
    if (early && !running) {
        unsubscribe_callbacks();
        fl_kinds_disable_all();
        early = false;
        fl_pool_forget_done(); /* what CUPTI completed meanwhile has no reader */
    }
    pthread_mutex_unlock(&life);
}

/* Every device's limits, read by ordinal here (after cuInit, on the
 * thread that starts the session) and kept for the writer and the
 * callbacks, which never ask the driver. */
static size_t plugin_devices(fl_gpu_limits *out, size_t cap)
{
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
    /* The buffers and the graph nodes taken first, the stacks announced
     * after: every stack a row below can name was captured at its launch,
     * before its buffer completed and so before this take (a graph node,
     * before it was queued: those queued by the mark).  Announced first,
     * a launch racing this drain could publish its stack after the
     * announcement yet have its buffer taken: its row came out with a
     * stack the recorder did not know ("", then kept for that kernel's
     * configuration). */
    size_t graph_defs = fl_graphs_mark();
    fl_done_buf local[FL_POOL_MAX];
    size_t n = fl_pool_take(local);
    if (stacks && sink->stacks)
        stacks_announced += fl_stacks_announce(stacks, emit_stacks, (void *)sink);
    fl_graphs_drain(sink, graph_defs);
    if (n == 0)
        return;
    /* CUPTI's count of the records it dropped for want of a buffer: asked
     * here, off its callbacks (a count it resets as it answers). */
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        size_t d = 0;
        if (local[i].global &&
            cuptiActivityGetNumDroppedRecords(NULL, local[i].stream, &d) == CUPTI_SUCCESS)
            dropped += d;
    }
    for (size_t i = 0; i < n; i++)
        if (decoder)
            fl_decoder_feed(decoder, sink, local[i].p, local[i].valid);
    if (decoder)
        fl_decoder_flush(decoder, sink);
    fl_pool_give_back(local, n, dropped);
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
    /* CUPTI flushes on its own period (set at start): nothing to ask. */
    if (atomic_load(&flush_period))
        return;
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
        fl_graphs_stop();
        if (atomic_exchange(&flush_period, false))
            cuptiActivityFlushPeriod(0);
        /* Forced: buffers still being filled come out too. */
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        fl_kinds_disable_all();
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
    if (atomic_load(&nvtx_noted) && !(out->unavailable & FL_FEAT_NVTX)) {
        if (!out->unavailable)
            snprintf(out->unavailable_msg, sizeof out->unavailable_msg, "%s", nvtx_note);
        out->unavailable |= FL_FEAT_NVTX;
    }
    fl_stacks_stats ss;
    fl_stacks_counts(stacks, &ss);
    out->stacks = stacks_announced;
    out->stack_captures = ss.captures;
    out->stacks_overflow = ss.overflow;
    out->stacks_max = ss.max_stacks;
    out->stack_python = ss.python_captures;
    if (stacks)
        snprintf(out->stacks_python, sizeof out->stacks_python, "%s", fl_py_note());
    fl_graphs_counts(&out->graph_nodes, &out->graph_nodes_lost);
    memcpy(out->graph_nodes_msg, start_notes.graph_nodes_msg, sizeof out->graph_nodes_msg);
    pthread_mutex_unlock(&life);
    fl_pool_stats(out);
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
        fl_graphs_release();
        release_engines();
        fl_pool_release();
    }
    pthread_mutex_unlock(&life);
}

/* A framework op's id around its launches (gpufl_push_external_op): CUPTI
 * keeps a stack per kind and thread, and tags each API call made while an
 * id is on it with an EXTERNAL_CORRELATION record (decode.c joins it). */
static gp_status plugin_push_external(uint8_t kind, uint64_t id)
{
    CUptiResult r = cuptiActivityPushExternalCorrelationId((CUpti_ExternalCorrelationKind)kind, id);
    return r == CUPTI_SUCCESS ? GP_OK : GP_ERR_CUPTI;
}

static gp_status plugin_pop_external(uint8_t kind)
{
    uint64_t last = 0;
    CUptiResult r =
        cuptiActivityPopExternalCorrelationId((CUpti_ExternalCorrelationKind)kind, &last);
    return r == CUPTI_SUCCESS ? GP_OK : GP_ERR_CUPTI;
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
    .push_external = plugin_push_external,
    .pop_external = plugin_pop_external,
};

void gp_plugin_nvtx_note(const char *why)
{
    if (atomic_load(&nvtx_noted))
        return;
    snprintf(nvtx_note, sizeof nvtx_note, "%s", why);
    atomic_store(&nvtx_noted, true);
}
