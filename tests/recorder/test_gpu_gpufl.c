/*
 * test_gpu_gpufl.c - the flight recorder on a machine with an NVIDIA GPU
 * (label "gpu"): a Monitor session with the real NVML lists every device
 * NVML sees in job_start with live values, writes device_metric_batch rows
 * with the metrics every datacenter GPU reports (never null where NVML
 * answered), and a Trace request falls back to Monitor with the reason in
 * capture_capabilities.  Without a GPU it prints why and exits 77 (skipped).
 */
#include "fl_log.h"
#include "gpu_profile.h"
#include "gpufl.h"

static int skip(const char *why)
{
    printf("SKIP: no GPU on this machine (%s)\n", why);
    return 77;
}

int main(void)
{
    gp_options go;
    gp_options_init(&go);
    go.backend = GP_BACKEND_NVML;
    gp_device_info *nv = NULL;
    size_t n_nv = 0;
    char drv[96];
    const char *used = NULL;
    gp_error gerr;
    if (gp_list_devices(&go, &nv, &n_nv, drv, sizeof drv, &used, &gerr) != GP_OK)
        return skip(gerr.message);
    if (n_nv == 0)
        return skip("NVML loads but sees no device");

    char base[] = "/tmp/gpufl-gpu-XXXXXX";
    if (!mkdtemp(base))
        return 2;
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "gpu_test";
    o.log_path = base;
    o.system_sample_rate_ms = 50;
    o.continuous_system_sampling = true;
    o.backend = GPUFL_BACKEND_NVIDIA;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    if (err.status != GPUFL_OK)
        fprintf(stderr, "gpufl_init: %s\n", err.message);
    char dir[1024];
    gpufl_session_dir(dir, sizeof dir);
    GPUFL_SCOPE("one_second")
    {
        usleep(1000 * 1000);
    }
    gpufl_shutdown();

    fl_log sys;
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    CHECK_INT(sys.bad, 0);
    json_t *js = sys.n ? sys.lines[0] : NULL;
    CHECK(js && strcmp(log_type(js), "job_start") == 0);
    json_t *devs = js ? json_object_get(js, "devices") : NULL;
    CHECK_U64(json_array_size(devs), n_nv);
    for (size_t i = 0; i < json_array_size(devs) && i < n_nv; i++) {
        json_t *d = json_array_get(devs, i);
        printf("job_start device %zu: %s\n", i, json_string_value(json_object_get(d, "name")));
        CHECK_STR(json_string_value(json_object_get(d, "uuid")), nv[i].uuid);
        CHECK(json_integer_value(json_object_get(d, "total_mib")) > 1024);
        CHECK(json_is_integer(json_object_get(d, "power_mw")));
        CHECK(json_is_integer(json_object_get(d, "temp_c")));
    }
    size_t rows = 0, null_cells = 0;
    for (size_t i = 0; i < sys.n; i++) {
        if (strcmp(log_type(sys.lines[i]), "device_metric_batch") != 0)
            continue;
        size_t k;
        json_t *row;
        json_array_foreach(json_object_get(sys.lines[i], "rows"), k, row)
        {
            rows++;
            /* gpu_util .. clock_sm: every datacenter GPU reports them. */
            for (size_t c = 2; c <= 8; c++)
                null_cells += json_is_null(json_array_get(row, c));
        }
    }
    printf("device rows: %zu, null base cells: %zu\n", rows, null_cells);
    CHECK(rows >= 15 * n_nv);
    CHECK_U64(null_cells, 0);
    json_t *caps = fl_first(&sys, "capture_capabilities");
    CHECK(caps != NULL);
    if (caps) {
        CHECK_STR(json_string_value(json_object_get(caps, "requested_engine")), "nvidia.trace");
        CHECK_STR(json_string_value(json_object_get(caps, "selected_engine")), "nvidia.monitor");
    }
    fl_log_free(&sys);
    gp_devices_free(nv);
    fl_rmtree(base);
    return check_done("test_gpu_gpufl");
}
