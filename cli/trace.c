/*
 * trace.c - the Trace engine's summary as the command prints it: the run's
 * sessions (one <log_path>/<session_id>/ per CUDA process) are summed up
 * by report/run.c (fl_run); this file writes that summary, with what the
 * command knows of the run (--engine, the plugin, the log directory, why
 * nothing was traced), as the text block and the JSON object.
 *
 * No printing of its own: cli_trace_text and cli_trace_json write what
 * they are given, where they are told.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

void cli_trace_init(cli_trace *t, gpufl_engine engine)
{
    memset(t, 0, sizeof *t);
    t->engine = engine;
    fl_run_init(&t->run);
}

void cli_trace_free(cli_trace *t)
{
    fl_run_free(&t->run);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- text */

static const char *const copy_names[FL_RUN_COPY_KINDS] = {"HtoD", "DtoH", "DtoD", "PtoP", "other"};

/* "nvidia.monitor" -> "Monitor": the engine names of --engine. */
static const char *engine_display(const char *wire)
{
    gpufl_engine e;
    return fl_engine_of_wire(wire, &e) ? gpufl_engine_name(e) : wire;
}

static void ops_text(FILE *f, const char *label, const fl_run_ops *o, const char *one,
                     const char *many)
{
    char b[32];
    fl_bytes_str(b, sizeof b, (double)o->bytes);
    fprintf(f, "  %-18s%llu %s  %s  %.3f ms\n", label, (unsigned long long)o->count,
            fl_plural(o->count, one, many), b, (double)o->time_ns / 1e6);
}

static void status_lines(const cli_trace *t, FILE *f)
{
    if (t->run.processes == 0) {
        if (t->note)
            fprintf(f, "gpu-profile: trace: not traced: %s\n", t->note);
        else
            fputs("gpu-profile: trace: no CUDA activity was traced (CMD made no CUDA calls, or "
                  "the driver did not load the plugin)\n",
                  f);
    }
    for (size_t i = 0; i < t->run.n_engines; i++) {
        const fl_run_engine *e = &t->run.engines[i];
        if (!e->message)
            continue;
        fprintf(f, "gpu-profile: trace: fallback to %s in %zu of %zu %s%s%s\n",
                engine_display(e->engine), e->processes, t->run.processes,
                fl_plural(t->run.processes, "process", "processes"), e->message[0] ? ": " : "",
                e->message);
    }
    cli_trace_window_hint(t, f);
    for (size_t i = 0; i < t->run.n_caps; i++) {
        const fl_run_cap *c = &t->run.caps[i];
        /* A feature that fell back with the engine is said by that line. */
        int said = 0;
        for (size_t k = 0; k < t->run.n_engines && !said; k++)
            said = t->run.engines[k].message && fl_cap_status_of(c->status) == FL_CAP_FALLBACK &&
                   strcmp(t->run.engines[k].message, c->message) == 0;
        if (said)
            continue;
        fprintf(f, "gpu-profile: trace: %s %s in %zu of %zu %s%s%s\n", c->feature, c->status,
                c->processes, t->run.processes, fl_plural(t->run.processes, "process", "processes"),
                c->message[0] ? ": " : "", c->message);
    }
    if (t->run.bad_lines)
        fprintf(f,
                "gpu-profile: trace: %llu unreadable %s skipped (not JSON; a process that "
                "crashes leaves its last line cut)\n",
                (unsigned long long)t->run.bad_lines, fl_plural(t->run.bad_lines, "line", "lines"));
    if (t->run.bad_rows)
        fprintf(f, "gpu-profile: trace: %llu malformed %s skipped\n",
                (unsigned long long)t->run.bad_rows,
                fl_plural(t->run.bad_rows, "record", "records"));
    if (t->run.dropped)
        fprintf(f,
                "gpu-profile: trace: %llu %s of another session dropped (their session_id "
                "is not the session's)\n",
                (unsigned long long)t->run.dropped, fl_plural(t->run.dropped, "record", "records"));
    if (t->run.oom)
        fputs("gpu-profile: trace: out of memory while reading: the figures may be short\n", f);
}

/* PcSampling's top stall reasons, one line: "top stalls  Long Scoreboard
 * 62.0%, Barrier 28.2%, ...  (71 PC samples)". */
static void stalls_text(const cli_trace *t, FILE *f)
{
    if (!t->run.pc_samples)
        return;
    fprintf(f, "  %-18s", "top stalls");
    size_t top = t->run.n_stalls < CLI_TRACE_TOP_STALLS ? t->run.n_stalls : CLI_TRACE_TOP_STALLS;
    for (size_t i = 0; i < top; i++) {
        char name[64];
        *fl_line_into(name, t->run.stalls[i].name, 48) = '\0';
        fprintf(f, "%s%s %.1f%%", i ? ", " : "", name,
                100.0 * (double)t->run.stalls[i].samples / (double)t->run.pc_samples);
    }
    fprintf(f, "  (%llu PC %s)\n", (unsigned long long)t->run.pc_samples,
            fl_plural(t->run.pc_samples, "sample", "samples"));
}

/* Each process's capture windows: how many and how long inside. */
static void captures_text(const cli_trace *t, FILE *f)
{
    for (size_t i = 0; i < t->run.n_captures; i++) {
        const fl_run_capture *c = &t->run.captures[i];
        char who[64], pid[24] = "n/a";
        if (c->pid >= 0)
            snprintf(pid, sizeof pid, "%lld", c->pid);
        if (c->rank >= 0)
            snprintf(who, sizeof who, "rank %lld pid %s", c->rank, pid);
        else
            snprintf(who, sizeof who, "pid %s", pid);
        if (c->windows == 0) {
            fprintf(f, "  %-18s%s  no window opened: nothing traced\n", "capture windows", who);
            continue;
        }
        fprintf(f, "  %-18s%s  %u %s %s  %.3f ms inside", "capture windows", who, c->windows,
                c->trigger, fl_plural(c->windows, "window", "windows"),
                (double)c->captured_ns / 1e6);
        if (c->open_at_end)
            fprintf(f, " (%u open at shutdown)", c->open_at_end);
        fputc('\n', f);
    }
}

void cli_trace_text(const cli_trace *t, FILE *f)
{
    if (t->run.processes > 0) {
        fprintf(f, "trace  %s engine  %zu CUDA %s\n", gpufl_engine_name(t->engine),
                t->run.processes, fl_plural(t->run.processes, "process", "processes"));
        if (t->run.kernel_launches == 0) {
            fprintf(f, "  %-18snone\n", "kernels");
        } else {
            fprintf(f, "  %-18s%llu %s  %.3f ms GPU time  %zu distinct\n", "kernels",
                    (unsigned long long)t->run.kernel_launches,
                    fl_plural(t->run.kernel_launches, "launch", "launches"),
                    (double)t->run.kernel_ns / 1e6, t->run.n_kernels);
            fprintf(f, "  %-18s%10s %8s %11s %7s  %s\n", "top kernels", "total ms", "calls",
                    "mean us", "time", "name");
            size_t top = t->run.n_kernels < CLI_TRACE_TOP ? t->run.n_kernels : CLI_TRACE_TOP;
            for (size_t i = 0; i < top; i++) {
                const fl_run_kernel *k = &t->run.kernels[i];
                char name[128];
                *fl_line_into(name, k->name, 100) = '\0';
                fprintf(f, "  %-18s%10.3f %8llu %11.3f ", "", (double)k->total_ns / 1e6,
                        (unsigned long long)k->calls, (double)k->total_ns / (double)k->calls / 1e3);
                if (t->run.kernel_ns > 0)
                    fprintf(f, "%6.1f%%", 100.0 * (double)k->total_ns / (double)t->run.kernel_ns);
                else
                    fprintf(f, "%7s", "-");
                fprintf(f, "  %s\n", name);
            }
            if (t->run.n_kernels > top) {
                uint64_t calls = 0, ns = 0;
                for (size_t i = top; i < t->run.n_kernels; i++) {
                    calls += t->run.kernels[i].calls;
                    ns = sat_add(ns, t->run.kernels[i].total_ns);
                }
                fprintf(f, "  %-18s%10.3f %8llu  (%zu more %s)\n", "", (double)ns / 1e6,
                        (unsigned long long)calls, t->run.n_kernels - top,
                        fl_plural(t->run.n_kernels - top, "kernel", "kernels"));
            }
        }
        stalls_text(t, f);
        cli_trace_sass_text(t, f);
        int any = 0;
        for (int k = 0; k < FL_RUN_COPY_KINDS; k++) {
            if (t->run.copies[k].count == 0)
                continue;
            char label[32];
            snprintf(label, sizeof label, "memcpy %s", copy_names[k]);
            ops_text(f, label, &t->run.copies[k], "copy", "copies");
            any = 1;
        }
        if (!any)
            fprintf(f, "  %-18snone\n", "memcpy");
        if (t->run.memsets.count)
            ops_text(f, "memset", &t->run.memsets, "memset", "memsets");
        else
            fprintf(f, "  %-18snone\n", "memset");
        captures_text(t, f);
        if (t->log_dir)
            fprintf(f, "  %-18s%s\n", "sessions", t->log_dir);
    }
    status_lines(t, f);
}

/* ---------------------------------------------------------------- JSON */

static void ops_json(fl_buf *b, const fl_run_ops *o)
{
    fl_buf_printf(b, "{\"count\":%llu,\"bytes\":%llu,\"time_ns\":%llu}",
                  (unsigned long long)o->count, (unsigned long long)o->bytes,
                  (unsigned long long)o->time_ns);
}

void cli_trace_json(const cli_trace *t, fl_buf *b)
{
    fl_buf_puts(b, "{\"engine\":");
    fl_buf_str(b, gpufl_engine_name(t->engine));
    cli_json_member_str(b, "plugin", t->plugin);
    cli_json_member_str(b, "log_dir", t->log_dir);
    cli_json_member_str(b, "note", t->note);
    fl_buf_printf(b, ",\"processes\":%zu,\"kernel_launches\":%llu,\"kernel_time_ns\":%llu",
                  t->run.processes, (unsigned long long)t->run.kernel_launches,
                  (unsigned long long)t->run.kernel_ns);
    fl_buf_printf(b, ",\"distinct_kernels\":%zu,\"top_kernels\":[", t->run.n_kernels);
    size_t top = t->run.n_kernels < CLI_TRACE_TOP ? t->run.n_kernels : CLI_TRACE_TOP;
    for (size_t i = 0; i < top; i++) {
        const fl_run_kernel *k = &t->run.kernels[i];
        fl_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        fl_buf_str(b, k->name);
        fl_buf_printf(b, ",\"calls\":%llu,\"total_ns\":%llu,\"mean_ns\":",
                      (unsigned long long)k->calls, (unsigned long long)k->total_ns);
        fl_buf_double(b, (double)k->total_ns / (double)k->calls);
        fl_buf_puts(b, ",\"time_pct\":");
        fl_buf_opt_double(b, t->run.kernel_ns > 0,
                          100.0 * (double)k->total_ns /
                              (double)(t->run.kernel_ns ? t->run.kernel_ns : 1));
        fl_buf_puts(b, "}");
    }
    fl_buf_puts(b, "],\"memcpy\":{");
    for (int k = 0; k < FL_RUN_COPY_KINDS; k++) {
        fl_buf_printf(b, "%s\"%s\":", k ? "," : "", copy_names[k]);
        ops_json(b, &t->run.copies[k]);
    }
    fl_buf_puts(b, "},\"memset\":");
    ops_json(b, &t->run.memsets);
    fl_buf_printf(b, ",\"pc_samples\":%llu,\"top_stalls\":[",
                  (unsigned long long)t->run.pc_samples);
    for (size_t i = 0; i < t->run.n_stalls && i < CLI_TRACE_TOP; i++) {
        fl_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        fl_buf_str(b, t->run.stalls[i].name);
        fl_buf_printf(b,
                      ",\"samples\":%llu,\"pct\":", (unsigned long long)t->run.stalls[i].samples);
        fl_buf_double(b, 100.0 * (double)t->run.stalls[i].samples / (double)t->run.pc_samples);
        fl_buf_puts(b, "}");
    }
    fl_buf_puts(b, "]");
    cli_trace_sass_json(t, b);
    fl_buf_puts(b, ",\"engines\":[");
    for (size_t i = 0; i < t->run.n_engines; i++) {
        const fl_run_engine *e = &t->run.engines[i];
        fl_buf_puts(b, i ? ",{\"selected_engine\":" : "{\"selected_engine\":");
        fl_buf_str(b, e->engine);
        cli_json_member_str(b, "requested_engine", e->requested);
        fl_buf_printf(b, ",\"processes\":%zu", e->processes);
        cli_json_member_str(b, "fallback_message", e->message);
        fl_buf_puts(b, "}");
    }
    fl_buf_puts(b, "],\"degraded\":[");
    for (size_t i = 0; i < t->run.n_caps; i++) {
        const fl_run_cap *c = &t->run.caps[i];
        fl_buf_puts(b, i ? ",{\"feature\":" : "{\"feature\":");
        fl_buf_str(b, c->feature);
        cli_json_member_str(b, "status", c->status);
        cli_json_member_str(b, "message", c->message);
        fl_buf_printf(b, ",\"processes\":%zu}", c->processes);
    }
    fl_buf_puts(b, "],\"capture_windows\":");
    if (t->run.n_captures == 0)
        fl_buf_puts(b, "null");
    for (size_t i = 0; i < t->run.n_captures; i++) {
        const fl_run_capture *c = &t->run.captures[i];
        fl_buf_printf(b, "%s{\"pid\":", i ? "," : "[");
        fl_buf_opt_i64(b, c->pid >= 0, c->pid);
        fl_buf_puts(b, ",\"rank\":");
        fl_buf_opt_i64(b, c->rank >= 0, c->rank);
        cli_json_member_str(b, "trigger", *c->trigger ? c->trigger : NULL);
        fl_buf_printf(b, ",\"windows\":%u,\"open_at_shutdown\":%u,\"captured_ns\":%llu}",
                      c->windows, c->open_at_end, (unsigned long long)c->captured_ns);
    }
    if (t->run.n_captures)
        fl_buf_puts(b, "]");
    fl_buf_printf(b, ",\"bad_lines\":%llu,\"bad_records\":%llu,\"dropped_records\":%llu}",
                  (unsigned long long)t->run.bad_lines, (unsigned long long)t->run.bad_rows,
                  (unsigned long long)t->run.dropped);
}
