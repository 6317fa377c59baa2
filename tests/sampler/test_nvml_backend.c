/*
 * test_nvml_backend.c - the NVML backend against the fake libnvidia-ml
 * (tests/fakes/fake_nvml.c, scenarios in tests/scenarios/nvml_*.txt).
 *
 * Drives gp_backend_nvml through its function pointers and checks exact
 * values, units, valid bits, status codes and messages: every metric,
 * "unavailable" codes, the old-driver symbol fallbacks, the v2 / V struct
 * versions (the fake declares its structs independently, so the values only
 * come through exactly when both sides agree on the layout), library and
 * init failures, device indices, GPU_IS_LOST on one device while another
 * keeps reading, other error codes, shutdown, and one run through the
 * public monitor API.
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "util/clock.h"
#include "util/error.h"
#include "gpu_profile.h"
#include "sampler/nvml_open.h"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

static const char *src_dir;
static const char *fake_new;
static const char *fake_old;
static char stats_path[512];

#define ALL_BUT_PCIE                                                                               \
    (GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER | GP_M_ENERGY |   \
     GP_M_TEMP | GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE)
#define PCIE (GP_M_PCIE_TX | GP_M_PCIE_RX)

static void use_scenario(const char *name)
{
    static char path[1024];
    if (!name) {
        unsetenv("FAKE_NVML_SCENARIO");
        return;
    }
    snprintf(path, sizeof path, "%s/scenarios/%s", src_dir, name);
    setenv("FAKE_NVML_SCENARIO", path, 1);
}

static gp_backend_config config(const char *lib, int pcie)
{
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.nvml_library = lib;
    cfg.sample_pcie = pcie;
    cfg.timeout_ns = 5000000000ull;
    return cfg;
}

/* Opens the backend on a scenario; NULL (and a failed check) on error. */
static void *open_ok(const char *scenario, const char *lib, int pcie)
{
    use_scenario(scenario);
    gp_backend_config cfg = config(lib, pcie);
    void *ctx = NULL;
    gp_error err;
    gp_error_clear(&err);
    gp_status st = gp_backend_nvml.open(&cfg, &ctx, &err);
    CHECK_INT(st, GP_OK);
    if (st != GP_OK)
        fprintf(stderr, "  open(%s): %s\n", scenario ? scenario : "default", err.message);
    return st == GP_OK ? ctx : NULL;
}

static gp_status open_fails(const char *scenario, const char *lib, gp_error *err)
{
    use_scenario(scenario);
    gp_backend_config cfg = config(lib, 0);
    void *ctx = (void *)1;
    gp_error_clear(err);
    gp_status st = gp_backend_nvml.open(&cfg, &ctx, err);
    CHECK(st != GP_OK);
    CHECK(ctx == NULL);
    CHECK_INT(err->status, st);
    CHECK(strncmp(err->message, "nvml: ", 6) == 0);
    if (st == GP_OK)
        gp_backend_nvml.close(ctx);
    return st;
}

static void start_ok(void *ctx, const unsigned *idx, size_t n)
{
    gp_error err;
    gp_error_clear(&err);
    gp_status st = gp_backend_nvml.start(ctx, idx, n, 100000000ull, &err);
    CHECK_INT(st, GP_OK);
    if (st != GP_OK)
        fprintf(stderr, "  start: %s\n", err.message);
}

static gp_status read_slot(void *ctx, size_t slot, gp_device_sample *s, gp_error *err)
{
    gp_error_clear(err);
    memset(s, 0xa5, sizeof *s); /* read() must set every field */
    return gp_backend_nvml.read(ctx, slot, GP_READ_ENERGY, s, err);
}

static void read_ok(void *ctx, size_t slot, gp_device_sample *s)
{
    gp_error err;
    gp_status st = read_slot(ctx, slot, s, &err);
    CHECK_INT(st, GP_OK);
    if (st != GP_OK)
        fprintf(stderr, "  read(%zu): %s\n", slot, err.message);
}

static void close_ctx(void *ctx)
{
    if (!ctx)
        return;
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.stop(ctx); /* idempotent */
    gp_backend_nvml.close(ctx);
}

/* The fake's call counts, written at its final nvmlShutdown. */
static void stats_begin(void)
{
    unlink(stats_path);
    setenv("FAKE_NVML_STATS", stats_path, 1);
}

static char *stats_end(void)
{
    unsetenv("FAKE_NVML_STATS");
    char *text = check_read_file(stats_path, NULL);
    CHECK(text != NULL);
    return text;
}

/* ------------------------------------------------------------------ tests */

static void test_interface(void)
{
    CHECK_STR(gp_backend_nvml.name, "nvml");
    CHECK_INT(gp_backend_nvml.self_paced, 0);
    CHECK(gp_backend_nvml.open && gp_backend_nvml.close && gp_backend_nvml.device_count &&
          gp_backend_nvml.device_info && gp_backend_nvml.driver_version && gp_backend_nvml.start &&
          gp_backend_nvml.read && gp_backend_nvml.stop);
    CHECK(gp_backend_nvml.wait_tick == NULL);
    CHECK(gp_backend_nvml.interrupt &&
          gp_backend_nvml.read_round_at); /* cancels a round posted ahead */
    CHECK(gp_backend_for(GP_BACKEND_NVML) == &gp_backend_nvml);
    gp_backend_nvml.close(NULL); /* NULL-safe */
}

/* No scenario, no nvml_library: the default dlopen search finds the fake on
 * LD_LIBRARY_PATH and it shows one device with constant values. */
static void test_default_device(void)
{
    void *ctx = open_ok(NULL, NULL, 0);
    if (!ctx)
        return;
    unsigned count = 99;
    gp_error err;
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
    CHECK_INT(count, 1);
    gp_device_info info;
    CHECK_INT(gp_backend_nvml.device_info(ctx, 0, &info, &err), GP_OK);
    CHECK_INT(info.index, 0);
    CHECK_STR(info.name, "Fake NVIDIA GPU");
    CHECK_STR(info.uuid, "GPU-fa4e0000-0000-0000-0000-000000000000");
    CHECK_INT(info.valid, GP_M_MEM_TOTAL);
    CHECK_U64(info.mem_total_bytes, 85899345920ull);
    char ver[64] = "x";
    CHECK_INT(gp_backend_nvml.driver_version(ctx, ver, sizeof ver, &err), GP_OK);
    CHECK_STR(ver, "999.99.99");

    unsigned idx[1] = {0};
    start_ok(ctx, idx, 1);
    gp_device_sample s;
    for (int i = 0; i < 3; i++) {
        read_ok(ctx, 0, &s);
        CHECK_INT(s.valid, ALL_BUT_PCIE);
        CHECK_INT(s.util_gpu_pct, 42);
        CHECK_INT(s.util_mem_pct, 17);
        CHECK_U64(s.mem_used_bytes, 1073741824ull);
        CHECK_U64(s.mem_total_bytes, 85899345920ull);
        CHECK_INT(s.power_mw, 75000);
        CHECK_U64(s.energy_mj, 123456789ull);
        CHECK_INT(s.temp_c, 35);
        CHECK_INT(s.clock_sm_mhz, 1980);
        CHECK_INT(s.clock_mem_mhz, 2619);
        CHECK_U64(s.throttle_reasons, GP_THROTTLE_GPU_IDLE);
        CHECK_INT(s.pcie_tx_kbps, 0);
        CHECK_INT(s.pcie_rx_kbps, 0);
    }
    close_ctx(ctx);
}

static void check_metrics_read(const gp_device_sample *s, unsigned n, int pcie)
{
    static const unsigned util_gpu[] = {10, 20, 30, 100};
    static const unsigned util_mem[] = {5, 6, 7, 7};
    static const uint64_t mem_used[] = {1048576, 2097152, 3145728, 3145728};
    static const unsigned power_mw[] = {71234, 150500, 699999, 699999};
    static const uint64_t energy_mj[] = {1000, 2000, 4500, 4500};
    static const int temp_c[] = {31, 45, -3, -3};
    static const unsigned clock_sm[] = {345, 1980, 1980, 1980};
    static const uint64_t throttle[] = {0x1, 0x24, 0x100, 0x100};
    static const unsigned pcie_tx[] = {100, 200, 200, 200};
    static const unsigned pcie_rx[] = {300, 400, 400, 400};
    CHECK_INT(s->valid, ALL_BUT_PCIE | (pcie ? PCIE : 0));
    CHECK_INT(s->util_gpu_pct, util_gpu[n]);
    CHECK_INT(s->util_mem_pct, util_mem[n]);
    /* v2: used without the 562036736 reserved bytes. */
    CHECK_U64(s->mem_used_bytes, mem_used[n]);
    CHECK_U64(s->mem_total_bytes, 85520809984ull);
    CHECK_INT(s->power_mw, power_mw[n]);
    CHECK_U64(s->energy_mj, energy_mj[n]);
    CHECK_INT(s->temp_c, temp_c[n]);
    CHECK_INT(s->clock_sm_mhz, clock_sm[n]);
    CHECK_INT(s->clock_mem_mhz, 2619);
    CHECK_U64(s->throttle_reasons, throttle[n]);
    CHECK_INT(s->pcie_tx_kbps, pcie ? pcie_tx[n] : 0);
    CHECK_INT(s->pcie_rx_kbps, pcie ? pcie_rx[n] : 0);
}

/* Every metric and its unit, read for read; also the struct layouts: the
 * memory v2 and temperature V values only come through exactly when the
 * backend's version words and offsets match the fake's own declarations. */
static void test_metrics(int pcie)
{
    stats_begin();
    void *ctx = open_ok("nvml_metrics.txt", fake_new, pcie);
    if (!ctx)
        return;
    unsigned idx[2] = {0, 1};
    start_ok(ctx, idx, 2);
    gp_device_sample s;
    for (unsigned n = 0; n < 4; n++) {
        read_ok(ctx, 0, &s);
        check_metrics_read(&s, n, pcie);
        read_ok(ctx, 1, &s); /* defaults, unaffected by device 0's sequences */
        CHECK_INT(s.valid, ALL_BUT_PCIE | (pcie ? PCIE : 0));
        CHECK_INT(s.util_gpu_pct, 42);
        CHECK_U64(s.mem_used_bytes, 1073741824ull);
        CHECK_INT(s.pcie_tx_kbps, pcie ? 1000 : 0);
        CHECK_INT(s.pcie_rx_kbps, pcie ? 2000 : 0);
    }
    close_ctx(ctx);
    char *st = stats_end();
    /* The newest symbols were the ones used, PCIe only when asked for, and
     * NVML was shut down once. */
    CHECK_CONTAINS(st, "\nnvmlInit_v2 1\n");
    CHECK_CONTAINS(st, "\nnvmlShutdown 1\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetCount_v2 ");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetHandleByIndex_v2 2\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetMemoryInfo_v2 8\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetTemperatureV 8\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetCurrentClocksEventReasons 8\n");
    CHECK(st && !strstr(st, "\nnvmlInit "));
    CHECK(st && !strstr(st, "\nnvmlDeviceGetMemoryInfo "));
    CHECK(st && !strstr(st, "\nnvmlDeviceGetTemperature "));
    CHECK(st && !strstr(st, "ThrottleReasons"));
    if (pcie)
        CHECK_CONTAINS(st, "\nnvmlDeviceGetPcieThroughput 16\n");
    else
        CHECK(st && !strstr(st, "PcieThroughput"));
    free(st);
}

static void test_device_info(void)
{
    void *ctx = open_ok("nvml_metrics.txt", fake_new, 0);
    if (!ctx)
        return;
    gp_error err;
    unsigned count = 0;
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
    CHECK_INT(count, 2);
    gp_device_info info;
    memset(&info, 0xa5, sizeof info);
    CHECK_INT(gp_backend_nvml.device_info(ctx, 1, &info, &err), GP_OK);
    CHECK_INT(info.index, 1);
    CHECK_STR(info.name, "NVIDIA H100 80GB HBM3");
    CHECK_STR(info.uuid, "GPU-7b2f2a5f-1d8e-4d54-8b63-4c9b2e3f7a12");
    CHECK_INT(info.valid, GP_M_MEM_TOTAL);
    CHECK_U64(info.mem_total_bytes, 85899345920ull);
    CHECK_INT(gp_backend_nvml.device_info(ctx, 0, &info, &err), GP_OK);
    CHECK_STR(info.uuid, "GPU-5a1e1f4e-0c7d-4c43-9a52-3b8a1d2e6f01");
    CHECK_U64(info.mem_total_bytes, 85520809984ull);
    char ver[64];
    CHECK_INT(gp_backend_nvml.driver_version(ctx, ver, sizeof ver, &err), GP_OK);
    CHECK_STR(ver, "550.54.15");
    char small[4];
    CHECK_INT(gp_backend_nvml.driver_version(ctx, small, sizeof small, &err), GP_OK);
    CHECK_STR(small, "550"); /* truncated, terminated */
    close_ctx(ctx);
}

/* The old driver has no _v2 / V / EventReasons / energy symbols. */
static void test_old_driver(void)
{
    stats_begin();
    void *ctx = open_ok("nvml_metrics.txt", fake_old, 1);
    if (!ctx)
        return;
    gp_error err;
    unsigned count = 0;
    CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
    CHECK_INT(count, 2);
    unsigned idx[1] = {0};
    start_ok(ctx, idx, 1);
    static const int temp_c[] = {31, 45, 0, 0}; /* unsigned call: -3 reads 0 */
    static const uint64_t mem_used[] = {1048576, 2097152, 3145728, 3145728};
    static const unsigned util_gpu[] = {10, 20, 30, 100};
    static const uint64_t throttle[] = {0x1, 0x24, 0x100, 0x100};
    static const unsigned pcie_rx[] = {300, 400, 400, 400};
    gp_device_sample s;
    for (unsigned n = 0; n < 4; n++) {
        read_ok(ctx, 0, &s);
        CHECK_INT(s.valid, (ALL_BUT_PCIE | PCIE) & ~GP_M_ENERGY);
        CHECK_U64(s.energy_mj, 0);
        CHECK_INT(s.temp_c, temp_c[n]);
        /* v1: used includes the reserved memory. */
        CHECK_U64(s.mem_used_bytes, mem_used[n] + 562036736ull);
        CHECK_U64(s.mem_total_bytes, 85520809984ull);
        CHECK_INT(s.util_gpu_pct, util_gpu[n]);
        CHECK_U64(s.throttle_reasons, throttle[n]);
        CHECK_INT(s.pcie_rx_kbps, pcie_rx[n]);
    }
    close_ctx(ctx);
    char *st = stats_end();
    CHECK_CONTAINS(st, "\nnvmlInit 1\n");
    CHECK_CONTAINS(st, "\nnvmlShutdown 1\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetCount ");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetHandleByIndex 1\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetMemoryInfo 4\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetTemperature 4\n");
    CHECK_CONTAINS(st, "\nnvmlDeviceGetCurrentClocksThrottleReasons 4\n");
    free(st);

    gp_status rc = open_fails("nvml_init_error.txt", fake_old, &err);
    CHECK_INT(rc, GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(err.message, "nvml: nvmlInit failed: Driver Not Loaded (NVML error 9): the NVIDIA "
                           "kernel driver is not loaded (is there a GPU? see dmesg)");
}

static void test_soft_errors(void)
{
    stats_begin();
    void *ctx = open_ok("nvml_soft_errors.txt", fake_new, 1);
    if (!ctx)
        return;
    gp_error err;
    gp_device_info info;
    /* Memory unavailable: device_info has no total and is not an error. */
    CHECK_INT(gp_backend_nvml.device_info(ctx, 0, &info, &err), GP_OK);
    CHECK_STR(info.name, "NVIDIA A100-SXM4-40GB");
    CHECK_INT(info.valid, 0);
    CHECK_U64(info.mem_total_bytes, 0);
    unsigned idx[2] = {0, 1};
    start_ok(ctx, idx, 2);
    gp_device_sample s;
    for (int i = 0; i < 3; i++) {
        read_ok(ctx, 0, &s);
        CHECK_INT(s.valid, GP_M_UTIL_GPU | GP_M_UTIL_MEM);
        CHECK_INT(s.util_gpu_pct, 42);
        CHECK_U64(s.mem_used_bytes, 0);
        CHECK_U64(s.mem_total_bytes, 0);
        CHECK_INT(s.power_mw, 0);
        CHECK_U64(s.energy_mj, 0);
        CHECK_INT(s.temp_c, 0);
        CHECK_INT(s.clock_sm_mhz, 0);
        CHECK_INT(s.clock_mem_mhz, 0);
        CHECK_U64(s.throttle_reasons, 0);
        CHECK_INT(s.pcie_tx_kbps, 0);
        read_ok(ctx, 1, &s);
        CHECK_INT(s.valid, (ALL_BUT_PCIE | PCIE) & ~(GP_M_UTIL_GPU | GP_M_UTIL_MEM));
        CHECK_INT(s.util_gpu_pct, 0);
        CHECK_INT(s.util_mem_pct, 0);
        CHECK_INT(s.power_mw, 75000);
    }
    close_ctx(ctx);
    char *st = stats_end();
    /* v2 answered NOT_SUPPORTED in device_info and in the first read; from
     * then on only v1 was asked. */
    CHECK_CONTAINS(st, "\ndevice 0 mem_v2 2\n");
    CHECK_CONTAINS(st, "\ndevice 0 mem_v1 4\n");
    /* NO_PERMISSION from the V call is an answer, not a reason to retry v1. */
    CHECK_CONTAINS(st, "\ndevice 0 temp_v 3\n");
    CHECK(st && !strstr(st, "device 0 temp_v1"));
    free(st);
}

/* Newer library, older driver: v2 / V rejected, v1 answers. */
static void test_version_fallback(void)
{
    stats_begin();
    void *ctx = open_ok("nvml_version_fallback.txt", fake_new, 0);
    if (!ctx)
        return;
    unsigned idx[3] = {0, 1, 2};
    start_ok(ctx, idx, 3);
    gp_device_sample s;
    for (int i = 0; i < 3; i++) {
        read_ok(ctx, 2, &s);
        CHECK_INT(s.valid, ALL_BUT_PCIE);
        CHECK_U64(s.mem_used_bytes, 3072);
        read_ok(ctx, 0, &s);
        CHECK_INT(s.valid, ALL_BUT_PCIE);
        CHECK_U64(s.mem_used_bytes, 1024);
        CHECK_U64(s.mem_total_bytes, 100000);
        CHECK_INT(s.temp_c, 41);
        read_ok(ctx, 1, &s);
        CHECK_INT(s.valid, ALL_BUT_PCIE);
        CHECK_U64(s.mem_used_bytes, 2048);
        CHECK_U64(s.mem_total_bytes, 200000);
    }
    close_ctx(ctx);
    char *st = stats_end();
    CHECK_CONTAINS(st, "\ndevice 0 mem_v2 1\n");
    CHECK_CONTAINS(st, "\ndevice 0 mem_v1 3\n");
    CHECK_CONTAINS(st, "\ndevice 0 temp_v 1\n");
    CHECK_CONTAINS(st, "\ndevice 0 temp_v1 3\n");
    CHECK_CONTAINS(st, "\ndevice 1 mem_v2 1\n");
    CHECK_CONTAINS(st, "\ndevice 1 mem_v1 3\n");
    CHECK_CONTAINS(st, "\ndevice 1 temp_v 3\n");
    CHECK_CONTAINS(st, "\ndevice 2 mem_v2 1\n");
    CHECK_CONTAINS(st, "\ndevice 2 mem_v1 3\n");
    free(st);
}

static void test_missing_library(void)
{
    const char *path = "/nonexistent/gpu-profile-test/libnvidia-ml.so.1";
    char dl_text[512];
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h == NULL);
    snprintf(dl_text, sizeof dl_text, "%s", h ? "" : dlerror());
    gp_error err;
    CHECK_INT(open_fails(NULL, path, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(err.message, path);
    CHECK_CONTAINS(err.message, dl_text);
    CHECK_STR(err.message, "nvml: cannot load /nonexistent/gpu-profile-test/libnvidia-ml.so.1: "
                           "cannot open shared object file: No such file or directory: check "
                           "the nvml_library path");
}

/* A library that loads but is not NVML: the missing symbol is named. */
static void test_not_nvml(void)
{
    gp_error err;
    CHECK_INT(open_fails(NULL, "libm.so.6", &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(err.message, "nvml: libm.so.6 exports neither nvmlInit_v2 nor nvmlInit: it is not "
                           "NVML, or an NVML too old for this library");
}

static void test_init_errors(void)
{
    gp_error err;
    CHECK_INT(open_fails("nvml_init_error.txt", fake_new, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(err.message, "nvml: nvmlInit_v2 failed: Driver Not Loaded (NVML error 9): the "
                           "NVIDIA kernel driver is not loaded (is there a GPU? see dmesg)");
    CHECK_CONTAINS(err.message, "Driver Not Loaded");
    CHECK_CONTAINS(err.message, "9");

    fprintf(stderr, "(the fake's complaint about 'sequence' below is expected)\n");
    CHECK_INT(open_fails("nvml_bad_line.txt", fake_new, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(err.message, "nvml: nvmlInit_v2 failed: Unknown Error (NVML error 999)");

    /* A failed init leaves nothing behind: the next open works. */
    void *ctx = open_ok(NULL, fake_new, 0);
    close_ctx(ctx);
}

static void test_device_indices(void)
{
    gp_error err;
    void *ctx = open_ok("nvml_metrics.txt", fake_new, 0);
    if (ctx) {
        unsigned idx[2] = {0, 3};
        CHECK_INT(gp_backend_nvml.start(ctx, idx, 2, 1000000, &err), GP_ERR_DEVICE_NOT_FOUND);
        CHECK_INT(err.status, GP_ERR_DEVICE_NOT_FOUND);
        CHECK_STR(err.message, "nvml: device 3 does not exist: 2 devices (0-1)");
        gp_device_info info;
        CHECK_INT(gp_backend_nvml.device_info(ctx, 2, &info, &err), GP_ERR_DEVICE_NOT_FOUND);
        CHECK_STR(err.message, "nvml: device 2 does not exist: 2 devices (0-1)");
        /* A failed start left nothing to read. */
        gp_device_sample s;
        CHECK_INT(read_slot(ctx, 0, &s, &err), GP_ERR_STATE);
        CHECK_INT(s.valid, 0);
        close_ctx(ctx);
    }
    ctx = open_ok(NULL, fake_new, 0);
    if (ctx) {
        unsigned idx[1] = {1};
        CHECK_INT(gp_backend_nvml.start(ctx, idx, 1, 1000000, &err), GP_ERR_DEVICE_NOT_FOUND);
        CHECK_STR(err.message, "nvml: device 1 does not exist: 1 device (0)");
        close_ctx(ctx);
    }
    ctx = open_ok("nvml_no_devices.txt", fake_new, 0);
    if (ctx) {
        unsigned count = 9;
        CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_OK);
        CHECK_INT(count, 0);
        gp_device_info info;
        CHECK_INT(gp_backend_nvml.device_info(ctx, 0, &info, &err), GP_ERR_DEVICE_NOT_FOUND);
        CHECK_STR(err.message, "nvml: device 0 does not exist: NVML sees no device");
        close_ctx(ctx);
    }
}

/* Device 1 is lost after 3 reads; device 0 keeps reading. */
static void test_gpu_lost(void)
{
    void *ctx = open_ok("nvml_lost.txt", fake_new, 0);
    if (!ctx)
        return;
    unsigned idx[2] = {0, 1};
    start_ok(ctx, idx, 2);
    gp_device_sample s;
    gp_error err;
    unsigned n0 = 0;
    for (int i = 0; i < 3; i++) {
        read_ok(ctx, 0, &s);
        CHECK_INT(s.util_gpu_pct, ++n0);
        read_ok(ctx, 1, &s);
        CHECK_INT(s.valid, ALL_BUT_PCIE);
    }
    for (int i = 0; i < 2; i++) {
        CHECK_INT(read_slot(ctx, 1, &s, &err), GP_ERR_DEVICE_LOST);
        CHECK_INT(err.status, GP_ERR_DEVICE_LOST);
        CHECK_STR(err.message, "nvml: device 1 (NVIDIA H100 80GB HBM3): GPU is lost "
                               "(nvmlDeviceGetUtilizationRates returned 15)");
        CHECK_INT(s.valid, 0);
        read_ok(ctx, 0, &s);
        CHECK_INT(s.valid, ALL_BUT_PCIE);
        CHECK_INT(s.util_gpu_pct, ++n0);
    }
    gp_device_info info;
    CHECK_INT(gp_backend_nvml.device_info(ctx, 1, &info, &err), GP_ERR_DEVICE_LOST);
    CHECK_STR(err.message,
              "nvml: device 1: GPU is lost (nvmlDeviceGetHandleByIndex_v2 returned 15)");
    CHECK_INT(gp_backend_nvml.device_info(ctx, 0, &info, &err), GP_OK);
    close_ctx(ctx);
}

static void test_generic_errors(void)
{
    void *ctx = open_ok("nvml_generic_error.txt", fake_new, 0);
    if (!ctx)
        return;
    gp_error err;
    gp_device_info info;
    CHECK_INT(gp_backend_nvml.device_info(ctx, 1, &info, &err), GP_OK);
    CHECK_STR(info.name, ""); /* NOT_SUPPORTED name: empty, not an error */
    CHECK_STR(info.uuid, "GPU-dddddddd-0000-0000-0000-000000000001");
    unsigned idx[2] = {0, 1};
    start_ok(ctx, idx, 2);
    gp_device_sample s;
    read_ok(ctx, 0, &s);
    read_ok(ctx, 0, &s);
    CHECK_INT(s.power_mw, 75000);
    CHECK_INT(read_slot(ctx, 0, &s, &err), GP_ERR_BACKEND);
    CHECK_INT(err.status, GP_ERR_BACKEND);
    CHECK_STR(err.message, "nvml: device 0 (NVIDIA H100 80GB HBM3): Unknown Error "
                           "(nvmlDeviceGetPowerUsage returned 999)");
    CHECK_INT(s.valid, 0); /* a failed read reports nothing */
    CHECK_INT(read_slot(ctx, 1, &s, &err), GP_ERR_BACKEND);
    CHECK_STR(err.message, "nvml: device 1: Invalid Argument (nvmlDeviceGetClockInfo returned 2)");
    close_ctx(ctx);

    ctx = open_ok("nvml_count_error.txt", fake_new, 0);
    if (ctx) {
        unsigned count = 0;
        CHECK_INT(gp_backend_nvml.device_count(ctx, &count, &err), GP_ERR_BACKEND);
        CHECK_STR(err.message, "nvml: Unknown Error (nvmlDeviceGetCount_v2 returned 999)");
        close_ctx(ctx);
    }
    ctx = open_ok("nvml_handle_error.txt", fake_new, 0);
    if (ctx) {
        unsigned both[2] = {0, 1};
        CHECK_INT(gp_backend_nvml.start(ctx, both, 2, 1000000, &err), GP_ERR_BACKEND);
        CHECK_STR(err.message,
                  "nvml: device 1: Unknown Error (nvmlDeviceGetHandleByIndex_v2 returned 999)");
        char ver[32] = "x";
        CHECK_INT(gp_backend_nvml.driver_version(ctx, ver, sizeof ver, &err), GP_ERR_NOT_SUPPORTED);
        CHECK_STR(ver, "");
        CHECK_STR(err.message, "nvml: Not Supported (nvmlSystemGetDriverVersion returned 3)");
        close_ctx(ctx);
    }
}

/* NVML counts inits: two contexts at once, shut down with the last one. */
static void test_two_contexts(void)
{
    stats_begin();
    void *a = open_ok(NULL, fake_new, 0);
    void *b = open_ok(NULL, fake_new, 0);
    unsigned idx[1] = {0};
    if (a && b) {
        start_ok(a, idx, 1);
        start_ok(b, idx, 1);
        gp_device_sample s;
        read_ok(a, 0, &s);
        read_ok(b, 0, &s);
        close_ctx(a);
        CHECK(access(stats_path, F_OK) != 0); /* b still holds NVML */
        read_ok(b, 0, &s);
        CHECK_INT(s.util_gpu_pct, 42);
    }
    close_ctx(b);
    char *st = stats_end();
    CHECK_CONTAINS(st, "\nnvmlInit_v2 2\n");
    CHECK_CONTAINS(st, "\nnvmlShutdown 2\n");
    CHECK_CONTAINS(st, "\ndevice 0 util 3\n");
    free(st);
}

/* read() is meant to cost about a microsecond of CPU per device (plus what
 * NVML itself takes): a loose bound catches a stray allocation or sleep. */
static void test_read_cost(void)
{
    void *ctx = open_ok(NULL, fake_new, 0);
    if (!ctx)
        return;
    unsigned idx[1] = {0};
    start_ok(ctx, idx, 1);
    gp_device_sample s;
    gp_error err;
    const int n = 20000;
    uint64_t t0 = gp_thread_cpu_ns();
    int failures = 0;
    for (int i = 0; i < n; i++)
        failures += gp_backend_nvml.read(ctx, 0, GP_READ_ENERGY, &s, &err) != GP_OK;
    double us = (double)(gp_thread_cpu_ns() - t0) / 1e3 / n;
    CHECK_INT(failures, 0);
    printf("nvml read() with the fake: %.2f us CPU per device-sample\n", us);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    CHECK(us < 50.0);
#endif
    close_ctx(ctx);
}

/* read_round, the sampler's way: every slot's read handed over before any
 * is waited for; the same answers as read() slot by slot (device 1 lost
 * after 3 reads, device 0's sequence in order), a skipped slot untouched,
 * and a device in two slots read twice, one after the other. */
static void test_read_round(void)
{
    CHECK(gp_backend_nvml.read_round != NULL);
    void *ctx = open_ok("nvml_lost.txt", fake_new, 0);
    if (!ctx)
        return;
    unsigned idx[2] = {0, 1};
    start_ok(ctx, idx, 2);
    gp_device_sample s[3];
    gp_status st[3];
    gp_error err[3];
    unsigned flags[3] = {GP_READ_ENERGY, GP_READ_ENERGY, GP_READ_SKIP};
    unsigned n0 = 0;
    for (int round = 1; round <= 5; round++) {
        memset(s, 0xa5, sizeof s);
        st[0] = st[1] = st[2] = (gp_status)77;
        gp_backend_nvml.read_round(ctx, 2, flags, s, st, err);
        CHECK_INT(st[0], GP_OK);
        CHECK_INT(s[0].valid, ALL_BUT_PCIE);
        CHECK_INT(s[0].util_gpu_pct, ++n0);
        if (round <= 3) {
            CHECK_INT(st[1], GP_OK);
            CHECK_INT(s[1].valid, ALL_BUT_PCIE);
        } else {
            CHECK_INT(st[1], GP_ERR_DEVICE_LOST);
            CHECK_STR(err[1].message, "nvml: device 1 (NVIDIA H100 80GB HBM3): GPU is lost "
                                      "(nvmlDeviceGetUtilizationRates returned 15)");
            CHECK_INT(s[1].valid, 0);
        }
        CHECK_INT(st[2], 77);
    }
    flags[1] = GP_READ_SKIP;
    st[1] = (gp_status)77;
    gp_backend_nvml.read_round(ctx, 2, flags, s, st, err);
    CHECK_INT(st[0], GP_OK);
    CHECK_INT(s[0].util_gpu_pct, ++n0);
    CHECK_INT(st[1], 77);

    unsigned twice[2] = {0, 0}; /* device 0 in both slots */
    start_ok(ctx, twice, 2);
    flags[1] = 0;
    gp_backend_nvml.read_round(ctx, 2, flags, s, st, err);
    CHECK_INT(st[0], GP_OK);
    CHECK_INT(st[1], GP_OK);
    CHECK_INT(s[0].util_gpu_pct, n0 + 1);
    CHECK_INT(s[1].util_gpu_pct, n0 + 2);
    close_ctx(ctx);
}

/* End to end: the sampler thread reads through the backend; device 1 is
 * lost after two samples and keeps its message, device 0 goes on. */
static void test_monitor(void)
{
    use_scenario("nvml_monitor.txt");
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
    if (!m) {
        fprintf(stderr, "  create: %s\n", err.message);
        return;
    }
    CHECK_STR(gp_monitor_backend(m), "nvml");
    CHECK_INT(gp_monitor_device_count(m), 2);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    /* Enough rounds for device 1 to be lost, however slow the machine. */
    gp_monitor_stats st;
    while (gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < 4) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s0 = gp_monitor_summary(m, 0);
    const gp_summary *s1 = gp_monitor_summary(m, 1);
    CHECK(s0 && s1);
    if (s0 && s1) {
        CHECK_STR(s0->backend, "nvml");
        CHECK_STR(s0->name, "NVIDIA H100 80GB HBM3");
        CHECK_STR(s0->uuid, "GPU-12345678-0000-0000-0000-000000000000");
        CHECK_INT(s0->device_status, GP_OK);
        CHECK(s0->sample_count >= 2); /* at start and at stop, whatever the load */
        CHECK_NEAR(s0->util_gpu_mean, 50.0, 0);
        CHECK_INT(s0->power_max_mw, 100000);
        CHECK(s0->valid & GP_M_ENERGY);
        CHECK_INT(s1->device_status, GP_ERR_DEVICE_LOST);
        CHECK_STR(s1->device_error, "nvml: device 1 (NVIDIA H100 80GB HBM3): GPU is lost "
                                    "(nvmlDeviceGetUtilizationRates returned 15)");
        CHECK_U64(s1->sample_count, 2);
        CHECK_INT(s1->util_gpu_max, 80);
    }

    /* A second region on the same open backend (gp_monitor_rearm): fresh
     * counts; a device lost in the first region is tried again at start,
     * and (still lost) fails that start as it would fail a new monitor's. */
    CHECK_INT(gp_monitor_rearm(m, &err), GP_OK);
    CHECK(gp_monitor_summary(m, 0) == NULL);
    CHECK_INT(gp_monitor_get_stats(m, &st), GP_OK);
    CHECK_U64(st.ticks, 0);
    CHECK_INT(gp_monitor_start(m, &err), GP_ERR_DEVICE_LOST);
    CHECK_CONTAINS(err.message, "device 1");
    gp_monitor_destroy(m);

    /* Device 0 alone: region after region on one monitor. */
    use_scenario("nvml_monitor.txt");
    o.device = 0;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    for (int region = 0; region < 3; region++) {
        CHECK_INT(gp_monitor_start(m, &err), GP_OK);
        if (region == 0) {
            while (gp_monitor_get_stats(m, &st) == GP_OK && st.ticks < 4) {
                struct timespec ts = {0, 5000000};
                nanosleep(&ts, NULL);
            }
        }
        CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
        s0 = gp_monitor_summary(m, 0);
        CHECK(s0 != NULL);
        if (s0) {
            CHECK_INT(s0->device_status, GP_OK);
            CHECK_STR(s0->name, "NVIDIA H100 80GB HBM3");
            CHECK_NEAR(s0->util_gpu_mean, 50.0, 0);
            if (region == 0)
                CHECK(s0->sample_count >= 5);
            else /* not added to the earlier regions' */
                CHECK(s0->sample_count >= 2 && s0->sample_count <= 3);
        }
        CHECK_INT(gp_monitor_rearm(m, &err), GP_OK);
    }
    gp_monitor_destroy(m);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    fake_new = check_env("GP_TEST_FAKE_NVML");
    fake_old = check_env("GP_TEST_FAKE_NVML_OLD");
    nvml_stats_path(stats_path, sizeof stats_path, "backend");
    unsetenv("FAKE_NVML_STATS");

    test_interface();
    test_default_device();
    test_metrics(0);
    test_metrics(1);
    test_device_info();
    test_old_driver();
    test_soft_errors();
    test_version_fallback();
    test_missing_library();
    test_not_nvml();
    test_init_errors();
    test_device_indices();
    test_gpu_lost();
    test_generic_errors();
    test_two_contexts();
    test_read_cost();
    test_read_round();
    test_monitor();

    unlink(stats_path);
    return check_done("test_nvml_backend");
}
