/*
 * check_sass.c - checks a SassMetrics session of sass_workload.cu
 * (tests/gpu/run.sh, step 7) against what the program knows it did.
 *
 *   check_sass [--deep] --expect FILE --log-dir DIR
 *
 * With --deep (the same program under profiling_engine Deep, step 10):
 * selected_engine "nvidia.deep", pc_sampling collected, rows of
 * sample_kind 0 (PC samples) and 1 (SASS metrics) in the one session, and
 * one set of dictionaries (no function or metric text under two ids);
 * then the SASS checks below.
 * DIR holds the program's one session.  Checks:
 *   - capture_capabilities' selected_engine is "nvidia.sass_metrics" and
 *     sass_metrics collected (or partial), a sass_config record;
 *   - every kernel has sample_kind 1 rows with instructions executed;
 *   - coalescing: the strided kernel's global sectors per request (or, if
 *     the device lacks the request metrics, per ideal sector) are at least
 *     4 times the unit-stride kernel's, and the unit kernel is within 1.5x
 *     of its ideal where the ideal was collected;
 *   - divergence: the divergent kernel runs under 24 thread-instructions
 *     per warp-instruction, the unit kernel at least 28 (of 32).
 * Each metric a check needs that the device did not configure is a FAIL
 * naming it (sass_config's skipped_metrics says which).  PASS / FAIL per
 * check, then a final line; exit 0 only if all passed.
 */
#include "fl_log.h"
#include "gpu_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

enum { INST, THREAD, GLD, GST, SECT, IDEAL, NM };
static const char *const metric[NM] = {"smsp__sass_inst_executed",
                                       "smsp__sass_thread_inst_executed",
                                       "smsp__sass_inst_executed_op_global_ld",
                                       "smsp__sass_inst_executed_op_global_st",
                                       "smsp__sass_sectors_mem_global",
                                       "smsp__sass_sectors_mem_global_ideal"};

typedef struct sums {
    double v[NM];
    bool have[NM];
} sums;

static void sum(const fl_log *scope, const char *fn, sums *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < scope->n; i++) {
        json_t *b = scope->lines[i];
        if (strcmp(log_type(b), "profile_sample_batch") != 0)
            continue;
        int cf = fl_col(b, "function_id"), cm = fl_col(b, "metric_id"),
            cv = fl_col(b, "metric_value"), ck = fl_col(b, "sample_kind");
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r);
            if (json_integer_value(json_array_get(row, (size_t)ck)) != 1)
                continue;
            const char *f = dict_name(scope, "function_dict",
                                      json_integer_value(json_array_get(row, (size_t)cf)));
            if (strncmp(f, fn, strlen(fn)) != 0 || f[strlen(fn)] != '@')
                continue;
            const char *m = dict_name(scope, "metric_dict",
                                      json_integer_value(json_array_get(row, (size_t)cm)));
            for (int k = 0; k < NM; k++)
                if (strcmp(m, metric[k]) == 0) {
                    s->v[k] += (double)json_integer_value(json_array_get(row, (size_t)cv));
                    s->have[k] = true;
                }
        }
    }
}

/* Global sectors per request (per ideal sector without the request
 * metrics); < 0 when neither can be worked out. */
static double sectors_ratio(const sums *s, const char **how)
{
    double req = s->v[GLD] + s->v[GST];
    if ((s->have[GLD] || s->have[GST]) && s->have[SECT] && req > 0) {
        *how = "sectors per request";
        return s->v[SECT] / req;
    }
    if (s->have[SECT] && s->have[IDEAL] && s->v[IDEAL] > 0) {
        *how = "sectors per ideal sector";
        return s->v[SECT] / s->v[IDEAL];
    }
    *how = "(needs smsp__sass_sectors_mem_global and the global ld/st or ideal metrics)";
    return -1;
}

/* Rows of sample_kind kind. */
static size_t count_kind(const fl_log *scope, json_int_t kind)
{
    size_t n = 0;
    for (size_t i = 0; i < scope->n; i++) {
        json_t *b = scope->lines[i];
        if (strcmp(log_type(b), "profile_sample_batch") != 0)
            continue;
        int ck = fl_col(b, "sample_kind");
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++)
            n += json_integer_value(json_array_get(json_array_get(rows, r), (size_t)ck)) == kind;
    }
    return n;
}

/* Texts of dictionary dict under more than one id. */
static size_t twice_named(const fl_log *scope, const char *dict)
{
    json_t *ids = json_object();
    size_t bad = 0;
    for (size_t i = 0; i < scope->n; i++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(scope->lines[i], dict), k, v)
        {
            json_t *had = json_object_get(ids, json_string_value(v));
            bad += had && strcmp(json_string_value(had), k) != 0;
            json_object_set_new(ids, json_string_value(v), json_string(k));
        }
    }
    json_decref(ids);
    return bad;
}

static void check_deep(const fl_log *scope, json_t *caps)
{
    static const char *const features[] = {"sass_metrics", NULL};
    gc_features(caps, features);
    size_t pc = count_kind(scope, 0), sass = count_kind(scope, 1);
    report(pc > 0 && sass > 0, "rows: %zu of sample_kind 0 (PC), %zu of sample_kind 1 (SASS)", pc,
           sass);
    size_t bad_fn = twice_named(scope, "function_dict"), bad_m = twice_named(scope, "metric_dict");
    report(bad_fn == 0 && bad_m == 0,
           "one set of dictionaries: %zu function and %zu metric texts under two ids", bad_fn,
           bad_m);
}

int main(int argc, char **argv)
{
    bool deep = argc > 1 && !strcmp(argv[1], "--deep");
    argv += deep;
    argc -= deep;
    if (argc != 5 || strcmp(argv[1], "--expect") || strcmp(argv[3], "--log-dir")) {
        fprintf(stderr, "usage: check_sass [--deep] --expect FILE --log-dir DIR\n");
        return 2;
    }
    json_error_t je;
    json_t *ex = json_load_file(argv[2], 0, &je), *caps;
    fl_log dev, scope;
    if (!ex) {
        fprintf(stderr, "check_sass: cannot read %s\n", argv[2]);
        return 2;
    }
    if (gc_session("check_sass", argv[4], &dev, &scope, &caps) != 0)
        return 2;
    const char *sel = json_string_value(json_object_get(caps, "selected_engine"));
    const char *want = deep ? "nvidia.deep" : "nvidia.sass_metrics";
    report(sel && strcmp(sel, want) == 0, "selected_engine %s (want %s)", sel ? sel : "(none)",
           want);
    if (deep)
        check_deep(&scope, caps);
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        const char *f = json_string_value(json_object_get(c, "feature"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (f && !strcmp(f, "sass_metrics"))
            report(st && (!strcmp(st, "collected") || !strcmp(st, "partial")), "%s: %s (%s)", f,
                   st ? st : "?", json_string_value(json_object_get(c, "message")));
    }
    json_t *cfg = fl_first(&dev, "sass_config");
    report(cfg != NULL, "sass_config: configured %s, skipped %s",
           cfg ? json_dumps(json_object_get(cfg, "configured_metrics"), JSON_COMPACT) : "-",
           cfg ? json_dumps(json_object_get(cfg, "skipped_metrics"), JSON_COMPACT) : "-");
    sums u, st, dv;
    sum(&scope, json_string_value(json_object_get(ex, "unit")), &u);
    sum(&scope, json_string_value(json_object_get(ex, "strided")), &st);
    sum(&scope, json_string_value(json_object_get(ex, "divergent")), &dv);
    report(u.v[INST] > 0 && st.v[INST] > 0 && dv.v[INST] > 0,
           "instructions executed: unit %.0f, strided %.0f, divergent %.0f", u.v[INST], st.v[INST],
           dv.v[INST]);
    const char *how_u, *how_s;
    double ru = sectors_ratio(&u, &how_u), rs = sectors_ratio(&st, &how_s);
    report(ru > 0 && rs >= 4 * ru, "coalescing: strided %.2f %s, unit %.2f %s (want strided >= 4x)",
           rs, how_s, ru, how_u);
    if (u.have[SECT] && u.have[IDEAL] && u.v[IDEAL] > 0)
        report(u.v[SECT] <= 1.5 * u.v[IDEAL], "unit: %.0f sectors against %.0f ideal", u.v[SECT],
               u.v[IDEAL]);
    double tu = u.have[THREAD] && u.v[INST] > 0 ? u.v[THREAD] / u.v[INST] : -1;
    double td = dv.have[THREAD] && dv.v[INST] > 0 ? dv.v[THREAD] / dv.v[INST] : -1;
    report(td > 0 && td < 24, "divergence: divergent %.2f threads per warp instruction (want < 24)",
           td);
    report(tu >= 28, "divergence: unit %.2f threads per warp instruction (want >= 28)", tu);
    printf("%s\n", n_fail ? "FAIL" : "PASS");
    fl_log_free(&dev);
    fl_log_free(&scope);
    json_decref(ex);
    return n_fail ? 1 : 0;
}
