/*
 * test_cupti_inject.c - the plugin's injection as CUDA drives it, over the
 * fake driver's init lock (tests/fakes/fake_libcuda.c) and the fake CUPTI
 * calls (tests/fakes/fake_cupti_api.c), both linked here: cuInit calls
 * InitializeInjection inside, under the driver's lock, as the real driver
 * does for CUDA_INJECTION64_PATH.
 *
 *  - Inside cuInit the plugin does what NVIDIA's sample does and returns:
 *    the core library is not loaded there, no other CUPTI call is made;
 *    the session starts on the plugin's own thread after its cuInit(0).
 *  - Launches before the session is ready are recorded (their buffer,
 *    completed before any writer exists, is kept and drained later); past
 *    the pool's bound they are dropped and counted, never silently.
 *  - No driver call inside a launch callback, no CUPTI call inside
 *    buffer_completed, no flush asked by the writer (CUPTI's period);
 *    cuInit again from four threads after injection (cuBLAS's own
 *    runtime) while launches go on: no violation, no hang.
 *  - In-process gpufl_init (Python's gpufl.init) before the runtime's first
 *    cuInit and after it (before / after `import torch`): both record
 *    every launch made in the session, with no violation.
 *  - NVTX is not handed to CUPTI 13.0.x unless GPUFL_NVTX_INJECTION=1.
 *  - The core library missing, refused, or a session of the program's
 *    own already running: one line on stderr (or none), CUPTI detached.
 *
 * Each case runs in a child (the driver initialises once per process).
 */
#include "fl_log.h"
#include "gpufl.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The fakes linked in (fake_libcuda.c, fake_cupti_api.c); cuInit is
 * cuda.h's. */
int fake_cuda_init_calls(void);
int fake_cuda_violations(void);
const char *fake_cuda_last_violation(void);
int fake_cuda_injection_result(void);
void fake_cuda_on_injected(void (*fn)(void));
void fake_cuda_gate_inits(int on);
int fake_cupti_launch(const char *name);
int fake_cupti_graph_launch(uintptr_t exec, uint32_t graph_id);
void fake_cupti_complete(void);
int fake_cupti_flush_all_calls(void);
uint32_t fake_cupti_flush_period_ms(void);
bool fake_cupti_subscribed(void);

#define WAIT_MS 60000u /* a bound for the deferred start, never expected */

static const char *g_core;

/* A symbol of an already loaded library (the plugin, the core), or NULL. */
static void *loaded_sym(const char *lib, const char *name)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    return h ? dlsym(h, name) : NULL;
}

/* The plugin's gpufl_injection_wait: the deferred start ended. */
static int injection_wait(const char *plugin)
{
    void *f = loaded_sym(plugin, "gpufl_injection_wait");
    int (*fn)(unsigned);
    memcpy(&fn, &f, sizeof f);
    return fn ? fn(WAIT_MS) : -1;
}

static bool core_active(void)
{
    void *f = loaded_sym(g_core, "gpufl_is_active");
    bool (*fn)(void);
    memcpy(&fn, &f, sizeof f);
    return fn && fn();
}

static void core_shutdown(void)
{
    void *f = loaded_sym(g_core, "gpufl_shutdown");
    void (*fn)(void);
    memcpy(&fn, &f, sizeof f);
    if (fn)
        fn();
}

/* The violations the fake driver saw: 0, or a test failure naming one. */
static void check_no_violation(void)
{
    if (fake_cuda_violations() != 0)
        fprintf(stderr, "fake driver: %d violations, the last: %s\n", fake_cuda_violations(),
                fake_cuda_last_violation());
    CHECK_INT(fake_cuda_violations(), 0);
}

/* The stderr a child wrote into the pipe fds (to its end), then its wait
 * status. */
static int child_stderr(pid_t pid, int fds[2], char *buf, size_t cap)
{
    close(fds[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fds[0], buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

/* In a child, after the case set its environment: the program's first
 * cuInit, which injects the plugin; then the deferred start waited for.
 * The exit status says what went wrong: 10 + InitializeInjection's answer
 * when all is well, 3 when the start never ended, 4 on a violation, 5
 * when CUPTI stayed attached after a start that traced nothing. */
static int inject_child(const char *plugin)
{
    setenv("CUDA_INJECTION64_PATH", plugin, 1);
    if (cuInit(0) != 0)
        return 2;
    int r = fake_cuda_injection_result();
    if (injection_wait(plugin) != 1)
        return 3;
    if (fake_cuda_violations() != 0) {
        fprintf(stderr, "violation: %s\n", fake_cuda_last_violation());
        return 4;
    }
    if (!core_active() && fake_cupti_subscribed())
        return 5;
    return 10 + r;
}

/* In a child: the core library is not where the plugin looks: CUPTI was
 * attached inside cuInit (1), the deferred start says why nothing is
 * traced, and CUPTI is detached again. */
static void test_core_missing(const char *plugin)
{
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        setenv("GPUFL_CORE_LIBRARY", "/nonexistent/libgpuprofile.so.0", 1);
        _exit(inject_child(plugin));
    }
    char buf[2048];
    int st = child_stderr(pid, fds, buf, sizeof buf);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 11);
    CHECK_CONTAINS(buf, "[gpufl] CUDA injection: the gpu-profile library could not be loaded");
    CHECK_CONTAINS(buf, "/nonexistent/libgpuprofile.so.0");
}

/* Copies src to dst with mode; 0 on success. */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
    size_t len = 0;
    char *data = check_read_file(src, &len);
    if (!data)
        return -1;
    FILE *f = fopen(dst, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    free(data);
    return ok && chmod(dst, mode) == 0 ? 0 : -1;
}

/* In a child: GPUFL_CORE_LIBRARY names, relative to the working directory,
 * a library every user may write: it is refused before dlopen, so its
 * constructor never runs (it would leave a marker); one line. */
static void test_core_refused(const char *plugin)
{
    const char *rogue = getenv("GP_TEST_FAKE_LIB");
    CHECK(rogue != NULL);
    if (!rogue)
        return;
    char dir[256], lib[300], marker[300];
    snprintf(dir, sizeof dir, "/tmp/gp_cupti_inject_rogue_%d", (int)getpid());
    snprintf(lib, sizeof lib, "%s/librogue.so", dir);
    snprintf(marker, sizeof marker, "%s/marker", dir);
    CHECK_INT(mkdir(dir, 0755), 0);
    CHECK_INT(copy_file(rogue, lib, 0666), 0);
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        if (chdir(dir) != 0)
            _exit(5);
        setenv("FAKE_LIB_MARKER", marker, 1);
        setenv("GPUFL_CORE_LIBRARY", "./librogue.so", 1);
        _exit(inject_child(plugin));
    }
    char buf[2048];
    int st = child_stderr(pid, fds, buf, sizeof buf);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 11);
    char want[400];
    snprintf(want, sizeof want,
             "[gpufl] CUDA injection: the gpu-profile library could not be loaded (%s is "
             "writable by every user: not loaded): set GPUFL_CORE_LIBRARY",
             lib); /* made absolute */
    CHECK_CONTAINS(buf, want);
    CHECK(access(marker, F_OK) != 0); /* its constructor never ran */
    fl_rmtree(dir);
}

/* In a child: the program already runs a session of its own when CUDA
 * calls the injection: 1, no second session, nothing on stderr, CUPTI
 * detached again (the program's session is Monitor). */
static void test_session_already_active(const char *plugin, const char *core)
{
    char base[256], cwd[256];
    snprintf(base, sizeof base, "/tmp/gp_cupti_inject_own_%d", (int)getpid());
    snprintf(cwd, sizeof cwd, "/tmp/gp_cupti_inject_cwd_%d", (int)getpid());
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        /* The program's own session goes to ./gpufl: in a directory of ours. */
        if (mkdir(cwd, 0755) != 0 || chdir(cwd) != 0)
            _exit(6);
        void *h = dlopen(core, RTLD_NOW | RTLD_GLOBAL);
        void *a = h ? dlsym(h, "gpufl_init") : NULL;
        if (!a)
            _exit(7);
        int (*init)(const void *, void *);
        memcpy(&init, &a, sizeof a);
        if (init(NULL, NULL) != 0) /* defaults: Monitor, log_path "gpufl" (cwd) */
            _exit(8);
        setenv("GPUFL_CORE_LIBRARY", core, 1);
        setenv("GPUFL_LOG_PATH", base, 1);
        int r = inject_child(plugin);
        bool active = core_active();
        core_shutdown();
        _exit(active ? r : 9);
    }
    char buf[2048];
    int st = child_stderr(pid, fds, buf, sizeof buf);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 11);
    CHECK_STR(buf, "");
    CHECK(access(base, F_OK) != 0); /* no injected session was started */
    char own[300];
    snprintf(own, sizeof own, "%s/gpufl", cwd);
    CHECK(access(own, F_OK) == 0); /* the program's own session is there */
    fl_rmtree(cwd);
}

/* The kernel rows of the only session under base. */
static size_t kernel_rows(const char *base)
{
    char dir[1024];
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    fl_log dev;
    if (fl_log_read(&dev, dir, "device") != 0)
        return (size_t)-1;
    size_t n = 0;
    for (size_t i = 0; i < dev.n; i++)
        if (strcmp(log_type(dev.lines[i]), "kernel_event_batch") == 0)
            n += json_array_size(json_object_get(dev.lines[i], "rows"));
    json_t *caps = fl_first(&dev, "capture_capabilities");
    CHECK_STR(json_string_value(json_object_get(caps, "selected_engine")), "nvidia.trace");
    CHECK_INT(fl_count(&dev, "shutdown"), 1);
    fl_log_free(&dev);
    return n;
}

/* The message of feature's capability in the session's closing
 * capture_capabilities, into out. */
static void closing_cap(const char *base, const char *feature, char *out, size_t cap)
{
    out[0] = '\0';
    char dir[1024];
    fl_log dev;
    if (fl_only_session(base, dir, sizeof dir) != 0 || fl_log_read(&dev, dir, "device") != 0)
        return;
    json_t *last = NULL;
    for (size_t i = 0; i < dev.n; i++)
        if (strcmp(log_type(dev.lines[i]), "capture_capabilities") == 0)
            last = dev.lines[i];
    json_t *list = json_object_get(last, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(c, "feature")), feature) == 0)
            snprintf(out, cap, "%s", json_string_value(json_object_get(c, "message")));
    }
    fl_log_free(&dev);
}

/* cuBLAS's own runtime, after injection: cuInit again; its result in
 * *arg (checked by the joining thread: the checks are not thread-safe). */
static void *second_runtime(void *arg)
{
    *(int *)arg = (int)cuInit(0);
    return NULL;
}

static bool g_core_loaded_in_init;

/* Inside the first cuInit, right after InitializeInjection returned. */
static void on_injected(void)
{
    void *h = dlopen(g_core, RTLD_LAZY | RTLD_NOLOAD);
    g_core_loaded_in_init = h != NULL;
    if (h)
        dlclose(h);
}

/* Injection as the driver makes it, in this (child) process. */
static void inject_case(const char *plugin, const char *base)
{
    setenv("GPUFL_LOG_PATH", base, 1);
    setenv("GPUFL_APP_NAME", "inject_test", 1);
    setenv("GPUFL_CORE_LIBRARY", g_core, 1);
    setenv("CUDA_INJECTION64_PATH", plugin, 1);
    unsetenv("GPUFL_PROFILING_ENGINE");
    unsetenv("GPUFL_CUPTI_PLUGIN");
    unsetenv("GPUFL_NVTX_INJECTION");
    fake_cuda_on_injected(on_injected);
    /* The plugin's own cuInit(0) waits: the session cannot be ready. */
    fake_cuda_gate_inits(1);
    CHECK_INT(cuInit(0), 0);
    CHECK_INT(fake_cuda_injection_result(), 1);
    CHECK(!g_core_loaded_in_init); /* nothing of the session inside cuInit */
    CHECK_INT(fake_cupti_launch("early_a"), 0);
    CHECK_INT(fake_cupti_launch("early_b"), 0);
    fake_cupti_complete(); /* CUPTI's thread, before any writer exists */
    CHECK_INT(fake_cupti_launch("early_c"), 0);
    CHECK(!core_active());
    fake_cuda_gate_inits(0);
    void *h = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
    CHECK_INT(injection_wait(plugin), 1);
    CHECK(core_active());
    /* The program's own gpufl_init now (Python: gpufl.init after CUDA came
     * up, under gpu-profile): refused, the message naming the injection. */
    void *gi = loaded_sym(g_core, "gpufl_init");
    gpufl_status (*own_init)(const gpufl_init_options *, gpufl_error *);
    memcpy(&own_init, &gi, sizeof gi);
    gpufl_error ge;
    memset(&ge, 0, sizeof ge);
    CHECK(own_init && own_init(NULL, &ge) == GPUFL_ERR_STATE);
    CHECK_CONTAINS(ge.message, "this process is traced through CUDA_INJECTION64_PATH");
    /* A second runtime's cuInit from four threads while launches go on;
     * InitializeInjection again: the same answer, no second session. */
    pthread_t th[4];
    int rc[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, second_runtime, &rc[i]);
    CHECK_INT(fake_cupti_launch("late_a"), 0);
    CHECK_INT(fake_cupti_launch("late_b"), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(rc[i], 0);
    }
    void *f = h ? dlsym(h, "InitializeInjection") : NULL;
    int (*again)(void);
    memcpy(&again, &f, sizeof f);
    CHECK(again && again() == 1);
    /* NVTX under CUPTI 13.0.x (the fake's version): not handed on. */
    void *nv = h ? dlsym(h, "InitializeInjectionNvtx2") : NULL;
    int (*nvtx)(const void *);
    memcpy(&nvtx, &nv, sizeof nv);
    CHECK(nvtx && nvtx(NULL) == 0);
    /* The program's, the plugin's barrier, the four others. */
    CHECK_INT(fake_cuda_init_calls(), 6);
    CHECK_INT(fake_cupti_flush_period_ms(), 1000); /* CUPTI's period, not the writer */
    core_shutdown();
    CHECK(!core_active());
    CHECK_INT(fake_cupti_flush_all_calls(), 2); /* stop()'s forced flushes only */
    check_no_violation();
    CHECK_INT(kernel_rows(base), 5);
    char msg[1024];
    closing_cap(base, "nvtx_ranges", msg, sizeof msg);
    CHECK_CONTAINS(msg, "NVTX not handed to CUPTI 130001 (CUDA 13.0: its NVTX injection is broken, "
                        "NVIDIA/NVTX#125): set GPUFL_NVTX_INJECTION=1 to ask for it");
}

/* Injection with a pool of two 64 KiB buffers, and more launches before
 * the session is ready than they hold: they are kept up to the bound, the
 * rest dropped and counted (never silently), and the session, once up,
 * records again. */
static void bounded_case(const char *plugin, const char *base)
{
    setenv("GPUFL_LOG_PATH", base, 1);
    setenv("GPUFL_CORE_LIBRARY", g_core, 1);
    setenv("CUDA_INJECTION64_PATH", plugin, 1);
    setenv("GPUFL_CUPTI_BUFFER_KIB", "64", 1);
    setenv("GPUFL_CUPTI_MAX_BUFFERS", "2", 1);
    fake_cuda_gate_inits(1);
    CHECK_INT(cuInit(0), 0);
    size_t per = 65536 / ((sizeof(CUpti_ActivityKernel10) + 7) & ~(size_t)7);
    for (size_t i = 0; i < 2 * per + 25; i++)
        fake_cupti_launch("early");
    CHECK(!core_active());
    fake_cuda_gate_inits(0);
    CHECK_INT(injection_wait(plugin), 1);
    CHECK(core_active());
    /* One writer cycle: the kept buffers drained, back in the pool. */
    void *f = loaded_sym(g_core, "gpufl_flush");
    void (*flush)(void);
    memcpy(&flush, &f, sizeof f);
    CHECK(flush != NULL);
    if (flush)
        flush();
    for (int i = 0; i < 3; i++)
        CHECK_INT(fake_cupti_launch("late"), 0);
    core_shutdown();
    check_no_violation();
    CHECK_INT(kernel_rows(base), 2 * per + 3);
    char msg[1024];
    closing_cap(base, "kernel_events", msg, sizeof msg);
    CHECK_CONTAINS(msg, "25 activity records dropped by CUPTI, 25 buffer requests refused (");
}

/* In-process gpufl_init with the Trace engine: before the runtime's first
 * cuInit (Python: gpufl.init before import torch), or after it and a
 * launch the session cannot see (after import torch); under_injection:
 * before, in a program gpu-profile also injects (gpufl_init's own cuInit
 * then calls InitializeInjection, which must not wait for the start in
 * progress; the program's session is the one). */
static void inprocess_case(const char *base, bool runtime_first, bool under_injection)
{
    if (!under_injection)
        unsetenv("CUDA_INJECTION64_PATH");
    if (runtime_first) {
        CHECK_INT(cuInit(0), 0);
        CHECK_INT(fake_cupti_launch("before_session"), 0);
    }
    void *core = dlopen(g_core, RTLD_NOW | RTLD_GLOBAL);
    void *a = core ? dlsym(core, "gpufl_init_options_init") : NULL;
    void *b = core ? dlsym(core, "gpufl_init") : NULL;
    CHECK(a && b);
    if (!a || !b)
        return;
    void (*opts_init)(gpufl_init_options *);
    gpufl_status (*init)(const gpufl_init_options *, gpufl_error *);
    memcpy(&opts_init, &a, sizeof a);
    memcpy(&init, &b, sizeof b);
    gpufl_init_options o;
    opts_init(&o);
    o.app_name = "inprocess_test";
    o.log_path = base;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    gpufl_error err;
    CHECK_INT(init(&o, &err), GPUFL_OK);
    /* gpufl_init's own cuInit, outside every callback (the first one
     * when the runtime has not come up); injected, the plugin's barrier is
     * that same once-only cuInit (plugin/driver.c), waited for. */
    if (under_injection)
        CHECK_INT(injection_wait(getenv("CUDA_INJECTION64_PATH")), 1);
    CHECK_INT(fake_cuda_init_calls(), runtime_first ? 2 : 1);
    if (!runtime_first)
        CHECK_INT(cuInit(0), 0); /* the runtime's own, later */
    CHECK_INT(fake_cupti_launch("in_a"), 0);
    CHECK_INT(fake_cupti_launch("in_b"), 0);
    pthread_t th;
    int rc = -1;
    pthread_create(&th, NULL, second_runtime, &rc);
    CHECK_INT(fake_cupti_launch("in_c"), 0);
    pthread_join(th, NULL);
    CHECK_INT(rc, 0);
    CHECK_INT(fake_cuda_init_calls(), 3);
    core_shutdown();
    check_no_violation();
    CHECK_INT(kernel_rows(base), 3); /* not the launch before the session */
}

/* CUDA graphs traced in-process: each graph launch's graph_launch_event
 * carries the executable graph its cudaGraphLaunch callback named, as
 * GPUFlight writes it ("0x" and the handle in hex), read from the
 * callback's parameters with no driver call. */
static void graphs_case(const char *base)
{
    unsetenv("CUDA_INJECTION64_PATH");
    void *core = dlopen(g_core, RTLD_NOW | RTLD_GLOBAL);
    void *a = core ? dlsym(core, "gpufl_init_options_init") : NULL;
    void *b = core ? dlsym(core, "gpufl_init") : NULL;
    CHECK(a && b);
    if (!a || !b)
        return;
    void (*opts_init)(gpufl_init_options *);
    gpufl_status (*init)(const gpufl_init_options *, gpufl_error *);
    memcpy(&opts_init, &a, sizeof a);
    memcpy(&init, &b, sizeof b);
    gpufl_init_options o;
    opts_init(&o);
    o.app_name = "graphs_test";
    o.log_path = base;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.enable_cuda_graphs_tracking = true;
    gpufl_error err;
    CHECK_INT(init(&o, &err), GPUFL_OK);
    CHECK_INT(cuInit(0), 0);
    CHECK_INT(fake_cupti_graph_launch(0xdeadbeef, 5), 0);
    CHECK_INT(fake_cupti_graph_launch(0xdeadbeef, 5), 0);
    CHECK_INT(fake_cupti_graph_launch(0x7f00c0de0000, 6), 0);
    core_shutdown();
    check_no_violation();
    char dir[1024];
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    fl_log scope;
    if (fl_log_read(&scope, dir, "scope") != 0) {
        CHECK(!"scope log read");
        return;
    }
    char got[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < scope.n; i++) {
        json_t *g = scope.lines[i];
        if (strcmp(log_type(g), "graph_launch_event") != 0)
            continue;
        const char *key = json_string_value(json_object_get(g, "graph_exec_key"));
        used += (size_t)snprintf(got + used, sizeof got - used, "%s%lld:%s", used ? "," : "",
                                 (long long)fl_int(g, "graph_id"), key ? key : "(none)");
    }
    CHECK_STR(got, "5:0xdeadbeef,5:0xdeadbeef,6:0x7f00c0de0000");
    fl_log_free(&scope);
}

static void run_graphs(const char *plugin, const char *base, int arg)
{
    (void)plugin;
    (void)arg;
    graphs_case(base);
}

/* Runs one case in a child; its checks fail there, its status here. */
static void in_child(const char *what, void (*fn)(const char *, const char *, int),
                     const char *plugin, int arg)
{
    char base[256];
    snprintf(base, sizeof base, "/tmp/gp_cupti_inject_%s_%d", what, (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        check_passed_ = check_failed_ = 0; /* the child's own checks only */
        fn(plugin, base, arg);
        int rc = check_done(what) == 0 ? 0 : 1;
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "case %s: child status 0x%x\n", what, st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fl_rmtree(base);
}

static void run_inject(const char *plugin, const char *base, int arg)
{
    (void)arg;
    inject_case(plugin, base);
}

static void run_bounded(const char *plugin, const char *base, int arg)
{
    (void)arg;
    bounded_case(plugin, base);
}

static void run_inprocess(const char *plugin, const char *base, int how)
{
    if (how == 2) {
        setenv("CUDA_INJECTION64_PATH", plugin, 1);
        setenv("GPUFL_CORE_LIBRARY", g_core, 1);
        char other[300];
        snprintf(other, sizeof other, "%s_injected", base);
        setenv("GPUFL_LOG_PATH", other, 1);
        inprocess_case(base, false, true);
        CHECK_INT(fake_cuda_injection_result(), 1);
        CHECK_INT(injection_wait(plugin), 1);
        CHECK(access(other, F_OK) != 0); /* no second, injected session */
        return;
    }
    inprocess_case(base, how == 1, false);
}

int main(void)
{
    const char *plugin = getenv("GP_TEST_PLUGIN");
    g_core = getenv("GP_TEST_CORE");
    if (!plugin || !g_core) {
        fprintf(stderr, "GP_TEST_PLUGIN / GP_TEST_CORE not set (run through ctest)\n");
        return 2;
    }
    test_core_missing(plugin);
    test_core_refused(plugin);
    test_session_already_active(plugin, g_core);
    in_child("inject", run_inject, plugin, 0);
    in_child("bounded", run_bounded, plugin, 0);
    in_child("before_runtime", run_inprocess, plugin, 0);
    in_child("after_runtime", run_inprocess, plugin, 1);
    in_child("before_runtime_injected", run_inprocess, plugin, 2);
    in_child("graphs", run_graphs, plugin, 0);
    return check_done("test_cupti_inject");
}
