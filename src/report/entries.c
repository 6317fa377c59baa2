/*
 * report/entries.c - the report's per-scope and per-device entries, found
 * or made at their first use: one place for both the kernel rows
 * (kernels.c) and the other batches (collect.c, collect_records.c) to add
 * to, so neither calls into the other; the keyed entries of
 * collect_records.c's tables; and the entries appended to the small
 * tables collect.c searches itself (fl_report_append).
 */
#include "report_int.h"
#include "../util/buf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int fl_report_grow(fl_report *r, void **arr, size_t *cap, size_t need, size_t size)
{
    size_t was = *cap;
    if (fl_grow(arr, cap, need, size) != 0)
        return -1;
    /* Charged once grown (fl_grow's policy stays its own): past the cap
     * the entry is refused and the read stops. */
    return fl_keys_charge(&r->m->keys, (*cap - was) * size) ? 0 : -1;
}

sstat *fl_report_scope(fl_report *r, const char *name, bool nvtx, uint32_t *index)
{
    if (!name)
        return NULL;
    uint64_t key = (uint64_t)(uintptr_t)name * 2 + (nvtx ? 1 : 0);
    bool fresh;
    sstat *s = fl_report_entry(r, &r->s_by_name, (void **)&r->s, &r->n_s, &r->cap_s, sizeof *r->s,
                               key, &fresh);
    if (!s)
        return NULL;
    if (fresh) {
        s->name = name;
        s->nvtx = nvtx;
    }
    if (index)
        *index = (uint32_t)(s - r->s);
    return s;
}

void *fl_report_append(fl_report *r, void **arr, size_t *n, size_t *cap, size_t size)
{
    if (!fl_keys_take(&r->m->keys) || fl_report_grow(r, arr, cap, *n + 1, size) != 0) {
        r->oom = true;
        return NULL;
    }
    void *e = (char *)*arr + (*n)++ * size;
    memset(e, 0, size);
    return e;
}

dstat *fl_report_device(fl_report *r, int64_t id)
{
    for (size_t i = 0; i < r->n_d; i++)
        if (r->d[i].id == id)
            return &r->d[i];
    dstat *d = fl_report_append(r, (void **)&r->d, &r->n_d, &r->cap_d, sizeof *r->d);
    if (d)
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
        if (fl_report_grow(r, arr, cap, *n + 1, size) != 0) {
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
    if (!fl_hist_add(&s->h, dur, &r->m->keys))
        r->oom = true;
}

/* ================================================= the budget of keys */

void fl_report_budget_init(fl_report *r)
{
    fl_keys *k = &r->m->keys;
    fl_u64map *maps[] = {&r->k_by_id,    &r->s_by_name,     &r->open,       &r->kp_by_name,
                         &r->sp_by_name, &r->gr_by_key,     &r->dw_by_name, &r->sg_by_key,
                         &r->sass_seen,  &r->sync_by_stack, &r->ops.by,     &r->ops.gk_by,
                         &r->lines.by,   &r->lines.gk_by};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        maps[i]->budget = k;
    r->pool.budget = k;
}

void fl_report_set_max_distinct(fl_report *r, uint64_t max)
{
    if (r)
        r->m->keys.max = max;
}

void fl_report_set_max_memory(fl_report *r, uint64_t bytes)
{
    if (r)
        r->m->keys.max_bytes = bytes;
}

gp_status fl_report_env_check(gp_error *err)
{
    fl_keys k = {0};
    gp_status st = fl_keys_from_env(&k, err);
    return st != GP_OK ? st : fl_read_env_check(err);
}

bool fl_report_out_of_memory(const fl_report *r)
{
    return r->oom || r->m->oom;
}

const char *fl_report_stop(void *user)
{
    fl_report *r = user;
    return fl_keys_why(&r->m->keys, r->oom || r->m->oom, "report",
                       "kernel ids, names, scopes, correlation ids, devices", r->stop_why,
                       sizeof r->stop_why)
               ? r->stop_why
               : NULL;
}
