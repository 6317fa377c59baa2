/*
 * bench_gpufl.c - the flight recorder's hot-path costs.
 *
 *   bench_gpufl [--quick]
 *
 * Prints, for the figures docs/performance.md records:
 *   1. ns per scope begin/end pair on the calling thread, in bursts that fit
 *      the thread's ring (the writer drains between bursts), 1 thread and 2
 *      threads at once (a contended lock would show as a slower pair);
 *   2. sustained: one thread opening scopes as fast as it can for 1 s -
 *      pairs/s, rows written, rows dropped (the ring is full when the writer
 *      cannot keep up; the application is never blocked);
 *   3. system calls made by the calling thread during 4000 scope pairs,
 *      counted by running this program under strace (skipped without it);
 *   4. one logged device-metric row: formatting cost per row on the writer
 *      thread, and the whole pipeline's CPU per row (8 fake devices sampled
 *      every 1 ms, continuous).
 * Uses the fake NVML of the test suite when GP_BENCH_FAKE_NVML_DIR is set
 * in LD_LIBRARY_PATH by the caller; otherwise whatever NVML is installed.
 */
#include "recorder/scope.h"
#include "util/buf.h"
#include "util/clock.h"
#include "wire/records.h"
#include "gpu_profile.h"
#include "gpufl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define BURST 4000 /* pairs: 8000 rows, under half a ring (no kick) */

static char g_dir[64];

static void start(int rate_ms, bool continuous)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "bench";
    o.log_path = g_dir;
    o.system_sample_rate_ms = rate_ms;
    o.continuous_system_sampling = continuous;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "bench_gpufl: %s\n", err.message);
        exit(1);
    }
}

/* The machine's own floor: one CLOCK_REALTIME read (a pair takes two). */
static void bench_clock(void)
{
    enum { N = 2000000 };
    struct timespec ts;
    uint64_t sink = 0, t0 = gp_now_mono_ns();
    for (int i = 0; i < N; i++) {
        clock_gettime(CLOCK_REALTIME, &ts);
        sink += (uint64_t)ts.tv_nsec;
    }
    double per = (double)(gp_now_mono_ns() - t0) / N;
    char src[64] = "?";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (fgets(src, sizeof src, f))
            src[strcspn(src, "\n")] = '\0';
        fclose(f);
    }
    printf("base clock_gettime_realtime: ns_per_call=%.1f clocksource=%s (sink %llu)\n", per, src,
           (unsigned long long)(sink & 1));
#if defined(__x86_64__)
    t0 = gp_now_mono_ns();
    for (int i = 0; i < N; i++)
        sink += __rdtsc();
    printf("base rdtsc: ns_per_call=%.1f (sink %llu)\n", (double)(gp_now_mono_ns() - t0) / N,
           (unsigned long long)(sink & 1));
#endif
}

static double burst_ns_per_pair(int bursts)
{
    uint64_t total = 0;
    for (int b = 0; b < bursts; b++) {
        uint64_t t0 = gp_now_mono_ns();
        for (int i = 0; i < BURST; i++) {
            gpufl_scope s = gpufl_scope_begin("bench_scope");
            gpufl_scope_end(&s);
        }
        total += gp_now_mono_ns() - t0;
        gpufl_flush(); /* drain between bursts, outside the timing */
    }
    return (double)total / ((double)bursts * BURST);
}

typedef struct worker {
    int bursts;
    double ns;
    pthread_barrier_t *bar;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->bar);
    uint64_t total = 0;
    for (int b = 0; b < w->bursts; b++) {
        uint64_t t0 = gp_now_mono_ns();
        for (int i = 0; i < BURST; i++) {
            GPUFL_SCOPE("bench_mt") {}
        }
        total += gp_now_mono_ns() - t0;
        pthread_barrier_wait(w->bar);
        pthread_barrier_wait(w->bar); /* main flushes in between */
    }
    w->ns = (double)total / ((double)w->bursts * BURST);
    return NULL;
}

static void bench_threads(int bursts)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 3);
    worker w[2] = {{bursts, 0, &bar}, {bursts, 0, &bar}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    pthread_barrier_wait(&bar);
    for (int b = 0; b < bursts; b++) {
        pthread_barrier_wait(&bar);
        gpufl_flush();
        pthread_barrier_wait(&bar);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    printf("scope_pair 2_threads: ns_per_pair_thread0=%.1f ns_per_pair_thread1=%.1f\n", w[0].ns,
           w[1].ns);
}

static void bench_sustained(double seconds)
{
    uint64_t t0 = gp_now_mono_ns(), n = 0;
    uint64_t end = t0 + (uint64_t)(seconds * 1e9);
    while (gp_now_mono_ns() < end) {
        for (int i = 0; i < 1000; i++) {
            gpufl_scope s = gpufl_scope_begin("sustained");
            gpufl_scope_end(&s);
        }
        n += 1000;
    }
    double el = (double)(gp_now_mono_ns() - t0) / 1e9;
    gpufl_flush();
    uint64_t dropped = fl_scope_dropped();
    printf("scope_pair sustained_1_thread: pairs_per_s=%.0f rows=%llu rows_dropped=%llu "
           "dropped_pct=%.1f\n",
           (double)n / el, (unsigned long long)(2 * n), (unsigned long long)dropped,
           100.0 * (double)dropped / (double)(2 * n));
}

/* Under strace: mark the start and end of 4000 pairs with getppid(). */
static int probe(void)
{
    start(0, false);
    gpufl_scope warm = gpufl_scope_begin("probe"); /* ring and name: first use */
    gpufl_scope_end(&warm);
    gpufl_flush();
    getppid();
    for (int i = 0; i < BURST; i++) {
        gpufl_scope s = gpufl_scope_begin("probe");
        gpufl_scope_end(&s);
    }
    getppid();
    gpufl_shutdown();
    return 0;
}

static void bench_syscalls(const char *self)
{
    if (system("command -v strace >/dev/null 2>&1") != 0) {
        printf("scope_pair syscalls: skipped (no strace)\n");
        return;
    }
    char out[] = "/tmp/gpufl-strace-XXXXXX";
    int fd = mkstemp(out);
    if (fd < 0)
        return;
    close(fd);
    char cmd[1024];
    /* Without -f only the calling (main) thread is traced. */
    snprintf(cmd, sizeof cmd, "strace -qq -o %s %s --probe >/dev/null 2>&1", out, self);
    if (system(cmd) != 0) {
        printf("scope_pair syscalls: skipped (strace cannot trace here)\n");
        unlink(out);
        return;
    }
    FILE *f = fopen(out, "r");
    int markers = 0, inside = 0;
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "getppid(", 8) == 0) {
            markers++;
            continue;
        }
        if (markers == 1)
            inside++;
    }
    if (f)
        fclose(f);
    unlink(out);
    printf("scope_pair syscalls_in_%d_pairs_calling_thread=%d (markers seen: %d)\n", BURST, inside,
           markers);
}

/* Rows of the batches of one type in a session's system.log. */
static unsigned long long count_rows(const char *dir, const char *type_quoted)
{
    char path[700];
    snprintf(path, sizeof path, "%s/system.log", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long rows = 0;
    static char line[1 << 20];
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, type_quoted))
            continue;
        const char *p = strstr(line, "\"rows\":[");
        /* One '[' per row after the rows key. */
        for (p = p ? p + 8 : line + strlen(line); *p; p++)
            rows += *p == '[';
    }
    fclose(f);
    return rows;
}

static void bench_device_rows(double seconds)
{
    /* Formatting on the writer thread. */
    enum { N = 1024 };
    static fl_device_row rows[N];
    for (int i = 0; i < N; i++) {
        rows[i].t_ns = 1760000000000000000ull + (uint64_t)i * 1000000ull;
        rows[i].device_id = (uint32_t)(i % 8);
        rows[i].s.valid = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL |
                          GP_M_POWER | GP_M_TEMP | GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_ENERGY;
        rows[i].s.util_gpu_pct = 97;
        rows[i].s.util_mem_pct = 41;
        rows[i].s.mem_used_bytes = 40ull << 30;
        rows[i].s.mem_total_bytes = 80ull << 30;
        rows[i].s.power_mw = 612345;
        rows[i].s.temp_c = 61;
        rows[i].s.clock_sm_mhz = 1980;
        rows[i].s.clock_mem_mhz = 2619;
        rows[i].s.energy_mj = 123456789ull + (uint64_t)i;
    }
    fl_buf b = {0};
    int reps = 2000;
    uint64_t c0 = gp_thread_cpu_ns();
    for (int r = 0; r < reps; r++) {
        fl_buf_reset(&b);
        fl_rec_device_batch(&b, "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b", (uint64_t)r + 1, rows, N);
    }
    double per = (double)(gp_thread_cpu_ns() - c0) / ((double)reps * N);
    printf("device_row format: ns_per_row=%.1f bytes_per_row=%.1f\n", per, (double)b.len / N);
    fl_buf_free(&b);

    /* The whole pipeline: sampler thread + writer thread, process CPU, over
     * 8 fake devices (a scenario file for the fake NVML). */
    char scen[] = "/tmp/gpufl-bench-scenario-XXXXXX";
    int fd = mkstemp(scen);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        for (int d = 0; f && d < 8; d++)
            fprintf(f, "device %d name \"Bench GPU\" uuid GPU-bench-%d\n", d, d);
        if (f)
            fclose(f);
        setenv("FAKE_NVML_SCENARIO", scen, 1);
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    start(1, true);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    usleep((useconds_t)(seconds * 1e6));
    gpufl_shutdown();
    getrusage(RUSAGE_SELF, &r1);
    unlink(scen);
    unsigned long long dev_rows = count_rows(dir, "\"device_metric_batch\"");
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                 (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                 (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    printf("device_row pipeline (8 fake devices, 1 ms, %.1f s): device_rows=%llu "
           "process_cpu_us_per_device_row=%.2f (NVML reads, /proc, queue, format, write)\n",
           seconds, dev_rows, dev_rows ? cpu * 1e6 / (double)dev_rows : 0.0);
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    snprintf(g_dir, sizeof g_dir, "/tmp/gpufl-bench-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--probe") == 0)
        return probe();

    int bursts = quick ? 20 : 500;
    bench_clock();
    start(0, false);
    burst_ns_per_pair(2); /* warm: the ring, the name, the page faults */
    printf("scope_pair 1_thread: ns_per_pair=%.1f (bursts of %d, %d bursts)\n",
           burst_ns_per_pair(bursts), BURST, bursts);
    bench_threads(bursts / 2 + 1);
    gpufl_shutdown();

    start(0, false);
    bench_sustained(quick ? 0.2 : 1.0);
    gpufl_shutdown();

    bench_syscalls(argv[0]);
    bench_device_rows(quick ? 0.3 : 2.0);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_gpufl: cannot remove %s\n", g_dir);
    return 0;
}
