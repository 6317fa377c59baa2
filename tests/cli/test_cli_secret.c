/*
 * test_cli_secret.c - `gpu-profile upload`'s API key outside its
 * Authorization header (issue 32):
 *
 *  - /proc/PID/cmdline: the command traced (ptrace) to its first system
 *    call in main (fcntl(0, F_GETFD), cli_std_fds_reserve's first) shows
 *    no key there, for --api-key KEY and --api-key=KEY, and later options
 *    and operands as given; skipped, saying so, where ptrace is refused;
 *  - messages: a key pasted into the backend URL or into --timeout (given
 *    before --api-key, or with the key in GPUFL_API_KEY) is shown as
 *    <redacted>; a short key ("k") leaves the words of a message whole
 *    ("backend's", not "bac<redacted>end's");
 *  - --api-key-file: the key read from a file (its newline dropped) and
 *    hidden the same way; an empty, missing or multi-line file refused
 *    (125) naming the file.
 */
#include "harness.h"

#include <sys/ptrace.h>
#include <sys/syscall.h>

#define KEY "gpfl_k3y_5ecret_77"

/* /proc/pid/cmdline with its NULs as spaces (its size is not known
 * beforehand: read until the end). */
static void read_cmdline(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY);
    size_t k = 0;
    ssize_t r;
    while (fd >= 0 && k + 1 < cap && (r = read(fd, buf + k, cap - 1 - k)) > 0)
        k += (size_t)r;
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < k; i++)
        if (!buf[i])
            buf[i] = ' ';
    buf[k] = '\0';
}

/* Runs argv traced: at the entry of its first fcntl(0, F_GETFD) its
 * cmdline into seen.  1 when seen, 0 when ptrace cannot be used here (said),
 * -1 when the call never came. */
static int cmdline_at_main(const char *const *argv, char *seen, size_t cap)
{
    seen[0] = '\0';
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
            _exit(90);
        execv(argv[0], (char *const *)argv);
        _exit(93);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFSTOPPED(st)) { /* PTRACE_TRACEME refused: it ran untraced */
        printf("cmdline at main: skipped: ptrace is not allowed here\n");
        return 0;
    }
    ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL));
    int found = -1;
    for (int stops = 0; stops < 100000 && found < 0; stops++) {
        if (ptrace(PTRACE_SYSCALL, pid, NULL, NULL) != 0)
            break;
        if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
            break;
        if (WSTOPSIG(st) != (SIGTRAP | 0x80))
            continue;
        struct __ptrace_syscall_info si;
        long got = ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si);
        if (got <= 0) {
            printf("cmdline at main: skipped: no PTRACE_GET_SYSCALL_INFO (Linux 5.3)\n");
            found = 0;
            break;
        }
        if (si.op == PTRACE_SYSCALL_INFO_ENTRY && si.entry.nr == SYS_fcntl &&
            si.entry.args[0] == 0 && si.entry.args[1] == F_GETFD) {
            read_cmdline(pid, seen, cap);
            found = 1;
        }
    }
    if (WIFSTOPPED(st))
        ptrace(PTRACE_DETACH, pid, NULL, NULL);
    h_wait(pid);
    return found;
}

static void test_cmdline(const char *logs)
{
    const char *sep[] = {h_cli,     "upload",    "--api-key", KEY,  "--backend-url",
                         "ftp://x", "--retries", "0",         logs, NULL};
    const char *eq[] = {
        h_cli, "upload", "--backend-url=ftp://x", "--api-key=" KEY, "--timeout=5", "--force",
        logs,  NULL};
    char seen[4096];
    int r = cmdline_at_main(sep, seen, sizeof seen);
    CHECK(r >= 0);
    if (r > 0) {
        printf("cmdline at main's first system call: %s\n", seen);
        CHECK(strstr(seen, KEY) == NULL);
        CHECK_CONTAINS(seen, "upload --api-key xxxxxxxxxxxxxxxxxx --backend-url ftp://x");
        CHECK_CONTAINS(seen, logs);
    }
    r = cmdline_at_main(eq, seen, sizeof seen);
    CHECK(r >= 0);
    if (r > 0) {
        printf("cmdline at main's first system call: %s\n", seen);
        CHECK(strstr(seen, KEY) == NULL);
        CHECK_CONTAINS(seen, "--api-key=xxxxxxxxxxxxxxxxxx --timeout=5 --force");
    }
    /* The run form's CMD keeps its arguments, --api-key or not. */
    const char *run[] = {h_cli,       "-q",        "--backend", "none", "--",
                         "/bin/true", "--api-key", KEY,         NULL};
    r = cmdline_at_main(run, seen, sizeof seen);
    if (r > 0)
        CHECK_CONTAINS(seen, "--api-key " KEY);
}

/* One upload run: its exit code and stderr checked for the key. */
static void upload(const char *const *args, const char *const *env, int code, const char *want)
{
    const char *argv[16] = {h_cli, "upload"};
    size_t n = 2;
    for (size_t i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    printf("upload %s ...: %d: %s", args[0], r.code, r.err);
    CHECK_INT(r.code, code);
    CHECK(strstr(r.err, KEY) == NULL);
    CHECK(strstr(r.out, KEY) == NULL);
    CHECK_CONTAINS(r.err, want);
    h_result_free(&r);
}

static void test_messages(const char *logs)
{
    const char *no_env[] = {"GPUFL_API_KEY", "GPUFL_BACKEND_URL", NULL};
    const char *env_key[] = {"GPUFL_API_KEY=" KEY, "GPUFL_BACKEND_URL", NULL};
    const char *url[] = {"--backend-url", "ftp://example.org/" KEY, "--api-key", KEY, logs, NULL};
    upload(url, no_env, 125, "backend URL \"ftp://example.org/<redacted>\" is not an http");
    upload(url, env_key, 125, "backend URL \"ftp://example.org/<redacted>\" is not an http");
    /* --timeout before --api-key: the key was taken from argv before. */
    const char *timeout[] = {"--timeout", KEY, "--api-key", KEY, logs, NULL};
    upload(timeout, no_env, 125, "--timeout '<redacted>' is not a number");
    const char *timeout_env[] = {"--timeout", KEY, logs, NULL};
    upload(timeout_env, env_key, 125, "--timeout '<redacted>' is not a number");
    /* A short key: whole occurrences only, the message's words stay. */
    const char *short_key[] = {"--backend-url", "ftp://x/k", "--api-key", "k", logs, NULL};
    upload(short_key, no_env, 125,
           "backend URL \"ftp://x/<redacted>\" is not an http:// or https:// URL: give the "
           "backend's host, e.g. https://api.gpuflight.com");
}

static void test_key_file(const char *logs)
{
    const char *no_env[] = {"GPUFL_API_KEY", "GPUFL_BACKEND_URL", NULL};
    char file[512], empty[512], two[512];
    h_path(file, sizeof file, "key");
    h_write_file(file, KEY "\n", strlen(KEY) + 1);
    const char *url[] = {
        "--backend-url", "ftp://example.org/" KEY, "--api-key-file", file, logs, NULL};
    upload(url, no_env, 125, "backend URL \"ftp://example.org/<redacted>\" is not an http");
    /* The key from the file reaches the library: past the URL check, no
     * "no API key". */
    const char *ok[] = {"--backend-url",           "http://127.0.0.1:9",
                        "--api-key-file",          file,
                        "/nonexistent/gpufl-logs", NULL};
    upload(ok, no_env, 1, "\"/nonexistent/gpufl-logs\" is not a directory");
    h_path(empty, sizeof empty, "empty");
    h_write_file(empty, "\n", 1);
    const char *e[] = {"--api-key-file", empty, logs, NULL};
    upload(e, no_env, 125, "is empty: put the API key alone in it");
    h_path(two, sizeof two, "two");
    h_write_file(two, "a\nb\n", 4);
    const char *t[] = {"--api-key-file", two, logs, NULL};
    upload(t, no_env, 125, "holds more than one line");
    const char *missing[] = {"--api-key-file", "/nonexistent/key", logs, NULL};
    upload(missing, no_env, 125, "--api-key-file '/nonexistent/key': No such file or directory");
}

int main(void)
{
    h_init();
    char logs[512];
    h_path(logs, sizeof logs, "logs");
    mkdir(logs, 0755);
    test_cmdline(logs);
    test_messages(logs);
    test_key_file(logs);
    h_cleanup();
    return check_done("test_cli_secret");
}
