/*
 * tests/sampler/nvml_open.h - the NVML backend over the fake NVML as the
 * backend tests open it: the scenario file tests/scenarios/NAME (through
 * FAKE_NVML_SCENARIO), a 5 s call bound, started at a 100 ms interval.
 * Include after check.h and sampler/backends/backend.h.
 */
#ifndef GP_TEST_NVML_OPEN_H
#define GP_TEST_NVML_OPEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void nvml_use_scenario(const char *src_dir, const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", src_dir, name);
    setenv("FAKE_NVML_SCENARIO", path, 1);
}

/* buf = $GP_TEST_BINARY_DIR (else /tmp) / nvml-NAME-stats-PID.txt: where
 * the fake writes its call counts when FAKE_NVML_STATS names it. */
static inline void nvml_stats_path(char *buf, size_t len, const char *name)
{
    const char *dir = getenv("GP_TEST_BINARY_DIR");
    snprintf(buf, len, "%s/nvml-%s-stats-%ld.txt", dir ? dir : "/tmp", name, (long)getpid());
}

/* The backend opened over lib (a fake NVML build) with the scenario; NULL
 * (after a failed CHECK saying why) when it did not open. */
static inline void *nvml_open(const char *src_dir, const char *scenario, const char *lib)
{
    nvml_use_scenario(src_dir, scenario);
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.nvml_library = lib;
    cfg.timeout_ns = 5000000000ull;
    void *ctx = NULL;
    gp_error err;
    gp_error_clear(&err);
    CHECK_INT(gp_backend_nvml.open(&cfg, &ctx, &err), GP_OK);
    if (!ctx)
        fprintf(stderr, "  open: %s\n", err.message);
    return ctx;
}

/* nvml_open, then started on idx[0..n). */
static inline void *nvml_open_start(const char *src_dir, const char *scenario, const char *lib,
                                    const unsigned *idx, size_t n)
{
    void *ctx = nvml_open(src_dir, scenario, lib);
    if (!ctx)
        return NULL;
    gp_error err;
    CHECK_INT(gp_backend_nvml.start(ctx, idx, n, 100000000ull, &err), GP_OK);
    return ctx;
}

#endif
