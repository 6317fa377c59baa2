/*
 * test_cli_clock.c - CMD's time is its own: gpu-profile is stopped
 * (SIGSTOP) while CMD runs and CMD ends while it is stopped; the report
 * gives CMD's time (fork to its exit as the kernel saw it), not the time
 * until the profiler looked again, and says for how long the profiler was
 * stopped (in the note and in profiler_stopped_s, within the 0.1 s probe);
 * an unstopped run says nothing of it.
 *
 * Nothing here depends on how fast the machine is: the test waits for
 * events (the profiler in its supervising loop with CMD and the end-stamp
 * helper running, the profiler stopped, CMD and the helper ended: zombies
 * nobody reaps while the profiler is stopped) and bounds
 * each number by the instants it saw those events at, on the same clock
 * (CLOCK_MONOTONIC), instead of by fixed seconds.
 */
#include "harness.h"
#include "json_mini.h"

#include <ctype.h>
#include <dirent.h>
#include <sched.h>
#include <sys/prctl.h>

#define LIMIT_S 30.0      /* how long an event may take on a loaded machine */
#define AFTER_END_MS 2000 /* the profiler stays stopped this long after CMD ended */

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

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* /proc/PID/stat's state, command name and parent; 0 when it is gone. */
static int proc_stat(pid_t pid, char *state, char *comm, size_t comm_len, long *ppid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = 0;
    if (fgets(line, sizeof line, f)) {
        char *lp = strchr(line, '('), *rp = strrchr(line, ')');
        if (lp && rp && rp > lp && sscanf(rp + 1, " %c %ld", state, ppid) == 2) {
            snprintf(comm, comm_len, "%.*s", (int)(rp - lp - 1), lp + 1);
            ok = 1;
        }
    }
    fclose(f);
    return ok;
}

/* The profiler's children: CMD (named after the test child) and the
 * helper that stamps CMD's end (named after the profiler). */
typedef struct kids {
    int n, zombies;
    pid_t cmd, helper;
    char cmd_state;
} kids;

static void list_kids(pid_t parent, kids *k)
{
    memset(k, 0, sizeof *k);
    const char *base = strrchr(h_child, '/');
    base = base ? base + 1 : h_child;
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atol(e->d_name);
        char state = 0, comm[64];
        long ppid = -1;
        if (!proc_stat(pid, &state, comm, sizeof comm, &ppid) || ppid != (long)parent)
            continue;
        k->n++;
        k->zombies += state == 'Z';
        if (strncmp(comm, base, 15) == 0) { /* the kernel keeps 15 bytes of a name */
            k->cmd = pid;
            k->cmd_state = state;
        } else {
            k->helper = pid;
        }
    }
    closedir(d);
}

static char state_of(pid_t pid)
{
    char state = 0, comm[64];
    long ppid;
    return proc_stat(pid, &state, comm, sizeof comm, &ppid) ? state : 0;
}

/* The profiler is gone, or no more than a zombie: no event will come. */
static int gone(pid_t pid)
{
    char st = state_of(pid);
    return st == 0 || st == 'Z';
}

/* The profiler supervises CMD: CMD runs, the stamp helper is there, and
 * the profiler waits in its loop (asleep in poll: it went there after
 * starting the helper and noting the time).  Stopped before that, the
 * profiler could not tell (the test would see a stop nobody measured). */
static int cond_supervising(const void *arg)
{
    pid_t pid = *(const pid_t *)arg;
    kids k;
    list_kids(pid, &k);
    return gone(pid) || (k.cmd > 0 && k.cmd_state != 'Z' && k.helper > 0 && state_of(pid) == 'S');
}

static int cond_stopped(const void *arg)
{
    pid_t pid = *(const pid_t *)arg;
    return gone(pid) || state_of(pid) == 'T';
}

/* CMD and every other child ended (the stamp helper exits once it has
 * written CMD's end): what the profiler will report is fixed by now. */
static int cond_all_ended(const void *arg)
{
    kids k;
    list_kids(*(const pid_t *)arg, &k);
    return gone(*(const pid_t *)arg) || (k.cmd > 0 && k.zombies == k.n);
}

/* The instants (mono_s) the test saw the events at. */
typedef struct stop_run {
    double spawned; /* before the profiler was spawned */
    double stopped; /* the profiler was seen stopped */
    double ended;   /* CMD and the stamp helper were seen ended */
    double resumed; /* just before SIGCONT */
    double exited;  /* the profiler was reaped */
    int code;       /* its exit code */
} stop_run;

/* Runs argv, stops the profiler once CMD runs, keeps it stopped until
 * CMD has ended and AFTER_END_MS more, resumes it.  0 when CMD was reaped
 * before the stop took hold (the run is over, nothing to see: try again). */
static int run_stopped_at_end(const char *const *argv, const char *err, stop_run *sr)
{
    memset(sr, 0, sizeof *sr);
    sr->spawned = mono_s();
    h_spawn_own_group = 1; /* stopped, it must stay so until our SIGCONT */
    pid_t pid = h_spawn(argv, NULL, NULL, NULL, err);
    h_spawn_own_group = 0;
    CHECK(h_wait_for(cond_supervising, &pid, LIMIT_S) && !gone(pid));
    kill(pid, SIGSTOP);
    CHECK(h_wait_for(cond_stopped, &pid, LIMIT_S) && !gone(pid));
    sr->stopped = mono_s();
    kids k;
    list_kids(pid, &k);
    int as_planned = k.cmd > 0 && !gone(pid);
    if (as_planned) {
        CHECK(h_wait_for(cond_all_ended, &pid, LIMIT_S));
        sr->ended = mono_s();
        h_nap_ms(AFTER_END_MS);
    }
    sr->resumed = mono_s();
    kill(pid, SIGCONT);
    sr->code = h_code(h_wait(pid));
    sr->exited = mono_s();
    return as_planned;
}

static void test_profiler_stopped(void)
{
    char report[512], err[512];
    h_path(report, sizeof report, "report.json");
    h_path(err, sizeof err, "run.err");
    const char *argv[] = {h_cli, "--json", "-o",    report, "--interval", "0.05",
                          "--",  h_child,  "sleep", "1000", "3",          NULL};
    stop_run sr;
    int tries = 0;
    while (!run_stopped_at_end(argv, err, &sr) && ++tries < 5)
        ;
    CHECK(tries < 5);
    CHECK_INT(sr.code, 3);
    jn *doc = read_json(report);
    double took = jn_num(jn_get(doc, "duration_s"));
    double stopped = jn_num(jn_get(doc, "profiler_stopped_s"));
    const char *note = jn_str(jn_get(doc, "note"));
    printf("CMD 1 s, ended %.3f s after the spawn, profiler stopped %.3f s to %.3f s: "
           "duration_s %.3f, profiler_stopped_s %.3f, note: %s\n",
           sr.ended - sr.spawned, sr.stopped - sr.spawned, sr.resumed - sr.spawned, took, stopped,
           note ? note : "(none)");
    /* CMD slept 1 s and had ended when the test saw it so (1e-5: the
     * report's 6 decimals); the profiler reaped it AFTER_END_MS later at
     * the earliest, which must not count. */
    CHECK(took >= 0.95);
    CHECK(took <= sr.ended - sr.spawned + 1e-5);
    CHECK(took < sr.resumed - sr.spawned - (AFTER_END_MS / 1000.0 - 0.1));
    /* Stopped from before the test saw it stopped to after the SIGCONT:
     * at least that, less half the probe; never longer than it lived. */
    CHECK(stopped >= sr.resumed - sr.stopped - 0.05 - 1e-5);
    CHECK(stopped <= sr.exited - sr.spawned);
    CHECK_CONTAINS(note, "gpu-profile was stopped ");
    CHECK_CONTAINS(note, " s during the run (SIGSTOP or SIGTSTP): no samples meanwhile");
    jn_free(doc);

    /* The status line says CMD's time too. */
    const char *argv2[] = {h_cli, "--interval", "0.05", "--", h_child, "sleep", "600", NULL};
    tries = 0;
    while (!run_stopped_at_end(argv2, err, &sr) && ++tries < 5)
        ;
    CHECK(tries < 5);
    CHECK_INT(sr.code, 0);
    char *text = check_read_file(err, NULL);
    const char *line = text ? strstr(text, " exited with status 0 after ") : NULL;
    double after = line ? atof(line + strlen(" exited with status 0 after ")) : -1;
    printf("status line: after %.3f s (CMD ended %.3f s, resumed %.3f s after the spawn)\n", after,
           sr.ended - sr.spawned, sr.resumed - sr.spawned);
    CHECK(after >= 0.55);
    CHECK(after <= sr.ended - sr.spawned + 0.0005); /* the line's 3 decimals */
    CHECK_CONTAINS(text, "gpu-profile: gpu-profile was stopped ");
    free(text);
}

static void test_not_stopped(void)
{
    char report[512];
    h_path(report, sizeof report, "plain.json");
    const char *argv[] = {h_cli, "--json", "-o", report, "--", h_child, "sleep", "100", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    jn *doc = read_json(report);
    CHECK(jn_is_null(jn_get(doc, "profiler_stopped_s")));
    CHECK(jn_is_null(jn_get(doc, "note")));
    CHECK(jn_num(jn_get(doc, "duration_s")) >= 0.1);
    jn_free(doc);
    h_result_free(&r);
}

/* A SIGCONT with no stop before it (coreutils' timeout sends one after
 * its SIGTERM): no "was stopped 0.0 s" note.  Sent once CMD runs, so that
 * the profiler's loop is the one that reads it. */
static void test_cont_without_stop(void)
{
    char report[512], err[512];
    h_path(report, sizeof report, "cont.json");
    h_path(err, sizeof err, "cont.err");
    const char *argv[] = {h_cli, "--json", "-o",    report, "--interval", "0.05",
                          "--",  h_child,  "sleep", "600",  NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, NULL, err);
    CHECK(h_wait_for(cond_supervising, &pid, LIMIT_S) && !gone(pid));
    kill(pid, SIGCONT);
    CHECK_INT(h_code(h_wait(pid)), 0);
    jn *doc = read_json(report);
    CHECK(jn_is_null(jn_get(doc, "profiler_stopped_s")));
    CHECK(jn_is_null(jn_get(doc, "note")));
    jn_free(doc);
}

/* The kernel says how long a thread waited for a CPU (schedstat's
 * run_delay, its second number): what tells starved from stopped. */
static int have_run_delay(void)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    unsigned long long run = 0, delay = 0;
    int ok = f && fscanf(f, "%llu %llu", &run, &delay) == 2;
    if (f)
        fclose(f);
    return ok;
}

static int pin_to_cpu0(pid_t pid)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    return sched_setaffinity(pid, sizeof set, &set);
}

/* A profiler that waits for a CPU, not stopped, then gets a SIGCONT: no
 * stop to report.  Once in its loop, its main thread goes to SCHED_IDLE
 * on the CPU a busy process holds, so it waits far past the 0.1 s probe
 * for one (whether it did is not asserted: the note must be absent
 * either way). */
static void test_starved_not_stopped(void)
{
    if (!have_run_delay()) {
        printf("skipped: the kernel gives no run_delay (starved counts as stopped there)\n");
        return;
    }
    char report[512], err[512];
    h_path(report, sizeof report, "starved.json");
    h_path(err, sizeof err, "starved.err");
    fflush(stdout);
    fflush(stderr);
    pid_t hog = fork();
    if (hog == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
        pin_to_cpu0(0);
        for (;;)
            ;
    }
    CHECK(hog > 0);
    const char *argv[] = {h_cli, "--json", "-o",    report, "--interval", "0.05",
                          "--",  h_child,  "sleep", "1500", NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, NULL, err);
    CHECK(h_wait_for(cond_supervising, &pid, LIMIT_S) && !gone(pid));
    /* Its loop (the main thread) at SCHED_IDLE on the hog's CPU. */
    struct sched_param sp = {0};
    CHECK_INT(pin_to_cpu0(pid), 0);
    CHECK_INT(sched_setscheduler(pid, SCHED_IDLE, &sp), 0);
    h_nap_ms(700); /* CMD sleeps on: the SIGCONT comes while it runs */
    kill(pid, SIGCONT);
    kill(hog, SIGKILL); /* the CPU free again, it reads the SIGCONT */
    h_wait(hog);
    int code = h_code(h_wait(pid));
    CHECK_INT(code, 0);
    jn *doc = read_json(report);
    const char *note = jn_str(jn_get(doc, "note"));
    printf("starved, SIGCONT: profiler_stopped_s %s, note: %s\n",
           jn_is_null(jn_get(doc, "profiler_stopped_s")) ? "null" : "set", note ? note : "(none)");
    CHECK(jn_is_null(jn_get(doc, "profiler_stopped_s")));
    CHECK(jn_is_null(jn_get(doc, "note")));
    jn_free(doc);
}

int main(void)
{
    h_init();
    h_scenario("device 0\n");
    test_profiler_stopped();
    test_not_stopped();
    test_cont_without_stop();
    test_starved_not_stopped();
    h_cleanup();
    return check_done("test_cli_clock");
}
