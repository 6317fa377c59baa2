/*
 * report/kernels.c - kernel rows into the report's per-kernel, per-device
 * and per-scope statistics: the report's hot path (every row of a session
 * of millions of launches comes through here), kept in one file with its
 * helpers inline so that a row costs no calls on the common path.
 *
 * Per row: counts, exact min / max / total, the histogram, registers, the
 * device's busy intervals (kernel_stats), then the GPU time attribution by
 * the row's detail's user_scope (kernel_attr).  Batches of integer cells
 * (ours and GPUFlight's) are read straight from their cells
 * (fl_report_kernel_batch), the others come from the model as fl_krow
 * rows (fl_report_on_kernel); both join rows and
 * details by the model's has_details rule (model_int.h).  A kernel keeps
 * counters and a histogram, never its rows; a kernel batch is held (one
 * batch) only while its details are awaited.
 *
 * GPU busy % merges kernel intervals per device as rows come (one current
 * interval per device): exact when the rows of a device come in time order
 * (the recorder sorts each batch); a row that starts before the current
 * interval is counted for its own length, which can count an overlap
 * twice - the figure is then capped at 100 % (figures.c).
 */
#include "report_int.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "model_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================== kernel table */

/* Kernel ids below this have k_dense slots: dictionary ids are given in
 * order, so a session's ids are dense; 4 bytes an id up to the largest
 * seen (256 KiB at most), where the map costs a hash lookup a row and no
 * prefetch (a tenth of the time with 5000 kernels). */
#define DENSE_MAX 65536u

/* r->k with room for one more, 64-byte aligned (a kstat's first cache
 * line is what a row touches); false when out of memory. */
static bool grow_kernels(fl_report *r)
{
    /* Charged by the entry, not the capacity: the pages past the last
     * entry are never touched. */
    if (!fl_keys_charge(&r->m->keys, sizeof(kstat)))
        return false;
    if (r->n_k < r->cap_k)
        return true;
    size_t cap = r->cap_k ? r->cap_k * 2 : 16;
    kstat *k = cap <= SIZE_MAX / sizeof *k ? aligned_alloc(64, cap * sizeof *k) : NULL;
    if (!k) {
        fl_keys_refund(&r->m->keys, sizeof(kstat));
        return false;
    }
    if (r->n_k)
        memcpy(k, r->k, r->n_k * sizeof *k);
    free(r->k);
    r->k = k;
    r->cap_k = cap;
    return true;
}

static kstat *kernel_of_slow(fl_report *r, uint32_t id)
{
    bool fresh;
    fl_mval *v = fl_map_put(&r->k_by_id, id, &fresh);
    if (!v) {
        r->oom = true;
        return NULL;
    }
    if (!fresh)
        return &r->k[v->a];
    if (!grow_kernels(r)) {
        fl_map_del(&r->k_by_id, id);
        r->oom = true;
        return NULL;
    }
    v->a = r->n_k;
    kstat *k = &r->k[r->n_k++];
    memset(k, 0, sizeof *k);
    k->kernel_id = id;
    k->min_ns = UINT64_MAX;
    k->regs_min = INT64_MAX;
    k->regs_max = INT64_MIN;
    if (id < DENSE_MAX) {
        if (id >= r->n_dense) {
            size_t n = r->n_dense ? r->n_dense : 64;
            while (n <= id)
                n *= 2;
            uint32_t *d = realloc(r->k_dense, n * sizeof *d);
            if (d) {
                memset(d + r->n_dense, 0, (n - r->n_dense) * sizeof *d);
                r->k_dense = d;
                r->n_dense = n;
            }
        }
        if (id < r->n_dense)
            r->k_dense[id] = (uint32_t)r->n_k; /* index + 1 */
    }
    return k;
}

static inline kstat *kernel_of(fl_report *r, uint32_t id)
{
    if (id < r->n_dense && r->k_dense[id])
        return &r->k[r->k_dense[id] - 1];
    return kernel_of_slow(r, id);
}

/* The same as an index into r->k; -1: out of memory. */
static inline int64_t kernel_index(fl_report *r, uint32_t id)
{
    if (__builtin_expect(id < r->n_dense && r->k_dense[id], 1))
        return (int64_t)r->k_dense[id] - 1;
    kstat *k = kernel_of_slow(r, id);
    return k ? k - r->k : -1;
}

/* ================================================================ rows */

static bool dim_eq(bool ha, const uint32_t *a, bool hb, const uint32_t *b)
{
    return ha == hb && (!ha || (a[0] == b[0] && a[1] == b[1] && a[2] == b[2]));
}

static bool occ_eq(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void take_detail(kstat *k, const fl_kdetail *d)
{
    if (k->have_detail) {
        const fl_kdetail *o = &k->last;
        k->grid_varies |= !dim_eq(o->have_grid, o->grid, d->have_grid, d->grid);
        k->block_varies |= !dim_eq(o->have_block, o->block, d->have_block, d->block);
        k->occ_varies |= !occ_eq(o->occupancy, d->occupancy);
        k->lim_varies |= o->limiting != d->limiting; /* interned */
        k->smem_varies |= o->static_shared != d->static_shared;
    }
    if (d->stack_trace && d->stack_trace[0]) {
        k->stack_varies |= k->stack && k->stack != d->stack_trace; /* interned */
        k->stack = d->stack_trace;
    }
    k->last = *d;
    k->have_detail = true;
    k->seq = d->seq;
}

/* The GPU time ns of n rows of kernel k, by its attribution as it
 * stands. */
static inline __attribute__((always_inline)) void attr_add(fl_report *r, const kstat *k,
                                                           uint64_t ns, uint64_t n)
{
    switch (k->attr) {
    case 1:
        r->kernel_global_ns += ns;
        break;
    case 2: {
        r->kernel_scoped_ns += ns;
        const uint32_t *sx = k->n_scope_idx <= KSCOPE_IN ? k->scope_in : k->scope_idx;
        for (size_t i = 0; i < k->n_scope_idx; i++) {
            r->s[sx[i]].gpu_ns += ns;
            r->s[sx[i]].kernels += n;
        }
        break;
    }
    default:
        r->kernel_unattributed_ns += ns;
    }
}

/* k's rows not yet attributed (those of count and total_ns beyond
 * attr_base_n / attr_base_ns) attributed, before the attribution changes
 * or the figures are made. */
static void attr_fold(fl_report *r, kstat *k)
{
    if (k->count == k->attr_base_n)
        return;
    attr_add(r, k, k->total_ns - k->attr_base_ns, k->count - k->attr_base_n);
    k->attr_base_n = k->count;
    k->attr_base_ns = k->total_ns;
}

/* A row of k (counted by kernel_stats already) that is attributed on its
 * own: not one of the rows attr_fold attributes. */
static inline __attribute__((always_inline)) void attr_own(kstat *k, uint64_t dur)
{
    k->attr_base_n++;
    k->attr_base_ns += dur;
}

void fl_report_kernels_done(fl_report *r)
{
    for (size_t i = 0; i < r->n_k; i++) {
        kstat *k = &r->k[i];
        attr_fold(r, k);
        k->have_regs = k->regs_min <= k->regs_max;
    }
}

/* What a kernel's scope_idx of n scopes is charged. */
static size_t scope_idx_bytes(size_t n)
{
    return (n ? n : 1) * sizeof(uint32_t) + FL_MALLOC_OVERHEAD_BYTES;
}

/* The scopes of a user_scope path ("outer|inner"), each name once; the
 * same as they are when the path is the one they were resolved from
 * (interned: the same text is the same pointer; scopes are never taken
 * out of the table). */
static void resolve_scopes(fl_report *r, kstat *k, const fl_kdetail *d)
{
    const char *us = d ? d->user_scope : NULL;
    k->attr_seq = d ? d->seq : 0;
    if (k->attr_valid && us == k->attr_scope)
        return;
    attr_fold(r, k);
    if (k->scope_idx)
        fl_keys_refund(&r->m->keys, scope_idx_bytes(k->n_scope_idx));
    free(k->scope_idx);
    k->scope_idx = NULL;
    k->n_scope_idx = 0;
    k->attr_scope = us;
    k->attr_valid = true;
    if (!us) {
        k->attr = 0;
        return;
    }
    if (strcmp(us, "global") == 0 || us[0] == '\0') {
        k->attr = 1;
        return;
    }
    k->attr = 2;
    const char *s = us;
    size_t parts = 1;
    for (const char *c = s; *c; c++)
        parts += *c == '|';
    k->scope_idx = malloc(parts * sizeof *k->scope_idx);
    if (!k->scope_idx) {
        r->oom = true;
        k->attr = 0;
        k->attr_valid = false;
        return;
    }
    char name[1024];
    while (*s) {
        const char *e = strchr(s, '|');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, s, len);
        name[len] = '\0';
        uint32_t idx;
        if (fl_report_scope(r, fl_pool_intern(&r->pool, name), false, &idx)) {
            bool dup = false;
            for (size_t i = 0; i < k->n_scope_idx; i++)
                dup |= k->scope_idx[i] == idx;
            if (!dup)
                k->scope_idx[k->n_scope_idx++] = idx;
        }
        if (!e)
            break;
        s = e + 1;
    }
    for (size_t i = 0; i < k->n_scope_idx && i < KSCOPE_IN; i++)
        k->scope_in[i] = k->scope_idx[i];
    /* Kept at the size of its distinct scopes ("a|a|a..." is one), which
     * the budget's bytes count. */
    uint32_t *fit = realloc(k->scope_idx, (k->n_scope_idx ? k->n_scope_idx : 1) * sizeof *fit);
    if (fit)
        k->scope_idx = fit;
    if (!fl_keys_charge(&r->m->keys, scope_idx_bytes(k->n_scope_idx))) {
        free(k->scope_idx);
        k->scope_idx = NULL;
        k->n_scope_idx = 0;
        r->oom = true;
    }
    k->attr_valid = !r->oom;
}

static inline __attribute__((always_inline)) void busy_add(dstat *d, uint64_t a, uint64_t b)
{
    if (!d->have_cur) {
        d->cur_start = a;
        d->cur_end = b;
        d->have_cur = true;
    } else if (a >= d->cur_start && a <= d->cur_end) {
        if (b > d->cur_end)
            d->cur_end = b;
    } else if (a > d->cur_end) {
        d->busy_ns += d->cur_end - d->cur_start;
        d->cur_start = a;
        d->cur_end = b;
    } else if (b >= d->cur_start) {
        /* Starts before the current interval and reaches into it. */
        d->cur_start = a;
        if (b > d->cur_end)
            d->cur_end = b;
    } else {
        d->busy_ns += b - a; /* out of order: its own length */
    }
}

/* The device of kernel rows of CUDA's ordinal id: the report numbers
 * devices as NVML does, as the device_metric_batch rows do (model.h). */
static inline __attribute__((always_inline)) dstat *kernel_device(fl_report *r, int64_t id)
{
    if ((uint64_t)id < FL_DEV_SLOTS && r->dev_slot[id])
        return &r->d[r->dev_slot[id] - 1];
    int64_t gpu = fl_model_gpu_of_cuda(r->m, id);
    if (r->last_dev < r->n_d && r->d[r->last_dev].id == gpu)
        return &r->d[r->last_dev];
    dstat *d = fl_report_device(r, gpu);
    if (d) {
        r->last_dev = (size_t)(d - r->d);
        if ((uint64_t)id < FL_DEV_SLOTS && r->last_dev < UINT8_MAX)
            r->dev_slot[id] = (uint8_t)(r->last_dev + 1);
    }
    return d;
}

/* Counts the queued histogram counters (r->hq). */
static void hq_flush(fl_report *r)
{
    for (size_t i = 0; i < r->n_hq; i++)
        fl_hist_count(r->hq[i].low, r->hq[i].c);
    r->n_hq = 0;
}

/* Counts v in h later (hq_flush), or now when h has to grow (which moves
 * its counters: the queue is counted first). */
static inline __attribute__((always_inline)) void hist_queue(fl_report *r, fl_hist *h, uint64_t v)
{
    size_t i = fl_hist_slot(h, v);
    if (__builtin_expect(i != SIZE_MAX, 1)) {
        r->hq[r->n_hq++] = (hqslot){fl_hist_low(h) + i, h->c + i};
        if (r->n_hq == sizeof r->hq / sizeof r->hq[0])
            hq_flush(r);
        return;
    }
    hq_flush(r);
    if (!fl_hist_add(h, v, &r->m->keys))
        r->oom = true;
}

/* The part of a kernel row that does not depend on its detail: counts,
 * durations, registers, its device's (ds; NULL: out of memory). */
static inline __attribute__((always_inline)) void kernel_stats(fl_report *r, kstat *k,
                                                               uint64_t start, uint64_t dur,
                                                               int64_t regs, dstat *ds, bool queue)
{
    /* Branches, not selects: a new extreme is rare after a kernel's
     * first rows, and the common case then stores nothing. */
    if (__builtin_expect(dur < k->min_ns, 0))
        k->min_ns = dur;
    if (__builtin_expect(dur > k->max_ns, 0))
        k->max_ns = dur;
    k->count++;
    k->total_ns += dur;
    if (queue)
        hist_queue(r, &k->h, dur);
    else if (!fl_hist_add(&k->h, dur, &r->m->keys))
        r->oom = true;
    if (regs >= 0) {
        if (__builtin_expect(regs < k->regs_min, 0))
            k->regs_min = regs;
        if (__builtin_expect(regs > k->regs_max, 0))
            k->regs_max = regs;
    }
    if (ds) {
        ds->kernels++;
        ds->kernel_ns += dur;
        busy_add(ds, start, start + dur);
    }
    /* A range profiler's session only (decided at its first launch). */
    if (__builtin_expect(r->ll_state >= 0, 0))
        fl_report_launch_log(r, k->kernel_id, start);
}

/* The part that does: the detail d the row has (NULL: none), its scopes;
 * the row attributed on its own (attr_own: already). */
static inline void kernel_attr(fl_report *r, kstat *k, const fl_kdetail *d, uint64_t dur)
{
    if (d && d->seq != k->seq)
        take_detail(k, d);
    if ((d ? d->seq : 0) != k->attr_seq)
        resolve_scopes(r, k, d);
    attr_add(r, k, dur, 1);
}

/* A row's CPU stack for hotspots --by line: its kernel's detail as it
 * stands once the row's detail is taken (only when asked: by_line). */
static inline void line_row(fl_report *r, const kstat *k, uint64_t dur)
{
    if (r->by_line)
        fl_report_line_row(r, k->stack, k->kernel_id, dur);
}

static inline int64_t device_key(const fl_report *r, int64_t id)
{
    int64_t dev = id >= 0 ? id : r->m->default_device;
    return dev >= 0 ? dev : DEVICE_UNKNOWN;
}

/* A row from the model (kernel batches fl_report_kernel_batch does not
 * take). */
void fl_report_on_kernel(void *user, const fl_krow *row)
{
    fl_report *r = user;
    r->kernel_launches++;
    r->kernel_ns += row->duration_ns;
    kstat *k = kernel_of(r, row->kernel_id);
    if (!k)
        return;
    kernel_stats(r, k, row->start_ns, row->duration_ns, row->num_regs,
                 kernel_device(r, device_key(r, row->device_id)), false);
    attr_own(k, row->duration_ns);
    kernel_attr(r, k, row->detail, row->duration_ns);
    line_row(r, k, row->duration_ns);
    if (row->external_kind > 0)
        fl_report_op_row(r, row->external_kind, row->external_id, row->kernel_id, row->duration_ns);
}

/*
 * Kernel batches whose cells are all ints and that have dt_ns, kernel_id
 * and duration_ns (ours, and GPUFlight's without device_id), read straight
 * from the cells, without fl_krow rows; a column that is not there reads
 * as not recorded, as the model reads it (krow_of).  The model's rule for
 * details (model.c's kernel_batch) holds the rows of a batch in which a
 * has_details = 1 row finds no kernel_detail yet, until the next other
 * record.  Only the attribution depends on the detail, so the rest of a
 * row is taken at once; its attribution waits in r->dq (from the first
 * such row on: the rows before read only the kernels' current details,
 * which do not change until then) and is done by fl_report_dq_flush.
 */
#define DQ_HD 0x80000000u /* kdefer.k: the row has has_details = 1 */

void fl_report_dq_flush(fl_report *r)
{
    fl_model *m = r->m;
    fl_model_flush_held(m); /* rows of the model's (never both at once) */
    if (!r->n_dq)
        return;
    fl_model_priv *p = m->priv;
    if (!p->current.n && !p->pending.n) {
        /* No detail came: none of these rows has one. */
        m->details_missing += r->dq_hd;
        r->kernel_unattributed_ns += r->dq_ns;
        if (r->dq_reset)
            for (size_t i = 0; i < r->n_dq; i++) {
                kstat *k = &r->k[r->dq[i].k & ~DQ_HD];
                if (k->attr_seq)
                    resolve_scopes(r, k, NULL);
            }
        for (size_t i = 0; r->by_line && i < r->n_dq; i++)
            line_row(r, &r->k[r->dq[i].k & ~DQ_HD], r->dq[i].dur);
    } else {
        for (size_t i = 0; i < r->n_dq; i++) {
            const kdefer *q = &r->dq[i];
            kstat *k = &r->k[q->k & ~DQ_HD];
            kernel_attr(r, k, fl_model_claim(m, k->kernel_id, q->corr, (q->k & DQ_HD) != 0),
                        q->dur);
            line_row(r, k, q->dur);
        }
    }
    r->n_dq = 0;
    r->dq_hd = r->dq_ns = 0;
    r->dq_reset = false;
}

/* Cell c of row v; def when the batch has no such column (c < 0). */
static inline __attribute__((always_inline)) int64_t cell_or(const fl_cell *v, int c, int64_t def)
{
    return c >= 0 ? v[c].i : def;
}

/* Whether a usable has_details = 1 row of b finds no kernel_detail. */
static bool kernels_wait(const fl_report *r, const fl_batch *b, const kcols *c)
{
    const fl_u64map *pending = &r->m->priv->pending;
    if (c->hd < 0)
        return false;
    for (size_t i = 0; i < b->nrows; i++) {
        const fl_cell *v = b->cells + i * b->ncols;
        int64_t dt = v[c->dt].i, kid = v[c->kid].i, dur = v[c->dur].i;
        if (dt < 0 || dur < 0 || (uint64_t)kid > UINT32_MAX || v[c->hd].i <= 0)
            continue;
        if (!pending->n || !fl_map_find(pending, (uint32_t)nonneg_or(cell_or(v, c->corr, 0), 0)))
            return true;
    }
    return false;
}

/* From this many kernels on, their histograms outgrow the caches (2 KB
 * each for durations of 1-100 us): the rows' counts are queued (r->hq). */
#define KQUEUE_KERNELS 128

/* How far ahead the row loop asks for a row's kstat (many kernels). */
#define KPREFETCH 8

/* Asks the cache for the first line of row v's kstat (a kernel seen
 * before; a bad row asks for nothing or for one it will not touch) and
 * returns its k_dense entry (index + 1; 0: not known yet), which the row
 * then uses instead of looking it up again: an entry once set does not
 * change. */
static inline __attribute__((always_inline)) uint32_t
prefetch_kstat(const fl_report *r, const fl_cell *v, const kcols *c)
{
    uint64_t kid = (uint64_t)v[c->kid].i;
    uint32_t kd = kid < r->n_dense ? r->k_dense[kid] : 0;
    if (kd)
        __builtin_prefetch(&r->k[kd - 1], 1);
    return kd;
}

/* Which of the optional columns a kernel batch has (kernel_rows). */
enum {
    KC_ALL,   /* every one (ours) */
    KC_NODEV, /* all but device_id (GPUFlight's: the spec's ten) */
    KC_SOME,  /* others missing */
};

/* The writer's column order (wire/vocab): a batch with its eleven columns,
 * or the spec's first ten, in this order has them at fixed places, which
 * kernel_rows then reads without the column table (fewer loads a row). */
static const kcols kc_writer = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static bool kcols_writer(const kcols *c, size_t ncols)
{
    kcols w = kc_writer;
    if (ncols == 10)
        w.dev = -1;
    else if (ncols != 11)
        return false;
    return memcmp(c, &w, sizeof w) == 0;
}

/* What kernel_rows carries from row to row. */
typedef struct krun {
    uint64_t bad, lo, hi, ns;
    int64_t def_dev, ds_key; /* the model's default device; the last row's device */
    dstat *ds;               /* and its entry */
    bool waiting;
} krun;

/* Row v of a batch (see kernel_rows); kd: its kernel's k_dense entry
 * when known (prefetch_kstat), else 0. */
static inline __attribute__((always_inline)) void kernel_row(fl_report *r, const fl_cell *v,
                                                             const kcols *cp, uint64_t base,
                                                             uint32_t kd, bool may_wait, int cols,
                                                             bool queue, krun *st)
{
    const kcols c = *cp;
    int64_t dt = v[c.dt].i, kid = v[c.kid].i, sdur = v[c.dur].i;
    if (dt < 0 || sdur < 0 || (uint64_t)kid > UINT32_MAX) {
        st->bad++;
        return;
    }
    uint64_t start = base + (uint64_t)dt, dur = (uint64_t)sdur;
    st->lo = start < st->lo ? start : st->lo;
    st->hi = start + dur > st->hi ? start + dur : st->hi;
    st->ns += dur;
    int64_t ix = kd ? (int64_t)kd - 1 : kernel_index(r, (uint32_t)kid);
    if (ix < 0)
        return;
    kstat *k = &r->k[ix];
    const bool some = cols == KC_SOME;
    int64_t regs = some ? cell_or(v, c.regs, -1) : v[c.regs].i;
    int64_t dev = cols == KC_ALL ? v[c.dev].i : cols == KC_NODEV ? -1 : cell_or(v, c.dev, -1);
    int64_t dkey = dev >= 0 ? dev : st->def_dev;
    if (dkey != st->ds_key || !st->ds) {
        /* (r->d moves only when kernel_device adds a device) */
        st->ds = kernel_device(r, dkey);
        st->ds_key = dkey;
    }
    kernel_stats(r, k, start, dur, regs >= 0 ? regs : -1, st->ds, queue);
    bool hd = (some ? cell_or(v, c.hd, 0) : v[c.hd].i) > 0;
    if (!(hd | st->waiting) && !r->oom) {
        /* The kernel's current detail, which kernel_attr has taken
         * already: every row that changes it (a has_details = 1 row's
         * claim) goes through kernel_attr with it, unless memory ran
         * out.  So only the attribution is left, and it is the
         * kernel's as it stands: kernel_stats counted the row, which
         * attr_fold attributes before the attribution changes
         * (resolve_scopes) or the report is finished.  Nothing else
         * of the kstat than its first line is touched (but with
         * by_line, its stack). */
        line_row(r, k, dur);
        return;
    }
    fl_model *m = r->m;
    attr_own(k, dur);
    st->waiting |= hd && may_wait;
    uint32_t corr = (uint32_t)nonneg_or(some ? cell_or(v, c.corr, 0) : v[c.corr].i, 0);
    if (st->waiting) {
        r->dq[r->n_dq++] = (kdefer){dur, (uint32_t)ix | (hd ? DQ_HD : 0), corr};
        r->dq_ns += dur;
        r->dq_hd += hd;
        r->dq_reset |= k->attr_seq != 0;
    } else if (!hd && !m->priv->current.n) {
        kernel_attr(r, k, NULL, dur);
        line_row(r, k, dur);
    } else {
        kernel_attr(r, k, fl_model_claim(m, (uint32_t)kid, corr, hd), dur);
        line_row(r, k, dur);
    }
}

/* The rows of b (see fl_report_kernel_batch); cols: KC_*, a missing
 * column read as not recorded, as the model reads it; queue: the
 * histogram counts are queued and the kstats asked for KPREFETCH rows
 * ahead (many kernels); fixed: the columns are in the writer's order
 * (kcols_writer: KC_ALL or KC_NODEV only). */
static inline __attribute__((always_inline)) void kernel_rows(fl_report *r, const fl_batch *b,
                                                              const kcols *cp, bool may_wait,
                                                              int cols, bool queue, bool fixed)
{
    fl_model *m = r->m;
    kcols c = fixed ? kc_writer : *cp;
    if (fixed && cols == KC_NODEV)
        c.dev = -1;
    /* Rows without a device take the model's default device (which no
     * kernel row changes). */
    krun st = {.lo = UINT64_MAX, .def_dev = device_key(r, -1), .ds_key = DEVICE_UNKNOWN};
    const size_t ncols = fixed ? (cols == KC_ALL ? 11 : 10) : b->ncols;
    const fl_cell *v = b->cells;
    const size_t nrows = b->nrows;
    const uint64_t base = b->base_time_ns;
    size_t i = 0;
    if (queue) {
        /* The k_dense entries of the next KPREFETCH rows, row i's at
         * ring[i % KPREFETCH]: the loop's first part asks for row i +
         * KPREFETCH's as it takes row i, the rest (the last KPREFETCH
         * rows) has them all. */
        uint32_t ring[KPREFETCH];
        for (size_t j = 0; j < KPREFETCH; j++)
            ring[j] = j < nrows ? prefetch_kstat(r, v + j * ncols, &c) : 0;
        const size_t nmain = nrows > KPREFETCH ? nrows - KPREFETCH : 0;
        for (; i < nmain; i++, v += ncols) {
            uint32_t kd = ring[i % KPREFETCH];
            ring[i % KPREFETCH] = prefetch_kstat(r, v + KPREFETCH * ncols, &c);
            kernel_row(r, v, &c, base, kd, may_wait, cols, true, &st);
        }
        for (; i < nrows; i++, v += ncols)
            kernel_row(r, v, &c, base, ring[i % KPREFETCH], may_wait, cols, true, &st);
    } else {
        for (; i < nrows; i++, v += ncols)
            kernel_row(r, v, &c, base, 0, may_wait, cols, false, &st);
    }
    hq_flush(r);
    m->bad_rows += st.bad;
    r->kernel_launches += b->nrows - st.bad;
    r->kernel_ns += st.ns;
    if (st.lo != UINT64_MAX) {
        fl_model_note_time(m, st.lo);
        fl_model_note_time(m, st.hi);
    }
}

/* kernel_rows's instances: one per column set, queued or not. */
#define KERNEL_ROWS_BY_COLS(name, queue)                                                           \
    static void name(fl_report *r, const fl_batch *b, const kcols *c, bool may_wait, int cols,     \
                     bool fixed)                                                                   \
    {                                                                                              \
        if (cols == KC_ALL && fixed)                                                               \
            kernel_rows(r, b, c, may_wait, KC_ALL, queue, true);                                   \
        else if (cols == KC_ALL)                                                                   \
            kernel_rows(r, b, c, may_wait, KC_ALL, queue, false);                                  \
        else if (cols == KC_NODEV && fixed)                                                        \
            kernel_rows(r, b, c, may_wait, KC_NODEV, queue, true);                                 \
        else if (cols == KC_NODEV)                                                                 \
            kernel_rows(r, b, c, may_wait, KC_NODEV, queue, false);                                \
        else                                                                                       \
            kernel_rows(r, b, c, may_wait, KC_SOME, queue, false);                                 \
    }
KERNEL_ROWS_BY_COLS(kernel_rows_queued, true)
KERNEL_ROWS_BY_COLS(kernel_rows_direct, false)
#undef KERNEL_ROWS_BY_COLS

/* The framework ops of b's rows (external_kind > 0), apart from the row
 * loop: most batches have none, and then cost a read of a column. */
static void op_rows(fl_report *r, const fl_batch *b, const kcols *c)
{
    for (size_t i = 0; i < b->nrows; i++) {
        const fl_cell *v = b->cells + i * b->ncols;
        int64_t ek = v[c->ek].i, dt = v[c->dt].i, kid = v[c->kid].i, dur = v[c->dur].i;
        if (ek <= 0 || dt < 0 || dur < 0 || (uint64_t)kid > UINT32_MAX)
            continue;
        fl_report_op_row(r, ek, (uint64_t)v[c->eid].i, (uint32_t)kid, (uint64_t)dur);
    }
}

bool fl_report_kernel_batch(fl_report *r, const fl_batch *b)
{
    fl_model *m = r->m;
    kcols c = kcols_of(b);
    if (!b->all_ints || !b->cells || (c.dt | c.kid | c.dur) < 0)
        return false;
    /* Room for a row each (deferred rows). */
    if (r->cap_dq < r->n_dq + b->nrows &&
        fl_grow((void **)&r->dq, &r->cap_dq, r->n_dq + b->nrows, sizeof *r->dq) != 0) {
        r->oom = m->oom = true;
        return false;
    }
    /* Whether the batch waits for details (see model.c's kernel_batch): with none
     * pending, as soon as a has_details = 1 row comes. */
    bool may_wait = !m->priv->pending.n || kernels_wait(r, b, &c);
    int cols = (c.regs | c.hd | c.corr) < 0 ? KC_SOME : c.dev < 0 ? KC_NODEV : KC_ALL;
    bool fixed = cols != KC_SOME && kcols_writer(&c, b->ncols);
    if (r->n_k >= KQUEUE_KERNELS)
        kernel_rows_queued(r, b, &c, may_wait, cols, fixed);
    else
        kernel_rows_direct(r, b, &c, may_wait, cols, fixed);
    if (c.ek >= 0 && c.eid >= 0)
        op_rows(r, b, &c);
    return true;
}
