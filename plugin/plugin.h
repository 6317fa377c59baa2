/*
 * plugin.h - what the CUPTI plugin's files promise each other.
 *
 *   cupti_plugin.c  the exported table (gpufl_cupti_plugin_v1), CUPTI
 *                   setup, the API callbacks
 *   pool.c          CUPTI's buffers: the bounded pool (pool.h)
 *   cbids.c         the API callbacks subscribed (cbids.h)
 *   inject.c        the injection entry points (CUDA_INJECTION64_PATH,
 *                   NVTX_INJECTION64_PATH)
 *   cupti_trace.c   GPUFL_CUPTI_TRACE: the engines' CUPTI calls said
 *   decode.c        activity buffers -> abi/trace_abi.h rows (decode.h)
 *   driver.c        device limits through libcuda, loaded at run time
 *   stacks.c        CPU stacks at launch: libunwind + libdw (stacks.h)
 *   common/         what the engines share (common/README.md)
 *   engines/        the profiling engines, one table (engines/engine.h)
 */
#ifndef GP_PLUGIN_H
#define GP_PLUGIN_H

#include "../src/abi/trace_abi.h"
#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The plugin's table (cupti_plugin.c), exported. */
extern const fl_trace_plugin gpufl_cupti_plugin_v1;
/* The injection's first part, inside cuInit (inject.c): what NVIDIA's
 * injection sample does there and nothing more - the buffer callbacks
 * registered, the kernel and copy activity kinds enabled, the one CUPTI
 * subscriber with the launch callbacks.  Records of launches made before
 * the session starts wait in the bounded pool until plugin_start; false
 * with why filled when CUPTI refuses. */
bool gp_plugin_attach_early(char *why, size_t len);
/* Undoes gp_plugin_attach_early when no session of this plugin runs (the
 * deferred start failed, or the program traces itself without it). */
void gp_plugin_detach_early(void);
/* NVTX_INJECTION64_PATH's answer when CUPTI 13.0.x was not handed NVTX
 * (inject.c): the reason, noted in the closing capture_capabilities. */
void gp_plugin_nvtx_note(const char *why);

/* The limits of CUDA device `ordinal` (attributes only; the core adds the
 * granularities).  False without a driver or for an unknown ordinal. */
bool gp_driver_limits(uint32_t ordinal, fl_gpu_limits *out);
/* cuInit(0) once, on a thread outside the driver (never in a CUPTI
 * callback, never inside cuInit): the injection's barrier on the driver's
 * own initialisation.  False without a driver. */
bool gp_driver_init(void);
/* The CUDA context current on the calling thread; NULL without a driver
 * or a context. */
void *gp_driver_context(void);
/* cuCtxSynchronize on the calling thread's context: its CUresult
 * (CUDA_ERROR_NOT_INITIALIZED without a driver). */
int gp_driver_ctx_synchronize(void);
/* Every device the driver lists, at most cap; 0 without a driver.  Each
 * one's limits are kept for gp_driver_limits_known. */
size_t gp_driver_devices(fl_gpu_limits *out, size_t cap);
/* The limits kept for `ordinal` (gp_driver_devices), without asking the
 * driver: what the writer thread and the CUPTI callbacks may call, since
 * at exit the driver may be torn down and a call into it block forever,
 * and inside a callback the launch holds the driver's lock. */
bool gp_driver_limits_known(uint32_t ordinal, fl_gpu_limits *out);
/* True when libcuda.so.1 is neither loaded nor loadable: no NVIDIA driver
 * is installed, the commonest cause of CUPTI's CUPTI_ERROR_UNKNOWN (999). */
bool gp_driver_missing(void);
/* The chip name (e.g. "GH100") of CUDA device `device` through CUPTI, only
 * when the driver lists it (cuptiDeviceGetChipName crashes without a
 * driver).  GP_OK, or GP_ERR_NOT_SUPPORTED / GP_ERR_CUPTI with err filled. */
gp_status gp_driver_chip_name(int device, char *out, size_t cap, gp_error *err);

#endif /* GP_PLUGIN_H */
