/*
 * test_cupti_pcsamp.c - PC sampling's plugin side without a GPU.
 *
 *  - the aggregator (plugin/common/aggregator.c) on CUpti_PCSamplingData
 *    buffers built from the toolkit's own structs (tests/plugin/synth.h):
 *    every stall slot of a record, zero and empty entries, partial, empty
 *    and over-full buffers, unknown stall reasons, CUPTI's dropped and
 *    hardware-buffer-full counts, sums over reads, the table full with and
 *    without a sink, dictionaries before rows, launch scopes;
 *  - the activity API's PC_SAMPLING / FUNCTION / SOURCE_LOCATOR /
 *    PC_SAMPLING_RECORD_INFO records through the real decoder (decode.c);
 *  - the PC Sampling API's call order and every fall-back (plugin/engines/pcsamp/pcsamp.c)
 *    with CUPTI's answers injected (fl_pcs_set_api): Enable then the
 *    configuration, stall reasons, Start; never GetData while armed; the
 *    GetData loop over OUT_OF_MEMORY and remainingNumPcs with each
 *    record's stallReasonCount reset; no permission, not supported, zero
 *    stall reasons, virtual GPU, no driver, the activity method;
 *  - source lines with the real libcupti on the checked-in cubins
 *    (tests/plugin/data: with -lineinfo and without).
 */
#include "check.h"
#include "decode.h"
#include "engines/pcsamp/pcsamp.h"
#include "synth.h"

#include <stdio.h>

/* ------------------------------------------------------------ the sink */

#define MAXR 4096
static struct {
    fl_sample_row r[MAXR];
    size_t n, calls;
    size_t names_total[3];
    char names[3][64][160];
    uint32_t ids[3][64];
    size_t n_names[3];
    size_t rows_when_names[3]; /* rows already given when the dictionary came */
} got;

static void s_names(void *u, int dict, const uint32_t *ids, const char *const *names, size_t n)
{
    (void)u;
    got.names_total[dict] += n;
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

static fl_trace_sink sink = {.sample_names = s_names, .samples = s_samples};

static void reset_got(void)
{
    memset(&got, 0, sizeof got);
}

static uint64_t total_samples(void)
{
    uint64_t t = 0;
    for (size_t i = 0; i < got.n; i++)
        t += got.r[i].samples;
    return t;
}

static const fl_sample_row *find_row(uint32_t corr, uint64_t pc, uint32_t stall)
{
    for (size_t i = 0; i < got.n; i++)
        if (got.r[i].corr_id == corr && got.r[i].pc_offset == pc && got.r[i].stall_reason == stall)
            return &got.r[i];
    return NULL;
}

/* ------------------------------------------------------ the aggregator */

static void test_every_slot(void)
{
    reset_got();
    fl_agg_config c = {.max_rows = 1024};
    fl_agg *p = fl_agg_create(&c);
    /* One record with CUPTI's 128 stall slots, each with samples. */
    enum { SLOTS = 128 };
    CUpti_PCSamplingStallReason slots[SLOTS];
    CUpti_PCSamplingPCData pc;
    memset(&pc, 0, sizeof pc);
    pc.size = sizeof pc;
    pc.cubinCrc = 7;
    pc.pcOffset = 0x100;
    pc.functionName = "_Z1kv";
    pc.correlationId = 5;
    pc.stallReasonCount = SLOTS;
    pc.stallReason = slots;
    for (uint32_t i = 0; i < SLOTS; i++)
        slots[i] = (CUpti_PCSamplingStallReason){i, i + 1};
    CUpti_PCSamplingData d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.collectNumPcs = 1;
    d.totalNumPcs = 1;
    d.pPcData = &pc;
    d.totalSamples = 9000;
    d.droppedSamples = 11;
    d.nonUsrKernelsTotalSamples = 3;
    d.hardwareBufferFull = 1;
    fl_agg_feed(p, &sink, &d, 2, 1000);
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, SLOTS);
    CHECK_INT(total_samples(), SLOTS * (SLOTS + 1) / 2);
    for (uint32_t i = 0; i < SLOTS; i++) {
        const fl_sample_row *r = find_row(5, 0x100, i);
        CHECK(r != NULL);
        if (r) {
            CHECK_INT(r->samples, i + 1);
            CHECK_INT(r->device_id, 2);
            CHECK_INT(r->t_ns, 1000);
            CHECK_INT(r->function_id, 1);
        }
    }
    /* No names given: each index named for itself, before the rows. */
    CHECK_INT(got.names_total[FL_SAMPLE_DICT_METRIC], SLOTS);
    CHECK_STR(got.names[FL_SAMPLE_DICT_METRIC][0], "stall_reason_0");
    CHECK_INT(got.rows_when_names[FL_SAMPLE_DICT_METRIC], 0);
    CHECK_INT(got.n_names[FL_SAMPLE_DICT_FUNCTION], 1);
    CHECK_STR(got.names[FL_SAMPLE_DICT_FUNCTION][0], "_Z1kv@");
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_agg_stats(p, &st);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.collections, 1);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.total_samples, 9000);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.dropped_samples, 11);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.non_user_samples, 3);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.hw_buffer_full, 1);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.rows, SLOTS);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.samples, SLOTS * (SLOTS + 1) / 2);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.no_line_samples, SLOTS * (SLOTS + 1) / 2);
    fl_agg_destroy(p);
}

static void test_shapes(void)
{
    reset_got();
    fl_agg *p = fl_agg_create(NULL);
    static const uint32_t names_idx[] = {3, 7};
    static const char *const names[] = {"smsp__pcsamp_warps_issue_stalled_wait",
                                        "smsp__pcsamp_warps_issue_stalled_long_scoreboard"};
    fl_agg_stall_names(p, 0, names_idx, names, 2);
    static synth_pc d;
    synth_pc_init(&d);
    /* A zero-sample entry, a record without slots, an unknown index. */
    synth_pc_add(&d, 1, "_Z1fv", 0x10, 1, 3, (const uint32_t[]){7, 3, 500},
                 (const uint32_t[]){4, 0, 6});
    synth_pc_add(&d, 1, "_Z1fv", 0x20, 1, 0, NULL, NULL);
    synth_pc_add(&d, 1, "_Z1gv", 0x30, 2, 1, (const uint32_t[]){3}, (const uint32_t[]){9});
    /* Partial: CUPTI filled 3 of 64 records; the rest must not be read. */
    CHECK_INT(d.data.totalNumPcs, 3);
    fl_agg_feed(p, &sink, &d.data, 0, 50);
    /* Again, the same PCs: one row each, summed. */
    fl_agg_feed(p, &sink, &d.data, 0, 60);
    /* Empty. */
    synth_pc_init(&d);
    fl_agg_feed(p, &sink, &d.data, 0, 70);
    /* More PCs claimed than the buffer holds: only collectNumPcs read. */
    synth_pc_init(&d);
    synth_pc_add(&d, 1, "_Z1gv", 0x30, 2, 1, (const uint32_t[]){3}, (const uint32_t[]){1});
    d.data.collectNumPcs = 1;
    d.data.totalNumPcs = 1000;
    fl_agg_feed(p, &sink, &d.data, 0, 80);
    CHECK_INT(got.n, 0); /* nothing before a flush */
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, 3);
    const fl_sample_row *a = find_row(1, 0x10, 7), *b = find_row(1, 0x10, 500),
                        *c = find_row(2, 0x30, 3);
    CHECK(a && b && c);
    if (a && b && c) {
        CHECK_INT(a->samples, 8);
        CHECK_INT(a->t_ns, 50);
        CHECK_INT(a->metric_id, 2);
        CHECK_INT(b->samples, 12);
        CHECK_INT(b->metric_id, 3);
        CHECK_INT(c->samples, 19);
        CHECK_INT(c->metric_id, 1);
        CHECK_INT(c->function_id, 2);
    }
    CHECK_INT(got.n_names[FL_SAMPLE_DICT_METRIC], 3);
    CHECK_STR(got.names[FL_SAMPLE_DICT_METRIC][2], "stall_reason_500");
    /* Announced once: a second flush gives no name again. */
    reset_got();
    fl_agg_feed(p, &sink, &d.data, 0, 90);
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, 1);
    CHECK_INT(got.n_names[FL_SAMPLE_DICT_METRIC] + got.n_names[FL_SAMPLE_DICT_FUNCTION], 0);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_agg_stats(p, &st);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.collections, 5);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.samples, 40);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.rows, 4);
    fl_agg_destroy(p);
}

/* The table full: with a sink its rows go out early (the sums stay
 * right); without one the samples finding no room are counted lost. */
static void test_table_full(void)
{
    reset_got();
    fl_agg_config c = {.max_rows = 4};
    fl_agg *p = fl_agg_create(&c);
    static synth_pc d;
    synth_pc_init(&d);
    for (uint32_t i = 0; i < 10; i++)
        synth_pc_add(&d, 1, "_Z1fv", 0x10 * i, 1, 1, (const uint32_t[]){2},
                     (const uint32_t[]){i + 1});
    fl_agg_feed(p, &sink, &d.data, 0, 1);
    CHECK_INT(got.n, 8); /* two full tables went out */
    CHECK_INT(got.calls, 2);
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, 10);
    CHECK_INT(total_samples(), 55);

    reset_got();
    fl_agg_feed(p, NULL, &d.data, 0, 2);
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, 4);
    CHECK_INT(total_samples(), 1 + 2 + 3 + 4);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_agg_stats(p, &st);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.lost_samples, 55 - 10);
    fl_agg_destroy(p);
}

static void test_scopes(void)
{
    reset_got();
    fl_launch_scope_reset();
    uint32_t ids[] = {4, 9};
    fl_launch_scope_put(77, ids, 2);
    fl_launch_scope_put(78, ids, 0);
    fl_agg_config c = {.scopes = true};
    fl_agg *p = fl_agg_create(&c);
    static synth_pc d;
    synth_pc_init(&d);
    for (uint32_t corr = 77; corr <= 79; corr++)
        synth_pc_add(&d, 1, "_Z1fv", 0x10, corr, 1, (const uint32_t[]){1}, (const uint32_t[]){1});
    fl_agg_feed(p, &sink, &d.data, 0, 1);
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, 3);
    CHECK_INT(find_row(77, 0x10, 1)->scope_name_id, 9); /* the innermost */
    CHECK_INT(find_row(78, 0x10, 1)->scope_name_id, 0); /* none open */
    CHECK_INT(find_row(79, 0x10, 1)->scope_name_id, 0); /* not known */
    fl_agg_destroy(p);
    fl_launch_scope_reset();
}

/* --------------------------------------------------- the activity API */

/* Whether this libcupti still walks the activity API's PC sampling
 * records (CUPTI 13 no longer does: that API is gone with it). */
static bool cupti_walks_pc_records(void)
{
    synth s;
    synth_init(&s, 256);
    synth_pc_sample(&s, 1, 1, 1, 8, CUPTI_ACTIVITY_PC_SAMPLING_STALL_SYNC, 1);
    CUpti_Activity *r = NULL;
    bool ok = cuptiActivityGetNextRecord(s.p, s.len, &r) == CUPTI_SUCCESS;
    synth_free(&s);
    return ok;
}

/* The records in the order CUPTI writes them, to the aggregator: by the
 * decoder when CUPTI walks them, else handed over directly. */
static void feed_activity(fl_agg *p, fl_decoder *d, synth *s)
{
    if (cupti_walks_pc_records()) {
        fl_decoder_feed(d, &sink, s->p, s->len);
        return;
    }
    for (size_t at = 0; at < s->len;) {
        const CUpti_Activity *r = (const CUpti_Activity *)(s->p + at);
        size_t size = 0;
        switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_FUNCTION:
            fl_agg_on_function(p, (const CUpti_ActivityFunction *)r);
            size = sizeof(CUpti_ActivityFunction);
            break;
        case CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR:
            fl_agg_on_source(p, (const CUpti_ActivitySourceLocator *)r);
            size = sizeof(CUpti_ActivitySourceLocator);
            break;
        case CUPTI_ACTIVITY_KIND_PC_SAMPLING:
            fl_agg_on_sample(p, &sink, (const CUpti_ActivityPCSampling3 *)r, 5);
            size = sizeof(CUpti_ActivityPCSampling3);
            break;
        case CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO:
            fl_agg_on_info(p, (const CUpti_ActivityPCSamplingRecordInfo *)r);
            size = sizeof(CUpti_ActivityPCSamplingRecordInfo);
            break;
        default:
            return;
        }
        at += (size + 7) & ~(size_t)7;
    }
}

static void test_activity_records(void)
{
    if (!cupti_walks_pc_records())
        printf("note: this libcupti does not walk PC_SAMPLING records (CUPTI 13 dropped the "
               "activity PC sampling API): the records go to the aggregator directly\n");
    reset_got();
    fl_agg *p = fl_agg_create(NULL);
    fl_decoder_config dc = {.pcs = p};
    fl_decoder *d = fl_decoder_create(&dc);
    synth s;
    synth_init(&s, 1 << 14);
    synth_function(&s, 3, "_Z4gemmPKfS0_Pf");
    synth_source(&s, 10, "/src/gemm.cu", 17);
    synth_source(&s, 11, "/src/gemm.cu", 18);
    synth_pc_sample(&s, 3, 10, 101, 64, CUPTI_ACTIVITY_PC_SAMPLING_STALL_MEMORY_DEPENDENCY, 12);
    synth_pc_sample(&s, 3, 11, 101, 128, CUPTI_ACTIVITY_PC_SAMPLING_STALL_MEMORY_THROTTLE, 30);
    synth_pc_sample(&s, 3, 10, 101, 64, CUPTI_ACTIVITY_PC_SAMPLING_STALL_MEMORY_DEPENDENCY, 3);
    synth_pc_sample(&s, 99, 0, 102, 8, CUPTI_ACTIVITY_PC_SAMPLING_STALL_SYNC, 1);
    synth_pc_sample(&s, 3, 10, 101, 64, CUPTI_ACTIVITY_PC_SAMPLING_STALL_NONE, 0);
    synth_pc_info(&s, 101, 50, 4);
    feed_activity(p, d, &s);
    fl_decoder_flush(d, &sink);
    CHECK_INT(got.n, 3);
    const fl_sample_row *a = find_row(101, 64, CUPTI_ACTIVITY_PC_SAMPLING_STALL_MEMORY_DEPENDENCY);
    const fl_sample_row *b = find_row(101, 128, CUPTI_ACTIVITY_PC_SAMPLING_STALL_MEMORY_THROTTLE);
    const fl_sample_row *u = find_row(102, 8, CUPTI_ACTIVITY_PC_SAMPLING_STALL_SYNC);
    CHECK(a && b && u);
    if (a && b && u) {
        CHECK_INT(a->samples, 15);
        CHECK_INT(a->metric_id, 0);
        CHECK_INT(a->function_id, 1);
        CHECK_INT(a->source_file_id, 1);
        CHECK_INT(a->source_line, 17);
        CHECK_INT(b->samples, 30);
        CHECK_INT(b->source_line, 18);
        CHECK_INT(u->function_id, 0); /* no FUNCTION record seen */
        CHECK_INT(u->source_file_id, 0);
    }
    CHECK_STR(got.names[FL_SAMPLE_DICT_FUNCTION][0], "_Z4gemmPKfS0_Pf@/src/gemm.cu");
    CHECK_STR(got.names[FL_SAMPLE_DICT_SOURCE_FILE][0], "/src/gemm.cu");
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_agg_stats(p, &st);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.total_samples, 50);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.dropped_samples, 4);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.no_line_samples, 1);
    synth_free(&s);
    fl_decoder_destroy(d);
    fl_agg_destroy(p);

    /* Without an aggregator the records are skipped and counted (or, with
     * a CUPTI that cannot walk them, the buffer ends there). */
    fl_decoder_config none = {0};
    d = fl_decoder_create(&none);
    synth_init(&s, 4096);
    synth_function(&s, 3, "_Z1fv");
    synth_pc_sample(&s, 3, 0, 1, 8, CUPTI_ACTIVITY_PC_SAMPLING_STALL_SYNC, 1);
    fl_decoder_feed(d, &sink, s.p, s.len);
    memset(&st, 0, sizeof st);
    fl_decoder_stats(d, &st);
    CHECK_INT(st.other_records + st.bad_buffers, 2);
    synth_free(&s);
    fl_decoder_destroy(d);
}

#include "test_cupti_pcsamp_api.h"

/* ------------------------------------------------------ source lines */

static uint8_t *read_file(const char *name, size_t *n)
{
    const char *dir = getenv("GP_TEST_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/plugin/data/%s", dir ? dir : "tests", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    uint8_t *b = malloc((size_t)len);
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return b;
}

static uint64_t crc_of(const uint8_t *b, size_t n)
{
    CUpti_GetCubinCrcParams c;
    memset(&c, 0, sizeof c);
    c.size = CUpti_GetCubinCrcParamsSize;
    c.cubin = b;
    c.cubinSize = n;
    return cuptiGetCubinCrc(&c) == CUPTI_SUCCESS ? c.cubinCrc : 0;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static void test_source_lines(void)
{
    size_t nl = 0, nn = 0;
    uint8_t *lines = read_file("pcsamp_lines.cubin", &nl);
    uint8_t *nolines = read_file("pcsamp_nolines.cubin", &nn);
    CHECK(lines && nolines && nl && nn);
    if (!lines || !nolines)
        return;
    CHECK(fl_cubin_has_lines(lines, nl));
    CHECK(!fl_cubin_has_lines(nolines, nn));
    CHECK(!fl_cubin_has_lines("not an ELF file at all, but long enough to be read as one....", 64));
    CHECK(!fl_cubin_has_lines(lines, 40)); /* cut short */
    fl_cubin_reset();
    fl_cubin_keep(lines, nl);
    fl_cubin_keep(lines, nl); /* the same module twice: kept once */
    fl_cubin_keep(nolines, nn);
    uint64_t crc = crc_of(lines, nl), crc2 = crc_of(nolines, nn);
    CHECK(crc != 0 && crc2 != 0 && crc != crc2);
    static const struct {
        uint64_t pc;
        uint32_t line;
    } want[] = {{0x0, 5}, {0x20, 7}, {0x40, 8}, {0x130, 8}, {0x140, 9}, {0x1f0, 9}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char file[1024];
        uint32_t line = 0;
        CHECK(fl_cubin_line(crc, "_Z5chasePKjPji", want[i].pc, file, sizeof file, &line));
        CHECK(ends_with(file, "/pcsamp_kernel.cu"));
        CHECK_INT(line, want[i].line);
    }
    char file[1024];
    uint32_t line = 7;
    CHECK(!fl_cubin_line(crc2, "_Z5chasePKjPji", 0x40, file, sizeof file, &line));
    CHECK_INT(line, 0);
    CHECK(!fl_cubin_line(crc, "_Z7unknownv", 0x40, file, sizeof file, &line));
    CHECK(!fl_cubin_line(12345, "_Z5chasePKjPji", 0x40, file, sizeof file, &line));
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_cubin_stats(&st);
    CHECK_INT(st.cubins, 2);
    CHECK_INT(st.cubins_no_lines, 1);
    CHECK_INT(st.cubin_bytes, nl + nn);

    /* Through the aggregator: rows with file:line, the function named
     * with its file. */
    reset_got();
    fl_agg_config c = {.source = true};
    fl_agg *p = fl_agg_create(&c);
    static synth_pc d;
    synth_pc_init(&d);
    synth_pc_add(&d, crc, "_Z5chasePKjPji", 0x40, 1, 1, (const uint32_t[]){7},
                 (const uint32_t[]){90});
    synth_pc_add(&d, crc, "_Z5chasePKjPji", 0x140, 1, 1, (const uint32_t[]){7},
                 (const uint32_t[]){10});
    synth_pc_add(&d, crc2, "_Z5chasePKjPji", 0x40, 2, 1, (const uint32_t[]){7},
                 (const uint32_t[]){5});
    fl_agg_feed(p, &sink, &d.data, 0, 1);
    fl_agg_feed(p, &sink, &d.data, 0, 2); /* the line cache */
    fl_agg_flush(p, &sink);
    CHECK_INT(got.n, 3);
    CHECK_INT(find_row(1, 0x40, 7)->source_line, 8);
    CHECK_INT(find_row(1, 0x40, 7)->source_file_id, 1);
    CHECK_INT(find_row(1, 0x140, 7)->source_line, 9);
    CHECK_INT(find_row(2, 0x40, 7)->source_line, 0);
    CHECK_INT(find_row(2, 0x40, 7)->source_file_id, 0);
    CHECK(ends_with(got.names[FL_SAMPLE_DICT_SOURCE_FILE][0], "/pcsamp_kernel.cu"));
    CHECK(ends_with(got.names[FL_SAMPLE_DICT_FUNCTION][0], "_Z5chasePKjPji@") == false);
    CHECK(ends_with(got.names[FL_SAMPLE_DICT_FUNCTION][0], "/pcsamp_kernel.cu"));
    CHECK_STR(got.names[FL_SAMPLE_DICT_FUNCTION][1], "_Z5chasePKjPji@");
    memset(&st, 0, sizeof st);
    fl_agg_stats(p, &st);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.no_line_samples, 10);
    fl_agg_destroy(p);
    fl_cubin_reset();
    free(lines);
    free(nolines);
}

/* More names than a dictionary's first size: each keeps its id as the
 * table grows, whichever copy of its text asks. */
static void test_many_names(void)
{
    fl_agg *p = fl_agg_create(NULL);
    CHECK(p != NULL);
    size_t wrong = 0;
    char name[32];
    for (unsigned pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < 1000; i++) {
            snprintf(name, sizeof name, "metric_%u", i);
            wrong += fl_agg_metric_id(p, name) != i + 1;
        }
    CHECK_INT(wrong, 0);
    fl_agg_destroy(p);
}

int main(void)
{
    test_every_slot();
    test_shapes();
    test_table_full();
    test_scopes();
    test_activity_records();
    test_api();
    test_source_lines();
    test_many_names();
    return check_done("test_cupti_pcsamp");
}
