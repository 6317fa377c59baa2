/*
 * test_gpu_metrics.c - gp_metrics_evaluate on counter data from a real
 * GPU.  Skips (77) without a GPU (no libcuda, cuInit fails or no device),
 * without the plugin ($GP_TEST_PLUGIN, set by tests/CMakeLists.txt in a
 * build that has it), in sanitizer builds, and where CUPTI may not profile
 * the device (no admin rights under NVreg_RestrictProfilingToAdminUsers=1,
 * counters held by another profiler, a vGPU/MIG/WSL device it refuses).
 *
 * gpu-profile drives only the host side of the range profiler, so the test
 * collects the counter data itself with CUPTI's Range Profiler target API
 * (cupti_range_profiler.h): one user range, user replay, around a kernel
 * that spins for SPIN_NS on %globaltimer (PTX JIT-compiled by the driver,
 * launched through the driver API).  The config image comes from
 * gp_metrics_config_image on the local chip, the evaluation from
 * gp_metrics_evaluate; gpu__time_duration.sum must agree with a cuEvent
 * timing of the same kernel and sm__cycles_elapsed.avg must be a plausible
 * clock times that duration.
 *
 * Neither libcuda nor the CUPTI headers are build requirements of the core's
 * tests: libcuda is dlopen'ed, CUPTI's target functions are looked up in the
 * plugin's own libcupti (dlsym on the plugin's handle searches its
 * dependencies), and the few CUPTI parameter structs are mirrored below
 * (their layout is CUPTI's ABI: structSize-versioned, append-only).
 */
#include "check.h"
#include "gpu_metrics.h"
#include "gpu_profile.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* CUPTI's host API dlopens libnvperf_host.so with RTLD_DEEPBIND, which the
 * ASan and TSan runtimes refuse (they end the process): sanitizer builds
 * skip. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GP_SANITIZED_SKIP 1
#else
#define GP_SANITIZED_SKIP 0
#endif

#define SPIN_NS 2000000ull /* the kernel's run time: 2 ms */
#define RANGE_NAME "gp_spin"
#define MAX_PASSES 16 /* a guard: the metrics below need 1 */

/* One thread that spins until %globaltimer (ns) has advanced by its
 * argument.  PTX 6.4 / sm_75 (Turing, the oldest range-profiler GPU) is
 * JIT-compiled by any driver for any newer GPU. */
static const char spin_ptx[] = ".version 6.4\n"
                               ".target sm_75\n"
                               ".address_size 64\n"
                               ".visible .entry gp_spin(.param .u64 gp_spin_ns)\n"
                               "{\n"
                               "  .reg .pred %p<2>;\n"
                               "  .reg .b64 %rd<5>;\n"
                               "  ld.param.u64 %rd1, [gp_spin_ns];\n"
                               "  mov.u64 %rd2, %globaltimer;\n"
                               "$L_spin:\n"
                               "  mov.u64 %rd3, %globaltimer;\n"
                               "  sub.s64 %rd4, %rd3, %rd2;\n"
                               "  setp.lt.u64 %p1, %rd4, %rd1;\n"
                               "  @%p1 bra $L_spin;\n"
                               "  ret;\n"
                               "}\n";

/* ---- the CUDA driver API (libcuda.so.1, dlopen'ed) ---- */

typedef struct cuda_api {
    void *lib;
    int (*init)(unsigned);
    int (*device_get_count)(int *);
    int (*device_get)(int *, int);
    int (*primary_ctx_retain)(void **, int);
    int (*primary_ctx_release)(int);
    int (*ctx_set_current)(void *);
    int (*ctx_synchronize)(void);
    int (*module_load_data)(void **, const void *);
    int (*module_unload)(void *);
    int (*module_get_function)(void **, void *, const char *);
    int (*launch_kernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
    int (*event_create)(void **, unsigned);
    int (*event_destroy)(void *);
    int (*event_record)(void *, void *);
    int (*event_synchronize)(void *);
    int (*event_elapsed)(float *, void *, void *);
    int (*get_error_string)(int, const char **);
} cuda_api;

/* Stores dlsym(lib, name) into the function pointer at fn; false if absent. */
static bool sym(void *lib, const char *name, void *fn)
{
    void *p = dlsym(lib, name);
    if (p)
        memcpy(fn, &p, sizeof p);
    return p != NULL;
}

static bool cuda_load(cuda_api *cu)
{
    memset(cu, 0, sizeof *cu);
    cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib)
        return false;
    /* The symbols cuda.h's macros name for a CUDA 12/13 build; the
     * _v2 elapsed-time entry point is newer than some drivers. */
    bool ok = sym(cu->lib, "cuInit", &cu->init) &&
              sym(cu->lib, "cuDeviceGetCount", &cu->device_get_count) &&
              sym(cu->lib, "cuDeviceGet", &cu->device_get) &&
              sym(cu->lib, "cuDevicePrimaryCtxRetain", &cu->primary_ctx_retain) &&
              sym(cu->lib, "cuDevicePrimaryCtxRelease_v2", &cu->primary_ctx_release) &&
              sym(cu->lib, "cuCtxSetCurrent", &cu->ctx_set_current) &&
              sym(cu->lib, "cuCtxSynchronize", &cu->ctx_synchronize) &&
              sym(cu->lib, "cuModuleLoadData", &cu->module_load_data) &&
              sym(cu->lib, "cuModuleUnload", &cu->module_unload) &&
              sym(cu->lib, "cuModuleGetFunction", &cu->module_get_function) &&
              sym(cu->lib, "cuLaunchKernel", &cu->launch_kernel) &&
              sym(cu->lib, "cuEventCreate", &cu->event_create) &&
              sym(cu->lib, "cuEventDestroy_v2", &cu->event_destroy) &&
              sym(cu->lib, "cuEventRecord", &cu->event_record) &&
              sym(cu->lib, "cuEventSynchronize", &cu->event_synchronize) &&
              sym(cu->lib, "cuGetErrorString", &cu->get_error_string) &&
              (sym(cu->lib, "cuEventElapsedTime_v2", &cu->event_elapsed) ||
               sym(cu->lib, "cuEventElapsedTime", &cu->event_elapsed));
    return ok;
}

static int gpu_count(cuda_api *cu)
{
    int n = 0;
    if (!cuda_load(cu) || cu->init(0) != 0 || cu->device_get_count(&n) != 0)
        n = 0;
    return n;
}

/* Checks a driver call; prints CUDA's message when it failed. */
static bool cu_ok(const cuda_api *cu, int rc, const char *what)
{
    if (rc == 0)
        return true;
    const char *s = NULL;
    if (cu->get_error_string(rc, &s) != 0 || !s)
        s = "?";
    fprintf(stderr, "%s failed: %s (%d)\n", what, s, rc);
    return false;
}

/* ---- CUPTI's range profiler (cupti_profiler_target.h and
 * cupti_range_profiler.h of CUDA 12.6+), mirrored ---- */

#define RP_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

enum {
    CUPTI_OK = 0,
    CUPTI_HARDWARE_BUSY = 26,
    CUPTI_NOT_SUPPORTED = 27,
    CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED = 33,
    CUPTI_INSUFFICIENT_PRIVILEGES = 35,
    CUPTI_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES = 40,
    CUPTI_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED = 41,
    CUPTI_CMP_DEVICE_NOT_SUPPORTED = 42,
    CUPTI_MIG_DEVICE_NOT_SUPPORTED = 43,
    CUPTI_SLI_DEVICE_NOT_SUPPORTED = 44,
    CUPTI_WSL_DEVICE_NOT_SUPPORTED = 45
};
enum { CUPTI_USER_RANGE = 2 };  /* CUpti_ProfilerRange: CUPTI_UserRange */
enum { CUPTI_USER_REPLAY = 3 }; /* CUpti_ProfilerReplayMode: CUPTI_UserReplay */

/* CUpti_Profiler_Initialize_Params and _DeInitialize_Params. */
typedef struct rp_profiler_params {
    size_t structSize;
    void *pPriv;
} rp_profiler_params;

/* CUpti_RangeProfiler_Enable_Params. */
typedef struct rp_enable_params {
    size_t structSize;
    void *pPriv;
    void *ctx;
    void *pRangeProfilerObject;
} rp_enable_params;

/* CUpti_RangeProfiler_{Disable,Start,PopRange}_Params. */
typedef struct rp_object_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
} rp_object_params;

/* CUpti_RangeProfiler_Stop_Params. */
typedef struct rp_stop_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
    size_t passIndex;
    size_t targetNestingLevel;
    uint8_t isAllPassSubmitted;
} rp_stop_params;

/* CUpti_RangeProfiler_PushRange_Params. */
typedef struct rp_push_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
    const char *pRangeName;
} rp_push_params;

/* CUpti_RangeProfiler_DecodeData_Params. */
typedef struct rp_decode_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
    size_t numOfRangeDropped;
} rp_decode_params;

/* CUpti_RangeProfiler_GetCounterDataSize_Params. */
typedef struct rp_data_size_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
    const char **pMetricNames;
    size_t numMetrics;
    size_t maxNumOfRanges;
    uint32_t maxNumRangeTreeNodes;
    size_t counterDataSize;
} rp_data_size_params;

/* CUpti_RangeProfiler_CounterDataImage_Initialize_Params. */
typedef struct rp_data_init_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
    size_t counterDataSize;
    uint8_t *pCounterData;
} rp_data_init_params;

/* CUpti_RangeProfiler_SetConfig_Params. */
typedef struct rp_config_params {
    size_t structSize;
    void *pPriv;
    void *pRangeProfilerObject;
    size_t configSize;
    const uint8_t *pConfig;
    size_t counterDataImageSize;
    uint8_t *pCounterDataImage;
    int range;      /* CUpti_ProfilerRange */
    int replayMode; /* CUpti_ProfilerReplayMode */
    size_t maxRangesPerPass;
    uint16_t numNestingLevels;
    uint16_t minNestingLevel;
    size_t passIndex;
    uint16_t targetNestingLevel;
} rp_config_params;

/* CUpti_RangeProfiler_GetCounterDataInfo_Params. */
typedef struct rp_data_info_params {
    size_t structSize;
    void *pPriv;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t numTotalRanges;
} rp_data_info_params;

/* CUpti_RangeProfiler_CounterData_GetRangeInfo_Params. */
typedef struct rp_range_info_params {
    size_t structSize;
    void *pPriv;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t rangeIndex;
    const char *rangeDelimiter;
    const char *rangeName;
} rp_range_info_params;

typedef struct cupti_api {
    void *lib; /* the plugin's handle; its libcupti answers the lookups */
    int (*result_string)(int, const char **);
    int (*initialize)(rp_profiler_params *);
    int (*deinitialize)(rp_profiler_params *);
    int (*enable)(rp_enable_params *);
    int (*disable)(rp_object_params *);
    int (*start)(rp_object_params *);
    int (*stop)(rp_stop_params *);
    int (*push_range)(rp_push_params *);
    int (*pop_range)(rp_object_params *);
    int (*decode)(rp_decode_params *);
    int (*data_size)(rp_data_size_params *);
    int (*data_init)(rp_data_init_params *);
    int (*set_config)(rp_config_params *);
    int (*data_info)(rp_data_info_params *);
    int (*range_info)(rp_range_info_params *);
} cupti_api;

static bool cupti_load(cupti_api *cp, const char *plugin)
{
    memset(cp, 0, sizeof *cp);
    cp->lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (!cp->lib) {
        fprintf(stderr, "dlopen %s: %s\n", plugin, dlerror());
        return false;
    }
    static const char *const names[] = {"cuptiGetResultString",
                                        "cuptiProfilerInitialize",
                                        "cuptiProfilerDeInitialize",
                                        "cuptiRangeProfilerEnable",
                                        "cuptiRangeProfilerDisable",
                                        "cuptiRangeProfilerStart",
                                        "cuptiRangeProfilerStop",
                                        "cuptiRangeProfilerPushRange",
                                        "cuptiRangeProfilerPopRange",
                                        "cuptiRangeProfilerDecodeData",
                                        "cuptiRangeProfilerGetCounterDataSize",
                                        "cuptiRangeProfilerCounterDataImageInitialize",
                                        "cuptiRangeProfilerSetConfig",
                                        "cuptiRangeProfilerGetCounterDataInfo",
                                        "cuptiRangeProfilerCounterDataGetRangeInfo"};
    void *fns[] = {&cp->result_string, &cp->initialize, &cp->deinitialize, &cp->enable,
                   &cp->disable,       &cp->start,      &cp->stop,         &cp->push_range,
                   &cp->pop_range,     &cp->decode,     &cp->data_size,    &cp->data_init,
                   &cp->set_config,    &cp->data_info,  &cp->range_info};
    _Static_assert(sizeof names / sizeof names[0] == sizeof fns / sizeof fns[0], "one per name");
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        if (!sym(cp->lib, names[i], fns[i])) {
            fprintf(stderr, "%s: no %s in the plugin's libcupti\n", plugin, names[i]);
            return false;
        }
    }
    return true;
}

/* Why the test skips when a CUPTI call gives rc, or NULL when rc is a
 * failure.  device_step: the call that decides whether the device can be
 * profiled at all (initialize, enable), where NOT_SUPPORTED means that. */
static const char *cupti_skip_reason(int rc, bool device_step)
{
    switch (rc) {
    case CUPTI_INSUFFICIENT_PRIVILEGES:
        return "profiling needs admin (NVreg_RestrictProfilingToAdminUsers)";
    case CUPTI_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "profiling is not enabled for this vGPU";
    case CUPTI_HARDWARE_BUSY:
        return "the GPU's counters are held by another profiler (DCGM, Nsight, ...)";
    case CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_WSL_DEVICE_NOT_SUPPORTED:
        return "CUPTI cannot profile this kind of device (vGPU, MIG, CMP, SLI, WSL or "
               "confidential computing)";
    case CUPTI_NOT_SUPPORTED:
        return device_step ? "CUPTI's range profiler does not support this device" : NULL;
    default:
        return NULL;
    }
}

/* The state of one collection, for the cleanup. */
typedef struct collect {
    const cuda_api *cu;
    const cupti_api *cp;
    const char *skip; /* set: skip with this reason */
    bool failed;      /* set: a call failed (already reported) */
} collect;

/* Checks a CUPTI call: true on success; otherwise sets c->skip (a reason to
 * skip) or c->failed (after printing CUPTI's message). */
static bool cp_ok(collect *c, int rc, const char *what, bool device_step)
{
    if (rc == CUPTI_OK)
        return true;
    const char *s = NULL;
    if (c->cp->result_string(rc, &s) != CUPTI_OK || !s)
        s = "?";
    const char *why = cupti_skip_reason(rc, device_step);
    if (why) {
        fprintf(stderr, "%s: %s (%d)\n", what, s, rc);
        c->skip = why;
    } else {
        fprintf(stderr, "%s failed: %s (%d)\n", what, s, rc);
        c->failed = true;
    }
    return false;
}

static bool launch_spin(const cuda_api *cu, void *fn)
{
    unsigned long long ns = SPIN_NS;
    void *args[] = {&ns};
    return cu_ok(cu, cu->launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
                 "cuLaunchKernel");
}

/* The kernel's run time by cuEvents (ms), after a warm-up launch; < 0 on a
 * failure. */
static float time_spin(const cuda_api *cu, void *fn)
{
    void *e0 = NULL, *e1 = NULL;
    float ms = -1;
    bool ok = launch_spin(cu, fn) && cu_ok(cu, cu->ctx_synchronize(), "cuCtxSynchronize") &&
              cu_ok(cu, cu->event_create(&e0, 0), "cuEventCreate") &&
              cu_ok(cu, cu->event_create(&e1, 0), "cuEventCreate") &&
              cu_ok(cu, cu->event_record(e0, NULL), "cuEventRecord") && launch_spin(cu, fn) &&
              cu_ok(cu, cu->event_record(e1, NULL), "cuEventRecord") &&
              cu_ok(cu, cu->event_synchronize(e1), "cuEventSynchronize") &&
              cu_ok(cu, cu->event_elapsed(&ms, e0, e1), "cuEventElapsedTime");
    if (e0)
        cu->event_destroy(e0);
    if (e1)
        cu->event_destroy(e1);
    return ok ? ms : -1;
}

/* Collects counter data for the config image over one user range around
 * the kernel: the image (malloc'd) and its size on success, the number of
 * passes replayed in *passes. */
static uint8_t *collect_range(collect *c, void *ctx, void *fn, const uint8_t *config,
                              size_t config_size, const char **metrics, size_t n, size_t *data_size,
                              size_t *passes)
{
    const cupti_api *cp = c->cp;
    uint8_t *data = NULL;
    bool all = false;
    rp_profiler_params init = {RP_SIZE(rp_profiler_params, pPriv)};
    rp_enable_params en = {RP_SIZE(rp_enable_params, pRangeProfilerObject)};
    rp_data_size_params ds = {RP_SIZE(rp_data_size_params, counterDataSize)};
    rp_data_init_params di = {RP_SIZE(rp_data_init_params, pCounterData)};
    rp_config_params sc = {RP_SIZE(rp_config_params, targetNestingLevel)};
    rp_decode_params dd = {RP_SIZE(rp_decode_params, numOfRangeDropped)};
    rp_object_params dis = {RP_SIZE(rp_object_params, pRangeProfilerObject)};
    rp_profiler_params fini = {RP_SIZE(rp_profiler_params, pPriv)};

    *passes = 0;
    if (!cp_ok(c, cp->initialize(&init), "cuptiProfilerInitialize", true))
        return NULL;
    en.ctx = ctx;
    if (!cp_ok(c, cp->enable(&en), "cuptiRangeProfilerEnable", true))
        goto deinit;

    /* A counter-data image for one range of these metrics. */
    ds.pRangeProfilerObject = en.pRangeProfilerObject;
    ds.pMetricNames = metrics;
    ds.numMetrics = n;
    ds.maxNumOfRanges = 1;
    ds.maxNumRangeTreeNodes = 1;
    if (!cp_ok(c, cp->data_size(&ds), "cuptiRangeProfilerGetCounterDataSize", false))
        goto disable;
    data = calloc(1, ds.counterDataSize);
    if (!data) {
        c->failed = true;
        goto disable;
    }
    di.pRangeProfilerObject = en.pRangeProfilerObject;
    di.counterDataSize = ds.counterDataSize;
    di.pCounterData = data;
    if (!cp_ok(c, cp->data_init(&di), "cuptiRangeProfilerCounterDataImageInitialize", false))
        goto disable;

    /* User ranges, replayed by us, one nesting level, one range a pass. */
    sc.pRangeProfilerObject = en.pRangeProfilerObject;
    sc.configSize = config_size;
    sc.pConfig = config;
    sc.counterDataImageSize = ds.counterDataSize;
    sc.pCounterDataImage = data;
    sc.range = CUPTI_USER_RANGE;
    sc.replayMode = CUPTI_USER_REPLAY;
    sc.maxRangesPerPass = 1;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    if (!cp_ok(c, cp->set_config(&sc), "cuptiRangeProfilerSetConfig", false))
        goto disable;

    /* The same work once per pass, until CUPTI has every pass. */
    while (!all && *passes < MAX_PASSES) {
        rp_object_params st = {RP_SIZE(rp_object_params, pRangeProfilerObject), NULL,
                               en.pRangeProfilerObject};
        rp_push_params pu = {RP_SIZE(rp_push_params, pRangeName), NULL, en.pRangeProfilerObject,
                             RANGE_NAME};
        rp_object_params po = {RP_SIZE(rp_object_params, pRangeProfilerObject), NULL,
                               en.pRangeProfilerObject};
        rp_stop_params sp = {RP_SIZE(rp_stop_params, isAllPassSubmitted), NULL,
                             en.pRangeProfilerObject};
        if (!cp_ok(c, cp->start(&st), "cuptiRangeProfilerStart", false))
            goto disable;
        if (!cp_ok(c, cp->push_range(&pu), "cuptiRangeProfilerPushRange", false))
            goto disable; /* Disable ends the started session */
        if (!launch_spin(c->cu, fn) ||
            !cu_ok(c->cu, c->cu->ctx_synchronize(), "cuCtxSynchronize")) {
            c->failed = true;
            goto disable;
        }
        if (!cp_ok(c, cp->pop_range(&po), "cuptiRangeProfilerPopRange", false) ||
            !cp_ok(c, cp->stop(&sp), "cuptiRangeProfilerStop", false))
            goto disable;
        all = sp.isAllPassSubmitted != 0;
        ++*passes;
    }
    if (!all) {
        fprintf(stderr, "CUPTI still wanted passes after %d\n", MAX_PASSES);
        c->failed = true;
        goto disable;
    }
    /* The hardware's data into the image. */
    dd.pRangeProfilerObject = en.pRangeProfilerObject;
    if (cp_ok(c, cp->decode(&dd), "cuptiRangeProfilerDecodeData", false))
        CHECK_U64(dd.numOfRangeDropped, 0);

disable:
    dis.pRangeProfilerObject = en.pRangeProfilerObject;
    cp_ok(c, cp->disable(&dis), "cuptiRangeProfilerDisable", false);
deinit:
    cp_ok(c, cp->deinitialize(&fini), "cuptiProfilerDeInitialize", false);
    if (c->skip || c->failed) {
        free(data);
        return NULL;
    }
    *data_size = ds.counterDataSize;
    return data;
}

/* Collects and evaluates gpu__time_duration.sum and sm__cycles_elapsed.avg
 * on device 0 (chip `chip`).  Returns NULL when done (checks recorded), or
 * a reason to skip. */
static const char *evaluate_real(cuda_api *cu, const char *plugin, const char *chip)
{
    const char *metrics[] = {"gpu__time_duration.sum", "sm__cycles_elapsed.avg"};
    const size_t n = sizeof metrics / sizeof metrics[0];
    const char *skip = NULL;
    gp_error err = {0};
    void *ctx = NULL, *mod = NULL, *fn = NULL;
    gp_metrics_host *h = NULL;
    uint8_t *image = NULL, *data = NULL;
    size_t image_size = 0, data_size = 0, passes = 0, replayed = 0;
    int dev = -1;

    /* The config image, from the host side under test. */
    CHECK_INT(gp_metrics_host_create(chip, GP_METRICS_RANGE, &h, &err), GP_OK);
    if (!h)
        goto out;
    gp_status st = gp_metrics_config_image(h, metrics, n, &image, &image_size, &err);
    if (st != GP_OK)
        fprintf(stderr, "gp_metrics_config_image: %s\n", err.message);
    CHECK_INT(st, GP_OK);
    if (st != GP_OK)
        goto out;
    CHECK_INT(gp_metrics_passes(image, image_size, &passes, &err), GP_OK);
    CHECK_U64(passes, 1);

    /* The context and the kernel. */
    bool ok = cu_ok(cu, cu->device_get(&dev, 0), "cuDeviceGet") &&
              cu_ok(cu, cu->primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain") &&
              cu_ok(cu, cu->ctx_set_current(ctx), "cuCtxSetCurrent") &&
              cu_ok(cu, cu->module_load_data(&mod, spin_ptx), "cuModuleLoadData") &&
              cu_ok(cu, cu->module_get_function(&fn, mod, "gp_spin"), "cuModuleGetFunction");
    CHECK(ok);
    if (!ok)
        goto out;
    float ms = time_spin(cu, fn);
    CHECK(ms > 0);
    if (ms <= 0)
        goto out;

    cupti_api cp;
    ok = cupti_load(&cp, plugin);
    CHECK(ok);
    if (!ok)
        goto out;
    collect c = {cu, &cp, NULL, false};
    data = collect_range(&c, ctx, fn, image, image_size, metrics, n, &data_size, &replayed);
    if (c.skip) {
        skip = c.skip;
        goto out;
    }
    CHECK(!c.failed && data);
    if (!data)
        goto out;
    CHECK_U64(replayed, passes);

    /* The image holds the one range, under its name. */
    rp_data_info_params info = {RP_SIZE(rp_data_info_params, numTotalRanges)};
    info.pCounterDataImage = data;
    info.counterDataImageSize = data_size;
    CHECK_INT(cp.data_info(&info), CUPTI_OK);
    CHECK_U64(info.numTotalRanges, 1);
    rp_range_info_params ri = {RP_SIZE(rp_range_info_params, rangeName)};
    ri.pCounterDataImage = data;
    ri.counterDataImageSize = data_size;
    ri.rangeIndex = 0;
    ri.rangeDelimiter = "/";
    CHECK_INT(cp.range_info(&ri), CUPTI_OK);
    CHECK(ri.rangeName && strcmp(ri.rangeName, RANGE_NAME) == 0);

    /* The evaluation under test. */
    double v[2] = {-1, -1};
    st = gp_metrics_evaluate(h, data, data_size, 0, metrics, n, v, &err);
    if (st != GP_OK)
        fprintf(stderr, "gp_metrics_evaluate: %s\n", err.message);
    CHECK_INT(st, GP_OK);
    double event_ns = (double)ms * 1e6;
    double ghz = v[0] > 0 ? v[1] / v[0] : 0;
    printf("%s: %s = %.0f ns (cuEvent %.0f ns, spin %llu ns), %s = %.0f (%.2f GHz), %zu pass(es)\n",
           chip, metrics[0], v[0], event_ns, SPIN_NS, metrics[1], v[1], ghz, replayed);
    CHECK(v[0] > 0);
    CHECK(v[0] >= 0.5 * event_ns && v[0] <= 2.0 * event_ns);
    CHECK(v[0] >= 0.5 * (double)SPIN_NS);
    CHECK(v[1] > 0);
    /* Elapsed SM cycles over the range's duration: a clock of some GPU. */
    CHECK(ghz > 0.1 && ghz < 5.0);
    /* Past the only range: refused, not a value. */
    double extra = 0;
    st = gp_metrics_evaluate(h, data, data_size, 1, metrics, 1, &extra, &err);
    printf("range 1 of 1: status %d (%s)\n", (int)st, st == GP_OK ? "" : err.message);
    CHECK(st != GP_OK);

out:
    free(data);
    gp_metrics_free_image(image);
    gp_metrics_host_destroy(h);
    if (mod)
        cu->module_unload(mod);
    if (ctx)
        cu->primary_ctx_release(dev);
    return skip;
}

int main(void)
{
    if (GP_SANITIZED_SKIP) {
        printf("skipped: CUPTI loads libnvperf_host.so with RTLD_DEEPBIND, which this "
               "sanitizer build's runtime refuses\n");
        return 77;
    }
    cuda_api cu;
    int n = gpu_count(&cu);
    if (n <= 0) {
        printf("skipped: no GPU (libcuda missing, cuInit failed or no device)\n");
        return 77;
    }
    const char *plugin = getenv("GP_TEST_PLUGIN");
    if (!plugin || !*plugin) {
        printf("skipped: this build has no CUPTI plugin\n");
        return 77;
    }
    setenv("GPUFL_CUPTI_PLUGIN", plugin, 1);
    char **chips = NULL;
    size_t nc = 0;
    gp_error err = {0};
    CHECK_INT(gp_metrics_chips(&chips, &nc, &err), GP_OK);
    for (size_t i = 0; i < nc; i++) {
        gp_metrics_host *h = NULL;
        gp_status st = gp_metrics_host_create(chips[i], GP_METRICS_RANGE, &h, &err);
        if (st != GP_OK)
            fprintf(stderr, "%s: %s\n", chips[i], err.message);
        CHECK_INT(st, GP_OK);
        if (h) {
            const char *m[] = {"gpu__time_duration.sum"};
            double v = 0;
            CHECK_INT(gp_metrics_evaluate(h, NULL, 0, 0, m, 1, &v, &err), GP_ERR_INVALID_ARG);
        }
        gp_metrics_host_destroy(h);
    }
    /* The local GPU's chip is one CUPTI supports; past the last device, an
     * error naming it. */
    char local[64] = "";
    CHECK_INT(gp_metrics_local_chip(0, local, sizeof local, &err), GP_OK);
    bool known = false;
    for (size_t i = 0; i < nc; i++)
        known |= strcmp(chips[i], local) == 0;
    CHECK(known);
    printf("local chip: %s\n", local);
    CHECK_INT(gp_metrics_local_chip(n, local, sizeof local, &err), GP_ERR_DEVICE_NOT_FOUND);
    gp_metrics_free_list(chips);

    /* Real counter data from device 0, evaluated. */
    const char *skip = NULL;
    if (known)
        skip = evaluate_real(&cu, plugin, local);
    gp_metrics_release_cache();
    if (skip && !check_failed_) {
        printf("skipped: %s (%d GPU(s) seen; host checks passed)\n", skip, n);
        return 77;
    }
    return check_done("test_gpu_metrics");
}
