/*
 * metrics_image.c - a metric list's config image and passes (metrics_image.h).
 *
 * Promises: one call of the host's config_image then passes; on failure
 * nothing is left allocated and *img is NULL.
 */
#include "metrics_image.h"

#include <stdlib.h>

gp_status fl_metrics_image(const gp_metrics_plugin *host, void *h, char *const *names, size_t n,
                           uint8_t **img, size_t *size, size_t *passes, gp_error *err)
{
    *img = NULL;
    gp_status st = host->config_image(h, (const char *const *)names, n, img, size, err);
    if (st == GP_OK)
        st = host->passes(*img, *size, passes, err);
    if (st != GP_OK) {
        free(*img);
        *img = NULL;
    }
    return st;
}
