/*
 * sampler/render_json.c - the JSON rendering of a gp_summary (schema
 * GP_SUMMARY_SCHEMA): every key always present (but "process", present
 * only when processes were named), null for what was not measured, stable identifiers rather than
 * prose for statuses.
 */
#include "../util/error.h"
#include "../util/text.h"
#include "render_out.h"
#include "gpu_profile.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ JSON */

typedef struct json {
    gp_out *o;
    int pretty;
    int first;
} json;

static void json_str_n(gp_out *o, const char *s, size_t n)
{
    gp_json_quote(s, n, gp_out_emit, o);
}

static void json_key(json *j, const char *key)
{
    if (!j->first)
        gp_out_ch(j->o, ',');
    j->first = 0;
    if (j->pretty)
        gp_out_str(j->o, "\n  ");
    gp_out_ch(j->o, '"');
    gp_out_str(j->o, key);
    gp_out_str(j->o, j->pretty ? "\": " : "\":");
}

/* The key, and null when the value is unknown: never a 0 for it.
 * Returns whether the caller writes the value. */
static int json_known(json *j, const char *key, int ok)
{
    json_key(j, key);
    if (!ok)
        gp_out_str(j->o, "null");
    return ok;
}

static void json_null(json *j, const char *key)
{
    (void)json_known(j, key, 0);
}

static void json_u64(json *j, const char *key, int ok, uint64_t v)
{
    if (json_known(j, key, ok))
        gp_out_u64(j->o, v);
}

static void json_i64(json *j, const char *key, int ok, int64_t v)
{
    if (json_known(j, key, ok))
        gp_out_i64(j->o, v);
}

/* Doubles: fixed point, 6 decimals at most, trailing zeros trimmed. */
static void json_num(json *j, const char *key, int ok, double v)
{
    if (json_known(j, key, ok && isfinite(v)))
        gp_out_fixed(j->o, v, 6, 1);
}

/* A string field; empty means unknown and is written as null. */
static void json_field(json *j, const char *key, const char *s, size_t size)
{
    size_t n = gp_field_len(s, size);
    if (json_known(j, key, n != 0))
        json_str_n(j->o, s, n);
}

static void json_sep(json *j, int *first)
{
    if (!*first)
        gp_out_str(j->o, j->pretty ? ", " : ",");
    *first = 0;
}

/* "gpm": null for a device without GPM, else an object with one member
 * per metric: null when not reported, else {mean, p95, max} in percent
 * ("mean_pct", ...) or bytes/s ("mean_bps", ...). */
static void put_gpm(json *j, const gp_summary *s)
{
    json_key(j, "gpm");
    if (!(s->valid & GP_M_GPM_ALL)) {
        gp_out_str(j->o, "null");
        return;
    }
    gp_out_ch(j->o, '{');
    for (unsigned i = 0; i < GP_GPM_COUNT; i++) {
        if (i)
            gp_out_ch(j->o, ',');
        if (j->pretty)
            gp_out_str(j->o, "\n    ");
        const char *name = gp_gpm_metric_name((gp_gpm_metric)i);
        json_str_n(j->o, name, strlen(name));
        gp_out_str(j->o, j->pretty ? ": " : ":");
        if (!(s->valid & GP_M_GPM(i))) {
            gp_out_str(j->o, "null");
            continue;
        }
        int rate = gp_gpm_metric_is_rate((gp_gpm_metric)i);
        json inner = {j->o, 0, 1};
        gp_out_ch(j->o, '{');
        json_num(&inner, rate ? "mean_bps" : "mean_pct", 1, s->gpm_mean[i]);
        json_num(&inner, rate ? "p95_bps" : "p95_pct", 1, s->gpm_p95[i]);
        json_num(&inner, rate ? "max_bps" : "max_pct", 1, s->gpm_max[i]);
        gp_out_ch(j->o, '}');
    }
    gp_out_str(j->o, j->pretty ? "\n  }" : "}");
}

/* "process": present only when the monitor was given processes
 * (gp_options.pids; the gpu-profile command always names its command's),
 * so summaries of regions without them read as before.  Their share of
 * the device; null where NVML did not answer. */
static void put_process(json *j, const gp_summary *s)
{
    if (!s->proc_requested)
        return;
    json_key(j, "process");
    int pm = (s->valid & GP_M_PROC_MEM) != 0, pu = (s->valid & GP_M_PROC_UTIL) != 0;
    json inner = {j->o, 0, 1};
    gp_out_ch(j->o, '{');
    json_u64(&inner, "count_max", pm, s->proc_count_max);
    json_num(&inner, "mem_used_mean_bytes", pm, s->proc_mem_used_mean_bytes);
    json_u64(&inner, "mem_used_max_bytes", pm, s->proc_mem_used_max_bytes);
    json_u64(&inner, "all_mem_used_max_bytes", pm, s->proc_all_mem_used_max_bytes);
    json_num(&inner, "sm_mean_pct", pu, s->proc_sm_mean_pct);
    json_u64(&inner, "sm_max_pct", pu, s->proc_sm_max_pct);
    json_num(&inner, "mem_mean_pct", pu, s->proc_mem_mean_pct);
    json_u64(&inner, "mem_max_pct", pu, s->proc_mem_max_pct);
    json_num(&inner, "all_sm_mean_pct", pu, s->proc_all_sm_mean_pct);
    gp_out_ch(j->o, '}');
}

/* "mig": null for a whole GPU, else the instance's identity in one line:
 * {profile, gpu_instance_id, compute_instance_id, parent_index,
 * parent_uuid, parent_name}, unknowns null. */
/* "stuck": where some sample could tell (util.gpu, GPM, power), the busy
 * but stuck stretches and the longest one's seconds. */
static void put_stuck(json *j, const gp_summary *s)
{
    if (!s->stuck_known)
        return;
    json_key(j, "stuck");
    json inner = {j->o, 0, 1};
    gp_out_ch(j->o, '{');
    json_u64(&inner, "episodes", 1, s->stuck_episodes);
    json_num(&inner, "longest_s", 1, s->stuck_longest_s);
    gp_out_ch(j->o, '}');
}

static void put_mig(json *j, const gp_summary *s)
{
    json_key(j, "mig");
    if (!s->mig.is_mig) {
        gp_out_str(j->o, "null");
        return;
    }
    const gp_mig_info *m = &s->mig;
    json inner = {j->o, 0, 1};
    gp_out_ch(j->o, '{');
    json_field(&inner, "profile", m->profile, sizeof m->profile);
    json_i64(&inner, "gpu_instance_id", m->gpu_instance_id >= 0, m->gpu_instance_id);
    json_i64(&inner, "compute_instance_id", m->compute_instance_id >= 0, m->compute_instance_id);
    json_u64(&inner, "parent_index", 1, m->parent_index);
    json_field(&inner, "parent_uuid", m->parent_uuid, sizeof m->parent_uuid);
    json_field(&inner, "parent_name", m->parent_name, sizeof m->parent_name);
    gp_out_ch(j->o, '}');
}

/* "health": always an object (docs/json-schema.md); a member is null where
 * no sample had its figure (GP_H_* clear: the device does not report it),
 * never 0.  Counters are their increase over the region. */
static void put_health(json *j, const gp_summary *s)
{
    uint32_t h = s->health_valid;
    int x = (h & GP_H_XID) != 0, ecc = (h & GP_H_ECC_VOL) != 0, ret = (h & GP_H_RETIRED) != 0,
        rm = (h & GP_H_REMAP) != 0, nv = (h & GP_H_NVLINK) != 0;
    json_key(j, "health");
    json inner = {j->o, 0, 1};
    gp_out_ch(j->o, '{');
    json_u64(&inner, "xid_count", x, s->xid_count);
    json_u64(&inner, "xid_last", x && s->xid_count > 0, s->xid_last);
    json_u64(&inner, "ecc_sbe_volatile_increase", ecc, s->ecc_sbe_volatile_increase);
    json_u64(&inner, "ecc_dbe_volatile_increase", ecc, s->ecc_dbe_volatile_increase);
    json_u64(&inner, "retired_pages_sbe_increase", ret, s->retired_pages_sbe_increase);
    json_u64(&inner, "retired_pages_dbe_increase", ret, s->retired_pages_dbe_increase);
    json_u64(&inner, "remapped_rows_corr_increase", rm, s->remapped_rows_corr_increase);
    json_u64(&inner, "remapped_rows_unc_increase", rm, s->remapped_rows_unc_increase);
    if (json_known(&inner, "remap_pending", rm))
        gp_out_str(j->o, s->remap_pending ? "true" : "false");
    if (json_known(&inner, "remap_failure", rm))
        gp_out_str(j->o, s->remap_failure ? "true" : "false");
    json_u64(&inner, "pcie_replay_increase", (h & GP_H_PCIE_REPLAY) != 0, s->pcie_replay_increase);
    json_u64(&inner, "nvlink_crc_flit_increase", nv, s->nvlink_crc_flit_increase);
    json_u64(&inner, "nvlink_recovery_increase", nv, s->nvlink_recovery_increase);
    json_u64(&inner, "fan_max_pct", (h & GP_H_FAN) != 0, s->fan_max_pct);
    json_i64(&inner, "mem_temp_max_c", (h & GP_H_MEM_TEMP) != 0, s->mem_temp_max_c);
    json_num(&inner, "enc_util_mean_pct", (h & GP_H_ENC) != 0, s->enc_util_mean_pct);
    json_u64(&inner, "enc_util_max_pct", (h & GP_H_ENC) != 0, s->enc_util_max_pct);
    json_num(&inner, "dec_util_mean_pct", (h & GP_H_DEC) != 0, s->dec_util_mean_pct);
    json_u64(&inner, "dec_util_max_pct", (h & GP_H_DEC) != 0, s->dec_util_max_pct);
    gp_out_ch(j->o, '}');
}

static void format_json(gp_out *o, const gp_summary *s, unsigned flags)
{
    json j = {o, (flags & GP_FMT_PRETTY) != 0, 1};
    const uint32_t v = s->valid;
    gp_out_ch(o, '{');

    json_key(&j, "schema");
    json_str_n(o, GP_SUMMARY_SCHEMA, strlen(GP_SUMMARY_SCHEMA));
    json_u64(&j, "schema_version", 1, GP_SUMMARY_SCHEMA_VERSION);

    json_u64(&j, "device_index", 1, s->device_index);
    json_field(&j, "name", s->name, sizeof s->name);
    json_field(&j, "uuid", s->uuid, sizeof s->uuid);
    json_field(&j, "backend", s->backend, sizeof s->backend);
    json_field(&j, "note", s->note, sizeof s->note);

    json_num(&j, "duration_s", 1, s->duration_s);
    json_num(&j, "interval_s", 1, s->interval_s);
    json_num(&j, "warmup_s", 1, s->warmup_s);
    json_u64(&j, "sample_count", 1, s->sample_count);
    json_u64(&j, "samples_warmup", 1, s->samples_warmup);
    json_num(&j, "interval_mean_s", s->sample_count >= 2, s->interval_mean_s);
    json_u64(&j, "valid_mask", 1, v);

    int ug = (v & GP_M_UTIL_GPU) != 0, um = (v & GP_M_UTIL_MEM) != 0;
    json_num(&j, "util_gpu_mean_pct", ug, s->util_gpu_mean);
    json_u64(&j, "util_gpu_p50_pct", ug, s->util_gpu_p50);
    json_u64(&j, "util_gpu_p95_pct", ug, s->util_gpu_p95);
    json_u64(&j, "util_gpu_max_pct", ug, s->util_gpu_max);
    json_u64(&j, "util_gpu_min_pct", ug, s->util_gpu_min);
    json_u64(&j, "util_gpu_p5_pct", ug, s->util_gpu_p5);
    json_u64(&j, "util_gpu_p99_pct", ug, s->util_gpu_p99);
    json_num(&j, "util_gpu_std_pct", ug, s->util_gpu_std); /* NaN (< 2 readings): null */
    json_num(&j, "util_gpu_idle_pct", ug, s->util_gpu_idle_pct);
    json_num(&j, "util_gpu_active_pct", ug, s->util_gpu_active_pct);
    json_num(&j, "util_mem_mean_pct", um, s->util_mem_mean);
    json_u64(&j, "util_mem_max_pct", um, s->util_mem_max);
    json_u64(&j, "mem_used_max_bytes", (v & GP_M_MEM_USED) != 0, s->mem_used_max_bytes);
    json_num(&j, "mem_used_mean_bytes", (v & GP_M_MEM_USED) != 0, s->mem_used_mean_bytes);
    json_u64(&j, "mem_total_bytes", (v & GP_M_MEM_TOTAL) != 0, s->mem_total_bytes);
    json_num(&j, "power_mean_mw", (v & GP_M_POWER) != 0, s->power_mean_mw);
    json_u64(&j, "power_max_mw", (v & GP_M_POWER) != 0, s->power_max_mw);
    json_num(&j, "energy_j", s->energy_source != GP_ENERGY_NONE, s->energy_j);
    json_num(&j, "energy_span_s", s->energy_source != GP_ENERGY_NONE, s->energy_span_s);
    json_key(&j, "energy_source");
    json_str_n(o, gp_energy_source_name(s->energy_source),
               strlen(gp_energy_source_name(s->energy_source)));
    json_i64(&j, "temp_max_c", (v & GP_M_TEMP) != 0, s->temp_max_c);
    json_num(&j, "temp_mean_c", (v & GP_M_TEMP) != 0, s->temp_mean_c);
    json_num(&j, "clock_sm_mean_mhz", (v & GP_M_CLOCK_SM) != 0, s->clock_sm_mean_mhz);
    json_u64(&j, "clock_sm_max_mhz", (v & GP_M_CLOCK_SM) != 0, s->clock_sm_max_mhz);
    json_num(&j, "clock_mem_mean_mhz", (v & GP_M_CLOCK_MEM) != 0, s->clock_mem_mean_mhz);

    if (v & GP_M_THROTTLE) {
        json_key(&j, "throttle_reasons");
        gp_out_ch(o, '[');
        int first = 1;
        for (unsigned bit = 0; bit < 64; bit++) {
            if (!(s->throttle_reasons_seen & (1ull << bit)))
                continue;
            char name[32];
            gp_throttle_name(name, sizeof name, bit);
            json_sep(&j, &first);
            json_str_n(o, name, strlen(name));
        }
        gp_out_ch(o, ']');
        json_u64(&j, "throttle_reasons_mask", 1, s->throttle_reasons_seen);
    } else {
        json_null(&j, "throttle_reasons");
        json_null(&j, "throttle_reasons_mask");
    }
    json_num(&j, "busy_time_est_s", ug, s->busy_time_est_s);

    json_key(&j, "sparkline");
    gp_out_ch(o, '[');
    int first = 1;
    for (uint32_t i = 0; i < gp_spark_cells(s); i++) {
        json_sep(&j, &first);
        if (s->spark[i] == GP_SPARK_NONE)
            gp_out_str(o, "null");
        else
            gp_out_u64(o, s->spark[i] > 100 ? 100 : s->spark[i]);
    }
    gp_out_ch(o, ']');

    json_key(&j, "device_status");
    json_str_n(o, gp_status_id(s->device_status), strlen(gp_status_id(s->device_status)));
    int failed = gp_has_device_error(s);
    if (failed)
        json_field(&j, "device_error", s->device_error, sizeof s->device_error);
    else
        json_null(&j, "device_error");
    json_num(&j, "device_error_at_s", failed, s->device_error_at_s);
    put_health(&j, s);
    put_gpm(&j, s);
    put_process(&j, s);
    put_stuck(&j, s);
    put_mig(&j, s);

    gp_out_str(o, j.pretty ? "\n}" : "}");
}

size_t gp_summary_to_json(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    return gp_out_render(format_json, s, flags, buf, cap);
}
