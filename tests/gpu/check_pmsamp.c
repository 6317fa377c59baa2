/*
 * check_pmsamp.c - checks a PmSampling session of pmsamp_workload.cu
 * (tests/gpu/run.sh, step 7) against what the program knows it did.
 *
 *   check_pmsamp --log-dir DIR
 *
 * DIR holds the program's one session.  Checks:
 *   - capture_capabilities' selected_engine is "nvidia.pm_sampling" and
 *     pm_sampling collected (or partial);
 *   - a pm_sampling_config record, and pm_sample_batch rows of
 *     sm__cycles_active.avg.pct_of_peak_sustained_elapsed (metric_dict);
 *   - the samples track the kernel `spin` (its kernel_event_batch row):
 *     at least 5 samples inside its middle 80 %, mean SM active > 50 %;
 *     at least 5 samples more than 20 ms before its start or after its
 *     end, mean < 10 %.
 * PASS / FAIL per check, then a final line; exit 0 only if all passed.
 */
#include "fl_log.h"
#include "gpu_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

/* The id (as text) of the first dictionary entry of dict whose name
 * contains needle; -1 when none. */
static json_int_t dict_id(const fl_log *log, const char *dict, const char *needle)
{
    for (size_t i = 0; i < log->n; i++) {
        json_t *d = json_object_get(log->lines[i], dict);
        const char *k;
        json_t *v;
        json_object_foreach(d, k, v)
        {
            const char *s = json_string_value(v);
            if (s && strstr(s, needle))
                return strtoll(k, NULL, 10);
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--log-dir")) {
        fprintf(stderr, "usage: check_pmsamp --log-dir DIR\n");
        return 2;
    }
    fl_log dev, scope;
    json_t *caps;
    if (gc_session("check_pmsamp", argv[2], &dev, &scope, &caps) != 0)
        return 2;
    const char *sel = json_string_value(json_object_get(caps, "selected_engine"));
    report(sel && strcmp(sel, "nvidia.pm_sampling") == 0, "selected_engine %s",
           sel ? sel : "(none)");
    static const char *const features[] = {"pm_sampling", NULL};
    gc_features(caps, features);
    report(fl_first(&scope, "pm_sampling_config") != NULL, "a pm_sampling_config record");

    /* spin's interval, from its kernel_event_batch row. */
    json_int_t kid = dict_id(&dev, "kernel_dict", "spin");
    uint64_t k0 = 0, k1 = 0;
    for (size_t i = 0; i < dev.n && !k1; i++) {
        json_t *b = dev.lines[i];
        if (strcmp(log_type(b), "kernel_event_batch") != 0)
            continue;
        int c_dt = fl_col(b, "dt_ns"), c_k = fl_col(b, "kernel_id"), c_d = fl_col(b, "duration_ns");
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r);
            if (json_integer_value(json_array_get(row, (size_t)c_k)) != kid)
                continue;
            k0 = (uint64_t)fl_int(b, "base_time_ns") +
                 (uint64_t)json_integer_value(json_array_get(row, (size_t)c_dt));
            k1 = k0 + (uint64_t)json_integer_value(json_array_get(row, (size_t)c_d));
        }
    }
    report(k1 > k0, "the kernel spin traced (%.1f ms)", (double)(k1 - k0) / 1e6);

    json_int_t mid = dict_id(&scope, "metric_dict", "sm__cycles_active.avg");
    report(mid >= 0, "metric_dict names sm__cycles_active.avg (id %lld)", (long long)mid);
    double in_sum = 0, out_sum = 0;
    size_t n_in = 0, n_out = 0, n_rows = 0;
    uint64_t lo = k0 + (k1 - k0) / 10, hi = k1 - (k1 - k0) / 10;
    for (size_t i = 0; i < scope.n; i++) {
        json_t *b = scope.lines[i];
        if (strcmp(log_type(b), "pm_sample_batch") != 0)
            continue;
        int c_dt = fl_col(b, "dt_ns"), c_m = fl_col(b, "metric_id"), c_v = fl_col(b, "value");
        uint64_t base = (uint64_t)fl_int(b, "base_time_ns");
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r);
            n_rows++;
            if (json_integer_value(json_array_get(row, (size_t)c_m)) != mid)
                continue;
            uint64_t t = base + (uint64_t)json_integer_value(json_array_get(row, (size_t)c_dt));
            double v = json_number_value(json_array_get(row, (size_t)c_v));
            if (t >= lo && t <= hi) {
                in_sum += v;
                n_in++;
            } else if (t + 20000000 < k0 || t > k1 + 20000000) {
                out_sum += v;
                n_out++;
            }
        }
    }
    report(n_rows > 0, "%zu pm_sample_batch rows", n_rows);
    report(n_in >= 5 && in_sum / (double)n_in > 50,
           "while spin runs: %zu samples, mean SM active %.1f %% (want > 50)", n_in,
           n_in ? in_sum / (double)n_in : 0.0);
    report(n_out >= 5 && out_sum / (double)n_out < 10,
           "before and after spin: %zu samples, mean SM active %.1f %% (want < 10)", n_out,
           n_out ? out_sum / (double)n_out : 0.0);
    fl_log_free(&dev);
    fl_log_free(&scope);
    printf("check_pmsamp: %s\n", n_fail ? "FAIL" : "PASS");
    return n_fail ? 1 : 0;
}
