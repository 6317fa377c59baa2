/*
 * metrics_host.cpp - the plugin's second table, gpufl_cupti_metrics_v1
 * (src/abi/metrics_abi.h): CUPTI's Profiler Host API, which needs no GPU.
 *
 * Compiled as C++ only because cupti_profiler_host.h includes <string>; the
 * code is C-style (malloc, no exceptions, no RTTI, no C++ runtime), so the
 * plugin still links as C, and nothing but the extern "C" table leaves this
 * file.
 *
 * CUPTI host objects are cached per (chip, profiler type) under one mutex
 * that also serialises every CUPTI call made here: the first
 * cuptiProfilerHostInitialize loads CUPTI's host libraries (~0.1 s), later
 * objects cost ~1 ms, and a cached object answers lists and properties at
 * once.  Config images are built in a fresh object each time, because
 * cuptiProfilerHostConfigAddMetrics accumulates metrics in the object it is
 * given.  release_all deinitializes the cached objects nobody holds.
 */
#include "../src/abi/metrics_abi.h"
#include "gpu_metrics.h"
extern "C" {
#include "../src/util/error.h"
}

/* driver.c (C): the local device's chip, asked only when the driver lists it. */
extern "C" gp_status gp_driver_chip_name(int device, char *out, size_t cap, gp_error *err);

#include <cupti_profiler_host.h>
#include <cupti_result.h>
#include <cupti_version.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXPORT __attribute__((visibility("default")))

namespace
{

struct entry {
    entry *next;
    char chip[64];
    CUpti_ProfilerType type;
    CUpti_Profiler_Host_Object *obj;
    size_t refs;
    /* The base metrics per type, from the first call: CUPTI 13.0 appends
     * the list again to what a host object returned before on each call. */
    char **base[3];
    size_t n_base[3];
};

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
entry *g_cache;

struct locker {
    locker()
    {
        pthread_mutex_lock(&g_lock);
    }
    ~locker()
    {
        pthread_mutex_unlock(&g_lock);
    }
};

/* CUPTI's name and description of r: "CUPTI_ERROR_X: text". */
void cupti_text(CUptiResult r, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS || !name)
        name = "CUPTI error";
    if (cuptiGetErrorMessage(r, &text) != CUPTI_SUCCESS || !text || strcmp(text, name) == 0)
        snprintf(buf, len, "%s (%d)", name, (int)r);
    else
        snprintf(buf, len, "%s (%d): %s", name, (int)r, text);
}

/* A CUPTI failure of function fn: GP_ERR_CUPTI with CUPTI's message. */
gp_status cupti_fail(CUptiResult r, const char *fn, const char *what, gp_error *err)
{
    char t[256];
    cupti_text(r, t, sizeof t);
    return gp_error_set(err, GP_ERR_CUPTI, "%s failed%s%s: %s", fn, what ? " " : "",
                        what ? what : "", t);
}

const char *profiler_words(CUpti_ProfilerType t)
{
    return t == CUPTI_PROFILER_TYPE_PM_SAMPLING ? "PM sampling" : "the range profiler";
}

bool valid_profiler(int p)
{
    return p == GP_METRICS_RANGE || p == GP_METRICS_PM_SAMPLING;
}

bool valid_type(int t)
{
    return t == GP_METRIC_COUNTER || t == GP_METRIC_RATIO || t == GP_METRIC_THROUGHPUT;
}

/* One malloc'd block: n+1 pointers, then the strings. */
char **make_list(const char *const *names, size_t n)
{
    size_t bytes = (n + 1) * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(names[i] ? names[i] : "") + 1;
    char **v = static_cast<char **>(malloc(bytes));
    if (!v)
        return NULL;
    char *p = reinterpret_cast<char *>(v + n + 1);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i] ? names[i] : "") + 1;
        memcpy(p, names[i] ? names[i] : "", l);
        v[i] = p;
        p += l;
    }
    v[n] = NULL;
    return v;
}

gp_status list_out(const char *const *names, size_t n, char ***out, size_t *count, gp_error *err)
{
    char **v = make_list(names, n);
    if (!v)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for a list of %zu names", n);
    *out = v;
    *count = n;
    return GP_OK;
}

/* Caller holds g_lock.  The canonical spelling of chip (case-insensitive
 * match against CUPTI's list) into canon; GP_ERR_INVALID_ARG naming it. */
gp_status canon_chip(const char *chip, char *canon, size_t canon_len, gp_error *err)
{
    if (!chip || !*chip)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no chip name given");
    CUpti_Profiler_Host_GetSupportedChips_Params p = {};
    p.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE;
    CUptiResult r = cuptiProfilerHostGetSupportedChips(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetSupportedChips", NULL, err);
    char known[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < p.numChips; i++) {
        if (strcasecmp(p.ppChipNames[i], chip) == 0) {
            snprintf(canon, canon_len, "%s", p.ppChipNames[i]);
            return GP_OK;
        }
        if (used < sizeof known) {
            int k = snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                             p.ppChipNames[i]);
            used += k > 0 ? (size_t)k : 0;
        }
    }
    uint32_t v = 0;
    cuptiGetVersion(&v);
    return gp_error_set(err, GP_ERR_INVALID_ARG,
                        "chip '%s' is not supported by CUPTI %u (CUPTI_ERROR_INVALID_CHIP_NAME); "
                        "supported: %s",
                        chip, v, known);
}

/* The checks every call taking (chip, profiler) starts with: the profiler
 * type, then the chip's canonical spelling (under the caller's lock). */
gp_status chip_and_profiler(const char *chip, int profiler, char *canon, size_t canon_len,
                            gp_error *err)
{
    if (!valid_profiler(profiler))
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "profiler type %d is neither range (0) nor PM sampling (1)", profiler);
    return canon_chip(chip, canon, canon_len, err);
}

/* Caller holds g_lock.  A new CUPTI host object. */
gp_status init_object(const char *chip, CUpti_ProfilerType t, CUpti_Profiler_Host_Object **obj,
                      gp_error *err)
{
    CUpti_Profiler_Host_Initialize_Params p = {};
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = t;
    p.pChipName = chip;
    CUptiResult r = cuptiProfilerHostInitialize(&p);
    if (r == CUPTI_ERROR_INVALID_CHIP_NAME)
        return gp_error_set(
            err, GP_ERR_INVALID_ARG,
            "chip '%s' is not supported by CUPTI for %s (CUPTI_ERROR_INVALID_CHIP_NAME)", chip,
            profiler_words(t));
    if (r != CUPTI_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "for chip %s", chip);
        return cupti_fail(r, "cuptiProfilerHostInitialize", what, err);
    }
    *obj = p.pHostObject;
    return GP_OK;
}

void deinit_object(CUpti_Profiler_Host_Object *obj)
{
    CUpti_Profiler_Host_Deinitialize_Params p = {};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = obj;
    (void)cuptiProfilerHostDeinitialize(&p);
}

/* CUpti_Profiler_Host_GetMetricProperties_Params as later CUPTI releases
 * extend it (metricCollectionScope after metricType).  CUPTI checks
 * structSize, so an older CUPTI either refuses the larger size (then the
 * call is retried with its own) or leaves the field alone. */
struct props_params_v2 {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    const char *pMetricName;
    const char *pDescription;
    const char *pHwUnit;
    const char *pDimUnit;
    CUpti_MetricType metricType;
    int metricCollectionScope;
};
static_assert(offsetof(props_params_v2, metricType) ==
                  offsetof(CUpti_Profiler_Host_GetMetricProperties_Params, metricType),
              "layout of CUpti_Profiler_Host_GetMetricProperties_Params");
static_assert(offsetof(props_params_v2, pDimUnit) ==
                  offsetof(CUpti_Profiler_Host_GetMetricProperties_Params, pDimUnit),
              "layout of CUpti_Profiler_Host_GetMetricProperties_Params");

/* Caller holds g_lock. */
CUptiResult get_props(CUpti_Profiler_Host_Object *obj, const char *name, props_params_v2 *p)
{
    memset(p, 0, sizeof *p);
    p->structSize = offsetof(props_params_v2, metricCollectionScope) + sizeof(int);
    p->pHostObject = obj;
    p->pMetricName = name;
    p->metricCollectionScope = -1;
    CUptiResult r =
        cuptiProfilerHostGetMetricProperties((CUpti_Profiler_Host_GetMetricProperties_Params *)p);
    if (r == CUPTI_ERROR_INVALID_PARAMETER) {
        memset(p, 0, sizeof *p);
        p->structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
        p->pHostObject = obj;
        p->pMetricName = name;
        p->metricCollectionScope = -1;
        r = cuptiProfilerHostGetMetricProperties(
            (CUpti_Profiler_Host_GetMetricProperties_Params *)p);
    }
    return r;
}

/* Caller holds g_lock.  The cached entry for (chip, t), created if need
 * be; NULL with err filled on failure. */
entry *find_or_create(const char *chip, CUpti_ProfilerType t, gp_error *err, gp_status *st)
{
    for (entry *e = g_cache; e; e = e->next)
        if (e->type == t && strcmp(e->chip, chip) == 0) {
            *st = GP_OK;
            return e;
        }
    entry *e = static_cast<entry *>(calloc(1, sizeof *e));
    if (!e) {
        *st = gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for a host object");
        return NULL;
    }
    snprintf(e->chip, sizeof e->chip, "%s", chip);
    e->type = t;
    *st = init_object(e->chip, t, &e->obj, err);
    if (*st != GP_OK) {
        free(e);
        return NULL;
    }
    e->next = g_cache;
    g_cache = e;
    return e;
}

/* Caller holds g_lock.  An invalid metric name: for PM sampling, says so
 * when the range profiler knows the metric. */
gp_status bad_metric(const entry *e, const char *name, CUptiResult r, gp_error *err)
{
    char t[256];
    cupti_text(r, t, sizeof t);
    if (e->type == CUPTI_PROFILER_TYPE_PM_SAMPLING) {
        gp_status st;
        entry *range = find_or_create(e->chip, CUPTI_PROFILER_TYPE_RANGE_PROFILER, NULL, &st);
        props_params_v2 p;
        if (range && get_props(range->obj, name, &p) == CUPTI_SUCCESS)
            return gp_error_set(
                err, GP_ERR_INVALID_ARG,
                "metric '%s' is not available for PM sampling on %s (the range profiler "
                "has it): %s",
                name, e->chip, t);
    }
    return gp_error_set(err, GP_ERR_INVALID_ARG, "metric '%s' is not a valid metric for %s: %s",
                        name, e->chip, t);
}

/* Caller holds g_lock.  The first of names[0..n) that is no metric of e's
 * chip: GP_ERR_INVALID_ARG naming it; GP_OK when all are valid. */
gp_status check_names(const entry *e, const char *const *names, size_t n, gp_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !*names[i])
            return gp_error_set(err, GP_ERR_INVALID_ARG, "metric %zu of %zu is empty", i + 1, n);
        props_params_v2 p;
        CUptiResult r = get_props(e->obj, names[i], &p);
        if (r == CUPTI_ERROR_INVALID_METRIC_NAME)
            return bad_metric(e, names[i], r, err);
        if (r != CUPTI_SUCCESS)
            return cupti_fail(r, "cuptiProfilerHostGetMetricProperties", names[i], err);
    }
    return GP_OK;
}

/* Caller holds g_lock.  Adds names to a fresh object of e's kind. */
CUptiResult add_metrics(const entry *e, const char *const *names, size_t n,
                        CUpti_Profiler_Host_Object **obj, gp_error *err, gp_status *status)
{
    *status = init_object(e->chip, e->type, obj, err);
    if (*status != GP_OK)
        return CUPTI_ERROR_UNKNOWN;
    CUpti_Profiler_Host_ConfigAddMetrics_Params p = {};
    p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    p.pHostObject = *obj;
    p.ppMetricNames = const_cast<const char **>(names);
    p.numMetrics = n;
    return cuptiProfilerHostConfigAddMetrics(&p);
}

/* The libcupti entry point sym, for the calls newer CUPTI releases add. */
void *cupti_sym(const char *sym)
{
    Dl_info di;
    if (!dladdr(reinterpret_cast<void *>(&cuptiProfilerHostInitialize), &di) || !di.dli_fname)
        return NULL;
    void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *f = dlsym(h, sym);
    dlclose(h); /* still loaded: the plugin links it */
    return f;
}

gp_status not_supported(const char *what, const char *sym, gp_error *err)
{
    uint32_t v = 0;
    cuptiGetVersion(&v);
    return gp_error_set(
        err, GP_ERR_NOT_SUPPORTED,
        "%s are not supported by CUPTI %u (the loaded libcupti has no %s; a newer CUDA "
        "toolkit's CUPTI has)",
        what, v, sym);
}

/* The params of cuptiProfilerHostGetSinglePassSets and
 * cuptiProfilerHostGetMetricsInSinglePassSet (CUPTI 13.1 and later),
 * declared here because the installed header may predate them. */
struct sp_sets_params {
    size_t structSize;
    void *pPriv;
    const char *pChipName;
    size_t numOfSinglePassSets;
    const char **ppSinglePassSets;
};
struct sp_metrics_params {
    size_t structSize;
    void *pPriv;
    const char *pChipName;
    const char *pSinglePassSetName;
    size_t numOfMetricsInSinglePassSet;
    size_t metricsBufferSize;
    size_t *pMetricsIndicesBuffer;
    uint8_t *pMetricsBuffer;
};
typedef CUptiResult (*sp_sets_fn)(sp_sets_params *);
typedef CUptiResult (*sp_metrics_fn)(sp_metrics_params *);

/* ------------------------------------------------------------- the table */

uint32_t m_cupti_version(void)
{
    uint32_t v = 0;
    return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

gp_status m_chips(char ***out, size_t *n, gp_error *err)
{
    locker l;
    CUpti_Profiler_Host_GetSupportedChips_Params p = {};
    p.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE;
    CUptiResult r = cuptiProfilerHostGetSupportedChips(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetSupportedChips", NULL, err);
    return list_out(p.ppChipNames, p.numChips, out, n, err);
}

gp_status m_acquire(const char *chip, int profiler, void **host, char *canon, size_t canon_len,
                    gp_error *err)
{
    locker l;
    char name[64];
    gp_status st = chip_and_profiler(chip, profiler, name, sizeof name, err);
    if (st != GP_OK)
        return st;
    entry *e = find_or_create(name, static_cast<CUpti_ProfilerType>(profiler), err, &st);
    if (!e)
        return st;
    e->refs++;
    *host = e;
    snprintf(canon, canon_len, "%s", name);
    return GP_OK;
}

void m_release(void *host)
{
    if (!host)
        return;
    locker l;
    entry *e = static_cast<entry *>(host);
    if (e->refs)
        e->refs--;
}

size_t m_release_all(void)
{
    locker l;
    size_t held = 0;
    for (entry **pp = &g_cache; *pp;) {
        entry *e = *pp;
        if (e->refs) {
            held++;
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        deinit_object(e->obj);
        for (int t = 0; t < 3; t++)
            free(e->base[t]);
        free(e);
    }
    return held;
}

gp_status m_base_metrics(void *host, int type, char ***out, size_t *n, gp_error *err)
{
    if (!valid_type(type))
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "metric type %d is not counter (0), ratio (1) "
                            "or throughput (2)",
                            type);
    locker l;
    entry *e = static_cast<entry *>(host);
    if (!e->base[type]) {
        CUpti_Profiler_Host_GetBaseMetrics_Params p = {};
        p.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
        p.pHostObject = e->obj;
        p.metricType = static_cast<CUpti_MetricType>(type);
        CUptiResult r = cuptiProfilerHostGetBaseMetrics(&p);
        if (r != CUPTI_SUCCESS)
            return cupti_fail(r, "cuptiProfilerHostGetBaseMetrics", e->chip, err);
        gp_status st =
            list_out(p.ppMetricNames, p.numMetrics, &e->base[type], &e->n_base[type], err);
        if (st != GP_OK)
            return st;
    }
    return list_out(e->base[type], e->n_base[type], out, n, err);
}

gp_status m_sub_metrics(void *host, const char *metric, int type, char ***out, size_t *n,
                        gp_error *err)
{
    if (!valid_type(type))
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "metric type %d is not counter (0), ratio (1) "
                            "or throughput (2)",
                            type);
    locker l;
    entry *e = static_cast<entry *>(host);
    CUpti_Profiler_Host_GetSubMetrics_Params p = {};
    p.structSize = CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE;
    p.pHostObject = e->obj;
    p.metricType = static_cast<CUpti_MetricType>(type);
    p.pMetricName = metric;
    CUptiResult r = cuptiProfilerHostGetSubMetrics(&p);
    if (r == CUPTI_ERROR_INVALID_METRIC_NAME)
        return bad_metric(e, metric, r, err);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetSubMetrics", metric, err);
    return list_out(p.ppSubMetrics, p.numOfSubmetrics, out, n, err);
}

gp_status m_properties(void *host, const char *metric, gp_metrics_abi_props **out, gp_error *err)
{
    locker l;
    entry *e = static_cast<entry *>(host);
    props_params_v2 p;
    CUptiResult r = get_props(e->obj, metric, &p);
    if (r == CUPTI_ERROR_INVALID_METRIC_NAME)
        return bad_metric(e, metric, r, err);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetMetricProperties", metric, err);
    const char *s[3] = {p.pDescription ? p.pDescription : "", p.pHwUnit ? p.pHwUnit : "",
                        p.pDimUnit ? p.pDimUnit : ""};
    size_t l0 = strlen(s[0]) + 1, l1 = strlen(s[1]) + 1, l2 = strlen(s[2]) + 1;
    gp_metrics_abi_props *o = static_cast<gp_metrics_abi_props *>(malloc(sizeof *o + l0 + l1 + l2));
    if (!o)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the properties of %s",
                            metric);
    char *t = reinterpret_cast<char *>(o + 1);
    memcpy(t, s[0], l0);
    memcpy(t + l0, s[1], l1);
    memcpy(t + l0 + l1, s[2], l2);
    o->description = t;
    o->hw_unit = t + l0;
    o->dim_unit = t + l0 + l1;
    o->type = static_cast<int>(p.metricType);
    o->scope = p.metricCollectionScope >= 0 && p.metricCollectionScope <= 2
                   ? p.metricCollectionScope
                   : static_cast<int>(GP_METRIC_SCOPE_UNKNOWN);
    *out = o;
    return GP_OK;
}

gp_status m_config_image(void *host, const char *const *metrics, size_t n, uint8_t **image,
                         size_t *size, gp_error *err)
{
    if (!metrics || n == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no metric given for the config image");
    locker l;
    entry *e = static_cast<entry *>(host);
    gp_status st = check_names(e, metrics, n, err);
    if (st != GP_OK)
        return st;
    CUpti_Profiler_Host_Object *obj = NULL;
    CUptiResult r = add_metrics(e, metrics, n, &obj, err, &st);
    if (st != GP_OK)
        return st;
    if (r != CUPTI_SUCCESS) {
        deinit_object(obj);
        /* Which one: each alone. */
        for (size_t i = 0; i < n; i++) {
            CUpti_Profiler_Host_Object *one = NULL;
            CUptiResult r1 = add_metrics(e, metrics + i, 1, &one, err, &st);
            if (st != GP_OK)
                return st;
            deinit_object(one);
            if (r1 != CUPTI_SUCCESS) {
                char t[256];
                cupti_text(r1, t, sizeof t);
                return gp_error_set(err, GP_ERR_INVALID_ARG,
                                    "metric '%s' is not available for %s on %s: %s", metrics[i],
                                    profiler_words(e->type), e->chip, t);
            }
        }
        char t[256];
        cupti_text(r, t, sizeof t);
        return gp_error_set(
            err, GP_ERR_INVALID_ARG,
            "these %zu metrics cannot be scheduled together for %s on %s (each alone "
            "can): %s",
            n, profiler_words(e->type), e->chip, t);
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params zs = {};
    zs.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    zs.pHostObject = obj;
    r = cuptiProfilerHostGetConfigImageSize(&zs);
    if (r != CUPTI_SUCCESS) {
        deinit_object(obj);
        return cupti_fail(r, "cuptiProfilerHostGetConfigImageSize", e->chip, err);
    }
    uint8_t *buf = static_cast<uint8_t *>(malloc(zs.configImageSize ? zs.configImageSize : 1));
    if (!buf) {
        deinit_object(obj);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for a %zu-byte config image",
                            zs.configImageSize);
    }
    CUpti_Profiler_Host_GetConfigImage_Params gi = {};
    gi.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    gi.pHostObject = obj;
    gi.configImageSize = zs.configImageSize;
    gi.pConfigImage = buf;
    r = cuptiProfilerHostGetConfigImage(&gi);
    deinit_object(obj);
    if (r != CUPTI_SUCCESS) {
        free(buf);
        return cupti_fail(r, "cuptiProfilerHostGetConfigImage", e->chip, err);
    }
    *image = buf;
    *size = zs.configImageSize;
    return GP_OK;
}

gp_status m_passes(const uint8_t *image, size_t size, size_t *out, gp_error *err)
{
    if (!image || size == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no config image given");
    locker l;
    CUpti_Profiler_Host_GetNumOfPasses_Params p = {};
    p.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    p.configImageSize = size;
    p.pConfigImage = const_cast<uint8_t *>(image);
    CUptiResult r = cuptiProfilerHostGetNumOfPasses(&p);
    if (r != CUPTI_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "for a %zu-byte config image", size);
        return cupti_fail(r, "cuptiProfilerHostGetNumOfPasses", what, err);
    }
    *out = p.numOfPasses;
    return GP_OK;
}

gp_status m_max_per_pass(const char *chip, int profiler, size_t *out, gp_error *err)
{
    locker l;
    char name[64];
    gp_status st = chip_and_profiler(chip, profiler, name, sizeof name, err);
    if (st != GP_OK)
        return st;
    CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params p = {};
    p.structSize = CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params_STRUCT_SIZE;
    p.profilerType = static_cast<CUpti_ProfilerType>(profiler);
    p.pChipName = name;
    CUptiResult r = cuptiProfilerHostGetMaxNumHardwareMetricsPerPass(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetMaxNumHardwareMetricsPerPass", name, err);
    *out = p.maxMetricsPerPass;
    return GP_OK;
}

gp_status m_evaluate(void *host, const uint8_t *data, size_t size, size_t index,
                     const char *const *metrics, size_t n, double *values, gp_error *err)
{
    if (!data || size == 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no counter-data image given");
    if (!metrics || n == 0 || !values)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no metric (or no value array) given");
    locker l;
    entry *e = static_cast<entry *>(host);
    gp_status st = check_names(e, metrics, n, err);
    if (st != GP_OK)
        return st;
    CUpti_Profiler_Host_EvaluateToGpuValues_Params p = {};
    p.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    p.pHostObject = e->obj;
    p.pCounterDataImage = data;
    p.counterDataImageSize = size;
    p.rangeIndex = index;
    p.ppMetricNames = const_cast<const char **>(metrics);
    p.numMetrics = n;
    p.pMetricValues = values;
    CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&p);
    if (r == CUPTI_ERROR_INVALID_PARAMETER) {
        char t[256];
        cupti_text(r, t, sizeof t);
        return gp_error_set(
            err, GP_ERR_INVALID_ARG,
            "cuptiProfilerHostEvaluateToGpuValues refused the %zu-byte counter data at "
            "index %zu for %s: %s",
            size, index, e->chip, t);
    }
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostEvaluateToGpuValues", e->chip, err);
    return GP_OK;
}

gp_status m_single_pass_sets(const char *chip, char ***out, size_t *n, gp_error *err)
{
    sp_sets_fn f = reinterpret_cast<sp_sets_fn>(cupti_sym("cuptiProfilerHostGetSinglePassSets"));
    if (!f)
        return not_supported("single-pass metric sets", "cuptiProfilerHostGetSinglePassSets", err);
    locker l;
    char name[64];
    gp_status st = canon_chip(chip, name, sizeof name, err);
    if (st != GP_OK)
        return st;
    sp_sets_params p = {};
    p.structSize = offsetof(sp_sets_params, ppSinglePassSets) + sizeof(p.ppSinglePassSets);
    p.pChipName = name;
    CUptiResult r = f(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetSinglePassSets", name, err);
    return list_out(p.ppSinglePassSets, p.ppSinglePassSets ? p.numOfSinglePassSets : 0, out, n,
                    err);
}

gp_status m_single_pass_metrics(const char *chip, const char *set, char ***out, size_t *n,
                                gp_error *err)
{
    sp_metrics_fn f =
        reinterpret_cast<sp_metrics_fn>(cupti_sym("cuptiProfilerHostGetMetricsInSinglePassSet"));
    if (!f)
        return not_supported("single-pass metric sets",
                             "cuptiProfilerHostGetMetricsInSinglePassSet", err);
    if (!set || !*set)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "no single-pass set name given");
    locker l;
    char name[64];
    gp_status st = canon_chip(chip, name, sizeof name, err);
    if (st != GP_OK)
        return st;
    sp_metrics_params p = {};
    p.structSize = offsetof(sp_metrics_params, pMetricsBuffer) + sizeof(p.pMetricsBuffer);
    p.pChipName = name;
    p.pSinglePassSetName = set;
    CUptiResult r = f(&p); /* query mode: sizes */
    if (r == CUPTI_ERROR_INVALID_PARAMETER || r == CUPTI_ERROR_INVALID_METRIC_NAME) {
        char t[256];
        cupti_text(r, t, sizeof t);
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "'%s' is not a single-pass metric set of %s: %s", set, name, t);
    }
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiProfilerHostGetMetricsInSinglePassSet", set, err);
    size_t count = p.numOfMetricsInSinglePassSet, bytes = p.metricsBufferSize;
    size_t *idx = static_cast<size_t *>(calloc(count ? count : 1, sizeof(size_t)));
    uint8_t *buf = static_cast<uint8_t *>(calloc(bytes ? bytes + 1 : 1, 1));
    const char **names = static_cast<const char **>(calloc(count ? count : 1, sizeof(char *)));
    if (!idx || !buf || !names) {
        free(idx);
        free(buf);
        free(names);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for %zu metric names", count);
    }
    p.pMetricsIndicesBuffer = idx;
    p.pMetricsBuffer = buf;
    r = f(&p);
    if (r != CUPTI_SUCCESS) {
        st = cupti_fail(r, "cuptiProfilerHostGetMetricsInSinglePassSet", set, err);
    } else {
        /* indices: byte offsets of NUL-terminated names in the buffer */
        for (size_t i = 0; i < count && st == GP_OK; i++) {
            if (idx[i] >= bytes)
                st = gp_error_set(
                    err, GP_ERR_CUPTI,
                    "cuptiProfilerHostGetMetricsInSinglePassSet gave metric %zu at offset "
                    "%zu of a %zu-byte buffer",
                    i, idx[i], bytes);
            else
                names[i] = reinterpret_cast<const char *>(buf + idx[i]);
        }
        if (st == GP_OK)
            st = list_out(names, count, out, n, err);
    }
    free(idx);
    free(buf);
    free(names);
    return st;
}

} // namespace

static const gp_metrics_layout layout = GP_METRICS_LAYOUT;

extern "C" {
/* plugin/engine_sets.c */
gp_status fl_engine_defaults(int engine, char ***out, size_t *n, unsigned *slots, size_t cap,
                             gp_error *err);
gp_status fl_engine_choose(void *host, int engine, const char *chip, const char *list, int one_pass,
                           char ***out, size_t *n, size_t *passes, gp_error *err);
EXPORT extern const gp_metrics_plugin gpufl_cupti_metrics_v1;
const gp_metrics_plugin gpufl_cupti_metrics_v1 = {
    GP_METRICS_ABI,      &layout,
    m_cupti_version,     m_chips,
    m_acquire,           m_release,
    m_release_all,       m_base_metrics,
    m_sub_metrics,       m_properties,
    m_config_image,      m_passes,
    m_max_per_pass,      m_evaluate,
    m_single_pass_sets,  m_single_pass_metrics,
    gp_driver_chip_name, fl_engine_defaults,
    fl_engine_choose,
};
}
