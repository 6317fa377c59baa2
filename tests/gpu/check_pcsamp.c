/*
 * check_pcsamp.c - checks a PcSampling session of pcsamp_workload.cu
 * (tests/gpu/run.sh, step 5) against what the program knows it did.
 *
 *   check_pcsamp --expect FILE --log-dir DIR
 *
 * DIR holds the program's one session.  Checks:
 *   - capture_capabilities' selected_engine is "nvidia.pc_sampling" and
 *     pc_sampling collected (or partial: some samples dropped);
 *   - both kernels have samples (function_dict "mangled@.../pcsamp_workload.cu");
 *   - chase's stall reason with the most samples is the long scoreboard
 *     (metric_dict name containing "long_scoreboard");
 *   - barrier's is a barrier stall (a name containing "barrier");
 *   - chase's long-scoreboard samples fall most on the load's line, and
 *     barrier's barrier samples on the __syncthreads line or the line
 *     after it, of pcsamp_workload.cu (source_file_dict, source_line:
 *     -lineinfo): a warp waiting at a barrier is sampled at the instruction
 *     after its BAR (on an H200, sm_90, they fell on the next line).
 * PASS / FAIL per check, then a final line; exit 0 only if all passed.
 */
#include "fl_log.h"
#include "gpu_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_ID 4096

static bool has(const char *s, const char *sub)
{
    return s && strstr(s, sub) != NULL;
}

static bool prefix(const char *s, const char *p)
{
    return s && strncmp(s, p, strlen(p)) == 0;
}

/* Samples of function fn (a mangled name): per metric id, and per source
 * line of pcsamp_workload.cu for metrics whose name contains want. */
typedef struct tally {
    uint64_t per_metric[MAX_ID];
    uint64_t per_line[MAX_ID];
    uint64_t total;
} tally;

static void count(const fl_log *scope, const char *fn, const char *want, tally *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < scope->n; i++) {
        json_t *b = scope->lines[i];
        if (strcmp(log_type(b), "profile_sample_batch") != 0)
            continue;
        int cf = fl_col(b, "function_id"), cm = fl_col(b, "metric_id"),
            cv = fl_col(b, "metric_value"), cs = fl_col(b, "source_file_id"),
            cl = fl_col(b, "source_line");
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r);
            json_int_t f = json_integer_value(json_array_get(row, (size_t)cf));
            if (!prefix(dict_name(scope, "function_dict", f), fn))
                continue;
            json_int_t m = json_integer_value(json_array_get(row, (size_t)cm));
            json_int_t v = json_integer_value(json_array_get(row, (size_t)cv));
            json_int_t s = json_integer_value(json_array_get(row, (size_t)cs));
            json_int_t l = json_integer_value(json_array_get(row, (size_t)cl));
            t->total += (uint64_t)v;
            if (m >= 0 && m < MAX_ID)
                t->per_metric[m] += (uint64_t)v;
            if (has(dict_name(scope, "metric_dict", m), want) &&
                has(dict_name(scope, "source_file_dict", s), "pcsamp_workload.cu") && l >= 0 &&
                l < MAX_ID)
                t->per_line[l] += (uint64_t)v;
        }
    }
}

static size_t argmax(const uint64_t *v)
{
    size_t best = 0;
    for (size_t i = 1; i < MAX_ID; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* slack: how many lines after `line` also pass (the barrier's wait is
 * sampled past the BAR instruction). */
static void check_kernel(const fl_log *scope, const char *what, const char *fn, const char *want,
                         json_int_t line, json_int_t slack)
{
    static tally t;
    count(scope, fn, want, &t);
    report(t.total > 0, "%s: %llu samples", what, (unsigned long long)t.total);
    size_t top = argmax(t.per_metric);
    const char *name = dict_name(scope, "metric_dict", (json_int_t)top);
    report(has(name, want), "%s: top stall reason %s (%llu of %llu samples), want *%s*", what, name,
           (unsigned long long)t.per_metric[top], (unsigned long long)t.total, want);
    size_t l = argmax(t.per_line);
    report((json_int_t)l >= line && (json_int_t)l <= line + slack,
           "%s: most %s samples on pcsamp_workload.cu:%zu, want line %lld%s", what, want, l,
           (long long)line, slack ? " or the next" : "");
}

int main(int argc, char **argv)
{
    if (argc != 5 || strcmp(argv[1], "--expect") || strcmp(argv[3], "--log-dir")) {
        fprintf(stderr, "usage: check_pcsamp --expect FILE --log-dir DIR\n");
        return 2;
    }
    json_error_t je;
    json_t *ex = json_load_file(argv[2], 0, &je), *caps;
    fl_log dev, scope;
    if (!ex) {
        fprintf(stderr, "check_pcsamp: cannot read %s\n", argv[2]);
        return 2;
    }
    if (gc_session("check_pcsamp", argv[4], &dev, &scope, &caps) != 0)
        return 2;
    const char *sel = json_string_value(json_object_get(caps, "selected_engine"));
    report(sel && strcmp(sel, "nvidia.pc_sampling") == 0, "selected_engine %s",
           sel ? sel : "(none)");
    static const char *const features[] = {"pc_sampling", "source_collection", NULL};
    gc_features(caps, features);
    check_kernel(&scope, "chase", json_string_value(json_object_get(ex, "chase")),
                 "long_scoreboard", json_integer_value(json_object_get(ex, "chase_line")), 0);
    check_kernel(&scope, "barrier", json_string_value(json_object_get(ex, "barrier")), "barrier",
                 json_integer_value(json_object_get(ex, "barrier_line")), 1);
    printf("%s\n", n_fail ? "FAIL" : "PASS");
    fl_log_free(&dev);
    fl_log_free(&scope);
    json_decref(ex);
    return n_fail ? 1 : 0;
}
