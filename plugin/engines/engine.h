/*
 * engine.h - what an engine of the CUPTI plugin promises the plugin, and
 * the one table of them (table.c).
 *
 * An engine is a folder of plugin/engines/ exporting one const fl_engine.
 * The plugin's files (cupti_plugin.c, resources.c, scope_hooks.c,
 * cupti_trace.c, engine_sets.c) walk fl_engines and never name an engine;
 * an engine includes this header, plugin/common/ and src/abi, never
 * another engine's header (tests/test_layout.py holds it).  Every engine
 * reports a FL_PC_* status and keeps its reason for its stats; an engine
 * the options do not ask for answers FL_PC_OFF and is not called again
 * but for stop, stats and release (its own no-ops).
 *
 * Order: the table is in teardown order: start, stop, drain, stats and
 * the resource callbacks walk it forward; release and a scope's begin walk
 * it backward (an engine that uses another's aggregator is listed after
 * it, so it is released first and opens inside it).
 */
#ifndef GP_PLUGIN_ENGINE_H
#define GP_PLUGIN_ENGINE_H

#include "../../src/abi/metrics_abi.h"
#include "../../src/abi/trace_abi.h"

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_agg fl_agg; /* common/aggregator.h */

/* What every engine gets from the plugin at start (tests give their own;
 * a field left zero means "none").  One struct for all engines. */
typedef struct fl_engine_env {
    void *ctx0;              /* the CUDA context current at start (NULL: none, or inside cuInit) */
    bool late;               /* a context was current at start: CUDA work came first */
    int64_t clock_offset_ns; /* wall ns = CUPTI ns + offset (the activity records' clock) */
    const gp_metrics_plugin *host; /* the Profiler Host API table (metrics_host.cpp) */
    /* The driver calls (tests inject them): the calling thread's CUDA
     * context (NULL: none) and cuCtxSynchronize on it (a CUresult). */
    void *(*current_ctx)(void);
    int (*ctx_synchronize)(void);
    /* cuptiActivityFlushAll(0), for an engine that must flush the activity
     * buffers while its own sampling is stopped. */
    void (*activity_flush)(void);
    /* Filled by an engine that shares its aggregator (PC sampling under
     * Deep), read by a later one that uses it (SASS metrics): agg and what
     * guards it, or refuse, why it cannot be shared. */
    fl_agg *agg;
    void (*lock)(void), (*unlock)(void);
    const char *refuse;
} fl_engine_env;

/* What an engine's choose hands over: the names scheduled and the passes
 * they need (valid during the call). */
typedef void (*fl_engine_take)(void *user, const char *const *names, size_t n, size_t passes);

typedef struct fl_engine {
    const char *name; /* profiling_engine's word: "PcSampling", ... */
    uint32_t slot;    /* FL_ENGINE_*: its slot of fl_trace_stats.engines */

    /* A session starts (options o; env may be filled further for the
     * engines after this one): the FL_PC_* status. */
    uint32_t (*start)(const fl_trace_options *o, fl_engine_env *env);

    /* CUDA contexts (NULL: not followed): created, about to be destroyed,
     * any thread; keeps_cubins: whether a loaded module's cubin is to be
     * kept (common/cubins.h) for this engine's source lines. */
    void (*context_created)(void *ctx);
    void (*context_destroying)(void *ctx);
    bool (*keeps_cubins)(void);
    /* The plugin could not follow contexts (its subscription): the reason
     * for an engine that needs them, said "<what>" (contexts_what). */
    void (*fail)(CUptiResult r, const char *what);
    const char *contexts_what;

    /* Outermost gpufl scopes (NULL: not wanted): whether this session's
     * options want them, and the application thread's begin and end. */
    bool (*wants_scopes)(const fl_trace_options *o);
    void (*scope_begin)(const char *name);
    void (*scope_end)(void);
    /* A kernel launch's entry on ctx, CUPTI's mangled symbol (NULL: none). */
    void (*kernel_launch)(void *ctx, const char *symbol);

    /* The activity API's sample aggregator this engine feeds through the
     * activity decoder (NULL, or answering NULL: none). */
    fl_agg *(*activity_sink)(void);
    /* Any thread: the next drain is a collection point (NULL: none). */
    void (*collect)(void);
    /* Whether an activity flush must wait now (NULL: never). */
    bool (*armed)(void);

    /* The writer thread: rows to sink.  The session ends: stop (the next
     * drain reads what is left).  Status, reason and counts into its
     * slot, out->engines[slot] (the cubin store's and the disassembler's
     * counts into the common part).  Everything freed. */
    void (*drain)(const fl_trace_sink *sink);
    void (*stop)(void);
    void (*stats)(fl_trace_stats *out);
    void (*release)(void);

    /* GPUFL_CUPTI_TRACE: the engine's CUPTI table replaced by one that
     * says every call (host: the Profiler Host API's table; NULL: none). */
    void (*trace)(const gp_metrics_plugin *host);
    const char *trace_what; /* "PC sampling", in the trace's first line */

    /* `gpu-profile metrics sets` / `fits` (metrics_abi.h's engine numbers;
     * -1: none).  defaults: the engine's set, at most cap names with each
     * one's slot; returns how many.  choose: what list schedules on the
     * chip of host object hobj, handed to take; a GP_ERR_* with err filled
     * when nothing can be. */
    int metrics_id;
    size_t (*defaults)(const char **names, unsigned *slots, size_t cap);
    gp_status (*choose)(const gp_metrics_plugin *table, void *hobj, const char *chip,
                        const char *list, bool one_pass, fl_engine_take take, void *user,
                        gp_error *err);
} fl_engine;

/* The hooks every engine defines under its prefix p (fl_pcs, ...),
 * declared once with the types of fl_engine's fields: p_engine_stop (the
 * session ends; the next drain reads what is left), p_engine_stats (its
 * status, reason and counts into its slot), p_engine_release (everything
 * freed), p_trace (GPUFL_CUPTI_TRACE: its CUPTI table replaced by the
 * traced one, <name>_trace.c) and its row, p_engine (<name>_engine.c). */
#define FL_ENGINE_DECLARE(p)                                                                       \
    void p##_engine_stop(void);                                                                    \
    void p##_engine_stats(fl_trace_stats *out);                                                    \
    void p##_engine_release(void);                                                                 \
    void p##_trace(const gp_metrics_plugin *host);                                                 \
    extern const fl_engine p##_engine

/* An engine's CUPTI calls as one list, X(field, params, cupti, traced): the
 * field of its api struct (which tests replace), the parameter list,
 * CUPTI's function and the GPUFL_CUPTI_TRACE wrapper that says the call
 * (its <name>_trace.c).  The struct, CUPTI's table and the traced table
 * are made from the one list, so a call added is a call traced. */
#define FL_API_FIELD(field, params, cupti, traced) CUptiResult(*field) params;
#define FL_API_CUPTI(field, params, cupti, traced) .field = cupti,
#define FL_API_TRACED(field, params, cupti, traced) .field = traced,

/* The rows the Profiler API engines share: initialisation, a context's
 * device and the device's chip (FL_API_DEVICE), de-initialisation. */
#define FL_API_DEVICE(X)                                                                           \
    X(profiler_init, (CUpti_Profiler_Initialize_Params *), cuptiProfilerInitialize,                \
      fl_say_prof_init)                                                                            \
    X(device_id, (CUcontext, uint32_t *), cuptiGetDeviceId, fl_say_device_id)                      \
    X(chip_name, (CUpti_Device_GetChipName_Params *), cuptiDeviceGetChipName, fl_say_chip)
#define FL_API_DEINIT(X)                                                                           \
    X(profiler_deinit, (CUpti_Profiler_DeInitialize_Params *), cuptiProfilerDeInitialize,          \
      fl_say_prof_deinit)

/* A defaults hook for an engine whose set is one flat list (set, n): each
 * name in its own slot, at most cap of them; how many (table.c). */
size_t fl_engine_flat_defaults(const char *const *set, size_t n, const char **names,
                               unsigned *slots, size_t cap);

/* Every engine, in teardown order (table.c). */
extern const fl_engine *const fl_engines[];
extern const size_t fl_n_engines;

#endif /* GP_PLUGIN_ENGINE_H */
