/*
 * test_nvml_health.c - the health figures of the NVML backend
 * (nvml_health.c, nvml_xid.c) against the fake libnvidia-ml
 * (tests/scenarios/nvml_health.txt), and the "busy but stuck" detector
 * (gp_stuck_feed, sampler/stuck.c) on hand-made samples.
 *
 * Checks exact values: every health figure of a GPU that reports them,
 * none (health_valid 0, fields 0) of one that does not nor of a driver
 * without the calls (the old fake build); the memory temperature through
 * the field values call; retired pages counted with an empty buffer; XID
 * events counted, the newest kept, waited for by their arrival; the
 * watcher thread ends and frees its event set at stop (the fake's call
 * counts).  The detector: runs counted in samples, broken by a healthy or
 * an incomplete sample (unknown, -1), idle power as the lowest seen.
 * The run summary's health (gp_health_add, rendered): counters' rises,
 * gauges' maxima, XIDs, nulls for what a device does not report.
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "util/error.h"
#include "gpu_profile.h"
#include "sampler/nvml_open.h"
#include "sampler/stats.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static const char *src_dir;

static void read_slot(void *ctx, size_t slot, gp_device_sample *s)
{
    gp_error err;
    gp_error_clear(&err);
    memset(s, 0xa5, sizeof *s); /* read() must set every field */
    CHECK_INT(gp_backend_nvml.read(ctx, slot, 0, s, &err), GP_OK);
}

static void nap_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void test_figures(void)
{
    char stats[1024];
    nvml_stats_path(stats, sizeof stats, "health");
    setenv("FAKE_NVML_STATS", stats, 1);
    unsigned idx[2] = {0, 1};
    void *ctx = nvml_open_start(src_dir, "nvml_health.txt", check_env("GP_TEST_FAKE_NVML"), idx, 2);
    if (!ctx)
        return;
    gp_device_sample s;
    read_slot(ctx, 0, &s);
    uint32_t all = GP_H_FAN | GP_H_ECC_VOL | GP_H_ECC_AGG | GP_H_RETIRED | GP_H_REMAP |
                   GP_H_PCIE_REPLAY | GP_H_NVLINK | GP_H_MEM_TEMP | GP_H_ENC | GP_H_DEC;
    CHECK_INT(s.health_valid & all, all);
    CHECK_U64(s.ecc_sbe_volatile, 3);
    CHECK_U64(s.ecc_dbe_volatile, 1);
    CHECK_U64(s.ecc_sbe_aggregate, 17);
    CHECK_U64(s.ecc_dbe_aggregate, 2);
    CHECK_INT(s.retired_pages_sbe, 4);
    CHECK_INT(s.retired_pages_dbe, 0);
    CHECK_INT(s.remapped_rows_corr, 5);
    CHECK_INT(s.remapped_rows_unc, 2);
    CHECK_INT(s.remap_pending, 1);
    CHECK_INT(s.remap_failure, 1);
    CHECK_U64(s.pcie_replay_count, 9);
    CHECK_U64(s.nvlink_crc_flit_errs, 11);
    CHECK_U64(s.nvlink_recovery_errs, 3);
    CHECK_INT(s.fan_speed_pct, 40);
    CHECK_INT(s.mem_temp_c, 48);
    CHECK_INT(s.enc_util_pct, 7);
    CHECK_INT(s.dec_util_pct, 13);
    /* The other metrics are untouched by health. */
    CHECK_INT(s.util_gpu_pct, 42);
    /* Device 1 reports none: clear bits, zero fields, and no XID watch. */
    gp_device_sample n;
    read_slot(ctx, 1, &n);
    CHECK_INT(n.health_valid, 0);
    CHECK_U64(n.ecc_sbe_volatile, 0);
    CHECK_INT(n.mem_temp_c, 0);
    CHECK_U64(n.xid_count, 0);
    /* Encoder utilisation is a gauge: read again each time. */
    read_slot(ctx, 0, &s);
    CHECK_INT(s.enc_util_pct, 8);
    /* Two readings of device 0 so far: XID 79 is due.  The watcher takes
     * it on its own thread: read until it shows (bounded, by the event). */
    unlink("nvml_health_xid48.trigger");
    for (int i = 0; i < 2000 && s.xid_count < 1; i++) {
        nap_ms(10);
        read_slot(ctx, 0, &s);
    }
    CHECK(s.health_valid & GP_H_XID);
    CHECK_U64(s.xid_count, 1);
    CHECK_INT(s.xid_last, 79);
    /* The second comes on demand: the file the scenario names. */
    FILE *f = fopen("nvml_health_xid48.trigger", "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    for (int i = 0; i < 2000 && s.xid_count < 2; i++) {
        nap_ms(10);
        read_slot(ctx, 0, &s);
    }
    unlink("nvml_health_xid48.trigger");
    CHECK_U64(s.xid_count, 2);
    CHECK_INT(s.xid_last, 48);
    read_slot(ctx, 1, &n);
    CHECK_INT(n.health_valid & GP_H_XID, 0);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
    unsetenv("FAKE_NVML_STATS");
    char *st = check_read_file(stats, NULL);
    CHECK(st != NULL);
    if (st) {
        /* One watcher: its set made, device 0 registered (device 1
         * refused), the set freed when it ended at stop. */
        CHECK_CONTAINS(st, "\nnvmlEventSetCreate 1\n");
        CHECK_CONTAINS(st, "\nnvmlDeviceRegisterEvents 2\n");
        CHECK_CONTAINS(st, "\nnvmlEventSetFree 1\n");
        /* Retired pages: two causes per counter reading, no buffer. */
        CHECK_CONTAINS(st, "\nnvmlDeviceGetRetiredPages ");
    }
    free(st);
    unlink(stats);
}

/* A driver from before these calls: no health figure, no XID watcher. */
static void test_old_driver(void)
{
    unsigned idx[1] = {0};
    void *ctx =
        nvml_open_start(src_dir, "nvml_health.txt", check_env("GP_TEST_FAKE_NVML_OLD"), idx, 1);
    if (!ctx)
        return;
    gp_device_sample s;
    read_slot(ctx, 0, &s);
    CHECK_INT(s.health_valid, 0);
    CHECK_U64(s.ecc_sbe_volatile, 0);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

static gp_device_sample sample(uint32_t util, double sm, uint32_t power_mw, bool gpm)
{
    gp_device_sample m;
    memset(&m, 0, sizeof m);
    m.valid = GP_M_UTIL_GPU | GP_M_POWER | (gpm ? GP_M_GPM(GP_GPM_SM_ACTIVE) : 0);
    m.util_gpu_pct = util;
    m.gpm[GP_GPM_SM_ACTIVE] = sm;
    m.power_mw = power_mw;
    return m;
}

static void test_stuck(void)
{
    gp_stuck_rule r;
    gp_stuck_rule_init(&r);
    CHECK_NEAR(r.util_min_pct, 90, 0);
    CHECK_NEAR(r.sm_active_max_pct, 5, 0);
    CHECK_NEAR(r.power_idle_ratio, 1.25, 0);
    CHECK_INT(r.after_samples, 60);
    r.after_samples = 3;
    gp_stuck_state st;
    memset(&st, 0, sizeof st);
    gp_device_sample busy = sample(100, 80, 400000, true);
    gp_device_sample hung = sample(100, 1.5, 90000, true);
    gp_device_sample idle = sample(0, 0, 70000, true);
    gp_device_sample nogpm = sample(100, 0, 70000, false);
    /* Idle first: the idle power is 70 W; 90 W is more than 1.25x of it. */
    CHECK_INT(gp_stuck_feed(&st, &r, &idle), 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &busy), 0);
    for (int i = 0; i < 5; i++)
        CHECK_INT(gp_stuck_feed(&st, &r, &hung), 0);
    CHECK_INT(st.run, 0);
    /* Near idle now: 85 W <= 87.5 W.  Three in a row: stuck. */
    hung.power_mw = 85000;
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 1);
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 1);
    CHECK_U64(st.episodes, 1);
    CHECK_U64(st.longest_run, 4);
    /* A busy sample ends it; one without GPM is unknown and breaks the run. */
    CHECK_INT(gp_stuck_feed(&st, &r, &busy), 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &nogpm), -1);
    CHECK_INT(st.known, 0);
    CHECK_INT(gp_stuck_feed(&st, &r, &hung), 0);
    CHECK_INT(st.run, 1);
    CHECK_U64(st.episodes, 1);
    /* Stuck from the very first sample: its own power is the idle one. */
    gp_stuck_state fresh;
    memset(&fresh, 0, sizeof fresh);
    hung.power_mw = 95000;
    for (int i = 0; i < 2; i++)
        CHECK_INT(gp_stuck_feed(&fresh, &r, &hung), 0);
    CHECK_INT(gp_stuck_feed(&fresh, &r, &hung), 1);
    CHECK_INT(gp_stuck_feed(NULL, &r, &hung), -1);
}

static atomic_int g_samples;

static void count_sample(const gp_sample *sm, void *user)
{
    (void)user;
    if (sm->slot == 0)
        atomic_fetch_add(&g_samples, 1);
}

/* The run summary over nvml_stuck.txt: stuck_after_s 0.025 at a 5 ms
 * interval is 5 samples; device 0 goes stuck from its fourth sample on and
 * stays, device 1 has no GPM.  Decided on samples: waited for by count. */
static void test_stuck_summary(void)
{
    nvml_use_scenario(src_dir, "nvml_stuck.txt");
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = check_env("GP_TEST_FAKE_NVML");
    o.device = GP_ALL_DEVICES;
    o.interval_s = 0.005;
    o.stuck_after_s = 0.025;
    o.on_sample = count_sample;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    for (int i = 0; i < 6000 && atomic_load(&g_samples) < 40; i++)
        nap_ms(5);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s0 = gp_monitor_summary(m, 0), *s1 = gp_monitor_summary(m, 1);
    CHECK(s0 && s1);
    if (s0 && s1) {
        CHECK_INT(s0->stuck_known, 1);
        CHECK_INT(s0->stuck_episodes, 1);
        /* At least the samples from the fourth on, times the interval. */
        CHECK(s0->stuck_longest_s >= (double)(s0->sample_count - 4) * 0.005 - 1e-9);
        CHECK_INT(s1->stuck_known, 0);
        CHECK_INT(s1->stuck_episodes, 0);
        char text[8192];
        gp_summary_format(s0, 0, text, sizeof text);
        CHECK_CONTAINS(text, "STUCK");
        CHECK_CONTAINS(text, "1 stretch busy but stuck, longest ");
        gp_summary_to_json(s0, 0, text, sizeof text);
        CHECK_CONTAINS(text, "\"stuck\":{\"episodes\":1,\"longest_s\":");
        gp_summary_to_json(s1, 0, text, sizeof text);
        CHECK(strstr(text, "\"stuck\"") == NULL);
        gp_summary_format(s1, 0, text, sizeof text);
        CHECK(strstr(text, "STUCK") == NULL);
    }
    gp_monitor_destroy(m);
}

/* The run summary's health over hand-made samples (exact): counters summed
 * over their rises (a reset adds nothing; a sample without NVLink does
 * not break its count), gauges' maxima and means, XIDs' count and newest
 * code; rendered as text (a HEALTH line for what went wrong) and JSON;
 * a device that reports none has nulls and no line. */
static void test_health_summary_samples(void)
{
    const uint32_t all = GP_H_XID | GP_H_ECC_VOL | GP_H_RETIRED | GP_H_REMAP | GP_H_PCIE_REPLAY |
                         GP_H_NVLINK | GP_H_FAN | GP_H_MEM_TEMP | GP_H_ENC | GP_H_DEC;
    gp_device_sample s[4];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 4; i++) {
        s[i].health_valid = all;
        s[i].retired_pages_sbe = 4;
        s[i].remapped_rows_corr = 5;
        s[i].nvlink_recovery_errs = 3;
    }
    s[0].ecc_sbe_volatile = 3, s[0].ecc_dbe_volatile = 1, s[0].remapped_rows_unc = 2;
    s[0].pcie_replay_count = 9, s[0].nvlink_crc_flit_errs = 11, s[0].fan_speed_pct = 40;
    s[0].mem_temp_c = 48, s[0].dec_util_pct = 10;
    s[1].ecc_sbe_volatile = 5, s[1].ecc_dbe_volatile = 1, s[1].retired_pages_dbe = 1;
    s[1].remapped_rows_unc = 3, s[1].remap_pending = 1, s[1].pcie_replay_count = 12;
    s[1].nvlink_crc_flit_errs = 11, s[1].fan_speed_pct = 55, s[1].mem_temp_c = 60;
    s[1].dec_util_pct = 30, s[1].xid_count = 1, s[1].xid_last = 79;
    s[2] = s[1]; /* the driver reloaded: ECC back to 0; NVLink not read */
    s[2].health_valid = all & ~GP_H_NVLINK;
    s[2].ecc_sbe_volatile = 0, s[2].ecc_dbe_volatile = 0, s[2].fan_speed_pct = 50;
    s[2].mem_temp_c = 52, s[2].dec_util_pct = 20, s[2].xid_count = 2, s[2].xid_last = 48;
    s[3] = s[2];
    s[3].health_valid = all;
    s[3].ecc_sbe_volatile = 1, s[3].nvlink_crc_flit_errs = 14;
    gp_health_acc h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 4; i++)
        gp_health_add(&h, &s[i]);
    gp_summary sum;
    memset(&sum, 0, sizeof sum);
    snprintf(sum.backend, sizeof sum.backend, "nvml");
    gp_health_summarize(&h, &sum);
    CHECK_INT(sum.health_valid, all);
    CHECK_INT(sum.xid_count, 2);
    CHECK_INT(sum.xid_last, 48);
    CHECK_INT(sum.ecc_sbe_volatile_increase, 3);
    CHECK_INT(sum.ecc_dbe_volatile_increase, 0);
    CHECK_INT(sum.retired_pages_sbe_increase, 0);
    CHECK_INT(sum.retired_pages_dbe_increase, 1);
    CHECK_INT(sum.remapped_rows_corr_increase, 0);
    CHECK_INT(sum.remapped_rows_unc_increase, 1);
    CHECK_INT(sum.remap_pending, 1);
    CHECK_INT(sum.remap_failure, 0);
    CHECK_INT(sum.pcie_replay_increase, 3);
    CHECK_INT(sum.nvlink_crc_flit_increase, 3);
    CHECK_INT(sum.nvlink_recovery_increase, 0);
    CHECK_INT(sum.fan_max_pct, 55);
    CHECK_INT(sum.mem_temp_max_c, 60);
    CHECK_NEAR(sum.enc_util_mean_pct, 0.0, 0);
    CHECK_INT(sum.enc_util_max_pct, 0);
    CHECK_NEAR(sum.dec_util_mean_pct, 20.0, 1e-12);
    CHECK_INT(sum.dec_util_max_pct, 30);
    char text[8192];
    gp_summary_format(&sum, 0, text, sizeof text);
    CHECK_CONTAINS(text, "  HEALTH            2 XIDs (newest 48), +3 ECC SBE, +1 retired pages, "
                         "+1 remapped rows, remap pending (reset the GPU), +3 PCIe replays, +3 "
                         "NVLink errors\n"
                         "  fan               max 55%\n"
                         "  memory temp       max 60 C\n"
                         "  video decoder     mean 20.0%  max 30%\n");
    CHECK(strstr(text, "video encoder") == NULL); /* idle: no news */
    gp_summary_to_json(&sum, 0, text, sizeof text);
    CHECK_CONTAINS(text, "\"health\":{\"xid_count\":2,\"xid_last\":48,"
                         "\"ecc_sbe_volatile_increase\":3,\"ecc_dbe_volatile_increase\":0,"
                         "\"retired_pages_sbe_increase\":0,\"retired_pages_dbe_increase\":1,"
                         "\"remapped_rows_corr_increase\":0,\"remapped_rows_unc_increase\":1,"
                         "\"remap_pending\":true,\"remap_failure\":false,"
                         "\"pcie_replay_increase\":3,\"nvlink_crc_flit_increase\":3,"
                         "\"nvlink_recovery_increase\":0,\"fan_max_pct\":55,\"mem_temp_max_c\":60,"
                         "\"enc_util_mean_pct\":0,\"enc_util_max_pct\":0,"
                         "\"dec_util_mean_pct\":20,\"dec_util_max_pct\":30}");

    /* Nothing reported: every member null, no line. */
    gp_health_acc none;
    memset(&none, 0, sizeof none);
    gp_device_sample z;
    memset(&z, 0, sizeof z);
    gp_health_add(&none, &z);
    memset(&sum, 0, sizeof sum);
    gp_health_summarize(&none, &sum);
    CHECK_INT(sum.health_valid, 0);
    gp_summary_format(&sum, 0, text, sizeof text);
    CHECK(strstr(text, "HEALTH") == NULL && strstr(text, "fan") == NULL &&
          strstr(text, "memory temp") == NULL);
    gp_summary_to_json(&sum, 0, text, sizeof text);
    CHECK_CONTAINS(text, "\"health\":{\"xid_count\":null,\"xid_last\":null,"
                         "\"ecc_sbe_volatile_increase\":null,\"ecc_dbe_volatile_increase\":null,"
                         "\"retired_pages_sbe_increase\":null,\"retired_pages_dbe_increase\":null,"
                         "\"remapped_rows_corr_increase\":null,\"remapped_rows_unc_increase\":null,"
                         "\"remap_pending\":null,\"remap_failure\":null,"
                         "\"pcie_replay_increase\":null,\"nvlink_crc_flit_increase\":null,"
                         "\"nvlink_recovery_increase\":null,\"fan_max_pct\":null,"
                         "\"mem_temp_max_c\":null,\"enc_util_mean_pct\":null,"
                         "\"enc_util_max_pct\":null,\"dec_util_mean_pct\":null,"
                         "\"dec_util_max_pct\":null}");
}

static atomic_int g_xid_seen;

static void watch_xid(const gp_sample *sm, void *user)
{
    (void)user;
    if (sm->slot == 0 && (sm->m.health_valid & GP_H_XID) && sm->m.xid_count > 0)
        atomic_store(&g_xid_seen, 1);
}

/* The run summary through a monitor on the fake (nvml_health.txt): device
 * 0's figures, its XID 79 (due after its second reading, waited for by its
 * arrival; the XID 48 never triggered), device 1's none. */
static void test_health_summary_monitor(void)
{
    unlink("nvml_health_xid48.trigger");
    nvml_use_scenario(src_dir, "nvml_health.txt");
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = check_env("GP_TEST_FAKE_NVML");
    o.device = GP_ALL_DEVICES;
    o.interval_s = 0.005;
    o.on_sample = watch_xid;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    for (int i = 0; i < 6000 && !atomic_load(&g_xid_seen); i++)
        nap_ms(5);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    const gp_summary *s0 = gp_monitor_summary(m, 0), *s1 = gp_monitor_summary(m, 1);
    CHECK(s0 && s1);
    if (s0 && s1) {
        CHECK_INT(s0->health_valid, GP_H_XID | GP_H_ECC_VOL | GP_H_RETIRED | GP_H_REMAP |
                                        GP_H_PCIE_REPLAY | GP_H_NVLINK | GP_H_FAN | GP_H_MEM_TEMP |
                                        GP_H_ENC | GP_H_DEC);
        CHECK_INT(s0->xid_count, 1);
        CHECK_INT(s0->xid_last, 79);
        CHECK_INT(s0->ecc_sbe_volatile_increase, 0); /* the scenario's counters stay */
        CHECK_INT(s0->pcie_replay_increase, 0);
        CHECK_INT(s0->remap_pending, 1);
        CHECK_INT(s0->remap_failure, 1);
        CHECK_INT(s0->fan_max_pct, 40);
        CHECK_INT(s0->mem_temp_max_c, 48);
        CHECK_INT(s0->dec_util_max_pct, 13);
        CHECK_NEAR(s0->dec_util_mean_pct, 13.0, 1e-12);
        CHECK_INT(s0->enc_util_max_pct, 8);
        char text[8192];
        gp_summary_format(s0, 0, text, sizeof text);
        CHECK_CONTAINS(text, "  HEALTH            1 XID (newest 79), remap pending (reset the "
                             "GPU), remap failed\n"
                             "  fan               max 40%\n"
                             "  memory temp       max 48 C\n");
        CHECK_CONTAINS(text, "  video decoder     mean 13.0%  max 13%\n");
        CHECK_INT(s1->health_valid, 0);
        gp_summary_format(s1, 0, text, sizeof text);
        CHECK(strstr(text, "HEALTH") == NULL && strstr(text, "  fan") == NULL);
        gp_summary_to_json(s1, 0, text, sizeof text);
        CHECK_CONTAINS(text, "\"health\":{\"xid_count\":null,\"xid_last\":null,");
    }
    gp_monitor_destroy(m);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    test_figures();
    test_old_driver();
    test_stuck();
    test_stuck_summary();
    test_health_summary_samples();
    test_health_summary_monitor();
    return check_done("test_nvml_health");
}
