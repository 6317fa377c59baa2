/*
 * cli/main.c - `gpu-profile [OPTIONS] -- CMD [ARGS...]`.
 *
 * Runs CMD under a monitor and prints the summary to stderr when it ends, so
 * CMD's stdout is untouched.  The exit status is CMD's own (128+N when it was
 * killed by signal N; 127 / 126 when CMD is not found / not executable);
 * GP_CLI_EXIT_PROFILER (125) when the profiler itself cannot start, and
 * then CMD is not run.  Without any GPU backend CMD still runs and the
 * summary says why nothing was sampled, unless --strict.
 */
#include "gpu_profile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GP_CLI_EXIT_PROFILER 125
#define GP_CLI_EXIT_USAGE 2

static void usage(FILE *f)
{
    fputs("usage: gpu-profile [OPTIONS] -- CMD [ARGS...]\n"
          "\n"
          "Runs CMD, samples the GPU while it runs, and prints a summary to stderr.\n"
          "\n"
          "options:\n"
          "  --device N|N,M|all   GPUs to sample (default 0)\n"
          "  --interval SECONDS   sampling period, >= 0.001 (default 0.2)\n"
          "  --backend NAME       auto | nvml | smi | none (default auto)\n"
          "  --warmup SECONDS     leave the first seconds out of the statistics\n"
          "  --strict             fail (status 125, CMD not run) when no GPU backend opens\n"
          "  --no-strict          run CMD without sampling when no backend opens (default)\n"
          "  --json               print the summary as JSON\n"
          "  --ascii              ASCII sparkline\n"
          "  -q, --quiet          print nothing; only the exit status\n"
          "  --version            print the version\n"
          "  -h, --help           this text\n"
          "\n"
          "examples:\n"
          "  gpu-profile -- python train.py --epochs 1\n"
          "  gpu-profile --json --interval 0.05 -- ./bench\n",
          f);
}

static int parse_seconds(const char *opt, const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = v ? strtod(v, &end) : NAN;
    if (!v || end == v || *end || errno || !isfinite(d) || d < 0) {
        fprintf(stderr, "gpu-profile: %s needs a number of seconds, not '%s'\n", opt,
                v ? v : "(nothing)");
        return -1;
    }
    *out = d;
    return 0;
}

static int parse_devices(const char *v, gp_options *o, unsigned *list, size_t cap)
{
    if (v && strcmp(v, "all") == 0) {
        o->device = GP_ALL_DEVICES;
        return 0;
    }
    size_t n = 0;
    const char *p = v;
    while (p && *p) {
        char *end = NULL;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (end == p || errno || x > 1024 || (*end && *end != ',') || *p == '-' || n == cap) {
            fprintf(stderr,
                    "gpu-profile: --device needs an index, a comma list of indices or 'all', "
                    "not '%s'\n",
                    v);
            return -1;
        }
        list[n++] = (unsigned)x;
        p = *end ? end + 1 : end;
    }
    if (n == 0) {
        fprintf(stderr, "gpu-profile: --device needs a value\n");
        return -1;
    }
    o->devices = list;
    o->n_devices = n;
    return 0;
}

static pid_t child_pid = -1;

static void forward(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

/* Runs argv; returns the shell-style exit status. */
static int run_child(char **argv)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        fprintf(stderr, "gpu-profile: cannot create a pipe: %s\n", strerror(errno));
        return GP_CLI_EXIT_PROFILER;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpu-profile: cannot fork: %s\n", strerror(errno));
        return GP_CLI_EXIT_PROFILER;
    }
    if (pid == 0) {
        close(pfd[0]);
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        execvp(argv[0], argv);
        int e = errno;
        if (write(pfd[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(pfd[1]);
    child_pid = pid;
    /* The terminal sends SIGINT/SIGQUIT to the child too; others we forward. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);

    int exec_errno = 0;
    ssize_t r;
    do
        r = read(pfd[0], &exec_errno, sizeof exec_errno);
    while (r < 0 && errno == EINTR);
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    child_pid = -1;
    if (r == (ssize_t)sizeof exec_errno) {
        fprintf(stderr, "gpu-profile: %s: %s\n", argv[0], strerror(exec_errno));
        return exec_errno == ENOENT ? 127 : 126;
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    gp_options o;
    gp_options_init(&o);
    o.strict = 0;
    int json = 0, quiet = 0;
    unsigned fmt = 0;
    unsigned devs[64];
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("gpu-profile %s\n", gp_version());
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--ascii") == 0) {
            fmt |= GP_FMT_ASCII;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--strict") == 0) {
            o.strict = 1;
        } else if (strcmp(a, "--no-strict") == 0) {
            o.strict = 0;
        } else if (strcmp(a, "--interval") == 0) {
            if (parse_seconds(a, v, &o.interval_s) != 0)
                return GP_CLI_EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--warmup") == 0) {
            if (parse_seconds(a, v, &o.warmup_s) != 0)
                return GP_CLI_EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--device") == 0) {
            if (parse_devices(v, &o, devs, sizeof devs / sizeof devs[0]) != 0)
                return GP_CLI_EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--backend") == 0) {
            gp_error err;
            if (gp_backend_parse(v, &o.backend, &err) != GP_OK) {
                fprintf(stderr, "gpu-profile: --backend: %s\n", err.message);
                return GP_CLI_EXIT_USAGE;
            }
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "gpu-profile: unknown option '%s' (see gpu-profile --help)\n", a);
            return GP_CLI_EXIT_USAGE;
        } else {
            break; /* the command starts here (no "--") */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "gpu-profile: no command to run: gpu-profile [OPTIONS] -- CMD [ARGS...]\n");
        return GP_CLI_EXIT_USAGE;
    }

    gp_monitor *m = NULL;
    gp_error err;
    if (gp_monitor_create(&o, &m, &err) != GP_OK || gp_monitor_start(m, &err) != GP_OK) {
        fprintf(stderr, "gpu-profile: %s\n", err.message);
        gp_monitor_destroy(m);
        return GP_CLI_EXIT_PROFILER;
    }
    int status = run_child(argv + i);
    if (gp_monitor_stop(m, &err) != GP_OK)
        fprintf(stderr, "gpu-profile: %s\n", err.message);
    if (!quiet) {
        size_t n = gp_monitor_device_count(m);
        if (json)
            fprintf(stderr, "{\"exit_status\":%d,\"devices\":[", status);
        for (size_t d = 0; d < n; d++) {
            const gp_summary *s = gp_monitor_summary(m, d);
            if (!s)
                continue;
            if (json) {
                size_t len = gp_summary_to_json(s, 0, NULL, 0);
                char *buf = malloc(len + 1);
                if (buf) {
                    gp_summary_to_json(s, 0, buf, len + 1);
                    fprintf(stderr, "%s%s", d ? "," : "", buf);
                    free(buf);
                }
            } else {
                gp_summary_print(s, stderr, fmt, &err);
            }
        }
        if (json)
            fprintf(stderr, "]}\n");
    }
    gp_monitor_destroy(m);
    return status;
}
