/*
 * test_report_sass.c - the report's SASS metrics per kernel and per source
 * line (src/report/sass_metrics.c, sass_render.c) over a session directory
 * written here: a unit-stride kernel (4 sectors a global request, the
 * ideal), a strided one (32 against 4), a divergent one (16 threads a warp
 * instruction, divergent branch targets), a shared-memory one, a metric
 * the report does not read, rows with and without a source line, a metric
 * not collected for a kernel (n/a, never 0), sass_config.  The section's
 * text and the JSON "sass_metrics" object against goldens
 * (tests/golden/report/sass.*), plus exact figures.
 *
 * After a deliberate change of the output: GP_UPDATE_GOLDEN=1 ctest -R
 * test_report_sass, then read the diff.
 */
#include "check.h"
#include "reader/read.h"
#include "report/report.h"
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SID "5a55aaaa-0000-4000-8000-000000000001"
#define ENV "\"version\":1,\"session_id\":\"" SID "\""
#define COLS                                                                                       \
    "\"columns\":[\"dt_ns\",\"corr_id\",\"device_id\",\"function_id\",\"pc_offset\",\"metric_"     \
    "id\",\"metric_value\",\"stall_reason\",\"sample_kind\",\"scope_name_id\",\"source_file_"      \
    "id\",\"source_line\"]"

static void put(const char *dir, const char *file, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static const char head[] =
    "{" ENV ",\"type\":\"job_start\",\"pid\":1,\"app\":\"sass\",\"ts_ns\":1000000000,"
    "\"profiling_engine\":\"nvidia.sass_metrics\"}\n";

static void write_session(const char *dir)
{
    char dev[2048];
    snprintf(dev, sizeof dev,
             "%s{" ENV ",\"type\":\"sass_config\",\"ts_ns\":1000000500,\"device_id\":0,"
             "\"configured_metrics\":[\"smsp__sass_inst_executed\","
             "\"smsp__sass_thread_inst_executed\"],\"skipped_metrics\":["
             "\"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared\"]}\n",
             head);
    put(dir, "device.log", dev);
    /* metric_dict: 1 inst, 2 thread, 3 global ld, 4 global st, 5 sectors,
     * 6 ideal, 7 shared ld, 8 shared st, 9 wavefronts, 10 branch, 11
     * divergent targets, 12 one the report does not read.  function_dict:
     * 1 unit-stride copy, 2 strided copy, 3 divergent, 4 shared, 5 a
     * kernel with instructions only. */
    char scope[8192];
    snprintf(scope, sizeof scope,
             "%s{" ENV ",\"type\":\"dictionary_update\",\"function_dict\":{\"1\":\"_Z4copyPf@"
             "copy.cu\",\"2\":\"_Z7stridedPfi@copy.cu\",\"3\":\"_Z9divergentPi@div.cu\",\"4\":"
             "\"_Z6sharedPf@\",\"5\":\"_Z4tinyv@\"},\"metric_dict\":{\"1\":\"smsp__sass_inst_"
             "executed\",\"2\":\"smsp__sass_thread_inst_executed\",\"3\":\"smsp__sass_inst_"
             "executed_op_global_ld\",\"4\":\"smsp__sass_inst_executed_op_global_st\",\"5\":"
             "\"smsp__sass_sectors_mem_global\",\"6\":\"smsp__sass_sectors_mem_global_ideal\","
             "\"7\":\"smsp__sass_inst_executed_op_shared_ld\",\"8\":\"smsp__sass_inst_executed_"
             "op_shared_st\",\"9\":\"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared\","
             "\"10\":\"smsp__sass_inst_executed_op_branch\",\"11\":\"smsp__sass_branch_targets_"
             "threads_divergent\",\"12\":\"smsp__sass_frobnicate\"},\"source_file_dict\":{\"1\":"
             "\"copy.cu\",\"2\":\"div.cu\"}}\n"
             "{" ENV ",\"type\":\"profile_sample_batch\",\"batch_id\":1,\"base_time_ns\":"
             "1000002000," COLS ",\"rows\":["
             /* copy: 400 inst at copy.cu:5 (100 loads, 100 stores, 800 sectors = ideal) */
             "[0,0,0,1,16,1,400,0,1,0,1,5],[0,0,0,1,16,2,12800,0,1,0,1,5],"
             "[0,0,0,1,16,3,100,0,1,0,1,5],[0,0,0,1,16,4,100,0,1,0,1,5],"
             "[0,0,0,1,16,5,800,0,1,0,1,5],[0,0,0,1,16,6,800,0,1,0,1,5],"
             /* strided: 200 inst at copy.cu:12 (100 loads, 3200 sectors, 400 ideal) */
             "[0,0,0,2,32,1,200,0,1,0,1,12],[0,0,0,2,32,2,6400,0,1,0,1,12],"
             "[0,0,0,2,32,3,100,0,1,0,1,12],[0,0,0,2,32,5,3200,0,1,0,1,12],"
             "[0,0,0,2,32,6,400,0,1,0,1,12],"
             /* divergent: 300 inst, 16 threads each; 60 branches, 20 divergent */
             "[0,0,0,3,48,1,240,0,1,0,2,7],[0,0,0,3,48,2,3840,0,1,0,2,7],"
             "[0,0,0,3,64,1,60,0,1,0,2,8],[0,0,0,3,64,2,960,0,1,0,2,8],"
             "[0,0,0,3,64,10,60,0,1,0,2,8],[0,0,0,3,64,11,20,0,1,0,2,8],"
             /* shared: no source line; 100 inst, 40 shared loads, 10 stores */
             "[0,0,0,4,16,1,100,0,1,0,0,0],[0,0,0,4,16,2,3200,0,1,0,0,0],"
             "[0,0,0,4,16,7,40,0,1,0,0,0],[0,0,0,4,16,8,10,0,1,0,0,0],"
             "[0,0,0,4,16,9,200,0,1,0,0,0],[0,0,0,4,16,12,7,0,1,0,0,0],"
             /* tiny: instructions only */
             "[0,0,0,5,0,1,50,0,1,0,0,0]]}\n",
             head);
    put(dir, "scope.log", scope);
}

/* The text from "\nSASS metrics" up to the next section. */
static char *sass_text(const char *t)
{
    const char *a = t ? strstr(t, "\nSASS metrics") : NULL;
    if (!a)
        return strdup("");
    const char *b = strstr(a + 1, "\n\n");
    size_t n = b ? (size_t)(b - a) + 1 : strlen(a);
    char *s = malloc(n + 1);
    memcpy(s, a + 1, n);
    s[n] = 0;
    return s;
}

static void read_it(const char *dir, char **text, json_t **j)
{
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    gp_error err;
    fl_read_result res;
    CHECK_INT(fl_read_session(dir, NULL, &cb, &res, &err), GP_OK);
    fl_report_finish(rep, &res);
    fl_buf t = {0}, jb = {0};
    fl_report_text(rep, 10, &t);
    fl_report_json(rep, 10, &jb);
    *text = fl_buf_take(&t);
    char *js = fl_buf_take(&jb);
    json_error_t e;
    *j = js ? json_loads(js, JSON_REJECT_DUPLICATES, &e) : NULL;
    CHECK(*j != NULL);
    free(js);
    fl_report_destroy(rep);
}

static double num(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* The kernels' entry of function name. */
static json_t *kernel(json_t *s, const char *name)
{
    json_t *ks = json_object_get(s, "kernels");
    for (size_t i = 0; i < json_array_size(ks); i++) {
        json_t *k = json_array_get(ks, i);
        if (strcmp(json_string_value(json_object_get(k, "function")), name) == 0)
            return k;
    }
    return NULL;
}

static void test_session(const char *root)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/" SID, root);
    CHECK(mkdir(dir, 0700) == 0);
    write_session(dir);
    char *text;
    json_t *j;
    read_it(dir, &text, &j);
    char *st = sass_text(text);
    check_golden("report/sass.txt", st, "test_report_sass");
    json_t *s = j ? json_object_get(j, "sass_metrics") : NULL;
    char *sj = s ? json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    check_golden("report/sass.json", sj ? sj : "", "test_report_sass");
    /* The kernels by instructions, most first. */
    json_t *ks = json_object_get(s, "kernels");
    CHECK_INT(json_array_size(ks), 5);
    CHECK_STR(json_string_value(json_object_get(json_array_get(ks, 0), "function")),
              "_Z4copyPf@copy.cu");
    /* Coalescing: unit stride at the ideal, strided 8 times worse. */
    json_t *unit = kernel(s, "_Z4copyPf@copy.cu"), *str = kernel(s, "_Z7stridedPfi@copy.cu");
    CHECK_NEAR(num(unit, "sectors_per_request"), 4.0, 1e-9);
    CHECK_NEAR(num(unit, "coalescing_efficiency_pct"), 100.0, 1e-9);
    CHECK_NEAR(num(str, "sectors_per_request"), 32.0, 1e-9);
    CHECK_NEAR(num(str, "ideal_sectors_per_request"), 4.0, 1e-9);
    CHECK_NEAR(num(str, "coalescing_efficiency_pct"), 12.5, 1e-9);
    CHECK_NEAR(num(json_object_get(str, "mix_pct"), "global_ld"), 50.0, 1e-9);
    CHECK(json_is_null(json_object_get(json_object_get(str, "mix_pct"), "global_st")));
    /* Divergence: 16 of 32 threads. */
    json_t *dv = kernel(s, "_Z9divergentPi@div.cu");
    CHECK_NEAR(num(dv, "threads_per_instruction"), 16.0, 1e-9);
    CHECK_NEAR(num(dv, "warp_efficiency_pct"), 50.0, 1e-9);
    CHECK_NEAR(num(json_object_get(dv, "mix_pct"), "branch"), 20.0, 1e-9);
    CHECK_INT(json_integer_value(json_object_get(dv, "divergent_branch_targets")), 20);
    CHECK_NEAR(num(unit, "warp_efficiency_pct"), 100.0, 1e-9);
    /* Not collected: null, never 0. */
    json_t *tiny = kernel(s, "_Z4tinyv@");
    CHECK(json_is_null(json_object_get(tiny, "threads_per_instruction")));
    CHECK(json_is_null(json_object_get(tiny, "coalescing_efficiency_pct")));
    CHECK(json_is_null(json_object_get(tiny, "global_requests")));
    json_t *sh = kernel(s, "_Z6sharedPf@");
    CHECK_INT(json_integer_value(json_object_get(sh, "shared_wavefronts")), 200);
    CHECK_NEAR(num(json_object_get(sh, "mix_pct"), "shared_ld"), 40.0, 1e-9);
    CHECK_NEAR(num(json_object_get(sh, "mix_pct"), "other"), 50.0, 1e-9);
    /* Lines: four, the shared and tiny kernels' rows have none. */
    json_t *ls = json_object_get(s, "lines");
    CHECK_INT(json_array_size(ls), 4);
    json_t *l0 = json_array_get(ls, 0);
    CHECK_STR(json_string_value(json_object_get(l0, "source_file")), "copy.cu");
    CHECK_INT(json_integer_value(json_object_get(l0, "source_line")), 5);
    CHECK_INT(json_integer_value(json_object_get(s, "rows_without_source_line")), 2);
    CHECK_INT(json_integer_value(json_object_get(s, "rows")), 24);
    CHECK_CONTAINS(st, "smsp__sass_frobnicate");
    free(st);
    free(sj);
    free(text);
    json_decref(j);
}

int main(void)
{
    char root[] = "/tmp/gp_sass_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_session(root);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return check_done("test_report_sass");
}
