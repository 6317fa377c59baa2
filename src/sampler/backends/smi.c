/*
 * sampler/backends/smi.c - the nvidia-smi backend (self-paced).
 *
 * open() finds the binary (smi_path, else PATH) and runs ONE time-limited
 * discovery query; start() runs ONE long-lived
 *   nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N -i a,b
 * whose rows wait_tick() reads with poll() on a non-blocking pipe, together
 * with a wake-up pipe that interrupt() writes to.  No call blocks without a
 * bound: a hung nvidia-smi costs the caller its deadline, stop() kills the
 * child (SIGTERM, then SIGKILL) and reaps it by its own pid only, so a
 * program's SIGCHLD handler or other children are left alone.
 *
 * Children are started with fork/execv, no shell, stdin from /dev/null,
 * stdout and stderr into the pipe (nvidia-smi's error text is what we
 * report), and every descriptor of ours is close-on-exec.
 */
#include "../../util/clock.h"
#include "../../util/error.h"
#include "backend.h"
#include "smi_parse.h"
#include "gpu_profile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SMI_DEFAULT_TIMEOUT_NS 5000000000ull
#define SMI_MAX_TIMEOUT_NS (24ull * 3600ull * 1000000000ull)
/* SIGTERM first so nvidia-smi can release NVML cleanly; a child that has not
 * gone after the grace gets SIGKILL. */
#define SMI_TERM_GRACE_NS 200000000ull
/* A process in uninterruptible sleep (stuck in the driver) does not die even
 * from SIGKILL; after this long we stop waiting rather than hang the caller. */
#define SMI_KILL_WAIT_NS 2000000000ull
/* How long a child that closed its output gets to exit before it is killed. */
#define SMI_EXIT_WAIT_NS 500000000ull
#define SMI_DISCOVERY_OUTPUT_MAX 65536
#define SMI_LINE_MAX 4096
#define SMI_TEXT_MAX 400
#define SMI_DRIVER_MAX 64

/* One child process and the read end of its output pipe. */
typedef struct smi_child {
    pid_t pid;   /* 0: none */
    int fd;      /* -1: closed */
    bool reaped; /* waitpid has returned for pid (or it was reaped elsewhere) */
    bool status_known;
    int wstatus;
} smi_child;

typedef struct smi_ctx {
    char path[PATH_MAX];
    uint64_t timeout_ns;

    unsigned n_dev;
    gp_device_info *devs;
    char driver[SMI_DRIVER_MAX];

    int wake_rd, wake_wr; /* interrupt() -> wait_tick() */

    /* Streaming run. */
    bool started;
    smi_child child;
    size_t n_slots;
    unsigned *slot_index; /* slot -> nvidia-smi index */
    gp_device_sample *pend;
    bool *have;
    size_t n_have;
    char buf[SMI_LINE_MAX];
    size_t buf_start, buf_len; /* unconsumed bytes are buf[buf_start, buf_len) */
    bool discarding;           /* inside an over-long line */
    bool eof;
    bool dead; /* the child is gone: wait_tick repeats dead_msg */
    gp_status dead_status;
    char dead_msg[GP_ERROR_MESSAGE_MAX];
    char last_text[SMI_TEXT_MAX]; /* the last line that was not a row */
    uint64_t malformed_lines;
} smi_ctx;

/* ------------------------------------------------------------- helpers */

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Moves fd above 0..2 so the child's dup2() onto stdin/stdout/stderr can
 * never overwrite another of the descriptors it still needs (a program that
 * closed its stdin would otherwise hand us fd 0). */
static int fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int saved = errno;
    close(fd);
    errno = saved;
    return moved;
}

static void format_seconds(char *buf, size_t len, uint64_t ns)
{
    if (ns % 100000000ull == 0)
        snprintf(buf, len, "%.1f s", (double)ns / 1e9);
    else
        snprintf(buf, len, "%.3f s", (double)ns / 1e9);
}

static void describe_exit(const smi_child *ch, char *buf, size_t len)
{
    if (!ch->status_known)
        snprintf(buf, len, "an unknown status (it was reaped outside gpu-profile)");
    else if (WIFEXITED(ch->wstatus))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(ch->wstatus));
    else if (WIFSIGNALED(ch->wstatus))
        snprintf(buf, len, "signal %d", WTERMSIG(ch->wstatus));
    else
        snprintf(buf, len, "wait status 0x%x", (unsigned)ch->wstatus);
}

/* Polls waitpid(pid) for up to wait_ns.  ECHILD means someone else reaped
 * it (SIGCHLD set to SIG_IGN, or a handler calling waitpid(-1)): it is gone
 * and its status is lost, which is all we need to know. */
static bool reap_within(smi_child *ch, uint64_t wait_ns)
{
    if (ch->pid <= 0 || ch->reaped)
        return true;
    uint64_t end = gp_now_mono_ns() + wait_ns;
    uint64_t nap = 200000; /* 0.2 ms, doubling to 10 ms */
    for (;;) {
        int st = 0;
        pid_t r = waitpid(ch->pid, &st, WNOHANG);
        if (r == ch->pid) {
            ch->reaped = true;
            ch->status_known = true;
            ch->wstatus = st;
            return true;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ch->reaped = true;
            ch->status_known = false;
            return true;
        }
        uint64_t now = gp_now_mono_ns();
        if (now >= end)
            return false;
        uint64_t left = end - now;
        sleep_ns(nap < left ? nap : left);
        if (nap < 10000000ull)
            nap *= 2;
    }
}

/* Ends a child whatever state it is in; bounded by the grace + kill wait. */
static void child_end(smi_child *ch, bool gently)
{
    /* Closing our end first means a child that ignores SIGTERM still dies of
     * SIGPIPE at its next write. */
    close_fd(&ch->fd);
    if (ch->pid <= 0)
        return;
    if (!reap_within(ch, 0)) {
        if (gently) {
            kill(ch->pid, SIGTERM);
            reap_within(ch, SMI_TERM_GRACE_NS);
        }
        if (!ch->reaped) {
            kill(ch->pid, SIGKILL);
            reap_within(ch, SMI_KILL_WAIT_NS);
        }
        /* Still not reaped: stuck in the kernel.  We give up on it rather
         * than block; it will be a zombie until it leaves the driver. */
    }
    ch->pid = 0;
}

/*
 * Starts argv[0] with stdin from /dev/null and stdout+stderr into a new
 * non-blocking pipe.  An exec failure is reported through a close-on-exec
 * pipe, so "permission denied" is an error here, not a mysterious exit 127.
 */
static gp_status child_spawn(const char *path, char *const argv[], smi_child *ch, gp_error *err)
{
    int out[2] = {-1, -1}, ex[2] = {-1, -1};
    int devnull = -1;
    memset(ch, 0, sizeof *ch);
    ch->fd = -1;

    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(ex, O_CLOEXEC) != 0)
        goto sys_fail;
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0)
        goto sys_fail;
    out[0] = fd_above_stdio(out[0]);
    out[1] = fd_above_stdio(out[1]);
    ex[0] = fd_above_stdio(ex[0]);
    ex[1] = fd_above_stdio(ex[1]);
    devnull = fd_above_stdio(devnull);
    if (out[0] < 0 || out[1] < 0 || ex[0] < 0 || ex[1] < 0 || devnull < 0)
        goto sys_fail;

    /* Prepared before fork: the child of a threaded program may only make
     * async-signal-safe calls. */
    sigset_t none;
    sigemptyset(&none);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);

    pid_t pid = fork();
    if (pid < 0)
        goto sys_fail;
    if (pid == 0) {
        /* A blocked or ignored SIGTERM/SIGPIPE would survive exec and make
         * nvidia-smi unkillable by stop()'s first, gentle signal. */
        sigaction(SIGTERM, &dfl, NULL);
        sigaction(SIGINT, &dfl, NULL);
        sigaction(SIGPIPE, &dfl, NULL);
        sigaction(SIGHUP, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0) {
            int e = errno;
            ssize_t w = write(ex[1], &e, sizeof e);
            (void)w;
            _exit(127);
        }
        execv(path, argv);
        int e = errno;
        ssize_t w = write(ex[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }

    close_fd(&out[1]);
    close_fd(&ex[1]);
    close_fd(&devnull);
    ch->pid = pid;
    ch->fd = out[0];

    /* EOF on ex[0] means exec happened.  Bounded: a process forked
     * elsewhere in this program may hold a copy of the write end. */
    int exec_errno = 0;
    struct pollfd pfd = {.fd = ex[0], .events = POLLIN};
    int pr;
    do {
        pr = poll(&pfd, 1, 2000);
    } while (pr < 0 && errno == EINTR);
    if (pr > 0) {
        ssize_t r;
        do {
            r = read(ex[0], &exec_errno, sizeof exec_errno);
        } while (r < 0 && errno == EINTR);
        if (r != (ssize_t)sizeof exec_errno)
            exec_errno = 0;
    }
    close_fd(&ex[0]);
    if (exec_errno != 0) {
        child_end(ch, false);
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE, "smi: cannot run %s: %s", path,
                            strerror(exec_errno));
    }
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0) {
        int e = errno;
        child_end(ch, false);
        return gp_error_set(err, GP_ERR_IO, "smi: cannot make the pipe from %s non-blocking: %s",
                            path, strerror(e));
    }
    return GP_OK;

sys_fail : {
    int e = errno;
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&ex[0]);
    close_fd(&ex[1]);
    close_fd(&devnull);
    return gp_error_set(err, GP_ERR_IO, "smi: cannot start %s: %s", path, strerror(e));
}
}

/* The first lines of a child's text, trimmed and joined, for messages. */
static void summarize_text(const char *text, char *out, size_t cap)
{
    size_t used = 0;
    int lines = 0;
    out[0] = '\0';
    const char *p = text;
    while (*p && lines < 3 && used + 1 < cap) {
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        const char *b = p;
        while (b < e && (*b == ' ' || *b == '\t' || *b == '\r'))
            b++;
        const char *t = e;
        while (t > b && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r'))
            t--;
        if (t > b) {
            int n = snprintf(out + used, cap - used, "%s%.*s", used ? " " : "", (int)(t - b), b);
            if (n < 0)
                break;
            used += (size_t)n < cap - used ? (size_t)n : cap - used - 1;
            lines++;
        }
        p = *e ? e + 1 : e;
    }
}

/* ------------------------------------------------------------- discovery */

static bool is_executable_file(const char *path, int *why)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *why = errno;
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = EISDIR;
        return false;
    }
    if (access(path, X_OK) != 0) {
        *why = errno;
        return false;
    }
    return true;
}

static gp_status locate_binary(const char *want, char *out, size_t cap, gp_error *err)
{
    int why = 0;
    if (want && strchr(want, '/')) {
        if (!is_executable_file(want, &why))
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "smi: nvidia-smi not found at '%s' (%s): install the NVIDIA "
                                "driver or fix smi_path",
                                want, why == EISDIR ? "not a regular file" : strerror(why));
        snprintf(out, cap, "%s", want);
        return GP_OK;
    }
    const char *name = want && *want ? want : "nvidia-smi";
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX];
        /* An empty PATH entry means the current directory, as for execvp. */
        int w = n ? snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, name)
                  : snprintf(cand, sizeof cand, "./%s", name);
        if (w > 0 && (size_t)w < sizeof cand && is_executable_file(cand, &why)) {
            snprintf(out, cap, "%s", cand);
            return GP_OK;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                        "smi: %s not found in PATH (%s): install the NVIDIA driver or set smi_path",
                        name, path);
}

/* Reads what fd has into text (at most SMI_DISCOVERY_OUTPUT_MAX bytes kept,
 * the excess read and dropped); true at end of output. */
static bool drain_into(int fd, char *text, size_t *len)
{
    for (;;) {
        char tmp[4096];
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r > 0) {
            size_t keep = (size_t)r;
            if (keep > SMI_DISCOVERY_OUTPUT_MAX - *len)
                keep = SMI_DISCOVERY_OUTPUT_MAX - *len;
            memcpy(text + *len, tmp, keep);
            *len += keep;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        return r == 0;
    }
}

/* Reads everything a one-shot child prints, until it exits or the deadline. */
static gp_status run_discovery(smi_ctx *c, char **text_out, smi_child *ch, gp_error *err)
{
    char *argv[] = {c->path, "--query-gpu=" SMI_DEVICE_FIELDS, "--format=csv,noheader,nounits",
                    NULL};
    gp_status st = child_spawn(c->path, argv, ch, err);
    if (st != GP_OK)
        return st;

    char *text = malloc(SMI_DISCOVERY_OUTPUT_MAX + 1);
    if (!text) {
        child_end(ch, false);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    }
    size_t len = 0;
    uint64_t deadline = gp_now_mono_ns() + c->timeout_ns;
    bool eof = false;
    for (;;) {
        eof = drain_into(ch->fd, text, &len);
        /* Either EOF or the child's exit ends the output: a process forked
         * elsewhere may keep the pipe open after our child is gone. */
        if (eof)
            break;
        if (reap_within(ch, 0)) {
            drain_into(ch->fd, text, &len); /* what it wrote just before exiting */
            break;
        }
        uint64_t now = gp_now_mono_ns();
        if (now >= deadline)
            break;
        uint64_t left_ms = (deadline - now + 999999) / 1000000;
        struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left_ms < 50 ? left_ms : 50));
        if (pr < 0 && errno != EINTR)
            break;
    }
    if (!ch->reaped) {
        uint64_t now = gp_now_mono_ns();
        reap_within(ch, now < deadline ? deadline - now : 0);
    }
    text[len] = '\0';
    if (!ch->reaped) {
        child_end(ch, false);
        free(text);
        char secs[32];
        format_seconds(secs, sizeof secs, c->timeout_ns);
        return gp_error_set(err, GP_ERR_TIMEOUT,
                            "smi: nvidia-smi did not answer within %s (%s was killed; is the "
                            "driver hung?)",
                            secs, c->path);
    }
    close_fd(&ch->fd);
    ch->pid = 0;
    *text_out = text;
    return GP_OK;
}

static gp_status discover(smi_ctx *c, gp_error *err)
{
    smi_child ch;
    char *text = NULL;
    gp_status st = run_discovery(c, &text, &ch, err);
    if (st != GP_OK)
        return st;

    char said[SMI_TEXT_MAX];
    summarize_text(text, said, sizeof said);
    char how[96];
    describe_exit(&ch, how, sizeof how);
    /* An unknown status (a program that sets SIGCHLD to SIG_IGN reaps for
     * us) is judged by the output alone. */
    if (ch.status_known && (!WIFEXITED(ch.wstatus) || WEXITSTATUS(ch.wstatus) != 0)) {
        /* nvidia-smi's own words say why (no driver, no device, bad field). */
        st = gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE, "smi: %s failed with %s: %s", c->path,
                          how, said[0] ? said : "(no output)");
        free(text);
        return st;
    }

    size_t cap = 8, n = 0;
    gp_device_info *devs = malloc(cap * sizeof *devs);
    char other[SMI_TEXT_MAX] = "";
    for (char *line = text; devs && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        gp_device_info d;
        char drv[SMI_DRIVER_MAX];
        if (gp_smi_parse_device(line, &d, drv, sizeof drv) == GP_OK) {
            if (n == cap) {
                gp_device_info *g = realloc(devs, 2 * cap * sizeof *devs);
                if (!g) {
                    free(devs);
                    devs = NULL;
                    break;
                }
                devs = g;
                cap *= 2;
            }
            devs[n++] = d;
            if (!c->driver[0])
                snprintf(c->driver, sizeof c->driver, "%s", drv);
        } else if (!other[0]) {
            summarize_text(line, other, sizeof other);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!devs)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    if (n == 0) {
        free(devs);
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE, "smi: %s listed no GPU: %s", c->path,
                            other[0] ? other : "(no output)");
    }
    c->devs = devs;
    c->n_dev = (unsigned)n;
    return GP_OK;
}

/* ------------------------------------------------------------- backend */

static void smi_stop(void *ctx);

static void smi_close(void *ctx)
{
    smi_ctx *c = ctx;
    if (!c)
        return;
    smi_stop(c);
    close_fd(&c->wake_rd);
    close_fd(&c->wake_wr);
    free(c->devs);
    free(c);
}

static gp_status smi_open(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    *ctx = NULL;
    smi_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    c->wake_rd = c->wake_wr = -1;
    c->child.fd = -1;
    c->timeout_ns = cfg && cfg->timeout_ns ? cfg->timeout_ns : SMI_DEFAULT_TIMEOUT_NS;
    if (c->timeout_ns > SMI_MAX_TIMEOUT_NS)
        c->timeout_ns = SMI_MAX_TIMEOUT_NS; /* keeps now + timeout from wrapping */

    gp_status st = locate_binary(cfg ? cfg->smi_path : NULL, c->path, sizeof c->path, err);
    if (st == GP_OK) {
        int w[2];
        if (pipe2(w, O_CLOEXEC | O_NONBLOCK) != 0) {
            st = gp_error_set(err, GP_ERR_IO, "smi: cannot create a pipe: %s", strerror(errno));
        } else {
            c->wake_rd = w[0];
            c->wake_wr = w[1];
        }
    }
    if (st == GP_OK)
        st = discover(c, err);
    if (st != GP_OK) {
        smi_close(c);
        return st;
    }
    *ctx = c;
    return GP_OK;
}

static gp_status smi_device_count(void *ctx, unsigned *count, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    *count = c->n_dev;
    return GP_OK;
}

static void describe_devices(const smi_ctx *c, char *buf, size_t len)
{
    if (c->n_dev == 0)
        snprintf(buf, len, "no device");
    else if (c->n_dev == 1)
        snprintf(buf, len, "1 device (0)");
    else
        snprintf(buf, len, "%u devices (0-%u)", c->n_dev, c->n_dev - 1);
}

static gp_status smi_device_info(void *ctx, unsigned index, gp_device_info *out, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    if (index >= c->n_dev) {
        char have[64];
        describe_devices(c, have, sizeof have);
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND, "smi: device %u does not exist: %s",
                            index, have);
    }
    *out = c->devs[index];
    /* The library's device index is the position; nvidia-smi's own index is
     * what -i gets.  They agree unless nvidia-smi skipped a number. */
    out->index = index;
    return GP_OK;
}

static gp_status smi_driver_version(void *ctx, char *buf, size_t len, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    if (len)
        snprintf(buf, len, "%s", c->driver);
    return GP_OK;
}

static void drain_wake(smi_ctx *c)
{
    char tmp[64];
    while (read(c->wake_rd, tmp, sizeof tmp) > 0)
        ;
}

static void free_run(smi_ctx *c)
{
    free(c->slot_index);
    free(c->pend);
    free(c->have);
    c->slot_index = NULL;
    c->pend = NULL;
    c->have = NULL;
    c->n_slots = 0;
}

static gp_status smi_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                           gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    if (c->started)
        return gp_error_set(err, GP_ERR_STATE, "smi: already sampling: call stop first");
    if (n == 0 || !indices)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "smi: no device to sample");
    for (size_t i = 0; i < n; i++) {
        if (indices[i] >= c->n_dev) {
            char have[64];
            describe_devices(c, have, sizeof have);
            return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND, "smi: device %u does not exist: %s",
                                indices[i], have);
        }
    }

    c->slot_index = calloc(n, sizeof *c->slot_index);
    c->pend = calloc(n, sizeof *c->pend);
    c->have = calloc(n, sizeof *c->have);
    /* "-i a,b,..." with each nvidia-smi index once, in slot order. */
    size_t id_cap = n * 12 + 1;
    char *ids = malloc(id_cap);
    if (!c->slot_index || !c->pend || !c->have || !ids) {
        free(ids);
        free_run(c);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    }
    size_t used = 0;
    ids[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        unsigned smi_index = c->devs[indices[i]].index;
        c->slot_index[i] = smi_index;
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup = dup || c->slot_index[j] == smi_index;
        if (!dup)
            used += (size_t)snprintf(ids + used, id_cap - used, "%s%u", used ? "," : "", smi_index);
    }
    c->n_slots = n;
    c->n_have = 0;

    uint64_t ms = (interval_ns + 500000) / 1000000;
    if (ms < 1)
        ms = 1;
    char ms_text[24];
    snprintf(ms_text, sizeof ms_text, "%llu", (unsigned long long)ms);
    char *argv[] = {c->path,
                    "--query-gpu=" SMI_SAMPLE_FIELDS,
                    "--format=csv,noheader,nounits",
                    "-lms",
                    ms_text,
                    "-i",
                    ids,
                    NULL};

    /* A stale interrupt from before this run must not end its first wait. */
    drain_wake(c);
    c->buf_start = c->buf_len = 0;
    c->discarding = false;
    c->eof = false;
    c->dead = false;
    c->dead_msg[0] = '\0';
    c->last_text[0] = '\0';
    c->malformed_lines = 0;

    gp_status st = child_spawn(c->path, argv, &c->child, err);
    free(ids);
    if (st != GP_OK) {
        free_run(c);
        return st;
    }
    c->started = true;
    return GP_OK;
}

/* Hands the round over: slots that got a row are GP_OK, the others
 * GP_ERR_TIMEOUT (the row never came this round; not a device failure). */
static void emit_round(smi_ctx *c, gp_device_sample *out, gp_status *slot_status,
                       gp_error *slot_err)
{
    for (size_t i = 0; i < c->n_slots; i++) {
        if (c->have[i]) {
            out[i] = c->pend[i];
            if (slot_status)
                slot_status[i] = GP_OK;
        } else {
            memset(&out[i], 0, sizeof out[i]);
            if (slot_status)
                slot_status[i] = GP_ERR_TIMEOUT;
            if (slot_err)
                gp_error_set(&slot_err[i], GP_ERR_TIMEOUT,
                             "smi: nvidia-smi sent no row for device %u in this round",
                             c->slot_index[i]);
        }
        c->have[i] = false;
    }
    c->n_have = 0;
}

/* Puts a row into the first slot of its index that is still empty. */
static bool place_row(smi_ctx *c, unsigned index, const gp_device_sample *s, bool *known)
{
    *known = false;
    for (size_t i = 0; i < c->n_slots; i++) {
        if (c->slot_index[i] != index)
            continue;
        *known = true;
        if (!c->have[i]) {
            c->pend[i] = *s;
            c->have[i] = true;
            c->n_have++;
            return true;
        }
    }
    return false;
}

/* One line of output; true when it completed a round (out is filled). */
static bool take_line(smi_ctx *c, char *line, gp_device_sample *out, gp_status *slot_status,
                      gp_error *slot_err)
{
    char copy[SMI_LINE_MAX];
    snprintf(copy, sizeof copy, "%s", line);
    unsigned index;
    gp_device_sample s;
    if (gp_smi_parse_sample(line, &index, &s) != GP_OK) {
        /* Not a row: a malformed one, or nvidia-smi telling us something
         * (kept for the message if it then exits). */
        char said[SMI_TEXT_MAX];
        summarize_text(copy, said, sizeof said);
        if (said[0]) {
            snprintf(c->last_text, sizeof c->last_text, "%s", said);
            c->malformed_lines++;
        }
        return false;
    }
    bool known;
    if (place_row(c, index, &s, &known)) {
        if (c->n_have < c->n_slots)
            return false;
        emit_round(c, out, slot_status, slot_err);
        return true;
    }
    if (!known)
        return false; /* a device we did not ask for */
    /* The device repeats before the others arrived: their rows are lost for
     * this round; the repeat opens the next one. */
    emit_round(c, out, slot_status, slot_err);
    place_row(c, index, &s, &known);
    return true;
}

/* Takes complete lines from the buffer until a round completes. */
static bool take_buffered(smi_ctx *c, gp_device_sample *out, gp_status *slot_status,
                          gp_error *slot_err)
{
    while (c->buf_start < c->buf_len) {
        char *b = c->buf + c->buf_start;
        char *nl = memchr(b, '\n', c->buf_len - c->buf_start);
        if (!nl)
            break;
        *nl = '\0';
        c->buf_start = (size_t)(nl - c->buf) + 1;
        if (c->discarding) {
            c->discarding = false;
            continue;
        }
        if (take_line(c, b, out, slot_status, slot_err))
            return true;
    }
    return false;
}

/* Reads what the pipe has; sets eof at end of output. */
static gp_status read_pipe(smi_ctx *c)
{
    for (;;) {
        if (c->buf_start > 0) {
            memmove(c->buf, c->buf + c->buf_start, c->buf_len - c->buf_start);
            c->buf_len -= c->buf_start;
            c->buf_start = 0;
        }
        if (c->buf_len == sizeof c->buf - 1) {
            /* A line longer than any row: drop it up to its newline. */
            c->malformed_lines++;
            c->discarding = true;
            c->buf_len = 0;
        }
        ssize_t r = read(c->child.fd, c->buf + c->buf_len, sizeof c->buf - 1 - c->buf_len);
        if (r > 0) {
            c->buf_len += (size_t)r;
            if (memchr(c->buf + c->buf_len - (size_t)r, '\n', (size_t)r))
                return GP_OK;
            continue;
        }
        if (r == 0) {
            c->eof = true;
            return GP_OK;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return GP_OK;
        return GP_ERR_IO;
    }
}

/* The child's output ended: reap it and keep the reason for every later call. */
static gp_status producer_died(smi_ctx *c, gp_error *err)
{
    if (c->buf_start < c->buf_len && !c->discarding) {
        /* A last line without a newline is still nvidia-smi's last word. */
        c->buf[c->buf_len] = '\0';
        summarize_text(c->buf + c->buf_start, c->last_text, sizeof c->last_text);
    }
    c->buf_start = c->buf_len = 0;
    if (!reap_within(&c->child, SMI_EXIT_WAIT_NS))
        child_end(&c->child, true);
    close_fd(&c->child.fd);
    char how[96];
    describe_exit(&c->child, how, sizeof how);
    c->child.pid = 0;
    c->dead = true;
    c->dead_status = GP_ERR_BACKEND;
    char skipped[64] = "";
    if (c->malformed_lines > 1)
        snprintf(skipped, sizeof skipped, " (%llu lines were not rows)",
                 (unsigned long long)c->malformed_lines);
    snprintf(c->dead_msg, sizeof c->dead_msg, "smi: nvidia-smi stopped sampling with %s: %s%s", how,
             c->last_text[0] ? c->last_text : "(no output)", skipped);
    return gp_error_set(err, c->dead_status, "%s", c->dead_msg);
}

static gp_status smi_wait_tick(void *ctx, gp_device_sample *out, gp_status *slot_status,
                               gp_error *slot_err, uint64_t deadline_mono_ns, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c || !c->started)
        return gp_error_set(err, GP_ERR_STATE, "smi: not sampling: call start first");
    if (c->dead)
        return gp_error_set(err, c->dead_status, "%s", c->dead_msg);
    for (;;) {
        if (take_buffered(c, out, slot_status, slot_err))
            return GP_OK;
        if (c->eof)
            return producer_died(c, err);
        uint64_t now = gp_now_mono_ns();
        if (now >= deadline_mono_ns)
            return gp_error_set(err, GP_ERR_TIMEOUT,
                                "smi: nvidia-smi sent no complete round before the deadline");
        uint64_t left_ms = (deadline_mono_ns - now + 999999) / 1000000;
        struct pollfd pfd[2] = {{.fd = c->child.fd, .events = POLLIN},
                                {.fd = c->wake_rd, .events = POLLIN}};
        int pr = poll(pfd, 2, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return gp_error_set(err, GP_ERR_IO, "smi: poll failed: %s", strerror(errno));
        }
        if (pfd[1].revents) {
            drain_wake(c);
            return gp_error_set(err, GP_ERR_STATE, "smi: interrupted");
        }
        if (pfd[0].revents) {
            if (read_pipe(c) != GP_OK) {
                int e = errno;
                c->dead = true;
                c->dead_status = GP_ERR_IO;
                snprintf(c->dead_msg, sizeof c->dead_msg,
                         "smi: reading nvidia-smi's output failed: %s", strerror(e));
                return gp_error_set(err, c->dead_status, "%s", c->dead_msg);
            }
        }
    }
}

static void smi_interrupt(void *ctx)
{
    smi_ctx *c = ctx;
    if (!c || c->wake_wr < 0)
        return;
    /* Sticky until the next wait_tick or start: an interrupt that lands
     * just before the wait still ends it.  A full pipe already wakes. */
    char one = 1;
    ssize_t w;
    do {
        w = write(c->wake_wr, &one, 1);
    } while (w < 0 && errno == EINTR);
}

static void smi_stop(void *ctx)
{
    smi_ctx *c = ctx;
    if (!c || !c->started)
        return;
    child_end(&c->child, true);
    free_run(c);
    c->started = false;
    c->buf_start = c->buf_len = 0;
}

const gp_backend gp_backend_smi = {
    .name = "smi",
    .self_paced = 1,
    .open = smi_open,
    .close = smi_close,
    .device_count = smi_device_count,
    .device_info = smi_device_info,
    .driver_version = smi_driver_version,
    .start = smi_start,
    .read = NULL,
    .wait_tick = smi_wait_tick,
    .interrupt = smi_interrupt,
    .stop = smi_stop,
};
