/*
 * cbids.h - the CUPTI API callbacks the plugin subscribes, by kind: one
 * list each, in the runtime's and the driver's domains (cbids.c).
 */
#ifndef GP_PLUGIN_CBIDS_H
#define GP_PLUGIN_CBIDS_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

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
/* Graph launches alone (a subset of the launches): subscribed for their
 * executable graph's handle when graphs are traced and launches are not. */
extern const fl_cb_id fl_graph_cbids[];
extern const size_t fl_n_graph_cbids;

/* The executable graph a graph-launch callback's parameters name, as an
 * integer (GPUFlight's graph_exec_key); 0 for any other callback.  Reads
 * the callback's own parameters only: no driver call. */
uint64_t fl_graph_launch_exec(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void *params);

#endif /* GP_PLUGIN_CBIDS_H */
