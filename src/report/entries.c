/*
 * report/entries.c - the report's per-scope and per-device entries, found
 * or made at their first use: one place for both the kernel rows
 * (kernels.c) and the other batches (collect.c, collect_records.c) to add
 * to, so neither calls into the other; and the keyed entries of
 * collect_records.c's tables.
 */
#include "report_int.h"
#include "../util/buf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

sstat *fl_report_scope(fl_report *r, const char *name, bool nvtx, uint32_t *index)
{
    if (!name)
        return NULL;
    uint64_t key = (uint64_t)(uintptr_t)name * 2 + (nvtx ? 1 : 0);
    bool fresh;
    fl_mval *v = fl_map_put(&r->s_by_name, key, &fresh);
    if (!v) {
        r->oom = true;
        return NULL;
    }
    if (fresh) {
        if (fl_grow((void **)&r->s, &r->cap_s, r->n_s + 1, sizeof *r->s) != 0) {
            fl_map_del(&r->s_by_name, key);
            r->oom = true;
            return NULL;
        }
        v->a = r->n_s;
        sstat *s = &r->s[r->n_s++];
        memset(s, 0, sizeof *s);
        s->name = name;
        s->nvtx = nvtx;
    }
    if (index)
        *index = (uint32_t)v->a;
    return &r->s[v->a];
}

dstat *fl_report_device(fl_report *r, int64_t id)
{
    for (size_t i = 0; i < r->n_d; i++)
        if (r->d[i].id == id)
            return &r->d[i];
    if (!fl_keys_take(&r->m->keys) ||
        fl_grow((void **)&r->d, &r->cap_d, r->n_d + 1, sizeof *r->d) != 0) {
        r->oom = true;
        return NULL;
    }
    dstat *d = &r->d[r->n_d++];
    memset(d, 0, sizeof *d);
    d->id = id;
    return d;
}

void *fl_report_entry(fl_report *r, fl_u64map *map, void **arr, size_t *n, size_t *cap, size_t size,
                      uint64_t key, bool *fresh)
{
    bool f;
    fl_mval *v = fl_map_put(map, key, &f);
    if (!v) {
        r->oom = true;
        return NULL;
    }
    if (f) {
        if (fl_grow(arr, cap, *n + 1, size) != 0) {
            fl_map_del(map, key);
            r->oom = true;
            return NULL;
        }
        v->a = *n;
        memset((char *)*arr + *n * size, 0, size);
        (*n)++;
    }
    if (fresh)
        *fresh = f;
    return (char *)*arr + v->a * size;
}

void fl_report_scope_add(fl_report *r, sstat *s, uint64_t dur)
{
    if (s->count == 0 || dur < s->min_ns)
        s->min_ns = dur;
    if (s->count == 0 || dur > s->max_ns)
        s->max_ns = dur;
    s->count++;
    s->total_ns += dur;
    if (!fl_hist_add(&s->h, dur))
        r->oom = true;
}

/* ================================================= the budget of keys */

void fl_report_budget_init(fl_report *r)
{
    fl_keys *k = &r->m->keys;
    fl_u64map *maps[] = {&r->k_by_id,    &r->s_by_name,    &r->open,       &r->kp_by_name,
                         &r->sp_by_name, &r->gr_by_key,    &r->dw_by_name, &r->sg_by_key,
                         &r->sass_seen,  &r->sync_by_stack};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        maps[i]->budget = k;
    r->pool.budget = k;
}

void fl_report_set_max_distinct(fl_report *r, uint64_t max)
{
    if (r)
        r->m->keys.max = max;
}

bool fl_report_out_of_memory(const fl_report *r)
{
    return r->oom || r->m->oom;
}

const char *fl_report_stop(void *user)
{
    fl_report *r = user;
    const fl_keys *k = &r->m->keys;
    if (k->over) {
        snprintf(r->stop_why, sizeof r->stop_why,
                 "more than %" PRIu64 " distinct keys (kernel ids, names, scopes, correlation "
                 "ids, devices: the report's limit, about 0.5 KiB each); raise it with "
                 "GPU_PROFILE_MAX_DISTINCT=N (gpu-profile report --max-distinct N)",
                 k->max);
        return r->stop_why;
    }
    if (r->oom || r->m->oom) {
        snprintf(r->stop_why, sizeof r->stop_why,
                 "out of memory with %" PRIu64 " distinct keys (kernel ids, names, scopes, "
                 "correlation ids, devices) kept; lower GPU_PROFILE_MAX_DISTINCT "
                 "(--max-distinct N) below that to be stopped at a limit instead, or give the "
                 "process more memory",
                 k->n);
        return r->stop_why;
    }
    return NULL;
}
