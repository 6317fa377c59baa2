/*
 * sampler/health_stats.c - what a device's health figures did over a
 * region (gp_summary's health_* fields, from gp_device_sample's).
 *
 * Promises: O(1) memory; every sample counts, warmup ones too (an error
 * then is still an error); a figure no sample had keeps its GP_H_* bit
 * clear (unknown), never a 0 that reads as "none"; a counter's increase
 * is the sum of its rises between consecutive readings, so a counter the
 * driver resets mid-region (a reload) adds nothing instead of wrapping.
 */
#include "stats.h"

#include <string.h>

/* cur - prev when it rose, else 0 (a reset). */
static uint64_t rise(uint64_t cur, uint64_t prev)
{
    return cur > prev ? cur - prev : 0;
}

/* The counters' rises since the previous sample, where both had them. */
static void add_rises(gp_health_acc *h, const gp_device_sample *s, uint32_t both)
{
    const gp_device_sample *p = &h->prev;
    if (both & GP_H_ECC_VOL) {
        h->ecc_sbe += rise(s->ecc_sbe_volatile, p->ecc_sbe_volatile);
        h->ecc_dbe += rise(s->ecc_dbe_volatile, p->ecc_dbe_volatile);
    }
    if (both & GP_H_RETIRED) {
        h->retired_sbe += rise(s->retired_pages_sbe, p->retired_pages_sbe);
        h->retired_dbe += rise(s->retired_pages_dbe, p->retired_pages_dbe);
    }
    if (both & GP_H_REMAP) {
        h->remap_corr += rise(s->remapped_rows_corr, p->remapped_rows_corr);
        h->remap_unc += rise(s->remapped_rows_unc, p->remapped_rows_unc);
    }
    if (both & GP_H_PCIE_REPLAY)
        h->pcie_replay += rise(s->pcie_replay_count, p->pcie_replay_count);
    if (both & GP_H_NVLINK) {
        h->nvlink_crc += rise(s->nvlink_crc_flit_errs, p->nvlink_crc_flit_errs);
        h->nvlink_recovery += rise(s->nvlink_recovery_errs, p->nvlink_recovery_errs);
    }
}

/* The readings the next rises are taken from: each counter group's last
 * one, so a sample without it (a call that failed once) breaks nothing. */
static void keep_prev(gp_health_acc *h, const gp_device_sample *s, uint32_t v)
{
    gp_device_sample *p = &h->prev;
    if (v & GP_H_ECC_VOL) {
        p->ecc_sbe_volatile = s->ecc_sbe_volatile;
        p->ecc_dbe_volatile = s->ecc_dbe_volatile;
    }
    if (v & GP_H_RETIRED) {
        p->retired_pages_sbe = s->retired_pages_sbe;
        p->retired_pages_dbe = s->retired_pages_dbe;
    }
    if (v & GP_H_REMAP) {
        p->remapped_rows_corr = s->remapped_rows_corr;
        p->remapped_rows_unc = s->remapped_rows_unc;
    }
    if (v & GP_H_PCIE_REPLAY)
        p->pcie_replay_count = s->pcie_replay_count;
    if (v & GP_H_NVLINK) {
        p->nvlink_crc_flit_errs = s->nvlink_crc_flit_errs;
        p->nvlink_recovery_errs = s->nvlink_recovery_errs;
    }
    h->prev_valid |= v;
}

void gp_health_add(gp_health_acc *h, const gp_device_sample *s)
{
    if (!h || !s)
        return;
    uint32_t v = s->health_valid;
    h->valid |= v;
    add_rises(h, s, v & h->prev_valid);
    if (v & GP_H_REMAP) {
        h->remap_pending |= s->remap_pending != 0;
        h->remap_failure |= s->remap_failure != 0;
    }
    if (v & GP_H_FAN && (!h->n_fan++ || s->fan_speed_pct > h->fan_max))
        h->fan_max = s->fan_speed_pct;
    if (v & GP_H_MEM_TEMP && (!h->n_mem_temp++ || s->mem_temp_c > h->mem_temp_max))
        h->mem_temp_max = s->mem_temp_c;
    if (v & GP_H_ENC)
        gp_gauge_add(&h->enc, gp_pct_clamp(s->enc_util_pct));
    if (v & GP_H_DEC)
        gp_gauge_add(&h->dec, gp_pct_clamp(s->dec_util_pct));
    /* The watcher counts XIDs since sampling started: the highest count
     * seen is the region's, its newest code the last. */
    if (v & GP_H_XID && s->xid_count >= h->xid_count) {
        h->xid_count = s->xid_count;
        if (s->xid_count)
            h->xid_last = s->xid_last;
    }
    keep_prev(h, s, v);
}

void gp_health_summarize(const gp_health_acc *h, gp_summary *out)
{
    if (!h || !out)
        return;
    uint32_t v =
        h->valid & (GP_H_XID | GP_H_ECC_VOL | GP_H_RETIRED | GP_H_REMAP | GP_H_PCIE_REPLAY |
                    GP_H_NVLINK | GP_H_FAN | GP_H_MEM_TEMP | GP_H_ENC | GP_H_DEC);
    out->health_valid = v;
    out->xid_count = v & GP_H_XID ? h->xid_count : 0;
    out->xid_last = v & GP_H_XID ? h->xid_last : 0;
    out->ecc_sbe_volatile_increase = h->ecc_sbe;
    out->ecc_dbe_volatile_increase = h->ecc_dbe;
    out->retired_pages_sbe_increase = h->retired_sbe;
    out->retired_pages_dbe_increase = h->retired_dbe;
    out->remapped_rows_corr_increase = h->remap_corr;
    out->remapped_rows_unc_increase = h->remap_unc;
    out->remap_pending = h->remap_pending;
    out->remap_failure = h->remap_failure;
    out->pcie_replay_increase = h->pcie_replay;
    out->nvlink_crc_flit_increase = h->nvlink_crc;
    out->nvlink_recovery_increase = h->nvlink_recovery;
    out->fan_max_pct = v & GP_H_FAN ? h->fan_max : 0;
    out->mem_temp_max_c = v & GP_H_MEM_TEMP ? h->mem_temp_max : 0;
    out->enc_util_mean_pct = gp_gauge_mean(&h->enc);
    out->enc_util_max_pct = h->enc.max;
    out->dec_util_mean_pct = gp_gauge_mean(&h->dec);
    out->dec_util_max_pct = h->dec.max;
}
