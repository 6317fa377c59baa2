/*
 * report.c - what the command writes about a run: the text report (the
 * library's block per device, a total when several devices were sampled,
 * and one closing line with CMD's status and wall time), the JSON report
 * (one "gpu-profile.run" object embedding the library's summaries, see
 * docs/json-schema.md), the --samples file (CSV or NDJSON, one row per
 * device sample, empty cell / null for a metric the device did not
 * report), and the live status line.  With --engine above Monitor both
 * reports also carry the trace summary (trace.c).
 *
 * Totals follow one rule: a sum or mean over the devices is given only
 * when every device reports the metric, so a total is never a silent
 * undercount.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- totals */

typedef struct total {
    size_t n;
    double duration_s;
    int has_energy, has_power, has_mem_used, has_mem_total, has_util;
    double energy_j;
    const char *energy_source;
    double power_mean_mw, power_max_mw; /* sums of the devices' means, maxima */
    uint64_t mem_used_max_bytes, mem_total_bytes;
    double util_gpu_mean_pct, busy_time_est_s;
    size_t n_failed;  /* devices that failed mid-run: their figures cover less */
    char failed[256]; /* "GPU1 lost at 0.500 s, ..." */
    int failed_idx[8];
    double failed_at_s[8];
} total;

/* A MIG instance whose parent GPU is also sampled: the parent's figures
 * already cover it, so the total leaves it out (docs/concepts.md). */
static int covered_by_parent(gp_monitor *m, const gp_summary *s)
{
    if (!s->mig.is_mig)
        return 0;
    for (size_t i = 0; i < gp_monitor_device_count(m); i++) {
        const gp_summary *p = gp_monitor_summary(m, i);
        if (p && !p->mig.is_mig && p->device_index == s->mig.parent_index)
            return 1;
    }
    return 0;
}

/* "GPU1 lost at 0.500 s" for each device that failed mid-run, so the
 * total says which of its parts cover less than the run. */
static void note_failed(total *t, const gp_summary *s)
{
    if (s->device_status == GP_OK || !(s->device_error_at_s < s->duration_s))
        return;
    size_t used = strlen(t->failed);
    snprintf(t->failed + used, sizeof t->failed - used, "%sGPU%" PRIu32 " %s at %.3f s",
             t->n_failed ? ", " : "", s->device_index,
             s->device_status == GP_ERR_DEVICE_LOST ? "lost" : "failed", s->device_error_at_s);
    if (t->n_failed < sizeof t->failed_idx / sizeof t->failed_idx[0]) {
        t->failed_idx[t->n_failed] = (int)s->device_index;
        t->failed_at_s[t->n_failed] = s->device_error_at_s;
    }
    t->n_failed++;
}

static void compute_total(gp_monitor *m, total *t)
{
    memset(t, 0, sizeof *t);
    t->n = gp_monitor_device_count(m);
    t->has_energy = t->has_power = t->has_mem_used = t->has_mem_total = t->has_util = 1;
    gp_energy_source src = GP_ENERGY_NONE;
    int mixed = 0;
    size_t counted = 0;
    for (size_t i = 0; i < t->n; i++) {
        const gp_summary *s = gp_monitor_summary(m, i);
        if (!s || covered_by_parent(m, s))
            continue;
        counted++;
        if (s->duration_s > t->duration_s)
            t->duration_s = s->duration_s;
        if (s->energy_source == GP_ENERGY_NONE)
            t->has_energy = 0;
        else if (counted > 1 && s->energy_source != src)
            mixed = 1;
        src = s->energy_source;
        t->energy_j += s->energy_j;
        t->has_power &= (s->valid & GP_M_POWER) != 0;
        t->power_mean_mw += s->power_mean_mw;
        t->power_max_mw += s->power_max_mw;
        t->has_mem_used &= (s->valid & GP_M_MEM_USED) != 0;
        t->mem_used_max_bytes += s->mem_used_max_bytes;
        t->has_mem_total &= (s->valid & GP_M_MEM_TOTAL) != 0;
        t->mem_total_bytes += s->mem_total_bytes;
        t->has_util &= (s->valid & GP_M_UTIL_GPU) != 0;
        t->util_gpu_mean_pct += s->util_gpu_mean;
        t->busy_time_est_s += s->busy_time_est_s;
        note_failed(t, s);
    }
    if (counted)
        t->util_gpu_mean_pct /= (double)counted;
    t->energy_source = !t->has_energy ? "none" : mixed ? "mixed" : gp_energy_source_name(src);
}

/* ---------------------------------------------------------------- text */

/* A byte a shell word needs no quotes for. */
static int shell_plain(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("_@%+=:,./-", c) != NULL;
}

/* CMD as a shell would take it back (`sh -c 'sleep 2 & echo x'`: a word
 * with a blank or a shell character in single quotes, a ' inside as
 * '\''), on one line: up to len - 1 bytes, control characters as '?',
 * "..." when cut. */
static void command_text(const cli_opts *o, char *buf, size_t len)
{
    fl_buf b = {0};
    for (int i = 0; i < o->cmd_argc; i++) {
        const char *w = o->cmd[i];
        int plain = w[0] != '\0';
        for (const char *p = w; *p && plain; p++)
            plain = shell_plain((unsigned char)*p);
        if (i)
            fl_buf_puts(&b, " ");
        if (plain) {
            fl_buf_puts(&b, w);
            continue;
        }
        fl_buf_puts(&b, "'");
        for (const char *p = w; *p; p++) {
            if (*p == '\'')
                fl_buf_puts(&b, "'\\''");
            else
                fl_buf_put(&b, p, 1);
        }
        fl_buf_puts(&b, "'");
    }
    const char *t = b.p && !b.oom ? b.p : "?";
    size_t n = strlen(t);
    snprintf(buf, len, "%s", t);
    cli_clean_text(buf);
    if (n >= len && len > 3)
        memcpy(buf + len - 4, "...", 3);
    fl_buf_free(&b);
}

static void gib(FILE *f, uint64_t bytes)
{
    fprintf(f, "%.2f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

static void write_total_text(FILE *f, const total *t)
{
    fprintf(f, "total  %zu GPUs\n", t->n);
    fprintf(f, "  %-18s%.3f s\n", "duration", t->duration_s);
    fprintf(f, "  %-18s", "energy");
    if (t->has_energy)
        fprintf(f, "%.1f J (%s, summed)\n", t->energy_j,
                strcmp(t->energy_source, "power_integral") == 0 ? "power integral"
                : strcmp(t->energy_source, "mixed") == 0        ? "counter and power integral"
                                                                : t->energy_source);
    else
        fputs("n/a (not every device has an energy figure)\n", f);

    fprintf(f, "  %-18s", "power");
    if (t->has_power)
        fprintf(f, "mean %.1f W  max %.1f W (sums of the devices' means and maxima)\n",
                t->power_mean_mw / 1000.0, t->power_max_mw / 1000.0);
    else
        fputs("n/a\n", f);
    fprintf(f, "  %-18s", "memory used");
    if (t->has_mem_used && t->has_mem_total) {
        fputs("max ", f);
        gib(f, t->mem_used_max_bytes);
        fputs(" of ", f);
        gib(f, t->mem_total_bytes);
        fputs(" (sum of the devices' maxima)\n", f);
    } else {
        fputs("n/a\n", f);
    }
    fprintf(f, "  %-18s", "util.gpu");
    if (t->has_util)
        fprintf(f, "mean %.1f%% (mean over the devices)\n", t->util_gpu_mean_pct);
    else
        fputs("n/a\n", f);
    fprintf(f, "  %-18s", "busy time est.");
    if (t->has_util)
        fprintf(f, "%.3f s (sum over the devices)\n", t->busy_time_est_s);
    else
        fputs("n/a\n", f);
    if (t->n_failed)
        fprintf(f, "  %-18s%s: energy and busy time count only the samples before\n", "",
                t->failed);
}

static void write_status_line(FILE *f, const cli_report *r)
{
    const cli_run_result *res = r->res;
    char cmd[64], name[32];
    const cli_opts *o = r->opts;
    if (!o->cmd) {
        /* Watched without a command: what ended the watch. */
        if (res->watch_pid_exited)
            fprintf(f, "gpu-profile: watched %.3f s, until process %ld exited", res->cmd_s,
                    (long)o->pid);
        else
            fprintf(f, "gpu-profile: watched %.3f s%s", res->cmd_s,
                    res->interrupted_by ? "" : " (--duration)");
        if (res->interrupted_by)
            fprintf(f, " (gpu-profile got %s)",
                    cli_signal_name(res->interrupted_by, name, sizeof name));
        fputc('\n', f);
        return;
    }
    command_text(r->opts, cmd, sizeof cmd);
    if (res->term_signal) {
        fprintf(f, "gpu-profile: %s was killed by %s (signal %d%s) after %.3f s: exit status %d",
                cmd, cli_signal_name(res->term_signal, name, sizeof name), res->term_signal,
                res->core_dumped ? ", core dumped" : "", res->cmd_s, res->exit_code);
    } else {
        fprintf(f, "gpu-profile: %s exited with status %d after %.3f s", cmd, res->exit_code,
                res->cmd_s);
    }
    if (res->interrupted_by)
        fprintf(f, " (gpu-profile got %s)",
                cli_signal_name(res->interrupted_by, name, sizeof name));
    if (res->descendants_s >= 0.0005)
        fprintf(f, "; processes it left behind ran %.3f s more", res->descendants_s);
    fputc('\n', f);
}

static void write_text(const cli_report *r, FILE *f)
{
    size_t n = gp_monitor_device_count(r->mon);
    if (r->sampled) {
        unsigned flags = r->opts->ascii ? GP_FMT_ASCII : 0;
        for (size_t i = 0; i < n; i++) {
            const gp_summary *s = gp_monitor_summary(r->mon, i);
            if (!s)
                continue;
            if (i)
                fputc('\n', f);
            gp_summary_print(s, f, flags, NULL);
        }
        if (n > 1) {
            total t;
            compute_total(r->mon, &t);
            fputc('\n', f);
            write_total_text(f, &t);
        }
    }
    if (r->repeats) {
        if (r->sampled && n > 0)
            fputc('\n', f);
        cli_repeats_text(r->repeats, r->opts->ascii, f);
    }
    if (r->trace) {
        if (r->sampled && n > 0 && r->trace->run.processes > 0)
            fputc('\n', f);
        cli_trace_text(r->trace, f);
    }
    cli_window_text(r->opts, f);
    if (r->note && r->note[0])
        cli_fsay(f, "%s", r->note);
    write_status_line(f, r);
}

/* ---------------------------------------------------------------- JSON */

static void write_json(const cli_report *r, fl_buf *b)
{
    const cli_run_result *res = r->res;
    char name[32];
    fl_buf_puts(b, "{\"schema\":\"gpu-profile.run\",\"schema_version\":1,");
    cli_json_key(b, "gpu_profile_version");
    fl_buf_str(b, gp_version());
    fl_buf_puts(b, ",\"command\":[");
    for (int i = 0; i < r->opts->cmd_argc; i++) {
        if (i)
            fl_buf_puts(b, ",");
        fl_buf_str(b, r->opts->cmd[i]);
    }
    /* Watched without a command: no command, no exit status of one. */
    if (r->opts->cmd)
        fl_buf_printf(b, "],\"exit_status\":%d,\"signal\":", res->exit_code);
    else
        fl_buf_puts(b, "],\"exit_status\":null,\"signal\":");
    fl_buf_str(b, res->term_signal ? cli_signal_name(res->term_signal, name, sizeof name) : NULL);
    fl_buf_printf(b,
                  ",\"core_dumped\":%s,\"interrupted_by\":", res->core_dumped ? "true" : "false");
    fl_buf_str(b, res->interrupted_by ? cli_signal_name(res->interrupted_by, name, sizeof name)
                                      : NULL);
    fl_buf_member_opt_double(b, "duration_s", true, res->cmd_s);
    fl_buf_member_opt_double(b, "descendants_s", true, res->descendants_s);
    fl_buf_member_opt_double(b, "profiler_stopped_s", res->profiler_stopped,
                             res->profiler_stopped_s);
    cli_json_member_str(b, "backend", gp_monitor_backend(r->mon));
    cli_json_member_str(b, "note", r->note && r->note[0] ? r->note : NULL);
    cli_window_json(r->opts, b);
    fl_buf_puts(b, ",\"devices\":[");
    size_t n = r->sampled ? gp_monitor_device_count(r->mon) : 0;
    for (size_t i = 0; i < n; i++) {
        const gp_summary *s = gp_monitor_summary(r->mon, i);
        if (!s)
            continue;
        if (cli_summary_json(b, s, i > 0) != 0)
            break;
    }
    fl_buf_puts(b, "],\"total\":");
    if (n > 1) {
        total t;
        compute_total(r->mon, &t);
        fl_buf_printf(b, "{\"devices\":%zu,\"duration_s\":", t.n);
        fl_buf_double(b, t.duration_s);
        fl_buf_member_opt_double(b, "energy_j", t.has_energy, t.energy_j);
        fl_buf_puts(b, ",\"energy_source\":");
        fl_buf_str(b, t.energy_source);
        fl_buf_member_opt_double(b, "power_mean_mw", t.has_power, t.power_mean_mw);
        fl_buf_member_opt_double(b, "power_max_mw", t.has_power, t.power_max_mw);
        fl_buf_member_opt_u64(b, "mem_used_max_bytes", t.has_mem_used, t.mem_used_max_bytes);
        fl_buf_member_opt_u64(b, "mem_total_bytes", t.has_mem_total, t.mem_total_bytes);
        fl_buf_member_opt_double(b, "util_gpu_mean_pct", t.has_util, t.util_gpu_mean_pct);
        fl_buf_member_opt_double(b, "busy_time_est_s", t.has_util, t.busy_time_est_s);
        /* the devices whose figures cover less than the run */
        fl_buf_puts(b, ",\"failed_devices\":[");
        for (size_t k = 0; k < t.n_failed && k < 8; k++) {
            fl_buf_printf(b, "%s{\"device_index\":%d,\"at_s\":", k ? "," : "", t.failed_idx[k]);
            fl_buf_double(b, t.failed_at_s[k]);
            fl_buf_puts(b, "}");
        }
        fl_buf_puts(b, "]}");
    } else {
        fl_buf_puts(b, "null");
    }
    fl_buf_puts(b, ",\"samples_file\":");
    fl_buf_str(b, r->opts->samples);
    if (r->repeats) {
        fl_buf_puts(b, ",\"repeats\":");
        cli_repeats_json(r->repeats, b);
    }
    if (r->trace) {
        fl_buf_puts(b, ",\"trace\":");
        cli_trace_json(r->trace, b);
    }
    fl_buf_puts(b, "}\n");
}

int cli_report_write(const cli_report *r, FILE *f)
{
    if (r->opts->json) {
        fl_buf b = {0};
        write_json(r, &b);
        int bad = b.oom;
        if (!bad)
            bad = fwrite(b.p, 1, b.len, f) != b.len;
        fl_buf_free(&b);
        if (bad)
            return -1;
    } else {
        write_text(r, f);
    }
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* ------------------------------------------------------------- samples */

typedef struct column {
    const char *name;
    uint32_t bit;  /* 0: always valid (unless hbit) */
    uint32_t hbit; /* a health column: its GP_H_* bit in health_valid */
    size_t off;    /* a health column: the field's offset */
    int kind;      /* a health column: 32 / 64 unsigned, -32 signed */
} column;

static const column columns[] = {
    {"util_gpu_pct", GP_M_UTIL_GPU},
    {"util_mem_pct", GP_M_UTIL_MEM},
    {"mem_used_bytes", GP_M_MEM_USED},
    {"mem_total_bytes", GP_M_MEM_TOTAL},
    {"power_mw", GP_M_POWER},
    {"energy_mj", GP_M_ENERGY},
    {"temp_c", GP_M_TEMP},
    {"clock_sm_mhz", GP_M_CLOCK_SM},
    {"clock_mem_mhz", GP_M_CLOCK_MEM},
    {"throttle_reasons_mask", GP_M_THROTTLE},
    {"pcie_tx_kbps", GP_M_PCIE_TX},
    {"pcie_rx_kbps", GP_M_PCIE_RX},
    /* GPM (gp_gpm_metric order): percent with 2 decimals, bytes/s. */
    {"sm_active_pct", GP_M_GPM(GP_GPM_SM_ACTIVE)},
    {"sm_occupancy_pct", GP_M_GPM(GP_GPM_SM_OCCUPANCY)},
    {"tensor_active_pct", GP_M_GPM(GP_GPM_TENSOR_ACTIVE)},
    {"tensor_dfma_active_pct", GP_M_GPM(GP_GPM_TENSOR_DFMA)},
    {"tensor_hmma_active_pct", GP_M_GPM(GP_GPM_TENSOR_HMMA)},
    {"tensor_imma_active_pct", GP_M_GPM(GP_GPM_TENSOR_IMMA)},
    {"dram_active_pct", GP_M_GPM(GP_GPM_DRAM_ACTIVE)},
    {"fp64_active_pct", GP_M_GPM(GP_GPM_FP64_ACTIVE)},
    {"fp32_active_pct", GP_M_GPM(GP_GPM_FP32_ACTIVE)},
    {"fp16_active_pct", GP_M_GPM(GP_GPM_FP16_ACTIVE)},
    {"gpm_pcie_tx_bps", GP_M_GPM(GP_GPM_PCIE_TX)},
    {"gpm_pcie_rx_bps", GP_M_GPM(GP_GPM_PCIE_RX)},
    {"nvlink_tx_bps", GP_M_GPM(GP_GPM_NVLINK_TX)},
    {"nvlink_rx_bps", GP_M_GPM(GP_GPM_NVLINK_RX)},
    /* Health (NVML; docs/concepts.md "Health"), by field. */
    {"fan_speed_pct", 0, GP_H_FAN, offsetof(gp_device_sample, fan_speed_pct), 32},
    {"mem_temp_c", 0, GP_H_MEM_TEMP, offsetof(gp_device_sample, mem_temp_c), -32},
    {"enc_util_pct", 0, GP_H_ENC, offsetof(gp_device_sample, enc_util_pct), 32},
    {"dec_util_pct", 0, GP_H_DEC, offsetof(gp_device_sample, dec_util_pct), 32},
    {"ecc_sbe_volatile", 0, GP_H_ECC_VOL, offsetof(gp_device_sample, ecc_sbe_volatile), 64},
    {"ecc_dbe_volatile", 0, GP_H_ECC_VOL, offsetof(gp_device_sample, ecc_dbe_volatile), 64},
    {"ecc_sbe_aggregate", 0, GP_H_ECC_AGG, offsetof(gp_device_sample, ecc_sbe_aggregate), 64},
    {"ecc_dbe_aggregate", 0, GP_H_ECC_AGG, offsetof(gp_device_sample, ecc_dbe_aggregate), 64},
    {"retired_pages_sbe", 0, GP_H_RETIRED, offsetof(gp_device_sample, retired_pages_sbe), 32},
    {"retired_pages_dbe", 0, GP_H_RETIRED, offsetof(gp_device_sample, retired_pages_dbe), 32},
    {"remapped_rows_corr", 0, GP_H_REMAP, offsetof(gp_device_sample, remapped_rows_corr), 32},
    {"remapped_rows_unc", 0, GP_H_REMAP, offsetof(gp_device_sample, remapped_rows_unc), 32},
    {"remap_pending", 0, GP_H_REMAP, offsetof(gp_device_sample, remap_pending), 32},
    {"remap_failure", 0, GP_H_REMAP, offsetof(gp_device_sample, remap_failure), 32},
    {"pcie_replay_count", 0, GP_H_PCIE_REPLAY, offsetof(gp_device_sample, pcie_replay_count), 64},
    {"nvlink_crc_flit_errs", 0, GP_H_NVLINK, offsetof(gp_device_sample, nvlink_crc_flit_errs), 64},
    {"nvlink_recovery_errs", 0, GP_H_NVLINK, offsetof(gp_device_sample, nvlink_recovery_errs), 64},
    {"xid_count", 0, GP_H_XID, offsetof(gp_device_sample, xid_count), 64},
    {"xid_last", 0, GP_H_XID, offsetof(gp_device_sample, xid_last), 32},
    /* Per-process (the command's process tree, then every process NVML
     * lists on the device; docs/cli.md): counts and bytes, whole percent. */
    {"proc_count", GP_M_PROC_MEM},
    {"proc_all_count", GP_M_PROC_MEM},
    {"proc_mem_used_bytes", GP_M_PROC_MEM},
    {"proc_all_mem_used_bytes", GP_M_PROC_MEM},
    {"proc_sm_pct", GP_M_PROC_UTIL},
    {"proc_mem_pct", GP_M_PROC_UTIL},
    {"proc_all_sm_pct", GP_M_PROC_UTIL},
    {"proc_all_mem_pct", GP_M_PROC_UTIL},
};
#define FIRST_GPM_COLUMN 12
#define FIRST_HEALTH_COLUMN (FIRST_GPM_COLUMN + GP_GPM_COUNT)
#define N_HEALTH_COLUMNS 19
#define FIRST_PROC_COLUMN (FIRST_HEALTH_COLUMN + N_HEALTH_COLUMNS)
#define N_COLUMNS (sizeof columns / sizeof columns[0])
_Static_assert(N_COLUMNS == FIRST_PROC_COLUMN + 8, "columns[]: 8 per-process columns last");

/* A GPM value: percent as an integer count of hundredths written with its
 * point, bytes/s whole (integers only: no locale involved). */
static int gpm_value(double v, int rate, char *buf, size_t len)
{
    if (!(v >= 0.0) || v > 9e15) /* not from a backend: no value rather than a bogus one */
        return 0;
    long long x = llround(rate ? v : v * 100.0);
    if (rate)
        snprintf(buf, len, "%lld", x);
    else
        snprintf(buf, len, "%lld.%02lld", x / 100, x % 100);
    return 1;
}

/* A per-process column (FIRST_PROC_COLUMN on, in columns[] order). */
static void proc_value(const gp_device_sample *m, size_t p, char *buf, size_t len)
{
    const uint64_t v[] = {
        m->proc_count,  m->proc_all_count, m->proc_mem_used_bytes, m->proc_all_mem_used_bytes,
        m->proc_sm_pct, m->proc_mem_pct,   m->proc_all_sm_pct,     m->proc_all_mem_pct};
    snprintf(buf, len, "%" PRIu64, v[p]); /* p < 8: the _Static_assert on columns[] */
}

/* A health column (FIRST_HEALTH_COLUMN on) from its field. */
static void health_value(const gp_device_sample *m, const column *c, char *buf, size_t len)
{
    const char *p = (const char *)m + c->off;
    if (c->kind == 64) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        snprintf(buf, len, "%" PRIu64, v);
    } else if (c->kind == -32) {
        int32_t v;
        memcpy(&v, p, sizeof v);
        snprintf(buf, len, "%" PRId32, v);
    } else {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        snprintf(buf, len, "%" PRIu32, v);
    }
}

/* Column k of a sample as text (integers only: no locale involved); 0
 * when it has none. */
static int column_value(const gp_device_sample *m, size_t k, char *buf, size_t len)
{
    if (k >= FIRST_PROC_COLUMN) {
        proc_value(m, k - FIRST_PROC_COLUMN, buf, len);
        return 1;
    }
    if (k >= FIRST_HEALTH_COLUMN) {
        health_value(m, &columns[k], buf, len);
        return 1;
    }
    if (k >= FIRST_GPM_COLUMN) {
        size_t g = k - FIRST_GPM_COLUMN;
        return gpm_value(m->gpm[g], gp_gpm_metric_is_rate((gp_gpm_metric)g), buf, len);
    }
    switch (k) {
    case 0:
        snprintf(buf, len, "%" PRIu32, m->util_gpu_pct);
        break;
    case 1:
        snprintf(buf, len, "%" PRIu32, m->util_mem_pct);
        break;
    case 2:
        snprintf(buf, len, "%" PRIu64, m->mem_used_bytes);
        break;
    case 3:
        snprintf(buf, len, "%" PRIu64, m->mem_total_bytes);
        break;
    case 4:
        snprintf(buf, len, "%" PRIu32, m->power_mw);
        break;
    case 5:
        snprintf(buf, len, "%" PRIu64, m->energy_mj);
        break;
    case 6:
        snprintf(buf, len, "%" PRId32, m->temp_c);
        break;
    case 7:
        snprintf(buf, len, "%" PRIu32, m->clock_sm_mhz);
        break;
    case 8:
        snprintf(buf, len, "%" PRIu32, m->clock_mem_mhz);
        break;
    case 9:
        snprintf(buf, len, "%" PRIu64, m->throttle_reasons);
        break;
    case 10:
        snprintf(buf, len, "%" PRIu32, m->pcie_tx_kbps);
        break;
    default:
        snprintf(buf, len, "%" PRIu32, m->pcie_rx_kbps);
        break;
    }
    return 1;
}

int cli_samples_open(cli_samples_stream *st, FILE *f, enum cli_samples_format fmt)
{
    st->f = f;
    st->fmt = fmt;
    st->err = 0;
    /* A line at a time: rows reach the file as they are taken, so a
     * profiler killed mid-run leaves every finished row behind. */
    setvbuf(f, NULL, _IOLBF, 0);
    if (fmt == CLI_SAMPLES_CSV) {
        fputs("t_wall_ns,t_mono_ns,device_index", f);
        for (size_t k = 0; k < N_COLUMNS; k++)
            fprintf(f, ",%s", columns[k].name);
        fputc('\n', f);
    }
    if (ferror(f))
        st->err = errno ? errno : EIO;
    return st->err ? -1 : 0;
}

void cli_samples_on_sample(const gp_sample *x, void *user)
{
    cli_samples_stream *st = user;
    FILE *f = st->f;
    if (st->err)
        return; /* said once, at the end */
    char v[32];
    if (st->fmt == CLI_SAMPLES_CSV)
        fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu32, x->t_wall_ns, x->t_mono_ns, x->device_index);
    else
        fprintf(f, "{\"t_wall_ns\":%" PRIu64 ",\"t_mono_ns\":%" PRIu64 ",\"device_index\":%" PRIu32,
                x->t_wall_ns, x->t_mono_ns, x->device_index);
    for (size_t k = 0; k < N_COLUMNS; k++) {
        int ok = columns[k].hbit ? (x->m.health_valid & columns[k].hbit) != 0
                                 : (x->m.valid & columns[k].bit) != 0;
        if (ok)
            ok = column_value(&x->m, k, v, sizeof v);
        if (st->fmt == CLI_SAMPLES_CSV)
            fprintf(f, ",%s", ok ? v : "");
        else
            fprintf(f, ",\"%s\":%s", columns[k].name, ok ? v : "null");
    }
    errno = 0;
    fputs(st->fmt == CLI_SAMPLES_CSV ? "\n" : "}\n", f);
    if (ferror(f))
        st->err = errno ? errno : EIO;
}

int cli_samples_close(cli_samples_stream *st)
{
    errno = 0;
    if (!st->err && (fflush(st->f) != 0 || ferror(st->f)))
        st->err = errno ? errno : EIO;
    return st->err ? -1 : 0;
}

/* ------------------------------------------------------------ live line */

void cli_live_format(gp_monitor *m, double elapsed_s, char *buf, size_t len)
{
    fl_buf b = {0};
    long t = (long)elapsed_s;
    if (t >= 3600)
        fl_buf_printf(&b, "gpu-profile %ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        fl_buf_printf(&b, "gpu-profile %ld:%02ld", t / 60, t % 60);
    size_t n = gp_monitor_device_count(m);
    for (size_t i = 0; i < n; i++) {
        gp_sample s;
        if (gp_monitor_latest(m, i, &s) != GP_OK) {
            fl_buf_puts(&b, " | (no sample yet)");
            continue;
        }
        fl_buf_printf(&b, " | GPU%" PRIu32, s.device_index);
        if (gp_monitor_device_status(m, i, NULL) != GP_OK) {
            /* its last values are not current: say so, not show them */
            fl_buf_puts(&b, gp_monitor_device_status(m, i, NULL) == GP_ERR_DEVICE_LOST ? " lost"
                                                                                       : " failed");
            continue;
        }
        if (s.m.valid & GP_M_UTIL_GPU)
            fl_buf_printf(&b, " %" PRIu32 "%%", s.m.util_gpu_pct);
        else
            fl_buf_puts(&b, " -%");
        const double g = 1024.0 * 1024.0 * 1024.0;
        if ((s.m.valid & GP_M_MEM_USED) && (s.m.valid & GP_M_MEM_TOTAL))
            fl_buf_printf(&b, " %.1f/%.0fG", (double)s.m.mem_used_bytes / g,
                          (double)s.m.mem_total_bytes / g);
        else if (s.m.valid & GP_M_MEM_USED)
            fl_buf_printf(&b, " %.1fG", (double)s.m.mem_used_bytes / g);
        if (s.m.valid & GP_M_POWER)
            fl_buf_printf(&b, " %.0fW", s.m.power_mw / 1000.0);
    }
    snprintf(buf, len, "%s", b.p && !b.oom ? b.p : "gpu-profile");
    fl_buf_free(&b);
}
