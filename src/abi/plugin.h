/*
 * abi/plugin.h - finding and opening the CUPTI plugin (plugin.c), shared by
 * the recorder's Trace engine (gpufl_cupti_plugin_v1, abi/trace_abi.h) and the
 * metrics API (gpufl_cupti_metrics_v1, abi/metrics_abi.h).
 */
#ifndef GP_ABI_PLUGIN_H
#define GP_ABI_PLUGIN_H

#include "metrics_abi.h"
#include "trace_abi.h"

#include <stdbool.h>
#include <stddef.h>

/* Opens the CUPTI plugin ($GPUFL_CUPTI_PLUGIN, else
 * libgpuprofile_cupti.so beside the library or the program it is linked
 * into) and returns its exported `symbol`.  NULL with why ("build
 * gpu-profile with a CUDA toolkit, or point GPUFL_CUPTI_PLUGIN at ...")
 * when it cannot be loaded or has no such symbol.  path receives the file
 * tried.  A loaded plugin stays open for the process's life. */
const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, char *why,
                             size_t len);

/* check.c: the Trace engine's table (trace_abi.h) and the metrics table
 * (metrics_abi.h) of the plugin, loaded with fl_plugin_symbol and checked:
 * NULL with why when the plugin cannot be loaded, speaks another interface
 * number, or was built with other struct sizes (why names the struct and
 * both sizes, and the fix). */
const fl_trace_plugin *fl_trace_plugin_load(char *why, size_t len);
const gp_metrics_plugin *gp_metrics_plugin_load(char *why, size_t len);
/* The checks alone, for a table at hand; path names it in why. */
bool fl_trace_plugin_check(const fl_trace_plugin *p, const char *path, char *why, size_t len);
bool gp_metrics_plugin_check(const gp_metrics_plugin *p, const char *path, char *why, size_t len);

#endif /* GP_ABI_PLUGIN_H */
