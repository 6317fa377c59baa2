/*
 * pmsamp.h - PM sampling in the CUPTI plugin (profiling_engine PmSampling):
 * what its two files promise each other and the plugin's table.
 *
 *   pmsamp_decode.c  the metric set (the caller's list, or the engine's
 *                    default cut to one pass for the chip) and the decoder:
 *                    a decoded counter-data image's completed samples
 *                    (GetCounterDataInfo, CounterDataGetSampleInfo) evaluated
 *                    into values through the Profiler Host API of
 *                    metrics_host.cpp, handed to the sink as fl_pm_row
 *   pmsamp.c         the life per device: Profiler initialize, chip, host
 *                    object and config image (metrics_host.cpp), Enable,
 *                    SetConfig, the counter-data image, Start; on the
 *                    writer thread DecodeData into the image and the rows;
 *                    Stop, Disable.  Every CUPTI call is behind fl_pms_api
 *                    so tests inject CUPTI's answers.
 *
 * Memory is bounded whatever the run's length: per device one config image
 * and one counter-data image of pm_max_samples samples, the hardware buffer
 * (FL_PMS_HW_BUFFER_BYTES, CUPTI's); the rows go to the sink in arrays of
 * at most FL_TRACE_BATCH.
 */
#ifndef GP_PLUGIN_PMSAMP_H
#define GP_PLUGIN_PMSAMP_H

#include "../../../src/abi/metrics_abi.h"
#include "../../../src/abi/trace_abi.h"
#include "../engine.h"
#include "../../common/cupti_error.h"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_PMS_MAX_DEVICES 16
#define FL_PMS_HW_BUFFER_BYTES (8u << 20) /* GPUFlight 1.3's: 8 MiB per device */

/* Every CUPTI call pmsamp.c makes, one X row each (engine.h: FL_API_*); tests replace them
 * (fl_pms_set_api). host: config images, pass counts and evaluation (metrics_host.cpp's table; the
 * plugin sets it, tests give their own or the real one). */
/* clang-format off: one X row a line (clang-format would join them) */
#define FL_PMS_CALLS(X)                                                                            \
    FL_API_DEVICE(X)                                                                               \
    X(enable, (CUpti_PmSampling_Enable_Params *), cuptiPmSamplingEnable, t_pm_enable)              \
    X(set_config, (CUpti_PmSampling_SetConfig_Params *), cuptiPmSamplingSetConfig, t_pm_config)    \
    X(data_size, (CUpti_PmSampling_GetCounterDataSize_Params *),                                   \
      cuptiPmSamplingGetCounterDataSize, t_pm_size)                                                \
    X(data_init, (CUpti_PmSampling_CounterDataImage_Initialize_Params *),                          \
      cuptiPmSamplingCounterDataImageInitialize, t_pm_init)                                        \
    X(start, (CUpti_PmSampling_Start_Params *), cuptiPmSamplingStart, t_pm_start)                  \
    X(stop, (CUpti_PmSampling_Stop_Params *), cuptiPmSamplingStop, t_pm_stop)                      \
    X(decode, (CUpti_PmSampling_DecodeData_Params *), cuptiPmSamplingDecodeData, t_pm_decode)      \
    X(data_info, (CUpti_PmSampling_GetCounterDataInfo_Params *),                                   \
      cuptiPmSamplingGetCounterDataInfo, t_pm_info)                                                \
    X(sample_info, (CUpti_PmSampling_CounterData_GetSampleInfo_Params *),                          \
      cuptiPmSamplingCounterDataGetSampleInfo, t_pm_sample)                                        \
    X(disable, (CUpti_PmSampling_Disable_Params *), cuptiPmSamplingDisable, t_pm_disable)
/* clang-format on */

typedef struct fl_pms_api {
    FL_PMS_CALLS(FL_API_FIELD)
    const gp_metrics_plugin *host;
} fl_pms_api;

/* NULL: CUPTI's own functions again (host: the one set last). */
void fl_pms_set_api(const fl_pms_api *api);
/* The Profiler Host API's table (metrics_host.cpp's gpufl_cupti_metrics_v1). */
void fl_pms_set_host(const gp_metrics_plugin *host);
const fl_pms_api *fl_pms_api_get(void);

/* The FL_PC_* status of a CUPTI error for PM sampling (fl_pcs_status_of,
 * and FL_PC_MIG of its own), and its message with the fix: "<what>
 * failed: <CUPTI's name> (<code>): <why and what to do>; the session runs
 * Trace". */
uint32_t fl_pms_status_of(CUptiResult r);
void fl_pms_explain(CUptiResult r, const char *what, char *out, size_t len);

/* ------------------------------------------------------- the metric set */

/* The engine's default set, in order of preference: SM active, tensor
 * pipes active, DRAM throughput, graphics engine active (all % of peak). */
extern const char *const fl_pms_default_metrics[];
extern const size_t fl_pms_n_default_metrics;

/* The metrics of a session on chip (canonical name) through host object
 * hobj: list (comma-separated; NULL or "": the default set) split into
 * out (malloc'd names, at most FL_PM_MAX_METRICS; free with
 * fl_pms_free_metrics) and the config image for them (malloc'd, free()).
 * The default set keeps the metrics the chip has and is cut until it needs
 * one pass; a caller's list is taken as is and refused when a metric is
 * unknown or the set needs more than one pass.  Returns GP_OK, or
 * GP_ERR_INVALID_ARG (the list), GP_ERR_NOT_SUPPORTED (no default metric
 * fits, no host table) or GP_ERR_NO_MEMORY with err naming the metric or
 * the pass count and the fix. */
gp_status fl_pms_metric_set(const fl_pms_api *api, void *hobj, const char *chip, const char *list,
                            char ***out, size_t *n, uint8_t **image, size_t *image_size,
                            gp_error *err);
void fl_pms_free_metrics(char **m, size_t n);

/* What one decode is about. */
typedef struct fl_pms_decode_in {
    CUpti_PmSampling_Object *pm; /* the device's PM sampling object */
    void *host;                  /* its Profiler Host object (metrics_host.cpp) */
    uint8_t *image;              /* the counter-data image DecodeData filled */
    size_t image_size;
    const char *const *metrics; /* n_metrics names, evaluated in this order */
    const uint32_t *metric_ids; /* their metric_dict ids */
    size_t n_metrics;
    uint32_t device_id;
    uint32_t first_index;    /* the first sample's sample_index */
    int64_t clock_offset_ns; /* wall ns = CUPTI ns + offset */
    uint64_t not_before_ns;  /* samples with a midpoint before this (wall) are left out */
} fl_pms_decode_in;

typedef struct fl_pms_decode_out {
    uint64_t samples;    /* completed samples read */
    uint64_t rows;       /* rows handed to the sink */
    uint64_t bad_values; /* values left out: not finite, or evaluation failed */
    uint64_t early;      /* samples before not_before_ns (the priming sample) */
    char msg[256];       /* the first failure, if any */
} fl_pms_decode_out;

/* The image's completed samples into rows for sink (pm_samples), in arrays
 * of at most FL_TRACE_BATCH: per sample its start/end times, the values of
 * every metric at once.  Adds into out; returns false when CUPTI could not
 * say how many samples the image holds (out->msg says why). */
bool fl_pms_decode(const fl_pms_api *api, const fl_pms_decode_in *in, const fl_trace_sink *sink,
                   fl_pms_decode_out *out);

/* ----------------------------------------------------------- the engine */

/* Starts PM sampling for a session (options o: metrics, interval, capacity;
 * o->clock_offset_ns set) and, for a context already current on the
 * calling thread (ctx; NULL: none), sets its device up now.  Returns the
 * FL_PC_* status; the reason is kept for fl_pms_engine_stats. */
uint32_t fl_pms_engine_start(const fl_trace_options *o, void *ctx);
/* A CUDA context created (any thread): its device set up once.  A context
 * about to be destroyed: its device's sampling stopped and disabled while
 * it still exists (the samples since the last drain are not read; noted
 * in pm_msg). */
void fl_pms_context_created(void *ctx);
void fl_pms_context_destroying(void *ctx);
/* A refusal found by the plugin: the session's reason, if it has none. */
void fl_pms_engine_fail(CUptiResult r, const char *what);
/* Writer thread: every sampling device's buffer decoded into rows for
 * sink; after stop, the devices also stopped and disabled first. */
void fl_pms_engine_drain(const fl_trace_sink *sink);
/* FL_ENGINE_DECLARE: after stop the next drain stops, reads what is left,
 * disables; release frees everything (devices still enabled are disabled
 * unread). */
FL_ENGINE_DECLARE(fl_pms);

#endif /* GP_PLUGIN_PMSAMP_H */
