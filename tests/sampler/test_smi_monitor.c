/*
 * test_smi_monitor.c - the smi backend behind the public API: a monitor on
 * the fake nvidia-smi summarises the captured values (energy from the power
 * integral, MIG utilization absent), a dying nvidia-smi becomes the device's
 * error, a silent one does not hold gp_monitor_stop, a round the
 * recorder's gate drops leaves nvidia-smi sampling (issue 32), and
 * gp_list_devices lists what nvidia-smi lists; NVML that loads but sees no
 * GPU is passed over when not strict (auto: smi, then none; issue 33).
 */
#include "check.h"
#include "gpu_profile.h"
#include "sampler/hook.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H100 "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
#define MIG "linux-x86_64__nvidia-h100-mig__590.48.01.txt"
#define RTX "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt"
#define MIB (1024ull * 1024ull)

static const char *fake_smi;
static const char *source_dir;

static void scenario(const char *captures, const char *fail)
{
    char paths[4096] = "", names[1024];
    snprintf(names, sizeof names, "%s", captures);
    char *save = NULL;
    for (char *p = strtok_r(names, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        size_t used = strlen(paths);
        snprintf(paths + used, sizeof paths - used, "%s%s/fixtures/nvidia-smi/%s", used ? "," : "",
                 source_dir, p);
    }
    setenv("FAKE_SMI_CAPTURES", paths, 1);
    unsetenv("FAKE_SMI_STATE");
    unsetenv("FAKE_SMI_DROP");
    unsetenv("FAKE_SMI_LOG");
    if (fail)
        setenv("FAKE_SMI_FAIL", fail, 1);
    else
        unsetenv("FAKE_SMI_FAIL");
}

static void options(gp_options *o)
{
    gp_options_init(o);
    o->backend = GP_BACKEND_SMI;
    o->smi_path = fake_smi;
    o->interval_s = 0.01;
}

static int run_value(void *user)
{
    return *(int *)user;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Waits (at most 10 s: the machine may be busy) for n sampling rounds. */
static void wait_ticks(gp_monitor *m, uint64_t n)
{
    double end = now_s() + 10.0;
    gp_monitor_stats st;
    while (now_s() < end && gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < n)
        sleep_s(0.005);
}

static bool no_children(void)
{
    int st;
    return waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD;
}

static void test_h100_summary(void)
{
    scenario(H100, NULL);
    gp_options o;
    options(&o);
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m) {
        fprintf(stderr, "  create: %s\n", err.message);
        return;
    }
    CHECK_STR(gp_monitor_backend(m), "smi");
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 3);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s = gp_monitor_summary(m, 0);
    CHECK(s != NULL);
    if (s) {
        CHECK_STR(s->backend, "smi");
        CHECK_STR(s->name, "NVIDIA H100 80GB HBM3");
        CHECK(s->sample_count >= 2);
        CHECK_INT(s->device_status, GP_OK);
        CHECK(s->valid & GP_M_UTIL_GPU);
        CHECK_NEAR(s->util_gpu_mean, 100.0, 1e-9);
        CHECK_INT(s->util_gpu_max, 100);
        CHECK_U64(s->mem_used_max_bytes, 19818ull * MIB);
        CHECK_U64(s->mem_total_bytes, 81559ull * MIB);
        CHECK_INT(s->power_max_mw, 631950);
        CHECK_NEAR(s->power_mean_mw, 631950.0, 1e-6);
        CHECK_INT(s->temp_max_c, 59);
        CHECK_NEAR(s->clock_sm_mean_mhz, 1980.0, 1e-9);
        CHECK_NEAR(s->clock_mem_mean_mhz, 2619.0, 1e-9);
        /* nvidia-smi has no energy counter: the power samples are integrated. */
        CHECK_INT(s->energy_source, GP_ENERGY_POWER_INTEGRAL);
        CHECK(s->energy_j > 0.0);
        CHECK_U64(s->valid & (GP_M_PCIE_TX | GP_M_PCIE_RX), 0);
    }
    gp_monitor_destroy(m);
    CHECK(no_children());
}

static void test_mig_and_several(void)
{
    scenario(H100 "," MIG "," RTX, NULL);
    gp_options o;
    options(&o);
    o.device = GP_ALL_DEVICES;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m) {
        fprintf(stderr, "  create: %s\n", err.message);
        return;
    }
    CHECK_INT(gp_monitor_device_count(m), 7); /* 3 GPUs, then GPU 1's 4 MIG instances */
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 2);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *mig = gp_monitor_summary(m, 1);
    const gp_summary *rtx = gp_monitor_summary(m, 2);
    CHECK(mig && rtx);
    if (mig && rtx) {
        CHECK(mig->sample_count >= 1);
        CHECK_U64(mig->valid & (GP_M_UTIL_GPU | GP_M_UTIL_MEM), 0);
        CHECK(mig->valid & GP_M_POWER);
        CHECK_INT(mig->power_max_mw, 433780);
        CHECK_STR(rtx->name, "NVIDIA GeForce RTX 4080 SUPER");
        CHECK_INT(rtx->util_gpu_max, 7);
        CHECK_INT(rtx->power_max_mw, 84240);
        /* An instance: sampled at its parent's pace, no value of its own. */
        const gp_summary *inst = gp_monitor_summary(m, 3);
        CHECK(inst != NULL);
        if (inst) {
            CHECK(inst->sample_count >= 1);
            CHECK_INT(inst->mig.is_mig, 1);
            CHECK_INT(inst->mig.parent_index, 1);
            CHECK_U64(inst->valid, 0);
            /* nvidia-smi has no per-instance utilisation: n/a and null
             * in the summary, never 0. */
            char text[4096];
            gp_summary_format(inst, GP_FMT_ASCII, text, sizeof text);
            CHECK_CONTAINS(text, "  util.gpu          n/a\n"
                                 "  util.mem          n/a\n"
                                 "  memory used       n/a\n"
                                 "  power             n/a\n");
            CHECK_CONTAINS(text, "  busy time est.    n/a\n");
            gp_summary_to_json(inst, 0, text, sizeof text);
            CHECK_CONTAINS(text, "\"valid_mask\":0,\"util_gpu_mean_pct\":null,\"util_gpu_p50_pct\":"
                                 "null,\"util_gpu_p95_pct\":null,\"util_gpu_max_pct\":null,"
                                 "\"util_gpu_min_pct\":null,\"util_gpu_p5_pct\":null,"
                                 "\"util_gpu_p99_pct\":null,\"util_gpu_std_pct\":null,"
                                 "\"util_gpu_idle_pct\":null,\"util_gpu_active_pct\":null,"
                                 "\"util_mem_mean_pct\":null,\"util_mem_max_pct\":null,");
            CHECK_CONTAINS(text, "\"busy_time_est_s\":null,\"sparkline\":[null,");
            CHECK_CONTAINS(text, "\"gpm\":null,\"mig\":{\"profile\":\"3g.40gb\",");
        }
    }
    gp_monitor_destroy(m);
    CHECK(no_children());
}

static void test_producer_dies(void)
{
    scenario(H100, "exit_after=3");
    gp_options o;
    options(&o);
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    wait_ticks(m, 3);
    sleep_s(1.0); /* the exit right after the third round */
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s = gp_monitor_summary(m, 0);
    if (s) {
        CHECK_INT(s->sample_count, 3);
        CHECK_INT(s->device_status, GP_ERR_BACKEND);
        CHECK_CONTAINS(s->device_error, "exit status 15");
        CHECK_CONTAINS(s->device_error, "GPU is lost");
    }
    gp_monitor_destroy(m);
    CHECK(no_children());
}

static void test_silent_producer(void)
{
    scenario(H100, "hang_after=0");
    gp_options o;
    options(&o);
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    sleep_s(0.1);
    double t0 = now_s();
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK(now_s() - t0 < 10.0); /* interrupt + SIGKILL, not the 2 s patience or longer */
    gp_monitor_destroy(m);
    CHECK(no_children());

    /* Hung at discovery: create fails within the limit. */
    scenario(H100, "hang");
    options(&o);
    o.backend_timeout_s = 0.3;
    t0 = now_s();
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_TIMEOUT);
    CHECK(now_s() - t0 < 10.0);
    CHECK(m == NULL);
    CHECK_CONTAINS(err.message, "did not answer within 0.3 s");
    CHECK(no_children());
}

/* The recorder's gate closed (no scope open) drops nvidia-smi's rounds; it
 * used to take the dropped round for the producer's death, so nothing was
 * sampled again once a scope opened (issue 32, point 9).  The gate here
 * stays closed for three rounds, then opens: rounds reach the hook again,
 * on MIG instances too, and no slot is failed. */
static atomic_int gate_calls, hook_rounds;

static bool gate_after_three(void *user)
{
    (void)user;
    return atomic_fetch_add(&gate_calls, 1) >= 3;
}

static void count_round(void *user, uint64_t t_mono_ns, uint64_t t_wall_ns,
                        const gp_device_sample *samples, const gp_status *status,
                        const gp_error *errors, size_t n)
{
    (void)user, (void)t_mono_ns, (void)t_wall_ns, (void)samples, (void)errors;
    bool all_ok = n == 5;
    for (size_t i = 0; i < n; i++)
        all_ok = all_ok && status[i] == GP_OK;
    if (all_ok)
        atomic_fetch_add(&hook_rounds, 1);
}

static void test_gate_drops_rounds(void)
{
    scenario(MIG, NULL);
    gp_options o;
    options(&o);
    o.device = GP_ALL_DEVICES;
    o.interval_s = 0.005;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_device_count(m), 5); /* the GPU, then its 4 MIG instances */
    gp_round_hook hook = {.gate = gate_after_three, .on_round = count_round, .user = NULL};
    CHECK_INT(gp_monitor_set_hook(m, &hook, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    /* The first round always comes, three are dropped, then four more. */
    double end = now_s() + 10.0;
    while (now_s() < end && atomic_load(&hook_rounds) < 5)
        sleep_s(0.005);
    CHECK(atomic_load(&gate_calls) >= 7);
    CHECK(atomic_load(&hook_rounds) >= 5);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    for (size_t i = 0; i < 5; i++) {
        const gp_summary *s = gp_monitor_summary(m, i);
        CHECK(s != NULL);
        if (!s)
            continue;
        CHECK_INT(s->device_status, GP_OK);
        CHECK_STR(s->device_error, "");
        CHECK(s->sample_count >= 5);
    }
    gp_monitor_destroy(m);
    CHECK(no_children());
}

static void test_list_devices(void)
{
    scenario(H100 "," RTX, NULL);
    gp_options o;
    options(&o);
    gp_device_info *devs = NULL;
    size_t n = 0;
    char driver[64];
    const char *used = NULL;
    gp_error err;
    CHECK_INT(gp_list_devices(&o, &devs, &n, driver, sizeof driver, &used, &err), GP_OK);
    CHECK_INT(n, 2);
    CHECK_STR(used, "smi");
    CHECK_STR(driver, "590.48.01");
    if (devs && n == 2) {
        CHECK_STR(devs[0].name, "NVIDIA H100 80GB HBM3");
        CHECK_STR(devs[1].name, "NVIDIA GeForce RTX 4080 SUPER");
        CHECK_STR(devs[1].uuid, "GPU-00000000-0000-0000-0000-000000000001");
        CHECK_U64(devs[1].mem_total_bytes, 16376ull * MIB);
    }
    gp_devices_free(devs);

    scenario(H100, "driver");
    devs = NULL;
    CHECK_INT(gp_list_devices(&o, &devs, &n, driver, sizeof driver, &used, &err),
              GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(err.message, "couldn't communicate with the NVIDIA driver");
    CHECK(no_children());
}

/* NVML initialises but lists no GPU (issue 33): not strict, auto samples
 * with smi, else none, and a forced nvml none, each saying why; strict, the
 * error says so (it once said "0 devices (0-4294967295)"). */
static void test_nvml_sees_no_gpu(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/nvml_no_devices.txt", source_dir);
    setenv("FAKE_NVML_SCENARIO", path, 1);
    scenario(H100, NULL);
    gp_options o;
    options(&o);
    o.backend = GP_BACKEND_AUTO;
    o.strict = 0;
    o.report = GP_REPORT_NONE;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_STR(gp_monitor_backend(m), "smi");
    CHECK_STR(gp_monitor_note(m), "nvml sees no GPU: sampled with smi");
    CHECK_INT(gp_monitor_device_count(m), 1);
    gp_monitor_destroy(m);

    o.smi_path = "/nonexistent/nvidia-smi";
    m = NULL;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_STR(gp_monitor_backend(m), "none");
    CHECK_CONTAINS(gp_monitor_note(m),
                   "no GPU backend, nothing was sampled: nvml sees no GPU; smi: ");
    CHECK_CONTAINS(gp_monitor_note(m), "/nonexistent/nvidia-smi");
    gp_monitor_destroy(m);

    /* The profiled call runs, unsampled, and its summary says why. */
    o.backend = GP_BACKEND_NVML;
    int value = 5;
    gp_profiled_result r;
    CHECK_INT(gp_profile_call(&o, run_value, &value, &r, &err), GP_OK);
    CHECK_INT(r.value, 5);
    CHECK_INT(r.n_gpus, 1);
    CHECK_STR(r.gpu.backend, "none");
    CHECK_STR(r.gpu.note, "no GPU backend, nothing was sampled: nvml sees no GPU");
    gp_profiled_result_free(&r);

    o.strict = 1;
    m = (gp_monitor *)1;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK(m == NULL);
    CHECK_STR(err.message, "nvml sees no GPU: check that the driver is loaded and the device is "
                           "visible (CUDA_VISIBLE_DEVICES, container --gpus)");
    unsetenv("FAKE_NVML_SCENARIO");
}

int main(void)
{
    fake_smi = check_env("GP_TEST_FAKE_SMI");
    source_dir = check_env("GP_TEST_SOURCE_DIR");
    test_h100_summary();
    test_mig_and_several();
    test_producer_dies();
    test_silent_producer();
    test_gate_drops_rounds();
    test_list_devices();
    test_nvml_sees_no_gpu();
    return check_done("test_smi_monitor");
}
