/*
 * report/run_lines.c - a session's kernel time by the source line that
 * launched it, for the run summary's per-process "busiest line" (run.h's
 * fl_run.lines): the rows joined to their kernel_detail by the model's
 * has_details rule (model.h), each row's CPU stack named by the line
 * `report --by line` shows (by.c's fl_by_line_label), so the two agree.
 * Rows without a stack count toward no line.  Memory follows the distinct
 * stacks, never the rows.
 */
#include "run_lines.h"
#include "maps.h"
#include "model.h"
#include "report_int.h"

#include <stdlib.h>
#include <string.h>

#define LINE_LABEL_MAX 256

struct fl_run_lines {
    fl_model *m;
    fl_u64map by_stack; /* (uintptr_t) interned stack -> a: launches, b: ns */
    bool oom;
};

static void on_row(void *user, const fl_krow *k)
{
    fl_run_lines *l = user;
    const char *stack = k->detail ? k->detail->stack_trace : NULL;
    if (!stack || !*stack)
        return;
    bool fresh;
    fl_mval *v = fl_map_put(&l->by_stack, (uint64_t)(uintptr_t)stack, &fresh);
    if (!v) {
        l->oom = true;
        return;
    }
    v->a++;
    v->b = v->b + k->duration_ns < v->b ? UINT64_MAX : v->b + k->duration_ns;
}

fl_run_lines *fl_run_lines_new(void)
{
    fl_run_lines *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->m = fl_model_create(on_row, l);
    if (!l->m) {
        free(l);
        return NULL;
    }
    return l;
}

void fl_run_lines_free(fl_run_lines *l)
{
    if (!l)
        return;
    fl_model_destroy(l->m);
    fl_map_free(&l->by_stack);
    free(l);
}

void fl_run_lines_record(fl_run_lines *l, int channel, fl_type t, const char *type, json_t *rec)
{
    fl_model_record(l->m, channel, t, type, rec);
}

void fl_run_lines_batch(fl_run_lines *l, const fl_batch *b)
{
    fl_model_batch(l->m, b);
}

void fl_run_lines_detail(fl_run_lines *l, const fl_detail *d)
{
    fl_model_detail(l->m, d);
}

int fl_run_lines_each(fl_run_lines *l, fl_run_line_fn fn, void *user)
{
    fl_model_finish(l->m);
    for (size_t i = 0; i < l->by_stack.cap; i++) {
        if (!l->by_stack.used[i])
            continue;
        char label[LINE_LABEL_MAX];
        fl_by_line_label((const char *)(uintptr_t)l->by_stack.keys[i], label, sizeof label);
        if (fn(user, label, l->by_stack.vals[i].a, l->by_stack.vals[i].b) < 0)
            return -1;
    }
    return l->oom || l->m->oom ? -1 : 0;
}
