/*
 * child.c - runs CMD and waits for it without getting in its way.
 *
 * Promises:
 *   - CMD gets the profiler's stdin, stdout, stderr, process group (so the
 *     terminal stays its own), environment (or the one the caller built:
 *     the Trace engine's injection, inject.c), signal mask and ignored
 *     signals, exactly as if it had been started directly; none of our
 *     descriptors.
 *   - An exec failure comes back through a close-on-exec pipe as errno, so
 *     "not found" (127) and "not executable" (126) are told apart and
 *     reported by the profiler, not guessed from an exit status.
 *   - The profiler never dies of SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1,
 *     SIGUSR2 or SIGPIPE while CMD runs: they are blocked from the start of
 *     main (so every thread inherits the mask) and read from a signalfd.
 *     SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are forwarded to CMD; SIGINT and
 *     SIGQUIT only when a process sent them (si_code SI_USER, SI_QUEUE or
 *     SI_TKILL): from the terminal, CMD got its own copy already.
 *   - With wait_all the profiler is a child subreaper: processes CMD leaves
 *     behind are reparented to it, reaped, and waited for.  A SIGINT,
 *     SIGQUIT, SIGTERM or SIGHUP after CMD has exited stops that wait.
 *   - It never busy-waits: one poll() on the signalfd, woken at least every
 *     STOP_PROBE_MS (0.1 s), so that when the profiler itself was stopped
 *     (SIGSTOP, SIGTSTP) the SIGCONT that resumes it tells for how long
 *     (less the time it waited for a CPU: starved is not stopped).
 *   - Children of the library (the smi backend's nvidia-smi) are never
 *     reaped here: when the library has children, CMD's side is found by
 *     listing our children, and each one is waited for by pid.
 *   - Descriptors 0-2 that were closed when the profiler started (it put
 *     /dev/null there, cli_std_fds_reserve) are closed again in CMD.
 *   - CMD's time is its own: vfork to the moment the kernel says it ended,
 *     stamped by a small helper process (waiting on CMD's pidfd), so a
 *     profiler that was stopped (SIGSTOP) or starved when CMD ended does
 *     not lengthen it; how late the profiler saw the end is kept apart.
 */
#include "cli.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const int forwarded[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

void cli_std_fds_reserve(int closed[3])
{
    for (int fd = 0; fd < 3; fd++) {
        closed[fd] = 0;
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        /* The lowest free descriptor: this one, as the lower ones are open. */
        int n = open("/dev/null", O_RDWR);
        if (n < 0)
            continue;
        if (n != fd) {
            dup2(n, fd);
            close(n);
        }
        closed[fd] = 1;
    }
}

void cli_signals_restore(const cli_signals *s)
{
    if (s->chld_was_ignored) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGCHLD, &ign, NULL);
    }
    sigprocmask(SIG_SETMASK, &s->orig_mask, NULL);
}

void cli_signals_block(cli_signals *s)
{
    memset(s, 0, sizeof *s);
    sigemptyset(&s->caught);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
        struct sigaction old;
        /* An ignored signal (nohup, a background job of a script) stays
         * ignored, for us and for CMD, which inherits SIG_IGN. */
        if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaddset(&s->caught, forwarded[i]);
    }
    struct sigaction old;
    if (sigaction(SIGCHLD, NULL, &old) == 0 && old.sa_handler == SIG_IGN) {
        /* Ignored SIGCHLD makes the kernel reap for us and waitpid fail;
         * CMD gets it back as it was. */
        s->chld_was_ignored = 1;
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGCHLD, &dfl, NULL);
    }
    sigaddset(&s->caught, SIGCHLD);
    /* Read to know the profiler was stopped; its continuing is the
     * kernel's business, blocked or not. */
    sigaddset(&s->caught, SIGCONT);
    sigset_t block = s->caught;
    /* A report to a closed pipe is an EPIPE error, not our death. */
    sigaddset(&block, SIGPIPE);
    sigprocmask(SIG_BLOCK, &block, &s->orig_mask);
}

const char *cli_signal_name(int sig, char *buf, size_t len)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
        {SIGILL, "SIGILL"},       {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
        {SIGBUS, "SIGBUS"},       {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
        {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
        {SIGCHLD, "SIGCHLD"},     {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
        {SIGTSTP, "SIGTSTP"},     {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
        {SIGURG, "SIGURG"},       {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
        {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
        {SIGIO, "SIGIO"},         {SIGPWR, "SIGPWR"},   {SIGSYS, "SIGSYS"},
#ifdef SIGSTKFLT
        {SIGSTKFLT, "SIGSTKFLT"},
#endif
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
        if (sig == SIGRTMIN)
            snprintf(buf, len, "SIGRTMIN");
        else
            snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
    } else {
        snprintf(buf, len, "signal %d", sig);
    }
    return buf;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------ our children */

typedef struct pidlist {
    pid_t *p;
    size_t n, cap;
} pidlist;

static int pidlist_add(pidlist *l, pid_t pid)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        pid_t *p = realloc(l->p, cap * sizeof *p);
        if (!p)
            return -1;
        l->p = p;
        l->cap = cap;
    }
    l->p[l->n++] = pid;
    return 0;
}

static int pidlist_has(const pidlist *l, pid_t pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->p[i] == pid)
            return 1;
    return 0;
}

/* /proc/self/task/T/children, where the kernel has it (CONFIG_PROC_CHILDREN). */
static int children_from_task_files(pidlist *out)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int ok = 1;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f) {
            ok = 0;
            break;
        }
        long pid;
        while (fscanf(f, "%ld", &pid) == 1)
            if (pidlist_add(out, (pid_t)pid) < 0)
                ok = 0;
        fclose(f);
    }
    closedir(d);
    return ok ? 0 : -1;
}

/* Every /proc/PID/stat whose parent is us: slower, works on every kernel. */
static int children_from_stat_scan(pidlist *out)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* it exited meanwhile */
        ssize_t n = read(fd, line, sizeof line - 1);
        close(fd);
        if (n <= 0)
            continue;
        line[n] = '\0';
        /* "pid (comm) state ppid ...": comm may hold blanks and ')'. */
        char *rp = strrchr(line, ')');
        char state;
        long ppid;
        if (rp && sscanf(rp + 1, " %c %ld", &state, &ppid) == 2 && ppid == (long)self &&
            pidlist_add(out, (pid_t)atol(e->d_name)) < 0) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    return 0;
}

static int list_children(pidlist *out)
{
    out->n = 0;
    if (children_from_task_files(out) == 0)
        return 0;
    out->n = 0;
    return children_from_stat_scan(out);
}

/* ---------------------------------------------------------- supervise */

/* The end stamp: a helper process that waits on CMD's pidfd and writes
 * the CLOCK_MONOTONIC time it saw CMD end into a pipe.  It is a process
 * of its own, so it runs on when the profiler alone is stopped.  It shares
 * our memory (clone with CLONE_VM, on a small stack of its own): a fork
 * would copy the profiler's page tables and make every page either side
 * writes while CMD runs a copy-on-write fault. */
typedef struct stamp {
    pid_t pid; /* -1: none (no pidfd_open, clone failed): the reap time counts */
    int rd;
    int reaped;
    void *stack; /* the helper's, unmapped once it was reaped */
} stamp;

/* What the helper is given, at the bottom of its stack's mapping: its
 * own copy, which the profiler never writes after the clone. */
typedef struct stamp_arg {
    int pfd, wr;
} stamp_arg;

#define STAMP_WAIT_MS 1000 /* how long a reaped CMD's stamp is waited for */
#define STAMP_STACK_BYTES (64 * 1024)
/* The supervising loop runs at least this often, so that a SIGCONT tells
 * how long the profiler was stopped (the gap since it last ran, less half
 * a period: within STOP_PROBE_MS / 2). */
#define STOP_PROBE_MS 100

/* The helper, in our address space on its own stack: raw system calls
 * only (no libc state, no sanitizer's: both are the profiler's); its
 * return value is its exit status. */
__attribute__((no_sanitize("address", "thread", "undefined"))) static int stamp_main(void *arg)
{
    const stamp_arg *a = arg;
    uint64_t all = ~0ull;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof all);
    /* Every signal blocked: the kernel restarts ppoll after a stop, so a
     * failure is final (and errno, the profiler's, is not looked at). */
    struct pollfd pf = {.fd = a->pfd, .events = POLLIN};
    long r = syscall(SYS_ppoll, &pf, 1, NULL, NULL, 0);
    struct timespec ts;
    if (r != 1 || syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
        return 1; /* no stamp: the reap time counts */
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return syscall(SYS_write, a->wr, &t, sizeof t) == (long)sizeof t ? 0 : 1;
}

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);

/* libc's own clone, never a sanitizer's interceptor of it: ThreadSanitizer
 * runs a clone's child as a fork's (its fork handlers in our memory),
 * which breaks on CLONE_VM.  The plain symbol where libc is not glibc. */
static clone_fn libc_clone(void)
{
    clone_fn fn = clone;
    void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *f = h ? dlsym(h, "clone") : NULL;
    if (f)
        memcpy(&fn, &f, sizeof f);
    if (h)
        dlclose(h);
    return fn;
}

static void stamp_start(stamp *st, pid_t cmd)
{
    st->pid = -1;
    st->rd = -1;
    st->reaped = 0;
    st->stack = NULL;
#ifdef SYS_pidfd_open
    int pfd = (int)syscall(SYS_pidfd_open, cmd, 0); /* close-on-exec */
    if (pfd < 0)
        return;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        close(pfd);
        return;
    }
    void *stack = mmap(NULL, STAMP_STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    pid_t h = -1;
    if (stack != MAP_FAILED) {
        stamp_arg *a = stack;
        a->pfd = pfd;
        a->wr = p[1];
        /* CLONE_VM without CLONE_THREAD or CLONE_FILES: a process (stopped
         * or not on its own, reaped by waitpid) with its own copy of our
         * descriptors, and no copy of our memory. */
        h = libc_clone()(stamp_main, (char *)stack + STAMP_STACK_BYTES, CLONE_VM | SIGCHLD, a);
    }
    close(pfd);
    close(p[1]);
    if (h < 0) {
        if (stack != MAP_FAILED)
            munmap(stack, STAMP_STACK_BYTES);
        close(p[0]);
        return;
    }
    st->pid = h;
    st->rd = p[0];
    st->stack = stack;
#else
    (void)cmd;
#endif
}

/* CMD was reaped: its end as the helper saw it (else `fallback`); the
 * helper is reaped, bounded. */
static uint64_t stamp_collect(stamp *st, uint64_t fallback)
{
    if (st->pid < 0)
        return fallback;
    uint64_t t = 0;
    struct pollfd pf = {.fd = st->rd, .events = POLLIN};
    int r;
    do
        r = poll(&pf, 1, STAMP_WAIT_MS);
    while (r < 0 && errno == EINTR);
    ssize_t n = r > 0 ? read(st->rd, &t, sizeof t) : -1;
    close(st->rd);
    st->rd = -1;
    if (!st->reaped) {
        int ws;
        pid_t p;
        do
            p = waitpid(st->pid, &ws, r > 0 ? 0 : WNOHANG);
        while (p < 0 && errno == EINTR);
        if (p == 0) {
            kill(st->pid, SIGKILL);
            while (waitpid(st->pid, &ws, 0) < 0 && errno == EINTR)
                ;
        }
        st->reaped = 1;
    }
    /* The helper is gone: what it used is ours again. */
    munmap(st->stack, STAMP_STACK_BYTES);
    st->stack = NULL;
    return n == (ssize_t)sizeof t && t > 0 && t <= fallback ? t : fallback;
}

typedef struct sup {
    pid_t cmd;
    int cmd_done;
    int cmd_status;
    uint64_t cmd_end_ns;     /* CMD's end (the stamp) */
    uint64_t cmd_seen_ns;    /* when the profiler reaped it */
    int continued;           /* SIGCONT: the profiler was stopped */
    uint64_t awake_ns;       /* the last time the loop ran (STOP_PROBE_MS apart at most) */
    uint64_t awake_delay_ns; /* run_delay_ns() then */
    uint64_t stopped_ns;     /* how long the profiler was stopped, measured at SIGCONT */
    stamp st;
    int lib_may_fork; /* the library has children of its own */
    pidlist lib;      /* ... these, listed before CMD started: never ours to reap */
    int lib_known;    /* the list could be taken */
} sup;

/* How long this thread has waited, runnable, for a CPU (schedstat's
 * run_delay); 0 where the kernel does not say, and then starvation counts
 * as a stop, as before. */
static uint64_t run_delay_ns(void)
{
    char buf[96];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned long long run = 0, delay = 0;
    return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? (uint64_t)delay : 0;
}

/* The loop ran now: a SIGCONT measures the stop from here. */
static void mark_awake(sup *s)
{
    s->awake_ns = now_ns();
    s->awake_delay_ns = run_delay_ns();
}

static void on_reaped(sup *s, pid_t pid, int status)
{
    if (pid == s->st.pid) {
        s->st.reaped = 1;
        return;
    }
    if (pid == s->cmd && !s->cmd_done) {
        s->cmd_done = 1;
        s->cmd_status = status;
        /* The stamp is collected after the loop: waiting for it here
         * would hold up reaping what CMD left behind. */
        s->cmd_seen_ns = now_ns();
    }
}

/* Whether a child other than the stamp helper is alive (1 when the list
 * cannot be taken). */
static int others_alive(const sup *s)
{
    pidlist kids = {0};
    int alive = 1;
    if (list_children(&kids) == 0) {
        alive = 0;
        for (size_t i = 0; i < kids.n; i++)
            if (kids.p[i] != s->st.pid)
                alive = 1;
    }
    free(kids.p);
    return alive;
}

/* Reaps every exited child that is CMD or came from it; returns whether any
 * such child is still alive (the stamp helper is not one). */
static int reap(sup *s)
{
    if (!s->lib_may_fork) {
        for (;;) {
            int st = 0;
            pid_t p = waitpid(-1, &st, WNOHANG);
            if (p > 0) {
                on_reaped(s, p, st);
                continue;
            }
            if (p == 0) /* someone is alive: only the helper, once CMD is gone? */
                return s->cmd_done && s->st.pid > 0 && !s->st.reaped ? others_alive(s) : 1;
            if (errno == EINTR)
                continue;
            return 0; /* ECHILD: nobody left */
        }
    }
    pidlist kids = {0};
    if (!s->lib_known || list_children(&kids) < 0) {
        /* Cannot tell CMD's orphans from the library's children: wait for
         * CMD alone. */
        free(kids.p);
        if (!s->cmd_done) {
            int st = 0;
            pid_t p;
            do
                p = waitpid(s->cmd, &st, WNOHANG);
            while (p < 0 && errno == EINTR);
            if (p == s->cmd)
                on_reaped(s, p, st);
        }
        return !s->cmd_done;
    }
    int left = 0;
    for (size_t i = 0; i < kids.n; i++) {
        if (pidlist_has(&s->lib, kids.p[i]) || (kids.p[i] == s->st.pid && s->st.reaped))
            continue;
        int st = 0;
        pid_t p;
        do
            p = waitpid(kids.p[i], &st, WNOHANG);
        while (p < 0 && errno == EINTR);
        if (p == kids.p[i])
            on_reaped(s, p, st);
        else if (p == 0 && kids.p[i] != s->st.pid)
            left = 1;
    }
    free(kids.p);
    if (!s->cmd_done) /* CMD may not show in a listing taken as it exits */
        left = 1;
    return left;
}

static int is_stop_signal(int sig)
{
    return sig == SIGINT || sig == SIGQUIT || sig == SIGTERM || sig == SIGHUP;
}

/* The signalfd that receives the caught signals, and the close-on-exec
 * pipe an exec failure comes back through; -1 with msg on failure. */
static int open_channels(const cli_signals *sig, int *sfd, int ex[2], char *msg, size_t msg_len)
{
    *sfd = signalfd(-1, &sig->caught, SFD_CLOEXEC | SFD_NONBLOCK);
    if (*sfd < 0) {
        snprintf(msg, msg_len, "cannot create a signalfd: %s", strerror(errno));
        return -1;
    }
    if (pipe2(ex, O_CLOEXEC) != 0) {
        snprintf(msg, msg_len, "cannot create a pipe: %s", strerror(errno));
        close(*sfd);
        return -1;
    }
    return 0;
}

/* In the vfork'ed child, on our memory: CMD's signal state back as it
 * was, then exec.  Async-signal-safe calls only, nothing written but its
 * own frame and errno (ign was prepared before vfork); never returns, an
 * exec failure goes to ex_wr as errno. */
static void exec_cmd(char **argv, char *const *envp, const cli_signals *sig,
                     const struct sigaction *ign, int ex_wr)
{
    if (sig->chld_was_ignored)
        sigaction(SIGCHLD, ign, NULL);
    sigprocmask(SIG_SETMASK, &sig->orig_mask, NULL);
    for (int fd = 0; fd < 3; fd++)
        if (sig->std_closed[fd])
            close(fd); /* as the user gave them: closed */
    if (envp)
        execvpe(argv[0], argv, envp); /* built before fork: nothing allocated here */
    else
        execvp(argv[0], argv);
    int e = errno;
    ssize_t w = write(ex_wr, &e, sizeof e);
    (void)w;
    _exit(e == ENOENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_NOT_EXEC);
}

/* Reads every pending signal: the first stop signal goes into res; while
 * CMD runs a signal is forwarded to it (SIGINT and SIGQUIT only when a
 * process sent them), after it a stop signal sets *stop_waiting.  Returns
 * whether SIGCHLD was among them. */
static int take_signals(sup *s, int sfd, cli_run_result *res, int *stop_waiting)
{
    int chld = 0;
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sg = (int)si.ssi_signo;
        if (sg == SIGCHLD) {
            chld = 1;
            continue;
        }
        if (sg == SIGCONT) { /* ours, not CMD's: never forwarded */
            uint64_t now = now_ns(), probe = STOP_PROBE_MS * 1000000ull;
            uint64_t delay = run_delay_ns(), gap = now - s->awake_ns;
            /* Waiting for a CPU (a loaded machine) is not being stopped. */
            uint64_t starved = delay > s->awake_delay_ns ? delay - s->awake_delay_ns : 0;
            gap = gap > starved ? gap - starved : 0;
            s->continued = 1;
            /* More than a poll's sleep (its timer's slack and the loop's own
             * work allowed for): the profiler was stopped. */
            if (gap > probe + probe / 10)
                s->stopped_ns += gap - probe / 2;
            mark_awake(s);
            continue;
        }
        if (is_stop_signal(sg) && !res->interrupted_by)
            res->interrupted_by = sg;
        if (s->cmd_done) {
            if (is_stop_signal(sg))
                *stop_waiting = 1;
            continue;
        }
        int from_process =
            si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE || si.ssi_code == SI_TKILL;
        if ((sg == SIGINT || sg == SIGQUIT) && !from_process)
            continue;     /* the terminal sent CMD its own */
        kill(s->cmd, sg); /* not yet reaped: the pid is still CMD's */
    }
    return chld;
}

/* poll()'s timeout: STOP_PROBE_MS, or less until the live line's next tick. */
static int tick_timeout(cli_tick_fn tick, uint64_t next_tick)
{
    if (!tick)
        return STOP_PROBE_MS;
    uint64_t now = now_ns();
    int ms = next_tick > now ? (int)((next_tick - now + 999999) / 1000000) : 0;
    return ms < STOP_PROBE_MS ? ms : STOP_PROBE_MS;
}

/* Calls tick when its second has come; the next one is a whole second on. */
static void run_tick(cli_tick_fn tick, void *tick_user, uint64_t *next_tick)
{
    if (!tick)
        return;
    uint64_t now = now_ns();
    if (now >= *next_tick) {
        tick(tick_user);
        while (*next_tick <= now)
            *next_tick += 1000000000ull;
    }
}

/* Waits, on the signalfd alone, until CMD has exited and, with wait_all,
 * every process it left behind too (unless a stop signal ends that wait).
 * Returns whether processes outlived CMD. */
static int supervise(sup *s, int sfd, int wait_all, cli_tick_fn tick, void *tick_user, uint64_t t0,
                     cli_run_result *res)
{
    int left = 1, stop_waiting = 0, outlived = 0;
    uint64_t next_tick = t0 + 1000000000ull;
    for (;;) {
        if (s->cmd_done) {
            if (!wait_all || !left || stop_waiting)
                break;
            outlived = 1; /* CMD is gone, processes it started are not */
        }
        struct pollfd pf = {.fd = sfd, .events = POLLIN};
        int r = poll(&pf, 1, tick_timeout(tick, next_tick));
        if (r < 0 && errno != EINTR) {
            /* Not expected (ENOMEM); do not spin on it. */
            struct timespec nap = {0, 10000000};
            nanosleep(&nap, NULL);
        }
        if (take_signals(s, sfd, res, &stop_waiting))
            left = reap(s);
        run_tick(tick, tick_user, &next_tick);
        mark_awake(s);
    }
    return outlived;
}

/* CMD has exited, so the write end is closed: this read cannot block.
 * 0 when CMD was exec'd. */
static int read_exec_errno(int ex_rd)
{
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(ex_rd, &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof exec_errno)
        exec_errno = 0;
    return exec_errno;
}

/* How CMD ended, its times, and the exit code the profiler passes on. */
static void fill_result(cli_run_result *res, const sup *s, int exec_errno, uint64_t t0,
                        uint64_t t_end, int outlived)
{
    res->wait_status = s->cmd_status;
    res->cmd_s = (double)(s->cmd_end_ns - t0) / 1e9;
    res->descendants_s = outlived ? (double)(t_end - s->cmd_end_ns) / 1e9 : 0.0;
    res->late_s = (double)(s->cmd_seen_ns - s->cmd_end_ns) / 1e9;
    /* A SIGCONT alone (timeout sends one after its SIGTERM) is no stop. */
    res->profiler_stopped = s->continued && s->stopped_ns > 0;
    res->profiler_stopped_s = (double)s->stopped_ns / 1e9;
    if (exec_errno) {
        res->exec_errno = exec_errno;
        res->exit_code = exec_errno == ENOENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_NOT_EXEC;
    } else if (WIFSIGNALED(s->cmd_status)) {
        res->term_signal = WTERMSIG(s->cmd_status);
        res->core_dumped = WCOREDUMP(s->cmd_status) != 0;
        res->exit_code = 128 + res->term_signal;
    } else {
        res->exit_code = WEXITSTATUS(s->cmd_status);
    }
}

int cli_run_child(char **argv, char *const *envp, const cli_signals *sig, int wait_all,
                  int lib_may_fork, cli_tick_fn tick, void *tick_user, cli_run_result *res,
                  char *msg, size_t msg_len)
{
    memset(res, 0, sizeof *res);
    sup s;
    memset(&s, 0, sizeof s);

    int sfd, ex[2];
    if (open_channels(sig, &sfd, ex, msg, msg_len) < 0)
        return -1;
    if (wait_all)
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* best effort */
    /* Only the smi backend has children of its own; listing ours costs a
     * scan of /proc on kernels without /proc/self/task/T/children, so it
     * is done only then. */
    s.lib_may_fork = lib_may_fork;
    s.lib_known = lib_may_fork && list_children(&s.lib) == 0;

    /* Prepared before vfork: the child may only make async-signal-safe
     * calls before exec. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;

    uint64_t t0 = now_ns();
    /* vfork: the child borrows our memory until its exec (or _exit), so
     * no page table is copied and no page faults copy-on-write on either
     * side (a fork of this process cost ~40 faults).  exec_cmd keeps to
     * what that allows: async-signal-safe calls on its own frame, no
     * return; the profiler has no signal handler that could run there
     * (the signals it takes are blocked and read from a signalfd) and the
     * child's signal dispositions are its own copy. */
    pid_t pid = vfork();
    if (pid == 0)
        exec_cmd(argv, envp, sig, &ign, ex[1]);
    if (pid < 0) {
        snprintf(msg, msg_len, "cannot fork: %s", strerror(errno));
        close(sfd);
        close(ex[0]);
        close(ex[1]);
        free(s.lib.p);
        return -1;
    }
    close(ex[1]);
    s.cmd = pid;
    stamp_start(&s.st, pid);
    mark_awake(&s);

    int outlived = supervise(&s, sfd, wait_all, tick, tick_user, t0, res);
    uint64_t t_end = now_ns();
    s.cmd_end_ns = stamp_collect(&s.st, s.cmd_seen_ns);
    int exec_errno = read_exec_errno(ex[0]);
    close(ex[0]);
    close(sfd);
    free(s.lib.p);
    fill_result(res, &s, exec_errno, t0, t_end, outlived);
    return 0;
}
