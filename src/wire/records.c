/*
 * wire/records.c - the records of the GPUFlight wire format v1, one line each.
 *
 * Promises (docs: shared spec session-log-format.md and its example session):
 *  - every fl_rec_* appends exactly one JSON object and its '\n'; a batch
 *    with no rows appends nothing;
 *  - keys and batch columns come in the spec's order, without whitespace;
 *  - strings go through gp_json_quote (ill-formed UTF-8 becomes \ufffd), a
 *    NULL string is null, doubles use gp_format_fixed(v, 6, 1);
 *  - a metric whose validity bit is clear is null, never 0;
 *  - the functions are pure: no clock, no globals, no I/O.
 *
 * The batch row loops run on the writer thread for every sample, so they
 * reserve room for a whole row once and format integers by hand instead
 * of going through printf.
 */
#include "records.h"
#include "../abi/trace.h"
#include "../util/buf.h"
#include "gpu_profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB 1048576ull
/* The longest row any batch writes: 12 columns of at most 20 digits and a
 * sign, their commas and the brackets - with room to spare. */
#define ROW_MAX 512

/* ---------------------------------------------------------------- values */

static void put_bool(fl_buf *b, bool v)
{
    if (v)
        FL_BUF_LIT(b, "true");
    else
        FL_BUF_LIT(b, "false");
}

/* The empty string, not null, where the format wants a string always. */
static void put_str_or_empty(fl_buf *b, const char *s)
{
    fl_buf_str(b, s ? s : "");
}

/* ,"key": - keys are program constants, so they need no escaping. */
static void put_key(fl_buf *b, const char *key)
{
    size_t n = strlen(key);
    char *d = fl_buf_reserve(b, n + 4);
    if (!d)
        return;
    *d++ = ',';
    *d++ = '"';
    d = fl_put_lit(d, key, n);
    *d++ = '"';
    *d++ = ':';
    fl_buf_commit(b, d);
}

/* {"version":V,"type":"T","session_id":S - the opening most records share. */
static void put_head(fl_buf *b, int version, const char *type, const char *session_id)
{
    FL_BUF_LIT(b, "{\"version\":");
    fl_buf_i64(b, version);
    put_key(b, "type");
    fl_buf_str(b, type);
    put_key(b, "session_id");
    fl_buf_str(b, session_id);
}

/* ------------------------------------------------------------ sub-objects */

static void put_host(fl_buf *b, const fl_host_sample *h)
{
    static const fl_host_sample none = {0};
    if (!h)
        h = &none;
    FL_BUF_LIT(b, "{\"cpu_pct\":");
    fl_buf_opt_double(b, (h->valid & FL_HOST_CPU) != 0, h->cpu_pct);
    put_key(b, "ram_used_mib");
    fl_buf_opt_u64(b, (h->valid & FL_HOST_RAM) != 0, h->ram_used_mib);
    put_key(b, "ram_total_mib");
    fl_buf_opt_u64(b, (h->valid & FL_HOST_RAM) != 0, h->ram_total_mib);
    FL_BUF_LIT(b, "}");
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

    FL_BUF_LIT(b, "{\"id\":");
    fl_buf_u64(b, dv->id);
    put_key(b, "name");
    fl_buf_str(b, dv->name);
    put_key(b, "uuid");
    fl_buf_str(b, dv->uuid);
    put_key(b, "vendor");
    fl_buf_str(b, dv->vendor);
    put_key(b, "pci_bus");
    fl_buf_str(b, dv->pci_bus);
    put_key(b, "used_mib");
    fl_buf_opt_u64(b, used, s->mem_used_bytes / MIB);
    put_key(b, "free_mib");
    fl_buf_opt_u64(b, used && total, free_b / MIB);
    put_key(b, "total_mib");
    fl_buf_opt_u64(b, total, s->mem_total_bytes / MIB);
    put_key(b, "util_gpu_pct");
    fl_buf_opt_u64(b, (v & GP_M_UTIL_GPU) != 0, s->util_gpu_pct);
    put_key(b, "util_mem_pct");
    fl_buf_opt_u64(b, (v & GP_M_UTIL_MEM) != 0, s->util_mem_pct);
    put_key(b, "temp_c");
    fl_buf_opt_i64(b, (v & GP_M_TEMP) != 0, s->temp_c);
    put_key(b, "power_mw");
    fl_buf_opt_u64(b, (v & GP_M_POWER) != 0, s->power_mw);
    /* The sampler reads the SM and memory clocks, not the graphics clock. */
    put_key(b, "clk_gfx_mhz");
    FL_BUF_LIT(b, "null");
    put_key(b, "clk_sm_mhz");
    fl_buf_opt_u64(b, (v & GP_M_CLOCK_SM) != 0, s->clock_sm_mhz);
    put_key(b, "clk_mem_mhz");
    fl_buf_opt_u64(b, (v & GP_M_CLOCK_MEM) != 0, s->clock_mem_mhz);
    put_key(b, "throttle_pwr");
    fl_buf_opt_u64(b, thr, (s->throttle_reasons & pwr) ? 1 : 0);
    put_key(b, "throttle_therm");
    fl_buf_opt_u64(b, thr, (s->throttle_reasons & therm) ? 1 : 0);
    put_key(b, "pcie_rx_bw_bps");
    fl_buf_opt_u64(b, (v & GP_M_PCIE_RX) != 0, (uint64_t)s->pcie_rx_kbps * 1024);
    put_key(b, "pcie_tx_bw_bps");
    fl_buf_opt_u64(b, (v & GP_M_PCIE_TX) != 0, (uint64_t)s->pcie_tx_kbps * 1024);
    FL_BUF_LIT(b, "}");
}

static void put_device_static(fl_buf *b, const fl_device_static *d)
{
    FL_BUF_LIT(b, "{\"id\":");
    fl_buf_u64(b, d->id);
    put_key(b, "name");
    fl_buf_str(b, d->name);
    put_key(b, "uuid");
    fl_buf_str(b, d->uuid);
    put_key(b, "vendor");
    fl_buf_str(b, d->vendor);
    put_key(b, "architecture");
    fl_buf_str(b, d->architecture);
    put_key(b, "compute_major");
    fl_buf_opt_i64(b, d->compute_major >= 0, d->compute_major);
    put_key(b, "compute_minor");
    fl_buf_opt_i64(b, d->compute_minor >= 0, d->compute_minor);
    put_key(b, "l2_cache_size_bytes");
    fl_buf_opt_i64(b, d->l2_cache_size_bytes >= 0, d->l2_cache_size_bytes);
    put_key(b, "shared_mem_per_block_bytes");
    fl_buf_opt_i64(b, d->shared_mem_per_block_bytes >= 0, d->shared_mem_per_block_bytes);
    put_key(b, "regs_per_block");
    fl_buf_opt_i64(b, d->regs_per_block >= 0, d->regs_per_block);
    put_key(b, "multi_processor_count");
    fl_buf_opt_i64(b, d->multi_processor_count >= 0, d->multi_processor_count);
    put_key(b, "warp_size");
    fl_buf_opt_i64(b, d->warp_size >= 0, d->warp_size);
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

/* "pid":P,"app":A,"session_id":S without a leading comma. */
static void put_ident(fl_buf *b, const fl_ident *id)
{
    FL_BUF_LIT(b, "\"pid\":");
    fl_buf_i64(b, id->pid);
    put_key(b, "app");
    fl_buf_str(b, id->app);
    put_key(b, "session_id");
    fl_buf_str(b, id->session_id);
}

/* ------------------------------------------------------------- lifecycle */

void fl_rec_job_start(fl_buf *b, const fl_ident *id, const fl_job_start *js)
{
    FL_BUF_LIT(b, "{\"version\":1,\"type\":\"job_start\",");
    put_ident(b, id);
    put_key(b, "log_path");
    fl_buf_str(b, js->log_path);
    put_key(b, "ts_ns");
    fl_buf_u64(b, js->ts_ns);
    put_key(b, "hostname");
    fl_buf_str(b, js->hostname);
    put_key(b, "ip_addr");
    fl_buf_str(b, js->ip_addr);
    put_key(b, "host");
    put_host(b, &js->host);
    put_key(b, "devices");
    put_live_list(b, js->devices, js->n_devices);
    put_key(b, "gpu_static_devices");
    put_static_list(b, js->gpu_static, js->n_gpu_static);
    put_key(b, "cuda_static_devices");
    put_static_list(b, js->cuda_static, js->n_cuda_static);
    /* This build has no ROCm backend; readers still expect the key. */
    put_key(b, "rocm_static_devices");
    FL_BUF_LIT(b, "[]");
    put_key(b, "session_kind");
    fl_buf_str(b, js->session_kind);
    if (js->profiling_engine) {
        put_key(b, "profiling_engine");
        fl_buf_str(b, js->profiling_engine);
    }
    FL_BUF_LIT(b, "}\n");
}

static void put_shutdown_head(fl_buf *b, const fl_ident *id, uint64_t ts_ns)
{
    /* The one lifecycle record without "version" (as the seed writes it). */
    FL_BUF_LIT(b, "{\"type\":\"shutdown\",");
    put_ident(b, id);
    put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
}

void fl_rec_shutdown(fl_buf *b, const fl_ident *id, uint64_t ts_ns)
{
    put_shutdown_head(b, id, ts_ns);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_shutdown_child(fl_buf *b, const fl_ident *id, uint64_t ts_ns, int exit_code, int signal,
                           bool crashed)
{
    put_shutdown_head(b, id, ts_ns);
    /* Exit statuses are 0..255, so any negative one means "none". */
    put_key(b, "exit_code");
    fl_buf_opt_i64(b, exit_code >= 0, exit_code);
    put_key(b, "signal");
    fl_buf_opt_i64(b, signal != 0, signal);
    put_key(b, "crashed");
    put_bool(b, crashed);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_system(fl_buf *b, const fl_ident *id, const char *type, const char *name,
                   uint64_t ts_ns, const fl_host_sample *host, const fl_device_live *devices,
                   size_t n_devices)
{
    FL_BUF_LIT(b, "{\"version\":1");
    put_key(b, "type");
    fl_buf_str(b, type);
    FL_BUF_LIT(b, ",");
    put_ident(b, id);
    put_key(b, "name");
    fl_buf_str(b, name);
    put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
    put_key(b, "host");
    put_host(b, host);
    put_key(b, "devices");
    put_live_list(b, devices, n_devices);
    FL_BUF_LIT(b, "}\n");
}

void fl_rec_dictionary(fl_buf *b, const char *session_id, const char *dict,
                       const fl_dict_entry *entries, size_t n)
{
    put_head(b, 1, "dictionary_update", session_id);
    FL_BUF_LIT(b, ",");
    fl_buf_str(b, dict);
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
    put_head(b, 1, "capture_capabilities", session_id);
    put_key(b, "ts_ns");
    fl_buf_u64(b, ts_ns);
    put_key(b, "requested_engine");
    fl_buf_str(b, requested_engine);
    put_key(b, "selected_engine");
    fl_buf_str(b, selected_engine);
    put_key(b, "capabilities");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; caps && i < n; i++) {
        const fl_capability *c = &caps[i];
        if (i)
            FL_BUF_LIT(b, ",");
        FL_BUF_LIT(b, "{\"feature\":");
        fl_buf_str(b, c->feature);
        put_key(b, "requested");
        put_bool(b, c->requested);
        put_key(b, "status");
        fl_buf_str(b, c->status);
        /* Readers of the seed's format expect strings here, "" for none. */
        put_key(b, "mode");
        put_str_or_empty(b, c->mode);
        put_key(b, "reason_code");
        put_str_or_empty(b, c->reason_code);
        put_key(b, "message");
        put_str_or_empty(b, c->message);
        FL_BUF_LIT(b, "}");
    }
    FL_BUF_LIT(b, "]}\n");
}

/* --------------------------------------------------------------- batches */

/* A row's offset from the batch base; a row older than the base (out of
 * order) is pinned to 0 rather than wrapping to a huge unsigned number. */
static uint64_t dt_of(uint64_t t, uint64_t base)
{
    return t > base ? t - base : 0;
}

static void put_columns(fl_buf *b, const char *const *cols, size_t n)
{
    put_key(b, "columns");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        fl_buf_str(b, cols[i]);
    }
    FL_BUF_LIT(b, "]");
}

static void put_batch_ids(fl_buf *b, uint64_t batch_id, uint64_t base)
{
    put_key(b, "batch_id");
    fl_buf_u64(b, batch_id);
    put_key(b, "base_time_ns");
    fl_buf_u64(b, base);
}

/* The pcie_bw_bps column is the sum of both directions; with one of them
 * unknown the sum is unknown too. */
#define PCIE_BOTH (GP_M_PCIE_TX | GP_M_PCIE_RX)

void fl_rec_device_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_device_row *rows, size_t n)
{
    if (!rows || n == 0)
        return;
    bool has_energy = false, has_clock_mem = false, has_pcie = false;
    for (size_t i = 0; i < n; i++) {
        const gp_device_sample *s = &rows[i].s;
        if ((s->valid & GP_M_ENERGY) && s->energy_mj)
            has_energy = true;
        if ((s->valid & GP_M_CLOCK_MEM) && s->clock_mem_mhz)
            has_clock_mem = true;
        if ((s->valid & PCIE_BOTH) == PCIE_BOTH && (s->pcie_tx_kbps || s->pcie_rx_kbps))
            has_pcie = true;
    }

    const char *cols[12] = {"dt_ns",    "device_id", "gpu_util",  "mem_util", "temp_c",
                            "power_mw", "used_mib",  "total_mib", "clock_sm"};
    size_t nc = 9;
    if (has_energy)
        cols[nc++] = "energy_uj";
    if (has_clock_mem)
        cols[nc++] = "clock_mem";
    if (has_pcie)
        cols[nc++] = "pcie_bw_bps";

    uint64_t base = rows[0].t_ns;
    put_head(b, 1, "device_metric_batch", session_id);
    put_batch_ids(b, batch_id, base);
    put_columns(b, cols, nc);
    put_key(b, "rows");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        const gp_device_sample *s = &rows[i].s;
        uint32_t v = s->valid;
        char *d = fl_buf_reserve(b, ROW_MAX);
        if (!d)
            return;
        if (i)
            *d++ = ',';
        *d++ = '[';
        d = fl_put_u64(d, dt_of(rows[i].t_ns, base));
        *d++ = ',';
        d = fl_put_u64(d, rows[i].device_id);
        *d++ = ',';
        d = fl_put_opt_u64(d, v & GP_M_UTIL_GPU, s->util_gpu_pct);
        *d++ = ',';
        d = fl_put_opt_u64(d, v & GP_M_UTIL_MEM, s->util_mem_pct);
        *d++ = ',';
        d = (v & GP_M_TEMP) ? fl_put_i64(d, s->temp_c) : fl_put_null(d);
        *d++ = ',';
        d = fl_put_opt_u64(d, v & GP_M_POWER, s->power_mw);
        *d++ = ',';
        d = fl_put_opt_u64(d, v & GP_M_MEM_USED, s->mem_used_bytes / MIB);
        *d++ = ',';
        d = fl_put_opt_u64(d, v & GP_M_MEM_TOTAL, s->mem_total_bytes / MIB);
        *d++ = ',';
        d = fl_put_opt_u64(d, v & GP_M_CLOCK_SM, s->clock_sm_mhz);
        if (has_energy) {
            *d++ = ',';
            d = fl_put_opt_u64(d, v & GP_M_ENERGY, s->energy_mj * 1000);
        }
        if (has_clock_mem) {
            *d++ = ',';
            d = fl_put_opt_u64(d, v & GP_M_CLOCK_MEM, s->clock_mem_mhz);
        }
        if (has_pcie) {
            *d++ = ',';
            d = fl_put_opt_u64(d, (v & PCIE_BOTH) == PCIE_BOTH,
                               ((uint64_t)s->pcie_tx_kbps + s->pcie_rx_kbps) * 1024);
        }
        *d++ = ']';
        fl_buf_commit(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

void fl_rec_host_batch(fl_buf *b, const char *session_id, const char *hostname, const char *ip_addr,
                       uint64_t batch_id, const fl_host_row *rows, size_t n)
{
    static const char *const cols[] = {"dt_ns", "cpu_pct_x100", "ram_used_mib", "ram_total_mib"};
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    put_head(b, 1, "host_metric_batch", session_id);
    put_key(b, "hostname");
    fl_buf_str(b, hostname);
    put_key(b, "ip_addr");
    fl_buf_str(b, ip_addr);
    put_batch_ids(b, batch_id, base);
    put_columns(b, cols, sizeof cols / sizeof cols[0]);
    put_key(b, "rows");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        const fl_host_sample *h = &rows[i].h;
        bool cpu = (h->valid & FL_HOST_CPU) && isfinite(h->cpu_pct);
        bool ram = (h->valid & FL_HOST_RAM) != 0;
        char *d = fl_buf_reserve(b, ROW_MAX);
        if (!d)
            return;
        if (i)
            *d++ = ',';
        *d++ = '[';
        d = fl_put_u64(d, dt_of(rows[i].t_ns, base));
        *d++ = ',';
        /* isfinite above keeps llround defined; the percentage is 0..100. */
        d = cpu ? fl_put_i64(d, (int64_t)llround(h->cpu_pct * 100.0)) : fl_put_null(d);
        *d++ = ',';
        d = fl_put_opt_u64(d, ram, h->ram_used_mib);
        *d++ = ',';
        d = fl_put_opt_u64(d, ram, h->ram_total_mib);
        *d++ = ']';
        fl_buf_commit(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

void fl_rec_scope_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_scope_row *rows, size_t n)
{
    static const char *const cols[] = {
        "dt_ns",  "scope_instance_id", "name_id", "event_type", "depth", "repeat",
        "warmup", "original_start_ns"};
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    put_head(b, 3, "scope_event_batch", session_id);
    put_batch_ids(b, batch_id, base);
    put_columns(b, cols, sizeof cols / sizeof cols[0]);
    put_key(b, "rows");
    FL_BUF_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        const fl_scope_row *r = &rows[i];
        char *d = fl_buf_reserve(b, ROW_MAX);
        if (!d)
            return;
        if (i)
            *d++ = ',';
        *d++ = '[';
        d = fl_put_u64(d, dt_of(r->t_ns, base));
        *d++ = ',';
        d = fl_put_u64(d, r->instance_id);
        *d++ = ',';
        d = fl_put_u64(d, r->name_id);
        *d++ = ',';
        d = fl_put_u64(d, r->event_type);
        *d++ = ',';
        d = fl_put_u64(d, r->depth);
        /* repeat and warmup: this recorder has no repeat/warm-up scopes. */
        d = fl_put_lit(d, ",0,0,", 5);
        d = fl_put_u64(d, r->original_start_ns);
        *d++ = ']';
        fl_buf_commit(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

/* ------------------------------------------------------- trace batches */

/* ,v - a column after the first.  Needs 21 bytes. */
static char *put_col(char *d, uint64_t v)
{
    *d++ = ',';
    return fl_put_u64(d, v);
}

/* The envelope of a version-1 batch up to and including "rows":[ */
static void put_batch_open(fl_buf *b, const char *type, const char *session_id, uint64_t batch_id,
                           uint64_t base, const char *const *cols, size_t nc)
{
    put_head(b, 1, type, session_id);
    put_batch_ids(b, batch_id, base);
    put_columns(b, cols, nc);
    put_key(b, "rows");
    FL_BUF_LIT(b, "[");
}

/* Room for one row at most ROW_MAX long, its leading comma written after
 * the first row and its '[' opened; NULL once oom. */
static char *row_open(fl_buf *b, size_t i)
{
    char *d = fl_buf_reserve(b, ROW_MAX);
    if (!d)
        return NULL;
    if (i)
        *d++ = ',';
    *d++ = '[';
    return d;
}

static void row_close(fl_buf *b, char *d)
{
    *d++ = ']';
    fl_buf_commit(b, d);
}

void fl_rec_kernel_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_kernel_row *rows, size_t n)
{
    /* device_id is our extension after the spec's ten columns (readers
     * look columns up by name): a process that drives several GPUs (JAX,
     * one process per host) needs it to split kernels per device. */
    static const char *const cols[] = {"dt_ns",         "kernel_id",   "stream_id", "duration_ns",
                                       "corr_id",       "dyn_shared",  "num_regs",  "has_details",
                                       "external_kind", "external_id", "device_id"};
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    put_batch_open(b, "kernel_event_batch", session_id, batch_id, base, cols,
                   sizeof cols / sizeof cols[0]);
    for (size_t i = 0; i < n; i++) {
        const fl_kernel_row *r = &rows[i];
        char *d = row_open(b, i);
        if (!d)
            return;
        d = fl_put_u64(d, dt_of(r->t_ns, base));
        d = put_col(d, r->kernel_id);
        d = put_col(d, r->stream_id);
        d = put_col(d, r->duration_ns);
        d = put_col(d, r->corr_id);
        d = put_col(d, r->dynamic_smem_bytes);
        d = put_col(d, r->num_regs);
        d = put_col(d, r->has_details);
        d = put_col(d, r->external_kind);
        d = put_col(d, r->external_id);
        d = put_col(d, r->device_id);
        row_close(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

void fl_rec_memcpy_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_memcpy_row *rows, size_t n)
{
    /* Our extensions after the spec's six columns (readers look columns up
     * by name, so the first six read as before): device_id always (the
     * device that ran the copy: several per process under JAX), and
     * src_device_id / dst_device_id only in a batch holding a
     * peer-to-peer copy. */
    static const char *const cols[] = {"dt_ns",     "stream_id",     "duration_ns",
                                       "bytes",     "copy_kind",     "corr_id",
                                       "device_id", "src_device_id", "dst_device_id"};
    if (!rows || n == 0)
        return;
    bool peer = false;
    for (size_t i = 0; i < n && !peer; i++)
        peer = rows[i].peer != 0;
    uint64_t base = rows[0].t_ns;
    put_batch_open(b, "memcpy_event_batch", session_id, batch_id, base, cols, peer ? 9 : 7);
    for (size_t i = 0; i < n; i++) {
        const fl_memcpy_row *r = &rows[i];
        char *d = row_open(b, i);
        if (!d)
            return;
        d = fl_put_u64(d, dt_of(r->t_ns, base));
        d = put_col(d, r->stream_id);
        d = put_col(d, r->duration_ns);
        d = put_col(d, r->bytes);
        d = put_col(d, r->copy_kind);
        d = put_col(d, r->corr_id);
        d = put_col(d, r->device_id);
        if (peer) {
            /* A row that is not peer-to-peer has both set to its device. */
            d = put_col(d, r->src_device_id);
            d = put_col(d, r->dst_device_id);
        }
        row_close(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

void fl_rec_sync_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                       const fl_sync_row *rows, size_t n)
{
    static const char *const cols[] = {"dt_ns",    "duration_ns", "sync_type", "stream_id",
                                       "event_id", "context_id",  "corr_id",   "function_id"};
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    put_batch_open(b, "synchronization_event_batch", session_id, batch_id, base, cols,
                   sizeof cols / sizeof cols[0]);
    for (size_t i = 0; i < n; i++) {
        const fl_sync_row *r = &rows[i];
        char *d = row_open(b, i);
        if (!d)
            return;
        d = fl_put_u64(d, dt_of(r->t_ns, base));
        d = put_col(d, r->duration_ns);
        d = put_col(d, r->sync_type);
        /* CUPTI's value as it is: 4294967295 (0xffffffff) for a sync that
         * is not on a stream (context or event synchronization). */
        d = put_col(d, r->stream_id);
        d = put_col(d, r->event_id);
        d = put_col(d, r->context_id);
        d = put_col(d, r->corr_id);
        /* function_id indexes function_dict, which nothing fills for
         * synchronizations yet (the API function that synchronized is not
         * recorded): 0, "none", as the spec defines it. */
        d = fl_put_lit(d, ",0", 2);
        row_close(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

void fl_rec_alloc_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_alloc_row *rows, size_t n)
{
    static const char *const cols[] = {"dt_ns",       "duration_ns", "memory_op",
                                       "memory_kind", "address",     "bytes",
                                       "device_id",   "stream_id",   "corr_id"};
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    put_batch_open(b, "memory_alloc_event_batch", session_id, batch_id, base, cols,
                   sizeof cols / sizeof cols[0]);
    for (size_t i = 0; i < n; i++) {
        const fl_alloc_row *r = &rows[i];
        char *d = row_open(b, i);
        if (!d)
            return;
        d = fl_put_u64(d, dt_of(r->t_ns, base));
        d = put_col(d, r->duration_ns);
        d = put_col(d, r->memory_op);
        d = put_col(d, r->memory_kind);
        d = put_col(d, r->address);
        d = put_col(d, r->bytes);
        d = put_col(d, r->device_id);
        d = put_col(d, r->stream_id);
        d = put_col(d, r->corr_id);
        row_close(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

/* graph_event_batch is our extension of the format (one row per graph
 * launch, channel device); readers that do not know the type skip it. */
void fl_rec_graph_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_graph_row *rows, size_t n)
{
    static const char *const cols[] = {"dt_ns",       "graph_id", "stream_id",
                                       "duration_ns", "corr_id",  "device_id"};
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    put_batch_open(b, "graph_event_batch", session_id, batch_id, base, cols,
                   sizeof cols / sizeof cols[0]);
    for (size_t i = 0; i < n; i++) {
        const fl_graph_row *r = &rows[i];
        char *d = row_open(b, i);
        if (!d)
            return;
        d = fl_put_u64(d, dt_of(r->t_ns, base));
        d = put_col(d, r->graph_id);
        d = put_col(d, r->stream_id);
        d = put_col(d, r->duration_ns);
        d = put_col(d, r->corr_id);
        d = put_col(d, r->device_id);
        row_close(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

/* ------------------------------------------------------- trace records */

/* {"version":1,"type":T,"session_id":S,"pid":P,"app":A - the opening of
 * kernel_detail (the example session's order) and memset_event. */
static void put_head_ident(fl_buf *b, const char *type, const fl_ident *id)
{
    put_head(b, 1, type, id->session_id);
    put_key(b, "pid");
    fl_buf_i64(b, id->pid);
    put_key(b, "app");
    fl_buf_str(b, id->app);
}

void fl_rec_memset_event(fl_buf *b, const fl_ident *id, const fl_memset_row *r)
{
    put_head_ident(b, "memset_event", id);
    put_key(b, "ts_ns");
    fl_buf_u64(b, r->t_ns);
    put_key(b, "duration_ns");
    fl_buf_u64(b, r->duration_ns);
    put_key(b, "device_id");
    fl_buf_u64(b, r->device_id);
    put_key(b, "stream_id");
    fl_buf_u64(b, r->stream_id);
    put_key(b, "context_id");
    fl_buf_u64(b, r->context_id);
    put_key(b, "corr_id");
    fl_buf_u64(b, r->corr_id);
    put_key(b, "bytes");
    fl_buf_u64(b, r->bytes);
    put_key(b, "value");
    fl_buf_u64(b, r->value);
    put_key(b, "memory_kind");
    fl_buf_u64(b, r->memory_kind);
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
    d = put_col(d, v[1]);
    d = put_col(d, v[2]);
    *d++ = ')';
    *d++ = '"';
    fl_buf_commit(b, d);
}

void fl_rec_kernel_detail(fl_buf *b, const fl_ident *id, const fl_kernel_row *k,
                          const fl_occupancy *occ, const char *user_scope, const char *stack_trace)
{
    bool o = occ != NULL;
    put_head_ident(b, "kernel_detail", id);
    put_key(b, "corr_id");
    fl_buf_u64(b, k->corr_id);
    put_key(b, "grid");
    put_dim3(b, k->grid);
    put_key(b, "block");
    put_dim3(b, k->block);
    put_key(b, "static_shared");
    fl_buf_u64(b, k->static_smem_bytes);
    put_key(b, "local_bytes");
    fl_buf_u64(b, k->local_mem_per_thread_bytes);
    /* CUPTI's kernel record has no constant-memory size. */
    put_key(b, "const_bytes");
    FL_BUF_LIT(b, "null");
    put_key(b, "occupancy");
    fl_buf_opt_double(b, o, o ? occ->occupancy : 0);
    put_key(b, "reg_occupancy");
    fl_buf_opt_double(b, o, o ? occ->reg_occupancy : 0);
    put_key(b, "smem_occupancy");
    fl_buf_opt_double(b, o, o ? occ->smem_occupancy : 0);
    put_key(b, "warp_occupancy");
    fl_buf_opt_double(b, o, o ? occ->warp_occupancy : 0);
    put_key(b, "block_occupancy");
    fl_buf_opt_double(b, o, o ? occ->block_occupancy : 0);
    put_key(b, "limiting_resource");
    fl_buf_str(b, o ? fl_limiter_name(occ->limiting) : NULL);
    put_key(b, "max_active_blocks");
    fl_buf_opt_i64(b, o, o ? occ->max_active_blocks : 0);
    put_key(b, "local_mem_total_bytes");
    fl_buf_u64(b, k->local_mem_total_bytes);
    put_key(b, "local_mem_per_thread_bytes");
    fl_buf_u64(b, k->local_mem_per_thread_bytes);
    put_key(b, "cache_config_requested");
    fl_buf_u64(b, k->cache_requested);
    put_key(b, "cache_config_executed");
    fl_buf_u64(b, k->cache_executed);
    put_key(b, "shared_mem_executed_bytes");
    fl_buf_u64(b, k->smem_executed_bytes);
    put_key(b, "user_scope");
    fl_buf_str(b, user_scope);
    put_key(b, "stack_trace");
    fl_buf_str(b, stack_trace);
    FL_BUF_LIT(b, "}\n");
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
