/*
 * gpu_overhead_workload.cu - the CUDA programs bench/gpu_overhead.sh times
 * untraced and under each engine: a plain CUDA program (no gpu-profile
 * link), whose own figure of work done is printed as one line the script
 * reads:
 *
 *   gpu_overhead_workload kernels N    N launches of a near-empty kernel
 *                                      (32 threads), one sync at the end
 *   gpu_overhead_workload memcpy MIB N N round trips of MIB MiB between
 *                                      pinned host memory and the device
 *
 * prints "gpu_overhead: units=U unit=kernels|MiB seconds=S" (S: the timed
 * loop alone, after one warm-up launch or copy: CUDA's start-up is in the
 * script's wall time, not here) and exits 0, or 1 with CUDA's error.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "gpu_overhead_workload: %s: %s\n", #call, cudaGetErrorString(e_));     \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void tiny(int *out, int v)
{
    if (threadIdx.x == 0 && v < 0)
        out[0] = v; /* never: the kernel's body is the launch alone */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int kernels(long n)
{
    int *d;
    CK(cudaMalloc(&d, sizeof(int)));
    tiny<<<1, 32>>>(d, 1);
    CK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (long i = 0; i < n; i++)
        tiny<<<1, 32>>>(d, (int)i);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double s = now_s() - t0;
    CK(cudaFree(d));
    printf("gpu_overhead: units=%ld unit=kernels seconds=%.6f\n", n, s);
    return 0;
}

static int copies(long mib, long n)
{
    size_t bytes = (size_t)mib << 20;
    void *h, *d;
    CK(cudaMallocHost(&h, bytes));
    CK(cudaMalloc(&d, bytes));
    memset(h, 1, bytes);
    CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    }
    double s = now_s() - t0;
    CK(cudaFree(d));
    CK(cudaFreeHost(h));
    printf("gpu_overhead: units=%ld unit=MiB seconds=%.6f\n", 2 * mib * n, s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "kernels") == 0)
        return kernels(atol(argv[2]));
    if (argc == 4 && strcmp(argv[1], "memcpy") == 0)
        return copies(atol(argv[2]), atol(argv[3]));
    fprintf(stderr, "usage: gpu_overhead_workload kernels N | memcpy MIB N\n");
    return 2;
}
