/*
 * report/sass_render.c - the SASS metrics per kernel and per source line
 * (sass_metrics.h) as text and JSON: instructions executed, the
 * instruction mix, branch divergence (thread-instructions per
 * warp-instruction against 32) and global-memory coalescing (sectors per
 * request against the ideal).  A quantity whose metric was not collected
 * reads "n/a" (null), never 0.
 */
#include "sass_metrics.h"
#include "stalls.h"
#include "units.h"

#include <inttypes.h>
#include <stdio.h>

#define HAVE(g, k) ((((g)->have) >> (k)) & 1u)

/* ---------------------------------------------------------------- text */

static void cell_pct(fl_buf *b, bool ok, double v, int w)
{
    if (ok)
        fl_buf_printf(b, " %*.1f", w, v);
    else
        fl_buf_printf(b, " %*s", w, "n/a");
}

static void cell_num(fl_buf *b, bool ok, double v, int w)
{
    if (ok)
        fl_buf_printf(b, " %*.2f", w, v);
    else
        fl_buf_printf(b, " %*s", w, "n/a");
}

static void head(fl_buf *b, const char *what)
{
    fl_buf_printf(b, "  %12s %8s %6s %6s %6s %6s %6s %6s %6s %8s %8s %9s  %s\n", "inst", "thr/inst",
                  "warp%", "gld%", "gst%", "shld%", "shst%", "br%", "other%", "sect/req", "ideal",
                  "coalesc%", what);
}

static void group_line(const fl_report *r, const smgroup *g, bool line, fl_buf *b)
{
    smderived d;
    fl_sassm_derive(g, &d);
    if (HAVE(g, SM_INST))
        fl_buf_printf(b, "  %12" PRIu64, g->v[SM_INST]);
    else
        fl_buf_printf(b, "  %12s", "n/a");
    cell_num(b, d.have_div, d.threads_per_inst, 8);
    cell_pct(b, d.have_div, d.warp_eff_pct, 6);
    static const int mix[] = {SM_GLD, SM_GST, SM_SLD, SM_SST, SM_BRANCH};
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
        cell_pct(b, HAVE(g, SM_INST) && HAVE(g, mix[i]), d.pct[mix[i]], 6);
    cell_pct(b, d.have_mix, d.other_pct, 6);
    cell_num(b, d.have_req, d.sect_per_req, 8);
    cell_num(b, d.have_req && d.have_ideal_req, d.ideal_per_req, 8);
    cell_pct(b, d.have_coal, d.coalescing_pct, 9);
    fl_buf_puts(b, "  ");
    if (line) {
        char buf[1200];
        fl_put_line(b, fl_stalls_source_label(r, g->file, g->line, buf, sizeof buf), 60);
        fl_buf_puts(b, "  ");
    }
    const char *name = fl_model_function_name(r->m, g->fn);
    if (name)
        fl_put_line(b, name, 100);
    else
        fl_buf_printf(b, "(function id %" PRIu64 ")", g->fn);
    fl_buf_puts(b, "\n");
}

void fl_text_sass_detail(const fl_report *r, int top, fl_buf *b)
{
    const fl_sassm *x = r->sx;
    if (!x || !x->n_g[SMG_FUNCTION])
        return;
    size_t n = fl_stalls_top(top);
    fl_buf_puts(b, "  by kernel: instructions executed, threads per warp instruction (of 32), "
                   "the mix, global sectors per request against the ideal\n");
    head(b, "function");
    size_t nf = x->n_g[SMG_FUNCTION];
    for (size_t i = 0; i < nf && i < n; i++)
        group_line(r, &x->g[SMG_FUNCTION][x->order[SMG_FUNCTION][i]], false, b);
    if (nf > n)
        fl_buf_printf(b, "  (%zu more)\n", nf - n);
    size_t nl = x->n_g[SMG_LINE];
    if (!nl) {
        fl_buf_puts(b, "  by source line: none (record with source collection, and build with "
                       "nvcc -lineinfo)\n");
        return;
    }
    fl_buf_puts(b, "  by source line\n");
    head(b, "line  function");
    for (size_t i = 0; i < nl && i < n; i++)
        group_line(r, &x->g[SMG_LINE][x->order[SMG_LINE][i]], true, b);
    if (nl > n)
        fl_buf_printf(b, "  (%zu more)\n", nl - n);
    if (x->no_line_rows)
        fl_buf_printf(b, "  (%" PRIu64 " instruction %s without a source line)\n", x->no_line_rows,
                      fl_plural(x->no_line_rows, "row", "rows"));
}

/* ---------------------------------------------------------------- JSON */

static void j_group(const fl_report *r, const smgroup *g, bool line, jw *w)
{
    smderived d;
    fl_sassm_derive(g, &d);
    j_open(w, NULL, '{');
    j_str(w, "function", fl_model_function_name(r->m, g->fn));
    j_u64(w, "function_id", g->fn);
    if (line) {
        j_str(w, "source_file", fl_model_source_file_name(r->m, g->file));
        j_u64(w, "source_line", g->line);
    }
    j_opt_u64(w, "instructions", HAVE(g, SM_INST), g->v[SM_INST]);
    j_opt_u64(w, "thread_instructions", HAVE(g, SM_THREAD), g->v[SM_THREAD]);
    j_dbl(w, "threads_per_instruction", d.have_div, d.threads_per_inst);
    j_dbl(w, "warp_efficiency_pct", d.have_div, d.warp_eff_pct);
    j_open(w, "mix_pct", '{');
    j_dbl(w, "global_ld", HAVE(g, SM_INST) && HAVE(g, SM_GLD), d.pct[SM_GLD]);
    j_dbl(w, "global_st", HAVE(g, SM_INST) && HAVE(g, SM_GST), d.pct[SM_GST]);
    j_dbl(w, "shared_ld", HAVE(g, SM_INST) && HAVE(g, SM_SLD), d.pct[SM_SLD]);
    j_dbl(w, "shared_st", HAVE(g, SM_INST) && HAVE(g, SM_SST), d.pct[SM_SST]);
    j_dbl(w, "branch", HAVE(g, SM_INST) && HAVE(g, SM_BRANCH), d.pct[SM_BRANCH]);
    j_dbl(w, "other", d.have_mix, d.other_pct);
    j_close(w, '}');
    bool req = HAVE(g, SM_GLD) || HAVE(g, SM_GST);
    j_opt_u64(w, "global_requests", req, g->v[SM_GLD] + g->v[SM_GST]);
    j_opt_u64(w, "global_sectors", HAVE(g, SM_SECT), g->v[SM_SECT]);
    j_opt_u64(w, "global_sectors_ideal", HAVE(g, SM_SECT_IDEAL), g->v[SM_SECT_IDEAL]);
    j_dbl(w, "sectors_per_request", d.have_req, d.sect_per_req);
    j_dbl(w, "ideal_sectors_per_request", d.have_req && d.have_ideal_req, d.ideal_per_req);
    j_dbl(w, "coalescing_efficiency_pct", d.have_coal, d.coalescing_pct);
    j_opt_u64(w, "shared_wavefronts", HAVE(g, SM_SWAVE), g->v[SM_SWAVE]);
    j_opt_u64(w, "divergent_branch_targets", HAVE(g, SM_DIVERGENT), g->v[SM_DIVERGENT]);
    j_close(w, '}');
}

void fl_json_sass_detail(const fl_report *r, int top, jw *w)
{
    const fl_sassm *x = r->sx;
    size_t n = fl_stalls_top(top);
    static const char *const keys[SMG_KINDS] = {"kernels", "lines"};
    for (int k = 0; k < SMG_KINDS; k++) {
        j_open(w, keys[k], '[');
        for (size_t i = 0; x && i < x->n_g[k] && i < n; i++)
            j_group(r, &x->g[k][x->order[k][i]], k == SMG_LINE, w);
        j_close(w, ']');
        j_u64(w, k == SMG_LINE ? "lines_not_shown" : "kernels_not_shown",
              x && x->n_g[k] > n ? x->n_g[k] - n : 0);
    }
    j_u64(w, "rows_without_source_line", x ? x->no_line_rows : 0);
}
