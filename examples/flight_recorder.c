/*
 * flight_recorder.c - the flight recorder (gpufl.h): one session, scopes in
 * three forms, a system phase, and where the logs went.
 * Build: cc flight_recorder.c $(pkg-config --cflags --libs gpu-profile)
 * Try:   GPUFL_DISABLED=1 ./a.out   (the same program, recording nothing)
 */
#include <gpufl.h>

#include <stdio.h>
#include <time.h>

static void step(void *user)
{
    (void)user;
    struct timespec t = {0, 20000000}; /* stands in for GPU work */
    nanosleep(&t, NULL);
}

int main(void)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "example";
    o.log_path = "gpufl-logs";            /* sessions go to gpufl-logs/<session_id>/ */
    o.system_sample_rate_ms = 10;         /* device + host metrics every 10 ms ... */
    o.continuous_system_sampling = false; /* ... inside scopes and phases only */
    gpufl_error err;
    gpufl_status st = gpufl_init(&o, &err);
    if (st == GPUFL_DISABLED) {
        printf("recorder switched off: running without it\n");
    } else if (st != GPUFL_OK) {
        fprintf(stderr, "gpufl_init: %s\n", err.message);
        return 1;
    }

    gpufl_system_start("training");
    for (int epoch = 0; epoch < 2; epoch++) {
        GPUFL_SCOPE("epoch") /* closed however the block is left */
        {
            gpufl_scope s = gpufl_scope_begin("forward");
            step(NULL);
            gpufl_scope_end(&s);
            gpufl_monitor("backward", step, NULL); /* the callback form */
        }
    }
    gpufl_system_stop("training");

    char dir[4096];
    if (gpufl_session_dir(dir, sizeof dir))
        printf("session written to %s/{device,scope,system}.log\n", dir);
    gpufl_shutdown();
    return 0;
}
