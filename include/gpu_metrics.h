/*
 * gpu_metrics.h - the host side of hardware-counter profiling: which chips
 * exist, which metrics each has, what they mean, how many passes a metric
 * set needs, and turning counter data into values.  It mirrors CUPTI's
 * Profiler Host API (the Python cupti.profiler_host module) and needs no
 * GPU: only the CUPTI host library.
 *
 * The core library never links CUDA: these functions load the CUPTI plugin
 * (libgpuprofile_cupti.so, from $GPUFL_CUPTI_PLUGIN or beside the library)
 * on first use and call its gpufl_cupti_metrics_v1 table.  Without the
 * plugin every call returns GP_ERR_NOT_SUPPORTED with the loader's message.
 *
 * Statuses (gp_status, gpu_profile.h), with a message in err naming the
 * offending input:
 *   GP_ERR_INVALID_ARG    a NULL/empty argument, a chip CUPTI does not
 *                         support, an invalid metric name, a metric not
 *                         available for the profiler type, a bad index;
 *   GP_ERR_NOT_SUPPORTED  no plugin, or the installed CUPTI lacks the API
 *                         (single-pass sets);
 *   GP_ERR_CUPTI          CUPTI failed otherwise (its message is quoted);
 *   GP_ERR_NO_MEMORY      an allocation failed.
 *
 * CUPTI host objects are cached per (chip, profiler type) in the process,
 * so creating a host for the same chip again is cheap; the first use of
 * CUPTI's host library costs about 0.1 s.  gp_metrics_release_cache()
 * deinitializes the cached objects no host uses.  Every function is
 * thread-safe (the plugin serialises its CUPTI calls).
 *
 * Lists (char **) are NULL-terminated, with their count in *n; free one
 * with gp_metrics_free_list() (one call frees the array and its strings).
 */
#ifndef GPU_METRICS_H
#define GPU_METRICS_H

#include "gpu_profile.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CUpti_ProfilerType. */
typedef enum gp_metrics_profiler {
    GP_METRICS_RANGE = 0,      /* range profiler (per kernel or user range) */
    GP_METRICS_PM_SAMPLING = 1 /* PM sampling (periodic samples, single pass) */
} gp_metrics_profiler;

/* CUpti_MetricType. */
typedef enum gp_metric_type {
    GP_METRIC_COUNTER = 0,
    GP_METRIC_RATIO = 1,
    GP_METRIC_THROUGHPUT = 2
} gp_metric_type;

/* CUpti_MetricCollectionScope; UNKNOWN where the installed CUPTI does not
 * report it (CUPTI 13.0 has no such field). */
typedef enum gp_metric_scope {
    GP_METRIC_SCOPE_CONTEXT = 0,
    GP_METRIC_SCOPE_DEVICE = 1,
    GP_METRIC_SCOPE_INVALID = 2,
    GP_METRIC_SCOPE_UNKNOWN = 3
} gp_metric_scope;

/* What a metric is.  The strings are owned by the host object and valid
 * until the next gp_metrics_properties() on it or its destruction. */
typedef struct gp_metric_props {
    const char *description;
    const char *hw_unit;  /* "sm", "dram", ... */
    const char *dim_unit; /* "percent", "bytes", "cycles", ... */
    gp_metric_type type;
    gp_metric_scope scope;
} gp_metric_props;

/* A host object: one chip and one profiler type. */
typedef struct gp_metrics_host gp_metrics_host;

/* "counter", "ratio", "throughput" (NULL for another value). */
GP_API const char *gp_metric_type_name(gp_metric_type t);
/* "range", "pm" (NULL for another value). */
GP_API const char *gp_metrics_profiler_name(gp_metrics_profiler p);
/* "context", "device", "invalid", "unknown" (NULL for another value). */
GP_API const char *gp_metric_scope_name(gp_metric_scope s);

/* Frees a list returned here (NULL-safe). */
GP_API void gp_metrics_free_list(char **list);

/* The chips the installed CUPTI supports ("GA100", "GH100", "AD102", ...). */
GP_API gp_status gp_metrics_chips(char ***out, size_t *n, gp_error *err);

/* Creates (initializes) a host object for chip and profiler type.  The chip
 * is matched case-insensitively against gp_metrics_chips(); an unknown one
 * gives GP_ERR_INVALID_ARG naming it. */
GP_API gp_status gp_metrics_host_create(const char *chip, gp_metrics_profiler profiler,
                                        gp_metrics_host **out, gp_error *err);
/* Deinitializes the host (NULL-safe); the CUPTI object stays cached. */
GP_API void gp_metrics_host_destroy(gp_metrics_host *h);
/* The chip's canonical name and the profiler type of a host. */
GP_API const char *gp_metrics_host_chip(const gp_metrics_host *h);
GP_API gp_metrics_profiler gp_metrics_host_profiler(const gp_metrics_host *h);

/* The base metrics of one type ("sm__throughput", ...). */
GP_API gp_status gp_metrics_base_metrics(gp_metrics_host *h, gp_metric_type type, char ***out,
                                         size_t *n, gp_error *err);
/* The sub-metric suffixes of a metric (".avg.pct_of_peak_sustained_elapsed",
 * ...); name may carry an extension; type is the metric's type. */
GP_API gp_status gp_metrics_sub_metrics(gp_metrics_host *h, const char *name, gp_metric_type type,
                                        char ***out, size_t *n, gp_error *err);
/* Description, units, type and scope of a metric (with or without its
 * extension).  An invalid name gives GP_ERR_INVALID_ARG naming it. */
GP_API gp_status gp_metrics_properties(gp_metrics_host *h, const char *name, gp_metric_props *out,
                                       gp_error *err);

/* A config image scheduling the n metrics (malloc'd bytes, free with
 * gp_metrics_free_image).  An invalid metric, or one the profiler type
 * cannot collect, gives GP_ERR_INVALID_ARG naming the first such metric. */
GP_API gp_status gp_metrics_config_image(gp_metrics_host *h, const char *const *metrics, size_t n,
                                         uint8_t **image, size_t *size, gp_error *err);
/* Frees a config image (NULL-safe). */
GP_API void gp_metrics_free_image(uint8_t *image);
/* The passes a config image needs.  CUPTI does not validate the image:
 * pass one gp_metrics_config_image() made. */
GP_API gp_status gp_metrics_passes(const uint8_t *image, size_t size, size_t *passes,
                                   gp_error *err);
/* The chip name (e.g. "GH100") of the local CUDA device `device`
 * (cuptiDeviceGetChipName), into buf.  GP_ERR_NOT_SUPPORTED when there is
 * no driver or no such device (CUPTI's call is made only when the driver
 * lists the device: without one it would crash), GP_ERR_DEVICE_NOT_FOUND
 * for an index the driver does not list. */
GP_API gp_status gp_metrics_local_chip(int device, char *buf, size_t cap, gp_error *err);

/* The upper bound of hardware metrics (names without "_sass_") one pass
 * can schedule for a chip and profiler type. */
GP_API gp_status gp_metrics_max_per_pass(const char *chip, gp_metrics_profiler profiler,
                                         size_t *out, gp_error *err);

/* The values of n metrics at range or sample `index` of a counter-data
 * image collected on a GPU with this host's config: values[i] for
 * metrics[i].  The metric names are checked first (an invalid one is
 * named); the image itself must be one CUPTI produced (CUPTI does not
 * validate it and may crash on garbage). */
GP_API gp_status gp_metrics_evaluate(gp_metrics_host *h, const uint8_t *counter_data, size_t size,
                                     size_t index, const char *const *metrics, size_t n,
                                     double *values, gp_error *err);

/* Single-pass metric sets of a chip and the metrics in one.  Resolved at
 * run time: GP_ERR_NOT_SUPPORTED ("not supported by CUPTI <version>") on a
 * CUPTI without cuptiProfilerHostGetSinglePassSets. */
GP_API gp_status gp_metrics_single_pass_sets(const char *chip, char ***out, size_t *n,
                                             gp_error *err);
GP_API gp_status gp_metrics_single_pass_metrics(const char *chip, const char *set, char ***out,
                                                size_t *n, gp_error *err);

/* The profiling engines that collect hardware metrics (profiling_engine). */
typedef enum gp_metrics_engine {
    GP_METRICS_ENGINE_RANGE_PROFILER = 0, /* range host; per kernel, or per scope in one pass */
    GP_METRICS_ENGINE_PM_SAMPLING = 1,    /* pm host; one pass (sampling cannot replay) */
    GP_METRICS_ENGINE_SASS_METRICS = 2    /* no host side: names checked on the device */
} gp_metrics_engine;

/* "RangeProfiler", "PmSampling", "SassMetrics" (NULL for another value). */
GP_API const char *gp_metrics_engine_name(gp_metrics_engine e);
/* The profiler type an engine's metrics are scheduled for (SassMetrics:
 * GP_ERR_NOT_SUPPORTED, it has none). */
GP_API gp_status gp_metrics_engine_profiler(gp_metrics_engine e, gp_metrics_profiler *out,
                                            gp_error *err);
/* The engine's default metrics, the very list the engine uses, in order of
 * preference; slots (NULL or cap entries) receives each name's slot: the
 * range profiler's alternates of one metric (e.g. dram__bytes_read.sum,
 * then dram__bytes_op_read.sum on chips without it) share a slot. */
GP_API gp_status gp_metrics_engine_defaults(gp_metrics_engine e, char ***out, size_t *n,
                                            unsigned *slots, size_t cap, gp_error *err);
/* What the engine schedules from list (comma-separated; NULL or "": its
 * default set) on h's chip, decided by the engine's own code: the names
 * and the passes they need.  one_pass: range profiler per-scope ranges
 * (user replay; per-kernel ranges replay each kernel).  h's profiler must
 * be the engine's.  GP_ERR_INVALID_ARG with the engine's reason when it
 * would refuse the list; GP_ERR_NOT_SUPPORTED for SassMetrics. */
GP_API gp_status gp_metrics_engine_choose(gp_metrics_host *h, gp_metrics_engine e, const char *list,
                                          int one_pass, char ***out, size_t *n, size_t *passes,
                                          gp_error *err);

/* cuptiGetVersion() of the plugin's libcupti (0 when no plugin loads). */
GP_API uint32_t gp_metrics_cupti_version(void);

/* Deinitializes every cached CUPTI host object no live host uses; returns
 * how many stay cached because a host still uses them. */
GP_API size_t gp_metrics_release_cache(void);

#ifdef __cplusplus
}
#endif

#endif /* GPU_METRICS_H */
