/*
 * test_cli_procs.c - per-process attribution end to end: gpu-profile runs
 * `sh -c 'echo $$ > FILE; exec sleep ...'`, the fake NVML reads the PID
 * from FILE (a `proc 0 file:FILE` line) and lists it beside a foreign
 * process (PID 1), and the command's report attributes the child's GPU
 * memory and utilisation to the command, not the foreign process's; the
 * --samples file's per-process columns, exact per row (CSV and NDJSON, a
 * device answering NOT_SUPPORTED: empty / null).
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

/* The per-process columns of --samples: the last 8 (docs/cli.md). */
static const char proc_header[] = ",proc_count,proc_all_count,proc_mem_used_bytes,"
                                  "proc_all_mem_used_bytes,proc_sm_pct,proc_mem_pct,"
                                  "proc_all_sm_pct,proc_all_mem_pct";
/* Device 0 before the child wrote its PID (only PID 1's), and after. */
static const char before[] = ",0,1,0,1073741824,0,0,10,5";
/* The round whose process tree was read before the child started, whose
 * NVML list has it: listed, not yet ours (it counts from the next round). */
static const char listed[] = ",0,2,0,3221225472,0,0,50,20";
static const char after[] = ",1,2,2147483648,3221225472,40,15,50,20";
static const char na_csv[] = ",,,,,,,,";

/* The tail of a line from its 8th comma from the end (the proc columns). */
static const char *proc_tail(const char *line)
{
    const char *p = line + strlen(line);
    for (int commas = 0; p > line;)
        if (*--p == ',' && ++commas == 8)
            return p;
    return line;
}

static void test_samples_csv(void)
{
    unlink(pid_file);
    char text[1024], csv[512], script[1024];
    snprintf(text, sizeof text,
             "device 0\ndevice 1\nproc 0 file:%s mem 2147483648 sm 40 memutil 15\n"
             "proc 0 1 mem 1073741824 sm 10 memutil 5\nproc 1 1\n"
             "unsupported 1 procs\nunsupported 1 proc_util\n",
             pid_file);
    h_scenario(text);
    h_path(csv, sizeof csv, "samples.csv");
    snprintf(script, sizeof script, "echo $$ > %s; exec sleep 0.3", pid_file);
    const char *argv[] = {h_cli, "-q", "--samples", csv,    "--interval", "0.02",
                          "--",  "sh", "-c",        script, NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char *rows = check_read_file(csv, NULL);
    CHECK(rows != NULL);
    char line[2048];
    int n = rows ? h_count_lines(rows) : 0, n_after = 0;
    if (rows) {
        h_line(rows, 0, line, sizeof line);
        CHECK_STR(proc_tail(line), proc_header);
    }
    /* Device 0: every row one of these exact states in order: before the
     * child wrote its PID, perhaps a round where it is listed but not in
     * the tree, while it runs, perhaps listed but out of the tree again as
     * it exits (reaped, still in /proc), and n/a once /proc no longer shows
     * it (the fake still lists the PID in the file: a PID we cannot see).
     * Device 1: empty cells, never 0. */
    const char *const states[] = {before, listed, after, listed, na_csv};
    int state = 0;
    for (int i = 1; i < n; i++) {
        h_line(rows, i, line, sizeof line);
        const char *tail = proc_tail(line), *dev = strchr(strchr(line, ',') + 1, ',') + 1;
        if (*dev == '1') {
            CHECK_STR(tail, na_csv);
            continue;
        }
        while (state < 4 && strcmp(tail, states[state]) != 0)
            state++;
        CHECK_STR(tail, states[state]);
        n_after += state == 2;
    }
    CHECK(n_after >= 2); /* 0.3 s at 0.02 s: about 15 */
    free(rows);
    h_result_free(&r);
}

static void test_samples_ndjson(void)
{
    unlink(pid_file); /* a dead PID there would be listed: a PID /proc does not show */
    char nd[512];
    h_path(nd, sizeof nd, "samples.ndjson");
    const char *argv[] = {h_cli, "-q", "--samples", nd, "--interval", "0.02", "--", "true", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char *rows = check_read_file(nd, NULL);
    char line[4096];
    CHECK(rows && h_count_lines(rows) >= 2);
    for (int i = 0; rows && i < 2; i++) {
        const char *why = NULL;
        h_line(rows, i, line, sizeof line);
        jn *o = jn_parse(line, strlen(line), &why);
        CHECK(o != NULL);
        int d = (int)jn_int(jn_get(o, "device_index"));
        static const char *const keys[] = {
            "proc_count",  "proc_all_count", "proc_mem_used_bytes", "proc_all_mem_used_bytes",
            "proc_sm_pct", "proc_mem_pct",   "proc_all_sm_pct",     "proc_all_mem_pct"};
        /* The child never wrote its PID: only PID 1 on device 0. */
        static const long long want[] = {0, 1, 0, 1073741824, 0, 0, 10, 5};
        for (size_t k = 0; k < 8; k++) {
            const jn *v = jn_get(o, keys[k]);
            CHECK(v != NULL);
            if (d == 1)
                CHECK(v && jn_is_null(v));
            else if (v)
                CHECK_U64((uint64_t)jn_int(v), (uint64_t)want[k]);
        }
        jn_free(o);
    }
    free(rows);
    h_result_free(&r);
}

int main(void)
{
    h_init();
    h_path(pid_file, sizeof pid_file, "child.pid");
    scenario();
    test_json();
    test_text();
    test_samples_csv();
    test_samples_ndjson();
    h_cleanup();
    return check_done("test_cli_procs");
}
