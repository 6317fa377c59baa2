/*
 * bench_sampler.c - the sampler's own cost and timing, against the fake NVML.
 *
 *   bench_sampler NVML_LIBRARY|real [--quick|--long|--tree [none|process|tree]]
 *
 * Prints, for the figures docs/performance.md records:
 *   1. CPU time of the sampling thread per device-sample (1 and 8 devices,
 *      1 ms interval): everything the sampler does for one reading, the
 *      NVML calls of the fake included.
 *   2. Achieved vs requested interval at 1 ms, 10 ms and 200 ms: p50 / p99
 *      of |actual - requested| between consecutive rounds, missed ticks.
 *   3. Drift: lateness of each round against its absolute deadline
 *      (first round + k * interval), early rounds vs late rounds; with
 *      absolute deadlines it must not grow.
 *   4. CPU share of one core at the 200 ms default.
 *   0. Baselines that are the machine's, not ours: the CPU a bare 1 ms
 *      nanosleep loop burns per wake-up, and the per-device-sample cost of
 *      our own code path (backend read + statistics) in a tight loop.
 * The fake's scenario is written to a temporary file (8 devices, constant
 * metrics) and passed through FAKE_NVML_SCENARIO; the tight loop is
 * measured again with power and the energy counter read through field
 * values and by their own calls (", field values" / ", separate calls"), and 1. with GPM
 * on every device (", with GPM"); with per-process attribution to this
 * process's tree, the rounds at 10 ms over 8 devices and the tree's
 * reading alone, walked and cached ("per-process tree", "tree").
 */
#include "sampler/backends/backend.h"
#include "sampler/backends/runner.h"
#include "sampler/hook.h"
#include "sampler/stats.h"
#include "util/clock.h"
#include "util/proc.h"
#include "gpu_profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *nvml_path;
static const char *gpm_label = ""; /* ", with GPM" for the GPM scenario */
static int bench_pid;              /* non-zero: attribute to this process */
static int bench_tree;             /* with bench_pid: and to its descendants (pid_tree) */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

static int run(unsigned n_dev, double interval_s, double seconds, int keep, gp_monitor **out)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = nvml_path;
    o.interval_s = interval_s;
    o.keep_samples = keep;
    o.report = GP_REPORT_NONE;
    unsigned devs[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    o.devices = devs;
    o.n_devices = n_dev;
    if (bench_pid) {
        o.pids = &bench_pid;
        o.n_pids = 1;
        o.pid_tree = bench_tree;
    }
    gp_error err;
    gp_monitor *m = NULL;
    if (gp_monitor_create(&o, &m, &err) != GP_OK || gp_monitor_start(m, &err) != GP_OK) {
        fprintf(stderr, "bench_sampler: %s\n", err.message);
        gp_monitor_destroy(m);
        return -1;
    }
    usleep((useconds_t)(seconds * 1e6));
    if (gp_monitor_stop(m, &err) != GP_OK) {
        fprintf(stderr, "bench_sampler: %s\n", err.message);
        gp_monitor_destroy(m);
        return -1;
    }
    *out = m;
    return 0;
}

/* What one wake-up of a sleeping thread costs on this machine. */
static void bench_wakeup(int n)
{
    uint64_t w0 = gp_now_mono_ns(), c0 = gp_thread_cpu_ns();
    for (int i = 0; i < n; i++) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    uint64_t w = gp_now_mono_ns() - w0, c = gp_thread_cpu_ns() - c0;
    printf("base bare_nanosleep_1ms: wall_per_iter_ms=%.3f cpu_per_wakeup_us=%.2f\n",
           (double)w / n / 1e6, (double)c / n / 1e3);
}

/* Our own per-device-sample path without the sleep: the NVML backend's read
 * (against the fake) and the statistics update, as the sampler does them. */
/* CPU of the whole process: the runner threads that make the NVML calls
 * included, which the calling thread's CPU leaves out. */
static uint64_t process_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_path(int rounds, int n_dev)
{
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.nvml_library = nvml_path;
    cfg.timeout_ns = 5000000000ull;
    void *ctx = NULL;
    gp_error err;
    if (gp_backend_nvml.open(&cfg, &ctx, &err) != GP_OK) {
        fprintf(stderr, "bench_sampler: %s\n", err.message);
        return 1;
    }
    unsigned idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    if (gp_backend_nvml.start(ctx, idx, (size_t)n_dev, 1000000, &err) != GP_OK) {
        fprintf(stderr, "bench_sampler: %s\n", err.message);
        gp_backend_nvml.close(ctx);
        return 1;
    }
    if (bench_pid)
        gp_backend_nvml.set_pids(ctx, &bench_pid, 1);
    static gp_acc acc[8];
    for (int d = 0; d < n_dev; d++)
        gp_acc_init(&acc[d], 0, 0);
    for (int with_energy = 0; with_energy < 2; with_energy++) {
        uint64_t c0 = gp_thread_cpu_ns(), p0 = process_cpu_ns();
        for (int r = 0; r < rounds; r++) {
            uint64_t t = gp_now_mono_ns();
            for (int d = 0; d < n_dev; d++) {
                gp_device_sample s;
                gp_backend_nvml.read(ctx, (size_t)d, with_energy ? GP_READ_ENERGY : 0, &s, &err);
                gp_acc_add(&acc[d], t, &s);
            }
        }
        double per = (double)(gp_thread_cpu_ns() - c0) / ((double)rounds * n_dev);
        double proc = (double)(process_cpu_ns() - p0) / ((double)rounds * n_dev);
        printf("path read+stats (%s NVML, %d devices, %s%s): cpu_per_device_sample_us=%.3f "
               "process_cpu_per_device_sample_us=%.3f\n",
               nvml_path ? "fake" : "real", n_dev, with_energy ? "with energy" : "without energy",
               gpm_label, per / 1e3, proc / 1e3);
    }
    gp_backend_nvml.close(ctx);
    return 0;
}

static int bench_cpu(unsigned n_dev, double seconds)
{
    gp_monitor *m;
    if (run(n_dev, 0.001, seconds, 0, &m) != 0)
        return 1;
    gp_monitor_stats st;
    gp_monitor_get_stats(m, &st);
    double per = st.device_samples ? (double)st.sampler_cpu_ns / (double)st.device_samples : 0;
    double per_round = st.ticks ? (double)st.sampler_cpu_ns / (double)st.ticks : 0;
    printf("cpu%s  devices=%u interval=1ms rounds=%llu device_samples=%llu missed=%llu "
           "cpu_per_round_us=%.2f cpu_per_device_sample_us=%.3f\n",
           gpm_label, n_dev, (unsigned long long)st.ticks, (unsigned long long)st.device_samples,
           (unsigned long long)st.missed_ticks, per_round / 1e3, per / 1e3);
    gp_monitor_destroy(m);
    return 0;
}

/* Rounds attributing to a process tree (issue 39) at 10 ms, 8 devices:
 * the sampling thread's CPU per round and its share of one core, with the
 * tree read each round through util/proc.h's cache; then the tree alone,
 * per call: the walk of /proc (gp_proc_tree: the task list, each task's
 * children file) against the cached check (one pread of /proc/loadavg
 * while no task is created or reaped on the machine). */
static int bench_tree_rounds(double seconds, int calls, int only)
{
    int pid = bench_pid;
    static const char *const what[] = {"no attribution", "this process", "its tree"};
    for (int k = 0; k < 3; k++) {
        if (only >= 0 && k != only)
            continue;
        bench_pid = k ? pid : 0;
        bench_tree = k == 2;
        gp_monitor *m;
        struct rusage ru0, ru1;
        getrusage(RUSAGE_SELF, &ru0);
        uint64_t p0 = process_cpu_ns(), posts0 = gp_runner_posts();
        uint64_t sleeps0 = gp_monitor_tick_sleeps() + gp_runner_owner_sleeps();
        if (run(8, 0.010, seconds, 0, &m) != 0)
            return 1;
        uint64_t p1 = process_cpu_ns(), posts = gp_runner_posts() - posts0;
        uint64_t sleeps = gp_monitor_tick_sleeps() + gp_runner_owner_sleeps() - sleeps0;
        getrusage(RUSAGE_SELF, &ru1);
        gp_monitor_stats st;
        gp_monitor_get_stats(m, &st);
        double ticks = st.ticks ? (double)st.ticks : 1;
        double per_round = (double)st.sampler_cpu_ns / ticks;
        /* The whole process (the runner threads' share included) and its
         * context switches, voluntary (a thread slept) and not. */
        double proc_round = (double)(p1 - p0) / ticks;
        double vcsw = (double)(ru1.ru_nvcsw - ru0.ru_nvcsw) / ticks;
        double ivcsw = (double)(ru1.ru_nivcsw - ru0.ru_nivcsw) / ticks;
        printf("cpu, per-process tree (%s)  devices=8 interval=10ms rounds=%llu "
               "cpu_per_round_us=%.2f share_of_core=%.3f%% process_cpu_per_round_us=%.2f "
               "ctx_switches_per_round=%.1f+%.1f runner_posts_per_round=%.2f "
               "sampler_sleeps_per_round=%.2f\n",
               what[k], (unsigned long long)st.ticks, per_round / 1e3, per_round / 10e6 * 100,
               proc_round / 1e3, vcsw, ivcsw, (double)posts / ticks, (double)sleeps / ticks);
        fflush(stdout);
        gp_monitor_destroy(m);
    }
    bench_pid = pid;
    if (calls == 0)
        return 0;

    int out[GP_PROC_PIDS_MAX];
    uint64_t c0 = gp_thread_cpu_ns();
    for (int i = 0; i < calls; i++)
        gp_proc_tree(&bench_pid, 1, out, GP_PROC_PIDS_MAX);
    double walk_ns = (double)(gp_thread_cpu_ns() - c0) / calls;
    gp_proc_cache c = {0};
    c0 = gp_thread_cpu_ns();
    for (int i = 0; i < calls; i++)
        gp_proc_tree_cached(&c, gp_now_mono_ns(), &bench_pid, 1, out, GP_PROC_PIDS_MAX);
    double cached_ns = (double)(gp_thread_cpu_ns() - c0) / calls;
    printf("tree  walk_cpu_us=%.2f cached_cpu_us=%.2f walks=%llu of %d calls (the others: "
           "nothing created or reaped on the machine meanwhile)\n",
           walk_ns / 1e3, cached_ns / 1e3, (unsigned long long)c.walks, calls);
    gp_proc_cache_close(&c);
    return 0;
}

/* Marginal cost of one more device: (8-device round - 1-device round) / 7. */
static int bench_marginal(double seconds)
{
    double round_ns[2];
    unsigned devs[2] = {1, 8};
    for (int i = 0; i < 2; i++) {
        gp_monitor *m;
        if (run(devs[i], 0.001, seconds, 0, &m) != 0)
            return 1;
        gp_monitor_stats st;
        gp_monitor_get_stats(m, &st);
        round_ns[i] = st.ticks ? (double)st.sampler_cpu_ns / (double)st.ticks : 0;
        gp_monitor_destroy(m);
    }
    printf("cpu  marginal_per_device_sample_us=%.3f (round 8 dev %.2f us - round 1 dev %.2f us) / "
           "7\n",
           (round_ns[1] - round_ns[0]) / 7 / 1e3, round_ns[1] / 1e3, round_ns[0] / 1e3);
    return 0;
}

static int bench_timing(double interval_s, double seconds)
{
    gp_monitor *m;
    if (run(1, interval_s, seconds, 1, &m) != 0)
        return 1;
    size_t n = 0;
    const gp_sample *s = gp_monitor_samples(m, &n);
    gp_monitor_stats st;
    gp_monitor_get_stats(m, &st);
    uint64_t iv = (uint64_t)llround(interval_s * 1e9);
    /* The last sample is the one taken at stop: leave it out. */
    if (n > 0)
        n--;
    uint64_t *jit = calloc(n ? n : 1, sizeof *jit);
    uint64_t *late = calloc(n ? n : 1, sizeof *late);
    size_t nj = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t d = s[i].t_mono_ns - s[i - 1].t_mono_ns;
        jit[nj++] = d > iv ? d - iv : iv - d;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t since = s[i].t_mono_ns - s[0].t_mono_ns;
        uint64_t k = (since + iv / 2) / iv;
        uint64_t due = k * iv;
        late[i] = since > due ? since - due : 0;
    }
    /* Drift: mean lateness of the first and last tenth of the rounds. */
    size_t tenth = n / 10 ? n / 10 : 1;
    double early = 0, last = 0;
    for (size_t i = 0; i < tenth && i < n; i++)
        early += (double)late[i];
    for (size_t i = n > tenth ? n - tenth : 0; i < n; i++)
        last += (double)late[i];
    early /= (double)tenth;
    last /= (double)tenth;
    double achieved = n > 1 ? (double)(s[n - 1].t_mono_ns - s[0].t_mono_ns) / (double)(n - 1) : 0;
    qsort(jit, nj, sizeof *jit, cmp_u64);
    printf("time interval=%gms run=%gs rounds=%zu missed=%llu achieved_mean_ms=%.4f "
           "jitter_p50_us=%.1f jitter_p99_us=%.1f lateness_first10%%_us=%.1f "
           "lateness_last10%%_us=%.1f drift_us=%.1f\n",
           interval_s * 1e3, seconds, n, (unsigned long long)st.missed_ticks, achieved / 1e6,
           (double)pct(jit, nj, 50) / 1e3, (double)pct(jit, nj, 99) / 1e3, early / 1e3, last / 1e3,
           (last - early) / 1e3);
    if (interval_s >= 0.2) {
        const gp_summary *sum = gp_monitor_summary(m, 0);
        double share = (double)st.sampler_cpu_ns / (sum->duration_s * 1e9) * 100.0;
        printf("cpu  interval=%gms core_share_pct=%.5f (sampler cpu %.3f ms over %.1f s)\n",
               interval_s * 1e3, share, (double)st.sampler_cpu_ns / 1e6, sum->duration_s);
    }
    free(jit);
    free(late);
    gp_monitor_destroy(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sampler NVML_LIBRARY|real [--quick|--long|--tree [MODE]]\n"
                        "  NVML_LIBRARY: the fake, build/tests/fake-nvml/libnvidia-ml.so.1\n"
                        "  real: the driver's libnvidia-ml.so.1, device 0 (needs a GPU)\n"
                        "  MODE: none, process or tree: that attribution's rounds alone\n");
        return 2;
    }
    int real = strcmp(argv[1], "real") == 0;
    nvml_path = real ? NULL : argv[1];
    int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
    int longrun = argc > 2 && strcmp(argv[2], "--long") == 0;
    int tree_only = argc > 2 && strcmp(argv[2], "--tree") == 0;
    /* One mode a process: a figure is not coloured by the modes run before
     * it in the same process (the third of three ran ~20 % slower). */
    int only = -1;
    static const char *const modes[] = {"none", "process", "tree"};
    for (int i = 0; tree_only && argc > 3 && i < 3; i++)
        if (strcmp(argv[3], modes[i]) == 0)
            only = i;
    if (tree_only && argc > 3 && only < 0) {
        fprintf(stderr, "bench_sampler: unknown mode '%s': use none, process or tree\n", argv[3]);
        return 2;
    }
    double k = quick ? 0.2 : 1.0;
    int rc = 0;
    bench_wakeup(quick ? 100 : 500);
    if (real) {
        /* The driver's own cost per call dominates: fewer rounds. */
        rc |= bench_path(quick ? 100 : 500, 1);
        rc |= bench_cpu(1, 3 * k);
        rc |= bench_timing(0.010, 10 * k);
        rc |= bench_timing(0.200, 30 * k);
        return rc;
    }

    char scen[] = "/tmp/gp-bench-scenario-XXXXXX";
    int fd = mkstemp(scen);
    if (fd < 0) {
        perror("bench_sampler: mkstemp");
        return 1;
    }
    FILE *f = fdopen(fd, "w");
    for (int d = 0; d < 8; d++)
        fprintf(f, "device %d name \"NVIDIA H100 80GB HBM3\"\n", d);
    fclose(f);
    setenv("FAKE_NVML_SCENARIO", scen, 1);

    if (tree_only) { /* the per-process rounds alone, 10 s each */
        f = fopen(scen, "w");
        if (!f) {
            perror("bench_sampler: scenario");
            return 1;
        }
        for (int d = 0; d < 8; d++)
            fprintf(f,
                    "device %d name \"NVIDIA H100 80GB HBM3\"\nproc %d %d mem 1073741824 sm 30\n",
                    d, d, (int)getpid());
        fclose(f);
        bench_pid = (int)getpid();
        rc = bench_tree_rounds(10, only < 0 ? 10000 : 0, only);
        unlink(scen);
        return rc;
    }
    rc |= bench_path(quick ? 20000 : 100000, 8);
    rc |= bench_cpu(1, 3 * k);
    rc |= bench_cpu(8, 3 * k);
    rc |= bench_marginal(3 * k);
    rc |= bench_timing(0.001, 5 * k);
    rc |= bench_timing(0.010, 10 * k);
    rc |= bench_timing(0.200, 60 * k);
    if (longrun)
        rc |= bench_timing(0.001, 120); /* drift over 120 000 rounds */

    /* Field values (issue 19): power (every read) and the energy counter
     * (with energy) through one nvmlDeviceGetFieldValues call vs their own
     * calls (the fake refusing the field call: $FAKE_NVML_NO_FIELD_VALUES),
     * 1 and 8 devices. */
    for (int off = 0; off < 2; off++) {
        if (off)
            setenv("FAKE_NVML_NO_FIELD_VALUES", "1", 1);
        else
            unsetenv("FAKE_NVML_NO_FIELD_VALUES");
        gpm_label = off ? ", separate calls" : ", field values";
        rc |= bench_path(quick ? 20000 : 100000, 1);
        rc |= bench_path(quick ? 20000 : 100000, 8);
    }
    unsetenv("FAKE_NVML_NO_FIELD_VALUES");

    /* Per-process attribution (issue 19): two more NVML calls per
     * device-sample, on devices running this process and a foreign one. */
    f = fopen(scen, "w");
    if (!f) {
        perror("bench_sampler: scenario");
        return 1;
    }
    for (int d = 0; d < 8; d++)
        fprintf(f,
                "device %d name \"NVIDIA H100 80GB HBM3\"\nproc %d %d mem 1073741824 sm 30\n"
                "proc %d 1 mem 2147483648 sm 20\n",
                d, d, (int)getpid(), d);
    fclose(f);
    bench_pid = (int)getpid();
    gpm_label = ", per-process";
    rc |= bench_path(quick ? 20000 : 100000, 1);
    rc |= bench_path(quick ? 20000 : 100000, 8);
    rc |= bench_tree_rounds(3 * k, quick ? 2000 : 10000, -1);
    bench_tree = 0;
    bench_pid = 0;

    /* The same devices with GPM: two more NVML calls per device-sample
     * (nvmlGpmSampleGet, nvmlGpmMetricsGet) and the GPM statistics. */
    f = fopen(scen, "w");
    if (!f) {
        perror("bench_sampler: scenario");
        return 1;
    }
    for (int d = 0; d < 8; d++)
        fprintf(f, "device %d name \"NVIDIA H100 80GB HBM3\"\ngpm %d\n", d, d);
    fclose(f);
    gpm_label = ", with GPM";
    rc |= bench_path(quick ? 20000 : 100000, 8);
    rc |= bench_cpu(1, 3 * k);
    rc |= bench_cpu(8, 3 * k);
    unlink(scen);
    return rc;
}
