/*
 * bench_cli.c - what the gpu-profile command costs the program it runs.
 *
 *   bench_cli GPU_PROFILE [--fake-nvml DIR] [--runs N] [--sleep S] [--reps R] [--real]
 *
 * Prints, for the figures docs/performance.md records:
 *   1. Start-up overhead: the wall time of `true` run directly (fork,
 *      execvp, wait) against `gpu-profile -q --backend none -- true`, and,
 *      with --fake-nvml (the folder of the fake libnvidia-ml.so.1, put on
 *      LD_LIBRARY_PATH, default scenario: one device), `--backend nvml`;
 *      with --real, the default `auto` backend on this machine's driver.
 *      N runs each (default 200), interleaved so that drift of the machine
 *      spreads evenly; median and p90, and the median added to `true`'s;
 *      with the median of the minor page faults (wait4's ru_minflt, of the
 *      command and the children it waited for) and the instructions of the
 *      command's own process (valgrind --tool=callgrind's total of one run,
 *      the dynamic loader included; "n/a" without valgrind: perf's
 *      instruction counter is not available in this VM).  Time alone is
 *      noise on a shared CPU; faults and instructions are not.
 *   2. The profiler's CPU while CMD sleeps: `gpu-profile -q -- sleep S`
 *      (default S = 10; with the fake NVML when given, and with --backend
 *      none), from wait4's rusage, minus what `sleep S` alone uses, so the
 *      figure is the profiler's own (its sampling thread included).  Each
 *      is run R times (default 3) and the median kept: a VM's CPU
 *      accounting is noisy.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Runs argv with stdout/stderr to /dev/null; wall ns, and CPU ns of the
 * process and the children it waited for. */
static int run_once(char *const *argv, uint64_t *wall_ns, uint64_t *cpu_ns, uint64_t *minflt)
{
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
        ;
    *wall_ns = now_ns() - t0;
    if (minflt)
        *minflt = (uint64_t)ru.ru_minflt;
    if (cpu_ns)
        *cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
                  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_cli: %s ... did not exit 0 (status 0x%x)\n", argv[0], st);
        return -1;
    }
    return 0;
}

/* The instructions argv's own process runs (callgrind's "Collected"),
 * or 0 when valgrind cannot be run. */
static uint64_t instructions(char *const *argv)
{
    char *v[16] = {"valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"};
    size_t k = 3;
    for (size_t i = 0; argv[i] && k < 15; i++)
        v[k++] = argv[i];
    v[k] = NULL;
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(null, 1) < 0 || dup2(fds[1], 2) < 0)
            _exit(126);
        close(fds[0]);
        execvp(v[0], v);
        _exit(127);
    }
    close(fds[1]);
    static char buf[1 << 16];
    size_t n = 0;
    ssize_t got;
    while (pid > 0 && n < sizeof buf - 1 &&
           ((got = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0 || (got < 0 && errno == EINTR)))
        n += got > 0 ? (size_t)got : 0;
    buf[n] = 0;
    close(fds[0]);
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    const char *c = strstr(buf, "Collected : ");
    return c ? strtoull(c + 12, NULL, 10) : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(uint64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_u64);
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return (double)v[rank - 1] / 1e6;
}

typedef struct config {
    const char *label;
    char *argv[12];
    const char *ld_path; /* LD_LIBRARY_PATH for this one, NULL: as inherited */
    uint64_t *wall, *faults;
} config;

static int run_config(config *c, size_t i)
{
    const char *old = getenv("LD_LIBRARY_PATH");
    char *saved = old ? strdup(old) : NULL;
    if (c->ld_path)
        setenv("LD_LIBRARY_PATH", c->ld_path, 1);
    int rc = run_once(c->argv, &c->wall[i], NULL, &c->faults[i]);
    if (c->ld_path) {
        if (saved)
            setenv("LD_LIBRARY_PATH", saved, 1);
        else
            unsetenv("LD_LIBRARY_PATH");
    }
    free(saved);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_cli GPU_PROFILE [--fake-nvml DIR] [--runs N] [--sleep S] [--reps R] "
                "[--real]\n");
        return 2;
    }
    char *cli = argv[1];
    const char *fake = NULL;
    size_t runs = 200;
    const char *sleep_s = "10";
    int real = 0;
    size_t reps = 3;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--fake-nvml") == 0 && i + 1 < argc)
            fake = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = (size_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--sleep") == 0 && i + 1 < argc)
            sleep_s = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (size_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--real") == 0)
            real = 1;
        else {
            fprintf(stderr, "bench_cli: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (runs < 5)
        runs = 5;
    if (reps < 1 || reps > 64)
        reps = 3;
    /* The fake's default: one device, constant metrics. */
    unsetenv("FAKE_NVML_SCENARIO");

    config cfg[4];
    size_t n_cfg = 0;
    cfg[n_cfg++] = (config){"true (direct)", {"true", NULL}, NULL, NULL};
    cfg[n_cfg++] = (config){"gpu-profile -q --backend none -- true",
                            {cli, "-q", "--backend", "none", "--", "true", NULL},
                            NULL,
                            NULL};
    if (fake)
        cfg[n_cfg++] = (config){"gpu-profile -q --backend nvml -- true (fake NVML)",
                                {cli, "-q", "--backend", "nvml", "--", "true", NULL},
                                fake,
                                NULL};
    if (real)
        cfg[n_cfg++] = (config){"gpu-profile -q -- true (auto, this machine's driver)",
                                {cli, "-q", "--", "true", NULL},
                                NULL,
                                NULL};
    for (size_t c = 0; c < n_cfg; c++) {
        cfg[c].wall = calloc(runs, sizeof *cfg[c].wall);
        cfg[c].faults = calloc(runs, sizeof *cfg[c].faults);
        if (!cfg[c].wall || !cfg[c].faults)
            return 1;
    }
    /* Warm-up (page cache, dynamic loader), then interleaved runs. */
    for (size_t i = 0; i < 5; i++)
        for (size_t c = 0; c < n_cfg; c++)
            if (run_config(&cfg[c], i) != 0)
                return 1;
    for (size_t i = 0; i < runs; i++)
        for (size_t c = 0; c < n_cfg; c++)
            if (run_config(&cfg[c], i) != 0)
                return 1;

    printf("1. start-up, %zu runs each (wall time, fork to wait)\n\n", runs);
    printf("| command | median | p90 | added to true (median) | minor faults (median) | "
           "instructions (callgrind) |\n|---|---|---|---|---|---|\n");
    double base = 0;
    for (size_t c = 0; c < n_cfg; c++) {
        double p90 = pct_ms(cfg[c].wall, runs, 90);
        double med = pct_ms(cfg[c].wall, runs, 50);
        if (c == 0)
            base = med;
        qsort(cfg[c].faults, runs, sizeof *cfg[c].faults, cmp_u64);
        const char *old = getenv("LD_LIBRARY_PATH");
        char *saved = old ? strdup(old) : NULL;
        if (cfg[c].ld_path)
            setenv("LD_LIBRARY_PATH", cfg[c].ld_path, 1);
        uint64_t ins = instructions(cfg[c].argv);
        if (cfg[c].ld_path) {
            if (saved)
                setenv("LD_LIBRARY_PATH", saved, 1);
            else
                unsetenv("LD_LIBRARY_PATH");
        }
        free(saved);
        char ins_s[32] = "n/a";
        if (ins)
            snprintf(ins_s, sizeof ins_s, "%llu", (unsigned long long)ins);
        printf("| `%s` | %.3f ms | %.3f ms | %s%.3f ms | %llu | %s |\n", cfg[c].label, med, p90,
               c ? "+" : "", c ? med - base : 0.0, (unsigned long long)cfg[c].faults[runs / 2],
               ins_s);
    }

    printf("\n2. the profiler's CPU while CMD sleeps %s s (median of %zu runs each)\n\n", sleep_s,
           reps);
    printf(
        "| command | wall | CPU (profiler + sleep) | CPU of sleep alone | profiler's own | share "
        "of one core |\n|---|---|---|---|---|---|\n");
    char *sleep_argv[] = {"sleep", (char *)sleep_s, NULL};
    uint64_t cpu_v[64], wall_v[64];
    for (size_t r = 0; r < reps; r++)
        if (run_once(sleep_argv, &wall_v[r], &cpu_v[r], NULL) != 0)
            return 1;
    double cpu_sleep = pct_ms(cpu_v, reps, 50);
    struct {
        const char *label;
        char *argv[10];
        const char *ld;
    } cpu_cases[] = {
        {"gpu-profile -q --backend none -- sleep",
         {cli, "-q", "--backend", "none", "--", "sleep", (char *)sleep_s, NULL},
         NULL},
        {"gpu-profile -q --backend nvml -- sleep (fake NVML, 0.2 s interval)",
         {cli, "-q", "--backend", "nvml", "--", "sleep", (char *)sleep_s, NULL},
         fake},
        {"gpu-profile -q -- sleep (auto, this machine's driver)",
         {cli, "-q", "--", "sleep", (char *)sleep_s, NULL},
         NULL},
    };
    for (size_t k = 0; k < sizeof cpu_cases / sizeof cpu_cases[0]; k++) {
        if ((k == 1 && !fake) || (k == 2 && !real))
            continue;
        const char *old = getenv("LD_LIBRARY_PATH");
        char *saved = old ? strdup(old) : NULL;
        if (cpu_cases[k].ld)
            setenv("LD_LIBRARY_PATH", cpu_cases[k].ld, 1);
        int rc = 0;
        for (size_t r = 0; r < reps && rc == 0; r++)
            rc = run_once(cpu_cases[k].argv, &wall_v[r], &cpu_v[r], NULL);
        if (cpu_cases[k].ld) {
            if (saved)
                setenv("LD_LIBRARY_PATH", saved, 1);
            else
                unsetenv("LD_LIBRARY_PATH");
        }
        free(saved);
        if (rc != 0)
            return 1;
        double cpu = pct_ms(cpu_v, reps, 50), wall = pct_ms(wall_v, reps, 50) / 1e3;
        double own = cpu - cpu_sleep;
        printf("| `%s` | %.3f s | %.2f ms | %.2f ms | %.2f ms | %.3f %% |\n", cpu_cases[k].label,
               wall, cpu, cpu_sleep, own, 100.0 * own / 1e3 / wall);
    }
    for (size_t c = 0; c < n_cfg; c++) {
        free(cfg[c].wall);
        free(cfg[c].faults);
    }
    return 0;
}
