/*
 * inject.c - the plugin's injection entry points: InitializeInjection
 * (CUDA_INJECTION64_PATH) starts one session through the core library
 * found beside this file, from the GPUFL_* environment gpu-profile sets;
 * InitializeInjectionNvtx2 (NVTX_INJECTION64_PATH) hands NVTX to CUPTI.
 *
 * Promises: InitializeInjection runs inside the driver's cuInit and does
 * there only what NVIDIA's injection sample does (CUPTI's buffer
 * callbacks, activity kinds and subscriber: gp_plugin_attach_early; an
 * atexit handler), then returns; everything else - the core library
 * loaded, gpufl_init, NVML, the writer thread - runs on a detached thread
 * whose first call is cuInit(0), which waits for the driver's own
 * initialisation to end (GPUFlight's client defers the same way).
 * Launches made meanwhile are recorded: CUPTI keeps their records in the
 * plugin's bounded pool until the session drains it.  Idempotent and
 * thread-safe (one session per process, every call answers the first's
 * result); a core library GPUFL_CORE_LIBRARY names is checked before it is
 * loaded; why nothing is traced is one line on stderr, the only channel an
 * injected tool has.  NVTX is not handed to CUPTI 13.0.x, whose NVTX
 * injection is broken (NVIDIA/NVTX#125), unless GPUFL_NVTX_INJECTION=1 or
 * an nvtx:NAME capture range asks for it.
 */
#include "capture_cb.h"
#include "plugin.h"

#include "../src/util/fs.h" /* fl_library_check: the core library we load */

#include "gpufl.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

#define EXIT_WAIT_S 30 /* at exit, for a session start in progress */

static pthread_once_t inject_once = PTHREAD_ONCE_INIT;
static int inject_result;
/* The deferred start: its state under mu; done is signalled on cv. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool pending, exiting;
    void (*shutdown)(void); /* the core's gpufl_shutdown once it started */
} deferred = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, NULL};

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

/* The session, on the deferred thread once the driver is up; false when
 * nothing of this plugin traces (the caller then detaches CUPTI). */
static bool start_session(void)
{
    gp_error why = {0};
    void *core = open_core(&why);
    if (!core) {
        const char *e = why.message[0] ? why.message : dlerror();
        inject_say("the gpu-profile library could not be loaded (%s): set GPUFL_CORE_LIBRARY",
                   e ? e : "libgpuprofile");
        return false;
    }
    void (*opts_init)(gpufl_init_options *);
    gpufl_status (*init)(const gpufl_init_options *, gpufl_error *);
    void *a = dlsym(core, "gpufl_init_options_init"), *b = dlsym(core, "gpufl_init");
    if (!a || !b) {
        inject_say("%s", "the gpu-profile library has no gpufl_init");
        return false;
    }
    memcpy(&opts_init, &a, sizeof a);
    memcpy(&init, &b, sizeof b);
    /* The program started a session of its own before CUDA came up: it
     * traces itself (one session per process). */
    void *act = dlsym(core, "gpufl_is_active");
    bool (*is_active)(void) = NULL;
    memcpy(&is_active, &act, sizeof act);
    if (is_active && is_active())
        return false;
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
    pthread_mutex_lock(&deferred.mu);
    bool exiting = deferred.exiting;
    pthread_mutex_unlock(&deferred.mu);
    if (exiting)
        return false; /* the program is leaving: no session to start */
    gpufl_status st = init(&o, &err);
    /* The program's own gpufl_init won the race (it was starting when
     * this thread asked): it traces itself, as above. */
    if (st == GPUFL_ERR_STATE)
        return false;
    if (st != GPUFL_OK && st != GPUFL_DISABLED) {
        inject_say("%s", err.message);
        return false;
    }
    void *sd = dlsym(core, "gpufl_shutdown");
    pthread_mutex_lock(&deferred.mu);
    memcpy(&deferred.shutdown, &sd, sizeof sd);
    pthread_mutex_unlock(&deferred.mu);
    return st == GPUFL_OK;
}

/* The deferred thread: cuInit(0) first, a barrier on the driver's own
 * initialisation (the cuInit that called InitializeInjection holds the
 * driver's lock until it returns), then the session. */
static void *deferred_main(void *arg)
{
    (void)arg;
    bool traced = false;
    if (gp_driver_init())
        traced = start_session();
    else
        inject_say("%s", "cuInit(0) failed on the session's thread: nothing is traced");
    if (!traced)
        gp_plugin_detach_early();
    pthread_mutex_lock(&deferred.mu);
    deferred.pending = false;
    pthread_cond_broadcast(&deferred.cv);
    pthread_mutex_unlock(&deferred.mu);
    return NULL;
}

/* At exit: a session start still in progress is waited for (bounded), so
 * that it never runs on while the process tears down; the session itself
 * is ended by the core's own atexit handler, or here when it started too
 * late to register one. */
static void inject_atexit(void)
{
    pthread_mutex_lock(&deferred.mu);
    deferred.exiting = true;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += EXIT_WAIT_S;
    int rc = 0;
    while (deferred.pending && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&deferred.cv, &deferred.mu, &until);
    void (*shutdown)(void) = deferred.pending ? NULL : deferred.shutdown;
    pthread_mutex_unlock(&deferred.mu);
    if (shutdown)
        shutdown(); /* a no-op when the core's handler ended it first */
}

/* A child forked while the start was under way has no such thread: its
 * exit must not wait for one. */
static void deferred_after_fork_child(void)
{
    pthread_mutex_init(&deferred.mu, NULL);
    pthread_cond_init(&deferred.cv, NULL);
    deferred.pending = false;
}

/* The deferred thread, with every signal blocked (the program's signals
 * go to the program's threads, never to ours). */
static bool start_deferred(void)
{
    pthread_attr_t at;
    if (pthread_attr_init(&at) != 0)
        return false;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    bool made = pthread_create(&th, &at, deferred_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    return made;
}

/* Inside cuInit: CUPTI attached, the rest handed to a detached thread. */
static void inject(void)
{
    char why[512] = "";
    if (!gp_plugin_attach_early(why, sizeof why)) {
        inject_say("CUPTI refused the tracing callbacks (%s): nothing is traced", why);
        return;
    }
    pthread_atfork(NULL, NULL, deferred_after_fork_child);
    pthread_mutex_lock(&deferred.mu);
    deferred.pending = true;
    pthread_mutex_unlock(&deferred.mu);
    if (!start_deferred()) {
        pthread_mutex_lock(&deferred.mu);
        deferred.pending = false;
        pthread_mutex_unlock(&deferred.mu);
        gp_plugin_detach_early();
        inject_say("%s", "no thread could be made to start the session: nothing is traced");
        return;
    }
    atexit(inject_atexit);
    inject_result = 1;
}

/* CUDA calls this once per process, inside cuInit, when
 * CUDA_INJECTION64_PATH names this file; calling it again (or from several
 * threads) is harmless.  1: CUPTI is attached and the session is on its
 * way (its own failure is a line on stderr). */
EXPORT int InitializeInjection(void)
{
    pthread_once(&inject_once, inject);
    return inject_result;
}

/* For a program (and the tests) that must know the injected session is
 * up before it goes on: waits at most timeout_ms for the deferred start to
 * end.  1 when it has ended (the session started, or a line on stderr
 * said why not) or never began; 0 when it is still under way. */
EXPORT int gpufl_injection_wait(unsigned timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(timeout_ms / 1000u);
    until.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&deferred.mu);
    int rc = 0;
    while (deferred.pending && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&deferred.cv, &deferred.mu, &until);
    bool done = !deferred.pending;
    pthread_mutex_unlock(&deferred.mu);
    return done ? 1 : 0;
}

/* Whether NVTX goes to CUPTI: GPUFL_NVTX_INJECTION=1 asks for it, =0
 * refuses it; unset, every CUPTI but 13.0.x gets it (its NVTX injection
 * is known-broken: NVIDIA/NVTX#125; CUDA.jl turns it off there too),
 * unless --capture-range nvtx:NAME asks for NVTX ranges: without them
 * that window could never open. */
static bool nvtx_wanted(void)
{
    const char *v = getenv("GPUFL_NVTX_INJECTION");
    if (v && *v)
        return strcmp(v, "0") != 0;
    if (fl_capture_cb_nvtx_asked())
        return true;
    uint32_t version = 0;
    if (cuptiGetVersion(&version) != CUPTI_SUCCESS || version / 100 != 1300)
        return true;
    char why[256];
    snprintf(why, sizeof why,
             "NVTX not handed to CUPTI %u (CUDA 13.0: its NVTX injection is broken, "
             "NVIDIA/NVTX#125): set GPUFL_NVTX_INJECTION=1 to ask for it",
             (unsigned)version);
    gp_plugin_nvtx_note(why);
    return false;
}

/* NVTX calls this when NVTX_INJECTION64_PATH names this file: CUPTI
 * implements the NVTX hooks, so hand them to it (nvtx_wanted). */
EXPORT int InitializeInjectionNvtx2(const void *get_export_table)
{
    if (!nvtx_wanted())
        return 0;
    typedef int (*nvtx_init_fn)(const void *);
    void *h = dlopen("libcupti.so." GP_CUPTI_SOVERSION, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *f = dlsym(h, "InitializeInjectionNvtx2");
    nvtx_init_fn fn;
    memcpy(&fn, &f, sizeof f);
    return fn ? fn(get_export_table) : 0;
}
