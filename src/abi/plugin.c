/*
 * abi/plugin.c - finding and opening the CUPTI plugin, shared by the
 * recorder's Trace engine (recorder/session.c: gpufl_cupti_plugin_v1) and the
 * metrics API (metrics.c: gpufl_cupti_metrics_v1).  The plugin is
 * $GPUFL_CUPTI_PLUGIN, else libgpuprofile_cupti.so in the directory of the
 * object this code is linked into (libgpuprofile.so, or the program that
 * links the static library: the build tree puts gpu-profile beside the
 * plugin).  Loaded with RTLD_LOCAL and never closed.
 *
 * Loading a library runs its constructors, so the file is checked first
 * (util/fs.c, fl_library_check): a relative $GPUFL_CUPTI_PLUGIN is made
 * absolute, and a file that is not regular, belongs to another user or can
 * be written by others is refused, never opened.
 */
#include "plugin.h"
#include "../util/fs.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, char *why, size_t len)
{
    const char *env = getenv("GPUFL_CUPTI_PLUGIN");
    int search = 0; /* a bare name: the loader's search path */
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
            search = snprintf(path, path_len, "libgpuprofile_cupti.so") > 0;
    }
    char real[PATH_MAX], bad[PATH_MAX + 160];
    if (!search) {
        if (fl_library_check(path, real, sizeof real, bad, sizeof bad) != 0) {
            if (access(path, F_OK) != 0) /* not there: the usual case without CUDA */
                snprintf(why, len,
                         "the CUPTI plugin could not be loaded (%s): build gpu-profile with a "
                         "CUDA toolkit, or point GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so",
                         bad);
            else
                snprintf(why, len, "the CUPTI plugin was not loaded: %s%s", bad,
                         env && *env ? " (GPUFL_CUPTI_PLUGIN)" : "");
            return NULL;
        }
        snprintf(path, path_len, "%s", real);
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
