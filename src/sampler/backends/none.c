/*
 * sampler/backends/none.c - the dry-run backend: it opens, reports no devices and
 * never samples.  A monitor on it starts no thread; its summaries carry the
 * duration and no metric.
 */
#include "../../util/error.h"
#include "backend.h"
#include "gpu_profile.h"

static gp_status none_open(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    (void)cfg;
    (void)err;
    *ctx = NULL;
    return GP_OK;
}

static void none_close(void *ctx)
{
    (void)ctx;
}

static gp_status none_device_count(void *ctx, unsigned *count, gp_error *err)
{
    (void)ctx;
    (void)err;
    *count = 0;
    return GP_OK;
}

static gp_status none_device_info(void *ctx, unsigned index, gp_device_info *out, gp_error *err)
{
    (void)ctx;
    (void)out;
    return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                        "none: device %u has no information: the none backend samples nothing",
                        index);
}

static gp_status none_driver_version(void *ctx, char *buf, size_t len, gp_error *err)
{
    (void)ctx;
    (void)err;
    if (len)
        buf[0] = '\0';
    return GP_OK;
}

static gp_status none_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                            gp_error *err)
{
    (void)ctx;
    (void)indices;
    (void)n;
    (void)interval_ns;
    (void)err;
    return GP_OK;
}

static void none_stop(void *ctx)
{
    (void)ctx;
}

const gp_backend gp_backend_none = {
    .name = "none",
    .self_paced = 0,
    .open = none_open,
    .close = none_close,
    .device_count = none_device_count,
    .device_info = none_device_info,
    .driver_version = none_driver_version,
    .start = none_start,
    .read = NULL,
    .stop = none_stop,
};
