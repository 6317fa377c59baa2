/*
 * cbids.h - the CUPTI API callbacks the plugin subscribes, by kind: one
 * list each, in the runtime's and the driver's domains (cbids.c).
 */
#ifndef GP_PLUGIN_CBIDS_H
#define GP_PLUGIN_CBIDS_H

#include <cupti.h>
#include <stddef.h>

typedef struct fl_cb_id {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
} fl_cb_id;

/* Kernel launches: cudaLaunchKernel and its forms, graphs, cuLaunchKernel. */
extern const fl_cb_id fl_launch_cbids[];
extern const size_t fl_n_launch_cbids;
/* Allocations and frees, runtime and driver. */
extern const fl_cb_id fl_memop_cbids[];
extern const size_t fl_n_memop_cbids;
/* The calls that block the calling thread until the GPU is done
 * (cudaStreamWaitEvent makes a stream wait, not the host: not here). */
extern const fl_cb_id fl_sync_cbids[];
extern const size_t fl_n_sync_cbids;

#endif /* GP_PLUGIN_CBIDS_H */
