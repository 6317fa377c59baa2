/*
 * fake_cupti_plugin.c - a test double of libgpuprofile_cupti.so for the
 * machine without a GPU: the same exported table, with CUPTI's runtime
 * replaced by synthetic activity buffers (tests/cupti/synth.h) that go
 * through the real decoder (plugin/decode.c) into the core's real sink.
 *
 * FAKE_CUPTI_SCENARIO: "ok" (default), "fail" (start refuses, like CUPTI
 * without a driver), "graphs_refused" (GRAPH_TRACE not enabled), "drops"
 * (CUPTI reports dropped records and refused buffers), "nvtx_graphs" (as
 * "ok", plus an NVTX range of domain "trainer" that never ends and, with
 * graph tracing on, a graph launch), "launches" (every fake_cupti_launch
 * is also a kernel - three names, two grids, durations 5-11 us - and
 * every tenth a host-to-device copy of 4096 * corr bytes, delivered at
 * the next drain, with an EXTERNAL_CORRELATION record of the id the
 * launching thread pushed last (push_external), if any: a workload of any
 * size for the tests that run GPUFlight's analyzer over our sessions; with
 * graph tracing on, a two-node graph_node_definition once), "pcsampling" (as
 * "ok", and with profiling_engine PcSampling, PC samples of the PC Sampling
 * API through the real aggregator, plugin/common/aggregator.c: see feed_pc;
 * with FAKE_CUBIN a cubin kept and a sample in its function, and the
 * functions through the real disassembler runner, plugin/common/disasm.c),
 * "pc_noperm", "pc_unsupported", "pc_virtual" (PC sampling refused at start
 * with CUPTI's error for it: the session runs Trace), "sassmetrics" (as
 * "ok", and with profiling_engine SassMetrics the real engine,
 * plugin/engines/sassmetrics/sassmetrics.c, over the fake SASS Metrics API of
 * tests/plugin/sass_fake.h: see start_sass), "sass_noperm",
 * "sass_unsupported", "sass_mig", "sass_virtual" (SASS metrics refused
 * with CUPTI's error for it: the session runs Trace), "deep" (with
 * profiling_engine Deep both: feed_pc's PC samples and start_sass's SASS
 * metrics into one aggregator, as plugin/cupti_plugin.c shares PC
 * sampling's with the SASS engine), "deep_sass_refused" (SASS metrics
 * refused: no permission), "deep_refused" (PC sampling and SASS metrics
 * refused: no permission), "deep_read_refused" (SASS metrics refused at
 * their first read, after init: not supported), "deep_late" (a context current at start, and
 * cuptiProfilerInitialize failing without a specific cause); with profiling_engine
 * PmSampling, the real PM engine (plugin/engines/pmsamp/pmsamp.c) over tests/plugin/
 * pm_fake.h's CUPTI: 3 samples a drain of the default metrics, or refused
 * at Enable ("pm_noperm", "pm_mig", "pm_virtual"); with range_profiler
 * (profiling_engine RangeProfiler), the real range profiler
 * (plugin/engines/rangeprof/rangeprof.c) over tests/plugin/rp_fake.h's CUPTI, at the core's
 * outermost scopes (range_begin/range_end): two kernel ranges a window, or
 * refused ("rp_noperm": cuptiProfilerInitialize without permission;
 * "rp_late": a context current at start and SetConfig refused).
 * FAKE_CUPTI_DEVICE_UUID: the uuid of its one CUDA device (default
 * GPU-00000000-1111-2222-3333-444444444444), as plugin/driver.c formats
 * cuDeviceGetUuid's 16 bytes ("GPU-" and hex, a MIG instance's too).  One
 * buffer is delivered at the first drain, one only after stop() - as a forced flush
 * delivers the records still in flight - so a test sees whether shutdown
 * drains after stopping.  With stack_trace, every fake_cupti_launch (and
 * fake_cupti_sync, a synchronising call's entry) captures the caller's CPU stack through the real
 * plugin/stacks.c (this module's own frame dropped as the plugin's are), announced at the next
 * drain before its buffer ("launches": the queue taken first, then the stacks announced, as the
 * real plugin does, so a launch racing the drain never has its record before its stack).
 * fake_cupti_profiler and fake_cupti_nvtx are CUPTI's callbacks for cuProfilerStart / Stop and an
 * NVTX push / pop, through the real plugin/capture_cb.c (capture windows).  Never installed.
 */
#include "capture_cb.h"
#include "decode.h"
#include "pystack.h"
#include "stacks.h"
#include "engines/pcsamp/pcsamp.h"
#include "pm_fake.h"
#include "rp_fake.h"
#include "sass_fake.h"
#include "scope_hooks.h"
#include "synth.h"

#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

static fl_decoder *dec;
static int drains;
static _Atomic bool stopped;
static bool late_done;
static const char *scenario = "ok";
static fl_trace_stats notes;
static _Atomic int flushes;
static _Atomic int launched;
static bool first_done;
static size_t (*scope_path)(uint32_t *, size_t);
static bool graphs_on;
static fl_stacks *stacks;
static uint64_t stacks_announced;
static fl_agg *pcs;        /* PC sampling, active */
static uint64_t cubin_crc; /* FAKE_CUBIN's, 0: none */
static uint32_t pc_status; /* FL_PC_* */
static char pc_msg[512];
static bool sass_on; /* the SASS engine started (over sass_fake.h) */

static uint64_t now_ns(void);

/* "launches": the launches not yet drained (the application's threads add,
 * the writer thread takes). */
#define QUEUE_MAX 65536
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint32_t corr;
    uint64_t t_ns;
    uint8_t ext_kind; /* the thread's innermost pushed external id, 0: none */
    uint64_t ext_id;
} queue[QUEUE_MAX];
static size_t queued;

/* CUPTI's external correlation stacks (one per thread; kinds mixed here,
 * as a test pushes one kind at a time): push_external / pop_external. */
#define EXT_DEPTH 64
static __thread struct {
    uint8_t kind;
    uint64_t id;
} ext_stack[EXT_DEPTH];
static __thread unsigned ext_depth;

static gp_status f_push_external(uint8_t kind, uint64_t id)
{
    if (ext_depth >= EXT_DEPTH)
        return GP_ERR_CUPTI;
    ext_stack[ext_depth].kind = kind;
    ext_stack[ext_depth].id = id;
    ext_depth++;
    return GP_OK;
}

static gp_status f_pop_external(uint8_t kind)
{
    if (!ext_depth || ext_stack[ext_depth - 1].kind != kind)
        return GP_ERR_CUPTI; /* CUPTI: nothing of that kind pushed */
    ext_depth--;
    return GP_OK;
}

/* What CUPTI's launch callback does, for a launch with correlation id
 * corr on the calling thread (the test calls it inside its scopes). */
__attribute__((visibility("default"))) void fake_cupti_launch(uint32_t corr)
{
    CUpti_CallbackData cb = {.callbackSite = CUPTI_API_ENTER, .correlationId = corr};
    fl_capture_cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
    uint32_t ids[FL_SCOPE_PATH_MAX];
    size_t n = scope_path ? scope_path(ids, FL_SCOPE_PATH_MAX) : 0;
    fl_launch_put(corr, ids, n, fl_stacks_capture(stacks, 0));
    if (strcmp(scenario, "launches") == 0) {
        pthread_mutex_lock(&q_mu);
        if (queued < QUEUE_MAX) {
            queue[queued].corr = corr;
            queue[queued].t_ns = now_ns();
            queue[queued].ext_kind = ext_depth ? ext_stack[ext_depth - 1].kind : 0;
            queue[queued].ext_id = ext_depth ? ext_stack[ext_depth - 1].id : 0;
            queued++;
        }
        pthread_mutex_unlock(&q_mu);
    }
    atomic_store(&launched, 1);
}

/* What CUPTI's callbacks see of cuProfilerStart (start) or cuProfilerStop
 * with correlation id corr: its entry and its exit, through the plugin's
 * capture_cb.c as the CUPTI plugin calls it. */
__attribute__((visibility("default"))) void fake_cupti_profiler(int start, uint32_t corr)
{
    CUpti_CallbackId id =
        start ? CUPTI_DRIVER_TRACE_CBID_cuProfilerStart : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    CUpti_CallbackData cb = {.callbackSite = CUPTI_API_ENTER, .correlationId = corr};
    fl_capture_cb(CUPTI_CB_DOMAIN_DRIVER_API, id, &cb);
    cb.callbackSite = CUPTI_API_EXIT;
    fl_capture_cb(CUPTI_CB_DOMAIN_DRIVER_API, id, &cb);
}

/* What CUPTI's NVTX callback gives for nvtxRangePushA(name) (name not
 * NULL) or nvtxRangePop(). */
__attribute__((visibility("default"))) void fake_cupti_nvtx(const char *name)
{
    nvtxRangePushA_params push = {.message = name};
    CUpti_NvtxData d = {.functionName = name ? "nvtxRangePushA" : "nvtxRangePop",
                        .functionParams = name ? (const void *)&push : NULL};
    fl_capture_cb(CUPTI_CB_DOMAIN_NVTX,
                  name ? CUPTI_CBID_NVTX_nvtxRangePushA : CUPTI_CBID_NVTX_nvtxRangePop, &d);
}

/* What CUPTI's callback does at the entry of a synchronising call
 * (cudaStreamSynchronize, ...) with correlation id corr, with stack_trace:
 * the caller's stack, for the SYNCHRONIZATION record of corr (the first
 * buffer's is corr 15). */
__attribute__((visibility("default"))) void fake_cupti_sync(uint32_t corr)
{
    fl_sync_put(corr, fl_stacks_capture(stacks, 0));
}

static const char *const launch_names[] = {"_Z6vecAddPfS_S_i", "_Z4gemmPKfS0_Pf",
                                           "_Z9reduceSumPKfPfi"};

/* "launches": every queued launch as a kernel record (and every tenth a
 * copy), in one buffer, s (the buffer CUPTI completed: taken before the
 * drain announces the stacks, as the real plugin takes its buffers). */
static void take_launches(synth *s)
{
    pthread_mutex_lock(&q_mu);
    size_t n = queued;
    synth_init(s, (n + 1) * 1024);
    for (size_t i = 0; i < n; i++) {
        uint32_t c = queue[i].corr;
        uint64_t t = queue[i].t_ns + 2000, dur = 5000 + (uint64_t)(c % 7) * 1000;
        if (queue[i].ext_kind)
            synth_external(s, (CUpti_ExternalCorrelationKind)queue[i].ext_kind, queue[i].ext_id, c);
        synth_kernel(s, launch_names[c % 3], t, t + dur, c, 7, 0, c % 2 ? 4096 : 1024, 256, 32, 0,
                     0);
        if (c % 10 == 0)
            synth_memcpy(s, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096ull * c, t + dur, t + dur + 3000,
                         c, 7);
    }
    queued = 0;
    pthread_mutex_unlock(&q_mu);
}

/* The buffer take_launches made, decoded into sink. */
static void drain_launches(const fl_trace_sink *sink, synth *s)
{
    fl_decoder_feed(dec, sink, s->p, s->len);
    fl_decoder_flush(dec, sink);
    synth_free(s);
    /* With graph tracking, once: a two-node graph's definition, so the
     * sessions GPUFlight's analyzer reads hold graph_node_definition. */
    static bool nodes_done;
    if (graphs_on && !nodes_done && sink->graph_nodes) {
        nodes_done = true;
        fl_graph_node_row nodes[2] = {{.exec_key = 0xe0e0,
                                       .node_id = 41,
                                       .graph_id = 4,
                                       .node_index = 0,
                                       .kernel_name = launch_names[0]},
                                      {.exec_key = 0xe0e0,
                                       .node_id = 42,
                                       .graph_id = 4,
                                       .node_index = 1,
                                       .node_type = 2,
                                       .dependency_count = 1}};
        sink->graph_nodes(sink->user, nodes, 2);
    }
}

/* "pcsampling": the PC records of the first read (the kernels of the first
 * buffer: corr 11 and 12 vecAdd, 13 gemm) and, after stop, of the last
 * (corr 16).  Device 0's stall reasons: 0 selected, 7 long scoreboard,
 * 9 barrier; 99 has no name.  Samples (corr, function, pc, reason):
 *   11 vecAdd 0x40 7: 20 + 10 (two reads, one row)   11 vecAdd 0x40 0: 5
 *   12 vecAdd 0x40 7: 10                             13 gemm   0x80 9: 20
 *   13 gemm   0x80 99: 2                             16 vecAdd 0x40 7: 4 (last read) */
static void feed_pc(const fl_trace_sink *sink, bool last)
{
    static const uint32_t idx[] = {0, 7, 9, 99};
    static const char *const names[] = {"smsp__pcsamp_warps_issue_stalled_selected",
                                        "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                        "smsp__pcsamp_warps_issue_stalled_barrier"};
    static synth_pc d;
    uint64_t t = now_ns();
    if (!last) {
        fl_agg_stall_names(pcs, 0, idx, names, 3);
        synth_pc_init(&d);
        synth_pc_add(&d, 0x1234, "_Z6vecAddPfS_S_i", 0x40, 11, 2, (const uint32_t[]){7, 0},
                     (const uint32_t[]){20, 5});
        synth_pc_add(&d, 0x1234, "_Z6vecAddPfS_S_i", 0x40, 12, 1, (const uint32_t[]){7},
                     (const uint32_t[]){10});
        synth_pc_add(&d, 0x1234, "_Z4gemmPKfS0_Pf", 0x80, 13, 2, (const uint32_t[]){9, 99},
                     (const uint32_t[]){20, 2});
        d.data.droppedSamples = 0;
        fl_agg_feed(pcs, sink, &d.data, 0, t);
        synth_pc_init(&d);
        synth_pc_add(&d, 0x1234, "_Z6vecAddPfS_S_i", 0x40, 11, 1, (const uint32_t[]){7},
                     (const uint32_t[]){10});
        if (cubin_crc) /* FAKE_CUBIN: a function the disassembler finds */
            synth_pc_add(&d, cubin_crc, "_Z5chasePKjPji", 0x60, 11, 1, (const uint32_t[]){7},
                         (const uint32_t[]){3});
        fl_agg_feed(pcs, sink, &d.data, 0, t + 1);
    } else {
        synth_pc_init(&d);
        synth_pc_add(&d, 0x1234, "_Z6vecAddPfS_S_i", 0x40, 16, 1, (const uint32_t[]){7},
                     (const uint32_t[]){4});
        fl_agg_feed(pcs, sink, &d.data, 0, t);
    }
    fl_agg_flush(pcs, sink);
    fl_agg_fn *fns = NULL;
    size_t n = fl_agg_take_functions(pcs, &fns);
    fl_disasm_functions(sink, fns, n);
    fl_agg_free_functions(fns, n);
}

/* FAKE_CUBIN (a cubin file): kept as the module-load callback keeps one,
 * its CRC for the PC records of feed_pc. */
static void keep_fake_cubin(void)
{
    const char *path = getenv("FAKE_CUBIN");
    cubin_crc = 0;
    FILE *f = path && *path ? fopen(path, "rb") : NULL;
    if (!f)
        return;
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fl_cubin_keep(buf, n);
    CUpti_GetCubinCrcParams c = {.size = CUpti_GetCubinCrcParamsSize, .cubin = buf, .cubinSize = n};
    cubin_crc = cuptiGetCubinCrc(&c) == CUPTI_SUCCESS ? c.cubinCrc : 0;
}

/* PM sampling at start: the real engine over the fake CUPTI, on a context
 * "current" at start. */
static int fake_ctx;
static void start_pm(const fl_trace_options *o)
{
    pmf_reset(now_ns() + 1000000, 3);
    pmf.enable = strcmp(scenario, "pm_noperm") == 0 ? CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                 : strcmp(scenario, "pm_mig") == 0  ? CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED
                 : strcmp(scenario, "pm_virtual") == 0
                     ? CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED
                     : CUPTI_SUCCESS;
    fl_pms_set_api(&pmf_api);
    fl_trace_options pmo = *o;
    pmo.clock_offset_ns = 0; /* the fake GPU clock is the wall clock */
    fl_pms_engine_start(&pmo, &fake_ctx);
}

static void *fake_current_ctx(void)
{
    return &fake_ctx;
}

/* The range profiler at start: the real engine over rp_fake.h (every
 * scenario; off unless range_profiler). */
static void start_rp(const fl_trace_options *o)
{
    rpf_reset(2);
    bool late = strcmp(scenario, "rp_late") == 0;
    rpf.init =
        strcmp(scenario, "rp_noperm") == 0 ? CUPTI_ERROR_INSUFFICIENT_PRIVILEGES : CUPTI_SUCCESS;
    rpf.config = late ? CUPTI_ERROR_INVALID_OPERATION : CUPTI_SUCCESS;
    fl_rp_set_api(&rpf_api);
    fl_engine_env env = {.host = &rpf_host, .current_ctx = fake_current_ctx, .late = late};
    fl_rp_engine_start(o, &env);
}

/* PC sampling at start: a refusal (pc_* scenarios) or the aggregator. */
static void start_pc(const fl_trace_options *o)
{
    pc_status = FL_PC_OFF;
    pc_msg[0] = '\0';
    if (!o->pc_sampling)
        return;
    bool refused = strcmp(scenario, "pc_noperm") == 0 || strcmp(scenario, "deep_refused") == 0;
    CUptiResult r = refused                                   ? CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                    : strcmp(scenario, "pc_unsupported") == 0 ? CUPTI_ERROR_NOT_SUPPORTED
                    : strcmp(scenario, "pc_virtual") == 0
                        ? CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED
                        : CUPTI_SUCCESS;
    pc_status = fl_pcs_status_of(r);
    if (r != CUPTI_SUCCESS) {
        fl_pcs_explain(r, "cuptiPCSamplingEnable", pc_msg, sizeof pc_msg);
        return;
    }
    fl_agg_config c = {
        .source = o->source_collection, .scopes = true, .disasm = o->disassembler != NULL};
    pcs = fl_agg_create(&c);
    fl_disasm_start(o->disassembler, 0);
    keep_fake_cubin();
}

/* The scenarios whose PC sampling feeds samples. */
static bool pc_scenario(void)
{
    return strcmp(scenario, "pcsampling") == 0 || strncmp(scenario, "deep", 4) == 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* SASS metrics over the fake API: three kernels' instructions at the
 * first collection point - unit-stride loads (4 sectors a request, the
 * ideal), strided loads (32 sectors a request against 4), a branch where
 * half the warp's threads diverge - or the scenario's refusal. */
static void start_sass(const fl_trace_options *o)
{
    sass_on = false;
    bool deep = strncmp(scenario, "deep", 4) == 0;
    if (!o->sass_metrics || (strncmp(scenario, "sass", 4) != 0 && !deep))
        return;
    sf_reset();
    bool noperm = strcmp(scenario, "sass_noperm") == 0 ||
                  strcmp(scenario, "deep_sass_refused") == 0 ||
                  strcmp(scenario, "deep_refused") == 0;
    CUptiResult r = noperm                               ? CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                    : strcmp(scenario, "deep_late") == 0 ? CUPTI_ERROR_INVALID_OPERATION
                    : strcmp(scenario, "sass_unsupported") == 0 ? CUPTI_ERROR_NOT_SUPPORTED
                    : strcmp(scenario, "sass_mig") == 0 ? CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED
                    : strcmp(scenario, "sass_virtual") == 0
                        ? CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED
                        : CUPTI_SUCCESS;
    if (strcmp(scenario, "deep_read_refused") == 0)
        sf.data_props = CUPTI_ERROR_NOT_SUPPORTED;
    else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_INVALID_OPERATION)
        sf.init = r;
    else if (r == CUPTI_ERROR_NOT_SUPPORTED)
        sf.set_config = r;
    else
        sf.props_all = r;
    sf.refuse = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared";
    uint64_t m[6] = {sf_metric_id("smsp__sass_inst_executed"),
                     sf_metric_id("smsp__sass_thread_inst_executed"),
                     sf_metric_id("smsp__sass_inst_executed_op_global_ld"),
                     sf_metric_id("smsp__sass_sectors_mem_global"),
                     sf_metric_id("smsp__sass_sectors_mem_global_ideal"),
                     sf_metric_id("smsp__sass_branch_targets_threads_divergent")};
    sf_add(0x1234, "_Z6vecAddPfS_S_i", 1, 0x40, 5, m, (const uint64_t[]){100, 3200, 100, 400, 400});
    sf_add(0x1234, "_Z6vecAddPfS_S_i", 1, 0x50, 2, m, (const uint64_t[]){100, 3200});
    sf_add(0x1234, "_Z7stridedPfi", 2, 0x30, 5, m, (const uint64_t[]){50, 1600, 50, 1600, 200});
    sf_add(0x1234, "_Z9divergentPi", 3, 0x60, 2, m, (const uint64_t[]){80, 1280});
    sf_add(0x1234, "_Z9divergentPi", 3, 0x70, 6, m, (const uint64_t[]){10, 320, 0, 0, 0, 8});
    sf.reads_left = 1;
    fl_sass_set_api(&sf_api);
    /* Deep: PC sampling's aggregator shared (NULL when PC sampling was
     * refused: the SASS engine's own). */
    sf.current = (void *)0x1000; /* the context of start, current on every thread */
    fl_engine_env env = {.late = strcmp(scenario, "deep_late") == 0,
                         .agg = deep ? pcs : NULL,
                         .current_ctx = sf_current_ctx,
                         .ctx_synchronize = sf_sync};
    fl_sass_engine_start(o, (void *)0x1000, &env);
    sass_on = true;
}

static void f_collect(void) {}

static gp_status f_start(const fl_trace_options *o, gp_error *err)
{
    const char *sc = getenv("FAKE_CUPTI_SCENARIO");
    scenario = sc && *sc ? sc : "ok";
    if (strcmp(scenario, "fail") == 0) {
        if (err)
            snprintf(err->message, sizeof err->message,
                     "cuptiActivityEnable(CONCURRENT_KERNEL) failed: CUPTI_ERROR_UNKNOWN (999)");
        return GP_ERR_CUPTI;
    }
    memset(&notes, 0, sizeof notes);
    if (strcmp(scenario, "graphs_refused") == 0 && o->graphs) {
        notes.unavailable = FL_FEAT_GRAPHS;
        snprintf(notes.unavailable_msg, sizeof notes.unavailable_msg,
                 "cuptiActivityEnable(GRAPH_TRACE) failed: CUPTI_ERROR_NOT_COMPATIBLE (36)");
    }
    /* Buffer times are CUPTI's clock: "now" with offset 0. */
    fl_decoder_config c = {.clock_offset_ns = 0, .limits = NULL, .demangle = true, .scopes = true};
    scope_path = o->scope_path;
    graphs_on = o->graphs;
    fl_stacks_destroy(stacks);
    stacks = NULL;
    stacks_announced = 0;
    if (o->stack_trace) {
        static const char *const mine[] = {"fake_cupti_plugin", NULL};
        fl_stacks_config sc = {
            .max_stacks = o->max_stacks, .skip_modules = mine, .demangle = fl_demangle};
        gp_error err;
        stacks = fl_stacks_create(&sc, &err);
        if (!stacks) {
            notes.unavailable |= FL_FEAT_STACKS;
            snprintf(notes.stacks_msg, sizeof notes.stacks_msg, "%s", err.message);
        }
    }
    atomic_store(&launched, 0);
    pthread_mutex_lock(&q_mu);
    queued = 0;
    pthread_mutex_unlock(&q_mu);
    first_done = false;
    start_pc(o);
    start_pm(o);
    fl_scope_hooks_select(o);
    start_sass(o);
    start_rp(o);
    fl_launch_scope_reset();
    fl_capture_cb_start(o, NULL);
    dec = fl_decoder_create(&c);
    drains = 0;
    atomic_store(&flushes, 0);
    stopped = false;
    late_done = false;
    return dec ? GP_OK : GP_ERR_NO_MEMORY;
}

static size_t f_devices(fl_gpu_limits *out, size_t cap)
{
    if (cap == 0)
        return 0;
    memset(out, 0, sizeof *out);
    out->device_id = 0;
    out->cc_major = 9;
    out->cc_minor = 0;
    out->sm_count = 132;
    out->warp_size = 32;
    out->max_threads_per_block = 1024;
    out->max_threads_per_sm = 2048;
    out->max_blocks_per_sm = 32;
    out->regs_per_sm = 65536;
    out->max_regs_per_block = 65536;
    out->smem_per_sm_bytes = 233472;
    out->smem_per_block_bytes = 49152;
    out->smem_per_block_optin_bytes = 232448;
    out->reserved_smem_per_block_bytes = 1024;
    out->l2_cache_bytes = 52428800;
    snprintf(out->name, sizeof out->name, "Fake H100");
    const char *uuid = getenv("FAKE_CUPTI_DEVICE_UUID");
    snprintf(out->uuid, sizeof out->uuid, "%s",
             uuid && *uuid ? uuid : "GPU-00000000-1111-2222-3333-444444444444");
    return 1;
}

static void emit_stacks(void *user, const uint32_t *ids, const char *const *texts, size_t n)
{
    const fl_trace_sink *sink = user;
    sink->stacks(sink->user, ids, texts, n);
}

static void f_drain_trace(const fl_trace_sink *sink);

static void f_drain(const fl_trace_sink *sink)
{
    f_drain_trace(sink);
    if (sass_on)
        fl_sass_engine_drain(sink);
    fl_rp_engine_drain(sink);
}

static void f_drain_trace(const fl_trace_sink *sink)
{
    synth s;
    drains++;
    synth launches = {0};
    bool launches_on = strcmp(scenario, "launches") == 0;
    if (launches_on)
        take_launches(&launches);
    if (stacks)
        stacks_announced += fl_stacks_announce(stacks, emit_stacks, (void *)sink);
    /* PM sampling (nothing when it is off): read at the first drain and
     * after stop only, so a session's counts do not depend on how many
     * writer cycles it had. */
    if (drains == 1 || stopped)
        fl_pms_engine_drain(sink);
    if (launches_on) {
        drain_launches(sink, &launches);
        return;
    }
    /* The first buffer once the test has launched (or at the end). */
    if (!first_done && (atomic_load(&launched) || atomic_load(&stopped))) {
        first_done = true;
        uint64_t t = now_ns();
        synth_init(&s, 1 << 16);
        synth_marker(&s, CUPTI_ACTIVITY_FLAG_MARKER_START, 1, "nvtx_outer", t, 9);
        synth_memcpy(&s, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, t + 1000, t + 3000, 10, 7);
        synth_external(&s, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 4242, 11);
        synth_kernel(&s, "_Z6vecAddPfS_S_i", t + 4000, t + 9000, 11, 7, 0, 4096, 256, 16, 0, 0);
        synth_kernel(&s, "_Z6vecAddPfS_S_i", t + 10000, t + 15000, 12, 7, 0, 4096, 256, 16, 0, 0);
        synth_kernel(&s, "_Z4gemmPKfS0_Pf", t + 16000, t + 56000, 13, 7, 0, 1024, 256, 64, 8192, 0);
        synth_memset(&s, 1024, 0, t + 57000, t + 58000, 14);
        synth_sync(&s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, t + 58000, t + 60000,
                   15, 7);
        synth_marker(&s, CUPTI_ACTIVITY_FLAG_MARKER_END, 1, NULL, t + 61000, 9);
        if (strcmp(scenario, "nvtx_graphs") == 0) {
            synth_marker_domain(&s, CUPTI_ACTIVITY_FLAG_MARKER_START, 2, "open_range", "trainer",
                                t + 100, 9);
            if (graphs_on)
                synth_graph(&s, 3, t + 62000, t + 70000, 18);
        }
        synth_overhead(&s, t, t + 500);
        fl_decoder_feed(dec, sink, s.p, s.len);
        fl_decoder_flush(dec, sink);
        synth_free(&s);
        if (pcs && pc_scenario())
            feed_pc(sink, false);
    }
    if (atomic_load(&stopped) && !late_done) {
        late_done = true;
        uint64_t t = now_ns();
        synth_init(&s, 4096);
        synth_kernel(&s, "_Z6vecAddPfS_S_i", t, t + 5000, 16, 7, 0, 8192, 256, 16, 0, 0);
        synth_memcpy(&s, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 4096, t + 6000, t + 8000, 17, 7);
        fl_decoder_feed(dec, sink, s.p, s.len);
        fl_decoder_flush(dec, sink);
        synth_free(&s);
        if (pcs && pc_scenario())
            feed_pc(sink, true);
    }
}

/* The writer calls it about once a second; FAKE_CUPTI_FLUSH_FILE records
 * that it did (the test cannot see inside the plugin otherwise). */
static void f_flush(void)
{
    if (atomic_fetch_add(&flushes, 1) == 0) {
        const char *f = getenv("FAKE_CUPTI_FLUSH_FILE");
        FILE *fp = f && *f ? fopen(f, "w") : NULL;
        if (fp) {
            fputs("flushed\n", fp);
            fclose(fp);
        }
    }
}

static void f_stop(void)
{
    fl_capture_cb_stop();
    fl_pms_engine_stop();
    fl_rp_engine_stop();
    stopped = true;
    if (sass_on)
        fl_sass_engine_stop();
}

static void f_stats(fl_trace_stats *out)
{
    memset(out, 0, sizeof *out);
    fl_decoder_stats(dec, out);
    out->unavailable = notes.unavailable;
    memcpy(out->unavailable_msg, notes.unavailable_msg, sizeof out->unavailable_msg);
    memcpy(out->stacks_msg, notes.stacks_msg, sizeof out->stacks_msg);
    fl_stacks_stats ss;
    fl_stacks_counts(stacks, &ss);
    out->stack_python = ss.python_captures;
    if (stacks)
        snprintf(out->stacks_python, sizeof out->stacks_python, "%s", fl_py_note());
    out->stacks = stacks_announced;
    out->stack_captures = ss.captures;
    out->stacks_overflow = ss.overflow;
    out->stacks_max = ss.max_stacks;
    out->buffers = (uint64_t)drains;
    if (strcmp(scenario, "drops") == 0) {
        out->cupti_dropped = 5;
        out->buffers_refused = 2;
    }
    fl_pms_engine_stats(out);
    out->engines[FL_ENGINE_PC].status = pc_status;
    out->engines[FL_ENGINE_PC].counters.pc.period_log2 = FL_PC_PERIOD_DEFAULT;
    snprintf(out->engines[FL_ENGINE_PC].message, sizeof out->engines[FL_ENGINE_PC].message, "%s",
             pc_msg);
    if (pcs) {
        out->engines[FL_ENGINE_PC].counters.pc.method = FL_PC_METHOD_SAMPLING_API;
        out->engines[FL_ENGINE_PC].counters.pc.contexts = 1;
        out->engines[FL_ENGINE_PC].counters.pc.stall_reasons = 3;
        fl_agg_stats(pcs, out);
        fl_disasm_stats(out);
    }
    if (sass_on)
        fl_sass_engine_stats(out);
    fl_rp_engine_stats(out);
}

static void f_release(void)
{
    fl_decoder_destroy(dec);
    dec = NULL;
    fl_stacks_destroy(stacks);
    stacks = NULL;
    if (sass_on) { /* first: it may use pcs */
        fl_sass_engine_release();
        fl_sass_set_api(NULL);
        sass_on = false;
    }
    fl_agg_destroy(pcs);
    pcs = NULL;
    fl_cubin_reset();
    fl_pms_engine_release();
    fl_rp_engine_release();
    fl_rp_set_api(NULL);
}

#ifdef FAKE_STALE_LAYOUT
/* A plugin built from other headers: its fl_kernel_row one field longer. */
static fl_trace_layout layout = FL_TRACE_LAYOUT;
__attribute__((constructor)) static void stale_layout(void)
{
    layout.kernel_row += 8;
}
#else
static const fl_trace_layout layout = FL_TRACE_LAYOUT;
#endif

EXPORT const fl_trace_plugin gpufl_cupti_plugin_v1 = {
    .abi = FL_TRACE_ABI,
    .layout = &layout,
    .version = "fake",
    .start = f_start,
    .devices = f_devices,
    .drain = f_drain,
    .flush = f_flush,
    .stop = f_stop,
    .stats = f_stats,
    .release = f_release,
    .collect = f_collect,
    .range_begin = fl_scope_hooks_begin,
    .range_end = fl_scope_hooks_end,
    .push_external = f_push_external,
    .pop_external = f_pop_external,
};
