/*
 * main.c - `gpu-profile [OPTIONS] -- CMD [ARGS...]` and `gpu-profile devices`.
 *
 * Runs CMD under a monitor and reports when it ends: to stderr (or -o
 * FILE), never to stdout, so CMD's stdout is byte-for-byte what it would be
 * without the profiler.  The exit status is CMD's own (128+N when signal N
 * killed it; 127 / 126 when CMD is not found / not executable) or 125 when
 * the profiler itself cannot start, and then CMD is not run.
 *
 * Devices: --device, else CUDA_VISIBLE_DEVICES (CUDA's rules, visible.c),
 * else every device the backend sees.  Without --strict, anything that
 * keeps sampling from starting (no backend, no visible device, a device
 * that does not exist) becomes one note line and CMD runs unsampled; with
 * --strict it is an error.
 *
 * --engine above Monitor (Trace, ...): CMD gets the CUPTI plugin through
 * CUDA_INJECTION64_PATH in its own environment, every CUDA process writes
 * a session into the log directory (--log-dir, else a private temporary
 * one removed after the report), and the report sums those sessions up
 * (trace.c).  A plugin that cannot be found is a warning: the run goes on
 * with device metrics only.  docs/cli.md has the whole contract.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOTE_MAX 2048

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void note_add(char *note, const char *text)
{
    size_t used = strlen(note);
    if (text[0] && used + 3 < NOTE_MAX)
        snprintf(note + used, NOTE_MAX - used, "%s%s", used ? "; " : "", text);
}

/* The library's "no backend" message, without the words that address a
 * library caller ("use backend none"): the note shows only the reasons. */
static const char *backend_reasons(const char *msg, char *buf, size_t len)
{
    static const char prefix[] = "no GPU backend could be opened (tried nvml, smi): ";
    static const char suffix[] = "; or use backend none for a dry run";
    if (strncmp(msg, prefix, sizeof prefix - 1) == 0)
        msg += sizeof prefix - 1;
    snprintf(buf, len, "%s", msg);
    size_t n = strlen(buf), k = sizeof suffix - 1;
    if (n > k && strcmp(buf + n - k, suffix) == 0)
        buf[n - k] = '\0';
    return buf;
}

static int create_none(const cli_opts *o, gp_monitor **mon)
{
    gp_options g = o->gp;
    g.backend = GP_BACKEND_NONE;
    g.device = 0;
    g.devices = NULL;
    g.n_devices = 0;
    gp_error err;
    if (gp_monitor_create(&g, mon, &err) != GP_OK) {
        cli_say("%s", err.message);
        return -1;
    }
    return 0;
}

/* Sampling cannot start for `reason`: an error with --strict (returns -1),
 * otherwise a note and an unsampled run. */
static int cannot_sample(const cli_opts *o, gp_status st, const char *reason, gp_monitor **mon,
                         char *note)
{
    if (o->gp.strict) {
        cli_say("%s", reason);
        cli_say("--strict: the command was not run (--no-strict runs it without sampling)");
        return -1;
    }
    char buf[NOTE_MAX], why[NOTE_MAX], flags[NOTE_MAX];
    /* The note is the command's words too: flags, not library fields. */
    if (st == GP_ERR_DEVICE_NOT_FOUND) {
        cli_flag_words(reason, flags, sizeof flags);
        snprintf(buf, sizeof buf, "nothing sampled (%s)", flags);
    } else {
        cli_flag_words(backend_reasons(reason, why, sizeof why), flags, sizeof flags);
        snprintf(buf, sizeof buf, "no GPU backend, nothing sampled (%s)", flags);
    }
    note_add(note, buf);
    return create_none(o, mon);
}

/* --device names a device the backend does not have, while the backend
 * sees some: a mistake to fix, not a machine without a GPU, so CMD is not
 * run (-1: exit 125) and the devices it sees are listed.  With no
 * device seen at all it is the usual "nothing to sample". */
static int wrong_device(const cli_opts *o, const gp_options *g, gp_status st, const char *why,
                        gp_monitor **mon, char *note)
{
    gp_options all = *g;
    all.device = GP_ALL_DEVICES;
    all.devices = NULL;
    all.n_devices = 0;
    gp_device_info *devs = NULL;
    size_t n = 0;
    const char *used = NULL;
    gp_error err;
    int listed = gp_list_devices(&all, &devs, &n, NULL, 0, &used, &err) == GP_OK;
    if (!listed || n == 0) {
        gp_devices_free(devs);
        char buf[NOTE_MAX];
        if (listed) /* names the --device entry the backend's words leave out */
            snprintf(buf, sizeof buf, "--device %s: %s sees no GPU", o->device_spec,
                     used ? used : "the backend");
        else
            snprintf(buf, sizeof buf, "--device: %s", why);
        return cannot_sample(o, st, buf, mon, note);
    }
    fl_buf b = {0};
    for (size_t i = 0; i < n && i < 16; i++)
        fl_buf_printf(&b, "%s%u %s (%s)", i ? ", " : "", devs[i].index, devs[i].name, devs[i].uuid);
    if (n > 16)
        fl_buf_printf(&b, ", and %zu more", n - 16);
    cli_say("--device: %s; %s", why, o->cmd ? "the command was not run" : "nothing was watched");
    cli_say("the devices %s sees: %s (gpu-profile devices lists them)", used ? used : "the backend",
            b.p && !b.oom ? b.p : "?");
    fl_buf_free(&b);
    gp_devices_free(devs);
    return -1;
}

/* Creates the monitor for the devices CMD can see.  -1: exit 125. */
static int setup_monitor(const cli_opts *o, gp_monitor **mon, char *note)
{
    *mon = NULL;
    if (o->gp.backend == GP_BACKEND_NONE)
        return create_none(o, mon);

    gp_options g = o->gp;
    g.strict = 1; /* the fallback is ours, with our note */
    const char *spec = o->device_spec;
    enum cli_list_rule rule = CLI_LIST_STRICT;
    if (!spec) {
        spec = getenv("CUDA_VISIBLE_DEVICES");
        rule = CLI_LIST_CUDA;
    }
    unsigned list[CLI_MAX_DEVICES];
    size_t n = 0;
    char msg[NOTE_MAX];
    gp_error err;
    if (!spec || (rule == CLI_LIST_STRICT && strcmp(spec, "all") == 0)) {
        g.device = GP_ALL_DEVICES;
    } else if (rule == CLI_LIST_STRICT &&
               cli_list_indices_only(spec, list, CLI_MAX_DEVICES, &n, msg, sizeof msg) == 1) {
        g.devices = list;
        g.n_devices = n;
    } else {
        /* UUIDs or CUDA's rules: resolved against the backend's list. */
        gp_device_info *devs = NULL;
        size_t count = 0;
        const char *used = NULL;
        if (gp_list_devices(&g, &devs, &count, NULL, 0, &used, &err) != GP_OK)
            return cannot_sample(o, err.status, err.message, mon, note);
        int rc =
            cli_list_resolve(spec, rule, devs, count, list, CLI_MAX_DEVICES, &n, msg, sizeof msg);
        gp_devices_free(devs);
        if (rc < 0)
            return wrong_device(o, &g, GP_ERR_DEVICE_NOT_FOUND, msg, mon, note);
        if (n == 0)
            return cannot_sample(o, GP_ERR_DEVICE_NOT_FOUND, msg, mon, note);
        note_add(note, msg);
        /* Open the backend that answered, not auto's first choice again. */
        if (used)
            gp_backend_parse(used, &g.backend, NULL);
        g.devices = list;
        g.n_devices = n;
    }
    if (gp_monitor_create(&g, mon, &err) != GP_OK) {
        if (err.status == GP_ERR_DEVICE_NOT_FOUND && o->device_spec)
            return wrong_device(o, &g, err.status, err.message, mon, note);
        return cannot_sample(o, err.status, err.message, mon, note);
    }
    return 0;
}

/* ------------------------------------------------------------ live line */

typedef struct live {
    gp_monitor *mon;
    uint64_t t0;
    int shown; /* a line is on the terminal now */
} live;

static int in_foreground(void)
{
    /* A background job writing to the terminal would be stopped (TOSTOP)
     * or scribble over the foreground program. */
    return tcgetpgrp(STDERR_FILENO) == getpgrp();
}

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void live_tick(void *user)
{
    live *l = user;
    if (!in_foreground())
        return;
    size_t cols = 80;
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        cols = ws.ws_col;
    char line[1024];
    line[0] = '\r';
    cli_live_format(l->mon, (double)(mono_ns() - l->t0) / 1e9, line + 1, sizeof line - 8);
    /* One row only: a wrapped line could not be taken back with \r. */
    size_t len = strlen(line);
    if (len > cols)
        len = cols;
    memcpy(line + len, "\x1b[K", 4);
    write_all(STDERR_FILENO, line, len + 3);
    l->shown = 1;
}

static void live_clear(live *l)
{
    if (l->shown && in_foreground())
        write_all(STDERR_FILENO, "\r\x1b[K", 4);
    l->shown = 0;
}

/* ---------------------------------------------------------------- main */

static void exec_failed(const cli_opts *o, int e)
{
    const char *cmd = o->cmd[0];
    const char *sub = e == ENOENT && o->cmd_first ? cli_sub_nearest(cmd) : NULL;
    if (sub && !strchr(cmd, '/'))
        cli_say("cannot run '%s': %s (not found in PATH); did you mean '%s'? (see gpu-profile "
                "--help)",
                cmd, strerror(e), sub);
    else if (e == ENOENT && !strchr(cmd, '/'))
        cli_say("cannot run '%s': %s (not found in PATH)", cmd, strerror(e));
    else
        cli_say("cannot run '%s': %s", cmd, strerror(e));
}

/* "-" is stdout (CMD's too: the lines interleave with its own). */
static int is_stdout(const char *path)
{
    return strcmp(path, "-") == 0;
}

static FILE *open_output(const char *opt, const char *path)
{
    if (is_stdout(path))
        return stdout;
    FILE *f = fopen(path, "we"); /* close-on-exec: CMD must not inherit it */
    if (!f)
        cli_say("%s: cannot create '%s': %s", opt, path, strerror(errno));
    return f;
}

/* Closes an output file, and says once why it could not be written: from
 * the write that failed (write_errno, when one did) or from the close. */
static int close_output(FILE *f, const char *what, const char *path, int write_errno)
{
    if (!f)
        return 0;
    errno = 0;
    int bad = write_errno != 0 || ferror(f) != 0;
    int e = write_errno;
    if ((f == stdout ? fflush(f) : fclose(f)) != 0) {
        bad = 1;
        if (!e)
            e = errno;
    }
    if (bad && f == stdout)
        cli_say("cannot write the %s to stdout: %s", what, strerror(e ? e : EIO));
    else if (bad)
        cli_say("cannot write the %s to '%s': %s", what, path, strerror(e ? e : EIO));
    return bad ? -1 : 0;
}

/* What the profiler's own stops did to the run, in the note. */
static void note_stopped(const cli_run_result *res, char *note)
{
    char buf[512];
    if (res->profiler_stopped) {
        snprintf(buf, sizeof buf,
                 "gpu-profile was stopped %.1f s during the run (SIGSTOP or SIGTSTP): no samples "
                 "meanwhile; the command's time, %.3f s, is its own (fork to its exit)",
                 res->profiler_stopped_s, res->cmd_s);
        note_add(note, buf);
    } else if (res->late_s >= CLI_LATE_NOTE_S) {
        snprintf(buf, sizeof buf,
                 "gpu-profile saw the command end %.1f s late (it was not scheduled meanwhile): "
                 "the command's time, %.3f s, is its own (fork to its exit)",
                 res->late_s, res->cmd_s);
        note_add(note, buf);
    }
}

/* --rotate-size / --rotate-interval / --max-disk for the session, ours
 * (--log-dir) and CMD's (--engine): both read the environment at init. */
static int roll_env(const cli_opts *o)
{
    char ms[32];
    double v = o->rotate_interval_s * 1000.0 + 0.5;
    snprintf(ms, sizeof ms, "%d", v >= 2147483647.0 ? 2147483647 : (int)v);
    if ((o->rotate_size && setenv("GPUFL_LOG_ROTATE_BYTES", o->rotate_size, 1) != 0) ||
        (o->rotate_interval_s > 0 && setenv("GPUFL_LOG_ROTATE_AFTER_MS", ms, 1) != 0) ||
        (o->max_disk && setenv("GPUFL_MAX_DISK", o->max_disk, 1) != 0)) {
        cli_say("out of memory");
        return -1;
    }
    return 0;
}

/* --log-dir: a Monitor session of the run, fed by the run's own monitor
 * (one sampler for the report and the log), which this starts.  Returns 0
 * with the monitor started, 1 when GPUFL_DISABLED switched the log off
 * (monitor not started), -1 after a message. */
static int start_session(const cli_opts *o, gp_monitor *mon, gp_error *mon_err)
{
    gpufl_init_options fo;
    gpufl_init_options_init(&fo);
    /* Without CMD (--duration, --pid) the app is gpu-profile's own. */
    const char *cmd0 = o->cmd ? o->cmd[0] : "gpu-profile";
    const char *base = strrchr(cmd0, '/');
    fo.app_name = o->app ? o->app : base ? base + 1 : cmd0;
    fo.log_path = o->log_dir;
    fo.continuous_system_sampling = true;
    long ms = (long)(o->gp.interval_s * 1000.0 + 0.5);
    fo.system_sample_rate_ms = ms < 1 ? 1 : (int)ms;
    if (cli_timed_window(o)) { /* the session records the window it sampled */
        fo.capture_delay_ms = (int)(o->delay_s * 1000.0 + 0.5);
        fo.capture_duration_ms = o->duration_s * 1000.0 >= 2147483647.0
                                     ? 2147483647
                                     : (int)(o->duration_s * 1000.0 + 0.5);
    }
    gpufl_error err;
    gpufl_status st = fl_init_with_monitor(&fo, mon, &err);
    if (st == GPUFL_DISABLED) {
        if (!o->quiet)
            cli_say("GPUFL_DISABLED is set: no session log is written");
        return 1;
    }
    if (st != GPUFL_OK) {
        if (st == GPUFL_ERR_BACKEND) {
            /* The monitor did not start: the caller's fall-back applies. */
            gp_error_set(mon_err, GP_ERR_BACKEND, "%s", err.message);
            return -2;
        }
        cli_say("--log-dir: %s", err.message);
        return -1;
    }
    if (!o->quiet) {
        char dir[4096];
        gpufl_session_dir(dir, sizeof dir);
        cli_say("recording session %s", dir);
    }
    return 0;
}

/* Starts sampling: through the session when --log-dir asks for one.
 * Returns 0, -1 (message printed: exit 125) or -2 (err set: the monitor
 * could not start, the usual fall-back applies). */
static int start_sampling(const cli_opts *o, gp_monitor *mon, int *session, gp_error *err)
{
    if (o->log_dir && !*session) {
        int r = start_session(o, mon, err);
        if (r == 0) {
            *session = 1;
            return 0;
        }
        if (r < 0)
            return r;
    }
    return gp_monitor_start(mon, err) == GP_OK ? 0 : -2;
}

/* The session's shutdown says how CMD ended. */
static void end_session(const cli_opts *o, const cli_run_result *res)
{
    if (!o->cmd) { /* watched: no child's end to tell */
        gpufl_shutdown();
        return;
    }
    int sig = res->term_signal;
    bool crashed = res->core_dumped || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
                   sig == SIGILL || sig == SIGABRT;
    int code = res->exec_errno ? res->exit_code : sig ? -1 : WEXITSTATUS(res->wait_status);
    fl_session_set_child_exit(code, sig, crashed);
    gpufl_shutdown();
}

/* -------------------------------------------------------------- tracing */

/* --engine above Monitor: what is injected into CMD and where its
 * sessions go. */
typedef struct tracing {
    int on;       /* an engine above Monitor was asked for */
    int injected; /* the plugin was found: CMD gets it */
    char plugin[PATH_MAX];
    char dir[PATH_MAX]; /* GPUFL_LOG_PATH, absolute */
    int temp;           /* dir is a private temporary one, removed at the end */
    char **env;         /* CMD's environment */
    cli_names before;   /* dir's sessions before CMD started */
    char own_id[64];    /* the --log-dir session of the profiler itself */
    char note[NOTE_MAX];
} tracing;

/* Finds the plugin and makes the log directory.  -1 after a message (exit
 * 125, CMD not run); 0 otherwise, also when nothing will be injected. */
static int trace_prepare(const cli_opts *o, tracing *tr)
{
    memset(tr, 0, sizeof *tr);
    if (o->engine == GPUFL_ENGINE_MONITOR)
        return 0;
    tr->on = 1;
    const char *engine = gpufl_engine_name(o->engine);
    const char *disabled = getenv("GPUFL_DISABLED");
    if (disabled && fl_parse_bool(disabled) == 1) {
        snprintf(tr->note, sizeof tr->note, "GPUFL_DISABLED is set");
        if (!o->quiet)
            cli_say("GPUFL_DISABLED is set: nothing is traced");
        return 0;
    }
    char msg[NOTE_MAX];
    int found = cli_find_plugin(tr->plugin, sizeof tr->plugin, msg, sizeof msg);
    if (found < 0) {
        cli_say("--engine %s: %s", engine, msg);
        return -1;
    }
    if (found == 0) {
        snprintf(tr->note, sizeof tr->note, "%s", msg);
        if (!o->quiet)
            cli_say("warning: --engine %s: %s: the run goes on with device metrics only", engine,
                    msg);
        return 0;
    }

    if (o->log_dir) {
        /* The library's rule for log_path: a trailing ".log" is dropped. */
        char base[PATH_MAX];
        snprintf(base, sizeof base, "%s", o->log_dir);
        size_t n = strlen(base);
        if (n > 4 && strcmp(base + n - 4, ".log") == 0)
            base[n - 4] = '\0';
        if (fl_make_dirs(base) != 0 || !realpath(base, tr->dir)) {
            cli_say("--log-dir: cannot create the log directory '%s': %s", base, strerror(errno));
            return -1;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        tmp = tmp && *tmp ? tmp : "/tmp";
        /* Those an earlier run left (it was killed): gone first. */
        cli_trace_dirs_clean(tmp);
        char templ[PATH_MAX];
        snprintf(templ, sizeof templ, "%s/" CLI_TRACE_DIR_PREFIX "%ld-XXXXXX", tmp, (long)getpid());
        if (!mkdtemp(templ)) {
            cli_say("--engine %s: cannot create a temporary directory '%s': %s", engine, templ,
                    strerror(errno));
            return -1;
        }
        tr->temp = 1;
        snprintf(tr->dir, sizeof tr->dir, "%s", templ);
        char real[PATH_MAX];
        if (realpath(templ, real))
            snprintf(tr->dir, sizeof tr->dir, "%s", real);
    }

    const char *cur = getenv("CUDA_INJECTION64_PATH");
    if (cur && *cur && !o->quiet) {
        char real[PATH_MAX];
        if (!realpath(cur, real) || strcmp(real, tr->plugin) != 0)
            cli_say(
                "warning: CUDA_INJECTION64_PATH=%s is replaced by %s for the command (--engine %s)",
                cur, tr->plugin, engine);
    }
    const char *base = strrchr(o->cmd[0], '/');
    const char *app = o->app ? o->app : base ? base + 1 : o->cmd[0];
    /* The child inherits it (cli_child_env keeps what it does not own). */
    if ((o->stack_trace && setenv("GPUFL_ENABLE_STACK_TRACE", "1", 1) != 0) ||
        (o->metrics && setenv(o->engine == GPUFL_ENGINE_PM_SAMPLING ? "GPUFL_PM_SAMPLING_METRICS"
                                                                    : "GPUFL_METRICS",
                              o->metrics, 1) != 0) ||
        (o->range_per_kernel && setenv("GPUFL_RANGE_PER_KERNEL", "1", 1) != 0) ||
        (o->sass_all_kernels && setenv("GPUFL_SASS_ALL_KERNELS", "1", 1) != 0) ||
        (o->pm_interval && setenv("GPUFL_PM_SAMPLING_INTERVAL_US", o->pm_interval, 1) != 0) ||
        cli_window_env(o) != 0) {
        fprintf(stderr, "gpu-profile: out of memory\n");
        return -1;
    }
    tr->env = cli_child_env(tr->plugin, engine, tr->dir, app);
    if (!tr->env) {
        cli_say("out of memory");
        return -1;
    }
    tr->injected = 1;
    return 0;
}

/* Right before CMD starts: the sessions that are not CMD's. */
static void trace_snapshot(tracing *tr)
{
    if (!tr->injected)
        return;
    cli_names_list(tr->dir, &tr->before);
    gpufl_session_id(tr->own_id, sizeof tr->own_id);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* After CMD: every session CMD's processes wrote, read into t. */
static void trace_collect(const cli_opts *o, tracing *tr, cli_trace *t)
{
    cli_trace_init(t, o->engine);
    const char *all = getenv("GPUFL_SASS_ALL_KERNELS"); /* what CMD got (set above) */
    t->sass_all_kernels = all && fl_parse_bool(all) == 1;
    t->note = tr->note[0] ? tr->note : NULL;
    if (!tr->injected)
        return;
    t->plugin = tr->plugin;
    t->log_dir = tr->temp ? NULL : tr->dir;
    cli_names after;
    cli_names_list(tr->dir, &after);
    if (after.n > 1)
        qsort(after.v, after.n, sizeof *after.v, by_str); /* a stable order */
    for (size_t i = 0; i < after.n; i++) {
        const char *name = after.v[i];
        if (cli_names_has(&tr->before, name) || strcmp(name, tr->own_id) == 0)
            continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", tr->dir, name);
        fl_run_add_session(&t->run, path, NULL); /* a bad one adds nothing */
    }
    cli_names_free(&after);
    fl_run_finish(&t->run);
}

static void trace_end(tracing *tr)
{
    if (tr->temp)
        cli_remove_tree(tr->dir);
    cli_env_free(tr->env);
    cli_names_free(&tr->before);
    memset(tr, 0, sizeof *tr);
}

/* --repeats: the first measured run is in rp; each next one is a region
 * of its own on the same monitor, until N are done or one fails (res is
 * then the last run's). */
static void more_runs(const cli_opts *o, const cli_signals *sig, gp_monitor *mon, live *l,
                      int show_live, cli_repeats *rp, cli_run_result *res)
{
    int lib_fork = strcmp(gp_monitor_backend(mon), "smi") == 0;
    while (cli_repeats_add(rp, mon, res)) {
        gp_error err;
        if (gp_monitor_rearm(mon, &err) != GP_OK || gp_monitor_start(mon, &err) != GP_OK) {
            cli_say("run %d of %d: sampling did not start again: %s", rp->done + 1, rp->repeats,
                    err.message);
            return;
        }
        l->t0 = mono_ns();
        cli_run_result next;
        char msg[256];
        if (cli_run_child(o->cmd, NULL, sig, !o->wait_primary, lib_fork,
                          show_live ? live_tick : NULL, l, &next, msg, sizeof msg) < 0) {
            cli_say("run %d of %d: %s", rp->done + 1, rp->repeats, msg);
            gp_monitor_stop(mon, NULL);
            return;
        }
        live_clear(l);
        if (gp_monitor_stop(mon, &err) != GP_OK)
            cli_say("%s", err.message);
        if (next.exec_errno) {
            exec_failed(o, next.exec_errno);
            res->exit_code = next.exit_code; /* 126 / 127, the runs before reported */
            return;
        }
        *res = next;
    }
}

static int run(cli_opts *o, const cli_signals *sig, tracing *tr)
{
    FILE *out = NULL, *samples = NULL;
    if (o->output && !(out = open_output("--output", o->output)))
        return CLI_EXIT_PROFILER;
    if (o->samples && !(samples = open_output("--samples", o->samples))) {
        close_output(out, "report", o->output, 0);
        return CLI_EXIT_PROFILER;
    }
    cli_samples_stream stream = {0};
    if (samples) {
        (void)cli_samples_open(&stream, samples, o->samples_format);
        o->gp.on_sample = cli_samples_on_sample;
        o->gp.on_sample_user = &stream;
    }
    /* Per-process attribution: this process and every descendant, read
     * again each round (the command's children come and go; this process
     * itself has no GPU context).  docs/cli.md. */
    static int self_pid[1];
    self_pid[0] = (int)getpid();
    o->gp.pids = self_pid;
    o->gp.n_pids = 1;
    o->gp.pid_tree = 1;

    char note[NOTE_MAX] = "";
    gp_monitor *mon = NULL;
    gp_error err;
    int session = 0;
    if (cli_timed_window(o) && o->delay_s > o->gp.warmup_s)
        o->gp.warmup_s = o->delay_s; /* the statistics start with the window */
    int rc = setup_monitor(o, &mon, note);
    if (rc == 0 && o->warmup_runs > 0) {
        /* Before sampling starts: the warmup runs are in no region. */
        cli_run_result wres;
        int lib_fork = strcmp(gp_monitor_backend(mon), "smi") == 0;
        if (cli_warmup_runs(o, sig, lib_fork, &wres) != 0) {
            if (wres.exec_errno)
                exec_failed(o, wres.exec_errno);
            gp_monitor_destroy(mon);
            close_output(out, "report", o->output, 0);
            close_output(samples, "samples", o->samples, 0);
            return wres.exit_code;
        }
    }
    int sr = rc == 0 ? start_sampling(o, mon, &session, &err) : 0;
    if (sr == -1)
        rc = -1;
    if (sr == -2) {
        gp_monitor_destroy(mon);
        mon = NULL;
        char why[NOTE_MAX];
        snprintf(why, sizeof why, "%s", err.message);
        rc = cannot_sample(o, err.status, why, &mon, note);
        if (rc == 0 && start_sampling(o, mon, &session, &err) != 0) {
            cli_say("%s", err.message);
            rc = -1;
        }
    }
    if (rc < 0) {
        gp_monitor_destroy(mon);
        close_output(out, "report", o->output, 0);
        close_output(samples, "samples", o->samples, 0);
        return CLI_EXIT_PROFILER;
    }
    const char *backend = gp_monitor_backend(mon);
    int sampled = strcmp(backend, "none") != 0;

    trace_snapshot(tr);
    live l = {mon, mono_ns(), 0};
    int show_live = sampled && !o->quiet && !o->no_live && isatty(STDERR_FILENO);
    cli_run_result res;
    char msg[256];
    cli_window win;
    cli_window_origin(o, tr->env);
    cli_window_start(&win, o, mon);
    int waited =
        o->cmd ? cli_run_child(o->cmd, tr->env, sig, !o->wait_primary, strcmp(backend, "smi") == 0,
                               show_live ? live_tick : NULL, &l, &res, msg, sizeof msg)
               : cli_watch(o, show_live ? live_tick : NULL, &l, &res, msg, sizeof msg);
    int window_stopped = cli_window_finish(&win);
    if (waited < 0) {
        cli_say("%s", msg);
        if (session) {
            gp_monitor_stop(mon, NULL);
            gpufl_shutdown();
        }
        gp_monitor_destroy(mon);
        close_output(out, "report", o->output, 0);
        close_output(samples, "samples", o->samples, 0);
        return CLI_EXIT_PROFILER;
    }
    live_clear(&l);
    if (!window_stopped && gp_monitor_stop(mon, &err) != GP_OK)
        cli_say("%s", err.message);
    cli_repeats rp = {0};
    int multi = cli_multi_run(o) && !res.exec_errno;
    if (multi && cli_repeats_init(&rp, o, sampled ? gp_monitor_device_count(mon) : 0) < 0)
        multi = 0;
    if (multi)
        more_runs(o, sig, mon, &l, show_live, &rp, &res);
    if (session)
        end_session(o, &res);
    note_stopped(&res, note);

    int out_errno = 0, samples_errno = 0;
    if (res.exec_errno) {
        /* Nothing ran, so there is nothing to report. */
        exec_failed(o, res.exec_errno);
    } else {
        FILE *f = out ? out : o->quiet ? NULL : stderr;
        cli_trace t;
        if (f && tr->on)
            trace_collect(o, tr, &t);
        cli_report r = {o, mon, sampled, note, &res, f && tr->on ? &t : NULL, multi ? &rp : NULL};
        errno = 0;
        if (f && cli_report_write(&r, f) < 0 && f != stderr)
            out_errno = errno ? errno : EIO;
        if (f && tr->on)
            cli_trace_free(&t);
    }
    if (samples && cli_samples_close(&stream) < 0)
        samples_errno = stream.err;
    close_output(out, "report", o->output, out_errno);
    close_output(samples, "samples", o->samples, samples_errno);
    gp_monitor_destroy(mon);
    cli_repeats_free(&rp);
    return res.exit_code;
}

/* The subcommands that do not run CMD (cli_subs): they end on
 * INT/TERM/HUP/QUIT like any program (the signal's default action, so the
 * parent sees it).  -1 when argv names none. */
static int subcommand(int argc, char **argv, const cli_signals *sig)
{
    const cli_sub *s = argc >= 2 ? cli_sub_find(argv[1]) : NULL;
    if (!s)
        return -1;
    cli_signals_restore(sig);
    if (!s->keeps_sigpipe)
        cli_pipe_default();
    return s->main(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    /* Before anything else: upload's API key out of /proc/PID/cmdline. */
    cli_upload_scrub_argv(argc, argv);
    /* First: nothing opened from here on may land on fds 0-2. */
    int std_closed[3];
    cli_std_fds_reserve(std_closed);
    /* Then, before any thread: every thread the library or NVML starts
     * inherits this mask. */
    cli_signals sig;
    cli_signals_block(&sig);
    memcpy(sig.std_closed, std_closed, sizeof std_closed);

    int sub = subcommand(argc, argv, &sig);
    if (sub >= 0)
        return sub;
    cli_opts o;
    int p = cli_parse_run_args(argc, argv, &o);
    if (p > 0) {
        /* --help / --version: printed as the subcommands print (no CMD). */
        cli_signals_restore(&sig);
        cli_pipe_default();
        if (o.version)
            printf("gpu-profile %s\n", gp_version());
        else
            cli_help_top(stdout);
        return fflush(stdout) == 0 ? 0 : cli_stdout_failed("--help");
    }
    if (p < 0)
        return CLI_EXIT_USAGE;
    if (!o.cmd && cli_watch_check(&o) < 0)
        return CLI_EXIT_USAGE;
    if (cli_run_id_setup() < 0)
        return CLI_EXIT_USAGE;
    if (roll_env(&o) < 0)
        return CLI_EXIT_PROFILER;
    tracing tr;
    int code = trace_prepare(&o, &tr) < 0 ? CLI_EXIT_PROFILER : run(&o, &sig, &tr);
    trace_end(&tr);
    return code;
}
