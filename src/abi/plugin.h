/*
 * abi/plugin.h - finding and opening the CUPTI plugin (plugin.c), shared by
 * the recorder's Trace engine (gpufl_cupti_plugin_v1, abi/trace.h) and the
 * metrics API (gpufl_cupti_metrics_v1, abi/metrics.h).
 */
#ifndef GP_ABI_PLUGIN_H
#define GP_ABI_PLUGIN_H

#include <stddef.h>

/* Opens the CUPTI plugin ($GPUFL_CUPTI_PLUGIN, else
 * libgpuprofile_cupti.so beside the library or the program it is linked
 * into) and returns its exported `symbol`.  NULL with why ("build
 * gpu-profile with a CUDA toolkit, or point GPUFL_CUPTI_PLUGIN at ...")
 * when it cannot be loaded or has no such symbol.  path receives the file
 * tried.  A loaded plugin stays open for the process's life. */
const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, char *why,
                             size_t len);

#endif /* GP_ABI_PLUGIN_H */
