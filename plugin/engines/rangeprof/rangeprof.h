/*
 * rangeprof.h - the range profiler in the CUPTI plugin (rangeprof.c): what
 * it promises the plugin's table and the tests.
 *
 * One CUDA context per session (the first current at an outermost gpufl
 * scope's begin); one range per outermost scope (user range, user replay:
 * the metric set is cut to what one pass holds) or, per kernel, one range
 * per launch inside such a scope (auto range, kernel replay: CUPTI replays
 * each kernel for as many passes as the set needs).  The metric set's
 * config image and pass count come from the plugin's Profiler Host API
 * (metrics_host.cpp, gp_metrics_plugin); every CUPTI target call goes
 * through fl_rp_api so tests inject CUPTI's answers.
 *
 * Memory is bounded: one counter-data image per context, and the images
 * decoded at a range's end wait for the writer thread in a queue of at
 * most FL_RP_QUEUE_MAX images and FL_RP_QUEUE_BYTES bytes (more: dropped,
 * counted).
 */
#ifndef GP_PLUGIN_RANGEPROF_H
#define GP_PLUGIN_RANGEPROF_H

#include "../../../src/abi/metrics_abi.h"
#include "../../../src/abi/trace_abi.h"
#include "../engine.h"
#include "gpu_profile.h"

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <cupti_range_profiler.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_RP_METRICS_MAX 32
#define FL_RP_QUEUE_MAX 64
#define FL_RP_QUEUE_BYTES (64u << 20)
#define FL_RP_KERNEL_RANGES 1024 /* kernel ranges per window at most */
/* The counter-data image of a kernel window at most (its ranges chosen to
 * fit): CUPTI sizes it by ranges, ~680 KB a range for 8 metrics on GH100
 * (1024 ranges: 695 MB, seen on an H200), and every window's image is
 * copied into the queue, which holds FL_RP_QUEUE_BYTES. */
#define FL_RP_IMAGE_BYTES (16u << 20)

/* Every CUPTI call rangeprof.c makes, one X row each (engine.h: FL_API_*); tests replace them
 * (fl_rp_set_api). evaluate NULL: the host table's evaluate. */
/* clang-format off: one X row a line (clang-format would join them) */
#define FL_RP_CALLS(X)                                                                             \
    FL_API_DEVICE(X)                                                                               \
    FL_API_DEINIT(X)                                                                               \
    X(enable, (CUpti_RangeProfiler_Enable_Params *), cuptiRangeProfilerEnable, t_rp_enable)        \
    X(disable, (CUpti_RangeProfiler_Disable_Params *), cuptiRangeProfilerDisable, t_rp_disable)    \
    X(data_size, (CUpti_RangeProfiler_GetCounterDataSize_Params *),                                \
      cuptiRangeProfilerGetCounterDataSize, t_rp_size)                                             \
    X(data_init, (CUpti_RangeProfiler_CounterDataImage_Initialize_Params *),                       \
      cuptiRangeProfilerCounterDataImageInitialize, t_rp_init)                                     \
    X(set_config, (CUpti_RangeProfiler_SetConfig_Params *), cuptiRangeProfilerSetConfig,           \
      t_rp_config)                                                                                 \
    X(start, (CUpti_RangeProfiler_Start_Params *), cuptiRangeProfilerStart, t_rp_start)            \
    X(stop, (CUpti_RangeProfiler_Stop_Params *), cuptiRangeProfilerStop, t_rp_stop)                \
    X(push, (CUpti_RangeProfiler_PushRange_Params *), cuptiRangeProfilerPushRange, t_rp_push)      \
    X(pop, (CUpti_RangeProfiler_PopRange_Params *), cuptiRangeProfilerPopRange, t_rp_pop)          \
    X(decode, (CUpti_RangeProfiler_DecodeData_Params *), cuptiRangeProfilerDecodeData,             \
      t_rp_decode)                                                                                 \
    X(data_info, (CUpti_RangeProfiler_GetCounterDataInfo_Params *),                                \
      cuptiRangeProfilerGetCounterDataInfo, t_rp_info)                                             \
    X(range_info, (CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *),                         \
      cuptiRangeProfilerCounterDataGetRangeInfo, t_rp_range)
/* clang-format on */

typedef struct fl_rp_api {
    FL_RP_CALLS(FL_API_FIELD)
    gp_status (*evaluate)(void *host, const uint8_t *data, size_t size, size_t index,
                          const char *const *metrics, size_t n, double *values, gp_error *err);
} fl_rp_api;

/* NULL: CUPTI's own functions again. */
void fl_rp_set_api(const fl_rp_api *api);

/* The default set: each slot's candidates in order (the first the chip
 * knows is used), NULL-terminated; FL_RP_DEFAULT_SLOTS slots. */
#define FL_RP_DEFAULT_SLOTS 8
extern const char *const fl_rp_default_set[FL_RP_DEFAULT_SLOTS][3];

/* A metric set chosen for a chip. */
typedef struct fl_rp_choice {
    char *names[FL_RP_METRICS_MAX]; /* scheduled (malloc'd) */
    size_t n;
    size_t passes;  /* of the scheduled set */
    uint8_t *image; /* its config image (host->config_image) */
    size_t image_size;
    char left_out[512]; /* "name (why); ..." */
} fl_rp_choice;

/* Chooses the metrics of list (comma separated; NULL/"": the default set)
 * on a host object of the chip: names the chip does not know are left out
 * (named in left_out); one_pass (scope ranges): a metric that would make
 * the set need a second pass is left out.  Returns GP_OK, or a GP_ERR_*
 * with err filled when nothing can be scheduled or the host library fails. */
gp_status fl_rp_choose(const gp_metrics_plugin *host, void *host_obj, const char *list,
                       bool one_pass, fl_rp_choice *out, gp_error *err);
void fl_rp_choice_free(fl_rp_choice *c);

/* A range's values into row->known from the metrics evaluated (GPUFlight's
 * rules: hit rates outside 0..100 are not collected). */
void fl_rp_known(const char *const *names, const double *values, size_t n, double *known);

/* Starts the range profiler for a session (o->range_profiler): the
 * profiler initialised; contexts are set up at the first outermost scope.
 * Returns the FL_PC_* / FL_RP_* status (the reason kept for the stats).
 * It reads of env: host (the Profiler Host API's table; NULL: FL_PC_OFF),
 * current_ctx, late. */
uint32_t fl_rp_engine_start(const fl_trace_options *o, const fl_engine_env *env);

/* The application's thread, at an outermost scope's begin and end. */
void fl_rp_range_begin(const char *name);
void fl_rp_range_end(void);
/* The application's thread, at a kernel launch's entry on ctx (CUPTI's
 * mangled symbol name): named in its window's kernel ranges. */
void fl_rp_kernel_launch(void *ctx, const char *symbol);

/* Writer thread: the decoded images evaluated, one sink.perf_ranges call
 * per image. */
void fl_rp_engine_drain(const fl_trace_sink *sink);

/* FL_ENGINE_DECLARE: stop closes a range still open and disables the
 * profiler (the next drain evaluates what is queued). */
FL_ENGINE_DECLARE(fl_rp);

#endif /* GP_PLUGIN_RANGEPROF_H */
