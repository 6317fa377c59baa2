/*
 * report/json_stalls.c - the JSON of the PC samples (stalls.h), inside the
 * report's "stalls" object: "not_issued_samples", "distribution" (the
 * reasons merged by name, with NVIDIA's display name and meaning; null
 * meaning for one not in the table), "kernels_joined",
 * "samples_no_kernel", "kernels" (the top N by samples with their top
 * reasons, CPU stack at launch and, for the first few, "hot_pcs" and
 * "hot_lines") and "scopes".  The same figures as text_stalls.c.
 * docs/json-schema.md lists every key.
 */
#include "stalls.h"
#include "json_write.h"

#include <inttypes.h>
#include <stdio.h>

static void reason_obj(jw *w, const psreason *s, uint64_t samples)
{
    char buf[96];
    j_open(w, NULL, '{');
    j_str(w, "name", s->name);
    j_str(w, "display_name", fl_stalls_reason_label(s, buf, sizeof buf));
    j_bool(w, "not_issued", s->not_issued);
    j_u64(w, "samples", samples);
    j_close(w, '}');
}

/* A group's "samples", "not_issued_samples" and "top_reasons": what every
 * kind of group says of itself, in this order. */
static void group_counts(jw *w, const fl_stalls *ps, int kind, size_t g)
{
    j_u64(w, "samples", ps->g[kind][g].samples);
    j_u64(w, "not_issued_samples", ps->g[kind][g].not_issued);
    size_t idx[FL_STALL_MIX];
    uint64_t n[FL_STALL_MIX];
    size_t got = fl_stalls_mix(ps, kind, g, idx, n, FL_STALL_MIX);
    j_open(w, "top_reasons", '[');
    for (size_t i = 0; i < got; i++)
        reason_obj(w, &ps->rs[idx[i]], n[i]);
    j_close(w, ']');
}

static void distribution(jw *w, const fl_stalls *ps)
{
    j_open(w, "distribution", '[');
    for (size_t k = 0; k < ps->n_rs; k++) {
        const psreason *s = &ps->rs[ps->rorder ? ps->rorder[k] : k];
        char buf[96];
        j_open(w, NULL, '{');
        j_str(w, "name", s->name);
        j_str(w, "display_name", fl_stalls_reason_label(s, buf, sizeof buf));
        j_str(w, "meaning", s->info ? s->info->meaning : NULL);
        j_bool(w, "not_issued", s->not_issued);
        j_u64(w, "samples", s->samples);
        j_close(w, '}');
    }
    j_close(w, ']');
}

static void source(jw *w, const fl_report *r, uint64_t file, uint64_t line)
{
    j_opt_u64(w, "source_file_id", file && line, file);
    j_str(w, "source_file", file && line ? fl_model_source_file_name(r->m, file) : NULL);
    j_opt_u64(w, "source_line", file && line, line);
}

/* The hot PCs or lines of kernel kid (the top of them). */
static void hot(jw *w, const fl_report *r, const fl_stalls *ps, int kind, uint64_t kid, size_t top)
{
    j_open(w, kind == PS_PC ? "hot_pcs" : "hot_lines", '[');
    size_t shown = 0;
    for (size_t k = 0; k < ps->n_g[kind] && shown < top; k++) {
        size_t g = ps->order[kind][k];
        const psgroup *gr = &ps->g[kind][g];
        if (gr->a != kid || !gr->samples || (kind == PS_LINE && !gr->b))
            continue;
        shown++;
        j_open(w, NULL, '{');
        if (kind == PS_PC) {
            char hex[24];
            snprintf(hex, sizeof hex, "0x%" PRIx64, gr->c);
            j_opt_u64(w, "function_id", gr->b != 0, gr->b);
            j_str(w, "function", gr->b ? fl_model_function_name(r->m, gr->b) : NULL);
            j_u64(w, "pc_offset", gr->c);
            j_str(w, "pc_offset_hex", hex);
            source(w, r, gr->file, gr->line);
        } else {
            source(w, r, gr->b, gr->c);
        }
        group_counts(w, ps, kind, g);
        j_close(w, '}');
    }
    j_close(w, ']');
}

static const char *stack_of(const fl_report *r, uint64_t kid)
{
    const fl_mval *v = kid ? fl_map_find(&r->k_by_id, kid) : NULL;
    return v && v->a < r->n_k ? r->k[v->a].stack : NULL;
}

static void kernels(jw *w, const fl_report *r, const fl_stalls *ps, int top)
{
    size_t n = fl_stalls_top(top), nhot = fl_stalls_hot_kernels(top), shown = 0, k = 0, g;
    j_open(w, "kernels", '[');
    while (shown < n && (g = fl_stalls_next(ps, PS_KERNEL, &k)) != SIZE_MAX) {
        const psgroup *gr = &ps->g[PS_KERNEL][g];
        char buf[96];
        const char *st = stack_of(r, gr->a);
        j_open(w, NULL, '{');
        j_opt_u64(w, "kernel_id", gr->a != 0, gr->a);
        j_str(w, "name", gr->a ? fl_stalls_kernel_label(r, gr->a, buf, sizeof buf) : NULL);
        group_counts(w, ps, PS_KERNEL, g);
        j_str(w, "stack_trace", st && *st ? st : NULL);
        if (shown < nhot) {
            hot(w, r, ps, PS_PC, gr->a, n);
            hot(w, r, ps, PS_LINE, gr->a, n);
        } else {
            j_str(w, "hot_pcs", NULL);
            j_str(w, "hot_lines", NULL);
        }
        j_close(w, '}');
        shown++;
    }
    j_close(w, ']');
}

static void scopes(jw *w, const fl_report *r, const fl_stalls *ps, int top)
{
    size_t n = fl_stalls_top(top), shown = 0, k = 0, g;
    j_open(w, "scopes", '[');
    while (shown < n && (g = fl_stalls_next(ps, PS_SCOPE, &k)) != SIZE_MAX) {
        const psgroup *gr = &ps->g[PS_SCOPE][g];
        j_open(w, NULL, '{');
        j_opt_u64(w, "scope_name_id", gr->a != 0, gr->a);
        j_str(w, "name", gr->a ? fl_model_scope_name(r->m, gr->a) : NULL);
        group_counts(w, ps, PS_SCOPE, g);
        j_close(w, '}');
        shown++;
    }
    j_close(w, ']');
}

/* report --by op|line: "by" and "groups" [{name, samples,
 * not_issued_samples, top_reasons}] (ops also kind, id). */
static void groups(jw *w, const fl_report *r, const fl_stalls *ps, int top)
{
    static const char *const by[] = {"kernel", "op", "line"};
    j_str(w, "by", by[r->by]);
    j_open(w, "groups", '[');
    size_t n = fl_stalls_top(top), shown = 0, k = 0, g;
    while (ps && shown < n && (g = fl_stalls_next(ps, PS_BY, &k)) != SIZE_MAX) {
        const psgroup *gr = &ps->g[PS_BY][g];
        char buf[256];
        j_open(w, NULL, '{');
        if (r->by == FL_BY_LINE) {
            j_str(w, "name", gr->a ? (const char *)(uintptr_t)gr->a : "(no stack)");
        } else if (gr->a || gr->b) {
            fl_model_op_label(r->m, (int64_t)gr->b, gr->a, buf, sizeof buf);
            j_str(w, "name", buf);
            j_str(w, "kind", fl_external_kind_name((int64_t)gr->b));
            snprintf(buf, sizeof buf, "%" PRIu64, gr->a);
            j_str(w, "id", buf);
        } else {
            j_str(w, "name", "(no op)");
        }
        group_counts(w, ps, PS_BY, g);
        j_close(w, '}');
        shown++;
    }
    j_close(w, ']');
}

void fl_json_stall_detail(const fl_report *r, int top, jw *w)
{
    const fl_stalls *ps = r->ps;
    bool have = ps && ps->n_rs;
    j_u64(w, "not_issued_samples", have ? ps->not_issued : 0);
    j_bool(w, "kernels_joined", fl_stalls_joined(ps));
    j_opt_u64(w, "samples_no_kernel", have && fl_stalls_joined(ps), have ? ps->no_kernel : 0);
    if (!have) {
        j_open(w, "distribution", '[');
        j_close(w, ']');
        j_open(w, "kernels", '[');
        j_close(w, ']');
        j_open(w, "scopes", '[');
        j_close(w, ']');
        if (r->by != FL_BY_KERNEL)
            groups(w, r, NULL, top);
        return;
    }
    distribution(w, ps);
    kernels(w, r, ps, top);
    scopes(w, r, ps, top);
    if (r->by != FL_BY_KERNEL)
        groups(w, r, ps, top);
}
