/*
 * report/text_stalls.c - the text of the PC samples (stalls.h), in the
 * report's "stalls" section: the stall-reason distribution with NVIDIA's
 * names and a one-line meaning each; the samples per kernel (with the
 * samples whose corr_id matched no kernel counted) and per scope, each
 * with its top reasons; then for the kernels with most samples their
 * hottest PCs (function, offset, source line) and source lines with their
 * stall mix.  Bounded by the report's --top.
 */
#include "stalls.h"
#include "../util/buf.h"
#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static double pct(uint64_t n, uint64_t of)
{
    return of ? 100.0 * (double)n / (double)of : 0.0;
}

static void distribution(const fl_report *r, const fl_stalls *ps, fl_buf *b)
{
    fl_buf_printf(b, "\nstalls  %" PRIu64 " PC %s", ps->samples,
                  fl_plural(ps->samples, "sample", "samples"));
    if (ps->not_issued)
        fl_buf_printf(b, " (%" PRIu64 " of them also counted not issued)", ps->not_issued);
    fl_buf_printf(b, ", %zu %s\n", ps->n_rs, fl_plural(ps->n_rs, "reason", "reasons"));
    fl_buf_printf(b, "  %10s %7s  %-30s %s\n", "samples", "%", "reason", "meaning");
    for (size_t k = 0; k < ps->n_rs; k++) {
        const psreason *s = &ps->rs[ps->rorder ? ps->rorder[k] : k];
        char buf[96];
        fl_buf_printf(b, "  %10" PRIu64 " %6.1f%%  ", s->samples, pct(s->samples, ps->samples));
        fl_buf_printf(b, "%-30s ", fl_stalls_reason_label(s, buf, sizeof buf));
        fl_put_line(b, s->info ? s->info->meaning : "(not in the table of reasons: as given)", 120);
        fl_buf_puts(b, "\n");
    }
    (void)r;
}

/* "Long Scoreboard 80.0%, Barrier 10.0%" of a group's samples. */
static void mix(const fl_stalls *ps, int kind, size_t g, fl_buf *b)
{
    size_t idx[FL_STALL_MIX];
    uint64_t n[FL_STALL_MIX];
    size_t got = fl_stalls_mix(ps, kind, g, idx, n, FL_STALL_MIX);
    const psgroup *gr = &ps->g[kind][g];
    for (size_t i = 0; i < got; i++) {
        char buf[96];
        fl_buf_puts(b, i ? ", " : "");
        fl_put_line(b, fl_stalls_reason_label(&ps->rs[idx[i]], buf, sizeof buf), 60);
        fl_buf_printf(b, " %.1f%%", pct(n[i], gr->samples ? gr->samples : gr->not_issued));
    }
}

/* One group: samples, % of total, name, then its mix on the next line. */
static void group_line(const fl_stalls *ps, int kind, size_t g, const char *name, uint64_t total,
                       fl_buf *b)
{
    const psgroup *gr = &ps->g[kind][g];
    fl_buf_printf(b, "  %10" PRIu64 " %6.1f%%  ", gr->samples, pct(gr->samples, total));
    fl_put_line(b, name, 100);
    fl_buf_puts(b, "\n  ");
    fl_buf_printf(b, "%20s", "");
    mix(ps, kind, g, b);
    fl_buf_puts(b, "\n");
}

typedef const char *group_label_fn(const fl_report *r, const psgroup *g, char *buf, size_t len);

/* The groups of one dimension that have samples, most first: a line each
 * up to top, then how many groups were not shown. */
static void group_lines(const fl_report *r, const fl_stalls *ps, int kind, size_t top,
                        group_label_fn *label, fl_buf *b)
{
    size_t n = ps->n_g[kind], shown = 0, k = 0, g;
    while (shown < top && (g = fl_stalls_next(ps, kind, &k)) != SIZE_MAX) {
        char buf[256];
        group_line(ps, kind, g, label(r, &ps->g[kind][g], buf, sizeof buf), ps->samples, b);
        shown++;
    }
    if (n > shown)
        fl_buf_printf(b, "  (%zu more)\n", n - shown);
}

static const char *kernel_label(const fl_report *r, const psgroup *g, char *buf, size_t len)
{
    return fl_stalls_kernel_label(r, g->a, buf, len);
}

static void per_kernel(const fl_report *r, const fl_stalls *ps, size_t top, fl_buf *b)
{
    if (!fl_stalls_joined(ps)) {
        fl_buf_puts(b, "  by kernel: n/a (the session does not say it samples PCs: the kernel "
                       "rows' corr ids were not kept)\n");
        return;
    }
    fl_buf_printf(b,
                  "  by kernel (corr_id joined to the kernel rows; %" PRIu64 " %s matched no "
                  "kernel)\n",
                  ps->no_kernel, fl_plural(ps->no_kernel, "sample", "samples"));
    group_lines(r, ps, PS_KERNEL, top, kernel_label, b);
}

static const char *scope_label(const fl_report *r, const psgroup *g, char *buf, size_t len)
{
    const char *name = g->a ? fl_model_scope_name(r->m, g->a) : "(no scope)";
    if (!name) {
        snprintf(buf, len, "(scope name id %" PRIu64 ")", g->a);
        name = buf;
    }
    return name;
}

static void per_scope(const fl_report *r, const fl_stalls *ps, size_t top, fl_buf *b)
{
    fl_buf_puts(b, "  by scope\n");
    group_lines(r, ps, PS_SCOPE, top, scope_label, b);
}

const char *fl_stalls_source_label(const fl_report *r, uint64_t file, uint64_t line, char *buf,
                                   size_t len)
{
    const char *f = file ? fl_model_source_file_name(r->m, file) : NULL;
    if (!file || !line)
        snprintf(buf, len, "-");
    else if (f)
        snprintf(buf, len, "%s:%" PRIu64, f, line);
    else
        snprintf(buf, len, "(file id %" PRIu64 "):%" PRIu64, file, line);
    return buf;
}

/* The hot PCs (kind PS_PC) or source lines (PS_LINE) of kernel kid. */
static void hot(const fl_report *r, const fl_stalls *ps, int kind, uint64_t kid, uint64_t total,
                size_t top, fl_buf *b)
{
    size_t n = ps->n_g[kind], shown = 0, more = 0;
    for (size_t k = 0; k < n; k++) {
        size_t g = ps->order[kind][k];
        const psgroup *gr = &ps->g[kind][g];
        if (gr->a != kid || !gr->samples || (kind == PS_LINE && !gr->b))
            continue;
        if (shown == top) {
            more++;
            continue;
        }
        if (!shown++)
            fl_buf_printf(b, "    %10s %7s  %s\n", "samples", "%",
                          kind == PS_PC ? "pc  function  source: top reasons"
                                        : "source: top reasons");
        char buf[300];
        fl_buf_printf(b, "    %10" PRIu64 " %6.1f%%  ", gr->samples, pct(gr->samples, total));
        if (kind == PS_PC) {
            const char *fn = gr->b ? fl_model_function_name(r->m, gr->b) : NULL;
            fl_buf_printf(b, "0x%" PRIx64 "  ", gr->c);
            if (fn)
                fl_put_line(b, fn, 60);
            else
                fl_buf_printf(b, "(function id %" PRIu64 ")", gr->b);
            fl_buf_puts(b, "  ");
            fl_put_line(b, fl_stalls_source_label(r, gr->file, gr->line, buf, sizeof buf), 80);
        } else {
            fl_put_line(b, fl_stalls_source_label(r, gr->b, gr->c, buf, sizeof buf), 80);
        }
        fl_buf_puts(b, ": ");
        mix(ps, kind, g, b);
        fl_buf_puts(b, "\n");
    }
    if (more)
        fl_buf_printf(b, "    (%zu more)\n", more);
}

static void hot_kernels(const fl_report *r, const fl_stalls *ps, int top, fl_buf *b)
{
    size_t nk = fl_stalls_hot_kernels(top), shown = 0, k = 0, g;
    while (shown < nk && (g = fl_stalls_next(ps, PS_KERNEL, &k)) != SIZE_MAX) {
        const psgroup *gr = &ps->g[PS_KERNEL][g];
        char buf[96];
        shown++;
        fl_buf_puts(b, "  hot PCs of ");
        fl_put_line(b, fl_stalls_kernel_label(r, gr->a, buf, sizeof buf), 100);
        fl_buf_printf(b, "  (%" PRIu64 " %s)\n", gr->samples,
                      fl_plural(gr->samples, "sample", "samples"));
        hot(r, ps, PS_PC, gr->a, gr->samples, fl_stalls_top(top), b);
        hot(r, ps, PS_LINE, gr->a, gr->samples, fl_stalls_top(top), b);
    }
}

/* A PS_BY group's name: the op (by.c's label) or the line. */
static const char *by_label(const fl_report *r, const psgroup *g, char *buf, size_t len)
{
    if (r->by == FL_BY_LINE)
        return g->a ? (const char *)(uintptr_t)g->a : "(no stack)";
    if (!g->a && !g->b)
        return "(no op)";
    fl_model_op_label(r->m, (int64_t)g->b, g->a, buf, len);
    return buf;
}

/* report --by op|line: the samples by the op or line of their launch. */
static void per_by(const fl_report *r, const fl_stalls *ps, size_t top, fl_buf *b)
{
    const char *what = r->by == FL_BY_OP ? "op" : "line";
    if (!fl_stalls_joined(ps)) {
        fl_buf_printf(b, "  by %s: n/a (the session does not say it samples PCs)\n", what);
        return;
    }
    fl_buf_printf(b, "  by %s (corr_id joined to the launch's %s)\n", what,
                  r->by == FL_BY_OP ? "framework op" : "CPU stack");
    group_lines(r, ps, PS_BY, top, by_label, b);
}

void fl_text_stall_detail(const fl_report *r, int top, fl_buf *b)
{
    const fl_stalls *ps = r->ps;
    if (!ps || !ps->n_rs)
        return;
    distribution(r, ps, b);
    per_kernel(r, ps, fl_stalls_top(top), b);
    per_scope(r, ps, fl_stalls_top(top), b);
    if (r->by != FL_BY_KERNEL)
        per_by(r, ps, fl_stalls_top(top), b);
    hot_kernels(r, ps, top, b);
}
