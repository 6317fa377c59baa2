/*
 * test_cupti_engines.c - the plugin's engine table (plugin/engines/
 * engine.h, table.c) and the services the engines share (plugin/common/),
 * without a GPU:
 *  - the table: every engine once, in teardown order (PC sampling before
 *    SASS metrics, which may use its aggregator), each with the hooks the
 *    plugin calls unconditionally, scope hooks whole, metrics-table
 *    numbers distinct;
 *  - a session with nothing asked, started through the table over one
 *    environment: every engine answers FL_PC_OFF, leaves the environment
 *    as it was, and reports off;
 *  - the one CUPTI explainer: each engine's words over one mapping (a MIG
 *    instance is PM sampling's own status only), PC sampling's words where
 *    an engine has none of its own.
 */
#include "check.h"
#include "common/cupti_error.h"
#include "engines/engine.h"
#include "engines/pmsamp/pmsamp.h"

#include <string.h>

static const fl_engine *row(const char *name)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (strcmp(fl_engines[i]->name, name) == 0)
            return fl_engines[i];
    return NULL;
}

static size_t index_of(const char *name)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (strcmp(fl_engines[i]->name, name) == 0)
            return i;
    return (size_t)-1;
}

static void table(void)
{
    CHECK_INT(fl_n_engines, 4);
    CHECK(row("PcSampling") != NULL);
    CHECK(row("PmSampling") != NULL);
    CHECK(row("SassMetrics") != NULL);
    CHECK(row("RangeProfiler") != NULL);
    /* SASS metrics use PC sampling's aggregator under Deep: started after
     * it, released before it. */
    CHECK(index_of("PcSampling") < index_of("SassMetrics"));
    int ids = 0;
    for (size_t i = 0; i < fl_n_engines; i++) {
        const fl_engine *e = fl_engines[i];
        CHECK(e->start && e->drain && e->stop && e->stats && e->release);
        CHECK(e->trace && e->trace_what && *e->trace_what);
        CHECK_INT(e->wants_scopes != NULL, e->scope_begin != NULL);
        CHECK_INT(e->scope_begin != NULL, e->scope_end != NULL);
        CHECK_INT(e->context_created != NULL, e->context_destroying != NULL);
        CHECK_INT(e->context_created != NULL, e->fail != NULL && e->contexts_what != NULL);
        CHECK_INT(e->metrics_id >= 0, e->defaults != NULL && e->choose != NULL);
        for (size_t j = 0; j < i; j++)
            CHECK(e->metrics_id < 0 || e->metrics_id != fl_engines[j]->metrics_id);
        if (e->metrics_id >= 0)
            ids |= 1 << e->metrics_id;
    }
    CHECK_INT(ids, 7); /* metrics_abi.h: 0 RangeProfiler, 1 PmSampling, 2 SassMetrics */
    CHECK_INT(row("RangeProfiler")->metrics_id, 0);
    CHECK_INT(row("PmSampling")->metrics_id, 1);
    CHECK_INT(row("SassMetrics")->metrics_id, 2);
    /* The default sets through the rows. */
    const char *names[64];
    unsigned slots[64];
    CHECK_INT(row("PmSampling")->defaults(names, slots, 64), fl_pms_n_default_metrics);
    CHECK_STR(names[0], fl_pms_default_metrics[0]);
    CHECK_INT(row("PmSampling")->defaults(names, slots, 2), 2);
}

static void nothing_asked(void)
{
    fl_trace_options o;
    memset(&o, 0, sizeof o);
    fl_engine_env env = {.late = false};
    for (size_t i = 0; i < fl_n_engines; i++)
        CHECK_INT(fl_engines[i]->start(&o, &env), FL_PC_OFF);
    CHECK(env.agg == NULL);
    CHECK(env.refuse == NULL);
    for (size_t i = 0; i < fl_n_engines; i++) {
        if (fl_engines[i]->activity_sink)
            CHECK(fl_engines[i]->activity_sink() == NULL);
        if (fl_engines[i]->armed)
            CHECK(!fl_engines[i]->armed());
        if (fl_engines[i]->wants_scopes)
            CHECK(!fl_engines[i]->wants_scopes(&o));
    }
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    static const fl_trace_sink sink; /* nothing runs: nothing is handed over */
    for (size_t i = 0; i < fl_n_engines; i++) {
        fl_engines[i]->stop();
        fl_engines[i]->drain(&sink);
        fl_engines[i]->stats(&st);
    }
    CHECK_INT(st.engines[FL_ENGINE_PC].status, FL_PC_OFF);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, FL_PC_OFF);
    CHECK_INT(st.engines[FL_ENGINE_SASS].status, FL_PC_OFF);
    CHECK_INT(st.engines[FL_ENGINE_RP].status, FL_PC_OFF);
    for (size_t i = fl_n_engines; i-- > 0;)
        fl_engines[i]->release();
}

/* The statistics' seam: every row names its own slot of
 * fl_trace_stats.engines, the slots are all taken, and an engine's stats
 * hook writes its slot (and the common part), never another engine's. */
static void stats_slots(void)
{
    unsigned taken = 0;
    for (size_t i = 0; i < fl_n_engines; i++) {
        uint32_t slot = fl_engines[i]->slot;
        CHECK(slot < FL_ENGINE_SLOTS);
        CHECK_INT(taken & (1u << slot), 0);
        taken |= 1u << slot;
    }
    CHECK_INT(taken, (1u << FL_ENGINE_SLOTS) - 1);
    CHECK_INT(row("PcSampling")->slot, FL_ENGINE_PC);
    CHECK_INT(row("PmSampling")->slot, FL_ENGINE_PM);
    CHECK_INT(row("SassMetrics")->slot, FL_ENGINE_SASS);
    CHECK_INT(row("RangeProfiler")->slot, FL_ENGINE_RP);
    static fl_trace_stats before, st;
    memset(&before, 0xa5, sizeof before);
    for (size_t i = 0; i < fl_n_engines; i++) {
        const fl_engine *e = fl_engines[i];
        st = before;
        st.engines[FL_ENGINE_PC].status = FL_PC_OFF; /* SASS metrics read PC sampling's */
        e->stats(&st);
        CHECK_INT(st.engines[e->slot].status, FL_PC_OFF); /* nothing was started */
        for (uint32_t k = 0; k < FL_ENGINE_SLOTS; k++)
            if (k != e->slot && k != FL_ENGINE_PC)
                CHECK(memcmp(&st.engines[k], &before.engines[k], sizeof st.engines[k]) == 0);
    }
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static void explainer(void)
{
    CUptiResult mig = CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED;
    CHECK_INT(fl_pcs_status_of(mig), FL_PC_NOT_SUPPORTED);
    CHECK_INT(fl_pms_status_of(mig), FL_PC_MIG);
    CHECK_INT(fl_pcs_status_of(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), FL_PC_NO_PERMISSION);
    CHECK_INT(fl_pms_status_of(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), FL_PC_NO_PERMISSION);
    CHECK_INT(fl_pms_status_of(CUPTI_ERROR_HARDWARE_BUSY), FL_PC_CONFLICT);
    CHECK_INT(fl_cupti_status(CUPTI_SUCCESS, NULL), FL_PC_ACTIVE);
    char m[512];
    fl_pms_explain(mig, "cuptiPmSamplingEnable", m, sizeof m);
    CHECK(strncmp(m, "cuptiPmSamplingEnable failed: ", 30) == 0);
    CHECK(ends_with(m, "(43): PM sampling needs the whole GPU, not a MIG instance: run on a GPU "
                       "with MIG disabled (nvidia-smi -i N -mig 0, as root, with no process on "
                       "it); the session runs Trace"));
    fl_pcs_explain(mig, "cuptiPCSamplingEnable", m, sizeof m);
    CHECK(ends_with(m, "(43): this device, driver or CUPTI has no PC sampling (it needs compute "
                       "capability 7.0 or newer, not MIG, and a CUPTI no older than the "
                       "driver); the session runs Trace"));
    /* The words every engine shares. */
    CHECK_STR(fl_pcs_fix(FL_PC_NO_DRIVER),
              "CUPTI found no working NVIDIA driver (no GPU, or the driver is not loaded)");
    CHECK_STR(fl_pcs_fix(FL_PC_FAILED), "see CUPTI's message");
    CHECK_STR(fl_pcs_fix(FL_PC_MIG), "see CUPTI's message");
    /* An engine's words where it has them, PC sampling's where it has
     * none (the Profiler API's engines share them). */
    static const fl_cupti_fixes own = {.not_supported = "own words"};
    CHECK_STR(fl_cupti_fix(FL_PC_NOT_SUPPORTED, &own), "own words");
    CHECK_STR(fl_cupti_fix(FL_PC_NO_PERMISSION, &own), fl_pcs_fix(FL_PC_NO_PERMISSION));
    CHECK_STR(fl_cupti_fix(FL_PC_CONFLICT, &own), fl_pcs_fix(FL_PC_CONFLICT));
    CHECK_STR(fl_cupti_name((CUptiResult)123456), "unknown CUPTI error");
}

int main(void)
{
    table();
    nothing_asked();
    stats_slots();
    explainer();
    return check_done("test_cupti_engines");
}
