/*
 * test_cli_serve_health.c - fleet health in `gpu-profile serve` over the
 * fake NVML (tests/cli/serve_http.h for the HTTP side):
 *
 *  - a GPU with ECC, retired pages, remapped rows, PCIe replays, NVLink
 *    errors, a fan, an HBM sensor and video engines: each figure under its
 *    dcgm-exporter name with the fake's exact value;
 *  - a GPU that reports none of them (a consumer card): no line for any
 *    (absent, never 0), but its XID figures, since it takes event
 *    registrations (0: watched, none seen);
 *  - an XID the fake delivers once GPU 0's utilisation was read 3 times:
 *    DCGM_FI_DEV_XID_ERRORS becomes 79 and gpu_profile_xid_errors_total 1
 *    (waited for by its event, never by time);
 *  - pci_bus_id and DCGM_FI_DRIVER_VERSION labels as dcgm-exporter sets them;
 *  - SIGTERM still ends serve with 128 + 15 while the XID thread waits;
 *  - gpu_profile_stuck: 1 for a GPU busy at idle power with its SMs idle for
 *    --stuck-after's samples, 0 for a working one, no line without GPM;
 *    bad thresholds exit 125.
 */
#include "harness.h"
#include "serve_http.h"

#include <stdbool.h>

static const char *g_health =
    "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-00000000-0000-0000-0000-0000000000a0\n"
    "device 1 name \"Consumer GPU\" uuid GPU-00000000-0000-0000-0000-0000000000a1\n"
    "driver_version 580.65.06\n"
    "seq 0 ecc_sbe_vol 3\n"
    "seq 0 ecc_dbe_vol 1\n"
    "seq 0 ecc_sbe_agg 17\n"
    "seq 0 ecc_dbe_agg 2\n"
    "seq 0 retired_sbe 4\n"
    "seq 0 retired_dbe 1\n"
    "seq 0 remap_corr 5\n"
    "seq 0 remap_unc 2\n"
    "seq 0 remap_pending 1\n"
    "seq 0 remap_failure 0\n"
    "seq 0 pcie_replay 9\n"
    "seq 0 nvlink_crc 11\n"
    "seq 0 nvlink_recovery 3\n"
    "seq 0 fan 40\n"
    "seq 0 mem_temp 48\n"
    "seq 0 enc_util 7\n"
    "seq 0 dec_util 13\n"
    "xid 0 79 after 3\n"
    "events 1\n";

static const char *H0 = "{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-0000000000a0\","
                        "pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
                        "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"";
static const char *H1 = "{gpu=\"1\",UUID=\"GPU-00000000-0000-0000-0000-0000000000a1\","
                        "pci_bus_id=\"00000000:08:00.0\",device=\"nvidia1\","
                        "modelName=\"Consumer GPU\",Hostname=\"";

/* GPU 0's health families, in the order serve writes them, and the fake's values. */
static const struct {
    const char *name, *type, *value;
} g_want[] = {
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "48"},
    {"DCGM_FI_DEV_FAN_SPEED", "gauge", "40"},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "7"},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "13"},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "9"},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "3"},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "1"},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "17"},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "2"},
    {"DCGM_FI_DEV_RETIRED_SBE", "counter", "4"},
    {"DCGM_FI_DEV_RETIRED_DBE", "counter", "1"},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "2"},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "5"},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "0"},
    {"gpu_profile_row_remap_pending", "gauge", "1"},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "11"},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "3"},
};

static void test_health(void)
{
    h_scenario(g_health);
    char err[512], out[512];
    h_path(err, sizeof err, "serve-health.err");
    h_path(out, sizeof out, "serve-health.out");
    const char *argv[] = {h_cli, "serve", "--listen", "127.0.0.1:0", "--interval", "0.05", NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_port, err, 20));
    int port = read_port(err);
    static char a[1 << 16];
    char want[512];
    snprintf(want, sizeof want, "DCGM_FI_DEV_XID_ERRORS%s", H0);
    /* The XID is due after GPU 0's third reading: wait for its event. */
    bool seen = false;
    for (int i = 0; port > 0 && i < 400 && !seen; i++) {
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
        const char *at = strstr(a, want);
        const char *nl = at ? strchr(at, '\n') : NULL;
        seen = nl && nl - at > 3 && strncmp(nl - 3, " 79", 3) == 0;
        if (!seen)
            h_nap_ms(50);
    }
    CHECK(seen);
    const char *b = body_of(a);
    for (size_t i = 0; i < sizeof g_want / sizeof g_want[0]; i++) {
        char head[256];
        snprintf(head, sizeof head, "\n# TYPE %s %s\n", g_want[i].name, g_want[i].type);
        CHECK_CONTAINS(b, head);
        expect(b, g_want[i].name, H0, g_want[i].value);
        absent(b, g_want[i].name, H1); /* not reported: no line, not a 0 */
    }
    CHECK_CONTAINS(b, "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
                      "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n");
    expect(b, "DCGM_FI_DEV_XID_ERRORS", H0, "79");
    expect(b, "gpu_profile_xid_errors_total", H0, "1");
    /* GPU 1 is watched and had none. */
    expect(b, "DCGM_FI_DEV_XID_ERRORS", H1, "0");
    expect(b, "gpu_profile_xid_errors_total", H1, "0");
    CHECK_CONTAINS(b, "\",DCGM_FI_DRIVER_VERSION=\"580.65.06\"} 79\n");
    kill(pid, SIGTERM);
    int st = h_wait(pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

/* A driver whose GPUs take no event registration and report no health
 * figure (the fake's default device): none of the families at all. */
static void test_no_health(void)
{
    h_scenario("device 0\n");
    char err[512], out[512];
    h_path(err, sizeof err, "serve-plain.err");
    h_path(out, sizeof out, "serve-plain.out");
    const char *argv[] = {h_cli, "serve", "--listen", "127.0.0.1:0", "--interval", "0.05", NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_port, err, 20));
    int port = read_port(err);
    static char a[1 << 16];
    if (port > 0) {
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
        CHECK_CONTAINS(a, "DCGM_FI_DEV_GPU_UTIL{");
        for (size_t i = 0; i < sizeof g_want / sizeof g_want[0]; i++)
            CHECK(strstr(a, g_want[i].name) == NULL);
        CHECK(strstr(a, "XID") == NULL);
        CHECK(strstr(a, "xid") == NULL);
    }
    kill(pid, SIGTERM);
    h_wait(pid);
}

/* "Busy but stuck": GPU 0 busy for 3 samples, then at 100 % util.gpu with
 * 1 % SM activity and idle power (its lowest); GPU 1 at 100 % with 60 %
 * SM activity (working); GPU 2 without GPM (unknown: no line).
 * --stuck-after 0.25 at a 0.05 s interval is 5 samples in a row. */
static const char *g_stuck = "device 0\ndevice 1\ndevice 2\n"
                             "gpm 0\ngpm 1\n"
                             "seq 0 util_gpu 100\nseq 1 util_gpu 100\nseq 2 util_gpu 100\n"
                             "seq 0 gpm_sm_active 70 70 70 1\n"
                             "seq 0 power_mw 400000 400000 400000 80000\n"
                             "seq 1 gpm_sm_active 60\n"
                             "seq 1 power_mw 300000\n";

/* Whether the line starting with prefix ends in " value". */
static bool line_value_is(const char *text, const char *prefix, const char *value)
{
    const char *at = strstr(text, prefix);
    const char *nl = at ? strchr(at, '\n') : NULL;
    size_t n = strlen(value);
    return nl && (size_t)(nl - at) > n + 1 && nl[-(long)n - 1] == ' ' &&
           strncmp(nl - n, value, n) == 0;
}

static void test_stuck(void)
{
    h_scenario(g_stuck);
    char err[512], out[512];
    h_path(err, sizeof err, "serve-stuck.err");
    h_path(out, sizeof out, "serve-stuck.out");
    const char *argv[] = {h_cli,
                          "serve",
                          "--listen",
                          "127.0.0.1:0",
                          "--interval",
                          "0.05",
                          "--stuck-after",
                          "0.25",
                          "--stuck-util",
                          "95",
                          "--stuck-sm",
                          "2",
                          "--stuck-power",
                          "1.1",
                          NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_port, err, 20));
    int port = read_port(err);
    static char a[1 << 16];
    bool seen = false;
    for (int i = 0; port > 0 && i < 400 && !seen; i++) {
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
        seen = line_value_is(a, "gpu_profile_stuck{gpu=\"0\"", "1");
        if (!seen)
            h_nap_ms(50);
    }
    CHECK(seen);
    const char *b = body_of(a);
    CHECK_CONTAINS(b, "# TYPE gpu_profile_stuck gauge\n");
    CHECK(line_value_is(b, "gpu_profile_stuck{gpu=\"0\"", "1"));
    CHECK(line_value_is(b, "gpu_profile_stuck{gpu=\"1\"", "0"));
    CHECK(strstr(b, "gpu_profile_stuck{gpu=\"2\"") == NULL);
    kill(pid, SIGTERM);
    h_wait(pid);
    /* Bad thresholds: 125, naming the option and the range. */
    const char *bad[][3] = {{"--stuck-util", "101", "--stuck-util '101' is not a percentage"},
                            {"--stuck-sm", "x", "--stuck-sm 'x' is not a percentage"},
                            {"--stuck-power", "0.5", "--stuck-power '0.5' is not a ratio"},
                            {"--stuck-after", "0", "--stuck-after: 0 is out of range"}};
    for (size_t i = 0; i < 4; i++) {
        const char *args[] = {h_cli, "serve", bad[i][0], bad[i][1], NULL};
        h_result r;
        h_run(args, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 125);
        CHECK_CONTAINS(r.err, bad[i][2]);
        h_result_free(&r);
    }
}

/* The same figures in --samples rows (NDJSON): exact values, null where
 * GPU 1 does not report them (never 0). */
static void test_samples(void)
{
    h_scenario(g_health);
    char path[512];
    h_path(path, sizeof path, "health.ndjson");
    const char *argv[] = {h_cli, "--samples", path,   "--interval", "0.01",
                          "--",  h_child,     "exit", "0",          NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    char *text = check_read_file(path, NULL);
    CHECK(text != NULL);
    CHECK_CONTAINS(text ? text : "",
                   "\"fan_speed_pct\":40,\"mem_temp_c\":48,\"enc_util_pct\":7,"
                   "\"dec_util_pct\":13,\"ecc_sbe_volatile\":3,\"ecc_dbe_volatile\":1,"
                   "\"ecc_sbe_aggregate\":17,\"ecc_dbe_aggregate\":2,\"retired_pages_sbe\":4,"
                   "\"retired_pages_dbe\":1,\"remapped_rows_corr\":5,\"remapped_rows_unc\":2,"
                   "\"remap_pending\":1,\"remap_failure\":0,\"pcie_replay_count\":9,"
                   "\"nvlink_crc_flit_errs\":11,\"nvlink_recovery_errs\":3,\"xid_count\":");
    CHECK_CONTAINS(text ? text : "", "\"device_index\":1,");
    CHECK_CONTAINS(text ? text : "", "\"fan_speed_pct\":null,\"mem_temp_c\":null,");
    free(text);
}

int main(void)
{
    h_init();
    test_samples();
    test_health();
    test_no_health();
    test_stuck();
    h_cleanup();
    return check_done("test_cli_serve_health");
}
