/*
 * report/json_profile.c - the JSON keys of what the profiling engines
 * measured (report.h): "stalls" (reasons by name: metric_dict's for PC
 * Sampling API rows, CUPTI's activity enum's for older rows), "sass_metrics"
 * (sample_kind 1 rows and sass_config), "sass" (what the sass channel
 * holds), "perf_metrics" (PM samples), "pm_sampling" (pm_sampling_config),
 * "kernel_perf_metrics" and "scope_perf_metrics" (the range profiler's
 * means per range; null for a metric no range collected).  Each key is
 * null when the session has none of it.
 */
#include "report_int.h"
#include "sass_metrics.h"
#include "stalls.h"
#include "../util/buf.h"
#include "json_write.h"

/* A JSON list of strings (anything else in it left out); [] when not a
 * list. */
static void j_str_list(jw *w, const char *key, const json_t *arr)
{
    j_open(w, key, '[');
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (s)
            j_str(w, NULL, s);
    }
    j_close(w, ']');
}

static void j_names(jw *w, const char *key, const char *const *v, size_t n)
{
    j_open(w, key, '[');
    for (size_t i = 0; i < n; i++)
        j_str(w, NULL, v[i]);
    j_close(w, ']');
}

/* A configuration record's device_id (a number, or digits in a string). */
static void j_config_device(jw *w, const json_t *rec)
{
    uint64_t dev;
    bool ok = fl_jget_id(rec, "device_id", &dev);
    j_opt_u64(w, "device_id", ok, dev);
}

void fl_json_stalls(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    int top = in->top_n;
    if (!j_open_if(w, "stalls", r->n_st || r->sass_rows, '{'))
        return;
    j_u64(w, "pc_samples", r->pc_samples);
    j_u64(w, "sass_metric_rows", r->sass_rows);
    j_open(w, "reasons", '[');
    for (size_t i = 0; i < r->n_st; i++) {
        const stallstat *s = &r->st[i];
        j_open(w, NULL, '{');
        j_u64(w, "stall_reason", s->reason);
        j_opt_u64(w, "metric_id", s->metric_id != 0, s->metric_id);
        const char *name = fl_stall_name(r, s);
        char sh[160];
        bool ni = false;
        const fl_stall_info *info =
            name ? fl_stall_info_of(s->metric_id ? fl_stall_short(name, sh, sizeof sh, &ni) : name)
                 : NULL;
        j_str(w, "name", name);
        j_str(w, "display_name", info ? info->display : name);
        j_str(w, "meaning", info ? info->meaning : NULL);
        j_bool(w, "not_issued", ni);
        j_u64(w, "samples", s->samples);
        j_close(w, '}');
    }
    j_close(w, ']');
    j_open(w, "functions", '[');
    for (size_t i = 0; i < r->n_fn && i < 10; i++) {
        const fnstat *fn = &r->fn[i];
        j_open(w, NULL, '{');
        j_u64(w, "function_id", fn->function_id);
        j_str(w, "name", fl_model_function_name(r->m, fn->function_id));
        j_u64(w, "samples", fn->samples);
        j_close(w, '}');
    }
    j_close(w, ']');
    fl_json_stall_detail(r, top, w);
    j_close(w, '}');
}

void fl_json_sass(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    int top = in->top_n;
    if (!r->sass_rows && !r->sass_configs) {
        j_str(w, "sass_metrics", NULL);
    } else {
        j_open(w, "sass_metrics", '{');
        j_u64(w, "rows", r->sass_rows);
        j_open(w, "configs", '[');
        for (size_t i = 0; i < json_array_size(r->sass_configs); i++) {
            const json_t *c = json_array_get(r->sass_configs, i);
            j_open(w, NULL, '{');
            j_config_device(w, c);
            j_str_list(w, "configured_metrics", json_object_get(c, "configured_metrics"));
            j_str_list(w, "skipped_metrics", json_object_get(c, "skipped_metrics"));
            j_close(w, '}');
        }
        j_close(w, ']');
        j_u64(w, "configs_not_kept", r->sass_configs_more);
        j_open(w, "metrics", '[');
        for (size_t i = 0; i < r->n_sm; i++) {
            j_open(w, NULL, '{');
            j_u64(w, "metric_id", r->sm[i].metric_id);
            j_str(w, "name", fl_model_metric_name(r->m, r->sm[i].metric_id));
            j_u64(w, "rows", r->sm[i].rows);
            j_dbl(w, "total", true, r->sm[i].total);
            j_close(w, '}');
        }
        j_close(w, ']');
        fl_json_sass_detail(r, top, w);
        j_close(w, '}');
    }
    if (!j_open_if(w, "sass", r->cubins || r->ptxs || r->sources, '{'))
        return;
    j_u64(w, "cubin_disassemblies", r->cubins);
    j_u64(w, "ptx_disassemblies", r->ptxs);
    j_u64(w, "source_files", r->sources);
    j_names(w, "functions", r->sass_fn, r->n_sass_fn);
    j_names(w, "source_file_names", r->sass_src, r->n_sass_src);
    j_close(w, '}');
}

static void pm_sampling(const fl_report *r, jw *w)
{
    if (!j_open_if(w, "pm_sampling", r->pm_configs, '['))
        return;
    for (size_t i = 0; i < json_array_size(r->pm_configs); i++) {
        const json_t *c = json_array_get(r->pm_configs, i);
        uint64_t v;
        j_open(w, NULL, '{');
        j_config_device(w, c);
        bool ok = fl_jget_u64(c, "interval_us", &v);
        j_opt_u64(w, "interval_us", ok, v);
        ok = fl_jget_u64(c, "max_samples", &v);
        j_opt_u64(w, "max_samples", ok, v);
        j_str(w, "preset", fl_jget_str(c, "preset"));
        j_str_list(w, "metrics", json_object_get(c, "metrics"));
        j_close(w, '}');
    }
    j_close(w, ']');
}

static void perf_list(const perfstat *v, size_t n, bool kernels, jw *w)
{
    const char *key = kernels ? "kernel_perf_metrics" : "scope_perf_metrics";
    if (!n) {
        j_str(w, key, NULL);
        return;
    }
    j_open(w, key, '[');
    for (size_t i = 0; i < n; i++) {
        const perfstat *p = &v[i];
        j_open(w, NULL, '{');
        j_str(w, kernels ? "kernel_name" : "name", p->name);
        if (!kernels)
            j_str(w, "user_scope", p->user_scope);
        j_u64(w, "ranges", p->ranges);
        if (!kernels)
            j_u64(w, "time_ns", p->time_ns);
        size_t nk = kernels ? FL_PERF_COUNT : FL_PERF_SCOPE_COUNT;
        for (size_t k = 0; k < nk; k++)
            j_dbl(w, fl_perf_keys[k], p->n[k] > 0, p->n[k] ? p->sum[k] / (double)p->n[k] : 0);
        j_u64(w, "invalid_hit_rates", p->invalid);
        j_close(w, '}');
    }
    j_close(w, ']');
}

void fl_json_perf(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    if (!r->n_pm) {
        j_str(w, "perf_metrics", NULL);
    } else {
        j_open(w, "perf_metrics", '[');
        for (size_t i = 0; i < r->n_pm; i++) {
            const pmstat *p = &r->pm[i];
            j_open(w, NULL, '{');
            j_u64(w, "metric_id", p->metric_id);
            j_str(w, "name", fl_model_metric_name(r->m, p->metric_id));
            j_u64(w, "samples", p->n);
            j_dbl(w, "mean", true, p->sum / (double)p->n);
            j_dbl(w, "min", true, p->min);
            j_dbl(w, "max", true, p->max);
            j_close(w, '}');
        }
        j_close(w, ']');
    }
    pm_sampling(r, w);
    perf_list(r->kp, r->n_kp, true, w);
    perf_list(r->sp, r->n_sp, false, w);
}
