/*
 * test_nvml_gpm.c - GPM (nvmlGpm*) in the NVML backend, against the fake
 * libnvidia-ml (tests/fakes/fake_nvml.c; scenarios nvml_gpm*.txt).
 *
 * Checks exact values and valid bits between consecutive samples, the
 * first sample of a run without GPM metrics, a metric the device does not
 * report, a device without GPM, an old driver without the symbols, the
 * samples handed back to NVML at stop, GPU_IS_LOST in nvmlGpmSampleGet,
 * and a region through the public monitor API.
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "util/error.h"
#include "gpu_profile.h"
#include "sampler/nvml_open.h"

#include <time.h>
#include <unistd.h>

static const char *src_dir;
static const char *fake_new;
static const char *fake_old;
static char stats_path[512];

static gp_status read_slot(void *ctx, size_t slot, gp_device_sample *s, gp_error *err)
{
    gp_error_clear(err);
    memset(s, 0xa5, sizeof *s); /* read() must set every field */
    return gp_backend_nvml.read(ctx, slot, 0, s, err);
}

static char *stats_end(void)
{
    unsetenv("FAKE_NVML_STATS");
    char *text = check_read_file(stats_path, NULL);
    CHECK(text != NULL);
    return text;
}

#define GPM_REPORTED (GP_M_GPM_ALL & ~GP_M_GPM(GP_GPM_TENSOR_DFMA) & ~GP_M_GPM(GP_GPM_TENSOR_IMMA))

static void test_values(void)
{
    unlink(stats_path);
    setenv("FAKE_NVML_STATS", stats_path, 1);
    unsigned idx[2] = {0, 1};
    void *ctx = nvml_open_start(src_dir, "nvml_gpm.txt", fake_new, idx, 2);
    if (!ctx)
        return;
    gp_device_sample s;
    gp_error err;
    /* The first sample of a run: nothing to compute GPM metrics against. */
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
    CHECK_INT(s.valid & GP_M_GPM_ALL, 0);
    CHECK(s.valid & GP_M_UTIL_GPU);
    for (int i = 0; i < GP_GPM_COUNT; i++)
        CHECK_NEAR(s.gpm[i], 0.0, 0);
    static const double sm[] = {30, 40, 50, 50}, tensor[] = {10, 20, 30, 30};
    static const double dram[] = {60, 70, 80, 80}, occ[] = {100, 20, 20, 20};
    static const double tx[] = {1048576, 2097152, 3145728, 3145728}; /* 1, 2, 3 MiB/s */
    for (int n = 0; n < 4; n++) {
        CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
        CHECK_INT(s.valid & GP_M_GPM_ALL, GPM_REPORTED);
        CHECK_NEAR(s.gpm[GP_GPM_SM_ACTIVE], sm[n], 0);
        CHECK_NEAR(s.gpm[GP_GPM_SM_OCCUPANCY], occ[n], 0); /* 101 is clamped to 100 */
        CHECK_NEAR(s.gpm[GP_GPM_TENSOR_ACTIVE], tensor[n], 0);
        CHECK_NEAR(s.gpm[GP_GPM_TENSOR_HMMA], 12, 0);
        CHECK_NEAR(s.gpm[GP_GPM_TENSOR_DFMA], 0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_DRAM_ACTIVE], dram[n], 0);
        CHECK_NEAR(s.gpm[GP_GPM_FP64_ACTIVE], 1, 0);
        CHECK_NEAR(s.gpm[GP_GPM_FP32_ACTIVE], 20, 0);
        CHECK_NEAR(s.gpm[GP_GPM_FP16_ACTIVE], 5, 0);
        CHECK_NEAR(s.gpm[GP_GPM_PCIE_TX], tx[n], 0);
        CHECK_NEAR(s.gpm[GP_GPM_PCIE_RX], 2000 * 1048576.0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_NVLINK_TX], 0, 0); /* reported as 0: a real 0 */
        CHECK_NEAR(s.gpm[GP_GPM_NVLINK_RX], 5000 * 1048576.0, 0);
        /* A device without GPM: never a GPM bit, never a value. */
        CHECK_INT(read_slot(ctx, 1, &s, &err), GP_OK);
        CHECK_INT(s.valid & GP_M_GPM_ALL, 0);
        CHECK_NEAR(s.gpm[GP_GPM_SM_ACTIVE], 0, 0);
    }
    /* A second run starts a new pair: its first read has no GPM metrics. */
    gp_backend_nvml.stop(ctx);
    CHECK_INT(gp_backend_nvml.start(ctx, idx, 1, 100000000ull, &err), GP_OK);
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
    CHECK_INT(s.valid & GP_M_GPM_ALL, 0);
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
    CHECK_INT(s.valid & GP_M_GPM_ALL, GPM_REPORTED);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
    char *stats = stats_end();
    if (stats) {
        /* Two samples per run with GPM (two runs), every one handed back. */
        CHECK_CONTAINS(stats, "nvmlGpmSampleAlloc 4\n");
        CHECK_CONTAINS(stats, "nvmlGpmSampleFree 4\n");
        CHECK_CONTAINS(stats, "gpm_samples_live 0\n");
        CHECK_CONTAINS(stats, "nvmlGpmSampleGet 7\n");
        CHECK_CONTAINS(stats, "nvmlGpmMetricsGet 5\n");
        CHECK_CONTAINS(stats, "device 1 gpm_query 1\n");
        CHECK(strstr(stats, "device 1 gpm_sample") == NULL);
        free(stats);
    }
}

/* A run closed without stop() still hands its samples back. */
static void test_close_without_stop(void)
{
    unlink(stats_path);
    setenv("FAKE_NVML_STATS", stats_path, 1);
    unsigned idx[1] = {0};
    void *ctx = nvml_open_start(src_dir, "nvml_gpm.txt", fake_new, idx, 1);
    if (!ctx)
        return;
    gp_device_sample s;
    gp_error err;
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
    gp_backend_nvml.close(ctx);
    char *stats = stats_end();
    if (stats) {
        CHECK_CONTAINS(stats, "gpm_samples_live 0\n");
        free(stats);
    }
}

/* A driver from before GPM: no symbols, no GPM, no error. */
static void test_old_driver(void)
{
    unsigned idx[1] = {0};
    void *ctx = nvml_open_start(src_dir, "nvml_gpm.txt", fake_old, idx, 1);
    if (!ctx)
        return;
    gp_device_sample s;
    gp_error err;
    for (int i = 0; i < 3; i++) {
        CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
        CHECK_INT(s.valid & GP_M_GPM_ALL, 0);
        CHECK(s.valid & GP_M_UTIL_GPU);
    }
    gp_backend_nvml.close(ctx);
}

static void test_lost(void)
{
    unsigned idx[1] = {0};
    void *ctx = nvml_open_start(src_dir, "nvml_gpm_lost.txt", fake_new, idx, 1);
    if (!ctx)
        return;
    gp_device_sample s;
    gp_error err;
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_OK);
    CHECK_INT(s.valid & GP_M_GPM_ALL, GP_M_GPM_ALL);
    CHECK_NEAR(s.gpm[GP_GPM_SM_ACTIVE], 38, 0); /* the fake's defaults */
    CHECK_NEAR(s.gpm[GP_GPM_DRAM_ACTIVE], 61, 0);
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_ERR_DEVICE_LOST);
    CHECK_INT(s.valid, 0);
    CHECK_STR(err.message, "nvml: device 0 (NVIDIA H100 80GB HBM3): GPU is lost "
                           "(nvmlGpmSampleGet returned 15)");
    gp_backend_nvml.close(ctx);
}

/* A region through the public API: GPM statistics for device 0 only. */
static void test_monitor(void)
{
    nvml_use_scenario(src_dir, "nvml_gpm.txt");
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.device = GP_ALL_DEVICES;
    o.interval_s = 0.005;
    o.nvml_library = fake_new;
    o.report = GP_REPORT_NONE;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    gp_monitor_stats st;
    while (gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < 6) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s0 = gp_monitor_summary(m, 0), *s1 = gp_monitor_summary(m, 1);
    CHECK(s0 && s1);
    if (s0 && s1) {
        CHECK_INT(s0->valid & GP_M_GPM_ALL, GPM_REPORTED);
        CHECK_NEAR(s0->gpm_max[GP_GPM_SM_ACTIVE], 50, 0);
        CHECK_NEAR(s0->gpm_p95[GP_GPM_SM_ACTIVE], 50, 0);
        CHECK_NEAR(s0->gpm_max[GP_GPM_NVLINK_RX], 5000 * 1048576.0, 0);
        CHECK_NEAR(s0->gpm_mean[GP_GPM_FP32_ACTIVE], 20, 0);
        CHECK_INT(s1->valid & GP_M_GPM_ALL, 0);
        char text[4096];
        gp_summary_format(s0, GP_FMT_ASCII, text, sizeof text);
        CHECK_CONTAINS(text, "  activity          util.gpu 42 % | SM active ");
        gp_summary_format(s1, GP_FMT_ASCII, text, sizeof text);
        CHECK(strstr(text, "SM active") == NULL);
        gp_summary_to_json(s1, 0, text, sizeof text);
        CHECK_CONTAINS(text, ",\"gpm\":null,\"mig\":null}");
    }
    gp_monitor_destroy(m);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    fake_new = check_env("GP_TEST_FAKE_NVML");
    fake_old = check_env("GP_TEST_FAKE_NVML_OLD");
    nvml_stats_path(stats_path, sizeof stats_path, "gpm");
    unsetenv("FAKE_NVML_STATS");
    test_values();
    test_close_without_stop();
    test_old_driver();
    test_lost();
    test_monitor();
    unlink(stats_path);
    return check_done("test_nvml_gpm");
}
