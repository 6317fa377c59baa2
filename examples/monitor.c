/*
 * monitor.c - the context-manager style: start and stop a monitor around
 * a region, then print every device's summary as text and as JSON.
 * Build: cc monitor.c $(pkg-config --cflags --libs gpu-profile)
 */
#include <gpu_profile.h>

#include <stdio.h>
#include <time.h>

int main(void)
{
    gp_options o;
    gp_options_init(&o);
    o.device = GP_ALL_DEVICES; /* or o.devices / o.n_devices */
    o.interval_s = 0.05;
    o.keep_samples = 1;
    gp_monitor *m;
    gp_error err;
    if (gp_monitor_create(&o, &m, &err) != GP_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    if (gp_monitor_start(m, &err) != GP_OK) {
        fprintf(stderr, "%s\n", err.message);
        gp_monitor_destroy(m);
        return 1;
    }
    struct timespec t = {0, 300000000}; /* the region */
    nanosleep(&t, NULL);
    gp_monitor_stop(m, &err);
    for (size_t i = 0; i < gp_monitor_device_count(m); i++) {
        const gp_summary *s = gp_monitor_summary(m, i);
        gp_summary_print(s, stdout, 0, &err); /* aligned text, with units */
        char json[8192];
        gp_summary_to_json(s, GP_FMT_PRETTY, json, sizeof json); /* docs/json-schema.md */
        printf("%s\n", json);
    }
    size_t n;
    const gp_sample *samples = gp_monitor_samples(m, &n);
    printf("%zu raw samples, first at %llu ns (CLOCK_REALTIME)\n", n,
           n ? (unsigned long long)samples[0].t_wall_ns : 0ull);
    gp_monitor_destroy(m);
    return 0;
}
