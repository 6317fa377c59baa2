/*
 * watch.c - the run form without CMD: `gpu-profile --duration S` and
 * `gpu-profile --pid PID` sample until S seconds have passed, PID has
 * exited, or INT/TERM/HUP/QUIT arrives (whichever comes first), and then
 * main's run() reports exactly as after CMD.  The end of PID is seen
 * through a pidfd (poll), or on kernels without pidfd_open by kill(PID, 0)
 * at every sample interval.  Never sends PID a signal.
 */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

int cli_watch_check(const cli_opts *o)
{
    if (o->pid && kill(o->pid, 0) < 0 && errno == ESRCH) {
        cli_say("--pid %ld: no such process (ps -p %ld shows whether it runs)", (long)o->pid,
                (long)o->pid);
        return -1;
    }
    return 0;
}

/* How long one poll may wait: until the deadline, the next live tick, and
 * (without a pidfd) the next kill(PID, 0). */
static int wait_ms_for(const cli_opts *o, double elapsed_s, int pidfd)
{
    int ms = 1000;
    if (o->duration_s > 0) {
        double left = (o->duration_s - elapsed_s) * 1000.0 + 1.0;
        if (left < ms)
            ms = left < 0 ? 0 : (int)left;
    }
    if (o->pid && pidfd < 0) {
        int every = (int)(o->gp.interval_s * 1000.0);
        every = every < 1 ? 1 : every;
        ms = every < ms ? every : ms;
    }
    return ms;
}

int cli_watch(const cli_opts *o, cli_tick_fn tick, void *tick_user, cli_run_result *res, char *msg,
              size_t msg_len)
{
    memset(res, 0, sizeof *res);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGQUIT);
    /* main blocked them before any thread existed: a signalfd reads them. */
    int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
    if (sfd < 0) {
        snprintf(msg, msg_len, "cannot watch: signalfd: %s", strerror(errno));
        return -1;
    }
    int pfd = o->pid ? pidfd_of(o->pid) : -1;
    uint64_t t0 = now_ns(), last_tick = t0;
    for (;;) {
        double el = (double)(now_ns() - t0) / 1e9;
        if (o->duration_s > 0 && el >= o->duration_s)
            break;
        if (o->pid && pfd < 0 && kill(o->pid, 0) < 0 && errno == ESRCH) {
            res->watch_pid_exited = 1;
            break;
        }
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {pfd, POLLIN, 0}};
        int n = poll(p, pfd >= 0 ? 2 : 1, wait_ms_for(o, el, pfd));
        if (n > 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                res->interrupted_by = (int)si.ssi_signo;
                break;
            }
        }
        if (n > 0 && pfd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            res->watch_pid_exited = 1;
            break;
        }
        if (tick && now_ns() - last_tick >= 1000000000ull) {
            tick(tick_user);
            last_tick = now_ns();
        }
    }
    res->cmd_s = (double)(now_ns() - t0) / 1e9;
    res->exit_code = res->interrupted_by ? 128 + res->interrupted_by : 0;
    close(sfd);
    if (pfd >= 0)
        close(pfd);
    return 0;
}
