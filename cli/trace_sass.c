/*
 * trace_sass.c - the SassMetrics part of the Trace engine's summary
 * (trace.c): the line and the JSON object the sums of the SASS metrics
 * (report/run.c) give - instructions executed, threads per
 * warp instruction (of 32), global sectors per request and their ideal;
 * a figure whose metrics no row carried is left out (null in JSON); and
 * the hint when SassMetrics or RangeProfiler measured nothing because no
 * kernel ran in their window (the gpufl scopes).
 */
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>

/* What the summary line says of the SASS metrics (a quantity without its
 * metrics: not known). */
typedef struct sass_fig {
    bool inst, threads, sectors, ideal;
    double threads_per_inst, sect_per_req, ideal_per_req;
} sass_fig;

static sass_fig sass_figures(const cli_trace *t)
{
    sass_fig g = {0};
    const uint64_t *v = t->run.sass_v;
    unsigned h = t->run.sass_have;
    double req = (double)v[2] + (double)v[3];
    g.inst = (h & 1u) && v[0] > 0;
    g.threads = g.inst && (h & 2u);
    g.threads_per_inst = g.threads ? (double)v[1] / (double)v[0] : 0;
    g.sectors = (h & 12u) && (h & 16u) && req > 0;
    g.sect_per_req = g.sectors ? (double)v[4] / req : 0;
    g.ideal = g.sectors && (h & 32u);
    g.ideal_per_req = g.ideal ? (double)v[5] / req : 0;
    return g;
}

/* SassMetrics, one line: "sass metrics  17 rows  590 instructions  28.9
 * threads per warp instruction (of 32)  8.70 global sectors per request
 * (ideal 4.00)". */
void cli_trace_sass_text(const cli_trace *t, FILE *f)
{
    if (!t->run.sass_rows)
        return;
    sass_fig g = sass_figures(t);
    fprintf(f, "  %-18s%llu %s", "sass metrics", (unsigned long long)t->run.sass_rows,
            fl_plural(t->run.sass_rows, "row", "rows"));
    if (g.inst)
        fprintf(f, "  %llu instructions", (unsigned long long)t->run.sass_v[0]);
    if (g.threads)
        fprintf(f, "  %.1f threads per warp instruction (of 32)", g.threads_per_inst);
    if (g.sectors)
        fprintf(f, "  %.2f global sectors per request", g.sect_per_req);
    if (g.ideal)
        fprintf(f, " (ideal %.2f)", g.ideal_per_req);
    fputc('\n', f);
}

void cli_trace_sass_json(const cli_trace *t, fl_buf *b)
{
    sass_fig g = sass_figures(t);
    fl_buf_printf(b, ",\"sass_metrics\":{\"rows\":%llu,\"instructions\":",
                  (unsigned long long)t->run.sass_rows);
    if (g.inst)
        fl_buf_printf(b, "%llu", (unsigned long long)t->run.sass_v[0]);
    else
        fl_buf_puts(b, "null");
    fl_buf_member_opt_double(b, "threads_per_instruction", g.threads, g.threads_per_inst);
    fl_buf_member_opt_double(b, "sectors_per_request", g.sectors, g.sect_per_req);
    fl_buf_member_opt_double(b, "ideal_sectors_per_request", g.ideal, g.ideal_per_req);
    fl_buf_puts(b, "}");
}

/* An unmodified program opens no gpufl scope, so the scoped engines see
 * nothing: say so, with the way out, instead of a silent empty section.
 * Only when some process ran the engine asked for (a fallback is said by
 * its own line) and launched kernels. */
void cli_trace_window_hint(const cli_trace *t, FILE *f)
{
    int ran = 0;
    for (size_t i = 0; i < t->run.n_engines; i++)
        ran |= t->run.engines[i].message == NULL;
    if (!ran || t->run.kernel_launches == 0)
        return;
    bool sass = t->engine == GPUFL_ENGINE_SASS_METRICS || t->engine == GPUFL_ENGINE_DEEP;
    if (sass && t->run.sass_rows == 0 && !t->sass_all_kernels)
        fputs("gpu-profile: trace: SassMetrics counted no kernel: it counts kernels run inside "
              "gpufl scopes and none ran inside one (--sass-all-kernels counts every kernel)\n",
              f);
    if (t->engine == GPUFL_ENGINE_RANGE_PROFILER && t->run.perf_ranges == 0)
        fputs("gpu-profile: trace: RangeProfiler profiled no range: its ranges are gpufl scopes "
              "(gpufl_scope_begin, GFL_SCOPE, gpufl.scope) and no kernel ran inside one\n",
              f);
}
