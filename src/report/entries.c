/*
 * report/entries.c - the report's per-scope and per-device entries, found
 * or made at their first use: one place for both the kernel rows
 * (kernels.c) and the other batches (collect.c) to add to, so neither
 * calls into the other.
 */
#include "report_int.h"
#include "../util/buf.h"

#include <stdint.h>
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
    if (fl_grow((void **)&r->d, &r->cap_d, r->n_d + 1, sizeof *r->d) != 0) {
        r->oom = true;
        return NULL;
    }
    dstat *d = &r->d[r->n_d++];
    memset(d, 0, sizeof *d);
    d->id = id;
    return d;
}
