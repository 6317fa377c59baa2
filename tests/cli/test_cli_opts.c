/*
 * test_cli_opts.c - the getopt conventions of every subcommand and the run
 * form (cli/opts_util.c): bundled short options (-qo FILE), attached values
 * (-oFILE, -qoFILE), --opt=VALUE, options after operands in the
 * subcommands, the nearest-option suggestion with its exact message, an
 * ambiguous prefix, and CMD's own options left alone after CMD and after
 * `--`.
 */
#include "cli/harness.h"

static void run(const char *const *argv, h_result *r)
{
    h_run(argv, NULL, NULL, 0, r);
}

/* The report file of a run exists and is the JSON object. */
static void check_report(const char *path)
{
    size_t n = 0;
    char *text = check_read_file(path, &n);
    CHECK(text != NULL);
    if (text)
        CHECK_PREFIX(text, "{\"schema\":\"gpu-profile.run\"");
    free(text);
    remove(path);
}

static void test_bundling(void)
{
    char out[512];
    h_path(out, sizeof out, "r.json");
    char attached[600];
    snprintf(attached, sizeof attached, "-o%s", out);
    char bundled_attached[600];
    snprintf(bundled_attached, sizeof bundled_attached, "-qo%s", out);
    char long_eq[600];
    snprintf(long_eq, sizeof long_eq, "--output=%s", out);
    const char *forms[][4] = {
        {"-qo", out, NULL},
        {"-q", attached, NULL},
        {bundled_attached, NULL},
        {"-q", long_eq, NULL},
        {"--quiet", "--output", out, NULL},
    };
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
        const char *argv[16];
        size_t n = 0;
        argv[n++] = h_cli;
        argv[n++] = "--json";
        argv[n++] = "--backend=none";
        argv[n++] = "--interval=0.05";
        for (size_t i = 0; i < 4 && forms[k][i]; i++)
            argv[n++] = forms[k][i];
        argv[n++] = "--";
        argv[n++] = h_child;
        argv[n++] = "exit";
        argv[n++] = "3";
        argv[n] = NULL;
        h_result r;
        run(argv, &r);
        CHECK_INT(r.code, 3);
        CHECK_STR(r.err, ""); /* -q */
        CHECK_STR(r.out, "");
        check_report(out);
        h_result_free(&r);
    }
}

static void test_cmd_options_untouched(void)
{
    /* After CMD, and after `--`, every word is CMD's. */
    const char *with_dashes[] = {
        h_cli, "-q",  "--backend", "none", "--", "sh", "-c", "printf '%s,' \"$@\"",
        "sh",  "-la", "--json",    "-q",   NULL};
    h_result r;
    run(with_dashes, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "-la,--json,-q,");
    CHECK_STR(r.err, "");
    h_result_free(&r);
    const char *without[] = {h_cli, "-q",  "--backend", "none", "sh", "-c", "printf '%s,' \"$@\"",
                             "sh",  "-la", "--help",    "-o",   NULL};
    run(without, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "-la,--help,-o,");
    CHECK_STR(r.err, "");
    h_result_free(&r);
    /* `gpu-profile ls -la` runs ls with -la: not an option of ours. */
    const char *ls[] = {h_cli, "-q", "--backend", "none", "ls", "-la", "/", NULL};
    run(ls, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, " ..\n");
    CHECK_STR(r.err, "");
    h_result_free(&r);
}

static void test_subcommands(void)
{
    h_result r;
    /* Options after the operand, --opt=VALUE. */
    const char *dev[] = {h_cli, "devices", "--backend=none", "--json", NULL};
    run(dev, &r);
    CHECK_INT(r.code, 0);
    CHECK_PREFIX(r.out, "{\"schema\":\"gpu-profile.devices\"");
    h_result_free(&r);
    const char *helpopt[] = {h_cli, "help", "report", "--options", NULL};
    run(helpopt, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "--format\tFORMAT\ttext json html\n");
    CHECK_CONTAINS(r.out, "-o\tFILE\t\n");
    h_result_free(&r);

    /* export --absolute-time: the trace's clock is the Unix epoch. */
    char fixture[1024];
    snprintf(fixture, sizeof fixture,
             "%s/fixtures/gpufl-session/3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b",
             check_env("GP_TEST_SOURCE_DIR"));
    const char *abs_time[] = {h_cli, "export", fixture, "--absolute-time", "--format=chrome-trace",
                              NULL};
    run(abs_time, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "unix_epoch");
    h_result_free(&r);
    const char *rel_time[] = {h_cli, "export", "--format", "chrome-trace", fixture, NULL};
    run(rel_time, &r);
    CHECK_INT(r.code, 0);
    CHECK(strstr(r.out, "unix_epoch") == NULL);
    h_result_free(&r);
    const char *abs_csv[] = {h_cli, "export", "--absolute-time", "--format", "csv", fixture, NULL};
    run(abs_csv, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: export: --absolute-time is for --format chrome-trace\n");
    CHECK_STR(r.out, "");
    h_result_free(&r);
}

static void test_suggestions(void)
{
    static const struct {
        const char *args[5];
        const char *message;
    } cases[] = {
        {{"--intervall", "1", "true"},
         "gpu-profile: unknown option '--intervall'; did you mean '--interval'? (see gpu-profile "
         "--help)\n"},
        {{"--jsn=1", "true"},
         "gpu-profile: unknown option '--jsn'; did you mean '--json'? (see gpu-profile --help)\n"},
        {{"devices", "--jsno"},
         "gpu-profile: devices: unknown option '--jsno'; did you mean '--json'? (see gpu-profile "
         "devices --help)\n"},
        {{"report", "--formt", "json", "x"},
         "gpu-profile: report: unknown option '--formt'; did you mean '--format'? (see "
         "gpu-profile report --help)\n"},
        {{"export", "--sesion", "x", "y"},
         "gpu-profile: export: unknown option '--sesion'; did you mean '--session'? (see "
         "gpu-profile export --help)\n"},
        {{"serve", "--listn", ":0"},
         "gpu-profile: serve: unknown option '--listn'; did you mean '--listen'? (see "
         "gpu-profile serve --help)\n"},
        {{"metrics", "list", "--chp", "GH100"},
         "gpu-profile: metrics: unknown option '--chp'; did you mean '--chip'? (see gpu-profile "
         "metrics --help)\n"},
        {{"help", "--option"},
         /* a unique prefix is that option: not a mistake */ NULL},
        {{"--st", "true"},
         "gpu-profile: ambiguous option '--st': it starts 2 option names; type more of it (see "
         "gpu-profile --help)\n"},
        {{"-qz", "true"}, "gpu-profile: unknown option '-z' (see gpu-profile --help)\n"},
        {{"report", "-o"}, "gpu-profile: report: -o needs a value: a file name (- for stdout)\n"},
        {{"serve", "--pcie=yes"},
         "gpu-profile: serve: --pcie takes no value (see gpu-profile serve --help)\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *argv[8];
        size_t n = 0;
        argv[n++] = h_cli;
        for (size_t i = 0; i < 5 && cases[k].args[i]; i++)
            argv[n++] = cases[k].args[i];
        argv[n] = NULL;
        h_result r;
        run(argv, &r);
        if (cases[k].message) {
            CHECK_INT(r.code, 125);
            CHECK_STR(r.err, cases[k].message);
        } else {
            CHECK_INT(r.code, 0);
        }
        h_result_free(&r);
    }
}

int main(void)
{
    h_init();
    test_bundling();
    test_cmd_options_untouched();
    test_subcommands();
    test_suggestions();
    h_cleanup();
    return check_done("test_cli_opts");
}
