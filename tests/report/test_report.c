/*
 * test_report.c - the session report (src/report/report.c).
 *
 * Read through fl_read_session(): the fixture session, the rich session of
 * report_session.h (two devices, details, scopes, NVTX, every memcpy
 * direction, metrics with nulls, a capability fallback) and its crashed
 * variant, and its hand-written session whose kernel rows do not say
 * their device.  For each, the text and the JSON (re-indented one key per line
 * so a diff is readable) are compared with tests/golden/report/, and the
 * JSON's figures are checked one by one against values worked out by hand.
 * Fed directly through the callbacks: the has_details rule in both record
 * orders, a lost detail, percentiles against exact ones, and 1 M kernel
 * rows of 10 kernels with the report's memory checked not to grow.
 *
 * After a deliberate change of the output: GP_UPDATE_GOLDEN=1 ctest -R
 * test_report, then read the diff.
 */
#include "report_json.h"
#include "check.h"
#include "fl_log.h"
#include "json_pretty.h"
#include "reader/read.h"
#include "report/report.h"
#include "report/report_int.h"
#include "util/buf.h"
#include "report_session.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>

#define FIX_ID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

/* ------------------------------------------------------------ helpers */

typedef struct rendered {
    char *text, *json;
    json_t *j;
    fl_read_result res;
    int rc;
    size_t mem;
} rendered;

static void rendered_free(rendered *r)
{
    free(r->text);
    free(r->json);
    json_decref(r->j);
    memset(r, 0, sizeof *r);
}

static void render(fl_report *rep, const fl_read_result *res, int top, rendered *out)
{
    fl_report_finish(rep, res);
    fl_buf t = {0}, j = {0};
    fl_report_text(rep, top, &t);
    fl_report_json(rep, top, &j);
    out->text = fl_buf_take(&t);
    out->json = fl_buf_take(&j);
    out->mem = fl_report_mem_bytes(rep);
    json_error_t e;
    out->j = out->json ? json_loads(out->json, JSON_REJECT_DUPLICATES, &e) : NULL;
    if (!out->j)
        fprintf(stderr, "report JSON does not parse: %s\n%s\n", e.text,
                out->json ? out->json : "(null)");
    CHECK(out->j != NULL);
}

static int read_report(const char *path, int top, rendered *out)
{
    memset(out, 0, sizeof *out);
    fl_report *rep = fl_report_create();
    CHECK(rep != NULL);
    if (!rep)
        return -1;
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    gp_error err;
    out->rc = fl_read_session(path, &o, &cb, &out->res, &err);
    if (out->rc != GP_OK)
        fprintf(stderr, "fl_read_session(%s): %s\n", path, err.message);
    CHECK_INT(out->rc, GP_OK);
    render(rep, &out->res, top, out);
    fl_report_destroy(rep);
    return out->rc;
}

/* s with every "from" replaced by "to" (malloc'd). */
static char *replace_all(const char *s, const char *from, const char *to)
{
    fl_buf b = {0};
    size_t n = strlen(from);
    for (const char *p; n && (p = strstr(s, from)); s = p + n) {
        fl_buf_put(&b, s, (size_t)(p - s));
        fl_buf_puts(&b, to);
    }
    fl_buf_puts(&b, s);
    return fl_buf_take(&b);
}

/* The goldens; the directory dir is written as label so they do not
 * change from run to run or checkout to checkout. */
static void goldens(const rendered *r, const char *name, const char *dir, const char *label)
{
    char rel[256];
    snprintf(rel, sizeof rel, "report/%s.txt", name);
    check_golden(rel, r->text ? r->text : "", "test_report");
    char *json = replace_all(r->json ? r->json : "", dir, label);
    char *p = pretty(json ? json : "");
    free(json);
    snprintf(rel, sizeof rel, "report/%s.json", name);
    check_golden(rel, p ? p : "", "test_report");
    free(p);
}

/* ------------------------------------------------------------ fixture */

static void test_fixture(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/gpufl-session/%s", check_env("GP_TEST_SOURCE_DIR"),
             FIX_ID);
    rendered r;
    if (read_report(path, 10, &r) != 0 || !r.j) {
        rendered_free(&r);
        return;
    }
    goldens(&r, "fixture", check_env("GP_TEST_SOURCE_DIR"), "SRC");
    json_t *j = r.j;
    CHECK_STR(jstr(j, "schema"), "gpu-profile.report");
    CHECK_INT(jint(j, "schema_version"), 2);
    CHECK_STR(jstr(j, "session.app"), "sample_app");
    CHECK_STR(jstr(j, "session.session_id"), FIX_ID);
    CHECK_STR(jstr(j, "session.hostname"), "host0");
    CHECK_INT(jint(j, "session.pid"), 4242);
    CHECK_U64(jint(j, "session.start_ns"), 1760000000000000000ull);
    CHECK_U64(jint(j, "session.end_ns"), 1760000000003000000ull);
    CHECK_STR(jstr(j, "session.end_source"), "shutdown");
    CHECK_INT(jint(j, "session.duration_ns"), 3000000);
    CHECK_STR(jstr(j, "session.session_kind"), "trace");
    CHECK_STR(jstr(j, "session.profiling_engine"), "nvidia.trace");
    CHECK(json_is_false(jpath(j, "session.crashed")));
    /* Kernels 20 + 900 + 80 us; one device, so they are on GPU 0. */
    CHECK_INT(jint(j, "summary.kernel_launches"), 3);
    CHECK_INT(jint(j, "summary.kernel_time_ns"), 1000000);
    CHECK_INT(jint(j, "summary.gpu_busy[0].device_id"), 0);
    CHECK_INT(jint(j, "summary.gpu_busy[0].busy_ns"), 1000000);
    CHECK_NEAR(jnum(j, "summary.gpu_busy[0].busy_pct"), 100.0 / 3, 1e-5);
    CHECK_INT(jint(j, "summary.memcpy_count"), 2);
    CHECK_INT(jint(j, "summary.memcpy_bytes"), 8388608);
    CHECK_INT(jint(j, "summary.memcpy_time_ns"), 200000);
    CHECK_NEAR(jnum(j, "summary.util_gpu_mean_pct"), 145.0 / 3, 1e-5);
    CHECK_INT(jint(j, "summary.metric_devices"), 1);
    CHECK_INT(jint(j, "summary.mem_used_max_bytes"), 3072ll * 1048576);
    CHECK_NEAR(jnum(j, "summary.power_mean_mw"), 550000.0 / 3, 1e-3);
    CHECK_NEAR(jnum(j, "summary.power_max_mw"), 310000, 1e-9);
    CHECK_NEAR(jnum(j, "devices[0].power_max_mw"), 310000, 1e-9);
    CHECK_INT(jint(j, "devices[0].mem_used_max_bytes"), 3072ll * 1048576);
    /* No energy counter: (90+310)/2 W x 1 ms + (310+150)/2 W x 1 ms. */
    CHECK_NEAR(jnum(j, "summary.energy_j"), 0.43, 1e-9);
    CHECK_STR(jstr(j, "summary.energy_source"), "power_integral");
    /* The scope, and the kernels with user_scope train_step inside it
     * (reduce_sum has has_details 0 and no earlier detail: unattributed). */
    CHECK_STR(jstr(j, "scopes.items[0].name"), "train_step");
    CHECK_STR(jstr(j, "scopes.items[0].kind"), "scope");
    CHECK_INT(jint(j, "scopes.items[0].count"), 1);
    CHECK_INT(jint(j, "scopes.items[0].total_ns"), 1300000);
    CHECK_INT(jint(j, "scopes.items[0].p50_ns"), 1300000);
    CHECK_INT(jint(j, "scopes.items[0].gpu_time_inside_ns"), 920000);
    CHECK_INT(jint(j, "scopes.kernel_time_unattributed_ns"), 80000);
    /* Hotspots: gemm, reduce_sum, vecAdd; the details of the fixture come
     * after their batch. */
    CHECK_STR(jstr(j, "hotspots.kernels[0].name"),
              "void gemm<128>(float const*, float const*, float*)");
    CHECK_STR(jstr(j, "hotspots.kernels[0].grid"), "(64,64,1)");
    CHECK_STR(jstr(j, "hotspots.kernels[0].block"), "(16,16,1)");
    CHECK_INT(jint(j, "hotspots.kernels[0].registers_min"), 64);
    CHECK_NEAR(jnum(j, "hotspots.kernels[0].occupancy_pct"), 50, 1e-9);
    CHECK_STR(jstr(j, "hotspots.kernels[0].limiting_resource"), "registers");
    CHECK_STR(jstr(j, "hotspots.kernels[1].name"), "reduce_sum(float*, int)");
    CHECK(jnull(j, "hotspots.kernels[1].grid"));
    CHECK(jnull(j, "hotspots.kernels[1].occupancy_pct"));
    CHECK_STR(jstr(j, "hotspots.kernels[2].grid"), "(4096,1,1)");
    CHECK_INT(jint(j, "hotspots.details_missing"), 0);
    CHECK_STR(jstr(j, "memcpy[0].kind"), "HtoD");
    CHECK_NEAR(jnum(j, "memcpy[0].throughput_gb_per_s"), 41.94304, 1e-6);
    CHECK_STR(jstr(j, "memcpy[1].kind"), "DtoH");
    CHECK_INT(jint(j, "devices[0].samples"), 3);
    CHECK_STR(jstr(j, "devices[0].name"), "Fake GPU");
    CHECK_NEAR(jnum(j, "devices[0].util_gpu_max_pct"), 95, 1e-9);
    CHECK_NEAR(jnum(j, "devices[0].temp_max_c"), 55, 1e-9);
    CHECK_NEAR(jnum(j, "devices[0].clock_sm_mean_mhz"), 1715, 1e-9);
    CHECK(jnull(j, "devices[0].clock_mem_mean_mhz"));
    CHECK_INT(jint(j, "host.samples"), 2);
    CHECK_NEAR(jnum(j, "host.cpu_mean_pct"), 50.25, 1e-9);
    CHECK_NEAR(jnum(j, "host.cpu_max_pct"), 88, 1e-9);
    CHECK_INT(jint(j, "host.ram_used_max_bytes"), 2100ll * 1048576);
    CHECK(jnull(j, "stalls"));
    CHECK(jnull(j, "perf_metrics"));
    CHECK_STR(jstr(j, "capture.selected_engine"), "nvidia.trace");
    CHECK_STR(jstr(j, "capture.features[1].status"), "not_requested");
    CHECK(json_is_false(jpath(j, "read.partial")));
    CHECK(strstr(r.text, "crashed or killed") == NULL);
    CHECK(strstr(r.text, "partial read") == NULL);
    rendered_free(&r);
}

/* ------------------------------------------------------- rich session */

static void check_rich_common(json_t *j)
{
    CHECK_STR(jstr(j, "session.app"), "rich_app");
    CHECK_INT(jint(j, "session.devices[1].id"), 1);
    CHECK_STR(jstr(j, "session.devices[1].name"), "Fake GPU B");
    /* 8 launches, 735 us, all on device 0 (the writers' device_id
     * column): union of the intervals = 715 us.  Device 1 ran no kernel,
     * so it has no gpu_busy entry. */
    CHECK_INT(jint(j, "summary.kernel_launches"), 8);
    CHECK_INT(jint(j, "summary.kernel_distinct"), 4);
    CHECK_INT(jint(j, "summary.kernel_time_ns"), 735000);
    CHECK_INT(json_array_size(jpath(j, "summary.gpu_busy")), 1);
    CHECK_INT(jint(j, "summary.gpu_busy[0].device_id"), 0);
    CHECK_INT(jint(j, "summary.gpu_busy[0].kernel_launches"), 8);
    CHECK_INT(jint(j, "summary.gpu_busy[0].kernel_time_ns"), 735000);
    CHECK_INT(jint(j, "summary.gpu_busy[0].busy_ns"), 715000);
    CHECK_INT(jint(j, "summary.memcpy_count"), 5);
    CHECK_INT(jint(j, "summary.memcpy_bytes"), 11 * RS_MIB + 65536 + 512);
    CHECK_INT(jint(j, "summary.memset_count"), 2);
    CHECK_INT(jint(j, "summary.memset_bytes"), RS_MIB + 4096);
    CHECK_INT(jint(j, "summary.memset_time_ns"), 10000);
    /* util.gpu: device 0's 10, 90, 50 (device 1's are null). */
    CHECK_NEAR(jnum(j, "summary.util_gpu_mean_pct"), 50, 1e-9);
    /* Over two devices, sums of theirs (the run total's rule): memory
     * 4 + 2 GiB; power means 200 + 100 W (device 1's null skipped), maxima
     * 300 + 110 W, so the mean never exceeds the max. */
    CHECK_INT(jint(j, "summary.metric_devices"), 2);
    CHECK_INT(jint(j, "summary.mem_used_max_bytes"), 6144 * RS_MIB);
    CHECK_NEAR(jnum(j, "summary.power_mean_mw"), 300000, 1e-9);
    CHECK_NEAR(jnum(j, "summary.power_max_mw"), 410000, 1e-9);
    /* Energy: device 0's counter 800 mJ; device 1's power integral
     * (90 + 110) / 2 W x 4 ms = 0.4 J (the null reading skipped). */
    CHECK_NEAR(jnum(j, "summary.energy_j"), 1.2, 1e-9);
    CHECK_STR(jstr(j, "summary.energy_source"), "mixed");
    CHECK_NEAR(jnum(j, "devices[0].energy_j"), 0.8, 1e-9);
    CHECK_STR(jstr(j, "devices[0].energy_source"), "counter");
    CHECK_NEAR(jnum(j, "devices[1].energy_j"), 0.4, 1e-9);
    CHECK_STR(jstr(j, "devices[1].energy_source"), "power_integral");
    CHECK(jnull(j, "devices[1].util_gpu_mean_pct"));
    CHECK_NEAR(jnum(j, "devices[1].util_mem_max_pct"), 10, 1e-9);
    CHECK_NEAR(jnum(j, "devices[1].power_max_mw"), 110000, 1e-9);
    CHECK_INT(jint(j, "devices[1].mem_total_bytes"), 81920 * RS_MIB);
    /* Scopes: train 2000 us, step 750 + 900 us, NVTX 840 us.  GPU time:
     * gemm (630 us, train|step) and odd (10 us, train). */
    CHECK_INT(jint(j, "scopes.kernel_time_in_scopes_ns"), 640000);
    CHECK_INT(jint(j, "scopes.kernel_time_outside_scopes_ns"), 45000);
    CHECK_INT(jint(j, "scopes.kernel_time_unattributed_ns"), 50000);
    CHECK_STR(jstr(j, "scopes.items[0].name"), "train");
    CHECK_INT(jint(j, "scopes.items[0].total_ns"), 2000000);
    CHECK_INT(jint(j, "scopes.items[0].gpu_time_inside_ns"), 640000);
    CHECK_INT(jint(j, "scopes.items[0].kernel_launches_inside"), 5);
    CHECK_STR(jstr(j, "scopes.items[1].name"), "step");
    CHECK_INT(jint(j, "scopes.items[1].count"), 2);
    CHECK_INT(jint(j, "scopes.items[1].total_ns"), 1650000);
    CHECK_INT(jint(j, "scopes.items[1].min_ns"), 750000);
    CHECK_INT(jint(j, "scopes.items[1].max_ns"), 900000);
    CHECK_NEAR(jnum(j, "scopes.items[1].mean_ns"), 825000, 1e-6);
    CHECK_NEAR(jint(j, "scopes.items[1].p50_ns"), 750000, 750000 * 0.016);
    CHECK_INT(jint(j, "scopes.items[1].p99_ns"), 900000); /* clamped to max */
    CHECK_INT(jint(j, "scopes.items[1].gpu_time_inside_ns"), 630000);
    CHECK_STR(jstr(j, "scopes.items[2].name"), "load data");
    CHECK_STR(jstr(j, "scopes.items[2].kind"), "nvtx");
    CHECK_INT(jint(j, "scopes.items[2].total_ns"), 840000);
    CHECK(jnull(j, "scopes.items[2].gpu_time_inside_ns"));
    /* Hotspots: gemm (grid varies), relu, copy (no occupancy), odd. */
    CHECK_STR(jstr(j, "hotspots.kernels[0].name"), "gemm_kernel(float const*, float*)");
    CHECK_INT(jint(j, "hotspots.kernels[0].count"), 4);
    CHECK_INT(jint(j, "hotspots.kernels[0].total_ns"), 630000);
    CHECK_INT(jint(j, "hotspots.kernels[0].min_ns"), 100000);
    CHECK_INT(jint(j, "hotspots.kernels[0].max_ns"), 300000);
    CHECK_NEAR(jint(j, "hotspots.kernels[0].p50_ns"), 110000, 110000 * 0.016);
    CHECK_STR(jstr(j, "hotspots.kernels[0].grid"), "varies");
    CHECK_STR(jstr(j, "hotspots.kernels[0].block"), "(16,16,1)");
    CHECK_INT(jint(j, "hotspots.kernels[0].static_shared_bytes"), 8192);
    CHECK_NEAR(jnum(j, "hotspots.kernels[0].occupancy_pct"), 50, 1e-9);
    CHECK_STR(jstr(j, "hotspots.kernels[1].name"), "copy_kernel");
    CHECK(jnull(j, "hotspots.kernels[1].occupancy_pct"));
    CHECK(jnull(j, "hotspots.kernels[1].limiting_resource"));
    CHECK_STR(jstr(j, "hotspots.kernels[1].grid"), "(32,64,1)");
    CHECK_STR(jstr(j, "hotspots.kernels[2].name"), "relu(float*, int)");
    CHECK_INT(jint(j, "hotspots.kernels[2].count"), 2);
    CHECK_STR(jstr(j, "hotspots.kernels[2].limiting_resource"), "warps");
    /* memcpy: the four named directions first, then kind 3. */
    CHECK_STR(jstr(j, "memcpy[0].kind"), "HtoD");
    CHECK_INT(jint(j, "memcpy[0].bytes"), 8 * RS_MIB);
    CHECK_STR(jstr(j, "memcpy[1].kind"), "DtoH");
    CHECK_STR(jstr(j, "memcpy[2].kind"), "DtoD");
    CHECK_STR(jstr(j, "memcpy[3].kind"), "PtoP");
    CHECK_NEAR(jnum(j, "memcpy[3].throughput_gb_per_s"), 2.0 * RS_MIB / 20000, 1e-6);
    CHECK_STR(jstr(j, "memcpy[4].kind"), "kind 3");
    CHECK_INT(jint(j, "memcpy[4].copy_kind"), 3);
    /* Host: CPU 12.5 and 50 (the null skipped). */
    CHECK_INT(jint(j, "host.samples"), 3);
    CHECK_NEAR(jnum(j, "host.cpu_mean_pct"), 31.25, 1e-9);
    CHECK_INT(jint(j, "host.ram_used_max_bytes"), 3000 * RS_MIB);
}

static void test_rich(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-rich") == 0);
    CHECK(rs_write(tmp, false, dir, sizeof dir) == 0);
    rendered r;
    if (read_report(dir, 3, &r) != 0 || !r.j) {
        rendered_free(&r);
        fl_rmtree(tmp);
        return;
    }
    goldens(&r, "rich", tmp, "TMP");
    json_t *j = r.j;
    check_rich_common(j);
    CHECK_INT(jint(j, "hotspots.top_n"), 3);
    CHECK_INT(json_array_size(jpath(j, "hotspots.kernels")), 3);
    CHECK(json_is_false(jpath(j, "session.crashed")));
    CHECK_STR(jstr(j, "session.end_source"), "shutdown");
    CHECK_INT(jint(j, "session.duration_ns"), 5000000);
    CHECK_NEAR(jnum(j, "summary.gpu_busy[0].busy_pct"), 14.3, 1e-9);
    CHECK_CONTAINS(r.text, "  GPU busy          14.3%  GPU 0 (union of its kernels' intervals "
                           "over the duration)\n");
    CHECK(strstr(r.text, "GPU ?") == NULL);
    CHECK_INT(jint(j, "scopes.items[0].open_at_end"), 0);
    /* The last capture_capabilities wins. */
    CHECK_STR(jstr(j, "capture.features[1].feature"), "user_scope");
    CHECK_STR(jstr(j, "capture.features[1].status"), "fallback");
    CHECK_STR(jstr(j, "capture.features[1].reason_code"), "cupti_subscriber_busy");
    CHECK_STR(jstr(j, "capture.features[2].status"), "skipped");
    CHECK(json_is_true(jpath(j, "capture.features[2].requested")));
    CHECK_INT(json_array_size(jpath(j, "capture.features")), 4);
    CHECK(json_is_false(jpath(j, "read.partial")));
    CHECK_CONTAINS(r.text, "user_scope            fallback (cupti_subscriber_busy): "
                           "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    CHECK_CONTAINS(r.text, "(1 more kernel)");
    rendered_free(&r);
    fl_rmtree(tmp);
}

static void test_crashed(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-crash") == 0);
    CHECK(rs_write(tmp, true, dir, sizeof dir) == 0);
    rendered r;
    if (read_report(dir, 10, &r) != 0 || !r.j) {
        rendered_free(&r);
        fl_rmtree(tmp);
        return;
    }
    goldens(&r, "crashed", tmp, "TMP");
    json_t *j = r.j;
    check_rich_common(j);
    CHECK(json_is_true(jpath(j, "session.crashed")));
    /* The end is the last time read: the last metric rows at 4200 us. */
    CHECK_STR(jstr(j, "session.end_source"), "last_record");
    CHECK_INT(jint(j, "session.duration_ns"), 4200000);
    CHECK_INT(jint(j, "scopes.items[0].open_at_end"), 1);
    CHECK_STR(jstr(j, "hotspots.kernels[3].name"), "odd, \"quoted\" name");
    CHECK_STR(jstr(j, "hotspots.kernels[3].limiting_resource"), "shared_mem");
    CHECK_STR(jstr(j, "hotspots.kernels[3].grid"), "(8,64,1)");
    CHECK_INT(jint(j, "scopes.items[0].count"), 1);
    /* Only the capabilities written at init. */
    CHECK_STR(jstr(j, "capture.features[1].status"), "collected");
    CHECK_INT(json_array_size(jpath(j, "capture.features")), 3);
    /* The torn last line of device.log. */
    CHECK(json_is_true(jpath(j, "read.partial")));
    CHECK_INT(jint(j, "read.bad_lines"), 1);
    CHECK_CONTAINS(r.text, "the process did not shut down the recorder (crashed or killed): the "
                           "report covers what reached the disk");
    CHECK_CONTAINS(r.text, "partial read: 1 unreadable line");
    CHECK_CONTAINS(r.text, "(1 still open at the end)");
    rendered_free(&r);
    fl_rmtree(tmp);
}

/* Kernel rows without a device_id column (the spec's ten columns) in a
 * session with two devices: "GPU ?", all devices together; the rows of a
 * batch with the column on their device.  Through fl_read_session(). */
static void test_device_not_recorded(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-nodev") == 0);
    CHECK(rs_write_nodev(tmp, dir, sizeof dir) == 0);
    rendered r;
    if (read_report(dir, 10, &r) != 0 || !r.j) {
        rendered_free(&r);
        fl_rmtree(tmp);
        return;
    }
    json_t *j = r.j;
    CHECK_INT(json_array_size(jpath(j, "session.devices")), 2);
    CHECK_INT(jint(j, "session.duration_ns"), 4000000);
    CHECK_INT(jint(j, "summary.kernel_launches"), 3);
    CHECK_INT(jint(j, "summary.kernel_time_ns"), 240000);
    /* GPU ? (null, sorted first): 1000..1100 and 1050..1150 us, union
     * 150 us of 4 ms; GPU 1: 40 us.  No entry for GPU 0. */
    CHECK_INT(json_array_size(jpath(j, "summary.gpu_busy")), 2);
    CHECK(jnull(j, "summary.gpu_busy[0].device_id"));
    CHECK_INT(jint(j, "summary.gpu_busy[0].kernel_launches"), 2);
    CHECK_INT(jint(j, "summary.gpu_busy[0].kernel_time_ns"), 200000);
    CHECK_INT(jint(j, "summary.gpu_busy[0].busy_ns"), 150000);
    CHECK_NEAR(jnum(j, "summary.gpu_busy[0].busy_pct"), 3.75, 1e-9);
    CHECK_INT(jint(j, "summary.gpu_busy[1].device_id"), 1);
    CHECK_INT(jint(j, "summary.gpu_busy[1].kernel_launches"), 1);
    CHECK_INT(jint(j, "summary.gpu_busy[1].busy_ns"), 40000);
    CHECK_NEAR(jnum(j, "summary.gpu_busy[1].busy_pct"), 1.0, 1e-9);
    CHECK_INT(jint(j, "summary.memcpy_count"), 1);
    CHECK_INT(jint(j, "summary.memcpy_bytes"), RS_MIB);
    CHECK_STR(jstr(j, "hotspots.kernels[0].name"), "gemm_kernel(float const*, float*)");
    CHECK_INT(jint(j, "hotspots.kernels[0].count"), 2);
    CHECK(json_is_false(jpath(j, "read.partial")));
    CHECK_CONTAINS(r.text, "  GPU busy          3.8%  GPU ? (the kernel rows do not say their "
                           "device: all devices together)\n");
    CHECK_CONTAINS(r.text, "  GPU busy          1.0%  GPU 1 (union of its kernels' intervals "
                           "over the duration)\n");
    rendered_free(&r);
    fl_rmtree(tmp);
}

/* --------------------------------------------- callbacks, fed directly */

typedef struct fake_batch {
    const char *cols[12];
    size_t ncols, nrows;
    fl_cell cells[4096];
    fl_batch b;
} fake_batch;

static fl_cell ci(int64_t v)
{
    fl_cell c;
    memset(&c, 0, sizeof c);
    c.kind = FL_CELL_INT;
    c.i = v;
    return c;
}

static const char *const kcols[] = {"dt_ns",         "kernel_id",  "stream_id", "duration_ns",
                                    "corr_id",       "dyn_shared", "num_regs",  "has_details",
                                    "external_kind", "external_id"};

static void kbatch_init(fake_batch *fb, uint64_t base)
{
    memset(&fb->b, 0, sizeof fb->b);
    fb->ncols = 10;
    fb->nrows = 0;
    fb->b.type = "kernel_event_batch";
    fb->b.channel = FL_CH_DEVICE;
    fb->b.base_time_ns = base;
    fb->b.ncols = 10;
    fb->b.cols = kcols;
    fb->b.cells = fb->cells;
}

static void krow(fake_batch *fb, int64_t dt, int64_t kid, int64_t dur, int64_t corr, int hd)
{
    fl_cell *c = &fb->cells[fb->nrows * 10];
    int64_t v[10] = {dt, kid, 7, dur, corr, 0, 32, hd, 0, 0};
    for (int i = 0; i < 10; i++)
        c[i] = ci(v[i]);
    fb->nrows++;
    fb->b.nrows = fb->nrows;
}

static json_t *detail(int64_t corr, const char *grid, const char *scope)
{
    return json_pack("{s:s, s:I, s:s, s:s, s:f, s:s, s:s}", "type", "kernel_detail", "corr_id",
                     (json_int_t)corr, "grid", grid, "block", "(32,1,1)", "occupancy", 0.75,
                     "limiting_resource", "warps", "user_scope", scope);
}

static json_t *dict(const char *which, const char *id, const char *name)
{
    return json_pack("{s:s, s:{s:s}}", "type", "dictionary_update", which, id, name);
}

/* The has_details rule, details written after their batch (the fixture's
 * order) or before it (the recorder's); a detail that never comes. */
static void test_details_order(void)
{
    for (int after = 0; after < 2; after++) {
        fl_report *rep = fl_report_create();
        fl_read_cb cb;
        fl_report_callbacks(rep, &cb);
        json_t *d = dict("kernel_dict", "1", "k1");
        cb.record(cb.user, FL_CH_DEVICE, FL_T_DICTIONARY_UPDATE, "dictionary_update", d);
        json_decref(d);
        d = dict("scope_name_dict", "1", "outer");
        cb.record(cb.user, FL_CH_DEVICE, FL_T_DICTIONARY_UPDATE, "dictionary_update", d);
        json_decref(d);
        d = dict("scope_name_dict", "2", "inner");
        cb.record(cb.user, FL_CH_DEVICE, FL_T_DICTIONARY_UPDATE, "dictionary_update", d);
        json_decref(d);
        fake_batch *fb = calloc(1, sizeof *fb);
        kbatch_init(fb, 1000000);
        krow(fb, 0, 1, 100, 1, 1);     /* detail A: outer|inner */
        krow(fb, 1000, 1, 200, 2, 0);  /* A */
        krow(fb, 2000, 1, 400, 3, 1);  /* detail B: global */
        krow(fb, 3000, 1, 800, 4, 0);  /* B */
        krow(fb, 4000, 1, 1600, 5, 1); /* its detail never comes */
        krow(fb, 5000, 1, 3200, 6, 0); /* none either */
        json_t *da = detail(1, "(1,1,1)", "outer|inner");
        json_t *db = detail(3, "(2,1,1)", "global");
        if (after) {
            fl_batch_map_columns(&fb->b);
            cb.batch(cb.user, &fb->b);
            cb.record(cb.user, FL_CH_DEVICE, FL_T_KERNEL_DETAIL, "kernel_detail", da);
            cb.record(cb.user, FL_CH_DEVICE, FL_T_KERNEL_DETAIL, "kernel_detail", db);
        } else {
            cb.record(cb.user, FL_CH_DEVICE, FL_T_KERNEL_DETAIL, "kernel_detail", da);
            cb.record(cb.user, FL_CH_DEVICE, FL_T_KERNEL_DETAIL, "kernel_detail", db);
            fl_batch_map_columns(&fb->b);
            cb.batch(cb.user, &fb->b);
        }
        json_decref(da);
        json_decref(db);
        rendered r;
        memset(&r, 0, sizeof r);
        render(rep, NULL, 10, &r);
        json_t *j = r.j;
        if (j) {
            CHECK_INT(jint(j, "summary.kernel_launches"), 6);
            CHECK_INT(jint(j, "scopes.kernel_time_in_scopes_ns"), 300);
            CHECK_INT(jint(j, "scopes.kernel_time_outside_scopes_ns"), 1200);
            CHECK_INT(jint(j, "scopes.kernel_time_unattributed_ns"), 4800);
            /* Equal figures: by name. */
            CHECK_STR(jstr(j, "scopes.items[0].name"), "inner");
            CHECK_STR(jstr(j, "scopes.items[1].name"), "outer");
            CHECK_INT(jint(j, "scopes.items[0].gpu_time_inside_ns"), 300);
            CHECK_INT(jint(j, "scopes.items[0].count"), 0);
            CHECK_INT(jint(j, "scopes.items[1].gpu_time_inside_ns"), 300);
            CHECK_STR(jstr(j, "hotspots.kernels[0].grid"), "varies");
            CHECK_INT(jint(j, "hotspots.details_missing"), 1);
            /* The fifth row (4000 + 1600) overlaps the sixth by 600. */
            CHECK_INT(jint(j, "summary.gpu_busy[0].busy_ns"), 6300 - 600);
            /* No job_start: the session runs from the first to the last
             * time read, and no shutdown means a crash. */
            CHECK_STR(jstr(j, "session.start_source"), "first_record");
            CHECK_INT(jint(j, "session.duration_ns"), 5000 + 3200);
            CHECK(json_is_true(jpath(j, "session.crashed")));
        }
        rendered_free(&r);
        free(fb);
        fl_report_destroy(rep);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Percentiles against the exact nearest-rank values of a wide
 * distribution (1 ns .. ~1 s, log-uniform). */
static void test_percentiles(void)
{
    enum { N = 20000 };
    uint64_t *v = malloc(N * sizeof *v);
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fake_batch *fb = calloc(1, sizeof *fb);
    size_t k = 0;
    while (k < N) {
        kbatch_init(fb, 1000);
        for (int i = 0; i < 400 && k < N; i++, k++) {
            v[k] = (uint64_t)exp((double)(rng() % 20000) / 1000.0); /* 1 .. e^20 */
            krow(fb, i, 1, (int64_t)v[k], (int64_t)k + 1, 0);
        }
        fl_batch_map_columns(&fb->b);
        cb.batch(cb.user, &fb->b);
    }
    rendered r;
    render(rep, NULL, 1, &r);
    qsort(v, N, sizeof *v, cmp_u64);
    if (r.j) {
        static const struct {
            const char *key;
            double p;
        } ps[] = {{"p50_ns", 50}, {"p90_ns", 90}, {"p99_ns", 99}};
        for (size_t i = 0; i < 3; i++) {
            char path[64];
            snprintf(path, sizeof path, "hotspots.kernels[0].%s", ps[i].key);
            uint64_t exact = v[(size_t)ceil(ps[i].p / 100.0 * N) - 1];
            double got = (double)jint(r.j, path);
            CHECK_NEAR(got, (double)exact, (double)exact * 0.016 + 0.5);
        }
        CHECK_U64(jint(r.j, "hotspots.kernels[0].min_ns"), v[0]);
        CHECK_U64(jint(r.j, "hotspots.kernels[0].max_ns"), v[N - 1]);
        CHECK_NEAR(jnum(r.j, "scopes.percentile_max_error_pct"), 1.6, 1e-9);
    }
    rendered_free(&r);
    free(fb);
    free(v);
    fl_report_destroy(rep);
}

/* 1 M kernel rows of 10 kernels: the report's memory after 100 k rows is
 * its memory after 1 M (its own count of its structures; and, outside
 * the sanitizers, glibc's count of the heap).  What it holds: per kernel
 * its counters and the histogram octaves its durations reached, and one
 * batch of rows (held while details may follow). */
static void test_memory(void)
{
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    for (int i = 1; i <= 10; i++) {
        char id[8], name[32];
        snprintf(id, sizeof id, "%d", i);
        snprintf(name, sizeof name, "kernel_%02d", i);
        json_t *d = dict("kernel_dict", id, name);
        cb.record(cb.user, FL_CH_DEVICE, FL_T_DICTIONARY_UPDATE, "dictionary_update", d);
        json_decref(d);
    }
    fake_batch *fb = calloc(1, sizeof *fb);
    const size_t total = 1000000, per = 400;
    size_t mem_early = 0, heap_early = 0;
    uint64_t t = 1760000000000000000ull, corr = 0;
    for (size_t done = 0; done < total;) {
        kbatch_init(fb, t);
        for (size_t i = 0; i < per && done < total; i++, done++) {
            int64_t kid = (int64_t)(done % 10) + 1;
            int64_t dur = 1024 + (int64_t)(rng() % 98976); /* 1 .. 100 us */
            krow(fb, (int64_t)i * 200000, kid, dur, (int64_t)++corr, 0);
        }
        t += per * 200000;
        fl_batch_map_columns(&fb->b);
        cb.batch(cb.user, &fb->b);
        if (done == 100000) {
            mem_early = fl_report_mem_bytes(rep);
            heap_early = mallinfo2().uordblks;
        }
    }
    size_t mem_late = fl_report_mem_bytes(rep);
    size_t heap_late = mallinfo2().uordblks;
    printf("report memory: %zu bytes after 100 k rows, %zu after 1 M (heap %zu -> %zu)\n",
           mem_early, mem_late, heap_early, heap_late);
    CHECK(mem_early > 0);
    CHECK_U64(mem_late, mem_early);
    CHECK(mem_late < 128 * 1024);
#if !defined(__SANITIZE_ADDRESS__)
    CHECK(heap_late <= heap_early + 4096);
#endif
    rendered r;
    render(rep, NULL, 10, &r);
    if (r.j) {
        CHECK_INT(jint(r.j, "summary.kernel_launches"), (long long)total);
        CHECK_INT(jint(r.j, "hotspots.distinct_kernels"), 10);
        CHECK_INT(jint(r.j, "hotspots.kernels[0].count"), 100000);
        CHECK_NEAR(jint(r.j, "hotspots.kernels[0].p50_ns"), 50512, 50512 * 0.03);
    }
    rendered_free(&r);
    free(fb);
    fl_report_destroy(rep);
}

/* Scope rows: continuation-open/close, an end without a begin, a begin
 * without an end, NVTX ids; profile and pm samples; reader warnings. */
static void test_scopes_and_samples(void)
{
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    json_t *d = dict("scope_name_dict", "1", "phase");
    cb.record(cb.user, FL_CH_SCOPE, FL_T_DICTIONARY_UPDATE, "dictionary_update", d);
    json_decref(d);
    d = json_pack("{s:s, s:{s:s, s:s}, s:{s:s}}", "type", "dictionary_update", "metric_dict", "1",
                  "smsp__warp_issue_stalled_long_scoreboard", "2", "sm__throughput.avg.pct",
                  "function_dict", "9", "my_kernel");
    cb.record(cb.user, FL_CH_SCOPE, FL_T_DICTIONARY_UPDATE, "dictionary_update", d);
    json_decref(d);
    static const char *const scols[] = {
        "dt_ns",  "scope_instance_id", "name_id", "event_type", "depth", "repeat",
        "warmup", "original_start_ns"};
    fake_batch *fb = calloc(1, sizeof *fb);
    memset(&fb->b, 0, sizeof fb->b);
    fb->b.type = "scope_event_batch";
    fb->b.ncols = 8;
    fb->b.cols = scols;
    fb->b.cells = fb->cells;
    fb->b.base_time_ns = 100000;
    int64_t rows[][8] = {
        {0, 1, 1, 0, 0, 0, 0, 100000},    /* begin 1 */
        {500, 1, 1, 3, 0, 0, 0, 100000},  /* continuation-close: still open */
        {600, 1, 1, 2, 0, 0, 0, 100000},  /* continuation-open: already open */
        {1000, 1, 1, 1, 0, 0, 0, 100000}, /* end 1: 1000 ns */
        {2000, 2, 1, 2, 0, 0, 0, 99000},  /* continuation-open of a scope begun earlier */
        {5000, 2, 1, 1, 0, 0, 0, 99000},  /* end 2: 6000 ns */
        {6000, 3, 1, 1, 0, 0, 0, 0},      /* an end without a begin */
        {7000, (1ll << 62) + 1, 1, 0, 0, 0, 0, 107000}, /* NVTX, never ended */
    };
    size_t nr = sizeof rows / sizeof rows[0];
    for (size_t i = 0; i < nr; i++)
        for (size_t c = 0; c < 8; c++)
            fb->cells[i * 8 + c] = ci(rows[i][c]);
    fb->b.nrows = nr;
    fl_batch_map_columns(&fb->b);
    cb.batch(cb.user, &fb->b);

    static const char *const pcols[] = {"dt_ns",         "corr_id",        "device_id",
                                        "function_id",   "pc_offset",      "metric_id",
                                        "metric_value",  "stall_reason",   "sample_kind",
                                        "scope_name_id", "source_file_id", "source_line"};
    memset(&fb->b, 0, sizeof fb->b);
    fb->b.type = "profile_sample_batch";
    fb->b.ncols = 12;
    fb->b.cols = pcols;
    fb->b.cells = fb->cells;
    int64_t prow[][12] = {
        {0, 1, 0, 9, 16, 1, 30, 4, 0, 0, 0, 0},
        {0, 1, 0, 9, 32, 0, 10, 2, 0, 0, 0, 0},
        {0, 1, 0, 8, 48, 1, 5, 4, 0, 0, 0, 0},
        {0, 1, 0, 9, 48, 2, 99, 0, 1, 0, 0, 0},
    };
    for (size_t i = 0; i < 4; i++)
        for (size_t c = 0; c < 12; c++)
            fb->cells[i * 12 + c] = ci(prow[i][c]);
    fb->b.nrows = 4;
    fl_batch_map_columns(&fb->b);
    cb.batch(cb.user, &fb->b);

    static const char *const mcols[] = {"sample_index", "dt_ns", "device_id",
                                        "metric_id",    "value", "scope_name_id"};
    memset(&fb->b, 0, sizeof fb->b);
    fb->b.type = "pm_sample_batch";
    fb->b.ncols = 6;
    fb->b.cols = mcols;
    fb->b.cells = fb->cells;
    double vals[] = {40.0, 60.0, 80.0};
    for (size_t i = 0; i < 3; i++) {
        int64_t v[6] = {(int64_t)i, 0, 0, 2, 0, 1};
        for (size_t c = 0; c < 6; c++)
            fb->cells[i * 6 + c] = ci(v[c]);
        fb->cells[i * 6 + 4].kind = FL_CELL_REAL;
        fb->cells[i * 6 + 4].d = vals[i];
    }
    fb->b.nrows = 3;
    fl_batch_map_columns(&fb->b);
    cb.batch(cb.user, &fb->b);
    static const char *const acols[] = {"dt_ns",       "duration_ns", "memory_op",
                                        "memory_kind", "address",     "bytes",
                                        "device_id",   "stream_id",   "corr_id"};
    memset(&fb->b, 0, sizeof fb->b);
    fb->b.type = "memory_alloc_event_batch";
    fb->b.ncols = 9;
    fb->b.cols = acols;
    fb->b.cells = fb->cells;
    for (size_t i = 0; i < 3; i++) {
        int64_t v[9] = {0, 10, i == 2 ? 2 : 1, 1, 4096, 1024, 0, 7, 1};
        for (size_t c = 0; c < 9; c++)
            fb->cells[i * 9 + c] = ci(v[c]);
    }
    fb->b.nrows = 3;
    fl_batch_map_columns(&fb->b);
    cb.batch(cb.user, &fb->b);
    static const char *const ycols[] = {"dt_ns",    "duration_ns", "sync_type", "stream_id",
                                        "event_id", "context_id",  "corr_id",   "function_id"};
    memset(&fb->b, 0, sizeof fb->b);
    fb->b.type = "synchronization_event_batch";
    fb->b.ncols = 8;
    fb->b.cols = ycols;
    fb->b.cells = fb->cells;
    for (size_t i = 0; i < 2; i++) {
        int64_t v[8] = {0, 1500, 3, 7, 0, 1, 9, 0};
        for (size_t c = 0; c < 8; c++)
            fb->cells[i * 8 + c] = ci(v[c]);
    }
    fb->b.nrows = 2;
    fl_batch_map_columns(&fb->b);
    cb.batch(cb.user, &fb->b);
    cb.warning(cb.user, "/x/device.log", 12, "line is not JSON");

    rendered r;
    render(rep, NULL, 10, &r);
    json_t *j = r.j;
    if (j) {
        CHECK_STR(jstr(j, "scopes.items[0].name"), "phase");
        CHECK_STR(jstr(j, "scopes.items[0].kind"), "scope");
        CHECK_INT(jint(j, "scopes.items[0].count"), 2);
        CHECK_INT(jint(j, "scopes.items[0].total_ns"), 7000);
        CHECK_INT(jint(j, "scopes.unmatched_ends"), 1);
        /* No kernel recorded at all: GPU time inside is unknown, not 0. */
        CHECK(jnull(j, "scopes.items[0].gpu_time_inside_ns"));
        CHECK_STR(jstr(j, "scopes.items[1].kind"), "nvtx");
        CHECK_INT(jint(j, "scopes.items[1].count"), 0);
        CHECK_INT(jint(j, "scopes.items[1].open_at_end"), 1);
        CHECK_INT(jint(j, "stalls.pc_samples"), 45);
        CHECK_INT(jint(j, "stalls.sass_metric_rows"), 1);
        CHECK_INT(jint(j, "stalls.reasons[0].stall_reason"), 4);
        CHECK_INT(jint(j, "stalls.reasons[0].samples"), 35);
        CHECK_STR(jstr(j, "stalls.reasons[0].name"), "smsp__warp_issue_stalled_long_scoreboard");
        CHECK_INT(jint(j, "stalls.reasons[0].metric_id"), 1);
        /* An activity-API row (metric_id 0): CUPTI's name of its reason. */
        CHECK_INT(jint(j, "stalls.reasons[1].stall_reason"), 2);
        CHECK(jnull(j, "stalls.reasons[1].metric_id"));
        CHECK_STR(jstr(j, "stalls.reasons[1].name"), "instruction fetch");
        CHECK_STR(jstr(j, "stalls.functions[0].name"), "my_kernel");
        CHECK_INT(jint(j, "stalls.functions[0].samples"), 40);
        CHECK_STR(jstr(j, "perf_metrics[0].name"), "sm__throughput.avg.pct");
        CHECK_NEAR(jnum(j, "perf_metrics[0].mean"), 60, 1e-9);
        CHECK_NEAR(jnum(j, "perf_metrics[0].min"), 40, 1e-9);
        CHECK_NEAR(jnum(j, "perf_metrics[0].max"), 80, 1e-9);
        CHECK_INT(jint(j, "read.warnings"), 1);
        CHECK_STR(jstr(j, "read.first_warnings[0]"), "device.log:12: line is not JSON");
        CHECK(json_is_true(jpath(j, "read.partial")));
        CHECK(jnull(j, "capture"));
        CHECK(jnull(j, "host"));
    }
    if (j) {
        CHECK_INT(jint(j, "summary.allocations"), 2);
        CHECK_INT(jint(j, "summary.frees"), 1);
        CHECK_INT(jint(j, "summary.synchronizations"), 2);
        CHECK_INT(jint(j, "summary.synchronization_time_ns"), 3000);
    }
    CHECK_CONTAINS(r.text,
                   "  other             2 synchronizations 3.000 us  2 allocations 1 frees\n");
    CHECK_CONTAINS(r.text, "stalls  45 PC samples");
    CHECK_CONTAINS(r.text, "  device.log:12: line is not JSON\n");
    CHECK_CONTAINS(r.text, "perf metrics");
    rendered_free(&r);
    free(fb);
    fl_report_destroy(rep);
}

/* GPM extension columns of device_metric_batch: per device mean and max
 * (percent x 100 back to percent; bytes/s), null for a device without. */
static void test_gpm_columns(void)
{
    static const char *const cols[] = {"dt_ns", "device_id", "gpu_util", "sm_active_pct_x100",
                                       "gpm_pcie_tx_bps"};
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fake_batch *fb = calloc(1, sizeof *fb);
    fb->b.type = "device_metric_batch";
    fb->b.channel = FL_CH_SYSTEM;
    fb->b.base_time_ns = 1000;
    fb->b.ncols = 5;
    fb->b.cols = cols;
    fb->b.cells = fb->cells;
    int64_t rows[3][5] = {
        {0, 0, 90, 3826, 1000000000}, {1000, 0, 91, 3926, 3000000000}, {1000, 1, 50, -1, -1}};
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 5; c++)
            fb->cells[i * 5 + c] =
                rows[i][c] < 0 ? (fl_cell){.kind = FL_CELL_NULL} : ci(rows[i][c]);
    fb->b.nrows = 3;
    fl_batch_map_columns(&fb->b);
    cb.batch(cb.user, &fb->b);
    rendered r;
    render(rep, NULL, 1, &r);
    if (r.j) {
        CHECK_NEAR(jnum(r.j, "devices[0].gpm.sm_active.mean_pct"), 38.76, 1e-9);
        CHECK_NEAR(jnum(r.j, "devices[0].gpm.sm_active.max_pct"), 39.26, 1e-9);
        CHECK_NEAR(jnum(r.j, "devices[0].gpm.gpm_pcie_tx.mean_bps"), 2e9, 0);
        CHECK_NEAR(jnum(r.j, "devices[0].gpm.gpm_pcie_tx.max_bps"), 3e9, 0);
        CHECK(jnull(r.j, "devices[0].gpm.tensor_active"));
        CHECK(jnull(r.j, "devices[1].gpm"));
    }
    CHECK_CONTAINS(r.text, "    SM active         mean 38.8%  max 39.3%\n"
                           "    PCIe tx (GPM)     mean 2.000 GB/s  max 3.000 GB/s\n");
    rendered_free(&r);
    free(fb);
    fl_report_destroy(rep);
}

/* An empty report: every figure n/a or null, nothing crashes. */
static void test_empty(void)
{
    fl_report *rep = fl_report_create();
    rendered r;
    render(rep, NULL, 0, &r);
    if (r.j) {
        CHECK(jnull(r.j, "session.app"));
        CHECK(jnull(r.j, "session.duration_ns"));
        CHECK(jnull(r.j, "summary.util_gpu_mean_pct"));
        CHECK(jnull(r.j, "summary.energy_j"));
        CHECK_INT(json_array_size(jpath(r.j, "hotspots.kernels")), 0);
    }
    CHECK_CONTAINS(r.text, "report  (no job_start)\n");
    CHECK_CONTAINS(r.text, "  duration          n/a\n");
    rendered_free(&r);
    fl_report_destroy(rep);
    fl_report_destroy(NULL);
}

/* The sections are one table {bit, text parts, json parts} (report_int.h's
 * FL_REPORT_SECTIONS, issue 34): one bit each, together
 * GPUFL_SECTION_ALL, both renderings in every row (the capture row's four
 * parts each), the run first (issue
 * 35), the perf metrics printed after the stalls; and the rows rendered one by one from the
 * figures are the whole text, byte for byte. */
static void test_section_rows(void)
{
    unsigned all = 0;
    CHECK_U64(fl_report_n_sections, 12);
    for (size_t i = 0; i < fl_report_n_sections; i++) {
        const fl_report_section *s = &fl_report_sections[i];
        CHECK(s->bit != 0 && (s->bit & (s->bit - 1)) == 0);
        CHECK((all & s->bit) == 0);
        CHECK(s->text[0] != NULL && s->json[0] != NULL);
        all |= s->bit;
    }
    CHECK_U64(all, GPUFL_SECTION_ALL);
    CHECK_U64(fl_report_sections[0].bit, GPUFL_SECTION_RUN);
    CHECK_U64(fl_report_sections[1].bit, GPUFL_SECTION_SUMMARY);
    CHECK_U64(fl_report_sections[4].bit, GPUFL_SECTION_OPS); /* after the hotspots */
    CHECK_U64(fl_report_sections[8].bit, GPUFL_SECTION_STALLS);
    CHECK_U64(fl_report_sections[9].bit, GPUFL_SECTION_PERF);
    CHECK_U64(fl_report_sections[11].bit, GPUFL_SECTION_READ);
    CHECK_U64(fl_report_sections[10].bit, GPUFL_SECTION_CAPTURE);
    CHECK(fl_report_sections[10].text[FL_SECTION_PARTS - 1] == fl_text_lifecycle);
    CHECK(fl_report_sections[10].json[FL_SECTION_PARTS - 1] == fl_json_lifecycle);

    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-rows") == 0);
    CHECK(rs_write(tmp, false, dir, sizeof dir) == 0);
    fl_report *rep = fl_report_create();
    CHECK(rep != NULL);
    if (!rep) {
        fl_rmtree(tmp);
        return;
    }
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, &o, &cb, &res, &err), GP_OK);
    fl_report_finish(rep, &res);
    fl_buf whole = {0}, rows = {0};
    fl_report_text(rep, 3, &whole);
    figures f;
    CHECK(fl_report_figures(rep, 3, &f));
    fl_section_in in = {rep, &f, 3};
    for (size_t i = 0; i < fl_report_n_sections; i++)
        for (size_t k = 0; k < FL_SECTION_PARTS && fl_report_sections[i].text[k]; k++)
            fl_report_sections[i].text[k](&in, &rows);
    fl_figures_free(&f);
    CHECK(whole.len > 0 && !whole.oom && !rows.oom);
    CHECK_STR(rows.p ? rows.p : "", whole.p ? whole.p : "(none)");
    fl_buf_free(&whole);
    fl_buf_free(&rows);
    fl_report_destroy(rep);
    fl_rmtree(tmp);
}

int main(void)
{
    test_fixture();
    test_gpm_columns();
    test_rich();
    test_crashed();
    test_device_not_recorded();
    test_details_order();
    test_percentiles();
    test_memory();
    test_scopes_and_samples();
    test_empty();
    test_section_rows();
    return check_done("test_report");
}
