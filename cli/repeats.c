/*
 * repeats.c - `gpu-profile --repeats N --warmup-runs M -- CMD`: CMD run M
 * times unmeasured, then N times each measured as its own region of the
 * same monitor.  Promises: each measured run's summaries are kept whole;
 * a run that fails (non-zero status, a signal, not executable) or that
 * gpu-profile was interrupted during ends the series, and the report says
 * so and covers the runs done; the figures across runs are
 * gp_run_stats_compute's (mean, sample std, min, max), a metric a run did
 * not measure left out of them, never counted as 0.  docs/cli.md,
 * "Repeated runs".
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* ------------------------------------------------------------ the metrics */

enum unit { U_PCT, U_BYTES, U_MW, U_J, U_C, U_MHZ, U_S };

/* The figures compared across runs, one row each: the summary's JSON key,
 * the text label, and the value (NaN when the run did not measure it). */
typedef struct run_metric {
    const char *key;
    const char *label;
    enum unit unit;
    double (*get)(const gp_summary *s);
} run_metric;

static double known(const gp_summary *s, uint32_t bit, double v)
{
    return (s->valid & bit) ? v : NAN;
}

static double m_util(const gp_summary *s)
{
    return known(s, GP_M_UTIL_GPU, s->util_gpu_mean);
}
static double m_util_mem(const gp_summary *s)
{
    return known(s, GP_M_UTIL_MEM, s->util_mem_mean);
}
static double m_mem(const gp_summary *s)
{
    return known(s, GP_M_MEM_USED, (double)s->mem_used_max_bytes);
}
static double m_power(const gp_summary *s)
{
    return known(s, GP_M_POWER, s->power_mean_mw);
}
static double m_energy(const gp_summary *s)
{
    return s->energy_source != GP_ENERGY_NONE ? s->energy_j : NAN;
}
static double m_temp(const gp_summary *s)
{
    return known(s, GP_M_TEMP, (double)s->temp_max_c);
}
static double m_clock(const gp_summary *s)
{
    return known(s, GP_M_CLOCK_SM, s->clock_sm_mean_mhz);
}
static double m_busy(const gp_summary *s)
{
    return known(s, GP_M_UTIL_GPU, s->busy_time_est_s);
}

static const run_metric metrics[] = {
    {"util_gpu_mean_pct", "util.gpu mean", U_PCT, m_util},
    {"util_mem_mean_pct", "util.mem mean", U_PCT, m_util_mem},
    {"mem_used_max_bytes", "memory used max", U_BYTES, m_mem},
    {"power_mean_mw", "power mean", U_MW, m_power},
    {"energy_j", "energy", U_J, m_energy},
    {"temp_max_c", "temperature max", U_C, m_temp},
    {"clock_sm_mean_mhz", "SM clock mean", U_MHZ, m_clock},
    {"busy_time_est_s", "busy time est.", U_S, m_busy},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

/* ------------------------------------------------------------ the series */

int cli_repeats_init(cli_repeats *rp, const cli_opts *o, size_t n_dev)
{
    memset(rp, 0, sizeof *rp);
    rp->repeats = o->repeats;
    rp->warmup_runs = o->warmup_runs;
    rp->n_dev = n_dev;
    rp->res = calloc((size_t)o->repeats, sizeof *rp->res);
    rp->sums = n_dev ? calloc((size_t)o->repeats * n_dev, sizeof *rp->sums) : NULL;
    if (!rp->res || (n_dev && !rp->sums)) {
        cli_repeats_free(rp);
        cli_say("out of memory for %d runs' summaries", o->repeats);
        return -1;
    }
    return 0;
}

void cli_repeats_free(cli_repeats *rp)
{
    free(rp->res);
    free(rp->sums);
    rp->res = NULL;
    rp->sums = NULL;
}

/* A run that gives no reason to go on: it ran and exited 0, and nobody
 * asked gpu-profile to stop. */
static int run_ok(const cli_run_result *res)
{
    return !res->exec_errno && !res->term_signal && res->exit_code == 0 && !res->interrupted_by;
}

int cli_repeats_add(cli_repeats *rp, gp_monitor *mon, const cli_run_result *res)
{
    if (rp->done >= rp->repeats)
        return 0;
    rp->res[rp->done] = *res;
    for (size_t i = 0; i < rp->n_dev; i++) {
        const gp_summary *s = gp_monitor_summary(mon, i);
        if (s)
            rp->sums[(size_t)rp->done * rp->n_dev + i] = *s;
    }
    rp->done++;
    return rp->done < rp->repeats && run_ok(res);
}

int cli_warmup_runs(const cli_opts *o, const cli_signals *sig, int lib_may_fork,
                    cli_run_result *res)
{
    for (int k = 1; k <= o->warmup_runs; k++) {
        char msg[256];
        if (cli_run_child(o->cmd, NULL, sig, !o->wait_primary, lib_may_fork, NULL, NULL, res, msg,
                          sizeof msg) < 0) {
            cli_say("%s", msg);
            res->exit_code = CLI_EXIT_PROFILER;
            return 1;
        }
        if (res->exec_errno)
            return 1; /* the caller says why, as for a measured run */
        if (!run_ok(res)) {
            char name[32];
            if (res->interrupted_by)
                cli_say("warmup run %d of %d: gpu-profile got %s: no run was measured", k,
                        o->warmup_runs, cli_signal_name(res->interrupted_by, name, sizeof name));
            else if (res->term_signal)
                cli_say("warmup run %d of %d: the command was killed by %s: no run was measured", k,
                        o->warmup_runs, cli_signal_name(res->term_signal, name, sizeof name));
            else
                cli_say("warmup run %d of %d: the command exited with status %d: no run was "
                        "measured",
                        k, o->warmup_runs, res->exit_code);
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ rendering */

static void series(const cli_repeats *rp, size_t dev, const run_metric *m, gp_run_stats *st)
{
    double v[CLI_MAX_RUNS];
    for (int r = 0; r < rp->done; r++)
        v[r] = m->get(&rp->sums[(size_t)r * rp->n_dev + dev]);
    gp_run_stats_compute(v, (size_t)rp->done, st, NULL);
}

static void durations(const cli_repeats *rp, gp_run_stats *st)
{
    double v[CLI_MAX_RUNS];
    for (int r = 0; r < rp->done; r++)
        v[r] = rp->res[r].cmd_s;
    gp_run_stats_compute(v, (size_t)rp->done, st, NULL);
}

/* One value in the unit's text form (the unit left off with bare, for a
 * range's low end); n/a when unknown. */
static void put_num(FILE *f, enum unit u, double v, double scale_bytes, int bare)
{
    if (!isfinite(v)) {
        fputs("n/a", f);
        return;
    }
    /* Each unit's text form: the value over div with prec decimals; bytes
     * in GiB once the series reaches one. */
    static const struct {
        double div;
        int prec;
        const char *unit;
    } forms[] = {
        [U_PCT] = {1.0, 1, "%"},    [U_BYTES] = {1048576.0, 1, " MiB"},
        [U_MW] = {1000.0, 1, " W"}, [U_J] = {1.0, 1, " J"},
        [U_C] = {1.0, 1, " C"},     [U_MHZ] = {1.0, 0, " MHz"},
        [U_S] = {1.0, 3, " s"},
    };
    double div = forms[u].div;
    int prec = forms[u].prec;
    const char *unit = forms[u].unit;
    if (u == U_BYTES && scale_bytes >= 1073741824.0) {
        div = 1073741824.0;
        prec = 2;
        unit = " GiB";
    }
    fprintf(f, "%.*f", prec, v / div);
    if (!bare)
        fputs(unit, f);
}

static void put_value(FILE *f, enum unit u, double v, double scale_bytes)
{
    put_num(f, u, v, scale_bytes, 0);
}

/* "87.3% ± 1.2%  (range 85.6-89.1%)": the mean, the sample std, the range;
 * "n/a" for a metric no run measured. */
static void put_stats(FILE *f, enum unit u, const gp_run_stats *st, int ascii)
{
    if (st->n == 0) {
        fputs("n/a", f);
        return;
    }
    double scale = st->max;
    put_value(f, u, st->mean, scale);
    fputs(ascii ? " +/- " : " \xc2\xb1 ", f);
    put_value(f, u, st->std, scale);
    fputs("  (range ", f);
    put_num(f, u, st->min, scale, 1);
    fputc('-', f);
    put_value(f, u, st->max, scale);
    fputc(')', f);
    if (st->n_unknown)
        fprintf(f, ", %llu of %llu runs", (unsigned long long)st->n,
                (unsigned long long)(st->n + st->n_unknown));
}

static void label(FILE *f, const char *text)
{
    fprintf(f, "  %-18s", text);
}

/* Why the series ended before its N runs, or "". */
static void stop_reason(const cli_repeats *rp, char *buf, size_t len)
{
    buf[0] = '\0';
    if (rp->done >= rp->repeats || rp->done == 0)
        return;
    const cli_run_result *last = &rp->res[rp->done - 1];
    char name[32];
    if (last->interrupted_by)
        snprintf(buf, len, "stopped after run %d: gpu-profile got %s", rp->done,
                 cli_signal_name(last->interrupted_by, name, sizeof name));
    else if (last->term_signal)
        snprintf(buf, len, "stopped after run %d: it was killed by %s", rp->done,
                 cli_signal_name(last->term_signal, name, sizeof name));
    else if (last->exit_code != 0)
        snprintf(buf, len, "stopped after run %d: it exited with status %d", rp->done,
                 last->exit_code);
    else
        snprintf(buf, len, "stopped after run %d", rp->done);
}

void cli_repeats_text(const cli_repeats *rp, int ascii, FILE *f)
{
    char why[128];
    stop_reason(rp, why, sizeof why);
    label(f, "runs");
    fprintf(f, "%d of %d measured", rp->done, rp->repeats);
    if (rp->warmup_runs)
        fprintf(f, " after %d warmup run%s (not measured)", rp->warmup_runs,
                rp->warmup_runs == 1 ? "" : "s");
    fputc('\n', f);
    if (why[0])
        fprintf(f, "%20s%s\n", "", why);
    fprintf(f, "%20sacross runs: mean %s std (range)", "", ascii ? "+/-" : "\xc2\xb1");
    if (rp->n_dev)
        fprintf(f, "; above: run %d's summary", rp->done);
    fputc('\n', f);
    gp_run_stats st;
    durations(rp, &st);
    label(f, "duration");
    put_stats(f, U_S, &st, ascii);
    fputc('\n', f);
    for (size_t d = 0; d < rp->n_dev; d++) {
        const gp_summary *first = &rp->sums[d];
        char name[GP_NAME_MAX + 1];
        snprintf(name, sizeof name, "%.*s", (int)sizeof first->name, first->name);
        cli_clean_text(name); /* the backend's text, to a terminal */
        fprintf(f, "GPU %u%s%s\n", (unsigned)first->device_index, name[0] ? "  " : "", name);
        for (size_t k = 0; k < N_METRICS; k++) {
            series(rp, d, &metrics[k], &st);
            label(f, metrics[k].label);
            put_stats(f, metrics[k].unit, &st, ascii);
            fputc('\n', f);
        }
        for (int r = 0; r < rp->done; r++) {
            const gp_summary *s = &rp->sums[(size_t)r * rp->n_dev + d];
            char run[24];
            snprintf(run, sizeof run, "run %d", r + 1);
            label(f, run);
            fputs("util.gpu mean ", f);
            put_value(f, U_PCT, m_util(s), 0);
            fputs("  power mean ", f);
            put_value(f, U_MW, m_power(s), 0);
            fputs("  ", f);
            put_value(f, U_S, rp->res[r].cmd_s, 0);
            fputc('\n', f);
        }
    }
    if (rp->n_dev == 0) {
        for (int r = 0; r < rp->done; r++) {
            char run[24];
            snprintf(run, sizeof run, "run %d", r + 1);
            label(f, run);
            put_value(f, U_S, rp->res[r].cmd_s, 0);
            fputc('\n', f);
        }
    }
}

static void json_stats(fl_buf *b, const gp_run_stats *st)
{
    fl_buf_puts(b, "{\"n\":");
    fl_buf_u64(b, st->n);
    fl_buf_member_opt_double(b, "mean", true, st->mean);
    fl_buf_member_opt_double(b, "std", true, st->std);
    fl_buf_member_opt_double(b, "min", true, st->min);
    fl_buf_member_opt_double(b, "max", true, st->max);
    fl_buf_puts(b, "}");
}

static void json_run(const cli_repeats *rp, int r, fl_buf *b)
{
    const cli_run_result *res = &rp->res[r];
    char name[32];
    fl_buf_printf(b, "{\"run\":%d,\"exit_status\":%d,\"signal\":", r + 1, res->exit_code);
    fl_buf_str(b, res->term_signal ? cli_signal_name(res->term_signal, name, sizeof name) : NULL);
    fl_buf_puts(b, ",\"duration_s\":");
    fl_buf_double(b, res->cmd_s);
    fl_buf_puts(b, ",\"devices\":[");
    for (size_t d = 0; d < rp->n_dev; d++) {
        const gp_summary *s = &rp->sums[(size_t)r * rp->n_dev + d];
        if (cli_summary_json(b, s, d > 0) != 0)
            break;
    }
    fl_buf_puts(b, "]}");
}

void cli_repeats_json(const cli_repeats *rp, fl_buf *b)
{
    fl_buf_printf(b, "{\"repeats\":%d,\"warmup_runs\":%d,\"runs_done\":%d,\"duration_s\":",
                  rp->repeats, rp->warmup_runs, rp->done);
    gp_run_stats st;
    durations(rp, &st);
    json_stats(b, &st);
    fl_buf_puts(b, ",\"devices\":[");
    for (size_t d = 0; d < rp->n_dev; d++) {
        fl_buf_printf(b, "%s{\"device_index\":%u", d ? "," : "",
                      (unsigned)rp->sums[d].device_index);
        for (size_t k = 0; k < N_METRICS; k++) {
            series(rp, d, &metrics[k], &st);
            fl_buf_puts(b, ",");
            cli_json_key(b, metrics[k].key);
            json_stats(b, &st);
        }
        fl_buf_puts(b, "}");
    }
    fl_buf_puts(b, "],\"runs\":[");
    for (int r = 0; r < rp->done; r++) {
        if (r)
            fl_buf_puts(b, ",");
        json_run(rp, r, b);
    }
    fl_buf_puts(b, "]}");
}
