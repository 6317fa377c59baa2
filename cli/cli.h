/*
 * cli.h - the pieces of the `gpu-profile` command, shared between its
 * files: option parsing (options.c), the device list rules of --device and
 * CUDA_VISIBLE_DEVICES (visible.c), running and supervising CMD (child.c),
 * the reports, the samples file and the live line (report.c, json.c), and
 * `gpu-profile devices` (devices.c), the Trace engine's injection of the
 * CUPTI plugin into CMD (inject.c) and the reader and summary of the
 * sessions it writes (trace.c).  Nothing here is installed or public.
 */
#ifndef GP_CLI_H
#define GP_CLI_H

#include "gpu_profile.h"
#include "gpufl.h"

/* The subsystems the command embeds, one internal header each (it links
 * the static library for them): */
#include "../src/recorder/launcher.h" /* a session fed by the command's own monitor */
#include "../src/report/logs.h"       /* session logs read back, reported, exported */
#include "../src/util/util.h"         /* buffer, directories, booleans, errors */

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit statuses of the command itself (CMD's own statuses pass through). */
#define CLI_EXIT_PROFILER 125   /* the profiler could not start: CMD was not run */
#define CLI_EXIT_NOT_EXEC 126   /* CMD was found but could not be executed */
#define CLI_EXIT_NOT_FOUND 127  /* CMD was not found */
#define CLI_EXIT_DEVICES_FAIL 1 /* `gpu-profile devices`: no backend answered */

#define CLI_MAX_DEVICES 64
/* The profiler seeing CMD's end this late (stopped, starved) is noted. */
#define CLI_LATE_NOTE_S 2.0

enum cli_samples_format { CLI_SAMPLES_NONE = 0, CLI_SAMPLES_CSV, CLI_SAMPLES_NDJSON };

typedef struct cli_opts {
    gp_options gp;           /* interval_s, warmup_s, backend, strict */
    const char *device_spec; /* --device text; NULL when not given */
    int json;
    int quiet;
    int no_live;
    int ascii;
    int wait_primary; /* --wait=primary: stop when CMD itself exits */
    const char *output;
    const char *samples;
    enum cli_samples_format samples_format;
    const char *log_dir;     /* --log-dir: a GPUFlight session of the run */
    const char *app;         /* --app: its app name */
    gpufl_engine engine;     /* --engine; GPUFL_ENGINE_MONITOR: no injection */
    int stack_trace;         /* --stack-trace: GPUFL_ENABLE_STACK_TRACE=1 for CMD */
    const char *metrics;     /* --metrics: GPUFL_PM_SAMPLING_METRICS (pmsampling) or
                                GPUFL_METRICS (rangeprofiler) for CMD */
    const char *pm_interval; /* --pm-interval: GPUFL_PM_SAMPLING_INTERVAL_US for CMD */
    int range_per_kernel;    /* --range-per-kernel: GPUFL_RANGE_PER_KERNEL=1 for CMD */
    int sass_all_kernels;    /* --sass-all-kernels: GPUFL_SASS_ALL_KERNELS=1 for CMD */
    char **cmd;              /* NULL-terminated argv of CMD */
    int cmd_argc;
    int cmd_first;     /* CMD is gpu-profile's first word: a mistyped subcommand? */
    int help;          /* --help: main prints the page */
    int version;       /* --version: main prints it */
    double duration_s; /* --duration: without CMD watch this long; with CMD the window's length */
    pid_t pid;         /* --pid without CMD: watch until it exits; 0: not given */
    int repeats;       /* --repeats: measured runs of CMD (default 1) */
    int warmup_runs;   /* --warmup-runs: unmeasured runs first (default 0) */
    /* Capture windows (docs/cli.md): with CMD, --delay / --duration bound
     * the window sampled and traced, from CMD's start; --capture-range /
     * --capture-range-end reach CMD as GPUFL_CAPTURE_RANGE / _END. */
    double delay_s;                /* 0: not given */
    const char *capture_range;     /* NULL: not given */
    const char *capture_range_end; /* NULL: not given */
    /* Bounded long runs (docs/cli.md): the session's windows and its disk
     * budget, as GPUFL_LOG_ROTATE_BYTES / GPUFL_LOG_ROTATE_AFTER_MS /
     * GPUFL_MAX_DISK for the session (the command's and CMD's). */
    const char *rotate_size;  /* NULL: not given */
    double rotate_interval_s; /* 0: not given */
    const char *max_disk;     /* NULL: not given */
} cli_opts;

/* With CMD, --delay or --duration asks for a timed window. */
#define cli_timed_window(o) ((o)->cmd && ((o)->delay_s > 0 || (o)->duration_s > 0))

#define CLI_MAX_RUNS 10000
/* --repeats above 1 or --warmup-runs: CMD runs several times (repeats.c). */
#define cli_multi_run(o) ((o)->repeats > 1 || (o)->warmup_runs > 0)

/* say.c: the command's messages, "gpu-profile: " + the text + "\n" in one
 * write, every control character of the text shown as '?'. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_fsay(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Control characters of s as '?', in place. */
void cli_clean_text(char *s);
/* secret (kept, not copied) is redacted from every later cli_say line:
 * whole occurrences, as util/text.h's gp_redact has it.  At most 8. */
void cli_say_hide(const char *secret);
/* stdout could not be written (errno): a message, except for a closed pipe
 * (EPIPE: the reader is gone, nothing to say); returns CLI_EXIT_FAIL. */
int cli_stdout_failed(const char *cmd);
/* in with the library's field names as the command's flags (nvml_library
 * as --nvml-library, log_path as --log-dir, ...) and without the $PATH a
 * "not found in PATH (...)" pastes; every cli_say line goes through it. */
void cli_flag_words(const char *in, char *out, size_t cap);
/* Whether the locale the environment asks for (LC_ALL, else LC_CTYPE,
 * else LANG) has the UTF-8 codeset: else the text report is ASCII. */
int cli_locale_utf8(void);
/* SIGPIPE back to its default action and unblocked (the subcommands). */
void cli_pipe_default(void);

/* options.c.  Returns 0 to run, 1 when it printed help or the version
 * (exit 0), -1 after printing why the arguments are wrong (exit 125). */
int cli_parse_run_args(int argc, char **argv, cli_opts *o);
/* Strict number parsing shared with `devices`: 0 or -1 after a message. */
int cli_parse_seconds(const char *opt, const char *text, double min, double max, double *out);
int cli_parse_backend(const char *opt, const char *text, gp_backend_kind *out);
/* A backend row's value (CLI_K_*) into o: 0, -1 after a message, or 1
 * when key is none of them. */
int cli_backend_option(gp_options *o, int key, const char *value);
void cli_usage(FILE *f); /* the run form's page alone: cli_help_top adds the subcommands */
/* Each subcommand's page (its --help). */
void cli_devices_usage(FILE *f);
void cli_report_usage(FILE *f);
void cli_export_usage(FILE *f);
void cli_metrics_usage(FILE *f);
void cli_serve_usage(FILE *f);
/* help.c: `gpu-profile help [CMD]` (argv[0] is "help"), and `gpu-profile
 * --help`: the run form's page (cli_usage) and the subcommand list. */
int cli_help_main(int argc, char **argv);
void cli_help_top(FILE *f);
void cli_help_usage(FILE *f);
/* The subcommand a typo or two away from word, or NULL. */
const char *cli_sub_nearest(const char *word);

/* visible.c: a device list ("0,2", "GPU-1f2e...,1", "all") resolved
 * against the devices a backend sees.
 *
 * CLI_LIST_STRICT (--device): every entry must name one device; a wrong
 * entry is an error.  CLI_LIST_CUDA (CUDA_VISIBLE_DEVICES): CUDA's rules:
 * the first entry that names no device ends the list, MIG instances the
 * backend does not list are skipped; `note` says what was left out. */
enum cli_list_rule { CLI_LIST_STRICT, CLI_LIST_CUDA };

/* Whether every entry of `spec` is a plain index, so it needs no device
 * list to resolve; fills out/n when so (syntax only).  Returns -1 and a
 * message for a malformed list under CLI_LIST_STRICT. */
int cli_list_indices_only(const char *spec, unsigned *out, size_t cap, size_t *n, char *msg,
                          size_t msg_len);
/* Resolves `spec` against devs[0..n_devs).  Returns 0 (out/n_out filled,
 * possibly empty under CLI_LIST_CUDA; `msg` holds a note or "") or -1
 * (`msg` says why; CLI_LIST_STRICT only). */
int cli_list_resolve(const char *spec, enum cli_list_rule rule, const gp_device_info *devs,
                     size_t n_devs, unsigned *out, size_t cap, size_t *n_out, char *msg,
                     size_t msg_len);

/* child.c: run CMD and wait for it (and, unless wait_primary, for every
 * descendant it leaves behind). */
typedef struct cli_signals {
    sigset_t caught;    /* read through a signalfd */
    sigset_t orig_mask; /* restored in CMD */
    int chld_was_ignored;
    int std_closed[3]; /* fds 0-2 that were closed at start: closed in CMD */
} cli_signals;

/* Puts /dev/null on each of fds 0-2 that is closed, so that nothing the
 * profiler opens lands there (its messages would go into that file);
 * closed[fd] says which.  Call first thing in main. */
void cli_std_fds_reserve(int closed[3]);
/* Blocks the signals the profiler handles; call in main before any thread
 * exists, so every thread inherits the mask. */
void cli_signals_block(cli_signals *s);
/* Puts back the mask and SIGCHLD disposition the process started with
 * (the subcommands, which end on INT/TERM/HUP/QUIT as a program does). */
void cli_signals_restore(const cli_signals *s);

typedef struct cli_run_result {
    int exec_errno;       /* != 0: CMD could not be executed */
    int wait_status;      /* CMD's raw wait status */
    int exit_code;        /* the shell-style status gpu-profile exits with */
    int term_signal;      /* the signal that killed CMD, or 0 */
    int core_dumped;      /* with term_signal */
    int interrupted_by;   /* first INT/QUIT/TERM/HUP the profiler received, or 0 */
    double cmd_s;         /* CMD's wall time, fork to its exit as the kernel saw it */
    double descendants_s; /* how long descendants ran after CMD exited */
    double late_s;        /* how long after CMD's exit the profiler saw it (stopped, starved) */
    int profiler_stopped; /* the profiler got SIGCONT: it was stopped during the run */
    double profiler_stopped_s; /* ... this long (within 0.05 s) */
    int watch_pid_exited;      /* no CMD: --pid's process exited (else --duration or a signal) */
} cli_run_result;

typedef void (*cli_tick_fn)(void *user);

/* Runs argv with the environment envp (NULL: the profiler's own); calls
 * tick(user) about once a second while waiting when tick is not NULL.
 * lib_may_fork: the library has child processes of its own (the smi
 * backend), which must not be reaped here.  Returns 0, or -1 with `msg` set
 * when the profiler itself could not start CMD (fork, pipe, signalfd). */
int cli_run_child(char **argv, char *const *envp, const cli_signals *sig, int wait_all,
                  int lib_may_fork, cli_tick_fn tick, void *tick_user, cli_run_result *res,
                  char *msg, size_t msg_len);

/* watch.c: no CMD (--duration, --pid).  cli_watch_check: -1 after a
 * message when --pid names no process.  cli_watch: waits as cli_run_child
 * does for CMD, filling res (cmd_s: the time watched; exit_code 0, or
 * 128+N when signal N ended it); -1 with msg when it cannot wait. */
int cli_watch_check(const cli_opts *o);
int cli_watch(const cli_opts *o, cli_tick_fn tick, void *tick_user, cli_run_result *res, char *msg,
              size_t msg_len);

/* window.c: the capture window of a run with CMD (--delay, --duration,
 * --capture-range).  cli_window_env: the GPUFL_CAPTURE_* variables CMD's
 * processes get (set in our environment, which cli_child_env copies);
 * -1 when out of memory.  cli_window_origin: CMD's start as the window's
 * origin, written into env (CMD's environment) right before it starts.
 * cli_window_start: a thread that stops mon when the window ends (with
 * --duration); cli_window_finish: joins it, 1 when it stopped mon (the
 * caller must not stop it again).  The report's line and JSON member
 * ("capture": null without a window). */
typedef struct cli_window {
    gp_monitor *mon;
    uint64_t end_mono_ns;
    int started, quit, stopped;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} cli_window;
int cli_window_env(const cli_opts *o);
void cli_window_origin(const cli_opts *o, char **env);
void cli_window_start(cli_window *w, const cli_opts *o, gp_monitor *mon);
int cli_window_finish(cli_window *w);
void cli_window_text(const cli_opts *o, FILE *f);
void cli_window_json(const cli_opts *o, fl_buf *b);

/* "SIGTERM" for 15, "SIGRTMIN+3", "signal 99". */
const char *cli_signal_name(int sig, char *buf, size_t len);

/* json.c: the JSON conventions of docs/json-schema.md (escaping, numbers),
 * written into the library's text buffer (fl_buf, src/util/buf.c). */
void cli_json_key(fl_buf *b, const char *key); /* "key": */
void cli_json_sep(fl_buf *b, int *first);      /* "," after the first member */
/* ,"key":"s" (a NULL s: null), a member after the object's first. */
void cli_json_member_str(fl_buf *b, const char *key, const char *s);

/* trace.c: the summary of the sessions the CUPTI plugin wrote into a log
 * directory during the run (one per CUDA process), summed up by
 * report/run.c (fl_run: a pure reader that never prints and never fails
 * on a bad log), with what the command knows of the run; its renderers
 * write only what they are given. */
#define CLI_TRACE_TOP 10       /* kernels listed by name in the reports */
#define CLI_TRACE_TOP_STALLS 3 /* stall reasons named in the text summary */

typedef struct cli_trace {
    gpufl_engine engine;  /* what --engine asked for */
    const char *plugin;   /* the injected plugin; NULL: not injected */
    const char *log_dir;  /* where the sessions stay; NULL: a removed temp dir */
    const char *note;     /* why nothing was traced (not injected); NULL */
    int sass_all_kernels; /* --sass-all-kernels (or GPUFL_SASS_ALL_KERNELS) reached CMD */
    fl_run run;           /* the sessions read (fl_run_add_session), then fl_run_finish */
} cli_trace;

void cli_trace_init(cli_trace *t, gpufl_engine engine);
void cli_trace_free(cli_trace *t);
/* The text block (after the device summary) and the JSON object. */
void cli_trace_text(const cli_trace *t, FILE *f);
void cli_trace_json(const cli_trace *t, fl_buf *b);
/* trace_sass.c: the SASS metrics' line and JSON object ("sass_metrics"). */
void cli_trace_sass_text(const cli_trace *t, FILE *f);
void cli_trace_sass_json(const cli_trace *t, fl_buf *b);
/* Why SassMetrics / RangeProfiler gave nothing although kernels ran and
 * the engine did not fall back: their window is the gpufl scopes. */
void cli_trace_window_hint(const cli_trace *t, FILE *f);

/* inject.c: what --engine above Monitor does around CMD. */
typedef struct cli_names {
    char **v;
    size_t n, cap;
} cli_names;

/* The plugin to inject: $GPUFL_CUPTI_PLUGIN (must exist: else -1 with msg),
 * else next to the executable, in ../lib and ../<libdir>.  Returns 1 with
 * an absolute path in path, 0 when not found (msg says where it looked),
 * -1 on an error.  The file found must pass fl_library_check (regular, ours
 * or root's, writable by no other user): else -1, nothing loaded. */
int cli_find_plugin(char *path, size_t len, char *msg, size_t msg_len);
/* A copy of environ without the variables the injection sets, then those
 * (NULL-terminated, malloc'd; cli_env_free): both *_INJECTION64_PATH and
 * GPUFL_CUPTI_PLUGIN are the absolute plugin path.  NULL when out of
 * memory. */
char **cli_child_env(const char *plugin, const char *engine, const char *log_path, const char *app);
/* The run's id (docs/concepts.md, "Runs"): GPUFL_RUN_ID as it is when
 * set and valid, else a fresh one set in our own environment, which our
 * session and every process of CMD then share.  -1 after a message (a bad
 * GPUFL_RUN_ID: a usage error). */
int cli_run_id_setup(void);
void cli_env_free(char **env);
/* The subdirectory names of dir (none when it cannot be read). */
void cli_names_list(const char *dir, cli_names *out);
int cli_names_has(const cli_names *l, const char *name);
void cli_names_free(cli_names *l);
/* The private log directory of --engine without --log-dir:
 * $TMPDIR/gpu-profile-trace-<our pid>-XXXXXX, removed at the end. */
#define CLI_TRACE_DIR_PREFIX "gpu-profile-trace-"
/* Removes those in tmp that a run which is gone left (killed with SIGKILL,
 * crashed): ours (same user), a real directory, and its pid no longer
 * running. */
void cli_trace_dirs_clean(const char *tmp);
/* rm -r, without following links; 0 or -1. */
int cli_remove_tree(const char *path);

/* repeats.c: --repeats / --warmup-runs.  The measured runs' results and
 * summaries (n_dev per run, none when nothing was sampled). */
typedef struct cli_repeats {
    int repeats, warmup_runs;
    int done; /* runs measured */
    size_t n_dev;
    cli_run_result *res; /* [repeats] */
    gp_summary *sums;    /* [repeats][n_dev] */
} cli_repeats;
/* 0, or -1 after a message (out of memory). */
int cli_repeats_init(cli_repeats *rp, const cli_opts *o, size_t n_dev);
void cli_repeats_free(cli_repeats *rp);
/* Keeps the run that just ended (res, the monitor's summaries, stopped);
 * 1 when another run is due (fewer than N done, and this one exited 0
 * without gpu-profile being interrupted), else 0. */
int cli_repeats_add(cli_repeats *rp, gp_monitor *mon, const cli_run_result *res);
/* The M unmeasured runs: 0 when each exited 0; 1 when one did not (res
 * is its result: a message was printed, except for exec_errno, which the
 * caller reports as for a measured run; exit with res->exit_code). */
int cli_warmup_runs(const cli_opts *o, const cli_signals *sig, int lib_may_fork,
                    cli_run_result *res);
/* The block after the last run's summaries, and the run object's
 * "repeats" member. */
void cli_repeats_text(const cli_repeats *rp, int ascii, FILE *f);
void cli_repeats_json(const cli_repeats *rp, fl_buf *b);
/* One device's summary as JSON into b (after a comma when comma): 0, or
 * -1 with b->oom set. */
int cli_summary_json(fl_buf *b, const gp_summary *s, int comma);

/* report.c */
typedef struct cli_report {
    const cli_opts *opts;
    gp_monitor *mon;
    int sampled;      /* a real backend sampled (not none) */
    const char *note; /* why nothing was sampled / what was left out; may be "" */
    const cli_run_result *res;
    const cli_trace *trace;     /* --engine above Monitor; NULL: none (no "trace" key) */
    const cli_repeats *repeats; /* --repeats / --warmup-runs; NULL: one run (no "repeats" key) */
} cli_report;

/* Writes the text or JSON report to f.  Returns 0 or -1 (write error). */
int cli_report_write(const cli_report *r, FILE *f);
/* Writes every kept sample to f in the format; 0 or -1. */
/* --samples, written as they are taken: cli_samples_open writes the
 * header (CSV) and makes f line-buffered; cli_samples_on_sample (a
 * gp_sample_fn, user = the stream) writes one row; the first write error
 * is kept in err and stops the rows; cli_samples_close flushes.  -1 and
 * err set on a write error. */
typedef struct cli_samples_stream {
    FILE *f;
    enum cli_samples_format fmt;
    int err;
} cli_samples_stream;
int cli_samples_open(cli_samples_stream *st, FILE *f, enum cli_samples_format fmt);
void cli_samples_on_sample(const gp_sample *s, void *user);
int cli_samples_close(cli_samples_stream *st);
/* Formats the live status line (no "\r", no newline) into buf. */
void cli_live_format(gp_monitor *m, double elapsed_s, char *buf, size_t len);

/* outfile.c: `-o FILE` of report and export, written whole or not at all
 * (a temporary file beside FILE, renamed over it; removed on a failure or
 * INT/TERM/HUP/QUIT, which then end the process as by default).  One at a
 * time. */
#define CLI_OUTFILE_PATH_MAX 4096
typedef struct cli_outfile {
    FILE *f; /* write here */
    const char *path;
    char target[CLI_OUTFILE_PATH_MAX + 1]; /* path, or the file it links to */
    int direct;                            /* not a regular file: written in place */
} cli_outfile;
/* 0, or -1 with msg ("cannot create 'FILE': ..."). */
int cli_outfile_open(cli_outfile *o, const char *path, char *msg, size_t msg_len);
/* Flushes, closes and renames into place: 0, or -1 with msg (FILE as it was). */
int cli_outfile_commit(cli_outfile *o, char *msg, size_t msg_len);
/* Drops the output: FILE as it was. */
void cli_outfile_abort(cli_outfile *o);
/* The temporary file's path, for a format that writes a file by its name
 * (SQLite); NULL when FILE is written in place (not a regular file). */
const char *cli_outfile_tmp(const cli_outfile *o);

/* devices.c: `gpu-profile devices [--json] [--backend B]`. */
int cli_devices_main(int argc, char **argv);
/* logs.c: `gpu-profile report ...` and `gpu-profile export ...` (argv[0] is
 * the subcommand).  0 complete read, 2 partial read, 1 nothing read or the
 * output not written, 125 bad option. */
int cli_report_main(int argc, char **argv);
int cli_export_main(int argc, char **argv);
/* metrics.c: `gpu-profile metrics chips|list|describe|passes ...` (argv[0]
 * is "metrics"): the hardware-metric catalogue of CUPTI's host API.  0 ok,
 * 1 CUPTI or the plugin failed, 125 bad option. */
int cli_metrics_main(int argc, char **argv);
/* metrics_sets.c: `metrics sets` (engine -1: every engine) and `metrics
 * fits` (engine a gp_metrics_engine) on chip; the same exit statuses. */
int cli_metrics_sets(const char *chip, int engine, int json);
int cli_metrics_fits(const char *chip, int engine, char **args, size_t nargs, int json);

/* serve.c: `gpu-profile serve [--listen ADDR:PORT] ...` (argv[0] is
 * "serve"): a Prometheus exporter until INT/TERM/HUP/QUIT, which then end
 * the process as by default.  1 the listener or the devices could not be
 * opened, 125 bad option. */
int cli_serve_main(int argc, char **argv);
/* upload.c: `gpu-profile upload [...] LOG_PATH` (argv[0] is "upload"):
 * gpufl_upload_logs.  0 uploaded (or the kill switch on), 1 failed, 125 bad
 * option or value. */
int cli_upload_main(int argc, char **argv);

/* prom.c: the exposition of devs[0..n) (have: a sample exists) with
 * dcgm-exporter's names and labels, Hostname host; sample ages against
 * now_wall_ns, values of samples older than stale_ns left out.  Appends to
 * b. */
typedef struct cli_prom_device {
    uint32_t index;
    char name[GP_NAME_MAX], uuid[GP_NAME_MAX];
    bool have;
    gp_sample sample;
    gp_mig_info mig; /* a MIG instance: dcgm-exporter's labels (prom.c) */
    bool amd;        /* sampled by the amd backend: AMD device-metrics-exporter's names */
    char pci_bus_id[GP_PCI_BUS_ID_MAX]; /* "" unknown: no pci_bus_id label */
    int stuck;                          /* gpu_profile_stuck: 1, 0, or -1 unknown (no line) */
    /* serve --processes (prom_procs.c): the device's processes, procs_have
     * false when none were listed (not asked, or the driver refused). */
    gp_process_use *procs;
    size_t n_procs;
    bool procs_have;
} cli_prom_device;
/* driver: the DCGM_FI_DRIVER_VERSION label ("" or NULL: none). */
void cli_prom_format(fl_buf *b, const cli_prom_device *devs, size_t n, const char *host,
                     const char *driver, uint64_t now_wall_ns, uint64_t stale_ns);
/* The GPU's labels without the closing brace, a label value escaped
 * (prom.c, for prom_procs.c). */
void cli_prom_labels_open(fl_buf *b, const cli_prom_device *d, const char *host,
                          const char *driver);
void cli_prom_label_value(fl_buf *b, const char *s);
/* The per-process families (prom_procs.c): at most max processes per GPU by
 * memory, the rest as pid="other"; proc_root: where /proc is (NULL: /proc).
 * Sorts each device's procs. */
void cli_prom_format_procs(fl_buf *b, cli_prom_device *devs, size_t n, const char *host,
                           const char *driver, size_t max, const char *proc_root,
                           uint64_t now_wall_ns, uint64_t stale_ns);

/* ------------------------------------------------------------------ */
/* Exit statuses, one rule for every subcommand (docs/cli.md "Exit
 * status"): the run form adds CMD's own status, 126 and 127. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1    /* nothing done: no backend, CUPTI failed, nothing read, output lost */
#define CLI_EXIT_PARTIAL 2 /* done, but some input was skipped (report, export) */
#define CLI_EXIT_USAGE                                                                             \
    125 /* a bad option, value or name: nothing was done (run form: CMD                            \
           not run; it also covers "the profiler could not start") */

/* opts_util.c: the options of a subcommand (or the run form) as a table
 * for getopt_long; the help texts, `help --options` and the bash
 * completion are checked or built from the same tables. */
#include <getopt.h>
#define CLI_MAX_OPTS 48
#define CLI_OPT_ERROR (-2)
typedef struct cli_opt {
    const char *name;    /* the long name, without "--" */
    int key;             /* a letter: also -<letter>; >= 256: long only */
    int has_arg;         /* takes a value */
    const char *arg;     /* the value's name in the help ("SECONDS"); "FILE"/"DIR"
                            complete as paths */
    const char *what;    /* what the value must be, for "needs a value: ..." */
    const char *choices; /* the fixed values, space-separated, for completion; NULL */
} cli_opt;
/* The sampler options that several subcommands take, spelt once so that
 * their help and their errors say the same everywhere. */
#define CLI_ROW_DEVICE(k)                                                                          \
    "device", (k), 1, "LIST", "an index, a comma list (0,2), a GPU UUID or all", NULL
/* The backend's rows have the same keys in every table, so that one
 * function (cli_backend_option) applies them; above any table's own. */
enum { CLI_K_BACKEND = 4096, CLI_K_NVML_LIBRARY, CLI_K_SMI_PATH, CLI_K_ROCM_SMI_LIBRARY };
#define CLI_ROW_BACKEND                                                                            \
    "backend", CLI_K_BACKEND, 1, "B", "auto, nvml, smi, amd or none", "auto nvml smi amd none"
#define CLI_ROW_NVML_LIBRARY                                                                       \
    "nvml-library", CLI_K_NVML_LIBRARY, 1, "FILE", "the path of libnvidia-ml.so.1", NULL
#define CLI_ROW_SMI_PATH "smi-path", CLI_K_SMI_PATH, 1, "FILE", "the path of nvidia-smi", NULL
#define CLI_ROW_ROCM_SMI_LIBRARY                                                                   \
    "rocm-smi-library", CLI_K_ROCM_SMI_LIBRARY, 1, "FILE", "the path of librocm_smi64.so", NULL
typedef struct cli_getopt {
    const char *cmd; /* "report", or NULL for the run form */
    const cli_opt *tab;
    size_t n;
    struct option lo[CLI_MAX_OPTS + 1];
    char shorts[2 * CLI_MAX_OPTS + 4];
} cli_getopt;
/* stop_at_cmd: options end at the first word that is not one (the run
 * form: CMD's own options are CMD's); else operands may come anywhere. */
void cli_getopt_init(cli_getopt *g, const char *cmd, const cli_opt *tab, size_t n, int stop_at_cmd);
/* The next option's key, *value its value (never empty); -1 when the
 * options end (optind: the first operand); CLI_OPT_ERROR after a message. */
int cli_getopt_next(cli_getopt *g, int argc, char **argv, const char **value);
/* A command's options (cmd's table tab; cmd NULL: the run form), each to
 * apply: 0 goes on, > 0 stops (the page printed), < 0 a usage error
 * (said).  With usage, -h prints it to stdout.  operands: none (one is a
 * usage error), anywhere among the options, or CMD (the options end at
 * the first word that is not one).  0: the options ended (optind: the
 * first operand), 1: stopped, the page printed, -1: a usage error, said. */
enum { CLI_OPERANDS_NONE, CLI_OPERANDS_ANYWHERE, CLI_OPERANDS_CMD };
int cli_getopt_each(const char *cmd, const cli_opt *tab, size_t n, int operands, int argc,
                    char **argv, void (*usage)(FILE *f),
                    int (*apply)(void *ctx, int key, const char *value), void *ctx);
/* The long name nearest to word (a typo or two away), or NULL. */
const char *cli_opt_nearest(const cli_opt *tab, size_t n, const char *word);
const cli_opt *cli_opt_of(const cli_opt *tab, size_t n, int key);

/* The option tables (each file's own). */
extern const cli_opt cli_run_opts[];
extern const size_t cli_run_n_opts;
extern const cli_opt cli_devices_opts[];
extern const size_t cli_devices_n_opts;
extern const cli_opt cli_logs_opts[]; /* report */
extern const size_t cli_logs_n_opts;
extern const cli_opt cli_export_opts[];
extern const size_t cli_export_n_opts;
extern const cli_opt cli_metrics_opts[];
extern const size_t cli_metrics_n_opts;
extern const cli_opt cli_serve_opts[];
extern const size_t cli_serve_n_opts;
/* upload.c: the first thing main does.  `upload`'s --api-key values are
 * copied away and their bytes in argv overwritten (what /proc/PID/cmdline
 * shows), and every message hides them and GPUFL_API_KEY's value. */
void cli_upload_scrub_argv(int argc, char **argv);
extern const cli_opt cli_upload_opts[];
extern const size_t cli_upload_n_opts;
void cli_upload_usage(FILE *f);
extern const cli_opt cli_help_opts[];
extern const size_t cli_help_n_opts;

/* A subcommand: one row of cli_subs (subcommands.c), the one table main.c
 * dispatches from and help.c lists, pages, completes and suggests from. */
typedef struct cli_sub {
    const char *name;
    int (*main)(int argc, char **argv); /* argv[0] is the name */
    const char *summary, *example;      /* its line in `gpu-profile --help` */
    void (*usage)(FILE *f);             /* its page: `CMD --help`, `help CMD` */
    const cli_opt *opts;                /* its options, for `help --options CMD` */
    const size_t *n_opts;
    int keeps_sigpipe; /* writes to sockets, never stdout: no cli_pipe_default() */
} cli_sub;
extern const cli_sub cli_subs[];
extern const size_t cli_n_subs;
/* help.c: the row named name exactly, or NULL. */
const cli_sub *cli_sub_find(const char *name);

#endif
