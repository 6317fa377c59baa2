/*
 * test_cli_stdio.c - gpu-profile started with descriptors 0, 1 and 2
 * closed (or only 2): what it opens (the session's files, the report,
 * NVML's) never lands there, so its own "recording session" line and its
 * summary go nowhere, never into a session file or the report; CMD gets
 * the descriptors as they were given, closed.
 */
#include "harness.h"

#include <dirent.h>
#include <ftw.h>

static const char *needle;
static int found_in;

static int scan(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag != FTW_F)
        return 0;
    size_t len = 0;
    char *text = check_read_file(path, &len);
    if (text && memmem(text, len, needle, strlen(needle))) {
        fprintf(stderr, "'%s' found in %s\n", needle, path);
        found_in++;
    }
    free(text);
    return 0;
}

/* Runs argv with the descriptors first..last closed. */
static int run_closed(const char *const *argv, int first, int last)
{
    pid_t pid = fork();
    if (pid == 0) {
        h_child_signals();
        for (int fd = first; fd <= last; fd++)
            close(fd);
        execv(argv[0], (char *const *)argv);
        _exit(93);
    }
    return h_code(h_wait(pid));
}

static void check_case(int first, int last)
{
    char logs[512], report[512], fds[512], want[64];
    h_path(logs, sizeof logs, "logs");
    h_path(report, sizeof report, "report.json");
    h_path(fds, sizeof fds, "fds.txt");
    unlink(report);
    unlink(fds);
    char arg[600];
    snprintf(arg, sizeof arg, "--log-dir=%s", logs);
    const char *argv[] = {h_cli,  arg,  "--json", "-o",  report, "--interval",
                          "0.02", "--", h_child,  "fds", fds,    NULL};
    int code = run_closed(argv, first, last);
    printf("fds %d-%d closed: status %d\n", first, last, code);
    CHECK_INT(code, 0);
    char *got = check_read_file(fds, NULL);
    snprintf(want, sizeof want, "0 %d 1 %d 2 %d\n", first > 0, first > 1 || last < 1, last < 2);
    CHECK_STR(got ? got : "", want);
    free(got);
    char *rep = check_read_file(report, NULL);
    CHECK(rep && rep[0] == '{');
    free(rep);
    needle = "recording session";
    found_in = 0;
    nftw(h_dir, scan, 16, FTW_PHYS);
    CHECK_INT(found_in, 0);
    needle = "exited with status";
    found_in = 0;
    nftw(h_dir, scan, 16, FTW_PHYS);
    CHECK_INT(found_in, 0);
}

int main(void)
{
    h_init();
    h_scenario("device 0\n");
    check_case(0, 2);
    check_case(2, 2);
    check_case(1, 2);
    h_cleanup();
    return check_done("test_cli_stdio");
}
