/*
 * wire/records.c - the records of the GPUFlight wire format v1 that are not
 * batches, one line each (batches: batches.c).
 *
 * Promises (docs: shared spec session-log-format.md and its example session):
 *  - every fl_rec_* appends exactly one JSON object and its '\n';
 *  - type names, versions, dictionary names and capability statuses come
 *    from the vocabulary (vocab.h); keys come in the spec's order, without
 *    whitespace;
 *  - strings go through gp_json_quote (ill-formed UTF-8 becomes \ufffd), a
 *    NULL string is null, doubles use gp_format_fixed(v, 6, 1);
 *  - a metric whose validity bit is clear is null, never 0;
 *  - the functions are pure: no clock, no globals, no I/O.
 */
#include "../util/buf.h"
#include "put.h"
#include "records.h"
#include "vocab.h"
#include "gpu_profile.h"
#include "../util/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MIB 1048576ull

/* ------------------------------------------------------------ sub-objects */

static void put_host(fl_buf *b, const fl_host_sample *h)
{
    static const fl_host_sample none = {0};
    if (!h)
        h = &none;
    FL_BUF_LIT(b, "{\"cpu_pct\":");
    fl_buf_opt_double(b, (h->valid & FL_HOST_CPU) != 0, h->cpu_pct);
    fl_put_key(b, "ram_used_mib");
    fl_buf_opt_u64(b, (h->valid & FL_HOST_RAM) != 0, h->ram_used_mib);
    fl_put_key(b, "ram_total_mib");
    fl_buf_opt_u64(b, (h->valid & FL_HOST_RAM) != 0, h->ram_total_mib);
    FL_BUF_LIT(b, "}");
}

/* {"id":I,"name":N,"uuid":U,"vendor":V - the opening every device entry
 * shares, live (devices) or static (*_static_devices). */
static void put_device_head(fl_buf *b, uint32_t id, const char *name, const char *uuid,
                            const char *vendor)
{
    FL_BUF_LIT(b, "{\"id\":");
    fl_buf_u64(b, id);
    fl_put_key(b, "name");
    fl_buf_str(b, name);
    fl_put_key(b, "uuid");
    fl_buf_str(b, uuid);
    fl_put_key(b, "vendor");
    fl_buf_str(b, vendor);
}

static void put_device_live(fl_buf *b, const fl_device_live *dv)
{
    const gp_device_sample *s = &dv->s;
    uint32_t v = dv->have_sample ? s->valid : 0;
    bool used = (v & GP_M_MEM_USED) != 0, total = (v & GP_M_MEM_TOTAL) != 0;
    bool thr = (v & GP_M_THROTTLE) != 0;
    const uint64_t pwr =
        GP_THROTTLE_SW_POWER_CAP | GP_THROTTLE_HW_POWER_BRAKE | GP_THROTTLE_HW_SLOWDOWN;
    const uint64_t therm = GP_THROTTLE_SW_THERMAL | GP_THROTTLE_HW_THERMAL;
    /* Free memory is a byte quantity like the other two, rounded down on
     * its own; a used figure above the total (a racing driver) is 0 free. */
    uint64_t free_b =
        s->mem_total_bytes > s->mem_used_bytes ? s->mem_total_bytes - s->mem_used_bytes : 0;

    put_device_head(b, dv->id, dv->name, dv->uuid, dv->vendor);
    fl_put_key(b, "pci_bus");
    fl_buf_str(b, dv->pci_bus);
    fl_put_key(b, "used_mib");
    fl_buf_opt_u64(b, used, s->mem_used_bytes / MIB);
    fl_put_key(b, "free_mib");
    fl_buf_opt_u64(b, used && total, free_b / MIB);
    fl_put_key(b, "total_mib");
    fl_buf_opt_u64(b, total, s->mem_total_bytes / MIB);
    fl_put_key(b, "util_gpu_pct");
    fl_buf_opt_u64(b, (v & GP_M_UTIL_GPU) != 0, s->util_gpu_pct);
    fl_put_key(b, "util_mem_pct");
    fl_buf_opt_u64(b, (v & GP_M_UTIL_MEM) != 0, s->util_mem_pct);
    fl_put_key(b, "temp_c");
    fl_buf_opt_i64(b, (v & GP_M_TEMP) != 0, s->temp_c);
    fl_put_key(b, "power_mw");
    fl_buf_opt_u64(b, (v & GP_M_POWER) != 0, s->power_mw);
    /* The sampler reads the SM and memory clocks, not the graphics clock. */
    fl_put_key(b, "clk_gfx_mhz");
    FL_BUF_LIT(b, "null");
    fl_put_key(b, "clk_sm_mhz");
    fl_buf_opt_u64(b, (v & GP_M_CLOCK_SM) != 0, s->clock_sm_mhz);
    fl_put_key(b, "clk_mem_mhz");
    fl_buf_opt_u64(b, (v & GP_M_CLOCK_MEM) != 0, s->clock_mem_mhz);
    fl_put_key(b, "throttle_pwr");
    fl_buf_opt_u64(b, thr, (s->throttle_reasons & pwr) ? 1 : 0);
    fl_put_key(b, "throttle_therm");
    fl_buf_opt_u64(b, thr, (s->throttle_reasons & therm) ? 1 : 0);
    fl_put_key(b, "pcie_rx_bw_bps");
    fl_buf_opt_u64(b, (v & GP_M_PCIE_RX) != 0, (uint64_t)s->pcie_rx_kbps * 1024);
    fl_put_key(b, "pcie_tx_bw_bps");
    fl_buf_opt_u64(b, (v & GP_M_PCIE_TX) != 0, (uint64_t)s->pcie_tx_kbps * 1024);
    FL_BUF_LIT(b, "}");
}

/* ,"mig":{...}: a MIG instance's identity (vocab.h's FL_MIG_KEYS order);
 * an empty string or a negative id is null. */
static void put_mig(fl_buf *b, const gp_mig_info *m)
{
    fl_put_key(b, FL_KEY_MIG);
    FL_BUF_LIT(b, "{");
    for (int k = 0; k < FL_MIG_KEY_COUNT; k++) {
        if (k)
            FL_BUF_LIT(b, ",");
        fl_buf_str(b, fl_mig_key_name(k));
        FL_BUF_LIT(b, ":");
        const char *text = k == FL_MIG_PROFILE       ? m->profile
                           : k == FL_MIG_PARENT_UUID ? m->parent_uuid
                           : k == FL_MIG_PARENT_NAME ? m->parent_name
                                                     : NULL;
        int64_t id = k == FL_MIG_GPU_INSTANCE_ID       ? m->gpu_instance_id
                     : k == FL_MIG_COMPUTE_INSTANCE_ID ? m->compute_instance_id
                                                       : (int64_t)m->parent_index;
        if (text)
            fl_buf_str(b, text[0] ? text : NULL);
        else
            fl_buf_opt_i64(b, id >= 0, id);
    }
    FL_BUF_LIT(b, "}");
}

static void put_device_static(fl_buf *b, const fl_device_static *d)
{
    put_device_head(b, d->id, d->name, d->uuid, d->vendor);
    fl_put_key(b, "architecture");
    fl_buf_str(b, d->architecture);
    fl_put_key(b, "compute_major");
    fl_buf_opt_i64(b, d->compute_major >= 0, d->compute_major);
    fl_put_key(b, "compute_minor");
    fl_buf_opt_i64(b, d->compute_minor >= 0, d->compute_minor);
    fl_put_key(b, "l2_cache_size_bytes");
    fl_buf_opt_i64(b, d->l2_cache_size_bytes >= 0, d->l2_cache_size_bytes);
    fl_put_key(b, "shared_mem_per_block_bytes");
    fl_buf_opt_i64(b, d->shared_mem_per_block_bytes >= 0, d->shared_mem_per_block_bytes);
    fl_put_key(b, "regs_per_block");
    fl_buf_opt_i64(b, d->regs_per_block >= 0, d->regs_per_block);
    fl_put_key(b, "multi_processor_count");
    fl_buf_opt_i64(b, d->multi_processor_count >= 0, d->multi_processor_count);
    fl_put_key(b, "warp_size");
    fl_buf_opt_i64(b, d->warp_size >= 0, d->warp_size);
    if (d->mig && d->mig->is_mig)
        put_mig(b, d->mig);
    FL_BUF_LIT(b, "}");
}

static void put_live_list(fl_buf *b, const fl_device_live *devs, size_t n)
{
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; devs && i < n; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        put_device_live(b, &devs[i]);
    }
    FL_BUF_LIT(b, "]");
}

static void put_static_list(fl_buf *b, const fl_device_static *devs, size_t n)
{
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; devs && i < n; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        put_device_static(b, &devs[i]);
    }
    FL_BUF_LIT(b, "]");
}

static const char *uuid_body(const char *u)
{
    return strncmp(u, "GPU-", 4) == 0 || strncmp(u, "MIG-", 4) == 0 ? u + 4 : u;
}

static char lower_ascii(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

bool fl_device_uuid_same(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    a = uuid_body(a);
    b = uuid_body(b);
    if (!*a || !*b)
        return false;
    for (; *a && *b; a++, b++)
        if (lower_ascii(*a) != lower_ascii(*b))
            return false;
    return *a == *b;
}

/* {"version":V,"type":T,"pid":P,"app":A,"session_id":S - the opening of
 * the lifecycle records and of GPUFlight's per-event records (its order;
 * "version" only for a type the vocabulary gives one). */
static void put_open_ident(fl_buf *b, fl_type type, const fl_ident *id)
{
    fl_put_open(b, type);
    FL_BUF_LIT(b, ",\"pid\":");
    fl_buf_i64(b, id->pid);
    fl_put_key(b, "app");
    fl_buf_str(b, id->app);
    fl_put_key(b, "session_id");
    fl_buf_str(b, id->session_id);
}

/* ------------------------------------------------------------- lifecycle */

/* job_start's place in the run: every key, null where unknown - all of
 * them only with a run_id, the presence test GPUFlight uses for its run
 * keys (a writer that knows no run writes GPUFlight's line as it was). */
static void put_run(fl_buf *b, const fl_run_ident *r)
{
    if (!r->run_id)
        return;
    fl_put_key(b, "run_id");
    fl_buf_str(b, r->run_id);
    fl_put_key(b, "rank");
    fl_buf_opt_i64(b, r->have_rank, r->rank);
    fl_put_key(b, "local_rank");
    fl_buf_opt_i64(b, r->have_local_rank, r->local_rank);
    fl_put_key(b, "world_size");
    fl_buf_opt_i64(b, r->have_world_size, r->world_size);
    fl_put_key(b, "rank_source");
    fl_buf_str(b, r->rank_source);
    fl_put_key(b, "monotonic_ns");
    fl_buf_opt_i64(b, r->mono_ns > 0, (int64_t)r->mono_ns);
}

void fl_rec_job_start(fl_buf *b, const fl_ident *id, const fl_job_start *js)
{
    put_open_ident(b, FL_T_JOB_START, id);
    fl_put_key(b, "log_path");
    fl_buf_str(b, js->log_path);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, js->ts_ns);
    fl_put_key(b, "hostname");
    fl_buf_str(b, js->hostname);
    fl_put_key(b, "ip_addr");
    fl_buf_str(b, js->ip_addr);
    fl_put_key(b, "host");
    put_host(b, &js->host);
    fl_put_key(b, "devices");
    put_live_list(b, js->devices, js->n_devices);
    fl_put_key(b, "gpu_static_devices");
    put_static_list(b, js->gpu_static, js->n_gpu_static);
    fl_put_key(b, "cuda_static_devices");
    put_static_list(b, js->cuda_static, js->n_cuda_static);
    /* The AMD devices, as GPUFlight lists its vendor "AMD" entries; [] when
     * the session samples none (readers still expect the key). */
    fl_put_key(b, "rocm_static_devices");
    put_static_list(b, js->rocm_static, js->n_rocm_static);
    fl_put_key(b, "session_kind");
    fl_buf_str(b, js->session_kind);
    if (js->profiling_engine) {
        fl_put_key(b, "profiling_engine");
        fl_buf_str(b, js->profiling_engine);
    }
    put_run(b, &js->run);
    FL_BUF_LIT(b, "}\n");
}

static void put_shutdown_head(fl_buf *b, const fl_ident *id, uint64_t ts_ns)
{
    /* The one lifecycle record without "version" (as the seed writes it). */
    put_open_ident(b, FL_T_SHUTDOWN, id);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
}

void fl_rec_shutdown(fl_buf *b, const fl_ident *id, uint64_t ts_ns)
{
    put_shutdown_head(b, id, ts_ns);
    FL_BUF_LIT(b, "}\n");
}

static void put_child_end(fl_buf *b, int exit_code, int signal, bool crashed)
{
    /* Exit statuses are 0..255, so any negative one means "none". */
    fl_put_key(b, "exit_code");
    fl_buf_opt_i64(b, exit_code >= 0, exit_code);
    fl_put_key(b, "signal");
    fl_buf_opt_i64(b, signal != 0, signal);
    fl_put_key(b, "crashed");
    fl_put_bool(b, crashed);
}

void fl_rec_shutdown_child(fl_buf *b, const fl_ident *id, uint64_t ts_ns, int exit_code, int signal,
                           bool crashed)
{
    put_shutdown_head(b, id, ts_ns);
    put_child_end(b, exit_code, signal, crashed);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_shutdown_session(fl_buf *b, const fl_ident *id, const fl_shutdown *sd)
{
    put_shutdown_head(b, id, sd->ts_ns);
    if (sd->child)
        put_child_end(b, sd->exit_code, sd->signal, sd->crashed);
    fl_put_key(b, "lines_lost");
    fl_buf_u64(b, sd->lines_lost);
    fl_put_key(b, "rows_lost");
    fl_buf_u64(b, sd->rows_lost);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_system(fl_buf *b, const fl_ident *id, bool start, const char *name, uint64_t ts_ns,
                   const fl_host_sample *host, const fl_device_live *devices, size_t n_devices)
{
    put_open_ident(b, start ? FL_T_SYSTEM_START : FL_T_SYSTEM_STOP, id);
    fl_put_key(b, "name");
    fl_buf_str(b, name);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
    fl_put_key(b, "host");
    put_host(b, host);
    fl_put_key(b, "devices");
    put_live_list(b, devices, n_devices);
    FL_BUF_LIT(b, "}\n");
}

/* The opening a device's event records share: type, identity, when and
 * which device. */
static void put_device_event(fl_buf *b, fl_type t, const fl_ident *id, uint64_t ts_ns,
                             uint32_t device_id, const char *name, const char *uuid)
{
    put_open_ident(b, t, id);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
    fl_put_key(b, "device_id");
    fl_buf_u64(b, device_id);
    fl_put_key(b, "name");
    fl_buf_str(b, name);
    fl_put_key(b, "uuid");
    fl_buf_str(b, uuid);
}

void fl_rec_device_lost_event(fl_buf *b, const fl_ident *id, const fl_device_lost *d)
{
    put_device_event(b, FL_T_DEVICE_LOST_EVENT, id, d->ts_ns, d->device_id, d->name, d->uuid);
    fl_put_key(b, "status");
    fl_put_str_or_empty(b, d->status);
    fl_put_key(b, "message");
    fl_put_str_or_empty(b, d->message);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_device_error_event(fl_buf *b, const fl_ident *id, const fl_device_error *d)
{
    put_device_event(b, FL_T_DEVICE_ERROR_EVENT, id, d->ts_ns, d->device_id, d->name, d->uuid);
    FL_BUF_LIT(b, ",\"kind\":\"xid\"");
    fl_put_key(b, "xid");
    fl_buf_u64(b, d->xid);
    fl_put_key(b, "count");
    fl_buf_u64(b, d->count);
    fl_put_key(b, "total");
    fl_buf_u64(b, d->total);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_dictionary(fl_buf *b, const char *session_id, fl_dict dict,
                       const fl_dict_entry *entries, size_t n)
{
    fl_put_head(b, FL_T_DICTIONARY_UPDATE, session_id);
    FL_BUF_LIT(b, ",");
    fl_buf_str(b, fl_dict_name(dict));
    FL_BUF_LIT(b, ":{");
    for (size_t i = 0; entries && i < n; i++) {
        /* Ids are decimal strings: JSON object keys. */
        if (i)
            FL_BUF_LIT(b, ",");
        FL_BUF_LIT(b, "\"");
        fl_buf_u64(b, entries[i].id);
        FL_BUF_LIT(b, "\":");
        fl_buf_str(b, entries[i].name);
    }
    FL_BUF_LIT(b, "}}\n");
}

void fl_rec_capabilities(fl_buf *b, const char *session_id, uint64_t ts_ns,
                         const char *requested_engine, const char *selected_engine,
                         const fl_capability *caps, size_t n)
{
    fl_put_head(b, FL_T_CAPTURE_CAPABILITIES, session_id);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
    fl_put_key(b, "requested_engine");
    fl_buf_str(b, requested_engine);
    fl_put_key(b, "selected_engine");
    fl_buf_str(b, selected_engine);
    fl_put_key(b, "capabilities");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; caps && i < n; i++) {
        const fl_capability *c = &caps[i];
        if (i)
            FL_BUF_LIT(b, ",");
        FL_BUF_LIT(b, "{\"feature\":");
        fl_buf_str(b, c->feature);
        fl_put_key(b, "requested");
        fl_put_bool(b, c->requested);
        fl_put_key(b, "status");
        fl_buf_str(b, fl_cap_status_name(c->status));
        /* Readers of the seed's format expect strings here, "" for none. */
        fl_put_key(b, "mode");
        fl_put_str_or_empty(b, c->mode);
        fl_put_key(b, "reason_code");
        fl_put_str_or_empty(b, c->reason_code);
        fl_put_key(b, "message");
        fl_put_str_or_empty(b, c->message);
        FL_BUF_LIT(b, "}");
    }
    FL_BUF_LIT(b, "]}\n");
}

/* ------------------------------------------------------- trace records */

/* {"version":1,"type":T,"session_id":S,"pid":P,"app":A - the opening of
 * kernel_detail (the example session's order). */
static void put_head_ident(fl_buf *b, fl_type type, const fl_ident *id)
{
    fl_put_head(b, type, id->session_id);
    fl_put_key(b, "pid");
    fl_buf_i64(b, id->pid);
    fl_put_key(b, "app");
    fl_buf_str(b, id->app);
}

/* GPUFlight's MemsetEventModel's keys in its order, then ours.  What our
 * plugin does not know of a memset (the API call's times, the scopes and
 * CPU stack of the calling thread) is null, never 0 or ""; device_id and
 * stream_id are numbers (GPUFlight writes strings: its analyzer and ours
 * take either). */
void fl_rec_memset_event(fl_buf *b, const fl_ident *id, const fl_memset_row *r)
{
    put_open_ident(b, FL_T_MEMSET_EVENT, id);
    fl_put_key(b, "name");
    FL_BUF_LIT(b, "\"memset\"");
    fl_put_key(b, "platform");
    FL_BUF_LIT(b, "\"cuda\"");
    fl_put_key(b, "device_id");
    fl_buf_u64(b, r->device_id);
    fl_put_key(b, "stream_id");
    fl_buf_u64(b, r->stream_id);
    static const char *const unknown[] = {"stack_trace", "user_scope", "scope_depth"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        fl_put_key(b, unknown[i]);
        FL_BUF_LIT(b, "null");
    }
    fl_put_key(b, "start_ns");
    fl_buf_u64(b, r->t_ns);
    fl_put_key(b, "end_ns");
    fl_buf_u64(b, r->duration_ns > UINT64_MAX - r->t_ns ? UINT64_MAX : r->t_ns + r->duration_ns);
    fl_put_key(b, "api_start_ns");
    FL_BUF_LIT(b, "null");
    fl_put_key(b, "api_exit_ns");
    FL_BUF_LIT(b, "null");
    fl_put_key(b, "corr_id");
    fl_buf_u64(b, r->corr_id);
    fl_put_key(b, "bytes");
    fl_buf_u64(b, r->bytes);
    /* ours */
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, r->t_ns);
    fl_put_key(b, "duration_ns");
    fl_buf_u64(b, r->duration_ns);
    fl_put_key(b, "context_id");
    fl_buf_u64(b, r->context_id);
    fl_put_key(b, "value");
    fl_buf_u64(b, r->value);
    fl_put_key(b, "memory_kind");
    fl_buf_u64(b, r->memory_kind);
    FL_BUF_LIT(b, "}\n");
}

/* ,"start_ns":S,"end_ns":E,"duration_ns":D - a range's times, its
 * duration 0 where the end is not after the start. */
static void put_span(fl_buf *b, uint64_t start_ns, uint64_t end_ns)
{
    fl_put_key(b, "start_ns");
    fl_buf_u64(b, start_ns);
    fl_put_key(b, "end_ns");
    fl_buf_u64(b, end_ns);
    fl_put_key(b, "duration_ns");
    fl_buf_u64(b, end_ns > start_ns ? end_ns - start_ns : 0);
}

void fl_rec_nvtx_marker(fl_buf *b, const fl_ident *id, const fl_nvtx_range *r)
{
    put_open_ident(b, FL_T_NVTX_MARKER_EVENT, id);
    fl_put_key(b, "name");
    fl_put_str_or_empty(b, r->name);
    /* GPUFlight's string for the default domain: "". */
    fl_put_key(b, "domain");
    fl_put_str_or_empty(b, r->domain);
    put_span(b, r->start_ns, r->end_ns);
    fl_put_key(b, "marker_id");
    fl_buf_u64(b, r->marker_id);
    if (r->open_at_shutdown) {
        /* Ours: end_ns is when the session ended, not the range. */
        fl_put_key(b, "open_at_shutdown");
        fl_put_bool(b, true);
    }
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_capture_window(fl_buf *b, const fl_ident *id, const fl_capture_window_rec *w)
{
    put_open_ident(b, FL_T_CAPTURE_WINDOW, id);
    fl_put_key(b, "index");
    fl_buf_u64(b, w->index);
    fl_put_key(b, "trigger");
    fl_put_str_or_empty(b, w->trigger);
    fl_put_key(b, "name");
    fl_put_str_or_empty(b, w->name);
    put_span(b, w->start_ns, w->end_ns);
    fl_put_key(b, "open_at_shutdown");
    fl_put_bool(b, w->open_at_shutdown);
    FL_BUF_LIT(b, "}\n");
}

/* ,"graph_exec_key":"0x..." - the executable graph's handle in hex, as
 * GPUFlight writes it. */
static void put_exec_key(fl_buf *b, uint64_t exec_key)
{
    char key[2 + 16 + 1];
    snprintf(key, sizeof key, "0x%" PRIx64, exec_key);
    fl_put_key(b, "graph_exec_key");
    fl_put_str_or_empty(b, key);
}

void fl_rec_graph_launch(fl_buf *b, const fl_ident *id, const fl_graph_row *r)
{
    put_open_ident(b, FL_T_GRAPH_LAUNCH_EVENT, id);
    fl_put_key(b, "start_ns");
    fl_buf_u64(b, r->t_ns);
    fl_put_key(b, "end_ns");
    fl_buf_u64(b, r->t_ns + r->duration_ns);
    fl_put_key(b, "duration_ns");
    fl_buf_u64(b, r->duration_ns);
    fl_put_key(b, "graph_id");
    fl_buf_u64(b, r->graph_id);
    fl_put_key(b, "device_id");
    fl_buf_u64(b, r->device_id);
    fl_put_key(b, "stream_id");
    fl_buf_u64(b, r->stream_id);
    fl_put_key(b, "corr_id");
    fl_buf_u64(b, r->corr_id);
    /* GPUFlight's handle of the executable graph, from the launch
     * callback, as it writes it; left out when not known, as GPUFlight
     * leaves it out when it has none. */
    if (r->exec_key)
        put_exec_key(b, r->exec_key);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_graph_node(fl_buf *b, const char *session_id, const fl_graph_node_row *r)
{
    fl_put_head(b, FL_T_GRAPH_NODE_DEFINITION, session_id);
    put_exec_key(b, r->exec_key);
    fl_put_key(b, "node_index");
    fl_buf_u64(b, r->node_index);
    fl_put_key(b, "node_type");
    fl_buf_u64(b, r->node_type);
    fl_put_key(b, "dependency_count");
    fl_buf_u64(b, r->dependency_count);
    /* Ours, after GPUFlight's keys: what joins a replayed kernel's
     * graphId / graphNodeId to the node, and where the node was made. */
    fl_put_key(b, "graph_id");
    fl_buf_u64(b, r->graph_id);
    fl_put_key(b, "graph_node_id");
    fl_buf_u64(b, r->node_id);
    fl_put_key(b, "kernel_name");
    fl_buf_str(b, r->kernel_name);
    fl_put_key(b, "stack_id");
    fl_buf_opt_u64(b, r->stack_id != 0, r->stack_id);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_cubin_disassembly(fl_buf *b, const char *session_id, uint64_t cubin_crc,
                              const char *function_name, uint32_t function_id,
                              const fl_sass_entry *entries, size_t n)
{
    fl_put_head(b, FL_T_CUBIN_DISASSEMBLY, session_id);
    fl_put_key(b, "cubin_crc");
    fl_buf_u64(b, cubin_crc);
    fl_put_key(b, "function_name");
    fl_put_str_or_empty(b, function_name);
    fl_put_key(b, "function_id");
    fl_buf_u64(b, function_id);
    fl_put_key(b, "entries");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        FL_BUF_LIT(b, "{\"pc\":");
        fl_buf_u64(b, entries[i].pc_offset);
        FL_BUF_LIT(b, ",\"sass\":");
        fl_put_str_or_empty(b, entries[i].sass);
        FL_BUF_LIT(b, "}");
    }
    FL_BUF_LIT(b, "]}\n");
}

/* ------------------------------------------------- range profiler records */

static void emit_fl_buf(void *ctx, const char *p, size_t n)
{
    fl_buf_put(ctx, p, n);
}

/* GPUFlight's "%.4f", and -1.0000 where not collected. */
static void put_fixed4(fl_buf *b, const char *key, double v)
{
    fl_put_key(b, key);
    gp_format_fixed(isfinite(v) ? v : -1.0, 4, 0, emit_fl_buf, b);
}

/* A count (bytes, conflicts): an integer, -1 where not collected. */
static void put_count(fl_buf *b, const char *key, double v)
{
    fl_put_key(b, key);
    if (isfinite(v) && v >= 0)
        fl_buf_i64(b, (int64_t)llround(v));
    else
        FL_BUF_LIT(b, "-1");
}

static void put_common_perf(fl_buf *b, const fl_perf_row *r)
{
    put_fixed4(b, "sm_throughput_pct", r->known[FL_PV_SM_THROUGHPUT]);
    put_fixed4(b, "l1_hit_rate_pct", r->known[FL_PV_L1_HIT]);
    put_fixed4(b, "l2_hit_rate_pct", r->known[FL_PV_L2_HIT]);
    /* GPUFlight truncates the byte counts. */
    put_count(b, "dram_read_bytes", floor(r->known[FL_PV_DRAM_READ]));
    put_count(b, "dram_write_bytes", floor(r->known[FL_PV_DRAM_WRITE]));
    put_fixed4(b, "tensor_active_pct", r->known[FL_PV_TENSOR]);
}

static void put_metrics_obj(fl_buf *b, const fl_perf_row *r)
{
    if (r->n_metrics == 0)
        return;
    FL_BUF_LIT(b, ",\"metrics\":{");
    for (size_t i = 0; i < r->n_metrics; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        fl_put_str_or_empty(b, r->metric_names[i]);
        FL_BUF_LIT(b, ":");
        fl_buf_double(b, r->metric_values[i]);
    }
    FL_BUF_LIT(b, "}");
}

void fl_rec_perf_metric(fl_buf *b, const fl_ident *id, const fl_perf_row *r)
{
    put_open_ident(b, FL_T_PERF_METRIC_EVENT, id);
    fl_put_key(b, "name");
    fl_put_str_or_empty(b, r->name);
    fl_put_key(b, "start_ns");
    fl_buf_u64(b, r->start_ns);
    fl_put_key(b, "end_ns");
    fl_buf_u64(b, r->end_ns);
    fl_put_key(b, "device_id");
    fl_buf_u64(b, r->device_id);
    put_common_perf(b, r);
    fl_put_key(b, "user_scope");
    fl_put_str_or_empty(b, r->user_scope);
    fl_put_key(b, "scope_depth");
    fl_buf_u64(b, r->scope_depth);
    put_metrics_obj(b, r);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_kernel_perf_metric(fl_buf *b, const fl_ident *id, const fl_perf_row *r)
{
    put_open_ident(b, FL_T_KERNEL_PERF_METRIC_EVENT, id);
    fl_put_key(b, "device_id");
    fl_buf_u64(b, r->device_id);
    fl_put_key(b, "range_index");
    fl_buf_u64(b, r->range_index);
    fl_put_key(b, "range_name");
    fl_put_str_or_empty(b, r->name);
    fl_put_key(b, "kernel_name");
    fl_put_str_or_empty(b, r->kernel_name ? r->kernel_name : r->name);
    fl_put_key(b, "launch_ordinal");
    fl_buf_u64(b, r->launch_ordinal);
    put_common_perf(b, r);
    put_fixed4(b, "achieved_occupancy_pct", r->known[FL_PV_OCCUPANCY]);
    double ld = r->known[FL_PV_SHARED_LD_CONFLICTS], st = r->known[FL_PV_SHARED_ST_CONFLICTS];
    double all = r->known[FL_PV_SHARED_CONFLICTS], wf = r->known[FL_PV_SHARED_WAVEFRONTS];
    /* GPUFlight's rules: all = load + store when not measured; overhead =
     * conflicts / wavefronts; n-way = wavefronts / (wavefronts - conflicts). */
    if (!isfinite(all) && isfinite(ld) && isfinite(st))
        all = ld + st;
    double over = NAN, nway = NAN;
    if (isfinite(all) && isfinite(wf) && wf > 0) {
        over = 100.0 * all / wf;
        if (wf - all > 0)
            nway = wf / (wf - all);
    }
    put_count(b, "shared_load_bank_conflicts", ld);
    put_count(b, "shared_store_bank_conflicts", st);
    put_count(b, "shared_bank_conflicts", all);
    put_count(b, "shared_wavefronts", wf);
    put_fixed4(b, "shared_bank_conflict_overhead_pct", over);
    put_fixed4(b, "shared_bank_conflict_nway", nway);
    put_metrics_obj(b, r);
    FL_BUF_LIT(b, "}\n");
}

/* "(x,y,z)" - digits and punctuation only, so no escaping is needed. */
static void put_dim3(fl_buf *b, const uint32_t v[3])
{
    char *d = fl_buf_reserve(b, 3 * 11 + 4);
    if (!d)
        return;
    *d++ = '"';
    *d++ = '(';
    d = fl_put_u64(d, v[0]);
    d = fl_put_col(d, v[1]);
    d = fl_put_col(d, v[2]);
    *d++ = ')';
    *d++ = '"';
    fl_buf_commit(b, d);
}

void fl_rec_kernel_detail_head(fl_buf *b, const fl_ident *id)
{
    put_head_ident(b, FL_T_KERNEL_DETAIL, id);
    fl_put_key(b, "corr_id");
}

void fl_rec_kernel_detail_tail(fl_buf *b, const fl_kernel_row *k, const fl_occupancy *occ,
                               const char *user_scope, const char *stack_trace)
{
    bool o = occ != NULL;
    fl_put_key(b, "grid");
    put_dim3(b, k->grid);
    fl_put_key(b, "block");
    put_dim3(b, k->block);
    fl_put_key(b, "static_shared");
    fl_buf_u64(b, k->static_smem_bytes);
    fl_put_key(b, "local_bytes");
    fl_buf_u64(b, k->local_mem_per_thread_bytes);
    /* CUPTI's kernel record has no constant-memory size: null, not a
     * guess (GPUFlight's analyzer shows a null as 0 B). */
    fl_put_key(b, "const_bytes");
    FL_BUF_LIT(b, "null");
    fl_put_key(b, "occupancy");
    fl_buf_opt_double(b, o, o ? occ->occupancy : 0);
    fl_put_key(b, "reg_occupancy");
    fl_buf_opt_double(b, o, o ? occ->reg_occupancy : 0);
    fl_put_key(b, "smem_occupancy");
    fl_buf_opt_double(b, o, o ? occ->smem_occupancy : 0);
    fl_put_key(b, "warp_occupancy");
    fl_buf_opt_double(b, o, o ? occ->warp_occupancy : 0);
    fl_put_key(b, "block_occupancy");
    fl_buf_opt_double(b, o, o ? occ->block_occupancy : 0);
    fl_put_key(b, "limiting_resource");
    fl_buf_str(b, o ? fl_limiter_name(occ->limiting) : NULL);
    fl_put_key(b, "max_active_blocks");
    fl_buf_opt_i64(b, o, o ? occ->max_active_blocks : 0);
    fl_put_key(b, "local_mem_total_bytes");
    fl_buf_u64(b, k->local_mem_total_bytes);
    fl_put_key(b, "local_mem_per_thread_bytes");
    fl_buf_u64(b, k->local_mem_per_thread_bytes);
    fl_put_key(b, "cache_config_requested");
    fl_buf_u64(b, k->cache_requested);
    fl_put_key(b, "cache_config_executed");
    fl_buf_u64(b, k->cache_executed);
    fl_put_key(b, "shared_mem_executed_bytes");
    fl_buf_u64(b, k->smem_executed_bytes);
    fl_put_key(b, "user_scope");
    fl_buf_str(b, user_scope);
    /* Always a string, "" when no stack was collected: GPUFlight's
     * analyzer groups hotspots by name and stack_trace, and pandas drops
     * the rows whose key is null. */
    fl_put_key(b, "stack_trace");
    fl_put_str_or_empty(b, stack_trace);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_kernel_detail(fl_buf *b, const fl_ident *id, const fl_kernel_row *k,
                          const fl_occupancy *occ, const char *user_scope, const char *stack_trace)
{
    fl_rec_kernel_detail_head(b, id);
    fl_buf_u64(b, k->corr_id);
    fl_rec_kernel_detail_tail(b, k, occ, user_scope, stack_trace);
}

const char *fl_limiter_name(fl_limiter l)
{
    switch (l) {
    case FL_LIMIT_WARPS:
        return "warps";
    case FL_LIMIT_REGISTERS:
        return "registers";
    case FL_LIMIT_SHARED_MEM:
        return "shared_mem";
    case FL_LIMIT_BLOCKS:
        return "blocks";
    }
    return NULL;
}

void fl_rec_pm_config(fl_buf *b, const char *session_id, const fl_pm_config *c)
{
    fl_put_head(b, FL_T_PM_SAMPLING_CONFIG, session_id);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, c->t_ns);
    fl_put_key(b, "device_id");
    fl_buf_u64(b, c->device_id);
    fl_put_key(b, "interval_us");
    fl_buf_u64(b, c->interval_us);
    fl_put_key(b, "max_samples");
    fl_buf_u64(b, c->max_samples);
    fl_put_key(b, "preset");
    fl_put_str_or_empty(b, c->preset);
    fl_put_key(b, "metrics");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < c->n_metrics; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        fl_buf_str(b, c->metrics[i]);
    }
    FL_BUF_LIT(b, "]}\n");
}

static void put_names(fl_buf *b, const char *key, const char *const *v, size_t n)
{
    fl_put_key(b, key);
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        fl_put_str_or_empty(b, v[i]);
    }
    FL_BUF_LIT(b, "]");
}

void fl_rec_sass_config(fl_buf *b, const char *session_id, uint64_t ts_ns, uint32_t device_id,
                        const char *const *configured, size_t n_configured,
                        const char *const *skipped, size_t n_skipped)
{
    fl_put_head(b, FL_T_SASS_CONFIG, session_id);
    fl_put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
    fl_put_key(b, "device_id");
    fl_buf_u64(b, device_id);
    put_names(b, "configured_metrics", configured, n_configured);
    put_names(b, "skipped_metrics", skipped, n_skipped);
    FL_BUF_LIT(b, "}\n");
}
