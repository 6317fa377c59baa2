/*
 * test_cli_metrics.c - `gpu-profile metrics chips|list|describe|passes`
 * end to end with the real CUPTI host library (no GPU needed): the built
 * command finds the plugin beside itself, its --json objects are parsed
 * back, and bad options and unknown chips or metrics give their exit
 * statuses (125: a name CUPTI does not know is a bad value) and messages.  Skips (77) in a build
 * without the plugin.
 */
#include "metrics_cli.h"

static int arr_has(const jn *a, const char *s)
{
    for (size_t i = 0; a && i < a->n; i++)
        if (jn_str(jn_at(a, i)) && strcmp(jn_str(jn_at(a, i)), s) == 0)
            return 1;
    return 0;
}

static void check_head(const jn *d, const char *cmd)
{
    CHECK_STR(jn_str(jn_get(d, "schema")), "gpu-profile.metrics");
    CHECK_INT(jn_int(jn_get(d, "schema_version")), 1);
    CHECK_STR(jn_str(jn_get(d, "command")), cmd);
    CHECK(jn_int(jn_get(d, "cupti_version")) > 0);
}

static void test_chips(void)
{
    int code;
    const char *argv[] = {h_cli, "metrics", "chips", "--json", NULL};
    jn *d = run_json(argv, &code, NULL);
    CHECK_INT(code, 0);
    check_head(d, "chips");
    const jn *c = jn_get(d, "chips");
    CHECK(arr_has(c, "GH100"));
    CHECK(arr_has(c, "GA100"));
    CHECK(arr_has(c, "AD102"));
    jn_free(d);

    h_result r;
    const char *text[] = {h_cli, "metrics", "chips", NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "\nGH100\n");
    h_result_free(&r);
}

static void test_list(void)
{
    int code;
    const char *argv[] = {h_cli,        "metrics", "list",  "--chip", "GH100", "--type",
                          "throughput", "--grep",  "^sm__", "--json", NULL};
    jn *d = run_json(argv, &code, NULL);
    CHECK_INT(code, 0);
    check_head(d, "list");
    CHECK_STR(jn_str(jn_get(d, "chip")), "GH100");
    CHECK_STR(jn_str(jn_get(d, "profiler")), "range");
    const jn *m = jn_get(d, "metrics");
    CHECK(m && m->t == JN_ARR && m->n > 0);
    int found = 0;
    for (size_t i = 0; m && i < m->n; i++) {
        const char *name = jn_str(jn_get(jn_at(m, i), "name"));
        CHECK(name && strncmp(name, "sm__", 4) == 0);
        CHECK_STR(jn_str(jn_get(jn_at(m, i), "type")), "throughput");
        found |= name && strcmp(name, "sm__throughput") == 0;
    }
    CHECK(found);
    jn_free(d);

    /* every type, both profilers, non-empty */
    const char *types[] = {"counter", "ratio", "throughput"};
    const char *profs[] = {"range", "pm"};
    for (int p = 0; p < 2; p++)
        for (int t = 0; t < 3; t++) {
            const char *a[] = {h_cli,    "metrics",    "list",   "--chip=gh100", "--type",
                               types[t], "--profiler", profs[p], "--json",       NULL};
            d = run_json(a, &code, NULL);
            CHECK_INT(code, 0);
            CHECK_STR(jn_str(jn_get(d, "profiler")), profs[p]);
            m = jn_get(d, "metrics");
            CHECK(m && m->n > 0);
            jn_free(d);
        }

    h_result r;
    const char *text[] = {h_cli,   "metrics", "list",          "--chip",
                          "GH100", "--grep",  "^dram__bytes$", NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "dram__bytes ");
    CHECK_CONTAINS(r.out, "counter");
    CHECK_CONTAINS(r.out, "1 metrics (GH100, range profiler)");
    h_result_free(&r);
}

static void test_describe(void)
{
    int code;
    const char *argv[] = {h_cli,   "metrics", "describe", "--chip",
                          "GH100", "--json",  SM_TPUT,    "gpu__time_duration.sum",
                          NULL};
    jn *d = run_json(argv, &code, NULL);
    CHECK_INT(code, 0);
    check_head(d, "describe");
    const jn *m = jn_get(d, "metrics");
    CHECK(m && m->n == 2);
    const jn *a = jn_at(m, 0);
    CHECK_STR(jn_str(jn_get(a, "name")), SM_TPUT);
    CHECK_STR(jn_str(jn_get(a, "type")), "throughput");
    CHECK_STR(jn_str(jn_get(a, "dim_unit")), "percent");
    CHECK_STR(jn_str(jn_get(a, "hw_unit")), "sm");
    CHECK(jn_str(jn_get(a, "description")) && strlen(jn_str(jn_get(a, "description"))) > 10);
    CHECK(jn_str(jn_get(a, "collection_scope")) != NULL);
    CHECK(arr_has(jn_get(a, "sub_metrics"), ".avg.pct_of_peak_sustained_elapsed"));
    CHECK_STR(jn_str(jn_get(jn_at(m, 1), "type")), "counter");
    jn_free(d);

    h_result r;
    const char *text[] = {h_cli, "metrics", "describe", "--chip", "GH100", SM_TPUT, NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "  type         throughput\n");
    CHECK_CONTAINS(r.out, "  unit         percent\n");
    h_result_free(&r);
}

static void test_passes(void)
{
    int code;
    const char *argv[] = {h_cli, "metrics", "passes", "--chip", "GH100", "--json", SM_TPUT, NULL};
    jn *d = run_json(argv, &code, NULL);
    CHECK_INT(code, 0);
    check_head(d, "passes");
    long long p_one = jn_int(jn_get(d, "passes"));
    CHECK(p_one >= 1);
    CHECK(jn_int(jn_get(d, "config_image_bytes")) > 0);
    CHECK(jn_int(jn_get(d, "max_hw_metrics_per_pass")) > 0);
    CHECK(arr_has(jn_get(d, "metrics"), SM_TPUT));
    long long ver = jn_int(jn_get(d, "cupti_version"));
    jn_free(d);
    const char *tri[] = {
        h_cli, "metrics", "passes", "--chip", "GH100", "--json", "TriageCompute." SM_TPUT, NULL};
    d = run_json(tri, &code, NULL);
    CHECK_INT(code, 0);
    long long p_tri = jn_int(jn_get(d, "passes"));
    CHECK(p_tri >= 1 && p_tri < p_one);
    if (ver == 130001) {
        CHECK_INT(p_one, 8);
        CHECK_INT(p_tri, 2);
    }
    jn_free(d);

    h_result r;
    const char *text[] = {h_cli, "metrics", "passes", "--chip", "GH100", SM_TPUT, NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "passes");
    CHECK_CONTAINS(r.out, "config image");
    h_result_free(&r);
}

static void test_errors(void)
{
    h_result r;
    const char *nochip[] = {h_cli, "metrics", "list", NULL};
    h_run(nochip, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "no --chip given");
    CHECK_CONTAINS(r.err, "pass --chip");
    h_result_free(&r);

    const char *badchip[] = {h_cli, "metrics", "list", "--chip", "XX100", NULL};
    h_run(badchip, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "'XX100'");
    CHECK_CONTAINS(r.err, "not supported");
    h_result_free(&r);

    const char *badname[] = {h_cli, "metrics", "describe", "--chip", "GH100", "no__such.sum", NULL};
    h_run(badname, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "'no__such.sum'");
    h_result_free(&r);

    const char *pm[] = {h_cli,   "metrics",    "passes", "--chip",
                        "GH100", "--profiler", "pm",     "smsp__sass_inst_executed.sum",
                        NULL};
    h_run(pm, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "not available for PM sampling");
    h_result_free(&r);

    const char *badtype[] = {h_cli, "metrics", "list", "--chip", "GH100", "--type", "x", NULL};
    h_run(badtype, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--type");
    h_result_free(&r);

    const char *badprof[] = {h_cli, "metrics", "list", "--chip", "GH100", "--profiler", "y", NULL};
    h_run(badprof, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    h_result_free(&r);

    const char *badre[] = {h_cli, "metrics", "list", "--chip", "GH100", "--grep", "(", NULL};
    h_run(badre, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--grep");
    h_result_free(&r);

    const char *nonames[] = {h_cli, "metrics", "passes", "--chip", "GH100", NULL};
    h_run(nonames, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    h_result_free(&r);

    const char *badsub[] = {h_cli, "metrics", "frob", NULL};
    h_run(badsub, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "unknown subcommand 'frob'");
    h_result_free(&r);

    const char *help[] = {h_cli, "metrics", "--help", NULL};
    h_run(help, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "gpu-profile metrics passes");
    h_result_free(&r);

    /* a plugin that is not there: exit 1 and the loader's message */
    const char *env[] = {"GPUFL_CUPTI_PLUGIN=/nonexistent/libgpuprofile_cupti.so", NULL};
    const char *chips[] = {h_cli, "metrics", "chips", NULL};
    h_run(chips, env, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "GPUFL_CUPTI_PLUGIN");
    h_result_free(&r);
}

int main(void)
{
    int skip = metrics_cli_start();
    if (skip)
        return skip;
    test_chips();
    test_list();
    test_describe();
    test_passes();
    test_errors();
    h_cleanup();
    return check_done("test_cli_metrics");
}
