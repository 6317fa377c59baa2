/*
 * test_cupti_sassmetrics.c - the SassMetrics engine's plugin side without
 * a GPU.
 *
 *  - the decoder (plugin/engines/sassmetrics/sassmetrics_decode.c) on CUpti_SassMetrics_Data
 *    records built from the toolkit's own structs: rows per (device,
 *    function, PC offset, metric) with sample_kind 1 and corr_id 0, values
 *    summed over records and reads, zero values making no row, metric ids
 *    named per device and unknown ids as "metric_<id>", a function named
 *    once per (cubin CRC, symbol index) whatever CUPTI's name pointer,
 *    dictionaries before rows, the table full with and without a sink;
 *  - source lines through the cubins kept by common/cubins.c with the 32-bit
 *    CRC the SASS API gives, on the checked-in cubins (real libcupti);
 *  - the engine (plugin/engines/sassmetrics/sassmetrics.c) with CUPTI's answers injected
 *    (fl_sass_set_api): the call order (Profiler init, chip, properties,
 *    SetConfig, Enable; GetDataProperties then FlushData at a collection
 *    point; Disable, UnsetConfig, DeInitialize at the end), lazy patching,
 *    sass_config with the skipped metrics, a context destroyed before the
 *    drain, and every fall-back (permission, not supported, MIG, vGPU,
 *    another profiler, every metric refused) with its reason and fix;
 *  - Deep: the decoder over PC sampling's aggregator (one set of
 *    dictionaries, the shared lock, rows counted once), the engine
 *    refusing without it;
 *  - the fall-back with the real libcupti and no driver, and under Deep
 *    after CUDA work (the late-start advice).
 */
#include "check.h"
#include "sass_fake.h"
#include "engines/sassmetrics/sassmetrics.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

/* ------------------------------------------------------------ the sink */

#define MAXR 4096
static struct {
    fl_sample_row r[MAXR];
    size_t n, calls;
    char names[3][64][160];
    uint32_t ids[3][64];
    size_t n_names[3];
    size_t rows_when_names[3];
    int configs;
    uint32_t config_dev;
    char configured[512], skipped[512];
} got;

static void s_names(void *u, int dict, const uint32_t *ids, const char *const *names, size_t n)
{
    (void)u;
    for (size_t i = 0; i < n && got.n_names[dict] < 64; i++) {
        size_t k = got.n_names[dict]++;
        got.ids[dict][k] = ids[i];
        snprintf(got.names[dict][k], sizeof got.names[dict][k], "%s", names[i]);
    }
    got.rows_when_names[dict] = got.n;
}

static void s_samples(void *u, fl_sample_row *r, size_t n)
{
    (void)u;
    got.calls++;
    for (size_t i = 0; i < n && got.n < MAXR; i++)
        got.r[got.n++] = r[i];
}

static void join(char *out, size_t cap, const char *const *v, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", v[i]);
}

static void s_config(void *u, uint32_t dev, const char *const *ok, size_t n_ok,
                     const char *const *skipped, size_t n_skipped)
{
    (void)u;
    got.configs++;
    got.config_dev = dev;
    join(got.configured, sizeof got.configured, ok, n_ok);
    join(got.skipped, sizeof got.skipped, skipped, n_skipped);
}

static fl_trace_sink sink = {
    .sample_names = s_names, .samples = s_samples, .sass_config = s_config};

static void reset_got(void)
{
    memset(&got, 0, sizeof got);
}

static const char *dict_name(int dict, uint32_t id)
{
    for (size_t i = 0; i < got.n_names[dict]; i++)
        if (got.ids[dict][i] == id)
            return got.names[dict][i];
    return "(none)";
}

/* The row of (device, function name, pc, metric name). */
static const fl_sample_row *row_of(uint32_t dev, const char *fn, uint64_t pc, const char *metric)
{
    for (size_t i = 0; i < got.n; i++) {
        const fl_sample_row *r = &got.r[i];
        if (r->device_id == dev && r->pc_offset == pc &&
            strcmp(dict_name(FL_SAMPLE_DICT_FUNCTION, r->function_id), fn) == 0 &&
            strcmp(dict_name(FL_SAMPLE_DICT_METRIC, r->metric_id), metric) == 0)
            return r;
    }
    return NULL;
}

static uint64_t value_of(uint32_t dev, const char *fn, uint64_t pc, const char *metric)
{
    const fl_sample_row *r = row_of(dev, fn, pc, metric);
    return r ? r->samples : 0;
}

/* A record of the toolkit's struct with n values. */
static CUpti_SassMetrics_Data rec(uint32_t crc, uint32_t fn_index, const char *fn, uint32_t pc,
                                  CUpti_SassMetrics_InstanceValue *v)
{
    CUpti_SassMetrics_Data d;
    memset(&d, 0, sizeof d);
    d.structSize = sizeof d;
    d.cubinCrc = crc;
    d.functionIndex = fn_index;
    d.functionName = fn;
    d.pcOffset = pc;
    d.pInstanceValues = v;
    return d;
}

/* ------------------------------------------------------------ decoder */

static void test_decoder(void)
{
    reset_got();
    fl_sass *x = fl_sass_create(NULL);
    CHECK(x != NULL);
    fl_sass_metric_name(x, 0, 7, "smsp__sass_inst_executed");
    fl_sass_metric_name(x, 0, 8, "smsp__sass_thread_inst_executed");
    fl_sass_metric_name(x, 1, 7, "smsp__sass_sectors_mem_global"); /* same id, other chip */
    /* Two metrics per record (two instances each), a zero value, an
     * unknown id; the name of the same function in two buffers; two
     * functions of one cubin under one functionIndex (as CUPTI 13.0 gave
     * them on an H200): told apart by name. */
    char name_a[] = "_Z6vecAddPfS_S_i", name_b[] = "_Z6vecAddPfS_S_i";
    CUpti_SassMetrics_InstanceValue v[4][2] = {
        {{7, 10}, {8, 320}}, {{7, 4}, {8, 0}}, {{7, 2}, {99, 5}}, {{7, 6}, {8, 100}}};
    CUpti_SassMetrics_Data d[4] = {
        rec(0xabc, 3, name_a, 0x10, v[0]), rec(0xabc, 3, name_b, 0x20, v[1]),
        rec(0xabc, 3, "_Z4gemmPKfS0_Pf", 0x10, v[2]), rec(0xabc, 3, name_a, 0x10, v[3])};
    fl_sass_feed(x, &sink, d, 4, 2, 0, 1000);
    /* A second read, another device: the same id is another metric. */
    CUpti_SassMetrics_InstanceValue w[1][2] = {{{7, 64}, {8, 0}}};
    CUpti_SassMetrics_Data e = rec(0xabc, 3, name_b, 0x10, w[0]);
    fl_sass_feed(x, &sink, &e, 1, 2, 1, 2000);
    fl_sass_feed(x, &sink, d, 1, 2, 0, 3000); /* again: sums */
    fl_sass_feed(x, &sink, NULL, 5, 2, 0, 3000);
    CHECK_INT(got.n, 0); /* nothing before the flush */
    fl_sass_flush(x, &sink);
    CHECK_INT(got.n, 6);
    CHECK_INT(got.n_names[FL_SAMPLE_DICT_FUNCTION], 2); /* vecAdd once, gemm */
    CHECK_STR(got.names[FL_SAMPLE_DICT_FUNCTION][0], "_Z6vecAddPfS_S_i@");
    CHECK_STR(got.names[FL_SAMPLE_DICT_FUNCTION][1], "_Z4gemmPKfS0_Pf@");
    CHECK_INT(got.rows_when_names[FL_SAMPLE_DICT_FUNCTION], 0);
    CHECK_INT(got.rows_when_names[FL_SAMPLE_DICT_METRIC], 0);
    const char *fa = "_Z6vecAddPfS_S_i@", *fg = "_Z4gemmPKfS0_Pf@";
    CHECK_U64(value_of(0, fa, 0x10, "smsp__sass_inst_executed"), 10 + 6 + 10);
    CHECK_U64(value_of(0, fa, 0x10, "smsp__sass_thread_inst_executed"), 320 + 100 + 320);
    CHECK_U64(value_of(0, fa, 0x20, "smsp__sass_inst_executed"), 4);
    CHECK(row_of(0, fa, 0x20, "smsp__sass_thread_inst_executed") == NULL); /* 0: no row */
    CHECK_U64(value_of(0, fg, 0x10, "smsp__sass_inst_executed"), 2);
    CHECK_U64(value_of(0, fg, 0x10, "metric_99"), 5);
    CHECK_U64(value_of(1, fa, 0x10, "smsp__sass_sectors_mem_global"), 64);
    for (size_t i = 0; i < got.n; i++) {
        CHECK_INT(got.r[i].sample_kind, FL_SAMPLE_KIND_SASS);
        CHECK_INT(got.r[i].corr_id, 0);
        CHECK_INT(got.r[i].stall_reason, 0);
        CHECK_INT(got.r[i].source_file_id, 0);
        CHECK_INT(got.r[i].scope_name_id, 0);
    }
    CHECK_U64(row_of(0, fa, 0x10, "smsp__sass_inst_executed")->t_ns, 1000); /* the first read's */
    CHECK_U64(row_of(1, fa, 0x10, "smsp__sass_sectors_mem_global")->t_ns, 2000);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_sass_stats(x, &st);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.rows, 6);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.records,
              4 + 1 + 1); /* a NULL buffer counts nothing */
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.lost_values, 0);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.no_line_values,
              10); /* the non-zero values */
    /* Nothing twice: a second flush gives nothing new. */
    size_t before = got.n;
    fl_sass_flush(x, &sink);
    CHECK_INT(got.n, before);
    fl_sass_destroy(x);
    fl_sass_destroy(NULL);
}

static void test_table_full(void)
{
    reset_got();
    fl_agg_config c = {.max_rows = 4};
    fl_sass *x = fl_sass_create(&c);
    CUpti_SassMetrics_InstanceValue v[10][1];
    CUpti_SassMetrics_Data d[10];
    for (uint32_t i = 0; i < 10; i++) {
        v[i][0] = (CUpti_SassMetrics_InstanceValue){7, i + 1};
        d[i] = rec(1, 1, "_Z1kv", 16 * i, v[i]);
    }
    /* Without a sink: 4 rows kept, the rest counted lost. */
    fl_sass_feed(x, NULL, d, 10, 1, 0, 5);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_sass_stats(x, &st);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.lost_values, 5 + 6 + 7 + 8 + 9 + 10);
    fl_sass_flush(x, &sink);
    CHECK_INT(got.n, 4);
    /* With one: handed over when full, nothing lost. */
    reset_got();
    fl_sass_feed(x, &sink, d, 10, 1, 0, 5);
    fl_sass_flush(x, &sink);
    CHECK_INT(got.n, 10);
    uint64_t total = 0;
    for (size_t i = 0; i < got.n; i++)
        total += got.r[i].samples;
    CHECK_U64(total, 55);
    CHECK_INT(got.calls, 3);
    fl_sass_destroy(x);
}

/* ------------------------------------------------------- source lines */

static uint8_t *read_file(const char *name, size_t *n)
{
    const char *dir = getenv("GP_TEST_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/plugin/data/%s", dir ? dir : "tests", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    uint8_t *b = len > 0 ? malloc((size_t)len) : NULL;
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return b;
}

static void test_source_lines(void)
{
    size_t nl = 0;
    uint8_t *lines = read_file("pcsamp_lines.cubin", &nl);
    CHECK(lines && nl);
    if (!lines)
        return;
    fl_cubin_reset();
    fl_cubin_keep(lines, nl);
    CUpti_GetCubinCrcParams cp;
    memset(&cp, 0, sizeof cp);
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubin = lines;
    cp.cubinSize = nl;
    CHECK_INT(cuptiGetCubinCrc(&cp), CUPTI_SUCCESS);
    uint32_t crc32 = (uint32_t)cp.cubinCrc; /* what CUpti_SassMetrics_Data carries */
    reset_got();
    fl_agg_config c = {.source = true};
    fl_sass *x = fl_sass_create(&c);
    fl_sass_metric_name(x, 0, 7, "smsp__sass_inst_executed");
    CUpti_SassMetrics_InstanceValue v[3][1] = {{{7, 1}}, {{7, 2}}, {{7, 3}}};
    CUpti_SassMetrics_Data d[3] = {rec(crc32, 0, "_Z5chasePKjPji", 0x40, v[0]),
                                   rec(crc32, 0, "_Z5chasePKjPji", 0x140, v[1]),
                                   rec(crc32 ^ 1, 0, "_Z5chasePKjPji", 0x40, v[2])};
    fl_sass_feed(x, &sink, d, 3, 1, 0, 1);
    fl_sass_flush(x, &sink);
    CHECK_INT(got.n, 3);
    CHECK_INT(got.r[0].source_line, 8);
    CHECK_INT(got.r[1].source_line, 9);
    CHECK_INT(got.r[2].source_line, 0);
    CHECK_INT(got.r[2].source_file_id, 0);
    const char *file = dict_name(FL_SAMPLE_DICT_SOURCE_FILE, got.r[0].source_file_id);
    size_t fl = strlen(file);
    CHECK(fl > 17 && strcmp(file + fl - 17, "/pcsamp_kernel.cu") == 0);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_sass_stats(x, &st);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.no_line_values, 1);
    fl_sass_destroy(x);
    fl_cubin_reset();
    free(lines);
}

/* ------------------------------------------------------------ the engine */

static fl_trace_options opts(bool source)
{
    /* Every kernel (the option); test_scopes runs the default. */
    return (fl_trace_options){
        .sass_metrics = true, .source_collection = source, .sass_all_kernels = true};
}

static const char *const M[] = {"smsp__sass_inst_executed", "smsp__sass_thread_inst_executed"};

static void test_engine(void)
{
    sf_reset();
    reset_got();
    fl_sass_set_api(&sf_api);
    sf.refuse = "smsp__sass_sectors_mem_global_ideal";
    sf.device = 2;
    fl_trace_options o = opts(false);
    CHECK_INT(fl_sass_engine_start(&o, (void *)0x1000, NULL), FL_PC_ACTIVE);
    /* I, N, one P per metric, S, E. */
    char want[64] = "IN";
    for (size_t i = 0; i < fl_sass_n_metric_names; i++)
        strcat(want, "P");
    strcat(want, "SE");
    CHECK_STR(sf.calls, want);
    CHECK_INT(sf.set_n, fl_sass_n_metric_names - 1);
    CHECK_INT(sf.lazy, 1);
    /* A second context on the same device: enabled, not configured again. */
    sf.calls[0] = '\0';
    fl_sass_context_created((void *)0x2000);
    fl_sass_context_created((void *)0x2000); /* seen twice: once */
    CHECK_STR(sf.calls, "E");
    /* sass_all_kernels: outermost scopes change nothing. */
    fl_sass_scope_begin("step");
    fl_sass_scope_end();
    CHECK_STR(sf.calls, "E");
    /* A drain without a collection point reads nothing; sass_config first. */
    sf.calls[0] = '\0';
    fl_sass_engine_drain(&sink);
    CHECK_STR(sf.calls, "");
    CHECK_INT(got.configs, 1);
    CHECK_INT(got.config_dev, 2);
    CHECK_CONTAINS(got.configured, "smsp__sass_inst_executed,smsp__sass_thread_inst_executed,");
    CHECK_STR(got.skipped, "smsp__sass_sectors_mem_global_ideal");
    /* A collection point reads nothing: CUPTI 13.0 adds no record for a
     * function read once, so the counts are read at the end only. */
    sf_add(0x55, "_Z6vecAddPfS_S_i", 1, 0x10, 2,
           (const uint64_t[]){sf_metric_id(M[0]), sf_metric_id(M[1])}, (const uint64_t[]){4, 128});
    sf_add(0x55, "_Z6vecAddPfS_S_i", 1, 0x20, 2,
           (const uint64_t[]){sf_metric_id(M[0]), sf_metric_id(M[1])}, (const uint64_t[]){4, 64});
    sf.reads_left = 1;
    sf.calls[0] = '\0';
    fl_sass_engine_drain(&sink);
    CHECK_STR(sf.calls, "");
    CHECK_INT(got.n, 0);
    /* A context destroyed: read into the table (no sink), disabled. */
    sf.calls[0] = '\0';
    fl_sass_context_destroying((void *)0x2000);
    CHECK_STR(sf.calls, "GFD");
    CHECK_INT(sf.flush_bad_size, 0);
    CHECK_INT(got.n, 0);
    /* The end: what is left read, Disable, UnsetConfig, DeInitialize; the
     * rows handed to the sink. */
    sf.reads_left = 1;
    sf.dropped = 3;
    sf.calls[0] = '\0';
    fl_sass_engine_stop();
    fl_sass_engine_drain(&sink);
    CHECK_STR(sf.calls, "GFDUX");
    CHECK_INT(got.configs, 1); /* once per device */
    CHECK_INT(got.n, 4);       /* (2 PCs x 2 metrics), the two reads summed */
    const char *fa = "_Z6vecAddPfS_S_i@";
    CHECK_U64(value_of(2, fa, 0x10, M[0]), 8);
    CHECK_U64(value_of(2, fa, 0x10, M[1]), 256);
    CHECK_U64(value_of(2, fa, 0x20, M[1]), 128);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_sass_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_SASS].status, FL_PC_ACTIVE);
    CHECK_INT(st.engines[FL_ENGINE_SASS].counters.sass.contexts, 2);
    CHECK_INT(st.engines[FL_ENGINE_SASS].counters.sass.metrics, fl_sass_n_metric_names - 1);
    CHECK_INT(st.engines[FL_ENGINE_SASS].counters.sass.metrics_skipped, 1);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.rows, 4);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.records, 4);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.collections, 2);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.dropped_records, 3);
    CHECK_STR(st.engines[FL_ENGINE_SASS].message, "");
    sf.calls[0] = '\0';
    fl_sass_engine_release();
    CHECK_STR(sf.calls, ""); /* nothing left to undo */
    /* Eager patching when asked. */
    sf_reset();
    o.sass_eager_patching = true;
    CHECK_INT(fl_sass_engine_start(&o, (void *)0x1000, NULL), FL_PC_ACTIVE);
    CHECK_INT(sf.lazy, 0);
    fl_sass_engine_release();
    CHECK_CONTAINS(sf.calls, "EDUX");
    /* Off unless asked: no CUPTI call. */
    sf_reset();
    o.sass_metrics = false;
    CHECK_INT(fl_sass_engine_start(&o, (void *)0x1000, NULL), FL_PC_OFF);
    CHECK_STR(sf.calls, "");
    memset(&st, 0, sizeof st);
    fl_sass_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_SASS].status, FL_PC_OFF);
    fl_sass_engine_release();
    fl_sass_set_api(NULL);
}

/* Overlapping outermost scopes: thread_scope's begin and end while the
 * main thread's scope is open. */
static void *thread_scope(void *arg)
{
    (void)arg;
    fl_sass_scope_begin("other");
    fl_sass_scope_end();
    return NULL;
}

/* The default (no sass_all_kernels, as GPUFlight): contexts registered,
 * not enabled; an outermost scope enables the current context at its begin
 * and at its end synchronises, reads and disables it; a kernel outside
 * scopes is never read. */
static void test_scopes(void)
{
    sf_reset();
    reset_got();
    fl_sass_set_api(&sf_api);
    sf.current = (void *)0x1000;
    fl_trace_options o = opts(false);
    o.sass_all_kernels = false;
    fl_engine_env env = {.current_ctx = sf_current_ctx, .ctx_synchronize = sf_sync};
    CHECK_INT(fl_sass_engine_start(&o, (void *)0x1000, &env), FL_PC_ACTIVE);
    char want[64] = "IN";
    for (size_t i = 0; i < fl_sass_n_metric_names; i++)
        strcat(want, "P");
    strcat(want, "S"); /* configured, not enabled */
    CHECK_STR(sf.calls, want);
    /* What a kernel outside scopes would leave: nothing reads it. */
    sf_add(0x55, "_Z6vecAddPfS_S_i", 1, 0x10, 2,
           (const uint64_t[]){sf_metric_id(M[0]), sf_metric_id(M[1])}, (const uint64_t[]){4, 128});
    sf.reads_left = 1;
    sf.calls[0] = '\0';
    fl_sass_engine_drain(&sink);
    CHECK_STR(sf.calls, "");
    CHECK_INT(got.n, 0);
    /* An outermost scope: Enable at its begin; Sync, GetDataProperties,
     * FlushData, Disable at its end; the rows at the next drain. */
    fl_sass_scope_begin("step");
    CHECK_STR(sf.calls, "E");
    CHECK_INT(sf.lazy, 1);
    fl_sass_scope_end();
    CHECK_STR(sf.calls, "EYGFD");
    CHECK_INT(got.n, 0);
    fl_sass_engine_drain(&sink);
    CHECK_INT(got.n, 2);
    CHECK_U64(value_of(0, "_Z6vecAddPfS_S_i@", 0x10, M[1]), 128);
    /* Two threads' outermost scopes overlapping: one Enable; the last end
     * synchronises, reads (nothing left) and disables. */
    sf.calls[0] = '\0';
    fl_sass_scope_begin("step");
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, thread_scope, NULL), 0);
    pthread_join(th, NULL);
    CHECK_STR(sf.calls, "E");
    fl_sass_scope_end();
    CHECK_STR(sf.calls, "EYGD");
    /* No context current: nothing enabled, nothing at the end. */
    sf.calls[0] = '\0';
    sf.current = NULL;
    fl_sass_scope_begin("step");
    fl_sass_scope_end();
    CHECK_STR(sf.calls, "");
    /* A new context: registered at its first scope (its device already
     * configured), enabled; a scope open at the end is read by the last
     * drain, and its end then does nothing. */
    sf.current = (void *)0x2000;
    fl_sass_scope_begin("step");
    CHECK_STR(sf.calls, "E");
    fl_sass_engine_stop();
    fl_sass_engine_drain(&sink);
    CHECK_STR(sf.calls, "EGDUX");
    fl_sass_scope_end();
    CHECK_STR(sf.calls, "EGDUX");
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_sass_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_SASS].status, FL_PC_ACTIVE);
    CHECK_INT(st.engines[FL_ENGINE_SASS].counters.sass.contexts, 2);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.collections, 1);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.rows, 2);
    fl_sass_engine_release();
    fl_sass_set_api(NULL);
}

/* One refusal: the status, the message's words, and CUPTI's calls. */
static void refused(const char *what, uint32_t status, const char *words, const char *calls,
                    bool at_start)
{
    fl_trace_options o = opts(true);
    fl_sass_set_api(&sf_api);
    uint32_t st = fl_sass_engine_start(&o, (void *)0x1000, NULL);
    fl_sass_context_created((void *)0x3000); /* after a refusal: nothing */
    fl_sass_engine_drain(&sink);
    fl_sass_engine_stop();
    fl_sass_engine_drain(&sink);
    fl_trace_stats s;
    memset(&s, 0, sizeof s);
    fl_sass_engine_stats(&s);
    fl_sass_engine_release();
    fl_sass_set_api(NULL);
    printf("%s: %s\n", what, s.engines[FL_ENGINE_SASS].message);
    CHECK_INT(st, at_start ? status : FL_PC_ACTIVE);
    CHECK_INT(s.engines[FL_ENGINE_SASS].status, status);
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message, words);
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message, "the session runs Trace");
    CHECK_STR(sf.calls, calls);
}

static void test_fallbacks(void)
{
    char all_p[32] = "";
    for (size_t i = 0; i < fl_sass_n_metric_names; i++)
        strcat(all_p, "P");
    char want[64];

    sf_reset();
    sf.init = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
    refused("no permission", FL_PC_NO_PERMISSION, "NVreg_RestrictProfilingToAdminUsers=0", "I",
            true);

    sf_reset();
    sf.init = CUPTI_ERROR_UNKNOWN;
    refused("no driver", FL_PC_NO_DRIVER, "cuptiProfilerInitialize failed: CUPTI_ERROR_UNKNOWN",
            "I", true);

    sf_reset();
    sf.props_all = CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED;
    refused("MIG", FL_PC_NOT_SUPPORTED, "rather than a MIG instance", "INPX", true);

    sf_reset();
    sf.props_all = CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED;
    refused("vGPU", FL_PC_VIRTUALIZED, "enable_profiling", "INPX", true);

    sf_reset();
    sf.props_all = CUPTI_ERROR_INVALID_METRIC_NAME; /* every name refused */
    snprintf(want, sizeof want, "IN%sX", all_p);
    refused("no metric", FL_PC_NOT_SUPPORTED, "refused every metric on chip GH100", want, true);

    sf_reset();
    sf.set_config = CUPTI_ERROR_NOT_SUPPORTED;
    snprintf(want, sizeof want, "IN%sSX", all_p);
    refused("unsupported", FL_PC_NOT_SUPPORTED, "compute capability 7.5 or newer", want, true);

    sf_reset();
    sf.enable = CUPTI_ERROR_HARDWARE_BUSY;
    snprintf(want, sizeof want, "IN%sSEUX", all_p);
    refused("busy", FL_PC_CONFLICT, "another profiler holds the device", want, true);

    sf_reset();
    sf.chip = CUPTI_ERROR_NOT_INITIALIZED;
    refused("chip", FL_PC_NO_DRIVER, "cuptiDeviceGetChipName", "INX", true);

    /* A read refused: the session's reason, the rows so far kept. */
    sf_reset();
    sf.data_props = CUPTI_ERROR_NOT_SUPPORTED;
    /* A read refused (at the first collection point): the session's
     * reason; no read after it, every context still disabled. */
    snprintf(want, sizeof want, "IN%sSEEGDDUX", all_p);
    refused("read", FL_PC_NOT_SUPPORTED, "cuptiSassMetricsGetDataProperties", want, false);
}

/* Deep: the decoder over PC sampling's aggregator - one set of
 * dictionaries (a metric named by PC sampling keeps its id, SASS names
 * follow it), every use under the shared lock, the rows of kind 1
 * counted once (by fl_agg_stats), the aggregator not freed with the
 * decoder; fl_sass_engine_start refusing with env->refuse. */
static int n_locks, n_unlocks, held;
static void t_lock(void)
{
    n_locks++;
    CHECK_INT(held++, 0);
}
static void t_unlock(void)
{
    n_unlocks++;
    CHECK_INT(--held, 0);
}

static void test_shared(void)
{
    reset_got();
    CHECK(fl_sass_create_shared(NULL, NULL, NULL) == NULL);
    fl_agg *agg = fl_agg_create(NULL);
    CHECK_INT(fl_agg_metric_id(agg, "smsp__pcsamp_warps_issue_stalled_selected"), 1);
    CHECK_INT(fl_agg_function_id(agg, "_Z6vecAddPfS_S_i", 0xabc), 1);
    fl_sass *x = fl_sass_create_shared(agg, t_lock, t_unlock);
    CHECK(x != NULL);
    fl_sass_metric_name(x, 0, 7, "smsp__sass_inst_executed");
    CUpti_SassMetrics_InstanceValue v[2] = {{7, 10}, {8, 3}};
    CUpti_SassMetrics_Data d = rec(0xabc, 3, "_Z6vecAddPfS_S_i", 0x10, v);
    fl_sass_feed(x, &sink, &d, 1, 2, 0, 1000);
    fl_sass_flush(x, &sink);
    CHECK_INT(n_locks, 3);
    CHECK_INT(n_unlocks, 3);
    CHECK_INT(got.n, 2);
    CHECK_INT(got.r[0].function_id, 1); /* PC sampling's id of vecAdd */
    CHECK_STR(dict_name(FL_SAMPLE_DICT_METRIC, 1), "smsp__pcsamp_warps_issue_stalled_selected");
    CHECK_STR(dict_name(FL_SAMPLE_DICT_METRIC, 2), "smsp__sass_inst_executed");
    CHECK_STR(dict_name(FL_SAMPLE_DICT_METRIC, 3), "metric_8");
    CHECK_U64(value_of(0, "_Z6vecAddPfS_S_i@", 0x10, "smsp__sass_inst_executed"), 10);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_sass_stats(x, &st);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.rows,
              0); /* the aggregator's owner reports them */
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.records, 1);
    fl_agg_stats(agg, &st);
    CHECK_U64(st.engines[FL_ENGINE_SASS].counters.sass.rows, 2);
    CHECK_U64(st.engines[FL_ENGINE_PC].counters.pc.rows, 0);
    CHECK_U64(st.engines[FL_ENGINE_PC].counters.pc.samples, 0);
    fl_sass_destroy(x);
    fl_agg_destroy(agg); /* still ours: ASan sees a double free otherwise */

    fl_sass_set_api(&sf_api);
    sf_reset();
    fl_trace_options o = opts(true);
    o.pc_sampling = true;
    fl_engine_env env = {.refuse = "no shared aggregator"};
    CHECK_INT(fl_sass_engine_start(&o, (void *)0x1000, &env), FL_PC_NOT_SUPPORTED);
    memset(&st, 0, sizeof st);
    fl_sass_engine_stats(&st);
    CHECK_STR(st.engines[FL_ENGINE_SASS].message,
              "no shared aggregator; Deep runs PcSampling (Trace if PC sampling is refused too)");
    fl_sass_engine_release();
    fl_sass_set_api(NULL);
}

/* The real libcupti without a driver: a status and a message, no crash. */
static void test_real_cupti(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("note: a GPU driver is present; the no-driver fallback is not checked here\n");
        return;
    }
    fl_sass_set_api(NULL);
    fl_trace_options o = opts(true);
    /* No context yet: nothing asked of CUPTI. */
    CHECK_INT(fl_sass_engine_start(&o, NULL, NULL), FL_PC_ACTIVE);
    /* A context (a pointer CUPTI never gets to read: the Profiler API's
     * initialisation, the first call, fails without a driver). */
    fl_sass_context_created((void *)0x1000);
    fl_trace_stats s;
    memset(&s, 0, sizeof s);
    fl_sass_engine_stats(&s);
    printf("real libcupti: status %u: %s\n", s.engines[FL_ENGINE_SASS].status,
           s.engines[FL_ENGINE_SASS].message);
    CHECK_INT(s.engines[FL_ENGINE_SASS].status, FL_PC_NO_DRIVER);
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message, "CUPTI_ERROR_UNKNOWN (999)");
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message, "no working NVIDIA driver");
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message, "cuptiProfilerInitialize failed: ");
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message, "; the session runs Trace");
    fl_sass_engine_stop();
    fl_sass_engine_drain(&sink);
    fl_sass_engine_release();
    /* Deep after CUDA work: the driver's absence is the cause, the advice
     * is given, and PC sampling runs on. */
    o.pc_sampling = true;
    fl_engine_env env = {.late = true};
    CHECK_INT(fl_sass_engine_start(&o, NULL, &env), FL_PC_ACTIVE);
    fl_sass_context_created((void *)0x1000);
    memset(&s, 0, sizeof s);
    fl_sass_engine_stats(&s);
    CHECK_INT(s.engines[FL_ENGINE_SASS].status, FL_PC_NO_DRIVER);
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message,
                   "the driver is not loaded); gpufl_init ran after CUDA work had "
                   "started on this context");
    CHECK_CONTAINS(s.engines[FL_ENGINE_SASS].message,
                   "call gpufl_init before the first kernel (in PyTorch right after "
                   "`import torch`); Deep runs PcSampling (Trace if PC sampling is "
                   "refused too)");
    fl_sass_engine_release();
}

int main(void)
{
    test_decoder();
    test_table_full();
    test_source_lines();
    test_engine();
    test_scopes();
    test_fallbacks();
    test_shared();
    test_real_cupti();
    return check_done("test_cupti_sassmetrics");
}
