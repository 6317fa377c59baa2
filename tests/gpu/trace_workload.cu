/*
 * trace_workload.cu - a CUDA program with known activity, for checking what
 * the Trace engine records (tests/gpu/run.sh, checked by check_trace.c).
 *
 *   trace_workload --expect FILE [--in-process LOGDIR [--no-shutdown]] [--graphs]
 *
 * What it does, in order (every CUDA call checked; exit 1 with a message on
 * the first failure):
 *   - cudaMemcpy HtoD of two pinned buffers (4 MiB vector, 16 MiB matrix),
 *     cudaMemcpy DtoD of the same two, cudaMemset of 4 MiB, and
 *     cudaDeviceSynchronize (a context synchronization);
 *   - on a created stream: one short vecAdd to calibrate, then two vecAdd
 *     (grid (4096,1,1), block (256,1,1)) and three tiled GEMMs (2048x2048
 *     floats, grid (128,128,1), block (16,16,1), static shared memory), each
 *     timed with a pair of cudaEvents around its launch;
 *   - a CUDA graph captured from the stream (three vecAdd launches),
 *     uploaded, then launched twice with cudaGraphLaunch, each launch timed
 *     with cudaEvents;
 *   - cudaStreamSynchronize (three in all), then cudaMemcpy DtoH of 4 MiB,
 *     and a check that the vector result is right.
 * Each vecAdd is sized by the calibration to take about 2 ms and each GEMM
 * takes a few ms, so the few microseconds by which an event pair's window
 * exceeds its kernel stay far below the checker's 5 % tolerance.  Kernels
 * are loaded (cudaFuncGetAttributes) and the graph uploaded before any
 * timing, so no lazy loading or upload falls inside an event window.
 *
 * --expect FILE  writes the expected facts as JSON: launches, grid and
 *                block per kernel name (demangled as nsys shows it), memcpy
 *                count and bytes per direction, memset, synchronizations,
 *                the kernels' total time from the events, and the program's
 *                own wall-clock window.
 * --in-process LOGDIR  gpufl_init (Trace engine, log_path LOGDIR, app
 *                "trace_workload") before any CUDA call, gpufl_shutdown at
 *                the end.  Not available when built with -DTW_NO_GPUFL (the
 *                plain program run under `gpu-profile --engine trace`).
 * --no-shutdown  (in-process) returns from main without gpufl_shutdown: the
 *                session ends in the exit handlers, which must not hang
 *                and must still write every record.
 * --graphs       enable_cuda_graphs_tracking (in-process), and in any case
 *                records that graph tracking is expected.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TW_NO_GPUFL
#include "gpufl.h"
#endif

#define VEC_BLOCK 256
#define VEC_GRID 4096
#define VEC_N (VEC_BLOCK * VEC_GRID) /* 1 Mi floats, 4 MiB */
#define MAT_N 2048                   /* 2048 x 2048 floats, 16 MiB */
#define TILE 16
#define CALIB_REPS 2048
#define TARGET_KERNEL_NS 2000000.0 /* each vecAdd after calibration */
#define VEC_DIRECT 2               /* vecAdd launches after the calibration one */
#define GEMM_LAUNCHES 3
#define GRAPH_NODES 3
#define GRAPH_LAUNCHES 2

/* The names as nsys (and c++filt) show them. */
#define VEC_NAME "vecAdd(float const*, float const*, float*, int, int)"
#define GEMM_NAME "void gemmTiled<16>(float const*, float const*, float*, int)"
#define GEMM_SCOPE "gemm_phase"

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "trace_workload: %s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__,     \
                    #call, cudaGetErrorString(e_), cudaGetErrorName(e_));                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* c[i] = the fixed point iteration acc = acc * 0.999 + (a[i] + b[i]), reps
 * times: a vector add with enough arithmetic to last milliseconds. */
__global__ void vecAdd(const float *a, const float *b, float *c, int n, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = a[i] + b[i];
        float acc = 0.0f;
        for (int r = 0; r < reps; r++)
            acc = fmaf(acc, 0.999f, s);
        c[i] = acc;
    }
}

/* C = A * B, n x n row-major, n a multiple of T, blocks of T x T threads. */
template <int T> __global__ void gemmTiled(const float *A, const float *B, float *C, int n)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += T) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < T; k++)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t elapsed_ns(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, a, b));
    return (uint64_t)((double)ms * 1e6 + 0.5);
}

static void usage(void)
{
    fprintf(stderr, "usage: trace_workload --expect FILE [--in-process LOGDIR [--no-shutdown]] "
                    "[--graphs]\n");
    exit(2);
}

/* A timed launch: a pair of events around it. */
#define MAX_TIMED 16
static cudaEvent_t ev_start[MAX_TIMED], ev_stop[MAX_TIMED];

int main(int argc, char **argv)
{
    const char *expect_path = NULL, *log_dir = NULL;
    bool graphs = false, no_shutdown = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc)
            expect_path = argv[++i];
        else if (strcmp(argv[i], "--in-process") == 0 && i + 1 < argc)
            log_dir = argv[++i];
        else if (strcmp(argv[i], "--graphs") == 0)
            graphs = true;
        else if (strcmp(argv[i], "--no-shutdown") == 0)
            no_shutdown = true;
        else
            usage();
    }
    if (!expect_path)
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0); /* interleaved with stderr as it happens */

    if (log_dir) {
#ifdef TW_NO_GPUFL
        fprintf(stderr, "trace_workload: built without gpufl (TW_NO_GPUFL): no --in-process\n");
        return 2;
#else
        gpufl_init_options o;
        gpufl_init_options_init(&o);
        o.app_name = "trace_workload";
        o.log_path = log_dir;
        o.profiling_engine = GPUFL_ENGINE_TRACE;
        o.enable_cuda_graphs_tracking = graphs;
        o.enable_memory_tracking = true; /* the 6 cudaMalloc / cudaFree, timed */
        gpufl_error err;
        memset(&err, 0, sizeof err);
        gpufl_status st = gpufl_init(&o, &err);
        if (st != GPUFL_OK) {
            fprintf(stderr, "trace_workload: gpufl_init: %s: %s\n", gpufl_strerror(st),
                    err.message);
            return 1;
        }
        char dir[1024];
        gpufl_session_dir(dir, sizeof dir);
        printf("trace_workload: in-process session %s\n", dir);
#endif
    }

    uint64_t wall_start = wall_ns();

    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int i = 0; i < MAX_TIMED; i++) {
        CK(cudaEventCreate(&ev_start[i]));
        CK(cudaEventCreate(&ev_stop[i]));
    }
    /* Load both kernels now (lazy loading would do it inside the first
     * timed window). */
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, vecAdd));
    CK(cudaFuncGetAttributes(&fa, gemmTiled<TILE>));

    const size_t vec_bytes = (size_t)VEC_N * sizeof(float);
    const size_t mat_bytes = (size_t)MAT_N * MAT_N * sizeof(float);
    float *h_a, *h_A, *h_c;
    CK(cudaMallocHost((void **)&h_a, vec_bytes));
    CK(cudaMallocHost((void **)&h_A, mat_bytes));
    CK(cudaMallocHost((void **)&h_c, vec_bytes));
    for (size_t i = 0; i < (size_t)VEC_N; i++)
        h_a[i] = (float)(i % 1000) * 0.001f;
    for (size_t i = 0; i < (size_t)MAT_N * MAT_N; i++)
        h_A[i] = (float)((i * 7) % 100) * 0.01f;
    float *d_a, *d_b, *d_c, *d_A, *d_B, *d_C;
    CK(cudaMalloc((void **)&d_a, vec_bytes));
    CK(cudaMalloc((void **)&d_b, vec_bytes));
    CK(cudaMalloc((void **)&d_c, vec_bytes));
    CK(cudaMalloc((void **)&d_A, mat_bytes));
    CK(cudaMalloc((void **)&d_B, mat_bytes));
    CK(cudaMalloc((void **)&d_C, mat_bytes));

    /* Copies and the memset: HtoD x2, DtoD x2 (b = a, B = A), memset x1. */
    CK(cudaMemcpy(d_a, h_a, vec_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_A, h_A, mat_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_b, d_a, vec_bytes, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(d_B, d_A, mat_bytes, cudaMemcpyDeviceToDevice));
    CK(cudaMemset(d_c, 0, vec_bytes));
    CK(cudaDeviceSynchronize());
    int stream_syncs = 0, context_syncs = 1;

    int timed = 0;
    uint64_t vec_direct_ns = 0, gemm_ns = 0, graph_ns = 0;

    /* Calibration: one short vecAdd, then reps for about 2 ms a launch. */
    CK(cudaEventRecord(ev_start[timed], s));
    vecAdd<<<VEC_GRID, VEC_BLOCK, 0, s>>>(d_a, d_b, d_c, VEC_N, CALIB_REPS);
    CK(cudaGetLastError());
    CK(cudaEventRecord(ev_stop[timed], s));
    CK(cudaStreamSynchronize(s));
    stream_syncs++;
    uint64_t calib_ns = elapsed_ns(ev_start[timed], ev_stop[timed]);
    vec_direct_ns += calib_ns;
    timed++;
    double scale = calib_ns > 0 ? TARGET_KERNEL_NS / (double)calib_ns : 1.0;
    double want = CALIB_REPS * scale;
    int reps = want < CALIB_REPS ? CALIB_REPS : want > (double)(1 << 22) ? (1 << 22) : (int)want;
    printf("trace_workload: calibration vecAdd %d reps %.3f ms -> %d reps\n", CALIB_REPS,
           calib_ns / 1e6, reps);

    /* Direct launches, each timed. */
    int first_vec = timed;
    for (int i = 0; i < VEC_DIRECT; i++, timed++) {
        CK(cudaEventRecord(ev_start[timed], s));
        vecAdd<<<VEC_GRID, VEC_BLOCK, 0, s>>>(d_a, d_b, d_c, VEC_N, reps);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev_stop[timed], s));
    }
    int first_gemm = timed;
    dim3 gblock(TILE, TILE, 1), ggrid(MAT_N / TILE, MAT_N / TILE, 1);
#ifndef TW_NO_GPUFL
    /* In-process: the GEMMs are launched inside a scope, which their
     * kernel_detail's user_scope must name. */
    gpufl_scope gemm_scope = gpufl_scope_begin(GEMM_SCOPE);
#endif
    for (int i = 0; i < GEMM_LAUNCHES; i++, timed++) {
        CK(cudaEventRecord(ev_start[timed], s));
        gemmTiled<TILE><<<ggrid, gblock, 0, s>>>(d_A, d_B, d_C, MAT_N);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev_stop[timed], s));
    }
#ifndef TW_NO_GPUFL
    gpufl_scope_end(&gemm_scope);
#endif

    /* The graph: three vecAdd launches captured from the stream. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < GRAPH_NODES; i++) {
        vecAdd<<<VEC_GRID, VEC_BLOCK, 0, s>>>(d_a, d_b, d_c, VEC_N, reps);
        CK(cudaGetLastError());
    }
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphUpload(exec, s));
    CK(cudaStreamSynchronize(s));
    stream_syncs++;
    int first_graph = timed;
    for (int i = 0; i < GRAPH_LAUNCHES; i++, timed++) {
        CK(cudaEventRecord(ev_start[timed], s));
        CK(cudaGraphLaunch(exec, s));
        CK(cudaEventRecord(ev_stop[timed], s));
    }
    CK(cudaStreamSynchronize(s));
    stream_syncs++;

    for (int i = first_vec; i < first_gemm; i++)
        vec_direct_ns += elapsed_ns(ev_start[i], ev_stop[i]);
    for (int i = first_gemm; i < first_graph; i++)
        gemm_ns += elapsed_ns(ev_start[i], ev_stop[i]);
    for (int i = first_graph; i < timed; i++)
        graph_ns += elapsed_ns(ev_start[i], ev_stop[i]);

    CK(cudaMemcpy(h_c, d_c, vec_bytes, cudaMemcpyDeviceToHost));
    uint64_t wall_end = wall_ns();

    /* The result: acc converges to s / 0.001 as 1 - 0.999^reps. */
    int bad = 0;
    for (size_t i = 0; i < (size_t)VEC_N; i += 4099) {
        double sum = 2.0 * (double)h_a[i];
        double want_c = sum * (1.0 - pow(0.999, reps)) / 0.001;
        double err = fabs((double)h_c[i] - want_c);
        if (!(err <= 1e-3 * fabs(want_c) + 1e-3)) {
            if (bad++ < 5)
                fprintf(stderr, "trace_workload: c[%zu] = %.6g, want %.6g\n", i, h_c[i], want_c);
        }
    }
    if (bad) {
        fprintf(stderr, "trace_workload: %d wrong results\n", bad);
        return 1;
    }

    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    for (int i = 0; i < MAX_TIMED; i++) {
        CK(cudaEventDestroy(ev_start[i]));
        CK(cudaEventDestroy(ev_stop[i]));
    }
    CK(cudaFree(d_a));
    CK(cudaFree(d_b));
    CK(cudaFree(d_c));
    CK(cudaFree(d_A));
    CK(cudaFree(d_B));
    CK(cudaFree(d_C));
    CK(cudaFreeHost(h_a));
    CK(cudaFreeHost(h_A));
    CK(cudaFreeHost(h_c));
    CK(cudaStreamDestroy(s));

    uint64_t direct_ns = vec_direct_ns + gemm_ns;
    FILE *out = fopen(expect_path, "w");
    if (!out) {
        perror(expect_path);
        return 1;
    }
    fprintf(out,
            "{\"schema\":1,\"app\":\"trace_workload\",\"in_process\":%s,"
            "\"graphs_tracking\":%s,\"gemm_scope\":%s,\"device_mallocs\":%s,"
            "\"wall_start_ns\":%llu,"
            "\"wall_end_ns\":%llu,\n",
            log_dir ? "true" : "false", graphs ? "true" : "false",
            log_dir ? "\"" GEMM_SCOPE "\"" : "null", log_dir ? "6" : "null",
            (unsigned long long)wall_start, (unsigned long long)wall_end);
    fprintf(out,
            " \"kernels\":[\n"
            "  {\"name\":\"%s\",\"direct\":%d,\"graph_nodes\":%d,\"count\":%d,"
            "\"grid\":\"(%d,1,1)\",\"block\":\"(%d,1,1)\",\"direct_time_ns\":%llu},\n"
            "  {\"name\":\"%s\",\"direct\":%d,\"graph_nodes\":0,\"count\":%d,"
            "\"grid\":\"(%d,%d,1)\",\"block\":\"(%d,%d,1)\",\"direct_time_ns\":%llu}],\n",
            VEC_NAME, 1 + VEC_DIRECT, GRAPH_NODES * GRAPH_LAUNCHES,
            1 + VEC_DIRECT + GRAPH_NODES * GRAPH_LAUNCHES, VEC_GRID, VEC_BLOCK,
            (unsigned long long)vec_direct_ns, GEMM_NAME, GEMM_LAUNCHES, GEMM_LAUNCHES,
            MAT_N / TILE, MAT_N / TILE, TILE, TILE, (unsigned long long)gemm_ns);
    fprintf(out,
            " \"kernel_time_ns\":%llu,\"kernel_time_direct_ns\":%llu,\"graph_time_ns\":%llu,"
            "\"graph_launches\":%d,\"graph_nodes_per_launch\":%d,\"vec_reps\":%d,\n",
            (unsigned long long)(direct_ns + graph_ns), (unsigned long long)direct_ns,
            (unsigned long long)graph_ns, GRAPH_LAUNCHES, GRAPH_NODES, reps);
    fprintf(
        out,
        " \"memcpy\":{\"htod\":{\"count\":2,\"bytes\":%zu},\"dtod\":{\"count\":2,\"bytes\":%zu},"
        "\"dtoh\":{\"count\":1,\"bytes\":%zu}},\n"
        " \"memset\":{\"count\":1,\"bytes\":%zu,\"value\":0},\n"
        " \"stream_syncs\":%d,\"context_syncs\":%d}\n",
        vec_bytes + mat_bytes, vec_bytes + mat_bytes, vec_bytes, vec_bytes, stream_syncs,
        context_syncs);
    if (fclose(out) != 0) {
        perror(expect_path);
        return 1;
    }
    printf("trace_workload: kernels %.3f ms by events (direct %.3f ms, graphs %.3f ms), "
           "wrote %s\n",
           (direct_ns + graph_ns) / 1e6, direct_ns / 1e6, graph_ns / 1e6, expect_path);

#ifndef TW_NO_GPUFL
    if (log_dir && !no_shutdown)
        gpufl_shutdown();
#else
    (void)no_shutdown;
#endif
    return 0;
}
