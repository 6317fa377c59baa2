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
#define FAKE_CUPTI_MISSING_EXIT 90
#include "../fakes/fake_cupti_driver.h"
#include "gpufl.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    fake_cupti_path = getenv("GPUFL_CUPTI_PLUGIN");
    if (strcmp(mode, "profiler") == 0) {
        cupti_launch(1);
        cupti_profiler(1, 2);
        cupti_launch(3);
        cupti_launch(4);
        cupti_profiler(0, 5);
        cupti_launch(6);
        cupti_profiler(1, 7);
        cupti_launch(8);
        cupti_profiler(0, 9);
        cupti_launch(10);
    } else if (strcmp(mode, "nvtx") == 0) {
        cupti_nvtx("epoch");
        cupti_launch(1);
        cupti_nvtx("step");
        cupti_launch(2);
        cupti_launch(3);
        cupti_nvtx(NULL);
        cupti_launch(4);
        cupti_nvtx("step");
        cupti_launch(5);
        cupti_nvtx(NULL);
        cupti_nvtx(NULL);
        cupti_launch(6);
    } else {
        cupti_launch(1);
        cupti_launch(2);
        cupti_launch(3);
    }
    gpufl_shutdown();
    fputs("child output\n", stdout);
    return 7;
}
