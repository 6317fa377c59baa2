/*
 * test_report_devices.c - which device a row is and what it is called
 * when CUDA and NVML number the devices differently (issue 32): job_start's
 * gpu_static_devices and devices (NVML's numbers, the device_metric_batch
 * rows') and cuda_static_devices (CUDA's, the kernel rows') joined by uuid
 * in the report's model, fed through the report's callbacks: NVML's GPU 0
 * keeps its own name under CUDA_VISIBLE_DEVICES=1, the kernels run on GPU 1,
 * a MIG instance's "MIG-" uuid joins CUDA's "GPU-" spelling of it, a
 * device only one side lists still shows, and a session without uuids is
 * joined by number as before.  And "busy but stuck" per device, through
 * the sampler's detector, n/a where the rows lack what it needs.
 */
#include "check.h"
#include "reader/read.h"
#include "report/report.h"
#include "util/buf.h"

#include <jansson.h>

static const char *const kcols[] = {"dt_ns",       "kernel_id",   "stream_id",
                                    "duration_ns", "corr_id",     "dyn_shared",
                                    "num_regs",    "has_details", "device_id"};
static const char *const dcols[] = {"dt_ns", "device_id", "gpu_util"};

typedef struct fed {
    fl_report *rep;
    fl_read_cb cb;
    char *text;
    json_t *j;
} fed;

static fl_cell ci(int64_t v)
{
    fl_cell c;
    memset(&c, 0, sizeof c);
    c.kind = FL_CELL_INT;
    c.i = v;
    return c;
}

/* One batch of rows (ncols cells each) through the callbacks. */
static void batch(fed *f, const char *type, int ch, const char *const *cols, size_t ncols,
                  const int64_t *v, size_t nrows)
{
    fl_cell cells[64];
    for (size_t i = 0; i < ncols * nrows && i < 64; i++)
        cells[i] = ci(v[i]);
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = type;
    b.channel = ch;
    b.base_time_ns = 1000000;
    b.ncols = ncols;
    b.cols = cols;
    b.cells = cells;
    b.nrows = nrows;
    fl_batch_map_columns(&b);
    f->cb.batch(f->cb.user, &b);
}

/* A report of job_start js (JSON text), device rows of NVML's devices
 * nvml[0..n_nvml), and one kernel on CUDA's device cuda_dev (-1: a row
 * without device_id). */
static void feed(fed *f, const char *js, const int64_t *nvml, size_t n_nvml, int64_t cuda_dev)
{
    memset(f, 0, sizeof *f);
    f->rep = fl_report_create();
    CHECK(f->rep != NULL);
    if (!f->rep)
        return;
    fl_report_callbacks(f->rep, &f->cb);
    json_t *rec = json_loads(js, 0, NULL);
    CHECK(rec != NULL);
    f->cb.record(f->cb.user, FL_CH_DEVICE, FL_T_JOB_START, "job_start", rec);
    json_decref(rec);
    int64_t d[3 * 8];
    for (size_t i = 0; i < n_nvml && i < 8; i++) {
        d[3 * i] = 0;
        d[3 * i + 1] = nvml[i];
        d[3 * i + 2] = 50;
    }
    batch(f, "device_metric_batch", FL_CH_SYSTEM, dcols, 3, d, n_nvml);
    int64_t k[9] = {0, 1, 7, 1000, 5, 0, 32, 0, cuda_dev};
    batch(f, "kernel_event_batch", FL_CH_DEVICE, kcols, cuda_dev < 0 ? 8 : 9, k, 1);
    fl_report_finish(f->rep, NULL);
    fl_buf t = {0}, j = {0};
    fl_report_text(f->rep, 5, &t);
    fl_report_json(f->rep, 5, &j);
    f->text = fl_buf_take(&t);
    char *json = fl_buf_take(&j);
    f->j = json_loads(json ? json : "", 0, NULL);
    CHECK(f->j != NULL);
    free(json);
    if (!f->text)
        f->text = strdup("");
}

static void fed_free(fed *f)
{
    free(f->text);
    json_decref(f->j);
    fl_report_destroy(f->rep);
}

/* "id/cuda_id/name" of session.devices, joined by spaces. */
static void devices_of(const fed *f, char *out, size_t cap)
{
    out[0] = '\0';
    json_t *devs = json_object_get(json_object_get(f->j, "session"), "devices");
    for (size_t i = 0; i < json_array_size(devs); i++) {
        json_t *d = json_array_get(devs, i);
        json_t *cid = json_object_get(d, "cuda_id");
        size_t n = strlen(out);
        char c[24] = "-";
        if (json_is_integer(cid))
            snprintf(c, sizeof c, "%lld", (long long)json_integer_value(cid));
        snprintf(out + n, cap - n, "%s%lld/%s/%s", n ? " " : "",
                 (long long)json_integer_value(json_object_get(d, "id")), c,
                 json_string_value(json_object_get(d, "name")));
    }
}

#define DEV(id, name, uuid) "{\"id\":" #id ",\"name\":\"" name "\",\"uuid\":" uuid "}"
#define JS(gpu, cuda)                                                                              \
    "{\"type\":\"job_start\",\"app\":\"a\",\"session_id\":\"s\",\"ts_ns\":1000000,"                \
    "\"devices\":[],\"gpu_static_devices\":[" gpu "],\"cuda_static_devices\":[" cuda "]}"
#define UA "\"GPU-aaaaaaaa-0000-0000-0000-000000000000\""
#define UB "\"GPU-bbbbbbbb-0000-0000-0000-000000000001\""

/* CUDA_VISIBLE_DEVICES=1 as GPUFlight writes it: CUDA's device 0 is
 * NVML's 1. */
static void test_visible_devices(void)
{
    static const int64_t nvml[] = {0, 1};
    fed f;
    feed(&f, JS(DEV(0, "NVIDIA A100", UA) "," DEV(1, "NVIDIA H100", UB), DEV(0, "NVIDIA H100", UB)),
         nvml, 2, 0);
    char devs[512];
    devices_of(&f, devs, sizeof devs);
    CHECK_STR(devs, "0/-/NVIDIA A100 1/0/NVIDIA H100");
    CHECK_CONTAINS(f.text, "  GPU 0  NVIDIA A100  1 sample\n");
    CHECK_CONTAINS(f.text, "  GPU 1  NVIDIA H100  1 sample\n");
    CHECK_CONTAINS(f.text, "GPU 1 (union of its kernels' intervals over the duration)\n");
    json_t *busy = json_array_get(json_object_get(json_object_get(f.j, "summary"), "gpu_busy"), 0);
    CHECK_INT(json_integer_value(json_object_get(busy, "device_id")), 1);
    json_t *d0 = json_array_get(json_object_get(f.j, "devices"), 0);
    CHECK_STR(json_string_value(json_object_get(d0, "name")), "NVIDIA A100");
    fed_free(&f);
}

/* A MIG instance: NVML's "MIG-" uuid, CUDA's same bytes as "GPU-"; and a
 * device only CUDA lists (another uuid, ordinal 3) shows under its own
 * number. */
static void test_mig_and_one_side(void)
{
    static const int64_t nvml[] = {0, 1};
    fed f;
    feed(&f,
         JS(DEV(0, "NVIDIA H100", UA) "," DEV(1, "NVIDIA H100 MIG 1g.10gb",
                                              "\"MIG-CCCCCCCC-0000-0000-0000-000000000002\""),
            DEV(0, "NVIDIA H100", "\"GPU-cccccccc-0000-0000-0000-000000000002\"") "," DEV(
                3, "NVIDIA L4", "\"GPU-dddddddd-0000-0000-0000-000000000003\"")),
         nvml, 2, 0);
    char devs[512];
    devices_of(&f, devs, sizeof devs);
    CHECK_STR(devs, "0/-/NVIDIA H100 1/0/NVIDIA H100 MIG 1g.10gb 3/3/NVIDIA L4");
    CHECK_CONTAINS(f.text, "GPU 1 (union of its kernels' intervals over the duration)\n");
    fed_free(&f);
}

/* Without uuids (an older writer) the lists are joined by number, as
 * before: one device, and a kernel row without device_id is on it. */
static void test_no_uuids(void)
{
    static const int64_t nvml[] = {0};
    fed f;
    feed(&f, JS(DEV(0, "NVIDIA A100", "null"), DEV(0, "NVIDIA A100", "null")), nvml, 1, -1);
    char devs[512];
    devices_of(&f, devs, sizeof devs);
    CHECK_STR(devs, "0/0/NVIDIA A100");
    CHECK_CONTAINS(f.text, "GPU 0 (union of its kernels' intervals over the duration)\n");
    CHECK_CONTAINS(f.text, "  GPU 0  NVIDIA A100  1 sample\n");
    fed_free(&f);
}

static const char *const scols[] = {"dt_ns", "device_id", "gpu_util", "power_mw",
                                    "sm_active_pct_x100"};

/* Rows (5 cells each, -1: null) of device_metric_batch, ten to a batch. */
static void stuck_rows(fed *f, const int64_t *v, size_t nrows)
{
    for (size_t at = 0; at < nrows; at += 10) {
        fl_cell cells[50];
        size_t n = nrows - at < 10 ? nrows - at : 10;
        for (size_t i = 0; i < n * 5; i++) {
            int64_t x = v[at * 5 + i];
            cells[i] = x < 0 ? (fl_cell){.kind = FL_CELL_NULL} : ci(x);
        }
        fl_batch b;
        memset(&b, 0, sizeof b);
        b.type = "device_metric_batch";
        b.channel = FL_CH_SYSTEM;
        b.base_time_ns = 1000000;
        b.ncols = 5;
        b.cols = scols;
        b.cells = cells;
        b.nrows = n;
        fl_batch_map_columns(&b);
        f->cb.batch(f->cb.user, &b);
    }
}

/* "Busy but stuck" in the session report (issue 40): GPU 0 busy at 100 %
 * with 1 % SM activity and idle power for 65 samples in a row (seconds
 * 5 to 69) is one stretch; GPU 1 without GPM SM activity is n/a (unknown),
 * never "none"; GPU 2, known and busy for real, is none. */
static void test_stuck(void)
{
    enum { N0 = 75, N1 = 3, N2 = 5 };
    static int64_t v[(N0 + N1 + N2) * 5];
    size_t r = 0;
    for (int i = 0; i < N0; i++, r++) {
        bool st = i >= 5 && i < 70;
        int64_t row[5] = {(int64_t)i * 1000000000, 0, st ? 100 : 50, st ? 70000 : 200000,
                          st ? 100 : 4000};
        memcpy(&v[r * 5], row, sizeof row);
    }
    for (int i = 0; i < N1; i++, r++) {
        int64_t row[5] = {(int64_t)i * 1000000000, 1, 100, 70000, -1};
        memcpy(&v[r * 5], row, sizeof row);
    }
    for (int i = 0; i < N2; i++, r++) {
        int64_t row[5] = {(int64_t)i * 1000000000, 2, 100, 200000, 9000};
        memcpy(&v[r * 5], row, sizeof row);
    }
    fed f;
    memset(&f, 0, sizeof f);
    f.rep = fl_report_create();
    CHECK(f.rep != NULL);
    if (!f.rep)
        return;
    fl_report_callbacks(f.rep, &f.cb);
    json_t *rec = json_loads(JS(DEV(0, "NVIDIA H100", UA), DEV(0, "NVIDIA H100", UA)), 0, NULL);
    f.cb.record(f.cb.user, FL_CH_DEVICE, FL_T_JOB_START, "job_start", rec);
    json_decref(rec);
    stuck_rows(&f, v, r);
    fl_report_finish(f.rep, NULL);
    fl_buf t = {0}, j = {0};
    fl_report_text(f.rep, 5, &t);
    fl_report_json(f.rep, 5, &j);
    f.text = fl_buf_take(&t);
    char *json = fl_buf_take(&j);
    f.j = json_loads(json ? json : "", 0, NULL);
    free(json);
    CHECK(f.text != NULL && f.j != NULL);
    if (!f.text || !f.j) {
        fed_free(&f);
        return;
    }
    CHECK_CONTAINS(f.text, "    stuck             1 stretch in 75 samples (util.gpu >= 90%, SM "
                           "active <= 5%, power <= 1.25 x idle 70.0 W, 60 in a row)\n"
                           "      at +5.000 s for 64.000 s (65 samples)\n");
    CHECK_CONTAINS(f.text, "    stuck             n/a (no sample had util.gpu, GPM SM activity "
                           "and power)\n");
    CHECK_CONTAINS(f.text, "    stuck             none in 5 samples (util.gpu >= 90%, SM active "
                           "<= 5%, power <= 1.25 x idle 200.0 W, 60 in a row)\n");
    json_t *devs = json_object_get(f.j, "devices");
    CHECK_INT(json_array_size(devs), 3);
    json_t *s0 = json_object_get(json_array_get(devs, 0), "stuck");
    CHECK_INT(json_integer_value(json_object_get(s0, "known_samples")), 75);
    CHECK_INT(json_integer_value(json_object_get(s0, "stretch_count")), 1);
    CHECK_INT(json_integer_value(json_object_get(s0, "longest_run_samples")), 65);
    json_t *rule = json_object_get(s0, "rule");
    CHECK_INT(json_integer_value(json_object_get(rule, "idle_power_mw")), 70000);
    CHECK_INT(json_integer_value(json_object_get(rule, "after_samples")), 60);
    CHECK(json_number_value(json_object_get(rule, "util_min_pct")) == 90.0);
    CHECK(json_number_value(json_object_get(rule, "sm_active_max_pct")) == 5.0);
    CHECK(json_number_value(json_object_get(rule, "power_idle_ratio")) == 1.25);
    json_t *k = json_array_get(json_object_get(s0, "stretches"), 0);
    CHECK_INT(json_array_size(json_object_get(s0, "stretches")), 1);
    CHECK_INT(json_integer_value(json_object_get(k, "start_ns")), 5001000000);
    CHECK_NEAR(json_number_value(json_object_get(k, "start_offset_s")), 5.0, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(k, "duration_s")), 64.0, 1e-9);
    CHECK_INT(json_integer_value(json_object_get(k, "samples")), 65);
    CHECK(json_is_null(json_object_get(json_array_get(devs, 1), "stuck")));
    json_t *s2 = json_object_get(json_array_get(devs, 2), "stuck");
    CHECK_INT(json_integer_value(json_object_get(s2, "stretch_count")), 0);
    CHECK_INT(json_array_size(json_object_get(s2, "stretches")), 0);
    fed_free(&f);
}

int main(void)
{
    test_stuck();
    test_visible_devices();
    test_mig_and_one_side();
    test_no_uuids();
    return check_done("test_report_devices");
}
