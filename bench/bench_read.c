/*
 * bench_read.c - reading a session back (src/reader/): NDJSON throughput
 * of fl_read_session and of the whole report on kernel_event_batch lines,
 * against Python's json module and against jansson on the same lines.
 *
 *   bench_read [--quick | --events N] [--runs N] [--keep] [--no-python]
 *              [--jansson-mb N] [--shape legacy|ms|1s|10s] [shape options]
 *
 * Writes a session of 10 M kernel events (1 M with --quick) into a
 * temporary directory: device.log = job_start, kernel_dict, kernel_event_batch
 * lines made by the writer's own fl_rec_kernel_batch (with the
 * kernel_detail records before them, as the recorder writes them), shutdown;
 * scope.log and system.log hold the common records.  The rows' shape:
 *  - legacy (the default, bench_kernel_row): 1024-row batches spanning ~5
 *    ms, durations 1-100 us, 50 kernels, 4 streams, per-row registers,
 *    has_details on one in ten without its detail;
 *  - ms, 1s, 10s (bench_kernel_shaped): 1024-row batches spanning 5 ms,
 *    1 s or 10 s (dt_ns of up to 7, 10 or 11 digits), corr_id of 5, 7 or
 *    8 digits, 50 kernels on 4 streams (10s: 1000 on 8), one device,
 *    an external id on one launch in 16, has_details on each kernel's first
 *    launch and one in 10000, with their details; the options change them:
 *    --span-ms X, --corr-digits D (1-9), --kernels N, --zipf S (kernel k
 *    drawn with weight 1/k^S instead of uniformly), --streams N,
 *    --devices N, --ext-every N (0: none), --detail-every N (after the
 *    first launches; 0: none), --no-details, --orphan-details
 *    (has_details rows without details: the report waits for them),
 *    --spec-columns (the spec's ten columns, without device_id, as
 *    GPUFlight's own sessions have them), --rows N (per batch),
 *    --dur-us MIN MAX.
 * It prints the shape (mean row length, digits of dt_ns and corr_id,
 * batch span).  Then, N times (3), reads it with fl_read_session, a batch
 * callback summing duration_ns and a detail callback counting the
 * kernel_details (read.h's fl_detail, as the report takes them), and prints MB/s of NDJSON per core
 * (the thread's CPU time) and per wall second, rows/s and the peak RSS.  Then the report itself, N
 * times: what `gpu-profile report` does - fl_read_session into fl_report's callbacks,
 * fl_report_finish and the text rendering - the same figures.  Then, if python3 is on the PATH, the
 * same device.log read line by line with json.loads (summing duration_ns
 * the same way), and jansson's json_loadb over the first --jansson-mb
 * (256; 0: none) MB of batch lines, each with our ratio.  The file is in
 * the page cache for every reader (it was just written).
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

/* What to write: the legacy rows (bench_kernel_row) or a shape's. */
typedef struct gen_opts {
    const char *name;
    bool legacy;
    bench_kshape sh;
    bool orphans;      /* has_details rows without their kernel_detail records */
    bool spec_columns; /* the spec's ten columns, without device_id (as GPUFlight writes) */
} gen_opts;

/* What was written: the shape as the reader sees it. */
typedef struct gen_stats {
    uint64_t rows, row_bytes, batches, span_ns, details;
    uint64_t dt_digits, corr_digits; /* sums over the rows */
    unsigned dt_min, dt_max, corr_min, corr_max;
} gen_stats;

static unsigned digits(uint64_t v)
{
    unsigned d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* The kernel batch line that starts at off in b without its last column
 * (device_id): the spec's ten columns, as GPUFlight's own sessions have
 * them. */
static void strip_last_column(fl_buf *b, size_t off)
{
    char *p = b->p + off, *end = b->p + b->len, *w;
    const char *col = ",\"device_id\"]", *key = "\"rows\":[";
    char *c = memmem(p, (size_t)(end - p), col, strlen(col));
    if (!c)
        return;
    memmove(c, c + strlen(col) - 1, (size_t)(end - (c + strlen(col) - 1)));
    end -= strlen(col) - 1;
    char *r = memmem(p, (size_t)(end - p), key, strlen(key));
    if (!r)
        return;
    w = r += strlen(key);
    char *last_comma = NULL;
    for (; r < end; r++) {
        if (*r == ',')
            last_comma = w;
        else if (*r == ']' && last_comma && r[-1] != ']')
            w = last_comma; /* drop ",value" */
        *w++ = *r;
    }
    b->len = (size_t)(w - b->p);
}

/* The batch line that starts at off in b: its rows' bytes and digits
 * into st. */
static void note_batch(gen_stats *st, const fl_buf *b, size_t off, const fl_kernel_row *rows,
                       size_t n)
{
    const char *key = "\"rows\":[";
    const char *p = memmem(b->p + off, b->len - off, key, strlen(key));
    if (p)
        st->row_bytes += (uint64_t)(b->p + b->len - 3 - (p + strlen(key))); /* less "]}\n" */
    st->batches++;
    st->span_ns += rows[n - 1].t_ns - rows[0].t_ns;
    for (size_t i = 0; i < n; i++) {
        unsigned dd = digits(rows[i].t_ns - rows[0].t_ns), cd = digits(rows[i].corr_id);
        if (st->rows == 0 && i == 0) {
            st->dt_min = st->dt_max = dd;
            st->corr_min = st->corr_max = cd;
        }
        st->dt_digits += dd;
        st->corr_digits += cd;
        st->dt_min = dd < st->dt_min ? dd : st->dt_min;
        st->dt_max = dd > st->dt_max ? dd : st->dt_max;
        st->corr_min = cd < st->corr_min ? cd : st->corr_min;
        st->corr_max = cd > st->corr_max ? cd : st->corr_max;
    }
    st->rows += n;
}

static void write_head(fl_buf *b, const fl_ident *id, unsigned nkernels)
{
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
    fl_rec_job_start(b, id, &js);
    fl_dict_entry dict[64];
    char names[64][64];
    for (unsigned i = 0; i < nkernels;) {
        size_t n = 0;
        for (; n < 64 && i < nkernels; n++, i++) {
            snprintf(names[n], sizeof names[n], "_Z%ukernel_%02uPfS_S_i", 9 + i / 10, i);
            dict[n].id = i + 1;
            dict[n].name = names[n];
        }
        fl_rec_dictionary(b, SID, FL_DICT_KERNEL, dict, n);
    }
}

/* The scopes a kernel's details name (its user_scope). */
static const char *const detail_scopes[] = {"global", "train", "train|forward", "train|backward",
                                            "eval"};

/* device.log (with_batches: total kernel events as o says, else scope.log
 * and system.log: the common records only); *bytes its size, *st the
 * shape written. */
static int write_channel(const char *path, bool with_batches, size_t total, const gen_opts *o,
                         uint64_t *bytes, gen_stats *st, uint64_t *t_end)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fl_buf b = {0};
    fl_ident id = {.pid = 4242, .app = "bench_app", .session_id = SID};
    write_head(&b, &id, o->legacy ? 50 : o->sh.kernels);
    int rc = write_buf(f, &b);

    uint64_t t = 1760000000001000000ull;
    if (with_batches && rc == 0) {
        size_t N = o->legacy ? FL_TRACE_BATCH : o->sh.rows;
        fl_kernel_row *rows = calloc(N, sizeof *rows);
        bench_kgen *g = calloc(1, sizeof *g);
        uint32_t corr = 1000;
        size_t done = 0;
        uint64_t batch = 1;
        if (g)
            g->t = t;
        if (g && !bench_kgen_zipf(g, &o->sh)) {
            free(g);
            g = NULL;
        }
        while (rows && g && done < total && rc == 0) {
            size_t n = total - done < N ? total - done : N;
            for (size_t i = 0; i < n; i++) {
                if (o->legacy)
                    bench_kernel_row(&rows[i], &t, &corr);
                else
                    bench_kernel_shaped(&rows[i], &o->sh, g);
            }
            /* Details first, as the recorder writes them. */
            for (size_t i = 0; i < n && !o->legacy && !o->orphans; i++) {
                if (!rows[i].has_details)
                    continue;
                fl_rec_kernel_detail(&b, &id, &rows[i], NULL, detail_scopes[rows[i].kernel_id % 5],
                                     NULL);
                st->details++;
            }
            size_t off = b.len;
            fl_rec_kernel_batch(&b, SID, batch++, rows, n);
            if (!b.oom && o->spec_columns)
                strip_last_column(&b, off);
            if (!b.oom)
                note_batch(st, &b, off, rows, n);
            rc = write_buf(f, &b);
            done += n;
        }
        if (!rows || !g)
            rc = -1;
        if (g && !o->legacy)
            t = g->t;
        free(rows);
        if (g)
            free(g->zipf_cdf);
        free(g);
    }
    if (with_batches)
        *t_end = t + 1000000;
    fl_rec_shutdown(&b, &id, *t_end);
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

/* A shape by name: legacy (bench_kernel_row: ~5 ms a batch, per-row
 * registers, has_details on one in ten without details), ms, 1s, 10s. */
static bool shape_preset(const char *name, gen_opts *o)
{
    bench_kshape sh = {.rows = FL_TRACE_BATCH,
                       .kernels = 50,
                       .streams = 4,
                       .devices = 1,
                       .ext_every = 16,
                       .details = true,
                       .detail_every = 10000,
                       .dur_min_ns = 1000,
                       .dur_max_ns = 100000};
    o->name = name;
    o->legacy = false;
    o->orphans = false;
    o->spec_columns = false;
    if (strcmp(name, "legacy") == 0) {
        o->legacy = true;
    } else if (strcmp(name, "ms") == 0) {
        sh.span_ns = 5000000;
        sh.corr_digits = 5;
    } else if (strcmp(name, "1s") == 0) {
        sh.span_ns = 1000000000;
        sh.corr_digits = 7;
    } else if (strcmp(name, "10s") == 0) {
        sh.span_ns = 10000000000ull;
        sh.corr_digits = 8;
        sh.kernels = 1000;
        sh.streams = 8;
    } else {
        return false;
    }
    o->sh = sh;
    return true;
}

static void print_shape(const gen_opts *o, const gen_stats *st, size_t total, uint64_t bytes)
{
    double rows = st->rows ? (double)st->rows : 1;
    printf("shape %s: %zu kernel events, device.log %.1f MB (%.1f bytes per event), %llu "
           "batches of %.0f rows, mean row %.1f bytes, batch span %.3f ms, dt_ns %u-%u digits "
           "(mean %.1f), corr_id %u-%u digits (mean %.1f), %llu details",
           o->name, total, (double)bytes / 1e6, (double)bytes / (double)total,
           (unsigned long long)st->batches, rows / (double)(st->batches ? st->batches : 1),
           (double)st->row_bytes / rows,
           (double)st->span_ns / 1e6 / (double)(st->batches ? st->batches : 1), st->dt_min,
           st->dt_max, (double)st->dt_digits / rows, st->corr_min, st->corr_max,
           (double)st->corr_digits / rows, (unsigned long long)st->details);
    if (o->legacy)
        printf(" (legacy rows: 50 kernels, 4 streams, 1 device, has_details 1 in 10 without "
               "details)\n");
    else
        printf(", %u kernels%s%.2f, %u streams, %u devices, external id 1 in %u, has_details %s "
               "1 in %u%s%s\n",
               o->sh.kernels, o->sh.zipf_s > 0 ? " drawn by Zipf s=" : " uniform",
               o->sh.zipf_s > 0 ? o->sh.zipf_s : 0.0, o->sh.streams, o->sh.devices, o->sh.ext_every,
               o->sh.details ? "on first launches and" : "never:", o->sh.detail_every,
               o->orphans ? " without details" : "",
               o->spec_columns ? ", the spec's ten columns (no device_id)" : "");
}

typedef struct sums {
    uint64_t rows, duration, batches, details;
} sums;

static void on_detail(void *user, int channel, const fl_detail *d)
{
    sums *s = user;
    (void)channel;
    s->details += d->v[FL_KD_CORR_ID].kind == FL_J_INT ? 1 : 0;
}

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

/* fl_read_session alone, runs times: the best MB/s per core into *best,
 * the durations' sum into *dur.  0: done. */
static int time_reader(const char *root, int runs, size_t total, const char *tag, double *best,
                       uint64_t *dur)
{
    double best_cpu = 0, best_wall = 0;
    long rss_after = 0;
    for (int k = 0; k < runs; k++) {
        sums s = {0};
        fl_read_cb cb = {.user = &s, .batch = on_batch, .detail = on_detail, .warning = on_warning};
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
               "%.0f MB/s wall, %.1f M rows/s per core; %llu rows, %llu batches, %llu details, "
               "sum(duration) %llu, bad %llu/%llu, crashed %d\n",
               k + 1, mb, cpu, wall, mb / cpu, mb / wall, (double)s.rows / cpu / 1e6,
               (unsigned long long)s.rows, (unsigned long long)s.batches,
               (unsigned long long)s.details, (unsigned long long)s.duration,
               (unsigned long long)res.bad_lines, (unsigned long long)res.bad_records, res.crashed);
        if (s.rows != total) {
            fprintf(stderr, "bench_read: read %llu rows, wrote %zu\n", (unsigned long long)s.rows,
                    total);
            return 1;
        }
        *dur = s.duration;
        if (k == 0 || mb / cpu > best_cpu)
            best_cpu = mb / cpu;
        if (k == 0 || mb / wall > best_wall)
            best_wall = mb / wall;
    }
    printf("ours: best %.0f MB/s per core (CPU), %.0f MB/s wall; peak RSS %.1f MiB %s\n", best_cpu,
           best_wall, (double)rss_after / 1024.0, tag);

    *best = best_cpu;
    return 0;
}

/* The report (read + fl_report callbacks + finish + text), runs times:
 * the best MB/s per core into *best.  0: done. */
static int time_report(const char *root, int runs, size_t total, const char *tag, double *best)
{
    double rep_cpu = 0, rep_wall = 0, rep_rows = 0;
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
        if (k == 0 || mb / cpu > rep_cpu) {
            rep_cpu = mb / cpu;
            rep_rows = (double)total / cpu / 1e6;
        }
        if (k == 0 || mb / wall > rep_wall)
            rep_wall = mb / wall;
    }
    printf("report: best %.0f MB/s per core (CPU), %.0f MB/s wall, %.1f M rows/s per core %s\n",
           rep_cpu, rep_wall, rep_rows, tag);

    *best = rep_cpu;
    return 0;
}

/* Python's json module on device.log, line by line, summing duration_ns
 * (expect: the reader's sum); its ratios to ours. */
static void time_python(const char *path, uint64_t expect_dur, double best_cpu, double rep_cpu,
                        const char *tag)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0)
        return;
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
               "core; rows %llu, sum %s; the reader is %.1fx it, the report %.1fx (CPU) %s\n",
               pc, pw, (double)pb / 1e6 / pc, pn, ps == expect_dur ? "equal" : "DIFFERENT",
               best_cpu / ((double)pb / 1e6 / pc), rep_cpu / ((double)pb / 1e6 / pc), tag);
    } else {
        printf("python3: no result\n");
    }
    if (p)
        pclose(p);
}

static const char usage[] =
    "usage: bench_read [--quick] [--events N] [--runs N] [--keep] [--no-python] [--jansson-mb N]\n"
    "                  [--shape legacy|ms|1s|10s] [--span-ms X] [--corr-digits D] [--kernels N]\n"
    "                  [--zipf S] [--streams N] [--devices N] [--ext-every N] [--detail-every N]\n"
    "                  [--no-details] [--orphan-details] [--spec-columns] [--rows N] [--dur-us MIN "
    "MAX]\n";

/* The shape options (after --shape's preset, which they change). */
static bool shape_option(int argc, char **argv, int *i, gen_opts *o)
{
    const char *a = argv[*i];
    bool more = *i + 1 < argc;
    bench_kshape *sh = &o->sh;
    if (strcmp(a, "--orphan-details") == 0) {
        o->orphans = true;
        return !o->legacy;
    }
    if (strcmp(a, "--spec-columns") == 0) {
        o->spec_columns = true;
        return !o->legacy;
    }
    if (strcmp(a, "--no-details") == 0) {
        sh->details = false;
        return !o->legacy;
    }
    if (!more)
        return false;
    const char *v = argv[++*i];
    unsigned u = (unsigned)strtoul(v, NULL, 10);
    if (strcmp(a, "--span-ms") == 0)
        sh->span_ns = (uint64_t)(atof(v) * 1e6);
    else if (strcmp(a, "--corr-digits") == 0 && u >= 1 && u <= 9)
        sh->corr_digits = u;
    else if (strcmp(a, "--kernels") == 0 && u >= 1)
        sh->kernels = u;
    else if (strcmp(a, "--zipf") == 0 && atof(v) > 0)
        sh->zipf_s = atof(v);
    else if (strcmp(a, "--streams") == 0 && u >= 1)
        sh->streams = u;
    else if (strcmp(a, "--devices") == 0 && u >= 1)
        sh->devices = u;
    else if (strcmp(a, "--ext-every") == 0)
        sh->ext_every = u;
    else if (strcmp(a, "--detail-every") == 0)
        sh->detail_every = u;
    else if (strcmp(a, "--rows") == 0 && u >= 1 && u <= FL_TRACE_BATCH * 64)
        sh->rows = u;
    else if (strcmp(a, "--dur-us") == 0 && *i + 1 < argc) {
        sh->dur_min_ns = (uint64_t)(atof(v) * 1e3);
        sh->dur_max_ns = (uint64_t)(atof(argv[++*i]) * 1e3);
        return sh->dur_max_ns >= sh->dur_min_ns;
    } else
        return false;
    return !o->legacy; /* the legacy rows have no options */
}

int main(int argc, char **argv)
{
    bool keep = false, python = true;
    int runs = 3;
    double jansson_mb = 256;
    size_t total = 10000000;
    gen_opts o;
    shape_preset("legacy", &o);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            total = 1000000;
        else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
            total = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--keep") == 0)
            keep = true;
        else if (strcmp(argv[i], "--no-python") == 0)
            python = false;
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--jansson-mb") == 0 && i + 1 < argc)
            jansson_mb = atof(argv[++i]);
        else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            if (!shape_preset(argv[++i], &o)) {
                fputs(usage, stderr);
                return 2;
            }
        } else if (!shape_option(argc, argv, &i, &o)) {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (total == 0 || runs < 1) {
        fputs(usage, stderr);
        return 2;
    }

    char root[] = "/tmp/gp_bench_read.XXXXXX";
    if (!mkdtemp(root)) {
        perror("bench_read: mkdtemp");
        return 1;
    }
    char dir[256], path[300], devpath[300];
    snprintf(dir, sizeof dir, "%s/%s", root, SID);
    if (fl_make_dirs(dir) != 0) {
        perror("bench_read: mkdir");
        return 1;
    }
    uint64_t dev_bytes = 0;
    gen_stats st = {0};
    gen_opts common = o;
    common.legacy = true; /* 50 kernels in their dictionaries, as before */
    uint64_t t_end = 0;   /* the shutdown: after the last kernel */
    snprintf(devpath, sizeof devpath, "%s/device.log", dir);
    int rc = write_channel(devpath, true, total, &o, &dev_bytes, &st, &t_end);
    snprintf(path, sizeof path, "%s/scope.log", dir);
    rc |= write_channel(path, false, 0, &common, NULL, &st, &t_end);
    snprintf(path, sizeof path, "%s/system.log", dir);
    rc |= write_channel(path, false, 0, &common, NULL, &st, &t_end);
    if (rc) {
        fprintf(stderr, "bench_read: cannot write the session under %s\n", root);
        return 1;
    }
    printf("session: %s\n", dir);
    print_shape(&o, &st, total, dev_bytes);
    /* The shape, short, after each figure. */
    char tag[160];
    snprintf(tag, sizeof tag, "[%s%s: %.1f B/row, dt_ns %.1f digits, corr_id %.1f, span %.3g ms]",
             o.name, o.spec_columns ? " spec-columns" : "", (double)st.row_bytes / (double)st.rows,
             (double)st.dt_digits / (double)st.rows, (double)st.corr_digits / (double)st.rows,
             (double)st.span_ns / 1e6 / (double)st.batches);

    double best_cpu = 0, rep_cpu = 0;
    uint64_t expect_dur = 0;
    if (time_reader(root, runs, total, tag, &best_cpu, &expect_dur) != 0 ||
        time_report(root, runs, total, tag, &rep_cpu) != 0)
        return 1;
    double jmb = 0;
    uint64_t jdur = 0;
    double jcpu = time_jansson(devpath, (uint64_t)(jansson_mb * 1e6), &jmb, &jdur);
    if (jcpu > 0)
        printf("jansson json_loadb on %.1f MB of batch lines: %.3f s CPU, %.0f MB/s per core; "
               "ours is %.1fx\n",
               jmb, jcpu, jmb / jcpu, best_cpu / (jmb / jcpu));

    if (python)
        time_python(devpath, expect_dur, best_cpu, rep_cpu, tag);
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
