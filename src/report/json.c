/*
 * report/json.c - the report as one JSON object (schema
 * "gpu-profile.report", version 1; the keys and their order are
 * report.h's): every key always present, units in the key names, null for
 * what was not recorded, so a consumer never mistakes a missing figure
 * for 0.  Strings and reals go through the project's own writers
 * (fl_buf_str, fixed-point reals), never through the locale.
 */
#include "report_int.h"
#include "../util/buf.h"
#include "json_write.h"

#include <math.h>

/* ============================================================ sections */

/* "mig": a MIG instance's identity as the session gave it, the wire's
 * member names (wire/vocab.h), null where unknown. */
static void json_mig(jw *w, const fl_model_device *d)
{
    j_open(w, FL_KEY_MIG, '{');
    j_str(w, fl_mig_key_name(FL_MIG_PROFILE), d->mig_profile);
    j_opt_u64(w, fl_mig_key_name(FL_MIG_GPU_INSTANCE_ID), d->mig_gi >= 0, (uint64_t)d->mig_gi);
    j_opt_u64(w, fl_mig_key_name(FL_MIG_COMPUTE_INSTANCE_ID), d->mig_ci >= 0, (uint64_t)d->mig_ci);
    j_opt_u64(w, fl_mig_key_name(FL_MIG_PARENT_ID), d->mig_parent_id >= 0,
              (uint64_t)d->mig_parent_id);
    j_str(w, fl_mig_key_name(FL_MIG_PARENT_UUID), d->mig_parent_uuid);
    j_str(w, fl_mig_key_name(FL_MIG_PARENT_NAME), d->mig_parent_name);
    j_close(w, '}');
}

void fl_json_session(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    const fl_model *m = r->m;
    j_open(w, "session", '{');
    j_str(w, "app", m->app);
    j_str(w, "session_id", m->session_id);
    j_str(w, "hostname", m->hostname);
    if (m->have_pid)
        j_i64(w, "pid", m->pid);
    else
        j_str(w, "pid", NULL);
    j_opt_u64(w, "start_ns", f->have_start, f->start_ns);
    j_str(w, "start_source",
          m->have_start   ? fl_type_name(FL_T_JOB_START)
          : f->have_start ? "first_record"
                          : NULL);
    j_opt_u64(w, "end_ns", f->have_end, f->end_ns);
    j_str(w, "end_source", f->end_source);
    j_opt_u64(w, "duration_ns", f->have_start && f->have_end, f->duration_ns);
    j_str(w, "session_kind", m->session_kind);
    j_str(w, "profiling_engine", m->engine);
    j_bool(w, "crashed", f->crashed && !r->live);
    j_bool(w, "recording", r->live);
    /* Files read from the session's .tmp/: GPUFlight had not published
     * them (still recording, or crashed). */
    j_bool(w, "unpublished", r->have_res && r->res.tmp_files > 0);
    /* A launcher's shutdown says how the program ended. */
    j_raw_json(w, "exit_code", json_object_get(m->shutdown, "exit_code"));
    j_raw_json(w, "signal", json_object_get(m->shutdown, "signal"));
    j_raw_json(w, "program_crashed", json_object_get(m->shutdown, "crashed"));
    j_open(w, "devices", '[');
    for (size_t i = 0; i < m->n_devices; i++) {
        j_open(w, NULL, '{');
        j_i64(w, "id", m->devices[i].id);
        j_opt_u64(w, "cuda_id", m->devices[i].cuda_id >= 0, (uint64_t)m->devices[i].cuda_id);
        j_str(w, "name", m->devices[i].name);
        j_str(w, "uuid", m->devices[i].uuid);
        if (m->devices[i].is_mig) /* ours, a MIG instance only */
            json_mig(w, &m->devices[i]);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

void fl_json_sec_summary(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    j_open(w, "summary", '{');
    j_u64(w, "kernel_launches", r->kernel_launches);
    j_u64(w, "kernel_distinct", r->n_k);
    j_u64(w, "kernel_time_ns", r->kernel_ns);
    j_open(w, "gpu_busy", '[');
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->kernels)
            continue;
        j_open(w, NULL, '{');
        j_device_id(w, "device_id", d->id);
        j_u64(w, "kernel_launches", d->kernels);
        j_u64(w, "kernel_time_ns", d->kernel_ns);
        j_u64(w, "busy_ns", fl_busy_of(d));
        j_dbl(w, "busy_pct", f->duration_ns > 0,
              f->duration_ns ? fl_busy_pct(d, f->duration_ns) : 0);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_u64(w, "memcpy_count", f->copies);
    j_u64(w, "memcpy_bytes", f->copy_bytes);
    j_u64(w, "memcpy_time_ns", f->copy_ns);
    j_u64(w, "memset_count", r->memsets.count);
    j_u64(w, "memset_bytes", r->memsets.bytes);
    j_u64(w, "memset_time_ns", r->memsets.time_ns);
    j_u64(w, "graph_launches", r->graphs);
    j_u64(w, "graph_time_ns", r->graph_ns);
    j_u64(w, "synchronizations", r->syncs);
    j_u64(w, "synchronization_time_ns", r->sync_ns);
    fl_json_sync_stacks(r, w);
    j_u64(w, "allocations", r->allocs);
    j_u64(w, "frees", r->frees);
    j_dbl(w, "util_gpu_mean_pct", f->have_util, f->util_mean);
    /* Over several devices, sums of the devices' figures of the same name
     * (docs/json-schema.md, "Vocabulary"). */
    j_u64(w, "metric_devices", f->metric_devices);
    j_opt_u64(w, "mem_used_max_bytes", f->have_used, (uint64_t)(f->used_max_mib * 1048576.0 + 0.5));
    j_dbl(w, "power_mean_mw", f->have_power, f->power_mean_mw);
    j_dbl(w, "power_max_mw", f->have_power, f->power_max_mw);
    j_dbl(w, "energy_j", f->have_energy, f->energy_j);
    j_str(w, "energy_source", f->have_energy ? f->energy_source : NULL);
    j_bool(w, "energy_partial", f->energy_partial);
    /* What the recorder dropped or its files could not take (null: the
     * session does not say). */
    j_u64(w, "scope_events", r->scope_rows);
    j_opt_u64(w, "scope_events_dropped", f->have_scope_drops, f->scope_events_dropped);
    j_opt_u64(w, "metric_rows_dropped", f->have_metric_drops, f->metric_rows_dropped);
    j_opt_u64(w, "lines_lost", f->have_lost, f->lines_lost);
    j_opt_u64(w, "rows_lost", f->have_lost, f->rows_lost);
    j_close(w, '}');
}

void fl_json_sec_scopes(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    j_open(w, "scopes", '{');
    j_dbl(w, "percentile_max_error_pct", true, FL_HIST_PCT_ERROR);
    j_u64(w, "kernel_time_in_scopes_ns", r->kernel_scoped_ns);
    j_u64(w, "kernel_time_outside_scopes_ns", r->kernel_global_ns);
    j_u64(w, "kernel_time_unattributed_ns", r->kernel_unattributed_ns);
    j_u64(w, "unmatched_ends", r->scope_unmatched_ends);
    j_open(w, "items", '[');
    for (size_t i = 0; i < r->n_s; i++) {
        const sstat *s = &r->s[f->sorder[i]];
        bool n = s->count > 0;
        j_open(w, NULL, '{');
        j_str(w, "name", s->name);
        j_str(w, "kind", s->nvtx ? "nvtx" : "scope");
        j_u64(w, "count", s->count);
        j_u64(w, "total_ns", s->total_ns);
        j_dbl(w, "mean_ns", n, n ? (double)s->total_ns / (double)s->count : 0);
        j_opt_u64(w, "min_ns", n, s->min_ns);
        j_opt_u64(w, "max_ns", n, s->max_ns);
        j_opt_u64(w, "p50_ns", n, fl_hist_pct(&s->h, s->count, 50, s->min_ns, s->max_ns));
        j_opt_u64(w, "p99_ns", n, fl_hist_pct(&s->h, s->count, 99, s->min_ns, s->max_ns));
        /* null for NVTX ranges (user_scope names gpufl scopes only) and
         * when no kernel was recorded at all (Monitor). */
        bool gpu = !s->nvtx && r->kernel_launches > 0;
        j_opt_u64(w, "gpu_time_inside_ns", gpu, s->gpu_ns);
        j_opt_u64(w, "kernel_launches_inside", gpu, s->kernels);
        /* Begun, no end in the logs: dropped by the recorder, or open. */
        j_u64(w, "open_at_end", f->scope_ends_dropped ? 0 : s->open_at_end);
        j_u64(w, "ends_dropped", f->scope_ends_dropped ? s->open_at_end : 0);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_open(w, "execution_signatures", '[');
    for (size_t i = 0; i < r->n_sg; i++) {
        const sigstat *g = &r->sg[i];
        j_open(w, NULL, '{');
        j_str(w, "scope", g->scope);
        j_str(w, "signature", g->signature);
        j_u64(w, "launch_count", g->launch_count);
        j_u64(w, "distinct_kernels", g->distinct_kernels);
        j_u64(w, "records", g->records);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

void fl_json_graphs(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    if (!j_open_if(w, "graphs", r->n_gr, '{'))
        return;
    j_u64(w, "launches", r->graphs);
    j_u64(w, "time_ns", r->graph_ns);
    j_open(w, "items", '[');
    for (size_t i = 0; i < r->n_gr; i++) {
        const graphstat *g = &r->gr[i];
        j_open(w, NULL, '{');
        j_str(w, "graph_exec_key", g->exec_key);
        j_opt_u64(w, "graph_id", g->have_graph_id, g->graph_id);
        j_u64(w, "launches", g->launches);
        j_u64(w, "time_ns", g->time_ns);
        /* node definitions are per graph_exec_key: n/a without one */
        j_opt_u64(w, "node_definitions", g->exec_key != NULL, g->nodes);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

/* capture_window records, per trigger and name; null: none (the whole
 * session was traced). */
void fl_json_capture_windows(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    if (!j_open_if(w, "capture_windows", r->n_cw, '['))
        return;
    for (size_t i = 0; i < r->n_cw; i++) {
        const capwin *c = &r->cw[i];
        j_open(w, NULL, '{');
        j_str(w, "trigger", c->trigger);
        j_str(w, "name", c->name[0] ? c->name : NULL);
        j_u64(w, "windows", c->count);
        j_u64(w, "time_ns", c->time_ns);
        j_u64(w, "open_at_shutdown", c->open);
        j_u64(w, "first_start_ns", c->first_start_ns);
        j_close(w, '}');
    }
    j_close(w, ']');
}

void fl_json_deep_windows(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    if (!j_open_if(w, "deep_windows", r->n_dw, '['))
        return;
    for (size_t i = 0; i < r->n_dw; i++) {
        const deepstat *d = &r->dw[i];
        j_open(w, NULL, '{');
        j_str(w, "name", d->name);
        j_u64(w, "windows", d->count);
        j_u64(w, "time_ns", d->time_ns);
        j_u64(w, "launches_covered", d->launches);
        j_str(w, "engines", d->engines);
        j_str(w, "close_reason", d->close_reason);
        j_u64(w, "triggered", d->triggered);
        if (!d->triggered) {
            j_str(w, "trigger", NULL);
        } else {
            j_open(w, "trigger", '{');
            j_str(w, "rule_id", d->rule_id);
            j_str(w, "metric", d->metric);
            j_str(w, "op", d->op);
            j_dbl(w, "threshold", d->have_threshold, d->threshold);
            j_dbl(w, "observed", d->have_observed, d->observed);
            j_opt_u64(w, "fired_ns", d->have_fired, d->fired_ns);
            j_close(w, '}');
        }
        j_close(w, '}');
    }
    j_close(w, ']');
}

void fl_json_sec_hotspots(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    j_open(w, "hotspots", '{');
    j_u64(w, "distinct_kernels", r->n_k);
    j_u64(w, "top_n", f->top);
    j_dbl(w, "percentile_max_error_pct", true, FL_HIST_PCT_ERROR);
    j_u64(w, "details_missing", r->m->details_missing);
    /* --by op|line: the launches grouped (groups), the kernels as ever */
    static const char *const by[] = {"kernel", "op", "line"};
    j_str(w, "by", by[r->by]);
    if (r->by != FL_BY_KERNEL)
        fl_json_hotspots_by(r, in->top_n, w);
    j_open(w, "kernels", '[');
    for (size_t i = 0; i < f->top; i++) {
        const kstat *k = &r->k[f->korder[i]];
        char buf[96];
        j_open(w, NULL, '{');
        j_u64(w, "rank", i + 1);
        j_u64(w, "kernel_id", k->kernel_id);
        j_str(w, "name", fl_kernel_label(r, k, buf, sizeof buf));
        j_bool(w, "name_known", fl_model_kernel_name(r->m, k->kernel_id) != NULL);
        j_u64(w, "count", k->count);
        j_u64(w, "total_ns", k->total_ns);
        j_dbl(w, "time_pct", r->kernel_ns > 0,
              100.0 * (double)k->total_ns / (double)(r->kernel_ns ? r->kernel_ns : 1));
        j_dbl(w, "mean_ns", true, (double)k->total_ns / (double)k->count);
        j_u64(w, "p50_ns", fl_hist_pct(&k->h, k->count, 50, k->min_ns, k->max_ns));
        j_u64(w, "p90_ns", fl_hist_pct(&k->h, k->count, 90, k->min_ns, k->max_ns));
        j_u64(w, "p99_ns", fl_hist_pct(&k->h, k->count, 99, k->min_ns, k->max_ns));
        j_u64(w, "min_ns", k->min_ns);
        j_u64(w, "max_ns", k->max_ns);
        j_dim(w, "grid", k->grid_varies, k->have_detail && k->last.have_grid, k->last.grid);
        j_dim(w, "block", k->block_varies, k->have_detail && k->last.have_block, k->last.block);
        j_opt_u64(w, "registers_min", k->have_regs, (uint64_t)k->regs_min);
        j_opt_u64(w, "registers_max", k->have_regs, (uint64_t)k->regs_max);
        if (k->smem_varies)
            j_str(w, "static_shared_bytes", "varies");
        else
            j_opt_u64(w, "static_shared_bytes", k->have_detail && k->last.static_shared >= 0,
                      (uint64_t)k->last.static_shared);
        if (k->occ_varies)
            j_str(w, "occupancy_pct", "varies");
        else
            j_dbl(w, "occupancy_pct", k->have_detail && !isnan(k->last.occupancy),
                  100.0 * k->last.occupancy);
        if (k->lim_varies)
            j_str(w, "limiting_resource", "varies");
        else
            j_str(w, "limiting_resource", k->have_detail ? k->last.limiting : NULL);
        /* the CPU stack at launch (the last seen; stack_trace_varies: there were several) */
        j_str(w, "stack_trace", k->stack && *k->stack ? k->stack : NULL);
        j_bool(w, "stack_trace_varies", k->stack_varies);
        /* what launched it: its op of most GPU time, the line of stack_trace */
        char label[256];
        j_str(w, "op", fl_by_kernel_op(r, k->kernel_id, label, sizeof label) ? label : NULL);
        if (k->stack && *k->stack)
            fl_by_line_label(k->stack, label, sizeof label);
        j_str(w, "line", k->stack && *k->stack ? label : NULL);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

static void json_ops(jw *w, const opstat *o)
{
    j_u64(w, "count", o->count);
    j_u64(w, "bytes", o->bytes);
    j_u64(w, "time_ns", o->time_ns);
    j_dbl(w, "throughput_gb_per_s", o->time_ns > 0,
          (double)o->bytes / (double)(o->time_ns ? o->time_ns : 1));
}

void fl_json_sec_memory(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    j_open(w, "memcpy", '[');
    static const uint64_t first[] = {1, 2, 8, 10};
    for (size_t i = 0; i < 4 + 257; i++) {
        uint64_t k = i < 4 ? first[i] : i - 4;
        if (i >= 4 && fl_copy_kind_name(k))
            continue;
        if (!r->copies[k].count)
            continue;
        char buf[32];
        j_open(w, NULL, '{');
        j_str(w, "kind", fl_copy_label(k, buf, sizeof buf));
        j_opt_u64(w, "copy_kind", k < 256, k);
        json_ops(w, &r->copies[k]);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_open(w, "memset", '{');
    json_ops(w, &r->memsets);
    j_close(w, '}');
}

static void j_acc(jw *w, const char *mean_key, const char *max_key, const acc *a, double scale)
{
    j_dbl(w, mean_key, a->n > 0, a->n ? a->sum / (double)a->n * scale : 0);
    if (max_key)
        j_dbl(w, max_key, a->n > 0, a->max * scale);
}

/* "gpm": null without GPM columns, else per metric null or {mean, max}
 * in percent or bytes/s (names as in the summary JSON). */
static void json_gpm(const dstat *d, jw *w)
{
    static const char *const names[FL_GPM_N] = {
        "sm_active",          "sm_occupancy",       "tensor_active", "tensor_dfma_active",
        "tensor_hmma_active", "tensor_imma_active", "dram_active",   "fp64_active",
        "fp32_active",        "fp16_active",        "gpm_pcie_tx",   "gpm_pcie_rx",
        "nvlink_tx",          "nvlink_rx"};
    bool any = false;
    for (int g = 0; g < FL_GPM_N; g++)
        any = any || d->gpm[g].n > 0;
    if (!j_open_if(w, "gpm", any, '{'))
        return;
    for (int g = 0; g < FL_GPM_N; g++) {
        if (!d->gpm[g].n) {
            j_str(w, names[g], NULL);
            continue;
        }
        bool rate = g >= FL_GPM_FIRST_RATE;
        j_open(w, names[g], '{');
        j_acc(w, rate ? "mean_bps" : "mean_pct", rate ? "max_bps" : "max_pct", &d->gpm[g], 1);
        j_close(w, '}');
    }
    j_close(w, '}');
}

/* "Busy but stuck" (docs/json-schema.md): null where no row had the
 * three metrics the rule needs - unknown, never an empty list. */
static void json_stuck(const dstat *d, const figures *f, jw *w)
{
    if (!j_open_if(w, "stuck", d->stuck.known_samples > 0, '{'))
        return;
    gp_stuck_rule rule;
    gp_stuck_rule_init(&rule);
    j_u64(w, "known_samples", d->stuck.known_samples);
    j_u64(w, "stretch_count", d->stuck.episodes);
    j_u64(w, "longest_run_samples", d->stuck.longest_run);
    j_open(w, "rule", '{');
    j_dbl(w, "util_min_pct", true, rule.util_min_pct);
    j_dbl(w, "sm_active_max_pct", true, rule.sm_active_max_pct);
    j_dbl(w, "power_idle_ratio", true, rule.power_idle_ratio);
    j_opt_u64(w, "idle_power_mw", d->stuck.min_power_mw > 0, d->stuck.min_power_mw);
    j_u64(w, "after_samples", rule.after_samples);
    j_close(w, '}');
    j_open(w, "stretches", '[');
    for (uint64_t i = 0; i < d->stuck.episodes && i < FL_STUCK_KEPT; i++) {
        const fl_stuck_stretch *k = &d->stuck_kept[i];
        j_open(w, NULL, '{');
        j_u64(w, "start_ns", k->start_ns);
        j_dbl(w, "start_offset_s", k->start_ns >= f->start_ns,
              (double)(k->start_ns - f->start_ns) * 1e-9);
        j_dbl(w, "duration_s", true, (double)(k->end_ns - k->start_ns) * 1e-9);
        j_u64(w, "samples", k->samples);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

void fl_json_sec_devices(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const figures *f = in->f;
    j_open(w, "devices", '[');
    for (size_t i = 0; i < r->n_d; i++) {
        const dstat *d = &r->d[f->dorder[i]];
        if (!d->samples)
            continue;
        j_open(w, NULL, '{');
        j_i64(w, "device_id", d->id);
        j_str(w, "name", fl_model_device_name(r->m, d->id));
        j_u64(w, "samples", d->samples);
        j_acc(w, "util_gpu_mean_pct", "util_gpu_max_pct", &d->util_gpu, 1);
        j_acc(w, "util_mem_mean_pct", "util_mem_max_pct", &d->util_mem, 1);
        j_opt_u64(w, "mem_used_max_bytes", d->used.n > 0,
                  (uint64_t)(d->used.max * 1048576.0 + 0.5));
        j_opt_u64(w, "mem_total_bytes", d->have_total, (uint64_t)(d->total_mib * 1048576.0 + 0.5));
        j_dbl(w, "temp_max_c", d->temp.n > 0, d->temp.max);
        j_acc(w, "power_mean_mw", "power_max_mw", &d->power, 1);
        j_acc(w, "clock_sm_mean_mhz", NULL, &d->clock_sm, 1);
        j_acc(w, "clock_mem_mean_mhz", NULL, &d->clock_mem, 1);
        double j = 0;
        const char *src = NULL;
        bool e = fl_device_energy(d, &j, &src);
        j_dbl(w, "energy_j", e, j);
        j_str(w, "energy_source", e ? src : NULL);
        json_gpm(d, w);
        /* null where none was recorded: not a known 0 (the driver may
         * not report XIDs). */
        j_opt_u64(w, "xid_errors", d->xid_events > 0, d->xid_events);
        j_opt_u64(w, "xid_last", d->xid_events > 0, d->xid_last);
        json_stuck(d, f, w);
        j_close(w, '}');
    }
    j_close(w, ']');
}

void fl_json_sec_host(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    if (!j_open_if(w, "host", r->host_samples, '{'))
        return;
    j_str(w, "hostname", r->host_name ? r->host_name : r->m->hostname);
    j_u64(w, "samples", r->host_samples);
    j_acc(w, "cpu_mean_pct", "cpu_max_pct", &r->cpu, 1);
    j_opt_u64(w, "ram_used_max_bytes", r->ram_used.n > 0,
              (uint64_t)(r->ram_used.max * 1048576.0 + 0.5));
    j_opt_u64(w, "ram_total_bytes", r->have_ram_total,
              (uint64_t)(r->ram_total_mib * 1048576.0 + 0.5));
    j_close(w, '}');
}

void fl_json_sec_capture(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const json_t *c = r->m->caps;
    if (!j_open_if(w, "capture", c, '{'))
        return;
    j_str(w, "requested_engine", fl_jget_str(c, "requested_engine"));
    j_str(w, "selected_engine", fl_jget_str(c, "selected_engine"));
    j_opt_u64(w, "ts_ns", json_is_integer(json_object_get(c, "ts_ns")),
              (uint64_t)json_integer_value(json_object_get(c, "ts_ns")));
    j_open(w, "features", '[');
    const json_t *caps = json_object_get(c, "capabilities");
    static const char *const keys[] = {"feature", "requested",   "status",
                                       "mode",    "reason_code", "message"};
    for (size_t i = 0; i < json_array_size(caps); i++) {
        const json_t *e = json_array_get(caps, i);
        j_open(w, NULL, '{');
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            j_raw_json(w, keys[k], json_object_get(e, keys[k]));
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

void fl_json_sec_read(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    const fl_model *m = r->m;
    const fl_read_result *res = &r->res;
    bool h = r->have_res;
    j_open(w, "read", '{');
    j_bool(w, "partial", fl_report_partial(r));
    j_str(w, "session_dir", h ? res->session_dir : NULL);
    /* session_dir is a flat-layout prefix, not a directory. */
    if (h)
        j_bool(w, "flat", res->flat);
    else
        j_str(w, "flat", NULL);
    j_opt_u64(w, "files", h, res->files);
    j_opt_u64(w, "lines", h, res->lines);
    j_opt_u64(w, "bytes", h, res->bytes);
    j_opt_u64(w, "bad_lines", h, res->bad_lines);
    j_opt_u64(w, "bad_records", h, res->bad_records);
    j_opt_u64(w, "other_session_records", h, res->other_session);
    j_opt_u64(w, "unknown_types", h, res->unknown_types);
    j_opt_u64(w, "gz_errors", h, res->gz_errors);
    j_opt_u64(w, "bad_windows", h, res->bad_windows);
    j_opt_u64(w, "unreadable_files", h, res->unreadable_files);
    j_opt_u64(w, "lost_windows", h, res->lost_windows);
    j_opt_u64(w, "unpublished_files", h, res->tmp_files);
    j_opt_u64(w, "details_direct", h, res->details_direct);
    j_u64(w, "bad_rows", m->bad_rows);
    j_u64(w, "orphan_details", m->details_orphan);
    j_bool(w, "out_of_memory", r->oom || m->oom);
    j_u64(w, "warnings", r->warnings);
    j_open(w, "first_warnings", '[');
    for (size_t i = 0; i < MAX_WARNINGS_KEPT && i < r->warnings; i++)
        if (r->warning_text[i])
            j_str(w, NULL, r->warning_text[i]);
    j_close(w, ']');
    j_open(w, "unknown_record_types", '[');
    for (size_t i = 0; i < r->n_unknown; i++) {
        j_open(w, NULL, '{');
        j_str(w, "type", r->unknown[i].type);
        j_u64(w, "records", r->unknown[i].records);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_close(w, '}');
}

/* ======================================================== the sections */

/* ============================================================ the JSON */

void fl_report_json(const fl_report *r, int top_n, fl_buf *out)
{
    figures f;
    jw w = {out, false};
    if (!fl_report_figures(r, top_n, &f)) {
        fl_figures_free(&f);
        out->oom = true;
        return;
    }
    j_open(&w, NULL, '{');
    j_str(&w, "schema", "gpu-profile.report");
    j_u64(&w, "schema_version", FL_REPORT_SCHEMA_VERSION);
    fl_section_in in = {r, &f, top_n};
    for (size_t i = 0; i < fl_report_n_sections; i++) {
        const fl_report_section *sec = &fl_report_sections[i];
        for (size_t k = 0; k < FL_SECTION_PARTS && sec->json[k]; k++)
            sec->json[k](&in, &w);
    }
    j_close(&w, '}');
    fl_buf_puts(out, "\n");
    fl_figures_free(&f);
}
