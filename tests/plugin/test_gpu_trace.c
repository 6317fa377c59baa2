/*
 * test_gpu_trace.c - the Trace engine end to end on a machine with an
 * NVIDIA GPU and the CUDA toolkit (label "gpu"): runs tests/gpu/run.sh on
 * this build, which builds a CUDA workload and a session checker and traces
 * the workload in-process, in-process with CUDA graph tracking and through
 * `gpu-profile --engine trace` (and a PyTorch script when PyTorch with CUDA
 * is installed).  See tests/gpu/README.md.
 *
 * Without a GPU or without nvcc run.sh prints "SKIP: ..." and exits 77,
 * which CTest reports as skipped; this test returns run.sh's status.
 *
 * The build directory is the one above this executable's directory
 * (build/tests/test_gpu_trace -> build/), or GP_TEST_BUILD_DIR; the
 * sources come from GP_TEST_SOURCE_DIR (set by tests/CMakeLists.txt), else
 * from this file's own directory.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* dirname() into out (a copy: dirname may modify its argument). */
static void parent_dir(const char *path, char *out, size_t cap)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(out, cap, "%s", dirname(tmp));
}

static int find_build_dir(char *out, size_t cap)
{
    const char *env = getenv("GP_TEST_BUILD_DIR");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "test_gpu_trace: readlink /proc/self/exe: %s\n", strerror(errno));
        return -1;
    }
    exe[n] = '\0';
    char tests_dir[PATH_MAX];
    parent_dir(exe, tests_dir, sizeof tests_dir); /* build/tests */
    parent_dir(tests_dir, out, cap);              /* build */
    return 0;
}

static int find_source_dir(char *out, size_t cap)
{
    const char *env = getenv("GP_TEST_SOURCE_DIR");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return 0;
    }
    if (__FILE__[0] == '/') {
        parent_dir(__FILE__, out, cap);
        return 0;
    }
    fprintf(stderr, "test_gpu_trace: GP_TEST_SOURCE_DIR is not set: run it through ctest\n");
    return -1;
}

int main(void)
{
    char build[PATH_MAX], tests[PATH_MAX], script[PATH_MAX + 16];
    if (find_build_dir(build, sizeof build) != 0 || find_source_dir(tests, sizeof tests) != 0)
        return 2;
    int len = snprintf(script, sizeof script, "%s/gpu/run.sh", tests);
    struct stat st;
    if (len < 0 || (size_t)len >= sizeof script || stat(script, &st) != 0) {
        fprintf(stderr, "test_gpu_trace: %s: not found\n", script);
        return 2;
    }
    printf("test_gpu_trace: sh %s %s\n", script, build);
    fflush(stdout);
    fflush(stderr);

    pid_t pid = fork();
    if (pid < 0) {
        perror("test_gpu_trace: fork");
        return 2;
    }
    if (pid == 0) {
        execl("/bin/sh", "sh", script, build, (char *)NULL);
        perror("test_gpu_trace: /bin/sh");
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("test_gpu_trace: waitpid");
            return 2;
        }
    }
    if (WIFSIGNALED(status)) {
        printf("test_gpu_trace: run.sh killed by signal %d\n", WTERMSIG(status));
        return 1;
    }
    int code = WEXITSTATUS(status);
    if (code == 77)
        return 77; /* run.sh said why: "SKIP: ..." */
    printf("test_gpu_trace: %s\n", code == 0 ? "PASS" : "FAIL");
    return code == 0 ? 0 : 1;
}
