/*
 * bench_trace_decode.c - the Trace engine's record path, CUPTI buffer to
 * disk, on one core: synthetic CUPTI activity buffers (the installed
 * toolkit's CUpti_ActivityKernel10 records, tests/cupti/synth.h) walked by
 * the real libcupti, decoded by the plugin's decoder, written by the core's
 * trace writer as kernel_event_batch lines (and kernel_detail / kernel_dict
 * as they arise), and written to a file with write() - what the writer
 * thread does for every completed buffer.
 *
 *   bench_trace_decode [--quick] [--records N] [--out FILE] [--compact]
 *
 * --compact: compact_kernel_details (a kernel_detail per launch
 * configuration); without it, one per launch (the default).
 *
 * Prints records/s per core (thread CPU time and wall time), bytes per
 * record on disk, and the process's peak RSS after 1/10 of the records and
 * at the end: the decoder and writer hold a fixed amount of memory, so the
 * two peaks should match whatever the run length.  The buffers themselves
 * are the plugin's bounded pool (cupti_buffer_kib x cupti_max_buffers);
 * here one 8 MiB buffer is refilled, as the pool recycles its buffers.
 */
#include "decode.h"
#include "abi/trace_abi.h"
#include "recorder/trace_sink.h"
#include "util/buf.h"
#include "wire/records.h"
#include "synth.h"
#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define BUFFER_BYTES (8u << 20)

/* What the session's writer does when a drain makes a channel buffer
 * large (fl_writer_spill): write it out now. */
static int g_fd = -1;
static uint64_t g_bytes;
static bool g_write_failed;
static void spill(void *user, fl_buf *b)
{
    (void)user;
    if (b->len && write(g_fd, b->p, b->len) != (ssize_t)b->len)
        g_write_failed = true;
    g_bytes += b->len;
    fl_buf_reset(b);
}

static bool limits(uint32_t dev, fl_gpu_limits *l, void *user)
{
    (void)user;
    l->device_id = dev;
    l->cc_major = 9;
    l->sm_count = 132;
    l->warp_size = 32;
    l->max_threads_per_block = 1024;
    l->max_threads_per_sm = 2048;
    l->max_blocks_per_sm = 32;
    l->regs_per_sm = 65536;
    l->max_regs_per_block = 65536;
    l->smem_per_sm_bytes = 233472;
    l->smem_per_block_optin_bytes = 232448;
    l->reserved_smem_per_block_bytes = 1024;
    return true;
}

int main(int argc, char **argv)
{
    uint64_t total = 10000000;
    const char *out_path = "bench_trace_decode.out.ndjson";
    bool compact = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            total = 1000000;
        else if (strcmp(argv[i], "--compact") == 0)
            compact = true;
        else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
            total = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_trace_decode [--quick] [--records N] [--out FILE] "
                            "[--compact]\n");
            return 2;
        }
    }
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(out_path);
        return 1;
    }

    /* 50 kernels, as CUPTI names them (mangled, one pointer each); a
     * training loop's mix of launch configurations. */
    static char names[50][64];
    for (int i = 0; i < 50; i++)
        snprintf(names[i], sizeof names[i], "_Z%dkernel_%02dPfS_i", 9, i);
    synth s;
    synth_init(&s, BUFFER_BYTES);
    size_t per_buffer = BUFFER_BYTES / sizeof(CUpti_ActivityKernel10);

    fl_decoder_config dc = {
        .clock_offset_ns = 1760000000000000000ll, .limits = limits, .demangle = true};
    fl_decoder *d = fl_decoder_create(&dc);
    fl_buf ch[3] = {{0}};
    fl_ident id = {4242, "bench", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &ch[0], &ch[1], &ch[2]);
    fl_trace_writer_set_compact(w, compact);
    g_fd = fd;
    fl_trace_writer_set_spill(w, spill, NULL);
    fl_trace_sink sink;
    fl_trace_writer_sink(w, &sink);
    if (!d || !w || !s.p) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    uint64_t t = 1000, corr = 1, done = 0, bytes = 0, buffers = 0;
    long rss_tenth = 0;
    double build_cpu = 0;
    double c0 = bench_now(CLOCK_THREAD_CPUTIME_ID), w0 = bench_now(CLOCK_MONOTONIC);
    while (done < total) {
        /* Filling the buffer stands in for the GPU: not timed. */
        double b0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
        s.len = 0;
        size_t n = 0;
        for (; n < per_buffer && done + n < total; n++) {
            uint64_t r = rng();
            int k = (int)(r % 50);
            uint64_t dur = 1000 + (r >> 8) % 99000;
            synth_kernel(&s, names[k], t, t + dur, (uint32_t)corr++, 7 + (uint32_t)(r >> 40) % 4, 0,
                         1024 << (k % 4), 128 << (k % 3), (uint16_t)(16 + 8 * (k % 6)),
                         (k % 5) * 4096, 0);
            t += 5000;
        }
        build_cpu += bench_now(CLOCK_THREAD_CPUTIME_ID) - b0;

        fl_decoder_feed(d, &sink, s.p, s.len);
        fl_decoder_flush(d, &sink);
        for (int c = 0; c < 3; c++) {
            if (ch[c].len && write(fd, ch[c].p, ch[c].len) != (ssize_t)ch[c].len) {
                perror("write");
                return 1;
            }
            bytes += ch[c].len;
            fl_buf_reset(&ch[c]);
        }
        done += n;
        buffers++;
        if (!rss_tenth && done >= total / 10)
            rss_tenth = bench_peak_rss_kib();
    }
    bytes += g_bytes;
    if (g_write_failed) {
        perror("write");
        return 1;
    }
    fsync(fd);
    double cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0 - build_cpu;
    double wall = bench_now(CLOCK_MONOTONIC) - w0 - build_cpu;
    close(fd);
    fl_trace_counts cn;
    fl_trace_writer_counts(w, &cn);

    printf("records            %llu kernel records in %llu buffers of %u KiB\n",
           (unsigned long long)done, (unsigned long long)buffers, BUFFER_BYTES >> 10);
    printf("decode+write       %.3f s CPU, %.3f s wall (buffer filling excluded)\n", cpu, wall);
    printf("throughput         %.2f M records/s per core (CPU), %.2f M records/s wall\n",
           done / cpu / 1e6, done / wall / 1e6);
    printf("per record         %.1f ns CPU, %.1f bytes on disk\n", cpu / done * 1e9,
           (double)bytes / done);
    printf("kernel_detail      %llu (%s)\n", (unsigned long long)cn.details,
           compact ? "compact: one per new launch configuration" : "one per launch");
    printf("peak RSS           %ld KiB after %llu records, %ld KiB at the end\n", rss_tenth,
           (unsigned long long)(total / 10), bench_peak_rss_kib());
    printf("target             >= 10 M records/s per core: %s (ratio %.2f)\n",
           done / cpu >= 10e6 ? "met" : "NOT met", done / cpu / 10e6);
    fl_trace_writer_destroy(w);
    fl_decoder_destroy(d);
    for (int c = 0; c < 3; c++)
        fl_buf_free(&ch[c]);
    synth_free(&s);
    return 0;
}
