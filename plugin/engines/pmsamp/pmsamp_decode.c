/*
 * pmsamp_decode.c - PM sampling's metric set and decoder (pmsamp.h).
 *
 * Promises: the default set is the preferred metrics the chip has, cut to
 * one pass (PM sampling cannot replay); a caller's list is refused, with
 * the metric or the pass count named, rather than changed; a decode hands
 * the sink one row per (completed sample, metric) whose value is finite,
 * times on the wall clock at the sample's midpoint, and never reads past
 * the samples CUPTI says are complete.  No CUPTI call but through the
 * fl_pms_api table.
 */
#include "pmsamp.h"

#include "../../common/metrics_image.h"
#include "../../../src/util/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PM sampling's words for the fixes that differ from PC sampling's. */
static const fl_cupti_fixes pms_fixes = {
    .no_permission = "GPU performance counters are restricted to administrators: run as root, or "
                     "allow them for every user with the nvidia module option "
                     "NVreg_RestrictProfilingToAdminUsers=0 (a line 'options nvidia "
                     "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/, then reload the "
                     "driver or reboot)",
    .mig = "PM sampling needs the whole GPU, not a MIG instance: run on a GPU with MIG "
           "disabled (nvidia-smi -i N -mig 0, as root, with no process on it)",
    .not_supported = "this device, driver or CUPTI has no PM sampling (it needs compute capability "
                     "7.5 or newer, CUDA 12.6 or newer, a driver no older than its CUPTI)",
    .conflict = "another profiler holds the device (Nsight, the range profiler, or a second "
                "CUPTI subscriber): stop the other tool",
    .mig_own = true,
};

uint32_t fl_pms_status_of(CUptiResult r)
{
    return fl_cupti_status(r, &pms_fixes);
}

void fl_pms_explain(CUptiResult r, const char *what, char *out, size_t len)
{
    fl_cupti_explain(r, what, &pms_fixes, out, len);
}

const char *const fl_pms_default_metrics[] = {
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
};
const size_t fl_pms_n_default_metrics =
    sizeof fl_pms_default_metrics / sizeof fl_pms_default_metrics[0];

void fl_pms_free_metrics(char **m, size_t n)
{
    if (!m)
        return;
    for (size_t i = 0; i < n; i++)
        free(m[i]);
    free(m);
}

/* list split at commas, blanks trimmed, empty items skipped. */
static gp_status split(const char *list, char **out, size_t *n, gp_error *err)
{
    *n = 0;
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if (t > p) {
            if (*n == FL_PM_MAX_METRICS)
                return gp_error_set(
                    err, GP_ERR_INVALID_ARG,
                    "pm_sampling_metrics lists more than %u metrics: give at most %u",
                    FL_PM_MAX_METRICS, FL_PM_MAX_METRICS);
            out[*n] = strndup(p, (size_t)(t - p));
            if (!out[*n])
                return gp_error_set(err, GP_ERR_NO_MEMORY,
                                    "out of memory for the PM sampling metrics");
            (*n)++;
        }
        p = e;
    }
    return GP_OK;
}

/* The default set for the chip (see pmsamp.h). */
static gp_status default_set(const gp_metrics_plugin *h, void *hobj, const char *chip, char **names,
                             size_t *n, uint8_t **img, size_t *size, gp_error *err)
{
    *n = 0;
    gp_error probe = {0}; /* a metric the chip lacks is left out, not reported */
    for (size_t i = 0; i < fl_pms_n_default_metrics; i++) {
        char *one = (char *)fl_pms_default_metrics[i];
        uint8_t *im = NULL;
        size_t sz = 0, passes = 0;
        if (fl_metrics_image(h, hobj, &one, 1, &im, &sz, &passes, &probe) == GP_OK && passes == 1)
            names[(*n)++] = strdup(one);
        free(im);
        if (*n && !names[*n - 1]) {
            (*n)--;
            return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the PM sampling metrics");
        }
    }
    while (*n > 0) {
        size_t passes = 0;
        if (fl_metrics_image(h, hobj, names, *n, img, size, &passes, &probe) == GP_OK &&
            passes == 1)
            return GP_OK;
        free(*img);
        *img = NULL;
        free(names[--*n]);
    }
    return gp_error_set(
        err, GP_ERR_NOT_SUPPORTED,
        "none of the default PM sampling metrics can be collected in one pass on %s: "
        "name the metrics with pm_sampling_metrics (gpu-profile metrics list "
        "--profiler pm --chip %s lists them)",
        chip, chip);
}

gp_status fl_pms_metric_set(const fl_pms_api *api, void *hobj, const char *chip, const char *list,
                            char ***out, size_t *n, uint8_t **image, size_t *image_size,
                            gp_error *err)
{
    *out = NULL;
    *n = 0;
    *image = NULL;
    *image_size = 0;
    const gp_metrics_plugin *h = api->host;
    if (!h)
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED, "the plugin has no Profiler Host API table");
    char **names = calloc(FL_PM_MAX_METRICS, sizeof *names);
    if (!names)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the PM sampling metrics");
    size_t k = 0;
    gp_status st;
    if (!list || !*list) {
        st = default_set(h, hobj, chip, names, &k, image, image_size, err);
    } else if ((st = split(list, names, &k, err)) == GP_OK && k == 0) {
        st =
            gp_error_set(err, GP_ERR_INVALID_ARG, "pm_sampling_metrics '%s' names no metric", list);
    } else if (st == GP_OK) {
        gp_error why = {0};
        size_t passes = 0;
        if (fl_metrics_image(h, hobj, names, k, image, image_size, &passes, &why) != GP_OK) {
            /* The host's message as it always read: at most 511 bytes. */
            st = gp_error_set(err, GP_ERR_INVALID_ARG, "PM sampling metrics refused: %.511s",
                              why.message);
        } else if (passes != 1) {
            st = gp_error_set(
                err, GP_ERR_INVALID_ARG,
                "the %zu PM sampling metrics need %zu passes on %s; PM sampling collects "
                "one: name fewer metrics (gpu-profile metrics passes --profiler pm "
                "--chip %s NAME... counts them)",
                k, passes, chip, chip);
            free(*image);
            *image = NULL;
        }
    }
    if (st != GP_OK) {
        fl_pms_free_metrics(names, k);
        return st;
    }
    *out = names;
    *n = k;
    return GP_OK;
}

/* Rows held for the sink. */
typedef struct rows_buf {
    fl_pm_row r[FL_TRACE_BATCH];
    size_t n;
    /* The host's reason when an evaluation fails: here, not on the decode
     * loop's stack frame, and never zeroed per sample (1 KiB). */
    gp_error e;
} rows_buf;

static void flush_rows(rows_buf *rb, const fl_trace_sink *sink, fl_pms_decode_out *out)
{
    if (rb->n && sink && sink->pm_samples)
        sink->pm_samples(sink->user, rb->r, rb->n);
    out->rows += rb->n;
    rb->n = 0;
}

bool fl_pms_decode(const fl_pms_api *api, const fl_pms_decode_in *in, const fl_trace_sink *sink,
                   fl_pms_decode_out *out)
{
    CUpti_PmSampling_GetCounterDataInfo_Params info = {
        .structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE,
        .pCounterDataImage = in->image,
        .counterDataImageSize = in->image_size};
    CUptiResult r = api->data_info(&info);
    if (r != CUPTI_SUCCESS) {
        fl_pms_explain(r, "cuptiPmSamplingGetCounterDataInfo", out->msg, sizeof out->msg);
        return false;
    }
    size_t done = info.numCompletedSamples;
    if (done > info.numTotalSamples)
        done = info.numTotalSamples; /* never past the image's capacity */
    double values[FL_PM_MAX_METRICS];
    size_t nm = in->n_metrics < FL_PM_MAX_METRICS ? in->n_metrics : FL_PM_MAX_METRICS;
    rows_buf *rb = malloc(sizeof *rb);
    if (!rb) {
        snprintf(out->msg, sizeof out->msg, "out of memory for PM sample rows");
        return false;
    }
    rb->n = 0;
    for (size_t s = 0; s < done; s++) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
            .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
            .pPmSamplingObject = in->pm,
            .pCounterDataImage = in->image,
            .counterDataImageSize = in->image_size,
            .sampleIndex = s};
        out->samples++;
        r = api->sample_info(&si);
        if (r != CUPTI_SUCCESS) {
            out->bad_values += nm;
            if (!out->msg[0])
                fl_pms_explain(r, "cuptiPmSamplingCounterDataGetSampleInfo", out->msg,
                               sizeof out->msg);
            continue;
        }
        uint64_t end = si.endTimestamp > si.startTimestamp ? si.endTimestamp : si.startTimestamp;
        uint64_t mid = si.startTimestamp + (end - si.startTimestamp) / 2;
        uint64_t t = (uint64_t)((int64_t)mid + in->clock_offset_ns);
        if (t < in->not_before_ns) {
            out->early++;
            continue;
        }
        rb->e.message[0] = '\0'; /* the host fills it when it fails */
        if (api->host->evaluate(in->host, in->image, in->image_size, s, in->metrics, nm, values,
                                &rb->e) != GP_OK) {
            out->bad_values += nm;
            if (!out->msg[0])
                snprintf(out->msg, sizeof out->msg, "%s", rb->e.message);
            continue;
        }
        for (size_t m = 0; m < nm; m++) {
            if (!isfinite(values[m])) {
                out->bad_values++;
                continue;
            }
            rb->r[rb->n++] = (fl_pm_row){.t_ns = t,
                                         .value = values[m],
                                         .sample_index = in->first_index + (uint32_t)s,
                                         .device_id = in->device_id,
                                         .metric_id = in->metric_ids[m]};
            if (rb->n == FL_TRACE_BATCH)
                flush_rows(rb, sink, out);
        }
    }
    flush_rows(rb, sink, out);
    free(rb);
    return true;
}
