/*
 * test_cli_trace.c - `gpu-profile --engine ENGINE -- CMD` without a GPU:
 * CUDA never loads the plugin here, so a fake injected child
 * (tests/cli/cli_child.c, mode inject) checks the environment it got and
 * writes the sessions a real CUDA process and grandchild would have
 * written (three, in the wire format, with the faults of real logs: a cut
 * last line, a line that is not JSON, a record of another session, a bad
 * row).  Checked: the text summary (golden), the JSON trace object value
 * by value, the exit status passing through, the private temporary log
 * directory removed and --log-dir sessions kept (the profiler's own one
 * not counted), the plugin lookup (GPUFL_CUPTI_PLUGIN, next to the
 * executable, ../lib, a warning and a normal run when there is none),
 * --engine errors, --engine monitor being today's run, and the profiler's
 * own environment left alone.
 */
#include "harness.h"
#include "json_mini.h"

#include "fl_log.h"
#include "gpufl.h"

#include <dirent.h>
#include <limits.h>

#define SA "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
#define SB "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
#define SC "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
#define KCOLS                                                                                      \
    "\"columns\":[\"dt_ns\",\"kernel_id\",\"stream_id\",\"duration_ns\",\"corr_id\","              \
    "\"dyn_shared\",\"num_regs\",\"has_details\",\"external_kind\",\"external_id\"]"
#define MCOLS                                                                                      \
    "\"columns\":[\"dt_ns\",\"stream_id\",\"duration_ns\",\"bytes\",\"copy_kind\",\"corr_id\"]"
#define JOB(s)                                                                                     \
    "{\"version\":1,\"type\":\"job_start\",\"pid\":10,\"app\":\"gp_cli_child\",\"session_id\":"    \
    "\"" s "\",\"log_path\":\"x\",\"ts_ns\":1760000000000000000,\"devices\":[],"                   \
    "\"session_kind\":\"trace\",\"profiling_engine\":\"nvidia.trace\"}\n"
#define HEAD(type, s) "{\"version\":1,\"type\":\"" type "\",\"session_id\":\"" s "\""
#define MSG_PRIV "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: GPU profiling is restricted to admin users"

/* The CUDA process: two kernels in two batches (the second with its
 * columns in another order: readers look them up by name), copies of
 * every kind, a memset, a batch of another session (dropped), a partial
 * feature, and a last line cut by a crash. */
static const char session_a[] = JOB(SA) HEAD(
    "dictionary_update",
    SA) ",\"kernel_dict\":{\"1\":\"vecAdd(float*, float*, "
        "float*, int)\",\"2\":\"void gemm<128>(float const*, "
        "float const*, float*)\"}}\n" HEAD(
            "kernel_event_batch",
            SA) ",\"batch_id\":1,\"base_time_ns\":1760000000001000000," KCOLS
                ",\"rows\":[[0,1,7,20000,11,0,16,0,0,0],[50000,2,7,900000,12,0,64,0,0,0]]}\n" HEAD(
                    "kernel_event_batch",
                    SA) ",\"batch_id\":2,\"base_time_ns\":1760000000002000000,"
                        "\"columns\":[\"duration_ns\",\"kernel_id\",\"dt_ns\"],"
                        "\"rows\":[[30000,1,0],[1100000,2,10]]}\n" HEAD(
                            "memcpy_event_"
                            "batch",
                            SA) ",\"batch_id\":1,\"base_time_ns\":1760000000000500000," MCOLS
                                ",\"rows\":[[0,7,100000,4194304,1,10],[10,7,50000,1048576,2,14],["
                                "20,7,2000,1024,1,15],"
                                "[30,7,1000,512,3,16]]}\n"
                                "{\"version\":1,\"type\":\"memset_event\",\"session_id\":\"" SA
                                "\",\"pid\":10,\"app\":\"gp_cli_child\",\"ts_ns\":"
                                "1760000000003000000,\"duration_ns\":10000,"
                                "\"device_id\":0,\"stream_id\":7,\"context_id\":1,\"corr_id\":20,"
                                "\"bytes\":4096,\"value\":0,"
                                "\"memory_kind\":3}\n" HEAD(
                                    "kernel_event_batch",
                                    "dddddddd-0000-4000-8000-000000000000") ",\"batch_id\":3,"
                                                                            "\"base_time_ns\":"
                                                                            "1," KCOLS
                                                                            ",\"rows\":[[0,1,7,"
                                                                            "777777,11,0,16,0,0,0]]"
                                                                            "}\n" HEAD(
                                                                                "capture_"
                                                                                "capabilities",
                                                                                SA) ",\"ts_ns\":"
                                                                                    "17600000000040"
                                                                                    "00000,"
                                                                                    "\"requested_"
                                                                                    "engine\":"
                                                                                    "\"nvidia."
                                                                                    "trace\","
                                                                                    "\"selected_"
                                                                                    "engine\":"
                                                                                    "\"nvidia."
                                                                                    "trace\","
                                                                                    "\"capabilities"
                                                                                    "\":[{"
                                                                                    "\"feature\":"
                                                                                    "\"kernel_"
                                                                                    "events\","
                                                                                    "\"requested\":"
                                                                                    "true,"
                                                                                    "\"status\":"
                                                                                    "\"collected\","
                                                                                    "\"mode\":\"\","
                                                                                    "\"reason_"
                                                                                    "code\":\"\","
                                                                                    "\"message\":"
                                                                                    "\"\"},{"
                                                                                    "\"feature\":"
                                                                                    "\"memcpy_"
                                                                                    "events\","
                                                                                    "\"requested\":"
                                                                                    "true,"
                                                                                    "\"status\":"
                                                                                    "\"partial\","
                                                                                    "\"mode\":\"\","
                                                                                    "\"reason_"
                                                                                    "code\":"
                                                                                    "\"records_"
                                                                                    "lost\","
                                                                                    "\"message\":"
                                                                                    "\"3 records "
                                                                                    "lost "
                                                                                    "(activity "
                                                                                    "buffer "
                                                                                    "full)\"}]}\n"
                                                                                    "{\"version\":"
                                                                                    "1,\"type\":"
                                                                                    "\"kernel_"
                                                                                    "event_batch\","
                                                                                    "\"session_"
                                                                                    "id\":\"aaaa";

/* The CUDA grandchild: its own kernel ids (gemm is 1 here), an
 * incremental dictionary, more kernels than the top 10, an id without a
 * name, a batch with a bad row (a string: the reader skips the batch
 * whole, its good row too, as one bad record), a line that is not JSON,
 * peer and device copies, and two capture_capabilities of which the last
 * counts. */
static const char session_b[] = JOB(SB) HEAD(
    "capture_capabilities",
    SB) ",\"requested_engine\":\"nvidia.trace\",\"selected_engine\":\"nvidia.monitor\","
        "\"capabilities\":[{\"feature\":\"kernel_events\",\"status\":\"fallback\",\"message\":"
        "\"not yet\"}]}\n" HEAD(
            "dictionary_update",
            SB) ",\"kernel_dict\":{\"1\":\"void gemm<128>(float const*, float const*, "
                "float*)\",\"2\":"
                "\"reduce_sum(float*, int)\"}}\n" HEAD(
                    "dictionary_update",
                    SB) ",\"kernel_dict\":{\"3\":\"tiny_kernel_01\",\"4\":\"tiny_kernel_02\",\"5\":"
                        "\"tiny_kernel_03\",\"6\":\"tiny_kernel_04\",\"7\":\"tiny_kernel_05\","
                        "\"8\":"
                        "\"tiny_kernel_06\",\"9\":\"tiny_kernel_07\",\"10\":\"tiny_kernel_08\","
                        "\"11\":"
                        "\"tiny_kernel_09\",\"12\":\"tiny_kernel_10\"}}\n"
                        "this line is not JSON\n" HEAD(
                            "kernel_event_batch",
                            SB) ",\"batch_id\":1,\"base_time_ns\":1760000000001000000," KCOLS
                                ",\"rows\":[[0,1,7,1000000,1,0,0,0,0,0],[1,2,7,80000,2,0,0,0,0,0],["
                                "2,2,7,80000,3,0,0,0,0,0],"
                                "[3,3,7,1000,4,0,0,0,0,0],[4,4,7,2000,5,0,0,0,0,0],[5,5,7,3000,6,0,"
                                "0,0,0,0],"
                                "[6,6,7,4000,7,0,0,0,0,0],[7,7,7,5000,8,0,0,0,0,0],[8,8,7,6000,9,0,"
                                "0,0,0,0],"
                                "[9,9,7,7000,10,0,0,0,0,0],[10,10,7,8000,11,0,0,0,0,0],[11,11,7,"
                                "9000,12,0,0,0,0,0],"
                                "[12,12,7,10000,13,0,0,0,0,0],[13,99,7,5500,14,0,0,0,0,0]]}\n" HEAD(
                                    "kernel_event_batch",
                                    SB) ",\"batch_id\":2,\"base_time_ns\":"
                                        "1760000000001100000," KCOLS
                                        ",\"rows\":[[0,1,7,500000,16,0,0,0,0,0],"
                                        "[14,\"x\",7,1,15,0,0,0,0,0]]}\n" HEAD(
                                            "memcpy_event_batch",
                                            SB) ",\"batch_id\":1,\"base_time_ns\":"
                                                "1760000000000500000," MCOLS
                                                ",\"rows\":[[0,7,30000,2097152,10,20],[1,7,3000,"
                                                "8192,8,21]]"
                                                "}\n" HEAD(
                                                    "capture_capabilities",
                                                    SB) ",\"requested_engine\":\"nvidia.trace\","
                                                        "\"selected_"
                                                        "engine\":\"nvidia.trace\","
                                                        "\"capabilities\":[{\"feature\":\"kernel_"
                                                        "events\","
                                                        "\"requested\":true,\"status\":\"partial\","
                                                        "\"mode\":\"\",\"reason_code\":\"records_"
                                                        "lost\","
                                                        "\"message\":\"12 records lost (activity "
                                                        "buffer "
                                                        "full)\"}]}\n"
                                                        "{\"type\":\"shutdown\",\"pid\":11,\"app\":"
                                                        "\"gp_"
                                                        "cli_child\",\"session_id\":\"" SB
                                                        "\",\"ts_ns\":1760000000005000000}\n";

/* A CUDA process where CUPTI was not allowed: Monitor, no records. */
static const char session_c[] = JOB(SC) HEAD(
    "capture_capabilities",
    SC) ",\"requested_engine\":\"nvidia.trace\",\"selected_engine\":\"nvidia.monitor\","
        "\"capabilities\":[{\"feature\":\"kernel_events\",\"requested\":true,\"status\":"
        "\"fallback\","
        "\"mode\":\"\",\"reason_code\":\"cupti_unavailable\",\"message\":\"" MSG_PRIV "\"},"
        "{\"feature\":\"memcpy_events\",\"requested\":true,\"status\":\"fallback\",\"mode\":\"\","
        "\"reason_code\":\"cupti_unavailable\",\"message\":\"" MSG_PRIV "\"},"
        "{\"feature\":\"pc_sampling\",\"requested\":false,\"status\":\"not_requested\",\"mode\":"
        "\"\","
        "\"reason_code\":\"\",\"message\":\"\"}]}\n"
    /* PC samples: two reasons named by metric_dict, a _not_issued subset
     * (not counted), an activity-API reason (no name: 3, execution
     * dependency); SASS metric rows (not stalls): one of a stall name
     * (counted as a row, in no figure), 100 instructions at 24 threads. */
    HEAD("dictionary_update",
         SC) ",\"metric_dict\":{\"1\":"
             "\"smsp__pcsamp_warps_issue_stalled_long_scoreboard\",\"2\":"
             "\"smsp__pcsamp_warps_issue_stalled_barrier\",\"3\":"
             "\"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued\",\"4\":"
             "\"smsp__sass_inst_executed\",\"5\":\"smsp__sass_thread_inst_executed\"}}\n" HEAD(
                 "profile_sample_batch",
                 SC) ",\"batch_id\":1,\"base_time_ns\":1760000000004500000,"
                     "\"columns\":[\"dt_ns\",\"corr_id\",\"device_id\",\"function_id\",\"pc_"
                     "offset\","
                     "\"metric_id\",\"metric_value\",\"stall_reason\",\"sample_kind\",\"scope_name_"
                     "id\","
                     "\"source_file_id\",\"source_line\"],\"rows\":[[0,11,0,1,64,1,60,7,0,0,0,0],"
                     "[0,11,0,1,64,2,30,9,0,0,0,0],[0,11,0,1,64,3,20,7,0,0,0,0],[0,12,0,1,64,0,10,"
                     "3,0,0,0,0],"
                     "[0,12,0,1,64,1,5,7,1,0,0,0],[0,0,0,1,64,4,100,0,1,0,0,0],"
                     "[0,0,0,1,64,5,2400,0,1,0,0,0]]}\n"
                     "{\"type\":\"shutdown\",\"pid\":12,\"app\":\"gp_cli_child\",\"session_id\":"
                     "\"" SC "\",\"ts_ns\":1760000000005000000}\n";

static char plugin[PATH_MAX]; /* an existing file standing for the plugin, realpath */
static char file_a[512], file_b[512], file_c[512], record[512], tmpdir[512];

static void setup(void)
{
    char p[512];
    h_path(p, sizeof p, "fake-cupti.so");
    h_write_file(p, "not really a plugin\n", 20);
    CHECK(realpath(p, plugin) != NULL);
    h_path(file_a, sizeof file_a, "session_a.log");
    h_write_file(file_a, session_a, strlen(session_a));
    h_path(file_b, sizeof file_b, "session_b.log");
    h_write_file(file_b, session_b, strlen(session_b));
    h_path(file_c, sizeof file_c, "session_c.log");
    h_write_file(file_c, session_c, strlen(session_c));
    h_path(record, sizeof record, "logpath.txt");
    h_path(tmpdir, sizeof tmpdir, "tmp");
    CHECK_INT(mkdir(tmpdir, 0755), 0);
    h_scenario("device 0\n");
    h_clear_inject_env();
}

static int dir_entries(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The text report from "trace  " up to the closing status line. */
static char *trace_block(const char *err)
{
    const char *p = strstr(err, "trace  ");
    if (!p)
        p = strstr(err, "gpu-profile: trace: ");
    if (!p)
        return strdup("(no trace block)\n");
    char status[PATH_MAX + 32]; /* the closing line: CMD as typed, its status */
    snprintf(status, sizeof status, "gpu-profile: %s ", h_child);
    const char *end = strstr(p, status);
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* The GPUFL_LOG_PATH the child saw, from the record file (then removed). */
static void seen_log_path(char *buf, size_t len)
{
    char *t = check_read_file(record, NULL);
    snprintf(buf, len, "%s", t ? t : "");
    free(t);
    buf[strcspn(buf, "\n")] = '\0';
    remove(record);
}

static void test_text_summary(void)
{
    char env_plugin[PATH_MAX + 32], env_tmp[600];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmpdir);
    const char *env[] = {env_plugin, env_tmp, NULL};
    /* Any case; the child gets the engine's own name. */
    const char *argv[] = {h_cli,    "--backend", "none",         "--engine", "tRaCe", "--", h_child,
                          "inject", plugin,      "gp_cli_child", "Trace",    record,  "5",  SA,
                          file_a,   SC,          file_c,         SB,         file_b,  NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 5);
    CHECK_INT(r.out_len, 0);
    char *block = trace_block(r.err);
    check_golden("cli_trace/summary.txt", block, "test_cli_trace");
    free(block);
    CHECK_CONTAINS(r.err, " exited with status 5 after ");
    /* The private log directory was under TMPDIR, and is gone. */
    char seen[PATH_MAX], real_tmp[PATH_MAX];
    seen_log_path(seen, sizeof seen);
    CHECK(realpath(tmpdir, real_tmp) != NULL);
    char prefix[PATH_MAX + 32];
    snprintf(prefix, sizeof prefix, "%s/gpu-profile-trace-", real_tmp);
    CHECK_PREFIX(seen, prefix);
    CHECK(!h_exists(seen));
    CHECK_INT(dir_entries(tmpdir), 0);
    h_result_free(&r);
}

static const jn *num(const jn *o, const char *key)
{
    const jn *v = jn_get(o, key);
    CHECK(v && v->t == JN_NUM);
    return v;
}

/* A number, compared as written (exact for 64-bit integers). */
#define CHECK_NUM(o, key, want)                                                                    \
    do {                                                                                           \
        const jn *v_ = num(o, key);                                                                \
        CHECK_STR(v_ ? v_->text : NULL, want);                                                     \
    } while (0)

static void check_ops(const jn *o, const char *count, const char *bytes, const char *time_ns)
{
    CHECK_NUM(o, "count", count);
    CHECK_NUM(o, "bytes", bytes);
    CHECK_NUM(o, "time_ns", time_ns);
}

static void check_kernel(const jn *k, const char *name, const char *calls, const char *total,
                         const char *mean, const char *pct)
{
    CHECK_STR(jn_str(jn_get(k, "name")), name);
    CHECK_NUM(k, "calls", calls);
    CHECK_NUM(k, "total_ns", total);
    CHECK_NUM(k, "mean_ns", mean);
    CHECK_NUM(k, "time_pct", pct);
}

/* The "trace" object of the three sessions above; log_dir as expected. */
static void check_trace_object(const jn *t, const char *log_dir)
{
    static const char *const keys[] = {
        "engine",          "plugin",          "log_dir",        "note",
        "processes",       "kernel_launches", "kernel_time_ns", "distinct_kernels",
        "top_kernels",     "memcpy",          "memset",         "pc_samples",
        "top_stalls",      "sass_metrics",    "engines",        "degraded",
        "capture_windows", "bad_lines",       "bad_records",    "dropped_records"};
    CHECK(t && t->t == JN_OBJ);
    if (!t || t->t != JN_OBJ)
        return;
    CHECK_U64(t->n, sizeof keys / sizeof keys[0]);
    for (size_t i = 0; i < t->n && i < sizeof keys / sizeof keys[0]; i++)
        CHECK_STR(t->keys[i], keys[i]);
    CHECK_STR(jn_str(jn_get(t, "engine")), "Trace");
    CHECK(jn_get(t, "capture_windows") && jn_get(t, "capture_windows")->t == JN_NULL);
    CHECK_STR(jn_str(jn_get(t, "plugin")), plugin);
    if (log_dir)
        CHECK_STR(jn_str(jn_get(t, "log_dir")), log_dir);
    else
        CHECK(jn_is_null(jn_get(t, "log_dir")));
    CHECK(jn_is_null(jn_get(t, "note")));
    CHECK_NUM(t, "processes", "3");
    CHECK_NUM(t, "kernel_launches", "18");
    CHECK_NUM(t, "kernel_time_ns", "3270500");
    CHECK_NUM(t, "distinct_kernels", "14");
    const jn *top = jn_get(t, "top_kernels");
    CHECK(top && top->t == JN_ARR && top->n == 10);
    if (top && top->n == 10) {
        check_kernel(jn_at(top, 0), "void gemm<128>(float const*, float const*, float*)", "3",
                     "3000000", "1000000", "91.729093");
        check_kernel(jn_at(top, 1), "reduce_sum(float*, int)", "2", "160000", "80000", "4.892218");
        check_kernel(jn_at(top, 2), "vecAdd(float*, float*, float*, int)", "2", "50000", "25000",
                     "1.528818");
        check_kernel(jn_at(top, 3), "tiny_kernel_10", "1", "10000", "10000", "0.305764");
        check_kernel(jn_at(top, 7), "tiny_kernel_06", "1", "6000", "6000", "0.183458");
        check_kernel(jn_at(top, 8), "(kernel id 99, not in kernel_dict)", "1", "5500", "5500",
                     "0.16817");
        check_kernel(jn_at(top, 9), "tiny_kernel_05", "1", "5000", "5000", "0.152882");
    }
    const jn *mc = jn_get(t, "memcpy");
    static const char *const kinds[] = {"HtoD", "DtoH", "DtoD", "PtoP", "other"};
    CHECK(mc && mc->t == JN_OBJ && mc->n == 5);
    for (size_t i = 0; mc && i < 5 && i < mc->n; i++)
        CHECK_STR(mc->keys[i], kinds[i]);
    check_ops(jn_get(mc, "HtoD"), "2", "4195328", "102000");
    check_ops(jn_get(mc, "DtoH"), "1", "1048576", "50000");
    check_ops(jn_get(mc, "DtoD"), "1", "8192", "3000");
    check_ops(jn_get(mc, "PtoP"), "1", "2097152", "30000");
    check_ops(jn_get(mc, "other"), "1", "512", "1000");
    check_ops(jn_get(t, "memset"), "1", "4096", "10000");
    CHECK_NUM(t, "pc_samples", "100");
    const jn *sm = jn_get(t, "sass_metrics");
    CHECK_NUM(sm, "rows", "3");
    CHECK_NUM(sm, "instructions", "100");
    CHECK_NUM(sm, "threads_per_instruction", "24");
    CHECK(jn_is_null(jn_get(sm, "sectors_per_request")));
    const jn *ts = jn_get(t, "top_stalls");
    CHECK(ts && ts->t == JN_ARR && ts->n == 3);
    if (ts && ts->n == 3) {
        static const char *const want[3][3] = {{"Long Scoreboard", "60", "60"},
                                               {"Barrier", "30", "30"},
                                               {"Execution Dependency", "10", "10"}};
        for (size_t i = 0; i < 3; i++) {
            CHECK_STR(jn_str(jn_get(jn_at(ts, i), "name")), want[i][0]);
            CHECK_NUM(jn_at(ts, i), "samples", want[i][1]);
            CHECK_NUM(jn_at(ts, i), "pct", want[i][2]);
        }
    }
    const jn *en = jn_get(t, "engines");
    CHECK(en && en->t == JN_ARR && en->n == 2);
    if (en && en->n == 2) {
        const jn *e0 = jn_at(en, 0), *e1 = jn_at(en, 1);
        CHECK_STR(jn_str(jn_get(e0, "selected_engine")), "nvidia.trace");
        CHECK_STR(jn_str(jn_get(e0, "requested_engine")), "nvidia.trace");
        CHECK_NUM(e0, "processes", "2");
        CHECK(jn_is_null(jn_get(e0, "fallback_message")));
        CHECK_STR(jn_str(jn_get(e1, "selected_engine")), "nvidia.monitor");
        CHECK_STR(jn_str(jn_get(e1, "requested_engine")), "nvidia.trace");
        CHECK_NUM(e1, "processes", "1");
        CHECK_STR(jn_str(jn_get(e1, "fallback_message")), MSG_PRIV);
    }
    const jn *dg = jn_get(t, "degraded");
    CHECK(dg && dg->t == JN_ARR && dg->n == 4);
    if (dg && dg->n == 4) {
        static const char *const want[4][3] = {
            {"memcpy_events", "partial", "3 records lost (activity buffer full)"},
            {"kernel_events", "partial", "12 records lost (activity buffer full)"},
            {"kernel_events", "fallback", MSG_PRIV},
            {"memcpy_events", "fallback", MSG_PRIV}};
        for (size_t i = 0; i < 4; i++) {
            const jn *d = jn_at(dg, i);
            CHECK_STR(jn_str(jn_get(d, "feature")), want[i][0]);
            CHECK_STR(jn_str(jn_get(d, "status")), want[i][1]);
            CHECK_STR(jn_str(jn_get(d, "message")), want[i][2]);
            CHECK_NUM(d, "processes", "1");
        }
    }
    CHECK_NUM(t, "bad_lines", "2");
    CHECK_NUM(t, "bad_records", "1");
    CHECK_NUM(t, "dropped_records", "1");
}

static jn *parse_file(const char *path)
{
    char *text = check_read_file(path, NULL);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, strlen(text), &why) : NULL;
    if (!doc)
        fprintf(stderr, "%s: not JSON (%s):\n%s\n", path, why ? why : "no file", text ? text : "");
    CHECK(doc != NULL);
    free(text);
    return doc;
}

static void test_json_and_quiet(void)
{
    char env_plugin[PATH_MAX + 32], env_tmp[600], out[512];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmpdir);
    h_path(out, sizeof out, "run.json");
    const char *env[] = {env_plugin, env_tmp, NULL};
    /* -q: nothing on stderr, the report still goes to -o. */
    const char *argv[] = {h_cli,   "-q",   "--json", "-o",     out,    "--engine",
                          "Trace", "--",   h_child,  "inject", plugin, "gp_cli_child",
                          "Trace", record, "0",      SA,       file_a, SB,
                          file_b,  SC,     file_c,   NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    jn *doc = parse_file(out);
    if (doc) {
        CHECK_STR(doc->keys[doc->n - 2], "samples_file");
        CHECK_STR(doc->keys[doc->n - 1], "trace");
        check_trace_object(jn_get(doc, "trace"), NULL);
    }
    jn_free(doc);
    CHECK_INT(dir_entries(tmpdir), 0);
    remove(record);
    h_result_free(&r);
}

static void test_log_dir_kept(void)
{
    char env_plugin[PATH_MAX + 32], base[512], out[512], old[600], real[PATH_MAX];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    h_path(base, sizeof base, "keep");
    h_path(out, sizeof out, "keep.json");
    /* A session of an earlier run: not this run's, not counted. */
    snprintf(old, sizeof old, "%s/old-session", base);
    CHECK_INT(mkdir(base, 0755), 0);
    CHECK_INT(mkdir(old, 0755), 0);
    snprintf(old, sizeof old, "%s/old-session/device.log", base);
    h_write_file(old, session_a, strlen(session_a));
    char dotlog[600];
    snprintf(dotlog, sizeof dotlog, "%s.log", base); /* the library's rule: ".log" is dropped */
    const char *env[] = {env_plugin, NULL};
    const char *argv[] = {h_cli,    "--interval", "0.01",   "--log-dir", dotlog,
                          "--json", "-o",         out,      "--engine",  "trace",
                          "--",     h_child,      "inject", plugin,      "gp_cli_child",
                          "Trace",  record,       "7",      SA,          file_a,
                          SC,       file_c,       SB,       file_b,      NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 7);
    CHECK(realpath(base, real) != NULL);
    char seen[PATH_MAX];
    seen_log_path(seen, sizeof seen);
    CHECK_STR(seen, real);
    /* Kept: the old one, the profiler's own and the three of the run. */
    CHECK_INT(dir_entries(base), 5);
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/" SB "/device.log", base);
    CHECK(h_exists(p));
    jn *doc = parse_file(out);
    if (doc)
        check_trace_object(jn_get(doc, "trace"), real);
    jn_free(doc);
    h_result_free(&r);

    /* The profiler's own session ran Monitor: GPUFL_PROFILING_ENGINE was
     * set for CMD only, never in the profiler's environment. */
    DIR *d = opendir(base);
    struct dirent *e;
    int own = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "old-session") == 0 ||
            strcmp(e->d_name, SA) == 0 || strcmp(e->d_name, SB) == 0 || strcmp(e->d_name, SC) == 0)
            continue;
        char dir[PATH_MAX + 64];
        snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, "device"), 0);
        json_t *cc = fl_first(&log, "capture_capabilities");
        CHECK(cc != NULL);
        if (cc) {
            CHECK_STR(json_string_value(json_object_get(cc, "requested_engine")), "nvidia.monitor");
        }
        json_t *js = fl_first(&log, "job_start");
        CHECK(js != NULL);
        if (js)
            CHECK_STR(json_string_value(json_object_get(js, "app")), "gp_cli_child");
        fl_log_free(&log);
        own++;
    }
    if (d)
        closedir(d);
    CHECK_INT(own, 1);

    /* The text report names where the sessions are. */
    const char *argv2[] = {
        h_cli,   "--backend", "none",  "--log-dir", base,    "--app",
        "myapp", "--engine",  "Trace", "--",        h_child, "inject",
        plugin,  "myapp",     "Trace", record,      "0",     "eeeeeeee-0000-4000-8000-000000000000",
        file_c,  NULL};
    h_run(argv2, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char line[PATH_MAX + 64];
    snprintf(line, sizeof line, "  sessions          %s\n", real);
    CHECK_CONTAINS(r.err, "trace  Trace engine  1 CUDA process\n");
    CHECK_CONTAINS(r.err, line);
    CHECK_CONTAINS(r.err,
                   "gpu-profile: trace: fallback to Monitor in 1 of 1 process: " MSG_PRIV "\n");
    remove(record);
    h_result_free(&r);
    fl_rmtree(base);
}

/* A copy of gpu-profile in h_dir/bin, so the executable-relative lookup
 * sees only what the test puts there. */
static void copy_cli(const char *to)
{
    size_t len = 0;
    char *bytes = check_read_file(h_cli, &len);
    CHECK(bytes != NULL);
    if (!bytes)
        return;
    h_write_file(to, bytes, len);
    free(bytes);
    CHECK_INT(chmod(to, 0755), 0);
}

static void test_plugin_lookup(void)
{
    char bin[512], cli[600], lib[512], beside[600], inlib[600], real[PATH_MAX], marker[512];
    h_path(bin, sizeof bin, "bin");
    h_path(lib, sizeof lib, "lib");
    CHECK_INT(mkdir(bin, 0755), 0);
    snprintf(cli, sizeof cli, "%s/gpu-profile", bin);
    copy_cli(cli);
    h_path(marker, sizeof marker, "ran");

    /* Nowhere: one warning, then the usual run, CMD's status, no injection. */
    const char *a1[] = {cli,  "--backend", "none",     "--engine", "Trace",
                        "--", h_child,     "noinject", "4",        NULL};
    h_result r;
    h_run(a1, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 4);
    char want[2048];
    snprintf(want, sizeof want,
             "gpu-profile: warning: --engine Trace: the CUPTI plugin was not found "
             "(GPUFL_CUPTI_PLUGIN is not set; looked for %s/libgpuprofile_cupti.so, "
             "%s/../lib/libgpuprofile_cupti.so",
             bin, bin);
    CHECK_PREFIX(r.err, want);
    char line[4096];
    CHECK_CONTAINS(h_line(r.err, 0, line, sizeof line),
                   "): the run goes on with device metrics only");
    CHECK_CONTAINS(r.err, "gpu-profile: trace: not traced: the CUPTI plugin was not found");
    CHECK_CONTAINS(r.err, " noinject 4 exited with status 4 after ");
    h_result_free(&r);

    /* ... and in the JSON report: plugin null, the note. */
    char out[512];
    h_path(out, sizeof out, "nowhere.json");
    const char *a1j[] = {cli,     "-q", "--json", "-o",       out, "--engine",
                         "Trace", "--", h_child,  "noinject", "0", NULL};
    h_run(a1j, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    jn *doc = parse_file(out);
    const jn *t = doc ? jn_get(doc, "trace") : NULL;
    CHECK(t != NULL);
    if (t) {
        CHECK(jn_is_null(jn_get(t, "plugin")));
        CHECK(jn_is_null(jn_get(t, "log_dir")));
        CHECK_PREFIX(jn_str(jn_get(t, "note")), "the CUPTI plugin was not found");
        CHECK_NUM(t, "processes", "0");
        CHECK_NUM(t, "kernel_launches", "0");
    }
    jn_free(doc);
    h_result_free(&r);

    /* In ../lib of the executable's directory. */
    CHECK_INT(mkdir(lib, 0755), 0);
    snprintf(inlib, sizeof inlib, "%s/libgpuprofile_cupti.so", lib);
    h_write_file(inlib, "x", 1);
    CHECK(realpath(inlib, real) != NULL);
    const char *a2[] = {cli,      "--backend", "none",         "--engine", "Trace", "--", h_child,
                        "inject", real,        "gp_cli_child", "Trace",    record,  "0",  NULL};
    h_run(a2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "warning"));
    CHECK_CONTAINS(r.err, "gpu-profile: trace: no CUDA activity was traced (CMD made no CUDA "
                          "calls, or the driver did not load the plugin)\n");
    remove(record);
    h_result_free(&r);

    /* Next to the executable (the build tree) wins over ../lib. */
    snprintf(beside, sizeof beside, "%s/libgpuprofile_cupti.so", bin);
    h_write_file(beside, "x", 1);
    CHECK(realpath(beside, real) != NULL);
    const char *a3[] = {cli,          "--backend", "none",   "--engine", "PcSampling",
                        "--",         h_child,     "inject", real,       "gp_cli_child",
                        "PcSampling", record,      "0",      NULL};
    h_run(a3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "warning"));
    remove(record);
    h_result_free(&r);
    /* --engine sassmetrics: the seed's name in any case. */
    const char *a3s[] = {cli,           "--backend", "none",   "--engine", "sassmetrics",
                         "--",          h_child,     "inject", real,       "gp_cli_child",
                         "SassMetrics", record,      "0",      NULL};
    h_run(a3s, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "warning"));
    remove(record);
    h_result_free(&r);

    /* GPUFL_CUPTI_PLUGIN wins over both; a user's CUDA_INJECTION64_PATH
     * is replaced, with a warning. */
    char env_plugin[PATH_MAX + 32];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    const char *env[] = {env_plugin, "CUDA_INJECTION64_PATH=/opt/other/libinject.so", NULL};
    const char *a4[] = {cli,      "--backend", "none",         "--engine", "Trace", "--", h_child,
                        "inject", plugin,      "gp_cli_child", "Trace",    record,  "0",  NULL};
    h_run(a4, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    snprintf(want, sizeof want,
             "gpu-profile: warning: CUDA_INJECTION64_PATH=/opt/other/libinject.so is replaced by "
             "%s for the command (--engine Trace)\n",
             plugin);
    CHECK_PREFIX(r.err, want);
    remove(record);
    h_result_free(&r);

    /* GPUFL_CUPTI_PLUGIN naming nothing: an error, CMD not run. */
    char missing[512], env_missing[600];
    h_path(missing, sizeof missing, "no-such-plugin.so");
    snprintf(env_missing, sizeof env_missing, "GPUFL_CUPTI_PLUGIN=%s", missing);
    const char *env2[] = {env_missing, NULL};
    const char *a5[] = {cli, "--engine", "Trace", "--", h_child, "touch", marker, NULL};
    h_run(a5, env2, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    snprintf(want, sizeof want,
             "gpu-profile: --engine Trace: GPUFL_CUPTI_PLUGIN=%s: No such file or directory: "
             "point it at libgpuprofile_cupti.so, or unset it to use the one installed with "
             "gpu-profile\n",
             missing);
    CHECK_STR(r.err, want);
    CHECK(!h_exists(marker));
    h_result_free(&r);

    /* ... or a directory. */
    snprintf(env_missing, sizeof env_missing, "GPUFL_CUPTI_PLUGIN=%s", bin);
    h_run(a5, env2, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, " is not a regular file: not loaded: point it at");
    CHECK(!h_exists(marker));
    h_result_free(&r);

    /* With Monitor the plugin is not looked for: no error. */
    snprintf(env_missing, sizeof env_missing, "GPUFL_CUPTI_PLUGIN=%s", missing);
    const char *a6[] = {cli, "--backend", "none", "--", h_child, "noinject", "0", NULL};
    h_run(a6, env2, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "gpu-profile: trace"));
    h_result_free(&r);
}

static void test_engine_option(void)
{
    char marker[512];
    h_path(marker, sizeof marker, "ran-engine");
    const char *a1[] = {h_cli, "--engine", "bogus", "--", h_child, "touch", marker, NULL};
    h_result r;
    h_run(a1, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --engine: 'bogus' is not an engine: use Monitor, Trace, "
                     "PcSampling, SassMetrics, RangeProfiler, Deep or PmSampling (any case)\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);

    const char *a2[] = {h_cli, "--engine", NULL};
    h_run(a2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --engine needs a value: Monitor, Trace, PcSampling, "
                     "SassMetrics, RangeProfiler, Deep or PmSampling\n");
    h_result_free(&r);

    /* --engine monitor is the run without the option: no injection, no
     * "trace" key, the same report keys. */
    char env_plugin[PATH_MAX + 32], out1[512], out2[512];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    const char *env[] = {env_plugin, NULL};
    h_path(out1, sizeof out1, "mon1.json");
    h_path(out2, sizeof out2, "mon2.json");
    const char *a3[] = {h_cli, "--json", "-o",       out1, "--engine", "MONITOR",
                        "--",  h_child,  "noinject", "3",  NULL};
    const char *a4[] = {h_cli, "--json", "-o", out2, "--", h_child, "noinject", "3", NULL};
    h_run(a3, env, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    CHECK_STR(r.err, "");
    h_result_free(&r);
    h_run(a4, env, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    CHECK_STR(r.err, "");
    h_result_free(&r);
    jn *d1 = parse_file(out1), *d2 = parse_file(out2);
    if (d1 && d2) {
        CHECK_U64(d1->n, d2->n);
        for (size_t i = 0; i < d1->n && i < d2->n; i++)
            CHECK_STR(d1->keys[i], d2->keys[i]);
        CHECK(jn_get(d1, "trace") == NULL);
    }
    jn_free(d1);
    jn_free(d2);

    /* --stack-trace: only with an engine that traces launches; then the
     * child has GPUFL_ENABLE_STACK_TRACE=1 (the recorder's option). */
    const char *a6[] = {h_cli, "--stack-trace", "--", h_child, "touch", marker, NULL};
    h_run(a6, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --stack-trace needs --engine trace (or above): stacks are "
                     "taken at kernel launches\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);
    const char *a7[] = {h_cli,
                        "-q",
                        "--engine",
                        "trace",
                        "--stack-trace",
                        "--",
                        h_child,
                        "env",
                        "GPUFL_ENABLE_STACK_TRACE",
                        "1",
                        NULL};
    h_run(a7, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);

    /* --metrics and --pm-interval: only with --engine pmsampling; then the
     * child has them as GPUFL_PM_SAMPLING_METRICS / _INTERVAL_US. */
    const char *a8[] = {h_cli, "--metrics", "sm__a", "--", h_child, "touch", marker, NULL};
    h_run(a8, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --metrics needs --engine pmsampling or --engine "
                     "rangeprofiler: it sets the metrics they collect\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);
    const char *a9[] = {h_cli, "--engine", "pmsampling", "--pm-interval", "0",
                        "--",  h_child,    "touch",      marker,          NULL};
    h_run(a9, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --pm-interval: '0' is not a number of microseconds from 1 to "
                     "1000000\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);
    const char *a10[] = {
        h_cli,           "-q",  "--engine", "PMSAMPLING", "--metrics", "sm__a,dram__b",
        "--pm-interval", "250", "--",       h_child,      "env",       "GPUFL_PM_SAMPLING_METRICS",
        "sm__a,dram__b", NULL};
    h_run(a10, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    const char *a11[] = {h_cli, "-q", "--engine", "pmsampling", "--pm-interval",
                         "250", "--", h_child,    "env",        "GPUFL_PM_SAMPLING_INTERVAL_US",
                         "250", NULL};
    h_run(a11, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    /* With --engine rangeprofiler, --metrics is GPUFL_METRICS, and
     * --range-per-kernel GPUFL_RANGE_PER_KERNEL=1; --pm-interval is not its. */
    const char *a12[] = {h_cli,
                         "-q",
                         "--engine",
                         "rangeprofiler",
                         "--metrics",
                         "sm__a,dram__b",
                         "--range-per-kernel",
                         "--",
                         h_child,
                         "env",
                         "GPUFL_METRICS",
                         "sm__a,dram__b",
                         NULL};
    h_run(a12, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    const char *a13[] = {h_cli, "-q",    "--engine", "rangeprofiler",          "--range-per-kernel",
                         "--",  h_child, "env",      "GPUFL_RANGE_PER_KERNEL", "1",
                         NULL};
    h_run(a13, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    const char *a14[] = {h_cli, "--engine", "rangeprofiler", "--pm-interval", "250",
                         "--",  h_child,    "touch",         marker,          NULL};
    h_run(a14, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --pm-interval needs --engine pmsampling: it sets how often PM "
                     "sampling reads\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);
    const char *a15[] = {h_cli, "--range-per-kernel", "--", h_child, "touch", marker, NULL};
    h_run(a15, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --range-per-kernel needs --engine rangeprofiler: the range "
                     "profiler's ranges\n");
    h_result_free(&r);

    /* The text report of Monitor has no trace line. */
    const char *a5[] = {h_cli, "--engine", "monitor", "--", h_child, "noinject", "0", NULL};
    h_run(a5, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "gpu-profile: trace"));
    CHECK_CONTAINS(r.err, "GPU 0  Fake NVIDIA GPU");
    h_result_free(&r);
}

static void test_edges(void)
{
    char env_plugin[PATH_MAX + 32], env_tmp[600];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmpdir);
    const char *env[] = {env_plugin, env_tmp, NULL};
    h_result r;

    /* CMD not found: 127, nothing reported, the temporary directory gone. */
    const char *a1[] = {h_cli, "--engine", "Trace", "--", "/nonexistent/cmd", NULL};
    h_run(a1, env, NULL, 0, &r);
    CHECK_INT(r.code, 127);
    CHECK(!strstr(r.err, "gpu-profile: trace"));
    CHECK_INT(dir_entries(tmpdir), 0);
    h_result_free(&r);

    /* A crash after writing: the status passes through, what was written
     * is read (inject's exit status is its argument: 139 looks like it). */
    const char *a2[] = {h_cli,    "--backend", "none",         "--engine", "Trace", "--",  h_child,
                        "inject", plugin,      "gp_cli_child", "Trace",    record,  "139", SC,
                        file_c,   NULL};
    h_run(a2, env, NULL, 0, &r);
    CHECK_INT(r.code, 139);
    CHECK_CONTAINS(r.err, "trace  Trace engine  1 CUDA process\n  kernels           none\n"
                          "  top stalls        Long Scoreboard 60.0%, Barrier 30.0%, Execution "
                          "Dependency 10.0%  (100 PC samples)\n"
                          "  sass metrics      3 rows  100 instructions  24.0 threads per warp "
                          "instruction (of 32)\n"
                          "  memcpy            none\n  memset            none\n");
    CHECK_INT(dir_entries(tmpdir), 0);
    remove(record);
    h_result_free(&r);

    /* Garbage of every shape: skipped and counted, never a crash.  The
     * reader counts the lines (empty ones too) that are not an object with
     * a string "type", and the batches it cannot use, whole (a short row, a
     * row that is null); the summary counts the fields and rows of what it
     * was given that it cannot use (a negative, null or too big value).  A
     * last line without '\n' is torn, even when it is a whole record. */
    static const char junk[] =
        "\n\r\n[1,2,3]\n\"str\"\n{}\n{\"type\":7}\n"
        "{\"type\":\"kernel_event_batch\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\","
        "\"columns\":\"no\",\"rows\":[[1]]}\n"
        "{\"type\":\"kernel_event_batch\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\","
        "\"columns\":[\"kernel_id\",\"duration_ns\"],\"rows\":[[1,-5],[1],null,[1.5e3,2.0],"
        "[1,1e300]]}\n"
        "{\"type\":\"kernel_event_batch\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\","
        "\"columns\":[\"kernel_id\",\"duration_ns\"],\"rows\":[[1,-5],[1,null],[1.5e3,2.0],"
        "[1,1e300]]}\n"
        "{\"type\":\"memcpy_event_batch\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\","
        "\"columns\":[\"bytes\",\"duration_ns\",\"copy_kind\"],\"rows\":{}}\n"
        "{\"type\":\"memset_event\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\"}\n"
        "{\"type\":\"dictionary_update\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\","
        "\"kernel_dict\":{\"x\":\"a\",\"-1\":\"b\",\"1\":7,\"1500\":\"k\\u0001\\tname\"}}\n"
        "{\"type\":\"capture_capabilities\",\"session_id\":\"ffffffff-0000-4000-8000-"
        "000000000000\","
        "\"capabilities\":[1,{\"feature\":2},{\"feature\":\"f\",\"status\":\"partial\"}]}\n"
        "\x01\x02\xff\xfe{{{{\n"
        "{\"type\":\"memset_event\",\"session_id\":\"ffffffff-0000-4000-8000-000000000000\","
        "\"bytes\":1,\"duration_ns\":1}";
    char jf[512];
    h_path(jf, sizeof jf, "junk.log");
    h_write_file(jf, junk, sizeof junk - 1);
    const char *a3[] = {h_cli,   "--backend",
                        "none",  "--engine",
                        "Trace", "--",
                        h_child, "inject",
                        plugin,  "gp_cli_child",
                        "Trace", record,
                        "0",     "ffffffff-0000-4000-8000-000000000000",
                        jf,      NULL};
    h_run(a3, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char *block = trace_block(r.err);
    check_golden("cli_trace/junk.txt", block, "test_cli_trace");
    free(block);
    remove(record);
    h_result_free(&r);

    /* GPUFL_DISABLED: nothing injected, one line, the run as usual. */
    const char *env3[] = {env_plugin, env_tmp, "GPUFL_DISABLED=1", NULL};
    const char *a4[] = {h_cli, "--backend", "none",     "--engine", "Trace",
                        "--",  h_child,     "noinject", "2",        NULL};
    h_run(a4, env3, NULL, 0, &r);
    CHECK_INT(r.code, 2);
    CHECK_PREFIX(r.err, "gpu-profile: GPUFL_DISABLED is set: nothing is traced\n");
    CHECK_CONTAINS(r.err, "gpu-profile: trace: not traced: GPUFL_DISABLED is set\n");
    h_result_free(&r);
}

/* A session's other channels are read too (scope.log here): the records
 * the writer puts on every channel (job_start, dictionary_update,
 * capture_capabilities, shutdown) count once, a bad line in any channel
 * counts, and nothing is counted twice.  A new directory that is no
 * session directory (flat-layout files in it) is not read as one. */
#define SG "99999999-9999-4999-8999-999999999999"
#define G_COMMON                                                                                   \
    JOB(SG) HEAD("dictionary_update", SG) ",\"kernel_dict\":{\"1\":\"k_one\",\"x\":\"a\"}}\n"
#define G_CAPS                                                                                     \
    HEAD("capture_capabilities", SG)                                                               \
    ",\"requested_engine\":\"nvidia.trace\",\"selected_engine\":\"nvidia.trace\","                 \
    "\"capabilities\":[{\"feature\":\"kernel_events\",\"status\":\"partial\",\"message\":\"m\"}]}" \
    "\n"
#define G_END "{\"type\":\"shutdown\",\"session_id\":\"" SG "\",\"ts_ns\":1760000000005000000}\n"

static void test_channels(void)
{
    static const char device[] =
        G_COMMON HEAD("kernel_event_batch", SG) ",\"batch_id\":1,\"base_time_ns\":1,"
                                                "\"columns\":[\"kernel_id\",\"duration_ns\"],"
                                                "\"rows\":[[1,100000],[1,200000]]}\n" G_CAPS G_END;
    static const char scope[] = G_COMMON "not JSON in the scope channel\n" G_CAPS G_END;
    char env_plugin[PATH_MAX + 32], env_tmp[600], fd[512], fs[512];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmpdir);
    const char *env[] = {env_plugin, env_tmp, NULL};
    h_path(fd, sizeof fd, "channels_device.log");
    h_write_file(fd, device, sizeof device - 1);
    h_path(fs, sizeof fs, "channels_scope.log");
    h_write_file(fs, scope, sizeof scope - 1);
    const char *argv[] = {
        h_cli,   "--backend", "none", "--engine",      "Trace", "--",
        h_child, "inject",    plugin, "gp_cli_child",  "Trace", record,
        "0",     SG,          fd,     SG "/scope.log", fs,      "flat-logs/app.device.log",
        file_a,  NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char *block = trace_block(r.err);
    CHECK_STR(block,
              "trace  Trace engine  1 CUDA process\n"
              "  kernels           2 launches  0.300 ms GPU time  1 distinct\n"
              "  top kernels         total ms    calls     mean us    time  name\n"
              "                         0.300        2     150.000  100.0%  k_one\n"
              "  memcpy            none\n"
              "  memset            none\n"
              "gpu-profile: trace: kernel_events partial in 1 of 1 process: m\n"
              "gpu-profile: trace: 1 unreadable line skipped (not JSON; a process that crashes "
              "leaves its last line cut)\n"
              "gpu-profile: trace: 1 malformed record skipped\n");
    free(block);
    remove(record);
    h_result_free(&r);
}

int main(void)
{
    h_init();
    setup();
    test_text_summary();
    test_json_and_quiet();
    test_log_dir_kept();
    test_plugin_lookup();
    test_engine_option();
    test_edges();
    test_channels();
    h_cleanup();
    return check_done("test_cli_trace");
}
