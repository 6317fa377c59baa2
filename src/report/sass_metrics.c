/*
 * report/sass_metrics.c - SASS-metric rows kept as sass_metrics.h says:
 * each sample_kind 1 row's value added to its function's group and, when
 * it has a source line, to its (function, file, line) group, under the
 * category its metric_dict name gives (looked up once per metric id).
 */
#include "sass_metrics.h"
#include "maps.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int kind;
} names[] = {
    {"smsp__sass_inst_executed", SM_INST},
    {"smsp__sass_thread_inst_executed", SM_THREAD},
    {"smsp__sass_inst_executed_op_global_ld", SM_GLD},
    {"smsp__sass_inst_executed_op_global_st", SM_GST},
    {"smsp__sass_sectors_mem_global", SM_SECT},
    {"smsp__sass_sectors_mem_global_ideal", SM_SECT_IDEAL},
    {"smsp__sass_sectors_mem_global_op_ld_ideal", SM_SECT_IDEAL},
    {"smsp__sass_sectors_mem_global_op_st_ideal", SM_SECT_IDEAL},
    {"smsp__sass_inst_executed_op_shared_ld", SM_SLD},
    {"smsp__sass_inst_executed_op_shared_st", SM_SST},
    {"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared", SM_SWAVE},
    {"smsp__sass_inst_executed_op_branch", SM_BRANCH},
    {"smsp__sass_branch_targets_threads_divergent", SM_DIVERGENT},
};

static fl_sassm *sassm_of(fl_report *r)
{
    if (!r->sx) {
        r->sx = calloc(1, sizeof *r->sx);
        if (!r->sx)
            return NULL;
        r->sx->kind_of.budget = &r->m->keys;
        for (int k = 0; k < SMG_KINDS; k++)
            r->sx->by[k].budget = &r->m->keys;
    }
    return r->sx;
}

int fl_sass_metric_kind(const char *name)
{
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0)
            return names[i].kind;
    return -1;
}

/* SM_* of a metric id; -1: not one the report reads (or out of memory). */
static int kind_of(fl_report *r, fl_sassm *x, uint64_t metric)
{
    bool fresh;
    fl_mval *v = fl_map_put(&x->kind_of, metric, &fresh);
    if (!v)
        return -1;
    if (fresh) {
        v->a = (uint64_t)(fl_sass_metric_kind(fl_model_metric_name(r->m, metric)) + 1);
    }
    return (int)v->a - 1;
}

static uint64_t mix_hash(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 29) ^ b) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 31) ^ c) * 0x94d049bb133111ebull;
    return h ^ (h >> 32);
}

/* The group (fn, file, line) of kind, made at its first use; NULL when
 * out of memory.  Keys that hash alike probe on (h + 1, ...). */
static smgroup *group_of(fl_sassm *x, int kind, uint64_t fn, uint64_t file, uint64_t line)
{
    for (uint64_t h = mix_hash(fn, file, line);; h++) {
        bool fresh;
        fl_mval *v = fl_map_put(&x->by[kind], h, &fresh);
        if (!v)
            return NULL;
        if (!fresh) {
            smgroup *g = &x->g[kind][v->a];
            if (g->fn == fn && g->file == file && g->line == line)
                return g;
            continue;
        }
        size_t n = x->n_g[kind];
        if (fl_grow((void **)&x->g[kind], &x->cap_g[kind], n + 1, sizeof *x->g[kind]) != 0) {
            fl_map_del(&x->by[kind], h);
            return NULL;
        }
        x->g[kind][n] = (smgroup){.fn = fn, .file = file, .line = line};
        x->n_g[kind]++;
        v->a = n;
        return &x->g[kind][n];
    }
}

static void add(smgroup *g, int k, uint64_t value)
{
    g->v[k] = g->v[k] + value < g->v[k] ? UINT64_MAX : g->v[k] + value;
    g->have |= 1u << k;
}

bool fl_sassm_row(fl_report *r, uint64_t fn, uint64_t metric, uint64_t value, uint64_t file,
                  uint64_t line)
{
    fl_sassm *x = sassm_of(r);
    int k = x ? kind_of(r, x, metric) : -1;
    if (!x || (k < 0 && !fl_map_find(&x->kind_of, metric))) {
        r->oom = true;
        return false;
    }
    if (k < 0)
        return true;
    smgroup *g = group_of(x, SMG_FUNCTION, fn, 0, 0);
    smgroup *l = file ? group_of(x, SMG_LINE, fn, file, line) : NULL;
    if (!g || (file && !l)) {
        r->oom = true;
        return false;
    }
    add(g, k, value);
    if (l)
        add(l, k, value);
    else if (k == SM_INST)
        x->no_line_rows++;
    return true;
}

void fl_sassm_derive(const smgroup *g, smderived *d)
{
    memset(d, 0, sizeof *d);
#define HAVE(k) ((g->have >> (k)) & 1u)
    double inst = (double)g->v[SM_INST];
    if (HAVE(SM_INST) && inst > 0) {
        double known = 0;
        static const int mix[] = {SM_GLD, SM_GST, SM_SLD, SM_SST, SM_BRANCH};
        for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) {
            d->pct[mix[i]] = 100.0 * (double)g->v[mix[i]] / inst;
            known += (double)g->v[mix[i]];
            d->have_mix = d->have_mix || HAVE(mix[i]);
        }
        d->other_pct = known < inst ? 100.0 * (inst - known) / inst : 0.0;
        if (HAVE(SM_THREAD)) {
            d->have_div = true;
            d->threads_per_inst = (double)g->v[SM_THREAD] / inst;
            d->warp_eff_pct = 100.0 * d->threads_per_inst / 32.0;
        }
    }
    double req = (double)(g->v[SM_GLD] + g->v[SM_GST]);
    if ((HAVE(SM_GLD) || HAVE(SM_GST)) && req > 0 && HAVE(SM_SECT)) {
        d->have_req = true;
        d->sect_per_req = (double)g->v[SM_SECT] / req;
        d->have_ideal_req = HAVE(SM_SECT_IDEAL);
        d->ideal_per_req = (double)g->v[SM_SECT_IDEAL] / req;
    }
    if (HAVE(SM_SECT) && HAVE(SM_SECT_IDEAL) && g->v[SM_SECT] > 0) {
        d->have_coal = true;
        d->coalescing_pct = 100.0 * (double)g->v[SM_SECT_IDEAL] / (double)g->v[SM_SECT];
    }
#undef HAVE
}

static const smgroup *sort_g;

static int cmp_group(const void *a, const void *b)
{
    const smgroup *x = &sort_g[*(const size_t *)a], *y = &sort_g[*(const size_t *)b];
    if (x->v[SM_INST] != y->v[SM_INST])
        return x->v[SM_INST] > y->v[SM_INST] ? -1 : 1;
    if (x->fn != y->fn)
        return x->fn < y->fn ? -1 : 1;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

bool fl_sassm_finish(fl_report *r)
{
    fl_sassm *x = r->sx;
    if (!x)
        return true;
    for (int k = 0; k < SMG_KINDS; k++) {
        free(x->order[k]);
        x->order[k] = malloc((x->n_g[k] ? x->n_g[k] : 1) * sizeof *x->order[k]);
        if (!x->order[k])
            return false;
        for (size_t i = 0; i < x->n_g[k]; i++)
            x->order[k][i] = i;
        sort_g = x->g[k];
        qsort(x->order[k], x->n_g[k], sizeof *x->order[k], cmp_group);
    }
    return true;
}

void fl_sassm_free(fl_report *r)
{
    fl_sassm *x = r->sx;
    if (!x)
        return;
    fl_map_free(&x->kind_of);
    for (int k = 0; k < SMG_KINDS; k++) {
        free(x->g[k]);
        fl_map_free(&x->by[k]);
        free(x->order[k]);
    }
    free(x);
    r->sx = NULL;
}

size_t fl_sassm_bytes(const fl_report *r)
{
    const fl_sassm *x = r->sx;
    if (!x)
        return 0;
    size_t n = sizeof *x + fl_map_bytes(&x->kind_of);
    for (int k = 0; k < SMG_KINDS; k++)
        n += x->cap_g[k] * (sizeof *x->g[k] + sizeof *x->order[k]) + fl_map_bytes(&x->by[k]);
    return n;
}
