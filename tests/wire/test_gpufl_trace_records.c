/*
 * test_gpufl_trace_records.c - the Trace engine's record lines
 * (src/wire/records.c: kernel, memcpy, memset, synchronization, memory
 * allocation and graph records, kernel_detail).
 *
 * Each record type is written from fixed inputs and compared byte for byte
 * with tests/golden/gpufl/<type>.ndjson.  The goldens were checked by hand
 * against the wire-format spec; after a deliberate change regenerate them
 * with
 *
 *     GP_UPDATE_GOLDEN=1 ctest -R test_gpufl_trace_records
 *
 * and review the diff.  Every line is parsed by jansson (duplicate keys
 * rejected), every batch's columns are compared with the spec's list, and
 * the example session's kernel_event_batch and memcpy_event_batch lines
 * are reproduced byte for byte (its kernel_detail lines: key order and
 * values, as we write const_bytes as null and 1.0 as 1).
 */
#include "check.h"
#include "abi/trace_abi.h"
#include "util/buf.h"
#include "wire/records.h"

#include <jansson.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define TS0 1760000000000000000ull

static const fl_ident ident = {4242, "sample_app", SID};

/* -------------------------------------------------------------- helpers */

/* Lines that held an integer above INT64_MAX (parsed as reals). */
static int big_int_lines;

/* jansson holds integers as int64_t and refuses a larger one ("too big
 * integer"), but our columns are uint64 (addresses, external ids, the max
 * values tested here): such a line is parsed again with integers as reals,
 * so its syntax is still checked; its exact digits are the golden's job. */
static json_t *parse_n(const char *p, size_t n)
{
    json_error_t e;
    json_t *j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &e);
    if (!j && strstr(e.text, "too big integer")) {
        j = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
        if (j)
            big_int_lines++;
    }
    if (!j)
        fprintf(stderr, "cannot parse %.*s: %s (col %d)\n", (int)n, p, e.text, e.column);
    return j;
}

static json_t *parse_line(const char *text)
{
    return text ? parse_n(text, strlen(text)) : NULL;
}

/* The keys of obj in their order, comma-joined (into buf). */
static const char *keys_of(const json_t *obj, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    if (!json_is_object(obj))
        return "(not an object)";
    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it)) {
        int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", json_object_iter_key(it));
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    return buf;
}

/* The strings of a JSON array, comma-joined (into buf). */
static const char *strings_of(const json_t *arr, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    if (!json_is_array(arr))
        return "(not an array)";
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", s ? s : "(not a string)");
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    return buf;
}

/* The spec's column list of each batch type (our extensions included). */
static const char *spec_columns(const char *type, bool peer)
{
    if (strcmp(type, "kernel_event_batch") == 0)
        return "dt_ns,kernel_id,stream_id,duration_ns,corr_id,dyn_shared,num_regs,has_details,"
               "external_kind,external_id,device_id"; /* + our device_id */
    if (strcmp(type, "memcpy_event_batch") == 0)
        return peer ? "dt_ns,stream_id,duration_ns,bytes,copy_kind,corr_id,device_id,"
                      "src_device_id,dst_device_id"
                    : "dt_ns,stream_id,duration_ns,bytes,copy_kind,corr_id,device_id";
    if (strcmp(type, "synchronization_event_batch") == 0)
        return "dt_ns,duration_ns,sync_type,stream_id,event_id,context_id,corr_id,function_id,"
               "stack_id"; /* + our stack_id */
    if (strcmp(type, "memory_alloc_event_batch") == 0)
        return "dt_ns,duration_ns,memory_op,memory_kind,address,bytes,device_id,stream_id,"
               "corr_id";
    if (strcmp(type, "graph_event_batch") == 0)
        return "dt_ns,graph_id,stream_id,duration_ns,corr_id,device_id";
    if (strcmp(type, "pm_sample_batch") == 0)
        return "sample_index,dt_ns,device_id,metric_id,value,scope_name_id";
    return "(unknown type)";
}

#define BATCH_KEYS "version,type,session_id,batch_id,base_time_ns,columns,rows"
/* GPUFlight 1.3's MemsetEventModel's keys in its order (the fixture's
 * line, checked in test_memset_shape), then ours. */
#define GPUFL_MEMSET_KEYS                                                                          \
    "type,pid,app,session_id,name,platform,device_id,stream_id,stack_trace,user_scope,"            \
    "scope_depth,start_ns,end_ns,api_start_ns,api_exit_ns,corr_id,bytes"
#define MEMSET_KEYS GPUFL_MEMSET_KEYS ",ts_ns,duration_ns,context_id,value,memory_kind"
#define DETAIL_KEYS                                                                                \
    "version,type,session_id,pid,app,corr_id,grid,block,static_shared,local_bytes,const_bytes,"    \
    "occupancy,reg_occupancy,smem_occupancy,warp_occupancy,block_occupancy,limiting_resource,"     \
    "max_active_blocks,local_mem_total_bytes,local_mem_per_thread_bytes,cache_config_requested,"   \
    "cache_config_executed,shared_mem_executed_bytes,user_scope,stack_trace"

/* Every line of text parses as one object of a known type with the right
 * keys in order; each batch has version 1, the spec's columns and rows of
 * that width. */
static void check_lines(const char *text, const char *what)
{
    size_t len = strlen(text);
    CHECK(len > 0 && text[len - 1] == '\n');
    int lines = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        json_t *j = parse_n(p, n);
        CHECK(json_is_object(j));
        CHECK(memchr(p, ' ', n) == NULL); /* no whitespace (none of our strings hold one) */
        const char *type = json_string_value(json_object_get(j, "type"));
        char kb[2048], cb[1024];
        /* memset_event: GPUFlight writes it without a version */
        bool memset_rec = type && strcmp(type, "memset_event") == 0;
        if (memset_rec)
            CHECK(json_object_get(j, "version") == NULL);
        else
            CHECK_INT(json_number_value(json_object_get(j, "version")), 1);
        CHECK_STR(json_string_value(json_object_get(j, "session_id")), SID);
        if (type && strstr(type, "_batch")) {
            json_t *cols = json_object_get(j, "columns");
            bool peer = json_array_size(cols) == 9;
            CHECK_STR(keys_of(j, kb, sizeof kb), BATCH_KEYS);
            CHECK_STR(strings_of(cols, cb, sizeof cb), spec_columns(type, peer));
            json_t *rows = json_object_get(j, "rows");
            CHECK(json_array_size(rows) > 0);
            for (size_t r = 0; r < json_array_size(rows); r++) {
                json_t *row = json_array_get(rows, r);
                CHECK_U64(json_array_size(row), json_array_size(cols));
                for (size_t c = 0; c < json_array_size(row); c++)
                    CHECK(json_is_number(json_array_get(row, c)));
            }
        } else if (memset_rec) {
            CHECK_STR(keys_of(j, kb, sizeof kb), MEMSET_KEYS);
        } else if (type && strcmp(type, "kernel_detail") == 0) {
            CHECK_STR(keys_of(j, kb, sizeof kb), DETAIL_KEYS);
        } else if (type && strcmp(type, "pm_sampling_config") == 0) {
            /* GPUFlight 1.3's keys in its order (the fixture's line). */
            CHECK_STR(keys_of(j, kb, sizeof kb), "version,type,session_id,ts_ns,device_id,"
                                                 "interval_us,max_samples,preset,metrics");
        } else {
            fprintf(stderr, "%s line %d: unexpected type %s\n", what, lines + 1,
                    type ? type : "(none)");
            CHECK(!"unexpected type");
        }
        json_decref(j);
        lines++;
        p = nl ? nl + 1 : p + n;
    }
    CHECK(lines > 0);
}

static void golden(const char *file, const char *got)
{
    char rel[512];
    snprintf(rel, sizeof rel, "gpufl/%s", file);
    check_golden(rel, got, "test_gpufl_trace_records");
}

/* Validates and compares one golden; frees the buffer. */
static void finish(fl_buf *b, const char *file)
{
    CHECK(!b->oom);
    CHECK(b->p != NULL);
    if (!b->p)
        return;
    CHECK_U64(strlen(b->p), b->len);
    check_lines(b->p, file);
    golden(file, b->p);
    fl_buf_free(b);
}

/* The example session's kernels (kernel_dict 1..3, stream 7). */
static fl_kernel_row kernel(uint64_t t, uint32_t kid, uint64_t dur, uint32_t corr, uint32_t dyn,
                            uint16_t regs, uint8_t details)
{
    fl_kernel_row k;
    memset(&k, 0, sizeof k);
    k.t_ns = t;
    k.kernel_id = kid;
    k.stream_id = 7;
    k.duration_ns = dur;
    k.corr_id = corr;
    k.dynamic_smem_bytes = dyn;
    k.num_regs = regs;
    k.has_details = details;
    return k;
}

static fl_memcpy_row memcpy_row(uint64_t t, uint32_t stream, uint64_t dur, uint64_t bytes,
                                uint8_t kind, uint32_t corr)
{
    fl_memcpy_row m;
    memset(&m, 0, sizeof m);
    m.t_ns = t;
    m.stream_id = stream;
    m.duration_ns = dur;
    m.bytes = bytes;
    m.copy_kind = kind;
    m.corr_id = corr;
    m.device_id = m.src_device_id = m.dst_device_id = 0;
    return m;
}

/* -------------------------------------------------------------- goldens */

static void golden_kernel_batch(void)
{
    fl_buf b = {0};
    fl_kernel_row r[4] = {
        kernel(TS0 + 1000000, 1, 20000, 11, 0, 16, 1),
        kernel(TS0 + 1050000, 2, 900000, 12, 4096, 64, 1),
        kernel(TS0 + 999000, 3, 80000, 13, 0, 32, 0), /* older than the base: dt 0 */
        kernel(TS0 + 2000000, 3, 80000, 14, 0, 255, 0),
    };
    r[3].stream_id = 0xffffffffu;
    r[3].external_kind = 2; /* CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 */
    r[3].external_id = 987654321012ull;
    fl_rec_kernel_batch(&b, SID, 1, r, 4);
    /* Every field at its maximum. */
    fl_kernel_row m;
    memset(&m, 0xff, sizeof m);
    m.t_ns = UINT64_MAX;
    fl_rec_kernel_batch(&b, SID, UINT64_MAX, &m, 1);
    finish(&b, "kernel_event_batch.ndjson");
}

static void golden_memcpy_batch(void)
{
    fl_buf b = {0};
    fl_memcpy_row r[3] = {
        memcpy_row(TS0 + 500000, 7, 100000, 4194304, 1, 10),
        memcpy_row(TS0 + 2200000, 7, 100000, 4194304, 2, 14),
        memcpy_row(TS0 + 2300000, 0, 2500, 64, 8, 15),
    };
    /* Without a peer row: the spec's six columns. */
    fl_rec_memcpy_batch(&b, SID, 1, r, 3);
    finish(&b, "memcpy_event_batch.ndjson");

    /* A peer-to-peer copy in the batch: two more columns for every row. */
    fl_memcpy_row p[3] = {
        memcpy_row(TS0 + 500000, 7, 100000, 4194304, 1, 10),
        memcpy_row(TS0 + 600000, 9, 350000, 268435456, 10, 16),
        memcpy_row(TS0 + 700000, 7, 100000, 4194304, 2, 17),
    };
    p[0].device_id = p[0].src_device_id = p[0].dst_device_id = 1;
    p[1].device_id = 1;
    p[1].src_device_id = 1;
    p[1].dst_device_id = 3;
    p[1].peer = 1;
    p[2].device_id = p[2].src_device_id = p[2].dst_device_id = 1;
    fl_rec_memcpy_batch(&b, SID, 2, p, 3);
    fl_memcpy_row m;
    memset(&m, 0xff, sizeof m);
    fl_rec_memcpy_batch(&b, SID, UINT64_MAX, &m, 1);
    finish(&b, "memcpy_event_batch_peer.ndjson");
}

static void golden_memset_event(void)
{
    fl_buf b = {0};
    fl_memset_row r;
    memset(&r, 0, sizeof r);
    r.t_ns = TS0 + 1234567;
    r.duration_ns = 3100;
    r.bytes = 1048576;
    r.stream_id = 7;
    r.corr_id = 21;
    r.device_id = 1;
    r.context_id = 1;
    r.value = 0;
    r.memory_kind = 3; /* CUPTI_ACTIVITY_MEMORY_KIND_DEVICE */
    fl_rec_memset_event(&b, &ident, &r);
    memset(&r, 0xff, sizeof r);
    fl_rec_memset_event(&b, &ident, &r);
    finish(&b, "memset_event.ndjson");
}

static void golden_sync_batch(void)
{
    fl_buf b = {0};
    fl_sync_row r[3] = {
        /* t, duration, sync_type, stream, event, context, corr, stack (ours) */
        {TS0 + 3000000, 45000, 3, 7, 0, 1, 30, 2},          /* stream synchronize, stack 2 */
        {TS0 + 3100000, 1200000, 4, 0xffffffffu, 0, 1, 31}, /* context: not a stream */
        {TS0 + 3400000, 800, 1, 0xffffffffu, 5, 1, 32},     /* event synchronize */
    };
    fl_rec_sync_batch(&b, SID, 1, r, 3);
    fl_sync_row m;
    memset(&m, 0xff, sizeof m);
    fl_rec_sync_batch(&b, SID, UINT64_MAX, &m, 1);
    finish(&b, "synchronization_event_batch.ndjson");
}

static void golden_alloc_batch(void)
{
    fl_buf b = {0};
    fl_alloc_row r[2] = {
        /* t, duration, address, bytes, device, stream, corr, op, kind */
        {TS0 + 100000, 0, 0x7f3a40000000ull, 268435456, 0, 0, 3, 1, 3},
        {TS0 + 2800000, 0, 0x7f3a40000000ull, 268435456, 0, 7, 40, 2, 3},
    };
    fl_rec_alloc_batch(&b, SID, 1, r, 2);
    fl_alloc_row m;
    memset(&m, 0xff, sizeof m);
    fl_rec_alloc_batch(&b, SID, UINT64_MAX, &m, 1);
    finish(&b, "memory_alloc_event_batch.ndjson");
}

static void golden_graph_batch(void)
{
    fl_buf b = {0};
    fl_graph_row r[2] = {
        /* t, duration, graph, stream, corr, device */
        {TS0 + 1500000, 250000, 1, 7, 50, 0},
        {TS0 + 1800000, 248000, 1, 7, 51, 0},
    };
    fl_rec_graph_batch(&b, SID, 1, r, 2);
    fl_graph_row m;
    memset(&m, 0xff, sizeof m);
    fl_rec_graph_batch(&b, SID, UINT64_MAX, &m, 1);
    finish(&b, "graph_event_batch.ndjson");
}

/* PM sampling: the fixture's two samples (metric 3, scope 2), a value with
 * more than six decimals, a negative one, a large one; then the extremes;
 * and the configuration (GPUFlight 1.3's keys, the fixture's order). */
static void golden_pm(void)
{
    fl_buf b = {0};
    fl_pm_row r[5] = {
        /* t, value, sample_index, device, metric, scope */
        {TS0 + 100000, 55.5, 0, 0, 3, 2},
        {TS0 + 200000, 61.25, 1, 0, 3, 2},
        {TS0 + 200000, 1.0 / 3.0, 1, 0, 4, 2},
        {TS0 + 150000, -2.5, 7, 1, 5, 0}, /* out of order: the base is the earliest */
        {TS0 + 300000, 123456789.125, 2, 0, 3, 0},
    };
    fl_rec_pm_batch(&b, SID, 1, r, 5);
    fl_pm_row m;
    memset(&m, 0xff, sizeof m);
    m.value = 0;
    fl_rec_pm_batch(&b, SID, UINT64_MAX, &m, 1);
    fl_rec_pm_batch(&b, SID, 2, r, 0); /* no rows: nothing */
    const char *metrics[] = {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
    fl_pm_config c = {.t_ns = TS0,
                      .device_id = 0,
                      .interval_us = 100,
                      .max_samples = 1000,
                      .preset = "default",
                      .metrics = metrics,
                      .n_metrics = 2};
    fl_rec_pm_config(&b, SID, &c);
    c.preset = "custom";
    c.n_metrics = 0;
    c.device_id = 3;
    fl_rec_pm_config(&b, SID, &c);
    finish(&b, "pm_sampling.ndjson");
}

static fl_kernel_row detail_kernel(void)
{
    fl_kernel_row k = kernel(TS0 + 1050000, 2, 900000, 12, 4096, 64, 1);
    k.grid[0] = 64;
    k.grid[1] = 64;
    k.grid[2] = 1;
    k.block[0] = 16;
    k.block[1] = 16;
    k.block[2] = 1;
    k.static_smem_bytes = 8192;
    k.local_mem_per_thread_bytes = 24;
    k.local_mem_total_bytes = 123731968;
    k.cache_requested = 1;
    k.cache_executed = 2;
    k.smem_executed_bytes = 102400;
    return k;
}

static void golden_kernel_detail(void)
{
    fl_buf b = {0};
    fl_kernel_row k = detail_kernel();
    fl_occupancy occ = {0.5, 0.75, 0.5, 1.0, 2.0 / 3.0, 8, FL_LIMIT_REGISTERS};
    fl_rec_kernel_detail(&b, &ident, &k, &occ, "train_step|forward", "main|train|launch");
    /* Device limits unknown, no scope, no stack. */
    fl_rec_kernel_detail(&b, &ident, &k, NULL, NULL, NULL);
    /* Strings that need escaping; every number at its maximum. */
    fl_kernel_row m;
    memset(&m, 0xff, sizeof m);
    fl_occupancy z = {0, 0, 0, 0, 0, 0, FL_LIMIT_BLOCKS};
    fl_rec_kernel_detail(&b, &ident, &m, &z, "global", "a\"quoted\"|b\\c\n\t");
    finish(&b, "kernel_detail.ndjson");
}

/* ------------------------------------------------- semantics (no golden) */

static void check_rules(void)
{
    fl_buf b = {0};
    fl_kernel_row k = kernel(5, 1, 1, 1, 0, 0, 0);
    fl_memcpy_row m = memcpy_row(5, 1, 1, 1, 1, 1);
    fl_sync_row s = {5, 1, 1, 1, 1, 1, 1};
    fl_alloc_row a = {5, 1, 1, 1, 1, 1, 1, 1, 1};
    fl_graph_row g = {5, 1, 1, 1, 1, 1};

    /* No rows: nothing at all. */
    fl_rec_kernel_batch(&b, SID, 1, &k, 0);
    fl_rec_kernel_batch(&b, SID, 1, NULL, 0);
    fl_rec_memcpy_batch(&b, SID, 1, &m, 0);
    fl_rec_memcpy_batch(&b, SID, 1, NULL, 0);
    fl_rec_sync_batch(&b, SID, 1, &s, 0);
    fl_rec_sync_batch(&b, SID, 1, NULL, 0);
    fl_rec_alloc_batch(&b, SID, 1, &a, 0);
    fl_rec_alloc_batch(&b, SID, 1, NULL, 0);
    fl_rec_graph_batch(&b, SID, 1, &g, 0);
    fl_rec_graph_batch(&b, SID, 1, NULL, 0);
    CHECK_U64(b.len, 0);

    /* One row each: exactly one line, base = its time, dt 0. */
    fl_rec_kernel_batch(&b, SID, 3, &k, 1);
    fl_rec_memcpy_batch(&b, SID, 3, &m, 1);
    fl_rec_sync_batch(&b, SID, 3, &s, 1);
    fl_rec_alloc_batch(&b, SID, 3, &a, 1);
    fl_rec_graph_batch(&b, SID, 3, &g, 1);
    fl_memset_row ms = {5, 1, 1, 1, 1, 1, 1, 1, 1};
    fl_rec_memset_event(&b, &ident, &ms);
    fl_rec_kernel_detail(&b, &ident, &k, NULL, NULL, NULL);
    CHECK(b.p != NULL);
    if (b.p) {
        check_lines(b.p, "one row each");
        size_t nl = 0;
        for (const char *p = b.p; *p; p++)
            nl += *p == '\n';
        CHECK_U64(nl, 7);
        CHECK(strstr(b.p, "\"batch_id\":3,\"base_time_ns\":5,") != NULL);
    }
    fl_buf_reset(&b);

    /* A peer row anywhere in the batch (here the last) adds the columns;
     * a non-peer row keeps the six. */
    fl_memcpy_row mm[2] = {memcpy_row(5, 1, 1, 1, 1, 1), memcpy_row(6, 1, 1, 1, 10, 2)};
    fl_rec_memcpy_batch(&b, SID, 1, mm, 2);
    CHECK(b.p && strstr(b.p, "src_device_id") == NULL);
    fl_buf_reset(&b);
    mm[1].peer = 1;
    mm[1].dst_device_id = 2;
    fl_rec_memcpy_batch(&b, SID, 1, mm, 2);
    CHECK(b.p && strstr(b.p, "\"rows\":[[0,1,1,1,1,1,0,0,0],[1,1,1,1,10,2,0,0,2]]}\n") != NULL);
    fl_buf_reset(&b);

    /* A full batch of FL_TRACE_BATCH kernels: one valid line, every row. */
    enum { N = FL_TRACE_BATCH };
    static fl_kernel_row rows[N];
    for (size_t i = 0; i < N; i++) {
        rows[i] = kernel(TS0 + i * 5000, (uint32_t)(i % 50) + 1, 1000 + i, (uint32_t)(100 + i),
                         (uint32_t)(i % 3) * 1024, (uint16_t)(16 + i % 240), (uint8_t)(i % 2));
        rows[i].external_id = i % 7 ? 0 : UINT64_MAX - i;
        rows[i].external_kind = i % 7 ? 0 : 1;
    }
    fl_rec_kernel_batch(&b, SID, 42, rows, N);
    CHECK(!b.oom);
    json_t *j = parse_line(b.p);
    CHECK(j != NULL);
    json_t *jr = json_object_get(j, "rows");
    CHECK_U64(json_array_size(jr), N);
    int bad = 0;
    for (size_t i = 0; i < json_array_size(jr); i++) {
        json_t *row = json_array_get(jr, i);
        long long want[9] = {
            (long long)i * 5000,       (long long)rows[i].kernel_id, 7,
            1000 + (long long)i,       100 + (long long)i,           (long long)(i % 3) * 1024,
            16 + (long long)(i % 240), (long long)(i % 2),           i % 7 ? 0 : 1};
        for (size_t c = 0; c < 9; c++)
            bad += (long long)json_number_value(json_array_get(row, c)) != want[c];
        bad += json_array_size(row) != 11;
    }
    CHECK_INT(bad, 0);
    json_decref(j);
    /* external_id is above INT64_MAX for some rows: check the text. */
    CHECK(b.p && strstr(b.p, ",1,18446744073709551615,0]") != NULL);
    CHECK(b.p && strstr(b.p, ",1,18446744073709551608,0]") != NULL);
    CHECK(b.p && b.len > 2 && strcmp(b.p + b.len - 3, "]}\n") == 0);
    fl_buf_reset(&b);

    /* oom: nothing is appended. */
    b.oom = true;
    fl_rec_kernel_batch(&b, SID, 1, rows, N);
    fl_rec_memset_event(&b, &ident, &ms);
    fl_rec_kernel_detail(&b, &ident, &k, NULL, NULL, NULL);
    CHECK_U64(b.len, 0);
    fl_buf_free(&b);

    /* kernel_detail: each limiter's name, fractions rounded to 6 places. */
    static const char *const names[] = {"warps", "registers", "shared_mem", "blocks"};
    for (int l = FL_LIMIT_WARPS; l <= FL_LIMIT_BLOCKS; l++) {
        fl_occupancy occ = {1.0 / 3.0, 1, 1, 1, 1, 4, (fl_limiter)l};
        fl_rec_kernel_detail(&b, &ident, &k, &occ, "global", "");
        j = parse_line(b.p);
        CHECK_STR(json_string_value(json_object_get(j, "limiting_resource")), names[l]);
        CHECK(b.p && strstr(b.p, "\"occupancy\":0.333333,") != NULL);
        CHECK_STR(json_string_value(json_object_get(j, "stack_trace")), "");
        CHECK_STR(json_string_value(json_object_get(j, "user_scope")), "global");
        json_decref(j);
        fl_buf_reset(&b);
    }
    fl_buf_free(&b);
}

/* ----------------------------------------------- the example session */

/* The fixture's device.log lines of one type, raw (newline included). */
static size_t fixture_lines_of(const char *type, char **out, size_t cap)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/fixtures/gpufl-session/" SID "/device.log",
             check_env("GP_TEST_SOURCE_DIR"));
    char *text = check_read_file(path, NULL);
    CHECK(text != NULL);
    if (!text)
        return 0;
    char needle[128];
    snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
    size_t n = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        if (memmem(line, len, needle, strlen(needle)) && n < cap)
            out[n++] = strndup(line, len);
        line += len;
    }
    free(text);
    return n;
}

/* Ours is the fixture's line with our trailing device_id column added:
 * with that column taken out of "columns" and of every row, the two lines
 * are byte for byte the same. */
static void check_fixture_line(const char *type, const char *ours)
{
    char *lines[4];
    size_t n = fixture_lines_of(type, lines, 4);
    CHECK_U64(n, 1);
    char stripped[4096];
    size_t k = 0;
    const char *cols = ",\"device_id\"]";
    const char *p = ours;
    const char *c = strstr(p, cols);
    CHECK(c != NULL);
    const char *rows = c ? strstr(c, "\"rows\":[") : NULL;
    for (; *p && k + 1 < sizeof stripped; p++) {
        if (p == c) { /* ,"device_id"] -> ] */
            p += strlen(cols) - 1;
            stripped[k++] = ']';
            continue;
        }
        if (rows && p > rows && *p == ',') {
            /* the last cell of a row: ",N]" -> "]" */
            const char *q = p + 1;
            while (*q >= '0' && *q <= '9')
                q++;
            if (*q == ']' && q > p + 1) {
                p = q - 1;
                continue;
            }
        }
        stripped[k++] = *p;
    }
    stripped[k] = '\0';
    if (n >= 1 && strcmp(lines[0], stripped) != 0) {
        fprintf(stderr, "%s differs from the fixture:\n  ours:    %s  fixture: %s", type, stripped,
                lines[0]);
        CHECK(!"fixture line mismatch");
    } else if (n >= 1) {
        CHECK(1);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
}

static void check_against_fixture(void)
{
    /* kernel_event_batch: three kernels, the first two with details. */
    fl_kernel_row k[3] = {
        kernel(TS0 + 1000000, 1, 20000, 11, 0, 16, 1),
        kernel(TS0 + 1050000, 2, 900000, 12, 4096, 64, 1),
        kernel(TS0 + 2000000, 3, 80000, 13, 0, 32, 0),
    };
    fl_buf b = {0};
    fl_rec_kernel_batch(&b, SID, 1, k, 3);
    CHECK(b.p != NULL);
    if (b.p)
        check_fixture_line("kernel_event_batch", b.p);
    fl_buf_reset(&b);

    /* memcpy_event_batch: HtoD then DtoH, no peer copy. */
    fl_memcpy_row m[2] = {
        memcpy_row(TS0 + 500000, 7, 100000, 4194304, 1, 10),
        memcpy_row(TS0 + 2200000, 7, 100000, 4194304, 2, 14),
    };
    fl_rec_memcpy_batch(&b, SID, 1, m, 2);
    CHECK(b.p != NULL);
    if (b.p)
        check_fixture_line("memcpy_event_batch", b.p);
    fl_buf_reset(&b);

    /* kernel_detail: the same keys in the same order; the same values but
     * const_bytes (CUPTI does not report it: null) and the fractions (the
     * fixture writes 1.0, we 1 - the same number). */
    char *lines[4];
    size_t n = fixture_lines_of("kernel_detail", lines, 4);
    CHECK_U64(n, 2);
    static const fl_occupancy occ[2] = {{1.0, 1.0, 1.0, 1.0, 1.0, 8, FL_LIMIT_WARPS},
                                        {0.5, 0.5, 1.0, 1.0, 1.0, 8, FL_LIMIT_REGISTERS}};
    for (size_t i = 0; i < n && i < 2; i++) {
        fl_kernel_row d = k[i];
        static const uint32_t grid[2][3] = {{4096, 1, 1}, {64, 64, 1}};
        static const uint32_t block[2][3] = {{256, 1, 1}, {16, 16, 1}};
        memcpy(d.grid, grid[i], sizeof d.grid);
        memcpy(d.block, block[i], sizeof d.block);
        d.static_smem_bytes = i ? 8192 : 0;
        d.smem_executed_bytes = i ? 8192 : 0;
        fl_buf_reset(&b);
        fl_rec_kernel_detail(&b, &ident, &d, &occ[i], "train_step", "");
        json_t *fx = parse_line(lines[i]);
        json_t *ours = parse_line(b.p);
        char ka[2048], kb[2048];
        CHECK_STR(keys_of(ours, ka, sizeof ka), keys_of(fx, kb, sizeof kb));
        CHECK_STR(keys_of(ours, ka, sizeof ka), DETAIL_KEYS);
        CHECK(json_is_null(json_object_get(ours, "const_bytes")));
        const char *key;
        json_t *fv;
        json_object_foreach(fx, key, fv)
        {
            json_t *ov = json_object_get(ours, key);
            bool same = strcmp(key, "const_bytes") == 0 || json_equal(ov, fv) ||
                        (json_is_number(ov) && json_is_number(fv) &&
                         json_number_value(ov) == json_number_value(fv));
            if (!same)
                fprintf(stderr, "kernel_detail %zu: %s differs from the fixture\n", i, key);
            CHECK(same);
        }
        json_decref(fx);
        json_decref(ours);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    fl_buf_free(&b);
}

/* Our memset_event starts with the keys of GPUFlight's own memset_event
 * line (tests/fixtures/gpufl-1.3, its writer's), in its order. */
static void test_memset_shape(void)
{
    char path[4096];
    snprintf(path, sizeof path,
             "%s/fixtures/gpufl-1.3/uncompressed-windows/aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee/"
             "device.1.log",
             check_env("GP_TEST_SOURCE_DIR"));
    size_t len = 0;
    char *text = check_read_file(path, &len);
    CHECK(text != NULL);
    if (!text)
        return;
    const char *line = strstr(text, "{\"type\":\"memset_event\"");
    CHECK(line != NULL);
    if (line) {
        const char *nl = strchr(line, '\n');
        json_t *j = parse_n(line, nl ? (size_t)(nl - line) : strlen(line));
        char kb[1024];
        CHECK_STR(keys_of(j, kb, sizeof kb), GPUFL_MEMSET_KEYS);
        json_decref(j);
    }
    free(text);
}

int main(void)
{
    golden_kernel_batch();
    golden_memcpy_batch();
    golden_memset_event();
    golden_sync_batch();
    golden_alloc_batch();
    golden_graph_batch();
    golden_kernel_detail();
    golden_pm();
    check_rules();
    check_against_fixture();
    test_memset_shape();
    /* The max-value lines of the goldens (kernel, memcpy peer, memset,
     * sync, alloc, graph, kernel_detail) and the 1024-row batch. */
    CHECK_INT(big_int_lines, 9);
    return check_done("test_gpufl_trace_records");
}
