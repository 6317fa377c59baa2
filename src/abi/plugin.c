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
#include "../util/error.h"
#include "../util/fs.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where the fix is the same for every failure to find or open it. */
#define BUILD_FIX                                                                                  \
    "build gpu-profile with a CUDA toolkit, or point GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so"

/* dlerror's words with the path they start with shortened (fl_path_show),
 * so that the fix after them still fits. */
static gp_status not_opened(const char *path, gp_error *err)
{
    const char *e = dlerror();
    size_t k = strlen(path);
    if (!e || strncmp(e, path, k) != 0)
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                            "the CUPTI plugin could not be loaded (%s): " BUILD_FIX,
                            fl_path_show(e ? e : path).text);
    return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                        "the CUPTI plugin could not be loaded (%s%.256s): " BUILD_FIX,
                        fl_path_show(path).text, e + k);
}

const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, gp_error *err)
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
    char real[PATH_MAX];
    if (!search) {
        gp_error bad;
        gp_status st = fl_library_check(path, real, sizeof real, &bad);
        if (st != GP_OK) {
            if (access(path, F_OK) != 0) /* not there: the usual case without CUDA */
                gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                             "the CUPTI plugin could not be loaded (%s): " BUILD_FIX, bad.message);
            else
                gp_error_set(err, st, "the CUPTI plugin was not loaded: %s%s", bad.message,
                             env && *env ? " (GPUFL_CUPTI_PLUGIN)" : "");
            return NULL;
        }
        snprintf(path, path_len, "%s", real);
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        not_opened(path, err);
        return NULL;
    }
    const void *p = dlsym(h, symbol);
    if (!p) {
        gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                     "%s is not a gpu-profile CUPTI plugin (no %s): point GPUFL_CUPTI_PLUGIN at "
                     "libgpuprofile_cupti.so",
                     fl_path_show(path).text, symbol);
        dlclose(h);
        return NULL;
    }
    /* Kept open for the process's life: CUPTI holds its callbacks and
     * host objects. */
    return p;
}
