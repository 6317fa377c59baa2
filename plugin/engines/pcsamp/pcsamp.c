/*
 * pcsamp.c - CUPTI's PC sampling per CUDA context, for the PcSampling
 * engine.
 *
 * Promises:
 *  - the method is chosen once per session: CUPTI's activity API
 *    (CUPTI_ACTIVITY_KIND_PC_SAMPLING, decoded by decode.c) where CUPTI
 *    still has it, else the PC Sampling API (cupti_pcsampling.h); a CUPTI
 *    refusal becomes a status (FL_PC_*) and a message naming the error and
 *    its fix, never a crash: the session then runs Trace;
 *  - the PC Sampling API in the order CUPTI needs on a context: the read
 *    buffers allocated first, Enable, then the configuration right after
 *    it (kernel-serialised collection, the period, buffer sizes,
 *    start/stop control, the parsed format), then the device's stall
 *    reasons and their names, then Start; a context whose configuration is
 *    refused is disabled again;
 *  - never a read while sampling is armed (CUPTI discards the data): a
 *    collection stops every context, reads each (GetData until CUPTI has
 *    no PC left, each record's stallReasonCount reset before every call),
 *    and arms it again;
 *  - GetData reads into a buffer of its own, never the one handed over in
 *    the configuration: CUPTI copies records into that one by itself (at
 *    Disable, at a module's unload), and GetData into it answered no PC at
 *    all on an H200; what it holds is taken after every read and after
 *    Disable;
 *  - collections run on the writer thread (drain), at the collection
 *    points the core asks for (an outermost scope's end) and after stop();
 *    the only read on an application's thread is at a context's
 *    destruction (its data would be gone after), and it holds rows in the
 *    bounded table, counting what finds no room;
 *  - memory per context: twice 4096 PC records of 128 stall slots (the
 *    read buffer and the configuration's, 8.4 MiB), CUPTI's scratch and
 *    hardware buffers as configured; at most 16 contexts;
 *  - every CUPTI call goes through `api` (tests inject answers);
 *  - the functions sampled for the first time go to the disassembler
 *    (disasm.c) after each drain, with mu released.
 */
#include "pcsamp.h"
#include "../../../src/util/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTX 16
#define PCS_PER_READ 4096
#define STALL_SLOTS 128 /* CUPTI's most; the device's count is known only after Enable */
#define DEFAULT_SCRATCH_BYTES (16u << 20)
#define DEFAULT_HW_BYTES (256u << 20)
#define READS_MAX 1000000 /* GetData calls per context and collection */

static const fl_pcs_api real_api = {FL_PCS_CALLS(FL_API_CUPTI)};
static const fl_pcs_api *api = &real_api;

/* A buffer of PC records with their stall-reason slots. */
typedef struct pc_buf {
    CUpti_PCSamplingData data;
    CUpti_PCSamplingPCData *pcs;
    CUpti_PCSamplingStallReason *slots;
} pc_buf;

typedef struct pc_ctx {
    CUcontext ctx;
    uint32_t device;
    pc_buf rd;  /* GetData's */
    pc_buf cfg; /* the configuration's: CUPTI copies into it itself */
    bool started;
} pc_ctx;

/* Everything below under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool on;
    uint32_t method, status, period;
    char msg[512];
    fl_trace_options opt;
    pc_ctx ctx[MAX_CTX];
    size_t n_ctx;
    uint32_t contexts, stall_reasons;
    fl_agg *agg;
    bool final;
} E;
static _Atomic int collect_req;
static _Atomic int n_armed;

void fl_pcs_set_api(const fl_pcs_api *a)
{
    api = a ? a : &real_api;
}

/* The first failure is the session's reason (mu held). */
static void fail(CUptiResult r, const char *what)
{
    if (E.status != FL_PC_ACTIVE)
        return;
    E.status = fl_pcs_status_of(r);
    if (E.status == FL_PC_ACTIVE)
        E.status = FL_PC_FAILED;
    fl_pcs_explain(r, what, E.msg, sizeof E.msg);
}

/* ------------------------------------------------------------- contexts */

static void ctx_free(pc_ctx *c)
{
    free(c->rd.pcs);
    free(c->rd.slots);
    free(c->cfg.pcs);
    free(c->cfg.slots);
    memset(c, 0, sizeof *c);
}

/* Every record given its full room again and CUPTI's per-call counts
 * cleared: stallReasonCount is the room on the way in, the count on the
 * way out. */
static void buf_empty(pc_buf *b)
{
    for (size_t k = 0; k < PCS_PER_READ; k++)
        b->pcs[k].stallReasonCount = STALL_SLOTS;
    b->data.totalNumPcs = 0;
    b->data.remainingNumPcs = 0;
    b->data.totalSamples = 0;
    b->data.droppedSamples = 0;
    b->data.nonUsrKernelsTotalSamples = 0;
    b->data.hardwareBufferFull = 0;
}

static bool buf_alloc(pc_buf *b)
{
    b->pcs = calloc(PCS_PER_READ, sizeof *b->pcs);
    b->slots = calloc((size_t)PCS_PER_READ * STALL_SLOTS, sizeof *b->slots);
    if (!b->pcs || !b->slots)
        return false;
    memset(&b->data, 0, sizeof b->data);
    b->data.size = sizeof b->data;
    b->data.collectNumPcs = PCS_PER_READ;
    b->data.pPcData = b->pcs;
    for (size_t i = 0; i < PCS_PER_READ; i++) {
        b->pcs[i].size = sizeof b->pcs[i];
        b->pcs[i].stallReason = b->slots + i * STALL_SLOTS;
    }
    buf_empty(b);
    return true;
}

/* The read buffers, before Enable (CUPTI refuses the configuration when
 * memory is allocated between Enable and it). */
static bool ctx_alloc(pc_ctx *c)
{
    return buf_alloc(&c->rd) && buf_alloc(&c->cfg);
}

static CUptiResult ctx_configure(pc_ctx *c)
{
    CUpti_PCSamplingConfigurationInfo a[7];
    memset(a, 0, sizeof a);
    a[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    a[0].attributeData.collectionModeData.collectionMode =
        E.opt.pc_collection_mode == FL_PC_MODE_CONTINUOUS
            ? CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS
            : CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    a[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    a[1].attributeData.samplingPeriodData.samplingPeriod = E.period;
    a[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
    a[2].attributeData.scratchBufferSizeData.scratchBufferSize =
        E.opt.pc_scratch_bytes ? E.opt.pc_scratch_bytes : DEFAULT_SCRATCH_BYTES;
    a[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
    a[3].attributeData.hardwareBufferSizeData.hardwareBufferSize =
        E.opt.pc_hw_buffer_bytes ? E.opt.pc_hw_buffer_bytes : DEFAULT_HW_BYTES;
    a[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    a[4].attributeData.enableStartStopControlData.enableStartStopControl = 1;
    a[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    a[5].attributeData.samplingDataBufferData.samplingDataBuffer = &c->cfg.data;
    a[6].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    a[6].attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    CUpti_PCSamplingConfigurationInfoParams p;
    memset(&p, 0, sizeof p);
    p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    p.ctx = c->ctx;
    p.numAttributes = 7;
    p.pPCSamplingConfigurationInfo = a;
    return api->configure(&p);
}

static void ctx_disable(pc_ctx *c)
{
    CUpti_PCSamplingDisableParams p = {CUpti_PCSamplingDisableParamsSize, NULL, c->ctx};
    api->disable(&p);
}

/* The device's stall reasons: their count (0: no PC sampling) and names
 * into the aggregator. */
static bool ctx_stall_names(pc_ctx *c)
{
    size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams np = {CUpti_PCSamplingGetNumStallReasonsParamsSize,
                                                   NULL, c->ctx, &n};
    CUptiResult r = api->num_stall_reasons(&np);
    if (r != CUPTI_SUCCESS || n == 0) {
        if (r == CUPTI_SUCCESS && E.status == FL_PC_ACTIVE) {
            E.status = FL_PC_NOT_SUPPORTED;
            snprintf(E.msg, sizeof E.msg,
                     "cuptiPCSamplingGetNumStallReasons gave 0 stall reasons: %s (often a CUPTI "
                     "older than the driver: use the toolkit that matches it); the session runs "
                     "Trace",
                     fl_pcs_fix(FL_PC_NOT_SUPPORTED));
        }
        fail(r, "cuptiPCSamplingGetNumStallReasons");
        return false;
    }
    uint32_t *idx = calloc(n, sizeof *idx);
    char **names = calloc(n, sizeof *names);
    bool ok = idx && names;
    for (size_t i = 0; ok && i < n; i++)
        ok = (names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE)) != NULL;
    if (ok) {
        CUpti_PCSamplingGetStallReasonsParams sp = {
            CUpti_PCSamplingGetStallReasonsParamsSize, NULL, c->ctx, n, idx, names};
        if (api->stall_reasons(&sp) == CUPTI_SUCCESS)
            fl_agg_stall_names(E.agg, c->device, idx, (const char *const *)names, n);
        E.stall_reasons = (uint32_t)n;
    }
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    free(idx);
    return true;
}

static bool ctx_start(pc_ctx *c)
{
    CUpti_PCSamplingStartParams p = {CUpti_PCSamplingStartParamsSize, NULL, c->ctx};
    CUptiResult r = api->start(&p);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiPCSamplingStart");
        return false;
    }
    c->started = true;
    atomic_fetch_add(&n_armed, 1);
    return true;
}

static bool ctx_stop(pc_ctx *c)
{
    if (!c->started)
        return true;
    CUpti_PCSamplingStopParams p = {CUpti_PCSamplingStopParamsSize, NULL, c->ctx};
    CUptiResult r = api->stop(&p);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiPCSamplingStop");
        return false; /* still armed: not read */
    }
    c->started = false;
    atomic_fetch_sub(&n_armed, 1);
    return true;
}

/* What CUPTI copied into the configuration's buffer since it was last
 * taken, fed once (mu held). */
static void ctx_take_copied(pc_ctx *c, const fl_trace_sink *sink)
{
    CUpti_PCSamplingData *d = &c->cfg.data;
    if (d->totalNumPcs || d->totalSamples || d->droppedSamples || d->nonUsrKernelsTotalSamples)
        fl_agg_feed(E.agg, sink, d, c->device, gp_now_wall_ns());
    buf_empty(&c->cfg);
}

/* GetData until CUPTI has nothing left, then what CUPTI copied (mu held,
 * sampling stopped). */
static void ctx_read(pc_ctx *c, const fl_trace_sink *sink)
{
    CUpti_PCSamplingGetDataParams p = {CUpti_PCSamplingGetDataParamsSize, NULL, c->ctx,
                                       &c->rd.data};
    for (int i = 0; i < READS_MAX; i++) {
        buf_empty(&c->rd); /* CUPTI's counts are per call: never counted twice */
        CUptiResult r = api->get_data(&p);
        bool more = r == CUPTI_ERROR_OUT_OF_MEMORY; /* the hardware buffer was full */
        if (r != CUPTI_SUCCESS && !more) {
            fail(r, "cuptiPCSamplingGetData");
            break;
        }
        fl_agg_feed(E.agg, sink, &c->rd.data, c->device, gp_now_wall_ns());
        size_t got = c->rd.data.totalNumPcs, left = c->rd.data.remainingNumPcs;
        if (got == 0 || (left == 0 && !more))
            break;
    }
    ctx_take_copied(c, sink);
}

/* A context's sampling enabled, configured and armed (mu held). */
static void ctx_add(CUcontext ctx)
{
    for (size_t i = 0; i < E.n_ctx; i++)
        if (E.ctx[i].ctx == ctx)
            return;
    if (E.n_ctx == MAX_CTX || E.status != FL_PC_ACTIVE)
        return;
    pc_ctx *c = &E.ctx[E.n_ctx];
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    if (api->device_id(ctx, &c->device) != CUPTI_SUCCESS)
        c->device = 0;
    if (!ctx_alloc(c)) {
        ctx_free(c);
        return;
    }
    CUpti_PCSamplingEnableParams ep = {CUpti_PCSamplingEnableParamsSize, NULL, ctx};
    CUptiResult r = api->enable(&ep);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiPCSamplingEnable");
        ctx_free(c);
        return;
    }
    r = ctx_configure(c);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiPCSamplingSetConfigurationAttribute");
        ctx_disable(c);
        ctx_free(c);
        return;
    }
    if (!ctx_stall_names(c) || !ctx_start(c)) {
        ctx_disable(c);
        ctx_free(c);
        return;
    }
    E.n_ctx++;
    E.contexts++;
}

/* The activity API on a context: its period (mu held). */
static void ctx_add_activity(CUcontext ctx)
{
    CUpti_ActivityPCSamplingConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.samplingPeriod = CUPTI_ACTIVITY_PC_SAMPLING_PERIOD_MID;
    cfg.samplingPeriod2 = E.period;
    CUptiResult r = api->activity_configure(ctx, &cfg);
    if (r != CUPTI_SUCCESS)
        fail(r, "cuptiActivityConfigurePCSampling");
    else
        E.contexts++;
}

void fl_pcs_context_created(void *ctx)
{
    pthread_mutex_lock(&mu);
    if (E.on && ctx && E.method == FL_PC_METHOD_SAMPLING_API)
        ctx_add(ctx);
    else if (E.on && ctx && E.method == FL_PC_METHOD_ACTIVITY && E.status == FL_PC_ACTIVE)
        ctx_add_activity(ctx);
    pthread_mutex_unlock(&mu);
}

void fl_pcs_context_destroying(void *ctx)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; E.on && i < E.n_ctx; i++) {
        pc_ctx *c = &E.ctx[i];
        if (c->ctx != ctx)
            continue;
        /* Its data is gone with it: read now, into the table only. */
        if (ctx_stop(c))
            ctx_read(c, NULL);
        ctx_disable(c);
        ctx_take_copied(c, NULL); /* Disable's copy of what was left */
        ctx_free(c);
        E.ctx[i] = E.ctx[--E.n_ctx];
        memset(&E.ctx[E.n_ctx], 0, sizeof E.ctx[E.n_ctx]);
        break;
    }
    pthread_mutex_unlock(&mu);
}

bool fl_pcs_keeps_cubins(void)
{
    pthread_mutex_lock(&mu);
    bool keep = E.on && E.opt.source_collection;
    pthread_mutex_unlock(&mu);
    return keep;
}

/* --------------------------------------------------------------- session */

/* Which API (mu held): the activity API where CUPTI has it, else the PC
 * Sampling API; a refusal that says neither can work ends it. */
static void choose_method(void)
{
    CUptiResult r = api->activity_enable(CUPTI_ACTIVITY_KIND_PC_SAMPLING);
    if (r == CUPTI_SUCCESS) {
        E.method = FL_PC_METHOD_ACTIVITY;
        api->activity_enable(CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR);
        api->activity_enable(CUPTI_ACTIVITY_KIND_FUNCTION);
        api->activity_enable(CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO);
        return;
    }
    uint32_t st = fl_pcs_status_of(r);
    if (st == FL_PC_NO_PERMISSION || st == FL_PC_VIRTUALIZED || st == FL_PC_NO_DRIVER ||
        st == FL_PC_CONFLICT) {
        fail(r, "cuptiActivityEnable(PC_SAMPLING)");
        return;
    }
    /* LEGACY_PROFILER_NOT_SUPPORTED (Volta and newer) and the like: the PC
     * Sampling API is the one for this device. */
    E.method = FL_PC_METHOD_SAMPLING_API;
}

uint32_t fl_pcs_engine_start(const fl_trace_options *o, void *ctx)
{
    pthread_mutex_lock(&mu);
    memset(&E, 0, sizeof E);
    atomic_store(&collect_req, 0);
    atomic_store(&n_armed, 0);
    if (!o->pc_sampling) {
        pthread_mutex_unlock(&mu);
        return FL_PC_OFF;
    }
    E.opt = *o;
    E.period = o->pc_period_log2 >= FL_PC_PERIOD_MIN && o->pc_period_log2 <= FL_PC_PERIOD_MAX
                   ? o->pc_period_log2
                   : FL_PC_PERIOD_DEFAULT;
    E.status = FL_PC_ACTIVE;
    bool disasm = o->disassembler && o->disassembler[0];
    fl_agg_config pc = {
        .source = o->source_collection, .scopes = o->scope_path != NULL, .disasm = disasm};
    fl_disasm_start(disasm ? o->disassembler : NULL, 0);
    E.agg = fl_agg_create(&pc);
    if (!E.agg) {
        E.status = FL_PC_FAILED;
        snprintf(E.msg, sizeof E.msg, "out of memory for the PC sampling table");
    } else {
        E.on = true;
        choose_method();
    }
    if (E.status == FL_PC_ACTIVE && ctx)
        E.method == FL_PC_METHOD_ACTIVITY ? ctx_add_activity(ctx) : ctx_add(ctx);
    uint32_t st = E.status;
    pthread_mutex_unlock(&mu);
    return st;
}

fl_agg *fl_pcs_engine_shared(void)
{
    pthread_mutex_lock(&mu);
    fl_agg *p = E.method == FL_PC_METHOD_ACTIVITY ? NULL : E.agg;
    pthread_mutex_unlock(&mu);
    return p;
}

void fl_pcs_engine_lock(void)
{
    pthread_mutex_lock(&mu);
}

void fl_pcs_engine_unlock(void)
{
    pthread_mutex_unlock(&mu);
}

void fl_pcs_engine_fail(CUptiResult r, const char *what)
{
    pthread_mutex_lock(&mu);
    if (E.on)
        fail(r, what);
    pthread_mutex_unlock(&mu);
}

void fl_pcs_request_collect(void)
{
    atomic_store(&collect_req, 1);
}

bool fl_pcs_armed(void)
{
    return atomic_load(&n_armed) > 0;
}

fl_agg *fl_pcs_engine_activity_sink(void)
{
    pthread_mutex_lock(&mu);
    fl_agg *p = E.on && E.method == FL_PC_METHOD_ACTIVITY ? E.agg : NULL;
    pthread_mutex_unlock(&mu);
    return p;
}

/* Every context stopped, read, and armed again unless the session ends
 * (mu held). */
static void collect_all(const fl_trace_sink *sink, void (*activity_flush)(void))
{
    bool stopped[MAX_CTX];
    for (size_t i = 0; i < E.n_ctx; i++)
        stopped[i] = ctx_stop(&E.ctx[i]);
    /* While nothing is armed CUPTI hands kernel records over. */
    if (activity_flush && !fl_pcs_armed())
        activity_flush();
    for (size_t i = 0; i < E.n_ctx; i++) {
        if (stopped[i])
            ctx_read(&E.ctx[i], sink);
        if (!E.final && stopped[i] && E.status == FL_PC_ACTIVE)
            ctx_start(&E.ctx[i]);
    }
}

void fl_pcs_engine_drain(const fl_trace_sink *sink, void (*activity_flush)(void))
{
    pthread_mutex_lock(&mu);
    if (E.on && E.method == FL_PC_METHOD_SAMPLING_API) {
        bool req = atomic_exchange(&collect_req, 0) != 0;
        if (req || E.final)
            collect_all(sink, activity_flush);
        if (E.final) {
            for (size_t i = 0; i < E.n_ctx; i++) {
                ctx_disable(&E.ctx[i]);
                ctx_take_copied(&E.ctx[i], sink); /* Disable's copy of what was left */
                ctx_free(&E.ctx[i]);
            }
            E.n_ctx = 0;
        }
    }
    fl_agg_fn *fns = NULL;
    size_t n_fns = 0;
    if (E.on) {
        fl_agg_flush(E.agg, sink);
        n_fns = fl_agg_take_functions(E.agg, &fns);
    }
    pthread_mutex_unlock(&mu);
    /* The disassembler runs for a while: without mu, which the
     * application's threads take when they create a context. */
    if (n_fns)
        fl_disasm_functions(sink, fns, n_fns);
    fl_agg_free_functions(fns, n_fns);
}

void fl_pcs_engine_stop(void)
{
    pthread_mutex_lock(&mu);
    if (E.on) {
        for (size_t i = 0; i < E.n_ctx; i++)
            ctx_stop(&E.ctx[i]);
        E.final = true;
        if (E.method == FL_PC_METHOD_ACTIVITY) {
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_PC_SAMPLING);
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO);
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR);
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_FUNCTION);
        }
    }
    pthread_mutex_unlock(&mu);
}

void fl_pcs_engine_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&mu);
    out->engines[FL_ENGINE_PC].status = E.opt.pc_sampling ? E.status : FL_PC_OFF;
    out->engines[FL_ENGINE_PC].counters.pc.method = E.method;
    out->engines[FL_ENGINE_PC].counters.pc.period_log2 = E.period;
    out->engines[FL_ENGINE_PC].counters.pc.stall_reasons = E.stall_reasons;
    out->engines[FL_ENGINE_PC].counters.pc.contexts = E.contexts;
    snprintf(out->engines[FL_ENGINE_PC].message, sizeof out->engines[FL_ENGINE_PC].message, "%s",
             E.msg);
    fl_agg_stats(E.agg, out);
    pthread_mutex_unlock(&mu);
    if (out->engines[FL_ENGINE_PC].status != FL_PC_OFF) {
        fl_cubin_stats(out);
        fl_disasm_stats(out);
    }
}

void fl_pcs_engine_release(void)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < E.n_ctx; i++) {
        ctx_stop(&E.ctx[i]);
        ctx_disable(&E.ctx[i]);
        ctx_free(&E.ctx[i]);
    }
    E.n_ctx = 0;
    fl_agg_destroy(E.agg);
    E.agg = NULL;
    E.on = false;
    pthread_mutex_unlock(&mu);
    fl_cubin_reset();
}
