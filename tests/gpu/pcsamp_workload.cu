// pcsamp_workload.cu - a CUDA program whose stalls are known in advance,
// for the PcSampling engine on a real GPU (tests/gpu/run.sh, step 5).
//
//   pcsamp_workload LOGDIR [--expect FILE]
//
// gpufl_init(PcSampling) in the program, then two kernels, each in its own
// gpufl scope (an outermost scope's end is a collection point):
//   chase    - a dependent pointer chase over a 256 MiB random cycle (far
//              larger than any L2): every load waits on the one before, so
//              the warps stall on the long scoreboard, at the load's line
//              (CHASE_LOAD_LINE);
//   barrier  - in each block one warp spins for ~200k cycles while the
//              others wait at __syncthreads (BARRIER_WAIT_LINE): barrier
//              stalls.
// --expect FILE writes the source lines and the kernels' names as JSON for
// check_pcsamp.  Built with -lineinfo (run.sh) so PCs map to these lines.
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

static int chase_load_line, barrier_wait_line;

__global__ void chase(const unsigned *next, unsigned *out, int steps)
{
    unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) * 977u % (256u << 18);
    for (int i = 0; i < steps; i++)
        p = next[p]; // CHASE_LOAD_LINE
    out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}
static const int CHASE_LOAD = __LINE__ - 3;

__global__ void barrier(unsigned long long *out, long long spin)
{
    __shared__ unsigned long long acc;
    if (threadIdx.x < 32) {
        long long t0 = clock64();
        unsigned long long x = threadIdx.x;
        while (clock64() - t0 < spin)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (threadIdx.x == 0)
            acc = x;
    }
    __syncthreads(); // BARRIER_WAIT_LINE
    if (threadIdx.x == 0)
        out[blockIdx.x] = acc;
}
static const int BARRIER_WAIT = __LINE__ - 4;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pcsamp_workload LOGDIR [--expect FILE]\n");
        return 2;
    }
    chase_load_line = CHASE_LOAD;
    barrier_wait_line = BARRIER_WAIT;
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "pcsamp_workload";
    o.log_path = argv[1];
    o.profiling_engine = GPUFL_ENGINE_PC_SAMPLING;
    o.enable_debug_output = getenv("GPUFL_ENABLE_DEBUG_OUTPUT") != NULL;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "gpufl_init: %s\n", err.message);
        return 1;
    }
    const size_t n = (256u << 20) / sizeof(unsigned);
    unsigned *h = (unsigned *)malloc(n * sizeof *h);
    // One random cycle (Sattolo): no load is predictable or cached.
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned)i;
    srand(7);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = ((size_t)rand() * 65536u + (size_t)rand()) % i;
        unsigned t = h[i];
        h[i] = h[j];
        h[j] = t;
    }
    unsigned *next, *out;
    unsigned long long *bout;
    CHECK(cudaMalloc(&next, n * sizeof *next));
    CHECK(cudaMalloc(&out, 1 << 20));
    CHECK(cudaMalloc(&bout, 1 << 20));
    CHECK(cudaMemcpy(next, h, n * sizeof *h, cudaMemcpyHostToDevice));

    gpufl_scope s1 = gpufl_scope_begin("chase_phase");
    for (int k = 0; k < 4; k++)
        chase<<<256, 128>>>(next, out, 4000);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    gpufl_scope_end(&s1);

    gpufl_scope s2 = gpufl_scope_begin("barrier_phase");
    for (int k = 0; k < 4; k++)
        barrier<<<512, 256>>>(bout, 2000000);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    gpufl_scope_end(&s2);

    gpufl_shutdown();
    CHECK(cudaFree(next));
    CHECK(cudaFree(out));
    CHECK(cudaFree(bout));
    free(h);
    if (argc >= 4 && !strcmp(argv[2], "--expect")) {
        FILE *f = fopen(argv[3], "w");
        if (!f)
            return 1;
        fprintf(f,
                "{\"file\":\"pcsamp_workload.cu\",\"chase\":\"_Z5chasePKjPji\","
                "\"chase_line\":%d,\"barrier\":\"_Z7barrierPyx\",\"barrier_line\":%d}\n",
                chase_load_line, barrier_wait_line);
        fclose(f);
    }
    return 0;
}
