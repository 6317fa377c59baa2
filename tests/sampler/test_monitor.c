/*
 * test_monitor.c - the monitor and profile-a-call API without a GPU
 * backend: option validation (every error by code and message), the call
 * order rules, sync_fn, report modes, strict / non-strict fallback to none.
 */
#include "check.h"
#include "gpu_profile.h"

#include <math.h>
#include <string.h>

static gp_options none_opts(void)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NONE;
    o.report = GP_REPORT_NONE;
    return o;
}

static void expect_invalid(const gp_options *o, const char *fragment)
{
    gp_monitor *m = (gp_monitor *)1;
    gp_error err;
    CHECK_INT(gp_monitor_create(o, &m, &err), GP_ERR_INVALID_ARG);
    CHECK_INT(err.status, GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, fragment);
    CHECK(m == NULL);
}

static void test_defaults(void)
{
    gp_options o;
    memset(&o, 0xab, sizeof o);
    gp_options_init(&o);
    CHECK_INT(o.device, 0);
    CHECK(o.devices == NULL);
    CHECK_INT(o.n_devices, 0);
    CHECK_NEAR(o.interval_s, 0.2, 0);
    CHECK_INT(o.backend, GP_BACKEND_AUTO);
    CHECK_INT(o.strict, 1);
    CHECK(o.sync_fn == NULL);
    CHECK_NEAR(o.warmup_s, 0.0, 0);
    CHECK_INT(o.keep_samples, 0);
    CHECK_INT(o.sample_pcie, 0);
    CHECK_INT(o.report, GP_REPORT_PRINT);
    CHECK(o.report_file == NULL);
    CHECK(o.nvml_library == NULL);
    CHECK(o.smi_path == NULL);
    CHECK_NEAR(o.backend_timeout_s, 5.0, 0);
    gp_options_init(NULL); /* accepted */
}

static void test_validation(void)
{
    gp_options o = none_opts();
    o.interval_s = 0.0005;
    expect_invalid(&o, "interval_s = 0.0005 is out of range: use 0.001 to 86400 seconds");
    o.interval_s = NAN;
    expect_invalid(&o, "interval_s = nan is out of range");
    o.interval_s = 1e6;
    expect_invalid(&o, "interval_s = 1e+06 is out of range");

    o = none_opts();
    o.warmup_s = -1;
    expect_invalid(&o, "warmup_s = -1 is invalid: use 0 or a positive number of seconds");
    o.warmup_s = INFINITY;
    expect_invalid(&o, "warmup_s = inf is invalid");

    o = none_opts();
    o.backend_timeout_s = 0;
    expect_invalid(&o, "backend_timeout_s = 0 is out of range");

    o = none_opts();
    o.backend = (gp_backend_kind)42;
    expect_invalid(&o, "backend 42 is unknown");

    o = none_opts();
    o.n_devices = 2;
    expect_invalid(&o, "n_devices is 2 but devices is NULL");

    unsigned twice[] = {0, 1, 0};
    o = none_opts();
    o.devices = twice;
    o.n_devices = 3;
    expect_invalid(&o, "device 0 is listed twice: list each device once");

    o = none_opts();
    o.device = -7;
    expect_invalid(&o, "device -7 is invalid: use an index from 0, or GP_ALL_DEVICES");

    o = none_opts();
    o.report = GP_REPORT_CALLBACK;
    expect_invalid(&o, "report is GP_REPORT_CALLBACK but report_fn is NULL");

    o = none_opts();
    o.report = (gp_report_mode)9;
    expect_invalid(&o, "report mode 9 is unknown");

    gp_error err;
    CHECK_INT(gp_monitor_create(&o, NULL, &err), GP_ERR_INVALID_ARG);
}

static void test_backend_names(void)
{
    gp_backend_kind k = GP_BACKEND_NONE;
    gp_error err;
    CHECK_STR(gp_backend_name(GP_BACKEND_AUTO), "auto");
    CHECK_STR(gp_backend_name(GP_BACKEND_NVML), "nvml");
    CHECK_STR(gp_backend_name(GP_BACKEND_SMI), "smi");
    CHECK_STR(gp_backend_name(GP_BACKEND_NONE), "none");
    CHECK(gp_backend_name((gp_backend_kind)17) == NULL);
    CHECK_INT(gp_backend_parse("smi", &k, &err), GP_OK);
    CHECK_INT(k, GP_BACKEND_SMI);
    CHECK_INT(gp_backend_parse("cuda", &k, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "backend 'cuda' is unknown: use auto, nvml, smi, amd or none");
    CHECK_INT(gp_backend_parse(NULL, &k, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(gp_strerror(GP_OK), "success");
    CHECK_STR(gp_strerror(GP_ERR_DEVICE_LOST), "device lost");
    CHECK_STR(gp_strerror((gp_status)1234), "unknown status");
    CHECK_STR(gp_version(), GP_VERSION_STRING);
    CHECK_INT(gp_version_number(), GP_VERSION_NUMBER);
}

static int sync_calls;
static void count_sync(void *user)
{
    CHECK(user == &sync_calls);
    sync_calls++;
}

static void test_none_region(void)
{
    gp_options o = none_opts();
    o.sync_fn = count_sync;
    o.sync_user = &sync_calls;
    o.keep_samples = 1;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_STR(gp_monitor_backend(m), "none");
    CHECK_INT(gp_monitor_device_count(m), 1);
    CHECK(gp_monitor_summary(m, 0) == NULL);
    CHECK_INT(gp_monitor_stop(m, &err), GP_ERR_STATE);
    CHECK_STR(err.message, "the monitor was not started: call gp_monitor_start first");
    sync_calls = 0;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    CHECK_INT(sync_calls, 1);
    CHECK_INT(gp_monitor_start(m, &err), GP_ERR_STATE);
    CHECK_CONTAINS(err.message, "a monitor runs one region at a time");
    CHECK_INT(gp_monitor_rearm(m, &err), GP_ERR_STATE);
    CHECK_STR(err.message, "the monitor is running: stop it first");
    gp_sample s;
    CHECK_INT(gp_monitor_latest(m, 0, &s), GP_ERR_STATE);
    CHECK_INT(gp_monitor_latest(m, 5, &s), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK_INT(sync_calls, 2);
    CHECK_INT(gp_monitor_stop(m, &err), GP_ERR_STATE);
    CHECK_STR(err.message, "the monitor was already stopped");
    const gp_summary *sum = gp_monitor_summary(m, 0);
    CHECK(sum != NULL);
    if (sum) {
        CHECK_STR(sum->backend, "none");
        CHECK_STR(sum->note, "");
        CHECK_INT(sum->sample_count, 0);
        CHECK_INT(sum->valid, 0);
        CHECK(sum->duration_s >= 0.0);
        CHECK_INT(sum->energy_source, GP_ENERGY_NONE);
        CHECK_INT(sum->device_status, GP_OK);
    }
    size_t n = 99;
    CHECK(gp_monitor_samples(m, &n) == NULL);
    CHECK_INT(n, 0);
    CHECK(gp_monitor_summary(m, 1) == NULL);
    gp_monitor_stats st;
    CHECK_INT(gp_monitor_get_stats(m, &st), GP_OK);
    CHECK_U64(st.ticks, 0);

    /* Another region on the same monitor: back to "created", then as new. */
    CHECK_INT(gp_monitor_rearm(NULL, &err), GP_ERR_INVALID_ARG);
    CHECK_INT(gp_monitor_rearm(m, &err), GP_OK);
    CHECK(gp_monitor_summary(m, 0) == NULL);
    CHECK_INT(gp_monitor_stop(m, &err), GP_ERR_STATE);
    CHECK_INT(gp_monitor_rearm(m, &err), GP_ERR_STATE);
    CHECK_STR(err.message, "the monitor has not run a region yet: start it");
    sync_calls = 0;
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK_INT(sync_calls, 2);
    sum = gp_monitor_summary(m, 0);
    CHECK(sum != NULL && sum->sample_count == 0 && strcmp(sum->backend, "none") == 0);
    gp_monitor_destroy(m);
    gp_monitor_destroy(NULL);
}

/* Nothing there: no NVML library at that path, no nvidia-smi at that path. */
static gp_options absent_opts(void)
{
    gp_options o;
    gp_options_init(&o);
    o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    o.smi_path = "/nonexistent/nvidia-smi";
    o.report = GP_REPORT_NONE;
    return o;
}

static int fn_calls;
static int work(void *user)
{
    fn_calls++;
    return *(int *)user;
}

static void test_strict_and_fallback(void)
{
    gp_options o = absent_opts();
    gp_monitor *m = (gp_monitor *)1;
    gp_error err;
    gp_status st = gp_monitor_create(&o, &m, &err);
    CHECK_INT(st, GP_ERR_BACKEND_UNAVAILABLE);
    CHECK(m == NULL);
    CHECK_CONTAINS(err.message, "no GPU backend could be opened (tried nvml, smi): nvml: ");
    CHECK_CONTAINS(err.message, "/nonexistent/libnvidia-ml.so.1");
    CHECK_CONTAINS(err.message, "; smi: ");
    CHECK_CONTAINS(err.message, "/nonexistent/nvidia-smi");
    CHECK_CONTAINS(err.message, "use backend none for a dry run");

    /* Strict: the function is not run. */
    int value = 42;
    fn_calls = 0;
    gp_profiled_result r;
    CHECK_INT(gp_profile_call(&o, work, &value, &r, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_INT(fn_calls, 0);
    CHECK_INT(r.n_gpus, 0);

    /* A forced backend reports only its own failure. */
    o.backend = GP_BACKEND_NVML;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK(strncmp(err.message, "nvml: ", 6) == 0);
    CHECK(strstr(err.message, "smi:") == NULL);

    /* Not strict: falls back to none and says why. */
    o = absent_opts();
    o.strict = 0;
    CHECK_INT(gp_profile_call(&o, work, &value, &r, &err), GP_OK);
    CHECK_INT(fn_calls, 1);
    CHECK_INT(r.value, 42);
    CHECK_INT(r.n_gpus, 1);
    CHECK_STR(r.gpu.backend, "none");
    CHECK_CONTAINS(r.gpu.note, "no GPU backend, nothing was sampled: nvml: ");
    CHECK_CONTAINS(r.gpu.note, "; smi: ");
    CHECK_INT(r.gpu.sample_count, 0);
    gp_profiled_result_free(&r);
    CHECK(r.gpus == NULL);
    gp_profiled_result_free(NULL);
}

static int reports;
static void on_report(const gp_summary *s, void *user)
{
    CHECK(user == &reports);
    CHECK_STR(s->backend, "none");
    reports++;
}

static void test_profile_call_reports(void)
{
    gp_options o = none_opts();
    int value = 7;
    gp_error err;
    CHECK_INT(gp_profile_call(&o, NULL, &value, NULL, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "gp_profile_call: fn is NULL");

    o.report = GP_REPORT_CALLBACK;
    o.report_fn = on_report;
    o.report_user = &reports;
    reports = 0;
    fn_calls = 0;
    CHECK_INT(gp_profile_call(&o, work, &value, NULL, &err), GP_OK);
    CHECK_INT(fn_calls, 1);
    CHECK_INT(reports, 1);

    /* Print goes to the given FILE*. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    o.report = GP_REPORT_PRINT;
    o.report_file = f;
    o.report_flags = GP_FMT_ASCII;
    gp_profiled_result r;
    CHECK_INT(gp_profile_call(&o, work, &value, &r, &err), GP_OK);
    CHECK_INT(r.value, 7);
    long written = ftell(f);
    CHECK(written > 0);
    fclose(f);
    gp_profiled_result_free(&r);

    /* Several devices on none: one summary each, in order. */
    unsigned devs[] = {3, 1};
    o = none_opts();
    o.devices = devs;
    o.n_devices = 2;
    CHECK_INT(gp_profile_call(&o, work, &value, &r, &err), GP_OK);
    CHECK_INT(r.n_gpus, 2);
    if (r.n_gpus == 2) {
        CHECK_INT(r.gpus[0].device_index, 3);
        CHECK_INT(r.gpus[1].device_index, 1);
        CHECK_INT(r.gpu.device_index, 3);
    }
    gp_profiled_result_free(&r);
}

static void test_list_devices_none(void)
{
    gp_options o = none_opts();
    gp_device_info *list = (gp_device_info *)1;
    size_t n = 9;
    const char *used = NULL;
    char drv[32] = "x";
    gp_error err;
    CHECK_INT(gp_list_devices(&o, &list, &n, drv, sizeof drv, &used, &err), GP_OK);
    CHECK(list == NULL);
    CHECK_INT(n, 0);
    CHECK_STR(used, "none");
    CHECK_STR(drv, "");
    gp_devices_free(list);
    CHECK_INT(gp_list_devices(&o, NULL, &n, NULL, 0, NULL, &err), GP_ERR_INVALID_ARG);

    o = absent_opts();
    CHECK_INT(gp_list_devices(&o, &list, &n, NULL, 0, NULL, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(err.message, "no GPU backend could be opened");
}

int main(void)
{
    test_defaults();
    test_validation();
    test_backend_names();
    test_none_region();
    test_strict_and_fallback();
    test_profile_call_reports();
    test_list_devices_none();
    return check_done("test_monitor");
}
