/*
 * prom.c - the Prometheus text exposition of the newest samples, for
 * `gpu-profile serve` (serve.c): dcgm-exporter's metric names, types, help
 * texts and labels where DCGM has the metric (etc/default-counters.csv and
 * dcp-metrics-included.csv of NVIDIA/dcgm-exporter), ours under the
 * gpu_profile_ prefix where it has none; a device of the amd backend with
 * AMD device-metrics-exporter's names, units and labels instead
 * (amd_families: gpu_gfx_activity, gpu_used_vram in MiB, gpu_clock by
 * clock_type, ...; docs/cli.md has the mapping).
 *
 * Promises: a metric a device does not report has no sample line for that
 * device (never a 0), nor has a device whose newest sample is older than
 * stale_ns (a lost GPU: its last values are not current; only its
 * gpu_profile_sample_age_seconds stays), and a family no device reports is
 * left out whole;
 * label values escaped as the format says (backslash, quote, newline);
 * reads only what it is given (no NVML call, no lock).
 */
#include "cli.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

/* One family: name, type, help, the validity bit it needs (0: always), how
 * to print a device's value. */
typedef enum {
    V_F_U32, /* a sample field (family.off) as it is */
    V_F_U64,
    V_F_I32,
    V_MIB,  /* a field in bytes, in MiB (amd: device-metrics-exporter's MB are MiB) */
    V_KBPS, /* a field in KB/s, in bytes/s */
    V_FB_FREE,
    V_POWER,
    V_GPM_RATIO, /* a GPM percentage as DCGM's ratio 0..1 (family.gpm) */
    V_GPM_BPS,   /* a GPM rate in bytes/s */
    V_AGE,
    V_STUCK /* cli_prom_device.stuck (serve's detector), not a sample field */
} value_kind;

static const struct family {
    const char *name, *type, *help;
    uint32_t need;
    value_kind v;
    int gpm;        /* the gp_gpm_metric of V_GPM_* */
    uint32_t hneed; /* a health field's GP_H_* bit in health_valid */
    size_t off;     /* V_F_U32 .. V_KBPS: the field's offset in gp_device_sample */
} families[] = {
/* A sample field, valid with its GP_M_* bit. */
#define F(name, type, help, bit, kind, field)                                                      \
    {                                                                                              \
        name, type, help, bit, kind, 0, 0, offsetof(gp_device_sample, field)                       \
    }
    F("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", GP_M_CLOCK_SM, V_F_U32,
      clock_sm_mhz),
    F("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", GP_M_CLOCK_MEM, V_F_U32,
      clock_mem_mhz),
    F("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", GP_M_TEMP, V_F_I32, temp_c),
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", GP_M_POWER, V_POWER},
    F("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
      "Total energy consumption since boot (in mJ).", GP_M_ENERGY, V_F_U64, energy_mj),
    F("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", GP_M_UTIL_GPU, V_F_U32,
      util_gpu_pct),
    F("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", GP_M_UTIL_MEM, V_F_U32,
      util_mem_pct),
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
     GP_M_MEM_USED | GP_M_MEM_TOTAL, V_FB_FREE},
    F("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", GP_M_MEM_USED, V_MIB,
      mem_used_bytes),
    F("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
      "Current clock throttle reasons (bitmask of NVML's clocks event reasons).", GP_M_THROTTLE,
      V_F_U64, throttle_reasons),
    F("gpu_profile_pcie_tx_bytes_per_second", "gauge",
      "PCIe transmit throughput over NVML's 20 ms window (in bytes per second).", GP_M_PCIE_TX,
      V_KBPS, pcie_tx_kbps),
    F("gpu_profile_pcie_rx_bytes_per_second", "gauge",
      "PCIe receive throughput over NVML's 20 ms window (in bytes per second).", GP_M_PCIE_RX,
      V_KBPS, pcie_rx_kbps),
    /* DCGM's profiling (DCP) fields where NVML's GPM gives the same
     * measure, over the interval since the device's previous sample:
     * percentages become DCGM's ratios, PCIe stays in bytes/s.  DCGM's
     * PIPE_TENSOR_ACTIVE is the HMMA pipe (its help text), so it is GPM's
     * HMMA tensor metric, not "any tensor". */
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.",
     GP_M_GPM(GP_GPM_SM_ACTIVE), V_GPM_RATIO, GP_GPM_SM_ACTIVE},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.",
     GP_M_GPM(GP_GPM_SM_OCCUPANCY), V_GPM_RATIO, GP_GPM_SM_OCCUPANCY},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active.", GP_M_GPM(GP_GPM_TENSOR_HMMA), V_GPM_RATIO,
     GP_GPM_TENSOR_HMMA},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.",
     GP_M_GPM(GP_GPM_DRAM_ACTIVE), V_GPM_RATIO, GP_GPM_DRAM_ACTIVE},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge", "Ratio of cycles the fp64 pipes are active.",
     GP_M_GPM(GP_GPM_FP64_ACTIVE), V_GPM_RATIO, GP_GPM_FP64_ACTIVE},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge", "Ratio of cycles the fp32 pipes are active.",
     GP_M_GPM(GP_GPM_FP32_ACTIVE), V_GPM_RATIO, GP_GPM_FP32_ACTIVE},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge", "Ratio of cycles the fp16 pipes are active.",
     GP_M_GPM(GP_GPM_FP16_ACTIVE), V_GPM_RATIO, GP_GPM_FP16_ACTIVE},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second.",
     GP_M_GPM(GP_GPM_PCIE_TX), V_GPM_BPS, GP_GPM_PCIE_TX},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second.",
     GP_M_GPM(GP_GPM_PCIE_RX), V_GPM_BPS, GP_GPM_PCIE_RX},
    {"gpu_profile_tensor_active_ratio", "gauge",
     "Ratio of cycles any tensor pipe is active (NVML GPM).", GP_M_GPM(GP_GPM_TENSOR_ACTIVE),
     V_GPM_RATIO, GP_GPM_TENSOR_ACTIVE},
    {"gpu_profile_nvlink_tx_bytes_per_second", "gauge",
     "NVLink transmit throughput over every link (NVML GPM, in bytes per second).",
     GP_M_GPM(GP_GPM_NVLINK_TX), V_GPM_BPS, GP_GPM_NVLINK_TX},
    {"gpu_profile_nvlink_rx_bytes_per_second", "gauge",
     "NVLink receive throughput over every link (NVML GPM, in bytes per second).",
     GP_M_GPM(GP_GPM_NVLINK_RX), V_GPM_BPS, GP_GPM_NVLINK_RX},
/* Health (docs/metrics.md "Health"): dcgm-exporter's names and help
 * texts (default-counters.csv, dcp-metrics-included.csv), counters
 * as the driver keeps them. */
#define H(name, type, help, bit, kind, field)                                                      \
    {                                                                                              \
        name, type, help, 0, kind, 0, bit, offsetof(gp_device_sample, field)                       \
    }
    H("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", GP_H_MEM_TEMP, V_F_I32,
      mem_temp_c),
    H("DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed (in %).", GP_H_FAN, V_F_U32, fan_speed_pct),
    H("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", GP_H_ENC, V_F_U32,
      enc_util_pct),
    H("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", GP_H_DEC, V_F_U32,
      dec_util_pct),
    H("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", GP_H_XID,
      V_F_U32, xid_last),
    H("gpu_profile_xid_errors_total", "counter",
      "XID errors reported by the driver since sampling started.", GP_H_XID, V_F_U64, xid_count),
    H("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
      GP_H_PCIE_REPLAY, V_F_U64, pcie_replay_count),
    H("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
      GP_H_ECC_VOL, V_F_U64, ecc_sbe_volatile),
    H("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
      GP_H_ECC_VOL, V_F_U64, ecc_dbe_volatile),
    H("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter",
      "Total number of single-bit persistent ECC errors.", GP_H_ECC_AGG, V_F_U64,
      ecc_sbe_aggregate),
    H("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter",
      "Total number of double-bit persistent ECC errors.", GP_H_ECC_AGG, V_F_U64,
      ecc_dbe_aggregate),
    H("DCGM_FI_DEV_RETIRED_SBE", "counter",
      "Total number of retired pages due to single-bit errors.", GP_H_RETIRED, V_F_U32,
      retired_pages_sbe),
    H("DCGM_FI_DEV_RETIRED_DBE", "counter",
      "Total number of retired pages due to double-bit errors.", GP_H_RETIRED, V_F_U32,
      retired_pages_dbe),
    H("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
      "Number of remapped rows for uncorrectable errors", GP_H_REMAP, V_F_U32, remapped_rows_unc),
    H("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
      "Number of remapped rows for correctable errors", GP_H_REMAP, V_F_U32, remapped_rows_corr),
    H("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", GP_H_REMAP,
      V_F_U32, remap_failure),
    H("gpu_profile_row_remap_pending", "gauge",
      "Whether a row remapping waits for a GPU reset (1) or not (0).", GP_H_REMAP, V_F_U32,
      remap_pending),
    H("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
      "Total number of NVLink flow-control CRC errors.", GP_H_NVLINK, V_F_U64,
      nvlink_crc_flit_errs),
    H("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter",
      "Total number of NVLink recovery errors.", GP_H_NVLINK, V_F_U64, nvlink_recovery_errs),
#undef H
    {"gpu_profile_stuck", "gauge",
     "1 while the GPU looks busy but stuck (util.gpu high, SM activity and power near idle for "
     "--stuck-after seconds: a hung collective's signature), else 0.",
     0, V_STUCK},
    {"gpu_profile_sample_age_seconds", "gauge",
     "Seconds since this GPU's newest sample was taken (a stalled driver shows here).", 0, V_AGE},
};

/* AMD device-metrics-exporter's families for what ROCm SMI gives (its
 * docs/configuration/metricslist.md); gpu_clock carries clock_type. */
static const struct family amd_families[] = {
    F("gpu_gfx_activity", "gauge", "Graphics engine usage percentage (0 - 100).", GP_M_UTIL_GPU,
      V_F_U32, util_gpu_pct),
    F("gpu_umc_activity", "gauge", "Memory engine usage percentage (0 - 100).", GP_M_UTIL_MEM,
      V_F_U32, util_mem_pct),
    F("gpu_used_vram", "gauge", "Total VRAM memory used in MB.", GP_M_MEM_USED, V_MIB,
      mem_used_bytes),
    F("gpu_total_vram", "gauge", "Total VRAM available in MB.", GP_M_MEM_TOTAL, V_MIB,
      mem_total_bytes),
    {"gpu_power_usage", "gauge", "GPU power usage in Watts.", GP_M_POWER, V_POWER},
    F("gpu_edge_temperature", "gauge", "Edge temperature value in Celsius.", GP_M_TEMP, V_F_I32,
      temp_c),
    F("gpu_clock", "gauge", "Clock measure of the GPU in Mhz.", GP_M_CLOCK_SM, V_F_U32,
      clock_sm_mhz),
    F("gpu_clock", "gauge", NULL, GP_M_CLOCK_MEM, V_F_U32, clock_mem_mhz),
#undef F
    {"gpu_profile_sample_age_seconds", "gauge",
     "Seconds since this GPU's newest sample was taken (a stalled driver shows here).", 0, V_AGE},
};

void cli_prom_label_value(fl_buf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\')
            fl_buf_puts(b, "\\\\");
        else if (*s == '"')
            fl_buf_puts(b, "\\\"");
        else if (*s == '\n')
            fl_buf_puts(b, "\\n");
        else
            fl_buf_put(b, s, 1);
    }
}

/* A MIG instance is labelled as dcgm-exporter labels one: gpu, UUID,
 * pci_bus_id, device and modelName are its parent GPU's, GPU_I_PROFILE and
 * GPU_I_ID name the instance (an unknown one left out).  pci_bus_id and
 * DCGM_FI_DRIVER_VERSION where known, in dcgm-exporter's places. */
void cli_prom_labels_open(fl_buf *b, const cli_prom_device *d, const char *host, const char *driver)
{
    const gp_mig_info *m = &d->mig;
    uint32_t gpu = m->is_mig ? m->parent_index : d->index;
    fl_buf_printf(b, "{gpu=\"%" PRIu32 "\",UUID=\"", gpu);
    cli_prom_label_value(b, m->is_mig ? m->parent_uuid : d->uuid);
    if (d->pci_bus_id[0]) {
        fl_buf_puts(b, "\",pci_bus_id=\"");
        cli_prom_label_value(b, d->pci_bus_id);
    }
    fl_buf_printf(b, "\",device=\"nvidia%" PRIu32 "\",modelName=\"", gpu);
    cli_prom_label_value(b, m->is_mig ? m->parent_name : d->name);
    fl_buf_puts(b, "\",Hostname=\"");
    cli_prom_label_value(b, host);
    if (m->is_mig && m->profile[0]) {
        fl_buf_puts(b, "\",GPU_I_PROFILE=\"");
        cli_prom_label_value(b, m->profile);
    }
    if (m->is_mig && m->gpu_instance_id >= 0)
        fl_buf_printf(b, "\",GPU_I_ID=\"%d", (int)m->gpu_instance_id);
    if (driver && *driver) {
        fl_buf_puts(b, "\",DCGM_FI_DRIVER_VERSION=\"");
        cli_prom_label_value(b, driver);
    }
    fl_buf_puts(b, "\"");
}

static void labels(fl_buf *b, const cli_prom_device *d, const char *host, const char *driver)
{
    cli_prom_labels_open(b, d, host, driver);
    fl_buf_puts(b, "}");
}

/* device-metrics-exporter's labels; its serial_number is not in ROCm SMI's
 * calls we make, gpu_uuid (the unique id) stands for the device. */
static void amd_labels(fl_buf *b, const cli_prom_device *d, const char *host, uint32_t need)
{
    fl_buf_printf(b, "{gpu_id=\"%" PRIu32 "\",gpu_uuid=\"", d->index);
    cli_prom_label_value(b, d->uuid);
    fl_buf_puts(b, "\",card_model=\"");
    cli_prom_label_value(b, d->name);
    fl_buf_puts(b, "\",hostname=\"");
    cli_prom_label_value(b, host);
    if (need == GP_M_CLOCK_SM)
        fl_buf_puts(b, "\",clock_type=\"system\",clock_index=\"0");
    else if (need == GP_M_CLOCK_MEM)
        fl_buf_puts(b, "\",clock_type=\"memory\",clock_index=\"0");
    fl_buf_puts(b, "\"}");
}

/* The sample field a family prints (family.off), widened: the 64-bit
 * kinds read 8 bytes, the others 4. */
static uint64_t field_u64(const gp_device_sample *m, const struct family *fm)
{
    const char *p = (const char *)m + fm->off;
    if (fm->v == V_F_U64 || fm->v == V_MIB) {
        uint64_t x;
        memcpy(&x, p, sizeof x);
        return x;
    }
    uint32_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

static void value(fl_buf *b, const struct family *fm, const cli_prom_device *d,
                  uint64_t now_wall_ns)
{
    const gp_device_sample *m = &d->sample.m;
    const double mib = 1024.0 * 1024.0;
    switch (fm->v) {
    case V_F_U32:
    case V_F_U64:
        fl_buf_printf(b, " %" PRIu64 "\n", field_u64(m, fm));
        break;
    case V_F_I32:
        fl_buf_printf(b, " %" PRId32 "\n", (int32_t)field_u64(m, fm));
        break;
    case V_MIB:
        fl_buf_printf(b, " %.0f\n", (double)field_u64(m, fm) / mib);
        break;
    case V_KBPS:
        fl_buf_printf(b, " %" PRIu64 "\n", field_u64(m, fm) * 1024u);
        break;
    case V_FB_FREE:
        fl_buf_printf(b, " %.0f\n",
                      m->mem_total_bytes > m->mem_used_bytes
                          ? (double)(m->mem_total_bytes - m->mem_used_bytes) / mib
                          : 0.0);
        break;
    case V_POWER:
        fl_buf_printf(b, " %.3f\n", m->power_mw / 1000.0);
        break;
    case V_GPM_RATIO:
        fl_buf_printf(b, " %.6g\n", m->gpm[fm->gpm] / 100.0);
        break;
    case V_GPM_BPS:
        fl_buf_printf(b, " %.0f\n", m->gpm[fm->gpm]);
        break;
    case V_STUCK:
        fl_buf_printf(b, " %d\n", d->stuck > 0);
        break;
    case V_AGE: {
        uint64_t t = d->sample.t_wall_ns;
        fl_buf_printf(b, " %.3f\n", now_wall_ns > t ? (double)(now_wall_ns - t) / 1e9 : 0.0);
        break;
    }
    }
}

/* One table's families for the devices whose amd flag is `amd`.  A row
 * without help continues the family of the row before it (gpu_clock's
 * memory clock): its head is not written again. */
static void format_table(fl_buf *b, const struct family *tab, size_t n_tab, bool amd,
                         const cli_prom_device *devs, size_t n, const char *host,
                         const char *driver, uint64_t now_wall_ns, uint64_t stale_ns)
{
    bool head = false;
    for (size_t f = 0; f < n_tab; f++) {
        const struct family *fm = &tab[f];
        if (fm->help)
            head = false;
        for (size_t i = 0; i < n; i++) {
            const gp_sample *sm = &devs[i].sample;
            bool stale = now_wall_ns > sm->t_wall_ns && now_wall_ns - sm->t_wall_ns > stale_ns;
            if (devs[i].amd != amd || !devs[i].have || (sm->m.valid & fm->need) != fm->need ||
                (sm->m.health_valid & fm->hneed) != fm->hneed || (stale && fm->v != V_AGE) ||
                (fm->v == V_STUCK && devs[i].stuck < 0))
                continue;
            if (!head) {
                const char *help = fm->help ? fm->help : f ? tab[f - 1].help : "";
                fl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", fm->name, help, fm->name,
                              fm->type);
                head = true;
            }
            fl_buf_puts(b, fm->name);
            if (amd)
                amd_labels(b, &devs[i], host, fm->need);
            else
                labels(b, &devs[i], host, driver);
            value(b, fm, &devs[i], now_wall_ns);
        }
    }
}

void cli_prom_format(fl_buf *b, const cli_prom_device *devs, size_t n, const char *host,
                     const char *driver, uint64_t now_wall_ns, uint64_t stale_ns)
{
    format_table(b, families, sizeof families / sizeof families[0], false, devs, n, host, driver,
                 now_wall_ns, stale_ns);
    format_table(b, amd_families, sizeof amd_families / sizeof amd_families[0], true, devs, n, host,
                 driver, now_wall_ns, stale_ns);
}
