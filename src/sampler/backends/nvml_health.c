/*
 * sampler/backends/nvml_health.c - a GPU's health figures in the NVML
 * backend: ECC counts, retired pages, remapped rows, the PCIe replay
 * counter, NVLink CRC / recovery errors, fan speed (here), the memory
 * temperature (a field value, nvml_fields.c), encoder / decoder
 * utilisation.
 *
 * Promises: never fails the read: a call that is absent or answers
 * anything but success leaves its GP_H_* bit clear (a lost GPU is reported
 * by the other metrics), so a figure the device does not report is absent,
 * never 0.  The counters move rarely and cost up to ~40 calls (NVLink is
 * per link), so they are read at a run's first read and every
 * NVML_HEALTH_PERIOD_NS, and the last values are repeated in the samples
 * between; encoder / decoder utilisation are gauges, read every time.
 * Runs on the device's runner thread inside a read job.
 */
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <string.h>

/* The health fields of a sample (all of them after health_valid). */
#define HEALTH_OFF offsetof(gp_device_sample, health_valid)
#define HEALTH_LEN (sizeof(gp_device_sample) - HEALTH_OFF)

#define SET_FN(dst, name) NVML_SET_FN(dst, gp_nvml_sym(h, (name)))

void gp_nvml_health_resolve(void *h, nvml_api *a)
{
    SET_FN(a->get_ecc, "nvmlDeviceGetTotalEccErrors");
    SET_FN(a->get_retired, "nvmlDeviceGetRetiredPages");
    SET_FN(a->get_remapped, "nvmlDeviceGetRemappedRows");
    SET_FN(a->get_pcie_replay, "nvmlDeviceGetPcieReplayCounter");
    SET_FN(a->get_fan, "nvmlDeviceGetFanSpeed");
    SET_FN(a->get_nvlink_err, "nvmlDeviceGetNvLinkErrorCounter");
    SET_FN(a->get_enc, "nvmlDeviceGetEncoderUtilization");
    SET_FN(a->get_dec, "nvmlDeviceGetDecoderUtilization");
    SET_FN(a->get_pci, "nvmlDeviceGetPciInfo_v3");
    SET_FN(a->event_create, "nvmlEventSetCreate");
    SET_FN(a->event_register, "nvmlDeviceRegisterEvents");
    SET_FN(a->event_wait, "nvmlEventSetWait_v2");
    SET_FN(a->event_free, "nvmlEventSetFree");
    if (!a->event_register || !a->event_wait || !a->event_free)
        a->event_create = NULL; /* XID events need all four */
}

void gp_nvml_health_begin(nvml_dev *d, uint64_t now_mono_ns)
{
    d->health_due =
        d->health_read_ns == 0 || now_mono_ns - d->health_read_ns >= NVML_HEALTH_PERIOD_NS;
    if (!d->health_due)
        return;
    d->health_read_ns = now_mono_ns ? now_mono_ns : 1;
    memset((char *)&d->health + HEALTH_OFF, 0, HEALTH_LEN);
}

static void read_ecc(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, gp_device_sample *h)
{
    if (!a->get_ecc)
        return;
    unsigned long long c[4] = {0, 0, 0, 0};
    nvmlReturn_t rc[4];
    gp_runner_doing(r, "nvmlDeviceGetTotalEccErrors");
    for (int i = 0; i < 4; i++)
        rc[i] = a->get_ecc(
            dev, i & 1 ? NVML_MEMORY_ERROR_TYPE_UNCORRECTED : NVML_MEMORY_ERROR_TYPE_CORRECTED,
            i < 2 ? NVML_VOLATILE_ECC : NVML_AGGREGATE_ECC, &c[i]);
    if (rc[0] == NVML_SUCCESS && rc[1] == NVML_SUCCESS) {
        h->ecc_sbe_volatile = c[0];
        h->ecc_dbe_volatile = c[1];
        h->health_valid |= GP_H_ECC_VOL;
    }
    if (rc[2] == NVML_SUCCESS && rc[3] == NVML_SUCCESS) {
        h->ecc_sbe_aggregate = c[2];
        h->ecc_dbe_aggregate = c[3];
        h->health_valid |= GP_H_ECC_AGG;
    }
}

/* The count of retired pages for one cause: asked with an empty buffer,
 * answered with SUCCESS (none) or INSUFFICIENT_SIZE (the count). */
static bool retired(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, int cause, uint32_t *out)
{
    unsigned n = 0;
    gp_runner_doing(r, "nvmlDeviceGetRetiredPages");
    nvmlReturn_t rc = a->get_retired(dev, cause, &n, NULL);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE)
        return false;
    *out = n;
    return true;
}

/* Summed over the links that answer; none answering: absent. */
static void read_nvlink(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, gp_device_sample *h)
{
    if (!a->get_nvlink_err)
        return;
    unsigned long long crc = 0, rec = 0;
    bool any = false;
    gp_runner_doing(r, "nvmlDeviceGetNvLinkErrorCounter");
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        unsigned long long c = 0, v = 0;
        if (a->get_nvlink_err(dev, link, NVML_NVLINK_ERROR_DL_CRC_FLIT, &c) != NVML_SUCCESS ||
            a->get_nvlink_err(dev, link, NVML_NVLINK_ERROR_DL_RECOVERY, &v) != NVML_SUCCESS)
            continue;
        crc += c;
        rec += v;
        any = true;
    }
    if (any) {
        h->nvlink_crc_flit_errs = crc;
        h->nvlink_recovery_errs = rec;
        h->health_valid |= GP_H_NVLINK;
    }
}

static void read_counters(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, gp_device_sample *h)
{
    read_ecc(r, a, dev, h);
    if (a->get_retired &&
        retired(r, a, dev, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                &h->retired_pages_sbe) &&
        retired(r, a, dev, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &h->retired_pages_dbe))
        h->health_valid |= GP_H_RETIRED;
    unsigned corr = 0, unc = 0, pending = 0, failed = 0, v = 0;
    gp_runner_doing(r, "nvmlDeviceGetRemappedRows");
    if (a->get_remapped && a->get_remapped(dev, &corr, &unc, &pending, &failed) == NVML_SUCCESS) {
        h->remapped_rows_corr = corr;
        h->remapped_rows_unc = unc;
        h->remap_pending = pending != 0;
        h->remap_failure = failed != 0;
        h->health_valid |= GP_H_REMAP;
    }
    gp_runner_doing(r, "nvmlDeviceGetPcieReplayCounter");
    if (a->get_pcie_replay && a->get_pcie_replay(dev, &v) == NVML_SUCCESS) {
        h->pcie_replay_count = v;
        h->health_valid |= GP_H_PCIE_REPLAY;
    }
    read_nvlink(r, a, dev, h);
    gp_runner_doing(r, "nvmlDeviceGetFanSpeed");
    if (a->get_fan && a->get_fan(dev, &v) == NVML_SUCCESS && v <= 100) {
        h->fan_speed_pct = v;
        h->health_valid |= GP_H_FAN;
    }
}

void gp_nvml_read_health(gp_runner *r, nvml_dev *d, gp_device_sample *out)
{
    const nvml_api *a = &d->key.lib->api;
    if (d->health_due)
        read_counters(r, a, d->dev, &d->health);
    memcpy((char *)out + HEALTH_OFF, (const char *)&d->health + HEALTH_OFF, HEALTH_LEN);
    unsigned pct = 0, period_us = 0;
    gp_runner_doing(r, "nvmlDeviceGetEncoderUtilization");
    if (a->get_enc && a->get_enc(d->dev, &pct, &period_us) == NVML_SUCCESS && pct <= 100) {
        out->enc_util_pct = pct;
        out->health_valid |= GP_H_ENC;
    }
    gp_runner_doing(r, "nvmlDeviceGetDecoderUtilization");
    if (a->get_dec && a->get_dec(d->dev, &pct, &period_us) == NVML_SUCCESS && pct <= 100) {
        out->dec_util_pct = pct;
        out->health_valid |= GP_H_DEC;
    }
}
