/*
 * wire/batches.c - the columnar batches of the GPUFlight wire format v1,
 * one line each (the other records: records.c).
 *
 * Promises: a batch with no rows appends nothing; its type, version and
 * columns come from the vocabulary (vocab.h), columns in its order, the
 * optional ones only when a row needs them; a metric whose validity bit is
 * clear is null, never 0; the functions are pure.  The scope and trace
 * batches' rows are written from vocab.h's column lists (WRITE_BATCH), so
 * a row's cells and the "columns" list cannot disagree.
 *
 * The row loops run on the writer thread for every sample, so they reserve
 * room for a whole row once and format integers by hand (util/buf.h)
 * instead of going through printf.
 */
#include "../util/buf.h"
#include "put.h"
#include "records.h"
#include "vocab.h"
#include "gpu_profile.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MIB 1048576ull
/* The longest row any batch writes: every device column (32 at most, the
 * column mask's width) of at most 20 digits and a sign, their commas and
 * the brackets - with room to spare. */
#define ROW_MAX 1024

/* The earliest t_ns of rows[0..n) (n > 0), for batches whose rows are
 * not in time order: every dt_ns must be >= 0. */
#define MIN_T_NS(rows, n)                                                                          \
    __extension__({                                                                                \
        uint64_t m_ = (rows)[0].t_ns;                                                              \
        for (size_t k_ = 1; k_ < (n); k_++)                                                        \
            if ((rows)[k_].t_ns < m_)                                                              \
                m_ = (rows)[k_].t_ns;                                                              \
        m_;                                                                                        \
    })

/* A row's offset from the batch base; a row older than the base (out of
 * order) is pinned to 0 rather than wrapping to a huge unsigned number. */
static uint64_t dt_of(uint64_t t, uint64_t base)
{
    return t > base ? t - base : 0;
}

/* "columns":[...] - the type's columns (vocab.h) whose bit is set in
 * mask, in the vocabulary's order. */
static void put_columns(fl_buf *b, fl_type t, uint32_t mask)
{
    const fl_type_info *ti = fl_type_get(t);
    fl_put_key(b, "columns");
    FL_BUF_LIT(b, "[");
    bool first = true;
    for (size_t i = 0; i < ti->ncols; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (!first)
            FL_BUF_LIT(b, ",");
        first = false;
        fl_buf_str(b, ti->cols[i]);
    }
    FL_BUF_LIT(b, "]");
}

/* Every column of a type. */
static uint32_t all_columns(fl_type t)
{
    return (uint32_t)((1ull << fl_type_get(t)->ncols) - 1);
}

static void put_batch_ids(fl_buf *b, uint64_t batch_id, uint64_t base)
{
    fl_put_key(b, "batch_id");
    fl_buf_u64(b, batch_id);
    fl_put_key(b, "base_time_ns");
    fl_buf_u64(b, base);
}

/* The pcie_bw_bps column is the sum of both directions; with one of them
 * unknown the sum is unknown too. */
#define PCIE_BOTH (GP_M_PCIE_TX | GP_M_PCIE_RX)
#define COL(c) (1u << FL_COL_DEVMETRIC_##c)
#define GPM_COL0 FL_COL_DEVMETRIC_SM_ACTIVE
_Static_assert(FL_COL_DEVMETRIC_NVLINK_RX == GPM_COL0 + GP_GPM_COUNT - 1 &&
                   FL_COL_DEVMETRIC_COUNT <= 32,
               "the GPM columns follow gp_gpm_metric and fit the 32-bit column mask");

/* A GPM value as its column writes it: percent x 100 or bytes/s, rounded. */
static uint64_t gpm_col_value(unsigned i, double v)
{
    double x = i < GP_GPM_PCIE_TX ? v * 100.0 : v;
    return x > 0 && x < 9e18 ? (uint64_t)llround(x) : 0; /* llround is defined there */
}

/* The columns a row has a value for: a metric the device reported (the
 * optional ones - energy, memory clock, PCIe - only when non-zero, the
 * spec's rule for them); dt_ns and device_id always. */
static uint32_t device_row_cols(const gp_device_sample *s)
{
    uint32_t v = s->valid, c = COL(DT_NS) | COL(DEVICE_ID);
    c |= (v & GP_M_UTIL_GPU) ? COL(GPU_UTIL) : 0;
    c |= (v & GP_M_UTIL_MEM) ? COL(MEM_UTIL) : 0;
    c |= (v & GP_M_TEMP) ? COL(TEMP_C) : 0;
    c |= (v & GP_M_POWER) ? COL(POWER_MW) : 0;
    c |= (v & GP_M_MEM_USED) ? COL(USED_MIB) : 0;
    c |= (v & GP_M_MEM_TOTAL) ? COL(TOTAL_MIB) : 0;
    c |= (v & GP_M_CLOCK_SM) ? COL(CLOCK_SM) : 0;
    c |= ((v & GP_M_ENERGY) && s->energy_mj) ? COL(ENERGY_UJ) : 0;
    c |= ((v & GP_M_CLOCK_MEM) && s->clock_mem_mhz) ? COL(CLOCK_MEM) : 0;
    /* The spec's health columns (NVML's health figures, docs/concepts.md). */
    uint32_t h = s->health_valid;
    c |= ((h & GP_H_FAN) && s->fan_speed_pct) ? COL(FAN_SPEED_PCT) : 0;
    c |= ((h & GP_H_MEM_TEMP) && s->mem_temp_c) ? COL(TEMP_MEM_C) : 0;
    c |= ((h & GP_H_ECC_VOL) && s->ecc_sbe_volatile) ? COL(ECC_CORRECTED) : 0;
    c |= ((h & GP_H_ECC_VOL) && s->ecc_dbe_volatile) ? COL(ECC_UNCORRECTED) : 0;
    c |= ((v & PCIE_BOTH) == PCIE_BOTH && (s->pcie_tx_kbps || s->pcie_rx_kbps)) ? COL(PCIE_BW_BPS)
                                                                                : 0;
    /* GPM extension columns: one per metric the device reported. */
    for (unsigned i = 0; i < GP_GPM_COUNT; i++)
        c |= (v & GP_M_GPM(i)) ? 1u << (GPM_COL0 + i) : 0;
    return c;
}

/* ,value or ,null for a column of the batch (nothing when it is not). */
static inline char *opt_col(char *d, uint32_t cols, uint32_t col, bool ok, uint64_t v)
{
    if (!(cols & col))
        return d;
    *d++ = ',';
    return fl_put_opt_u64(d, ok, v);
}

void fl_rec_device_batch_cols(fl_buf *b, const char *session_id, uint64_t batch_id,
                              const fl_device_row *rows, size_t n, uint32_t *seen)
{
    if (!rows || n == 0)
        return;
    uint32_t cols = seen ? *seen : 0;
    for (size_t i = 0; i < n; i++)
        cols |= device_row_cols(&rows[i].s);
    if (seen)
        *seen = cols;

    uint64_t base = rows[0].t_ns;
    fl_put_head(b, FL_T_DEVICE_METRIC_BATCH, session_id);
    put_batch_ids(b, batch_id, base);
    put_columns(b, FL_T_DEVICE_METRIC_BATCH, cols);
    fl_put_key(b, "rows");
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
        d = opt_col(d, cols, COL(GPU_UTIL), v & GP_M_UTIL_GPU, s->util_gpu_pct);
        d = opt_col(d, cols, COL(MEM_UTIL), v & GP_M_UTIL_MEM, s->util_mem_pct);
        if (cols & COL(TEMP_C)) {
            *d++ = ',';
            d = (v & GP_M_TEMP) ? fl_put_i64(d, s->temp_c) : fl_put_null(d);
        }
        d = opt_col(d, cols, COL(POWER_MW), v & GP_M_POWER, s->power_mw);
        d = opt_col(d, cols, COL(USED_MIB), v & GP_M_MEM_USED, s->mem_used_bytes / MIB);
        d = opt_col(d, cols, COL(TOTAL_MIB), v & GP_M_MEM_TOTAL, s->mem_total_bytes / MIB);
        d = opt_col(d, cols, COL(CLOCK_SM), v & GP_M_CLOCK_SM, s->clock_sm_mhz);
        uint32_t h = s->health_valid;
        d = opt_col(d, cols, COL(FAN_SPEED_PCT), h & GP_H_FAN, s->fan_speed_pct);
        if (cols & COL(TEMP_MEM_C)) {
            *d++ = ',';
            d = (h & GP_H_MEM_TEMP) ? fl_put_i64(d, s->mem_temp_c) : fl_put_null(d);
        }
        /* temp_junction_c and voltage_mv: NVML has neither (never a column). */
        d = opt_col(d, cols, COL(ENERGY_UJ), v & GP_M_ENERGY, s->energy_mj * 1000);
        d = opt_col(d, cols, COL(CLOCK_MEM), v & GP_M_CLOCK_MEM, s->clock_mem_mhz);
        d = opt_col(d, cols, COL(PCIE_BW_BPS), (v & PCIE_BOTH) == PCIE_BOTH,
                    ((uint64_t)s->pcie_tx_kbps + s->pcie_rx_kbps) * 1024);
        d = opt_col(d, cols, COL(ECC_CORRECTED), h & GP_H_ECC_VOL, s->ecc_sbe_volatile);
        d = opt_col(d, cols, COL(ECC_UNCORRECTED), h & GP_H_ECC_VOL, s->ecc_dbe_volatile);
        for (unsigned g = 0; g < GP_GPM_COUNT; g++)
            d = opt_col(d, cols, 1u << (GPM_COL0 + g), v & GP_M_GPM(g),
                        gpm_col_value(g, s->gpm[g]));
        *d++ = ']';
        fl_buf_commit(b, d);
    }
    FL_BUF_LIT(b, "]}\n");
}

void fl_rec_device_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_device_row *rows, size_t n)
{
    fl_rec_device_batch_cols(b, session_id, batch_id, rows, n, NULL);
}

void fl_rec_host_batch(fl_buf *b, const char *session_id, const char *hostname, const char *ip_addr,
                       uint64_t batch_id, const fl_host_row *rows, size_t n)
{
    if (!rows || n == 0)
        return;
    uint64_t base = rows[0].t_ns;
    fl_put_head(b, FL_T_HOST_METRIC_BATCH, session_id);
    fl_put_key(b, "hostname");
    fl_buf_str(b, hostname);
    fl_put_key(b, "ip_addr");
    fl_buf_str(b, ip_addr);
    put_batch_ids(b, batch_id, base);
    put_columns(b, FL_T_HOST_METRIC_BATCH, all_columns(FL_T_HOST_METRIC_BATCH));
    fl_put_key(b, "rows");
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

/* The envelope of a batch up to and including "rows":[ */
static void put_batch_open(fl_buf *b, fl_type type, const char *session_id, uint64_t batch_id,
                           uint64_t base, uint32_t cols)
{
    fl_put_head(b, type, session_id);
    put_batch_ids(b, batch_id, base);
    put_columns(b, type, cols);
    fl_put_key(b, "rows");
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

/* v as fl_buf_double writes it (six decimals at most, trailing zeros
 * dropped), by hand; NULL (nothing written) when v is not finite or too
 * large for this path. */
static inline char *put_fixed6(char *d, double v)
{
    if (!(fabs(v) < 9.0e12))
        return NULL;
    long long q = llround(v * 1e6);
    if (q < 0)
        *d++ = '-';
    unsigned long long mag = q < 0 ? 0ull - (unsigned long long)q : (unsigned long long)q;
    d = fl_put_u64(d, mag / 1000000u);
    unsigned frac = (unsigned)(mag % 1000000u);
    if (frac) {
        int n = 6;
        while (frac % 10 == 0) {
            frac /= 10;
            n--;
        }
        *d++ = '.';
        for (int i = n - 1; i >= 0; i--) {
            d[i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        d += n;
    }
    return d;
}

/* ------------------------------------------- rows from the vocabulary */

/* The scope and trace batches write their rows from vocab.h's column
 * lists (FL_COLS_*), one cell per column in the list's order: a column
 * added there is written here with no second list to keep in step.
 *
 * A column's cell is the row's field of the column's name (r->corr_id)
 * unless CELL_<BATCH>_<COLUMN> (or CELL_ALL_<COLUMN>, for every batch)
 * below names its value; a column is in every row and in the "columns"
 * list unless WHEN_<BATCH>_<COLUMN> gives the batch's condition for it;
 * a cell is an unsigned integer unless PUT_<BATCH>_<COLUMN> names its
 * writer.  Each such override is defined as "~, value": OR_DEFAULT picks
 * the value after the "~," when the name is defined, and its default when
 * the name stays a lone token. */
#define SECOND_(a, b, ...) b
#define SECOND(...) SECOND_(__VA_ARGS__)
#define OR_DEFAULT(probe, dflt) SECOND(probe, dflt, ~)

#define CELL(batch, id, name) OR_DEFAULT(CELL_##batch##_##id, OR_DEFAULT(CELL_ALL_##id, r->name))
#define WHEN(batch, id) OR_DEFAULT(WHEN_##batch##_##id, 1)
#define PUTTER(batch, id) OR_DEFAULT(PUT_##batch##_##id, put_u64_cell)

/* A row's offset from the batch base; a row older than the base (out of
 * order) is pinned to 0 (dt_of). */
#define CELL_ALL_DT_NS ~, dt_of(r->t_ns, base)
#define CELL_KERNEL_DYN_SHARED ~, r->dynamic_smem_bytes
/* Our extension columns of a peer-to-peer copy, only in a batch that
 * holds one; a row that is not peer-to-peer has both set to its device. */
#define WHEN_MEMCPY_SRC_DEVICE_ID ~, peer
#define WHEN_MEMCPY_DST_DEVICE_ID ~, peer
/* function_id indexes function_dict, which nothing fills for
 * synchronizations yet (the API function that synchronized is not
 * recorded): 0, "none", as the spec defines it. */
#define CELL_SYNC_FUNCTION_ID ~, 0
#define CELL_PROFILE_METRIC_VALUE ~, r->samples
/* A SASS-metric row (sample_kind 1) has no stall reason: 0, as GPUFlight
 * writes it (its analyzer compares the cell with 0, so a null would break
 * it). */
#define CELL_PROFILE_STALL_REASON ~, (r->sample_kind == FL_SAMPLE_KIND_SASS ? 0 : r->stall_reason)
#define PUT_PM_VALUE ~, put_double_cell
#define CELL_SCOPE_SCOPE_INSTANCE_ID ~, r->instance_id
/* repeat and warmup: a recorded begin row's (gpufl_scope_begin_bench);
 * rows without the recorder's event (fl_rec_scope_batch) have none. */
#define CELL_SCOPE_REPEAT ~, (with_tid ? ((const fl_scope_event *)r)->repeat : 0)
#define CELL_SCOPE_WARMUP ~, (with_tid ? ((const fl_scope_event *)r)->warmup : 0)
#define CELL_SCOPE_TID ~, ((const fl_scope_event *)r)->tid
#define WHEN_SCOPE_TID ~, with_tid

/* A cell: the first of its row bare, any other after a comma (room for
 * it was reserved with the row); a cell that is always 0 (repeat,
 * warmup, a sync's function_id) as one two-byte copy. */
static inline char *put_u64_cell(fl_buf *b, char *d, bool first, uint64_t v)
{
    (void)b;
    if (__builtin_constant_p(v) && v == 0 && !first)
        return fl_put_lit(d, ",0", 2);
    return first ? fl_put_u64(d, v) : fl_put_col(d, v);
}

/* A cell holding a double (never a row's first): by hand when
 * put_fixed6 can, else (not finite: null; huge) the general writer, with
 * room made again for the rest of the row. */
static char *put_double_cell(fl_buf *b, char *d, bool first, double v)
{
    (void)first;
    *d++ = ',';
    char *e = put_fixed6(d, v);
    if (e)
        return e;
    fl_buf_commit(b, d);
    fl_buf_double(b, v);
    return fl_buf_reserve(b, 32);
}

/* Only a writer other than put_u64_cell can run out of room: the test
 * of d is folded away for the integer cells. */
#define PUT_CELL(batch, id, name)                                                                  \
    if (WHEN(batch, id)) {                                                                         \
        d = PUTTER(batch, id)(b, d, FL_COL_##batch##_##id == 0, CELL(batch, id, name));            \
        if ((void (*)(void))PUTTER(batch, id) != (void (*)(void))put_u64_cell && !d)               \
            return;                                                                                \
    }
#define COLUMN_BIT(batch, id, name) | (WHEN(batch, id) ? 1u << FL_COL_##batch##_##id : 0u)

/* A whole batch of type FL_T_<type> over the columns FL_COLS_<cols>: its
 * envelope with base_time_ns base_t, then for each i < n the row r =
 * row_at (an expression of i), in the function that declares b,
 * session_id, batch_id, rows and n. */
#define WRITE_BATCH(type, cols, base_t, row_at)                                                    \
    do {                                                                                           \
        if (!rows || n == 0)                                                                       \
            return;                                                                                \
        uint64_t base = (base_t);                                                                  \
        put_batch_open(b, FL_T_##type, session_id, batch_id, base, 0u FL_COLS_##cols(COLUMN_BIT)); \
        for (size_t i = 0; i < n; i++) {                                                           \
            __auto_type r = (row_at);                                                              \
            char *d = row_open(b, i);                                                              \
            if (!d)                                                                                \
                return;                                                                            \
            FL_COLS_##cols(PUT_CELL);                                                              \
            row_close(b, d);                                                                       \
        }                                                                                          \
        FL_BUF_LIT(b, "]}\n");                                                                     \
    } while (0)

/* Rows of stride bytes, each starting with an fl_scope_row; with_tid:
 * each is an fl_scope_event, and the tid column is written. */
static void put_scope_batch(fl_buf *b, const char *session_id, uint64_t batch_id, const void *rows,
                            size_t stride, size_t n, bool with_tid)
{
    const char *p = rows;
    WRITE_BATCH(SCOPE_EVENT_BATCH, SCOPE, ((const fl_scope_row *)p)->t_ns,
                (const fl_scope_row *)(p + i * stride));
}

void fl_rec_scope_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_scope_row *rows, size_t n)
{
    put_scope_batch(b, session_id, batch_id, rows, sizeof *rows, n, false);
}

void fl_rec_scope_events(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_scope_event *rows, size_t n)
{
    put_scope_batch(b, session_id, batch_id, rows, sizeof *rows, n, true);
}

/* ------------------------------------------------------- trace batches */

/* A writer of records.h's batch signature over rows of row_t whose cells
 * are all the vocabulary's (WRITE_BATCH), base_time_ns base_t. */
#define BATCH_WRITER(fn, row_t, type, cols, base_t)                                                \
    void fn(fl_buf *b, const char *session_id, uint64_t batch_id, const row_t *rows, size_t n)     \
    {                                                                                              \
        WRITE_BATCH(type, cols, base_t, &rows[i]);                                                 \
    }

/* device_id is our extension after the spec's ten columns (readers look
 * columns up by name): a process that drives several GPUs (JAX, one
 * process per host) needs it to split kernels per device. */
BATCH_WRITER(fl_rec_kernel_batch, fl_kernel_row, KERNEL_EVENT_BATCH, KERNEL, rows[0].t_ns)

void fl_rec_memcpy_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_memcpy_row *rows, size_t n)
{
    /* Our extensions after the spec's six columns (readers look columns up
     * by name, so the first six read as before): device_id always (the
     * device that ran the copy: several per process under JAX), and
     * src_device_id / dst_device_id only in a batch holding a
     * peer-to-peer copy. */
    bool peer = false;
    for (size_t i = 0; rows && i < n && !peer; i++)
        peer = rows[i].peer != 0;
    WRITE_BATCH(MEMCPY_EVENT_BATCH, MEMCPY, rows[0].t_ns, &rows[i]);
}

/* stream_id is CUPTI's value as it is: 4294967295 (0xffffffff) for a sync
 * that is not on a stream (context or event synchronization). */
BATCH_WRITER(fl_rec_sync_batch, fl_sync_row, SYNCHRONIZATION_EVENT_BATCH, SYNC, rows[0].t_ns)
BATCH_WRITER(fl_rec_alloc_batch, fl_alloc_row, MEMORY_ALLOC_EVENT_BATCH, ALLOC, rows[0].t_ns)
/* graph_event_batch is our extension of the format (one row per graph
 * launch, channel device); readers that do not know the type skip it. */
BATCH_WRITER(fl_rec_graph_batch, fl_graph_row, GRAPH_EVENT_BATCH, GRAPH, rows[0].t_ns)
/* PC and PM samples do not come in time order. */
BATCH_WRITER(fl_rec_profile_batch, fl_sample_row, PROFILE_SAMPLE_BATCH, PROFILE, MIN_T_NS(rows, n))
BATCH_WRITER(fl_rec_pm_batch, fl_pm_row, PM_SAMPLE_BATCH, PM, MIN_T_NS(rows, n))

/* ------------------------------------------------------------ accounting */

fl_type fl_line_account(const char *line, size_t n, uint64_t *rows)
{
    static const char type_key[] = "\"type\":\"", rows_key[] = "\"rows\":[";
    *rows = 0;
    /* Inside a JSON string every '"' is escaped, so these keys, quotes
     * included, can only be the record's own. */
    const char *k = memmem(line, n, type_key, sizeof type_key - 1);
    if (!k)
        return FL_T_UNKNOWN;
    const char *name = k + sizeof type_key - 1, *end = line + n;
    const char *q = memchr(name, '"', (size_t)(end - name));
    if (!q)
        return FL_T_UNKNOWN;
    fl_type t = fl_type_of(name, (size_t)(q - name));
    if (!fl_type_get(t)->batch)
        return t;
    const char *r = memmem(q, (size_t)(end - q), rows_key, sizeof rows_key - 1);
    /* The rows come last and hold numbers and nulls only: one '[' each. */
    for (r = r ? r + sizeof rows_key - 1 : end; r < end; r++)
        *rows += *r == '[';
    return t;
}
