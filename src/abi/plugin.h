/*
 * abi/plugin.h - finding and opening the CUPTI plugin (plugin.c), shared by
 * the recorder's Trace engine (gpufl_cupti_plugin_v1, abi/trace_abi.h) and the
 * metrics API (gpufl_cupti_metrics_v1, abi/metrics_abi.h).
 */
#ifndef GP_ABI_PLUGIN_H
#define GP_ABI_PLUGIN_H

#include "metrics_abi.h"
#include "trace_abi.h"

#include <stddef.h>

/* Opens the CUPTI plugin ($GPUFL_CUPTI_PLUGIN, else
 * libgpuprofile_cupti.so beside the library or the program it is linked
 * into) and returns its exported `symbol`; path receives the file tried.
 * NULL with err filled (NULL accepted) when it cannot be used:
 * GP_ERR_BACKEND_UNAVAILABLE when it is not there, cannot be opened or
 * has no such symbol ("... build gpu-profile with a CUDA toolkit, or point
 * GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so"), fl_library_check's
 * GP_ERR_INVALID_ARG when the file is refused unopened (another user can
 * write it).  Paths in the message go through fl_path_show, so the fix at
 * its end always fits.  A loaded plugin stays open for the process's
 * life. */
const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, gp_error *err);

/* check.c: the Trace engine's table (trace_abi.h) and the metrics table
 * (metrics_abi.h) of the plugin, loaded with fl_plugin_symbol and checked:
 * NULL with err when the plugin cannot be loaded (fl_plugin_symbol's
 * status), speaks another interface number or was built with other struct
 * sizes (GP_ERR_BACKEND_UNAVAILABLE; the message names the plugin, the
 * struct and both sizes, and the fix). */
const fl_trace_plugin *fl_trace_plugin_load(gp_error *err);
const gp_metrics_plugin *gp_metrics_plugin_load(gp_error *err);
/* The checks alone, for a table at hand; path names it in the message. */
gp_status fl_trace_plugin_check(const fl_trace_plugin *p, const char *path, gp_error *err);
gp_status gp_metrics_plugin_check(const gp_metrics_plugin *p, const char *path, gp_error *err);

#endif /* GP_ABI_PLUGIN_H */
