/*
 * test_cupti_inject.c - the plugin's injection entry point called directly,
 * as CUDA calls it for CUDA_INJECTION64_PATH: the plugin is dlopen'ed, it
 * finds and loads the core library itself, and starts one session from the
 * GPUFL_* environment the gpu-profile command sets.  Called from several
 * threads at once and again later: one session, every call answers 1.
 * Without a driver the session records the fallback with CUPTI's message.
 * A core library that cannot be found, or that GPUFL_CORE_LIBRARY names
 * but another user could have written: 0 and one line on stderr, and the
 * refused file is never loaded.
 *
 * This executable links nothing of gpu-profile: it loads both libraries as
 * a CUDA program would.
 */
#include "fl_log.h"
#include "gpufl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*inject_fn)(void);

static char g_tmp[256];
static inject_fn g_inject;
static int g_results[4];

static void *call_inject(void *arg)
{
    int *out = arg;
    *out = g_inject();
    return NULL;
}

static inject_fn load_inject(const char *plugin)
{
    void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", plugin, dlerror());
        return NULL;
    }
    void *f = dlsym(h, "InitializeInjection");
    inject_fn fn;
    memcpy(&fn, &f, sizeof f);
    return fn;
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

/* In a child: the core library is not where the plugin looks. */
static void test_core_missing(const char *plugin)
{
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        setenv("GPUFL_CORE_LIBRARY", "/nonexistent/libgpuprofile.so.0", 1);
        inject_fn fn = load_inject(plugin);
        _exit(fn ? 10 + fn() : 3);
    }
    char buf[2048];
    int st = child_stderr(pid, fds, buf, sizeof buf);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 10); /* InitializeInjection returned 0 */
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
 * constructor never runs (it would leave a marker); 0 and one line. */
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
        inject_fn fn = load_inject(plugin);
        _exit(fn ? 10 + fn() : 3);
    }
    char buf[2048];
    int st = child_stderr(pid, fds, buf, sizeof buf);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 10); /* InitializeInjection returned 0 */
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
 * calls the injection: 1, no second session, nothing on stderr. */
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
            _exit(5);
        void *h = dlopen(core, RTLD_NOW | RTLD_GLOBAL);
        void *a = h ? dlsym(h, "gpufl_init") : NULL;
        void *b = h ? dlsym(h, "gpufl_shutdown") : NULL;
        if (!a || !b)
            _exit(3);
        int (*init)(const void *, void *);
        void (*fini)(void);
        memcpy(&init, &a, sizeof a);
        memcpy(&fini, &b, sizeof b);
        if (init(NULL, NULL) != 0) /* defaults: Monitor, log_path "gpufl" (cwd) */
            _exit(4);
        setenv("GPUFL_CORE_LIBRARY", core, 1);
        setenv("GPUFL_LOG_PATH", base, 1);
        inject_fn fn = load_inject(plugin);
        int r = fn ? fn() : -1;
        fini();
        _exit(10 + r);
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

int main(void)
{
    const char *plugin = getenv("GP_TEST_PLUGIN");
    const char *core = getenv("GP_TEST_CORE");
    if (!plugin || !core) {
        fprintf(stderr, "GP_TEST_PLUGIN / GP_TEST_CORE not set (run through ctest)\n");
        return 2;
    }
    test_core_missing(plugin);
    test_core_refused(plugin);
    test_session_already_active(plugin, core);

    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_inject_%d", (int)getpid());
    setenv("GPUFL_LOG_PATH", g_tmp, 1);
    setenv("GPUFL_APP_NAME", "inject_test", 1);
    setenv("GPUFL_CORE_LIBRARY", core, 1);
    unsetenv("GPUFL_PROFILING_ENGINE");
    unsetenv("GPUFL_CUPTI_PLUGIN");
    g_inject = load_inject(plugin);
    CHECK(g_inject != NULL);
    if (!g_inject)
        return check_done("test_cupti_inject");

    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, call_inject, &g_results[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK_INT(g_results[i], 1);
    CHECK_INT(g_inject(), 1);

    /* The core the plugin loaded has the one session. */
    void *h = dlopen(core, RTLD_NOW | RTLD_NOLOAD);
    CHECK(h != NULL);
    void *active = h ? dlsym(h, "gpufl_is_active") : NULL;
    void *shutdown = h ? dlsym(h, "gpufl_shutdown") : NULL;
    bool (*is_active)(void);
    void (*do_shutdown)(void);
    memcpy(&is_active, &active, sizeof active);
    memcpy(&do_shutdown, &shutdown, sizeof shutdown);
    CHECK(is_active && is_active());
    if (do_shutdown)
        do_shutdown();
    CHECK(is_active && !is_active());
    CHECK_INT(g_inject(), 1); /* once per process: no second session */

    char dir[1024];
    CHECK_INT(fl_only_session(g_tmp, dir, sizeof dir), 0);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *js = fl_first(&dev, "job_start");
    CHECK_STR(json_string_value(json_object_get(js, "app")), "inject_test");
    CHECK_INT(fl_int(js, "pid"), getpid());
    json_t *caps = fl_first(&dev, "capture_capabilities");
    CHECK_STR(json_string_value(json_object_get(caps, "requested_engine")), "nvidia.trace");
    if (access("/dev/nvidiactl", F_OK) != 0) {
        CHECK_STR(json_string_value(json_object_get(caps, "selected_engine")), "nvidia.monitor");
        json_t *list = json_object_get(caps, "capabilities");
        const char *msg = "";
        for (size_t i = 0; i < json_array_size(list); i++) {
            json_t *c = json_array_get(list, i);
            if (strcmp(json_string_value(json_object_get(c, "feature")), "kernel_events") == 0)
                msg = json_string_value(json_object_get(c, "message"));
        }
        CHECK_CONTAINS(msg, "CUPTI_ERROR_UNKNOWN (999)");
    }
    CHECK_INT(fl_count(&dev, "shutdown"), 1);
    fl_log_free(&dev);
    fl_rmtree(g_tmp);
    return check_done("test_cupti_inject");
}
