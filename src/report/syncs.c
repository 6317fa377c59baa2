/*
 * report/syncs.c - where the program waited: synchronization_event_batch
 * rows counted, and summed by the CPU stack of the call that waited (our
 * stack_id column into our stack_dict, docs/gpufl.md; enable_stack_trace),
 * shown under the summary's "other" line (text) and in
 * summary.synchronization_stacks (JSON): the top FL_SYNC_STACKS_TOP stacks
 * by total wait (duration_ns), innermost frame first in the text.
 */
#include "json_write.h"
#include "model.h"
#include "report_int.h"
#include "units.h"
#include "../reader/read.h"
#include "../wire/vocab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fl_report_sync_batch(fl_report *r, const fl_batch *b)
{
    int c_dur = fl_batch_time_col(b, true), c_st = fl_batch_colid(b, FL_COL_SYNC_STACK_ID);
    for (size_t i = 0; i < b->nrows; i++) {
        uint64_t d = 0, id = 0;
        fl_rcell_u64(b, i, c_dur, &d);
        r->syncs++;
        r->sync_ns += d;
        const char *text =
            c_st >= 0 && fl_rcell_u64(b, i, c_st, &id) && id ? fl_model_stack_text(r->m, id) : NULL;
        if (!text || !*text)
            continue;
        fl_mval *v = fl_map_put(&r->sync_by_stack, (uint64_t)(uintptr_t)text, NULL);
        if (v) {
            v->a++;
            v->b += d;
        }
    }
}

void fl_report_syncs_free(fl_report *r)
{
    fl_map_free(&r->sync_by_stack);
}

typedef struct sync_stack {
    const char *text;
    uint64_t count, ns;
} sync_stack;

/* Most wait first; then most calls; then by text (a stable order). */
static int by_wait(const void *a, const void *b)
{
    const sync_stack *x = a, *y = b;
    return fl_heaviest_first(x->ns, y->ns, x->count, y->count, x->text, y->text);
}

/* The top stacks into top (at most FL_SYNC_STACKS_TOP); how many. */
static size_t top_stacks(const fl_report *r, sync_stack *top)
{
    const fl_u64map *m = &r->sync_by_stack;
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        sync_stack s = {(const char *)(uintptr_t)m->keys[i], m->vals[i].a, m->vals[i].b};
        if (n < FL_SYNC_STACKS_TOP) {
            top[n++] = s;
            qsort(top, n, sizeof *top, by_wait);
        } else if (by_wait(&s, &top[n - 1]) < 0) {
            top[n - 1] = s;
            qsort(top, n, sizeof *top, by_wait);
        }
    }
    return n;
}

/*
 *   waited at         2.000 us in 1 sync: wait_here (app.c:12) <- main (app.c:30)
 */
void fl_text_sync_stacks(const fl_report *r, fl_buf *b)
{
    sync_stack top[FL_SYNC_STACKS_TOP];
    size_t n = top_stacks(r, top);
    for (size_t i = 0; i < n; i++) {
        fl_buf_printf(b, "  %-18s", i ? "" : "waited at");
        fl_dur_text(b, top[i].ns);
        fl_buf_printf(b, " in %" PRIu64 " %s: ", top[i].count,
                      fl_plural(top[i].count, "sync", "syncs"));
        fl_put_stack(b, top[i].text);
        fl_buf_puts(b, "\n");
    }
    if (r->sync_by_stack.n > n)
        fl_buf_printf(b, "  %-18s(%zu more call %s)\n", "", r->sync_by_stack.n - n,
                      fl_plural(r->sync_by_stack.n - n, "stack", "stacks"));
}

void fl_json_sync_stacks(const fl_report *r, jw *w)
{
    sync_stack top[FL_SYNC_STACKS_TOP];
    size_t n = top_stacks(r, top);
    j_open(w, "synchronization_stacks", '[');
    for (size_t i = 0; i < n; i++) {
        j_open(w, NULL, '{');
        j_str(w, "stack_trace", top[i].text);
        j_u64(w, "synchronizations", top[i].count);
        j_u64(w, "time_ns", top[i].ns);
        j_close(w, '}');
    }
    j_close(w, ']');
}
