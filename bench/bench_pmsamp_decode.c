/*
 * bench_pmsamp_decode.c - PM-sample records, both ways, on one core:
 *
 *  0. decode: fl_pms_decode alone, into a sink that counts rows;
 *  1. write: the PmSampling engine's data path from a decoded counter-data
 *     image to disk - plugin/engines/pmsamp/pmsamp_decode.c's fl_pms_decode (CUPTI's
 *     GetCounterDataInfo / CounterDataGetSampleInfo and the host's
 *     evaluation, faked by tests/plugin/pm_fake.h with the toolkit's real
 *     structs: CUPTI's own cost is not in these figures), the core's sink
 *     (src/recorder/trace_sink.c: pm_sample_batch lines) and a write() per
 *     decode into a session's scope.log;
 *  2. read: that session read back with fl_read_session (src/reader/), a
 *     batch callback taking every row's metric_id and value (as the
 *     report's PM section does), and then the whole report.
 *
 *   bench_pmsamp_decode [--quick] [--rows N] [--keep]
 *
 * The unit is the row: one metric of one sample.  Shapes (N rows each,
 * 10 M by default, 1 M with --quick): metrics per sample 4 / 16 / 32,
 * samples per decode 4096 / 512, interval 100 us / 1 us / 10 ms (the
 * width of dt_ns).  Prints M rows/s per core (thread CPU) for each way,
 * bytes per row, and the peak RSS.
 */
#include "../plugin/engines/pmsamp/pmsamp.h"
#include "../tests/plugin/pm_fake.h"
#include "abi/trace_abi.h"
#include "reader/read.h"
#include "recorder/trace_sink.h"
#include "report/report.h"
#include "util/buf.h"
#include "wire/records.h"
#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define T0 1760000000001000000ull

typedef struct shape {
    const char *name;
    size_t metrics, samples_per_decode;
    uint32_t interval_us;
} shape;

static int g_fd = -1;
static bool g_failed;
static uint64_t g_bytes;

static void spill(void *user, fl_buf *b)
{
    (void)user;
    if (b->len && write(g_fd, b->p, b->len) != (ssize_t)b->len)
        g_failed = true;
    g_bytes += b->len;
    fl_buf_reset(b);
}

static void flush_channel(fl_buf *b)
{
    spill(NULL, b);
}

/* job_start and shutdown around a channel's records. */
static void head(fl_buf *b, const fl_ident *id)
{
    fl_job_start js = {.log_path = "bench",
                       .ts_ns = T0 - 1000000,
                       .hostname = "host0",
                       .ip_addr = "10.0.0.1",
                       .session_kind = "trace",
                       .profiling_engine = "nvidia.pm_sampling"};
    fl_rec_job_start(b, id, &js);
}

static int write_other(const char *dir, const char *channel, const fl_ident *id, uint64_t t_end)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.log", dir, channel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    fl_buf b = {0};
    head(&b, id);
    fl_rec_shutdown(&b, id, t_end);
    int rc = write(fd, b.p, b.len) == (ssize_t)b.len ? 0 : -1;
    fl_buf_free(&b);
    return close(fd) == 0 ? rc : -1;
}

/* 1: the write path into dir/scope.log; the CPU seconds into *cpu. */
static int run_write(const shape *s, uint64_t total, const char *dir, double *cpu, uint64_t *bytes,
                     uint64_t *t_end, uint64_t *rows_out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/scope.log", dir);
    g_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (g_fd < 0)
        return -1;
    g_bytes = 0;
    fl_ident id = {4242, "bench_app", SID};
    fl_buf ch[3] = {{0}};
    head(&ch[1], &id);
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &ch[0], &ch[1], &ch[2]);
    if (!w)
        return -1;
    fl_trace_writer_set_spill(w, spill, NULL);
    fl_trace_sink sink;
    fl_trace_writer_sink(w, &sink);

    static char names[FL_PM_MAX_METRICS][64];
    const char *metrics[FL_PM_MAX_METRICS];
    uint32_t ids[FL_PM_MAX_METRICS];
    for (size_t m = 0; m < s->metrics; m++) {
        snprintf(names[m], sizeof names[m], "metric_%02zu__x.avg.pct_of_peak_sustained_elapsed", m);
        metrics[m] = names[m];
        ids[m] = (uint32_t)m + 1;
    }
    sink.sample_names(sink.user, FL_SAMPLE_DICT_METRIC, ids, metrics, s->metrics);
    fl_pm_config c = {.t_ns = T0,
                      .interval_us = s->interval_us,
                      .max_samples = (uint32_t)s->samples_per_decode,
                      .preset = "custom",
                      .metrics = metrics,
                      .n_metrics = s->metrics};
    sink.pm_config(sink.user, &c);

    size_t image_size = sizeof(pmf_hdr) + s->samples_per_decode * 16;
    uint8_t *image = malloc(image_size);
    if (!image)
        return -1;
    pmf_reset(T0, (uint32_t)s->samples_per_decode);
    pmf.interval_ns = (uint64_t)s->interval_us * 1000u;
    pmf.running = true;
    CUpti_PmSampling_CounterDataImage_Initialize_Params ip = {.counterDataSize = image_size,
                                                              .pCounterData = image};
    uint64_t rows = 0;
    double fill = 0, c0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    while (rows < total) {
        /* What the GPU and CUPTI's DecodeData do: not ours, not timed. */
        double f0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
        pmf_data_init(&ip);
        CUpti_PmSampling_DecodeData_Params dd = {.pCounterDataImage = image,
                                                 .counterDataImageSize = image_size};
        pmf_decode(&dd);
        fill += bench_now(CLOCK_THREAD_CPUTIME_ID) - f0;
        fl_pms_decode_in in = {.image = image,
                               .image_size = image_size,
                               .metrics = metrics,
                               .metric_ids = ids,
                               .n_metrics = s->metrics,
                               .first_index = (uint32_t)(rows / s->metrics)};
        fl_pms_decode_out out = {0};
        if (!fl_pms_decode(&pmf_api, &in, &sink, &out))
            return -1;
        rows += out.rows;
        for (int k = 0; k < 3; k++)
            flush_channel(&ch[k]);
    }
    *t_end = T0 + (rows / s->metrics + 1) * (uint64_t)s->interval_us * 1000u;
    fl_rec_shutdown(&ch[1], &id, *t_end);
    flush_channel(&ch[1]);
    *cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0 - fill;
    *bytes = g_bytes;
    *rows_out = rows;
    fl_trace_writer_destroy(w);
    for (int k = 0; k < 3; k++)
        fl_buf_free(&ch[k]);
    free(image);
    int rc = close(g_fd) == 0 && !g_failed ? 0 : -1;
    rc |= write_other(dir, "device", &id, *t_end);
    rc |= write_other(dir, "system", &id, *t_end);
    return rc;
}

/* 0. decode: fl_pms_decode into a sink that only counts the rows - the
 * decode's own cost, without formatting or the disk (the unit the SASS
 * decoder's "rows into memory" figure uses). */
static uint64_t g_decoded;
static void count_rows(void *user, fl_pm_row *rows, size_t n)
{
    (void)user;
    (void)rows;
    g_decoded += n;
}

static int run_decode(const shape *s, uint64_t total, double *cpu)
{
    static char names[FL_PM_MAX_METRICS][64];
    const char *metrics[FL_PM_MAX_METRICS];
    uint32_t ids[FL_PM_MAX_METRICS];
    for (size_t m = 0; m < s->metrics; m++) {
        snprintf(names[m], sizeof names[m], "metric_%02zu__x.avg.pct_of_peak_sustained_elapsed", m);
        metrics[m] = names[m];
        ids[m] = (uint32_t)m + 1;
    }
    fl_trace_sink sink = {.pm_samples = count_rows};
    size_t image_size = sizeof(pmf_hdr) + s->samples_per_decode * 16;
    uint8_t *image = malloc(image_size);
    if (!image)
        return -1;
    pmf_reset(T0, (uint32_t)s->samples_per_decode);
    pmf.interval_ns = (uint64_t)s->interval_us * 1000u;
    pmf.running = true;
    CUpti_PmSampling_CounterDataImage_Initialize_Params ip = {.counterDataSize = image_size,
                                                              .pCounterData = image};
    g_decoded = 0;
    double fill = 0, c0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    while (g_decoded < total) {
        double f0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
        pmf_data_init(&ip);
        CUpti_PmSampling_DecodeData_Params dd = {.pCounterDataImage = image,
                                                 .counterDataImageSize = image_size};
        pmf_decode(&dd);
        fill += bench_now(CLOCK_THREAD_CPUTIME_ID) - f0;
        fl_pms_decode_in in = {.image = image,
                               .image_size = image_size,
                               .metrics = metrics,
                               .metric_ids = ids,
                               .n_metrics = s->metrics,
                               .first_index = (uint32_t)(g_decoded / s->metrics)};
        fl_pms_decode_out out = {0};
        if (!fl_pms_decode(&pmf_api, &in, &sink, &out) || out.rows == 0) {
            free(image);
            return -1;
        }
    }
    *cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0 - fill;
    free(image);
    return 0;
}

typedef struct sums {
    uint64_t rows;
    double value;
} sums;

static void on_batch(void *user, const fl_batch *b)
{
    sums *s = user;
    if (b->type_id != FL_T_PM_SAMPLE_BATCH)
        return;
    int c_m = fl_batch_colid(b, FL_COL_PM_METRIC_ID), c_v = fl_batch_colid(b, FL_COL_PM_VALUE);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t m;
        double v;
        if (fl_rcell_u64(b, i, c_m, &m) && fl_rcell_real(b, i, c_v, &v)) {
            s->rows++;
            s->value += v;
        }
    }
}

static int run_read(const char *root, uint64_t expect, double *cpu)
{
    sums s = {0};
    fl_read_cb cb = {.user = &s, .batch = on_batch};
    fl_read_result res;
    gp_error ge;
    double c0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    if (fl_read_session(root, NULL, &cb, &res, &ge) != GP_OK) {
        fprintf(stderr, "bench_pmsamp_decode: %s\n", ge.message);
        return -1;
    }
    *cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (s.rows != expect) {
        fprintf(stderr, "bench_pmsamp_decode: read %llu rows, wrote %llu\n",
                (unsigned long long)s.rows, (unsigned long long)expect);
        return -1;
    }
    return 0;
}

static int run_report(const char *root, double *cpu)
{
    fl_report *r = fl_report_create();
    if (!r)
        return -1;
    fl_read_cb cb;
    fl_report_callbacks(r, &cb);
    fl_read_result res;
    gp_error ge;
    double c0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    int rc = fl_read_session(root, NULL, &cb, &res, &ge) == GP_OK ? 0 : -1;
    fl_buf out = {0};
    if (rc == 0) {
        fl_report_finish(r, &res);
        fl_report_text(r, 10, &out);
    }
    *cpu = bench_now(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (rc == 0 && !strstr(out.p ? out.p : "", "metric_00__x"))
        rc = -1;
    fl_buf_free(&out);
    fl_report_destroy(r);
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t total = 10000000;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            total = 1000000;
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            total = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--keep") == 0)
            keep = true;
        else {
            fprintf(stderr, "usage: bench_pmsamp_decode [--quick] [--rows N] [--keep]\n");
            return 2;
        }
    }
    static const shape shapes[] = {
        {"4m-4096s-100us", 4, 4096, 100},   {"16m-4096s-100us", 16, 4096, 100},
        {"32m-4096s-100us", 32, 4096, 100}, {"4m-512s-100us", 4, 512, 100},
        {"4m-4096s-1us", 4, 4096, 1},       {"4m-4096s-10ms", 4, 4096, 10000},
    };
    printf("rows (metric x sample) per shape: %llu\n", (unsigned long long)total);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        char root[] = "/tmp/gp_bench_pm.XXXXXX";
        if (!mkdtemp(root))
            return 1;
        char dir[600];
        snprintf(dir, sizeof dir, "%s/%s", root, SID);
        if (mkdir(dir, 0755) != 0)
            return 1;
        double dcpu = 0, wcpu = 0, rcpu = 0, pcpu = 0;
        uint64_t bytes = 0, t_end = 0, rows = 0;
        if (run_decode(s, total, &dcpu) != 0) {
            fprintf(stderr, "bench_pmsamp_decode: shape %s: decode failed\n", s->name);
            return 1;
        }
        uint64_t decoded = g_decoded;
        if (run_write(s, total, dir, &wcpu, &bytes, &t_end, &rows) != 0 ||
            run_read(root, rows, &rcpu) != 0 || run_report(root, &pcpu) != 0) {
            fprintf(stderr, "bench_pmsamp_decode: shape %s failed (%s)\n", s->name, root);
            return 1;
        }
        printf("%-16s decode %6.2f M rows/s per core (into memory)\n", s->name,
               decoded / dcpu / 1e6);
        printf("%-16s %2zu metrics, %4zu samples/decode, %5u us: write %6.2f M rows/s per core, "
               "read %6.2f M rows/s per core, report %6.2f M rows/s per core; %.1f bytes/row; "
               "peak RSS %ld KiB; read >= 10 M rows/s %s\n",
               s->name, s->metrics, s->samples_per_decode, s->interval_us, rows / wcpu / 1e6,
               rows / rcpu / 1e6, rows / pcpu / 1e6, (double)bytes / rows, bench_peak_rss_kib(),
               rows / rcpu >= 10e6 ? "met" : "NOT met");
        if (!keep) {
            char cmd[700];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
            if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", root);
        } else {
            printf("kept %s\n", root);
        }
    }
    return 0;
}
