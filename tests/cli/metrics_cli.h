/*
 * metrics_cli.h - what the `gpu-profile metrics` tests share
 * (test_cli_metrics.c, test_cli_metrics_sets.c): whether they can run here
 * (the plugin beside the command, no sanitizer: CUPTI's host API dlopens
 * libnvperf_host.so with RTLD_DEEPBIND, which the ASan and TSan runtimes
 * refuse), and a command run whose stdout is parsed as JSON.
 */
#ifndef GP_TEST_METRICS_CLI_H
#define GP_TEST_METRICS_CLI_H

#include "harness.h"
#include "json_mini.h"

#include <libgen.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GP_SANITIZED_SKIP 1
#else
#define GP_SANITIZED_SKIP 0
#endif

#define SM_TPUT "sm__throughput.avg.pct_of_peak_sustained_elapsed"

/* h_init, then 0 when the tests can run; 77 (after saying why) when the
 * build is sanitized or has no plugin beside the command. */
static inline int metrics_cli_start(void)
{
    if (GP_SANITIZED_SKIP) {
        printf("skipped: CUPTI loads libnvperf_host.so with RTLD_DEEPBIND, which this "
               "sanitizer build's runtime refuses\n");
        return 77;
    }
    h_init();
    char dir[4096], plugin[4200];
    snprintf(dir, sizeof dir, "%s", h_cli);
    snprintf(plugin, sizeof plugin, "%s/libgpuprofile_cupti.so", dirname(dir));
    if (access(plugin, R_OK) != 0) {
        printf("skipped: this build has no CUPTI plugin (%s)\n", plugin);
        h_cleanup();
        return 77;
    }
    unsetenv("GPUFL_CUPTI_PLUGIN");
    return 0;
}

/* Runs argv: its exit status into *code, its stdout parsed (NULL, and a
 * failed check, when it is not JSON); raw (may be NULL): a copy of stdout. */
static inline jn *run_json(const char *const *argv, int *code, char **raw)
{
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    *code = r.code;
    const char *why = NULL;
    jn *doc = jn_parse(r.out, r.out_len, &why);
    if (!doc)
        fprintf(stderr, "not JSON (%s):\n%s\nstderr: %s\n", why ? why : "?", r.out, r.err);
    CHECK(doc != NULL);
    if (raw)
        *raw = strdup(r.out);
    h_result_free(&r);
    return doc;
}

#endif /* GP_TEST_METRICS_CLI_H */
