/*
 * pcsamp.h - the PC sampling engine (pcsamp.c): the PC Sampling API's life
 * per CUDA context (enable, configure, start, stop, read with GetData on
 * the writer thread), every CUPTI call behind a table (fl_pcs_api) so
 * tests inject CUPTI's answers.  Its rows go through the shared
 * aggregator (common/aggregator.h), its source lines through the cubin
 * store (common/cubins.h), its sass channel through common/disasm.h.
 *
 * Memory is bounded whatever the run's length: one GetData buffer per
 * context, the aggregator's table and the store's bound.
 */
#ifndef GP_PLUGIN_PCSAMP_H
#define GP_PLUGIN_PCSAMP_H

#include "../../common/aggregator.h"
#include "../../common/cubins.h"
#include "../../common/cupti_error.h"
#include "../../common/disasm.h"
#include "../../../src/abi/trace_abi.h"
#include "../engine.h"

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------- the PC Sampling API */

/* Every CUPTI call pcsamp.c makes, one X row each (engine.h: FL_API_*); tests replace them
 * (fl_pcs_set_api). */
#define FL_PCS_CALLS(X)                                                                            \
    X(enable, (CUpti_PCSamplingEnableParams *), cuptiPCSamplingEnable, t_pc_enable)                \
    X(disable, (CUpti_PCSamplingDisableParams *), cuptiPCSamplingDisable, t_pc_disable)            \
    X(configure, (CUpti_PCSamplingConfigurationInfoParams *),                                      \
      cuptiPCSamplingSetConfigurationAttribute, t_pc_config)                                       \
    X(num_stall_reasons, (CUpti_PCSamplingGetNumStallReasonsParams *),                             \
      cuptiPCSamplingGetNumStallReasons, t_pc_num)                                                 \
    X(stall_reasons, (CUpti_PCSamplingGetStallReasonsParams *), cuptiPCSamplingGetStallReasons,    \
      t_pc_reasons)                                                                                \
    X(start, (CUpti_PCSamplingStartParams *), cuptiPCSamplingStart, t_pc_start)                    \
    X(stop, (CUpti_PCSamplingStopParams *), cuptiPCSamplingStop, t_pc_stop)                        \
    X(get_data, (CUpti_PCSamplingGetDataParams *), cuptiPCSamplingGetData, t_pc_get)               \
    X(device_id, (CUcontext, uint32_t *), cuptiGetDeviceId, fl_say_device_id)                      \
    X(activity_enable, (CUpti_ActivityKind), cuptiActivityEnable, t_act_enable)                    \
    X(activity_configure, (CUcontext, CUpti_ActivityPCSamplingConfig *),                           \
      cuptiActivityConfigurePCSampling, t_act_pc)

typedef struct fl_pcs_api {
    FL_PCS_CALLS(FL_API_FIELD)
} fl_pcs_api;

/* NULL: CUPTI's own functions again. */
void fl_pcs_set_api(const fl_pcs_api *api);

/* Deep: the session's aggregator, shared with the SASS engine so both
 * kinds of rows index one set of dictionaries (NULL: PC sampling off, out
 * of memory, or the activity method, whose decoder reads the aggregator
 * without the lock); valid until fl_pcs_engine_release.  Every use of it
 * outside pcsamp.c holds fl_pcs_engine_lock (the lock pcsamp.c holds for
 * its own uses). */
fl_agg *fl_pcs_engine_shared(void);
void fl_pcs_engine_lock(void);
void fl_pcs_engine_unlock(void);

/* Starts PC sampling for a session (options o): chooses the method (the
 * activity API where CUPTI still has it, else the PC Sampling API) and,
 * for a context already current on the calling thread (ctx, NULL: none),
 * enables it now.  Returns the FL_PC_* status; the reason is kept for
 * fl_pcs_engine_stats.  Contexts created later come through
 * fl_pcs_context_created. */
uint32_t fl_pcs_engine_start(const fl_trace_options *o, void *ctx);

/* Resource callbacks (the application's threads, through the plugin's one
 * resource dispatcher): a context created (its sampling enabled,
 * configured and armed), a context about to be destroyed (stopped, read
 * without a sink, disabled).  fl_pcs_keeps_cubins: whether a loaded
 * module's cubin is to be kept (source lines) for this engine. */
bool fl_pcs_keeps_cubins(void);
void fl_pcs_context_created(void *ctx);
void fl_pcs_context_destroying(void *ctx);

/* A refusal found by the plugin (its CUPTI subscription): the session's
 * reason, if it has none yet. */
void fl_pcs_engine_fail(CUptiResult r, const char *what);

/* Any thread: the next drain is a collection point. */
void fl_pcs_request_collect(void);

/* Whether sampling is armed on some context (CUPTI's activity flush must
 * wait: it returns no kernel record while PC sampling is armed). */
bool fl_pcs_armed(void);

/* Writer thread: at a collection point (or after stop), every context is
 * stopped, read until CUPTI has nothing left, and armed again (not after
 * stop: then disabled); then every row held goes to sink.  activity_flush
 * runs while sampling is stopped (the plugin's cuptiActivityFlushAll). */
void fl_pcs_engine_drain(const fl_trace_sink *sink, void (*activity_flush)(void));

/* The activity method's aggregator, for decode.c (NULL: the PC Sampling
 * API runs, or nothing). */
fl_agg *fl_pcs_engine_activity_sink(void);

/* FL_ENGINE_DECLARE: stop stops sampling on every context (the next drain
 * reads what is left and disables); stats gives status, method, reasons
 * and counts; release frees everything (contexts still enabled are
 * disabled unread). */
FL_ENGINE_DECLARE(fl_pcs);

#endif /* GP_PLUGIN_PCSAMP_H */
