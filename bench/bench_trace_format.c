/*
 * bench_trace_format.c - formatting cost of the Trace engine's kernel rows.
 *
 *   bench_trace_format [--quick]
 *
 * Prints, for the figures docs/performance.md records: rows per second,
 * bytes per row and MB/s of fl_rec_kernel_batch() on one core (the
 * writer thread's CPU time), formatting 10 million kernel rows (1 million
 * with --quick) in FL_TRACE_BATCH-row batches into one reused fl_buf.
 * The rows look like a real trace: start times ~5 us apart, durations
 * 1-100 us, increasing correlation ids, kernel ids 1..50, a few launches
 * with dynamic shared memory or an external correlation.
 */
#include "abi/trace_abi.h"
#include "util/buf.h"
#include "util/clock.h"
#include "wire/records.h"
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

/* xorshift64: deterministic, cheap, not part of the timing. */
int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const size_t total = quick ? 1000000 : 10000000;
    enum { N = FL_TRACE_BATCH, SETS = 64 };

    /* 64 distinct batches of rows, made up front and cycled through. */
    fl_kernel_row *rows = calloc((size_t)SETS * N, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "bench_trace_format: out of memory\n");
        return 1;
    }
    uint64_t t = 1760000000000000000ull;
    uint32_t corr = 1000;
    for (size_t i = 0; i < (size_t)SETS * N; i++)
        bench_kernel_row(&rows[i], &t, &corr);

    fl_buf b = {0};
    /* Warm: the buffer reaches its final size, the pages are touched. */
    for (int s = 0; s < SETS; s++) {
        fl_buf_reset(&b);
        fl_rec_kernel_batch(&b, SID, (uint64_t)s + 1, rows + (size_t)s * N, N);
    }

    size_t batches = (total + N - 1) / N, done = 0;
    uint64_t bytes = 0, sink = 0;
    uint64_t c0 = gp_thread_cpu_ns(), w0 = gp_now_mono_ns();
    for (size_t k = 0; k < batches; k++) {
        size_t n = total - done < N ? total - done : N;
        fl_buf_reset(&b);
        fl_rec_kernel_batch(&b, SID, (uint64_t)k + 1, rows + (k % SETS) * N, n);
        bytes += b.len;
        sink += (unsigned char)b.p[b.len / 2];
        done += n;
    }
    double cpu = (double)(gp_thread_cpu_ns() - c0) / 1e9;
    double wall = (double)(gp_now_mono_ns() - w0) / 1e9;
    if (b.oom) {
        fprintf(stderr, "bench_trace_format: out of memory while formatting\n");
        return 1;
    }
    printf("kernel_row format: rows=%zu batches=%zu rows_per_s=%.3g ns_per_row=%.1f "
           "bytes_per_row=%.1f MB_per_s=%.0f (thread cpu %.3f s, wall %.3f s; sink %llu)\n",
           done, batches, (double)done / cpu, cpu * 1e9 / (double)done,
           (double)bytes / (double)done, (double)bytes / cpu / 1e6, cpu, wall,
           (unsigned long long)(sink & 1));
    fl_buf_free(&b);
    free(rows);
    return 0;
}
