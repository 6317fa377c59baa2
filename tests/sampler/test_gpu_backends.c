/*
 * test_gpu_backends.c - the real NVML and the real nvidia-smi, on a machine
 * with an NVIDIA GPU (label "gpu").  Without one it prints why and exits 77,
 * which CTest reports as skipped.  Checks that both backends see the same
 * devices and that a one-second region yields the metrics every datacenter
 * GPU reports.
 */
#include "check.h"
#include "gpu_profile.h"

#include <unistd.h>

static int skip(const char *why)
{
    printf("SKIP: no GPU on this machine (%s)\n", why);
    return 77;
}

static void region(gp_backend_kind kind)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = kind;
    o.device = GP_ALL_DEVICES;
    o.interval_s = 0.05;
    o.report = GP_REPORT_NONE;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m) {
        fprintf(stderr, "%s: %s\n", gp_backend_name(kind), err.message);
        return;
    }
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    usleep(1200 * 1000);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    for (size_t i = 0; i < gp_monitor_device_count(m); i++) {
        const gp_summary *s = gp_monitor_summary(m, i);
        char text[4096];
        gp_summary_format(s, 0, text, sizeof text);
        printf("%s\n", text);
        CHECK(s->sample_count >= 5);
        CHECK(s->name[0] != '\0');
        CHECK(strncmp(s->uuid, "GPU-", 4) == 0 || strncmp(s->uuid, "MIG-", 4) == 0);
        CHECK(s->valid & GP_M_MEM_USED);
        CHECK(s->valid & GP_M_MEM_TOTAL);
        CHECK(s->mem_total_bytes > (1ull << 30));
        CHECK(s->valid & GP_M_POWER);
        CHECK(s->power_mean_mw > 1000.0);
        CHECK(s->valid & GP_M_TEMP);
        CHECK(s->valid & GP_M_CLOCK_SM);
        CHECK(s->energy_source != GP_ENERGY_NONE);
        CHECK_INT(s->device_status, GP_OK);
    }
    gp_monitor_destroy(m);
}

int main(void)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    gp_device_info *nv = NULL, *smi = NULL;
    size_t n_nv = 0, n_smi = 0;
    char drv_nv[96], drv_smi[96];
    const char *used = NULL;
    gp_error err;
    if (gp_list_devices(&o, &nv, &n_nv, drv_nv, sizeof drv_nv, &used, &err) != GP_OK)
        return skip(err.message);
    if (n_nv == 0)
        return skip("NVML loads but sees no device");
    printf("nvml: %zu device(s), driver %s\n", n_nv, drv_nv);

    o.backend = GP_BACKEND_SMI;
    CHECK_INT(gp_list_devices(&o, &smi, &n_smi, drv_smi, sizeof drv_smi, &used, &err), GP_OK);
    CHECK_INT(n_smi, n_nv);
    CHECK_STR(drv_smi, drv_nv);
    for (size_t i = 0; i < n_nv && i < n_smi; i++) {
        printf("device %zu: %s %s\n", i, nv[i].name, nv[i].uuid);
        CHECK_STR(smi[i].name, nv[i].name);
        CHECK_STR(smi[i].uuid, nv[i].uuid);
        /* nvidia-smi reports MiB: the NVML total rounded down to MiB. */
        CHECK_U64(smi[i].mem_total_bytes >> 20, nv[i].mem_total_bytes >> 20);
    }
    gp_devices_free(nv);
    gp_devices_free(smi);

    region(GP_BACKEND_NVML);
    region(GP_BACKEND_SMI);
    return check_done("test_gpu_backends");
}
