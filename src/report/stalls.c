/*
 * report/stalls.c - PC samples kept as stalls.h says: each sample_kind 0
 * row counted once overall, per reason (merged by name), per kernel (its
 * corr_id looked up among the kernel rows' corr ids, kept only when the
 * session says it samples PCs, sorted once), per scope, per PC and per
 * source line, with each group's reasons in one map.  A "_not_issued"
 * reason (a subset of the samples, the PC Sampling API's second count) is
 * kept beside the samples, never added to them.
 */
#include "stalls.h"
#include "fields.h"
#include "model_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fl_stalls *fl_stalls_of(fl_report *r)
{
    if (r->ps)
        return r->ps;
    fl_stalls *ps = calloc(1, sizeof *ps);
    if (!ps) {
        r->oom = true;
        return NULL;
    }
    ps->rcache.budget = &r->m->keys;
    ps->mix.budget = &r->m->keys;
    for (int k = 0; k < PS_KINDS; k++)
        ps->by[k].budget = &r->m->keys;
    ps->corr_by.budget = ps->line_of.budget = &r->m->keys;
    r->ps = ps;
    return ps;
}

static bool engine_samples(const char *e)
{
    return e && (!strcmp(e, "nvidia.pc_sampling") || !strcmp(e, "nvidia.deep") ||
                 !strcmp(e, "PcSampling") || !strcmp(e, "Deep"));
}

void fl_stalls_record(fl_report *r, fl_type t, const json_t *rec)
{
    bool on = false;
    if (t == FL_T_JOB_START) {
        on = engine_samples(fl_jget_str(rec, "profiling_engine"));
    } else if (t == FL_T_CAPTURE_CAPABILITIES) {
        on = engine_samples(fl_jget_str(rec, "requested_engine")) ||
             engine_samples(fl_jget_str(rec, "selected_engine"));
        const json_t *caps = json_object_get(rec, "capabilities");
        for (size_t i = 0; i < json_array_size(caps); i++) {
            const json_t *c = json_array_get(caps, i);
            const char *f = fl_jget_str(c, "feature");
            if (f && !strcmp(f, "pc_sampling") && json_is_true(json_object_get(c, "requested")))
                on = true;
        }
    } else {
        return;
    }
    if (on && !(r->ps && r->ps->join_on)) {
        fl_stalls *ps = fl_stalls_of(r);
        if (ps)
            ps->join_on = true;
    }
}

/* The interned label of the line a stack was launched from (by.c's
 * rule), computed once per stack; NULL when out of memory. */
static const char *line_label_of(fl_report *r, fl_stalls *ps, const char *stack)
{
    bool fresh;
    fl_mval *v = fl_map_put(&ps->line_of, (uint64_t)(uintptr_t)stack, &fresh);
    if (!v)
        return NULL;
    if (fresh) {
        char buf[256];
        fl_by_line_label(stack, buf, sizeof buf);
        v->a = (uintptr_t)fl_pool_intern(&r->pool, buf);
    }
    return (const char *)(uintptr_t)v->a;
}

/* With report --by op|line: each launch's group by its corr id. */
static void kernels_by(fl_report *r, fl_stalls *ps, const fl_batch *b, int c_corr, int c_kid)
{
    int c_ek = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_KIND),
        c_eid = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_ID),
        c_hd = fl_batch_colid(b, FL_COL_KERNEL_HAS_DETAILS);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t corr, kid, ek = 0, eid = 0, hd = 0;
        if (!fl_rcell_u64(b, i, c_corr, &corr) || !fl_rcell_u64(b, i, c_kid, &kid) ||
            corr > UINT32_MAX || kid > UINT32_MAX)
            continue;
        uint64_t a = 0, bb = 0;
        if (r->by == FL_BY_OP) {
            if (c_ek < 0 || !fl_rcell_u64(b, i, c_ek, &ek) || !ek ||
                !fl_rcell_u64(b, i, c_eid, &eid))
                continue;
            a = eid;
            bb = ek;
        } else {
            if (c_hd >= 0)
                fl_rcell_u64(b, i, c_hd, &hd);
            const char *st = fl_model_peek_stack(r->m, (uint32_t)kid, (uint32_t)corr, hd > 0);
            if (!st || !*st)
                continue; /* "(no stack)", with the samples of no launch */
            a = (uintptr_t)line_label_of(r, ps, st);
        }
        fl_mval *v = fl_map_put(&ps->corr_by, corr, NULL);
        if (!v) {
            r->oom = true;
            return;
        }
        v->a = a;
        v->b = bb;
    }
}

void fl_stalls_kernels(fl_report *r, const fl_batch *b)
{
    fl_stalls *ps = r->ps;
    if (!ps || !ps->join_on)
        return;
    if (r->by != FL_BY_KERNEL) {
        int cc = fl_batch_colid(b, FL_COL_KERNEL_CORR_ID),
            ck = fl_batch_colid(b, FL_COL_KERNEL_KERNEL_ID);
        if (cc >= 0 && ck >= 0)
            kernels_by(r, ps, b, cc, ck);
    }
    int c_corr = fl_batch_colid(b, FL_COL_KERNEL_CORR_ID),
        c_kid = fl_batch_colid(b, FL_COL_KERNEL_KERNEL_ID);
    if (c_corr < 0 || c_kid < 0)
        return;
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t corr, kid;
        if (!fl_rcell_u64(b, i, c_corr, &corr) || !fl_rcell_u64(b, i, c_kid, &kid))
            continue;
        if (corr > UINT32_MAX || kid > UINT32_MAX || ps->n_corr >= FL_STALL_JOIN_MAX) {
            ps->corr_dropped++;
            continue;
        }
        if (fl_grow((void **)&ps->corr, &ps->cap_corr, ps->n_corr + 1, sizeof *ps->corr) != 0) {
            r->oom = true;
            return;
        }
        if (ps->n_corr && ps->corr[ps->n_corr - 1][0] > corr)
            ps->sorted = false;
        else if (!ps->n_corr)
            ps->sorted = true;
        ps->corr[ps->n_corr][0] = (uint32_t)corr;
        ps->corr[ps->n_corr][1] = (uint32_t)kid;
        ps->n_corr++;
    }
}

static int cmp_corr(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The kernel_id of a corr id; 0 when no kernel row had it. */
static uint64_t kernel_of_corr(fl_stalls *ps, uint64_t corr)
{
    if (!ps->n_corr || corr > UINT32_MAX)
        return 0;
    if (!ps->sorted) {
        qsort(ps->corr, ps->n_corr, sizeof *ps->corr, cmp_corr);
        ps->sorted = true;
    }
    size_t lo = 0, hi = ps->n_corr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ps->corr[mid][0] < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ps->n_corr && ps->corr[lo][0] == corr ? ps->corr[lo][1] : 0;
}

/* The reason of a row, made at its first use; SIZE_MAX when out of memory. */
static size_t reason_of(fl_report *r, fl_stalls *ps, const psrow *row)
{
    uint64_t key = row->have_metric && row->metric_id ? row->metric_id * 2 + 1 : row->reason * 2;
    fl_mval *v = fl_map_find(&ps->rcache, key);
    if (v)
        return (size_t)v->a;
    char buf[160], num[48];
    bool not_issued = false;
    const char *name = NULL;
    if (key & 1) {
        const char *m = fl_model_metric_name(r->m, row->metric_id);
        if (m)
            name = fl_stall_short(m, buf, sizeof buf, &not_issued);
        else
            snprintf(num, sizeof num, "stall metric id %" PRIu64, row->metric_id);
    } else {
        name = fl_stall_reason_name(row->reason);
        if (!name)
            snprintf(num, sizeof num, "stall reason %" PRIu64, row->reason);
    }
    const char *in = fl_pool_intern(&r->pool, name ? name : num);
    if (!in)
        return SIZE_MAX;
    size_t i = 0;
    while (i < ps->n_rs && !(ps->rs[i].name == in && ps->rs[i].not_issued == not_issued))
        i++;
    if (i == ps->n_rs) {
        if (i >= 0xffff || !fl_keys_take(&r->m->keys) ||
            fl_grow((void **)&ps->rs, &ps->cap_rs, i + 1, sizeof *ps->rs) != 0)
            return SIZE_MAX;
        ps->rs[i] = (psreason){.name = in, .info = fl_stall_info_of(in), .not_issued = not_issued};
        ps->n_rs++;
    }
    bool fresh;
    v = fl_map_put(&ps->rcache, key, &fresh);
    if (!v)
        return SIZE_MAX;
    v->a = i;
    return i;
}

static uint64_t mix_hash(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 29) ^ b) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 31) ^ c) * 0x94d049bb133111ebull;
    return h ^ (h >> 32);
}

/* The group (a, b, c) of kind, made at its first use; SIZE_MAX when out
 * of memory.  Keys that hash alike probe on (h + 1, ...). */
static size_t group_of(fl_stalls *ps, int kind, uint64_t a, uint64_t b, uint64_t c)
{
    for (uint64_t h = mix_hash(a, b, c);; h++) {
        bool fresh;
        fl_mval *v = fl_map_put(&ps->by[kind], h, &fresh);
        if (!v)
            return SIZE_MAX;
        if (!fresh) {
            const psgroup *g = &ps->g[kind][v->a];
            if (g->a == a && g->b == b && g->c == c)
                return (size_t)v->a;
            continue;
        }
        size_t n = ps->n_g[kind];
        if (n >= ((size_t)1 << 44) ||
            fl_grow((void **)&ps->g[kind], &ps->cap_g[kind], n + 1, sizeof *ps->g[kind]) != 0) {
            fl_map_del(&ps->by[kind], h);
            return SIZE_MAX;
        }
        ps->g[kind][n] = (psgroup){.a = a, .b = b, .c = c};
        ps->n_g[kind]++;
        v->a = n;
        return n;
    }
}

static uint64_t mix_key(int kind, size_t group, size_t reason)
{
    return (uint64_t)kind << 61 | (uint64_t)group << 16 | (uint64_t)reason;
}

/* n samples of reason in group (a, b, c) of kind; its index, SIZE_MAX
 * when out of memory. */
static size_t count(fl_stalls *ps, int kind, uint64_t a, uint64_t b, uint64_t c, size_t reason,
                    uint64_t n)
{
    size_t g = group_of(ps, kind, a, b, c);
    if (g == SIZE_MAX)
        return g;
    if (ps->rs[reason].not_issued)
        ps->g[kind][g].not_issued += n;
    else
        ps->g[kind][g].samples += n;
    bool fresh;
    fl_mval *v = fl_map_put(&ps->mix, mix_key(kind, g, reason), &fresh);
    if (!v)
        return SIZE_MAX;
    v->a += n;
    return g;
}

bool fl_stalls_row(fl_report *r, psrow *row)
{
    fl_stalls *ps = fl_stalls_of(r);
    if (!ps)
        return false;
    size_t ri = reason_of(r, ps, row);
    if (ri == SIZE_MAX) {
        r->oom = true;
        return false;
    }
    uint64_t n = row->samples;
    ps->rs[ri].samples += n;
    row->not_issued = ps->rs[ri].not_issued;
    uint64_t kid = row->have_corr ? kernel_of_corr(ps, row->corr) : 0;
    if (ps->rs[ri].not_issued) {
        ps->not_issued += n;
    } else {
        ps->samples += n;
        if (!kid)
            ps->no_kernel += n;
    }
    bool ok = count(ps, PS_KERNEL, kid, 0, 0, ri, n) != SIZE_MAX &&
              count(ps, PS_SCOPE, row->scope, 0, 0, ri, n) != SIZE_MAX;
    if (ok && row->have_pc) {
        size_t g = count(ps, PS_PC, kid, row->function_id, row->pc, ri, n);
        ok = g != SIZE_MAX;
        if (ok && !ps->g[PS_PC][g].line && row->file && row->line) {
            ps->g[PS_PC][g].file = row->file;
            ps->g[PS_PC][g].line = row->line;
        }
    }
    if (ok && row->file && row->line)
        ok = count(ps, PS_LINE, kid, row->file, row->line, ri, n) != SIZE_MAX;
    if (ok && r->by != FL_BY_KERNEL && fl_stalls_joined(ps)) {
        const fl_mval *v = row->have_corr && row->corr <= UINT32_MAX && ps->corr_by.n
                               ? fl_map_find(&ps->corr_by, row->corr)
                               : NULL;
        ok = count(ps, PS_BY, v ? v->a : 0, v ? v->b : 0, 0, ri, n) != SIZE_MAX;
    }
    if (!ok)
        r->oom = true;
    return ok;
}

/* Whether reason x (n samples) goes before reason y (m samples) in a mix. */
static bool mix_before(const fl_stalls *ps, size_t x, uint64_t n, size_t y, uint64_t m)
{
    const psreason *p = &ps->rs[x], *q = &ps->rs[y];
    if (p->not_issued != q->not_issued)
        return !p->not_issued;
    if (n != m)
        return n > m;
    return strcmp(p->name, q->name) < 0;
}

size_t fl_stalls_mix(const fl_stalls *ps, int kind, size_t group, size_t *idx, uint64_t *n,
                     size_t max)
{
    size_t got = 0;
    while (got < max) {
        size_t best = SIZE_MAX;
        uint64_t bn = 0;
        for (size_t ri = 0; ri < ps->n_rs; ri++) {
            bool taken = false;
            for (size_t j = 0; j < got && !taken; j++)
                taken = idx[j] == ri;
            const fl_mval *v = taken ? NULL : fl_map_find(&ps->mix, mix_key(kind, group, ri));
            if (v && v->a && (best == SIZE_MAX || mix_before(ps, ri, v->a, best, bn))) {
                best = ri;
                bn = v->a;
            }
        }
        if (best == SIZE_MAX)
            break;
        idx[got] = best;
        n[got++] = bn;
    }
    return got;
}

/* ------------------------------------------------------------- orders */

static const psgroup *sort_g;
static const psreason *sort_r;

static int cmp_group(const void *a, const void *b)
{
    const psgroup *x = &sort_g[*(const size_t *)a], *y = &sort_g[*(const size_t *)b];
    uint64_t nx = x->samples + x->not_issued, ny = y->samples + y->not_issued;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    return x->c < y->c ? -1 : x->c > y->c;
}

static int cmp_reason(const void *a, const void *b)
{
    const psreason *x = &sort_r[*(const size_t *)a], *y = &sort_r[*(const size_t *)b];
    if (x->not_issued != y->not_issued)
        return x->not_issued ? 1 : -1;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->name, y->name);
}

static size_t *order(size_t n, const void *arr, bool reasons)
{
    size_t *o = malloc((n ? n : 1) * sizeof *o);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    if (reasons) {
        sort_r = arr;
        qsort(o, n, sizeof *o, cmp_reason);
    } else {
        sort_g = arr;
        qsort(o, n, sizeof *o, cmp_group);
    }
    return o;
}

bool fl_stalls_finish(fl_report *r)
{
    fl_stalls *ps = r->ps;
    if (!ps || !ps->n_rs)
        return true;
    free(ps->rorder);
    ps->rorder = order(ps->n_rs, ps->rs, true);
    bool ok = ps->rorder != NULL;
    for (int k = 0; k < PS_KINDS; k++) {
        free(ps->order[k]);
        ps->order[k] = order(ps->n_g[k], ps->g[k], false);
        ok = ok && ps->order[k];
    }
    return ok;
}

void fl_stalls_free(fl_report *r)
{
    fl_stalls *ps = r->ps;
    if (!ps)
        return;
    free(ps->corr);
    fl_map_free(&ps->corr_by);
    fl_map_free(&ps->line_of);
    free(ps->rs);
    fl_map_free(&ps->rcache);
    fl_map_free(&ps->mix);
    for (int k = 0; k < PS_KINDS; k++) {
        free(ps->g[k]);
        fl_map_free(&ps->by[k]);
        free(ps->order[k]);
    }
    free(ps->rorder);
    free(ps);
    r->ps = NULL;
}

size_t fl_stalls_bytes(const fl_report *r)
{
    const fl_stalls *ps = r->ps;
    if (!ps)
        return 0;
    size_t n = sizeof *ps + ps->cap_corr * sizeof *ps->corr + ps->cap_rs * sizeof *ps->rs +
               fl_map_bytes(&ps->rcache) + fl_map_bytes(&ps->mix) + fl_map_bytes(&ps->corr_by) +
               fl_map_bytes(&ps->line_of);
    for (int k = 0; k < PS_KINDS; k++)
        n += ps->cap_g[k] * sizeof *ps->g[k] + fl_map_bytes(&ps->by[k]);
    return n;
}

/* --------------------------------------------------------------- labels */

const char *fl_stalls_reason_label(const psreason *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", s->info ? s->info->display : s->name,
             s->not_issued ? " (not issued)" : "");
    return buf;
}

const char *fl_stalls_kernel_label(const fl_report *r, uint64_t kid, char *buf, size_t len)
{
    const char *n = kid ? fl_model_kernel_name(r->m, kid) : NULL;
    if (n)
        return n;
    if (kid)
        snprintf(buf, len, "(kernel id %" PRIu64 ", not in kernel_dict)", kid);
    else
        snprintf(buf, len, "(no kernel: corr_id matched none)");
    return buf;
}

size_t fl_stalls_next(const fl_stalls *ps, int kind, size_t *k)
{
    while (*k < ps->n_g[kind]) {
        size_t g = ps->order[kind][(*k)++];
        if (ps->g[kind][g].samples)
            return g;
    }
    return SIZE_MAX;
}

size_t fl_stalls_top(int top)
{
    return top < 1 ? 10 : (size_t)top;
}

size_t fl_stalls_hot_kernels(int top)
{
    size_t n = fl_stalls_top(top);
    return n < FL_STALL_KERNELS_HOT ? n : FL_STALL_KERNELS_HOT;
}
