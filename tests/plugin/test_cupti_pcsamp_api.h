/*
 * test_cupti_pcsamp_api.h - plugin/engines/pcsamp/pcsamp.c against injected CUPTI answers
 * (fl_pcs_api): the call order, the read loop, the collection points and
 * every fall-back.  Part of test_cupti_pcsamp.c (its sink and helpers).
 */
#ifndef GP_TEST_CUPTI_PCSAMP_API_H
#define GP_TEST_CUPTI_PCSAMP_API_H

/* What the fake CUPTI answers, and what it saw. */
static struct {
    CUptiResult activity, enable, configure, num, start, stop;
    size_t n_stall;
    char calls[256]; /* one letter per call */
    bool armed;
    int read_while_armed;
    int reads, reads_to_give; /* GetData calls; how many give PCs */
    int bad_room;             /* records handed in without their full room */
    uint32_t period, mode, start_stop, format;
    size_t scratch, hw;
    bool data_buffer;
    CUpti_PCSamplingData *cfg_buf; /* the configuration's buffer */
    int get_into_cfg;              /* GetData calls handed that buffer */
    int disable_copies;            /* Disable copies 1 PC of 7 samples into cfg_buf */
    uint32_t activity_period2;
    int flushes_while_armed, flushes;
} fk;

static void call(char c)
{
    size_t n = strlen(fk.calls);
    if (n + 1 < sizeof fk.calls) {
        fk.calls[n] = c;
        fk.calls[n + 1] = '\0';
    }
}

static CUptiResult f_enable(CUpti_PCSamplingEnableParams *p)
{
    (void)p;
    call('E');
    return fk.enable;
}
/* Disable: as CUPTI, the records left copied into the configuration's
 * buffer when disable_copies is set. */
static CUptiResult f_disable(CUpti_PCSamplingDisableParams *p)
{
    (void)p;
    call('D');
    CUpti_PCSamplingData *d = fk.cfg_buf;
    if (fk.disable_copies && d) {
        d->totalNumPcs = 1;
        d->totalSamples = 7;
        CUpti_PCSamplingPCData *r = &d->pPcData[0];
        r->pcOffset = 0x30;
        r->functionName = "_Z1kv";
        r->correlationId = 43;
        r->stallReasonCount = 1;
        r->stallReason[0].pcSamplingStallReasonIndex = 4;
        r->stallReason[0].samples = 7;
    }
    return CUPTI_SUCCESS;
}
static CUptiResult f_configure(CUpti_PCSamplingConfigurationInfoParams *p)
{
    call('C');
    for (size_t i = 0; i < p->numAttributes; i++) {
        const CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];
        switch (a->attributeType) {
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
            fk.period = a->attributeData.samplingPeriodData.samplingPeriod;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
            fk.mode = a->attributeData.collectionModeData.collectionMode;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
            fk.start_stop = a->attributeData.enableStartStopControlData.enableStartStopControl;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
            fk.format = a->attributeData.outputDataFormatData.outputDataFormat;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
            fk.scratch = a->attributeData.scratchBufferSizeData.scratchBufferSize;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
            fk.hw = a->attributeData.hardwareBufferSizeData.hardwareBufferSize;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
            fk.data_buffer = a->attributeData.samplingDataBufferData.samplingDataBuffer != NULL;
            fk.cfg_buf = a->attributeData.samplingDataBufferData.samplingDataBuffer;
            break;
        default:
            break;
        }
    }
    return fk.configure;
}
static CUptiResult f_num(CUpti_PCSamplingGetNumStallReasonsParams *p)
{
    call('N');
    *p->numStallReasons = fk.n_stall;
    return fk.num;
}
static CUptiResult f_reasons(CUpti_PCSamplingGetStallReasonsParams *p)
{
    call('R');
    for (size_t i = 0; i < p->numStallReasons; i++) {
        p->stallReasonIndex[i] = (uint32_t)(i * 2);
        snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "smsp__pcsamp_reason_%zu",
                 i * 2);
    }
    return CUPTI_SUCCESS;
}
static CUptiResult f_start(CUpti_PCSamplingStartParams *p)
{
    (void)p;
    call('S');
    if (fk.start == CUPTI_SUCCESS)
        fk.armed = true;
    return fk.start;
}
static CUptiResult f_stop(CUpti_PCSamplingStopParams *p)
{
    (void)p;
    call('T');
    if (fk.stop == CUPTI_SUCCESS)
        fk.armed = false;
    return fk.stop;
}

/* GetData: the first reads_to_give calls give 2 PCs each (one stall
 * reason of 3 samples each), OUT_OF_MEMORY on the first (the hardware
 * buffer was full) and remainingNumPcs until the last; then nothing. */
static CUptiResult f_get(CUpti_PCSamplingGetDataParams *p)
{
    call('G');
    if (fk.armed)
        fk.read_while_armed++;
    CUpti_PCSamplingData *d = p->pcSamplingData;
    if (d == fk.cfg_buf)
        fk.get_into_cfg++;
    for (size_t i = 0; i < d->collectNumPcs; i++)
        if (d->pPcData[i].stallReasonCount != 128)
            fk.bad_room++;
    int k = fk.reads++;
    if (k >= fk.reads_to_give) {
        d->totalNumPcs = 0;
        d->remainingNumPcs = 0;
        return CUPTI_SUCCESS;
    }
    d->totalNumPcs = 2;
    d->remainingNumPcs = (size_t)(fk.reads_to_give - k - 1) * 2;
    d->totalSamples = 6;
    d->droppedSamples = k == 0 ? 5 : 0;
    d->hardwareBufferFull = k == 0;
    for (size_t i = 0; i < 2; i++) {
        CUpti_PCSamplingPCData *r = &d->pPcData[i];
        r->cubinCrc = 0;
        r->pcOffset = 0x10 * (i + 1);
        r->functionName = "_Z1kv";
        r->correlationId = 42;
        r->stallReasonCount = 1; /* the count out: the room is smaller now */
        r->stallReason[0].pcSamplingStallReasonIndex = 2;
        r->stallReason[0].samples = 3;
    }
    return k == 0 ? CUPTI_ERROR_OUT_OF_MEMORY : CUPTI_SUCCESS;
}
static CUptiResult f_device(CUcontext c, uint32_t *id)
{
    (void)c;
    *id = 1;
    return CUPTI_SUCCESS;
}
static CUptiResult f_activity(CUpti_ActivityKind k)
{
    call(k == CUPTI_ACTIVITY_KIND_PC_SAMPLING ? 'A' : 'a');
    return fk.activity;
}
static CUptiResult f_activity_cfg(CUcontext c, CUpti_ActivityPCSamplingConfig *cfg)
{
    (void)c;
    call('P');
    fk.activity_period2 = cfg->samplingPeriod2;
    return CUPTI_SUCCESS;
}

static const fl_pcs_api fake_api = {f_enable,  f_disable,  f_configure,   f_num,
                                    f_reasons, f_start,    f_stop,        f_get,
                                    f_device,  f_activity, f_activity_cfg};

static void fk_flush(void)
{
    fk.flushes++;
    if (fk.armed)
        fk.flushes_while_armed++;
}

static void fk_reset(void)
{
    memset(&fk, 0, sizeof fk);
    fk.activity = CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED;
    fk.n_stall = 3;
}

static uint32_t start_on(void *ctx, uint32_t period)
{
    fl_trace_options o = {.pc_sampling = true, .pc_period_log2 = period};
    return fl_pcs_engine_start(&o, ctx);
}

static void test_api_order_and_reads(void)
{
    fk_reset();
    fl_pcs_set_api(&fake_api);
    CHECK_INT(start_on((void *)0x1, 12), FL_PC_ACTIVE);
    /* Method, then Enable, configure right after, stall reasons, Start. */
    CHECK_STR(fk.calls, "AECNRS");
    CHECK_INT(fk.period, 12);
    CHECK_INT(fk.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
    CHECK_INT(fk.start_stop, 1);
    CHECK_INT(fk.format, CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED);
    CHECK_INT(fk.scratch, 16u << 20);
    CHECK_INT(fk.hw, 256u << 20);
    CHECK(fk.data_buffer);
    CHECK(fl_pcs_armed());
    /* A drain without a collection point touches nothing. */
    reset_got();
    fk.calls[0] = '\0';
    fl_pcs_engine_drain(&sink, fk_flush);
    CHECK_STR(fk.calls, "");
    /* A collection point: stop, flush while stopped, read until empty,
     * start again. */
    fk.reads_to_give = 3;
    fl_pcs_request_collect();
    fl_pcs_engine_drain(&sink, fk_flush);
    CHECK_STR(fk.calls, "TGGGS");
    CHECK_INT(fk.read_while_armed, 0);
    CHECK_INT(fk.bad_room, 0);
    CHECK_INT(fk.flushes, 1);
    CHECK_INT(fk.flushes_while_armed, 0);
    CHECK_INT(got.n, 2);
    CHECK_INT(total_samples(), 18);
    CHECK_INT(got.r[0].device_id, 1);
    CHECK_INT(got.r[0].corr_id, 42);
    CHECK_INT(got.r[0].metric_id, 2); /* index 2: the second name given */
    CHECK_STR(got.names[FL_SAMPLE_DICT_METRIC][1], "smsp__pcsamp_reason_2");
    /* The session ends: stopped at stop(), read and disabled at the next
     * drain, never armed again. */
    reset_got();
    fk.calls[0] = '\0';
    fk.reads = 0;
    fk.reads_to_give = 1;
    fl_pcs_engine_stop();
    CHECK(!fl_pcs_armed());
    fl_pcs_engine_drain(&sink, fk_flush);
    CHECK_STR(fk.calls, "TGGD");
    CHECK_INT(fk.read_while_armed, 0);
    CHECK_INT(fk.get_into_cfg, 0);
    CHECK_INT(got.n, 2);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_pcs_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PC].status, FL_PC_ACTIVE);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.method, FL_PC_METHOD_SAMPLING_API);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.period_log2, 12);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.stall_reasons, 3);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.contexts, 1);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.samples, 24);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.dropped_samples, 10);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.hw_buffer_full, 2);
    fl_pcs_engine_release();
}

/* A context that goes away: stopped, read into the table, disabled; its
 * rows come out at the next drain.  A context created later is enabled
 * then. */
/* What CUPTI copies into the configuration's buffer at Disable (all a
 * session's PCs, when GetData found none yet) reaches the rows once; GetData
 * never reads into that buffer (a read there would wipe the copy). */
static void test_api_disable_copy(void)
{
    fk_reset();
    fl_pcs_set_api(&fake_api);
    CHECK_INT(start_on((void *)0x1, 0), FL_PC_ACTIVE);
    CHECK(fk.cfg_buf != NULL);
    fk.disable_copies = 1;
    fk.reads_to_give = 0;
    reset_got();
    fl_pcs_engine_stop();
    fl_pcs_engine_drain(&sink, fk_flush);
    CHECK_STR(fk.calls, "AECNRSTGD");
    CHECK_INT(fk.get_into_cfg, 0);
    CHECK_INT(got.n, 1);
    CHECK_INT(total_samples(), 7);
    CHECK_INT(got.r[0].corr_id, 43);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_pcs_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PC].counters.pc.samples, 7);
    fl_pcs_engine_release();
    /* A context destroyed: Disable's copy goes into the table, out at the
     * next drain. */
    fk_reset();
    fl_pcs_set_api(&fake_api);
    CHECK_INT(start_on(NULL, 0), FL_PC_ACTIVE);
    fl_pcs_context_created((void *)0x2);
    fk.disable_copies = 1;
    fl_pcs_context_destroying((void *)0x2);
    CHECK_INT(fk.get_into_cfg, 0);
    reset_got();
    fl_pcs_engine_drain(&sink, fk_flush);
    CHECK_INT(got.n, 1);
    CHECK_INT(total_samples(), 7);
    fl_pcs_engine_release();
}

static void test_api_contexts(void)
{
    fk_reset();
    fl_pcs_set_api(&fake_api);
    CHECK_INT(start_on(NULL, 0), FL_PC_ACTIVE);
    CHECK_STR(fk.calls, "A");
    fl_pcs_context_created((void *)0x2);
    CHECK_STR(fk.calls, "AECNRS");
    CHECK_INT(fk.period, FL_PC_PERIOD_DEFAULT);
    fl_pcs_context_created((void *)0x2); /* the same one again: nothing */
    CHECK_STR(fk.calls, "AECNRS");
    fk.reads_to_give = 1;
    fl_pcs_context_destroying((void *)0x2);
    CHECK_STR(fk.calls, "AECNRSTGGD");
    CHECK_INT(fk.read_while_armed, 0);
    reset_got();
    fl_pcs_engine_drain(&sink, fk_flush);
    CHECK_INT(got.n, 2);
    fl_pcs_engine_release();
}

/* Every refusal: its status, its message with the fix, nothing left
 * enabled or armed. */
static void test_api_fallbacks(void)
{
    static const struct {
        const char *what;
        CUptiResult activity, enable, configure;
        size_t n_stall;
        uint32_t status;
        const char *calls, *msg;
    } cases[] = {
        {"no permission", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED,
         CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_SUCCESS, 3, FL_PC_NO_PERMISSION, "AE",
         "NVreg_RestrictProfilingToAdminUsers=0"},
        {"no permission, activity API", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_SUCCESS,
         CUPTI_SUCCESS, 3, FL_PC_NO_PERMISSION, "A", "run as root"},
        {"not supported", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, CUPTI_ERROR_NOT_SUPPORTED,
         CUPTI_SUCCESS, 3, FL_PC_NOT_SUPPORTED, "AE", "compute capability 7.0"},
        {"zero stall reasons", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, CUPTI_SUCCESS,
         CUPTI_SUCCESS, 0, FL_PC_NOT_SUPPORTED, "AECND", "0 stall reasons"},
        {"configuration refused", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, CUPTI_SUCCESS,
         CUPTI_ERROR_INVALID_OPERATION, 3, FL_PC_FAILED, "AECD",
         "cuptiPCSamplingSetConfigurationAttribute failed"},
        {"virtual GPU", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED,
         CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, CUPTI_SUCCESS, 3, FL_PC_VIRTUALIZED, "AE",
         "vGPU"},
        {"no driver", CUPTI_ERROR_UNKNOWN, CUPTI_SUCCESS, CUPTI_SUCCESS, 3, FL_PC_NO_DRIVER, "A",
         "no working NVIDIA driver"},
        {"profiler conflict", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED,
         CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, CUPTI_SUCCESS, 3, FL_PC_CONFLICT, "AE",
         "Profiler API"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fk_reset();
        fk.activity = cases[i].activity;
        fk.enable = cases[i].enable;
        fk.configure = cases[i].configure;
        fk.n_stall = cases[i].n_stall;
        fl_pcs_set_api(&fake_api);
        uint32_t st = start_on((void *)0x3, 0);
        if (st != cases[i].status)
            printf("case: %s\n", cases[i].what);
        CHECK_INT(st, cases[i].status);
        CHECK_STR(fk.calls, cases[i].calls);
        CHECK(!fl_pcs_armed());
        fl_trace_stats s;
        memset(&s, 0, sizeof s);
        fl_pcs_engine_stats(&s);
        CHECK_INT(s.engines[FL_ENGINE_PC].status, cases[i].status);
        CHECK_CONTAINS(s.engines[FL_ENGINE_PC].message, cases[i].msg);
        CHECK_CONTAINS(s.engines[FL_ENGINE_PC].message, "the session runs Trace");
        /* A later context is not tried. */
        fk.calls[0] = '\0';
        fl_pcs_context_created((void *)0x4);
        CHECK_STR(fk.calls, "");
        fl_pcs_engine_release();
    }
    /* Not asked for: nothing called. */
    fk_reset();
    fl_trace_options off = {.pc_sampling = false};
    CHECK_INT(fl_pcs_engine_start(&off, (void *)0x1), FL_PC_OFF);
    CHECK_STR(fk.calls, "");
    fl_pcs_engine_release();
}

/* Where CUPTI still has the activity API: its kinds enabled, each context
 * given the period; the decoder gets the aggregator. */
static void test_api_activity_method(void)
{
    fk_reset();
    fk.activity = CUPTI_SUCCESS;
    fl_pcs_set_api(&fake_api);
    CHECK_INT(start_on((void *)0x5, 9), FL_PC_ACTIVE);
    CHECK_STR(fk.calls, "AaaaP");
    CHECK_INT(fk.activity_period2, 9);
    CHECK(fl_pcs_engine_activity_sink() != NULL);
    fl_trace_stats s;
    memset(&s, 0, sizeof s);
    fl_pcs_engine_stats(&s);
    CHECK_INT(s.engines[FL_ENGINE_PC].counters.pc.method, FL_PC_METHOD_ACTIVITY);
    CHECK_INT(s.engines[FL_ENGINE_PC].counters.pc.contexts, 1);
    fl_pcs_engine_release();
    CHECK(fl_pcs_engine_activity_sink() == NULL);
}

/* The engine's row (engines/engine.h): under Deep its aggregator is left
 * in the environment for the engines after it (SASS metrics), with its
 * lock; with the activity method it cannot be shared, and the row says
 * why instead; without SASS metrics it offers nothing. */
static void test_row_shares_aggregator(void)
{
    fl_trace_options deep = {.pc_sampling = true, .sass_metrics = true, .pc_period_log2 = 12};
    fk_reset();
    fl_pcs_set_api(&fake_api);
    fl_engine_env env = {.ctx0 = (void *)0x6};
    CHECK_INT(fl_pcs_engine.start(&deep, &env), FL_PC_ACTIVE);
    CHECK(env.agg != NULL);
    CHECK(env.agg == fl_pcs_engine_shared());
    CHECK(env.lock == fl_pcs_engine_lock && env.unlock == fl_pcs_engine_unlock);
    CHECK(env.refuse == NULL);
    fl_pcs_engine.release();

    fk_reset();
    fk.activity = CUPTI_SUCCESS; /* the activity method: read without the lock */
    memset(&env, 0, sizeof env);
    env.ctx0 = (void *)0x7;
    CHECK_INT(fl_pcs_engine.start(&deep, &env), FL_PC_ACTIVE);
    CHECK(env.agg == NULL);
    CHECK_CONTAINS(env.refuse, "this device samples PCs through the activity API");
    CHECK(fl_pcs_engine.activity_sink() != NULL);
    fl_pcs_engine.release();

    fk_reset();
    fl_trace_options pc_only = {.pc_sampling = true, .pc_period_log2 = 12};
    memset(&env, 0, sizeof env);
    CHECK_INT(fl_pcs_engine.start(&pc_only, &env), FL_PC_ACTIVE);
    CHECK(env.agg == NULL && env.lock == NULL && env.refuse == NULL);
    fl_pcs_engine.release();
}

static void test_status_map(void)
{
    CHECK_INT(fl_pcs_status_of(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), FL_PC_NO_PERMISSION);
    CHECK_INT(fl_pcs_status_of(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES),
              FL_PC_VIRTUALIZED);
    CHECK_INT(fl_pcs_status_of(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED), FL_PC_NOT_SUPPORTED);
    CHECK_INT(fl_pcs_status_of(CUPTI_ERROR_UNKNOWN), FL_PC_NO_DRIVER);
    CHECK_INT(fl_pcs_status_of(CUPTI_ERROR_INVALID_PARAMETER), FL_PC_FAILED);
    char msg[512];
    fl_pcs_explain(CUPTI_ERROR_UNKNOWN, "cuptiPCSamplingEnable", msg, sizeof msg);
    CHECK_CONTAINS(msg, "cuptiPCSamplingEnable failed: CUPTI_ERROR_UNKNOWN (999)");
}

static void test_api(void)
{
    test_api_order_and_reads();
    test_api_disable_copy();
    test_api_contexts();
    test_api_fallbacks();
    test_api_activity_method();
    test_row_shares_aggregator();
    test_status_map();
    fl_pcs_set_api(NULL);
}

#endif /* GP_TEST_CUPTI_PCSAMP_API_H */
