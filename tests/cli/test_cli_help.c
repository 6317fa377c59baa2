/*
 * test_cli_help.c - the help pages: `gpu-profile --help` lists every
 * subcommand with an example; `help CMD` and `CMD --help` print the same
 * page on stdout (exit 0); each page names every option of its parser's
 * table (read back with `help --options CMD`, so the list cannot drift);
 * `help NOSUCH` is a usage error (125) naming the nearest subcommand; the
 * README's usage block names every subcommand.
 */
#include "cli/harness.h"

static void run(const char *const *argv, h_result *r)
{
    h_run(argv, NULL, NULL, 0, r);
}

/* opt ("--name" or "-x") appears in page as a word of its own. */
static int mentions(const char *page, const char *opt)
{
    size_t n = strlen(opt);
    for (const char *p = strstr(page, opt); p; p = strstr(p + 1, opt)) {
        char before = p == page ? ' ' : p[-1], after = p[n];
        int word_before = (before >= 'a' && before <= 'z') || before == '-';
        int word_after = (after >= 'a' && after <= 'z') || after == '-';
        if (!word_before && !word_after)
            return 1;
    }
    return 0;
}

/* Every option of `help --options SUB` (SUB NULL: the run form) in page. */
static void check_options_named(const char *sub, const char *page)
{
    const char *argv[] = {h_cli, "help", "--options", sub, NULL};
    h_result r;
    run(argv, &r);
    CHECK_INT(r.code, 0);
    CHECK(r.out_len > 0);
    char *save = NULL;
    for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line[strcspn(line, "\t")] = '\0';
        if (!mentions(page, line)) {
            fprintf(stderr, "the page of %s does not name %s\n", sub ? sub : "the run form", line);
            check_failed_++;
        } else {
            check_passed_++;
        }
    }
    h_result_free(&r);
}

static void test_pages(char *readme)
{
    h_result top, help0;
    const char *dash[] = {h_cli, "--help", NULL};
    const char *bare[] = {h_cli, "help", NULL};
    run(dash, &top);
    run(bare, &help0);
    CHECK_INT(top.code, 0);
    CHECK_INT(help0.code, 0);
    CHECK_STR(help0.out, top.out);
    CHECK_STR(top.err, "");
    check_options_named(NULL, top.out);

    const char *cmds[] = {h_cli, "help", "--commands", NULL};
    h_result list;
    run(cmds, &list);
    CHECK_INT(list.code, 0);
    int n = 0;
    char *save = NULL;
    for (char *sub = strtok_r(list.out, "\n", &save); sub; sub = strtok_r(NULL, "\n", &save), n++) {
        char example[64];
        snprintf(example, sizeof example, "gpu-profile %s ", sub);
        CHECK_CONTAINS(top.out, example); /* listed with an example */
        if (readme)
            CHECK_CONTAINS(readme, example);
        h_result a, b;
        const char *via_help[] = {h_cli, "help", sub, NULL};
        const char *via_opt[] = {h_cli, sub, "--help", NULL};
        run(via_help, &a);
        run(via_opt, &b);
        CHECK_INT(a.code, 0);
        CHECK_INT(b.code, 0);
        CHECK_STR(a.out, b.out);
        CHECK_STR(a.err, "");
        CHECK_STR(b.err, "");
        char usage[64];
        snprintf(usage, sizeof usage, "usage: gpu-profile %s", sub);
        CHECK_PREFIX(a.out, usage);
        check_options_named(sub, a.out);
        h_result_free(&a);
        h_result_free(&b);
    }
    CHECK(n >= 6); /* devices report export metrics serve help (upload) */
    h_result_free(&list);
    h_result_free(&top);
    h_result_free(&help0);
}

static void test_errors(void)
{
    h_result r;
    const char *typo[] = {h_cli, "help", "devics", NULL};
    run(typo, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.out, "");
    CHECK_STR(r.err, "gpu-profile: help: no subcommand 'devics'; did you mean 'devices'? (see "
                     "gpu-profile --help)\n");
    h_result_free(&r);
    const char *none[] = {h_cli, "help", "frobnicate", NULL};
    run(none, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "help: no subcommand 'frobnicate': devices, report, export");
    h_result_free(&r);
    const char *two[] = {h_cli, "help", "report", "export", NULL};
    run(two, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: help: one CMD only ('report' and 'export')\n");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    char path[1024];
    snprintf(path, sizeof path, "%s/../README.md", check_env("GP_TEST_SOURCE_DIR"));
    size_t n = 0;
    char *readme = check_read_file(path, &n);
    CHECK(readme != NULL);
    test_pages(readme);
    test_errors();
    free(readme);
    h_cleanup();
    return check_done("test_cli_help");
}
