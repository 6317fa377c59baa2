/*
 * sassmetrics.c - CUPTI's SASS Metrics API per device and CUDA context,
 * for the SassMetrics engine.
 *
 * Promises:
 *  - CUPTI's order: cuptiProfilerInitialize once per session, at the first
 *    context (not at start: under injection start runs inside cuInit, and
 *    the Profiler API wants the driver up); per device,
 *    once, its chip (cuptiDeviceGetChipName), the id of each metric of
 *    fl_sass_metric_names on that chip (cuptiSassMetricsGetProperties; a
 *    name refused is skipped and listed) and cuptiSassMetricsSetConfig;
 *    per context cuptiSassMetricsEnable (lazy patching unless
 *    sass_eager_patching); reads by GetDataProperties then FlushData into
 *    buffers sized by it; at the end Disable per context, UnsetConfig per
 *    device, cuptiProfilerDeInitialize;
 *  - which kernels: with sass_all_kernels each context is enabled from its
 *    creation (every kernel counted); by default (as GPUFlight) a context
 *    is only registered then, and enabled at the begin of an outermost
 *    scope run with it current (fl_sass_scope_begin), and at that scope's
 *    end the device is synchronised (env->ctx_synchronize, libcuda's
 *    cuCtxSynchronize, outside the lock), read, and disabled - the last
 *    of overlapping outermost scopes (several threads) closes it;
 *  - a CUPTI refusal becomes a status (FL_PC_*: permissions, unsupported
 *    device or driver, MIG, vGPU, no driver, another profiler) and a
 *    message naming the call, CUPTI's error and the fix; the first is the
 *    session's, which then runs Trace; never a crash;
 *  - reads run on the writer thread after stop() (never at the core's
 *    collection points: CUPTI 13.0 counts a function in the first window
 *    it is read in only, so an early read loses every later launch), at
 *    an outermost scope's end (default mode: a kernel is measured in the
 *    first outermost scope it runs in) or at a context's destruction
 *    (rows into the bounded table, what finds no room counted); CUPTI's
 *    function names (allocated by FlushData) are freed after each read;
 *  - the plugin traces kernels with the activity kind KERNEL, not
 *    CONCURRENT_KERNEL, in a SASS session: with the latter CUPTI counts 0
 *    for every instruction (an H200, tests/gpu/sass_probe.cu);
 *  - at most 16 contexts and 16 devices; every CUPTI call goes through
 *    `api` (tests inject answers).
 */
#include "sassmetrics.h"
#include "../../../src/util/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTX 16
#define MAX_DEV 16
#define MAX_METRICS 16
#define RECORDS_MAX (1u << 24) /* records read per context and collection */

const char *const fl_sass_metric_names[] = {
    "smsp__sass_inst_executed",
    "smsp__sass_thread_inst_executed",
    "smsp__sass_inst_executed_op_global_ld",
    "smsp__sass_inst_executed_op_global_st",
    "smsp__sass_sectors_mem_global",
    "smsp__sass_sectors_mem_global_ideal",
    "smsp__sass_inst_executed_op_shared_ld",
    "smsp__sass_inst_executed_op_shared_st",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared",
    "smsp__sass_inst_executed_op_branch",
    "smsp__sass_branch_targets_threads_divergent",
};
const size_t fl_sass_n_metric_names = sizeof fl_sass_metric_names / sizeof *fl_sass_metric_names;

static const fl_sass_api real_api = {FL_SASS_CALLS(FL_API_CUPTI)};
static const fl_sass_api *api = &real_api;

typedef struct sass_dev {
    uint32_t device;
    bool set, announced;
    size_t n_ok, n_skipped;
    const char *ok[MAX_METRICS], *skipped[MAX_METRICS];
} sass_dev;

typedef struct sass_ctx {
    CUcontext ctx;
    uint32_t device;
    bool enabled;  /* cuptiSassMetricsEnable answered success, no Disable since */
    uint32_t open; /* outermost scopes open with it (default mode) */
} sass_ctx;

/* Everything below under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool on, profiler, final;
    uint32_t status;
    char msg[512];
    fl_trace_options opt;
    sass_ctx ctx[MAX_CTX];
    size_t n_ctx;
    sass_dev dev[MAX_DEV];
    size_t n_dev;
    uint32_t contexts, metrics, skipped;
    uint64_t collections, dropped;
    fl_sass *agg;
    bool late;   /* CUDA work came before the session (fl_engine_env) */
    bool scoped; /* !sass_all_kernels: enabled inside outermost scopes only */
    void *(*current_ctx)(void);
    int (*ctx_synchronize)(void);
} E;
/* The context this thread's open outermost scope enabled (default mode). */
static _Thread_local CUcontext tls_scope_ctx;

void fl_sass_set_api(const fl_sass_api *a)
{
    api = a ? a : &real_api;
}

/* ---------------------------------------------------------------- errors */

/* SASS metrics' words where they differ from PC sampling's. */
static const fl_cupti_fixes sass_fixes = {
    .not_supported = "this device, driver or CUPTI has no SASS metrics (they need compute "
                     "capability 7.5 or newer, a whole GPU rather than a MIG instance, not WSL, "
                     "and a CUPTI no older than the driver)",
    .conflict = "another profiler holds the device (Nsight, PC sampling or the Profiler API in "
                "another tool, or a second CUPTI subscriber): stop the other tool",
};

static const char *fix_of(uint32_t status)
{
    return fl_cupti_fix(status, &sass_fixes);
}

/* What the session runs without SASS metrics (mu held). */
static const char *instead(void)
{
    return E.opt.pc_sampling ? "Deep runs PcSampling (Trace if PC sampling is refused too)"
                             : "the session runs Trace";
}

/* The first failure is the session's reason (mu held). */
static void fail(CUptiResult r, const char *what)
{
    if (E.status != FL_PC_ACTIVE)
        return;
    E.status = fl_profiler_status(r, E.late);
    snprintf(E.msg, sizeof E.msg, "%s failed: %s (%d): %s%s; %s", what, fl_cupti_name(r), (int)r,
             fix_of(E.status == FL_RP_LATE_INIT ? FL_PC_FAILED : E.status),
             fl_late_init_advice(E.late), instead());
}

/* --------------------------------------------------------------- devices */

/* A metric's refusal that says the whole API cannot work on this device
 * (not merely that the chip lacks that name). */
static bool fatal_refusal(CUptiResult r)
{
    uint32_t st = fl_pcs_status_of(r);
    return st == FL_PC_NO_PERMISSION || st == FL_PC_VIRTUALIZED || st == FL_PC_NO_DRIVER ||
           st == FL_PC_CONFLICT || r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED;
}

/* Device dev's metric ids and configuration, once (mu held). */
static bool dev_configure(uint32_t device)
{
    for (size_t i = 0; i < E.n_dev; i++)
        if (E.dev[i].device == device)
            return E.dev[i].set;
    if (E.n_dev == MAX_DEV)
        return false;
    sass_dev *d = &E.dev[E.n_dev];
    memset(d, 0, sizeof *d);
    d->device = device;
    CUpti_Device_GetChipName_Params cp = {CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL, device,
                                          NULL};
    CUptiResult r = api->chip_name(&cp);
    if (r != CUPTI_SUCCESS || !cp.pChipName) {
        fail(r != CUPTI_SUCCESS ? r : CUPTI_ERROR_UNKNOWN, "cuptiDeviceGetChipName");
        return false;
    }
    CUpti_SassMetrics_Config cfg[MAX_METRICS];
    size_t n = 0;
    for (size_t i = 0; i < fl_sass_n_metric_names && i < MAX_METRICS; i++) {
        CUpti_SassMetrics_GetProperties_Params pp;
        memset(&pp, 0, sizeof pp);
        pp.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
        pp.pChipName = cp.pChipName;
        pp.pMetricName = fl_sass_metric_names[i];
        r = api->get_properties(&pp);
        if (r != CUPTI_SUCCESS && fatal_refusal(r)) {
            fail(r, "cuptiSassMetricsGetProperties");
            return false;
        }
        if (r != CUPTI_SUCCESS) {
            d->skipped[d->n_skipped++] = fl_sass_metric_names[i];
            continue;
        }
        cfg[n].metricId = pp.metric.metricId;
        cfg[n].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
        n++;
        d->ok[d->n_ok++] = fl_sass_metric_names[i];
        fl_sass_metric_name(E.agg, device, pp.metric.metricId, fl_sass_metric_names[i]);
    }
    E.n_dev++;
    E.metrics = (uint32_t)d->n_ok;
    E.skipped = (uint32_t)d->n_skipped;
    if (n == 0) {
        if (E.status == FL_PC_ACTIVE) {
            E.status = FL_PC_NOT_SUPPORTED;
            snprintf(E.msg, sizeof E.msg,
                     "cuptiSassMetricsGetProperties refused every metric on chip %.32s: %s; %s",
                     cp.pChipName, fix_of(FL_PC_NOT_SUPPORTED), instead());
        }
        return false;
    }
    CUpti_SassMetricsSetConfig_Params sp = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE, NULL, n,
                                            cfg, device};
    r = api->set_config(&sp);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiSassMetricsSetConfig");
        return false;
    }
    d->set = true;
    return true;
}

/* ------------------------------------------------------------- contexts */

static void ctx_disable(sass_ctx *c)
{
    if (!c->enabled)
        return;
    c->enabled = false;
    CUpti_SassMetricsDisable_Params p = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE, NULL, c->ctx,
                                         0};
    if (api->disable(&p) == CUPTI_SUCCESS)
        E.dropped += p.numOfDroppedRecords;
}

/* Everything CUPTI holds for c, into the table (mu held). */
static void ctx_read(sass_ctx *c, const fl_trace_sink *sink)
{
    CUpti_SassMetricsGetDataProperties_Params dp = {
        CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE, NULL, c->ctx, 0, 0};
    CUptiResult r = api->data_properties(&dp);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiSassMetricsGetDataProperties");
        return;
    }
    size_t n = dp.numOfPatchedInstructionRecords, ni = dp.numOfInstances;
    if (n == 0 || ni == 0 || n > RECORDS_MAX || ni > 4096)
        return;
    CUpti_SassMetrics_Data *d = calloc(n, sizeof *d);
    CUpti_SassMetrics_InstanceValue *v = calloc(n * ni, sizeof *v);
    if (d && v) {
        for (size_t i = 0; i < n; i++) {
            d[i].structSize = sizeof d[i];
            d[i].pInstanceValues = v + i * ni;
        }
        CUpti_SassMetricsFlushData_Params fp = {
            CUpti_SassMetricsFlushData_Params_STRUCT_SIZE, NULL, c->ctx, n, ni, d};
        r = api->flush_data(&fp);
        if (r == CUPTI_SUCCESS) {
            E.collections++;
            fl_sass_feed(E.agg, sink, d, n, ni, c->device, gp_now_wall_ns());
        } else {
            fail(r, "cuptiSassMetricsFlushData");
        }
        /* FlushData allocates each record's name: ours to free. */
        for (size_t i = 0; i < n; i++)
            free((void *)d[i].functionName);
    }
    free(v);
    free(d);
}

/* Enables c (mu held); false after a refusal. */
static bool ctx_enable(sass_ctx *c)
{
    CUpti_SassMetricsEnable_Params ep = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE, NULL, c->ctx,
                                         E.opt.sass_eager_patching ? 0 : 1};
    CUptiResult r = api->enable(&ep);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiSassMetricsEnable");
        return false;
    }
    c->enabled = true;
    return true;
}

static sass_ctx *ctx_find(CUcontext ctx)
{
    for (size_t i = 0; i < E.n_ctx; i++)
        if (E.ctx[i].ctx == ctx)
            return &E.ctx[i];
    return NULL;
}

/* A context registered (its device configured) and, with
 * sass_all_kernels, enabled (mu held). */
static void ctx_add(CUcontext ctx)
{
    if (ctx_find(ctx))
        return;
    if (E.n_ctx == MAX_CTX || E.status != FL_PC_ACTIVE)
        return;
    CUptiResult r;
    if (!E.profiler) {
        CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
        r = api->profiler_init(&ip);
        if (r != CUPTI_SUCCESS) {
            fail(r, "cuptiProfilerInitialize");
            return;
        }
        E.profiler = true;
    }
    uint32_t device = 0;
    r = api->device_id(ctx, &device);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiGetDeviceId");
        return;
    }
    if (!dev_configure(device))
        return;
    sass_ctx c = {ctx, device, false, 0};
    if (!E.scoped && !ctx_enable(&c))
        return;
    E.ctx[E.n_ctx++] = c;
    E.contexts++;
}

void fl_sass_context_created(void *ctx)
{
    pthread_mutex_lock(&mu);
    if (E.on && ctx)
        ctx_add(ctx);
    pthread_mutex_unlock(&mu);
}

void fl_sass_context_destroying(void *ctx)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; E.on && i < E.n_ctx; i++) {
        sass_ctx *c = &E.ctx[i];
        if (c->ctx != ctx)
            continue;
        if (c->enabled)
            ctx_read(c, NULL);
        ctx_disable(c);
        E.ctx[i] = E.ctx[--E.n_ctx];
        break;
    }
    pthread_mutex_unlock(&mu);
}

bool fl_sass_keeps_cubins(void)
{
    pthread_mutex_lock(&mu);
    bool keep = E.on && E.opt.source_collection;
    pthread_mutex_unlock(&mu);
    return keep;
}

/* --------------------------------------------------------------- session */

uint32_t fl_sass_engine_start(const fl_trace_options *o, void *ctx, const fl_engine_env *env)
{
    static const fl_engine_env none;
    env = env ? env : &none;
    pthread_mutex_lock(&mu);
    memset(&E, 0, sizeof E);
    if (!o->sass_metrics) {
        pthread_mutex_unlock(&mu);
        return FL_PC_OFF;
    }
    E.opt = *o;
    E.late = env->late;
    E.scoped = !o->sass_all_kernels;
    E.current_ctx = env->current_ctx;
    E.ctx_synchronize = env->ctx_synchronize;
    E.status = FL_PC_ACTIVE;
    fl_agg_config pc = {.source = o->source_collection};
    E.agg =
        env->agg ? fl_sass_create_shared(env->agg, env->lock, env->unlock) : fl_sass_create(&pc);
    if (env->refuse) {
        E.status = FL_PC_NOT_SUPPORTED;
        snprintf(E.msg, sizeof E.msg, "%s; %s", env->refuse, instead());
    } else if (!E.agg) {
        E.status = FL_PC_FAILED;
        snprintf(E.msg, sizeof E.msg, "out of memory for the SASS metrics table; %s", instead());
    } else {
        E.on = true;
    }
    if (E.status == FL_PC_ACTIVE && ctx)
        ctx_add(ctx);
    uint32_t st = E.status;
    pthread_mutex_unlock(&mu);
    return st;
}

void fl_sass_engine_fail(CUptiResult r, const char *what)
{
    pthread_mutex_lock(&mu);
    if (E.on)
        fail(r, what);
    pthread_mutex_unlock(&mu);
}

/* sass_config of each device configured since the last drain (mu held). */
static void announce(const fl_trace_sink *sink)
{
    for (size_t i = 0; sink && sink->sass_config && i < E.n_dev; i++) {
        sass_dev *d = &E.dev[i];
        if (d->announced)
            continue;
        d->announced = true;
        sink->sass_config(sink->user, d->device, d->ok, d->n_ok, d->skipped, d->n_skipped);
    }
}

/* The end: every context disabled, every device unset, the Profiler API
 * de-initialised (mu held). */
static void teardown(void)
{
    for (size_t i = 0; i < E.n_ctx; i++)
        ctx_disable(&E.ctx[i]);
    E.n_ctx = 0;
    for (size_t i = 0; i < E.n_dev; i++) {
        if (!E.dev[i].set)
            continue;
        CUpti_SassMetricsUnsetConfig_Params up = {CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE,
                                                  NULL, E.dev[i].device};
        api->unset_config(&up);
        E.dev[i].set = false;
    }
    if (E.profiler) {
        CUpti_Profiler_DeInitialize_Params dp = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE,
                                                 NULL};
        api->profiler_deinit(&dp);
        E.profiler = false;
    }
}

void fl_sass_engine_drain(const fl_trace_sink *sink)
{
    pthread_mutex_lock(&mu);
    if (E.on) {
        announce(sink);
        /* Read at the end only, not at collection points: after a
         * read, CUPTI 13.0 adds no record for a function it has read once
         * (an H200: sass_probe --keep), so an earlier read would lose
         * every later launch's counts.  After a refusal nothing more is
         * read (the session runs Trace). */
        if (E.final)
            for (size_t i = 0; i < E.n_ctx && E.status == FL_PC_ACTIVE; i++)
                if (E.ctx[i].enabled)
                    ctx_read(&E.ctx[i], sink);
        if (E.final)
            teardown();
        fl_sass_flush(E.agg, sink);
    }
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------ outermost scopes */

void fl_sass_scope_begin(const char *name)
{
    (void)name;
    tls_scope_ctx = NULL;
    pthread_mutex_lock(&mu);
    if (E.on && E.scoped && !E.final && E.status == FL_PC_ACTIVE && E.current_ctx) {
        CUcontext ctx = E.current_ctx();
        if (ctx)
            ctx_add(ctx);
        sass_ctx *c = ctx ? ctx_find(ctx) : NULL;
        if (c && (c->enabled || ctx_enable(c))) {
            c->open++;
            tls_scope_ctx = ctx;
        }
    }
    pthread_mutex_unlock(&mu);
}

void fl_sass_scope_end(void)
{
    CUcontext ctx = tls_scope_ctx;
    tls_scope_ctx = NULL;
    if (!ctx)
        return;
    pthread_mutex_lock(&mu);
    sass_ctx *c = E.on ? ctx_find(ctx) : NULL;
    bool last = c && c->open > 0 && --c->open == 0;
    int (*sync)(void) = E.ctx_synchronize;
    pthread_mutex_unlock(&mu);
    if (!last)
        return;
    /* The kernels of the scope finish before the read (outside the lock:
     * the writer's drain and other threads' scopes go on meanwhile). */
    if (sync)
        (void)sync();
    pthread_mutex_lock(&mu);
    c = E.on ? ctx_find(ctx) : NULL; /* destroyed meanwhile: read there */
    /* CUPTI 13.0 counts a function in the first window it runs in only:
     * after a read (or a Disable) its later launches add no record (an
     * H200: sass_probe --cycles, --keep), so a kernel is measured in the
     * first outermost scope it runs in. */
    if (c && c->open == 0 && c->enabled) {
        if (E.status == FL_PC_ACTIVE)
            ctx_read(c, NULL);
        ctx_disable(c);
    }
    pthread_mutex_unlock(&mu);
}

void fl_sass_engine_stop(void)
{
    pthread_mutex_lock(&mu);
    E.final = E.on;
    pthread_mutex_unlock(&mu);
}

void fl_sass_engine_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&mu);
    out->engines[FL_ENGINE_SASS].status = E.opt.sass_metrics ? E.status : FL_PC_OFF;
    out->engines[FL_ENGINE_SASS].counters.sass.metrics = E.metrics;
    out->engines[FL_ENGINE_SASS].counters.sass.metrics_skipped = E.skipped;
    out->engines[FL_ENGINE_SASS].counters.sass.contexts = E.contexts;
    out->engines[FL_ENGINE_SASS].counters.sass.collections = E.collections;
    out->engines[FL_ENGINE_SASS].counters.sass.dropped_records = E.dropped;
    snprintf(out->engines[FL_ENGINE_SASS].message, sizeof out->engines[FL_ENGINE_SASS].message,
             "%s", E.msg);
    fl_sass_stats(E.agg, out);
    pthread_mutex_unlock(&mu);
}

void fl_sass_engine_release(void)
{
    pthread_mutex_lock(&mu);
    teardown();
    fl_sass_destroy(E.agg);
    E.agg = NULL;
    E.on = false;
    pthread_mutex_unlock(&mu);
}
