/*
 * test_smi_fake.c - the fake nvidia-smi itself: it must answer like the
 * real one (the captured values, units and headers, field aliases, -i, -L,
 * the real error words and exit statuses), or the backend tests prove
 * nothing.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H100 "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
#define MIG "linux-x86_64__nvidia-h100-mig__590.48.01.txt"
#define RTX "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt"

static const char *fake_smi;
static const char *source_dir;

static void captures(const char *names)
{
    if (!names) {
        unsetenv("FAKE_SMI_CAPTURES");
        return;
    }
    char paths[4096] = "", copy[1024];
    snprintf(copy, sizeof copy, "%s", names);
    char *save = NULL;
    for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        size_t used = strlen(paths);
        snprintf(paths + used, sizeof paths - used, "%s%s/fixtures/nvidia-smi/%s", used ? "," : "",
                 source_dir, p);
    }
    setenv("FAKE_SMI_CAPTURES", paths, 1);
}

/* Runs the fake with args (NULL-terminated), returns its exit status (-1
 * if it had to be killed after 10 s) and its stdout+stderr in out. */
static int run(char *out, size_t cap, const char *a0, ...)
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = fake_smi;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;

    int p[2];
    if (pipe(p) != 0)
        return -2;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execv(fake_smi, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t len = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool killed = false;
    for (;;) {
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        int pr = poll(&pfd, 1, 100);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10 && !killed) {
            kill(pid, SIGKILL);
            killed = true;
        }
        if (pr <= 0)
            continue;
        ssize_t r = read(p[0], out + len, cap - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == cap - 1)
            break;
    }
    out[len] = '\0';
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    if (killed)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_query(void)
{
    char out[8192];
    captures(H100);
    unsetenv("FAKE_SMI_STATE");
    unsetenv("FAKE_SMI_FAIL");
    CHECK_INT(run(out, sizeof out,
                  "--query-gpu=index,utilization.gpu,memory.used,power.draw,temperature.gpu,"
                  "clocks.current.sm,clocks_event_reasons.active",
                  "--format=csv", NULL),
              0);
    CHECK_STR(out, "index, utilization.gpu [%], memory.used [MiB], power.draw [W], "
                   "temperature.gpu, clocks.current.sm [MHz], clocks_event_reasons.active\n"
                   "0, 100 %, 19818 MiB, 631.95 W, 59, 1980 MHz, 0x0000000000000000\n");

    CHECK_INT(run(out, sizeof out, "--query-gpu=index,utilization.gpu,memory.used,power.draw",
                  "--format=csv,noheader,nounits", NULL),
              0);
    CHECK_STR(out, "0, 100, 19818, 631.95\n");

    /* The aliases the captured --help-query-gpu lists. */
    CHECK_INT(run(out, sizeof out,
                  "--query-gpu=gpu_name,clocks.sm,clocks.mem,clocks_throttle_reasons.active",
                  "--format=csv,noheader", NULL),
              0);
    CHECK_STR(out, "NVIDIA H100 80GB HBM3, 1980 MHz, 2619 MHz, 0x0000000000000000\n");

    setenv("FAKE_SMI_STATE", "idle", 1);
    CHECK_INT(run(out, sizeof out, "--query-gpu=utilization.gpu,power.draw",
                  "--format=csv,noheader,nounits", NULL),
              0);
    CHECK_STR(out, "0, 69.85\n");
    unsetenv("FAKE_SMI_STATE");

    captures(MIG);
    CHECK_INT(run(out, sizeof out, "--query-gpu=utilization.gpu,utilization.memory,memory.used",
                  "--format=csv,noheader,nounits", NULL),
              0);
    CHECK_STR(out, "[N/A], [N/A], 11125\n");
}

static void test_several_gpus(void)
{
    char out[8192];
    captures(H100 "," MIG "," RTX);
    CHECK_INT(run(out, sizeof out, "--query-gpu=index,name,uuid,count",
                  "--format=csv,noheader,nounits", "-i", "2,0", NULL),
              0);
    CHECK_STR(out, "2, NVIDIA GeForce RTX 4080 SUPER, GPU-00000000-0000-0000-0000-000000000002, 3\n"
                   "0, NVIDIA H100 80GB HBM3, GPU-00000000-0000-0000-0000-000000000000, 3\n");
    CHECK_INT(run(out, sizeof out, "-L", NULL), 0);
    CHECK_CONTAINS(out,
                   "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
                   "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000001)\n"
                   "  MIG 3g.40gb     Device  0:");
    CHECK_CONTAINS(out, "GPU 2: NVIDIA GeForce RTX 4080 SUPER (UUID: "
                        "GPU-00000000-0000-0000-0000-000000000002)\n");
}

static void test_errors(void)
{
    char out[8192];
    captures(H100);
    CHECK_INT(run(out, sizeof out, "--query-gpu=index,bogus.field", "--format=csv", NULL), 2);
    CHECK_STR(out, "Field \"bogus.field\" is not a valid field to query.\n\n");
    CHECK_INT(run(out, sizeof out, "--query-gpu=index", "--format=csv", "-i", "1", NULL), 6);
    CHECK_STR(out, "No devices were found\n");
    CHECK_INT(run(out, sizeof out, "--query-gpu=index", "--format=csv", "-i", "abc", NULL), 6);
    CHECK_INT(run(out, sizeof out, "--bogus-option", NULL), 2);
    CHECK_CONTAINS(out, "Please run 'nvidia-smi -h' for help.");

    setenv("FAKE_SMI_FAIL", "driver", 1);
    CHECK_INT(run(out, sizeof out, "-L", NULL), 9);
    CHECK_STR(out, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                   "Make sure that the latest NVIDIA driver is installed and running.\n");
    unsetenv("FAKE_SMI_FAIL");
    captures(NULL);
    CHECK_INT(run(out, sizeof out, "--query-gpu=index", "--format=csv", NULL), 9);

    captures(H100);
    setenv("FAKE_SMI_STATE", "busy", 1);
    CHECK_INT(run(out, sizeof out, "-L", NULL), 99);
    unsetenv("FAKE_SMI_STATE");
}

static void test_loop_and_log(void)
{
    char out[8192], log[256];
    snprintf(log, sizeof log, "/tmp/gp-test-smi-fake-log-%d.txt", (int)getpid());
    unlink(log);
    captures(H100);
    setenv("FAKE_SMI_LOG", log, 1);
    setenv("FAKE_SMI_FAIL", "exit_after=3", 1);
    setenv("FAKE_SMI_STATE", "alternate", 1);
    CHECK_INT(run(out, sizeof out, "--query-gpu=index,utilization.gpu",
                  "--format=csv,noheader,nounits", "-lms", "1", NULL),
              15);
    CHECK_STR(out, "0, 100\n0, 0\n0, 100\n"
                   "Unable to determine the device handle for GPU 00000000:00:09.0: GPU is lost.  "
                   "Reboot the system to recover this GPU\n");
    /* A one-shot query is not a loop: exit_after does not apply. */
    CHECK_INT(run(out, sizeof out, "--query-gpu=index", "--format=csv,noheader", NULL), 0);
    CHECK_STR(out, "0\n");
    unsetenv("FAKE_SMI_FAIL");
    unsetenv("FAKE_SMI_STATE");
    unsetenv("FAKE_SMI_LOG");
    char *text = check_read_file(log, NULL);
    CHECK_STR(text, "--query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 1\n"
                    "--query-gpu=index --format=csv,noheader\n");
    free(text);
    unlink(log);
}

int main(void)
{
    fake_smi = check_env("GP_TEST_FAKE_SMI");
    source_dir = check_env("GP_TEST_SOURCE_DIR");
    unsetenv("FAKE_SMI_LOG");
    unsetenv("FAKE_SMI_DROP");
    test_query();
    test_several_gpus();
    test_errors();
    test_loop_and_log();
    return check_done("test_smi_fake");
}
