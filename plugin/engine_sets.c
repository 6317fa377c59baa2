/*
 * engine_sets.c - the engines' metric sets for `gpu-profile metrics sets`
 * and `fits` (the metrics table's engine_defaults and engine_choose,
 * src/abi/metrics_abi.h).
 *
 * Promises: the lists are the engines' own (fl_rp_default_set,
 * fl_pms_default_metrics, fl_sass_metric_names: defined once, in the
 * engines' files), and what a set schedules on a chip is decided by the
 * engines' own code (fl_rp_choose, fl_pms_metric_set) over the Profiler
 * Host API, so the command shows what a session would collect.  SASS
 * metrics have no host side (CUPTI's SASS metric list needs a device):
 * engine_choose refuses them with that reason.
 */
#include "../src/abi/metrics_abi.h"
#include "gpu_profile.h"
#include "pmsamp.h"
#include "rangeprof.h"
#include "sassmetrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const gp_metrics_plugin gpufl_cupti_metrics_v1;

int fl_engine_defaults(int engine, char ***out, size_t *n, unsigned *slots, size_t cap, char *msg,
                       size_t len);
int fl_engine_choose(void *host, int engine, const char *chip, const char *list, int one_pass,
                     char ***out, size_t *n, size_t *passes, char *msg, size_t len);

enum { ENGINE_RANGE = 0, ENGINE_PM = 1, ENGINE_SASS = 2 };

/* One malloc'd block: n+1 pointers, then the strings (the table's rule). */
static char **block(const char *const *names, size_t n)
{
    size_t bytes = (n + 1) * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(names[i]) + 1;
    char **v = malloc(bytes);
    if (!v)
        return NULL;
    char *p = (char *)(v + n + 1);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]) + 1;
        memcpy(p, names[i], l);
        v[i] = p;
        p += l;
    }
    v[n] = NULL;
    return v;
}

int fl_engine_defaults(int engine, char ***out, size_t *n, unsigned *slots, size_t cap, char *msg,
                       size_t len)
{
    const char *names[64];
    unsigned slot[64];
    size_t k = 0;
    *out = NULL;
    *n = 0;
    if (engine == ENGINE_RANGE) {
        for (unsigned s = 0; s < FL_RP_DEFAULT_SLOTS; s++)
            for (int c = 0; c < 3 && fl_rp_default_set[s][c]; c++) {
                slot[k] = s;
                names[k++] = fl_rp_default_set[s][c];
            }
    } else if (engine == ENGINE_PM) {
        for (size_t i = 0; i < fl_pms_n_default_metrics && k < 64; i++) {
            slot[k] = (unsigned)i;
            names[k++] = fl_pms_default_metrics[i];
        }
    } else if (engine == ENGINE_SASS) {
        for (size_t i = 0; i < fl_sass_n_metric_names && k < 64; i++) {
            slot[k] = (unsigned)i;
            names[k++] = fl_sass_metric_names[i];
        }
    } else {
        snprintf(msg, len, "unknown engine %d: 0 (RangeProfiler), 1 (PmSampling), 2 (SassMetrics)",
                 engine);
        return GP_ERR_INVALID_ARG;
    }
    if (slots && cap < k) {
        snprintf(msg, len, "the slots array holds %zu entries, the set has %zu", cap, k);
        return GP_ERR_INVALID_ARG;
    }
    if (!(*out = block(names, k))) {
        snprintf(msg, len, "out of memory for the engine's metric list");
        return GP_ERR_NO_MEMORY;
    }
    if (slots)
        memcpy(slots, slot, k * sizeof *slot);
    *n = k;
    return 0;
}

static int pm_choose(void *host, const char *chip, const char *list, char ***out, size_t *n,
                     size_t *passes, char *msg, size_t len)
{
    fl_pms_api a = {.host = &gpufl_cupti_metrics_v1};
    char **names = NULL;
    uint8_t *img = NULL;
    size_t k = 0, size = 0;
    if (fl_pms_metric_set(&a, host, chip, list, &names, &k, &img, &size, msg, len) != 0)
        return GP_ERR_INVALID_ARG;
    int st = gpufl_cupti_metrics_v1.passes(img, size, passes, msg, len);
    free(img);
    if (st == 0 && !(*out = block((const char *const *)names, k))) {
        snprintf(msg, len, "out of memory for the engine's metric list");
        st = GP_ERR_NO_MEMORY;
    }
    if (st == 0)
        *n = k;
    fl_pms_free_metrics(names, k);
    return st;
}

int fl_engine_choose(void *host, int engine, const char *chip, const char *list, int one_pass,
                     char ***out, size_t *n, size_t *passes, char *msg, size_t len)
{
    *out = NULL;
    *n = 0;
    *passes = 0;
    if (engine == ENGINE_PM)
        return pm_choose(host, chip, list, out, n, passes, msg, len);
    if (engine == ENGINE_SASS) {
        snprintf(msg, len,
                 "SASS metrics have no host side: CUPTI checks them on the device when the session "
                 "starts (cuptiSassMetricsGetProperties), and they need no passes");
        return GP_ERR_NOT_SUPPORTED;
    }
    if (engine != ENGINE_RANGE) {
        snprintf(msg, len, "unknown engine %d: 0 (RangeProfiler), 1 (PmSampling), 2 (SassMetrics)",
                 engine);
        return GP_ERR_INVALID_ARG;
    }
    fl_rp_choice c;
    int st = fl_rp_choose(&gpufl_cupti_metrics_v1, host, list, one_pass != 0, &c, msg, len);
    if (st != 0)
        return st;
    if (!(*out = block((const char *const *)c.names, c.n))) {
        snprintf(msg, len, "out of memory for the engine's metric list");
        st = GP_ERR_NO_MEMORY;
    } else {
        *n = c.n;
        *passes = c.passes;
    }
    fl_rp_choice_free(&c);
    return st;
}
