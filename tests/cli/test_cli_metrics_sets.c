/*
 * test_cli_metrics_sets.c - `gpu-profile metrics sets` and `metrics fits`
 * with the real CUPTI host library (no GPU): the engines' default sets on
 * GH100, GA100, AD102 and GB202 with exact pass counts (CUPTI 13.0.1's;
 * another CUPTI checks the shape only), what each engine schedules and
 * why a candidate is left out, a user list that fits or not and which
 * metric to drop, the JSON object against a golden, and the exit statuses
 * (125 for an unknown chip or metric, as for any bad option: docs/cli.md).  Skips (77) in a build
 * without the plugin or under a sanitizer (CUPTI's RTLD_DEEPBIND).
 */
#include "metrics_cli.h"

#define LTS_HIT "lts__t_sector_hit_rate.pct"
#define SM_ACT "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define DRAM_TPUT "dram__throughput.avg.pct_of_peak_sustained_elapsed"

static long long cupti_ver;

static int is_bool(const jn *v, int b)
{
    return v && v->t == JN_BOOL && v->b == b;
}

static const jn *engine_of(const jn *d, const char *name)
{
    const jn *es = jn_get(d, "engines");
    for (size_t i = 0; es && i < es->n; i++)
        if (jn_str(jn_get(jn_at(es, i), "engine")) &&
            strcmp(jn_str(jn_get(jn_at(es, i), "engine")), name) == 0)
            return jn_at(es, i);
    return NULL;
}

static long long cand_passes(const jn *e, const char *name)
{
    const jn *c = jn_get(e, "candidates");
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(jn_str(jn_get(jn_at(c, i), "name")), name) == 0) {
            const jn *p = jn_get(jn_at(c, i), "passes");
            return p && p->t == JN_NUM ? jn_int(p) : -1;
        }
    return -2;
}

static const char *left_reason(const jn *set, const char *name)
{
    const jn *l = jn_get(set, "left_out");
    for (size_t i = 0; l && i < l->n; i++)
        if (strcmp(jn_str(jn_get(jn_at(l, i), "name")), name) == 0)
            return jn_str(jn_get(jn_at(l, i), "reason"));
    return NULL;
}

/* The default sets per chip: sm__throughput's passes alone and the range
 * profiler's per-kernel passes (CUPTI 13.0.1), the DRAM byte alternates. */
static void test_sets_per_chip(void)
{
    static const struct {
        const char *chip;
        long long sm_tput, per_kernel;
        const char *dram_read; /* the alternate the chip has */
        const char *no_read;   /* the one it has not */
    } want[] = {
        {"GH100", 8, 8, "dram__bytes_read.sum", "dram__bytes_op_read.sum"},
        {"GA100", 5, 5, "dram__bytes_read.sum", "dram__bytes_op_read.sum"},
        {"AD102", 6, 6, "dram__bytes_read.sum", "dram__bytes_op_read.sum"},
        {"GB202", 8, 8, "dram__bytes_op_read.sum", "dram__bytes_read.sum"},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int code;
        const char *argv[] = {h_cli, "metrics", "sets", "--chip", want[k].chip, "--json", NULL};
        jn *d = run_json(argv, &code, NULL);
        CHECK_INT(code, 0);
        CHECK_STR(jn_str(jn_get(d, "command")), "sets");
        CHECK_STR(jn_str(jn_get(d, "chip")), want[k].chip);
        CHECK_INT((long long)jn_get(d, "engines")->n, 3);
        const jn *rp = engine_of(d, "RangeProfiler"), *pm = engine_of(d, "PmSampling"),
                 *sm = engine_of(d, "SassMetrics");
        CHECK(rp && pm && sm);
        CHECK_STR(jn_str(jn_get(rp, "profiler")), "range");
        CHECK_STR(jn_str(jn_get(pm, "profiler")), "pm");
        CHECK(jn_is_null(jn_get(sm, "profiler")));
        CHECK_INT((long long)jn_get(rp, "candidates")->n, 10);
        CHECK_INT(cand_passes(rp, "sm__warps_active.avg.pct_of_peak_sustained_active"), 1);
        CHECK_INT(cand_passes(rp, want[k].dram_read), 1);
        CHECK_INT(cand_passes(rp, want[k].no_read), -1);
        const jn *kern = jn_at(jn_get(rp, "sets"), 0), *scope = jn_at(jn_get(rp, "sets"), 1);
        CHECK_STR(jn_str(jn_get(kern, "mode")), "per_kernel");
        CHECK_STR(jn_str(jn_get(kern, "replay")), "kernel");
        CHECK_STR(jn_str(jn_get(scope, "mode")), "per_scope");
        CHECK_STR(jn_str(jn_get(scope, "replay")), "user");
        CHECK_INT((long long)jn_get(kern, "metrics")->n, 8);
        CHECK_INT((long long)jn_get(scope, "metrics")->n, 6);
        CHECK_INT(jn_int(jn_get(scope, "passes")), 1);
        CHECK(is_bool(jn_get(scope, "fits_one_pass"), 1));
        CHECK_CONTAINS(left_reason(scope, want[k].no_read), "not collectable by the range");
        CHECK_CONTAINS(left_reason(scope, SM_TPUT), "the set would need");
        CHECK_CONTAINS(left_reason(scope, LTS_HIT), "the set would need");
        CHECK(left_reason(kern, SM_TPUT) == NULL);
        const jn *samp = jn_at(jn_get(pm, "sets"), 0);
        CHECK_STR(jn_str(jn_get(samp, "mode")), "sampling");
        CHECK_INT((long long)jn_get(samp, "metrics")->n, 4);
        CHECK_INT(jn_int(jn_get(samp, "passes")), 1);
        CHECK_INT((long long)jn_get(jn_at(jn_get(sm, "sets"), 0), "metrics")->n, 11);
        CHECK(jn_is_null(jn_get(jn_at(jn_get(sm, "sets"), 0), "passes")));
        if (cupti_ver == 130001) {
            char line[128];
            snprintf(line, sizeof line, "%s: sm__throughput alone", want[k].chip);
            if (cand_passes(rp, SM_TPUT) != want[k].sm_tput)
                fprintf(stderr, "%s\n", line);
            CHECK_INT(cand_passes(rp, SM_TPUT), want[k].sm_tput);
            CHECK_INT(cand_passes(rp, LTS_HIT), 2);
            CHECK_INT(jn_int(jn_get(kern, "passes")), want[k].per_kernel);
            for (int i = 0; i < 4; i++)
                CHECK_INT(jn_int(jn_get(jn_at(jn_get(pm, "candidates"), (size_t)i), "passes")), 1);
        }
        jn_free(d);
    }
}

static void test_sets_golden_and_text(void)
{
    int code;
    char *raw = NULL;
    const char *argv[] = {h_cli,      "metrics",    "sets",   "--chip=gh100",
                          "--engine", "pmsampling", "--json", NULL};
    jn *d = run_json(argv, &code, &raw);
    CHECK_INT(code, 0);
    CHECK_INT((long long)jn_get(d, "engines")->n, 1);
    jn_free(d);
    if (cupti_ver == 130001 && raw)
        check_golden("metrics/sets_gh100_pmsampling.json", raw, "test_cli_metrics_sets");
    free(raw);
    const char *rp[] = {h_cli,      "metrics",       "sets",   "--chip", "GH100",
                        "--engine", "rangeprofiler", "--json", NULL};
    d = run_json(rp, &code, &raw);
    CHECK_INT(code, 0);
    jn_free(d);
    if (cupti_ver == 130001 && raw)
        check_golden("metrics/sets_gh100_rangeprofiler.json", raw, "test_cli_metrics_sets");
    free(raw);

    h_result r;
    const char *text[] = {h_cli, "metrics", "sets", "--chip", "GB202", "--engine", "range", NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "RangeProfiler on GB202 (range profiler): 10 candidates\n");
    CHECK_CONTAINS(r.out, "per_scope (user replay, one pass required): 6 metrics in 1 pass\n");
    CHECK_CONTAINS(r.out, "  + dram__bytes_op_read.sum\n");
    CHECK_CONTAINS(r.out,
                   "  - dram__bytes_read.sum: not collectable by the range profiler on GB202");
    h_result_free(&r);
    const char *sass[] = {h_cli,   "metrics",  "sets",        "--chip",
                          "AD102", "--engine", "sassmetrics", NULL};
    h_run(sass, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "SassMetrics: 11 metrics (patched instructions, no passes)\n");
    CHECK_CONTAINS(r.out, "  smsp__sass_inst_executed\n");
    CHECK_CONTAINS(r.out, "on the device when the session starts");
    h_result_free(&r);
}

static void test_fits(void)
{
    int code;
    /* fits: two PM metrics */
    const char *ok[] = {h_cli,        "metrics", "fits",
                        "--chip",     "GA100",   "--engine",
                        "pmsampling", "--json",  SM_ACT "," DRAM_TPUT,
                        NULL};
    jn *d = run_json(ok, &code, NULL);
    CHECK_INT(code, 0);
    CHECK_STR(jn_str(jn_get(d, "command")), "fits");
    CHECK_STR(jn_str(jn_get(d, "engine")), "PmSampling");
    CHECK_INT(jn_int(jn_get(d, "passes")), 1);
    CHECK(is_bool(jn_get(d, "fits_one_pass"), 1));
    CHECK_INT((long long)jn_get(jn_get(d, "engine_schedules"), "metrics")->n, 2);
    CHECK(jn_is_null(jn_get(d, "engine_refuses")));
    jn_free(d);

    /* does not fit: sm__throughput is the one to drop; PM sampling refuses */
    char *raw = NULL;
    const char *no[] = {h_cli,      "metrics", "fits",   "--chip", "GH100",
                        "--engine", "pm",      "--json", SM_ACT,   DRAM_TPUT "," SM_TPUT,
                        NULL};
    d = run_json(no, &code, &raw);
    CHECK_INT(code, 0);
    CHECK(is_bool(jn_get(d, "fits_one_pass"), 0));
    CHECK_INT((long long)jn_get(d, "drop_one_of")->n, 1);
    CHECK_STR(jn_str(jn_at(jn_get(d, "drop_one_of"), 0)), SM_TPUT);
    CHECK_INT((long long)jn_get(d, "keep_in_order")->n, 2);
    CHECK(jn_is_null(jn_get(d, "engine_schedules")));
    CHECK_CONTAINS(jn_str(jn_get(d, "engine_refuses")), "PM sampling collects one");
    if (cupti_ver == 130001) {
        CHECK_INT(jn_int(jn_get(d, "passes")), 19);
        check_golden("metrics/fits_gh100_pm.json", raw, "test_cli_metrics_sets");
    }
    free(raw);
    jn_free(d);

    /* the range profiler cuts a per-scope list to one pass itself */
    const char *rp[] = {h_cli,
                        "metrics",
                        "fits",
                        "--chip",
                        "AD102",
                        "--engine",
                        "rangeprofiler",
                        "--json",
                        SM_TPUT "," LTS_HIT ",dram__bytes_read.sum",
                        NULL};
    d = run_json(rp, &code, NULL);
    CHECK_INT(code, 0);
    CHECK(is_bool(jn_get(d, "fits_one_pass"), 0));
    CHECK_INT((long long)jn_get(d, "drop_one_of")->n, 0);
    const jn *s = jn_get(jn_get(d, "engine_schedules"), "metrics");
    CHECK_INT((long long)s->n, 1);
    CHECK_STR(jn_str(jn_at(s, 0)), "dram__bytes_read.sum");
    CHECK_INT(jn_int(jn_get(jn_get(d, "engine_schedules"), "passes")), 1);
    if (cupti_ver == 130001)
        CHECK_INT(jn_int(jn_get(d, "passes")), 6);
    jn_free(d);

    h_result r;
    const char *text[] = {h_cli,        "metrics",          "fits", "--chip", "GH100", "--engine",
                          "pmsampling", SM_ACT "," SM_TPUT, NULL};
    h_run(text, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "fits one pass    no\n");
    CHECK_CONTAINS(r.out, "(drop this one and the rest fit one pass)");
    CHECK_CONTAINS(r.out, "  - " SM_TPUT "\n");
    CHECK_CONTAINS(r.out, "PmSampling refuses the list: ");
    h_result_free(&r);
}

static void test_errors(void)
{
    h_result r;
    const char *noeng[] = {h_cli, "metrics", "fits", "--chip", "GH100", SM_ACT, NULL};
    h_run(noeng, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "'fits' needs --engine rangeprofiler or pmsampling");
    h_result_free(&r);
    const char *sass[] = {h_cli,      "metrics", "fits", "--chip", "GH100",
                          "--engine", "sass",    "x",    NULL};
    h_run(sass, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "SASS metrics need no passes");
    h_result_free(&r);
    const char *badeng[] = {h_cli, "metrics", "sets", "--chip", "GH100", "--engine", "pcs", NULL};
    h_run(badeng, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--engine must be rangeprofiler, pmsampling or sassmetrics, not 'pcs'");
    h_result_free(&r);
    const char *prof[] = {h_cli, "metrics", "sets", "--chip", "GH100", "--profiler", "pm", NULL};
    h_run(prof, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    h_result_free(&r);
    const char *names[] = {h_cli, "metrics", "sets", "--chip", "GH100", SM_ACT, NULL};
    h_run(names, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    h_result_free(&r);
    const char *nonames[] = {h_cli,      "metrics", "fits", "--chip", "GH100",
                             "--engine", "pm",      ",",    NULL};
    h_run(nonames, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "names no metric");
    h_result_free(&r);
    const char *badchip[] = {h_cli, "metrics", "sets", "--chip", "XX100", NULL};
    h_run(badchip, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "'XX100'");
    h_result_free(&r);
    const char *badname[] = {h_cli,   "metrics",  "fits", "--chip",
                             "GH100", "--engine", "pm",   SM_ACT ",smsp__sass_inst_executed.sum",
                             NULL};
    h_run(badname, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "PmSampling cannot take 'smsp__sass_inst_executed.sum' on GH100");
    CHECK_CONTAINS(r.err, "gpu-profile metrics list --profiler pm --chip GH100");
    h_result_free(&r);
    const char *help[] = {h_cli, "metrics", "--help", NULL};
    h_run(help, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "gpu-profile metrics sets [--chip CHIP] [--engine ENGINE] [--json]");
    CHECK_CONTAINS(r.out, "gpu-profile metrics fits");
    h_result_free(&r);
}

int main(void)
{
    int skip = metrics_cli_start();
    if (skip)
        return skip;
    int code;
    const char *chips[] = {h_cli, "metrics", "chips", "--json", NULL};
    jn *d = run_json(chips, &code, NULL);
    cupti_ver = jn_int(jn_get(d, "cupti_version"));
    jn_free(d);
    test_sets_per_chip();
    test_sets_golden_and_text();
    test_fits();
    test_errors();
    h_cleanup();
    return check_done("test_cli_metrics_sets");
}
