/*
 * test_cli_clock.c - CMD's time is its own: gpu-profile stopped (SIGSTOP)
 * for 2 s in the middle of a 1 s CMD, so that CMD ends while it is
 * stopped, reports CMD's 1 s (fork to its exit as the kernel saw it), not
 * the 2.3 s until it looked again, and says for how long it was stopped
 * (in the note and in profiler_stopped_s, within the 0.1 s probe); an
 * unstopped run says nothing of it.  The bounds are wide (a loaded
 * machine): they tell 1 s from 2.3 s.
 */
#include "harness.h"
#include "json_mini.h"

static jn *read_json(const char *path)
{
    size_t len = 0;
    char *text = check_read_file(path, &len);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, len, &why) : NULL;
    if (!doc)
        fprintf(stderr, "%s: not JSON (%s)\n", path, why ? why : "cannot read");
    CHECK(doc != NULL);
    free(text);
    return doc;
}

static void test_profiler_stopped(void)
{
    char report[512], err[512];
    h_path(report, sizeof report, "report.json");
    h_path(err, sizeof err, "run.err");
    const char *argv[] = {h_cli, "--json", "-o",    report, "--interval", "0.05",
                          "--",  h_child,  "sleep", "1000", "3",          NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, NULL, err);
    h_nap_ms(300);
    kill(pid, SIGSTOP);
    h_nap_ms(2000);
    kill(pid, SIGCONT);
    CHECK_INT(h_code(h_wait(pid)), 3);
    jn *doc = read_json(report);
    double took = jn_num(jn_get(doc, "duration_s"));
    double stopped = jn_num(jn_get(doc, "profiler_stopped_s"));
    const char *note = jn_str(jn_get(doc, "note"));
    printf("CMD 1 s, profiler stopped 2 s: duration_s %.3f, profiler_stopped_s %.3f, note: %s\n",
           took, stopped, note ? note : "(none)");
    CHECK(took >= 0.95 && took < 1.8);
    CHECK(stopped > 1.5 && stopped < 3.0);
    CHECK_CONTAINS(note, "gpu-profile was stopped ");
    CHECK_CONTAINS(note, " s during the run (SIGSTOP or SIGTSTP): no samples meanwhile");
    jn_free(doc);

    /* The status line says CMD's time too. */
    const char *argv2[] = {h_cli, "--interval", "0.05", "--", h_child, "sleep", "600", NULL};
    pid = h_spawn(argv2, NULL, NULL, NULL, err);
    h_nap_ms(200);
    kill(pid, SIGSTOP);
    h_nap_ms(1500);
    kill(pid, SIGCONT);
    CHECK_INT(h_code(h_wait(pid)), 0);
    char *text = check_read_file(err, NULL);
    const char *line = text ? strstr(text, " exited with status 0 after ") : NULL;
    double after = line ? atof(line + strlen(" exited with status 0 after ")) : -1;
    printf("status line: after %.3f s\n", after);
    CHECK(after >= 0.55 && after < 1.4);
    CHECK_CONTAINS(text, "gpu-profile: gpu-profile was stopped ");
    free(text);
}

static void test_not_stopped(void)
{
    char report[512];
    h_path(report, sizeof report, "plain.json");
    const char *argv[] = {h_cli, "--json", "-o", report, "--", h_child, "sleep", "100", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    jn *doc = read_json(report);
    CHECK(jn_is_null(jn_get(doc, "profiler_stopped_s")));
    CHECK(jn_is_null(jn_get(doc, "note")));
    CHECK(jn_num(jn_get(doc, "duration_s")) >= 0.1);
    jn_free(doc);
    h_result_free(&r);
}

/* A SIGCONT with no stop before it (coreutils' timeout sends one after
 * its SIGTERM): no "was stopped 0.0 s" note. */
static void test_cont_without_stop(void)
{
    char report[512], err[512];
    h_path(report, sizeof report, "cont.json");
    h_path(err, sizeof err, "cont.err");
    const char *argv[] = {h_cli, "--json", "-o",    report, "--interval", "0.05",
                          "--",  h_child,  "sleep", "600",  NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, NULL, err);
    h_nap_ms(200);
    kill(pid, SIGCONT);
    CHECK_INT(h_code(h_wait(pid)), 0);
    jn *doc = read_json(report);
    CHECK(jn_is_null(jn_get(doc, "profiler_stopped_s")));
    CHECK(jn_is_null(jn_get(doc, "note")));
    jn_free(doc);
}

int main(void)
{
    h_init();
    h_scenario("device 0\n");
    test_profiler_stopped();
    test_not_stopped();
    test_cont_without_stop();
    h_cleanup();
    return check_done("test_cli_clock");
}
