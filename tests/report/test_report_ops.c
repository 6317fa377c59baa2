/*
 * test_report_ops.c - framework ops (CUPTI external correlation) in the
 * report and the exports, and hotspots --by op|line: a session written
 * with the recorder's writers whose kernel rows carry ops (gpufl's kind 4,
 * named in op_dict; PyTorch profiler's kind 3, not named) and whose
 * details carry CPU stacks, and the exact figures each rendering gives.
 *
 * The session (us after RS_T0; it says it samples PCs):
 *   gemm    1000 + 100  aten::mm    stack ...|model.py:10 forward|at::native::mm|cudaLaunchKernel
 *   gemm    1200 +  50  aten::mm    the same stack
 *   relu    1300 +  20  aten::relu  stack main (app.c:5)|step
 * (app.c:40)|libtorch_cuda.so+0x1234|cuLaunchKernel softmax 1400 +  30  custom0#4242 (kind 3), no
 * stack relu    1500 +   5  no op, relu's stack
 */
#include "report_json.h"
#include "check.h"
#include "fl_log.h"
#include "report/export.h"
#include "report/report.h"
#include "report/report_int.h"
#include "report_session.h"
#include "gpufl.h"

#include <stdlib.h>
#include <string.h>

#define STACK_MM "main (app.c:5)|model.py:10 forward|at::native::mm|cudaLaunchKernel"
#define STACK_RELU "main (app.c:5)|step (app.c:40)|libtorch_cuda.so+0x1234|cuLaunchKernel"

static int write_ops_session(const char *base, char *out, size_t cap)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", base, RS_SID);
    mkdir(base, 0755);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return -1;
    snprintf(out, cap, "%s", dir);
    fl_buf b = {0};
    fl_device_live live[1] = {{0, "Fake GPU A", "GPU-aaaa", "NVIDIA", NULL, false, {0}}};
    fl_job_start js = {.log_path = "logs",
                       .ts_ns = RS_T0,
                       .hostname = "ops-host",
                       .devices = live,
                       .n_devices = 1,
                       .session_kind = "trace",
                       .profiling_engine = "nvidia.trace"};
    js.profiling_engine = "nvidia.pc_sampling"; /* the kernels' corr ids joined */
    fl_rec_job_start(&b, &rs_ident, &js);
    fl_dict_entry md[] = {{1, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                          {2, "smsp__pcsamp_warps_issue_stalled_barrier"}};
    fl_rec_dictionary(&b, RS_SID, FL_DICT_METRIC, md, 2);
    fl_dict_entry kd[] = {{1, "gemm"}, {2, "relu"}, {3, "softmax"}};
    fl_rec_dictionary(&b, RS_SID, FL_DICT_KERNEL, kd, 3);
    fl_dict_entry od[] = {{gpufl_op_id("aten::mm"), "aten::mm"},
                          {gpufl_op_id("aten::relu"), "aten::relu"}};
    fl_rec_dictionary(&b, RS_SID, FL_DICT_OP, od, 2);
    fl_kernel_row k[5] = {
        rs_kernel(1000, 100, 1, 7, 11, 64, 32, 1), rs_kernel(1200, 50, 1, 7, 12, 64, 32, 1),
        rs_kernel(1300, 20, 2, 7, 13, 64, 32, 1), rs_kernel(1400, 30, 3, 7, 14, 64, 32, 1),
        rs_kernel(1500, 5, 2, 7, 15, 64, 32, 1)};
    const char *stacks[5] = {STACK_MM, STACK_MM, STACK_RELU, NULL, STACK_RELU};
    k[0].external_kind = k[1].external_kind = k[2].external_kind = 4;
    k[0].external_id = k[1].external_id = gpufl_op_id("aten::mm");
    k[2].external_id = gpufl_op_id("aten::relu");
    k[3].external_kind = 3;
    k[3].external_id = 4242;
    for (int i = 0; i < 5; i++)
        fl_rec_kernel_detail(&b, &rs_ident, &k[i], NULL, NULL, stacks[i]);
    /* The kind-3 row alone: an all-integer batch (the report's fast
     * path); aten::mm's id is past INT64_MAX (the model's path). */
    fl_rec_kernel_batch(&b, RS_SID, 1, k, 3);
    fl_rec_kernel_batch(&b, RS_SID, 2, k + 3, 2);
    fl_rec_shutdown(&b, &rs_ident, RS_US(2000));
    int rc = rs_put(dir, "device.log", &b, NULL);
    fl_buf_free(&b);
    /* PC samples (scope channel): corr 11 30 long scoreboard, 12 10
     * barrier, 13 5 long scoreboard, 14 8 barrier, 99 (no launch) 2. */
    fl_sample_row sr[5];
    memset(sr, 0, sizeof sr);
    static const uint32_t corr[5] = {11, 12, 13, 14, 99}, metric[5] = {1, 2, 1, 2, 1};
    static const uint64_t n[5] = {30, 10, 5, 8, 2};
    for (int i = 0; i < 5; i++) {
        sr[i].t_ns = RS_US(1900);
        sr[i].corr_id = corr[i];
        sr[i].metric_id = metric[i];
        sr[i].samples = n[i];
        sr[i].pc_offset = 16u * (uint64_t)i;
    }
    fl_rec_job_start(&b, &rs_ident, &js);
    fl_rec_dictionary(&b, RS_SID, FL_DICT_METRIC, md, 2);
    fl_rec_profile_batch(&b, RS_SID, 1, sr, 5);
    rc |= rs_put(dir, "scope.log", &b, NULL);
    fl_buf_free(&b);
    return rc;
}

typedef struct rendered {
    char *text;
    json_t *j;
} rendered;

static int render_by(const char *dir, int by, int top, rendered *out)
{
    memset(out, 0, sizeof *out);
    fl_report *rep = fl_report_create();
    CHECK(rep != NULL);
    if (!rep)
        return -1;
    fl_report_set_by(rep, by);
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    fl_read_result res;
    gp_error err;
    int rc = fl_read_session(dir, &o, &cb, &res, &err);
    CHECK_INT(rc, GP_OK);
    fl_report_finish(rep, &res);
    fl_buf t = {0}, j = {0};
    fl_report_text(rep, top, &t);
    fl_report_json(rep, top, &j);
    out->text = fl_buf_take(&t);
    char *json = fl_buf_take(&j);
    json_error_t e;
    out->j = json ? json_loads(json, JSON_REJECT_DUPLICATES, &e) : NULL;
    if (!out->j)
        fprintf(stderr, "report JSON does not parse: %s\n", e.text);
    CHECK(out->j != NULL);
    free(json);
    fl_report_destroy(rep);
    return out->j ? 0 : -1;
}

static void rendered_free(rendered *r)
{
    free(r->text);
    json_decref(r->j);
}

/* The text from the line starting with head up to the next blank line. */
static char *part_of(const char *text, const char *head)
{
    const char *p = text ? strstr(text, head) : NULL;
    if (!p)
        return strdup("");
    const char *e = strstr(p, "\n\n");
    size_t n = e ? (size_t)(e - p) + 1 : strlen(p);
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void test_ops_section(const char *dir)
{
    rendered r;
    if (render_by(dir, FL_BY_KERNEL, 10, &r) != 0) {
        rendered_free(&r);
        return;
    }
    json_t *j = r.j;
    CHECK_INT(jint(j, "ops.launches"), 4);
    CHECK_INT(jint(j, "ops.gpu_ns"), 200000);
    CHECK_INT(jint(j, "ops.count"), 3);
    CHECK_STR(jstr(j, "ops.ops[0].name"), "aten::mm");
    CHECK_STR(jstr(j, "ops.ops[0].kind"), "custom1");
    CHECK_STR(jstr(j, "ops.ops[0].id"), "10969521849668870701");
    CHECK(json_is_true(jpath(j, "ops.ops[0].named")));
    CHECK_INT(jint(j, "ops.ops[0].launches"), 2);
    CHECK_INT(jint(j, "ops.ops[0].gpu_ns"), 150000);
    CHECK_STR(jstr(j, "ops.ops[0].kernels[0].name"), "gemm");
    CHECK_INT(jint(j, "ops.ops[0].kernels[0].launches"), 2);
    CHECK_INT(jint(j, "ops.ops[0].kernels[0].gpu_ns"), 150000);
    CHECK_STR(jstr(j, "ops.ops[1].name"), "custom0#4242");
    CHECK_STR(jstr(j, "ops.ops[1].kind"), "custom0");
    CHECK_STR(jstr(j, "ops.ops[1].id"), "4242");
    CHECK(json_is_false(jpath(j, "ops.ops[1].named")));
    CHECK_INT(jint(j, "ops.ops[1].gpu_ns"), 30000);
    CHECK_STR(jstr(j, "ops.ops[1].kernels[0].name"), "softmax");
    CHECK_STR(jstr(j, "ops.ops[2].name"), "aten::relu");
    CHECK_INT(jint(j, "ops.ops[2].launches"), 1);
    CHECK_INT(jint(j, "ops.ops[2].gpu_ns"), 20000);
    CHECK(json_array_size(jpath(j, "ops.ops")) == 3);
    CHECK_STR(jstr(j, "hotspots.by"), "kernel");
    CHECK(json_object_get(jpath(j, "stalls"), "by") == NULL);
    CHECK(strstr(r.text, "  by op (") == NULL);
    CHECK(json_object_get(jpath(j, "hotspots"), "groups") == NULL);
    char *ops = part_of(r.text, "ops  ");
    CHECK_STR(ops, "ops  3 framework ops over 4 of 5 kernel launches (97.6% of kernel time)\n"
                   "    # launches    total ms   time kernels  op\n"
                   "    1        2       0.150  73.2%       1  aten::mm\n"
                   "             2       0.150  gemm\n"
                   "    2        1       0.030  14.6%       1  custom0#4242\n"
                   "             1       0.030  softmax\n"
                   "    3        1       0.020   9.8%       1  aten::relu\n"
                   "             1       0.020  relu\n");
    free(ops);
    rendered_free(&r);
}

static void test_by_op(const char *dir)
{
    rendered r;
    if (render_by(dir, FL_BY_OP, 2, &r) != 0) {
        rendered_free(&r);
        return;
    }
    char *hot = part_of(r.text, "hotspots  ");
    CHECK_STR(hot, "hotspots  top 2 of 3 ops by GPU time  (by op)\n"
                   "    # launches    total ms   time kernels  op\n"
                   "    1        2       0.150  73.2%       1  aten::mm\n"
                   "             2       0.150  gemm\n"
                   "    2        1       0.030  14.6%       1  custom0#4242\n"
                   "             1       0.030  softmax\n"
                   "  (1 more)\n"
                   "  1 of 5 kernel launches without an op\n");
    free(hot);
    json_t *j = r.j;
    CHECK_STR(jstr(j, "hotspots.by"), "op");
    CHECK_INT(jint(j, "hotspots.grouped_launches"), 4);
    CHECK_INT(jint(j, "hotspots.grouped_gpu_ns"), 200000);
    CHECK_INT(jint(j, "hotspots.group_count"), 3);
    CHECK(json_array_size(jpath(j, "hotspots.groups")) == 2);
    CHECK_STR(jstr(j, "hotspots.groups[0].name"), "aten::mm");
    CHECK_INT(jint(j, "hotspots.groups[0].gpu_ns"), 150000);
    /* the kernels as ever beside them */
    CHECK_STR(jstr(j, "hotspots.kernels[0].name"), "gemm");
    char *st = part_of(r.text, "  by op (");
    char *cut = strstr(st, "  hot PCs");
    if (cut)
        *cut = '\0';
    CHECK_STR(st, "  by op (corr_id joined to the launch's framework op)\n"
                  "          40   72.7%  aten::mm\n"
                  "                      Long Scoreboard 75.0%, Barrier 25.0%\n"
                  "           8   14.5%  custom0#4242\n"
                  "                      Barrier 100.0%\n"
                  "  (2 more)\n");
    free(st);
    CHECK_STR(jstr(j, "stalls.by"), "op");
    CHECK_STR(jstr(j, "stalls.groups[0].name"), "aten::mm");
    CHECK_STR(jstr(j, "stalls.groups[0].kind"), "custom1");
    CHECK_INT(jint(j, "stalls.groups[0].samples"), 40);
    CHECK_STR(jstr(j, "stalls.groups[0].top_reasons[0].name"), "long_scoreboard");
    CHECK(json_array_size(jpath(j, "stalls.groups")) == 2);
    rendered_free(&r);
}

static void test_by_line(const char *dir)
{
    rendered r;
    if (render_by(dir, FL_BY_LINE, 10, &r) != 0) {
        rendered_free(&r);
        return;
    }
    char *hot = part_of(r.text, "hotspots  ");
    CHECK_STR(hot, "hotspots  top 3 of 3 lines by GPU time  (by line)\n"
                   "    # launches    total ms   time kernels  line\n"
                   "    1        2       0.150  73.2%       1  model.py:10 forward\n"
                   "             2       0.150  gemm\n"
                   "    2        1       0.030  14.6%       1  (no stack)\n"
                   "             1       0.030  softmax\n"
                   "    3        2       0.025  12.2%       1  step (app.c:40)\n"
                   "             2       0.025  relu\n");
    free(hot);
    json_t *j = r.j;
    CHECK_STR(jstr(j, "hotspots.by"), "line");
    CHECK_INT(jint(j, "hotspots.grouped_launches"), 5);
    CHECK_INT(jint(j, "hotspots.group_count"), 3);
    CHECK_STR(jstr(j, "hotspots.groups[2].name"), "step (app.c:40)");
    CHECK_INT(jint(j, "hotspots.groups[2].launches"), 2);
    CHECK_INT(jint(j, "hotspots.groups[2].gpu_ns"), 25000);
    CHECK_STR(jstr(j, "hotspots.groups[2].kernels[0].name"), "relu");
    CHECK(json_object_get(jpath(j, "hotspots.groups[0]"), "kind") == NULL);
    char *st = part_of(r.text, "  by line (");
    char *cut = strstr(st, "  hot PCs");
    if (cut)
        *cut = '\0';
    /* softmax's launch had no stack, corr 99 no launch: both "(no stack)" */
    CHECK_STR(st, "  by line (corr_id joined to the launch's CPU stack)\n"
                  "          40   72.7%  model.py:10 forward\n"
                  "                      Long Scoreboard 75.0%, Barrier 25.0%\n"
                  "          10   18.2%  (no stack)\n"
                  "                      Barrier 80.0%, Long Scoreboard 20.0%\n"
                  "           5    9.1%  step (app.c:40)\n"
                  "                      Long Scoreboard 100.0%\n");
    free(st);
    CHECK_STR(jstr(j, "stalls.by"), "line");
    CHECK_STR(jstr(j, "stalls.groups[1].name"), "(no stack)");
    CHECK_INT(jint(j, "stalls.groups[1].samples"), 10);
    rendered_free(&r);
}

static char *export_of(const char *dir, fl_export_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fl_export *e = fl_export_create(fmt, f);
    CHECK(e != NULL);
    if (!e) {
        fclose(f);
        free(buf);
        return NULL;
    }
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, &o, &cb, &res, &err), GP_OK);
    CHECK_INT(fl_export_finish(e, &res), 0);
    fl_export_destroy(e);
    fclose(f);
    return buf;
}

static void test_exports(const char *dir)
{
    char *csv = export_of(dir, FL_EXPORT_CSV_KERNELS);
    CHECK_CONTAINS(csv, ",external_kind,external_id,op\n");
    CHECK_CONTAINS(csv, ",4,10969521849668870701,aten::mm\n");
    CHECK_CONTAINS(csv, ",4,5638660427450741845,aten::relu\n");
    CHECK_CONTAINS(csv, ",3,4242,\n"); /* not ours: no name */
    free(csv);
    char *tr = export_of(dir, FL_EXPORT_CHROME_TRACE);
    CHECK_CONTAINS(tr, "\"external_kind\":4,\"external_id\":10969521849668870701,\"op\":"
                       "\"aten::mm\"}");
    CHECK_CONTAINS(tr, "\"external_kind\":3,\"external_id\":4242}");
    free(tr);
}

/* The HTML page: the report's JSON (its ops) and the renderer of the
 * ops section (report.js's "gp-ops"). */
static void test_html(const char *dir)
{
    gpufl_report_options o;
    gpufl_report_options_init(&o);
    o.format = GPUFL_REPORT_HTML;
    char *out = NULL;
    size_t len = 0;
    gpufl_error err;
    CHECK_INT(gpufl_report_logs(dir, &o, &out, &len, &err), GPUFL_OK);
    CHECK_CONTAINS(out, "'gp-ops', 'Framework ops (");
    CHECK_CONTAINS(out, "\"ops\":{\"launches\":4,\"gpu_ns\":200000,\"count\":3,\"ops\":[{"
                        "\"name\":\"aten::mm\"");
    free(out);
}

/* The C API: the id is FNV-1a 64 of the name (GPUFlight's), 0 for none;
 * without a session a push says so and pairs with its pop harmlessly. */
static void test_api(void)
{
    CHECK_U64(gpufl_op_id("aten::mm"), 10969521849668870701ull);
    CHECK_U64(gpufl_op_id(""), 0);
    CHECK_U64(gpufl_op_id(NULL), 0);
    uint64_t id = 1;
    CHECK_INT(gpufl_push_external_op("aten::mm", &id), GPUFL_ERR_STATE);
    CHECK_U64(id, 10969521849668870701ull);
    gpufl_pop_external_op();
    CHECK_INT(gpufl_push_external_op("", &id), GPUFL_ERR_INVALID_ARG);
    CHECK_U64(id, 0);
    gpufl_pop_external_op();
    gpufl_pop_external_op(); /* one too many: nothing */
    CHECK_INT(fl_report_by_of("op"), FL_BY_OP);
    CHECK_INT(fl_report_by_of("line"), FL_BY_LINE);
    CHECK_INT(fl_report_by_of("kernel"), FL_BY_KERNEL);
    CHECK_INT(fl_report_by_of("Op"), -1);
    CHECK_INT(fl_report_by_of(NULL), -1);
}

/* --by line skips the Python frames of libraries - PyTorch's own Python,
 * gpufl.torch's dispatch mode, installed packages, the standard library -
 * for the program's own; with only those, the innermost of them. */
static void test_line_labels(void)
{
    char buf[256];
    fl_by_line_label("<module> (/w/train.py:7)|main (/w/train.py:30)|"
                     "__torch_dispatch__ (/src/python/gpufl/torch/__init__.py:72)|"
                     "__call__ (torch/_ops.py:594)|"
                     "at::native::mm|cudaLaunchKernel",
                     buf, sizeof buf);
    CHECK_STR(buf, "main (/w/train.py:30)");
    fl_by_line_label("run (/usr/lib/python3.11/threading.py:9)|"
                     "relu (/v/lib/python3.11/site-packages/torch/nn/functional.py:1500)|"
                     "cuLaunchKernel",
                     buf, sizeof buf);
    CHECK_STR(buf, "relu (/v/lib/python3.11/site-packages/torch/nn/functional.py:1500)");
    fl_by_line_label("main (app.c:5)|model.py:10 forward|cudaLaunchKernel", buf, sizeof buf);
    CHECK_STR(buf, "model.py:10 forward");
}

int main(void)
{
    test_line_labels();
    (void)rs_write;
    (void)rs_write_nodev;
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "report-ops") == 0);
    CHECK(write_ops_session(tmp, dir, sizeof dir) == 0);
    test_api();
    test_ops_section(dir);
    test_by_op(dir);
    test_by_line(dir);
    test_exports(dir);
    test_html(dir);
    fl_rmtree(tmp);
    return check_done("test_report_ops");
}
