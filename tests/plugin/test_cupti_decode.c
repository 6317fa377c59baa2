/*
 * test_cupti_decode.c - the plugin's decoder (plugin/decode.c) on synthetic
 * activity buffers built from the installed toolkit's CUPTI structs
 * (tests/cupti/synth.h), walked by the real libcupti.
 *
 * Covers every kind the decoder handles, kinds it skips, a record CUPTI
 * cannot parse, a buffer cut inside a record, batching at FL_TRACE_BATCH,
 * name interning and demangling, external correlation, NVTX depths, the
 * device-limits callback and the clock offset - with exact values.
 */
#include "check.h"
#include "decode.h"
#include "synth.h"

#include <pthread.h>

#define OFF 1000000000000ll /* wall = CUPTI + OFF */

/* A sink that keeps copies of what it was given, in call order. */
#define MAXR 8192
static struct {
    fl_kernel_row k[MAXR];
    fl_memcpy_row mc[64];
    fl_memset_row ms[64];
    fl_sync_row sy[64];
    fl_alloc_row al[64];
    fl_graph_row gr[64];
    fl_marker_row mk[64];
    char mk_names[64][32];
    size_t nk, nmc, nms, nsy, nal, ngr, nmk;
    uint32_t name_ids[64];
    char names[64][128];
    size_t n_names;
    size_t kernel_calls, kernel_call_sizes[16];
    uint32_t devices[8];
    size_t n_devices;
    /* Order checks: names and devices announced before the kernel rows. */
    size_t kernels_when_names[64];
    size_t kernels_when_device[8];
} got;

static void s_names(void *u, const uint32_t *ids, const char *const *names, size_t n)
{
    (void)u;
    for (size_t i = 0; i < n && got.n_names < 64; i++) {
        got.name_ids[got.n_names] = ids[i];
        snprintf(got.names[got.n_names], sizeof got.names[0], "%s", names[i]);
        got.kernels_when_names[got.n_names++] = got.nk;
    }
}
static void s_device(void *u, const fl_gpu_limits *l)
{
    (void)u;
    got.kernels_when_device[got.n_devices] = got.nk;
    got.devices[got.n_devices++] = l->device_id;
}
static void s_kernels(void *u, fl_kernel_row *r, size_t n)
{
    (void)u;
    if (got.kernel_calls < 16)
        got.kernel_call_sizes[got.kernel_calls] = n;
    got.kernel_calls++;
    for (size_t i = 0; i < n && got.nk < MAXR; i++)
        got.k[got.nk++] = r[i];
}
#define KEEP(fn, type, arr, cnt)                                                                   \
    static void fn(void *u, type *r, size_t n)                                                     \
    {                                                                                              \
        (void)u;                                                                                   \
        for (size_t i = 0; i < n && got.cnt < 64; i++)                                             \
            got.arr[got.cnt++] = r[i];                                                             \
    }
KEEP(s_memcpys, fl_memcpy_row, mc, nmc)
KEEP(s_memsets, fl_memset_row, ms, nms)
KEEP(s_syncs, fl_sync_row, sy, nsy)
KEEP(s_allocs, fl_alloc_row, al, nal)
KEEP(s_graphs, fl_graph_row, gr, ngr)
static void s_markers(void *u, fl_marker_row *r, size_t n)
{
    (void)u;
    for (size_t i = 0; i < n && got.nmk < 64; i++) {
        snprintf(got.mk_names[got.nmk], sizeof got.mk_names[0], "%s", r[i].name ? r[i].name : "");
        got.mk[got.nmk] = r[i];
        got.mk[got.nmk++].name = NULL; /* only valid during the call */
    }
}

static const fl_trace_sink sink = {NULL,      s_names, s_device, s_kernels, s_memcpys,
                                   s_memsets, s_syncs, s_allocs, s_graphs,  s_markers};

static int limits_calls;
static bool limits(uint32_t dev, fl_gpu_limits *out, void *user)
{
    (void)user;
    limits_calls++;
    out->sm_count = 132;
    out->cc_major = 9;
    return dev == 0; /* device 1: unknown */
}

static fl_decoder *make(void)
{
    memset(&got, 0, sizeof got);
    limits_calls = 0;
    fl_decoder_config c = {.clock_offset_ns = OFF, .limits = limits, .demangle = true};
    return fl_decoder_create(&c);
}

/* Names CUPTI would hand out: the same text at two addresses (two
 * modules), and a mangled template. */
static char vec_a[] = "_Z6vecAddPKfS0_Pfi";
static char vec_b[] = "_Z6vecAddPKfS0_Pfi";
static const char *gemm = "_Z4gemmILi128EEvPKfS1_Pf";
static const char *plain = "my_c_kernel";

static void test_every_kind(void)
{
    fl_decoder *d = make();
    synth s;
    synth_init(&s, 1 << 16);
    CHECK(synth_external(&s, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 777, 11));
    CHECK(synth_kernel(&s, vec_a, 100, 150, 11, 7, 0, 4096, 256, 16, 0, 0));
    CHECK(synth_kernel(&s, vec_b, 200, 260, 12, 7, 0, 4096, 256, 16, 0, 0));
    CHECK(synth_kernel(&s, gemm, 300, 1300, 13, 8, 1, 64, 256, 64, 8192, 4096));
    CHECK(synth_kernel(&s, plain, 1400, 1400, 14, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_memcpy(&s, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4194304, 50, 90, 10, 7));
    CHECK(synth_memcpy(&s, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 1024, 1500, 1510, 15, 7));
    CHECK(synth_peer(&s, 65536, 1600, 1650, 16, 0, 1));
    CHECK(synth_memset(&s, 2048, 0xab, 1700, 1705, 17));
    CHECK(
        synth_sync(&s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1710, 1800, 18, 7));
    CHECK(synth_memory(&s, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000000000ull,
                       1 << 20, 40, 9));
    CHECK(synth_memory(&s, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f0000000000ull, 1 << 20,
                       1900, 19));
    fl_graph_exec_put(20, 0x7f00c0de0000ull); /* its cudaGraphLaunch callback's handle */
    fl_graph_exec_put(21, 0xbad);             /* another call's: not this record's */
    CHECK(synth_graph(&s, 3, 2000, 2600, 20));
    CHECK(synth_marker(&s, CUPTI_ACTIVITY_FLAG_MARKER_START, 1, "epoch", 10, 42));
    CHECK(synth_marker_domain(&s, CUPTI_ACTIVITY_FLAG_MARKER_START, 2, "step", "trainer", 20, 42));
    CHECK(synth_marker(&s, CUPTI_ACTIVITY_FLAG_MARKER_END, 2, NULL, 2700, 42));
    CHECK(synth_marker(&s, CUPTI_ACTIVITY_FLAG_MARKER_END, 1, NULL, 2800, 42));
    CHECK(synth_marker(&s, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, "tick", 2900, 43));
    CHECK(synth_overhead(&s, 3000, 3250));
    CHECK(synth_context(&s));
    fl_decoder_feed(d, &sink, s.p, s.len);
    /* Nothing is handed over before a batch fills or a flush. */
    CHECK_INT(got.nk, 0);
    fl_decoder_flush(d, &sink);

    CHECK_INT(got.nk, 4);
    CHECK_INT(got.n_names, 3);
    CHECK_INT(got.name_ids[0], 1);
    CHECK_STR(got.names[0], "vecAdd(float const*, float const*, float*, int)");
    CHECK_INT(got.name_ids[1], 2);
    CHECK_STR(got.names[1], "void gemm<128>(float const*, float const*, float*)");
    CHECK_INT(got.name_ids[2], 3);
    CHECK_STR(got.names[2], "my_c_kernel");
    CHECK_INT(got.kernels_when_names[0], 0);
    CHECK_INT(got.kernels_when_names[2], 0);

    const fl_kernel_row *k = got.k;
    CHECK_U64(k[0].t_ns, 100 + OFF);
    CHECK_U64(k[0].duration_ns, 50);
    CHECK_INT(k[0].kernel_id, 1);
    CHECK_INT(k[1].kernel_id, 1); /* same text, other pointer */
    CHECK_INT(k[2].kernel_id, 2);
    CHECK_INT(k[3].kernel_id, 3);
    CHECK_INT(k[0].corr_id, 11);
    CHECK_INT(k[0].stream_id, 7);
    CHECK_INT(k[0].external_kind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
    CHECK_U64(k[0].external_id, 777);
    CHECK_INT(k[1].external_kind, 0);
    CHECK_U64(k[1].external_id, 0);
    CHECK_INT(k[2].grid[0], 64);
    CHECK_INT(k[2].grid[1], 1);
    CHECK_INT(k[2].block[0], 256);
    CHECK_INT(k[2].num_regs, 64);
    CHECK_INT(k[2].static_smem_bytes, 8192);
    CHECK_INT(k[2].dynamic_smem_bytes, 4096);
    CHECK_INT(k[2].device_id, 1);
    CHECK_U64(k[3].duration_ns, 0);
    CHECK_INT(k[0].has_details, 0); /* the core's sink decides */

    /* Limits asked once per device, announced before the kernel rows;
     * device 1's are unknown, so it is not announced. */
    CHECK_INT(limits_calls, 2);
    CHECK_INT(got.n_devices, 1);
    CHECK_INT(got.devices[0], 0);
    CHECK_INT(got.kernels_when_device[0], 0);

    CHECK_INT(got.nmc, 3);
    CHECK_INT(got.mc[0].copy_kind, 1);
    CHECK_U64(got.mc[0].bytes, 4194304);
    CHECK_U64(got.mc[0].t_ns, 50 + OFF);
    CHECK_U64(got.mc[0].duration_ns, 40);
    CHECK_INT(got.mc[0].peer, 0);
    CHECK_INT(got.mc[1].copy_kind, 2);
    CHECK_INT(got.mc[2].copy_kind, 10);
    CHECK_INT(got.mc[2].peer, 1);
    CHECK_INT(got.mc[2].src_device_id, 0);
    CHECK_INT(got.mc[2].dst_device_id, 1);
    CHECK_U64(got.mc[2].bytes, 65536);

    CHECK_INT(got.nms, 1);
    CHECK_U64(got.ms[0].bytes, 2048);
    CHECK_INT(got.ms[0].value, 0xab);
    CHECK_U64(got.ms[0].duration_ns, 5);
    CHECK_INT(got.ms[0].corr_id, 17);

    CHECK_INT(got.nsy, 1);
    CHECK_INT(got.sy[0].sync_type, 3);
    CHECK_U64(got.sy[0].duration_ns, 90);
    CHECK_INT(got.sy[0].stream_id, 7);

    CHECK_INT(got.nal, 2);
    CHECK_INT(got.al[0].memory_op, 1);
    CHECK_INT(got.al[1].memory_op, 2);
    CHECK_U64(got.al[0].address, 0x7f0000000000ull);
    CHECK_U64(got.al[0].bytes, 1 << 20);
    CHECK_U64(got.al[1].t_ns, 1900 + OFF);
    CHECK_U64(got.al[1].duration_ns, 0);

    CHECK_INT(got.ngr, 1);
    CHECK_INT(got.gr[0].graph_id, 3);
    CHECK_U64(got.gr[0].duration_ns, 600);
    CHECK_INT(got.gr[0].corr_id, 20);
    CHECK_U64(got.gr[0].exec_key, 0x7f00c0de0000ull);

    /* epoch(depth 0) > step(depth 1); the mark is a zero-length scope. */
    CHECK_INT(got.nmk, 6);
    CHECK_STR(got.mk_names[0], "epoch");
    CHECK_INT(got.mk[0].depth, 0);
    CHECK_INT(got.mk[0].is_end, 0);
    CHECK_STR(got.mk_names[1], "step");
    CHECK_INT(got.mk[1].depth, 1);
    /* The domain of a begin (NULL: the default domain), none on an end. */
    CHECK(got.mk[0].domain == NULL);
    CHECK_STR(got.mk[1].domain, "trainer");
    CHECK(got.mk[2].domain == NULL);
    CHECK_INT(got.mk[2].is_end, 1);
    CHECK_U64(got.mk[2].marker_id, 2);
    CHECK_INT(got.mk[2].depth, 1);
    CHECK_INT(got.mk[3].depth, 0);
    CHECK_U64(got.mk[3].t_ns, 2800 + OFF);
    CHECK_STR(got.mk_names[4], "tick");
    CHECK_INT(got.mk[5].is_end, 1);
    CHECK_U64(got.mk[4].t_ns, got.mk[5].t_ns);

    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_decoder_stats(d, &st);
    CHECK_U64(st.kernels, 4);
    CHECK_U64(st.memcpys, 3);
    CHECK_U64(st.memsets, 1);
    CHECK_U64(st.syncs, 1);
    CHECK_U64(st.allocs, 2);
    CHECK_U64(st.graphs, 1);
    CHECK_U64(st.markers, 5);
    CHECK_U64(st.external, 1);
    CHECK_U64(st.other_records, 1); /* the context record */
    CHECK_U64(st.bad_buffers, 0);
    CHECK_U64(st.overhead_records, 1);
    CHECK_U64(st.overhead_ns, 250);

    /* A second buffer: known names are not announced again. */
    synth s2;
    synth_init(&s2, 4096);
    CHECK(synth_kernel(&s2, vec_a, 5000, 5100, 30, 7, 0, 1, 32, 8, 0, 0));
    fl_decoder_feed(d, &sink, s2.p, s2.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.n_names, 3);
    CHECK_INT(got.nk, 5);
    CHECK_INT(got.k[4].kernel_id, 1);
    CHECK_INT(limits_calls, 2);
    synth_free(&s2);
    synth_free(&s);
    fl_decoder_destroy(d);
}

static void test_bad_and_partial(void)
{
    fl_decoder *d = make();
    synth s;
    synth_init(&s, 8192);
    CHECK(synth_kernel(&s, plain, 1, 2, 1, 7, 0, 1, 32, 0, 0, 0));
    size_t after_first = s.len;
    CHECK(synth_kernel(&s, plain, 3, 4, 2, 7, 0, 1, 32, 0, 0, 0));
    /* Cut inside the second record: only the first is read. */
    fl_decoder_feed(d, &sink, s.p, after_first + 40);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nk, 1);
    CHECK_INT(got.k[0].corr_id, 1);

    /* An unknown kind ends the buffer: what came before it is kept. */
    synth b;
    synth_init(&b, 8192);
    CHECK(synth_kernel(&b, plain, 5, 6, 3, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_garbage(&b));
    CHECK(synth_kernel(&b, plain, 7, 8, 4, 7, 0, 1, 32, 0, 0, 0));
    fl_decoder_feed(d, &sink, b.p, b.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nk, 2);
    CHECK_INT(got.k[1].corr_id, 3);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_decoder_stats(d, &st);
    CHECK_U64(st.bad_buffers, 1);
    CHECK_U64(st.kernels, 2);

    /* Empty and NULL inputs do nothing. */
    fl_decoder_feed(d, &sink, b.p, 0);
    fl_decoder_feed(d, &sink, NULL, 64);
    fl_decoder_feed(NULL, &sink, b.p, b.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nk, 2);
    fl_decoder_destroy(NULL);
    synth_free(&b);
    synth_free(&s);
    fl_decoder_destroy(d);
}

static void test_batches(void)
{
    fl_decoder *d = make();
    synth s;
    size_t n = 2500;
    synth_init(&s, n * sizeof(CUpti_ActivityKernel10) + 64);
    for (size_t i = 0; i < n; i++)
        CHECK(synth_kernel(&s, plain, 10 * i, 10 * i + 5, (uint32_t)i + 1, 7, 0, 1, 32, 0, 0, 0));
    fl_decoder_feed(d, &sink, s.p, s.len);
    /* Two full batches went out during the feed, the rest at the flush. */
    CHECK_INT(got.kernel_calls, 2);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.kernel_calls, 3);
    CHECK_INT(got.kernel_call_sizes[0], FL_TRACE_BATCH);
    CHECK_INT(got.kernel_call_sizes[1], FL_TRACE_BATCH);
    CHECK_INT(got.kernel_call_sizes[2], n - 2 * FL_TRACE_BATCH);
    CHECK_INT(got.nk, n);
    bool in_order = true;
    for (size_t i = 0; i < n; i++)
        in_order &= got.k[i].corr_id == i + 1;
    CHECK(in_order);
    synth_free(&s);
    fl_decoder_destroy(d);
}

/* More names than the name tables' first sizes: each keeps its id as the
 * tables grow, by pointer and (another copy's address) by text. */
static void test_many_names(void)
{
    enum { N = 1000 };
    static char first[N][16], again[N][16];
    for (unsigned i = 0; i < N; i++) {
        snprintf(first[i], sizeof first[i], "k%u", i);
        snprintf(again[i], sizeof again[i], "k%u", i);
    }
    fl_decoder *d = make();
    synth s;
    synth_init(&s, 3 * N * sizeof(CUpti_ActivityKernel10) + 64);
    for (unsigned pass = 0; pass < 3; pass++)
        for (unsigned i = 0; i < N; i++)
            CHECK(synth_kernel(&s, pass < 2 ? first[i] : again[i], 10 * i, 10 * i + 5,
                               pass * N + i + 1, 7, 0, 1, 32, 0, 0, 0));
    fl_decoder_feed(d, &sink, s.p, s.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nk, 3 * N);
    size_t wrong = 0;
    for (size_t r = 0; r < got.nk; r++)
        wrong += got.k[r].kernel_id != r % N + 1;
    CHECK_INT(wrong, 0);
    synth_free(&s);
    fl_decoder_destroy(d);
}

static void test_external_table(void)
{
    /* Correlation ids that collide in the direct-mapped table: the later
     * one wins, the earlier kernel gets none (never a wrong one). */
    fl_decoder *d = make();
    synth s;
    synth_init(&s, 8192);
    CHECK(synth_external(&s, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1, 5));
    CHECK(synth_external(&s, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 2, 5 + 16384));
    CHECK(synth_kernel(&s, plain, 1, 2, 5, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_kernel(&s, plain, 3, 4, 5 + 16384, 7, 0, 1, 32, 0, 0, 0));
    fl_decoder_feed(d, &sink, s.p, s.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nk, 2);
    CHECK_U64(got.k[0].external_id, 0);
    CHECK_U64(got.k[1].external_id, 2);
    synth_free(&s);
    fl_decoder_destroy(d);
}

/* Launch threads record scopes while the writer decodes: each kernel gets
 * exactly its own launch's scopes, or none. */
static void *launcher(void *arg)
{
    uint32_t base = (uint32_t)(uintptr_t)arg;
    for (uint32_t i = 0; i < 20000; i++) {
        uint32_t ids[3] = {base, base + 1, i % 7};
        fl_launch_scope_put(base * 100000 + i, ids, 1 + i % 3);
    }
    return NULL;
}

static void test_launch_scopes(void)
{
    memset(&got, 0, sizeof got);
    fl_decoder_config c = {.clock_offset_ns = 0, .demangle = false, .scopes = true};
    fl_decoder *d = fl_decoder_create(&c);
    uint32_t outer_inner[2] = {3, 4};
    fl_launch_scope_put(11, outer_inner, 2);
    fl_launch_scope_put(12, NULL, 0);
    /* 5 and 5 + 65536 share a slot: the later launch wins, 5 is unknown. */
    fl_launch_scope_put(5, outer_inner, 1);
    fl_launch_scope_put(5 + 65536, outer_inner, 2);
    synth s;
    synth_init(&s, 8192);
    CHECK(synth_kernel(&s, plain, 1, 2, 11, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_kernel(&s, plain, 3, 4, 12, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_kernel(&s, plain, 5, 6, 13, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_kernel(&s, plain, 7, 8, 5, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_kernel(&s, plain, 9, 10, 5 + 65536, 7, 0, 1, 32, 0, 0, 0));
    CHECK(synth_kernel(&s, plain, 11, 12, 11, 7, 0, 1, 32, 0, 0, 0)); /* a graph's next node */
    fl_decoder_feed(d, &sink, s.p, s.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nk, 6);
    CHECK_INT(got.k[0].scope_depth, 2);
    CHECK_INT(got.k[0].scope_ids[0], 3);
    CHECK_INT(got.k[0].scope_ids[1], 4);
    CHECK_INT(got.k[1].scope_depth, 0);
    CHECK_INT(got.k[2].scope_depth, FL_SCOPE_UNKNOWN);
    CHECK_INT(got.k[3].scope_depth, FL_SCOPE_UNKNOWN);
    CHECK_INT(got.k[4].scope_depth, 2);
    CHECK_INT(got.k[5].scope_depth, 2);
    fl_decoder_destroy(d);

    /* Without launch callbacks nothing is attributed. */
    c.scopes = false;
    d = fl_decoder_create(&c);
    fl_launch_scope_put(11, outer_inner, 2);
    memset(&got, 0, sizeof got);
    fl_decoder_feed(d, &sink, s.p, s.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.k[0].scope_depth, FL_SCOPE_UNKNOWN);
    fl_decoder_destroy(d);
    fl_launch_scope_reset();

    /* Four launching threads against a decoding one (ThreadSanitizer). */
    c.scopes = true;
    d = fl_decoder_create(&c);
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, launcher, (void *)(i + 1));
    synth b;
    synth_init(&b, 2000 * sizeof(CUpti_ActivityKernel10) + 64);
    for (uint32_t i = 0; i < 2000; i++)
        CHECK(synth_kernel(&b, plain, i, i + 1, 100000 + i * 10, 7, 0, 1, 32, 0, 0, 0));
    bool consistent = true;
    for (int round = 0; round < 5; round++) {
        memset(&got, 0, sizeof got);
        fl_decoder_feed(d, &sink, b.p, b.len);
        fl_decoder_flush(d, &sink);
        for (size_t i = 0; i < got.nk; i++) {
            const fl_kernel_row *k = &got.k[i];
            uint32_t base = k->corr_id / 100000, idx = k->corr_id % 100000;
            if (k->scope_depth == FL_SCOPE_UNKNOWN)
                continue;
            consistent &= k->scope_depth == 1 + idx % 3 && k->scope_ids[0] == base;
        }
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(consistent);
    synth_free(&b);
    synth_free(&s);
    fl_decoder_destroy(d);
    fl_launch_scope_reset();
}

/* Allocation calls timed by the API callbacks: the MEMORY2 row of the
 * operation gets its call's duration (by correlation id), or 0. */
static void test_memop_durations(void)
{
    memset(&got, 0, sizeof got);
    fl_decoder_config c = {.clock_offset_ns = 0, .memop_durations = true};
    fl_decoder *d = fl_decoder_create(&c);
    fl_memop_duration_put(40, 1234);
    fl_memop_duration_put(41, 99);
    synth s;
    synth_init(&s, 4096);
    CHECK(synth_memory(&s, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 64, 5, 40));
    CHECK(synth_memory(&s, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 64, 9, 41));
    CHECK(synth_memory(&s, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x2000, 64, 12, 42));
    fl_decoder_feed(d, &sink, s.p, s.len);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.nal, 3);
    CHECK_U64(got.al[0].duration_ns, 1234);
    CHECK_U64(got.al[1].duration_ns, 99);
    CHECK_U64(got.al[2].duration_ns, 0); /* no call timed */
    fl_decoder_destroy(d);
    /* Not timed: 0. */
    memset(&got, 0, sizeof got);
    c.memop_durations = false;
    d = fl_decoder_create(&c);
    fl_decoder_feed(d, &sink, s.p, s.len);
    fl_decoder_flush(d, &sink);
    CHECK_U64(got.al[0].duration_ns, 0);
    fl_decoder_destroy(d);
    synth_free(&s);
}

static void test_demangle(void)
{
    char out[256];
    fl_demangle("_Z3fooi", out, sizeof out);
    CHECK_STR(out, "foo(int)");
    fl_demangle("not_mangled", out, sizeof out);
    CHECK_STR(out, "not_mangled");
    fl_demangle("_Z_broken", out, sizeof out);
    CHECK_STR(out, "_Z_broken");
    fl_demangle(NULL, out, sizeof out);
    CHECK_STR(out, "<unknown>");
    fl_demangle("_Z3fooi", out, 4);
    CHECK_STR(out, "foo");
}

int main(void)
{
    test_every_kind();
    test_bad_and_partial();
    test_batches();
    test_many_names();
    test_external_table();
    test_launch_scopes();
    test_memop_durations();
    test_demangle();
    return check_done("test_cupti_decode");
}
