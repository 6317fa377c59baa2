/*
 * test_sampler.c - the sampling thread end to end through the fake NVML:
 * rounds read every device in order and feed the statistics, kept samples
 * match the scenario's sequences and the summary, warmup, gp_monitor_latest
 * from another thread while sampling, a slow device makes the sampler skip
 * deadlines (counted) without holding stop, sync_fn brackets the samples,
 * device selection and its errors.  No assertion depends on timing: the tests
 * wait for a number of rounds, however long that takes (bounded by CTest's
 * timeout).
 */
#include "check.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

static char scenario_path[] = "/tmp/gp-test-sampler-XXXXXX";

static void write_scenario(const char *text)
{
    FILE *f = fopen(scenario_path, "w");
    if (!f) {
        perror(scenario_path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    setenv("FAKE_NVML_SCENARIO", scenario_path, 1);
}

static gp_options nvml_opts(void)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = check_env("GP_TEST_FAKE_NVML");
    o.interval_s = 0.001;
    o.report = GP_REPORT_NONE;
    return o;
}

static void wait_rounds(gp_monitor *m, uint64_t rounds)
{
    gp_monitor_stats st;
    while (gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < rounds)
        usleep(1000);
}

static void test_samples_match_scenario(void)
{
    write_scenario(
        "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-00000000-0000-0000-0000-0000000000a0\n"
        "device 1 name \"NVIDIA A100-SXM4-40GB\" uuid GPU-00000000-0000-0000-0000-0000000000a1\n"
        "seq 0 util_gpu 10 20 30 40\n"
        "seq 0 power_mw 100000 200000\n"
        "seq 0 energy_mj 1000 1500 2000 2500 3000 3500 4000 4500 5000 5500 6000\n"
        "seq 1 util_gpu 90\n"
        "unsupported 1 power\n"
        "unsupported 1 energy\n");
    gp_options o = nvml_opts();
    o.device = GP_ALL_DEVICES;
    o.keep_samples = 1;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    CHECK_INT(gp_monitor_device_count(m), 2);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_rounds(m, 6);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);

    size_t n = 0;
    const gp_sample *s = gp_monitor_samples(m, &n);
    gp_monitor_stats st;
    gp_monitor_get_stats(m, &st);
    CHECK(n >= 12);
    CHECK_U64(n, st.device_samples);
    CHECK_U64(n, 2 * st.ticks);
    uint64_t k0 = 0, k1 = 0;
    for (size_t i = 0; i < n; i++) {
        /* Each round reads slot 0 then slot 1, with one time stamp. */
        CHECK_INT(s[i].slot, i % 2);
        CHECK_INT(s[i].device_index, i % 2);
        if (i > 0)
            CHECK(s[i].t_mono_ns >= s[i - 1].t_mono_ns);
        if (i % 2 == 1)
            CHECK_U64(s[i].t_mono_ns, s[i - 1].t_mono_ns);
        CHECK(s[i].t_wall_ns > 1600000000ull * 1000000000ull);
        if (s[i].slot == 0) {
            uint32_t want = k0 < 4 ? 10 * (uint32_t)(k0 + 1) : 40;
            CHECK_INT(s[i].m.util_gpu_pct, want);
            CHECK_INT(s[i].m.power_mw, k0 == 0 ? 100000 : 200000);
            CHECK(s[i].m.valid & GP_M_POWER);
            /* The slow energy counter is read in the first and the last round
             * (and every 30 s, longer than this run). */
            CHECK_INT((s[i].m.valid & GP_M_ENERGY) != 0, i == 0 || i == n - 2);
            k0++;
        } else {
            CHECK_INT(s[i].m.util_gpu_pct, 90);
            CHECK(!(s[i].m.valid & GP_M_POWER));
            CHECK(!(s[i].m.valid & GP_M_ENERGY));
            CHECK(s[i].m.valid & GP_M_UTIL_GPU);
            k1++;
        }
    }
    CHECK_U64(k0, k1);

    const gp_summary *s0 = gp_monitor_summary(m, 0);
    const gp_summary *s1 = gp_monitor_summary(m, 1);
    CHECK_U64(s0->sample_count, k0);
    CHECK_STR(s0->name, "NVIDIA H100 80GB HBM3");
    CHECK_STR(s0->uuid, "GPU-00000000-0000-0000-0000-0000000000a0");
    CHECK_STR(s1->name, "NVIDIA A100-SXM4-40GB");
    CHECK_STR(s0->backend, "nvml");
    CHECK_INT(s0->util_gpu_max, 40);
    /* mean of 10, 20, 30 and k0-3 times 40 */
    CHECK_NEAR(s0->util_gpu_mean, (60.0 + 40.0 * (double)(k0 - 3)) / (double)k0, 1e-9);
    CHECK_INT(s0->power_max_mw, 200000);
    CHECK_INT(s0->energy_source, GP_ENERGY_COUNTER);
    /* Two counter readings, 1000 then 1500 mJ. */
    CHECK_NEAR(s0->energy_j, 0.5, 1e-9);
    CHECK_INT(s1->util_gpu_p50, 90);
    CHECK_INT(s1->util_gpu_p95, 90);
    CHECK(!(s1->valid & GP_M_POWER));
    CHECK_INT(s1->energy_source, GP_ENERGY_NONE);
    CHECK_NEAR(s1->busy_time_est_s, s1->duration_s * 0.9, 1e-9);
    CHECK_INT(s0->device_status, GP_OK);
    gp_monitor_destroy(m);
}

static void test_warmup(void)
{
    write_scenario("device 0\n");
    gp_options o = nvml_opts();
    o.warmup_s = 3600;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_rounds(m, 3);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    gp_monitor_stats st;
    gp_monitor_get_stats(m, &st);
    const gp_summary *s = gp_monitor_summary(m, 0);
    CHECK_U64(s->sample_count, 0);
    CHECK_U64(s->samples_warmup, st.device_samples);
    /* Only what the device info says: the total, not a sampled metric. */
    CHECK_INT(s->valid, GP_M_MEM_TOTAL);
    CHECK_NEAR(s->warmup_s, 3600, 0);
    gp_monitor_destroy(m);

    o.warmup_s = 0;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_rounds(m, 3);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    gp_monitor_get_stats(m, &st);
    s = gp_monitor_summary(m, 0);
    CHECK_U64(s->samples_warmup, 0);
    CHECK_U64(s->sample_count, st.device_samples);
    CHECK_INT(s->util_gpu_p50, 42); /* the fake's default */
    gp_monitor_destroy(m);
}

static void test_energy_after_warmup(void)
{
    /* The statistics window starts at the first sample after warmup: the
     * counter is read there, so the energy covers exactly that window. */
    write_scenario("device 0\nseq 0 energy_mj 1000 1100 1300 1600\n");
    gp_options o = nvml_opts();
    o.warmup_s = 0.2;
    o.keep_samples = 1;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    size_t n = 0;
    /* Rounds until well past the warmup, however slow the machine. */
    gp_sample latest;
    uint64_t first_t = 0;
    while (gp_monitor_latest(m, 0, &latest) != GP_OK)
        usleep(1000);
    first_t = latest.t_mono_ns;
    do {
        usleep(2000);
        gp_monitor_latest(m, 0, &latest);
    } while (latest.t_mono_ns - first_t < 300000000ull);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_sample *s = gp_monitor_samples(m, &n);
    const gp_summary *sum = gp_monitor_summary(m, 0);
    uint64_t w = sum->samples_warmup;
    CHECK(w < n);
    /* Counter reads, in order, get 1000, 1100, 1300 mJ.  Normally the first
     * round falls inside the warmup (w >= 1): reads at samples 0, w and
     * n-1.  A thread that starts later than the warmup (a very slow
     * machine) has w == 0: reads at 0 and n-1 only. */
    if (w >= 1 && w < n) {
        CHECK(s[0].m.valid & GP_M_ENERGY);
        CHECK(s[w].m.valid & GP_M_ENERGY);
        CHECK(!(s[w - 1].m.valid & GP_M_ENERGY) || w == 1);
        CHECK(s[n - 1].m.valid & GP_M_ENERGY);
        CHECK_U64(s[w].m.energy_mj, 1100);
        CHECK_U64(s[n - 1].m.energy_mj, 1300);
        CHECK_NEAR(sum->energy_j, 0.2, 1e-9);
    } else if (w == 0 && n > 1) {
        CHECK_U64(s[0].m.energy_mj, 1000);
        CHECK_U64(s[n - 1].m.energy_mj, 1100);
        CHECK_NEAR(sum->energy_j, 0.1, 1e-9);
    }
    CHECK_INT(sum->energy_source, GP_ENERGY_COUNTER);
    gp_monitor_destroy(m);
}

struct reader {
    gp_monitor *m;
    int stop;     /* atomic */
    int reads_ok; /* atomic */
    int bad;
};

static void *read_latest(void *arg)
{
    struct reader *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        gp_sample s;
        gp_status st = gp_monitor_latest(r->m, 0, &s);
        if (st == GP_OK) {
            __atomic_fetch_add(&r->reads_ok, 1, __ATOMIC_RELEASE);
            if (s.m.util_gpu_pct != 42 || s.slot != 0 || s.device_index != 1)
                r->bad++;
        } else if (st != GP_ERR_STATE) {
            r->bad++;
        }
    }
    return NULL;
}

static void test_latest_concurrent(void)
{
    write_scenario("device 0\ndevice 1\n");
    gp_options o = nvml_opts();
    o.device = 1;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    struct reader r = {m, 0, 0, 0};
    pthread_t t;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    pthread_create(&t, NULL, read_latest, &r);
    wait_rounds(m, 20);
    while (__atomic_load_n(&r.reads_ok, __ATOMIC_ACQUIRE) == 0)
        usleep(1000);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK(r.reads_ok > 0);
    CHECK_INT(r.bad, 0);
    CHECK_INT(gp_monitor_summary(m, 0)->device_index, 1);
    gp_monitor_destroy(m);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_slow_device(void)
{
    /* Each utilization read sleeps 20 ms at a 1 ms interval: rounds overrun,
     * the deadlines they pass are skipped and counted, and stop() waits for
     * at most the round in flight. */
    write_scenario("device 0\nslow 0 util 20000\n");
    gp_options o = nvml_opts();
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_rounds(m, 3);
    uint64_t t = mono_ns();
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    uint64_t stop_ns = mono_ns() - t;
    gp_monitor_stats st;
    gp_monitor_get_stats(m, &st);
    CHECK(st.missed_ticks >= 3 * 10);
    /* The round in flight plus the last one at stop: 2 slow reads, with a wide
     * margin for a loaded machine: it only shows that stop does not hang. */
    CHECK(stop_ns < 5000000000ull);
    CHECK(st.sampler_cpu_ns > 0);
    gp_monitor_destroy(m);
}

static uint64_t sync_t[2];
static int sync_n;
static void record_sync(void *u)
{
    (void)u;
    if (sync_n < 2)
        sync_t[sync_n] = mono_ns();
    sync_n++;
}

static void test_sync_brackets_region(void)
{
    write_scenario("device 0\n");
    gp_options o = nvml_opts();
    o.keep_samples = 1;
    o.sync_fn = record_sync;
    sync_n = 0;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(sync_n, 0);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_rounds(m, 2);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK_INT(sync_n, 2);
    size_t n = 0;
    const gp_sample *s = gp_monitor_samples(m, &n);
    CHECK(n >= 3);
    if (n >= 3) {
        /* The first sample follows the "before" sync; the last is taken at
         * stop, after the "after" sync, so the region includes queued work. */
        CHECK(s[0].t_mono_ns >= sync_t[0]);
        CHECK(s[n - 1].t_mono_ns >= sync_t[1]);
    }
    const gp_summary *sum = gp_monitor_summary(m, 0);
    CHECK(sum->duration_s * 1e9 >= (double)(sync_t[1] - sync_t[0]) - 1e6);
    gp_monitor_destroy(m);
}

static void test_device_selection(void)
{
    write_scenario("device 0\ndevice 1\ndevice 2\n");
    gp_options o = nvml_opts();
    gp_monitor *m = NULL;
    gp_error err;
    o.device = 3;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_STR(err.message, "device 3 does not exist: nvml sees 3 devices (0-2)");
    CHECK(m == NULL);

    unsigned list[] = {2, 0};
    o.device = 0;
    o.devices = list;
    o.n_devices = 2;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(gp_monitor_device_count(m), 2);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_rounds(m, 1);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK_INT(gp_monitor_summary(m, 0)->device_index, 2);
    CHECK_INT(gp_monitor_summary(m, 1)->device_index, 0);
    CHECK_STR(gp_monitor_summary(m, 0)->uuid, "GPU-fa4e0000-0000-0000-0000-000000000002");
    gp_monitor_destroy(m);

    write_scenario("device 0\n");
    o.devices = NULL;
    o.n_devices = 0;
    o.device = 1;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_STR(err.message, "device 1 does not exist: nvml sees 1 device (0)");

    /* No GPU at all: strict is an error, not strict falls back to none. */
    write_scenario("# no device line: no GPU\n");
    o.device = GP_ALL_DEVICES;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_CONTAINS(err.message, "nvml sees no GPU");
}

static int sleeper(void *u)
{
    (void)u;
    usleep(20000);
    return 3;
}

static void test_profile_call_nvml(void)
{
    write_scenario("device 0 name \"NVIDIA H100 80GB HBM3\"\nseq 0 util_gpu 100\n");
    gp_options o = nvml_opts();
    gp_profiled_result r;
    gp_error err;
    CHECK_INT(gp_profile_call(&o, sleeper, NULL, &r, &err), GP_OK);
    CHECK_INT(r.value, 3);
    CHECK_INT(r.n_gpus, 1);
    CHECK_STR(r.gpu.backend, "nvml");
    CHECK_STR(r.gpu.note, "");
    CHECK(r.gpu.sample_count >= 2);
    CHECK_INT(r.gpu.util_gpu_p95, 100);
    CHECK(r.gpu.duration_s >= 0.02);
    CHECK_NEAR(r.gpu.busy_time_est_s, r.gpu.duration_s, 1e-9);
    gp_profiled_result_free(&r);

    /* The default (auto) finds the fake through LD_LIBRARY_PATH by name. */
    o.nvml_library = NULL;
    o.backend = GP_BACKEND_AUTO;
    CHECK_INT(gp_profile_call(&o, sleeper, NULL, &r, &err), GP_OK);
    CHECK_STR(r.gpu.backend, "nvml");
    CHECK_STR(r.gpu.name, "NVIDIA H100 80GB HBM3");
    gp_profiled_result_free(&r);
}

int main(void)
{
    int fd = mkstemp(scenario_path);
    if (fd < 0) {
        perror("mkstemp");
        return 2;
    }
    close(fd);
    test_samples_match_scenario();
    test_warmup();
    test_energy_after_warmup();
    test_latest_concurrent();
    test_slow_device();
    test_sync_brackets_region();
    test_device_selection();
    test_profile_call_nvml();
    unlink(scenario_path);
    return check_done("test_sampler");
}
