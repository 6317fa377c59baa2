/*
 * test_nvml_fields.c - metrics read through nvmlDeviceGetFieldValues in
 * the NVML backend, against the fake libnvidia-ml (scenario
 * nvml_fields.txt).
 *
 * Checks that every sample field is identical with field values on and
 * off (the fake's $FAKE_NVML_NO_FIELD_VALUES), that a field whose entry
 * fails is read by its own call from then on (counted by the fake): the
 * energy field (83) on device 1, the power field (185) on a GA100-class
 * device 3, that power alone still goes through the field call, and that
 * a library without the function (the old fake) reads as before.
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "util/error.h"
#include "gpu_profile.h"
#include "sampler/nvml_open.h"

#include <unistd.h>

#define READS 5
#define DEVICES 4

static const char *src_dir;
static const char *fake_new;
static char stats_path[512];

/* READS reads of every device, each asking for the energy counter but the
 * third; the call counts of that session in *stats (malloc'd). */
static void run(const char *lib, gp_device_sample out[READS][DEVICES], char **stats)
{
    unlink(stats_path);
    setenv("FAKE_NVML_STATS", stats_path, 1);
    unsigned idx[DEVICES] = {0, 1, 2, 3};
    void *ctx = nvml_open_start(src_dir, "nvml_fields.txt", lib, idx, DEVICES);
    if (!ctx)
        return;
    gp_error err;
    for (int k = 0; k < READS; k++)
        for (size_t s = 0; s < DEVICES; s++) {
            memset(&out[k][s], 0, sizeof out[k][s]);
            unsigned flags = k == 2 ? 0 : GP_READ_ENERGY;
            CHECK_INT(gp_backend_nvml.read(ctx, s, flags, &out[k][s], &err), GP_OK);
        }
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
    unsetenv("FAKE_NVML_STATS");
    *stats = check_read_file(stats_path, NULL);
    CHECK(*stats != NULL);
}

static void test_same_values(void)
{
    static gp_device_sample on[READS][DEVICES], off[READS][DEVICES];
    char *stats_on = NULL, *stats_off = NULL;
    unsetenv("FAKE_NVML_NO_FIELD_VALUES");
    run(fake_new, on, &stats_on);
    setenv("FAKE_NVML_NO_FIELD_VALUES", "1", 1);
    run(fake_new, off, &stats_off);
    unsetenv("FAKE_NVML_NO_FIELD_VALUES");
    for (int k = 0; k < READS; k++)
        for (int s = 0; s < DEVICES; s++) {
            CHECK_INT(on[k][s].valid, off[k][s].valid);
            CHECK(memcmp(&on[k][s], &off[k][s], sizeof on[k][s]) == 0);
        }
    /* The energy sequence, one value per read that asked. */
    static const uint64_t want[READS] = {1000, 2000, 0, 4500, 9000};
    for (int k = 0; k < READS; k++) {
        CHECK_INT((on[k][0].valid & GP_M_ENERGY) != 0, k != 2);
        CHECK_U64(on[k][0].energy_mj, want[k]);
    }
    CHECK_U64(on[4][1].energy_mj, 9);
    CHECK_INT(on[0][2].valid & GP_M_ENERGY, 0);
    CHECK_INT(on[0][0].power_mw, 71234);
    CHECK_INT(on[4][0].power_mw, 699999);
    CHECK_INT(on[2][0].temp_c, -3);
    /* Power through the field on device 1, by its own call on device 3:
     * one value per read either way, the same sequence. */
    CHECK_INT(on[0][1].power_mw, 250000);
    CHECK_INT(on[2][1].power_mw, 250001);
    static const uint32_t power3[READS] = {60000, 61000, 62000, 63000, 64000};
    static const uint64_t energy3[READS] = {10, 20, 0, 30, 40};
    for (int k = 0; k < READS; k++) {
        CHECK_INT((on[k][3].valid & GP_M_POWER) != 0, 1);
        CHECK_INT(on[k][3].power_mw, power3[k]);
        CHECK_U64(on[k][3].energy_mj, energy3[k]);
    }
    if (stats_on && stats_off) {
        /* On: devices 0-2 make one field call per read (power is asked
         * every read, energy in 4 of them): 15; device 3 one per energy
         * read (its power entry failed in the first: its own call from
         * then on): 4.  The energy function for devices 1 and 2 (4 reads
         * each); the power function for device 3 only (5 reads). */
        CHECK_CONTAINS(stats_on, "nvmlDeviceGetFieldValues 19\n");
        CHECK_CONTAINS(stats_on, "nvmlDeviceGetTotalEnergyConsumption 8\n");
        CHECK_CONTAINS(stats_on, "nvmlDeviceGetPowerUsage 5\n");
        /* Off: the first call of each device fails as a whole; every
         * metric by its own call. */
        CHECK_CONTAINS(stats_off, "nvmlDeviceGetFieldValues 4\n");
        CHECK_CONTAINS(stats_off, "nvmlDeviceGetTotalEnergyConsumption 16\n");
        CHECK_CONTAINS(stats_off, "nvmlDeviceGetPowerUsage 20\n");
    }
    free(stats_on);
    free(stats_off);
}

/* A library without nvmlDeviceGetFieldValues (and without the energy
 * function: the old build): read as before, no energy. */
static void test_old_library(void)
{
    static gp_device_sample old[READS][DEVICES];
    char *stats = NULL;
    run(check_env("GP_TEST_FAKE_NVML_OLD"), old, &stats);
    CHECK_INT(old[0][0].valid & GP_M_ENERGY, 0);
    CHECK_INT(old[0][0].power_mw, 71234);
    CHECK_INT(old[0][3].power_mw, 60000);
    if (stats) {
        CHECK(strstr(stats, "nvmlDeviceGetFieldValues") == NULL);
        CHECK_CONTAINS(stats, "nvmlDeviceGetPowerUsage 20\n");
    }
    free(stats);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    fake_new = check_env("GP_TEST_FAKE_NVML");
    nvml_stats_path(stats_path, sizeof stats_path, "fields");
    test_same_values();
    test_old_library();
    unlink(stats_path);
    return check_done("test_nvml_fields");
}
