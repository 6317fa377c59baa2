/*
 * test_cli_runs.c - `gpu-profile report` / `export` on the runs of log
 * directories (issue 35, section 2): a two-process run under `--engine
 * trace` read back as one run with the command's own Monitor session (the
 * run id given to both children through the environment, each rank's
 * figures exact in the JSON); a directory of two runs and a session of no
 * run (the most recent shown, the others listed; --run / --session pick;
 * a bad ID is 125 listing what exists; the text's run section against a
 * golden); two hosts' directories merged by run id with the clocks'
 * alignment stated; export picking the run's session.
 */
#include "harness.h"

#include "fl_log.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <sys/time.h>

#define RUN_A "run-a"

/* Added to every time session() writes: a process that started later. */
static long long g_shift_ns;
#define RUN_B "run-b"

/* A session's directory base/sid (base made if need be, sid new) with
 * text as its device.log, the recorder's one channel these tests need;
 * the directory into dir when asked. */
static void write_session_log(const char *base, const char *sid, const char *text, char *dir,
                              size_t cap)
{
    char d[1024], path[1100];
    snprintf(d, sizeof d, "%s/%s", base, sid);
    mkdir(base, 0755);
    CHECK_INT(mkdir(d, 0755), 0);
    snprintf(path, sizeof path, "%s/device.log", d);
    h_write_file(path, text, strlen(text));
    if (dir)
        snprintf(dir, cap, "%s", d);
}

/* A traced session as the recorder writes one: job_start (run_id NULL:
 * the key left out; rank < 0: null), two kernels of k0 and k1 ns (the
 * second an NCCL kernel), a shutdown; its directory's mtime set to mtime
 * (what "the most recent" is decided on, without waiting). */
static void session(const char *base, const char *sid, const char *run_id, int rank, int world,
                    const char *host, int pid, long long wall_minus_mono, long k0, long k1,
                    time_t mtime)
{
    char dir[1024], path[1100], run[128] = "", rk[16] = "null", ws[16] = "null";
    if (rank >= 0)
        snprintf(rk, sizeof rk, "%d", rank);
    if (world > 0)
        snprintf(ws, sizeof ws, "%d", world);
    if (run_id)
        snprintf(run, sizeof run,
                 ",\"run_id\":\"%s\",\"rank\":%s,\"local_rank\":null,\"world_size\":%s,"
                 "\"rank_source\":%s,\"monotonic_ns\":%lld",
                 run_id, rk, ws, rank >= 0 ? "\"RANK\"" : "null",
                 1760000000000000000LL - wall_minus_mono);
    char text[4096];
    snprintf(text, sizeof text,
             "{\"version\":1,\"type\":\"job_start\",\"pid\":%d,\"app\":\"train\",\"session_id\":"
             "\"%s\",\"log_path\":\"x\",\"ts_ns\":%lld,\"hostname\":\"%s\","
             "\"devices\":[],\"session_kind\":\"trace\",\"profiling_engine\":\"nvidia.trace\"%s}\n"
             "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
             "\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"ncclKernel_AllReduce\"}}\n"
             "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"%s\",\"batch_id\":1,"
             "\"base_time_ns\":%lld,\"columns\":[\"dt_ns\",\"kernel_id\","
             "\"duration_ns\"],\"rows\":[[0,1,%ld],[10,2,%ld]]}\n"
             "{\"type\":\"shutdown\",\"pid\":%d,\"app\":\"train\",\"session_id\":\"%s\","
             "\"ts_ns\":%lld}\n",
             pid, sid, 1760000000000000000LL + g_shift_ns, host, run, sid, sid,
             1760000000001000000LL + g_shift_ns, k0, k1, pid, sid,
             1760000000009000000LL + g_shift_ns);
    write_session_log(base, sid, text, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/device.log", dir);
    struct timeval tv[2] = {{mtime, 0}, {mtime, 0}};
    CHECK_INT(utimes(path, tv), 0);
    CHECK_INT(utimes(dir, tv), 0);
}

static json_t *run_json(const char *const *argv, int want_code)
{
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, want_code);
    if (r.code != want_code)
        fprintf(stderr, "stderr: %s\n", r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    CHECK(j != NULL);
    h_result_free(&r);
    return j;
}

static json_t *proc(json_t *run, size_t k)
{
    return json_array_get(json_object_get(run, "processes"), k);
}

static long long num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    CHECK(json_is_integer(v));
    return json_is_integer(v) ? (long long)json_integer_value(v) : -999;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(not a string)";
}

static bool null_at(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_null(v);
}

/* ------------------------------------------------- two processes, one run */

static void test_two_process_run(void)
{
    h_scenario("device 0\n");
    char plugin_file[512], plugin[PATH_MAX], base[512], cmd[2048];
    h_path(plugin_file, sizeof plugin_file, "fake-cupti.so");
    h_write_file(plugin_file, "not really a plugin\n", 20);
    CHECK(realpath(plugin_file, plugin) != NULL);
    h_path(base, sizeof base, "run2");
    /* Two workers as torchrun starts them: RANK / WORLD_SIZE each, and
     * nothing else from us - the run id is inherited. */
    snprintf(cmd, sizeof cmd,
             "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 \"$0\" rank r0 1000 2000 500 700 & "
             "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 \"$0\" rank r1 3000 4000 500 300; wait $!; wait");
    char env_plugin[PATH_MAX + 32];
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    const char *env[] = {env_plugin, NULL};
    const char *argv[] = {h_cli, "-q",      "--engine", "trace", "--log-dir", base,
                          "--",  "/bin/sh", "-c",       cmd,     h_child,     NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    if (r.code != 0)
        fprintf(stderr, "stderr: %s\n", r.err);
    h_result_free(&r);

    const char *rep[] = {h_cli, "report", "--format", "json", base, NULL};
    json_t *j = run_json(rep, 0);
    json_t *run = json_object_get(j, "run");
    CHECK(json_is_object(run));
    const char *id = str(run, "run_id");
    CHECK_INT(strlen(id), 36); /* the CLI's fresh UUID, shared by all three */
    CHECK_STR(str(run, "picked_by"), "most_recent");
    CHECK_INT(json_array_size(json_object_get(run, "processes")), 3);
    /* rank 0: gemm 1000 + 2000, NCCL 500, one copy, one sync of 700 ns. */
    json_t *p0 = proc(run, 0), *p1 = proc(run, 1), *mon = proc(run, 2);
    CHECK_INT(num(p0, "rank"), 0);
    CHECK_INT(num(p0, "local_rank"), 0);
    CHECK_INT(num(p0, "world_size"), 2);
    CHECK_STR(str(p0, "session_id"), "r0");
    CHECK(num(p0, "pid") > 0);
    CHECK_INT(num(p0, "gpu_time_ns"), 3500);
    CHECK_INT(num(p0, "kernel_launches"), 3);
    CHECK_INT(num(p0, "memcpy_count"), 1);
    CHECK_INT(num(p0, "memcpy_bytes"), 4096);
    CHECK_INT(num(p0, "synchronizations"), 1);
    CHECK_INT(num(p0, "synchronization_time_ns"), 700);
    CHECK_STR(str(p0, "busiest_kernel"), "gemm");
    CHECK_INT(num(p0, "busiest_kernel_ns"), 3000);
    CHECK_INT(num(p0, "nccl_time_ns"), 500);
    CHECK(fabs(json_number_value(json_object_get(p0, "nccl_pct")) - 500.0 * 100 / 3500) < 1e-3);
    CHECK_INT(num(p1, "rank"), 1);
    CHECK_INT(num(p1, "gpu_time_ns"), 7500);
    CHECK_INT(num(p1, "synchronization_time_ns"), 300);
    CHECK_INT(num(p1, "busiest_kernel_ns"), 7000);
    /* gpu-profile's own session: the same run, no rank, figures unknown. */
    CHECK_STR(str(mon, "session_kind"), "monitor");
    CHECK(null_at(mon, "rank") && null_at(mon, "world_size"));
    CHECK(null_at(mon, "gpu_time_ns") && null_at(mon, "kernel_launches"));
    CHECK(num(mon, "pid") > 0);
    /* The median of 3500 and 7500; both off it by 36 %: stragglers. */
    CHECK_INT(num(run, "median_gpu_time_ns"), 5500);
    json_t *st = json_object_get(run, "stragglers");
    CHECK_INT(json_array_size(st), 2);
    CHECK_INT(num(json_array_get(st, 1), "rank"), 1);
    CHECK(fabs(json_number_value(json_object_get(json_array_get(st, 1), "off_median_pct")) -
               2000.0 * 100 / 5500) < 1e-3);
    /* The session block: rank 1, the run's most GPU time, read first. */
    CHECK_STR(str(run, "report_session_id"), "r1");
    CHECK_STR(str(json_object_get(j, "session"), "session_id"), "r1");
    /* The other sections sum the whole run: both ranks' kernels. */
    CHECK_INT(num(json_object_get(j, "summary"), "kernel_time_ns"), 11000);
    json_t *clock = json_object_get(run, "clock");
    CHECK_STR(str(clock, "cross_host_skew"), "single_host");
    CHECK_INT(json_array_size(json_object_get(run, "other_runs")), 0);
    /* The devices as the run used them: gpu-profile's own session's rows
     * (the fake NVML's device 0), beside every process's kernels. */
    json_t *devs = json_object_get(run, "devices");
    CHECK_STR(str(devs, "session_id"), str(mon, "session_id"));
    json_t *d0 = json_array_get(json_object_get(devs, "items"), 0);
    CHECK_INT(json_array_size(json_object_get(devs, "items")), 1);
    CHECK_INT(num(d0, "device_id"), 0);
    CHECK(num(d0, "samples") >= 1);
    CHECK(json_is_number(json_object_get(d0, "util_gpu_mean_pct")));
    json_decref(j);
    fl_rmtree(base);
}

/* ------------------------------------------------ several runs in a directory */

static void make_two_runs(const char *base)
{
    /* run-a: ranks 0 and 1 on node-a, written last; run-b: one rank,
     * earlier; a session of no run (GPUFlight's, or before run ids),
     * earliest. */
    session(base, "a0", RUN_A, 0, 2, "node-a", 100, 5000, 1000, 200, 1700000300);
    session(base, "a1", RUN_A, 1, 2, "node-a", 101, 5000, 5000, 200, 1700000200);
    session(base, "b0", RUN_B, 0, 1, "node-a", 200, 5000, 40, 2, 1700000100);
    session(base, "legacy", NULL, -1, 0, "node-a", 300, 0, 7, 0, 1700000000);
}

static void test_two_runs(void)
{
    char base[512];
    h_path(base, sizeof base, "tworuns");
    make_two_runs(base);

    const char *dflt[] = {h_cli, "report", "--format", "json", base, NULL};
    json_t *j = run_json(dflt, 0);
    json_t *run = json_object_get(j, "run");
    CHECK_STR(str(run, "run_id"), RUN_A);
    CHECK_STR(str(run, "picked_by"), "most_recent");
    CHECK_INT(json_array_size(json_object_get(run, "processes")), 2);
    CHECK_INT(num(proc(run, 0), "gpu_time_ns"), 1200);
    CHECK_INT(num(proc(run, 1), "gpu_time_ns"), 5200);
    CHECK_STR(str(run, "report_session_id"), "a1");
    json_t *others = json_object_get(run, "other_runs");
    CHECK_INT(json_array_size(others), 2);
    CHECK_STR(str(json_array_get(others, 0), "run_id"), RUN_B);
    CHECK_INT(num(json_array_get(others, 0), "sessions"), 1);
    CHECK(null_at(json_array_get(others, 1), "run_id"));
    CHECK_STR(json_string_value(
                  json_array_get(json_object_get(json_array_get(others, 1), "session_ids"), 0)),
              "legacy");
    json_decref(j);

    const char *byrun[] = {h_cli, "report", "--format", "json", "--run", RUN_B, base, NULL};
    j = run_json(byrun, 0);
    run = json_object_get(j, "run");
    CHECK_STR(str(run, "run_id"), RUN_B);
    CHECK_STR(str(run, "picked_by"), "run");
    CHECK_INT(num(proc(run, 0), "gpu_time_ns"), 42);
    CHECK_STR(str(json_object_get(j, "session"), "session_id"), "b0");
    json_decref(j);

    const char *bysess[] = {h_cli, "report", "--format", "json", "--session", "a0", base, NULL};
    j = run_json(bysess, 0);
    run = json_object_get(j, "run");
    CHECK_STR(str(run, "run_id"), RUN_A);
    CHECK_STR(str(run, "picked_by"), "session");
    CHECK_STR(str(run, "report_session_id"), "a0");
    CHECK_STR(str(json_object_get(j, "session"), "session_id"), "a0");
    json_decref(j);

    const char *legacy[] = {h_cli, "report", "--format", "json", "--session", "legacy", base, NULL};
    j = run_json(legacy, 0);
    run = json_object_get(j, "run");
    CHECK(null_at(run, "run_id"));
    CHECK_INT(json_array_size(json_object_get(run, "other_runs")), 2);
    json_decref(j);

    /* Bad IDs: usage errors listing what is there, nothing on stdout. */
    h_result r;
    const char *badrun[] = {h_cli, "report", "--run", "nope", base, NULL};
    h_run(badrun, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: report: --run 'nope': no such run; the runs: run-a (2 "
                     "sessions), run-b (1 session)\n");
    CHECK_INT(r.out_len, 0);
    h_result_free(&r);
    const char *badsess[] = {h_cli, "export", "--format", "csv", "--session", "nope", base, NULL};
    h_run(badsess, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: export: --session 'nope': no such session; the sessions: a0, "
                     "a1, b0, legacy\n");
    CHECK_INT(r.out_len, 0);
    h_result_free(&r);
    const char *both[] = {h_cli, "report", "--run", RUN_A, "--session", "a0", base, NULL};
    h_run(both, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    h_result_free(&r);

    /* The text: the run section first (golden), then the busiest rank's
     * report. */
    const char *text[] = {h_cli, "report", base, NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    const char *end = strstr(r.out, "\nreport  ");
    char *sec = strndup(r.out, end ? (size_t)(end - r.out) : r.out_len);
    check_golden("cli_runs/two_runs.txt", sec, "test_cli_runs");
    free(sec);
    CHECK_CONTAINS(r.out, "session a1");
    h_result_free(&r);

    /* export: the run's every process; SQLite its session of most GPU
     * time, said on stderr. */
    const char *exp[] = {h_cli, "export", "--format", "csv", base, NULL};
    h_run(exp, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(r.err_len, 0);
    CHECK_CONTAINS(r.out, ",external_id,op,pid,rank\n");
    CHECK_CONTAINS(r.out, "5000");
    h_result_free(&r);
    char db[600];
    snprintf(db, sizeof db, "%s.sqlite", base);
    const char *sq[] = {h_cli, "export", "--format", "sqlite", "-o", db, base, NULL};
    h_run(sq, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "gpu-profile: export: run run-a has 2 sessions: --format sqlite writes one, "
                     "a1 (the run's most GPU time); --session ID for another\n");
    h_result_free(&r);
    unlink(db);
    fl_rmtree(base);
}

/* ------------------------------------------------------- hosts merged */

static void test_hosts_merged(void)
{
    char h1[512], h2[512];
    h_path(h1, sizeof h1, "host1");
    h_path(h2, sizeof h2, "host2");
    /* node-a's two sessions' wall clocks 1500 ns apart against the
     * monotonic clock they share: the wall clock stepped between them. */
    session(h1, "m0", "job-9", 0, 3, "node-a", 10, 1000000, 100, 0, 1700000000);
    session(h1, "m1", "job-9", 1, 3, "node-a", 11, 1001500, 100, 0, 1700000000);
    session(h2, "m2", "job-9", 2, 3, "node-b", 10, 77, 400, 0, 1700000000);
    const char *argv[] = {h_cli, "report", "--format", "json", h1, h2, NULL};
    json_t *j = run_json(argv, 0);
    json_t *run = json_object_get(j, "run");
    CHECK_STR(str(run, "run_id"), "job-9");
    CHECK_INT(json_array_size(json_object_get(run, "processes")), 3);
    CHECK_INT(num(proc(run, 2), "rank"), 2);
    CHECK_STR(str(proc(run, 2), "host"), "node-b");
    CHECK_INT(num(proc(run, 2), "pid"), 10); /* the same pid on another host: another process */
    json_t *clock = json_object_get(run, "clock");
    CHECK_STR(str(clock, "basis"), "wall_clock");
    CHECK_STR(str(clock, "cross_host_skew"), "unknown");
    json_t *hosts = json_object_get(clock, "hosts");
    CHECK_INT(json_array_size(hosts), 2);
    CHECK_STR(str(json_array_get(hosts, 0), "host"), "node-a");
    CHECK_INT(num(json_array_get(hosts, 0), "sessions"), 2);
    CHECK_INT(num(json_array_get(hosts, 0), "wall_minus_monotonic_spread_ns"), 1500);
    CHECK(null_at(json_array_get(hosts, 1), "wall_minus_monotonic_spread_ns"));
    /* rank 2's 400 ns against the median 100: the straggler. */
    json_t *st = json_object_get(run, "stragglers");
    CHECK_INT(json_array_size(st), 1);
    CHECK_INT(num(json_array_get(st, 0), "rank"), 2);
    CHECK(null_at(run, "devices")); /* no gpu-profile session among them */
    json_decref(j);

    /* The same directory twice counts its sessions once. */
    const char *twice[] = {h_cli, "report", "--format", "json", h1, h1, NULL};
    j = run_json(twice, 0);
    CHECK_INT(json_array_size(json_object_get(json_object_get(j, "run"), "processes")), 2);
    json_decref(j);

    /* A directory that cannot be read: said, nothing written. */
    char none[512];
    h_path(none, sizeof none, "no-such-dir");
    const char *bad[] = {h_cli, "report", h1, none, NULL};
    h_result r;
    h_run(bad, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "cannot read the log directory");
    CHECK_CONTAINS(r.err, none);
    CHECK_INT(r.out_len, 0);
    h_result_free(&r);
    fl_rmtree(h1);
    fl_rmtree(h2);
}

/* ------------------------------------------- the report of a whole run */

/* One session's files under base/sid: job_start (kind, rank, the device
 * GPU-1 as NVML and CUDA number it, ts_ns 1760000000000000000 + start),
 * then body (records, one a line, "%s" for the session id: at most 5),
 * and a shutdown at end ns. */
static void run_session(const char *base, const char *sid, const char *kind, int rank, int pid,
                        long start, long end, const char *body)
{
    char rk[16] = "null", text[8192], rest[4096];
    if (rank >= 0)
        snprintf(rk, sizeof rk, "%d", rank);
    snprintf(rest, sizeof rest, body, sid, sid, sid, sid, sid);
    snprintf(text, sizeof text,
             "{\"version\":1,\"type\":\"job_start\",\"pid\":%d,\"app\":\"train\",\"session_id\":"
             "\"%s\",\"log_path\":\"x\",\"ts_ns\":%lld,\"hostname\":\"node-a\","
             "\"gpu_static_devices\":[{\"id\":0,\"name\":\"Fake GPU\",\"uuid\":\"GPU-1\"}],"
             "\"cuda_static_devices\":[{\"id\":0,\"name\":\"Fake GPU\",\"uuid\":\"GPU-1\"}],"
             "\"session_kind\":\"%s\",\"profiling_engine\":\"nvidia.trace\",\"run_id\":\"job-1\","
             "\"rank\":%s,\"world_size\":2,\"rank_source\":\"RANK\"}\n%s"
             "{\"type\":\"shutdown\",\"pid\":%d,\"app\":\"train\",\"session_id\":\"%s\","
             "\"ts_ns\":%lld}\n",
             pid, sid, 1760000000000000000LL + start, kind, rk, rest, pid, sid,
             1760000000000000000LL + end);
    write_session_log(base, sid, text, NULL, 0);
}

#define DEV_ROWS(util)                                                                             \
    "{\"version\":1,\"type\":\"device_metric_batch\",\"session_id\":\"%s\",\"batch_id\":9,"        \
    "\"base_time_ns\":1760000000003000000,\"columns\":[\"dt_ns\",\"device_id\",\"gpu_util\"],"     \
    "\"rows\":" util "}\n"

#define SCOPES(rows)                                                                               \
    "{\"version\":1,\"type\":\"scope_event_batch\",\"session_id\":\"%s\",\"batch_id\":3,"          \
    "\"base_time_ns\":1760000000004000000,\"columns\":[\"dt_ns\",\"scope_instance_id\","           \
    "\"name_id\",\"event_type\"],\"rows\":" rows "}\n"

/* Rank 0: kernel ids 1 gemm, 2 relu; rank 1: 1 softmax, 2 gemm - the same
 * ids naming other kernels; scope names the same way (rank 0: 1 step;
 * rank 1: 1 fwd, 2 step), rank 0 leaving scope instance 5 open and rank 1
 * ending an instance 5 it never began.  Each process's own device rows
 * too. */
static void make_run(const char *base, bool monitor)
{
    run_session(
        base, "p0", "trace", 0, 100, 1000, 9000000,
        "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
        "\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"relu\"},\"scope_name_dict\":{\"1\":\"step\"}}"
        "\n" SCOPES(
            "[[0,1,1,0],[1000,1,1,1],[2000,5,1,0]]") "{\"version\":1,\"type\":\"kernel_event_"
                                                     "batch\",\"session_id\":\"%s\","
                                                     "\"batch_id\":1,\"base_time_ns\":"
                                                     "1760000000001000000,\"columns\":[\"dt_ns\","
                                                     "\"kernel_id\",\"duration_ns\"],\"rows\":[[0,"
                                                     "1,1000],[10,2,200],[20,1,3000]]}\n"
                                                     "{\"version\":1,\"type\":\"memcpy_event_"
                                                     "batch\",\"session_id\":\"%s\","
                                                     "\"batch_id\":2,\"base_time_ns\":"
                                                     "1760000000002000000,\"columns\":[\"dt_ns\","
                                                     "\"duration_ns\",\"bytes\",\"copy_kind\"],"
                                                     "\"rows\":[[0,300,4096,1]]}\n" DEV_ROWS(
                                                         "[[0,0,10]]"));
    run_session(base, "p1", "trace", 1, 101, 2000, 8000000,
                "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
                "\"kernel_dict\":{\"1\":\"softmax\",\"2\":\"gemm\"},\"scope_name_dict\":{\"1\":"
                "\"fwd\","
                "\"2\":\"step\"}}\n" SCOPES("[[0,1,2,0],[3000,1,2,1],[10,2,1,0],[110,2,1,1],[4000,"
                                            "5,2,1]]") "{\"version\":1,\"type\":\"kernel_event_"
                                                       "batch\",\"session_id\":\"%s\","
                                                       "\"batch_id\":1,\"base_time_ns\":"
                                                       "1760000000001000000,\"columns\":[\"dt_ns\","
                                                       "\"kernel_id\",\"duration_ns\"],\"rows\":[["
                                                       "0,1,500],[10,2,2000]]}\n"
                                                       "{\"version\":1,\"type\":\"memcpy_event_"
                                                       "batch\",\"session_id\":\"%s\","
                                                       "\"batch_id\":2,\"base_time_ns\":"
                                                       "1760000000002000000,\"columns\":[\"dt_ns\","
                                                       "\"duration_ns\",\"bytes\",\"copy_kind\"],"
                                                       "\"rows\":[[0,100,1024,2],"
                                                       "[5,200,2048,1]]}\n" DEV_ROWS("[[0,0,90]]"));
    if (monitor)
        run_session(base, "mon", "monitor", -1, 99, 0, 9500000, DEV_ROWS("[[0,0,50],[7,0,70]]"));
}

/* A hotspot row by name; NULL: none. */
static json_t *hotspot(json_t *j, const char *name)
{
    json_t *ks = json_object_get(json_object_get(j, "hotspots"), "kernels");
    for (size_t i = 0; i < json_array_size(ks); i++)
        if (strcmp(str(json_array_get(ks, i), "name"), name) == 0)
            return json_array_get(ks, i);
    return NULL;
}

static json_t *copy_kind(json_t *j, const char *kind)
{
    json_t *cs = json_object_get(j, "memcpy");
    for (size_t i = 0; i < json_array_size(cs); i++)
        if (strcmp(str(json_array_get(cs, i), "kind"), kind) == 0)
            return json_array_get(cs, i);
    return NULL;
}

static void check_kernel(json_t *j, const char *name, long long count, long long total_ns)
{
    json_t *k = hotspot(j, name);
    CHECK(k != NULL);
    if (!k) {
        fprintf(stderr, "no hotspot row %s\n", name);
        return;
    }
    CHECK_INT(num(k, "count"), count);
    CHECK_INT(num(k, "total_ns"), total_ns);
}

static void test_whole_run_report(void)
{
    char base[512];
    h_path(base, sizeof base, "wholerun");
    make_run(base, true);
    const char *argv[] = {h_cli, "report", "--format", "json", base, NULL};
    json_t *j = run_json(argv, 0);
    json_t *run = json_object_get(j, "run");
    CHECK_STR(str(run, "report_session_id"), "p0");
    json_t *ids = json_object_get(run, "report_session_ids");
    CHECK_INT(json_array_size(ids), 3);
    CHECK_STR(json_string_value(json_array_get(ids, 0)), "p0");
    CHECK_STR(json_string_value(json_array_get(ids, 1)), "mon");
    CHECK_STR(json_string_value(json_array_get(ids, 2)), "p1");
    /* Kernels merged by name, never by id: gemm is id 1 in rank 0 and id
     * 2 in rank 1. */
    json_t *hs = json_object_get(j, "hotspots");
    CHECK_INT(num(hs, "distinct_kernels"), 3);
    CHECK_INT(json_array_size(json_object_get(hs, "kernels")), 3);
    check_kernel(j, "gemm", 3, 6000);
    check_kernel(j, "softmax", 1, 500);
    check_kernel(j, "relu", 1, 200);
    json_t *sum = json_object_get(j, "summary");
    CHECK_INT(num(sum, "kernel_launches"), 5);
    CHECK_INT(num(sum, "kernel_distinct"), 3);
    CHECK_INT(num(sum, "kernel_time_ns"), 6700);
    /* Copies summed over both processes. */
    CHECK_INT(num(sum, "memcpy_count"), 3);
    CHECK_INT(num(sum, "memcpy_bytes"), 7168);
    CHECK_INT(num(sum, "memcpy_time_ns"), 600);
    json_t *htod = copy_kind(j, "HtoD"), *dtoh = copy_kind(j, "DtoH");
    CHECK(htod && dtoh);
    if (htod && dtoh) {
        CHECK_INT(num(htod, "count"), 2);
        CHECK_INT(num(htod, "bytes"), 6144);
        CHECK_INT(num(htod, "time_ns"), 500);
        CHECK_INT(num(dtoh, "count"), 1);
        CHECK_INT(num(dtoh, "bytes"), 1024);
    }
    /* Scopes merged by name; instance ids per process: rank 0's open
     * instance 5 is not ended by rank 1's. */
    json_t *sc = json_object_get(j, "scopes");
    CHECK_INT(num(sc, "unmatched_ends"), 1);
    json_t *items = json_object_get(sc, "items");
    CHECK_INT(json_array_size(items), 2);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        bool step = strcmp(str(it, "name"), "step") == 0;
        CHECK(step || strcmp(str(it, "name"), "fwd") == 0);
        CHECK_INT(num(it, "count"), step ? 2 : 1);
        CHECK_INT(num(it, "total_ns"), step ? 4000 : 100);
        CHECK_INT(num(it, "open_at_end"), step ? 1 : 0);
    }
    /* The devices from gpu-profile's own session alone (50 and 70), not
     * the processes' rows (10, 90). */
    json_t *devs = json_object_get(j, "devices");
    CHECK_INT(json_array_size(devs), 1);
    CHECK_INT(num(json_array_get(devs, 0), "device_id"), 0);
    CHECK_INT(num(json_array_get(devs, 0), "samples"), 2);
    CHECK(fabs(json_number_value(json_object_get(json_array_get(devs, 0), "util_gpu_mean_pct")) -
               60.0) < 1e-9);
    /* The run's span: the monitor's start to its shutdown. */
    CHECK_INT(num(json_object_get(j, "session"), "duration_ns"), 9500000);
    CHECK_INT(num(json_object_get(j, "read"), "files"), 3);
    json_decref(j);

    /* --session: that process alone. */
    const char *one[] = {h_cli, "report", "--format", "json", "--session", "p1", base, NULL};
    j = run_json(one, 0);
    ids = json_object_get(json_object_get(j, "run"), "report_session_ids");
    CHECK_INT(json_array_size(ids), 1);
    CHECK_STR(json_string_value(json_array_get(ids, 0)), "p1");
    CHECK_INT(num(json_object_get(j, "hotspots"), "distinct_kernels"), 2);
    check_kernel(j, "gemm", 1, 2000);
    check_kernel(j, "softmax", 1, 500);
    CHECK(hotspot(j, "relu") == NULL);
    CHECK_INT(num(json_object_get(j, "summary"), "memcpy_count"), 2);
    CHECK_INT(num(json_object_get(j, "summary"), "kernel_time_ns"), 2500);
    CHECK_INT(num(json_array_get(json_object_get(j, "devices"), 0), "samples"), 1);
    CHECK_INT(num(json_object_get(j, "session"), "duration_ns"), 8000000 - 2000);
    json_decref(j);

    /* The text says what it covers. */
    h_result r;
    const char *text[] = {h_cli, "report", base, NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "the sections below: the whole run, 3 sessions (2 processes + "
                          "gpu-profile's monitor)\n");
    h_result_free(&r);
    fl_rmtree(base);

    /* No Monitor session: each device's rows from the first process
     * read that has it (rank 0, the most GPU time: 10), never twice. */
    make_run(base, false);
    j = run_json(argv, 0);
    devs = json_object_get(j, "devices");
    CHECK_INT(json_array_size(devs), 1);
    CHECK_INT(num(json_array_get(devs, 0), "samples"), 1);
    CHECK(fabs(json_number_value(json_object_get(json_array_get(devs, 0), "util_gpu_mean_pct")) -
               10.0) < 1e-9);
    check_kernel(j, "gemm", 3, 6000);
    CHECK_INT(num(json_object_get(j, "session"), "duration_ns"), 9000000 - 1000);
    json_decref(j);
    h_run(text, NULL, NULL, 0, &r);
    CHECK_CONTAINS(r.out, "the sections below: the whole run, 2 sessions (2 processes)\n");
    h_result_free(&r);

    /* The HTML page's timeline: a track per process (its pid) and stream,
     * each process's kernels under their own names (rank 1's id 1 is
     * softmax, rank 0's gemm; relu is rank 0's alone). */
    const char *html[] = {h_cli, "report", "--format", "html", base, NULL};
    h_run(html, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    const char *tag = "id=\"gp-timeline\">";
    const char *tl = r.out ? strstr(r.out, tag) : NULL;
    const char *tl_end = tl ? strstr(tl, "</script>") : NULL;
    json_t *t = tl && tl_end
                    ? json_loadb(tl + strlen(tag), (size_t)(tl_end - tl - strlen(tag)), 0, NULL)
                    : NULL;
    CHECK(t != NULL);
    char names[2][256] = {"", ""};
    size_t ti;
    json_t *track;
    json_array_foreach(json_object_get(t, "tracks"), ti, track)
    {
        const char *label = str(track, "label");
        int k = label && strncmp(label, "pid 100 ", 8) == 0   ? 0
                : label && strncmp(label, "pid 101 ", 8) == 0 ? 1
                                                              : -1;
        if (k < 0 || !strstr(label, "GPU 0 stream"))
            continue;
        size_t ci;
        json_t *cell;
        json_array_foreach(json_object_get(track, "cells"), ci, cell)
        {
            const char *nm = json_string_value(json_array_get(cell, 4));
            if (nm && !strstr(names[k], nm))
                snprintf(names[k] + strlen(names[k]), sizeof names[k] - strlen(names[k]), "%s ",
                         nm);
        }
    }
    /* Each bucket shows its longest event: which names show depends on
     * the bucketing, never whose they are. */
    CHECK(names[0][0] != 0 && names[1][0] != 0);
    CHECK(strstr(names[0], "softmax") == NULL);
    CHECK(strstr(names[1], "relu") == NULL);
    json_decref(t);
    h_result_free(&r);
    fl_rmtree(base);
}

/* ------------------------------------------------------ export a run */

/* The lines of text holding needle. */
static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *line = strndup(p, len);
        n += strstr(line, needle) != NULL;
        free(line);
        p = e ? e + 1 : NULL;
    }
    return n;
}

/* Chrome trace events of cat in the pid block (1000 * (index + 1) + the
 * track), and the smallest ts among them. */
static int chrome_count(json_t *ev, const char *cat, long long block, double *min_ts)
{
    int n = 0;
    *min_ts = INFINITY;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        long long pid = (long long)json_integer_value(json_object_get(e, "pid"));
        const char *c = json_string_value(json_object_get(e, "cat"));
        if (pid / 1000 != block || !c || strcmp(c, cat) != 0)
            continue;
        n++;
        double ts = json_number_value(json_object_get(e, "ts"));
        if (ts < *min_ts)
            *min_ts = ts;
    }
    return n;
}

/* The process_name of pid, "" if none. */
static const char *chrome_process(json_t *ev, long long pid)
{
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (nm && strcmp(nm, "process_name") == 0 &&
            (long long)json_integer_value(json_object_get(e, "pid")) == pid)
            return str(json_object_get(e, "args"), "name");
    }
    return "";
}

static void test_export_run(void)
{
    char base[512];
    h_path(base, sizeof base, "exprun");
    /* Rank 1 started 2 ms after rank 0; a process of no rank 3 ms after. */
    session(base, "x1", "job-x", 1, 2, "node-a", 21, 5, 100, 50, 1700000000);
    g_shift_ns = -2000000;
    session(base, "x0", "job-x", 0, 2, "node-a", 20, 5, 300, 70, 1700000000);
    g_shift_ns = 1000000;
    session(base, "x2", "job-x", -1, 0, "node-b", 22, 5, 10, 20, 1700000000);
    g_shift_ns = 0;

    /* CSV: every process's rows, pid and rank at the end. */
    h_result r;
    const char *csv[] = {h_cli, "export", "--format", "csv", base, NULL};
    h_run(csv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(r.err_len, 0);
    static const char hdr[] =
        "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
        "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
        "external_id,op,pid,rank\n";
    CHECK(strncmp(r.out, hdr, strlen(hdr)) == 0);
    CHECK_INT(count_lines(r.out, ","), 7);
    CHECK_INT(count_lines(r.out, ",20,0"), 2);
    CHECK_INT(count_lines(r.out, ",21,1"), 2);
    CHECK_INT(count_lines(r.out, ",22,"), 2);
    CHECK_INT(count_lines(r.out, ",gemm,"), 3);
    CHECK_INT(count_lines(r.out, ",ncclKernel_AllReduce,"), 3);
    /* Rank 0's rows first, its gemm of 300 ns. */
    CHECK_CONTAINS(r.out, "\n1759999999999000000,1759999999999000300,300,");
    h_result_free(&r);

    /* --session: one process, the columns of one session. */
    const char *one[] = {h_cli, "export", "--format", "csv", "--session", "x1", base, NULL};
    h_run(one, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(strstr(r.out, "pid,rank") == NULL);
    CHECK_INT(count_lines(r.out, "gemm"), 1);
    h_result_free(&r);

    /* Chrome trace: a pid block per process in rank order, one axis from
     * rank 0's start. */
    const char *ct[] = {h_cli, "export", "--format", "chrome-trace", base, NULL};
    json_t *j = run_json(ct, 0);
    json_t *ev = json_object_get(j, "traceEvents");
    double ts;
    CHECK_INT(chrome_count(ev, "kernel", 1, &ts), 2);
    CHECK(fabs(ts - 1000.0) < 1e-9); /* 1 ms after its start, its start the origin */
    CHECK_INT(chrome_count(ev, "kernel", 2, &ts), 2);
    CHECK(fabs(ts - 3000.0) < 1e-9);
    CHECK_INT(chrome_count(ev, "kernel", 3, &ts), 2);
    CHECK(fabs(ts - 4000.0) < 1e-9);
    CHECK_INT(chrome_count(ev, "kernel", 4, &ts), 0);
    CHECK_INT(chrome_count(ev, "session", 1, &ts), 1);
    CHECK(fabs(ts) < 1e-9);
    CHECK_INT(chrome_count(ev, "session", 2, &ts), 1);
    CHECK(fabs(ts - 2000.0) < 1e-9);
    CHECK_INT(chrome_count(ev, "session", 3, &ts), 1);
    CHECK_STR(chrome_process(ev, 1001), "rank 0 (node-a, pid 20)");
    CHECK_STR(chrome_process(ev, 2001), "rank 1 (node-a, pid 21)");
    CHECK_STR(chrome_process(ev, 3001), "pid 22");
    CHECK_INT(num(json_object_get(j, "otherData"), "processes"), 3);
    json_decref(j);
    fl_rmtree(base);
}

/* ------------------------------------------------ --by op: each rank's op */

/* A session of run "run-ops" whose kernels carry framework ops: rows
 * "[dt, kernel_id, duration, external_kind, external_id]". */
static void op_session(const char *base, const char *sid, int rank, const char *rows)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"version\":1,\"type\":\"job_start\",\"pid\":%d,\"app\":\"train\","
             "\"session_id\":\"%s\",\"log_path\":\"x\",\"ts_ns\":1760000000000000000,"
             "\"hostname\":\"h\",\"devices\":[],\"session_kind\":\"trace\","
             "\"profiling_engine\":\"nvidia.trace\",\"run_id\":\"run-ops\",\"rank\":%d,"
             "\"local_rank\":null,\"world_size\":2,\"rank_source\":\"RANK\"}\n"
             "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
             "\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"relu\"},"
             "\"op_dict\":{\"11\":\"aten::mm\",\"12\":\"aten::relu\"}}\n"
             "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"%s\","
             "\"batch_id\":1,\"base_time_ns\":1760000000001000000,\"columns\":[\"dt_ns\","
             "\"kernel_id\",\"duration_ns\",\"external_kind\",\"external_id\"],\"rows\":%s}\n"
             "{\"type\":\"shutdown\",\"pid\":%d,\"app\":\"train\",\"session_id\":\"%s\","
             "\"ts_ns\":1760000000009000000}\n",
             100 + rank, sid, rank, sid, sid, rows, 100 + rank, sid);
    write_session_log(base, sid, text, NULL, 0);
}

/* The run's per-rank table with each process's busiest framework op
 * (JSON always, the text's last column with --by op); --by another
 * word is a usage error. */
static void test_run_by_op(void)
{
    char base[512];
    h_path(base, sizeof base, "run-ops");
    /* rank 0: aten::mm 1000 ns, aten::relu 3000 ns (gemm's 4000 the busiest
     * kernel); rank 1: PyTorch profiler's op 7 (kind 3) 5000, none 6000. */
    op_session(base, "o0", 0, "[[0,1,1000,4,11],[10,2,3000,4,12],[20,1,3000,0,0]]");
    op_session(base, "o1", 1, "[[0,1,5000,3,7],[10,2,6000,0,0]]");
    const char *rep[] = {h_cli, "report", "--format", "json", base, NULL};
    json_t *j = run_json(rep, 0);
    json_t *run = json_object_get(j, "run");
    json_t *p0 = proc(run, 0), *p1 = proc(run, 1);
    CHECK_STR(str(p0, "busiest_kernel"), "gemm");
    CHECK_STR(str(p0, "busiest_op"), "aten::relu");
    CHECK_INT(num(p0, "busiest_op_ns"), 3000);
    CHECK_STR(str(p1, "busiest_kernel"), "relu");
    CHECK_STR(str(p1, "busiest_op"), "custom0#7");
    CHECK_INT(num(p1, "busiest_op_ns"), 5000);
    json_decref(j);

    h_result r;
    const char *txt[] = {h_cli, "report", "--by", "op", base, NULL};
    h_run(txt, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "     NCCL  busiest op\n");
    CHECK_CONTAINS(r.out, "  aten::relu\n");
    CHECK_CONTAINS(r.out, "  custom0#7\n");
    /* the hotspots by op over the whole run: relu's 3000 and mm's 1000 */
    CHECK_CONTAINS(r.out, "\nhotspots  top 3 of 3 ops by GPU time  (by op)\n");
    CHECK_CONTAINS(r.out, "  2 of 5 kernel launches without an op\n");
    h_result_free(&r);

    const char *bad[] = {h_cli, "report", "--by", "file", base, NULL};
    h_run(bad, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.out, "");
    CHECK_CONTAINS(r.err, "report: --by 'file': use kernel, op or line");
    h_result_free(&r);
    fl_rmtree(base);
}

/* ------------------------------------------ --by line: each rank's line */

/* A session of run "run-lines": details (kernel_detail records, "" for
 * none) before one batch of rows "[dt, kernel_id, duration, corr_id,
 * has_details]". */
static void line_session(const char *base, const char *sid, int rank, const char *details,
                         const char *rows)
{
    char dir[1024], path[1100], text[8192];
    snprintf(dir, sizeof dir, "%s/%s", base, sid);
    mkdir(base, 0755);
    CHECK_INT(mkdir(dir, 0755), 0);
    snprintf(text, sizeof text,
             "{\"version\":1,\"type\":\"job_start\",\"pid\":%d,\"app\":\"train\","
             "\"session_id\":\"%s\",\"log_path\":\"x\",\"ts_ns\":1760000000000000000,"
             "\"hostname\":\"h\",\"devices\":[],\"session_kind\":\"trace\","
             "\"profiling_engine\":\"nvidia.trace\",\"run_id\":\"run-lines\",\"rank\":%d,"
             "\"local_rank\":null,\"world_size\":2,\"rank_source\":\"RANK\"}\n"
             "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
             "\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"relu\"}}\n"
             "%s"
             "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"%s\","
             "\"batch_id\":1,\"base_time_ns\":1760000000001000000,\"columns\":[\"dt_ns\","
             "\"kernel_id\",\"duration_ns\",\"corr_id\",\"has_details\"],\"rows\":%s}\n"
             "{\"type\":\"shutdown\",\"pid\":%d,\"app\":\"train\",\"session_id\":\"%s\","
             "\"ts_ns\":1760000000009000000}\n",
             200 + rank, sid, rank, sid, details, sid, rows, 200 + rank, sid);
    snprintf(path, sizeof path, "%s/device.log", dir);
    h_write_file(path, text, strlen(text));
}

#define LINE_DETAIL(sid, corr, stack)                                                              \
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"" sid "\",\"corr_id\":" #corr      \
    ",\"stack_trace\":\"" stack "\"}\n"

/* The run's per-rank table with each process's busiest source line (the
 * line `--by line` names: the innermost Python frame), two stacks ending
 * on one line summed, a row of no detail taking its kernel's last (the
 * has_details rule); a process with no stack: null / "(no stack)". */
static void test_run_by_line(void)
{
    char base[512];
    h_path(base, sizeof base, "run-lines");
    /* rank 0: model.py:10 1000 + 2500 (two stacks), model.py:20 3000 +
     * 100 (the has_details 0 row); rank 1: no stacks. */
    line_session(base, "l0", 0,
                 LINE_DETAIL("l0", 1,
                             "<module> (/w/train.py:30)|forward (/w/model.py:10)|at::mm|"
                             "cudaLaunchKernel")
                     LINE_DETAIL("l0", 2, "<module> (/w/train.py:31)|relu (/w/model.py:20)")
                         LINE_DETAIL("l0", 3, "<module> (/w/train.py:32)|forward (/w/model.py:10)"),
                 "[[0,1,1000,1,1],[10,2,3000,2,1],[20,1,2500,3,1],[30,2,100,4,0]]");
    line_session(base, "l1", 1, "", "[[0,1,5000,1,0],[10,2,6000,2,0]]");
    const char *rep[] = {h_cli, "report", "--format", "json", base, NULL};
    json_t *j = run_json(rep, 0);
    json_t *run = json_object_get(j, "run");
    json_t *p0 = proc(run, 0), *p1 = proc(run, 1);
    CHECK_STR(str(p0, "busiest_kernel"), "gemm");
    CHECK_STR(str(p0, "busiest_line"), "forward (/w/model.py:10)");
    CHECK_INT(num(p0, "busiest_line_ns"), 3500);
    CHECK_STR(str(p1, "busiest_kernel"), "relu");
    CHECK(json_is_null(json_object_get(p1, "busiest_line")));
    CHECK(json_is_null(json_object_get(p1, "busiest_line_ns")));
    json_decref(j);

    h_result r;
    const char *txt[] = {h_cli, "report", "--by", "line", base, NULL};
    h_run(txt, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "     NCCL  busiest line\n");
    CHECK_CONTAINS(r.out, "  forward (/w/model.py:10)\n");
    CHECK_CONTAINS(r.out, "  (no stack)\n");
    h_result_free(&r);
    fl_rmtree(base);
}

int main(void)
{
    h_init();
    test_two_process_run();
    test_two_runs();
    test_hosts_merged();
    test_whole_run_report();
    test_export_run();
    test_run_by_op();
    test_run_by_line();
    h_cleanup();
    return check_done("test_cli_runs");
}
