/*
 * test_report_records.c - every record GPUFlight 1.3's writer emits that
 * the fixtures of test_report_gpufl13 do not hold, written here at run
 * time in GPUFlight's shapes (its writer's key order and types) into a
 * session directory, read back by fl_read_session and shown in the
 * report with its exact figures: job_start's run / segment / roll-chain /
 * multi-pass identity, rocm_static_devices and a static-device entry
 * without an id, segment_start, segment_end and run_end (on every
 * channel, as GPUFlight writes them: shown once), deep_window_rule_summary,
 * counter_data_quality_summary, a deep_window_event's trigger, and
 * kernel-replay hit rates outside 0-100 % shown as invalid, not as values.
 */
#include "report_json.h"
#include "check.h"
#include "fl_log.h"
#include "reader/read.h"
#include "report/report.h"
#include "util/buf.h"

#include <math.h>
#include <sys/stat.h>

static char tmp_root[256];

/* ------------------------------------------------------------ generator */

#define SID "5d1c0a6e-0000-4000-8000-000000000001"

/* job_start as GPUFlight 1.3's InitEventModel writes it for a segmented,
 * rolled, multi-pass run; the NVIDIA entry of gpu_static_devices has no
 * id (another writer's), the AMD one comes again in rocm_static_devices. */
static const char job_start[] =
    "{\"version\":1,\"type\":\"job_start\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"log_path\":\"/tmp/x\",\"ts_ns\":1000000000,\"hostname\":\"h\",\"ip_addr\":\"10.0.0.1\","
    "\"host\":{},\"devices\":[],"
    "\"gpu_static_devices\":[{\"name\":\"NoId GPU\",\"uuid\":\"GPU-aaaa\",\"vendor\":\"NVIDIA\"},"
    "{\"id\":1,\"name\":\"AMD Instinct MI300X\",\"uuid\":\"GPU-bbbb\",\"vendor\":\"AMD\"}],"
    "\"cuda_static_devices\":[],"
    "\"rocm_static_devices\":[{\"id\":1,\"name\":\"AMD Instinct MI300X\",\"uuid\":\"GPU-bbbb\","
    "\"vendor\":\"AMD\"}],"
    "\"session_kind\":\"trace\",\"profiling_engine\":\"RangeProfiler\","
    "\"analysis_id\":\"an-7\",\"pass_index\":1,\"pass_count\":3,"
    "\"run_id\":\"run-42\",\"segment_index\":2,"
    "\"roll_chain_id\":\"chain-9\",\"part_index\":4,\"previous_run_id\":\"run-41\"}";

static const char seg_start[] =
    "{\"version\":1,\"type\":\"segment_start\",\"session_id\":\"" SID "\",\"run_id\":\"run-42\","
    "\"segment_index\":2,\"ts_ns\":1000000100,\"actual_start_ns\":1000000050,"
    "\"previous_session_id\":\"prev-sess\",\"requested_boundary_ns\":1000000000,"
    "\"boundary_delay_ns\":50,\"deferred_by\":null}";

static const char seg_end[] =
    "{\"version\":1,\"type\":\"segment_end\",\"session_id\":\"" SID "\",\"run_id\":\"run-42\","
    "\"segment_index\":2,\"ts_ns\":1900000000,\"actual_end_ns\":1899999000,"
    "\"requested_boundary_ns\":null,\"boundary_delay_ns\":0,\"end_reason\":\"rolled\","
    "\"deferred_by\":\"scope\",\"records_outside_segment_window\":3}";

static const char run_end[] =
    "{\"version\":1,\"type\":\"run_end\",\"session_id\":\"" SID "\",\"run_id\":\"run-42\","
    "\"final_segment_index\":2,\"ts_ns\":1950000000,\"ended_ns\":1949999999,"
    "\"end_reason\":\"rolled\",\"rollover_reason\":\"size\","
    "\"requested_rollover_ns\":1940000000,\"actual_rollover_ns\":1945000000}";

static const char rule_summary[] =
    "{\"type\":\"deep_window_rule_summary\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"rule_id\":\"hot-sm\",\"expression\":\"sm_active > 80 for 20ms\",\"state\":\"armed\","
    "\"outcome\":\"fired\",\"reason\":\"\",\"metric_state\":\"ok\",\"samples_seen\":120,"
    "\"windows_opened\":2,\"truncated_samples\":1,\"metric_quality_resets\":0,"
    "\"last_quality_reason\":\"\",\"state_sequence\":7,\"emitted_ns\":1900000500,"
    "\"last_value\":91.5,\"last_observed_ns\":1899000000}";

static const char quality[] =
    "{\"type\":\"counter_data_quality_summary\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":"
    "\"" SID "\",\"source\":\"nvtx_counters\",\"schema_version\":1,\"tracked_counters\":3,"
    "\"samples_observed\":900,\"registration_rejected\":1,\"unknown_id_samples\":2,"
    "\"unavailable_samples\":4,\"negative_delta_samples\":5,\"rate_windows_discarded\":6,"
    "\"emitted_ns\":1900000600}";

static const char deep_window[] =
    "{\"type\":\"deep_window_event\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"name\":\"hot\",\"close_reason\":\"duration\",\"engines\":[\"PcSampling\"],"
    "\"start_ns\":1100000000,\"end_ns\":1120000000,\"duration_ns\":20000000,"
    "\"launches_covered\":5,\"requested_duration_ms\":20,\"requested_max_launches\":0,"
    "\"trigger\":{\"rule_id\":\"hot-sm\",\"metric\":\"sm_active\",\"op\":\">\","
    "\"threshold\":80,\"rearm_threshold\":70,\"observed\":91.5,\"rate_window_ms\":0,"
    "\"sustained_ms\":20,\"first_true_ns\":1099000000,\"fired_ns\":1100000000}}";

static const char deep_manual[] =
    "{\"type\":\"deep_window_event\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"name\":\"manual\",\"close_reason\":\"explicit\",\"engines\":[\"SassMetrics\"],"
    "\"start_ns\":1200000000,\"end_ns\":1210000000,\"duration_ns\":10000000,"
    "\"launches_covered\":1,\"requested_duration_ms\":0,\"requested_max_launches\":0}";

/* Kernel replay: one range's hit rates valid, the other's out of range. */
static const char kperf_ok[] =
    "{\"type\":\"kernel_perf_metric_event\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"kernel_name\":\"gemm\",\"start_ns\":1300000000,\"end_ns\":1300001000,"
    "\"sm_throughput_pct\":50,\"l1_hit_rate_pct\":40,\"l2_hit_rate_pct\":60,"
    "\"dram_read_bytes\":-1,\"dram_write_bytes\":-1,\"tensor_active_pct\":-1}";
static const char kperf_bad[] =
    "{\"type\":\"kernel_perf_metric_event\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"kernel_name\":\"gemm\",\"start_ns\":1300002000,\"end_ns\":1300003000,"
    "\"sm_throughput_pct\":70,\"l1_hit_rate_pct\":150.5,\"l2_hit_rate_pct\":-3,"
    "\"dram_read_bytes\":-1,\"dram_write_bytes\":-1,\"tensor_active_pct\":-1}";

static const char shutdown_rec[] =
    "{\"type\":\"shutdown\",\"pid\":4242,\"app\":\"rec-app\",\"session_id\":\"" SID
    "\",\"ts_ns\":2000000000}";

static void put(FILE *f, const char *line)
{
    fputs(line, f);
    fputc('\n', f);
}

/* The session GPUFlight's writer would leave: the lifecycle records on
 * every channel, the rest on theirs. */
static void write_session(const char *dir)
{
    static const char *const channels[] = {"device", "scope", "system"};
    CHECK_INT(mkdir(dir, 0755), 0);
    for (size_t c = 0; c < 3; c++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.log", dir, channels[c]);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
            return;
        put(f, job_start);
        put(f, seg_start);
        if (c == 0) {
            put(f, kperf_ok);
            put(f, kperf_bad);
        }
        if (c == 1) {
            put(f, deep_window);
            put(f, deep_window);
            put(f, deep_manual);
            put(f, rule_summary);
            put(f, quality);
        }
        put(f, seg_end);
        put(f, run_end);
        put(f, shutdown_rec);
        CHECK_INT(fclose(f), 0);
    }
}

/* ------------------------------------------------------------- checks */

static void test_records(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/" SID, tmp_root);
    write_session(dir);

    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_result res;
    gp_error err;
    int rc = fl_read_session(dir, NULL, &cb, &res, &err);
    if (rc != GP_OK)
        fprintf(stderr, "fl_read_session(%s): %s\n", dir, err.message);
    CHECK_INT(rc, GP_OK);
    fl_report_finish(rep, &res);
    fl_buf t = {0}, jb = {0};
    fl_report_text(rep, 10, &t);
    fl_report_json(rep, 10, &jb);
    fl_report_destroy(rep);
    char *text = fl_buf_take(&t), *json = fl_buf_take(&jb);
    json_error_t e;
    json_t *j = json ? json_loads(json, JSON_REJECT_DUPLICATES, &e) : NULL;
    CHECK(j != NULL);
    if (!j || !text) {
        free(text);
        free(json);
        return;
    }

    /* every type known: nothing counted as unknown */
    CHECK_INT(jint(j, "read.unknown_types"), 0);
    CHECK_INT(json_array_size(jpath(j, "read.unknown_record_types")), 0);

    /* job_start's identity */
    CHECK_STR(jstr(j, "lifecycle.run.run_id"), "run-42");
    CHECK_INT(jint(j, "lifecycle.run.segment_index"), 2);
    CHECK_STR(jstr(j, "lifecycle.run.roll_chain_id"), "chain-9");
    CHECK_INT(jint(j, "lifecycle.run.part_index"), 4);
    CHECK_STR(jstr(j, "lifecycle.run.previous_run_id"), "run-41");
    CHECK_STR(jstr(j, "lifecycle.run.analysis_id"), "an-7");
    CHECK_INT(jint(j, "lifecycle.run.pass_index"), 1);
    CHECK_INT(jint(j, "lifecycle.run.pass_count"), 3);

    /* segment_start / segment_end / run_end: once, though on 3 channels */
    CHECK_INT(json_array_size(jpath(j, "lifecycle.segment_starts")), 1);
    CHECK_STR(jstr(j, "lifecycle.segment_starts[0].run_id"), "run-42");
    CHECK_INT(jint(j, "lifecycle.segment_starts[0].segment_index"), 2);
    CHECK_STR(jstr(j, "lifecycle.segment_starts[0].session_id"), SID);
    CHECK_INT(jint(j, "lifecycle.segment_starts[0].actual_start_ns"), 1000000050);
    CHECK_STR(jstr(j, "lifecycle.segment_starts[0].previous_session_id"), "prev-sess");
    CHECK_INT(jint(j, "lifecycle.segment_starts[0].requested_boundary_ns"), 1000000000);
    CHECK_INT(jint(j, "lifecycle.segment_starts[0].boundary_delay_ns"), 50);
    CHECK(jnull(j, "lifecycle.segment_starts[0].deferred_by"));
    CHECK_INT(json_array_size(jpath(j, "lifecycle.segment_ends")), 1);
    CHECK_INT(jint(j, "lifecycle.segment_ends[0].actual_end_ns"), 1899999000);
    CHECK(jnull(j, "lifecycle.segment_ends[0].requested_boundary_ns"));
    CHECK_STR(jstr(j, "lifecycle.segment_ends[0].end_reason"), "rolled");
    CHECK_STR(jstr(j, "lifecycle.segment_ends[0].deferred_by"), "scope");
    CHECK_INT(jint(j, "lifecycle.segment_ends[0].records_outside_segment_window"), 3);
    CHECK_INT(json_array_size(jpath(j, "lifecycle.run_ends")), 1);
    CHECK_INT(jint(j, "lifecycle.run_ends[0].final_segment_index"), 2);
    CHECK_INT(jint(j, "lifecycle.run_ends[0].ended_ns"), 1949999999);
    CHECK_STR(jstr(j, "lifecycle.run_ends[0].end_reason"), "rolled");
    CHECK_STR(jstr(j, "lifecycle.run_ends[0].rollover_reason"), "size");
    CHECK_INT(jint(j, "lifecycle.run_ends[0].requested_rollover_ns"), 1940000000);
    CHECK_INT(jint(j, "lifecycle.run_ends[0].actual_rollover_ns"), 1945000000);

    /* deep_window_rule_summary, counter_data_quality_summary */
    CHECK_INT(json_array_size(jpath(j, "lifecycle.deep_window_rules")), 1);
    CHECK_STR(jstr(j, "lifecycle.deep_window_rules[0].rule_id"), "hot-sm");
    CHECK_STR(jstr(j, "lifecycle.deep_window_rules[0].expression"), "sm_active > 80 for 20ms");
    CHECK_STR(jstr(j, "lifecycle.deep_window_rules[0].state"), "armed");
    CHECK_STR(jstr(j, "lifecycle.deep_window_rules[0].outcome"), "fired");
    CHECK_INT(jint(j, "lifecycle.deep_window_rules[0].samples_seen"), 120);
    CHECK_INT(jint(j, "lifecycle.deep_window_rules[0].windows_opened"), 2);
    CHECK_INT(jint(j, "lifecycle.deep_window_rules[0].truncated_samples"), 1);
    CHECK_INT(jint(j, "lifecycle.deep_window_rules[0].metric_quality_resets"), 0);
    CHECK_INT(jint(j, "lifecycle.deep_window_rules[0].state_sequence"), 7);
    CHECK_NEAR(jnum(j, "lifecycle.deep_window_rules[0].last_value"), 91.5, 1e-9);
    CHECK_INT(jint(j, "lifecycle.deep_window_rules[0].last_observed_ns"), 1899000000);
    CHECK_INT(json_array_size(jpath(j, "lifecycle.counter_data_quality")), 1);
    CHECK_STR(jstr(j, "lifecycle.counter_data_quality[0].source"), "nvtx_counters");
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].schema_version"), 1);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].tracked_counters"), 3);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].samples_observed"), 900);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].registration_rejected"), 1);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].unknown_id_samples"), 2);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].unavailable_samples"), 4);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].negative_delta_samples"), 5);
    CHECK_INT(jint(j, "lifecycle.counter_data_quality[0].rate_windows_discarded"), 6);
    CHECK_INT(jint(j, "lifecycle.more_records"), 0);

    /* deep_window_event: the rule that opened it; a manual one has none */
    CHECK_STR(jstr(j, "deep_windows[0].name"), "hot");
    CHECK_INT(jint(j, "deep_windows[0].windows"), 2);
    CHECK_INT(jint(j, "deep_windows[0].triggered"), 2);
    CHECK_STR(jstr(j, "deep_windows[0].trigger.rule_id"), "hot-sm");
    CHECK_STR(jstr(j, "deep_windows[0].trigger.metric"), "sm_active");
    CHECK_STR(jstr(j, "deep_windows[0].trigger.op"), ">");
    CHECK_NEAR(jnum(j, "deep_windows[0].trigger.threshold"), 80, 1e-9);
    CHECK_NEAR(jnum(j, "deep_windows[0].trigger.observed"), 91.5, 1e-9);
    CHECK_INT(jint(j, "deep_windows[0].trigger.fired_ns"), 1100000000);
    CHECK_STR(jstr(j, "deep_windows[1].name"), "manual");
    CHECK_INT(jint(j, "deep_windows[1].triggered"), 0);
    CHECK(jnull(j, "deep_windows[1].trigger"));

    /* hit rates outside 0-100 %: left out and counted, never averaged */
    CHECK_STR(jstr(j, "kernel_perf_metrics[0].kernel_name"), "gemm");
    CHECK_INT(jint(j, "kernel_perf_metrics[0].ranges"), 2);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].sm_throughput_pct"), 60, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].l1_hit_rate_pct"), 40, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].l2_hit_rate_pct"), 60, 1e-9);
    CHECK_INT(jint(j, "kernel_perf_metrics[0].invalid_hit_rates"), 2);
    CHECK(jnull(j, "kernel_perf_metrics[0].dram_read_bytes"));

    /* static devices: the entry without an id numbered by its place, the
     * ROCm list's entry the same device as gpu_static_devices' */
    CHECK_INT(json_array_size(jpath(j, "session.devices")), 2);
    CHECK_INT(jint(j, "session.devices[0].id"), 0);
    CHECK_STR(jstr(j, "session.devices[0].name"), "NoId GPU");
    CHECK_STR(jstr(j, "session.devices[0].uuid"), "GPU-aaaa");
    CHECK_INT(jint(j, "session.devices[1].id"), 1);
    CHECK_STR(jstr(j, "session.devices[1].name"), "AMD Instinct MI300X");
    CHECK(jnull(j, "session.devices[1].cuda_id"));

    /* the text says the same */
    CHECK_CONTAINS(text, "  run                run_id run-42  roll_chain_id chain-9  "
                         "previous_run_id run-41  analysis_id an-7  segment_index 2  "
                         "part_index 4  pass_index 1  pass_count 3\n");
    CHECK_CONTAINS(text, "  segment end        run_id run-42  end_reason rolled  deferred_by "
                         "scope  segment_index 2  actual_end_ns 1899999000  "
                         "records_outside_segment_window 3\n");
    CHECK_CONTAINS(text, "  run end            run_id run-42  end_reason rolled  "
                         "rollover_reason size  final_segment_index 2  ended_ns 1949999999\n");
    CHECK_CONTAINS(text, "  deep window rule    hot-sm  expression sm_active > 80 for 20ms");
    CHECK_CONTAINS(text, "  counter quality     nvtx_counters  tracked_counters 3  "
                         "samples_observed 900");
    CHECK_CONTAINS(text, "2 opened by rule hot-sm (sm_active > 80, observed 91.5)");
    CHECK_CONTAINS(text, "(2 invalid hit rates left out)");
    json_decref(j);
    free(text);
    free(json);
}

/* ------------------------------------------------- before the batches */

#define LSID "5d1c0a6e-0000-4000-8000-000000000002"
#define LREC(type) "{\"type\":\"" type "\",\"pid\":7,\"app\":\"old\",\"session_id\":\"" LSID "\","

/* GPUFlight's per-event records (its KernelEventModel, MemcpyEventModel,
 * ScopeBeginModel / ScopeEndModel, SystemSampleModel, and init). */
static void write_legacy(const char *dir)
{
    static const char *const device[] = {
        LREC("init") "\"ts_ns\":1000,\"gpu_static_devices\":[{\"id\":0,\"name\":\"Old GPU\","
                     "\"uuid\":\"GPU-cccc\"}]}",
        LREC("kernel_event") "\"name\":\"gemm\",\"platform\":\"cuda\",\"has_details\":true,"
                             "\"device_id\":\"0\",\"stream_id\":\"7\",\"stack_trace\":\"\","
                             "\"user_scope\":\"train|step\",\"scope_depth\":2,\"start_ns\":5000,"
                             "\"end_ns\":8000,\"api_start_ns\":4000,\"api_exit_ns\":4500,"
                             "\"grid\":\"(1,1,1)\",\"block\":\"(32,1,1)\",\"dyn_shared_bytes\":0,"
                             "\"num_regs\":32,\"corr_id\":11}",
        LREC("kernel_event") "\"name\":\"gemm\",\"device_id\":\"0\",\"stream_id\":\"7\","
                             "\"start_ns\":9000,\"end_ns\":10000,\"num_regs\":32,\"corr_id\":12}",
        LREC("kernel_event") "\"name\":\"relu\",\"device_id\":\"0\",\"stream_id\":\"7\","
                             "\"start_ns\":11000,\"end_ns\":11500,\"corr_id\":13}",
        LREC("memcpy_event") "\"name\":\"memcpy\",\"platform\":\"cuda\",\"device_id\":\"0\","
                             "\"stream_id\":\"7\",\"start_ns\":2000,\"end_ns\":2600,"
                             "\"corr_id\":9,\"bytes\":4096,\"copy_kind\":\"HtoD\","
                             "\"src_kind\":\"Pageable\",\"dst_kind\":\"Device\"}",
        LREC("memcpy_event") "\"name\":\"memcpy\",\"device_id\":\"0\",\"stream_id\":\"7\","
                             "\"start_ns\":12000,\"end_ns\":12400,\"corr_id\":14,"
                             "\"bytes\":1024,\"copy_kind\":\"DtoH\"}",
        LREC("shutdown") "\"ts_ns\":20000}",
    };
    static const char *const scope[] = {
        LREC("init") "\"ts_ns\":1000}",
        LREC(
            "scope_begin") "\"name\":\"train\",\"tag\":\"\",\"ts_ns\":3000,"
                           "\"user_scope\":\"train\",\"scope_depth\":1,\"host\":{},\"devices\":[]}",
        LREC("scope_begin") "\"name\":\"step\",\"ts_ns\":4000,\"user_scope\":\"train|step\","
                            "\"scope_depth\":2}",
        LREC("scope_end") "\"name\":\"step\",\"ts_ns\":10500,\"user_scope\":\"train|step\","
                          "\"scope_depth\":2}",
        LREC("scope_end") "\"name\":\"train\",\"ts_ns\":13000,\"user_scope\":\"train\","
                          "\"scope_depth\":1}",
        LREC("shutdown") "\"ts_ns\":20000}",
    };
    static const char *const system[] = {
        LREC("init") "\"ts_ns\":1000}",
        LREC("system_sample") "\"name\":\"\",\"ts_ns\":4000,\"host\":{\"cpu_pct\":25.5,"
                              "\"ram_used_mib\":1000.0,\"ram_total_mib\":16000.0},\"devices\":"
                              "[{\"id\":0,\"name\":\"Old GPU\",\"used_mib\":2048,"
                              "\"total_mib\":8192,\"util_gpu_pct\":40,\"util_mem_pct\":10,"
                              "\"temp_c\":50,\"power_mw\":100000,\"clk_sm_mhz\":1400}]}",
        LREC("system_sample") "\"name\":\"\",\"ts_ns\":8000,\"host\":{\"cpu_pct\":74.5,"
                              "\"ram_used_mib\":3000.0,\"ram_total_mib\":16000.0},\"devices\":"
                              "[{\"id\":0,\"name\":\"Old GPU\",\"used_mib\":4096,"
                              "\"total_mib\":8192,\"util_gpu_pct\":80,\"util_mem_pct\":30,"
                              "\"temp_c\":60,\"power_mw\":200000,\"clk_sm_mhz\":1600}]}",
        LREC("shutdown") "\"ts_ns\":20000}",
    };
    const struct {
        const char *name;
        const char *const *lines;
        size_t n;
    } files[] = {{"device", device, sizeof device / sizeof *device},
                 {"scope", scope, sizeof scope / sizeof *scope},
                 {"system", system, sizeof system / sizeof *system}};
    CHECK_INT(mkdir(dir, 0755), 0);
    for (size_t c = 0; c < 3; c++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.log", dir, files[c].name);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
            return;
        for (size_t i = 0; i < files[c].n; i++)
            put(f, files[c].lines[i]);
        CHECK_INT(fclose(f), 0);
    }
}

static void test_legacy(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/" LSID, tmp_root);
    write_legacy(dir);
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, NULL, &cb, &res, &err), GP_OK);
    fl_report_finish(rep, &res);
    fl_buf t = {0}, jb = {0};
    fl_report_text(rep, 10, &t);
    fl_report_json(rep, 10, &jb);
    fl_report_destroy(rep);
    char *text = fl_buf_take(&t), *json = fl_buf_take(&jb);
    json_error_t e;
    json_t *j = json ? json_loads(json, JSON_REJECT_DUPLICATES, &e) : NULL;
    CHECK(j != NULL);
    if (!j || !text) {
        free(text);
        free(json);
        return;
    }
    CHECK_INT(jint(j, "read.unknown_types"), 0);
    CHECK_INT(jint(j, "read.bad_records"), 0);
    /* init: the session's start, app and devices */
    CHECK_STR(jstr(j, "session.app"), "old");
    CHECK_STR(jstr(j, "session.start_source"), "job_start");
    CHECK_INT(jint(j, "session.start_ns"), 1000);
    CHECK_INT(jint(j, "session.duration_ns"), 19000);
    CHECK_STR(jstr(j, "session.devices[0].name"), "Old GPU");
    /* kernel_event: launches by name */
    CHECK_INT(jint(j, "summary.kernel_launches"), 3);
    CHECK_INT(jint(j, "summary.kernel_distinct"), 2);
    CHECK_INT(jint(j, "summary.kernel_time_ns"), 4500);
    CHECK_STR(jstr(j, "hotspots.kernels[0].name"), "gemm");
    CHECK_INT(jint(j, "hotspots.kernels[0].count"), 2);
    CHECK_INT(jint(j, "hotspots.kernels[0].total_ns"), 4000);
    CHECK_INT(jint(j, "hotspots.kernels[0].registers_max"), 32);
    CHECK(json_is_true(jpath(j, "hotspots.kernels[0].name_known")));
    CHECK_STR(jstr(j, "hotspots.kernels[1].name"), "relu");
    CHECK_INT(jint(j, "hotspots.kernels[1].total_ns"), 500);
    /* memcpy_event: copies by kind */
    CHECK_INT(jint(j, "summary.memcpy_count"), 2);
    CHECK_INT(jint(j, "summary.memcpy_bytes"), 5120);
    CHECK_INT(jint(j, "summary.memcpy_time_ns"), 1000);
    /* scope_begin / scope_end: paired */
    CHECK_INT(jint(j, "summary.scope_events"), 4);
    CHECK_INT(jint(j, "scopes.unmatched_ends"), 0);
    CHECK_STR(jstr(j, "scopes.items[0].name"), "train");
    CHECK_INT(jint(j, "scopes.items[0].total_ns"), 10000);
    CHECK_STR(jstr(j, "scopes.items[1].name"), "step");
    CHECK_INT(jint(j, "scopes.items[1].total_ns"), 6500);
    /* system_sample: the device's and the host's readings */
    CHECK_INT(jint(j, "devices[0].samples"), 2);
    CHECK_NEAR(jnum(j, "devices[0].util_gpu_mean_pct"), 60, 1e-9);
    CHECK_INT(jint(j, "devices[0].mem_used_max_bytes"), 4096ll * 1048576);
    CHECK_NEAR(jnum(j, "devices[0].power_mean_mw"), 150000, 1e-9);
    CHECK_INT(jint(j, "host.samples"), 2);
    CHECK_NEAR(jnum(j, "host.cpu_mean_pct"), 50, 1e-9);
    CHECK_INT(jint(j, "host.ram_used_max_bytes"), 3000ll * 1048576);
    json_decref(j);
    free(text);
    free(json);
}

/* ------------------------------------------------- launch_ordinal */

#define OSID "5d1c0a6e-0000-4000-8000-000000000003"

/* Kernel replay as GPUFlight's range profiler writes it: ranges named
 * "0", "1" (kernel_name too) with launch_ordinal, the ordinal-th launch of
 * the session by start time; written before the kernels, and the later
 * batch holding the earlier launches. */
static void test_ordinals(void)
{
    static const char *const lines[] = {
        "{\"version\":1,\"type\":\"job_start\",\"pid\":1,\"app\":\"rp\",\"session_id\":\"" OSID
        "\",\"ts_ns\":1000,\"session_kind\":\"trace\",\"profiling_engine\":"
        "\"nvidia.range_profiler\"}",
        "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"" OSID
        "\",\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"relu\"}}",
        "{\"type\":\"kernel_perf_metric_event\",\"session_id\":\"" OSID "\",\"device_id\":0,"
        "\"range_index\":0,\"range_name\":\"0\",\"kernel_name\":\"0\",\"launch_ordinal\":2,"
        "\"sm_throughput_pct\":10,\"l1_hit_rate_pct\":-1,\"l2_hit_rate_pct\":-1}",
        "{\"type\":\"kernel_perf_metric_event\",\"session_id\":\"" OSID "\",\"device_id\":0,"
        "\"range_index\":1,\"range_name\":\"1\",\"kernel_name\":\"1\",\"launch_ordinal\":3,"
        "\"sm_throughput_pct\":30,\"l1_hit_rate_pct\":-1,\"l2_hit_rate_pct\":-1}",
        "{\"type\":\"kernel_perf_metric_event\",\"session_id\":\"" OSID "\",\"device_id\":0,"
        "\"range_index\":2,\"range_name\":\"2\",\"kernel_name\":\"2\",\"launch_ordinal\":9,"
        "\"sm_throughput_pct\":50,\"l1_hit_rate_pct\":-1,\"l2_hit_rate_pct\":-1}",
        "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" OSID
        "\",\"batch_id\":2,\"base_time_ns\":5000,\"columns\":[\"dt_ns\",\"kernel_id\","
        "\"stream_id\",\"duration_ns\",\"corr_id\"],\"rows\":[[0,2,7,100,3],[1000,1,7,100,4]]}",
        "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" OSID
        "\",\"batch_id\":1,\"base_time_ns\":2000,\"columns\":[\"dt_ns\",\"kernel_id\","
        "\"stream_id\",\"duration_ns\",\"corr_id\"],\"rows\":[[0,2,7,100,1],[1000,1,7,100,2]]}",
        "{\"type\":\"shutdown\",\"pid\":1,\"app\":\"rp\",\"session_id\":\"" OSID
        "\",\"ts_ns\":9000}",
    };
    /* launches by start: relu@2000 (1), gemm@3000 (2), relu@5000 (3), gemm@6000 (4) */
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/" OSID, tmp_root);
    CHECK_INT(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        put(f, lines[i]);
    CHECK_INT(fclose(f), 0);
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, NULL, &cb, &res, &err), GP_OK);
    fl_report_finish(rep, &res);
    fl_buf jb = {0};
    fl_report_json(rep, 10, &jb);
    fl_report_destroy(rep);
    char *json = fl_buf_take(&jb);
    json_error_t e;
    json_t *j = json ? json_loads(json, JSON_REJECT_DUPLICATES, &e) : NULL;
    CHECK(j != NULL);
    if (j) {
        CHECK_INT(jint(j, "summary.kernel_launches"), 4);
        CHECK_INT(json_array_size(jpath(j, "kernel_perf_metrics")), 3);
        CHECK_STR(jstr(j, "kernel_perf_metrics[0].kernel_name"), "gemm");
        CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].sm_throughput_pct"), 10, 1e-9);
        CHECK_STR(jstr(j, "kernel_perf_metrics[1].kernel_name"), "relu");
        CHECK_NEAR(jnum(j, "kernel_perf_metrics[1].sm_throughput_pct"), 30, 1e-9);
        /* beyond the session's launches: the range's own name */
        CHECK_STR(jstr(j, "kernel_perf_metrics[2].kernel_name"), "2");
        CHECK_INT(jint(j, "kernel_perf_metrics[2].ranges"), 1);
    }
    json_decref(j);
    free(json);
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gp_test_records.XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_records();
    test_legacy();
    test_ordinals();
    fl_rmtree(tmp_root);
    return check_done("test_report_records");
}
