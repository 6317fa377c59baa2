/*
 * capture_child.c - a CUDA program under `gpu-profile --engine trace`
 * without CUDA (built as gp_capture_child, only with the CUPTI plugin's
 * tests): gpufl_init from the environment the command gave it (engine,
 * log directory, plugin = the fake plugin, GPUFL_CAPTURE_*), as the
 * injected plugin's InitializeInjection starts it, then CUPTI's callbacks through the fake
 * plugin's hooks:
 *
 *   profiler   launch 1 | cuProfilerStart 2, launches 3 4, cuProfilerStop 5 |
 *              launch 6 | start 7, launch 8, stop 9 | launch 10
 *   nvtx       launch 1 in "epoch" | "step": 2 3 | 4 | "step": 5 | 6
 *   plain      launches 1 2 3
 *
 * then shuts the session down, writes "child output\n" to stdout and exits
 * 7 (the run's status must be this one).  Test code only.
 */
#include "gpufl.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *plugin;

static void *sym(const char *name)
{
    void *f = plugin ? dlsym(plugin, name) : NULL;
    if (!f) {
        fprintf(stderr, "capture_child: the plugin has no %s\n", name);
        exit(90);
    }
    return f;
}

static void launch(uint32_t corr)
{
    void (*fn)(uint32_t);
    void *f = sym("fake_cupti_launch");
    memcpy(&fn, &f, sizeof f);
    fn(corr);
}

static void profiler(int start, uint32_t corr)
{
    void (*fn)(int, uint32_t);
    void *f = sym("fake_cupti_profiler");
    memcpy(&fn, &f, sizeof f);
    fn(start, corr);
}

static void nvtx(const char *name)
{
    void (*fn)(const char *);
    void *f = sym("fake_cupti_nvtx");
    memcpy(&fn, &f, sizeof f);
    fn(name);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.backend = GPUFL_BACKEND_NONE;
    /* What the plugin's InitializeInjection takes from the environment. */
    const char *app = getenv("GPUFL_APP_NAME"), *log = getenv("GPUFL_LOG_PATH");
    if (app && *app)
        o.app_name = app;
    if (log && *log)
        o.log_path = log;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "capture_child: gpufl_init: %s\n", err.message);
        return 91;
    }
    const char *path = getenv("GPUFL_CUPTI_PLUGIN");
    plugin = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (strcmp(mode, "profiler") == 0) {
        launch(1);
        profiler(1, 2);
        launch(3);
        launch(4);
        profiler(0, 5);
        launch(6);
        profiler(1, 7);
        launch(8);
        profiler(0, 9);
        launch(10);
    } else if (strcmp(mode, "nvtx") == 0) {
        nvtx("epoch");
        launch(1);
        nvtx("step");
        launch(2);
        launch(3);
        nvtx(NULL);
        launch(4);
        nvtx("step");
        launch(5);
        nvtx(NULL);
        nvtx(NULL);
        launch(6);
    } else {
        launch(1);
        launch(2);
        launch(3);
    }
    gpufl_shutdown();
    fputs("child output\n", stdout);
    return 7;
}
