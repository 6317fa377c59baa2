/*
 * inject.c - the plugin's injection entry points: InitializeInjection
 * (CUDA_INJECTION64_PATH) starts one session through the core library
 * found beside this file, from the GPUFL_* environment gpu-profile sets;
 * InitializeInjectionNvtx2 (NVTX_INJECTION64_PATH) hands NVTX to CUPTI.
 *
 * Promises: idempotent and thread-safe (one session per process, every
 * call answers the first's result); a core library GPUFL_CORE_LIBRARY
 * names is checked before it is loaded; why nothing is traced is one line
 * on stderr, the only channel an injected tool has.
 */
#include "plugin.h"

#include "../src/util/fs.h" /* fl_library_check: the core library we load */

#include "gpufl.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t inject_once = PTHREAD_ONCE_INIT;
static int inject_result;

/* A line on stderr is the only way an injected tool can say why it is not
 * tracing: the program is not ours and has no other channel. */
static void inject_say(const char *fmt, const char *arg)
{
    char line[1024];
    snprintf(line, sizeof line, fmt, arg);
    fprintf(stderr, "[gpufl] CUDA injection: %s\n", line);
}

/* The core library: $GPUFL_CORE_LIBRARY when set, checked before dlopen
 * runs its constructors (made absolute, ours or root's, writable by no
 * other user: util/fs.h), else the one beside this file, else the
 * loader's search.  NULL with err set (fl_library_check's status and
 * message) when the named file was refused; err untouched when dlopen
 * failed (dlerror says why). */
static void *open_core(gp_error *err)
{
    const char *env = getenv("GPUFL_CORE_LIBRARY");
    if (env && *env) {
        char real[PATH_MAX];
        if (fl_library_check(env, real, sizeof real, err) != GP_OK)
            return NULL;
        return dlopen(real, RTLD_NOW | RTLD_GLOBAL);
    }
    char path[PATH_MAX];
    Dl_info di;
    if (dladdr((const void *)&gpufl_cupti_plugin_v1, &di) && di.dli_fname) {
        const char *slash = strrchr(di.dli_fname, '/');
        if (slash) {
            snprintf(path, sizeof path, "%.*s/libgpuprofile.so.%d", (int)(slash - di.dli_fname),
                     di.dli_fname, GP_CORE_SOVERSION);
            void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (h)
                return h;
        }
    }
    snprintf(path, sizeof path, "libgpuprofile.so.%d", GP_CORE_SOVERSION);
    return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

static void inject(void)
{
    gp_error why = {0};
    void *core = open_core(&why);
    if (!core) {
        const char *e = why.message[0] ? why.message : dlerror();
        inject_say("the gpu-profile library could not be loaded (%s): set GPUFL_CORE_LIBRARY",
                   e ? e : "libgpuprofile");
        return;
    }
    void (*opts_init)(gpufl_init_options *);
    gpufl_status (*init)(const gpufl_init_options *, gpufl_error *);
    void *a = dlsym(core, "gpufl_init_options_init"), *b = dlsym(core, "gpufl_init");
    if (!a || !b) {
        inject_say("%s", "the gpu-profile library has no gpufl_init");
        return;
    }
    memcpy(&opts_init, &a, sizeof a);
    memcpy(&init, &b, sizeof b);
    /* The program started a session of its own before CUDA came up: it
     * traces itself (one session per process). */
    void *act = dlsym(core, "gpufl_is_active");
    bool (*is_active)(void) = NULL;
    memcpy(&is_active, &act, sizeof act);
    if (is_active && is_active()) {
        inject_result = 1;
        return;
    }
    gpufl_init_options o;
    opts_init(&o);
    const char *app = getenv("GPUFL_APP_NAME");
    const char *log = getenv("GPUFL_LOG_PATH");
    const char *engine = getenv("GPUFL_PROFILING_ENGINE");
    if (app && *app)
        o.app_name = app;
    if (log && *log)
        o.log_path = log;
    /* Injection means tracing, unless the environment names an engine
     * (which the core applies to a field left at its default). */
    if (!engine || !*engine)
        o.profiling_engine = GPUFL_ENGINE_TRACE;
    gpufl_error err;
    gp_plugin_injecting(true);
    gpufl_status st = init(&o, &err);
    gp_plugin_injecting(false);
    if (st == GPUFL_OK || st == GPUFL_DISABLED)
        inject_result = 1;
    else
        inject_say("%s", err.message);
}

/* CUDA calls this once per process when CUDA_INJECTION64_PATH names this
 * file; calling it again (or from several threads) is harmless. */
EXPORT int InitializeInjection(void)
{
    pthread_once(&inject_once, inject);
    return inject_result;
}

/* NVTX calls this when NVTX_INJECTION64_PATH names this file: CUPTI
 * implements the NVTX hooks, so hand them to it. */
EXPORT int InitializeInjectionNvtx2(const void *get_export_table)
{
    typedef int (*nvtx_init_fn)(const void *);
    void *h = dlopen("libcupti.so." GP_CUPTI_SOVERSION, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *f = dlsym(h, "InitializeInjectionNvtx2");
    nvtx_init_fn fn;
    memcpy(&fn, &f, sizeof f);
    return fn ? fn(get_export_table) : 0;
}
