/*
 * abi/plugin.c - finding and opening the CUPTI plugin, shared by the
 * recorder's Trace engine (recorder/session.c: gpufl_cupti_plugin_v1) and the
 * metrics API (metrics.c: gpufl_cupti_metrics_v1).  The plugin is
 * $GPUFL_CUPTI_PLUGIN, else libgpuprofile_cupti.so in the directory of the
 * object this code is linked into (libgpuprofile.so, or the program that
 * links the static library: the build tree puts gpu-profile beside the
 * plugin).  Loaded with RTLD_LOCAL and never closed.
 */
#include "plugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, char *why, size_t len)
{
    const char *env = getenv("GPUFL_CUPTI_PLUGIN");
    if (env && *env) {
        snprintf(path, path_len, "%s", env);
    } else {
        Dl_info di;
        const char *slash = NULL;
        if (dladdr((void *)&fl_plugin_symbol, &di) && di.dli_fname)
            slash = strrchr(di.dli_fname, '/');
        if (slash)
            snprintf(path, path_len, "%.*s/libgpuprofile_cupti.so", (int)(slash - di.dli_fname),
                     di.dli_fname);
        else
            snprintf(path, path_len, "libgpuprofile_cupti.so");
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, len,
                 "the CUPTI plugin could not be loaded (%s): build gpu-profile with a CUDA "
                 "toolkit, or point GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so",
                 e ? e : path);
        return NULL;
    }
    const void *p = dlsym(h, symbol);
    if (!p) {
        snprintf(why, len, "%s is not a gpu-profile CUPTI plugin (no %s)", path, symbol);
        dlclose(h);
        return NULL;
    }
    /* Kept open for the process's life: CUPTI holds its callbacks and
     * host objects. */
    return p;
}
