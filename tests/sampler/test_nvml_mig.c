/*
 * test_nvml_mig.c - MIG instances in the NVML backend, against the fake
 * libnvidia-ml (tests/fakes/fake_nvml.c; scenario nvml_mig.txt).
 *
 * Checks the device list (whole GPUs first, then each MIG instance with its
 * parent, profile and GPU / compute instance ids), the exact values and
 * valid bits of an instance's samples (memory only: the rest is the
 * parent's, n/a on the instance), a library without the MIG calls, a
 * region through the public API with an instance's summary, its text and
 * JSON, and GPM per instance (nvmlGpmMigSampleGet on the parent, by GPU
 * instance id; n/a where NVML answers NOT_SUPPORTED).
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

static void *open_ok(const char *lib)
{
    return nvml_open(src_dir, "nvml_mig.txt", lib);
}

static void check_instance(void *ctx, unsigned index, const char *name, const char *uuid,
                           const char *profile, int gi, uint64_t mem_total)
{
    gp_device_info d;
    gp_error err;
    gp_error_clear(&err);
    CHECK_INT(gp_backend_nvml.device_info(ctx, index, &d, &err), GP_OK);
    CHECK_INT(d.index, index);
    CHECK_STR(d.name, name);
    CHECK_STR(d.uuid, uuid);
    CHECK_INT(d.mig.is_mig, 1);
    CHECK_INT(d.mig.parent_index, 0);
    CHECK_STR(d.mig.parent_uuid, "GPU-00000000-0000-0000-0000-000000000000");
    CHECK_STR(d.mig.parent_name, "NVIDIA H100 80GB HBM3");
    CHECK_STR(d.mig.profile, profile);
    CHECK_INT(d.mig.gpu_instance_id, gi);
    CHECK_INT(d.mig.compute_instance_id, 0);
    CHECK_INT(d.valid, GP_M_MEM_TOTAL);
    CHECK_U64(d.mem_total_bytes, mem_total);
}

static void test_devices(void)
{
    void *ctx = open_ok(fake_new);
    if (!ctx)
        return;
    gp_error err;
    unsigned count = 0;
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
    CHECK_INT(count, 5); /* 2 GPUs, then GPU 0's 3 instances */
    gp_device_info d;
    for (unsigned i = 0; i < 2; i++) {
        CHECK_INT(gp_backend_nvml.device_info(ctx, i, &d, &err), GP_OK);
        CHECK_STR(d.name, "NVIDIA H100 80GB HBM3");
        CHECK_INT(d.mig.is_mig, 0);
        CHECK_STR(d.mig.parent_uuid, "");
    }
    check_instance(ctx, 2, "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
                   "MIG-00000000-0000-0000-0000-000000000000", "3g.40gb", 2, 42412802048ull);
    check_instance(ctx, 3, "NVIDIA H100 80GB HBM3 MIG 2g.20gb",
                   "MIG-00000001-0000-0000-0000-000000000001", "2g.20gb", 3, 21072183296ull);
    check_instance(ctx, 4, "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
                   "MIG-00000003-0000-0000-0000-000000000003", "1g.10gb", 10, 10468982784ull);
    gp_error_clear(&err);
    CHECK_INT(gp_backend_nvml.device_info(ctx, 5, &d, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_STR(err.message, "nvml: device 5 does not exist: 5 devices (0-4; MIG instances from 2)");
    gp_backend_nvml.close(ctx);
}

static void test_samples(void)
{
    void *ctx = open_ok(fake_new);
    if (!ctx)
        return;
    gp_error err;
    unsigned count = 0;
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
    unsigned idx[2] = {0, 4};
    CHECK_INT(gp_backend_nvml.start(ctx, idx, 2, 100000000ull, &err), GP_OK);
    static const uint64_t used4[] = {9437184, 10485760, 10485760};
    for (unsigned n = 0; n < 3; n++) {
        gp_device_sample s;
        memset(&s, 0xa5, sizeof s);
        gp_error_clear(&err);
        CHECK_INT(gp_backend_nvml.read(ctx, 0, 0, &s, &err), GP_OK);
        /* The parent: power, temperature, clocks; no utilisation in MIG mode. */
        CHECK(!(s.valid & GP_M_UTIL_GPU));
        CHECK(s.valid & GP_M_POWER);
        CHECK_INT(s.power_mw, 432000);
        CHECK_INT(s.temp_c, 52);
        memset(&s, 0xa5, sizeof s);
        CHECK_INT(gp_backend_nvml.read(ctx, 1, 0, &s, &err), GP_OK);
        /* The instance: its own memory, nothing else. */
        CHECK_INT(s.valid, GP_M_MEM_USED | GP_M_MEM_TOTAL);
        CHECK_U64(s.mem_used_bytes, used4[n]);
        CHECK_U64(s.mem_total_bytes, 10468982784ull);
    }
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

/* GPM per MIG instance (scenario nvml_mig_gpm.txt): sampled on the parent
 * with the instance's GPU instance id (nvmlGpmMigSampleGet), the metrics
 * between two samples the instance's own; an instance whose GI answers
 * NOT_SUPPORTED has GPM n/a, never 0. */
static void test_gpm(void)
{
    char stats_path[512];
    nvml_stats_path(stats_path, sizeof stats_path, "mig-gpm");
    unlink(stats_path);
    setenv("FAKE_NVML_STATS", stats_path, 1);
    void *ctx = nvml_open(src_dir, "nvml_mig_gpm.txt", fake_new);
    if (!ctx)
        return;
    gp_error err;
    unsigned count = 0, idx[2] = {1, 2};
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK); /* lists the instances */
    CHECK_INT(count, 3);
    CHECK_INT(gp_backend_nvml.start(ctx, idx, 2, 100000000ull, &err), GP_OK);
    const uint32_t reported = GP_M_GPM_ALL & ~GP_M_GPM(GP_GPM_TENSOR_DFMA) &
                              ~GP_M_GPM(GP_GPM_TENSOR_IMMA) & ~GP_M_GPM(GP_GPM_NVLINK_TX) &
                              ~GP_M_GPM(GP_GPM_NVLINK_RX);
    static const double sm[] = {0, 30, 45, 45}, dram[] = {0, 55, 65, 65};
    for (int n = 0; n < 4; n++) {
        gp_device_sample s;
        memset(&s, 0xa5, sizeof s);
        gp_error_clear(&err);
        CHECK_INT(gp_backend_nvml.read(ctx, 0, 0, &s, &err), GP_OK);
        /* The first sample of the run has nothing to compare with. */
        CHECK_INT(s.valid, GP_M_MEM_USED | GP_M_MEM_TOTAL | (n ? reported : 0));
        CHECK_U64(s.mem_used_bytes, 1048576);
        CHECK_NEAR(s.gpm[GP_GPM_SM_ACTIVE], sm[n], 0);
        CHECK_NEAR(s.gpm[GP_GPM_DRAM_ACTIVE], dram[n], 0);
        CHECK_NEAR(s.gpm[GP_GPM_SM_OCCUPANCY], n ? 12 : 0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_TENSOR_HMMA], n ? 7 : 0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_FP64_ACTIVE], 0, 0); /* a measured 0 (bit set) */
        CHECK_NEAR(s.gpm[GP_GPM_FP32_ACTIVE], n ? 20 : 0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_PCIE_TX], n ? 4 * 1048576.0 : 0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_PCIE_RX], n ? 8 * 1048576.0 : 0, 0);
        CHECK_NEAR(s.gpm[GP_GPM_NVLINK_TX], 0, 0);
        /* GI 9 has no GPM: memory only. */
        memset(&s, 0xa5, sizeof s);
        CHECK_INT(gp_backend_nvml.read(ctx, 1, 0, &s, &err), GP_OK);
        CHECK_INT(s.valid, GP_M_MEM_USED | GP_M_MEM_TOTAL);
        CHECK_NEAR(s.gpm[GP_GPM_SM_ACTIVE], 0, 0);
    }
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
    unsetenv("FAKE_NVML_STATS");
    char *stats = check_read_file(stats_path, NULL);
    CHECK(stats != NULL);
    if (stats) {
        /* 4 reads of GI 2 plus 4 refused for GI 9; never the whole-GPU call. */
        CHECK_CONTAINS(stats, "nvmlGpmMigSampleGet 8\n");
        CHECK(strstr(stats, "nvmlGpmSampleGet ") == NULL);
        CHECK_CONTAINS(stats, "nvmlGpmMetricsGet 3\n");
        CHECK_CONTAINS(stats, "device 0 gpm_query 2\n"); /* asked of the parent */
        CHECK_CONTAINS(stats, "device 1 gpm_sample 4\n");
        CHECK(strstr(stats, "device 2 gpm_sample") == NULL);
        CHECK_CONTAINS(stats, "gpm_samples_live 0\n");
        free(stats);
    }
    unlink(stats_path);
}

/* A library without the MIG calls lists the whole GPUs only. */
static void test_old_driver(void)
{
    void *ctx = open_ok(fake_old);
    if (!ctx)
        return;
    gp_error err;
    unsigned count = 0;
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
    CHECK_INT(count, 2);
    gp_device_info d;
    CHECK_INT(gp_backend_nvml.device_info(ctx, 0, &d, &err), GP_OK);
    CHECK_INT(d.mig.is_mig, 0);
    gp_backend_nvml.close(ctx);
}

/* gp_list_devices and a region over the parent and one instance. */
static void test_monitor(void)
{
    nvml_use_scenario(src_dir, "nvml_mig.txt");
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = fake_new;
    o.report = GP_REPORT_NONE;
    gp_device_info *list = NULL;
    size_t n = 0;
    char driver[64];
    const char *be = NULL;
    gp_error err;
    CHECK_INT(gp_list_devices(&o, &list, &n, driver, sizeof driver, &be, &err), GP_OK);
    CHECK_INT(n, 5);
    if (list && n == 5) {
        CHECK_STR(list[3].uuid, "MIG-00000001-0000-0000-0000-000000000001");
        CHECK_INT(list[3].mig.gpu_instance_id, 3);
    }
    gp_devices_free(list);

    unsigned devs[2] = {0, 2};
    o.devices = devs;
    o.n_devices = 2;
    o.interval_s = 0.005;
    gp_monitor *m = NULL;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    gp_monitor_stats st;
    while (gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < 3) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s = gp_monitor_summary(m, 1);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->device_index, 2);
        CHECK_INT(s->mig.is_mig, 1);
        CHECK_STR(s->mig.profile, "3g.40gb");
        CHECK_INT(s->valid, GP_M_MEM_USED | GP_M_MEM_TOTAL);
        CHECK_U64(s->mem_used_max_bytes, 11629756416ull);
        char text[4096];
        gp_summary_format(s, GP_FMT_ASCII, text, sizeof text);
        CHECK_CONTAINS(text, "GPU 2  MIG 3g.40gb (GI 2 CI 0) of GPU 0 NVIDIA H100 80GB HBM3\n"
                             "       MIG-00000000-0000-0000-0000-000000000000  [nvml]\n");
        gp_summary_to_json(s, 0, text, sizeof text);
        CHECK_CONTAINS(text, "\"mig\":{\"profile\":\"3g.40gb\",\"gpu_instance_id\":2,"
                             "\"compute_instance_id\":0,\"parent_index\":0,\"parent_uuid\":"
                             "\"GPU-00000000-0000-0000-0000-000000000000\",\"parent_name\":"
                             "\"NVIDIA H100 80GB HBM3\"}");
        const gp_summary *p = gp_monitor_summary(m, 0);
        gp_summary_to_json(p, 0, text, sizeof text);
        CHECK_CONTAINS(text, "\"mig\":null");
    }
    gp_monitor_destroy(m);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    fake_new = check_env("GP_TEST_FAKE_NVML");
    fake_old = check_env("GP_TEST_FAKE_NVML_OLD");
    unsetenv("FAKE_NVML_STATS");
    test_devices();
    test_samples();
    test_old_driver();
    test_monitor();
    test_gpm();
    return check_done("test_nvml_mig");
}
