/*
 * test_cupti_pcsampling.c - the PcSampling engine end to end in a session.
 *
 *  - the real plugin and the real libcupti without a driver: PcSampling
 *    falls back (to Monitor: CUPTI's activity calls fail with 999), with
 *    the reason in capture_capabilities and in the debug output;
 *  - the fake plugin's "pcsampling" scenario (PC records through the real
 *    aggregator, plugin/common/aggregator.c, into the core's real writer): the
 *    function, stall-reason and source-file dictionaries before the rows,
 *    profile_sample_batch rows with exact values (kernel, scope, stall
 *    index and name, counts summed over reads), the final counts in
 *    capture_capabilities, and the report's stalls section over the files;
 *  - PC sampling refused (no permission, not supported, virtual GPU):
 *    Trace runs, the reason and its fix in capture_capabilities and the
 *    debug output;
 *  - the engine and the period from the environment, a bad period refused;
 *  - the sass channel: with a disassembler (the fake nvdisasm, replaying a
 *    real capture) sass.log holds the opening records, one
 *    cubin_disassembly per sampled function found in a kept cubin (its
 *    function_dict id, CRC and instructions) and shutdown, the counts in
 *    capture_capabilities; a GPUFL_NVDISASM that names nothing usable is
 *    said, with the fix, and no sass.log is made.
 */
#include "engine_session.h"

/* ------------------------------------------------------------ real CUPTI */

static void test_real_cupti_without_driver(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("note: a GPU driver is present; the no-driver fallback is not checked here\n");
        return;
    }
    char dir[1024];
    run_session(env_or_die("GP_TEST_PLUGIN"), GPUFL_ENGINE_PC_SAMPLING, dir, sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.pc_sampling");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.monitor");
    json_t *pc = cap_of(caps, "pc_sampling");
    CHECK_STR(str(pc, "status"), "fallback");
    CHECK_STR(str(pc, "reason_code"), "cupti_unavailable");
    CHECK_CONTAINS(str(pc, "message"), "CUPTI_ERROR_UNKNOWN (999)");
    CHECK_STR(str(cap_of(caps, "source_collection"), "status"), "fallback");
    CHECK_INT(fl_count(&dev, "profile_sample_batch"), 0);
    fl_log_free(&dev);
    CHECK_CONTAINS(g_debug, "profiling_engine PcSampling requested, running Monitor");
    CHECK_CONTAINS(g_debug, "CUPTI_ERROR_UNKNOWN (999)");
}

/* ------------------------------------------------------------ fake CUPTI */

static void check_rows(const fl_log *scope)
{
    json_int_t step = scope_id(scope, "step");
    CHECK(step > 0);
    /* corr, function, pc, metric, samples, stall, scope: in the order
     * the aggregator met them. */
    const json_int_t want[6][7] = {
        {11, 1, 0x40, 2, 30, 7, step}, {11, 1, 0x40, 1, 5, 0, step}, {12, 1, 0x40, 2, 10, 7, step},
        {13, 2, 0x80, 3, 20, 9, 0},    {13, 2, 0x80, 4, 2, 99, 0},   {16, 1, 0x40, 2, 4, 7, 0},
    };
    for (size_t r = 0; r < 6; r++) {
        json_t *b = NULL, *row = sample_row(scope, r, &b);
        CHECK(row != NULL);
        if (!row)
            return;
        CHECK_INT(json_array_size(row), 12);
        CHECK_INT(cell(b, row, "corr_id"), want[r][0]);
        CHECK_INT(cell(b, row, "device_id"), 0);
        CHECK_INT(cell(b, row, "function_id"), want[r][1]);
        CHECK_INT(cell(b, row, "pc_offset"), want[r][2]);
        CHECK_INT(cell(b, row, "metric_id"), want[r][3]);
        CHECK_INT(cell(b, row, "metric_value"), want[r][4]);
        CHECK_INT(cell(b, row, "stall_reason"), want[r][5]);
        CHECK_INT(cell(b, row, "sample_kind"), 0);
        CHECK_INT(cell(b, row, "scope_name_id"), want[r][6]);
        CHECK_INT(cell(b, row, "source_file_id"), 0);
        CHECK_INT(cell(b, row, "source_line"), 0);
    }
    json_t *b = NULL;
    CHECK(sample_row(scope, 6, &b) == NULL);
}

static void check_report(const char *dir)
{
    char *out = NULL;
    gpufl_error err;
    CHECK_INT(gpufl_report_logs(dir, NULL, &out, NULL, &err), GPUFL_OK);
    if (!out)
        return;
    CHECK_CONTAINS(out, "stalls  71 PC samples, 4 reasons");
    CHECK_CONTAINS(out, "44   62.0%  Long Scoreboard                waiting on an L1TEX");
    CHECK_CONTAINS(out, "20   28.2%  Barrier ");
    CHECK_CONTAINS(out, "5    7.0%  Selected ");
    CHECK_CONTAINS(out, "2    2.8%  stall_reason_99 ");
    /* Joined to our own kernel rows through corr_id, and to the scope. */
    CHECK_CONTAINS(out, "(corr_id joined to the kernel rows; 0 samples matched no kernel)");
    CHECK_CONTAINS(out, "49   69.0%  vecAdd(float*, float*, float*, int)\n"
                        "                      Long Scoreboard 89.8%, Selected 10.2%");
    CHECK_CONTAINS(out, "45   63.4%  step\n");
    CHECK_CONTAINS(out, "49   69.0%  _Z6vecAddPfS_S_i@");
    gpufl_free(out);
}

static void test_fake_pcsampling(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "pcsampling", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PC_SAMPLING, dir, sizeof dir);
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(scope.bad, 0);
    CHECK_STR(str(fl_first(&dev, "job_start"), "profiling_engine"), "nvidia.pc_sampling");
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "selected_engine"), "nvidia.pc_sampling");
    json_t *pc = cap_of(caps, "pc_sampling");
    CHECK_STR(str(pc, "status"), "collected");
    CHECK_CONTAINS(str(pc, "message"), "PC Sampling API, every 2^18 cycles, 3 stall reasons: "
                                       "71 samples in 6 rows from 3 reads on 1 contexts");
    json_t *src = cap_of(caps, "source_collection");
    CHECK_STR(str(src, "status"), "collected");
    CHECK_CONTAINS(str(src, "message"), "71 samples without a source line");
    json_t *dis = cap_of(caps, "cubin_disassembly");
    CHECK_STR(str(dis, "status"), "skipped");
    CHECK_CONTAINS(str(dis, "message"), "disassembler absent");
    /* The opening record already said PcSampling. */
    CHECK_STR(str(fl_first(&dev, "capture_capabilities"), "selected_engine"), "nvidia.pc_sampling");

    size_t fn_line = 0, metric_line = 0, batch_line = SIZE_MAX;
    CHECK_STR(dict_text(&scope, "function_dict", "1", &fn_line), "_Z6vecAddPfS_S_i@");
    CHECK_STR(dict_text(&scope, "function_dict", "2", NULL), "_Z4gemmPKfS0_Pf@");
    CHECK_STR(dict_text(&scope, "metric_dict", "1", &metric_line),
              "smsp__pcsamp_warps_issue_stalled_selected");
    CHECK_STR(dict_text(&scope, "metric_dict", "2", NULL),
              "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
    CHECK_STR(dict_text(&scope, "metric_dict", "3", NULL),
              "smsp__pcsamp_warps_issue_stalled_barrier");
    CHECK_STR(dict_text(&scope, "metric_dict", "4", NULL), "stall_reason_99");
    for (size_t i = 0; i < scope.n && batch_line == SIZE_MAX; i++)
        if (strcmp(log_type(scope.lines[i]), "profile_sample_batch") == 0)
            batch_line = i;
    CHECK(fn_line < batch_line && metric_line < batch_line);
    CHECK_INT(fl_count(&dev, "profile_sample_batch"), 0);
    check_rows(&scope);
    fl_log_free(&dev);
    fl_log_free(&scope);
    check_report(dir);
    CHECK_CONTAINS(g_debug, "pc sampling: 71 samples in 6 rows");
    unsetenv("FAKE_CUPTI_SCENARIO");
}

static void test_fake_refused(void)
{
    static const struct {
        const char *scenario, *reason, *fix;
    } cases[] = {
        {"pc_noperm", "insufficient_privilege", "NVreg_RestrictProfilingToAdminUsers=0"},
        {"pc_unsupported", "not_supported", "compute capability 7.0 or newer"},
        {"pc_virtual", "virtualized_device", "virtual GPU (vGPU)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("FAKE_CUPTI_SCENARIO", cases[i].scenario, 1);
        char dir[1024];
        run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PC_SAMPLING, dir, sizeof dir);
        fl_log dev;
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        json_t *caps = last_caps(&dev);
        CHECK_STR(str(caps, "selected_engine"), "nvidia.trace");
        CHECK_STR(str(fl_first(&dev, "job_start"), "profiling_engine"), "nvidia.trace");
        json_t *pc = cap_of(caps, "pc_sampling");
        CHECK_STR(str(pc, "status"), "fallback");
        CHECK_STR(str(pc, "reason_code"), cases[i].reason);
        CHECK_CONTAINS(str(pc, "message"), "cuptiPCSamplingEnable failed");
        CHECK_CONTAINS(str(pc, "message"), cases[i].fix);
        CHECK_CONTAINS(str(pc, "message"), "the session runs Trace");
        CHECK_STR(str(cap_of(caps, "kernel_events"), "status"), "collected");
        CHECK_CONTAINS(g_debug, "profiling_engine PcSampling requested, running Trace");
        CHECK_CONTAINS(g_debug, cases[i].fix);
        fl_log_free(&dev);
    }
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* PcSampling on and nothing sampled: enabled_no_data, saying so. */
static void test_fake_no_samples(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "ok", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PC_SAMPLING, dir, sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *pc = cap_of(last_caps(&dev), "pc_sampling");
    CHECK_STR(str(pc, "status"), "enabled_no_data");
    CHECK_STR(str(pc, "reason_code"), "enabled_but_no_samples");
    CHECK_CONTAINS(str(pc, "message"), "no sample was collected");
    fl_log_free(&dev);
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* GPUFL_PROFILING_ENGINE=PcSampling and GPUFL_PC_SAMPLING_PERIOD. */
static void test_options(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "pcsampling", 1);
    setenv("GPUFL_PROFILING_ENGINE", "PcSampling", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_MONITOR, dir, sizeof dir);
    unsetenv("GPUFL_PROFILING_ENGINE");
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_STR(str(last_caps(&dev), "selected_engine"), "nvidia.pc_sampling");
    fl_log_free(&dev);

    setenv("GPUFL_PC_SAMPLING_PERIOD", "40", 1);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    CHECK_INT(o.pc_sampling_period, 0);
    o.log_path = g_tmp;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "pc_sampling_period = 40 (env GPUFL_PC_SAMPLING_PERIOD)");
    CHECK_CONTAINS(err.message, "5..31");
    unsetenv("GPUFL_PC_SAMPLING_PERIOD");
    o.pc_sampling_period = 4;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    unsetenv("FAKE_CUPTI_SCENARIO");
}

static void test_fake_disassembly(void)
{
    const char *src = env_or_die("GP_TEST_SOURCE_DIR");
    char fake[1024], sass[1024], cubin[1024];
    snprintf(fake, sizeof fake, "%s/fakes/fake_nvdisasm.sh", src);
    snprintf(sass, sizeof sass, "%s/plugin/data/pcsamp_kernel.sass", src);
    snprintf(cubin, sizeof cubin, "%s/plugin/data/pcsamp_lines.cubin", src);
    setenv("FAKE_CUPTI_SCENARIO", "pcsampling", 1);
    setenv("GPUFL_NVDISASM", fake, 1);
    setenv("FAKE_NVDISASM_OUT", sass, 1);
    setenv("FAKE_CUBIN", cubin, 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PC_SAMPLING, dir, sizeof dir);
    fl_log dev, scope, sl;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(fl_log_read(&sl, dir, "sass"), 0);
    CHECK_INT(sl.bad, 0);
    CHECK(sl.n >= 4);
    if (sl.n >= 4) {
        CHECK_STR(log_type(sl.lines[0]), "job_start");
        CHECK_STR(log_type(sl.lines[1]), "capture_capabilities");
        CHECK_STR(log_type(sl.lines[sl.n - 1]), "shutdown");
    }
    CHECK_INT(fl_count(&sl, "cubin_disassembly"), 1);
    CHECK_INT(fl_count(&dev, "cubin_disassembly") + fl_count(&scope, "cubin_disassembly"), 0);
    json_t *d = fl_first(&sl, "cubin_disassembly");
    CHECK_STR(str(d, "function_name"), "_Z5chasePKjPji");
    json_int_t fid = json_integer_value(json_object_get(d, "function_id"));
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)fid);
    CHECK_CONTAINS(dict_text(&scope, "function_dict", key, NULL), "_Z5chasePKjPji@");
    CHECK(json_integer_value(json_object_get(d, "cubin_crc")) != 0);
    json_t *entries = json_object_get(d, "entries");
    CHECK_INT(json_array_size(entries), 112);
    json_t *e6 = json_array_get(entries, 6);
    CHECK_INT(json_integer_value(json_object_get(e6, "pc")), 0x60);
    CHECK_STR(str(e6, "sass"), "@!P0 BRA `(.L_x_0)");
    json_t *dis = cap_of(last_caps(&dev), "cubin_disassembly");
    CHECK_STR(str(dis, "status"), "partial");
    CHECK_STR(str(dis, "reason_code"), "functions_skipped");
    CHECK_CONTAINS(str(dis, "message"), "fake_nvdisasm.sh: 1 functions disassembled in 1 runs");
    CHECK_CONTAINS(str(dis, "message"), "2 functions left without disassembly");
    CHECK_STR(str(cap_of(fl_first(&dev, "capture_capabilities"), "cubin_disassembly"), "status"),
              "collected");
    fl_log_free(&dev);
    fl_log_free(&scope);
    fl_log_free(&sl);

    /* A GPUFL_NVDISASM that cannot be used: said, no sass channel. */
    setenv("GPUFL_NVDISASM", "/nonexistent/nvdisasm", 1);
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PC_SAMPLING, dir, sizeof dir);
    CHECK_CONTAINS(g_debug, "GPUFL_NVDISASM=/nonexistent/nvdisasm cannot be used");
    CHECK_INT(fl_log_read(&sl, dir, "sass"), -1);
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    dis = cap_of(last_caps(&dev), "cubin_disassembly");
    CHECK_STR(str(dis, "status"), "skipped");
    CHECK_STR(str(dis, "reason_code"), "disassembler_absent");
    CHECK_CONTAINS(str(dis, "message"), "set it to nvdisasm's path");
    fl_log_free(&dev);
    setenv("GPUFL_NVDISASM", "", 1);
    unsetenv("FAKE_CUBIN");
    unsetenv("FAKE_CUPTI_SCENARIO");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_pcs_%d", (int)getpid());
    srand((unsigned)getpid());
    test_real_cupti_without_driver();
    test_fake_pcsampling();
    test_fake_refused();
    test_fake_no_samples();
    test_options();
    test_fake_disassembly();
    fl_rmtree(g_tmp);
    return check_done("test_cupti_pcsampling");
}
