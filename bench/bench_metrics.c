/*
 * bench_metrics.c - what the hardware-metrics catalogue costs
 * (include/gpu_metrics.h, `gpu-profile metrics`).
 *
 *   bench_metrics GPU_PROFILE [--runs N]
 *
 * Prints, for the figures docs/performance.md records:
 *   1. The command, cold (a new process each run, so CUPTI's host
 *      libraries load every time): `metrics chips`, `metrics list --chip
 *      GH100` and `metrics passes --chip GH100` for 10 metrics; N runs each
 *      (default 20), median and max.
 *   2. In one process through the API: the first gp_metrics_chips (loads
 *      the plugin and CUPTI), the first host for GH100, then the same calls
 *      warm (the host object cached per chip): a host, the three base
 *      lists, and a config image + pass count for the 10 metrics; medians
 *      of N.
 * The plugin is found beside GPU_PROFILE (libgpuprofile_cupti.so).
 */
#include "gpu_metrics.h"
#include "gpu_profile.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const ten[] = {"sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                  "gpu__time_duration.sum",
                                  "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                  "sm__cycles_elapsed.avg",
                                  "smsp__inst_executed.sum",
                                  "l1tex__t_sectors.sum",
                                  "lts__t_sectors.sum",
                                  "dram__bytes_read.sum",
                                  "dram__bytes_write.sum",
                                  "sm__warps_active.avg.pct_of_peak_sustained_active"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static double run_cmd(char *const *argv)
{
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(99);
        execv(argv[0], argv);
        _exit(98);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    double t = now_s() - t0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_metrics: %s %s %s failed (status %d)\n", argv[0], argv[1], argv[2],
                st);
        exit(1);
    }
    return t;
}

static void bench_cmd(const char *name, char *const *argv, int runs)
{
    double *v = calloc((size_t)runs, sizeof *v);
    for (int i = 0; i < runs; i++)
        v[i] = run_cmd(argv);
    double med = median(v, runs);
    printf("  %-40s median %7.1f ms  max %7.1f ms\n", name, med * 1e3, v[runs - 1] * 1e3);
    free(v);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_metrics GPU_PROFILE [--runs N]\n");
        return 2;
    }
    int runs = 20;
    if (argc >= 4 && strcmp(argv[2], "--runs") == 0)
        runs = atoi(argv[3]) > 0 ? atoi(argv[3]) : 20;
    char *cli = argv[1];
    char dir[4096], plugin[4200];
    snprintf(dir, sizeof dir, "%s", cli);
    snprintf(plugin, sizeof plugin, "%s/libgpuprofile_cupti.so", dirname(dir));
    setenv("GPUFL_CUPTI_PLUGIN", plugin, 1);

    printf("1. gpu-profile metrics, a new process per run (%d runs)\n", runs);
    char *chips[] = {cli, "metrics", "chips", NULL};
    char *list[] = {cli, "metrics", "list", "--chip", "GH100", NULL};
    char *passes[16] = {cli, "metrics", "passes", "--chip", "GH100"};
    for (int i = 0; i < 10; i++)
        passes[5 + i] = (char *)ten[i];
    passes[15] = NULL;
    bench_cmd("metrics chips", chips, runs);
    bench_cmd("metrics list --chip GH100", list, runs);
    bench_cmd("metrics passes --chip GH100 (10 metrics)", passes, runs);

    printf("2. the API in one process\n");
    gp_error err;
    char **l = NULL;
    size_t n = 0;
    double t0 = now_s();
    if (gp_metrics_chips(&l, &n, &err) != GP_OK) {
        fprintf(stderr, "bench_metrics: %s\n", err.message);
        return 1;
    }
    printf("  %-40s %7.2f ms (%zu chips)\n", "first gp_metrics_chips (cold)", (now_s() - t0) * 1e3,
           n);
    gp_metrics_free_list(l);
    gp_metrics_host *h = NULL;
    t0 = now_s();
    if (gp_metrics_host_create("GH100", GP_METRICS_RANGE, &h, &err) != GP_OK) {
        fprintf(stderr, "bench_metrics: %s\n", err.message);
        return 1;
    }
    printf("  %-40s %7.2f ms\n", "first host GH100", (now_s() - t0) * 1e3);
    gp_metrics_host_destroy(h);
    double *vh = calloc((size_t)runs, sizeof(double)), *vl = calloc((size_t)runs, sizeof(double)),
           *vp = calloc((size_t)runs, sizeof(double));
    size_t total = 0, np = 0;
    for (int i = 0; i < runs; i++) {
        t0 = now_s();
        gp_metrics_host_create("GH100", GP_METRICS_RANGE, &h, &err);
        vh[i] = now_s() - t0;
        t0 = now_s();
        total = 0;
        for (int t = 0; t < 3; t++) {
            gp_metrics_base_metrics(h, (gp_metric_type)t, &l, &n, &err);
            total += n;
            gp_metrics_free_list(l);
        }
        vl[i] = now_s() - t0;
        t0 = now_s();
        uint8_t *img = NULL;
        size_t size = 0;
        gp_metrics_config_image(h, ten, 10, &img, &size, &err);
        gp_metrics_passes(img, size, &np, &err);
        gp_metrics_free_image(img);
        vp[i] = now_s() - t0;
        gp_metrics_host_destroy(h);
    }
    printf("  %-40s %7.3f ms\n", "warm host GH100 (cached)", median(vh, runs) * 1e3);
    printf("  %-40s %7.3f ms (%zu metrics)\n", "warm base lists, 3 types", median(vl, runs) * 1e3,
           total);
    printf("  %-40s %7.3f ms (%zu passes)\n", "warm config image + passes, 10 metrics",
           median(vp, runs) * 1e3, np);
    free(vh);
    free(vl);
    free(vp);
    gp_metrics_release_cache();
    return 0;
}
