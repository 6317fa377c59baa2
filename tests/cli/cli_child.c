/*
 * cli_child.c - the program the CLI tests run under gpu-profile (built as
 * gp_cli_child).  Each mode does one observable thing:
 *
 *   exit N                     exits with status N
 *   touch PATH [N]             creates PATH, exits N (was CMD run at all?)
 *   out                        writes 300 000 bytes covering every byte value
 *                              (no final newline) to stdout, then copies
 *                              stdin to stdout, then "done" to stderr
 *   raise SIGNUM               dies of signal SIGNUM (default action)
 *   wait-signal READY [MS]     counts SIGTERM/HUP/INT/QUIT/USR1/USR2; creates
 *                              READY once the handlers are in place; after
 *                              the first signal keeps counting for MS
 *                              milliseconds, prints "SIGNUM COUNT" lines to
 *                              stdout and exits 100 + the first signal
 *   grandchildren N PIDS FD S  starts N processes that outlive it (their
 *                              parent exits at once, so they are orphans);
 *                              each blocks reading descriptor FD until EOF.
 *                              Their pids and then its own are appended to
 *                              PIDS ("gc PID" / "cmd PID"); exits S
 *   sigstate                   prints "SIGNUM ignored blocked" for SIGHUP,
 *                              SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE,
 *                              SIGTERM and SIGCHLD (each 0 or 1), and the
 *                              number of descriptors above 2 that are open
 *   tty                        prints "stdin-tty A fg B" (A: isatty(0), B: its
 *                              process group owns the terminal), reads one
 *                              line of stdin, exits 0
 *   inject PLUGIN APP ENGINE RECORD S [UUID FILE]...
 *                              a CUDA process under --engine, without CUDA:
 *                              checks the injected environment (both
 *                              *_INJECTION64_PATH = PLUGIN, GPUFL_APP_NAME =
 *                              APP, GPUFL_PROFILING_ENGINE = ENGINE,
 *                              GPUFL_LOG_PATH an existing absolute directory,
 *                              written to RECORD), then writes each FILE as
 *                              $GPUFL_LOG_PATH/UUID/device.log (UUID/NAME:
 *                              as NAME in that session's existing or new
 *                              directory), the last one from a child process
 *                              (a CUDA grandchild); exits S, or 97 with a
 *                              message on stderr
 *   noinject S                 exits S when none of the variables above is
 *                              set, else 97 with a message on stderr
 *   sleep MS [S]               sleeps MS milliseconds, exits S (default 0)
 *   fds PATH                   writes "0 A 1 B 2 C" to PATH (A, B, C: 1 when
 *                              that descriptor is open, 0 when closed, looked
 *                              at before PATH is opened), exits 0
 *   env NAME VALUE             exits 0 when NAME is set to VALUE, else 97
 *   printenv NAME...           prints "NAME=VALUE" (or "NAME unset") per name
 *   count PATH [K S]           appends "run" to PATH; exits S when PATH then
 *                              has K lines (the K-th run), else 0
 *   rank UUID G0 G1 NCCL SYNC  a traced process of a run, without CUDA:
 *                              writes $GPUFL_LOG_PATH/UUID/device.log as
 *                              the recorder would (job_start with
 *                              $GPUFL_RUN_ID, $RANK, $WORLD_SIZE,
 *                              $LOCAL_RANK, this host; kernels gemm of G0
 *                              and G1 ns, one NCCL kernel of NCCL ns, one
 *                              4096-byte copy, one synchronization of SYNC
 *                              ns); exits 0, 97 when it cannot
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t counts[65];
static volatile sig_atomic_t first_sig;

static void on_signal(int sig)
{
    if (sig > 0 && sig < 65)
        counts[sig]++;
    if (!first_sig)
        first_sig = sig;
}

static int append_line(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    /* One write per line: O_APPEND keeps lines from several processes whole. */
    ssize_t w = write(fd, line, strlen(line));
    close(fd);
    return w == (ssize_t)strlen(line) ? 0 : -1;
}

static int mode_out(void)
{
    static char buf[300000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)((i * 7 + i / 256) & 0xff);
    size_t off = 0;
    while (off < sizeof buf) {
        ssize_t w = write(1, buf + off, sizeof buf - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 1;
        off += (size_t)w;
    }
    char in[4096];
    for (;;) {
        ssize_t r = read(0, in, sizeof in);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (write(1, in, (size_t)r) != r)
            return 1;
    }
    fputs("done\n", stderr);
    return 0;
}

static int mode_wait_signal(const char *ready, long linger_ms)
{
    static const int sigs[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2};
    sigset_t block, old;
    sigemptyset(&block);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        sigaction(sigs[i], &sa, NULL);
        sigaddset(&block, sigs[i]);
    }
    sigprocmask(SIG_BLOCK, &block, &old);
    if (append_line(ready, "ready\n") != 0)
        return 2;
    sigset_t wait_mask = old;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigdelset(&wait_mask, sigs[i]);
    while (!first_sig)
        sigsuspend(&wait_mask);
    sigprocmask(SIG_SETMASK, &old, NULL);
    struct timespec t = {linger_ms / 1000, (linger_ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
    for (int s = 1; s < 65; s++)
        if (counts[s])
            printf("%d %d\n", s, (int)counts[s]);
    fflush(stdout);
    return 100 + first_sig;
}

static int mode_grandchildren(int n, const char *pids, int fd, int status)
{
    for (int i = 0; i < n; i++) {
        pid_t mid = fork();
        if (mid < 0)
            return 3;
        if (mid == 0) {
            pid_t gc = fork();
            if (gc == 0) {
                char c;
                for (;;) {
                    ssize_t r = read(fd, &c, 1);
                    if (r > 0 || (r < 0 && errno == EINTR))
                        continue;
                    break;
                }
                _exit(0);
            }
            char line[64];
            snprintf(line, sizeof line, "gc %ld\n", (long)gc);
            _exit(gc > 0 && append_line(pids, line) == 0 ? 0 : 1);
        }
        int st = 0;
        while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 4;
    }
    close(fd);
    char line[64];
    snprintf(line, sizeof line, "cmd %ld\n", (long)getpid());
    append_line(pids, line);
    return status;
}

static int mode_sigstate(void)
{
    static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1,
                               SIGUSR2, SIGPIPE, SIGTERM, SIGCHLD};
    sigset_t mask;
    sigprocmask(SIG_BLOCK, NULL, &mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        sigaction(sigs[i], NULL, &sa);
        printf("%d %d %d\n", sigs[i], sa.sa_handler == SIG_IGN, sigismember(&mask, sigs[i]));
    }
    int open_fds = 0;
    for (int fd = 3; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            open_fds++;
    printf("fds %d\n", open_fds);
    return 0;
}

static int mode_fds(const char *path)
{
    int open0 = fcntl(0, F_GETFD) >= 0, open1 = fcntl(1, F_GETFD) >= 0;
    int open2 = fcntl(2, F_GETFD) >= 0;
    char line[64];
    snprintf(line, sizeof line, "0 %d 1 %d 2 %d\n", open0, open1, open2);
    return append_line(path, line) == 0 ? 0 : 2;
}

static int mode_tty(void)
{
    int tty = isatty(0);
    int fg = tty && tcgetpgrp(0) == getpgrp();
    printf("stdin-tty %d fg %d\n", tty, fg);
    fflush(stdout);
    char line[256];
    return fgets(line, sizeof line, stdin) ? 0 : 1;
}

static const char *const inject_vars[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                                          "GPUFL_PROFILING_ENGINE", "GPUFL_LOG_PATH",
                                          "GPUFL_APP_NAME"};

static int expect_env(const char *name, const char *want)
{
    const char *v = getenv(name);
    if (v && strcmp(v, want) == 0)
        return 0;
    fprintf(stderr, "cli_child: %s is '%s', not '%s'\n", name, v ? v : "(unset)", want);
    return -1;
}

/* Copies src to $GPUFL_LOG_PATH/uuid/device.log, or with "uuid/name" to
 * $GPUFL_LOG_PATH/uuid/name (another channel of a session). */
static int put_session(const char *uuid, const char *src)
{
    char path[4096];
    const char *name = strchr(uuid, '/');
    snprintf(path, sizeof path, "%s/%.*s", getenv("GPUFL_LOG_PATH"),
             (int)(name ? (size_t)(name - uuid) : strlen(uuid)), uuid);
    if (mkdir(path, 0755) != 0 && !(name && errno == EEXIST))
        return -1;
    strncat(path, name ? name : "/device.log", sizeof path - strlen(path) - 1);
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    char buf[4096];
    size_t n;
    int bad = !in || !out;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
        bad = fwrite(buf, 1, n, out) != n;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        bad = 1;
    return bad ? -1 : 0;
}

static int mode_inject(char **a, int n)
{
    const char *log = getenv("GPUFL_LOG_PATH");
    struct stat st;
    if (expect_env("CUDA_INJECTION64_PATH", a[0]) || expect_env("NVTX_INJECTION64_PATH", a[0]) ||
        expect_env("GPUFL_APP_NAME", a[1]) || expect_env("GPUFL_PROFILING_ENGINE", a[2]))
        return 97;
    if (!log || log[0] != '/' || stat(log, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "cli_child: GPUFL_LOG_PATH '%s' is no absolute directory\n",
                log ? log : "(unset)");
        return 97;
    }
    char line[4200];
    snprintf(line, sizeof line, "%s\n", log);
    if (append_line(a[3], line) != 0)
        return 97;
    int k = 5;
    for (; k + 3 < n; k += 2)
        if (put_session(a[k], a[k + 1]) != 0)
            return 96;
    if (k + 1 < n) {
        pid_t gc = fork();
        if (gc == 0)
            _exit(put_session(a[k], a[k + 1]) == 0 ? 0 : 1);
        int st2 = 0;
        while (gc > 0 && waitpid(gc, &st2, 0) < 0 && errno == EINTR)
            ;
        if (gc < 0 || !WIFEXITED(st2) || WEXITSTATUS(st2) != 0)
            return 96;
    }
    return atoi(a[4]);
}

static int mode_noinject(const char *status)
{
    for (size_t i = 0; i < sizeof inject_vars / sizeof inject_vars[0]; i++)
        if (getenv(inject_vars[i])) {
            fprintf(stderr, "cli_child: %s is set to '%s'\n", inject_vars[i],
                    getenv(inject_vars[i]));
            return 97;
        }
    return atoi(status);
}

/* The runs so far, counted in a file: --repeats' tests see every run. */
static int mode_count(const char *path, long fail_at, int status)
{
    FILE *f = fopen(path, "a+");
    if (!f || fputs("run\n", f) < 0 || fflush(f) != 0)
        return 97;
    rewind(f);
    long lines = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        lines += c == '\n';
    fclose(f);
    return lines == fail_at ? status : 0;
}

/* An integer variable of the environment as JSON (null when unset). */
static const char *env_num(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : "null";
}

static int mode_rank(char **a)
{
    const char *log = getenv("GPUFL_LOG_PATH"), *run = getenv("GPUFL_RUN_ID");
    char host[256] = "", path[4096];
    gethostname(host, sizeof host);
    snprintf(path, sizeof path, "%s/%s", log ? log : ".", a[0]);
    if (!log || mkdir(path, 0755) != 0)
        return 97;
    strncat(path, "/device.log", sizeof path - strlen(path) - 1);
    FILE *f = fopen(path, "w");
    if (!f)
        return 97;
    const char *sid = a[0];
    struct timespec mono, wall; /* read together, as the recorder does */
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &wall);
    long long mono_ns = mono.tv_sec * 1000000000LL + mono.tv_nsec;
    long long wall_ns = wall.tv_sec * 1000000000LL + wall.tv_nsec;
    fprintf(f,
            "{\"version\":1,\"type\":\"job_start\",\"pid\":%d,\"app\":\"gp_cli_child\","
            "\"session_id\":\"%s\",\"log_path\":\"x\",\"ts_ns\":%lld,"
            "\"hostname\":\"%s\",\"devices\":[],\"session_kind\":\"trace\","
            "\"profiling_engine\":\"nvidia.trace\",\"run_id\":\"%s\",\"rank\":%s,"
            "\"local_rank\":%s,\"world_size\":%s,\"rank_source\":\"RANK\","
            "\"monotonic_ns\":%lld}\n",
            (int)getpid(), sid, wall_ns, host, run ? run : "", env_num("RANK"),
            env_num("LOCAL_RANK"), env_num("WORLD_SIZE"), mono_ns);
    fprintf(f,
            "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
            "\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"ncclDevKernel_AllReduce_Sum_f32\"}}\n"
            "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"%s\","
            "\"batch_id\":1,\"base_time_ns\":1760000000001000000,\"columns\":[\"dt_ns\","
            "\"kernel_id\",\"duration_ns\"],\"rows\":[[0,1,%s],[10,1,%s],[20,2,%s]]}\n"
            "{\"version\":1,\"type\":\"memcpy_event_batch\",\"session_id\":\"%s\","
            "\"batch_id\":1,\"base_time_ns\":1760000000001000000,\"columns\":[\"dt_ns\","
            "\"stream_id\",\"duration_ns\",\"bytes\",\"copy_kind\",\"corr_id\"],"
            "\"rows\":[[0,7,100,4096,1,5]]}\n"
            "{\"version\":1,\"type\":\"synchronization_event_batch\",\"session_id\":\"%s\","
            "\"batch_id\":1,\"base_time_ns\":1760000000002000000,\"columns\":[\"dt_ns\","
            "\"duration_ns\",\"sync_type\"],\"rows\":[[0,%s,1]]}\n"
            "{\"type\":\"shutdown\",\"pid\":%d,\"app\":\"gp_cli_child\",\"session_id\":"
            "\"%s\",\"ts_ns\":1760000000009000000}\n",
            sid, sid, a[1], a[2], a[3], sid, sid, a[4], (int)getpid(), sid);
    return fclose(f) == 0 ? 0 : 97;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "exit") == 0 && argc > 2)
        return atoi(argv[2]);
    if (strcmp(mode, "touch") == 0 && argc > 2) {
        if (append_line(argv[2], "run\n") != 0)
            return 2;
        return argc > 3 ? atoi(argv[3]) : 0;
    }
    if (strcmp(mode, "out") == 0)
        return mode_out();
    if (strcmp(mode, "raise") == 0 && argc > 2) {
        int sig = atoi(argv[2]);
        signal(sig, SIG_DFL);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        sigprocmask(SIG_UNBLOCK, &s, NULL);
        raise(sig);
        return 99;
    }
    if (strcmp(mode, "wait-signal") == 0 && argc > 2)
        return mode_wait_signal(argv[2], argc > 3 ? atol(argv[3]) : 0);
    if (strcmp(mode, "grandchildren") == 0 && argc > 5)
        return mode_grandchildren(atoi(argv[2]), argv[3], atoi(argv[4]), atoi(argv[5]));
    if (strcmp(mode, "tty") == 0)
        return mode_tty();
    if (strcmp(mode, "sigstate") == 0)
        return mode_sigstate();
    if (strcmp(mode, "rank") == 0 && argc > 6)
        return mode_rank(argv + 2);
    if (strcmp(mode, "inject") == 0 && argc > 6)
        return mode_inject(argv + 2, argc - 2);
    if (strcmp(mode, "env") == 0 && argc > 3) /* env NAME VALUE: 0 when set so */
        return expect_env(argv[2], argv[3]) == 0 ? 0 : 97;
    if (strcmp(mode, "noinject") == 0 && argc > 2)
        return mode_noinject(argv[2]);
    if (strcmp(mode, "sleep") == 0 && argc > 2) {
        long ms = atol(argv[2]);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        return argc > 3 ? atoi(argv[3]) : 0;
    }
    if (strcmp(mode, "fds") == 0 && argc > 2)
        return mode_fds(argv[2]);
    if (strcmp(mode, "count") == 0 && argc > 2)
        return mode_count(argv[2], argc > 4 ? atol(argv[3]) : -1, argc > 4 ? atoi(argv[4]) : 0);
    if (strcmp(mode, "printenv") == 0) {
        for (int i = 2; i < argc; i++) {
            const char *v = getenv(argv[i]);
            if (v)
                printf("%s=%s\n", argv[i], v);
            else
                printf("%s unset\n", argv[i]);
        }
        return 0;
    }
    fprintf(stderr, "cli_child: unknown mode '%s'\n", mode);
    return 98;
}
