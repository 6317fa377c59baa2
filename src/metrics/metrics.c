/*
 * metrics/metrics.c - gp_metrics_* (include/gpu_metrics.h): the host side of
 * hardware-counter profiling, served by the CUPTI plugin's second table
 * (gpufl_cupti_metrics_v1, src/abi/metrics_abi.h).  The plugin is loaded
 * once per process (abi/plugin.c) on the first call; without it every call
 * answers GP_ERR_NOT_SUPPORTED with the loader's message.  Everything CUPTI
 * says comes back as a status and a message; nothing is printed.
 */
#include "../abi/metrics_abi.h"
#include "../abi/plugin.h"
#include "../util/error.h"
#include "gpu_metrics.h"
#include "gpu_profile.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gp_metrics_host {
    const gp_metrics_plugin *p;
    void *obj; /* the plugin's cached entry */
    char chip[64];
    gp_metrics_profiler profiler;
    gp_metrics_abi_props *props; /* the last properties handed out */
};

#define MSG_MAX GP_ERROR_MESSAGE_MAX

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const gp_metrics_plugin *g_plugin;
static gp_error g_load_err;

static void load_once(void)
{
    g_plugin = gp_metrics_plugin_load(&g_load_err);
}

static const gp_metrics_plugin *plugin(gp_error *err)
{
    pthread_once(&g_once, load_once);
    if (!g_plugin)
        gp_error_set(err, GP_ERR_NOT_SUPPORTED, "hardware metrics are not available: %s",
                     g_load_err.message);
    return g_plugin;
}

/* A chip named and the plugin loaded: its table into *p. */
static gp_status chip_plugin(const char *chip, const gp_metrics_plugin **p, gp_error *err)
{
    if (!chip || !*chip)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no chip name given");
    *p = plugin(err);
    return *p ? GP_OK : GP_ERR_NOT_SUPPORTED;
}

/* Maps a plugin status and message into err. */
static gp_status answer(int st, const char *msg, gp_error *err)
{
    if (st == GP_OK) {
        gp_error_clear(err);
        return GP_OK;
    }
    return gp_error_set(err, (gp_status)st, "%s", msg[0] ? msg : gp_strerror((gp_status)st));
}

/* A call of the plugin's table with an error of its own, its status and
 * message answered into err: every call of the table the same way. */
#define ASK(fn, ...)                                                                               \
    do {                                                                                           \
        gp_error pe_ = {0};                                                                        \
        return answer(fn(__VA_ARGS__, &pe_), pe_.message, err);                                    \
    } while (0)

/* The same for a call about a chip: the chip named and the plugin loaded
 * first. */
#define ASK_CHIP(chip, call, ...)                                                                  \
    do {                                                                                           \
        const gp_metrics_plugin *p_ = NULL;                                                        \
        gp_status st_ = chip_plugin(chip, &p_, err);                                               \
        if (st_ != GP_OK)                                                                          \
            return st_;                                                                            \
        ASK(p_->call, __VA_ARGS__);                                                                \
    } while (0)

static gp_status need(const void *ptr, const char *what, gp_error *err)
{
    if (!ptr)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "%s is NULL", what);
    return GP_OK;
}

/* names[v]; NULL for a value this version does not know. */
static const char *name_in(const char *const *names, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? names[v] : NULL;
}
#define NAME_IN(names, v) name_in(names, sizeof names / sizeof *names, (int)(v))

const char *gp_metric_type_name(gp_metric_type t)
{
    static const char *const names[] = {[GP_METRIC_COUNTER] = "counter",
                                        [GP_METRIC_RATIO] = "ratio",
                                        [GP_METRIC_THROUGHPUT] = "throughput"};
    return NAME_IN(names, t);
}

const char *gp_metrics_profiler_name(gp_metrics_profiler p)
{
    static const char *const names[] = {
        [GP_METRICS_RANGE] = "range", [GP_METRICS_PM_SAMPLING] = "pm"};
    return NAME_IN(names, p);
}

const char *gp_metric_scope_name(gp_metric_scope s)
{
    static const char *const names[] = {[GP_METRIC_SCOPE_CONTEXT] = "context",
                                        [GP_METRIC_SCOPE_DEVICE] = "device",
                                        [GP_METRIC_SCOPE_INVALID] = "invalid",
                                        [GP_METRIC_SCOPE_UNKNOWN] = "unknown"};
    return NAME_IN(names, s);
}

void gp_metrics_free_list(char **list)
{
    free(list);
}

void gp_metrics_free_image(uint8_t *image)
{
    free(image);
}

uint32_t gp_metrics_cupti_version(void)
{
    const gp_metrics_plugin *p = plugin(NULL);
    return p ? p->cupti_version() : 0;
}

size_t gp_metrics_release_cache(void)
{
    const gp_metrics_plugin *p = plugin(NULL);
    return p ? p->release_all() : 0;
}

/* Clears the out-parameters of a list call and checks them. */
static gp_status list_args(char ***out, size_t *n, gp_error *err)
{
    if (!out || !n)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "the list out-parameters are NULL");
    *out = NULL;
    *n = 0;
    return GP_OK;
}

gp_status gp_metrics_chips(char ***out, size_t *n, gp_error *err)
{
    if (list_args(out, n, err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    const gp_metrics_plugin *p = plugin(err);
    if (!p)
        return GP_ERR_NOT_SUPPORTED;
    ASK(p->chips, out, n);
}

gp_status gp_metrics_host_create(const char *chip, gp_metrics_profiler profiler,
                                 gp_metrics_host **out, gp_error *err)
{
    if (!out)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "the host out-parameter is NULL");
    *out = NULL;
    if (!chip || !*chip)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no chip name given");
    if (profiler != GP_METRICS_RANGE && profiler != GP_METRICS_PM_SAMPLING)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "profiler type %d is neither GP_METRICS_RANGE nor "
                            "GP_METRICS_PM_SAMPLING",
                            (int)profiler);
    const gp_metrics_plugin *p = plugin(err);
    if (!p)
        return GP_ERR_NOT_SUPPORTED;
    gp_metrics_host *h = calloc(1, sizeof *h);
    if (!h)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for a metrics host");
    gp_error pe = {0};
    int st = p->acquire(chip, (int)profiler, &h->obj, h->chip, sizeof h->chip, &pe);
    if (st != GP_OK) {
        free(h);
        return answer(st, pe.message, err);
    }
    h->p = p;
    h->profiler = profiler;
    *out = h;
    gp_error_clear(err);
    return GP_OK;
}

void gp_metrics_host_destroy(gp_metrics_host *h)
{
    if (!h)
        return;
    h->p->release(h->obj);
    free(h->props);
    free(h);
}

const char *gp_metrics_host_chip(const gp_metrics_host *h)
{
    return h ? h->chip : NULL;
}

gp_metrics_profiler gp_metrics_host_profiler(const gp_metrics_host *h)
{
    return h ? h->profiler : GP_METRICS_RANGE;
}

gp_status gp_metrics_base_metrics(gp_metrics_host *h, gp_metric_type type, char ***out, size_t *n,
                                  gp_error *err)
{
    if (list_args(out, n, err) != GP_OK || need(h, "the host", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    ASK(h->p->base_metrics, h->obj, (int)type, out, n);
}

gp_status gp_metrics_sub_metrics(gp_metrics_host *h, const char *name, gp_metric_type type,
                                 char ***out, size_t *n, gp_error *err)
{
    if (list_args(out, n, err) != GP_OK || need(h, "the host", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    if (!name || !*name)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no metric name given");
    ASK(h->p->sub_metrics, h->obj, name, (int)type, out, n);
}

gp_status gp_metrics_properties(gp_metrics_host *h, const char *name, gp_metric_props *out,
                                gp_error *err)
{
    if (need(h, "the host", err) != GP_OK || need(out, "the properties out-parameter", err))
        return GP_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!name || !*name)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no metric name given");
    gp_error pe = {0};
    gp_metrics_abi_props *pr = NULL;
    int st = h->p->properties(h->obj, name, &pr, &pe);
    if (st != GP_OK)
        return answer(st, pe.message, err);
    free(h->props);
    h->props = pr;
    out->description = pr->description;
    out->hw_unit = pr->hw_unit;
    out->dim_unit = pr->dim_unit;
    out->type = (gp_metric_type)pr->type;
    out->scope = (gp_metric_scope)pr->scope;
    gp_error_clear(err);
    return GP_OK;
}

gp_status gp_metrics_config_image(gp_metrics_host *h, const char *const *metrics, size_t n,
                                  uint8_t **image, size_t *size, gp_error *err)
{
    if (need(h, "the host", err) != GP_OK || need(image, "the image out-parameter", err) ||
        need(size, "the size out-parameter", err))
        return GP_ERR_INVALID_ARG;
    *image = NULL;
    *size = 0;
    if (!metrics || n == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no metric given for the config image");
    ASK(h->p->config_image, h->obj, metrics, n, image, size);
}

gp_status gp_metrics_passes(const uint8_t *image, size_t size, size_t *passes, gp_error *err)
{
    if (need(passes, "the passes out-parameter", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    *passes = 0;
    if (!image || size == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no config image given");
    const gp_metrics_plugin *p = plugin(err);
    if (!p)
        return GP_ERR_NOT_SUPPORTED;
    ASK(p->passes, image, size, passes);
}

gp_status gp_metrics_local_chip(int device, char *buf, size_t cap, gp_error *err)
{
    if (need(buf, "the buffer", err) != GP_OK || cap == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no buffer for the chip name");
    buf[0] = '\0';
    const gp_metrics_plugin *p = plugin(err);
    if (!p)
        return GP_ERR_NOT_SUPPORTED;
    ASK(p->local_chip, device, buf, cap);
}

gp_status gp_metrics_max_per_pass(const char *chip, gp_metrics_profiler profiler, size_t *out,
                                  gp_error *err)
{
    if (need(out, "the out-parameter", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    *out = 0;
    ASK_CHIP(chip, max_per_pass, chip, (int)profiler, out);
}

gp_status gp_metrics_evaluate(gp_metrics_host *h, const uint8_t *counter_data, size_t size,
                              size_t index, const char *const *metrics, size_t n, double *values,
                              gp_error *err)
{
    if (need(h, "the host", err) != GP_OK || need(values, "the values array", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    if (!counter_data || size == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no counter-data image given");
    if (!metrics || n == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no metric given to evaluate");
    ASK(h->p->evaluate, h->obj, counter_data, size, index, metrics, n, values);
}

gp_status gp_metrics_single_pass_sets(const char *chip, char ***out, size_t *n, gp_error *err)
{
    if (list_args(out, n, err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    ASK_CHIP(chip, single_pass_sets, chip, out, n);
}

gp_status gp_metrics_single_pass_metrics(const char *chip, const char *set, char ***out, size_t *n,
                                         gp_error *err)
{
    if (list_args(out, n, err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    ASK_CHIP(chip, single_pass_metrics, chip, set, out, n);
}

const char *gp_metrics_engine_name(gp_metrics_engine e)
{
    static const char *const names[] = {[GP_METRICS_ENGINE_RANGE_PROFILER] = "RangeProfiler",
                                        [GP_METRICS_ENGINE_PM_SAMPLING] = "PmSampling",
                                        [GP_METRICS_ENGINE_SASS_METRICS] = "SassMetrics"};
    return NAME_IN(names, e);
}

gp_status gp_metrics_engine_profiler(gp_metrics_engine e, gp_metrics_profiler *out, gp_error *err)
{
    if (need(out, "the out-parameter", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    if (e == GP_METRICS_ENGINE_RANGE_PROFILER || e == GP_METRICS_ENGINE_PM_SAMPLING) {
        *out = e == GP_METRICS_ENGINE_PM_SAMPLING ? GP_METRICS_PM_SAMPLING : GP_METRICS_RANGE;
        gp_error_clear(err);
        return GP_OK;
    }
    if (e == GP_METRICS_ENGINE_SASS_METRICS)
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                            "SassMetrics has no profiler type: its metrics are patched "
                            "instructions, checked on the device at run time");
    return gp_error_set(err, GP_ERR_INVALID_ARG, "unknown engine %d", (int)e);
}

gp_status gp_metrics_engine_defaults(gp_metrics_engine e, char ***out, size_t *n, unsigned *slots,
                                     size_t cap, gp_error *err)
{
    if (list_args(out, n, err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    const gp_metrics_plugin *p = plugin(err);
    if (!p)
        return GP_ERR_NOT_SUPPORTED;
    ASK(p->engine_defaults, (int)e, out, n, slots, cap);
}

gp_status gp_metrics_engine_choose(gp_metrics_host *h, gp_metrics_engine e, const char *list,
                                   int one_pass, char ***out, size_t *n, size_t *passes,
                                   gp_error *err)
{
    if (list_args(out, n, err) != GP_OK || need(passes, "the passes out-parameter", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    *passes = 0;
    if (need(h, "the host", err) != GP_OK)
        return GP_ERR_INVALID_ARG;
    gp_metrics_profiler want;
    gp_status st = gp_metrics_engine_profiler(e, &want, err);
    if (st != GP_OK)
        return st;
    if (want != h->profiler)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "%s schedules metrics for the %s profiler; this host is for %s: "
                            "create one with gp_metrics_engine_profiler()",
                            gp_metrics_engine_name(e), gp_metrics_profiler_name(want),
                            gp_metrics_profiler_name(h->profiler));
    ASK(h->p->engine_choose, h->obj, (int)e, h->chip, list, one_pass, out, n, passes);
}
