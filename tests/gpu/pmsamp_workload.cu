// pmsamp_workload.cu - a CUDA program whose SM activity is known in advance,
// for the PmSampling engine on a real GPU (tests/gpu/run.sh, step 7).
//
//   pmsamp_workload LOGDIR
//
// gpufl_init(PmSampling, every 100 us) in the program, then: 300 ms idle
// (the context up, nothing running), one kernel `spin` that keeps every SM
// busy for ~400 ms, 300 ms idle again, shutdown.  check_pmsamp then finds
// the SM-active samples high while spin runs and low before and after.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpufl.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void spin(unsigned long long *out, long long cycles)
{
    long long t0 = clock64();
    unsigned long long x = threadIdx.x;
    while (clock64() - t0 < cycles)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    if (x == 42)
        out[0] = x; // never: keeps the loop
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pmsamp_workload LOGDIR\n");
        return 2;
    }
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "pmsamp_workload";
    o.log_path = argv[1];
    o.profiling_engine = GPUFL_ENGINE_PM_SAMPLING;
    o.pm_sampling_interval_us = 100;
    o.enable_debug_output = getenv("GPUFL_ENABLE_DEBUG_OUTPUT") != NULL;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "gpufl_init: %s\n", err.message);
        return 1;
    }
    int dev = 0, sms = 0, khz = 0;
    CHECK(cudaSetDevice(dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    unsigned long long *out;
    CHECK(cudaMalloc(&out, 64));
    CHECK(cudaDeviceSynchronize()); // the context exists: PM sampling is set up
    gpufl_scope s = gpufl_scope_begin("pm_window");
    usleep(300000);
    spin<<<sms * 4, 256>>>(out, (long long)khz * 400); // ~400 ms at the base clock
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    usleep(300000);
    gpufl_scope_end(&s);
    gpufl_shutdown();
    CHECK(cudaFree(out));
    return 0;
}
