/*
 * bench_read.c - reading a session back (src/reader/read.c): NDJSON throughput
 * of fl_read_session on kernel_event_batch lines, against Python's json
 * module and against jansson on the same lines.
 *
 *   bench_read [--quick] [--runs N] [--keep] [--no-python] [--jansson-mb N]
 *
 * Writes a session of 10 M kernel events (1 M with --quick) into a
 * temporary directory: device.log = job_start, kernel_dict, kernel_event_batch
 * lines of 1024 rows made by the writer's own fl_rec_kernel_batch (start
 * times ~5 us apart, durations 1-100 us, 50 kernels, 4 streams), shutdown;
 * scope.log and system.log hold the common records.  Then, N times (3),
 * reads it with fl_read_session, a batch callback summing duration_ns, and
 * prints MB/s of NDJSON per core (the thread's CPU time) and per wall
 * second, rows/s and the peak RSS.  Then the report itself, N times: what
 * `gpu-profile report` does - fl_read_session into fl_report's callbacks,
 * fl_report_finish and the text rendering - the same figures.  Then, if python3 is on the PATH, the
 * same device.log read line by line with json.loads (summing duration_ns
 * the same way), and jansson's json_loadb over the first --jansson-mb
 * (256) MB of batch lines, each with our ratio.  The file is in the page
 * cache for every reader (it was just written).
 */
#include "abi/trace_abi.h"
#include "reader/read.h"
#include "report/report.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fs.h"
#include "wire/records.h"
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

static int write_buf(FILE *f, fl_buf *b)
{
    if (b->oom || fwrite(b->p, 1, b->len, f) != b->len)
        return -1;
    fl_buf_reset(b);
    return 0;
}

static int write_common(const char *path, bool with_batches, size_t total, uint64_t *bytes)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fl_buf b = {0};
    fl_ident id = {.pid = 4242, .app = "bench_app", .session_id = SID};
    fl_device_static st = {.id = 0,
                           .name = "NVIDIA H100 80GB HBM3",
                           .uuid = "GPU-00000000-0000-0000-0000-000000000000",
                           .vendor = "NVIDIA",
                           .architecture = "Hopper",
                           .compute_major = 9,
                           .l2_cache_size_bytes = 52428800,
                           .shared_mem_per_block_bytes = 49152,
                           .regs_per_block = 65536,
                           .multi_processor_count = 132,
                           .warp_size = 32};
    fl_job_start js = {.log_path = "bench",
                       .ts_ns = 1760000000000000000ull,
                       .hostname = "host0",
                       .ip_addr = "10.0.0.1",
                       .gpu_static = &st,
                       .n_gpu_static = 1,
                       .cuda_static = &st,
                       .n_cuda_static = 1,
                       .session_kind = "trace",
                       .profiling_engine = "nvidia.trace"};
    fl_rec_job_start(&b, &id, &js);
    char names[50][64];
    fl_dict_entry dict[50];
    for (int i = 0; i < 50; i++) {
        snprintf(names[i], sizeof names[i], "_Z%dkernel_%02dPfS_S_i", 9 + i / 10, i);
        dict[i].id = (uint32_t)i + 1;
        dict[i].name = names[i];
    }
    fl_rec_dictionary(&b, SID, FL_DICT_KERNEL, dict, 50);
    int rc = write_buf(f, &b);

    uint64_t t = 1760000000001000000ull;
    if (with_batches && rc == 0) {
        enum { N = FL_TRACE_BATCH };
        fl_kernel_row *rows = calloc(N, sizeof *rows);
        uint32_t corr = 1000;
        size_t done = 0;
        uint64_t batch = 1;
        while (rows && done < total && rc == 0) {
            size_t n = total - done < N ? total - done : N;
            for (size_t i = 0; i < n; i++)
                bench_kernel_row(&rows[i], &t, &corr);
            fl_rec_kernel_batch(&b, SID, batch++, rows, n);
            rc = write_buf(f, &b);
            done += n;
        }
        if (!rows)
            rc = -1;
        free(rows);
    }
    fl_rec_shutdown(&b, &id, t + 1000000);
    if (rc == 0)
        rc = write_buf(f, &b);
    fl_buf_free(&b);
    if (fflush(f) != 0)
        rc = -1;
    long size = ftell(f);
    if (bytes && size > 0)
        *bytes = (uint64_t)size;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

typedef struct sums {
    uint64_t rows, duration, batches;
} sums;

static void on_batch(void *user, const fl_batch *b)
{
    sums *s = user;
    int c = fl_batch_col(b, "duration_ns");
    s->batches++;
    s->rows += b->nrows;
    if (c < 0)
        return;
    const fl_cell *cell = b->cells + c;
    for (size_t r = 0; r < b->nrows; r++, cell += b->ncols)
        s->duration += (uint64_t)fl_cell_int(cell, 0);
}

static void on_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    (void)user;
    fprintf(stderr, "warning: %s:%llu: %s\n", file, (unsigned long long)line, msg);
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* jansson alone on the first limit bytes of batch lines: the thread's CPU
 * seconds, *mb the megabytes parsed. */
static double time_jansson(const char *path, uint64_t limit, double *mb, uint64_t *dur)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t bytes = 0, sum = 0;
    uint64_t cpu = 0;
    while (bytes < limit && (n = getline(&line, &cap, f)) > 0) {
        if (!strstr(line, "\"kernel_event_batch\""))
            continue;
        uint64_t c0 = gp_thread_cpu_ns();
        json_t *j = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
        json_t *cols = json_object_get(j, "columns");
        size_t dc = 0;
        for (size_t i = 0; i < json_array_size(cols); i++)
            if (strcmp(json_string_value(json_array_get(cols, i)), "duration_ns") == 0)
                dc = i;
        json_t *rows = json_object_get(j, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++)
            sum += (uint64_t)json_integer_value(json_array_get(json_array_get(rows, r), dc));
        json_decref(j);
        cpu += gp_thread_cpu_ns() - c0;
        bytes += (uint64_t)n;
    }
    free(line);
    fclose(f);
    *mb = (double)bytes / 1e6;
    *dur = sum;
    return (double)cpu / 1e9;
}

int main(int argc, char **argv)
{
    bool quick = false, keep = false, python = true;
    int runs = 3;
    double jansson_mb = 256;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--keep") == 0)
            keep = true;
        else if (strcmp(argv[i], "--no-python") == 0)
            python = false;
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--jansson-mb") == 0 && i + 1 < argc)
            jansson_mb = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_read [--quick] [--runs N] [--keep] [--no-python] "
                            "[--jansson-mb N]\n");
            return 2;
        }
    }
    const size_t total = quick ? 1000000 : 10000000;

    char root[] = "/tmp/gp_bench_read.XXXXXX";
    if (!mkdtemp(root)) {
        perror("bench_read: mkdtemp");
        return 1;
    }
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/%s", root, SID);
    if (fl_make_dirs(dir) != 0) {
        perror("bench_read: mkdir");
        return 1;
    }
    uint64_t dev_bytes = 0;
    snprintf(path, sizeof path, "%s/scope.log", dir);
    int rc = write_common(path, false, 0, NULL);
    snprintf(path, sizeof path, "%s/system.log", dir);
    rc |= write_common(path, false, 0, NULL);
    snprintf(path, sizeof path, "%s/device.log", dir);
    rc |= write_common(path, true, total, &dev_bytes);
    if (rc) {
        fprintf(stderr, "bench_read: cannot write the session under %s\n", root);
        return 1;
    }
    printf("session: %s, %zu kernel events, device.log %.1f MB (%.1f bytes per row)\n", dir, total,
           (double)dev_bytes / 1e6, (double)dev_bytes / (double)total);

    double best_cpu = 0, best_wall = 0;
    uint64_t expect_dur = 0;
    long rss_after = 0;
    for (int k = 0; k < runs; k++) {
        sums s = {0};
        fl_read_cb cb = {.user = &s, .batch = on_batch, .warning = on_warning};
        fl_read_result res;
        gp_error ge;
        uint64_t c0 = gp_thread_cpu_ns(), w0 = gp_now_mono_ns();
        if (fl_read_session(root, NULL, &cb, &res, &ge) != GP_OK) {
            fprintf(stderr, "bench_read: %s\n", ge.message);
            return 1;
        }
        double cpu = (double)(gp_thread_cpu_ns() - c0) / 1e9;
        double wall = (double)(gp_now_mono_ns() - w0) / 1e9;
        rss_after = peak_rss_kib();
        double mb = (double)res.bytes / 1e6;
        printf("fl_read_session run %d: %.1f MB in %.3f s CPU / %.3f s wall: %.0f MB/s per core, "
               "%.0f MB/s wall, %.1f M rows/s per core; %llu rows, %llu batches, sum(duration) "
               "%llu, bad %llu/%llu, crashed %d\n",
               k + 1, mb, cpu, wall, mb / cpu, mb / wall, (double)s.rows / cpu / 1e6,
               (unsigned long long)s.rows, (unsigned long long)s.batches,
               (unsigned long long)s.duration, (unsigned long long)res.bad_lines,
               (unsigned long long)res.bad_records, res.crashed);
        if (s.rows != total) {
            fprintf(stderr, "bench_read: read %llu rows, wrote %zu\n", (unsigned long long)s.rows,
                    total);
            return 1;
        }
        expect_dur = s.duration;
        if (k == 0 || mb / cpu > best_cpu)
            best_cpu = mb / cpu;
        if (k == 0 || mb / wall > best_wall)
            best_wall = mb / wall;
    }
    printf("ours: best %.0f MB/s per core (CPU), %.0f MB/s wall; peak RSS %.1f MiB\n", best_cpu,
           best_wall, (double)rss_after / 1024.0);

    /* The report: read + fl_report callbacks + finish + text. */
    double rep_cpu = 0, rep_wall = 0;
    for (int k = 0; k < runs; k++) {
        fl_report *rep = fl_report_create();
        if (!rep) {
            fprintf(stderr, "bench_read: out of memory\n");
            return 1;
        }
        fl_read_cb cb;
        fl_report_callbacks(rep, &cb);
        fl_read_result res;
        gp_error ge;
        fl_buf out = {0};
        uint64_t c0 = gp_thread_cpu_ns(), w0 = gp_now_mono_ns();
        if (fl_read_session(root, NULL, &cb, &res, &ge) != GP_OK) {
            fprintf(stderr, "bench_read: %s\n", ge.message);
            return 1;
        }
        fl_report_finish(rep, &res);
        fl_report_text(rep, 10, &out);
        double cpu = (double)(gp_thread_cpu_ns() - c0) / 1e9;
        double wall = (double)(gp_now_mono_ns() - w0) / 1e9;
        double mb = (double)res.bytes / 1e6;
        char want[64];
        snprintf(want, sizeof want, " %zu launches ", total);
        bool ok = !out.oom && out.len > 0 && strstr(out.p, want) != NULL;
        printf("report run %d: %.1f MB in %.3f s CPU / %.3f s wall: %.0f MB/s per core, %.0f MB/s "
               "wall, %.1f M rows/s per core; %zu bytes of text%s\n",
               k + 1, mb, cpu, wall, mb / cpu, mb / wall, (double)total / cpu / 1e6, out.len,
               ok ? "" : " (NOT the expected report)");
        fl_buf_free(&out);
        fl_report_destroy(rep);
        if (!ok)
            return 1;
        if (k == 0 || mb / cpu > rep_cpu)
            rep_cpu = mb / cpu;
        if (k == 0 || mb / wall > rep_wall)
            rep_wall = mb / wall;
    }
    printf("report: best %.0f MB/s per core (CPU), %.0f MB/s wall\n", rep_cpu, rep_wall);

    double jmb = 0;
    uint64_t jdur = 0;
    double jcpu = time_jansson(path, (uint64_t)(jansson_mb * 1e6), &jmb, &jdur);
    if (jcpu > 0)
        printf("jansson json_loadb on %.1f MB of batch lines: %.3f s CPU, %.0f MB/s per core; "
               "ours is %.1fx\n",
               jmb, jcpu, jmb / jcpu, best_cpu / (jmb / jcpu));

    if (python && system("command -v python3 >/dev/null 2>&1") == 0) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import json,sys,time\n"
                 "t=time.perf_counter();c=time.process_time();n=0;s=0;b=0\n"
                 "with open(sys.argv[1],\"rb\") as f:\n"
                 "  for line in f:\n"
                 "    b+=len(line);r=json.loads(line)\n"
                 "    if r.get(\"type\")==\"kernel_event_batch\":\n"
                 "      i=r[\"columns\"].index(\"duration_ns\")\n"
                 "      for row in r[\"rows\"]:\n"
                 "        s+=row[i];n+=1\n"
                 "print(time.perf_counter()-t,time.process_time()-c,n,s,b)' '%s'",
                 path);
        FILE *p = popen(cmd, "r");
        double pw = 0, pc = 0;
        unsigned long long pn = 0, ps = 0, pb = 0;
        if (p && fscanf(p, "%lf %lf %llu %llu %llu", &pw, &pc, &pn, &ps, &pb) == 5 && pc > 0) {
            printf("python3 json.loads line by line: %.3f s CPU / %.3f s wall, %.0f MB/s per "
                   "core; rows %llu, sum %s; ours is %.1fx (CPU)\n",
                   pc, pw, (double)pb / 1e6 / pc, pn, ps == expect_dur ? "equal" : "DIFFERENT",
                   best_cpu / ((double)pb / 1e6 / pc));
        } else {
            printf("python3: no result\n");
        }
        if (p)
            pclose(p);
    }
    (void)jdur;
    if (!keep) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_read: cannot remove %s\n", root);
    } else {
        printf("kept %s\n", root);
    }
    return 0;
}
