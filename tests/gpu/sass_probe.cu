// sass_probe.cu - CUPTI's SASS Metrics API alone, without gpu-profile: does
// this GPU and driver count instructions at all, and which of CUPTI's other
// users in the same process stops it?  A diagnostic for tests/gpu (remote.sh
// runs it when asked); it checks nothing and exits 0 unless a call fails.
//
//   sass_probe [--eager] [--twice] [--activity] [--serial] [--activity-off]
//              [--subscribe] [--cycles N] [--keep]
//
// Enables SASS metrics (smsp__sass_inst_executed and
// smsp__sass_thread_inst_executed, GPU granularity) on the primary context,
// launches a kernel of known size (4096 blocks of 256 threads, so every
// instruction before the branch runs 4096 * 8 = 32768 warp-instructions),
// synchronises, reads (GetDataProperties, FlushData) and prints the records,
// how many values are non-zero, and each metric's largest value.
//   --eager      patch every function at Enable (default: lazily, at launch)
//   --twice      launch the kernel twice before the read
//   --activity   the activity API's CONCURRENT_KERNEL records on meanwhile
//   --serial     the activity API's KERNEL records (serialised) on meanwhile
//   --activity-off  CONCURRENT_KERNEL enabled, then disabled before Enable
//   --subscribe  a callback subscriber on the runtime and driver APIs
//   --cycles N   N rounds of Enable, launch, read, Disable (gpu-profile's
//                scoped mode once did one per outermost scope)
//   --keep       with --cycles: Enable once, and each round launch and read
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUPTI(x)                                                                                   \
    do {                                                                                           \
        CUptiResult r_ = (x);                                                                      \
        if (r_ != CUPTI_SUCCESS) {                                                                 \
            const char *s_ = "";                                                                   \
            cuptiGetResultString(r_, &s_);                                                         \
            printf("sass_probe: %s -> %d %s\n", #x, (int)r_, s_);                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void probe_kernel(float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = out[i] * 2.0f + 1.0f;
}

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 1 << 20;
    *buf = (uint8_t *)aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI buf_complete(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid)
{
    printf("sass_probe: activity buffer %zu bytes\n", valid);
    free(buf);
}

static void CUPTIAPI on_cb(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

static const char *const names[] = {"smsp__sass_inst_executed", "smsp__sass_thread_inst_executed"};

static void read_once(CUcontext ctx, int round)
{
    CUpti_SassMetricsGetDataProperties_Params dp = {
        CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    dp.ctx = ctx;
    CUPTI(cuptiSassMetricsGetDataProperties(&dp));
    size_t n = dp.numOfPatchedInstructionRecords, ni = dp.numOfInstances;
    printf("sass_probe: round %d: %zu records, %zu instances\n", round, n, ni);
    if (!n || !ni)
        return;
    CUpti_SassMetrics_Data *d = (CUpti_SassMetrics_Data *)calloc(n, sizeof *d);
    CUpti_SassMetrics_InstanceValue *v =
        (CUpti_SassMetrics_InstanceValue *)calloc(n * ni, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        d[i].structSize = sizeof d[i];
        d[i].pInstanceValues = v + i * ni;
    }
    CUpti_SassMetricsFlushData_Params fp = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
    fp.ctx = ctx;
    fp.numOfPatchedInstructionRecords = n;
    fp.numOfInstances = ni;
    fp.pMetricsData = d;
    CUPTI(cuptiSassMetricsFlushData(&fp));
    size_t nonzero = 0;
    unsigned long long max_v = 0, max_id = 0;
    for (size_t i = 0; i < n * ni; i++) {
        nonzero += v[i].value != 0;
        if (v[i].value > max_v) {
            max_v = v[i].value;
            max_id = v[i].metricId;
        }
    }
    printf("sass_probe: round %d: %zu of %zu values non-zero, largest %llu (metric %llu)\n", round,
           nonzero, n * ni, max_v, max_id);
    for (size_t i = 0; i < n && i < 6; i++)
        printf("sass_probe:   %s +0x%x: metric %llu = %llu\n",
               d[i].functionName ? d[i].functionName : "?", d[i].pcOffset,
               (unsigned long long)d[i].pInstanceValues[0].metricId,
               (unsigned long long)d[i].pInstanceValues[0].value);
    for (size_t i = 0; i < n; i++)
        free((void *)d[i].functionName);
    free(v);
    free(d);
}

int main(int argc, char **argv)
{
    bool eager = false, twice = false, activity = false, subscribe = false, serial = false;
    bool activity_off = false, keep = false;
    int cycles = 1;
    for (int i = 1; i < argc; i++) {
        eager |= !strcmp(argv[i], "--eager");
        twice |= !strcmp(argv[i], "--twice");
        activity |= !strcmp(argv[i], "--activity");
        subscribe |= !strcmp(argv[i], "--subscribe");
        serial |= !strcmp(argv[i], "--serial");
        activity_off |= !strcmp(argv[i], "--activity-off");
        keep |= !strcmp(argv[i], "--keep");
        if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
            cycles = atoi(argv[++i]);
    }
    printf("sass_probe: eager %d twice %d activity %d serial %d activity-off %d subscribe %d "
           "cycles %d keep %d\n",
           eager, twice, activity, serial, activity_off, subscribe, cycles, keep);
    CUpti_SubscriberHandle sub;
    if (subscribe) {
        CUPTI(cuptiSubscribe(&sub, on_cb, NULL));
        CUPTI(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
        CUPTI(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
    }
    if (activity || serial || activity_off) {
        CUPTI(cuptiActivityRegisterCallbacks(buf_request, buf_complete));
        CUPTI(cuptiActivityEnable(serial ? CUPTI_ACTIVITY_KIND_KERNEL
                                         : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    }
    float *out;
    if (cudaMalloc(&out, 4096 * 256 * sizeof(float)) != cudaSuccess)
        return 1;
    CUcontext ctx;
    cuCtxGetCurrent(&ctx);
    CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUPTI(cuptiProfilerInitialize(&pi));
    CUpti_Device_GetChipName_Params cp = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cp.deviceIndex = 0;
    CUPTI(cuptiDeviceGetChipName(&cp));
    CUpti_SassMetrics_Config cfg[2];
    for (int m = 0; m < 2; m++) {
        CUpti_SassMetrics_GetProperties_Params gp = {
            CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
        gp.pChipName = cp.pChipName;
        gp.pMetricName = names[m];
        CUPTI(cuptiSassMetricsGetProperties(&gp));
        cfg[m].metricId = gp.metric.metricId;
        cfg[m].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
        printf("sass_probe: %s = %llu (chip %s)\n", names[m],
               (unsigned long long)gp.metric.metricId, cp.pChipName);
    }
    CUpti_SassMetricsSetConfig_Params sp = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    sp.numOfMetricConfig = 2;
    sp.pConfigs = cfg;
    sp.deviceIndex = 0;
    CUPTI(cuptiSassMetricsSetConfig(&sp));
    if (activity_off) {
        probe_kernel<<<4096, 256>>>(out); /* a kernel traced before */
        cudaDeviceSynchronize();
        CUPTI(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        cuptiActivityFlushAll(1);
    }
    for (int round = 0; round < cycles; round++) {
        CUpti_SassMetricsEnable_Params ep = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
        ep.ctx = ctx;
        ep.enableLazyPatching = eager ? 0 : 1;
        if (!keep || round == 0)
            CUPTI(cuptiSassMetricsEnable(&ep));
        for (int k = 0; k < (twice ? 2 : 1); k++)
            probe_kernel<<<4096, 256>>>(out);
        if (cudaDeviceSynchronize() != cudaSuccess)
            return 1;
        read_once(ctx, round);
        if (keep && round + 1 < cycles)
            continue;
        CUpti_SassMetricsDisable_Params dp = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
        dp.ctx = ctx;
        CUPTI(cuptiSassMetricsDisable(&dp));
    }
    CUpti_SassMetricsUnsetConfig_Params up = {CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
    up.deviceIndex = 0;
    CUPTI(cuptiSassMetricsUnsetConfig(&up));
    if (activity || serial)
        cuptiActivityFlushAll(1);
    printf("sass_probe: done\n");
    return 0;
}
