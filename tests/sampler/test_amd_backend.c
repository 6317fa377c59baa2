/*
 * test_amd_backend.c - gp_backend_amd (ROCm SMI) driven directly and
 * through a monitor, against the fake librocm_smi64 built from the real
 * header (tests/fakes/fake_rocm_smi.c): exact values, n/a for what a device
 * does not report, init failure and no device, a device that disappears,
 * auto's choice, and Debian's real library on a machine without an AMD GPU
 * (its stderr kept from ours).  Skips (77) without the fake.
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "util/error.h"
#include "gpu_profile.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB (1024ull * 1024ull * 1024ull)
#define CHECK_PREFIX_STR(s, p)                                                                     \
    do {                                                                                           \
        if (strncmp((s), (p), strlen(p)) == 0) {                                                   \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: '%s' does not start with '%s'\n", __FILE__, __LINE__, (s),     \
                    (p));                                                                          \
        }                                                                                          \
    } while (0)
static const gp_backend *const B = &gp_backend_amd;
static const char *fake;

static gp_status open_amd(const char *scenario, const char *lib, void **ctx, gp_error *err)
{
    setenv("FAKE_ROCM_SMI_SCENARIO", scenario, 1);
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rocm_smi_library = lib;
    cfg.timeout_ns = 5000000000ull;
    gp_error_clear(err);
    *ctx = NULL;
    return B->open(&cfg, ctx, err);
}

static void test_devices(void)
{
    void *c = NULL;
    gp_error err;
    CHECK_INT(open_amd("two", fake, &c, &err), GP_OK);
    unsigned n = 99;
    CHECK_INT(B->device_count(c, &n, &err), GP_OK);
    CHECK_INT(n, 2);
    gp_device_info d;
    CHECK_INT(B->device_info(c, 0, &d, &err), GP_OK);
    CHECK_STR(d.name, "AMD Instinct MI210");
    CHECK_STR(d.uuid, "1234abcd5678ef90");
    CHECK_STR(d.pci_bus_id, "0000:03:00.0");
    CHECK_INT(d.valid, GP_M_MEM_TOTAL);
    CHECK_U64(d.mem_total_bytes, 64 * GIB);
    CHECK_INT(d.mig.is_mig, 0);
    CHECK_INT(B->device_info(c, 1, &d, &err), GP_OK);
    CHECK_STR(d.name, "AMD Radeon PRO W6800");
    CHECK_STR(d.uuid, ""); /* no unique id: unknown, not a made-up one */
    CHECK_STR(d.pci_bus_id, "0001:08:01.1");
    CHECK_U64(d.mem_total_bytes, 32 * GIB);
    CHECK_INT(B->device_info(c, 2, &d, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_STR(err.message, "amd: device 2 does not exist: ROCm SMI lists 2 devices");
    char drv[64];
    CHECK_INT(B->driver_version(c, drv, sizeof drv, &err), GP_OK);
    CHECK_STR(drv, "6.8.5-fake");
    B->close(c);
}

static void test_read(void)
{
    void *c = NULL;
    gp_error err;
    CHECK_INT(open_amd("two", fake, &c, &err), GP_OK);
    unsigned idx[2] = {0, 1};
    CHECK_INT(B->start(c, idx, 2, 100000000ull, &err), GP_OK);
    gp_device_sample s;
    CHECK_INT(B->read(c, 0, GP_READ_ENERGY, &s, &err), GP_OK);
    CHECK_INT(s.valid, GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER |
                           GP_M_TEMP | GP_M_CLOCK_SM | GP_M_CLOCK_MEM);
    CHECK_INT(s.util_gpu_pct, 37);
    CHECK_INT(s.util_mem_pct, 12);
    CHECK_U64(s.mem_used_bytes, 1 * GIB);
    CHECK_U64(s.mem_total_bytes, 64 * GIB);
    CHECK_INT(s.power_mw, 123456); /* µW -> mW */
    CHECK_INT(s.temp_c, 45);       /* millidegrees -> degrees */
    CHECK_INT(s.clock_sm_mhz, 1700);
    CHECK_INT(s.clock_mem_mhz, 1600);
    /* GPU 1 reports busy %, VRAM and SCLK only: the rest stays unset. */
    CHECK_INT(B->read(c, 1, 0, &s, &err), GP_OK);
    CHECK_INT(s.valid, GP_M_UTIL_GPU | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_CLOCK_SM);
    CHECK_INT(s.util_gpu_pct, 80);
    CHECK_INT(s.util_mem_pct, 0);
    CHECK_INT(s.power_mw, 0);
    CHECK_INT(s.clock_sm_mhz, 2000);
    B->stop(c);
    B->close(c);
}

static void test_lost(void)
{
    void *c = NULL;
    gp_error err;
    CHECK_INT(open_amd("lost", fake, &c, &err), GP_OK);
    unsigned idx[2] = {0, 1};
    CHECK_INT(B->start(c, idx, 2, 100000000ull, &err), GP_OK);
    gp_device_sample s;
    CHECK_INT(B->read(c, 1, 0, &s, &err), GP_OK);
    CHECK_INT(B->read(c, 1, 0, &s, &err), GP_ERR_DEVICE_LOST);
    CHECK_STR(err.message, "amd: device 1 is gone: ROCm SMI cannot read any of its figures "
                           "(RSMI_STATUS_FILE_ERROR: Problem accessing a file): it was removed "
                           "or its driver reset");
    CHECK_INT(B->read(c, 0, 0, &s, &err), GP_OK); /* the other GPU goes on */
    CHECK_INT(s.util_gpu_pct, 37);
    B->stop(c);
    B->close(c);
}

/* A read that hangs in ROCm SMI ends at the bound, naming the call; the
 * context asks nothing more while it is stuck, and closes at once. */
static void test_hang(void)
{
    setenv("FAKE_ROCM_SMI_SCENARIO", "hang", 1);
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rocm_smi_library = fake;
    cfg.timeout_ns = 200000000ull; /* 0.2 s: the fake hangs 10 s */
    gp_error err;
    gp_error_clear(&err);
    void *c = NULL;
    CHECK_INT(B->open(&cfg, &c, &err), GP_OK);
    if (!c)
        return;
    unsigned idx[2] = {0, 1};
    CHECK_INT(B->start(c, idx, 2, 100000000ull, &err), GP_OK);
    gp_device_sample s;
    CHECK_INT(B->read(c, 0, 0, &s, &err), GP_OK);
    CHECK_INT(B->read(c, 1, 0, &s, &err), GP_ERR_TIMEOUT);
    CHECK_STR(err.message, "amd: device 1: rsmi_dev_*_get did not answer within 0.2 s: the GPU "
                           "or its driver hangs (see dmesg); ROCm SMI is not asked again by "
                           "this process until it returns");
    CHECK_INT(B->read(c, 0, 0, &s, &err), GP_ERR_TIMEOUT);
    CHECK_PREFIX_STR(err.message, "amd: ROCm SMI is still stuck in rsmi_dev_*_get (");
    B->stop(c);
    B->close(c); /* returns with the call still stuck: the library stays loaded */
}

/* Runs open with fd 2 on a file; returns what reached it (malloc'd). */
static char *open_quiet(const char *scenario, const char *lib, gp_status *st, gp_error *err)
{
    char path[] = "/tmp/gp-amd-stderr-XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(2);
    fflush(stderr);
    dup2(fd, 2);
    void *c = NULL;
    *st = open_amd(scenario, lib, &c, err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    B->close(c);
    size_t len = 0;
    char *text = check_read_file(path, &len);
    unlink(path);
    return text;
}

static void test_init_fail(void)
{
    gp_status st;
    gp_error err;
    char *said = open_quiet("init_fail", fake, &st, &err);
    CHECK_INT(st, GP_ERR_BACKEND_UNAVAILABLE);
    char want[2048];
    snprintf(want, sizeof want,
             "amd: no AMD GPU: rsmi_init of %s failed: RSMI_STATUS_INIT_ERROR: An error occurred "
             "during initialization; it said: Failed to open drm root directory /sys/class/drm.: "
             "No such file or directory: is the amdgpu driver loaded (/sys/class/kfd)? On a "
             "machine without AMD GPUs use another backend",
             fake);
    CHECK_STR(err.message, want);
    CHECK_STR(said, ""); /* the library's words went into the message, not to stderr */
    free(said);

    void *c = NULL;
    CHECK_INT(open_amd("zero", fake, &c, &err), GP_OK);
    unsigned n = 99;
    CHECK_INT(B->device_count(c, &n, &err), GP_OK);
    CHECK_INT(n, 0);
    B->close(c);

    CHECK_INT(open_amd("two", "/nonexistent/librocm_smi64.so.1", &c, &err),
              GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_PREFIX_STR(err.message, "amd: cannot load /nonexistent/librocm_smi64.so.1: ");
    CHECK(strstr(err.message, ": check the rocm_smi_library path") != NULL);

    /* The environment's library when the option names none. */
    setenv("GPU_PROFILE_ROCM_SMI_LIBRARY", fake, 1);
    CHECK_INT(open_amd("two", NULL, &c, &err), GP_OK);
    CHECK_INT(B->device_count(c, &n, &err), GP_OK);
    CHECK_INT(n, 2);
    B->close(c);
    setenv("GPU_PROFILE_ROCM_SMI_LIBRARY", "/nonexistent/rocm.so", 1);
    CHECK_INT(open_amd("two", NULL, &c, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK(strstr(err.message, "check the GPU_PROFILE_ROCM_SMI_LIBRARY path") != NULL);
    unsetenv("GPU_PROFILE_ROCM_SMI_LIBRARY");
}

/* Debian's librocm_smi64.so.1 on a machine without an AMD GPU: a clear
 * message, and nothing the library prints reaches our stderr. */
static void test_real_library(void)
{
    struct stat st_kfd;
    if (stat("/sys/class/kfd", &st_kfd) == 0) {
        printf("skip: this machine has the amdgpu driver\n");
        return;
    }
    gp_status st;
    gp_error err;
    unsetenv("GPU_PROFILE_ROCM_SMI_LIBRARY");
    char *said = open_quiet("two", NULL, &st, &err);
    if (st == GP_ERR_BACKEND_UNAVAILABLE && strstr(err.message, "could not be loaded")) {
        printf("skip: no ROCm SMI installed\n");
        free(said);
        return;
    }
    /* The default library: sysfs shows no AMD device, rsmi_init is not
     * even started. */
    CHECK_INT(st, GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_PREFIX_STR(err.message, "amd: no AMD GPU: no AMD device (PCI vendor 0x1002) under "
                                  "/sys/class/drm: the amdgpu driver is not loaded, or the GPU "
                                  "is not visible here (a container needs /dev/kfd, /dev/dri "
                                  "and /sys); librocm_smi64.so.");
    CHECK_STR(said, "");
    free(said);

    /* The same library named by path: rsmi_init runs and fails (or finds
     * no device where /sys/class/drm exists); what it prints is caught. */
    static const char *const paths[] = {"/usr/lib/librocm_smi64.so.1",
                                        "/usr/lib/x86_64-linux-gnu/librocm_smi64.so.1"};
    const char *path = NULL;
    for (size_t i = 0; i < 2 && !path; i++)
        if (access(paths[i], R_OK) == 0)
            path = paths[i];
    if (!path)
        return;
    said = open_quiet("two", path, &st, &err);
    struct stat st_drm;
    if (stat("/sys/class/drm", &st_drm) != 0) {
        CHECK_INT(st, GP_ERR_BACKEND_UNAVAILABLE);
        char want[1024];
        snprintf(want, sizeof want, "amd: no AMD GPU: rsmi_init of %s failed: ", path);
        CHECK_PREFIX_STR(err.message, want);
        CHECK(strstr(err.message, "; it said: Failed to open drm root directory /sys/class/drm") !=
              NULL);
        CHECK(strstr(err.message, ": is the amdgpu driver loaded (/sys/class/kfd)?") != NULL);
        CHECK_STR(said, "");
    }
    free(said);
}

static void test_monitor(void)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_AMD;
    o.rocm_smi_library = fake;
    o.device = GP_ALL_DEVICES;
    o.interval_s = 0.01;
    setenv("FAKE_ROCM_SMI_SCENARIO", "two", 1);
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_STR(gp_monitor_backend(m), "amd");
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s = gp_monitor_summary(m, 0);
    CHECK(s != NULL);
    if (s) {
        CHECK_STR(s->backend, "amd");
        CHECK_STR(s->uuid, "1234abcd5678ef90");
        CHECK(s->sample_count >= 1);
        CHECK_INT(s->util_gpu_max, 37);
        CHECK_INT(s->power_max_mw, 123456);
        CHECK_INT(s->temp_max_c, 45);
        CHECK_INT(s->energy_source, GP_ENERGY_POWER_INTEGRAL);
    }
    s = gp_monitor_summary(m, 1);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->valid & (GP_M_POWER | GP_M_TEMP | GP_M_UTIL_MEM | GP_M_CLOCK_MEM), 0);
        CHECK_INT(s->energy_source, GP_ENERGY_NONE);
        CHECK_INT(s->util_gpu_max, 80);
    }
    gp_monitor_destroy(m);

    /* auto: no NVML, no nvidia-smi, an AMD GPU: amd. */
    gp_options_init(&o);
    o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    o.smi_path = "/nonexistent/nvidia-smi";
    o.rocm_smi_library = fake;
    gp_device_info *devs = NULL;
    size_t n = 0;
    const char *used = NULL;
    CHECK_INT(gp_list_devices(&o, &devs, &n, NULL, 0, &used, &err), GP_OK);
    CHECK_STR(used ? used : "", "amd");
    CHECK_INT(n, 2);
    gp_devices_free(devs);
    /* auto, no AMD GPU either: today's error, its words unchanged. */
    setenv("FAKE_ROCM_SMI_SCENARIO", "zero", 1);
    CHECK_INT(gp_list_devices(&o, &devs, &n, NULL, 0, &used, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_PREFIX_STR(err.message, "no GPU backend could be opened (tried nvml, smi): nvml: ");
    CHECK(strstr(err.message, "amd") == NULL);
}

int main(void)
{
    fake = getenv("GP_TEST_FAKE_ROCM_SMI");
    if (!fake || !*fake) {
        printf("skip: no fake ROCm SMI (rocm_smi/rocm_smi.h was not found at configure time)\n");
        return 77;
    }
    test_devices();
    test_read();
    test_lost();
    test_init_fail();
    test_real_library();
    test_monitor();
    test_hang();
    return check_done("test_amd_backend");
}
