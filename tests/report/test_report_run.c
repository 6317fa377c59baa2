/*
 * test_report_run.c - the run summary (report/run.h, fl_run): two
 * sessions written at run time, by hand in the wire format, summed into
 * one run - kernels merged by name across sessions (kernel ids are per
 * session; an id without a name kept under its id), memcpy per direction,
 * memset, each session's last capture_capabilities (degraded features,
 * the engines and their fallback), and what could not be used counted
 * (a torn line, a batch without its duration column, a record of another
 * session).  A directory that is no session directory adds nothing and
 * fails with a message naming it, the other directories still read.
 */
#include "check.h"
#include "report/run.h"
#include "util/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SA "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
#define SB "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
#define KCOLS "\"columns\":[\"dt_ns\",\"kernel_id\",\"duration_ns\"]"
#define MCOLS "\"columns\":[\"dt_ns\",\"duration_ns\",\"bytes\",\"copy_kind\"]"
#define HEAD(type, s) "{\"version\":1,\"type\":\"" type "\",\"session_id\":\"" s "\""
#define JOB(s)                                                                                     \
    HEAD("job_start", s)                                                                           \
    ",\"pid\":10,\"app\":\"run_app\",\"log_path\":\"x\","                                          \
    "\"ts_ns\":1760000000000000000,\"devices\":[],"                                                \
    "\"session_kind\":\"trace\",\"profiling_engine\":\"nvidia.trace\"}\n"
#define CAPS(s, req, sel, feature, status, msg)                                                    \
    HEAD("capture_capabilities", s)                                                                \
    ",\"ts_ns\":1760000000004000000,\"requested_engine\":\"" req "\",\"selected_engine\":\"" sel   \
    "\",\"capabilities\":[{"                                                                       \
    "\"feature\":\"" feature "\",\"status\":\"" status "\",\"message\":\"" msg "\"}]}\n"

/* gemm twice (ids 1), relu once; HtoD 4 KiB and a copy of kind 3; a
 * memset; a batch of another session; PcSampling fell back to Trace. */
static const char session_a[] = JOB(SA)
    HEAD("dictionary_update", SA) ",\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"relu\"}}\n" HEAD(
        "kernel_event_batch",
        SA) ",\"batch_id\":1,\"base_time_ns\":1760000000001000000," KCOLS
            ",\"rows\":[[0,1,100000],[10,2,20000],[20,1,300000]]}\n" HEAD(
                "memcpy_event_batch",
                SA) ",\"batch_id\":1,\"base_time_ns\":1760000000001000000," MCOLS
                    ",\"rows\":[[0,1000,4096,1],[10,2000,512,3]]}\n" HEAD(
                        "memset_event", SA) ",\"ts_ns\":1760000000003000000,\"duration_ns\":10000,"
                                            "\"bytes\":4096}\n" HEAD(
                                                "kernel_event_batch",
                                                SB) ",\"batch_id\":2,\"base_time_ns\":1," KCOLS
                                                    ",\"rows\":[[0,1,777]]}\n" CAPS(
                                                        SA, "nvidia.pc_sampling", "nvidia.trace",
                                                        "pc_sampling", "fallback", "no privileges");

/* Its own ids (relu is 1 here), an id without a name, a batch without
 * duration_ns, memcpy partial, and a last line cut by a crash. */
static const char session_b[] =
    JOB(SB) HEAD("dictionary_update", SB) ",\"kernel_dict\":{\"1\":\"relu\"}}\n" HEAD(
        "kernel_event_batch",
        SB) ",\"batch_id\":1,\"base_time_ns\":1760000000001000000," KCOLS
            ",\"rows\":[[0,1,30000],[10,9,5000]]}\n" HEAD(
                "kernel_event_batch",
                SB) ",\"batch_id\":2,\"base_time_ns\":1760000000001000000,"
                    "\"columns\":[\"dt_ns\",\"kernel_id\"],\"rows\":[[0,1]]}\n" CAPS(
                        SB, "nvidia.pc_sampling", "nvidia.pc_sampling", "memcpy_events", "partial",
                        "3 records lost") "{\"version\":1,\"type\":\"kernel_ev";

static int put(const char *dir, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/device.log", dir);
    if (mkdir(dir, 0755) != 0)
        return -1;
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

static void rmtree2(const char *base, const char *a, const char *b)
{
    char p[4096];
    const char *dirs[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/device.log", dirs[i]);
        unlink(p);
        rmdir(dirs[i]);
    }
    rmdir(base);
}

static void check_sums(const fl_run *r)
{
    CHECK_INT(r->processes, 2);
    CHECK_U64(r->kernel_launches, 5);
    CHECK_U64(r->kernel_ns, 455000);
    CHECK_INT(r->n_kernels, 3);
    if (r->n_kernels == 3) {
        CHECK_STR(r->kernels[0].name, "gemm");
        CHECK_U64(r->kernels[0].calls, 2);
        CHECK_U64(r->kernels[0].total_ns, 400000);
        CHECK_STR(r->kernels[1].name, "relu"); /* id 2 in one session, 1 in the other */
        CHECK_U64(r->kernels[1].calls, 2);
        CHECK_U64(r->kernels[1].total_ns, 50000);
        CHECK_STR(r->kernels[2].name, "(kernel id 9, not in kernel_dict)");
        CHECK_U64(r->kernels[2].total_ns, 5000);
    }
    CHECK_U64(r->copies[FL_RUN_COPY_HTOD].count, 1);
    CHECK_U64(r->copies[FL_RUN_COPY_HTOD].bytes, 4096);
    CHECK_U64(r->copies[FL_RUN_COPY_HTOD].time_ns, 1000);
    CHECK_U64(r->copies[FL_RUN_COPY_OTHER].count, 1);
    CHECK_U64(r->copies[FL_RUN_COPY_OTHER].bytes, 512);
    CHECK_U64(r->copies[FL_RUN_COPY_DTOH].count, 0);
    CHECK_U64(r->memsets.count, 1);
    CHECK_U64(r->memsets.bytes, 4096);
    CHECK_U64(r->memsets.time_ns, 10000);
    CHECK_INT(r->n_caps, 2);
    if (r->n_caps == 2) {
        CHECK_STR(r->caps[0].feature, "pc_sampling");
        CHECK_STR(r->caps[0].status, "fallback");
        CHECK_STR(r->caps[0].message, "no privileges");
        CHECK_INT(r->caps[0].processes, 1);
        CHECK_STR(r->caps[1].feature, "memcpy_events");
        CHECK_STR(r->caps[1].status, "partial");
    }
    CHECK_INT(r->n_engines, 2);
    if (r->n_engines == 2) {
        CHECK_STR(r->engines[0].engine, "nvidia.trace");
        CHECK_STR(r->engines[0].requested, "nvidia.pc_sampling");
        CHECK_STR(r->engines[0].message, "no privileges");
        CHECK_STR(r->engines[1].engine, "nvidia.pc_sampling");
        CHECK(r->engines[1].message == NULL); /* ran what was asked */
    }
    CHECK_U64(r->bad_lines, 1); /* the cut last line */
    CHECK_U64(r->bad_rows, 1);  /* the batch without duration_ns */
    CHECK_U64(r->dropped, 1);   /* the batch of another session */
    CHECK_INT(r->oom, 0);
    CHECK_U64(r->pc_samples, 0);
    CHECK_U64(r->sass_rows, 0);
}

static void test_run(void)
{
    const char *bin = getenv("GP_TEST_BINARY_DIR");
    char base[1024], a[1200], b[1200], missing[1200];
    snprintf(base, sizeof base, "%s/report-run.XXXXXX", bin && *bin ? bin : "/tmp");
    CHECK(mkdtemp(base) != NULL);
    snprintf(a, sizeof a, "%s/%s", base, SA);
    snprintf(b, sizeof b, "%s/%s", base, SB);
    snprintf(missing, sizeof missing, "%s/missing", base);
    CHECK(put(a, session_a) == 0);
    CHECK(put(b, session_b) == 0);

    /* Both sessions, one at a time as the command reads them. */
    fl_run r;
    fl_run_init(&r);
    gp_error err;
    gp_error_clear(&err);
    CHECK_INT(fl_run_add_session(&r, a, &err), GP_OK);
    CHECK_INT(fl_run_add_session(&r, b, &err), GP_OK);
    fl_run_finish(&r);
    check_sums(&r);
    fl_run_free(&r);

    /* A list: the base (sessions below it, not one itself) and a missing
     * directory add nothing; the first failure is said; the rest read. */
    const char *dirs[] = {a, base, missing, b};
    fl_run_init(&r);
    gp_error_clear(&err);
    CHECK_INT(fl_run_read(&r, dirs, 4, &err), GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, base);
    CHECK_CONTAINS(err.message, "not a session directory");
    check_sums(&r);
    fl_run_free(&r);

    /* Nothing read: nothing summed, no unknown counted as 0 kernels of
     * some session. */
    fl_run_init(&r);
    CHECK(fl_run_read(&r, dirs + 2, 1, NULL) != GP_OK);
    CHECK_INT(r.processes, 0);
    CHECK_INT(r.n_kernels, 0);
    fl_run_free(&r);
    rmtree2(base, a, b);
}

int main(void)
{
    test_run();
    return check_done("test_report_run");
}
