/*
 * abi/metrics_abi.h - the second table the CUPTI plugin exports,
 * gpufl_cupti_metrics_v1: the host side of hardware-counter profiling
 * (CUPTI's Profiler Host API, plugin/metrics_host.cpp), driven by the core's
 * gp_metrics_* functions (src/metrics.c, include/gpu_metrics.h).
 *
 * Core and plugin are built from one tree; GP_METRICS_ABI changes whenever
 * the meaning of a field changes, and the table carries the sizes of the
 * structs it exchanges as the plugin was built (gp_metrics_layout): the
 * core refuses a plugin that speaks another number or has other sizes.  No CUDA or CUPTI type
 * appears here: enums travel as the int values of include/gpu_metrics.h; every function that can
 * fail returns a gp_status and fills the caller's gp_error (include/gpu_profile.h: a status and a
 * fixed-size message, CUPTI's with the offending input named; err may be NULL), whose size the
 * layout check covers.
 *
 * Memory: lists are one malloc'd block (a NULL-terminated char* array
 * followed by the strings; free() releases all), images and property
 * blocks are malloc'd; the caller frees them with free().  Core and plugin
 * share the process's malloc.
 */
#ifndef GP_METRICS_ABI_H
#define GP_METRICS_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_profile.h"
#include "layout.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GP_METRICS_ABI 5u
#define GP_METRICS_PLUGIN_SYMBOL "gpufl_cupti_metrics_v1"

/* A metric's properties; the strings point into the same malloc'd block as
 * the struct itself (one free()). */
typedef struct gp_metrics_abi_props {
    const char *description;
    const char *hw_unit;
    const char *dim_unit;
    int type;  /* gp_metric_type */
    int scope; /* gp_metric_scope */
} gp_metrics_abi_props;

/* The sizes of the structs of this header, as the side that was compiled
 * saw them: X(field, struct). */
#define GP_METRICS_LAYOUT_FIELDS(X)                                                                \
    X(plugin_table, gp_metrics_plugin) X(props, gp_metrics_abi_props) X(error, gp_error)

typedef struct gp_metrics_layout {
    GP_METRICS_LAYOUT_FIELDS(GP_LAYOUT_MEMBER)
} gp_metrics_layout;

typedef struct gp_metrics_plugin {
    uint32_t abi;                    /* GP_METRICS_ABI */
    const gp_metrics_layout *layout; /* GP_METRICS_LAYOUT as the plugin was built */
    /* cuptiGetVersion() of the loaded libcupti (0 if it failed). */
    uint32_t (*cupti_version)(void);
    /* Supported chip names (malloc'd list). */
    gp_status (*chips)(char ***out, size_t *n, gp_error *err);
    /* A cached host object for (chip, profiler); created (cuptiProfilerHost
     * Initialize) on first use, shared by every acquire with the same key.
     * canon receives the chip's canonical spelling (cap >= 64). */
    gp_status (*acquire)(const char *chip, int profiler, void **host, char *canon, size_t canon_len,
                         gp_error *err);
    /* Drops one reference; the object stays cached (see release_all). */
    void (*release)(void *host);
    /* Deinitializes every cached object nobody holds; returns how many
     * are still held. */
    size_t (*release_all)(void);
    gp_status (*base_metrics)(void *host, int type, char ***out, size_t *n, gp_error *err);
    gp_status (*sub_metrics)(void *host, const char *metric, int type, char ***out, size_t *n,
                             gp_error *err);
    gp_status (*properties)(void *host, const char *metric, gp_metrics_abi_props **out,
                            gp_error *err);
    /* A config image for the metrics (a fresh CUPTI object each time: CUPTI
     * accumulates added metrics in a host object). */
    gp_status (*config_image)(void *host, const char *const *metrics, size_t n, uint8_t **image,
                              size_t *size, gp_error *err);
    gp_status (*passes)(const uint8_t *image, size_t size, size_t *out, gp_error *err);
    gp_status (*max_per_pass)(const char *chip, int profiler, size_t *out, gp_error *err);
    gp_status (*evaluate)(void *host, const uint8_t *counter_data, size_t size, size_t index,
                          const char *const *metrics, size_t n, double *values, gp_error *err);
    /* Resolved at run time; GP_ERR_NOT_SUPPORTED on a CUPTI without them. */
    gp_status (*single_pass_sets)(const char *chip, char ***out, size_t *n, gp_error *err);
    gp_status (*single_pass_metrics)(const char *chip, const char *set, char ***out, size_t *n,
                                     gp_error *err);
    /* The chip name of CUDA device `device` (cuptiDeviceGetChipName), asked
     * only when the driver lists that device: CUPTI's target call crashes
     * without a driver. */
    gp_status (*local_chip)(int device, char *out, size_t cap, gp_error *err);
    /* GP_METRICS_ABI 4 (plugin/engine_sets.c): the engines' own metric
     * sets, the lists the engines use (gp_metrics_engine values).  The
     * default candidates in order, slots[i] the slot of out[i] (a range
     * profiler slot's alternates share it; cap >= the count). */
    gp_status (*engine_defaults)(int engine, char ***out, size_t *n, unsigned *slots, size_t cap,
                                 gp_error *err);
    /* What the engine schedules from list (NULL or "": its default set) on
     * host's chip, by the engine's own code: the names and their passes;
     * one_pass: scope ranges (range profiler only).  GP_ERR_INVALID_ARG
     * with the engine's message when it would refuse the list. */
    gp_status (*engine_choose)(void *host, int engine, const char *chip, const char *list,
                               int one_pass, char ***out, size_t *n, size_t *passes, gp_error *err);
} gp_metrics_plugin;

#define GP_METRICS_LAYOUT                                                                          \
    {                                                                                              \
        GP_METRICS_LAYOUT_FIELDS(GP_LAYOUT_SIZE)                                                   \
    }

#ifdef __cplusplus
}
#endif

#endif /* GP_METRICS_ABI_H */
