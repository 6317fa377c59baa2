/*
 * test_wire_health.c - the health figures in device_metric_batch rows
 * (wire/batches.c): the spec's fan_speed_pct, temp_mem_c, ecc_corrected
 * and ecc_uncorrected columns carry NVML's fan speed, HBM temperature and
 * volatile ECC counts, in the vocabulary's order, null in a row whose
 * device did not report them; a column appears once some row has a
 * non-zero value (the spec's rule for the optional columns), and never
 * for a session without them.
 */
#include "check.h"
#include "util/buf.h"
#include "wire/records.h"
#include "gpu_profile.h"

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

static fl_device_row row(uint64_t t, uint32_t dev)
{
    fl_device_row r;
    memset(&r, 0, sizeof r);
    r.t_ns = t;
    r.device_id = dev;
    r.s.valid = GP_M_UTIL_GPU;
    r.s.util_gpu_pct = 50;
    return r;
}

int main(void)
{
    const uint64_t t0 = 1760000000000000000ull;
    fl_device_row r[2] = {row(t0, 0), row(t0 + 1000000, 1)};
    r[0].s.health_valid = GP_H_FAN | GP_H_MEM_TEMP | GP_H_ECC_VOL | GP_H_XID;
    r[0].s.fan_speed_pct = 40;
    r[0].s.mem_temp_c = -2; /* signed, as temp_c */
    r[0].s.ecc_sbe_volatile = 3;
    r[0].s.ecc_dbe_volatile = 1;
    r[0].s.xid_count = 5; /* no column of the spec's */
    fl_buf b = {0};
    uint32_t seen = 0;
    fl_rec_device_batch_cols(&b, SID, 1, r, 2, &seen);
    CHECK(!b.oom);
    CHECK_CONTAINS(b.p, "\"columns\":[\"dt_ns\",\"device_id\",\"gpu_util\",\"fan_speed_pct\","
                        "\"temp_mem_c\",\"ecc_corrected\",\"ecc_uncorrected\"]");
    CHECK_CONTAINS(b.p, "\"rows\":[[0,0,50,40,-2,3,1],[1000000,1,50,null,null,null,null]]}\n");
    fl_buf_free(&b);

    /* Zero everywhere (a healthy GPU's counters) or unreported: no column. */
    fl_device_row z[2] = {row(t0, 0), row(t0 + 1000000, 1)};
    z[0].s.health_valid = GP_H_FAN | GP_H_MEM_TEMP | GP_H_ECC_VOL;
    fl_buf c = {0};
    uint32_t fresh = 0;
    fl_rec_device_batch_cols(&c, SID, 2, z, 2, &fresh);
    CHECK_CONTAINS(c.p, "\"columns\":[\"dt_ns\",\"device_id\",\"gpu_util\"]");
    CHECK(strstr(c.p, "fan_speed_pct") == NULL);
    fl_buf_free(&c);

    /* The session's columns stay: a later batch without the figures has
     * nulls there, and a counter back at 0 is a real 0. */
    fl_device_row later = row(t0 + 2000000, 0);
    later.s.health_valid = GP_H_ECC_VOL;
    fl_buf d = {0};
    fl_rec_device_batch_cols(&d, SID, 3, &later, 1, &seen);
    CHECK_CONTAINS(d.p, "\"rows\":[[0,0,50,null,null,0,0]]}\n");
    fl_buf_free(&d);
    return check_done("test_wire_health");
}
