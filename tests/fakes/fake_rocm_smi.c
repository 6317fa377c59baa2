/*
 * fake_rocm_smi.c - a fake librocm_smi64.so.1 for the tests (never installed).
 *
 * Promises: built from ROCm SMI's own header (Debian's librocm-smi-dev), so
 * a declaration of src/sampler/backends/rocm_smi.c that disagrees with the
 * real ABI fails a test, not a user.  $FAKE_ROCM_SMI_SCENARIO picks what it
 * shows, read at every rsmi_init:
 *   two (default)  GPU 0 "AMD Instinct MI210" reports every figure;
 *                  GPU 1 "AMD Radeon PRO W6800" has no unique id, memory
 *                  busy, power, temperature nor memory clock (NOT_SUPPORTED)
 *   zero           rsmi_init succeeds, no device
 *   init_fail      rsmi_init prints what the real library prints on a
 *                  machine without /sys/class/drm and fails with INIT_ERROR
 *   lost           as two, but after GPU 1's first busy-percent read every
 *                  call on it fails with FILE_ERROR (its sysfs files gone)
 *   hang           as two, but GPU 1's busy-percent read sleeps 10 s (a GPU
 *                  whose driver hangs)
 * A call before rsmi_init fails with INIT_ERROR, as the real one does.
 */
#include <rocm_smi/rocm_smi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_API __attribute__((visibility("default")))
#define MHZ 1000000ull
#define GIB (1024ull * 1024ull * 1024ull)

static int g_inits;
static uint32_t g_devs;
static int g_lost_after = -1; /* busy reads of GPU 1 before it is gone */
static int g_busy_reads[2];
static int g_hang;

static rsmi_status_t check(uint32_t dv)
{
    if (g_inits <= 0)
        return RSMI_STATUS_INIT_ERROR;
    if (dv >= g_devs)
        return RSMI_STATUS_INVALID_ARGS;
    if (dv == 1 && g_lost_after >= 0 && g_busy_reads[1] >= g_lost_after)
        return RSMI_STATUS_FILE_ERROR;
    return RSMI_STATUS_SUCCESS;
}

#define CHECK_DEV(dv)                                                                              \
    do {                                                                                           \
        rsmi_status_t st_ = check(dv);                                                             \
        if (st_ != RSMI_STATUS_SUCCESS)                                                            \
            return st_;                                                                            \
    } while (0)

FAKE_API rsmi_status_t rsmi_init(uint64_t flags)
{
    (void)flags;
    const char *sc = getenv("FAKE_ROCM_SMI_SCENARIO");
    if (!sc || !*sc)
        sc = "two";
    if (strcmp(sc, "init_fail") == 0) {
        fprintf(stderr, "Failed to open drm root directory /sys/class/drm.: No such file or "
                        "directory\nException caught: rsmi_init.\n");
        return RSMI_STATUS_INIT_ERROR;
    }
    if (g_inits++ == 0) {
        g_devs = strcmp(sc, "zero") == 0 ? 0 : 2;
        g_lost_after = strcmp(sc, "lost") == 0 ? 1 : -1;
        g_hang = strcmp(sc, "hang") == 0;
        g_busy_reads[0] = g_busy_reads[1] = 0;
    }
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_shut_down(void)
{
    if (g_inits <= 0)
        return RSMI_STATUS_INIT_ERROR;
    g_inits--;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_num_monitor_devices(uint32_t *num_devices)
{
    if (g_inits <= 0)
        return RSMI_STATUS_INIT_ERROR;
    *num_devices = g_devs;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **status_string)
{
    switch (status) {
    case RSMI_STATUS_SUCCESS:
        *status_string = "RSMI_STATUS_SUCCESS: The function has been executed successfully.";
        break;
    case RSMI_STATUS_NOT_SUPPORTED:
        *status_string = "RSMI_STATUS_NOT_SUPPORTED: The requested information is not available";
        break;
    case RSMI_STATUS_FILE_ERROR:
        *status_string = "RSMI_STATUS_FILE_ERROR: Problem accessing a file";
        break;
    case RSMI_STATUS_INIT_ERROR:
        *status_string = "RSMI_STATUS_INIT_ERROR: An error occurred during initialization";
        break;
    default:
        *status_string = "An unknown error occurred";
        break;
    }
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_version_str_get(rsmi_sw_component_t component, char *ver_str,
                                            uint32_t len)
{
    if (component != RSMI_SW_COMP_DRIVER || len == 0)
        return RSMI_STATUS_INVALID_ARGS;
    snprintf(ver_str, len, "6.8.5-fake");
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_name_get(uint32_t dv, char *name, size_t len)
{
    CHECK_DEV(dv);
    snprintf(name, len, "%s", dv == 0 ? "AMD Instinct MI210" : "AMD Radeon PRO W6800");
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv, uint64_t *id)
{
    CHECK_DEV(dv);
    if (dv == 1)
        return RSMI_STATUS_NOT_SUPPORTED;
    *id = 0x1234abcd5678ef90ull;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid)
{
    CHECK_DEV(dv);
    /* domain << 32 | bus << 8 | device << 3 | function */
    *bdfid = dv == 0 ? (0x03ull << 8) : ((1ull << 32) | (0x08ull << 8) | (0x1ull << 3) | 1u);
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv, uint32_t *busy_percent)
{
    CHECK_DEV(dv);
    g_busy_reads[dv]++;
    if (dv == 1 && g_hang) {
        struct timespec ten_s = {10, 0};
        while (nanosleep(&ten_s, &ten_s) != 0)
            ;
    }
    *busy_percent = dv == 0 ? 37 : 80;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_memory_busy_percent_get(uint32_t dv, uint32_t *busy_percent)
{
    CHECK_DEV(dv);
    if (dv == 1)
        return RSMI_STATUS_NOT_SUPPORTED;
    *busy_percent = 12;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_memory_total_get(uint32_t dv, rsmi_memory_type_t type,
                                                 uint64_t *total)
{
    CHECK_DEV(dv);
    if (type != RSMI_MEM_TYPE_VRAM)
        return RSMI_STATUS_NOT_SUPPORTED;
    *total = dv == 0 ? 64 * GIB : 32 * GIB;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_memory_usage_get(uint32_t dv, rsmi_memory_type_t type,
                                                 uint64_t *used)
{
    CHECK_DEV(dv);
    if (type != RSMI_MEM_TYPE_VRAM)
        return RSMI_STATUS_NOT_SUPPORTED;
    *used = dv == 0 ? 1 * GIB : 2 * GIB;
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *power)
{
    CHECK_DEV(dv);
    if (dv == 1 || sensor != 0)
        return RSMI_STATUS_NOT_SUPPORTED;
    *power = 123456789ull; /* µW */
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv, uint32_t sensor,
                                                rsmi_temperature_metric_t metric, int64_t *temp)
{
    CHECK_DEV(dv);
    if (dv == 1 || sensor != RSMI_TEMP_TYPE_EDGE || metric != RSMI_TEMP_CURRENT)
        return RSMI_STATUS_NOT_SUPPORTED;
    *temp = 45500; /* millidegrees */
    return RSMI_STATUS_SUCCESS;
}

FAKE_API rsmi_status_t rsmi_dev_gpu_clk_freq_get(uint32_t dv, rsmi_clk_type_t type,
                                                 rsmi_frequencies_t *f)
{
    CHECK_DEV(dv);
    memset(f, 0, sizeof *f);
    if (type == RSMI_CLK_TYPE_SYS) {
        f->num_supported = dv == 0 ? 3 : 1;
        f->current = dv == 0 ? 2 : 0;
        f->frequency[0] = dv == 0 ? 500 * MHZ : 2000 * MHZ;
        f->frequency[1] = 800 * MHZ;
        f->frequency[2] = 1700 * MHZ;
        return RSMI_STATUS_SUCCESS;
    }
    if (type == RSMI_CLK_TYPE_MEM && dv == 0) {
        f->num_supported = 1;
        f->current = 0;
        f->frequency[0] = 1600 * MHZ;
        return RSMI_STATUS_SUCCESS;
    }
    return RSMI_STATUS_NOT_SUPPORTED;
}
