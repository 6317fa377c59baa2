/*
 * test_cli_smi_health.c - gpu-profile over the fake nvidia-smi when it
 * misbehaves (docs/test-doubles.md): one that stalls after 3 ticks
 * (FAKE_SMI_FAIL=hang_after=3) is noticed and said in the summary's note
 * ("nvidia-smi stalled after ..."), with the samples it did send; one that
 * floods (flood_after=3: rows as fast as the pipe takes them) has its
 * extra rounds dropped (the samples stay near the asked rate) and says so;
 * a healthy one says nothing.  Control characters in nvidia-smi's strings
 * (a device name with an escape sequence and a bell) reach the terminal as
 * '?', in `devices` and in the run's summary.
 */
#include "harness.h"
#include "json_mini.h"

static char capture[1024], env_caps[1100];

static jn *run_json(const char *fail, long ms, h_result *r)
{
    char report[512], env_fail[128], ms_text[32];
    h_path(report, sizeof report, "report.json");
    unlink(report);
    snprintf(env_fail, sizeof env_fail, "FAKE_SMI_FAIL=%s", fail);
    snprintf(ms_text, sizeof ms_text, "%ld", ms);
    const char *env[] = {env_caps, fail[0] ? env_fail : "FAKE_SMI_FAIL", NULL};
    const char *argv[] = {h_cli,  "--backend", "smi",   "--json", "-o",    report, "--interval",
                          "0.05", "--",        h_child, "sleep",  ms_text, NULL};
    h_run(argv, env, NULL, 0, r);
    CHECK_INT(r->code, 0);
    size_t len = 0;
    char *text = check_read_file(report, &len);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, len, &why) : NULL;
    CHECK(doc != NULL);
    free(text);
    return doc;
}

static const jn *dev0(const jn *doc)
{
    return jn_at(jn_get(doc, "devices"), 0);
}

static void test_stall(void)
{
    h_result r;
    jn *doc = run_json("hang_after=3", 1000, &r);
    const char *note = jn_str(jn_get(dev0(doc), "note"));
    long long n = jn_int(jn_get(dev0(doc), "sample_count"));
    printf("stall: samples %lld, note: %s\n", n, note ? note : "(none)");
    CHECK_INT(n, 3);
    CHECK_CONTAINS(note, "smi: nvidia-smi stalled after ");
    CHECK_CONTAINS(note, " s of the run");
    jn_free(doc);
    h_result_free(&r);

    /* The text summary says it too. */
    const char *env[] = {env_caps, "FAKE_SMI_FAIL=hang_after=3", NULL};
    const char *argv[] = {h_cli, "--backend", "smi",   "--interval", "0.05",
                          "--",  h_child,     "sleep", "800",        NULL};
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "nvidia-smi stalled after");
    h_result_free(&r);
}

/* What a summary of few or no samples says: a stalled nvidia-smi's power
 * integral covers its few rows, not the run, and says how much; one that
 * never sent a row says why there is no sample and what to do. */
static void test_coverage_and_no_sample(void)
{
    h_result r;
    jn *doc = run_json("hang_after=3", 1000, &r);
    double span = jn_num(jn_get(dev0(doc), "energy_span_s"));
    double dur = jn_num(jn_get(dev0(doc), "duration_s"));
    CHECK_STR(jn_str(jn_get(dev0(doc), "energy_source")), "power_integral");
    /* Its three rows, not the run's second: no figure of the clock's pace
     * (a loaded machine stretches the rows' spacing, never past the run). */
    CHECK(span > 0 && span < dur && dur >= 1.0);
    jn_free(doc);
    h_result_free(&r);
    const char *env[] = {env_caps, "FAKE_SMI_FAIL=hang_after=3", NULL};
    const char *argv[] = {h_cli, "--backend", "smi",   "--interval", "0.05",
                          "--",  h_child,     "sleep", "1000",       NULL};
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, " J (power integral, covers ");
    h_result_free(&r);

    doc = run_json("hang_after=0", 300, &r);
    CHECK_INT(jn_int(jn_get(dev0(doc), "sample_count")), 0);
    CHECK_CONTAINS(jn_str(jn_get(dev0(doc), "note")),
                   "no sample: nvidia-smi gave no row during the region (its first row comes "
                   "about a second after it starts, and a shorter region gets none): use the "
                   "NVML backend (--backend nvml) or profile a longer region");
    CHECK(jn_is_null(jn_get(dev0(doc), "energy_span_s")));
    jn_free(doc);
    h_result_free(&r);
}

static void test_flood(void)
{
    h_result r;
    jn *doc = run_json("flood_after=3", 1000, &r);
    const char *note = jn_str(jn_get(dev0(doc), "note"));
    long long n = jn_int(jn_get(dev0(doc), "sample_count"));
    printf("flood: samples %lld, note: %s\n", n, note ? note : "(none)");
    /* 1 s at 0.05 s, the slack of 10 rounds, and the run's ends. */
    CHECK(n >= 3 && n <= 40);
    CHECK_CONTAINS(note, "smi: nvidia-smi flooded: ");
    CHECK_CONTAINS(note, " rounds came faster than one every 0.050 s and were dropped");
    jn_free(doc);
    h_result_free(&r);
}

static void test_healthy(void)
{
    h_result r;
    jn *doc = run_json("", 600, &r);
    CHECK(jn_is_null(jn_get(dev0(doc), "note")));
    /* Rows came (how many in 0.6 s depends on the machine's load). */
    CHECK(jn_int(jn_get(dev0(doc), "sample_count")) >= 1);
    jn_free(doc);
    h_result_free(&r);
}

/* The capture with its device name made "NVIDIA H100<ESC>[2J<BEL>HBM3". */
static void test_control_characters(void)
{
    size_t len = 0;
    char *text = check_read_file(capture, &len);
    CHECK(text != NULL);
    if (!text)
        return;
    char bad[512];
    h_path(bad, sizeof bad, "escapes.txt");
    FILE *f = fopen(bad, "wb");
    const char *from = "NVIDIA H100 80GB HBM3", *to = "NVIDIA H100\x1b[2J\x07HBM3";
    for (const char *p = text; *p;) {
        const char *q = strstr(p, from);
        size_t n = q ? (size_t)(q - p) : strlen(p);
        fwrite(p, 1, n, f);
        if (!q)
            break;
        fputs(to, f);
        p = q + strlen(from);
    }
    fclose(f);
    free(text);
    char env_bad[600];
    snprintf(env_bad, sizeof env_bad, "FAKE_SMI_CAPTURES=%s", bad);
    const char *env[] = {env_bad, "FAKE_SMI_FAIL", NULL};

    h_result r;
    const char *argv[] = {h_cli, "devices", "--backend", "smi", NULL};
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "NVIDIA H100?[2J?HBM3");
    CHECK(!memchr(r.out, 0x1b, r.out_len) && !memchr(r.out, 0x07, r.out_len));
    h_result_free(&r);

    const char *argv2[] = {h_cli, "--backend", "smi",   "--interval", "0.05",
                           "--",  h_child,     "sleep", "200",        NULL};
    h_run(argv2, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "NVIDIA H100?[2J?HBM3");
    CHECK(!memchr(r.err, 0x1b, r.err_len) && !memchr(r.err, 0x07, r.err_len));
    h_result_free(&r);
}

int main(void)
{
    h_init();
    snprintf(capture, sizeof capture,
             "%s/fixtures/nvidia-smi/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
             check_env("GP_TEST_SOURCE_DIR"));
    snprintf(env_caps, sizeof env_caps, "FAKE_SMI_CAPTURES=%s", capture);
    test_stall();
    test_coverage_and_no_sample();
    test_flood();
    test_healthy();
    test_control_characters();
    h_cleanup();
    return check_done("test_cli_smi_health");
}
