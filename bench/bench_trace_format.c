/*
 * bench_trace_format.c - formatting cost of the Trace engine's kernel rows.
 *
 *   bench_trace_format [--quick] [--details launch|compact | --batches]
 *
 * Prints, for the figures docs/performance.md records: rows per second,
 * bytes per row and MB/s of fl_rec_kernel_batch() on one core (the
 * writer thread's CPU time), formatting 10 million kernel rows (1 million
 * with --quick) in FL_TRACE_BATCH-row batches into one reused fl_buf.
 * The rows look like a real trace: start times ~5 us apart, durations
 * 1-100 us, increasing correlation ids, kernel ids 1..50, a few launches
 * with dynamic shared memory or an external correlation.
 *
 * --details: the rows go through the core's trace writer instead
 * (recorder/trace_sink.c: sort check, launch-configuration check, the
 * kernel_details, the batch), each of the 50 kernels with a configuration
 * of its own that stays the same from launch to launch, as in a training
 * loop; "launch" writes a kernel_detail per launch (the default of
 * gpufl_init_options), "compact" one per configuration
 * (compact_kernel_details).
 *
 * --batches: the same for each other batch src/wire/batches.c writes from
 * the vocabulary's column lists (memcpy, sync, alloc, graph, profile
 * samples, PM samples, scope events), as many rows each, made from
 * the kernel rows' times and ids.
 */
#include "abi/trace_abi.h"
#include "recorder/trace_sink.h"
#include "util/buf.h"
#include "util/clock.h"
#include "wire/records.h"
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

static fl_gpu_limits h100(void)
{
    fl_gpu_limits l;
    memset(&l, 0, sizeof l);
    l.cc_major = 9;
    l.sm_count = 132;
    l.warp_size = 32;
    l.max_threads_per_block = 1024;
    l.max_threads_per_sm = 2048;
    l.max_blocks_per_sm = 32;
    l.regs_per_sm = 65536;
    l.max_regs_per_block = 65536;
    l.smem_per_sm_bytes = 233472;
    l.smem_per_block_optin_bytes = 232448;
    l.reserved_smem_per_block_bytes = 1024;
    return l;
}

static uint64_t g_spilled;
static void spill(void *user, fl_buf *b)
{
    (void)user;
    g_spilled += b->len;
    fl_buf_reset(b);
}

/* The rows through a trace writer (compact or per launch); prints the
 * figures.  The writer sets has_details and keeps the rows sorted, so the
 * same batches can be fed again. */
static int run_writer(fl_kernel_row *rows, size_t sets, size_t total, bool compact)
{
    enum { N = FL_TRACE_BATCH };
    for (size_t i = 0; i < sets * N; i++) {
        fl_kernel_row *r = &rows[i];
        uint32_t k = r->kernel_id;
        r->grid[0] = 1024u << (k % 4);
        r->grid[1] = r->grid[2] = 1;
        r->block[0] = 128u << (k % 3);
        r->block[1] = r->block[2] = 1;
        r->num_regs = (uint16_t)(16 + 8 * (k % 6));
        r->static_smem_bytes = (k % 5) * 4096;
        r->dynamic_smem_bytes = (k % 7) == 0 ? 8192 : 0;
        r->scope_depth = 0;
    }
    fl_buf ch[3] = {{0}};
    fl_ident id = {4242, "bench", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &ch[0], &ch[1], &ch[2]);
    if (!w)
        return 1;
    fl_trace_writer_set_compact(w, compact);
    fl_trace_writer_set_spill(w, spill, NULL);
    fl_trace_sink sink;
    fl_trace_writer_sink(w, &sink);
    fl_gpu_limits l = h100();
    sink.device(sink.user, &l);
    /* Warm: the buffer reaches its final size, each kernel's detail text
     * is made. */
    for (size_t s = 0; s < sets; s++) {
        sink.kernels(sink.user, rows + s * N, N);
        fl_buf_reset(&ch[0]);
    }
    size_t batches = (total + N - 1) / N, done = 0;
    uint64_t bytes = 0;
    g_spilled = 0;
    fl_trace_counts warm;
    fl_trace_writer_counts(w, &warm);
    uint64_t c0 = gp_thread_cpu_ns(), w0 = gp_now_mono_ns();
    for (size_t k = 0; k < batches; k++) {
        size_t n = total - done < N ? total - done : N;
        sink.kernels(sink.user, rows + (k % sets) * N, n);
        bytes += ch[0].len;
        fl_buf_reset(&ch[0]);
        done += n;
    }
    double cpu = (double)(gp_thread_cpu_ns() - c0) / 1e9;
    double wall = (double)(gp_now_mono_ns() - w0) / 1e9;
    bytes += g_spilled;
    fl_trace_counts cn;
    fl_trace_writer_counts(w, &cn);
    bool oom = ch[0].oom;
    printf("kernel_row writer (%s): rows=%zu rows_per_s=%.3g ns_per_row=%.1f bytes_per_row=%.1f "
           "MB_per_s=%.0f details=%llu (thread cpu %.3f s, wall %.3f s)\n",
           compact ? "compact kernel_details" : "kernel_detail per launch", done,
           (double)done / cpu, cpu * 1e9 / (double)done, (double)bytes / (double)done,
           (double)bytes / cpu / 1e6, (unsigned long long)(cn.details - warm.details), cpu, wall);
    fl_trace_writer_destroy(w);
    for (int c = 0; c < 3; c++)
        fl_buf_free(&ch[c]);
    return oom ? 1 : 0;
}

/* The other batches' rows, one array per type, each row made from the
 * kernel row of the same index (64 batches of FL_TRACE_BATCH rows, as
 * main makes). */
#define OTHER_ROWS (64 * FL_TRACE_BATCH)
static struct {
    fl_memcpy_row memcpy[OTHER_ROWS];
    fl_sync_row sync[OTHER_ROWS];
    fl_alloc_row alloc[OTHER_ROWS];
    fl_graph_row graph[OTHER_ROWS];
    fl_sample_row sample[OTHER_ROWS];
    fl_pm_row pm[OTHER_ROWS];
    fl_scope_event scope[OTHER_ROWS];
} g_rows;

static void make_rows(const fl_kernel_row *k, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const fl_kernel_row *r = &k[i];
        uint32_t x = r->corr_id * 2654435761u;
        g_rows.memcpy[i] = (fl_memcpy_row){.t_ns = r->t_ns,
                                           .duration_ns = r->duration_ns,
                                           .bytes = 4096ull << (x % 12),
                                           .stream_id = r->stream_id,
                                           .corr_id = r->corr_id,
                                           .copy_kind = 1 + x % 2};
        g_rows.sync[i] = (fl_sync_row){.t_ns = r->t_ns,
                                       .duration_ns = r->duration_ns,
                                       .sync_type = 1 + x % 4,
                                       .stream_id = r->stream_id,
                                       .corr_id = r->corr_id};
        g_rows.alloc[i] = (fl_alloc_row){.t_ns = r->t_ns,
                                         .address = 0x7f0000000000ull + i * 4096,
                                         .bytes = 4096ull << (x % 12),
                                         .corr_id = r->corr_id,
                                         .memory_op = 1 + x % 2,
                                         .memory_kind = 3};
        g_rows.graph[i] = (fl_graph_row){.t_ns = r->t_ns,
                                         .duration_ns = r->duration_ns,
                                         .graph_id = 1 + x % 8,
                                         .stream_id = r->stream_id,
                                         .corr_id = r->corr_id};
        g_rows.sample[i] = (fl_sample_row){.t_ns = r->t_ns,
                                           .pc_offset = 16 * (x % 4096),
                                           .samples = 1 + x % 200,
                                           .corr_id = r->corr_id,
                                           .function_id = r->kernel_id,
                                           .metric_id = 1 + x % 12,
                                           .stall_reason = x % 12,
                                           .source_file_id = 1,
                                           .source_line = 1 + x % 900,
                                           .scope_name_id = 1};
        g_rows.pm[i] = (fl_pm_row){.t_ns = r->t_ns,
                                   .value = (double)(x % 100000) / 64.0,
                                   .sample_index = (uint32_t)i,
                                   .metric_id = 1 + x % 8};
        g_rows.scope[i].row = (fl_scope_row){.t_ns = r->t_ns,
                                             .instance_id = r->corr_id,
                                             .original_start_ns = r->t_ns,
                                             .name_id = r->kernel_id,
                                             .depth = (uint16_t)(x % 4),
                                             .event_type = x % 2};
        g_rows.scope[i].tid = 4242;
    }
}

static const char *const other_names[] = {"memcpy", "sync", "alloc", "graph",
                                          "sample", "pm",   "scope"};

/* Batch id of other_names[type], rows [at, at + n) of its array. */
static void put_other(fl_buf *b, size_t type, uint64_t id, size_t at, size_t n)
{
    switch (type) {
    case 0:
        fl_rec_memcpy_batch(b, SID, id, g_rows.memcpy + at, n);
        break;
    case 1:
        fl_rec_sync_batch(b, SID, id, g_rows.sync + at, n);
        break;
    case 2:
        fl_rec_alloc_batch(b, SID, id, g_rows.alloc + at, n);
        break;
    case 3:
        fl_rec_graph_batch(b, SID, id, g_rows.graph + at, n);
        break;
    case 4:
        fl_rec_profile_batch(b, SID, id, g_rows.sample + at, n);
        break;
    case 5:
        fl_rec_pm_batch(b, SID, id, g_rows.pm + at, n);
        break;
    default:
        fl_rec_scope_events(b, SID, id, g_rows.scope + at, n);
        break;
    }
}

/* Each other batch: total rows in batches of n, cycling through sets
 * batches of rows; prints a line per type. */
static int run_batches(const fl_kernel_row *k, size_t sets, size_t n, size_t total)
{
    if (sets * n > OTHER_ROWS) {
        fprintf(stderr, "bench_trace_format: more rows than OTHER_ROWS\n");
        return 1;
    }
    make_rows(k, sets * n);
    int rc = 0;
    fl_buf b = {0};
    for (size_t t = 0; rc == 0 && t < sizeof other_names / sizeof other_names[0]; t++) {
        for (size_t s = 0; s < sets; s++) { /* warm */
            fl_buf_reset(&b);
            put_other(&b, t, s + 1, s * n, n);
        }
        size_t batches = (total + n - 1) / n, done = 0;
        uint64_t bytes = 0;
        uint64_t c0 = gp_thread_cpu_ns();
        for (size_t i = 0; i < batches; i++) {
            size_t m = total - done < n ? total - done : n;
            fl_buf_reset(&b);
            put_other(&b, t, i + 1, (i % sets) * n, m);
            bytes += b.len;
            done += m;
        }
        double cpu = (double)(gp_thread_cpu_ns() - c0) / 1e9;
        rc = b.oom ? 1 : 0;
        printf("%s_row format: rows=%zu ns_per_row=%.1f bytes_per_row=%.1f (thread cpu %.3f s)\n",
               other_names[t], done, cpu * 1e9 / (double)done, (double)bytes / (double)done, cpu);
    }
    fl_buf_free(&b);
    return rc;
}

int main(int argc, char **argv)
{
    bool quick = false;
    const char *details = NULL;
    bool others = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--batches") == 0) {
            others = true;
        } else if (strcmp(argv[i], "--details") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "launch") == 0 || strcmp(argv[i + 1], "compact") == 0)) {
            details = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: bench_trace_format [--quick] [--details launch|compact | --batches]\n");
            return 2;
        }
    }
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
    if (details || others) {
        int rc = details ? run_writer(rows, SETS, total, strcmp(details, "compact") == 0)
                         : run_batches(rows, SETS, N, total);
        free(rows);
        return rc;
    }

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
