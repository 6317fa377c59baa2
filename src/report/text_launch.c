/*
 * report/text_launch.c - the text of what GPUFlight records about launches
 * beyond kernel rows: CUDA graph launches and their node definitions (in
 * the section "hotspots", after the kernels), the execution signature of
 * a scope's launches (section "scopes"), and deep windows, the spans a
 * deep engine captured (section "capture").  Each block comes only when
 * the session has such records.
 */
#include "report_int.h"
#include "../util/buf.h"
#include "units.h"

#include <inttypes.h>
#include <stdio.h>

void fl_text_graphs(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    if (!r->n_gr)
        return;
    fl_buf_printf(b, "\ngraphs  %" PRIu64 " %s  ", r->graphs,
                  fl_plural(r->graphs, "launch", "launches"));
    fl_dur_text(b, r->graph_ns);
    fl_buf_printf(b, "  %zu %s\n", r->n_gr, fl_plural(r->n_gr, "graph", "graphs"));
    fl_buf_printf(b, "  %8s %11s %7s  %s\n", "launches", "time ms", "nodes", "graph");
    for (size_t i = 0; i < r->n_gr; i++) {
        const graphstat *g = &r->gr[i];
        fl_buf_printf(b, "  %8" PRIu64 " %11.3f ", g->launches, (double)g->time_ns / 1e6);
        if (g->exec_key)
            fl_buf_printf(b, "%7" PRIu64 "  exec ", g->nodes);
        else
            fl_buf_printf(b, "%7s  ", "n/a");
        if (g->exec_key)
            fl_put_line(b, g->exec_key, 40);
        if (g->have_graph_id)
            fl_buf_printf(b, g->exec_key ? " (graph %" PRIu64 ")" : "graph %" PRIu64, g->graph_id);
        else if (!g->exec_key)
            fl_buf_puts(b, "graph n/a");
        fl_buf_puts(b, "\n");
    }
}

void fl_text_signatures(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    if (!r->n_sg)
        return;
    fl_buf_puts(b, "  execution signatures (the kernels a scope launched)\n");
    for (size_t i = 0; i < r->n_sg; i++) {
        const sigstat *s = &r->sg[i];
        fl_buf_puts(b, "    ");
        fl_put_line(b, s->scope, 100);
        fl_buf_puts(b, "  ");
        fl_put_line(b, s->signature, 40);
        fl_buf_printf(b, "  %" PRIu64 " %s, %" PRIu64 " distinct %s", s->launch_count,
                      fl_plural(s->launch_count, "launch", "launches"), s->distinct_kernels,
                      fl_plural(s->distinct_kernels, "kernel", "kernels"));
        if (s->records > 1)
            fl_buf_printf(b, " (the last of %" PRIu64 " records)", s->records);
        fl_buf_puts(b, "\n");
    }
}

void fl_text_capture_windows(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    for (size_t i = 0; i < r->n_cw; i++) {
        const capwin *c = &r->cw[i];
        fl_buf_puts(b, "  capture windows   ");
        fl_put_line(b, c->trigger, 20);
        if (c->name[0]) {
            fl_buf_puts(b, " ");
            fl_put_line(b, c->name, 60);
        }
        fl_buf_printf(b, "  %" PRIu64 " %s  ", c->count, fl_plural(c->count, "window", "windows"));
        fl_dur_text(b, c->time_ns);
        if (c->open)
            fl_buf_printf(b, "  (%" PRIu64 " open at shutdown)", c->open);
        fl_buf_puts(b, "  trace rows outside them not recorded\n");
    }
    if (r->capwin_other)
        fl_buf_printf(b, "  capture windows   %" PRIu64 " more of other triggers\n",
                      r->capwin_other);
}

void fl_text_deep_windows(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    for (size_t i = 0; i < r->n_dw; i++) {
        const deepstat *d = &r->dw[i];
        fl_buf_puts(b, "  deep window       ");
        fl_put_line(b, d->name[0] ? d->name : "(unnamed)", 60);
        fl_buf_printf(b, "  %" PRIu64 " %s  ", d->count, fl_plural(d->count, "window", "windows"));
        fl_dur_text(b, d->time_ns);
        fl_buf_printf(b, "  %" PRIu64 " %s covered", d->launches,
                      fl_plural(d->launches, "launch", "launches"));
        if (d->engines && d->engines[0]) {
            fl_buf_puts(b, "  engines ");
            fl_put_line(b, d->engines, 60);
        }
        if (d->close_reason && d->close_reason[0]) {
            fl_buf_puts(b, "  closed by ");
            fl_put_line(b, d->close_reason, 40);
        }
        if (d->triggered) {
            fl_buf_printf(b, "  %" PRIu64 " opened by rule ", d->triggered);
            fl_put_line(b, d->rule_id ? d->rule_id : "?", 40);
            if (d->metric) {
                fl_buf_puts(b, " (");
                fl_put_line(b, d->metric, 40);
                fl_buf_printf(b, " %s", d->op ? d->op : "?");
                if (d->have_threshold)
                    fl_buf_printf(b, " %g", d->threshold);
                if (d->have_observed)
                    fl_buf_printf(b, ", observed %g", d->observed);
                fl_buf_puts(b, ")");
            }
        }
        fl_buf_puts(b, "\n");
    }
}
