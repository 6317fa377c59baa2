// sass_workload.cu - a CUDA program whose SASS metrics are known in
// advance, for the SassMetrics engine on a real GPU (tests/gpu/run.sh,
// step 7).
//
//   sass_workload LOGDIR [--expect FILE] [--deep]
//
// gpufl_init(SassMetrics) in the program (Deep with --deep: step 10), then three kernels, each in its
// own gpufl scope (an outermost scope's end is a collection point):
//   unit       out[i] = in[i] * 2: a warp's 32 loads of 4 bytes fall in 4
//              sectors of 32 bytes - the ideal;
//   strided    out[i] = in[i * 32]: each thread's load in its own 128-byte
//              line - 32 sectors a request where 4 would do;
//   divergent  odd and even threads take different loops: each warp
//              instruction of either loop runs with half the warp (about 16
//              thread-instructions per warp-instruction against 32).
// --expect FILE writes the kernels' mangled names as JSON for check_sass.
// Built with -lineinfo (run.sh) so PCs map to lines.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpufl.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define N (1 << 22)

__global__ void unit(const float *in, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] * 2.0f;
}

__global__ void strided(const float *in, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[(size_t)i * 32 % ((size_t)N * 32)] * 2.0f;
}

__global__ void divergent(float *out, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = (float)i;
    if (threadIdx.x & 1) {
        for (int k = 0; k < iters; k++)
            x = x * 1.0001f + 0.5f;
    } else {
        for (int k = 0; k < iters; k++)
            x = x * 0.9999f - 0.25f;
    }
    out[i] = x;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: sass_workload LOGDIR [--expect FILE] [--deep]\n");
        return 2;
    }
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "sass_workload";
    o.log_path = argv[1];
    bool deep = false; /* --deep: profiling_engine Deep, run.sh step 10 */
    for (int i = 2; i < argc; i++)
        deep = deep || !strcmp(argv[i], "--deep");
    o.profiling_engine = deep ? GPUFL_ENGINE_DEEP : GPUFL_ENGINE_SASS_METRICS;
    o.enable_source_collection = true;
    o.enable_debug_output = getenv("GPUFL_ENABLE_DEBUG_OUTPUT") != NULL;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "gpufl_init: %s\n", err.message);
        return 1;
    }
    float *in, *out;
    CHECK(cudaMalloc(&in, (size_t)N * 32 * sizeof *in));
    CHECK(cudaMalloc(&out, (size_t)N * sizeof *out));
    CHECK(cudaMemset(in, 0, (size_t)N * 32 * sizeof *in));

    gpufl_scope s1 = gpufl_scope_begin("unit_phase");
    for (int k = 0; k < 4; k++)
        unit<<<N / 256, 256>>>(in, out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    gpufl_scope_end(&s1);

    gpufl_scope s2 = gpufl_scope_begin("strided_phase");
    for (int k = 0; k < 4; k++)
        strided<<<N / 256, 256>>>(in, out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    gpufl_scope_end(&s2);

    gpufl_scope s3 = gpufl_scope_begin("divergent_phase");
    for (int k = 0; k < 4; k++)
        divergent<<<N / 256, 256>>>(out, 200);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    gpufl_scope_end(&s3);

    gpufl_shutdown();
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    if (argc >= 4 && !strcmp(argv[2], "--expect")) {
        FILE *f = fopen(argv[3], "w");
        if (!f)
            return 1;
        fprintf(f, "{\"unit\":\"_Z4unitPKfPf\",\"strided\":\"_Z7stridedPKfPf\","
                   "\"divergent\":\"_Z9divergentPfi\"}\n");
        fclose(f);
    }
    return 0;
}
