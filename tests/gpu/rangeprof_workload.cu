// rangeprof_workload.cu - the range profiler on a GPU (tests/gpu/run.sh
// step 9): gpufl_init(RangeProfiler, range_per_kernel) first (the Profiler
// API needs a clean context), then two outermost scopes: "membound" (a
// 256 MiB copy, DRAM-bound) and "compute" (a dependent FMA chain in
// registers, SM-bound).  check_rangeprof.py then wants DRAM throughput
// > 50 % of peak in the copy's range and SM throughput > 50 % in the FMA's.
// Usage: rangeprof_workload LOG_DIR
#include "gpufl.h"

#include <cstdio>
#include <cuda_runtime.h>

__global__ void copy_kernel(const float4 *in, float4 *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
}

__global__ void fma_kernel(float *out, int iters)
{
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = 0.5f;
    for (int i = 0; i < iters; i++) {
        a = fmaf(a, b, c);
        d = fmaf(d, c, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rangeprof_workload LOG_DIR\n");
        return 2;
    }
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "rangeprof_workload";
    o.log_path = argv[1];
    o.profiling_engine = GPUFL_ENGINE_RANGE_PROFILER;
    o.range_per_kernel = true;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "gpufl_init: %s\n", err.message);
        return 1;
    }
    size_t n = (256u << 20) / sizeof(float4);
    float4 *in = nullptr, *out = nullptr;
    float *f = nullptr;
    cudaMalloc(&in, n * sizeof(float4));
    cudaMalloc(&out, n * sizeof(float4));
    cudaMalloc(&f, 1 << 24);
    cudaMemset(in, 1, n * sizeof(float4));
    cudaDeviceSynchronize();
    {
        gpufl_scope s = gpufl_scope_begin("membound");
        copy_kernel<<<4096, 256>>>(in, out, n);
        cudaDeviceSynchronize();
        gpufl_scope_end(&s);
    }
    {
        gpufl_scope s = gpufl_scope_begin("compute");
        fma_kernel<<<4096, 256>>>(f, 20000);
        cudaDeviceSynchronize();
        gpufl_scope_end(&s);
    }
    cudaFree(in);
    cudaFree(out);
    cudaFree(f);
    gpufl_shutdown();
    return 0;
}
