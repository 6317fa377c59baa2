/*
 * recorder/config_fields.c - the options' table: each option's name, type,
 * place in gpufl_init_options and fl_config, and environment variable,
 * written once.
 */
#include "config_fields.h"
#include "../util/env.h"
#include "config_types.h"
#include "gpufl.h"

#include <stddef.h>
#include <string.h>

#define OPT(f) offsetof(gpufl_init_options, f)
#define OUT(f) offsetof(fl_config, f)

const fl_field fl_config_fields[] = {
    {"app_name", FT_STR, OPT(app_name), OUT(app_name), NULL},
    {"log_path", FT_STR, OPT(log_path), OUT(log_path), NULL},
    {"backend_url", FT_STR, OPT(backend_url), OUT(backend_url), "GPUFL_BACKEND_URL"},
    {"api_key", FT_STR, OPT(api_key), OUT(api_key), GP_API_KEY_ENV},
    {"api_path", FT_STR, OPT(api_path), OUT(api_path), "GPUFL_API_PATH"},
    {"remote_upload", FT_BOOL, OPT(remote_upload), OUT(remote_upload), "GPUFL_REMOTE_UPLOAD"},
    {"enable_stack_trace", FT_BOOL, OPT(enable_stack_trace), OUT(enable_stack_trace),
     "GPUFL_ENABLE_STACK_TRACE"},
    {"enable_source_collection", FT_BOOL, OPT(enable_source_collection),
     OUT(enable_source_collection), NULL},
    {"enable_external_correlation", FT_BOOL, OPT(enable_external_correlation),
     OUT(enable_external_correlation), NULL},
    {"enable_synchronization", FT_BOOL, OPT(enable_synchronization), OUT(enable_synchronization),
     NULL},
    {"enable_memory_tracking", FT_BOOL, OPT(enable_memory_tracking), OUT(enable_memory_tracking),
     NULL},
    {"enable_cuda_graphs_tracking", FT_BOOL, OPT(enable_cuda_graphs_tracking),
     OUT(enable_cuda_graphs_tracking), NULL},
    {"system_sample_rate_ms", FT_INT, OPT(system_sample_rate_ms), OUT(system_sample_rate_ms), NULL},
    {"kernel_sample_rate_ms", FT_INT, OPT(kernel_sample_rate_ms), OUT(kernel_sample_rate_ms), NULL},
    {"continuous_system_sampling", FT_BOOL, OPT(continuous_system_sampling),
     OUT(continuous_system_sampling), NULL},
    {"backend", FT_BACKEND, OPT(backend), OUT(backend), NULL},
    {"profiling_engine", FT_ENGINE, OPT(profiling_engine), OUT(profiling_engine),
     "GPUFL_PROFILING_ENGINE"},
    {"config_file", FT_STR, OPT(config_file), OUT(config_file), "GPUFL_CONFIG_FILE"},
    {"flush_logs_always", FT_BOOL, OPT(flush_logs_always), OUT(flush_logs_always), NULL},
    {"enable_debug_output", FT_BOOL, OPT(enable_debug_output), OUT(enable_debug_output), NULL},
    {"enabled", FT_BOOL, OPT(enabled), NO_OUT, NULL},
    {"cupti_buffer_kib", FT_INT, OPT(cupti_buffer_kib), OUT(cupti_buffer_kib),
     "GPUFL_CUPTI_BUFFER_KIB"},
    {"cupti_max_buffers", FT_INT, OPT(cupti_max_buffers), OUT(cupti_max_buffers),
     "GPUFL_CUPTI_MAX_BUFFERS"},
    {"compact_kernel_details", FT_BOOL, OPT(compact_kernel_details), OUT(compact_kernel_details),
     "GPUFL_COMPACT_KERNEL_DETAILS"},
    {"pc_sampling_period", FT_INT, OPT(pc_sampling_period), OUT(pc_sampling_period),
     "GPUFL_PC_SAMPLING_PERIOD"},
    {"pm_sampling_metrics", FT_STR, OPT(pm_sampling_metrics), OUT(pm_sampling_metrics),
     "GPUFL_PM_SAMPLING_METRICS"},
    {"pm_sampling_interval_us", FT_INT, OPT(pm_sampling_interval_us), OUT(pm_sampling_interval_us),
     "GPUFL_PM_SAMPLING_INTERVAL_US"},
    {"pm_sampling_max_samples", FT_INT, OPT(pm_sampling_max_samples), OUT(pm_sampling_max_samples),
     "GPUFL_PM_SAMPLING_MAX_SAMPLES"},
    {"metrics", FT_STR, OPT(metrics), OUT(metrics), "GPUFL_METRICS"},
    {"range_per_kernel", FT_BOOL, OPT(range_per_kernel), OUT(range_per_kernel),
     "GPUFL_RANGE_PER_KERNEL"},
    {"sass_all_kernels", FT_BOOL, OPT(sass_all_kernels), OUT(sass_all_kernels),
     "GPUFL_SASS_ALL_KERNELS"},
    {"capture_range", FT_STR, OPT(capture_range), OUT(capture_range), "GPUFL_CAPTURE_RANGE"},
    {"capture_range_end", FT_STR, OPT(capture_range_end), OUT(capture_range_end),
     "GPUFL_CAPTURE_RANGE_END"},
    {"capture_delay_ms", FT_INT, OPT(capture_delay_ms), OUT(capture_delay_ms),
     "GPUFL_CAPTURE_DELAY_MS"},
    {"capture_duration_ms", FT_INT, OPT(capture_duration_ms), OUT(capture_duration_ms),
     "GPUFL_CAPTURE_DURATION_MS"},
    {"rotate_size", FT_STR, OPT(rotate_size), OUT(rotate_size), "GPUFL_LOG_ROTATE_BYTES"},
    {"rotate_interval_ms", FT_INT, OPT(rotate_interval_ms), OUT(rotate_interval_ms),
     "GPUFL_LOG_ROTATE_AFTER_MS"},
    {"max_disk", FT_STR, OPT(max_disk), OUT(max_disk), "GPUFL_MAX_DISK"},
};

_Static_assert(sizeof fl_config_fields / sizeof fl_config_fields[0] == FL_NFIELDS,
               "FL_NFIELDS counts the rows of fl_config_fields");

const char *const fl_config_backend_list = "Auto, Nvidia, Amd, None";
const char *const fl_config_engine_list =
    "Monitor, Trace, PcSampling, SassMetrics, RangeProfiler, Deep, PmSampling";

int fl_config_field_index(const char *name)
{
    for (int i = 0; i < FL_NFIELDS; i++)
        if (strcmp(fl_config_fields[i].name, name) == 0)
            return i;
    return -1;
}
