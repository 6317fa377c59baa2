/*
 * test_cli_repeats.c - `gpu-profile --repeats N --warmup-runs M -- CMD`
 * (issue 33, point 5): CMD runs M + N times (counted by CMD itself in a
 * file), each measured run's summary is in the JSON, the figures across
 * runs are the mean, sample std, min and max of the runs' figures (a
 * metric no run measured is null, never 0), the text has them with ± and
 * the range, a failing run ends the series with its status, a failing
 * warmup run measures nothing, and bad values are refused before CMD runs.
 */
#include "harness.h"
#include "json_mini.h"

#include "gpu_profile.h"

/* No <math.h>: its jn() is json_mini.h's type. */
#define IS_NAN(x) ((x) != (x))

/* util.gpu steady at 55 %, a temperature, memory; no power at all. */
static const char steady[] =
    "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-11111111-2222-3333-4444-555555555500\n"
    "seq 0 util_gpu 55\nseq 0 util_mem 20\nseq 0 mem_used 2147483648\n"
    "seq 0 mem_total 85899345920\nseq 0 temp_c 61\nunsupported 0 power\nunsupported 0 energy\n";

/* The lines of a file (the runs CMD counted); 0 when it does not exist. */
static long lines_of(const char *path)
{
    size_t len = 0;
    char *text = h_exists(path) ? check_read_file(path, &len) : NULL;
    long n = 0;
    for (size_t i = 0; text && i < len; i++)
        n += text[i] == '\n';
    free(text);
    return n;
}

static void check_stats(const jn *st, uint64_t n, double mean, double std, double min, double max)
{
    CHECK(st && st->t == JN_OBJ);
    CHECK_INT(jn_int(jn_get(st, "n")), (long long)n);
    CHECK_NEAR(jn_num(jn_get(st, "mean")), mean, 2e-6);
    if (IS_NAN(std))
        CHECK(jn_is_null(jn_get(st, "std")));
    else
        CHECK_NEAR(jn_num(jn_get(st, "std")), std, 2e-6);
    CHECK_NEAR(jn_num(jn_get(st, "min")), min, 2e-6);
    CHECK_NEAR(jn_num(jn_get(st, "max")), max, 2e-6);
}

static void test_json(void)
{
    h_scenario(steady);
    char report[512], count[512];
    h_path(report, sizeof report, "repeats.json");
    h_path(count, sizeof count, "count-json");
    const char *argv[] = {h_cli,   "--json",    "-o",    report,          "--interval",
                          "0.001", "--repeats", "3",     "--warmup-runs", "2",
                          "--",    h_child,     "count", count,           NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(lines_of(count), 5); /* 2 warmup runs + 3 measured */
    char *text = check_read_file(report, NULL);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, strlen(text), &why) : NULL;
    CHECK(doc != NULL);
    const jn *rp = jn_get(doc, "repeats");
    CHECK(rp && rp->t == JN_OBJ);
    /* The run object's own keys are the last run's; "repeats" comes last. */
    CHECK_STR(doc && doc->n ? doc->keys[doc->n - 1] : "", "repeats");
    CHECK_INT(jn_int(jn_get(rp, "repeats")), 3);
    CHECK_INT(jn_int(jn_get(rp, "warmup_runs")), 2);
    CHECK_INT(jn_int(jn_get(rp, "runs_done")), 3);
    const jn *runs = jn_get(rp, "runs");
    CHECK_INT(runs ? (long long)runs->n : -1, 3);
    double d[3] = {0, 0, 0};
    for (size_t i = 0; runs && i < runs->n && i < 3; i++) {
        const jn *run = jn_at(runs, i);
        CHECK_INT(jn_int(jn_get(run, "run")), (long long)i + 1);
        CHECK_INT(jn_int(jn_get(run, "exit_status")), 0);
        CHECK(jn_is_null(jn_get(run, "signal")));
        d[i] = jn_num(jn_get(run, "duration_s"));
        const jn *devs = jn_get(run, "devices");
        CHECK_INT(devs ? (long long)devs->n : -1, 1);
        const jn *s = jn_at(devs, 0);
        CHECK_STR(jn_str(jn_get(s, "schema")), "gpu-profile.summary");
        CHECK_NEAR(jn_num(jn_get(s, "util_gpu_mean_pct")), 55, 0);
        CHECK_INT(jn_int(jn_get(s, "util_gpu_min_pct")), 55);
        CHECK_INT(jn_int(jn_get(s, "util_gpu_p99_pct")), 55);
        CHECK_NEAR(jn_num(jn_get(s, "util_gpu_active_pct")), 100, 0);
        CHECK_NEAR(jn_num(jn_get(s, "temp_mean_c")), 61, 0);
    }
    /* Duration across runs: what gp_run_stats_compute makes of the runs'. */
    gp_run_stats want;
    CHECK_INT(gp_run_stats_compute(d, 3, &want, NULL), GP_OK);
    check_stats(jn_get(rp, "duration_s"), 3, want.mean, want.std, want.min, want.max);
    const jn *devs = jn_get(rp, "devices");
    CHECK_INT(devs ? (long long)devs->n : -1, 1);
    const jn *dev = jn_at(devs, 0);
    CHECK_INT(jn_int(jn_get(dev, "device_index")), 0);
    check_stats(jn_get(dev, "util_gpu_mean_pct"), 3, 55, 0, 55, 55);
    check_stats(jn_get(dev, "mem_used_max_bytes"), 3, 2147483648.0, 0, 2147483648.0, 2147483648.0);
    check_stats(jn_get(dev, "temp_max_c"), 3, 61, 0, 61, 61);
    /* No run measured power: unknown, not a mean of zeros. */
    const jn *pw = jn_get(dev, "power_mean_mw");
    CHECK_INT(jn_int(jn_get(pw, "n")), 0);
    CHECK(jn_is_null(jn_get(pw, "mean")) && jn_is_null(jn_get(pw, "std")) &&
          jn_is_null(jn_get(pw, "min")) && jn_is_null(jn_get(pw, "max")));
    CHECK(jn_is_null(jn_get(jn_get(dev, "energy_j"), "mean")));
    jn_free(doc);
    free(text);
    h_result_free(&r);
}

/* The text: mean ± std and the range per metric, n/a for power, a line
 * per run. */
static void test_text(void)
{
    h_scenario(steady);
    char count[512];
    h_path(count, sizeof count, "count-text");
    const char *argv[] = {h_cli, "--ascii", "--interval", "0.001", "--repeats", "2",
                          "--",  h_child,   "count",      count,   NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(lines_of(count), 2);
    CHECK(strstr(r.err, "\n  runs              2 of 2 measured\n"
                        "                    across runs: mean +/- std (range); above: run 2's "
                        "summary\n") != NULL);
    CHECK(strstr(r.err, "\nGPU 0  NVIDIA H100 80GB HBM3\n"
                        "  util.gpu mean     55.0% +/- 0.0%  (range 55.0-55.0%)\n") != NULL);
    CHECK(strstr(r.err, "\n  temperature max   61.0 C +/- 0.0 C  (range 61.0-61.0 C)\n") != NULL);
    CHECK(strstr(r.err, "\n  power mean        n/a\n") != NULL);
    CHECK(strstr(r.err, "\n  run 1             util.gpu mean 55.0%  power mean n/a  ") != NULL);
    CHECK(strstr(r.err, "\n  run 2             util.gpu mean 55.0%  power mean n/a  ") != NULL);
    CHECK(strstr(r.err, "\n  run 3") == NULL);
    h_result_free(&r);
}

/* A run that fails ends the series: its status is the command's, the
 * runs before it are reported. */
static void test_failing_run(void)
{
    h_scenario(steady);
    char count[512], report[512];
    h_path(count, sizeof count, "count-fail");
    h_path(report, sizeof report, "fail.json");
    const char *argv[] = {h_cli, "--json", "-o",    report, "--interval", "0.001", "--repeats", "4",
                          "--",  h_child,  "count", count,  "2",          "7",     NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 7);
    CHECK_INT(lines_of(count), 2);
    char *text = check_read_file(report, NULL);
    jn *doc = text ? jn_parse(text, strlen(text), NULL) : NULL;
    const jn *rp = jn_get(doc, "repeats");
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 7);
    CHECK_INT(jn_int(jn_get(rp, "runs_done")), 2);
    const jn *runs = jn_get(rp, "runs");
    CHECK_INT(runs ? (long long)runs->n : -1, 2);
    CHECK_INT(jn_int(jn_get(jn_at(runs, 0), "exit_status")), 0);
    CHECK_INT(jn_int(jn_get(jn_at(runs, 1), "exit_status")), 7);
    jn_free(doc);
    free(text);
    h_result_free(&r);

    h_path(count, sizeof count, "count-fail-text");
    const char *argt[] = {h_cli,   "--ascii", "--repeats", "3", "--", h_child,
                          "count", count,     "1",         "9", NULL};
    h_run(argt, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 9);
    CHECK_INT(lines_of(count), 1);
    CHECK(strstr(r.err,
                 "1 of 3 measured\n"
                 "                    stopped after run 1: it exited with status 9\n") != NULL);
    h_result_free(&r);
}

/* A warmup run that fails: nothing measured, no report, its status. */
static void test_failing_warmup(void)
{
    h_scenario(steady);
    char count[512];
    h_path(count, sizeof count, "count-warmup");
    const char *argv[] = {h_cli,   "--warmup-runs", "2",   "--repeats", "2", "--",
                          h_child, "count",         count, "1",         "5", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 5);
    CHECK_INT(lines_of(count), 1);
    CHECK_STR(r.err, "gpu-profile: warmup run 1 of 2: the command exited with status 5: no run "
                     "was measured\n");
    h_result_free(&r);
}

/* Bad values and combinations: exit 125 before CMD runs, one line naming
 * the option. */
static void test_bad_options(void)
{
    static const struct {
        const char *a, *b, *c, *d;
        const char *msg;
    } cases[] = {
        {"--repeats", "0", NULL, NULL,
         "gpu-profile: --repeats: '0' is not a number of runs: use a whole number from 1 to "
         "10000\n"},
        {"--repeats", "two", NULL, NULL,
         "gpu-profile: --repeats: 'two' is not a number of runs: use a whole number from 1 to "
         "10000\n"},
        {"--repeats", "10001", NULL, NULL,
         "gpu-profile: --repeats: '10001' is not a number of runs: use a whole number from 1 "
         "to 10000\n"},
        {"--warmup-runs", "-1", NULL, NULL,
         "gpu-profile: --warmup-runs: '-1' is not a number of runs: use a whole number from 0 "
         "to 10000\n"},
        {"--repeats", "2", "--log-dir", "logs",
         "gpu-profile: --repeats / --warmup-runs measure device metrics only: leave out "
         "--log-dir (or run once)\n"},
        {"--warmup-runs", "1", "--engine", "trace",
         "gpu-profile: --repeats / --warmup-runs measure device metrics only: leave out "
         "--engine (or run once)\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char touched[512];
        h_path(touched, sizeof touched, "bad-touched");
        const char *argv[12];
        size_t n = 0;
        argv[n++] = h_cli;
        argv[n++] = cases[k].a;
        argv[n++] = cases[k].b;
        if (cases[k].c) {
            argv[n++] = cases[k].c;
            argv[n++] = cases[k].d;
        }
        argv[n++] = "--";
        argv[n++] = h_child;
        argv[n++] = "touch";
        argv[n++] = touched;
        argv[n] = NULL;
        h_result r;
        h_run(argv, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 125);
        CHECK_STR(r.err, cases[k].msg);
        CHECK(!h_exists(touched));
        h_result_free(&r);
    }
    const char *watch[] = {h_cli, "--repeats", "2", "--duration", "1", NULL};
    h_result r;
    h_run(watch, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --repeats / --warmup-runs run a command several times: give "
                     "CMD, not --duration / --pid\n");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_json();
    test_text();
    test_failing_run();
    test_failing_warmup();
    test_bad_options();
    h_cleanup();
    return check_done("test_cli_repeats");
}
