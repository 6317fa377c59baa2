/*
 * test_cli_json.c - what gpu-profile writes, read back and checked field by
 * field against the fake NVML scenario: the "gpu-profile.run" JSON object
 * (every key, in order; the embedded device summaries; the total over
 * several devices), argv that is not valid UTF-8, the --samples file as
 * CSV and as NDJSON (one row per device sample, the scenario's sequences
 * in order, empty / null for what a device does not report), the devices
 * chosen by CUDA_VISIBLE_DEVICES and --device, and `gpu-profile devices`.
 */
#include "harness.h"
#include "json_mini.h"

#include "gpu_profile.h"

#define GIB 1073741824ull

static const char two_gpus[] =
    "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-11111111-2222-3333-4444-555555555500\n"
    "device 1 name \"NVIDIA A100-SXM4-40GB\" uuid GPU-11111111-2222-3333-4444-555555555501\n"
    "seq 0 util_gpu 55\nseq 0 util_mem 20\nseq 0 mem_used 2147483648\n"
    "seq 0 mem_total 85899345920\nseq 0 power_mw 300000\nseq 0 energy_mj 1000 3000\n"
    "seq 0 temp_c 60\n"
    "seq 1 util_gpu 77\nseq 1 util_mem 30\nseq 1 mem_used 1073741824\n"
    "seq 1 mem_total 42949672960\nseq 1 power_mw 200000\nseq 1 energy_mj 500 1500\n"
    "seq 1 temp_c 50\n";

/* Runs argv and parses its JSON report from `file` (NULL: stderr). */
static jn *run_json(const char *const *argv, const char *const *env, const char *file, int *code)
{
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    *code = r.code;
    char *text = file ? check_read_file(file, NULL) : r.err;
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, strlen(text), &why) : NULL;
    if (!doc)
        fprintf(stderr, "not JSON (%s):\n%s\n", why ? why : "no file", text ? text : "");
    CHECK(doc != NULL);
    if (file)
        free(text);
    h_result_free(&r);
    return doc;
}

static void check_keys(const jn *obj, const char *const *keys, size_t n)
{
    CHECK(obj && obj->t == JN_OBJ);
    if (!obj || obj->t != JN_OBJ)
        return;
    CHECK_U64(obj->n, n);
    for (size_t i = 0; i < n && i < obj->n; i++)
        CHECK_STR(obj->keys[i], keys[i]);
}

static void check_device(const jn *d, unsigned index, const char *name, const char *uuid,
                         unsigned util, unsigned util_mem, uint64_t mem_used, uint64_t mem_total,
                         unsigned power_mw, double energy_j, int temp)
{
    CHECK_STR(jn_str(jn_get(d, "schema")), "gpu-profile.summary");
    CHECK_INT(jn_int(jn_get(d, "schema_version")), 1);
    CHECK_INT(jn_int(jn_get(d, "device_index")), index);
    CHECK_STR(jn_str(jn_get(d, "name")), name);
    CHECK_STR(jn_str(jn_get(d, "uuid")), uuid);
    CHECK_STR(jn_str(jn_get(d, "backend")), "nvml");
    CHECK(jn_is_null(jn_get(d, "note")));
    CHECK_NEAR(jn_num(jn_get(d, "interval_s")), 0.001, 1e-12);
    CHECK(jn_int(jn_get(d, "sample_count")) >= 2);
    CHECK_INT(jn_int(jn_get(d, "samples_warmup")), 0);
    /* The command names its processes: the per-process bits too. */
    CHECK_INT(jn_int(jn_get(d, "valid_mask")), 0x3FF | GP_M_PROC_MEM | GP_M_PROC_UTIL);
    CHECK_NEAR(jn_num(jn_get(d, "util_gpu_mean_pct")), util, 1e-9);
    CHECK_INT(jn_int(jn_get(d, "util_gpu_p50_pct")), util);
    CHECK_INT(jn_int(jn_get(d, "util_gpu_p95_pct")), util);
    CHECK_INT(jn_int(jn_get(d, "util_gpu_max_pct")), util);
    CHECK_NEAR(jn_num(jn_get(d, "util_mem_mean_pct")), util_mem, 1e-9);
    CHECK_INT(jn_int(jn_get(d, "util_mem_max_pct")), util_mem);
    CHECK_U64(jn_u64(jn_get(d, "mem_used_max_bytes")), mem_used);
    CHECK_U64(jn_u64(jn_get(d, "mem_total_bytes")), mem_total);
    CHECK_NEAR(jn_num(jn_get(d, "power_mean_mw")), power_mw, 1e-9);
    CHECK_INT(jn_int(jn_get(d, "power_max_mw")), power_mw);
    /* Two counter readings, at the first and the last round. */
    CHECK_NEAR(jn_num(jn_get(d, "energy_j")), energy_j, 1e-9);
    CHECK_STR(jn_str(jn_get(d, "energy_source")), "counter");
    CHECK_INT(jn_int(jn_get(d, "temp_max_c")), temp);
    CHECK_NEAR(jn_num(jn_get(d, "clock_sm_mean_mhz")), 1980, 1e-9);
    CHECK_STR(jn_str(jn_at(jn_get(d, "throttle_reasons"), 0)), "gpu_idle");
    double duration = jn_num(jn_get(d, "duration_s"));
    CHECK(duration > 0);
    CHECK_NEAR(jn_num(jn_get(d, "busy_time_est_s")), duration * util / 100.0, 2e-6);
    CHECK_STR(jn_str(jn_get(d, "device_status")), "ok");
    CHECK(jn_is_null(jn_get(d, "device_error")));
}

static void test_json_report(void)
{
    h_scenario(two_gpus);
    char report[512];
    h_path(report, sizeof report, "report.json");
    const char *argv[] = {h_cli, "--json", "-o",   report, "--interval", "0.001",
                          "--",  h_child,  "exit", "3",    NULL};
    int code = -1;
    jn *doc = run_json(argv, NULL, report, &code);
    CHECK_INT(code, 3);
    static const char *const keys[] = {"schema",
                                       "schema_version",
                                       "gpu_profile_version",
                                       "command",
                                       "exit_status",
                                       "signal",
                                       "core_dumped",
                                       "interrupted_by",
                                       "duration_s",
                                       "descendants_s",
                                       "profiler_stopped_s",
                                       "backend",
                                       "note",
                                       "capture",
                                       "devices",
                                       "total",
                                       "samples_file"};
    check_keys(doc, keys, sizeof keys / sizeof keys[0]);
    CHECK_STR(jn_str(jn_get(doc, "schema")), "gpu-profile.run");
    CHECK_INT(jn_int(jn_get(doc, "schema_version")), 1);
    CHECK(jn_is_null(jn_get(doc, "capture"))); /* no window asked for */
    CHECK_STR(jn_str(jn_get(doc, "gpu_profile_version")), gp_version());
    const jn *cmd = jn_get(doc, "command");
    CHECK_INT(cmd ? cmd->n : 0, 3);
    CHECK_STR(jn_str(jn_at(cmd, 0)), h_child);
    CHECK_STR(jn_str(jn_at(cmd, 1)), "exit");
    CHECK_STR(jn_str(jn_at(cmd, 2)), "3");
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 3);
    CHECK(jn_is_null(jn_get(doc, "signal")));
    CHECK(jn_get(doc, "core_dumped") && jn_get(doc, "core_dumped")->t == JN_BOOL &&
          !jn_get(doc, "core_dumped")->b);
    CHECK(jn_is_null(jn_get(doc, "interrupted_by")));
    CHECK(jn_num(jn_get(doc, "duration_s")) > 0);
    CHECK_NEAR(jn_num(jn_get(doc, "descendants_s")), 0, 0);
    CHECK(jn_is_null(jn_get(doc, "profiler_stopped_s")));
    CHECK_STR(jn_str(jn_get(doc, "backend")), "nvml");
    CHECK(jn_is_null(jn_get(doc, "note")));
    CHECK(jn_is_null(jn_get(doc, "samples_file")));

    const jn *devs = jn_get(doc, "devices");
    CHECK_INT(devs ? devs->n : 0, 2);
    const jn *d0 = jn_at(devs, 0), *d1 = jn_at(devs, 1);
    check_device(d0, 0, "NVIDIA H100 80GB HBM3", "GPU-11111111-2222-3333-4444-555555555500", 55, 20,
                 2 * GIB, 80 * GIB, 300000, 2.0, 60);
    check_device(d1, 1, "NVIDIA A100-SXM4-40GB", "GPU-11111111-2222-3333-4444-555555555501", 77, 30,
                 1 * GIB, 40 * GIB, 200000, 1.0, 50);

    const jn *t = jn_get(doc, "total");
    static const char *const tkeys[] = {
        "devices",           "duration_s",      "energy_j",           "energy_source",
        "power_mean_mw",     "power_max_mw",    "mem_used_max_bytes", "mem_total_bytes",
        "util_gpu_mean_pct", "busy_time_est_s", "failed_devices"};
    check_keys(t, tkeys, sizeof tkeys / sizeof tkeys[0]);
    CHECK_INT(jn_int(jn_get(t, "devices")), 2);
    CHECK_NEAR(jn_num(jn_get(t, "duration_s")), jn_num(jn_get(d0, "duration_s")), 1e-9);
    CHECK_NEAR(jn_num(jn_get(t, "energy_j")), 3.0, 1e-9);
    CHECK_STR(jn_str(jn_get(t, "energy_source")), "counter");
    CHECK_NEAR(jn_num(jn_get(t, "power_mean_mw")), 500000, 1e-9);
    CHECK_NEAR(jn_num(jn_get(t, "power_max_mw")),
               jn_num(jn_get(d0, "power_max_mw")) + jn_num(jn_get(d1, "power_max_mw")), 1e-9);
    CHECK_U64(jn_u64(jn_get(t, "mem_used_max_bytes")), 3 * GIB);
    CHECK_U64(jn_u64(jn_get(t, "mem_total_bytes")), 120 * GIB);
    CHECK_NEAR(jn_num(jn_get(t, "util_gpu_mean_pct")), 66, 1e-9);
    CHECK_NEAR(jn_num(jn_get(t, "busy_time_est_s")),
               jn_num(jn_get(d0, "busy_time_est_s")) + jn_num(jn_get(d1, "busy_time_est_s")), 2e-6);
    CHECK_INT(jn_get(t, "failed_devices") ? jn_get(t, "failed_devices")->n : 99, 0);
    jn_free(doc);

    /* Without -o the same object is the last thing on stderr. */
    const char *argv2[] = {h_cli, "--json", "--", h_child, "exit", "0", NULL};
    doc = run_json(argv2, NULL, NULL, &code);
    CHECK_INT(code, 0);
    CHECK_INT(jn_get(doc, "devices") ? jn_get(doc, "devices")->n : 0, 2);
    jn_free(doc);

    /* --warmup: the early samples are counted apart, not in the statistics. */
    const char *argv4[] = {h_cli, "--json", "--warmup", "3600", "--device", "0",
                           "--",  h_child,  "exit",     "0",    NULL};
    doc = run_json(argv4, NULL, NULL, &code);
    const jn *w = jn_at(jn_get(doc, "devices"), 0);
    CHECK_NEAR(jn_num(jn_get(w, "warmup_s")), 3600, 0);
    CHECK_INT(jn_int(jn_get(w, "sample_count")), 0);
    CHECK(jn_int(jn_get(w, "samples_warmup")) >= 2);
    CHECK(jn_is_null(jn_get(w, "util_gpu_mean_pct")));
    jn_free(doc);

    /* One device: no total. */
    const char *argv3[] = {h_cli, "--json", "--device", "1", "--", h_child, "exit", "0", NULL};
    doc = run_json(argv3, NULL, NULL, &code);
    CHECK_INT(jn_get(doc, "devices") ? jn_get(doc, "devices")->n : 0, 1);
    CHECK_INT(jn_int(jn_get(jn_at(jn_get(doc, "devices"), 0), "device_index")), 1);
    CHECK(jn_is_null(jn_get(doc, "total")));
    jn_free(doc);
}

static void test_text_total(void)
{
    h_scenario(two_gpus);
    const char *argv[] = {h_cli, "--interval", "0.001", "--", h_child, "exit", "0", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "GPU 0  NVIDIA H100 80GB HBM3");
    CHECK_CONTAINS(r.err, "\n\nGPU 1  NVIDIA A100-SXM4-40GB");
    CHECK_CONTAINS(r.err, "\n\ntotal  2 GPUs\n");
    CHECK_CONTAINS(r.err, "\n  energy            3.0 J (counter, summed)\n");
    CHECK_CONTAINS(r.err, "\n  power             mean 500.0 W  max 500.0 W (sums of the devices' "
                          "means and maxima)\n");
    CHECK_CONTAINS(r.err, "\n  memory used       max 3.00 GiB of 120.00 GiB (sum of the "
                          "devices' maxima)\n");
    CHECK_CONTAINS(r.err, "\n  util.gpu          mean 66.0% (mean over the devices)\n");
    h_result_free(&r);
}

/* A GPU lost mid-run: its busy time covers only the span it answered
 * (not the whole run), and the total says which device covers less. */
static void test_lost_gpu(void)
{
    char scen[sizeof two_gpus + 64];
    snprintf(scen, sizeof scen, "%serror 1 lost_after 5\n", two_gpus);
    h_scenario(scen);
    const char *argv[] = {h_cli,   "--json", "--interval", "0.05", "--",
                          h_child, "sleep",  "1000",       NULL};
    int code = -1;
    jn *doc = run_json(argv, NULL, NULL, &code);
    CHECK_INT(code, 0);
    const jn *d1 = jn_at(jn_get(doc, "devices"), 1);
    CHECK_STR(jn_str(jn_get(d1, "device_status")), "device_lost");
    double at_s = jn_num(jn_get(d1, "device_error_at_s"));
    double dur_s = jn_num(jn_get(d1, "duration_s"));
    CHECK(at_s > 0 && at_s < dur_s - 0.3);
    CHECK_NEAR(jn_num(jn_get(d1, "busy_time_est_s")), at_s * 77 / 100.0, 2e-6);
    const jn *d0 = jn_at(jn_get(doc, "devices"), 0);
    CHECK_NEAR(jn_num(jn_get(d0, "busy_time_est_s")), dur_s * 55 / 100.0, 2e-6);
    const jn *f = jn_get(jn_get(doc, "total"), "failed_devices");
    CHECK_INT(f ? f->n : 99, 1);
    CHECK_INT(jn_int(jn_get(jn_at(f, 0), "device_index")), 1);
    CHECK_NEAR(jn_num(jn_get(jn_at(f, 0), "at_s")), at_s, 1e-6);
    jn_free(doc);

    const char *argv2[] = {h_cli, "--interval", "0.05", "--", h_child, "sleep", "1000", NULL};
    h_result r;
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "until it failed x mean util.gpu)");
    CHECK_CONTAINS(r.err, "GPU1 lost at ");
    CHECK_CONTAINS(r.err, ": energy and busy time count only the samples before\n");
    h_result_free(&r);
}

static void test_json_strings(void)
{
    h_scenario("device 0\n");
    const char *argv[] = {h_cli,  "--json", "--backend",       "none",     "--",       h_child,
                          "exit", "0",      "a\"b\\c\n\t\x01", "\xff\xfe", "\xc3\xa9", NULL};
    int code = -1;
    jn *doc = run_json(argv, NULL, NULL, &code);
    CHECK_INT(code, 0);
    const jn *cmd = jn_get(doc, "command");
    CHECK_INT(cmd ? cmd->n : 0, 6);
    CHECK_STR(jn_str(jn_at(cmd, 3)), "a\"b\\c\n\t\x01");
    CHECK_STR(jn_str(jn_at(cmd, 4)), "\xef\xbf\xbd\xef\xbf\xbd"); /* U+FFFD twice */
    CHECK_STR(jn_str(jn_at(cmd, 5)), "\xc3\xa9");
    jn_free(doc);
}

/* ---------------------------------------------------------- --samples */

static const char samples_scenario[] = "device 0 uuid GPU-00000000-0000-0000-0000-0000000000c0\n"
                                       "device 1 uuid GPU-00000000-0000-0000-0000-0000000000c1\n"
                                       "seq 0 util_gpu 10 20 30\n"
                                       "seq 0 temp_c -5\n"
                                       "seq 1 util_gpu 90 80\n"
                                       "unsupported 1 power\n"
                                       "gpm 0\n"
                                       "seq 0 gpm_sm_active 37 38\n";

static const char *const sample_columns[] = {"t_wall_ns",
                                             "t_mono_ns",
                                             "device_index",
                                             "util_gpu_pct",
                                             "util_mem_pct",
                                             "mem_used_bytes",
                                             "mem_total_bytes",
                                             "power_mw",
                                             "energy_mj",
                                             "temp_c",
                                             "clock_sm_mhz",
                                             "clock_mem_mhz",
                                             "throttle_reasons_mask",
                                             "pcie_tx_kbps",
                                             "pcie_rx_kbps",
                                             "sm_active_pct",
                                             "sm_occupancy_pct",
                                             "tensor_active_pct",
                                             "tensor_dfma_active_pct",
                                             "tensor_hmma_active_pct",
                                             "tensor_imma_active_pct",
                                             "dram_active_pct",
                                             "fp64_active_pct",
                                             "fp32_active_pct",
                                             "fp16_active_pct",
                                             "gpm_pcie_tx_bps",
                                             "gpm_pcie_rx_bps",
                                             "nvlink_tx_bps",
                                             "nvlink_rx_bps",
                                             "fan_speed_pct",
                                             "mem_temp_c",
                                             "enc_util_pct",
                                             "dec_util_pct",
                                             "ecc_sbe_volatile",
                                             "ecc_dbe_volatile",
                                             "ecc_sbe_aggregate",
                                             "ecc_dbe_aggregate",
                                             "retired_pages_sbe",
                                             "retired_pages_dbe",
                                             "remapped_rows_corr",
                                             "remapped_rows_unc",
                                             "remap_pending",
                                             "remap_failure",
                                             "pcie_replay_count",
                                             "nvlink_crc_flit_errs",
                                             "nvlink_recovery_errs",
                                             "xid_count",
                                             "xid_last",
                                             "proc_count",
                                             "proc_all_count",
                                             "proc_mem_used_bytes",
                                             "proc_all_mem_used_bytes",
                                             "proc_sm_pct",
                                             "proc_mem_pct",
                                             "proc_all_sm_pct",
                                             "proc_all_mem_pct"};
#define N_COLS (sizeof sample_columns / sizeof sample_columns[0])

/* One sample row as text cells ("" for an empty cell or null). */
typedef struct row {
    char cell[N_COLS][32];
} row;

static unsigned long long cell_u(const row *r, size_t k)
{
    return strtoull(r->cell[k], NULL, 10);
}

/* Checks rows (in file order) against samples_scenario and the report. */
static void check_rows(const row *rows, size_t n, const jn *report)
{
    size_t per[2] = {0, 0}, last[2] = {0, 0};
    unsigned long long prev_mono = 0;
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        unsigned d = (unsigned)cell_u(r, 2);
        CHECK(d <= 1);
        if (d > 1)
            continue;
        size_t k = per[d]++;
        last[d] = i;
        unsigned long long mono = cell_u(r, 1);
        CHECK(mono >= prev_mono);
        prev_mono = mono;
        CHECK(cell_u(r, 0) > 1600000000ull * 1000000000ull);
        /* Rounds read device 0 then device 1 with one time stamp. */
        CHECK_INT(d, i % 2);
        if (d == 1)
            CHECK_STR(r->cell[1], rows[i - 1].cell[1]);
        unsigned long long want = d == 0 ? (k < 3 ? 10 * (k + 1) : 30) : (k < 1 ? 90 : 80);
        CHECK_U64(cell_u(r, 3), want);
        CHECK_STR(r->cell[4], "17");
        CHECK_STR(r->cell[5], "1073741824");
        CHECK_STR(r->cell[6], "85899345920");
        CHECK_STR(r->cell[7], d == 0 ? "75000" : "");
        CHECK_STR(r->cell[9], d == 0 ? "-5" : "35");
        CHECK_STR(r->cell[10], "1980");
        CHECK_STR(r->cell[11], "2619");
        CHECK_STR(r->cell[12], "1");
        /* PCIe is not read unless asked for. */
        CHECK_STR(r->cell[13], "");
        CHECK_STR(r->cell[14], "");
        /* GPM on device 0 from its second sample on (percent with two
         * decimals, bytes/s: the fake's 1000 MiB/s); never on device 1. */
        int gpm = d == 0 && k > 0;
        CHECK_STR(r->cell[15], gpm ? (k == 1 ? "37.00" : "38.00") : "");
        CHECK_STR(r->cell[17], gpm ? "12.00" : "");
        CHECK_STR(r->cell[18], gpm ? "0.00" : "");
        CHECK_STR(r->cell[25], gpm ? "1048576000" : "");
        CHECK_STR(r->cell[28], gpm ? "0" : "");
        /* No health figure on the fake's default devices: empty, never
         * 0 (tests/cli/test_cli_serve_health.c and test_nvml_health have
         * the values). */
        for (size_t c = 29; c < 48; c++)
            CHECK_STR(r->cell[c], "");
        /* No process on either device: known to be none (test_cli_procs
         * has the values). */
        for (size_t c = 48; c < N_COLS; c++)
            CHECK_STR(r->cell[c], "0");
    }
    /* The slow energy counter: read in the first and the last round only. */
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)cell_u(&rows[i], 2);
        int edge = i < 2 || i == last[d];
        CHECK_STR(rows[i].cell[8], edge ? "123456789" : "");
    }
    const jn *devs = jn_get(report, "devices");
    for (unsigned d = 0; d < 2; d++) {
        const jn *s = jn_at(devs, d);
        CHECK_U64(per[d], (uint64_t)jn_int(jn_get(s, "sample_count")));
    }
    CHECK(per[0] >= 2);
}

static void test_samples_csv(void)
{
    h_scenario(samples_scenario);
    char csv[512], report[512];
    h_path(csv, sizeof csv, "samples.CSV"); /* the extension is matched without case */
    h_path(report, sizeof report, "samples-report.json");
    const char *argv[] = {h_cli,   "--samples", csv,     "--json", "-o", report, "--interval",
                          "0.001", "--",        h_child, "exit",   "0",  NULL};
    int code = -1;
    jn *doc = run_json(argv, NULL, report, &code);
    CHECK_INT(code, 0);
    CHECK_STR(jn_str(jn_get(doc, "samples_file")), csv);
    char *text = check_read_file(csv, NULL);
    CHECK(text != NULL);
    if (!text) {
        jn_free(doc);
        return;
    }
    /* The header, then one row per line, every row with every column. */
    char line[2048], want[2048] = "";
    for (size_t k = 0; k < N_COLS; k++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", k ? "," : "",
                 sample_columns[k]);
    CHECK_STR(h_line(text, 0, line, sizeof line), want);
    int lines = h_count_lines(text);
    size_t n = lines > 1 ? (size_t)lines - 1 : 0;
    row *rows = calloc(n + 1, sizeof *rows);
    for (size_t i = 0; rows && i < n; i++) {
        h_line(text, (int)i + 1, line, sizeof line);
        size_t col = 0;
        char *p = line;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            if (col < N_COLS)
                snprintf(rows[i].cell[col], sizeof rows[i].cell[col], "%s", p);
            col++;
            if (!comma)
                break;
            p = comma + 1;
        }
        CHECK_U64(col, N_COLS);
    }
    if (rows)
        check_rows(rows, n, doc);
    free(rows);
    free(text);
    jn_free(doc);
}

static void test_samples_ndjson(void)
{
    h_scenario(samples_scenario);
    for (int ext = 0; ext < 2; ext++) {
        char file[512], report[512];
        h_path(file, sizeof file, ext ? "samples.jsonl" : "samples.ndjson");
        h_path(report, sizeof report, "samples-report.json");
        const char *argv[] = {h_cli,   "--samples", file,    "--json", "-o", report, "--interval",
                              "0.001", "--",        h_child, "exit",   "0",  NULL};
        int code = -1;
        jn *doc = run_json(argv, NULL, report, &code);
        CHECK_INT(code, 0);
        char *text = check_read_file(file, NULL);
        CHECK(text != NULL);
        if (!text) {
            jn_free(doc);
            continue;
        }
        int lines = h_count_lines(text);
        row *rows = calloc((size_t)lines + 1, sizeof *rows);
        for (int i = 0; rows && i < lines; i++) {
            char line[2048];
            h_line(text, i, line, sizeof line);
            const char *why = NULL;
            jn *o = jn_parse(line, strlen(line), &why);
            check_keys(o, sample_columns, N_COLS);
            for (size_t k = 0; o && k < N_COLS && k < o->n; k++) {
                const jn *v = o->items[k];
                CHECK(v->t == JN_NUM || (v->t == JN_NULL && k >= 3));
                snprintf(rows[i].cell[k], sizeof rows[i].cell[k], "%s",
                         v->t == JN_NUM ? v->text : "");
            }
            jn_free(o);
        }
        if (rows)
            check_rows(rows, (size_t)lines, doc);
        free(rows);
        free(text);
        jn_free(doc);
    }
}

/* ------------------------------------------------- which devices */

static const char three_gpus[] = "device 0 uuid GPU-aaaaaaaa-0000-0000-0000-000000000000\n"
                                 "device 1 uuid GPU-bbbbbbbb-1111-1111-1111-111111111111\n"
                                 "device 2 uuid GPU-bbbbcccc-2222-2222-2222-222222222222\n";

/* Runs with CUDA_VISIBLE_DEVICES=cvd (NULL: unset) and the extra options;
 * returns the sampled device indices as "2,0" and the note. */
static int devices_for(const char *cvd, const char *opt, const char *val, char *list,
                       size_t list_len, char *note, size_t note_len)
{
    char env_cvd[256];
    snprintf(env_cvd, sizeof env_cvd, "CUDA_VISIBLE_DEVICES=%s", cvd ? cvd : "");
    const char *env[] = {cvd ? env_cvd : "CUDA_VISIBLE_DEVICES", NULL};
    const char *argv[10];
    size_t n = 0;
    argv[n++] = h_cli;
    argv[n++] = "--json";
    if (opt) {
        argv[n++] = opt;
        if (val)
            argv[n++] = val;
    }
    argv[n++] = "--";
    argv[n++] = h_child;
    argv[n++] = "exit";
    argv[n++] = "0";
    argv[n] = NULL;
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    list[0] = note[0] = '\0';
    const char *why = NULL;
    jn *doc = r.code == 0 ? jn_parse(r.err, r.err_len, &why) : NULL;
    const jn *devs = jn_get(doc, "devices");
    for (size_t i = 0; devs && i < devs->n; i++)
        snprintf(list + strlen(list), list_len - strlen(list), "%s%lld", i ? "," : "",
                 jn_int(jn_get(devs->items[i], "device_index")));
    const char *s = jn_str(jn_get(doc, "note"));
    snprintf(note, note_len, "%s", s ? s : "");
    jn_free(doc);
    int code = r.code;
    h_result_free(&r);
    return code;
}

static int five_rows(const void *path)
{
    char *text = check_read_file(path, NULL);
    int n = text ? h_count_lines(text) : 0;
    free(text);
    return n >= 5;
}

/* --samples rows are written as they are taken: a profiler killed mid-run
 * (SIGKILL: no chance to write anything at exit) leaves them all behind,
 * each line whole. */
static void test_samples_killed(void)
{
    h_scenario(samples_scenario);
    char nd[512];
    h_path(nd, sizeof nd, "killed.ndjson");
    unlink(nd);
    const char *argv[] = {h_cli, "--samples", nd,      "--interval", "0.01", "--no-live",
                          "--",  h_child,     "sleep", "1500",       NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, "/dev/null", "/dev/null");
    CHECK(h_wait_for(five_rows, nd, 30.0));
    CHECK_INT(kill(pid, SIGKILL), 0);
    CHECK_INT(h_code(h_wait(pid)), 128 + SIGKILL);
    char *text = check_read_file(nd, NULL);
    CHECK(text != NULL && h_count_lines(text) >= 5);
    size_t len = text ? strlen(text) : 0;
    CHECK(len > 0 && text[len - 1] == '\n'); /* no half line */
    char line[2048];
    for (int i = 0; text && i < h_count_lines(text); i++) {
        const char *why = NULL;
        h_line(text, i, line, sizeof line);
        jn *row = jn_parse(line, strlen(line), &why);
        if (!row)
            fprintf(stderr, "row %d not JSON (%s): %s\n", i, why ? why : "?", line);
        CHECK(row != NULL);
        CHECK(jn_u64(jn_get(row, "t_wall_ns")) > 0);
        jn_free(row);
    }
    free(text);
    h_nap_ms(1600); /* CMD, orphaned by the kill, ends on its own */
}

static void test_visible_devices(void)
{
    h_scenario(three_gpus);
    char list[64], note[2048];
    CHECK_INT(devices_for(NULL, NULL, NULL, list, sizeof list, note, sizeof note), 0);
    CHECK_STR(list, "0,1,2");
    CHECK_STR(note, "");
    devices_for("2,0", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "2,0");
    CHECK_STR(note, "");
    devices_for("GPU-aaaa", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "0");
    devices_for("GPU-bbbbcccc-2222-2222-2222-222222222222,1", NULL, NULL, list, sizeof list, note,
                sizeof note);
    CHECK_STR(list, "2,1");
    devices_for("1,7,2", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "1");
    CHECK_STR(note, "CUDA_VISIBLE_DEVICES: '7': no such device (the backend sees 3: 0-2): it and "
                    "the entries after it are ignored, as CUDA does");
    devices_for("MIG-4f1c,1", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "1");
    CHECK_CONTAINS(note, "MIG-4f1c is a MIG instance, not sampled");

    /* Nothing visible: CMD runs, nothing is sampled, the note says why. */
    devices_for("", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "");
    CHECK_STR(note, "nothing sampled (CUDA_VISIBLE_DEVICES is empty: no GPU is visible to the "
                    "command)");
    devices_for("GPU-bbbb", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "");
    CHECK_STR(note, "nothing sampled (CUDA_VISIBLE_DEVICES: 'GPU-bbbb': more than one GPU has "
                    "this UUID prefix: it and the entries after it are ignored, as CUDA does)");
    devices_for("-1", NULL, NULL, list, sizeof list, note, sizeof note);
    CHECK_STR(list, "");

    /* --device wins over CUDA_VISIBLE_DEVICES. */
    devices_for("0", "--device", "2,1", list, sizeof list, note, sizeof note);
    CHECK_STR(list, "2,1");
    devices_for("", "--device", "all", list, sizeof list, note, sizeof note);
    CHECK_STR(list, "0,1,2");
    devices_for(NULL, "--device", "GPU-bbbbc", list, sizeof list, note, sizeof note);
    CHECK_STR(list, "2");
    /* A --device no GPU has is a mistake, not "nothing to sample". */
    CHECK_INT(devices_for(NULL, "--device", "GPU-ffff", list, sizeof list, note, sizeof note), 125);

    /* With --strict, nothing to sample is an error and CMD is not run. */
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *argv[] = {h_cli, "--strict", "--", h_child, "exit", "0", NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    char line[512];
    CHECK_STR(h_line(r.err, 0, line, sizeof line),
              "gpu-profile: CUDA_VISIBLE_DEVICES is empty: no GPU is visible to the command");
    h_result_free(&r);
    const char *argv2[] = {h_cli,   "--strict", "--device", "GPU-ffff", "--",
                           h_child, "exit",     "0",        NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(h_line(r.err, 0, line, sizeof line),
              "gpu-profile: --device: 'GPU-ffff': no GPU has this UUID; the command was not run");
    h_result_free(&r);
}

/* ------------------------------------------------- gpu-profile devices */

/* MIG instances listed after the whole GPUs (tests/scenarios/nvml_mig.txt). */
static void test_devices_mig(void)
{
    char scen[1024];
    snprintf(scen, sizeof scen, "%s/scenarios/nvml_mig.txt", check_env("GP_TEST_SOURCE_DIR"));
    setenv("FAKE_NVML_SCENARIO", scen, 1);
    const char *argv[] = {h_cli, "devices", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out,
              "index  name                               uuid                                     "
              " memory      pci               mig\n"
              "0      NVIDIA H100 80GB HBM3              GPU-00000000-0000-0000-0000-000000000000 "
              " 80.00 GiB   00000000:07:00.0  -\n"
              "1      NVIDIA H100 80GB HBM3              GPU-11111111-1111-1111-1111-111111111111 "
              " 80.00 GiB   00000000:08:00.0  -\n"
              "2      NVIDIA H100 80GB HBM3 MIG 3g.40gb  MIG-00000000-0000-0000-0000-000000000000 "
              " 39.50 GiB   00000000:07:00.0  3g.40gb GI 2 CI 0 of GPU 0\n"
              "3      NVIDIA H100 80GB HBM3 MIG 2g.20gb  MIG-00000001-0000-0000-0000-000000000001 "
              " 19.62 GiB   00000000:07:00.0  2g.20gb GI 3 CI 0 of GPU 0\n"
              "4      NVIDIA H100 80GB HBM3 MIG 1g.10gb  MIG-00000003-0000-0000-0000-000000000003 "
              " 9.75 GiB    00000000:07:00.0  1g.10gb GI 10 CI 0 of GPU 0\n"
              "backend nvml, driver 590.48.01\n");
    h_result_free(&r);

    const char *argv2[] = {h_cli, "devices", "--json", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(
        r.out, "{\"index\":4,\"name\":\"NVIDIA H100 80GB HBM3 MIG 1g.10gb\",\"uuid\":\"MIG-"
               "00000003-0000-0000-0000-000000000003\",\"mem_total_bytes\":10468982784,\"mig\":"
               "{\"profile\":\"1g.10gb\",\"gpu_instance_id\":10,\"compute_instance_id\":0,"
               "\"parent_index\":0,\"parent_uuid\":\"GPU-00000000-0000-0000-0000-000000000000\","
               "\"parent_name\":\"NVIDIA H100 80GB HBM3\"},\"pci_bus_id\":\"00000000:07:00.0\"}],"
               "\"error\":null}\n");
    CHECK_CONTAINS(r.out, "\"mem_total_bytes\":85899345920,\"mig\":null,"
                          "\"pci_bus_id\":\"00000000:08:00.0\"},");
    h_result_free(&r);

    /* Selected by MIG UUID, with its parent: the total counts the parent
     * once (the instance's memory is part of it). */
    const char *argv3[] = {h_cli, "--device", "MIG-00000003,0", "--interval", "0.02",
                           "--",  h_child,    "sleep",          "100",        NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "GPU 4  MIG 1g.10gb (GI 10 CI 0) of GPU 0 NVIDIA H100 80GB HBM3\n"
                          "       MIG-00000003-0000-0000-0000-000000000003  [nvml]\n");
    CHECK_CONTAINS(r.err, "\ntotal  2 GPUs\n");
    CHECK_CONTAINS(r.err, "memory used       max 1.00 GiB of 80.00 GiB (sum of the devices' "
                          "maxima)\n");
    h_result_free(&r);

    /* CUDA_VISIBLE_DEVICES naming an instance by its full UUID. */
    const char *env[] = {"CUDA_VISIBLE_DEVICES=MIG-00000001-0000-0000-0000-000000000001", NULL};
    const char *argv4[] = {h_cli,   "--json", "--interval", "0.02", "--",
                           h_child, "sleep",  "100",        NULL};
    h_run(argv4, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    /* The JSON report goes to stderr. */
    CHECK_CONTAINS(r.err, "\"devices\":[{\"schema\":\"gpu-profile.summary\",\"schema_version\":1,"
                          "\"device_index\":3,");
    CHECK_CONTAINS(r.err, "\"mig\":{\"profile\":\"2g.20gb\",\"gpu_instance_id\":3,");
    h_result_free(&r);
}

static void test_devices_command(void)
{
    h_scenario(
        "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-5a1e1f4e-0c7d-4c43-9a52-3b8a1d2e6f01\n"
        "device 1 uuid GPU-00000000-0000-0000-0000-000000000001\n"
        "seq 1 mem_total 42949672960\n"
        "driver_version 555.42.06\n");
    const char *argv[] = {h_cli, "devices", "--json", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(r.err_len, 0);
    const char *why = NULL;
    jn *doc = jn_parse(r.out, r.out_len, &why);
    CHECK(doc != NULL);
    static const char *const keys[] = {"schema",         "schema_version", "backend",
                                       "driver_version", "devices",        "error"};
    check_keys(doc, keys, 6);
    CHECK(jn_is_null(jn_get(doc, "error")));
    CHECK_STR(jn_str(jn_get(doc, "schema")), "gpu-profile.devices");
    CHECK_INT(jn_int(jn_get(doc, "schema_version")), 1);
    CHECK_STR(jn_str(jn_get(doc, "backend")), "nvml");
    CHECK_STR(jn_str(jn_get(doc, "driver_version")), "555.42.06");
    const jn *devs = jn_get(doc, "devices");
    CHECK_INT(devs ? devs->n : 0, 2);
    static const char *const dkeys[] = {"index",           "name", "uuid",
                                        "mem_total_bytes", "mig",  "pci_bus_id"};
    check_keys(jn_at(devs, 0), dkeys, 6);
    CHECK(jn_get(jn_at(devs, 0), "mig") && jn_get(jn_at(devs, 0), "mig")->t == JN_NULL);
    CHECK_INT(jn_int(jn_get(jn_at(devs, 0), "index")), 0);
    CHECK_STR(jn_str(jn_get(jn_at(devs, 0), "name")), "NVIDIA H100 80GB HBM3");
    CHECK_STR(jn_str(jn_get(jn_at(devs, 0), "uuid")), "GPU-5a1e1f4e-0c7d-4c43-9a52-3b8a1d2e6f01");
    CHECK_U64(jn_u64(jn_get(jn_at(devs, 0), "mem_total_bytes")), 80 * GIB);
    CHECK_INT(jn_int(jn_get(jn_at(devs, 1), "index")), 1);
    CHECK_STR(jn_str(jn_get(jn_at(devs, 1), "name")), "Fake NVIDIA GPU");
    CHECK_U64(jn_u64(jn_get(jn_at(devs, 1), "mem_total_bytes")), 40 * GIB);
    jn_free(doc);
    h_result_free(&r);

    const char *argv2[] = {h_cli, "devices", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "index  name                   uuid                                      "
                     "memory      pci\n"
                     "0      NVIDIA H100 80GB HBM3  GPU-5a1e1f4e-0c7d-4c43-9a52-3b8a1d2e6f01  "
                     "80.00 GiB   00000000:07:00.0\n"
                     "1      Fake NVIDIA GPU        GPU-00000000-0000-0000-0000-000000000001  "
                     "40.00 GiB   00000000:08:00.0\n"
                     "backend nvml, driver 555.42.06\n");
    h_result_free(&r);

    const char *argv3[] = {h_cli, "devices", "--backend", "none", NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "no GPU found (backend none)\n");
    h_result_free(&r);

    /* The fake nvidia-smi replaying an H100 capture. */
    char capture[1024], env_caps[1100];
    snprintf(capture, sizeof capture,
             "%s/fixtures/nvidia-smi/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
             check_env("GP_TEST_SOURCE_DIR"));
    snprintf(env_caps, sizeof env_caps, "FAKE_SMI_CAPTURES=%s", capture);
    const char *env_smi[] = {env_caps, NULL};
    const char *argv4[] = {h_cli, "devices", "--json", "--backend=smi", NULL};
    h_run(argv4, env_smi, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    doc = jn_parse(r.out, r.out_len, &why);
    CHECK_STR(jn_str(jn_get(doc, "backend")), "smi");
    CHECK_CONTAINS(jn_str(jn_get(jn_at(jn_get(doc, "devices"), 0), "name")), "H100");
    jn_free(doc);
    h_result_free(&r);

    /* No backend answers: status 1 and why; a bad argument: 125. */
    h_scenario("init_error 9\n");
    const char *argv5[] = {h_cli, "devices", NULL};
    h_run(argv5, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_INT(r.out_len, 0);
    CHECK_PREFIX(r.err, "gpu-profile: devices: no GPU backend could be opened (tried nvml, smi): ");
    h_result_free(&r);
    /* ... and with --json a document all the same, saying why. */
    const char *argv5j[] = {h_cli, "devices", "--json", NULL};
    h_run(argv5j, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    doc = jn_parse(r.out, r.out_len, &why);
    CHECK(doc != NULL);
    check_keys(doc, keys, 6);
    CHECK_STR(jn_str(jn_get(doc, "backend")), "none");
    CHECK_INT(jn_get(doc, "devices") ? jn_get(doc, "devices")->n : 99, 0);
    CHECK_PREFIX(jn_str(jn_get(doc, "error")),
                 "no GPU backend could be opened (tried nvml, smi): ");
    jn_free(doc);
    h_result_free(&r);
    const char *argv6[] = {h_cli, "devices", "--all", NULL};
    h_run(argv6, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: devices: unknown option '--all' (see gpu-profile devices "
                     "--help)\n");
    h_result_free(&r);
    const char *argv7[] = {h_cli, "devices", "--backend", "gpu", NULL};
    h_run(argv7, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --backend: 'gpu' is not a backend: use auto, nvml, smi, amd "
                     "or none\n");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_json_report();
    test_text_total();
    test_lost_gpu();
    test_json_strings();
    test_samples_csv();
    test_samples_ndjson();
    test_samples_killed();
    test_visible_devices();
    test_devices_command();
    test_devices_mig();
    h_cleanup();
    return check_done("test_cli_json");
}
