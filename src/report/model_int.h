/*
 * report/model_int.h - the model's insides that the report's kernel path
 * (report/kernels.c) reads directly, so that the writer's kernel batches
 * can be taken without fl_krow rows and the join of rows and details stays
 * the model's: its maps of details, the columns of a kernel batch, and the
 * steps of the has_details rule.
 *
 * Private to report/model.c and report/kernels.c.
 */
#ifndef FL_REPORT_MODEL_INT_H
#define FL_REPORT_MODEL_INT_H

#include "model.h"

enum {
    DICT_KERNEL,
    DICT_SCOPE,
    DICT_METRIC,
    DICT_FUNCTION,
    DICT_SOURCE_FILE,
    DICT_STACK,
    DICT_OP,
    DICT_COUNT
};

struct fl_model_priv {
    fl_model_kernel_fn fn;
    void *user;
    fl_keys *budget; /* the model's keys: what the details are charged to */
    fl_strpool pool;
    fl_u64map dict[DICT_COUNT]; /* id -> a: (uintptr_t) interned name */
    fl_u64map current;          /* kernel_id -> a: (uintptr_t) fl_kdetail * (owned) */
    fl_u64map pending;          /* corr_id -> a: (uintptr_t) fl_kdetail * (owned) */
    uint64_t seq;
    /* Details freed, kept for the next ones (model.c's detail_new): a
     * session with a detail per launch makes and frees one a launch. */
    void *spare;
    size_t n_spare;
    /* The strings the last detail interned, asked first (launches in a
     * row mostly share their scope, stack and limiter). */
    const char *last_interned[3];
    /* A kernel batch waiting for details written after it. */
    fl_krow *held;
    size_t n_held, held_cap;
    bool holding;
    /* The session whose records are read now, when a run's sessions are
     * read one after another (NULL: job_start's, the only one so far). */
    char *cur_session;
};

/* The columns of a kernel_event_batch (-1: absent). */
typedef struct kcols {
    int dt, kid, stream, dur, corr, dyn, regs, hd, ek, eid, dev;
} kcols;

static inline kcols kcols_of(const fl_batch *b)
{
    return (kcols){.dt = fl_batch_colid(b, FL_COL_KERNEL_DT_NS),
                   .kid = fl_batch_colid(b, FL_COL_KERNEL_KERNEL_ID),
                   .stream = fl_batch_colid(b, FL_COL_KERNEL_STREAM_ID),
                   .dur = fl_batch_colid(b, FL_COL_KERNEL_DURATION_NS),
                   .corr = fl_batch_colid(b, FL_COL_KERNEL_CORR_ID),
                   .dyn = fl_batch_colid(b, FL_COL_KERNEL_DYN_SHARED),
                   .regs = fl_batch_colid(b, FL_COL_KERNEL_NUM_REGS),
                   .hd = fl_batch_colid(b, FL_COL_KERNEL_HAS_DETAILS),
                   .ek = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_KIND),
                   .eid = fl_batch_colid(b, FL_COL_KERNEL_EXTERNAL_ID),
                   .dev = fl_batch_colid(b, FL_COL_KERNEL_DEVICE_ID)};
}

static inline int64_t nonneg_or(int64_t v, int64_t def)
{
    return v >= 0 ? v : def;
}

/* Widens the session's time span to take in t. */
static inline void fl_model_note_time(fl_model *m, uint64_t t)
{
    if (!m->have_time) {
        m->first_ns = m->last_ns = t;
        m->have_time = true;
        return;
    }
    if (t < m->first_ns)
        m->first_ns = t;
    if (t > m->last_ns)
        m->last_ns = t;
}

/* A row of kernel_id, in record order: the detail a has_details = 1 row
 * claims (by corr_id) becomes its kernel's current one; returns the
 * kernel's current detail (NULL: none known). */
const fl_kdetail *fl_model_claim(fl_model *m, uint32_t kernel_id, uint32_t corr_id,
                                 bool has_details);
/* The CPU stack the row would claim (fl_model_claim's detail, not
 * claimed): for stalls --by line, before kernels.c takes the row. */
const char *fl_model_peek_stack(const fl_model *m, uint32_t kernel_id, uint32_t corr_id,
                                bool has_details);
/* Gives fn the rows of a kernel batch held for its details, if one is. */
void fl_model_flush_held(fl_model *m);

#endif /* FL_REPORT_MODEL_INT_H */
