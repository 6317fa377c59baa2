/*
 * profile_call.c - the decorator style: profile one function call.
 * Build: cc profile_call.c $(pkg-config --cflags --libs gpu-profile)
 */
#include <gpu_profile.h>

#include <stdio.h>
#include <time.h>

static int train(void *arg)
{
    (void)arg;
    struct timespec t = {0, 300000000}; /* stands in for GPU work */
    nanosleep(&t, NULL);
    return 0;
}

static void sync_gpu(void *user)
{
    (void)user; /* e.g. cudaDeviceSynchronize() */
}

int main(void)
{
    gp_options o;
    gp_options_init(&o); /* device 0, 0.2 s, auto backend, strict */
    o.interval_s = 0.1;
    o.sync_fn = sync_gpu; /* called before and after the region */
    o.warmup_s = 0.1;
    gp_profiled_result r; /* return_profile */
    gp_error err;
    if (gp_profile_call(&o, train, NULL, &r, &err) != GP_OK) {
        fprintf(stderr, "%s\n", err.message); /* the seed's GpuBackendError */
        return 1;
    }
    printf("train returned %d, util.gpu mean ", r.value);
    if (r.gpu.valid & GP_M_UTIL_GPU) /* never 0 for a region with no sample */
        printf("%.1f %%\n", r.gpu.util_gpu_mean);
    else
        printf("n/a\n");
    gp_profiled_result_free(&r);
    return 0;
}
