/*
 * recorder/config.h - the flight recorder's options, resolved (config.c):
 * defaults, config_file (JSON, jansson: config_file.c), GPUFL_* environment
 * (config_env.c), code, their precedence and validation -> fl_config.
 */
#ifndef GP_RECORDER_CONFIG_H
#define GP_RECORDER_CONFIG_H

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
    int cupti_buffer_kib;  /* 0: the plugin's default */
    int cupti_max_buffers; /* 0: the plugin's default */
    gpufl_log_fn log_fn;
    void *log_user;

    /* Lines to emit at init (deprecations), without the "[gpufl] " prefix. */
    char *warnings[FL_MAX_WARNINGS];
    int n_warnings;
    /* For debug output: where each value came from ("default", "code",
     * "env GPUFL_API_PATH", "config <file>"), one line per non-default field. */
    char *provenance;
} fl_config;

/*
 * Resolves opts (NULL = defaults) into out.  Order of the checks:
 *  1. GPUFL_DISABLED (1/true/yes/on, any case: disabled; 0/false/no/off or
 *     empty: not; anything else: GPUFL_ERR_ENV naming the variable and the
 *     accepted values) - before any file is read;
 *  2. opts->enabled == false -> GPUFL_DISABLED, nothing read;
 *  3. config file (code's config_file, else GPUFL_CONFIG_FILE): applied over
 *     the defaults; its "enabled": false -> GPUFL_DISABLED (if code left
 *     enabled at its default);
 *  4. environment over config, code over environment, field by field;
 *  5. validation (rates >= 0, enum ranges, app_name usable in a path).
 * Returns GPUFL_OK, GPUFL_DISABLED (out is then empty but safe to free) or
 * an error with a message naming the input and the fix.
 */
gpufl_status fl_config_resolve(const gpufl_init_options *opts, fl_config *out, gpufl_error *err);
void fl_config_free(fl_config *c); /* NULL-safe, idempotent */

#endif /* GP_RECORDER_CONFIG_H */
