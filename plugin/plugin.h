/*
 * plugin.h - what the CUPTI plugin's files promise each other.
 *
 *   cupti_plugin.c  the exported table (gpufl_cupti_plugin_v1), CUPTI
 *                   setup, the bounded buffer pool, injection entry points
 *   decode.c        activity buffers -> abi/trace_abi.h rows (decode.h)
 *   driver.c        device limits through libcuda, loaded at run time
 *   stacks.c        CPU stacks at launch: libunwind + libdw (stacks.h)
 *   pcsamp*.c       PC sampling (pcsamp.h)
 *   pmsamp*.c       PM sampling (pmsamp.h)
 */
#ifndef GP_PLUGIN_H
#define GP_PLUGIN_H

#include "../src/abi/trace_abi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The limits of CUDA device `ordinal` (attributes only; the core adds the
 * granularities).  False without a driver or for an unknown ordinal. */
bool gp_driver_limits(uint32_t ordinal, fl_gpu_limits *out);
/* The CUDA context current on the calling thread; NULL without a driver
 * or a context. */
void *gp_driver_context(void);
/* cuCtxSynchronize on the calling thread's context: its CUresult
 * (CUDA_ERROR_NOT_INITIALIZED without a driver). */
int gp_driver_ctx_synchronize(void);
/* Every device the driver lists, at most cap; 0 without a driver. */
size_t gp_driver_devices(fl_gpu_limits *out, size_t cap);
/* The chip name (e.g. "GH100") of CUDA device `device` through CUPTI, only
 * when the driver lists it (cuptiDeviceGetChipName crashes without a
 * driver).  0, or GP_ERR_NOT_SUPPORTED / GP_ERR_CUPTI with msg. */
int gp_driver_chip_name(int device, char *out, size_t cap, char *msg, size_t len);

#endif /* GP_PLUGIN_H */
