/*
 * recorder/trace_sink.c - the core's side of the Trace engine: the sink the CUPTI
 * plugin's decoder fills, turned into the wire format's records.
 *
 * Promises: rows are written in batches of at most FL_TRACE_BATCH, each
 * batch sorted by time (CUPTI delivers nearly sorted rows: an insertion
 * sort costs a pass); kernel_dict entries go to every channel before the
 * first batch that uses them; one kernel_detail per launch, every row
 * has_details = 1 (GPUFlight's analyzer joins kernels to details by
 * corr_id), its text after corr_id kept per kernel and written again
 * while the launch configuration stays the same, so a repeated launch
 * costs two copies and a number; in compact mode (compact_kernel_details)
 * a kernel_detail only for a launch whose configuration (grid, block,
 * registers, shared and local memory, cache configuration, device and
 * whether its limits are known, the scopes open, the CPU stack) differs from the previous
 * launch of the same kernel, and only that launch has has_details = 1 - a
 * launch with has_details = 0 has the detail of the nearest earlier row
 * of its kernel_id with has_details = 1 (a training loop writes one detail
 * per kernel, not one per launch); details come before the batch that
 * holds their launches; occupancy is computed from the device's limits, or null when they are
 * unknown; an NVTX range becomes one nvtx_marker_event when it ends (its
 * begin kept until then; a range still open at shutdown is written then,
 * marked open_at_shutdown) and a graph launch one graph_launch_event,
 * GPUFlight 1.3's records for them (docs/gpufl.md).  All of it runs on the
 * writer thread.
 */
#include "trace_sink.h"
#include "../abi/trace_abi.h"
#include "../util/buf.h"
#include "../util/clock.h"
#include "../wire/records.h"
#include "../wire/vocab.h"
#include "capture.h"
#include "occupancy.h"
#include "scope.h"

#include <stdlib.h>
#include <string.h>

#define RANGES_MAX 65536u        /* NVTX ranges open at once; more are counted lost */
#define STACK_IDS_MAX (1u << 20) /* stack ids kept (the plugin hands out at most its cap) */

/* A kernel's last launch configuration: everything its kernel_detail says
 * besides corr_id. */
typedef struct kernel_sig {
    uint32_t grid[3], block[3];
    uint32_t static_smem, dynamic_smem, local_per_thread, smem_executed, device_id;
    uint64_t local_total;
    uint16_t regs;
    uint8_t scope_depth, cache_req, cache_exec;
    uint32_t stack_id;
    bool limits; /* the device's limits were known (occupancy not null) */
    bool set;
    uint32_t scope_ids[FL_SCOPE_PATH_MAX];
    /* Per-launch details: the detail's text after the corr_id value for
     * this configuration (NULL until made; freed when it changes). */
    char *tail;
    size_t tail_len;
} kernel_sig;

struct fl_trace_writer {
    fl_ident ident;
    uint32_t gen;
    fl_buf *ch[4]; /* device, scope, system, sass (NULL: not written) */
    uint64_t batch_kernel, batch_memcpy, batch_sync, batch_alloc, batch_graph, batch_sample;
    uint64_t batch_pm;

    fl_gpu_limits limits[FL_TRACE_MAX_DEVICES];
    bool have_limits[FL_TRACE_MAX_DEVICES];

    kernel_sig *sig; /* by kernel_id */
    size_t sig_cap;
    bool compact;      /* a kernel_detail per configuration, not per launch */
    char *detail_head; /* kernel_detail up to "corr_id": (this session's) */
    size_t detail_head_len;
    fl_buf scratch; /* a tail being made */
    void (*spill)(void *user, fl_buf *b);
    void *spill_user;

    /* NVTX ranges begun and not ended, by marker id: open addressing with
     * linear probing (cap a power of two, at most half full). */
    struct open_range {
        uint64_t id, start_ns;
        char *name, *domain; /* owned; domain NULL: the default one */
        bool used;
    } * ranges;
    size_t ranges_cap, ranges_n;

    /* CPU stacks by id (the plugin's announcements); text NULL: not known;
     * in_dict: written to stack_dict (a synchronization used it). */
    struct stack_text {
        char *text;
        bool in_dict;
    } * stacks;
    size_t stacks_cap;

    fl_trace_counts counts;
};

/* ------------------------------------------------------------- sorting */

/* Every row type starts with its uint64_t t_ns. */
static uint64_t t_of(const void *row)
{
    uint64_t t;
    memcpy(&t, row, sizeof t);
    return t;
}

static void sort_by_time(void *rows, size_t n, size_t size)
{
    char *p = rows;
    size_t i = 1;
    while (i < n && t_of(p + (i - 1) * size) <= t_of(p + i * size))
        i++;
    if (i >= n)
        return;
    unsigned char tmp[256];
    if (size > sizeof tmp)
        return;
    for (; i < n; i++) {
        uint64_t t = t_of(p + i * size);
        size_t j = i;
        if (t_of(p + (j - 1) * size) <= t)
            continue;
        memcpy(tmp, p + i * size, size);
        while (j > 0 && t_of(p + (j - 1) * size) > t) {
            memcpy(p + j * size, p + (j - 1) * size, size);
            j--;
        }
        memcpy(p + j * size, tmp, size);
    }
}

/* --------------------------------------------------------------- sinks */

/* Capture windows (capture.c): the rows outside every window dropped, in
 * place, before anything of them is written; returns how many stay. */
#define KEEP_IN_WINDOWS(rows, n, kind)                                                             \
    do {                                                                                           \
        if (!fl_capture_active())                                                                  \
            break;                                                                                 \
        size_t kept_ = 0;                                                                          \
        fl_capture_lock();                                                                         \
        for (size_t i_ = 0; i_ < (n); i_++)                                                        \
            if (fl_capture_keeps((rows)[i_].corr_id, (rows)[i_].t_ns))                             \
                (rows)[kept_++] = (rows)[i_];                                                      \
        fl_capture_unlock();                                                                       \
        fl_capture_count_left_out(kind, (n)-kept_);                                                \
        (n) = kept_;                                                                               \
    } while (0)

/* A channel's text out once it is large (fl_trace_writer_set_spill). */
static void maybe_spill(fl_trace_writer *w, int ch)
{
    if (w->spill && w->ch[ch]->len >= FL_TRACE_SPILL_BYTES)
        w->spill(w->spill_user, w->ch[ch]);
}

static void on_names(void *user, const uint32_t *ids, const char *const *names, size_t n)
{
    fl_trace_writer *w = user;
    fl_dict_entry local[64];
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < 64 && i < n; k++, i++)
            local[k] = (fl_dict_entry){ids[i], names[i]};
        for (int ch = 0; ch < 3; ch++)
            fl_rec_dictionary(w->ch[ch], w->ident.session_id, FL_DICT_KERNEL, local, k);
    }
}

static void on_device(void *user, const fl_gpu_limits *lim)
{
    fl_trace_writer *w = user;
    if (lim->device_id >= FL_TRACE_MAX_DEVICES)
        return;
    w->limits[lim->device_id] = *lim;
    fl_gpu_limits_fill_arch(&w->limits[lim->device_id]);
    w->have_limits[lim->device_id] = true;
}

static void on_stacks(void *user, const uint32_t *ids, const char *const *texts, size_t n)
{
    fl_trace_writer *w = user;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id == 0 || id >= STACK_IDS_MAX)
            continue;
        if (id >= w->stacks_cap) {
            size_t cap = w->stacks_cap ? w->stacks_cap : 64;
            while (cap <= id)
                cap *= 2;
            struct stack_text *p = realloc(w->stacks, cap * sizeof *p);
            if (!p)
                continue; /* its launches' stack_trace stays "" */
            memset(p + w->stacks_cap, 0, (cap - w->stacks_cap) * sizeof *p);
            w->stacks = p;
            w->stacks_cap = cap;
        }
        free(w->stacks[id].text);
        w->stacks[id].text = strdup(texts[i] ? texts[i] : "");
        w->stacks[id].in_dict = false;
        w->counts.stacks++;
    }
}

/* The text of stack id; NULL (written "") when none or not announced. */
static const char *stack_text(const fl_trace_writer *w, uint32_t id)
{
    return id && id < w->stacks_cap ? w->stacks[id].text : NULL;
}

static bool limits_known(const fl_trace_writer *w, uint32_t device_id)
{
    return device_id < FL_TRACE_MAX_DEVICES && w->have_limits[device_id];
}

/* Whether k's configuration differs from its kernel's last one (then the
 * signature becomes k's and its tail is dropped); *out: the kernel's
 * signature, NULL when there is no memory to keep one (then every launch
 * counts as changed). */
static bool sig_changed(fl_trace_writer *w, const fl_kernel_row *k, kernel_sig **out)
{
    *out = NULL;
    if (k->kernel_id >= w->sig_cap) {
        size_t cap = w->sig_cap ? w->sig_cap : 64;
        while (cap <= k->kernel_id)
            cap *= 2;
        kernel_sig *p = realloc(w->sig, cap * sizeof *p);
        if (!p)
            return true; /* no memory to remember: a detail every time */
        memset(p + w->sig_cap, 0, (cap - w->sig_cap) * sizeof *p);
        w->sig = p;
        w->sig_cap = cap;
    }
    /* Compared in place (the common case: the same as last time); the
     * signature is rebuilt only when it changed. */
    uint8_t sd = k->scope_depth;
    size_t n_ids = sd == FL_SCOPE_UNKNOWN ? 0 : sd;
    bool limits = limits_known(w, k->device_id);
    kernel_sig *old = &w->sig[k->kernel_id];
    *out = old;
    if (old->set && old->grid[0] == k->grid[0] && old->grid[1] == k->grid[1] &&
        old->grid[2] == k->grid[2] && old->block[0] == k->block[0] &&
        old->block[1] == k->block[1] && old->block[2] == k->block[2] && old->regs == k->num_regs &&
        old->dynamic_smem == k->dynamic_smem_bytes && old->static_smem == k->static_smem_bytes &&
        old->local_per_thread == k->local_mem_per_thread_bytes &&
        old->local_total == k->local_mem_total_bytes && old->cache_req == k->cache_requested &&
        old->cache_exec == k->cache_executed && old->smem_executed == k->smem_executed_bytes &&
        old->device_id == k->device_id && old->limits == limits && old->scope_depth == sd &&
        old->stack_id == k->stack_id &&
        (n_ids == 0 || memcmp(old->scope_ids, k->scope_ids, n_ids * sizeof *k->scope_ids) == 0))
        return false;
    free(old->tail);
    *old = (kernel_sig){.grid = {k->grid[0], k->grid[1], k->grid[2]},
                        .block = {k->block[0], k->block[1], k->block[2]},
                        .static_smem = k->static_smem_bytes,
                        .dynamic_smem = k->dynamic_smem_bytes,
                        .local_per_thread = k->local_mem_per_thread_bytes,
                        .smem_executed = k->smem_executed_bytes,
                        .device_id = k->device_id,
                        .local_total = k->local_mem_total_bytes,
                        .regs = k->num_regs,
                        .scope_depth = sd,
                        .stack_id = k->stack_id,
                        .cache_req = k->cache_requested,
                        .cache_exec = k->cache_executed,
                        .limits = limits,
                        .set = true};
    memcpy(old->scope_ids, k->scope_ids, n_ids * sizeof *k->scope_ids);
    return true;
}

static const char *user_scope(const fl_trace_writer *w, const fl_kernel_row *k, char *buf,
                              size_t cap)
{
    if (k->scope_depth == FL_SCOPE_UNKNOWN)
        return NULL;
    if (k->scope_depth == 0)
        return "global";
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k->scope_depth && i < FL_SCOPE_PATH_MAX; i++) {
        const char *name = fl_scope_name_of(w->gen, k->scope_ids[i]);
        int r = snprintf(buf + used, cap - used, "%s%s", i ? "|" : "", name ? name : "?");
        if (r < 0 || (size_t)r >= cap - used)
            break;
        used += (size_t)r;
    }
    return buf;
}

/* The launch's theoretical occupancy into *occ; NULL when the device's
 * limits are not known. */
static const fl_occupancy *occupancy_of(const fl_trace_writer *w, const fl_kernel_row *k,
                                        fl_occupancy *occ)
{
    if (!limits_known(w, k->device_id))
        return NULL;
    fl_launch l = {.block_threads = (int)(k->block[0] * k->block[1] * k->block[2]),
                   .regs_per_thread = k->num_regs,
                   .static_smem_bytes = (int)k->static_smem_bytes,
                   .dynamic_smem_bytes = (int)k->dynamic_smem_bytes,
                   .smem_config_bytes = (int)k->smem_executed_bytes};
    return fl_occupancy_compute(&w->limits[k->device_id], &l, occ) ? occ : NULL;
}

/* user_scope: the scopes open at launch ("outer|inner", "global" outside
 * any), null when no launch callback saw this kernel; stack_trace: the CPU
 * stack at launch (enable_stack_trace), "" when none (a string always,
 * for GPUFlight's analyzer). */
static void detail_full(fl_trace_writer *w, fl_buf *b, const fl_kernel_row *k, bool tail_only)
{
    fl_occupancy occ;
    char scope[512];
    const fl_occupancy *po = occupancy_of(w, k, &occ);
    const char *us = user_scope(w, k, scope, sizeof scope);
    if (tail_only)
        fl_rec_kernel_detail_tail(b, k, po, us, stack_text(w, k->stack_id));
    else
        fl_rec_kernel_detail(b, &w->ident, k, po, us, stack_text(w, k->stack_id));
}

/* k's detail from its configuration's tail, made the first time. */
static void detail_per_launch(fl_trace_writer *w, const fl_kernel_row *k, kernel_sig *sig)
{
    if (!sig->tail) {
        fl_buf_reset(&w->scratch);
        detail_full(w, &w->scratch, k, true);
        sig->tail = w->scratch.oom ? NULL : malloc(w->scratch.len);
        if (sig->tail) {
            memcpy(sig->tail, w->scratch.p, w->scratch.len);
            sig->tail_len = w->scratch.len;
        }
    }
    if (!sig->tail || !w->detail_head) {
        detail_full(w, w->ch[0], k, false); /* no memory to keep it */
        return;
    }
    char *d = fl_buf_reserve(w->ch[0], w->detail_head_len + 20 + sig->tail_len);
    if (!d)
        return;
    d = fl_put_lit(d, w->detail_head, w->detail_head_len);
    d = fl_put_u64(d, k->corr_id);
    d = fl_put_lit(d, sig->tail, sig->tail_len);
    fl_buf_commit(w->ch[0], d);
}

static void on_kernels(void *user, fl_kernel_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    KEEP_IN_WINDOWS(rows, n, FL_CAPTURE_ROW_KERNEL);
    if (!n)
        return;
    sort_by_time(rows, n, sizeof *rows);
    /* Details first: a reader meets a detail before the row that says it
     * has one. */
    for (size_t i = 0; i < n; i++) {
        fl_kernel_row *k = &rows[i];
        kernel_sig *sig;
        bool changed = sig_changed(w, k, &sig);
        k->has_details = changed || !w->compact;
        if (!k->has_details)
            continue;
        if (!w->compact && sig)
            detail_per_launch(w, k, sig);
        else
            detail_full(w, w->ch[0], k, false);
        w->counts.details++;
        /* A batch's details are ~500 KiB: out before they leave the cache. */
        if ((i & 63) == 63)
            maybe_spill(w, 0);
    }
    fl_rec_kernel_batch(w->ch[0], w->ident.session_id, ++w->batch_kernel, rows, n);
    w->counts.kernels += n;
    for (size_t i = 0; i < n; i++)
        w->counts.kernel_ns += rows[i].duration_ns;
    maybe_spill(w, 0);
}

static void on_memcpys(void *user, fl_memcpy_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    KEEP_IN_WINDOWS(rows, n, FL_CAPTURE_ROW_MEMCPY);
    if (!n)
        return;
    sort_by_time(rows, n, sizeof *rows);
    fl_rec_memcpy_batch(w->ch[0], w->ident.session_id, ++w->batch_memcpy, rows, n);
    w->counts.memcpys += n;
    maybe_spill(w, 0);
}

static void on_memsets(void *user, fl_memset_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    KEEP_IN_WINDOWS(rows, n, FL_CAPTURE_ROW_MEMSET);
    if (!n)
        return;
    sort_by_time(rows, n, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        fl_rec_memset_event(w->ch[0], &w->ident, &rows[i]);
    w->counts.memsets += n;
    maybe_spill(w, 0);
}

/* Our stack_dict: the stacks of rows not written there yet, on the scope
 * channel before the lines that use them (a stack id whose text is not
 * known is written 0).  ids: each row's stack_id, stride bytes apart. */
static void stacks_to_dict(fl_trace_writer *w, uint32_t *ids, size_t stride, size_t n)
{
    fl_dict_entry local[64];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t *idp = (uint32_t *)(void *)((char *)ids + i * stride);
        uint32_t id = *idp;
        if (!stack_text(w, id)) {
            *idp = 0;
            continue;
        }
        if (w->stacks[id].in_dict)
            continue;
        w->stacks[id].in_dict = true;
        local[k++] = (fl_dict_entry){id, w->stacks[id].text};
        if (k == 64) {
            fl_rec_dictionary(w->ch[1], w->ident.session_id, FL_DICT_STACK, local, k);
            k = 0;
        }
    }
    if (k)
        fl_rec_dictionary(w->ch[1], w->ident.session_id, FL_DICT_STACK, local, k);
}

static void on_syncs(void *user, fl_sync_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    KEEP_IN_WINDOWS(rows, n, FL_CAPTURE_ROW_SYNC);
    if (!n)
        return;
    sort_by_time(rows, n, sizeof *rows);
    stacks_to_dict(w, &rows[0].stack_id, sizeof *rows, n);
    fl_rec_sync_batch(w->ch[1], w->ident.session_id, ++w->batch_sync, rows, n);
    w->counts.syncs += n;
    maybe_spill(w, 1);
}

static void on_allocs(void *user, fl_alloc_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    sort_by_time(rows, n, sizeof *rows);
    fl_rec_alloc_batch(w->ch[1], w->ident.session_id, ++w->batch_alloc, rows, n);
    w->counts.allocs += n;
    maybe_spill(w, 1);
}

/* PC sampling's dictionaries (function, stall-reason names, source
 * files): on the scope channel, where their rows go. */
static void on_sample_names(void *user, int dict, const uint32_t *ids, const char *const *names,
                            size_t n)
{
    fl_trace_writer *w = user;
    fl_dict d = dict == FL_SAMPLE_DICT_FUNCTION ? FL_DICT_FUNCTION
                : dict == FL_SAMPLE_DICT_METRIC ? FL_DICT_METRIC
                                                : FL_DICT_SOURCE_FILE;
    fl_dict_entry local[64];
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < 64 && i < n; k++, i++)
            local[k] = (fl_dict_entry){ids[i], names[i]};
        fl_rec_dictionary(w->ch[1], w->ident.session_id, d, local, k);
    }
}

static void on_samples(void *user, fl_sample_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    fl_rec_profile_batch(w->ch[1], w->ident.session_id, ++w->batch_sample, rows, n);
    for (size_t i = 0; i < n; i++) {
        bool sass = rows[i].sample_kind == FL_SAMPLE_KIND_SASS;
        w->counts.sample_rows += sass ? 0 : 1;
        w->counts.samples += sass ? 0 : rows[i].samples;
        w->counts.sass_rows += sass ? 1 : 0;
    }
    maybe_spill(w, 1);
}

static void on_disassembly(void *user, uint64_t crc, uint32_t function_id, const char *name,
                           const fl_sass_entry *entries, size_t n)
{
    fl_trace_writer *w = user;
    if (!w->ch[3])
        return;
    fl_rec_cubin_disassembly(w->ch[3], w->ident.session_id, crc, name, function_id, entries, n);
    w->counts.disassembled++;
    maybe_spill(w, 3);
}

/* PM sampling: a device's configuration, then its rows (scope channel,
 * GPUFlight 1.3's). */
static void on_pm_config(void *user, const fl_pm_config *c)
{
    fl_trace_writer *w = user;
    fl_rec_pm_config(w->ch[1], w->ident.session_id, c);
    w->counts.pm_configs++;
}

static void on_pm_samples(void *user, fl_pm_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    fl_rec_pm_batch(w->ch[1], w->ident.session_id, ++w->batch_pm, rows, n);
    w->counts.pm_rows += n;
    maybe_spill(w, 1);
}

/* SASS metrics' configuration of a device: on the device channel. */
static void on_sass_config(void *user, uint32_t device_id, const char *const *configured,
                           size_t n_configured, const char *const *skipped, size_t n_skipped)
{
    fl_trace_writer *w = user;
    fl_rec_sass_config(w->ch[0], w->ident.session_id, gp_now_wall_ns(), device_id, configured,
                       n_configured, skipped, n_skipped);
    w->counts.sass_configs++;
}

/* The range profiler: scope ranges on the scope channel, kernel ranges on
 * the device channel (vocab.h's channels). */
static void on_perf_ranges(void *user, const fl_perf_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].kind == FL_PERF_RANGE_KERNEL) {
            fl_rec_kernel_perf_metric(w->ch[0], &w->ident, &rows[i]);
            maybe_spill(w, 0);
        } else {
            fl_rec_perf_metric(w->ch[1], &w->ident, &rows[i]);
            maybe_spill(w, 1);
        }
        w->counts.perf_ranges++;
    }
}

static void on_graphs(void *user, fl_graph_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    KEEP_IN_WINDOWS(rows, n, FL_CAPTURE_ROW_GRAPH);
    if (!n)
        return;
    sort_by_time(rows, n, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        fl_rec_graph_launch(w->ch[1], &w->ident, &rows[i]);
    w->counts.graphs += n;
    maybe_spill(w, 1);
}

/* Graph node definitions: structure, not activity, so written whatever
 * the capture windows (a window's graph launches name them); their
 * stacks into stack_dict first. */
static void on_graph_nodes(void *user, fl_graph_node_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    if (!n)
        return;
    stacks_to_dict(w, &rows[0].stack_id, sizeof *rows, n);
    for (size_t i = 0; i < n; i++)
        fl_rec_graph_node(w->ch[1], w->ident.session_id, &rows[i]);
    w->counts.graph_nodes += n;
    maybe_spill(w, 1);
}

/* ---------------------------------------------------------- NVTX ranges */

static size_t range_slot(uint64_t id, size_t cap)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static struct open_range *range_find(fl_trace_writer *w, uint64_t id)
{
    if (!w->ranges_n)
        return NULL;
    for (size_t j = range_slot(id, w->ranges_cap);; j = (j + 1) & (w->ranges_cap - 1)) {
        struct open_range *r = &w->ranges[j];
        if (!r->used)
            return NULL;
        if (r->id == id)
            return r;
    }
}

static bool ranges_grow(fl_trace_writer *w)
{
    size_t cap = w->ranges_cap ? w->ranges_cap * 2 : 64;
    struct open_range *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < w->ranges_cap; i++) {
        if (!w->ranges[i].used)
            continue;
        size_t j = range_slot(w->ranges[i].id, cap);
        while (t[j].used)
            j = (j + 1) & (cap - 1);
        t[j] = w->ranges[i];
    }
    free(w->ranges);
    w->ranges = t;
    w->ranges_cap = cap;
    return true;
}

/* Frees an entry's names and closes the gap it leaves (backward shift:
 * no tombstones, so a lookup stops at the first empty slot). */
static void range_remove(fl_trace_writer *w, struct open_range *r)
{
    free(r->name);
    free(r->domain);
    size_t mask = w->ranges_cap - 1, i = (size_t)(r - w->ranges);
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        if (!w->ranges[j].used)
            break;
        size_t home = range_slot(w->ranges[j].id, w->ranges_cap);
        /* Move j into the hole at i unless its home lies in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            w->ranges[i] = w->ranges[j];
            i = j;
        }
    }
    w->ranges[i] = (struct open_range){0};
    w->ranges_n--;
}

static void range_begin(fl_trace_writer *w, const fl_marker_row *m)
{
    struct open_range *r = range_find(w, m->marker_id);
    if (!r) {
        if (w->ranges_n >= RANGES_MAX ||
            ((w->ranges_n + 1) * 2 > w->ranges_cap && !ranges_grow(w))) {
            w->counts.markers_lost++;
            return;
        }
        size_t j = range_slot(m->marker_id, w->ranges_cap);
        while (w->ranges[j].used)
            j = (j + 1) & (w->ranges_cap - 1);
        r = &w->ranges[j];
        w->ranges_n++;
    } else {
        /* The id began again without an end: the first begin is lost. */
        free(r->name);
        free(r->domain);
        w->counts.markers_lost++;
    }
    *r = (struct open_range){.id = m->marker_id,
                             .start_ns = m->t_ns,
                             .name = strdup(m->name ? m->name : ""),
                             .domain = m->domain ? strdup(m->domain) : NULL,
                             .used = true};
}

static void range_end(fl_trace_writer *w, const fl_marker_row *m)
{
    struct open_range *r = range_find(w, m->marker_id);
    if (!r) {
        /* Its begin was not seen (before the session, or lost): without a
         * name or a start there is nothing to write. */
        w->counts.markers_unmatched++;
        return;
    }
    fl_nvtx_range e = {.name = r->name,
                       .domain = r->domain,
                       .start_ns = r->start_ns,
                       .end_ns = m->t_ns,
                       .marker_id = r->id};
    fl_rec_nvtx_marker(w->ch[1], &w->ident, &e);
    w->counts.ranges++;
    range_remove(w, r);
}

static void on_markers(void *user, fl_marker_row *rows, size_t n)
{
    fl_trace_writer *w = user;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].is_end)
            range_end(w, &rows[i]);
        else
            range_begin(w, &rows[i]);
    }
    w->counts.markers += n;
    maybe_spill(w, 1);
}

static int cmp_open_range(const void *a, const void *b)
{
    const struct open_range *x = *(const struct open_range *const *)a,
                            *y = *(const struct open_range *const *)b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void fl_trace_writer_close_ranges(fl_trace_writer *w, uint64_t end_ns)
{
    if (!w || !w->ranges_n)
        return;
    struct open_range **open = malloc(w->ranges_n * sizeof *open);
    size_t k = 0;
    for (size_t i = 0; open && i < w->ranges_cap; i++)
        if (w->ranges[i].used)
            open[k++] = &w->ranges[i];
    if (open)
        qsort(open, k, sizeof *open, cmp_open_range);
    for (size_t i = 0; i < k; i++) {
        const struct open_range *r = open[i];
        fl_nvtx_range e = {.name = r->name,
                           .domain = r->domain,
                           .start_ns = r->start_ns,
                           .end_ns = end_ns > r->start_ns ? end_ns : r->start_ns,
                           .marker_id = r->id,
                           .open_at_shutdown = true};
        fl_rec_nvtx_marker(w->ch[1], &w->ident, &e);
        w->counts.ranges_open_at_end++;
    }
    if (!open)
        w->counts.markers_lost += w->ranges_n;
    free(open);
    for (size_t i = 0; i < w->ranges_cap; i++) {
        free(w->ranges[i].name);
        free(w->ranges[i].domain);
        w->ranges[i] = (struct open_range){0};
    }
    w->ranges_n = 0;
}

/* ------------------------------------------------------------ lifetime */

fl_trace_writer *fl_trace_writer_create(const fl_ident *ident, uint32_t gen, fl_buf *device,
                                        fl_buf *scope, fl_buf *system)
{
    fl_trace_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->ident = *ident;
    w->gen = gen;
    w->ch[0] = device;
    w->ch[1] = scope;
    w->ch[2] = system;
    fl_buf head = {0};
    fl_rec_kernel_detail_head(&head, &w->ident);
    w->detail_head_len = head.len;
    w->detail_head = fl_buf_take(&head); /* NULL: every detail formatted whole */
    return w;
}

void fl_trace_writer_destroy(fl_trace_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->sig_cap; i++)
        free(w->sig[i].tail);
    free(w->sig);
    free(w->detail_head);
    fl_buf_free(&w->scratch);
    for (size_t i = 0; i < w->ranges_cap; i++) {
        free(w->ranges[i].name);
        free(w->ranges[i].domain);
    }
    free(w->ranges);
    for (size_t i = 0; i < w->stacks_cap; i++)
        free(w->stacks[i].text);
    free(w->stacks);
    free(w);
}

void fl_trace_writer_sink(fl_trace_writer *w, fl_trace_sink *out)
{
    *out = (fl_trace_sink){.user = w,
                           .kernel_names = on_names,
                           .device = on_device,
                           .kernels = on_kernels,
                           .memcpys = on_memcpys,
                           .memsets = on_memsets,
                           .syncs = on_syncs,
                           .allocs = on_allocs,
                           .graphs = on_graphs,
                           .graph_nodes = on_graph_nodes,
                           .markers = on_markers,
                           .stacks = on_stacks,
                           .sample_names = on_sample_names,
                           .samples = on_samples,
                           .disassembly = on_disassembly,
                           .pm_config = on_pm_config,
                           .pm_samples = on_pm_samples,
                           .sass_config = on_sass_config,
                           .perf_ranges = on_perf_ranges};
}

void fl_trace_writer_set_spill(fl_trace_writer *w, void (*spill)(void *user, fl_buf *b), void *user)
{
    if (w) {
        w->spill = spill;
        w->spill_user = user;
    }
}

void fl_trace_writer_set_sass(fl_trace_writer *w, fl_buf *sass)
{
    if (w)
        w->ch[3] = sass;
}

void fl_trace_writer_set_compact(fl_trace_writer *w, bool compact)
{
    if (w)
        w->compact = compact;
}

void fl_trace_writer_add_limits(fl_trace_writer *w, const fl_gpu_limits *lim)
{
    if (w && lim)
        on_device(w, lim);
}

void fl_trace_writer_counts(const fl_trace_writer *w, fl_trace_counts *out)
{
    if (w)
        *out = w->counts;
    else
        memset(out, 0, sizeof *out);
}
