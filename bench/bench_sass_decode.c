/*
 * bench_sass_decode.c - the SassMetrics engine's data path, CUPTI's
 * FlushData output to rows (and to disk), on one core: synthetic
 * CUpti_SassMetrics_Data records (the installed toolkit's structs, as
 * cuptiSassMetricsFlushData fills them) fed to the plugin's decoder
 * (plugin/engines/sassmetrics/sassmetrics_decode.c over plugin/common/aggregator.c).
 *
 *   bench_sass_decode [--quick] [--values N] [--out FILE]
 *
 * The unit is the value: one metric's value for one instruction (one
 * CUpti_SassMetrics_InstanceValue; GPU granularity, so one instance per
 * metric), which becomes one profile_sample_batch row (sample_kind 1).
 * Every read is a collection (the rows handed over after it), as at a
 * scope's end.  Per shape, two figures on the thread's CPU clock (making
 * the records stands in for CUPTI and is not timed):
 *   decode   records -> rows handed to a sink that only counts them
 *   to disk  the same into the core's trace writer (function / metric
 *            dictionaries, profile_sample_batch lines) and write() to FILE
 * Shapes (functions x PCs per function x metrics):
 *   typical    64 x 256 x 6     (GPUFlight's metric count)
 *   all        64 x 256 x 11    (every metric the engine asks for)
 *   one        64 x 256 x 1
 *   functions  4096 x 16 x 6    (many small kernels)
 *   big        4 x 16384 x 6    (few large kernels)
 * No source correlation (one CUPTI call per new (cubin, function, PC),
 * then a cache hit).
 */
#include "../plugin/engines/sassmetrics/sassmetrics.h"
#include "abi/trace_abi.h"
#include "recorder/trace_sink.h"
#include "util/buf.h"
#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SID "5a55bbbb-7b4d-4e21-9a0f-5c6d7e8f9a0b"

typedef struct shape {
    const char *name;
    size_t functions, pcs, metrics;
} shape;

static uint64_t g_rows;

static void count_rows(void *u, fl_sample_row *r, size_t n)
{
    (void)u;
    (void)r;
    g_rows += n;
}

static void no_names(void *u, int d, const uint32_t *ids, const char *const *names, size_t n)
{
    (void)u, (void)d, (void)ids, (void)names, (void)n;
}

typedef struct records {
    CUpti_SassMetrics_Data *d;
    CUpti_SassMetrics_InstanceValue *v;
    char (*names)[32];
    size_t n;
} records;

static bool build(records *b, const shape *s)
{
    b->n = s->functions * s->pcs;
    b->d = calloc(b->n, sizeof *b->d);
    b->v = calloc(b->n * s->metrics, sizeof *b->v);
    b->names = calloc(s->functions, sizeof *b->names);
    if (!b->d || !b->v || !b->names)
        return false;
    for (size_t f = 0; f < s->functions; f++)
        snprintf(b->names[f], sizeof b->names[f], "_Z9kernel_%04zuPfS_i", f);
    for (size_t i = 0; i < b->n; i++) {
        CUpti_SassMetrics_Data *r = &b->d[i];
        size_t f = i / s->pcs;
        r->structSize = sizeof *r;
        r->cubinCrc = 0xabcdef;
        r->functionIndex = (uint32_t)f;
        r->functionName = b->names[f];
        r->pcOffset = (uint32_t)((i % s->pcs) * 16);
        r->pInstanceValues = b->v + i * s->metrics;
        for (size_t k = 0; k < s->metrics; k++)
            r->pInstanceValues[k] = (CUpti_SassMetrics_InstanceValue){1000 + k, 1 + rng() % 5000};
    }
    return true;
}

static void unbuild(records *b)
{
    free(b->d);
    free(b->v);
    free(b->names);
}

static fl_sass *decoder(const shape *s)
{
    fl_sass *x = fl_sass_create(NULL);
    for (size_t k = 0; x && k < s->metrics && k < fl_sass_n_metric_names; k++)
        fl_sass_metric_name(x, 0, 1000 + k, fl_sass_metric_names[k]);
    return x;
}

/* Values per CPU second: decode only (fd < 0) or to disk. */
static double run(const shape *s, const records *b, uint64_t total, int fd, uint64_t *rows,
                  double *bytes_per_row)
{
    fl_sass *x = decoder(s);
    fl_buf ch[3] = {{0}};
    fl_ident id = {4242, "bench", SID};
    fl_trace_writer *w = fd >= 0 ? fl_trace_writer_create(&id, 1, &ch[0], &ch[1], &ch[2]) : NULL;
    fl_trace_sink sink = {.sample_names = no_names, .samples = count_rows};
    if (w)
        fl_trace_writer_sink(w, &sink);
    g_rows = 0;
    uint64_t per_read = b->n * s->metrics, done = 0, reads = 0, bytes = 0;
    double c0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    while (done < total) {
        fl_sass_feed(x, &sink, b->d, b->n, s->metrics, 0, 1760000000000000000ull + reads * 1000);
        fl_sass_flush(x, &sink);
        done += per_read;
        reads++;
        for (int c = 0; w && c < 3; c++) {
            if (ch[c].len && write(fd, ch[c].p, ch[c].len) != (ssize_t)ch[c].len)
                perror("write");
            bytes += ch[c].len;
            fl_buf_reset(&ch[c]);
        }
    }
    double cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (w) {
        fl_trace_counts cn;
        fl_trace_writer_counts(w, &cn);
        g_rows = cn.sass_rows;
    }
    *rows = g_rows;
    *bytes_per_row = g_rows ? (double)bytes / (double)g_rows : 0;
    fl_trace_writer_destroy(w);
    fl_sass_destroy(x);
    for (int c = 0; c < 3; c++)
        fl_buf_free(&ch[c]);
    return (double)done / cpu;
}

int main(int argc, char **argv)
{
    uint64_t total = 20000000;
    const char *out_path = "bench_sass_decode.out.ndjson";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            total = 2000000;
        else if (strcmp(argv[i], "--values") == 0 && i + 1 < argc)
            total = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_sass_decode [--quick] [--values N] [--out FILE]\n");
            return 2;
        }
    }
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(out_path);
        return 1;
    }
    static const shape shapes[] = {{"typical", 64, 256, 6},
                                   {"all", 64, 256, 11},
                                   {"one", 64, 256, 1},
                                   {"functions", 4096, 16, 6},
                                   {"big", 4, 16384, 6}};
    printf("values (instruction x metric) per shape: %llu; a collection every read\n",
           (unsigned long long)total);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        records b;
        if (!build(&b, s)) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        uint64_t rows_d, rows_w;
        double bpr_d, bpr_w;
        double dec = run(s, &b, total, -1, &rows_d, &bpr_d);
        double disk = run(s, &b, total, fd, &rows_w, &bpr_w);
        printf("%-10s %4zu functions x %5zu PCs x %2zu metrics: decode %6.2f M rows/s per core "
               "(CPU), to disk %6.2f M rows/s; %llu rows, %.1f bytes/row on disk; peak RSS %ld "
               "KiB; >= 10 M rows/s %s\n",
               s->name, s->functions, s->pcs, s->metrics, dec / 1e6, disk / 1e6,
               (unsigned long long)rows_w, bpr_w, bench_peak_rss_kib(),
               dec >= 10e6 ? "met" : "NOT met");
        unbuild(&b);
    }
    fsync(fd);
    close(fd);
    return 0;
}
