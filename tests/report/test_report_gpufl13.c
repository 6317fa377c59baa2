/*
 * test_report_gpufl13.c - the session report (src/report/) of what
 * GPUFlight 1.3 writes: the two sessions its own writer wrote
 * (tests/fixtures/gpufl-1.3) against goldens of their text and JSON, every
 * record type shown where it belongs with its exact figures in both, the
 * layouts of tests/gpufl13_layouts.h (the same figures; a live session, a
 * bad sidecar said so), and, fed through the callbacks, the variants the
 * fixtures do not hold: PC Sampling API stall names, our memset_event and
 * graph_event_batch, a graph without launches, -1 metrics, unknown types.
 *
 * After a deliberate change of the output: GP_UPDATE_GOLDEN=1 ctest -R
 * test_report_gpufl13, then read the diff.
 */
#include "report_json.h"
#include "check.h"
#include "fl_log.h"
#include "json_pretty.h"
#include "gpufl13_layouts.h"
#include "reader/read.h"
#include "report/report.h"
#include "util/buf.h"

#include <math.h>

/* ------------------------------------------------------------ helpers */

typedef struct rendered {
    char *text, *json;
    json_t *j;
    fl_read_result res;
} rendered;

static void rendered_free(rendered *r)
{
    free(r->text);
    free(r->json);
    json_decref(r->j);
    memset(r, 0, sizeof *r);
}

static void render(fl_report *rep, const fl_read_result *res, rendered *out)
{
    fl_report_finish(rep, res);
    fl_buf t = {0}, j = {0};
    fl_report_text(rep, 10, &t);
    fl_report_json(rep, 10, &j);
    out->text = fl_buf_take(&t);
    out->json = fl_buf_take(&j);
    json_error_t e;
    out->j = out->json ? json_loads(out->json, JSON_REJECT_DUPLICATES, &e) : NULL;
    CHECK(out->j != NULL);
}

static int read_report(const char *path, rendered *out)
{
    memset(out, 0, sizeof *out);
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    gp_error err;
    int rc = fl_read_session(path, NULL, &cb, &out->res, &err);
    if (rc != GP_OK)
        fprintf(stderr, "fl_read_session(%s): %s\n", path, err.message);
    CHECK_INT(rc, GP_OK);
    render(rep, &out->res, out);
    fl_report_destroy(rep);
    return rc;
}

static char *replace_all(const char *s, const char *from, const char *to)
{
    fl_buf b = {0};
    size_t n = strlen(from);
    for (const char *p; n && (p = strstr(s, from)); s = p + n) {
        fl_buf_put(&b, s, (size_t)(p - s));
        fl_buf_puts(&b, to);
    }
    fl_buf_puts(&b, s);
    return fl_buf_take(&b);
}

static char tmp_root[256];

/* ------------------------------------------------------------ fixtures */

/* Every record type of the fixture sessions, in the text and the JSON. */
static void check_records(const rendered *r)
{
    json_t *j = r->j;
    const char *t = r->text;
    /* memset_event: GPUFlight's start_ns / end_ns. */
    CHECK_INT(jint(j, "summary.memset_count"), 1);
    CHECK_INT(jint(j, "summary.memset_bytes"), 4096);
    CHECK_INT(jint(j, "summary.memset_time_ns"), 1500);
    CHECK_INT(jint(j, "memset.time_ns"), 1500);
    CHECK_CONTAINS(t, "  memset            1 memset  4.00 KiB  1.500 us\n");
    CHECK_CONTAINS(t, "  memset          1     4.00 KiB       0.002      2.73\n");
    /* nvtx_marker_event: an NVTX scope. */
    CHECK_STR(jstr(j, "scopes.items[2].name"), "nvtx_range");
    CHECK_STR(jstr(j, "scopes.items[2].kind"), "nvtx");
    CHECK_INT(jint(j, "scopes.items[2].count"), 1);
    CHECK_INT(jint(j, "scopes.items[2].total_ns"), 848500);
    CHECK(jnull(j, "scopes.items[2].gpu_time_inside_ns"));
    CHECK_CONTAINS(t, "  NVTX        1       0.849      0.849      0.849      0.849            -  "
                      "nvtx_range\n");
    /* execution_signature: in the scopes. */
    CHECK_STR(jstr(j, "scopes.execution_signatures[0].scope"), "train|step");
    CHECK_STR(jstr(j, "scopes.execution_signatures[0].signature"), "18364758544493064720");
    CHECK_INT(jint(j, "scopes.execution_signatures[0].launch_count"), 6);
    CHECK_INT(jint(j, "scopes.execution_signatures[0].distinct_kernels"), 2);
    CHECK_INT(jint(j, "scopes.execution_signatures[0].records"), 1);
    CHECK_CONTAINS(t, "  execution signatures (the kernels a scope launched)\n"
                      "    train|step  18364758544493064720  6 launches, 2 distinct kernels\n");
    /* graph_launch_event and graph_node_definition. */
    CHECK_INT(jint(j, "summary.graph_launches"), 1);
    CHECK_INT(jint(j, "summary.graph_time_ns"), 60000);
    CHECK_INT(jint(j, "graphs.launches"), 1);
    CHECK_STR(jstr(j, "graphs.items[0].graph_exec_key"), "0xdeadbeef");
    CHECK_INT(jint(j, "graphs.items[0].graph_id"), 3);
    CHECK_INT(jint(j, "graphs.items[0].launches"), 1);
    CHECK_INT(jint(j, "graphs.items[0].time_ns"), 60000);
    CHECK_INT(jint(j, "graphs.items[0].node_definitions"), 1);
    CHECK_CONTAINS(t, "\ngraphs  1 launch  60.000 us  1 graph\n"
                      "  launches     time ms   nodes  graph\n"
                      "         1       0.060       1  exec 0xdeadbeef (graph 3)\n");
    /* profile_sample_batch: activity-API stall reasons by CUPTI's name. */
    CHECK_INT(jint(j, "stalls.reasons[0].stall_reason"), 9);
    CHECK_STR(jstr(j, "stalls.reasons[0].name"), "memory throttle");
    CHECK(jnull(j, "stalls.reasons[0].metric_id"));
    CHECK_INT(jint(j, "stalls.reasons[0].samples"), 30);
    CHECK_STR(jstr(j, "stalls.reasons[1].name"), "memory dependency");
    CHECK_CONTAINS(t, "          30   71.4%  Memory Throttle                too many memory "
                      "requests pending\n"
                      "          12   28.6%  Memory Dependency              waiting on a memory "
                      "load or store to complete\n");
    /* joined by corr_id (101: gemm), per scope, per PC and line */
    CHECK_CONTAINS(t, "  by kernel (corr_id joined to the kernel rows; 0 samples matched no "
                      "kernel)\n"
                      "          42  100.0%  gemm(float const*, float const*, float*)\n"
                      "                      Memory Throttle 71.4%, Memory Dependency 28.6%\n");
    CHECK_CONTAINS(t, "            30   71.4%  0x80  _Z4gemmPKfS0_Pf@gemm.cu  gemm.cu:18: Memory "
                      "Throttle 100.0%\n");
    CHECK_INT(jint(j, "stalls.kernels[0].kernel_id"), 2);
    CHECK_INT(jint(j, "stalls.kernels[0].hot_lines[1].source_line"), 17);
    CHECK_STR(jstr(j, "stalls.scopes[0].name"), "step");
    /* SASS metric rows and sass_config. */
    CHECK_INT(jint(j, "sass_metrics.rows"), 2);
    CHECK_INT(jint(j, "sass_metrics.configs[0].device_id"), 0);
    CHECK_STR(jstr(j, "sass_metrics.configs[0].configured_metrics[0]"), "smsp__sass_inst_executed");
    CHECK_INT(json_array_size(jpath(j, "sass_metrics.configs[0].skipped_metrics")), 0);
    CHECK_STR(jstr(j, "sass_metrics.metrics[1].name"), "smsp__sass_thread_inst_executed");
    CHECK_NEAR(jnum(j, "sass_metrics.metrics[1].total"), 150000, 1e-9);
    CHECK_CONTAINS(t, "  configured        device 0: smsp__sass_inst_executed; skipped: none\n");
    CHECK_CONTAINS(t, "         1           150000  smsp__sass_thread_inst_executed\n");
    /* The sass channel: counted, the disassembly not shown. */
    CHECK_INT(jint(j, "sass.cubin_disassemblies"), 1);
    CHECK_INT(jint(j, "sass.ptx_disassemblies"), 0);
    CHECK_INT(jint(j, "sass.source_files"), 0);
    CHECK_STR(jstr(j, "sass.functions[0]"), "_Z4gemmPKfS0_Pf@gemm.cu");
    CHECK_CONTAINS(t, "\nsass  1 cubin disassembly, 0 PTX disassemblies, 0 source files (the "
                      "text itself is not shown)\n  functions         _Z4gemmPKfS0_Pf@gemm.cu\n");
    CHECK(!strstr(t, "IMAD"));
    CHECK(!strstr(r->json, "IMAD"));
    /* pm_sampling_config and pm_sample_batch. */
    CHECK_INT(jint(j, "pm_sampling[0].device_id"), 0);
    CHECK_INT(jint(j, "pm_sampling[0].interval_us"), 100);
    CHECK_INT(jint(j, "pm_sampling[0].max_samples"), 1000);
    CHECK_STR(jstr(j, "pm_sampling[0].preset"), "default");
    CHECK_STR(jstr(j, "pm_sampling[0].metrics[0]"),
              "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    CHECK_NEAR(jnum(j, "perf_metrics[0].mean"), 58.375, 1e-9);
    CHECK_CONTAINS(t, "  PM sampling       device 0: every 100 us, up to 1000 samples, preset "
                      "default: sm__throughput.avg.pct_of_peak_sustained_elapsed\n");
    /* kernel_perf_metric_event: -1 is not collected (null, n/a). */
    CHECK_STR(jstr(j, "kernel_perf_metrics[0].kernel_name"),
              "gemm(float const*, float const*, float*)");
    CHECK_INT(jint(j, "kernel_perf_metrics[0].ranges"), 1);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].sm_throughput_pct"), 88, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].l1_hit_rate_pct"), 35, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].l2_hit_rate_pct"), 70, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].dram_read_bytes"), 1048576, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].dram_write_bytes"), 524288, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].tensor_active_pct"), 0, 1e-9);
    CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].achieved_occupancy_pct"), 60, 1e-9);
    CHECK(jnull(j, "kernel_perf_metrics[0].shared_bank_conflicts"));
    CHECK(jnull(j, "kernel_perf_metrics[0].shared_bank_conflict_nway"));
    CHECK_CONTAINS(t, "       1   88.0     35.0     70.0    1.00 MiB  512.00 KiB      0.0     "
                      "60.0        n/a  gemm(float const*, float const*, float*)\n");
    /* perf_metric_event: per scope. */
    CHECK_STR(jstr(j, "scope_perf_metrics[0].name"), "step");
    CHECK_STR(jstr(j, "scope_perf_metrics[0].user_scope"), "train|step");
    CHECK_INT(jint(j, "scope_perf_metrics[0].time_ns"), 898000);
    CHECK_NEAR(jnum(j, "scope_perf_metrics[0].sm_throughput_pct"), 71.5, 1e-9);
    CHECK_NEAR(jnum(j, "scope_perf_metrics[0].dram_read_bytes"), 16777216, 1e-9);
    CHECK_NEAR(jnum(j, "scope_perf_metrics[0].tensor_active_pct"), 12, 1e-9);
    CHECK_CONTAINS(t, "       1      0.898   71.5     40.0     80.0   16.00 MiB    4.00 MiB     "
                      "12.0  step (train|step)\n");
    /* deep_window_event: with what was captured. */
    CHECK_STR(jstr(j, "deep_windows[0].name"), "deep1");
    CHECK_INT(jint(j, "deep_windows[0].windows"), 1);
    CHECK_INT(jint(j, "deep_windows[0].time_ns"), 200000);
    CHECK_INT(jint(j, "deep_windows[0].launches_covered"), 2);
    CHECK_STR(jstr(j, "deep_windows[0].engines"), "pc_sampling");
    CHECK_STR(jstr(j, "deep_windows[0].close_reason"), "duration");
    CHECK_CONTAINS(t, "  deep window       deep1  1 window  200.000 us  2 launches covered  "
                      "engines pc_sampling  closed by duration\n");
    /* Nothing left unread. */
    CHECK_INT(jint(j, "read.unknown_types"), 0);
    CHECK_INT(jint(j, "read.bad_rows"), 0);
    CHECK(json_is_false(jpath(j, "read.partial")));
}

static void test_fixtures(void)
{
    for (int gz = 0; gz < 2; gz++) {
        char path[4096], name[64];
        gl_fixture(gz, path, sizeof path);
        rendered r;
        if (read_report(path, &r) != GP_OK || !r.j) {
            rendered_free(&r);
            continue;
        }
        snprintf(name, sizeof name, "report/gpufl13_%s.txt", gz ? "gz" : "plain");
        check_golden(name, r.text, "test_report_gpufl13");
        char *json = replace_all(r.json, check_env("GP_TEST_SOURCE_DIR"), "SRC");
        char *p = pretty(json);
        snprintf(name, sizeof name, "report/gpufl13_%s.json", gz ? "gz" : "plain");
        check_golden(name, p ? p : "", "test_report_gpufl13");
        free(p);
        free(json);
        CHECK_STR(jstr(r.j, "session.session_id"), gz ? GL_GZ_ID : GL_PLAIN_ID);
        CHECK_INT(jint(r.j, "summary.kernel_launches"), 6);
        check_records(&r);
        rendered_free(&r);
    }
}

/* Each layout: the same figures; what is particular to it said. */
static void test_layouts(void)
{
    for (int l = 0; l < GL_COUNT; l++) {
        char dir[512], path[4096];
        snprintf(dir, sizeof dir, "%s/%s", tmp_root, gl_names[l]);
        gl_build(l, dir, path, sizeof path);
        rendered r;
        if (read_report(path, &r) != GP_OK || !r.j) {
            rendered_free(&r);
            continue;
        }
        json_t *j = r.j;
        CHECK_INT(jint(j, "summary.kernel_launches"), 6);
        CHECK_INT(jint(j, "summary.memset_time_ns"), 1500);
        CHECK_INT(jint(j, "read.files"), 4);
        CHECK_STR(jstr(j, "read.session_dir"), path);
        bool live = l == GL_TMP_LIVE, bad = l == GL_BAD_SIZE || l == GL_BAD_CRC;
        CHECK_INT(json_is_true(jpath(j, "session.crashed")), live);
        CHECK_INT(json_is_true(jpath(j, "session.unpublished")), live);
        CHECK_INT(jint(j, "read.unpublished_files"), live ? 4 : 0);
        CHECK_INT(jint(j, "read.bad_windows"), bad);
        CHECK_INT(json_is_true(jpath(j, "read.partial")), bad);
        if (live) {
            CHECK_CONTAINS(r.text,
                           "  the session is live or crashed (its files are still in .tmp/, "
                           "no shutdown): the report covers what reached the disk\n");
            CHECK_STR(jstr(j, "session.end_source"), "last_record");
        } else {
            CHECK(!strstr(r.text, "live or crashed"));
        }
        if (bad) {
            CHECK_CONTAINS(r.text, "\npartial read: 1 window not matching its sidecar, 1 reader "
                                   "warning\n");
            CHECK_CONTAINS(jstr(j, "read.first_warnings[0]"),
                           l == GL_BAD_SIZE ? ".gpufl-window.scope.1.json:1: window sidecar does "
                                              "not match scope.1.log: payload_bytes 6156"
                                            : ".gpufl-window.device.1.json:1: window sidecar "
                                              "does not match device.1.log.gz: payload_crc32");
        }
        rendered_free(&r);
    }
}

/* ------------------------------------------------------------ fed directly */

static json_t *rec(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fprintf(stderr, "test record does not parse: %s: %s\n", e.text, text);
    CHECK(j != NULL);
    return j;
}

static void feed(fl_read_cb *cb, int channel, const char *text)
{
    json_t *j = rec(text);
    const char *type = json_string_value(json_object_get(j, "type"));
    cb->record(cb->user, channel, fl_type_of(type, strlen(type)), type, j);
    json_decref(j);
}

typedef struct fake_batch {
    fl_batch b;
    fl_cell cells[64];
} fake_batch;

static void feed_batch(fl_read_cb *cb, const char *type, const char *const *cols, size_t ncols,
                       const int64_t *vals, size_t nrows)
{
    fake_batch fb;
    memset(&fb, 0, sizeof fb);
    fb.b.type = type;
    fb.b.cols = cols;
    fb.b.ncols = ncols;
    fb.b.nrows = nrows;
    fb.b.cells = fb.cells;
    fb.b.base_time_ns = 1000000;
    for (size_t i = 0; i < ncols * nrows && i < 64; i++)
        fb.cells[i] = (fl_cell){.kind = FL_CELL_INT, .i = vals[i]};
    fl_batch_map_columns(&fb.b);
    cb->batch(cb->user, &fb.b);
}

/* Stall names of the PC Sampling API (metric_dict), SASS metrics without
 * a dictionary entry, our memset_event and graph_event_batch, string ids,
 * a graph without launches, ranges that collected nothing, unknown types. */
static void test_direct(void)
{
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    feed(&cb, FL_CH_SCOPE,
         "{\"type\":\"dictionary_update\",\"metric_dict\":{\"7\":"
         "\"smsp__pcsamp_warps_issue_stalled_long_scoreboard\",\"8\":"
         "\"smsp__pcsamp_warps_issue_stalled_barrier\"}}");
    static const char *const pcols[] = {"dt_ns",         "corr_id",        "device_id",
                                        "function_id",   "pc_offset",      "metric_id",
                                        "metric_value",  "stall_reason",   "sample_kind",
                                        "scope_name_id", "source_file_id", "source_line"};
    /* The device's indices 4 and 11, named by metric_dict; a second row of
     * index 4 with another name is another reason; an activity-API 13
     * (beyond CUPTI's list): its number. */
    static const int64_t prow[] = {0, 1, 0, 0, 0, 7, 20, 4,  0, 0, 0, 0, /* */
                                   0, 1, 0, 0, 0, 8, 5,  11, 0, 0, 0, 0, /* */
                                   0, 1, 0, 0, 0, 8, 3,  4,  0, 0, 0, 0, /* */
                                   0, 1, 0, 0, 0, 0, 2,  13, 0, 0, 0, 0, /* */
                                   0, 1, 0, 0, 0, 9, 40, 0,  1, 0, 0, 0};
    feed_batch(&cb, "profile_sample_batch", pcols, 12, prow, 5);
    /* Our memset (ts_ns, duration_ns); GPUFlight's with string ids. */
    feed(&cb, FL_CH_DEVICE,
         "{\"version\":1,\"type\":\"memset_event\",\"ts_ns\":2000000,\"duration_ns\":4000,"
         "\"device_id\":1,\"stream_id\":3,\"bytes\":100}");
    feed(&cb, FL_CH_DEVICE,
         "{\"type\":\"memset_event\",\"device_id\":\"1\",\"stream_id\":\"3\",\"start_ns\":3000000,"
         "\"end_ns\":3000500,\"bytes\":28}");
    /* Our graph_event_batch: two launches of graph 9, no exec key. */
    static const char *const gcols[] = {"dt_ns",       "graph_id", "stream_id",
                                        "duration_ns", "corr_id",  "device_id"};
    static const int64_t grow[] = {0, 9, 3, 7000, 1, 0, 100, 9, 3, 3000, 2, 0};
    feed_batch(&cb, "graph_event_batch", gcols, 6, grow, 2);
    /* GPUFlight's: a launch without timing; nodes of a graph never launched. */
    feed(
        &cb, FL_CH_SCOPE,
        "{\"type\":\"graph_launch_event\",\"start_ns\":0,\"end_ns\":0,\"duration_ns\":0,"
        "\"graph_id\":5,\"device_id\":0,\"stream_id\":3,\"corr_id\":4,\"graph_exec_key\":\"0xa\"}");
    for (int i = 0; i < 3; i++)
        feed(&cb, FL_CH_SCOPE,
             "{\"type\":\"graph_node_definition\",\"graph_exec_key\":\"0xb\",\"node_index\":0,"
             "\"node_type\":1,\"dependency_count\":0}");
    /* Two ranges of a kernel: one collected bank conflicts, none occupancy. */
    feed(&cb, FL_CH_DEVICE,
         "{\"type\":\"kernel_perf_metric_event\",\"kernel_name\":\"k\",\"sm_throughput_pct\":10,"
         "\"achieved_occupancy_pct\":-1,\"shared_bank_conflicts\":-1}");
    feed(&cb, FL_CH_DEVICE,
         "{\"type\":\"kernel_perf_metric_event\",\"kernel_name\":\"k\",\"sm_throughput_pct\":30,"
         "\"achieved_occupancy_pct\":-1,\"shared_bank_conflicts\":6}");
    feed(&cb, FL_CH_SCOPE, "{\"type\":\"mystery\"}");
    feed(&cb, FL_CH_SCOPE, "{\"type\":\"mystery\"}");
    static const char *const ucols[] = {"dt_ns"};
    static const int64_t urow[] = {0};
    feed_batch(&cb, "enigma_batch", ucols, 1, urow, 1);

    rendered r;
    render(rep, NULL, &r);
    json_t *j = r.j;
    if (j) {
        CHECK_STR(jstr(j, "stalls.reasons[0].name"),
                  "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
        CHECK_INT(jint(j, "stalls.reasons[0].stall_reason"), 4);
        CHECK_INT(jint(j, "stalls.reasons[0].metric_id"), 7);
        CHECK_INT(jint(j, "stalls.reasons[0].samples"), 20);
        CHECK_STR(jstr(j, "stalls.reasons[1].name"), "smsp__pcsamp_warps_issue_stalled_barrier");
        CHECK_INT(jint(j, "stalls.reasons[1].samples"), 8);
        CHECK(jnull(j, "stalls.reasons[2].name"));
        CHECK_INT(jint(j, "stalls.reasons[2].stall_reason"), 13);
        CHECK_INT(jint(j, "stalls.pc_samples"), 30);
        CHECK_INT(jint(j, "sass_metrics.metrics[0].metric_id"), 9);
        CHECK(jnull(j, "sass_metrics.metrics[0].name"));
        CHECK(jnull(j, "sass"));
        CHECK_INT(jint(j, "summary.memset_count"), 2);
        CHECK_INT(jint(j, "summary.memset_bytes"), 128);
        CHECK_INT(jint(j, "summary.memset_time_ns"), 4500);
        CHECK_INT(jint(j, "summary.graph_launches"), 3);
        CHECK_INT(jint(j, "summary.graph_time_ns"), 10000);
        CHECK(jnull(j, "graphs.items[0].graph_exec_key"));
        CHECK_INT(jint(j, "graphs.items[0].graph_id"), 9);
        CHECK_INT(jint(j, "graphs.items[0].launches"), 2);
        CHECK(jnull(j, "graphs.items[0].node_definitions"));
        CHECK_STR(jstr(j, "graphs.items[1].graph_exec_key"), "0xa");
        CHECK_INT(jint(j, "graphs.items[1].time_ns"), 0);
        CHECK_STR(jstr(j, "graphs.items[2].graph_exec_key"), "0xb");
        CHECK_INT(jint(j, "graphs.items[2].launches"), 0);
        CHECK(jnull(j, "graphs.items[2].graph_id"));
        CHECK_INT(jint(j, "graphs.items[2].node_definitions"), 3);
        CHECK_INT(jint(j, "kernel_perf_metrics[0].ranges"), 2);
        CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].sm_throughput_pct"), 20, 1e-9);
        CHECK(jnull(j, "kernel_perf_metrics[0].achieved_occupancy_pct"));
        CHECK_NEAR(jnum(j, "kernel_perf_metrics[0].shared_bank_conflicts"), 6, 1e-9);
        CHECK(jnull(j, "kernel_perf_metrics[0].l1_hit_rate_pct"));
        CHECK(jnull(j, "scope_perf_metrics"));
        CHECK_STR(jstr(j, "read.unknown_record_types[0].type"), "mystery");
        CHECK_INT(jint(j, "read.unknown_record_types[0].records"), 2);
        CHECK_STR(jstr(j, "read.unknown_record_types[1].type"), "enigma_batch");
        CHECK_INT(jint(j, "read.unknown_record_types[1].records"), 1);
        CHECK(json_is_true(jpath(j, "read.partial")));
    }
    /* one reason per name, NVIDIA's name and meaning; an unknown as given */
    CHECK_CONTAINS(r.text,
                   "          20   66.7%  Long Scoreboard                waiting on an L1TEX "
                   "(local, global, surface, texture) memory result\n"
                   "           8   26.7%  Barrier                        waiting at a CTA "
                   "barrier (__syncthreads) for sibling warps\n"
                   "           2    6.7%  stall reason 13                (not in the table "
                   "of reasons: as given)\n");
    CHECK_CONTAINS(r.text, "  by kernel: n/a (the session does not say it samples PCs");
    CHECK_CONTAINS(r.text, "         1               40  (metric id 9)\n");
    CHECK_CONTAINS(r.text, "\ngraphs  3 launches  10.000 us  3 graphs\n");
    CHECK_CONTAINS(r.text, "         2       0.010     n/a  graph 9\n");
    CHECK_CONTAINS(r.text, "         1       0.000       0  exec 0xa (graph 5)\n");
    CHECK_CONTAINS(r.text, "         0       0.000       3  exec 0xb\n");
    CHECK_CONTAINS(r.text,
                   "       2   20.0      n/a      n/a         n/a         n/a      n/a      "
                   "n/a          6  k\n");
    CHECK_CONTAINS(r.text, "  unknown record types: mystery (2), enigma_batch (1)\n");
    rendered_free(&r);
    fl_report_destroy(rep);
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gp_test_report13.XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_fixtures();
    test_layouts();
    test_direct();
    fl_rmtree(tmp_root);
    return check_done("test_report_gpufl13");
}
