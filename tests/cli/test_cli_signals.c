/*
 * test_cli_signals.c - gpu-profile as a parent: CMD killed by a signal
 * (128+N, named in the report), SIGTERM / SIGHUP / SIGINT / SIGQUIT /
 * SIGUSR1 / SIGUSR2 sent to the profiler reach CMD once and the report is
 * still written, processes CMD leaves behind are adopted and waited for
 * (--wait=all; --wait=primary does not wait; a signal ends the wait), also
 * beside the smi backend's own nvidia-smi child, and, on a pseudo-terminal,
 * CMD keeps the terminal and stdin, a ^C typed there reaches CMD exactly
 * once, and the live line shows and is cleared before the report.
 *
 * Nothing here asserts a duration: each step waits for an event (a file,
 * a process going away, text on the terminal), bounded only so that a
 * failure ends the test instead of hanging it.
 */
#include "harness.h"
#include "json_mini.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>

#define LIMIT_S 60.0

static jn *read_json(const char *path)
{
    size_t len = 0;
    char *text = check_read_file(path, &len);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, len, &why) : NULL;
    if (!doc)
        fprintf(stderr, "%s: not JSON (%s)\n", path, why ? why : "cannot read");
    CHECK(doc != NULL);
    free(text);
    return doc;
}

static void test_killed_by_signal(void)
{
    h_scenario("device 0\n");
    const char *argv[] = {h_cli, "--", h_child, "raise", "15", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 143);
    char line[512];
    h_line(r.err, h_count_lines(r.err) - 1, line, sizeof line);
    CHECK_PREFIX(line, "gpu-profile: ");
    CHECK_CONTAINS(line, " raise 15 was killed by SIGTERM (signal 15) after ");
    CHECK_CONTAINS(line, " s: exit status 143");
    h_result_free(&r);

    char report[512];
    h_path(report, sizeof report, "killed.json");
    const char *argv2[] = {h_cli, "--json", "-o", report, "--", h_child, "raise", "9", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 137);
    jn *doc = read_json(report);
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 137);
    CHECK_STR(jn_str(jn_get(doc, "signal")), "SIGKILL");
    CHECK(jn_get(doc, "core_dumped") && !jn_get(doc, "core_dumped")->b);
    CHECK(jn_is_null(jn_get(doc, "interrupted_by")));
    jn_free(doc);
    h_result_free(&r);
}

/* Parses cli_child's sigstate output: ignored / blocked bits per signal. */
static void sigstate(const char *text, int sig, int *ignored, int *blocked)
{
    *ignored = *blocked = -1;
    for (const char *p = text; p && *p;) {
        int s, i, b;
        if (sscanf(p, "%d %d %d", &s, &i, &b) == 3 && s == sig) {
            *ignored = i;
            *blocked = b;
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
}

static void test_cmd_signal_state(void)
{
    h_scenario("device 0\n");
    static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1,
                               SIGUSR2, SIGPIPE, SIGTERM, SIGCHLD};
    /* The profiler blocks all of these for itself; CMD gets none of that,
     * and none of the profiler's descriptors. */
    const char *argv[] = {h_cli, "--", h_child, "sigstate", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int ign, blk;
        sigstate(r.out, sigs[i], &ign, &blk);
        CHECK_INT(ign, 0);
        CHECK_INT(blk, 0);
    }
    /* As many descriptors as when run directly from here. */
    const char *direct[] = {h_child, "sigstate", NULL};
    h_result d;
    h_run(direct, NULL, NULL, 0, &d);
    char want[32], got[32];
    CHECK_STR(h_line(r.out, h_count_lines(r.out) - 1, got, sizeof got),
              h_line(d.out, h_count_lines(d.out) - 1, want, sizeof want));
    CHECK_PREFIX(got, "fds ");
    h_result_free(&d);
    h_result_free(&r);

    /* What gpu-profile was started with, CMD gets: here SIGHUP ignored (as
     * under nohup), SIGCHLD ignored, SIGUSR1 blocked. */
    sigaddset(&h_spawn_ignore, SIGHUP);
    sigaddset(&h_spawn_ignore, SIGCHLD);
    sigaddset(&h_spawn_block, SIGUSR1);
    h_run(argv, NULL, NULL, 0, &r);
    sigemptyset(&h_spawn_ignore);
    sigemptyset(&h_spawn_block);
    CHECK_INT(r.code, 0); /* an ignored SIGCHLD does not lose CMD's status */
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int ign, blk;
        sigstate(r.out, sigs[i], &ign, &blk);
        CHECK_INT(ign, sigs[i] == SIGHUP || sigs[i] == SIGCHLD);
        CHECK_INT(blk, sigs[i] == SIGUSR1);
    }
    h_result_free(&r);
    const char *argv2[] = {h_cli, "--", h_child, "exit", "9", NULL};
    sigaddset(&h_spawn_ignore, SIGCHLD);
    h_run(argv2, NULL, NULL, 0, &r);
    sigemptyset(&h_spawn_ignore);
    CHECK_INT(r.code, 9);
    h_result_free(&r);
}

static void test_forwarding(void)
{
    h_scenario("device 0\n");
    static const struct {
        int sig;
        const char *name;
        int interrupts; /* recorded as interrupted_by */
    } cases[] = {
        {SIGTERM, "SIGTERM", 1}, {SIGHUP, "SIGHUP", 1},   {SIGINT, "SIGINT", 1},
        {SIGQUIT, "SIGQUIT", 1}, {SIGUSR1, "SIGUSR1", 0}, {SIGUSR2, "SIGUSR2", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char ready[512], report[512], out[512], err[512], name[64];
        snprintf(name, sizeof name, "ready-%d", cases[k].sig);
        h_path(ready, sizeof ready, name);
        h_path(report, sizeof report, "forward.json");
        h_path(out, sizeof out, "forward.out");
        h_path(err, sizeof err, "forward.err");
        const char *argv[] = {h_cli, "--json", "-o",          report, "--interval", "0.01",
                              "--",  h_child,  "wait-signal", ready,  "100",        NULL};
        pid_t pid = h_spawn(argv, NULL, NULL, out, err);
        CHECK(h_wait_for(h_cond_exists, ready, LIMIT_S));
        kill(pid, cases[k].sig); /* from a process: si_code SI_USER */
        int code = h_code(h_wait(pid));
        CHECK_INT(code, 100 + cases[k].sig);
        char *text = check_read_file(out, NULL);
        char want[32];
        snprintf(want, sizeof want, "%d 1\n", cases[k].sig);
        CHECK_STR(text, want); /* delivered once */
        free(text);
        jn *doc = read_json(report);
        CHECK_INT(jn_int(jn_get(doc, "exit_status")), 100 + cases[k].sig);
        CHECK(jn_is_null(jn_get(doc, "signal")));
        if (cases[k].interrupts)
            CHECK_STR(jn_str(jn_get(doc, "interrupted_by")), cases[k].name);
        else
            CHECK(jn_is_null(jn_get(doc, "interrupted_by")));
        /* The run was interrupted, the report is whole. */
        CHECK_INT(jn_get(doc, "devices") ? jn_get(doc, "devices")->n : 0, 1);
        CHECK_STR(jn_str(jn_get(jn_at(jn_get(doc, "devices"), 0), "backend")), "nvml");
        jn_free(doc);
        remove(ready);
    }
}

/* ------------------------------------------------ left-behind processes */

static char pids_path[512];

static int cond_cmd_listed(const void *unused)
{
    (void)unused;
    char *text = check_read_file(pids_path, NULL);
    int ok = text && strstr(text, "cmd ");
    free(text);
    return ok;
}

static int cond_gone(const void *pid)
{
    return kill(*(const pid_t *)pid, 0) != 0 && errno == ESRCH;
}

static long parent_of(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long ppid = -1;
    if (fgets(line, sizeof line, f)) {
        char *rp = strrchr(line, ')');
        char state;
        if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2)
            ppid = -1;
    }
    fclose(f);
    return ppid;
}

enum gc_mode { GC_WAIT_ALL, GC_WAIT_PRIMARY, GC_SIGNAL_ENDS_WAIT };

static void grandchildren_case(enum gc_mode mode, const char *const *env, const char *backend)
{
    char report[512], out[512], err[512], fd_text[16];
    h_path(pids_path, sizeof pids_path, "pids");
    h_path(report, sizeof report, "gc.json");
    h_path(out, sizeof out, "gc.out");
    h_path(err, sizeof err, "gc.err");
    remove(pids_path);
    int rel[2];
    if (pipe(rel) != 0) {
        perror("pipe");
        exit(2);
    }
    /* Only the read end goes down to the grandchildren; the test alone
     * holds the write end, and closing it releases them. */
    fcntl(rel[1], F_SETFD, FD_CLOEXEC);
    snprintf(fd_text, sizeof fd_text, "%d", rel[0]);
    const char *argv[] = {h_cli,
                          "--json",
                          "-o",
                          report,
                          "--backend",
                          backend,
                          "--wait",
                          mode == GC_WAIT_PRIMARY ? "primary" : "all",
                          "--",
                          h_child,
                          "grandchildren",
                          "2",
                          pids_path,
                          fd_text,
                          "7",
                          NULL};
    pid_t pid = h_spawn(argv, env, NULL, out, err);
    close(rel[0]);
    CHECK(h_wait_for(cond_cmd_listed, NULL, LIMIT_S));
    char *text = check_read_file(pids_path, NULL);
    pid_t gc[2] = {0, 0}, cmd = 0;
    int ngc = 0;
    for (char *p = text; p && *p;) {
        long v;
        if (sscanf(p, "gc %ld", &v) == 1 && ngc < 2)
            gc[ngc++] = (pid_t)v;
        else if (sscanf(p, "cmd %ld", &v) == 1)
            cmd = (pid_t)v;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    free(text);
    CHECK_INT(ngc, 2);
    CHECK(cmd > 0);

    int st = 0;
    if (mode == GC_WAIT_PRIMARY) {
        /* The profiler ends with CMD; what CMD left behind still runs. */
        CHECK_INT(h_code(h_wait(pid)), 7);
        for (int i = 0; i < ngc; i++)
            CHECK_INT(kill(gc[i], 0), 0);
        close(rel[1]);
    } else {
        /* CMD has exited and was reaped by the profiler ... */
        CHECK(cmd > 0 && h_wait_for(cond_gone, &cmd, LIMIT_S));
        /* ... which still runs, because the orphans it adopted do. */
        CHECK_INT(waitpid(pid, &st, WNOHANG), 0);
        for (int i = 0; i < ngc; i++)
            CHECK_INT(parent_of(gc[i]), pid);
        if (mode == GC_SIGNAL_ENDS_WAIT) {
            kill(pid, SIGTERM);
            CHECK_INT(h_code(h_wait(pid)), 7);
            for (int i = 0; i < ngc; i++)
                CHECK_INT(kill(gc[i], 0), 0);
            close(rel[1]);
        } else {
            close(rel[1]);
            CHECK_INT(h_code(h_wait(pid)), 7);
            /* Reaped by the profiler before it exited: no zombie left. */
            for (int i = 0; i < ngc; i++)
                CHECK(kill(gc[i], 0) != 0 && errno == ESRCH);
        }
    }
    jn *doc = read_json(report);
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 7);
    CHECK_STR(jn_str(jn_get(doc, "backend")), backend);
    double after = jn_num(jn_get(doc, "descendants_s"));
    if (mode == GC_WAIT_PRIMARY) {
        CHECK_NEAR(after, 0, 0);
    } else {
        CHECK(after > 0);
    }
    if (mode == GC_SIGNAL_ENDS_WAIT)
        CHECK_STR(jn_str(jn_get(doc, "interrupted_by")), "SIGTERM");
    else
        CHECK(jn_is_null(jn_get(doc, "interrupted_by")));
    CHECK_STR(jn_str(jn_get(jn_at(jn_get(doc, "devices"), 0), "device_status")), "ok");
    jn_free(doc);
}

static void test_grandchildren(void)
{
    h_scenario("device 0\n");
    grandchildren_case(GC_WAIT_ALL, NULL, "nvml");
    grandchildren_case(GC_WAIT_PRIMARY, NULL, "nvml");
    grandchildren_case(GC_SIGNAL_ENDS_WAIT, NULL, "nvml");

    /* The smi backend's nvidia-smi is also a child of the profiler: it must
     * be neither reaped nor waited for as one of CMD's. */
    char capture[1024], env_caps[1100];
    snprintf(capture, sizeof capture,
             "%s/fixtures/nvidia-smi/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
             check_env("GP_TEST_SOURCE_DIR"));
    snprintf(env_caps, sizeof env_caps, "FAKE_SMI_CAPTURES=%s", capture);
    const char *env[] = {env_caps, NULL};
    grandchildren_case(GC_WAIT_ALL, env, "smi");

    const char *argv[] = {h_cli, "--backend", "smi", "--", h_child, "exit", "3", NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    CHECK_CONTAINS(r.err, "[smi]");
    h_result_free(&r);
}

/* ---------------------------------------------------- a real terminal */

typedef struct term {
    int master;
    pid_t pid;
    char *text; /* everything read from the terminal so far */
    size_t len;
} term;

/* 0, or -1 when this machine has no pseudo-terminals (a bare container):
 * the terminal tests then say so and are left out. */
static int term_start(term *t, const char *const *argv)
{
    memset(t, 0, sizeof *t);
    t->master = posix_openpt(O_RDWR | O_NOCTTY);
    if (t->master < 0 || grantpt(t->master) != 0 || unlockpt(t->master) != 0) {
        fprintf(stderr, "SKIP terminal tests: no pseudo-terminal: %s\n", strerror(errno));
        if (t->master >= 0)
            close(t->master);
        return -1;
    }
    char slave[128];
    snprintf(slave, sizeof slave, "%s", ptsname(t->master));
    struct winsize ws = {.ws_row = 24, .ws_col = 200};
    ioctl(t->master, TIOCSWINSZ, &ws);
    fflush(stdout);
    fflush(stderr);
    t->pid = fork();
    if (t->pid == 0) {
        /* A new session whose controlling terminal is the pty: the
         * profiler is its foreground process group, as under a shell. */
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0 || ioctl(s, TIOCSCTTY, 0) != 0)
            _exit(94);
        dup2(s, 0);
        dup2(s, 1);
        dup2(s, 2);
        if (s > 2)
            close(s);
        close(t->master);
        h_child_signals();
        execv(argv[0], (char *const *)argv);
        _exit(93);
    }
    t->text = calloc(1, 1);
    return 0;
}

/* Reads until `needle` shows up (NULL: until the terminal closes).
 * Returns whether it did. */
static int term_read_until(term *t, const char *needle)
{
    for (long waited = 0; waited < (long)(LIMIT_S * 1000);) {
        if (needle && strstr(t->text, needle))
            return 1;
        struct pollfd pf = {.fd = t->master, .events = POLLIN};
        int r = poll(&pf, 1, 100);
        if (r == 0) {
            waited += 100;
            continue;
        }
        char buf[4096];
        ssize_t n = read(t->master, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) /* EIO: every slave descriptor is closed */
            return needle ? strstr(t->text, needle) != NULL : 1;
        char *p = realloc(t->text, t->len + (size_t)n + 1);
        if (!p)
            exit(2);
        t->text = p;
        memcpy(t->text + t->len, buf, (size_t)n);
        t->len += (size_t)n;
        /* The terminal may show NULs; keep the text searchable. */
        for (size_t i = t->len - (size_t)n; i < t->len; i++)
            if (t->text[i] == '\0')
                t->text[i] = '@';
        t->text[t->len] = '\0';
    }
    return 0;
}

static int term_finish(term *t)
{
    term_read_until(t, NULL);
    close(t->master);
    return h_code(h_wait(t->pid));
}

static void test_terminal_interrupt(void)
{
    h_scenario("device 0\n");
    char ready[512], report[512];
    h_path(ready, sizeof ready, "tty-ready");
    h_path(report, sizeof report, "tty.json");
    remove(ready);
    /* CMD keeps counting for 300 ms after the first SIGINT: a copy
     * forwarded by the profiler would arrive within that time. */
    const char *argv[] = {h_cli, "--json", "-o",          report, "--interval", "0.01",
                          "--",  h_child,  "wait-signal", ready,  "300",        NULL};
    term t;
    if (term_start(&t, argv) < 0)
        return;
    CHECK(h_wait_for(h_cond_exists, ready, LIMIT_S));
    CHECK_INT(write(t.master, "\x03", 1), 1); /* ^C: SIGINT to the foreground group */
    int code = term_finish(&t);
    CHECK_INT(code, 100 + SIGINT);
    CHECK_CONTAINS(t.text, "2 1\r\n");
    CHECK(strstr(t.text, "2 2") == NULL);
    jn *doc = read_json(report);
    CHECK_STR(jn_str(jn_get(doc, "interrupted_by")), "SIGINT");
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 100 + SIGINT);
    jn_free(doc);
    free(t.text);
}

static void test_terminal_owner_and_live_line(void)
{
    h_scenario("device 0\n");
    const char *argv[] = {h_cli, "--interval", "0.01", "--", h_child, "tty", NULL};
    term t;
    if (term_start(&t, argv) < 0)
        return;
    /* CMD's stdin is the terminal and its process group is the
     * terminal's foreground group. */
    CHECK(term_read_until(&t, "stdin-tty 1 fg 1"));
    /* The live line, refreshed about once a second. */
    CHECK(term_read_until(&t, "\rgpu-profile 0:0"));
    CHECK(term_read_until(&t, " | GPU0 42% 1.0/80G 75W\x1b[K"));
    CHECK_INT(write(t.master, "go\n", 3), 3); /* the line CMD reads from stdin */
    int code = term_finish(&t);
    CHECK_INT(code, 0);
    /* Cleared before the report. */
    CHECK_CONTAINS(t.text, "\r\x1b[KGPU 0  Fake NVIDIA GPU");
    CHECK_CONTAINS(t.text, "exited with status 0 after");
    free(t.text);

    /* --no-live: no line, however long CMD runs (here more than a refresh). */
    const char *argv2[] = {h_cli, "--no-live", "--interval", "0.01", "--", h_child, "tty", NULL};
    if (term_start(&t, argv2) < 0)
        return;
    CHECK(term_read_until(&t, "stdin-tty 1 fg 1"));
    h_nap_ms(1500);
    CHECK_INT(write(t.master, "go\n", 3), 3);
    code = term_finish(&t);
    CHECK_INT(code, 0);
    CHECK(strstr(t.text, "gpu-profile 0:") == NULL);
    CHECK(strstr(t.text, "\x1b[K") == NULL);
    CHECK_CONTAINS(t.text, "GPU 0  Fake NVIDIA GPU");
    free(t.text);

    /* A GPU lost mid-run: the live line says so instead of showing its
     * last values as if current. */
    h_scenario("device 0\ndevice 1\nerror 1 lost_after 3\n");
    if (term_start(&t, argv) < 0)
        return;
    CHECK(term_read_until(&t, "stdin-tty 1 fg 1"));
    CHECK(term_read_until(&t, " | GPU0 42% 1.0/80G 75W | GPU1 lost\x1b[K"));
    CHECK_INT(write(t.master, "go\n", 3), 3);
    CHECK_INT(term_finish(&t), 0);
    free(t.text);
}

int main(void)
{
    h_init();
    test_killed_by_signal();
    test_cmd_signal_state();
    test_forwarding();
    test_grandchildren();
    test_terminal_interrupt();
    test_terminal_owner_and_live_line();
    h_cleanup();
    return check_done("test_cli_signals");
}
