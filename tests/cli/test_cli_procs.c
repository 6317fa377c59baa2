/*
 * test_cli_procs.c - per-process attribution end to end: gpu-profile runs
 * `sh -c 'echo $$ > FILE; exec sleep ...'`, the fake NVML reads the PID
 * from FILE (a `proc 0 file:FILE` line) and lists it beside a foreign
 * process (PID 1), and the command's report attributes the child's GPU
 * memory and utilisation to the command, not the foreign process's.
 */
#include "harness.h"
#include "json_mini.h"

#define GIB 1073741824ull

static char pid_file[512];

static void scenario(void)
{
    char text[1024];
    snprintf(text, sizeof text,
             "device 0\nproc 0 file:%s mem 2147483648 sm 40 memutil 15\n"
             "proc 0 1 mem 1073741824 sm 10 memutil 5\n",
             pid_file);
    h_scenario(text);
}

static void test_json(void)
{
    char report[512], script[1024];
    h_path(report, sizeof report, "report.json");
    snprintf(script, sizeof script, "echo $$ > %s; exec sleep 0.5", pid_file);
    const char *argv[] = {h_cli, "--json", "-o", report, "--interval", "0.02",
                          "--",  "sh",     "-c", script, NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char *text = check_read_file(report, NULL);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, strlen(text), &why) : NULL;
    CHECK(doc != NULL);
    const jn *p = jn_get(jn_at(jn_get(doc, "devices"), 0), "process");
    CHECK(p != NULL);
    /* Samples before the child wrote its PID have none of ours: only the
     * maxima are exact. */
    CHECK_INT(jn_int(jn_get(p, "count_max")), 1);
    CHECK_U64((uint64_t)jn_num(jn_get(p, "mem_used_max_bytes")), 2 * GIB);
    CHECK_U64((uint64_t)jn_num(jn_get(p, "all_mem_used_max_bytes")), 3 * GIB);
    CHECK_INT(jn_int(jn_get(p, "sm_max_pct")), 40);
    CHECK_INT(jn_int(jn_get(p, "mem_max_pct")), 15);
    double sm_mean = jn_num(jn_get(p, "sm_mean_pct"));
    CHECK(sm_mean > 0.0 && sm_mean <= 40.0);
    jn_free(doc);
    free(text);
    h_result_free(&r);
}

static void test_text(void)
{
    unlink(pid_file);
    char script[1024];
    snprintf(script, sizeof script, "echo $$ > %s; exec sleep 0.3", pid_file);
    const char *argv[] = {h_cli, "--interval", "0.02", "--", "sh", "-c", script, NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "\n  process memory    max 2.00 GiB of ");
    CHECK_CONTAINS(r.err, " used (1 process)\n  process util      SM ");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    h_path(pid_file, sizeof pid_file, "child.pid");
    scenario();
    test_json();
    test_text();
    h_cleanup();
    return check_done("test_cli_procs");
}
