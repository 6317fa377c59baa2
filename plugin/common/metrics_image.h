/*
 * metrics_image.h - a metric list's config image and its pass count
 * through the Profiler Host table (metrics_image.c), for the engines that
 * choose a metric set (PM sampling, the range profiler).
 */
#ifndef GP_PLUGIN_COMMON_METRICS_IMAGE_H
#define GP_PLUGIN_COMMON_METRICS_IMAGE_H

#include "../../src/abi/metrics_abi.h"

#include <stddef.h>
#include <stdint.h>

/* The config image of names[0..n) (malloc'd, *img) and its passes; GP_OK,
 * else the host's status with *img NULL. */
gp_status fl_metrics_image(const gp_metrics_plugin *host, void *h, char *const *names, size_t n,
                           uint8_t **img, size_t *size, size_t *passes, gp_error *err);

#endif /* GP_PLUGIN_COMMON_METRICS_IMAGE_H */
