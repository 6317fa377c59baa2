/*
 * sampler/backends/smi_proc.c - nvidia-smi's child processes, so that a hung
 * or dying nvidia-smi costs the caller a deadline, never a hang.
 *
 * Children are started with fork/execv, no shell, stdin from /dev/null,
 * stdout and stderr into the pipe (nvidia-smi's error text is what we
 * report), and every descriptor of ours is close-on-exec.  They are killed
 * SIGTERM first, then SIGKILL, and reaped by their own pid only.
 */
#include "../../util/clock.h"
#include "../../util/env.h"
#include "../../util/error.h"
#include "../../util/fs.h"
#include "smi_proc.h"
#include "gpu_profile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* SIGTERM first so nvidia-smi can release NVML cleanly; a child that has not
 * gone after the grace gets SIGKILL. */
#define SMI_TERM_GRACE_NS 200000000ull
/* A process in uninterruptible sleep (stuck in the driver) does not die even
 * from SIGKILL; after this long we stop waiting rather than hang the caller. */
#define SMI_KILL_WAIT_NS 2000000000ull
#define SMI_DISCOVERY_OUTPUT_MAX 65536

/* ------------------------------------------------------------- helpers */

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void gp_smi_close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void format_seconds(char *buf, size_t len, uint64_t ns)
{
    if (ns % 100000000ull == 0)
        snprintf(buf, len, "%.1f s", (double)ns / 1e9);
    else
        snprintf(buf, len, "%.3f s", (double)ns / 1e9);
}

void gp_smi_child_describe_exit(const smi_child *ch, char *buf, size_t len)
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

/* ------------------------------------------------------- reap and kill */

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

void gp_smi_child_end(smi_child *ch, bool gently)
{
    /* Closing our end first means a child that ignores SIGTERM still dies of
     * SIGPIPE at its next write. */
    gp_smi_close_fd(&ch->fd);
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

void gp_smi_child_finish(smi_child *ch, uint64_t wait_ns)
{
    if (!reap_within(ch, wait_ns))
        gp_smi_child_end(ch, true);
    gp_smi_close_fd(&ch->fd);
    ch->pid = 0;
}

/* --------------------------------------------------------------- spawn */

/* The output pipe, the pipe that reports an exec failure and /dev/null for
 * stdin, all close-on-exec and above 0..2.  -1 with errno on failure (what
 * was opened is left in the arrays for the caller to close). */
static int open_child_fds(int out[2], int ex[2], int *devnull)
{
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(ex, O_CLOEXEC) != 0)
        return -1;
    *devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (*devnull < 0)
        return -1;
    /* Above 0..2, so the child's dup2() onto its standard streams can never
     * overwrite another descriptor it still needs (a program that closed
     * its stdin would otherwise hand us fd 0). */
    out[0] = fl_fd_above_stdio(out[0]);
    out[1] = fl_fd_above_stdio(out[1]);
    ex[0] = fl_fd_above_stdio(ex[0]);
    ex[1] = fl_fd_above_stdio(ex[1]);
    *devnull = fl_fd_above_stdio(*devnull);
    if (out[0] < 0 || out[1] < 0 || ex[0] < 0 || ex[1] < 0 || *devnull < 0)
        return -1;
    return 0;
}

/* In the forked child: async-signal-safe calls only (dfl and none were
 * prepared before fork).  Never returns; an error goes to ex_wr as errno. */
static void exec_child(const char *path, char *const argv[], int devnull, int out_wr, int ex_wr,
                       const struct sigaction *dfl, const sigset_t *none)
{
    /* A blocked or ignored SIGTERM/SIGPIPE would survive exec and make
     * nvidia-smi unkillable by stop()'s first, gentle signal. */
    sigaction(SIGTERM, dfl, NULL);
    sigaction(SIGINT, dfl, NULL);
    sigaction(SIGPIPE, dfl, NULL);
    sigaction(SIGHUP, dfl, NULL);
    sigprocmask(SIG_SETMASK, none, NULL);
    if (dup2(devnull, 0) < 0 || dup2(out_wr, 1) < 0 || dup2(out_wr, 2) < 0) {
        int e = errno;
        ssize_t w = write(ex_wr, &e, sizeof e);
        (void)w;
        _exit(127);
    }
    gp_child_env_scrub(); /* no secret of ours (GPUFL_API_KEY) for nvidia-smi */
    execv(path, argv);
    int e = errno;
    ssize_t w = write(ex_wr, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The child's exec errno, 0 once it has exec'd (EOF on ex_rd).  Bounded: a
 * process forked elsewhere in this program may hold a copy of the write end. */
static int await_exec(int ex_rd)
{
    int exec_errno = 0;
    struct pollfd pfd = {.fd = ex_rd, .events = POLLIN};
    int pr;
    do {
        pr = poll(&pfd, 1, 2000);
    } while (pr < 0 && errno == EINTR);
    if (pr > 0) {
        ssize_t r;
        do {
            r = read(ex_rd, &exec_errno, sizeof exec_errno);
        } while (r < 0 && errno == EINTR);
        if (r != (ssize_t)sizeof exec_errno)
            exec_errno = 0;
    }
    return exec_errno;
}

/* The running child's pipe becomes non-blocking, or the child is ended. */
static gp_status make_nonblocking(const char *path, smi_child *ch, gp_error *err)
{
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0) {
        int e = errno;
        gp_smi_child_end(ch, false);
        return gp_error_set(err, GP_ERR_IO, "smi: cannot make the pipe from %s non-blocking: %s",
                            path, strerror(e));
    }
    return GP_OK;
}

gp_status gp_smi_child_spawn(const char *path, char *const argv[], smi_child *ch, gp_error *err)
{
    int out[2] = {-1, -1}, ex[2] = {-1, -1};
    int devnull = -1;
    memset(ch, 0, sizeof *ch);
    ch->fd = -1;

    pid_t pid = -1;
    if (open_child_fds(out, ex, &devnull) == 0) {
        /* Prepared before fork: the child of a threaded program may only
         * make async-signal-safe calls. */
        sigset_t none;
        sigemptyset(&none);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);

        pid = fork();
        if (pid == 0)
            exec_child(path, argv, devnull, out[1], ex[1], &dfl, &none);
    }
    if (pid < 0) {
        int e = errno;
        gp_smi_close_fd(&out[0]);
        gp_smi_close_fd(&out[1]);
        gp_smi_close_fd(&ex[0]);
        gp_smi_close_fd(&ex[1]);
        gp_smi_close_fd(&devnull);
        return gp_error_set(err, GP_ERR_IO, "smi: cannot start %s: %s", fl_path_show(path).text,
                            strerror(e));
    }

    gp_smi_close_fd(&out[1]);
    gp_smi_close_fd(&ex[1]);
    gp_smi_close_fd(&devnull);
    ch->pid = pid;
    ch->fd = out[0];
    int exec_errno = await_exec(ex[0]);
    gp_smi_close_fd(&ex[0]);
    if (exec_errno != 0) {
        gp_smi_child_end(ch, false);
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE, "smi: cannot run %s: %s",
                            fl_path_show(path).text, strerror(exec_errno));
    }
    return make_nonblocking(path, ch, err);
}

/* ------------------------------------------------------ one-shot child */

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

/* Reads what the child prints until the end of its output, its exit or the
 * deadline, whichever comes first. */
static void collect_output(smi_child *ch, char *text, size_t *len, uint64_t deadline)
{
    for (;;) {
        /* Either EOF or the child's exit ends the output: a process forked
         * elsewhere may keep the pipe open after our child is gone. */
        if (drain_into(ch->fd, text, len))
            break;
        if (reap_within(ch, 0)) {
            drain_into(ch->fd, text, len); /* what it wrote just before exiting */
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
}

gp_status gp_smi_run_once(const char *path, char *const argv[], uint64_t timeout_ns, smi_child *ch,
                          char **text_out, gp_error *err)
{
    gp_status st = gp_smi_child_spawn(path, argv, ch, err);
    if (st != GP_OK)
        return st;

    char *text = malloc(SMI_DISCOVERY_OUTPUT_MAX + 1);
    if (!text) {
        gp_smi_child_end(ch, false);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    }
    size_t len = 0;
    uint64_t deadline = gp_now_mono_ns() + timeout_ns;
    collect_output(ch, text, &len, deadline);
    if (!ch->reaped) {
        uint64_t now = gp_now_mono_ns();
        reap_within(ch, now < deadline ? deadline - now : 0);
    }
    text[len] = '\0';
    if (!ch->reaped) {
        gp_smi_child_end(ch, false);
        free(text);
        char secs[32];
        format_seconds(secs, sizeof secs, timeout_ns);
        return gp_error_set(err, GP_ERR_TIMEOUT,
                            "smi: nvidia-smi did not answer within %s (%s was killed; is the "
                            "driver hung?)",
                            secs, path);
    }
    gp_smi_child_finish(ch, 0);
    *text_out = text;
    return GP_OK;
}

/* ------------------------------------------------------ streaming lines */

void gp_smi_lines_reset(smi_lines *l)
{
    l->start = l->len = 0;
    l->discarding = false;
    l->eof = false;
    l->overlong = 0;
}

char *gp_smi_lines_next(smi_lines *l)
{
    while (l->start < l->len) {
        char *b = l->buf + l->start;
        char *nl = memchr(b, '\n', l->len - l->start);
        if (!nl)
            break;
        *nl = '\0';
        l->start = (size_t)(nl - l->buf) + 1;
        if (l->discarding) {
            l->discarding = false;
            continue;
        }
        return b;
    }
    return NULL;
}

char *gp_smi_lines_rest(smi_lines *l)
{
    if (l->start >= l->len || l->discarding)
        return NULL;
    l->buf[l->len] = '\0';
    return l->buf + l->start;
}

/* Reads what fd has, up to a newline; sets eof at end of output. */
static gp_status lines_fill(smi_lines *l, int fd)
{
    for (;;) {
        if (l->start > 0) {
            memmove(l->buf, l->buf + l->start, l->len - l->start);
            l->len -= l->start;
            l->start = 0;
        }
        if (l->len == sizeof l->buf - 1) {
            /* A line longer than any row: drop it up to its newline. */
            l->overlong++;
            l->discarding = true;
            l->len = 0;
        }
        ssize_t r = read(fd, l->buf + l->len, sizeof l->buf - 1 - l->len);
        if (r > 0) {
            l->len += (size_t)r;
            if (memchr(l->buf + l->len - (size_t)r, '\n', (size_t)r))
                return GP_OK;
            continue;
        }
        if (r == 0) {
            l->eof = true;
            return GP_OK;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return GP_OK;
        return GP_ERR_IO;
    }
}

smi_wait gp_smi_lines_wait(smi_lines *l, int fd, int wake_fd, uint64_t deadline_mono_ns)
{
    for (;;) {
        uint64_t now = gp_now_mono_ns();
        if (now >= deadline_mono_ns)
            return SMI_WAIT_TIMEOUT;
        uint64_t left_ms = (deadline_mono_ns - now + 999999) / 1000000;
        struct pollfd pfd[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
        int pr = poll(pfd, 2, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return SMI_WAIT_POLL_FAILED;
        }
        if (pfd[1].revents)
            return SMI_WAIT_WOKEN;
        if (pfd[0].revents)
            return lines_fill(l, fd) == GP_OK ? SMI_WAIT_DATA : SMI_WAIT_READ_FAILED;
    }
}
