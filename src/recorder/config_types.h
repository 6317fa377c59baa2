/*
 * recorder/config_types.h - fl_config, the recorder's options once
 * resolved: what config.h returns and what the options table
 * (config_fields.c) describes field by field.
 */
#ifndef GP_RECORDER_CONFIG_TYPES_H
#define GP_RECORDER_CONFIG_TYPES_H

#include "gpufl.h"

#include <stdbool.h>

#define FL_MAX_WARNINGS 8
#define FL_CUPTI_MAX_BUFFERS 256
#define FL_CUPTI_MAX_BUFFER_KIB 1048576

/* The options after defaults, config file, environment and code were
 * applied (docs/gpufl.md).  Strings are malloc'd and never NULL. */
typedef struct fl_config {
    char *app_name;
    char *log_path; /* resolved base directory: app_name if empty, ".log" dropped */
    char *backend_url;
    char *api_key;
    char *api_path; /* "/api/v1" if empty */
    bool remote_upload;
    bool enable_stack_trace;
    bool enable_source_collection;
    bool enable_external_correlation;
    bool enable_synchronization;
    bool enable_memory_tracking;
    bool enable_cuda_graphs_tracking;
    int system_sample_rate_ms;
    int kernel_sample_rate_ms;
    bool continuous_system_sampling;
    gpufl_backend_kind backend;
    gpufl_engine profiling_engine;
    char *config_file; /* the file that was applied, "" if none */
    bool flush_logs_always;
    bool enable_debug_output;
    int cupti_buffer_kib;        /* 0: the plugin's default */
    int cupti_max_buffers;       /* 0: the plugin's default */
    bool compact_kernel_details; /* a kernel_detail per configuration */
    int pc_sampling_period;      /* log2 cycles, 5..31; 0: the plugin's default */
    char *pm_sampling_metrics;   /* comma-separated; "": the engine's default set */
    int pm_sampling_interval_us; /* 0: the plugin's default (100) */
    int pm_sampling_max_samples; /* 0: the plugin's default (4096) */
    char *metrics;               /* the range profiler's metrics, comma separated; "": defaults */
    bool range_per_kernel;       /* kernel ranges (kernel replay) */
    bool sass_all_kernels;       /* SassMetrics: every kernel, not only those inside scopes */
    char *capture_range;         /* "": none; "cudaProfilerApi"; "nvtx:NAME" (capture.h) */
    char *capture_range_end;     /* "": stop; "repeat"; "repeat:N" */
    int capture_delay_ms;        /* the timed window's start after the origin; 0: none */
    int capture_duration_ms;     /* its length; 0: to the end */
    char *rotate_size;           /* a size (rotate.c): "" or "0": no rotation by size */
    int rotate_interval_ms;      /* 0: no rotation by time */
    char *max_disk;              /* a size: "" or "0": no limit */
    gpufl_log_fn log_fn;
    void *log_user;
    bool no_tsc; /* GPUFL_NO_TSC: scopes timed with CLOCK_REALTIME, never the TSC */

    /* Lines to emit at init (deprecations), without the "[gpufl] " prefix. */
    char *warnings[FL_MAX_WARNINGS];
    int n_warnings;
    /* For debug output: where each value came from ("default", "code",
     * "env GPUFL_API_PATH", "config <file>"), one line per non-default field. */
    char *provenance;
} fl_config;

#endif /* GP_RECORDER_CONFIG_TYPES_H */
