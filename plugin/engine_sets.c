/*
 * engine_sets.c - the engines' metric sets for `gpu-profile metrics sets`
 * and `fits` (the metrics table's engine_defaults and engine_choose,
 * src/abi/metrics_abi.h).
 *
 * Promises: the lists are the engines' own (each row's defaults, defined
 * once, in the engine's folder), and what a set schedules on a chip is
 * decided by the engine's own code (its choose) over the Profiler Host
 * API, so the command shows what a session would collect.  An engine is
 * found by its metrics-table number (metrics_id); one without a host side
 * (SASS metrics) says why in its choose.
 */
#include "../src/abi/metrics_abi.h"
#include "../src/util/error.h"
#include "engines/engine.h"
#include "gpu_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const gp_metrics_plugin gpufl_cupti_metrics_v1;

gp_status fl_engine_defaults(int engine, char ***out, size_t *n, unsigned *slots, size_t cap,
                             gp_error *err);
gp_status fl_engine_choose(void *host, int engine, const char *chip, const char *list, int one_pass,
                           char ***out, size_t *n, size_t *passes, gp_error *err);

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

/* The row whose metrics-table number is id; NULL (GP_ERR_INVALID_ARG,
 * err saying the numbers) when none is. */
static const fl_engine *find(int id, gp_error *err)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (fl_engines[i]->metrics_id >= 0 && fl_engines[i]->metrics_id == id)
            return fl_engines[i];
    if (!err)
        return NULL;
    err->status = GP_ERR_INVALID_ARG;
    char *msg = err->message;
    size_t len = sizeof err->message;
    size_t at = (size_t)snprintf(msg, len, "unknown engine %d:", id);
    for (int k = 0; at < len; k++) {
        const fl_engine *e = NULL;
        for (size_t i = 0; i < fl_n_engines && !e; i++)
            if (fl_engines[i]->metrics_id == k)
                e = fl_engines[i];
        if (!e)
            break;
        int w = snprintf(msg + at, len - at, "%s %d (%s)", k ? "," : "", k, e->name);
        at += w > 0 ? (size_t)w : 0;
    }
    return NULL;
}

gp_status fl_engine_defaults(int engine, char ***out, size_t *n, unsigned *slots, size_t cap,
                             gp_error *err)
{
    const char *names[64];
    unsigned slot[64];
    *out = NULL;
    *n = 0;
    const fl_engine *e = find(engine, err);
    if (!e)
        return GP_ERR_INVALID_ARG;
    size_t k = e->defaults(names, slot, 64);
    if (slots && cap < k)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "the slots array holds %zu entries, the set has %zu", cap, k);
    if (!(*out = block(names, k)))
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the engine's metric list");
    if (slots)
        memcpy(slots, slot, k * sizeof *slot);
    *n = k;
    return GP_OK;
}

typedef struct chosen {
    char **out;
    size_t n, passes;
    bool taken;
} chosen;

static void take(void *user, const char *const *names, size_t n, size_t passes)
{
    chosen *c = user;
    c->taken = true;
    c->out = block(names, n);
    c->n = n;
    c->passes = passes;
}

gp_status fl_engine_choose(void *host, int engine, const char *chip, const char *list, int one_pass,
                           char ***out, size_t *n, size_t *passes, gp_error *err)
{
    *out = NULL;
    *n = 0;
    *passes = 0;
    const fl_engine *e = find(engine, err);
    if (!e)
        return GP_ERR_INVALID_ARG;
    chosen c = {0};
    gp_error scratch = {0}; /* an engine's hook fills it even when err is NULL */
    gp_status st = e->choose(&gpufl_cupti_metrics_v1, host, chip, list, one_pass != 0, take, &c,
                             err ? err : &scratch);
    if (st != GP_OK) {
        if (err)
            err->status = st;
        return st;
    }
    if (c.taken && !c.out)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the engine's metric list");
    *out = c.out;
    *n = c.n;
    *passes = c.passes;
    return GP_OK;
}
