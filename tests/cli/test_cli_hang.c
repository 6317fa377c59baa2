/*
 * test_cli_hang.c - gpu-profile with an NVML call that does not return (the
 * fake NVML's hang rules, docs/test-doubles.md): the command's end, its
 * start (a hung discovery call) and, with --log-dir, the session's init and
 * shutdown are held up at most by the 2 s bound of one call; the hung
 * device is reported as failed, naming the call; CMD's status is its own.
 *
 * The hangs last 30 s; the bounds checked are generous (a loaded machine):
 * they tell "returned" from "hung", they are not timings.
 */
#include "harness.h"
#include "json_mini.h"

#include <time.h>

#define BOUND_S 10.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static jn *read_json(const char *path)
{
    size_t len = 0;
    char *text = check_read_file(path, &len);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, len, &why) : NULL;
    if (!doc)
        fprintf(stderr, "%s: not JSON (%s)\n", path, why ? why : "cannot read");
    CHECK(doc != NULL);
    free(text);
    return doc;
}

/* Runs gpu-profile --json -o report.json [extra] -- cli_child sleep MS 3
 * and returns the report; *took_s: the whole run. */
static jn *run_sleep(const char *extra, long ms, double *took_s, h_result *r)
{
    char report[512], ms_text[32];
    h_path(report, sizeof report, "report.json");
    unlink(report);
    snprintf(ms_text, sizeof ms_text, "%ld", ms);
    const char *argv[] = {
        h_cli, "--json", "-o",    report,  "--interval", "0.02", extra ? extra : "--no-live",
        "--",  h_child,  "sleep", ms_text, "3",          NULL};
    double t0 = now_s();
    h_run(argv, NULL, NULL, 0, r);
    *took_s = now_s() - t0;
    CHECK_INT(r->code, 3); /* CMD's own status, whatever NVML did */
    return read_json(report);
}

static const jn *device(const jn *doc, size_t i)
{
    return jn_at(jn_get(doc, "devices"), i);
}

/* A device's utilization call hangs while CMD runs: the command ends at the
 * call's bound, the device failed, the other one sampled. */
static void test_hang_while_running(void)
{
    h_scenario("device 0\ndevice 1\nhang 1 util 30000 after 2\n");
    double took;
    h_result r;
    jn *doc = run_sleep(NULL, 600, &took, &r);
    printf("a device hung while CMD ran 0.6 s: gpu-profile took %.3f s\n", took);
    CHECK(took < BOUND_S);
    CHECK(jn_is_null(jn_get(device(doc, 0), "device_error")));
    CHECK_STR(jn_str(jn_get(device(doc, 1), "device_error")),
              "nvml: device 1 (Fake NVIDIA GPU): nvmlDeviceGetUtilizationRates did not answer "
              "within 2 s: the device is not asked again until that call returns");
    CHECK_INT(jn_int(jn_get(device(doc, 1), "sample_count")), 2);
    jn_free(doc);
    h_result_free(&r);
}

/* The only device's call hangs as CMD ends: the profiler's stop is bounded. */
static void test_hang_at_stop(void)
{
    h_scenario("device 0\nhang 0 power 30000 after 3\n");
    double took;
    h_result r;
    jn *doc = run_sleep(NULL, 200, &took, &r);
    printf("the device hung at the end: gpu-profile took %.3f s\n", took);
    CHECK(took < BOUND_S);
    /* Power is read through the field values call (nvml_fields.c), with
     * or without the energy counter in the same call. */
    CHECK_CONTAINS(jn_str(jn_get(device(doc, 0), "device_error")), "nvmlDeviceGetFieldValues (");
    CHECK_CONTAINS(jn_str(jn_get(device(doc, 0), "device_error")),
                   "power) did not answer within 2 s");
    jn_free(doc);
    h_result_free(&r);
}

/* A discovery call hangs: CMD starts after the bound; the device is failed
 * from the start. */
static void test_hang_at_discovery(void)
{
    h_scenario("device 0\nhang 0 handle 30000\n");
    double took;
    h_result r;
    jn *doc = run_sleep(NULL, 100, &took, &r);
    printf("discovery hung: gpu-profile took %.3f s\n", took);
    CHECK(took < BOUND_S);
    CHECK_STR(jn_str(jn_get(device(doc, 0), "device_error")),
              "nvml: device 0: nvmlDeviceGetHandleByIndex_v2 did not answer within 2 s: the "
              "device is not asked again until that call returns");
    CHECK_INT(jn_int(jn_get(device(doc, 0), "sample_count")), 0);
    jn_free(doc);
    h_result_free(&r);
}

/* With --log-dir the session's init (first round) and shutdown (stop)
 * are bounded too. */
static void test_hang_with_session(void)
{
    char logs[512], arg[600];
    h_path(logs, sizeof logs, "logs");
    snprintf(arg, sizeof arg, "--log-dir=%s", logs);
    h_scenario("device 0\ndevice 1\nhang 1 util 30000 after 3\nhang 0 name 30000\n");
    double took;
    h_result r;
    jn *doc = run_sleep(arg, 500, &took, &r);
    printf("with --log-dir: gpu-profile took %.3f s\n", took);
    CHECK(took < BOUND_S + 2.0);
    CHECK_CONTAINS(jn_str(jn_get(device(doc, 0), "device_error")),
                   "nvmlDeviceGetName did not answer within 2 s");
    CHECK_CONTAINS(jn_str(jn_get(device(doc, 1), "device_error")),
                   "nvmlDeviceGetUtilizationRates did not answer within 2 s");
    CHECK_CONTAINS(r.err, "gpu-profile: recording session ");
    jn_free(doc);
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_hang_while_running();
    test_hang_at_stop();
    test_hang_at_discovery();
    test_hang_with_session();
    h_cleanup();
    return check_done("test_cli_hang");
}
