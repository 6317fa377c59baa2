/*
 * test_gpufl_trace_writer.c - the core's Trace-engine sink (src/recorder/trace_sink.c)
 * driven directly, as the plugin's decoder drives it (no CUDA needed):
 * kernel_dict to every channel before the batches, rows sorted by time
 * within a batch, kernel_detail once per launch configuration (and again
 * when a kernel goes back to an earlier one), occupancy from the device's
 * limits or null without them, memset events, sync/alloc batches in the
 * scope channel, graph launches and NVTX ranges as GPUFlight's
 * graph_launch_event and nvtx_marker_event (a range written at its end,
 * the ones still open at shutdown), and the counts the closing
 * capture_capabilities reports.
 */
#include "check.h"
#include "abi/trace_abi.h"
#include "recorder/occupancy.h"
#include "recorder/scope.h"
#include "recorder/trace_sink.h"
#include "util/buf.h"
#include "wire/records.h"
#include "gpufl.h"

#include <jansson.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

static json_t *lines_of(const fl_buf *b, size_t *n)
{
    json_t *arr = json_array();
    const char *p = b->p ? b->p : "";
    while (*p) {
        const char *nl = strchr(p, '\n');
        CHECK(nl != NULL);
        if (!nl)
            break;
        json_error_t e;
        json_t *j = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &e);
        CHECK(j != NULL);
        if (j)
            json_array_append_new(arr, j);
        p = nl + 1;
    }
    *n = json_array_size(arr);
    return arr;
}

static const char *type_of(json_t *rec)
{
    const char *t = json_string_value(json_object_get(rec, "type"));
    return t ? t : "";
}

static json_int_t col(json_t *batch, size_t row, const char *name)
{
    json_t *cols = json_object_get(batch, "columns");
    for (size_t i = 0; i < json_array_size(cols); i++)
        if (strcmp(json_string_value(json_array_get(cols, i)), name) == 0)
            return json_integer_value(
                json_array_get(json_array_get(json_object_get(batch, "rows"), row), i));
    return -999;
}

static fl_gpu_limits h100_limits(void)
{
    fl_gpu_limits h100;
    memset(&h100, 0, sizeof h100);
    h100.device_id = 0;
    h100.cc_major = 9;
    h100.sm_count = 132;
    h100.warp_size = 32;
    h100.max_threads_per_block = 1024;
    h100.max_threads_per_sm = 2048;
    h100.max_blocks_per_sm = 32;
    h100.regs_per_sm = 65536;
    h100.max_regs_per_block = 65536;
    h100.smem_per_sm_bytes = 233472;
    h100.smem_per_block_optin_bytes = 232448;
    h100.reserved_smem_per_block_bytes = 1024;
    return h100;
}

static fl_kernel_row kernel(uint64_t t, uint32_t kid, uint32_t corr, uint32_t grid, uint16_t regs)
{
    fl_kernel_row k;
    memset(&k, 0, sizeof k);
    k.t_ns = t;
    k.duration_ns = 1000;
    k.kernel_id = kid;
    k.corr_id = corr;
    k.stream_id = 7;
    k.grid[0] = grid;
    k.grid[1] = k.grid[2] = 1;
    k.block[0] = 256;
    k.block[1] = k.block[2] = 1;
    k.num_regs = regs;
    k.device_id = 0;
    return k;
}

/* compact_kernel_details: a detail per launch configuration. */
static void test_kernels_compact(void)
{
    fl_buf dev = {0}, scope = {0}, sys = {0};
    fl_ident id = {4242, "app", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &dev, &scope, &sys);
    CHECK(w != NULL);
    fl_trace_writer_set_compact(w, true);
    fl_trace_sink s;
    fl_trace_writer_sink(w, &s);

    uint32_t ids[2] = {1, 2};
    const char *names[2] = {"vecAdd(float*, int)", "gemm(float const*)"};
    s.kernel_names(s.user, ids, names, 2);

    /* Device 0 known (an H100's attributes, granularities filled by the
     * writer); device 1 not. */
    fl_gpu_limits h100 = h100_limits();
    s.device(s.user, &h100);

    /* Out of order in time; vecAdd: A, A, B (other grid), A again. */
    fl_kernel_row rows[6] = {kernel(5000, 1, 13, 64, 16),  kernel(1000, 1, 11, 64, 16),
                             kernel(3000, 1, 12, 64, 16),  kernel(7000, 1, 14, 64, 16),
                             kernel(6000, 2, 15, 32, 128), kernel(8000, 2, 16, 32, 128)};
    rows[3].grid[0] = 128;
    rows[5].device_id = 1;
    s.kernels(s.user, rows, 6);
    fl_kernel_row again = kernel(9000, 1, 17, 64, 16);
    s.kernels(s.user, &again, 1);

    size_t n = 0;
    json_t *L = lines_of(&dev, &n);
    CHECK_STR(type_of(json_array_get(L, 0)), "dictionary_update");
    CHECK_STR(json_string_value(
                  json_object_get(json_object_get(json_array_get(L, 0), "kernel_dict"), "2")),
              "gemm(float const*)");
    /* The dictionary went to the other channels too. */
    size_t ns = 0, ny = 0;
    json_t *S = lines_of(&scope, &ns), *Y = lines_of(&sys, &ny);
    CHECK_STR(type_of(json_array_get(S, 0)), "dictionary_update");
    CHECK_STR(type_of(json_array_get(Y, 0)), "dictionary_update");

    /* Details: corr 11 (first vecAdd configuration), 15 (gemm), 14 (grid
     * 128), 16 (gemm on device 1: a new configuration), 17 (back to grid
     * 64: differs from the previous launch). */
    json_t *batch = NULL;
    json_int_t detail_corr[8];
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(L, i);
        if (strcmp(type_of(r), "kernel_detail") == 0 && nd < 8)
            detail_corr[nd++] = json_integer_value(json_object_get(r, "corr_id"));
        if (strcmp(type_of(r), "kernel_event_batch") == 0 && !batch)
            batch = r;
    }
    CHECK_INT(nd, 5);
    json_int_t want_details[5] = {11, 15, 14, 16, 17}; /* in time order */
    for (size_t i = 0; i < 5 && i < nd; i++)
        CHECK_INT(detail_corr[i], want_details[i]);
    CHECK(batch != NULL);
    CHECK_U64(json_integer_value(json_object_get(batch, "base_time_ns")), 1000);
    json_int_t want_corr[6] = {11, 12, 13, 15, 14, 16};
    json_int_t want_has[6] = {1, 0, 0, 1, 1, 1};
    json_int_t want_dt[6] = {0, 2000, 4000, 5000, 6000, 7000};
    for (size_t i = 0; i < 6; i++) {
        CHECK_INT(col(batch, i, "corr_id"), want_corr[i]);
        CHECK_INT(col(batch, i, "has_details"), want_has[i]);
        CHECK_INT(col(batch, i, "dt_ns"), want_dt[i]);
    }

    /* Occupancy: 256 threads x 16 regs on the H100: 8 blocks, warps; 256
     * x 128 regs: 4096 per warp, 4 warps per sub-partition = 16 warps, 2
     * blocks = 25 %, registers; device 1: unknown limits, null. */
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(L, i);
        if (strcmp(type_of(r), "kernel_detail") != 0)
            continue;
        json_int_t c = json_integer_value(json_object_get(r, "corr_id"));
        json_t *occ = json_object_get(r, "occupancy");
        const char *lim = json_string_value(json_object_get(r, "limiting_resource"));
        if (c == 11) {
            CHECK_NEAR(json_number_value(occ), 1.0, 1e-9);
            CHECK_STR(lim, "warps");
        } else if (c == 15) {
            CHECK_NEAR(json_number_value(occ), 0.25, 1e-9);
            CHECK_STR(lim, "registers");
            CHECK_INT(json_integer_value(json_object_get(r, "max_active_blocks")), 2);
        } else if (c == 16) {
            CHECK(json_is_null(occ));
            CHECK(json_is_null(json_object_get(r, "limiting_resource")));
        } else if (c == 14) {
            CHECK_STR(json_string_value(json_object_get(r, "grid")), "(128,1,1)");
        }
    }
    /* The second call: corr 17 goes back to grid 64 - a new detail. */
    json_t *last = json_array_get(L, n - 1);
    CHECK_STR(type_of(last), "kernel_event_batch");
    CHECK_INT(col(last, 0, "has_details"), 1);
    CHECK_INT(json_integer_value(json_object_get(last, "batch_id")), 2);
    CHECK_STR(type_of(json_array_get(L, n - 2)), "kernel_detail");

    fl_trace_counts cnt;
    fl_trace_writer_counts(w, &cnt);
    CHECK_U64(cnt.kernels, 7);
    CHECK_U64(cnt.details, 5);
    CHECK_U64(cnt.kernel_ns, 7000);
    json_decref(L);
    json_decref(S);
    json_decref(Y);
    fl_trace_writer_destroy(w);
    fl_buf_free(&dev);
    fl_buf_free(&scope);
    fl_buf_free(&sys);
}

static void test_other_records(void)
{
    fl_buf dev = {0}, scope = {0}, sys = {0};
    fl_ident id = {4242, "app", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &dev, &scope, &sys);
    fl_trace_sink s;
    fl_trace_writer_sink(w, &s);

    fl_memcpy_row mc[2] = {{.t_ns = 200, .bytes = 10, .copy_kind = 2},
                           {.t_ns = 100, .bytes = 20, .copy_kind = 1}};
    s.memcpys(s.user, mc, 2);
    fl_memset_row ms = {.t_ns = 300, .duration_ns = 5, .bytes = 64, .value = 1};
    s.memsets(s.user, &ms, 1);
    fl_sync_row sy = {.t_ns = 400, .duration_ns = 50, .sync_type = 3, .stream_id = 7};
    s.syncs(s.user, &sy, 1);
    fl_alloc_row al = {.t_ns = 500, .memory_op = 1, .bytes = 4096, .address = 0x1000};
    s.allocs(s.user, &al, 1);
    fl_graph_row gr = {.t_ns = 600, .duration_ns = 70, .graph_id = 3};
    s.graphs(s.user, &gr, 1);

    size_t n = 0, ns = 0;
    json_t *L = lines_of(&dev, &n), *S = lines_of(&scope, &ns);
    CHECK_INT(n, 2);
    CHECK_STR(type_of(json_array_get(L, 0)), "memcpy_event_batch");
    CHECK_INT(col(json_array_get(L, 0), 0, "bytes"), 20); /* sorted: HtoD first */
    CHECK_INT(col(json_array_get(L, 0), 1, "dt_ns"), 100);
    CHECK_STR(type_of(json_array_get(L, 1)), "memset_event");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(L, 1), "bytes")), 64);
    CHECK_INT(ns, 3);
    CHECK_STR(type_of(json_array_get(S, 0)), "synchronization_event_batch");
    CHECK_STR(type_of(json_array_get(S, 1)), "memory_alloc_event_batch");
    CHECK_INT(col(json_array_get(S, 1), 0, "bytes"), 4096);
    json_decref(L);
    json_decref(S);
    /* A graph launch: GPUFlight's graph_launch_event in the scope channel,
     * its keys in its order (no graph_exec_key: not known). */
    const char *nl = strchr(scope.p, '\n');
    nl = nl ? strchr(nl + 1, '\n') : NULL;
    CHECK_STR(nl ? nl + 1 : "",
              "{\"type\":\"graph_launch_event\",\"pid\":4242,\"app\":\"app\",\"session_id\":\"" SID
              "\",\"start_ns\":600,\"end_ns\":670,\"duration_ns\":70,\"graph_id\":3,"
              "\"device_id\":0,\"stream_id\":0,\"corr_id\":0}\n");
    fl_buf_reset(&scope);

    /* NVTX: one nvtx_marker_event when a range ends, with its begin's
     * name, domain and time; an end without a begin writes nothing; the
     * ranges still open are written at shutdown, marked. */
    fl_marker_row mk[5] = {
        {.t_ns = 1000, .marker_id = 5, .name = "outer", .depth = 0},
        {.t_ns = 1500, .marker_id = 6, .name = "inner \"q\"", .depth = 1, .domain = "trainer"},
        {.t_ns = 1700, .marker_id = 6, .is_end = 1, .depth = 1},
        {.t_ns = 1800, .marker_id = 99, .is_end = 1},
        {.t_ns = 1900, .marker_id = 7, .name = "mark"},
    };
    s.markers(s.user, mk, 5);
    fl_marker_row mark_end = {.t_ns = 1900, .marker_id = 7, .is_end = 1};
    s.markers(s.user, &mark_end, 1);
    CHECK_STR(scope.p,
              "{\"type\":\"nvtx_marker_event\",\"pid\":4242,\"app\":\"app\",\"session_id\":\"" SID
              "\",\"name\":\"inner \\\"q\\\"\",\"domain\":\"trainer\",\"start_ns\":1500,"
              "\"end_ns\":1700,\"duration_ns\":200,\"marker_id\":6}\n"
              "{\"type\":\"nvtx_marker_event\",\"pid\":4242,\"app\":\"app\",\"session_id\":\"" SID
              "\",\"name\":\"mark\",\"domain\":\"\",\"start_ns\":1900,\"end_ns\":1900,"
              "\"duration_ns\":0,\"marker_id\":7}\n");
    fl_buf_reset(&scope);
    fl_trace_writer_close_ranges(w, 5000);
    CHECK_STR(scope.p,
              "{\"type\":\"nvtx_marker_event\",\"pid\":4242,\"app\":\"app\",\"session_id\":\"" SID
              "\",\"name\":\"outer\",\"domain\":\"\",\"start_ns\":1000,\"end_ns\":5000,"
              "\"duration_ns\":4000,\"marker_id\":5,\"open_at_shutdown\":true}\n");
    fl_buf_reset(&scope);
    fl_trace_writer_close_ranges(w, 6000); /* nothing open any more */
    CHECK_U64(scope.len, 0);

    fl_trace_counts cnt;
    fl_trace_writer_counts(w, &cnt);
    CHECK_U64(cnt.memcpys, 2);
    CHECK_U64(cnt.memsets, 1);
    CHECK_U64(cnt.syncs, 1);
    CHECK_U64(cnt.allocs, 1);
    CHECK_U64(cnt.graphs, 1);
    CHECK_U64(cnt.markers, 6);
    CHECK_U64(cnt.ranges, 2);
    CHECK_U64(cnt.ranges_open_at_end, 1);
    CHECK_U64(cnt.markers_unmatched, 1);
    CHECK_U64(cnt.markers_lost, 0);
    fl_trace_writer_destroy(w);
    fl_trace_writer_destroy(NULL);
    fl_buf_free(&dev);
    fl_buf_free(&scope);
    fl_buf_free(&sys);
}

/* The default: one kernel_detail per launch, every row has_details = 1,
 * each line byte for byte what fl_rec_kernel_detail writes for its launch
 * (a repeated configuration's text is reused, a changed one - grid, the
 * local memory total, the device's limits becoming known - made again). */
static void test_kernels_per_launch(void)
{
    fl_buf dev = {0}, scope = {0}, sys = {0};
    fl_ident id = {4242, "app", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &dev, &scope, &sys);
    fl_trace_sink s;
    fl_trace_writer_sink(w, &s);
    fl_kernel_row rows[6] = {kernel(1000, 1, 11, 64, 16),  kernel(2000, 1, 12, 64, 16),
                             kernel(3000, 1, 13, 128, 16), kernel(4000, 1, 14, 64, 16),
                             kernel(5000, 1, 15, 64, 16),  kernel(6000, 1, 16, 64, 16)};
    rows[4].local_mem_total_bytes = 1u << 20; /* not in the old signature */
    rows[5].local_mem_total_bytes = 1u << 20;
    s.kernels(s.user, rows, 4);
    fl_gpu_limits h100 = h100_limits();
    s.device(s.user, &h100); /* occupancy known from now on */
    s.kernels(s.user, rows + 4, 2);

    /* What each line must be: the launch's detail written whole (the
     * limits known for the last two only). */
    fl_buf want = {0};
    fl_gpu_limits_fill_arch(&h100);
    fl_occupancy occ;
    CHECK(fl_occupancy_compute(&h100, &(fl_launch){.block_threads = 256, .regs_per_thread = 16},
                               &occ));
    size_t n = 0;
    json_t *L = lines_of(&dev, &n);
    CHECK_INT(n, 8); /* 4 details, a batch, 2 details, a batch */
    const char *p = dev.p;
    int details = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(L, i);
        const char *nl = strchr(p, '\n');
        if (strcmp(type_of(r), "kernel_detail") == 0) {
            fl_kernel_row *k = &rows[details];
            fl_buf_reset(&want);
            fl_rec_kernel_detail(&want, &id, k, details >= 4 ? &occ : NULL, "global", NULL);
            CHECK(nl && want.len == (size_t)(nl - p + 1) && memcmp(want.p, p, want.len) == 0);
            CHECK_INT(json_integer_value(json_object_get(r, "corr_id")), k->corr_id);
            CHECK_STR(json_string_value(json_object_get(r, "stack_trace")), "");
            details++;
        } else {
            for (size_t row = 0; row < json_array_size(json_object_get(r, "rows")); row++)
                CHECK_INT(col(r, row, "has_details"), 1);
        }
        p = nl ? nl + 1 : p;
    }
    CHECK_INT(details, 6);
    CHECK_STR(json_string_value(json_object_get(json_array_get(L, 2), "grid")), "(128,1,1)");
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(L, 5), "occupancy")), 1.0, 1e-9);
    CHECK(json_is_null(json_object_get(json_array_get(L, 3), "occupancy")));
    fl_trace_counts cnt;
    fl_trace_writer_counts(w, &cnt);
    CHECK_U64(cnt.kernels, 6);
    CHECK_U64(cnt.details, 6);
    json_decref(L);
    fl_buf_free(&want);
    fl_trace_writer_destroy(w);
    fl_buf_free(&dev);
    fl_buf_free(&scope);
    fl_buf_free(&sys);
}

/* A drain that makes the device buffer large hands it to the spill
 * callback (the session writes it out) as soon as it passes
 * FL_TRACE_SPILL_BYTES: whole lines, in order, nothing lost. */
static fl_buf g_spilled;
static int g_spills;
static void spill(void *user, fl_buf *b)
{
    CHECK(user == &g_spills);
    CHECK(b->len >= FL_TRACE_SPILL_BYTES);
    CHECK(b->len && b->p[b->len - 1] == '\n');
    fl_buf_put(&g_spilled, b->p, b->len);
    fl_buf_reset(b);
    g_spills++;
}

static void test_spill(void)
{
    fl_buf dev = {0}, scope = {0}, sys = {0};
    fl_ident id = {4242, "app", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &dev, &scope, &sys);
    fl_trace_writer_set_spill(w, spill, &g_spills);
    fl_trace_sink s;
    fl_trace_writer_sink(w, &s);
    enum { ROWS = 1024, BATCHES = 6 };
    static fl_kernel_row rows[ROWS];
    for (int b = 0; b < BATCHES; b++) {
        for (int i = 0; i < ROWS; i++)
            rows[i] = kernel((uint64_t)(b * ROWS + i) * 1000, 1 + (uint32_t)i % 3,
                             (uint32_t)(b * ROWS + i), 64, 16);
        s.kernels(s.user, rows, ROWS);
        CHECK(dev.len < FL_TRACE_SPILL_BYTES);
    }
    CHECK(g_spills >= 2);
    fl_buf_put(&g_spilled, dev.p ? dev.p : "", dev.len);
    size_t n = 0;
    json_t *L = lines_of(&g_spilled, &n);
    CHECK_INT(n, BATCHES * (ROWS + 1));
    CHECK_INT(json_integer_value(json_object_get(json_array_get(L, n - 2), "corr_id")),
              BATCHES * ROWS - 1);
    json_decref(L);
    fl_trace_writer_destroy(w);
    fl_buf_free(&g_spilled);
    fl_buf_free(&dev);
    fl_buf_free(&scope);
    fl_buf_free(&sys);
}

/* Many NVTX ranges open at once and ended in a scrambled order (the open
 * ranges' table grows and closes its gaps): each written once, with its
 * own begin's name and time; the ones never ended at shutdown. */
static void test_many_ranges(void)
{
    fl_buf dev = {0}, scope = {0}, sys = {0};
    fl_ident id = {4242, "app", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, 1, &dev, &scope, &sys);
    fl_trace_sink s;
    fl_trace_writer_sink(w, &s);
    enum { N = 3000 };
    static char names[N][16];
    for (uint64_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "r%llu", (unsigned long long)i);
        /* Ids spread as CUPTI's are not: a multiplicative scramble. */
        fl_marker_row m = {.t_ns = 1000 + i, .marker_id = i * 2654435761u + 1, .name = names[i]};
        s.markers(s.user, &m, 1);
    }
    /* End all but every tenth, in a scrambled order. */
    uint64_t x = 88172645463325252ull;
    static bool ended[N];
    size_t n_end = 0;
    while (n_end < N - N / 10) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t i = x % N;
        if (ended[i] || i % 10 == 0)
            continue;
        ended[i] = true;
        n_end++;
        fl_marker_row m = {.t_ns = 100000 + i, .marker_id = i * 2654435761u + 1, .is_end = 1};
        s.markers(s.user, &m, 1);
    }
    fl_trace_writer_close_ranges(w, 500000);
    size_t n = 0;
    json_t *L = lines_of(&scope, &n);
    CHECK_INT(n, N);
    static int seen[N];
    int open_flags = 0;
    for (size_t k = 0; k < n; k++) {
        json_t *r = json_array_get(L, k);
        uint64_t i =
            (uint64_t)strtoull(json_string_value(json_object_get(r, "name")) + 1, NULL, 10);
        CHECK(i < N);
        if (i >= N)
            continue;
        seen[i]++;
        CHECK_U64((uint64_t)json_integer_value(json_object_get(r, "start_ns")), 1000 + i);
        CHECK_U64((uint64_t)json_integer_value(json_object_get(r, "marker_id")),
                  i * 2654435761u + 1);
        bool open = json_object_get(r, "open_at_shutdown") != NULL;
        open_flags += open;
        CHECK_INT(open, i % 10 == 0);
        CHECK_U64((uint64_t)json_integer_value(json_object_get(r, "end_ns")),
                  open ? 500000 : 100000 + i);
    }
    for (size_t i = 0; i < N; i++)
        CHECK_INT(seen[i], 1);
    CHECK_INT(open_flags, N / 10);
    json_decref(L);
    fl_trace_writer_destroy(w);
    fl_buf_free(&dev);
    fl_buf_free(&scope);
    fl_buf_free(&sys);
}

/* The scopes a thread has open, as the launch callback reads them, and
 * kernel_detail's user_scope built from them. */
static void test_user_scope(void)
{
    uint32_t gen = 77;
    fl_scope_session_begin(gen, false, false, NULL);
    uint32_t ids[FL_SCOPE_PATH_MAX + 2];
    CHECK_INT(fl_scope_current_path(ids, FL_SCOPE_PATH_MAX), 0);
    gpufl_scope a = gpufl_scope_begin("train");
    gpufl_scope b = gpufl_scope_begin("step");
    CHECK_INT(fl_scope_current_path(ids, FL_SCOPE_PATH_MAX), 2);
    uint32_t train = ids[0], step = ids[1];
    CHECK_STR(fl_scope_name_of(gen, train), "train");
    CHECK_STR(fl_scope_name_of(gen, step), "step");
    CHECK(fl_scope_name_of(gen, 999) == NULL);
    CHECK(fl_scope_name_of(gen + 1, train) == NULL);
    CHECK_INT(fl_scope_current_path(ids, 1), 1); /* cap */
    /* Deeper than FL_SCOPE_PATH_MAX: the outermost ones are kept. */
    gpufl_scope deep[FL_SCOPE_PATH_MAX];
    for (int i = 0; i < FL_SCOPE_PATH_MAX; i++)
        deep[i] = gpufl_scope_begin("deep");
    CHECK_INT(fl_scope_current_path(ids, FL_SCOPE_PATH_MAX + 2), FL_SCOPE_PATH_MAX);
    CHECK_INT(ids[0], train);
    for (int i = FL_SCOPE_PATH_MAX; i-- > 0;)
        gpufl_scope_end(&deep[i]);
    gpufl_scope_end(&b);
    CHECK_INT(fl_scope_current_path(ids, FL_SCOPE_PATH_MAX), 1);
    gpufl_scope_end(&a);
    CHECK_INT(fl_scope_current_path(ids, FL_SCOPE_PATH_MAX), 0);

    fl_buf dev = {0}, scope = {0}, sys = {0};
    fl_ident id = {4242, "app", SID};
    fl_trace_writer *w = fl_trace_writer_create(&id, gen, &dev, &scope, &sys);
    fl_trace_sink s;
    fl_trace_writer_sink(w, &s);
    fl_kernel_row k[4] = {kernel(100, 1, 1, 64, 16), kernel(200, 1, 2, 64, 16),
                          kernel(300, 1, 3, 64, 16), kernel(400, 1, 4, 64, 16)};
    k[0].scope_depth = 2;
    k[0].scope_ids[0] = train;
    k[0].scope_ids[1] = step;
    k[1] = k[0]; /* same scopes, same configuration: the same detail, its corr_id */
    k[1].t_ns = 200;
    k[1].corr_id = 2;
    k[2].scope_depth = 0;                /* launched outside any scope */
    k[3].scope_depth = FL_SCOPE_UNKNOWN; /* no callback saw it */
    s.kernels(s.user, k, 4);
    size_t n = 0;
    json_t *L = lines_of(&dev, &n);
    const char *want[5] = {"train|step", "train|step", "global", NULL};
    int details = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(L, i);
        if (strcmp(type_of(r), "kernel_detail") != 0)
            continue;
        details++;
        json_int_t c = json_integer_value(json_object_get(r, "corr_id"));
        json_t *us = json_object_get(r, "user_scope");
        if (c == 4)
            CHECK(json_is_null(us));
        else
            CHECK_STR(json_string_value(us), want[c - 1]);
    }
    CHECK_INT(details, 4);
    json_decref(L);
    fl_trace_writer_destroy(w);
    fl_buf_free(&dev);
    fl_buf_free(&scope);
    fl_buf_free(&sys);
    fl_scope_session_end();
}

int main(void)
{
    test_kernels_compact();
    test_kernels_per_launch();
    test_spill();
    test_many_ranges();
    test_other_records();
    test_user_scope();
    return check_done("test_gpufl_trace_writer");
}
