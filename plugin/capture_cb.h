/*
 * capture_cb.h - the plugin's side of capture windows: CUPTI's callbacks
 * for cuProfilerStart / cuProfilerStop and NVTX ranges turned into the
 * core's edges (fl_trace_options.capture_edge).  The plugin decides
 * nothing: the core's gate (src/recorder/capture.c) opens and closes the
 * windows.  Used by the CUPTI plugin and the fake plugin alike, so the
 * tests on the fakes run this translation.
 */
#ifndef GP_PLUGIN_CAPTURE_CB_H
#define GP_PLUGIN_CAPTURE_CB_H

#include "../src/abi/trace_abi.h"

#include <cupti.h>
#include <stdbool.h>

/* At start: what o asks for (capture_edge NULL: nothing); the callbacks
 * to enable on subscriber (NULL: only remember, as the fake plugin does).
 * CUPTI_SUCCESS, or the call that failed's result. */
CUptiResult fl_capture_cb_start(const fl_trace_options *o, CUpti_SubscriberHandle subscriber);
/* At stop: no edge reported any more. */
void fl_capture_cb_stop(void);
/* The one answer to "does a capture window need NVTX handed to CUPTI?"
 * (InitializeInjectionNvtx2 may run before the session's options are
 * known): an NVTX capture range was started with, or GPUFL_CAPTURE_RANGE
 * (the command's --capture-range) is nvtx:NAME. */
bool fl_capture_cb_nvtx_asked(void);

/* Every API callback the plugin gets (any domain, data as CUPTI gives
 * it): an edge when it is one; a runtime or driver call's correlation id
 * noted as the highest seen (an NVTX edge's bound).  True when the
 * callback was a capture edge and nothing else. */
bool fl_capture_cb(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);

#endif /* GP_PLUGIN_CAPTURE_CB_H */
