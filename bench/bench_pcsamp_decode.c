/*
 * bench_pcsamp_decode.c - the PcSampling engine's data path, CUPTI's
 * GetData output to disk, on one core: synthetic CUpti_PCSamplingData
 * buffers (the installed toolkit's structs, as CUPTI fills them in the
 * parsed format) fed to the plugin's aggregator (plugin/common/aggregator.c),
 * its rows handed at each collection to the core's trace writer
 * (src/recorder/trace_sink.c: profile_sample_batch lines and the
 * function / metric dictionaries) and written to a file with write() -
 * what the writer thread does at a collection point.
 *
 *   bench_pcsamp_decode [--quick] [--entries N] [--out FILE]
 *
 * Runs four shapes of N stall-reason entries each (a PC record with R
 * reasons is R entries; every entry has samples):
 *   repeat     4096 PCs x 4 reasons, 64 functions; one kernel launch
 *              (correlation id) per 16 reads, a collection per 16 reads:
 *              a loop sampling the same code (rows = entries / 16)
 *   distinct   the same, a new launch every read: every entry a row
 *   wide       512 PCs x 24 reasons (a device's whole list), 64 functions
 *   functions  4096 PCs x 4 reasons over 4096 functions
 * Prints, per shape, entries/s and samples/s per core (thread CPU; each
 * entry carries 1-20 samples, mean 10.5) and entries/s wall, rows and
 * bytes written, and the peak RSS after the first tenth and at the end
 * (the aggregator's table is fixed: both should match).  Filling the
 * buffers stands in for the GPU and is not timed.  No source correlation
 * (its cost is one CUPTI call per new (cubin, function, PC), then a cache
 * hit).
 */
#include "../plugin/engines/pcsamp/pcsamp.h"
#include "abi/trace_abi.h"
#include "recorder/trace_sink.h"
#include "util/buf.h"
#include "wire/records.h"
#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define READS_PER_COLLECTION 16

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

typedef struct shape {
    const char *name;
    size_t pcs, reasons, functions;
    bool new_launch_every_read;
} shape;

typedef struct buffers {
    CUpti_PCSamplingData data;
    CUpti_PCSamplingPCData *pcs;
    CUpti_PCSamplingStallReason *slots;
    char (*names)[32];
} buffers;

static bool build(buffers *b, const shape *s)
{
    b->pcs = calloc(s->pcs, sizeof *b->pcs);
    b->slots = calloc(s->pcs * s->reasons, sizeof *b->slots);
    b->names = calloc(s->functions, sizeof *b->names);
    if (!b->pcs || !b->slots || !b->names)
        return false;
    for (size_t f = 0; f < s->functions; f++)
        snprintf(b->names[f], sizeof b->names[f], "_Z9kernel_%04zuPfS_i", f);
    memset(&b->data, 0, sizeof b->data);
    b->data.size = sizeof b->data;
    b->data.collectNumPcs = s->pcs;
    b->data.totalNumPcs = s->pcs;
    b->data.pPcData = b->pcs;
    for (size_t i = 0; i < s->pcs; i++) {
        CUpti_PCSamplingPCData *r = &b->pcs[i];
        r->size = sizeof *r;
        r->cubinCrc = 0xabcdef;
        r->functionName = b->names[i % s->functions];
        r->pcOffset = (i / s->functions) * 16;
        r->stallReason = b->slots + i * s->reasons;
        r->stallReasonCount = s->reasons;
        for (size_t k = 0; k < s->reasons; k++) {
            r->stallReason[k].pcSamplingStallReasonIndex = (uint32_t)(k * 3 % 32);
            r->stallReason[k].samples = 1 + (uint32_t)(rng() % 20);
        }
    }
    return true;
}

static void unbuild(buffers *b)
{
    free(b->pcs);
    free(b->slots);
    free(b->names);
}

static int run(const shape *s, uint64_t total, int fd)
{
    buffers b;
    if (!build(&b, s)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    fl_agg *p = fl_agg_create(NULL);
    fl_buf ch[3] = {{0}};
    fl_ident id = {4242, "bench", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &ch[0], &ch[1], &ch[2]);
    g_fd = fd;
    g_bytes = 0;
    fl_trace_writer_set_spill(w, spill, NULL);
    fl_trace_sink sink;
    fl_trace_writer_sink(w, &sink);
    if (!p || !w)
        return 1;
    uint64_t per_read = s->pcs * s->reasons, done = 0, reads = 0, bytes = 0;
    /* The samples one read carries (each entry 1-20, as a real read's
     * entries aggregate several): the unit is samples/s. */
    uint64_t samples_per_read = 0, samples = 0;
    for (size_t i = 0; i < s->pcs * s->reasons; i++)
        samples_per_read += b.slots[i].samples;
    uint32_t corr = 1;
    long rss_tenth = 0;
    double fill = 0, c0 = bench_now(CLOCK_THREAD_CPUTIME_ID), w0 = bench_now(CLOCK_MONOTONIC);
    while (done < total) {
        double f0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
        if (s->new_launch_every_read || reads % READS_PER_COLLECTION == 0)
            corr++;
        for (size_t i = 0; i < s->pcs; i++)
            b.pcs[i].correlationId = corr;
        fill += bench_now(CLOCK_THREAD_CPUTIME_ID) - f0;
        fl_agg_feed(p, &sink, &b.data, 0, 1760000000000000000ull + reads * 1000);
        done += per_read;
        samples += samples_per_read;
        if (++reads % READS_PER_COLLECTION == 0 || done >= total) {
            fl_agg_flush(p, &sink);
            for (int c = 0; c < 3; c++) {
                if (ch[c].len && write(fd, ch[c].p, ch[c].len) != (ssize_t)ch[c].len)
                    g_write_failed = true;
                bytes += ch[c].len;
                fl_buf_reset(&ch[c]);
            }
        }
        if (!rss_tenth && done >= total / 10)
            rss_tenth = bench_peak_rss_kib();
    }
    double cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0 - fill;
    double wall = bench_now(CLOCK_MONOTONIC) - w0 - fill;
    bytes += g_bytes;
    if (g_write_failed) {
        perror("write");
        return 1;
    }
    fl_trace_counts cn;
    fl_trace_writer_counts(w, &cn);
    printf("%-10s %4zu PCs x %2zu reasons, %4zu functions: %6.2f M entries/s per core (CPU) = "
           "%7.1f M samples/s, %6.2f M entries/s wall; %llu rows, %.1f bytes/entry on disk; "
           "peak RSS %ld / %ld KiB; >= 10 M samples/s %s\n",
           s->name, s->pcs, s->reasons, s->functions, done / cpu / 1e6, samples / cpu / 1e6,
           done / wall / 1e6, (unsigned long long)cn.sample_rows, (double)bytes / done, rss_tenth,
           bench_peak_rss_kib(), samples / cpu >= 10e6 ? "met" : "NOT met");
    fl_trace_writer_destroy(w);
    fl_agg_destroy(p);
    for (int c = 0; c < 3; c++)
        fl_buf_free(&ch[c]);
    unbuild(&b);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t total = 10000000;
    const char *out_path = "bench_pcsamp_decode.out.ndjson";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            total = 1000000;
        else if (strcmp(argv[i], "--entries") == 0 && i + 1 < argc)
            total = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_pcsamp_decode [--quick] [--entries N] [--out FILE]\n");
            return 2;
        }
    }
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(out_path);
        return 1;
    }
    static const shape shapes[] = {{"repeat", 4096, 4, 64, false},
                                   {"distinct", 4096, 4, 64, true},
                                   {"wide", 512, 24, 64, false},
                                   {"functions", 4096, 4, 4096, false}};
    printf("entries (PC x stall reason) per shape: %llu; a collection every %d reads\n",
           (unsigned long long)total, READS_PER_COLLECTION);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (run(&shapes[i], total, fd) != 0)
            return 1;
    fsync(fd);
    close(fd);
    return 0;
}
