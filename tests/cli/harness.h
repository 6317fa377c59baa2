/*
 * harness.h - running the built gpu-profile from the CLI tests: a private
 * temporary folder, the fake NVML scenario, spawning the command with its
 * stdin from a file and its stdout / stderr into files (never pipes, so a
 * process that outlives the command cannot hold a test up), and waiting
 * for events (a file appearing, a process going away) with a bound instead
 * of sleeping a fixed time.
 */
#ifndef GP_TEST_CLI_HARNESS_H
#define GP_TEST_CLI_HARNESS_H

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char h_dir[] = "/tmp/gp-cli-test-XXXXXX";
static const char *h_cli;   /* the gpu-profile under test */
static const char *h_child; /* tests/cli/cli_child.c */
/* What h_spawn gives the program besides default dispositions and an
 * empty mask, whatever the test itself was started with. */
static sigset_t h_spawn_ignore, h_spawn_block;
/* Set: h_spawn puts the program in a process group of its own, so that a
 * stopped program is not sent SIGHUP and SIGCONT when the group the test
 * runs in is orphaned (its runner's shell exits) meanwhile. */
static int h_spawn_own_group;

static inline void h_init(void)
{
    h_cli = check_env("GP_TEST_CLI");
    h_child = check_env("GP_TEST_CLI_CHILD");
    if (!mkdtemp(h_dir)) {
        perror("mkdtemp");
        exit(2);
    }
    /* A test's own FAKE_SMI_CAPTURES would turn the smi fallback on. */
    unsetenv("FAKE_SMI_CAPTURES");
    unsetenv("CUDA_VISIBLE_DEVICES");
    sigemptyset(&h_spawn_ignore);
    sigemptyset(&h_spawn_block);
}

/* In a spawned child before exec: the signal state the test asked for. */
static inline void h_child_signals(void)
{
    for (int sig = 1; sig < 32; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = sigismember(&h_spawn_ignore, sig) ? SIG_IGN : SIG_DFL;
        sigaction(sig, &sa, NULL);
    }
    sigprocmask(SIG_SETMASK, &h_spawn_block, NULL);
}

static inline int h_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static inline void h_cleanup(void)
{
    nftw(h_dir, h_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* h_dir/name into buf. */
static inline char *h_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", h_dir, name);
    return buf;
}

static inline void h_write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len) {
        perror(path);
        exit(2);
    }
    fclose(f);
}

/* Makes `text` the fake NVML's scenario for every later run. */
/* None of the test's own environment reaches the --engine runs: the
 * variables the command sets for CMD, and those that would change it. */
static inline void h_clear_inject_env(void)
{
    static const char *const names[] = {
        "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "GPUFL_PROFILING_ENGINE",
        "GPUFL_LOG_PATH",        "GPUFL_APP_NAME",        "GPUFL_CUPTI_PLUGIN",
        "GPUFL_DISABLED",        "GPUFL_CONFIG_FILE",     "GPUFL_SASS_ALL_KERNELS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
}

static inline void h_scenario(const char *text)
{
    char path[512];
    h_path(path, sizeof path, "scenario.txt");
    h_write_file(path, text, strlen(text));
    setenv("FAKE_NVML_SCENARIO", path, 1);
}

static inline int h_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static inline void h_nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* Waits until cond(arg) holds, checking every few ms; 0 after `limit_s`
 * seconds (a failure, not a timing assertion: the event never came). */
static inline int h_wait_for(int (*cond)(const void *), const void *arg, double limit_s)
{
    for (long waited = 0; waited < (long)(limit_s * 1000); waited += 5) {
        if (cond(arg))
            return 1;
        h_nap_ms(5);
    }
    return cond(arg);
}

static inline int h_cond_exists(const void *path)
{
    return h_exists((const char *)path);
}

/* Spawns argv with the environment changes in env ("NAME=VALUE" sets,
 * "NAME" unsets; NULL-terminated, may be NULL) and the standard streams
 * from / to the given files (NULL: /dev/null for stdin, inherited for the
 * others). */
static inline pid_t h_spawn(const char *const *argv, const char *const *env, const char *in_path,
                            const char *out_path, const char *err_path)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid > 0)
        return pid;
    h_child_signals();
    if (h_spawn_own_group)
        setpgid(0, 0);
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (eq) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq - env[i]), env[i]);
            setenv(name, eq + 1, 1);
        } else {
            unsetenv(env[i]);
        }
    }
    int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0)
        _exit(90);
    if (out_path) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(91);
    }
    if (err_path) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(92);
    }
    execv(argv[0], (char *const *)argv);
    _exit(93);
}

static inline int h_wait(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return st;
}

/* The shell's view of a wait status: the exit code, or 128 + signal. */
static inline int h_code(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

typedef struct h_result {
    int code;
    char *out, *err;
    size_t out_len, err_len;
} h_result;

static inline void h_result_free(h_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* Runs argv to completion with `stdin_text` (NULL: /dev/null) as stdin. */
static inline void h_run(const char *const *argv, const char *const *env, const char *stdin_text,
                         size_t stdin_len, h_result *r)
{
    char in[512], out[512], err[512];
    h_path(out, sizeof out, "run.out");
    h_path(err, sizeof err, "run.err");
    if (stdin_text) {
        h_path(in, sizeof in, "run.in");
        h_write_file(in, stdin_text, stdin_len);
    }
    pid_t pid = h_spawn(argv, env, stdin_text ? in : NULL, out, err);
    r->code = h_code(h_wait(pid));
    r->out = check_read_file(out, &r->out_len);
    r->err = check_read_file(err, &r->err_len);
    if (!r->out || !r->err) {
        fprintf(stderr, "cannot read the output of %s\n", argv[0]);
        exit(2);
    }
}

/* Line k (0-based) of text into buf, without its newline; "" past the end. */
static inline const char *h_line(const char *text, int k, char *buf, size_t len)
{
    const char *p = text;
    for (int i = 0; i < k && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p) {
        buf[0] = '\0';
        return buf;
    }
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n >= len)
        n = len - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

static inline int h_count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

static inline int h_starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

#define CHECK_PREFIX(s, prefix)                                                                    \
    do {                                                                                           \
        const char *vs_ = (s), *vp_ = (prefix);                                                    \
        if (h_starts_with(vs_, vp_)) {                                                             \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: \"%s\" does not start with \"%s\"\n", __FILE__, __LINE__,      \
                    vs_ ? vs_ : "(null)", vp_);                                                    \
        }                                                                                          \
    } while (0)

#endif
