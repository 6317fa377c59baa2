/*
 * test_report_totals.c - the report's figures over several devices say
 * what the run's total says (issue 32, point 20; docs/json-schema.md,
 * "Vocabulary"): memory used and power are the sums of the devices'
 * figures (so the mean never reads above the max), a MIG instance whose
 * parent GPU has rows is left out (the parent covers it), and a sum that
 * not every device has is null / "n/a (not every device reports it)",
 * never a silent undercount.  Sessions written at run time with the
 * recorder's own record writers.
 */
#include "fl_log.h"
#include "reader/read.h"
#include "report_session.h"
#include "report/report.h"

#include <jansson.h>

/* Three devices: 0 a whole GPU, 1 a MIG instance of 0, 2 another GPU.
 * Rows (times in us after RS_T0): device 0 400 then 500 W, 4 then 6 GiB;
 * device 1 (MIG) 50 W, 1 GiB; device 2 300 then 200 W (or no power when
 * !power2), 2 GiB. */
static int write_session(const char *base, bool power2, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s/%s", base, RS_SID);
    if (mkdir(dir, 0755) != 0)
        return -1;
    gp_mig_info mig;
    memset(&mig, 0, sizeof mig);
    mig.is_mig = 1;
    mig.parent_index = 0;
    snprintf(mig.parent_uuid, sizeof mig.parent_uuid, "GPU-aaaa");
    snprintf(mig.profile, sizeof mig.profile, "1g.10gb");
    mig.gpu_instance_id = 9;
    mig.compute_instance_id = 0;
    fl_device_live live[3] = {{0, "GPU A", "GPU-aaaa", "NVIDIA", NULL, false, {0}},
                              {1, "GPU A MIG", "MIG-aaaa", "NVIDIA", NULL, false, {0}},
                              {2, "GPU B", "GPU-bbbb", "NVIDIA", NULL, false, {0}}};
    fl_device_static st[3] = {
        {0, "GPU A", "GPU-aaaa", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 132, 32, NULL},
        {1, "GPU A MIG", "MIG-aaaa", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 16, 32,
         &mig},
        {2, "GPU B", "GPU-bbbb", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 132, 32, NULL}};
    fl_job_start js = {.log_path = "logs",
                       .ts_ns = RS_T0,
                       .hostname = "host",
                       .devices = live,
                       .n_devices = 3,
                       .gpu_static = st,
                       .n_gpu_static = 3,
                       .session_kind = "monitor",
                       .profiling_engine = "nvidia.monitor"};
    fl_buf b = {0};
    fl_rec_job_start(&b, &rs_ident, &js);
    struct {
        uint64_t t;
        uint32_t dev, power_mw;
        uint64_t used_mib;
    } dm[] = {{100, 0, 400000, 4096},
              {100, 1, 50000, 1024},
              {100, 2, 300000, 2048},
              {200, 0, 500000, 6144},
              {200, 2, 200000, 2048}};
    fl_device_row dr[5];
    memset(dr, 0, sizeof dr);
    for (size_t i = 0; i < 5; i++) {
        dr[i].t_ns = RS_US(dm[i].t);
        dr[i].device_id = dm[i].dev;
        dr[i].s.valid = GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER;
        if (dm[i].dev == 2 && !power2)
            dr[i].s.valid &= ~GP_M_POWER;
        dr[i].s.power_mw = dm[i].power_mw;
        dr[i].s.mem_used_bytes = dm[i].used_mib * RS_MIB;
        dr[i].s.mem_total_bytes = 81920 * RS_MIB;
    }
    fl_rec_device_batch(&b, RS_SID, 1, dr, 5);
    fl_rec_shutdown(&b, &rs_ident, RS_US(1000));
    int rc = rs_put(dir, "system.log", &b, NULL);
    fl_buf_free(&b);
    return rc;
}

/* The report of dir as text and parsed JSON (caller frees both). */
static void report_of(const char *dir, char **text, json_t **j)
{
    *text = NULL;
    *j = NULL;
    fl_report *rep = fl_report_create();
    CHECK(rep != NULL);
    if (!rep)
        return;
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, &o, &cb, &res, &err), GP_OK);
    fl_report_finish(rep, &res);
    fl_buf t = {0}, js = {0};
    fl_report_text(rep, 10, &t);
    fl_report_json(rep, 10, &js);
    *text = fl_buf_take(&t);
    char *s = fl_buf_take(&js);
    json_error_t je;
    *j = s ? json_loads(s, 0, &je) : NULL;
    CHECK(*j != NULL);
    free(s);
    fl_report_destroy(rep);
}

static json_t *summary_key(json_t *j, const char *key)
{
    return json_object_get(json_object_get(j, "summary"), key);
}

static void test_sums(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-totals") == 0);
    CHECK(write_session(tmp, true, dir, sizeof dir) == 0);
    char *t;
    json_t *j;
    report_of(dir, &t, &j);
    /* Devices 0 and 2; the MIG instance's rows are its parent's too. */
    CHECK_INT(json_integer_value(summary_key(j, "metric_devices")), 2);
    CHECK_INT(json_integer_value(summary_key(j, "mem_used_max_bytes")), (6144 + 2048) * RS_MIB);
    CHECK_NEAR(json_number_value(summary_key(j, "power_mean_mw")), 450000 + 250000, 1e-9);
    CHECK_NEAR(json_number_value(summary_key(j, "power_max_mw")), 500000 + 300000, 1e-9);
    CHECK_CONTAINS(t, "\n  memory used       max 8.00 GiB (sum of the 2 devices' maxima)\n");
    CHECK_CONTAINS(t, "\n  power             mean 700.0 W  max 800.0 W (sums of the 2 devices' "
                      "means and maxima)\n");
    /* Each device's own figures, in the summary's names and units. */
    json_t *devs = json_object_get(j, "devices");
    CHECK_INT(json_array_size(devs), 3);
    json_t *d1 = json_array_get(devs, 1);
    CHECK_NEAR(json_number_value(json_object_get(d1, "power_max_mw")), 50000, 1e-9);
    CHECK_INT(json_integer_value(json_object_get(d1, "mem_used_max_bytes")), 1024 * RS_MIB);
    CHECK(json_object_get(d1, "power_max_w") == NULL);
    CHECK(json_object_get(d1, "mem_used_peak_bytes") == NULL);
    CHECK(t && !strstr(t, "peak"));
    free(t);
    json_decref(j);
    fl_rmtree(tmp);
}

static void test_partial(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-totals") == 0);
    CHECK(write_session(tmp, false, dir, sizeof dir) == 0);
    char *t;
    json_t *j;
    report_of(dir, &t, &j);
    CHECK(json_is_null(summary_key(j, "power_mean_mw")));
    CHECK(json_is_null(summary_key(j, "power_max_mw")));
    CHECK_INT(json_integer_value(summary_key(j, "mem_used_max_bytes")), (6144 + 2048) * RS_MIB);
    CHECK_CONTAINS(t, "\n  power             n/a (not every device reports it)\n");
    free(t);
    json_decref(j);
    fl_rmtree(tmp);
}

int main(void)
{
    (void)rs_write;
    (void)rs_write_nodev;
    test_sums();
    test_partial();
    return check_done("test_report_totals");
}
