/*
 * test_cupti_deep_session.c - the Deep engine (PC sampling and SASS
 * metrics in one run) end to end in a session.
 *
 *  - the real plugin and the real libcupti without a driver: Deep falls
 *    back to Monitor, each rung saying why;
 *  - the fake plugin's "deep" scenario (the real SASS engine sharing the
 *    PC aggregator, as plugin/cupti_plugin.c shares pcsamp.c's):
 *    profile_sample_batch rows of sample_kind 0 and 1 in one session, one
 *    set of dictionaries (an id never names two texts, a text never has
 *    two ids, vecAdd one function_dict id for both kinds), the batch's
 *    columns as GPUFlight's analyzer reads them, the counts of both;
 *  - the degrade rule with exact capture_capabilities: SASS metrics
 *    refused -> PcSampling; both refused -> Trace; a late start (a context
 *    current at init, the Profiler API failing) -> PcSampling with the
 *    seed's advice (gpufl_init before the first kernel); SASS metrics
 *    refused at their first read -> the closing record says PcSampling.
 */
#include "engine_session.h"

static void test_real_cupti_without_driver(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("note: a GPU driver is present; the no-driver fallback is not checked here\n");
        return;
    }
    char dir[1024];
    run_session(env_or_die("GP_TEST_PLUGIN"), GPUFL_ENGINE_DEEP, dir, sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.deep");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.monitor");
    for (size_t i = 0; i < 2; i++) {
        json_t *c = cap_of(caps, i ? "sass_metrics" : "pc_sampling");
        CHECK_STR(str(c, "status"), "fallback");
        CHECK_STR(str(c, "reason_code"), "cupti_unavailable");
        CHECK_CONTAINS(str(c, "message"), "CUPTI_ERROR_UNKNOWN (999)");
    }
    fl_log_free(&dev);
    CHECK_CONTAINS(g_debug, "profiling_engine Deep requested, running Monitor");
}

/* Each dictionary of the scope channel: no id names two texts, no text
 * has two ids. */
static void check_dicts_consistent(const fl_log *scope)
{
    static const char *const dicts[] = {"function_dict", "metric_dict", "source_file_dict"};
    for (size_t d = 0; d < 3; d++) {
        json_t *seen = json_object();
        json_t *texts = json_object();
        for (size_t i = 0; i < scope->n; i++) {
            json_t *o = json_object_get(scope->lines[i], dicts[d]);
            const char *id;
            json_t *v;
            json_object_foreach(o, id, v)
            {
                const char *t = json_string_value(v);
                json_t *was = json_object_get(seen, id);
                CHECK(!was || strcmp(json_string_value(was), t) == 0);
                json_t *had = json_object_get(texts, t);
                CHECK(!had || strcmp(json_string_value(had), id) == 0);
                json_object_set_new(seen, id, json_string(t));
                json_object_set_new(texts, t, json_string(id));
            }
        }
        json_decref(seen);
        json_decref(texts);
    }
}

/* The rows of each kind, and every row's function and metric named. */
static void count_rows(const fl_log *scope, size_t *pc, size_t *sass)
{
    *pc = *sass = 0;
    json_t *b = NULL, *row;
    for (size_t r = 0; (row = sample_row(scope, r, &b)) != NULL; r++) {
        json_int_t kind = cell(b, row, "sample_kind");
        CHECK(kind == 0 || kind == 1);
        *(kind ? sass : pc) += 1;
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)cell(b, row, "function_id"));
        CHECK(strcmp(dict_text(scope, "function_dict", id, NULL), "(none)") != 0);
        snprintf(id, sizeof id, "%lld", (long long)cell(b, row, "metric_id"));
        const char *m = dict_text(scope, "metric_dict", id, NULL);
        /* PC rows name stall reasons, SASS rows SASS metrics. */
        CHECK(strncmp(m, kind ? "smsp__sass_" : "smsp__pcsamp_", kind ? 11 : 12) == 0 ||
              (!kind && strcmp(m, "stall_reason_99") == 0));
    }
}

static void test_fake_deep(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "deep", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_DEEP, dir, sizeof dir);
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(scope.bad, 0);
    CHECK_INT(dev.bad, 0);
    CHECK_STR(str(fl_first(&dev, "job_start"), "profiling_engine"), "nvidia.deep");
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.deep");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.deep");
    CHECK_STR(str(fl_first(&dev, "capture_capabilities"), "selected_engine"), "nvidia.deep");
    json_t *pc = cap_of(caps, "pc_sampling");
    CHECK_STR(str(pc, "status"), "collected");
    CHECK_STR(str(pc, "message"), "PC Sampling API, every 2^18 cycles, 3 stall reasons: 71 "
                                  "samples in 6 rows from 3 reads on 1 contexts");
    json_t *sm = cap_of(caps, "sass_metrics");
    CHECK_STR(str(sm, "status"), "collected");
    CHECK_STR(str(sm, "message"),
              "10 metrics (1 skipped): 5 patched-instruction records in 17 rows from 1 reads on 1 "
              "contexts; each kernel counted in the first outermost scope it ran in (later "
              "scopes' launches of it are not: CUPTI counts a function until its first read)");
    CHECK_INT(fl_count(&dev, "sass_config"), 1);

    /* One set of dictionaries: the SASS metric names first (configured
     * at start), then the stall reasons; vecAdd one id for both kinds. */
    CHECK_STR(dict_text(&scope, "function_dict", "1", NULL), "_Z6vecAddPfS_S_i@");
    CHECK_STR(dict_text(&scope, "function_dict", "2", NULL), "_Z4gemmPKfS0_Pf@");
    CHECK_STR(dict_text(&scope, "function_dict", "3", NULL), "_Z7stridedPfi@");
    CHECK_STR(dict_text(&scope, "function_dict", "4", NULL), "_Z9divergentPi@");
    CHECK_STR(dict_text(&scope, "metric_dict", "1", NULL), "smsp__sass_inst_executed");
    CHECK_STR(dict_text(&scope, "metric_dict", "10", NULL),
              "smsp__sass_branch_targets_threads_divergent");
    CHECK_STR(dict_text(&scope, "metric_dict", "11", NULL),
              "smsp__pcsamp_warps_issue_stalled_selected");
    CHECK_STR(dict_text(&scope, "metric_dict", "14", NULL), "stall_reason_99");
    check_dicts_consistent(&scope);
    size_t n_pc = 0, n_sass = 0;
    count_rows(&scope, &n_pc, &n_sass);
    CHECK_INT(n_pc, 6);
    CHECK_INT(n_sass, 17);

    /* The columns GPUFlight's analyzer reads, unchanged. */
    json_t *b = NULL;
    json_t *row = sample_row(&scope, 0, &b);
    CHECK(row != NULL);
    char *cols = json_dumps(json_object_get(b, "columns"), JSON_COMPACT);
    CHECK_STR(cols, "[\"dt_ns\",\"corr_id\",\"device_id\",\"function_id\",\"pc_offset\","
                    "\"metric_id\",\"metric_value\",\"stall_reason\",\"sample_kind\","
                    "\"scope_name_id\",\"source_file_id\",\"source_line\"]");
    free(cols);
    /* The first SASS row: vecAdd (id 1, as its PC rows) at 0x40. */
    json_t *first_sass = NULL;
    for (size_t r = 0; (row = sample_row(&scope, r, &b)) != NULL && !first_sass; r++)
        if (cell(b, row, "sample_kind") == 1)
            first_sass = row;
    CHECK(first_sass != NULL);
    if (first_sass) {
        CHECK_INT(cell(b, first_sass, "function_id"), 1);
        CHECK_INT(cell(b, first_sass, "pc_offset"), 0x40);
        CHECK_INT(cell(b, first_sass, "metric_id"), 1);
        CHECK_INT(cell(b, first_sass, "metric_value"), 100);
        CHECK_INT(cell(b, first_sass, "corr_id"), 0);
    }
    fl_log_free(&dev);
    fl_log_free(&scope);
    CHECK_CONTAINS(g_debug, "pc sampling: 71 samples in 6 rows");
    CHECK_CONTAINS(g_debug, "sass metrics: 10 metrics (1 skipped) on 1 contexts, 5 records in 17 "
                            "rows from 1 reads");
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* The degrade rule, each rung's entry exact. */
static void test_fake_degrade(void)
{
    static const char *const late_msg =
        "cuptiProfilerInitialize failed: CUPTI_ERROR_INVALID_OPERATION (7): see CUPTI's "
        "message; gpufl_init ran after CUDA work had started on this context: the Profiler API "
        "needs a clean context, so call gpufl_init before the first kernel (in PyTorch right "
        "after `import torch`); Deep runs PcSampling (Trace if PC sampling is refused too)";
    static const char *const noperm_msg =
        "cuptiProfilerInitialize failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35): GPU profiling "
        "is restricted to administrators: run as root, or allow it for every user with the "
        "nvidia module option NVreg_RestrictProfilingToAdminUsers=0 (a line 'options nvidia "
        "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/, then reload the driver or "
        "reboot); Deep runs PcSampling (Trace if PC sampling is refused too)";
    static const struct {
        const char *scenario, *selected, *pc_status, *sass_reason, *sass_msg;
        size_t pc_rows;
    } cases[] = {
        {"deep_sass_refused", "nvidia.pc_sampling", "collected", "insufficient_privilege",
         noperm_msg, 6},
        {"deep_refused", "nvidia.trace", "fallback", "insufficient_privilege", noperm_msg, 0},
        {"deep_late", "nvidia.pc_sampling", "collected", "initialized_after_cuda_work", late_msg,
         6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("FAKE_CUPTI_SCENARIO", cases[i].scenario, 1);
        char dir[1024];
        run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_DEEP, dir, sizeof dir);
        fl_log dev, scope;
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
        json_t *caps = last_caps(&dev);
        CHECK_STR(str(caps, "requested_engine"), "nvidia.deep");
        CHECK_STR(str(caps, "selected_engine"), cases[i].selected);
        CHECK_STR(str(fl_first(&dev, "capture_capabilities"), "selected_engine"),
                  cases[i].selected);
        CHECK_STR(str(cap_of(caps, "pc_sampling"), "status"), cases[i].pc_status);
        json_t *sm = cap_of(caps, "sass_metrics");
        CHECK_STR(str(sm, "status"), "fallback");
        CHECK_STR(str(sm, "reason_code"), cases[i].sass_reason);
        CHECK_STR(str(sm, "message"), cases[i].sass_msg);
        CHECK_STR(str(cap_of(caps, "kernel_events"), "status"), "collected");
        size_t n_pc = 0, n_sass = 0;
        count_rows(&scope, &n_pc, &n_sass);
        CHECK_INT(n_pc, cases[i].pc_rows);
        CHECK_INT(n_sass, 0);
        char want[160];
        snprintf(want, sizeof want, "profiling_engine Deep requested, running %s",
                 strcmp(cases[i].selected, "nvidia.trace") == 0 ? "Trace" : "PcSampling");
        CHECK_CONTAINS(g_debug, want);
        CHECK_CONTAINS(g_debug, cases[i].sass_msg);
        fl_log_free(&dev);
        fl_log_free(&scope);
    }
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* SASS metrics refused at their first read (after init): the closing
 * capture_capabilities says PcSampling, the opening one said Deep;
 * source_collection stays PC sampling's. */
static void test_fake_late_refusal(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "deep_read_refused", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_DEEP, dir, sizeof dir);
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_STR(str(fl_first(&dev, "capture_capabilities"), "selected_engine"), "nvidia.deep");
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "selected_engine"), "nvidia.pc_sampling");
    json_t *sm = cap_of(caps, "sass_metrics");
    CHECK_STR(str(sm, "status"), "fallback");
    CHECK_STR(str(sm, "reason_code"), "not_supported");
    CHECK_STR(str(sm, "message"),
              "cuptiSassMetricsGetDataProperties failed: CUPTI_ERROR_NOT_SUPPORTED (27): this "
              "device, driver or CUPTI has no SASS metrics (they need compute capability 7.5 or "
              "newer, a whole GPU rather than a MIG instance, not WSL, and a CUPTI no older than "
              "the driver); Deep runs PcSampling (Trace if PC sampling is refused too)");
    CHECK_STR(str(cap_of(caps, "pc_sampling"), "status"), "collected");
    CHECK_STR(str(cap_of(caps, "source_collection"), "status"), "collected");
    size_t n_pc = 0, n_sass = 0;
    count_rows(&scope, &n_pc, &n_sass);
    CHECK_INT(n_pc, 6);
    CHECK_INT(n_sass, 0);
    fl_log_free(&dev);
    fl_log_free(&scope);
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* GPUFL_PROFILING_ENGINE=Deep. */
static void test_options(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "deep", 1);
    setenv("GPUFL_PROFILING_ENGINE", "Deep", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_MONITOR, dir, sizeof dir);
    unsetenv("GPUFL_PROFILING_ENGINE");
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_STR(str(last_caps(&dev), "selected_engine"), "nvidia.deep");
    fl_log_free(&dev);
    unsetenv("FAKE_CUPTI_SCENARIO");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_deep_%d", (int)getpid());
    srand((unsigned)getpid());
    test_real_cupti_without_driver();
    test_fake_deep();
    test_fake_degrade();
    test_fake_late_refusal();
    test_options();
    fl_rmtree(g_tmp);
    return check_done("test_cupti_deep_session");
}
