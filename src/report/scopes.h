/*
 * report/scopes.h - scope_event_batch rows paired into scopes, by the one
 * rule the report and the Chrome trace both follow, so that both see the
 * same scopes with the same times: a begin (0) or a continuation-open (2,
 * a scope that began before this window, at original_start_ns) opens an
 * instance, an end (1) closes it; an end whose begin was not read counts
 * from its original_start_ns when it has one, else it is unmatched; a
 * continuation-close (3) leaves the instance open.
 *
 * Inline: called for every scope row.  Not exported; nothing here prints.
 */
#ifndef FL_REPORT_SCOPES_H
#define FL_REPORT_SCOPES_H

#include "../reader/read.h"
#include "fields.h"
#include "maps.h"
#include "../wire/vocab.h"

#include <stdint.h>

/* The columns of a scope_event_batch (-1: absent). */
typedef struct fl_scope_cols {
    int dt, id, name, type, orig;
} fl_scope_cols;

static inline fl_scope_cols fl_scope_cols_of(const fl_batch *b)
{
    return (fl_scope_cols){.dt = fl_batch_colid(b, FL_COL_SCOPE_DT_NS),
                           .id = fl_batch_colid(b, FL_COL_SCOPE_SCOPE_INSTANCE_ID),
                           .name = fl_batch_colid(b, FL_COL_SCOPE_NAME_ID),
                           .type = fl_batch_colid(b, FL_COL_SCOPE_EVENT_TYPE),
                           .orig = fl_batch_colid(b, FL_COL_SCOPE_ORIGINAL_START_NS)};
}

typedef enum {
    FL_SCOPE_BAD_ROW,       /* dt_ns, the instance or the event type unreadable */
    FL_SCOPE_NOTHING,       /* opened, or nothing to do */
    FL_SCOPE_ENDED,         /* *end is a whole scope */
    FL_SCOPE_UNMATCHED_END, /* an end without a begin or an original start */
    FL_SCOPE_OOM            /* out of memory: stop reading the batch */
} fl_scope_step;

typedef struct fl_scope_end {
    uint64_t instance, name_id; /* name_id: the begin's when it had one */
    uint64_t start_ns, end_ns;  /* start_ns <= end_ns is not promised */
} fl_scope_end;

/* Row r of b applied to open (scope_instance_id -> a: start ns, b:
 * name_id). */
static inline fl_scope_step fl_scope_row(fl_u64map *open, const fl_batch *b, const fl_scope_cols *c,
                                         size_t r, fl_scope_end *end)
{
    uint64_t dt, id, name = 0, type, orig = 0;
    if (!fl_rcell_u64(b, r, c->dt, &dt) || !fl_rcell_u64(b, r, c->id, &id) ||
        !fl_rcell_u64(b, r, c->type, &type))
        return FL_SCOPE_BAD_ROW;
    fl_rcell_u64(b, r, c->name, &name);
    fl_rcell_u64(b, r, c->orig, &orig);
    uint64_t t = b->base_time_ns + dt;
    fl_mval *v = fl_map_find(open, id);
    switch (type) {
    case 0: /* begin */
    case 2: /* continuation-open: the scope began before this window */
        if (type == 2 && v)
            return FL_SCOPE_NOTHING;
        v = fl_map_put(open, id, NULL);
        if (!v)
            return FL_SCOPE_OOM;
        v->a = type == 2 && orig ? orig : t;
        v->b = name;
        return FL_SCOPE_NOTHING;
    case 1: /* end */
        if (v) {
            end->start_ns = v->a;
            if (v->b)
                name = v->b;
            fl_map_del(open, id);
        } else if (orig && orig <= t) {
            end->start_ns = orig; /* its begin was not read */
        } else {
            return FL_SCOPE_UNMATCHED_END;
        }
        end->instance = id;
        end->name_id = name;
        end->end_ns = t;
        return FL_SCOPE_ENDED;
    default: /* 3, continuation-close: still open */
        return FL_SCOPE_NOTHING;
    }
}

/* The thread of a scope that ends, taken out of open_tid: its begin's (a
 * scope may end on another thread), else the end row's; -1 when neither
 * says. */
static inline int64_t fl_scope_thread(fl_u64map *open_tid, uint64_t instance, bool have_row_tid,
                                      uint64_t row_tid)
{
    fl_mval *v = open_tid->n ? fl_map_find(open_tid, instance) : NULL;
    if (v) {
        int64_t t = (int64_t)v->a;
        fl_map_del(open_tid, instance);
        return t;
    }
    return have_row_tid ? (int64_t)row_tid : -1;
}

/* fl_scope_row, remembering each begin's thread (open_tid: instance ->
 * a: tid) so that the Chrome trace and the HTML timeline draw a scope
 * that ends on another thread on its begin's: on FL_SCOPE_ENDED *thread
 * is the begin's, else the end row's, -1 when neither says.  A tid past
 * 31 bits (not a Linux thread id) is not a track. */
static inline fl_scope_step fl_scope_row_thread(fl_u64map *open, fl_u64map *open_tid,
                                                const fl_batch *b, const fl_scope_cols *c,
                                                int c_tid, size_t r, fl_scope_end *end,
                                                int64_t *thread)
{
    uint64_t tid = 0, type = 0, id = 0;
    bool have_tid = c_tid >= 0 && fl_rcell_u64(b, r, c_tid, &tid) && tid <= INT32_MAX;
    if (have_tid && fl_rcell_u64(b, r, c->type, &type) && (type == 0 || type == 2) &&
        fl_rcell_u64(b, r, c->id, &id) && !fl_map_find(open, id)) {
        fl_mval *v = fl_map_put(open_tid, id, NULL);
        if (!v)
            return FL_SCOPE_OOM;
        v->a = tid;
    }
    fl_scope_step st = fl_scope_row(open, b, c, r, end);
    if (st != FL_SCOPE_ENDED)
        return st;
    *thread = fl_scope_thread(open_tid, end->instance, have_tid, tid);
    return st;
}

#endif /* FL_REPORT_SCOPES_H */
