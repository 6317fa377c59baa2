/*
 * test_report_stalls.c - the report's PC samples (src/report/stalls.c,
 * text_stalls.c, json_stalls.c) over a session directory written here:
 * three kernels, two scopes, stall reasons in both metric_dict spellings
 * (smsp__pcsamp_warps_issue_stalled_X and X), a "_not_issued" variant, an
 * activity-API enum row, an unknown name, source lines, and samples whose
 * corr_id matches no kernel.  The stalls section's text and the JSON
 * "stalls" object against goldens (tests/golden/report/stalls.*), plus
 * exact figures; and a session that does not say it samples PCs (no join).
 *
 * After a deliberate change of the output: GP_UPDATE_GOLDEN=1 ctest -R
 * test_report_stalls, then read the diff.
 */
#include "check.h"
#include "reader/read.h"
#include "report/report.h"
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SID "5ta115aa-0000-4000-8000-000000000001"
#define ENV "\"version\":1,\"session_id\":\"" SID "\""
#define COLS                                                                                       \
    "\"columns\":[\"dt_ns\",\"corr_id\",\"device_id\",\"function_id\",\"pc_offset\",\"metric_"     \
    "id\","                                                                                        \
    "\"metric_value\",\"stall_reason\",\"sample_kind\",\"scope_name_id\",\"source_file_id\","      \
    "\"source_line\"]"

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

static void write_session(const char *dir, bool pc_sampling)
{
    char head[1024];
    snprintf(head, sizeof head,
             "{" ENV
             ",\"type\":\"job_start\",\"pid\":1,\"app\":\"stalls\",\"ts_ns\":1000000000%s}\n"
             "{" ENV ",\"type\":\"dictionary_update\",\"kernel_dict\":{\"1\":\"gemm\",\"2\":"
             "\"relu\",\"3\":\"copy\"},\"scope_name_dict\":{\"1\":\"train\",\"2\":\"eval\"},"
             "\"function_dict\":{\"1\":\"_Z4gemm\",\"2\":\"_Z4relu\"},\"metric_dict\":{\"1\":"
             "\"smsp__pcsamp_warps_issue_stalled_long_scoreboard\",\"2\":\"long_scoreboard\","
             "\"3\":\"smsp__pcsamp_warps_issue_stalled_barrier\",\"4\":"
             "\"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued\",\"5\":"
             "\"smsp__pcsamp_warps_issue_stalled_math_pipe_throttle\",\"6\":"
             "\"smsp__pcsamp_warps_issue_stalled_frobnicate\",\"7\":\"no_instruction\"},"
             "\"source_file_dict\":{\"1\":\"gemm.cu\",\"2\":\"relu.cu\"}}\n",
             pc_sampling ? ",\"profiling_engine\":\"nvidia.pc_sampling\"" : "");
    char dev[4096];
    snprintf(dev, sizeof dev,
             "%s{" ENV ",\"type\":\"kernel_event_batch\",\"batch_id\":1,\"base_time_ns\":"
             "1000001000,\"columns\":[\"dt_ns\",\"kernel_id\",\"stream_id\",\"duration_ns\","
             "\"corr_id\",\"dyn_shared\",\"num_regs\",\"has_details\",\"external_kind\","
             "\"external_id\"],\"rows\":[[0,1,7,5000,10,0,32,1,0,0],[9000,2,7,1000,11,0,16,0,0,0],"
             "[20000,1,7,5000,12,0,32,1,0,0],[30000,3,7,100,13,0,8,0,0,0]]}\n"
             "{" ENV ",\"type\":\"kernel_detail\",\"corr_id\":10,\"grid\":\"(1,1,1)\",\"block\":"
             "\"(32,1,1)\",\"user_scope\":\"train\",\"stack_trace\":\"main (app.c:3)|step "
             "(app.c:9)\"}\n"
             "{" ENV ",\"type\":\"kernel_detail\",\"corr_id\":12,\"grid\":\"(1,1,1)\",\"block\":"
             "\"(32,1,1)\",\"user_scope\":\"train\",\"stack_trace\":\"main (app.c:3)|step "
             "(app.c:9)\"}\n",
             head);
    put(dir, "device.log", dev);
    /* gemm (corr 10, 12): long scoreboard in both spellings at 0x40
     * (gemm.cu:17), barrier at 0x80 (:18), not-issued at 0x40, math pipe at
     * 0x100 (:18); relu (11): an activity-API enum (4 memory dependency) and
     * an unknown name; corr 99: no kernel; copy (13): no_instruction. */
    char scope[8192];
    snprintf(scope, sizeof scope,
             "%s{" ENV ",\"type\":\"profile_sample_batch\",\"batch_id\":1,\"base_time_ns\":"
             "1000002000," COLS ",\"rows\":["
             "[0,10,0,1,64,1,30,4,0,1,1,17],[0,12,0,1,64,2,20,4,0,1,1,17],"
             "[0,10,0,1,128,3,15,5,0,1,1,18],[0,10,0,1,64,4,25,9,0,1,1,17],"
             "[0,12,0,1,256,5,5,7,0,2,1,18],[0,11,0,2,16,0,8,4,0,2,2,3],"
             "[0,11,0,2,32,6,2,12,0,2,0,0],[0,99,0,1,64,1,6,4,0,0,1,17],"
             "[0,13,0,0,0,7,4,3,0,0,0,0],[0,10,0,1,64,1,1000,0,1,1,1,17]]}\n",
             head);
    put(dir, "scope.log", scope);
}

/* The text from "\nstalls" up to the next section ("\nSASS" here). */
static char *stalls_text(const char *t)
{
    const char *a = t ? strstr(t, "\nstalls ") : NULL;
    const char *b = a ? strstr(a + 1, "\nSASS metrics") : NULL;
    if (!a)
        return strdup("");
    size_t n = b ? (size_t)(b - a) : strlen(a);
    char *s = malloc(n + 2);
    memcpy(s, a + 1, n);
    s[n - 1] = '\n';
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
    int rc = fl_read_session(dir, NULL, &cb, &res, &err);
    CHECK_INT(rc, GP_OK);
    fl_report_finish(rep, &res);
    fl_buf t = {0}, jb = {0};
    fl_report_text(rep, 2, &t);
    fl_report_json(rep, 2, &jb);
    *text = fl_buf_take(&t);
    char *js = fl_buf_take(&jb);
    json_error_t e;
    *j = js ? json_loads(js, JSON_REJECT_DUPLICATES, &e) : NULL;
    CHECK(*j != NULL);
    free(js);
    fl_report_destroy(rep);
}

static void test_session(const char *root)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/" SID, root);
    CHECK(mkdir(dir, 0700) == 0);
    write_session(dir, true);
    char *text;
    json_t *j;
    read_it(dir, &text, &j);
    char *st = stalls_text(text);
    check_golden("report/stalls.txt", st, "test_report_stalls");
    json_t *s = j ? json_object_get(j, "stalls") : NULL;
    char *sj = s ? json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    check_golden("report/stalls.json", sj ? sj : "", "test_report_stalls");
    /* exact figures: 30+20+15+5+8+2+6+4 = 90 samples (the not-issued 25
     * and the SASS row apart); both spellings one reason */
    CHECK_INT(json_integer_value(json_object_get(s, "pc_samples")), 90);
    CHECK_INT(json_integer_value(json_object_get(s, "not_issued_samples")), 25);
    CHECK_INT(json_integer_value(json_object_get(s, "samples_no_kernel")), 6);
    json_t *d0 = json_array_get(json_object_get(s, "distribution"), 0);
    CHECK_STR(json_string_value(json_object_get(d0, "name")), "long_scoreboard");
    CHECK_STR(json_string_value(json_object_get(d0, "display_name")), "Long Scoreboard");
    CHECK_INT(json_integer_value(json_object_get(d0, "samples")), 56);
    json_t *k0 = json_array_get(json_object_get(s, "kernels"), 0);
    CHECK_STR(json_string_value(json_object_get(k0, "name")), "gemm");
    CHECK_INT(json_integer_value(json_object_get(k0, "samples")), 70);
    CHECK_INT(json_integer_value(json_object_get(k0, "not_issued_samples")), 25);
    CHECK_STR(json_string_value(json_object_get(k0, "stack_trace")),
              "main (app.c:3)|step (app.c:9)");
    json_t *pc0 = json_array_get(json_object_get(k0, "hot_pcs"), 0);
    CHECK_STR(json_string_value(json_object_get(pc0, "pc_offset_hex")), "0x40");
    CHECK_INT(json_integer_value(json_object_get(pc0, "samples")), 50);
    CHECK_INT(json_integer_value(json_object_get(pc0, "source_line")), 17);
    json_t *ln1 = json_array_get(json_object_get(k0, "hot_lines"), 1);
    CHECK_INT(json_integer_value(json_object_get(ln1, "source_line")), 18);
    CHECK_INT(json_integer_value(json_object_get(ln1, "samples")), 20);
    CHECK_STR(
        json_string_value(json_object_get(json_array_get(json_object_get(s, "scopes"), 0), "name")),
        "train");
    /* the hotspots carry the CPU stack too */
    json_t *hk = json_object_get(json_object_get(j, "hotspots"), "kernels");
    CHECK_STR(json_string_value(json_object_get(json_array_get(hk, 0), "stack_trace")),
              "main (app.c:3)|step (app.c:9)");
    CHECK_CONTAINS(st, "6 samples matched no kernel");
    CHECK_CONTAINS(st, "frobnicate");
    free(st);
    free(sj);
    free(text);
    json_decref(j);

    /* The same session without saying it samples PCs: no join. */
    write_session(dir, false);
    read_it(dir, &text, &j);
    CHECK_CONTAINS(text, "  by kernel: n/a (the session does not say it samples PCs");
    s = j ? json_object_get(j, "stalls") : NULL;
    CHECK(json_is_false(json_object_get(s, "kernels_joined")));
    CHECK(json_is_null(json_object_get(s, "samples_no_kernel")));
    free(text);
    json_decref(j);
}

int main(void)
{
    char root[] = "/tmp/gp_stalls_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_session(root);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return check_done("test_report_stalls");
}
