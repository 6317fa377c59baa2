/*
 * stack_workload.cu - CPU stacks at kernel launch on a real GPU
 * (tests/gpu/run.sh, run 5): main -> launch_outer -> launch_inner launches
 * `tick` 3 times from one call site; built with -g -O0 and traced through
 * `gpu-profile --engine trace --stack-trace`.  Writes to EXPECT_FILE the
 * text every kernel_detail.stack_trace of `tick` must contain, with this
 * file's lines: "main (stack_workload.cu:L)|launch_outer
 * (stack_workload.cu:L)|launch_inner (stack_workload.cu:L)" (the CUDA
 * runtime's own frames below it are dropped by the plugin, the host stub
 * nvcc makes for the kernel may remain); then, on a second line, the text
 * the stack of launch_outer's cudaDeviceSynchronize must contain (our
 * stack_dict, named by synchronization_event_batch's stack_id):
 * "main (stack_workload.cu:L)|launch_outer(int*) (stack_workload.cu:L)".
 *
 *   stack_workload EXPECT_FILE
 */
#include <cstdio>
#include <cuda_runtime.h>

__global__ void tick(int *x)
{
    atomicAdd(x, 1);
}

static int line_main, line_outer, line_inner, line_sync;
#define AT(line) (line = __LINE__)

__attribute__((noinline)) static void launch_inner(int *x)
{
    for (int i = 0; i < 3; i++)
        (AT(line_inner), tick<<<1, 32>>>(x));
}

__attribute__((noinline)) static void launch_outer(int *x)
{
    (AT(line_outer), launch_inner(x));
    (AT(line_sync), cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stack_workload EXPECT_FILE\n");
        return 2;
    }
    int *x = nullptr;
    if (cudaMalloc(&x, sizeof *x) != cudaSuccess) {
        fprintf(stderr, "stack_workload: cudaMalloc failed\n");
        return 1;
    }
    (AT(line_main), launch_outer(x));
    cudaFree(x);
    FILE *f = fopen(argv[1], "w");
    if (!f)
        return 1;
    fprintf(f,
            "main (stack_workload.cu:%d)|launch_outer(int*) (stack_workload.cu:%d)|"
            "launch_inner(int*) (stack_workload.cu:%d)\n",
            line_main, line_outer, line_inner);
    fprintf(f, "main (stack_workload.cu:%d)|launch_outer(int*) (stack_workload.cu:%d)\n", line_main,
            line_sync);
    return fclose(f) == 0 ? 0 : 1;
}
