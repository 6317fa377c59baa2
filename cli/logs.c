/*
 * logs.c - the commands that read session logs back:
 *
 *   gpu-profile report [--run ID | --session ID] [--app NAME] [--top N] [--by kernel|op|line]
 *                      [--format text|json|html] [--max-distinct N] [--max-memory BYTES]
 *                      [-o FILE] PATH...
 *   gpu-profile export --format chrome-trace|csv|sqlite [--run ID | --session ID] [--app NAME]
 *                      [--max-distinct N] [--max-memory BYTES] [-o FILE] PATH...
 *
 * The sessions of the PATHs are grouped into runs by job_start's run_id
 * (report/runs.h); one run is shown, its processes in the report's run
 * section, and every session of it (or --session's alone) read into the
 * rest, as one (fl_runs_read).
 * PATH is a log directory, a session directory or a flat-layout prefix
 * (reader/read.h); --app NAME is GPUFlight's log_prefix, resolved under PATH
 * as fl_read_session_prefixed says.  The read streams: memory follows the number of distinct
 * kernels and scopes, not the number of events.  Problems in the input are
 * warnings on stderr (the first CLI_MAX_WARNINGS, then a count) and never
 * stop the read.  Exit status: 0 for a complete read, 2 when the output was
 * written but some input was skipped (a partial read), 1 when no session
 * could be read, the read was stopped (more distinct keys than
 * --max-distinct N, more bytes kept than --max-memory BYTES, or out of
 * memory: then nothing is written on stdout) or the output could not be
 * written, 125 for a bad option or a bad GPU_PROFILE_MAX_* variable.
 * Every message goes to stderr.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_WARNINGS 20
#define EXIT_PARTIAL CLI_EXIT_PARTIAL
#define EXIT_NOTHING CLI_EXIT_FAIL

typedef struct warn_ctx {
    const char *cmd;
    uint64_t n;
    fl_read_cb inner; /* the report's or the export's own callbacks */
} warn_ctx;

static void on_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    warn_ctx *w = user;
    if (w->n++ < CLI_MAX_WARNINGS)
        cli_say("%s: %s:%llu: %s", w->cmd, file ? file : "?", (unsigned long long)line, msg);
    if (w->inner.warning)
        w->inner.warning(w->inner.user, file, line, msg);
}

static void on_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    warn_ctx *w = user;
    if (w->inner.record)
        w->inner.record(w->inner.user, channel, t, type, rec);
}

static void on_detail(void *user, int channel, const fl_detail *d)
{
    warn_ctx *w = user;
    w->inner.detail(w->inner.user, channel, d);
}

static void on_batch(void *user, const fl_batch *b)
{
    warn_ctx *w = user;
    if (w->inner.batch)
        w->inner.batch(w->inner.user, b);
}

static const char *on_stop(void *user)
{
    warn_ctx *w = user;
    return w->inner.stop ? w->inner.stop(w->inner.user) : NULL;
}

static int partial(const fl_read_result *r, uint64_t warnings)
{
    return warnings > 0 || r->bad_lines > 0 || r->bad_records > 0 || r->gz_errors > 0 ||
           r->bad_windows > 0 || r->capped_files > 0 || r->unreadable_files > 0 ||
           r->lost_windows > 0;
}

static void say_partial(const char *cmd, const fl_read_result *r, uint64_t warnings)
{
    if (warnings > CLI_MAX_WARNINGS)
        cli_say("%s: %llu more warnings not shown", cmd,
                (unsigned long long)(warnings - CLI_MAX_WARNINGS));
    /* Where the session's cap stopped the read, and the way to raise it,
     * even when the warnings before it filled the ones shown. */
    if (warnings > CLI_MAX_WARNINGS && r->session_capped)
        cli_say("%s: %s", cmd, r->session_capped_why);
    if (!partial(r, warnings))
        return;
    char capped[160] = "", lost[160] = "";
    if (r->capped_files)
        snprintf(capped, sizeof capped, ", %llu files past a cap not read to their end%s",
                 (unsigned long long)r->capped_files,
                 r->session_capped ? " (the session's cap: the files after them not read)" : "");
    if (r->unreadable_files || r->lost_windows)
        snprintf(lost, sizeof lost,
                 ", %llu files that could not be opened, %llu windows lost in "
                 "transport",
                 (unsigned long long)r->unreadable_files, (unsigned long long)r->lost_windows);
    cli_say("%s: partial read of %s: %llu unreadable lines, %llu unusable records, %llu broken "
            "gzip streams skipped, %llu windows not matching their sidecar, %llu records of "
            "unknown types not read%s%s",
            cmd, r->session_dir, (unsigned long long)r->bad_lines,
            (unsigned long long)r->bad_records, (unsigned long long)r->gz_errors,
            (unsigned long long)r->bad_windows, (unsigned long long)r->unknown_types, capped, lost);
}

/* Writes text to -o FILE (or stdout); 0 or -1 after a message. */
static int write_out(const char *cmd, const char *path, const char *text, size_t len)
{
    char msg[CLI_OUTFILE_PATH_MAX + 256];
    if (!path) {
        size_t w = fwrite(text, 1, len, stdout);
        if (w != len || fflush(stdout) != 0) {
            cli_stdout_failed(cmd);
            return -1;
        }
        return 0;
    }
    cli_outfile of;
    if (cli_outfile_open(&of, path, msg, sizeof msg) != 0) {
        cli_say("%s: %s", cmd, msg);
        return -1;
    }
    size_t w = fwrite(text, 1, len, of.f); /* a short write sets the stream's error: */
    (void)w;                               /* the commit says why */
    if (cli_outfile_commit(&of, msg, sizeof msg) != 0) {
        cli_say("%s: %s", cmd, msg);
        return -1;
    }
    return 0;
}

#define MAX_PATHS 64

typedef struct log_args {
    const char *cmd; /* "report" or "export", for messages */
    const char *session;
    const char *run; /* --run ID */
    const char *paths[MAX_PATHS];
    size_t n_paths;
    const char *app;
    const char *format;
    const char *output;
    const char *path;
    int top;
    uint64_t max_distinct; /* 0: the default (GPU_PROFILE_MAX_DISTINCT, else 2^20) */
    uint64_t max_memory;   /* bytes; 0: the default (GPU_PROFILE_MAX_MEMORY, else 384 MiB) */
    int absolute_time;     /* export --absolute-time: Chrome trace ts from the Unix epoch */
    int by;                /* report --by: FL_BY_* */
} log_args;

void cli_report_usage(FILE *f)
{
    fputs("usage: gpu-profile report [--run ID | --session ID] [--app NAME] [--top N]\n"
          "                          [--by kernel|op|line]\n"
          "                          [--format " FL_REPORT_FORMAT_NAMES_BAR "] [--max-distinct N]\n"
          "                          [--max-memory BYTES]\n"
          "                          [-o|--output FILE] PATH...\n"
          "\n"
          "Reads GPUFlight sessions (PATH: a log directory, a session directory - its\n"
          "windows <channel>.<N>.log[.gz], <channel>.log, a live or crashed session's\n"
          ".tmp/<channel>.log - or a flat-layout prefix, <prefix>.<channel>[.<N>].log[.gz])\n"
          "and prints the report: the run (every process of it, by rank: GPU time,\n"
          "kernels, copies, sync wait, NCCL share, busiest kernel; stragglers; clocks;\n"
          "the other runs), summary, scopes, kernel hotspots, memcpy, device and host\n"
          "metrics, what was captured.  Sessions are grouped into runs by their run id\n"
          "(several PATHs - one per host - merge into one run); the run shown is the\n"
          "one holding the session written last unless --run ID or --session ID picks\n"
          "(an ID that is not there: exit 125, listing those that are); the other\n"
          "sections cover the whole run (kernels merged by name, copies summed, the\n"
          "devices from gpu-profile's own session), or --session's process alone.\n"
          "--app NAME (GPUFlight's log_prefix, one PATH): the\n"
          "flat files PATH/NAME.<channel>[.<N>].log[.gz], else the directory PATH/NAME, else\n"
          "the latest session in PATH whose job_start app is NAME.  Exit status 2\n"
          "when some input had to be skipped (the warnings say where), 1 when\n"
          "nothing could be read, or the session has more than --max-distinct N\n"
          "distinct kernel ids, names, scopes and correlation ids (default\n"
          "GPU_PROFILE_MAX_DISTINCT, else 1048576), or would keep more than\n"
          "--max-memory BYTES of them - names, stacks, details, tables (default\n"
          "GPU_PROFILE_MAX_MEMORY, else 402653184: about 0.5 GiB resident) - or memory\n"
          "ran out.\n"
          "--format html: one self-contained page (no network): the headline, device\n"
          "charts, sortable hotspots, a zoomable timeline, stalls, SASS and perf metrics,\n"
          "the run's ranks (docs/report.md, \"The HTML report\").\n"
          "--by op|line: the hotspots grouped by framework op (CUPTI external correlation:\n"
          "gpufl.torch) or by the source line that launched them (the innermost frame of\n"
          "the launch's CPU stack that is the program's); kernel (the default): by kernel.\n"
          "-o FILE is written whole or not at all (-o -: stdout).  -h, --help: this text.\n",
          f);
}

void cli_export_usage(FILE *f)
{
    fputs("usage: gpu-profile export --format " FL_EXPORT_NAMES_BAR " [--run ID | --session ID]\n"
          "                          [--app NAME] [--max-distinct N] [--max-memory BYTES]\n"
          "                          [--absolute-time] [-o|--output FILE] PATH...\n"
          "\n",
          f);
    /* Each exporter's row says what it writes: "name: help;" and the
     * last one "name: help." */
    for (int i = 0; i < FL_EXPORT_N; i++)
        fprintf(f, "%s: %s%s", fl_exporters[i].name, fl_exporters[i].help,
                i + 1 < FL_EXPORT_N ? ";\n" : ".\n");
    fputs("Streams: any size of session.  A run of several processes: chrome-trace and\n"
          "csv write every one (a pid block each on one time axis; CSV rows end pid,rank),\n"
          "sqlite the one report's other sections give (said on stderr); --session ID: one\n"
          "session.  PATH, --run, --session,\n"
          "--app, --max-distinct N and --max-memory BYTES as for gpu-profile report.\n"
          "--absolute-time (chrome-trace): timestamps from the Unix epoch instead of the\n"
          "session's start, so traces of other tools line up.  -o -: stdout, as without -o.\n"
          "-h, --help: this text.\n",
          f);
}

enum {
    K_SESSION = 256,
    K_APP,
    K_TOP,
    K_FORMAT,
    K_MAX_DISTINCT,
    K_MAX_MEMORY,
    K_ABSOLUTE_TIME,
    K_RUN,
    K_BY
};
/* logs (report) and export read a log directory alike: the options they
 * share are written once, in the order both list them. */
/* clang-format off */
#define LOGDIR_OPTS_HEAD                                                                           \
    {"session", K_SESSION, 1, "ID", "a session id", NULL},                                         \
    {"run", K_RUN, 1, "ID", "a run id", NULL},                                                     \
    {"app", K_APP, 1, "NAME", "a non-empty NAME", NULL}
#define LOGDIR_OPTS_TAIL                                                                           \
    {"max-distinct", K_MAX_DISTINCT, 1, "N", "a whole number from 1", NULL},                       \
    {"max-memory", K_MAX_MEMORY, 1, "BYTES", "a whole number of bytes from 1", NULL},              \
    {"output", 'o', 1, "FILE", "a file name (- for stdout)", NULL},                                \
    {"help", 'h', 0, NULL, NULL, NULL}
/* clang-format on */
const cli_opt cli_logs_opts[] = {
    LOGDIR_OPTS_HEAD,
    {"top", K_TOP, 1, "N", "a whole number from 1 to 100000", NULL},
    {"format", K_FORMAT, 1, "FORMAT", FL_REPORT_FORMAT_NAMES_OR, FL_REPORT_FORMAT_NAMES_SP},
    {"by", K_BY, 1, "WHAT", FL_BY_NAMES_OR, "kernel op line"},
    LOGDIR_OPTS_TAIL,
};
const size_t cli_logs_n_opts = sizeof cli_logs_opts / sizeof cli_logs_opts[0];
/* export: the same without --top, with --absolute-time. */
const cli_opt cli_export_opts[] = {
    LOGDIR_OPTS_HEAD,
    {"format", K_FORMAT, 1, "FORMAT", FL_EXPORT_NAMES_OR, FL_EXPORT_NAMES_SP},
    LOGDIR_OPTS_TAIL,
    {"absolute-time", K_ABSOLUTE_TIME, 0, NULL, NULL, NULL},
};
const size_t cli_export_n_opts = sizeof cli_export_opts / sizeof cli_export_opts[0];

/* One option into a (log_args); -1 after a message. */
static int apply(void *ctx, int key, const char *val)
{
    log_args *a = ctx;
    const char *cmd = a->cmd;
    if (key == K_ABSOLUTE_TIME) {
        a->absolute_time = 1;
    } else if (key == K_SESSION) {
        a->session = val;
    } else if (key == K_RUN) {
        a->run = val;
    } else if (key == K_APP) {
        a->app = val;
    } else if (key == K_FORMAT) {
        a->format = val;
    } else if (key == K_BY) {
        a->by = fl_report_by_of(val);
        if (a->by < 0) {
            cli_say("%s: --by '%s': use " FL_BY_NAMES_OR, cmd, val);
            return -1;
        }
    } else if (key == K_TOP) {
        char *end = NULL;
        long n = strtol(val, &end, 10);
        if (!*val || *end || n < 1 || n > 100000) {
            cli_say("%s: --top '%s': use a whole number from 1 to 100000", cmd, val);
            return -1;
        }
        a->top = (int)n;
    } else if (key == K_MAX_DISTINCT) {
        if (gp_parse_count(val, &a->max_distinct) != 0) {
            cli_say("%s: --max-distinct '%s': use a whole number from 1", cmd, val);
            return -1;
        }
    } else if (key == K_MAX_MEMORY) {
        if (gp_parse_count(val, &a->max_memory) != 0) {
            cli_say("%s: --max-memory '%s': use a whole number of bytes from 1 (1073741824 for "
                    "1 GiB)",
                    cmd, val);
            return -1;
        }
    } else {
        a->output = strcmp(val, "-") == 0 ? NULL : val; /* "-": stdout, as without -o */
    }
    return 0;
}

/* -1: usage error (after a message), 1: --help printed, 0: go. */
static int parse(const char *cmd, int argc, char **argv, log_args *a, void (*usage)(FILE *))
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->top = 10;
    int exp = strcmp(cmd, "export") == 0;
    int p = cli_getopt_each(cmd, exp ? cli_export_opts : cli_logs_opts,
                            exp ? cli_export_n_opts : cli_logs_n_opts, CLI_OPERANDS_ANYWHERE, argc,
                            argv, usage, apply, a);
    if (p != 0)
        return p;
    for (int i = optind; i < argc; i++) {
        if (a->n_paths == MAX_PATHS) {
            cli_say("%s: at most %d PATHs ('%s' is one more)", cmd, MAX_PATHS, argv[i]);
            return -1;
        }
        a->paths[a->n_paths++] = argv[i];
        if (!a->path)
            a->path = argv[i];
    }
    if (a->n_paths > 1 && a->app) {
        cli_say("%s: --app NAME reads one PATH (%zu given): give one log directory with --app, "
                "or several without it",
                cmd, a->n_paths);
        return -1;
    }
    if (a->run && a->session) {
        cli_say("%s: --run and --session both pick what is shown: give one", cmd);
        return -1;
    }
    if (!a->path) {
        cli_say("%s: PATH is missing", cmd);
        usage(stderr);
        return -1;
    }
    /* The GPU_PROFILE_MAX_* variables as strictly as the options. */
    gp_error ge;
    if (fl_report_env_check(&ge) != GP_OK) {
        cli_say("%s: %s", cmd, ge.message);
        return -1;
    }
    return 0;
}

/* Reads the session at a->path into inner (the report's or the export's
 * callbacks), warnings on stderr; 0, or -1 after saying why. */
static int read_into(const char *cmd, const log_args *a, const fl_runs *run,
                     const fl_read_cb *inner, warn_ctx *w, fl_read_result *res)
{
    *w = (warn_ctx){.cmd = cmd, .n = 0, .inner = *inner};
    fl_read_cb cb = {
        .user = w, .record = on_record, .batch = on_batch, .warning = on_warning, .stop = on_stop};
    if (inner->detail) /* kernel_details without jansson (reader/detail.c) */
        cb.detail = on_detail;
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.session_id = a->session;
    gp_error ge;
    /* A run of several sessions: all of them, as one (report/runs.h). */
    gp_status st = run ? fl_runs_read(run, a->session, &o, &cb, res, &ge)
                       : fl_read_session_prefixed(a->path, a->app, &o, &cb, res, &ge);
    if (st != GP_OK) {
        cli_say("%s: %s", cmd, ge.message);
        return -1;
    }
    return 0;
}

/* The run the log directories hold (docs/report.md, "Runs"): 1 with rs
 * filled and a->path the session the report reads; 0 when the paths are
 * no log or session directories to group (a flat layout, --app): read as
 * before; -1 after a message, *code the exit status. */
static int resolve_run(const char *cmd, log_args *a, fl_runs *rs, int *code)
{
    fl_runs_init(rs);
    if (a->app) {
        if (!a->run)
            return 0;
        cli_say("%s: --run picks among the runs of log directories; --app NAME reads one "
                "session: give one of them",
                cmd);
        *code = CLI_EXIT_USAGE;
        return -1;
    }
    gp_error ge;
    gp_status st = fl_runs_scan(rs, a->paths, a->n_paths, &ge);
    if (st != GP_OK && a->n_paths == 1 && !a->run && st != GP_ERR_NO_MEMORY) {
        fl_runs_free(rs); /* a flat layout, a channel file: the reader's own rules */
        return 0;
    }
    if (st == GP_OK)
        st = fl_runs_pick(rs, a->run, a->session, &ge);
    if (st != GP_OK) {
        cli_say("%s: %s", cmd, ge.message);
        *code = st == GP_ERR_INVALID_ARG ? CLI_EXIT_USAGE : EXIT_NOTHING;
        fl_runs_free(rs);
        return -1;
    }
    /* Each session's figures cost a read of it: a lone session (one run of
     * one session, the common case) needs none, and export would read it
     * twice. */
    if (rs->ng > 1 || rs->g[rs->shown].n > 1)
        fl_runs_figures(rs);
    const fl_runs_session *p = fl_runs_primary(rs, a->session);
    a->path = p->dir;
    return 1;
}

/* Whether the report shows the run: several processes, or other runs
 * to list (a run of one session is the session's report as it was). */
static bool run_worth_showing(const fl_runs *rs)
{
    return rs->shown < rs->ng && (rs->g[rs->shown].n > 1 || rs->ng > 1);
}

int cli_report_main(int argc, char **argv)
{
    log_args a;
    int p = parse("report", argc, argv, &a, cli_report_usage);
    if (p)
        return p > 0 ? 0 : CLI_EXIT_USAGE;
    int fi = a.format ? fl_report_format_of(a.format) : FL_REPORT_FMT_TEXT;
    if (fi < 0) {
        cli_say("report: --format '%s': use " FL_REPORT_FORMAT_NAMES_OR, a.format);
        return CLI_EXIT_USAGE;
    }
    const fl_report_format *fmt = &fl_report_formats[fi];
    fl_runs rs;
    int code = 0;
    int have_run = resolve_run("report", &a, &rs, &code);
    if (have_run < 0)
        return code;
    fl_report *r = fl_report_create();
    fl_html *h = r && fmt->timeline ? fl_html_create() : NULL;
    if (!r || (fmt->timeline && !h)) {
        fl_report_destroy(r);
        cli_say("report: out of memory");
        fl_runs_free(&rs);
        return EXIT_NOTHING;
    }
    if (have_run && run_worth_showing(&rs))
        fl_report_set_runs(r, &rs, a.session);
    fl_report_set_by(r, a.by);
    if (a.max_distinct)
        fl_report_set_max_distinct(r, a.max_distinct);
    if (a.max_memory)
        fl_report_set_max_memory(r, a.max_memory);
    warn_ctx w;
    fl_read_cb inner, rcb;
    fl_report_callbacks(r, &rcb);
    inner = rcb;
    if (h) /* the page's timeline reads beside the report */
        fl_html_tee(h, &rcb, &inner);
    fl_read_result res;
    bool whole_run = have_run && rs.g[rs.shown].n > 1;
    if (read_into("report", &a, whole_run ? &rs : NULL, &inner, &w, &res) != 0) {
        fl_report_destroy(r);
        fl_html_destroy(h);
        fl_runs_free(&rs);
        return EXIT_NOTHING;
    }
    fl_report_finish(r, &res);
    fl_html_finish(h);
    fl_buf out = {0};
    /* Short of memory, the figures are short: no report rather than a
     * wrong one (an allocation failed after the read, e.g. at the end). */
    bool oom = fl_report_out_of_memory(r);
    if (!oom)
        fmt->render(r, h, a.top, 0, &out);
    fl_report_destroy(r);
    fl_html_destroy(h);
    fl_runs_free(&rs);
    oom |= out.oom;
    code = oom ? -1 : write_out("report", a.output, out.p ? out.p : "", out.len);
    if (oom)
        cli_say("report: %s: out of memory: no report written; give the process more memory, or "
                "lower --max-memory BYTES (GPU_PROFILE_MAX_MEMORY) to be stopped at a limit "
                "instead",
                res.session_dir);
    fl_buf_free(&out);
    say_partial("report", &res, w.n);
    if (code != 0)
        return EXIT_NOTHING;
    return partial(&res, w.n) ? EXIT_PARTIAL : 0;
}

/* A run's processes in the order the export writes them (report/runs.h), the
 * directory breaking a tie. */
static int by_rank(const void *pa, const void *pb)
{
    const fl_runs_session *a = *(const fl_runs_session *const *)pa;
    const fl_runs_session *b = *(const fl_runs_session *const *)pb;
    int c = fl_runs_rank_order(a, b);
    return c ? c : strcmp(a->dir, b->dir);
}

/* Reads the sessions into e: procs NULL for the one session of a->path,
 * else each of the run's n processes in turn (docs/report.md, "Export of
 * a run").  0, 1 when some input was skipped (said), or -1 after a
 * message; *res the last read's. */
static int export_read(log_args *a, fl_export *e, fl_runs_session **procs, size_t n,
                       fl_read_result *res)
{
    fl_read_cb inner;
    fl_export_callbacks(e, &inner);
    warn_ctx w;
    if (!procs) {
        if (read_into("export", a, NULL, &inner, &w, res) != 0)
            return -1;
        say_partial("export", res, w.n);
        return partial(res, w.n) ? 1 : 0;
    }
    uint64_t origin_ns = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (procs[i]->have_start && procs[i]->start_ns < origin_ns)
            origin_ns = procs[i]->start_ns;
    int part = 0;
    for (size_t i = 0; i < n; i++) {
        const fl_runs_session *s = procs[i];
        fl_export_process p = {.index = (unsigned)i,
                               .pid = s->pid,
                               .rank = s->rank,
                               .have_pid = s->have_pid,
                               .have_rank = s->have_rank,
                               .host = s->host,
                               .kind = s->kind,
                               .origin_ns = origin_ns == UINT64_MAX ? 0 : origin_ns};
        if (fl_export_begin_process(e, &p) != 0) {
            cli_say("export: out of memory");
            return -1;
        }
        a->path = s->dir;
        if (read_into("export", a, NULL, &inner, &w, res) != 0)
            return -1;
        say_partial("export", res, w.n);
        part |= partial(res, w.n);
    }
    return part;
}

/* The export's output: -o FILE (a temporary renamed into place) or stdout;
 * 0, or the exit status after a message. */
static int export_open(const log_args *a, int fmt, cli_outfile *of, fl_export **ep)
{
    char msg[CLI_OUTFILE_PATH_MAX + 256];
    bool to_file = fl_export_writes_file((fl_export_format)fmt);
    if (to_file && !a->output) {
        cli_say("export: --format %s writes a database file, not a stream: give it -o FILE",
                fl_exporters[fmt].name);
        return CLI_EXIT_USAGE;
    }
    if (a->absolute_time && !fl_exporters[fmt].absolute_time) {
        char takers[256] = "";
        for (int i = 0; i < FL_EXPORT_N; i++)
            if (fl_exporters[i].absolute_time)
                snprintf(takers + strlen(takers), sizeof takers - strlen(takers), "%s%s",
                         takers[0] ? " or " : "", fl_exporters[i].name);
        cli_say("export: --absolute-time is for --format %s", takers);
        return CLI_EXIT_USAGE;
    }
    *of = (cli_outfile){.f = stdout, .direct = 1};
    if (a->output && cli_outfile_open(of, a->output, msg, sizeof msg) != 0) {
        cli_say("export: %s", msg);
        return EXIT_NOTHING;
    }
    if (to_file && !cli_outfile_tmp(of)) {
        cli_say("export: -o '%s' is not a regular file: --format %s writes a database, give it "
                "the path of a file to create or replace",
                a->output, fl_exporters[fmt].name);
        cli_outfile_abort(of);
        return CLI_EXIT_USAGE;
    }
    fl_export *e = fl_export_create((fl_export_format)fmt, of->f);
    if (!e) {
        cli_say("export: out of memory");
        if (a->output)
            cli_outfile_abort(of);
        return EXIT_NOTHING;
    }
    if (to_file && fl_export_set_file(e, cli_outfile_tmp(of)) != 0) {
        cli_say("export: cannot write '%s': %s", a->output, fl_export_error(e));
        fl_export_destroy(e);
        cli_outfile_abort(of);
        return EXIT_NOTHING;
    }
    if (a->max_distinct)
        fl_export_set_max_distinct(e, a->max_distinct);
    if (a->max_memory)
        fl_export_set_max_memory(e, a->max_memory);
    fl_export_set_absolute_time(e, a->absolute_time != 0);
    *ep = e;
    return 0;
}

int cli_export_main(int argc, char **argv)
{
    log_args a;
    int p = parse("export", argc, argv, &a, cli_export_usage);
    if (p)
        return p > 0 ? 0 : CLI_EXIT_USAGE;
    int fmt = fl_export_format_of(a.format);
    if (fmt < 0) {
        cli_say("export: --format %s%s%s: use " FL_EXPORT_NAMES_OR, a.format ? "'" : "",
                a.format ? a.format : "is missing", a.format ? "'" : "");
        return CLI_EXIT_USAGE;
    }
    fl_runs rs;
    int code = 0;
    int have_run = resolve_run("export", &a, &rs, &code);
    if (have_run < 0)
        return code;
    /* A run of several processes: every one of them, where the format
     * takes a run; else the one session, said on stderr. */
    fl_runs_session **procs = NULL;
    size_t n = 0;
    if (have_run && rs.g[rs.shown].n > 1 && !a.session) {
        const fl_runs_group *g = &rs.g[rs.shown];
        if (fl_export_takes_run((fl_export_format)fmt)) {
            procs = calloc(g->n, sizeof *procs);
            if (!procs) {
                cli_say("export: out of memory");
                fl_runs_free(&rs);
                return EXIT_NOTHING;
            }
            for (size_t i = 0; i < g->n; i++)
                procs[n++] = &rs.s[g->idx[i]];
            qsort(procs, n, sizeof *procs, by_rank);
        } else {
            const fl_runs_session *ps = fl_runs_primary(&rs, NULL);
            cli_say("export: run %s has %zu sessions: --format %s writes one, %s (%s); "
                    "--session ID for another",
                    g->run_id ? g->run_id : "n/a", g->n, fl_exporters[fmt].name,
                    ps->session_id ? ps->session_id : ps->dir, "the run's most GPU time");
        }
    }
    cli_outfile of;
    fl_export *e = NULL;
    code = export_open(&a, fmt, &of, &e);
    if (code != 0) {
        free(procs);
        fl_runs_free(&rs);
        return code;
    }
    char msg[CLI_OUTFILE_PATH_MAX + 256];
    fl_read_result res;
    int part = export_read(&a, e, procs, n, &res);
    if (part < 0) {
        code = EXIT_NOTHING;
    } else if (fl_export_finish(e, &res) != 0 || fflush(of.f) != 0) {
        if (a.output)
            cli_say("export: cannot write '%s': %s", a.output,
                    fl_export_error(e) ? fl_export_error(e) : strerror(errno));
        else
            cli_stdout_failed("export");
        code = EXIT_NOTHING;
    }
    fl_export_destroy(e);
    free(procs);
    fl_runs_free(&rs);
    if (a.output && code != 0) {
        cli_outfile_abort(&of); /* FILE as it was: no half export */
    } else if (a.output && cli_outfile_commit(&of, msg, sizeof msg) != 0) {
        cli_say("export: %s", msg);
        code = EXIT_NOTHING;
    }
    if (code == 0 && part > 0)
        code = EXIT_PARTIAL;
    return code;
}
